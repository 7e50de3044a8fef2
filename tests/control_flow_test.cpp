// ff::while_loop, ff::if_stmt and ff::switch_ through the public API: results against the same
// computation per lane on the host at the edge sizes, side effects only for the lanes that run
// them, nesting, state of every kind, one kernel per eval, recordings and frozen functions
// replayed at other sizes and trip counts, evaluated mode, and every error with its message.
#include <algorithm>
#include <array>
#include <catch2/catch.hpp>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/log.h"
#include "freezeframe/freezeframe.h"
#include "support/errors.h"
#include "support/log_capture.h"
#include "support/temp_file.h"

namespace {

using ff::Bool;
using ff::Float;
using ff::Float64;
using ff::Int32;
using ff::UInt32;
using ff::UInt64;

struct Particle {
  Float pos;
  UInt32 steps;
  int tag = 3;  // a scalar: loop-invariant
};

}  // namespace

FF_STRUCT(Particle, pos, steps, tag)

namespace {

const size_t kSizes[] = {0, 1, 2, 3, 7, 61, 1009};

uint32_t collatz(uint32_t x, uint64_t limit = ~uint64_t{0}) {
  uint32_t steps = 0;
  while (x != 1 && steps < limit) {
    x = x % 2 == 0 ? x / 2 : 3 * x + 1;
    ++steps;
  }
  return steps;
}

std::tuple<UInt32, UInt32> collatz_loop(const UInt32& start, ff::LoopOptions opt = {}) {
  return ff::while_loop(
      std::make_tuple(start, ff::zeros<UInt32>(ff::width(start))),
      [](const UInt32& x, const UInt32&) { return x != 1u; },
      [](UInt32& x, UInt32& steps) {
        x = ff::select(x % 2u == 0u, x / 2u, x * 3u + 1u);
        steps += 1u;
      },
      opt);
}

UInt32 starts(size_t n) {
  return ff::arange<UInt32>(n) + 1u;
}

uint64_t traced_kernels() {
  return ff::stats().traced_kernels;
}

template <class E, class F>
void check_error(F&& f, const std::vector<std::string>& parts) {
  fft::Thrown t = fft::thrown_by(f);
  INFO(t.type << ": " << t.what);
  CHECK(t.type == fft::type_name_of<E>());
  for (const std::string& p : parts)
    CHECK_THAT(t.what, Catch::Matchers::Contains(p));
}

template <class Cond, class... S>
concept LoopCondAccepted = requires(std::tuple<S...> st, Cond c) {
  ff::while_loop(st, c, [](S&...) {});
};

}  // namespace

TEST_CASE("while_loop runs each lane until its condition fails, in one kernel", "[control_flow]") {
  for (size_t n : kSizes) {
    INFO("n " << n);
    UInt32 x0 = starts(n);
    ff::eval(x0);
    uint64_t before = traced_kernels();
    auto [x, steps] = collatz_loop(x0);
    ff::eval(x, steps);
    CHECK(traced_kernels() - before == (n ? 1u : 0u));
    std::vector<uint32_t> got = steps.to_vector(), xs = x.to_vector();
    REQUIRE(got.size() == n);
    size_t bad = 0;
    for (size_t i = 0; i < n; ++i)
      bad += got[i] != collatz(uint32_t(i + 1)) || xs[i] != 1u;
    CHECK(bad == 0);
    // The state handed in is unchanged.
    CHECK(x0.to_vector() == starts(n).to_vector());
  }
}

TEST_CASE("while_loop: max_iterations stops lanes still active, zero iterations keep the state",
          "[control_flow]") {
  for (int64_t limit : {0, 1, 5, 100}) {
    ff::LoopOptions opt;
    opt.max_iterations = limit;
    opt.name = "collatz";
    auto [x, steps] = collatz_loop(starts(61), opt);
    std::vector<uint32_t> got = steps.to_vector();
    for (size_t i = 0; i < got.size(); ++i)
      CHECK(got[i] == collatz(uint32_t(i + 1), uint64_t(limit)));
  }
  // A condition false everywhere: the initial state comes back.
  auto [x, steps] = collatz_loop(ff::full<UInt32>(1u, 5));
  CHECK(steps.to_vector() == std::vector<uint32_t>(5, 0));
  CHECK(x.to_vector() == std::vector<uint32_t>(5, 1));
}

TEST_CASE("while_loop: one lane iterating 10^4 times while the others stop at once",
          "[control_flow]") {
  for (size_t n : {1, 2, 17, 100}) {
    UInt32 limit = ff::select(ff::arange<UInt32>(n) == uint32_t(n / 2), ff::full<UInt32>(10000u, n),
                              ff::zeros<UInt32>(n));
    auto [counted] = ff::while_loop(
        std::make_tuple(ff::zeros<UInt32>(n)), [&](const UInt32& i) { return i < limit; },
        [](UInt32& i) { i += 1u; });
    std::vector<uint32_t> got = counted.to_vector();
    for (size_t k = 0; k < n; ++k)
      CHECK(got[k] == (k == n / 2 ? 10000u : 0u));
  }
}

