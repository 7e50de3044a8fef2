// scatter_add against the loops a C++ programmer writes (scatter_loops.h), side by side: each
// benchmark iteration is one round of every side, each timed call after an untimed one of the
// same kind, and the ratios are medians of the per-round ratios (a shared machine's speed
// drifts between seconds; within one round it is the same machine).
//
//   BM_histogram_t<threads>: 2^16 float weights into 1,024 bins. ff frozen and traced against
//     the serial loop and (2+ threads) the OpenMP loop with private histograms.
//   BM_random_t<threads>: 10^6 values into 10^6 random bins, against the serial loop.
//
// freezeframe runs on <threads> pool threads (ff::init with InitOptions::threads), the OpenMP
// loop on as many. Targets (issue 19): histogram serial/frozen >= 1 on 1 thread and >= 1.5 on
// 2, openmp/frozen >= 1 on 2; random serial/frozen >= 0.8. Own flags: --ff_expect_wrong,
// --ff_hist_size=N (the histogram's values; the smoke test's shorter run),
// --ff_hist_bins=N (its bins).
#include <benchmark/benchmark.h>
#include <freezeframe/freezeframe.h>

#include <array>
#include <cstdio>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "chain.h"
#include "harness.h"
#include "rounds.h"
#include "scatter_loops.h"
#include "workloads.h"

namespace {

size_t g_hist_size = size_t{1} << 16;
size_t g_hist_bins = 1024;
constexpr size_t kRandomSize = 1000000;

enum Side { kFrozen, kTraced, kSerial, kOpenmp, kSides };

constexpr const char* kSideNames[kSides] = {"frozen", "traced", "serial", "openmp"};

ff::Float histogram(const ff::Float& w, const ff::UInt32& idx, uint32_t bins) {
  ff::Float h = ff::zeros<ff::Float>(bins);
  ff::scatter_add(h, w, idx);
  return h;
}

// Weights 1..4 (float sums of them stay exact in any order) and indices below `bins`.
struct Input {
  std::vector<float> w;
  std::vector<uint32_t> idx;
};

Input make_input(size_t n, size_t bins, uint32_t seed) {
  Input in{std::vector<float>(n), std::vector<uint32_t>(n)};
  std::mt19937 rng(seed);
  for (size_t i = 0; i < n; ++i) {
    in.w[i] = float(1 + i % 4);
    in.idx[i] = uint32_t(rng() % bins);
  }
  return in;
}

std::string compare(const std::vector<float>& got, const std::vector<float>& want) {
  if (got.size() != want.size())
    return "size " + std::to_string(got.size()) + ", want " + std::to_string(want.size());
  for (size_t i = 0; i < got.size(); ++i)
    if (got[i] != want[i])
      return "bin " + std::to_string(i) + " is " + std::to_string(got[i]) + ", want " +
             std::to_string(want[i]);
  return "";
}

void bm_scatter(benchmark::State& st, size_t n, size_t bins, int threads, bool with_openmp) {
  ff::init("llvm", ff::InitOptions{unsigned(threads)});
  const Input in = make_input(n, bins, uint32_t(n + bins));
  std::vector<float> want(bins, 0.0f);
  for (size_t i = 0; i < n; ++i)
    want[in.idx[i]] += in.w[i];
  for (float& v : want)
    v = ff_bench::timed_expectation(v);

  const ff::Float w = ff::Float::from(in.w);
  const ff::UInt32 idx = ff::UInt32::from(in.idx);
  ff::eval(w, idx);
  const uint32_t b32 = uint32_t(bins);
  auto frozen_fn = ff::freeze(histogram);
  ff::Float frozen_h, traced_h;
  std::vector<float> serial_h(bins), openmp_h(bins);
  int ran = threads;
  std::array<std::function<void()>, kSides> sides = {
      [&] {
        frozen_h = ff::Float();
        frozen_h = frozen_fn(w, idx, b32);
        ff::sync();
      },
      [&] {
        traced_h = ff::Float();
        traced_h = histogram(w, idx, b32);
        ff::eval(traced_h);
        ff::sync();
      },
      [&] {
        ff_bench::histogram_serial(in.idx.data(), in.w.data(), n, serial_h.data(), bins);
        benchmark::ClobberMemory();
      },
      [&] {
        ran = std::min(ran, ff_bench::histogram_openmp(in.idx.data(), in.w.data(), n,
                                                       openmp_h.data(), bins, threads));
        benchmark::ClobberMemory();
      }};
  const int n_sides = with_openmp ? kSides : kOpenmp;

  const auto rounds = ff_bench::run_rounds(st, sides, size_t(n_sides));
  std::vector<float> got[kSides] = {frozen_h.to_vector(), traced_h.to_vector(), serial_h, openmp_h};
  for (int s = 0; s < n_sides; ++s)
    if (std::string err = compare(got[s], want); !err.empty()) {
      st.SkipWithError(
          ("wrong result of the last " + std::string(kSideNames[s]) + " timed call: " + err)
              .c_str());
      return;
    }
  if (with_openmp && ran != threads) {  // a baseline on fewer threads would flatter us
    st.SkipWithError(("OpenMP ran on " + std::to_string(ran) + " threads, " +
                      std::to_string(threads) + " asked for")
                         .c_str());
    return;
  }
  auto median_of = [&](auto per_round) { return ff_bench::median_over(rounds, per_round); };
  for (int s = 0; s < n_sides; ++s)
    st.counters[std::string("us_") + kSideNames[s]] =
        median_of([s](const auto& t) { return t[s] * 1e6; });
  for (int base : {kSerial, kOpenmp})
    for (int s : {kFrozen, kTraced})
      if (base < n_sides)
        st.counters[std::string(kSideNames[base]) + "_over_" + kSideNames[s]] =
            median_of([=](const auto& t) { return t[base] / t[s]; });
}

void BM_histogram_t1(benchmark::State& st) {
  bm_scatter(st, g_hist_size, g_hist_bins, 1, false);
}

void BM_histogram_t2(benchmark::State& st) {
  bm_scatter(st, g_hist_size, g_hist_bins, 2, true);
}

void BM_random_t1(benchmark::State& st) {
  bm_scatter(st, kRandomSize, kRandomSize, 1, false);
}

void BM_random_t2(benchmark::State& st) {
  bm_scatter(st, kRandomSize, kRandomSize, 2, false);
}

class Summary : public ff_bench::Reporter {
 public:
  using Reporter::Reporter;

