// Kernels running every opcode family inside control-flow regions (the family at the top
// level, in a loop body, in both parts of an if, in every target of a call), loops carrying a
// value of every element type, and nested regions, with the arguments a test sets up for a
// launch size. The backends' region tests run them and the host interpreter
// (support/ir_interpreter.h) on their own copies of the arguments and compare every buffer:
// tests/llvm_regions_test.cpp (LlvmJit, every loop style and tier) and
// tests/cuda_regions_test.cpp (ptxas, and the PTX reference interpreter).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <iterator>
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "support/host_values.h"
#include "support/ir_interpreter.h"
#include "support/region_kernels.h"

namespace ff_test::region_ops {

using namespace ff_test::regions;
using ff::IrOp;
using ff::KernelIR;
using ff::ParamKind;
using ff::ScalarType;

inline constexpr ScalarType I64 = ScalarType::Int64;  // the others: support/region_kernels.h

// A kernel argument as a test sets it up for a size: a buffer's elements or a scalar's bits.
struct Arg {
  ScalarType type;
  bool buffer = true;
  std::vector<unsigned char> bytes;  // buffers: the elements (Bool as bytes)
  uint64_t bits = 0;                 // scalars
};

// A buffer of n elements of type t, element k the value `value(k)` (converted to t).
inline Arg buffer(ScalarType t, size_t n, const std::function<double(size_t)>& value) {
  Arg a{t, true, {}, 0};
  a.bytes.resize(std::max<size_t>(n, 1) * size_of(t));
  with_type(t, [&](auto tag) {
    using T = decltype(tag);
    for (size_t k = 0; k < n; ++k) {
      T v = static_cast<T>(value(k));
      std::memcpy(a.bytes.data() + k * size_of(t), &v, size_of(t));
    }
  });
  return a;
}

// A buffer of n elements holding a sentinel pattern (outputs: what no lane writes stays).
inline Arg sentinel(ScalarType t, size_t n) {
  Arg a{t, true, {}, 0};
  a.bytes.assign(std::max<size_t>(n, 1) * size_of(t), t == B ? 0 : 0xA5);
  return a;
}

inline Arg scalar(ScalarType t, uint64_t bits) {
  Arg a{t, false, {}, 0};
  a.bits = bits;
  return a;
}

using Setup = std::function<std::vector<Arg>(size_t n)>;

inline std::vector<uint64_t> words(std::vector<Arg>& args) {
  std::vector<uint64_t> w;
  for (Arg& a : args)
    w.push_back(a.buffer ? bits_of(a.bytes.data()) : a.bits);
  return w;
}

// Whether `got` matches the reference `want`: bit for bit, or for floats both NaN or within
// `tol` * (1 + |want|).
template <class T>
bool close_enough(T got, T want, double tol) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(want) || std::isnan(got))
      return std::isnan(want) && std::isnan(got);
    if (tol == 0)
      return to_bits64(got) == to_bits64(want);
    return std::abs(static_cast<double>(got) - static_cast<double>(want)) <=
           tol * (1 + std::abs(static_cast<double>(want)));
  } else {
    return got == want;
  }
}

// The per-lane inputs a family computes from: the lane index (UInt32) and an Int32, a Float32
// and a Float64 derived from it.
struct Lane {
  uint32_t i, s, f, d;
};

// A family of opcodes, emitted as a function of a Lane anywhere (top level, a loop body, an if
// part, a call target); its parameters come first in every kernel.
struct Family {
  const char* name;
  std::vector<ScalarType> outputs;                                   // the types of its values
  std::function<void(Builder&)> declare;                             // its parameters
  std::function<std::vector<uint32_t>(Builder&, const Lane&)> emit;  // returns `outputs`
  std::function<void(size_t n, std::vector<Arg>&)> args;             // its parameters' arguments
  double tol;                                                        // close_enough()'s tolerance
};

inline uint32_t f32(Builder& k, float v) {
  return k.literal(F32, to_bits64(v));
}

inline uint32_t f64(Builder& k, double v) {
  return k.literal(F64, to_bits64(v));
}

inline uint32_t add(Builder& k, ScalarType t, std::initializer_list<uint32_t> vs) {
  uint32_t acc = kNoOperand;
  for (uint32_t v : vs)
    acc = acc == kNoOperand ? v : k.emit(IrOp::Add, t, acc, v);
  return acc;
}

