// gather, scatter, scatter_add, the reductions (sum prod min_reduce max_reduce mean),
// prefix_sum and compress against the scalar reference (tests/support/reference.h).
//
// Integer results are exact (wrapping). Float sums depend on the summation order, so they are
// checked twice: exactly on data whose every partial sum is representable (multiples of 1/4),
// and with the worst-case bound n * eps * sum|x| on random data.
#include <freezeframe/freezeframe.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <set>
#include <string>
#include <vector>

#include "support/reference.h"

using namespace fft;

#define FFT_SIZES() GENERATE(as<size_t>{}, 1, 7, 1000, fft::kLargeSize)

#define FFT_ALL_TYPES bool, int32_t, uint32_t, int64_t, uint64_t, float, double
#define FFT_NUMERIC_TYPES int32_t, uint32_t, int64_t, uint64_t, float, double

namespace {

/// Random indices in [0, bound) (UInt32).
std::vector<uint32_t> random_index(size_t n, uint64_t salt, uint64_t bound) {
  return random_ints<uint32_t>(n, salt, 0, static_cast<int64_t>(bound) - 1);
}

/// A value of T that is neither 0 nor 1 where the type allows.
template <class T>
T sample_scalar() {
  if constexpr (is_bool_v<T>)
    return true;
  else if constexpr (is_float_v<T>)
    return T(-2.75);
  else
    return static_cast<T>(-5);
}

/// The wrapping (integers) or plain (floats, in long double) sum of v.
template <class T>
T ref_sum(const std::vector<T>& v) {
  if constexpr (is_int_v<T>) {
    U<T> s = 0;
    for (T x : v)
      s += static_cast<U<T>>(x);
    return static_cast<T>(s);
  } else {
    long double s = 0;
    for (T x : v)
      s += x;
    return static_cast<T>(s);
  }
}

template <class T>
double abs_sum(const std::vector<T>& v) {
  double s = 0;
  for (T x : v)
    s += std::fabs(static_cast<double>(x));
  return s;
}

/// The worst-case error of a float sum in any order: (n - 1) * eps/2 * sum|x|, doubled.
template <class T>
double sum_tolerance(size_t n, double sum_abs) {
  return static_cast<double>(n) * std::numeric_limits<T>::epsilon() * sum_abs + 1e-30;
}

}  // namespace

// ---------------------------------------------------------------------------------------
// gather

TEMPLATE_TEST_CASE("gather reads source[index] with and without a mask and 0 out of range",
                   "[array][gather]", FFT_ALL_TYPES) {
  using T = TestType;
  using A = ff::Array<T>;
  const size_t n = FFT_SIZES();
  const size_t m = n;  // source size
  const auto src = random_vector<T>(m, 200);
  const auto idx = random_index(n, 201, m + m / 8 + 2);  // about 11% out of range
  const auto msk = random_vector<bool>(n, 202);
  A s = to_array(src);
  ff::UInt32 i = to_array(idx);
  ff::Bool k = to_array(msk);
  A g = ff::gather<A>(s, i);
  A gm = ff::gather<A>(s, i, k);
  A g_false = ff::gather<A>(s, i, ff::Bool(false));
  ff::eval(g, gm, g_false);
  auto at = [&](size_t j) -> T { return idx[j] < m ? static_cast<T>(src[idx[j]]) : T(0); };
  check_exact("gather(src, idx)", g, n, at);
  check_exact("gather(src, idx, mask)", gm, n,
              [&](size_t j) -> T { return msk[j] ? at(j) : T(0); });
  check_exact("gather(src, idx, false)", g_false, n, [&](size_t) { return T(0); });
}

