// scatter_reduce of every kind and scatter_inc through the public API: reference results with
// repeated, masked and out-of-range indices at the edge sizes, the fusion of an increment with
// what uses its values, copy-on-write, debug range reports, frozen functions replayed at new
// sizes, recordings, and arrays from another thread.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <map>
#include <random>
#include <thread>
#include <vector>

#include "freezeframe/freezeframe.h"
#include "support/record_corpus.h"
#include "support/scatter_reference.h"

namespace {

using ff::ReduceOp;
using ff_test::lane_value;
using ff_test::reference_combine;
using ff_test::same_bits;

const size_t kSizes[] = {0, 1, 2, 3, 7, 61, 4099, 100003};
const size_t kBins[] = {1, 3, 1000};

struct Lanes {
  std::vector<uint32_t> idx;
  std::vector<uint32_t> mask;  // 0/1, made a Bool by != 0
};

// Indices in [0, bins + 2): bins and bins + 1 are out of range; every 5th lane masked off.
Lanes make_lanes(size_t n, size_t bins, uint32_t seed) {
  Lanes l{std::vector<uint32_t>(n), std::vector<uint32_t>(n)};
  std::mt19937 rng(seed);
  for (size_t i = 0; i < n; ++i) {
    l.idx[i] = uint32_t(rng() % (bins + 2));
    l.mask[i] = i % 5 != 3;
  }
  return l;
}

template <class T>
void check_reduce(ReduceOp op) {
  using A = ff::Array<T>;
  for (size_t n : kSizes)
    for (size_t bins : kBins) {
      INFO(ff::to_string(op) << " of " << ff::to_string(A::kType) << ": " << n << " lanes into "
                             << bins << " bins");
      Lanes l = make_lanes(n, bins, uint32_t(n * 7 + bins));
      std::vector<T> vals(n), start(bins);
      for (size_t i = 0; i < n; ++i)
        vals[i] = lane_value<T>(op, i);
      for (size_t b = 0; b < bins; ++b)
        start[b] = b % 5 == 4 && std::is_floating_point_v<T> ? lane_value<T>(op, 0) : T(b % 3 + 1);
      std::vector<T> want = start;
      for (size_t i = 0; i < n; ++i)
        if (l.mask[i] && l.idx[i] < bins)
          want[l.idx[i]] = reference_combine(op, want[l.idx[i]], vals[i]);
      A target = A::from(start);
      A before = target;  // another handle keeps the old contents (copy-on-write)
      ff::Bool mask = ff::UInt32::from(l.mask) != 0u;
      ff::UInt32 idx = ff::UInt32::from(l.idx);
      A v = A::from(vals);
      switch (op) {  // the op is a constant expression: one call per op
        case ReduceOp::Add:
          ff::scatter_reduce(ReduceOp::Add, target, v, idx, mask);
          break;
        case ReduceOp::Mul:
          ff::scatter_reduce(ReduceOp::Mul, target, v, idx, mask);
          break;
        case ReduceOp::Min:
          ff::scatter_reduce(ReduceOp::Min, target, v, idx, mask);
          break;
        case ReduceOp::Max:
          ff::scatter_reduce(ReduceOp::Max, target, v, idx, mask);
          break;
        case ReduceOp::And:
          if constexpr (std::is_integral_v<T>)
            ff::scatter_reduce(ReduceOp::And, target, v, idx, mask);
          break;
        case ReduceOp::Or:
          if constexpr (std::is_integral_v<T>)
            ff::scatter_reduce(ReduceOp::Or, target, v, idx, mask);
          break;
      }
      REQUIRE(same_bits(target.to_vector(), want));
      REQUIRE(same_bits(before.to_vector(), start));
    }
}

template <class T>
void check_all_ops() {
  for (ReduceOp op : {ReduceOp::Add, ReduceOp::Mul, ReduceOp::Min, ReduceOp::Max})
    check_reduce<T>(op);
  if constexpr (std::is_integral_v<T>)
    for (ReduceOp op : {ReduceOp::And, ReduceOp::Or})
      check_reduce<T>(op);
}

/// What scatter_inc gives on the CPU: lanes in order, each taking its element's count so far.
std::vector<uint32_t> serial_increments(const Lanes& l, std::vector<uint32_t>& counter) {
  std::vector<uint32_t> slots(l.idx.size(), 0);
  for (size_t i = 0; i < l.idx.size(); ++i)
    if (l.mask[i] && l.idx[i] < counter.size())
      slots[i] = counter[l.idx[i]]++;
  return slots;
}

}  // namespace

