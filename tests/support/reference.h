// Scalar reference implementations and seeded random data for the array tests.
//
// Every array operation is checked against the plain C++ computation here, element by
// element. The reference follows the array semantics of API.md / DESIGN.md exactly:
// integer arithmetic wraps, shift counts are taken modulo the bit width, float -> integer
// casts saturate (NaN -> 0), integer -> Bool is `!= 0`, float min/max ignore NaN like
// std::fmin/std::fmax and keep the first of two equal operands (r_min). The helpers never invoke
// undefined behaviour themselves (no signed overflow, no division by zero): callers keep such lanes
// out of the data or skip them.
#pragma once

#include <freezeframe/freezeframe.h>

#include <algorithm>
#include <bit>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <iomanip>
#include <limits>
#include <memory>
#include <optional>
#include <random>
#include <span>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

namespace fft {

// ---------------------------------------------------------------------------------------
// Types

template <class T>
inline constexpr bool is_bool_v = std::is_same_v<T, bool>;
template <class T>
inline constexpr bool is_float_v = std::is_floating_point_v<T>;
template <class T>
inline constexpr bool is_int_v = std::is_integral_v<T> && !is_bool_v<T>;
template <class T>
inline constexpr bool is_sint_v = is_int_v<T>&& std::is_signed_v<T>;
template <class T>
inline constexpr int bits_of = static_cast<int>(sizeof(T) * 8);

/// The unsigned type of the same width (wrapping arithmetic is done in it).
template <class T>
using U = std::make_unsigned_t<T>;

template <class T>
const char* type_name() {
  if constexpr (std::is_same_v<T, bool>)
    return "Bool";
  else if constexpr (std::is_same_v<T, int32_t>)
    return "Int32";
  else if constexpr (std::is_same_v<T, uint32_t>)
    return "UInt32";
  else if constexpr (std::is_same_v<T, int64_t>)
    return "Int64";
  else if constexpr (std::is_same_v<T, uint64_t>)
    return "UInt64";
  else if constexpr (std::is_same_v<T, float>)
    return "Float";
  else
    return "Float64";
}

/// Calls f.template operator()<T>() for every element type (C++20 templated lambdas).
template <class... Ts, class F>
void for_each_type(F&& f) {
  (f.template operator()<Ts>(), ...);
}

template <class F>
void for_all_types(F&& f) {
  for_each_type<bool, int32_t, uint32_t, int64_t, uint64_t, float, double>(f);
}

// ---------------------------------------------------------------------------------------
// Data

/// The sizes every operation is checked on.
inline constexpr size_t kLargeSize = 1000003;

/// A fixed-seed generator; mix in a per-operand salt so operands differ.
inline std::mt19937_64 rng(uint64_t salt) {
  return std::mt19937_64(0x5eedf00dULL ^ (salt * 0x9E3779B97F4A7C15ULL));
}

/// Uniform random values: integers over their full range, floats in [lo, hi], Bool p = 0.5.
template <class T>
std::vector<T> random_vector(size_t n, uint64_t salt, double lo = -100.0, double hi = 100.0) {
  auto g = rng(salt);
  std::vector<T> v(n);
  if constexpr (is_bool_v<T>) {
    for (size_t i = 0; i < n; ++i)
      v[i] = (g() >> 17) & 1;
  } else if constexpr (is_int_v<T>) {
    for (size_t i = 0; i < n; ++i)
      v[i] = static_cast<T>(g());
  } else {
    std::uniform_real_distribution<double> d(lo, hi);
    for (size_t i = 0; i < n; ++i)
      v[i] = static_cast<T>(d(g));
  }
  return v;
}

/// Uniform random integers in [lo, hi] (as the element type).
template <class T>
std::vector<T> random_ints(size_t n, uint64_t salt, int64_t lo, int64_t hi) {
  auto g = rng(salt);
  std::uniform_int_distribution<int64_t> d(lo, hi);
  std::vector<T> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = static_cast<T>(d(g));
  return v;
}

/// Values whose every partial sum is exact in the type (multiples of 1/4 in [-1, 1] for
/// floats: partial sums of up to 4M of them stay exactly representable in a float), so a
/// sum or scan gives the same bits in any order. Integers: small values in [-4, 4].
template <class T>
std::vector<T> exact_sum_vector(size_t n, uint64_t salt) {
  auto g = rng(salt);
  std::uniform_int_distribution<int> d(-4, 4);
  std::vector<T> v(n);
  for (size_t i = 0; i < n; ++i) {
    if constexpr (is_float_v<T>)
      v[i] = static_cast<T>(d(g)) / T(4);
    else
      v[i] = static_cast<T>(d(g));
  }
  return v;
}

/// Builds an array from host data (std::vector<bool> has no contiguous storage).
template <class T>
ff::Array<T> to_array(const std::vector<T>& v) {
  if constexpr (is_bool_v<T>) {
    std::unique_ptr<bool[]> tmp(new bool[std::max<size_t>(v.size(), 1)]);
    for (size_t i = 0; i < v.size(); ++i)
      tmp[i] = v[i];
    return ff::Array<bool>::from(std::span<const bool>(tmp.get(), v.size()));
  } else {
    return ff::Array<T>::from(std::span<const T>(v.data(), v.size()));
  }
}

/// Reads an array back as std::vector<T> whatever container to_vector() returns.
template <class T>
std::vector<T> host(const ff::Array<T>& a) {
  auto got = a.to_vector();
  std::vector<T> out(got.size());
  for (size_t i = 0; i < got.size(); ++i)
    out[i] = static_cast<T>(got[i]);
  return out;
}

/// Element i of v, or element 0 when v has size 1 (broadcast).
template <class V>
typename V::value_type bc(const V& v, size_t i) {
  return v.size() == 1 ? v[0] : v[i];
}

// ---------------------------------------------------------------------------------------
// Scalar reference operations

template <class T>
T r_add(T a, T b) {
  if constexpr (is_int_v<T>)
    return static_cast<T>(static_cast<U<T>>(a) + static_cast<U<T>>(b));
  else
    return a + b;
}

template <class T>
T r_sub(T a, T b) {
  if constexpr (is_int_v<T>)
    return static_cast<T>(static_cast<U<T>>(a) - static_cast<U<T>>(b));
  else
    return a - b;
}

template <class T>
T r_mul(T a, T b) {
  if constexpr (is_int_v<T>)
    return static_cast<T>(static_cast<U<T>>(a) * static_cast<U<T>>(b));
  else
    return a * b;
}

template <class T>
T r_neg(T a) {
  if constexpr (is_int_v<T>)
    return static_cast<T>(U<T>(0) - static_cast<U<T>>(a));
  else
    return -a;
}

/// True when integer a / b is defined in C++ (b != 0 and not INT_MIN / -1).
template <class T>
bool div_defined(T a, T b) {
  if constexpr (is_int_v<T>) {
    if (b == 0)
      return false;
    if constexpr (std::is_signed_v<T>) {
      if (a == std::numeric_limits<T>::min() && b == T(-1))
        return false;
    }
  }
  return true;
}

template <class T>
T r_div(T a, T b) {
  return a / b;  // callers check div_defined for integers
}

template <class T>
T r_mod(T a, T b) {
  return a % b;  // C++ semantics: truncating division, the sign follows the dividend
}

template <class T>
T r_shl(T a, T count) {
  const unsigned c = static_cast<unsigned>(static_cast<U<T>>(count) & U<T>(bits_of<T> - 1));
  return static_cast<T>(static_cast<U<T>>(a) << c);
}

template <class T>
T r_shr(T a, T count) {  // arithmetic for signed types, logical for unsigned (C++20)
  const unsigned c = static_cast<unsigned>(static_cast<U<T>>(count) & U<T>(bits_of<T> - 1));
  return static_cast<T>(a >> c);
}

template <class T>
T r_abs(T a) {
  if constexpr (is_sint_v<T>)
    return a < 0 ? r_neg(a) : a;  // abs(INT_MIN) wraps to INT_MIN
  else if constexpr (is_int_v<T>)
    return a;
  else
    return std::fabs(a);
}

/// Float min/max as docs/kernel-ir.md defines them: a NaN `a` gives `b`; otherwise `b` if it
/// is strictly less (min) / greater (max) than `a`, else `a`. So a NaN operand is ignored (like
/// std::fmin, signalling NaNs included), and of two equal operands (+0 and -0) the first wins.
template <class T>
T r_min(T a, T b) {
  if constexpr (is_float_v<T>)
    return std::isnan(a) || b < a ? b : a;
  else
    return std::min(a, b);
}

template <class T>
T r_max(T a, T b) {
  if constexpr (is_float_v<T>)
    return std::isnan(a) || b > a ? b : a;
  else
    return std::max(a, b);
}

/// Element conversion with the array semantics of ff::cast.
template <class To, class From>
To r_cast(From x) {
  if constexpr (is_bool_v<To>) {
    return x != From(0);
  } else if constexpr (is_bool_v<From>) {
    return x ? To(1) : To(0);
  } else if constexpr (is_float_v<From> && is_int_v<To>) {
    if (std::isnan(x))
      return To(0);
    // 2^(value bits): the first float value past the top of To's range (exact in float).
    const From top = std::ldexp(From(1), std::numeric_limits<To>::digits);
    if (x >= top)
      return std::numeric_limits<To>::max();
    if constexpr (std::is_signed_v<To>) {
      if (x < -top)
        return std::numeric_limits<To>::min();
    } else {
      if (x <= From(-1))
        return To(0);
    }
    return static_cast<To>(x);  // in range: truncation toward zero
  } else {
    return static_cast<To>(x);  // int -> int wraps (C++20), int/float -> float rounds
  }
}

template <class To, class From>
To r_bitcast(From x) {
  static_assert(sizeof(To) == sizeof(From));
  return std::bit_cast<To>(x);
}

// ---------------------------------------------------------------------------------------
// Comparison of results

template <class T>
std::string show(T v) {
  std::ostringstream os;
  if constexpr (is_bool_v<T>)
    os << (v ? "true" : "false");
  else if constexpr (is_float_v<T>)
    os << std::setprecision(std::numeric_limits<T>::max_digits10) << v;
  else
    os << +v;
  return os.str();
}

template <class T>
bool same_value(T a, T b) {
  if constexpr (is_float_v<T>)
    return (std::isnan(a) && std::isnan(b)) || a == b;
  else
    return a == b;
}

template <class T>
bool near_value(T got, T want, double rel, double abs_tol) {
  if (same_value(got, want))
    return true;
  if constexpr (is_float_v<T>) {
    if (std::isnan(got) || std::isnan(want) || std::isinf(got) || std::isinf(want))
      return false;
    const double d = std::fabs(static_cast<double>(got) - static_cast<double>(want));
    return d <= abs_tol + rel * std::fabs(static_cast<double>(want));
  } else {
    return false;
  }
}

/// How results are compared: exactly (NaN equals NaN), or within rel * |want| + abs.
struct Tolerance {
  bool exact = true;
  double rel = 0.0, abs = 0.0;
};

/// Compares got against want where defined[i] (empty: everywhere), with one Catch assertion
/// summarising the mismatches (count, first few indices, values), so million-element checks
/// stay cheap. Instantiated once per element type: the per-check lambdas only fill `want`.
template <class T>
void compare(const std::string& what, const std::vector<T>& got, const std::vector<T>& want,
             const std::vector<uint8_t>& defined, Tolerance tol) {
  const size_t n = want.size();
  INFO(what << " [" << type_name<T>() << ", n = " << n << "]");
  if (got.size() != n) {
    FAIL_CHECK("size: got " << got.size() << ", expected " << n);
    return;
  }
  size_t bad = 0;
  std::ostringstream first;
  for (size_t i = 0; i < n; ++i) {
    if (!defined.empty() && !defined[i])
      continue;  // a lane with an unspecified result: anything goes
    const bool ok = tol.exact ? same_value<T>(got[i], want[i])
                              : near_value<T>(got[i], want[i], tol.rel, tol.abs);
    if (!ok) {
      if (bad < 5)
        first << "\n  [" << i << "] got " << show<T>(got[i]) << ", expected " << show<T>(want[i]);
      ++bad;
    }
  }
  if (bad != 0)
    FAIL_CHECK(bad << " of " << n << " elements differ:" << first.str());
  else
    SUCCEED();
}

/// Compares got[i] against want(i) for i < n; want may return std::optional<T>, where
/// nullopt marks a lane whose value is unspecified.
template <class T, class Want>
void check_all(const std::string& what, const std::vector<T>& got, size_t n, Want&& want,
               Tolerance tol) {
  std::vector<T> w(n);
  std::vector<uint8_t> defined;
  for (size_t i = 0; i < n; ++i) {
    auto wo = want(i);
    if constexpr (std::is_same_v<std::decay_t<decltype(wo)>, std::optional<T>>) {
      if (defined.empty())
        defined.assign(n, 1);
      if (wo)
        w[i] = *wo;
      else
        defined[i] = 0;
    } else {
      w[i] = static_cast<T>(wo);
    }
  }
  compare(what, got, w, defined, tol);
}

/// Exact comparison (NaN equals NaN).
template <class T, class Want>
void check_exact(const std::string& what, const ff::Array<T>& a, size_t n, Want&& want) {
  check_all(what, host(a), n, want, Tolerance{});
}

template <class T>
void check_exact(const std::string& what, const ff::Array<T>& a, const std::vector<T>& want) {
  compare(what, host(a), want, {}, Tolerance{});
}

/// Relative tolerance for transcendental functions and division.
template <class T>
constexpr double default_rel() {
  return std::is_same_v<T, float> ? 1e-5 : 1e-12;
}

template <class T, class Want>
void check_near(const std::string& what, const ff::Array<T>& a, size_t n, Want&& want,
                double rel = default_rel<T>(), double abs_tol = 0.0) {
  check_all(what, host(a), n, want, Tolerance{false, rel, abs_tol});
}

/// Reads a size-1 array's only element.
template <class T>
T scalar_of(const ff::Array<T>& a) {
  auto v = host(a);
  REQUIRE(v.size() == 1);
  return v[0];
}

/// Statistics delta helper: `auto d = delta([&]{ ... });`
template <class F>
ff::Stats delta(F&& f) {
  const ff::Stats before = ff::stats();
  f();
  const ff::Stats after = ff::stats();
  ff::Stats d;
  d.compiles = after.compiles - before.compiles;
  d.cache_hits = after.cache_hits - before.cache_hits;
  d.launches = after.launches - before.launches;
  d.reductions = after.reductions - before.reductions;
  d.allocs = after.allocs - before.allocs;
  d.bytes_allocated = after.bytes_allocated - before.bytes_allocated;
  d.peak_bytes = after.peak_bytes;
  d.copies = after.copies - before.copies;
  d.host_reads = after.host_reads - before.host_reads;
  d.generation = after.generation - before.generation;
  return d;
}

}  // namespace fft
