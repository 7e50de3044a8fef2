// Gradients (autodiff.h): every derivative rule against central finite differences in Float64,
// in reverse and forward mode, at sizes 1, 2, 7 and 1000; gathers and scatters with repeated,
// out-of-range and masked indices; reductions of empty and one-element arrays; accumulation,
// clear_grad, detach, SuspendGrad, walkable parameters, threads, and every refusal with its
// message.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "freezeframe/freezeframe.h"
#include "support/errors.h"

namespace {

using ff::Bool;
using ff::Float;
using ff::Float64;
using ff::Int32;
using ff::UInt32;

struct Params {
  Float64 weight;
  Float bias;
  UInt32 count;  // not differentiable: skipped
  int tag = 1;
};

}  // namespace

FF_STRUCT(Params, weight, bias, count, tag)

namespace {

using Fn = std::function<Float64(const std::vector<Float64>&)>;

/// Input values of one argument: uniform in [lo, hi].
struct Domain {
  double lo = -2, hi = 2;
};

std::vector<double> uniform(std::mt19937_64& rng, size_t n, Domain d) {
  std::uniform_real_distribution<double> u(d.lo, d.hi);
  std::vector<double> v(n);
  for (double& x : v)
    x = u(rng);
  return v;
}

double dot_host(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i)
    s += a[i] * b[i];
  return s;
}

/// L(x) = sum(w * f(x)) without gradients.
double loss(const Fn& f, const std::vector<std::vector<double>>& x, const std::vector<double>& w) {
  ff::SuspendGrad off;
  std::vector<Float64> args;
  for (const auto& v : x)
    args.push_back(Float64::from(v));
  Float64 y = f(args);
  std::vector<double> yv = y.to_vector();
  REQUIRE(yv.size() == w.size());
  return dot_host(yv, w);
}

/// The derivative of L along direction d of argument i, by central differences.
double numeric(const Fn& f, std::vector<std::vector<double>> x, const std::vector<double>& w,
               size_t i, const std::vector<double>& d, double h) {
  std::vector<std::vector<double>> lo = x, hi = x;
  for (size_t j = 0; j < d.size(); ++j) {
    hi[i][j] += h * d[j];
    lo[i][j] -= h * d[j];
  }
  return (loss(f, hi, w) - loss(f, lo, w)) / (2 * h);
}

void close(double got, double want, double scale, const std::string& what) {
  INFO(what << ": got " << got << ", finite differences " << want);
  CHECK(std::abs(got - want) <= 2e-5 * (std::abs(want) + scale + 1));
}

/// Checks f's gradients in reverse mode (every argument, along a random direction) and forward
/// mode (each argument's tangent of ones) against central differences, with a random seed.
/// `sizes[i]` is argument i's size (0: the size n being tested).
void check_rule(const std::string& name, const Fn& f, std::vector<Domain> domains,
                std::vector<size_t> sizes = {}, double h = 1e-6) {
  for (size_t n : {size_t{1}, size_t{2}, size_t{7}, size_t{1000}}) {
    std::mt19937_64 rng(n * 7919 + name.size());
    std::vector<std::vector<double>> x;
    for (size_t i = 0; i < domains.size(); ++i) {
      size_t m = i < sizes.size() && sizes[i] ? sizes[i] : n;
      x.push_back(uniform(rng, m, domains[i]));
    }
    // The output's size, with its seed.
    size_t out_size = 0;
    {
      ff::SuspendGrad off;
      std::vector<Float64> args;
      for (const auto& v : x)
        args.push_back(Float64::from(v));
      out_size = f(args).to_vector().size();
    }
    std::vector<double> w = uniform(rng, out_size, {-1, 1});
    // Reverse mode.
    std::vector<Float64> args;
    for (const auto& v : x) {
      args.push_back(Float64::from(v));
      ff::enable_grad(args.back());
    }
    Float64 y = f(args);
    ff::backward(y, Float64::from(w));
    for (size_t i = 0; i < x.size(); ++i) {
      std::vector<double> g = ff::grad(args[i]).to_vector();
      REQUIRE(g.size() == x[i].size());
      std::vector<double> d = uniform(rng, x[i].size(), {-1, 1});
      double want = numeric(f, x, w, i, d, h);
      close(dot_host(g, d), want, 0,
            name + " reverse, argument " + std::to_string(i) + ", n = " + std::to_string(n));
    }
    // Forward mode, one argument at a time.
    for (size_t i = 0; i < x.size(); ++i) {
      std::vector<Float64> fa;
      for (const auto& v : x)
        fa.push_back(Float64::from(v));
      ff::enable_grad(fa[i]);
      Float64 fy = f(fa);
      ff::forward(fa[i]);
      std::vector<double> ones(x[i].size(), 1.0);
      double want = numeric(f, x, w, i, ones, h);
      std::vector<double> dy = ff::grad(fy).to_vector();
      if (!fy.ad_index()) {  // y does not depend on the argument: its gradient is zero
        close(0, want, 0, name + " forward (no dependence), argument " + std::to_string(i));
        continue;
      }
      REQUIRE(dy.size() == out_size);
      close(dot_host(dy, w), want, 0,
            name + " forward, argument " + std::to_string(i) + ", n = " + std::to_string(n));
    }
  }
}

const Domain kAny{-2, 2};
const Domain kPositive{0.3, 3};
const Domain kUnit{-0.9, 0.9};

}  // namespace

TEST_CASE("autodiff: unary rules match finite differences in both modes") {
  using V = const std::vector<Float64>&;
  check_rule("neg", [](V a) { return -a[0]; }, {kAny});
  check_rule("abs", [](V a) { return ff::abs(a[0]); }, {kAny});
  check_rule("sqrt", [](V a) { return ff::sqrt(a[0]); }, {kPositive});
  check_rule("exp", [](V a) { return ff::exp(a[0]); }, {kAny});
  check_rule("log", [](V a) { return ff::log(a[0]); }, {kPositive});
  check_rule("sin", [](V a) { return ff::sin(a[0]); }, {kAny});
  check_rule("cos", [](V a) { return ff::cos(a[0]); }, {kAny});
  check_rule("tan", [](V a) { return ff::tan(a[0]); }, {{-1.2, 1.2}});
  check_rule("asin", [](V a) { return ff::asin(a[0]); }, {kUnit});
  check_rule("acos", [](V a) { return ff::acos(a[0]); }, {kUnit});
  check_rule("atan", [](V a) { return ff::atan(a[0]); }, {kAny});
  check_rule("sinh", [](V a) { return ff::sinh(a[0]); }, {kAny});
  check_rule("cosh", [](V a) { return ff::cosh(a[0]); }, {kAny});
  check_rule("tanh", [](V a) { return ff::tanh(a[0]); }, {kAny});
  check_rule("asinh", [](V a) { return ff::asinh(a[0]); }, {kAny});
  check_rule("acosh", [](V a) { return ff::acosh(a[0]); }, {{1.1, 4}});
  check_rule("atanh", [](V a) { return ff::atanh(a[0]); }, {kUnit});
  check_rule("exp2", [](V a) { return ff::exp2(a[0]); }, {kAny});
  check_rule("log2", [](V a) { return ff::log2(a[0]); }, {kPositive});
  check_rule("erf", [](V a) { return ff::erf(a[0]); }, {kAny});
  check_rule("cbrt", [](V a) { return ff::cbrt(a[0]); }, {kPositive});
  check_rule("rsqrt", [](V a) { return ff::rsqrt(a[0]); }, {kPositive});
  check_rule("rcp", [](V a) { return ff::rcp(a[0]); }, {kPositive});
  // Piecewise constant: zero almost everywhere (inputs away from the steps).
  check_rule("floor", [](V a) { return ff::floor(a[0]) * a[0]; }, {{0.1, 0.9}});
  check_rule("ceil", [](V a) { return ff::ceil(a[0]) * a[0]; }, {{0.1, 0.9}});
  check_rule("round", [](V a) { return ff::round(a[0]) * a[0]; }, {{0.1, 0.4}});
  check_rule("trunc", [](V a) { return ff::trunc(a[0]) * a[0]; }, {{1.1, 1.9}});
  check_rule("chain", [](V a) { return ff::exp(ff::sin(a[0]) * a[0]) / (a[0] * a[0] + 1.0); },
             {kAny});
}

