// When a launch should be split over the llvm backend's thread pool (issue 11, item 3), measured:
//
//   op_cost/<type>/<op>: 16 terms op(fma(x, c_k, 0.5)) summed per element, 4,096 elements on
//     the calling thread; the summary turns them into work units per op (ns per element per op
//     over that of an add), the weights of backend/llvm/launch_plan.cpp;
//   crossover/<kernel>/<mode>/<size>: a copy, ~33 cheap ops, 4 and 40 transcendental ops per
//     element at 256..65,536 elements, launched on the calling thread ("caller"), split in
//     one block per thread ("pool"), in kBlocksPerThread blocks per thread ("pool4"), and as
//     the default tuning decides ("default"). The summary prints the times side by side, the
//     ratio caller / best split, the estimated work and where the pool starts to win.
//
// Every benchmark checks the result of its first call and of its last timed call against the
// host (exit status 1 on a wrong one); --ff_expect_wrong makes the checks of timed calls expect
// wrong values, so every benchmark must fail (bench-smoke's self-test). Kernels are compiled
// optimised (no tiering). Own flags: --ff_threads=N (pool threads, default every core).
// Defaults unless given: --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
// --benchmark_min_time=0.05.
//
//   ff_bench_parallel [--benchmark_filter=crossover] [--ff_threads=2]
#include <benchmark/benchmark.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "backend/ir/kernel_ir.h"
#include "backend/llvm/launch_plan.h"
#include "backend/llvm/llvm_tuning.h"
#include "chain.h"
#include "harness.h"

