// Replay vs traced, side by side in one run (the recorder issue's figures):
//   W1 overhead-bound (1,024 floats, 100 ops, 10 kernels): µs per call, traced and replayed;
//   W3 per-op (16 floats, 100 ops, 100 kernels): µs per kernel, traced and replayed;
//   W1 and W3 replays with the recording optimiser off next to on (docs/optimizer.md);
//   W2 bandwidth (16M floats, 10 ops, 1 kernel): replay vs the hand-written OpenMP loop
//   (checked to have vectorised) and a plain copy loop, same threads;
//   recorder pass-through: a backend call through a RecordingBackend with no scope open vs
//   the bare backend (ns per call).
// Each timed call ends with ff::sync(). What is timed is checked as in ff_bench: the result
// of every timed W1/W3 call and of the last timed W2 call of every run, no kernel compiled
// while timing and exactly the expected launches per call; any failure is an error and the
// exit status is 1. The summary prints medians and ratios. Own flags: --ff_w2_size=N,
// --ff_threads=N, --ff_expect_wrong (see ff_bench.cpp). Defaults unless given:
// --benchmark_repetitions=5 --benchmark_report_aggregates_only=true. Runs itself with
// OMP_WAIT_POLICY=passive unless that variable is set.
#include <benchmark/benchmark.h>
#include <freezeframe/freezeframe.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "backend/llvm/llvm_backend.h"
#include "baselines.h"
#include "chain.h"
#include "harness.h"
#include "recorder/recording_backend.h"
#include "timed_calls.h"
#include "workloads.h"

