// Helpers for the frozen-function tests: snapshots of any traversable value (its arrays read
// back and its shape: structure and scalars), and the driver that calls a frozen function and
// the same function traced on identical arguments and compares everything.
#pragma once

#include <freezeframe/freezeframe.h>

#include <catch2/catch.hpp>
#include <functional>
#include <string>
#include <tuple>
#include <vector>

#include "support/record_corpus.h"

/// A user struct used across the frozen-function tests.
struct Particle {
  ff::Float pos, vel;
  int id = 0;
};
FF_STRUCT(Particle, pos, vel, id)

namespace fff {

using ffr::HostArray;

/// A value's shape (structure, container sizes, scalar values) and its arrays on the host.
struct Snapshot {
  std::vector<uint8_t> shape;
  std::vector<HostArray> arrays;
};

template <class T>
Snapshot snap(T& value) {
  ff::detail::SinkVisitor sink;
  ff::detail::traverse(sink, value);
  return {sink.shape.to_vector(), ffr::snapshot(sink.arrays)};
}

/// "" when equal (floats within `rel`, NaN equal to NaN), else what differs.
inline std::string diff(const Snapshot& a, const Snapshot& b, double rel = 1e-5) {
  if (a.shape != b.shape)
    return "the shapes differ (structure, sizes or scalar values)";
  if (a.arrays.size() != b.arrays.size())
    return "the number of arrays differs";
  for (size_t k = 0; k < a.arrays.size(); ++k) {
    std::string d = ffr::compare(a.arrays[k], b.arrays[k], rel);
    if (!d.empty())
      return "array " + std::to_string(k) + ": " + d;
  }
  return "";
}

/// Calls `frozen` and `traced` (the same callable, unfrozen) on two identical argument tuples
/// made by `make(n)`, then compares the results and every argument afterwards (arguments taken
/// by reference are updated in place by both).
template <class Frozen, class F, class Make>
void same_as_traced(Frozen& frozen, F& traced, const Make& make, size_t n, double rel = 1e-5) {
  INFO("arguments made at n = " << n);
  auto a = make(n);
  auto b = make(n);
  using R = decltype(std::apply(traced, b));
  if constexpr (std::is_void_v<R>) {
    std::apply(frozen, a);
    std::apply(traced, b);
  } else {
    R got = std::apply(frozen, a);
    R want = std::apply(traced, b);
    CHECK(diff(snap(got), snap(want), rel) == "");
  }
  CHECK(diff(snap(a), snap(b), rel) == "");
}

inline ff::Float ramp(size_t n, float scale = 1.f, float offset = 0.f) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = offset + static_cast<float>(i) * scale;
  return ff::Float::from(v);
}

inline std::vector<float> host(const ff::Float& x) {
  return x.to_vector();
}

}  // namespace fff