namespace {

using namespace ff;
using namespace ff::llvm_backend;

unsigned g_threads = 0;

// What a term applies to v = fma(x, c_k, 0.5) (in [0.5, 2)), or a kernel's whole body.
enum class Op { None, Add, Mul, Div, Sqrt, Exp, Log, Sin, Cos, Gather, Trans, IntDiv, Copy };

struct KernelSpec {
  ScalarType type;
  Op op;
  int terms;
};

float coef(int k) {
  return 0.5f + 0.0625f * float(k % 16);
}

double apply(Op op, int k, double v, const std::vector<double>& x, size_t i) {
  switch (op) {
    case Op::None:
      return v;
    case Op::Add:
      return v + 1.0;
    case Op::Mul:
      return v * 0.75;
    case Op::Div:
      return v / 1.0001;  // the kernel divides by a Scalar: never turned into a multiply
    case Op::Sqrt:
      return std::sqrt(v);
    case Op::Gather: {
      size_t j = i ^ size_t(k + 1);
      return j < x.size() ? x[j] : 0.0;
    }
    case Op::Exp:
      return std::exp(v);
    case Op::Log:
      return std::log(v);
    case Op::Sin:
      return std::sin(v);
    case Op::Cos:
      return std::cos(v);
    case Op::Trans: {
      const Op cycle[4] = {Op::Exp, Op::Log, Op::Sin, Op::Cos};
      return apply(cycle[k % 4], k, v, x, i);
    }
    default:
      return 0;
  }
}

// The kernel of `s`: params x (in), out, a Scalar divisor and a Scalar bound (gather).
KernelIR make_kernel(const KernelSpec& s) {
  KernelIR ir;
  const ScalarType T = s.type, I = ScalarType::Int32;
  const bool f64 = T == ScalarType::Float64;
  ir.params = {{ParamKind::BufferIn, T},
               {ParamKind::BufferOut, T},
               {ParamKind::Scalar, T},
               {ParamKind::Scalar, ScalarType::UInt64}};
  auto lit = [&](double v) {
    uint64_t bits = f64 ? std::bit_cast<uint64_t>(v) : std::bit_cast<uint32_t>(float(v));
    return ir.emit(IrOp::Literal, T, {}, bits);
  };
  if (s.op == Op::Copy) {
    ir.emit(IrOp::Store, T, {1, ir.emit(IrOp::Load, T, {0})});
    ir.finalize();
    return ir;
  }
  if (s.op == Op::IntDiv) {  // sum_k (i ^ k) / d in Int32
    ir.params[0].type = ir.params[1].type = ir.params[2].type = I;
    uint32_t i = ir.emit(IrOp::Index, I);
    uint32_t d = ir.emit(IrOp::Scalar, I, {2});
    uint32_t acc = ir.emit(IrOp::Literal, I, {}, 0);
    for (int k = 0; k < s.terms; ++k) {
      uint32_t v = ir.emit(IrOp::Xor, I, {i, ir.emit(IrOp::Literal, I, {}, uint64_t(k + 1))});
      acc = ir.emit(IrOp::Add, I, {acc, ir.emit(IrOp::Div, I, {v, d})});
    }
    ir.emit(IrOp::Store, I, {1, acc});
    ir.finalize();
    return ir;
  }
  uint32_t x = ir.emit(IrOp::Load, T, {0});
  uint32_t half = lit(0.5);
  uint32_t acc = lit(0.0);
  const IrOp trans[4] = {IrOp::Exp, IrOp::Log, IrOp::Sin, IrOp::Cos};
  for (int k = 0; k < s.terms; ++k) {
    uint32_t v = ir.emit(IrOp::Fma, T, {x, lit(coef(k)), half});
    switch (s.op) {
      case Op::Add:
        v = ir.emit(IrOp::Add, T, {v, lit(1.0)});
        break;
      case Op::Mul:
        v = ir.emit(IrOp::Mul, T, {v, lit(0.75)});
        break;
      case Op::Div:
        v = ir.emit(IrOp::Div, T, {v, ir.emit(IrOp::Scalar, T, {2})});
        break;
      case Op::Sqrt:
        v = ir.emit(IrOp::Sqrt, T, {v});
        break;
      case Op::Exp:
        v = ir.emit(IrOp::Exp, T, {v});
        break;
      case Op::Log:
        v = ir.emit(IrOp::Log, T, {v});
        break;
      case Op::Sin:
        v = ir.emit(IrOp::Sin, T, {v});
        break;
      case Op::Cos:
        v = ir.emit(IrOp::Cos, T, {v});
        break;
      case Op::Trans:
        v = ir.emit(trans[k % 4], T, {v});
        break;
      case Op::Gather: {  // x[i ^ (k + 1)]: the fma above is what op None costs
        uint32_t j =
            ir.emit(IrOp::Xor, I,
                    {ir.emit(IrOp::Index, I), ir.emit(IrOp::Literal, I, {}, uint64_t(k + 1))});
        uint32_t yes = ir.emit(IrOp::Literal, ScalarType::Bool, {}, 1);
        v = ir.emit(IrOp::Add, T, {v, ir.emit(IrOp::Gather, T, {0, j, yes, 3})});
        break;
      }
      default:
        break;
    }
    acc = ir.emit(IrOp::Add, T, {acc, v});
  }
  ir.emit(IrOp::Store, T, {1, acc});
  ir.finalize();
  return ir;
}

// Host reference of every element (in double).
std::vector<double> reference(const KernelSpec& s, const std::vector<double>& x) {
  std::vector<double> want(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    if (s.op == Op::Copy) {
      want[i] = x[i];
      continue;
    }
    if (s.op == Op::IntDiv) {
      int32_t acc = 0;
      for (int k = 0; k < s.terms; ++k)
        acc += int32_t(uint32_t(i) ^ uint32_t(k + 1)) / 7;
      want[i] = acc;
      continue;
    }
    double acc = 0;
    for (int k = 0; k < s.terms; ++k) {
      double v = double(x[i]) * coef(k) + 0.5;
      double t = apply(s.op, k, v, x, i);
      acc += s.op == Op::Gather ? v + t : t;
    }
    want[i] = acc;
  }
  return want;
}

// One backend with one kernel and its buffers, for one benchmark run.
class Rig {
 public:
  Rig(const KernelSpec& spec, size_t n, const LlvmTuning& tuning)
      : spec_(spec),
        n_(n),
        be_(create_llvm_backend(BackendOptions{g_threads}, tuning)),
        elem_(size_of(spec.op == Op::IntDiv ? ScalarType::Int32 : spec.type)) {
    const std::vector<float>& in = ff_bench::cached_input(n);
    x_.assign(in.begin(), in.end());
    if (spec.type == ScalarType::Float32)
      for (double& v : x_)
        v = double(float(v));
    want_ = reference(spec, x_);
    std::vector<std::byte> bytes(n * elem_);
    for (size_t i = 0; i < n; ++i) {
      if (elem_ == 4) {
        float f = float(x_[i]);
        std::memcpy(&bytes[i * 4], &f, 4);
      } else {
        std::memcpy(&bytes[i * 8], &x_[i], 8);
      }
    }
    ScalarType t = spec.op == Op::IntDiv ? ScalarType::Int32 : spec.type;
    in_ = be_->alloc(t, n, {});
    out_ = be_->alloc(t, n, {});
    be_->copy(in_, bytes.data(), bytes.size(), CopyKind::HostToDevice);
    kernel_ = be_->compile(make_kernel(spec));
    uint64_t divisor = spec.op == Op::IntDiv ? 7
                       : elem_ == 4          ? std::bit_cast<uint32_t>(1.0001f)
                                             : std::bit_cast<uint64_t>(1.0001);
    args_ = {KernelArg::buffer(in_), KernelArg::buffer(out_), KernelArg{divisor, {}},
             KernelArg{uint64_t(n), {}}};
  }

