// freezeframe example: the heat demo's plate split by rows over MPI ranks, with a halo exchange
// per step inside a frozen step.
//
// Rank r owns a band of consecutive rows and keeps them between a halo row above and one below
// (local grid: rows + 2 by n). Each step updates its owned cells with the demo's 5-point stencil
// (the plate's boundary cells keep their value), then sends its new first row up and its last
// one down with ff::dist::sendrecv to the ranks before and after it (ff::dist::relative: the
// ranks at the plate's edges send or receive nothing) and writes the received rows into the
// halos of its result, in place. The band's place comes from ff::dist::rank_expr(), so the
// step's recording is the same on every rank (one rank's could replay on all). The step is frozen:
// after the first call every step replays, halo exchange included. At the end every rank gathers
// the plate and checks it against the single-process demo (heat::step from heat_step.h) bit for
// bit.
//
//   mpirun -np 2 ff_heat_dist [--n N] [--steps S] [--traced]     defaults: 256, 100
#include "heat_dist.h"

#include <freezeframe/freezeframe.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "heat_step.h"

namespace {

using Clock = std::chrono::steady_clock;

int usage() {
  std::fprintf(stderr, "usage: mpirun -np R ff_heat_dist [--n N] [--steps S] [--traced]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  uint32_t n = 256;
  int steps = 100;
  bool traced = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--n") == 0 && i + 1 < argc)
      n = static_cast<uint32_t>(std::strtoul(argv[++i], nullptr, 10));
    else if (std::strcmp(argv[i], "--steps") == 0 && i + 1 < argc)
      steps = std::atoi(argv[++i]);
    else if (std::strcmp(argv[i], "--traced") == 0)
      traced = true;
    else
      return usage();
  }
  if (n < 3 || n > 8192 || steps < 1)
    return usage();
  try {
    ff::dist::init(argc, argv);
    int r = ff::dist::rank(), ranks = ff::dist::size();
    if (static_cast<uint32_t>(ranks) > n) {
      std::fprintf(stderr, "ff_heat_dist: more ranks (%d) than rows (%u)\n", ranks, n);
      return 2;
    }
    heat_dist::Local l = heat_dist::local_plate(r, ranks, n);
    heat_dist::Band b = l.band;
    ff::Float u = ff::Float::from(l.grid);
    heat_dist::exchange_halos(u, n);  // each step leaves them filled

    auto frozen =
        ff::freeze(heat_dist::local_step, ff::FreezeOptions{.name = "heat step with halos"});
    auto t0 = Clock::now();
    for (int s = 0; s < steps; ++s)
      u = traced ? heat_dist::local_step(u, n) : frozen(u, n);
    std::vector<float> got = heat_dist::gather_plate(u, l, n);
    double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();

    // The single-process demo's steps on the whole plate, on every rank.
    ff::Float whole = ff::Float::from(l.plate);
    for (int s = 0; s < steps; ++s)
      whole = heat::step(whole, n);
    std::vector<float> want = whole.to_vector();
    size_t differ = 0;
    for (size_t k = 0; k < want.size(); ++k)
      differ += std::memcmp(&got[k], &want[k], sizeof(float)) != 0;
    bool same = got.size() == want.size() && differ == 0;
    ff::UInt32 all_same =
        ff::dist::all_reduce(ff::UInt32::from({same ? 1u : 0u}), ff::ReduceOp::Min);
    bool everyone = all_same.to_vector()[0] == 1u;
    if (r == 0) {
      std::printf("freezeframe example: heat on a %u x %u plate, %d steps, %d ranks (%s step)\n", n,
                  n, steps, ranks, traced ? "traced" : "frozen");
      std::printf("rank 0: rows [%u, %u), %.2f ms per step, %zu recordings, %zu replays\n", b.begin,
                  b.end, ms / steps, frozen.n_recordings(), frozen.n_replays());
      std::printf("equals the single-process run bit for bit on every rank: %s\n",
                  everyone ? "yes" : "NO");
    }
    if (!same)
      std::fprintf(stderr, "rank %d: %zu of %zu cells differ from the single-process run\n", r,
                   differ, want.size());
    ff::dist::finalize();
    return everyone ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ff_heat_dist: %s\n", e.what());
    return 1;
  }
}
