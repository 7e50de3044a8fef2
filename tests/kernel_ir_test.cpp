// The kernel IR's serialised form from outside (a recording file, another process): every
// malformation is an ff::FormatError naming it; a kernel's bytes are canonical, so its hash
// identifies it.
#include "backend/ir/kernel_ir.h"

#include <catch2/catch.hpp>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "freezeframe/errors.h"
#include "support/errors.h"

namespace {

using namespace ff;
using Catch::Matchers::Contains;

// out[i] = src[idx[i]] with a debug range report.
KernelIR gather_kernel() {
  const auto F = ScalarType::Float32, U = ScalarType::UInt32;
  KernelIR ir;
  ir.params = {{ParamKind::BufferIn, F},
               {ParamKind::BufferIn, U},
               {ParamKind::Scalar, ScalarType::UInt64},
               {ParamKind::BufferOut, F},
               {ParamKind::BufferInOut, ScalarType::UInt64}};
  uint32_t idx = ir.emit(IrOp::Load, U, {1});
  uint32_t all = ir.emit(IrOp::Literal, ScalarType::Bool, {}, 1);
  uint32_t g = ir.emit(IrOp::Gather, F, {0, idx, all, 2}, /*imm: report*/ 4, kIrFlagReportRange);
  ir.emit(IrOp::Store, F, {3, g});
  ir.finalize();
  return ir;
}

std::string format_error(const std::vector<std::byte>& bytes) {
  fft::Thrown t = fft::thrown_by([&] { (void)KernelIR::deserialize(bytes); });
  INFO("threw " << t.type << ": " << t.what);
  REQUIRE(t.type == fft::type_name_of<FormatError>());
  return t.what;
}

template <class T>
void poke(std::vector<std::byte>& bytes, size_t at, T value) {
  std::memcpy(bytes.data() + at, &value, sizeof(T));
}

constexpr size_t kHeader = 16;

}  // namespace

TEST_CASE("kernel IR round-trips through its bytes with the same hash", "[ir]") {
  KernelIR ir = gather_kernel();
  std::vector<std::byte> bytes = ir.serialize();
  KernelIR back = KernelIR::deserialize(bytes);
  CHECK(back.hash == ir.hash);
  CHECK(back.serialize() == bytes);
  CHECK(back.to_string() == ir.to_string());
}

TEST_CASE("a kernel without instructions round-trips", "[ir]") {
  // Found by the fuzzer: under UBSan, copying zero instructions into an empty vector passed
  // memcpy a null pointer.
  KernelIR ir;
  ir.params = {{ParamKind::BufferIn, ScalarType::Float32}, {ParamKind::Scalar, ScalarType::Bool}};
  ir.finalize();
  std::vector<std::byte> bytes = ir.serialize();
  CHECK(KernelIR::deserialize(bytes).serialize() == bytes);
}

TEST_CASE("malformed kernel IR bytes raise ff::FormatError naming the problem", "[ir]") {
  const std::vector<std::byte> good = gather_kernel().serialize();
  const size_t instrs = kHeader + 5 * 2;  // five parameters of two bytes
  std::vector<std::byte> b = good;

  SECTION("magic") {
    b[0] = std::byte{'X'};
    CHECK_THAT(format_error(b), Contains("magic"));
  }
  SECTION("version") {
    poke<uint16_t>(b, 4, 99);
    CHECK_THAT(format_error(b), Contains("version 99"));
  }
  SECTION("reserved header field") {
    poke<uint16_t>(b, 6, 1);
    CHECK_THAT(format_error(b), Contains("reserved"));
  }
  SECTION("truncated") {
    b.resize(b.size() - 1);
    CHECK_THAT(format_error(b), Contains("does not match"));
  }
  SECTION("counts that overflow 32 bits") {
    poke<uint32_t>(b, 12, 0xFFFFFFFFu);
    CHECK_THAT(format_error(b), Contains("does not match"));
  }
  SECTION("an invalid parameter kind") {
    b[kHeader] = std::byte{9};
    CHECK_THAT(format_error(b), Contains("parameter 0") && Contains("invalid kind"));
  }
  SECTION("an operand naming a later instruction") {
    poke<uint32_t>(b, instrs + 3 * sizeof(IrInstr) + offsetof(IrInstr, b), 3);
    CHECK_THAT(format_error(b), Contains("instruction 3") && Contains("earlier instruction"));
  }
  SECTION("a report parameter beyond 32 bits") {
    // Only the low half named a valid parameter once: the code generator indexed with all 64.
    poke<uint64_t>(b, instrs + 2 * sizeof(IrInstr) + offsetof(IrInstr, imm), 0x800000004ull);
    CHECK_THAT(format_error(b), Contains("instruction 2") && Contains("report parameter"));
  }
  SECTION("an invalid opcode") {
    b[instrs + offsetof(IrInstr, op)] = std::byte{200};
    CHECK_THAT(format_error(b), Contains("invalid opcode 200"));
  }
}

namespace {

const ScalarType kF = ScalarType::Float32, kI = ScalarType::Int32, kU = ScalarType::UInt32,
                 kU64 = ScalarType::UInt64, kB = ScalarType::Bool;

/// A kernel whose instructions the rule's `build` appends; it starts with parameters
/// 0: in float32, 1: out float32, 2: in uint32, 3: scalar uint64, 4: inout uint64 (a report
/// buffer), 5: scalar float32, 6: inout float32.
struct IrRule {
  const char* name;
  std::function<void(KernelIR&)> build;
  std::string message;
};

KernelIR rule_base() {
  KernelIR ir;
  ir.params = {{ParamKind::BufferIn, kF},      {ParamKind::BufferOut, kF},
               {ParamKind::BufferIn, kU},      {ParamKind::Scalar, kU64},
               {ParamKind::BufferInOut, kU64}, {ParamKind::Scalar, kF},
               {ParamKind::BufferInOut, kF}};
  return ir;
}

void check_ir_rules(const std::vector<IrRule>& rules) {
  for (const IrRule& rule : rules) {
    DYNAMIC_SECTION(rule.name) {
      KernelIR ir = rule_base();
      rule.build(ir);
      fft::Thrown t = fft::thrown_by([&] { ir.validate(); });
      INFO("threw " << t.type << ": " << t.what);
      CHECK(t.type == fft::type_name_of<FormatError>());
      CHECK_THAT(t.what, Contains(rule.message));
      // The same IR from bytes: deserialize refuses it with the same rule.
      ir.finalize();
      CHECK_THAT(format_error(ir.serialize()), Contains(rule.message));
    }
  }
}

}  // namespace

