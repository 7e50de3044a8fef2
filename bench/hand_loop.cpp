// The OpenMP baselines (see hand_loop.h). In their own translation unit, which includes no
// freezeframe header, so their compile flags apply to nothing else.
#if !defined(_OPENMP)
#error "hand_loop.cpp must be built with OpenMP: a one-thread baseline would flatter freezeframe"
#endif

#include "hand_loop.h"

#include <omp.h>

#include <cstddef>
#include <cstdio>
#include <cstdlib>

#include "hand_loop_body.h"

namespace ff_bench {

int hand_loop_w2(const float* x, float* out, size_t n, int n_threads) {
  const auto count = static_cast<std::ptrdiff_t>(n);
  int ran = 0;
#pragma omp parallel num_threads(n_threads)
  {
    if (omp_get_thread_num() == 0) {
      ran = omp_get_num_threads();  // read after the region's implicit barrier
    }
#pragma omp for simd schedule(static)
    for (std::ptrdiff_t i = 0; i < count; ++i) {
      out[i] = hand::w2_element(x[i]);
    }
  }
  return ran;
}

void hand_loop_w2_serial(const float* x, float* out, size_t n) {
  const auto count = static_cast<std::ptrdiff_t>(n);
#pragma omp simd
  for (std::ptrdiff_t i = 0; i < count; ++i) {
    out[i] = hand::w2_element(x[i]);
  }
}

int copy_loop(const float* x, float* out, size_t n, int n_threads) {
  const auto count = static_cast<std::ptrdiff_t>(n);
  int ran = 0;
#pragma omp parallel num_threads(n_threads)
  {
    if (omp_get_thread_num() == 0) {
      ran = omp_get_num_threads();
    }
#pragma omp for simd schedule(static)
    for (std::ptrdiff_t i = 0; i < count; ++i) {
      out[i] = x[i];
    }
  }
  return ran;
}

const char* openmp_description() {
  static char text[128];
  const char* policy = std::getenv("OMP_WAIT_POLICY");
  std::snprintf(text, sizeof text, "OpenMP %d, OMP_WAIT_POLICY=%s, max threads %d", _OPENMP,
                policy ? policy : "(unset)", omp_get_max_threads());
  return text;
}

}  // namespace ff_bench
