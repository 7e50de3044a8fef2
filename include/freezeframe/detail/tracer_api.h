// The tracer entry points that the array templates call (not for direct use).
// A Handle names a variable: the table of the thread that made it (high 32 bits) and its
// index there; 0 means "no variable". Handles are valid on every thread.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "freezeframe/detail/collective_kind.h"
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
/// Runs a collective of ff::dist on `a` (evaluated first) and returns its result: `op` for
/// AllReduce, `peer` the root of a Broadcast or the dest of a SendRecv, `source` its source.
Handle var_collective(CollectiveKind kind, ReduceOp op, PeerSpec peer, PeerSpec source, Handle a);

void var_eval(std::span<const Handle> vars);
void var_make_opaque(std::span<const Handle> vars);
/// Evaluates `v` and copies its contents (size(v) elements) to `out`.
void var_read(Handle v, void* out);
uint64_t var_size(Handle v);
ScalarType var_type(Handle v);
Size var_width(Handle v);
/// Whether `index` is arange(n) + k, arange(n) - k (offset -k) or arange(n) (offset 0) for an
/// integer literal k, with n its own size: each lane reads at a fixed offset from itself.
bool var_lane_offset(Handle index, int64_t* offset);
/// width(v) == 0, recorded as a guard named "empty()" when the size has provenance.
bool var_empty_check(Handle v);

// Symbolic control flow (tracer/region.cpp; the API is control_flow.h). A region is traced
// once: opened, its parts traced by the caller, closed; var_region_abort undoes an open one
// (an exception in a traced function). Names are for messages only.
/// Opens a loop over the state arrays `inits`; writes one placeholder per state array (a
/// reference each, the caller's) and returns the loop (a reference, the caller's).
Handle var_loop_begin(const char* name, uint64_t limit, std::span<const Handle> inits,
                      Handle* placeholders);
void var_loop_cond(Handle loop, Handle cond);
/// Closes a loop with the body's new state; writes one result per state array.
void var_loop_end(Handle loop, std::span<const Handle> yields, Handle* results);
/// Opens a two-way branch on a Bool mask (n_targets == 0) or an N-way call on a UInt32 index.
Handle var_branch_begin(const char* name, Handle selector, uint32_t n_targets);
/// Ends the next part (the true branch, then the false one; or target 0, 1, ...).
void var_branch_part(Handle region, std::span<const Handle> yields);
/// Closes a branch or call whose parts have all ended; writes one result per yield.
void var_branch_end(Handle region, Handle* results);
void var_region_abort(Handle region) noexcept;
/// Evaluated loops: scatters apply only to the lanes of every mask pushed (innermost last).
void var_push_scatter_mask(Handle mask);
void var_pop_scatter_mask() noexcept;
/// Whether this thread is recording (ff::record, a frozen function's first call).
bool var_recording();
/// Whether this thread is tracing the inside of a symbolic loop, branch or call.
bool var_in_region();
/// How many regions this thread has open (0 outside them).
size_t var_region_depth();
/// A variable of `t` and size 1 holding the number of elements of `a`, with provenance: a
/// recording replays it as the replay's size (mean's divisor).
Handle var_width_value(ScalarType t, Handle a);
/// A variable of `t` and size 1 holding `s` (converted to `t`), with its provenance: a recording
/// replays it as the expression evaluated at replay (a kernel argument, not a constant).
Handle var_size_value(ScalarType t, const Size& s);
/// ff::dist's rank (`count` false) or rank count as a Size leaf: "this rank" inside a
/// recording, which every replay evaluates on its own process.
Size dist_size_leaf(bool count, uint64_t value);
/// FF_DEBUG: the warning that `lanes` lanes of loop `label` were still active when it stopped
/// at its iteration limit.
void warn_iteration_limit(const std::string& label, uint64_t lanes, uint64_t limit);

}  // namespace ff::detail
