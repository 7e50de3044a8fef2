// The cost of a reverse-mode gradient against the forward pass alone, side by side in one run
// (traced: every call builds the graph anew, as a training loop does):
//
//   BM_chain   2^20 floats through a chain of 99 elementwise operations (33 times
//              y = y + 0.01 sin(y), which keeps the derivative near 1 so it can be checked in
//              float): the forward side evaluates y; the gradient side also builds the
//              backward pass from y and evaluates y and grad(x) together.
//   BM_heat    the demo's heat stencil (examples/heat_step.h) on a 1024 x 1024 plate, 4 steps
//              (each evaluated, as the demo does), then the loss sum(u * u): forward alone vs
//              forward, backward and grad(u0) evaluated.
//   BM_train_step_small, _large  the inverse heat problem's training step
//              (examples/inverse_heat.h: 8 stencil steps, the loss, backward, an Adam step on
//              the diffusion number) on a 128 x 128 and a 1024 x 1024 plate, traced against
//              frozen (ff::freeze: replays). Target: traced / frozen >= 5 at 128.
//
// Target (issue 18): gradient / forward <= 3 for both. Results are checked against the same
// computations on the host (the derivative by the chain rule in double for BM_chain, the
// stencil's adjoint for BM_heat).
//
// Own flags: --ff_ad_size=N (BM_chain's floats), --ff_ad_side=N (BM_heat's plate side),
// --ff_train_sides=S,L (the training steps' plate sides), --ff_expect_wrong (harness.h). Defaults
// unless given: --benchmark_repetitions=5
// --benchmark_report_aggregates_only=true.
#include <benchmark/benchmark.h>
#include <freezeframe/freezeframe.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "chain.h"
#include "examples/heat_step.h"
#include "examples/inverse_heat.h"
#include "harness.h"
#include "rounds.h"
#include "workloads.h"

