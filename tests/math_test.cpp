// The math library's semantics (accuracy sweeps: math_accuracy_test.cpp): C's special values,
// exact rounding and sign functions, bit counts of every integer type, clamp and lerp, scalars
// in every argument position, constant folding as kernels compute, compile-time refusal of
// misuse, and the new opcodes through recordings, files and frozen functions.
#include <bit>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numbers>
#include <vector>

#include "freezeframe/freezeframe.h"
#include "support/record_corpus.h"
#include "support/temp_file.h"

using ff::Float;
using ff::Float64;

namespace {

template <class T>
bool same_bits(T a, T b) {
  if (std::isnan(a) && std::isnan(b))
    return true;
  return std::bit_cast<std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>>(a) ==
         std::bit_cast<std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>>(b);
}

// Misuse is refused by the constraints: generic code can ask.
template <class A>
concept HasTan = requires(A a) {
  ff::tan(a);
};

template <class A>
concept HasPopcnt = requires(A a) {
  ff::popcnt(a);
};

template <class A>
concept HasLerp = requires(A a) {
  ff::lerp(a, a, a);
};

template <class A, class B>
concept HasPow = requires(A a, B b) {
  ff::pow(a, b);
};

static_assert(HasTan<Float> && HasTan<Float64> && !HasTan<ff::Int32> && !HasTan<ff::Bool>);
static_assert(HasPopcnt<ff::UInt64> && HasPopcnt<ff::Int32> && !HasPopcnt<Float> &&
              !HasPopcnt<ff::Bool>);
static_assert(HasLerp<Float> && !HasLerp<ff::UInt32>);
static_assert(HasPow<Float, float> && HasPow<double, Float64> && HasPow<Float, int> &&
              !HasPow<ff::Int32, ff::Int32> && !HasPow<Float, Float64>);

}  // namespace

