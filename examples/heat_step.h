// The demo's heat-diffusion step, shared by the demo (heat_diffusion.cpp) and the freeze
// benchmark (bench/freeze_bench.cpp): the freezeframe step and the same step as a plain loop.
#pragma once

#include <freezeframe/freezeframe.h>

#include <cstdint>
#include <vector>

namespace heat {

inline constexpr float kAlpha = 0.2f;  // diffusion number; explicit scheme is stable below 0.25

// One step: the neighbour indices of every cell, clamped at the border (reflecting boundary),
// recomputed from the element index (cheaper than reading four index buffers from memory),
// four gathers and the stencil, fused into one kernel by ff::eval. The grid's side `n` is a
// scalar argument: a frozen step keys on it, and the plate's size comes from `u` itself.
inline ff::Float step(const ff::Float& u, uint32_t n) {
  ff::UInt32 i = ff::arange<ff::UInt32>(ff::width(u));
  ff::UInt32 x = i % n;
  ff::UInt32 y = i / n;
  ff::UInt32 left = ff::select(x > 0u, i - 1u, i), right = ff::select(x < n - 1, i + 1u, i);
  ff::UInt32 up = ff::select(y > 0u, i - n, i), down = ff::select(y < n - 1, i + n, i);
  ff::Float sum = ff::gather<ff::Float>(u, left) + ff::gather<ff::Float>(u, right) +
                  ff::gather<ff::Float>(u, up) + ff::gather<ff::Float>(u, down);
  ff::Float next = u + kAlpha * (sum - 4.f * u);
  ff::eval(next);
  return next;
}

// The same step as a plain C++ loop, with the same operation order.
inline void reference_step(const std::vector<float>& u, std::vector<float>& next, uint32_t n) {
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

}  // namespace heat
