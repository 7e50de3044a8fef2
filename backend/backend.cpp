// Default behaviour of the Backend interface.
#include "backend/backend.h"

#include <atomic>
#include <cstdio>

namespace ff {

namespace {
std::atomic<uint64_t> g_next_instance_id{1};
}  // namespace

Backend::Backend() : instance_id_(g_next_instance_id.fetch_add(1, std::memory_order_relaxed)) {}

std::string Backend::describe_buffer(const void* ptr) const {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%p", ptr);
  return buf;
}

}  // namespace ff
