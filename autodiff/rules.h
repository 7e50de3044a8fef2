// The derivative rules: how a gradient (reverse mode) or a tangent (forward mode) passes
// through one operand of a node, as traced operations. docs/autodiff.md states them.
#pragma once

#include <map>
#include <utility>

#include "autodiff/graph.h"

namespace ff::detail::ad {

/// What one reverse pass computes once and reuses: the masked gradients that gathers at fixed
/// offsets read (a stencil's four neighbours share one), keyed by (mask, gradient).
struct ReversePass {
  std::map<std::pair<Handle, Handle>, Var> masked;
};

/// The contribution of `g`, a gradient of node `n`'s value, to the gradient of its operand `k`
/// (whose node is `src`); empty where none flows. Not yet fitted to the operand's shape.
Var reverse(const Node& n, int k, const Var& g, const Node& src, ReversePass& pass);

/// The contribution of `t`, the tangent of operand `k`, to node `n`'s tangent.
Var forward(const Node& n, int k, const Var& t);

/// Whether a gradient reaching operand `src` came from a broadcast of it over more lanes (so
/// the operand's gradient is its sum).
bool broadcast_over(const Var& c, const Node& src);

/// A tangent of a size-1 operand broadcast to the node's width.
Var fit_node(Var t, const Node& n);

}  // namespace ff::detail::ad