// Unary, binary, compare, ternary and cast opcodes of every type, with the corner cases
// (zero divisors, INT_MIN / -1, shift counts past the width, saturating casts).
inline Family arith_family() {
  Family fam{"arith", {F32, F64, I32, U32, I64, U64, B}, [](Builder&) {},
             nullptr, [](size_t, std::vector<Arg>&) {},  0};
  fam.emit = [](Builder& k, const Lane& in) {
    auto e = [&](IrOp op, ScalarType t, uint32_t a, uint32_t b = kNoOperand,
                 uint32_t c = kNoOperand) { return k.emit(op, t, a, b, c); };
    uint32_t f = in.f, s = in.s, d = in.d, i = in.i;
    // Float32.
    uint32_t f1 = e(IrOp::Fma, F32, f, f, f32(k, 0.5f));
    uint32_t f2 = e(IrOp::Div, F32, f1, e(IrOp::Sub, F32, f, f32(k, 2.f)));
    uint32_t f3 = e(IrOp::Min, F32, f2, e(IrOp::Max, F32, f, e(IrOp::Neg, F32, f)));
    uint32_t f4 = e(IrOp::Select, F32, e(IrOp::Lt, B, f, f32(k, 0.3f)), e(IrOp::Abs, F32, f3),
                    e(IrOp::Floor, F32, f3));
    uint32_t f5 = add(k, F32,
                      {f4, e(IrOp::Sqrt, F32, e(IrOp::Abs, F32, f)), e(IrOp::Ceil, F32, f),
                       e(IrOp::Round, F32, e(IrOp::Mul, F32, f, f32(k, 2.5f))),
                       e(IrOp::Trunc, F32, e(IrOp::Mul, F32, f, f32(k, -1.5f)))});
    uint32_t f6 = e(IrOp::Copysign, F32, f5, e(IrOp::Sub, F32, f, f32(k, 0.5f)));
    uint32_t fout = e(IrOp::Add, F32, f6, e(IrOp::Cast, F32, s));
    // Float64.
    uint32_t l = e(IrOp::Cast, I64, s);
    uint32_t u = e(IrOp::Cast, U32, s);
    uint32_t d1 = e(IrOp::Mul, F64, d, e(IrOp::Cast, F64, l));
    uint32_t d2 = e(IrOp::Div, F64, d1, e(IrOp::Add, F64, e(IrOp::Abs, F64, d), f64(k, 1.0)));
    uint32_t d3 =
        e(IrOp::Sub, F64, e(IrOp::Max, F64, d2, e(IrOp::Neg, F64, d)), e(IrOp::Cast, F64, u));
    uint32_t dout = e(IrOp::Fma, F64, d3, f64(k, 0.25), e(IrOp::Cast, F64, f));
    // Int32.
    uint32_t s1 = e(IrOp::Div, I32, s, k.literal(I32, uint32_t(-3)));
    uint32_t s2 = e(IrOp::Mod, I32, s, k.literal(I32, 5));
    uint32_t s3 = e(IrOp::Div, I32, s, e(IrOp::Sub, I32, s, s));  // by zero
    uint32_t s4 = e(IrOp::Shl, I32, s, k.literal(I32, 35));       // 35 mod 32
    uint32_t s5 = e(IrOp::Shr, I32, s, k.literal(I32, 1));
    uint32_t s6 = e(IrOp::Xor, I32, e(IrOp::Neg, I32, s), e(IrOp::Abs, I32, s));
    uint32_t s7 = e(IrOp::Min, I32, s, e(IrOp::Max, I32, s2, s1));
    uint32_t s8 = e(IrOp::And, I32, e(IrOp::Not, I32, s), e(IrOp::Or, I32, s4, s5));
    uint32_t s9 =
        add(k, I32, {e(IrOp::Popcnt, I32, s), e(IrOp::Clz, I32, s), e(IrOp::Ctz, I32, s)});
    uint32_t s10 = e(IrOp::Cast, I32, e(IrOp::Mul, F32, f, f32(k, 1e10f)));  // saturates
    uint32_t int_min = e(IrOp::Sub, I32, k.literal(I32, 0x80000000u),
                         e(IrOp::Mod, I32, s, k.literal(I32, 1)));  // INT_MIN, not uniform
    uint32_t s11 = e(IrOp::Div, I32, int_min, k.literal(I32, uint32_t(-1)));
    uint32_t sout = add(k, I32, {s1, s2, s3, s6, s7, s8, s9, s10, s11});
    // UInt32.
    uint32_t u1 = e(IrOp::Div, U32, u, e(IrOp::Mod, U32, i, k.literal(U32, 3)));  // 0 at times
    uint32_t u2 = e(IrOp::Mod, U32, u, e(IrOp::Add, U32, i, k.literal(U32, 1)));
    uint32_t u3 = e(IrOp::Shr, U32, u, k.literal(U32, 3));
    uint32_t u4 = e(IrOp::Mul, U32, u, k.literal(U32, 0x9E3779B9u));
    uint32_t u5 = e(IrOp::Max, U32, u1, u2);
    uint32_t u6 = e(IrOp::Cast, U32, e(IrOp::Mul, F32, f, f32(k, 1e9f)));  // negative: 0
    uint32_t u7 = e(IrOp::Xor, U32, e(IrOp::Bitcast, U32, f), e(IrOp::Clz, U32, u));
    uint32_t uout = add(k, U32, {u3, u4, u5, u6, u7});
    // Int64.
    uint32_t l1 = e(IrOp::Mul, I64, l, k.literal(I64, 0x123456789ABCDEFull));
    uint32_t l2 = e(IrOp::Shr, I64, l1, k.literal(I64, 7));
    uint32_t l3 = e(IrOp::Cast, I64, e(IrOp::Mul, F64, d, f64(k, 1e18)));
    uint32_t l4 = e(IrOp::Div, I64, l1, e(IrOp::Add, I64, l, k.literal(I64, 21)));
    uint32_t lout = add(k, I64, {l2, l3, l4, e(IrOp::Ctz, I64, l)});
    // UInt64.
    uint32_t w = e(IrOp::Cast, U64, f);  // negative: 0
    uint32_t w1 = e(IrOp::Mul, U64, e(IrOp::Cast, U64, l), k.literal(U64, 0xD1B54A32D192ED03ull));
    uint32_t w2 = e(IrOp::Shr, U64, w1, k.literal(U64, 67));  // 67 mod 64
    uint32_t w3 = e(IrOp::Mod, U64, w1, e(IrOp::Add, U64, w, k.literal(U64, 7)));
    uint32_t w4 = e(IrOp::Xor, U64, e(IrOp::Bitcast, U64, d), w);
    uint32_t wout = add(k, U64, {w2, w3, w4, e(IrOp::Popcnt, U64, w1)});
    // Bool.
    uint32_t b1 = e(IrOp::Lt, B, f, f32(k, 0.5f));
    uint32_t b2 = e(IrOp::Ge, B, s, k.literal(I32, 0));
    uint32_t b3 = e(IrOp::Ne, B, d, d);
    uint32_t b4 = e(IrOp::Cast, B, f);
    uint32_t b5 = e(IrOp::Eq, B, u, k.literal(U32, 7));
    uint32_t b6 = e(IrOp::Le, B, l, k.literal(I64, uint64_t(-3)));
    uint32_t b7 = e(IrOp::Gt, B, w, k.literal(U64, 3));
    uint32_t bout = e(IrOp::Xor, B, e(IrOp::And, B, b1, e(IrOp::Not, B, b2)),
                      e(IrOp::Or, B, e(IrOp::Or, B, b3, b4),
                        e(IrOp::Select, B, b5, b6, e(IrOp::Cast, B, e(IrOp::And, B, b7, b1)))));
    return std::vector<uint32_t>{fout, dout, sout, uout, lout, wout, bout};
  };
  return fam;
}