TEST_CASE("while_loop: state of every element type, structs, scalars and size-1 arrays",
          "[control_flow]") {
  const size_t n = 13;
  Particle p{ff::arange<Float>(n) * 0.5f, ff::zeros<UInt32>(1), 7};
  Float64 acc = ff::zeros<Float64>(1);  // size 1: widens to the loop's width
  Int32 down = ff::full<Int32>(-3, n);
  UInt64 big = ff::full<UInt64>(uint64_t{1} << 40, n);
  Bool flip = ff::full<Bool>(false, n);
  Float constant = ff::full<Float>(2.5f, n);  // unchanged by the body: stays a literal
  std::vector<Float> list = {ff::full<Float>(1.f, n), ff::full<Float>(2.f, n)};
  auto out = ff::while_loop(
      std::make_tuple(p, acc, down, big, flip, constant, list),
      [](const Particle& q, const Float64&, const Int32&, const UInt64&, const Bool&, const Float&,
         const std::vector<Float>&) { return q.pos < 4.f; },
      [](Particle& q, Float64& a, Int32& d, UInt64& b, Bool& f, Float& c, std::vector<Float>& l) {
        q.pos = q.pos + c * 0.5f;
        q.steps = q.steps + 1u;
        a = a + ff::cast<Float64>(q.pos);
        d = d - 1;
        b = b + 3u;
        f = !f;
        l[1] = l[1] + l[0];
      });
  auto& [q, a, d, b, f, c, l] = out;
  CHECK(q.tag == 7);
  std::vector<float> pos = q.pos.to_vector();
  std::vector<uint32_t> steps = q.steps.to_vector();
  std::vector<double> av = a.to_vector();
  std::vector<int32_t> dv = d.to_vector();
  std::vector<uint64_t> bv = b.to_vector();
  std::vector<uint8_t> fv;
  for (bool x : f.to_vector())
    fv.push_back(x);
  std::vector<float> l1 = l[1].to_vector();
  for (size_t i = 0; i < n; ++i) {
    float x = float(i) * 0.5f;
    uint32_t k = 0;
    double sum = 0;
    while (x < 4.f) {
      x = x + 2.5f * 0.5f;
      ++k;
      sum += x;
    }
    INFO("lane " << i);
    CHECK(pos[i] == x);
    CHECK(steps[i] == k);
    CHECK(av[i] == sum);
    CHECK(dv[i] == -3 - int32_t(k));
    CHECK(bv[i] == (uint64_t{1} << 40) + 3 * k);
    CHECK(fv[i] == (k % 2 == 1));
    CHECK(l1[i] == 2.f + float(k));
  }
  CHECK(c.to_vector() == std::vector<float>(n, 2.5f));
}

TEST_CASE("scatters in a loop body write only for the lanes still iterating", "[control_flow]") {
  for (size_t n : kSizes) {
    INFO("n " << n);
    UInt32 hist = ff::zeros<UInt32>(10);
    UInt32 visits = ff::zeros<UInt32>(n);
    auto [x_end, steps_end] = ff::while_loop(
        std::make_tuple(starts(n), ff::zeros<UInt32>(n)),
        [](const UInt32& x, const UInt32&) { return x != 1u; },
        [&](UInt32& x, UInt32& steps) {
          x = ff::select(x % 2u == 0u, x / 2u, x * 3u + 1u);
          steps += 1u;
          ff::scatter_add(hist, UInt32(1u), x % 10u);
          ff::scatter(visits, steps, ff::arange<UInt32>(n));
        });
    std::vector<uint32_t> want_hist(10, 0), want_visits(n, 0);
    for (size_t i = 0; i < n; ++i) {
      uint32_t v = uint32_t(i + 1), k = 0;
      while (v != 1) {
        v = v % 2 == 0 ? v / 2 : 3 * v + 1;
        ++want_hist[v % 10];
        ++k;
      }
      want_visits[i] = k;
    }
    CHECK(hist.to_vector() == want_hist);
    CHECK(visits.to_vector() == want_visits);
    CHECK(steps_end.to_vector() == want_visits);
    CHECK(x_end.to_vector() == std::vector<uint32_t>(n, 1u));
  }
}

