// The freezeframe benchmarks (Google Benchmark):
//   W1 "overhead-bound": 1,024 floats, 100 ops, eval every 10 ops, traced   — µs per call
//   W3 "per kernel":     16 floats, 100 ops, eval after each, traced        — µs per kernel
//   W2 "bandwidth":      16M floats, 10 ops, one eval, vs a hand-written OpenMP loop
// Every timed call ends with ff::sync(). A summary (medians, targets, W2's ratio measured in
// this run) is printed after the usual table. Own flags, besides Google Benchmark's:
//   --ff_w2_size=N   W2 element count (default 16M; the smoke test uses a small one)
//   --ff_threads=N   threads for the hand-written loop (default: every core, as ff's pool)
// Defaults added unless given: --benchmark_repetitions=5 --benchmark_report_aggregates_only.
// Colours only on a terminal (or with --benchmark_color=true).
#include <benchmark/benchmark.h>
#include <freezeframe/freezeframe.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "chain.h"
#include "hand_loop.h"
#include "workloads.h"

namespace {

using Clock = std::chrono::steady_clock;
using ff_bench::check_chain;
using ff_bench::make_input;
using ff_bench::run_chain;

struct Options {
  size_t w2_size = ff_bench::kW2Size;
  int threads = 0;  // 0 = every core
};

Options g_options;

double us_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
}

// Counters that say whether the steady state is what we think: no compiles, N launches.
void set_stats_counters(benchmark::State& st, const ff::Stats& before, const ff::Stats& after) {
  const double iters = static_cast<double>(st.iterations());
  st.counters["launches"] = static_cast<double>(after.launches - before.launches) / iters;
  st.counters["compiles"] = static_cast<double>(after.compiles - before.compiles);
}

// W1 and W3: traced chains on small arrays; `per` is the number of kernels per call.
void traced_chain(benchmark::State& st, size_t n, int n_ops, int eval_every, const char* counter,
                  double per) {
  std::vector<float> host = make_input(n);
  ff::Float x = ff::Float::from(host);
  ff::eval(x);
  ff::sync();

  // Warm-up call (compiles the kernels) and a check of its result.
  {
    ff::Float y = run_chain(x, n_ops, eval_every);
    ff::sync();
    if (std::string err = check_chain(y, host, n_ops); !err.empty()) {
      st.SkipWithError(("wrong result: " + err).c_str());
      return;
    }
  }

  ff::Stats before = ff::stats();
  double total_us = 0;
  for (auto _ : st) {
    auto t0 = Clock::now();
    {
      ff::Float y = run_chain(x, n_ops, eval_every);
      ff::sync();
    }
    total_us += us_since(t0);
  }
  ff::Stats after = ff::stats();
  st.counters[counter] = total_us / (static_cast<double>(st.iterations()) * per);
  set_stats_counters(st, before, after);
}

void BM_W1_overhead(benchmark::State& st) {
  traced_chain(st, ff_bench::kW1Size, ff_bench::kW1Ops, ff_bench::kW1EvalEvery, "us_per_call", 1);
}

void BM_W3_per_kernel(benchmark::State& st) {
  traced_chain(st, ff_bench::kW3Size, ff_bench::kW3Ops, ff_bench::kW3EvalEvery, "us_per_kernel",
               ff_bench::kW3Ops / ff_bench::kW3EvalEvery);
}

// W2 moves x in and y out: 8 bytes per element.
void set_bandwidth(benchmark::State& st, size_t n) {
  st.SetBytesProcessed(static_cast<int64_t>(st.iterations()) * static_cast<int64_t>(n) * 8);
}

void BM_W2_ff(benchmark::State& st) {
  const size_t n = g_options.w2_size;
  std::vector<float> host = make_input(n);
  ff::Float x = ff::Float::from(host);
  ff::eval(x);
  ff::sync();
  {
    ff::Float y = run_chain(x, ff_bench::kW2Ops, ff_bench::kW2Ops);
    ff::sync();
    if (std::string err = check_chain(y, host, ff_bench::kW2Ops); !err.empty()) {
      st.SkipWithError(("wrong result: " + err).c_str());
      return;
    }
  }
  ff::Stats before = ff::stats();
  for (auto _ : st) {
    ff::Float y = run_chain(x, ff_bench::kW2Ops, ff_bench::kW2Ops);
    ff::sync();
  }
  set_stats_counters(st, before, ff::stats());
  set_bandwidth(st, n);
}

void BM_W2_hand_loop(benchmark::State& st) {
  const size_t n = g_options.w2_size;
  std::vector<float> host = make_input(n);
  std::vector<float> out(n);
  ff_bench::hand_loop_w2(host.data(), out.data(), n, g_options.threads);  // first touch
  for (size_t i = 0; i < n; i += std::max<size_t>(1, n / 97)) {
    float want = ff_bench::reference(host[i], ff_bench::kW2Ops);
    if (!(std::abs(out[i] - want) <= 1e-5f * std::abs(want) + 1e-6f)) {
      st.SkipWithError("hand-written loop disagrees with the reference");
      return;
    }
  }
  for (auto _ : st) {
    ff_bench::hand_loop_w2(host.data(), out.data(), n, g_options.threads);
    benchmark::ClobberMemory();
  }
  st.counters["threads"] = ff_bench::hand_loop_threads(g_options.threads);
  set_bandwidth(st, n);
}

