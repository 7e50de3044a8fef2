// The workloads shared by the benchmarks (ff_bench, ff_bench_coldstart, ff_bench_replay,
// ff_bench_freeze): the traced chain, its input and its recording.
#pragma once

#include <freezeframe/freezeframe.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "chain.h"

namespace ff_bench {

/// The median of `v` (the mean of the middle two for an even count); -1 when empty.
inline double median(std::vector<double> v) {
  if (v.empty()) {
    return -1;
  }
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/// Traces `n_ops` chain ops starting from y = x, evaluating y every `eval_every` ops (and at
/// the end). Returns y; the caller syncs.
inline ff::Float run_chain(const ff::Float& x, int n_ops, int eval_every) {
  ff::Float y = x;
  for (int k = 0; k < n_ops; ++k) {
    y = chain_op(k, y, x);
    if ((k + 1) % eval_every == 0 || k + 1 == n_ops) {
      ff::eval(y);
    }
  }
  return y;
}

/// cached_input(n) as an evaluated array, synced: the input of the timed calls.
inline ff::Float upload(size_t n) {
  ff::Float x = ff::Float::from(cached_input(n));
  ff::eval(x);
  ff::sync();
  return x;
}

/// Records run_chain once for input x (its inputs: x; its output: the chain's result).
inline ff::Recording record_chain(const ff::Float& x, int n_ops, int eval_every,
                                  bool optimize = true) {
  return ff::record(
      {ff::AnyArray(x)},
      [&] { return std::vector<ff::AnyArray>{ff::AnyArray(run_chain(x, n_ops, eval_every))}; },
      ff::RecordOptions{optimize});
}

/// Kernel launches of one replay of a chain's optimised recording: the optimiser fuses the
/// whole chain (one size, each eval reads the previous one's result at its own element) into
/// one kernel (docs/optimizer.md; chains of the benchmarks stay below its size limit).
constexpr uint64_t kFusedLaunchesPerCall = 1;

/// Kernel launches of one call of a chain: one per eval.
constexpr uint64_t launches_per_call(int n_ops, int eval_every) {
  return static_cast<uint64_t>((n_ops + eval_every - 1) / eval_every);
}

/// Compares y with what is expected; returns "" or a description of the first mismatch.
inline std::string check_result(const ff::Float& y, const std::vector<float>& want) {
  return compare(y.to_vector(), want);
}

/// Compares y with the host reference of `n_ops` chain ops on x.
inline std::string check_chain(const ff::Float& y, const std::vector<float>& x, int n_ops) {
  return check_result(y, reference(x, n_ops));
}

/// Checks the backend's counters over a timed loop of `calls` calls against the steady state:
/// nothing compiled, exactly `launches_per_call` launches per call. Returns "" or what
/// differs. Stats::compiles counts kernel cache misses only, each made on the thread that
/// asked for the kernel: the llvm backend's re-compile of a hot kernel at its optimised tier
/// (on its tier-up thread, finishing whenever it does) is not one, so neither the machine's
/// load nor the length of the loop decides this check. The caller's untimed warm-up call
/// must have compiled what the loop needs; a call that compiles again every time fails it.
inline std::string check_steady_state(const ff::Stats& before, const ff::Stats& after,
                                      uint64_t calls, uint64_t launches_per_call) {
  const uint64_t compiles = after.compiles - before.compiles;
  const uint64_t launches = after.launches - before.launches;
  if (compiles != 0) {
    return "not in a steady state: " + std::to_string(compiles) + " kernels compiled in " +
           std::to_string(calls) + " timed calls";
  }
  if (launches != calls * launches_per_call) {
    return "not in a steady state: " + std::to_string(launches) + " launches in " +
           std::to_string(calls) + " timed calls, expected " + std::to_string(launches_per_call) +
           " per call";
  }
  return {};
}

}  // namespace ff_bench
