// The freezeframe benchmarks (Google Benchmark):
//   W1 "overhead-bound": 1,024 floats, 100 ops, eval every 10 ops, traced   — µs per call
//   W3 "per kernel":     16 floats, 100 ops, eval after each, traced        — µs per kernel
//   W2 "bandwidth":      16M floats, 10 ops, one eval, against a hand-written OpenMP loop
//                        (checked to have vectorised) and a plain copy loop, same threads
// Every timed call ends with ff::sync(), and what is timed is checked: the result of every
// timed W1/W3 call and of the last timed call of every W2 run, and the steady state (no kernel
// compiled while timing, exactly the expected launches per call). Any failure is an error and
// the exit status is 1. A summary (medians, targets, W2's ratios measured in this run) is
// printed after the usual table. Own flags, besides Google Benchmark's:
//   --ff_w2_size=N      W2 element count (default 16M; the smoke test uses a small one)
//   --ff_threads=N      threads of the OpenMP loops (default: FF_THREADS, else every core)
//   --ff_expect_wrong   self-test: the checks of timed calls expect wrong values, so every
//                       benchmark must fail (exit status 1 when all did)
// Defaults unless given: --benchmark_repetitions=5 --benchmark_report_aggregates_only=true.
// Runs itself with OMP_WAIT_POLICY=passive unless that variable is set.
#include <benchmark/benchmark.h>
#include <freezeframe/freezeframe.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <tuple>
#include <vector>

#include "baselines.h"
#include "chain.h"
#include "harness.h"
#include "timed_calls.h"
#include "w2_side_by_side.h"
#include "workloads.h"

namespace {

using ff_bench::run_chain;

struct Options {
  size_t w2_size = ff_bench::kW2Size;
  int threads = 0;  // of the OpenMP loops
};

Options g_options;

// Uploads cached_input(n) into x and runs one untimed, checked call (it compiles the kernels).
bool set_up(benchmark::State& st, ff::Float& x, size_t n, int n_ops, int eval_every) {
  x = ff::Float::from(ff_bench::cached_input(n));
  ff::eval(x);
  ff::sync();
  ff::Float y = run_chain(x, n_ops, eval_every);
  ff::sync();
  return ff_bench::check_warm_up(st, y, n, n_ops);
}

// W1 and W3: traced chains on small arrays, every timed call checked; `per` is the number of
// kernels per call.
void traced_chain(benchmark::State& st, size_t n, int n_ops, int eval_every, const char* counter,
                  double per) {
  ff::Float x;
  if (!set_up(st, x, n, n_ops, eval_every)) {
    return;
  }
  const ff::Stats before = ff::stats();
  const double seconds = ff_bench::time_checked_calls(st, ff_bench::timed_reference(n, n_ops), [&] {
    ff::Float y = run_chain(x, n_ops, eval_every);
    ff::sync();
    return y;
  });
  if (st.error_occurred()) {
    return;
  }
  st.counters[counter] = seconds * 1e6 / (static_cast<double>(st.iterations()) * per);
  ff_bench::require_steady_state(st, before, ff_bench::launches_per_call(n_ops, eval_every));
}

void BM_W1_overhead(benchmark::State& st) {
  traced_chain(st, ff_bench::kW1Size, ff_bench::kW1Ops, ff_bench::kW1EvalEvery, "us_per_call", 1);
}

void BM_W3_per_kernel(benchmark::State& st) {
  traced_chain(st, ff_bench::kW3Size, ff_bench::kW3Ops, ff_bench::kW3EvalEvery, "us_per_kernel",
               ff_bench::kW3Ops / ff_bench::kW3EvalEvery);
}

// W2: the result of the last timed call of every run is checked.
void BM_W2_ff(benchmark::State& st) {
  const size_t n = g_options.w2_size;
  constexpr int kOps = ff_bench::kW2Ops;
  ff::Float x;
  if (!set_up(st, x, n, kOps, kOps)) {
    return;
  }
  const ff::Stats before = ff::stats();
  ff_bench::time_calls_check_last(st, ff_bench::timed_reference(n, kOps), [&] {
    ff::Float y = run_chain(x, kOps, kOps);
    ff::sync();
    return y;
  });
  if (st.error_occurred()) {
    return;
  }
  ff_bench::require_steady_state(st, before, ff_bench::launches_per_call(kOps, kOps));
  ff_bench::set_w2_bytes(st, n);
}

void BM_W2_hand_loop(benchmark::State& st) {
  ff_bench::bm_w2_hand_loop(st, g_options.w2_size, g_options.threads);
}

void BM_W2_copy_loop(benchmark::State& st) {
  ff_bench::bm_copy_loop(st, g_options.w2_size, g_options.threads);
}

void BM_W2_side_by_side(benchmark::State& st) {
  ff_bench::bm_w2_side_by_side(st, g_options.w2_size, g_options.threads);
}

// The console table as usual, then a summary with the targets and W2's ratios.
class SummaryReporter : public ff_bench::Reporter {
 public:
  using Reporter::Reporter;

