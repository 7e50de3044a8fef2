// The llvm backend driven directly with hand-built kernel IR: every opcode and its edge cases,
// vector tails, gather/scatter masking and range reports, the host algorithms, the allocator,
// the kernel cache and IR validation.
#include "backend/llvm/llvm_backend.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <numeric>
#include <random>
#include <set>
#include <thread>
#include <type_traits>
#include <vector>

#include "backend/llvm/accumulate_launch.h"
#include "backend/llvm/host_allocator.h"
#include "backend/llvm/llvm_jit.h"
#include "backend/llvm/llvm_tuning.h"
#include "backend/llvm/thread_pool.h"
#include "freezeframe/errors.h"

#if defined(__SANITIZE_ADDRESS__)
#define FFT_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FFT_ASAN 1
#endif
#endif
#if defined(FFT_ASAN)
#include <sanitizer/asan_interface.h>
#endif
#include "support/child.h"
#include "support/errors.h"
#include "support/host_values.h"

namespace {

using ff_test::bits_of;
using ff_test::Bool8;
using ff_test::type_of;

using namespace ff;

// Calls f.template operator()<T>() for every element type.
template <class F>
void for_each_type(F&& f) {
  f.template operator()<Bool8>();
  f.template operator()<int32_t>();
  f.template operator()<uint32_t>();
  f.template operator()<int64_t>();
  f.template operator()<uint64_t>();
  f.template operator()<float>();
  f.template operator()<double>();
}

template <class F>
void for_each_numeric_type(F&& f) {
  f.template operator()<int32_t>();
  f.template operator()<uint32_t>();
  f.template operator()<int64_t>();
  f.template operator()<uint64_t>();
  f.template operator()<float>();
  f.template operator()<double>();
}

template <class F>
void for_each_int_type(F&& f) {
  f.template operator()<int32_t>();
  f.template operator()<uint32_t>();
  f.template operator()<int64_t>();
  f.template operator()<uint64_t>();
}

// Equal values, NaN equal to NaN.
template <class T>
bool same(T a, T b) {
  if constexpr (std::is_floating_point_v<T>)
    return (std::isnan(a) && std::isnan(b)) || a == b;
  else
    return a == b;
}

struct KernelBuilder {
  KernelIR ir;

  uint32_t param(ParamKind kind, ScalarType t) {
    ir.params.push_back({kind, t});
    return static_cast<uint32_t>(ir.params.size() - 1);
  }

  uint32_t emit(IrOp op, ScalarType t, uint32_t a = kNoOperand, uint32_t b = kNoOperand,
                uint32_t c = kNoOperand, uint32_t d = kNoOperand, uint32_t e = kNoOperand,
                uint64_t imm = 0, uint16_t flags = 0) {
    return ir.emit(op, t, {a, b, c, d, e}, imm, flags);
  }

  uint32_t load(uint32_t p) { return emit(IrOp::Load, ir.params[p].type, p); }

  void store(uint32_t p, uint32_t v) { emit(IrOp::Store, ir.params[p].type, p, v); }

  template <class T>
  uint32_t literal(T v) {
    return emit(IrOp::Literal, type_of<T>(), kNoOperand, kNoOperand, kNoOperand, kNoOperand,
                kNoOperand, bits_of(v));
  }

  KernelIR finish() {
    ir.finalize();
    return ir;
  }
};

// Which codegen tier kernels run at: the default (quick, optimised once hot), or pinned.
enum class Tiers { Default, Quick, Optimized };

llvm_backend::LlvmTuning tuning_for(Tiers tiers) {
  llvm_backend::LlvmTuning t;
  if (tiers == Tiers::Quick)
    t.tier_up_work = ~uint64_t{0};
  if (tiers == Tiers::Optimized)
    t.tiered = false;
  return t;
}

// One backend plus helpers to move arrays in and out.
struct Env {
  std::unique_ptr<Backend> be;
  std::vector<void*> owned;

  explicit Env(unsigned n_threads = 0, Tiers tiers = Tiers::Default)
      : be(llvm_backend::create_llvm_backend(BackendOptions{n_threads}, tuning_for(tiers))) {}

  explicit Env(Tiers tiers) : Env(0, tiers) {}

  ~Env() {
    for (void* p : owned)
      be->release(p);
  }

  template <class T>
  T* alloc(size_t n) {
    auto* p = static_cast<T*>(be->alloc(type_of<T>(), n, {}));
    owned.push_back(p);
    return p;
  }

  template <class T>
  T* upload(const std::vector<T>& v) {
    T* p = alloc<T>(v.size());
    be->copy(p, v.data(), v.size() * sizeof(T), CopyKind::HostToDevice);
    return p;
  }

  template <class T>
  std::vector<T> download(const T* p, size_t n) {
    std::vector<T> v(n);
    be->copy(v.data(), p, n * sizeof(T), CopyKind::DeviceToHost);
    return v;
  }

  void run(const KernelIR& ir, size_t size, const std::vector<KernelArg>& args) {
    be->launch(be->compile(ir), size, {}, args);
  }
};

KernelArg buf(const void* p) {
  return KernelArg::buffer(p);
}

KernelArg scalar(uint64_t bits) {
  return KernelArg{bits, {}};
}

// out[i] = op(a[i]) with result type R.
template <class R, class T>
std::vector<R> unary(Env& env, IrOp op, const std::vector<T>& a) {
  KernelBuilder k;
  uint32_t pa = k.param(ParamKind::BufferIn, type_of<T>());
  uint32_t po = k.param(ParamKind::BufferOut, type_of<R>());
  uint32_t r = k.emit(op, type_of<R>(), k.load(pa));
  k.store(po, r);
  R* out = env.alloc<R>(a.size());
  env.run(k.finish(), a.size(), {buf(env.upload(a)), buf(out)});
  return env.download(out, a.size());
}

// out[i] = op(a[i], b[i]) with result type R.
template <class R, class T>
std::vector<R> binary(Env& env, IrOp op, const std::vector<T>& a, const std::vector<T>& b) {
  KernelBuilder k;
  uint32_t pa = k.param(ParamKind::BufferIn, type_of<T>());
  uint32_t pb = k.param(ParamKind::BufferIn, type_of<T>());
  uint32_t po = k.param(ParamKind::BufferOut, type_of<R>());
  uint32_t la = k.load(pa), lb = k.load(pb);
  k.store(po, k.emit(op, type_of<R>(), la, lb));
  R* out = env.alloc<R>(a.size());
  env.run(k.finish(), a.size(), {buf(env.upload(a)), buf(env.upload(b)), buf(out)});
  return env.download(out, a.size());
}

template <class T>
std::vector<T> edge_values() {
  using L = std::numeric_limits<T>;
  if constexpr (std::is_same_v<T, Bool8>) {
    return {0, 1};
  } else if constexpr (std::is_floating_point_v<T>) {
    return {T(0),     T(-0.0),     T(1),     T(-1),         T(0.5),         T(-2.5),
            T(3.75),  T(1e10),     T(-1e10), L::infinity(), -L::infinity(), L::quiet_NaN(),
            L::max(), L::lowest(), L::min(), T(7),          T(-7)};
  } else if constexpr (std::is_signed_v<T>) {
    return {T(0),     T(1),     T(-1),           T(2),     T(-2),    T(7), T(-7), T(100),
            L::min(), L::max(), T(L::min() + 1), T(12345), T(-99999)};
  } else {
    return {T(0),     T(1),    T(2), T(7), T(100), L::max(), T(L::max() - 1), T(L::max() / 2 + 1),
            T(12345), T(99999)};
  }
}

// All pairs (a, b) of edge values as two parallel arrays (their length exercises the tail).
template <class T>
std::pair<std::vector<T>, std::vector<T>> pairs() {
  auto v = edge_values<T>();
  std::pair<std::vector<T>, std::vector<T>> p;
  for (T x : v)
    for (T y : v) {
      p.first.push_back(x);
      p.second.push_back(y);
    }
  return p;
}

template <class T>
T wrap_add(T a, T b) {
  using U = std::make_unsigned_t<T>;
  return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
}

template <class T>
T wrap_sub(T a, T b) {
  using U = std::make_unsigned_t<T>;
  return static_cast<T>(static_cast<U>(a) - static_cast<U>(b));
}

template <class T>
T wrap_mul(T a, T b) {
  using U = std::make_unsigned_t<T>;
  if constexpr (sizeof(T) == 4)
    return static_cast<T>(static_cast<uint32_t>(uint64_t(static_cast<U>(a)) * static_cast<U>(b)));
  else
    return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
}

const std::vector<size_t> kTailSizes = {1, 7, 16, 17, 1000, 1000003};

}  // namespace

TEST_CASE("load and store round-trip every type at tail sizes", "[llvm]") {
  Tiers tiers = GENERATE(Tiers::Quick, Tiers::Optimized);
  INFO((tiers == Tiers::Quick ? "quick tier" : "optimized tier"));
  Env env(tiers);
  for_each_type([&]<class T>() {
    KernelBuilder k;
    uint32_t pi = k.param(ParamKind::BufferIn, type_of<T>());
    uint32_t po = k.param(ParamKind::BufferOut, type_of<T>());
    k.store(po, k.load(pi));
    KernelIR ir = k.finish();
    for (size_t n : kTailSizes) {
      std::vector<T> in(n);
      for (size_t i = 0; i < n; ++i)
        in[i] = std::is_same_v<T, Bool8> ? T(i % 3 == 0) : T(i * 3 + 1);
      // One guard element after the output catches writes past the end.
      T* out = env.alloc<T>(n + 1);
      env.be->fill(out, n + 1, sizeof(T), 0x5A5A5A5A5A5A5A5Aull);
      env.run(ir, n, {buf(env.upload(in)), buf(out)});
      auto got = env.download(out, n + 1);
      INFO(to_string(type_of<T>()) << " n=" << n);
      CHECK(std::equal(in.begin(), in.end(), got.begin()));
      CHECK(bits_of(got[n]) ==
            (0x5A5A5A5A5A5A5A5Aull & (sizeof(T) == 8 ? ~0ull : (1ull << (8 * sizeof(T))) - 1)));
    }
  });
}