namespace {

size_t g_w2_size = ff_bench::kW2Size;
int g_threads = 0;  // of the OpenMP loops

// Sets the per-item counter (µs per call or per kernel) from the manual time.
void set_us_per_item(benchmark::State& st, double seconds, int per) {
  st.counters["us_per_item"] = seconds * 1e6 / (static_cast<double>(st.iterations()) * per);
}

void traced(benchmark::State& st, size_t n, int n_ops, int every, int per) {
  ff::Float x = ff_bench::upload(n);
  auto call = [&] {
    ff::Float y = ff_bench::run_chain(x, n_ops, every);
    ff::sync();
    return y;
  };
  if (!ff_bench::check_warm_up(st, call(), n, n_ops)) {
    return;
  }
  const ff::Stats before = ff::stats();
  const double seconds =
      ff_bench::time_checked_calls(st, ff_bench::timed_reference(n, n_ops), call);
  if (st.error_occurred()) {
    return;
  }
  set_us_per_item(st, seconds, per);
  ff_bench::require_steady_state(st, before, ff_bench::launches_per_call(n_ops, every));
}

// W1/W3 (`per` > 0): every timed call checked, manual time; W2 (`per` == 0): the last timed
// call of the run checked, real time.
void replayed(benchmark::State& st, size_t n, int n_ops, int every, int per, bool optimize = true) {
  ff::Float x = ff_bench::upload(n);
  ff::Recording rec = ff_bench::record_chain(x, n_ops, every, optimize);
  const std::vector<ff::AnyArray> in{ff::AnyArray(x)};
  auto call = [&] {
    ff::Float y = rec.replay(in)[0].as<ff::Float>();
    ff::sync();
    return y;
  };
  if (!ff_bench::check_warm_up(st, call(), n, n_ops)) {
    return;
  }
  const ff::Stats before = ff::stats();
  if (per == 0) {
    ff_bench::time_calls_check_last(st, ff_bench::timed_reference(n, n_ops), call);
  } else {
    const double seconds =
        ff_bench::time_checked_calls(st, ff_bench::timed_reference(n, n_ops), call);
    if (!st.error_occurred()) {
      set_us_per_item(st, seconds, per);
    }
  }
  if (!st.error_occurred()) {
    ff_bench::require_steady_state(
        st, before,
        optimize ? ff_bench::kFusedLaunchesPerCall : ff_bench::launches_per_call(n_ops, every));
  }
}

void BM_W1_traced(benchmark::State& st) {
  traced(st, ff_bench::kW1Size, ff_bench::kW1Ops, ff_bench::kW1EvalEvery, 1);
}

void BM_W1_replay(benchmark::State& st) {
  replayed(st, ff_bench::kW1Size, ff_bench::kW1Ops, ff_bench::kW1EvalEvery, 1);
}

void BM_W1_replay_unoptimized(benchmark::State& st) {
  replayed(st, ff_bench::kW1Size, ff_bench::kW1Ops, ff_bench::kW1EvalEvery, 1, false);
}

void BM_W3_replay_unoptimized(benchmark::State& st) {
  replayed(st, ff_bench::kW3Size, ff_bench::kW3Ops, ff_bench::kW3EvalEvery, ff_bench::kW3Ops,
           false);
}

void BM_W3_traced(benchmark::State& st) {
  traced(st, ff_bench::kW3Size, ff_bench::kW3Ops, ff_bench::kW3EvalEvery, ff_bench::kW3Ops);
}

void BM_W3_replay(benchmark::State& st) {
  replayed(st, ff_bench::kW3Size, ff_bench::kW3Ops, ff_bench::kW3EvalEvery, ff_bench::kW3Ops);
}

void BM_W2_replay(benchmark::State& st) {
  replayed(st, g_w2_size, ff_bench::kW2Ops, ff_bench::kW2Ops, 0);
  ff_bench::set_w2_bytes(st, g_w2_size);
}

void BM_W2_hand_loop(benchmark::State& st) {
  ff_bench::bm_w2_hand_loop(st, g_w2_size, g_threads);
}

void BM_W2_copy_loop(benchmark::State& st) {
  ff_bench::bm_copy_loop(st, g_w2_size, g_threads);
}

/// One alloc + guard + release of a 16-float buffer: three backend calls.
void passthrough(benchmark::State& st, ff::Backend& b) {
  ff::SizeGuard g{ff::SizeCmp::Eq, {}, {}, 1, 1, "bench"};
  for (auto _ : st) {
    void* p = b.alloc(ff::ScalarType::Float32, 16, {});
    b.guard(g, true);
    b.release(p);
  }
  st.counters["ns_per_call"] = benchmark::Counter(
      static_cast<double>(st.iterations()) * 3 * 1e-9,  // inverted rate: ns per call
      benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

void BM_passthrough_bare(benchmark::State& st) {
  auto b = ff::create_llvm_backend(ff::BackendOptions{1});
  passthrough(st, *b);
}

void BM_passthrough_recorder(benchmark::State& st) {
  ff::rec::RecordingBackend b(ff::create_llvm_backend(ff::BackendOptions{1}), false);
  passthrough(st, b);
}

/// The console table, then the summary with medians and ratios.
class Summary : public ff_bench::Reporter {
 public:
  using Reporter::Reporter;

  void Finalize() override {
    Reporter::Finalize();
    std::printf("\nreplay summary (%s)\n", any_median() ? "medians" : "single runs");
    auto get = [&](const char* name, const char* key) {
      const Result* r = find(name);
      return !r ? -1.0 : std::string(key) == "seconds" ? r->seconds : r->counter(key);
    };
    double w1t = get("BM_W1_traced", "us_per_item"), w1r = get("BM_W1_replay", "us_per_item");
    double w3t = get("BM_W3_traced", "us_per_item"), w3r = get("BM_W3_replay", "us_per_item");
    if (w1t > 0) {
      std::printf("W1 traced  %8.2f us/call\n", w1t);
    }
    if (w1r > 0) {
      std::printf("W1 replay  %8.2f us/call   (target <= 3.5)  traced/replay %.1fx\n", w1r,
                  w1t / w1r);
    }
    if (w3t > 0) {
      std::printf("W3 traced  %8.3f us/kernel (target <= 1.0)\n", w3t);
    }
    if (w3r > 0) {
      std::printf("W3 replay  %8.3f us/kernel (target <= 0.15) traced/replay %.1fx\n", w3r,
                  w3t / w3r);
    }
    // The optimiser (docs/optimizer.md) on vs off, per call; off keeps the per-launch cost
    // of a replay visible.
    double w1u = get("BM_W1_replay_unoptimized", "us_per_item");
    double w3u = get("BM_W3_replay_unoptimized", "us_per_item");
    if (w1r > 0 && w1u > 0) {
      std::printf(
          "W1 replay, optimiser off %8.2f us/call, on %.2f us/call: %.2fx (target >= 1.6)\n", w1u,
          w1r, w1u / w1r);
    }
    if (w3r > 0 && w3u > 0) {
      std::printf(
          "W3 replay, optimiser off %8.3f us/kernel (%.2f us/call), on %.2f us/call: %.1fx "
          "(target >= 10)\n",
          w3u, w3u * ff_bench::kW3Ops, w3r * ff_bench::kW3Ops, w3u / w3r);
    }
    const double w2r = get("BM_W2_replay", "seconds"), w2h = get("BM_W2_hand_loop", "seconds");
    const double w2c = get("BM_W2_copy_loop", "seconds");
    const double bytes = static_cast<double>(g_w2_size) * 8;
    if (w2r > 0) {
      std::printf("W2 replay  %8.3f ms (%.1f GB/s)\n", w2r * 1e3, bytes / w2r * 1e-9);
    }
    if (w2h > 0) {
      std::printf(
          "W2 hand loop %6.3f ms (%.1f GB/s, %.0f OpenMP threads; vectorised: %.1fx its "
          "scalar twin on one thread)\n",
          w2h * 1e3, bytes / w2h * 1e-9, get("BM_W2_hand_loop", "threads"),
          get("BM_W2_hand_loop", "vector_speedup"));
    }
    if (w2c > 0) {
      std::printf("W2 copy loop %6.3f ms (%.1f GB/s, %.0f OpenMP threads)\n", w2c * 1e3,
                  bytes / w2c * 1e-9, get("BM_W2_copy_loop", "threads"));
    }
    if (w2r > 0 && w2h > 0) {
      std::printf(
          "W2 replay vs hand loop: ratio %.3f (hand-loop time / replay time; target >= "
          "0.95)\n",
          w2h / w2r);
    }
    if (w2r > 0 && w2c > 0) {
      std::printf("W2 replay vs copy loop: %.3f (copy time / replay time; 1 = memory limit)\n",
                  w2c / w2r);
    }
    const double pb = get("BM_passthrough_bare", "ns_per_call");
    const double pr = get("BM_passthrough_recorder", "ns_per_call");
    if (pb > 0 && pr > 0) {
      std::printf(
          "pass-through: bare %.1f ns/call, through the recorder (no scope) %.1f ns/call: "
          "+%.1f ns per backend call\n",
          pb, pr, pr - pb);
    }
    ff_bench::warn_if_busy(stdout);
  }
};

}  // namespace

int main(int argc, char** argv) {
  ff_bench::run_with_passive_openmp(argv);
  ff_bench::CommandLine cl(argc, argv);
  if (auto v = cl.take("ff_w2_size")) {
    g_w2_size = std::strtoull(v->c_str(), nullptr, 10);
  }
  g_threads = ff_bench::baseline_threads(cl.take("ff_threads"));
  ff_bench::g_expect_wrong = cl.take_switch("ff_expect_wrong");
  cl.default_to("benchmark_repetitions", "5");
  if (!cl.has("benchmark_display_aggregates_only")) {
    cl.default_to("benchmark_report_aggregates_only", "true");
  }
  try {
    ff::init();
    benchmark::AddCustomContext("ff_backend", ff::backend_name());
    benchmark::AddCustomContext("w2_elements", std::to_string(g_w2_size));
    benchmark::AddCustomContext("openmp_loop_threads", std::to_string(g_threads));
    benchmark::AddCustomContext("openmp", ff_bench::openmp_description());
    if (ff_bench::g_expect_wrong) {
      benchmark::AddCustomContext("self_test", ff_bench::kSelfTestContext);
    }
    if (int status = cl.initialize_benchmark(); status != 0) {
      return status;
    }
    using ff_bench::guarded;
    for (auto [name, fn] : {std::pair{"BM_W1_traced", &guarded<BM_W1_traced>},
                            {"BM_W1_replay", &guarded<BM_W1_replay>},
                            {"BM_W1_replay_unoptimized", &guarded<BM_W1_replay_unoptimized>},
                            {"BM_W3_traced", &guarded<BM_W3_traced>},
                            {"BM_W3_replay", &guarded<BM_W3_replay>},
                            {"BM_W3_replay_unoptimized", &guarded<BM_W3_replay_unoptimized>}}) {
      benchmark::RegisterBenchmark(name, fn)->UseManualTime();
    }
    for (auto [name, fn] : {std::pair{"BM_W2_replay", &guarded<BM_W2_replay>},
                            {"BM_W2_hand_loop", &guarded<BM_W2_hand_loop>},
                            {"BM_W2_copy_loop", &guarded<BM_W2_copy_loop>}}) {
      benchmark::RegisterBenchmark(name, fn)->Unit(benchmark::kMillisecond)->UseRealTime();
    }
    for (auto [name, fn] : {std::pair{"BM_passthrough_bare", &guarded<BM_passthrough_bare>},
                            {"BM_passthrough_recorder", &guarded<BM_passthrough_recorder>}}) {
      benchmark::RegisterBenchmark(name, fn)->UseRealTime();
    }
    Summary reporter(cl.color());
    const size_t n_run = benchmark::RunSpecifiedBenchmarks(&reporter);
    benchmark::Shutdown();
    ff::shutdown();
    // The pass-through benchmarks have no result to check.
    return ff_bench::exit_status("ff_bench_replay", n_run, reporter,
                                 {"BM_passthrough_bare", "BM_passthrough_recorder"});
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ff_bench_replay: %s\n", e.what());
    return 1;
  }
}
