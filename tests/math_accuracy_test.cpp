// Accuracy of the math library on the default (LLVM) backend: every function and type against a
// long double reference over dense sweeps of its main ranges, magnitudes across the whole
// finite range (subnormals included), random bit patterns and the edge values. Finite results
// must be within the bound docs/math.md states (ulp of the exact result); results that are
// NaN, infinite or zero must be exactly C's (the sign of zero included).
//
// FF_MATH_SAMPLES=N scales the number of inputs (default 40,000 per range); FF_MATH_REPORT=1
// prints the table docs/math.md quotes.
#include <algorithm>
#include <bit>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "freezeframe/freezeframe.h"
#include "support/ulp.h"

namespace {

size_t samples() {
  const char* s = std::getenv("FF_MATH_SAMPLES");
  return s ? std::max<size_t>(std::strtoull(s, nullptr, 10), 100) : 40000;
}

bool report() {
  const char* s = std::getenv("FF_MATH_REPORT");
  return s && *s == '1';
}

using ff_test::ulp_error;

template <class T>
std::vector<T> uniform(std::mt19937_64& rng, double lo, double hi, size_t n) {
  std::uniform_real_distribution<double> d(lo, hi);
  std::vector<T> v(n);
  for (T& x : v)
    x = static_cast<T>(d(rng));
  return v;
}

/// |x| log-uniform over [lo, hi], both signs (or only positive).
template <class T>
std::vector<T> magnitudes(std::mt19937_64& rng, double lo, double hi, size_t n, bool sign) {
  std::uniform_real_distribution<double> d(std::log2(lo), std::log2(hi));
  std::vector<T> v(n);
  for (size_t i = 0; i < n; ++i) {
    T x = static_cast<T>(std::exp2(d(rng)));
    v[i] = sign && i % 2 ? -x : x;
  }
  return v;
}

/// Random bit patterns of finite values (every exponent equally likely per bit).
template <class T>
std::vector<T> bit_patterns(std::mt19937_64& rng, size_t n) {
  using Bits = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
  std::vector<T> v;
  while (v.size() < n) {
    T x = std::bit_cast<T>(static_cast<Bits>(rng()));
    if (std::isfinite(x))
      v.push_back(x);
  }
  return v;
}

template <class T>
std::vector<T> edge_values() {
  using L = std::numeric_limits<T>;
  std::vector<T> v = {T(0),
                      T(-0.0),
                      T(1),
                      T(-1),
                      T(0.5),
                      T(-0.5),
                      T(2),
                      T(-2),
                      L::infinity(),
                      -L::infinity(),
                      L::quiet_NaN(),
                      L::denorm_min(),
                      -L::denorm_min(),
                      L::min(),
                      -L::min(),
                      L::max(),
                      -L::max(),
                      L::epsilon(),
                      T(1) - L::epsilon() / 2,
                      T(1) + L::epsilon()};
  // Overflow and underflow thresholds of exp-like functions, and their neighbours.
  for (double t :
       {88.72,   89.42,   127.99,  128.0, -149.0, -150.0, -103.97, 709.78, 710.48, 1023.99, 1024.0,
        -1074.0, -1075.0, -745.13, 0.88,  1e-4,   3.0,    6.0,     10.0,   20.0,   40.0})
    for (T x : {static_cast<T>(t), static_cast<T>(-t)})
      v.push_back(x);
  return v;
}

std::string fmt_range(double lo, double hi) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "[%g, %g]", lo, hi);
  return buf;
}

struct Range {
  std::string name;
  double max_ulp = 0;
  size_t count = 0;
};

struct Unary {
  const char* name;
  ff::Float (*f32)(const ff::Float&);
  ff::Float64 (*f64)(const ff::Float64&);
  long double (*ref)(long double);
  double bound;  // ulp
  // Main ranges swept densely, [lo, hi] each.
  std::vector<std::pair<double, double>> dense;
};

template <class T>
auto apply(const Unary& u, const std::vector<T>& x) {
  if constexpr (std::is_same_v<T, float>)
    return u.f32(ff::Float::from(x)).to_vector();
  else
    return u.f64(ff::Float64::from(x)).to_vector();
}

/// Checks got[i] against want(i) for every i: special results exactly, finite ones within
/// `bound`; returns the largest error seen and counts failures in `bad` (arg(i) names the
/// arguments of a failure).
template <class T, class Want, class Arg>
double check_values(const char* name, const std::vector<T>& got, const Want& want_of,
                    const Arg& arg, double bound, size_t& bad) {
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    long double want = want_of(i);
    double err = ulp_error<T>(got[i], want);  // NaN, infinite and zero results exactly as C
    worst = std::max(worst, err);
    if (err > bound && bad++ < 8)
      UNSCOPED_INFO(name << "(" << arg(i) << ") = " << got[i] << ", exact "
                         << static_cast<double>(want) << " (" << err << " ulp)");
  }
  return worst;
}

