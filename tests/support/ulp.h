// Error of a floating-point result in ulp of the exact value, for the math accuracy tests.
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>

namespace ff_test {

/// |got - want| in ulp of T at the exact result `want` (subnormal results: in ulp of the
/// smallest subnormal). A NaN, infinite or exactly zero reference must be matched exactly, the
/// sign of zero included (1e9 otherwise); a result that only rounds to zero is measured in
/// ulp like any other.
template <class T>
double ulp_error(T got, long double want) {
  using L = std::numeric_limits<T>;
  T rounded = static_cast<T>(want);
  if (std::isnan(rounded))
    return std::isnan(got) ? 0 : 1e9;
  if (std::isinf(rounded) || (rounded == 0 && want == 0))
    return got == rounded && std::signbit(got) == std::signbit(rounded) ? 0 : 1e9;
  if (!std::isfinite(got))
    return 1e9;
  int e = 0;
  std::frexp(want, &e);  // want = m 2^e, 0.5 <= |m| < 1
  long double ulp = std::max<long double>(std::ldexp(1.0L, e - L::digits), L::denorm_min());
  return static_cast<double>(std::fabs(static_cast<long double>(got) - want) / ulp);
}

}  // namespace ff_test
