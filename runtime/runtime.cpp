// The public start-up API: init/shutdown, flags, log level, statistics. It reads the
// environment (FF_BACKEND, FF_LOG_LEVEL, FF_DEBUG, FF_THREADS, FF_CACHE_DIR, FF_CACHE_MAX_MB,
// FF_CAPTURE) and builds stacks through the registry, then hands them to the tracer's device
// slot. A capturing stack ("record:llvm") with FF_CAPTURE set writes its recording when it is
// shut down or replaced, or at process exit if that never came.
#include <cmath>
#include <cstdlib>
#include <mutex>
#include <string>

#include "common/env.h"
#include "common/file_io.h"
#include "common/log.h"
#include "freezeframe/errors.h"
#include "freezeframe/init.h"
#include "recorder/format_writer.h"
#include "recorder/recording_backend.h"
#include "registry/backend_registry.h"
#include "tracer/device.h"
#include "tracer/variable.h"

namespace ff {
namespace detail {
namespace {

std::string env_or(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}

// FF_CAPTURE: where the current capturing stack writes its recording (empty: nowhere).
std::mutex g_capture_mutex;
std::string g_capture_path;  // guarded by g_capture_mutex

/// Writes the capture of `backend` (the current stack's top) to FF_CAPTURE's path, once.
/// Never throws: it runs at shutdown and at exit.
void write_capture(Backend& backend) noexcept {
  std::string path;
  {
    std::lock_guard lock(g_capture_mutex);
    path.swap(g_capture_path);
  }
  auto* rb = dynamic_cast<rec::RecordingBackend*>(&backend);
  if (path.empty() || !rb || !rb->is_capturing())
    return;
  try {
    rec::RecordingData data = rb->capture_snapshot();
    write_file_atomic(path, format::write(data), /*durable=*/true);
    logging::record().info("FF_CAPTURE: wrote the session's recording ({}) to '{}'", data.summary(),
                           path);
  } catch (const std::exception& e) {
    logging::record().error("FF_CAPTURE: cannot write the session's recording to '{}': {}", path,
                            e.what());
  }
}

/// Writes the current stack's capture, if it has one pending. Uses no thread-local state:
/// at exit the calling thread's is gone.
void write_current_capture() noexcept {
  {
    std::lock_guard lock(g_capture_mutex);
    if (g_capture_path.empty())
      return;
  }
  if (std::shared_ptr<Device> device = current_device_if_any())
    write_capture(device->backend());
}

void write_capture_at_exit() {
  write_current_capture();
}

/// The on-disk kernel cache from FF_CACHE_DIR ("off", a directory, or unset: the XDG cache
/// directory) and FF_CACHE_MAX_MB.
void configure_disk_cache(BackendOptions& o) {
  std::string dir = env_or("FF_CACHE_DIR", "");
  if (dir.empty()) {
    if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg == '/')
      dir = std::string(xdg) + "/freezeframe";
    else if (const char* home = std::getenv("HOME"); home && *home)
      dir = std::string(home) + "/.cache/freezeframe";
  } else if (dir == "off") {
    dir.clear();
  }
  o.kernel_cache_dir = dir;
  if (const char* mb = std::getenv("FF_CACHE_MAX_MB"); mb && *mb) {
    char* end = nullptr;
    double v = std::strtod(mb, &end);
    if (*end != '\0' || !(v >= 0) || !std::isfinite(v) || v > 1e12)
      logging::backend().warn("FF_CACHE_MAX_MB='{}' is not a size in MB; keeping {} MB", mb,
                              o.kernel_cache_max_bytes >> 20);
    else
      o.kernel_cache_max_bytes = static_cast<uint64_t>(v * 1048576.0);
  }
  if (dir.empty())
    logging::backend().info("on-disk kernel cache: off");
  else
    logging::backend().info("on-disk kernel cache: '{}' (at most {} MB)", dir,
                            o.kernel_cache_max_bytes >> 20);
}

/// Threads for the CPU backend: the explicit option, else FF_THREADS, else 0 (every core).
unsigned thread_count(const InitOptions& init) {
  if (init.threads)
    return init.threads;
  std::string env = env_or("FF_THREADS", "");
  if (env.empty())
    return 0;
  char* end = nullptr;
  unsigned long n = std::strtoul(env.c_str(), &end, 10);
  if (*end || n == 0 || n > 4096 || env[0] == '-')
    throw Error("FF_THREADS='" + env + "' is not a thread count from 1 to 4096");
  return static_cast<unsigned>(n);
}

std::unique_ptr<Backend> build_stack(std::string_view spec, const InitOptions& init = {}) {
  watch_for_process_exit();
  std::string chosen = spec.empty() ? env_or("FF_BACKEND", "llvm") : std::string(spec);
  if (const char* lvl = std::getenv("FF_LOG_LEVEL"); lvl && *lvl)
    logging::apply_level_spec(lvl);
  if (env_switch("FF_DEBUG").value_or(false))
    set_flag_value(Flag::Debug, true);
  BackendOptions options;
  options.n_threads = thread_count(init);
  configure_disk_cache(options);
  auto backend = backend_registry().create(chosen, options);
  logging::tracer().info("initialised backend stack '{}'{}", backend->name(),
                         debug_checks() ? " with range checks (FF_DEBUG)" : "");
  std::string capture = env_or("FF_CAPTURE", "");
  auto* rb = dynamic_cast<rec::RecordingBackend*>(backend.get());
  if (!capture.empty() && rb && rb->is_capturing()) {
    static std::once_flag at_exit;
    std::call_once(at_exit, [] { std::atexit(write_capture_at_exit); });
    std::lock_guard lock(g_capture_mutex);
    g_capture_path = capture;
    logging::record().info("FF_CAPTURE: the session's recording goes to '{}' at shutdown", capture);
  } else if (!capture.empty()) {
    logging::record().warn(
        "FF_CAPTURE='{}' is ignored: the stack '{}' does not capture (use e.g. record:llvm)",
        capture, backend->name());
  }
  return backend;
}

std::unique_ptr<Backend> build_default_stack() {
  return build_stack({});
}

// The tracer builds the default stack on first use without linking the registry: the
// factory is handed down when the library loads (before any user code can make an array).
const bool g_factory_registered = (set_default_stack_factory(&build_default_stack), true);

}  // namespace
}  // namespace detail

