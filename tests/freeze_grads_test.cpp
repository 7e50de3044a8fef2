// Gradients into frozen functions: grad-enabled arguments are part of the key (and so is
// whether their gradients hold anything yet), the gradients the body accumulates are written
// back, written parameters stay grad-enabled leaves, every one of them equal to the traced
// call's; what cannot cross the boundary yet (gradients back out through a result, an
// argument computed from grad-enabled arrays) is refused by name. The golden file of freeze
// layout 3 replays here.
#include <catch2/catch.hpp>
#include <string>
#include <thread>
#include <vector>

#include "freezeframe/freezeframe.h"
#include "support/grad_steps.h"
#include "support/temp_file.h"

using Catch::Matchers::Contains;
using ff::Float;
using ff::Float64;
using ff::UInt32;
using ffg::ramp;

namespace {

struct Model {
  Float64 w;
  Float b;
  UInt32 seen;  // not a parameter
};

}  // namespace

FF_STRUCT(Model, w, b, seen)

namespace {

Float floats(size_t n, double a, double c) {
  std::vector<float> v;
  for (double d : ramp(n, a, c))
    v.push_back(static_cast<float>(d));
  return Float::from(v);
}

/// A step on a struct of parameters: its float fields grad-enabled outside, its counter not.
void model_step(Model& m, ff::SGD& opt, const Float64& x) {
  Float64 r = m.w * x + ff::cast<Float64>(m.b) - 1.0;
  ff::backward(ff::sum(r * r));
  opt.step(m);
  m.seen = m.seen + 1u;
}

}  // namespace

TEST_CASE(
    "freeze grads: a training step on parameters grad-enabled outside equals the traced one") {
  auto frozen = ff::freeze(ffg::fit_step<ff::Adam>);
  for (size_t n : {size_t{7}, size_t{13}, size_t{2}}) {
    INFO("n = " << n);
    Float64 x = Float64::from(ramp(n, 0.3, 0.2)), y = Float64::from(ramp(n, -0.1, 1.0));
    Float64 wf = ff::zeros<Float64>(n), wt = ff::zeros<Float64>(n);
    ff::make_opaque(wf, wt);
    ff::enable_grad(wf);  // once, outside the loop
    ff::enable_grad(wt);
    ff::Adam of(0.02), ot(0.02);
    of.init(wf);
    ot.init(wt);
    int steps = n == 7 ? 100 : 20;
    for (int it = 0; it < steps; ++it) {
      Float64 lf = frozen(wf, of, x, y);
      Float64 lt = ffg::fit_step(wt, ot, x, y);
      REQUIRE(lf.to_vector() == lt.to_vector());
      REQUIRE(wf.to_vector() == wt.to_vector());
      // The step left a new grad-enabled leaf, as the traced step does: the next call is of
      // the same kind.
      REQUIRE(ff::grad_enabled(wf));
      REQUIRE_FALSE(ff::grad_enabled(lf));
      REQUIRE(ff::grad(wf).to_vector() == std::vector<double>(n, 0.0));
    }
    CHECK(of.m64[0].to_vector() == ot.m64[0].to_vector());
    CHECK(of.v64[0].to_vector() == ot.v64[0].to_vector());
    CHECK(of.t.to_vector() == ot.t.to_vector());
  }
  CHECK(frozen.n_recordings() == 1);  // every size replays the one recording
}

TEST_CASE("freeze grads: the gradient held before the call goes in, the call's comes out") {
  auto frozen = ff::freeze(ffg::accumulate);
  for (size_t n : {size_t{0}, size_t{1}, size_t{2}, size_t{7}, size_t{13}}) {
    INFO("n = " << n);
    Float x = floats(n, 0.5, -1.0);
    Float wf = floats(n, 0.25, 0.5), wt = floats(n, 0.25, 0.5);
    ff::enable_grad(wf);
    ff::enable_grad(wt);
    for (int call = 0; call < 3; ++call) {  // none yet, then one to add to, twice
      frozen(wf, x);
      ffg::accumulate(wt, x);
      REQUIRE(ff::grad(wf).to_vector() == ff::grad(wt).to_vector());
    }
    std::vector<float> g = ff::grad(wf).to_vector();
    for (size_t i = 0; i < n; ++i)  // three calls: 3 * 2 w x
      CHECK(g[i] == Approx(6.0 * (0.25 * double(i % 17) + 0.5) * (0.5 * double(i % 17) - 1.0)));
    // A gradient accumulated outside (a regulariser's) is added to, not replaced.
    ff::backward(ff::sum(wf * 10.f));
    ff::backward(ff::sum(wt * 10.f));
    frozen(wf, x);
    ffg::accumulate(wt, x);
    CHECK(ff::grad(wf).to_vector() == ff::grad(wt).to_vector());
    ff::clear_grad(wf);
    ff::clear_grad(wt);
    frozen(wf, x);
    ffg::accumulate(wt, x);
    CHECK(ff::grad(wf).to_vector() == ff::grad(wt).to_vector());
    CHECK(wf.to_vector() == wt.to_vector());  // no array changed
  }
  // Per size pattern: a call without a gradient held and one with (a literal's key differs
  // from an array's, so the outside regulariser's call may record once more).
  CHECK(frozen.n_replays() > frozen.n_recordings());
}

