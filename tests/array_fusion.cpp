// The tracer's guarantees seen through the public API: fusion into one kernel per size, the
// kernel cache, literals (no storage until needed, folding, make_opaque), copy-on-write
// scatter, eval's laziness rules and ff::width arithmetic. Counts come from ff::stats().
#include <freezeframe/freezeframe.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "support/reference.h"

using namespace fft;

namespace {

/// 100 element-wise operations of several kinds on v.
ff::Float chain100(ff::Float v) {
  for (int i = 0; i < 13; ++i) {           // 13 * 7 + 3 * 3 = 100 operations
    v = v * 1.0009765625f;                 // 1
    v = v + 0.5f;                          // 2
    v = ff::min(v, 100.f);                 // 3
    v = ff::abs(v);                        // 4
    v = ff::select(v > 50.f, v - 1.f, v);  // 5 6 7
    if (i % 4 == 3)
      v = v - ff::floor(v * 0.25f);  // 3 more, for i = 3, 7, 11
  }
  return v;
}

float chain100_ref(float v) {
  for (int i = 0; i < 13; ++i) {
    v = v * 1.0009765625f;
    v = v + 0.5f;
    v = std::fmin(v, 100.f);
    v = std::fabs(v);
    v = v > 50.f ? v - 1.f : v;
    if (i % 4 == 3)
      v = v - std::floor(v * 0.25f);
  }
  return v;
}

/// A fresh backend stack: empty kernel cache, whatever ran before in this process.
void fresh_init() {
  ff::shutdown();
  ff::init("llvm");
}

ff::Float evaluated(const std::vector<float>& v) {
  ff::Float a = to_array(v);
  ff::eval(a);
  ff::sync();
  return a;
}

}  // namespace

TEST_CASE("a chain of 100 element-wise operations evaluates with one kernel launch",
          "[tracer][fusion][cache]") {
  fresh_init();
  const auto data = random_vector<float>(1000, 300, -120.0, 120.0);
  ff::Float x = evaluated(data);

  ff::Float y;
  const ff::Stats first = delta([&] {
    y = chain100(x);
    ff::eval(y);
    ff::sync();
  });
  CHECK(first.launches == 1);
  CHECK(first.compiles == 1);
  check_exact("100-op chain", y, data.size(), [&](size_t i) { return chain100_ref(data[i]); });

  SECTION("a second identical evaluation compiles nothing") {
    ff::Float y2;
    const ff::Stats again = delta([&] {
      y2 = chain100(x);
      ff::eval(y2);
      ff::sync();
    });
    CHECK(again.launches == 1);
    CHECK(again.compiles == 0);
    CHECK(again.cache_hits == 1);
    check_exact("100-op chain again", y2, data.size(),
                [&](size_t i) { return chain100_ref(data[i]); });
  }
  SECTION("the same code at other sizes compiles nothing") {
    for (size_t n : {size_t(7), size_t(5000), kLargeSize}) {
      const auto d2 = random_vector<float>(n, 301, -120.0, 120.0);
      ff::Float x2 = evaluated(d2);
      ff::Float y2;
      const ff::Stats other = delta([&] {
        y2 = chain100(x2);
        ff::eval(y2);
        ff::sync();
      });
      INFO("n = " << n);
      CHECK(other.launches == 1);
      CHECK(other.compiles == 0);
      check_exact("100-op chain at another size", y2, n,
                  [&](size_t i) { return chain100_ref(d2[i]); });
    }
  }
}

TEST_CASE("several outputs of one size fuse into one kernel and other sizes get their own",
          "[tracer][fusion]") {
  ff::init();
  const auto a = random_vector<float>(1000, 302);
  const auto b = random_vector<float>(300, 303);
  ff::Float x = evaluated(a), z = evaluated(b);
  ff::Float p, q, r, s;
  const ff::Stats one = delta([&] {
    p = x * 2.f;
    q = x + 1.f;
    r = ff::sqrt(ff::abs(x));
    ff::eval(p, q, r);
    ff::sync();
  });
  CHECK(one.launches == 1);
  const ff::Stats two = delta([&] {
    p = x * 3.f;
    s = z * 3.f;
    ff::eval(p, s);
    ff::sync();
  });
  CHECK(two.launches == 2);
  check_exact("x * 3", p, a.size(), [&](size_t i) { return a[i] * 3.f; });
  check_exact("z * 3", s, b.size(), [&](size_t i) { return b[i] * 3.f; });
}

