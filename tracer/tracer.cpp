// Building the variable graph: reference counts, literals and folding, size checks with
// guards, copy-on-write scatters. Evaluation lives in eval.cpp.
#include <algorithm>
#include <cstring>
#include <string>

#include "backend/ir/ir_analysis.h"
#include "common/log.h"
#include "freezeframe/errors.h"
#include "tracer/fold.h"
#include "tracer/variable.h"

namespace ff::detail {

// ---------------------------------------------------------------------------------------------
// Reference counting

VarId TracerState::alloc_var() {
  ++live;
  if (!free_list.empty()) {
    VarId v = free_list.back();
    free_list.pop_back();
    return v;
  }
  vars.emplace_back();
  return static_cast<VarId>(vars.size() - 1);
}

void TracerState::free_var(VarId v) {
  // Iterative, so dropping a long lazy chain cannot overflow the stack.
  std::vector<VarId>& work = scratch.free_work;
  size_t base = work.size();
  work.push_back(v);
  while (work.size() > base) {
    VarId v_free = work.back();
    work.pop_back();
    Variable& var = vars[v_free];
    for (VarId d : var.dep) {
      if (d && --vars[d].refs == 0)
        work.push_back(d);
    }
    if (var.kind == VarKind::Op && is_region_op(var.op)) {
      // A region holds its values and effects: released with its variable.
      std::vector<VarId> held;
      release_region(*this, static_cast<uint32_t>(var.imm), held);
      for (VarId d : held)
        if (d && --vars[d].refs == 0)
          work.push_back(d);
    }
    vars[v_free] = Variable{};
    free_list.push_back(v_free);
    --live;
  }
}

void inc_ref(Handle h) noexcept {
  if (!h)
    return;
  TracerState* s = t_state;
  if (s && table_of(h) == s->id) [[likely]] {
    Window w;
    ++(*s)[index_of(h)].refs;
    return;
  }
  try {
    ForeignAccess access(table_of(h));
    ++state()[index_of(h)].refs;
  } catch (const std::exception& e) {
    logging::tracer().error("inc_ref of an array from another thread failed: {}", e.what());
  }
}

void dec_ref(Handle h) noexcept {
  if (!h)
    return;
  TracerState* s = t_state;
  if (s && table_of(h) == s->id) [[likely]] {
    Window w;
    if (--(*s)[index_of(h)].refs == 0)
      s->free_var(index_of(h));
    return;
  }
  try {
    ForeignAccess access(table_of(h));
    dec_local(index_of(h));
  } catch (const std::exception& e) {
    logging::tracer().error("dec_ref of an array from another thread failed: {}", e.what());
  }
}

// ---------------------------------------------------------------------------------------------
// Helpers

namespace {

IrOp to_ir(Op op) {
  switch (op) {
    case Op::Neg:
      return IrOp::Neg;
    case Op::Not:
      return IrOp::Not;
    case Op::Abs:
      return IrOp::Abs;
    case Op::Sqrt:
      return IrOp::Sqrt;
    case Op::Exp:
      return IrOp::Exp;
    case Op::Log:
      return IrOp::Log;
    case Op::Sin:
      return IrOp::Sin;
    case Op::Cos:
      return IrOp::Cos;
    case Op::Floor:
      return IrOp::Floor;
    case Op::Ceil:
      return IrOp::Ceil;
    case Op::Add:
      return IrOp::Add;
    case Op::Sub:
      return IrOp::Sub;
    case Op::Mul:
      return IrOp::Mul;
    case Op::Div:
      return IrOp::Div;
    case Op::Mod:
      return IrOp::Mod;
    case Op::Min:
      return IrOp::Min;
    case Op::Max:
      return IrOp::Max;
    case Op::And:
      return IrOp::And;
    case Op::Or:
      return IrOp::Or;
    case Op::Xor:
      return IrOp::Xor;
    case Op::Shl:
      return IrOp::Shl;
    case Op::Shr:
      return IrOp::Shr;
    case Op::Eq:
      return IrOp::Eq;
    case Op::Ne:
      return IrOp::Ne;
    case Op::Lt:
      return IrOp::Lt;
    case Op::Le:
      return IrOp::Le;
    case Op::Gt:
      return IrOp::Gt;
    case Op::Ge:
      return IrOp::Ge;
    case Op::Fma:
      return IrOp::Fma;
    case Op::Select:
      return IrOp::Select;
    case Op::Tan:
      return IrOp::Tan;
    case Op::Asin:
      return IrOp::Asin;
    case Op::Acos:
      return IrOp::Acos;
    case Op::Atan:
      return IrOp::Atan;
    case Op::Sinh:
      return IrOp::Sinh;
    case Op::Cosh:
      return IrOp::Cosh;
    case Op::Tanh:
      return IrOp::Tanh;
    case Op::Asinh:
      return IrOp::Asinh;
    case Op::Acosh:
      return IrOp::Acosh;
    case Op::Atanh:
      return IrOp::Atanh;
    case Op::Exp2:
      return IrOp::Exp2;
    case Op::Log2:
      return IrOp::Log2;
    case Op::Erf:
      return IrOp::Erf;
    case Op::Cbrt:
      return IrOp::Cbrt;
    case Op::Round:
      return IrOp::Round;
    case Op::Trunc:
      return IrOp::Trunc;
    case Op::Popcnt:
      return IrOp::Popcnt;
    case Op::Clz:
      return IrOp::Clz;
    case Op::Ctz:
      return IrOp::Ctz;
    case Op::Atan2:
      return IrOp::Atan2;
    case Op::Pow:
      return IrOp::Pow;
    case Op::Copysign:
      return IrOp::Copysign;
  }
  return IrOp::Add;
}

}  // namespace

VarId new_var(VarKind kind, ScalarType type, uint64_t size, SizeExprPtr prov) {
  TracerState& s = state();
  VarId v = s.alloc_var();
  ++s.n_traced_ops;
  Variable& var = s[v];
  var.kind = kind;
  var.type = type;
  var.size = size;
  var.prov = std::move(prov);
  var.refs = 1;
  var.tag = s.current_tag;
  return v;
}

namespace {

VarId new_literal(ScalarType type, uint64_t bits, uint64_t size, SizeExprPtr prov) {
  VarId v = new_var(VarKind::Literal, type, size, std::move(prov));
  state()[v].imm = bits;
  return v;
}

}  // namespace

SizeDecision decide_size(const char* what, std::span<const VarId> ops) {
  TracerState& s = state();
  uint64_t size = 1;
  bool sized = false;  // some operand has a size other than 1
  for (VarId v : ops) {
    if (!v)
      continue;
    uint64_t n = s[v].size;
    if (n == 1)
      continue;
    if (!sized) {
      size = n;
      sized = true;
    } else if (n != size) {
      std::string sizes;
      for (VarId w : ops)
        if (w)
          sizes += (sizes.empty() ? "" : ", ") + std::to_string(s[w].size);
      throw Error(std::string(what) + ": operand sizes " + sizes +
                  " are incompatible (sizes must be equal, or 1 to broadcast)");
    }
  }
  // The result takes the size expression of an operand of the result's size, preferring one
  // with provenance: `x * 3.f` with a 1-element x still has width(x) elements, so a replay at
  // another width computes that many (the kernel reads x per lane, not as a broadcast).
  VarId leader = 0;
  for (VarId v : ops)
    if (v && s[v].size == size && (!leader || (!s[leader].prov && s[v].prov)))
      leader = v;
  const SizeExprNode* lead = leader ? s[leader].prov.get() : nullptr;
  // Every other operand's size was a decision: equal to the result's, or 1 and broadcast.
  // Both sides of a guard are real expressions (a constant is Const(size)); none is needed
  // when both are constants or the expressions are the same.
  for (VarId v : ops) {
    if (!v || v == leader)
      continue;
    const SizeExprNode* e = s[v].prov.get();
    if (!e && s[v].size == 1)
      continue;               // a constant size 1 broadcasts at any result size
    if (s[v].size != size) {  // size 1 broadcast over a larger result
      if (e)
        guard_sizes(Size(s[v].prov), Size(1), "broadcast of a size-1 operand in", what);
    } else if ((e || lead) && !same_expr(e, lead)) {
      guard_sizes(e ? Size(s[v].prov) : Size(size), lead ? Size(s[leader].prov) : Size(size),
                  "equal operand sizes in", what);
    }
  }
  return {size, lead ? s[leader].prov : nullptr};
}

namespace {

SizeDecision decide_size(const char* what, std::initializer_list<VarId> ops) {
  return ff::detail::decide_size(what, std::span<const VarId>(ops.begin(), ops.size()));
}

void check_type(const char* what, ScalarType got, ScalarType expected) {
  if (got != expected)
    throw Error(std::string(what) + ": operand type " + to_string(got) + " differs from " +
                to_string(expected) + " (cast explicitly)");
}

/// Pending scatters write evaluated buffers in place: anything that reads one runs them first.
void settle(std::initializer_list<VarId> ops) {
  TracerState& s = state();
  for (VarId v : ops) {
    if (v && s[v].dirty) {
      flush_side_effects();
      return;
    }
    // The old values of a one-lane increment, pending: evaluated first, since in a wider
    // kernel the broadcast would run the increment once per lane.
    if (v && s[v].kind == VarKind::Op && op_facts(s[v].op).side_effect &&
        op_facts(s[v].op).region == RegionRole::None && s[v].size == 1) {
      flush_side_effects();
      return;
    }
  }
}

VarId make_op(IrOp op, ScalarType type, const SizeDecision& sd, std::initializer_list<VarId> deps) {
  TracerState& s = state();
  // Fold when every operand is a literal.
  bool all_literal = true;
  uint64_t bits[3] = {0, 0, 0};
  int k = 0;
  for (VarId d : deps) {
    if (s[d].kind != VarKind::Literal) {
      all_literal = false;
      break;
    }
    bits[k++] = s[d].imm;
  }
  if (all_literal && k > 0) {
    ScalarType operand_type = s[*(op == IrOp::Select ? deps.begin() + 1 : deps.begin())].type;
    uint64_t out;
    if (fold(op, type, operand_type, bits, out))
      return new_literal(type, out, sd.size, sd.prov);
  }
  VarId v = new_var(VarKind::Op, type, sd.size, sd.prov);
  Variable& var = s[v];
  var.op = op;
  int i = 0;
  for (VarId d : deps) {
    var.dep[i++] = d;
    ++s[d].refs;
  }
  return v;
}

}  // namespace

SizeExprPtr width_expr(VarId v) {
  return state()[v].prov;
}

// ---------------------------------------------------------------------------------------------
// The operations on local variables (inside a window)

namespace {

VarId new_literal_local(ScalarType t, uint64_t bits, const Size& size) {
  return new_literal(t, bits, raw_value(size), size.expr());
}

VarId from_host_local(ScalarType t, const void* data, size_t count) {
  auto buffer = alloc_buffer(t, count, nullptr);
  // An empty upload still defines the buffer inside a recording (size-0 ops replay too).
  if (count || recording_open())
    buffer->device->backend().copy(buffer->ptr, data, count * size_of(t), CopyKind::HostToDevice);
  return var_from_buffer(std::move(buffer));
}

VarId arange_local(ScalarType t, const Size& size) {
  if (t == ScalarType::Bool)
    throw Error("arange: bool arrays have no index sequence");
  VarId v = new_var(VarKind::Op, t, raw_value(size), size.expr());
  state()[v].op = IrOp::Index;
  return v;
}

VarId unary_local(Op op, VarId a) {
  settle({a});
  TracerState& s = state();
  ScalarType t = s[a].type;
  if (op == Op::Abs && (is_unsigned_int(t) || t == ScalarType::Bool)) {
    inc_local(a);  // |x| of an unsigned value is x
    return a;
  }
  return make_op(to_ir(op), t, decide_size(to_string(to_ir(op)), {a}), {a});
}

VarId ternary_local(Op op, VarId a, VarId b, VarId c) {
  settle({a, b, c});
  TracerState& s = state();
  if (op == Op::Select) {
    check_type("select mask", s[a].type, ScalarType::Bool);
    check_type("select", s[c].type, s[b].type);
    return make_op(IrOp::Select, s[b].type, decide_size("select", {a, b, c}), {a, b, c});
  }
  check_type("fma", s[b].type, s[a].type);
  check_type("fma", s[c].type, s[a].type);
  return make_op(IrOp::Fma, s[a].type, decide_size("fma", {a, b, c}), {a, b, c});
}

VarId bitcast_local(ScalarType t, VarId a) {
  settle({a});
  ScalarType from = state()[a].type;
  if (size_of(from) != size_of(t) || from == ScalarType::Bool || t == ScalarType::Bool)
    throw Error(std::string("bitcast from ") + to_string(from) + " to " + to_string(t) +
                ": the element types differ in width");
  if (from == t) {
    inc_local(a);
    return a;
  }
  return make_op(IrOp::Bitcast, t, decide_size("bitcast", {a}), {a});
}

VarId gather_local(ScalarType t, VarId source, VarId index, VarId mask) {
  settle({source, index, mask});
  TracerState& s = state();
  check_type("gather source", s[source].type, t);
  if (!is_integer(s[index].type))
    throw Error("gather: the index must be an integer array");
  check_type("gather mask", s[mask].type, ScalarType::Bool);
  materialize(source);  // kernels read a gather's source from memory
  SizeDecision sd = decide_size("gather", {index, mask});
  VarId v = new_var(VarKind::Op, t, sd.size, sd.prov);
  Variable& var = s[v];
  var.op = IrOp::Gather;
  var.dep[0] = source;
  var.dep[1] = index;
  var.dep[2] = mask;
  s[source].refs++;
  s[index].refs++;
  s[mask].refs++;
  return v;
}

IrOp scatter_op(bool reduce, ReduceOp op) {
  if (!reduce)
    return IrOp::Scatter;
  switch (op) {
    case ReduceOp::Add:
      return IrOp::ScatterAdd;
    case ReduceOp::Mul:
      return IrOp::ScatterMul;
    case ReduceOp::Min:
      return IrOp::ScatterMin;
    case ReduceOp::Max:
      return IrOp::ScatterMax;
    case ReduceOp::And:
      return IrOp::ScatterAnd;
    case ReduceOp::Or:
      return IrOp::ScatterOr;
  }
  throw Error("scatter_reduce: invalid ReduceOp " + std::to_string(static_cast<int>(op)));
}

/// References to `target` that pending effects hold (directly, or through the increments'
/// variables) in `effects` and the parts of the regions among them.
uint32_t effect_refs(TracerState& s, const std::vector<SideEffect>& effects, VarId target) {
  uint32_t n = 0;
  for (const SideEffect& e : effects) {
    if (e.target == target)
      n += 1 + (e.result && s[e.result].kind == VarKind::Op);
    if (is_region_op(e.op))
      for (const RegionData::Part& p : region_of(e.value).parts)
        n += effect_refs(s, p.effects, target);
  }
  return n;
}

/// effect_refs() of every pending effect: the current ones, those set aside by the open
/// regions and those of their finished parts.
uint32_t pending_effect_refs(TracerState& s, VarId target) {
  uint32_t n = effect_refs(s, s.side_effects, target);
  for (uint32_t index : s.open_regions) {
    const RegionData& r = *s.regions[index];
    n += effect_refs(s, r.outer_effects, target);
    for (const RegionData::Part& p : r.parts)
      n += effect_refs(s, p.effects, target);
  }
  return n;
}

/// Schedules a scatter of kind `op` (value is 0 for ScatterInc); returns the increment's
/// variable for ScatterInc, else 0.
VarId scatter_local(VarId* target, VarId value, VarId index, VarId mask, IrOp op) {
  const char* what = to_string(op);
  TracerState& s = state();
  // Inside an evaluated loop's body only the lanes still iterating scatter.
  std::vector<VarRef> masked;
  for (VarId m : s.scatter_masks) {
    if (s[mask].type != ScalarType::Bool)
      break;  // refused below
    masked.emplace_back(binary_local(Op::And, mask, m));
    mask = masked.back().get();
  }
  ScalarType t = s[*target].type;
  const bool inc = op_facts(op).defines_value;  // an increment: the one effect with a value
  if (inc)
    check_type(what, t, ScalarType::UInt32);
  else
    check_type(what, s[value].type, t);
  const OpFacts& facts = op_facts(op);
  if (facts.accumulates && t == ScalarType::Bool)
    throw Error(std::string(what) + ": needs a numeric array, not bool");
  if (facts.accumulates && (facts.reduce == ReduceOp::And || facts.reduce == ReduceOp::Or) &&
      !is_integer(t))
    throw Error(std::string(what) + ": needs an integer array, not " + to_string(t));
  if (!is_integer(s[index].type))
    throw Error(std::string(what) + ": the index must be an integer array");
  check_type(std::string(what).append(" mask").c_str(), s[mask].type, ScalarType::Bool);
  // Scatters into one buffer run in program order; only reductions of one kind (which
  // commute) may share a kernel. Not increments: their values would interleave by vector.
  if (s[*target].dirty) {
    bool commute = facts.accumulates && !facts.defines_value;
    for (auto& e : s.side_effects)
      if (e.target == *target && e.op != op)
        commute = false;
    // Inside a symbolic region they run in program order within one kernel anyway.
    if (!commute && s.open_regions.empty())
      flush_side_effects();
  }
  settle({value, index, mask});
  materialize(*target);
  // Copy-on-write: other handles or lazy expressions that read the target keep its contents,
  // and so does another thread's variable sharing the buffer. References held by pending
  // scatters into the same target (and by their increments' variables) do not count as
  // readers.
  uint32_t pending = pending_effect_refs(s, *target);
  if (s[*target].refs - pending > 1 || s[*target].shared) {
    if (pending)
      flush_side_effects();  // the copy must include the pending writes
    Variable& old = s[*target];
    auto copy = alloc_buffer(old.type, old.size, old.prov.get());
    if (old.size || recording_open())
      copy->device->backend().copy(copy->ptr, old.buffer->ptr, old.size * size_of(old.type),
                                   CopyKind::DeviceToDevice);
    VarId fresh = var_from_buffer(std::move(copy));
    dec_local(*target);
    *target = fresh;
  }
  SizeDecision sd =
      inc ? decide_size(what, {index, mask}) : decide_size(what, {value, index, mask});
  VarId result = 0;
  if (inc) {
    result = new_var(VarKind::Op, ScalarType::UInt32, sd.size, sd.prov);
    Variable& r = s[result];
    r.op = IrOp::ScatterInc;
    r.dep[0] = *target;
    r.dep[1] = index;
    r.dep[2] = mask;
    for (VarId d : {*target, index, mask})
      s[d].refs++;
    s[result].refs++;  // the effect's reference; the caller gets the other
  }
  SideEffect e{*target, value, index, mask, op, result, sd.size, sd.prov};
  for (VarId d : {value, index, mask})
    inc_local(d);
  s[*target].refs++;
  s[*target].dirty = true;
  s.side_effects.push_back(std::move(e));
  return result;
}

Size width_local(VarId v) {
  TracerState& s = state();
  if (s[v].prov)
    return Size(s[v].prov);
  return Size(s[v].size);
}

}  // namespace

VarId binary_local(Op op, VarId a, VarId b) {
  settle({a, b});
  TracerState& s = state();
  ScalarType t = s[a].type;
  check_type(to_string(to_ir(op)), s[b].type, t);
  bool cmp = op >= Op::Eq && op <= Op::Ge;
  return make_op(to_ir(op), cmp ? ScalarType::Bool : t, decide_size(to_string(to_ir(op)), {a, b}),
                 {a, b});
}

VarId cast_local(ScalarType t, VarId a) {
  settle({a});
  if (state()[a].type == t) {
    inc_local(a);
    return a;
  }
  return make_op(IrOp::Cast, t, decide_size("cast", {a}), {a});
}

// ---------------------------------------------------------------------------------------------
// The entry points (tracer_api.h): operands from any thread, results in this thread's table

Handle var_empty(ScalarType t) {
  TracerState& s = state();
  Window w;
  return s.handle(new_literal(t, 0, 0, nullptr));
}

Handle var_literal(ScalarType t, uint64_t bits, const Size& size) {
  TracerState& s = state();
  Window w;
  return s.handle(new_literal_local(t, bits, size));
}

Handle var_from_host(ScalarType t, const void* data, size_t count) {
  TracerState& s = state();
  Window w;
  return s.handle(from_host_local(t, data, count));
}

Handle var_arange(ScalarType t, const Size& size) {
  TracerState& s = state();
  Window w;
  return s.handle(arange_local(t, size));
}

Handle var_unary(Op op, Handle a) {
  Operands o{a};
  Window w;
  return state().handle(unary_local(op, o[0]));
}

Handle var_binary(Op op, Handle a, Handle b) {
  Operands o{a, b};
  Window w;
  return state().handle(binary_local(op, o[0], o[1]));
}

Handle var_ternary(Op op, Handle a, Handle b, Handle c) {
  Operands o{a, b, c};
  Window w;
  return state().handle(ternary_local(op, o[0], o[1], o[2]));
}

Handle var_cast(ScalarType t, Handle a) {
  Operands o{a};
  Window w;
  return state().handle(cast_local(t, o[0]));
}

Handle var_bitcast(ScalarType t, Handle a) {
  Operands o{a};
  Window w;
  return state().handle(bitcast_local(t, o[0]));
}

Handle var_gather(ScalarType t, Handle source, Handle index, Handle mask) {
  Operands o{source, index, mask};
  Window w;
  return state().handle(gather_local(t, o[0], o[1], o[2]));
}

namespace {

/// A scatter's target from another thread is adopted by this one (a local variable sharing its
/// buffer, so the scatter copies it first) and the handle moves over to that.
void adopt_target(Handle* target) {
  TracerState& s = state();
  if (table_of(*target) == s.id)
    return;
  bool fresh = false;
  VarId adopted = localize(*target, &fresh);
  Handle old = *target;
  *target = s.handle(adopted);
  dec_ref(old);
}

}  // namespace

void var_scatter(Handle* target, Handle value, Handle index, Handle mask, bool reduce,
                 ReduceOp op) {
  TracerState& s = state();
  adopt_target(target);
  Operands o{value, index, mask};
  Window w;
  VarId t = index_of(*target);
  scatter_local(&t, o[0], o[1], o[2], scatter_op(reduce, op));
  *target = s.handle(t);
}

Handle var_scatter_inc(Handle* counter, Handle index, Handle mask) {
  TracerState& s = state();
  adopt_target(counter);
  Operands o{index, mask};
  Window w;
  VarId t = index_of(*counter);
  VarId result = scatter_local(&t, 0, o[0], o[1], IrOp::ScatterInc);
  *counter = s.handle(t);
  return s.handle(result);
}

// ---------------------------------------------------------------------------------------------
// Queries

uint64_t var_size(Handle h) {
  return with_variable(h, [](VarId v) { return state()[v].size; });
}

ScalarType var_type(Handle h) {
  return with_variable(h, [](VarId v) { return state()[v].type; });
}

Size var_width(Handle h) {
  return with_variable(h, [](VarId v) { return width_local(v); });
}

bool var_lane_offset(Handle index, int64_t* offset) {
  return with_variable(index, [offset](VarId v) {
    TracerState& s = state();
    auto is_lanes = [&](VarId d) {
      return s[d].kind == VarKind::Op && s[d].op == IrOp::Index && s[d].size == s[v].size;
    };
    auto literal = [&](VarId d, int64_t* k) {
      if (s[d].kind != VarKind::Literal || s[d].size != 1)
        return false;
      *k = static_cast<int64_t>(s[d].imm);  // integers: two's complement, widened
      return true;
    };
    if (s[v].kind != VarKind::Op)
      return false;
    if (is_lanes(v)) {
      *offset = 0;
      return true;
    }
    const VarId a = s[v].dep[0], b = s[v].dep[1];
    int64_t k = 0;
    if (s[v].op == IrOp::Add) {
      if ((is_lanes(a) && literal(b, &k)) || (is_lanes(b) && literal(a, &k))) {
        *offset = k;
        return true;
      }
    } else if (s[v].op == IrOp::Sub && is_lanes(a) && literal(b, &k)) {
      *offset = static_cast<int64_t>(0 - static_cast<uint64_t>(k));
      return true;
    }
    return false;
  });
}

}  // namespace ff::detail
