// Frozen functions against Recording::replay of the same recording, side by side in one run:
//   args_K (K = 1, 10, 100 arrays of 16 floats in a nested struct, one tiny kernel summing
//   them): µs per call of ff::freeze's call (scan the arguments, key, hash, look up, replay,
//   rebuild the result) and of Recording::replay with the same arrays listed by hand;
//   W1 and W3 (the replay benchmark's workloads) frozen vs replayed;
//   the first call of a new W1 frozen function with the optimiser on vs off (cold kernels);
//   the demo's heat-diffusion step (examples/heat_step.h) traced vs frozen, per step;
//   the 2D particle step (examples/particle_step.h) at 4,096 and 65,536 particles, traced and
//   frozen side by side in rounds (ratios per round; issue 19's target: >= 1.5 at 4,096).
// Every timed call's result is checked (the heat step: against the host loop, every call),
// and nothing may compile or trace while timing. Own flag: --ff_expect_wrong (see ff_bench.cpp).
// Defaults unless given: --benchmark_repetitions=9 --benchmark_enable_random_interleaving=true
// --benchmark_report_aggregates_only=true.
#include <benchmark/benchmark.h>
#include <freezeframe/freezeframe.h>

#include <array>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "chain.h"
#include "examples/heat_step.h"
#include "examples/particle_step.h"
#include "harness.h"
#include "rounds.h"
#include "timed_calls.h"
#include "workloads.h"

// The arguments of the args_K benchmarks: K arrays, nested two levels deep.
struct BenchLeaf {
  ff::Float value;
  int tag = 0;
};
FF_STRUCT(BenchLeaf, value, tag)

struct BenchGroup {
  std::vector<BenchLeaf> leaves;
  float scale = 1.f;
};
FF_STRUCT(BenchGroup, leaves, scale)

struct BenchArgs {
  std::vector<BenchGroup> groups;
};
FF_STRUCT(BenchArgs, groups)

