// The atomic read-modify-write of the scatter kinds in PTX (ScatterAdd ... ScatterOr,
// ScatterInc): one `red`/`atom` where PTX has the operation for the type, else a
// compare-and-swap loop on the element's bits. The caller (ptx_codegen.cpp) computes the
// element's address and the predicate of the lanes that write (mask, bound, range report).
#pragma once

#include <string>

#include "backend/cuda/ptx_writer.h"
#include "backend/ir/kernel_ir.h"
#include "freezeframe/reduce_op.h"

namespace ff::cuda_backend {

/// Emits, for the lanes where predicate `ok` holds, buf[addr] = combine(buf[addr], value)
/// atomically, with combine as the scatter-reduction of `op` (op_facts(opcode).reduce of
/// ScatterAdd ... ScatterOr) defines it for type t (docs/kernel-ir.md). `addr` is a u64
/// register holding a global address, `value` a register of t's class.
void emit_scatter_update(PtxWriter& w, ReduceOp op, ScalarType t, const std::string& ok,
                         const std::string& addr, const std::string& value);

/// ScatterInc: atomically buf[addr] += 1 (a UInt32 element) for the lanes where `ok` holds.
/// Returns a b32 register holding the element's value before the increment, 0 in the other
/// lanes.
std::string emit_scatter_inc(PtxWriter& w, const std::string& ok, const std::string& addr);

}  // namespace ff::cuda_backend