TEST_CASE("work of different sizes runs in dependency order", "[tracer][fusion]") {
  const size_t n = GENERATE(as<size_t>{}, 7, kLargeSize);
  const auto a = exact_sum_vector<float>(n, 304);
  const auto b = exact_sum_vector<float>(300, 305);
  ff::Float x = to_array(a), z = to_array(b);
  ff::Float total = ff::sum(x * 2.f);                        // size n -> reduction -> size 1
  ff::Float shifted = z + total;                             // size 300 uses the size-1 result
  ff::UInt32 big = ff::compress(x > 0.f);                    // data-dependent size
  ff::Float picked = ff::gather<ff::Float>(x, big) + total;  // size of the compress
  ff::eval(shifted, picked);
  double want_total = 0;
  for (float v : a)
    want_total += 2.0 * v;
  check_exact("z + sum(x * 2)", shifted, b.size(),
              [&](size_t i) { return b[i] + static_cast<float>(want_total); });
  std::vector<float> want_p;
  for (float v : a) {
    if (v > 0.f)
      want_p.push_back(v + static_cast<float>(want_total));
  }
  check_exact("gather(x, compress(x > 0)) + total", picked, want_p);
}

TEST_CASE("eval evaluates only the arrays it is given and every pending scatter",
          "[tracer][eval]") {
  ff::init();
  const auto a = random_vector<float>(1000, 306);
  ff::Float x = evaluated(a);
  ff::Float t = x * 2.f, u = x + 1.f;
  const ff::Stats d1 = delta([&] {
    ff::eval(t);
    ff::sync();
  });
  CHECK(d1.launches == 1);
  const ff::Stats d2 = delta([&] {
    ff::eval(u);  // u stayed lazy: it needs its own launch now
    ff::sync();
  });
  CHECK(d2.launches == 1);
  const ff::Stats d3 = delta([&] {
    ff::eval(t, u);  // both evaluated already: nothing to run
    ff::sync();
  });
  CHECK(d3.launches == 0);

  ff::Float target = evaluated(std::vector<float>(10, 0.f));
  ff::scatter(target, 5.f, to_array(std::vector<uint32_t>{1, 3}));
  const ff::Stats d4 = delta([&] {
    ff::eval();  // no arrays: only the pending scatter
    ff::sync();
  });
  CHECK(d4.launches == 1);  // the scatter's kernel
  const ff::Stats d5 = delta([&] {
    check_exact("scatter done by eval()", target, std::vector<float>{0, 5, 0, 5, 0, 0, 0, 0, 0, 0});
  });
  CHECK(d5.launches == 0);
}

TEST_CASE("literals allocate nothing until stored and fold on combination", "[tracer][literal]") {
  ff::init();
  ff::Float c, big;
  const ff::Stats d = delta([&] {
    ff::Float a = 0.5f;
    ff::Float b = ff::full<ff::Float>(2.f, kLargeSize);
    ff::Float z = ff::zeros<ff::Float>(kLargeSize);
    c = a * 4.f + 1.f;
    big = (b + z) * a + 3.f;
  });
  CHECK(d.allocs == 0);
  CHECK(d.launches == 0);
  CHECK(d.bytes_allocated == 0);
  CHECK(c.size() == 1);
  CHECK(big.size() == kLargeSize);
  CHECK(scalar_of(ff::Float(2.f) * 3.f) == 6.f);
  CHECK(scalar_of(c) == 3.f);
  CHECK(scalar_of(ff::Int32(7) % 4 - ff::Int32(1)) == 2);
  CHECK(scalar_of(ff::cast<ff::Int32>(ff::Float64(2.75))) == 2);
  check_exact("(full(2) + zeros) * 0.5 + 3", big, kLargeSize, [](size_t) { return 4.f; });
}

TEST_CASE("make_opaque turns a literal into a buffer that kernels take as an argument",
          "[tracer][literal]") {
  fresh_init();
  const auto a = random_vector<float>(1000, 307);
  ff::Float x = evaluated(a);
  ff::Float k2 = 2.f, k3 = 3.f;
  const ff::Stats made = delta([&] { ff::make_opaque(k2, k3); });
  CHECK(made.allocs == 2);
  CHECK(made.bytes_allocated == 2 * sizeof(float));
  CHECK(scalar_of(k2) == 2.f);
  ff::Float y2, y3;
  const ff::Stats first = delta([&] {
    y2 = x * k2;
    ff::eval(y2);
  });
  CHECK(first.compiles == 1);
  const ff::Stats second = delta([&] {
    y3 = x * k3;  // another value in a buffer: the same kernel
    ff::eval(y3);
  });
  CHECK(second.compiles == 0);
  check_exact("x * opaque 2", y2, a.size(), [&](size_t i) { return a[i] * 2.f; });
  check_exact("x * opaque 3", y3, a.size(), [&](size_t i) { return a[i] * 3.f; });

  // a full() made opaque is a buffer of that size holding the value
  ff::Float f = ff::full<ff::Float>(1.5f, 100);
  const ff::Stats mf = delta([&] { ff::make_opaque(f); });
  CHECK(mf.allocs == 1);
  CHECK(mf.bytes_allocated == 100 * sizeof(float));
  check_exact("opaque full(1.5, 100)", f, 100, [](size_t) { return 1.5f; });

  // literal values are compiled into the kernel: a new value is a new kernel
  ff::Float l1, l2;
  delta([&] {
    l1 = x * 5.f;
    ff::eval(l1);
  });
  const ff::Stats lit = delta([&] {
    l2 = x * 7.f;
    ff::eval(l2);
  });
  CHECK(lit.compiles == 1);
  check_exact("x * literal 7", l2, a.size(), [&](size_t i) { return a[i] * 7.f; });
}

