// Constant folding (tracer/fold.cpp) against the compiled kernels and the scalar reference.
//
// An operation whose operands are all literals is computed by the tracer on the host; the same
// operation on buffers is computed by a kernel. A frozen or replayed function may take either
// path for the same values (a literal argument made opaque by auto_opaque, a size-1 input), so
// the two must agree bit for bit: signed zeros, NaN signs and payloads, infinities, denormals,
// integer edge values (INT_MIN / -1, division by zero, shift counts past the width) and
// saturating float -> integer casts, for every element type. Each operation is computed
//   - on literals (folded: reading the result launches and copies nothing),
//   - by a kernel on two (three) arrays holding every combination of the values (the vector
//     loop and its masked tail), and
//   - by a kernel on a size-1 literal turned into a buffer by ff::make_opaque (a broadcast
//     operand) against arrays of the other operands,
// and the three are compared bitwise. Where API.md defines the value, the folded result also
// equals the scalar reference (tests/support/reference.h).
#include <freezeframe/freezeframe.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "support/reference.h"

using namespace fft;

namespace {

/// The bit pattern of v (its sizeof(T) bytes), for bitwise comparisons and messages.
template <class T>
uint64_t raw(T v) {
  uint64_t r = 0;
  std::memcpy(&r, &v, sizeof(T));
  return r;
}

template <class T>
std::string show_raw(T v) {
  std::ostringstream os;
  os << show<T>(v) << " (0x" << std::hex << raw(v) << ")";
  return os.str();
}

/// Values at the edges of each type: signed zeros, NaNs with signs and payloads (quiet and
/// signalling), infinities, denormals, the limits, values next to the integer ranges (for
/// saturating casts) and halves (for rounding); for integers the limits, shift counts around
/// the widths, and values that do not convert exactly to float.
template <class T>
std::vector<T> specials() {
  using L = std::numeric_limits<T>;
  if constexpr (is_bool_v<T>) {
    return {false, true};
  } else if constexpr (is_float_v<T>) {
    using Bits = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
    constexpr int mant = L::digits - 1;  // explicit mantissa bits
    const Bits sign = Bits(1) << (sizeof(T) * 8 - 1), exp = Bits(L::max_exponent * 2 - 1) << mant;
    const Bits quiet = Bits(1) << (mant - 1);
    auto nan = [&](bool neg, bool q, Bits payload) {
      return std::bit_cast<T>(Bits((neg ? sign : 0) | exp | (q ? quiet : 0) | payload));
    };
    return {T(0),
            -T(0),
            T(1),
            T(-1),
            T(0.5),
            T(-0.5),
            T(1.5),
            T(-2.5),
            T(3),
            T(0.1),
            std::nextafter(T(0.5), T(0)),
            L::denorm_min(),
            -L::denorm_min(),
            std::nextafter(L::min(), T(0)),  // the largest denormal
            L::min(),
            -L::min(),
            L::max(),
            L::lowest(),
            L::infinity(),
            -L::infinity(),
            nan(false, true, 0),      // the default quiet NaN, positive
            nan(true, true, 0),       // negative quiet NaN (x86's default NaN)
            nan(false, true, 0x123),  // quiet NaN with a payload
            nan(false, false, 1),     // signalling NaN
            nan(true, false, 0x5),    // negative signalling NaN with a payload
            T(2147483647.0),
            T(-2147483648.0),
            std::nextafter(T(-2147483648.0), T(-1e30)),
            T(4294967296.0),
            T(9223372036854775807.0),
            T(-9223372036854775808.0),
            T(18446744073709551616.0),
            T(1e30),
            T(-1e30),
            T(16777217.0),
            T(-0.75)};
  } else if constexpr (std::is_signed_v<T>) {
    return {T(0),          T(1),
            T(-1),         T(2),
            T(-2),         T(3),
            T(-7),         T(31),
            T(32),         T(33),
            T(63),         T(64),
            T(65),         T(1000),
            L::min(),      T(L::min() + 1),
            L::max(),      T(L::max() - 1),
            T(0x55555555), T(16777217),
            T(-16777217),  T(int64_t{1} << 53 | 1)};
  } else {
    return {T(0),
            T(1),
            T(2),
            T(3),
            T(7),
            T(31),
            T(32),
            T(33),
            T(63),
            T(64),
            T(65),
            T(1000),
            T(0x7FFFFFFFu),
            T(0x80000000u),
            T(0xFFFFFFFFu),
            T(0xFFFFFFFEu),
            T(0xAAAAAAAAu),
            L::max(),
            T(L::max() - 1),
            T(T(1) << (L::digits - 1)),
            T(16777217),
            T(uint64_t{1} << 53 | 1)};
  }
}

/// Reads an array's elements; the read of a folded literal must launch and copy nothing.
template <class T>
std::vector<T> read_folded(const ff::Array<T>& a, const std::string& what) {
  std::vector<T> v;
  const ff::Stats d = delta([&] { v = host(a); });
  if (d.launches != 0 || d.copies != 0)
    FAIL_CHECK(what << ": not folded (reading it launched " << d.launches << " kernels and made "
                    << d.copies << " copies)");
  return v;
}

/// Mismatch reporting: one Catch assertion per operation, listing the first few differences.
/// How NaN results are compared: bit for bit where docs/kernel-ir.md defines the NaN (an
/// operand passed through: neg, abs, min, max, select, bitcast), or only as "a quiet NaN" where
/// it leaves sign and payload unspecified (arithmetic on a NaN, or one made by the operation).
enum class NanBits { Exact, Unspecified };

class Mismatches {
 public:
  explicit Mismatches(std::string what, NanBits nan = NanBits::Exact)
      : what_(std::move(what)), nan_(nan) {}

