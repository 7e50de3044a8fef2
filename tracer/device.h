// The backend stack the tracer talks to (a Device), the current one, and process-wide flags.
// The runtime (runtime/) builds stacks and installs them here; the tracer only asks for the
// current top on every call instead of caching a Backend&.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>

#include "backend/backend.h"
#include "freezeframe/init.h"

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

/// The current device, creating the default stack (default_stack_factory) on first use.
/// Thread-safe.
const std::shared_ptr<Device>& current_device();

/// Builds the stack used when arrays are touched before ff::init(); the runtime installs it
/// at load time (the tracer must not link the registry, which sits above it).
using StackFactory = std::unique_ptr<Backend> (*)();
void set_default_stack_factory(StackFactory factory);

/// Makes `device` current (null: none, the next use builds the default stack). Runs under
/// the lock that current_device() takes on its slow path; `build` is called under it too.
void replace_device(const std::function<std::shared_ptr<Device>()>& build);
/// True while a device is current.
bool has_device();
/// The current device or null, without creating one and without touching thread-local state
/// (usable at process exit, after the calling thread's tracing state is gone).
std::shared_ptr<Device> current_device_if_any();

/// True while a recording scope is open on the calling thread in the current stack: the
/// stack itself answers (Backend::recording_scope_open), so there is one owner of that fact.
bool recording_open();

/// Process-wide flags (ff::set_flag / ff::flag).
bool flag_value(Flag f);
void set_flag_value(Flag f, bool value);

/// True when range checks on gather/scatter indices are on (Flag::Debug / FF_DEBUG).
inline bool debug_checks() {
  return flag_value(Flag::Debug);
}

/// Makes the calling thread, if it is the main thread, stop the backend's background work
/// when it exits: see ExitWatch in device.cpp. Cheap after the first call on a thread.
void watch_for_process_exit();

}  // namespace ff::detail