TEST_CASE("a loop with only side effects runs with the next eval", "[control_flow]") {
  UInt32 count = ff::zeros<UInt32>(1);
  ff::while_loop(
      std::make_tuple(ff::zeros<UInt32>(5)), [](const UInt32& i) { return i < 3u; },
      [&](UInt32& i) {
        ff::scatter_add(count, UInt32(1u), UInt32(0u));
        i += 1u;
      });
  CHECK(count.to_vector() == std::vector<uint32_t>{15});
}

TEST_CASE("nested loops whose inner trip count depends on the outer counter", "[control_flow]") {
  for (size_t n : {1, 2, 7, 33}) {
    UInt32 lane = ff::arange<UInt32>(n);
    auto [i_end, total_end] = ff::while_loop(
        std::make_tuple(ff::zeros<UInt32>(n), ff::zeros<UInt32>(n)),
        [&](const UInt32& i, const UInt32&) { return i < lane % 5u + 1u; },
        [](UInt32& i, UInt32& total) {
          auto [j_end, t_end] = ff::while_loop(
              std::make_tuple(ff::zeros<UInt32>(ff::width(i)), total),
              [&](const UInt32& j, const UInt32&) { return j < i; },
              [](UInt32& j, UInt32& t) {
                t += j;
                j += 1u;
              });
          total = t_end;
          i += 1u;
        });
    std::vector<uint32_t> got = total_end.to_vector();
    CHECK(i_end.to_vector().size() == n);
    for (size_t k = 0; k < n; ++k) {
      uint32_t want = 0;
      for (uint32_t a = 0; a < k % 5 + 1; ++a)
        for (uint32_t b = 0; b < a; ++b)
          want += b;
      CHECK(got[k] == want);
    }
  }
}

TEST_CASE("if_stmt gives each lane its branch's result, branch scatters only for its lanes",
          "[control_flow]") {
  for (size_t n : kSizes) {
    INFO("n " << n);
    Float a = ff::arange<Float>(n);
    Float b = ff::full<Float>(10.f, n);
    UInt32 hits = ff::zeros<UInt32>(2);
    Bool mask = ff::arange<UInt32>(n) % 3u == 0u;
    auto r = ff::if_stmt(
        std::make_tuple(a, b), mask,
        [&](const Float& x, const Float& y) {
          ff::scatter_add(hits, UInt32(1u), UInt32(0u));
          return std::make_pair(x + y, ff::cast<UInt32>(x));
        },
        [&](const Float& x, const Float& y) {
          ff::scatter_add(hits, UInt32(1u), UInt32(1u));
          return std::make_pair(x - y, UInt32(7u) + ff::zeros<UInt32>(ff::width(x)));
        });
    std::vector<float> first = r.first.to_vector();
    std::vector<uint32_t> second = r.second.to_vector();
    size_t bad = 0, n_true = 0;
    for (size_t i = 0; i < n; ++i) {
      bool m = i % 3 == 0;
      n_true += m;
      bad += first[i] != (m ? float(i) + 10.f : float(i) - 10.f);
      bad += second[i] != (m ? uint32_t(i) : 7u);
    }
    CHECK(bad == 0);
    CHECK(hits.to_vector() == std::vector<uint32_t>{uint32_t(n_true), uint32_t(n - n_true)});
  }
}

TEST_CASE("loops in branches and branches in loops", "[control_flow]") {
  const size_t n = 29;
  UInt32 lane = ff::arange<UInt32>(n);
  auto [i_end, acc_end] = ff::while_loop(
      std::make_tuple(ff::zeros<UInt32>(n), ff::zeros<UInt32>(n)),
      [](const UInt32& i, const UInt32&) { return i < 6u; },
      [&](UInt32& i, UInt32& acc) {
        acc = ff::if_stmt(
            std::make_tuple(i, acc), (lane + i) % 2u == 0u,
            [](const UInt32& it, const UInt32& a) {
              auto [k_end, s_end] = ff::while_loop(
                  std::make_tuple(ff::zeros<UInt32>(ff::width(it)), a),
                  [&](const UInt32& k, const UInt32&) { return k < it; },
                  [](UInt32& k, UInt32& s) {
                    s += 2u;
                    k += 1u;
                  });
              return s_end;
            },
            [](const UInt32&, const UInt32& a) { return a + 100u; });
        i += 1u;
      });
  std::vector<uint32_t> got = acc_end.to_vector();
  CHECK(i_end.to_vector() == std::vector<uint32_t>(n, 6u));
  for (size_t k = 0; k < n; ++k) {
    uint32_t a = 0;
    for (uint32_t it = 0; it < 6; ++it)
      a = (k + it) % 2 == 0 ? a + 2 * it : a + 100;
    CHECK(got[k] == a);
  }
}