TEST_CASE("freeze grads: whether an argument has gradients enabled is part of the key") {
  auto body = [](const Float& w) {
    Float s = ff::sum(w * 3.f);
    ff::backward(s);  // no work where w has no gradients
    return ff::detach(s);
  };
  auto frozen = ff::freeze(body);
  Float plain = floats(5, 1.0, 0.0), enabled = floats(5, 1.0, 0.0);
  ff::enable_grad(enabled);
  CHECK(frozen(plain).to_vector() == std::vector<float>{30.f});
  CHECK(frozen(enabled).to_vector() == std::vector<float>{30.f});
  CHECK(frozen.n_recordings() == 2);
  CHECK(ff::grad(enabled).to_vector() == std::vector<float>(5, 3.f));
  CHECK_FALSE(ff::grad_enabled(plain));
  frozen(plain);
  frozen(enabled);  // replays both: the gradient it holds now makes a third kind
  CHECK(ff::grad(enabled).to_vector() == std::vector<float>(5, 6.f));
  frozen(enabled);
  CHECK(ff::grad(enabled).to_vector() == std::vector<float>(5, 9.f));
  CHECK(frozen.n_recordings() == 3);
  CHECK(frozen.n_replays() == 2);
}

TEST_CASE("freeze grads: an argument computed from grad-enabled arrays is refused by name") {
  Float w = floats(4, 1.0, 1.0), x = floats(4, 0.5, 0.0);
  ff::enable_grad(w);
  // backward inside would have to pass through mid to w, outside the call.
  Float mid = w * 2.f;
  ff::enable_grad(mid);
  auto plain = ff::freeze(ffg::accumulate);
  REQUIRE_THROWS_AS(plain(mid, x), ff::FreezeError);
  REQUIRE_THROWS_WITH(plain(mid, x), Contains("args[0] is computed from grad-enabled arrays"));
  // The call after the failed ones.
  plain(w, x);
  CHECK(ff::grad(w).to_vector() == std::vector<float>{0.f, 4.f * 0.5f, 6.f * 1.f, 8.f * 1.5f});
  CHECK(ff::grad(mid).to_vector() == std::vector<float>(4, 0.f));
}

namespace {

struct Four {
  Float a, b, c;
  Float64 d;
};

}  // namespace

FF_STRUCT(Four, a, b, c, d)

namespace {

/// Two outputs (the result and a written argument) from four parameters.
Float64 four_outputs(const Four& p, Float& out) {
  out = p.a * p.b + ff::sin(p.c);
  return ff::cast<Float64>(out * p.a) * p.d;
}

Four four(size_t n, double shift) {
  return {floats(n, 0.25, 0.5 + shift), floats(n, -0.5, 1.0), floats(n, 0.125, -0.25),
          Float64::from(ramp(n, 0.5, 0.75 + shift))};
}

/// Equal up to float rounding: a replay's backward adds each output's contribution on its
/// own, the traced graph adds the outputs' gradients first (they may nearly cancel).
void same_grads(const Float& a, const Float& b) {
  std::vector<float> x = ff::grad(a).to_vector(), y = ff::grad(b).to_vector();
  REQUIRE(x.size() == y.size());
  for (size_t i = 0; i < x.size(); ++i)
    CHECK(x[i] == Approx(y[i]).epsilon(1e-5).margin(2e-5));
}

}  // namespace

