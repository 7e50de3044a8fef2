// Kernel work estimates and launch plans (launch_plan.h).
#include "backend/llvm/launch_plan.h"

#include <algorithm>
#include <limits>
#include <vector>

#include "backend/ir/ir_analysis.h"

namespace ff::llvm_backend {
namespace {

// Work units per element of one op at the vector width, {32-bit, 64-bit}: one unit is what a
// cheap 32-bit vector op costs per element (~0.005 ns on the CI machine). Measured with
// ff_bench_parallel's op_cost benchmarks (docs/llvm-backend-parallel.md), rounded.
struct Weight {
  uint64_t w32, w64;
};

constexpr Weight kCheap{1, 2};         // ALU ops, compares, selects, casts
constexpr Weight kMemory{2, 4};        // Load, Store: the traffic, once out of L1
constexpr Weight kFloatDiv{6, 22};     // vdivps / vdivpd
constexpr Weight kSqrt{12, 45};        // vsqrtps / vsqrtpd
constexpr Weight kTranscend{50, 125};  // libmvec exp, log, sin, cos
constexpr Weight kGather{55, 55};      // one load per lane, whatever the width
constexpr Weight kScatter{55, 55};     // not measured: scalarised like a gather
constexpr Weight kScatterAdd{80, 80};  // not measured: a scatter plus an add per lane (what
                                       // atomics add is LlvmTuning::atomic_accumulate_work's)
constexpr Weight kIntDiv{300, 600};    // scalarised: one idiv per lane plus the trap guard

}  // namespace

uint64_t instr_work(const IrInstr& in) {
  Weight w = kCheap;
  switch (op_facts(in.op).cost) {
    case CostClass::Uniform:
      return 0;  // uniform: hoisted out of the loop
    case CostClass::Cheap:
      break;
    case CostClass::Memory:
      w = kMemory;
      break;
    case CostClass::Gather:
      w = kGather;
      break;
    case CostClass::Scatter:
      w = kScatter;
      break;
    case CostClass::ScatterAdd:
      w = kScatterAdd;
      break;
    case CostClass::Sqrt:
      w = kSqrt;
      break;
    case CostClass::Divide:
      w = is_float(in.type) ? kFloatDiv : kIntDiv;
      break;
    case CostClass::Transcendental:
      w = kTranscend;
      break;
  }
  return size_of(in.type) == 8 ? w.w64 : w.w32;
}

uint64_t kernel_work_per_elem(const KernelIR& ir) {
  // A loop body runs an unknown number of times per element: its instructions count
  // kLoopWeight times per enclosing loop, up to kMaxLoopLevels levels.
  std::vector<uint16_t> loops = loop_depths(ir);
  uint64_t w = 0;
  for (size_t k = 0; k < ir.instrs.size(); ++k) {
    uint64_t times = 1;
    for (int l = 0; l < std::min<int>(loops[k], kMaxLoopLevels); ++l)
      times *= kLoopWeight;
    w += instr_work(ir.instrs[k]) * times;
  }
  return std::max<uint64_t>(w, 1);
}

LaunchPlan plan_launch(uint64_t work_per_elem, size_t size, unsigned n_threads,
                       const LlvmTuning& tuning) {
  const LaunchPlan alone{size_t{size != 0}, size, false};
  work_per_elem = std::max<uint64_t>(work_per_elem, 1);
  const uint64_t work = size > std::numeric_limits<uint64_t>::max() / work_per_elem
                            ? std::numeric_limits<uint64_t>::max()
                            : work_per_elem * size;
  if (n_threads <= 1 || size < 2 * kBlockAlign || work < tuning.parallel_min_work)
    return alone;
  // The smallest block that holds block_min_work, in whole kBlockAlign steps.
  uint64_t min_block = (tuning.block_min_work + work_per_elem - 1) / work_per_elem;
  min_block =
      std::max<uint64_t>((min_block + kBlockAlign - 1) / kBlockAlign * kBlockAlign, kBlockAlign);
  // One block per thread at least; more (up to kBlocksPerThread each, for balance) only as
  // far as each holds block_min_work. size >= 2 * kBlockAlign, so there are >= 2 blocks.
  size_t n_blocks =
      std::clamp<uint64_t>(size / min_block, n_threads, uint64_t{n_threads} * kBlocksPerThread);
  n_blocks = std::min(n_blocks, size / kBlockAlign);
  size_t block = ((size + n_blocks - 1) / n_blocks + kBlockAlign - 1) / kBlockAlign * kBlockAlign;
  return {(size + block - 1) / block, block, work >= tuning.wake_min_work};
}

}  // namespace ff::llvm_backend
