// dot, any, all and count: size-1 results at every size (0 included), in frozen functions and
// recordings at sizes other than the recorded one; block reductions of every op and type.
#include <catch2/catch.hpp>
#include <cstdint>
#include <random>
#include <vector>

#include "freezeframe/freezeframe.h"
#include "support/record_corpus.h"
#include "support/scatter_reference.h"

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

namespace {

/// Block reductions on the host: element b reduces [b * block, min((b + 1) * block, n)),
/// combining as scatter_reduce does, from the op's identity.
template <class T>
std::vector<T> host_blocks(ff::ReduceOp op, const std::vector<T>& a, size_t block) {
  std::vector<T> out((a.size() + block - 1) / block, ff::detail::reduce_identity<T>(op));
  for (size_t i = 0; i < a.size(); ++i)
    out[i / block] = ff_test::reference_combine(op, out[i / block], a[i]);
  return out;
}

template <class T>
void check_blocks(ff::ReduceOp op) {
  using A = ff::Array<T>;
  for (size_t n : kSizes)
    for (size_t block : {size_t{1}, size_t{3}, size_t{32}, n, n + 5}) {
      if (block == 0)
        continue;
      INFO(ff::to_string(op) << " of " << ff::to_string(A::kType) << ", n = " << n << ", block "
                             << block);
      std::vector<T> a(n);
      for (size_t i = 0; i < n; ++i)
        a[i] = ff_test::lane_value<T>(op, i * 7 + 3);
      A x = A::from(a);
      A r;
      switch (op) {
        case ff::ReduceOp::Add:
          r = ff::block_sum(x, block);
          break;
        case ff::ReduceOp::Mul:
          r = ff::block_reduce(ff::ReduceOp::Mul, x, block);
          break;
        case ff::ReduceOp::Min:
          r = ff::block_reduce(ff::ReduceOp::Min, x, block);
          break;
        case ff::ReduceOp::Max:
          r = ff::block_reduce(ff::ReduceOp::Max, x, block);
          break;
        case ff::ReduceOp::And:
          if constexpr (std::is_integral_v<T>)
            r = ff::block_reduce(ff::ReduceOp::And, x, block);
          break;
        case ff::ReduceOp::Or:
          if constexpr (std::is_integral_v<T>)
            r = ff::block_reduce(ff::ReduceOp::Or, x, block);
          break;
      }
      REQUIRE(r.size() == (n + block - 1) / block);
      REQUIRE(ff_test::same_bits(r.to_vector(), host_blocks(op, a, block)));
    }
}

template <class T>
void check_block_ops() {
  for (ff::ReduceOp op :
       {ff::ReduceOp::Add, ff::ReduceOp::Mul, ff::ReduceOp::Min, ff::ReduceOp::Max})
    check_blocks<T>(op);
  if constexpr (std::is_integral_v<T>)
    for (ff::ReduceOp op : {ff::ReduceOp::And, ff::ReduceOp::Or})
      check_blocks<T>(op);
}

}  // namespace

TEST_CASE("block reductions of every op and type: blocks of 1, 3, 32, n and a short last one",
          "[reduce][block]") {
  ffr::fresh();
  check_block_ops<int32_t>();
  check_block_ops<uint32_t>();
  check_block_ops<int64_t>();
  check_block_ops<uint64_t>();
  check_block_ops<float>();
  check_block_ops<double>();
}

TEST_CASE("block reductions: a block of 0 raises ff::Error, an empty array gives an empty one",
          "[reduce][block]") {
  ffr::fresh();
  ff::Float x = ff::Float::from({1.f, 2.f, 3.f});
  REQUIRE_THROWS_AS(ff::block_sum(x, 0), ff::Error);
  REQUIRE_THROWS_WITH(ff::block_reduce(ff::ReduceOp::Max, x, 0),
                      Catch::Contains("block size is 0"));
  CHECK(ff::block_sum(x, 2).to_vector() == std::vector<float>{3.f, 3.f});  // the call after
  CHECK(ff::block_sum(ff::zeros<ff::Float>(0), 4).size() == 0);
  // A block larger than any array: one element, the whole reduction.
  CHECK(ff::block_sum(x, UINT64_MAX).to_vector() == std::vector<float>{6.f});
  // Float sums of one block on one thread add in order, as a loop does.
  std::vector<float> v(1000);
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = 1.f / float(i + 1);
  float serial = 0.f;
  for (float f : v)
    serial += f;
  CHECK(ff::block_sum(ff::Float::from(v), 1000).to_vector()[0] == serial);
}

TEST_CASE("block reductions in a frozen function replay at new sizes", "[reduce][block][freeze]") {
  ffr::fresh();
  auto fn = [](const ff::Int32& x) {
    return std::make_tuple(ff::block_sum(x, 4), ff::block_reduce(ff::ReduceOp::Max, x, 3));
  };
  auto f = ff::freeze(fn);
  for (size_t n : {10, 0, 1, 2, 3, 4, 5, 61, 1000}) {
    INFO("n = " << n);
    std::vector<int32_t> xs(n);
    for (size_t i = 0; i < n; ++i)
      xs[i] = int32_t(i * 37 % 23) - 11;
    auto [s, m] = f(ff::Int32::from(xs));
    CHECK(s.to_vector() == host_blocks(ff::ReduceOp::Add, xs, 4));
    CHECK(m.to_vector() == host_blocks(ff::ReduceOp::Max, xs, 3));
  }
  CHECK(f.n_recordings() == 1);
}
