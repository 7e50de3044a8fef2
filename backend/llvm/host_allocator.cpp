// Caching allocator. Each block carries a 64-byte header in front of the user pointer with its
// size class and requested size, so release() needs no lookup table.
//
// Under AddressSanitizer the allocator keeps ASan's view exact: of a live block only the
// requested bytes are addressable; the header and the slack up to the size class stay
// poisoned (an overrun of the request is reported even where malloc would not), and a cached
// block is poisoned whole (a use after release is reported). The header is read and written
// only by functions ASan does not instrument.
#include "backend/llvm/host_allocator.h"

#include <sys/mman.h>
#include <unistd.h>

#include <bit>
#include <cstdlib>
#include <string>

#include "common/log.h"
#include "freezeframe/errors.h"

#if defined(__SANITIZE_ADDRESS__)
#define FF_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FF_ASAN 1
#endif
#endif

#if defined(FF_ASAN)
#include <sanitizer/asan_interface.h>
#define FF_POISON(p, n) ASAN_POISON_MEMORY_REGION(p, n)
#define FF_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#define FF_NO_SANITIZE_ADDRESS __attribute__((no_sanitize_address))
#else
#define FF_POISON(p, n) ((void)(p), (void)(n))
#define FF_UNPOISON(p, n) ((void)(p), (void)(n))
#define FF_NO_SANITIZE_ADDRESS
#endif

