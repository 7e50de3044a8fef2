// Construction (from, full, zeros, arange, scalars), to_vector, cast<> over every pair of
// element types and bitcast<>, against the scalar reference (tests/support/reference.h).
#include <freezeframe/freezeframe.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

#include "support/reference.h"

using namespace fft;

#define FFT_SIZES() GENERATE(as<size_t>{}, 1, 7, 1000, fft::kLargeSize)

#define FFT_ALL_TYPES bool, int32_t, uint32_t, int64_t, uint64_t, float, double
#define FFT_NUMERIC_TYPES int32_t, uint32_t, int64_t, uint64_t, float, double

namespace {

/// A value of T that is neither 0 nor 1 where the type allows (to tell fills apart).
template <class T>
T sample_value() {
  if constexpr (is_bool_v<T>)
    return true;
  else if constexpr (is_float_v<T>)
    return T(-2.75);
  else if constexpr (std::is_signed_v<T>)
    return std::numeric_limits<T>::min() + 5;
  else
    return std::numeric_limits<T>::max() - 5;
}

/// Source data for casts: the awkward values first, then random ones.
template <class T>
std::vector<T> cast_source(size_t n, uint64_t salt) {
  std::vector<T> specials;
  if constexpr (is_bool_v<T>) {
    specials = {true, false};
  } else if constexpr (is_int_v<T>) {
    using L = std::numeric_limits<T>;
    specials = {T(0),
                T(1),
                static_cast<T>(-1),
                L::min(),
                L::max(),
                static_cast<T>(L::max() / 2 + 1),
                static_cast<T>(16777217),
                static_cast<T>(0x7fffffffULL),
                static_cast<T>(0x80000000ULL),
                static_cast<T>(0xffffffffULL),
                static_cast<T>(0x100000001ULL)};
  } else {
    const T inf = std::numeric_limits<T>::infinity();
    specials = {T(0),
                T(-0.0),
                T(0.5),
                T(-0.5),
                T(1.5),
                T(-1.5),
                T(2.5),
                T(-0.99),
                T(-1),
                T(1e10),
                T(-1e10),
                std::ldexp(T(1), 31),
                -std::ldexp(T(1), 31),
                std::ldexp(T(1), 32),
                std::ldexp(T(1), 63),
                -std::ldexp(T(1), 63),
                std::ldexp(T(1), 64),
                T(3e9),
                T(-3e9),
                T(1e30),
                T(-1e30),
                inf,
                -inf,
                T(2147483520.0),
                T(-2147483520.0),
                T(4294967040.0),
                T(123456.789),
                T(-123456.789),
                T(16777217)};
  }
  std::vector<T> v;
  if constexpr (is_float_v<T>) {
    // half small (exact in every integer type after truncation), half huge
    const auto small = random_vector<T>(n, salt, -1e3, 1e3);
    const auto big = random_vector<T>(n, salt + 1, -1e20, 1e20);
    v.resize(n);
    for (size_t i = 0; i < n; ++i)
      v[i] = (i % 2) ? big[i] : small[i];
  } else {
    v = random_vector<T>(n, salt);
  }
  for (size_t i = 0; i < n && i < specials.size(); ++i)
    v[i] = specials[i];
  return v;
}

}  // namespace

TEMPLATE_TEST_CASE("arrays are built from host data and read back unchanged", "[array][construct]",
                   FFT_ALL_TYPES) {
  using T = TestType;
  using A = ff::Array<T>;
  const size_t n = FFT_SIZES();
  const auto data = random_vector<T>(n, 100);
  A a = to_array(data);
  CHECK(a.size() == n);
  CHECK(static_cast<size_t>(a.size()) == n);
  CHECK(a.size() == ff::width(a));
  CHECK_FALSE(a.empty());
  check_exact("from(span).to_vector()", a, data);
  check_exact("to_vector() a second time", a, data);  // reading does not consume the array
  A copy = a;                                         // copies share the variable
  check_exact("a copy", copy, data);
  A from_vec = A::from(data);
  check_exact("from(std::vector)", from_vec, data);
}

