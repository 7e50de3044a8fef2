// Sizes and guards that never lie: a recording made at one size and replayed at another gives
// exactly what the traced function gives at that size (sizes included), or refuses with
// ff::GuardError (ff::FreezeError where the traced function fails too) — never a result of
// another size. One section per class of size decision (docs/size-provenance.md), each
// recorded at the edges (0, 1) and replayed at 0, 1, 2, primes and larger sizes.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <functional>
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

using Body = std::function<Inputs(const Inputs&)>;

Float ramp(size_t n, float scale = 1.f) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = 1.f + static_cast<float>(i) * scale;
  return Float::from(v);
}

/// Inputs of the given sizes, one float ramp each.
Inputs ramps(const std::vector<size_t>& sizes) {
  Inputs in;
  for (size_t k = 0; k < sizes.size(); ++k)
    in.push_back(ramp(sizes[k], 0.5f + static_cast<float>(k)));
  return in;
}

/// What a replay at `sizes` did.
enum class Outcome { Same, Refused };

/// Records `body` with inputs of `rec_sizes`, then checks a replay at `sizes` against the
/// traced body: equal results, or ff::GuardError (ff::FreezeError when tracing fails too).
Outcome replay_vs_traced(const ff::Recording& r, const Body& body,
                         const std::vector<size_t>& sizes) {
  std::string where;
  for (size_t n : sizes)
    where += (where.empty() ? "" : ", ") + std::to_string(n);
  INFO("replayed with input sizes " << where);
  std::vector<HostArray> want;
  bool traced_ok = true;
  try {
    want = snapshot(body(ramps(sizes)));
  } catch (const ff::Error&) {
    traced_ok = false;
  }
  Inputs ins = ramps(sizes);
  if (!traced_ok) {
    REQUIRE_THROWS_AS(r.replay(ins),
                      ff::FreezeError);  // or its subclass GuardError: either refusal is right
    return Outcome::Refused;
  }
  try {
    require_same(snapshot(r.replay(ins)), want, "replay vs traced");
    return Outcome::Same;
  } catch (const ff::GuardError&) {
    return Outcome::Refused;
  }
}

ff::Recording record_at(const Body& body, const std::vector<size_t>& sizes) {
  Inputs in = ramps(sizes);
  return ff::record(in, [&] { return body(in); });
}

/// Replays at every single-input size of `sizes`; returns how many gave the traced result.
size_t sweep(const ff::Recording& r, const Body& body, const std::vector<size_t>& sizes) {
  size_t same = 0;
  for (size_t n : sizes)
    same += replay_vs_traced(r, body, {n}) == Outcome::Same;
  return same;
}

const std::vector<size_t> kSizes = {0, 1, 2, 3, 7, 13, 101, 1000};

std::string guard_error(const ff::Recording& r, const Inputs& ins) {
  try {
    r.replay(ins);
  } catch (const ff::GuardError& e) {
    return e.what();
  }
  FAIL("the replay did not raise ff::GuardError");
  return {};
}

}  // namespace

// ------------------------------------------------------------------------------------------
// Class 1: every operand of size 1 while recording

TEST_CASE("sizes: a function recorded where every operand has size 1 replays at every size",
          "[record][size]") {
  fresh();
  std::vector<std::pair<const char*, Body>> bodies = {
      {"x * 3", [](const Inputs& in) { return Inputs{in[0].as<Float>() * 3.f}; }},
      {"x * sqrt(x)",
       [](const Inputs& in) {
         Float x = in[0].as<Float>();
         return Inputs{x * ff::sqrt(x)};
       }},
      {"gather of even elements, (width + 1) / 2",
       [](const Inputs& in) {
         Float x = in[0].as<Float>();
         UInt32 idx = ff::arange<UInt32>((ff::width(x) + 1) / 2) * 2u;
         return Inputs{ff::gather<Float>(x, idx)};
       }},
      {"x + arange(1) (a constant size 1 broadcasts)",
       [](const Inputs& in) {
         Float x = in[0].as<Float>();
         return Inputs{x + ff::cast<Float>(ff::arange<UInt32>(1)) * 10.f};
       }},
      {"x + arange(width(x))",
       [](const Inputs& in) {
         Float x = in[0].as<Float>();
         return Inputs{x + ff::cast<Float>(ff::arange<UInt32>(ff::width(x)))};
       }},
  };
  for (auto& [name, body] : bodies) {
    INFO(name);
    ff::Recording r = record_at(body, {1});
    CHECK(sweep(r, body, kSizes) == kSizes.size());  // none of these has a size decision
  }
}