namespace {

using ff::Float;

size_t g_size = size_t{1} << 20;
uint32_t g_side = 1024;
int64_t g_train_small = 128, g_train_large = 1024;
constexpr int kChainSteps = 33;  // 3 operations each
constexpr int kHeatSteps = 4;

enum Side { kForward, kGradient, kSides };

constexpr const char* kSideNames[kSides] = {"forward", "gradient"};

Float chain(const Float& x) {
  Float y = x;
  for (int k = 0; k < kChainSteps; ++k)
    y = y + 0.01f * ff::sin(y);
  return y;
}

/// "" when got is within a relative 1e-4 (and 1e-6 absolute) of want at every checked element.
std::string compare(const std::vector<float>& got, const std::vector<double>& want) {
  if (got.size() != want.size())
    return "size " + std::to_string(got.size()) + ", want " + std::to_string(want.size());
  const size_t step = std::max<size_t>(1, want.size() / 65536);
  for (size_t i = 0; i < want.size(); i += step) {
    double w = ff_bench::timed_expectation(want[i]);
    if (!(std::fabs(got[i] - w) <= 1e-4 * std::fabs(w) + 1e-6))
      return "element " + std::to_string(i) + " is " + std::to_string(got[i]) + ", want " +
             std::to_string(w);
  }
  return "";
}

/// Stores the ratio counters and checks the two results; false after SkipWithError.
bool finish(benchmark::State& st, const std::vector<std::array<double, kSides>>& rounds,
            const std::vector<std::pair<std::string, std::string>>& checks) {
  for (const auto& [what, err] : checks)
    if (!err.empty()) {
      st.SkipWithError(("wrong result of the last timed call (" + what + "): " + err).c_str());
      return false;
    }
  auto median_of = [&](auto per_round) { return ff_bench::median_over(rounds, per_round); };
  for (int s = 0; s < kSides; ++s)
    st.counters[std::string("ms_") + kSideNames[s]] =
        median_of([s](const auto& t) { return t[s] * 1e3; });
  st.counters["gradient_over_forward"] =
      median_of([](const auto& t) { return t[kGradient] / t[kForward]; });
  return true;
}

void BM_chain(benchmark::State& st) {
  ff::init("llvm");
  const size_t n = g_size;
  std::vector<float> xs(n);
  for (size_t i = 0; i < n; ++i)
    xs[i] = -3.f + 6.f * float(i % 1000) / 1000.f;
  const Float x = Float::from(xs);
  Float xg = Float::from(xs);
  ff::enable_grad(xg);
  Float y_forward, y_gradient, g;
  std::array<std::function<void()>, kSides> sides = {[&] {
                                                       y_forward = Float();
                                                       y_forward = chain(x);
                                                       ff::eval(y_forward);
                                                       ff::sync();
                                                     },
                                                     [&] {
                                                       y_gradient = Float();
                                                       g = Float();
                                                       ff::clear_grad(xg);
                                                       y_gradient = chain(xg);
                                                       ff::backward(y_gradient);
                                                       g = ff::grad(xg);
                                                       ff::eval(y_gradient, g);
                                                       ff::sync();
                                                     }};
  const auto rounds = ff_bench::run_rounds(st, sides);
  std::vector<double> want_y(n), want_g(n);
  for (size_t i = 0; i < n; ++i) {
    double y = xs[i], d = 1;
    for (int k = 0; k < kChainSteps; ++k) {
      d *= 1 + 0.01 * std::cos(y);
      y = y + 0.01 * std::sin(y);
    }
    want_y[i] = y;
    want_g[i] = d;
  }
  finish(st, rounds,
         {{"forward y", compare(y_forward.to_vector(), want_y)},
          {"gradient y", compare(ff::detach(y_gradient).to_vector(), want_y)},
          {"gradient grad(x)", compare(g.to_vector(), want_g)}});
}

/// The loss after the heat steps, and the plate they start from.
Float heat_loss(const Float& u0, uint32_t side) {
  Float u = u0;
  for (int k = 0; k < kHeatSteps; ++k)
    u = heat::step(u, side);
  return ff::sum(u * u);
}

void BM_heat(benchmark::State& st) {
  ff::init("llvm");
  const uint32_t n = g_side;
  std::vector<float> u0(size_t(n) * n);
  for (size_t i = 0; i < u0.size(); ++i)
    u0[i] = float((i * 7919) % 1000) / 1000.f;
  const Float u = Float::from(u0);
  Float ug = Float::from(u0);
  ff::enable_grad(ug);
  Float loss_forward, loss_gradient, g;
  std::array<std::function<void()>, kSides> sides = {[&] {
                                                       loss_forward = Float();
                                                       loss_forward = heat_loss(u, n);
                                                       ff::eval(loss_forward);
                                                       ff::sync();
                                                     },
                                                     [&] {
                                                       loss_gradient = Float();
                                                       g = Float();
                                                       ff::clear_grad(ug);
                                                       loss_gradient = heat_loss(ug, n);
                                                       ff::backward(loss_gradient);
                                                       g = ff::grad(ug);
                                                       ff::eval(loss_gradient, g);
                                                       ff::sync();
                                                     }};
  const auto rounds = ff_bench::run_rounds(st, sides);
  // The host's adjoint: forward in float (the kernels' order), backward in double.
  std::vector<std::vector<float>> states{u0};
  for (int k = 0; k < kHeatSteps; ++k) {
    std::vector<float> next(u0.size());
    heat::reference_step(states.back(), next, n);
    states.push_back(std::move(next));
  }
  std::vector<double> adj(u0.size());
  for (size_t i = 0; i < adj.size(); ++i)
    adj[i] = 2.0 * states.back()[i];
  for (int k = kHeatSteps - 1; k >= 0; --k) {
    std::vector<double> prev(adj.size(), 0.0);
    for (uint32_t yy = 0; yy < n; ++yy)
      for (uint32_t xx = 0; xx < n; ++xx) {
        size_t i = size_t(yy) * n + xx;
        bool interior = xx > 0 && xx < n - 1 && yy > 0 && yy < n - 1;
        if (!interior) {
          prev[i] += adj[i];
          continue;
        }
        prev[i] += adj[i] * (1 - 4.0 * heat::kAlpha);
        for (size_t j : {i - 1, i + 1, i - n, i + n})
          prev[j] += adj[i] * heat::kAlpha;
      }
    adj = std::move(prev);
  }
  double loss = 0;
  for (float v : states.back())
    loss += double(v) * v;
  finish(st, rounds,
         {{"forward loss", compare(loss_forward.to_vector(), {loss})},
          {"gradient loss", compare(ff::detach(loss_gradient).to_vector(), {loss})},
          {"gradient grad(u0)", compare(g.to_vector(), adj)}});
}

void bm_train_step(benchmark::State& st, uint32_t n) {
  ff::init("llvm");
  constexpr int kSimSteps = 8;
  std::vector<float> plate(size_t(n) * n);
  for (size_t i = 0; i < plate.size(); ++i)
    plate[i] = float((i * 7919) % 1000) / 100.f;
  const Float u0 = Float::from(plate);
  Float target = u0;
  for (int k = 0; k < kSimSteps; ++k)
    target = heat::diffuse(target, Float::from({0.2f}), n);
  auto frozen_step = ff::freeze(inverse_heat::train_step);

  enum { kTraced, kFrozen };

  std::array<Float, 2> alpha = {Float::from({0.05f}), Float::from({0.05f})};
  std::array<ff::Adam, 2> opt = {ff::Adam(0.01), ff::Adam(0.01)};
  for (int s = 0; s < 2; ++s)
    opt[s].init(alpha[s]);
  std::array<Float, 2> loss;
  std::array<std::function<void()>, 2> sides = {
      [&] {
        loss[kTraced] =
            inverse_heat::train_step(alpha[kTraced], opt[kTraced], u0, target, n, kSimSteps);
        ff::eval(loss[kTraced]);
        ff::sync();
      },
      [&] {
        loss[kFrozen] = frozen_step(alpha[kFrozen], opt[kFrozen], u0, target, n, kSimSteps);
        ff::eval(loss[kFrozen]);
        ff::sync();
      }};
  const auto rounds = ff_bench::run_rounds(st, sides);
  // Both sides took as many steps from the same start: the frozen one must have followed the
  // traced one exactly.
  std::vector<float> a_traced = alpha[kTraced].to_vector(), a_frozen = alpha[kFrozen].to_vector();
  std::vector<double> want(a_traced.begin(), a_traced.end());
  if (std::string err = compare(a_frozen, want); !err.empty() || a_frozen != a_traced) {
    st.SkipWithError(("wrong result of the last frozen timed call: alpha " + err).c_str());
    return;
  }
  if (frozen_step.n_recordings() != 1) {
    st.SkipWithError(("the frozen step holds " + std::to_string(frozen_step.n_recordings()) +
                      " recordings, want 1")
                         .c_str());
    return;
  }
  auto median_of = [&](auto per_round) { return ff_bench::median_over(rounds, per_round); };
  st.counters["ms_traced"] = median_of([](const auto& t) { return t[kTraced] * 1e3; });
  st.counters["ms_frozen"] = median_of([](const auto& t) { return t[kFrozen] * 1e3; });
  st.counters["traced_over_frozen"] =
      median_of([](const auto& t) { return t[kTraced] / t[kFrozen]; });
}

void BM_train_step_small(benchmark::State& st) {
  bm_train_step(st, uint32_t(g_train_small));
}

void BM_train_step_large(benchmark::State& st) {
  bm_train_step(st, uint32_t(g_train_large));
}

class Summary : public ff_bench::Reporter {
 public:
  using Reporter::Reporter;

