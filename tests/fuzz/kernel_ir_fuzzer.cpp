// libFuzzer entry point of the kernel IR target (kernel_ir_target.h), built with FF_FUZZ=ON
// and clang; scripts/fuzz.sh runs it. FF_FUZZ_COMPILE=0 skips compiling valid kernels (many
// more inputs per second, the parser and validator only).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "fuzz/kernel_ir_target.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const bool compile = [] {
    const char* v = std::getenv("FF_FUZZ_COMPILE");
    return !(v && std::strcmp(v, "0") == 0);
  }();
  ff::fuzz::run_kernel_ir({reinterpret_cast<const std::byte*>(data), size}, compile);
  return 0;
}
