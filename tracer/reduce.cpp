// Whole-array operations that the backend implements natively: reductions, scans, compress,
// and the collectives of ff::dist.
#include "dist/collective.h"
#include "dist/mpi_world.h"
#include "freezeframe/errors.h"
#include "tracer/variable.h"

namespace ff::detail {
namespace {

/// Evaluates `a` (running pending scatters first) and returns its buffer.
const std::shared_ptr<Buffer>& input_buffer(VarId a) {
  if (state()[a].dirty)
    flush_side_effects();
  materialize(a);
  return state()[a].buffer;
}

VarId reduce_local(Reduction op, VarId a) {
  ScalarType t = state()[a].type;
  ReduceOp rop = ReduceOp::Add;
  switch (op) {
    case Reduction::Sum:
      rop = ReduceOp::Add;
      break;
    case Reduction::Prod:
      rop = ReduceOp::Mul;
      break;
    case Reduction::Min:
      rop = ReduceOp::Min;
      break;
    case Reduction::Max:
      rop = ReduceOp::Max;
      break;
  }
  if (t == ScalarType::Bool && (rop == ReduceOp::Add || rop == ReduceOp::Mul))
    throw Error("sum/prod of a bool array: cast it to an integer type first");
  std::shared_ptr<Buffer> in = input_buffer(a);
  auto out = alloc_buffer(t, 1, nullptr);
  out->device->backend().reduce(rop, t, in->ptr, in->size, out->ptr);
  return var_from_buffer(std::move(out));
}

/// width(a) as a size-1 variable of type t. The count is a kernel argument with provenance:
/// any size reuses the same kernel.
/// A variable of `t` and size 1 holding the count `value`, which a recording replays as `prov`
/// (a kernel argument).
VarId count_value_local(ScalarType t, uint64_t value, SizeExprPtr prov) {
  VarRef count(new_var(VarKind::Scalar, ScalarType::UInt64, 1, nullptr));
  state()[count.get()].imm = value;
  state()[count.get()].value_prov = std::move(prov);
  return cast_local(t, count.get());
}

VarId width_value_local(ScalarType t, VarId a) {
  return count_value_local(t, state()[a].size, width_expr(a));
}

VarId mean_local(VarId a) {
  ScalarType t = state()[a].type;
  VarRef total(reduce_local(Reduction::Sum, a));
  VarRef denom(width_value_local(t, a));
  return binary_local(Op::Div, total.get(), denom.get());
}

VarId prefix_sum_local(VarId a, bool exclusive) {
  ScalarType t = state()[a].type;
  if (t == ScalarType::Bool)
    throw Error("prefix_sum of a bool array: cast it to an integer type first");
  std::shared_ptr<Buffer> in = input_buffer(a);
  auto out = alloc_buffer(t, in->size, width_expr(a).get());
  out->device->backend().prefix_sum(t, exclusive, in->ptr, in->size, out->ptr);
  return var_from_buffer(std::move(out));
}

VarId compress_local(VarId mask) {
  if (state()[mask].type != ScalarType::Bool)
    throw Error("compress: the mask must be a bool array");
  std::shared_ptr<Buffer> in = input_buffer(mask);
  auto out = alloc_buffer(ScalarType::UInt32, in->size, width_expr(mask).get());
  size_t count = out->device->backend().compress(in->ptr, in->size, out->ptr);
  out->size = count;  // the logical size is the count; the allocation keeps its capacity
  return var_from_buffer(std::move(out));
}

VarId collective_local(CollectiveKind kind, ReduceOp op, PeerSpec peer, PeerSpec source, VarId a) {
  ScalarType t = state()[a].type;
  if (kind == CollectiveKind::AllReduce) {
    if (t == ScalarType::Bool && (op == ReduceOp::Add || op == ReduceOp::Mul))
      throw Error(std::string("ff::dist::all_reduce: ") + to_string(op) +
                  " of a bool array: cast it to an integer type first");
    if (is_float(t) && (op == ReduceOp::And || op == ReduceOp::Or))
      throw Error(std::string("ff::dist::all_reduce: ") + to_string(op) + " of a " + to_string(t) +
                  " array: and/or are for integer and bool arrays");
    if (static_cast<uint8_t>(op) > static_cast<uint8_t>(ReduceOp::Or))
      throw Error("ff::dist::all_reduce: invalid ReduceOp");
  }
  for (PeerSpec p : {peer, source})
    if (p.mode != PeerMode::Absolute && (p.value > kMaxPeerOffset || p.value < -kMaxPeerOffset))
      throw Error(std::string("ff::dist::") + to_string(kind) + ": peer " + to_string(p) +
                  " is further than " + std::to_string(kMaxPeerOffset) + " ranks away");
  std::shared_ptr<Buffer> in = input_buffer(a);
  Backend& backend = in->device->backend();
  dist_impl::Collective c;
  c.kind = kind;
  c.type = t;
  c.op = op;
  c.rank = dist_impl::rank(to_string(kind));  // raises first where ff::dist is not running
  c.ranks = dist_impl::size(to_string(kind));
  c.root = peer.value;
  c.dest_spec = peer;
  c.source_spec = source;
  c.dest = resolve_peer(peer, c.rank, c.ranks);
  c.source = resolve_peer(source, c.rank, c.ranks);
  c.check = debug_checks();
  c.in = in->ptr;
  c.count = in->size;
  c.out_count = backend.collective_count(c);
  // An all_reduce keeps its input's size; the other kinds' sizes come from other ranks.
  auto out = alloc_buffer(t, c.out_count,
                          kind == CollectiveKind::AllReduce ? width_expr(a).get() : nullptr);
  c.out = out->ptr;
  backend.collective(c);
  return var_from_buffer(std::move(out));
}

}  // namespace

Handle var_collective(CollectiveKind kind, ReduceOp op, PeerSpec peer, PeerSpec source, Handle a) {
  Operands o{a};
  Window w;
  return state().handle(collective_local(kind, op, peer, source, o[0]));
}

Handle var_reduce(Reduction op, Handle a) {
  Operands o{a};
  Window w;
  return state().handle(reduce_local(op, o[0]));
}

Handle var_mean(Handle a) {
  Operands o{a};
  Window w;
  return state().handle(mean_local(o[0]));
}

Handle var_width_value(ScalarType t, Handle a) {
  Operands o{a};
  Window w;
  return state().handle(width_value_local(t, o[0]));
}

Handle var_size_value(ScalarType t, const Size& s) {
  Window w;
  return state().handle(count_value_local(t, raw_value(s), s.expr()));
}

Handle var_prefix_sum(Handle a, bool exclusive) {
  Operands o{a};
  Window w;
  return state().handle(prefix_sum_local(o[0], exclusive));
}

Handle var_compress(Handle mask) {
  Operands o{mask};
  Window w;
  return state().handle(compress_local(o[0]));
}

}  // namespace ff::detail
