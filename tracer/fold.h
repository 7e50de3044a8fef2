// Constant folding of operations whose operands are all literals.
#pragma once

#include <cstdint>

#include "backend/ir/kernel_ir.h"

namespace ff::detail {

/// Computes `op` on literal bit patterns exactly as kernels do (docs/kernel-ir.md).
/// `type` is the result type, `operand_type` the type of the operands (they differ for
/// comparisons, casts and bitcasts; for Select, the type of operands b and c). Returns false
/// for operations that are left to kernels (transcendental functions).
bool fold(IrOp op, ScalarType type, ScalarType operand_type, const uint64_t* operands,
          uint64_t& result);

}  // namespace ff::detail