TEST_CASE("math: special values follow C, in both widths", "[math]") {
  ffr::fresh();
  auto check = []<class T>(T) {
    using A = ff::Array<T>;
    using L = std::numeric_limits<T>;
    const T inf = L::infinity(), nan = L::quiet_NaN(), pi = std::numbers::pi_v<T>;
    auto one = [](A v) { return v.to_vector().at(0); };
    // Arrays, not literals, so the kernels compute them (literals of these fold or not: below).
    auto arr = [](T v) { return A::from(std::vector<T>{v, v, v}); };
    CHECK(same_bits(one(ff::atan2(arr(T(0)), arr(T(-0.0)))), pi));
    CHECK(same_bits(one(ff::atan2(arr(T(-0.0)), arr(T(-0.0)))), -pi));
    CHECK(same_bits(one(ff::atan2(arr(T(0)), arr(T(0)))), T(0)));
    CHECK(same_bits(one(ff::atan2(arr(T(-0.0)), arr(T(1)))), T(-0.0)));
    CHECK(same_bits(one(ff::atan2(arr(inf), arr(-inf))), T(3) * pi / 4));
    CHECK(one(ff::pow(arr(T(0)), arr(T(0)))) == T(1));
    CHECK(one(ff::pow(arr(nan), arr(T(0)))) == T(1));
    CHECK(one(ff::pow(arr(T(1)), arr(nan))) == T(1));
    CHECK(one(ff::pow(arr(T(-1)), arr(inf))) == T(1));
    CHECK(std::isnan(one(ff::pow(arr(T(-2)), arr(T(0.5))))));
    CHECK(one(ff::pow(arr(T(-2)), arr(T(3)))) == T(-8));
    CHECK(same_bits(one(ff::pow(arr(T(-0.0)), arr(T(-1)))), -inf));
    CHECK(std::isnan(one(ff::log2(arr(T(-1))))));
    CHECK(one(ff::log2(arr(T(0)))) == -inf);
    CHECK(one(ff::log2(arr(T(1024)))) == T(10));
    CHECK(one(ff::exp2(arr(T(-3)))) == T(0.125));
    CHECK(one(ff::exp2(arr(-inf))) == T(0));
    CHECK(one(ff::exp2(arr(L::min_exponent - L::digits))) == L::denorm_min());  // subnormal
    CHECK(same_bits(one(ff::acosh(arr(T(1)))), T(0)));
    CHECK(std::isnan(one(ff::acosh(arr(T(0.5))))));
    CHECK(one(ff::atanh(arr(T(1)))) == inf);
    CHECK(one(ff::atanh(arr(T(-1)))) == -inf);
    CHECK(std::isnan(one(ff::asin(arr(T(2))))));
    CHECK(same_bits(one(ff::asin(arr(T(-0.0)))), T(-0.0)));
    CHECK(one(ff::acos(arr(T(1)))) == T(0));
    CHECK(one(ff::erf(arr(inf))) == T(1));
    CHECK(one(ff::erf(arr(-inf))) == T(-1));
    CHECK(same_bits(one(ff::erf(arr(T(-0.0)))), T(-0.0)));
    CHECK(one(ff::tanh(arr(inf))) == T(1));
    CHECK(one(ff::tanh(arr(-inf))) == T(-1));
    CHECK(one(ff::cosh(arr(-inf))) == inf);
    CHECK(one(ff::sinh(arr(-inf))) == -inf);
    CHECK(one(ff::cbrt(arr(T(-8)))) == T(-2));
    CHECK(same_bits(one(ff::cbrt(arr(T(-0.0)))), T(-0.0)));
    CHECK(std::isnan(one(ff::tan(arr(inf)))));
    CHECK(same_bits(one(ff::tan(arr(T(-0.0)))), T(-0.0)));
    CHECK(same_bits(one(ff::rsqrt(arr(T(-0.0)))), -inf));
    CHECK(same_bits(one(ff::rsqrt(arr(T(0)))), inf));
    CHECK(same_bits(one(ff::rsqrt(arr(inf))), T(0)));
    CHECK(std::isnan(one(ff::rsqrt(arr(T(-1))))));
    CHECK(one(ff::rsqrt(arr(T(4)))) == T(0.5));
    CHECK(same_bits(one(ff::rcp(arr(T(-0.0)))), -inf));
    CHECK(same_bits(one(ff::rcp(arr(-inf))), T(-0.0)));
    CHECK(one(ff::rcp(arr(T(4)))) == T(0.25));
    // NaN in gives NaN out for every one-argument function.
    A n = arr(nan);
    for (const A& r :
         {ff::tan(n), ff::asin(n), ff::acos(n), ff::atan(n), ff::sinh(n), ff::cosh(n), ff::tanh(n),
          ff::asinh(n), ff::acosh(n), ff::atanh(n), ff::exp2(n), ff::log2(n), ff::erf(n),
          ff::cbrt(n), ff::round(n), ff::trunc(n), ff::rsqrt(n), ff::rcp(n)})
      CHECK(std::isnan(one(r)));
  };
  check(0.f);
  check(0.0);
}

TEST_CASE("math: round, trunc and copysign are exact, halfway cases away from zero", "[math]") {
  ffr::fresh();
  auto check = []<class T>(T) {
    using A = ff::Array<T>;
    using L = std::numeric_limits<T>;
    const T big = T(1) / L::epsilon();  // 2^23 / 2^52: every value from here on is an integer
    std::vector<T> x = {T(0.5),
                        T(-0.5),
                        T(1.5),
                        T(-1.5),
                        T(2.5),
                        T(-2.5),
                        T(0.49),
                        T(-0.49),
                        T(0),
                        T(-0.0),
                        T(0.3),
                        T(-0.3),
                        T(0.5) - L::epsilon() / 4,
                        big - T(0.5),
                        big + 1,
                        -big - 1,
                        L::max(),
                        -L::max(),
                        L::infinity(),
                        -L::infinity(),
                        L::denorm_min(),
                        -L::denorm_min(),
                        L::min(),
                        T(7.999999),
                        T(-123.5)};
    A a = A::from(x);
    auto r = ff::round(a).to_vector(), t = ff::trunc(a).to_vector();
    for (size_t i = 0; i < x.size(); ++i) {
      INFO(x[i]);
      CHECK(same_bits(r[i], std::round(x[i])));
      CHECK(same_bits(t[i], std::trunc(x[i])));
    }
    // copysign: every sign combination, zeros, infinities and NaN magnitudes keep their bits.
    std::vector<T> mag = {T(1), T(-2), T(0), T(-0.0), L::infinity(), L::quiet_NaN(), T(3)};
    std::vector<T> sgn = {T(-1), T(1), T(-0.0), T(0), -L::infinity(), T(-5), L::quiet_NaN()};
    auto c = ff::copysign(A::from(mag), A::from(sgn)).to_vector();
    for (size_t i = 0; i < mag.size(); ++i)
      CHECK(same_bits(c[i], std::copysign(mag[i], sgn[i])));
  };
  check(0.f);
  check(0.0);
}