TEST_CASE("freeze grads: backward through a frozen call's results reaches its arguments") {
  auto f = [](const Float& w, const Float& x) { return w * w * x; };
  auto frozen = ff::freeze(f);
  for (size_t n : {size_t{7}, size_t{7}, size_t{13}, size_t{2}, size_t{1}, size_t{0}}) {
    INFO("n = " << n);
    Float x = floats(n, 0.5, -1.0);
    Float wf = floats(n, 0.25, 0.5), wt = floats(n, 0.25, 0.5);
    ff::enable_grad(wf);
    ff::enable_grad(wt);
    Float yf = frozen(wf, x), yt = f(wt, x);
    REQUIRE(yf.to_vector() == yt.to_vector());
    CHECK(ff::grad_enabled(yf));
    // Through work after the call, twice: gradients accumulate.
    for (int pass = 0; pass < 2; ++pass) {
      ff::backward(ff::sum(yf * yf));
      ff::backward(ff::sum(yt * yt));
      same_grads(wf, wt);
    }
    // Forward mode does not pass through a replayed call's results (the recording call's
    // results are the traced ones and do).
    if (frozen.n_replays() > 0 && n > 0) {
      Float w2 = floats(n, 0.25, 0.5);
      ff::enable_grad(w2);
      Float y2 = frozen(w2, x);
      REQUIRE_THROWS_WITH(ff::forward(w2), Contains("forward mode does not pass through") &&
                                               Contains("frozen call"));
    }
  }
  CHECK(frozen.n_recordings() <= 3);  // n > 1, n = 1, n = 0 at most

  // Two outputs (the result and a written argument), four parameters of two types.
  auto g = ff::freeze(four_outputs);
  for (size_t n : {size_t{5}, size_t{5}, size_t{9}}) {
    INFO("n = " << n);
    Four pf = four(n, 0.0), pt = four(n, 0.0);
    ff::enable_grad(pf);
    ff::enable_grad(pt);
    Float of = ff::zeros<Float>(n), ot = ff::zeros<Float>(n);
    Float64 rf = g(pf, of), rt = four_outputs(pt, ot);
    REQUIRE(rf.to_vector() == rt.to_vector());
    REQUIRE(of.to_vector() == ot.to_vector());
    ff::backward(ff::sum(rf) + ff::cast<Float64>(ff::sum(of * of)));
    ff::backward(ff::sum(rt) + ff::cast<Float64>(ff::sum(ot * ot)));
    same_grads(pf.a, pt.a);
    same_grads(pf.b, pt.b);
    same_grads(pf.c, pt.c);
    std::vector<double> df = ff::grad(pf.d).to_vector(), dt = ff::grad(pt.d).to_vector();
    for (size_t i = 0; i < n; ++i)
      CHECK(df[i] == Approx(dt[i]).epsilon(1e-6));
  }
  CHECK(g.n_replays() >= 2);

  // One array passed twice, written through one name and read through the other: the
  // backward runs the call again on one copy passed twice, as the call saw it.
  auto twice = [](Float& a, const Float& b) {
    a = a * 2.f;
    return a * b;  // (2w) (2w)
  };
  auto h = ff::freeze(twice);
  for (int call = 0; call < 3; ++call) {
    Float wf = floats(5, 0.5, 0.25), wt = floats(5, 0.5, 0.25);
    ff::enable_grad(wf);
    ff::enable_grad(wt);
    Float w0f = wf, w0t = wt;  // the arrays as they came in (the call writes wf, wt)
    Float yf = h(wf, wf), yt = twice(wt, wt);
    REQUIRE(yf.to_vector() == yt.to_vector());
    ff::backward(ff::sum(yf));
    ff::backward(ff::sum(yt));
    same_grads(w0f, w0t);  // d/dw 4 w^2 = 8 w
  }
  CHECK(h.n_replays() == 2);
}