TEMPLATE_TEST_CASE("gather from a small source repeats indices and reads lazy sources",
                   "[array][gather]", FFT_NUMERIC_TYPES) {
  using T = TestType;
  using A = ff::Array<T>;
  const size_t n = FFT_SIZES();
  const size_t m = 13;
  const auto src = random_vector<T>(m, 203);
  const auto idx = random_index(n, 204, m + 2);  // many repeats, a few out of range
  A s = to_array(src);
  ff::UInt32 i = to_array(idx);
  // the source is an unevaluated expression: it must be computed before the gather reads it
  A lazy_src = s * T(2) + T(1);
  A g = ff::gather<A>(lazy_src, i);
  // a literal source (full): nothing was ever stored
  A g_lit = ff::gather<A>(ff::full<A>(T(7), m), i);
  // an index computed in the same kernel as the gather
  A g_expr = ff::gather<A>(s, (i + 1u) % 13u);
  ff::eval(g, g_lit, g_expr);
  check_exact("gather(src * 2 + 1, idx)", g, n, [&](size_t j) -> T {
    return idx[j] < m ? r_add<T>(r_mul<T>(src[idx[j]], T(2)), T(1)) : T(0);
  });
  check_exact("gather(full(7, 13), idx)", g_lit, n,
              [&](size_t j) -> T { return idx[j] < m ? T(7) : T(0); });
  check_exact("gather(src, (idx + 1) % 13)", g_expr, n,
              [&](size_t j) -> T { return src[(idx[j] + 1) % 13]; });
}

TEST_CASE("gather takes Int32 Int64 and UInt64 indices and treats negative ones as out of range",
          "[array][gather]") {
  const size_t n = FFT_SIZES();
  const size_t m = 1000;
  const auto src = random_vector<double>(m, 232);
  const auto i32 = random_ints<int32_t>(n, 233, -50, static_cast<int64_t>(m) + 50);
  const auto i64 = random_ints<int64_t>(n, 234, -50, static_cast<int64_t>(m) + 50);
  const auto u64 = random_ints<uint64_t>(n, 235, 0, static_cast<int64_t>(m) + 50);
  ff::Float64 s = to_array(src);
  ff::Float64 g32 = ff::gather<ff::Float64>(s, to_array(i32));
  ff::Float64 g64 = ff::gather<ff::Float64>(s, to_array(i64));
  ff::Float64 gu64 = ff::gather<ff::Float64>(s, to_array(u64));
  ff::eval(g32, g64, gu64);
  auto at = [&](int64_t j) {
    return j >= 0 && j < static_cast<int64_t>(m) ? src[static_cast<size_t>(j)] : 0.0;
  };
  check_exact("gather with Int32 indices", g32, n, [&](size_t k) { return at(i32[k]); });
  check_exact("gather with Int64 indices", g64, n, [&](size_t k) { return at(i64[k]); });
  check_exact("gather with UInt64 indices", gu64, n,
              [&](size_t k) { return u64[k] < m ? src[u64[k]] : 0.0; });
  // scatter with Int64 indices, negative ones dropped
  ff::Float64 t = ff::zeros<ff::Float64>(m);
  ff::scatter(t, 1.0, to_array(i64));
  std::vector<double> want(m, 0.0);
  for (int64_t j : i64) {
    if (j >= 0 && j < static_cast<int64_t>(m))
      want[static_cast<size_t>(j)] = 1.0;
  }
  check_exact("scatter with Int64 indices", t, want);
}

// ---------------------------------------------------------------------------------------
// scatter

TEMPLATE_TEST_CASE("scatter through a permutation writes every element exactly", "[array][scatter]",
                   FFT_ALL_TYPES) {
  using T = TestType;
  using A = ff::Array<T>;
  const size_t n = FFT_SIZES();
  std::vector<uint32_t> perm(n);
  std::iota(perm.begin(), perm.end(), 0u);
  auto g = rng(205);
  std::shuffle(perm.begin(), perm.end(), g);
  const auto val = random_vector<T>(n, 206);
  const auto old = random_vector<T>(n, 207);
  A target = to_array(old);
  ff::scatter(target, to_array(val), to_array(perm));
  std::vector<T> want(old);
  for (size_t j = 0; j < n; ++j)
    want[perm[j]] = val[j];
  check_exact("scatter(target, val, perm)", target, want);

  // into a fresh zeros() target, with a lazy value expression and a scalar value
  A z = ff::zeros<A>(n);
  ff::UInt32 p = to_array(perm);
  ff::scatter(z, to_array(val), p);
  check_exact("scatter into zeros(n)", z, want);
  const auto msk = random_vector<bool>(n, 208);
  A c = ff::zeros<A>(n);
  ff::scatter(c, sample_scalar<T>(), p, to_array(msk));
  std::vector<T> want_c(n, T(0));
  for (size_t j = 0; j < n; ++j) {
    if (msk[j])
      want_c[perm[j]] = sample_scalar<T>();
  }
  check_exact("masked scatter of a scalar", c, want_c);
}

