// W2's 10-op chain (chain.h) for one element, written out as a C++ programmer would: shared by
// the OpenMP baseline (hand_loop.cpp) and its scalar twin (hand_loop_scalar.cpp), which differ
// only in their compile flags. Includes no freezeframe header.
#pragma once

#include <cmath>

namespace ff_bench::hand {

// The last 4 ops of chain.h's 5-op cycle: y + 1, y * 0.75, sqrt, select.
inline float rest_of_cycle(float y) {
  y = y + 1.f;
  y = y * 0.75f;
  y = std::sqrt(y);
  return y > 1.f ? y - 0.5f : y + 0.5f;
}

inline float w2_element(float x) {
  float y = rest_of_cycle(std::fma(x, 0.5f, x));  // ops 0-4
  return rest_of_cycle(std::fma(y, 0.5f, x));     // ops 5-9
}

}  // namespace ff_bench::hand
