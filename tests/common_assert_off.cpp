// A translation unit with FF_ASSERT compiled out, whatever the build's setting: for
// common_assert.cpp.
#ifndef NDEBUG
#define NDEBUG
#endif
#undef FF_ASSERTIONS
#include "common/assert.h"

static_assert(FF_ASSERTIONS_ENABLED == 0);

void failing_assert_compiled_out(int& count) {
  FF_ASSERT(++count < 0, "evaluated {} times", ++count);
}
