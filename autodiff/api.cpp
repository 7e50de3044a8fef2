// Leaves and gradients: what ff::enable_grad, ff::grad and ff::clear_grad do to the graph.
#include "autodiff/graph.h"

namespace ff::detail {

using ad::Graph;
using ad::Node;
using ad::Var;

AdIndex ad_enable(AdIndex current, Handle v) {
  Graph& g = Graph::get();
  if (current) {
    std::lock_guard lock(g.lock());
    g.at(current).retain = true;  // an intermediate value keeps its gradients from now on
    g.inc_ref(current);
    return current;
  }
  Node n;
  n.kind = ad::Kind::Leaf;
  n.retain = true;
  n.type = var_type(v);
  n.width = var_width(v);
  std::lock_guard lock(g.lock());
  return g.add(std::move(n));
}

Handle ad_grad(AdIndex n, Handle v) {
  if (n) {
    Graph& g = Graph::get();
    std::lock_guard lock(g.lock());
    if (const Var& grad = g.at(n).grad)
      return Var(grad).release();
  }
  return ad::lit(var_type(v), 0, var_width(v)).release();
}

void ad_clear_grad(AdIndex n) {
  if (!n)
    return;
  Graph& g = Graph::get();
  std::lock_guard lock(g.lock());
  g.at(n).grad = Var();
}

size_t ad_graph_size() {
  Graph& g = Graph::get();
  std::lock_guard lock(g.lock());
  return g.size();
}

}  // namespace ff::detail