TEMPLATE_TEST_CASE("scatter with repeated and out-of-range indices writes one of the values",
                   "[array][scatter]", FFT_ALL_TYPES) {
  using T = TestType;
  using A = ff::Array<T>;
  const size_t n = FFT_SIZES();
  const size_t m = std::max<size_t>(n / 3, 1);  // target smaller than the value count
  const auto old = random_vector<T>(m, 209);
  const auto val = random_vector<T>(n, 210);
  const auto idx = random_index(n, 211, m + m / 4 + 1);
  const auto msk = random_vector<bool>(n, 212);
  A target = to_array(old);
  ff::scatter(target, to_array(val), to_array(idx), to_array(msk));
  const auto got = host(target);
  REQUIRE(got.size() == m);
  // which values may land where
  std::vector<std::vector<T>> cand(m);
  for (size_t j = 0; j < n; ++j) {
    if (msk[j] && idx[j] < m)
      cand[idx[j]].push_back(val[j]);
  }
  size_t bad = 0;
  std::string first;
  for (size_t t = 0; t < m; ++t) {
    const bool ok = cand[t].empty() ? same_value<T>(got[t], old[t])
                                    : std::any_of(cand[t].begin(), cand[t].end(),
                                                  [&](T v) { return same_value<T>(got[t], v); });
    if (!ok && bad++ == 0) {
      first = "[" + std::to_string(t) + "] got " + show<T>(got[t]) + " with " +
              std::to_string(cand[t].size()) + " candidate values";
    }
  }
  INFO("n = " << n << ", first mismatch " << first);
  CHECK(bad == 0);
}

TEMPLATE_TEST_CASE("scatter_add accumulates colliding values exactly", "[array][scatter_add]",
                   FFT_NUMERIC_TYPES) {
  using T = TestType;
  using A = ff::Array<T>;
  const size_t n = FFT_SIZES();
  const size_t bins = 7;
  // integers: full range, the sums wrap; floats: multiples of 1/4, exact in any order
  const auto val = is_int_v<T> ? random_vector<T>(n, 213) : exact_sum_vector<T>(n, 213);
  const auto idx = random_index(n, 214, bins + 1);  // bin 7 is out of range: dropped
  const auto msk = random_vector<bool>(n, 215);
  A hist = ff::zeros<A>(bins);
  A hist_m = to_array(std::vector<T>(bins, T(1)));
  ff::UInt32 i = to_array(idx);
  A v = to_array(val);
  ff::scatter_add(hist, v, i);
  ff::scatter_add(hist_m, v, i, to_array(msk));
  A counts = ff::zeros<A>(bins);
  ff::scatter_add(counts, T(1), i);  // a scalar value
  ff::eval(hist, hist_m, counts);
  std::vector<T> want(bins, T(0)), want_m(bins, T(1)), want_c(bins, T(0));
  for (size_t j = 0; j < n; ++j) {
    if (idx[j] >= bins)
      continue;
    want[idx[j]] = r_add<T>(want[idx[j]], val[j]);
    want_c[idx[j]] = r_add<T>(want_c[idx[j]], T(1));
    if (msk[j])
      want_m[idx[j]] = r_add<T>(want_m[idx[j]], val[j]);
  }
  check_exact("scatter_add into 7 bins", hist, want);
  check_exact("masked scatter_add into 7 bins (starting at 1)", hist_m, want_m);
  check_exact("scatter_add(counts, 1, idx)", counts, want_c);
}

TEMPLATE_TEST_CASE("scatter_add of random floats matches the reference within rounding",
                   "[array][scatter_add]", float, double) {
  using T = TestType;
  using A = ff::Array<T>;
  const size_t n = FFT_SIZES();
  const size_t bins = 1000;
  const auto val = random_vector<T>(n, 216, -1.0, 1.0);
  const auto idx = random_index(n, 217, bins);
  A hist = ff::zeros<A>(bins);
  ff::scatter_add(hist, to_array(val), to_array(idx));
  std::vector<long double> want(bins, 0);
  std::vector<double> abs_tot(bins, 0), cnt(bins, 0);
  for (size_t j = 0; j < n; ++j) {
    want[idx[j]] += val[j];
    abs_tot[idx[j]] += std::fabs(val[j]);
    cnt[idx[j]] += 1;
  }
  const auto got = host(hist);
  REQUIRE(got.size() == bins);
  size_t bad = 0, first = bins;
  for (size_t b = 0; b < bins; ++b) {
    const double tol = sum_tolerance<T>(static_cast<size_t>(cnt[b]) + 1, abs_tot[b]);
    if (std::fabs(static_cast<double>(got[b]) - static_cast<double>(want[b])) > tol) {
      if (bad++ == 0)
        first = b;
    }
  }
  INFO("n = " << n << ", first bad bin " << first);
  CHECK(bad == 0);
}

