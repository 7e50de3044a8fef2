// tanh, atan2 and pow over 16M floats: freezeframe frozen and traced against the OpenMP loop
// of std:: calls that GCC turns into glibc vector calls (math_loops.h), side by side: each
// benchmark iteration is one round of every side, each timed call after an untimed one of the
// same kind, and the ratios are medians of per-round ratios.
//
// Both run on every core (the pool's default; the loop on as many OpenMP threads). Target
// (issue 19): openmp/frozen >= 0.8 for each function. The results of the last timed calls are
// checked at 65,536 strided elements against double-precision std:: (within 8 ulp of float,
// which both libmvec sides meet). Own flags: --ff_expect_wrong, --ff_math_size=N (the arrays'
// length; the smoke test's shorter run).
#include <benchmark/benchmark.h>
#include <freezeframe/freezeframe.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "chain.h"
#include "harness.h"
#include "math_loops.h"
#include "rounds.h"
#include "workloads.h"

namespace {

size_t g_size = size_t{1} << 24;

enum Side { kFrozen, kTraced, kOpenmp, kSides };

constexpr const char* kSideNames[kSides] = {"frozen", "traced", "openmp"};
enum class Fn { Tanh, Atan2, Pow };

ff::Float apply(Fn fn, const ff::Float& a, const ff::Float& b) {
  switch (fn) {
    case Fn::Tanh:
      return ff::tanh(a);
    case Fn::Atan2:
      return ff::atan2(a, b);
    case Fn::Pow:
      return ff::pow(a, b);
  }
  return a;
}

double reference(Fn fn, double a, double b) {
  switch (fn) {
    case Fn::Tanh:
      return std::tanh(a);
    case Fn::Atan2:
      return std::atan2(a, b);
    case Fn::Pow:
      return std::pow(a, b);
  }
  return a;
}

/// "" when got[i] is within 8 float ulp (or 1e-30) of the reference at every checked i.
std::string check(Fn fn, const std::vector<float>& a, const std::vector<float>& b,
                  const std::vector<float>& got) {
  if (got.size() != a.size())
    return "size " + std::to_string(got.size());
  const size_t step = std::max<size_t>(1, a.size() / 65536);
  for (size_t i = 0; i < a.size(); i += step) {
    double want = ff_bench::timed_expectation(reference(fn, a[i], b[i]));
    double tol = std::max(8 * std::fabs(want) * 0x1p-24, 1e-30);
    if (!(std::fabs(got[i] - want) <= tol))
      return "element " + std::to_string(i) + " is " + std::to_string(got[i]) + ", want " +
             std::to_string(want);
  }
  return "";
}

void bm_math(benchmark::State& st, Fn fn) {
  ff::init("llvm");
  const int threads = ff_bench::baseline_threads(std::nullopt);
  const size_t n = g_size;
  std::vector<float> a(n), b(n), loop_out(n);
  std::mt19937 rng(uint32_t(fn) + 1);
  std::uniform_real_distribution<float> tanh_x(-5.f, 5.f), coord(-10.f, 10.f), base(0.1f, 10.f),
      expo(-3.f, 3.f);
  for (size_t i = 0; i < n; ++i) {
    a[i] = fn == Fn::Tanh ? tanh_x(rng) : fn == Fn::Atan2 ? coord(rng) : base(rng);
    b[i] = fn == Fn::Pow ? expo(rng) : coord(rng);
  }
  const ff::Float fa = ff::Float::from(a), fb = ff::Float::from(b);
  ff::eval(fa, fb);
  auto frozen_fn =
      ff::freeze([fn](const ff::Float& x, const ff::Float& y) { return apply(fn, x, y); });
  ff::Float frozen_out, traced_out;
  int ran = threads;
  std::array<std::function<void()>, kSides> sides = {
      [&] {
        frozen_out = ff::Float();
        frozen_out = frozen_fn(fa, fb);
        ff::sync();
      },
      [&] {
        traced_out = ff::Float();
        traced_out = apply(fn, fa, fb);
        ff::eval(traced_out);
        ff::sync();
      },
      [&] {
        int r = fn == Fn::Tanh ? ff_bench::tanh_openmp(a.data(), loop_out.data(), n, threads)
                : fn == Fn::Atan2
                    ? ff_bench::atan2_openmp(a.data(), b.data(), loop_out.data(), n, threads)
                    : ff_bench::pow_openmp(a.data(), b.data(), loop_out.data(), n, threads);
        ran = std::min(ran, r);
        benchmark::ClobberMemory();
      }};
  const auto rounds = ff_bench::run_rounds(st, sides);
  const std::vector<float> got[kSides] = {frozen_out.to_vector(), traced_out.to_vector(), loop_out};
  for (int s = 0; s < kSides; ++s)
    if (std::string err = check(fn, a, b, got[s]); !err.empty()) {
      st.SkipWithError(
          ("wrong result of the last " + std::string(kSideNames[s]) + " timed call: " + err)
              .c_str());
      return;
    }
  if (ran != threads) {  // a baseline on fewer threads would flatter us
    st.SkipWithError(("OpenMP ran on " + std::to_string(ran) + " threads, " +
                      std::to_string(threads) + " asked for")
                         .c_str());
    return;
  }
  auto median_of = [&](auto per_round) { return ff_bench::median_over(rounds, per_round); };
  for (int s = 0; s < kSides; ++s)
    st.counters[std::string("ms_") + kSideNames[s]] =
        median_of([s](const auto& t) { return t[s] * 1e3; });
  for (int s : {kFrozen, kTraced})
    st.counters[std::string("openmp_over_") + kSideNames[s]] =
        median_of([=](const auto& t) { return t[kOpenmp] / t[s]; });
}

void BM_tanh(benchmark::State& st) {
  bm_math(st, Fn::Tanh);
}

void BM_atan2(benchmark::State& st) {
  bm_math(st, Fn::Atan2);
}

void BM_pow(benchmark::State& st) {
  bm_math(st, Fn::Pow);
}

class Summary : public ff_bench::Reporter {
 public:
  using Reporter::Reporter;

