// hand_loop_w2's loop compiled without vectorisation (see CMakeLists.txt): the yardstick that
// shows whether the real baseline vectorised.
#include <cstddef>

#include "hand_loop.h"
#include "hand_loop_body.h"

namespace ff_bench {

void hand_loop_w2_scalar(const float* x, float* out, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    out[i] = hand::w2_element(x[i]);
  }
}

}  // namespace ff_bench
