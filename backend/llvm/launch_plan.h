// How a launch is split over the thread pool, decided by estimated work rather than element
// count: a kernel's cost per element (a weight per IR instruction, computed once when it is
// compiled) times the elements launched. Pure functions, so tests can check the decision.
//
// Work is counted in units of about one cheap 32-bit vector op per element (an add, a compare;
// loads and stores count 2); on the 2-core CI machine (AMD EPYC) a unit is ~0.006 ns per
// element on one thread. The weights and the thresholds in LlvmTuning were measured with
// ff_bench_parallel; the figures are in docs/llvm-backend-parallel.md.
#pragma once

#include <cstddef>
#include <cstdint>

#include "backend/ir/kernel_ir.h"
#include "backend/llvm/llvm_tuning.h"

namespace ff::llvm_backend {

/// Blocks of a split launch are multiples of this many elements (the vector loop's unroll), so
/// only the last block has a scalar tail.
inline constexpr size_t kBlockAlign = 64;
/// A split launch has at most this many blocks per thread (for balance when a thread is late).
inline constexpr size_t kBlocksPerThread = 4;

/// How much more an instruction inside a loop counts, per enclosing loop: a loop's trip count
/// is unknown when the kernel is compiled, and a kernel worth a loop runs it a few times per
/// element at least. Nesting counts up to kMaxLoopLevels levels (512x), so a deep nest does
/// not make every launch look huge.
inline constexpr uint64_t kLoopWeight = 8;
inline constexpr int kMaxLoopLevels = 3;

/// Estimated work per element of `ir`, in work units (at least 1). 64-bit operations count
/// twice (half the vector lanes); instructions inside loops count kLoopWeight times per
/// enclosing loop (at most kMaxLoopLevels of them).
uint64_t kernel_work_per_elem(const KernelIR& ir);

/// The work units one instruction adds per element (0 for uniform leaves).
uint64_t instr_work(const IrInstr& instr);

/// How a launch runs: n_blocks blocks of `block` elements (the last one may be shorter).
/// n_blocks <= 1 runs on the calling thread (0 only for an empty launch).
struct LaunchPlan {
  size_t n_blocks = 0;
  size_t block = 0;
  bool wake = false;  // wake sleeping pool workers for it (ThreadPool::run's `wake`)
  friend bool operator==(const LaunchPlan&, const LaunchPlan&) = default;
};

/// The plan for `size` elements of a kernel with `work_per_elem` on a pool of `n_threads`
/// (the caller included): the calling thread alone when the work is below
/// tuning.parallel_min_work (or size < 2 * kBlockAlign), else one block per thread, or more
/// (at most kBlocksPerThread per thread) as far as each holds tuning.block_min_work; blocks
/// are multiples of kBlockAlign elements.
LaunchPlan plan_launch(uint64_t work_per_elem, size_t size, unsigned n_threads,
                       const LlvmTuning& tuning);

/// The kernel work per element of an llvm backend kernel (computed when it was compiled).
/// Throws ff::BackendError for a non-llvm kernel.
uint64_t kernel_work_per_elem(const KernelHandle& kernel);

/// The plan the llvm backend `backend` follows for a launch of `kernel` over `size` elements
/// (plan_launch with its thread count and tuning). Throws ff::BackendError for another backend
/// or a non-llvm kernel.
LaunchPlan launch_plan(const Backend& backend, const KernelHandle& kernel, size_t size);

}  // namespace ff::llvm_backend
