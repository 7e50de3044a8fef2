// Options every backend factory receives (the registry passes them down a stack).
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
};

}  // namespace ff
