// dot, any, all and count: size-1 results at every size (0 included), in frozen functions and
// recordings at sizes other than the recorded one.
#include <catch2/catch.hpp>
#include <cstdint>
#include <random>
#include <vector>

#include "freezeframe/freezeframe.h"
#include "support/record_corpus.h"

namespace {

const size_t kSizes[] = {0, 1, 2, 3, 7, 61, 4099, 100003};

std::vector<bool> mask_of(size_t n, int kind, uint32_t seed) {
  std::mt19937 g(seed);
  std::vector<bool> m(n);
  for (size_t i = 0; i < n; ++i)
    m[i] = kind == 0 ? false : kind == 1 ? true : (g() % 3 == 0);
  return m;
}

ff::Bool to_bool(const std::vector<bool>& m) {
  std::vector<uint32_t> u(m.begin(), m.end());
  return ff::UInt32::from(u) != 0u;
}

}  // namespace

TEST_CASE("reductions: any, all and count at every size, all-false and all-true masks",
          "[reduce]") {
  ffr::fresh();
  for (size_t n : kSizes)
    for (int kind : {0, 1, 2}) {
      INFO("n = " << n << ", kind " << kind);
      std::vector<bool> m = mask_of(n, kind, uint32_t(n + 7));
      size_t want = 0;
      for (bool b : m)
        want += b;
      ff::Bool mask = to_bool(m);
      ff::Bool any = ff::any(mask), all = ff::all(mask);
      ff::UInt32 count = ff::count(mask);
      REQUIRE(any.size() == 1);
      REQUIRE(count.size() == 1);
      CHECK(any.to_vector()[0] == (want > 0));
      CHECK(all.to_vector()[0] == (want == n));
      CHECK(count.to_vector()[0] == want);
    }
  // Empty: any false, all true, count 0.
  ff::Bool empty = ff::zeros<ff::Bool>(0);
  CHECK(ff::any(empty).to_vector() == std::vector<bool>{false});
  CHECK(ff::all(empty).to_vector() == std::vector<bool>{true});
  CHECK(ff::count(empty).to_vector() == std::vector<uint32_t>{0u});
  // A literal mask (size 1).
  CHECK(ff::count(ff::Bool(true)).to_vector() == std::vector<uint32_t>{1u});
}

TEST_CASE("reductions: dot of every numeric type, with scalars, 0 for empty arrays", "[reduce]") {
  ffr::fresh();
  auto check = []<class T>(T) {
    using A = ff::Array<T>;
    for (size_t n : kSizes) {
      INFO("n = " << n);
      std::vector<T> a(n), b(n);
      double want = 0;
      for (size_t i = 0; i < n; ++i) {
        a[i] = static_cast<T>(i % 7);
        b[i] = static_cast<T>(3 - static_cast<int>(i % 5) * (std::is_signed_v<T> ? 1 : 0));
        want += static_cast<double>(a[i]) * static_cast<double>(b[i]);
      }
      A d = ff::dot(A::from(a), A::from(b));
      REQUIRE(d.size() == 1);
      CHECK(static_cast<double>(d.to_vector()[0]) == want);  // small integers: exact
    }
    CHECK(ff::dot(A::from({T(1), T(2), T(3)}), T(2)).to_vector()[0] == T(12));
    CHECK(ff::dot(T(3), A::from({T(1), T(2)})).to_vector()[0] == T(9));
  };
  check(int32_t{});
  check(uint32_t{});
  check(int64_t{});
  check(uint64_t{});
  check(0.f);
  check(0.0);
}

TEST_CASE("reductions: dot, any and count inside a frozen function replay at new sizes",
          "[reduce][freeze]") {
  ffr::fresh();
  auto fn = [](const ff::Float& x, const ff::Float& y) {
    ff::Bool m = x > 0.5f;
    return std::make_tuple(ff::dot(x, y), ff::any(m), ff::all(m), ff::count(m));
  };
  auto f = ff::freeze(fn);
  for (size_t n : {9, 0, 2, 3, 61, 1000}) {
    INFO("n = " << n);
    std::vector<float> xs(n), ys(n);
    float want_dot = 0;
    uint32_t want_count = 0;
    for (size_t i = 0; i < n; ++i) {
      xs[i] = 0.25f * static_cast<float>(i % 4);
      ys[i] = static_cast<float>(i % 3);
      want_dot += xs[i] * ys[i];  // exact: quarters times small integers
      want_count += xs[i] > 0.5f;
    }
    auto [d, any, all, count] = f(ff::Float::from(xs), ff::Float::from(ys));
    CHECK(d.to_vector()[0] == want_dot);
    CHECK(any.to_vector()[0] == (want_count > 0));
    CHECK(all.to_vector()[0] == (want_count == n));
    CHECK(count.to_vector()[0] == want_count);
  }
}