TEST_CASE("index, literal, scalar and load_broadcast", "[llvm]") {
  Tiers tiers = GENERATE(Tiers::Quick, Tiers::Optimized);
  INFO((tiers == Tiers::Quick ? "quick tier" : "optimized tier"));
  Env env(tiers);
  for (size_t n : kTailSizes) {
    KernelBuilder k;
    uint32_t o_i32 = k.param(ParamKind::BufferOut, ScalarType::Int32);
    uint32_t o_u64 = k.param(ParamKind::BufferOut, ScalarType::UInt64);
    uint32_t o_f32 = k.param(ParamKind::BufferOut, ScalarType::Float32);
    uint32_t o_f64 = k.param(ParamKind::BufferOut, ScalarType::Float64);
    uint32_t o_b = k.param(ParamKind::BufferOut, ScalarType::Bool);
    uint32_t s_f32 = k.param(ParamKind::Scalar, ScalarType::Float32);
    uint32_t s_i64 = k.param(ParamKind::Scalar, ScalarType::Int64);
    uint32_t s_b = k.param(ParamKind::Scalar, ScalarType::Bool);
    uint32_t bc = k.param(ParamKind::BufferIn, ScalarType::Float64);
    uint32_t bc_b = k.param(ParamKind::BufferIn, ScalarType::Bool);

    uint32_t idx32 = k.emit(IrOp::Index, ScalarType::Int32);
    k.store(o_i32, k.emit(IrOp::Add, ScalarType::Int32, idx32, k.literal<int32_t>(-5)));
    uint32_t idx64 = k.emit(IrOp::Index, ScalarType::UInt64);
    uint32_t sc64 = k.emit(IrOp::Scalar, ScalarType::Int64, s_i64);
    uint32_t sc64u = k.emit(IrOp::Bitcast, ScalarType::UInt64, sc64);
    k.store(o_u64, k.emit(IrOp::Mul, ScalarType::UInt64, idx64, sc64u));
    uint32_t idxf = k.emit(IrOp::Index, ScalarType::Float32);
    uint32_t scf = k.emit(IrOp::Scalar, ScalarType::Float32, s_f32);
    k.store(o_f32, k.emit(IrOp::Fma, ScalarType::Float32, idxf, scf, k.literal(0.25f)));
    uint32_t idxd = k.emit(IrOp::Index, ScalarType::Float64);
    uint32_t b = k.emit(IrOp::LoadBroadcast, ScalarType::Float64, bc);
    k.store(o_f64, k.emit(IrOp::Add, ScalarType::Float64, idxd, b));
    uint32_t sb = k.emit(IrOp::Scalar, ScalarType::Bool, s_b);
    uint32_t bb = k.emit(IrOp::LoadBroadcast, ScalarType::Bool, bc_b);
    uint32_t lit_b = k.literal<Bool8>(1);
    k.store(o_b, k.emit(IrOp::And, ScalarType::Bool, k.emit(IrOp::Xor, ScalarType::Bool, sb, bb),
                        lit_b));
    KernelIR ir = k.finish();

    auto* a = env.alloc<int32_t>(n);
    auto* c = env.alloc<uint64_t>(n);
    auto* f = env.alloc<float>(n);
    auto* d = env.alloc<double>(n);
    auto* bo = env.alloc<Bool8>(n);
    double* one = env.upload(std::vector<double>{0.5});
    Bool8* bone = env.upload(std::vector<Bool8>{0});
    env.run(ir, n,
            {buf(a), buf(c), buf(f), buf(d), buf(bo), scalar(bits_of(1.5f)),
             scalar(bits_of(int64_t{-3})), scalar(1), buf(one), buf(bone)});
    auto va = env.download(a, n);
    auto vc = env.download(c, n);
    auto vf = env.download(f, n);
    auto vd = env.download(d, n);
    auto vb = env.download(bo, n);
    INFO("n=" << n);
    size_t first_bad = n;
    for (size_t i = 0; i < n && first_bad == n; ++i) {
      bool ok = va[i] == int32_t(i) - 5 && vc[i] == uint64_t(i) * uint64_t(int64_t{-3}) &&
                vf[i] == std::fma(float(i), 1.5f, 0.25f) && vd[i] == double(i) + 0.5 && vb[i] == 1;
      if (!ok)
        first_bad = i;
    }
    CHECK(first_bad == n);
  }
}

TEST_CASE("integer arithmetic wraps and division never traps", "[llvm]") {
  Tiers tiers = GENERATE(Tiers::Quick, Tiers::Optimized);
  INFO((tiers == Tiers::Quick ? "quick tier" : "optimized tier"));
  Env env(tiers);
  for_each_int_type([&]<class T>() {
    INFO(to_string(type_of<T>()));
    const auto ab = pairs<T>();  // not a structured binding: the lambda below captures them
    const auto& a = ab.first;
    const auto& b = ab.second;
    auto add = binary<T>(env, IrOp::Add, a, b);
    auto sub = binary<T>(env, IrOp::Sub, a, b);
    auto mul = binary<T>(env, IrOp::Mul, a, b);
    auto div = binary<T>(env, IrOp::Div, a, b);
    auto mod = binary<T>(env, IrOp::Mod, a, b);
    auto mn = binary<T>(env, IrOp::Min, a, b);
    auto mx = binary<T>(env, IrOp::Max, a, b);
    auto fma_out = [&] {
      KernelBuilder k;
      uint32_t pa = k.param(ParamKind::BufferIn, type_of<T>());
      uint32_t pb = k.param(ParamKind::BufferIn, type_of<T>());
      uint32_t po = k.param(ParamKind::BufferOut, type_of<T>());
      uint32_t la = k.load(pa), lb = k.load(pb);
      k.store(po, k.emit(IrOp::Fma, type_of<T>(), la, lb, la));
      T* out = env.alloc<T>(a.size());
      env.run(k.finish(), a.size(), {buf(env.upload(a)), buf(env.upload(b)), buf(out)});
      return env.download(out, a.size());
    }();
    for (size_t i = 0; i < a.size(); ++i) {
      T x = a[i], y = b[i];
      INFO(+x << " op " << +y);
      CHECK(add[i] == wrap_add(x, y));
      CHECK(sub[i] == wrap_sub(x, y));
      CHECK(mul[i] == wrap_mul(x, y));
      CHECK(fma_out[i] == wrap_add(wrap_mul(x, y), x));
      CHECK(mn[i] == std::min(x, y));
      CHECK(mx[i] == std::max(x, y));
      if (y == 0)
        continue;  // value unspecified, but it must not trap
      if (std::is_signed_v<T> && x == std::numeric_limits<T>::min() && y == T(-1)) {
        CHECK(div[i] == std::numeric_limits<T>::min());
        CHECK(mod[i] == 0);
      } else {
        CHECK(div[i] == x / y);
        CHECK(mod[i] == x % y);
      }
    }
  });
}

TEST_CASE("integer neg, abs, not, bitwise ops and shifts", "[llvm]") {
  Tiers tiers = GENERATE(Tiers::Quick, Tiers::Optimized);
  INFO((tiers == Tiers::Quick ? "quick tier" : "optimized tier"));
  Env env(tiers);
  for_each_int_type([&]<class T>() {
    INFO(to_string(type_of<T>()));
    using U = std::make_unsigned_t<T>;
    constexpr unsigned kBits = sizeof(T) * 8;
    auto [a, b] = pairs<T>();
    auto neg = unary<T>(env, IrOp::Neg, a);
    auto abs_v = unary<T>(env, IrOp::Abs, a);
    auto not_v = unary<T>(env, IrOp::Not, a);
    auto and_v = binary<T>(env, IrOp::And, a, b);
    auto or_v = binary<T>(env, IrOp::Or, a, b);
    auto xor_v = binary<T>(env, IrOp::Xor, a, b);
    auto shl = binary<T>(env, IrOp::Shl, a, b);
    auto shr = binary<T>(env, IrOp::Shr, a, b);
    for (size_t i = 0; i < a.size(); ++i) {
      T x = a[i], y = b[i];
      INFO(+x << " op " << +y);
      CHECK(neg[i] == wrap_sub(T(0), x));
      CHECK(abs_v[i] == (std::is_signed_v<T> && x < T(0) ? wrap_sub(T(0), x) : x));
      CHECK(not_v[i] == T(~x));
      CHECK(and_v[i] == T(x & y));
      CHECK(or_v[i] == T(x | y));
      CHECK(xor_v[i] == T(y ^ x));
      unsigned n = static_cast<unsigned>(static_cast<U>(y) & (kBits - 1));
      CHECK(shl[i] == static_cast<T>(static_cast<U>(x) << n));
      CHECK(shr[i] == static_cast<T>(x >> n));  // arithmetic for signed (C++20)
    }
  });
}

TEST_CASE("float arithmetic, min/max ignore NaN, fma is fused", "[llvm]") {
  Tiers tiers = GENERATE(Tiers::Quick, Tiers::Optimized);
  INFO((tiers == Tiers::Quick ? "quick tier" : "optimized tier"));
  Env env(tiers);
  auto check = [&]<class T>() {
    INFO(to_string(type_of<T>()));
    auto [a, b] = pairs<T>();
    auto add = binary<T>(env, IrOp::Add, a, b);
    auto sub = binary<T>(env, IrOp::Sub, a, b);
    auto mul = binary<T>(env, IrOp::Mul, a, b);
    auto div = binary<T>(env, IrOp::Div, a, b);
    auto mn = binary<T>(env, IrOp::Min, a, b);
    auto mx = binary<T>(env, IrOp::Max, a, b);
    auto neg = unary<T>(env, IrOp::Neg, a);
    auto abs_v = unary<T>(env, IrOp::Abs, a);
    KernelBuilder k;
    uint32_t pa = k.param(ParamKind::BufferIn, type_of<T>());
    uint32_t pb = k.param(ParamKind::BufferIn, type_of<T>());
    uint32_t po = k.param(ParamKind::BufferOut, type_of<T>());
    uint32_t la = k.load(pa), lb = k.load(pb);
    k.store(po, k.emit(IrOp::Fma, type_of<T>(), la, lb, k.literal(T(0.1))));
    T* out = env.alloc<T>(a.size());
    env.run(k.finish(), a.size(), {buf(env.upload(a)), buf(env.upload(b)), buf(out)});
    auto fma_v = env.download(out, a.size());
    for (size_t i = 0; i < a.size(); ++i) {
      T x = a[i], y = b[i];
      INFO(x << " op " << y);
      CHECK(same(add[i], T(x + y)));
      CHECK(same(sub[i], T(x - y)));
      CHECK(same(mul[i], T(x * y)));
      CHECK(same(div[i], T(x / y)));
      CHECK(same(mn[i], std::fmin(x, y)));  // a NaN operand is ignored
      CHECK(same(mx[i], std::fmax(x, y)));
      CHECK(same(fma_v[i], std::fma(x, y, T(0.1))));
      CHECK(bits_of(neg[i]) == bits_of(T(-x)));
      CHECK(bits_of(abs_v[i]) == bits_of(std::fabs(x)));
    }
  };
  check.operator()<float>();
  check.operator()<double>();
}

