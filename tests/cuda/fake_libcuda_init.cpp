// The entry points of the stand-in libcuda that the tests steer (see fake_libcuda.cpp):
//   FF_FAKE_CUINIT          what cuInit returns (default 0, CUDA_SUCCESS)
//   FF_FAKE_DRIVER_VERSION  what cuDriverGetVersion reports (default 12000)
//   FF_FAKE_DEVICE_COUNT    what cuDeviceGetCount reports (default 0)
#include <cstdlib>

#include "backend/cuda/cuda_api.h"

using namespace ff::cuda_backend;

namespace {

int env(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoi(v) : fallback;
}

}  // namespace

extern "C" __attribute__((visibility("default"))) CUresult ff_fake_init(unsigned) __asm__("cuInit");

extern "C" CUresult ff_fake_init(unsigned) {
  return env("FF_FAKE_CUINIT", 0);
}

extern "C" __attribute__((visibility("default"))) CUresult ff_fake_version(int* v) __asm__(
    "cuDriverGetVersion");

extern "C" CUresult ff_fake_version(int* v) {
  *v = env("FF_FAKE_DRIVER_VERSION", 12000);
  return 0;
}

extern "C" __attribute__((visibility("default"))) CUresult ff_fake_count(int* n) __asm__(
    "cuDeviceGetCount");

extern "C" CUresult ff_fake_count(int* n) {
  *n = env("FF_FAKE_DEVICE_COUNT", 0);
  return 0;
}

extern "C" __attribute__((visibility("default"))) CUresult ff_fake_error_name(
    CUresult, const char** s) __asm__("cuGetErrorName");

extern "C" CUresult ff_fake_error_name(CUresult, const char** s) {
  *s = "CUDA_ERROR_FROM_THE_FAKE_LIBRARY";
  return 0;
}