  void Finalize() override {
    Reporter::Finalize();
    std::printf("\nautodiff summary (%s; ratio = gradient time / forward time, traced)\n",
                any_median() ? "medians of per-round ratios" : "single runs");
    for (const char* bench : {"BM_chain", "BM_heat"}) {
      const Result* r = find(bench);
      if (!r)
        continue;
      double v = r->counter("gradient_over_forward");
      std::printf(
          "%-9s forward %8.3f ms  gradient %8.3f ms  gradient_over_forward %6.3f "
          "(target <= 3)%s\n",
          bench, r->counter("ms_forward"), r->counter("ms_gradient"), v, v <= 3 ? "" : "  MISSED");
    }
    for (const char* bench : {"BM_train_step_small", "BM_train_step_large"}) {
      const Result* r = find(bench);
      if (!r)
        continue;
      double v = r->counter("traced_over_frozen");
      bool small = std::string(bench).ends_with("small");
      std::printf(
          "%-19s %4lld^2  traced %8.3f ms  frozen %8.3f ms  traced_over_frozen %6.3f%s\n", bench,
          static_cast<long long>(small ? g_train_small : g_train_large), r->counter("ms_traced"),
          r->counter("ms_frozen"), v,
          small ? (v >= 5 ? " (target >= 5 at 128^2)" : " (target >= 5 at 128^2)  MISSED") : "");
    }
    ff_bench::warn_if_busy(stdout);
  }
};

}  // namespace

int main(int argc, char** argv) {
  ff_bench::run_with_passive_openmp(argv);
  ff_bench::CommandLine cl(argc, argv);
  ff_bench::g_expect_wrong = cl.take_switch("ff_expect_wrong");
  if (auto s = cl.take("ff_ad_size"))
    g_size = size_t(std::stoull(*s));
  if (auto s = cl.take("ff_ad_side"))
    g_side = uint32_t(std::stoul(*s));
  if (auto s = cl.take("ff_train_sides")) {  // "small,large"
    g_train_small = std::stoll(*s);
    g_train_large = std::stoll(s->substr(s->find(',') + 1));
  }
  cl.default_to("benchmark_repetitions", "5");
  if (!cl.has("benchmark_display_aggregates_only"))
    cl.default_to("benchmark_report_aggregates_only", "true");
  try {
    if (ff_bench::g_expect_wrong)
      benchmark::AddCustomContext("self_test", ff_bench::kSelfTestContext);
    if (int status = cl.initialize_benchmark(); status != 0)
      return status;
    using ff_bench::guarded;
    for (auto [name, fn] :
         {std::pair{"BM_chain", &guarded<BM_chain>}, {"BM_heat", &guarded<BM_heat>}})
      benchmark::RegisterBenchmark(name, fn)->UseManualTime();
    benchmark::RegisterBenchmark("BM_train_step_small", &guarded<BM_train_step_small>)
        ->UseManualTime();
    benchmark::RegisterBenchmark("BM_train_step_large", &guarded<BM_train_step_large>)
        ->UseManualTime();
    Summary reporter(cl.color());
    const size_t n_run = benchmark::RunSpecifiedBenchmarks(&reporter);
    benchmark::Shutdown();
    ff::shutdown();
    return ff_bench::exit_status("ff_bench_autodiff", n_run, reporter, {});
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ff_bench_autodiff: %s\n", e.what());
    return 1;
  }
}
