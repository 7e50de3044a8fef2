// freezeframe example: an inverse problem solved with gradients. A plate diffuses heat with an
// unknown diffusion number; from its first and last frames, ff::Adam recovers the number by
// gradient descent through the simulation (ff::backward through every stencil step). The
// whole training step (simulation, loss, backward, optimiser step) is frozen: the first call
// records it, every later one replays it. Prints the loss every 10 steps, the time per
// training step traced and frozen, and the error of the recovered number.
//
//   ff_inverse_heat [--n N] [--sim-steps S] [--iters I]   defaults: 128 x 128, 8, 150
#include "inverse_heat.h"

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

std::vector<float> initial_plate(uint32_t n) {
  std::vector<float> u(size_t(n) * n, 0.f);
  for (uint32_t y = 0; y < n; ++y)
    for (uint32_t x = 0; x < n; ++x)
      u[size_t(y) * n + x] = (x / 8 + y / 8) % 2 ? 10.f : 0.f;  // a checkerboard of 8x8 tiles
  return u;
}

int usage() {
  std::fprintf(stderr, "usage: ff_inverse_heat [--n N] [--sim-steps S] [--iters I]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  uint32_t n = 128;
  int sim_steps = 8, iters = 150;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--n") == 0 && i + 1 < argc)
      n = static_cast<uint32_t>(std::atoi(argv[++i]));
    else if (std::strcmp(argv[i], "--sim-steps") == 0 && i + 1 < argc)
      sim_steps = std::atoi(argv[++i]);
    else if (std::strcmp(argv[i], "--iters") == 0 && i + 1 < argc)
      iters = std::atoi(argv[++i]);
    else
      return usage();
  }
  if (n < 4 || n > 8192 || sim_steps < 1 || iters < 20)
    return usage();
  try {
    ff::init();
    const float true_alpha = 0.2f, first_guess = 0.05f;
    std::printf(
        "inverse heat problem: %u x %u plate, %d diffusion steps per simulation, backend "
        "%s\n",
        n, n, sim_steps, ff::backend_name().c_str());
    const ff::Float u0 = ff::Float::from(initial_plate(n));
    ff::Float target = u0;
    for (int k = 0; k < sim_steps; ++k)
      target = heat::diffuse(target, ff::Float::from({true_alpha}), n);

    // Frozen: the training loop.
    auto frozen_step = ff::freeze(inverse_heat::train_step);
    ff::Float alpha = ff::Float::from({first_guess});
    ff::Adam opt(0.01);
    opt.init(alpha);
    double frozen_ms = 0;
    int timed = 0;
    for (int it = 0; it < iters; ++it) {
      auto t0 = Clock::now();
      ff::Float loss = frozen_step(alpha, opt, u0, target, n, sim_steps);
      float l = loss.to_vector()[0];
      if (it >= 2) {  // after the recording and the first replay
        frozen_ms += ms_since(t0);
        ++timed;
      }
      if (it % 10 == 0 || it == iters - 1)
        std::printf("  step %4d  loss %.6e  alpha %.6f\n", it, l, alpha.to_vector()[0]);
    }
    const float recovered = alpha.to_vector()[0];

    // Traced: the same steps, tracing every operation each time (for the timing and as a
    // check: the frozen run must have followed the traced one exactly).
    ff::Float alpha_t = ff::Float::from({first_guess});
    ff::Adam opt_t(0.01);
    opt_t.init(alpha_t);
    double traced_ms = 0;
    for (int it = 0; it < iters; ++it) {
      auto t0 = Clock::now();
      ff::Float loss = inverse_heat::train_step(alpha_t, opt_t, u0, target, n, sim_steps);
      loss.to_vector();
      if (it >= 2)
        traced_ms += ms_since(t0);
    }
    const float recovered_t = alpha_t.to_vector()[0];
    std::printf(
        "time per training step: traced %.3f ms, frozen %.3f ms (%.2fx), %zu "
        "recording(s)\n",
        traced_ms / timed, frozen_ms / timed, traced_ms / frozen_ms, frozen_step.n_recordings());
    const double error = std::fabs(recovered - true_alpha) / true_alpha;
    std::printf("recovered diffusion number %.6f (true %.6f): relative error %.2e\n", recovered,
                true_alpha, error);
    if (recovered != recovered_t) {
      std::printf("FAILED: the frozen run recovered %.9g, the traced run %.9g\n", recovered,
                  recovered_t);
      return 1;
    }
    if (!(error < 1e-2)) {
      std::printf("FAILED: the error is above 1%%\n");
      return 1;
    }
    std::printf("OK: frozen == traced, the diffusion number is recovered\n");
    ff::shutdown();
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ff_inverse_heat: %s\n", e.what());
    return 1;
  }
}