  ~Rig() {
    be_->release(in_);
    be_->release(out_);
  }

  void launch() { be_->launch(kernel_, n_, {}, args_); }

  uint64_t work_per_elem() const { return kernel_work_per_elem(kernel_); }

  LaunchPlan plan() const { return launch_plan(*be_, kernel_, n_); }

  // "" when the output matches the reference (through timed_expectation if `timed`).
  std::string check(bool timed) {
    std::vector<std::byte> bytes(n_ * elem_);
    be_->copy(bytes.data(), out_, bytes.size(), CopyKind::DeviceToHost);
    for (size_t i = 0; i < n_; ++i) {
      double got;
      if (spec_.op == Op::IntDiv) {
        int32_t v;
        std::memcpy(&v, &bytes[i * 4], 4);
        got = v;
      } else if (elem_ == 4) {
        float v;
        std::memcpy(&v, &bytes[i * 4], 4);
        got = v;
      } else {
        std::memcpy(&got, &bytes[i * 8], 8);
      }
      double want = timed ? ff_bench::timed_expectation(want_[i]) : want_[i];
      double tol = spec_.op == Op::IntDiv ? 0 : 1e-4 * (std::abs(want) + spec_.terms);
      if (!(std::abs(got - want) <= tol))
        return "element " + std::to_string(i) + " of " + std::to_string(n_) + " is " +
               std::to_string(got) + ", expected " + std::to_string(want);
    }
    return {};
  }

