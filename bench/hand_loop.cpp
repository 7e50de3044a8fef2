// W2's baseline: the 10-op chain written out by hand. Built with -O3 -march=native
// -fno-math-errno -fopenmp, in its own translation unit (which includes no freezeframe
// header) so those flags apply to nothing else.
#include "hand_loop.h"

#include <cmath>
#include <cstddef>
#include <thread>

#if defined(_OPENMP)
#include <omp.h>
#endif

namespace ff_bench {
namespace {

// The last 5 ops of chain.h's cycle after the fma: y + 1, y * 0.75, sqrt, select.
inline float rest_of_cycle(float y) {
  y = y + 1.f;
  y = y * 0.75f;
  y = std::sqrt(y);
  return y > 1.f ? y - 0.5f : y + 0.5f;
}

}  // namespace

int hand_loop_threads(int n_threads) {
#if defined(_OPENMP)
  return n_threads > 0 ? n_threads : static_cast<int>(std::thread::hardware_concurrency());
#else
  (void)n_threads;
  return 1;
#endif
}

void hand_loop_w2(const float* x, float* out, size_t n, int n_threads) {
  const auto count = static_cast<std::ptrdiff_t>(n);
  [[maybe_unused]] const int threads = hand_loop_threads(n_threads);
#if defined(_OPENMP)
#pragma omp parallel for simd schedule(static) num_threads(threads)
#endif
  for (std::ptrdiff_t i = 0; i < count; ++i) {
    const float xi = x[i];
    float y = xi;
    y = rest_of_cycle(std::fma(y, 0.5f, xi));  // ops 0-4
    y = rest_of_cycle(std::fma(y, 0.5f, xi));  // ops 5-9
    out[i] = y;
  }
}

}  // namespace ff_bench
