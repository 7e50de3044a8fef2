// The IR analysis (backend/ir/ir_analysis.h) over every opcode: its facts against a table
// written out here, its agreement with the validator (a kernel naming exactly the declared
// operands validates; each declared operand is checked, each undeclared field ignored), and
// consumers that read the analysis ignoring garbage in unused fields.
#include "backend/ir/ir_analysis.h"

#include <catch2/catch.hpp>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "backend/cuda/ptx_codegen.h"
#include "backend/llvm/launch_plan.h"
#include "freezeframe/errors.h"
#include "recorder/launch_body.h"

namespace {

using namespace ff;
using A = ParamAccess;
using C = CostClass;

/// Operand fields a..e: '.' unused, 'v' a value, or a parameter: 's' scalar value, 'n' bound,
/// 'R' lane read, 'W' lane write, 'B' broadcast read, 'G' indexed read, 'S' indexed write,
/// 'A' indexed accumulation, 'I' indexed increment.
struct Expect {
  IrOp op;
  const char* fields;
  bool side_effect, reports_range, accumulates;
  CostClass cost;
};

constexpr bool N = false, Y = true;

const Expect kExpect[] = {
    {IrOp::Index, ".....", N, N, N, C::Cheap},
    {IrOp::Literal, ".....", N, N, N, C::Uniform},
    {IrOp::Scalar, "s....", N, N, N, C::Uniform},
    {IrOp::Load, "R....", N, N, N, C::Memory},
    {IrOp::LoadBroadcast, "B....", N, N, N, C::Uniform},
    {IrOp::Gather, "Gvvn.", N, Y, N, C::Gather},
    {IrOp::Store, "Wv...", Y, N, N, C::Memory},
    {IrOp::Scatter, "Svvvn", Y, Y, N, C::Scatter},
    {IrOp::ScatterAdd, "Avvvn", Y, Y, Y, C::ScatterAdd},
    {IrOp::Neg, "v....", N, N, N, C::Cheap},
    {IrOp::Not, "v....", N, N, N, C::Cheap},
    {IrOp::Abs, "v....", N, N, N, C::Cheap},
    {IrOp::Sqrt, "v....", N, N, N, C::Sqrt},
    {IrOp::Exp, "v....", N, N, N, C::Transcendental},
    {IrOp::Log, "v....", N, N, N, C::Transcendental},
    {IrOp::Sin, "v....", N, N, N, C::Transcendental},
    {IrOp::Cos, "v....", N, N, N, C::Transcendental},
    {IrOp::Floor, "v....", N, N, N, C::Cheap},
    {IrOp::Ceil, "v....", N, N, N, C::Cheap},
    {IrOp::Cast, "v....", N, N, N, C::Cheap},
    {IrOp::Bitcast, "v....", N, N, N, C::Cheap},
    {IrOp::Add, "vv...", N, N, N, C::Cheap},
    {IrOp::Sub, "vv...", N, N, N, C::Cheap},
    {IrOp::Mul, "vv...", N, N, N, C::Cheap},
    {IrOp::Div, "vv...", N, N, N, C::Divide},
    {IrOp::Mod, "vv...", N, N, N, C::Divide},
    {IrOp::Min, "vv...", N, N, N, C::Cheap},
    {IrOp::Max, "vv...", N, N, N, C::Cheap},
    {IrOp::And, "vv...", N, N, N, C::Cheap},
    {IrOp::Or, "vv...", N, N, N, C::Cheap},
    {IrOp::Xor, "vv...", N, N, N, C::Cheap},
    {IrOp::Shl, "vv...", N, N, N, C::Cheap},
    {IrOp::Shr, "vv...", N, N, N, C::Cheap},
    {IrOp::Eq, "vv...", N, N, N, C::Cheap},
    {IrOp::Ne, "vv...", N, N, N, C::Cheap},
    {IrOp::Lt, "vv...", N, N, N, C::Cheap},
    {IrOp::Le, "vv...", N, N, N, C::Cheap},
    {IrOp::Gt, "vv...", N, N, N, C::Cheap},
    {IrOp::Ge, "vv...", N, N, N, C::Cheap},
    {IrOp::Fma, "vvv..", N, N, N, C::Cheap},
    {IrOp::Select, "vvv..", N, N, N, C::Cheap},
    {IrOp::Tan, "v....", N, N, N, C::Transcendental},
    {IrOp::Asin, "v....", N, N, N, C::Transcendental},
    {IrOp::Acos, "v....", N, N, N, C::Transcendental},
    {IrOp::Atan, "v....", N, N, N, C::Transcendental},
    {IrOp::Sinh, "v....", N, N, N, C::Transcendental},
    {IrOp::Cosh, "v....", N, N, N, C::Transcendental},
    {IrOp::Tanh, "v....", N, N, N, C::Transcendental},
    {IrOp::Asinh, "v....", N, N, N, C::Transcendental},
    {IrOp::Acosh, "v....", N, N, N, C::Transcendental},
    {IrOp::Atanh, "v....", N, N, N, C::Transcendental},
    {IrOp::Exp2, "v....", N, N, N, C::Transcendental},
    {IrOp::Log2, "v....", N, N, N, C::Transcendental},
    {IrOp::Erf, "v....", N, N, N, C::Transcendental},
    {IrOp::Cbrt, "v....", N, N, N, C::Transcendental},
    {IrOp::Round, "v....", N, N, N, C::Cheap},
    {IrOp::Trunc, "v....", N, N, N, C::Cheap},
    {IrOp::Popcnt, "v....", N, N, N, C::Cheap},
    {IrOp::Clz, "v....", N, N, N, C::Cheap},
    {IrOp::Ctz, "v....", N, N, N, C::Cheap},
    {IrOp::Atan2, "vv...", N, N, N, C::Transcendental},
    {IrOp::Pow, "vv...", N, N, N, C::Transcendental},
    {IrOp::Copysign, "vv...", N, N, N, C::Cheap},
    {IrOp::ScatterMul, "Avvvn", Y, Y, Y, C::ScatterAdd},
    {IrOp::ScatterMin, "Avvvn", Y, Y, Y, C::ScatterAdd},
    {IrOp::ScatterMax, "Avvvn", Y, Y, Y, C::ScatterAdd},
    {IrOp::ScatterAnd, "Avvvn", Y, Y, Y, C::ScatterAdd},
    {IrOp::ScatterOr, "Avvvn", Y, Y, Y, C::ScatterAdd},
    {IrOp::ScatterInc, "Ivv.n", Y, Y, Y, C::ScatterAdd},
    // Region markers: side effects (never removed alone), no parameters.
    {IrOp::LoopBegin, ".....", Y, N, N, C::Cheap},
    {IrOp::LoopVar, "v....", Y, N, N, C::Cheap},
    {IrOp::LoopCond, "v....", Y, N, N, C::Cheap},
    {IrOp::IfBegin, "v....", Y, N, N, C::Cheap},
    {IrOp::IfElse, ".....", Y, N, N, C::Cheap},
    {IrOp::CallBegin, "v....", Y, N, N, C::Cheap},
    {IrOp::CallCase, ".....", Y, N, N, C::Cheap},
    {IrOp::Yield, "v....", Y, N, N, C::Cheap},
    {IrOp::EndRegion, ".....", Y, N, N, C::Cheap},
    {IrOp::Result, ".....", Y, N, N, C::Cheap},
};
static_assert(std::size(kExpect) == size_t{kNumIrOps}, "one expectation per opcode");

bool is_param_char(char c) {
  return c != '.' && c != 'v';
}

ParamAccess access_of(char c) {
  switch (c) {
    case 's':
      return A::ScalarValue;
    case 'n':
      return A::Bound;
    case 'R':
      return A::LaneRead;
    case 'W':
      return A::LaneWrite;
    case 'B':
      return A::BroadcastRead;
    case 'G':
      return A::IndexedRead;
    case 'S':
      return A::IndexedWrite;
    case 'I':
      return A::IndexedIncrement;
    default:
      REQUIRE(c == 'A');
      return A::IndexedAccumulate;
  }
}

uint32_t& field(IrInstr& in, int f) {
  uint32_t* fields[] = {&in.a, &in.b, &in.c, &in.d, &in.e};
  return *fields[f];
}

// Parameters of every test kernel; T is the opcode's operand type.
constexpr uint32_t kIn = 0, kOut = 1, kInOut = 2, kBound = 3, kScalarT = 4, kReport = 5;
// Values before the instruction under test: %0 index.int32, %1 load.T, %2 bool.
constexpr uint32_t kIndexV = 0, kTV = 1, kMaskV = 2, kTested = 3;

bool integer_only(IrOp op) {
  return op == IrOp::Not || op == IrOp::Mod || op == IrOp::And || op == IrOp::Or ||
         op == IrOp::Xor || op == IrOp::Shl || op == IrOp::Shr || op == IrOp::Popcnt ||
         op == IrOp::Clz || op == IrOp::Ctz || op == IrOp::ScatterAnd || op == IrOp::ScatterOr;
}

bool indexed(IrOp op) {
  return op == IrOp::Gather || op == IrOp::Scatter || op_facts(op).accumulates;
}

bool comparison(IrOp op) {
  return op >= IrOp::Eq && op <= IrOp::Ge;
}

/// A valid kernel whose instruction kTested is `e.op`, its operands assigned from the
/// expectation table; fields it does not declare hold `filler` (imm too, unless it is a
/// literal or carries a range report).
KernelIR kernel_for(const Expect& e, uint32_t filler, bool report) {
  const ScalarType t = e.op == IrOp::ScatterInc ? ScalarType::UInt32
                       : integer_only(e.op)     ? ScalarType::Int32
                                                : ScalarType::Float32;
  KernelIR ir;
  ir.params = {{ParamKind::BufferIn, t},    {ParamKind::BufferOut, t},
               {ParamKind::BufferInOut, t}, {ParamKind::Scalar, ScalarType::UInt64},
               {ParamKind::Scalar, t},      {ParamKind::BufferInOut, ScalarType::UInt64}};
  ir.emit(IrOp::Index, ScalarType::Int32);
  ir.emit(IrOp::Load, t, {kIn});
  ir.emit(IrOp::Lt, ScalarType::Bool, {kIndexV, kIndexV});
  IrInstr in{};
  in.op = e.op;
  in.type = comparison(e.op) ? ScalarType::Bool : t;
  for (int f = 0; f < 5; ++f) {
    char c = e.fields[f];
    uint32_t& x = field(in, f);
    if (c == '.') {
      x = filler;
    } else if (c == 'v') {
      x = kTV;
      if ((indexed(e.op) && f == 1) || e.op == IrOp::Cast || e.op == IrOp::Bitcast)
        x = kIndexV;
      if ((indexed(e.op) && f == 2) || (e.op == IrOp::Select && f == 0))
        x = kMaskV;
    } else {
      switch (access_of(c)) {
        case A::ScalarValue:
          x = kScalarT;
          break;
        case A::Bound:
          x = kBound;
          break;
        case A::LaneWrite:
          x = kOut;
          break;
        case A::IndexedWrite:
        case A::IndexedAccumulate:
        case A::IndexedIncrement:
          x = kInOut;
          break;
        default:
          x = kIn;
          break;
      }
    }
  }
  if (e.op == IrOp::Literal)
    in.imm = 0;
  else if (report) {
    in.flags = kIrFlagReportRange;
    in.imm = kReport;
  } else
    in.imm = filler;
  ir.instrs.push_back(in);
  ir.finalize();
  return ir;
}

std::vector<std::pair<uint32_t, ParamAccess>> params_of(const IrInstr& in) {
  std::vector<std::pair<uint32_t, ParamAccess>> out;
  for_each_param(in, [&](const IrParamUse& u) { out.push_back({u.param, u.access}); });
  return out;
}

std::string validation_error(const KernelIR& ir) {
  try {
    ir.validate();
  } catch (const FormatError& e) {
    return e.what();
  }
  return "";
}

/// The PTX without its first line (which names the kernel's hash).
std::string ptx_body(const KernelIR& ir) {
  std::string s = cuda_backend::emit_ptx_kernel(ir, "k");
  return s.substr(s.find('\n') + 1);
}

}  // namespace