  void Finalize() override {
    Reporter::Finalize();
    std::FILE* out = stdout;
    std::fflush(out);
    std::fprintf(out, "\nfreezeframe benchmark summary (%s; backend %s)\n",
                 any_median() ? "medians" : "single runs", ff::backend_name().c_str());
    row(out, "W1 overhead-bound", "BM_W1_overhead", "us_per_call", "call", 30);
    row(out, "W3 per kernel", "BM_W3_per_kernel", "us_per_kernel", "kernel", 1.0);
    w2(out);
    ff_bench::warn_if_busy(out);
    std::fflush(out);
  }

 private:
  // SUMMARY lines are machine-readable (bench/run.sh collects them): |-separated fields.
  static void print(std::FILE* out, const char* what, const std::string& value,
                    const std::string& target, const char* verdict) {
    std::fprintf(out, "SUMMARY | %-24s | %-44s | %-12s | %s\n", what, value.c_str(), target.c_str(),
                 verdict);
  }

  // Prints the error line and returns true when `name` failed.
  bool failed(std::FILE* out, const char* what, const char* name) const {
    if (error(name).empty()) {
      return false;
    }
    print(out, what, "ERROR: " + error(name), "", "ERROR");
    return true;
  }

  void row(std::FILE* out, const char* what, const char* name, const char* counter, const char* per,
           double target_us) const {
    if (!ran(name) || failed(out, what, name)) {
      return;
    }
    const double v = find(name)->counter(counter);
    char value[64], target[32];
    std::snprintf(value, sizeof value, "%.3f us/%s", v, per);
    std::snprintf(target, sizeof target, "<= %g us", target_us);
    print(out, what, value, target, v <= target_us ? "PASS" : "MISS");
  }

  void w2(std::FILE* out) const {
    const double bytes = static_cast<double>(g_options.w2_size) * 8;
    auto line = [&](const char* what, const char* name) -> const Result* {
      if (!ran(name) || failed(out, what, name)) {
        return nullptr;
      }
      const Result* r = find(name);
      char value[96];
      const double threads = r->counter("threads");
      std::snprintf(value, sizeof value, "%.3f ms, %.1f GB/s", r->seconds * 1e3,
                    bytes / r->seconds * 1e-9);
      std::string text = value;
      if (threads > 0) {
        text += ", " + std::to_string(static_cast<int>(threads)) + " OpenMP threads";
      }
      print(out, what, text, "", "");
      return r;
    };
    const Result* f = line("W2 bandwidth (ff)", "BM_W2_ff");
    const Result* h = line("W2 hand loop", "BM_W2_hand_loop");
    const Result* c = line("W2 copy loop", "BM_W2_copy_loop");
    char value[96];
    if (h) {
      const double speedup = h->counter("vector_speedup");
      std::snprintf(value, sizeof value, "%.1fx scalar; 1 thread: %.2f elem/ns, %.2f/cycle",
                    speedup, h->counter("elems_per_ns_1t"), h->counter("elems_per_cycle_1t"));
      char target[32];
      std::snprintf(target, sizeof target, ">= %.0fx", ff_bench::kMinVectorSpeedup);
      // A miss fails the run, except under FF_BENCH_SMOKE (baselines.h).
      print(out, "hand loop vectorised", value, target,
            speedup >= ff_bench::kMinVectorSpeedup ? "PASS" : "MISS");
    }
    if (f && h) {
      const double ratio = h->seconds / f->seconds;
      std::snprintf(value, sizeof value, "%.3f (hand-loop time / ff time)", ratio);
      print(out, "W2 ratio", value, ">= 0.9", ratio >= 0.9 ? "PASS" : "MISS");
      std::fprintf(out, "W2 ratio: %.3f\n", ratio);
    }
    if (c && (f || h)) {
      // The fraction of the memory limit: 1 = as fast as copying x to y.
      std::string text;
      if (f) {
        std::snprintf(value, sizeof value, "ff %.3f", c->seconds / f->seconds);
        text = value;
      }
      if (h) {
        std::snprintf(value, sizeof value, "%shand loop %.3f", f ? ", " : "",
                      c->seconds / h->seconds);
        text += value;
      }
      print(out, "W2 vs copy loop", text + " (copy time / time)", "", "");
      if (f) {
        std::fprintf(out, "W2 vs copy: %.3f\n", c->seconds / f->seconds);
      }
    }
    side_by_side(out);
  }

