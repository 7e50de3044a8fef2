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
// checked.
#pragma once

#include <benchmark/benchmark.h>
#include <freezeframe/freezeframe.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "baselines.h"
#include "chain.h"
#include "hand_loop.h"
#include "timed_calls.h"
#include "workloads.h"

namespace ff_bench {

/// One benchmark iteration is one round of the four sides. Counters: the medians of the
/// per-round times (ms_traced, ms_replay, ms_hand, ms_copy) and ratios (hand_over_traced,
/// hand_over_replay: hand-loop time / ff time; copy_over_traced, copy_over_replay: copy time /
/// ff time, 1 = the memory limit).
inline void bm_w2_side_by_side(benchmark::State& st, size_t n, int threads) {
  using Clock = std::chrono::steady_clock;
  ff::Float x = upload(n);
  ff::Recording rec = record_chain(x, kW2Ops, kW2Ops, /*optimize=*/true);
  const std::vector<ff::AnyArray> in{ff::AnyArray(x)};
  const std::vector<float>& host_x = cached_input(n);
  std::vector<float> host_out(n);
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
      hand_loop_w2_serial(host_x.data(), host_out.data(), n);
    else
      ran = std::min(ran, hand_loop_w2(host_x.data(), host_out.data(), n, threads));
    benchmark::ClobberMemory();
  };
  auto copy = [&] {
    ran = std::min(ran, copy_loop(host_x.data(), host_out.data(), n, threads));
    benchmark::ClobberMemory();
  };
  auto timed = [](auto&& side) {
    side();  // untimed: the same kind of call just before
    auto t0 = Clock::now();
    side();
    return std::chrono::duration<double>(Clock::now() - t0).count();
  };

  traced();
  if (!check_warm_up(st, traced_y, n, kW2Ops))
    return;
  std::vector<double> t_traced, t_replay, t_hand, t_copy;
  std::vector<double> hand_traced, hand_replay, copy_traced, copy_replay;
  bool hand_ok = true, copy_ok = true;
  for (auto _ : st) {
    // The order turns each round, so no side always runs after the same one.
    double t[4] = {0, 0, 0, 0};
    const int first = static_cast<int>(t_traced.size() % 4);
    for (int k = 0; k < 4; ++k) {
      switch ((first + k) % 4) {
        case 0:
          t[0] = timed(traced);
          break;
        case 1:
          t[1] = timed(replayed);
          break;
        case 2:
          t[2] = timed(hand);
          hand_ok = hand_ok && compare(host_out, timed_reference(n, kW2Ops)).empty();
          break;
        default:
          t[3] = timed(copy);
          copy_ok = copy_ok && compare(host_out, timed_reference(n, 0)).empty();
          break;
      }
    }
    st.SetIterationTime(t[0] + t[1] + t[2] + t[3]);
    t_traced.push_back(t[0]);
    t_replay.push_back(t[1]);
    t_hand.push_back(t[2]);
    t_copy.push_back(t[3]);
    hand_traced.push_back(t[2] / t[0]);
    hand_replay.push_back(t[2] / t[1]);
    copy_traced.push_back(t[3] / t[0]);
    copy_replay.push_back(t[3] / t[1]);
  }
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
  if (!hand_ok || !copy_ok) {
    st.SkipWithError(hand_ok ? "wrong result of a copy loop" : "wrong result of a hand loop");
    return;
  }
  st.counters["ms_traced"] = median(t_traced) * 1e3;
  st.counters["ms_replay"] = median(t_replay) * 1e3;
  st.counters["ms_hand"] = median(t_hand) * 1e3;
  st.counters["ms_copy"] = median(t_copy) * 1e3;
  st.counters["hand_over_traced"] = median(hand_traced);
  st.counters["hand_over_replay"] = median(hand_replay);
  st.counters["copy_over_traced"] = median(copy_traced);
  st.counters["copy_over_replay"] = median(copy_replay);
}

}  // namespace ff_bench
