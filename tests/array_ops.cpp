// Element-wise operations of ff::Array against the scalar reference (tests/support/reference.h),
// for every element type, on sizes 1, 7, 1000 and 1,000,003, with every operand layout:
// array-array, array-size-1 array, size-1 array-array, array-scalar and scalar-array.
//
// Each layout evaluates all of its results with one ff::eval, so a test compiles a handful of
// kernels (the size-1 and the size-N specialisation per layout) and reuses them across sizes.
#include <freezeframe/freezeframe.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "support/reference.h"

using namespace fft;

#define FFT_SIZES() GENERATE(as<size_t>{}, 1, 7, 1000, fft::kLargeSize)

namespace {

/// Calls f(args...) out of line, so each operand-type combination compiles f's body once
/// (test build time: five inlined copies per element type add up).
template <class F, class... Args>
[[gnu::noinline]] void call(F& f, const std::string& layout, const Args&... args) {
  f(layout, args...);
}

/// Calls f(layout, x, y, xv, yv) for the five operand layouts of a binary operation; x and y
/// are arrays or scalars, xv and yv the reference data (size n, or 1 when broadcast).
template <class T, class F>
void for_each_layout(const std::vector<T>& a, const std::vector<T>& b, F&& f) {
  const std::vector<T> a1{static_cast<T>(a[0])}, b1{static_cast<T>(b[0])};
  const ff::Array<T> xa = to_array(a), xb = to_array(b), xa1 = to_array(a1), xb1 = to_array(b1);
  const T sa = static_cast<T>(a[0]), sb = static_cast<T>(b[0]);
  call(f, "array op array", xa, xb, a, b);
  call(f, "array op size-1 array", xa, xb1, a, b1);
  call(f, "size-1 array op array", xa1, xb, a1, b);
  call(f, "array op scalar", xa, sb, a, b1);
  call(f, "scalar op array", sa, xb, a1, b);
}

/// b with every third element copied from a, so == and <= see equal operands too.
template <class T>
std::vector<T> with_ties(std::vector<T> b, const std::vector<T>& a) {
  for (size_t i = 0; i < b.size(); i += 3)
    b[i] = a[i];
  return b;
}

}  // namespace

TEMPLATE_TEST_CASE("arithmetic operators match the scalar reference in every operand layout",
                   "[array][arith]", int32_t, uint32_t, int64_t, uint64_t, float, double) {
  using T = TestType;
  using A = ff::Array<T>;
  const size_t n = FFT_SIZES();
  const auto a = random_vector<T>(n, 1);
  auto b = with_ties(random_vector<T>(n, 2), a);
  if constexpr (is_int_v<T>) {
    for (auto& v : b) {
      if (v == 0)
        v = 3;  // division by zero is tested on its own
    }
  } else {
    for (auto& v : b) {
      if (v == 0)
        v = T(0.5);
    }
  }

  for_each_layout<T>(
      a, b, [&](const std::string& layout, auto x, auto y, const auto& xv, const auto& yv) {
        A add = x + y, sub = x - y, mul = x * y, div = x / y;
        A neg = -to_array(xv);
        if constexpr (is_int_v<T>) {
          A mod = x % y;
          ff::eval(add, sub, mul, div, neg, mod);
          check_exact(layout + ": a % b", mod, n, [&](size_t i) -> std::optional<T> {
            if (!div_defined<T>(bc(xv, i), bc(yv, i)))
              return std::nullopt;
            return r_mod<T>(bc(xv, i), bc(yv, i));
          });
          check_exact(layout + ": a / b", div, n, [&](size_t i) -> std::optional<T> {
            if (!div_defined<T>(bc(xv, i), bc(yv, i)))
              return std::nullopt;
            return r_div<T>(bc(xv, i), bc(yv, i));
          });
        } else {
          ff::eval(add, sub, mul, div, neg);
          check_near(layout + ": a / b", div, n, [&](size_t i) { return bc(xv, i) / bc(yv, i); });
        }
        check_exact(layout + ": a + b", add, n,
                    [&](size_t i) { return r_add<T>(bc(xv, i), bc(yv, i)); });
        check_exact(layout + ": a - b", sub, n,
                    [&](size_t i) { return r_sub<T>(bc(xv, i), bc(yv, i)); });
        check_exact(layout + ": a * b", mul, n,
                    [&](size_t i) { return r_mul<T>(bc(xv, i), bc(yv, i)); });
        check_exact(layout + ": -a", neg, xv.size(), [&](size_t i) { return r_neg<T>(xv[i]); });
      });
}

