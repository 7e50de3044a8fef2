// Literal arguments and their sizes: a literal is no input of the recording, so the key holds
// its size class (1; the size of an input size group in this call; else its exact size) and
// the recording holds its size as that class says. Every way a size can reach a frozen call
// without being an array's own size is called here at several sizes and compared with the
// same function run traced: results (sizes and values) and errors alike, auto_opaque on and
// off, the literal in a struct, a vector and a tuple.
#include <catch2/catch.hpp>
#include <optional>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "common/log.h"
#include "support/freeze_check.h"
#include "support/log_capture.h"

using namespace fff;
using Catch::Matchers::Contains;
using ff::Float;
using ff::UInt32;

namespace {

void fresh() {
  ff::shutdown();
  ff::init("llvm");
}

struct Grid {
  Float pos, vel;
};

struct Holder {
  Float lit;
  int tag = 3;
};

}  // namespace

FF_STRUCT(Grid, pos, vel)
FF_STRUCT(Holder, lit, tag)

namespace {

/// What a call gave: its snapshot, or that it threw an ff::Error (and which kind).
struct Outcome {
  std::optional<Snapshot> value;
  std::string error;  // "" if none, else the exception's type
};

template <class Fn, class... A>
Outcome outcome_of(Fn&& fn, A&&... args) {
  try {
    auto r = fn(std::forward<A>(args)...);
    return {snap(r), ""};
  } catch (const ff::FreezeError&) {
    return {std::nullopt, "ff::FreezeError"};
  } catch (const ff::Error&) {
    return {std::nullopt, "ff::Error"};
  }
}

void check_same(const Outcome& frozen, const Outcome& traced) {
  CHECK(frozen.error == traced.error);
  if (frozen.value && traced.value)
    CHECK(diff(*frozen.value, *traced.value) == "");
}

const std::vector<size_t> kSizes = {1000, 50, 3000, 0, 1, 2, 13, 61, 1000, 2};

/// Every way a literal's size can come about, given the call's input x of n elements and an
/// array of n elements that is not an argument (its size reaches the call only through the
/// literal).
enum class Provenance {
  PlainEqual,
  PlainOther,
  WidthOfArgument,
  WidthOfOther,
  WidthPlusOne,
  FromCompress
};

const char* name_of(Provenance p) {
  switch (p) {
    case Provenance::PlainEqual:
      return "a plain integer equal to the input's size";
    case Provenance::PlainOther:
      return "a plain integer equal to no input's size";
    case Provenance::WidthOfArgument:
      return "width(x), x an argument";
    case Provenance::WidthOfOther:
      return "width(other), other no argument";
    case Provenance::WidthPlusOne:
      return "width(other) + 1";
    case Provenance::FromCompress:
      return "the count of a compress of no argument";
  }
  return "?";
}

Float literal_for(Provenance p, const Float& x, size_t n) {
  Float other = ramp(n);
  ff::eval(other);
  switch (p) {
    case Provenance::PlainEqual:
      return ff::full<Float>(0.5f, n);
    case Provenance::PlainOther:
      return ff::full<Float>(0.5f, 7);
    case Provenance::WidthOfArgument:
      return ff::full<Float>(0.5f, ff::width(x));
    case Provenance::WidthOfOther:
      return ff::full<Float>(0.5f, ff::width(other));
    case Provenance::WidthPlusOne:
      return ff::full<Float>(0.5f, ff::width(other) + 1);
    case Provenance::FromCompress: {
      UInt32 idx = ff::compress(other > 4.f);  // n - 5 elements (other = 0, 1, ...)
      ff::eval(idx);
      return ff::full<Float>(0.5f, ff::width(idx));
    }
  }
  return {};
}

// What every body does with the literal: results of its own size, and a reduction with the
// input; element-wise with the input only where both sizes allow it (the traced call raises
// otherwise: see the last test for that).
std::tuple<Float, Float, Float> use(const Float& lit, const Float& x) {
  Float both = lit.size() == x.size() || lit.size() == 1 || x.size() == 1 ? lit + x : lit - 1.f;
  return {lit * 2.f + 1.f, ff::sum(lit) + ff::sum(x), both};
}

}  // namespace

