// The test driver choice (see backend_env.h): FF_CUDA_TESTS_ON_GPU is defined for the GPU
// executable.
#include "cuda/backend_env.h"

#include <catch2/catch.hpp>
#include <cstdlib>
#include <iostream>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_driver.h"
#include "cuda/fake_driver.h"
#include "runtime/environment.h"

namespace ffcuda {

bool real_gpu() {
#ifdef FF_CUDA_TESTS_ON_GPU
  return true;
#else
  return false;
#endif
}

bool require_cuda() {
  if (!real_gpu())
    return true;
  static const ff::cuda_backend::CudaProbe probe =
      ff::cuda_backend::probe_cuda(ff::detail::environment_backend_options());
  if (probe.reason == ff::cuda_backend::Unavailable::None)
    return true;
  const char* req = std::getenv("FF_REQUIRE_CUDA");
  if (req && *req && std::string(req) != "0")
    FAIL("FF_REQUIRE_CUDA is set but the CUDA backend cannot start: " << probe.message);
  std::cout << "skipped: no CUDA device (" << probe.message << ")\n";
  return false;
}

std::unique_ptr<ff::Backend> make_cuda_backend() {
  ff::cuda_backend::CudaOptions o =
      ff::cuda_backend::cuda_options(ff::detail::environment_backend_options());
  if (!real_gpu())
    o.driver = fake_driver();
  return ff::cuda_backend::create_cuda_backend(o);
}

size_t large_size() {
  return real_gpu() ? 3000017 : 100003;
}

}  // namespace ffcuda
