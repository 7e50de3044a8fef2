// The demo's heat-diffusion step as the loop a C++ programmer writes by hand: OpenMP over rows,
// the cells of a row vectorised. Shared by the demo (heat_diffusion.cpp) and the stencil
// benchmark (bench/stencil_bench.cpp) as their baseline; heat_loop.cpp includes no freezeframe
// header, so its own compile flags (-O3 -march=native -fno-math-errno -fno-trapping-math
// -fopenmp) apply to nothing else.
#pragma once

#include <cstdint>

namespace heat {

inline constexpr float kAlpha = 0.2f;  // diffusion number; explicit scheme is stable below 0.25

/// The update of one interior cell `c` from its left, right, top and bottom neighbours, in
/// the operation order of heat::step (heat_step.h).
inline float interior_cell(float c, float l, float r, float t, float b) {
  float sum = ((l + r) + t) + b;
  return c + kAlpha * (sum - 4.f * c);
}

/// One step on the n x n plate `u` into `next` (n >= 1; the boundary cells are copied), on
/// `n_threads` OpenMP threads (> 0). Returns the number of threads that ran it (1 when the
/// file was built without OpenMP).
int openmp_step(const float* u, float* next, uint32_t n, int n_threads);

/// A description of the OpenMP runtime the loop uses ("OpenMP 201511, max threads 2"), or
/// "no OpenMP".
const char* openmp_summary();

}  // namespace heat
