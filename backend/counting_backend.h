// A decorator that counts calls per operation and forwards them ("count:llvm"); for tests.
// Everything it does not count is forwarded by ForwardingBackend.
#pragma once

#include <atomic>
#include <memory>

#include "backend/forwarding_backend.h"

namespace ff {

struct CallCounts {
  uint64_t alloc = 0, release = 0, copy = 0, fill = 0, compile = 0, launch = 0, reduce = 0,
           prefix_sum = 0, compress = 0, collective = 0, sync = 0, guard = 0;
};

class CountingBackend final : public ForwardingBackend {
 public:
  explicit CountingBackend(std::unique_ptr<Backend> inner)
      : ForwardingBackend("count:", std::move(inner)) {}

  CallCounts counts() const;
  void reset_counts();

  void* alloc(ScalarType type, size_t count, SizeProv prov) override;
  void release(void* ptr) noexcept override;
  void copy(void* dst, const void* src, size_t bytes, CopyKind kind) override;
  void fill(void* ptr, size_t count, uint32_t elem_size, uint64_t value) override;
  KernelHandle compile(const KernelIR& ir) override;
  void launch(const KernelHandle& kernel, size_t size, SizeProv prov,
              std::span<const KernelArg> args) override;
  void reduce(ReduceOp op, ScalarType type, const void* in, size_t count, void* out) override;
  void prefix_sum(ScalarType type, bool exclusive, const void* in, size_t count,
                  void* out) override;
  size_t compress(const void* mask, size_t count, void* out) override;
  void collective(const dist_impl::Collective& c) override;
  void sync() override;
  void guard(const SizeGuard& guard, bool outcome) override;

  /// Counts each command as the call it stands for, then hands the batch on whole: a CUDA
  /// stack under count: replays through graphs as it would without it.
  size_t submit(const CommandList& list) override;

 private:
  struct Atomic {
    std::atomic<uint64_t> alloc{0}, release{0}, copy{0}, fill{0}, compile{0}, launch{0}, reduce{0},
        prefix_sum{0}, compress{0}, collective{0}, sync{0}, guard{0};
  } n_;
};

}  // namespace ff
