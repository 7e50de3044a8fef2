// Loops inside kernels (ff::while_loop), side by side in one run, on the Mandelbrot escape loop
// z = z^2 + c from z = 0 while |z|^2 <= 4, at most max_iter iterations, float32:
//
//   BM_mandelbrot     1024 x 1024 pixels, 256 iterations: the symbolic loop traced on every
//                     call (ff::eval of the result: one kernel), the same function frozen
//                     (ff::freeze: each call replays its recording) and the loop a C++
//                     programmer writes (loop_loops.cpp: scalar per pixel, OpenMP
//                     `parallel for schedule(dynamic)` over rows, the hand-loop flags; GCC
//                     does not vectorise it). Each iteration is one round of the three, each
//                     timed call after an untimed one of the same kind (rounds.h); the ratios
//                     are medians of per-round ratios. Target: hand/symbolic >= 2.
//   BM_loop_mode      256 x 256 pixels, 64 iterations: the same function with
//                     LoopMode::Symbolic against LoopMode::Evaluated (each iteration run from
//                     the host: a kernel for the condition, a reduction, a kernel for the body).
//   BM_first_eval     the first eval of a 32 x 32 image (256 iterations; its run takes
//                     microseconds, so the time is tracing plus the kernel): cold (the
//                     in-memory cache flushed, the on-disk cache emptied: a compile, at the
//                     backend's quick tier when it runs on 2+ threads), from the on-disk cache
//                     (in-memory cache flushed), and hot (in-memory cache). Each must trace
//                     one kernel and compile, load or find exactly that one.
//
// Results are checked: the ff variants must give exactly the iteration counts of a host loop
// that rounds every operation (this file is compiled with -ffp-contract=off, and freezeframe's
// kernels never contract a * b + c: the IR's Mul and Add are separate IEEE operations, only
// Fma fuses; docs/kernel-ir.md). GCC contracts the hand loop's 2 * x * y + cy into an FMA (its
// default), so some boundary pixels escape at another iteration: each of its pixels must have
// the count of the rounded host loop or of one contracted as GCC does (counters hand_px_fma,
// hand_px_unexplained). The grid's points are dyadic (step 2.5 / side), so every variant
// computes every c exactly.
//
// The process keeps its on-disk kernel cache in a fresh temporary directory (FF_CACHE_DIR is
// overridden; the directory is removed at exit): BM_first_eval needs one it can empty, and
// nothing measured depends on what earlier runs left in the user's cache.
//
// Own flags: --ff_side=N and --ff_iters=N (BM_mandelbrot), --ff_mode_side=N and
// --ff_mode_iters=N (BM_loop_mode), --ff_threads=T (the OpenMP loop's threads; default
// FF_THREADS, else every core), --ff_expect_wrong (harness.h). Defaults unless given:
// --benchmark_repetitions=5 --benchmark_report_aggregates_only=true.
#include <benchmark/benchmark.h>
#include <freezeframe/freezeframe.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <system_error>
#include <tuple>
#include <vector>

#include "chain.h"
#include "harness.h"
#include "loop_loops.h"
#include "rounds.h"
#include "timed_calls.h"
#include "workloads.h"

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using ff::Float;
using ff::UInt32;
using ff_bench::MandelbrotGrid;

uint32_t g_side = 1024, g_iters = 256;
uint32_t g_mode_side = 256, g_mode_iters = 64;
constexpr uint32_t kFirstEvalSide = 32, kFirstEvalIters = 256;
int g_threads = 1;
fs::path g_cache_dir;

/// The hand loop's pixels must each have the count of the rounded or the GCC-contracted host
/// loop; other compilers may contract other products, so this fraction may match neither
/// (GCC 12, -march=native: none; 0.15% of the pixels at 1024 x 1024 and 256 iterations
/// differ from the rounded loop, every one of them matching the contracted loop).
constexpr double kHandMaxUnexplainedPixels = 0.005;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

/// The square [-2, 0.5] x [-1.25, 1.25] on side x side pixels (step 2.5 / side: dyadic for the
/// power-of-two sides the benchmark uses, so c is exact in every variant).
MandelbrotGrid grid(uint32_t side, uint32_t iters) {
  return MandelbrotGrid{side, side, -2.f, -1.25f, 2.5f / float(side), iters};
}

