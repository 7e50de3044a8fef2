// The "llvm" Backend: host memory from a caching allocator, kernels from the kernel cache,
// launches split over a thread pool when their estimated work pays for it (launch_plan.h; the
// rest run on the caller), and native reduce / prefix_sum / compress. Launches are
// synchronous, so sync() has nothing to do.
#include "backend/llvm/llvm_backend.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <string>
#include <vector>

#include "backend/llvm/accumulate_launch.h"
#include "backend/llvm/host_algorithms.h"
#include "backend/llvm/host_allocator.h"
#include "backend/llvm/kernel_cache.h"
#include "backend/llvm/launch_plan.h"
#include "backend/llvm/llvm_tuning.h"
#include "backend/llvm/thread_pool.h"
#include "common/log.h"
#include "dist/mpi_world.h"
#include "freezeframe/errors.h"

namespace ff {
namespace llvm_backend {
namespace {

constexpr size_t kStackArgs = 64;

struct LaunchCtx {
  KernelFn fn;
  const uint64_t* args;
  size_t size, block;
};

void bump(std::atomic<uint64_t>& counter) {
  counter.fetch_add(1, std::memory_order_relaxed);
}

class LlvmBackend final : public Backend {
 public:
  LlvmBackend(const BackendOptions& options, const LlvmTuning& tuning)
      : pool_(options.n_threads),
        kernels_(tuning, pool_.n_threads() > 1,
                 options.kernel_cache_dir.empty() ? "" : options.kernel_cache_dir + "/llvm",
                 options.kernel_cache_max_bytes),
        tuning_(tuning) {
    ff::logging::llvm().info("llvm backend: {} threads", pool_.n_threads());
  }

  ~LlvmBackend() override {
    if (uint64_t live = alloc_.bytes_allocated())
      ff::logging::llvm().debug("llvm backend destroyed with {} bytes still allocated", live);
  }

  std::string name() const override { return "llvm"; }

  void* alloc(ScalarType type, size_t count, SizeProv) override {
    if (!is_valid(type))
      throw BackendError("llvm backend: alloc of an invalid element type");
    size_t elem = size_of(type);
    if (count > (size_t{1} << 60) / elem)
      throw BackendError("llvm backend: alloc of " + std::to_string(count) + " " + to_string(type) +
                         " elements is too large");
    bump(allocs_);
    return alloc_.alloc(count * elem);
  }

  void release(void* ptr) noexcept override { alloc_.release(ptr); }

  void copy(void* dst, const void* src, size_t bytes, CopyKind kind) override {
    if (bytes && (!dst || !src))
      throw BackendError("llvm backend: copy of " + std::to_string(bytes) +
                         " bytes with a null pointer");
    bump(copies_);
    if (kind == CopyKind::DeviceToHost)
      bump(host_reads_);
    host_copy(pool_, dst, src, bytes);
  }

  void fill(void* ptr, size_t count, uint32_t elem_size, uint64_t value) override {
    if (count && !ptr)
      throw BackendError("llvm backend: fill of a null pointer");
    host_fill(pool_, ptr, count, elem_size, value);
  }

  KernelHandle compile(const KernelIR& ir) override { return kernels_.compile(ir); }

  void flush_kernels() override { kernels_.flush(); }

  BackendStats stats() const override;

  uint64_t kernel_generation() const override { return kernels_.generation(); }

  void reset_peak() override { alloc_.reset_peak(); }

  void launch(const KernelHandle& kernel, size_t size, SizeProv prov,
              std::span<const KernelArg> args) override;

  LaunchPlan plan(const LlvmKernel& kernel, size_t size) const {
    return plan_launch(kernel.work_per_elem(), size, pool_.n_threads(), tuning_);
  }

  /// Whether a split launch of `work` units wakes sleeping workers. One large launch pays
  /// for a wake by itself (plan.wake); smaller split launches that found the workers asleep
  /// add up, and once they amount to wake_min_work within a millisecond (a replay loop of a
  /// fused kernel), the next one wakes them: they then spin between launches and join each.
  bool should_wake(const LaunchPlan& p, uint64_t work) {
    if (p.wake)
      return true;
    int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                      std::chrono::steady_clock::now().time_since_epoch())
                      .count();
    int64_t since = now - unwoken_since_ns_.load(std::memory_order_relaxed);
    if (since > 1'000'000) {
      unwoken_since_ns_.store(now, std::memory_order_relaxed);
      unwoken_work_.store(0, std::memory_order_relaxed);
    }
    if (unwoken_work_.fetch_add(work, std::memory_order_relaxed) + work < tuning_.wake_min_work)
      return false;
    unwoken_work_.store(0, std::memory_order_relaxed);
    return true;
  }

  void reduce(ReduceOp op, ScalarType type, const void* in, size_t count, void* out) override {
    if (!out || (count && !in))
      throw BackendError("llvm backend: reduce with a null pointer");
    bump(reductions_);
    host_reduce(pool_, op, type, in, count, out);
  }

  void prefix_sum(ScalarType type, bool exclusive, const void* in, size_t count,
                  void* out) override {
    if (count && (!in || !out))
      throw BackendError("llvm backend: prefix_sum with a null pointer");
    bump(reductions_);
    host_prefix_sum(pool_, type, exclusive, in, count, out);
  }

  size_t compress(const void* mask, size_t count, void* out) override {
    if (count && (!mask || !out))
      throw BackendError("llvm backend: compress with a null pointer");
    bump(reductions_);
    bump(host_reads_);  // the count comes back to the host
    return host_compress(pool_, static_cast<const uint8_t*>(mask), count,
                         static_cast<uint32_t*>(out));
  }

