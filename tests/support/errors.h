// Exact exception types in tests (docs/errors.md): REQUIRE_THROWS_EXACTLY(expr, ff::FreezeError)
// also passes for a GuardError or any other subclass, which would hide a drift in the error
// contract. These macros compare the dynamic type of what was thrown with the expected type:
//
//   REQUIRE_THROWS_EXACTLY(r.replay({x}), ff::GuardError);
//   CHECK_THROWS_EXACTLY(ff::eval(a + b), ff::Error);   // the base itself, not a subclass
//
// On a mismatch Catch prints both type names and the exception's message.
#pragma once

#include <cxxabi.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <exception>
#include <memory>
#include <string>
#include <typeinfo>

#include "support/errors.h"

namespace fft {

inline std::string demangled(const char* mangled) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> name(
      abi::__cxa_demangle(mangled, nullptr, nullptr, &status), std::free);
  return status == 0 && name ? std::string(name.get()) : std::string(mangled);
}

template <class T>
std::string type_name_of() {
  return demangled(typeid(T).name());
}

/// What `f` threw: the demangled dynamic type ("nothing" if it returned) and the message.
struct Thrown {
  std::string type, what;
};

template <class F>
Thrown thrown_by(F&& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return {demangled(typeid(e).name()), e.what()};
  } catch (...) {  // a user's own exception type: its name from the C++ runtime
    const std::type_info* t = abi::__cxa_current_exception_type();
    return {t ? demangled(t->name()) : "an unknown exception", ""};
  }
  return {"nothing", ""};
}

}  // namespace fft

#define FFT_THROWS_EXACTLY(macro, expr, Type)                                  \
  do {                                                                         \
    const ::fft::Thrown fft_thrown_ = ::fft::thrown_by([&] { (void)(expr); }); \
    INFO(#expr " threw " << fft_thrown_.type << ": " << fft_thrown_.what);     \
    macro(fft_thrown_.type == ::fft::type_name_of<Type>());                    \
  } while (false)

#define REQUIRE_THROWS_EXACTLY(expr, Type) FFT_THROWS_EXACTLY(REQUIRE, expr, Type)
#define CHECK_THROWS_EXACTLY(expr, Type) FFT_THROWS_EXACTLY(CHECK, expr, Type)
