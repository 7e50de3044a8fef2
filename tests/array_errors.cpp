// Errors users can cause with arrays: each raises ff::Error with a message naming the problem,
// and leaves the library usable.
#include <freezeframe/freezeframe.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <string>
#include <vector>

#include "support/errors.h"
#include "support/reference.h"

using namespace fft;
using Catch::Matchers::Contains;

namespace {

/// Sets a flag for one scope and restores the old value, also when an assertion throws.
class FlagScope {
 public:
  FlagScope(ff::Flag f, bool value) : flag_(f), old_(ff::flag(f)) { ff::set_flag(f, value); }

  ~FlagScope() { ff::set_flag(flag_, old_); }

  FlagScope(const FlagScope&) = delete;
  FlagScope& operator=(const FlagScope&) = delete;

 private:
  ff::Flag flag_;
  bool old_;
};

/// Sets an environment variable for one scope.
class EnvScope {
 public:
  EnvScope(const char* name, const char* value) : name_(name) {
    if (const char* o = std::getenv(name))
      old_ = o, had_ = true;
    ::setenv(name, value, 1);
  }

  ~EnvScope() {
    if (had_)
      ::setenv(name_.c_str(), old_.c_str(), 1);
    else
      ::unsetenv(name_.c_str());
  }

  EnvScope(const EnvScope&) = delete;
  EnvScope& operator=(const EnvScope&) = delete;

 private:
  std::string name_, old_;
  bool had_ = false;
};

std::vector<uint32_t> indices_with(uint32_t bad) {
  return {0, 3, bad, 1};
}

}  // namespace

TEST_CASE("operands of mismatched sizes raise ff::Error naming both sizes",
          "[tracer][errors][size]") {
  ff::Float a = to_array(random_vector<float>(1234, 400));
  ff::Float b = to_array(random_vector<float>(5678, 401));
  // (Catch2 v2 combined matchers hold references: combine named matchers inline)
  const auto has1234 = Contains("1234");
  const auto has5678 = Contains("5678");
  REQUIRE_THROWS_EXACTLY(ff::eval(a + b), ff::Error);
  REQUIRE_THROWS_WITH(ff::eval(a + b), has1234 && has5678);
  REQUIRE_THROWS_WITH(ff::eval(b * a), has1234 && has5678);
  REQUIRE_THROWS_WITH(ff::eval(a < b), has1234 && has5678);
  REQUIRE_THROWS_WITH(ff::eval(ff::fma(a, a, b)), has1234 && has5678);
  REQUIRE_THROWS_WITH(ff::eval(ff::select(a > 0.f, a, b)), has1234 && has5678);
  REQUIRE_THROWS_WITH(ff::eval(ff::select(b > 0.f, a, a)), has1234 && has5678);
  // literals of both sizes
  REQUIRE_THROWS_WITH(ff::eval(ff::full<ff::Float>(1.f, 1234) + ff::zeros<ff::Float>(5678)),
                      has1234 && has5678);
  // gather: index and mask sizes must agree (the source size is free)
  ff::UInt32 i1234 = ff::arange<ff::UInt32>(1234);
  REQUIRE_THROWS_WITH(ff::eval(ff::gather<ff::Float>(b, i1234, b > 0.f)), has1234 && has5678);
  // scatter: value, index and mask sizes must agree
  ff::Float target = ff::zeros<ff::Float>(10);
  REQUIRE_THROWS_EXACTLY(
      [&] {
        ff::scatter(target, b, i1234);
        ff::eval(target);
      }(),
      ff::Error);
  // the library is still usable, and the failed operations left nothing pending behind
  const auto av = host(a);
  check_exact("a + a after the errors", a + a, 1234, [&](size_t i) { return 2.f * av[i]; });
  check_exact("target untouched", target, 10, [](size_t) { return 0.f; });
}

TEST_CASE("an empty operand with a size-N operand is a size mismatch", "[tracer][errors][size]") {
  ff::Float e;
  ff::Float a = to_array(random_vector<float>(4321, 402));
  REQUIRE_THROWS_EXACTLY(ff::eval(e + a), ff::Error);
  REQUIRE_THROWS_WITH(ff::eval(a - e), Contains("4321") && Contains("0"));
}