  template <class R>
  void expect_same(const std::string& operands, const char* a_name, R a, const char* b_name, R b) {
    if (raw(a) == raw(b))
      return;
    if constexpr (is_float_v<R>) {
      if (nan_ == NanBits::Unspecified && is_quiet_nan(a) && is_quiet_nan(b))
        return;
    }
    if (n_++ < 6)
      list_ << "\n  " << what_ << "(" << operands << "): " << a_name << " " << show_raw(a) << ", "
            << b_name << " " << show_raw(b);
  }

  template <class R>
  void expect_reference(const std::string& operands, R folded, std::optional<R> want) {
    if (!want || same_value(folded, *want))
      return;
    if (n_++ < 6)
      list_ << "\n  " << what_ << "(" << operands << "): folded " << show_raw(folded)
            << ", reference " << show_raw(*want);
  }

  ~Mismatches() {
    if (n_)
      FAIL_CHECK(n_ << " mismatches:" << list_.str());
    else
      SUCCEED(what_);
  }

 private:
  template <class R>
  static bool is_quiet_nan(R v) {
    return std::isnan(v) && (raw(v) >> (std::numeric_limits<R>::digits - 2) & 1);
  }

  std::string what_;
  NanBits nan_;
  std::ostringstream list_;
  size_t n_ = 0;
};

template <class... Ts>
std::string operands(Ts... v) {
  std::string s;
  ((s += (s.empty() ? "" : ", ") + show_raw(v)), ...);
  return s;
}

template <class R, class T>
using Unary = std::function<ff::Array<R>(const ff::Array<T>&)>;
template <class R, class T>
using Binary = std::function<ff::Array<R>(const ff::Array<T>&, const ff::Array<T>&)>;

/// f on every value: folded, by a kernel over an array, by a kernel on each opaque literal.
template <class R, class T>
void check_unary(const std::string& name, const Unary<R, T>& f,
                 const std::function<std::optional<R>(T)>& reference,
                 NanBits nan = NanBits::Exact) {
  const std::vector<T> xs = specials<T>();
  const size_t n = xs.size();
  std::vector<R> folded(n);
  for (size_t i = 0; i < n; ++i)
    folded[i] = read_folded(f(ff::Array<T>(xs[i])), name)[0];
  const std::vector<R> vec = host(f(to_array(xs)));
  Mismatches m(name + "<" + type_name<T>() + ">", nan);
  for (size_t i = 0; i < n; ++i) {
    ff::Array<T> x(xs[i]);
    ff::make_opaque(x);
    const R bc = host(f(x))[0];
    m.expect_same<R>(operands(xs[i]), "folded", folded[i], "kernel", vec[i]);
    m.expect_same<R>(operands(xs[i]), "folded", folded[i], "opaque kernel", bc);
    if (reference)
      m.expect_reference<R>(operands(xs[i]), folded[i], reference(xs[i]));
  }
}

template <class R, class T>
void check_binary(const std::string& name, const Binary<R, T>& f,
                  const std::function<std::optional<R>(T, T)>& reference,
                  NanBits nan = NanBits::Exact) {
  const std::vector<T> xs = specials<T>();
  const size_t n = xs.size();
  std::vector<T> as, bs;
  for (size_t i = 0; i < n; ++i)
    for (size_t j = 0; j < n; ++j) {
      as.push_back(xs[i]);
      bs.push_back(xs[j]);
    }
  std::vector<R> folded(n * n);
  for (size_t k = 0; k < n * n; ++k)
    folded[k] = read_folded(f(ff::Array<T>(as[k]), ff::Array<T>(bs[k])), name)[0];
  const std::vector<R> vec = host(f(to_array(as), to_array(bs)));
  const ff::Array<T> all = to_array(xs);
  Mismatches m(name + "<" + type_name<T>() + ">", nan);
  for (size_t i = 0; i < n; ++i) {
    ff::Array<T> x(xs[i]);
    ff::make_opaque(x);
    const std::vector<R> bc = host(f(x, all));  // a broadcast operand
    for (size_t j = 0; j < n; ++j) {
      const size_t k = i * n + j;
      const std::string ops = operands(xs[i], xs[j]);
      m.expect_same<R>(ops, "folded", folded[k], "kernel", vec[k]);
      m.expect_same<R>(ops, "folded", folded[k], "opaque kernel", bc[j]);
      if (reference)
        m.expect_reference<R>(ops, folded[k], reference(xs[i], xs[j]));
    }
  }
}

/// fma(a, b, c) over every triple (float: with the subnormal and NaN values too).
template <class T>
void check_fma(const std::function<std::optional<T>(T, T, T)>& reference) {
  const std::vector<T> xs = specials<T>();
  const size_t n = xs.size();
  std::vector<T> as, bs, cs;
  for (size_t i = 0; i < n; ++i)
    for (size_t j = 0; j < n; ++j)
      for (size_t k = 0; k < n; ++k) {
        as.push_back(xs[i]);
        bs.push_back(xs[j]);
        cs.push_back(xs[k]);
      }
  const std::vector<T> vec = host(ff::fma(to_array(as), to_array(bs), to_array(cs)));
  std::vector<T> b2, c2;
  for (size_t j = 0; j < n; ++j)
    for (size_t k = 0; k < n; ++k) {
      b2.push_back(xs[j]);
      c2.push_back(xs[k]);
    }
  const ff::Array<T> bb = to_array(b2), cc = to_array(c2);
  Mismatches m(std::string("fma<") + type_name<T>() + ">", NanBits::Unspecified);
  for (size_t i = 0; i < n; ++i) {
    ff::Array<T> x(xs[i]);
    ff::make_opaque(x);
    const std::vector<T> bc = host(ff::fma(x, bb, cc));
    for (size_t jk = 0; jk < n * n; ++jk) {
      const size_t t = i * n * n + jk;
      const T folded = read_folded(
          ff::fma(ff::Array<T>(as[t]), ff::Array<T>(bs[t]), ff::Array<T>(cs[t])), "fma")[0];
      const std::string ops = operands(as[t], bs[t], cs[t]);
      m.expect_same(ops, "folded", folded, "kernel", vec[t]);
      m.expect_same(ops, "folded", folded, "opaque kernel", bc[jk]);
      if (reference)
        m.expect_reference(ops, folded, reference(as[t], bs[t], cs[t]));
    }
  }
}

/// select(mask, a, b) for both masks and every pair.
template <class T>
void check_select() {
  const std::vector<T> xs = specials<T>();
  const size_t n = xs.size();
  Mismatches m(std::string("select<") + type_name<T>() + ">");
  for (bool mask : {false, true}) {
    std::vector<T> as, bs;
    for (size_t i = 0; i < n; ++i)
      for (size_t j = 0; j < n; ++j) {
        as.push_back(xs[i]);
        bs.push_back(xs[j]);
      }
    ff::Bool opaque_mask(mask);
    ff::make_opaque(opaque_mask);
    const std::vector<T> vec = host(ff::select(opaque_mask, to_array(as), to_array(bs)));
    for (size_t k = 0; k < n * n; ++k) {
      const T folded = read_folded(
          ff::select(ff::Bool(mask), ff::Array<T>(as[k]), ff::Array<T>(bs[k])), "select")[0];
      const std::string ops = operands<bool, T, T>(mask, as[k], bs[k]);
      m.expect_same(ops, "folded", folded, "kernel", vec[k]);
      m.expect_reference(ops, folded, std::optional<T>(mask ? as[k] : bs[k]));
    }
  }
}

/// The reference value where API.md defines one; nullopt where it leaves the value
/// unspecified (integer division by zero, INT_MIN / -1).
template <class T>
std::optional<T> ref_div(T a, T b) {
  if (!div_defined(a, b))
    return std::nullopt;
  return r_div(a, b);
}

template <class T>
std::optional<T> ref_mod(T a, T b) {
  if (!div_defined(a, b))
    return std::nullopt;
  return r_mod(a, b);
}

template <class T>
void check_arithmetic() {
  using A = ff::Array<T>;
  auto bin = [](const char* name, Binary<T, T> f, std::function<std::optional<T>(T, T)> r) {
    check_binary<T, T>(name, f, r, NanBits::Unspecified);
  };
  auto bin_exact = [](const char* name, Binary<T, T> f, std::function<std::optional<T>(T, T)> r) {
    check_binary<T, T>(name, f, r, NanBits::Exact);
  };
  bin(
      "add", [](const A& a, const A& b) { return a + b; }, [](T a, T b) { return r_add(a, b); });
  bin(
      "sub", [](const A& a, const A& b) { return a - b; }, [](T a, T b) { return r_sub(a, b); });
  bin(
      "mul", [](const A& a, const A& b) { return a * b; }, [](T a, T b) { return r_mul(a, b); });
  bin(
      "div", [](const A& a, const A& b) { return a / b; }, ref_div<T>);
  bin_exact(
      "min", [](const A& a, const A& b) { return ff::min(a, b); },
      [](T a, T b) { return r_min(a, b); });
  bin_exact(
      "max", [](const A& a, const A& b) { return ff::max(a, b); },
      [](T a, T b) { return r_max(a, b); });
  check_unary<T, T>(
      "neg", [](const A& a) { return -a; }, [](T a) { return r_neg(a); });
  check_unary<T, T>(
      "abs", [](const A& a) { return ff::abs(a); }, [](T a) { return r_abs(a); });
  check_fma<T>([](T a, T b, T c) -> std::optional<T> {
    if constexpr (is_float_v<T>)
      return std::fma(a, b, c);
    else
      return r_add(r_mul(a, b), c);
  });
}

template <class T>
void check_integer() {
  using A = ff::Array<T>;
  auto bin = [](const char* name, Binary<T, T> f, std::function<std::optional<T>(T, T)> r) {
    check_binary<T, T>(name, f, r);
  };
  bin(
      "mod", [](const A& a, const A& b) { return a % b; }, ref_mod<T>);
  bin(
      "shl", [](const A& a, const A& b) { return a << b; }, [](T a, T b) { return r_shl(a, b); });
  bin(
      "shr", [](const A& a, const A& b) { return a >> b; }, [](T a, T b) { return r_shr(a, b); });
}

template <class T>
void check_bitwise() {
  using A = ff::Array<T>;
  auto bin = [](const char* name, Binary<T, T> f, std::function<std::optional<T>(T, T)> r) {
    check_binary<T, T>(name, f, r);
  };
  bin(
      "and", [](const A& a, const A& b) { return a & b; },
      [](T a, T b) { return static_cast<T>(a & b); });
  bin(
      "or", [](const A& a, const A& b) { return a | b; },
      [](T a, T b) { return static_cast<T>(a | b); });
  bin(
      "xor", [](const A& a, const A& b) { return a ^ b; },
      [](T a, T b) { return static_cast<T>(a ^ b); });
  if constexpr (is_bool_v<T>)
    check_unary<T, T>(
        "not", [](const A& a) { return !a; }, [](T a) { return !a; });
  else
    check_unary<T, T>(
        "not", [](const A& a) { return ~a; }, [](T a) { return static_cast<T>(~a); });
}

template <class T>
void check_comparisons() {
  using A = ff::Array<T>;
  auto cmp = [](const char* name, Binary<bool, T> f, std::function<std::optional<bool>(T, T)> r) {
    check_binary<bool, T>(name, f, r);
  };
  cmp(
      "eq", [](const A& a, const A& b) { return a == b; }, [](T a, T b) { return a == b; });
  cmp(
      "ne", [](const A& a, const A& b) { return a != b; }, [](T a, T b) { return a != b; });
  cmp(
      "lt", [](const A& a, const A& b) { return a < b; }, [](T a, T b) { return a < b; });
  cmp(
      "le", [](const A& a, const A& b) { return a <= b; }, [](T a, T b) { return a <= b; });
  cmp(
      "gt", [](const A& a, const A& b) { return a > b; }, [](T a, T b) { return a > b; });
  cmp(
      "ge", [](const A& a, const A& b) { return a >= b; }, [](T a, T b) { return a >= b; });
}

template <class T>
void check_float_functions() {
  using A = ff::Array<T>;
  check_unary<T, T>(
      "sqrt", [](const A& a) { return ff::sqrt(a); }, [](T a) { return std::sqrt(a); },
      NanBits::Unspecified);
  check_unary<T, T>(
      "floor", [](const A& a) { return ff::floor(a); }, [](T a) { return std::floor(a); },
      NanBits::Unspecified);
  check_unary<T, T>(
      "ceil", [](const A& a) { return ff::ceil(a); }, [](T a) { return std::ceil(a); },
      NanBits::Unspecified);
}

template <class From>
void check_casts() {
  auto to = [&]<class To>() {
    check_unary<To, From>(
        std::string("cast to ") + type_name<To>(),
        [](const ff::Array<From>& a) { return ff::cast<ff::Array<To>>(a); },
        [](From a) { return r_cast<To, From>(a); },
        is_float_v<From> && is_float_v<To> ? NanBits::Unspecified : NanBits::Exact);
  };
  for_all_types(to);
  if constexpr (!is_bool_v<From>) {
    auto bit = [&]<class To>() {
      if constexpr (sizeof(To) == sizeof(From) && !is_bool_v<To>)
        check_unary<To, From>(
            std::string("bitcast to ") + type_name<To>(),
            [](const ff::Array<From>& a) { return ff::bitcast<ff::Array<To>>(a); },
            [](From a) { return r_bitcast<To, From>(a); });
    };
    for_all_types(bit);
  }
}

}  // namespace