TEST_CASE("freeze literal sizes: a literal sized by another array's width replays at that size",
          "[freeze][literals]") {
  // The pattern of docs/freeze.md's quick start with the state sized from an array that is no
  // argument: the state's size reaches the call only through the literals.
  fresh();
  auto step = [](Grid& s, const Float& dt) {
    s.vel = s.vel - 9.81f * dt;
    s.pos = s.pos + s.vel * dt;
    return ff::sum(s.pos);
  };
  bool opaque = GENERATE(true, false);
  INFO("auto_opaque " << opaque);
  ff::FreezeOptions o;
  o.auto_opaque = opaque;
  auto f = ff::freeze(step, o);
  for (size_t n : {1000, 50, 3000, 1, 0, 2, 13, 50, 3000}) {
    INFO("grid of " << n);
    Float grid = ramp(n);
    ff::eval(grid);
    Grid a{ff::zeros<Float>(ff::width(grid)), ff::zeros<Float>(ff::width(grid))};
    Grid b{ff::zeros<Float>(ff::width(grid)), ff::zeros<Float>(ff::width(grid))};
    Float ra = f(a, Float(0.01f));
    Float rb = step(b, Float(0.01f));
    CHECK(a.pos.size() == n);
    CHECK(a.vel.size() == n);
    CHECK(diff(snap(a), snap(b)) == "");
    CHECK(diff(snap(ra), snap(rb)) == "");
  }

  // Sized from one array, combined with an argument of another size: the traced call raises,
  // and so must the frozen one, whatever was recorded before.
  auto with_grid = [](Grid& s, const Float& g) {
    s.pos = s.pos + g;
    return ff::sum(s.pos);
  };
  auto h = ff::freeze(with_grid, o);

  struct Sizes {
    size_t state, grid;
  };

  for (Sizes z : {Sizes{1000, 1000}, Sizes{50, 3000}, Sizes{3000, 3000}, Sizes{50, 50}, Sizes{7, 3},
                  Sizes{1, 9}, Sizes{9, 1}}) {
    INFO("state of " << z.state << ", grid of " << z.grid);
    Float sizer = ramp(z.state);
    ff::eval(sizer);
    Grid a{ff::zeros<Float>(ff::width(sizer)), ff::zeros<Float>(ff::width(sizer))};
    Grid b{ff::zeros<Float>(ff::width(sizer)), ff::zeros<Float>(ff::width(sizer))};
    check_same(outcome_of(h, a, ramp(z.grid)), outcome_of(with_grid, b, ramp(z.grid)));
    CHECK(diff(snap(a), snap(b)) == "");
  }
}

TEST_CASE(
    "freeze literal sizes: a literal of every size provenance, in a struct, a vector and "
    "a tuple, against the traced call",
    "[freeze][literals]") {
  fresh();
  Provenance p =
      GENERATE(Provenance::PlainEqual, Provenance::PlainOther, Provenance::WidthOfArgument,
               Provenance::WidthOfOther, Provenance::WidthPlusOne, Provenance::FromCompress);
  bool opaque = GENERATE(true, false);
  INFO("the literal's size: " << name_of(p) << ", auto_opaque " << opaque);
  ff::FreezeOptions o;
  o.auto_opaque = opaque;

  auto in_struct = [](const Holder& h, const Float& x) {
    auto [a, s, c] = use(h.lit, x);
    return std::make_tuple(a, s, c, h.tag);
  };
  auto in_vector = [](const std::vector<Float>& v, const Float& x) {
    auto [a, s, c] = use(v[1], x);
    return std::vector<Float>{a, s, c, v[0] + 1.f};
  };
  auto in_tuple = [](const std::tuple<Float, Float>& t, const Float& x) {
    auto [a, s, c] = use(std::get<0>(t), x);
    return std::make_pair(a + std::get<1>(t), s + ff::sum(c));
  };
  auto f1 = ff::freeze(in_struct, o);
  auto f2 = ff::freeze(in_vector, o);
  auto f3 = ff::freeze(in_tuple, o);
  for (size_t n : kSizes) {
    INFO("x of " << n);
    auto fresh_x = [&] {
      Float x = ramp(n);
      ff::eval(x);
      return x;
    };
    {
      Float xa = fresh_x(), xb = fresh_x();
      check_same(outcome_of(f1, Holder{literal_for(p, xa, n), 5}, xa),
                 outcome_of(in_struct, Holder{literal_for(p, xb, n), 5}, xb));
    }
    {
      Float xa = fresh_x(), xb = fresh_x();
      std::vector<Float> va{Float(2.f), literal_for(p, xa, n)};
      std::vector<Float> vb{Float(2.f), literal_for(p, xb, n)};
      check_same(outcome_of(f2, va, xa), outcome_of(in_vector, vb, xb));
    }
    {
      Float xa = fresh_x(), xb = fresh_x();
      std::tuple<Float, Float> ta{literal_for(p, xa, n), ff::full<Float>(1.5f, 1)};
      std::tuple<Float, Float> tb{literal_for(p, xb, n), ff::full<Float>(1.5f, 1)};
      check_same(outcome_of(f3, ta, xa), outcome_of(in_tuple, tb, xb));
    }
  }
}

