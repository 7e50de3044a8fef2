// Replay vs traced, side by side in one run (the recorder issue's figures):
//   W1 overhead-bound (1,024 floats, 100 ops, 10 kernels): µs per call, traced and replayed;
//   W3 per-op (16 floats, 100 ops, 100 kernels): µs per kernel, traced and replayed;
//   W2 bandwidth (16M floats, 10 ops, 1 kernel): replay vs the hand-written OpenMP loop;
//   recorder pass-through: a backend call through a RecordingBackend with no scope open vs
//   the bare backend (ns per call).
// Each timed call ends with ff::sync(). The summary prints medians and ratios.
#include <benchmark/benchmark.h>
#include <freezeframe/freezeframe.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <thread>

#include "backend/llvm/llvm_backend.h"
#include "chain.h"
#include "hand_loop.h"
#include "recorder/recording_backend.h"
#include "workloads.h"

namespace {

size_t g_w2_size = ff_bench::kW2Size;

/// Records `run_chain` once for input x and returns the recording.
ff::Recording record_chain(const ff::Float& x, int n_ops, int every) {
  return ff::record({ff::AnyArray(x)}, [&] {
    return std::vector<ff::AnyArray>{ff::AnyArray(ff_bench::run_chain(x, n_ops, every))};
  });
}

void check(benchmark::State& st, const ff::Float& y, const std::vector<float>& x, int n_ops) {
  std::string err = ff_bench::check_chain(y, x, n_ops);
  if (!err.empty())
    st.SkipWithError(err.c_str());
}

void traced(benchmark::State& st, size_t n, int n_ops, int every, int per) {
  auto host = ff_bench::make_input(n);
  ff::Float x = ff::Float::from(host);
  ff::Float y = ff_bench::run_chain(x, n_ops, every);
  check(st, y, host, n_ops);
  for (auto _ : st) {
    ff::Float r = ff_bench::run_chain(x, n_ops, every);
    ff::sync();
    benchmark::DoNotOptimize(r.id());
  }
  st.counters["us_per_item"] =
      benchmark::Counter(static_cast<double>(st.iterations()) * per,
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

void replayed(benchmark::State& st, size_t n, int n_ops, int every, int per) {
  auto host = ff_bench::make_input(n);
  ff::Float x = ff::Float::from(host);
  ff::Recording rec = record_chain(x, n_ops, every);
  std::vector<ff::AnyArray> in{ff::AnyArray(x)};
  check(st, rec.replay(in)[0].as<ff::Float>(), host, n_ops);
  uint64_t compiles = ff::stats().compiles;
  for (auto _ : st) {
    auto out = rec.replay(in);
    ff::sync();
    benchmark::DoNotOptimize(out.data());
  }
  if (ff::stats().compiles != compiles)
    st.SkipWithError("replay compiled kernels");
  st.counters["us_per_item"] =
      benchmark::Counter(static_cast<double>(st.iterations()) * per,
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

void BM_W1_traced(benchmark::State& st) {
  traced(st, ff_bench::kW1Size, 100, 10, 1);
}

void BM_W1_replay(benchmark::State& st) {
  replayed(st, ff_bench::kW1Size, 100, 10, 1);
}

void BM_W3_traced(benchmark::State& st) {
  traced(st, ff_bench::kW3Size, 100, 1, 100);
}

void BM_W3_replay(benchmark::State& st) {
  replayed(st, ff_bench::kW3Size, 100, 1, 100);
}

void BM_W2_replay(benchmark::State& st) {
  replayed(st, g_w2_size, 10, 10, 1);
}

void BM_W2_hand_loop(benchmark::State& st) {
  auto host = ff_bench::make_input(g_w2_size);
  std::vector<float> out(g_w2_size);
  int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  for (auto _ : st) {
    ff_bench::hand_loop_w2(host.data(), out.data(), g_w2_size, threads);
    benchmark::DoNotOptimize(out.data());
  }
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

/// Keeps each benchmark's median and prints the summary with ratios.
class Summary : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& r : runs) {
      bool median = r.run_type == Run::RT_Aggregate && r.aggregate_name == "median";
      if (r.run_type == Run::RT_Aggregate && !median)
        continue;
      auto& m = results_[r.run_name.function_name];
      if (m.count("median") && !median)
        continue;
      m["median"] = median;
      m["seconds"] = r.GetAdjustedRealTime() * unit_seconds(r.time_unit);
      for (auto& [k, c] : r.counters)
        m[k] = c.value;
    }
  }

  void Finalize() override {
    ConsoleReporter::Finalize();
    auto get = [&](const char* name, const char* key) {
      auto it = results_.find(name);
      return it == results_.end() || !it->second.count(key) ? -1.0 : it->second[key];
    };
    std::printf("\nreplay summary (medians)\n");
    double w1t = get("BM_W1_traced", "us_per_item"), w1r = get("BM_W1_replay", "us_per_item");
    double w3t = get("BM_W3_traced", "us_per_item"), w3r = get("BM_W3_replay", "us_per_item");
    std::printf("W1 traced  %8.2f us/call\n", w1t * 1e6);
    std::printf("W1 replay  %8.2f us/call   (target <= 3.5)  traced/replay %.1fx\n", w1r * 1e6,
                w1t / w1r);
    std::printf("W3 traced  %8.3f us/kernel (target <= 1.0)\n", w3t * 1e6);
    std::printf("W3 replay  %8.3f us/kernel (target <= 0.15) traced/replay %.1fx\n", w3r * 1e6,
                w3t / w3r);
    double w2r = get("BM_W2_replay", "seconds"), w2h = get("BM_W2_hand_loop", "seconds");
    double gbs = static_cast<double>(g_w2_size) * 8 / w2r * 1e-9;
    std::printf("W2 replay  %8.2f ms (%.1f GB/s), hand loop %.2f ms: ratio %.3f (target >= 0.95)\n",
                w2r * 1e3, gbs, w2h * 1e3, w2h / w2r);
    double pb = get("BM_passthrough_bare", "ns_per_call");
    double pr = get("BM_passthrough_recorder", "ns_per_call");
    std::printf(
        "pass-through: bare %.1f ns/call, through the recorder (no scope) %.1f ns/call: "
        "+%.1f ns per backend call\n",
        pb, pr, pr - pb);
  }

 private:
  static double unit_seconds(benchmark::TimeUnit u) {
    switch (u) {
      case benchmark::kNanosecond:
        return 1e-9;
      case benchmark::kMicrosecond:
        return 1e-6;
      case benchmark::kMillisecond:
        return 1e-3;
      default:
        return 1;
    }
  }

  std::map<std::string, std::map<std::string, double>> results_;
};

}  // namespace

int main(int argc, char** argv) {
  // --ff_w2_size=N shrinks W2 for the smoke test.
  for (int i = 1; i < argc; ++i)
    if (std::strncmp(argv[i], "--ff_w2_size=", 13) == 0) {
      g_w2_size = std::strtoull(argv[i] + 13, nullptr, 10);
      std::memmove(&argv[i], &argv[i + 1], sizeof(char*) * static_cast<size_t>(argc - i));
      --argc;
      --i;
    }
  ff::init();
  for (auto [name, fn] : {std::pair{"BM_W1_traced", &BM_W1_traced},
                          {"BM_W1_replay", &BM_W1_replay},
                          {"BM_W3_traced", &BM_W3_traced},
                          {"BM_W3_replay", &BM_W3_replay},
                          {"BM_W2_replay", &BM_W2_replay},
                          {"BM_W2_hand_loop", &BM_W2_hand_loop},
                          {"BM_passthrough_bare", &BM_passthrough_bare},
                          {"BM_passthrough_recorder", &BM_passthrough_recorder}})
    benchmark::RegisterBenchmark(name, fn)
        ->Repetitions(5)
        ->ReportAggregatesOnly(true)
        ->UseRealTime();
  benchmark::Initialize(&argc, argv);
  Summary reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  ff::shutdown();
  return 0;
}
