// Linked into the FF_CUDA_ONLY test binaries so they run on older glibc than this build machine
// has: the static libstdc++ of GCC 12 seeds std::random_device from arc4random, which glibc
// has only since 2.36. Defined here (from getrandom, glibc 2.25) the binaries need glibc 2.34.
#include <sys/random.h>

#include <cstdint>
#include <cstdio>

extern "C" uint32_t arc4random(void) {
  uint32_t v = 0;
  if (getrandom(&v, sizeof v, 0) != static_cast<ssize_t>(sizeof v)) {
    if (FILE* f = std::fopen("/dev/urandom", "rb")) {
      if (std::fread(&v, sizeof v, 1, f) != 1)
        v = 0x9E3779B9u;
      std::fclose(f);
    }
  }
  return v;
}