TEST_CASE("float min/max: a NaN first operand gives the second, equal operands the first",
          "[llvm]") {
  // docs/kernel-ir.md spells min/max out (llvm.minnum leaves zero signs to the target): both
  // tiers give exactly `isnan(a) || b < a ? b : a`, bit for bit, signalling NaNs and NaN
  // payloads included, so the tracer's constant folding can compute the same.
  Tiers tiers = GENERATE(Tiers::Quick, Tiers::Optimized);
  INFO((tiers == Tiers::Quick ? "quick tier" : "optimized tier"));
  Env env(tiers);
  auto check = [&]<class T>() {
    INFO(to_string(type_of<T>()));
    using Bits = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
    const Bits quiet = Bits(1) << (std::numeric_limits<T>::digits - 2);
    const Bits exp = std::bit_cast<Bits>(std::numeric_limits<T>::infinity());
    const Bits sign = Bits(1) << (sizeof(T) * 8 - 1);
    const std::vector<T> v = {T(0),
                              T(-0.0),
                              T(1),
                              T(-1),
                              std::numeric_limits<T>::infinity(),
                              -std::numeric_limits<T>::infinity(),
                              std::numeric_limits<T>::denorm_min(),
                              std::bit_cast<T>(Bits(exp | quiet)),
                              std::bit_cast<T>(Bits(sign | exp | quiet | 7)),
                              std::bit_cast<T>(Bits(exp | 1)),             // signalling
                              std::bit_cast<T>(Bits(sign | exp | 0x55))};  // signalling
    std::vector<T> a, b;
    for (T x : v)
      for (T y : v) {
        a.push_back(x);
        b.push_back(y);
      }
    auto mn = binary<T>(env, IrOp::Min, a, b);
    auto mx = binary<T>(env, IrOp::Max, a, b);
    for (size_t i = 0; i < a.size(); ++i) {
      T x = a[i], y = b[i];
      INFO(std::hex << bits_of(x) << " op " << bits_of(y));
      CHECK(bits_of(mn[i]) == bits_of(std::isnan(x) || y < x ? y : x));
      CHECK(bits_of(mx[i]) == bits_of(std::isnan(x) || y > x ? y : x));
    }
  };
  check.operator()<float>();
  check.operator()<double>();
}

namespace {

// Distance in units in the last place between two finite values of one type.
template <class T>
uint64_t ulp_distance(T a, T b) {
  using Bits = std::conditional_t<sizeof(T) == 4, int32_t, int64_t>;
  auto ordered = [](T v) {
    Bits i = std::bit_cast<Bits>(v);
    return i < 0 ? std::numeric_limits<Bits>::min() - i : i;  // monotonic in v
  };
  Bits x = ordered(a), y = ordered(b);
  return x > y ? uint64_t(x) - uint64_t(y) : uint64_t(y) - uint64_t(x);
}

}  // namespace

TEST_CASE("vector exp, log, sin and cos stay within 4 ulp of libm over wide ranges", "[llvm]") {
  Tiers tiers = GENERATE(Tiers::Quick, Tiers::Optimized);
  INFO((tiers == Tiers::Quick ? "quick tier" : "optimized tier"));
  Env env(tiers);
  {
    // Vector code calls libmvec where glibc provides it (what makes these ~5-20x faster).
    llvm_backend::LlvmJit jit;
    KernelBuilder k;
    uint32_t pa = k.param(ParamKind::BufferIn, ScalarType::Float32);
    uint32_t po = k.param(ParamKind::BufferOut, ScalarType::Float32);
    k.store(po, k.emit(IrOp::Sin, ScalarType::Float32, k.load(pa)));
    std::string text = jit.emit_llvm_ir(k.finish());
    if (jit.target().vector_math_isa)
      CHECK_THAT(text, Catch::Matchers::Contains("_ZGV"));
    else
      WARN("libmvec is not available: vector math is scalarised into libm calls");
  }
  auto check = [&]<class T>() {
    INFO(to_string(type_of<T>()));
    std::mt19937_64 rng(42);
    std::vector<T> a;
    // Magnitudes from 1e-30 to 1e30, both signs, plus the special values.
    for (int i = 0; i < 20000; ++i) {
      T mag = T(std::pow(10.0, std::uniform_real_distribution<double>(-30, 30)(rng)));
      a.push_back(i % 2 ? mag : -mag);
    }
    for (int i = 0; i < 20000; ++i)  // the usual range, densely
      a.push_back(T(std::uniform_real_distribution<double>(-100, 100)(rng)));
    for (T v : {T(0), T(-0.0), T(1), T(-1), std::numeric_limits<T>::infinity(),
                -std::numeric_limits<T>::infinity(), std::numeric_limits<T>::quiet_NaN(),
                std::numeric_limits<T>::denorm_min(), std::numeric_limits<T>::min(),
                std::numeric_limits<T>::max(), T(88.72), T(-103.9), T(709.78), T(-745.1)})
      a.push_back(v);
    struct Fn {
      IrOp op;
      const char* name;
      T (*ref)(T);
    };
    const Fn fns[] = {{IrOp::Exp, "exp", [](T v) { return std::exp(v); }},
                      {IrOp::Log, "log", [](T v) { return std::log(v); }},
                      {IrOp::Sin, "sin", [](T v) { return std::sin(v); }},
                      {IrOp::Cos, "cos", [](T v) { return std::cos(v); }}};
    for (const Fn& f : fns) {
      INFO(f.name);
      auto got = unary<T>(env, f.op, a);
      size_t bad = 0;
      for (size_t i = 0; i < a.size(); ++i) {
        T want = f.ref(a[i]);
        bool ok;
        if (std::isnan(want) || std::isinf(want) || want == 0)
          ok = same(got[i], want) || (want == 0 && got[i] == 0);
        else if (std::fabs(want) < std::numeric_limits<T>::min())
          ok = std::fabs(got[i] - want) <= 4 * std::numeric_limits<T>::denorm_min();
        else
          ok = std::isfinite(got[i]) && ulp_distance(got[i], want) <= 4;
        if (!ok && bad++ < 5)
          UNSCOPED_INFO(f.name << "(" << a[i] << ") = " << got[i] << ", libm " << want);
      }
      CHECK(bad == 0);
    }
  };
  check.operator()<float>();
  check.operator()<double>();
}

TEST_CASE("float math functions match libm", "[llvm]") {
  Tiers tiers = GENERATE(Tiers::Quick, Tiers::Optimized);
  INFO((tiers == Tiers::Quick ? "quick tier" : "optimized tier"));
  Env env(tiers);
  auto check = [&]<class T>() {
    INFO(to_string(type_of<T>()));
    std::vector<T> a;
    for (int i = -40; i <= 40; ++i)
      a.push_back(T(i) * T(0.37));
    a.push_back(std::numeric_limits<T>::infinity());
    a.push_back(std::numeric_limits<T>::quiet_NaN());
    auto near = [](T got, T want) {
      if (std::isnan(want) || std::isinf(want))
        return same(got, want);
      return std::fabs(got - want) <= T(1e-6) * std::max(T(1), std::fabs(want));
    };
    auto sq = unary<T>(env, IrOp::Sqrt, a);
    auto ex = unary<T>(env, IrOp::Exp, a);
    auto lg = unary<T>(env, IrOp::Log, a);
    auto sn = unary<T>(env, IrOp::Sin, a);
    auto cs = unary<T>(env, IrOp::Cos, a);
    auto fl = unary<T>(env, IrOp::Floor, a);
    auto ce = unary<T>(env, IrOp::Ceil, a);
    for (size_t i = 0; i < a.size(); ++i) {
      T x = a[i];
      INFO("x = " << x);
      CHECK(same(sq[i], std::sqrt(x)));
      CHECK(near(ex[i], std::exp(x)));
      CHECK(near(lg[i], std::log(x)));
      CHECK(near(sn[i], std::sin(x)));
      CHECK(near(cs[i], std::cos(x)));
      CHECK(same(fl[i], std::floor(x)));
      CHECK(same(ce[i], std::ceil(x)));
    }
  };
  check.operator()<float>();
  check.operator()<double>();
}

TEST_CASE("comparisons: ordered floats, != true on NaN, signedness by type", "[llvm]") {
  Tiers tiers = GENERATE(Tiers::Quick, Tiers::Optimized);
  INFO((tiers == Tiers::Quick ? "quick tier" : "optimized tier"));
  Env env(tiers);
  auto check = [&]<class T>() {
    INFO(to_string(type_of<T>()));
    auto [a, b] = pairs<T>();
    auto eq = binary<Bool8>(env, IrOp::Eq, a, b);
    auto ne = binary<Bool8>(env, IrOp::Ne, a, b);
    auto lt = binary<Bool8>(env, IrOp::Lt, a, b);
    auto le = binary<Bool8>(env, IrOp::Le, a, b);
    auto gt = binary<Bool8>(env, IrOp::Gt, a, b);
    auto ge = binary<Bool8>(env, IrOp::Ge, a, b);
    for (size_t i = 0; i < a.size(); ++i) {
      T x = a[i], y = b[i];
      INFO(+x << " cmp " << +y);
      CHECK(eq[i] == (x == y));
      CHECK(ne[i] == (x != y));
      CHECK(lt[i] == (x < y));
      CHECK(le[i] == (x <= y));
      CHECK(gt[i] == (x > y));
      CHECK(ge[i] == (x >= y));
    }
  };
  for_each_type(check);
}

TEST_CASE("bool logic: not, and, or, xor, select", "[llvm]") {
  Tiers tiers = GENERATE(Tiers::Quick, Tiers::Optimized);
  INFO((tiers == Tiers::Quick ? "quick tier" : "optimized tier"));
  Env env(tiers);
  std::vector<Bool8> a = {0, 0, 1, 1, 0, 1, 1, 0, 1}, b = {0, 1, 0, 1, 1, 1, 0, 0, 1};
  auto n = unary<Bool8>(env, IrOp::Not, a);
  auto x = binary<Bool8>(env, IrOp::And, a, b);
  auto o = binary<Bool8>(env, IrOp::Or, a, b);
  auto e = binary<Bool8>(env, IrOp::Xor, a, b);
  for (size_t i = 0; i < a.size(); ++i) {
    CHECK(n[i] == !a[i]);
    CHECK(x[i] == (a[i] & b[i]));
    CHECK(o[i] == (a[i] | b[i]));
    CHECK(e[i] == (a[i] ^ b[i]));
  }
  for_each_type([&]<class T>() {
    KernelBuilder k;
    uint32_t pm = k.param(ParamKind::BufferIn, ScalarType::Bool);
    uint32_t pa = k.param(ParamKind::BufferIn, type_of<T>());
    uint32_t pb = k.param(ParamKind::BufferIn, type_of<T>());
    uint32_t po = k.param(ParamKind::BufferOut, type_of<T>());
    uint32_t m = k.load(pm), la = k.load(pa), lb = k.load(pb);
    k.store(po, k.emit(IrOp::Select, type_of<T>(), m, la, lb));
    size_t cnt = 1001;
    std::vector<Bool8> mask(cnt);
    std::vector<T> va(cnt), vb(cnt);
    for (size_t i = 0; i < cnt; ++i) {
      mask[i] = (i * 7) % 3 == 0;
      va[i] = T(i % 2);
      vb[i] = T((i + 1) % 2);
    }
    T* out = env.alloc<T>(cnt);
    env.run(k.finish(), cnt,
            {buf(env.upload(mask)), buf(env.upload(va)), buf(env.upload(vb)), buf(out)});
    auto got = env.download(out, cnt);
    for (size_t i = 0; i < cnt; ++i)
      CHECK(got[i] == (mask[i] ? va[i] : vb[i]));
  });
}

