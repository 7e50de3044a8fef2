// The CudaBackend class, shared by cuda_backend.cpp (the Backend operations) and
// cuda_graph_replay.cpp (command lists replayed as CUDA graphs). Internal to backend/cuda/.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "backend/cuda/cuda_allocator.h"
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_context.h"
#include "backend/cuda/cuda_graph_replay.h"

namespace ff::cuda_backend {

/// A kernel compiled from the neutral IR: its module and entry.
class CudaKernel final : public CompiledKernel {
 public:
  CudaKernel(std::shared_ptr<const KernelIR> ir, std::unique_ptr<Module> module)
      : CompiledKernel(std::move(ir)),
        module_(std::move(module)),
        fn_(module_->function("ff_kernel")),
        n_params_(this->ir().params.size()) {}

  CUfunction function() const { return fn_; }

  size_t n_params() const { return n_params_; }

  const CudaContext& context() const { return module_->context(); }

 private:
  std::unique_ptr<Module> module_;
  CUfunction fn_;
  size_t n_params_;
};

/// Sends launches to the stream.
class StreamSink final : public LaunchSink {
 public:
  StreamSink(const CudaContext& ctx, CUstream stream) : ctx_(ctx), stream_(stream) {}

  void kernel(CUfunction fn, unsigned grid, unsigned block,
              std::span<const uint64_t> params) override;

 private:
  const CudaContext& ctx_;
  CUstream stream_;
};

class CudaBackend final : public Backend {
 public:
  explicit CudaBackend(const CudaOptions& options);
  ~CudaBackend() override;

  std::string name() const override { return "cuda"; }

  void* alloc(ScalarType type, size_t count, SizeProv prov) override;
  void release(void* ptr) noexcept override;
  void copy(void* dst, const void* src, size_t bytes, CopyKind kind) override;
  void fill(void* ptr, size_t count, uint32_t elem_size, uint64_t value) override;
  KernelHandle compile(const KernelIR& ir) override;
  void flush_kernels() override;
  BackendStats stats() const override;

  uint64_t kernel_generation() const override { return generation_.load(); }

  void reset_peak() override { alloc_->reset_peak(); }

  void launch(const KernelHandle& kernel, size_t size, SizeProv prov,
              std::span<const KernelArg> args) override;
  void reduce(ReduceOp op, ScalarType type, const void* in, size_t count, void* out) override;
  void prefix_sum(ScalarType type, bool exclusive, const void* in, size_t count,
                  void* out) override;
  size_t compress(const void* mask, size_t count, void* out) override;
  void sync() override;

  void guard(const SizeGuard&, bool) override {}

  /// Command lists as CUDA graphs (cuda_graph_replay.cpp); op by op without graph support.
  size_t submit(const CommandList& list) override;
  bool prefers_command_lists() const override;

  // The operations as launches into a sink (the stream, or a graph): the same kernels and
  // parameter layouts both ways. Callers that use the scratch buffers (reduce, scan,
  // compress) hold scratch_mutex_ for the whole sequence.
  void issue_launch(LaunchSink& sink, const CudaKernel& k, size_t size,
                    std::span<const uint64_t> arg_bits);
  void issue_fill(LaunchSink& sink, void* ptr, size_t count, uint32_t elem_size, uint64_t value);
  void issue_copy(LaunchSink& sink, void* dst, const void* src, size_t bytes);
  void issue_reduce(LaunchSink& sink, ReduceOp op, ScalarType type, const void* in, size_t count,
                    void* out);
  void issue_prefix_sum(LaunchSink& sink, ScalarType type, bool exclusive, const void* in,
                        size_t count, void* out);
  /// Both compress kernels; the count lands in `total` (a device u64).
  void issue_compress(LaunchSink& sink, const void* mask, size_t count, void* out, void* total);

  /// Reads the u64 at device address `p` (waits for the stream).
  uint64_t read_u64(const void* p);

  const CudaContext& context() const { return *ctx_; }

  /// The kernel of a handle compiled by this backend's context; throws ff::BackendError.
  const CudaKernel& kernel_of(const KernelHandle& h) const;

 private:
  CUfunction builtin(const std::string& key, const std::function<std::string()>& make,
                     const char* entry);

  std::shared_ptr<const CudaContext> ctx_;
  PtxTarget target_;
  std::unique_ptr<Stream> stream_;
  std::unique_ptr<DeviceAllocator> alloc_;  // after stream_: freed first
  unsigned resident_blocks_ = 1;

  // Kernels compiled from IR, by hash, and built-in modules, by key.
  mutable std::mutex kernels_mutex_;
  std::unordered_map<Hash128, KernelHandle> kernels_;
  std::map<std::string, std::pair<std::unique_ptr<Module>, std::map<std::string, CUfunction>>>
      builtins_;

  // Scratch for reduce / scan / compress partials, the reduce ticket counter and the compress
  // total (device), plus the page-locked word the total is read back through.
  mutable std::mutex scratch_mutex_;
  void* partials_ = nullptr;
  void* counter_ = nullptr;
  void* total_ = nullptr;

  // Page-locked staging for host copies: two chunks used in turn, each with the event of its
  // last copy.
  std::mutex staging_mutex_;
  std::unique_ptr<PinnedBuffer> staging_[2];
  std::unique_ptr<Event> staged_[2];
  bool staged_used_[2] = {false, false};

  // Graphs (null when the driver lacks them or they are switched off), and the nodes of the
  // submission in progress; both under scratch_mutex_.
  std::unique_ptr<GraphCache> graphs_;
  std::atomic<bool> graphs_enabled_{false};
  GraphSink graph_sink_;

  std::atomic<uint64_t> generation_{0};
  std::atomic<uint64_t> compiles_{0}, cache_hits_{0}, launches_{0}, reductions_{0}, allocs_{0},
      copies_{0}, host_reads_{0};
};

}  // namespace ff::cuda_backend
