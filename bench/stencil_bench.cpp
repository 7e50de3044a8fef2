// The 5-point heat stencil (examples/heat_step.h: gathers at the element index -1, +1, -n, +n,
// boundary cells fixed) on an n x n float plate, default 2048 x 2048, side by side in one run:
//   BM_heat_hand     the hand-written OpenMP loop over rows (examples/heat_loop.cpp, built with
//                    -O3 -march=native -fno-math-errno -fno-trapping-math, see CMakeLists.txt)
//                    on the threads freezeframe's pool uses;
//   BM_heat_frozen   ff::freeze(heat::step): every call replays the recording, one kernel;
//   BM_heat_traced   heat::step traced on every call (the kernel comes from the cache).
// Each call reads the same plate and writes a new one (the timing of one step); the result of
// the last timed call is checked against heat::reference_step. The summary prints ms per step
// and hand/ff (target >= 0.8: the stencil's gathers become contiguous vector loads).
// Own flags: --ff_side=N (the plate's side), --ff_threads=T (the OpenMP loop's threads; default
// FF_THREADS, else every core), --ff_expect_wrong (see ff_bench.cpp). Defaults unless given:
// --benchmark_repetitions=9 --benchmark_enable_random_interleaving=true
// --benchmark_report_aggregates_only=true.
#include <benchmark/benchmark.h>
#include <freezeframe/freezeframe.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "chain.h"
#include "examples/heat_step.h"
#include "harness.h"
#include "timed_calls.h"

namespace {

uint32_t g_side = 2048;
int g_threads = 1;

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// A plate with structure everywhere (no constant regions a cache could flatter): a smooth
// pattern plus a hot square.
const std::vector<float>& plate() {
  static std::vector<float> u = [] {
    std::vector<float> v(size_t(g_side) * g_side);
    for (uint32_t y = 0; y < g_side; ++y)
      for (uint32_t x = 0; x < g_side; ++x)
        v[size_t(y) * g_side + x] =
            static_cast<float>((x * 7 + y * 13) % 101) +
            (x > g_side / 4 && x < g_side / 2 && y > g_side / 4 ? 100.f : 0.f);
    return v;
  }();
  return u;
}

// heat::reference_step of the plate, as the checks of timed calls expect it.
const std::vector<float>& want() {
  static std::vector<float> w = [] {
    std::vector<float> next(plate().size());
    heat::reference_step(plate(), next, g_side);
    for (float& v : next)
      v = ff_bench::timed_expectation(v);
    return next;
  }();
  return w;
}

void set_ms_per_step(benchmark::State& st, double seconds) {
  st.counters["ms_per_step"] = seconds * 1e3 / static_cast<double>(st.iterations());
  // One plate read, one written.
  st.SetBytesProcessed(static_cast<int64_t>(st.iterations()) *
                       static_cast<int64_t>(plate().size() * 2 * sizeof(float)));
}

void BM_heat_hand(benchmark::State& st) {
  const std::vector<float>& u = plate();
  std::vector<float> next(u.size());
  const int ran = heat::openmp_step(u.data(), next.data(), g_side, g_threads);
  st.counters["threads"] = ran;
  if (ran != g_threads) {
    st.SkipWithError(("OpenMP ran the loop on " + std::to_string(ran) + " threads, " +
                      std::to_string(g_threads) + " asked for")
                         .c_str());
    return;
  }
  double total = 0;
  for (auto _ : st) {
    auto t0 = Clock::now();
    heat::openmp_step(u.data(), next.data(), g_side, g_threads);
    benchmark::ClobberMemory();
    double s = seconds_since(t0);
    st.SetIterationTime(s);
    total += s;
  }
  if (std::string err = ff_bench::compare(next, want()); !err.empty()) {
    st.SkipWithError(("wrong result of the last timed call: " + err).c_str());
    return;
  }
  set_ms_per_step(st, total);
}

// Times `step(u)` (synced, its result released before the next call) after a warm-up long
// enough for the kernel to reach the optimised codegen tier; checks the last result and that
// nothing compiled while timing.
template <class Step>
void time_ff_step(benchmark::State& st, Step&& step) {
  ff::Float u = ff::Float::from(plate());
  ff::eval(u);
  ff::sync();
  for (auto t0 = Clock::now(); seconds_since(t0) < 0.3;) {
    ff::Float y = step(u);
    ff::sync();
  }
  const ff::Stats before = ff::stats();
  ff::Float last;
  double total = 0;
  for (auto _ : st) {
    auto t0 = Clock::now();
    last = ff::Float();
    last = step(u);
    ff::sync();
    double s = seconds_since(t0);
    st.SetIterationTime(s);
    total += s;
  }
  if (std::string err = ff_bench::check_result(last, want()); !err.empty()) {
    st.SkipWithError(("wrong result of the last timed call: " + err).c_str());
    return;
  }
  ff_bench::require_steady_state(st, before, 1);
  set_ms_per_step(st, total);
}

void BM_heat_frozen(benchmark::State& st) {
  auto f = ff::freeze(heat::step);
  time_ff_step(st, [&](const ff::Float& u) { return f(u, g_side); });
}

void BM_heat_traced(benchmark::State& st) {
  time_ff_step(st, [](const ff::Float& u) { return heat::step(u, g_side); });
}

class Summary : public ff_bench::Reporter {
 public:
  using Reporter::Reporter;