TEST_CASE("scatter_reduce of every kind and type gives the reference results", "[scatter]") {
  ffr::fresh();
  check_all_ops<int32_t>();
  check_all_ops<uint32_t>();
  check_all_ops<int64_t>();
  check_all_ops<uint64_t>();
  check_all_ops<float>();
  check_all_ops<double>();
}

TEST_CASE("scatter_reduce: float Min/Max ignore NaN values, and -0 is below +0", "[scatter]") {
  ffr::fresh();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  ff::Float t = ff::Float::from({nan, 0.f, -0.f, 5.f, nan});
  ff::Float u = t;
  ff::UInt32 idx = ff::UInt32::from({0, 0, 1, 2, 3, 3, 4});
  ff::Float v = ff::Float::from({nan, 2.f, -0.f, 0.f, nan, 7.f, nan});
  ff::scatter_reduce(ReduceOp::Min, t, v, idx);
  ff::scatter_reduce(ReduceOp::Max, u, v, idx);
  std::vector<float> tv = t.to_vector(), uv = u.to_vector();
  // Min: NaN element takes 2; 0 meets -0 (below); -0 meets +0 (stays); 5 vs NaN, 7: 5; NaN
  // meets only NaN: stays NaN.
  CHECK(tv[0] == 2.f);
  CHECK((tv[1] == 0.f && std::signbit(tv[1])));
  CHECK((tv[2] == 0.f && std::signbit(tv[2])));
  CHECK(tv[3] == 5.f);
  CHECK(std::isnan(tv[4]));
  CHECK(uv[0] == 2.f);
  CHECK((uv[1] == 0.f && !std::signbit(uv[1])));
  CHECK((uv[2] == 0.f && !std::signbit(uv[2])));
  CHECK(uv[3] == 7.f);
  CHECK(std::isnan(uv[4]));
}

TEST_CASE("scatter_reduce: integer Mul wraps, scalars as values, repeated scatters fuse",
          "[scatter]") {
  ffr::fresh();
  ff::UInt32 t = ff::UInt32::from({1u, 1u});
  ff::UInt32 idx = ff::zeros<ff::UInt32>(33);
  ff::scatter_reduce(ReduceOp::Mul, t, 2u, idx);  // 2^33 wraps to 0 in 32 bits
  CHECK(t.to_vector() == std::vector<uint32_t>{0u, 1u});
  ff::Int32 m = ff::Int32::from({0, 0, 0});
  const uint64_t kernels = ff::stats().traced_kernels;
  ff::scatter_reduce(ReduceOp::Max, m, ff::Int32::from({-4, 9, 3}), ff::UInt32::from({0u, 0u, 2u}));
  ff::scatter_reduce(ReduceOp::Max, m, 5, ff::UInt32::from({1u, 1u, 1u}));
  ff::eval(m);
  CHECK(ff::stats().traced_kernels == kernels + 1);  // one kind into one target: one kernel
  CHECK(m.to_vector() == std::vector<int32_t>{9, 5, 3});
  // Two kinds into one target run in program order.
  ff::scatter_reduce(ReduceOp::Min, m, 4, ff::UInt32::from({0u}));
  ff::scatter_reduce(ReduceOp::Add, m, 10, ff::UInt32::from({0u}));
  CHECK(m.to_vector() == std::vector<int32_t>{14, 5, 3});  // min(9, 4) + 10
}

