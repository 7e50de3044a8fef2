// The failure path of FF_ASSERT: log the broken invariant, then abort.
#include "common/assert.h"

#include <cstdio>
#include <cstdlib>

#include "common/log.h"

namespace ff::detail {

void assertion_failed(const char* condition, const char* file, int line,
                      const std::string& message) noexcept {
  try {
    spdlog::logger& log = logging::assertions();
    if (log.should_log(spdlog::level::critical)) {
      log.critical("assertion failed: {} ({}:{}): {}", condition, file, line, message);
      log.flush();
    } else {  // logging switched off: an assertion must still say why the process ends
      std::fprintf(stderr, "freezeframe: assertion failed: %s (%s:%d): %s\n", condition, file, line,
                   message.c_str());
    }
  } catch (...) {  // the logger itself failed: stderr is all that is left
    std::fprintf(stderr, "freezeframe: assertion failed: %s (%s:%d)\n", condition, file, line);
  }
  std::fflush(stderr);
  std::abort();
}

}  // namespace ff::detail