TEST_CASE("switch_ runs the target each lane's index names, out of range gives zeros",
          "[control_flow]") {
  for (size_t targets = 1; targets <= 8; ++targets) {
    std::vector<std::function<Float(const Float&)>> fns;
    for (size_t t = 0; t < targets; ++t)
      fns.push_back([t](const Float& x) { return x * float(t + 1) + float(t); });
    for (size_t n : {0, 1, 2, 13, 101}) {
      INFO("targets " << targets << " n " << n);
      UInt32 index = (ff::arange<UInt32>(n) * 7u) % uint32_t(targets + 2);
      Float x = ff::arange<Float>(n);
      Float y = ff::switch_(index, fns, x);
      std::vector<float> got = y.to_vector();
      size_t bad = 0;
      for (size_t i = 0; i < n; ++i) {
        size_t t = (i * 7) % (targets + 2);
        float want = t < targets ? float(i) * float(t + 1) + float(t) : 0.f;
        bad += got[i] != want;
      }
      CHECK(bad == 0);
    }
  }
  // A std::array of lambdas of one type, a huge index.
  auto f = [](const UInt32& v) { return v + 1u; };
  std::array<decltype(f), 2> two = {f, f};
  UInt32 idx = UInt32::from({0u, 1u, 0xFFFFFFFFu});
  CHECK(ff::switch_(idx, two, UInt32::from({5u, 6u, 7u})).to_vector() ==
        std::vector<uint32_t>{6u, 7u, 0u});
}

TEST_CASE("evaluated loops give what symbolic loops give, scatters included", "[control_flow]") {
  for (size_t n : {0, 1, 2, 61}) {
    ff::LoopOptions opt;
    opt.mode = ff::LoopMode::Evaluated;
    UInt32 hist_s = ff::zeros<UInt32>(7), hist_e = ff::zeros<UInt32>(7);
    auto run = [&](UInt32& hist, const ff::LoopOptions& o) {
      return ff::while_loop(
          std::make_tuple(starts(n), ff::zeros<UInt32>(n)),
          [](const UInt32& x, const UInt32&) { return x != 1u; },
          [&](UInt32& x, UInt32& steps) {
            x = ff::select(x % 2u == 0u, x / 2u, x * 3u + 1u);
            steps += 1u;
            ff::scatter_add(hist, UInt32(1u), x % 7u);
          },
          o);
    };
    auto sym = run(hist_s, {});
    auto ev = run(hist_e, opt);
    CHECK(std::get<1>(sym).to_vector() == std::get<1>(ev).to_vector());
    CHECK(hist_s.to_vector() == hist_e.to_vector());
  }
}

TEST_CASE("while_loop errors name the loop and the state path", "[control_flow][errors]") {
  ff::LoopOptions opt;
  opt.name = "walk";
  Particle p{ff::arange<Float>(4), ff::zeros<UInt32>(4), 1};
  auto cond = [](const Particle& q) { return q.pos < 3.f; };
  // A scalar of the state changes.
  check_error<ff::Error>(
      [&] {
        ff::while_loop(
            std::make_tuple(p), cond, [](Particle& q) { q.tag = 2; }, opt);
      },
      {"while_loop 'walk'", "state[0].tag", "value 1 became", "value 2"});
  // A state array changes its size.
  check_error<ff::Error>(
      [&] {
        ff::while_loop(
            std::make_tuple(p), cond, [](Particle& q) { q.pos = ff::arange<Float>(9); }, opt);
      },
      {"while_loop 'walk'", "state[0].pos", "from 4", "to 9"});
  // A container's length changes.
  std::vector<Float> list = {ff::arange<Float>(4)};
  check_error<ff::Error>(
      [&] {
        ff::while_loop(
            std::make_tuple(list), [](const std::vector<Float>& l) { return l[0] < 2.f; },
            [](std::vector<Float>& l) { l.push_back(l[0]); }, opt);
      },
      {"while_loop 'walk'", "state[0]", "size 1 became"});
  // Evaluating or reading a loop value inside the body.
  check_error<ff::Error>(
      [&] {
        ff::while_loop(
            std::make_tuple(p), cond, [](Particle& q) { ff::eval(q.pos); }, opt);
      },
      {"while_loop 'walk'", "inside a symbolic loop body", "LoopMode::Evaluated"});
  check_error<ff::Error>(
      [&] {
        ff::while_loop(
            std::make_tuple(p), cond, [](Particle& q) { (void)q.pos.to_vector(); }, opt);
      },
      {"while_loop 'walk'", "inside a symbolic loop body"});
  // The call after a failed one works, and nothing of the failed one runs.
  UInt32 count = ff::zeros<UInt32>(1);
  CHECK_THROWS_AS(ff::while_loop(
                      std::make_tuple(p), cond,
                      [&](Particle& q) {
                        ff::scatter_add(count, UInt32(1u), UInt32(0u));
                        ff::eval(q.pos);
                      },
                      opt),
                  ff::Error);
  auto [q1] = ff::while_loop(
      std::make_tuple(p), cond, [](Particle& q) { q.pos += 1.f; }, opt);
  CHECK(q1.pos.to_vector() == std::vector<float>{3.f, 3.f, 3.f, 3.f});
  CHECK(count.to_vector() == std::vector<uint32_t>{0});
  // A value of the body used after the loop.
  Float leaked;
  auto [q2] = ff::while_loop(
      std::make_tuple(p), cond,
      [&](Particle& q) {
        leaked = q.pos * 2.f;
        q.pos += 1.f;
      },
      opt);
  check_error<ff::Error>([&] { ff::eval(leaked); }, {"while_loop 'walk'", "used outside the loop"});
  CHECK(q2.pos.to_vector() == std::vector<float>{3.f, 3.f, 3.f, 3.f});
  // The values of a scatter_inc inside a branch used after it (would increment twice).
  UInt32 counter = ff::zeros<UInt32>(1), slot;
  Float picked = ff::if_stmt(
      std::make_tuple(p.pos), p.pos > 1.f,
      [&](const Float& v) {
        slot = ff::scatter_inc(counter, UInt32(0u));
        return v;
      },
      [](const Float& v) { return v; });
  check_error<ff::Error>([&] { ff::eval(slot); },
                         {"if_stmt", "scatter_inc inside it are used outside it"});
  CHECK(picked.to_vector() == std::vector<float>{0.f, 1.f, 2.f, 3.f});
  CHECK(counter.to_vector() == std::vector<uint32_t>{2});
  // A condition that is no Bool does not compile (a constraint generic code can test).
  STATIC_REQUIRE(LoopCondAccepted<std::function<Bool(const Float&)>, Float>);
  STATIC_REQUIRE_FALSE(LoopCondAccepted<std::function<Float(const Float&)>, Float>);
  STATIC_REQUIRE_FALSE(LoopCondAccepted<std::function<bool(const Float&)>, Float>);
}

