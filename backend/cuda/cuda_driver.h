// The CUDA driver loaded at run time: dlopen("libcuda.so.1"), one function pointer per entry
// point of cuda_symbols.inc, conversion of CUresult codes to ff::BackendError, and the check
// that a usable driver and device exist (naming what is missing when not).
#pragma once

#include <memory>
#include <string>

#include "backend/backend_options.h"
#include "backend/cuda/cuda_api.h"
#include "freezeframe/errors.h"

namespace ff::cuda_backend {

/// The driver's entry points, filled by dlsym (or by a test with fakes).
struct DriverApi {
#define FF_CUDA_FN(member, required, symbol, fallback, ...) \
  CUresult (*member)(__VA_ARGS__) = nullptr;
#include "backend/cuda/cuda_symbols.inc"
#undef FF_CUDA_FN

  /// True when every graph entry point is present (CUDA 11.4+ drivers).
  bool has_graphs() const;
};

/// Why the CUDA backend cannot start. Persisted nowhere; for messages and tests.
enum class Unavailable : uint8_t {
  None = 0,
  NoLibrary,       // dlopen("libcuda.so.1") failed: no NVIDIA driver installed
  MissingSymbol,   // the library lacks a required entry point (a driver older than CUDA 10.1)
  StubLibrary,     // the CUDA toolkit's stub libcuda answered CUDA_ERROR_STUB_LIBRARY
  DriverTooOld,    // CUDA_ERROR_INSUFFICIENT_DRIVER, or a driver API version below 10.1
  NoDevice,        // CUDA_ERROR_NO_DEVICE, or no device counted
  BadDeviceIndex,  // FF_CUDA_DEVICE names a device that does not exist
  InitFailed,      // cuInit failed for another reason
};
const char* to_string(Unavailable u);

/// ff::BackendError for a CUDA backend that cannot start; `reason` says which case.
class CudaUnavailableError : public BackendError {
 public:
  CudaUnavailableError(Unavailable reason, const std::string& what)
      : BackendError(what), reason_(reason) {}

  Unavailable reason() const { return reason_; }

 private:
  Unavailable reason_;
};

/// The oldest driver API version the generated PTX (ISA 6.4) loads on: CUDA 10.1.
inline constexpr int kMinDriverVersion = 10010;

/// The file and line of a call, taken from the call site by a default argument (what
/// std::source_location gives, which clang 14 with libstdc++ 12 lacks).
struct CallerLine {
  const char* file;
  int line;

  static constexpr CallerLine here(const char* file = __builtin_FILE(),
                                   int line = __builtin_LINE()) {
    return {file, line};
  }
};

class Driver {
 public:
  /// Opens `library` (a soname or a path), resolves every entry point and calls cuInit(0).
  /// Throws CudaUnavailableError naming the case: no library, a missing entry point, the
  /// toolkit's stub library, a driver too old, or cuInit failing otherwise.
  static std::shared_ptr<const Driver> open(const std::string& library);

  /// The process-wide driver from `library` (empty: "libcuda.so.1"; FF_CUDA_DRIVER_LIBRARY
  /// names another, for tests): opened on first success and kept for the life of the process
  /// (unloading the driver under its own threads is unsafe), so a later call gets that one
  /// whatever it names. Failures are not cached. Thread-safe.
  static std::shared_ptr<const Driver> shared(const std::string& library);

  /// A driver whose entry points the caller provides (tests: a fake driver table). Nothing is
  /// loaded and cuInit is not called.
  explicit Driver(const DriverApi& api, int version = 12000, std::string origin = "fake driver");

  ~Driver();
  Driver(const Driver&) = delete;
  Driver& operator=(const Driver&) = delete;

  const DriverApi& api() const { return api_; }

  /// cuDriverGetVersion: 1000 * major + 10 * minor.
  int version() const { return version_; }

  /// Where the entry points came from: the library path, or "fake driver".
  const std::string& origin() const { return origin_; }

  /// "CUDA_ERROR_OUT_OF_MEMORY (out of memory)" for a code.
  std::string error_text(CUresult code) const;

  /// Throws ff::BackendError naming `call`, the code and the caller's file:line unless
  /// `code` is CUDA_SUCCESS.
  void check(CUresult code, const char* call, CallerLine where = CallerLine::here()) const {
    if (code != CUDA_SUCCESS)
      fail(code, call, where);
  }

  [[noreturn]] void fail(CUresult code, const char* call, CallerLine where) const;

  /// For destructors (which log instead of throwing): logs a failed `call` at error level,
  /// except CUDA_ERROR_DEINITIALIZED (the process is exiting and the driver went first).
  void log_failure(CUresult code, const char* call) const noexcept;

 private:
  Driver() = default;

  DriverApi api_;
  void* handle_ = nullptr;  // dlopen handle (null for a fake driver)
  int version_ = 0;
  std::string origin_;
};

/// What a caller needs to decide whether the CUDA backend can run here: the reason it cannot
/// (None when it can) and a message. Opens the shared driver (options.cuda_driver_library) and
/// counts devices; options.cuda_device (FF_CUDA_DEVICE) selects the device (default 0).
struct CudaProbe {
  Unavailable reason = Unavailable::None;
  std::string message;
};

CudaProbe probe_cuda(const BackendOptions& options);

/// The device ordinal `spec` (FF_CUDA_DEVICE as written) selects ("": 0). Throws
/// CudaUnavailableError (BadDeviceIndex) for a value that is not a non-negative integer.
int cuda_device_ordinal(const std::string& spec);

}  // namespace ff::cuda_backend