TEST_CASE("autodiff: binary and ternary rules match finite differences in both modes") {
  using V = const std::vector<Float64>&;
  check_rule("add", [](V a) { return a[0] + a[1]; }, {kAny, kAny});
  check_rule("sub", [](V a) { return a[0] - a[1]; }, {kAny, kAny});
  check_rule("mul", [](V a) { return a[0] * a[1]; }, {kAny, kAny});
  check_rule("div", [](V a) { return a[0] / a[1]; }, {kAny, kPositive});
  check_rule("min", [](V a) { return ff::min(a[0], a[1]); }, {kAny, kAny});
  check_rule("max", [](V a) { return ff::max(a[0], a[1]); }, {kAny, kAny});
  check_rule("atan2", [](V a) { return ff::atan2(a[0], a[1]); }, {kAny, kPositive});
  check_rule("pow", [](V a) { return ff::pow(a[0], a[1]); }, {kPositive, kAny});
  check_rule("copysign", [](V a) { return ff::copysign(a[0], a[1]); }, {kAny, kAny});
  check_rule("fma", [](V a) { return ff::fma(a[0], a[1], a[2]); }, {kAny, kAny, kAny});
  check_rule("select", [](V a) { return ff::select(a[0] > a[1], a[0] * a[1], a[1] - a[0]); },
             {kAny, kAny});
  check_rule("lerp", [](V a) { return ff::lerp(a[0], a[1], a[2]); }, {kAny, kAny, kUnit});
  check_rule("clamp", [](V a) { return ff::clamp(a[0], -1.0, a[1]); }, {kAny, kPositive});
  // Scalars on either side, and a grad-enabled size-1 array broadcast over the others.
  check_rule("scalars", [](V a) { return 3.0 * a[0] - 2.0 / (a[0] + 5.0); }, {kPositive});
  check_rule("broadcast", [](V a) { return a[0] * a[1] + a[0]; }, {kAny, kAny}, {1, 0});
  check_rule("broadcast sum", [](V a) { return a[1] + a[0]; }, {kAny, kAny}, {1, 0});
}

TEST_CASE("autodiff: casts, gathers and scatters match finite differences") {
  using V = const std::vector<Float64>&;
  {
    Float64 x = Float64::from({1.5, -2.25});
    ff::enable_grad(x);
    Float f = ff::cast<Float>(x) * 3.f;
    ff::backward(ff::cast<Float64>(f * f));  // d/dx (3x)^2 = 18x, through two casts
    CHECK(ff::grad(x).to_vector() == std::vector<double>{27, -40.5});
    ff::clear_grad(x);
    ff::forward(x);
    CHECK(ff::grad(f).to_vector() == std::vector<float>{3, 3});
  }
  // Repeated, out-of-range and masked-off indices.
  auto index_of = [](const Float64& a) {
    UInt32 lane = ff::arange<UInt32>(ff::width(a));
    return (lane * 7u + 3u) % 5u + ff::select(lane % 11u == 4u, UInt32(100000u), UInt32(0u));
  };
  check_rule("gather",
             [&](V a) {
               UInt32 lane = ff::arange<UInt32>(ff::width(a[1]));
               return ff::gather(a[0], index_of(a[1]), lane % 3u != 1u) * a[1];
             },
             {kAny, kAny}, {5, 0});
  // Lanes that read at a fixed offset from themselves (a stencil): the transpose is a gather
  // at the opposite offset. Wrapping below 0, past the end, masks, a narrower source, and an
  // Int32 index with a negative literal.
  check_rule("gather at a fixed offset",
             [](V a) {
               UInt32 lane = ff::arange<UInt32>(ff::width(a[1]));
               Float64 left = ff::gather(a[0], lane - 1u, lane % 3u != 1u);
               Float64 right = ff::gather(a[0], lane + 2u);
               Float64 same = ff::gather(a[0], lane);
               Int32 ilane = ff::arange<Int32>(ff::width(a[1]));
               Float64 back = ff::gather(a[0], ilane + (-3));
               return (left * 2.0 + right * a[1] + same) * a[1] + back;
             },
             {kAny, kAny});
  check_rule("gather at a fixed offset from a narrower source",
             [](V a) {
               UInt32 lane = ff::arange<UInt32>(ff::width(a[1]));
               return ff::gather(a[0], lane + 1u) * a[1];
             },
             {kAny, kAny}, {3, 0});
  check_rule("scatter_add",
             [&](V a) {
               Float64 t = a[0] * 1.5;
               UInt32 lane = ff::arange<UInt32>(ff::width(a[1]));
               ff::scatter_add(t, a[1] * a[1], index_of(a[1]), lane % 3u != 1u);
               return t * a[0];
             },
             {kAny, kAny}, {5, 0});
  // Plain scatter: the write that wins takes the gradient; overwritten entries take none.
  // Lanes 2k and 2k + 1 write one entry (neighbours: one thread runs both, in lane order, so
  // the value to differentiate is the same on every call).
  check_rule("scatter",
             [&](V a) {
               Float64 t = a[0] * 2.0;
               UInt32 lane = ff::arange<UInt32>(ff::width(a[1]));
               UInt32 index = lane / 2u + ff::select(lane % 11u == 4u, UInt32(100000u), UInt32(0u));
               ff::scatter(t, ff::sin(a[1]), index, lane % 3u != 1u);
               return t * a[0];
             },
             {kAny, kAny});
  // Products (each value's partial the product of the others and the old entry) and extremes
  // (the entry keeps its old value on a tie; of equal values the first lane wins).
  auto reduce_rule = [&](auto op_constant) {
    constexpr ff::ReduceOp op = decltype(op_constant)::value;  // checked at compile time
    Domain values = op == ff::ReduceOp::Mul ? Domain{0.5, 1.5} : kAny;
    check_rule(std::string("scatter_reduce ") + ff::to_string(op),
               [&](V a) {
                 Float64 t = a[0] * 1.5;
                 UInt32 lane = ff::arange<UInt32>(ff::width(a[1]));
                 ff::scatter_reduce(op, t, a[1] * a[1] + a[1] * 0.25, index_of(a[1]),
                                    lane % 3u != 1u);
                 return t * a[0];
               },
               {kAny, values}, {5, 0});
    check_rule(std::string("block_reduce ") + ff::to_string(op),
               [](V a) { return ff::block_reduce(op, a[0] * a[0], 3) * 2.0; }, {values});
  };
  reduce_rule(std::integral_constant<ff::ReduceOp, ff::ReduceOp::Mul>{});
  reduce_rule(std::integral_constant<ff::ReduceOp, ff::ReduceOp::Min>{});
  reduce_rule(std::integral_constant<ff::ReduceOp, ff::ReduceOp::Max>{});
  check_rule("scatter_reduce of a broadcast value",
             [&](V a) {
               Float64 t = a[0] * 2.0;
               ff::scatter_reduce(ff::ReduceOp::Mul, t, a[1], ff::arange<UInt32>(3) % 2u);
               return t;
             },
             {kAny, kPositive}, {4, 1});
  check_rule("scatter of a broadcast value",
             [&](V a) {
               Float64 t = a[0] * 2.0;
               ff::scatter(t, a[1], ff::arange<UInt32>(3) * 2u);
               return t;
             },
             {kAny, kAny}, {9, 1});
}

