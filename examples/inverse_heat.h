// The inverse heat problem of examples/inverse_heat.cpp, shared with bench/autodiff_bench.cpp:
// one training step that fits the demo's diffusion number (heat_step.h, as an array) to a
// final frame.
#pragma once

#include <freezeframe/freezeframe.h>

#include <cstdint>

#include "heat_step.h"

namespace inverse_heat {

/// `steps` steps from u0 with the current alpha, the squared error against `target` and one
/// Adam step on alpha; returns the loss (before the step). Frozen, it records once per plate
/// size kind and replays with new alpha, optimiser state, plates and targets.
inline ff::Float train_step(ff::Float& alpha, ff::Adam& opt, const ff::Float& u0,
                            const ff::Float& target, uint32_t n, int steps) {
  ff::enable_grad(alpha);
  ff::Float u = u0;
  for (int k = 0; k < steps; ++k)
    u = heat::diffuse(u, alpha, n);
  ff::Float d = u - target;
  ff::Float loss = ff::mean(d * d);
  ff::backward(loss);
  opt.step(alpha);
  return ff::detach(loss);
}

}  // namespace inverse_heat
