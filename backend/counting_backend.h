// A decorator that counts calls per operation and forwards them ("count:llvm"); for tests.
#pragma once

#include <atomic>
#include <memory>

#include "backend/backend.h"

namespace ff {

struct CallCounts {
  uint64_t alloc = 0, release = 0, copy = 0, fill = 0, compile = 0, launch = 0, reduce = 0,
           prefix_sum = 0, compress = 0, sync = 0, guard = 0;
};

class CountingBackend final : public Backend {
 public:
  explicit CountingBackend(std::unique_ptr<Backend> inner) : inner_(std::move(inner)) {}

  Backend& inner() { return *inner_; }

  CallCounts counts() const;
  void reset_counts();

  std::string name() const override { return "count:" + inner_->name(); }

  void* alloc(ScalarType type, size_t count, SizeProv prov) override;
  void release(void* ptr) noexcept override;
  void copy(void* dst, const void* src, size_t bytes, CopyKind kind) override;
  void fill(void* ptr, size_t count, uint32_t elem_size, uint64_t value) override;
  KernelHandle compile(const KernelIR& ir) override;

  void flush_kernels() override { inner_->flush_kernels(); }

  BackendStats stats() const override { return inner_->stats(); }

  uint64_t kernel_generation() const override { return inner_->kernel_generation(); }

  bool recording_scope_open() const override { return inner_->recording_scope_open(); }

  void reset_peak() override { inner_->reset_peak(); }

  void launch(const KernelHandle& kernel, size_t size, SizeProv prov,
              std::span<const KernelArg> args) override;
  void reduce(ReduceOp op, ScalarType type, const void* in, size_t count, void* out) override;
  void prefix_sum(ScalarType type, bool exclusive, const void* in, size_t count,
                  void* out) override;
  size_t compress(const void* mask, size_t count, void* out) override;
  void sync() override;

  void stop_background_work() noexcept override { inner_->stop_background_work(); }

  std::string describe_buffer(const void* ptr) const override {
    return inner_->describe_buffer(ptr);
  }

  void guard(const SizeGuard& guard, bool outcome) override;

  /// Counts each command as the call it stands for, then hands the batch on whole: a CUDA
  /// stack under count: replays through graphs as it would without it.
  size_t submit(const CommandList& list) override;

  bool prefers_command_lists() const override { return inner_->prefers_command_lists(); }

 private:
  std::unique_ptr<Backend> inner_;

  struct Atomic {
    std::atomic<uint64_t> alloc{0}, release{0}, copy{0}, fill{0}, compile{0}, launch{0}, reduce{0},
        prefix_sum{0}, compress{0}, sync{0}, guard{0};
  } n_;
};

}  // namespace ff