namespace {

constexpr size_t kArgElements = 16;

// K arrays of 16 floats: array k holds k + i / 16, in groups of up to 10.
BenchArgs make_args(int k) {
  BenchArgs a;
  for (int i = 0; i < k; ++i) {
    if (i % 10 == 0)
      a.groups.emplace_back();
    std::vector<float> v(kArgElements);
    for (size_t j = 0; j < kArgElements; ++j)
      v[j] = static_cast<float>(i) + static_cast<float>(j) / 16.f;
    ff::Float x = ff::Float::from(v);
    ff::eval(x);
    a.groups.back().leaves.push_back({x, i});
  }
  ff::sync();
  return a;
}

// The function frozen and recorded: one kernel, 0.5 + the sum of every array.
ff::Float sum_all(const BenchArgs& a) {
  ff::Float total(0.5f);
  for (const BenchGroup& g : a.groups)
    for (const BenchLeaf& l : g.leaves)
      total = total + l.value;
  ff::eval(total);
  return total;
}

std::vector<float> sum_all_reference(int k) {
  std::vector<float> want(kArgElements, 0.5f);
  for (int i = 0; i < k; ++i)
    for (size_t j = 0; j < kArgElements; ++j)
      want[j] += static_cast<float>(i) + static_cast<float>(j) / 16.f;
  for (float& v : want)
    v = ff_bench::timed_expectation(v);
  return want;
}

std::vector<ff::AnyArray> leaves_of(const BenchArgs& a) {
  std::vector<ff::AnyArray> out;
  for (const BenchGroup& g : a.groups)
    for (const BenchLeaf& l : g.leaves)
      out.emplace_back(l.value);
  return out;
}

void set_us_per_call(benchmark::State& st, double seconds) {
  st.counters["us_per_item"] = seconds * 1e6 / static_cast<double>(st.iterations());
}

// Times `call` (returns the synced result) with every result checked against `want`; the
// steady state: `launches` per call, nothing compiled, and nothing traced unless `traces`.
// One untimed call comes first: the first replay of a recording builds its plan and compiles
// the kernels the optimiser made (a fused chain is a kernel no traced call compiled), and
// whether they are still in the kernel cache depends on which benchmarks ran before (the
// order is random) and on flush_kernel_cache() in BM_W1_first_call_*. Its result is the same
// call's as every timed one's, which are all checked.
template <class Call>
void time_steady(benchmark::State& st, const std::vector<float>& want, uint64_t launches,
                 Call&& call, bool traces = false) {
  (void)call();
  ff::sync();
  const ff::Stats before = ff::stats();
  const double seconds = ff_bench::time_checked_calls(st, want, call);
  if (st.error_occurred())
    return;
  set_us_per_call(st, seconds);
  if (!traces && ff::stats().traced_kernels != before.traced_kernels) {
    st.SkipWithError("a kernel was traced while timing");
    return;
  }
  ff_bench::require_steady_state(st, before, launches);
}

void args_replay(benchmark::State& st, int k) {
  BenchArgs a = make_args(k);
  const std::vector<ff::AnyArray> in = leaves_of(a);
  ff::Recording rec = ff::record(in, [&] { return std::vector<ff::AnyArray>{sum_all(a)}; });
  time_steady(st, sum_all_reference(k), 1, [&] {
    ff::Float y = rec.replay(in)[0].as<ff::Float>();
    ff::sync();
    return y;
  });
}

void args_frozen(benchmark::State& st, int k) {
  BenchArgs a = make_args(k);
  auto f = ff::freeze(sum_all);
  f(a);  // records
  time_steady(st, sum_all_reference(k), 1, [&] {
    ff::Float y = f(a);
    ff::sync();
    return y;
  });
  // Every call after the first replayed: time_steady's untimed one and the timed ones.
  if (!st.error_occurred() &&
      (f.n_recordings() != 1 || f.n_replays() != static_cast<size_t>(st.iterations()) + 1))
    st.SkipWithError("the frozen function recorded again while timing");
}

void BM_args_1_replay(benchmark::State& st) {
  args_replay(st, 1);
}

void BM_args_1_frozen(benchmark::State& st) {
  args_frozen(st, 1);
}

void BM_args_10_replay(benchmark::State& st) {
  args_replay(st, 10);
}

void BM_args_10_frozen(benchmark::State& st) {
  args_frozen(st, 10);
}

void BM_args_100_replay(benchmark::State& st) {
  args_replay(st, 100);
}

void BM_args_100_frozen(benchmark::State& st) {
  args_frozen(st, 100);
}

void chain_replay(benchmark::State& st, size_t n, int n_ops, int every) {
  ff::Float x = ff_bench::upload(n);
  const std::vector<ff::AnyArray> in{ff::AnyArray(x)};
  ff::Recording rec = ff_bench::record_chain(x, n_ops, every);
  time_steady(st, ff_bench::timed_reference(n, n_ops), ff_bench::kFusedLaunchesPerCall, [&] {
    ff::Float y = rec.replay(in)[0].as<ff::Float>();
    ff::sync();
    return y;
  });
}

void chain_frozen(benchmark::State& st, size_t n, int n_ops, int every) {
  ff::Float x = ff_bench::upload(n);
  auto f = ff::freeze([&](const ff::Float& in) { return ff_bench::run_chain(in, n_ops, every); });
  f(x);
  time_steady(st, ff_bench::timed_reference(n, n_ops), ff_bench::kFusedLaunchesPerCall, [&] {
    ff::Float y = f(x);
    ff::sync();
    return y;
  });
}

// The first call of a new frozen function with an empty kernel cache: record, optimise (or
// not), compile, run.
void first_call(benchmark::State& st, bool optimize) {
  ff::Float x = ff_bench::upload(ff_bench::kW1Size);
  ff::FreezeOptions options;
  options.optimize = optimize;
  const double seconds = ff_bench::time_checked_calls(
      st, ff_bench::timed_reference(ff_bench::kW1Size, ff_bench::kW1Ops), [&] {
        ff::flush_kernel_cache();
        auto f = ff::freeze(
            [&](const ff::Float& in) {
              return ff_bench::run_chain(in, ff_bench::kW1Ops, ff_bench::kW1EvalEvery);
            },
            options);
        ff::Float y = f(x);
        ff::sync();
        return y;
      });
  if (!st.error_occurred())
    set_us_per_call(st, seconds);
}

void BM_W1_first_call_optimized(benchmark::State& st) {
  first_call(st, true);
}

void BM_W1_first_call_unoptimized(benchmark::State& st) {
  first_call(st, false);
}

void BM_W1_replay(benchmark::State& st) {
  chain_replay(st, ff_bench::kW1Size, ff_bench::kW1Ops, ff_bench::kW1EvalEvery);
}

void BM_W1_frozen(benchmark::State& st) {
  chain_frozen(st, ff_bench::kW1Size, ff_bench::kW1Ops, ff_bench::kW1EvalEvery);
}

void BM_W3_replay(benchmark::State& st) {
  chain_replay(st, ff_bench::kW3Size, ff_bench::kW3Ops, ff_bench::kW3EvalEvery);
}

void BM_W3_frozen(benchmark::State& st) {
  chain_frozen(st, ff_bench::kW3Size, ff_bench::kW3Ops, ff_bench::kW3EvalEvery);
}

// The demo's step on a 128 x 128 plate (a hot square in a cold plate), traced or frozen; each
// call's result is checked against the host loop's step of the same plate.
constexpr uint32_t kHeatSide = 128;

std::vector<float> heat_plate() {
  std::vector<float> u(size_t(kHeatSide) * kHeatSide, 0.f);
  for (uint32_t y = kHeatSide / 4; y < kHeatSide / 2; ++y)
    for (uint32_t x = kHeatSide / 4; x < kHeatSide / 2; ++x)
      u[size_t(y) * kHeatSide + x] = 100.f;
  return u;
}

template <class Step>
void heat(benchmark::State& st, bool traced, Step&& step_fn) {
  const std::vector<float> plate = heat_plate();
  std::vector<float> want(plate.size());
  heat::reference_step(plate, want, kHeatSide);
  for (float& v : want)
    v = ff_bench::timed_expectation(v);
  ff::Float u = ff::Float::from(plate);
  ff::eval(u);
  step_fn(u);  // warm: compiles (traced) or records (frozen)
  time_steady(
      st, want, 1,
      [&] {
        ff::Float y = step_fn(u);
        ff::sync();
        return y;
      },
      traced);
}

void BM_heat_traced(benchmark::State& st) {
  heat(st, true, [](const ff::Float& u) { return heat::step(u, kHeatSide); });
}

void BM_heat_frozen(benchmark::State& st) {
  auto f = ff::freeze(heat::step);
  heat(st, false, [&](const ff::Float& u) { return f(u, kHeatSide); });
}

// The 2D particle step (examples/particle_step.h) at n particles, traced and frozen side by
// side in rounds (rounds.h): 2 launches per call (the density scatter, then everything else).
// Each call steps the same initial state (arrays are values: the step's assignments leave
// `start` as it was); the last timed call of each side is checked against the traced step's
// x. Counters: us_traced, us_frozen and traced_over_frozen, medians over the rounds.
void particles_bench(benchmark::State& st, size_t n) {
  Particles start = particles::make(n);
  ff::eval(start.x, start.y, start.vx, start.vy);
  Particles reference = start;
  particles::step(reference, 0.01f);
  std::vector<float> want = reference.x.to_vector();
  for (float& v : want)
    v = ff_bench::timed_expectation(v);
  auto frozen_step = ff::freeze([](Particles& p) { particles::step(p, 0.01f); });
  Particles last[2];
  std::array<std::function<void()>, 2> sides = {[&] {
                                                  last[0] = start;
                                                  particles::step(last[0], 0.01f);
                                                  ff::sync();
                                                },
                                                [&] {
                                                  last[1] = start;
                                                  frozen_step(last[1]);
                                                  ff::sync();
                                                }};
  // Warm, twice: the first calls compile (traced) and record (frozen), the frozen function's
  // first replay builds its plan and compiles the kernels the optimiser made (see time_steady).
  for (int warm = 0; warm < 2; ++warm)
    for (auto& side : sides)
      side();
  const ff::Stats before = ff::stats();
  const auto rounds = ff_bench::run_rounds(st, sides);
  // Per round: each side called twice (untimed, then timed), 2 launches per call.
  ff_bench::require_steady_state(st, before, 8);
  st.counters["launches"] = st.counters["launches"] / 4;  // per call, as elsewhere
  if (frozen_step.n_recordings() != 1) {
    st.SkipWithError(("the frozen step recorded " + std::to_string(frozen_step.n_recordings()) +
                      " times (once expected)")
                         .c_str());
    return;
  }
  for (int s = 0; s < 2; ++s)
    if (std::string err = ff_bench::check_result(last[s].x, want); !err.empty()) {
      st.SkipWithError(("wrong result of the last timed " +
                        std::string(s == 0 ? "traced" : "frozen") + " step: " + err)
                           .c_str());
      return;
    }
  auto median_of = [&](auto per_round) { return ff_bench::median_over(rounds, per_round); };
  st.counters["us_traced"] = median_of([](const auto& t) { return t[0] * 1e6; });
  st.counters["us_frozen"] = median_of([](const auto& t) { return t[1] * 1e6; });
  st.counters["traced_over_frozen"] = median_of([](const auto& t) { return t[0] / t[1]; });
}

void BM_particles_4096(benchmark::State& st) {
  particles_bench(st, 4096);
}

void BM_particles_65536(benchmark::State& st) {
  particles_bench(st, 65536);
}

class Summary : public ff_bench::Reporter {
 public:
  using Reporter::Reporter;

