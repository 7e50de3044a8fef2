// Frozen functions and their arguments: which ones a call writes back (by reference, by value,
// by forwarding reference, lvalue or rvalue), sizes at the edges (every input of size 1, size
// 0, constants mixed with inputs), containers whose length the body changes, arrays from other
// threads, copies of a frozen function, flags in the key and limit 0.
#include <catch2/catch.hpp>
#include <functional>
#include <map>
#include <optional>
#include <thread>

#include "support/freeze_check.h"

using namespace fff;
using ff::Float;
using ff::Int32;
using ff::UInt32;

namespace {

void fresh() {
  ff::shutdown();
  ff::init("llvm");
}

}  // namespace

struct Cloud {
  std::vector<Particle> particles;
  std::map<std::string, Float> extra;
  std::optional<Float> weights;
  int steps = 0;
};
FF_STRUCT(Cloud, particles, extra, weights, steps)

TEST_CASE("freeze arguments: const references, lvalues and rvalues share one recording",
          "[freeze][args]") {
  fresh();
  auto fn = [](const Float& x, const Float& y) { return x * y - 1.f; };
  auto f = ff::freeze(fn);
  Float a = ramp(5), b = ramp(5, 2.f);
  const Float c = ramp(7, 3.f);
  uint64_t a_id = a.id(), b_id = b.id();
  CHECK(host(f(a, b)) == host(fn(ramp(5), ramp(5, 2.f))));        // non-const lvalues
  CHECK(host(f(ramp(7), c)) == host(fn(ramp(7), ramp(7, 3.f))));  // an rvalue, a const lvalue
  CHECK(host(f(Float(a), ramp(5, 2.f))) == host(fn(ramp(5), ramp(5, 2.f))));
  CHECK(f.n_recordings() == 1);
  CHECK(f.n_replays() == 2);
  // Nothing was written back: the caller's arrays are the very same ones.
  CHECK(a.id() == a_id);
  CHECK(b.id() == b_id);
  CHECK(host(a) == host(ramp(5)));
}

TEST_CASE("freeze arguments: a body taking its argument by value leaves the caller's alone",
          "[freeze][args]") {
  fresh();
  auto fn = [](Float x, int k) {
    x = x * static_cast<float>(k);  // the body's own copy
    return x + 1.f;
  };
  auto f = ff::freeze(fn);
  for (size_t n : {6, 1, 0, 2, 31}) {
    Float mine = ramp(n);
    uint64_t id = mine.id();
    same_as_traced(
        f, fn,
        [](size_t m) {
          return std::tuple{ramp(m), 3};
        },
        n);
    CHECK(host(f(mine, 3)) == host(fn(ramp(n), 3)));  // an lvalue passed by value
    CHECK(mine.id() == id);
    CHECK(host(f(ramp(n), 3)) == host(fn(ramp(n), 3)));  // an rvalue, moved into the body
  }
  CHECK(f.n_recordings() == 1);
  // Recorded with an rvalue (moved into the body, so emptied): still not an output, and an
  // lvalue passed later keeps its contents.
  auto g = ff::freeze(fn);
  CHECK(host(g(ramp(4), 2)) == std::vector<float>{1.f, 3.f, 5.f, 7.f});
  Float mine = ramp(3);
  CHECK(host(g(mine, 2)) == std::vector<float>{1.f, 3.f, 5.f});
  CHECK(host(mine) == std::vector<float>{0.f, 1.f, 2.f});
  CHECK(g.n_recordings() == 1);
  CHECK(g.recording(0).n_outputs() == 1);
}

TEST_CASE("freeze arguments: a frozen function that calls itself is traced into its recording",
          "[freeze][args]") {
  fresh();
  // Halves the input until 4 elements are left (the inner calls have the same kind of
  // arguments, so they hit the key being recorded).
  std::function<Float(const Float&)> body;
  auto f = ff::freeze([&](const Float& x) { return body(x); });
  body = [&](const Float& x) -> Float {
    if (ff::width(x) <= 4u)
      return x * 2.f;
    UInt32 half = ff::arange<UInt32>(ff::width(x) / 2u);
    return f(ff::gather<Float>(x, half * 2u) + ff::gather<Float>(x, half * 2u + 1u));
  };
  auto traced = [&](size_t n) {
    std::vector<float> v = host(ramp(n));
    while (v.size() > 4) {
      std::vector<float> h(v.size() / 2);
      for (size_t i = 0; i < h.size(); ++i)
        h[i] = v[2 * i] + v[2 * i + 1];
      v = h;
    }
    for (float& e : v)
      e *= 2.f;
    return v;
  };
  CHECK(host(f(ramp(16))) == traced(16));
  CHECK(host(f(ramp(16))) == traced(16));
  CHECK(f.n_replays() >= 1);
  // Another depth of recursion fails the recording's size guards and records anew.
  CHECK(host(f(ramp(32))) == traced(32));
  CHECK(host(f(ramp(8))) == traced(8));
}