// Transcendental math (libmvec in vectors, libm in scalar code): compared within a tolerance.
inline Family math_family() {
  Family fam{"math", {F32, F64}, [](Builder&) {}, nullptr, [](size_t, std::vector<Arg>&) {}, 2e-5};
  fam.emit = [](Builder& k, const Lane& in) {
    auto e = [&](IrOp op, ScalarType t, uint32_t a, uint32_t b = kNoOperand) {
      return k.emit(op, t, a, b);
    };
    uint32_t f = in.f, d = in.d;
    uint32_t af = e(IrOp::Abs, F32, f);
    uint32_t fout = add(k, F32,
                        {e(IrOp::Sin, F32, f), e(IrOp::Cos, F32, f),
                         e(IrOp::Exp, F32, e(IrOp::Mul, F32, f, f32(k, 0.3f))),
                         e(IrOp::Pow, F32, e(IrOp::Add, F32, af, f32(k, 0.5f)), f32(k, 1.3f)),
                         e(IrOp::Atan2, F32, f, e(IrOp::Add, F32, f, f32(k, 1.5f))),
                         e(IrOp::Tan, F32, e(IrOp::Mul, F32, f, f32(k, 0.2f))),
                         e(IrOp::Erf, F32, e(IrOp::Mul, F32, f, f32(k, 0.4f))),
                         e(IrOp::Log, F32, e(IrOp::Add, F32, af, f32(k, 1.f))),
                         e(IrOp::Cbrt, F32, f), e(IrOp::Tanh, F32, f), e(IrOp::Asinh, F32, f),
                         e(IrOp::Exp2, F32, e(IrOp::Mul, F32, f, f32(k, 0.5f))),
                         e(IrOp::Log2, F32, e(IrOp::Add, F32, af, f32(k, 2.f)))});
    uint32_t ad = e(IrOp::Abs, F64, d);
    uint32_t unit = e(IrOp::Div, F64, d, e(IrOp::Add, F64, ad, f64(k, 1.0)));  // in (-1, 1)
    uint32_t dout = add(
        k, F64,
        {e(IrOp::Sin, F64, d), e(IrOp::Exp, F64, e(IrOp::Mul, F64, d, f64(k, 0.1))),
         e(IrOp::Pow, F64, e(IrOp::Add, F64, ad, f64(k, 0.5)), f64(k, 0.7)), e(IrOp::Atan, F64, d),
         e(IrOp::Sinh, F64, e(IrOp::Mul, F64, d, f64(k, 0.1))), e(IrOp::Acos, F64, unit),
         e(IrOp::Asin, F64, unit), e(IrOp::Cosh, F64, e(IrOp::Mul, F64, d, f64(k, 0.1))),
         e(IrOp::Atanh, F64, e(IrOp::Mul, F64, unit, f64(k, 0.5))),
         e(IrOp::Acosh, F64, e(IrOp::Add, F64, ad, f64(k, 1.0)))});
    return std::vector<uint32_t>{fout, dout};
  };
  return fam;
}

// Parameters of the memory family, in order.
enum MemParam : uint32_t {
  kSrc,      // in float32 [n]: Load, gathers
  kSrcLen,   // scalar uint64: n, the bound of the lane-sized buffers
  kWide,     // in float64 [1]: LoadBroadcast
  kStored,   // out float32 [n]: Store
  kScat,     // inout uint32 [n]: Scatter at the lane
  kBinsI32,  // inout int32 [4]: ScatterAdd
  kBinsLen,  // scalar uint64: 4
  kBinsU32,  // inout uint32 [4]: ScatterMul
  kBinsF32,  // inout float32 [4]: ScatterMin
  kBinsF64,  // inout float64 [4]: ScatterMax
  kBinsI64,  // inout int64 [4]: ScatterAnd
  kBinsU64,  // inout uint64 [4]: ScatterOr
  kCounter,  // inout uint32 [n]: ScatterInc at the lane
  kFSum,     // inout float32 [4]: ScatterAdd of small integers (exact in any order)
  kOffset,   // scalar int32: -1, a stencil offset
  kFlags,    // in bool [n]: Load and gather of bools
  kStoredB,  // out bool [n]: Store of bools
  kNumMemParams
};