TEST_CASE("scatter_inc hands each lane a distinct slot per counter element", "[scatter]") {
  ffr::fresh();
  for (size_t n : kSizes)
    for (size_t bins : kBins) {
      INFO(n << " lanes into " << bins << " counters");
      Lanes l = make_lanes(n, bins, uint32_t(n * 3 + bins));
      std::vector<uint32_t> start(bins);
      for (size_t b = 0; b < bins; ++b)
        start[b] = uint32_t(b % 4 * 10);
      std::vector<uint32_t> want_counter = start;
      std::vector<uint32_t> want = serial_increments(l, want_counter);
      ff::UInt32 counter = ff::UInt32::from(start);
      ff::UInt32 slots =
          ff::scatter_inc(counter, ff::UInt32::from(l.idx), ff::UInt32::from(l.mask) != 0u);
      REQUIRE(slots.size() == n);
      std::vector<uint32_t> got = slots.to_vector();
      REQUIRE(counter.to_vector() == want_counter);
      // Per counter element, its lanes' slots are a permutation of start .. start + k - 1
      // (on the CPU exactly the lane order); masked and out-of-range lanes get 0.
      std::map<uint32_t, std::vector<uint32_t>> per;
      for (size_t i = 0; i < n; ++i) {
        if (l.mask[i] && l.idx[i] < bins)
          per[l.idx[i]].push_back(got[i]);
        else
          REQUIRE(got[i] == 0u);
      }
      for (auto& [b, s] : per) {
        std::sort(s.begin(), s.end());
        for (size_t k = 0; k < s.size(); ++k)
          REQUIRE(s[k] == start[b] + k);
      }
      CHECK(got == want);
    }
}

TEST_CASE("scatter_inc fuses with the scatter that uses its slots: stream compaction",
          "[scatter]") {
  ffr::fresh();
  for (size_t n : {0, 1, 2, 13, 4099, 100003}) {
    INFO("n = " << n);
    std::vector<float> xs(n);
    for (size_t i = 0; i < n; ++i)
      xs[i] = float(int(i % 9) - 4);
    ff::Float x = ff::Float::from(xs);
    ff::Bool keep = x > 0.f;
    ff::UInt32 count = ff::zeros<ff::UInt32>(1);
    ff::Float queue = ff::zeros<ff::Float>(n);
    ff::eval(x, keep, count, queue);
    const uint64_t kernels = ff::stats().traced_kernels;
    ff::UInt32 slot = ff::scatter_inc(count, ff::UInt32(0u), keep);
    ff::scatter(queue, x, slot, keep);
    ff::eval(queue);
    // One kernel does both; a one-lane increment (n = 1) is evaluated before its use (which
    // might broadcast it), so there it takes two.
    CHECK(ff::stats().traced_kernels == kernels + (n > 0) + (n == 1));
    std::vector<float> want;
    for (float v : xs)
      if (v > 0.f)
        want.push_back(v);
    std::vector<float> got = queue.to_vector();
    REQUIRE(count.to_vector()[0] == want.size());
    got.resize(want.size());
    CHECK(got == want);  // the CPU hands out slots in lane order: order kept
  }
}

TEST_CASE("scatter_inc: one lane's increment in a wider expression runs once", "[scatter]") {
  ffr::fresh();
  ff::UInt32 counter = ff::UInt32::from({7u});
  ff::UInt32 slot = ff::scatter_inc(counter, ff::UInt32(0u));  // one lane
  ff::UInt32 r = slot + ff::arange<ff::UInt32>(5);
  CHECK(r.to_vector() == std::vector<uint32_t>{7, 8, 9, 10, 11});
  CHECK(counter.to_vector() == std::vector<uint32_t>{8u});
  // Its values read twice after one evaluation: the increment ran once.
  CHECK(slot.to_vector() == std::vector<uint32_t>{7u});
  CHECK((slot * 2u).to_vector() == std::vector<uint32_t>{14u});
  CHECK(counter.to_vector() == std::vector<uint32_t>{8u});
  // Values nobody keeps: the counter still counts.
  (void)ff::scatter_inc(counter, ff::zeros<ff::UInt32>(3));
  CHECK(counter.to_vector() == std::vector<uint32_t>{11u});
  // Two increments of one counter before an eval hand out slots in program order, each call a
  // range of its own (wider than a vector: in one kernel they would interleave by vector).
  ff::UInt32 a = ff::scatter_inc(counter, ff::zeros<ff::UInt32>(40));
  ff::UInt32 b = ff::scatter_inc(counter, ff::zeros<ff::UInt32>(40));
  ff::eval(a, b);
  std::vector<uint32_t> want_a(40), want_b(40);
  for (uint32_t k = 0; k < 40; ++k) {
    want_a[k] = 11 + k;
    want_b[k] = 51 + k;
  }
  CHECK(a.to_vector() == want_a);
  CHECK(b.to_vector() == want_b);
  CHECK(counter.to_vector() == std::vector<uint32_t>{91u});
  // An increment at the slots of a pending one: after it, in order.
  ff::UInt32 c2 = ff::zeros<ff::UInt32>(2);
  ff::UInt32 first = ff::scatter_inc(c2, ff::UInt32::from({1u, 1u, 0u}));  // 0, 1, 0
  ff::UInt32 second = ff::scatter_inc(c2, first);  // at 0, 1, 0 with c2 = {1, 2}
  CHECK(first.to_vector() == std::vector<uint32_t>{0u, 1u, 0u});
  CHECK(second.to_vector() == std::vector<uint32_t>{1u, 2u, 2u});
  CHECK(c2.to_vector() == std::vector<uint32_t>{3u, 3u});
  // Copy-on-write: a handle taken before keeps the old count.
  ff::UInt32 old = counter;
  ff::UInt32 c = ff::scatter_inc(counter, ff::zeros<ff::UInt32>(1));
  CHECK(c.to_vector() == std::vector<uint32_t>{91u});
  CHECK(old.to_vector() == std::vector<uint32_t>{91u});
  CHECK(counter.to_vector() == std::vector<uint32_t>{92u});
}