  void Finalize() override {
    Reporter::Finalize();
    std::printf("\nfreeze summary (%s)\n", any_median() ? "medians" : "single runs");
    auto us = [&](const std::string& name) {
      const Result* r = find(name);
      return r ? r->counter("us_per_item") : -1.0;
    };
    for (int k : {1, 10, 100}) {
      double r = us("BM_args_" + std::to_string(k) + "_replay");
      double f = us("BM_args_" + std::to_string(k) + "_frozen");
      if (r > 0 && f > 0)
        std::printf(
            "%3d array args: replay %7.2f us, frozen %7.2f us: frozen/replay %.3f "
            "(target <= %.1f)\n",
            k, r, f, f / r, k == 100 ? 1.3 : 1.1);
    }
    for (const char* w : {"W1", "W3"}) {
      double r = us(std::string("BM_") + w + "_replay");
      double f = us(std::string("BM_") + w + "_frozen");
      if (r > 0 && f > 0)
        std::printf(
            "%s: replay %7.2f us/call, frozen %7.2f us/call: frozen/replay %.3f "
            "(target <= 1.1)\n",
            w, r, f, f / r);
    }
    double fo = us("BM_W1_first_call_optimized"), fu = us("BM_W1_first_call_unoptimized");
    if (fo > 0 && fu > 0)
      std::printf(
          "W1 first call of a new frozen function (record, optimise, compile, run): optimiser "
          "on %.0f us, off %.0f us: on/off %.2f (target <= 1.5)\n",
          fo, fu, fo / fu);
    double t = us("BM_heat_traced"), f = us("BM_heat_frozen");
    if (t > 0 && f > 0)
      std::printf("heat step (%ux%u): traced %7.2f us, frozen %7.2f us: traced/frozen %.2fx\n",
                  kHeatSide, kHeatSide, t, f, t / f);
    for (const char* n : {"4096", "65536"}) {
      const Result* r = find(std::string("BM_particles_") + n);
      if (!r)
        continue;
      std::printf(
          "particle step (%s particles): traced %7.2f us, frozen %7.2f us: traced/frozen "
          "%.2fx (median of per-round ratios)%s\n",
          n, r->counter("us_traced"), r->counter("us_frozen"), r->counter("traced_over_frozen"),
          std::string(n) == "4096" ? " (target >= 1.5)" : "");
    }
    ff_bench::warn_if_busy(stdout);
  }
};

}  // namespace

