// How values combine: the operator of reductions, scatter-reductions, block reductions and the
// collectives of ff::dist. Persisted in recordings: never renumber.
#pragma once

#include <cstdint>
#include <type_traits>

namespace ff {

/// Add and Mul wrap for integers; Min and Max compare by signedness (floats: a NaN is ignored
/// where another value exists); And and Or are bitwise, for integers (and Bool in reductions).
enum class ReduceOp : uint8_t { Add = 0, Mul = 1, Min = 2, Max = 3, And = 4, Or = 5 };

/// "add", "mul", "min", "max", "and", "or"; "invalid-reduce-op" for other values.
const char* to_string(ReduceOp op);

namespace detail {
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