TEST_CASE("freeze arguments: a forwarding-reference body updates lvalues whichever call recorded",
          "[freeze][args]") {
  fresh();
  auto fn = [](auto&& x) {
    x = x * 2.f + 1.f;
    return ff::sum(x);
  };
  SECTION("recorded with an rvalue, replayed with an lvalue") {
    auto f = ff::freeze(fn);
    CHECK(host(f(ramp(4)))[0] == 2.f * 6.f + 4.f);
    Float mine = ramp(5);
    Float want = ramp(5);
    Float s = f(mine);
    Float t = fn(want);
    CHECK(f.n_recordings() == 1);
    CHECK(host(mine) == host(want));
    CHECK(host(s) == host(t));
  }
  SECTION("recorded with an lvalue, replayed with an rvalue") {
    auto f = ff::freeze(fn);
    Float mine = ramp(3);
    f(mine);
    CHECK(host(mine) == std::vector<float>{1.f, 3.f, 5.f});
    CHECK(host(f(ramp(2)))[0] == 1.f + 3.f);
    CHECK(f.n_recordings() == 1);
    CHECK(f.n_replays() == 1);
  }
}

TEST_CASE("freeze arguments: a reference argument the body leaves alone is not an output",
          "[freeze][args]") {
  fresh();
  auto f = ff::freeze([](Float& x, Float& unused) {
    x += 1.f;
    return ff::width(unused) > 0u ? Float(x * 2.f) : Float(x);
  });
  Float x = ramp(3), u = ramp(3);
  uint64_t u_id = u.id();
  f(x, u);
  f(x, u);
  CHECK(f.n_replays() == 1);
  CHECK(u.id() == u_id);
  CHECK(host(x) == std::vector<float>{2.f, 3.f, 4.f});
  // Outputs: the result and x, not u.
  CHECK(f.recording(0).summary().find("2 outputs") != std::string::npos);
}

TEST_CASE("freeze arguments: other handles that shared an updated argument keep its old contents",
          "[freeze][args]") {
  fresh();
  auto fn = [](Float& x, const UInt32& where) {
    ff::scatter(x, Float(-1.f), where);
    x = x + 0.5f;
  };
  auto f = ff::freeze(fn);
  for (size_t n : {10, 4, 17}) {
    Float x = ramp(n);
    ff::eval(x);
    Float shared = x;  // the caller keeps the old contents here
    f(x, UInt32::from(std::vector<uint32_t>{0u, 2u}));
    std::vector<float> want = host(ramp(n));
    CHECK(host(shared) == want);
    want[0] = want[2] = -1.f;
    for (float& v : want)
      v += 0.5f;
    CHECK(host(x) == want);
  }
  CHECK(f.n_recordings() == 1);
}

