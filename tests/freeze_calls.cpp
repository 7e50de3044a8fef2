// Frozen functions against the same functions run traced: every kind of argument and result,
// over several calls with different sizes and values (record once, then replay), with the
// counters that say what happened (recordings, replays, compiles, traced kernels).
#include <catch2/catch.hpp>
#include <map>
#include <optional>

#include "support/freeze_check.h"

using namespace fff;
using ff::Float;
using ff::Float64;
using ff::Int32;
using ff::UInt32;
using ff::UInt64;

namespace {

const std::vector<size_t> kSizes = {1000, 0, 1, 2, 3, 13, 777, 1000};

void fresh() {
  ff::shutdown();
  ff::init("llvm");
}

}  // namespace

struct Swarm {
  std::vector<Particle> members;
  Float weights;
  double damping = 0.9;
};
FF_STRUCT(Swarm, members, weights, damping)

struct Stats2 {
  Float mean, spread;
  std::string label;
  int n = 0;
};
FF_STRUCT(Stats2, mean, spread, label, n)

enum class Mode { Add = 1, Mul = 2 };

TEST_CASE("freeze: an element-wise chain replays at every size", "[freeze]") {
  fresh();
  auto fn = [](const Float& x) {
    return ff::sqrt(x * x + 1.f) * 0.5f - ff::select(x > 3.f, x, 0.f);
  };
  auto f = ff::freeze(fn);
  for (size_t n : kSizes)
    same_as_traced(
        f, fn, [](size_t m) { return std::tuple{ramp(m, 0.01f)}; }, n);
  CHECK(f.n_recordings() == 1);
  CHECK(f.n_replays() == kSizes.size() - 1);
  // Later calls trace and compile nothing.
  Float x = ramp(500);
  ff::sync();
  ff::Stats s0 = ff::stats();
  Float y = f(x);
  ff::eval(y);
  ff::Stats s1 = ff::stats();
  CHECK(s1.traced_kernels == s0.traced_kernels);
  CHECK(s1.compiles == s0.compiles);
}

TEST_CASE("freeze: the first call returns the traced result and records", "[freeze]") {
  fresh();
  auto f = ff::freeze([](const Float& x) { return x + 1.f; });
  CHECK(f.n_recordings() == 0);
  CHECK(host(f(ramp(3))) == std::vector<float>{1.f, 2.f, 3.f});
  CHECK(f.n_recordings() == 1);
  CHECK(f.n_replays() == 0);
  CHECK(f.n_cached() == 1);
  CHECK(host(f(ramp(4))) == std::vector<float>{1.f, 2.f, 3.f, 4.f});
  CHECK(f.n_replays() == 1);
}

TEST_CASE("freeze: two inputs of one size, and of different sizes", "[freeze]") {
  fresh();
  auto same = [](const Float& x, const Float& y) { return ff::fma(x, y, 2.f); };
  auto f = ff::freeze(same);
  for (size_t n : kSizes)
    same_as_traced(
        f, same,
        [](size_t m) {
          return std::tuple{ramp(m), ramp(m, 2.f)};
        },
        n);
  CHECK(f.n_recordings() == 1);

  auto halves = [](const Float& x, const Float& y) {
    UInt32 i = ff::arange<UInt32>(ff::width(x));
    return x + ff::gather<Float>(y, i * 2u) + ff::gather<Float>(y, i * 2u + 1u);
  };
  auto g = ff::freeze(halves);
  for (size_t n : kSizes)
    same_as_traced(
        g, halves,
        [](size_t m) {
          return std::tuple{ramp(m), ramp(2 * m, 3.f)};
        },
        n);
  // At size 0 both inputs have one size: another size pattern, so another recording.
  CHECK(g.n_recordings() == 2);
}