TEST_CASE("an out-of-range gather index raises ff::Error naming the index in debug mode",
          "[tracer][errors][debug]") {
  FlagScope debug(ff::Flag::Debug, true);
  CHECK(ff::flag(ff::Flag::Debug));
  ff::Float src = to_array(random_vector<float>(10, 403));
  ff::UInt32 bad_g = to_array(indices_with(98765));
  REQUIRE_THROWS_EXACTLY(ff::eval(ff::gather<ff::Float>(src, bad_g)), ff::Error);
  REQUIRE_THROWS_WITH(ff::eval(ff::gather<ff::Float>(src, bad_g)), Contains("98765"));
  // in-range indices still work in debug mode
  ff::UInt32 good = to_array(std::vector<uint32_t>{9, 0});
  const auto s = host(src);
  check_exact("gather with debug checks", ff::gather<ff::Float>(src, good),
              std::vector<float>{s[9], s[0]});
  // a large array with one bad index in the middle
  std::vector<uint32_t> big(kLargeSize, 5);
  big[kLargeSize / 2] = 4000000000u;
  REQUIRE_THROWS_WITH(ff::eval(ff::gather<ff::Float>(src, to_array(big))), Contains("4000000000"));
  // signed indices are named as such; -1 is an offender like any other
  ff::Int32 minus_one = to_array(std::vector<int32_t>{3, -1, 4});
  REQUIRE_THROWS_WITH(ff::eval(ff::gather<ff::Float>(src, minus_one)),
                      Contains("index -1 is out of range for an array of size 10"));
  ff::Int64 minus_five = to_array(std::vector<int64_t>{-5});
  REQUIRE_THROWS_WITH(ff::eval(ff::gather<ff::Float>(src, minus_five)), Contains("index -5 "));
}

TEST_CASE("an out-of-range scatter index raises ff::Error naming the index in debug mode",
          "[tracer][errors][debug]") {
  FlagScope debug(ff::Flag::Debug, true);
  ff::UInt32 bad_s = to_array(indices_with(87654));
  ff::Float t = ff::zeros<ff::Float>(10);
  REQUIRE_THROWS_EXACTLY(
      [&] {
        ff::scatter(t, 1.f, bad_s);
        ff::eval(t);
      }(),
      ff::Error);
  ff::Float t2 = ff::zeros<ff::Float>(10);
  REQUIRE_THROWS_WITH(
      [&] {
        ff::scatter(t2, 1.f, bad_s);
        ff::eval(t2);
      }(),
      Contains("87654"));
}

TEST_CASE("an out-of-range scatter_add index raises ff::Error naming the index in debug mode",
          "[tracer][errors][debug]") {
  FlagScope debug(ff::Flag::Debug, true);
  ff::Int64 t = ff::zeros<ff::Int64>(10);
  REQUIRE_THROWS_WITH(
      [&] {
        ff::scatter_add(t, int64_t(1), to_array(indices_with(76543)));
        ff::eval(t);
      }(),
      Contains("76543"));
}

TEST_CASE("a scatter that failed its debug range check does not poison later evaluations",
          "[tracer][errors][debug]") {
  FlagScope debug(ff::Flag::Debug, true);
  ff::UInt32 bad = to_array(indices_with(87654));
  ff::Float t = ff::zeros<ff::Float>(10);
  REQUIRE_THROWS_WITH(
      [&] {
        ff::scatter(t, 1.f, bad);
        ff::eval(t);
      }(),
      Contains("87654"));
  // unrelated work afterwards evaluates normally (the failed scatter is not retried)
  ff::Float y = to_array(std::vector<float>{1.f, 2.f}) * 3.f;
  std::vector<float> got;
  REQUIRE_NOTHROW(got = host(y));
  CHECK(got == std::vector<float>{3.f, 6.f});
  ff::Float other = ff::zeros<ff::Float>(4);
  REQUIRE_NOTHROW(ff::scatter(other, 2.f, to_array(std::vector<uint32_t>{1})));
  REQUIRE_NOTHROW(got = host(other));
  CHECK(got == std::vector<float>{0.f, 2.f, 0.f, 0.f});
}

