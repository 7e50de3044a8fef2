// Gradient-descent optimisers on the gradients of autodiff.h. Their whole changing state (the
// learning rate, the step count, the moments) is arrays, and both are walkable: pass one to a
// frozen function and its replays update that state, so a new step count or learning rate
// never records anew.
#pragma once

#include <string>
#include <vector>

#include "freezeframe/array.h"
#include "freezeframe/autodiff.h"
#include "freezeframe/errors.h"
#include "freezeframe/math.h"
#include "freezeframe/traverse.h"

namespace ff {
namespace detail {

/// One optimiser state array per Float or Float64 parameter array, in walk order, per type:
/// made (zeros) by init() or the first step.
template <class T>
Array<T>& slot(std::vector<Array<T>>& state, size_t i, const Array<T>& param) {
  if (i == state.size()) {
    state.push_back(zeros<Array<T>>(width(param)));
    // A buffer, not a literal: a frozen step keys literals by value, and the moments change.
    make_opaque(state.back());
  }
  return state.at(i);
}

/// Calls f(param, k) for every Float/Float64 array of `params`, k counting the arrays of its
/// type, after checking that they are as many as the state's (n32, n64; 0 before the first
/// step or init()).
template <class P, class F>
void for_each_parameter(P& params, size_t n32, size_t n64, const char* what, F&& f) {
  size_t k32 = 0, k64 = 0;
  for_each_float_array(params, [&](auto& a) {
    ++(std::is_same_v<typename std::remove_cvref_t<decltype(a)>::Value, float> ? k32 : k64);
  });
  if ((n32 && k32 != n32) || (n64 && k64 != n64))
    throw Error(std::string(what) + ": the parameters hold " + std::to_string(k32) + " Float and " +
                std::to_string(k64) + " Float64 arrays, its state was made for " +
                std::to_string(n32) + " and " + std::to_string(n64) +
                " (use one optimiser per set of parameters)");
  k32 = k64 = 0;
  for_each_float_array(params, [&](auto& a) {
    if constexpr (std::is_same_v<typename std::remove_cvref_t<decltype(a)>::Value, float>)
      f(a, k32++);
    else
      f(a, k64++);
  });
}

/// Evaluates the updated arrays together (one launch per size instead of one per parameter).
class EvalList {
 public:
  template <class... A>
  void add(const A&... a) {
    (ids_.push_back(a.id()), ...);
  }

  void run() const { var_eval(ids_); }

 private:
  std::vector<Handle> ids_;  // borrowed: the arrays outlive the list
};

/// The state vector of p's element type.
template <class T>
auto& of_type(std::vector<Array<float>>& f32, std::vector<Array<double>>& f64, const Array<T>&) {
  if constexpr (std::is_same_v<T, float>)
    return f32;
  else
    return f64;
}

/// Replaces p by `value` as a new grad-enabled leaf (its gradient starts at zero).
template <class T>
void become_leaf(Array<T>& p, Array<T> value) {
  p = detach(value);
  enable_grad(p);
}

}  // namespace detail

/// Adam (Kingma and Ba): per element, moments m and v of the gradient g, bias-corrected by the
/// step count t: p -= lr * m^ / (sqrt(v^) + eps).
class Adam {
 public:
  explicit Adam(double learning_rate, double beta_1 = 0.9, double beta_2 = 0.999,
                double epsilon = 1e-8)
      : beta1(beta_1),
        beta2(beta_2),
        eps(epsilon),
        lr(Float64::from({learning_rate})),
        t(Float64::from({0.0})) {}

  /// Sets the learning rate (an array: frozen steps take the new value without recording).
  void set_learning_rate(double value) { lr = Float64::from({value}); }

  /// Makes the state for `params` (zero moments per Float and Float64 array) without a step;
  /// step() does on its first call. A frozen training step that gets an optimiser whose state
  /// exists from its first call records once, not twice.
  template <class P>
  void init(P& params) {
    detail::for_each_parameter(params, m32.size(), m64.size(), "Adam::init",
                               [&](auto& p, size_t k) {
                                 detail::slot(detail::of_type(m32, m64, p), k, p);
                                 detail::slot(detail::of_type(v32, v64, p), k, p);
                               });
  }

  /// One step on every grad-enabled Float and Float64 array of `params` (any walkable type;
  /// the others are left as they are); each becomes a new leaf whose gradient is zero.
  /// Evaluates the parameters and the state.
  template <class P>
  void step(P& params) {
    Float64 t1 = t + 1.0;  // taken when every parameter was accepted
    Float64 c1 = 1.0 - pow(Float64(beta1), t1), c2 = 1.0 - pow(Float64(beta2), t1);
    detail::EvalList updated;
    detail::for_each_parameter(
        params, m32.size(), m64.size(), "Adam::step", [&](auto& p, size_t k) {
          using A = std::remove_cvref_t<decltype(p)>;
          A& m = detail::slot(detail::of_type(m32, m64, p), k, p);
          A& v = detail::slot(detail::of_type(v32, v64, p), k, p);
          if (!p.ad_index())
            return;
          A g = grad(p);
          m = fma(m, A(beta1), g * (1 - beta1));
          v = fma(v, A(beta2), g * g * (1 - beta2));
          A step = cast<A>(lr) * (m / cast<A>(c1)) / (sqrt(v / cast<A>(c2)) + A(eps));
          detail::become_leaf(p, detach(p) - step);
          updated.add(p, m, v);
        });
    t = t1;
    updated.add(t);
    updated.run();
  }

  // The state, walked by ff::freeze (FF_STRUCT below): hyperparameters that do not change,
  // then the arrays that do.
  double beta1, beta2, eps;
  Float64 lr;  // size 1
  Float64 t;   // steps taken, size 1
  std::vector<Float> m32, v32;
  std::vector<Float64> m64, v64;
};

/// Stochastic gradient descent with momentum: v = momentum v + g; p -= lr v.
class SGD {
 public:
  explicit SGD(double learning_rate, double momentum_factor = 0.0)
      : momentum(momentum_factor), lr(Float64::from({learning_rate})) {}

  void set_learning_rate(double value) { lr = Float64::from({value}); }

  /// Makes the velocities for `params` (with momentum), as Adam::init.
  template <class P>
  void init(P& params) {
    if (momentum != 0)
      detail::for_each_parameter(
          params, v32.size(), v64.size(), "SGD::init",
          [&](auto& p, size_t k) { detail::slot(detail::of_type(v32, v64, p), k, p); });
  }

  /// One step on every grad-enabled Float and Float64 array of `params`, as Adam::step.
  template <class P>
  void step(P& params) {
    detail::EvalList updated;
    detail::for_each_parameter(params, v32.size(), v64.size(), "SGD::step", [&](auto& p, size_t k) {
      using A = std::remove_cvref_t<decltype(p)>;
      A* v = momentum != 0 ? &detail::slot(detail::of_type(v32, v64, p), k, p) : nullptr;
      if (!p.ad_index())
        return;
      A g = grad(p);
      if (v) {
        *v = fma(*v, A(momentum), g);
        g = *v;
        updated.add(*v);
      }
      detail::become_leaf(p, detach(p) - cast<A>(lr) * g);
      updated.add(p);
    });
    updated.run();
  }

  double momentum;
  Float64 lr;  // size 1
  std::vector<Float> v32;
  std::vector<Float64> v64;
};

}  // namespace ff

FF_STRUCT(ff::Adam, beta1, beta2, eps, lr, t, m32, v32, m64, v64)
FF_STRUCT(ff::SGD, momentum, lr, v32, v64)
