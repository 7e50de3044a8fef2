// What docs/freeze.md promises, each checked where a user found it broken: results rebuilt only
// into the types they were recorded from, nothing written by a failed replay, verify mode with
// aliased arguments, a body's own exceptions unchanged, and messages that name the function,
// the file and what was wrong in the user's terms (no addresses, hashes or leaf numbers).
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <tuple>

#include "common/log.h"
#include "runtime/environment.h"
#include "support/freeze_check.h"
#include "support/log_capture.h"
#include "support/temp_file.h"

using namespace fff;
using Catch::Matchers::Contains;
using ff::Float;
using ff::Int32;
using fft::TempFile;

namespace {

namespace fs = std::filesystem;

void fresh() {
  ff::shutdown();
  ff::init("llvm");
}

ff::FreezeOptions named(const char* name) {
  ff::FreezeOptions o;
  o.name = name;
  return o;
}

/// The message of the ff::Error `fn` throws ("" if none).
template <class Fn>
std::string error_of(Fn&& fn) {
  try {
    fn();
  } catch (const ff::Error& e) {
    return e.what();
  }
  return "";
}

bool has_address(const std::string& s) {
  return s.find("0x") != std::string::npos;
}

}  // namespace

TEST_CASE("freeze promises: a loaded result is rebuilt only into the types it was saved from",
          "[freeze][files]") {
  fresh();
  TempFile file("types.ffr");
  {
    auto f = ff::freeze([](const Float& x) { return std::make_tuple(x + 1.f, int32_t{5}); },
                        named("typed"));
    f(ramp(4));
    f.save(file.str());
  }
  // The same arguments (the key matches), another result type: a scalar of another type ...
  auto g = ff::freeze([](const Float& x) { return std::make_tuple(x + 1.f, 5.f); }, named("typed"));
  g.load(file.str());
  std::string e = error_of([&] { g(ramp(3)); });
  CHECK_THAT(e, Contains("frozen function 'typed'") && Contains("types.ffr") && Contains("int32") &&
                    Contains("float32"));
  // ... a tuple of another length ...
  auto h =
      ff::freeze([](const Float& x) { return std::make_tuple(x + 1.f, int32_t{5}, int32_t{6}); },
                 named("longer"));
  h.load(file.str());
  e = error_of([&] { h(ramp(3)); });
  CHECK_THAT(e, Contains("'longer'") && Contains("types.ffr") && Contains("a tuple of 2") &&
                    Contains("a tuple of 3"));
  // ... an array of another element type.
  auto k =
      ff::freeze([](const Float& x) { return std::make_tuple(ff::cast<Int32>(x), int32_t{5}); },
                 named("ints"));
  k.load(file.str());
  e = error_of([&] { k(ramp(3)); });
  CHECK_THAT(e, Contains("types.ffr") && Contains("float32") && Contains("int32"));
  // The function saved with it still replays the file.
  auto same = ff::freeze([](const Float& x) { return std::make_tuple(x + 1.f, int32_t{5}); },
                         named("typed"));
  same.load(file.str());
  auto [y, five] = same(ramp(3));
  CHECK(host(y) == std::vector<float>{1.f, 2.f, 3.f});
  CHECK(five == 5);
  CHECK(same.n_recordings() == 0);
}

TEST_CASE("freeze promises: a replay whose result does not fit writes no argument",
          "[freeze][files]") {
  fresh();
  TempFile file("partial.ffr");
  auto body = [](Float& a, Float& b) {
    a = a + 1.f;
    b = b * 2.f;
    return int32_t{1};
  };
  {
    auto f = ff::freeze(body, named("two"));
    Float a = ramp(3), b = ramp(3);
    f(a, b);
    f.save(file.str());
  }
  // Loaded into a body that returns another type: the written arguments must stay as they were.
  auto g = ff::freeze(
      [](Float& a, Float& b) {
        a = a + 1.f;
        b = b * 2.f;
        return 1.0;
      },
      named("two"));
  g.load(file.str());
  Float a = ramp(3), b = ramp(3);
  REQUIRE_THROWS_AS(g(a, b), ff::FreezeError);
  CHECK(host(a) == std::vector<float>{0.f, 1.f, 2.f});
  CHECK(host(b) == std::vector<float>{0.f, 1.f, 2.f});
  // The call after a failed one: the right function loads and replays.
  auto h = ff::freeze(body, named("two"));
  h.load(file.str());
  CHECK(h(a, b) == 1);
  CHECK(host(a) == std::vector<float>{1.f, 2.f, 3.f});
  CHECK(host(b) == std::vector<float>{0.f, 2.f, 4.f});
  CHECK(h.n_recordings() == 0);
}

TEST_CASE("freeze promises: verify mode sees the aliasing of the call", "[freeze][verify]") {
  fresh();
  auto body = [](Float& a, Float& b) {
    a = a + 1.f;
    b = b * 2.f;  // the same object as a when called h(p, p)
  };
  ff::FreezeOptions o;
  o.verify = 1;
  auto h = ff::freeze(body, o);
  for (size_t n : {5, 3, 0, 1, 7}) {
    INFO("n = " << n);
    Float p = ramp(n), q = ramp(n);
    REQUIRE_NOTHROW(h(p, p));
    body(q, q);
    CHECK(host(p) == host(q));
  }
  CHECK(h.n_replays() == 4);
  // A const and a non-const reference to one object: the body reads what it wrote.
  auto reads = [](const Float& c, Float& w) {
    w = w + 1.f;
    return c * 1.f;
  };
  auto r = ff::freeze(reads, o);
  for (size_t n : {4, 6}) {
    Float p = ramp(n), q = ramp(n);
    Float got = r(p, p);
    Float want = reads(q, q);
    CHECK(host(got) == host(want));
  }
}

