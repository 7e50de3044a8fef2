// Differentiating branch regions (ff::if_stmt, ff::switch_: control_flow.h). Each part is
// traced once more on new leaves, with gradient nodes allowed inside the region for that part
// only; forward mode inside the part gives, per result array and grad-enabled argument, the
// lane-by-lane derivative (a Jacobian that is diagonal, as the part is elementwise in its
// arguments: checked); the region returns those with its results, and each result gets a
// Linear node through which gradients and tangents pass outside the region. A while_loop
// (ff::while_loop) does the same per iteration: its body's lane-wise Jacobian multiplies the
// Jacobian the loop carries in its state (ad_loop_step), and its results get Linear nodes.
#include <string>
#include <utility>
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

void check_floor(const Node& n) {
  AdIndex floor = region_floor();
  if (!floor || !var_in_region())
    return;
  for_each_source(n, [&](AdIndex s) {
    if (s < floor)
      throw Error(
          "an array with gradients enabled is used inside a while_loop's body without being "
          "in its state, or inside a branch of ff::if_stmt or ff::switch_ without being one "
          "of its arguments (each differentiates only those: pass the array in the state or "
          "as an argument, or ff::detach(x))");
  });
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
  ad::check_floor(node);  // a nested region's arguments or state the part captured
  Graph& g = Graph::get();
  std::lock_guard lock(g.lock());
  return g.add(std::move(node));
}

namespace {

/// Hands the references of `vars` to the caller.
std::vector<Handle> release_all(std::vector<Var>& vars) {
  std::vector<Handle> out;
  for (Var& v : vars)
    out.push_back(v.release());
  return out;
}

}  // namespace

std::vector<Handle> ad_lanewise_jacobian(const std::vector<AdIndex>& leaves,
                                         const std::vector<AdIndex>& outs) {
  std::vector<Var> d(outs.size() * leaves.size());
  for (size_t j = 0; j < leaves.size(); ++j) {
    ad_forward(leaves[j]);
    for (size_t k = 0; k < outs.size(); ++k)  // all read before any is cleared: outs may repeat
      if (outs[k])
        d[k * leaves.size() + j] = Var::steal(ad_grad_var(outs[k]));
    for (AdIndex out : outs)
      if (out)
        ad_set_grad(out, 0);
  }
  return release_all(d);
}

std::vector<Handle> ad_loop_identity(const std::vector<ScalarType>& types,
                                     const std::vector<size_t>& rows) {
  std::vector<Var> id;
  for (size_t i = 0; i < types.size(); ++i)
    for (size_t row : rows)
      id.push_back(ad::lit(types[i], row == i ? 1 : 0));
  return release_all(id);
}

std::vector<Handle> ad_loop_step(const std::vector<ScalarType>& types,
                                 const std::vector<Handle>& body,
                                 const std::vector<Handle>& carried) {
  const size_t m = types.size(), k = m ? carried.size() / m : 0;
  std::vector<Var> next;
  for (size_t i = 0; i < m; ++i)
    for (size_t j = 0; j < k; ++j) {
      Var sum;
      for (size_t l = 0; l < m; ++l) {
        Handle d = body[i * m + l];
        if (!d)
          continue;
        Var c = Var::borrow(carried[l * k + j]);
        if (types[l] != types[i])
          c = ad::cast(types[i], c);
        sum = sum ? Var::steal(var_ternary(Op::Fma, d, c.get(), sum.get()))
                  : Var::steal(var_binary(Op::Mul, d, c.get()));
      }
      next.push_back(sum ? std::move(sum) : ad::lit(types[i], 0));
    }
  return release_all(next);
}

}  // namespace ff::detail