TEST_CASE("autodiff: scatter_reduce with zeros in products and ties of min and max") {
  // Mul: entry 0 takes {2, 0, 3} (one zero), entry 1 {0, 0} (two), entry 2 {4}.
  Float64 old = Float64::from({5.0, 7.0, 1.0});
  Float64 v = Float64::from({2.0, 0.0, 3.0, 0.0, 0.0, 4.0});
  UInt32 idx = UInt32::from({0u, 0u, 0u, 1u, 1u, 2u});
  ff::enable_grad(old);
  ff::enable_grad(v);
  Float64 t = old;
  ff::scatter_reduce(ff::ReduceOp::Mul, t, v, idx);
  CHECK(t.to_vector() == std::vector<double>{0, 0, 4});
  ff::backward(t);
  CHECK(ff::grad(old).to_vector() == std::vector<double>{0, 0, 4});  // the values' products
  // Each value: the old entry times the others' product (a lone zero's is the rest's).
  CHECK(ff::grad(v).to_vector() == std::vector<double>{0, 30, 0, 0, 0, 1});
  // Max with ties: entry 0 (old 1) takes 3 from lanes 0 and 2: the first lane wins; entry 1
  // keeps its old 5, which lane 1's 5 ties; lane 3's 2 loses.
  Float64 old2 = Float64::from({1.0, 5.0});
  Float64 v2 = Float64::from({3.0, 5.0, 3.0, 2.0});
  UInt32 idx2 = UInt32::from({0u, 1u, 0u, 1u});
  ff::enable_grad(old2);
  ff::enable_grad(v2);
  Float64 t2 = old2;
  ff::scatter_reduce(ff::ReduceOp::Max, t2, v2, idx2);
  ff::backward(t2, Float64::from({10.0, 20.0}));
  CHECK(ff::grad(old2).to_vector() == std::vector<double>{0, 20});
  CHECK(ff::grad(v2).to_vector() == std::vector<double>{10, 0, 0, 0});
  ff::clear_grad(v2);
  ff::forward(v2);  // the tangent of each entry is its winner's
  CHECK(ff::grad(t2).to_vector() == std::vector<double>{1, 0});
  // Min from every lane of a launch split over the threads: one winner per entry, the value
  // the entry holds.
  const uint32_t n = 100003;
  std::vector<double> big(n);
  for (uint32_t i = 0; i < n; ++i)
    big[i] = 1.0 + (i * 7919u) % 1000u;  // many ties
  Float64 many = Float64::from(big);
  ff::enable_grad(many);
  Float64 low = ff::full<Float64>(1e9, 4);
  ff::scatter_reduce(ff::ReduceOp::Min, low, many, ff::arange<UInt32>(n) % 4u);
  ff::backward(low);
  std::vector<double> g = ff::grad(many).to_vector(), held = low.to_vector();
  std::vector<int> winners(4, 0);
  for (uint32_t i = 0; i < n; ++i)
    if (g[i] != 0) {
      CHECK(big[i] == held[i % 4]);
      winners[i % 4]++;
    }
  CHECK(winners == std::vector<int>{1, 1, 1, 1});
}

TEST_CASE("autodiff: a scatter's racing writes: the lane whose value the entry holds takes it") {
  const uint32_t n = 100003;
  std::vector<double> v(n);
  for (uint32_t i = 0; i < n; ++i)
    v[i] = 1.0 + i;
  Float64 value = Float64::from(v);
  ff::enable_grad(value);
  Float64 target = ff::zeros<Float64>(3);
  UInt32 lane = ff::arange<UInt32>(n);
  ff::scatter(target, value, lane % 3u, lane % 5u != 0u);
  ff::backward(target, Float64::from({10.0, 20.0, 30.0}));
  std::vector<double> held = target.to_vector(), g = ff::grad(value).to_vector();
  std::vector<int> takers(3, 0);
  for (uint32_t i = 0; i < n; ++i) {
    if (g[i] == 0)
      continue;
    uint32_t slot = i % 3;
    CHECK(i % 5 != 0);
    CHECK(g[i] == 10.0 * (slot + 1));
    CHECK(v[i] == held[slot]);  // the lane whose write the entry holds
    takers[slot]++;
  }
  CHECK(takers == std::vector<int>{1, 1, 1});
  // Forward mode agrees: the tangent of each entry is the winning lane's.
  Float64 x = Float64::from(v);
  ff::enable_grad(x);
  Float64 t2 = ff::zeros<Float64>(3);
  ff::scatter(t2, x * 2.0, lane % 3u);
  ff::forward(x);
  CHECK(ff::grad(t2).to_vector() == std::vector<double>{2, 2, 2});
}

TEST_CASE("autodiff: reductions and scans match finite differences") {
  using V = const std::vector<Float64>&;
  check_rule("sum", [](V a) { return ff::sum(a[0] * a[0]) * a[0]; }, {kAny});
  check_rule("prod", [](V a) { return ff::prod(a[0]); }, {{0.5, 1.5}});
  check_rule("mean", [](V a) { return ff::mean(a[0] * a[0]); }, {kAny});
  check_rule("min_reduce", [](V a) { return ff::min_reduce(a[0] * 3.0) + a[0]; }, {kAny});
  check_rule("max_reduce", [](V a) { return ff::max_reduce(ff::sin(a[0])); }, {kAny});
  check_rule("prefix_sum exclusive", [](V a) { return ff::prefix_sum(a[0] * a[0]); }, {kAny});
  check_rule("prefix_sum inclusive", [](V a) { return ff::prefix_sum(a[0], false) * a[0]; },
             {kAny});
  check_rule("dot", [](V a) { return ff::dot(a[0], a[1]); }, {kAny, kAny});
  check_rule("block_sum", [](V a) { return ff::block_sum(a[0] * a[0], 3); }, {kAny});
}