namespace {

template <class To, class From>
To ref_cast(From x) {
  if constexpr (std::is_same_v<To, Bool8>) {
    return x != From(0) ? 1 : 0;  // NaN != 0 is true
  } else if constexpr (std::is_floating_point_v<From> && std::is_integral_v<To>) {
    using L = std::numeric_limits<To>;
    if (std::isnan(x))
      return 0;
    if (x <= From(L::min()))
      return L::min();
    if (x >= From(L::max()))
      return L::max();
    return static_cast<To>(x);
  } else {
    return static_cast<To>(x);  // C++20: modular int conversions, sign by source type
  }
}

}  // namespace

TEST_CASE("casts between every pair of types", "[llvm]") {
  Tiers tiers = GENERATE(Tiers::Quick, Tiers::Optimized);
  INFO((tiers == Tiers::Quick ? "quick tier" : "optimized tier"));
  Env env(tiers);
  for_each_type([&]<class From>() {
    std::vector<From> in = edge_values<From>();
    if constexpr (std::is_floating_point_v<From>) {
      for (From v : {From(2147483520.0), From(3e9), From(4.3e9), From(-2147483904.0), From(1e19),
                     From(2e19), From(-9.3e18), From(0.99), From(-0.99)})
        in.push_back(v);
    }
    for_each_type([&]<class To>() {
      INFO(to_string(type_of<From>()) << " -> " << to_string(type_of<To>()));
      auto got = unary<To>(env, IrOp::Cast, in);
      for (size_t i = 0; i < in.size(); ++i) {
        INFO("value " << +in[i]);
        CHECK(same(got[i], ref_cast<To>(in[i])));
      }
    });
  });
}

TEST_CASE("bitcast reinterprets bits", "[llvm]") {
  Tiers tiers = GENERATE(Tiers::Quick, Tiers::Optimized);
  INFO((tiers == Tiers::Quick ? "quick tier" : "optimized tier"));
  Env env(tiers);
  std::vector<float> f = {1.0f, -2.5f, std::numeric_limits<float>::infinity()};
  auto u = unary<uint32_t>(env, IrOp::Bitcast, f);
  auto back = unary<float>(env, IrOp::Bitcast, u);
  auto s = unary<int32_t>(env, IrOp::Bitcast, u);
  for (size_t i = 0; i < f.size(); ++i) {
    CHECK(u[i] == std::bit_cast<uint32_t>(f[i]));
    CHECK(back[i] == f[i]);
    CHECK(s[i] == std::bit_cast<int32_t>(f[i]));
  }
  std::vector<double> d = {1.0, -0.0, 3.25};
  auto i64 = unary<int64_t>(env, IrOp::Bitcast, d);
  for (size_t i = 0; i < d.size(); ++i)
    CHECK(i64[i] == std::bit_cast<int64_t>(d[i]));
}

namespace {

// A debug range report: `hit` is 1 once an offending access happened, `index` is one of them.
struct RangeReport {
  uint64_t hit = 0, index = 0;
};

// out[i] = gather(src, idx[i], mask[i]) with an optional range report.
template <class T, class I>
std::vector<T> gather(Env& env, const std::vector<T>& src, const std::vector<I>& idx,
                      const std::vector<Bool8>& mask, RangeReport* report = nullptr) {
  KernelBuilder k;
  uint32_t ps = k.param(ParamKind::BufferIn, type_of<T>());
  uint32_t pi = k.param(ParamKind::BufferIn, type_of<I>());
  uint32_t pm = k.param(ParamKind::BufferIn, ScalarType::Bool);
  uint32_t pn = k.param(ParamKind::Scalar, ScalarType::UInt64);
  uint32_t po = k.param(ParamKind::BufferOut, type_of<T>());
  uint32_t pr = k.param(ParamKind::BufferInOut, ScalarType::UInt64);
  uint32_t li = k.load(pi), lm = k.load(pm);
  uint32_t g = k.emit(IrOp::Gather, type_of<T>(), ps, li, lm, pn, kNoOperand, report ? pr : 0,
                      report ? kIrFlagReportRange : 0);
  k.store(po, g);
  T* out = env.alloc<T>(idx.size());
  uint64_t* rep = env.upload(std::vector<uint64_t>{0, 0});
  env.run(k.finish(), idx.size(),
          {buf(env.upload(src)), buf(env.upload(idx)), buf(env.upload(mask)), scalar(src.size()),
           buf(out), buf(rep)});
  if (report) {
    auto words = env.download(rep, 2);
    *report = {words[0], words[1]};
  }
  return env.download(out, idx.size());
}

}  // namespace

TEST_CASE("gather masks and drops out-of-range indices, negatives included", "[llvm]") {
  Tiers tiers = GENERATE(Tiers::Quick, Tiers::Optimized);
  INFO((tiers == Tiers::Quick ? "quick tier" : "optimized tier"));
  Env env(tiers);
  for (size_t n : {size_t(1), size_t(7), size_t(1000), size_t(1000003)}) {
    INFO("n=" << n);
    std::vector<float> src(1000);
    for (size_t i = 0; i < src.size(); ++i)
      src[i] = float(i) + 0.5f;
    std::vector<int32_t> idx(n);
    std::vector<Bool8> mask(n);
    for (size_t i = 0; i < n; ++i) {
      idx[i] = int32_t((i * 7919) % 1300) - 100;  // -100 .. 1199: some out of range
      mask[i] = i % 5 != 0;
    }
    auto got = gather(env, src, idx, mask);
    size_t bad = 0;
    for (size_t i = 0; i < n; ++i) {
      bool ok = mask[i] && idx[i] >= 0 && idx[i] < 1000;
      bad += got[i] != (ok ? src[size_t(idx[i])] : 0.0f);
    }
    CHECK(bad == 0);
  }
  // Every element and index type.
  for_each_type([&]<class T>() {
    for_each_int_type([&]<class I>() {
      INFO(to_string(type_of<T>()) << "[" << to_string(type_of<I>()) << "]");
      std::vector<T> src = {T(1), T(0), T(1), T(1)};
      std::vector<I> idx = {I(0), I(1), I(2), I(3), I(4), I(-1), I(3), I(2), I(0)};
      std::vector<Bool8> mask = {1, 1, 1, 1, 1, 1, 0, 1, 1};
      auto got = gather(env, src, idx, mask);
      std::vector<T> want = {T(1), T(0), T(1), T(1), T(0), T(0), T(0), T(1), T(1)};
      CHECK(got == want);
    });
  });
}

TEST_CASE("gather range report names an offending index", "[llvm]") {
  Tiers tiers = GENERATE(Tiers::Quick, Tiers::Optimized);
  INFO((tiers == Tiers::Quick ? "quick tier" : "optimized tier"));
  Env env(tiers);
  std::vector<double> src = {1, 2, 3};
  RangeReport report;
  gather(env, src, std::vector<int32_t>{0, 1, 2, 2, 1}, std::vector<Bool8>{1, 1, 1, 1, 1}, &report);
  CHECK(report.hit == 0);
  // Out of range but masked off: no report.
  gather(env, src, std::vector<int32_t>{0, 7, 2}, std::vector<Bool8>{1, 0, 1}, &report);
  CHECK(report.hit == 0);
  gather(env, src, std::vector<int32_t>{0, 7, 2}, std::vector<Bool8>{1, 1, 1}, &report);
  CHECK(report.hit == 1);
  CHECK(report.index == 7);
  gather(env, src, std::vector<int32_t>{-3}, std::vector<Bool8>{1}, &report);
  CHECK(report.hit == 1);
  CHECK(report.index == uint64_t(int64_t{-3}));  // sign-extended
  // -1 and the largest index are offenders like any other.
  gather(env, src, std::vector<int32_t>{1, -1}, std::vector<Bool8>{1, 1}, &report);
  CHECK(report.hit == 1);
  CHECK(report.index == ~uint64_t{0});
  gather(env, src, std::vector<uint64_t>{~uint64_t{0}}, std::vector<Bool8>{1}, &report);
  CHECK(report.hit == 1);
  CHECK(report.index == ~uint64_t{0});
  // Index 0 of an empty source.
  gather(env, std::vector<double>{}, std::vector<uint32_t>{0}, std::vector<Bool8>{1}, &report);
  CHECK(report.hit == 1);
  CHECK(report.index == 0);
  // Large parallel launch with several offenders: any one of them.
  size_t n = 500000;
  std::vector<uint32_t> idx(n, 1);
  std::vector<Bool8> mask(n, 1);
  idx[1234] = 10;
  idx[400001] = 20;
  auto got = gather(env, src, idx, mask, &report);
  CHECK(report.hit == 1);
  CHECK((report.index == 10 || report.index == 20));
  CHECK(got[1234] == 0);
  CHECK(got[5] == 2);
}

namespace {

// Scatter (or scatter_add) values[i] into dst[idx[i]] where mask[i].
template <class T, class I>
void scatter(Env& env, IrOp op, T* dst, size_t dst_n, const std::vector<I>& idx,
             const std::vector<Bool8>& mask, const std::vector<T>& vals,
             RangeReport* report = nullptr) {
  KernelBuilder k;
  uint32_t pd = k.param(ParamKind::BufferInOut, type_of<T>());
  uint32_t pi = k.param(ParamKind::BufferIn, type_of<I>());
  uint32_t pm = k.param(ParamKind::BufferIn, ScalarType::Bool);
  uint32_t pv = k.param(ParamKind::BufferIn, type_of<T>());
  uint32_t pn = k.param(ParamKind::Scalar, ScalarType::UInt64);
  uint32_t pr = k.param(ParamKind::BufferInOut, ScalarType::UInt64);
  uint32_t li = k.load(pi), lm = k.load(pm), lv = k.load(pv);
  k.emit(op, type_of<T>(), pd, li, lm, lv, pn, report ? pr : 0, report ? kIrFlagReportRange : 0);
  uint64_t* rep = env.upload(std::vector<uint64_t>{0, 0});
  env.run(k.finish(), idx.size(),
          {buf(dst), buf(env.upload(idx)), buf(env.upload(mask)), buf(env.upload(vals)),
           scalar(dst_n), buf(rep)});
  if (report) {
    auto words = env.download(rep, 2);
    *report = {words[0], words[1]};
  }
}

}  // namespace