TEST_CASE("freeze: a size-1 argument broadcasts, and is another kind of call", "[freeze]") {
  fresh();
  auto fn = [](const Float& x, const Float& s) { return x * s + s; };
  auto f = ff::freeze(fn);
  for (size_t n : {50, 7, 1000})
    same_as_traced(
        f, fn,
        [](size_t m) {
          return std::tuple{ramp(m), ramp(1, 1.f, 3.f)};
        },
        n);
  CHECK(f.n_recordings() == 1);
  // Both of size n: no broadcast, so another recording (which inputs share a size is in the key).
  for (size_t n : {50, 7})
    same_as_traced(
        f, fn,
        [](size_t m) {
          return std::tuple{ramp(m), ramp(m, 2.f)};
        },
        n);
  CHECK(f.n_recordings() == 2);
  // Both of size 1 share a size, as at (n, n): that recording replays (nothing broadcast there).
  same_as_traced(
      f, fn,
      [](size_t m) {
        return std::tuple{ramp(m), ramp(m, 2.f)};
      },
      1);
  CHECK(f.n_recordings() == 2);
  // (9, 1) and (1, 9) have one size pattern (two sizes) but broadcast the other argument: the
  // guard recorded for the broadcast sends the second call to a new recording, not a wrong replay.
  auto g = ff::freeze(fn);
  same_as_traced(
      g, fn,
      [](size_t) {
        return std::tuple{ramp(9), ramp(1, 1.f, 3.f)};
      },
      9);
  same_as_traced(
      g, fn,
      [](size_t) {
        return std::tuple{ramp(1, 1.f, 2.f), ramp(9, 0.5f)};
      },
      9);
  CHECK(g.n_recordings() == 2);
  CHECK(g.n_cached() == 2);
  // Both paths are kept: each later call replays the one that fits.
  same_as_traced(
      g, fn,
      [](size_t) {
        return std::tuple{ramp(4), ramp(1, 1.f, 3.f)};
      },
      4);
  same_as_traced(
      g, fn,
      [](size_t) {
        return std::tuple{ramp(1, 1.f, 2.f), ramp(6, 0.5f)};
      },
      6);
  same_as_traced(
      g, fn,
      [](size_t) {
        return std::tuple{ramp(13), ramp(1, -1.f, 3.f)};
      },
      13);
  CHECK(g.n_recordings() == 2);
  CHECK(g.n_replays() == 3);
}

TEST_CASE("freeze: reductions, mean and prefix sums", "[freeze]") {
  fresh();
  auto fn = [](const Float& x, const Int32& k) {
    return std::tuple{ff::sum(x),  ff::max_reduce(x),       ff::min_reduce(k),
                      ff::mean(x), ff::prefix_sum(k, true), ff::prefix_sum(x, false)};
  };
  auto f = ff::freeze(fn);
  for (size_t n : {1000, 2, 3, 13, 777}) {
    auto make = [](size_t m) {
      std::vector<int32_t> v(m);
      for (size_t i = 0; i < m; ++i)
        v[i] = static_cast<int32_t>(i % 17) - 8;
      return std::tuple{ramp(m, 0.001f), Int32::from(v)};
    };
    same_as_traced(f, fn, make, n, 1e-4);
  }
  CHECK(f.n_recordings() == 1);
}

TEST_CASE("freeze: compress and gathers follow data-dependent sizes without re-recording",
          "[freeze]") {
  fresh();
  auto fn = [](const Float& x, float threshold) {
    UInt32 idx = ff::compress(x > threshold);
    Float picked = ff::gather<Float>(x, idx);
    return std::pair{picked * 2.f, ff::sum(picked)};
  };
  auto f = ff::freeze(fn);
  for (size_t n : {1000, 2, 3, 13, 777, 5000})
    same_as_traced(
        f, fn,
        [](size_t m) {
          return std::tuple{ramp(m, 0.01f), 5.f};
        },
        n, 1e-4);
  CHECK(f.n_recordings() == 1);  // the count is resolved during each replay
}

