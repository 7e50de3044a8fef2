// The public start-up API: init/shutdown, flags, log level, statistics. It reads the
// environment (FF_BACKEND, FF_LOG_LEVEL, FF_DEBUG, FF_THREADS) and builds stacks through the
// registry, then hands them to the tracer's device slot.
#include <cstdlib>
#include <string>

#include "common/log.h"
#include "freezeframe/errors.h"
#include "freezeframe/init.h"
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

std::unique_ptr<Backend> build_stack(std::string_view spec) {
  watch_for_process_exit();
  std::string chosen = spec.empty() ? env_or("FF_BACKEND", "llvm") : std::string(spec);
  if (const char* lvl = std::getenv("FF_LOG_LEVEL"); lvl && *lvl)
    logging::apply_level_spec(lvl);
  if (const char* dbg = std::getenv("FF_DEBUG"); dbg && *dbg && std::string(dbg) != "0")
    set_flag_value(Flag::Debug, true);
  auto backend = backend_registry().create(chosen, BackendOptions{});
  logging::tracer().info("initialised backend stack '{}'{}", backend->name(),
                         debug_checks() ? " with range checks (FF_DEBUG)" : "");
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
  detail::replace_device(
      [&] { return std::make_shared<detail::Device>(detail::build_stack(spec)); });
}

void shutdown() {
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
