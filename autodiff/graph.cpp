#include "autodiff/graph.h"

#include "common/assert.h"

namespace ff::detail::ad {
namespace {
thread_local int t_suspended = 0;
}  // namespace

Graph& Graph::get() {
  // Never destroyed: arrays in static storage may drop their nodes after it would be.
  static Graph* g = new Graph;
  return *g;
}

AdIndex Graph::add(Node n) {
  for_each_source(n, [&](AdIndex s) { at(s).refs++; });
  AdIndex i = next_++;
  nodes_.emplace(i, std::move(n));
  return i;
}

Node& Graph::at(AdIndex i) {
  auto it = nodes_.find(i);
  FF_ASSERT(it != nodes_.end(), "gradient graph: node {} is not in the graph", i);
  return it->second;
}

void Graph::inc_ref(AdIndex i) {
  at(i).refs++;
}

void Graph::dec_ref(AdIndex i) {
  // Iterative: a long chain of nodes freed at once must not recurse once per node.
  std::vector<AdIndex> dead{i};
  while (!dead.empty()) {
    AdIndex d = dead.back();
    dead.pop_back();
    auto it = nodes_.find(d);
    FF_ASSERT(it != nodes_.end(), "gradient graph: node {} released twice", d);
    if (--it->second.refs)
      continue;
    for_each_source(it->second, [&](AdIndex s) { dead.push_back(s); });
    // A frozen call's backward holds the user's callable, whose arrays may hold nodes: it is
    // dropped once the lock is released (ad_dec_ref).
    if (it->second.call)
      retired_.push_back(std::move(it->second.call));
    nodes_.erase(it);
  }
}

bool suspended() noexcept {
  return t_suspended > 0;
}

}  // namespace ff::detail::ad

namespace ff::detail {

void ad_inc_ref(AdIndex n) noexcept {
  if (!n)
    return;
  ad::Graph& g = ad::Graph::get();
  std::lock_guard lock(g.lock());
  g.inc_ref(n);
}

void ad_dec_ref(AdIndex n) noexcept {
  if (!n)
    return;
  ad::Graph& g = ad::Graph::get();
  std::vector<std::shared_ptr<CallBackward>> retired;
  {
    std::lock_guard lock(g.lock());
    g.dec_ref(n);
    retired = g.take_retired();
  }
}

void ad_suspend(int delta) noexcept {
  ad::t_suspended += delta;
}

}  // namespace ff::detail
