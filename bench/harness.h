// What the Google Benchmark mains share: the command line (own --ff_* flags taken out, defaults
// that the user's flags override), OpenMP's wait policy, and a console reporter that keeps each
// benchmark's median and remembers failures, so a wrong result ends in exit status 1.
#pragma once

#include <benchmark/benchmark.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "chain.h"

namespace ff_bench {

/// Runs this program again with OMP_WAIT_POLICY=passive when the variable is unset (a value
/// the user set is kept). libgomp reads it when it is loaded, before main, so setenv() alone
/// would come too late. With the default policy its idle threads spin after every loop and
/// slow whatever runs next on the same cores (freezeframe's launches, on a 2-core machine).
inline void run_with_passive_openmp(char** argv) {
  if (std::getenv("OMP_WAIT_POLICY") != nullptr) {
    return;
  }
  setenv("OMP_WAIT_POLICY", "passive", 1);
  execv("/proc/self/exe", argv);
  std::perror("benchmark: cannot re-run itself with OMP_WAIT_POLICY=passive (execv)");
  std::exit(1);
}

/// The command line of a benchmark main. Own flags (--ff_*) are taken out, since Google
/// Benchmark rejects flags it does not know; defaults are added for flags the user did not
/// give. The user's flags always win.
class CommandLine {
 public:
  CommandLine(int argc, char** argv) : args_(argv, argv + argc) {}

  /// Removes every --<name>=value and returns the last value, if any.
  std::optional<std::string> take(std::string_view name) {
    std::optional<std::string> value;
    const std::string prefix = "--" + std::string(name) + "=";
    std::erase_if(args_, [&](const std::string& a) {
      if (a.rfind(prefix, 0) != 0) {
        return false;
      }
      value = a.substr(prefix.size());
      return true;
    });
    return value;
  }

  /// Removes --<name> (a switch without value) and says whether it was there.
  bool take_switch(std::string_view name) {
    const std::string flag = "--" + std::string(name);
    return std::erase(args_, flag) > 0;
  }

  /// Whether --<name> or --<name>=... was given.
  bool has(std::string_view name) const {
    const std::string flag = "--" + std::string(name);
    return std::any_of(args_.begin() + 1, args_.end(), [&](const std::string& a) {
      return a == flag || a.rfind(flag + "=", 0) == 0;
    });
  }

  /// Adds --<name>=<value> unless the user gave --<name>.
  void default_to(std::string_view name, std::string_view value) {
    if (!has(name)) {
      args_.push_back("--" + std::string(name) + "=" + std::string(value));
    }
  }

  /// Hands the arguments to Google Benchmark; returns 2 (usage error) if some are unknown.
  int initialize_benchmark() {
    pointers_.clear();
    for (std::string& a : args_) {
      pointers_.push_back(a.data());
    }
    int n = static_cast<int>(pointers_.size());
    pointers_.push_back(nullptr);
    benchmark::Initialize(&n, pointers_.data());
    return benchmark::ReportUnrecognizedArguments(n, pointers_.data()) ? 2 : 0;
  }

  /// Colours on a terminal unless --benchmark_color says otherwise (a reporter passed to
  /// RunSpecifiedBenchmarks ignores the flag, so the mains decide here).
  bool color() const {
    bool on = isatty(STDOUT_FILENO) != 0;
    for (const std::string& a : args_) {
      if (a.rfind("--benchmark_color=", 0) == 0) {
        const std::string v = a.substr(18);
        on = v == "true" || v == "yes" || v == "1" || (v == "auto" && on);
      }
    }
    return on;
  }