// Load, LoadBroadcast, gathers (a stencil "lane index + uniform" one in each of two forms, a
// computed and a negative index) and every scatter kind and ScatterInc. The scatters touch
// their lane's element or accumulate exactly, so that lanes may run in any order.
inline Family memory_family() {
  Family fam{"memory", {F32, F64, U32, B}, nullptr, nullptr, nullptr, 0};
  fam.declare = [](Builder& k) {
    const std::pair<ParamKind, ScalarType> ps[kNumMemParams] = {
        {ParamKind::BufferIn, F32},    {ParamKind::Scalar, U64},      {ParamKind::BufferIn, F64},
        {ParamKind::BufferOut, F32},   {ParamKind::BufferInOut, U32}, {ParamKind::BufferInOut, I32},
        {ParamKind::Scalar, U64},      {ParamKind::BufferInOut, U32}, {ParamKind::BufferInOut, F32},
        {ParamKind::BufferInOut, F64}, {ParamKind::BufferInOut, I64}, {ParamKind::BufferInOut, U64},
        {ParamKind::BufferInOut, U32}, {ParamKind::BufferInOut, F32}, {ParamKind::Scalar, I32},
        {ParamKind::BufferIn, B},      {ParamKind::BufferOut, B}};
    for (auto [kind, t] : ps)
      k.param(kind, t);
  };
  fam.args = [](size_t n, std::vector<Arg>& a) {
    a.push_back(buffer(F32, n, [](size_t k) { return 0.25 * double(k % 23) - 2.0; }));
    a.push_back(scalar(U64, n));
    a.push_back(buffer(F64, 1, [](size_t) { return 0.125; }));
    a.push_back(sentinel(F32, n));
    a.push_back(sentinel(U32, n));
    a.push_back(buffer(I32, 4, [](size_t) { return 0; }));
    a.push_back(scalar(U64, 4));
    a.push_back(buffer(U32, 4, [](size_t) { return 1; }));
    a.push_back(buffer(F32, 4, [](size_t) { return 1e9; }));
    a.push_back(buffer(F64, 4, [](size_t) { return -1e9; }));
    a.push_back(buffer(I64, 4, [](size_t) { return -1; }));
    a.push_back(buffer(U64, 4, [](size_t) { return 0; }));
    a.push_back(buffer(U32, n, [](size_t k) { return k % 3; }));
    a.push_back(buffer(F32, 4, [](size_t) { return 0; }));
    a.push_back(scalar(I32, uint32_t(-1)));
    a.push_back(buffer(B, n, [](size_t k) { return k % 3 == 1; }));
    a.push_back(sentinel(B, n));
  };
  fam.emit = [](Builder& k, const Lane& in) {
    auto e = [&](IrOp op, ScalarType t, uint32_t a = kNoOperand, uint32_t b = kNoOperand,
                 uint32_t c = kNoOperand, uint32_t d = kNoOperand,
                 uint32_t x = kNoOperand) { return k.emit(op, t, a, b, c, d, x); };
    uint32_t yes = k.literal(B, 1);
    uint32_t x = e(IrOp::Load, F32, kSrc);
    uint32_t w = e(IrOp::LoadBroadcast, F64, kWide);
    // Stencil gathers: Index (int32) + a scalar, Index (uint32) + a literal.
    uint32_t k1 = e(IrOp::Add, I32, e(IrOp::Index, I32), e(IrOp::Scalar, I32, kOffset));
    uint32_t g1 = e(IrOp::Gather, F32, kSrc, k1, yes, kSrcLen);
    uint32_t k2 = e(IrOp::Add, U32, e(IrOp::Index, U32), k.literal(U32, 3));
    uint32_t g2 = e(IrOp::Gather, F32, kSrc, k2, e(IrOp::Lt, B, in.f, f32(k, 1.f)), kSrcLen);
    // A computed index and a signed one (negative: out of range).
    uint32_t k3 = e(IrOp::Mod, U32, e(IrOp::Cast, U32, e(IrOp::Mul, I32, in.s, k.literal(I32, 7))),
                    k.literal(U32, 11));
    uint32_t g3 = e(IrOp::Gather, F32, kSrc, k3, yes, kSrcLen);
    uint32_t g4 = e(IrOp::Gather, F32, kSrc, in.s, yes, kSrcLen);
    uint32_t gb = e(IrOp::Gather, B, kFlags, k2, yes, kSrcLen);
    e(IrOp::Store, F32, kStored, e(IrOp::Add, F32, x, g1));
    e(IrOp::Store, B, kStoredB, e(IrOp::Xor, B, e(IrOp::Load, B, kFlags), gb));
    uint32_t u = e(IrOp::Cast, U32, in.s);
    e(IrOp::Scatter, U32, kScat, in.i,
      e(IrOp::Ne, B, e(IrOp::Mod, U32, in.i, k.literal(U32, 4)), k.literal(U32, 3)),
      e(IrOp::Add, U32, u, k.literal(U32, 1000)), kSrcLen);
    uint32_t bin = e(IrOp::And, U32, u, k.literal(U32, 3));
    e(IrOp::ScatterAdd, I32, kBinsI32, bin, yes, in.s, kBinsLen);
    e(IrOp::ScatterMul, U32, kBinsU32, bin, yes, e(IrOp::Or, U32, u, k.literal(U32, 1)), kBinsLen);
    e(IrOp::ScatterMin, F32, kBinsF32, bin, e(IrOp::Lt, B, in.f, f32(k, 3.f)), in.f, kBinsLen);
    e(IrOp::ScatterMax, F64, kBinsF64, bin, yes, in.d, kBinsLen);
    e(IrOp::ScatterAnd, I64, kBinsI64, bin, yes,
      e(IrOp::Cast, I64, e(IrOp::Xor, I32, in.s, k.literal(I32, 0x55))), kBinsLen);
    e(IrOp::ScatterOr, U64, kBinsU64, bin, yes,
      e(IrOp::Shl, U64, k.literal(U64, 1), e(IrOp::Cast, U64, u)), kBinsLen);
    e(IrOp::ScatterAdd, F32, kFSum, bin, yes,
      e(IrOp::Cast, F32, e(IrOp::Mod, U32, in.i, k.literal(U32, 8))), kBinsLen);
    uint32_t v = e(IrOp::ScatterInc, U32, kCounter, in.i, yes, kNoOperand, kSrcLen);
    return std::vector<uint32_t>{add(k, F32, {x, g1, g2, g3, g4}), e(IrOp::Add, F64, w, in.d), v,
                                 gb};
  };
  return fam;
}

