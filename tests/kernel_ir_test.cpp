// The kernel IR's serialised form from outside (a recording file, another process): every
// malformation is an ff::FormatError naming it; a kernel's bytes are canonical, so its hash
// identifies it.
#include "backend/ir/kernel_ir.h"

#include <catch2/catch.hpp>
#include <cstring>
#include <string>
#include <vector>

#include "freezeframe/errors.h"

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
  try {
    (void)KernelIR::deserialize(bytes);
  } catch (const FormatError& e) {
    return e.what();
  }
  FAIL("no ff::FormatError");
  return {};
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
