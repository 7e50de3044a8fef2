// ff::Adam and ff::SGD: convergence on a least-squares fit against the update written out on
// the host, state that is arrays (a new learning rate or step count records nothing anew), a
// frozen training step that equals the traced one bit for bit and replays at new sizes, and
// the errors.
#include <catch2/catch.hpp>
#include <cmath>
#include <vector>

#include "freezeframe/freezeframe.h"
#include "support/errors.h"
#include "support/temp_file.h"

namespace {

using ff::Float;
using ff::Float64;
using ff::UInt32;

struct Model {
  Float64 w;
  Float b;
  UInt32 seen;  // not a parameter: skipped
};

}  // namespace

FF_STRUCT(Model, w, b, seen)

namespace {

std::vector<double> ramp(size_t n, double a, double c) {
  std::vector<double> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = a * static_cast<double>(i % 17) + c;
  return v;
}

/// Loss mean((w x - y)^2), its gradient, and one optimiser step; returns the loss.
template <class Opt>
Float64 train_step(Float64& w, Opt& opt, const Float64& x, const Float64& y) {
  ff::enable_grad(w);
  Float64 r = w * x - y;
  Float64 loss = ff::mean(r * r);
  ff::backward(loss);
  opt.step(w);
  return ff::detach(loss);
}

}  // namespace

TEST_CASE("optimizers: SGD and Adam steps equal the update written out on the host") {
  const size_t n = 5;
  std::vector<double> xs = ramp(n, 0.25, 0.5), ys = ramp(n, -0.5, 2.0), w0(n, 0.1);
  for (double momentum : {0.0, 0.9}) {
    ff::SGD sgd(0.05, momentum);
    Float64 w = Float64::from(w0);
    std::vector<double> hw = w0, hv(n, 0.0);
    for (int it = 0; it < 5; ++it) {
      train_step(w, sgd, Float64::from(xs), Float64::from(ys));
      for (size_t i = 0; i < n; ++i) {
        double g = 2 * (hw[i] * xs[i] - ys[i]) * xs[i] / n;
        hv[i] = momentum != 0 ? momentum * hv[i] + g : g;
        hw[i] -= 0.05 * hv[i];
      }
    }
    std::vector<double> got = w.to_vector();
    for (size_t i = 0; i < n; ++i)
      CHECK(got[i] == Approx(hw[i]).epsilon(1e-12));
  }
  ff::Adam adam(0.1);
  Float64 w = Float64::from(w0);
  std::vector<double> hw = w0, m(n, 0), v(n, 0);
  for (int it = 1; it <= 5; ++it) {
    train_step(w, adam, Float64::from(xs), Float64::from(ys));
    for (size_t i = 0; i < n; ++i) {
      double g = 2 * (hw[i] * xs[i] - ys[i]) * xs[i] / n;
      m[i] = 0.9 * m[i] + 0.1 * g;
      v[i] = 0.999 * v[i] + 0.001 * g * g;
      double mh = m[i] / (1 - std::pow(0.9, it)), vh = v[i] / (1 - std::pow(0.999, it));
      hw[i] -= 0.1 * mh / (std::sqrt(vh) + 1e-8);
    }
  }
  std::vector<double> got = w.to_vector();
  for (size_t i = 0; i < n; ++i)
    CHECK(got[i] == Approx(hw[i]).epsilon(1e-9));
  CHECK(adam.t.to_vector() == std::vector<double>{5});
}

TEST_CASE("optimizers: a least-squares fit converges, with parameters in a struct") {
  const size_t n = 64;
  Float64 x = Float64::from(ramp(n, 0.1, 0.5));
  Model model{Float64::from(std::vector<double>(n, 0.0)), Float::from({0.f}), UInt32::from({3u})};
  Float64 target = x * 3.0 + 1.0;
  ff::Adam adam(0.05);
  double first = 0, last = 0;
  for (int it = 0; it < 300; ++it) {
    ff::enable_grad(model);
    Float64 r = model.w * x + ff::cast<Float64>(model.b) - target;
    Float64 loss = ff::mean(r * r);
    ff::backward(loss);
    adam.step(model);
    (it == 0 ? first : last) = loss.to_vector()[0];
  }
  CHECK(last < first * 1e-3);
  CHECK(adam.m64.size() == 1);
  CHECK(adam.m32.size() == 1);
  CHECK(model.seen.to_vector() == std::vector<uint32_t>{3});
  CHECK(ff::grad(model.w).to_vector() == std::vector<double>(n, 0.0));  // cleared by the step
}