/// The symbolic or evaluated loop over every pixel: the iteration counts.
UInt32 mandelbrot(uint32_t width, uint32_t height, float x0, float y0, float step,
                  uint32_t max_iter, const ff::LoopOptions& opt) {
  const uint32_t n = width * height;
  const UInt32 idx = ff::arange<UInt32>(n);
  const Float cx = x0 + ff::cast<Float>(idx % width) * step;
  const Float cy = y0 + ff::cast<Float>(idx / width) * step;
  auto [x_end, y_end, count] = ff::while_loop(
      std::make_tuple(ff::zeros<Float>(n), ff::zeros<Float>(n), ff::zeros<UInt32>(n)),
      [&](const Float& x, const Float& y, const UInt32& i) {
        return (i < max_iter) & (x * x + y * y <= 4.f);
      },
      [&](Float& x, Float& y, UInt32& i) {
        Float xt = x * x - y * y + cx;
        y = 2.f * x * y + cy;
        x = xt;
        i += 1u;
      },
      opt);
  return count;
}

UInt32 mandelbrot(const MandelbrotGrid& g, const ff::LoopOptions& opt = {}) {
  return mandelbrot(g.width, g.height, g.x0, g.y0, g.step, g.max_iter, opt);
}

/// The frozen function: its scalars are part of the key, so one recording per grid.
UInt32 mandelbrot_symbolic(uint32_t width, uint32_t height, float x0, float y0, float step,
                           uint32_t max_iter) {
  return mandelbrot(width, height, x0, y0, step, max_iter, {});
}

/// How a host loop computes y = 2 * x * y + cy: rounding every operation (no contraction: this
/// file is compiled with -ffp-contract=off), what the kernels must give exactly, or as GCC
/// contracts it in the hand loop, fma(x + x, y, cy) (x * x - y * y + cx it leaves alone).
enum class Rounding { Every, GccContracted };

/// The iteration counts of a host loop; cached per grid and rounding.
const std::vector<uint32_t>& reference(const MandelbrotGrid& g, Rounding r = Rounding::Every) {
  static std::map<std::tuple<uint32_t, uint32_t, uint32_t, Rounding>, std::vector<uint32_t>> cache;
  auto key = std::tuple(g.width, g.height, g.max_iter, r);
  if (auto it = cache.find(key); it != cache.end())
    return it->second;
  std::vector<uint32_t> out(size_t(g.width) * g.height);
  for (uint32_t row = 0; row < g.height; ++row)
    for (uint32_t col = 0; col < g.width; ++col) {
      const float cx = g.x0 + float(col) * g.step, cy = g.y0 + float(row) * g.step;
      float x = 0.f, y = 0.f;
      uint32_t i = 0;
      while (i < g.max_iter && x * x + y * y <= 4.f) {
        const float xt = x * x - y * y + cx;
        y = r == Rounding::Every ? 2.f * x * y + cy : std::fma(x + x, y, cy);
        x = xt;
        ++i;
      }
      out[size_t(row) * g.width + col] = i;
    }
  return cache.emplace(key, std::move(out)).first->second;
}

/// What the checks of timed calls expect: the reference, or (--ff_expect_wrong) every count
/// one more (timed_expectation's part in a thousand would round away on small integers).
std::vector<uint32_t> timed_want(const MandelbrotGrid& g, Rounding r = Rounding::Every) {
  std::vector<uint32_t> want = reference(g, r);
  if (ff_bench::g_expect_wrong)
    for (uint32_t& v : want)
      v += 1;
  return want;
}

/// "" when got is exactly want, else the first pixel that differs and how many do.
std::string exact(const std::vector<uint32_t>& got, const std::vector<uint32_t>& want) {
  if (got.size() != want.size())
    return std::to_string(got.size()) + " pixels, expected " + std::to_string(want.size());
  size_t differ = 0;
  std::string first;
  for (size_t p = 0; p < got.size(); ++p)
    if (got[p] != want[p] && differ++ == 0)
      first = "pixel " + std::to_string(p) + " has " + std::to_string(got[p]) +
              " iterations, expected " + std::to_string(want[p]);
  return differ == 0 ? "" : first + " (" + std::to_string(differ) + " pixels differ)";
}

