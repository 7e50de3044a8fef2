// The per-opcode facts table and the kernel-level analyses built on it (ir_analysis.h).
#include "backend/ir/ir_analysis.h"

#include <array>

namespace ff {
namespace {

using A = ParamAccess;
using C = CostClass;
constexpr uint8_t fa = 1, fb = 2, fc = 4, fd = 8, fe = 16;

constexpr OpFacts pure(uint8_t values, CostClass cost = C::Cheap) {
  OpFacts f;
  f.roles = {values, 0};
  f.cost = cost;
  return f;
}

/// An instruction naming parameter `a` with access `access` and no values (a leaf).
constexpr OpFacts leaf(ParamAccess access, CostClass cost) {
  OpFacts f;
  f.roles = {0, fa};
  f.access[0] = access;
  f.cost = cost;
  return f;
}

constexpr OpFacts gather() {
  OpFacts f;
  f.roles = {fb | fc, fa | fd};  // a: buffer, b: index, c: mask, d: bound
  f.access[0] = A::IndexedRead;
  f.access[3] = A::Bound;
  f.reports_range = true;
  f.cost = C::Gather;
  return f;
}

constexpr OpFacts store() {
  OpFacts f;
  f.roles = {fb, fa};  // a: buffer, b: value
  f.access[0] = A::LaneWrite;
  f.side_effect = true;
  f.defines_value = false;
  f.cost = C::Memory;
  return f;
}

constexpr OpFacts scatter() {
  OpFacts f;
  f.roles = {fb | fc | fd, fa | fe};  // a: buffer, b: index, c: mask, d: value, e: bound
  f.access[0] = A::IndexedWrite;
  f.access[4] = A::Bound;
  f.side_effect = true;
  f.defines_value = false;
  f.reports_range = true;
  f.cost = C::Scatter;
  return f;
}

constexpr OpFacts scatter_reduce(ReduceOp op) {
  OpFacts f = scatter();
  f.access[0] = A::IndexedAccumulate;
  f.accumulates = true;
  f.reduce = op;
  f.cost = C::ScatterAdd;
  return f;
}

constexpr OpFacts scatter_inc() {
  OpFacts f = scatter_reduce(ReduceOp::Add);
  f.roles = {fb | fc, fa | fe};  // a: buffer, b: index, c: mask, e: bound
  f.access[0] = A::IndexedIncrement;
  f.defines_value = true;
  return f;
}

/// A region marker reading the values `values`; LoopVar and Result define one.
constexpr OpFacts marker(RegionRole role, uint8_t values) {
  OpFacts f;
  f.roles = {values, 0};
  f.side_effect = true;
  f.defines_value = role == RegionRole::Var || role == RegionRole::Result;
  f.region = role;
  return f;
}

constexpr std::array<OpFacts, kNumIrOps> make_table() {
  std::array<OpFacts, kNumIrOps> t{};
  auto set = [&t](IrOp op, OpFacts f) { t[static_cast<size_t>(op)] = f; };
  // Every opcode not set below is binary (a, b) and cheap: arithmetic, logic, comparisons.
  for (auto& f : t)
    f = pure(fa | fb);
  set(IrOp::Index, pure(0));
  set(IrOp::Literal, pure(0, C::Uniform));
  set(IrOp::Scalar, leaf(A::ScalarValue, C::Uniform));
  set(IrOp::Load, leaf(A::LaneRead, C::Memory));
  set(IrOp::LoadBroadcast, leaf(A::BroadcastRead, C::Uniform));
  set(IrOp::Gather, gather());
  set(IrOp::Store, store());
  set(IrOp::Scatter, scatter());
  set(IrOp::ScatterAdd, scatter_reduce(ReduceOp::Add));
  set(IrOp::ScatterMul, scatter_reduce(ReduceOp::Mul));
  set(IrOp::ScatterMin, scatter_reduce(ReduceOp::Min));
  set(IrOp::ScatterMax, scatter_reduce(ReduceOp::Max));
  set(IrOp::ScatterAnd, scatter_reduce(ReduceOp::And));
  set(IrOp::ScatterOr, scatter_reduce(ReduceOp::Or));
  set(IrOp::ScatterInc, scatter_inc());
  for (IrOp op : {IrOp::Neg, IrOp::Not, IrOp::Abs, IrOp::Floor, IrOp::Ceil, IrOp::Cast,
                  IrOp::Bitcast, IrOp::Round, IrOp::Trunc, IrOp::Popcnt, IrOp::Clz, IrOp::Ctz})
    set(op, pure(fa));
  set(IrOp::Sqrt, pure(fa, C::Sqrt));
  for (IrOp op : {IrOp::Exp, IrOp::Log, IrOp::Sin, IrOp::Cos, IrOp::Tan, IrOp::Asin, IrOp::Acos,
                  IrOp::Atan, IrOp::Sinh, IrOp::Cosh, IrOp::Tanh, IrOp::Asinh, IrOp::Acosh,
                  IrOp::Atanh, IrOp::Exp2, IrOp::Log2, IrOp::Erf, IrOp::Cbrt})
    set(op, pure(fa, C::Transcendental));
  for (IrOp op : {IrOp::Atan2, IrOp::Pow})
    set(op, pure(fa | fb, C::Transcendental));
  set(IrOp::Div, pure(fa | fb, C::Divide));
  set(IrOp::Mod, pure(fa | fb, C::Divide));
  set(IrOp::Fma, pure(fa | fb | fc));
  set(IrOp::Select, pure(fa | fb | fc));
  set(IrOp::LoopBegin, marker(RegionRole::Open, 0));
  set(IrOp::LoopVar, marker(RegionRole::Var, fa));
  set(IrOp::LoopCond, marker(RegionRole::Cond, fa));
  set(IrOp::IfBegin, marker(RegionRole::Open, fa));
  set(IrOp::IfElse, marker(RegionRole::Part, 0));
  set(IrOp::CallBegin, marker(RegionRole::Open, fa));
  set(IrOp::CallCase, marker(RegionRole::Part, 0));
  set(IrOp::Yield, marker(RegionRole::Yield, fa));
  set(IrOp::EndRegion, marker(RegionRole::Close, 0));
  set(IrOp::Result, marker(RegionRole::Result, 0));
  return t;
}

constexpr std::array<OpFacts, kNumIrOps> kFacts = make_table();
constexpr OpFacts kInvalid{};  // no operands: nothing of an invalid instruction is read

}  // namespace

const char* to_string(ParamAccess a) {
  switch (a) {
    case A::ScalarValue:
      return "scalar";
    case A::Bound:
      return "bound";
    case A::LaneRead:
      return "lane-read";
    case A::LaneWrite:
      return "lane-write";
    case A::BroadcastRead:
      return "broadcast-read";
    case A::IndexedRead:
      return "indexed-read";
    case A::IndexedWrite:
      return "indexed-write";
    case A::IndexedAccumulate:
      return "indexed-accumulate";
    case A::RangeReport:
      return "range-report";
    case A::IndexedIncrement:
      return "indexed-increment";
  }
  return "invalid-access";
}

const OpFacts& op_facts(IrOp op) {
  auto i = static_cast<size_t>(op);
  return i < kFacts.size() ? kFacts[i] : kInvalid;
}

OperandRoles operand_roles(IrOp op) {
  return op_facts(op).roles;
}

LaneAccess lane_access(const IrInstr& in) {
  LaneAccess la;
  const OpFacts& facts = op_facts(in.op);
  for (int f = 0; f < 5; ++f)
    if ((facts.roles.params & (1u << f)) && is_lane_access(facts.access[f])) {
      la.access = facts.access[f];
      la.param = ir_detail::field(in, f);
    }
  if (la.access == A::LaneWrite)
    for_each_value(in, [&](uint32_t v) { la.value = v; });  // a store names one value
  return la;
}

bool ParamSummary::reads() const {
  for (int a = 0; a < kNumParamAccesses; ++a)
    if (has(static_cast<A>(a)) && access_reads(static_cast<A>(a)))
      return true;
  return false;
}

bool ParamSummary::writes() const {
  for (int a = 0; a < kNumParamAccesses; ++a)
    if (has(static_cast<A>(a)) && access_writes(static_cast<A>(a)))
      return true;
  return false;
}

bool ParamSummary::cross_lane() const {
  for (int a = 0; a < kNumParamAccesses; ++a)
    if (has(static_cast<A>(a)) && is_buffer_access(static_cast<A>(a)) &&
        !is_lane_access(static_cast<A>(a)))
      return true;
  return false;
}

std::vector<ParamSummary> param_summary(const KernelIR& ir) {
  std::vector<ParamSummary> s(ir.params.size());
  for_each_instr(ir, [&](uint32_t, const IrInstr& in) {
    for_each_param(in, [&](const IrParamUse& u) {
      if (u.param < s.size())
        s[u.param].accesses |= static_cast<uint16_t>(1u << static_cast<int>(u.access));
    });
  });
  return s;
}

std::vector<uint16_t> region_depths(const KernelIR& ir) {
  std::vector<uint16_t> depth(ir.instrs.size(), 0);
  uint16_t d = 0;
  for_each_instr(ir, [&](uint32_t k, const IrInstr& in) {
    RegionRole role = op_facts(in.op).region;
    if (role == RegionRole::Open)
      ++d;
    depth[k] = d;
    if (role == RegionRole::Close && d > 0)
      --d;
  });
  return depth;
}

std::vector<uint16_t> loop_depths(const KernelIR& ir) {
  std::vector<uint16_t> depth(ir.instrs.size(), 0);
  std::vector<bool> open;  // per open region: whether it is a loop
  uint16_t d = 0;
  for_each_instr(ir, [&](uint32_t k, const IrInstr& in) {
    RegionRole role = op_facts(in.op).region;
    if (role == RegionRole::Open) {
      open.push_back(in.op == IrOp::LoopBegin);
      d = static_cast<uint16_t>(d + open.back());
    }
    depth[k] = d;
    if (role == RegionRole::Close && !open.empty()) {
      d = static_cast<uint16_t>(d - open.back());
      open.pop_back();
    }
  });
  return depth;
}

bool has_regions(const KernelIR& ir) {
  bool any = false;
  for_each_instr(ir, [&](uint32_t, const IrInstr& in) { any = any || is_region_marker(in); });
  return any;
}

size_t count_regions(const KernelIR& ir) {
  size_t n = 0;
  for_each_instr(ir, [&](uint32_t, const IrInstr& in) { n += opens_region(in); });
  return n;
}

bool order_dependent(const KernelIR& ir) {
  bool any = false;
  for_each_instr(ir, [&](uint32_t, const IrInstr& in) { any = any || order_dependent(in); });
  return any;
}

bool has_indexed_access(const KernelIR& ir) {
  bool any = false;
  for_each_instr(ir, [&](uint32_t, const IrInstr& in) {
    for_each_param(in, [&](const IrParamUse& u) { any = any || is_indexed_access(u.access); });
  });
  return any;
}

}  // namespace ff