TEST_CASE("freeze arguments: a struct whose containers the body resizes", "[freeze][args]") {
  fresh();
  auto fn = [](Cloud& c, const Float& push) {
    Particle p;
    p.pos = push;
    p.vel = push * 0.f;
    p.id = static_cast<int>(c.particles.size());
    c.particles.push_back(p);
    c.extra["sum"] = ff::sum(push);
    if (c.weights)
      *c.weights = *c.weights * 0.5f;
    c.steps += 1;
  };
  auto f = ff::freeze(fn);
  auto make = [](size_t n) {
    Cloud c;
    c.particles.push_back(Particle{ramp(n), ramp(n, -1.f), 7});
    c.weights = ramp(n, 2.f);
    c.steps = 3;
    return std::tuple{c, ramp(n, 0.25f)};
  };
  for (size_t n : {8, 1, 3, 0, 13})
    same_as_traced(f, fn, make, n);
  CHECK(f.n_recordings() == 1);
  // After a replay the caller's struct has the new particle, the map entry and steps + 1.
  auto [c, push] = make(5);
  f(c, push);
  CHECK(c.particles.size() == 2);
  CHECK(c.particles[1].id == 1);
  CHECK(c.steps == 4);
  CHECK(c.extra.count("sum") == 1);
  CHECK(host(c.extra["sum"])[0] == 0.25f * 10.f);
  // Another length of the vector is another structure: a second recording.
  c.particles.pop_back();
  c.particles.push_back(Particle{ramp(5), ramp(5), 1});
  c.particles.push_back(Particle{ramp(5), ramp(5), 2});
  c.steps = 3;
  f(c, push);
  CHECK(f.n_recordings() == 2);
  CHECK(c.particles.size() == 4);
}

TEST_CASE("freeze arguments: every input of size 1, recorded large and recorded at 1",
          "[freeze][args][size]") {
  fresh();
  auto fn = [](const Float& x, const Float& y, const Int32& k) {
    return std::tuple{x * y + ff::cast<Float>(k), ff::sum(x) + y, ff::prefix_sum(k, false)};
  };
  auto make = [](size_t n) {
    std::vector<int32_t> v(n);
    for (size_t i = 0; i < n; ++i)
      v[i] = static_cast<int32_t>(i) * 3 - 2;
    return std::tuple{ramp(n, 0.5f, 1.f), ramp(n, -1.f, 2.f), Int32::from(v)};
  };
  SECTION("recorded at 100, then size 1, 2, 0") {
    auto f = ff::freeze(fn);
    for (size_t n : {100, 1, 2, 0, 1})
      same_as_traced(f, fn, make, n);
  }
  SECTION("recorded at 1, then larger") {
    auto f = ff::freeze(fn);
    for (size_t n : {1, 2, 100, 0, 7, 1})
      same_as_traced(f, fn, make, n);
  }
}

TEST_CASE("freeze arguments: constants mixed with inputs", "[freeze][args]") {
  fresh();
  auto fn = [](const Float& x, const Float& scale) {
    Float ones = ff::full<Float>(1.f, ff::width(x));
    Float idx = ff::arange<Float>(ff::width(x));
    return x * scale + ones * 3.f - idx + Float(0.25f);
  };
  auto f = ff::freeze(fn);
  for (size_t n : {9, 1, 2, 0, 23})
    same_as_traced(
        f, fn,
        [](size_t m) {
          return std::tuple{ramp(m), Float(2.f)};
        },
        n);
  CHECK(f.n_recordings() == 1);
  // The literal scale changes: made opaque once, then every value replays.
  for (float s : {3.f, 4.f, 5.f})
    same_as_traced(
        f, fn,
        [s](size_t m) {
          return std::tuple{ramp(m), Float(s)};
        },
        6);
  CHECK(f.n_recordings() == 2);
}

TEST_CASE("freeze arguments: arrays made on other threads", "[freeze][args][threads]") {
  fresh();
  auto fn = [](const Float& x, Float& acc) {
    acc = acc + x;
    return ff::max_reduce(x);
  };
  auto f = ff::freeze(fn);
  Float acc = ff::zeros<Float>(64);
  ff::make_opaque(acc);  // a buffer from the start, as after the first call
  f(ramp(64), acc);      // records here
  for (int round = 0; round < 3; ++round) {
    Float made;
    std::thread([&] {
      made = ramp(64, static_cast<float>(round + 1));
      ff::eval(made);
    }).join();
    Float m = f(made, acc);
    CHECK(host(m)[0] == 63.f * static_cast<float>(round + 1));
  }
  std::vector<float> got = host(acc);
  CHECK(got[1] == 1.f + 1.f + 2.f + 3.f);
  CHECK(f.n_recordings() == 1);
  // And the other way: a worker calls with arrays this thread made.
  Float mine = ramp(64, 10.f);
  Float result;
  std::thread([&] { result = f(mine, acc); }).join();
  CHECK(host(result)[0] == 630.f);
  CHECK(host(acc)[1] == 17.f);
}

