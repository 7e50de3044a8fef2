// The Mandelbrot baseline (loop_loops.h), in the hand-loop library for its flags.
//
// Vectorisation, checked with -fopt-info-vec-all and objdump (GCC 12.2, -march=native on an
// AVX-512 machine): GCC vectorises neither the escape loop nor the loop over a row's pixels
// around it ("missed: not vectorized: control flow in loop"; the while loop's trip count
// depends on the data). The outlined OpenMP body holds only scalar arithmetic on xmm registers
// (vmulss, vsubss, vaddss, vfmadd132ss, vcomiss): one pixel at a time, as the benchmark means
// it to be. GCC contracts 2 * x * y + cy into one fused multiply-add (-ffp-contract=fast is
// its default for C++, even with -std=c++20); x * x - y * y + cx stays two products, a
// subtraction and an addition. freezeframe's kernels never contract (docs/kernel-ir.md: Fma
// only where the program asks for it), so a few pixels on the set's boundary may escape some
// iterations earlier or later here: ff_bench_loops counts them.
#include "loop_loops.h"

#include <omp.h>

#include <cstddef>

namespace ff_bench {

int mandelbrot_openmp(const MandelbrotGrid& g, uint32_t* out, int n_threads) {
  int ran = 0;
#pragma omp parallel num_threads(n_threads)
  {
    if (omp_get_thread_num() == 0)
      ran = omp_get_num_threads();
#pragma omp for schedule(dynamic)
    for (uint32_t row = 0; row < g.height; ++row) {
      const float cy = g.y0 + float(row) * g.step;
      for (uint32_t col = 0; col < g.width; ++col) {
        const float cx = g.x0 + float(col) * g.step;
        float x = 0.f, y = 0.f;
        uint32_t i = 0;
        while (i < g.max_iter && x * x + y * y <= 4.f) {
          const float xt = x * x - y * y + cx;
          y = 2.f * x * y + cy;
          x = xt;
          ++i;
        }
        out[std::size_t(row) * g.width + col] = i;
      }
    }
  }
  return ran;
}

}  // namespace ff_bench
