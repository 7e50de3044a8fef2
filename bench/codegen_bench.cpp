// How the LLVM backend should emit its loops, measured: explicit vector code with a scalar
// tail (the default), explicit vector code with a masked tail, or scalar code left to LLVM's
// loop vectoriser; each at both codegen tiers. W2's 10-op chain on one thread at three sizes
// (per-launch cost, L1-resident compute, memory), against the -O3 -march=native hand loop on
// one thread. Compile times are reported as counters. Also exp/log/sin/cos through glibc's
// libmvec against LLVM's scalarised libm calls.
//
//   ff_bench_codegen [--benchmark_filter=...]
#include <benchmark/benchmark.h>

#include <bit>
#include <chrono>
#include <cmath>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "backend/ir/kernel_ir.h"
#include "backend/llvm/llvm_jit.h"
#include "chain.h"
#include "hand_loop.h"

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

void check(const std::vector<float>& x, const std::vector<float>& out, size_t n) {
  for (size_t i = 0; i < n; i += 1 + n / 64) {
    float want = ff_bench::reference(x[i], ff_bench::kW2Ops);
    if (std::abs(out[i] - want) > 1e-5f * std::abs(want) + 1e-6f)
      throw std::runtime_error("codegen bench: wrong result at " + std::to_string(i));
  }
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

  std::vector<float> x = ff_bench::make_input(n), out(n);
  uint64_t args[2] = {reinterpret_cast<uint64_t>(x.data()), reinterpret_cast<uint64_t>(out.data())};
  KernelFn fn = code->entry();
  fn(0, n, args);
  check(x, out, n);
  for (auto _ : state) {
    fn(0, n, args);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * n));
  state.counters["compile_ms"] = compile_ms;
}

void bm_hand_loop(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  std::vector<float> x = ff_bench::make_input(n), out(n);
  ff_bench::hand_loop_w2(x.data(), out.data(), n, 1);
  check(x, out, n);
  for (auto _ : state) {
    ff_bench::hand_loop_w2(x.data(), out.data(), n, 1);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
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
  std::vector<float> in = ff_bench::make_input(n);
  for (size_t i = 0; i < n; ++i)
    x[i] = T(0.01) + T(in[i]) * T(20);  // (0.01, 20): log, exp and several periods
  uint64_t args[2] = {reinterpret_cast<uint64_t>(x.data()), reinterpret_cast<uint64_t>(out.data())};
  code->entry()(0, n, args);
  for (size_t i = 0; i < n; i += 97) {
    double want = m.ref(double(x[i]));
    if (std::abs(double(out[i]) - want) > 1e-5 * std::max(1.0, std::abs(want)))
      throw std::runtime_error(std::string("codegen bench: wrong ") + m.name);
  }
  for (auto _ : state) {
    code->entry()(0, n, args);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * n));
}

[[maybe_unused]] const bool kRegistered = [] {
  for (const MathCase& m : kMath)
    for (bool vm : {true, false}) {
      std::string suffix = std::string(m.name) + (vm ? "/libmvec" : "/scalarised");
      benchmark::RegisterBenchmark(("math/f32/" + suffix).c_str(), bm_math<float>, m, vm);
      benchmark::RegisterBenchmark(("math/f64/" + suffix).c_str(), bm_math<double>, m, vm);
    }
  for (const Variant& v : kVariants) {
    auto* b =
        benchmark::RegisterBenchmark((std::string("chain10/") + v.name).c_str(), bm_kernel, v);
    for (size_t n : kSizes)
      b->Arg(static_cast<int64_t>(n));
  }
  auto* h = benchmark::RegisterBenchmark("chain10/hand_loop_O3_march_native", bm_hand_loop);
  for (size_t n : kSizes)
    h->Arg(static_cast<int64_t>(n));
  return true;
}();

}  // namespace

BENCHMARK_MAIN();
