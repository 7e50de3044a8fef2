// Differentiating branch regions (ff::if_stmt, ff::switch_: control_flow.h). Each part is
// traced once more on new leaves, with gradient nodes allowed inside the region for that part
// only; forward mode inside the part gives, per result array and grad-enabled argument, the
// lane-by-lane derivative (a Jacobian that is diagonal, as the part is elementwise in its
// arguments: checked); the region returns those with its results, and each result gets a
// Linear node through which gradients and tangents pass outside the region.
#include <algorithm>
#include <string>
#include <vector>

#include "autodiff/graph.h"
#include "freezeframe/errors.h"

namespace ff::detail {
namespace ad {

namespace {

// The part being differentiated: its first node number and the regions open inside it.
thread_local AdIndex t_region_floor = 0;
thread_local size_t t_region_depth = 0;

}  // namespace

AdIndex region_floor() noexcept {
  return t_region_floor && var_region_depth() == t_region_depth ? t_region_floor : 0;
}

}  // namespace ad

using ad::Graph;
using ad::Kind;
using ad::Node;
using ad::Var;

RegionFloor ad_region_floor(RegionFloor floor) noexcept {
  RegionFloor old{ad::t_region_floor, ad::t_region_depth};
  ad::t_region_floor = floor.first;
  ad::t_region_depth = floor.depth;
  return old;
}

AdIndex ad_next_index() {
  Graph& g = Graph::get();
  std::lock_guard lock(g.lock());
  return g.next_index();
}

std::string ad_lanewise(AdIndex out, AdIndex floor) {
  Graph& g = Graph::get();
  std::lock_guard lock(g.lock());
  std::vector<AdIndex> todo{out}, seen;
  while (!todo.empty()) {
    AdIndex i = todo.back();
    todo.pop_back();
    if (i < floor || std::find(seen.begin(), seen.end(), i) != seen.end())
      continue;
    seen.push_back(i);
    const Node& n = g.at(i);
    switch (n.kind) {
      case Kind::Leaf:
      case Kind::Elementwise:
      case Kind::Cast:
      case Kind::Linear:
        break;
      case Kind::Gather:
        return "a gather";
      case Kind::Scatter:
      case Kind::ScatterAdd:
      case Kind::ScatterReduce:
        return "a scatter";
      case Kind::Reduce:
      case Kind::Mean:
        return "a reduction";
      case Kind::PrefixSum:
        return "a prefix sum";
      case Kind::CallOutput:
        return "a frozen call";
    }
    ad::for_each_source(n, [&](AdIndex s) { todo.push_back(s); });
  }
  return "";
}

AdIndex ad_linear(Handle result, const AdIndex* sources, const Handle* coefs, size_t n) {
  Node node;
  node.kind = Kind::Linear;
  node.type = var_type(result);
  node.width = var_width(result);
  for (size_t j = 0; j < n; ++j) {
    if (!sources[j])
      continue;
    node.more.push_back(sources[j]);
    node.coef.push_back(Var::borrow(coefs[j]));
  }
  if (node.more.empty() || ad::suspended())
    return 0;
  Graph& g = Graph::get();
  std::lock_guard lock(g.lock());
  return g.add(std::move(node));
}

}  // namespace ff::detail