TEST_CASE("optimizers: a frozen Adam step equals the traced step and replays at new sizes") {
  auto frozen = ff::freeze(train_step<ff::Adam>);
  for (size_t n : {size_t{7}, size_t{13}, size_t{1}}) {
    Float64 x = Float64::from(ramp(n, 0.3, 0.2)), y = Float64::from(ramp(n, -0.1, 1.0));
    Float64 wf = ff::zeros<Float64>(n), wt = ff::zeros<Float64>(n);
    ff::make_opaque(wf, wt);
    ff::Adam of(0.02), ot(0.02);
    of.init(wf);
    ot.init(wt);
    for (int it = 0; it < 100; ++it) {
      if (it == 50) {  // a new learning rate: an array, so nothing records anew
        of.set_learning_rate(0.01);
        ot.set_learning_rate(0.01);
      }
      Float64 lf = frozen(wf, of, x, y);
      Float64 lt = train_step(wt, ot, x, y);
      REQUIRE(lf.to_vector() == lt.to_vector());
      REQUIRE(wf.to_vector() == wt.to_vector());
      CHECK_FALSE(ff::grad_enabled(wf));  // nothing grad-enabled comes out of a frozen call
      CHECK_FALSE(ff::grad_enabled(lf));
    }
    CHECK(of.m64[0].to_vector() == ot.m64[0].to_vector());
    CHECK(of.t.to_vector() == std::vector<double>{100});
    // One recording for every size but 1 (whose arrays broadcast: a kind of its own).
    CHECK(frozen.n_recordings() == (n == 1 ? 2 : 1));
  }
}

TEST_CASE("optimizers: a frozen training step saved to a file replays where it is loaded") {
  fft::TempFile file("train_step.ffr");
  const size_t n = 9;
  Float64 x = Float64::from(ramp(n, 0.3, 0.2)), y = Float64::from(ramp(n, -0.1, 1.0));
  {
    auto first = ff::freeze(train_step<ff::SGD>);
    Float64 w = ff::zeros<Float64>(n);
    ff::make_opaque(w);
    ff::SGD opt(0.1, 0.5);
    opt.init(w);
    first(w, opt, x, y);
    first.save(file.str());
  }
  auto loaded = ff::freeze(train_step<ff::SGD>);
  loaded.load(file.str());
  Float64 wl = ff::zeros<Float64>(n), wt = ff::zeros<Float64>(n);
  ff::make_opaque(wl, wt);
  ff::SGD ol(0.1, 0.5), ot(0.1, 0.5);
  ol.init(wl);
  ot.init(wt);
  for (int it = 0; it < 5; ++it) {
    CHECK(loaded(wl, ol, x, y).to_vector() == train_step(wt, ot, x, y).to_vector());
    CHECK(wl.to_vector() == wt.to_vector());
  }
  CHECK(loaded.n_replays() == 5);  // the loaded recording, never traced here
}

TEST_CASE("optimizers: errors") {
  ff::Adam adam(0.1);
  Float64 a = Float64::from({1.0, 2.0});
  ff::enable_grad(a);
  ff::backward(a * a);
  adam.step(a);
  std::vector<Float64> two{a, a};
  REQUIRE_THROWS_EXACTLY(adam.step(two), ff::Error);
  REQUIRE_THROWS_WITH(adam.step(two),
                      Catch::Contains("2 Float64") && Catch::Contains("one optimiser per set"));
  adam.step(a);                                         // the call after a failed one
  CHECK(adam.t.to_vector() == std::vector<double>{2});  // the failed calls took no step
}
