// A stand-in libcuda.so for the driver-loading tests (built as a module, opened by path): every
// entry point of backend/cuda/cuda_symbols.inc is exported under its versioned name. These weak
// definitions answer CUDA_ERROR_NOT_SUPPORTED; fake_libcuda_init.cpp overrides the few the tests
// steer through the environment (cuInit's result, the driver version, the device count).
#include "backend/cuda/cuda_api.h"

using namespace ff::cuda_backend;

#define FF_CUDA_FN(member, required, symbol, fallback, ...) \
  extern "C" __attribute__((weak, visibility("default")))   \
  CUresult ff_fake_##member(__VA_ARGS__) __asm__(symbol);   \
  extern "C" CUresult ff_fake_##member(__VA_ARGS__) {       \
    return 801; /* CUDA_ERROR_NOT_SUPPORTED */              \
  }
#include "backend/cuda/cuda_symbols.inc"
#undef FF_CUDA_FN
