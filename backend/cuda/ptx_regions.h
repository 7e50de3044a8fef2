// The kernel IR's structured regions (loops, two-way branches, N-way calls; kernel_ir.h,
// "Regions") as PTX control flow. A PTX thread computes one element at a time, so a region is
// real branches around the code of its parts, as the LLVM backend's scalar code does: a lane
// that does not take a part jumps over it, so the side effects inside (stores, scatters of
// every kind) run only for the lanes that run the part. Divergent lanes of a warp are left to
// the hardware.
//
// Values cross a region's boundary only as registers written on every path: a loop's carried
// values live in fresh registers set from the initial values before the loop and from the
// Yields at the back edge (a Yield that reads a carried value already overwritten there, as in
// a swap, is copied to a temporary before any is written); a branch's or call's results in
// fresh registers that each part writes from its Yields (a call's out-of-range lanes write
// zeros). Every region and every copy of it gets its own labels (PtxWriter::label()).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "backend/cuda/ptx_writer.h"
#include "backend/ir/kernel_ir.h"

namespace ff::cuda_backend {

/// What region emission needs from the kernel's code generator for the element copy being
/// emitted: the registers of values, and ordinary instructions.
class PtxRegionHost {
 public:
  virtual ~PtxRegionHost() = default;
  /// The register holding value v (an instruction before the current one).
  virtual const std::string& value(uint32_t v) = 0;
  /// Makes `reg` the register of value v (a LoopVar or a Result).
  virtual void define(uint32_t v, const std::string& reg) = 0;
  /// Emits instruction k, which is no region marker, and defines its value.
  virtual void emit(uint32_t k) = 0;
};

/// Emits the region opened at instruction k of `ir` (a LoopBegin, IfBegin or CallBegin; `ir`
/// is valid), the regions nested in it included, and defines its Results; leaves k after the
/// last of them.
void emit_ptx_region(PtxWriter& w, const KernelIR& ir, size_t& k, PtxRegionHost& host);

}  // namespace ff::cuda_backend