TEST_CASE("scatter masks, drops out-of-range writes and reports them", "[llvm]") {
  Tiers tiers = GENERATE(Tiers::Quick, Tiers::Optimized);
  INFO((tiers == Tiers::Quick ? "quick tier" : "optimized tier"));
  Env env(tiers);
  for_each_type([&]<class T>() {
    INFO(to_string(type_of<T>()));
    // One guard element past the bound checks that out-of-range writes are dropped.
    T* dst = env.alloc<T>(5);
    env.be->fill(dst, 5, sizeof(T), 0);
    std::vector<int64_t> idx = {0, 1, 2, 3, 4, -1, 2, 3};
    std::vector<Bool8> mask = {1, 0, 1, 1, 1, 1, 0, 1};
    std::vector<T> vals = {T(1), T(1), T(0), T(1), T(1), T(1), T(1), T(1)};
    RangeReport report;
    scatter(env, IrOp::Scatter, dst, 4, idx, mask, vals, &report);
    auto got = env.download(dst, 5);
    std::vector<T> want = {T(1), T(0), T(0), T(1), T(0)};  // lanes 3 and 7 both write 1 to [3]
    CHECK(got == want);
    CHECK(report.hit == 1);
    CHECK((report.index == 4 || report.index == ~uint64_t{0}));  // 4 or -1
  });
  RangeReport report;
  int32_t* dst = env.alloc<int32_t>(10);
  scatter(env, IrOp::Scatter, dst, 10, std::vector<uint32_t>{1, 2, 11}, std::vector<Bool8>{1, 1, 0},
          std::vector<int32_t>{5, 6, 7}, &report);
  CHECK(report.hit == 0);
  scatter(env, IrOp::Scatter, dst, 10, std::vector<uint32_t>{1, 2, 11}, std::vector<Bool8>{1, 1, 1},
          std::vector<int32_t>{5, 6, 7}, &report);
  CHECK(report.hit == 1);
  CHECK(report.index == 11);
}

TEST_CASE("scatter_add sums exactly under heavy collisions on every thread", "[llvm]") {
  Tiers tiers = GENERATE(Tiers::Quick, Tiers::Optimized);
  INFO((tiers == Tiers::Quick ? "quick tier" : "optimized tier"));
  Env env(tiers);
  const size_t n = 3000017, bins = 1000;
  std::vector<uint32_t> idx(n);
  std::vector<Bool8> mask(n);
  for (size_t i = 0; i < n; ++i) {
    idx[i] = uint32_t((i * 2654435761u) % (bins + 3));  // a few out of range
    mask[i] = i % 11 != 0;
  }
  for_each_numeric_type([&]<class T>() {
    INFO(to_string(type_of<T>()));
    std::vector<T> vals(n);
    std::vector<T> want(bins, T(0));
    for (size_t i = 0; i < n; ++i) {
      vals[i] = T(i % 7);  // small integers: float sums stay exact
      if (mask[i] && idx[i] < bins)
        want[idx[i]] = T(want[idx[i]] + vals[i]);
    }
    T* dst = env.alloc<T>(bins);
    env.be->fill(dst, bins, sizeof(T), 0);
    RangeReport report;
    scatter(env, IrOp::ScatterAdd, dst, bins, idx, mask, vals, &report);
    CHECK(env.download(dst, bins) == want);
    CHECK(report.hit == 1);
    CHECK(report.index >= bins);
    CHECK(report.index < bins + 3);
    // All lanes colliding on one address.
    T* one = env.alloc<T>(1);
    env.be->fill(one, 1, sizeof(T), 0);
    std::vector<uint32_t> zero_idx(100000, 0);
    std::vector<Bool8> all(100000, 1);
    std::vector<T> ones(100000, T(1));
    scatter(env, IrOp::ScatterAdd, one, 1, zero_idx, all, ones);
    CHECK(env.download(one, 1)[0] == T(100000));
  });
}

TEST_CASE("every loop style computes the same results", "[llvm]") {
  using namespace ff::llvm_backend;
  // out[i] = select(m, x*2 + gather(x, i ^ 1), -x); bins[i % 3] += 1 (scatter_add)
  KernelBuilder k;
  uint32_t px = k.param(ParamKind::BufferIn, ScalarType::Float32);
  uint32_t po = k.param(ParamKind::BufferOut, ScalarType::Float32);
  uint32_t pb = k.param(ParamKind::BufferInOut, ScalarType::Int32);
  uint32_t pn = k.param(ParamKind::Scalar, ScalarType::UInt64);
  uint32_t pn3 = k.param(ParamKind::Scalar, ScalarType::UInt64);
  uint32_t x = k.load(px);
  uint32_t i = k.emit(IrOp::Index, ScalarType::UInt32);
  uint32_t j = k.emit(IrOp::Xor, ScalarType::UInt32, i, k.literal<uint32_t>(1));
  uint32_t t = k.literal<Bool8>(1);
  uint32_t g = k.emit(IrOp::Gather, ScalarType::Float32, px, j, t, pn);
  uint32_t m = k.emit(IrOp::Lt, ScalarType::Bool, x, k.literal(500.0f));
  uint32_t v = k.emit(IrOp::Fma, ScalarType::Float32, x, k.literal(2.0f), g);
  k.store(po, k.emit(IrOp::Select, ScalarType::Float32, m, v,
                     k.emit(IrOp::Neg, ScalarType::Float32, x)));
  uint32_t bin = k.emit(IrOp::Mod, ScalarType::UInt32, i, k.literal<uint32_t>(3));
  k.emit(IrOp::ScatterAdd, ScalarType::Int32, pb, bin, t, k.literal<int32_t>(1), pn3);
  KernelIR ir = k.finish();

  for (LoopStyle style : {LoopStyle::VectorSplitTail, LoopStyle::VectorMasked, LoopStyle::Scalar}) {
    JitOptions opt;
    opt.loop_style = style;
    if (style == LoopStyle::Scalar)
      opt.passes = "function(loop-vectorize,instcombine,simplifycfg)";
    LlvmJit jit(opt);
    for (Tier tier : {Tier::Quick, Tier::Optimized})
      for (size_t n : {size_t(1), size_t(7), size_t(1000)}) {
        auto code = jit.compile(ir, tier);
        INFO("style " << int(style) << " tier " << int(tier) << " n=" << n);
        std::vector<float> xs(n), out(n);
        for (size_t e = 0; e < n; ++e)
          xs[e] = float(e);
        for (AccumulateMode mode : {AccumulateMode::Atomic, AccumulateMode::Exclusive}) {
          INFO("accumulate mode " << uint64_t(mode));
          int32_t bins[3] = {0, 0, 0};
          // The parameters, then the mode word that kernels with a ScatterAdd read.
          uint64_t args[6] = {bits_of(xs.data()), bits_of(out.data()), bits_of(&bins[0]), n, 3,
                              uint64_t(mode)};
          code->entry()(0, n, args);
          size_t bad = 0;
          for (size_t e = 0; e < n; ++e) {
            size_t o = e ^ 1;
            float g_want = o < n ? xs[o] : 0.0f;
            float want = xs[e] < 500.0f ? std::fma(xs[e], 2.0f, g_want) : -xs[e];
            bad += out[e] != want;
          }
          CHECK(bad == 0);
          CHECK(size_t(bins[0] + bins[1] + bins[2]) == n);
          CHECK(bins[0] == int32_t((n + 2) / 3));
        }
      }
  }
}

TEST_CASE("interleaved vector iterations: every element once, at every size and begin", "[llvm]") {
  using namespace ff::llvm_backend;
  // A chain long enough to interleave (a fused kernel's shape): y = sqrt(y * 0.75 + x) ...
  KernelBuilder k;
  uint32_t px = k.param(ParamKind::BufferIn, ScalarType::Float32);
  uint32_t po = k.param(ParamKind::BufferOut, ScalarType::Float32);
  uint32_t x = k.load(px);
  uint32_t i = k.emit(IrOp::Index, ScalarType::Float32);
  uint32_t y = k.emit(IrOp::Add, ScalarType::Float32, x, i);
  for (int r = 0; r < 12; ++r) {
    y = k.emit(IrOp::Fma, ScalarType::Float32, y, k.literal(0.75f), x);
    y = k.emit(IrOp::Sqrt, ScalarType::Float32, y);
  }
  k.store(po, y);
  KernelIR ir = k.finish();
  REQUIRE(interleave_factor(ir) > 1);

  JitOptions opt;
  LlvmJit jit(opt);
  auto code = jit.compile(ir, Tier::Optimized);  // the tier that interleaves
  auto quick = jit.compile(ir, Tier::Quick);     // which does not
  const size_t n_max = 700;
  std::vector<float> xs(n_max);
  for (size_t e = 0; e < n_max; ++e)
    xs[e] = float(e % 17) * 0.5f;
  for (size_t begin : {size_t(0), size_t(1), size_t(5)}) {
    for (size_t n = begin; n < n_max; n += (n < 200 ? 1 : 37)) {
      INFO("begin " << begin << ", end " << n);
      std::vector<float> out(n_max, -1.f), want(n_max, -1.f);
      uint64_t args[2] = {bits_of(xs.data()), bits_of(out.data())};
      code->entry()(begin, n, args);
      uint64_t want_args[2] = {bits_of(xs.data()), bits_of(want.data())};
      quick->entry()(begin, n, want_args);
      size_t bad = 0;
      for (size_t e = 0; e < n_max; ++e)
        bad += std::bit_cast<uint32_t>(out[e]) != std::bit_cast<uint32_t>(want[e]);
      REQUIRE(bad == 0);  // bitwise equal inside [begin, n), untouched outside
      if (n > begin)
        CHECK(out[n - 1] != -1.f);
    }
  }
  // Scatters keep their element order: no interleaving for them.
  KernelBuilder s;
  uint32_t pt = s.param(ParamKind::BufferInOut, ScalarType::Int32);
  uint32_t pn = s.param(ParamKind::Scalar, ScalarType::UInt64);
  s.emit(IrOp::Scatter, ScalarType::Int32, pt, s.emit(IrOp::Index, ScalarType::UInt32),
         s.literal<Bool8>(1), s.emit(IrOp::Index, ScalarType::Int32), pn);
  CHECK(interleave_factor(s.finish()) == 1);
}

TEST_CASE("hot kernels are re-compiled optimised and keep computing the same", "[llvm]") {
  llvm_backend::LlvmTuning tuning;
  tuning.tier_up_work = 100000;
  auto be = llvm_backend::create_llvm_backend({}, tuning);
  KernelBuilder k;
  uint32_t pi = k.param(ParamKind::BufferIn, ScalarType::Float64);
  uint32_t po = k.param(ParamKind::BufferOut, ScalarType::Float64);
  uint32_t x = k.load(pi);
  k.store(po,
          k.emit(IrOp::Fma, ScalarType::Float64, x, x, k.emit(IrOp::Sqrt, ScalarType::Float64, x)));
  KernelIR ir = k.finish();
  std::vector<double> in(5000), out(5000);
  for (size_t i = 0; i < in.size(); ++i)
    in[i] = double(i) * 0.25;
  KernelHandle h = be->compile(ir);
  CHECK(llvm_backend::kernel_tier(h) == llvm_backend::Tier::Quick);
  size_t bad = 0;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  int launches = 0;
  // Launch until the optimised code is installed (in the background), and a few more times.
  for (int after = 0; after < 5 && std::chrono::steady_clock::now() < deadline; ++launches) {
    be->launch(h, in.size(), {}, std::vector<KernelArg>{buf(in.data()), buf(out.data())});
    for (size_t i = 0; i < in.size(); ++i)
      bad += out[i] != std::fma(in[i], in[i], std::sqrt(in[i]));
    if (llvm_backend::kernel_tier(h) == llvm_backend::Tier::Optimized)
      ++after;
  }
  CHECK(bad == 0);
  CHECK(llvm_backend::kernel_tier(h) == llvm_backend::Tier::Optimized);
  CHECK(launches >= 20);  // 100000 / 5000 launches before the re-compile was even requested
  CHECK(be->compile(ir) == h);
  CHECK(be->stats().compiles == 1);  // the re-compile is not a cache miss
}