TEST_CASE("scatter_reduce and scatter_inc report out-of-range indices in debug mode",
          "[scatter][errors][debug]") {
  ffr::fresh();
  bool old = ff::flag(ff::Flag::Debug);
  ff::set_flag(ff::Flag::Debug, true);
  ff::Int32 t = ff::zeros<ff::Int32>(3);
  REQUIRE_THROWS_WITH(
      [&] {
        ff::scatter_reduce(ReduceOp::Max, t, 1, ff::UInt32::from({0u, 44444u}));
        ff::eval(t);
      }(),
      Catch::Contains("scatter_max") && Catch::Contains("44444") && Catch::Contains("size 3"));
  ff::UInt32 c = ff::zeros<ff::UInt32>(2);
  REQUIRE_THROWS_WITH(
      [&] {
        ff::UInt32 s = ff::scatter_inc(c, ff::UInt32::from({1u, 55555u}));
        ff::eval(s);
      }(),
      Catch::Contains("scatter_inc") && Catch::Contains("55555"));
  // The call after a failed one works; the in-range lanes of the failed ones ran.
  CHECK(t.to_vector() == std::vector<int32_t>{1, 0, 0});
  CHECK(c.to_vector() == std::vector<uint32_t>{0u, 1u});
  ff::set_flag(ff::Flag::Debug, old);
}

TEST_CASE("scatter_reduce and scatter_inc in a frozen function replay at new sizes",
          "[scatter][freeze]") {
  ffr::fresh();
  // A histogram's maxima per bin, and the indices of the positive values compacted.
  auto fn = [](const ff::Float& x, const ff::UInt32& bin) {
    ff::Float best = ff::full<ff::Float>(-1e30f, 4);
    ff::scatter_reduce(ReduceOp::Max, best, x, bin);
    ff::UInt32 counter = ff::zeros<ff::UInt32>(1);
    ff::Bool keep = x > 0.f;
    ff::UInt32 slot = ff::scatter_inc(counter, ff::UInt32(0u), keep);
    ff::UInt32 picked = ff::zeros<ff::UInt32>(ff::width(x));
    ff::scatter(picked, ff::arange<ff::UInt32>(ff::width(x)), slot, keep);
    return std::make_tuple(best, counter, picked);
  };
  auto f = ff::freeze(fn);
  for (size_t n : {9, 0, 1, 2, 3, 61, 1000}) {
    INFO("n = " << n);
    std::vector<float> xs(n);
    std::vector<uint32_t> bins(n);
    for (size_t i = 0; i < n; ++i) {
      xs[i] = float(int(i * 7 % 11) - 5);
      bins[i] = uint32_t(i % 5);  // 4 is out of range for the 4 bins
    }
    auto [best, counter, picked] = f(ff::Float::from(xs), ff::UInt32::from(bins));
    std::vector<float> want_best(4, -1e30f);
    std::vector<uint32_t> want_picked(n, 0);
    uint32_t k = 0;
    for (size_t i = 0; i < n; ++i) {
      if (bins[i] < 4)
        want_best[bins[i]] = std::max(want_best[bins[i]], xs[i]);
      if (xs[i] > 0.f)
        want_picked[k++] = uint32_t(i);
    }
    CHECK(best.to_vector() == want_best);
    CHECK(counter.to_vector() == std::vector<uint32_t>{k});
    CHECK(picked.to_vector() == want_picked);
  }
  CHECK(f.n_recordings() == 1);
}