  void Finalize() override {
    Reporter::Finalize();
    auto ms = [&](const char* name) {
      const Result* r = find(name);
      return r ? r->counter("ms_per_step") : -1.0;
    };
    const double hand = ms("BM_heat_hand");
    std::printf("\nheat stencil %ux%u floats, %d threads (%s)\n", g_side, g_side, g_threads,
                any_median() ? "medians" : "single runs");
    if (hand > 0)
      std::printf("  hand-written OpenMP loop %8.3f ms/step\n", hand);
    for (const char* name : {"BM_heat_frozen", "BM_heat_traced"}) {
      const double t = ms(name);
      if (t > 0 && hand > 0)
        std::printf("  %-24s %8.3f ms/step: hand/ff %.2f (target >= 0.8)\n", name + 3, t, hand / t);
    }
    ff_bench::warn_if_busy(stdout);
  }
};

}  // namespace

int main(int argc, char** argv) {
  ff_bench::run_with_passive_openmp(argv);
  ff_bench::CommandLine cl(argc, argv);
  ff_bench::g_expect_wrong = cl.take_switch("ff_expect_wrong");
  if (auto side = cl.take("ff_side"))
    g_side = static_cast<uint32_t>(std::atoi(side->c_str()));
  if (g_side < 3 || g_side > 16384) {
    std::fprintf(stderr, "ff_bench_stencil: --ff_side must be in [3, 16384]\n");
    return 2;
  }
  g_threads = ff_bench::baseline_threads(cl.take("ff_threads"));
  cl.default_to("benchmark_repetitions", "9");
  cl.default_to("benchmark_enable_random_interleaving", "true");
  if (!cl.has("benchmark_display_aggregates_only"))
    cl.default_to("benchmark_report_aggregates_only", "true");
  try {
    ff::init();
    benchmark::AddCustomContext("ff_backend", ff::backend_name());
    benchmark::AddCustomContext("plate", std::to_string(g_side) + "x" + std::to_string(g_side));
    benchmark::AddCustomContext("openmp_loop_threads", std::to_string(g_threads));
    benchmark::AddCustomContext("openmp", heat::openmp_summary());
    if (ff_bench::g_expect_wrong)
      benchmark::AddCustomContext("self_test", ff_bench::kSelfTestContext);
    if (int status = cl.initialize_benchmark(); status != 0)
      return status;
    using ff_bench::guarded;
    for (auto [name, fn] : {std::pair{"BM_heat_hand", &guarded<BM_heat_hand>},
                            {"BM_heat_frozen", &guarded<BM_heat_frozen>},
                            {"BM_heat_traced", &guarded<BM_heat_traced>}})
      benchmark::RegisterBenchmark(name, fn)->UseManualTime()->Unit(benchmark::kMillisecond);
    Summary reporter(cl.color());
    const size_t n_run = benchmark::RunSpecifiedBenchmarks(&reporter);
    benchmark::Shutdown();
    ff::shutdown();
    return ff_bench::exit_status("ff_bench_stencil", n_run, reporter, {});
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ff_bench_stencil: %s\n", e.what());
    return 1;
  }
}
