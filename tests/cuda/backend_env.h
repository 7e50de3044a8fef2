// Which CUDA driver the backend tests run on: the simulated one (tests/cuda/fake_driver.h) in
// the host test executable, the real one in the GPU executable (which prints "skipped: no
// CUDA device" and passes when there is none, and fails instead with FF_REQUIRE_CUDA=1).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "backend/backend.h"

namespace ffcuda {

/// True when the tests run on a real GPU (the GPU executable).
bool real_gpu();

/// Prints "skipped: no CUDA device (why)" and returns false when the GPU executable finds no
/// usable device; true otherwise (always true with the fake driver). With FF_REQUIRE_CUDA=1 a
/// missing device fails the test instead.
bool require_cuda();

/// A fresh "cuda" backend on the test driver.
std::unique_ptr<ff::Backend> make_cuda_backend();

/// Element counts for "large" cases: big enough for many blocks and grid-stride rounds, small
/// enough for the interpreter behind the fake driver.
size_t large_size();

}  // namespace ffcuda