// ---------------------------------------------------------------------------------------
// copy-on-write scatter

TEST_CASE("scatter is copy-on-write for other handles and earlier expressions",
          "[tracer][scatter][cow]") {
  const size_t n = GENERATE(as<size_t>{}, 7, 1000, kLargeSize);
  const auto old = random_vector<float>(n, 308);
  const std::vector<uint32_t> idx{0, static_cast<uint32_t>(n / 2), static_cast<uint32_t>(n - 1)};
  std::vector<float> updated = old;
  for (uint32_t i : idx)
    updated[i] = -1000.f;

  SECTION("an evaluated target") {
    ff::Float a = to_array(old);
    ff::eval(a);
    ff::Float b = a;           // another handle on the same variable
    ff::Float c = a + 1.f;     // an unevaluated expression reading a
    ff::Float s = ff::sum(a);  // an unevaluated reduction reading a
    ff::scatter(a, -1000.f, to_array(idx));
    check_exact("the target sees the write", a, updated);
    check_exact("the other handle keeps the old contents", b, old);
    check_exact("the earlier expression sees the old contents", c, n,
                [&](size_t i) { return old[i] + 1.f; });
    double want = 0, want_abs = 0;
    for (float v : old) {
      want += v;
      want_abs += std::fabs(v);
    }
    const double tol = static_cast<double>(n) * std::numeric_limits<float>::epsilon() * want_abs;
    CHECK(static_cast<double>(scalar_of(s)) == Approx(want).margin(tol).epsilon(0));
    ff::Float after = a + 1.f;  // built after the scatter: sees the new contents
    check_exact("a later expression sees the write", after, n,
                [&](size_t i) { return updated[i] + 1.f; });
  }
  SECTION("an unevaluated target and a literal target") {
    ff::Float base = to_array(old);
    ff::Float a = base * 1.f;  // lazy
    ff::Float keep = a;
    ff::scatter(a, -1000.f, to_array(idx));
    check_exact("lazy target after scatter", a, updated);
    check_exact("handle on the lazy target before scatter", keep, old);
    ff::Float lit = ff::full<ff::Float>(4.f, n);
    ff::Float lit_keep = lit;
    ff::Float lit_expr = lit * 2.f;
    ff::scatter(lit, -1000.f, to_array(idx));
    check_exact("literal target after scatter", lit, n, [&](size_t i) {
      return std::find(idx.begin(), idx.end(), static_cast<uint32_t>(i)) != idx.end() ? -1000.f
                                                                                      : 4.f;
    });
    check_exact("handle on the literal", lit_keep, n, [](size_t) { return 4.f; });
    check_exact("expression on the literal", lit_expr, n, [](size_t) { return 8.f; });
  }
  SECTION("scatter_add and two scatters in a row") {
    ff::Float a = to_array(old);
    ff::Float b = a;
    ff::Float c = a * 2.f;
    ff::scatter_add(a, 1.f, to_array(idx));
    ff::Float mid = a;
    ff::scatter(a, 5.f, to_array(std::vector<uint32_t>{0}));
    std::vector<float> after_add = old;
    for (uint32_t i : idx)
      after_add[i] += 1.f;
    std::vector<float> after_both = after_add;
    after_both[0] = 5.f;
    check_exact("after scatter_add and scatter", a, after_both);
    check_exact("handle between the two scatters", mid, after_add);
    check_exact("handle before both", b, old);
    check_exact("expression before both", c, n, [&](size_t i) { return old[i] * 2.f; });
  }
}

