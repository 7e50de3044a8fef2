// A 2D particle step, shared by the tests and bench/: positions and velocities in [0, 1)^2,
// a density grid from scatter_add (one count per particle), gathers of the four cells around
// each particle's own, a push down the density gradient, integration and clamping at the walls.
// One eval: everything of one size fuses into one kernel per size.
#pragma once

#include <freezeframe/freezeframe.h>

#include <vector>

struct Particles {
  ff::Float x, y, vx, vy;
};
FF_STRUCT(Particles, x, y, vx, vy)

namespace particles {

inline constexpr uint32_t kGrid = 32;  // cells per side of the density grid

/// n particles spread over the box with small velocities of both signs (deterministic).
inline Particles make(size_t n) {
  std::vector<float> x(n), y(n), vx(n), vy(n);
  for (size_t i = 0; i < n; ++i) {
    x[i] = static_cast<float>((i * 37) % 101) / 101.f;
    y[i] = static_cast<float>((i * 53) % 97) / 97.f;
    vx[i] = static_cast<float>(static_cast<int>(i % 7) - 3) * 0.1f;
    vy[i] = static_cast<float>(static_cast<int>(i % 5) - 2) * 0.1f;
  }
  return {ff::Float::from(x), ff::Float::from(y), ff::Float::from(vx), ff::Float::from(vy)};
}

inline void step(Particles& p, float dt) {
  using ff::Float;
  using ff::UInt32;
  auto cell_of = [](const Float& v) {
    return ff::cast<UInt32>(ff::min(ff::max(v * float(kGrid), 0.f), float(kGrid - 1)));
  };
  UInt32 cx = cell_of(p.x), cy = cell_of(p.y);
  UInt32 cell = cy * kGrid + cx;
  Float density = ff::zeros<Float>(kGrid * kGrid);
  ff::scatter_add(density, Float(1.f), cell);
  // The neighbours (clamped at the edges): the density gradient at each particle's cell.
  UInt32 left = ff::select(cx > 0u, cell - 1u, cell);
  UInt32 right = ff::select(cx < kGrid - 1, cell + 1u, cell);
  UInt32 down = ff::select(cy > 0u, cell - kGrid, cell);
  UInt32 up = ff::select(cy < kGrid - 1, cell + kGrid, cell);
  Float gx = ff::gather<Float>(density, right) - ff::gather<Float>(density, left);
  Float gy = ff::gather<Float>(density, up) - ff::gather<Float>(density, down);
  p.vx = p.vx - gx * (0.01f * dt);
  p.vy = p.vy - gy * (0.01f * dt) - 9.81f * dt;
  Float nx = p.x + p.vx * dt, ny = p.y + p.vy * dt;
  // Walls: clamp into [0, 1] and reverse the velocity that hit them.
  p.vx = ff::select((nx < 0.f) | (nx > 1.f), -p.vx, p.vx);
  p.vy = ff::select((ny < 0.f) | (ny > 1.f), -p.vy, p.vy);
  p.x = ff::min(ff::max(nx, 0.f), 1.f);
  p.y = ff::min(ff::max(ny, 0.f), 1.f);
  ff::eval(p.x, p.y, p.vx, p.vy);
}

}  // namespace particles