int main(int argc, char** argv) {
  ff_bench::CommandLine cl(argc, argv);
  ff_bench::g_expect_wrong = cl.take_switch("ff_expect_wrong");
  cl.default_to("benchmark_repetitions", "9");
  // Repetitions of the two sides interleaved in random order: on a shared machine the ratios
  // then compare like with like.
  cl.default_to("benchmark_enable_random_interleaving", "true");
  if (!cl.has("benchmark_display_aggregates_only"))
    cl.default_to("benchmark_report_aggregates_only", "true");
  try {
    ff::init();
    benchmark::AddCustomContext("ff_backend", ff::backend_name());
    if (ff_bench::g_expect_wrong)
      benchmark::AddCustomContext("self_test", ff_bench::kSelfTestContext);
    if (int status = cl.initialize_benchmark(); status != 0)
      return status;
    using ff_bench::guarded;
    for (auto [name, fn] :
         {std::pair{"BM_args_1_replay", &guarded<BM_args_1_replay>},
          {"BM_args_1_frozen", &guarded<BM_args_1_frozen>},
          {"BM_args_10_replay", &guarded<BM_args_10_replay>},
          {"BM_args_10_frozen", &guarded<BM_args_10_frozen>},
          {"BM_args_100_replay", &guarded<BM_args_100_replay>},
          {"BM_args_100_frozen", &guarded<BM_args_100_frozen>},
          {"BM_W1_replay", &guarded<BM_W1_replay>},
          {"BM_W1_frozen", &guarded<BM_W1_frozen>},
          {"BM_W3_replay", &guarded<BM_W3_replay>},
          {"BM_W3_frozen", &guarded<BM_W3_frozen>},
          {"BM_W1_first_call_optimized", &guarded<BM_W1_first_call_optimized>},
          {"BM_W1_first_call_unoptimized", &guarded<BM_W1_first_call_unoptimized>},
          {"BM_heat_traced", &guarded<BM_heat_traced>},
          {"BM_heat_frozen", &guarded<BM_heat_frozen>},
          {"BM_particles_4096", &guarded<BM_particles_4096>},
          {"BM_particles_65536", &guarded<BM_particles_65536>}})
      benchmark::RegisterBenchmark(name, fn)->UseManualTime();
    Summary reporter(cl.color());
    const size_t n_run = benchmark::RunSpecifiedBenchmarks(&reporter);
    benchmark::Shutdown();
    ff::shutdown();
    return ff_bench::exit_status("ff_bench_freeze", n_run, reporter, {});
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ff_bench_freeze: %s\n", e.what());
    return 1;
  }
}