TEMPLATE_TEST_CASE("comparison operators give Bool arrays matching the scalar reference",
                   "[array][compare]", int32_t, uint32_t, int64_t, uint64_t, float, double) {
  using T = TestType;
  const size_t n = FFT_SIZES();
  const auto a = random_vector<T>(n, 3);
  const auto b = with_ties(random_vector<T>(n, 4), a);
  for_each_layout<T>(
      a, b, [&](const std::string& layout, auto x, auto y, const auto& xv, const auto& yv) {
        ff::Bool eq = x == y, ne = x != y, lt = x<y, le = x <= y, gt = x> y, ge = x >= y;
        ff::eval(eq, ne, lt, le, gt, ge);
        check_exact(layout + ": a == b", eq, n, [&](size_t i) { return bc(xv, i) == bc(yv, i); });
        check_exact(layout + ": a != b", ne, n, [&](size_t i) { return bc(xv, i) != bc(yv, i); });
        check_exact(layout + ": a < b", lt, n, [&](size_t i) { return bc(xv, i) < bc(yv, i); });
        check_exact(layout + ": a <= b", le, n, [&](size_t i) { return bc(xv, i) <= bc(yv, i); });
        check_exact(layout + ": a > b", gt, n, [&](size_t i) { return bc(xv, i) > bc(yv, i); });
        check_exact(layout + ": a >= b", ge, n, [&](size_t i) { return bc(xv, i) >= bc(yv, i); });
      });
}

TEMPLATE_TEST_CASE("integer bitwise operators and shifts match the scalar reference",
                   "[array][bitwise]", int32_t, uint32_t, int64_t, uint64_t) {
  using T = TestType;
  using A = ff::Array<T>;
  const size_t n = FFT_SIZES();
  const auto a = random_vector<T>(n, 5);
  const auto b = random_vector<T>(n, 6);  // full range: shift counts far beyond the width
  for_each_layout<T>(
      a, b, [&](const std::string& layout, auto x, auto y, const auto& xv, const auto& yv) {
        A band = x & y, bor = x | y, bxor = x ^ y, shl = x << y, shr = x >> y;
        A bnot = ~to_array(xv);
        ff::eval(band, bor, bxor, shl, shr, bnot);
        check_exact(layout + ": a & b", band, n,
                    [&](size_t i) -> T { return bc(xv, i) & bc(yv, i); });
        check_exact(layout + ": a | b", bor, n,
                    [&](size_t i) -> T { return bc(xv, i) | bc(yv, i); });
        check_exact(layout + ": a ^ b", bxor, n,
                    [&](size_t i) -> T { return bc(xv, i) ^ bc(yv, i); });
        check_exact(layout + ": a << b", shl, n,
                    [&](size_t i) { return r_shl<T>(bc(xv, i), bc(yv, i)); });
        check_exact(layout + ": a >> b", shr, n,
                    [&](size_t i) { return r_shr<T>(bc(xv, i), bc(yv, i)); });
        check_exact(layout + ": ~a", bnot, xv.size(), [&](size_t i) -> T { return ~xv[i]; });
      });
}