TEST_CASE("scatter_add of 1000003 values into 7 bins gives the exact integer sums",
          "[array][scatter_add]") {
  const size_t n = kLargeSize;
  const auto idx = random_index(n, 218, 7);
  const auto v32 = random_ints<int32_t>(n, 219, -1000, 1000);
  const auto v64 = random_vector<uint64_t>(n, 220);
  ff::Int32 h32 = ff::zeros<ff::Int32>(7);
  ff::UInt64 h64 = ff::zeros<ff::UInt64>(7);
  ff::UInt32 i = to_array(idx);
  ff::scatter_add(h32, to_array(v32), i);
  ff::scatter_add(h64, to_array(v64), i);
  ff::eval(h32, h64);
  std::vector<int32_t> w32(7, 0);
  std::vector<uint64_t> w64(7, 0);
  for (size_t j = 0; j < n; ++j) {
    w32[idx[j]] += v32[j];  // |sum| <= 1e9: no overflow
    w64[idx[j]] += v64[j];  // wraps modulo 2^64
  }
  check_exact("Int32 histogram", h32, w32);
  check_exact("UInt64 histogram (wrapping)", h64, w64);
}

// ---------------------------------------------------------------------------------------
// reductions

TEMPLATE_TEST_CASE("sum prod min_reduce and max_reduce of integers are exact and wrap",
                   "[array][reduce]", int32_t, uint32_t, int64_t, uint64_t) {
  using T = TestType;
  using A = ff::Array<T>;
  const size_t n = FFT_SIZES();
  const auto a = random_vector<T>(n, 221);
  // products of full-range values become 0 after a few dozen even factors: use odd values
  auto odd = random_vector<T>(n, 222);
  for (auto& v : odd)
    v = static_cast<T>(v | T(1));
  A x = to_array(a);
  A s = ff::sum(x), p = ff::prod(to_array(odd)), mn = ff::min_reduce(x), mx = ff::max_reduce(x);
  A s_lazy = ff::sum(x * T(3) + T(1));  // a reduction over an unevaluated expression
  ff::eval(s, p, mn, mx, s_lazy);
  U<T> want_p = 1, want_lazy = 0;
  for (T v : odd)
    want_p *= static_cast<U<T>>(v);
  for (T v : a)
    want_lazy += static_cast<U<T>>(r_add<T>(r_mul<T>(v, T(3)), T(1)));
  CHECK(s.size() == 1);
  CHECK(scalar_of(s) == ref_sum(a));
  CHECK(scalar_of(p) == static_cast<T>(want_p));
  CHECK(scalar_of(mn) == *std::min_element(a.begin(), a.end()));
  CHECK(scalar_of(mx) == *std::max_element(a.begin(), a.end()));
  CHECK(scalar_of(s_lazy) == static_cast<T>(want_lazy));
  // a literal reduced: full(2, n)
  CHECK(scalar_of(ff::sum(ff::full<A>(T(2), n))) == static_cast<T>(2 * n));
  CHECK(scalar_of(ff::max_reduce(ff::full<A>(T(9), n))) == T(9));
  // mean of integers where the quotient is exact: sum(2 * arange(n)) / n == n - 1 (when the
  // sum n (n - 1) does not wrap)
  if (static_cast<double>(n) * static_cast<double>(n - 1) <
      static_cast<double>(std::numeric_limits<T>::max())) {
    CHECK(scalar_of(ff::mean(ff::arange<A>(n) * T(2))) == static_cast<T>(n - 1));
  }
  CHECK(scalar_of(ff::mean(ff::full<A>(T(6), n))) == T(6));
}