TEST_CASE("autodiff: prod with zeros, ties of min and max, reductions of 0 and 1 elements") {
  Float64 a = Float64::from({2.0, 0.0, 3.0, 4.0});
  ff::enable_grad(a);
  ff::backward(ff::prod(a));
  CHECK(ff::grad(a).to_vector() == std::vector<double>{0, 24, 0, 0});
  Float64 b = Float64::from({0.0, 5.0, 0.0});
  ff::enable_grad(b);
  ff::backward(ff::prod(b));
  CHECK(ff::grad(b).to_vector() == std::vector<double>{0, 0, 0});
  Float64 c = Float64::from({1.0, 3.0, 0.5, 3.0, 0.5});
  ff::enable_grad(c);
  ff::backward(ff::max_reduce(c));
  ff::backward(ff::min_reduce(c) * 10.0);
  CHECK(ff::grad(c).to_vector() == std::vector<double>{0, 1, 10, 0, 0});  // first of the ties
  Float64 m1 = Float64::from({1.0, 1.0});
  Float64 m2 = Float64::from({1.0, 0.0});
  ff::enable_grad(m1);
  ff::enable_grad(m2);
  ff::backward(ff::min(m1, m2) + ff::max(m1, m2) * 2.0);
  CHECK(ff::grad(m1).to_vector() == std::vector<double>{3, 2});  // ties: the first operand
  CHECK(ff::grad(m2).to_vector() == std::vector<double>{0, 1});
  for (size_t n : {size_t{0}, size_t{1}}) {
    Float64 e = ff::full<Float64>(2.0, n);
    ff::enable_grad(e);
    Float64 y = ff::sum(e) + ff::prod(e) + ff::mean(e) + ff::max_reduce(e) + ff::min_reduce(e);
    ff::backward(y);
    std::vector<double> want(n, 1 + 1 + 1 + 1 + 1);
    CHECK(ff::grad(e).to_vector() == want);
    Float64 p = ff::prefix_sum(e);
    ff::backward(p);
    CHECK(ff::grad(e).to_vector().size() == n);
  }
}

TEST_CASE("autodiff: gradients accumulate until cleared, and only reach grad-enabled arrays") {
  Float x = Float::from({1.f, 2.f, 3.f});
  Float k = Float::from({10.f, 20.f, 30.f});  // not grad-enabled
  ff::enable_grad(x);
  CHECK(ff::grad_enabled(x));
  CHECK_FALSE(ff::grad_enabled(k));
  Float y = x * x * k;
  ff::backward(y);
  CHECK(ff::grad(x).to_vector() == std::vector<float>{20, 80, 180});
  ff::backward(y);  // the graph stays: a second pass adds
  CHECK(ff::grad(x).to_vector() == std::vector<float>{40, 160, 360});
  CHECK(ff::grad(k).to_vector() == std::vector<float>{0, 0, 0});  // zeros of its size
  ff::clear_grad(x);
  CHECK(ff::grad(x).to_vector() == std::vector<float>{0, 0, 0});
  ff::backward(x + 1.f);
  CHECK(ff::grad(x).to_vector() == std::vector<float>{1, 1, 1});
  // An intermediate named by enable_grad keeps what reaches it, and passes it on.
  ff::clear_grad(x);
  Float mid = x * 2.f;
  ff::enable_grad(mid);
  ff::backward(mid * mid);
  CHECK(ff::grad(mid).to_vector() == std::vector<float>{4, 8, 12});
  CHECK(ff::grad(x).to_vector() == std::vector<float>{8, 16, 24});
}

TEST_CASE("autodiff: detach, SuspendGrad, and arrays that depend on no grad-enabled leaf") {
  Float x = Float::from({1.f, 2.f});
  ff::enable_grad(x);
  Float d = ff::detach(x);
  CHECK_FALSE(ff::grad_enabled(d));
  CHECK(d.to_vector() == x.to_vector());
  ff::backward(d * x);  // only the x operand carries a gradient
  CHECK(ff::grad(x).to_vector() == std::vector<float>{1, 2});
  ff::clear_grad(x);
  {
    ff::SuspendGrad off;
    Float y = x * 3.f;
    CHECK_FALSE(ff::grad_enabled(y));
    { ff::SuspendGrad nested; }
    CHECK_FALSE(ff::grad_enabled(x * 2.f));  // still suspended after the nested one
    ff::backward(y);                         // depends on nothing: no error, no work
  }
  CHECK(ff::grad(x).to_vector() == std::vector<float>{0, 0});
  CHECK(ff::grad_enabled(x * 3.f));
  Float plain = Float::from({4.f});
  ff::backward(plain * 2.f);  // no error
  CHECK(ff::grad(plain).to_vector() == std::vector<float>{0});
}

TEST_CASE("autodiff: a grad-enabled literal, and parameters in a struct") {
  Float k = 2.f;  // a size-1 literal broadcast over x
  ff::enable_grad(k);
  Float x = Float::from({1.f, 2.f, 3.f});
  ff::backward(k * x);
  CHECK(ff::grad(k).to_vector() == std::vector<float>{6});

  Params p{Float64::from({1.0, 2.0}), Float::from({0.5f}), UInt32::from({7u}), 3};
  ff::enable_grad(p);
  CHECK(ff::grad_enabled(p.weight));
  CHECK(ff::grad_enabled(p.bias));
  CHECK(ff::grad_enabled(p));
  Float64 y = p.weight * p.weight + ff::cast<Float64>(p.bias);
  ff::backward(y);
  CHECK(ff::grad(p.weight).to_vector() == std::vector<double>{2, 4});
  CHECK(ff::grad(p.bias).to_vector() == std::vector<float>{2});
  ff::clear_grad(p);
  CHECK(ff::grad(p.weight).to_vector() == std::vector<double>{0, 0});
  CHECK(ff::grad(p.bias).to_vector() == std::vector<float>{0});
  Params q = ff::detach(p);  // a walkable copy without gradients; p keeps its own
  CHECK_FALSE(ff::grad_enabled(q));
  CHECK(ff::grad_enabled(p));
  CHECK(q.weight.to_vector() == p.weight.to_vector());
  CHECK(q.tag == 3);
}

