// Control-flow regions (loops, branches, calls) in the LLVM backend, on hand-built kernels run
// directly through LlvmJit for every loop style and tier, against the same computation per lane
// on the host.
#include <catch2/catch.hpp>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "backend/llvm/llvm_jit.h"
#include "support/host_values.h"

namespace {

using ff_test::bits_of;

using namespace ff;
using namespace ff::llvm_backend;

constexpr ScalarType U32 = ScalarType::UInt32;
constexpr ScalarType B = ScalarType::Bool;

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

struct Config {
  LoopStyle style;
  Tier tier;
};

std::vector<Config> configs() {
  std::vector<Config> c;
  for (LoopStyle s : {LoopStyle::VectorSplitTail, LoopStyle::VectorMasked, LoopStyle::Scalar})
    for (Tier t : {Tier::Quick, Tier::Optimized})
      c.push_back({s, t});
  return c;
}

LlvmJit& jit_for(LoopStyle style) {
  auto make = [](LoopStyle s) {
    JitOptions opt;
    opt.loop_style = s;
    return opt;
  };
  static LlvmJit split(make(LoopStyle::VectorSplitTail));
  static LlvmJit masked(make(LoopStyle::VectorMasked));
  static LlvmJit scalar(make(LoopStyle::Scalar));
  return style == LoopStyle::VectorSplitTail ? split
         : style == LoopStyle::VectorMasked  ? masked
                                             : scalar;
}

// Runs `ir` over [0, n) in two pieces split at 5 (a begin that is no multiple of the width).
void run(const Config& cfg, const KernelIR& ir, size_t n, const std::vector<uint64_t>& args) {
  auto code = jit_for(cfg.style).compile(ir, cfg.tier);
  size_t split = std::min<size_t>(5, n);
  if (split > 0)
    code->entry()(0, split, args.data());
  if (n > split)
    code->entry()(split, n, args.data());
}

// Collatz steps of x = i + 1, at most `limit` of them:
//   while (x != 1) { x = x even ? x / 2 : 3x + 1; steps += 1; }
// Trip counts differ per lane (0 for lane 0). Every iteration also adds 1 to hist[x % 7]
// (a scatter_add in the body: only active lanes add). Params: out steps, out x, hist, bound.
KernelIR collatz_kernel(uint64_t limit) {
  Builder k;
  uint32_t psteps = k.param(ParamKind::BufferOut, U32);
  uint32_t px = k.param(ParamKind::BufferOut, U32);
  uint32_t phist = k.param(ParamKind::BufferInOut, U32);
  uint32_t pbound = k.param(ParamKind::Scalar, ScalarType::UInt64);
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

// out = i % 3 == 0 ? (i * 2, scatter 1 into hit[i]) : i % 3 == 1 ? i + 100 : 7, through an if
// whose else part holds a second if. Params: out, hit (inout), bound.
KernelIR branch_kernel() {
  Builder k;
  uint32_t pout = k.param(ParamKind::BufferOut, U32);
  uint32_t phit = k.param(ParamKind::BufferInOut, U32);
  uint32_t pbound = k.param(ParamKind::Scalar, ScalarType::UInt64);
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

// out = target[idx[i]](i) of `n_targets` targets, target t giving i * (t + 1) + t; lanes whose
// index is out of range get 0. Params: idx (in), out.
KernelIR call_kernel(uint32_t n_targets) {
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

uint32_t collatz_steps(uint32_t x, uint64_t limit, std::vector<uint32_t>& hist, uint32_t* final_x) {
  uint32_t steps = 0;
  while (x != 1 && steps < limit) {
    x = x % 2 == 0 ? x / 2 : 3 * x + 1;
    hist[x % 7] += 1;
    ++steps;
  }
  *final_x = x;
  return steps;
}

}  // namespace

TEST_CASE("a loop region runs each lane until its condition fails, scatters only for active lanes",
          "[llvm][regions]") {
  for (uint64_t limit : {kNoIterationLimit, uint64_t{0}, uint64_t{1}, uint64_t{17}}) {
    KernelIR ir = collatz_kernel(limit);
    for (const Config& cfg : configs())
      for (size_t n : {0, 1, 2, 3, 17, 31, 64, 97}) {
        INFO("limit " << limit << " n " << n << " style " << int(cfg.style) << " tier "
                      << int(cfg.tier));
        std::vector<uint32_t> steps(n, 99), xs(n, 99), hist(7, 0), want_hist(7, 0);
        run(cfg, ir, n,
            {bits_of(steps.data()), bits_of(xs.data()), bits_of(hist.data()), uint64_t{7}});
        size_t bad = 0;
        for (size_t i = 0; i < n; ++i) {
          uint32_t fx = 0;
          uint32_t want = collatz_steps(static_cast<uint32_t>(i + 1), limit, want_hist, &fx);
          bad += steps[i] != want || xs[i] != fx;
        }
        CHECK(bad == 0);
        CHECK(hist == want_hist);
      }
  }
}

TEST_CASE("nested if regions give each lane its branch's result and side effects",
          "[llvm][regions]") {
  KernelIR ir = branch_kernel();
  for (const Config& cfg : configs())
    for (size_t n : {0, 1, 2, 3, 16, 47, 64}) {
      INFO("n " << n << " style " << int(cfg.style) << " tier " << int(cfg.tier));
      std::vector<uint32_t> out(n, 99), hit(n, 0);
      run(cfg, ir, n, {bits_of(out.data()), bits_of(hit.data()), uint64_t{n}});
      size_t bad = 0;
      for (size_t i = 0; i < n; ++i) {
        uint32_t want = i % 3 == 0 ? uint32_t(i * 2) : i % 3 == 1 ? uint32_t(i + 100) : 7u;
        bad += out[i] != want || hit[i] != (i % 3 == 0 ? 1u : 0u);
      }
      CHECK(bad == 0);
    }
}

TEST_CASE("a call region runs the target each lane's index names, zeros out of range",
          "[llvm][regions]") {
  for (uint32_t targets = 1; targets <= 8; ++targets) {
    KernelIR ir = call_kernel(targets);
    for (const Config& cfg : configs())
      for (size_t n : {0, 1, 2, 13, 64, 101}) {
        INFO("targets " << targets << " n " << n << " style " << int(cfg.style));
        std::vector<uint32_t> idx(n), out(n, 99);
        for (size_t i = 0; i < n; ++i)
          idx[i] = static_cast<uint32_t>((i * 7 + i / 5) % (targets + 2));  // some out of range
        run(cfg, ir, n, {bits_of(idx.data()), bits_of(out.data())});
        size_t bad = 0;
        for (size_t i = 0; i < n; ++i) {
          uint32_t t = idx[i];
          uint32_t want = t < targets ? static_cast<uint32_t>(i * (t + 1) + t) : 0u;
          bad += out[i] != want;
        }
        CHECK(bad == 0);
      }
  }
}
