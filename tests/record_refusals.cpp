// What ff::record and Recording::replay refuse (ff::FreezeError naming the cause), size guards
// (ff::GuardError at replay when the recorded path would differ, early and late), and
// data-dependent sizes (compress) replayed with other counts. After every refusal the next
// recording works and no buffer is left behind (bytes_allocated returns to its baseline; the
// suite also runs under ASan/LSan).
#include <algorithm>
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "support/errors.h"
#include "support/record_corpus.h"

using namespace ffr;
using ff::AnyArray;
using ff::Float;
using ff::Int32;
using ff::UInt32;

namespace {

Float floats(const std::vector<float>& v) {
  return Float::from(v);
}

std::vector<float> iota_floats(size_t n, float scale = 1.f) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = static_cast<float>(i) * scale;
  return v;
}

/// A recording made and replayed right after a refusal: the recorder is usable again.
void next_recording_works() {
  Float a = floats(iota_floats(64));
  ff::Recording r = ff::record({a}, [&] { return Inputs{a * 3.f + 1.f}; });
  Float b = floats(iota_floats(100, 0.5f));
  Inputs outs = r.replay({b});
  REQUIRE(outs.size() == 1);
  std::vector<float> got = outs[0].as<Float>().to_vector();
  REQUIRE(got.size() == 100);
  for (size_t i = 0; i < got.size(); ++i)
    REQUIRE(got[i] == static_cast<float>(i) * 0.5f * 3.f + 1.f);
  // Host reads outside any recording work again (no scope was left open).
  REQUIRE(a.to_vector()[3] == 3.f);
}

uint64_t live_bytes() {
  ff::sync();
  return ff::stats().bytes_allocated;
}

}  // namespace

// ------------------------------------------------------------------------------------------
// Refusals while recording

TEST_CASE("refuse: host read (to_vector) inside the recorded function", "[record][refusal]") {
  fresh();
  Float x = floats(iota_floats(1000));
  uint64_t baseline = live_bytes();
  {
    auto body = [&] {
      Float y = x * 2.f;
      std::vector<float> host = y.to_vector();  // refused: cannot be replayed
      return Inputs{y + host[0]};
    };
    REQUIRE_THROWS_EXACTLY(ff::record({x}, body), ff::FreezeError);
    REQUIRE_THROWS_WITH(ff::record({x}, body),
                        Contains("reading array contents on the host") && Contains("to_vector"));
  }
  REQUIRE(live_bytes() == baseline);
  next_recording_works();
}

TEST_CASE("refuse: implicit input (an evaluated array from outside)", "[record][refusal]") {
  fresh();
  Float x = floats(iota_floats(1000));
  Float outside = floats(iota_floats(1000, 2.f));
  ff::eval(outside);
  uint64_t baseline = live_bytes();

  SECTION("read by a kernel") {
    auto body = [&] { return Inputs{x + outside}; };
    REQUIRE_THROWS_EXACTLY(ff::record({x}, body), ff::FreezeError);
    REQUIRE_THROWS_WITH(ff::record({x}, body), Contains("implicit input"));
  }
  SECTION("read by a reduction") {
    auto body = [&] { return Inputs{x * ff::sum(outside)}; };
    REQUIRE_THROWS_EXACTLY(ff::record({x}, body), ff::FreezeError);
    REQUIRE_THROWS_WITH(ff::record({x}, body), Contains("implicit input"));
  }
  SECTION("the target of a scatter") {
    auto body = [&] {
      Float target = outside;  // a second handle: the scatter copies the outside buffer
      ff::scatter(target, x, ff::arange<UInt32>(ff::width(x)));
      return Inputs{target};
    };
    REQUIRE_THROWS_EXACTLY(ff::record({x}, body), ff::FreezeError);
    REQUIRE_THROWS_WITH(ff::record({x}, body), Contains("implicit input"));
    REQUIRE(outside.to_vector() == iota_floats(1000, 2.f));
  }
  SECTION("the source of a gather") {
    auto body = [&] {
      return Inputs{ff::gather<Float>(outside, ff::arange<UInt32>(ff::width(x)))};
    };
    REQUIRE_THROWS_EXACTLY(ff::record({x}, body), ff::FreezeError);
    REQUIRE_THROWS_WITH(ff::record({x}, body), Contains("implicit input"));
  }
  REQUIRE(live_bytes() == baseline);
  next_recording_works();
  // Passed as an input, the same array records fine.
  ff::Recording r = ff::record({x, outside}, [&] { return Inputs{x + outside}; });
  Inputs outs = r.replay({floats({1.f, 2.f}), floats({10.f, 20.f})});
  REQUIRE(outs[0].as<Float>().to_vector() == std::vector<float>{11.f, 22.f});
}

