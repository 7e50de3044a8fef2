// The tracer entry points that the array templates call (not for direct use).
// Variables are numbered per thread; 0 means "no variable".
#pragma once

#include <cstdint>
#include <span>

#include "freezeframe/scalar_type.h"
#include "freezeframe/size.h"

namespace ff::detail {

using VarId = uint32_t;

/// Operations of the array API, in the tracer's vocabulary.
enum class Op : uint8_t {
  Neg,
  Not,
  Abs,
  Sqrt,
  Exp,
  Log,
  Sin,
  Cos,
  Floor,
  Ceil,
  Add,
  Sub,
  Mul,
  Div,
  Mod,
  Min,
  Max,
  And,
  Or,
  Xor,
  Shl,
  Shr,
  Eq,
  Ne,
  Lt,
  Le,
  Gt,
  Ge,
  Fma,
  Select,
};

enum class Reduction : uint8_t { Sum, Prod, Min, Max };

void inc_ref(VarId v) noexcept;
void dec_ref(VarId v) noexcept;

VarId var_empty(ScalarType t);
/// A literal `bits` (the value's bit pattern, widened to 64 bits) of `size` elements.
VarId var_literal(ScalarType t, uint64_t bits, const Size& size);
VarId var_from_host(ScalarType t, const void* data, size_t count);
VarId var_arange(ScalarType t, const Size& size);
VarId var_unary(Op op, VarId a);
VarId var_binary(Op op, VarId a, VarId b);
VarId var_ternary(Op op, VarId a, VarId b, VarId c);
VarId var_cast(ScalarType t, VarId a);
VarId var_bitcast(ScalarType t, VarId a);
VarId var_gather(ScalarType t, VarId source, VarId index, VarId mask);
/// Schedules a scatter into *target (which may be replaced by a copy: copy-on-write).
void var_scatter(VarId* target, VarId value, VarId index, VarId mask, bool add);
VarId var_reduce(Reduction op, VarId a);
VarId var_mean(VarId a);
VarId var_prefix_sum(VarId a, bool exclusive);
VarId var_compress(VarId mask);

void var_eval(std::span<const VarId> vars);
void var_make_opaque(std::span<const VarId> vars);
/// Evaluates `v` and copies its contents (size(v) elements) to `out`.
void var_read(VarId v, void* out);
uint64_t var_size(VarId v);
ScalarType var_type(VarId v);
Size var_width(VarId v);
/// width(v) == 0, recorded as a guard named "empty()" when the size has provenance.
bool var_empty_check(VarId v);

}  // namespace ff::detail
