// The loops a C++ programmer writes for tanh, atan2 and pow over arrays, the baselines of
// ff_bench_math: OpenMP `parallel for simd` over std:: calls in a translation unit compiled
// -O3 -march=native -ffast-math, so that GCC calls glibc's vector functions (_ZGVeN16v_tanhf
// and friends; the bench-smoke test math_loops_call_libmvec checks the object for them). Only
// math_loops.cpp is compiled with -ffast-math, never a link: its start-up code would flush
// subnormals for the whole process.
#pragma once

#include <cstddef>

namespace ff_bench {

/// out[i] = tanh(x[i]) on n_threads OpenMP threads; returns the number of threads that ran.
int tanh_openmp(const float* x, float* out, size_t n, int n_threads);
/// out[i] = atan2(y[i], x[i]).
int atan2_openmp(const float* y, const float* x, float* out, size_t n, int n_threads);
/// out[i] = pow(x[i], y[i]).
int pow_openmp(const float* x, const float* y, float* out, size_t n, int n_threads);

}  // namespace ff_bench