TEST_CASE("freeze: gathers sized from width arithmetic", "[freeze]") {
  fresh();
  auto fn = [](const Float& x) {
    UInt32 i = ff::arange<UInt32>(ff::width(x) - 1);
    UInt32 e = ff::arange<UInt32>((ff::width(x) + 1) / 2) * 2u;
    return std::pair{ff::gather<Float>(x, i + 1u) - ff::gather<Float>(x, i),
                     ff::gather<Float>(x, e)};
  };
  auto f = ff::freeze(fn);
  for (size_t n : {1000, 2, 3, 13, 777})
    same_as_traced(
        f, fn, [](size_t m) { return std::tuple{ramp(m, 0.5f)}; }, n);
  CHECK(f.n_recordings() == 1);
  CHECK_THROWS_AS(f(ramp(0)), ff::Error);  // width - 1 below zero: as traced
  CHECK_THROWS_AS(fn(ramp(0)), ff::Error);
}

TEST_CASE("freeze: a scatter into an argument taken by reference", "[freeze]") {
  fresh();
  auto into_arg = [](Float& target, const Float& values) {
    UInt32 even = ff::arange<UInt32>((ff::width(target) + 1) / 2) * 2u;
    ff::scatter(target, ff::gather<Float>(values, even), even);
  };
  auto f = ff::freeze(into_arg);
  for (size_t n : {1000, 2, 3, 13, 777})
    same_as_traced(
        f, into_arg,
        [](size_t m) {
          return std::tuple{ramp(m), ramp(m, -1.f)};
        },
        n);
  CHECK(f.n_recordings() == 1);

  // Other handles on the caller's array keep the old contents, as after a traced call.
  Float target = ramp(6);
  ff::eval(target);
  Float other = target;
  f(target, ramp(6, 10.f));
  CHECK(host(target) == std::vector<float>{0.f, 1.f, 20.f, 3.f, 40.f, 5.f});
  CHECK(host(other) == host(ramp(6)));
}

TEST_CASE("freeze: scatter_add of floats (order-dependent sums) replays within tolerance",
          "[freeze]") {
  fresh();
  auto hist = [](const Float& values, const UInt32& bins) {
    Float h = ff::zeros<Float>(16);
    ff::scatter_add(h, values, bins);
    return h;
  };
  auto f = ff::freeze(hist);
  auto make = [](size_t m) {
    std::vector<uint32_t> b(m);
    for (size_t i = 0; i < m; ++i)
      b[i] = static_cast<uint32_t>((i * 7) % 16);
    return std::tuple{ramp(m, 0.01f), UInt32::from(b)};
  };
  for (size_t n : {1000, 2, 3, 13, 100000})
    same_as_traced(f, hist, make, n, 1e-4);
  CHECK(f.n_recordings() == 1);
}

TEST_CASE("freeze: a struct taken by reference: arrays and scalar fields are written back",
          "[freeze]") {
  fresh();
  auto step = [](Particle& p, const Float& dt) {
    p.pos = p.pos + p.vel * dt;
    p.vel = p.vel * 0.99f;
    p.id = 7;
  };
  auto f = ff::freeze(step);
  for (size_t n : {1000, 2, 3, 13, 777})
    same_as_traced(
        f, step,
        [](size_t m) {
          return std::tuple{Particle{ramp(m), ramp(m, 0.5f), 3}, ramp(m)};
        },
        n);
  CHECK(f.n_recordings() == 1);
  Particle p{ramp(4), ramp(4, 1.f, 1.f), 3};
  f(p, ramp(4, 0.f, 0.5f));
  CHECK(p.id == 7);
  CHECK(host(p.pos) == std::vector<float>{0.5f, 2.f, 3.5f, 5.f});
}

TEST_CASE("freeze: a loop of 100 calls feeding each result into the next", "[freeze]") {
  fresh();
  auto step = [](const Float& u) {
    UInt32 i = ff::arange<UInt32>(ff::width(u));
    UInt32 left = ff::select(i > 0u, i - 1u, i);
    return u * 0.5f + ff::gather<Float>(u, left) * 0.5f;
  };
  auto f = ff::freeze(step);
  Float a = ramp(300, 0.1f), b = ramp(300, 0.1f);
  for (int k = 0; k < 100; ++k) {
    a = f(a);
    b = step(b);
  }
  CHECK(ffr::compare(ffr::snapshot(ff::AnyArray(a)), ffr::snapshot(ff::AnyArray(b))) == "");
  CHECK(f.n_recordings() == 1);
  CHECK(f.n_replays() == 99);
}

