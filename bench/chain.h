// The benchmark op chain, written once for ff arrays and for plain floats: op k of a chain is
// kChain[k % 5] applied to (y, x). Values stay positive for inputs in [0, 1) (sqrt is safe).
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace ff_bench {

// Scalar versions of the array functions the chain uses; ff::Array finds ff::fma etc. by
// argument-dependent lookup, plain floats find these.
inline float fma(float a, float b, float c) {
  return std::fma(a, b, c);
}

inline float sqrt(float a) {
  return std::sqrt(a);
}

inline float select(bool mask, float a, float b) {
  return mask ? a : b;
}

inline constexpr int kChainLength = 5;

/// W1 "overhead-bound": 1,024 floats, 100 ops, ff::eval every 10 ops (10 kernels).
inline constexpr size_t kW1Size = 1024;
inline constexpr int kW1Ops = 100;
inline constexpr int kW1EvalEvery = 10;
/// W3 "per kernel": 16 floats, 100 ops, ff::eval after each (100 kernels).
inline constexpr size_t kW3Size = 16;
inline constexpr int kW3Ops = 100;
inline constexpr int kW3EvalEvery = 1;
/// W2 "bandwidth": 16M floats, 10 ops, one eval.
inline constexpr size_t kW2Size = size_t(1) << 24;
inline constexpr int kW2Ops = 10;

/// Op k of the chain: fma(y, 0.5, x), y + 1, y * 0.75, sqrt(y), select(y > 1, y - 0.5, y + 0.5).
template <class V>
V chain_op(int k, const V& y, const V& x) {
  switch (k % kChainLength) {
    case 0:
      return fma(y, 0.5f, x);
    case 1:
      return y + 1.f;
    case 2:
      return y * 0.75f;
    case 3:
      return sqrt(y);
    default:
      return select(y > 1.f, y - 0.5f, y + 0.5f);
  }
}

/// Deterministic inputs in [0, 1).
inline std::vector<float> make_input(size_t n) {
  std::vector<float> v(n);
  uint32_t s = 0x12345678u;
  for (auto& e : v) {
    s = s * 1664525u + 1013904223u;  // LCG
    e = static_cast<float>(s >> 8) * (1.f / 16777216.f);
  }
  return v;
}

/// The result of `n_ops` chain ops on one element, computed on the host.
inline float reference(float x, int n_ops) {
  float y = x;
  for (int k = 0; k < n_ops; ++k) {
    y = chain_op(k, y, x);
  }
  return y;
}

}  // namespace ff_bench