TEST_CASE("kernel IR validation: the rule tests start from valid IR", "[ir][validate]") {
  KernelIR ir = rule_base();
  uint32_t x = ir.emit(IrOp::Load, kF, {0});
  uint32_t idx = ir.emit(IrOp::Load, kU, {2});
  uint32_t all = ir.emit(IrOp::Literal, kB, {}, 1);
  uint32_t g = ir.emit(IrOp::Gather, kF, {0, idx, all, 3}, 4, kIrFlagReportRange);
  uint32_t s = ir.emit(IrOp::Scalar, kF, {5});
  ir.emit(IrOp::ScatterAdd, kF, {6, idx, all, s, 3}, 4, kIrFlagReportRange);
  ir.emit(IrOp::Store, kF, {1, ir.emit(IrOp::Fma, kF, {x, g, s})});
  CHECK_NOTHROW(ir.validate());
}

TEST_CASE("kernel IR validation refuses bad parameters and headers of instructions",
          "[ir][validate][negative]") {
  check_ir_rules({
      {"a parameter of an invalid kind",
       [](KernelIR& ir) { ir.params[2].kind = static_cast<ParamKind>(4); },
       "kernel IR parameter 2: invalid kind"},
      {"a parameter of an invalid type",
       [](KernelIR& ir) { ir.params[2].type = static_cast<ScalarType>(7); },
       "kernel IR parameter 2: invalid type"},
      {"an invalid opcode", [](KernelIR& ir) { ir.emit(static_cast<IrOp>(kNumIrOps), kF); },
       "instruction 0 (invalid-op): invalid opcode 79"},
      {"an invalid result type",
       [](KernelIR& ir) { ir.emit(IrOp::Literal, static_cast<ScalarType>(7)); },
       "instruction 0 (literal): invalid type"},
  });
}

TEST_CASE("kernel IR validation refuses unknown and misplaced flags", "[ir][validate][negative]") {
  auto gather = [](KernelIR& ir, uint64_t imm, uint16_t flags) {
    uint32_t idx = ir.emit(IrOp::Load, kU, {2});
    uint32_t all = ir.emit(IrOp::Literal, kB, {}, 1);
    ir.emit(IrOp::Gather, kF, {0, idx, all, 3}, imm, flags);
  };
  check_ir_rules({
      {"an unknown flag bit", [](KernelIR& ir) { ir.emit(IrOp::Load, kF, {0}, 0, 2); },
       "instruction 0 (load): unknown flag bits 2"},
      {"a range report on a load",
       // Regression: the replay plan indexed its extents by `imm` for any flagged instruction.
       [](KernelIR& ir) { ir.emit(IrOp::Load, kF, {0}, 1000, kIrFlagReportRange); },
       "instruction 0 (load): only gathers and scatters report ranges"},
      {"a report parameter out of range", [&](KernelIR& ir) { gather(ir, 7, kIrFlagReportRange); },
       "instruction 2 (gather): report parameter 7 out of range"},
      {"a report parameter that is not an inout uint64 buffer",
       [&](KernelIR& ir) { gather(ir, 3, kIrFlagReportRange); },
       "range report parameter must be an inout uint64 buffer"},
  });
}

TEST_CASE("kernel IR validation refuses bad operand references", "[ir][validate][negative]") {
  check_ir_rules({
      {"an operand naming a later instruction", [](KernelIR& ir) { ir.emit(IrOp::Neg, kF, {0}); },
       "instruction 0 (neg): operand names value 0, which is not an earlier instruction"},
      {"an operand naming a side effect",
       [](KernelIR& ir) {
         uint32_t x = ir.emit(IrOp::Load, kF, {0});
         uint32_t st = ir.emit(IrOp::Store, kF, {1, x});
         ir.emit(IrOp::Neg, kF, {st});
       },
       "instruction 2 (neg): operand names value 1, a side effect"},
      {"a parameter out of range", [](KernelIR& ir) { ir.emit(IrOp::Load, kF, {7}); },
       "instruction 0 (load): buffer parameter 7 out of range"},
      {"a load from an output buffer", [](KernelIR& ir) { ir.emit(IrOp::Load, kF, {1}); },
       "parameter 1 is 'out', unusable here"},
      {"a store into an input buffer",
       [](KernelIR& ir) {
         ir.emit(IrOp::Store, kF, {0, ir.emit(IrOp::Load, kF, {0})});
       },
       "parameter 0 is 'in', unusable here"},
      {"a buffer of another element type", [](KernelIR& ir) { ir.emit(IrOp::Load, kI, {0}); },
       "buffer type float32 differs from int32"},
      {"a gather bound that is not a uint64 scalar",
       [](KernelIR& ir) {
         uint32_t idx = ir.emit(IrOp::Load, kU, {2});
         uint32_t all = ir.emit(IrOp::Literal, kB, {}, 1);
         ir.emit(IrOp::Gather, kF, {0, idx, all, 5});
       },
       "bound parameter must be a uint64 scalar"},
      {"a gather index that is not an integer",
       [](KernelIR& ir) {
         uint32_t idx = ir.emit(IrOp::Load, kF, {0});
         uint32_t all = ir.emit(IrOp::Literal, kB, {}, 1);
         ir.emit(IrOp::Gather, kF, {0, idx, all, 3});
       },
       "index must be an integer"},
      {"a scatter mask that is not bool",
       [](KernelIR& ir) {
         uint32_t idx = ir.emit(IrOp::Load, kU, {2});
         uint32_t v = ir.emit(IrOp::Load, kF, {0});
         ir.emit(IrOp::Scatter, kF, {6, idx, idx, v, 3});
       },
       "mask must be bool"},
      {"a stored value of another type",
       [](KernelIR& ir) {
         ir.emit(IrOp::Store, kF, {1, ir.emit(IrOp::Literal, kI, {}, 1)});
       },
       "value has type int32, expected float32"},
  });
}

