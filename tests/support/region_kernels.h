// Hand-built kernels with control-flow regions (loops, branches, calls; kernel_ir.h "Regions")
// and host models of what they compute, shared by the backends' region tests
// (tests/llvm_regions_test.cpp, tests/cuda_regions_test.cpp) and the CUDA IR corpus
// (tests/cuda/ir_corpus.cpp). Each kernel's comment lists its parameters in order.
#pragma once

#include <bit>
#include <cstdint>
#include <utility>
#include <vector>

#include "backend/ir/kernel_ir.h"

namespace ff_test::regions {

using ff::IrOp;
using ff::KernelIR;
using ff::kNoIterationLimit;
using ff::kNoOperand;
using ff::ParamKind;
using ff::ScalarType;

inline constexpr ScalarType U32 = ScalarType::UInt32;
inline constexpr ScalarType U64 = ScalarType::UInt64;
inline constexpr ScalarType I32 = ScalarType::Int32;
inline constexpr ScalarType F32 = ScalarType::Float32;
inline constexpr ScalarType F64 = ScalarType::Float64;
inline constexpr ScalarType B = ScalarType::Bool;

struct Builder {
  KernelIR ir;

  uint32_t param(ParamKind kind, ScalarType t) {
    ir.params.push_back({kind, t});
    return static_cast<uint32_t>(ir.params.size() - 1);
  }

  uint32_t emit(IrOp op, ScalarType t, uint32_t a = kNoOperand, uint32_t b = kNoOperand,
                uint32_t c = kNoOperand, uint32_t d = kNoOperand, uint32_t e = kNoOperand) {
    return ir.emit(op, t, {a, b, c, d, e}, 0, 0);
  }

  uint32_t literal(ScalarType t, uint64_t bits) { return ir.emit(IrOp::Literal, t, {}, bits, 0); }

  uint32_t marker(IrOp op, uint32_t a = kNoOperand, uint64_t imm = 0) {
    return ir.emit(op, B, {a}, imm, 0);
  }