TEST_CASE("autodiff: forward mode accumulates and reaches every dependent array") {
  Float64 x = Float64::from({0.5, 1.0});
  ff::enable_grad(x);
  Float64 a = x * x;
  Float64 b = ff::sin(a);
  ff::forward(x);
  std::vector<double> da = ff::grad(a).to_vector(), db = ff::grad(b).to_vector();
  CHECK(da == std::vector<double>{1.0, 2.0});
  CHECK(db[0] == Approx(std::cos(0.25) * 1.0));
  CHECK(db[1] == Approx(std::cos(1.0) * 2.0));
  CHECK(ff::grad(x).to_vector() == std::vector<double>{1, 1});  // dx/dx
  ff::forward(x);
  CHECK(ff::grad(a).to_vector() == std::vector<double>{2.0, 4.0});
  ff::clear_grad(a);
  CHECK(ff::grad(a).to_vector() == std::vector<double>{0, 0});
}

TEST_CASE("autodiff: arrays and gradients handed between threads") {
  Float x = Float::from({1.f, 2.f, 3.f});
  ff::enable_grad(x);
  Float y;
  std::thread t([&] { y = ff::exp(x) * x; });
  t.join();
  std::thread b([&] { ff::backward(y); });
  b.join();
  std::vector<float> g = ff::grad(x).to_vector();
  for (size_t i = 0; i < 3; ++i)
    CHECK(g[i] == Approx(std::exp(float(i + 1)) * float(i + 2)));
}

TEST_CASE("autodiff: the graph is freed with the arrays that hold it") {
  size_t before = ff::detail::ad_graph_size();
  {
    Float x = Float::from({1.f, 2.f});
    ff::enable_grad(x);
    Float y = x;
    for (int i = 0; i < 10000; ++i)  // a long chain frees without recursing per node
      y = y * 1.0001f + 0.5f;
    ff::backward(y);
    CHECK(ff::detail::ad_graph_size() > before);
    Float t = Float::from({0.f, 0.f, 0.f});
    ff::scatter(t, x, UInt32::from({2u, 0u}));
  }
  CHECK(ff::detail::ad_graph_size() == before);
}

TEST_CASE("autodiff: refusals name what was wrong") {
  Int32 i = Int32::from({1, 2});
  REQUIRE_THROWS_EXACTLY(ff::enable_grad(i), ff::Error);
  REQUIRE_THROWS_WITH(ff::enable_grad(i),
                      Catch::Contains("int32") && Catch::Contains("only Float and Float64"));
  REQUIRE_THROWS_EXACTLY(ff::clear_grad(i), ff::Error);
  Float x = Float::from({1.f, 2.f});
  REQUIRE_THROWS_WITH(ff::forward(x), Catch::Contains("enable_grad"));
  ff::enable_grad(x);
  Float y = x * 2.f;
  REQUIRE_THROWS_EXACTLY(ff::backward(y, Float::from({1.f, 2.f, 3.f})), ff::Error);
  REQUIRE_THROWS_WITH(ff::backward(y, Float::from({1.f})), Catch::Contains("seed has 1"));
  ff::backward(y, Float::from({1.f, 10.f}));  // the call after a failed one
  CHECK(ff::grad(x).to_vector() == std::vector<float>{2, 20});
  // Integer results carry nothing; the float values around them keep working.
  UInt32 bits = ff::bitcast<UInt32>(x);
  CHECK(bits.to_vector().size() == 2);
}

TEST_CASE("autodiff: while_loop matches finite differences in both modes") {
  // Lanes run 1 to 4 iterations (by position, not by value); the state holds a parameter the
  // body reads but keeps (size n or 1: a size-1 one gets the sum over the lanes).
  auto growth = [](const std::vector<Float64>& v) {
    UInt32 count = ff::arange<UInt32>(v[0].size()) % 4u + 1u;
    auto [xn, an, in] = ff::while_loop(
        std::make_tuple(v[0], v[1], ff::zeros<UInt32>(v[0].size())),
        [&](const Float64&, const Float64&, const UInt32& i) { return i < count; },
        [](Float64& x, Float64& a, UInt32& i) {
          x = x * a + ff::sin(x) * 0.5;
          i += 1u;
        });
    return xn + an * 0.25;
  };
  check_rule("while_loop", growth, {kAny, kUnit});
  check_rule("while_loop, a size-1 state array", growth, {kAny, kUnit}, {0, 1});
  // Two arrays that feed each other and a size-1 constant in the state, cut by max_iterations
  // (lanes that would run 5 iterations stop at 3).
  auto oscillator = [](const std::vector<Float64>& v) {
    ff::LoopOptions opt;
    opt.max_iterations = 3;
    opt.name = "oscillator";
    UInt32 count = ff::arange<UInt32>(v[0].size()) % 6u;
    auto [xn, pn, kn, in] = ff::while_loop(
        std::make_tuple(v[0], v[1], v[2], ff::zeros<UInt32>(v[0].size())),
        [&](const Float64&, const Float64&, const Float64&, const UInt32& i) { return i < count; },
        [](Float64& x, Float64& p, Float64& k, UInt32& i) {
          x = x + p * 0.1;
          p = p - k * x * 0.1;
          i += 1u;
        },
        opt);
    return xn + pn * 0.5 + kn * xn;
  };
  check_rule("while_loop with max_iterations", oscillator, {kAny, kAny, kPositive}, {0, 0, 1});
  // A condition on the differentiated value itself: each lane's count depends on its data.
  auto until = [](const std::vector<Float64>& v) {
    auto [xn] = ff::while_loop(
        std::make_tuple(v[0]), [](const Float64& x) { return x < 5.0; },
        [](Float64& x) { x = x * 1.5 + 0.1; });
    return xn;
  };
  check_rule("while_loop on its own value", until, {kPositive});
  // A branch in the body, and a loop in the body.
  auto nested = [](const std::vector<Float64>& v) {
    auto [xn, yn, in] = ff::while_loop(
        std::make_tuple(v[0], v[1], ff::zeros<UInt32>(v[0].size())),
        [](const Float64&, const Float64&, const UInt32& i) { return i < 3u; },
        [](Float64& x, Float64& y, UInt32& i) {
          x = ff::if_stmt(
              std::make_tuple(x, y), x > 0.0,
              [](const Float64& a, const Float64& b) { return a * b * 0.5; },
              [](const Float64& a, const Float64& b) { return ff::cos(a) + b; });
          auto [zn, xs_n, jn] = ff::while_loop(
              std::make_tuple(y, x, ff::zeros<UInt32>(1)),
              [&](const Float64&, const Float64&, const UInt32& j) { return j < i; },
              [](Float64& z, Float64& xs, UInt32& j) {
                z = z * 0.9 + xs * 0.1;
                j += 1u;
              });
          y = zn;
          i += 1u;
        });
    return xn * yn;
  };
  check_rule("while_loop with a branch and a loop inside", nested, {kAny, kAny});
  // A state array the body replaces without reading it, one set to another's new value, and
  // a size-1 grad-enabled one the body widens.
  auto shifts = [](const std::vector<Float64>& v) {
    auto [prev, xn, copy, s, in] = ff::while_loop(
        std::make_tuple(v[0], v[1], v[0], v[2], ff::zeros<UInt32>(1)),
        [](const Float64&, const Float64&, const Float64&, const Float64&, const UInt32& i) {
          return i < 3u;
        },
        [](Float64& p, Float64& x, Float64& c, Float64& sc, UInt32& i) {
          p = x;
          x = x * x * 0.5 + ff::sin(x) * sc;
          c = x;
          sc = sc * 0.5 + x * 0.1;
          i += 1u;
        });
    return prev + xn * 0.5 + copy * 0.25 + s;
  };
  check_rule("while_loop replacing and copying state arrays", shifts, {kUnit, kUnit, kUnit},
             {0, 0, 1});
  // A branch whose result holds one array twice.
  auto twice = [](const std::vector<Float64>& v) {
    auto [a, b] = ff::if_stmt(
        std::make_tuple(v[0]), v[0] > 0.0,
        [](const Float64& x) {
          Float64 r = x * x;
          return std::make_tuple(r, r);
        },
        [](const Float64& x) { return std::make_tuple(x, x * 3.0); });
    return a + b * 0.5;
  };
  check_rule("if_stmt returning one array twice", twice, {kAny});
  // A loop inside a branch.
  auto in_branch = [](const std::vector<Float64>& v) {
    return ff::if_stmt(
        std::make_tuple(v[0], v[1]), v[0] > 0.0,
        [](const Float64& a, const Float64& b) {
          auto [an, bn, in] = ff::while_loop(
              std::make_tuple(a, b, ff::zeros<UInt32>(1)),
              [](const Float64&, const Float64&, const UInt32& i) { return i < 2u; },
              [](Float64& x, Float64& y, UInt32& i) {
                x = x * y + 0.5;
                y = ff::exp(x * 0.1);
                i += 1u;
              });
          return an + bn;
        },
        [](const Float64& a, const Float64& b) { return a * b; });
  };
  check_rule("while_loop inside a branch", in_branch, {kAny, kAny});
}