TEST_CASE("kernel IR validation refuses leaves and memory operations of the wrong type",
          "[ir][validate][negative]") {
  check_ir_rules({
      {"a bool index", [](KernelIR& ir) { ir.emit(IrOp::Index, kB); },
       "instruction 0 (index): index cannot be bool"},
      {"a scalar naming a buffer parameter", [](KernelIR& ir) { ir.emit(IrOp::Scalar, kF, {0}); },
       "must name a scalar parameter of its type"},
      {"a scalar of another type than its parameter",
       [](KernelIR& ir) { ir.emit(IrOp::Scalar, kI, {5}); },
       "must name a scalar parameter of its type"},
      {"a bool scatter_add",
       [](KernelIR& ir) {
         ir.params.push_back({ParamKind::BufferInOut, kB});
         uint32_t idx = ir.emit(IrOp::Load, kU, {2});
         uint32_t all = ir.emit(IrOp::Literal, kB, {}, 1);
         ir.emit(IrOp::ScatterAdd, kB, {7, idx, all, all, 3});
       },
       "instruction 2 (scatter_add): needs a numeric type"},
  });
}

TEST_CASE("kernel IR validation refuses arithmetic on the wrong types",
          "[ir][validate][negative]") {
  // `op` of type t on n literal operands of type t.
  auto on = [](IrOp op, ScalarType t, int n = 1) {
    return [=](KernelIR& ir) {
      uint32_t v = ir.emit(IrOp::Literal, t, {}, 1);
      ir.emit(op, t,
              n == 1   ? std::initializer_list<uint32_t>{v}
              : n == 2 ? std::initializer_list<uint32_t>{v, v}
                       : std::initializer_list<uint32_t>{v, v, v});
    };
  };
  check_ir_rules({
      {"neg of bool", on(IrOp::Neg, kB), "(neg): needs a numeric type"},
      {"not of a float", on(IrOp::Not, kF), "(not): needs an integer or bool type"},
      {"sqrt of an integer", on(IrOp::Sqrt, kI), "(sqrt): needs a float type"},
      {"a unary operand of another type",
       [](KernelIR& ir) { ir.emit(IrOp::Abs, kF, {ir.emit(IrOp::Literal, kI, {}, 1)}); },
       "(abs): operand has type int32, expected float32"},
      {"a bitcast between widths",
       [](KernelIR& ir) {
         ir.emit(IrOp::Bitcast, ScalarType::Float64, {ir.emit(IrOp::Literal, kF, {}, 1)});
       },
       "bitcast needs two non-bool types of one width"},
      {"add of bools", on(IrOp::Add, kB, 2), "(add): needs a numeric type"},
      {"mod of floats", on(IrOp::Mod, kF, 2), "(mod): needs an integer type"},
      {"xor of floats", on(IrOp::Xor, kF, 2), "(xor): needs an integer or bool type"},
      {"a binary operand of another type",
       [](KernelIR& ir) {
         uint32_t f = ir.emit(IrOp::Literal, kF, {}, 1), i = ir.emit(IrOp::Literal, kI, {}, 1);
         ir.emit(IrOp::Mul, kF, {f, i});
       },
       "(mul): rhs has type int32, expected float32"},
      {"a comparison that is not bool",
       [](KernelIR& ir) {
         uint32_t f = ir.emit(IrOp::Literal, kF, {}, 1);
         ir.emit(IrOp::Lt, kF, {f, f});
       },
       "(lt): comparison result must be bool"},
      {"a comparison of two types",
       [](KernelIR& ir) {
         uint32_t f = ir.emit(IrOp::Literal, kF, {}, 1), i = ir.emit(IrOp::Literal, kI, {}, 1);
         ir.emit(IrOp::Eq, kB, {f, i});
       },
       "(eq): operands differ in type"},
      {"fma of bools", on(IrOp::Fma, kB, 3), "(fma): needs a numeric type"},
      {"a select with a float mask", on(IrOp::Select, kF, 3), "(select): mask must be bool"},
  });
}

// --- regions -----------------------------------------------------------------------------------

namespace {

/// A region marker (type Bool) with operand `a` and `imm`.
uint32_t mark(KernelIR& ir, IrOp op, uint32_t a = kNoOperand, uint64_t imm = 0, ScalarType t = kB) {
  return ir.emit(op, t, {a}, imm);
}

uint32_t lit(KernelIR& ir, ScalarType t, uint64_t bits = 1) {
  return ir.emit(IrOp::Literal, t, {}, bits);
}

/// Values 0: x (float32), 1: t (bool true), 2: u (uint32), 3: n (int32), which the region
/// rules below start from.
void region_values(KernelIR& ir) {
  lit(ir, kF, 0x3f800000);
  lit(ir, kB);
  lit(ir, kU, 1);
  lit(ir, kI, 3);
}

constexpr uint32_t kX = 0, kT = 1, kUx = 2, kN = 3;

/// A valid kernel with every region kind, nested: a loop over a float and a counter whose body
/// holds an if whose then part calls one of three targets (one of which loops); a gather and
/// a scatter_add inside, the results stored. Params as rule_base().
KernelIR nested_regions_kernel() {
  KernelIR ir = rule_base();
  uint32_t x = ir.emit(IrOp::Load, kF, {0});
  uint32_t idx = ir.emit(IrOp::Load, kU, {2});
  uint32_t all = lit(ir, kB);
  uint32_t zero = lit(ir, kU, 0), one = lit(ir, kU, 1), four = lit(ir, kU, 4);
  mark(ir, IrOp::LoopBegin, kNoOperand, 100);
  uint32_t v = ir.emit(IrOp::LoopVar, kF, {x});
  uint32_t c = ir.emit(IrOp::LoopVar, kU, {zero});
  mark(ir, IrOp::LoopCond, ir.emit(IrOp::Lt, kB, {c, four}));
  mark(ir, IrOp::IfBegin, ir.emit(IrOp::Eq, kB, {ir.emit(IrOp::And, kU, {c, one}), zero}));
  mark(ir, IrOp::CallBegin, ir.emit(IrOp::Mod, kU, {idx, lit(ir, kU, 3)}), 3);
  ir.emit(IrOp::Yield, kF, {ir.emit(IrOp::Gather, kF, {0, c, all, 3})});
  mark(ir, IrOp::CallCase);
  ir.emit(IrOp::ScatterAdd, kF, {6, idx, all, v, 3});
  ir.emit(IrOp::Yield, kF, {ir.emit(IrOp::Sin, kF, {v})});
  mark(ir, IrOp::CallCase);
  mark(ir, IrOp::LoopBegin, kNoOperand, kNoIterationLimit);
  uint32_t w = ir.emit(IrOp::LoopVar, kF, {v});
  mark(ir, IrOp::LoopCond, ir.emit(IrOp::Gt, kB, {w, ir.emit(IrOp::Scalar, kF, {5})}));
  ir.emit(IrOp::Yield, kF, {ir.emit(IrOp::Mul, kF, {w, lit(ir, kF, 0x3f000000)})});
  mark(ir, IrOp::EndRegion);
  ir.emit(IrOp::Yield, kF, {ir.emit(IrOp::Result, kF)});
  mark(ir, IrOp::EndRegion);
  ir.emit(IrOp::Yield, kF, {ir.emit(IrOp::Result, kF)});
  mark(ir, IrOp::IfElse);
  ir.emit(IrOp::Yield, kF, {ir.emit(IrOp::Neg, kF, {v})});
  mark(ir, IrOp::EndRegion);
  uint32_t r = ir.emit(IrOp::Result, kF);
  uint32_t next = ir.emit(IrOp::Add, kU, {c, one});
  ir.emit(IrOp::Yield, kF, {r});
  ir.emit(IrOp::Yield, kU, {next});
  mark(ir, IrOp::EndRegion);
  uint32_t fv = ir.emit(IrOp::Result, kF);
  ir.emit(IrOp::Result, kU);
  ir.emit(IrOp::Store, kF, {1, ir.emit(IrOp::Add, kF, {fv, x})});  // x: from before the loop
  ir.finalize();
  return ir;
}

}  // namespace

