// freezeframe example: Monte Carlo pi over MPI ranks, combined with ff::dist::all_reduce.
//
// Every rank draws `lanes` points per batch from its own ff::PCG32 streams (seeded by rank, so
// no two ranks draw the same points) and counts those inside the quarter circle; an all_reduce
// adds the counts of every rank inside the frozen batch, so each replay is one kernel, one
// reduction and one collective. The example checks that every rank holds the same total and
// that a traced run with the same seeds gives the same count.
//
//   mpirun -np 2 ff_monte_carlo_dist [--lanes N] [--batches B]     defaults: 1M lanes, 100
#include <freezeframe/freezeframe.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numbers>

namespace {

/// This batch's points inside the quarter circle, summed over every rank (UInt64: the total
/// of many ranks' counts does not fit 32 bits).
ff::UInt64 batch(ff::PCG32& rng) {
  ff::Float x = rng.next_float();
  ff::Float y = rng.next_float();
  ff::UInt32 inside = ff::select(x * x + y * y < 1.f, ff::UInt32(1u), ff::UInt32(0u));
  ff::UInt64 mine = ff::sum(ff::cast<ff::UInt64>(inside));
  ff::UInt64 all = ff::dist::all_reduce(mine, ff::ReduceOp::Add);
  ff::eval(all, rng.state);
  return all;
}

int usage() {
  std::fprintf(stderr, "usage: mpirun -np R ff_monte_carlo_dist [--lanes N] [--batches B]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  size_t lanes = 1 << 20;
  int batches = 100;
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
    ff::dist::init(argc, argv);
    int r = ff::dist::rank(), ranks = ff::dist::size();
    auto seeded = [&] {
      ff::PCG32 rng;
      rng.seed(lanes, /*initstate=*/42, /*initseq=*/54 + static_cast<uint64_t>(r) * lanes);
      return rng;
    };
    using Clock = std::chrono::steady_clock;
    ff::PCG32 traced_rng = seeded();
    uint64_t traced_inside = 0;
    auto t0 = Clock::now();
    for (int b = 0; b < batches; ++b)
      traced_inside += batch(traced_rng).to_vector().at(0);
    double traced_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();

    auto frozen_batch = ff::freeze(batch, ff::FreezeOptions{.name = "pi batch over ranks"});
    ff::PCG32 rng = seeded();
    uint64_t inside = 0;
    t0 = Clock::now();
    for (int b = 0; b < batches; ++b)
      inside += frozen_batch(rng).to_vector().at(0);
    double frozen_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();

    // Every rank must hold the same total: compare the smallest and the largest.
    ff::UInt64 t = ff::UInt64::from({inside});
    uint64_t lo = ff::dist::all_reduce(t, ff::ReduceOp::Min).to_vector()[0];
    uint64_t hi = ff::dist::all_reduce(t, ff::ReduceOp::Max).to_vector()[0];
    bool ok = lo == hi && inside == traced_inside;
    if (r == 0) {
      double total = static_cast<double>(lanes) * batches * ranks;
      double pi = 4.0 * static_cast<double>(inside) / total;
      std::printf(
          "freezeframe example: Monte Carlo pi over %d ranks, %zu lanes x %d batches each\n", ranks,
          lanes, batches);
      std::printf("pi ~ %.6f (error %.2e), %.0f points\n", pi, std::abs(pi - std::numbers::pi),
                  total);
      std::printf("per batch: traced %.3f ms, frozen %.3f ms (%zu recordings, %zu replays)\n",
                  traced_ms / batches, frozen_ms / batches, frozen_batch.n_recordings(),
                  frozen_batch.n_replays());
      std::printf("every rank holds the same total, equal to the traced run's: %s\n",
                  ok ? "yes" : "NO");
    }
    ff::dist::finalize();
    return ok ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ff_monte_carlo_dist: %s\n", e.what());
    return 1;
  }
}
