// The loops a C++ programmer writes for a histogram (hist[idx[i]] += w[i]), the baselines of
// ff_bench_scatter. Built with the hand-loop flags (-O3 -march=native, OpenMP); an indexed add
// does not vectorise (lanes may share a bin), so the serial loop is the scalar loop.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ff_bench {

/// hist[0..bins) = 0, then hist[idx[i]] += w[i] for every i < n (every idx[i] < bins), on the
/// calling thread.
void histogram_serial(const uint32_t* idx, const float* w, size_t n, float* hist, size_t bins);

/// The same on `n_threads` OpenMP threads, each adding into a private histogram (an OpenMP
/// array reduction) merged at the end. Returns the number of threads that ran it.
int histogram_openmp(const uint32_t* idx, const float* w, size_t n, float* hist, size_t bins,
                     int n_threads);

}  // namespace ff_bench
