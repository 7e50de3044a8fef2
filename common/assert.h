// FF_ASSERT: checks of internal invariants that no input can break (STYLE.md section 6).
//
//   FF_ASSERT(slot < slots.size(), "op {} names slot {}", i, slot);
//
// On when NDEBUG is not defined (Debug builds) or when FF_ASSERTIONS is defined (the CMake
// option FF_ASSERTIONS=ON, which CI's Release and sanitizer builds use). A failed assertion
// logs the condition, the formatted message and the source location at critical level on the
// ff.assert logger (also on stderr when that logger is silenced) and aborts. When off, the
// condition and the message arguments are type-checked but never evaluated.
//
// Only for conditions that are bugs in freezeframe itself. Anything a user, a file or a
// recording from outside can cause is validated and raises an ff::Error subclass instead
// (docs/errors.md): an assertion may be compiled out, a validation never is.
#pragma once

#include <fmt/format.h>

#include <string>

#if !defined(NDEBUG) || defined(FF_ASSERTIONS)
#define FF_ASSERTIONS_ENABLED 1
#else
#define FF_ASSERTIONS_ENABLED 0
#endif

namespace ff::detail {

/// Logs a failed assertion and aborts the process. Never returns.
[[noreturn]] void assertion_failed(const char* condition, const char* file, int line,
                                   const std::string& message) noexcept;

}  // namespace ff::detail

#if FF_ASSERTIONS_ENABLED
#define FF_ASSERT(cond, ...)                                                                 \
  do {                                                                                       \
    if (!(cond)) [[unlikely]]                                                                \
      ::ff::detail::assertion_failed(#cond, __FILE__, __LINE__, ::fmt::format(__VA_ARGS__)); \
  } while (false)
#else
#define FF_ASSERT(cond, ...)            \
  do {                                  \
    if (false) {                        \
      (void)(cond);                     \
      (void)::fmt::format(__VA_ARGS__); \
    }                                   \
  } while (false)
#endif