TEMPLATE_TEST_CASE("float reductions are exact on exactly representable partial sums",
                   "[array][reduce]", float, double) {
  using T = TestType;
  using A = ff::Array<T>;
  const size_t n = FFT_SIZES();
  const auto a = exact_sum_vector<T>(n, 223);
  // products of powers of two stay exact whatever the order: at most 60 factors of 2 or 1/2
  std::vector<T> pw(n, T(1));
  auto g = rng(224);
  for (size_t k = 0; k < std::min<size_t>(n, 90); ++k) {
    const T f[3] = {T(2), T(0.5), T(-1)};
    pw[g() % n] = f[k % 3];
  }
  A x = to_array(a);
  A s = ff::sum(x), p = ff::prod(to_array(pw)), mn = ff::min_reduce(x), mx = ff::max_reduce(x),
    me = ff::mean(x);
  ff::eval(s, p, mn, mx, me);
  long double want_s = 0, want_p = 1;
  for (T v : a)
    want_s += v;
  for (T v : pw)
    want_p *= v;
  CHECK(scalar_of(s) == static_cast<T>(want_s));
  CHECK(scalar_of(p) == static_cast<T>(want_p));
  CHECK(scalar_of(mn) == *std::min_element(a.begin(), a.end()));
  CHECK(scalar_of(mx) == *std::max_element(a.begin(), a.end()));
  CHECK(scalar_of(me) == Approx(static_cast<double>(want_s / n))
                             .epsilon(4 * std::numeric_limits<T>::epsilon())
                             .margin(1e-30));
  CHECK(scalar_of(ff::sum(ff::full<A>(T(0.25), n))) == static_cast<T>(0.25L * n));
  CHECK(scalar_of(ff::mean(ff::full<A>(T(0.25), n))) ==
        Approx(0.25).epsilon(4 * std::numeric_limits<T>::epsilon()));
}

TEMPLATE_TEST_CASE("float reductions of random data agree within the summation error bound",
                   "[array][reduce]", float, double) {
  using T = TestType;
  using A = ff::Array<T>;
  const size_t n = FFT_SIZES();
  const auto a = random_vector<T>(n, 225, -1.0, 1.0);
  const auto near1 = random_vector<T>(n, 226, 0.9999, 1.0001);
  A x = to_array(a);
  A s = ff::sum(x), me = ff::mean(x), p = ff::prod(to_array(near1)), mn = ff::min_reduce(x),
    mx = ff::max_reduce(x);
  ff::eval(s, me, p, mn, mx);
  long double want_s = 0, want_p = 1;
  for (T v : a)
    want_s += v;
  for (T v : near1)
    want_p *= v;
  const double tol = sum_tolerance<T>(n, abs_sum(a));
  CHECK(static_cast<double>(scalar_of(s)) ==
        Approx(static_cast<double>(want_s)).margin(tol).epsilon(0));
  CHECK(static_cast<double>(scalar_of(me)) ==
        Approx(static_cast<double>(want_s / n)).margin(tol / n + 1e-30).epsilon(0));
  CHECK(static_cast<double>(scalar_of(p)) ==
        Approx(static_cast<double>(want_p)).epsilon(2.0 * n * std::numeric_limits<T>::epsilon()));
  CHECK(scalar_of(mn) == *std::min_element(a.begin(), a.end()));
  CHECK(scalar_of(mx) == *std::max_element(a.begin(), a.end()));
}

TEMPLATE_TEST_CASE("min_reduce and max_reduce ignore NaN like std::fmin and std::fmax",
                   "[array][reduce][nan]", float, double) {
  using T = TestType;
  using A = ff::Array<T>;
  const T nan = std::numeric_limits<T>::quiet_NaN();
  const size_t n = FFT_SIZES();
  auto a = random_vector<T>(n, 227);
  for (size_t i = 0; i < n; i += 3)
    a[i] = nan;
  A x = to_array(a);
  T want_min = nan, want_max = nan;
  for (T v : a) {
    want_min = std::fmin(want_min, v);
    want_max = std::fmax(want_max, v);
  }
  const T got_min = scalar_of(ff::min_reduce(x)), got_max = scalar_of(ff::max_reduce(x));
  INFO("n = " << n << ": min_reduce " << show(got_min) << " (expected " << show(want_min)
              << "), max_reduce " << show(got_max) << " (expected " << show(want_max) << ")");
  CHECK(same_value(got_min, want_min));
  CHECK(same_value(got_max, want_max));
}

