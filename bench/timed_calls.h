// Timing freezeframe calls so that what is timed is also checked, shared by ff_bench and
// ff_bench_replay: a checked untimed warm-up call, the result of timed calls compared with the
// host reference, and the steady state of the backend's counters over the timed loop.
#pragma once

#include <benchmark/benchmark.h>
#include <freezeframe/freezeframe.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "chain.h"
#include "workloads.h"

namespace ff_bench {

/// Fails the benchmark (and returns false) unless the untimed warm-up result `y` of `n_ops`
/// chain ops on cached_input(n) is right.
inline bool check_warm_up(benchmark::State& st, const ff::Float& y, size_t n, int n_ops) {
  if (std::string err = check_result(y, cached_reference(n, n_ops)); !err.empty()) {
    st.SkipWithError(("wrong result of the warm-up call: " + err).c_str());
    return false;
  }
  return true;
}

/// For benchmarks registered with UseManualTime: runs `call()` (which returns the result,
/// synced) once per iteration, timed from its start through the release of its result; the
/// check of every result against `want`, in between, is not timed. Stops with an error at the
/// first wrong result. Returns the seconds timed in all.
template <class Call>
double time_checked_calls(benchmark::State& st, const std::vector<float>& want, Call&& call) {
  using Clock = std::chrono::steady_clock;
  auto since = [](Clock::time_point t0) {
    return std::chrono::duration<double>(Clock::now() - t0).count();
  };
  double total = 0;
  for (auto _ : st) {
    auto t0 = Clock::now();
    ff::Float y = call();
    double seconds = since(t0);
    std::string err = check_result(y, want);
    t0 = Clock::now();
    y = ff::Float();
    seconds += since(t0);
    st.SetIterationTime(seconds);
    total += seconds;
    if (!err.empty()) {
      st.SkipWithError(("wrong result of a timed call: " + err).c_str());
      break;
    }
  }
  return total;
}

/// For benchmarks of large arrays, where checking every call would take longer than the call:
/// runs `call()` once per iteration, each result released before the next call (as a loop
/// overwriting its result does), and checks the result of the last timed call.
template <class Call>
void time_calls_check_last(benchmark::State& st, const std::vector<float>& want, Call&& call) {
  ff::Float last;
  for (auto _ : st) {
    last = ff::Float();
    last = call();
  }
  if (std::string err = check_result(last, want); !err.empty()) {
    st.SkipWithError(("wrong result of the last timed call: " + err).c_str());
  }
}

/// Fails the benchmark unless the timed loop since `before` compiled nothing and launched
/// exactly `launches_per_call` kernels per call (counters: launches per call, compiles).
inline void require_steady_state(benchmark::State& st, const ff::Stats& before,
                                 uint64_t launches_per_call) {
  const ff::Stats after = ff::stats();
  st.counters["launches"] = static_cast<double>(after.launches - before.launches) /
                            static_cast<double>(std::max<int64_t>(st.iterations(), 1));
  st.counters["compiles"] = static_cast<double>(after.compiles - before.compiles);
  if (std::string err = check_steady_state(before, after, static_cast<uint64_t>(st.iterations()),
                                           launches_per_call);
      !err.empty()) {
    st.SkipWithError(err.c_str());
  }
}

}  // namespace ff_bench
