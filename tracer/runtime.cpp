// init/shutdown, flags, logging set-up and statistics of the public API.
#include "tracer/runtime.h"

#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "backend/registry.h"
#include "common/log.h"
#include "freezeframe/errors.h"
#include "freezeframe/init.h"
#include "tracer/variable.h"

namespace ff {
namespace detail {
namespace {

std::mutex g_mutex;
std::shared_ptr<Device> g_device;             // guarded by g_mutex for writes
std::atomic<Device*> g_device_fast{nullptr};  // lock-free read path
std::atomic<bool> g_flags[2] = {true, false};
// Every stack ever created, current or not: arrays kept past shutdown() keep theirs alive,
// and its background compiles must stop at exit too (ExitWatch).
std::vector<std::weak_ptr<Device>> g_devices;  // guarded by g_mutex

std::string env_or(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}

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

void init_locked(std::string_view spec) {
  watch_for_process_exit();
  std::string chosen = spec.empty() ? env_or("FF_BACKEND", "llvm") : std::string(spec);
  if (const char* lvl = std::getenv("FF_LOG_LEVEL"); lvl && *lvl)
    logging::apply_level_spec(lvl);
  if (const char* dbg = std::getenv("FF_DEBUG"); dbg && *dbg && std::string(dbg) != "0")
    g_flags[static_cast<int>(Flag::Debug)] = true;
  auto backend = backend_registry().create(chosen, BackendOptions{});
  logging::tracer().info("initialised backend stack '{}'{}", backend->name(),
                         debug_checks() ? " with range checks (FF_DEBUG)" : "");
  g_device = std::make_shared<Device>(std::move(backend));
  g_device_fast = g_device.get();
  std::erase_if(g_devices, [](const std::weak_ptr<Device>& d) { return d.expired(); });
  g_devices.push_back(g_device);
}

}  // namespace

Backend& Device::decorate(
    const std::function<bool(Backend&)>& keep,
    const std::function<std::unique_ptr<Backend>(std::unique_ptr<Backend>)>& decorate) {
  std::lock_guard lock(mutex_);
  if (keep(*owner_))
    return *owner_;
  owner_ = decorate(std::move(owner_));
  top_.store(owner_.get(), std::memory_order_release);
  return *owner_;
}

int& recording_depth() {
  return state().recording_depth;
}

const std::shared_ptr<Device>& current_device() {
  std::shared_ptr<Device>& mine = state().device;
  Device* fast = g_device_fast.load(std::memory_order_acquire);
  if (fast && mine.get() == fast) [[likely]]
    return mine;
  std::lock_guard lock(g_mutex);
  if (!g_device)
    init_locked({});
  mine = g_device;
  return mine;
}

void watch_for_process_exit() {
  thread_local ExitWatch watch;
  (void)watch;
}

bool debug_checks() {
  return g_flags[static_cast<int>(Flag::Debug)].load(std::memory_order_relaxed);
}

}  // namespace detail

void init(std::string_view spec) {
  std::lock_guard lock(detail::g_mutex);
  detail::g_device_fast = nullptr;
  detail::g_device.reset();
  detail::init_locked(spec);
}

void shutdown() {
  std::lock_guard lock(detail::g_mutex);
  detail::g_device_fast = nullptr;
  detail::g_device.reset();
  detail::state().device.reset();
}

bool is_initialized() {
  std::lock_guard lock(detail::g_mutex);
  return detail::g_device != nullptr;
}

std::string backend_name() {
  return detail::current_device()->backend().name();
}

void set_flag(Flag f, bool value) {
  auto i = static_cast<size_t>(f);
  if (i >= 2)
    throw Error("set_flag: unknown flag " + std::to_string(i));
  detail::g_flags[i] = value;
}

bool flag(Flag f) {
  auto i = static_cast<size_t>(f);
  if (i >= 2)
    throw Error("flag: unknown flag " + std::to_string(i));
  return detail::g_flags[i];
}

void set_log_level(LogLevel level) {
  static const spdlog::level::level_enum map[] = {
      spdlog::level::trace, spdlog::level::debug,    spdlog::level::info, spdlog::level::warn,
      spdlog::level::err,   spdlog::level::critical, spdlog::level::off};
  logging::set_all_levels(map[static_cast<int>(level)]);
}

Stats stats() {
  BackendStats b = detail::current_device()->backend().stats();
  Stats s;
  s.compiles = b.compiles;
  s.cache_hits = b.cache_hits;
  s.launches = b.launches;
  s.reductions = b.reductions;
  s.allocs = b.allocs;
  s.bytes_allocated = b.bytes_allocated;
  s.peak_bytes = b.peak_bytes;
  s.copies = b.copies;
  s.host_reads = b.host_reads;
  s.generation = b.generation;
  s.traced_ops = detail::state().n_traced_ops;
  s.traced_kernels = detail::state().n_traced_kernels;
  return s;
}

void reset_peak_memory() {
  detail::current_device()->backend().reset_peak();
}

void sync() {
  detail::current_device()->backend().sync();
}

void flush_kernel_cache() {
  detail::current_device()->backend().flush_kernels();
}

}  // namespace ff
