// Histogram baselines (scatter_loops.h), in the hand-loop library for its flags.
#include "scatter_loops.h"

#include <omp.h>

#include <algorithm>

namespace ff_bench {

void histogram_serial(const uint32_t* idx, const float* w, size_t n, float* hist, size_t bins) {
  std::fill(hist, hist + bins, 0.0f);
  for (size_t i = 0; i < n; ++i)
    hist[idx[i]] += w[i];
}

int histogram_openmp(const uint32_t* idx, const float* w, size_t n, float* hist, size_t bins,
                     int n_threads) {
  std::fill(hist, hist + bins, 0.0f);
  int ran = 0;
#pragma omp parallel num_threads(n_threads)
  {
    if (omp_get_thread_num() == 0)
      ran = omp_get_num_threads();
#pragma omp for schedule(static) reduction(+ : hist[:bins])
    for (size_t i = 0; i < n; ++i)
      hist[idx[i]] += w[i];
  }
  return ran;
}

}  // namespace ff_bench