TEST_CASE("freeze promises: the body's own exceptions propagate unchanged", "[freeze][errors]") {
  fresh();
  std::function<void()> inside;
  auto f = ff::freeze(
      [&](const Float& x) {
        inside();
        return x + 1.f;
      },
      named("own"));
  inside = [] { throw ff::FreezeError("mine"); };
  CHECK(error_of([&] { f(ramp(2)); }) == "mine");
  inside = [&] { f.clear(); };  // a FreezeError of f itself, raised inside its body
  std::string e = error_of([&] { f(ramp(2)); });
  CHECK(e == "frozen function 'own': clear() while a call is recording it");
  TempFile file("inside.ffr");
  inside = [&] { f.save(file.str()); };
  e = error_of([&] { f(ramp(2)); });
  CHECK(e.rfind("frozen function 'own': save(", 0) == 0);
  CHECK(e.find("frozen function 'own'", 1) == std::string::npos);    // once
  CHECK(e.find("takes every array it reads") == std::string::npos);  // no unrelated hint
  // What the recorder refuses still names the function, once, with the hint.
  Float outside = ramp(2);
  ff::eval(outside);
  inside = [&] { ff::eval(outside * 2.f); };
  e = error_of([&] { f(ramp(2)); });
  CHECK_THAT(e, Contains("frozen function 'own'") && Contains("implicit input"));
  CHECK(!has_address(e));
  CHECK(e.find("frozen function 'own'", 1) == std::string::npos);
  // The call after the failed ones records and replays.
  inside = [] {};
  CHECK(host(f(ramp(2))) == std::vector<float>{1.f, 2.f});
  CHECK(host(f(ramp(3))) == std::vector<float>{1.f, 2.f, 3.f});
  CHECK(f.n_recordings() == 1);
}

TEST_CASE("freeze promises: messages name things as the user knows them", "[freeze][errors]") {
  fresh();
  SECTION("a traced size error names arrays by what they hold, not by address") {
    Float x = ramp(3);
    ff::eval(x);
    std::string e = error_of([&] { (void)ff::zeros<Float>(ff::width(x) - 5); });
    CHECK_THAT(e, Contains("an array of 3 float32") && Contains("5"));
    CHECK(!has_address(e));
  }
  SECTION("a replay-time error names the function") {
    auto f = ff::freeze([](const Float& x) { return ff::zeros<Float>(ff::width(x) - 2) + 1.f; },
                        named("shrink"));
    f(ramp(5));
    std::string e = error_of([&] { f(ramp(1)); });
    CHECK_THAT(e, Contains("frozen function 'shrink'"));
    CHECK(!has_address(e));
  }
  SECTION("warn_after names each changed path once, by its path") {
    ff::FreezeOptions o = named("drift");
    o.warn_after = 1;
    LogCapture log(ff::logging::record());
    auto f = ff::freeze([](const Float& x, const Float& y) { return x + y; }, o);
    Float a = ramp(4);
    f(a, ramp(4));
    f(a, a);  // args[1] is now the same array as args[0]
    std::string said = log.str();
    CHECK_THAT(said, Contains("args[1]") && Contains("the same array as args[0]"));
    CHECK(said.find("leaf 0") == std::string::npos);
    size_t first = said.find("args[1]:");
    CHECK(said.find("args[1]:", first + 1) == std::string::npos);
  }
  SECTION("a failed save names the file asked for, not a temporary") {
    auto f = ff::freeze([](const Float& x) { return x + 1.f; });
    f(ramp(2));
    std::string path = "/nonexistent-ff-dir/f.ffr";
    std::string e = error_of([&] { f.save(path); });
    CHECK_THAT(e, Contains(path));
    CHECK(e.find(".tmp-") == std::string::npos);
  }
  SECTION("a decorator spec without its inner backend") {
    std::string e = error_of([] { ff::init("record:"); });
    CHECK_THAT(e, Contains("'record:'") && Contains("inner backend") && Contains("record:llvm"));
    e = error_of([] { ff::init(":llvm"); });
    CHECK_THAT(e, Contains("':llvm'") && Contains("names no backend"));
    fresh();
  }
}

TEST_CASE("freeze promises: switches in the environment take the usual spellings",
          "[freeze][errors]") {
  const char* name = "FF_TEST_SWITCH";
  for (const char* on : {"1", "on", "ON", "true", "True", "yes"}) {
    ::setenv(name, on, 1);
    CHECK(ff::detail::env_switch(name) == std::optional<bool>(true));
  }
  for (const char* off : {"0", "off", "OFF", "false", "False", "no"}) {
    ::setenv(name, off, 1);
    CHECK(ff::detail::env_switch(name) == std::optional<bool>(false));
  }
  ::setenv(name, "", 1);
  CHECK(ff::detail::env_switch(name) == std::nullopt);
  ::unsetenv(name);
  CHECK(ff::detail::env_switch(name) == std::nullopt);
  ::setenv(name, "maybe", 1);
  REQUIRE_THROWS_AS(ff::detail::env_switch(name), ff::Error);
  REQUIRE_THROWS_WITH(ff::detail::env_switch(name),
                      Contains("FF_TEST_SWITCH='maybe'") && Contains("off"));
  ::unsetenv(name);
}