  // The per-round ratios of BM_W2_side_by_side (w2_side_by_side.h), the figures to judge by on
  // a shared machine.
  void side_by_side(std::FILE* out) const {
    const char* name = "BM_W2_side_by_side";
    if (!ran(name) || failed(out, "W2 side by side", name)) {
      return;
    }
    const Result* r = find(name);
    char value[96];
    std::snprintf(value, sizeof value, "traced %.3f, replay %.3f, hand %.3f, copy %.3f ms",
                  r->counter("ms_traced"), r->counter("ms_replay"), r->counter("ms_hand"),
                  r->counter("ms_copy"));
    print(out, "W2 side by side (median)", value, "", "");
    for (auto [what, hand, copy] :
         {std::tuple{"W2 traced, per round", "hand_over_traced", "copy_over_traced"},
          {"W2 replayed, per round", "hand_over_replay", "copy_over_replay"}}) {
      const double h = r->counter(hand), c = r->counter(copy);
      std::snprintf(value, sizeof value, "hand/ff %.3f, copy/ff %.3f (median ratio)", h, c);
      // The target is against the hand loop; the copy loop shows how far the memory limit is.
      print(out, what, value, "hand >= 0.95", h >= 0.95 ? "PASS" : "MISS");
    }
  }
};

}  // namespace

int main(int argc, char** argv) {
  ff_bench::run_with_passive_openmp(argv);
  ff_bench::CommandLine cl(argc, argv);
  if (auto v = cl.take("ff_w2_size")) {
    g_options.w2_size = std::strtoull(v->c_str(), nullptr, 10);
  }
  g_options.threads = ff_bench::baseline_threads(cl.take("ff_threads"));
  ff_bench::g_expect_wrong = cl.take_switch("ff_expect_wrong");
  cl.default_to("benchmark_repetitions", "5");
  if (!cl.has("benchmark_display_aggregates_only")) {
    cl.default_to("benchmark_report_aggregates_only", "true");
  }

  try {
    ff::init();
    benchmark::AddCustomContext("ff_backend", ff::backend_name());
    benchmark::AddCustomContext("w2_elements", std::to_string(g_options.w2_size));
    benchmark::AddCustomContext("openmp_loop_threads", std::to_string(g_options.threads));
    benchmark::AddCustomContext("openmp", ff_bench::openmp_description());
    if (ff_bench::g_expect_wrong) {
      benchmark::AddCustomContext("self_test", ff_bench::kSelfTestContext);
    }
    if (int status = cl.initialize_benchmark(); status != 0) {
      return status;
    }
    using ff_bench::guarded;
    benchmark::RegisterBenchmark("BM_W1_overhead", guarded<BM_W1_overhead>)
        ->Unit(benchmark::kMicrosecond)
        ->UseManualTime();
    benchmark::RegisterBenchmark("BM_W3_per_kernel", guarded<BM_W3_per_kernel>)
        ->Unit(benchmark::kMicrosecond)
        ->UseManualTime();
    for (auto [name, body] : {std::pair{"BM_W2_ff", &guarded<BM_W2_ff>},
                              {"BM_W2_hand_loop", &guarded<BM_W2_hand_loop>},
                              {"BM_W2_copy_loop", &guarded<BM_W2_copy_loop>}}) {
      benchmark::RegisterBenchmark(name, body)->Unit(benchmark::kMillisecond)->UseRealTime();
    }
    // Its ratios are medians over its rounds: one run of many rounds says more than repetitions.
    benchmark::RegisterBenchmark("BM_W2_side_by_side", guarded<BM_W2_side_by_side>)
        ->Unit(benchmark::kMillisecond)
        ->UseManualTime()
        ->Iterations(60)
        ->Repetitions(1);
    SummaryReporter reporter(cl.color());
    const size_t n_run = benchmark::RunSpecifiedBenchmarks(&reporter);
    benchmark::Shutdown();
    ff::shutdown();
    return ff_bench::exit_status("ff_bench", n_run, reporter, {});
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ff_bench: %s\n", e.what());
    return 1;
  }
}
