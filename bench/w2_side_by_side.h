// W2 side by side: the traced chain, its replay, the hand loop and the copy loop timed in turn,
// round after round, and each ratio taken within a round. On a shared machine the memory
// bandwidth left to us drifts by 30% between seconds (a neighbour's traffic); separate
// benchmarks, even interleaved by repetition, then compare different machines. Within one
// round the four calls run within ~10 ms of each other, so the median of the per-round ratios
// measures the code, not the neighbours.
//
// Each timed call follows an untimed call of the same kind: the spinning pool threads, the
// allocator's cached blocks and the caches are then those of a loop calling it repeatedly,
// and no side pays for the one before it (an ff pool thread still spinning during an OpenMP
// loop, or OpenMP's threads waking for ff). The result of each side's last timed call is
// checked (each loop writes its own output).
#pragma once

#include <benchmark/benchmark.h>
#include <freezeframe/freezeframe.h>

#include <algorithm>
#include <array>
#include <functional>
#include <string>
#include <tuple>
#include <vector>

#include "baselines.h"
#include "chain.h"
#include "hand_loop.h"
#include "rounds.h"
#include "timed_calls.h"
#include "workloads.h"

namespace ff_bench {

/// One benchmark iteration is one round of the four sides. Counters: the medians of the
/// per-round times (ms_traced, ms_replay, ms_hand, ms_copy) and ratios (hand_over_traced,
/// hand_over_replay: hand-loop time / ff time; copy_over_traced, copy_over_replay: copy time /
/// ff time, 1 = the memory limit).
inline void bm_w2_side_by_side(benchmark::State& st, size_t n, int threads) {
  ff::Float x = upload(n);
  ff::Recording rec = record_chain(x, kW2Ops, kW2Ops, /*optimize=*/true);
  const std::vector<ff::AnyArray> in{ff::AnyArray(x)};
  const std::vector<float>& host_x = cached_input(n);
  std::vector<float> hand_out(n), copy_out(n);  // each loop's own, checked after the last round
  ff::Float traced_y, replayed_y;

  auto traced = [&] {
    traced_y = ff::Float();
    traced_y = run_chain(x, kW2Ops, kW2Ops);
    ff::sync();
  };
  auto replayed = [&] {
    replayed_y = ff::Float();
    replayed_y = rec.replay(in)[0].as<ff::Float>();
    ff::sync();
  };
  int ran = threads;  // the fewest threads an OpenMP loop ran on
  auto hand = [&] {
    if (threads == 1)
      hand_loop_w2_serial(host_x.data(), hand_out.data(), n);
    else
      ran = std::min(ran, hand_loop_w2(host_x.data(), hand_out.data(), n, threads));
    benchmark::ClobberMemory();
  };
  auto copy = [&] {
    ran = std::min(ran, copy_loop(host_x.data(), copy_out.data(), n, threads));
    benchmark::ClobberMemory();
  };
  traced();
  if (!check_warm_up(st, traced_y, n, kW2Ops))
    return;

  enum Side { kTraced, kReplayed, kHand, kCopy, kSides };

  const std::array<std::function<void()>, kSides> sides = {traced, replayed, hand, copy};
  const auto rounds = run_rounds(st, sides);
  for (auto [what, y] : {std::pair{"traced", &traced_y}, {"replayed", &replayed_y}})
    if (std::string err = check_result(*y, timed_reference(n, kW2Ops)); !err.empty()) {
      st.SkipWithError(("wrong result of the last " + std::string(what) + " call: " + err).c_str());
      return;
    }
  if (ran != threads) {  // as bm_openmp_loop refuses it: a baseline on fewer threads flatters us
    st.SkipWithError(("OpenMP ran a baseline on " + std::to_string(ran) + " threads, " +
                      std::to_string(threads) + " asked for")
                         .c_str());
    return;
  }
  for (auto [what, out, n_ops] : {std::tuple{"hand", &hand_out, kW2Ops}, {"copy", &copy_out, 0}})
    if (std::string err = compare(*out, timed_reference(n, n_ops)); !err.empty()) {
      st.SkipWithError(("wrong result of the last " + std::string(what) + " loop: " + err).c_str());
      return;
    }
  // Medians over the rounds of a side's time (ms) or of one side's time over another's.
  auto median_of = [&](auto per_round, double scale = 1) {
    return median_over(rounds, per_round) * scale;
  };
  auto time_of = [](Side s) { return [s](const auto& t) { return t[s]; }; };
  auto ratio = [](Side a, Side b) { return [a, b](const auto& t) { return t[a] / t[b]; }; };
  st.counters["ms_traced"] = median_of(time_of(kTraced), 1e3);
  st.counters["ms_replay"] = median_of(time_of(kReplayed), 1e3);
  st.counters["ms_hand"] = median_of(time_of(kHand), 1e3);
  st.counters["ms_copy"] = median_of(time_of(kCopy), 1e3);
  st.counters["hand_over_traced"] = median_of(ratio(kHand, kTraced));
  st.counters["hand_over_replay"] = median_of(ratio(kHand, kReplayed));
  st.counters["copy_over_traced"] = median_of(ratio(kCopy, kTraced));
  st.counters["copy_over_replay"] = median_of(ratio(kCopy, kReplayed));
}

}  // namespace ff_bench
