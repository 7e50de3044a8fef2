// freezeframe demo: explicit 2D heat diffusion on an n x n grid.
//
// Each step updates every interior cell from its four neighbours,
//     u' = u + alpha * (left + right + up + down - 4 u),
// read with ff::gather at the element index -1, +1, -n and +n, masked to the interior; the
// boundary cells keep their temperature. The step runs twice over the same number of steps:
// traced (every call traces its array operations again; from the second step on the fused
// kernel comes from the cache) and frozen with ff::freeze (the first call records, every later
// one replays the recording: no tracing at all). Both results are checked against each other
// and against a plain C++ loop; the timings show traced vs frozen per step, against the same
// step written by hand as an OpenMP loop over rows on as many threads as freezeframe uses.
//
//   ff_demo [--n N] [--steps S]        defaults: 512 x 512, 500 steps
#include <freezeframe/freezeframe.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "heat_step.h"

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// Initial plate: a hot square (100 degrees) off the centre, a warm stripe, the rest at 0.
std::vector<float> initial_plate(uint32_t n) {
  std::vector<float> u(size_t(n) * n, 0.f);
  for (uint32_t y = 0; y < n; ++y) {
    for (uint32_t x = 0; x < n; ++x) {
      if (x > n / 4 && x < n / 2 && y > n / 4 && y < n / 2) {
        u[size_t(y) * n + x] = 100.f;
      } else if (y > 3 * n / 4 && y < 3 * n / 4 + n / 16) {
        u[size_t(y) * n + x] = 25.f;
      }
    }
  }
  return u;
}