TEST_CASE("refuse: a size that evaluates below zero at replay", "[record][refusal]") {
  fresh();
  Float x10 = floats(iota_floats(10));
  ff::Recording r = ff::record({x10}, [&] {
    UInt32 i = ff::arange<UInt32>(ff::width(x10) - 5);
    return Inputs{ff::gather<Float>(x10, i + 5u) * 2.f};
  });

  Float x3 = floats(iota_floats(3));
  // Traced, the tracer's Size arithmetic refuses the negative size itself...
  REQUIRE_THROWS_EXACTLY((void)(ff::width(x3) - 5), ff::Error);
  REQUIRE_THROWS_WITH((void)(ff::width(x3) - 5), Contains("negative"));
  // ...at replay the recorded expression width(x) - 5 goes below zero: refused.
  uint64_t baseline = live_bytes();
  REQUIRE_THROWS_EXACTLY(r.replay({x3}), ff::FreezeError);
  REQUIRE_THROWS_WITH(r.replay({x3}), Contains("below zero"));
  REQUIRE(live_bytes() == baseline);
  REQUIRE(x3.to_vector() == iota_floats(3));

  // Sizes where it is defined still replay (5 -> empty, 12 -> 7 elements).
  REQUIRE(r.replay({floats(iota_floats(5))})[0].size().value() == 0);
  std::vector<float> got = r.replay({floats(iota_floats(12))})[0].as<Float>().to_vector();
  REQUIRE(got == std::vector<float>{10.f, 12.f, 14.f, 16.f, 18.f, 20.f, 22.f});
  next_recording_works();
}

TEST_CASE("refuse: replay with the wrong number of inputs or element type", "[record][refusal]") {
  fresh();
  Float x = floats(iota_floats(100));
  Int32 i = Int32::from(std::vector<int32_t>(100, 3));
  ff::Recording r = ff::record({x, i}, [&] { return Inputs{x * ff::cast<Float>(i)}; });
  REQUIRE(r.n_inputs() == 2);
  Float wrong = floats(iota_floats(100));
  uint64_t baseline = live_bytes();

  REQUIRE_THROWS_EXACTLY(r.replay({x}), ff::FreezeError);
  REQUIRE_THROWS_WITH(r.replay({x}), Contains("1 inputs given") && Contains("takes 2"));
  REQUIRE_THROWS_EXACTLY(r.replay({x, i, i}), ff::FreezeError);
  REQUIRE_THROWS_WITH(r.replay({x, i, i}), Contains("3 inputs given"));

  REQUIRE_THROWS_EXACTLY(r.replay({x, wrong}), ff::FreezeError);
  REQUIRE_THROWS_WITH(r.replay({x, wrong}), Contains("input 1") && Contains("element type") &&
                                                Contains("float32") && Contains("int32"));
  REQUIRE_THROWS_EXACTLY(r.replay({i, x}), ff::FreezeError);
  REQUIRE_THROWS_WITH(r.replay({i, x}), Contains("input 0") && Contains("element type"));
  REQUIRE_THROWS_EXACTLY(r.replay({x, AnyArray()}), ff::FreezeError);
  REQUIRE(live_bytes() == baseline);

  Inputs outs = r.replay({x, i});
  REQUIRE(outs[0].as<Float>().to_vector()[7] == 21.f);
  next_recording_works();
}

