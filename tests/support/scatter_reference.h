// What the kernels compute for one lane of a scatter-reduction (docs/kernel-ir.md), written
// out plainly for the tests to compare with: integers wrap, float Min/Max ignore NaN values and
// count -0 below +0; and lane values for which every order of lanes gives one result.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "freezeframe/reduce_op.h"

namespace ff_test {

template <class T>
T reference_combine(ff::ReduceOp op, T old, T v) {
  using ff::ReduceOp;
  if constexpr (std::is_floating_point_v<T>) {
    if (op == ReduceOp::Add)
      return old + v;
    if (op == ReduceOp::Mul)
      return old * v;
    bool min = op == ReduceOp::Min;
    bool tie = v == old && std::signbit(v) != std::signbit(old);
    bool take = !std::isnan(v) &&
                (std::isnan(old) || (min ? v < old : v > old) || (tie && std::signbit(v) == min));
    return take ? v : old;
  } else {
    using U = std::make_unsigned_t<T>;
    switch (op) {
      case ReduceOp::Add:
        return T(U(old) + U(v));
      case ReduceOp::Mul:
        return T(U(old) * U(v));
      case ReduceOp::Min:
        return std::min(old, v);
      case ReduceOp::Max:
        return std::max(old, v);
      case ReduceOp::And:
        return old & v;
      case ReduceOp::Or:
        return old | v;
    }
    return old;
  }
}

/// Lane i's value for `op`: small integers (float sums stay exact), +-1 and a few 2s for float
/// products, NaNs and zeros of both signs among float Min/Max values, single bits for And/Or.
template <class T>
T lane_value(ff::ReduceOp op, size_t i) {
  using ff::ReduceOp;
  if constexpr (std::is_floating_point_v<T>) {
    if (op == ReduceOp::Mul)
      return i % 3 == 0 ? T(-1) : i % 97 == 5 ? T(2) : T(1);
    if (op == ReduceOp::Min || op == ReduceOp::Max) {
      if (i % 11 == 0)
        return std::numeric_limits<T>::quiet_NaN();
      if (i % 13 == 0)
        return T(-0.0);
      if (i % 17 == 0)
        return T(0.0);
      return T(static_cast<int>(i % 7) - 3);
    }
  } else {
    if (op == ReduceOp::And)
      return T(~(T(1) << (i % 5)));
    if (op == ReduceOp::Or)
      return T(T(1) << (i % 9));
  }
  return T(i % 7);
}

template <class T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() &&
         (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0);
}

}  // namespace ff_test