// Runs a benchmark body, turning an exception into a reported error (exit status 1).
template <void (*Body)(benchmark::State&)>
void guarded(benchmark::State& st) {
  try {
    Body(st);
  } catch (const std::exception& e) {
    st.SkipWithError((std::string("exception: ") + e.what()).c_str());
  }
}

// Prints the console table as usual, keeps each benchmark's median (or its single run), and
// prints a summary with the targets and W2's ratio at the end.
class SummaryReporter : public benchmark::ConsoleReporter {
 public:
  explicit SummaryReporter(bool color) : ConsoleReporter(color ? OO_ColorTabular : OO_Tabular) {}

  struct Result {
    double real_time = 0;  // per iteration, in `unit`
    benchmark::TimeUnit unit = benchmark::kNanosecond;
    std::map<std::string, double> counters;
    bool median = false;
    std::string error;
  };

  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& run : runs) {
      any_error_ = any_error_ || run.error_occurred;
      const bool is_median = run.run_type == Run::RT_Aggregate && run.aggregate_name == "median";
      if (run.run_type == Run::RT_Aggregate && !is_median) {
        continue;
      }
      std::string name = run.run_name.function_name;
      Result& r = results_[name];
      if (r.median && !is_median) {
        continue;  // a median is already there
      }
      r.real_time = run.GetAdjustedRealTime();
      r.unit = run.time_unit;
      r.median = is_median;
      r.error = run.error_occurred ? run.error_message : "";
      r.counters.clear();
      for (const auto& [key, counter] : run.counters) {
        r.counters[key] = counter.value;
      }
    }
  }

  void Finalize() override {
    ConsoleReporter::Finalize();
    std::FILE* out = stdout;
    std::fflush(out);
    std::fprintf(out, "\nfreezeframe benchmark summary (%s; backend %s)\n",
                 any_median() ? "medians" : "single runs", ff::backend_name().c_str());
    row(out, "W1 overhead-bound", "BM_W1_overhead", "us_per_call", "us", "call", 30, true);
    row(out, "W3 per kernel", "BM_W3_per_kernel", "us_per_kernel", "us", "kernel", 1.0, true);
    w2(out);
    warn_if_busy(out);
    std::fflush(out);
  }

 private:
  // Timings from a machine that runs other work are not worth quoting: say so.
  static void warn_if_busy(std::FILE* out) {
    double load = 0;
    if (std::FILE* f = std::fopen("/proc/loadavg", "r")) {
      if (std::fscanf(f, "%lf", &load) != 1) {
        load = 0;
      }
      std::fclose(f);
    }
    const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
    if (load > 0.5 * cores) {
      std::fprintf(out,
                   "WARNING: load average %.2f on %u cores: other processes were running, so "
                   "these timings are unreliable\n",
                   load, cores);
    }
  }

  static double seconds(const Result& r) {
    switch (r.unit) {
      case benchmark::kNanosecond:
        return r.real_time * 1e-9;
      case benchmark::kMicrosecond:
        return r.real_time * 1e-6;
      case benchmark::kMillisecond:
        return r.real_time * 1e-3;
      default:
        return r.real_time;
    }
  }

  bool any_median() const {
    return std::any_of(results_.begin(), results_.end(),
                       [](const auto& kv) { return kv.second.median; });
  }

  const Result* find(const char* name) const {
    auto it = results_.find(name);
    return it == results_.end() ? nullptr : &it->second;
  }

  // SUMMARY lines are machine-readable (bench/run.sh collects them): |-separated fields.
  static void print(std::FILE* out, const char* what, const std::string& value,
                    const std::string& target, const char* verdict) {
    std::fprintf(out, "SUMMARY | %-24s | %-36s | %-12s | %s\n", what, value.c_str(), target.c_str(),
                 verdict);
  }

  void row(std::FILE* out, const char* what, const char* name, const char* counter,
           const char* unit, const char* per, double target, bool lower_is_better) const {
    const Result* r = find(name);
    if (!r) {
      return;  // filtered out
    }
    char target_text[32];
    std::snprintf(target_text, sizeof target_text, "%s %g %s",
                  lower_is_better ? "<=" : ">=", target, unit);
    if (!r->error.empty()) {
      print(out, what, "ERROR: " + r->error, target_text, "ERROR");
      return;
    }
    double v = r->counters.count(counter) ? r->counters.at(counter) : -1;
    char value[64];
    std::snprintf(value, sizeof value, "%.3f %s/%s", v, unit, per);
    bool ok = lower_is_better ? v <= target : v >= target;
    print(out, what, value, target_text, ok ? "PASS" : "MISS");
  }

  void w2(std::FILE* out) const {
    const Result* f = find("BM_W2_ff");
    const Result* h = find("BM_W2_hand_loop");
    const double bytes = static_cast<double>(g_options.w2_size) * 8;
    auto line = [&](const char* what, const Result* r) {
      if (!r) {
        return;
      }
      if (!r->error.empty()) {
        print(out, what, "ERROR: " + r->error, "", "ERROR");
        return;
      }
      char value[64];
      std::snprintf(value, sizeof value, "%.3f ms, %.1f GB/s", seconds(*r) * 1e3,
                    bytes / seconds(*r) * 1e-9);
      print(out, what, value, "", "");
    };
    line("W2 bandwidth (ff)", f);
    line("W2 bandwidth (hand loop)", h);
    if (f && h && f->error.empty() && h->error.empty()) {
      double ratio = seconds(*h) / seconds(*f);
      char value[64];
      std::snprintf(value, sizeof value, "%.3f (hand-loop time / ff time)", ratio);
      print(out, "W2 ratio", value, ">= 0.9", ratio >= 0.9 ? "PASS" : "MISS");
      std::fprintf(out, "W2 ratio: %.3f\n", ratio);
    }
  }

  std::map<std::string, Result> results_;
  bool any_error_ = false;

 public:
  /// True when a benchmark failed (wrong result, exception): the process then exits 1.
  bool any_error() const { return any_error_; }
};