namespace {

/// Threads of this process now (Linux: the entries of /proc/self/task).
size_t thread_count() {
  size_t n = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator("/proc/self/task"))
    ++n;
  return n;
}

}  // namespace

TEST_CASE("a single-thread backend compiles optimised code and starts no threads", "[llvm]") {
  const size_t before = thread_count();
  auto be = create_llvm_backend(BackendOptions{1});
  KernelBuilder k;
  uint32_t po = k.param(ParamKind::BufferOut, ScalarType::Int32);
  k.store(po, k.emit(IrOp::Index, ScalarType::Int32));
  KernelHandle h = be->compile(k.finish());
  CHECK(llvm_backend::kernel_tier(h) == llvm_backend::Tier::Optimized);
  std::vector<int32_t> out(100000);  // large enough to be split over a pool, if there were one
  be->launch(h, out.size(), {}, std::vector<KernelArg>{buf(out.data())});
  CHECK(out[99999] == 99999);
  CHECK(thread_count() == before);  // no pool, no warm-up, no tier-up thread
  // A backend with two threads does start some: the count above can see them.
  auto two = create_llvm_backend(BackendOptions{2});
  CHECK(thread_count() > before);
}

TEST_CASE("kernels can start at any begin index", "[llvm]") {
  ff::llvm_backend::LlvmJit jit;
  KernelBuilder k;
  uint32_t po = k.param(ParamKind::BufferOut, ScalarType::Int64);
  k.store(po, k.emit(IrOp::Index, ScalarType::Int64));
  auto code = jit.compile(k.finish(), ff::llvm_backend::Tier::Quick);
  std::vector<int64_t> out(100, -1);
  uint64_t args[1] = {bits_of(out.data())};
  code->entry()(3, 40, args);
  code->entry()(40, 40, args);  // empty range: nothing
  for (size_t i = 0; i < out.size(); ++i)
    CHECK(out[i] == (i >= 3 && i < 40 ? int64_t(i) : -1));
}

namespace {

template <class T>
std::vector<T> sample(size_t n, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::vector<T> v(n);
  for (auto& x : v) {
    if constexpr (std::is_same_v<T, Bool8>)
      x = T(rng() % 4 != 0);
    else if constexpr (std::is_floating_point_v<T>)
      x = T(int(rng() % 9) - 4);  // small integers: float sums are exact in any order
    else
      x = T(rng());
  }
  return v;
}

template <class T>
T reduce_ref(ReduceOp op, const std::vector<T>& v) {
  using L = std::numeric_limits<T>;
  if constexpr (std::is_same_v<T, Bool8>) {
    bool all = true, any = false;
    for (T x : v) {
      all = all && x;
      any = any || x;
    }
    return (op == ReduceOp::And || op == ReduceOp::Min) ? all : any;
  } else {
    T r{};
    switch (op) {
      case ReduceOp::Add:
        r = T(0);
        break;
      case ReduceOp::Mul:
        r = T(1);
        break;
      case ReduceOp::Min:
        r = L::has_infinity ? L::infinity() : L::max();
        break;
      case ReduceOp::Max:
        r = L::has_infinity ? -L::infinity() : L::lowest();
        break;
      case ReduceOp::And:
        if constexpr (std::is_integral_v<T>)
          r = T(~T(0));
        break;
      case ReduceOp::Or:
        r = T(0);
        break;
    }
    for (T x : v) {
      switch (op) {
        case ReduceOp::Add:
          if constexpr (std::is_integral_v<T>)
            r = wrap_add(r, x);
          else
            r += x;
          break;
        case ReduceOp::Mul:
          if constexpr (std::is_integral_v<T>)
            r = wrap_mul(r, x);
          else
            r *= x;
          break;
        case ReduceOp::Min:
          r = std::min(r, x);
          break;
        case ReduceOp::Max:
          r = std::max(r, x);
          break;
        case ReduceOp::And:
          if constexpr (std::is_integral_v<T>)
            r = T(r & x);
          break;
        case ReduceOp::Or:
          if constexpr (std::is_integral_v<T>)
            r = T(r | x);
          break;
      }
    }
    return r;
  }
}

}  // namespace

TEST_CASE("reduce: every op and type, count 0 gives the identity, large arrays in parallel",
          "[llvm]") {
  Env env;
  for_each_type([&]<class T>() {
    for (ReduceOp op : {ReduceOp::Add, ReduceOp::Mul, ReduceOp::Min, ReduceOp::Max, ReduceOp::And,
                        ReduceOp::Or}) {
      bool defined = std::is_same_v<T, Bool8>
                         ? (op != ReduceOp::Add && op != ReduceOp::Mul)
                         : (std::is_integral_v<T> || (op != ReduceOp::And && op != ReduceOp::Or));
      T* out = env.alloc<T>(1);
      if (!defined) {
        CHECK_THROWS_EXACTLY(env.be->reduce(op, type_of<T>(), out, 1, out), BackendError);
        continue;
      }
      for (size_t n : {size_t(0), size_t(1), size_t(1000), size_t(3000001)}) {
        INFO(to_string(type_of<T>()) << " op " << int(op) << " n=" << n);
        auto v = sample<T>(n, unsigned(n + unsigned(op)));
        if (op == ReduceOp::Mul && std::is_floating_point_v<T>)
          for (size_t i = 0; i < n; ++i)  // a product that is exact in any order
            v[i] = i % 1001 == 0 ? T(-1) : i % 100003 == 0 ? T(2) : T(1);
        T* in = env.upload(v);
        env.be->reduce(op, type_of<T>(), in, n, out);
        T got = env.download(out, 1)[0];
        T want = reduce_ref(op, v);
        CHECK(got == want);  // exact: small integers and powers of two
      }
    }
  });
}

TEST_CASE("float min/max reductions ignore NaN", "[llvm]") {
  Env env;
  float nan = std::numeric_limits<float>::quiet_NaN();
  float* in = env.upload(std::vector<float>{nan, 3.0f, -2.0f, nan});
  float* out = env.alloc<float>(1);
  env.be->reduce(ReduceOp::Min, ScalarType::Float32, in, 4, out);
  CHECK(env.download(out, 1)[0] == -2.0f);
  env.be->reduce(ReduceOp::Max, ScalarType::Float32, in, 4, out);
  CHECK(env.download(out, 1)[0] == 3.0f);
}

TEST_CASE("prefix_sum: inclusive and exclusive, in place, large arrays in parallel", "[llvm]") {
  Env env;
  for_each_numeric_type([&]<class T>() {
    for (bool exclusive : {false, true}) {
      for (size_t n : {size_t(0), size_t(1), size_t(7), size_t(1000), size_t(2000003)}) {
        INFO(to_string(type_of<T>()) << (exclusive ? " exclusive" : " inclusive") << " n=" << n);
        auto v = sample<T>(n, 7);
        std::vector<T> want(n);
        T acc = T(0);
        for (size_t i = 0; i < n; ++i) {
          T next;
          if constexpr (std::is_integral_v<T>)
            next = wrap_add(acc, v[i]);
          else
            next = acc + v[i];
          want[i] = exclusive ? acc : next;
          acc = next;
        }
        T* in = env.upload(v);
        T* out = env.alloc<T>(n);
        env.be->prefix_sum(type_of<T>(), exclusive, in, n, out);
        CHECK(env.download(out, n) == want);                     // small integer samples: exact
        env.be->prefix_sum(type_of<T>(), exclusive, in, n, in);  // in place
        CHECK(env.download(in, n) == want);
      }
    }
  });
  Bool8* b = env.alloc<Bool8>(4);
  CHECK_THROWS_EXACTLY(env.be->prefix_sum(ScalarType::Bool, false, b, 4, b), BackendError);
}

TEST_CASE("compress returns the indices of true entries in order", "[llvm]") {
  Env env;
  for (size_t n : {size_t(0), size_t(1), size_t(17), size_t(1000), size_t(5000011)}) {
    INFO("n=" << n);
    auto mask = sample<Bool8>(n, 3);
    std::vector<uint32_t> want;
    for (size_t i = 0; i < n; ++i)
      if (mask[i])
        want.push_back(uint32_t(i));
    Bool8* m = env.upload(mask);
    uint32_t* out = env.alloc<uint32_t>(n);
    size_t count = env.be->compress(m, n, out);
    REQUIRE(count == want.size());
    CHECK(env.download(out, count) == want);
  }
}

TEST_CASE("fill patterns and copies", "[llvm]") {
  Env env;
  for (size_t n : {size_t(0), size_t(1), size_t(33), size_t(3000000)}) {
    auto* b1 = env.alloc<Bool8>(n);
    auto* b4 = env.alloc<uint32_t>(n);
    auto* b8 = env.alloc<uint64_t>(n);
    auto* b2 = static_cast<uint16_t*>(env.be->alloc(ScalarType::Bool, 2 * n, {}));
    env.owned.push_back(b2);
    env.be->fill(b1, n, 1, 0x1234);
    env.be->fill(b2, n, 2, 0xABCDEF);
    env.be->fill(b4, n, 4, 0x1122334455ull);
    env.be->fill(b8, n, 8, 0x8877665544332211ull);
    std::vector<uint16_t> v2(n);
    env.be->copy(v2.data(), b2, 2 * n, CopyKind::DeviceToHost);
    CHECK(std::all_of(v2.begin(), v2.end(), [](uint16_t x) { return x == 0xCDEF; }));
    auto v1 = env.download(b1, n);
    auto v4 = env.download(b4, n);
    auto v8 = env.download(b8, n);
    CHECK(std::all_of(v1.begin(), v1.end(), [](Bool8 x) { return x == 0x34; }));
    CHECK(std::all_of(v4.begin(), v4.end(), [](uint32_t x) { return x == 0x22334455u; }));
    CHECK(std::all_of(v8.begin(), v8.end(), [](uint64_t x) { return x == 0x8877665544332211ull; }));
    auto* c8 = env.alloc<uint64_t>(n);
    env.be->copy(c8, b8, 8 * n, CopyKind::DeviceToDevice);
    CHECK(env.download(c8, n) == v8);
  }
  auto* p = env.alloc<uint32_t>(4);
  CHECK_THROWS_EXACTLY(env.be->fill(p, 4, 3, 0), BackendError);
}