 private:
  std::vector<std::string> args_;
  std::vector<char*> pointers_;
};

/// Threads for the OpenMP baselines: `flag` (--ff_threads) if positive, else FF_THREADS, else
/// every core, which is what freezeframe's pool uses by default.
inline int baseline_threads(const std::optional<std::string>& flag) {
  if (flag && std::atoi(flag->c_str()) > 0) {
    return std::atoi(flag->c_str());
  }
  if (const char* env = std::getenv("FF_THREADS"); env != nullptr && std::atoi(env) > 0) {
    return std::atoi(env);
  }
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

/// The console table as usual; besides, each benchmark's median (or its single run when there
/// are no repetitions) is kept for the summaries, and any error is remembered.
class Reporter : public benchmark::ConsoleReporter {
 public:
  struct Result {
    double seconds = 0;  // real (or manual) time per iteration
    std::map<std::string, double> counters;
    bool median = false;
    std::string error;

    double counter(const std::string& name) const {
      auto it = counters.find(name);
      return it == counters.end() ? -1 : it->second;
    }
  };

  explicit Reporter(bool color) : ConsoleReporter(color ? OO_ColorTabular : OO_Tabular) {}

  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& run : runs) {
      Result& r = results_[run.run_name.function_name];
      if (run.error_occurred) {
        any_error_ = true;
        r.error = run.error_message;  // sticks: a later good repetition does not hide it
        continue;
      }
      const bool is_median = run.run_type == Run::RT_Aggregate && run.aggregate_name == "median";
      if ((run.run_type == Run::RT_Aggregate && !is_median) || (r.median && !is_median)) {
        continue;
      }
      r.seconds = run.GetAdjustedRealTime() * unit_seconds(run.time_unit);
      r.median = is_median;
      r.counters.clear();
      for (const auto& [key, counter] : run.counters) {
        r.counters[key] = counter.value;
      }
    }
  }

  /// The benchmark's median (or single run); null when it did not run or failed.
  const Result* find(const std::string& name) const {
    auto it = results_.find(name);
    return it == results_.end() || !it->second.error.empty() ? nullptr : &it->second;
  }

  /// The error a benchmark reported, or "".
  std::string error(const std::string& name) const {
    auto it = results_.find(name);
    return it == results_.end() ? "" : it->second.error;
  }

  bool ran(const std::string& name) const { return results_.count(name) != 0; }

  /// The benchmarks that ran without an error.
  std::vector<std::string> passed() const {
    std::vector<std::string> names;
    for (const auto& [name, r] : results_) {
      if (r.error.empty()) {
        names.push_back(name);
      }
    }
    return names;
  }

  bool any_error() const { return any_error_; }

  bool any_median() const {
    return std::any_of(results_.begin(), results_.end(),
                       [](const auto& kv) { return kv.second.median; });
  }

 private:
  static double unit_seconds(benchmark::TimeUnit unit) {
    switch (unit) {
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

  std::map<std::string, Result> results_;
  bool any_error_ = false;
};

inline constexpr const char* kSelfTestContext =
    "--ff_expect_wrong: the checks of timed calls expect wrong values, so every benchmark "
    "must fail";

/// The exit status of a benchmark main: 1 when nothing matched the filter or a benchmark
/// reported an error (a wrong result, a broken steady state, an exception), else 0. With
/// --ff_expect_wrong every benchmark but those in `unchecked` (they have no result to check)
/// must have failed: then the status is 1 as usual, else 3 naming the ones that passed.
inline int exit_status(const char* program, size_t n_run, const Reporter& reporter,
                       const std::vector<std::string>& unchecked) {
  if (n_run == 0) {
    std::fprintf(stderr, "%s: no benchmark matched the filter\n", program);
    return 1;
  }
  if (g_expect_wrong) {
    std::vector<std::string> passed = reporter.passed();
    std::erase_if(passed, [&](const std::string& name) {
      return std::find(unchecked.begin(), unchecked.end(), name) != unchecked.end();
    });
    for (const std::string& name : passed) {
      std::fprintf(stderr, "%s: self-test: %s passed although its checks expected wrong values\n",
                   program, name.c_str());
    }
    if (!passed.empty()) {
      return 3;
    }
  }
  if (reporter.any_error()) {
    std::fprintf(stderr, "%s: a benchmark reported an error (see ERROR OCCURRED above)\n", program);
    return 1;
  }
  return 0;
}

/// Prints a warning when the machine ran other work meanwhile (timings are then unreliable).
inline void warn_if_busy(std::FILE* out) {
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

/// Runs a benchmark body, turning an exception into a reported error.
template <class Body>
void run_guarded(benchmark::State& st, Body&& body) {
  try {
    body();
  } catch (const std::exception& e) {
    st.SkipWithError((std::string("exception: ") + e.what()).c_str());
  }
}

template <void (*Body)(benchmark::State&)>
void guarded(benchmark::State& st) {
  run_guarded(st, [&] { Body(st); });
}

}  // namespace ff_bench