TEST_CASE("refuse: replay that breaks the recorded input aliasing", "[record][refusal]") {
  fresh();
  Float a = floats(iota_floats(50));
  Float b = floats(iota_floats(50, 2.f));
  ff::Recording same = ff::record({a, a}, [&] { return Inputs{a * a + 1.f}; });
  ff::Recording distinct = ff::record({a, b}, [&] { return Inputs{a * b + 1.f}; });
  uint64_t baseline = live_bytes();
  // Recorded as one array, replayed with two: refused (the kernels read one buffer).
  REQUIRE_THROWS_EXACTLY(same.replay({a, b}), ff::FreezeError);
  REQUIRE_THROWS_WITH(same.replay({a, b}), Contains("were one array when recorded"));
  // Recorded as two arrays, replayed with one passed twice: refused as well.
  REQUIRE_THROWS_EXACTLY(distinct.replay({a, a}), ff::FreezeError);
  REQUIRE_THROWS_WITH(distinct.replay({a, a}), Contains("were distinct when recorded"));
  REQUIRE(live_bytes() == baseline);
  REQUIRE(same.replay({b, b})[0].as<Float>().to_vector()[3] == 37.f);
  REQUIRE(distinct.replay({b, a})[0].as<Float>().to_vector()[3] == 19.f);
  next_recording_works();
}

TEST_CASE("refuse: an empty AnyArray as input or output", "[record][refusal]") {
  fresh();
  Float x = floats(iota_floats(10));
  REQUIRE_THROWS_EXACTLY(ff::record({AnyArray()}, [&] { return Inputs{x}; }), ff::FreezeError);
  REQUIRE_THROWS_WITH(ff::record({x}, [&] { return Inputs{AnyArray()}; }),
                      Contains("empty AnyArray"));
  next_recording_works();
}

TEST_CASE("refusals in a row leave nothing behind", "[record][refusal]") {
  fresh();
  Float x = floats(iota_floats(500));
  Float outside = floats(iota_floats(500));
  ff::eval(outside);
  uint64_t baseline = live_bytes();
  for (int round = 0; round < 3; ++round) {
    REQUIRE_THROWS_EXACTLY(ff::record({x},
                                      [&] {
                                        Float y = x * 2.f;
                                        ff::eval(y);
                                        (void)y.to_vector();
                                        return Inputs{y};
                                      }),
                           ff::FreezeError);
    REQUIRE_THROWS_EXACTLY(ff::record({x},
                                      [&] {
                                        Float y = x * 2.f;
                                        ff::eval(y);
                                        return Inputs{y * outside};
                                      }),
                           ff::FreezeError);
    REQUIRE(live_bytes() == baseline);
  }
  next_recording_works();
}

// ------------------------------------------------------------------------------------------
// Guards