TEST_CASE("sizes: two size-1 operands recorded equal must stay equal (broadcast is a guard)",
          "[record][size]") {
  fresh();
  Body body = [](const Inputs& in) { return Inputs{in[0].as<Float>() * in[1].as<Float>()}; };
  ff::Recording r = record_at(body, {1, 1});
  CHECK(replay_vs_traced(r, body, {5, 5}) == Outcome::Same);
  CHECK(replay_vs_traced(r, body, {0, 0}) == Outcome::Same);
  // x of 5 with y of 1 broadcasts y when traced: another kernel, so the recording refuses.
  CHECK(replay_vs_traced(r, body, {5, 1}) == Outcome::Refused);
  CHECK_THAT(guard_error(r, ramps({5, 1})), Contains("equal operand sizes in mul"));
  CHECK(replay_vs_traced(r, body, {2, 3}) == Outcome::Refused);  // traced fails too

  // Recorded broadcasting: y of size 1 against x of 4.
  ff::Recording b = record_at(body, {4, 1});
  CHECK(replay_vs_traced(b, body, {9, 1}) == Outcome::Same);
  CHECK(replay_vs_traced(b, body, {1, 1}) == Outcome::Same);
  CHECK(replay_vs_traced(b, body, {9, 9}) == Outcome::Refused);
  CHECK_THAT(guard_error(b, ramps({9, 9})),
             Contains("broadcast of a size-1 operand in mul") && Contains("== 1") && Contains("9"));
}

TEST_CASE("sizes: one guard per size fact, whichever way round and however often decided",
          "[record][size]") {
  fresh();
  // x + y, y * x, x - y, a user's own x.size() == y.size() and y.size() != x.size() + 1: facts
  // size(x) == size(y) (three ways round) and size(y) != size(x) + 1, which is another fact.
  Body body = [](const Inputs& in) {
    Float x = in[0].as<Float>(), y = in[1].as<Float>();
    Float a = x + y, b = y * x, c = x - y;
    bool same = ff::width(x) == ff::width(y);
    bool off = ff::width(y) != ff::width(x) + 1;
    (void)same;
    (void)off;
    return Inputs{a + b + c};
  };
  ff::Recording r = record_at(body, {5, 5});
  INFO(r.to_string());
  CHECK(r.n_guards() == 2);
  CHECK(replay_vs_traced(r, body, {7, 7}) == Outcome::Same);
  CHECK(replay_vs_traced(r, body, {0, 0}) == Outcome::Same);
  // The one guard left still refuses what all of them refused.
  CHECK(replay_vs_traced(r, body, {7, 3}) == Outcome::Refused);
  CHECK(replay_vs_traced(r, body, {3, 7}) == Outcome::Refused);
  // A fact and its negation are different facts: x.size() < 3 false is 3 <= x.size().
  Body branch = [](const Inputs& in) {
    Float x = in[0].as<Float>();
    bool small = ff::width(x) < 3;
    bool big = ff::width(x) >= 3;
    return Inputs{small || !big ? x : x * 2.f};
  };
  ff::Recording g = record_at(branch, {5});
  CHECK(g.n_guards() == 1);
  CHECK(replay_vs_traced(g, branch, {9}) == Outcome::Same);
  CHECK(replay_vs_traced(g, branch, {2}) == Outcome::Refused);
}

// ------------------------------------------------------------------------------------------
// Class 2: operands whose size is a constant