template <class T>
void sweep_unary(const Unary& u) {
  const char* type = sizeof(T) == 4 ? "float32" : "float64";
  INFO(u.name << " " << type);
  std::mt19937_64 rng(std::hash<std::string>{}(u.name) + sizeof(T));
  const size_t n = samples();
  size_t bad = 0;
  std::vector<Range> ranges;
  auto run = [&](const std::string& name, const std::vector<T>& x) {
    auto got = apply(u, x);
    REQUIRE(got.size() == x.size());
    double worst = check_values<T>(
        u.name, got, [&](size_t k) { return u.ref(x[k]); }, [&](size_t k) { return x[k]; }, u.bound,
        bad);
    ranges.push_back({name, worst, x.size()});
  };
  for (auto [lo, hi] : u.dense)
    run(fmt_range(lo, hi), uniform<T>(rng, lo, hi, n));
  using L = std::numeric_limits<T>;
  run("all magnitudes", magnitudes<T>(rng, static_cast<double>(L::denorm_min()),
                                      static_cast<double>(L::max()), n, true));
  run("bit patterns", bit_patterns<T>(rng, n));
  run("edge values", edge_values<T>());
  CHECK(bad == 0);
  if (report())
    for (const Range& r : ranges)
      std::printf("| %s | %s | %s | %.2f | %zu |\n", u.name, type, r.name.c_str(), r.max_ulp,
                  r.count);
}

#define FF_UNARY_CASE(fn)                                                                       \
  [](const ff::Float& a) { return ff::fn(a); }, [](const ff::Float64& a) { return ff::fn(a); }, \
      [](long double v) { return std::fn(v); }

const double kBound = 4.0;

std::vector<Unary> unary_functions() {
  return {
      {"tan", FF_UNARY_CASE(tan), kBound, {{-1.6, 1.6}, {-100, 100}, {-1e4, 1e4}}},
      {"asin", FF_UNARY_CASE(asin), kBound, {{-1, 1}, {0.9, 1}}},
      {"acos", FF_UNARY_CASE(acos), kBound, {{-1, 1}, {-1, -0.9}}},
      {"atan", FF_UNARY_CASE(atan), kBound, {{-4, 4}, {-1e4, 1e4}}},
      {"sinh", FF_UNARY_CASE(sinh), kBound, {{-1, 1}, {-90, 90}, {-710, 710}}},
      {"cosh", FF_UNARY_CASE(cosh), kBound, {{-1, 1}, {-90, 90}, {-710, 710}}},
      {"tanh", FF_UNARY_CASE(tanh), kBound, {{-1, 1}, {-20, 20}}},
      {"asinh", FF_UNARY_CASE(asinh), kBound, {{-2, 2}, {-1e6, 1e6}}},
      {"acosh", FF_UNARY_CASE(acosh), kBound, {{1, 2}, {1, 1e6}}},
      {"atanh", FF_UNARY_CASE(atanh), kBound, {{-1, 1}, {0.99, 1}}},
      {"exp2", FF_UNARY_CASE(exp2), kBound, {{-1, 1}, {-150, 128}, {-1075, 1024}}},
      {"log2", FF_UNARY_CASE(log2), kBound, {{0.5, 2}, {0, 1e6}}},
      {"erf", FF_UNARY_CASE(erf), kBound, {{-1, 1}, {-6, 6}}},
      {"cbrt", FF_UNARY_CASE(cbrt), kBound, {{-8, 8}, {-1e6, 1e6}}},
      {"round", FF_UNARY_CASE(round), 0, {{-10, 10}, {-1e7, 1e7}}},
      {"trunc", FF_UNARY_CASE(trunc), 0, {{-10, 10}, {-1e7, 1e7}}},
      // Two correctly rounded operations (sqrt, then the division).
      {"rsqrt",
       [](const ff::Float& a) { return ff::rsqrt(a); },
       [](const ff::Float64& a) { return ff::rsqrt(a); },
       [](long double v) { return 1 / std::sqrt(v); },
       1.5,
       {{0, 4}, {0, 1e6}}},
      {"rcp",
       [](const ff::Float& a) { return ff::rcp(a); },
       [](const ff::Float64& a) { return ff::rcp(a); },
       [](long double v) { return 1 / v; },
       0.5,
       {{-4, 4}}},
  };
}

}  // namespace

TEST_CASE("math: every unary function within its stated ulp bound, specials as C", "[math]") {
  for (const Unary& u : unary_functions()) {
    sweep_unary<float>(u);
    sweep_unary<double>(u);
  }
}