double iterations_of(const std::vector<uint32_t>& counts) {
  double s = 0;
  for (uint32_t c : counts)
    s += c;
  return s;
}

/// Calls `call` (returns synced counts) until 0.3 s have passed and at least 3 times, so the
/// kernel reaches the optimised codegen tier before timing.
template <class Call>
void warm_up(Call&& call) {
  int calls = 0;
  for (auto t0 = Clock::now(); calls < 3 || seconds_since(t0) < 0.3; ++calls)
    call();
}

void BM_mandelbrot(benchmark::State& st) {
  const MandelbrotGrid g = grid(g_side, g_iters);
  const std::vector<uint32_t>& ref = reference(g);
  const std::vector<uint32_t> want = timed_want(g);
  auto frozen_fn = ff::freeze(mandelbrot_symbolic);

  UInt32 symbolic_out, frozen_out;
  std::vector<uint32_t> hand_out(ref.size());
  int ran = g_threads;
  auto symbolic = [&] {
    symbolic_out = UInt32();
    symbolic_out = mandelbrot(g);
    ff::eval(symbolic_out);
    ff::sync();
  };
  auto frozen = [&] {
    frozen_out = UInt32();
    frozen_out = frozen_fn(g.width, g.height, g.x0, g.y0, g.step, g.max_iter);
    ff::sync();
  };
  auto hand = [&] {
    ran = std::min(ran, ff_bench::mandelbrot_openmp(g, hand_out.data(), g_threads));
    benchmark::ClobberMemory();
  };

  // Untimed first calls, checked against the true counts: one traced kernel per eval.
  const uint64_t traced_before = ff::stats().traced_kernels;
  symbolic();
  const uint64_t kernels = ff::stats().traced_kernels - traced_before;
  st.counters["kernels_per_eval"] = double(kernels);
  if (kernels != 1) {
    st.SkipWithError(("the symbolic Mandelbrot traced " + std::to_string(kernels) +
                      " kernels in one eval, expected 1")
                         .c_str());
    return;
  }
  frozen();
  hand();
  for (auto [what, err] : {std::pair{"symbolic", exact(symbolic_out.to_vector(), ref)},
                           {"frozen", exact(frozen_out.to_vector(), ref)}})
    if (!err.empty()) {
      st.SkipWithError(
          ("wrong result of the warm-up " + std::string(what) + " call: " + err).c_str());
      return;
    }
  warm_up(symbolic);
  warm_up(frozen);

  enum Side { kSymbolic, kFrozen, kHand, kSides };

  const std::array<std::function<void()>, kSides> sides = {symbolic, frozen, hand};
  const ff::Stats before = ff::stats();
  const auto rounds = ff_bench::run_rounds(st, sides);
  const ff::Stats after = ff::stats();

  for (auto [what, err] : {std::pair{"symbolic", exact(symbolic_out.to_vector(), want)},
                           {"frozen", exact(frozen_out.to_vector(), want)}})
    if (!err.empty()) {
      st.SkipWithError(
          ("wrong result of the last " + std::string(what) + " timed call: " + err).c_str());
      return;
    }
  // The hand loop: each pixel as the rounded or the contracted host loop has it.
  const std::vector<uint32_t> want_fma = timed_want(g, Rounding::GccContracted);
  size_t fma_px = 0, unexplained_px = 0;
  std::string first_unexplained;
  for (size_t p = 0; p < want.size(); ++p) {
    if (hand_out[p] == want[p])
      continue;
    if (hand_out[p] == want_fma[p]) {
      ++fma_px;
    } else if (unexplained_px++ == 0) {
      first_unexplained = "pixel " + std::to_string(p) + " has " + std::to_string(hand_out[p]) +
                          " iterations, expected " + std::to_string(want[p]) + " (or " +
                          std::to_string(want_fma[p]) + " with an FMA)";
    }
  }
  st.counters["hand_px_fma"] = double(fma_px);
  st.counters["hand_px_unexplained"] = double(unexplained_px);
  if (double(unexplained_px) > kHandMaxUnexplainedPixels * double(want.size())) {
    st.SkipWithError(
        ("wrong result of the last hand timed call: " + std::to_string(unexplained_px) +
         " pixels differ from the host loop with and without FMA contraction; first: " +
         first_unexplained)
            .c_str());
    return;
  }
  if (ran != g_threads) {  // a baseline on fewer threads would flatter us
    st.SkipWithError(("OpenMP ran on " + std::to_string(ran) + " threads, " +
                      std::to_string(g_threads) + " asked for")
                         .c_str());
    return;
  }
  // Each round calls each ff side twice (untimed, timed): one launch per call, no compile.
  if (std::string err = ff_bench::check_steady_state(before, after, 4 * rounds.size(), 1);
      !err.empty()) {
    st.SkipWithError(err.c_str());
    return;
  }
  auto median_of = [&](auto per_round) { return ff_bench::median_over(rounds, per_round); };
  const char* names[kSides] = {"symbolic", "frozen", "hand"};
  for (int s = 0; s < kSides; ++s)
    st.counters[std::string("ms_") + names[s]] =
        median_of([s](const auto& t) { return t[s] * 1e3; });
  st.counters["hand_over_symbolic"] =
      median_of([](const auto& t) { return t[kHand] / t[kSymbolic]; });
  st.counters["hand_over_frozen"] = median_of([](const auto& t) { return t[kHand] / t[kFrozen]; });
  st.counters["frozen_over_symbolic"] =
      median_of([](const auto& t) { return t[kFrozen] / t[kSymbolic]; });
  // Escape-loop iterations per nanosecond of the symbolic call (all lanes, all threads).
  st.counters["iters_per_ns_symbolic"] =
      iterations_of(ref) / (median_of([](const auto& t) { return t[kSymbolic]; }) * 1e9);
}

