// The hand-written baselines as benchmark bodies, shared by ff_bench and ff_bench_replay: W2's
// chain as an OpenMP loop (checked to have vectorised and to run on the threads asked for) and
// a plain copy loop, the machine's limit for W2's traffic (4 bytes read + 4 written per
// element) measured in the same run.
#pragma once

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

#include "chain.h"
#include "hand_loop.h"

namespace ff_bench {

/// The hand loop must beat its scalar twin by this factor on one thread, or the benchmark
/// fails: vector code does 8 (AVX2) or 16 (AVX-512) elements per instruction, a loop that did
/// not vectorise measures about 1.
inline constexpr double kMinVectorSpeedup = 2.0;

/// Whether a check of measured times fails the benchmark (else it only warns). The
/// bench-smoke tests set FF_BENCH_SMOKE=1: they must pass on any machine under any load, so
/// they check results and counts, never times.
inline bool timing_checks_fail() {
  const char* smoke = std::getenv("FF_BENCH_SMOKE");
  return smoke == nullptr || *smoke == '\0' || (smoke[0] == '0' && smoke[1] == '\0');
}

/// Elements of the vectorisation check: 2 x 128 KiB, cache-resident, so the code decides and
/// not the memory.
inline constexpr size_t kVectorCheckSize = 32768;

struct VectorCheck {
  double vector_elems_per_ns = 0;  // hand_loop_w2 on one thread
  double scalar_elems_per_ns = 0;  // hand_loop_w2_scalar

  double speedup() const { return vector_elems_per_ns / scalar_elems_per_ns; }
};

/// Times the hand loop used with `threads` threads (hand_loop_w2, or hand_loop_w2_serial for
/// one thread) on one thread against its scalar twin, best of 25 interleaved rounds of each
/// (the best is what the code can do; noise only adds time).
inline VectorCheck measure_vectorisation(int threads) {
  using Clock = std::chrono::steady_clock;
  const std::vector<float>& x = cached_input(kVectorCheckSize);
  std::vector<float> out(kVectorCheckSize);
  auto time_ns = [&](auto&& loop) {
    auto t0 = Clock::now();
    loop();
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
    return std::chrono::duration<double, std::nano>(Clock::now() - t0).count();
  };
  double vector_ns = std::numeric_limits<double>::infinity(), scalar_ns = vector_ns;
  for (int round = 0; round < 25; ++round) {
    vector_ns = std::min(vector_ns, time_ns([&] {
                           if (threads == 1) {
                             hand_loop_w2_serial(x.data(), out.data(), kVectorCheckSize);
                           } else {
                             hand_loop_w2(x.data(), out.data(), kVectorCheckSize, 1);
                           }
                         }));
    scalar_ns = std::min(
        scalar_ns, time_ns([&] { hand_loop_w2_scalar(x.data(), out.data(), kVectorCheckSize); }));
  }
  const auto n = static_cast<double>(kVectorCheckSize);
  return {n / vector_ns, n / scalar_ns};
}

/// W2 moves x in and y out: 8 bytes per element.
inline void set_w2_bytes(benchmark::State& st, size_t n) {
  st.SetBytesProcessed(static_cast<int64_t>(st.iterations()) * static_cast<int64_t>(n) * 8);
}

/// Shared body of the two OpenMP baselines: runs `loop(x, out, n, threads)` (which returns the
/// threads it ran on) once untimed, fails unless OpenMP ran it on `threads` threads, times
/// it, and checks the result of the last timed call against `want`.
template <class Loop>
void bm_openmp_loop(benchmark::State& st, size_t n, int threads, const std::vector<float>& want,
                    Loop loop) {
  const std::vector<float>& x = cached_input(n);
  std::vector<float> out(n);
  const int ran = loop(x.data(), out.data(), n, threads);  // also the first touch of `out`
  st.counters["threads"] = ran;
  if (ran != threads) {
    st.SkipWithError(("OpenMP ran the loop on " + std::to_string(ran) + " threads, " +
                      std::to_string(threads) + " asked for (OMP_THREAD_LIMIT? OMP_DYNAMIC?)")
                         .c_str());
    return;
  }
  for (auto _ : st) {
    loop(x.data(), out.data(), n, threads);
    benchmark::ClobberMemory();
  }
  if (std::string err = compare(out, want); !err.empty()) {
    st.SkipWithError(("wrong result of the timed calls: " + err).c_str());
    return;
  }
  set_w2_bytes(st, n);
}

/// W2's hand loop on `threads` OpenMP threads (hand_loop_w2_serial for one) over n elements;
/// before that, the vectorisation check (counters vector_speedup and, on one thread, vector
/// and scalar elements per ns and per nominal cycle). It compares times, so under
/// FF_BENCH_SMOKE a miss is a warning on stderr, not an error.
inline void bm_w2_hand_loop(benchmark::State& st, size_t n, int threads) {
  const VectorCheck v = measure_vectorisation(threads);
  st.counters["vector_speedup"] = v.speedup();
  st.counters["elems_per_ns_1t"] = v.vector_elems_per_ns;
  st.counters["scalar_elems_per_ns_1t"] = v.scalar_elems_per_ns;
  const double ghz = benchmark::CPUInfo::Get().cycles_per_second * 1e-9;
  st.counters["elems_per_cycle_1t"] = v.vector_elems_per_ns / ghz;
  if (!(v.speedup() >= kMinVectorSpeedup)) {
    char msg[200];
    std::snprintf(msg, sizeof msg,
                  "the hand loop did not vectorise: on one thread it is %.2fx its scalar twin "
                  "(needs >= %.1fx); check hand_loop.cpp's compile flags",
                  v.speedup(), kMinVectorSpeedup);
    if (timing_checks_fail()) {
      st.SkipWithError(msg);
      return;
    }
    std::fprintf(stderr, "warning: %s (FF_BENCH_SMOKE: a smoke test does not fail on times)\n",
                 msg);
  }
  if (threads == 1) {
    bm_openmp_loop(st, n, 1, timed_reference(n, kW2Ops),
                   [](const float* x, float* out, size_t count, int) {
                     hand_loop_w2_serial(x, out, count);
                     return 1;
                   });
  } else {
    bm_openmp_loop(st, n, threads, timed_reference(n, kW2Ops), hand_loop_w2);
  }
}

/// out[i] = x[i] on `threads` OpenMP threads: the memory limit for W2's traffic.
inline void bm_copy_loop(benchmark::State& st, size_t n, int threads) {
  bm_openmp_loop(st, n, threads, timed_reference(n, 0), copy_loop);
}

}  // namespace ff_bench
