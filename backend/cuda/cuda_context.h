// One CUDA device's primary context and the driver handles that live in it, each owned by an
// RAII type: the stream, events, loaded modules and page-locked host memory. The context is
// shared (std::shared_ptr) by everything created in it, so compiled kernels can outlive the
// backend that made them.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "backend/cuda/cuda_driver.h"

namespace ff::cuda_backend {

struct DeviceProperties {
  std::string name;
  int cc_major = 0, cc_minor = 0;
  int n_sms = 1;
  int max_threads_per_sm = 2048;
  int max_threads_per_block = 1024;
  int max_grid_x = 65535;
  size_t total_memory = 0;
};

class CudaContext {
 public:
  /// Retains the primary context of device `ordinal`. Throws CudaUnavailableError when there
  /// is no such device (or none at all), ff::BackendError for other driver failures.
  CudaContext(std::shared_ptr<const Driver> driver, int ordinal);
  /// Releases the primary context. Never throws.
  ~CudaContext();
  CudaContext(const CudaContext&) = delete;
  CudaContext& operator=(const CudaContext&) = delete;

  /// Makes this context current on the calling thread (one driver query when it already is).
  void bind() const;

  const Driver& driver() const { return *driver_; }

  const DriverApi& api() const { return driver_->api(); }

  void check(CUresult code, const char* call, CallerLine where = CallerLine::here()) const {
    driver_->check(code, call, where);
  }

  int ordinal() const { return ordinal_; }

  const DeviceProperties& properties() const { return props_; }

 private:
  std::shared_ptr<const Driver> driver_;
  int ordinal_;
  CUdevice device_ = 0;
  CUcontext ctx_ = nullptr;
  DeviceProperties props_;
};

/// A stream of the context (non-blocking with respect to the legacy default stream).
class Stream {
 public:
  explicit Stream(std::shared_ptr<const CudaContext> ctx);
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  CUstream get() const { return stream_; }

  /// Waits for everything queued; asynchronous kernel faults surface here as BackendError.
  void synchronize() const;

 private:
  std::shared_ptr<const CudaContext> ctx_;
  CUstream stream_ = nullptr;
};

class Event {
 public:
  explicit Event(std::shared_ptr<const CudaContext> ctx, bool timing = false);
  ~Event();
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  CUevent get() const { return event_; }

  void record(CUstream stream) const;
  void synchronize() const;
  /// Milliseconds between `start` and this event (both recorded with timing).
  float elapsed_since(const Event& start) const;

 private:
  std::shared_ptr<const CudaContext> ctx_;
  CUevent event_ = nullptr;
};

/// A module loaded from PTX (the driver JIT-compiles it for the device).
class Module {
 public:
  /// Throws ff::BackendError with the JIT's error log when the PTX does not compile.
  Module(std::shared_ptr<const CudaContext> ctx, const std::string& ptx);
  ~Module();
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  /// The entry `name`. Throws ff::BackendError if the module has none.
  CUfunction function(const char* name) const;

  const CudaContext& context() const { return *ctx_; }

 private:
  std::shared_ptr<const CudaContext> ctx_;
  CUmodule module_ = nullptr;
};

/// Page-locked host memory (for asynchronous copies).
class PinnedBuffer {
 public:
  PinnedBuffer(std::shared_ptr<const CudaContext> ctx, size_t bytes);
  ~PinnedBuffer();
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;

  void* data() const { return data_; }

  size_t size() const { return bytes_; }

 private:
  std::shared_ptr<const CudaContext> ctx_;
  void* data_ = nullptr;
  size_t bytes_;
};

}  // namespace ff::cuda_backend