TEMPLATE_TEST_CASE("shift counts are taken modulo the bit width", "[array][bitwise]", int32_t,
                   uint32_t, int64_t, uint64_t) {
  using T = TestType;
  using A = ff::Array<T>;
  constexpr int w = bits_of<T>;
  // counts 0 .. 3w-1, and negative ones for signed types (-1 is w-1 modulo w)
  std::vector<T> counts;
  for (int c = 0; c < 3 * w; ++c)
    counts.push_back(static_cast<T>(c));
  if constexpr (std::is_signed_v<T>) {
    for (int c = 1; c <= w; ++c)
      counts.push_back(static_cast<T>(-c));
  }
  const size_t n = counts.size();
  const T one = 1, minus = is_sint_v<T> ? static_cast<T>(-1234567) : static_cast<T>(~T(0) - 7);
  A c = to_array(counts);
  A shl = one << c, shr = minus >> c, shl_lit = to_array(std::vector<T>(n, one)) << T(w + 1),
    shr_lit = to_array(std::vector<T>(n, minus)) >> T(w + 3);
  ff::eval(shl, shr, shl_lit, shr_lit);
  check_exact("1 << count", shl, n, [&](size_t i) { return r_shl<T>(one, counts[i]); });
  check_exact("x >> count", shr, n, [&](size_t i) { return r_shr<T>(minus, counts[i]); });
  check_exact("1 << (w + 1) is 1 << 1", shl_lit, n, [&](size_t) { return T(2); });
  check_exact("x >> (w + 3) is x >> 3", shr_lit, n,
              [&](size_t) { return static_cast<T>(minus >> 3); });
  // spot checks independent of the reference helpers
  const auto got = host(shl);
  CHECK(got[0] == T(1));
  CHECK(got[static_cast<size_t>(w)] == T(1));
  CHECK(got[static_cast<size_t>(w) + 1] == T(2));
  CHECK(got[static_cast<size_t>(w) - 1] == static_cast<T>(T(1) << (w - 1)));
}

TEMPLATE_TEST_CASE("integer division by zero and INT_MIN / -1 do not trap", "[array][arith]",
                   int32_t, uint32_t, int64_t, uint64_t) {
  using T = TestType;
  using A = ff::Array<T>;
  const size_t n = FFT_SIZES();
  auto a = random_vector<T>(n, 7);
  auto b = random_vector<T>(n, 8);
  for (size_t i = 0; i < n; i += 5)
    b[i] = 0;
  if constexpr (std::is_signed_v<T>) {
    for (size_t i = 1; i < n; i += 7) {
      a[i] = std::numeric_limits<T>::min();
      b[i] = -1;
    }
  }
  A x = to_array(a), y = to_array(b);
  A div = x / y, mod = x % y, div0 = x / T(0), mod0 = x % T(0);
  A lit_div0 = A(T(5)) / T(0), lit_mod0 = A(T(5)) % T(0);  // constant folding must not trap
  A lit_min = A(std::numeric_limits<T>::min()) / static_cast<T>(-1);
  ff::eval(div, mod, div0, mod0, lit_div0, lit_mod0, lit_min);
  auto want = [&](bool is_div) {
    return [&, is_div](size_t i) -> std::optional<T> {
      if (!div_defined<T>(a[i], b[i]))
        return std::nullopt;
      return is_div ? r_div<T>(a[i], b[i]) : r_mod<T>(a[i], b[i]);
    };
  };
  check_exact("a / b (lanes with a defined result)", div, n, want(true));
  check_exact("a % b (lanes with a defined result)", mod, n, want(false));
  CHECK(host(div0).size() == n);
  CHECK(host(mod0).size() == n);
  CHECK(host(lit_div0).size() == 1);
  CHECK(host(lit_mod0).size() == 1);
  CHECK(host(lit_min).size() == 1);
}

TEMPLATE_TEST_CASE("float multiply then add rounds twice: only ff::fma fuses", "[array][arith]",
                   float, double) {
  using T = TestType;
  using A = ff::Array<T>;
  const size_t n = FFT_SIZES();
  const auto a = random_vector<T>(n, 9), b = random_vector<T>(n, 10), c = random_vector<T>(n, 11);
  A x = to_array(a), y = to_array(b), z = to_array(c);
  A unfused = x * y + z, fused = ff::fma(x, y, z);
  ff::eval(unfused, fused);
  check_exact("a * b + c", unfused, n, [&](size_t i) {
    volatile T p = a[i] * b[i];  // volatile: no contraction in the reference either
    return static_cast<T>(p + c[i]);
  });
  check_exact("fma(a, b, c)", fused, n, [&](size_t i) { return std::fma(a[i], b[i], c[i]); });
}

