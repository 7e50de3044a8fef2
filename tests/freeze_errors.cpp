// Frozen functions: what is refused (with the function's name and what to do), the call after
// a failed one, verify mode, the warn_after warning, concurrent callers, and ff::PCG32.
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <sstream>
#include <thread>

#include "common/log.h"
#include "support/freeze_check.h"
#include "support/log_capture.h"

using namespace fff;
using Catch::Matchers::Contains;
using ff::Float;
using ff::UInt32;
using ff::UInt64;

namespace {

void fresh() {
  ff::shutdown();
  ff::init("llvm");
}

uint64_t live_bytes() {
  ff::sync();
  return ff::stats().bytes_allocated;
}

/// The PCG32 reference generator (pcg32_random_r), for one stream.
struct RefPcg {
  uint64_t state = 0, inc = 0;

  RefPcg(uint64_t initstate, uint64_t initseq) {
    inc = (initseq << 1u) | 1u;
    next();
    state += initstate;
    next();
  }

  uint32_t next() {
    uint64_t old = state;
    state = old * 6364136223846793005ull + inc;
    auto xorshifted = static_cast<uint32_t>(((old >> 18u) ^ old) >> 27u);
    auto rot = static_cast<uint32_t>(old >> 59u);
    return (xorshifted >> rot) | (xorshifted << ((-rot) & 31u));
  }
};

}  // namespace

TEST_CASE("freeze errors: a host read inside is refused, naming the function", "[freeze][error]") {
  fresh();
  ff::FreezeOptions o;
  o.name = "reader";
  auto f = ff::freeze(
      [](const Float& x) {
        float first = (x * 2.f).to_vector()[0];
        return x + first;
      },
      o);
  uint64_t baseline = live_bytes();
  {
    Float x = ramp(4);
    ff::eval(x);
    baseline = live_bytes();
    REQUIRE_THROWS_AS(f(x), ff::FreezeError);
    REQUIRE_THROWS_WITH(f(x), Contains("frozen function 'reader'") &&
                                  Contains("reading array contents on the host") &&
                                  Contains("return"));
    CHECK(live_bytes() == baseline);
  }
  CHECK(f.n_recordings() == 0);
  CHECK(f.n_cached() == 0);
  // The next frozen function records and replays normally (no scope left open).
  auto g = ff::freeze([](const Float& x) { return x * 3.f; });
  CHECK(host(g(ramp(3))) == std::vector<float>{0.f, 3.f, 6.f});
  CHECK(host(ramp(2)) == std::vector<float>{0.f, 1.f});  // host reads work again
}

TEST_CASE("freeze errors: an array captured by the callable is an implicit input",
          "[freeze][error]") {
  fresh();
  Float captured = ramp(4, 10.f);
  ff::eval(captured);
  ff::FreezeOptions o;
  o.name = "capturer";
  auto f = ff::freeze([&](const Float& x) { return x + captured; }, o);
  REQUIRE_THROWS_AS(f(ramp(4)), ff::FreezeError);
  REQUIRE_THROWS_WITH(f(ramp(4)), Contains("capturer") && Contains("implicit input"));
  // Scalars captured by the callable are part of its body: baked in.
  float k = 2.f;
  auto g = ff::freeze([k](const Float& x) { return x * k; });
  CHECK(host(g(ramp(3))) == std::vector<float>{0.f, 2.f, 4.f});
}

TEST_CASE("freeze errors: the body's own exception propagates unchanged, the next call records",
          "[freeze][error]") {
  fresh();

  struct Boom {
    int code;
  };

  bool fail = true;
  auto f = ff::freeze([&](Float& x, const Float& y) {
    ff::scatter(x, y, ff::arange<UInt32>(2));  // pending when the body throws
    if (fail)
      throw Boom{42};
    return x * 2.f;
  });
  Float x = ramp(4);
  ff::eval(x);
  uint64_t baseline = live_bytes();
  try {
    f(x, ramp(2, 1.f, 5.f));
    FAIL("no exception");
  } catch (const Boom& b) {
    CHECK(b.code == 42);
  }
  CHECK(f.n_recordings() == 0);
  CHECK(live_bytes() == baseline);
  fail = false;
  Float y = f(x, ramp(2, 1.f, 5.f));
  CHECK(f.n_recordings() == 1);
  CHECK(host(y) == std::vector<float>{10.f, 12.f, 4.f, 6.f});
  Float x2 = ramp(3);
  CHECK(host(f(x2, ramp(2, 1.f, 7.f))) == std::vector<float>{14.f, 16.f, 4.f});
  CHECK(f.n_replays() == 1);
}