  /// Host memory: MPI reads and writes the buffers themselves (launches have finished).
  void collective(const dist_impl::Collective& c) override {
    if ((c.count && !c.in) || (c.out_count && !c.out))
      throw BackendError(std::string("llvm backend: ") + dist_impl::to_string(c.kind) +
                         " with a null pointer");
    bump(reductions_);
    dist_impl::run(c);
  }

  void sync() override {}

  void stop_background_work() noexcept override { kernels_.stop_background_work(); }

  void guard(const SizeGuard&, bool) override {}

 private:
  ThreadPool pool_;
  HostAllocator alloc_;
  KernelCache kernels_;  // after pool_: its threads stop before the pool's
  LlvmTuning tuning_;    // the launch-plan thresholds
  std::atomic<uint64_t> launches_{0}, reductions_{0}, allocs_{0}, copies_{0}, host_reads_{0};
  std::atomic<uint64_t> unwoken_work_{0};     // split work run without waking (should_wake)
  std::atomic<int64_t> unwoken_since_ns_{0};  // when unwoken_work_ started adding up
};

BackendStats LlvmBackend::stats() const {
  BackendStats s;
  auto get = [](const std::atomic<uint64_t>& c) { return c.load(std::memory_order_relaxed); };
  s.compiles = kernels_.compiles();
  s.cache_hits = kernels_.cache_hits();
  s.disk_cache_hits = kernels_.disk_hits();
  s.threads = pool_.n_threads();
  s.launches = get(launches_);
  s.reductions = get(reductions_);
  s.allocs = get(allocs_);
  s.bytes_allocated = alloc_.bytes_allocated();
  s.peak_bytes = alloc_.peak_bytes();
  s.copies = get(copies_);
  s.host_reads = get(host_reads_);
  s.generation = kernels_.generation();
  return s;
}

void LlvmBackend::launch(const KernelHandle& kernel, size_t size, SizeProv,
                         std::span<const KernelArg> args) {
  const auto* k = dynamic_cast<const LlvmKernel*>(kernel.get());
  if (!k)
    throw BackendError("llvm backend: launch of a null kernel or one compiled by another backend");
  if (args.size() != k->n_params())
    throw BackendError("llvm backend: kernel " + k->hash().to_hex() + " takes " +
                       std::to_string(k->n_params()) + " arguments, launch passed " +
                       std::to_string(args.size()));
  bump(launches_);
  if (size == 0)
    return;
  // The ABI wants the bare 64-bit words contiguous, then (read only by kernels that
  // accumulate) the accumulation mode word.
  uint64_t stack_bits[kStackArgs + 1];
  thread_local std::vector<uint64_t> heap_bits;
  uint64_t* bits = stack_bits;
  if (args.size() > kStackArgs) {
    heap_bits.resize(args.size() + 1);
    bits = heap_bits.data();
  }
  for (size_t i = 0; i < args.size(); ++i)
    bits[i] = args[i].bits;

  KernelFn fn = k->entry();
  LaunchPlan p = plan(*k, size);
  AccumulateStrategy how = AccumulateStrategy::Atomic;
  if (k->accumulations().accumulates()) {
    how = choose_accumulate(k->accumulations(), {bits, args.size()}, size, p.n_blocks,
                            pool_.n_threads(), k->work_per_elem(), tuning_.accumulate_costs());
    bits[args.size()] =
        static_cast<uint64_t>(how == AccumulateStrategy::Atomic ? AccumulateMode::Atomic
                                                                : AccumulateMode::Exclusive) |
        (writes_unaliased(k->accumulations(), {bits, args.size()}) ? kWritesUnaliased : 0);
  }
  if (p.n_blocks <= 1 || how == AccumulateStrategy::Alone) {
    fn(0, size, bits);
  } else if (how == AccumulateStrategy::Private) {
    run_privatized(pool_, fn, k->accumulations(), {bits, args.size()}, size,
                   should_wake(p, k->work_per_elem() * size));
  } else {
    LaunchCtx ctx{fn, bits, size, p.block};
    pool_.run(
        p.n_blocks,
        [](void* c, size_t b) {
          auto& x = *static_cast<LaunchCtx*>(c);
          uint64_t begin = b * x.block;
          x.fn(begin, std::min<uint64_t>(begin + x.block, x.size), x.args);
        },
        &ctx, should_wake(p, k->work_per_elem() * size));
  }
  kernels_.note_launch(kernel, *k, size);
}
}  // namespace

std::unique_ptr<Backend> create_llvm_backend(const BackendOptions& options,
                                             const LlvmTuning& tuning) {
  return std::make_unique<LlvmBackend>(options, tuning);
}

uint64_t kernel_work_per_elem(const KernelHandle& kernel) {
  const auto* k = dynamic_cast<const LlvmKernel*>(kernel.get());
  if (!k)
    throw BackendError("llvm backend: not a kernel of the llvm backend");
  return k->work_per_elem();
}

LaunchPlan launch_plan(const Backend& backend, const KernelHandle& kernel, size_t size) {
  const auto* be = dynamic_cast<const LlvmBackend*>(&backend);
  const auto* k = dynamic_cast<const LlvmKernel*>(kernel.get());
  if (!be || !k)
    throw BackendError("llvm backend: launch_plan of another backend or its kernel");
  return be->plan(*k, size);
}

Tier kernel_tier(const KernelHandle& kernel) {
  const auto* k = dynamic_cast<const LlvmKernel*>(kernel.get());
  if (!k)
    throw BackendError("llvm backend: not a kernel of the llvm backend");
  return k->tier();
}

}  // namespace llvm_backend

std::unique_ptr<Backend> create_llvm_backend(const BackendOptions& options) {
  return llvm_backend::create_llvm_backend(options, llvm_backend::LlvmTuning{});
}

}  // namespace ff