TEMPLATE_TEST_CASE("fma min max and abs match the scalar reference in every operand layout",
                   "[array][math]", int32_t, uint32_t, int64_t, uint64_t, float, double) {
  using T = TestType;
  using A = ff::Array<T>;
  const size_t n = FFT_SIZES();
  const auto a = random_vector<T>(n, 12);
  const auto b = with_ties(random_vector<T>(n, 13), a);
  const auto c = random_vector<T>(n, 14);
  for_each_layout<T>(
      a, b, [&](const std::string& layout, auto x, auto y, const auto& xv, const auto& yv) {
        A mn = ff::min(x, y), mx = ff::max(x, y), ab = ff::abs(to_array(xv));
        A f1 = ff::fma(x, y, to_array(c));  // the layout on the first two operands
        A f2 = ff::fma(to_array(c), x, y);  // ... and on the last two
        ff::eval(mn, mx, ab, f1, f2);
        check_exact(layout + ": min(a, b)", mn, n,
                    [&](size_t i) { return r_min<T>(bc(xv, i), bc(yv, i)); });
        check_exact(layout + ": max(a, b)", mx, n,
                    [&](size_t i) { return r_max<T>(bc(xv, i), bc(yv, i)); });
        check_exact(layout + ": abs(a)", ab, xv.size(), [&](size_t i) { return r_abs<T>(xv[i]); });
        if constexpr (is_float_v<T>) {
          check_exact(layout + ": fma(a, b, c)", f1, n,
                      [&](size_t i) { return std::fma(bc(xv, i), bc(yv, i), c[i]); });
          check_exact(layout + ": fma(c, a, b)", f2, n,
                      [&](size_t i) { return std::fma(c[i], bc(xv, i), bc(yv, i)); });
        } else {
          check_exact(layout + ": fma(a, b, c)", f1, n,
                      [&](size_t i) { return r_add<T>(r_mul<T>(bc(xv, i), bc(yv, i)), c[i]); });
          check_exact(layout + ": fma(c, a, b)", f2, n,
                      [&](size_t i) { return r_add<T>(r_mul<T>(c[i], bc(xv, i)), bc(yv, i)); });
        }
      });
}

TEMPLATE_TEST_CASE("float functions sqrt exp log sin cos floor ceil match the C library",
                   "[array][math]", float, double) {
  using T = TestType;
  using A = ff::Array<T>;
  const size_t n = FFT_SIZES();
  const double rel = default_rel<T>();
  const double atol = std::is_same_v<T, float> ? 1e-6 : 1e-13;  // near the zeros of sin/cos/log
  const auto pos = random_vector<T>(n, 15, 1e-3, 1e4);
  const auto mid = random_vector<T>(n, 16, -60.0, 60.0);  // exp stays finite in float
  const auto wide = random_vector<T>(n, 17, -100.0, 100.0);
  A p = to_array(pos), m = to_array(mid), w = to_array(wide);
  A sq = ff::sqrt(p), ex = ff::exp(m), lg = ff::log(p), sn = ff::sin(w), cs = ff::cos(w),
    fl = ff::floor(w), ce = ff::ceil(w);
  ff::eval(sq, ex, lg, sn, cs, fl, ce);
  check_near(
      "sqrt", sq, n, [&](size_t i) { return std::sqrt(pos[i]); }, rel);
  check_near(
      "exp", ex, n, [&](size_t i) { return std::exp(mid[i]); }, rel);
  check_near(
      "log", lg, n, [&](size_t i) { return std::log(pos[i]); }, rel, atol);
  check_near(
      "sin", sn, n, [&](size_t i) { return std::sin(wide[i]); }, rel, atol);
  check_near(
      "cos", cs, n, [&](size_t i) { return std::cos(wide[i]); }, rel, atol);
  check_exact("floor", fl, n, [&](size_t i) { return std::floor(wide[i]); });
  check_exact("ceil", ce, n, [&](size_t i) { return std::ceil(wide[i]); });

  // Scalar operands are literals: their results fold or compile, and must agree.
  CHECK(scalar_of(ff::sqrt(A(T(2)))) == Approx(std::sqrt(T(2))).epsilon(rel));
  CHECK(scalar_of(ff::floor(A(T(-2.5)))) == T(-3));
  CHECK(scalar_of(ff::ceil(A(T(-2.5)))) == T(-2));
}