namespace {

/// Calls ffg::through_step frozen and traced at size n on equal parameters, runs ff::backward
/// through both results and written arguments and checks that the gradients agree. Returns
/// how often the frozen call and its backward ran the body (each run is a trace).
template <class Fn>
int through_and_back(Fn& frozen, size_t n) {
  INFO("n = " << n);
  Float x = floats(n, 0.5, -1.0);
  Float wf = floats(n, 0.25, 0.5), wt = floats(n, 0.25, 0.5);
  ff::enable_grad(wf);
  ff::enable_grad(wt);
  Float yf = floats(n, 0.125, 0.0), yt = floats(n, 0.125, 0.0);
  int before = ffg::through_runs;
  Float rf = frozen(wf, yf, x);
  ff::backward(ff::sum(rf * rf) + ff::sum(yf));
  int runs = ffg::through_runs - before;
  Float rt = ffg::through_step(wt, yt, x);
  ff::backward(ff::sum(rt * rt) + ff::sum(yt));
  CHECK(rf.to_vector() == rt.to_vector());
  CHECK(yf.to_vector() == yt.to_vector());
  same_grads(wf, wt);
  return runs;
}

}  // namespace

TEST_CASE("freeze grads: a frozen call's backward is saved with it and replays after a load") {
  fft::TempFile file("through_backward.ffr"), bare("through_bare.ffr");
  {
    auto frozen = ff::freeze(ffg::through_step, ff::FreezeOptions{.name = "through"});
    CHECK(through_and_back(frozen, 5) == 1);  // records the call (its results are traced)
    // Replays it, and records its backward once per output (the result and y).
    CHECK(through_and_back(frozen, 5) == 2);
    CHECK(through_and_back(frozen, 5) == 0);  // replays both
    frozen.save(file.str());
    // Saved before any backward ran through a replay: the file holds none.
    auto fresh = ff::freeze(ffg::through_step, ff::FreezeOptions{.name = "through"});
    CHECK(through_and_back(fresh, 5) == 1);
    fresh.save(bare.str());
  }
  // Loaded elsewhere: the call and its backward replay, at the saved size and at others.
  auto loaded = ff::freeze(ffg::through_step, ff::FreezeOptions{.name = "through"});
  loaded.load(file.str());
  for (size_t n : {size_t{5}, size_t{9}, size_t{2}, size_t{5}}) {
    INFO("n = " << n);
    CHECK(through_and_back(loaded, n) == 0);
  }
  CHECK(loaded.n_recordings() == 0);
  CHECK(loaded.n_replays() == 4);
  // Sizes 1 and 0 are other kinds of call (whatever the file holds): recorded here, then
  // replayed with their backward.
  for (size_t n : {size_t{1}, size_t{0}}) {
    through_and_back(loaded, n);
    CHECK(through_and_back(loaded, n) == 0);
  }
  // Saved again, the loaded backward goes with it.
  fft::TempFile again("through_again.ffr");
  loaded.save(again.str());
  auto reloaded = ff::freeze(ffg::through_step, ff::FreezeOptions{.name = "through"});
  reloaded.load(again.str());
  CHECK(through_and_back(reloaded, 7) == 0);
  // A file without the backward: the call replays, its backward records (once per output),
  // then replays.
  auto partial = ff::freeze(ffg::through_step, ff::FreezeOptions{.name = "through"});
  partial.load(bare.str());
  CHECK(through_and_back(partial, 5) == 2);
  CHECK(through_and_back(partial, 6) == 0);
}

TEST_CASE("freeze grads: one array passed twice, and parameters in a struct") {
  auto both = ff::freeze([](const Float& a, const Float& b) { ff::backward(ff::sum(a * b)); });
  Float w = floats(3, 1.0, 1.0);
  ff::enable_grad(w);
  both(w, w);  // d/dw sum(w * w) = 2 w
  CHECK(ff::grad(w).to_vector() == std::vector<float>{2.f, 4.f, 6.f});
  Float v = w;  // a copy holds the same node: the same gradient
  both(w, v);
  CHECK(ff::grad(w).to_vector() == std::vector<float>{4.f, 8.f, 12.f});
  CHECK(ff::grad(v).to_vector() == std::vector<float>{4.f, 8.f, 12.f});

  auto frozen = ff::freeze(model_step);
  const size_t n = 6;
  Float64 x = Float64::from(ramp(n, 0.1, 0.3));
  Model mf{ff::zeros<Float64>(n), ff::zeros<Float>(n), UInt32::from({0u})};
  Model mt{ff::zeros<Float64>(n), ff::zeros<Float>(n), UInt32::from({0u})};
  ff::make_opaque(mf.w, mf.b, mt.w, mt.b);
  ff::enable_grad(mf);  // the float fields; the counter is skipped
  ff::enable_grad(mt);
  ff::SGD of(0.05, 0.9), ot(0.05, 0.9);
  of.init(mf);
  ot.init(mt);
  for (int it = 0; it < 10; ++it) {
    frozen(mf, of, x);
    model_step(mt, ot, x);
    REQUIRE(mf.w.to_vector() == mt.w.to_vector());
    REQUIRE(mf.b.to_vector() == mt.b.to_vector());
    REQUIRE(ff::grad_enabled(mf.w));
    REQUIRE(ff::grad_enabled(mf.b));
  }
  CHECK(mf.seen.to_vector() == std::vector<uint32_t>{10});
  CHECK(of.v64[0].to_vector() == ot.v64[0].to_vector());
  CHECK(frozen.n_recordings() == 1);
}

