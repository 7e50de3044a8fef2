// How the LLVM backend should emit its loops, measured: explicit vector code with a scalar
// tail (the default), explicit vector code with a masked tail, or scalar code left to LLVM's
// loop vectoriser; each at both codegen tiers. W2's 10-op chain on one thread at three sizes
// (per-launch cost, L1-resident compute, memory), against the -O3 -march=native hand loop on
// one thread. Compile times are reported as counters. Also exp/log/sin/cos through glibc's
// libmvec against LLVM's scalarised libm calls. The result of the first call and of the last
// timed call of every run is checked (exit status 1 on a wrong one); --ff_expect_wrong makes
// the checks of timed calls expect wrong values, so every benchmark must fail (bench-smoke's
// self-test). Runs itself with OMP_WAIT_POLICY=passive unless that variable is set.
//
//   ff_bench_codegen [--benchmark_filter=...] [--ff_expect_wrong]
#include <benchmark/benchmark.h>

#include <bit>
#include <chrono>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "backend/ir/kernel_ir.h"
#include "backend/llvm/llvm_jit.h"
#include "baselines.h"
#include "chain.h"
#include "harness.h"

namespace {

using namespace ff;
using namespace ff::llvm_backend;

// out[i] = chain of kW2Ops ops over x[i] (bench/chain.h), as kernel IR.
KernelIR chain_kernel() {
  KernelIR ir;
  const ScalarType F = ScalarType::Float32;
  ir.params = {{ParamKind::BufferIn, F}, {ParamKind::BufferOut, F}};
  auto emit = [&](IrOp op, ScalarType t, std::initializer_list<uint32_t> operands = {}) {
    return ir.emit(op, t, operands);
  };
  auto lit = [&](float v) { return ir.emit(IrOp::Literal, F, {}, std::bit_cast<uint32_t>(v)); };
  uint32_t x = emit(IrOp::Load, F, {0});
  uint32_t y = x;
  for (int k = 0; k < ff_bench::kW2Ops; ++k) {
    switch (k % ff_bench::kChainLength) {
      case 0:
        y = emit(IrOp::Fma, F, {y, lit(0.5f), x});
        break;
      case 1:
        y = emit(IrOp::Add, F, {y, lit(1.f)});
        break;
      case 2:
        y = emit(IrOp::Mul, F, {y, lit(0.75f)});
        break;
      case 3:
        y = emit(IrOp::Sqrt, F, {y});
        break;
      default: {
        uint32_t m = emit(IrOp::Gt, ScalarType::Bool, {y, lit(1.f)});
        y = emit(IrOp::Select, F,
                 {m, emit(IrOp::Sub, F, {y, lit(0.5f)}), emit(IrOp::Add, F, {y, lit(0.5f)})});
      }
    }
  }
  emit(IrOp::Store, F, {1, y});
  ir.finalize();
  return ir;
}

struct Variant {
  const char* name;
  LoopStyle style;
  Tier tier;
};

const Variant kVariants[] = {
    {"vector_split_tail/quick", LoopStyle::VectorSplitTail, Tier::Quick},
    {"vector_split_tail/optimized", LoopStyle::VectorSplitTail, Tier::Optimized},
    {"vector_masked/quick", LoopStyle::VectorMasked, Tier::Quick},
    {"vector_masked/optimized", LoopStyle::VectorMasked, Tier::Optimized},
    {"scalar_loop_vectorize/quick", LoopStyle::Scalar, Tier::Quick},
    {"scalar_loop_vectorize/optimized", LoopStyle::Scalar, Tier::Optimized},
};

const size_t kSizes[] = {16, 4096, size_t(1) << 20};

// Fails the benchmark unless out matches `want`; `what` says which call it was.
bool check(benchmark::State& state, const std::vector<float>& out, const std::vector<float>& want,
           const char* what) {
  if (std::string err = ff_bench::compare(out, want); !err.empty()) {
    state.SkipWithError((std::string("wrong result of ") + what + ": " + err).c_str());
    return false;
  }
  return true;
}

void bm_kernel(benchmark::State& state, const Variant& v) {
  const size_t n = static_cast<size_t>(state.range(0));
  JitOptions options;
  options.loop_style = v.style;
  if (v.style == LoopStyle::Scalar)
    options.passes = "function(loop-vectorize,instcombine,simplifycfg)";
  LlvmJit jit(options);
  KernelIR ir = chain_kernel();
  jit.compile(ir, v.tier);  // LLVM's one-time start-up, outside the compile-time counter
  auto start = std::chrono::steady_clock::now();
  std::unique_ptr<JitCode> code = jit.compile(ir, v.tier);
  double compile_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();

  const std::vector<float>& x = ff_bench::cached_input(n);
  std::vector<float> out(n);
  uint64_t args[2] = {reinterpret_cast<uint64_t>(x.data()), reinterpret_cast<uint64_t>(out.data())};
  KernelFn fn = code->entry();
  fn(0, n, args);
  if (!check(state, out, ff_bench::cached_reference(n, ff_bench::kW2Ops), "the first call"))
    return;
  std::fill(out.begin(), out.end(), 0.f);
  for (auto _ : state) {
    fn(0, n, args);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  if (!check(state, out, ff_bench::timed_reference(n, ff_bench::kW2Ops), "the last timed call"))
    return;
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * n));
  state.counters["compile_ms"] = compile_ms;
}