// The lane inputs at the top of a kernel: i, s = i - 20, f = xs[i], d = 3 f (as float64).
// xs (a parameter after the family's) holds k / 10 - 4.05 for k = 37 i mod 101: never 2
// (arith divides by f - 2), nor after adding a small integer.
inline Lane lane_inputs(Builder& k, uint32_t pxs) {
  uint32_t i = k.emit(IrOp::Index, U32);
  uint32_t s = k.emit(IrOp::Sub, I32, k.emit(IrOp::Index, I32), k.literal(I32, 20));
  uint32_t f = k.emit(IrOp::Load, F32, pxs);
  uint32_t d = k.emit(IrOp::Mul, F64, k.emit(IrOp::Cast, F64, f), f64(k, 3.0));
  return {i, s, f, d};
}

inline Arg xs_arg(size_t n) {
  return buffer(F32, n, [](size_t k) { return double((37 * k) % 101) / 10.0 - 4.05; });
}

// The inputs moved by a value `by` (UInt32): s + by, f + by, d + by.
inline Lane moved(Builder& k, const Lane& in, uint32_t by) {
  return {in.i, k.emit(IrOp::Add, I32, in.s, k.emit(IrOp::Cast, I32, by)),
          k.emit(IrOp::Add, F32, in.f, k.emit(IrOp::Cast, F32, by)),
          k.emit(IrOp::Add, F64, in.d, k.emit(IrOp::Cast, F64, by))};
}

// How a family's values are placed.
enum class Place { Top, Loop, If, Call };

inline const char* to_string(Place p) {
  return p == Place::Top    ? "top level"
         : p == Place::Loop ? "loop body"
         : p == Place::If   ? "if"
                            : "call";
}

// A kernel running `fam` at `place`, then storing its values (one out buffer per output):
//   Top:  the family on the lane's inputs;
//   Loop: for c < trips[i] (i % 4, at most 5 iterations): acc = acc (+ or ^) fam(inputs + c);
//         the final counter plus i (a value from before the loop) is stored too;
//   If:   i % 3 != 1 ? fam(inputs) : fam(inputs + 2);
//   Call: target sel[i] of 3 gives fam(inputs + t); sel holds indices 3, 4, 2^31 + 3 and
//         2^32 - 1 too (zeros, and no side effects).
// Parameters: the family's, xs, trips or sel (uint32), the outputs [, the loop's counter].
inline KernelIR placed_kernel(const Family& fam, Place place) {
  Builder k;
  fam.declare(k);
  uint32_t pxs = k.param(ParamKind::BufferIn, F32);
  uint32_t pctl = k.param(ParamKind::BufferIn, U32);
  std::vector<uint32_t> pouts;
  for (ScalarType t : fam.outputs)
    pouts.push_back(k.param(ParamKind::BufferOut, t));
  uint32_t pcount = place == Place::Loop ? k.param(ParamKind::BufferOut, U32) : kNoOperand;
  Lane in = lane_inputs(k, pxs);
  uint32_t ctl = k.emit(IrOp::Load, U32, pctl);
  std::vector<uint32_t> outs;
  auto results = [&] {
    for (size_t j = 0; j < fam.outputs.size(); ++j)
      outs.push_back(k.emit(IrOp::Result, fam.outputs[j]));
  };
  switch (place) {
    case Place::Top:
      outs = fam.emit(k, in);
      break;
    case Place::Loop: {
      uint32_t zero = k.literal(U32, 0);
      std::vector<uint32_t> inits;
      for (ScalarType t : fam.outputs)
        inits.push_back(k.literal(t, 0));
      k.marker(IrOp::LoopBegin, kNoOperand, 5);
      uint32_t c = k.emit(IrOp::LoopVar, U32, zero);
      std::vector<uint32_t> accs;
      for (size_t j = 0; j < fam.outputs.size(); ++j)
        accs.push_back(k.emit(IrOp::LoopVar, fam.outputs[j], inits[j]));
      k.marker(IrOp::LoopCond, k.emit(IrOp::Lt, B, c, ctl));
      std::vector<uint32_t> vs = fam.emit(k, moved(k, in, c));
      std::vector<uint32_t> next;
      for (size_t j = 0; j < vs.size(); ++j)
        next.push_back(
            k.emit(fam.outputs[j] == B ? IrOp::Xor : IrOp::Add, fam.outputs[j], accs[j], vs[j]));
      uint32_t nc = k.emit(IrOp::Add, U32, c, k.literal(U32, 1));
      k.emit(IrOp::Yield, U32, nc);
      for (size_t j = 0; j < next.size(); ++j)
        k.emit(IrOp::Yield, fam.outputs[j], next[j]);
      k.marker(IrOp::EndRegion);
      uint32_t rc = k.emit(IrOp::Result, U32);
      results();
      k.emit(IrOp::Store, U32, pcount, k.emit(IrOp::Add, U32, rc, in.i));
      break;
    }
    case Place::If: {
      uint32_t m =
          k.emit(IrOp::Ne, B, k.emit(IrOp::Mod, U32, in.i, k.literal(U32, 3)), k.literal(U32, 1));
      k.marker(IrOp::IfBegin, m);
      for (uint32_t y : fam.emit(k, in))
        k.emit(IrOp::Yield, k.ir.instrs[y].type, y);
      k.marker(IrOp::IfElse);
      for (uint32_t y : fam.emit(k, moved(k, in, k.literal(U32, 2))))
        k.emit(IrOp::Yield, k.ir.instrs[y].type, y);
      k.marker(IrOp::EndRegion);
      results();
      break;
    }
    case Place::Call: {
      k.marker(IrOp::CallBegin, ctl, 3);
      for (uint32_t t = 0; t < 3; ++t) {
        if (t)
          k.marker(IrOp::CallCase);
        for (uint32_t y : fam.emit(k, moved(k, in, k.literal(U32, t))))
          k.emit(IrOp::Yield, k.ir.instrs[y].type, y);
      }
      k.marker(IrOp::EndRegion);
      results();
      break;
    }
  }
  for (size_t j = 0; j < outs.size(); ++j)
    k.emit(IrOp::Store, fam.outputs[j], pouts[j], outs[j]);
  return k.finish();
}

