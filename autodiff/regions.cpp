// Differentiating branch regions (ff::if_stmt, ff::switch_: control_flow.h). Each part is
// traced once more on new leaves, with gradient nodes allowed inside the region for that part
// only; forward mode inside the part gives, per result array and grad-enabled argument, the
// lane-by-lane derivative (a Jacobian that is diagonal, as the part is elementwise in its
// arguments: checked); the region returns those with its results, and each result gets a
// Linear node through which gradients and tangents pass outside the region.
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

namespace {

/// "" for an operation whose derivative is lane by lane, else what it is.
const char* not_lanewise(Kind kind) {
  switch (kind) {
    case Kind::Leaf:
    case Kind::Elementwise:
    case Kind::Cast:
    case Kind::Linear:
      return "";
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
  return "an operation";
}

}  // namespace

std::string ad_lanewise(AdIndex out, AdIndex floor) {
  Graph& g = Graph::get();
  std::lock_guard lock(g.lock());
  const char* what = "";
  g.find_below(out, floor, [&](AdIndex, const Node& n) {
    what = not_lanewise(n.kind);
    return *what != 0;
  });
  return what;
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
