// Frozen-function bodies with gradients, shared by the tests of gradients into frozen calls
// (tests/freeze_grads_test.cpp) and the program that wrote their golden file
// (tests/tools/make_recordings.cpp): the golden file replays only into the same functions.
#pragma once

#include <freezeframe/freezeframe.h>

#include <atomic>
#include <vector>

namespace ffg {

/// x[i] = a * (i % 17) + c.
inline std::vector<double> ramp(size_t n, double a, double c) {
  std::vector<double> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = a * static_cast<double>(i % 17) + c;
  return v;
}

/// One least-squares step on parameters that are grad-enabled outside the call: the loss's
/// gradient accumulates into w's (added to what it held), and the step replaces w by a new
/// grad-enabled leaf. Returns the loss.
template <class Opt>
ff::Float64 fit_step(ff::Float64& w, Opt& opt, const ff::Float64& x, const ff::Float64& y) {
  ff::Float64 r = w * x - y;
  ff::Float64 loss = ff::mean(r * r);
  ff::backward(loss);
  opt.step(w);
  return ff::detach(loss);
}

/// Accumulates d/dw sum(w * w * x) = 2 w x into w's gradient; changes no array.
inline void accumulate(const ff::Float& w, const ff::Float& x) {
  ff::backward(ff::sum(w * w * x));
}

/// Runs of through_step's body: a call that replays (the call's or its backward's recording)
/// does not run it.
inline std::atomic<int> through_runs{0};

/// Two outputs computed from grad-enabled parameters, through which a later ff::backward
/// passes back to them: the result and a written argument.
inline ff::Float through_step(const ff::Float& w, ff::Float& y, const ff::Float& x) {
  ++through_runs;
  y = ff::sin(w) * x + y;
  return w * w * x;
}

}  // namespace ffg
