// The "cuda" Backend: one stream per context, a caching device allocator, page-locked staging
// for host copies, kernels generated as PTX and loaded with cuModuleLoadDataEx (cached by the
// IR hash), and reduce / prefix_sum / compress / fill as built-in PTX kernels. Work is queued
// on the stream; host reads (device-to-host copies, compress counts) and sync() wait for it.
#pragma once

#include <memory>
#include <span>

#include "backend/backend.h"
#include "backend/backend_options.h"
#include "backend/cuda/cuda_api.h"
#include "backend/cuda/ptx_writer.h"

namespace ff {

/// Creates the "cuda" backend on device options.cuda_device (FF_CUDA_DEVICE, default 0), with the
/// driver options.cuda_driver_library names (FF_CUDA_DRIVER_LIBRARY). Throws ff::BackendError
/// (a cuda_backend::CudaUnavailableError) naming what is missing when the driver or the device
/// cannot be used.
std::unique_ptr<Backend> create_cuda_backend(const BackendOptions& options);

namespace cuda_backend {

class Driver;

struct CudaOptions {
  int device = 0;                        // the device ordinal
  std::shared_ptr<const Driver> driver;  // null: the process-wide driver (Driver::shared())
  std::string driver_library;            // with driver null: the library Driver::shared() opens
  PtxTarget target;                      // what generated PTX is written for
  bool graphs = true;                    // run replays as CUDA graphs where the driver can
};

/// The cuda options `options` ask for: the device (parsed from options.cuda_device; throws
/// CudaUnavailableError, BadDeviceIndex, for one that is not a device number), the driver
/// library and graphs.
CudaOptions cuda_options(const BackendOptions& options);

/// Creates the backend with explicit options (tests, benchmarks).
std::unique_ptr<Backend> create_cuda_backend(const CudaOptions& options);

/// Where the backend sends kernel launches: the stream (op by op) or a graph being built or
/// re-bound. `params` are the entry's parameter words; the callee copies what it keeps.
class LaunchSink {
 public:
  virtual ~LaunchSink() = default;
  virtual void kernel(CUfunction fn, unsigned grid, unsigned block,
                      std::span<const uint64_t> params) = 0;
};

}  // namespace cuda_backend
}  // namespace ff