inline Setup placed_setup(const Family& fam, Place place) {
  return [fam, place](size_t n) {
    std::vector<Arg> a;
    fam.args(n, a);
    a.push_back(xs_arg(n));
    if (place == Place::Call)
      a.push_back(buffer(U32, n, [](size_t k) {
        return k % 11 == 4 ? 4294967295.0 : k % 13 == 5 ? 2147483651.0 : double((k * 7) % 5);
      }));
    else
      a.push_back(buffer(U32, n, [](size_t k) { return k % 4; }));
    for (ScalarType t : fam.outputs)
      a.push_back(sentinel(t, n));
    if (place == Place::Loop)
      a.push_back(sentinel(U32, n));
    return a;
  };
}

// Every element type.
inline constexpr ScalarType kAllTypes[] = {B, I32, U32, I64, U64, F32, F64};

// A loop carrying one value of every element type and a counter c, for c < trips[i] and at
// most `limit` iterations; each type changes its own way every iteration, and one float32
// keeps its value (yielded unchanged). The final values, and the counter, go to one out
// buffer each; a value from before the loop (i) is added to the counter after it. The body
// scatter-adds 1 to hits[i] (only the lanes that run it). Params: trips (in uint32), hits
// (inout uint32), n (scalar uint64), outs of every type, kept (out float32), count (out
// uint32).
inline KernelIR carried_kernel(uint64_t limit) {
  Builder k;
  uint32_t ptrips = k.param(ParamKind::BufferIn, U32);
  uint32_t phits = k.param(ParamKind::BufferInOut, U32);
  uint32_t pn = k.param(ParamKind::Scalar, U64);
  std::vector<uint32_t> pouts;
  for (ScalarType t : kAllTypes)
    pouts.push_back(k.param(ParamKind::BufferOut, t));
  uint32_t pkept = k.param(ParamKind::BufferOut, F32);
  uint32_t pcount = k.param(ParamKind::BufferOut, U32);
  uint32_t i = k.emit(IrOp::Index, U32);
  uint32_t trips = k.emit(IrOp::Load, U32, ptrips);
  uint32_t zero = k.literal(U32, 0), one = k.literal(U32, 1);
  std::vector<uint32_t> inits;
  for (ScalarType t : kAllTypes)
    inits.push_back(t == B ? k.emit(IrOp::Eq, B, k.emit(IrOp::Mod, U32, i, k.literal(U32, 2)), zero)
                           : k.emit(IrOp::Cast, t, i));
  uint32_t kept0 = k.emit(IrOp::Cast, F32, i);
  k.marker(IrOp::LoopBegin, kNoOperand, limit);
  uint32_t c = k.emit(IrOp::LoopVar, U32, zero);
  std::vector<uint32_t> vars;
  for (size_t j = 0; j < std::size(kAllTypes); ++j)
    vars.push_back(k.emit(IrOp::LoopVar, kAllTypes[j], inits[j]));
  uint32_t kept = k.emit(IrOp::LoopVar, F32, kept0);
  k.marker(IrOp::LoopCond, k.emit(IrOp::Lt, B, c, trips));
  k.emit(IrOp::ScatterAdd, U32, phits, i, k.literal(B, 1), one, pn);
  std::vector<uint32_t> next;
  for (size_t j = 0; j < std::size(kAllTypes); ++j) {
    ScalarType t = kAllTypes[j];
    uint32_t v = vars[j], ct = t == B ? kNoOperand : k.emit(IrOp::Cast, t, c);
    switch (t) {
      case ScalarType::Bool:
        next.push_back(
            k.emit(IrOp::Xor, B, v,
                   k.emit(IrOp::Eq, B, k.emit(IrOp::Mod, U32, c, k.literal(U32, 3)), zero)));
        break;
      case ScalarType::Int32:
        next.push_back(k.emit(IrOp::Add, t, k.emit(IrOp::Mul, t, v, k.literal(t, 3)), ct));
        break;
      case ScalarType::UInt32:
        next.push_back(
            k.emit(IrOp::Xor, t, k.emit(IrOp::Mul, t, v, k.literal(t, 0x9E3779B1u)), ct));
        break;
      case ScalarType::Int64:
        next.push_back(
            k.emit(IrOp::Sub, t, k.emit(IrOp::Mul, t, v, k.literal(t, uint64_t(-5))), ct));
        break;
      case ScalarType::UInt64:
        next.push_back(k.emit(IrOp::Add, t, k.emit(IrOp::Shl, t, v, k.literal(t, 9)), ct));
        break;
      case ScalarType::Float32:
        next.push_back(k.emit(IrOp::Add, t, k.emit(IrOp::Mul, t, v, f32(k, 0.5f)), ct));
        break;
      case ScalarType::Float64:
        next.push_back(k.emit(IrOp::Fma, t, v, f64(k, 0.75), ct));
        break;
    }
  }
  uint32_t nc = k.emit(IrOp::Add, U32, c, one);
  k.emit(IrOp::Yield, U32, nc);
  for (size_t j = 0; j < next.size(); ++j)
    k.emit(IrOp::Yield, kAllTypes[j], next[j]);
  k.emit(IrOp::Yield, F32, kept);
  k.marker(IrOp::EndRegion);
  uint32_t rc = k.emit(IrOp::Result, U32);
  std::vector<uint32_t> rs;
  for (ScalarType t : kAllTypes)
    rs.push_back(k.emit(IrOp::Result, t));
  uint32_t rkept = k.emit(IrOp::Result, F32);
  for (size_t j = 0; j < rs.size(); ++j)
    k.emit(IrOp::Store, kAllTypes[j], pouts[j], rs[j]);
  k.emit(IrOp::Store, F32, pkept, rkept);
  k.emit(IrOp::Store, U32, pcount, k.emit(IrOp::Add, U32, rc, i));
  return k.finish();
}

