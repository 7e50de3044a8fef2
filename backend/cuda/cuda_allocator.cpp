// The caching device allocator (see cuda_allocator.h).
#include "backend/cuda/cuda_allocator.h"

#include <bit>
#include <string>

#include "common/log.h"
#include "freezeframe/errors.h"

namespace ff::cuda_backend {

DeviceAllocator::SizeClass DeviceAllocator::size_class(size_t bytes) {
  if (bytes <= 4096) {
    size_t n = bytes == 0 ? 1 : (bytes + 255) / 256;
    return {static_cast<unsigned>(n - 1), n * 256};
  }
  unsigned k = 63 - static_cast<unsigned>(std::countl_zero(bytes - 1));  // 2^k < bytes <= 2^(k+1)
  size_t base = size_t{1} << k, step = base >> 2;
  size_t m = (bytes - base + step - 1) / step;  // 1..4
  return {16 + (k - 12) * 4 + static_cast<unsigned>(m - 1), base + m * step};
}

DeviceAllocator::DeviceAllocator(std::shared_ptr<const CudaContext> ctx, std::function<void()> sync,
                                 uint64_t max_cached_bytes)
    : ctx_(std::move(ctx)), sync_(std::move(sync)), max_cached_(max_cached_bytes) {
  if (max_cached_ == 0)
    max_cached_ = ctx_->properties().total_memory / 4;
}

DeviceAllocator::~DeviceAllocator() {
  std::lock_guard lock(mutex_);
  try {
    sync_();
    ctx_->bind();
  } catch (const std::exception& e) {
    logging::cuda().debug("cuda backend: waiting for the stream before freeing memory: {}",
                          e.what());
  }
  free_cached_locked();
  for (auto& [p, block] : live_)
    ctx_->driver().log_failure(ctx_->api().cuMemFree(p), "cuMemFree");
  if (!live_.empty())
    logging::cuda().debug("cuda backend: freed {} buffers still allocated at shutdown",
                          live_.size());
  live_.clear();
}

void* DeviceAllocator::alloc(size_t bytes) {
  SizeClass sc = size_class(bytes);
  std::lock_guard lock(mutex_);
  CUdeviceptr p = 0;
  if (sc.index < free_.size() && !free_[sc.index].empty()) {
    p = free_[sc.index].front();
    free_[sc.index].pop_front();
    cached_ -= sc.bytes;
  } else {
    ctx_->bind();
    CUresult r = ctx_->api().cuMemAlloc(&p, sc.bytes);
    if (r == CUDA_ERROR_OUT_OF_MEMORY && cached_ > 0) {
      // Give the cache back and try once more.
      sync_();
      free_cached_locked();
      r = ctx_->api().cuMemAlloc(&p, sc.bytes);
    }
    if (r == CUDA_ERROR_OUT_OF_MEMORY)
      throw BackendError("cuda backend: out of device memory allocating " + std::to_string(bytes) +
                         " bytes (" + std::to_string(bytes_) + " bytes in live buffers)");
    ctx_->check(r, "cuMemAlloc");
  }
  live_[p] = Block{sc.index, bytes};
  bytes_ += bytes;
  peak_ = std::max(peak_, bytes_);
  return reinterpret_cast<void*>(p);
}

void DeviceAllocator::release(void* ptr) noexcept {
  if (!ptr)
    return;
  auto p = reinterpret_cast<CUdeviceptr>(ptr);
  std::lock_guard lock(mutex_);
  auto it = live_.find(p);
  if (it == live_.end()) {
    logging::cuda().error("cuda backend: release of {} which alloc() did not return", ptr);
    return;
  }
  Block b = it->second;
  live_.erase(it);
  bytes_ -= b.requested;
  if (free_.size() <= b.cls)
    free_.resize(b.cls + 1);
  free_[b.cls].push_back(p);
  cached_ += size_class(b.requested).bytes;
  if (cached_ > max_cached_) {
    try {
      sync_();
    } catch (const std::exception& e) {
      logging::cuda().error("cuda backend: {}", e.what());
    }
    free_cached_locked();
  }
}

void DeviceAllocator::trim() noexcept {
  std::lock_guard lock(mutex_);
  try {
    sync_();
  } catch (const std::exception& e) {
    logging::cuda().error("cuda backend: {}", e.what());
  }
  free_cached_locked();
}

void DeviceAllocator::free_cached_locked() noexcept {
  if (cached_ == 0)
    return;
  try {
    ctx_->bind();
  } catch (...) {
  }
  for (auto& list : free_) {
    for (CUdeviceptr p : list)
      ctx_->driver().log_failure(ctx_->api().cuMemFree(p), "cuMemFree");
    list.clear();
  }
  cached_ = 0;
}

uint64_t DeviceAllocator::bytes_allocated() const {
  std::lock_guard lock(mutex_);
  return bytes_;
}

uint64_t DeviceAllocator::peak_bytes() const {
  std::lock_guard lock(mutex_);
  return peak_;
}

uint64_t DeviceAllocator::cached_bytes() const {
  std::lock_guard lock(mutex_);
  return cached_;
}

void DeviceAllocator::reset_peak() {
  std::lock_guard lock(mutex_);
  peak_ = bytes_;
}

}  // namespace ff::cuda_backend
