// ff::dist's collectives, run under mpirun with 1, 2 and 3 ranks (one start-up per rank count:
// every case runs in the same processes). Every rank runs every case in the same order, as the
// collectives need; values are checked with CHECK (not REQUIRE) so that a wrong value on one
// rank does not leave the others waiting in the next collective. Each mpirun is bounded by a
// CTest timeout, so a hang fails the test instead of blocking CI.
#define CATCH_CONFIG_RUNNER
#include <freezeframe/freezeframe.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "dist/mpi_world.h"
#include "examples/heat_dist.h"
#include "frontend/recording_state.h"
#include "support/collective_recording.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/lsan_interface.h>
#endif

namespace {

const std::vector<size_t> kSizes = {0, 1, 2, 3, 7, 13, 100'000};

/// Rank r's element i: distinct per rank and index, small enough that Mul stays exact for
/// floats (values near 1), with negatives for signed types.
template <class T>
T value(int r, size_t i) {
  if constexpr (std::is_same_v<T, bool>)
    return ((i + static_cast<size_t>(r)) % 3) != 0;
  else if constexpr (std::is_floating_point_v<T>)
    return static_cast<T>(1.0 +
                          0.125 * static_cast<double>((i * 7 + static_cast<size_t>(r) * 3) % 5));
  else if constexpr (std::is_signed_v<T>)
    return static_cast<T>(
        static_cast<int64_t>((i * 2654435761u + static_cast<size_t>(r) * 977) % 1000) - 500);
  else
    return static_cast<T>((i * 2654435761u + static_cast<size_t>(r) * 977) % 100'000 + 7);
}

template <class T>
std::vector<T> values(int r, size_t n) {
  std::vector<T> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = value<T>(r, i);
  return v;
}

template <class T>
T combine(ff::ReduceOp op, T a, T b) {
  if constexpr (std::is_same_v<T, bool>) {
    switch (op) {
      case ff::ReduceOp::Min:
      case ff::ReduceOp::And:
        return a && b;
      default:
        return a || b;
    }
  } else {
    using W = typename std::conditional_t<std::is_floating_point_v<T>, std::type_identity<T>,
                                          std::make_unsigned<T>>::type;
    switch (op) {
      case ff::ReduceOp::Add:
        return static_cast<T>(static_cast<W>(a) + static_cast<W>(b));
      case ff::ReduceOp::Mul:
        return static_cast<T>(static_cast<W>(a) * static_cast<W>(b));
      case ff::ReduceOp::Min:
        return b < a ? b : a;
      case ff::ReduceOp::Max:
        return b > a ? b : a;
      case ff::ReduceOp::And:
        if constexpr (std::is_integral_v<T>)
          return static_cast<T>(a & b);
        break;
      case ff::ReduceOp::Or:
        if constexpr (std::is_integral_v<T>)
          return static_cast<T>(a | b);
        break;
    }
    return a;
  }
}

template <class T>
std::vector<ff::ReduceOp> ops_for() {
  using ff::ReduceOp;
  if constexpr (std::is_same_v<T, bool>)
    return {ReduceOp::Min, ReduceOp::Max, ReduceOp::And, ReduceOp::Or};
  else if constexpr (std::is_floating_point_v<T>)
    return {ReduceOp::Add, ReduceOp::Mul, ReduceOp::Min, ReduceOp::Max};
  else
    return {ReduceOp::Add, ReduceOp::Mul, ReduceOp::Min,
            ReduceOp::Max, ReduceOp::And, ReduceOp::Or};
}

}  // namespace

TEST_CASE("dist: rank and size") {
  int n = ff::dist::size();
  int r = ff::dist::rank();
  CHECK(n >= 1);
  CHECK(r >= 0);
  CHECK(r < n);
  CHECK(ff::dist::initialized());
  ff::dist::init();  // a second init is a no-op
  CHECK(ff::dist::size() == n);
  // Every rank agrees on the rank count and holds a distinct rank.
  ff::Int32 ranks = ff::dist::all_gather(ff::Int32::from({r}));
  std::vector<int32_t> got = ranks.to_vector();
  REQUIRE(got.size() == static_cast<size_t>(n));
  for (int k = 0; k < n; ++k)
    CHECK(got[static_cast<size_t>(k)] == k);
}

TEMPLATE_TEST_CASE("dist: all_reduce of every op, type and size", "", bool, int32_t, uint32_t,
                   int64_t, uint64_t, float, double) {
  using T = TestType;
  int n = ff::dist::size(), r = ff::dist::rank();
  for (ff::ReduceOp op : ops_for<T>())
    for (size_t size : kSizes) {
      INFO("op " << ff::to_string(op) << ", size " << size);
      ff::Array<T> x = ff::Array<T>::from(values<T>(r, size));
      std::vector<T> got = ff::dist::all_reduce(x, op).to_vector();
      REQUIRE(got.size() == size);
      size_t wrong = 0;
      for (size_t i = 0; i < size; ++i) {
        T want = value<T>(0, i);
        for (int k = 1; k < n; ++k)
          want = combine<T>(op, want, value<T>(k, i));
        wrong += got[i] != want;
      }
      CHECK(wrong == 0);
      CHECK(x.to_vector() == values<T>(r, size));  // the input is unchanged
    }
}

TEST_CASE("dist: all_reduce of a lazy expression, its result used lazily") {
  int n = ff::dist::size(), r = ff::dist::rank();
  for (size_t size : kSizes) {
    ff::Float x = ff::arange<ff::Float>(size) * 2.f + static_cast<float>(r);
    ff::Float y = ff::dist::all_reduce(x, ff::ReduceOp::Add) + 1.f;
    std::vector<float> got = y.to_vector();
    REQUIRE(got.size() == size);
    size_t wrong = 0;
    for (size_t i = 0; i < size; ++i) {
      float want = 1.f;
      float sum = 0.f;
      for (int k = 0; k < n; ++k)
        sum += static_cast<float>(i) * 2.f + static_cast<float>(k);
      wrong += got[i] != want + sum;
    }
    CHECK(wrong == 0);
  }
}

TEST_CASE("dist: all_reduce Min and Max ignore NaN where another value exists") {
  int r = ff::dist::rank();
  float nan = std::numeric_limits<float>::quiet_NaN();
  ff::Float x = ff::Float::from({r == 0 ? nan : 1.f + r, nan, static_cast<float>(-r)});
  std::vector<float> mn = ff::dist::all_reduce(x, ff::ReduceOp::Min).to_vector();
  std::vector<float> mx = ff::dist::all_reduce(x, ff::ReduceOp::Max).to_vector();
  int n = ff::dist::size();
  if (n == 1) {
    CHECK(std::isnan(mn[0]));
  } else {
    CHECK(mn[0] == 2.f);
    CHECK(mx[0] == static_cast<float>(n));
  }
  CHECK(std::isnan(mn[1]));
  CHECK(std::isnan(mx[1]));
  CHECK(mn[2] == static_cast<float>(-(n - 1)));
  CHECK(mx[2] == 0.f);
}

TEMPLATE_TEST_CASE("dist: all_gather with a different size on every rank", "", bool, int32_t,
                   uint32_t, int64_t, uint64_t, float, double) {
  using T = TestType;
  int n = ff::dist::size(), r = ff::dist::rank();
  for (size_t base : kSizes) {
    // Rank r sends base + r * 3 elements (rank 0 of base 0: nothing).
    size_t mine = base + static_cast<size_t>(r) * 3;
    std::vector<T> got = ff::dist::all_gather(ff::Array<T>::from(values<T>(r, mine))).to_vector();
    std::vector<T> want;
    for (int k = 0; k < n; ++k)
      for (const T& v : values<T>(k, base + static_cast<size_t>(k) * 3))
        want.push_back(v);
    INFO("base size " << base);
    CHECK(got == want);
  }
}

TEMPLATE_TEST_CASE("dist: broadcast from every root", "", bool, int32_t, uint64_t, float, double) {
  using T = TestType;
  int n = ff::dist::size(), r = ff::dist::rank();
  for (int root = 0; root < n; ++root)
    for (size_t size : kSizes) {
      // Only the root's size counts: the others pass something else.
      size_t mine = r == root ? size : size + 5;
      std::vector<T> got =
          ff::dist::broadcast(ff::Array<T>::from(values<T>(r, mine)), root).to_vector();
      INFO("root " << root << ", size " << size);
      CHECK(got == values<T>(root, size));
    }
}

TEMPLATE_TEST_CASE("dist: sendrecv around a ring and along a line", "", int32_t, float, double) {
  using T = TestType;
  int n = ff::dist::size(), r = ff::dist::rank();
  for (size_t base : kSizes) {
    size_t mine = base + static_cast<size_t>(r);
    ff::Array<T> x = ff::Array<T>::from(values<T>(r, mine));
    // Ring: send to the next rank, receive from the previous one.
    int next = (r + 1) % n, prev = (r + n - 1) % n;
    std::vector<T> got = ff::dist::sendrecv(x, next, prev).to_vector();
    INFO("base size " << base);
    CHECK(got == values<T>(prev, base + static_cast<size_t>(prev)));
    // Line: the last rank sends nothing, the first receives nothing (an empty array).
    int dest = r + 1 < n ? r + 1 : ff::dist::kNone;
    int source = r > 0 ? r - 1 : ff::dist::kNone;
    std::vector<T> line = ff::dist::sendrecv(x, dest, source).to_vector();
    if (r == 0)
      CHECK(line.empty());
    else
      CHECK(line == values<T>(r - 1, base + static_cast<size_t>(r - 1)));
  }
}

TEST_CASE("dist: bad arguments raise ff::Error on every rank, and the next call works") {
  int n = ff::dist::size();
  ff::Bool b = ff::Bool::from({true, false});
  CHECK_THROWS_WITH(ff::dist::all_reduce(b, ff::ReduceOp::Add),
                    Catch::Contains("all_reduce") && Catch::Contains("bool"));
  ff::Float f = ff::Float::from({1.f, 2.f});
  CHECK_THROWS_AS(ff::dist::all_reduce(f, ff::ReduceOp::And), ff::Error);
  CHECK_THROWS_WITH(ff::dist::broadcast(f, n), Catch::Contains("root rank " + std::to_string(n)));
  CHECK_THROWS_WITH(ff::dist::broadcast(f, -2), Catch::Contains("root rank -2"));
  CHECK_THROWS_WITH(ff::dist::sendrecv(f, n + 1, 0), Catch::Contains("dest rank"));
  CHECK_THROWS_WITH(ff::dist::sendrecv(f, 0, n), Catch::Contains("source rank"));
  // The next collective after the failed ones still lines up on every rank.
  std::vector<float> s = ff::dist::all_reduce(f, ff::ReduceOp::Add).to_vector();
  CHECK(s == std::vector<float>{1.f * static_cast<float>(n), 2.f * static_cast<float>(n)});
}

TEST_CASE("dist: under FF_DEBUG, ranks making different calls raise on every rank") {
  int n = ff::dist::size(), r = ff::dist::rank();
  ff::set_flag(ff::Flag::Debug, true);
  if (n > 1) {
    // An all_reduce of different sizes.
    ff::Float x = ff::arange<ff::Float>(static_cast<size_t>(r) + 1);
    CHECK_THROWS_WITH(ff::dist::all_reduce(x, ff::ReduceOp::Add),
                      Catch::Contains("the ranks make different calls") &&
                          Catch::Contains("rank 0: all_reduce (add) of 1 float32") &&
                          Catch::Contains("of 2 float32") && Catch::Contains("FF_DEBUG"));
    // Different collectives: rank 0 an all_reduce, the others a broadcast.
    ff::Float y = ff::Float::from({1.f, 2.f});
    auto call = [&] {
      return r == 0 ? ff::dist::all_reduce(y, ff::ReduceOp::Max) : ff::dist::broadcast(y, 0);
    };
    CHECK_THROWS_WITH(call(), Catch::Contains("rank 0: all_reduce (max) of 2 float32") &&
                                  Catch::Contains("broadcast float32 from root 0"));
    // Different element types and reductions.
    CHECK_THROWS_WITH(r == 0 ? ff::dist::all_gather(ff::Float::from({1.f})).to_vector().size()
                             : ff::dist::all_gather(ff::Int32::from({1})).to_vector().size(),
                      Catch::Contains("all_gather float32") && Catch::Contains("all_gather int32"));
    CHECK_THROWS_WITH(ff::dist::all_reduce(y, r == 0 ? ff::ReduceOp::Min : ff::ReduceOp::Max),
                      Catch::Contains("(min)") && Catch::Contains("(max)"));
  }
  // Matching calls pass the check, traced and replayed.
  ff::Float same = ff::arange<ff::Float>(4);
  CHECK(ff::dist::all_reduce(same, ff::ReduceOp::Max).to_vector() ==
        std::vector<float>{0.f, 1.f, 2.f, 3.f});
  auto f =
      ff::freeze([](const ff::Float& v) { return ff::dist::all_reduce(v, ff::ReduceOp::Max); });
  for (int k = 0; k < 3; ++k)
    CHECK(f(same).to_vector() == std::vector<float>{0.f, 1.f, 2.f, 3.f});
  CHECK(f.n_replays() == 2);
  // And a replay of a mismatched call raises on every rank too.
  if (n > 1)
    CHECK_THROWS_WITH(f(ff::arange<ff::Float>(4 + static_cast<size_t>(r))),
                      Catch::Contains("the ranks make different calls"));
  ff::set_flag(ff::Flag::Debug, false);
}

namespace {

/// What every rank expects from all_reduce(Add) of rank k's arange(n) * (k + 1).
std::vector<float> sum_of_scaled_aranges(size_t n) {
  int ranks = ff::dist::size();
  std::vector<float> want(n, 0.f);
  for (size_t i = 0; i < n; ++i)
    for (int k = 0; k < ranks; ++k)
      want[i] += static_cast<float>(i) * static_cast<float>(k + 1);
  return want;
}

ff::Float scaled_arange(size_t n) {
  return ff::arange<ff::Float>(n) * static_cast<float>(ff::dist::rank() + 1);
}

}  // namespace

TEST_CASE("dist: a recorded all_reduce replays at every size") {
  ff::Float x = scaled_arange(5);
  ff::Recording rec = ff::record({x}, [&] {
    return std::vector<ff::AnyArray>{ff::dist::all_reduce(x * 2.f, ff::ReduceOp::Add) + 1.f};
  });
  CHECK(rec.to_string().find("collective") != std::string::npos);
  for (size_t size : kSizes) {
    std::vector<ff::AnyArray> out = rec.replay({scaled_arange(size)});
    std::vector<float> got = out[0].as<ff::Float>().to_vector();
    std::vector<float> want = sum_of_scaled_aranges(size);
    for (float& w : want)
      w = w * 2.f + 1.f;
    INFO("size " << size);
    CHECK(got == want);
  }
}

TEST_CASE("dist: frozen functions replay every collective, with sizes resolved at replay") {
  int n = ff::dist::size(), r = ff::dist::rank();
  int next = (r + 1) % n, prev = (r + n - 1) % n;
  // One frozen step with all four collectives; rank r's array has base + r elements, so the
  // gathered and received sizes differ from this rank's own and change with `base`.
  auto step = ff::freeze([&](const ff::Float& x) {
    ff::Float total = ff::dist::all_reduce(ff::sum(x * 0.f + 1.f), ff::ReduceOp::Add);
    ff::Float all = ff::dist::all_gather(x + 1.f);
    ff::Float root = ff::dist::broadcast(x, n - 1);
    ff::Float halo = ff::dist::sendrecv(x * 2.f, next, prev);
    return std::make_tuple(total, all, root, halo);
  });
  for (int round = 0; round < 2; ++round)
    for (size_t base : kSizes) {
      if (base > 1000)
        continue;
      size_t mine = base + static_cast<size_t>(r);
      std::vector<float> xs = values<float>(r, mine);
      auto [total, all, root, halo] = step(ff::Float::from(xs));
      INFO("round " << round << ", base size " << base);
      // The sizes of every rank's x: base + k on rank k.
      CHECK(total.to_vector() ==
            std::vector<float>{static_cast<float>(base) * n + static_cast<float>(n * (n - 1) / 2)});
      std::vector<float> want_all;
      for (int k = 0; k < n; ++k)
        for (float v : values<float>(k, base + static_cast<size_t>(k)))
          want_all.push_back(v + 1.f);
      CHECK(all.to_vector() == want_all);
      CHECK(root.to_vector() == values<float>(n - 1, base + static_cast<size_t>(n - 1)));
      std::vector<float> want_halo = values<float>(prev, base + static_cast<size_t>(prev));
      for (float& v : want_halo)
        v *= 2.f;
      CHECK(halo.to_vector() == want_halo);
    }
  // Recorded for the first sizes, replayed for the rest (all_reduce's size guards aside: the
  // sum over an empty x may take another path).
  CHECK(step.n_replays() > 0);
  CHECK(step.n_recordings() <= 3);
}

TEMPLATE_TEST_CASE(
    "dist: frozen collectives of every element type, recorded once, replayed at "
    "every size",
    "", bool, int32_t, uint32_t, int64_t, uint64_t, float, double) {
  using T = TestType;
  using A = ff::Array<T>;
  int n = ff::dist::size(), r = ff::dist::rank();
  int next = (r + 1) % n, prev = (r + n - 1) % n;
  auto f = ff::freeze([&](const A& x, const A& mine) {
    return std::make_tuple(ff::dist::all_reduce(x, ff::ReduceOp::Max), ff::dist::all_gather(mine),
                           ff::dist::broadcast(mine, 0), ff::dist::sendrecv(mine, next, prev));
  });
  for (size_t size : kSizes) {
    size_t own = size + static_cast<size_t>(r);  // differs per rank
    auto [mx, all, root, halo] = f(A::from(values<T>(r, size)), A::from(values<T>(r, own)));
    INFO("size " << size);
    std::vector<T> want_max = values<T>(0, size);
    for (int k = 1; k < n; ++k) {
      std::vector<T> v = values<T>(k, size);
      for (size_t i = 0; i < size; ++i)
        want_max[i] = v[i] > want_max[i] ? v[i] : want_max[i];
    }
    std::vector<T> want_all;
    for (int k = 0; k < n; ++k)
      for (const T& v : values<T>(k, size + static_cast<size_t>(k)))
        want_all.push_back(v);
    CHECK(mx.to_vector() == want_max);
    CHECK(all.to_vector() == want_all);
    CHECK(root.to_vector() == values<T>(0, size));
    CHECK(halo.to_vector() == values<T>(prev, size + static_cast<size_t>(prev)));
  }
  // One recording serves every size but the first.
  CHECK(f.n_recordings() == 1);
  CHECK(f.n_replays() == kSizes.size() - 1);
}

TEST_CASE("dist: a recording with collectives saved to a file replays after loading") {
  int n = ff::dist::size(), r = ff::dist::rank();
  ff::Float x = scaled_arange(3);
  ff::Recording rec = ff::record({x}, [&] {
    return std::vector<ff::AnyArray>{ff::dist::all_reduce(x, ff::ReduceOp::Max),
                                     ff::dist::all_gather(x)};
  });
  std::string path = "dist_test_rank" + std::to_string(r) + ".ffr";
  rec.save(path);
  ff::Recording loaded = ff::Recording::load(path);
  std::remove(path.c_str());
  std::vector<ff::AnyArray> out = loaded.replay({scaled_arange(4)});
  std::vector<float> want_max(4), want_all;
  for (size_t i = 0; i < 4; ++i)
    want_max[i] = static_cast<float>(i) * static_cast<float>(n);
  for (int k = 0; k < n; ++k)
    for (size_t i = 0; i < 4; ++i)
      want_all.push_back(static_cast<float>(i) * static_cast<float>(k + 1));
  CHECK(out[0].as<ff::Float>().to_vector() == want_max);
  CHECK(out[1].as<ff::Float>().to_vector() == want_all);
}

TEST_CASE("dist: a recorded sendrecv refuses to replay on another rank, before any collective") {
  int n = ff::dist::size(), r = ff::dist::rank();
  if (n < 2)
    return;
  ff::Float x = scaled_arange(3);
  ff::Recording rec = ff::record({x}, [&] {
    return std::vector<ff::AnyArray>{ff::dist::sendrecv(x, (r + 1) % n, (r + n - 1) % n)};
  });
  // Every rank hands its recording to the next one through a file: each refuses it, having
  // issued nothing, so the collective after it still lines up.
  rec.save("dist_sendrecv_rank" + std::to_string(r) + ".ffr");
  ff::dist::all_reduce(ff::Float::from({0.f}), ff::ReduceOp::Add).to_vector();  // files written
  std::string other = "dist_sendrecv_rank" + std::to_string((r + n - 1) % n) + ".ffr";
  ff::Recording theirs = ff::Recording::load(other);
  CHECK_THROWS_WITH(theirs.replay({x}),
                    Catch::Contains("recorded on rank " + std::to_string((r + n - 1) % n)) &&
                        Catch::Contains("cannot replay on rank " + std::to_string(r)));
  CHECK_THROWS_AS(theirs.replay({x}), ff::GuardError);
  ff::dist::all_reduce(ff::Float::from({0.f}), ff::ReduceOp::Add).to_vector();  // files read
  std::remove(("dist_sendrecv_rank" + std::to_string(r) + ".ffr").c_str());
  std::vector<float> mine = rec.replay({x})[0].as<ff::Float>().to_vector();
  std::vector<float> want(3);
  for (size_t i = 0; i < 3; ++i)
    want[i] = static_cast<float>(i) * static_cast<float>((r + n - 1) % n + 1);
  CHECK(mine == want);
}

TEST_CASE("dist: share hands the root's recordings to every rank, which replay without tracing") {
  int n = ff::dist::size(), r = ff::dist::rank();
  int root = n - 1;
  auto f = ff::freeze([](const ff::Float& x, int k) { return x * 2.f + static_cast<float>(k); },
                      ff::FreezeOptions{.name = "shared step"});
  // Sharing before anything was recorded: the root cannot save, every rank raises.
  CHECK_THROWS_WITH(ff::dist::share(f, root),
                    Catch::Contains("ff::dist::share") && Catch::Contains("could not save"));
  if (r == root)
    CHECK(f(ff::Float::from({1.f, 2.f}), 3).to_vector() == std::vector<float>{5.f, 7.f});
  ff::dist::share(f, root);
  // Every rank replays the root's recording for this kind of call, at another size.
  CHECK(f(ff::Float::from({1.f, 2.f, 3.f}), 3).to_vector() == std::vector<float>{5.f, 7.f, 9.f});
  CHECK(f.n_replays() == 1);
  // Another key (k is part of it) records for itself.
  CHECK(f(ff::Float::from({1.f}), r).to_vector() ==
        std::vector<float>{2.f + static_cast<float>(r)});
  CHECK_THROWS_WITH(ff::dist::share(f, n), Catch::Contains("root rank " + std::to_string(n)));
}

TEST_CASE("dist: shared recordings with collectives replay on every rank") {
  int n = ff::dist::size(), r = ff::dist::rank();
  auto g = ff::freeze([](const ff::Float& x) {
    return ff::dist::all_gather(ff::dist::all_reduce(x, ff::ReduceOp::Add));
  });
  // Every rank records once (the collectives need all of them), then the root's recordings
  // replace nothing but add the kinds the others lack: here, the same kind, so each keeps its
  // own and replays; the result is the same either way.
  CHECK(g(ff::Float::from({1.f})).to_vector() ==
        std::vector<float>(static_cast<size_t>(n), static_cast<float>(n)));
  ff::dist::share(g, 0);
  std::vector<float> got = g(ff::Float::from({2.f, static_cast<float>(r)})).to_vector();
  std::vector<float> want;
  for (int k = 0; k < n; ++k) {
    want.push_back(2.f * static_cast<float>(n));
    want.push_back(static_cast<float>(n * (n - 1) / 2));
  }
  CHECK(got == want);
  CHECK(g.n_replays() >= 1);
}

TEST_CASE("dist: verify mode skips replays with collectives instead of re-running them alone") {
  int n = ff::dist::size();
  // verify = 1 would re-run every replay traced on this rank alone: its collectives would wait
  // for ranks that do not issue them. It is skipped (a warning), and every call lines up.
  auto f = ff::freeze([](const ff::Float& x) { return ff::dist::all_reduce(x, ff::ReduceOp::Add); },
                      ff::FreezeOptions{.name = "verified", .verify = 1});
  for (size_t size : {1, 2, 3, 7}) {
    std::vector<float> got = f(ff::arange<ff::Float>(size)).to_vector();
    std::vector<float> want(size);
    for (size_t i = 0; i < size; ++i)
      want[i] = static_cast<float>(i) * static_cast<float>(n);
    CHECK(got == want);
  }
  CHECK(f.n_replays() == 3);
}

TEST_CASE("dist: a recording made with another rank count is refused before any collective") {
  int n = ff::dist::size();
  ff::rec::RecordingData d = ff_samples::collective_recording(0, n + 1);
  ff::Recording other(std::make_shared<ff::detail::RecordingState>(
      ff::rec::ValidatedRecording::check(std::move(d))));
  ff::Float x = ff::Float::from({1.f, 2.f});
  CHECK_THROWS_AS(other.replay({x}), ff::GuardError);
  CHECK_THROWS_WITH(other.replay({x}),
                    Catch::Contains("collectives over " + std::to_string(n + 1) + " ranks") &&
                        Catch::Contains("this run has " + std::to_string(n)));
  // Nothing was issued: the next collective lines up on every rank.
  CHECK(ff::dist::all_reduce(x, ff::ReduceOp::Max).to_vector() == std::vector<float>{1.f, 2.f});
}

TEMPLATE_TEST_CASE("dist: sendrecv with peers relative to the rank", "", int32_t, float) {
  using T = TestType;
  int n = ff::dist::size(), r = ff::dist::rank();
  for (size_t base : kSizes) {
    size_t mine = base + static_cast<size_t>(r);
    ff::Array<T> x = ff::Array<T>::from(values<T>(r, mine));
    INFO("base size " << base);
    int prev = (r + n - 1) % n;
    // A ring: cyclic peers wrap around.
    CHECK(ff::dist::sendrecv(x, ff::dist::cyclic(+1), ff::dist::cyclic(-1)).to_vector() ==
          values<T>(prev, base + static_cast<size_t>(prev)));
    // Offsets of several ranks, and further than the ranks go (n + 1 is rank + 1 again).
    int back2 = ((r - 2) % n + n) % n;
    CHECK(ff::dist::sendrecv(x, ff::dist::cyclic(2), ff::dist::cyclic(-2 - n)).to_vector() ==
          values<T>(back2, base + static_cast<size_t>(back2)));
    // A line: relative peers are none past the ends.
    std::vector<T> line =
        ff::dist::sendrecv(x, ff::dist::relative(+1), ff::dist::relative(-1)).to_vector();
    if (r == 0)
      CHECK(line.empty());
    else
      CHECK(line == values<T>(r - 1, base + static_cast<size_t>(r - 1)));
    // Mixed with an absolute kNone: send nothing, receive from the next rank.
    std::vector<T> up =
        ff::dist::sendrecv(x, ff::dist::relative(-1), ff::dist::relative(+1)).to_vector();
    if (r == n - 1)
      CHECK(up.empty());
    else
      CHECK(up == values<T>(r + 1, base + static_cast<size_t>(r + 1)));
  }
  CHECK_THROWS_WITH(
      ff::dist::sendrecv(ff::Float::from({1.f}), ff::dist::relative(1 << 20), ff::dist::kNone),
      Catch::Contains("sendrecv") && Catch::Contains("further than"));
}

TEST_CASE("dist: the rank as an expression: rank_expr, size_expr and from_size") {
  int n = ff::dist::size(), r = ff::dist::rank();
  ff::Size rank = ff::dist::rank_expr(), ranks = ff::dist::size_expr();
  CHECK(rank.has_provenance());
  CHECK(rank == static_cast<uint64_t>(r));
  CHECK(ranks == static_cast<uint64_t>(n));
  CHECK(rank.to_string() == "ff::dist::rank()");
  ff::UInt32 v = ff::from_size<ff::UInt32>(rank * 10 + ranks);
  CHECK(v.to_vector() == std::vector<uint32_t>{static_cast<uint32_t>(r * 10 + n)});
  // It broadcasts like any array of one element.
  CHECK((ff::arange<ff::UInt32>(3) + ff::from_size<ff::UInt32>(rank)).to_vector() ==
        std::vector<uint32_t>{static_cast<uint32_t>(r), static_cast<uint32_t>(r + 1),
                              static_cast<uint32_t>(r + 2)});
  // And sizes: arange(rank + 1) has rank + 1 elements.
  CHECK(ff::arange<ff::Int32>(rank + 1).to_vector().size() == static_cast<size_t>(r + 1));
}

namespace {

/// Every rank's band of a value that depends on the rank only through expressions.
ff::Float rank_band(const ff::Float& x) {
  ff::Size first = ff::width(x) * ff::dist::rank_expr();  // this rank's first global index
  return x + ff::from_size<ff::Float>(first + ff::dist::size_expr());
}

std::vector<float> rank_band_want(size_t size, int r, int n) {
  std::vector<float> want(size);
  for (size_t i = 0; i < size; ++i)
    want[i] = static_cast<float>(i) +
              static_cast<float>(size * static_cast<size_t>(r) + static_cast<size_t>(n));
  return want;
}

}  // namespace

TEST_CASE("dist: a recording that reads the rank as an expression replays right on every rank") {
  int n = ff::dist::size(), r = ff::dist::rank();
  // Recorded on the root alone (no collectives inside), shared, replayed everywhere without
  // tracing, at other sizes: each rank gets its own rank's values.
  auto f = ff::freeze(rank_band, ff::FreezeOptions{.name = "rank band"});
  if (r == 0)
    CHECK(f(ff::arange<ff::Float>(4)).to_vector() == rank_band_want(4, 0, n));
  ff::dist::share(f, 0);
  for (size_t size : {0, 1, 2, 3, 7, 13}) {
    INFO("size " << size);
    CHECK(f(ff::arange<ff::Float>(size)).to_vector() == rank_band_want(size, r, n));
  }
  CHECK(f.n_recordings() == (r == 0 ? 1u : 0u));  // traced on the root only
  CHECK(f.n_replays() == 6);
  // The same through a file, replayed by ff::Recording.
  ff::Float x = ff::arange<ff::Float>(5);
  ff::Recording rec = ff::record({x}, [&] { return std::vector<ff::AnyArray>{rank_band(x)}; });
  std::string path = "dist_rank_expr_rank0.ffr";
  if (r == 0)
    rec.save(path);
  ff::dist::all_reduce(ff::Float::from({0.f}), ff::ReduceOp::Add).to_vector();  // written
  ff::Recording root = ff::Recording::load(path);
  CHECK(root.replay({ff::arange<ff::Float>(3)})[0].as<ff::Float>().to_vector() ==
        rank_band_want(3, r, n));
  ff::dist::all_reduce(ff::Float::from({0.f}), ff::ReduceOp::Add).to_vector();  // read
  if (r == 0)
    std::remove(path.c_str());
}

TEST_CASE("dist: an int read of rank() pins a recording to its rank: other ranks record anew") {
  int n = ff::dist::size(), r = ff::dist::rank();
  // The silent wrong result this prevents: the root's rank baked into a shared recording.
  auto f = ff::freeze(
      [](const ff::Float& x) {
        return ff::dist::rank() == 0 ? x + 100.f : x + static_cast<float>(ff::dist::size());
      },
      ff::FreezeOptions{.name = "rank read as an int"});
  if (r == 0)
    CHECK(f(ff::Float::from({1.f})).to_vector() == std::vector<float>{101.f});
  ff::dist::share(f, 0);
  float add = r == 0 ? 100.f : static_cast<float>(n);
  CHECK(f(ff::Float::from({1.f, 2.f})).to_vector() == std::vector<float>{1.f + add, 2.f + add});
  CHECK(f(ff::Float::from({3.f})).to_vector() == std::vector<float>{3.f + add});
  // The root replays its own; another rank's guard fails (before any op) and it records once,
  // then replays that.
  CHECK(f.n_recordings() == 1);
  CHECK(f.n_replays() == (r == 0 ? 2u : 1u));
}

TEST_CASE("dist: a shared halo step equals the unshared one on every rank, without tracing") {
  int ranks = ff::dist::size(), r = ff::dist::rank();
  uint32_t n = 37;  // rows not divisible by 2 or 3: the bands differ in size
  heat_dist::Local l = heat_dist::local_plate(r, ranks, n);
  auto run = [&](auto& step) {
    ff::Float u = ff::Float::from(l.grid);
    heat_dist::exchange_halos(u, n);
    for (int s = 0; s < 5; ++s)
      u = step(u, n);
    return heat_dist::gather_plate(u, l, n);
  };
  // Unshared: every rank records its own step.
  auto own = ff::freeze(heat_dist::local_step, ff::FreezeOptions{.name = "own halo step"});
  std::vector<float> want = run(own);
  CHECK(own.n_recordings() == 1);
  // Shared: the root's recording, saved as a later run would load it, on every rank.
  std::string path = "dist_halo_step_rank0.ffr";
  if (r == 0)
    own.save(path);
  ff::dist::all_reduce(ff::Float::from({0.f}), ff::ReduceOp::Add).to_vector();  // written
  auto shared = ff::freeze(heat_dist::local_step, ff::FreezeOptions{.name = "shared halo step"});
  shared.load(path);
  std::vector<float> got = run(shared);
  CHECK(got == want);                 // bit for bit
  CHECK(shared.n_recordings() == 0);  // no rank traced the step
  CHECK(shared.n_replays() == 5);
  ff::dist::all_reduce(ff::Float::from({0.f}), ff::ReduceOp::Add).to_vector();  // read
  if (r == 0)
    std::remove(path.c_str());
}

TEST_CASE("dist: a grad-enabled array is refused with a named error") {
  ff::Float x = ff::Float::from({1.f, 2.f});
  ff::enable_grad(x);
  CHECK_THROWS_WITH(ff::dist::all_reduce(x, ff::ReduceOp::Add),
                    Catch::Contains("all_reduce") && Catch::Contains("ff::detach"));
  CHECK(ff::dist::all_reduce(ff::detach(x), ff::ReduceOp::Add).to_vector().size() == 2);
}

// Tagged [device]: CTest runs these on the CUDA backend too (over the simulated driver, whose
// device memory the host can address), once staged through host memory and once with device
// pointers handed to MPI (FF_DIST_CUDA_AWARE=1).
TEST_CASE("dist: collectives on device buffers, with kernels before and after, traced and frozen",
          "[device]") {
  int n = ff::dist::size(), r = ff::dist::rank();
  int next = (r + 1) % n, prev = (r + n - 1) % n;
  if (const char* aware = std::getenv("FF_DIST_CUDA_AWARE"); aware && std::string(aware) == "1")
    CHECK(ff::dist_impl::takes_device_pointers());
  if (const char* b = std::getenv("FF_BACKEND"); b && std::string(b) == "cuda")
    CHECK(ff::backend_name().find("cuda") != std::string::npos);
  INFO("backend " << ff::backend_name());
  auto body = [&](const ff::Float& x) {
    ff::Float total = ff::dist::all_reduce(x * 2.f, ff::ReduceOp::Add) + 1.f;
    ff::Float all = ff::dist::all_gather(x + 1.f) * 2.f;
    ff::Float root = ff::dist::broadcast(x * 3.f, n - 1) - 1.f;  // the root's out is not its in
    ff::Float halo = ff::dist::sendrecv(x + 0.5f, next, prev) * 4.f;
    return std::make_tuple(total, all, root, halo);
  };
  auto frozen = ff::freeze(body);
  auto mine = [](int k, size_t size) {  // rank k's x
    std::vector<float> v(size);
    for (size_t i = 0; i < size; ++i)
      v[i] = static_cast<float>(i) + static_cast<float>(k) * 0.25f;
    return v;
  };
  for (size_t size : {size_t{3}, size_t{1}, size_t{17}, size_t{0}, size_t{2}}) {
    std::vector<float> want_total(size, 1.f), want_all, want_root, want_halo;
    for (int k = 0; k < n; ++k)
      for (size_t i = 0; i < size; ++i) {
        want_total[i] += mine(k, size)[i] * 2.f;
        want_all.push_back((mine(k, size)[i] + 1.f) * 2.f);
      }
    for (float v : mine(n - 1, size))
      want_root.push_back(v * 3.f - 1.f);
    for (float v : mine(prev, size))
      want_halo.push_back((v + 0.5f) * 4.f);
    for (bool freeze : {false, true}) {
      INFO("size " << size << (freeze ? ", frozen" : ", traced"));
      // A lazy x: its kernel runs on the device before the collectives read it.
      ff::Float x = ff::arange<ff::Float>(size) + static_cast<float>(r) * 0.25f;
      auto [total, all, root, halo] = freeze ? frozen(x) : body(x);
      CHECK(total.to_vector() == want_total);
      CHECK(all.to_vector() == want_all);
      CHECK(root.to_vector() == want_root);
      CHECK(halo.to_vector() == want_halo);
    }
  }
  CHECK(frozen.n_replays() >= 3);
}

TEST_CASE("dist: collectives from a second thread") {
  int n = ff::dist::size();
  std::vector<float> got;
  std::thread t(
      [&] { got = ff::dist::all_reduce(ff::Float::from({2.f}), ff::ReduceOp::Add).to_vector(); });
  t.join();
  CHECK(got == std::vector<float>{2.f * static_cast<float>(n)});
}

int main(int argc, char* argv[]) {
  ::setenv("FF_CACHE_DIR", "off", /*overwrite=*/0);
  ff::set_log_level(ff::LogLevel::Warn);
  ff::dist::init(argc, argv);
  Catch::Session session;
  session.configData().name =
      "rank " + std::to_string(ff::dist::rank()) + " of " + std::to_string(ff::dist::size());
  int rc = session.run(argc, argv);
#if defined(__SANITIZE_ADDRESS__)
  // Leaks are checked here, while MPI's own blocks are still reachable: at exit, after
  // MPI_Finalize has unloaded its components, they would show with no module to suppress.
  __lsan_do_leak_check();
#endif
  ff::dist::finalize();
  return rc;
}
