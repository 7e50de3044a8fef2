// The process-wide runtime: the backend stack, flags. The tracer asks it for the current
// top of the stack on every call instead of caching a Backend&.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>

#include "backend/backend.h"

namespace ff::detail {

/// Owns the backend stack. Buffers hold a shared_ptr to it, so a stack outlives shutdown()
/// until the last array that allocated from it is gone. The top can be decorated later (a
/// recorder inserted on demand); threads already using the old top keep a valid backend,
/// since the decorator owns it.
class Device {
 public:
  explicit Device(std::unique_ptr<Backend> b) : owner_(std::move(b)), top_(owner_.get()) {}

  Backend& backend() const { return *top_.load(std::memory_order_acquire); }

  /// Replaces the top with `decorate(old top)` unless `keep(top)` says it already fits.
  /// Returns the (new or kept) top.
  Backend& decorate(
      const std::function<bool(Backend&)>& keep,
      const std::function<std::unique_ptr<Backend>(std::unique_ptr<Backend>)>& decorate);

 private:
  std::mutex mutex_;
  std::unique_ptr<Backend> owner_;
  std::atomic<Backend*> top_;
};

/// The current device, initialising the default stack on first use. Thread-safe.
const std::shared_ptr<Device>& current_device();

/// Recording scopes open on this thread (maintained by the record/freeze front end); the
/// tracer uses it to warn when a size loses its provenance inside a recording and to leave
/// FF_DEBUG range reports out of recorded kernels.
int& recording_depth();

/// True when range checks on gather/scatter indices are on (Flag::Debug / FF_DEBUG).
bool debug_checks();

/// Makes the calling thread, if it is the main thread, stop the backend's background work
/// when it exits: see ExitWatch in runtime.cpp. Cheap after the first call on a thread.
void watch_for_process_exit();

}  // namespace ff::detail