TEST_CASE("freeze: struct, tuple, pair, vector, array, optional and map arguments and results",
          "[freeze]") {
  fresh();
  auto fn = [](const Swarm& s, const std::array<Float, 2>& ab, const std::optional<Float>& o,
               const std::map<std::string, Float>& named) {
    Stats2 out;
    Float total = s.weights * 0.f;
    for (const Particle& p : s.members)
      total = total + p.pos * s.weights;
    out.mean = ff::mean(total) + ff::sum(ab[0] * ab[1]);
    out.spread = o ? ff::max_reduce(*o) : ff::Float(0.f);
    for (const auto& [k, v] : named)
      out.spread = out.spread + ff::sum(v);
    out.label = "swarm of " + std::to_string(s.members.size());
    out.n = static_cast<int>(s.members.size());
    return std::tuple{out, std::vector<Float>{total, total * s.damping}};
  };
  auto f = ff::freeze(fn);
  auto make = [](size_t m, size_t members, bool with_o) {
    Swarm s;
    for (size_t k = 0; k < members; ++k)
      s.members.push_back({ramp(m, 0.1f * static_cast<float>(k + 1)), ramp(m), int(k)});
    s.weights = ramp(m, 0.01f, 1.f);
    std::optional<Float> o;
    if (with_o)
      o = ramp(m, -1.f);
    std::map<std::string, Float> named{{"a", ramp(m)}, {"b", ramp(m, 2.f)}};
    return std::tuple{s, std::array<Float, 2>{ramp(m), ramp(m, 3.f)}, o, named};
  };
  for (size_t n : {100, 2, 13})
    same_as_traced(
        f, fn, [&](size_t m) { return make(m, 3, true); }, n, 1e-4);
  CHECK(f.n_recordings() == 1);
  // Another number of members or an absent optional: another structure, another recording.
  same_as_traced(
      f, fn, [&](size_t m) { return make(m, 4, true); }, 50, 1e-4);
  same_as_traced(
      f, fn, [&](size_t m) { return make(m, 3, false); }, 50, 1e-4);
  CHECK(f.n_recordings() == 3);
  same_as_traced(
      f, fn, [&](size_t m) { return make(m, 4, true); }, 9, 1e-4);
  CHECK(f.n_recordings() == 3);
}

TEST_CASE("freeze: scalar arguments are part of the key (enums, strings, bools, doubles)",
          "[freeze]") {
  fresh();
  auto fn = [](const Float& x, Mode mode, const std::string& tag, bool twice, double k) {
    Float y = mode == Mode::Add ? x + static_cast<float>(k) : x * static_cast<float>(k);
    if (twice)
      y = y * 2.f;
    return std::pair{y, tag + "!"};
  };
  auto f = ff::freeze(fn);
  auto call = [&](Mode m, std::string t, bool tw, double k, size_t n) {
    same_as_traced(
        f, fn,
        [&](size_t s) {
          return std::tuple{ramp(s), m, t, tw, k};
        },
        n);
  };
  call(Mode::Add, "a", false, 2.0, 10);
  call(Mode::Add, "a", false, 2.0, 20);
  CHECK(f.n_recordings() == 1);
  call(Mode::Mul, "a", false, 2.0, 10);
  call(Mode::Mul, "b", false, 2.0, 10);
  call(Mode::Mul, "b", true, 2.0, 10);
  call(Mode::Mul, "b", true, 3.0, 10);
  CHECK(f.n_recordings() == 5);
  call(Mode::Add, "a", false, 2.0, 30);  // the first kind again: replayed
  CHECK(f.n_recordings() == 5);
}

