// What a kernel IR instruction reads, writes and names: the one owner of that knowledge.
//
// Per opcode, one table (op_facts) says which operand fields name values and which name
// parameters, how each parameter is accessed (a lane read or write, a broadcast read, an
// indexed read, write or accumulation, a scalar value, a bound), whether the instruction is a
// side effect, whether it may carry a range report, whether it accumulates (so that its float
// result depends on the order of lanes) and its cost class. The walks below read only the
// fields the table declares: a field an opcode does not use may hold anything (a loaded file's
// bytes) and is never read.
//
// Who uses it: the validator (kernel_ir.cpp), the code generators' choice of the parameters to
// load, the recording optimiser (recorder/launch_body.cpp), the replay plan's buffer extents,
// freeze's order-dependence check and the LLVM backend's work estimates. Code outside
// backend/ir/ does not switch on opcodes to decide these things (tests/ir_opcode_decisions.sh
// checks); the code generators switch on opcodes only to emit each one.
//
// Regions: loops, branches and calls are runs of the one instruction list between markers
// (RegionRole), so for_each_instr() and every per-kernel consumer built on it see a scatter
// inside a loop body as a scatter; region_depths() tells what runs conditionally.
#pragma once

#include <cstdint>
#include <vector>

#include "backend/ir/kernel_ir.h"
#include "freezeframe/reduce_op.h"