// The OpenMP hand loop on one thread, checked to have vectorised (baselines.h).
void bm_hand_loop(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  ff_bench::bm_w2_hand_loop(state, n, 1);
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * n));
}

// out[i] = op(x[i]) for a float type.
KernelIR math_kernel(IrOp op, ScalarType t) {
  KernelIR ir;
  ir.params = {{ParamKind::BufferIn, t}, {ParamKind::BufferOut, t}};
  ir.emit(IrOp::Store, t, {1, ir.emit(op, t, {ir.emit(IrOp::Load, t, {0})})});
  ir.finalize();
  return ir;
}

struct MathCase {
  const char* name;
  IrOp op;
  double (*ref)(double);
};

const MathCase kMath[] = {{"exp", IrOp::Exp, [](double v) { return std::exp(v); }},
                          {"log", IrOp::Log, [](double v) { return std::log(v); }},
                          {"sin", IrOp::Sin, [](double v) { return std::sin(v); }},
                          {"cos", IrOp::Cos, [](double v) { return std::cos(v); }}};

template <class T>
void bm_math(benchmark::State& state, const MathCase& m, bool vector_math) {
  const size_t n = 65536;
  JitOptions options;
  options.vector_math = vector_math;
  LlvmJit jit(options);
  std::unique_ptr<JitCode> code = jit.compile(math_kernel(m.op, scalar_type_of<T>), Tier::Quick);
  std::vector<T> x(n), out(n);
  const std::vector<float>& in = ff_bench::cached_input(n);
  for (size_t i = 0; i < n; ++i)
    x[i] = T(0.01) + T(in[i]) * T(20);  // (0.01, 20): log, exp and several periods
  uint64_t args[2] = {reinterpret_cast<uint64_t>(x.data()), reinterpret_cast<uint64_t>(out.data())};
  // Within 1e-5 of libm in double precision (relative, or absolute below 1).
  auto wrong = [&](bool timed) -> std::string {
    for (size_t i = 0; i < n; i += 97) {
      double want = m.ref(double(x[i]));
      if (timed)
        want = ff_bench::timed_expectation(want);
      if (!(std::abs(double(out[i]) - want) <= 1e-5 * std::max(1.0, std::abs(want))))
        return std::string(m.name) + "(" + std::to_string(double(x[i])) + ") is " +
               std::to_string(double(out[i])) + ", expected " + std::to_string(want);
    }
    return {};
  };
  code->entry()(0, n, args);
  if (std::string err = wrong(false); !err.empty()) {
    state.SkipWithError(("wrong result of the first call: " + err).c_str());
    return;
  }
  std::fill(out.begin(), out.end(), T(0));
  for (auto _ : state) {
    code->entry()(0, n, args);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  if (std::string err = wrong(true); !err.empty()) {
    state.SkipWithError(("wrong result of the last timed call: " + err).c_str());
    return;
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * n));
}

[[maybe_unused]] const bool kRegistered = [] {
  for (const MathCase& m : kMath)
    for (bool vm : {true, false}) {
      std::string suffix = std::string(m.name) + (vm ? "/libmvec" : "/scalarised");
      benchmark::RegisterBenchmark(("math/f32/" + suffix).c_str(), [&m, vm](benchmark::State& st) {
        ff_bench::run_guarded(st, [&] { bm_math<float>(st, m, vm); });
      });
      benchmark::RegisterBenchmark(("math/f64/" + suffix).c_str(), [&m, vm](benchmark::State& st) {
        ff_bench::run_guarded(st, [&] { bm_math<double>(st, m, vm); });
      });
    }
  for (const Variant& v : kVariants) {
    auto* b = benchmark::RegisterBenchmark(
        (std::string("chain10/") + v.name).c_str(),
        [&v](benchmark::State& st) { ff_bench::run_guarded(st, [&] { bm_kernel(st, v); }); });
    for (size_t n : kSizes)
      b->Arg(static_cast<int64_t>(n));
  }
  auto* h = benchmark::RegisterBenchmark("chain10/hand_loop_O3_march_native_1thread",
                                         ff_bench::guarded<bm_hand_loop>);
  for (size_t n : kSizes)
    h->Arg(static_cast<int64_t>(n));
  return true;
}();

}  // namespace

int main(int argc, char** argv) {
  ff_bench::run_with_passive_openmp(argv);
  ff_bench::CommandLine cl(argc, argv);
  ff_bench::g_expect_wrong = cl.take_switch("ff_expect_wrong");
  benchmark::AddCustomContext("openmp", ff_bench::openmp_description());
  if (ff_bench::g_expect_wrong)
    benchmark::AddCustomContext("self_test", ff_bench::kSelfTestContext);
  if (int status = cl.initialize_benchmark(); status != 0)
    return status;
  ff_bench::Reporter reporter(cl.color());
  const size_t n_run = benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  return ff_bench::exit_status("ff_bench_codegen", n_run, reporter, {});
}
