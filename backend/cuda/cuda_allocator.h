// A caching allocator of device memory: blocks are rounded up to size classes and kept on
// free lists (first in, first out) when released, so the replay loop's allocations cost a list pop
// instead of cuMemAlloc. All work runs on the backend's one stream, so a released block can be
// handed out again at once: the stream orders its last use before any new one. Cached blocks go
// back to the driver on trim() (ff::shutdown), when cuMemAlloc runs out of memory (then the
// allocation is retried once), and beyond a cache limit.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "backend/cuda/cuda_context.h"

namespace ff::cuda_backend {

class DeviceAllocator {
 public:
  /// `sync` waits for the stream (called before memory goes back to the driver, which must
  /// not free what queued work still uses). `max_cached_bytes` 0 = a quarter of the device.
  DeviceAllocator(std::shared_ptr<const CudaContext> ctx, std::function<void()> sync,
                  uint64_t max_cached_bytes = 0);
  /// Frees every block (cached and live). Never throws.
  ~DeviceAllocator();
  DeviceAllocator(const DeviceAllocator&) = delete;
  DeviceAllocator& operator=(const DeviceAllocator&) = delete;

  /// At least `bytes` bytes (0 too: a unique non-null pointer), 256-byte aligned. Throws
  /// ff::BackendError naming the size when the device is out of memory even after a trim.
  void* alloc(size_t bytes);
  /// Returns a block from alloc() to the cache. Null is a no-op. Never throws.
  void release(void* p) noexcept;
  /// Frees the cached blocks (after waiting for the stream). Never throws.
  void trim() noexcept;

  uint64_t bytes_allocated() const;
  uint64_t peak_bytes() const;
  uint64_t cached_bytes() const;
  void reset_peak();

  /// Size classes: multiples of 256 bytes up to 4 KiB, then four per power of two.
  struct SizeClass {
    unsigned index;
    size_t bytes;
  };

  static SizeClass size_class(size_t bytes);

 private:
  void free_cached_locked() noexcept;

  std::shared_ptr<const CudaContext> ctx_;
  std::function<void()> sync_;
  uint64_t max_cached_;
  mutable std::mutex mutex_;

  struct Block {
    unsigned cls;
    size_t requested;
  };

  std::unordered_map<CUdeviceptr, Block> live_;
  // Per size class, reused first in, first out: a replay's temporaries then come back at the
  // same addresses even when the caller frees the previous outputs in between (graph nodes
  // that see the same pointers need no re-binding).
  std::vector<std::deque<CUdeviceptr>> free_;
  uint64_t bytes_ = 0, peak_ = 0, cached_ = 0;
};

}  // namespace ff::cuda_backend