TEST_CASE("kernel IR regions: valid nested regions validate and round-trip with their hash",
          "[ir][regions]") {
  KernelIR ir = nested_regions_kernel();
  REQUIRE_NOTHROW(ir.validate());
  std::vector<std::byte> bytes = ir.serialize();
  KernelIR back = KernelIR::deserialize(bytes);
  CHECK(back.hash == ir.hash);
  CHECK(back.serialize() == bytes);
  CHECK(back.instrs == ir.instrs);
  CHECK(back.to_string() == ir.to_string());
  CHECK(KernelIR::load(bytes)->hash == ir.hash);
  // Another iteration limit is another kernel.
  KernelIR other = ir;
  for (IrInstr& in : other.instrs)
    if (in.op == IrOp::LoopBegin && in.imm == 100)
      in.imm = 101;
  other.finalize();
  CHECK(other.hash != ir.hash);
  CHECK_NOTHROW(other.validate());
}

TEST_CASE("kernel IR regions: the listing indents region contents one step per level",
          "[ir][regions]") {
  KernelIR ir;
  ir.params = {{ParamKind::BufferOut, kU}};
  uint32_t zero = lit(ir, kU, 0), ten = lit(ir, kU, 10);
  mark(ir, IrOp::LoopBegin, kNoOperand, 5);
  uint32_t c = ir.emit(IrOp::LoopVar, kU, {zero});
  mark(ir, IrOp::LoopCond, ir.emit(IrOp::Lt, kB, {c, ten}));
  mark(ir, IrOp::IfBegin, ir.emit(IrOp::Eq, kB, {c, zero}));
  ir.emit(IrOp::Yield, kU, {ten});
  mark(ir, IrOp::IfElse);
  ir.emit(IrOp::Yield, kU, {c});
  mark(ir, IrOp::EndRegion);
  uint32_t r = ir.emit(IrOp::Result, kU);
  ir.emit(IrOp::Yield, kU, {ir.emit(IrOp::Add, kU, {r, ten})});
  mark(ir, IrOp::EndRegion);
  uint32_t out = ir.emit(IrOp::Result, kU);
  mark(ir, IrOp::CallBegin, out, 2);
  ir.emit(IrOp::Yield, kU, {out});
  mark(ir, IrOp::CallCase);
  ir.emit(IrOp::Yield, kU, {zero});
  mark(ir, IrOp::EndRegion);
  ir.emit(IrOp::Store, kU, {0, ir.emit(IrOp::Result, kU)});
  ir.finalize();
  REQUIRE_NOTHROW(ir.validate());
  std::string listing = ir.to_string();
  std::string body = listing.substr(listing.find("  %0"));
  CHECK(body ==
        "  %0 = literal.uint32 imm=0\n"
        "  %1 = literal.uint32 imm=10\n"
        "  %2 = loop.bool imm=5\n"
        "    %3 = loop_var.uint32 0\n"
        "    %4 = lt.bool 3 1\n"
        "  %5 = loop_cond.bool 4\n"
        "    %6 = eq.bool 3 0\n"
        "    %7 = if.bool 6\n"
        "      %8 = yield.uint32 1\n"
        "    %9 = else.bool\n"
        "      %10 = yield.uint32 3\n"
        "    %11 = end.bool\n"
        "    %12 = result.uint32\n"
        "    %13 = add.uint32 12 1\n"
        "    %14 = yield.uint32 13\n"
        "  %15 = end.bool\n"
        "  %16 = result.uint32\n"
        "  %17 = call.bool 16 imm=2\n"
        "    %18 = yield.uint32 16\n"
        "  %19 = case.bool\n"
        "    %20 = yield.uint32 0\n"
        "  %21 = end.bool\n"
        "  %22 = result.uint32\n"
        "  %23 = store.uint32 0 22\n");
  // Without an iteration limit, the loop shows no imm.
  ir.instrs[2].imm = kNoIterationLimit;
  CHECK_THAT(ir.to_string(), Contains("  %2 = loop.bool\n"));
}