TEST_CASE("evaluated loops are refused while recording, with the way out",
          "[control_flow][errors]") {
  ff::LoopOptions opt;
  opt.mode = ff::LoopMode::Evaluated;
  opt.name = "debug";
  UInt32 x0 = starts(5);
  check_error<ff::FreezeError>(
      [&] {
        ff::record({x0}, [&] {
          auto [x, s] = collatz_loop(x0, opt);
          return std::vector<ff::AnyArray>{s};
        });
      },
      {"while_loop 'debug'", "LoopMode::Symbolic"});
}

TEST_CASE("recorded loops replay at other sizes and trip counts, also from a file",
          "[control_flow][record]") {
  UInt32 x0 = starts(7);
  ff::Recording rec = ff::record({x0}, [&] {
    auto [x, s] = collatz_loop(x0);
    return std::vector<ff::AnyArray>{s};
  });
  fft::TempFile file("loop.ffr");
  rec.save(file.str());
  ff::Recording loaded = ff::Recording::load(file.str());
  for (const ff::Recording* r : {&rec, &loaded})
    for (size_t n : {0, 1, 2, 13, 257}) {
      INFO("n " << n);
      // Other trip counts: start values far from the recorded ones.
      UInt32 in = starts(n) * 3u + 5u;
      auto out = r->replay({in});
      std::vector<uint32_t> got = out.at(0).as<UInt32>().to_vector();
      REQUIRE(got.size() == n);
      for (size_t i = 0; i < n; ++i)
        CHECK(got[i] == collatz(uint32_t(i + 1) * 3 + 5));
    }
}

TEST_CASE("frozen functions with loops, branches and calls replay at any size",
          "[control_flow][freeze]") {
  auto fn = ff::freeze([](const Float& x, const UInt32& which) {
    auto [y_end, k_end] = ff::while_loop(
        std::make_tuple(x, ff::zeros<UInt32>(ff::width(x))),
        [](const Float& y, const UInt32&) { return y > 1.f; },
        [](Float& y, UInt32& k) {
          y = y * 0.5f;
          k += 1u;
        });
    Float z = ff::if_stmt(
        std::make_tuple(y_end), k_end % 2u == 0u, [](const Float& v) { return v + 100.f; },
        [](const Float& v) { return v - 100.f; });
    std::array<std::function<Float(const Float&)>, 2> t = {[](const Float& v) { return v * 2.f; },
                                                           [](const Float& v) { return v * 3.f; }};
    return std::make_pair(ff::switch_(which, t, z), k_end);
  });
  for (size_t n : {5, 0, 1, 2, 3, 31, 257}) {
    INFO("n " << n);
    Float x = ff::arange<Float>(n) * 7.f + 0.25f;
    UInt32 which = ff::arange<UInt32>(n) % 3u;
    auto [r, k] = fn(x, which);
    std::vector<float> got = r.to_vector();
    std::vector<uint32_t> ks = k.to_vector();
    for (size_t i = 0; i < n; ++i) {
      float y = float(i) * 7.f + 0.25f;
      uint32_t kk = 0;
      while (y > 1.f) {
        y *= 0.5f;
        ++kk;
      }
      float z = kk % 2 == 0 ? y + 100.f : y - 100.f;
      float want = i % 3 == 0 ? z * 2.f : i % 3 == 1 ? z * 3.f : 0.f;
      CHECK(ks[i] == kk);
      CHECK(got[i] == want);
    }
  }
  CHECK(fn.n_recordings() == 1);
}