TEST_CASE("freeze literal sizes: a literal whose size class stays replays and stays a literal",
          "[freeze][literals]") {
  // f(x, full(2, n)) with x of size n: the same kind of call at every n (the literal has the
  // size of x's group); only a change of its value splits recordings.
  fresh();
  ff::set_log_level(ff::LogLevel::Info);
  LogCapture log(ff::logging::record());
  auto fn = [](const Float& x, const Float& k) { return x * k + 1.f; };
  auto f = ff::freeze(fn);
  size_t calls = 0;
  for (size_t n : {1000, 50, 3000, 0, 2, 13, 1000}) {
    INFO("n = " << n);
    Float x = ramp(n);
    Float want = fn(ramp(n), ff::full<Float>(2.f, n));
    CHECK(host(f(x, ff::full<Float>(2.f, n))) == host(want));             // a plain size
    CHECK(host(f(x, ff::full<Float>(2.f, ff::width(x)))) == host(want));  // one from x
    calls += 2;
  }
  ff::set_log_level(ff::LogLevel::Warn);
  CHECK(f.n_recordings() == 1);
  CHECK(f.n_replays() == calls - 1);
  CHECK(log.str().find("made opaque") == std::string::npos);
  // A new value is a new kind of call: made opaque once, as documented.
  Float x = ramp(5);
  CHECK(host(f(x, ff::full<Float>(3.f, 5))) == host(fn(ramp(5), ff::full<Float>(3.f, 5))));
  CHECK(f.n_recordings() == 2);
}

TEST_CASE("freeze literal sizes: a literal of size 1 and one of another input's size",
          "[freeze][literals]") {
  fresh();
  auto fn = [](const Float& x, const Float& y, const Float& k) {
    return std::make_pair(x * k, y + 0.f);
  };
  auto f = ff::freeze(fn);

  struct Call {
    size_t nx, ny, nk;
  };

  // k broadcast (size 1), k of y's size (incompatible with x: traced raises), k of x's size.
  for (Call c : {Call{10, 20, 1}, Call{30, 7, 1}, Call{10, 20, 20}, Call{10, 20, 10},
                 Call{40, 3, 40}, Call{1, 1, 1}, Call{5, 20, 20}}) {
    INFO("x " << c.nx << ", y " << c.ny << ", k " << c.nk);
    check_same(outcome_of(f, ramp(c.nx), ramp(c.ny), ff::full<Float>(3.f, c.nk)),
               outcome_of(fn, ramp(c.nx), ramp(c.ny), ff::full<Float>(3.f, c.nk)));
  }
}

TEST_CASE("freeze literal sizes: literals made on another thread, which has ended",
          "[freeze][literals][threads]") {
  fresh();
  auto step = [](Grid& s, const Float& grid) {
    s.pos = s.pos + grid;
    s.vel = s.vel * 2.f + s.pos;
  };
  auto f = ff::freeze(step);
  for (size_t n : {100, 7, 0, 300}) {
    INFO("n = " << n);
    Float grid = ramp(n);
    ff::eval(grid);
    Grid a, b;
    std::thread maker([&] {  // the literals live in the worker's table, orphaned after join
      a = Grid{ff::zeros<Float>(ff::width(grid)), ff::full<Float>(1.f, ff::width(grid))};
      b = Grid{ff::zeros<Float>(ff::width(grid)), ff::full<Float>(1.f, ff::width(grid))};
    });
    maker.join();
    f(a, grid);
    step(b, grid);
    CHECK(a.pos.size() == n);
    CHECK(diff(snap(a), snap(b)) == "");
  }
  CHECK(f.n_recordings() == 1);
}