TEST_CASE("kernel IR validation refuses regions out of order",
          "[ir][validate][negative][regions]") {
  check_ir_rules({
      {"a region never closed",
       [](KernelIR& ir) {
         region_values(ir);
         mark(ir, IrOp::LoopBegin, kNoOperand, kNoIterationLimit);
         mark(ir, IrOp::LoopCond, kT);
       },
       "kernel IR: the region opened at instruction 4 (loop) is not closed"},
      {"an inner region never closed",
       [](KernelIR& ir) {
         region_values(ir);
         mark(ir, IrOp::IfBegin, kT);
         mark(ir, IrOp::IfElse);
         mark(ir, IrOp::CallBegin, kUx, 2);
       },
       "the region opened at instruction 6 (call) is not closed"},
      {"an end with no region open",
       [](KernelIR& ir) {
         region_values(ir);
         mark(ir, IrOp::EndRegion);
       },
       "instruction 4 (end): no region is open"},
      {"an end after the region's own end",
       [](KernelIR& ir) {
         region_values(ir);
         mark(ir, IrOp::IfBegin, kT);
         mark(ir, IrOp::IfElse);
         mark(ir, IrOp::EndRegion);
         mark(ir, IrOp::EndRegion);
       },
       "instruction 7 (end): no region is open"},
      {"a carried value after the condition started",
       [](KernelIR& ir) {
         region_values(ir);
         mark(ir, IrOp::LoopBegin, kNoOperand, kNoIterationLimit);
         ir.emit(IrOp::LoopVar, kF, {kX});
         ir.emit(IrOp::Neg, kF, {kX});
         ir.emit(IrOp::LoopVar, kF, {kX});
       },
       "instruction 7 (loop_var): carried values must directly follow their LoopBegin"},
      {"a carried value in a loop body",
       [](KernelIR& ir) {
         region_values(ir);
         mark(ir, IrOp::LoopBegin, kNoOperand, kNoIterationLimit);
         mark(ir, IrOp::LoopCond, kT);
         ir.emit(IrOp::LoopVar, kF, {kX});
       },
       "instruction 6 (loop_var): carried values must directly follow their LoopBegin"},
      {"a carried value outside a loop",
       [](KernelIR& ir) {
         region_values(ir);
         ir.emit(IrOp::LoopVar, kF, {kX});
       },
       "instruction 4 (loop_var): carried values must directly follow their LoopBegin"},
      {"a carried value directly inside an if in a loop",
       [](KernelIR& ir) {
         region_values(ir);
         mark(ir, IrOp::LoopBegin, kNoOperand, kNoIterationLimit);
         mark(ir, IrOp::LoopCond, kT);
         mark(ir, IrOp::IfBegin, kT);
         ir.emit(IrOp::LoopVar, kF, {kX});
       },
       "instruction 7 (loop_var): carried values must directly follow their LoopBegin"},
      {"a loop without a condition",
       [](KernelIR& ir) {
         region_values(ir);
         mark(ir, IrOp::LoopBegin, kNoOperand, kNoIterationLimit);
         ir.emit(IrOp::LoopVar, kF, {kX});
         mark(ir, IrOp::EndRegion);
       },
       "instruction 6 (end): the loop has no condition"},
      {"a loop condition outside a loop",
       [](KernelIR& ir) {
         region_values(ir);
         mark(ir, IrOp::IfBegin, kT);
         mark(ir, IrOp::LoopCond, kT);
       },
       "instruction 5 (loop_cond): a loop condition must end the condition part of a loop"},
      {"a second loop condition",
       [](KernelIR& ir) {
         region_values(ir);
         mark(ir, IrOp::LoopBegin, kNoOperand, kNoIterationLimit);
         mark(ir, IrOp::LoopCond, kT);
         mark(ir, IrOp::LoopCond, kT);
       },
       "instruction 6 (loop_cond): a loop condition must end the condition part of a loop"},
      {"a loop condition that is not bool",
       [](KernelIR& ir) {
         region_values(ir);
         mark(ir, IrOp::LoopBegin, kNoOperand, kNoIterationLimit);
         mark(ir, IrOp::LoopCond, kUx);
       },
       "instruction 5 (loop_cond): condition must be bool"},
      {"an else outside an if",
       [](KernelIR& ir) {
         region_values(ir);
         mark(ir, IrOp::IfElse);
       },
       "instruction 4 (else): else must separate the two parts of an if"},
      {"an else in a call",
       [](KernelIR& ir) {
         region_values(ir);
         mark(ir, IrOp::CallBegin, kUx, 2);
         mark(ir, IrOp::IfElse);
       },
       "instruction 5 (else): else must separate the two parts of an if"},
      {"a second else",
       [](KernelIR& ir) {
         region_values(ir);
         mark(ir, IrOp::IfBegin, kT);
         mark(ir, IrOp::IfElse);
         mark(ir, IrOp::IfElse);
       },
       "instruction 6 (else): else must separate the two parts of an if"},
      {"an if without an else",
       [](KernelIR& ir) {
         region_values(ir);
         mark(ir, IrOp::IfBegin, kT);
         mark(ir, IrOp::EndRegion);
       },
       "instruction 5 (end): the region has 1 parts, not 2"},
      {"a case beyond the call's targets",
       [](KernelIR& ir) {
         region_values(ir);
         mark(ir, IrOp::CallBegin, kUx, 2);
         mark(ir, IrOp::CallCase);
         mark(ir, IrOp::CallCase);
       },
       "instruction 6 (case): more cases than the call has targets"},
      {"a case outside a call",
       [](KernelIR& ir) {
         region_values(ir);
         mark(ir, IrOp::IfBegin, kT);
         mark(ir, IrOp::CallCase);
       },
       "instruction 5 (case): more cases than the call has targets"},
      {"a call with fewer targets than it declares",
       [](KernelIR& ir) {
         region_values(ir);
         mark(ir, IrOp::CallBegin, kUx, 3);
         mark(ir, IrOp::CallCase);
         mark(ir, IrOp::EndRegion);
       },
       "instruction 6 (end): the region has 2 parts, not 3"},
      {"a yield outside any region",
       [](KernelIR& ir) {
         region_values(ir);
         ir.emit(IrOp::Yield, kF, {kX});
       },
       "instruction 4 (yield): a yield must end a loop body or a part of a branch or call"},
      {"a yield in a loop condition",
       [](KernelIR& ir) {
         region_values(ir);
         mark(ir, IrOp::LoopBegin, kNoOperand, kNoIterationLimit);
         ir.emit(IrOp::LoopVar, kF, {kX});
         ir.emit(IrOp::Yield, kF, {kX});
       },
       "instruction 6 (yield): a yield must end a loop body or a part of a branch or call"},
      {"an instruction after a yield",
       [](KernelIR& ir) {
         region_values(ir);
         mark(ir, IrOp::IfBegin, kT);
         ir.emit(IrOp::Yield, kF, {kX});
         ir.emit(IrOp::Neg, kF, {kX});
       },
       "instruction 6 (neg): yields must end their part: only yields and the part's end may "
       "follow one"},
      {"a region opened after a yield",
       [](KernelIR& ir) {
         region_values(ir);
         mark(ir, IrOp::LoopBegin, kNoOperand, kNoIterationLimit);
         ir.emit(IrOp::LoopVar, kF, {kX});
         mark(ir, IrOp::LoopCond, kT);
         ir.emit(IrOp::Yield, kF, {kX});
         mark(ir, IrOp::IfBegin, kT);
       },
       "instruction 8 (if): yields must end their part"},
      {"a region nested deeper than kMaxRegionDepth",
       [](KernelIR& ir) {
         region_values(ir);
         for (int d = 0; d <= kMaxRegionDepth; ++d)
           mark(ir, IrOp::IfBegin, kT);
       },
       "instruction " + std::to_string(4 + kMaxRegionDepth) + " (if): regions nest deeper than " +
           std::to_string(kMaxRegionDepth)},
  });
}

