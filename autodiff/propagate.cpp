// Reverse and forward mode: walks of the gradient graph that build the gradients as traced
// operations (lazy: they fuse into kernels and record like any other work).
#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "autodiff/rules.h"
#include "freezeframe/errors.h"
#include "tracer/size_expr_node.h"  // raw_value

namespace ff::detail {
namespace {

using ad::Graph;
using ad::Node;
using ad::Var;

void accumulate(Var& into, Var c) {
  into = into ? into + c : std::move(c);
}

/// The gradients reaching one node in a reverse pass. Those from broadcasts of a size-1 node
/// over wider arrays are summed when the node is reached, one reduction per shape of lanes,
/// not one per use (a parameter used in every step of a simulation).
class Incoming {
 public:
  void add(Var c, const Node& to) {
    ++count_;
    if (!ad::broadcast_over(c, to)) {
      accumulate(fitted_, std::move(c));
      return;
    }
    Size lanes = c.width();
    // Those of one size share a sum. Inside a recording, adding two whose sizes come from
    // different expressions (the buffers of two steps) records a guard that they stay equal:
    // checked at each replay, a failure records anew, never a wrong sum.
    for (auto& [w, sum] : wide_)
      if (raw_value(w) == raw_value(lanes)) {
        sum = sum + c;
        return;
      }
    wide_.emplace_back(lanes, std::move(c));
  }

  Var take() {
    Var g = std::move(fitted_);
    for (auto& [w, sum] : wide_)
      accumulate(g, ad::reduce(Reduction::Sum, sum));
    // A gradient gathered from several uses is evaluated here: left lazy, every gradient
    // computed from it would recompute it, and a chain of such junctions (the steps of a
    // simulation) would cost work quadratic in its length. A chain of single uses stays lazy
    // and fuses.
    if (count_ >= kEvaluateFanIn && g.size() > 1) {
      Handle h = g.get();
      var_eval(std::span<const Handle>(&h, 1));
    }
    return g;
  }