TEST_CASE("freeze arguments: copies of a frozen function share their recordings",
          "[freeze][args]") {
  fresh();
  auto f = ff::freeze([](const Float& x) { return x - 2.f; });
  auto g = f;
  f(ramp(4));
  CHECK(host(g(ramp(3))) == std::vector<float>{-2.f, -1.f, 0.f});
  CHECK(g.n_recordings() == 1);
  CHECK(f.n_replays() == 1);
  // Two frozen functions of the same body keep separate caches.
  auto h = ff::freeze([](const Float& x) { return x - 2.f; });
  h(ramp(2));
  CHECK(h.n_recordings() == 1);
  CHECK(f.n_recordings() == 1);
}

TEST_CASE("freeze arguments: limit 0 runs every call traced", "[freeze][args]") {
  fresh();
  ff::FreezeOptions o;
  o.limit = 0;
  auto fn = [](const Float& x) { return x * x; };
  auto f = ff::freeze(fn, o);
  for (size_t n : {5, 1, 0}) {
    ff::Stats s0 = ff::stats();
    same_as_traced(
        f, fn, [](size_t m) { return std::tuple{ramp(m)}; }, n);
    CHECK(ff::stats().traced_kernels >= s0.traced_kernels);
  }
  CHECK(f.n_recordings() == 0);
  CHECK(f.n_cached() == 0);
  CHECK(f.n_replays() == 0);
}

TEST_CASE("freeze arguments: the debug flag is part of the key", "[freeze][args]") {
  fresh();
  auto fn = [](const Float& x) { return ff::sqrt(x); };
  auto f = ff::freeze(fn);
  same_as_traced(
      f, fn, [](size_t m) { return std::tuple{ramp(m)}; }, 10);
  ff::set_flag(ff::Flag::Debug, true);
  same_as_traced(
      f, fn, [](size_t m) { return std::tuple{ramp(m)}; }, 10);
  CHECK(f.n_recordings() == 2);
  ff::set_flag(ff::Flag::Debug, false);
  same_as_traced(
      f, fn, [](size_t m) { return std::tuple{ramp(m)}; }, 12);
  CHECK(f.n_recordings() == 2);
  CHECK(f.n_replays() == 1);
}

TEST_CASE("freeze arguments: optional and map arguments change the key by their contents",
          "[freeze][args]") {
  fresh();
  auto fn = [](const std::optional<Float>& bias, const std::map<std::string, Float>& terms) {
    Float total = ff::zeros<Float>(4);
    for (const auto& [name, t] : terms)
      total = total + t * static_cast<float>(name.size());
    return bias ? total + *bias : total;
  };
  auto f = ff::freeze(fn);
  auto with = [](size_t) {
    return std::tuple{std::optional<Float>(ramp(4)),
                      std::map<std::string, Float>{{"a", ramp(4)}, {"bb", ramp(4, 2.f)}}};
  };
  auto without = [](size_t) {
    return std::tuple{std::optional<Float>(),
                      std::map<std::string, Float>{{"a", ramp(4)}, {"ccc", ramp(4, 2.f)}}};
  };
  same_as_traced(f, fn, with, 4);
  same_as_traced(f, fn, without, 4);
  same_as_traced(f, fn, with, 4);
  same_as_traced(f, fn, without, 4);
  CHECK(f.n_recordings() == 2);
  CHECK(f.n_replays() == 2);
}

struct ReadmeState {
  Float pos, vel;
};
FF_STRUCT(ReadmeState, pos, vel)

TEST_CASE("freeze arguments: the README's example records once and replays at another size",
          "[freeze][args]") {
  fresh();
  auto body = [](ReadmeState& s, const Float& dt) {
    s.vel = s.vel - 9.81f * dt;
    s.pos = s.pos + s.vel * dt;
  };
  auto step = ff::freeze(body);
  for (size_t n : {1000, 37}) {
    ReadmeState s{Float::from(std::vector<float>(n, 10.f)), Float::from(std::vector<float>(n))};
    ReadmeState t{Float::from(std::vector<float>(n, 10.f)), Float::from(std::vector<float>(n))};
    Float dt = Float::from({0.01f});
    for (int i = 0; i < 100; ++i) {
      step(s, dt);
      body(t, dt);
    }
    CHECK(diff(snap(s), snap(t)) == "");
  }
  CHECK(step.n_recordings() == 1);
  CHECK(step.n_replays() == 199);
}
