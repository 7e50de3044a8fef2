// A CUDA driver simulated on the host, for running the whole CUDA backend (allocator, staging,
// launch configuration, built-in kernels, compress read-back, graphs) in CI without a GPU:
// device memory is host memory, modules are parsed by the PTX reference interpreter and every
// launch runs on it at once (streams and events are bookkeeping), graphs keep their kernel
// nodes and run them in order. Accesses outside live device allocations fail the launch.
//
// Not thread-parallel: one mutex serialises every entry point, as a single in-order stream.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "backend/cuda/cuda_driver.h"

namespace ffcuda {

/// The fake driver (one per process; its state persists across backends).
std::shared_ptr<const ff::cuda_backend::Driver> fake_driver();

struct FakeDriverCounters {
  uint64_t launches = 0;        // cuLaunchKernel calls
  uint64_t graph_launches = 0;  // cuGraphLaunch calls
  uint64_t nodes_added = 0;     // cuGraphAddKernelNode calls
  uint64_t node_updates = 0;    // cuGraphExecKernelNodeSetParams calls
  uint64_t instantiations = 0;  // cuGraphInstantiateWithFlags calls
  uint64_t mem_allocs = 0;      // cuMemAlloc calls
  uint64_t mem_frees = 0;       // cuMemFree calls
  uint64_t live_bytes = 0;      // bytes in live device allocations
  uint64_t modules = 0;         // modules loaded
  std::string last_error;       // the last failure's message (a bad access, bad PTX)
};

/// A snapshot of the counters.
FakeDriverCounters fake_counters();

/// Devices the fake reports (default 1; 0 simulates a machine without a device).
void fake_set_device_count(int n);

/// Makes cuMemAlloc fail with CUDA_ERROR_OUT_OF_MEMORY once live memory would exceed `bytes`
/// (0: no limit).
void fake_set_memory_limit(uint64_t bytes);

/// Makes cuGraphInstantiateWithFlags fail (a driver that refuses graphs) while `fail` is set.
void fake_set_graph_failure(bool fail);

/// The fake driver's entry points (what libff_cuda_sim.so exports under the driver's names),
/// with or without the graph entry points.
const ff::cuda_backend::DriverApi& fake_driver_api(bool graphs = true);

/// The fake driver without its graph entry points (a driver older than CUDA 11.4).
std::shared_ptr<const ff::cuda_backend::Driver> fake_driver_without_graphs();

}  // namespace ffcuda