TEST_CASE("math: popcnt, clz and ctz in every integer type, zero giving the width", "[math]") {
  ffr::fresh();
  auto check = []<class T>(T) {
    using A = ff::Array<T>;
    using U = std::make_unsigned_t<T>;
    std::vector<T> x = {T(0),
                        T(1),
                        T(2),
                        T(3),
                        T(-1),
                        std::numeric_limits<T>::min(),
                        std::numeric_limits<T>::max(),
                        T(0x50),
                        T(T(1) << (sizeof(T) * 8 - 2))};
    for (int k = 0; k < 40; ++k)
      x.push_back(static_cast<T>(0x9E3779B97F4A7C15ull * (k + 1)));
    A a = A::from(x);
    auto p = ff::popcnt(a).to_vector(), l = ff::clz(a).to_vector(), r = ff::ctz(a).to_vector();
    for (size_t i = 0; i < x.size(); ++i) {
      INFO(+x[i]);
      U u = static_cast<U>(x[i]);
      CHECK(p[i] == T(std::popcount(u)));
      CHECK(l[i] == T(std::countl_zero(u)));
      CHECK(r[i] == T(std::countr_zero(u)));
    }
    CHECK(ff::clz(A::from({T(0)})).to_vector()[0] == T(sizeof(T) * 8));
    CHECK(ff::ctz(A::from({T(0)})).to_vector()[0] == T(sizeof(T) * 8));
  };
  check(int32_t{});
  check(uint32_t{});
  check(int64_t{});
  check(uint64_t{});
}

TEST_CASE("math: clamp is std::clamp and lerp is exact at its ends", "[math]") {
  ffr::fresh();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> x = {
      -2.f, -1.f, -0.f, 0.f, 0.5f, 1.f, 3.f, nan, std::numeric_limits<float>::infinity()};
  auto c = ff::clamp(Float::from(x), -1.f, 1.f).to_vector();
  for (size_t i = 0; i < x.size(); ++i) {
    INFO(x[i]);
    float want = std::isnan(x[i]) ? nan : std::clamp(x[i], -1.f, 1.f);
    CHECK(same_bits(c[i], want));
  }
  // Array bounds, a scalar value; integers.
  CHECK(ff::clamp(5.f, Float::from({0.f, 6.f}), Float::from({1.f, 7.f})).to_vector() ==
        std::vector<float>{1.f, 6.f});
  CHECK(ff::clamp(ff::Int32::from({-5, 0, 5}), -1, 2).to_vector() == std::vector<int>{-1, 0, 2});
  CHECK(ff::clamp(ff::UInt32::from({0u, 9u}), 3u, ff::UInt32::from({4u, 8u})).to_vector() ==
        std::vector<uint32_t>{3u, 8u});
  // lerp: ends exact for values whose difference is not representable, midpoints, scalars.
  std::vector<double> a = {0.1, -1e300, 3.0, 1e-310}, b = {0.7, 1e300, 3.0, -2e-310};
  auto at0 = ff::lerp(Float64::from(a), Float64::from(b), 0.0).to_vector();
  auto at1 = ff::lerp(Float64::from(a), Float64::from(b), 1.0).to_vector();
  for (size_t i = 0; i < a.size(); ++i) {
    CHECK(at0[i] == a[i]);
    CHECK(at1[i] == b[i]);
  }
  CHECK(ff::lerp(2.f, 4.f, Float::from({0.25f, 0.5f, 2.f})).to_vector() ==
        std::vector<float>{2.5f, 3.f, 6.f});
  CHECK(ff::lerp(Float::from({0.f, 10.f}), 20.f, 0.5f).to_vector() ==
        std::vector<float>{10.f, 15.f});
}