TEMPLATE_TEST_CASE("float special values: NaN comparisons min max and IEEE edge cases",
                   "[array][math][nan]", float, double) {
  using T = TestType;
  using A = ff::Array<T>;
  const T nan = std::numeric_limits<T>::quiet_NaN(), inf = std::numeric_limits<T>::infinity();
  const std::vector<T> xs{nan, T(1), nan, -inf, inf, T(-0.0), T(2)};
  const std::vector<T> ys{T(1), nan, nan, T(3), T(-3), T(0), nan};
  const size_t n = xs.size();
  A x = to_array(xs), y = to_array(ys);
  ff::Bool eq = x == y, ne = x != y, lt = x<y, le = x <= y, gt = x> y, ge = x >= y;
  A mn = ff::min(x, y), mx = ff::max(x, y);
  ff::eval(eq, ne, lt, le, gt, ge, mn, mx);
  check_exact("NaN-aware ==", eq, n, [&](size_t i) { return xs[i] == ys[i]; });
  check_exact("NaN-aware !=", ne, n, [&](size_t i) { return xs[i] != ys[i]; });
  check_exact("NaN-aware <", lt, n, [&](size_t i) { return xs[i] < ys[i]; });
  check_exact("NaN-aware <=", le, n, [&](size_t i) { return xs[i] <= ys[i]; });
  check_exact("NaN-aware >", gt, n, [&](size_t i) { return xs[i] > ys[i]; });
  check_exact("NaN-aware >=", ge, n, [&](size_t i) { return xs[i] >= ys[i]; });
  // A NaN operand is ignored (both NaN -> NaN), as std::fmin/std::fmax do.
  check_exact("min ignores NaN like std::fmin", mn, n,
              [&](size_t i) { return std::fmin(xs[i], ys[i]); });
  check_exact("max ignores NaN like std::fmax", mx, n,
              [&](size_t i) { return std::fmax(xs[i], ys[i]); });
  // Of two equal operands the first is the result: min(-0, +0) is -0, min(+0, -0) is +0.
  CHECK(std::signbit(host(mn)[5]));
  CHECK(std::signbit(host(mx)[5]));
  CHECK_FALSE(std::signbit(scalar_of(ff::min(ff::Array<T>(T(0)), ff::Array<T>(-T(0))))));
  CHECK(std::signbit(scalar_of(ff::min(ff::Array<T>(-T(0)), ff::Array<T>(T(0))))));
  // a scalar NaN operand on either side
  check_exact("min(x, NaN scalar) is x", ff::min(x, nan), n, [&](size_t i) { return xs[i]; });
  check_exact("max(NaN scalar, x) is x", ff::max(nan, x), n, [&](size_t i) { return xs[i]; });

  const std::vector<T> in{T(-1), T(0), T(1000), T(-1000), inf, -inf, nan};
  A v = to_array(in);
  A sq = ff::sqrt(v), lg = ff::log(v), ex = ff::exp(v), fl = ff::floor(v), ce = ff::ceil(v),
    ab = ff::abs(v), ng = -v;
  ff::eval(sq, lg, ex, fl, ce, ab, ng);
  check_exact("sqrt special values", sq, in.size(), [&](size_t i) { return std::sqrt(in[i]); });
  // log and exp: NaN, infinities and zeros exactly, finite results within a few ulp (vector
  // code uses libmvec, not libm)
  check_near("log special values", lg, in.size(), [&](size_t i) { return std::log(in[i]); });
  check_near("exp special values", ex, in.size(), [&](size_t i) { return std::exp(in[i]); });
  check_exact("floor special values", fl, in.size(), [&](size_t i) { return std::floor(in[i]); });
  check_exact("ceil special values", ce, in.size(), [&](size_t i) { return std::ceil(in[i]); });
  check_exact("abs special values", ab, in.size(), [&](size_t i) { return std::fabs(in[i]); });
  check_exact("negation special values", ng, in.size(), [&](size_t i) { return -in[i]; });
  const auto negz = host(-A(T(0)));
  CHECK(std::signbit(negz.at(0)));
}

