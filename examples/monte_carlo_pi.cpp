// freezeframe example: a Monte Carlo estimate of pi with random numbers inside a frozen
// function.
//
// Each batch draws `lanes` points in the unit square from ff::PCG32 (one stream per lane) and
// counts those inside the quarter circle. The batch is frozen with ff::freeze: the generator is
// taken by reference, so every replay advances the caller's generator exactly as a traced call
// would. The same batches run traced from an identically seeded generator; the example checks
// that both draw the same points (equal counts and equal generator states) and prints the
// estimate and the time per batch, traced and frozen.
//
//   ff_monte_carlo [--lanes N] [--batches B]        defaults: 1M lanes, 200 batches
#include <freezeframe/freezeframe.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numbers>

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// One batch: how many of this batch's points fall inside the quarter circle. The generator's
// new state is evaluated with the count, so the next batch starts from a buffer instead of an
// ever longer chain of lazy state updates.
ff::UInt32 batch(ff::PCG32& rng) {
  ff::Float x = rng.next_float();
  ff::Float y = rng.next_float();
  ff::UInt32 inside = ff::select(x * x + y * y < 1.f, ff::UInt32(1u), ff::UInt32(0u));
  ff::UInt32 count = ff::sum(inside);
  ff::eval(count, rng.state);
  return count;
}

int usage() {
  std::fprintf(stderr, "usage: ff_monte_carlo [--lanes N] [--batches B]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  size_t lanes = 1 << 20;
  int batches = 200;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--lanes") == 0 && i + 1 < argc)
      lanes = std::strtoull(argv[++i], nullptr, 10);
    else if (std::strcmp(argv[i], "--batches") == 0 && i + 1 < argc)
      batches = std::atoi(argv[++i]);
    else
      return usage();
  }
  if (lanes < 1 || lanes > (size_t{1} << 28) || batches < 2)
    return usage();

  try {
    ff::init();
    std::printf("freezeframe example: Monte Carlo pi, %zu lanes x %d batches, backend %s\n", lanes,
                batches, ff::backend_name().c_str());

    // Traced: every batch traces its operations again.
    ff::PCG32 traced_rng;
    traced_rng.seed(lanes, /*initstate=*/42, /*initseq=*/54);
    uint64_t traced_inside = 0;
    auto t0 = Clock::now();
    for (int b = 0; b < batches; ++b)
      traced_inside += batch(traced_rng).to_vector().at(0);
    const double traced_ms = ms_since(t0);

    // Frozen: the first call records, the others replay and advance `rng` in place.
    auto frozen_batch = ff::freeze(batch, ff::FreezeOptions{.name = "pi batch"});
    ff::PCG32 rng;
    rng.seed(lanes, /*initstate=*/42, /*initseq=*/54);
    uint64_t frozen_inside = 0;
    t0 = Clock::now();
    for (int b = 0; b < batches; ++b)
      frozen_inside += frozen_batch(rng).to_vector().at(0);
    const double frozen_ms = ms_since(t0);

    const bool same_state = rng.state.to_vector() == traced_rng.state.to_vector();
    const double points = static_cast<double>(lanes) * batches;
    const double pi = 4.0 * static_cast<double>(frozen_inside) / points;
    const double error = std::abs(pi - std::numbers::pi);
    const double sigma =
        4.0 * std::sqrt(std::numbers::pi / 4 * (1 - std::numbers::pi / 4) / points);

    std::printf("\nresult\n");
    std::printf("  pi estimate        %.6f (error %.2g, %.1f standard deviations)\n", pi, error,
                error / sigma);
    std::printf("  inside, traced     %llu\n", static_cast<unsigned long long>(traced_inside));
    std::printf("  inside, frozen     %llu\n", static_cast<unsigned long long>(frozen_inside));
    std::printf("  generator states   %s\n", same_state ? "identical" : "DIFFERENT");
    std::printf("\ntimings (each batch reads its count back)\n");
    std::printf("  traced             %8.3f ms/batch\n", traced_ms / batches);
    std::printf("  frozen             %8.3f ms/batch  (%zu recording, %zu replays)\n",
                frozen_ms / batches, frozen_batch.n_recordings(), frozen_batch.n_replays());
    std::printf("  traced / frozen    %8.2fx\n", traced_ms / frozen_ms);

    const bool ok = same_state && traced_inside == frozen_inside && error < 6 * sigma + 1e-12 &&
                    frozen_batch.n_recordings() == 1;
    std::printf("\n%s\n", ok ? "check: OK (frozen draws the traced points; the estimate is "
                               "within 6 standard deviations)"
                             : "check: FAILED");
    rng = ff::PCG32();
    traced_rng = ff::PCG32();
    ff::shutdown();
    return ok ? 0 : 1;
  } catch (const ff::Error& e) {
    std::fprintf(stderr, "ff_monte_carlo: %s\n", e.what());
    return 1;
  }
}
