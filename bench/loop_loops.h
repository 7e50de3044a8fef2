// The Mandelbrot loop a C++ programmer writes, the baseline of ff_bench_loops: scalar per pixel,
// an OpenMP `parallel for schedule(dynamic)` over rows. Built with the hand-loop flags
// (-O3 -march=native -fno-math-errno -fno-trapping-math, OpenMP; CMakeLists.txt).
#pragma once

#include <cstdint>

namespace ff_bench {

/// The grid of a Mandelbrot image: pixel (row, col) is c = (x0 + col * step, y0 + row * step).
/// ff_bench_loops picks dyadic values, so every variant computes every c exactly and only the
/// escape loop's arithmetic can differ between them.
struct MandelbrotGrid {
  uint32_t width = 0, height = 0;
  float x0 = 0, y0 = 0, step = 0;
  uint32_t max_iter = 0;
};

/// out[row * width + col] = the iterations of z = z^2 + c from z = 0 before |z|^2 > 4, at most
/// g.max_iter, on `n_threads` OpenMP threads. Returns the number of threads that ran it.
int mandelbrot_openmp(const MandelbrotGrid& g, uint32_t* out, int n_threads);

}  // namespace ff_bench