TEST_CASE("freeze errors: a replay that fails leaves the caller's arguments untouched",
          "[freeze][error]") {
  fresh();
  // Recorded with y of 4 elements: the gather bound is y's width, the scatter target x's.
  auto f = ff::freeze([](Float& x, const Float& y) {
    UInt32 i = ff::arange<UInt32>(ff::width(x) - 2);
    ff::scatter(x, ff::gather<Float>(y, i), i);
    return ff::sum(x);
  });
  Float x = ramp(6);
  ff::eval(x);
  f(x, ramp(6, 2.f));
  Float x2 = ramp(1);
  ff::eval(x2);
  Float keep = x2;
  CHECK_THROWS_AS(f(x2, ramp(1)), ff::Error);  // width - 2 below zero at replay
  CHECK(x2.id() == keep.id());
  CHECK(host(x2) == std::vector<float>{0.f});
  CHECK(host(f(x, ramp(6, 2.f)))[0] == 0.f + 2.f + 4.f + 6.f + 4.f + 5.f);  // works again
}

TEST_CASE("freeze verify: replays are checked against the traced body", "[freeze][verify]") {
  fresh();
  ff::FreezeOptions o;
  o.verify = 1;
  o.name = "checked";
  auto good = ff::freeze(
      [](Float& acc, const Float& x) {
        ff::scatter_add(acc, x, ff::arange<UInt32>(ff::width(x)) % 3u);
        return ff::sum(x) * 0.5f;
      },
      o);
  for (size_t n : {100, 7, 300}) {
    Float acc = ff::zeros<Float>(3);
    ff::make_opaque(acc);
    Float r = good(acc, ramp(n, 0.1f));
    CHECK(host(acc)[0] > 0.f);
    (void)r;
  }
  CHECK(good.n_replays() == 2);

  // A captured scalar that changes is baked in: the replay is stale, and verify says where.
  float k = 1.f;
  auto stale = ff::freeze([&k](const Float& x) { return std::pair{x, x * k}; }, o);
  stale(ramp(4));
  k = 2.f;
  REQUIRE_THROWS_AS(stale(ramp(4)), ff::FreezeError);
  REQUIRE_THROWS_WITH(stale(ramp(4)), Contains("frozen function 'checked'") && Contains("verify") &&
                                          Contains("result[1]") && Contains("index 1") &&
                                          Contains("the replay gave 1,") &&
                                          Contains("the traced run 2"));
}

TEST_CASE("freeze verify: every Nth replay", "[freeze][verify]") {
  fresh();
  ff::FreezeOptions o;
  o.verify = 3;
  float k = 1.f;
  auto f = ff::freeze([&k](const Float& x) { return x * k; }, o);
  f(ramp(4));  // recorded
  k = 5.f;
  f(ramp(4));                                    // replay 1: not checked
  f(ramp(4));                                    // replay 2
  CHECK_THROWS_AS(f(ramp(4)), ff::FreezeError);  // replay 3: checked
}

TEST_CASE("freeze verify: FF_FREEZE_VERIFY turns it on for every frozen function",
          "[freeze][verify]") {
  fresh();
  float k = 1.f;
  auto body = [&k](const Float& x) { return x * k; };
  ::setenv("FF_FREEZE_VERIFY", "2", 1);
  auto f = ff::freeze(body);
  ::setenv("FF_FREEZE_VERIFY", "twice", 1);
  REQUIRE_THROWS_WITH(ff::freeze(body), Contains("FF_FREEZE_VERIFY") && Contains("twice"));
  ::setenv("FF_FREEZE_VERIFY", "-1", 1);
  REQUIRE_THROWS_AS(ff::freeze(body), ff::Error);
  ::unsetenv("FF_FREEZE_VERIFY");
  auto unchecked = ff::freeze(body);
  f(ramp(4));
  unchecked(ramp(4));
  k = 3.f;
  f(ramp(4));                                    // replay 1
  CHECK_THROWS_AS(f(ramp(4)), ff::FreezeError);  // replay 2: checked
  for (int i = 0; i < 4; ++i)
    CHECK(host(unchecked(ramp(4)))[1] == 1.f);  // stale, as documented: verify is off here
}

TEST_CASE("freeze: warn_after logs once, naming what changed", "[freeze][warn]") {
  fresh();
  LogCapture log(ff::logging::record());
  ff::FreezeOptions o;
  o.warn_after = 3;
  o.name = "drifting";
  auto f = ff::freeze([](const Float& x, int k) { return x + static_cast<float>(k); }, o);
  for (int k = 0; k < 3; ++k)
    f(ramp(3), k);
  CHECK(log.str().find("drifting") == std::string::npos);
  f(ramp(3), 3);  // the 4th recording = warn_after + 1
  CHECK_THAT(log.str(), Contains("frozen function 'drifting'") && Contains("args[1]") &&
                            Contains("value") && Contains("-> value 3"));
  std::string once = log.str();
  f(ramp(3), 4);
  CHECK(log.str() == once);  // one warning only
}

TEST_CASE("freeze: a changed literal is logged with its path", "[freeze][warn]") {
  fresh();
  ff::set_log_level(ff::LogLevel::Info);
  LogCapture log(ff::logging::record());
  Particle p{ramp(3), ramp(3), 1};
  auto f = ff::freeze([](const Particle& q, const Float& t) { return q.pos + q.vel * t; });
  f(p, Float(1.f));
  f(p, Float(2.f));
  ff::set_log_level(ff::LogLevel::Warn);
  CHECK_THAT(log.str(), Contains("args[1]") && Contains("made opaque"));
}

