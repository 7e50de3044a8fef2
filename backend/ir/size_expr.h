// Size provenance as the tracer hands it to backends: where an element count came from.
//
// A size expression is a postfix sequence of nodes over constants and the logical sizes of
// live buffers (named by pointer). The recorder maps those pointers to slots, which is how a
// recording learns that an allocation has `width(x) - 1` elements rather than a constant.
// An empty span means "no provenance": the size is a plain constant.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>

namespace ff {

/// Node kinds of a size expression. Persisted: never renumber.
enum class SizeOp : uint8_t {
  Const = 0,       // value
  BufferSize = 1,  // logical element count of the live buffer at `buffer`
  Add = 2,
  Sub = 3,
  Mul = 4,
  Div = 5,  // floor division; division by zero is refused
  Min = 6,
  Max = 7,
  Rank = 8,   // since format 1.7: this process's ff::dist rank (a replay reads its own)
  Ranks = 9,  // since format 1.7: the number of ff::dist ranks
};
const char* to_string(SizeOp op);

/// Leaves have no operands: constants, a buffer's size, the rank and the rank count.
constexpr bool is_leaf(SizeOp op) {
  return op == SizeOp::Const || op == SizeOp::BufferSize || op == SizeOp::Rank ||
         op == SizeOp::Ranks;
}

struct SizeNode {
  SizeOp op;
  uint64_t value = 0;            // Const: the constant; else the value while tracing
  const void* buffer = nullptr;  // BufferSize
};

/// A size expression in postfix order; empty = a plain constant without provenance.
using SizeProv = std::span<const SizeNode>;

/// Comparison of two sizes, as recorded by guards.
enum class SizeCmp : uint8_t { Eq = 0, Ne = 1, Lt = 2, Le = 3, Gt = 4, Ge = 5 };
const char* to_string(SizeCmp c);

/// Evaluates `a cmp b`.
constexpr bool compare(SizeCmp cmp, uint64_t a, uint64_t b) {
  switch (cmp) {
    case SizeCmp::Eq:
      return a == b;
    case SizeCmp::Ne:
      return a != b;
    case SizeCmp::Lt:
      return a < b;
    case SizeCmp::Le:
      return a <= b;
    case SizeCmp::Gt:
      return a > b;
    case SizeCmp::Ge:
      return a >= b;
  }
  return false;
}

/// A size decision the tracer or user code made: `lhs cmp rhs` had outcome `outcome`.
struct SizeGuard {
  SizeCmp cmp;
  SizeProv lhs, rhs;
  uint64_t lhs_value = 0, rhs_value = 0;  // the values compared while tracing
  const char* what = "";                  // who decided (e.g. "equal operand sizes in")
  const char* subject = nullptr;          // appended to `what` after a space (e.g. "add"):
                                          // static strings, so deciding formats nothing
};

/// Renders a postfix expression for messages: "(width(input 0) - 1)". `name_buffer` names the
/// buffer of a BufferSize node (Backend::describe_buffer).
std::string to_string(SizeProv prov, const std::function<std::string(const void*)>& name_buffer);

}  // namespace ff