void BM_loop_mode(benchmark::State& st) {
  const MandelbrotGrid g = grid(g_mode_side, g_mode_iters);
  const std::vector<uint32_t>& ref = reference(g);
  const std::vector<uint32_t> want = timed_want(g);
  ff::LoopOptions evaluated_opt;
  evaluated_opt.mode = ff::LoopMode::Evaluated;
  UInt32 symbolic_out, evaluated_out;
  auto symbolic = [&] {
    symbolic_out = UInt32();
    symbolic_out = mandelbrot(g);
    ff::eval(symbolic_out);
    ff::sync();
  };
  auto evaluated = [&] {
    evaluated_out = UInt32();
    evaluated_out = mandelbrot(g, evaluated_opt);
    ff::eval(evaluated_out);
    ff::sync();
  };
  symbolic();
  ff::Stats s0 = ff::stats();
  evaluated();
  ff::Stats s1 = ff::stats();
  st.counters["evaluated_kernels_per_call"] = double(s1.traced_kernels - s0.traced_kernels);
  st.counters["evaluated_launches_per_call"] = double(s1.launches - s0.launches);
  for (auto [what, err] : {std::pair{"symbolic", exact(symbolic_out.to_vector(), ref)},
                           {"evaluated", exact(evaluated_out.to_vector(), ref)}})
    if (!err.empty()) {
      st.SkipWithError(
          ("wrong result of the warm-up " + std::string(what) + " call: " + err).c_str());
      return;
    }
  warm_up(symbolic);
  warm_up(evaluated);

  enum Side { kSymbolic, kEvaluated, kSides };

  const std::array<std::function<void()>, kSides> sides = {symbolic, evaluated};
  const ff::Stats before = ff::stats();
  const auto rounds = ff_bench::run_rounds(st, sides);
  const ff::Stats after = ff::stats();
  for (auto [what, err] : {std::pair{"symbolic", exact(symbolic_out.to_vector(), want)},
                           {"evaluated", exact(evaluated_out.to_vector(), want)}})
    if (!err.empty()) {
      st.SkipWithError(
          ("wrong result of the last " + std::string(what) + " timed call: " + err).c_str());
      return;
    }
  if (after.compiles != before.compiles) {
    st.SkipWithError(("not in a steady state: " + std::to_string(after.compiles - before.compiles) +
                      " kernels compiled in the timed rounds")
                         .c_str());
    return;
  }
  auto median_of = [&](auto per_round) { return ff_bench::median_over(rounds, per_round); };
  st.counters["ms_symbolic"] = median_of([](const auto& t) { return t[kSymbolic] * 1e3; });
  st.counters["ms_evaluated"] = median_of([](const auto& t) { return t[kEvaluated] * 1e3; });
  st.counters["evaluated_over_symbolic"] =
      median_of([](const auto& t) { return t[kEvaluated] / t[kSymbolic]; });
}

