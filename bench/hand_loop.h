// W2's baseline: the op chain as a hand-written C++ loop (hand_loop.cpp is compiled with
// -O3 -march=native -fno-math-errno -fopenmp).
#pragma once

#include <cstddef>

namespace ff_bench {

/// out[i] = the 10-op chain (chain.h) applied to x[i], on `n_threads` OpenMP threads (0 = every
/// core).
void hand_loop_w2(const float* x, float* out, size_t n, int n_threads);

/// Number of threads hand_loop_w2 really uses for `n_threads` (1 without OpenMP).
int hand_loop_threads(int n_threads);

}  // namespace ff_bench