TEST_CASE("the IR analysis states every opcode's operands, accesses and facts", "[ir]") {
  for (int i = 0; i < kNumIrOps; ++i) {
    const Expect& e = kExpect[i];
    REQUIRE(static_cast<int>(e.op) == i);
    INFO("opcode " << to_string(e.op));
    const OpFacts& f = op_facts(e.op);
    uint8_t values = 0, params = 0;
    for (int b = 0; b < 5; ++b) {
      if (e.fields[b] == 'v')
        values |= static_cast<uint8_t>(1u << b);
      if (is_param_char(e.fields[b])) {
        params |= static_cast<uint8_t>(1u << b);
        CHECK(f.access[b] == access_of(e.fields[b]));
      }
    }
    CHECK(f.roles.values == values);
    CHECK(f.roles.params == params);
    CHECK(operand_roles(e.op).values == values);
    CHECK(operand_roles(e.op).params == params);
    CHECK(f.side_effect == e.side_effect);
    CHECK(f.defines_value == (!e.side_effect || e.op == IrOp::ScatterInc || e.op == IrOp::LoopVar ||
                              e.op == IrOp::Result));
    CHECK((f.region != RegionRole::None) == (e.op >= IrOp::LoopBegin));
    CHECK(f.reports_range == e.reports_range);
    CHECK(f.accumulates == e.accumulates);
    CHECK(f.cost == e.cost);
  }
  // An invalid opcode names nothing.
  CHECK(op_facts(static_cast<IrOp>(kNumIrOps)).roles.values == 0);
  CHECK(op_facts(static_cast<IrOp>(200)).roles.params == 0);
}