TEST_CASE("sizes: an input combined with a constant-size array is tied to that constant",
          "[record][size]") {
  fresh();
  std::vector<std::tuple<const char*, size_t, Body>> bodies = {
      {"x + arange(5)", 5,
       [](const Inputs& in) {
         return Inputs{in[0].as<Float>() + ff::cast<Float>(ff::arange<UInt32>(5))};
       }},
      {"full(2, 6) * x", 6,
       [](const Inputs& in) { return Inputs{ff::full<Float>(2.f, 6) * in[0].as<Float>()}; }},
      {"zeros(3) - x", 3,
       [](const Inputs& in) { return Inputs{ff::zeros<Float>(3) - in[0].as<Float>()}; }},
  };
  for (auto& [name, n, body] : bodies) {
    INFO(name);
    ff::Recording r = record_at(body, {n});
    size_t same = 0;
    for (size_t m : kSizes)
      same += replay_vs_traced(r, body, {m}) == Outcome::Same;
    // Only n itself gives the traced result (1 broadcasts when traced: another kernel).
    CHECK(same == (std::find(kSizes.begin(), kSizes.end(), n) != kSizes.end() ? 1 : 0));
    CHECK(replay_vs_traced(r, body, {n}) == Outcome::Same);
    // The guard compares two real expressions: the input's width and the constant.
    CHECK_THAT(guard_error(r, ramps({n + 4})), Contains("equal operand sizes in") &&
                                                   Contains(std::to_string(n)) &&
                                                   Contains(std::to_string(n + 4)));
  }
  // Recorded with x of size 1: x broadcasts over the constant.
  Body body = [](const Inputs& in) { return Inputs{ff::full<Float>(2.f, 6) * in[0].as<Float>()}; };
  ff::Recording r = record_at(body, {1});
  CHECK(replay_vs_traced(r, body, {1}) == Outcome::Same);
  CHECK(replay_vs_traced(r, body, {6}) == Outcome::Refused);  // element-wise when traced
  CHECK(replay_vs_traced(r, body, {7}) == Outcome::Refused);  // fails when traced
}

// ------------------------------------------------------------------------------------------
// Class 3: guards never evaluate a missing side as 0

TEST_CASE("sizes: every recorded guard compares two expressions with their recorded values",
          "[record][size]") {
  fresh();
  Body body = [](const Inputs& in) {
    return Inputs{in[0].as<Float>() + ff::cast<Float>(ff::arange<UInt32>(5))};
  };
  ff::Recording r = record_at(body, {5});
  REQUIRE(r.n_guards() == 1);
  std::string text = r.to_string();
  INFO(text);
  CHECK_THAT(text, !Contains("== 0") && Contains("5"));
  std::string e = guard_error(r, ramps({8}));
  CHECK_THAT(e, Contains("was true with 5 and 5") && Contains("is false with 5 and 8"));
}

// ------------------------------------------------------------------------------------------
// Class 4: user size decisions

TEST_CASE("sizes: empty() is a size decision recorded as a guard", "[record][size]") {
  fresh();
  Body body = [](const Inputs& in) {
    Float x = in[0].as<Float>();
    if (x.empty())
      return Inputs{ff::full<Float>(-1.f, 3)};
    return Inputs{x * 2.f};
  };
  ff::Recording full_rec = record_at(body, {4});
  CHECK(replay_vs_traced(full_rec, body, {9}) == Outcome::Same);
  CHECK(replay_vs_traced(full_rec, body, {0}) == Outcome::Refused);
  CHECK_THAT(guard_error(full_rec, ramps({0})), Contains("empty()"));

  ff::Recording empty_rec = record_at(body, {0});
  CHECK(replay_vs_traced(empty_rec, body, {0}) == Outcome::Same);
  CHECK(replay_vs_traced(empty_rec, body, {3}) == Outcome::Refused);
  CHECK_THAT(guard_error(empty_rec, ramps({3})), Contains("empty()"));
}

TEST_CASE("sizes: a branch on a user size comparison names the comparison", "[record][size]") {
  fresh();
  Body body = [](const Inputs& in) {
    Float x = in[0].as<Float>();
    return Inputs{ff::width(x) > 10 ? x * 2.f : x + 1.f};
  };
  ff::Recording r = record_at(body, {20});
  CHECK(replay_vs_traced(r, body, {11}) == Outcome::Same);
  CHECK(replay_vs_traced(r, body, {10}) == Outcome::Refused);
  CHECK_THAT(guard_error(r, ramps({3})), Contains("user size comparison >"));
}

// ------------------------------------------------------------------------------------------
// Class 5: a size converted to a plain integer pins the recording

TEST_CASE("sizes: a plain integer taken from a size pins the recording to that size",
          "[record][size]") {
  fresh();
  ff::set_log_level(ff::LogLevel::Error);  // the warning is expected here
  Body body = [](const Inputs& in) {
    Float x = in[0].as<Float>();
    int n = static_cast<int>(static_cast<size_t>(x.size()));  // provenance lost
    return Inputs{ff::full<Float>(static_cast<float>(n), ff::width(x)) + x};
  };
  for (size_t rec : {0, 1, 6}) {
    INFO("recorded at " << rec);
    ff::Recording r = record_at(body, {rec});
    CHECK(sweep(r, body, kSizes) == (rec == 0 || rec == 1 ? 1 : 0));  // only the pinned size
    CHECK(replay_vs_traced(r, body, {rec}) == Outcome::Same);
    CHECK_THAT(guard_error(r, ramps({rec + 2})), Contains("a size converted to a plain integer"));
  }
  ff::set_log_level(ff::LogLevel::Warn);
}

