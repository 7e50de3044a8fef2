// Options every backend factory receives (the registry passes them down a stack).
#pragma once

namespace ff {

struct BackendOptions {
  unsigned n_threads = 0;  // host threads for launches; 0 = every core (FF_THREADS)
};

}  // namespace ff