/// Empties the on-disk kernel cache (the process's own temporary directory).
void empty_disk_cache() {
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(g_cache_dir, ec))
    fs::remove_all(e.path(), ec);
}

void BM_first_eval(benchmark::State& st) {
  const MandelbrotGrid g = grid(kFirstEvalSide, kFirstEvalIters);
  const std::vector<uint32_t>& ref = reference(g);
  const std::vector<uint32_t> want = timed_want(g);
  UInt32 out;
  auto call = [&] {
    out = UInt32();
    out = mandelbrot(g);
    ff::eval(out);
    ff::sync();
  };
  call();  // LLVM's one-time start-up, outside the timings
  if (std::string err = exact(out.to_vector(), ref); !err.empty()) {
    st.SkipWithError(("wrong result of the warm-up call: " + err).c_str());
    return;
  }

  enum Kind { kCold, kDisk, kHot, kKinds };

  const char* names[kKinds] = {"cold", "disk", "hot"};
  std::vector<std::array<double, kKinds>> rounds;
  for (auto _ : st) {
    std::array<double, kKinds> t{};
    for (int k = 0; k < kKinds; ++k) {
      if (k == kCold)
        empty_disk_cache();
      if (k != kHot)
        ff::flush_kernel_cache();
      const ff::Stats s0 = ff::stats();
      auto t0 = Clock::now();
      call();
      t[k] = seconds_since(t0);
      const ff::Stats s1 = ff::stats();
      // What each kind must have done: compiled the one kernel, loaded it from the disk cache,
      // or found it in memory.
      const uint64_t compiles = s1.compiles - s0.compiles,
                     disk = s1.disk_cache_hits - s0.disk_cache_hits,
                     kernels = s1.traced_kernels - s0.traced_kernels;
      const bool ok = kernels == 1 && (k == kCold   ? compiles == 1 && disk == 0
                                       : k == kDisk ? compiles == 0 && disk == 1
                                                    : compiles == 0 && disk == 0);
      if (!ok) {
        st.SkipWithError(("the " + std::string(names[k]) + " eval traced " +
                          std::to_string(kernels) + " kernels, compiled " +
                          std::to_string(compiles) + " and loaded " + std::to_string(disk) +
                          " from the disk cache (expected 1 kernel, " +
                          (k == kCold   ? "1 compiled"
                           : k == kDisk ? "1 loaded"
                                        : "none of either") +
                          ")")
                             .c_str());
        return;
      }
      if (std::string err = exact(out.to_vector(), want); !err.empty()) {
        st.SkipWithError(
            ("wrong result of a timed " + std::string(names[k]) + " call: " + err).c_str());
        return;
      }
    }
    st.SetIterationTime(t[kCold] + t[kDisk] + t[kHot]);
    rounds.push_back(t);
  }
  for (int k = 0; k < kKinds; ++k)
    st.counters[std::string("ms_") + names[k]] =
        ff_bench::median_over(rounds, [k](const auto& t) { return t[k] * 1e3; });
  st.counters["kernels_per_eval"] = 1;
}

class Summary : public ff_bench::Reporter {
 public:
  using Reporter::Reporter;