TEST_CASE("guard: a branch on x.size() > 100", "[record][guard]") {
  fresh();
  auto body_for = [](const Float& x) {
    return [x] {
      if (x.size() > 100)
        return Inputs{x * 2.f};
      return Inputs{x * 3.f};
    };
  };
  Float x200 = floats(iota_floats(200));
  ff::Recording r = ff::record({x200}, body_for(x200));
  INFO(r.to_string());
  REQUIRE_THAT(r.to_string(), Contains("size(s0) > 100 is true"));

  Float x50 = floats(iota_floats(50));
  uint64_t baseline = live_bytes();
  REQUIRE_THROWS_EXACTLY(r.replay({x50}), ff::GuardError);
  REQUIRE_THROWS_AS(r.replay({x50}), ff::FreezeError);  // a GuardError is a FreezeError
  // The message names the comparison, the recorded and the new values, and what to do.
  REQUIRE_THROWS_WITH(r.replay({x50}), Contains("size comparison >") && Contains("100") &&
                                           Contains("200") && Contains("50") &&
                                           Contains("record this path anew"));
  REQUIRE(live_bytes() == baseline);
  REQUIRE(x50.to_vector() == iota_floats(50));
  // The boundary: 100 > 100 is false (another path), 101 > 100 takes the recorded one.
  REQUIRE_THROWS_EXACTLY(r.replay({floats(iota_floats(100))}), ff::GuardError);

  for (size_t n : {101u, 300u}) {
    Inputs outs = r.replay({floats(iota_floats(n))});
    std::vector<float> got = outs[0].as<Float>().to_vector();
    REQUIRE(got.size() == n);
    for (size_t k = 0; k < n; ++k)
      REQUIRE(got[k] == static_cast<float>(k) * 2.f);
  }
  // The other path, recorded anew, replays for small sizes.
  ff::Recording small = ff::record({x50}, body_for(x50));
  Inputs outs = small.replay({floats(iota_floats(7))});
  REQUIRE(outs[0].as<Float>().to_vector() == iota_floats(7, 3.f));
  REQUIRE_THROWS_EXACTLY(small.replay({floats(iota_floats(300))}), ff::GuardError);
}

namespace {

/// Scatters -1 into the first half of the input (in place: the function holds the only
/// reference), then branches on whether any entry of the result exceeds 0.5.
Inputs scatter_then_branch(Inputs& in) {
  Float x = take<Float>(in, 0);
  ff::scatter(x, -1.f, ff::arange<UInt32>(ff::width(x) / 2));
  ff::eval(x);
  UInt32 idx = ff::compress(x > 0.5f);
  if (idx.size() == 0)
    return {x, ff::zeros<Float>(1)};
  return {x, ff::gather<Float>(x, idx) * 2.f};
}

std::vector<float> expected_scattered(std::vector<float> v) {
  for (size_t i = 0; i < v.size() / 2; ++i)
    v[i] = -1.f;
  return v;
}

}  // namespace

TEST_CASE("guard: a size guard after compress fails late and leaves the inputs untouched",
          "[record][guard]") {
  fresh();
  const size_t n = 1000;
  std::vector<float> some(n), none(n, 0.25f);
  for (size_t i = 0; i < n; ++i)
    some[i] = static_cast<float>(i % 10) / 10.f;  // 0.0 .. 0.9

  ff::Recording r;
  {
    Inputs rec_in{floats(some)};
    r = ff::record(rec_in, [&] { return scatter_then_branch(rec_in); });
  }
  INFO(r.to_string());
  REQUIRE_THAT(r.to_string(), Contains("== 0 is false"));  // the branch on the compress count

  SECTION("replayed with no true entries: GuardError after the scatter ran") {
    Float x = floats(none);
    uint64_t baseline = live_bytes();
    REQUIRE_THROWS_EXACTLY(r.replay({x}), ff::GuardError);
    REQUIRE_THROWS_WITH(r.replay({x}), Contains("== 0") && Contains("record this path anew"));
    // Late failure: the scatter into the input ran, but into the replayer's copy.
    REQUIRE(x.to_vector() == none);
    REQUIRE(live_bytes() == baseline);
  }
  SECTION("replayed with other true entries: works, the input is unchanged") {
    std::vector<float> other(777);
    for (size_t i = 0; i < other.size(); ++i)
      other[i] = (i % 3 == 0) ? 0.75f : 0.5f;
    Float x = floats(other);
    Inputs outs = r.replay({x});
    REQUIRE(x.to_vector() == other);
    std::vector<float> updated = expected_scattered(other);
    REQUIRE(outs[0].as<Float>().to_vector() == updated);
    std::vector<float> want;
    for (float v : updated)
      if (v > 0.5f)
        want.push_back(v * 2.f);
    REQUIRE(!want.empty());
    REQUIRE(outs[1].as<Float>().to_vector() == want);
  }
  SECTION("the branch recorded with no true entries refuses inputs that have some") {
    ff::Recording r0;
    {
      Inputs rec_in{floats(none)};
      r0 = ff::record(rec_in, [&] { return scatter_then_branch(rec_in); });
    }
    Float x = floats(some);
    REQUIRE_THROWS_EXACTLY(r0.replay({x}), ff::GuardError);
    REQUIRE(x.to_vector() == some);
    Inputs outs = r0.replay({floats(std::vector<float>(30, 0.1f))});
    REQUIRE(outs[1].as<Float>().to_vector() == std::vector<float>{0.f});
  }
  next_recording_works();
}

