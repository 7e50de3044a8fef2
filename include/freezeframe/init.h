// Start-up, shutdown, global flags, logging and statistics.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace ff {

/// Settings of the stack ff::init builds; every field has a default.
struct InitOptions {
  /// Host threads the CPU backend launches kernels on (large launches are split over them;
  /// 1 runs everything on the calling thread). 0: the FF_THREADS environment variable, else
  /// every core.
  unsigned threads = 0;
};

/// Builds the backend stack. `spec` is a backend name ("llvm") or a decorator chain
/// ("record:llvm", "count:llvm"); empty means the FF_BACKEND environment variable, default
/// "llvm". Also reads FF_LOG_LEVEL, FF_DEBUG, FF_THREADS, FF_CACHE_DIR, FF_CACHE_MAX_MB and
/// FF_CAPTURE. Re-initialising replaces the stack; arrays created earlier keep their buffers
/// alive. Throws ff::Error for an unknown name (the message lists the known ones) or a bad
/// FF_THREADS, ff::BackendError for a backend that cannot start.
void init(std::string_view spec = {});
void init(std::string_view spec, const InitOptions& options);

/// Frees the backend stack and compiled kernels (arrays still alive keep their buffers until
/// they are destroyed). init() may follow again.
void shutdown();

/// True between init() (explicit or implied by the first array operation) and shutdown().
bool is_initialized();

/// The current stack's spec, e.g. "llvm"; initialises the default stack if needed.
std::string backend_name();

enum class Flag : uint32_t {
  KernelFreezing = 0,  // ff::freeze replays recordings (off: every call runs traced)
  Debug = 1,           // range checks on gather/scatter indices (also FF_DEBUG=1)
};
void set_flag(Flag flag, bool value);
bool flag(Flag flag);

enum class LogLevel { Trace, Debug, Info, Warn, Error, Critical, Off };
/// Sets every ff.* logger; FF_LOG_LEVEL (spdlog syntax, e.g. "info,ff.llvm=debug") is applied
/// at init.
void set_log_level(LogLevel level);

/// Counters of the current backend stack (cumulative; take differences).
struct Stats {
  uint64_t compiles = 0;    // kernels compiled (cache misses)
  uint64_t cache_hits = 0;  // kernels found in the kernel cache
  uint64_t disk_cache_hits =
      0;                    // kernels loaded from the on-disk cache (FF_CACHE_DIR), not compiled
  uint64_t launches = 0;    // kernel launches
  uint64_t threads = 0;     // host threads the backend launches on (InitOptions::threads)
  uint64_t reductions = 0;  // reduce, prefix_sum and compress operations
  uint64_t allocs = 0;      // buffer allocations
  uint64_t bytes_allocated = 0;  // bytes in live buffers now
  uint64_t peak_bytes = 0;       // high-water mark since start or reset_peak_memory()
  uint64_t copies = 0;           // copies between host and device or device buffers
  uint64_t host_reads = 0;       // device-to-host reads
  uint64_t generation = 0;       // kernel cache generation (bumped by flush_kernel_cache)
  uint64_t traced_ops = 0;       // this thread: array operations traced (variables created)
  uint64_t traced_kernels = 0;   // this thread: kernels assembled from traced operations
};

Stats stats();
/// Restarts the peak_bytes high-water mark at the bytes allocated now.
void reset_peak_memory();

/// Waits until all queued work has finished.
void sync();

/// Drops every compiled kernel; the next use recompiles.
void flush_kernel_cache();

}  // namespace ff
