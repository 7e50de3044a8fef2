// FF_ASSERT (common/assert.h): with assertions on, a broken invariant logs the condition, the
// message and the location and aborts, also with logging switched off; with them compiled out
// (common_assert_off.cpp), neither the condition nor the message arguments are evaluated.
#include <freezeframe/freezeframe.h>

#include <catch2/catch.hpp>

#include "common/assert.h"
#include "support/child.h"

using Catch::Matchers::Contains;

/// Defined in common_assert_off.cpp, a translation unit built with assertions off: runs a
/// failing FF_ASSERT whose condition and message each count their evaluations in `count`.
void failing_assert_compiled_out(int& count);

namespace {

int bump(int& n) {
  return ++n;
}

}  // namespace

TEST_CASE("a failing FF_ASSERT logs condition, message and location, then aborts",
          "[common][assert]") {
  if (!FF_ASSERTIONS_ENABLED) {
    std::puts("skipped: assertions are compiled out (configure with -DFF_ASSERTIONS=ON)");
    return;
  }
  for (bool silenced : {false, true}) {
    INFO((silenced ? "logging off" : "logging at warn"));
    fft::ChildResult child = fft::in_child([&] {
      ff::set_log_level(silenced ? ff::LogLevel::Off : ff::LogLevel::Warn);
      int two = 2;
      FF_ASSERT(1 + 1 == 3, "one plus one is {}, not {}", two, 3);
    });
    INFO(child.err);
    CHECK(child.aborted());
    CHECK_THAT(child.err, Contains("assertion failed: 1 + 1 == 3") &&
                              Contains("one plus one is 2, not 3") &&
                              Contains("common_assert.cpp"));
  }
}

TEST_CASE("a holding FF_ASSERT evaluates its condition once and its message never",
          "[common][assert]") {
  if (!FF_ASSERTIONS_ENABLED) {
    std::puts("skipped: assertions are compiled out (configure with -DFF_ASSERTIONS=ON)");
    return;
  }
  int cond = 0, message = 0;
  FF_ASSERT(bump(cond) == 1, "{}", bump(message));
  CHECK(cond == 1);
  CHECK(message == 0);
}

TEST_CASE("FF_ASSERT compiled out evaluates neither its condition nor its message",
          "[common][assert]") {
  int count = 0;
  failing_assert_compiled_out(count);  // would abort if the assertion were compiled in
  CHECK(count == 0);
}