TEST_CASE("freeze: a literal that changes is made opaque once, then replays", "[freeze]") {
  fresh();
  auto fn = [](const Float& x, const Float& t) { return x * t; };
  auto f = ff::freeze(fn);
  for (int k = 0; k < 10; ++k) {
    Float t = Float(0.5f + static_cast<float>(k));  // a fresh literal every call
    Float x = ramp(8);
    Float y = f(x, t);
    CHECK(host(y)[3] == 3.f * (0.5f + static_cast<float>(k)));
    if (k >= 1)
      CHECK(t.to_vector().size() == 1);
  }
  CHECK(f.n_recordings() == 2);  // once as a literal, once with it opaque
  CHECK(f.n_replays() == 8);
}

TEST_CASE("freeze: with auto_opaque off every literal is opaque from the start", "[freeze]") {
  fresh();
  ff::FreezeOptions o;
  o.auto_opaque = false;
  auto f = ff::freeze([](const Float& x, const Float& t) { return x + t; }, o);
  for (int k = 0; k < 5; ++k)
    CHECK(host(f(ramp(4), Float(static_cast<float>(k))))[1] == 1.f + static_cast<float>(k));
  CHECK(f.n_recordings() == 1);
}

TEST_CASE("freeze: limit keeps the most recently used recordings", "[freeze]") {
  fresh();
  ff::FreezeOptions o;
  o.limit = 2;
  auto f = ff::freeze([](const Float& x, int k) { return x + static_cast<float>(k); }, o);
  f(ramp(3), 1);
  f(ramp(3), 2);
  f(ramp(3), 1);  // 1 is now the most recent
  f(ramp(3), 3);  // evicts 2
  CHECK(f.n_cached() == 2);
  CHECK(f.n_recordings() == 3);
  f(ramp(3), 1);
  CHECK(f.n_recordings() == 3);  // still held
  f(ramp(3), 2);
  CHECK(f.n_recordings() == 4);  // evicted earlier: recorded again
  CHECK(f.n_cached() == 2);

  ff::FreezeOptions zero;
  zero.limit = 0;
  auto g = ff::freeze([](const Float& x) { return x * 2.f; }, zero);
  CHECK(host(g(ramp(3))) == std::vector<float>{0.f, 2.f, 4.f});
  CHECK(host(g(ramp(3))) == std::vector<float>{0.f, 2.f, 4.f});
  CHECK(g.n_recordings() == 0);
  CHECK(g.n_cached() == 0);
}

TEST_CASE("freeze: a guard that fails records a second path beside the first", "[freeze]") {
  fresh();
  auto fn = [](const Float& x) { return ff::width(x) > 10 ? x * 2.f : x + 100.f; };
  auto f = ff::freeze(fn);
  for (size_t n : {20, 5, 30, 3, 11, 10})
    same_as_traced(
        f, fn, [](size_t m) { return std::tuple{ramp(m)}; }, n);
  CHECK(f.n_recordings() == 2);
  CHECK(f.n_cached() == 2);
  CHECK(f.n_replays() == 4);
}

TEST_CASE("freeze: a scalar set from a size pins the recording to that size", "[freeze]") {
  fresh();
  ff::set_log_level(ff::LogLevel::Error);

  struct Out {
    Float y;
    size_t n = 0;
  };

  auto fn = [](const Float& x) {
    std::pair<Float, size_t> r{x * 2.f, static_cast<size_t>(x.size())};
    return r;
  };
  auto f = ff::freeze(fn);
  for (size_t n : {5, 6, 5, 6, 7})
    same_as_traced(
        f, fn, [](size_t m) { return std::tuple{ramp(m)}; }, n);
  CHECK(f.n_recordings() == 3);  // one per size: the pinned value never goes stale
  ff::set_log_level(ff::LogLevel::Warn);
}

