// Options every backend factory receives (the registry passes them down a stack). ff::init fills
// them from the environment (runtime/environment.h): no backend reads it.
#pragma once

#include <cstdint>
#include <string>

namespace ff {

struct BackendOptions {
  unsigned n_threads = 0;  // host threads for launches; 0 = every core (FF_THREADS)
  /// Directory of the on-disk kernel cache; empty = off. ff::init fills it from FF_CACHE_DIR.
  std::string kernel_cache_dir = {};
  /// Cap on the on-disk kernel cache's bytes (FF_CACHE_MAX_MB); the oldest entries go first.
  uint64_t kernel_cache_max_bytes = uint64_t{1024} << 20;
  /// The cuda backend's device (FF_CUDA_DEVICE) as written: "" is device 0; the backend parses
  /// it when it starts, so a bad value is an error of the cuda stack only.
  std::string cuda_device = {};
  /// The CUDA driver library to open (FF_CUDA_DRIVER_LIBRARY); empty = "libcuda.so.1".
  std::string cuda_driver_library = {};
  /// Replays on the cuda backend as CUDA graphs where the driver can (FF_CUDA_GRAPHS=0: op by op).
  bool cuda_graphs = true;
};

}  // namespace ff
