// Runner of the executables that run backend-independent test corpora (arrays, recordings) on
// the "cuda" backend: FF_BACKEND defaults to "cuda" here.
//
//   FF_CUDA_TESTS_ON_GPU (ff_tests_cuda): the real driver. Without a usable device every test
//     prints "skipped: no CUDA device (why)" and passes (CTest reports it as skipped); with
//     FF_REQUIRE_CUDA=1 it fails instead (tests/gpu/run.sh sets it).
//   otherwise (ff_tests_cuda_sim): "cuda" is re-registered on the simulated driver
//     (tests/cuda/fake_driver.h), so the same corpora run in CI through the whole CUDA backend
//     with the PTX reference interpreter standing in for the GPU.
#define CATCH_CONFIG_RUNNER
#include <freezeframe/freezeframe.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <iostream>
#include <string>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_driver.h"
#include "cuda/fake_driver.h"
#include "registry/backend_registry.h"
#include "runtime/environment.h"

int main(int argc, char* argv[]) {
  ff::set_log_level(ff::LogLevel::Warn);
  setenv("FF_BACKEND", "cuda", /*overwrite=*/0);
  bool listing = false;
  for (int i = 1; i < argc; ++i)
    listing = listing || std::string(argv[i]).rfind("--list", 0) == 0;
#ifdef FF_CUDA_TESTS_ON_GPU
  if (!listing) {
    ff::cuda_backend::CudaProbe probe =
        ff::cuda_backend::probe_cuda(ff::detail::environment_backend_options());
    if (probe.reason != ff::cuda_backend::Unavailable::None) {
      const char* req = std::getenv("FF_REQUIRE_CUDA");
      if (req && *req && std::string(req) != "0") {
        std::cerr << "FF_REQUIRE_CUDA is set but the CUDA backend cannot start: " << probe.message
                  << "\n";
        return 1;
      }
      std::cout << "skipped: no CUDA device (" << probe.message << ")\n";
      return 0;
    }
  }
#else
  ff::backend_registry().add(
      "cuda",
      [](const ff::BackendOptions&, std::unique_ptr<ff::Backend>) {
        ff::cuda_backend::CudaOptions o;
        o.driver = ffcuda::fake_driver();
        o.graphs = ff::detail::environment_backend_options().cuda_graphs;  // as ff::init reads it
        return ff::cuda_backend::create_cuda_backend(o);
      },
      false);
#endif
  return Catch::Session().run(argc, argv);
}