TEST_CASE("autodiff: while_loop with two types, at size 0, under SuspendGrad, frozen") {
  // f = f0 * d0 * (d0 + 1) after two iterations: df/dd0 = f0 * (2 d0 + 1), df/df0 = d0 (d0 + 1).
  Float64 d = Float64::from({3.0, -1.0});
  Float f = Float::from({2.f, 5.f});
  ff::enable_grad(d);
  ff::enable_grad(f);
  auto loop = [](const Float64& d0, const Float& f0) {
    return ff::while_loop(
        std::make_tuple(d0, f0, ff::zeros<UInt32>(1)),
        [](const Float64&, const Float&, const UInt32& i) { return i < 2u; },
        [](Float64& dd, Float& ff_, UInt32& i) {
          ff_ = ff_ * ff::cast<Float>(dd);
          dd = dd + 1.0;
          i += 1u;
        });
  };
  auto [d2, f2, i2] = loop(d, f);
  CHECK(f2.to_vector() == std::vector<float>{24.f, 0.f});
  ff::backward(ff::sum(f2));
  CHECK(ff::grad(d).to_vector() == std::vector<double>{14.0, -5.0});
  CHECK(ff::grad(f).to_vector() == std::vector<float>{12.f, 0.f});
  ff::clear_grad(d);
  ff::forward(d);
  CHECK(ff::grad(f2).to_vector() == std::vector<float>{14.f, -5.f});
  CHECK(ff::grad(d2).to_vector() == std::vector<double>{1.0, 1.0});

  // Size 0: nothing runs, gradients of size 0.
  Float64 empty = Float64::from(std::vector<double>{});
  ff::enable_grad(empty);
  auto [e2, ef, ei] = loop(empty, Float::from(std::vector<float>{}));
  ff::backward(ff::sum(e2));
  CHECK(ff::grad(empty).to_vector().empty());

  // Under SuspendGrad the results come out detached.
  {
    ff::SuspendGrad off;
    auto [sd, sf, si] = loop(d, f);
    CHECK_FALSE(ff::grad_enabled(sd));
    CHECK_FALSE(ff::grad_enabled(sf));
    CHECK(sf.to_vector() == std::vector<float>{24.f, 0.f});
  }

  // Traced, then frozen (recorded once, replayed at other sizes): equal gradients. Lane l
  // runs l % 3 iterations of x = x * x * 0.5 + 1.
  auto step = [](const Float& w) {
    Float p = ff::detach(w) + 0.f;
    ff::enable_grad(p);
    UInt32 count = ff::arange<UInt32>(p.size()) % 3u;
    auto [xn, in] = ff::while_loop(
        std::make_tuple(p, ff::zeros<UInt32>(1)),
        [&](const Float&, const UInt32& i) { return i < count; },
        [](Float& x, UInt32& i) {
          x = x * x * 0.5f + 1.f;
          i += 1u;
        });
    ff::backward(ff::sum(xn * 2.f));
    return ff::detach(ff::grad(p));
  };
  auto frozen = ff::freeze(step);
  for (size_t n : {size_t{5}, size_t{5}, size_t{9}, size_t{1}, size_t{2}}) {
    INFO("n = " << n);
    std::vector<float> v(n), want(n);
    for (size_t l = 0; l < n; ++l) {
      v[l] = static_cast<float>(l) * 0.25f - 1.f;
      // d/dv of 2 * x_k: x1 = v^2/2 + 1 (dx1 = v), x2 = x1^2/2 + 1 (dx2 = x1 * v).
      float x1 = v[l] * v[l] * 0.5f + 1.f;
      want[l] = 2.f * (l % 3 == 0 ? 1.f : l % 3 == 1 ? v[l] : x1 * v[l]);
    }
    Float w = Float::from(v);
    std::vector<float> traced = step(w).to_vector(), replayed = frozen(w).to_vector();
    for (size_t l = 0; l < n; ++l) {
      CHECK(traced[l] == Approx(want[l]));
      CHECK(replayed[l] == traced[l]);
    }
  }
  CHECK(frozen.n_recordings() <= 2);
  CHECK(frozen.n_replays() >= 3);
}

