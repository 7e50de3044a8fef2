// How values combine: the operator of reductions, scatter-reductions, block reductions and the
// collectives of ff::dist. Persisted in recordings: never renumber.
#pragma once

#include <cstdint>
#include <limits>
#include <type_traits>

namespace ff {

/// Add and Mul wrap for integers; Min and Max compare by signedness (floats: a NaN is ignored
/// where another value exists); And and Or are bitwise, for integers (and Bool in reductions).
enum class ReduceOp : uint8_t { Add = 0, Mul = 1, Min = 2, Max = 3, And = 4, Or = 5 };

/// "add", "mul", "min", "max", "and", "or"; "invalid-reduce-op" for other values.
const char* to_string(ReduceOp op);

namespace detail {

/// The element x with op(x, v) == v for every v, as scatter_reduce combines: 0 (-0 for float
/// Add: -0 + -0 is -0), 1 for Mul, all ones for And; NaN for float Min/Max, which ignore NaN;
/// the type's largest / smallest value for integer Min / Max. Private partial results and block
/// reductions start from it.
template <class T>
T reduce_identity(ReduceOp op) {
  using L = std::numeric_limits<T>;
  switch (op) {
    case ReduceOp::Mul:
      return T(1);
    case ReduceOp::Min:
      return L::has_quiet_NaN ? L::quiet_NaN() : L::max();
    case ReduceOp::Max:
      return L::has_quiet_NaN ? L::quiet_NaN() : L::lowest();
    case ReduceOp::And:
      if constexpr (std::is_integral_v<T>)
        return static_cast<T>(~T(0));
      break;
    case ReduceOp::Add:
      if constexpr (std::is_floating_point_v<T>)
        return -T(0);
      break;
    case ReduceOp::Or:
      break;
  }
  return T(0);
}

// Deliberately not constexpr: reaching it while checking a ReduceOpFor stops the compile, and
// the compiler's message names it.
void reduce_op_and_or_need_integer_elements();
}  // namespace detail

/// A ReduceOp for elements of type T, checked at compile time (scatter_reduce, block_reduce
/// take one): And and Or on float elements do not compile. The op is a constant expression,
/// as a template argument would be.
template <class T>
struct ReduceOpFor {
  ReduceOp op;

  consteval ReduceOpFor(ReduceOp o) : op(o) {  // NOLINT: implicit, so ReduceOp::Max converts
    if (std::is_floating_point_v<T> && (o == ReduceOp::And || o == ReduceOp::Or))
      detail::reduce_op_and_or_need_integer_elements();
  }
};

}  // namespace ff