TEST_CASE("the IR analysis agrees with the validator on every opcode", "[ir]") {
  constexpr uint32_t kGarbage = 0xDEAD0007u;
  for (const Expect& e : kExpect) {
    // A region marker is never valid alone (kernel_ir_test.cpp checks region structure).
    if (op_facts(e.op).region != RegionRole::None)
      continue;
    for (bool report : {false, true}) {
      if (report && !e.reports_range)
        continue;
      INFO("opcode " << to_string(e.op) << (report ? " with a range report" : ""));
      KernelIR clean = kernel_for(e, kNoOperand, report);
      KernelIR dirty = kernel_for(e, kGarbage, report);
      // A kernel naming exactly the declared operands validates, whatever the other fields
      // hold.
      CHECK(validation_error(clean).empty());
      CHECK(validation_error(dirty).empty());
      const IrInstr& in = dirty.instrs[kTested];

      // Each declared operand is checked: a value operand naming no earlier value and a
      // parameter operand naming no parameter are refused.
      for (int f = 0; f < 5; ++f) {
        if (e.fields[f] == '.')
          continue;
        KernelIR bad = clean;
        field(bad.instrs[kTested], f) = e.fields[f] == 'v' ? kTested : 99;
        INFO("field " << f);
        CHECK_FALSE(validation_error(bad).empty());
        // The access decides which parameter kinds the validator accepts.
        if (is_param_char(e.fields[f]) && is_buffer_access(access_of(e.fields[f]))) {
          ParamAccess acc = access_of(e.fields[f]);
          for (uint32_t p : {kIn, kOut, kInOut}) {
            KernelIR other = clean;
            field(other.instrs[kTested], f) = p;
            bool allowed = (p != kOut || !access_reads(acc)) && (p != kIn || !access_writes(acc));
            INFO("parameter " << p << " for " << to_string(acc));
            CHECK(validation_error(other).empty() == allowed);
          }
        }
      }

      // The walks read the declared fields only.
      std::vector<uint32_t> vals;
      for_each_value(in, [&](uint32_t v) { vals.push_back(v); });
      for (uint32_t v : vals)
        CHECK(v < kTested);
      std::vector<std::pair<uint32_t, ParamAccess>> expect_params;
      for (int f = 0; f < 5; ++f)
        if (is_param_char(e.fields[f]))
          expect_params.push_back({field(dirty.instrs[kTested], f), access_of(e.fields[f])});
      if (report)
        expect_params.push_back({kReport, A::RangeReport});
      CHECK(params_of(in) == expect_params);
      IrInstr copy = in;
      int n_values = 0, n_params = 0;
      for_each_operand_field(
          copy,
          [&](uint32_t& v) {
            ++n_values;
            v = 7;
          },
          [&](uint32_t& p) {
            ++n_params;
            p = 8;
          });
      CHECK(n_values == static_cast<int>(vals.size()));
      CHECK(n_params == static_cast<int>(expect_params.size()));
      if (!report && e.op != IrOp::Literal)
        CHECK(copy.imm == kGarbage);  // not a parameter: left alone
      LaneAccess la = lane_access(in);
      CHECK(la.reads() == (e.fields[0] == 'R'));
      CHECK(la.writes() == (e.fields[0] == 'W'));
      if (la.writes())
        CHECK(la.value == kTV);
      CHECK(order_dependent(in) == (e.accumulates && is_float(in.type) &&
                                    e.op != IrOp::ScatterMin && e.op != IrOp::ScatterMax));

      // Consumers ignore the garbage: the parameter summary and uses, the work estimate,
      // the generated PTX, dead-work removal.
      std::vector<ParamSummary> sc = param_summary(clean), sd = param_summary(dirty);
      for (size_t p = 0; p < sc.size(); ++p)
        CHECK(sc[p].accesses == sd[p].accesses);
      std::vector<rec::ParamUse> uc = rec::param_uses(clean), ud = rec::param_uses(dirty);
      for (size_t p = 0; p < uc.size(); ++p) {
        CHECK(uc[p].lane_read == ud[p].lane_read);
        CHECK(uc[p].lane_write == ud[p].lane_write);
        CHECK(uc[p].other == ud[p].other);
      }
      CHECK(llvm_backend::kernel_work_per_elem(clean) == llvm_backend::kernel_work_per_elem(dirty));
      CHECK(ptx_body(clean) == ptx_body(dirty));
      rec::LaunchBody bc{clean, std::vector<rec::LaunchArg>(clean.params.size())};
      rec::LaunchBody bd{dirty, std::vector<rec::LaunchArg>(dirty.params.size())};
      bool ec = rec::remove_dead_work(bc, [](uint32_t) { return true; });
      bool ed = rec::remove_dead_work(bd, [](uint32_t) { return true; });
      CHECK(ec == ed);
      CHECK(bc.ir.params == bd.ir.params);
      REQUIRE(bc.ir.instrs.size() == bd.ir.instrs.size());
      for (size_t k = 0; k < bc.ir.instrs.size(); ++k) {
        CHECK(bc.ir.instrs[k].op == bd.ir.instrs[k].op);
        for_each_value(bd.ir.instrs[k], [&](uint32_t v) { CHECK(v < k); });
      }
      CHECK(validation_error(bd.ir).empty());
    }
  }
}

