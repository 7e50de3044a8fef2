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