 private:
  KernelSpec spec_;
  size_t n_;
  std::unique_ptr<Backend> be_;
  size_t elem_;
  std::vector<double> x_, want_;
  void* in_ = nullptr;
  void* out_ = nullptr;
  KernelHandle kernel_;
  std::vector<KernelArg> args_;
};

void run_rig(benchmark::State& st, Rig& rig) {
  rig.launch();
  if (std::string err = rig.check(false); !err.empty()) {
    st.SkipWithError(("wrong result of the first call: " + err).c_str());
    return;
  }
  for (auto _ : st)
    rig.launch();
  if (std::string err = rig.check(true); !err.empty()) {
    st.SkipWithError(("wrong result of the last timed call: " + err).c_str());
    return;
  }
  st.counters["work_per_elem"] = double(rig.work_per_elem());
  st.counters["blocks"] = double(rig.plan().n_blocks);
}

LlvmTuning base_tuning() {
  LlvmTuning t;
  t.tiered = false;  // optimised code from the start: what a hot kernel runs
  t.warm_up = false;
  return t;
}

// ---- op_cost -----------------------------------------------------------------------------

constexpr int kCostTerms = 16;
constexpr size_t kCostSize = 4096;

struct CostCase {
  const char* name;
  Op op;
};

const CostCase kCostOps[] = {{"none", Op::None},    {"add", Op::Add},   {"mul", Op::Mul},
                             {"div", Op::Div},      {"sqrt", Op::Sqrt}, {"exp", Op::Exp},
                             {"log", Op::Log},      {"sin", Op::Sin},   {"cos", Op::Cos},
                             {"gather", Op::Gather}};

void bm_op_cost(benchmark::State& st, KernelSpec spec) {
  LlvmTuning t = base_tuning();
  t.parallel_min_work = std::numeric_limits<uint64_t>::max();
  Rig rig(spec, kCostSize, t);
  run_rig(st, rig);
}

// ---- crossover ---------------------------------------------------------------------------

struct CrossKernel {
  const char* name;
  KernelSpec spec;
};

const CrossKernel kCross[] = {{"copy", {ScalarType::Float32, Op::Copy, 0}},
                              {"alu33", {ScalarType::Float32, Op::Add, 11}},
                              {"trans4", {ScalarType::Float32, Op::Trans, 4}},
                              {"trans40", {ScalarType::Float32, Op::Trans, 40}}};

const char* const kModes[] = {"caller", "pool", "pool4", "default"};

const size_t kCrossSizes[] = {256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536};

void bm_crossover(benchmark::State& st, KernelSpec spec, std::string mode, size_t n) {
  LlvmTuning t = base_tuning();
  if (mode == "caller") {
    t.parallel_min_work = std::numeric_limits<uint64_t>::max();
  } else if (mode != "default") {
    t.parallel_min_work = 0;
    t.wake_min_work = 0;
    // "pool": one block per thread; "pool4": kBlocksPerThread per thread (as size allows).
    t.block_min_work = mode == "pool" ? std::numeric_limits<uint64_t>::max() : 0;
  }
  Rig rig(spec, n, t);
  run_rig(st, rig);
}

std::string cross_name(const CrossKernel& k, const char* mode, size_t n) {
  return std::string("crossover/") + k.name + "/" + mode + "/" + std::to_string(n);
}

[[maybe_unused]] const bool kRegistered = [] {
  for (ScalarType t : {ScalarType::Float32, ScalarType::Float64})
    for (const CostCase& c : kCostOps) {
      KernelSpec spec{t, c.op, kCostTerms};
      std::string name = std::string("op_cost/") + to_string(t) + "/" + c.name;
      benchmark::RegisterBenchmark(name.c_str(), [spec](benchmark::State& st) {
        ff_bench::run_guarded(st, [&] { bm_op_cost(st, spec); });
      });
    }
  for (Op op : {Op::None, Op::IntDiv}) {
    KernelSpec spec{ScalarType::Int32, op == Op::None ? Op::IntDiv : op,
                    op == Op::None ? 0 : kCostTerms};
    std::string name = std::string("op_cost/int32/") + (op == Op::None ? "none" : "div");
    benchmark::RegisterBenchmark(name.c_str(), [spec](benchmark::State& st) {
      ff_bench::run_guarded(st, [&] { bm_op_cost(st, spec); });
    });
  }
  for (const CrossKernel& k : kCross)
    for (size_t n : kCrossSizes)
      for (const char* mode : kModes) {
        KernelSpec spec = k.spec;
        std::string m = mode;
        benchmark::RegisterBenchmark(
            cross_name(k, mode, n).c_str(), [spec, m, n](benchmark::State& st) {
              ff_bench::run_guarded(st, [&] { bm_crossover(st, spec, m, n); });
            });
      }
  return true;
}();

void print_summary(const ff_bench::Reporter& r) {
  // Op costs in work units: one unit is the time per element of one instruction of the
  // float32 "none" kernel (a load, a store and per term an fma and an add, all cheap).
  const ff_bench::Reporter::Result* none32 = r.find("op_cost/float32/none");
  if (none32) {
    const double unit = none32->seconds / (double(kCostSize) * (2 * kCostTerms + 2));
    std::printf(
        "\nop costs in work units (4,096 elements, one thread; a unit = %.4f ns/elem, an "
        "instruction of op_cost/float32/none); the op minus the none kernel of its type\n",
        unit * 1e9);
    std::printf("%-10s %10s %10s\n", "op", "float32", "float64");
    for (const CostCase& c : kCostOps) {
      if (c.op == Op::None)
        continue;
      std::printf("%-10s", c.name);
      for (const char* t : {"float32", "float64"}) {
        const auto* base = r.find(std::string("op_cost/") + t + "/none");
        const auto* x = r.find(std::string("op_cost/") + t + "/" + c.name);
        if (base && x)
          std::printf(" %10.1f",
                      (x->seconds - base->seconds) / (kCostTerms * double(kCostSize)) / unit);
        else
          std::printf(" %10s", "-");
      }
      std::printf("\n");
    }
    const auto* ib = r.find("op_cost/int32/none");
    const auto* id = r.find("op_cost/int32/div");
    if (ib && id)
      std::printf("%-10s %10.1f (int32)\n", "div",
                  (id->seconds - ib->seconds) / (kCostTerms * double(kCostSize)) / unit);
  }
  bool header = false;
  for (const CrossKernel& k : kCross) {
    size_t wins_from = 0;
    uint64_t wpe = 0;
    for (size_t n : kCrossSizes) {
      const auto* caller = r.find(cross_name(k, "caller", n));
      const auto* pool = r.find(cross_name(k, "pool", n));
      const auto* pool4 = r.find(cross_name(k, "pool4", n));
      const auto* def = r.find(cross_name(k, "default", n));
      if (!caller || (!pool && !pool4))
        continue;
      if (!header) {
        std::printf("\ncrossover (us per launch, medians; ratio = caller / best split)\n");
        std::printf("%-8s %6s %9s %10s %9s %9s %9s %6s %9s %7s\n", "kernel", "w/elem", "size",
                    "work", "caller", "pool", "pool4", "ratio", "default", "blocks");
        header = true;
      }
      wpe = uint64_t(caller->counter("work_per_elem"));
      auto us = [](const ff_bench::Reporter::Result* x) { return x ? x->seconds * 1e6 : NAN; };
      const double best =
          std::min(pool ? pool->seconds : INFINITY, pool4 ? pool4->seconds : INFINITY);
      std::printf("%-8s %6llu %9zu %10llu %9.2f %9.2f %9.2f %6.2f %9.2f %7.0f\n", k.name,
                  (unsigned long long)wpe, n, (unsigned long long)(wpe * n), us(caller), us(pool),
                  us(pool4), caller->seconds / best, us(def), def ? def->counter("blocks") : NAN);
      if (best < caller->seconds) {
        if (!wins_from)
          wins_from = n;
      } else {
        wins_from = 0;
      }
    }
    if (header) {
      if (wins_from)
        std::printf("  %s: the pool wins from %zu elements (work %llu) up\n", k.name, wins_from,
                    (unsigned long long)(wpe * wins_from));
      else
        std::printf("  %s: the pool does not win up to %zu elements\n", k.name,
                    kCrossSizes[std::size(kCrossSizes) - 1]);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  ff_bench::CommandLine cl(argc, argv);
  ff_bench::g_expect_wrong = cl.take_switch("ff_expect_wrong");
  if (auto t = cl.take("ff_threads"))
    g_threads = unsigned(std::max(0, std::atoi(t->c_str())));
  cl.default_to("benchmark_repetitions", "5");
  cl.default_to("benchmark_report_aggregates_only", "true");
  cl.default_to("benchmark_min_time", "0.05");
  if (ff_bench::g_expect_wrong)
    benchmark::AddCustomContext("self_test", ff_bench::kSelfTestContext);
  if (int status = cl.initialize_benchmark(); status != 0)
    return status;
  ff_bench::Reporter reporter(cl.color());
  const size_t n_run = benchmark::RunSpecifiedBenchmarks(&reporter);
  print_summary(reporter);
  ff_bench::warn_if_busy(stdout);
  benchmark::Shutdown();
  return ff_bench::exit_status("ff_bench_parallel", n_run, reporter, {});
}