// Removes --ff_* flags from argv (Google Benchmark rejects unknown flags) into g_options.
void parse_own_flags(int* argc, char** argv) {
  int out = 1;
  for (int i = 1; i < *argc; ++i) {
    const char* a = argv[i];
    if (std::strncmp(a, "--ff_w2_size=", 13) == 0) {
      g_options.w2_size = std::strtoull(a + 13, nullptr, 10);
    } else if (std::strncmp(a, "--ff_threads=", 13) == 0) {
      g_options.threads = std::atoi(a + 13);
    } else {
      argv[out++] = argv[i];
    }
  }
  *argc = out;
  argv[out] = nullptr;
}

bool has_flag(int argc, char** argv, const char* prefix) {
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], prefix, std::strlen(prefix)) == 0) {
      return true;
    }
  }
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  parse_own_flags(&argc, argv);
  std::vector<char*> args(argv, argv + argc);
  std::string reps = "--benchmark_repetitions=5";
  std::string aggregates = "--benchmark_report_aggregates_only=true";
  if (!has_flag(argc, argv, "--benchmark_repetitions")) {
    args.push_back(reps.data());
  }
  if (!has_flag(argc, argv, "--benchmark_report_aggregates_only") &&
      !has_flag(argc, argv, "--benchmark_display_aggregates_only")) {
    args.push_back(aggregates.data());
  }
  int n_args = static_cast<int>(args.size());
  args.push_back(nullptr);

  try {
    ff::init();
    benchmark::AddCustomContext("ff_backend", ff::backend_name());
    benchmark::AddCustomContext("w2_elements", std::to_string(g_options.w2_size));
    benchmark::AddCustomContext("hand_loop_threads",
                                std::to_string(ff_bench::hand_loop_threads(g_options.threads)));

    benchmark::Initialize(&n_args, args.data());
    if (benchmark::ReportUnrecognizedArguments(n_args, args.data())) {
      return 2;
    }
    benchmark::RegisterBenchmark("BM_W1_overhead", guarded<BM_W1_overhead>)
        ->Unit(benchmark::kMicrosecond)
        ->UseRealTime();
    benchmark::RegisterBenchmark("BM_W3_per_kernel", guarded<BM_W3_per_kernel>)
        ->Unit(benchmark::kMicrosecond)
        ->UseRealTime();
    benchmark::RegisterBenchmark("BM_W2_ff", guarded<BM_W2_ff>)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
    benchmark::RegisterBenchmark("BM_W2_hand_loop", guarded<BM_W2_hand_loop>)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();

    // A reporter passed in ignores --benchmark_color: decide here.
    bool color = isatty(STDOUT_FILENO) != 0;
    for (int i = 1; i < argc; ++i) {
      if (std::strncmp(argv[i], "--benchmark_color=", 18) == 0) {
        std::string v = argv[i] + 18;
        color = v == "true" || v == "yes" || v == "1" || (v == "auto" && color);
      }
    }
    SummaryReporter reporter(color);
    size_t n_run = benchmark::RunSpecifiedBenchmarks(&reporter);
    benchmark::Shutdown();
    ff::shutdown();
    if (n_run == 0) {
      std::fprintf(stderr, "ff_bench: no benchmark matched the filter\n");
      return 1;
    }
    if (reporter.any_error()) {
      std::fprintf(stderr, "ff_bench: a benchmark reported an error\n");
      return 1;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ff_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
