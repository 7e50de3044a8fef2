// Launches of kernels that accumulate into buffers (ScatterAdd ... ScatterOr, ScatterInc): how
// the lanes combine without an atomic per lane wherever no other thread can touch the same
// element at the same time.
//
// x86 has no vector atomics and no atomic float add (a float atomicrmw is a compare-exchange
// loop), so an atomic per lane costs ~20 cycles alone and far more when threads share cache
// lines: 65,536 values into 1,024 bins took 12-40x a serial loop. A kernel with accumulating
// instructions therefore reads one more argument word, args[n_params] (AccumulateMode), and
// each launch chooses again from its own sizes and thread split (AccumulateStrategy); nothing
// of it is in the IR, its hash or a recording.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "backend/ir/kernel_ir.h"
#include "backend/llvm/llvm_jit.h"
#include "freezeframe/reduce_op.h"

namespace ff::llvm_backend {

class ThreadPool;

/// The launch-mode word args[n_params] of a kernel that accumulates: Exclusive combines with a
/// plain load, combine and store (lanes in order), Atomic with an atomic read-modify-write.
enum class AccumulateMode : uint64_t { Atomic = 0, Exclusive = 1 };
/// A bit of the mode word beside the mode: no parameter the kernel writes shares its buffer
/// with another parameter (writes_unaliased), so an exclusive lane may read its own element of
/// an unwritten input again after earlier lanes wrote (the unrolled lanes read their index
/// from memory instead of out of a vector register).
inline constexpr uint64_t kWritesUnaliased = 2;

/// A buffer parameter some instruction accumulates into.
struct AccumulateTarget {
  uint32_t param;
  ScalarType type;
  ReduceOp op;                   // how its accumulations combine (the first one's)
  std::vector<uint32_t> bounds;  // the Bound parameters of its accumulations (their lengths)
};

/// What launches of a kernel need to know about its accumulations (computed once per kernel).
struct AccumulateInfo {
  std::vector<AccumulateTarget> targets;  // empty: the kernel does not accumulate
  uint32_t n_accumulations = 0;           // accumulating instructions
  /// Every target is accessed only by accumulations of one ReduceOp, so its partial results
  /// may be kept apart and merged after the launch.
  bool privatizable = false;
  /// Some instruction increments (ScatterInc): its lanes must see one counter, and they run
  /// on one thread so that the values are handed out in lane order, as a serial loop does.
  bool increments = false;
  /// Every parameter some instruction writes, the targets included.
  std::vector<uint32_t> written;

  bool accumulates() const { return !targets.empty(); }
};

AccumulateInfo accumulate_info(const KernelIR& ir);

/// True when no parameter the kernel writes (info.written) is bound to the same buffer as
/// another parameter in `args`, two accumulation targets apart (their combines commute).
bool writes_unaliased(const AccumulateInfo& info, std::span<const uint64_t> args);

/// How one launch of an accumulating kernel runs.
enum class AccumulateStrategy : uint8_t {
  Alone,    // the whole launch on the calling thread: exclusive adds, in lane order
  Private,  // one part per thread; part 0 combines into the targets, the others into
            // private copies filled with the op's identity (0 for Add, -0 for float Add, 1 for Mul,
            // NaN for float Min/Max, ...), all exclusive; the copies are merged into the targets
            // afterwards
  Atomic,   // the launch's plan, atomic adds
};

/// A private copy (all targets of one part) may take at most this many bytes: beyond it the
/// copies leave the cache and zeroing and merging them costs more than the atomics they save.
inline constexpr uint64_t kPrivateMaxBytes = uint64_t{1} << 20;

/// What the split strategies cost beyond the kernel's own work, in launch_plan.h's work units
/// (the backend's values: LlvmTuning's fields of the same names).
struct AccumulateCosts {
  uint64_t atomic_accumulate_work;  // one lane's atomic combine
  uint64_t private_min_work;        // a privatised split's start: the job, a late worker
  uint64_t private_work_per_byte;   // filling a private copy and merging it, per byte
};

/// The strategy for a launch of `size` lanes whose plan has `n_blocks` blocks (<= 1: the
/// calling thread alone; a kernel that increments always runs Alone), on a pool of `n_threads`;
/// `args` are the launch's arguments (the targets' lengths are read from them, and a target that
/// shares its buffer with another parameter is never privatised). Private where the targets
/// allow copies and the work the other threads take, work_per_elem * size * (n_threads - 1) /
/// n_threads, pays for private_min_work plus private_work_per_byte for each byte of the
/// copies. Otherwise a split launch is Atomic only when its work per element, spread over the
/// threads with atomic_accumulate_work added per accumulation, is less than on one thread
/// without it; else it runs Alone.
AccumulateStrategy choose_accumulate(const AccumulateInfo& info, std::span<const uint64_t> args,
                                     size_t size, size_t n_blocks, unsigned n_threads,
                                     uint64_t work_per_elem, const AccumulateCosts& costs);

/// Runs a Private launch of `fn` with the launch's arguments `args` over `size` lanes in one
/// part per pool thread (each part gets its own copy of the arguments, its targets redirected
/// and the Exclusive mode word appended), then merges the private copies into the targets. `wake`
/// as ThreadPool::run's. The copies live in a scratch area of the calling thread, kept for its next
/// launch (at most (threads - 1) * kPrivateMaxBytes; outside the allocator's statistics, which
/// count the program's arrays).
void run_privatized(ThreadPool& pool, KernelFn fn, const AccumulateInfo& info,
                    std::span<const uint64_t> args, size_t size, bool wake);

}  // namespace ff::llvm_backend