TEST_CASE("freeze: aliasing - the same array twice, an input returned, two equal results",
          "[freeze]") {
  fresh();
  auto fn = [](const Float& a, const Float& b) {
    Float s = a + b;
    return std::tuple{s, s, a};
  };
  auto f = ff::freeze(fn);
  Float x = ramp(5);
  auto [s1, s2, a1] = f(x, x);
  CHECK(host(s1) == std::vector<float>{0.f, 2.f, 4.f, 6.f, 8.f});
  CHECK(s1.id() == s2.id());
  CHECK(a1.id() == x.id());
  Float y = ramp(7);
  auto [t1, t2, a2] = f(y, y);  // aliased again: replayed
  CHECK(f.n_recordings() == 1);
  CHECK(t1.id() == t2.id());
  CHECK(a2.id() == y.id());
  CHECK(host(t1)[6] == 12.f);
  auto [u1, u2, a3] = f(ramp(7), ramp(7, 2.f));  // distinct now: another kind of call
  CHECK(f.n_recordings() == 2);
  CHECK(host(u1)[6] == 18.f);
  (void)u2;
  (void)a3;
}

TEST_CASE("freeze: lazy, dirty, empty and literal inputs", "[freeze]") {
  fresh();
  auto fn = [](const Float& x, const Float& y) { return x * 2.f + y; };
  auto f = ff::freeze(fn);
  Float lazy = ramp(4) + 1.f;
  Float dirty = ramp(4);
  ff::eval(dirty);
  ff::scatter(dirty, Float(9.f), UInt32(0u));  // pending
  CHECK(host(f(lazy, dirty)) == std::vector<float>{11.f, 5.f, 8.f, 11.f});
  CHECK(host(f(ramp(4), ramp(4))) == std::vector<float>{0.f, 3.f, 6.f, 9.f});
  CHECK(f.n_recordings() == 1);
  CHECK(host(f(Float(), Float())).empty());  // empty arrays: literal leaves of size 0
  CHECK(host(f(ff::full<Float>(1.f, 3), ramp(3))) == std::vector<float>{2.f, 3.f, 4.f});
}

TEST_CASE("freeze: every element type", "[freeze]") {
  fresh();
  auto fn = [](const Float64& d, const Int32& i, const UInt64& u, const ff::Bool& b) {
    return std::tuple{d * 0.5, i * 3 - 1, u << uint64_t{3}, !b, ff::cast<Float64>(i) + d};
  };
  auto f = ff::freeze(fn);
  auto make = [](size_t m) {
    std::vector<double> dv(m);
    std::vector<int32_t> iv(m);
    std::vector<uint64_t> uv(m);
    std::vector<bool> bv(m);
    for (size_t k = 0; k < m; ++k) {
      dv[k] = 0.25 * static_cast<double>(k);
      iv[k] = static_cast<int32_t>(k) - 5;
      uv[k] = k * 1000003u;
      bv[k] = k % 3 == 0;
    }
    return std::tuple{Float64::from(dv), Int32::from(iv), UInt64::from(uv), ff::Bool::from(bv)};
  };
  for (size_t n : {100, 2, 3, 13})
    same_as_traced(f, fn, make, n);
  CHECK(f.n_recordings() == 1);
}

TEST_CASE("freeze: a void function that updates its reference arguments", "[freeze]") {
  fresh();
  auto fn = [](Float& a, std::vector<Float>& history, int& calls) {
    history.push_back(a);
    a = a * 2.f;
    calls += 1;
  };
  auto f = ff::freeze(fn);
  Float a = ramp(3, 1.f, 1.f);
  std::vector<Float> hist;
  int calls = 0;
  f(a, hist, calls);  // history of length 0 -> 1, calls 0 -> 1
  CHECK(calls == 1);
  CHECK(hist.size() == 1);
  Float a2 = ramp(5, 1.f, 1.f);
  std::vector<Float> hist2;
  int calls2 = 0;
  f(a2, hist2, calls2);  // the same kind of call: replayed
  CHECK(f.n_replays() == 1);
  CHECK(calls2 == 1);
  REQUIRE(hist2.size() == 1);
  CHECK(host(hist2[0]) == std::vector<float>{1.f, 2.f, 3.f, 4.f, 5.f});
  CHECK(host(a2) == std::vector<float>{2.f, 4.f, 6.f, 8.f, 10.f});
}

