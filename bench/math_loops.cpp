// Math baselines (math_loops.h), compiled with the hand-loop flags plus -ffast-math
// (bench/CMakeLists.txt), which is what lets GCC vectorise std:: calls into libmvec calls.
#include "math_loops.h"

#include <omp.h>

#include <cmath>

namespace ff_bench {
namespace {

// body(i) for every i < n, as an OpenMP `parallel for simd` on n_threads threads (the lambda
// is inlined before vectorisation). Returns the number of threads that ran.
template <class Body>
int parallel_for_simd(size_t n, int n_threads, const Body& body) {
  int ran = 0;
#pragma omp parallel num_threads(n_threads)
  {
    if (omp_get_thread_num() == 0)
      ran = omp_get_num_threads();
#pragma omp for simd schedule(static)
    for (size_t i = 0; i < n; ++i)
      body(i);
  }
  return ran;
}

}  // namespace

int tanh_openmp(const float* x, float* out, size_t n, int n_threads) {
  return parallel_for_simd(n, n_threads, [=](size_t i) { out[i] = std::tanh(x[i]); });
}

int atan2_openmp(const float* y, const float* x, float* out, size_t n, int n_threads) {
  return parallel_for_simd(n, n_threads, [=](size_t i) { out[i] = std::atan2(y[i], x[i]); });
}

int pow_openmp(const float* x, const float* y, float* out, size_t n, int n_threads) {
  return parallel_for_simd(n, n_threads, [=](size_t i) { out[i] = std::pow(x[i], y[i]); });
}

}  // namespace ff_bench
