// The backend-neutral kernel IR: what the tracer emits, backends compile and recordings store.
//
// A kernel is an SSA program executed once per element index i in [0, size), straight-line
// apart from its structured regions (loops, branches, calls; see IrOp::LoopBegin).
// Instruction k defines value k; operands refer to earlier instructions by index. Sizes never
// appear in the IR (a gather's bound is a Scalar parameter), so the same code at another size
// hashes to the same kernel. docs/kernel-ir.md describes every opcode's semantics.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "backend/ir/types.h"
#include "common/hash.h"

namespace ff {

/// IR opcodes. Persisted: never renumber, only append.
enum class IrOp : uint8_t {
  // Leaves.
  Index = 0,          // element index i, converted to `type`
  Literal = 1,        // imm: bit pattern of a `type` value (bool: 0/1, float32: low 32 bits)
  Scalar = 2,         // a: index of a Scalar parameter; value is uniform over the launch
  Load = 3,           // a: buffer parameter; value = buf[i]
  LoadBroadcast = 4,  // a: buffer parameter; value = buf[0] (size-1 operand)
  Gather = 5,         // a: buffer param, b: index value, c: mask value (Bool), d: Scalar param
                      // holding the buffer's element count. Reads 0 where masked or out of range.
  // Side effects (type = the stored element type; they define no usable value, except
  // ScatterInc's).
  Store = 6,       // a: buffer param, b: value. buf[i] = value
  Scatter = 7,     // a: buffer param, b: index, c: mask, d: value, e: Scalar param (bound).
                   // Writes are dropped where masked or out of range.
  ScatterAdd = 8,  // as Scatter, but an atomic buf[index] += value
  // Unary (a).
  Neg = 9,
  Not = 10,
  Abs = 11,
  Sqrt = 12,
  Exp = 13,
  Log = 14,
  Sin = 15,
  Cos = 16,
  Floor = 17,
  Ceil = 18,
  Cast = 19,     // numeric conversion from the type of a to `type`
  Bitcast = 20,  // reinterpretation; both types have the same width
  // Binary (a, b).
  Add = 21,
  Sub = 22,
  Mul = 23,
  Div = 24,
  Mod = 25,
  Min = 26,
  Max = 27,
  And = 28,
  Or = 29,
  Xor = 30,
  Shl = 31,
  Shr = 32,
  Eq = 33,
  Ne = 34,
  Lt = 35,
  Le = 36,
  Gt = 37,
  Ge = 38,  // type = Bool; operands share a type
  // Ternary.
  Fma = 39,     // a * b + c (fused for floats)
  Select = 40,  // a: Bool mask, b: value if true, c: value if false
  // Unary float math (a), after the first 41.
  Tan = 41,
  Asin = 42,
  Acos = 43,
  Atan = 44,
  Sinh = 45,
  Cosh = 46,
  Tanh = 47,
  Asinh = 48,
  Acosh = 49,
  Atanh = 50,
  Exp2 = 51,
  Log2 = 52,
  Erf = 53,
  Cbrt = 54,
  Round = 55,  // halfway cases away from zero (std::round)
  Trunc = 56,
  // Unary integer bit counts (a); the result has the operand's type.
  Popcnt = 57,
  Clz = 58,  // clz(0) == the bit width
  Ctz = 59,  // ctz(0) == the bit width
  // Binary float math (a, b).
  Atan2 = 60,     // atan2(a = y, b = x)
  Pow = 61,       // pow(a = base, b = exponent)
  Copysign = 62,  // |a| with the sign bit of b
  // Scatter-reductions (operands as ScatterAdd's): buf[index] = buf[index] op value, atomically.
  ScatterMul = 63,
  ScatterMin = 64,  // floats: NaN values are ignored, -0 is below +0 (docs/kernel-ir.md)
  ScatterMax = 65,
  ScatterAnd = 66,  // integers
  ScatterOr = 67,   // integers
  // A side effect that defines a value. a: UInt32 buffer param, b: index, c: mask, e: bound.
  // Atomically buf[index] += 1; the value is the element before the increment (0 where masked
  // or out of range, which increment nothing).
  ScatterInc = 68,
  // Structured regions (docs/kernel-ir.md, "Regions"). A region is a run of instructions
  // between an opening marker and EndRegion, executed by the lanes that enter it; it defines
  // values for the instructions after it only through the Results that directly follow its
  // EndRegion. Markers define no value except LoopVar and Result; their type is Bool.
  LoopBegin = 69,  // opens a loop; imm: the most iterations (kNoIterationLimit: none). Directly
                   // followed by its carried values (LoopVar), then the condition, LoopCond,
                   // the body, one Yield per carried value, EndRegion and one Result per
                   // carried value (its final value)
  LoopVar = 70,    // a: initial value (defined before the loop). Defines the carried value as
                   // seen by the condition and the body of this iteration; type = a's type
  LoopCond = 71,   // a: Bool. Ends the condition: a lane where it is false leaves the loop
  IfBegin = 72,    // a: Bool mask. The lanes where it is true run the first part, the others
                   // the second (after IfElse). Both parts end with the same Yields
  IfElse = 73,     // separates the two parts of an IfBegin
  CallBegin = 74,  // a: UInt32 index; imm: the number of targets N (1 ... kMaxCallTargets).
                   // Lane l runs target index[l]; a lane whose index is >= N runs none and
                   // gets zeros as results. Targets are separated by CallCase and end with
                   // the same Yields
  CallCase = 75,   // starts the next target of a CallBegin
  Yield = 76,      // a: value. Ends a part: a loop's next carried values, in LoopVar order, or
                   // a branch's or target's results; type = a's type
  EndRegion = 77,  // closes the innermost open region
  Result = 78,     // defines one result of the region just closed, in Yield order; type = the
                   // Yields' type
};
inline constexpr int kNumIrOps = 79;

/// LoopBegin's imm when the loop has no iteration limit.
inline constexpr uint64_t kNoIterationLimit = ~uint64_t{0};
/// The most targets a CallBegin may have, and the deepest nesting of regions.
inline constexpr uint64_t kMaxCallTargets = 1024;
inline constexpr int kMaxRegionDepth = 32;
const char* to_string(IrOp op);

/// Which operand fields of an instruction with opcode `op` it uses (bit 0 = a, ... bit 4 = e):
/// `values` name earlier instructions, `params` name parameters. A Gather or scatter of any
/// kind with kIrFlagReportRange also names a parameter in `imm`. Fields an opcode does not use are
/// not validated and may hold anything, so code that walks operands reads only these.
struct OperandRoles {
  uint8_t values = 0;
  uint8_t params = 0;
};

OperandRoles operand_roles(IrOp op);

inline constexpr uint32_t kNoOperand = 0xFFFFFFFFu;

/// Version of the serialised form (bytes 4-5 of KernelIR::serialize()). Recording files and
/// the on-disk kernel cache store it; a change to the form bumps it (docs/kernel-ir.md).
inline constexpr uint16_t kKernelIrVersion = 1;

/// Optional behaviour bits of an instruction.
enum IrFlags : uint16_t {
  /// Gather and every scatter kind: report the first out-of-range index through the debug report
  /// buffer parameter named in `imm` (FF_DEBUG=1): that UInt64 buffer's word 1 receives an
  /// offending index (widened to 64 bits), word 0 becomes 1 (it stays 0 when none).
  kIrFlagReportRange = 1,
};

struct IrInstr {
  IrOp op;
  ScalarType type;  // result type (side effects: the stored element type)
  uint16_t flags = 0;
  uint32_t a = kNoOperand, b = kNoOperand, c = kNoOperand, d = kNoOperand, e = kNoOperand;
  uint64_t imm = 0;
  friend bool operator==(const IrInstr&, const IrInstr&) = default;
};

static_assert(sizeof(IrInstr) == 32);

/// How a kernel parameter is passed: a buffer pointer or a 64-bit scalar value.
enum class ParamKind : uint8_t {
  BufferIn = 0,     // read only
  BufferOut = 1,    // written only (Store)
  BufferInOut = 2,  // read and written (scatters of every kind, debug report)
  Scalar = 3,       // a 64-bit value (bit pattern of `type`)
};
const char* to_string(ParamKind k);

struct IrParam {
  ParamKind kind;
  ScalarType type;  // element type of the buffer, or type of the scalar
  friend bool operator==(const IrParam&, const IrParam&) = default;
};

/// A kernel: parameters plus instructions. `hash` is XXH3-128 of `serialize()`.
///
/// Trust: a kernel made by validated() or load() is known valid (is_validated()): its IR passed
/// validate() and its hash is that of its contents. Such a kernel exists only as a
/// std::shared_ptr<const KernelIR>, so it cannot change afterwards; a copy of it is an ordinary
/// (unvalidated) KernelIR, since a copy can be edited. Backends compile a validated kernel
/// without checking it again, and check every other one.
struct KernelIR {
  std::vector<IrParam> params;
  std::vector<IrInstr> instrs;
  Hash128 hash;