TEMPLATE_TEST_CASE("from an initializer list, a scalar and the default constructor",
                   "[array][construct]", FFT_ALL_TYPES) {
  using T = TestType;
  using A = ff::Array<T>;
  const T v = sample_value<T>();
  A lst = A::from({v, T(0), T(1)});
  CHECK(lst.size() == 3);
  check_exact("from({v, 0, 1})", lst, std::vector<T>{v, T(0), T(1)});
  A k = v;
  CHECK(k.size() == 1);
  CHECK(scalar_of(k) == v);
  A e;
  CHECK(e.size() == 0);
  CHECK(e.empty());
  CHECK(host(e).empty());
  A from_empty = to_array(std::vector<T>{});
  CHECK(from_empty.size() == 0);
  CHECK(host(from_empty).empty());
}

TEMPLATE_TEST_CASE("full zeros and arange produce the expected contents", "[array][construct]",
                   FFT_ALL_TYPES) {
  using T = TestType;
  using A = ff::Array<T>;
  const size_t n = FFT_SIZES();
  const T v = sample_value<T>();
  A f = ff::full<A>(v, n);
  A z = ff::zeros<A>(n);
  CHECK(f.size() == n);
  CHECK(z.size() == n);
  check_exact("full(v, n)", f, n, [&](size_t) { return v; });
  check_exact("zeros(n)", z, n, [&](size_t) { return T(0); });
  if constexpr (!is_bool_v<T>) {
    A r = ff::arange<A>(n);
    CHECK(r.size() == n);
    check_exact("arange(n)", r, n, [&](size_t i) { return static_cast<T>(i); });
    // a literal combined with data: the literal broadcasts without being stored
    A s = ff::full<A>(T(3), n) + r;
    check_exact("full(3, n) + arange(n)", s, n,
                [&](size_t i) { return r_add<T>(T(3), static_cast<T>(i)); });
  }
  A f0 = ff::full<A>(v, 0);
  CHECK(host(f0).empty());
}

TEST_CASE("arange accepts a width and zeros accepts a size with provenance",
          "[array][construct][size]") {
  const size_t n = FFT_SIZES();
  ff::Float x = to_array(random_vector<float>(n, 101));
  ff::UInt32 r = ff::arange<ff::UInt32>(ff::width(x));
  ff::Float64 z = ff::zeros<ff::Float64>(x.size());
  ff::Int64 f = ff::full<ff::Int64>(int64_t(-9), ff::width(x) * 2);
  CHECK(r.size() == n);
  CHECK(z.size() == n);
  CHECK(f.size() == 2 * n);
  check_exact("arange(width(x))", r, n, [](size_t i) { return static_cast<uint32_t>(i); });
  check_exact("zeros(x.size())", z, n, [](size_t) { return 0.0; });
  check_exact("full(-9, 2 * width(x))", f, 2 * n, [](size_t) { return int64_t(-9); });
}

TEMPLATE_TEST_CASE("scalars of another arithmetic type convert to the element type",
                   "[array][construct]", FFT_NUMERIC_TYPES) {
  using T = TestType;
  using A = ff::Array<T>;
  A one = 1;                               // int literal
  A two = 2.0;                             // double literal
  A r = ff::arange<A>(5) + 1 + one * two;  // int scalar on the right
  check_exact("arange(5) + 1 + 1 * 2", r, 5, [](size_t i) { return static_cast<T>(i + 3); });
  A l = 10 - ff::arange<A>(5);  // int scalar on the left
  check_exact("10 - arange(5)", l, 5,
              [](size_t i) { return static_cast<T>(10 - static_cast<int>(i)); });
}