TEST_CASE("freeze: the flag off runs every call traced, recordings are kept", "[freeze]") {
  fresh();
  auto f = ff::freeze([](const Float& x) { return x + 1.f; });
  f(ramp(3));
  ff::set_flag(ff::Flag::KernelFreezing, false);
  for (int k = 0; k < 3; ++k)
    CHECK(host(f(ramp(4))) == std::vector<float>{1.f, 2.f, 3.f, 4.f});
  CHECK(f.n_recordings() == 1);
  CHECK(f.n_replays() == 0);
  ff::set_flag(ff::Flag::KernelFreezing, true);
  f(ramp(4));
  CHECK(f.n_replays() == 1);
}

TEST_CASE("freeze: frozen functions nest, and compose with ff::record", "[freeze]") {
  fresh();
  auto inner = ff::freeze([](const Float& x) { return x * 3.f; });
  auto outer_fn = [&](const Float& x) { return inner(x) + 1.f; };
  auto outer = ff::freeze(outer_fn);
  for (size_t n : {10, 3, 20})
    CHECK(host(outer(ramp(n)))[2] == 7.f);
  CHECK(outer.n_recordings() == 1);
  CHECK(outer.n_replays() == 2);
  inner(ramp(4));  // records inner at top level now
  CHECK(inner.n_recordings() == 1);
  // Inside another recording a hit replays into it, so the outer recording holds its ops.
  Float x = ramp(6);
  auto body = [&] { return std::vector<ff::AnyArray>{inner(x) - 1.f}; };
  ff::Recording plain = ff::record({x}, body, ff::RecordOptions{false});
  CHECK(plain.n_kernels() == 2);
  // The optimiser (unless FF_OPTIMIZE=0) fuses the inner kernel with "- 1".
  ff::Recording r = ff::record({x}, body);
  CHECK(r.n_kernels() == (r.is_optimized() ? 1u : 2u));
  CHECK(plain.replay({ramp(2)})[0].as<Float>().to_vector() == std::vector<float>{-1.f, 2.f});
  auto outs = r.replay({ramp(2)});
  CHECK(outs[0].as<Float>().to_vector() == std::vector<float>{-1.f, 2.f});
}

TEST_CASE("freeze: survives shutdown and init", "[freeze]") {
  fresh();
  auto f = ff::freeze([](const Float& x) { return x - 1.f; });
  CHECK(host(f(ramp(3)))[2] == 1.f);
  ff::shutdown();
  ff::init("llvm");
  CHECK(host(f(ramp(5)))[4] == 3.f);
  CHECK(f.n_recordings() == 1);
  CHECK(f.n_replays() == 1);
}

TEST_CASE("freeze: recording(i), oldest first, and clear()", "[freeze]") {
  fresh();
  auto f = ff::freeze([](const Float& x, int k) { return x + static_cast<float>(k); });
  f(ramp(3), 1);
  f(ramp(3), 2);
  CHECK(f.recording(0).n_inputs() == 1);
  CHECK(f.recording(1).n_kernels() == 1);
  CHECK_THROWS_AS(f.recording(2), ff::Error);
  f.clear();
  CHECK(f.n_cached() == 0);
  CHECK(f.n_recordings() == 0);
  f(ramp(3), 1);
  CHECK(f.n_recordings() == 1);
}

TEST_CASE("freeze: names in messages", "[freeze]") {
  fresh();
  ff::FreezeOptions o;
  o.name = "step";
  auto f = ff::freeze([](const Float& x) { return x * 2.f; }, o);
  CHECK(f.options().name == "step");
  auto g = ff::freeze([](const Float& x) { return x * 2.f; });
  CHECK_THAT(g.options().name, Catch::Matchers::StartsWith("frozen function #"));
}