TEST_CASE("loop bodies gather from and scatter into captured arrays of any size",
          "[control_flow]") {
  // A "scene" of 5 values read by index each iteration, an "image" of 3 pixels written.
  Float scene = Float::from({1.f, 2.f, 4.f, 8.f, 16.f});
  Float image = ff::zeros<Float>(3);
  UInt32 slots = ff::zeros<UInt32>(1);
  for (size_t n : {0, 1, 2, 11}) {
    UInt32 lane = ff::arange<UInt32>(n);
    auto [k, acc] = ff::while_loop(
        std::make_tuple(ff::zeros<UInt32>(n), ff::zeros<Float>(n)),
        [&](const UInt32& i, const Float&) { return i < lane % 4u; },
        [&](UInt32& i, Float& a) {
          a += ff::gather<Float>(scene, (lane + i) % 5u);
          ff::scatter_add(image, Float(1.f), i % 3u);
          UInt32 slot = ff::scatter_inc(slots, UInt32(0u));
          (void)slot;
          i += 1u;
        });
    std::vector<float> got = acc.to_vector();
    const float sv[5] = {1.f, 2.f, 4.f, 8.f, 16.f};
    for (size_t j = 0; j < n; ++j) {
      float want = 0;
      for (size_t it = 0; it < j % 4; ++it)
        want += sv[(j + it) % 5];
      CHECK(got[j] == want);
    }
    CHECK(k.to_vector().size() == n);
  }
  // Iterations over all sizes: lanes j run j % 4 times; pixel p counts iterations i with i % 3 ==
  // p.
  std::vector<float> want_image(3, 0.f);
  uint32_t total = 0;
  for (size_t n : {0, 1, 2, 11})
    for (size_t j = 0; j < n; ++j)
      for (size_t it = 0; it < j % 4; ++it) {
        want_image[it % 3] += 1.f;
        ++total;
      }
  CHECK(image.to_vector() == want_image);
  CHECK(slots.to_vector() == std::vector<uint32_t>{total});
}

TEST_CASE("FF_DEBUG reports an out-of-range gather inside a loop body", "[control_flow]") {
  ff::set_flag(ff::Flag::Debug, true);
  Float scene = Float::from({1.f, 2.f});
  auto run = [&] {
    auto [i_end, a] = ff::while_loop(
        std::make_tuple(ff::zeros<UInt32>(4), ff::zeros<Float>(4)),
        [](const UInt32& i, const Float&) { return i < 3u; },
        [&](UInt32& i, Float& acc) {
          acc += ff::gather<Float>(scene, i);
          i += 1u;
        });
    ff::eval(a, i_end);
  };
  check_error<ff::Error>(run, {"gather: index 2 is out of range for an array of size 2"});
  ff::set_flag(ff::Flag::Debug, false);
}

TEST_CASE("loop state from another thread's arrays, and loops traced on several threads",
          "[control_flow]") {
  UInt32 x0 = starts(33);
  ff::eval(x0);
  std::vector<uint32_t> results[3];
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t)
    threads.emplace_back([&, t] {
      auto [x, steps] = collatz_loop(x0 + uint32_t(t));  // x0 is the main thread's
      results[t] = steps.to_vector();
    });
  for (auto& th : threads)
    th.join();
  for (int t = 0; t < 3; ++t)
    for (size_t i = 0; i < 33; ++i)
      CHECK(results[t][i] == collatz(uint32_t(i + 1 + t)));
  // A loop's result handed to another thread.
  auto [x, steps] = collatz_loop(x0);
  std::vector<uint32_t> seen;
  std::thread([&] { seen = (steps * 2u).to_vector(); }).join();
  for (size_t i = 0; i < 33; ++i)
    CHECK(seen[i] == 2 * collatz(uint32_t(i + 1)));
}

