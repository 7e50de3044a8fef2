// The math library beyond array.h's basics: trigonometric, hyperbolic, exponential and error
// functions, rounding, sign and range helpers on Float and Float64, and bit counts on
// integers. Accuracy per function and type: docs/math.md. Each constraint is a requires-clause,
// so generic code can test whether a call is allowed (math on integer arrays is not).
#pragma once

#include <type_traits>

#include "freezeframe/array.h"

namespace ff {

#define FF_MATH_UNARY(name, code, Constraint)             \
  template <class T>                                      \
  requires(Constraint) Array<T> name(const Array<T>& a) { \
    return detail::unary(detail::Op::code, a);            \
  }
#define FF_MATH_FLOATING (std::is_floating_point_v<T>)
FF_MATH_UNARY(tan, Tan, FF_MATH_FLOATING)
FF_MATH_UNARY(asin, Asin, FF_MATH_FLOATING)
FF_MATH_UNARY(acos, Acos, FF_MATH_FLOATING)
FF_MATH_UNARY(atan, Atan, FF_MATH_FLOATING)
FF_MATH_UNARY(sinh, Sinh, FF_MATH_FLOATING)
FF_MATH_UNARY(cosh, Cosh, FF_MATH_FLOATING)
FF_MATH_UNARY(tanh, Tanh, FF_MATH_FLOATING)
FF_MATH_UNARY(asinh, Asinh, FF_MATH_FLOATING)
FF_MATH_UNARY(acosh, Acosh, FF_MATH_FLOATING)
FF_MATH_UNARY(atanh, Atanh, FF_MATH_FLOATING)
FF_MATH_UNARY(exp2, Exp2, FF_MATH_FLOATING)
FF_MATH_UNARY(log2, Log2, FF_MATH_FLOATING)
FF_MATH_UNARY(erf, Erf, FF_MATH_FLOATING)
FF_MATH_UNARY(cbrt, Cbrt, FF_MATH_FLOATING)
/// Rounds halfway cases away from zero, as std::round.
FF_MATH_UNARY(round, Round, FF_MATH_FLOATING)
FF_MATH_UNARY(trunc, Trunc, FF_MATH_FLOATING)
#define FF_MATH_INTEGER (std::is_integral_v<T> && !std::is_same_v<T, bool>)
/// Set bits, counted in the operand's type.
FF_MATH_UNARY(popcnt, Popcnt, FF_MATH_INTEGER)
/// Leading zero bits; clz(0) is the bit width.
FF_MATH_UNARY(clz, Clz, FF_MATH_INTEGER)
/// Trailing zero bits; ctz(0) is the bit width.
FF_MATH_UNARY(ctz, Ctz, FF_MATH_INTEGER)
#undef FF_MATH_INTEGER
#undef FF_MATH_UNARY

/// 1 / sqrt(a), both correctly rounded (so rsqrt(-0) == -inf, rsqrt(+inf) == +0).
template <class T>

requires FF_MATH_FLOATING Array<T> rsqrt(const Array<T>& a) {
  return Array<T>(T(1)) / sqrt(a);
}

/// 1 / a, correctly rounded (rcp(-0) == -inf).
template <class T>

requires FF_MATH_FLOATING Array<T> rcp(const Array<T>& a) {
  return Array<T>(T(1)) / a;
}

// Binary float functions: two arrays of one element type, or an array and a scalar on either
// side (converted to the array's element type), as for the operators.
#define FF_MATH_BINARY(name, code)                                                \
  template <class T>                                                              \
  requires FF_MATH_FLOATING Array<T> name(const Array<T>& a, const Array<T>& b) { \
    return detail::binary<T>(detail::Op::code, a, b);                             \
  }                                                                               \
  template <class T, detail::ScalarLike S>                                        \
  requires FF_MATH_FLOATING Array<T> name(const Array<T>& a, S b) {               \
    return detail::binary<T>(detail::Op::code, a, Array<T>(static_cast<T>(b)));   \
  }                                                                               \
  template <class T, detail::ScalarLike S>                                        \
  requires FF_MATH_FLOATING Array<T> name(S a, const Array<T>& b) {               \
    return detail::binary<T>(detail::Op::code, Array<T>(static_cast<T>(a)), b);   \
  }
/// The angle of (x, y) in [-pi, pi], with C's signs of zero: atan2(+0, -0) == pi.
FF_MATH_BINARY(atan2, Atan2)
/// base^exponent with C's special cases: pow(x, 0) == 1 for every x, NaN included.
FF_MATH_BINARY(pow, Pow)
/// |a| with the sign bit of b (bits only: exact, NaN payloads kept).
FF_MATH_BINARY(copysign, Copysign)
#undef FF_MATH_BINARY

/// std::clamp element-wise: lo where a < lo, hi where hi < a, else a (a NaN `a` stays NaN; a
/// zero keeps its sign). Any argument may be a scalar; the first array gives the type.
template <class A, class L, class H, class T = typename detail::first_array_value<A, L, H>::type>

requires(!std::is_void_v<T> && !std::is_same_v<T, bool>) Array<T> clamp(const A& a, const L& lo,
                                                                        const H& hi) {
  Array<T> x = detail::as_array<T>(a), l = detail::as_array<T>(lo), h = detail::as_array<T>(hi);
  return select(x < l, l, select(h < x, h, x));
}

/// Linear interpolation a + t (b - a), computed as b t + (a - a t) with two fused
/// multiply-adds, so t = 0 gives a and t = 1 gives b exactly. Any argument may be a scalar.
template <class A, class B, class W, class T = typename detail::first_array_value<A, B, W>::type>

requires(std::is_floating_point_v<T>) Array<T> lerp(const A& a, const B& b, const W& t) {
  Array<T> x = detail::as_array<T>(a), y = detail::as_array<T>(b), w = detail::as_array<T>(t);
  return fma(y, w, fma(-x, w, x));
}

#undef FF_MATH_FLOATING

}  // namespace ff