// ---------------------------------------------------------------------------------------
// prefix_sum and compress

TEMPLATE_TEST_CASE("prefix_sum inclusive and exclusive match the running sum",
                   "[array][prefix_sum]", FFT_NUMERIC_TYPES) {
  using T = TestType;
  using A = ff::Array<T>;
  const size_t n = FFT_SIZES();
  // integers: full range (wrapping); floats: exact partial sums, so any scan order agrees
  const auto a = is_int_v<T> ? random_vector<T>(n, 228) : exact_sum_vector<T>(n, 228);
  A x = to_array(a);
  A inc = ff::prefix_sum(x, false), exc = ff::prefix_sum(x, true);
  A inc_lazy = ff::prefix_sum(x + T(1), false);
  ff::eval(inc, exc, inc_lazy);
  std::vector<T> want_inc(n), want_exc(n), want_lazy(n);
  T run = 0, run_lazy = 0;
  for (size_t i = 0; i < n; ++i) {
    want_exc[i] = run;
    run = r_add<T>(run, a[i]);
    want_inc[i] = run;
    run_lazy = r_add<T>(run_lazy, r_add<T>(a[i], T(1)));
    want_lazy[i] = run_lazy;
  }
  check_exact("inclusive prefix_sum", inc, want_inc);
  check_exact("exclusive prefix_sum", exc, want_exc);
  check_exact("inclusive prefix_sum of x + 1", inc_lazy, want_lazy);
  // a literal scanned: full(1, n)
  check_exact("inclusive prefix_sum of full(1, n)", ff::prefix_sum(ff::full<A>(T(1), n), false), n,
              [](size_t i) { return static_cast<T>(i + 1); });
  check_exact("exclusive prefix_sum of full(1, n)", ff::prefix_sum(ff::full<A>(T(1), n), true), n,
              [](size_t i) { return static_cast<T>(i); });
}

TEMPLATE_TEST_CASE("prefix_sum of random floats agrees within the summation error bound",
                   "[array][prefix_sum]", float, double) {
  using T = TestType;
  const size_t n = FFT_SIZES();
  const auto a = random_vector<T>(n, 229, 0.0, 1.0);
  const auto got = host(ff::prefix_sum(to_array(a), false));
  REQUIRE(got.size() == n);
  long double run = 0;
  size_t bad = 0, first = n;
  for (size_t i = 0; i < n; ++i) {
    run += a[i];  // all positive: sum|x| == the running sum
    const double tol = sum_tolerance<T>(i + 1, static_cast<double>(run));
    if (std::fabs(static_cast<double>(got[i]) - static_cast<double>(run)) > tol) {
      if (bad++ == 0)
        first = i;
    }
  }
  INFO("n = " << n << ", first bad index " << first);
  CHECK(bad == 0);
}

TEST_CASE("compress returns the indices of the true entries in order", "[array][compress]") {
  const size_t n = FFT_SIZES();
  const auto m = random_vector<bool>(n, 230);
  const auto f = random_vector<float>(n, 231);
  ff::Bool mask = to_array(m);
  std::vector<uint32_t> want, want_gt;
  for (size_t i = 0; i < n; ++i) {
    if (m[i])
      want.push_back(static_cast<uint32_t>(i));
    if (f[i] > 25.f)
      want_gt.push_back(static_cast<uint32_t>(i));
  }
  ff::UInt32 c = ff::compress(mask);
  CHECK(c.size() == want.size());
  check_exact("compress(mask)", c, want);
  // a mask computed by a kernel, then the indices used for a gather
  ff::Float x = to_array(f);
  ff::UInt32 c_gt = ff::compress(x > 25.f);
  check_exact("compress(x > 25)", c_gt, want_gt);
  ff::Float picked = ff::gather<ff::Float>(x, c_gt);
  check_exact("gather(x, compress(x > 25))", picked, want_gt.size(),
              [&](size_t j) { return f[want_gt[j]]; });
  // all false, all true (literals)
  CHECK(host(ff::compress(ff::full<ff::Bool>(false, n))).empty());
  check_exact("compress(full(true, n))", ff::compress(ff::full<ff::Bool>(true, n)), n,
              [](size_t i) { return static_cast<uint32_t>(i); });
  CHECK(host(ff::compress(ff::Bool())).empty());
}