  KernelIR finish() {
    ir.finalize();
    ir.validate();
    return ir;
  }
};

// --- Collatz: a loop with per-lane trip counts, a scatter_add in the body and a limit ------

/// Collatz steps of x = i + 1, at most `limit` of them:
///   while (x != 1) { x = x even ? x / 2 : 3x + 1; steps += 1; }
/// Trip counts differ per lane (0 for lane 0). Every iteration also adds 1 to hist[x % 7]
/// (a scatter_add in the body: only active lanes add).
/// Params: steps (out u32), x (out u32), hist (inout u32[7]), bound (scalar u64, 7).
inline KernelIR collatz_kernel(uint64_t limit) {
  Builder k;
  uint32_t psteps = k.param(ParamKind::BufferOut, U32);
  uint32_t px = k.param(ParamKind::BufferOut, U32);
  uint32_t phist = k.param(ParamKind::BufferInOut, U32);
  uint32_t pbound = k.param(ParamKind::Scalar, U64);
  uint32_t one = k.literal(U32, 1);
  uint32_t x0 = k.emit(IrOp::Add, U32, k.emit(IrOp::Index, U32), one);
  uint32_t zero = k.literal(U32, 0);
  k.marker(IrOp::LoopBegin, kNoOperand, limit);
  uint32_t x = k.emit(IrOp::LoopVar, U32, x0);
  uint32_t steps = k.emit(IrOp::LoopVar, U32, zero);
  k.marker(IrOp::LoopCond, k.emit(IrOp::Ne, B, x, one));
  uint32_t two = k.literal(U32, 2);
  uint32_t even = k.emit(IrOp::Eq, B, k.emit(IrOp::Mod, U32, x, two), zero);
  uint32_t half = k.emit(IrOp::Div, U32, x, two);
  uint32_t triple = k.emit(IrOp::Add, U32, k.emit(IrOp::Mul, U32, x, k.literal(U32, 3)), one);
  uint32_t nx = k.emit(IrOp::Select, U32, even, half, triple);
  uint32_t bin = k.emit(IrOp::Mod, U32, nx, k.literal(U32, 7));
  k.emit(IrOp::ScatterAdd, U32, phist, bin, k.literal(B, 1), one, pbound);
  uint32_t nsteps = k.emit(IrOp::Add, U32, steps, one);
  k.emit(IrOp::Yield, U32, nx);
  k.emit(IrOp::Yield, U32, nsteps);
  k.marker(IrOp::EndRegion);
  uint32_t rx = k.emit(IrOp::Result, U32);
  uint32_t rsteps = k.emit(IrOp::Result, U32);
  k.emit(IrOp::Store, U32, psteps, rsteps);
  k.emit(IrOp::Store, U32, px, rx);
  return k.finish();
}

/// The steps of lane x's loop in collatz_kernel; adds its iterations to `hist`.
inline uint32_t collatz_steps(uint32_t x, uint64_t limit, std::vector<uint32_t>& hist,
                              uint32_t* final_x) {
  uint32_t steps = 0;
  while (x != 1 && steps < limit) {
    x = x % 2 == 0 ? x / 2 : 3 * x + 1;
    hist[x % 7] += 1;
    ++steps;
  }
  *final_x = x;
  return steps;
}

// --- Nested branches ------------------------------------------------------------------------

/// out = i % 3 == 0 ? (i * 2, scatter 1 into hit[i]) : i % 3 == 1 ? i + 100 : 7, through an
/// if whose else part holds a second if.
/// Params: out (out u32), hit (inout u32[n]), bound (scalar u64, n).
inline KernelIR branch_kernel() {
  Builder k;
  uint32_t pout = k.param(ParamKind::BufferOut, U32);
  uint32_t phit = k.param(ParamKind::BufferInOut, U32);
  uint32_t pbound = k.param(ParamKind::Scalar, U64);
  uint32_t i = k.emit(IrOp::Index, U32);
  uint32_t r = k.emit(IrOp::Mod, U32, i, k.literal(U32, 3));
  k.marker(IrOp::IfBegin, k.emit(IrOp::Eq, B, r, k.literal(U32, 0)));
  k.emit(IrOp::Scatter, U32, phit, i, k.literal(B, 1), k.literal(U32, 1), pbound);
  k.emit(IrOp::Yield, U32, k.emit(IrOp::Mul, U32, i, k.literal(U32, 2)));
  k.marker(IrOp::IfElse);
  k.marker(IrOp::IfBegin, k.emit(IrOp::Eq, B, r, k.literal(U32, 1)));
  k.emit(IrOp::Yield, U32, k.emit(IrOp::Add, U32, i, k.literal(U32, 100)));
  k.marker(IrOp::IfElse);
  k.emit(IrOp::Yield, U32, k.literal(U32, 7));
  k.marker(IrOp::EndRegion);
  k.emit(IrOp::Yield, U32, k.emit(IrOp::Result, U32));
  k.marker(IrOp::EndRegion);
  k.emit(IrOp::Store, U32, pout, k.emit(IrOp::Result, U32));
  return k.finish();
}

inline uint32_t branch_model(size_t i) {
  return i % 3 == 0 ? uint32_t(i * 2) : i % 3 == 1 ? uint32_t(i + 100) : 7u;
}

// --- Calls ----------------------------------------------------------------------------------

/// out = target[idx[i]](i) of `n_targets` targets, target t giving i * (t + 1) + t; lanes whose
/// index is out of range get 0.
/// Params: idx (in u32), out (out u32).
inline KernelIR call_kernel(uint32_t n_targets) {
  Builder k;
  uint32_t pidx = k.param(ParamKind::BufferIn, U32);
  uint32_t pout = k.param(ParamKind::BufferOut, U32);
  uint32_t i = k.emit(IrOp::Index, U32);
  uint32_t idx = k.emit(IrOp::Load, U32, pidx);
  k.marker(IrOp::CallBegin, idx, n_targets);
  for (uint32_t t = 0; t < n_targets; ++t) {
    if (t)
      k.marker(IrOp::CallCase);
    uint32_t v =
        k.emit(IrOp::Add, U32, k.emit(IrOp::Mul, U32, i, k.literal(U32, t + 1)), k.literal(U32, t));
    k.emit(IrOp::Yield, U32, v);
  }
  k.marker(IrOp::EndRegion);
  k.emit(IrOp::Store, U32, pout, k.emit(IrOp::Result, U32));
  return k.finish();
}

/// call_kernel's indices: some of every target, some out of range (up to 2^32 - 1).
inline uint32_t call_index(size_t i, uint32_t n_targets) {
  if (i % 11 == 10)
    return 0xFFFFFFFFu - static_cast<uint32_t>(i % 3);
  return static_cast<uint32_t>((i * 7 + i / 5) % (n_targets + 2));
}

inline uint32_t call_model(size_t i, uint32_t index, uint32_t n_targets) {
  return index < n_targets ? static_cast<uint32_t>(i * (index + 1) + index) : 0u;
}

// --- A loop in an if in a loop --------------------------------------------------------------

/// Per lane i, n = i % 5:
///   acc = i; for (j = 0; j < n; ++j)
///     if (j odd) { s = acc; for (m = 0; m < j && m < 2 trips; ++m) { s += m * i + 1;
///                                                             hist[(i + m) % 8] += 1; }
///                  acc = s; }
///     else acc = acc * 3;
/// The inner loop has an iteration limit of 2 (j = 3 runs 2 of its 3 trips).
/// Params: j (out u32), acc (out u64), hist (inout u32[8]), bound (scalar u64, 8).
inline KernelIR nested_loop_kernel() {
  Builder k;
  uint32_t pj = k.param(ParamKind::BufferOut, U32);
  uint32_t pacc = k.param(ParamKind::BufferOut, U64);
  uint32_t phist = k.param(ParamKind::BufferInOut, U32);
  uint32_t pbound = k.param(ParamKind::Scalar, U64);
  uint32_t i = k.emit(IrOp::Index, U32);
  uint32_t one = k.literal(U32, 1), zero = k.literal(U32, 0);
  uint32_t n = k.emit(IrOp::Mod, U32, i, k.literal(U32, 5));
  uint32_t acc0 = k.emit(IrOp::Cast, U64, i);
  k.marker(IrOp::LoopBegin, kNoOperand, kNoIterationLimit);
  uint32_t j = k.emit(IrOp::LoopVar, U32, zero);
  uint32_t acc = k.emit(IrOp::LoopVar, U64, acc0);
  k.marker(IrOp::LoopCond, k.emit(IrOp::Lt, B, j, n));
  k.marker(IrOp::IfBegin, k.emit(IrOp::Eq, B, k.emit(IrOp::And, U32, j, one), one));
  k.marker(IrOp::LoopBegin, kNoOperand, 2);
  uint32_t m = k.emit(IrOp::LoopVar, U32, zero);
  uint32_t s = k.emit(IrOp::LoopVar, U64, acc);
  k.marker(IrOp::LoopCond, k.emit(IrOp::Lt, B, m, j));
  uint32_t mi = k.emit(IrOp::Cast, U64, k.emit(IrOp::Mul, U32, m, i));
  uint32_t s2 = k.emit(IrOp::Add, U64, k.emit(IrOp::Add, U64, s, mi), k.literal(U64, 1));
  uint32_t bin = k.emit(IrOp::Mod, U32, k.emit(IrOp::Add, U32, i, m), k.literal(U32, 8));
  k.emit(IrOp::ScatterAdd, U32, phist, bin, k.literal(B, 1), one, pbound);
  k.emit(IrOp::Yield, U32, k.emit(IrOp::Add, U32, m, one));
  k.emit(IrOp::Yield, U64, s2);
  k.marker(IrOp::EndRegion);
  k.emit(IrOp::Result, U32);
  uint32_t rs = k.emit(IrOp::Result, U64);
  k.emit(IrOp::Yield, U64, rs);
  k.marker(IrOp::IfElse);
  k.emit(IrOp::Yield, U64, k.emit(IrOp::Mul, U64, acc, k.literal(U64, 3)));
  k.marker(IrOp::EndRegion);
  uint32_t nacc = k.emit(IrOp::Result, U64);
  k.emit(IrOp::Yield, U32, k.emit(IrOp::Add, U32, j, one));
  k.emit(IrOp::Yield, U64, nacc);
  k.marker(IrOp::EndRegion);
  uint32_t rj = k.emit(IrOp::Result, U32);
  uint32_t racc = k.emit(IrOp::Result, U64);
  k.emit(IrOp::Store, U32, pj, rj);
  k.emit(IrOp::Store, U64, pacc, racc);
  return k.finish();
}

/// nested_loop_kernel for lane i: its acc (j is i % 5); adds to `hist`.
inline uint64_t nested_loop_model(size_t lane, std::vector<uint32_t>& hist) {
  auto i = static_cast<uint32_t>(lane);
  uint64_t acc = i;
  for (uint32_t j = 0; j < i % 5; ++j) {
    if (j & 1) {
      uint64_t s = acc;
      for (uint32_t m = 0; m < j && m < 2; ++m) {
        s += uint64_t{m * i} + 1;
        hist[(i + m) % 8] += 1;
      }
      acc = s;
    } else {
      acc *= 3;
    }
  }
  return acc;
}

// --- A loop without carried values ----------------------------------------------------------

/// A loop with no carried values, run at most `limit` times by the lanes where i % 3 != 0:
/// its condition adds 1 to conds[i % 4] each time it is evaluated, its body 1 to
/// bodies[i % 4]. A lane whose condition holds evaluates it once more than its body runs, the
/// limit ending the loop (as every backend does).
/// Params: conds (inout u32[4]), bodies (inout u32[4]), bound (scalar u64, 4).
inline KernelIR counted_loop_kernel(uint64_t limit) {
  Builder k;
  uint32_t pconds = k.param(ParamKind::BufferInOut, U32);
  uint32_t pbodies = k.param(ParamKind::BufferInOut, U32);
  uint32_t pbound = k.param(ParamKind::Scalar, U64);
  uint32_t i = k.emit(IrOp::Index, U32);
  uint32_t one = k.literal(U32, 1), yes = k.literal(B, 1);
  uint32_t bin = k.emit(IrOp::Mod, U32, i, k.literal(U32, 4));
  uint32_t go =
      k.emit(IrOp::Ne, B, k.emit(IrOp::Mod, U32, i, k.literal(U32, 3)), k.literal(U32, 0));
  k.marker(IrOp::LoopBegin, kNoOperand, limit);
  k.emit(IrOp::ScatterAdd, U32, pconds, bin, yes, one, pbound);
  k.marker(IrOp::LoopCond, go);
  k.emit(IrOp::ScatterAdd, U32, pbodies, bin, yes, one, pbound);
  k.marker(IrOp::EndRegion);
  return k.finish();
}

inline void counted_loop_model(size_t n, uint64_t limit, std::vector<uint32_t>& conds,
                               std::vector<uint32_t>& bodies) {
  for (size_t i = 0; i < n; ++i) {
    uint32_t runs = i % 3 != 0 ? static_cast<uint32_t>(limit) : 0;
    bodies[i % 4] += runs;
    conds[i % 4] += i % 3 != 0 ? runs + 1 : 1;
  }
}

// --- Carried values of every register class -------------------------------------------------

/// Per lane i, t = i % 7 trips of a loop carrying k (u32), f (f32), d (f64), u (u64), b (bool)
/// and a swapped pair p, q (i32):
///   f = i; d = 1; u = i; b = false; p = i; q = -i;
///   for (k = 0; k < t; ++k) { f = f * 0.5 + 1; d = d * 1.5 + f; u = u * A + C; b ^= u & 1;
///                             (p, q) = (q, p); }
/// (the new f feeds d, the new u feeds b: a Yield may read values computed in the body).
/// Params: k (out u32), f (out f32), d (out f64), u (out u64), b (out bool), p (out i32),
/// q (out i32).
inline constexpr uint64_t kLcgA = 6364136223846793005ull, kLcgC = 1442695040888963407ull;

inline KernelIR mixed_carried_kernel() {
  Builder k;
  uint32_t out[7];
  const ScalarType types[7] = {U32, F32, F64, U64, B, I32, I32};
  for (int p = 0; p < 7; ++p)
    out[p] = k.param(ParamKind::BufferOut, types[p]);
  uint32_t i = k.emit(IrOp::Index, U32);
  uint32_t t = k.emit(IrOp::Mod, U32, i, k.literal(U32, 7));
  uint32_t ii = k.emit(IrOp::Cast, I32, i);
  uint32_t init[7] = {k.literal(U32, 0),
                      k.emit(IrOp::Cast, F32, i),
                      k.literal(F64, std::bit_cast<uint64_t>(1.0)),
                      k.emit(IrOp::Cast, U64, i),
                      k.literal(B, 0),
                      ii,
                      k.emit(IrOp::Neg, I32, ii)};
  k.marker(IrOp::LoopBegin, kNoOperand, kNoIterationLimit);
  uint32_t kk = k.emit(IrOp::LoopVar, U32, init[0]);
  uint32_t f = k.emit(IrOp::LoopVar, F32, init[1]);
  uint32_t d = k.emit(IrOp::LoopVar, F64, init[2]);
  uint32_t u = k.emit(IrOp::LoopVar, U64, init[3]);
  uint32_t b = k.emit(IrOp::LoopVar, B, init[4]);
  uint32_t p = k.emit(IrOp::LoopVar, I32, init[5]);
  uint32_t q = k.emit(IrOp::LoopVar, I32, init[6]);
  k.marker(IrOp::LoopCond, k.emit(IrOp::Lt, B, kk, t));
  uint32_t nf = k.emit(IrOp::Add, F32,
                       k.emit(IrOp::Mul, F32, f, k.literal(F32, std::bit_cast<uint32_t>(0.5f))),
                       k.literal(F32, std::bit_cast<uint32_t>(1.0f)));
  uint32_t nd = k.emit(IrOp::Add, F64,
                       k.emit(IrOp::Mul, F64, d, k.literal(F64, std::bit_cast<uint64_t>(1.5))),
                       k.emit(IrOp::Cast, F64, nf));
  uint32_t nu = k.emit(IrOp::Add, U64, k.emit(IrOp::Mul, U64, u, k.literal(U64, kLcgA)),
                       k.literal(U64, kLcgC));
  uint32_t low = k.emit(IrOp::Cast, B, k.emit(IrOp::And, U64, nu, k.literal(U64, 1)));
  uint32_t nb = k.emit(IrOp::Xor, B, b, low);
  uint32_t nk = k.emit(IrOp::Add, U32, kk, k.literal(U32, 1));
  k.emit(IrOp::Yield, U32, nk);
  k.emit(IrOp::Yield, F32, nf);
  k.emit(IrOp::Yield, F64, nd);
  k.emit(IrOp::Yield, U64, nu);
  k.emit(IrOp::Yield, B, nb);
  k.emit(IrOp::Yield, I32, q);
  k.emit(IrOp::Yield, I32, p);
  k.marker(IrOp::EndRegion);
  uint32_t results[7];
  for (int r = 0; r < 7; ++r)
    results[r] = k.emit(IrOp::Result, types[r]);
  for (int r = 0; r < 7; ++r)
    k.emit(IrOp::Store, types[r], out[r], results[r]);
  return k.finish();
}

struct MixedCarried {
  uint32_t k;
  float f;
  double d;
  uint64_t u;
  bool b;
  int32_t p, q;
};

inline MixedCarried mixed_carried_model(size_t lane) {
  auto i = static_cast<uint32_t>(lane);
  MixedCarried v{
      0, static_cast<float>(i), 1.0, i, false, static_cast<int32_t>(i), -static_cast<int32_t>(i)};
  for (; v.k < i % 7; ++v.k) {
    v.f = v.f * 0.5f + 1.0f;
    v.d = v.d * 1.5 + static_cast<double>(v.f);
    v.u = v.u * kLcgA + kLcgC;
    v.b = v.b != ((v.u & 1) != 0);
    std::swap(v.p, v.q);
  }
  return v;
}

// --- scatter_inc inside a branch ------------------------------------------------------------

/// Lanes where i % 3 != 0 take counters[i % 5]'s old value (scatter_inc) and add it to
/// sums[i % 5]; the others increment others[0] and take 0xFFFF. Then every lane increments
/// hist[its value] (0xFFFF is out of range, so else lanes increment nothing). Every result is
/// the same in any order of the lanes: a counter's lanes get a permutation of 0 .. count - 1.
/// Params: counters (inout u32[5]), sums (inout u32[5]), others (inout u32[1]),
/// hist (inout u32[hist_n]), five (scalar u64, 5), one (scalar u64, 1), hist_n (scalar u64).
inline KernelIR scatter_inc_branch_kernel() {
  Builder k;
  uint32_t pcount = k.param(ParamKind::BufferInOut, U32);
  uint32_t psums = k.param(ParamKind::BufferInOut, U32);
  uint32_t pothers = k.param(ParamKind::BufferInOut, U32);
  uint32_t phist = k.param(ParamKind::BufferInOut, U32);
  uint32_t pfive = k.param(ParamKind::Scalar, U64);
  uint32_t pone = k.param(ParamKind::Scalar, U64);
  uint32_t phn = k.param(ParamKind::Scalar, U64);
  uint32_t i = k.emit(IrOp::Index, U32);
  uint32_t yes = k.literal(B, 1);
  uint32_t slot = k.emit(IrOp::Mod, U32, i, k.literal(U32, 5));
  uint32_t go =
      k.emit(IrOp::Ne, B, k.emit(IrOp::Mod, U32, i, k.literal(U32, 3)), k.literal(U32, 0));
  k.marker(IrOp::IfBegin, go);
  uint32_t old = k.emit(IrOp::ScatterInc, U32, pcount, slot, yes, kNoOperand, pfive);
  k.emit(IrOp::ScatterAdd, U32, psums, slot, yes, old, pfive);
  k.emit(IrOp::Yield, U32, old);
  k.marker(IrOp::IfElse);
  k.emit(IrOp::ScatterInc, U32, pothers, k.literal(U32, 0), yes, kNoOperand, pone);
  k.emit(IrOp::Yield, U32, k.literal(U32, 0xFFFF));
  k.marker(IrOp::EndRegion);
  uint32_t v = k.emit(IrOp::Result, U32);
  k.emit(IrOp::ScatterInc, U32, phist, v, yes, kNoOperand, phn);
  return k.finish();
}

/// scatter_inc_branch_kernel's final buffers from zeros, over n lanes.
inline void scatter_inc_branch_model(size_t n, std::vector<uint32_t>& counters,
                                     std::vector<uint32_t>& sums, std::vector<uint32_t>& others,
                                     std::vector<uint32_t>& hist) {
  for (size_t i = 0; i < n; ++i) {
    if (i % 3 != 0) {
      uint32_t old = counters[i % 5]++;
      sums[i % 5] += old;
      if (old < hist.size())
        ++hist[old];
    } else {
      ++others[0];
    }
  }
}

}  // namespace ff_test::regions
