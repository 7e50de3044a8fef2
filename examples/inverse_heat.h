// The inverse heat problem of examples/inverse_heat.cpp, shared with bench/autodiff_bench.cpp:
// the demo's diffusion step with the diffusion number as an array (so it can be learned), and
// one training step that fits it to a final frame.
#pragma once

#include <freezeframe/freezeframe.h>

#include <cstdint>

namespace inverse_heat {

/// One step of the demo's stencil (heat_step.h) with diffusion number `alpha` (size 1).
inline ff::Float step(const ff::Float& u, const ff::Float& alpha, uint32_t n) {
  ff::UInt32 i = ff::arange<ff::UInt32>(ff::width(u));
  ff::UInt32 x = i % n, y = i / n;
  ff::Bool interior = (x > 0u) & (x < n - 1) & (y > 0u) & (y < n - 1);
  ff::Float sum =
      ff::gather<ff::Float>(u, i - 1u, interior) + ff::gather<ff::Float>(u, i + 1u, interior) +
      ff::gather<ff::Float>(u, i - n, interior) + ff::gather<ff::Float>(u, i + n, interior);
  ff::Float next = ff::select(interior, u + alpha * (sum - 4.f * u), u);
  ff::eval(next);
  return next;
}

/// `steps` steps from u0 with the current alpha, the squared error against `target` and one
/// Adam step on alpha; returns the loss (before the step). Frozen, it records once per plate
/// size kind and replays with new alpha, optimiser state, plates and targets.
inline ff::Float train_step(ff::Float& alpha, ff::Adam& opt, const ff::Float& u0,
                            const ff::Float& target, uint32_t n, int steps) {
  ff::enable_grad(alpha);
  ff::Float u = u0;
  for (int k = 0; k < steps; ++k)
    u = step(u, alpha, n);
  ff::Float d = u - target;
  ff::Float loss = ff::mean(d * d);
  ff::backward(loss);
  opt.step(alpha);
  return ff::detach(loss);
}

}  // namespace inverse_heat
