// Neutral kernel IR -> PTX text: one module holding one kernel entry. No CUDA is needed to
// generate it (the tests assemble it with ptxas where the toolkit is installed).
//
// Kernel ABI: `.entry <name>(.param .u64 ff_n, .param .u64 ff_p0, ..., .param .u64 ff_pN)`.
// Every IR parameter is one 64-bit word, as KernelArg::bits carries it (a buffer's device
// address or a scalar's bit pattern); `ff_n` is the launch size. The kernel covers the
// indices [0, ff_n) with a grid-stride loop, unrolled so each thread keeps several memory
// accesses in flight, so any grid size (>= 1 block) is correct.
#pragma once

#include <cstddef>
#include <string>

#include "backend/cuda/ptx_writer.h"
#include "backend/ir/kernel_ir.h"

namespace ff::cuda_backend {

/// Kernel parameters beyond this do not fit the 4 KiB launch parameter space of older drivers.
inline constexpr size_t kMaxKernelParams = 500;

struct PtxOptions {
  PtxTarget target;
  /// Elements per thread per iteration of the grid-stride loop (1 = no unrolling).
  unsigned unroll = 4;
};

/// PTX for `ir` (which must be valid) with one entry called `name`. Throws ff::BackendError for
/// a kernel with more than kMaxKernelParams parameters.
std::string emit_ptx_kernel(const KernelIR& ir, const std::string& name,
                            const PtxOptions& options = {});

}  // namespace ff::cuda_backend