TEST_CASE("Bool operators & | ^ ~ ! == != match the truth tables in every operand layout",
          "[array][bool]") {
  const size_t n = FFT_SIZES();
  const auto a = random_vector<bool>(n, 18);
  const auto b = random_vector<bool>(n, 19);
  for_each_layout<bool>(
      a, b, [&](const std::string& layout, auto x, auto y, const auto& xv, const auto& yv) {
        ff::Bool band = x & y, bor = x | y, bxor = x ^ y, eq = x == y, ne = x != y;
        ff::Bool bnot = ~to_array(xv), lnot = !to_array(xv);
        ff::eval(band, bor, bxor, eq, ne, bnot, lnot);
        check_exact(layout + ": a & b", band, n,
                    [&](size_t i) -> bool { return bc(xv, i) && bc(yv, i); });
        check_exact(layout + ": a | b", bor, n,
                    [&](size_t i) -> bool { return bc(xv, i) || bc(yv, i); });
        check_exact(layout + ": a ^ b", bxor, n,
                    [&](size_t i) -> bool { return bc(xv, i) != bc(yv, i); });
        check_exact(layout + ": a == b", eq, n,
                    [&](size_t i) -> bool { return bc(xv, i) == bc(yv, i); });
        check_exact(layout + ": a != b", ne, n,
                    [&](size_t i) -> bool { return bc(xv, i) != bc(yv, i); });
        check_exact(layout + ": ~a", bnot, xv.size(), [&](size_t i) -> bool { return !xv[i]; });
        check_exact(layout + ": !a", lnot, xv.size(), [&](size_t i) -> bool { return !xv[i]; });
      });
}

TEST_CASE("masks built from comparisons combine with & | ! and select", "[array][bool]") {
  const size_t n = FFT_SIZES();
  const auto a = random_vector<float>(n, 20);
  ff::Float x = to_array(a);
  ff::Bool in_band = (x > -50.f) & (x < 50.f);
  ff::Bool outside = !in_band | (x == 0.f);
  ff::Float y = ff::select(in_band, x * 2.f, ff::select(outside, -x, x));
  ff::eval(in_band, outside, y);
  check_exact("(x > -50) & (x < 50)", in_band, n,
              [&](size_t i) -> bool { return a[i] > -50.f && a[i] < 50.f; });
  check_exact("!band | x == 0", outside, n,
              [&](size_t i) -> bool { return !(a[i] > -50.f && a[i] < 50.f) || a[i] == 0.f; });
  check_exact("nested select", y, n, [&](size_t i) {
    const bool band = a[i] > -50.f && a[i] < 50.f;
    return band ? a[i] * 2.f : -a[i];
  });
}

TEMPLATE_TEST_CASE("select picks per lane with mask and operands in every layout",
                   "[array][select]", bool, int32_t, uint32_t, int64_t, uint64_t, float, double) {
  using T = TestType;
  using A = ff::Array<T>;
  const size_t n = FFT_SIZES();
  const auto m = random_vector<bool>(n, 21);
  const auto a = random_vector<T>(n, 22);
  const auto b = random_vector<T>(n, 23);
  ff::Bool mask = to_array(m);
  for_each_layout<T>(
      a, b, [&](const std::string& layout, auto x, auto y, const auto& xv, const auto& yv) {
        A s = ff::select(mask, x, y);
        A s_lit_true = ff::select(ff::Bool(true), x, y);
        A s_one = ff::select(to_array(std::vector<bool>{static_cast<bool>(m[0])}), x, y);
        ff::eval(s, s_lit_true, s_one);
        check_exact(layout + ": select(mask, a, b)", s, n,
                    [&](size_t i) -> T { return m[i] ? bc(xv, i) : bc(yv, i); });
        check_exact(layout + ": select(true, a, b)", s_lit_true, std::max(xv.size(), yv.size()),
                    [&](size_t i) -> T { return bc(xv, i); });
        check_exact(layout + ": select(size-1 mask, a, b)", s_one, std::max(xv.size(), yv.size()),
                    [&](size_t i) -> T { return m[0] ? bc(xv, i) : bc(yv, i); });
      });
}

TEMPLATE_TEST_CASE("empty arrays combine with empty and size-1 operands into empty results",
                   "[array][size]", bool, int32_t, uint32_t, int64_t, uint64_t, float, double) {
  using T = TestType;
  using A = ff::Array<T>;
  A e;
  CHECK(e.size() == 0);
  CHECK(host(e).empty());
  A e2 = to_array(std::vector<T>{});
  CHECK(e2.size() == 0);
  if constexpr (is_bool_v<T>) {
    ff::Bool r1 = e & e2, r2 = e | T(true), r3 = to_array(std::vector<bool>{true}) ^ e;
    CHECK(host(r1).empty());
    CHECK(host(r2).empty());
    CHECK(host(r3).empty());
  } else {
    A r1 = e + e2, r2 = e * T(3), r3 = to_array(std::vector<T>{T(1)}) - e;
    ff::Bool r4 = e < e2;
    CHECK(r1.size() == 0);
    CHECK(host(r1).empty());
    CHECK(host(r2).empty());
    CHECK(host(r3).empty());
    CHECK(host(r4).empty());
  }
}

