// The current backend stack, its lazy creation, process-wide flags, and stopping background
// work at process exit.
#include "tracer/device.h"

#include <unistd.h>

#include <vector>

#include "freezeframe/errors.h"
#include "tracer/variable.h"

namespace ff::detail {
namespace {

std::mutex g_mutex;
std::shared_ptr<Device> g_device;             // guarded by g_mutex for writes
std::atomic<Device*> g_device_fast{nullptr};  // lock-free read path
std::atomic<bool> g_flags[2] = {true, false};
// Every stack ever created, current or not: arrays kept past shutdown() keep theirs alive,
// and its background compiles must stop at exit too (ExitWatch).
std::vector<std::weak_ptr<Device>> g_devices;  // guarded by g_mutex

// exit() runs the calling thread's thread_local destructors before any static destructor.
// That is the only hook early enough for background compiles: LLVM destroys its lazily
// created function-local statics in reverse order of first use, i.e. before our statics,
// and a warm-up compile still running at that point crashes the process on its way out.
struct ExitWatch {
  ~ExitWatch() {
    if (::gettid() != ::getpid())
      return;  // a thread ending, not the process
    std::vector<std::shared_ptr<Device>> devices;
    {
      std::lock_guard lock(g_mutex);
      for (const std::weak_ptr<Device>& d : g_devices)
        if (auto alive = d.lock())
          devices.push_back(std::move(alive));
    }
    for (const auto& device : devices)
      device->backend().stop_background_work();
  }
};

void install_locked(std::shared_ptr<Device> device) {
  g_device_fast = nullptr;
  g_device = std::move(device);
  if (g_device) {
    std::erase_if(g_devices, [](const std::weak_ptr<Device>& d) { return d.expired(); });
    g_devices.push_back(g_device);
  }
  g_device_fast = g_device.get();
}

}  // namespace

// This thread's reference to the current stack (a thread impersonating another's table keeps
// using its own).
static thread_local std::shared_ptr<Device> t_device;

const std::shared_ptr<Device>& current_device() {
  std::shared_ptr<Device>& mine = t_device;
  Device* fast = g_device_fast.load(std::memory_order_acquire);
  if (fast && mine.get() == fast) [[likely]]
    return mine;
  std::lock_guard lock(g_mutex);
  if (!g_device) {
    watch_for_process_exit();
    install_locked(std::make_shared<Device>(build_default_stack()));
  }
  mine = g_device;
  return mine;
}

void replace_device(const std::function<std::shared_ptr<Device>()>& build) {
  std::lock_guard lock(g_mutex);
  install_locked(nullptr);
  t_device.reset();  // this thread's cached reference; others refresh on next use
  install_locked(build ? build() : nullptr);
}

bool has_device() {
  std::lock_guard lock(g_mutex);
  return g_device != nullptr;
}

std::shared_ptr<Device> current_device_if_any() {
  std::lock_guard lock(g_mutex);
  return g_device;
}

bool recording_open() {
  return current_device()->backend().recording_scope_open();
}

bool flag_value(Flag f) {
  return g_flags[static_cast<int>(f)].load(std::memory_order_relaxed);
}

void set_flag_value(Flag f, bool value) {
  g_flags[static_cast<int>(f)] = value;
}

void watch_for_process_exit() {
  thread_local ExitWatch watch;
  (void)watch;
}

}  // namespace ff::detail
