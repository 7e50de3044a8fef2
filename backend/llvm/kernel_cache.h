// Compiled kernels by IR hash: the JIT (warmed up in the background or created on first use),
// the cache, and tiered compilation (quick code first, optimised code for hot kernels,
// compiled on a background thread and swapped in atomically).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <thread>
#include <unordered_map>

#include "backend/backend.h"
#include "backend/llvm/accumulate_launch.h"
#include "backend/llvm/disk_cache.h"
#include "backend/llvm/llvm_jit.h"
#include "backend/llvm/llvm_tuning.h"

namespace ff::llvm_backend {

/// A kernel handle of the llvm backend. Holds the code of every tier it was compiled at, so a
/// launch that loaded the older entry point can finish while the newer one is installed.
class LlvmKernel final : public CompiledKernel {
 public:
  LlvmKernel(std::shared_ptr<const KernelIR> ir, std::unique_ptr<JitCode> code, Tier tier);

  KernelFn entry() const { return entry_.load(std::memory_order_acquire); }

  size_t n_params() const { return n_params_; }

  Tier tier() const { return tier_.load(std::memory_order_acquire); }

  /// Estimated work per element (kernel_work_per_elem of its IR), for launch plans.
  uint64_t work_per_elem() const { return work_per_elem_; }

  /// Its accumulations (accumulate_launch.h); when it has any, its code reads the mode word
  /// args[n_params()].
  const AccumulateInfo& accumulations() const { return accumulate_; }

  /// Adds launch work; true exactly once, when the kernel should be re-compiled optimised.
  /// Approximate under concurrent launches (relaxed load + store), which is all it needs.
  bool add_work(uint64_t work, uint64_t threshold) const {
    if (tier_up_requested_.load(std::memory_order_relaxed))
      return false;
    uint64_t total = work_.load(std::memory_order_relaxed) + work;
    work_.store(total, std::memory_order_relaxed);
    return total >= threshold && !tier_up_requested_.exchange(true, std::memory_order_relaxed);
  }

  /// Installs optimised code (once, from the tier-up thread).
  void install_optimized(std::unique_ptr<JitCode> code) const;

 private:
  size_t n_params_;
  uint64_t work_per_elem_;
  AccumulateInfo accumulate_;
  std::unique_ptr<JitCode> first_;              // code compiled by compile()
  mutable std::unique_ptr<JitCode> optimized_;  // written once by the tier-up thread
  mutable std::atomic<KernelFn> entry_;
  mutable std::atomic<Tier> tier_;
  mutable std::atomic<uint64_t> work_{0};
  mutable std::atomic<bool> tier_up_requested_;
};

/// Thread-safe kernel cache of one backend.
class KernelCache {
 public:
  /// `background` allows the warm-up and tier-up threads (false: optimised code only).
  /// `disk_dir`: the on-disk cache behind this one (empty: none), capped at `disk_max_bytes`.
  KernelCache(const LlvmTuning& tuning, bool background, const std::string& disk_dir = {},
              uint64_t disk_max_bytes = 0);
  /// Stops the background threads (waiting for a compile in progress).
  ~KernelCache();
  KernelCache(const KernelCache&) = delete;
  KernelCache& operator=(const KernelCache&) = delete;

  /// The cached kernel for ir.hash, or a new one. Validates new IR (throws ff::Error) and
  /// checks that ir.hash matches its contents (throws ff::BackendError).
  KernelHandle compile(const KernelIR& ir);
  /// Drops the cache (handles held elsewhere stay valid) and bumps the generation.
  void flush();
  /// Waits for the warm-up and a tier-up compile in progress, then refuses further tier-ups.
  void stop_background_work() noexcept;

  /// Counts a launch of `size` elements; may queue the kernel for optimisation. A kernel that
  /// costs more per element than kTierUpWorkPerElem counts its elements that many times over,
  /// so a long (fused) kernel is optimised after as much time spent in it, not as many
  /// elements, as a short one.
  void note_launch(const KernelHandle& handle, const LlvmKernel& kernel, uint64_t size) {
    uint64_t elems = size < kMinLaunchWork ? kMinLaunchWork : size;
    uint64_t scale = kernel.work_per_elem() / kTierUpWorkPerElem;
    if (tiered_ && kernel.add_work(elems * (scale ? scale : 1), tier_up_work_))
      request_tier_up(handle);
  }

  uint64_t compiles() const { return compiles_.load(std::memory_order_relaxed); }

  uint64_t cache_hits() const { return cache_hits_.load(std::memory_order_relaxed); }

  uint64_t disk_hits() const { return disk_hits_.load(std::memory_order_relaxed); }

  uint64_t generation() const { return generation_.load(std::memory_order_relaxed); }

 private:
  LlvmJit& jit_locked();  // needs compile_mutex_
  /// Needs compile_mutex_: waits for the warm-up thread, if any, and adopts its JIT.
  void join_warm_up_locked();
  LlvmJit& jit();
  /// Machine code for `ir` at `tier`: compiled, and stored in the disk cache when it has one.
  std::unique_ptr<JitCode> compile_code(LlvmJit& jit, const KernelIR& ir, Tier tier);
  /// Code for `ir` at `tier` from the disk cache, linked; null when it has none.
  std::unique_ptr<JitCode> load_code(LlvmJit& jit, const KernelIR& ir, Tier tier);
  Hash128 disk_key(LlvmJit& jit, const KernelIR& ir, Tier tier);
  void request_tier_up(const KernelHandle& handle);
  void tier_up_main();

  LlvmTuning tuning_;
  bool tiered_;
  uint64_t tier_up_work_;

  mutable std::shared_mutex cache_mutex_;
  std::unordered_map<Hash128, KernelHandle> cache_;
  std::atomic<uint64_t> compiles_{0}, cache_hits_{0}, disk_hits_{0}, generation_{0};
  DiskCache disk_;
  std::string fingerprint_;  // LlvmJit::codegen_fingerprint(), once the JIT exists
  std::once_flag fingerprint_once_;

  std::mutex compile_mutex_;  // one first-tier compile at a time; guards jit_ and warm_up_
  std::unique_ptr<LlvmJit> jit_;
  std::thread warm_up_;
  std::unique_ptr<LlvmJit> warm_jit_;         // the warm-up thread's result, taken after joining it
  std::atomic<bool> compile_waiting_{false};  // a compile waits for the warm-up thread

  std::mutex tier_mutex_;  // guards the tier-up queue and thread
  std::condition_variable tier_wake_;
  std::deque<std::weak_ptr<const LlvmKernel>> tier_queue_;
  std::thread tier_thread_;
  bool tier_stop_ = false;
};

}  // namespace ff::llvm_backend