void init(std::string_view spec) {
  init(spec, InitOptions{});
}

void init(std::string_view spec, const InitOptions& options) {
  detail::write_current_capture();  // the stack being replaced ends here
  detail::replace_device(
      [&] { return std::make_shared<detail::Device>(detail::build_stack(spec, options)); });
}

void shutdown() {
  detail::write_current_capture();
  detail::replace_device(nullptr);
}

bool is_initialized() {
  return detail::has_device();
}

std::string backend_name() {
  return detail::current_device()->backend().name();
}

void set_flag(Flag f, bool value) {
  auto i = static_cast<size_t>(f);
  if (i >= 2)
    throw Error("set_flag: unknown flag " + std::to_string(i));
  detail::set_flag_value(f, value);
}

bool flag(Flag f) {
  auto i = static_cast<size_t>(f);
  if (i >= 2)
    throw Error("flag: unknown flag " + std::to_string(i));
  return detail::flag_value(f);
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
  s.disk_cache_hits = b.disk_cache_hits;
  s.threads = b.threads;
  s.launches = b.launches;
  s.reductions = b.reductions;
  s.allocs = b.allocs;
  s.bytes_allocated = b.bytes_allocated;
  s.peak_bytes = b.peak_bytes;
  s.copies = b.copies;
  s.host_reads = b.host_reads;
  s.generation = b.generation;
  detail::TracerState& t = detail::state();
  detail::Window w;
  s.traced_ops = t.n_traced_ops;
  s.traced_kernels = t.n_traced_kernels;
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
