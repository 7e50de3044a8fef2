// heat::openmp_step (heat_loop.h): the hand-written baseline of the demo and the stencil
// benchmark.
#include "heat_loop.h"

#if defined(_OPENMP)
#include <omp.h>
#endif

#include <cstddef>
#include <cstdio>
#include <cstring>

namespace heat {

int openmp_step(const float* u, float* next, uint32_t n, int n_threads) {
  const auto rows = static_cast<std::ptrdiff_t>(n);
  const auto w = static_cast<std::ptrdiff_t>(n);
  int ran = 1;
#if defined(_OPENMP)
#pragma omp parallel num_threads(n_threads)
#else
  (void)n_threads;
#endif
  {
#if defined(_OPENMP)
    if (omp_get_thread_num() == 0) {
      ran = omp_get_num_threads();  // read after the region's implicit barrier
    }
#pragma omp for schedule(static)
#endif
    for (std::ptrdiff_t y = 0; y < rows; ++y) {
      const float* row = u + y * w;
      float* out = next + y * w;
      if (y == 0 || y == rows - 1 || w < 3) {
        std::memcpy(out, row, static_cast<size_t>(w) * sizeof(float));
        continue;
      }
      const float* above = row - w;
      const float* below = row + w;
      out[0] = row[0];
#if defined(_OPENMP)
#pragma omp simd
#endif
      for (std::ptrdiff_t x = 1; x < w - 1; ++x) {
        out[x] = interior_cell(row[x], row[x - 1], row[x + 1], above[x], below[x]);
      }
      out[w - 1] = row[w - 1];
    }
  }
  return ran;
}

const char* openmp_summary() {
#if defined(_OPENMP)
  static char text[64];
  std::snprintf(text, sizeof text, "OpenMP %d, max threads %d", _OPENMP, omp_get_max_threads());
  return text;
#else
  return "no OpenMP";
#endif
}

}  // namespace heat