 private:
  static constexpr int kEvaluateFanIn = 3;
  int count_ = 0;
  Var fitted_;
  std::vector<std::pair<Size, Var>> wide_;
};

/// The nodes `root` depends on (itself included), latest first: an order in which every node
/// comes before its operands.
std::vector<AdIndex> reverse_order(Graph& g, AdIndex root) {
  std::vector<AdIndex> order, stack{root};
  std::vector<AdIndex> seen;
  while (!stack.empty()) {
    AdIndex i = stack.back();
    stack.pop_back();
    auto it = std::lower_bound(seen.begin(), seen.end(), i);
    if (it != seen.end() && *it == i)
      continue;
    seen.insert(it, i);
    order.push_back(i);
    ad::for_each_source(g.at(i), [&](AdIndex s) { stack.push_back(s); });
  }
  std::sort(order.begin(), order.end(), std::greater<>());
  return order;
}

/// A replayed frozen call's output: its backward (a frozen function of its own, recorded or
/// replayed) gives the gradients of the call's inputs. It runs traced operations with
/// gradients of its own, so without the lock; the nodes of this walk stay: the array the walk
/// started from holds them.
void call_backward(const Node& n, const Var& grad, std::unique_lock<std::mutex>& lock,
                   std::map<AdIndex, Incoming>& pending) {
  std::shared_ptr<CallBackward> call = n.call;
  std::vector<AdIndex> sources = n.more;
  uint32_t k = n.call_output;
  std::vector<Handle> grads;
  lock.unlock();
  try {
    grads = call->backward(k, grad.get());
  } catch (...) {
    lock.lock();
    throw;
  }
  lock.lock();
  Graph& g = Graph::get();
  for (size_t j = 0; j < grads.size(); ++j) {
    Var c = Var::steal(grads[j]);
    if (c && j < sources.size())
      pending[sources[j]].add(std::move(c), g.at(sources[j]));
  }
}

/// A branch's or loop's result: its gradient times each operand's lane-wise derivative.
void linear_backward(const Node& n, const Var& grad, std::map<AdIndex, Incoming>& pending) {
  Graph& g = Graph::get();
  for (size_t j = 0; j < n.more.size(); ++j) {
    const Node& operand = g.at(n.more[j]);
    Var c = grad * n.coef[j];
    if (operand.type != n.type)
      c = ad::cast(operand.type, c);
    pending[n.more[j]].add(std::move(c), operand);
  }
}

/// ... and its tangent: the operands' tangents times their derivatives.
Var linear_forward(const Node& n, const std::map<AdIndex, Var>& tangent) {
  Var t;
  for (size_t j = 0; j < n.more.size(); ++j) {
    auto from = tangent.find(n.more[j]);
    if (from == tangent.end())
      continue;
    Var c = from->second;
    if (c.type() != n.type)
      c = ad::cast(n.type, c);
    accumulate(t, c * n.coef[j]);
  }
  return t;
}

}  // namespace

void ad_backward(AdIndex y, Handle yv, Handle seed) {
  Var s = seed ? Var::borrow(seed) : Var();
  if (s && var_size(seed) != var_size(yv))
    throw Error("backward: the seed has " + std::to_string(var_size(seed)) +
                " elements and the array " + std::to_string(var_size(yv)) +
                " (a seed has the array's size)");
  if (!y)
    return;  // depends on no grad-enabled array: every gradient stays as it is
  Graph& g = Graph::get();
  std::unique_lock lock(g.lock());
  Node& top = g.at(y);
  if (!s)
    s = ad::lit(top.type, 1, top.width);
  ad::ReversePass pass;
  std::map<AdIndex, Incoming> pending;
  // Kept apart until the walk is through: a pass that throws leaves every gradient as it was.
  std::vector<std::pair<AdIndex, Var>> reached;
  pending[y].add(ad::fit_node(std::move(s), top), top);
  for (AdIndex i : reverse_order(g, y)) {
    auto it = pending.find(i);
    if (it == pending.end())
      continue;
    Var grad = it->second.take();
    pending.erase(it);
    Node& n = g.at(i);
    if (n.retain)
      reached.emplace_back(i, grad);
    if (n.kind == ad::Kind::CallOutput) {
      call_backward(n, grad, lock, pending);
      continue;
    }
    if (n.kind == ad::Kind::Linear) {
      linear_backward(n, grad, pending);
      continue;
    }
    for (int k = 0; k < 3; ++k) {
      AdIndex src = n.source[static_cast<size_t>(k)];
      if (!src)
        continue;
      const Node& operand = g.at(src);
      Var c = ad::reverse(n, k, grad, operand, pass);
      if (c)
        pending[src].add(std::move(c), operand);
    }
  }
  for (auto& [i, grad] : reached)
    accumulate(g.at(i).grad, std::move(grad));
}

void ad_forward(AdIndex x) {
  Graph& g = Graph::get();
  std::lock_guard lock(g.lock());
  Node& start = g.at(x);
  std::map<AdIndex, Var> tangent;
  tangent[x] = ad::lit(start.type, 1, start.width);
  for (auto it = g.after(x); it != g.end(); ++it) {
    Node& n = it->second;
    if (n.kind == ad::Kind::CallOutput) {
      for (AdIndex s : n.more)
        if (tangent.count(s))
          throw Error(n.call->name() +
                      ": forward mode does not pass through a frozen call's results (call "
                      "ff::forward inside the function, or call it unfrozen)");
      continue;
    }
    Var t;
    if (n.kind == ad::Kind::Linear)
      t = linear_forward(n, tangent);
    for (int k = 0; k < 3; ++k) {
      AdIndex src = n.source[static_cast<size_t>(k)];
      auto from = src ? tangent.find(src) : tangent.end();
      if (from == tangent.end())
        continue;
      Var c = ad::forward(n, k, from->second);
      if (c)
        accumulate(t, std::move(c));
    }
    if (!t)
      continue;
    tangent.emplace(it->first, ad::fit_node(std::move(t), n));
  }
  // Added when the walk is through: a pass that throws leaves every gradient as it was.
  for (auto& [i, t] : tangent)
    accumulate(g.at(i).grad, std::move(t));
}

}  // namespace ff::detail