  void Finalize() override {
    Reporter::Finalize();
    std::printf("\nscatter_add summary (%s; ratio = baseline time / ff time)\n",
                any_median() ? "medians of per-round ratios" : "single runs");

    struct Target {
      const char* bench;
      const char* ratio;
      double at_least;
    };

    for (Target t : {Target{"BM_histogram_t1", "serial_over_frozen", 1.0},
                     {"BM_histogram_t1", "serial_over_traced", 0},
                     {"BM_histogram_t2", "serial_over_frozen", 1.5},
                     {"BM_histogram_t2", "serial_over_traced", 0},
                     {"BM_histogram_t2", "openmp_over_frozen", 1.0},
                     {"BM_histogram_t2", "openmp_over_traced", 0},
                     {"BM_random_t1", "serial_over_frozen", 0.8},
                     {"BM_random_t2", "serial_over_frozen", 0.8},
                     {"BM_random_t2", "serial_over_traced", 0}}) {
      const Result* r = find(t.bench);
      if (!r)
        continue;
      double v = r->counter(t.ratio);
      if (t.at_least > 0)
        std::printf("%-16s %-20s %6.3f (target >= %.1f)%s\n", t.bench, t.ratio, v, t.at_least,
                    v >= t.at_least ? "" : "  MISSED");
      else
        std::printf("%-16s %-20s %6.3f\n", t.bench, t.ratio, v);
    }
    ff_bench::warn_if_busy(stdout);
  }
};

}  // namespace

int main(int argc, char** argv) {
  ff_bench::run_with_passive_openmp(argv);
  ff_bench::CommandLine cl(argc, argv);
  ff_bench::g_expect_wrong = cl.take_switch("ff_expect_wrong");
  if (auto s = cl.take("ff_hist_size"))
    g_hist_size = size_t(std::stoull(*s));
  if (auto s = cl.take("ff_hist_bins"))
    g_hist_bins = size_t(std::stoull(*s));
  cl.default_to("benchmark_repetitions", "5");
  if (!cl.has("benchmark_display_aggregates_only"))
    cl.default_to("benchmark_report_aggregates_only", "true");
  try {
    if (ff_bench::g_expect_wrong)
      benchmark::AddCustomContext("self_test", ff_bench::kSelfTestContext);
    if (int status = cl.initialize_benchmark(); status != 0)
      return status;
    using ff_bench::guarded;
    for (auto [name, fn] : {std::pair{"BM_histogram_t1", &guarded<BM_histogram_t1>},
                            {"BM_histogram_t2", &guarded<BM_histogram_t2>},
                            {"BM_random_t1", &guarded<BM_random_t1>},
                            {"BM_random_t2", &guarded<BM_random_t2>}})
      benchmark::RegisterBenchmark(name, fn)->UseManualTime();
    Summary reporter(cl.color());
    const size_t n_run = benchmark::RunSpecifiedBenchmarks(&reporter);
    benchmark::Shutdown();
    ff::shutdown();
    return ff_bench::exit_status("ff_bench_scatter", n_run, reporter, {});
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ff_bench_scatter: %s\n", e.what());
    return 1;
  }
}