  /// Canonical bytes (the identity of the kernel; what recordings store).
  std::vector<std::byte> serialize() const;
  /// Parses bytes from serialize() and validates them; throws ff::FormatError naming the
  /// problem (a malformed header or an invalid instruction alike).
  static KernelIR deserialize(std::span<const std::byte> bytes);
  /// The first half of deserialize(): the header (magic, version, reserved field) and the
  /// sizes it declares, without validating the instructions or computing the hash. Throws
  /// ff::FormatError.
  static KernelIR parse(std::span<const std::byte> bytes);
  /// deserialize(), as a kernel known valid (is_validated()).
  static std::shared_ptr<const KernelIR> load(std::span<const std::byte> bytes);
  /// An immutable copy of `ir` known valid: `ir` is validated (ff::FormatError) unless it is
  /// known valid already, and the copy's hash is computed from its contents (a caller that
  /// trusts `ir.hash` compares the two).
  static std::shared_ptr<const KernelIR> validated(const KernelIR& ir);
  /// validated(), moving `ir` instead of copying it.
  static std::shared_ptr<const KernelIR> validated(KernelIR&& ir);
  /// Recomputes `hash` from the canonical bytes.
  void finalize();
  /// Checks parameter kinds and types, operand indices, operand and result types per opcode,
  /// and flags; throws ff::FormatError naming the parameter or instruction (malformed IR is
  /// damaged input, docs/errors.md). Backends call it before compiling IR that is not
  /// is_validated().
  void validate() const;

  /// True for a kernel made by validated() or load() (never for a copy): it is valid, and
  /// `hash` matches its contents.
  bool is_validated() const { return validated_.set; }

  /// Human-readable listing, one instruction per line.
  std::string to_string() const;

  /// Appends an instruction with `operands` as a, b, c, ... (the rest kNoOperand) and returns
  /// its index: for kernels built by hand (the JIT warm-up, tests, benchmarks).
  uint32_t emit(IrOp op, ScalarType type, std::initializer_list<uint32_t> operands = {},
                uint64_t imm = 0, uint16_t flags = 0);

 private:
  /// Set only by validated() and load(), on an object no one can change; a copy or a move
  /// leaves it unset in the new object (which may be edited).
  struct Mark {
    bool set = false;
    Mark() = default;

    Mark(const Mark&) {}

    Mark& operator=(const Mark&) {
      set = false;
      return *this;
    }
  };

  Mark validated_;
};

/// How many times KernelIR::validate() has run in this process (a counter for the tests that
/// check a kernel is validated once).
uint64_t kernel_validations();

/// A kernel argument as passed to a launch: the pointer or scalar bit pattern.
using KernelArgBits = uint64_t;

}  // namespace ff
