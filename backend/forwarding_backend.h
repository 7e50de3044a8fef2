// The base of every decorator backend ("count:", "record:"): it forwards each Backend
// operation to the backend it wraps, so a decorator overrides only what it changes, and a new
// Backend operation needs one forwarding method here, not one per decorator.
#pragma once

#include <memory>
#include <string>

#include "backend/backend.h"

namespace ff {

class ForwardingBackend : public Backend {
 public:
  /// Wraps `inner`; `prefix` names the decorator in the stack's spec ("count:").
  ForwardingBackend(std::string prefix, std::unique_ptr<Backend> inner)
      : prefix_(std::move(prefix)), inner_(std::move(inner)) {}

  Backend& inner() { return *inner_; }

  const Backend& inner() const { return *inner_; }

  // instance_id() is not forwarded: it names this object (replay plans are keyed by it).

  std::string name() const override { return prefix_ + inner_->name(); }

  void* alloc(ScalarType type, size_t count, SizeProv prov) override {
    return inner_->alloc(type, count, prov);
  }

  void release(void* ptr) noexcept override { inner_->release(ptr); }

  void copy(void* dst, const void* src, size_t bytes, CopyKind kind) override {
    inner_->copy(dst, src, bytes, kind);
  }

  void fill(void* ptr, size_t count, uint32_t elem_size, uint64_t value) override {
    inner_->fill(ptr, count, elem_size, value);
  }

  KernelHandle compile(const KernelIR& ir) override { return inner_->compile(ir); }

  void flush_kernels() override { inner_->flush_kernels(); }

  BackendStats stats() const override { return inner_->stats(); }

  uint64_t kernel_generation() const override { return inner_->kernel_generation(); }

  void reset_peak() override { inner_->reset_peak(); }

  void launch(const KernelHandle& kernel, size_t size, SizeProv prov,
              std::span<const KernelArg> args) override {
    inner_->launch(kernel, size, prov, args);
  }

  void reduce(ReduceOp op, ScalarType type, const void* in, size_t count, void* out) override {
    inner_->reduce(op, type, in, count, out);
  }

  void prefix_sum(ScalarType type, bool exclusive, const void* in, size_t count,
                  void* out) override {
    inner_->prefix_sum(type, exclusive, in, count, out);
  }

  size_t compress(const void* mask, size_t count, void* out) override {
    return inner_->compress(mask, count, out);
  }

  size_t collective_count(const dist_impl::Collective& c) override {
    return inner_->collective_count(c);
  }

  void collective(const dist_impl::Collective& c) override { inner_->collective(c); }

  void sync() override { inner_->sync(); }

  void stop_background_work() noexcept override { inner_->stop_background_work(); }

  std::string describe_buffer(const void* ptr) const override {
    return inner_->describe_buffer(ptr);
  }

  bool recording_scope_open() const override { return inner_->recording_scope_open(); }

  void guard(const SizeGuard& guard, bool outcome) override { inner_->guard(guard, outcome); }

  /// The batch goes to the inner backend whole (a CUDA stack under a decorator still replays
  /// through graphs); a decorator that must see each operation runs Backend::submit instead.
  size_t submit(const CommandList& list) override { return inner_->submit(list); }

  bool prefers_command_lists() const override { return inner_->prefers_command_lists(); }

 private:
  std::string prefix_;
  std::unique_ptr<Backend> inner_;
};

}  // namespace ff