TEMPLATE_TEST_CASE("folded arithmetic equals the kernels bit for bit on edge values",
                   "[tracer][fold]", int32_t, uint32_t, int64_t, uint64_t, float, double) {
  check_arithmetic<TestType>();
  if constexpr (is_int_v<TestType>)
    check_integer<TestType>();
  if constexpr (is_float_v<TestType>)
    check_float_functions<TestType>();
}

TEMPLATE_TEST_CASE("folded comparisons, bitwise operations and select equal the kernels",
                   "[tracer][fold]", bool, int32_t, uint32_t, int64_t, uint64_t, float, double) {
  check_comparisons<TestType>();
  if constexpr (!is_float_v<TestType>)
    check_bitwise<TestType>();
  check_select<TestType>();
}

TEMPLATE_TEST_CASE("folded casts and bitcasts equal the kernels bit for bit", "[tracer][fold]",
                   bool, int32_t, uint32_t, int64_t, uint64_t, float, double) {
  check_casts<TestType>();
}

TEMPLATE_TEST_CASE("transcendental functions of literals are left to the kernels", "[tracer][fold]",
                   float, double) {
  using T = TestType;
  using A = ff::Array<T>;
  // exp, log, sin and cos are not folded (the host's libm and the kernels' vector math may
  // differ in the last bit): a literal's result is computed by a kernel, the same as a buffer's.
  for (const auto& entry : std::vector<std::pair<const char*, Unary<T, T>>>{
           {"exp", [](const A& a) { return ff::exp(a); }},
           {"log", [](const A& a) { return ff::log(a); }},
           {"sin", [](const A& a) { return ff::sin(a); }},
           {"cos", [](const A& a) { return ff::cos(a); }}}) {
    const char* name = entry.first;
    const Unary<T, T>& f = entry.second;  // (clang 14 cannot capture structured bindings)
    const std::vector<T> xs = specials<T>();
    const std::vector<T> vec = host(f(to_array(xs)));
    Mismatches m(std::string(name) + "<" + type_name<T>() + ">");
    for (size_t i = 0; i < xs.size(); ++i) {
      std::vector<T> lit;
      const ff::Stats d = delta([&] { lit = host(f(A(xs[i]))); });
      CHECK(d.launches == 1);
      m.expect_same(operands(xs[i]), "literal", lit[0], "kernel", vec[i]);
    }
  }
}

TEST_CASE("min(-0, +0) folds to -0 as the kernel computes it, and max keeps the first zero too",
          "[tracer][fold]") {
  // Regression: folding used std::fmin, which returns +0 here, while the kernel returns -0.
  ff::Float nz(-0.f), pz(0.f);
  CHECK(std::signbit(scalar_of(ff::min(nz, pz))));
  CHECK_FALSE(std::signbit(scalar_of(ff::min(pz, nz))));
  CHECK(std::signbit(scalar_of(ff::max(nz, pz))));
  ff::Float onz(-0.f), opz(0.f);
  ff::make_opaque(onz, opz);
  CHECK(std::signbit(scalar_of(ff::min(onz, opz))));
  CHECK(std::signbit(scalar_of(ff::max(onz, opz))));
  // A signalling NaN is ignored like a quiet one, folded or not.
  const float snan = std::bit_cast<float>(0x7f800001u);
  CHECK(scalar_of(ff::min(ff::Float(2.f), ff::Float(snan))) == 2.f);
  ff::Float os(snan);
  ff::make_opaque(os);
  CHECK(scalar_of(ff::min(ff::Float(2.f), os)) == 2.f);
}