namespace ff::llvm_backend {
namespace {

constexpr size_t kAlign = 64;
constexpr uint64_t kLiveMagic = 0xFF0A110C'11FE0000ull;
constexpr uint64_t kFreeMagic = 0xFF0A110C'CAC4ED00ull;

struct alignas(kAlign) Header {
  uint64_t magic;
  uint64_t bytes;  // requested bytes
  uint32_t cls;    // size class index
};

static_assert(sizeof(Header) == kAlign);

Header* header_of(void* p) {
  return static_cast<Header*>(p) - 1;
}

// The header stays poisoned (under ASan) for the block's whole life: only these two touch it,
// field by field through volatile accesses (no memcpy that ASan would intercept).
FF_NO_SANITIZE_ADDRESS Header read_header(void* user) {
  const volatile Header* h = header_of(user);
  Header copy;
  copy.magic = h->magic;
  copy.bytes = h->bytes;
  copy.cls = h->cls;
  return copy;
}

FF_NO_SANITIZE_ADDRESS void write_header(void* user, uint64_t magic, uint64_t bytes, uint32_t cls) {
  volatile Header* h = header_of(user);
  h->magic = magic;
  h->bytes = bytes;
  h->cls = cls;
}

// Blocks from this size on are placed on huge-page boundaries and offered to the kernel as
// huge pages (MADV_HUGEPAGE: Debian's default THP mode is "madvise", so nothing else gets
// them). A kernel streaming through 64 MiB then needs 32 TLB entries instead of 16k.
constexpr size_t kHugePage = size_t{2} << 20;
constexpr size_t kHugeFrom = size_t{4} << 20;

void* allocate_raw(size_t bytes) {
  if (bytes < kHugeFrom)
    return std::aligned_alloc(kAlign, bytes);
  size_t rounded = (bytes + kHugePage - 1) / kHugePage * kHugePage;
  void* raw = std::aligned_alloc(kHugePage, rounded);
#if defined(MADV_HUGEPAGE)
  if (raw)
    (void)::madvise(raw, rounded, MADV_HUGEPAGE);  // advice: refused is fine
#endif
  return raw;
}

}  // namespace

HostAllocator::SizeClass HostAllocator::size_class(size_t bytes) {
  // Up to 1 KiB: multiples of 64 (classes 0..15). Above: four classes per power of two.
  if (bytes <= 1024) {
    size_t n = bytes == 0 ? 1 : (bytes + 63) / 64;
    return {static_cast<unsigned>(n - 1), n * 64};
  }
  unsigned k = 63 - static_cast<unsigned>(std::countl_zero(bytes - 1));  // 2^k < bytes <= 2^(k+1)
  size_t base = size_t{1} << k, step = base >> 2;
  size_t m = (bytes - base + step - 1) / step;  // 1..4
  return {16 + (k - 10) * 4 + static_cast<unsigned>(m - 1), base + m * step};
}

HostAllocator::HostAllocator(uint64_t max_cached_bytes) : max_cached_(max_cached_bytes) {
  if (max_cached_ == 0) {
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    max_cached_ = pages > 0 && page > 0 ? uint64_t(pages) * uint64_t(page) / 4 : uint64_t{1} << 32;
  }
}

HostAllocator::~HostAllocator() {
  trim();
}

void* HostAllocator::alloc(size_t bytes) {
  if (bytes > (size_t{1} << 60))
    throw BackendError("llvm backend: allocation of " + std::to_string(bytes) +
                       " bytes is too large");
  SizeClass sc = size_class(bytes);
  void* user = nullptr;
  {
    std::lock_guard lock(mutex_);
    auto& list = free_[sc.index];
    if (!list.empty()) {
      user = list.back();
      list.pop_back();
      cached_ -= sc.bytes;
    }
    bytes_ += bytes;
    peak_ = std::max(peak_, bytes_);
  }
  if (!user) {
    void* raw = allocate_raw(sizeof(Header) + sc.bytes);
    if (!raw) {
      trim();  // the cache may hold what we need, in other classes
      raw = allocate_raw(sizeof(Header) + sc.bytes);
    }
    if (!raw) {
      std::lock_guard lock(mutex_);
      bytes_ -= bytes;
      throw BackendError("llvm backend: out of memory allocating " + std::to_string(bytes) +
                         " bytes");
    }
    user = static_cast<Header*>(raw) + 1;
    FF_POISON(raw, sizeof(Header) + sc.bytes);  // a cached block arrives poisoned whole
  }
  write_header(user, kLiveMagic, bytes, sc.index);
  FF_UNPOISON(user, bytes);  // exactly the request: the slack up to sc.bytes stays poisoned
  return user;
}

void HostAllocator::release(void* ptr) noexcept {
  if (!ptr)
    return;
  const Header h = read_header(ptr);
  if (h.magic != kLiveMagic) {
    ff::logging::llvm().error("release({}): not a live block of this backend (double release?)",
                              ptr);
    return;
  }
  write_header(ptr, kFreeMagic, h.bytes, h.cls);
  size_t class_bytes = size_class(h.bytes).bytes;
  FF_POISON(ptr, class_bytes);  // a use after release trips ASan
  std::unique_lock lock(mutex_);
  bytes_ -= h.bytes;
  if (cached_ + class_bytes <= max_cached_) {
    try {
      free_[h.cls].push_back(ptr);
      cached_ += class_bytes;
      return;
    } catch (...) {  // the cache could not grow: free the block instead
    }
  }
  lock.unlock();
  std::free(header_of(ptr));
}

void HostAllocator::trim() noexcept {
  std::lock_guard lock(mutex_);
  trim_locked();
}

void HostAllocator::trim_locked() noexcept {
  for (auto& list : free_) {
    for (void* p : list)
      std::free(header_of(p));
    list.clear();
    list.shrink_to_fit();
  }
  cached_ = 0;
}

uint64_t HostAllocator::bytes_allocated() const {
  std::lock_guard lock(mutex_);
  return bytes_;
}

uint64_t HostAllocator::peak_bytes() const {
  std::lock_guard lock(mutex_);
  return peak_;
}

uint64_t HostAllocator::cached_bytes() const {
  std::lock_guard lock(mutex_);
  return cached_;
}

void HostAllocator::reset_peak() {
  std::lock_guard lock(mutex_);
  peak_ = bytes_;
}

}  // namespace ff::llvm_backend