TEST_CASE("arange / n and arange % n by an opaque n (a uniform divisor) are exact",
          "[array][arith]") {
  // An opaque size-1 n is a broadcast load in the kernel: the LLVM backend divides by it with
  // a multiply-high (docs/kernel-ir.md). A zero divisor divides by 1.
  const size_t count = 3001;
  for (uint32_t d : {0u, 1u, 2u, 3u, 7u, 61u, 64u, 2048u, 0x80000000u, 0xFFFFFFFFu}) {
    ff::UInt32 n(d);
    ff::make_opaque(n);
    ff::UInt32 i = ff::arange<ff::UInt32>(count);
    ff::UInt32 big = i + 0xFFFFF000u;  // numerators near 2^32
    ff::UInt32 q = i / n, r = i % n, bq = big / n, br = big % n;
    ff::eval(q, r, bq, br);
    const std::vector<uint32_t> hq = q.to_vector(), hr = r.to_vector(), hbq = bq.to_vector(),
                                hbr = br.to_vector();
    size_t bad = 0;
    for (size_t e = 0; e < count; ++e) {
      auto v = static_cast<uint32_t>(e), w = static_cast<uint32_t>(e + 0xFFFFF000u);
      bad += hq[e] != (d == 0 ? v : v / d) || hr[e] != (d == 0 ? 0 : v % d);
      bad += hbq[e] != (d == 0 ? w : w / d) || hbr[e] != (d == 0 ? 0 : w % d);
    }
    INFO("d = " << d);
    CHECK(bad == 0);
  }
}

TEMPLATE_TEST_CASE("stencil gathers at arange +- 1 and +- width equal gathers at evaluated indices",
                   "[array][gather]", uint32_t, int32_t, uint64_t, int64_t) {
  // gather(u, i + c, mask) with i the unevaluated arange is a vector load in the LLVM backend;
  // the same index evaluated first is an index buffer (a plain gather). Both must agree with
  // each other and with C++, the plate's border included.
  using I = TestType;
  using A = ff::Array<I>;
  for (size_t width : {size_t(1), size_t(2), size_t(7), size_t(13), size_t(61)}) {
    for (size_t rows : {size_t(1), size_t(2), size_t(7), size_t(17)}) {
      const size_t count = width * rows;
      std::vector<float> host_u(count);
      for (size_t e = 0; e < count; ++e)
        host_u[e] = static_cast<float>(e % 97) + 1.f;
      ff::Float u = ff::Float::from(host_u);
      A i = ff::arange<A>(count);
      A x = i % static_cast<I>(width), y = i / static_cast<I>(width);
      ff::Bool interior = (x > I(0)) & (x < static_cast<I>(width - 1)) & (y > I(0)) &
                          (y < static_cast<I>(rows - 1));
      for (int m = 0; m < 2; ++m) {
        ff::Bool mask = m == 0 ? ff::Bool(true) : interior;
        for (int64_t off : {int64_t(-1), int64_t(1), -int64_t(width), int64_t(width)}) {
          A index = i + static_cast<I>(off);  // wraps like the host's arithmetic below
          A evaluated = index;
          ff::eval(evaluated);
          ff::Float fast = ff::gather<ff::Float>(u, index, mask);
          ff::Float plain = ff::gather<ff::Float>(u, evaluated, mask);
          ff::eval(fast, plain);
          const std::vector<float> hf = fast.to_vector(), hp = plain.to_vector();
          std::vector<uint8_t> hm(count, 1);
          if (m == 1) {
            const std::vector<bool> im = interior.to_vector();
            for (size_t e = 0; e < count; ++e)
              hm[e] = im[e];
          }
          size_t bad = 0;
          for (size_t e = 0; e < count; ++e) {
            auto j = static_cast<int64_t>(e) + off;
            float want =
                hm[e] && j >= 0 && j < static_cast<int64_t>(count) ? host_u[size_t(j)] : 0.f;
            bad += hf[e] != want || hp[e] != want;
          }
          INFO("width " << width << " rows " << rows << " offset " << off << " mask " << m);
          CHECK(bad == 0);
        }
      }
    }
  }
}
