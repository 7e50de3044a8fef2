// The traced workloads shared by ff_bench and ff_bench_coldstart.
#pragma once

#include <freezeframe/freezeframe.h>

#include <cmath>
#include <string>
#include <vector>

#include "chain.h"

namespace ff_bench {

/// Traces `n_ops` chain ops starting from y = x, evaluating y every `eval_every` ops (and at
/// the end). Returns y; the caller syncs.
inline ff::Float run_chain(const ff::Float& x, int n_ops, int eval_every) {
  ff::Float y = x;
  for (int k = 0; k < n_ops; ++k) {
    y = chain_op(k, y, x);
    if ((k + 1) % eval_every == 0 || k + 1 == n_ops) {
      ff::eval(y);
    }
  }
  return y;
}

/// Compares y with the host reference; returns an empty string or a description of the first
/// mismatch.
inline std::string check_chain(const ff::Float& y, const std::vector<float>& x, int n_ops) {
  std::vector<float> got = y.to_vector();
  if (got.size() != x.size()) {
    return "result has " + std::to_string(got.size()) + " elements, expected " +
           std::to_string(x.size());
  }
  for (size_t i = 0; i < x.size(); ++i) {
    float want = reference(x[i], n_ops);
    if (!(std::abs(got[i] - want) <= 1e-5f * std::abs(want) + 1e-6f)) {
      return "element " + std::to_string(i) + " is " + std::to_string(got[i]) + ", expected " +
             std::to_string(want);
    }
  }
  return {};
}

}  // namespace ff_bench