TEST_CASE("allocator caches blocks, count 0 is unique, peak is tracked", "[llvm]") {
  Env env;
  Backend& be = *env.be;
  BackendStats s0 = be.stats();
  void* a = be.alloc(ScalarType::Float32, 1000, {});
  void* b = be.alloc(ScalarType::Float32, 0, {});
  void* c = be.alloc(ScalarType::Float32, 0, {});
  CHECK(a != nullptr);
  CHECK(b != nullptr);
  CHECK(c != nullptr);
  CHECK(b != c);
  CHECK(reinterpret_cast<uintptr_t>(a) % 64 == 0);
  BackendStats s1 = be.stats();
  CHECK(s1.bytes_allocated - s0.bytes_allocated == 4000);
  CHECK(s1.allocs - s0.allocs == 3);
  be.release(a);
  void* a2 = be.alloc(ScalarType::Int32, 990, {});  // same size class: the cached block
  CHECK(a2 == a);
  BackendStats s2 = be.stats();
  CHECK(s2.bytes_allocated - s0.bytes_allocated == 3960);
  CHECK(s2.peak_bytes == s1.bytes_allocated);
  void* big = be.alloc(ScalarType::Float64, 1 << 20, {});
  be.release(big);
  BackendStats s3 = be.stats();
  CHECK(s3.peak_bytes == s2.bytes_allocated + (8u << 20));
  CHECK(s3.bytes_allocated == s2.bytes_allocated);
  be.reset_peak();
  CHECK(be.stats().peak_bytes == s3.bytes_allocated);
  for (void* p : {a2, b, c})
    be.release(p);
  CHECK(be.stats().bytes_allocated == s0.bytes_allocated);
  be.release(nullptr);  // a no-op
}

TEST_CASE("thread pool runs every block exactly once, from several callers", "[llvm]") {
  ff::llvm_backend::ThreadPool pool(4);
  CHECK(pool.n_threads() == 4);
  std::atomic<uint64_t> failures{0};
  auto caller = [&](unsigned seed) {
    for (unsigned job = 0; job < 3000; ++job) {
      size_t n = (job * 7 + seed) % 23;
      std::vector<std::atomic<int>> hits(n);
      pool.parallel_for(n, [&](size_t b) { hits[b].fetch_add(1, std::memory_order_relaxed); });
      for (auto& h : hits)
        failures += h.load() != 1;
      if (job % 500 == 0)  // let the workers fall asleep now and then
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  };
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < 3; ++t)
    threads.emplace_back(caller, t);
  caller(3);
  for (auto& t : threads)
    t.join();
  CHECK(failures == 0);
}

TEST_CASE("block dealer: contiguous parts in order, then the front of the others' parts",
          "[llvm]") {
  using ff::llvm_backend::BlockDealer;
  // Two threads, 8 blocks: parts [0, 4) and [4, 8). Each claims its own in order.
  BlockDealer d(8, 2);
  CHECK(d.claim(0) == 0);
  CHECK(d.claim(1) == 4);
  CHECK(d.claim(0) == 1);
  CHECK(d.claim(1) == 5);
  CHECK(d.claim(1) == 6);
  CHECK(d.claim(1) == 7);
  // Part 1 is done: its thread takes the first unclaimed block of part 0.
  CHECK(d.claim(1) == 2);
  CHECK(d.claim(0) == 3);
  CHECK(d.claim(0) == BlockDealer::kNone);
  CHECK(d.claim(1) == BlockDealer::kNone);

  // A thread that never comes: the others run its part, from its front.
  BlockDealer late(9, 3);  // [0, 3) [3, 6) [6, 9)
  std::vector<size_t> by0, by2;
  for (size_t b; (b = late.claim(0)) != BlockDealer::kNone;) {
    by0.push_back(b);
    if ((b = late.claim(2)) != BlockDealer::kNone)
      by2.push_back(b);
  }
  CHECK(by0 == std::vector<size_t>{0, 1, 2, 3, 5});
  CHECK(by2 == std::vector<size_t>{6, 7, 8, 4});

  // Sizes at the edges: fewer blocks than parts, one part, more threads than parts (modulo),
  // parts clamped to [1, kMaxParts]. Every block exactly once.
  for (auto [n, parts, threads] : {std::tuple{size_t{0}, size_t{2}, size_t{2}},
                                   {size_t{1}, size_t{1}, size_t{3}},
                                   {size_t{2}, size_t{5}, size_t{5}},
                                   {size_t{13}, size_t{4}, size_t{7}},
                                   {size_t{97}, size_t{0}, size_t{2}},
                                   {size_t{1000}, size_t{500}, size_t{70}}}) {
    BlockDealer deal(n, parts);
    CHECK(deal.n_parts() == std::clamp<size_t>(parts, 1, BlockDealer::kMaxParts));
    std::vector<int> hits(n);
    size_t claimed = 0;
    for (bool any = true; any;) {
      any = false;
      for (size_t t = 0; t < threads; ++t)
        if (size_t b = deal.claim(t); b != BlockDealer::kNone) {
          REQUIRE(b < n);
          hits[b]++;
          claimed++;
          any = true;
        }
    }
    CHECK(claimed == n);
    CHECK(std::count(hits.begin(), hits.end(), 1) == static_cast<ptrdiff_t>(n));
  }
}

TEST_CASE("allocator places large blocks on huge-page boundaries, usable and cached", "[llvm]") {
  ff::llvm_backend::HostAllocator alloc(size_t{64} << 20);
  for (size_t bytes : {(size_t{4} << 20) - 64, size_t{4} << 20, (size_t{9} << 20) + 3}) {
    auto* p = static_cast<unsigned char*>(alloc.alloc(bytes));
    REQUIRE(p != nullptr);
    // The 64-byte header in front of the block starts the huge page.
    CHECK(reinterpret_cast<uintptr_t>(p - 64) % (uintptr_t{2} << 20) == 0);
    CHECK(reinterpret_cast<uintptr_t>(p) % 64 == 0);
    std::memset(p, 0xA5, bytes);  // every byte of the request is ours (ASan checks)
    CHECK(p[bytes - 1] == 0xA5);
    alloc.release(p);
    CHECK(alloc.alloc(bytes) == p);  // from the cache
    alloc.release(p);
  }
  // Below 4 MiB: 64-byte aligned as before.
  void* small = alloc.alloc(size_t{3} << 20);
  CHECK(reinterpret_cast<uintptr_t>(small) % 64 == 0);
  alloc.release(small);
  alloc.trim();
  CHECK(alloc.bytes_allocated() == 0);
}

TEST_CASE("allocator caches released blocks up to its limit", "[llvm]") {
  ff::llvm_backend::HostAllocator alloc(1 << 20);
  void* small = alloc.alloc(1000);
  void* big = alloc.alloc(2 << 20);
  CHECK(alloc.bytes_allocated() == 1000 + (2 << 20));
  alloc.release(big);  // over the limit: freed
  alloc.release(small);
  CHECK(alloc.cached_bytes() == 1024);
  CHECK(alloc.alloc(1000) == small);
  CHECK(alloc.cached_bytes() == 0);
  CHECK(alloc.peak_bytes() == 1000 + (2 << 20));
  alloc.release(small);
  alloc.trim();
  CHECK(alloc.cached_bytes() == 0);
  CHECK(alloc.bytes_allocated() == 0);
}

namespace {

#if defined(FFT_ASAN)
constexpr bool kAsan = true;

bool poisoned(const void* p) {
  return __asan_address_is_poisoned(p) != 0;
}
#else
constexpr bool kAsan = false;

bool poisoned(const void*) {
  return false;
}
#endif

}  // namespace

TEST_CASE("allocator: under ASan exactly the requested bytes of a block are addressable",
          "[llvm][asan]") {
  // Regression: the whole size class was unpoisoned and the header never poisoned, so an
  // overrun into the slack of a block went unreported.
  if (!kAsan) {
    std::puts("skipped: not built with AddressSanitizer (FF_SANITIZE=address)");
    return;
  }
  ff::llvm_backend::HostAllocator alloc;
  auto* p = static_cast<unsigned char*>(alloc.alloc(100));  // size class: 128 bytes
  CHECK_FALSE(poisoned(p));
  CHECK_FALSE(poisoned(p + 99));
  CHECK(poisoned(p + 100));  // the slack
  CHECK(poisoned(p + 127));
  CHECK(poisoned(p - 1));  // the header
  CHECK(poisoned(p - 64));
  alloc.release(p);
  CHECK(poisoned(p));                                      // cached: poisoned whole
  auto* q = static_cast<unsigned char*>(alloc.alloc(70));  // the cached block, a new request
  REQUIRE(q == p);
  CHECK_FALSE(poisoned(q + 69));
  CHECK(poisoned(q + 70));
  auto* none = static_cast<unsigned char*>(alloc.alloc(0));
  CHECK(poisoned(none));
  alloc.release(q);
  alloc.release(none);
}

TEST_CASE("allocator: under ASan a write past the requested bytes is reported", "[llvm][asan]") {
  if (!kAsan) {
    std::puts("skipped: not built with AddressSanitizer (FF_SANITIZE=address)");
    return;
  }
  fft::ChildResult child = fft::in_child([] {
    ff::llvm_backend::HostAllocator alloc;
    auto* p = static_cast<volatile unsigned char*>(alloc.alloc(100));
    p[99] = 1;   // the last requested byte: fine
    p[100] = 1;  // one past it, inside the size class: ASan must stop here
  });
  INFO(child.err);
  CHECK_FALSE(child.exited_cleanly());
  CHECK_THAT(child.err, Catch::Matchers::Contains("use-after-poison"));
}

TEST_CASE("allocator size classes waste at most a quarter", "[llvm]") {
  using ff::llvm_backend::HostAllocator;
  unsigned last = 0;
  for (size_t bytes = 0; bytes < (size_t{1} << 26); bytes = bytes * 9 / 8 + 1) {
    auto sc = HostAllocator::size_class(bytes);
    CHECK(sc.bytes >= bytes);
    CHECK(sc.bytes % 64 == 0);
    CHECK(sc.index >= last);
    if (bytes > 1024)
      CHECK(sc.bytes <= bytes + bytes / 4 + 1);
    last = sc.index;
  }
  CHECK(HostAllocator::size_class(1ull << 60).index < 256);
}

TEST_CASE("kernel cache: hits, compiles, flush keeps handles usable", "[llvm]") {
  Env env;
  Backend& be = *env.be;
  auto make = [](float c) {
    KernelBuilder k;
    uint32_t po = k.param(ParamKind::BufferOut, ScalarType::Float32);
    k.store(po, k.emit(IrOp::Add, ScalarType::Float32, k.emit(IrOp::Index, ScalarType::Float32),
                       k.literal(c)));
    return k.finish();
  };
  KernelIR k1 = make(1.0f), k2 = make(2.0f);
  BackendStats s0 = be.stats();
  KernelHandle h1 = be.compile(k1);
  KernelHandle h1b = be.compile(k1);
  KernelHandle h2 = be.compile(k2);
  BackendStats s1 = be.stats();
  CHECK(h1 == h1b);
  CHECK(h1 != h2);
  CHECK(h1->hash() == k1.hash);
  CHECK(s1.compiles - s0.compiles == 2);
  CHECK(s1.cache_hits - s0.cache_hits == 1);

  be.flush_kernels();
  BackendStats s2 = be.stats();
  CHECK(s2.generation == s1.generation + 1);
  float* out = env.alloc<float>(100);
  be.launch(h1, 100, {}, std::vector<KernelArg>{buf(out)});  // still usable after the flush
  CHECK(env.download(out, 100)[99] == 100.0f);
  KernelHandle h1c = be.compile(k1);  // recompiled: the cache was dropped
  CHECK(be.stats().compiles == s2.compiles + 1);
  CHECK(h1c != h1);
  h1.reset();
  h1b.reset();  // frees the old code; the new one still runs
  be.launch(h1c, 50, {}, std::vector<KernelArg>{buf(out)});
  CHECK(be.stats().launches - s0.launches == 2);
}

