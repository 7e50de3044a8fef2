// The tracer's slot for the current backend stack (a Device), and process-wide flags. The stack
// itself (backend/backend_stack.h) is not the tracer's: the runtime (runtime/) builds stacks and
// installs them here (replace_device, called by ff::init and ff::shutdown). The tracer only asks
// for the current top on every call instead of caching a Backend&.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>

#include "backend/backend.h"
#include "backend/backend_stack.h"
#include "freezeframe/init.h"

namespace ff::detail {

/// The tracer's name for a backend stack (backend/backend_stack.h): what its buffers allocate
/// from and hold on to.
using Device = BackendStack;

/// The current device, creating the default stack (build_default_stack) on first use.
/// Thread-safe.
const std::shared_ptr<Device>& current_device();

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

// What the tracer needs from the runtime before anyone could hand it down: arrays may be made
// before ff::init(), so the tracer asks. Declared here, defined in runtime/: plain functions
// the linker resolves, not hooks a static initialiser registers (no load-time registration,
// which a static library's linker may drop and which runs in no defined order).

/// Builds the stack used when arrays are touched before ff::init() (ff::init()'s stack:
/// FF_BACKEND, default llvm). Defined in runtime/runtime.cpp.
std::unique_ptr<Backend> build_default_stack();

/// Whether the tracer's cross-thread handshake may use membarrier(2) (FF_ASYMMETRIC_FENCES=0
/// says no). Asked once, when the first thread table is made. Defined in
/// runtime/environment.cpp.
bool asymmetric_fences_allowed();

/// Makes the calling thread, if it is the main thread, stop the backend's background work
/// when it exits: see ExitWatch in device.cpp. Cheap after the first call on a thread.
void watch_for_process_exit();

}  // namespace ff::detail