TEMPLATE_TEST_CASE("cast converts to every element type like the scalar reference", "[array][cast]",
                   FFT_ALL_TYPES) {
  using From = TestType;
  const size_t n = FFT_SIZES();
  const auto src = cast_source<From>(n, 102);
  ff::Array<From> x = to_array(src);
  ff::Bool to_b = ff::cast<ff::Bool>(x);
  ff::Int32 to_i32 = ff::cast<ff::Int32>(x);
  ff::UInt32 to_u32 = ff::cast<ff::UInt32>(x);
  ff::Int64 to_i64 = ff::cast<ff::Int64>(x);
  ff::UInt64 to_u64 = ff::cast<ff::UInt64>(x);
  ff::Float to_f32 = ff::cast<ff::Float>(x);
  ff::Float64 to_f64 = ff::cast<ff::Float64>(x);
  ff::eval(to_b, to_i32, to_u32, to_i64, to_u64, to_f32, to_f64);
  const std::string from = std::string("cast from ") + type_name<From>() + " to ";
  auto check_to = [&]<class To>(const ff::Array<To>& got) {
    check_exact(from + type_name<To>(), got, n, [&](size_t i) { return r_cast<To, From>(src[i]); });
  };
  check_to(to_b);
  check_to(to_i32);
  check_to(to_u32);
  check_to(to_i64);
  check_to(to_u64);
  check_to(to_f32);
  check_to(to_f64);

  // A cast of a literal (folded or compiled) agrees with the cast of a buffer.
  const From s = static_cast<From>(src[0]);
  CHECK(scalar_of(ff::cast<ff::Int32>(ff::Array<From>(s))) == r_cast<int32_t, From>(s));
  CHECK(scalar_of(ff::cast<ff::Float64>(ff::Array<From>(s))) == r_cast<double, From>(s));
}

TEMPLATE_TEST_CASE("float to integer casts saturate and map NaN to zero", "[array][cast][nan]",
                   float, double) {
  using T = TestType;
  const T nan = std::numeric_limits<T>::quiet_NaN(), inf = std::numeric_limits<T>::infinity();
  const std::vector<T> src{nan,      -nan,  inf,     -inf,    T(1e30),
                           T(-1e30), T(-1), T(-0.5), T(0.99), T(7.9)};
  ff::Array<T> x = to_array(src);
  const size_t n = src.size();
  check_exact("NaN/inf to Int32", ff::cast<ff::Int32>(x), n,
              [&](size_t i) { return r_cast<int32_t, T>(src[i]); });
  check_exact("NaN/inf to UInt32", ff::cast<ff::UInt32>(x), n,
              [&](size_t i) { return r_cast<uint32_t, T>(src[i]); });
  check_exact("NaN/inf to Int64", ff::cast<ff::Int64>(x), n,
              [&](size_t i) { return r_cast<int64_t, T>(src[i]); });
  check_exact("NaN/inf to UInt64", ff::cast<ff::UInt64>(x), n,
              [&](size_t i) { return r_cast<uint64_t, T>(src[i]); });
  // explicit expectations, independent of r_cast
  const auto i32 = host(ff::cast<ff::Int32>(x));
  CHECK(i32[0] == 0);
  CHECK(i32[1] == 0);
  CHECK(i32[2] == std::numeric_limits<int32_t>::max());
  CHECK(i32[3] == std::numeric_limits<int32_t>::min());
  CHECK(i32[6] == -1);
  CHECK(i32[7] == 0);
  CHECK(i32[9] == 7);
  const auto u64 = host(ff::cast<ff::UInt64>(x));
  CHECK(u64[0] == 0);
  CHECK(u64[2] == std::numeric_limits<uint64_t>::max());
  CHECK(u64[3] == 0);
  CHECK(u64[6] == 0);
  // NaN survives float <-> float casts; a literal NaN folds the same way
  const auto other =
      host(ff::cast<ff::Array<std::conditional_t<std::is_same_v<T, float>, double, float>>>(x));
  CHECK(std::isnan(other[0]));
  CHECK(std::isinf(other[2]));
  CHECK(scalar_of(ff::cast<ff::Int32>(ff::Array<T>(nan))) == 0);
  CHECK(scalar_of(ff::cast<ff::UInt32>(ff::Array<T>(T(-5)))) == 0u);
  CHECK(scalar_of(ff::cast<ff::Int64>(ff::Array<T>(inf))) == std::numeric_limits<int64_t>::max());
}