inline Setup carried_setup(std::function<double(size_t)> trips) {
  return [trips](size_t n) {
    std::vector<Arg> a;
    a.push_back(buffer(U32, n, trips));
    a.push_back(buffer(U32, n, [](size_t) { return 0; }));
    a.push_back(scalar(U64, n));
    for (ScalarType t : kAllTypes)
      a.push_back(sentinel(t, n));
    a.push_back(sentinel(F32, n));
    a.push_back(sentinel(U32, n));
    return a;
  };
}

// Nested loops whose inner trip count depends on the outer counter and the lane, with regions
// inside each other: for c < trips[i]: if c is even, for c2 <= c + i % 3 (at most 6
// iterations): acc += c * c2 + i, scatter-add 1 to hits[i]; else call target (c + i) % 4 of 3
// (3: none) with a loop in target 1: acc ^= ...; the loop is itself inside an if on i % 5 != 2
// whose else part yields i * 7. Params: trips (in uint32), hits (inout uint32), n (scalar
// uint64), out (out uint64), inner (out uint32: the inner trips of the last outer iteration).
inline KernelIR nested_kernel() {
  Builder k;
  uint32_t ptrips = k.param(ParamKind::BufferIn, U32);
  uint32_t phits = k.param(ParamKind::BufferInOut, U32);
  uint32_t pn = k.param(ParamKind::Scalar, U64);
  uint32_t pout = k.param(ParamKind::BufferOut, U64);
  uint32_t pinner = k.param(ParamKind::BufferOut, U32);
  uint32_t i = k.emit(IrOp::Index, U32);
  uint32_t i64 = k.emit(IrOp::Cast, U64, i);
  uint32_t trips = k.emit(IrOp::Load, U32, ptrips);
  uint32_t zero = k.literal(U32, 0), one = k.literal(U32, 1), zero64 = k.literal(U64, 0);
  uint32_t yes = k.literal(B, 1);
  k.marker(IrOp::IfBegin,
           k.emit(IrOp::Ne, B, k.emit(IrOp::Mod, U32, i, k.literal(U32, 5)), k.literal(U32, 2)));
  {
    k.marker(IrOp::LoopBegin, kNoOperand, kNoIterationLimit);
    uint32_t c = k.emit(IrOp::LoopVar, U32, zero);
    uint32_t acc = k.emit(IrOp::LoopVar, U64, zero64);
    uint32_t last = k.emit(IrOp::LoopVar, U32, zero);
    k.marker(IrOp::LoopCond, k.emit(IrOp::Lt, B, c, trips));
    uint32_t even = k.emit(IrOp::Eq, B, k.emit(IrOp::And, U32, c, one), zero);
    k.marker(IrOp::IfBegin, even);
    {
      uint32_t bound = k.emit(IrOp::Add, U32, c, k.emit(IrOp::Mod, U32, i, k.literal(U32, 3)));
      k.marker(IrOp::LoopBegin, kNoOperand, 6);
      uint32_t c2 = k.emit(IrOp::LoopVar, U32, zero);
      uint32_t a2 = k.emit(IrOp::LoopVar, U64, acc);
      k.marker(IrOp::LoopCond, k.emit(IrOp::Le, B, c2, bound));
      k.emit(IrOp::ScatterAdd, U32, phits, i, yes, one, pn);
      uint32_t term =
          k.emit(IrOp::Add, U64, k.emit(IrOp::Cast, U64, k.emit(IrOp::Mul, U32, c, c2)), i64);
      uint32_t na = k.emit(IrOp::Add, U64, a2, term);
      uint32_t nc2 = k.emit(IrOp::Add, U32, c2, one);
      k.emit(IrOp::Yield, U32, nc2);
      k.emit(IrOp::Yield, U64, na);
      k.marker(IrOp::EndRegion);
      uint32_t inner = k.emit(IrOp::Result, U32);
      uint32_t racc = k.emit(IrOp::Result, U64);
      k.emit(IrOp::Yield, U64, racc);
      k.emit(IrOp::Yield, U32, inner);
    }
    k.marker(IrOp::IfElse);
    {
      uint32_t sel = k.emit(IrOp::Mod, U32, k.emit(IrOp::Add, U32, c, i), k.literal(U32, 4));
      k.marker(IrOp::CallBegin, sel, 3);
      k.emit(IrOp::Yield, U64, k.emit(IrOp::Xor, U64, acc, k.literal(U64, 0xFF)));
      k.marker(IrOp::CallCase);
      k.marker(IrOp::LoopBegin, kNoOperand, kNoIterationLimit);
      uint32_t c3 = k.emit(IrOp::LoopVar, U32, zero);
      uint32_t a3 = k.emit(IrOp::LoopVar, U64, acc);
      k.marker(IrOp::LoopCond, k.emit(IrOp::Lt, B, c3, c));
      uint32_t na3 = k.emit(IrOp::Mul, U64, k.emit(IrOp::Add, U64, a3, i64), k.literal(U64, 3));
      uint32_t nc3 = k.emit(IrOp::Add, U32, c3, one);
      k.emit(IrOp::Yield, U32, nc3);
      k.emit(IrOp::Yield, U64, na3);
      k.marker(IrOp::EndRegion);
      k.emit(IrOp::Result, U32);
      k.emit(IrOp::Yield, U64, k.emit(IrOp::Result, U64));
      k.marker(IrOp::CallCase);
      k.emit(IrOp::Yield, U64, k.emit(IrOp::Sub, U64, acc, i64));
      k.marker(IrOp::EndRegion);
      uint32_t r = k.emit(IrOp::Result, U64);
      // Out-of-range targets give 0: acc goes on from 0 there.
      k.emit(IrOp::Yield, U64, r);
      k.emit(IrOp::Yield, U32, last);
    }
    k.marker(IrOp::EndRegion);
    uint32_t nacc = k.emit(IrOp::Result, U64);
    uint32_t nlast = k.emit(IrOp::Result, U32);
    uint32_t nc = k.emit(IrOp::Add, U32, c, one);
    k.emit(IrOp::Yield, U32, nc);
    k.emit(IrOp::Yield, U64, nacc);
    k.emit(IrOp::Yield, U32, nlast);
    k.marker(IrOp::EndRegion);
    k.emit(IrOp::Result, U32);
    uint32_t racc = k.emit(IrOp::Result, U64);
    uint32_t rlast = k.emit(IrOp::Result, U32);
    k.emit(IrOp::Yield, U64, racc);
    k.emit(IrOp::Yield, U32, rlast);
  }
  k.marker(IrOp::IfElse);
  uint32_t seven_i = k.emit(IrOp::Mul, U64, i64, k.literal(U64, 7));
  uint32_t ninety_nine = k.literal(U32, 99);
  k.emit(IrOp::Yield, U64, seven_i);
  k.emit(IrOp::Yield, U32, ninety_nine);
  k.marker(IrOp::EndRegion);
  uint32_t out = k.emit(IrOp::Result, U64);
  uint32_t inner = k.emit(IrOp::Result, U32);
  k.emit(IrOp::Store, U64, pout, k.emit(IrOp::Add, U64, out, i64));
  k.emit(IrOp::Store, U32, pinner, inner);
  return k.finish();
}

