// freezeframe demo: explicit 2D heat diffusion on an n x n grid.
//
// Each step reads the four neighbours of every cell with ff::gather (indices clamped at the
// border, so no heat leaves the plate) and updates
//     u' = u + alpha * (left + right + up + down - 4 u)
// The whole step is traced as array operations and fused into one kernel; from the second
// step on that kernel comes from the cache. The result is checked against a plain C++ loop,
// and the timings show the first step (tracing + compiling) against the steady state.
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

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

constexpr float kAlpha = 0.2f;  // diffusion number; explicit scheme is stable below 0.25

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

// The neighbour indices of every cell, clamped at the border (reflecting boundary).
struct Neighbours {
  ff::UInt32 left, right, up, down;
};

Neighbours neighbours(uint32_t n) {
  ff::UInt32 i = ff::arange<ff::UInt32>(size_t(n) * n);
  ff::UInt32 x = i % n;
  ff::UInt32 y = i / n;
  Neighbours nb{ff::select(x > 0u, i - 1u, i), ff::select(x < n - 1, i + 1u, i),
                ff::select(y > 0u, i - n, i), ff::select(y < n - 1, i + n, i)};
  // Left lazy on purpose: each step's kernel recomputes the indices from the element index,
  // which is cheaper than reading four index buffers from memory.
  return nb;
}

// One step, traced: four gathers and a stencil, fused into one kernel by ff::eval.
ff::Float step(const ff::Float& u, const Neighbours& nb) {
  ff::Float sum = ff::gather<ff::Float>(u, nb.left) + ff::gather<ff::Float>(u, nb.right) +
                  ff::gather<ff::Float>(u, nb.up) + ff::gather<ff::Float>(u, nb.down);
  ff::Float next = u + kAlpha * (sum - 4.f * u);
  ff::eval(next);
  return next;
}

// The same step as a plain C++ loop, with the same operation order.
void reference_step(const std::vector<float>& u, std::vector<float>& next, uint32_t n) {
  for (uint32_t y = 0; y < n; ++y) {
    for (uint32_t x = 0; x < n; ++x) {
      size_t i = size_t(y) * n + x;
      float l = u[x > 0 ? i - 1 : i];
      float r = u[x < n - 1 ? i + 1 : i];
      float t = u[y > 0 ? i - n : i];
      float b = u[y < n - 1 ? i + n : i];
      float sum = ((l + r) + t) + b;
      next[i] = u[i] + kAlpha * (sum - 4.f * u[i]);
    }
  }
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

    // --- freezeframe ---
    ff::Float u = ff::Float::from(plate);
    Neighbours nb = neighbours(n);
    ff::sync();
    const ff::Stats s0 = ff::stats();

    auto t0 = Clock::now();
    u = step(u, nb);
    ff::sync();
    const double first_ms = ms_since(t0);
    const ff::Stats s1 = ff::stats();

    t0 = Clock::now();
    for (int s = 1; s < steps; ++s) {
      u = step(u, nb);
    }
    ff::sync();
    const double rest_ms = ms_since(t0);
    const ff::Stats s2 = ff::stats();

    const float total_ff = ff::sum(u).to_vector().at(0);
    const std::vector<float> result = u.to_vector();

    // --- plain C++ loop (one thread) ---
    std::vector<float> ref = plate, tmp(plate.size());
    t0 = Clock::now();
    for (int s = 0; s < steps; ++s) {
      reference_step(ref, tmp, n);
      ref.swap(tmp);
    }
    const double ref_ms = ms_since(t0);

    double max_err = 0, total_ref = 0, total_initial = 0;
    for (size_t i = 0; i < ref.size(); ++i) {
      max_err = std::max(max_err, double(std::abs(result[i] - ref[i])));
      total_ref += ref[i];
      total_initial += plate[i];
    }
    const size_t centre = size_t(3 * n / 8) * n + 3 * n / 8;

    std::printf("\nresult\n");
    std::printf("  total heat         %.1f (initial %.1f, plain loop %.1f)\n", total_ff,
                total_initial, total_ref);
    std::printf("  hot-spot centre    %.3f degrees (plain loop %.3f)\n", result[centre],
                ref[centre]);
    std::printf("  max |ff - loop|    %.3g\n", max_err);
    std::printf("\ntimings\n");
    std::printf("  first step         %8.2f ms  (trace + compile %llu kernel(s) + run)\n", first_ms,
                static_cast<unsigned long long>(s1.compiles - s0.compiles));
    std::printf("  later steps        %8.3f ms/step  (%d steps, %llu compiles, %llu cache hits)\n",
                rest_ms / (steps - 1), steps - 1,
                static_cast<unsigned long long>(s2.compiles - s1.compiles),
                static_cast<unsigned long long>(s2.cache_hits - s1.cache_hits));
    std::printf("  plain C++ loop     %8.3f ms/step  (one thread)\n", ref_ms / steps);
    std::printf("  kernel launches    %llu for %d steps; peak memory %.1f MB\n",
                static_cast<unsigned long long>(s2.launches - s0.launches), steps,
                static_cast<double>(s2.peak_bytes) / 1e6);

    // Heat is conserved up to float rounding; the two computations agree closely.
    const bool ok =
        max_err <= 1e-3 * 100.0 && std::abs(total_ff - total_initial) <= 1e-3 * total_initial;
    std::printf("\n%s\n", ok ? "check: OK (matches the plain C++ loop)" : "check: FAILED");
    u = ff::Float();
    nb = Neighbours{};
    ff::shutdown();
    return ok ? 0 : 1;
  } catch (const ff::Error& e) {
    std::fprintf(stderr, "ff_demo: %s\n", e.what());
    return 1;
  }
}
