// The public start-up API: init/shutdown, flags, log level, statistics. It reads the
// environment (FF_BACKEND, FF_LOG_LEVEL, FF_DEBUG, FF_THREADS, FF_CAPTURE here; the backend
// options in environment.cpp) and builds stacks through the registry, then hands them to the
// tracer's device slot: ff::init explicitly, or the tracer's first use before any ff::init
// (build_default_stack, which the tracer calls: nothing is registered at load time). A capturing
// stack ("record:llvm") with FF_CAPTURE set writes its recording when it is shut down or replaced,
// or at process exit if that never came.
#include <cmath>
#include <cstdlib>
#include <mutex>
#include <string>

#include "common/file_io.h"
#include "common/log.h"
#include "freezeframe/errors.h"
#include "freezeframe/init.h"
#include "recorder/format_writer.h"
#include "recorder/recording_backend.h"
#include "registry/backend_registry.h"
#include "runtime/environment.h"
#include "tracer/device.h"
#include "tracer/variable.h"

namespace ff {
namespace detail {
namespace {

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

/// Threads for the CPU backend: the explicit option, else FF_THREADS, else 0 (every core).
unsigned thread_count(const InitOptions& init) {
  if (init.threads)
    return init.threads;
  std::string env = env_string("FF_THREADS");
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
  std::string chosen = spec.empty() ? env_string("FF_BACKEND") : std::string(spec);
  if (chosen.empty())
    chosen = "llvm";
  if (std::string lvl = env_string("FF_LOG_LEVEL"); !lvl.empty())
    logging::apply_level_spec(lvl);
  if (env_switch("FF_DEBUG").value_or(false))
    set_flag_value(Flag::Debug, true);
  unsigned threads = thread_count(init);
  BackendOptions options = environment_backend_options();
  options.n_threads = threads;
  auto backend = backend_registry().create(chosen, options);
  logging::tracer().info("initialised backend stack '{}'{}", backend->name(),
                         debug_checks() ? " with range checks (FF_DEBUG)" : "");
  std::string capture = env_string("FF_CAPTURE");
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

}  // namespace

// Declared by the tracer (tracer/device.h), which calls it on its first use before any
// ff::init: ff::init()'s stack.
std::unique_ptr<Backend> build_default_stack() {
  return build_stack({});
}
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