TEST_CASE("sizes: a size handed to kernels with from_size replays as its expression",
          "[record][size]") {
  fresh();
  Body body = [](const Inputs& in) {
    Float x = in[0].as<Float>();
    ff::Size n = ff::width(x);
    // Per lane, per array of one, and as an integer index bound: none pins the recording.
    UInt32 last = ff::from_size<UInt32>(ff::max(n, 1) - 1);
    Float mean_like = ff::sum(x) / ff::from_size<Float>(n + 1);
    return Inputs{x + ff::from_size<Float>(n * 2 + 1), mean_like,
                  ff::gather<Float>(x, ff::min(ff::arange<UInt32>(n) + 1u, last))};
  };
  for (size_t rec : {0, 1, 6}) {
    INFO("recorded at " << rec);
    ff::Recording r = record_at(body, {rec});
    CHECK(sweep(r, body, kSizes) == kSizes.size());
  }
}

// ------------------------------------------------------------------------------------------
// Class 6: recording at size 0

TEST_CASE("sizes: functions recorded with empty inputs replay at every size", "[record][size]") {
  fresh();
  std::vector<std::pair<const char*, Body>> bodies = {
      {"x * 2 + 1", [](const Inputs& in) { return Inputs{in[0].as<Float>() * 2.f + 1.f}; }},
      {"sum, max_reduce, prefix_sum",
       [](const Inputs& in) {
         Float x = in[0].as<Float>();
         return Inputs{ff::sum(x), ff::prefix_sum(x), x - ff::max_reduce(x)};
       }},
      {"compress selecting what is above 3",
       [](const Inputs& in) {
         Float x = in[0].as<Float>();
         UInt32 idx = ff::compress(x > 3.f);
         return Inputs{ff::gather<Float>(x, idx) * 2.f, ff::sum(ff::gather<Float>(x, idx))};
       }},
      {"scatter into a copy and a host constant",
       [](const Inputs& in) {
         Float x = in[0].as<Float>();
         Float y = ff::zeros<Float>(ff::width(x));
         ff::scatter(y, x, ff::arange<UInt32>(ff::width(x)));
         return Inputs{y + Float::from(std::vector<float>{0.5f}),
                       Float::from(std::vector<float>{})};
       }},
  };
  for (auto& [name, body] : bodies) {
    INFO(name);
    ff::Recording r = record_at(body, {0});
    size_t same = sweep(r, body, kSizes);
    // "x - max_reduce(x)" broadcasts a size-1 result: sizes > 1 take another kernel.
    CHECK(same >= 2);
    if (std::string(name) != "sum, max_reduce, prefix_sum")
      CHECK(same == kSizes.size());
  }
}

TEST_CASE("sizes: a compress that selects nothing while recording replays with selections",
          "[record][size]") {
  fresh();
  Body body = [](const Inputs& in) {
    Float x = in[0].as<Float>();
    UInt32 idx = ff::compress(x > 1000.f);
    return Inputs{ff::gather<Float>(x, idx) + 1.f, ff::cast<Float>(idx)};
  };
  ff::Recording r = record_at(body, {50});  // ramp values stay below 1000: selects nothing
  // Larger ramps select their tails; each replay matches the traced result.
  for (size_t n : {0, 1, 1500, 2003, 5000}) {
    INFO(n);
    CHECK(replay_vs_traced(r, body, {n}) == Outcome::Same);
  }
  auto outs = r.replay(ramps({5000}));
  CHECK(outs[0].size() == 5000 - 1999);  // values 1 + 0.5 i > 1000 from i = 1999
}

// ------------------------------------------------------------------------------------------
// Class 7: a failed recording leaves nothing behind