int usage() {
  std::fprintf(stderr, "usage: ff_demo [--n N] [--steps S]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  uint32_t n = 512;
  int steps = 500;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--n") == 0 && i + 1 < argc) {
      n = static_cast<uint32_t>(std::atoi(argv[++i]));
    } else if (std::strcmp(argv[i], "--steps") == 0 && i + 1 < argc) {
      steps = std::atoi(argv[++i]);
    } else {
      return usage();
    }
  }
  if (n < 4 || n > 8192 || steps < 2) {
    return usage();
  }

  try {
    ff::init();
    std::printf("freezeframe demo: 2D heat diffusion, %u x %u grid, %d steps, backend %s\n", n, n,
                steps, ff::backend_name().c_str());
    const std::vector<float> plate = initial_plate(n);

    // --- freezeframe, traced: every step traces its operations again ---
    ff::Float u = ff::Float::from(plate);
    ff::sync();
    const ff::Stats s0 = ff::stats();

    auto t0 = Clock::now();
    u = heat::step(u, n);
    ff::sync();
    const double first_ms = ms_since(t0);
    const ff::Stats s1 = ff::stats();

    t0 = Clock::now();
    for (int s = 1; s < steps; ++s) {
      u = heat::step(u, n);
    }
    ff::sync();
    const double traced_ms = ms_since(t0);
    const ff::Stats s2 = ff::stats();
    const std::vector<float> result = u.to_vector();
    const float total_ff = ff::sum(u).to_vector().at(0);

    // --- freezeframe, frozen: the first call records, the others replay ---
    auto frozen_step = ff::freeze(heat::step, ff::FreezeOptions{.name = "heat step"});
    ff::Float v = ff::Float::from(plate);
    ff::sync();
    t0 = Clock::now();
    v = frozen_step(v, n);
    ff::sync();
    const double record_ms = ms_since(t0);
    const ff::Stats s3 = ff::stats();
    t0 = Clock::now();
    for (int s = 1; s < steps; ++s) {
      v = frozen_step(v, n);
    }
    ff::sync();
    const double frozen_ms = ms_since(t0);
    const ff::Stats s4 = ff::stats();
    const std::vector<float> frozen_result = v.to_vector();

    // --- plain C++ loop (one thread): the reference ---
    std::vector<float> ref = plate, tmp(plate.size());
    t0 = Clock::now();
    for (int s = 0; s < steps; ++s) {
      heat::reference_step(ref, tmp, n);
      ref.swap(tmp);
    }
    const double ref_ms = ms_since(t0);

    // --- hand-written OpenMP loop on freezeframe's threads ---
    const int threads = static_cast<int>(std::max<uint64_t>(1, s4.threads));
    std::vector<float> omp = plate, omp_tmp(plate.size());
    const int omp_threads = heat::openmp_step(omp.data(), omp_tmp.data(), n, threads);  // warm
    omp = plate;
    t0 = Clock::now();
    for (int s = 0; s < steps; ++s) {
      heat::openmp_step(omp.data(), omp_tmp.data(), n, threads);
      omp.swap(omp_tmp);
    }
    const double omp_ms = ms_since(t0);

    double max_err = 0, frozen_err = 0, omp_err = 0, total_ref = 0, total_initial = 0;
    for (size_t i = 0; i < ref.size(); ++i) {
      max_err = std::max(max_err, double(std::abs(result[i] - ref[i])));
      omp_err = std::max(omp_err, double(std::abs(omp[i] - ref[i])));
      frozen_err = std::max(frozen_err, double(std::abs(frozen_result[i] - result[i])));
      total_ref += ref[i];
      total_initial += plate[i];
    }
    const size_t centre = size_t(3 * n / 8) * n + 3 * n / 8;

    std::printf("\nresult\n");
    std::printf("  total heat         %.1f (initial %.1f, plain loop %.1f)\n", total_ff,
                total_initial, total_ref);
    std::printf("  hot-spot centre    %.3f degrees (plain loop %.3f)\n", result[centre],
                ref[centre]);
    std::printf("  max |ff - loop|    %.3g (OpenMP loop: %.3g)\n", max_err, omp_err);
    std::printf("  max |frozen - traced| %.3g (%s)\n", frozen_err,
                frozen_err == 0 ? "identical" : "DIFFERENT");
    std::printf("\ntimings\n");
    std::printf("  first step         %8.2f ms  (trace + compile %llu kernel(s) + run)\n", first_ms,
                static_cast<unsigned long long>(s1.compiles - s0.compiles));
    std::printf("  traced steps       %8.3f ms/step  (%d steps, %llu compiles, %llu cache hits)\n",
                traced_ms / (steps - 1), steps - 1,
                static_cast<unsigned long long>(s2.compiles - s1.compiles),
                static_cast<unsigned long long>(s2.cache_hits - s1.cache_hits));
    std::printf("  frozen, 1st call   %8.2f ms  (runs traced while it records)\n", record_ms);
    std::printf("  frozen steps       %8.3f ms/step  (%zu replays, %llu traced kernels)\n",
                frozen_ms / (steps - 1), frozen_step.n_replays(),
                static_cast<unsigned long long>(s4.traced_kernels - s3.traced_kernels));
    std::printf("  traced / frozen    %8.2fx per step\n", traced_ms / frozen_ms);
    std::printf("  OpenMP loop        %8.3f ms/step  (%d thread(s), %s): frozen/OpenMP %.2fx\n",
                omp_ms / steps, omp_threads, heat::openmp_summary(),
                (frozen_ms / (steps - 1)) / (omp_ms / steps));
    std::printf("  plain C++ loop     %8.3f ms/step  (one thread)\n", ref_ms / steps);
    std::printf("  kernel launches    %llu for %d traced steps; peak memory %.1f MB\n",
                static_cast<unsigned long long>(s2.launches - s0.launches), steps,
                static_cast<double>(s4.peak_bytes) / 1e6);

    // The computations agree closely (the hand-written loops may contract to fma); the total
    // heat too (the fixed boundary lets heat in and out, so it is not conserved). The frozen
    // run replays the traced run's kernels: bit for bit the same result.
    const bool ok = max_err <= 1e-3 * 100.0 && omp_err <= 1e-3 * 100.0 &&
                    std::abs(total_ff - total_ref) <= 1e-4 * std::max(1.0, total_ref) &&
                    frozen_err == 0 && frozen_step.n_recordings() == 1;
    std::printf("\n%s\n", ok ? "check: OK (frozen == traced, both match the plain C++ and OpenMP "
                               "loops)"
                             : "check: FAILED");
    u = ff::Float();
    v = ff::Float();
    ff::shutdown();
    return ok ? 0 : 1;
  } catch (const ff::Error& e) {
    std::fprintf(stderr, "ff_demo: %s\n", e.what());
    return 1;
  }
}
