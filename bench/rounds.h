// Side-by-side timing in rounds: each benchmark iteration calls every side once, in an order
// that turns each round, and each timed call follows an untimed call of the same kind (so the
// pool threads, the allocator's cached blocks and the caches are those of a loop calling it
// repeatedly, and no side pays for the one before it). Ratios are then taken within a round:
// on a shared machine the speed drifts between seconds, not within one round.
#pragma once

#include <benchmark/benchmark.h>

#include <array>
#include <chrono>
#include <cstddef>
#include <functional>
#include <utility>
#include <vector>

#include "workloads.h"

namespace ff_bench {

/// Runs the rounds over the first `n_sides` of `sides`; an iteration's time is the sum of its
/// round's timed calls. Returns each round's times in seconds (sides not run stay 0).
template <size_t N>
std::vector<std::array<double, N>> run_rounds(benchmark::State& st,
                                              const std::array<std::function<void()>, N>& sides,
                                              size_t n_sides = N) {
  using Clock = std::chrono::steady_clock;
  std::vector<std::array<double, N>> rounds;
  for (auto _ : st) {
    std::array<double, N> t{};
    double sum = 0;
    for (size_t k = 0; k < n_sides; ++k) {
      size_t s = (rounds.size() + k) % n_sides;
      sides[s]();  // untimed: the same kind of call just before
      auto t0 = Clock::now();
      sides[s]();
      t[s] = std::chrono::duration<double>(Clock::now() - t0).count();
      sum += t[s];
    }
    st.SetIterationTime(sum);
    rounds.push_back(t);
  }
  return rounds;
}

/// The median over the rounds of per_round(a round's times).
template <size_t N, class F>
double median_over(const std::vector<std::array<double, N>>& rounds, F&& per_round) {
  std::vector<double> v;
  v.reserve(rounds.size());
  for (const auto& t : rounds)
    v.push_back(per_round(t));
  return median(std::move(v));
}

}  // namespace ff_bench