TEST_CASE("recordings with loops: the optimiser on and off give bitwise equal results",
          "[control_flow][record]") {
  Float x = ff::arange<Float>(37) * 0.37f + 0.5f;
  auto fn = [&] {
    UInt32 hist = ff::zeros<UInt32>(4);
    auto [y, k] = ff::while_loop(
        std::make_tuple(x * 3.f, ff::zeros<UInt32>(ff::width(x))),
        [](const Float& v, const UInt32&) { return v > 1.f; },
        [&](Float& v, UInt32& n) {
          v = ff::sqrt(v) * 0.9f;
          n += 1u;
          ff::scatter_add(hist, UInt32(1u), n % 4u);
        });
    Float z = y * 2.f + ff::cast<Float>(k);  // fusable with the loop's kernel
    return std::vector<ff::AnyArray>{z, hist, ff::sum(z)};
  };
  ff::RecordOptions off;
  off.optimize = false;
  ff::Recording a = ff::record({x}, fn), b = ff::record({x}, fn, off);
  CHECK(a.is_optimized());
  CHECK_FALSE(b.is_optimized());
  for (size_t n : {0, 1, 2, 101}) {
    Float in = ff::arange<Float>(n) * 0.91f + 0.25f;
    auto ra = a.replay({in}), rb = b.replay({in});
    CHECK(ra.at(0).as<Float>().to_vector() == rb.at(0).as<Float>().to_vector());
    CHECK(ra.at(1).as<UInt32>().to_vector() == rb.at(1).as<UInt32>().to_vector());
    CHECK(ra.at(2).as<Float>().to_vector() == rb.at(2).as<Float>().to_vector());
  }
}

TEST_CASE("FF_DEBUG warns when lanes stop at max_iterations, naming the loop", "[control_flow]") {
  ff::set_flag(ff::Flag::Debug, true);
  ff::LoopOptions opt;
  opt.name = "collatz";
  opt.max_iterations = 5;
  {
    fff::LogCapture log(ff::logging::tracer());
    auto [x, steps] = collatz_loop(starts(10), opt);
    ff::eval(x, steps);
    size_t still = 0;
    for (uint32_t i = 1; i <= 10; ++i)
      still += collatz(i) > 5;
    CHECK_THAT(log.str(),
               Catch::Matchers::Contains("while_loop 'collatz': " + std::to_string(still) +
                                         " lane(s) were still active after "
                                         "max_iterations = 5"));
  }
  {
    fff::LogCapture log(ff::logging::tracer());
    opt.max_iterations = 1000;  // every lane finishes: no warning
    auto [x, steps] = collatz_loop(starts(10), opt);
    ff::eval(x, steps);
    CHECK(log.str().find("max_iterations") == std::string::npos);
  }
  ff::set_flag(ff::Flag::Debug, false);
}

TEST_CASE("an exception inside nested regions leaves nothing behind, the next call works",
          "[control_flow][errors]") {
  struct Thrown {};

  UInt32 hits = ff::zeros<UInt32>(2);
  Float x = ff::arange<Float>(6);
  ff::Stats before = ff::stats();
  // Thrown from the false branch of an if inside a loop body, after scatters in both.
  CHECK_THROWS_AS(ff::while_loop(
                      std::make_tuple(ff::zeros<UInt32>(6)), [](const UInt32& i) { return i < 3u; },
                      [&](UInt32& i) {
                        ff::scatter_add(hits, UInt32(1u), UInt32(0u));
                        Float y = ff::if_stmt(
                            std::make_tuple(x), x > 2.f,
                            [&](const Float& v) {
                              ff::scatter_add(hits, UInt32(1u), UInt32(1u));
                              return v;
                            },
                            [](const Float&) -> Float { throw Thrown{}; });
                        (void)y;
                        i += 1u;
                      }),
                  Thrown);
  // From a switch_ target, and from a loop condition.
  std::vector<std::function<Float(const Float&)>> targets = {
      [](const Float& v) { return v; }, [](const Float&) -> Float { throw Thrown{}; }};
  CHECK_THROWS_AS(ff::switch_(ff::arange<UInt32>(6) % 2u, targets, x), Thrown);
  CHECK_THROWS_AS(
      ff::while_loop(
          std::make_tuple(x), [](const Float&) -> Bool { throw Thrown{}; }, [](Float&) {}),
      Thrown);
  // Nothing of the failed calls ran or runs later.
  CHECK(hits.to_vector() == std::vector<uint32_t>{0, 0});
  CHECK(ff::stats().launches - before.launches <= 1);  // the read of hits at most
  // The same calls without the throw work.
  targets[1] = [](const Float& v) { return v * 10.f; };
  CHECK(ff::switch_(ff::arange<UInt32>(6) % 2u, targets, x).to_vector() ==
        std::vector<float>{0.f, 10.f, 2.f, 30.f, 4.f, 50.f});
  auto [i_end] = ff::while_loop(
      std::make_tuple(ff::zeros<UInt32>(6)), [](const UInt32& i) { return i < 3u; },
      [&](UInt32& i) {
        ff::scatter_add(hits, UInt32(1u), UInt32(0u));
        i += 1u;
      });
  CHECK(i_end.to_vector() == std::vector<uint32_t>(6, 3u));
  CHECK(hits.to_vector() == std::vector<uint32_t>{18, 0});
}