// nested_kernel's arguments: trips (k * 3) % 8.
inline std::vector<Arg> nested_args(size_t n) {
  std::vector<Arg> a;
  a.push_back(buffer(U32, n, [](size_t k) { return (k * 3) % 8; }));
  a.push_back(buffer(U32, n, [](size_t) { return 0; }));
  a.push_back(scalar(U64, n));
  a.push_back(sentinel(U64, n));
  a.push_back(sentinel(U32, n));
  return a;
}

// call_kernel(targets)'s arguments with indices N, 2^32 - 1 and 2^31 among those in range.
inline Setup out_of_range_call_setup(uint32_t targets) {
  return [targets](size_t n) {
    std::vector<Arg> a;
    a.push_back(buffer(U32, n, [targets](size_t k) {
      switch (k % 5) {
        case 0:
          return double(targets);
        case 1:
          return 4294967295.0;
        case 2:
          return 2147483648.0;
        default:
          return double((k * 13) % targets);
      }
    }));
    a.push_back(sentinel(U32, n));
    return a;
  };
}

// Every family: arith_family, math_family and memory_family.
inline std::vector<Family> families() {
  return {arith_family(), math_family(), memory_family()};
}

inline constexpr Place kPlaces[] = {Place::Top, Place::Loop, Place::If, Place::Call};

/// Runs `ir` over [0, n) on the host interpreter with `args` (accumulations atomic).
inline void run_on_host(const KernelIR& ir, size_t n, std::vector<Arg>& args) {
  std::vector<uint64_t> w = words(args);
  w.push_back(0);  // the launch-mode word (accumulate_launch.h)
  ff_test::interpret(ir, n, w);
}

/// "" when every buffer of `got` holds what the same one of `want` does (floats within `tol`,
/// see close_enough()), else which parameter differs first: in how many elements, the first of
/// them.
inline std::string mismatch(const std::vector<Arg>& got, const std::vector<Arg>& want, double tol) {
  for (size_t p = 0; p < got.size() && p < want.size(); ++p) {
    if (!got[p].buffer)
      continue;
    if (got[p].bytes.size() != want[p].bytes.size())
      return "parameter " + std::to_string(p) + ": sizes differ";
    std::string what = with_type(got[p].type, [&](auto tag) -> std::string {
      using T = decltype(tag);
      using M = std::conditional_t<std::is_same_v<T, bool>, uint8_t, T>;
      size_t count = got[p].bytes.size() / sizeof(M), bad = 0, first = 0;
      M g{}, w{};
      for (size_t k = 0; k < count; ++k) {
        M gk, wk;
        std::memcpy(&gk, got[p].bytes.data() + k * sizeof(M), sizeof(M));
        std::memcpy(&wk, want[p].bytes.data() + k * sizeof(M), sizeof(M));
        if (!close_enough(gk, wk, tol) && bad++ == 0) {
          first = k;
          g = gk;
          w = wk;
        }
      }
      if (bad == 0)
        return "";
      std::ostringstream os;
      os.precision(17);
      os << "parameter " << p << " (" << to_string(got[p].type) << "): " << bad
         << " elements differ, the first at " << first << ": " << +g << " instead of " << +w;
      return os.str();
    });
    if (!what.empty())
      return what;
  }
  return "";
}

}  // namespace ff_test::region_ops
