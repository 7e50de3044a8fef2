// Caching host allocator: 64-byte aligned blocks in size classes; released blocks are kept and
// handed out again, so a replay loop allocating the same sizes never reaches malloc.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

namespace ff::llvm_backend {

class HostAllocator {
 public:
  /// Released blocks are cached up to `max_cached_bytes` in total (0: a quarter of the
  /// machine's physical memory); beyond it they are freed.
  explicit HostAllocator(uint64_t max_cached_bytes = 0);
  /// Frees the cached blocks (live blocks are the caller's to release first).
  ~HostAllocator();
  HostAllocator(const HostAllocator&) = delete;
  HostAllocator& operator=(const HostAllocator&) = delete;

  /// A 64-byte aligned block of at least `bytes` bytes (0 gives a unique non-null block).
  /// Throws ff::BackendError when memory is exhausted.
  void* alloc(size_t bytes);
  /// Returns a block from alloc() to the cache. Never throws; a pointer alloc() did not return
  /// (or one released twice) is reported at error level and ignored.
  void release(void* ptr) noexcept;
  /// Frees every cached block.
  void trim() noexcept;

  uint64_t bytes_allocated() const;  // bytes requested by live blocks
  uint64_t peak_bytes() const;       // high-water mark of bytes_allocated
  uint64_t cached_bytes() const;     // class bytes held in the cache
  /// Restarts the high-water mark at the current bytes_allocated.
  void reset_peak();

  /// Size class of a request: {index, usable bytes}. At most 25% waste above 1 KiB.
  struct SizeClass {
    unsigned index;
    size_t bytes;
  };

  static SizeClass size_class(size_t bytes);

 private:
  static constexpr unsigned kNumClasses = 256;
  void trim_locked() noexcept;

  mutable std::mutex mutex_;
  std::array<std::vector<void*>, kNumClasses> free_;  // cached blocks (user pointers) per class
  uint64_t bytes_ = 0, peak_ = 0, cached_ = 0;
  uint64_t max_cached_;
};

}  // namespace ff::llvm_backend
