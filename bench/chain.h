// The benchmark op chain, written once for ff arrays and for plain floats: op k of a chain is
// kChain[k % 5] applied to (y, x). Values stay positive for inputs in [0, 1) (sqrt is safe).
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <utility>
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

/// reference() for every element of x.
inline std::vector<float> reference(const std::vector<float>& x, int n_ops) {
  std::vector<float> want(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    want[i] = reference(x[i], n_ops);
  }
  return want;
}

/// make_input(n) and reference(make_input(n), n_ops), computed once per (n, n_ops) and kept:
/// W2's 16M elements take a while on the host, and every benchmark run needs them. Not
/// thread-safe (benchmark bodies run on one thread).
inline const std::vector<float>& cached_input(size_t n) {
  static std::map<size_t, std::vector<float>> cache;
  auto it = cache.find(n);
  return it != cache.end() ? it->second : cache.emplace(n, make_input(n)).first->second;
}

inline const std::vector<float>& cached_reference(size_t n, int n_ops) {
  static std::map<std::pair<size_t, int>, std::vector<float>> cache;
  auto key = std::pair(n, n_ops);
  auto it = cache.find(key);
  return it != cache.end() ? it->second
                           : cache.emplace(key, reference(cached_input(n), n_ops)).first->second;
}

/// Self-test of the checks of timed calls (--ff_expect_wrong): what they expect is off by a
/// part in a thousand, so each of them must fail and the benchmark exit 1. Warm-up checks
/// keep the true values, so the timed loops are reached. bench-smoke runs every binary once
/// this way.
inline bool g_expect_wrong = false;

/// What a check of a timed call expects when the true result is `v`.
template <class T>
T timed_expectation(T v) {
  return g_expect_wrong ? v * T(1.001) + T(1e-3) : v;
}

/// timed_expectation() of cached_reference(n, n_ops), cached the same way.
inline const std::vector<float>& timed_reference(size_t n, int n_ops) {
  if (!g_expect_wrong) {
    return cached_reference(n, n_ops);
  }
  static std::map<std::pair<size_t, int>, std::vector<float>> cache;
  auto key = std::pair(n, n_ops);
  auto it = cache.find(key);
  if (it == cache.end()) {
    std::vector<float> want = cached_reference(n, n_ops);
    for (float& v : want) {
      v = timed_expectation(v);
    }
    it = cache.emplace(key, std::move(want)).first;
  }
  return it->second;
}

/// Compares a result with what is expected (within 1e-5 relative plus 1e-6 absolute: the
/// backend may contract or vectorise differently from the host). Returns "" when they agree,
/// else the first mismatch.
inline std::string compare(std::span<const float> got, std::span<const float> want) {
  if (got.size() != want.size()) {
    return "result has " + std::to_string(got.size()) + " elements, expected " +
           std::to_string(want.size());
  }
  for (size_t i = 0; i < got.size(); ++i) {
    if (!(std::abs(got[i] - want[i]) <= 1e-5f * std::abs(want[i]) + 1e-6f)) {
      return "element " + std::to_string(i) + " is " + std::to_string(got[i]) + ", expected " +
             std::to_string(want[i]);
    }
  }
  return {};
}

}  // namespace ff_bench