TEST_CASE("FF_DEBUG=1 in the environment at init enables the index checks",
          "[tracer][errors][debug]") {
  ff::shutdown();
  ff::set_flag(ff::Flag::Debug, false);
  EnvScope env("FF_DEBUG", "1");
  ff::init();
  CHECK(ff::flag(ff::Flag::Debug));
  ff::Float src = to_array(random_vector<float>(10, 404));
  REQUIRE_THROWS_EXACTLY(ff::eval(ff::gather<ff::Float>(src, to_array(indices_with(12345)))),
                         ff::Error);
  REQUIRE_THROWS_WITH(ff::eval(ff::gather<ff::Float>(src, to_array(indices_with(12345)))),
                      Contains("12345"));
  ff::shutdown();
  ff::set_flag(ff::Flag::Debug, false);
}

TEST_CASE("without debug checks out-of-range indices read 0 and drop writes",
          "[tracer][errors][debug]") {
  FlagScope debug(ff::Flag::Debug, false);
  ff::Float src = to_array(std::vector<float>{1, 2, 3});
  ff::Float g = ff::gather<ff::Float>(src, to_array(std::vector<uint32_t>{2, 3, 4000000000u, 0}));
  check_exact("gather out of range", g, std::vector<float>{3, 0, 0, 1});
  ff::Float t = to_array(std::vector<float>{1, 2, 3});
  ff::scatter(t, 9.f, to_array(std::vector<uint32_t>{1, 3, 4000000000u}));
  check_exact("scatter out of range", t, std::vector<float>{1, 9, 3});
}

TEST_CASE("init with an unknown backend raises ff::Error listing the known ones",
          "[tracer][errors][init]") {
  REQUIRE_THROWS_EXACTLY(ff::init("nonexistent"), ff::Error);
  REQUIRE_THROWS_WITH(ff::init("nonexistent"), Contains("llvm") && Contains("nonexistent"));
  REQUIRE_THROWS_WITH(ff::init("record:nonexistent"), Contains("llvm"));
  // a good init afterwards works
  ff::init("llvm");
  CHECK(ff::backend_name() == "llvm");
  check_exact("work after a failed init", ff::arange<ff::Int32>(5) * 2, 5,
              [](size_t i) { return static_cast<int32_t>(2 * i); });
}

TEST_CASE("FF_BACKEND names the backend of a plain init", "[tracer][errors][init]") {
  ff::shutdown();
  {
    EnvScope env("FF_BACKEND", "nonexistent");
    REQUIRE_THROWS_WITH(ff::init(), Contains("llvm"));
  }
  {
    EnvScope env("FF_BACKEND", "llvm");
    ff::init();
    CHECK(ff::backend_name() == "llvm");
  }
  ff::shutdown();
}

TEST_CASE("size arithmetic below zero or by zero raises ff::Error", "[tracer][errors][size]") {
  ff::Float x = to_array(random_vector<float>(7, 405));
  REQUIRE_THROWS_EXACTLY(ff::width(x) - 8, ff::Error);
  REQUIRE_THROWS_EXACTLY(ff::width(x) / 0, ff::Error);
  CHECK(static_cast<size_t>(ff::width(x) - 7) == 0);
}

TEST_CASE("AnyArray as with the wrong element type raises ff::Error naming both types",
          "[tracer][errors][anyarray]") {
  ff::Float x = to_array(std::vector<float>{1.f, 2.f});
  ff::AnyArray any(x);
  CHECK(any.type() == ff::ScalarType::Float32);
  CHECK(any.size() == 2);
  REQUIRE_THROWS_EXACTLY(any.as<ff::Int32>(), ff::Error);
  REQUIRE_THROWS_WITH(any.as<ff::Float64>(), Contains("float32") && Contains("float64"));
  REQUIRE_THROWS_EXACTLY(ff::AnyArray().as<ff::Float>(), ff::Error);
  ff::Float back = any.as<ff::Float>();  // the right type shares the variable
  check_exact("as<Float>()", back, std::vector<float>{1.f, 2.f});
}

TEST_CASE("capture on a stack without the recorder raises ff::Error", "[tracer][errors][init]") {
  ff::shutdown();
  ff::init("llvm");
  REQUIRE_THROWS_EXACTLY(ff::capture(), ff::Error);
  ff::shutdown();
}