TEST_CASE("kernel IR validation refuses region markers of the wrong types",
          "[ir][validate][negative][regions]") {
  check_ir_rules({
      {"an if mask that is not bool",
       [](KernelIR& ir) {
         region_values(ir);
         mark(ir, IrOp::IfBegin, kX);
       },
       "instruction 4 (if): mask must be bool"},
      {"a call index that is not uint32",
       [](KernelIR& ir) {
         region_values(ir);
         mark(ir, IrOp::CallBegin, kN, 2);
       },
       "instruction 4 (call): index must be uint32"},
      {"a call index of 64 bits",
       [](KernelIR& ir) {
         region_values(ir);
         mark(ir, IrOp::CallBegin, lit(ir, kU64, 1), 2);
       },
       "instruction 5 (call): index must be uint32"},
      {"a call with no targets",
       [](KernelIR& ir) {
         region_values(ir);
         mark(ir, IrOp::CallBegin, kUx, 0);
       },
       "instruction 4 (call): needs 1 to 1024 targets, not 0"},
      {"a call with more than kMaxCallTargets targets",
       [](KernelIR& ir) {
         region_values(ir);
         mark(ir, IrOp::CallBegin, kUx, kMaxCallTargets + 1);
       },
       "needs 1 to 1024 targets, not 1025"},
      {"a call with 2^32 + 1 targets",  // only the low half would be in range
       [](KernelIR& ir) {
         region_values(ir);
         mark(ir, IrOp::CallBegin, kUx, (uint64_t{1} << 32) + 1);
       },
       "needs 1 to 1024 targets, not 4294967297"},
      {"a loop begin of type float",
       [](KernelIR& ir) {
         region_values(ir);
         mark(ir, IrOp::LoopBegin, kNoOperand, kNoIterationLimit, kF);
       },
       "instruction 4 (loop): a region marker has type bool"},
      {"an end of type uint32",
       [](KernelIR& ir) {
         region_values(ir);
         mark(ir, IrOp::IfBegin, kT);
         mark(ir, IrOp::IfElse, kNoOperand, 0, kU);
       },
       "instruction 5 (else): a region marker has type bool"},
      {"a loop condition of type int32",
       [](KernelIR& ir) {
         region_values(ir);
         mark(ir, IrOp::LoopBegin, kNoOperand, kNoIterationLimit);
         mark(ir, IrOp::LoopCond, kT, 0, kI);
       },
       "instruction 5 (loop_cond): a region marker has type bool"},
      {"a carried value whose initial value has another type",
       [](KernelIR& ir) {
         region_values(ir);
         mark(ir, IrOp::LoopBegin, kNoOperand, kNoIterationLimit);
         ir.emit(IrOp::LoopVar, kI, {kX});
       },
       "instruction 5 (loop_var): the initial value must be of the carried value's type, "
       "defined before the loop"},
      {"a carried value whose initial value is another carried value",
       [](KernelIR& ir) {
         region_values(ir);
         mark(ir, IrOp::LoopBegin, kNoOperand, kNoIterationLimit);
         uint32_t v = ir.emit(IrOp::LoopVar, kF, {kX});
         ir.emit(IrOp::LoopVar, kF, {v});
       },
       "instruction 6 (loop_var): the initial value must be of the carried value's type, "
       "defined before the loop"},
      {"a carried value whose initial value is later",
       [](KernelIR& ir) {
         region_values(ir);
         mark(ir, IrOp::LoopBegin, kNoOperand, kNoIterationLimit);
         ir.emit(IrOp::LoopVar, kF, {6});
       },
       "instruction 5 (loop_var): initial value names value 6, which is not an earlier "
       "instruction"},
      {"a yield of another type than its value",
       [](KernelIR& ir) {
         region_values(ir);
         mark(ir, IrOp::IfBegin, kT);
         ir.emit(IrOp::Yield, kI, {kX});
       },
       "instruction 5 (yield): a yield has its value's type"},
      {"a yield naming a side effect",
       [](KernelIR& ir) {
         region_values(ir);
         mark(ir, IrOp::IfBegin, kT);
         uint32_t st = ir.emit(IrOp::Store, kF, {1, kX});
         ir.emit(IrOp::Yield, kF, {st});
       },
       "instruction 6 (yield): value names value 5, a side effect"},
  });
}

