// The hand-written baselines benchmarks compare against: W2's op chain as an OpenMP loop, a
// plain copy loop (the machine's memory limit), and the chain's scalar twin (to prove the
// baseline vectorised). hand_loop.cpp is built with -O3 -march=native -fno-math-errno
// -fno-trapping-math -fopenmp, hand_loop_scalar.cpp with vectorisation off.
#pragma once

#include <cstddef>

namespace ff_bench {

/// out[i] = the 10-op chain (chain.h) applied to x[i], on `n_threads` OpenMP threads (> 0).
/// Returns the number of threads OpenMP really ran the loop on.
int hand_loop_w2(const float* x, float* out, size_t n, int n_threads);

/// hand_loop_w2 for one thread: the same loop without an OpenMP parallel region (an `omp
/// simd` loop), as a programmer writes it for one thread; no fork/join cost on small arrays.
void hand_loop_w2_serial(const float* x, float* out, size_t n);

/// out[i] = x[i] (4 bytes read and 4 written per element), on `n_threads` OpenMP threads,
/// statically scheduled like hand_loop_w2. Returns the number of threads that ran it.
int copy_loop(const float* x, float* out, size_t n, int n_threads);

/// hand_loop_w2's loop built without vectorisation, on the calling thread.
void hand_loop_w2_scalar(const float* x, float* out, size_t n);

/// The OpenMP runtime's settings, for the benchmark context: "OMP_WAIT_POLICY=passive,
/// max threads 2".
const char* openmp_description();

}  // namespace ff_bench