TEST_CASE("a literal state element the body leaves alone comes back as the literal",
          "[control_flow]") {
  Float c = ff::full<Float>(2.5f, 9);  // a literal: no buffer
  auto [k, same] = ff::while_loop(
      std::make_tuple(ff::zeros<UInt32>(9), c),
      [](const UInt32& i, const Float&) { return i < 4u; },
      [](UInt32& i, Float& v) {
        i += ff::cast<UInt32>(v);  // read, not written
      });
  // Reading it back needs no kernel: it is still the literal.
  uint64_t launches = ff::stats().launches;
  CHECK(same.to_vector() == std::vector<float>(9, 2.5f));
  CHECK(ff::stats().launches == launches);
  CHECK(k.to_vector() == std::vector<uint32_t>(9, 4u));
}

TEST_CASE("a loop's name reaches recordings, their files, fused kernels and outer recordings",
          "[control_flow][record]") {
  ff::LoopOptions named;
  named.name = "collatz";
  auto has = [](const ff::Recording& r, const std::string& line) {
    UNSCOPED_INFO(r.to_string());
    return r.to_string().find(line) != std::string::npos;
  };
  UInt32 x0 = starts(7);
  // The loop's kernel and the work fused after it (the optimiser appends it: one kernel).
  auto body = [&](ff::LoopOptions opt) {
    return [&x0, opt] {
      auto [x, s] = collatz_loop(x0, opt);
      UInt32 twice = s * 2u + x;
      return std::vector<ff::AnyArray>{twice};
    };
  };
  ff::Recording rec = ff::record({x0}, body(named));
  CHECK(rec.n_kernels() == 1);
  CHECK(has(rec, "kernel k0 regions: 'collatz'\n"));
  fft::TempFile file("named_loop.ffr");
  rec.save(file.str());
  ff::Recording loaded = ff::Recording::load(file.str());
  CHECK(has(loaded, "kernel k0 regions: 'collatz'\n"));
  CHECK(loaded.replay({starts(5)}).at(0).as<UInt32>().to_vector() ==
        rec.replay({starts(5)}).at(0).as<UInt32>().to_vector());
  // Unnamed: no names at all, and the same kernel as the named loop's.
  ff::Recording plain = ff::record({x0}, body({}));
  CHECK_FALSE(has(plain, "regions:"));

  // Two equal loops under other names are one kernel; its names join (unoptimised: the
  // optimiser would fuse the two launches into one kernel of two such regions).
  ff::LoopOptions other;
  other.name = "again";
  ff::RecordOptions unoptimised;
  unoptimised.optimize = false;
  ff::Recording both = ff::record(
      {x0},
      [&] {
        auto [x1, s1] = collatz_loop(x0, named);
        ff::eval(s1);
        auto [x2, s2] = collatz_loop(x0, other);
        ff::eval(s2);
        return std::vector<ff::AnyArray>{s1, s2};
      },
      unoptimised);
  CHECK(both.n_kernels() == 1);
  CHECK(has(both, "kernel k0 regions: 'collatz | again'\n"));

  // Two different loops evaluated apart, fused by the optimiser: the first launch's region,
  // then the second's.
  ff::LoopOptions halving;
  halving.name = "halving";
  ff::Recording fused = ff::record({x0}, [&] {
    auto [x1, s1] = collatz_loop(x0, named);
    ff::eval(s1);
    auto [h] = ff::while_loop(
        std::make_tuple(x0), [](const UInt32& v) { return v > 1u; }, [](UInt32& v) { v = v / 2u; },
        halving);
    ff::eval(h);
    return std::vector<ff::AnyArray>{s1, h};
  });
  CHECK(fused.n_kernels() == 1);
  CHECK(has(fused, "kernel k0 regions: 'collatz' 'halving'\n"));
  CHECK(fused.replay({starts(3)}).at(1).as<UInt32>().to_vector() == std::vector<uint32_t>{1, 1, 1});

  // A frozen function's replay inside an outer recording keeps the names of its kernels.
  auto frozen = ff::freeze([&](const UInt32& x) {
    auto [y, s] = collatz_loop(x, named);
    return s;
  });
  (void)frozen(x0);  // records
  ff::Recording outer = ff::record({x0}, [&] { return std::vector<ff::AnyArray>{frozen(x0)}; });
  CHECK(frozen.n_recordings() == 1);
  CHECK(has(outer, "regions: 'collatz'\n"));
}