TEST_CASE("bitcast reinterprets the bits between types of one width", "[array][bitcast]") {
  const size_t n = FFT_SIZES();
  const auto f = random_vector<float>(n, 103, -1e6, 1e6);
  const auto d = random_vector<double>(n, 104, -1e6, 1e6);
  const auto i32 = random_vector<int32_t>(n, 105);
  const auto u64 = random_vector<uint64_t>(n, 106);
  ff::Float xf = to_array(f);
  ff::Float64 xd = to_array(d);
  ff::Int32 xi = to_array(i32);
  ff::UInt64 xu = to_array(u64);
  ff::UInt32 f_u = ff::bitcast<ff::UInt32>(xf);
  ff::Int32 f_i = ff::bitcast<ff::Int32>(xf);
  ff::UInt64 d_u = ff::bitcast<ff::UInt64>(xd);
  ff::Int64 d_i = ff::bitcast<ff::Int64>(xd);
  ff::UInt32 i_u = ff::bitcast<ff::UInt32>(xi);
  ff::Float i_f = ff::bitcast<ff::Float>(xi & 0x3fffffff);  // finite floats only
  ff::Int64 u_i = ff::bitcast<ff::Int64>(xu);
  ff::Float64 u_d = ff::bitcast<ff::Float64>(xu & 0x3fffffffffffffffULL);
  ff::Float round_trip = ff::bitcast<ff::Float>(ff::bitcast<ff::UInt32>(xf) ^ 0x80000000u);
  ff::eval(f_u, f_i, d_u, d_i, i_u, i_f, u_i, u_d, round_trip);
  check_exact("Float -> UInt32", f_u, n, [&](size_t i) { return r_bitcast<uint32_t>(f[i]); });
  check_exact("Float -> Int32", f_i, n, [&](size_t i) { return r_bitcast<int32_t>(f[i]); });
  check_exact("Float64 -> UInt64", d_u, n, [&](size_t i) { return r_bitcast<uint64_t>(d[i]); });
  check_exact("Float64 -> Int64", d_i, n, [&](size_t i) { return r_bitcast<int64_t>(d[i]); });
  check_exact("Int32 -> UInt32", i_u, n, [&](size_t i) { return r_bitcast<uint32_t>(i32[i]); });
  check_exact("Int32 -> Float", i_f, n, [&](size_t i) {
    return r_bitcast<float>(static_cast<int32_t>(i32[i] & 0x3fffffff));
  });
  check_exact("UInt64 -> Int64", u_i, n, [&](size_t i) { return r_bitcast<int64_t>(u64[i]); });
  check_exact("UInt64 -> Float64", u_d, n,
              [&](size_t i) { return r_bitcast<double>(u64[i] & 0x3fffffffffffffffULL); });
  check_exact("sign flip through UInt32 bits", round_trip, n, [&](size_t i) { return -f[i]; });
}

TEST_CASE("the suite runs on the stack FF_BACKEND names", "[array][stack]") {
  // Registered once per stack (tests/CMakeLists.txt): this proves the registration reaches the
  // library, so a decorator's run of this suite is not the plain llvm stack again.
  const char* env = std::getenv("FF_BACKEND");
  std::string want = env && *env ? env : "llvm";
  ff::shutdown();
  ff::Float x = ff::Float::from({1.f, 2.f});  // builds the default stack
  CHECK(ff::backend_name() == want);
  CHECK((x * 2.f).to_vector() == std::vector<float>{2.f, 4.f});
}