  void Finalize() override {
    Reporter::Finalize();
    std::printf("\nmath summary, %zu floats (%s; ratio = OpenMP loop time / ff time)\n", g_size,
                any_median() ? "medians of per-round ratios" : "single runs");
    for (const char* bench : {"BM_tanh", "BM_atan2", "BM_pow"}) {
      const Result* r = find(bench);
      if (!r)
        continue;
      double v = r->counter("openmp_over_frozen");
      std::printf("%-9s openmp_over_frozen %6.3f (target >= 0.8)%s   openmp_over_traced %6.3f\n",
                  bench, v, v >= 0.8 ? "" : "  MISSED", r->counter("openmp_over_traced"));
    }
    ff_bench::warn_if_busy(stdout);
  }
};

}  // namespace

int main(int argc, char** argv) {
  ff_bench::run_with_passive_openmp(argv);
  ff_bench::CommandLine cl(argc, argv);
  ff_bench::g_expect_wrong = cl.take_switch("ff_expect_wrong");
  if (auto s = cl.take("ff_math_size"))
    g_size = size_t(std::stoull(*s));
  cl.default_to("benchmark_repetitions", "5");
  if (!cl.has("benchmark_display_aggregates_only"))
    cl.default_to("benchmark_report_aggregates_only", "true");
  try {
    if (ff_bench::g_expect_wrong)
      benchmark::AddCustomContext("self_test", ff_bench::kSelfTestContext);
    if (int status = cl.initialize_benchmark(); status != 0)
      return status;
    using ff_bench::guarded;
    for (auto [name, fn] : {std::pair{"BM_tanh", &guarded<BM_tanh>},
                            {"BM_atan2", &guarded<BM_atan2>},
                            {"BM_pow", &guarded<BM_pow>}})
      benchmark::RegisterBenchmark(name, fn)->UseManualTime();
    Summary reporter(cl.color());
    const size_t n_run = benchmark::RunSpecifiedBenchmarks(&reporter);
    benchmark::Shutdown();
    ff::shutdown();
    return ff_bench::exit_status("ff_bench_math", n_run, reporter, {});
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ff_bench_math: %s\n", e.what());
    return 1;
  }
}