namespace ff {

/// How an instruction uses a parameter it names.
enum class ParamAccess : uint8_t {
  ScalarValue = 0,        // Scalar: the parameter's value, of the instruction's type
  Bound = 1,              // Gather and the scatters: a uint64 scalar, the buffer's length
  LaneRead = 2,           // Load: buf[i]
  LaneWrite = 3,          // Store: buf[i] = value
  BroadcastRead = 4,      // LoadBroadcast: buf[0]
  IndexedRead = 5,        // Gather: buf[index]
  IndexedWrite = 6,       // Scatter: buf[index] = value (other elements keep their contents)
  IndexedAccumulate = 7,  // ScatterAdd ... ScatterOr: atomic buf[index] = buf[index] op value
  RangeReport = 8,        // kIrFlagReportRange: the report buffer named in imm (two words)
  IndexedIncrement = 9,   // ScatterInc: atomic buf[index] += 1, whose old value the lane gets
};
inline constexpr int kNumParamAccesses = 10;
const char* to_string(ParamAccess a);

/// A buffer's elements are accessed (every access except ScalarValue and Bound).
constexpr bool is_buffer_access(ParamAccess a) {
  return a != ParamAccess::ScalarValue && a != ParamAccess::Bound;
}

/// The buffer must be readable: BufferIn or BufferInOut (indexed writes keep the elements
/// they do not write, and the validator demands inout for them).
constexpr bool access_reads(ParamAccess a) {
  return is_buffer_access(a) && a != ParamAccess::LaneWrite;
}

/// The buffer must be writable: BufferOut or BufferInOut.
constexpr bool access_writes(ParamAccess a) {
  return a == ParamAccess::LaneWrite || a == ParamAccess::IndexedWrite ||
         a == ParamAccess::IndexedAccumulate || a == ParamAccess::IndexedIncrement ||
         a == ParamAccess::RangeReport;
}

/// Lane i touches only element i (Load, Store): fusing at equal lanes preserves it.
constexpr bool is_lane_access(ParamAccess a) {
  return a == ParamAccess::LaneRead || a == ParamAccess::LaneWrite;
}

/// An element chosen by an index value (Gather and the scatters), bounded by a Bound
/// parameter of the same instruction.
constexpr bool is_indexed_access(ParamAccess a) {
  return a == ParamAccess::IndexedRead || a == ParamAccess::IndexedWrite ||
         a == ParamAccess::IndexedAccumulate || a == ParamAccess::IndexedIncrement;
}

/// What an instruction costs per element, for work estimates (backend/llvm/launch_plan.cpp
/// weighs each class).
enum class CostClass : uint8_t {
  Uniform,         // the same for every element: hoisted out of the loop (Literal, Scalar, ...)
  Cheap,           // ALU ops, compares, selects, casts, the index
  Memory,          // Load, Store
  Gather,          // an indexed read
  Scatter,         // an indexed write
  ScatterAdd,      // an indexed atomic accumulation (every ReduceOp) or increment
  Sqrt,            // square root
  Divide,          // Div, Mod (float and integer cost differ)
  Transcendental,  // Exp, Log, Sin, Cos, Tan, ..., Atan2, Pow: a libm-class routine
};

/// The part an instruction plays in the IR's structured regions (kernel_ir.h, "Regions").
enum class RegionRole : uint8_t {
  None = 0,  // an ordinary instruction
  Open,      // LoopBegin, IfBegin, CallBegin: opens a region
  Var,       // LoopVar: a loop's carried value
  Cond,      // LoopCond: ends a loop's condition
  Part,      // IfElse, CallCase: ends one part of a region and starts the next
  Yield,     // Yield: a value handed out of a part
  Close,     // EndRegion
  Result,    // Result: a value of the region just closed
};

/// Everything the IR says about an opcode apart from its semantics and typing rules.
struct OpFacts {
  OperandRoles roles;          // fields naming values (bit 0 = a ... bit 4 = e), and parameters
  ParamAccess access[5]{};     // for each field in roles.params: how it uses the parameter
  bool side_effect = false;    // writes memory: never removed for want of users (Store and
                               // every scatter; ScatterInc while its buffer or value is used)
  bool defines_value = true;   // other instructions may use its value (false for the side
                               // effects except ScatterInc, whose value is the old element)
  bool reports_range = false;  // may carry kIrFlagReportRange: imm names a RangeReport param
  bool accumulates = false;    // an atomic read-modify-write (ScatterAdd ... ScatterInc)
  ReduceOp reduce = ReduceOp::Add;  // accumulates: how the value combines with the element
                                    // (ScatterInc: Add, of 1)
  CostClass cost = CostClass::Cheap;
  RegionRole region = RegionRole::None;  // region markers are side effects (never removed
                                         // alone) that code generators emit as control flow
};

/// The facts of `op`; an opcode outside [0, kNumIrOps) (invalid IR) has no operands.
const OpFacts& op_facts(IrOp op);

/// One use of a parameter by an instruction.
struct IrParamUse {
  uint32_t param;
  ParamAccess access;
  uint32_t bound = kNoOperand;  // an indexed access: the Bound parameter of the instruction
};

namespace ir_detail {
inline void fields(IrInstr& in, uint32_t* (&out)[5]) {
  out[0] = &in.a;
  out[1] = &in.b;
  out[2] = &in.c;
  out[3] = &in.d;
  out[4] = &in.e;
}

inline uint32_t field(const IrInstr& in, int f) {
  const uint32_t v[5] = {in.a, in.b, in.c, in.d, in.e};
  return v[f];
}
}  // namespace ir_detail

/// Whether `in` carries a range report (its imm names a RangeReport parameter).
inline bool has_range_report(const IrInstr& in) {
  return op_facts(in.op).reports_range && (in.flags & kIrFlagReportRange);
}

/// Calls `value(uint32_t v)` for every field of `in` that names an earlier instruction, in
/// field order.
template <class V>
void for_each_value(const IrInstr& in, V&& value) {
  const uint8_t values = op_facts(in.op).roles.values;
  for (int f = 0; f < 5; ++f)
    if (values & (1u << f))
      value(ir_detail::field(in, f));
}

/// Calls `param(const IrParamUse&)` for every parameter `in` uses: the fields in order, then
/// the range report's parameter.
template <class P>
void for_each_param(const IrInstr& in, P&& param) {
  const OpFacts& facts = op_facts(in.op);
  uint32_t bound = kNoOperand;
  for (int f = 0; f < 5; ++f)
    if ((facts.roles.params & (1u << f)) && facts.access[f] == ParamAccess::Bound)
      bound = ir_detail::field(in, f);
  for (int f = 0; f < 5; ++f)
    if (facts.roles.params & (1u << f))
      param(IrParamUse{ir_detail::field(in, f), facts.access[f],
                       is_indexed_access(facts.access[f]) ? bound : kNoOperand});
  if (has_range_report(in))
    param(IrParamUse{static_cast<uint32_t>(in.imm), ParamAccess::RangeReport});
}

/// For rewriting: calls `value(uint32_t&)` for every value field and `param(uint32_t&)` for
/// every parameter field of `in`, the range report's imm included (as 32 bits).
template <class V, class P>
void for_each_operand_field(IrInstr& in, V&& value, P&& param) {
  const OperandRoles roles = op_facts(in.op).roles;
  uint32_t* fields[5];
  ir_detail::fields(in, fields);
  for (int f = 0; f < 5; ++f) {
    if (roles.values & (1u << f))
      value(*fields[f]);
    else if (roles.params & (1u << f))
      param(*fields[f]);
  }
  if (has_range_report(in)) {
    auto p = static_cast<uint32_t>(in.imm);
    param(p);
    in.imm = p;
  }
}

/// The lane access of `in`, if it is one: a Load (`param` read at lane i, the instruction's
/// value) or a Store (`value` written to `param` at lane i). access is ScalarValue and param
/// kNoOperand for every other instruction. What store-to-load forwarding needs.
struct LaneAccess {
  ParamAccess access = ParamAccess::ScalarValue;
  uint32_t param = kNoOperand;
  uint32_t value = kNoOperand;  // LaneWrite: the value stored