TEST_CASE("scatter_reduce into an array from another thread", "[scatter][threads]") {
  ffr::fresh();
  ff::Int64 target;
  std::thread([&] { target = ff::Int64::from({5, 5, 5}); }).join();
  ff::Int64 seen_before = target;
  ff::scatter_reduce(ReduceOp::Min, target, ff::Int64::from({7, 2, -3}),
                     ff::UInt32::from({0u, 1u, 1u}));
  CHECK(target.to_vector() == std::vector<int64_t>{5, -3, 5});
  CHECK(seen_before.to_vector() == std::vector<int64_t>{5, 5, 5});
  ff::UInt32 counter;
  std::thread([&] { counter = ff::UInt32::from({0u, 0u}); }).join();
  ff::UInt32 s = ff::scatter_inc(counter, ff::UInt32::from({1u, 1u}));
  CHECK(s.to_vector() == std::vector<uint32_t>{0u, 1u});
  CHECK(counter.to_vector() == std::vector<uint32_t>{0u, 2u});
}

TEST_CASE("verify mode: float scatter_reduce Mul is compared with tolerance, the rest exactly",
          "[scatter][freeze][verify]") {
  ffr::fresh();
  ff::FreezeOptions o;
  o.verify = 1;
  o.name = "scatter kinds";
  // Float products into 3 bins (privatised at large sizes: another rounding order than the
  // traced run may take), integer maxima, and slots from scatter_inc (the CPU hands them out in
  // lane order in the replay as in the traced run, so they compare exactly).
  auto f = ff::freeze(
      [](const ff::Float& x) {
        ff::UInt32 bin = ff::arange<ff::UInt32>(ff::width(x)) % 3u;
        ff::Float prod = ff::full<ff::Float>(1.f, 3);
        ff::scatter_reduce(ReduceOp::Mul, prod, x, bin);
        ff::Int32 top = ff::zeros<ff::Int32>(3);
        ff::scatter_reduce(ReduceOp::Max, top, ff::cast<ff::Int32>(x * 1000.f), bin);
        ff::UInt32 counter = ff::zeros<ff::UInt32>(3);
        ff::UInt32 slot = ff::scatter_inc(counter, bin, x > 1.f);
        return std::make_tuple(prod, top, counter, slot);
      },
      o);
  for (size_t n : {1000, 7, 0, 100003, 2}) {
    INFO("n = " << n);
    std::vector<float> xs(n);
    std::mt19937 g{uint32_t(n)};
    std::uniform_real_distribution<float> d(0.9999f, 1.0001f);
    for (float& v : xs)
      v = d(g);
    auto [prod, top, counter, slot] = f(ff::Float::from(xs));
    std::vector<uint32_t> want_counter(3, 0);
    std::vector<uint32_t> want_slot(n, 0);
    for (size_t i = 0; i < n; ++i)
      if (xs[i] > 1.f)
        want_slot[i] = want_counter[i % 3]++;
    CHECK(counter.to_vector() == want_counter);
    CHECK(slot.to_vector() == want_slot);
    std::vector<double> want_prod(3, 1.0);
    std::vector<int32_t> want_top(3, 0);
    for (size_t i = 0; i < n; ++i) {
      want_prod[i % 3] *= xs[i];
      want_top[i % 3] = std::max(want_top[i % 3], int32_t(xs[i] * 1000.f));
    }
    CHECK(top.to_vector() == want_top);
    std::vector<float> got_prod = prod.to_vector();
    REQUIRE(got_prod.size() == 3);
    // A float product of k factors rounds k times: up to k/2 ulp apart from the exact one.
    for (size_t b = 0; b < 3; ++b)
      CHECK(std::fabs(got_prod[b] - want_prod[b]) <=
            (6e-8 * double(n) + 1e-6) * std::fabs(want_prod[b]));
  }
  CHECK(f.n_replays() == 4);
}
