// Settings of the llvm backend that BackendOptions does not carry, for tests and benchmarks
// (pin a codegen tier, move thresholds). create_llvm_backend(options) uses the defaults.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "backend/backend.h"
#include "backend/backend_options.h"
#include "backend/llvm/accumulate_launch.h"
#include "backend/llvm/llvm_jit.h"

namespace ff::llvm_backend {

struct LlvmTuning {
  JitOptions jit;
  /// New kernels are compiled at Tier::Quick and re-compiled at Tier::Optimized on a
  /// background thread once hot; false compiles at Tier::Optimized right away. Ignored (always
  /// optimised, no background threads) when the backend has a single thread.
  bool tiered = true;
  /// Elements launched (each launch counts at least kMinLaunchWork) before a re-compile.
  uint64_t tier_up_work = uint64_t{1} << 22;
  /// Create the JIT and compile a throw-away kernel on a background thread when the backend is
  /// created, so the first real compile does not pay LLVM's one-time start-up (~10 ms).
  bool warm_up = true;
  /// Launches are split over the pool by estimated work: the kernel's work per element (a
  /// weight per IR instruction, about one unit per cheap vector op; launch_plan.h) times the
  /// elements launched. Launches with less work than this run on the calling thread. 0: split
  /// whenever there are two blocks of kBlockAlign elements; UINT64_MAX: never split. Measured
  /// crossover and the choice: docs/llvm-backend-parallel.md.
  uint64_t parallel_min_work = uint64_t{1} << 19;
  /// A split launch has one block per thread, and more (up to kBlocksPerThread per thread, for
  /// balance) only as far as each block holds at least this much work.
  uint64_t block_min_work = uint64_t{1} << 19;
  /// Sleeping pool workers are woken for a launch with at least this much work, or once split
  /// launches that ran without them add up to it within a millisecond (waking takes ~50 us;
  /// workers that still spin after the previous launch always join).
  uint64_t wake_min_work = uint64_t{1} << 22;
  /// What one lane's atomic add costs, in work units, when other threads add to the same
  /// target: ~18 ns per lane on the 2-core CI machine (a float atomic add is a compare-exchange
  /// loop, and the threads take the target's cache lines from each other), against ~0.5 ns for
  /// a plain add. A launch that cannot keep private copies (or whose copies would not pay for
  /// themselves: private_min_work) runs alone on one thread unless
  /// splitting it saves more than this (accumulate_launch.h); 0 always splits.
  uint64_t atomic_accumulate_work = 3000;
  /// A launch that can keep private copies of its targets splits into them only when the work
  /// the other threads take pays for the split's start (this) and for filling and merging the
  /// copies (private_work_per_byte per byte of each). Measured on the 2-core CI machine,
  /// 2^16-element histograms' crossovers: ~20k lanes into 16-1,024 bins, ~60k into 8,192 bins
  /// (docs/llvm-backend-parallel.md). 0 and 0: every launch that can keep copies keeps them.
  uint64_t private_min_work = uint64_t{1} << 20;
  uint64_t private_work_per_byte = 64;

  /// The three costs above, as choose_accumulate takes them.
  AccumulateCosts accumulate_costs() const {
    return {atomic_accumulate_work, private_min_work, private_work_per_byte};
  }
};

/// Each launch counts at least this much work towards tier_up_work.
inline constexpr uint64_t kMinLaunchWork = 256;
/// A kernel whose work per element (launch_plan.h units) is k times this counts each element
/// k times towards tier_up_work: a typical traced kernel (~10 ops) counts 1.
inline constexpr uint64_t kTierUpWorkPerElem = 32;

/// The "llvm" backend with explicit tuning. Throws ff::BackendError like create_llvm_backend.
std::unique_ptr<Backend> create_llvm_backend(const BackendOptions& options,
                                             const LlvmTuning& tuning);

/// The tier `kernel` currently runs at. Throws ff::BackendError for a non-llvm kernel.
Tier kernel_tier(const KernelHandle& kernel);

}  // namespace ff::llvm_backend