TEST_CASE("math: scalars in every position of atan2, pow and copysign", "[math]") {
  ffr::fresh();
  Float x = Float::from({1.f, 2.f, 4.f});
  CHECK(ff::pow(x, 2).to_vector() == std::vector<float>{1.f, 4.f, 16.f});
  CHECK(ff::pow(2.f, x).to_vector() == std::vector<float>{2.f, 4.f, 16.f});
  CHECK(ff::pow(x, 0.5).to_vector() == std::vector<float>{1.f, std::sqrt(2.f), 2.f});
  CHECK(ff::copysign(x, -1).to_vector() == std::vector<float>{-1.f, -2.f, -4.f});
  CHECK(ff::copysign(3, -x).to_vector() == std::vector<float>{-3.f, -3.f, -3.f});
  auto a = ff::atan2(x, 1.f).to_vector();
  auto b = ff::atan2(1.f, x).to_vector();
  for (size_t i = 0; i < 3; ++i) {
    float v = (std::vector<float>{1.f, 2.f, 4.f})[i];
    CHECK(a[i] == Approx(std::atan2(v, 1.f)));
    CHECK(b[i] == Approx(std::atan2(1.f, v)));
  }
  // Size-1 arrays mixed with wider ones broadcast like any operand.
  CHECK(ff::pow(Float::from({3.f}), x).to_vector() == std::vector<float>{3.f, 9.f, 81.f});
}

TEST_CASE("math: literal-only calls fold exactly as the kernels compute, or are left to them",
          "[math]") {
  ffr::fresh();
  // Folded on the host: round, trunc, copysign, the bit counts, and clamp/lerp/rsqrt/rcp
  // (compositions of folded operations). Their literal results equal the kernel's.
  auto kernel = [](float v) { return Float::from({v, v}); };
  for (float v : {2.5f, -2.5f, 0.49999997f, -0.f, 7.25f}) {
    INFO(v);
    CHECK(same_bits(ff::round(Float(v)).to_vector()[0], ff::round(kernel(v)).to_vector()[0]));
    CHECK(same_bits(ff::trunc(Float(v)).to_vector()[0], ff::trunc(kernel(v)).to_vector()[0]));
    CHECK(same_bits(ff::copysign(Float(v), Float(-1.f)).to_vector()[0],
                    ff::copysign(kernel(v), -1.f).to_vector()[0]));
    CHECK(same_bits(ff::rsqrt(Float(v)).to_vector()[0], ff::rsqrt(kernel(v)).to_vector()[0]));
    CHECK(same_bits(ff::lerp(Float(v), 3.f, 0.3f).to_vector()[0],
                    ff::lerp(kernel(v), 3.f, 0.3f).to_vector()[0]));
    // Transcendentals of literals go to a kernel too: the same bits as an array's.
    CHECK(same_bits(ff::tanh(Float(v)).to_vector()[0], ff::tanh(kernel(v)).to_vector()[0]));
    CHECK(
        same_bits(ff::pow(Float(v), 1.5f).to_vector()[0], ff::pow(kernel(v), 1.5f).to_vector()[0]));
  }
  for (uint32_t v : {0u, 1u, 0x80000000u, 0xF0F0u}) {
    ff::UInt32 lit(v), arr = ff::UInt32::from({v, v});
    CHECK(ff::popcnt(lit).to_vector()[0] == ff::popcnt(arr).to_vector()[0]);
    CHECK(ff::clz(lit).to_vector()[0] == ff::clz(arr).to_vector()[0]);
    CHECK(ff::ctz(lit).to_vector()[0] == ff::ctz(arr).to_vector()[0]);
  }
}