TEST_CASE("kernel IR validation matches yields, carried values and results",
          "[ir][validate][negative][regions]") {
  // A loop over x (float32) with `yields` in its body.
  auto loop = [](std::function<void(KernelIR&)> yields) {
    return [=](KernelIR& ir) {
      region_values(ir);
      mark(ir, IrOp::LoopBegin, kNoOperand, kNoIterationLimit);
      ir.emit(IrOp::LoopVar, kF, {kX});
      mark(ir, IrOp::LoopCond, kT);
      yields(ir);
      mark(ir, IrOp::EndRegion);
    };
  };
  // An if, or a call of two targets, whose parts yield `first` and `second`; then `after`.
  auto two_parts = [](IrOp open, std::function<void(KernelIR&)> first,
                      std::function<void(KernelIR&)> second,
                      std::function<void(KernelIR&)> after = nullptr) {
    return [=](KernelIR& ir) {
      region_values(ir);
      if (open == IrOp::IfBegin)
        mark(ir, IrOp::IfBegin, kT);
      else
        mark(ir, IrOp::CallBegin, kUx, 2);
      first(ir);
      mark(ir, open == IrOp::IfBegin ? IrOp::IfElse : IrOp::CallCase);
      second(ir);
      mark(ir, IrOp::EndRegion);
      if (after)
        after(ir);
    };
  };
  auto yield = [](ScalarType t, uint32_t v) {
    return [=](KernelIR& ir) { ir.emit(IrOp::Yield, t, {v}); };
  };
  auto yield_x = yield(kF, kX);
  auto yield_n = yield(kI, kN);
  auto none = [](KernelIR&) {};
  auto both = [](KernelIR& ir) {
    ir.emit(IrOp::Yield, kF, {kX});
    ir.emit(IrOp::Yield, kI, {kN});
  };
  check_ir_rules({
      {"a loop body with fewer yields than carried values", loop(none),
       "instruction 7 (end): the part ends with 0 yields that do not match the 1 carried values "
       "in number and types"},
      {"a loop body with more yields than carried values", loop(both),
       "instruction 9 (end): the part ends with 2 yields that do not match the 1 carried values"},
      {"a loop body yielding another type", loop(yield_n),
       "instruction 8 (end): the part ends with 1 yields that do not match the 1 carried values"},
      {"an else part with fewer yields", two_parts(IrOp::IfBegin, yield_x, none),
       "instruction 7 (end): the part ends with 0 yields that do not match the 1 of the region's "
       "first part in number and types"},
      {"an else part with more yields", two_parts(IrOp::IfBegin, yield_x, both),
       "instruction 9 (end): the part ends with 2 yields that do not match the 1 of the region's "
       "first part"},
      {"an else part yielding another type", two_parts(IrOp::IfBegin, yield_x, yield_n),
       "instruction 8 (end): the part ends with 1 yields that do not match the 1 of the region's "
       "first part"},
      {"a call target yielding another type", two_parts(IrOp::CallBegin, yield_x, yield_n),
       "instruction 8 (end): the part ends with 1 yields that do not match the 1 of the region's "
       "first part"},
      {"a call target with fewer yields", two_parts(IrOp::CallBegin, both, yield_n),
       "instruction 9 (end): the part ends with 1 yields that do not match the 2 of the region's "
       "first part"},
      {"a middle call target that differs",
       [](KernelIR& ir) {
         region_values(ir);
         mark(ir, IrOp::CallBegin, kUx, 3);
         ir.emit(IrOp::Yield, kF, {kX});
         mark(ir, IrOp::CallCase);
         ir.emit(IrOp::Yield, kI, {kN});
         mark(ir, IrOp::CallCase);
       },
       "instruction 8 (case): the part ends with 1 yields that do not match the 1 of the "
       "region's first part"},
      {"too few results before the next instruction",
       two_parts(IrOp::IfBegin, both, both,
                 [](KernelIR& ir) {
                   ir.emit(IrOp::Result, kF);
                   ir.emit(IrOp::Neg, kF, {kX});
                 }),
       "instruction 12 (neg): the region closed at instruction 10 needs 2 results, it has 1"},
      {"no results before the next region",
       two_parts(IrOp::CallBegin, yield_x, yield_x,
                 [](KernelIR& ir) { mark(ir, IrOp::IfBegin, kT); }),
       "instruction 9 (if): the region closed at instruction 8 needs 1 results, it has 0"},
      {"the kernel ends before the results",
       two_parts(IrOp::IfBegin, both, both, [](KernelIR& ir) { ir.emit(IrOp::Result, kF); }),
       "kernel IR: the region closed by the last instruction needs 2 results, the kernel ends "
       "after 1"},
      {"the kernel ends right after a loop with a carried value", loop(yield_x),
       "the region closed by the last instruction needs 1 results, the kernel ends after 0"},
      {"a result without a region",
       [](KernelIR& ir) {
         region_values(ir);
         ir.emit(IrOp::Result, kF);
       },
       "instruction 4 (result): a result must follow the end of a region, one per yield"},
      {"more results than yields",
       two_parts(IrOp::IfBegin, yield_x, yield_x,
                 [](KernelIR& ir) {
                   ir.emit(IrOp::Result, kF);
                   ir.emit(IrOp::Result, kF);
                 }),
       "instruction 10 (result): a result must follow the end of a region, one per yield"},
      {"a result after another instruction",
       two_parts(IrOp::IfBegin, none, none,
                 [](KernelIR& ir) {
                   ir.emit(IrOp::Neg, kF, {kX});
                   ir.emit(IrOp::Result, kF);
                 }),
       "instruction 8 (result): a result must follow the end of a region, one per yield"},
      {"a result of another type",
       two_parts(IrOp::IfBegin, both, both, [](KernelIR& ir) { ir.emit(IrOp::Result, kI); }),
       "instruction 11 (result): result 0 has type float32"},
      {"a second result of another type",
       two_parts(IrOp::IfBegin, both, both,
                 [](KernelIR& ir) {
                   ir.emit(IrOp::Result, kF);
                   ir.emit(IrOp::Result, kU);
                 }),
       "instruction 12 (result): result 1 has type int32"},
      {"a loop result of another type",
       [](KernelIR& ir) {
         region_values(ir);
         mark(ir, IrOp::LoopBegin, kNoOperand, 4);
         ir.emit(IrOp::LoopVar, kU, {kUx});
         mark(ir, IrOp::LoopCond, kT);
         ir.emit(IrOp::Yield, kU, {kUx});
         mark(ir, IrOp::EndRegion);
         ir.emit(IrOp::Result, kI);
       },
       "instruction 9 (result): result 0 has type uint32"},
  });
}

