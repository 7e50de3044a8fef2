// The tracer entry points that the array templates call (not for direct use).
// A Handle names a variable: the table of the thread that made it (high 32 bits) and its
// index there; 0 means "no variable". Handles are valid on every thread.
#pragma once

#include <cstdint>
#include <span>

#include "freezeframe/reduce_op.h"
#include "freezeframe/scalar_type.h"
#include "freezeframe/size.h"

namespace ff::detail {

using Handle = uint64_t;

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
  Tan,
  Asin,
  Acos,
  Atan,
  Sinh,
  Cosh,
  Tanh,
  Asinh,
  Acosh,
  Atanh,
  Exp2,
  Log2,
  Erf,
  Cbrt,
  Round,
  Trunc,
  Popcnt,
  Clz,
  Ctz,
  Atan2,
  Pow,
  Copysign,
};

enum class Reduction : uint8_t { Sum, Prod, Min, Max };

void inc_ref(Handle v) noexcept;
void dec_ref(Handle v) noexcept;

Handle var_empty(ScalarType t);
/// A literal `bits` (the value's bit pattern, widened to 64 bits) of `size` elements.
Handle var_literal(ScalarType t, uint64_t bits, const Size& size);
Handle var_from_host(ScalarType t, const void* data, size_t count);
Handle var_arange(ScalarType t, const Size& size);
Handle var_unary(Op op, Handle a);
Handle var_binary(Op op, Handle a, Handle b);
Handle var_ternary(Op op, Handle a, Handle b, Handle c);
Handle var_cast(ScalarType t, Handle a);
Handle var_bitcast(ScalarType t, Handle a);
Handle var_gather(ScalarType t, Handle source, Handle index, Handle mask);
/// Schedules a scatter into *target (which may be replaced by a copy: copy-on-write): a plain
/// write, or with `reduce` target[index] = target[index] op value.
void var_scatter(Handle* target, Handle value, Handle index, Handle mask, bool reduce, ReduceOp op);
/// Schedules counter[index] += 1 per active lane (copy-on-write as var_scatter); returns the
/// variable of the old values.
Handle var_scatter_inc(Handle* counter, Handle index, Handle mask);
Handle var_reduce(Reduction op, Handle a);
Handle var_mean(Handle a);
Handle var_prefix_sum(Handle a, bool exclusive);
Handle var_compress(Handle mask);

void var_eval(std::span<const Handle> vars);
void var_make_opaque(std::span<const Handle> vars);
/// Evaluates `v` and copies its contents (size(v) elements) to `out`.
void var_read(Handle v, void* out);
uint64_t var_size(Handle v);
ScalarType var_type(Handle v);
Size var_width(Handle v);
/// width(v) == 0, recorded as a guard named "empty()" when the size has provenance.
bool var_empty_check(Handle v);

}  // namespace ff::detail