namespace {

/// Every new function in one expression (values kept in every function's domain).
Float all_math(const Float& x, const ff::UInt32& i) {
  Float s = x * 0.01f;
  Float a = ff::tan(s) + ff::asin(s) + ff::acos(s) + ff::atan(x) + ff::sinh(s) + ff::cosh(s) +
            ff::tanh(x) + ff::asinh(x) + ff::acosh(x + 1.f) + ff::atanh(s) + ff::exp2(s) +
            ff::log2(x + 1.f) + ff::erf(s) + ff::cbrt(x) + ff::round(x) + ff::trunc(x) +
            ff::atan2(x, s + 1.f) + ff::pow(x + 1.f, s) + ff::copysign(x, -s) + ff::rsqrt(x + 1.f) +
            ff::rcp(x + 1.f) + ff::clamp(x, 1.f, 6.f) + ff::lerp(x, s, 0.25f);
  return a + ff::cast<Float>(ff::popcnt(i) + ff::clz(i) + ff::ctz(i));
}

std::vector<float> host_all_math(const std::vector<float>& x, const std::vector<uint32_t>& i) {
  std::vector<float> out;
  for (size_t k = 0; k < x.size(); ++k) {
    float v = x[k], s = v * 0.01f;
    uint32_t u = i.size() == 1 ? i[0] : i[k];
    double a = std::tan(s) + std::asin(s) + std::acos(s) + std::atan(v) + std::sinh(s) +
               std::cosh(s) + std::tanh(v) + std::asinh(v) + std::acosh(v + 1.f) + std::atanh(s) +
               std::exp2(s) + std::log2(v + 1.f) + std::erf(s) + std::cbrt(v) + std::round(v) +
               std::trunc(v) + std::atan2(v, s + 1.f) + std::pow(v + 1.f, s) +
               std::copysign(v, -s) + 1 / std::sqrt(v + 1.f) + 1 / (v + 1.f) +
               std::clamp(v, 1.f, 6.f) + (v + 0.25 * (s - v));
    out.push_back(
        static_cast<float>(a + std::popcount(u) + std::countl_zero(u) + std::countr_zero(u)));
  }
  return out;
}

void check_near(const std::vector<float>& got, const std::vector<float>& want) {
  REQUIRE(got.size() == want.size());
  for (size_t k = 0; k < got.size(); ++k)
    CHECK(got[k] == Approx(want[k]).epsilon(1e-5).margin(1e-4));
}

}  // namespace

TEST_CASE("math: recorded at one size, the new opcodes replay at every size and from a file",
          "[math][record]") {
  ffr::fresh();
  auto input = [](size_t n) {
    std::vector<float> x(n);
    std::vector<uint32_t> i(n);
    for (size_t k = 0; k < n; ++k) {
      x[k] = 0.37f * static_cast<float>(k % 23);
      i[k] = static_cast<uint32_t>(k * 2654435761u);
    }
    return std::pair{x, i};
  };
  auto [x0, i0] = input(17);
  Float x = Float::from(x0);
  ff::UInt32 i = ff::UInt32::from(i0);
  ff::Recording r = ff::record({x, i}, [&] { return std::vector<ff::AnyArray>{all_math(x, i)}; });
  fft::TempDir dir;
  r.save(dir.file("math.ffr"));
  ff::Recording loaded = ff::Recording::load(dir.file("math.ffr"));
  for (size_t n : {0, 1, 2, 3, 31, 1000}) {
    INFO("n = " << n);
    auto [xv, iv] = input(n);
    std::vector<float> want = host_all_math(xv, iv);
    for (ff::Recording* rec : {&r, &loaded}) {
      auto out = rec->replay({Float::from(xv), ff::UInt32::from(iv)});
      check_near(out[0].as<Float>().to_vector(), want);
    }
  }
}

TEST_CASE("math: a frozen function of every new function replays at new sizes and size-1 inputs",
          "[math][freeze]") {
  ffr::fresh();
  auto f = ff::freeze(all_math);
  for (size_t n : {5, 0, 1, 2, 13, 4099}) {
    INFO("n = " << n);
    std::vector<float> xv(n);
    for (size_t k = 0; k < n; ++k)
      xv[k] = 0.11f * static_cast<float>(k % 50);
    std::vector<uint32_t> iv = {0xF00Du};  // a size-1 index array widens
    check_near(f(Float::from(xv), ff::UInt32::from(iv)).to_vector(), host_all_math(xv, iv));
    // One recording, plus one for the call whose inputs all have size 1 (keyed apart).
    CHECK(f.n_recordings() == (n == 5 || n == 0 ? 1u : 2u));
  }
}