TEST_CASE("sizes: a user exception with a scatter pending leaves no work for the next recording",
          "[record][size]") {
  fresh();
  Float x = ramp(8);

  struct Boom {};

  REQUIRE_THROWS_EXACTLY(ff::record({x},
                                    [&] {
                                      Float y = ff::zeros<Float>(ff::width(x));
                                      ff::scatter(y, x, ff::arange<UInt32>(ff::width(x)));
                                      throw Boom{};
                                      return Inputs{y};
                                    }),
                         Boom);
  // The next recording neither fails on the dropped scatter nor records it.
  Float z = ramp(8);
  ff::Recording r = ff::record({z}, [&] { return Inputs{z * 2.f}; });
  CHECK(r.n_kernels() == 1);
  CHECK(r.replay({ramp(3)})[0].as<Float>().to_vector() == std::vector<float>{2.f, 4.f, 6.f});
}

TEST_CASE("sizes: a refused scatter into a non-input never takes effect", "[record][size]") {
  fresh();
  Float x = ramp(4);
  Float outside = ff::zeros<Float>(4);
  ff::make_opaque(outside);  // a buffer from before the recording: an implicit input
  REQUIRE_THROWS_EXACTLY(ff::record({x},
                                    [&] {
                                      ff::scatter(outside, x, ff::arange<UInt32>(4));
                                      return Inputs{x + 1.f};
                                    }),
                         ff::FreezeError);
  ff::eval(outside);  // the next evaluation: the refused scatter must not run here
  CHECK(outside.to_vector() == std::vector<float>(4, 0.f));
  ff::Recording r = ff::record({x}, [&] { return Inputs{x * 2.f}; });
  CHECK(r.n_ops() == 2);  // alloc + launch: nothing left over from the refusal
}

TEST_CASE("sizes: scatters pending before ff::record run before it, not inside it",
          "[record][size]") {
  fresh();
  Float x = ramp(4);
  Float target = ff::zeros<Float>(4);
  ff::eval(target);
  ff::scatter(target, ff::full<Float>(5.f, 4), ff::arange<UInt32>(4));  // pending
  ff::Recording r = ff::record({x}, [&] { return Inputs{x * 2.f}; });
  CHECK(r.n_kernels() == 1);
  CHECK(target.to_vector() == std::vector<float>(4, 5.f));
}

// ------------------------------------------------------------------------------------------
// Class 8: size arithmetic overflows the same way traced and replayed

TEST_CASE("sizes: size arithmetic that overflows 64 bits is refused traced and replayed",
          "[record][size]") {
  fresh();
  Float x = ramp(1 << 16);
  auto w = ff::width(x);
  REQUIRE_THROWS_EXACTLY(w * w * w * w, ff::Error);
  REQUIRE_THROWS_WITH(w * w * w * w, Contains("overflows 64 bits") && Contains("width"));
  REQUIRE_THROWS_EXACTLY(ff::Size(UINT64_MAX) + w, ff::Error);
  // Recorded below the overflow, replayed above it: refused, not wrapped.
  Body body = [](const Inputs& in) {
    Float v = in[0].as<Float>();
    auto n = ff::width(v);
    ff::Size big = n * n * n * n;
    return Inputs{ff::full<Float>(1.f, ff::min(big, ff::Size(3)))};
  };
  ff::Recording r = record_at(body, {3});
  CHECK(replay_vs_traced(r, body, {2}) == Outcome::Same);
  REQUIRE_THROWS_EXACTLY(body(ramps({1 << 16})), ff::Error);
  REQUIRE_THROWS_EXACTLY(r.replay(ramps({1 << 16})), ff::FreezeError);
  REQUIRE_THROWS_WITH(r.replay(ramps({1 << 16})), Contains("overflows 64 bits"));
}

// ------------------------------------------------------------------------------------------
// Fusion: work of equal sizes from different expressions in one kernel is a decision too

TEST_CASE("sizes: arrays of equal size from different inputs fused into one kernel are guarded",
          "[record][size]") {
  fresh();
  Body body = [](const Inputs& in) {
    Float a = in[0].as<Float>() * 2.f, b = in[1].as<Float>() + 1.f;
    ff::eval(a, b);  // one kernel while the sizes are equal
    return Inputs{a, b};
  };
  ff::Recording r = record_at(body, {6, 6});
  CHECK(r.n_kernels() == 1);
  CHECK(replay_vs_traced(r, body, {9, 9}) == Outcome::Same);
  CHECK(replay_vs_traced(r, body, {5, 7}) == Outcome::Refused);  // traced: two kernels
  CHECK_THAT(guard_error(r, ramps({5, 7})), Contains("fused into one kernel"));
}