namespace {

uint16_t bit(ParamAccess a) {
  return static_cast<uint16_t>(1u << static_cast<int>(a));
}

}  // namespace

TEST_CASE("a kernel's parameter summary joins its instructions' accesses", "[ir]") {
  const auto F = ScalarType::Float32, U = ScalarType::UInt32, U64 = ScalarType::UInt64;
  KernelIR ir;
  ir.params = {{ParamKind::BufferIn, F},  {ParamKind::BufferIn, U},
               {ParamKind::Scalar, U64},  {ParamKind::BufferInOut, F},
               {ParamKind::BufferOut, F}, {ParamKind::BufferInOut, U64},
               {ParamKind::Scalar, F}};
  uint32_t x = ir.emit(IrOp::Load, F, {0});
  uint32_t idx = ir.emit(IrOp::Load, U, {1});
  uint32_t all = ir.emit(IrOp::Literal, ScalarType::Bool, {}, 1);
  uint32_t s = ir.emit(IrOp::Scalar, F, {6});
  uint32_t g = ir.emit(IrOp::Gather, F, {0, idx, all, 2});
  ir.emit(IrOp::ScatterAdd, F, {3, idx, all, ir.emit(IrOp::Mul, F, {g, s}), 2}, 5,
          kIrFlagReportRange);
  ir.emit(IrOp::Store, F, {4, x});
  ir.finalize();
  REQUIRE(validation_error(ir).empty());
  std::vector<ParamSummary> sum = param_summary(ir);
  REQUIRE(sum.size() == 7);
  CHECK(sum[0].has(A::LaneRead));
  CHECK(sum[0].has(A::IndexedRead));
  CHECK(sum[0].cross_lane());
  CHECK_FALSE(sum[0].writes());
  CHECK(sum[1].accesses == bit(A::LaneRead));
  CHECK_FALSE(sum[1].cross_lane());
  CHECK(sum[2].accesses == bit(A::Bound));
  CHECK_FALSE(sum[2].reads());
  CHECK(sum[3].accesses == bit(A::IndexedAccumulate));
  CHECK(sum[3].reads());
  CHECK(sum[3].writes());
  CHECK(sum[4].accesses == bit(A::LaneWrite));
  CHECK_FALSE(sum[4].reads());
  CHECK(sum[5].accesses == bit(A::RangeReport));
  CHECK(sum[6].accesses == bit(A::ScalarValue));
  CHECK(order_dependent(ir));
  CHECK(has_indexed_access(ir));
  // The bound that goes with each indexed access.
  for_each_param(ir.instrs[g], [](const IrParamUse& u) {
    if (u.access == A::IndexedRead)
      CHECK(u.bound == 2);
    else
      CHECK(u.bound == kNoOperand);
  });
}