  void Finalize() override {
    Reporter::Finalize();
    std::printf("\nwhile_loop summary (%s; ratio = baseline time / ff time)\n",
                any_median() ? "medians of per-round figures" : "single runs");
    if (const Result* r = find("BM_mandelbrot")) {
      std::printf("Mandelbrot %ux%u, %u iterations, float32, %d threads:\n", g_side, g_side,
                  g_iters, g_threads);
      std::printf("  symbolic (traced)  %9.3f ms\n", r->counter("ms_symbolic"));
      std::printf("  frozen             %9.3f ms\n", r->counter("ms_frozen"));
      std::printf(
          "  hand OpenMP loop   %9.3f ms (pixels off by FMA contraction: %.0f, "
          "unexplained: %.0f)\n",
          r->counter("ms_hand"), r->counter("hand_px_fma"), r->counter("hand_px_unexplained"));
      const double v = r->counter("hand_over_symbolic");
      std::printf(
          "  hand/symbolic %.2f (target >= 2.0)%s, hand/frozen %.2f, kernels per eval "
          "%.0f\n",
          v, v >= 2.0 ? "" : "  MISSED", r->counter("hand_over_frozen"),
          r->counter("kernels_per_eval"));
    }
    if (const Result* r = find("BM_loop_mode"))
      std::printf(
          "Mandelbrot %ux%u, %u iterations: symbolic %.3f ms, evaluated %.3f ms "
          "(evaluated/symbolic %.1f; %.0f kernels traced per evaluated call)\n",
          g_mode_side, g_mode_side, g_mode_iters, r->counter("ms_symbolic"),
          r->counter("ms_evaluated"), r->counter("evaluated_over_symbolic"),
          r->counter("evaluated_kernels_per_call"));
    if (const Result* r = find("BM_first_eval"))
      std::printf(
          "First eval of a %ux%u Mandelbrot (1 kernel): cold compile %.2f ms, from the "
          "disk cache %.2f ms, in-memory cache %.3f ms\n",
          kFirstEvalSide, kFirstEvalSide, r->counter("ms_cold"), r->counter("ms_disk"),
          r->counter("ms_hot"));
    ff_bench::warn_if_busy(stdout);
  }
};

bool parse_side(std::optional<std::string> flag, uint32_t& v, const char* name) {
  if (!flag)
    return true;
  v = uint32_t(std::atoi(flag->c_str()));
  if (v < 1 || v > 8192) {
    std::fprintf(stderr, "ff_bench_loops: --%s must be in [1, 8192]\n", name);
    return false;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  ff_bench::run_with_passive_openmp(argv);
  ff_bench::CommandLine cl(argc, argv);
  ff_bench::g_expect_wrong = cl.take_switch("ff_expect_wrong");
  if (!parse_side(cl.take("ff_side"), g_side, "ff_side") ||
      !parse_side(cl.take("ff_iters"), g_iters, "ff_iters") ||
      !parse_side(cl.take("ff_mode_side"), g_mode_side, "ff_mode_side") ||
      !parse_side(cl.take("ff_mode_iters"), g_mode_iters, "ff_mode_iters"))
    return 2;
  g_threads = ff_bench::baseline_threads(cl.take("ff_threads"));
  cl.default_to("benchmark_repetitions", "5");
  if (!cl.has("benchmark_display_aggregates_only"))
    cl.default_to("benchmark_report_aggregates_only", "true");

  // A private on-disk kernel cache, read by ff::init.
  std::error_code ec;
  g_cache_dir = fs::temp_directory_path(ec) / ("ff-bench-loops-" + std::to_string(::getpid()));
  fs::remove_all(g_cache_dir, ec);
  if (!fs::create_directories(g_cache_dir, ec)) {
    std::fprintf(stderr, "ff_bench_loops: cannot create %s: %s\n", g_cache_dir.c_str(),
                 ec.message().c_str());
    return 1;
  }
  ::setenv("FF_CACHE_DIR", g_cache_dir.c_str(), 1);
  int status = 1;
  try {
    ff::init();
    benchmark::AddCustomContext("ff_backend", ff::backend_name());
    benchmark::AddCustomContext("openmp_loop_threads", std::to_string(g_threads));
    benchmark::AddCustomContext("ff_cache_dir", g_cache_dir.string());
    if (ff_bench::g_expect_wrong)
      benchmark::AddCustomContext("self_test", ff_bench::kSelfTestContext);
    if (status = cl.initialize_benchmark(); status == 0) {
      using ff_bench::guarded;
      for (auto [name, fn] : {std::pair{"BM_mandelbrot", &guarded<BM_mandelbrot>},
                              {"BM_loop_mode", &guarded<BM_loop_mode>},
                              {"BM_first_eval", &guarded<BM_first_eval>}})
        benchmark::RegisterBenchmark(name, fn)->UseManualTime()->Unit(benchmark::kMillisecond);
      Summary reporter(cl.color());
      const size_t n_run = benchmark::RunSpecifiedBenchmarks(&reporter);
      benchmark::Shutdown();
      ff::shutdown();
      status = ff_bench::exit_status("ff_bench_loops", n_run, reporter, {});
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ff_bench_loops: %s\n", e.what());
    status = 1;
  }
  fs::remove_all(g_cache_dir, ec);
  return status;
}