TEST_CASE("kernel IR validation scopes the values of a region to it",
          "[ir][validate][negative][regions]") {
  const std::string inside = ", defined inside a region part this instruction is not in";
  check_ir_rules({
      {"a loop body's value after the loop",
       [](KernelIR& ir) {
         region_values(ir);
         mark(ir, IrOp::LoopBegin, kNoOperand, kNoIterationLimit);
         mark(ir, IrOp::LoopCond, kT);
         ir.emit(IrOp::Neg, kF, {kX});
         mark(ir, IrOp::EndRegion);
         ir.emit(IrOp::Neg, kF, {6});
       },
       "instruction 8 (neg): operand names value 6" + inside},
      {"a loop condition's value after the loop",
       [](KernelIR& ir) {
         region_values(ir);
         mark(ir, IrOp::LoopBegin, kNoOperand, kNoIterationLimit);
         uint32_t c = ir.emit(IrOp::Not, kB, {kT});
         mark(ir, IrOp::LoopCond, c);
         mark(ir, IrOp::EndRegion);
         ir.emit(IrOp::Not, kB, {c});
       },
       "instruction 8 (not): operand names value 5" + inside},
      {"a carried value after the loop",
       [](KernelIR& ir) {
         region_values(ir);
         mark(ir, IrOp::LoopBegin, kNoOperand, kNoIterationLimit);
         uint32_t v = ir.emit(IrOp::LoopVar, kF, {kX});
         mark(ir, IrOp::LoopCond, kT);
         ir.emit(IrOp::Yield, kF, {v});
         mark(ir, IrOp::EndRegion);
         ir.emit(IrOp::Result, kF);
         ir.emit(IrOp::Store, kF, {1, v});
       },
       "instruction 10 (store): value names value 5" + inside},
      {"a then part's value in the else part",
       [](KernelIR& ir) {
         region_values(ir);
         mark(ir, IrOp::IfBegin, kT);
         uint32_t v = ir.emit(IrOp::Neg, kF, {kX});
         mark(ir, IrOp::IfElse);
         ir.emit(IrOp::Neg, kF, {v});
       },
       "instruction 7 (neg): operand names value 5" + inside},
      {"an else part's value after the if",
       [](KernelIR& ir) {
         region_values(ir);
         mark(ir, IrOp::IfBegin, kT);
         mark(ir, IrOp::IfElse);
         uint32_t v = ir.emit(IrOp::Neg, kF, {kX});
         mark(ir, IrOp::EndRegion);
         ir.emit(IrOp::Store, kF, {1, v});
       },
       "instruction 8 (store): value names value 6" + inside},
      {"a then part's value yielded by the else part",
       [](KernelIR& ir) {
         region_values(ir);
         mark(ir, IrOp::IfBegin, kT);
         uint32_t v = ir.emit(IrOp::Neg, kF, {kX});
         ir.emit(IrOp::Yield, kF, {v});
         mark(ir, IrOp::IfElse);
         ir.emit(IrOp::Yield, kF, {v});
       },
       "instruction 8 (yield): value names value 5" + inside},
      {"a call target's value in the next target",
       [](KernelIR& ir) {
         region_values(ir);
         mark(ir, IrOp::CallBegin, kUx, 3);
         mark(ir, IrOp::CallCase);
         uint32_t v = ir.emit(IrOp::Neg, kF, {kX});
         mark(ir, IrOp::CallCase);
         ir.emit(IrOp::Neg, kF, {v});
       },
       "instruction 8 (neg): operand names value 6" + inside},
      {"a call target's value after the call",
       [](KernelIR& ir) {
         region_values(ir);
         mark(ir, IrOp::CallBegin, kUx, 1);
         uint32_t v = ir.emit(IrOp::Neg, kF, {kX});
         mark(ir, IrOp::EndRegion);
         ir.emit(IrOp::Neg, kF, {v});
       },
       "instruction 7 (neg): operand names value 5" + inside},
      {"an inner loop's value in the outer loop's body",
       [](KernelIR& ir) {
         region_values(ir);
         mark(ir, IrOp::LoopBegin, kNoOperand, kNoIterationLimit);
         mark(ir, IrOp::LoopCond, kT);
         mark(ir, IrOp::LoopBegin, kNoOperand, 3);
         mark(ir, IrOp::LoopCond, kT);
         uint32_t v = ir.emit(IrOp::Neg, kF, {kX});
         mark(ir, IrOp::EndRegion);
         ir.emit(IrOp::Neg, kF, {v});
       },
       "instruction 10 (neg): operand names value 8" + inside},
      {"a region's value in a gather's mask after it",
       [](KernelIR& ir) {
         region_values(ir);
         mark(ir, IrOp::IfBegin, kT);
         uint32_t m = ir.emit(IrOp::Not, kB, {kT});
         mark(ir, IrOp::IfElse);
         mark(ir, IrOp::EndRegion);
         ir.emit(IrOp::Gather, kF, {0, kUx, m, 3});
       },
       "instruction 8 (gather): mask names value 5" + inside},
  });
}

TEST_CASE("kernel IR validation accepts what the region rules allow", "[ir][validate][regions]") {
  // Values from before a region inside it and after it, in every part; loops without carried
  // values; a call of one target and of kMaxCallTargets; regions nested exactly
  // kMaxRegionDepth deep; results used by a later region; a region in a loop condition.
  KernelIR ir = rule_base();
  region_values(ir);
  mark(ir, IrOp::LoopBegin, kNoOperand, 0);
  mark(ir, IrOp::LoopCond, kT);
  ir.emit(IrOp::Store, kF, {1, kX});
  mark(ir, IrOp::EndRegion);
  mark(ir, IrOp::CallBegin, kUx, kMaxCallTargets);
  for (uint64_t t = 0; t < kMaxCallTargets; ++t) {
    if (t)
      mark(ir, IrOp::CallCase);
    ir.emit(IrOp::Yield, kF, {kX});
  }
  mark(ir, IrOp::EndRegion);
  uint32_t r = ir.emit(IrOp::Result, kF);
  for (int d = 0; d < kMaxRegionDepth; ++d)
    mark(ir, IrOp::IfBegin, kT);
  ir.emit(IrOp::Store, kF, {1, r});
  for (int d = 0; d < kMaxRegionDepth; ++d) {
    mark(ir, IrOp::IfElse);
    mark(ir, IrOp::EndRegion);
  }
  mark(ir, IrOp::LoopBegin, kNoOperand, kNoIterationLimit);
  uint32_t v = ir.emit(IrOp::LoopVar, kF, {r});
  mark(ir, IrOp::IfBegin, ir.emit(IrOp::Lt, kB, {v, kX}));
  ir.emit(IrOp::Yield, kB, {kT});
  mark(ir, IrOp::IfElse);
  ir.emit(IrOp::Yield, kB, {ir.emit(IrOp::Not, kB, {kT})});
  mark(ir, IrOp::EndRegion);
  mark(ir, IrOp::LoopCond, ir.emit(IrOp::Result, kB));
  ir.emit(IrOp::Yield, kF, {ir.emit(IrOp::Add, kF, {v, kX})});
  mark(ir, IrOp::EndRegion);
  ir.emit(IrOp::Store, kF, {1, ir.emit(IrOp::Add, kF, {ir.emit(IrOp::Result, kF), kX})});
  ir.finalize();
  CHECK_NOTHROW(ir.validate());
  CHECK(KernelIR::deserialize(ir.serialize()).hash == ir.hash);
}