TEST_CASE("freeze grads: verify, SuspendGrad, forward mode and another thread") {
  // Verify re-runs the body traced on copies: the caller's gradient is added to once.
  auto verified = ff::freeze(ffg::accumulate, ff::FreezeOptions{.name = "verified", .verify = 1});
  Float x = floats(5, 1.0, 0.5), wf = floats(5, 0.5, 0.5), wt = floats(5, 0.5, 0.5);
  ff::enable_grad(wf);
  ff::enable_grad(wt);
  for (int call = 0; call < 3; ++call) {
    verified(wf, x);
    ffg::accumulate(wt, x);
    REQUIRE(ff::grad(wf).to_vector() == ff::grad(wt).to_vector());
  }
  CHECK(verified.n_replays() >= 1);

  // Under ff::SuspendGrad the body builds no gradient graph: a kind of call of its own.
  auto frozen = ff::freeze(ffg::accumulate);
  {
    ff::SuspendGrad off;
    frozen(wf, x);
    ffg::accumulate(wt, x);
  }
  CHECK(ff::grad(wf).to_vector() == ff::grad(wt).to_vector());
  frozen(wf, x);
  ffg::accumulate(wt, x);
  CHECK(ff::grad(wf).to_vector() == ff::grad(wt).to_vector());
  CHECK(frozen.n_recordings() == 2);

  // Forward mode inside: the tangent reaches w's own gradient (dw/dw = 1) and y's.
  auto tangent = ff::freeze([](const Float& w) {
    Float y = w * w * 3.f;
    ff::forward(w);
    return ff::detach(ff::grad(y));
  });
  Float a = floats(4, 1.0, 0.0), b = floats(4, 1.0, 0.0);
  ff::enable_grad(a);
  ff::enable_grad(b);
  for (int call = 0; call < 2; ++call) {
    Float ya = tangent(a);
    Float yb = [&] {
      Float y = b * b * 3.f;
      ff::forward(b);
      return ff::detach(ff::grad(y));
    }();
    CHECK(ya.to_vector() == yb.to_vector());
    CHECK(ff::grad(a).to_vector() == ff::grad(b).to_vector());
  }

  // Arrays and their gradients handed to another thread, which calls the frozen function.
  Float wc = floats(5, 0.5, 0.5), wd = floats(5, 0.5, 0.5);
  ff::enable_grad(wc);
  ff::enable_grad(wd);
  std::thread worker([&] { frozen(wc, x); });
  worker.join();
  ffg::accumulate(wd, x);
  CHECK(ff::grad(wc).to_vector() == ff::grad(wd).to_vector());
}

TEST_CASE("freeze grads: a saved training step replays where it is loaded") {
  fft::TempFile file("grad_step.ffr");
  const size_t n = 9;
  Float64 x = Float64::from(ramp(n, 0.3, 0.2)), y = Float64::from(ramp(n, -0.1, 1.0));
  {
    auto first = ff::freeze(ffg::fit_step<ff::SGD>);
    Float64 w = ff::zeros<Float64>(n);
    ff::make_opaque(w);
    ff::enable_grad(w);
    ff::SGD opt(0.1, 0.5);
    opt.init(w);
    first(w, opt, x, y);
    first.save(file.str());
  }
  auto loaded = ff::freeze(ffg::fit_step<ff::SGD>);
  loaded.load(file.str());
  Float64 wl = ff::zeros<Float64>(n), wt = ff::zeros<Float64>(n);
  ff::make_opaque(wl, wt);
  ff::enable_grad(wl);
  ff::enable_grad(wt);
  ff::SGD ol(0.1, 0.5), ot(0.1, 0.5);
  ol.init(wl);
  ot.init(wt);
  for (int it = 0; it < 5; ++it) {
    CHECK(loaded(wl, ol, x, y).to_vector() == ffg::fit_step(wt, ot, x, y).to_vector());
    CHECK(wl.to_vector() == wt.to_vector());
    CHECK(ff::grad_enabled(wl));
  }
  CHECK(loaded.n_replays() == 5);  // the loaded recording, never traced here
  CHECK(loaded.n_recordings() == 0);
}