  bool reads() const { return param != kNoOperand && access == ParamAccess::LaneRead; }

  bool writes() const { return param != kNoOperand && access == ParamAccess::LaneWrite; }
};

LaneAccess lane_access(const IrInstr& in);

/// An accumulation whose float result depends on the order of lanes (a float ScatterAdd or
/// ScatterMul; float Min and Max are exact in any order).
inline bool order_dependent(const IrInstr& in) {
  const OpFacts& f = op_facts(in.op);
  return f.accumulates && is_float(in.type) &&
         (f.reduce == ReduceOp::Add || f.reduce == ReduceOp::Mul);
}

/// The one walk over a kernel's instructions for an analysis: calls `f(uint32_t k, const
/// IrInstr&)` for every instruction in order. Regions are runs of the same list between their
/// markers, so the walk visits their contents too (region_depths() says how deep each is).
template <class F>
void for_each_instr(const KernelIR& ir, F&& f) {
  for (size_t k = 0; k < ir.instrs.size(); ++k)
    f(static_cast<uint32_t>(k), ir.instrs[k]);
}

/// Whether `in` is a region marker (anything but RegionRole::None).
inline bool is_region_marker(const IrInstr& in) {
  return op_facts(in.op).region != RegionRole::None;
}

/// Whether `in` opens a region (LoopBegin, IfBegin, CallBegin).
inline bool opens_region(const IrInstr& in) {
  return op_facts(in.op).region == RegionRole::Open;
}

/// Per instruction of `ir`, how many regions enclose it: 0 at the top level. An Open and its
/// Close count as inside their region; a Result, a value of the enclosing part, does not. For
/// analyses that treat what runs
/// conditionally or repeatedly differently (the optimiser's forwarding and dead-work removal,
/// work estimates); IR that fails validation gets depths clamped at 0.
std::vector<uint16_t> region_depths(const KernelIR& ir);

/// Per instruction of `ir`, how many loops enclose it (region_depths() counting loops only: a
/// LoopBegin and its EndRegion count as inside their loop). What runs an unknown number of
/// times per element, for work estimates; IR that fails validation gets depths clamped at 0.
std::vector<uint16_t> loop_depths(const KernelIR& ir);

/// Whether `ir` has any region.
bool has_regions(const KernelIR& ir);

/// How many regions `ir` opens (its opens_region() markers): how many names
/// RecordingData::region_names holds for it.
size_t count_regions(const KernelIR& ir);

/// How a whole kernel uses one parameter: the set of its accesses.
struct ParamSummary {
  uint16_t accesses = 0;  // bit (1 << ParamAccess)

  bool has(ParamAccess a) const { return (accesses >> static_cast<int>(a)) & 1u; }

  bool used() const { return accesses != 0; }

  /// Some access reads the buffer's elements / writes them.
  bool reads() const;
  bool writes() const;

  /// Some buffer access other than at lane i (a broadcast, indexed or report access): a
  /// dependence across lanes.
  bool cross_lane() const;
};

/// One summary per parameter of `ir` (a use naming a parameter out of range is ignored).
std::vector<ParamSummary> param_summary(const KernelIR& ir);

/// Whether some instruction of `ir` is order_dependent().
bool order_dependent(const KernelIR& ir);

/// Whether some instruction of `ir` accesses a buffer by index (Gather or a scatter).
bool has_indexed_access(const KernelIR& ir);

}  // namespace ff