TEST_CASE("a scatter whose values read the target sees the old contents",
          "[tracer][scatter][cow]") {
  // a[i] = a[n - 1 - i] for all i: reversing in place needs every read before any write
  const size_t n = GENERATE(as<size_t>{}, 7, 1000, kLargeSize);
  const auto old = random_vector<int32_t>(n, 309);
  ff::Int32 a = to_array(old);
  ff::UInt32 iota = ff::arange<ff::UInt32>(n);
  ff::UInt32 rev = static_cast<uint32_t>(n - 1) - iota;
  ff::scatter(a, ff::gather<ff::Int32>(a, rev), iota);
  check_exact("reversed through gather + scatter", a, n, [&](size_t i) { return old[n - 1 - i]; });
  // accumulate into itself: a[i] += a[(i + 1) % n], each read from before the update
  ff::Int32 b = to_array(old);
  ff::scatter_add(b, ff::gather<ff::Int32>(b, (iota + 1u) % static_cast<uint32_t>(n)), iota);
  check_exact("scatter_add of the target's own values", b, n,
              [&](size_t i) { return r_add<int32_t>(old[i], old[(i + 1) % n]); });
}

// ---------------------------------------------------------------------------------------
// width

TEST_CASE("width arithmetic gives sizes and comparisons give bool", "[tracer][size]") {
  const size_t n = GENERATE(as<size_t>{}, 1, 7, 1000, kLargeSize);
  ff::Float x = to_array(random_vector<float>(n, 310));
  const ff::Size w = ff::width(x);
  CHECK(w == n);
  CHECK(static_cast<size_t>(w) == n);
  CHECK(w.value() == n);
  CHECK(x.size() == w);
  CHECK(static_cast<size_t>(x.size()) == n);
  CHECK(w.has_provenance());
  CHECK_FALSE(ff::Size(5).has_provenance());

  ff::UInt32 r = ff::arange<ff::UInt32>(ff::width(x) - 1);
  CHECK(r.size() == n - 1);
  check_exact("arange(width(x) - 1)", r, n - 1, [](size_t i) { return static_cast<uint32_t>(i); });
  CHECK(static_cast<size_t>((ff::width(x) + 1) / 2) == (n + 1) / 2);
  CHECK(static_cast<size_t>(ff::width(x) * 3) == 3 * n);
  CHECK(static_cast<size_t>(ff::min(ff::width(x), 5)) == std::min<size_t>(n, 5));
  CHECK(static_cast<size_t>(ff::max(ff::width(x), 5)) == std::max<size_t>(n, 5));
  CHECK(static_cast<size_t>(ff::min(5, ff::width(x))) == std::min<size_t>(n, 5));
  ff::Float half = ff::full<ff::Float>(1.f, (ff::width(x) + 1) / 2);
  CHECK(half.size() == (n + 1) / 2);

  static_assert(std::is_same_v<decltype(ff::width(x) == 3), bool>);
  static_assert(std::is_same_v<decltype(ff::width(x) < ff::width(x)), bool>);
  static_assert(std::is_same_v<decltype(ff::width(x) >= 3u), bool>);
  CHECK((ff::width(x) > 100) == (n > 100));
  CHECK((ff::width(x) <= 7) == (n <= 7));
  CHECK((ff::width(x) != 1) == (n != 1));
  CHECK((ff::width(x) < ff::width(x) + 1));
  CHECK_FALSE((ff::width(x) < ff::width(x)));
  CHECK((ff::width(x) >= ff::width(half)) == (n >= (n + 1) / 2));
  CHECK((ff::width(half) >= ff::width(x)) == ((n + 1) / 2 >= n));
  CHECK((ff::width(half) == ff::width(x)) == (n == 1));
  ff::Float y = x + 1.f;
  CHECK(y.size() == n);  // the size of an unevaluated expression
}

TEST_CASE("arrays traced on two threads at once evaluate independently", "[tracer][threads]") {
  ff::init();
  const size_t n = 100000;
  std::vector<float> out[2];
  std::vector<uint32_t> counts[2];
  auto work = [&](int t) {
    const auto data = random_vector<float>(n, 311 + static_cast<uint64_t>(t));
    for (int rep = 0; rep < 5; ++rep) {
      ff::Float x = to_array(data);
      ff::Float y = ff::sqrt(ff::abs(x)) * static_cast<float>(t + 1) + static_cast<float>(rep);
      ff::UInt32 c = ff::compress(y > 5.f);
      out[t] = host(y);
      counts[t] = host(c);
    }
  };
  std::thread t0(work, 0), t1(work, 1);
  t0.join();
  t1.join();
  for (int t = 0; t < 2; ++t) {
    const auto data = random_vector<float>(n, 311 + static_cast<uint64_t>(t));
    size_t bad = 0, cnt = 0;
    REQUIRE(out[t].size() == n);
    for (size_t i = 0; i < n; ++i) {
      const float want = std::sqrt(std::fabs(data[i])) * static_cast<float>(t + 1) + 4.f;
      if (!near_value(out[t][i], want, 1e-6, 0.0))
        ++bad;
      if (want > 5.f)
        ++cnt;
    }
    INFO("thread " << t);
    CHECK(bad == 0);
    CHECK(counts[t].size() == cnt);
  }
}