TEST_CASE("freeze grads: the golden file of freeze layout 3 replays") {
  // tests/data/frozen-grads-layout-3.ffr: tests/tools/make_recordings.cpp's frozen_grads.ffr
  // (ffg::fit_step<ff::Adam> recorded at n = 5), kept as it was written: later builds must
  // keep reading it.
  std::string path = std::string(FF_TEST_DATA_DIR) + "/frozen-grads-layout-3.ffr";
  auto step = ff::freeze(ffg::fit_step<ff::Adam>);
  step.load(path);
  const size_t n = 11;
  Float64 x = Float64::from(ramp(n, 0.3, 0.2)), y = Float64::from(ramp(n, -0.1, 1.0));
  Float64 wl = ff::zeros<Float64>(n), wt = ff::zeros<Float64>(n);
  ff::make_opaque(wl, wt);
  ff::enable_grad(wl);
  ff::enable_grad(wt);
  ff::Adam ol(0.05), ot(0.05);
  ol.init(wl);
  ot.init(wt);
  for (int it = 0; it < 4; ++it) {
    CHECK(step(wl, ol, x, y).to_vector() == ffg::fit_step(wt, ot, x, y).to_vector());
    CHECK(wl.to_vector() == wt.to_vector());
  }
  CHECK(step.n_recordings() == 0);
}

TEST_CASE("freeze grads: the golden file of freeze layout 4 replays a call and its backward") {
  // tests/data/frozen-backward-layout-4.ffr: tests/tools/make_recordings.cpp's
  // frozen_backward.ffr (ffg::through_step recorded at n = 5 with its frozen backward), kept
  // as it was written: later builds must keep reading it.
  std::string path = std::string(FF_TEST_DATA_DIR) + "/frozen-backward-layout-4.ffr";
  auto step = ff::freeze(ffg::through_step, ff::FreezeOptions{.name = "through_step"});
  step.load(path);
  for (size_t n : {size_t{11}, size_t{5}, size_t{3}})
    CHECK(through_and_back(step, n) == 0);
  CHECK(step.n_recordings() == 0);
}

TEST_CASE("freeze grads: a frozen call with gradients inside another frozen function") {
  auto inner = ff::freeze(ffg::accumulate);
  auto body = [&](const Float& w0, const Float& x, bool use_inner) {
    Float w = ff::detach(w0) + 0.f;
    ff::enable_grad(w);
    for (int k = 0; k < 2; ++k) {  // accumulates twice: 4 w x
      if (use_inner)
        inner(w, x);
      else
        ffg::accumulate(w, x);
    }
    return ff::detach(ff::grad(w));
  };
  auto outer = ff::freeze([&](const Float& w0, const Float& x) { return body(w0, x, true); });
  for (size_t n : {size_t{5}, size_t{5}, size_t{8}, size_t{3}}) {
    INFO("n = " << n);
    Float x = floats(n, 0.5, -1.0), w = floats(n, 0.25, 0.5);
    ff::make_opaque(x, w);
    CHECK(outer(w, x).to_vector() == body(w, x, false).to_vector());
  }
  // Once the inner function holds a recording of its own, a recording of the outer one
  // replays it into itself.
  Float x = floats(6, 0.5, -1.0), w = floats(6, 0.25, 0.5);
  ff::make_opaque(x, w);
  Float wi = ff::detach(w) + 0.f, wt = ff::detach(w) + 0.f;
  ff::enable_grad(wi);
  ff::enable_grad(wt);
  inner(wi, x);
  ffg::accumulate(wt, x);
  CHECK(ff::grad(wi).to_vector() == ff::grad(wt).to_vector());
  outer.clear();
  CHECK(outer(w, x).to_vector() == body(w, x, false).to_vector());
  CHECK(outer(w, x).to_vector() == body(w, x, false).to_vector());
  CHECK(outer.n_replays() >= 1);
}
