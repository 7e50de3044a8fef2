// What ff::freeze asks of the gradient graph to carry gradients across a frozen call's
// boundary: a grad-enabled argument's node and gradient go in as inputs of the recording, and
// a replay puts the gradients it computed back into the caller's nodes (frontend/freeze_grads).
#include <algorithm>
#include <vector>

#include "autodiff/graph.h"
#include "freezeframe/autodiff.h"

namespace ff::detail {

using ad::Graph;
using ad::Var;

bool ad_is_leaf(AdIndex n) {
  Graph& g = Graph::get();
  std::lock_guard lock(g.lock());
  return g.at(n).kind == ad::Kind::Leaf;
}

Handle ad_grad_var(AdIndex n) {
  Graph& g = Graph::get();
  std::lock_guard lock(g.lock());
  const Var& grad = g.at(n).grad;
  return grad ? Var(grad).release() : Handle{0};
}

void ad_set_grad(AdIndex n, Handle grad) {
  Var v = grad ? Var::borrow(grad) : Var();
  Graph& g = Graph::get();
  std::lock_guard lock(g.lock());
  g.at(n).grad = std::move(v);
}

AdIndex ad_new_leaf(Handle v, Handle grad) {
  AdIndex n = ad_enable(0, v);
  if (grad)
    ad_set_grad(n, grad);
  return n;
}

bool ad_reaches(AdIndex from, const AdIndex* targets, size_t n_targets) {
  if (!from || n_targets == 0)
    return false;
  // Operands have smaller numbers than their results: nothing below the smallest target can
  // lead to one.
  AdIndex lowest = *std::min_element(targets, targets + n_targets);
  Graph& g = Graph::get();
  std::lock_guard lock(g.lock());
  return g.find_below(from, lowest, [&](AdIndex i, const ad::Node&) {
    return std::find(targets, targets + n_targets, i) != targets + n_targets;
  });
}

AdIndex ad_call_output(std::shared_ptr<CallBackward> call, uint32_t k, const AdIndex* sources,
                       size_t n_sources, Handle result) {
  ad::Node n;
  n.kind = ad::Kind::CallOutput;
  n.type = var_type(result);
  n.width = var_width(result);
  n.call = std::move(call);
  n.call_output = k;
  n.more.assign(sources, sources + n_sources);
  Graph& g = Graph::get();
  std::lock_guard lock(g.lock());
  return g.add(std::move(n));
}

bool ad_suspended() noexcept {
  return ad::suspended();
}

AdIndex ad_copy_leaf(AdIndex n, Handle v) {
  Handle grad = ad_grad_var(n);
  AdIndex leaf = ad_new_leaf(v, grad);
  dec_ref(grad);
  return leaf;
}

}  // namespace ff::detail