// ------------------------------------------------------------------------------------------
// Data-dependent sizes

TEST_CASE("data-dependent sizes: compress replays with other counts", "[record][compress]") {
  fresh();
  auto body = [](const Float& x, const Float& y) {
    UInt32 idx = ff::compress(x > 0.5f);
    Float g = ff::gather<Float>(x, idx) * 2.f + ff::gather<Float>(y, idx);
    return Inputs{g + ff::cast<Float>(idx), idx, ff::sum(g)};
  };
  auto host_expected = [](const std::vector<float>& x, const std::vector<float>& y) {
    std::vector<float> g, gi;
    std::vector<uint32_t> idx;
    for (size_t i = 0; i < x.size(); ++i)
      if (x[i] > 0.5f) {
        idx.push_back(static_cast<uint32_t>(i));
        g.push_back(x[i] * 2.f + y[i]);
        gi.push_back(x[i] * 2.f + y[i] + static_cast<float>(i));
      }
    return std::tuple{gi, idx, g};
  };
  auto data = [](size_t n, size_t period, size_t phase) {
    std::vector<float> v(n);
    for (size_t i = 0; i < n; ++i)
      v[i] = ((i + phase) % period == 0) ? 0.875f : 0.125f;
    return v;
  };

  std::vector<float> x0 = data(1000, 2, 0), y0 = iota_floats(1000, 0.25f);
  Float rx = floats(x0), ry = floats(y0);
  ff::Recording r = ff::record({rx, ry}, [&] { return body(rx, ry); });
  const size_t n_ops = r.n_ops();

  struct Trial {
    size_t n, period, phase;
  };

  // 500 true entries when recorded; now 1000/3, none, all, one, 0 of 1.
  for (Trial t : {Trial{1000, 3, 1}, Trial{1000, 1000000, 1}, Trial{1000, 1, 0},
                  Trial{4001, 4001, 0}, Trial{1, 2, 1}, Trial{1234, 7, 3}}) {
    INFO("n = " << t.n << ", every " << t.period << "th entry true");
    std::vector<float> x = data(t.n, t.period, t.phase), y = iota_floats(t.n, 0.5f);
    auto [want_gi, want_idx, want_g] = host_expected(x, y);
    Float fx = floats(x), fy = floats(y);
    ff::Stats s0 = ff::stats();
    Inputs outs = r.replay({fx, fy});
    ff::Stats s1 = ff::stats();
    CHECK(s1.compiles == s0.compiles);
    CHECK(s1.traced_kernels == s0.traced_kernels);
    REQUIRE(outs[0].as<Float>().to_vector() == want_gi);
    REQUIRE(outs[1].as<UInt32>().to_vector() == want_idx);
    float sum = outs[2].as<Float>().to_vector().at(0);
    double want_sum = 0;
    for (float v : want_g)
      want_sum += v;
    REQUIRE(sum == Approx(want_sum).epsilon(1e-5).margin(1e-3));
    // The same inputs run traced agree too.
    Inputs traced = body(fx, fy);
    require_same(snapshot(outs), snapshot(traced), "replay vs traced");
  }
  REQUIRE(r.n_ops() == n_ops);  // one recording served every count
}