TEST_CASE(
    "freeze threads: concurrent callers replay, and run traced while a recording is in "
    "progress",
    "[freeze][threads]") {
  fresh();
  std::atomic<int> bodies{0};
  auto f = ff::freeze([&](const Float& x) {
    ++bodies;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // keep the recording open
    return x * 2.f + 1.f;
  });
  Float shared_input = ramp(64);  // made here, used on every thread
  ff::eval(shared_input);
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 6; ++t)
    threads.emplace_back([&, t] {
      for (int k = 0; k < 5; ++k) {
        Float x = k % 2 ? shared_input : ramp(16 + static_cast<size_t>(t), 1.f);
        std::vector<float> y = f(x).to_vector();
        for (size_t i = 0; i < y.size(); ++i)
          if (y[i] != static_cast<float>(i) * 2.f + 1.f)
            ++wrong;
      }
    });
  for (auto& t : threads)
    t.join();
  CHECK(wrong == 0);
  // One recording; a call that came while it was open ran the body traced (no waiting: see
  // the test below), every other call replayed. How many came meanwhile depends on timing.
  CHECK(f.n_recordings() == 1);
  CHECK(bodies >= 1);
  CHECK(static_cast<size_t>(bodies) + f.n_replays() == 30);
}

TEST_CASE(
    "freeze threads: a body that hands its own kind of call to a worker and joins it "
    "does not deadlock",
    "[freeze][threads]") {
  fresh();
  std::function<Float(const Float&)> call;
  std::atomic<int> depth{0};
  Float side;                  // what the worker's call returned (kept outside the recording)
  Float other = ramp(8, 2.f);  // what the worker passes (the recording never reads it)
  auto body = [&](const Float& x) {
    if (depth++ == 0) {  // the recording call: the same kind of call, on a worker, joined
      std::thread worker([&] { side = call(other); });
      worker.join();
    }
    return x * 2.f + 1.f;
  };
  auto f = ff::freeze(body);
  call = [&](const Float& x) { return f(x); };
  std::vector<float> got = host(f(ramp(8)));
  std::vector<float> from_worker = host(side);  // traced there, as the traced program would
  REQUIRE(got.size() == 8);
  REQUIRE(from_worker.size() == 8);
  for (size_t i = 0; i < 8; ++i) {
    CHECK(got[i] == static_cast<float>(i) * 2.f + 1.f);
    CHECK(from_worker[i] == static_cast<float>(i) * 4.f + 1.f);
  }
  CHECK(f.n_recordings() == 1);
  CHECK(host(f(ramp(3))) == std::vector<float>{1.f, 3.f, 5.f});  // replays
  CHECK(f.n_replays() == 1);
  CHECK(depth == 2);  // the recording call and the worker's traced one
}

TEST_CASE("PCG32: lane i follows the reference generator's stream initseq + i", "[freeze][pcg]") {
  fresh();
  ff::PCG32 rng;
  rng.seed(5, 42, 54);
  std::vector<RefPcg> ref;
  for (uint64_t i = 0; i < 5; ++i)
    ref.emplace_back(42, 54 + i);
  for (int draw = 0; draw < 4; ++draw) {
    std::vector<uint32_t> got = rng.next_uint32().to_vector();
    for (size_t i = 0; i < 5; ++i)
      CHECK(got[i] == ref[i].next());
  }
  std::vector<float> u = rng.next_float().to_vector();
  for (size_t i = 0; i < 5; ++i)
    CHECK(u[i] == static_cast<float>(ref[i].next() >> 9) * (1.f / 8388608.f));
  CHECK(RefPcg(42, 54).next() == 0xa15c02b7u);  // pcg32-demo's first output for this seed
}

TEST_CASE("PCG32: a frozen Monte Carlo step advances the caller's generator like a traced one",
          "[freeze][pcg]") {
  fresh();
  auto step = [](ff::PCG32& rng, const Float& radius) {
    Float x = rng.next_float(), y = rng.next_float();
    Float inside = ff::select(x * x + y * y < radius * radius, Float(1.f), Float(0.f));
    return ff::sum(inside);
  };
  auto f = ff::freeze(step);
  ff::PCG32 a, b;
  a.seed(1000, 7, 11);
  b.seed(1000, 7, 11);
  Float r = Float(1.f);
  ff::make_opaque(r);
  double hits_a = 0, hits_b = 0;
  for (int k = 0; k < 20; ++k) {
    hits_a += f(a, r).to_vector()[0];
    hits_b += step(b, r).to_vector()[0];
  }
  CHECK(hits_a == hits_b);
  CHECK(a.state.to_vector() == b.state.to_vector());
  CHECK(f.n_recordings() == 1);
  CHECK(f.n_replays() == 19);
  double pi = 4.0 * hits_a / 20000.0;
  CHECK(std::abs(pi - 3.14159) < 0.05);
}