TEST_CASE("handles outlive their backend", "[llvm]") {
  KernelHandle h;
  std::vector<int32_t> out(40, 0);
  {
    auto be = create_llvm_backend({});
    KernelBuilder k;
    uint32_t po = k.param(ParamKind::BufferOut, ScalarType::Int32);
    k.store(po, k.emit(IrOp::Index, ScalarType::Int32));
    h = be->compile(k.finish());
  }
  auto be2 = create_llvm_backend({});
  be2->launch(h, out.size(), {}, std::vector<KernelArg>{buf(out.data())});
  CHECK(out[39] == 39);
}

TEST_CASE(
    "compile rejects invalid IR with FormatError, unfinalized IR and bad launches with "
    "BackendError",
    "[llvm][negative]") {
  Env env;
  KernelBuilder bad;
  uint32_t po = bad.param(ParamKind::BufferOut, ScalarType::Float32);
  bad.store(po, 5);  // operand names a later instruction
  CHECK_THROWS_EXACTLY(env.be->compile(bad.finish()), FormatError);

  KernelBuilder kind;
  uint32_t pi = kind.param(ParamKind::BufferIn, ScalarType::Float32);
  kind.store(pi, kind.literal(1.0f));  // store into a read-only buffer
  CHECK_THROWS_EXACTLY(env.be->compile(kind.finish()), FormatError);

  KernelBuilder fmod;
  uint32_t pf = fmod.param(ParamKind::BufferOut, ScalarType::Float32);
  fmod.store(pf, fmod.emit(IrOp::Mod, ScalarType::Float32, fmod.literal(1.0f), fmod.literal(2.0f)));
  CHECK_THROWS_EXACTLY(env.be->compile(fmod.finish()), FormatError);

  KernelBuilder ok;
  uint32_t p = ok.param(ParamKind::BufferOut, ScalarType::Int32);
  ok.store(p, ok.emit(IrOp::Index, ScalarType::Int32));
  KernelIR unhashed = ok.ir;  // finalize() not called
  CHECK_THROWS_EXACTLY(env.be->compile(unhashed), BackendError);
  KernelIR stale = ok.finish();
  stale.params[0].type = ScalarType::UInt32;  // edited after finalize(), still valid
  stale.instrs[0].type = ScalarType::UInt32;
  stale.instrs[1].type = ScalarType::UInt32;
  CHECK_THROWS_EXACTLY(env.be->compile(stale), BackendError);

  KernelHandle h = env.be->compile(ok.finish());
  CHECK_THROWS_EXACTLY(env.be->launch(h, 10, {}, {}), BackendError);
  CHECK_THROWS_EXACTLY(env.be->launch(nullptr, 10, {}, {}), BackendError);
  CHECK(env.be->stats().compiles == 1);
  CHECK(env.be->name() == "llvm");
}

TEST_CASE("kernels with many parameters", "[llvm]") {
  Tiers tiers = GENERATE(Tiers::Quick, Tiers::Optimized);
  INFO((tiers == Tiers::Quick ? "quick tier" : "optimized tier"));
  Env env(tiers);
  const uint32_t n_in = 80;
  KernelBuilder k;
  uint32_t po = k.param(ParamKind::BufferOut, ScalarType::Int64);
  std::vector<uint32_t> ps;
  for (uint32_t p = 0; p < n_in; ++p)
    ps.push_back(k.param(ParamKind::Scalar, ScalarType::Int64));
  uint32_t acc = k.emit(IrOp::Index, ScalarType::Int64);
  for (uint32_t p : ps)
    acc = k.emit(IrOp::Add, ScalarType::Int64, acc, k.emit(IrOp::Scalar, ScalarType::Int64, p));
  k.store(po, acc);
  std::vector<KernelArg> args;
  auto* out = env.alloc<int64_t>(100000);
  args.push_back(buf(out));
  for (uint32_t p = 0; p < n_in; ++p)
    args.push_back(scalar(p));
  env.run(k.finish(), 100000, args);
  auto v = env.download(out, 100000);
  int64_t base = int64_t(n_in) * (n_in - 1) / 2;
  CHECK(v[0] == base);
  CHECK(v[99999] == base + 99999);
}

TEST_CASE("one thread, and several threads compiling and launching at once", "[llvm]") {
  Env single(1);
  KernelBuilder k;
  uint32_t po = k.param(ParamKind::BufferOut, ScalarType::Int32);
  k.store(po, k.emit(IrOp::Index, ScalarType::Int32));
  KernelIR ir = k.finish();
  auto* out = single.alloc<int32_t>(200000);
  single.run(ir, 200000, {buf(out)});
  CHECK(single.download(out, 200000)[199999] == 199999);

  Env env;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int th = 0; th < 4; ++th) {
    threads.emplace_back([&] {
      for (int rep = 0; rep < 20; ++rep) {
        KernelBuilder kb;
        uint32_t p = kb.param(ParamKind::BufferOut, ScalarType::Int32);
        kb.store(p, kb.emit(IrOp::Add, ScalarType::Int32, kb.emit(IrOp::Index, ScalarType::Int32),
                            kb.literal<int32_t>(rep % 5)));
        KernelIR kir = kb.finish();
        size_t n = rep % 2 ? 100000 : 100;
        std::vector<int32_t> host(n);
        env.be->launch(env.be->compile(kir), n, {}, std::vector<KernelArg>{buf(host.data())});
        for (size_t i = 0; i < n; ++i)
          if (host[i] != int32_t(i) + rep % 5)
            ++failures;
      }
    });
  }
  for (auto& th : threads)
    th.join();
  CHECK(failures == 0);
  BackendStats s = env.be->stats();
  CHECK(s.compiles == 5);
  CHECK(s.compiles + s.cache_hits == 80);
}

TEST_CASE(
    "math opcodes after the first 41: libmvec in vector code, libm per lane in scalar code and "
    "without libmvec, all within 4 ulp of libm",
    "[llvm][math]") {
  using namespace ff::llvm_backend;

  struct Fn {
    IrOp op;
    const char* name;
    double (*ref)(double, double);
    bool binary = false;
  };

  const Fn fns[] = {
      {IrOp::Tan, "tan", [](double x, double) { return std::tan(x); }},
      {IrOp::Asin, "asin", [](double x, double) { return std::asin(x); }},
      {IrOp::Acos, "acos", [](double x, double) { return std::acos(x); }},
      {IrOp::Atan, "atan", [](double x, double) { return std::atan(x); }},
      {IrOp::Sinh, "sinh", [](double x, double) { return std::sinh(x); }},
      {IrOp::Cosh, "cosh", [](double x, double) { return std::cosh(x); }},
      {IrOp::Tanh, "tanh", [](double x, double) { return std::tanh(x); }},
      {IrOp::Asinh, "asinh", [](double x, double) { return std::asinh(x); }},
      {IrOp::Acosh, "acosh", [](double x, double) { return std::acosh(x); }},
      {IrOp::Atanh, "atanh", [](double x, double) { return std::atanh(x); }},
      {IrOp::Exp2, "exp2", [](double x, double) { return std::exp2(x); }},
      {IrOp::Log2, "log2", [](double x, double) { return std::log2(x); }},
      {IrOp::Erf, "erf", [](double x, double) { return std::erf(x); }},
      {IrOp::Cbrt, "cbrt", [](double x, double) { return std::cbrt(x); }},
      {IrOp::Atan2, "atan2", [](double y, double x) { return std::atan2(y, x); }, true},
      {IrOp::Pow, "pow", [](double x, double y) { return std::pow(x, y); }, true},
  };
  auto check = [&]<class T>(T) {
    const ScalarType t = type_of<T>();
    INFO(to_string(t));
    const size_t n = 301;  // vectors and a partial tail
    std::vector<T> a(n), b(n);
    for (size_t e = 0; e < n; ++e) {
      a[e] = T(-1) + T(2) * T(e) / T(n);  // inside every domain's (-1, 1) ...
      b[e] = T(0.25) + T(e % 7);
    }
    a[0] = T(0.5);  // ... acosh's too, for the lanes where it is defined
    for (const Fn& f : fns) {
      INFO(f.name);
      KernelBuilder k;
      uint32_t pa = k.param(ParamKind::BufferIn, t);
      uint32_t pb = k.param(ParamKind::BufferIn, t);
      uint32_t po = k.param(ParamKind::BufferOut, t);
      uint32_t x = k.load(pa);
      uint32_t r = f.binary ? k.emit(f.op, t, x, k.load(pb)) : k.emit(f.op, t, x);
      k.store(po, r);
      KernelIR ir = k.finish();
      struct Variant {
        const char* what;
        LoopStyle style;
        bool vector_math;
      };
      for (Variant v : {Variant{"vector, libmvec", LoopStyle::VectorSplitTail, true},
                        Variant{"masked vector, libmvec", LoopStyle::VectorMasked, true},
                        Variant{"vector without libmvec", LoopStyle::VectorSplitTail, false},
                        Variant{"scalar", LoopStyle::Scalar, true}}) {
        INFO(v.what);
        JitOptions opt;
        opt.loop_style = v.style;
        opt.vector_math = v.vector_math;
        LlvmJit jit(opt);
        if (v.vector_math && v.style != LoopStyle::Scalar && jit.target().vector_math_isa) {
          // No scalar libm call per lane: the vector variant of the function.
          std::string text = jit.emit_llvm_ir(ir);
          CHECK_THAT(text,
                     Catch::Matchers::Contains(std::string(f.binary ? "vv_" : "v_") + f.name));
        }
        auto code = jit.compile(ir, Tier::Quick);
        std::vector<T> out(n);
        uint64_t args[3] = {bits_of(a.data()), bits_of(b.data()), bits_of(out.data())};
        code->entry()(0, n, args);
        size_t bad = 0;
        for (size_t e = 0; e < n; ++e) {
          T want = static_cast<T>(f.ref(a[e], b[e]));  // double libm, rounded
          bool ok = std::isnan(want)
                        ? std::isnan(out[e])
                        : (std::isinf(want) ? out[e] == want : ulp_distance(out[e], want) <= 4);
          if (!ok && bad++ < 3)
            UNSCOPED_INFO(f.name << "(" << a[e] << ", " << b[e] << ") = " << out[e] << ", libm "
                                 << want);
        }
        CHECK(bad == 0);
      }
    }
  };
  check(0.f);
  check(0.0);
}
