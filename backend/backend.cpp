// Default behaviour of the Backend interface.
#include "backend/backend.h"

#include <cstdio>

namespace ff {

std::string Backend::describe_buffer(const void* ptr) const {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%p", ptr);
  return buf;
}

}  // namespace ff
