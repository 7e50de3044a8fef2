// Must not compile: std::vector<bool> holds bits, not bools, so ff::freeze cannot walk it. The
// test (tests/CMakeLists.txt, "freeze.compile error for a std::vector<bool> argument") checks
// that the compiler stops with freezeframe's message instead of one from deep in the library.
#include <vector>

#include "freezeframe/freeze.h"

int main() {
  auto f = ff::freeze([](const ff::Float& x, const std::vector<bool>& flags) {
    return flags.empty() ? x : x * 2.f;
  });
  f(ff::Float(1.f), std::vector<bool>{true});
}