TEST_CASE("autodiff: what a while_loop does not differentiate is refused by name") {
  Float x = Float::from({1.f, 2.f});
  ff::enable_grad(x);
  auto halve = [](const Float& v) { return v < 10.f; };
  UInt32 idx = UInt32::from({1u, 0u});
  // A body that reads other lanes of the state: the symbolic loop itself refuses it (so each
  // lane's state depends on its own lane only, which the loop's derivative needs).
  REQUIRE_THROWS_WITH(
      ff::while_loop(std::make_tuple(x), halve,
                     [&](Float& v) { v = ff::gather<Float>(v, idx) * 2.f + v; }),
      Catch::Contains("while_loop: evaluating the value of an array computed inside"));
  ff::LoopOptions named;
  named.name = "sums";
  REQUIRE_THROWS_WITH(ff::while_loop(
                          std::make_tuple(x), halve, [](Float& v) { v = v + ff::sum(v); }, named),
                      Catch::Contains("while_loop 'sums': evaluating"));
  // A grad-enabled array the body captured, with and without grad-enabled state.
  Float captured = Float::from({5.f, 6.f});
  ff::enable_grad(captured);
  Float plain = Float::from({1.f, 2.f});
  REQUIRE_THROWS_WITH(
      ff::while_loop(std::make_tuple(x), halve, [&](Float& v) { v = v * captured; }),
      Catch::Contains("while_loop's body without being in its state"));
  REQUIRE_THROWS_WITH(
      ff::while_loop(std::make_tuple(plain), halve, [&](Float& v) { v = v * captured; }),
      Catch::Contains("a while_loop differentiates only the arrays in its state"));
  REQUIRE_THROWS_WITH(ff::while_loop(std::make_tuple(x), halve, [&](Float& v) { v = captured; }),
                      Catch::Contains("did not compute it from the state"));
  // A scatter with gradients in the body.
  Float target = ff::zeros<Float>(2);
  REQUIRE_THROWS_WITH(ff::while_loop(std::make_tuple(x), halve,
                                     [&](Float& v) {
                                       ff::scatter(target, v, idx);
                                       v = v * 2.f;
                                     }),
                      Catch::Contains("scatters with gradients aside"));
  // A captured grad-enabled array passed on to a region nested in the body: refused too.
  REQUIRE_THROWS_WITH(ff::while_loop(std::make_tuple(x), halve,
                                     [&](Float& v) {
                                       v = ff::if_stmt(
                                           std::make_tuple(v, captured), v > 1.f,
                                           [](const Float& a, const Float& c) { return a * c; },
                                           [](const Float& a, const Float&) { return a * 2.f; });
                                     }),
                      Catch::Contains("while_loop's body without being in its state"));
  REQUIRE_THROWS_WITH(ff::if_stmt(
                          std::make_tuple(x), x > 1.f,
                          [&](const Float& a) {
                            auto [r, rc] = ff::while_loop(
                                std::make_tuple(a, captured),
                                [](const Float& v, const Float&) { return v < 10.f; },
                                [](Float& v, Float& c) { v = v * c; });
                            return r;
                          },
                          [](const Float& a) { return a; }),
                      Catch::Contains("without being one of its arguments"));
  // A body that detaches a state array: that result comes out detached.
  auto [kept, n_kept] = ff::while_loop(
      std::make_tuple(x, ff::zeros<UInt32>(1)),
      [](const Float&, const UInt32& i) { return i < 2u; },
      [](Float& v, UInt32& i) {
        v = ff::detach(v);
        i += 1u;
      });
  CHECK_FALSE(ff::grad_enabled(kept));
  CHECK(kept.to_vector() == std::vector<float>{1.f, 2.f});
  // The evaluated mode runs iterations from the host: no gradients through it.
  ff::LoopOptions evaluated;
  evaluated.mode = ff::LoopMode::Evaluated;
  REQUIRE_THROWS_WITH(ff::while_loop(
                          std::make_tuple(x), halve, [](Float& v) { v = v * 2.f; }, evaluated),
                      Catch::Contains("LoopMode::Evaluated does not differentiate"));
  // The call after each refusal works; with the state detached, the evaluated mode too.
  auto [r] = ff::while_loop(std::make_tuple(x), halve, [](Float& v) { v = v * 2.f; });
  CHECK(r.to_vector() == std::vector<float>{16, 16});
  ff::backward(ff::sum(r));
  CHECK(ff::grad(x).to_vector() == std::vector<float>{16, 8});
  auto [e] = ff::while_loop(
      std::make_tuple(ff::detach(x)), halve, [](Float& v) { v = v * 2.f; }, evaluated);
  CHECK(e.to_vector() == std::vector<float>{16, 16});
  // Frozen functions carry gradients in and back out (tests/freeze_grads_test.cpp).
  auto f = ff::freeze([](const Float& a) { return a * 2.f; });
  CHECK(f(ff::detach(x)).to_vector() == std::vector<float>{2, 4});
  // A branch's argument may not be captured either.
  REQUIRE_THROWS_WITH(ff::if_stmt(
                          std::make_tuple(plain), plain > 1.f,
                          [&](const Float& v) { return v + x; }, [](const Float& v) { return v; }),
                      Catch::Contains("gradients enabled"));
}

TEST_CASE("autodiff: if_stmt and switch_ match finite differences in both modes") {
  // Each lane takes its branch's derivative; a size-1 argument broadcast into the branch gets
  // the sum over the lanes.
  auto branch = [](const std::vector<Float64>& v) {
    return ff::if_stmt(
        std::make_tuple(v[0], v[1]), v[0] > 0.0,
        [](const Float64& a, const Float64& b) { return a * b + ff::sin(a); },
        [](const Float64& a, const Float64& b) { return ff::exp(b) - a * a; });
  };
  check_rule("if_stmt", branch, {kAny, kAny});
  check_rule("if_stmt, a size-1 argument", branch, {kAny, kAny}, {0, 1});
  // Three targets, and lanes out of range (zeros, no gradient); a result of two arrays; an
  // argument passed through unchanged.
  using Pair = std::tuple<Float64, Float64>;
  auto targets = std::array<std::function<Pair(const Float64&, const Float64&)>, 3>{
      [](const Float64& a, const Float64& b) { return Pair(a * b, a); },
      [](const Float64& a, const Float64&) { return Pair(a, a * a); },
      [](const Float64&, const Float64& b) { return Pair(ff::sqrt(b * b + 1.0), b * 2.0); }};
  auto call = [&](const std::vector<Float64>& v) {
    UInt32 index = ff::cast<UInt32>(ff::floor(ff::detach(v[0]) + 2.0));  // 0 to 3
    auto [x, y] = ff::switch_(index, targets, v[0], v[1]);
    return x + y * 0.5;
  };
  check_rule("switch_", call, {kAny, kAny});
  // A branch inside a branch.
  auto nested = [](const std::vector<Float64>& v) {
    return ff::if_stmt(
        std::make_tuple(v[0], v[1]), v[1] > 0.0,
        [](const Float64& a, const Float64& b) {
          return ff::if_stmt(
              std::make_tuple(a, b), a > 0.0,
              [](const Float64& c, const Float64& d) { return c * d * d; },
              [](const Float64& c, const Float64&) { return ff::cos(c); });
        },
        [](const Float64& a, const Float64& b) { return a - b; });
  };
  check_rule("nested if_stmt", nested, {kAny, kAny});
}

