// ff::Size: an element count that remembers where it came from (its provenance).
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace ff {

class Size;

namespace detail {
struct SizeExprNode;                // tracer/size_expr_node.h
uint64_t raw_value(const Size& s);  // the tracer's own reads: no pinning
}  // namespace detail

/// A size with provenance: `ff::width(x)`, `x.size()` and arithmetic on them (`width(x) - 1`,
/// `(width(x) + 1) / 2`, min, max) keep an expression over the arrays they came from, so a
/// recording replays them exactly at other input sizes. Comparisons return bool and, inside a
/// recording, record a guard that is checked at replay. Converting to a plain integer
/// (size_t, value()) loses the provenance: inside a recording that pins the recording to the
/// value (a guard `expr == value`, so a replay where it differs raises ff::GuardError and a
/// frozen function records that size anew) and logs a warning. Arithmetic that overflows 64
/// bits, goes below zero or divides by zero throws ff::Error naming the expression.
class Size {
 public:
  Size() = default;

  /// A plain constant: replays as that constant.
  template <std::integral I>
  Size(I value) : value_(static_cast<uint64_t>(value)) {}  // NOLINT: implicit by design

  explicit Size(std::shared_ptr<const detail::SizeExprNode> expr);

  /// The value as a plain integer; inside a recording this pins it (see the class comment).
  uint64_t value() const;

  /// True when the size came from an array rather than a plain integer.
  bool has_provenance() const;
  operator size_t() const;  // NOLINT: implicit by design; pins like value()
  /// The expression, e.g. "(width(a) - 1)"; "5" for a constant.
  std::string to_string() const;

  const std::shared_ptr<const detail::SizeExprNode>& expr() const { return expr_; }

 private:
  friend uint64_t detail::raw_value(const Size& s);

  uint64_t value_ = 0;
  std::shared_ptr<const detail::SizeExprNode> expr_;  // null = constant value_
};

Size operator+(const Size& a, const Size& b);
Size operator-(const Size& a, const Size& b);  // throws ff::Error if the result is negative
Size operator*(const Size& a, const Size& b);
Size operator/(const Size& a, const Size& b);  // floor; throws ff::Error on division by zero
Size min(const Size& a, const Size& b);
Size max(const Size& a, const Size& b);
bool operator==(const Size& a, const Size& b);
bool operator!=(const Size& a, const Size& b);
bool operator<(const Size& a, const Size& b);
bool operator<=(const Size& a, const Size& b);
bool operator>(const Size& a, const Size& b);
bool operator>=(const Size& a, const Size& b);

// Exact-match overloads so `width(x) - 1` never becomes ambiguous with built-in arithmetic.
#define FF_SIZE_INTEGRAL_OPS(ret, op) \
  template <std::integral I>          \
  ret op(const Size& a, I b) {        \
    return op(a, Size(b));            \
  }                                   \
  template <std::integral I>          \
  ret op(I a, const Size& b) {        \
    return op(Size(a), b);            \
  }
FF_SIZE_INTEGRAL_OPS(Size, operator+)
FF_SIZE_INTEGRAL_OPS(Size, operator-)
FF_SIZE_INTEGRAL_OPS(Size, operator*)
FF_SIZE_INTEGRAL_OPS(Size, operator/)
FF_SIZE_INTEGRAL_OPS(Size, min)
FF_SIZE_INTEGRAL_OPS(Size, max)
FF_SIZE_INTEGRAL_OPS(bool, operator==)
FF_SIZE_INTEGRAL_OPS(bool, operator!=)
FF_SIZE_INTEGRAL_OPS(bool, operator<)
FF_SIZE_INTEGRAL_OPS(bool, operator<=)
FF_SIZE_INTEGRAL_OPS(bool, operator>)
FF_SIZE_INTEGRAL_OPS(bool, operator>=)
#undef FF_SIZE_INTEGRAL_OPS

}  // namespace ff
