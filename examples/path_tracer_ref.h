// The path tracer example's baseline: the same scene, algorithm and PCG32 draws as
// path_tracer.cpp, written by hand as an OpenMP loop over pixels. path_tracer_ref.cpp includes
// no freezeframe header, so its own compile flags (-O3 -march=native -fno-math-errno
// -fno-trapping-math -fopenmp) apply to nothing else.
#pragma once

#include <cstddef>
#include <cstdint>

namespace pt {

/// Seeds one PCG32 per pixel as ff::PCG32::seed(n, kSeedState, kSeedSequence) does: pixel i
/// gets pcg32_srandom_r(kSeedState, kSeedSequence + i). `state` and `inc` hold n values.
void reference_seed(uint64_t* state, uint64_t* inc, size_t n);

/// Renders one sample per pixel of a width x height image and adds it to the planar image
/// (accum_r, accum_g, accum_b: width * height floats each), advancing each pixel's generator
/// (state, inc from reference_seed), on `n_threads` OpenMP threads (> 0). Returns the number of
/// threads that ran it (1 when built without OpenMP).
int openmp_frame(uint64_t* state, const uint64_t* inc, float* accum_r, float* accum_g,
                 float* accum_b, uint32_t width, uint32_t height, int n_threads);

}  // namespace pt