namespace {

template <class T>
void sweep_binary(
    const char* name,
    const std::function<std::vector<T>(const std::vector<T>&, const std::vector<T>&)>& f,
    long double (*ref)(long double, long double),
    const std::vector<std::pair<std::vector<T>, std::vector<T>>>& sets,
    const std::vector<std::string>& set_names) {
  const char* type = sizeof(T) == 4 ? "float32" : "float64";
  INFO(name << " " << type);
  size_t bad = 0;
  for (size_t s = 0; s < sets.size(); ++s) {
    const std::vector<T>& x = sets[s].first;  // not a structured binding: lambdas capture it
    const std::vector<T>& y = sets[s].second;
    auto got = f(x, y);
    REQUIRE(got.size() == x.size());
    double worst = check_values<T>(
        name, got, [&](size_t k) { return ref(x[k], y[k]); },
        [&](size_t k) { return std::to_string(x[k]) + ", " + std::to_string(y[k]); }, kBound, bad);
    if (report())
      std::printf("| %s | %s | %s | %.2f | %zu |\n", name, type, set_names[s].c_str(), worst,
                  x.size());
  }
  CHECK(bad == 0);
}

template <class T>
std::vector<T> concat(std::vector<T> a, const std::vector<T>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

/// Every pair of edge values.
template <class T>
std::pair<std::vector<T>, std::vector<T>> edge_pairs() {
  std::vector<T> e = edge_values<T>(), x, y;
  for (T a : e)
    for (T b : e) {
      x.push_back(a);
      y.push_back(b);
    }
  return {x, y};
}

template <class T>
void sweep_atan2_pow() {
  using A = ff::Array<T>;
  using L = std::numeric_limits<T>;
  std::mt19937_64 rng(7 + sizeof(T));
  const size_t n = samples();
  {
    // atan2: points on circles of every radius, points with far apart coordinates, bit patterns.
    std::vector<T> ang = uniform<T>(rng, -M_PI, M_PI, n), x, y;
    auto rad = magnitudes<T>(rng, 1e-30, 1e30, n, false);
    for (size_t i = 0; i < n; ++i) {
      y.push_back(static_cast<T>(rad[i] * std::sin(static_cast<double>(ang[i]))));
      x.push_back(static_cast<T>(rad[i] * std::cos(static_cast<double>(ang[i]))));
    }
    auto far_y = magnitudes<T>(rng, static_cast<double>(L::denorm_min()),
                               static_cast<double>(L::max()), n, true);
    auto far_x = magnitudes<T>(rng, static_cast<double>(L::denorm_min()),
                               static_cast<double>(L::max()), n, true);
    auto [ey, ex] = edge_pairs<T>();
    sweep_binary<T>(
        "atan2",
        [](const std::vector<T>& a, const std::vector<T>& b) {
          return ff::atan2(A::from(a), A::from(b)).to_vector();
        },
        [](long double a, long double b) { return std::atan2(a, b); },
        {{y, x}, {far_y, far_x}, {bit_patterns<T>(rng, n), bit_patterns<T>(rng, n)}, {ey, ex}},
        {"circles", "all magnitudes", "bit patterns", "edge pairs"});
  }
  {
    // pow: bases of every magnitude with exponents that keep the result finite, integer
    // exponents of negative bases, bit patterns, every pair of edge values.
    auto base = magnitudes<T>(rng, 1e-30, 1e30, n, false);
    auto target = uniform<T>(rng, sizeof(T) == 4 ? -100 : -740, sizeof(T) == 4 ? 88 : 709, n);
    std::vector<T> expo;
    for (size_t i = 0; i < n; ++i)
      expo.push_back(base[i] == 1 ? T(1)
                                  : static_cast<T>(static_cast<double>(target[i]) /
                                                   std::log(static_cast<double>(base[i]))));
    auto neg = uniform<T>(rng, -10, -0.1, n);
    std::vector<T> ints;
    for (size_t i = 0; i < n; ++i)
      ints.push_back(static_cast<T>(static_cast<int>(rng() % 61) - 30));
    auto near_one = uniform<T>(rng, 0.99, 1.01, n);
    auto big_expo = uniform<T>(rng, -1e4, 1e4, n);
    auto [eb, ee] = edge_pairs<T>();
    sweep_binary<T>(
        "pow",
        [](const std::vector<T>& a, const std::vector<T>& b) {
          return ff::pow(A::from(a), A::from(b)).to_vector();
        },
        [](long double a, long double b) { return std::pow(a, b); },
        {{base, expo},
         {neg, ints},
         {near_one, big_expo},
         {bit_patterns<T>(rng, n), bit_patterns<T>(rng, n)},
         {eb, ee}},
        {"finite results", "negative base, integer exponent", "base near 1", "bit patterns",
         "edge pairs"});
  }
}

}  // namespace

TEST_CASE("math: atan2 and pow within 4 ulp, specials as C", "[math]") {
  sweep_atan2_pow<float>();
  sweep_atan2_pow<double>();
}