TEST_CASE("autodiff: branches at size 0, under SuspendGrad, in frozen functions, and refused") {
  auto square_or_neg = [](const Float& v) {
    return ff::if_stmt(
        std::make_tuple(v), v > 0.f, [](const Float& a) { return a * a; },
        [](const Float& a) { return -a; });
  };
  // Size 0: nothing to do, gradients of size 0.
  Float empty = Float::from(std::vector<float>{});
  ff::enable_grad(empty);
  ff::backward(ff::sum(square_or_neg(empty)));
  CHECK(ff::grad(empty).to_vector().empty());
  // Under SuspendGrad the results come out detached (a result passed through from an
  // argument included).
  Float x = Float::from({-1.f, 2.f, 3.f});
  ff::enable_grad(x);
  {
    ff::SuspendGrad off;
    Float r = ff::if_stmt(
        std::make_tuple(x), x > 0.f, [](const Float& a) { return a; },
        [](const Float& a) { return a * 2.f; });
    CHECK_FALSE(ff::grad_enabled(r));
    CHECK(r.to_vector() == std::vector<float>{-2.f, 2.f, 3.f});
  }
  // Traced, then frozen (recorded once, replayed at other sizes): equal gradients.
  auto step = [&](const Float& w) {
    Float p = ff::detach(w) + 0.f;
    ff::enable_grad(p);
    ff::backward(ff::sum(square_or_neg(p) * 3.f));
    return ff::detach(ff::grad(p));
  };
  auto frozen = ff::freeze(step);
  for (size_t n : {size_t{5}, size_t{5}, size_t{9}, size_t{1}}) {
    INFO("n = " << n);
    std::vector<float> v(n);
    for (size_t i = 0; i < n; ++i)
      v[i] = static_cast<float>(i) - 2.5f;
    Float w = Float::from(v);
    std::vector<float> want(n);
    for (size_t i = 0; i < n; ++i)
      want[i] = v[i] > 0 ? 6.f * v[i] : -3.f;
    CHECK(step(w).to_vector() == want);
    CHECK(frozen(w).to_vector() == want);
  }
  CHECK(frozen.n_recordings() <= 2);
  CHECK(frozen.n_replays() >= 2);

  // What a branch does not differentiate is refused by name, and the call after works.
  Float y = Float::from({1.f, 2.f});
  ff::enable_grad(y);
  UInt32 idx = UInt32::from({1u, 0u});
  REQUIRE_THROWS_WITH(
      ff::if_stmt(
          std::make_tuple(y), y > 0.f, [&](const Float& a) { return ff::gather<Float>(a, idx); },
          [](const Float& a) { return a; }),
      Catch::Contains("if_stmt: result array 0") && Catch::Contains("through a gather"));
  REQUIRE_THROWS_WITH(
      ff::if_stmt(
          std::make_tuple(y), y > 0.f, [](const Float& a) { return a + ff::sum(a); },
          [](const Float& a) { return a; }),
      Catch::Contains("through a reduction"));
  Float captured = Float::from({5.f, 6.f});
  ff::enable_grad(captured);
  REQUIRE_THROWS_WITH(ff::if_stmt(
                          std::make_tuple(y), y > 0.f, [&](const Float& a) { return a * captured; },
                          [](const Float& a) { return a; }),
                      Catch::Contains("without being one of its arguments"));
  Float target = ff::zeros<Float>(2);
  REQUIRE_THROWS_WITH(ff::if_stmt(
                          std::make_tuple(y), y > 0.f,
                          [&](const Float& a) {
                            ff::scatter(target, a, idx);
                            return a;
                          },
                          [](const Float& a) { return a; }),
                      Catch::Contains("scatters with gradients aside"));
  // Arguments and results of two types.
  Float64 d = Float64::from({0.5, 0.25});
  ff::enable_grad(d);
  auto [r, s64] = ff::if_stmt(
      std::make_tuple(y, captured, d), y > 1.f,
      [](const Float& a, const Float& c, const Float64& e) {
        return std::make_tuple(a * c, e * ff::cast<Float64>(a));
      },
      [](const Float& a, const Float& c, const Float64& e) { return std::make_tuple(a + c, e); });
  ff::backward(ff::sum(s64));
  CHECK(ff::grad(y).to_vector() == std::vector<float>{0.f, 0.25f});
  CHECK(ff::grad(d).to_vector() == std::vector<double>{1.0, 2.0});
  ff::clear_grad(y);
  ff::backward(ff::sum(r));
  CHECK(ff::grad(y).to_vector() == std::vector<float>{1.f, 6.f});
  CHECK(ff::grad(captured).to_vector() == std::vector<float>{1.f, 2.f});
  ff::forward(y);
  CHECK(ff::grad(r).to_vector() == std::vector<float>{1.f, 6.f});
}

TEST_CASE("autodiff: a branch that returns an array it captured is refused by name") {
  Float y = Float::from({1.f, 2.f});
  ff::enable_grad(y);
  Float captured = Float::from({5.f, 6.f});
  ff::enable_grad(captured);
  REQUIRE_THROWS_WITH(ff::if_stmt(
                          std::make_tuple(y), y > 1.f, [&](const Float&) { return captured; },
                          [](const Float& a) { return a; }),
                      Catch::Contains("if_stmt: result array 0 has gradients enabled") &&
                          Catch::Contains("did not compute it from its arguments"));
  // Without grad-enabled arguments, the same.
  Float plain = Float::from({1.f, 2.f});
  REQUIRE_THROWS_WITH(ff::if_stmt(
                          std::make_tuple(plain), plain > 1.f,
                          [&](const Float&) { return captured; }, [](const Float& a) { return a; }),
                      Catch::Contains("result has gradients enabled") &&
                          Catch::Contains("did not compute it from its state or arguments"));
  // Passed as an argument, it differentiates.
  Float r = ff::if_stmt(
      std::make_tuple(y, captured), y > 1.f, [](const Float&, const Float& c) { return c; },
      [](const Float& a, const Float&) { return a; });
  ff::backward(ff::sum(r));
  CHECK(ff::grad(captured).to_vector() == std::vector<float>{0.f, 1.f});
  CHECK(ff::grad(y).to_vector() == std::vector<float>{1.f, 0.f});
}

namespace {

/// An argument a branch can move but not copy, nor make without a value.
struct MoveOnly {
  explicit MoveOnly(int v) : value(v) {}

  MoveOnly(MoveOnly&&) = default;
  MoveOnly(const MoveOnly&) = delete;
  int value;
};

}  // namespace

TEST_CASE("autodiff: a branch on an argument it cannot copy is refused only with gradients") {
  Float y = Float::from({1.f, 2.f});
  auto twice = [](const Float& a, const MoveOnly& m) { return a * static_cast<float>(m.value); };
  auto same = [](const Float& a, const MoveOnly&) { return a; };
  // Without gradients it traces as always.
  Float r = ff::if_stmt(std::make_tuple(y, MoveOnly(3)), y > 1.f, twice, same);
  CHECK(r.to_vector() == std::vector<float>{1.f, 6.f});
  ff::enable_grad(y);
  REQUIRE_THROWS_WITH(ff::if_stmt(std::make_tuple(y, MoveOnly(3)), y > 1.f, twice, same),
                      Catch::Contains("if_stmt: an argument has gradients enabled") &&
                          Catch::Contains("do not allow"));
}
