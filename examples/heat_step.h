// The demo's heat-diffusion step, shared by the demo (heat_diffusion.cpp) and the benchmarks
// (bench/freeze_bench.cpp, bench/stencil_bench.cpp): the freezeframe step and the same step as
// a plain loop (the OpenMP loop is in heat_loop.h).
#pragma once

#include <freezeframe/freezeframe.h>

#include <cstdint>
#include <vector>

#include "heat_loop.h"

namespace heat {

// One step of the 5-point stencil on an n x n plate, written as a user would: the interior
// cells read their four neighbours with gathers at the element index -1, +1, -n and +n (the
// LLVM backend turns such gathers into contiguous vector loads, docs/kernel-ir.md); the
// boundary cells keep their value (fixed temperature) and read no neighbour. Everything fuses
// into one kernel at ff::eval. The plate's size comes from `u`; `n` is the side; `alpha` is the
// diffusion number (size 1: an array, so that gradients can reach it, examples/inverse_heat.h).
inline ff::Float diffuse(const ff::Float& u, const ff::Float& alpha, uint32_t n) {
  ff::UInt32 i = ff::arange<ff::UInt32>(ff::width(u));
  ff::UInt32 x = i % n;
  ff::UInt32 y = i / n;
  ff::Bool interior = (x > 0u) & (x < n - 1) & (y > 0u) & (y < n - 1);
  ff::Float left = ff::gather<ff::Float>(u, i - 1u, interior);
  ff::Float right = ff::gather<ff::Float>(u, i + 1u, interior);
  ff::Float up = ff::gather<ff::Float>(u, i - n, interior);
  ff::Float down = ff::gather<ff::Float>(u, i + n, interior);
  ff::Float sum = left + right + up + down;
  ff::Float next = ff::select(interior, u + alpha * (sum - 4.f * u), u);
  ff::eval(next);
  return next;
}

/// The demo's step: diffusion number kAlpha (a literal, part of the kernel).
inline ff::Float step(const ff::Float& u, uint32_t n) {
  return diffuse(u, ff::Float(kAlpha), n);
}

// The same step as a plain C++ loop, with the same boundary and operation order.
inline void reference_step(const std::vector<float>& u, std::vector<float>& next, uint32_t n) {
  for (uint32_t y = 0; y < n; ++y) {
    for (uint32_t x = 0; x < n; ++x) {
      size_t i = size_t(y) * n + x;
      bool interior = x > 0 && x < n - 1 && y > 0 && y < n - 1;
      next[i] = interior ? interior_cell(u[i], u[i - 1], u[i + 1], u[i - n], u[i + n]) : u[i];
    }
  }
}

}  // namespace heat
