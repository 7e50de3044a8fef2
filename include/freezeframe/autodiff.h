// Automatic differentiation of Float and Float64 arrays, forward and reverse mode
// (docs/autodiff.md). Gradients are traced arrays like any other: lazy, fused into kernels,
// recorded. Arrays that depend on no grad-enabled array cost nothing extra.
#pragma once

#include <string>
#include <type_traits>

#include "freezeframe/array.h"
#include "freezeframe/errors.h"
#include "freezeframe/traverse.h"

namespace ff {
namespace detail {

/// A new reference to the node that makes `v` a grad-enabled array: `current` itself (which
/// then keeps the gradients that reach it) or a new leaf.
AdIndex ad_enable(AdIndex current, Handle v);
/// Reverse mode from y (node 0: nothing to do) with `seed` (0: ones of y's size).
void ad_backward(AdIndex y, Handle yv, Handle seed);
/// The gradient accumulated in node n (a new reference), zeros of v's size where none.
Handle ad_grad(AdIndex n, Handle v);
void ad_clear_grad(AdIndex n);
void ad_suspend(int delta) noexcept;
/// Nodes alive in the gradient graph (tests check that nothing is left behind).
size_t ad_graph_size();

template <class T>
void refuse_not_differentiable(const char* what) {
  throw Error(std::string(what) + ": an array of " + to_string(scalar_type_of<T>) +
              " cannot have gradients (only Float and Float64 arrays can)");
}

}  // namespace detail

/// Makes `x` a leaf of the gradient graph: operations on it record how to differentiate them,
/// and the gradients that reach it accumulate until cleared. On an array computed from other
/// grad-enabled arrays, it also keeps the gradients that reach that array. Any type ff::freeze
/// walks: acts on its Float and Float64 arrays, skips the rest; an integer or Bool array passed
/// directly raises ff::Error.
template <class T>
void enable_grad(Array<T>& x) {
  if constexpr (!detail::kDifferentiable<T>)
    detail::refuse_not_differentiable<T>("enable_grad");
  else
    x.set_ad_index(detail::ad_enable(x.ad_index(), x.id()));
}

template <class T>

requires(!ArrayType<T>) void enable_grad(T& x) {
  detail::for_each_float_array(x, [](auto& a) { enable_grad(a); });
}

/// Whether `x` (or, for a walkable type, any of its arrays) takes part in the gradient graph.
template <class T>
bool grad_enabled(const T& x) {
  bool on = false;
  detail::for_each_float_array(x, [&](const auto& a) { on |= a.ad_index() != 0; });
  return on;
}

/// The gradient accumulated in `x`: an array of x's size, zeros where none flowed (and for an
/// array that does not take part in the gradient graph).
template <class T>

requires detail::kDifferentiable<T> Array<T> grad(const Array<T>& x) {
  return Array<T>::steal(detail::ad_grad(x.ad_index(), x.id()));
}

/// Resets the gradients of `x` (any walkable type: its Float and Float64 arrays) to zeros.
template <class T>
void clear_grad(Array<T>& x) {
  if constexpr (!detail::kDifferentiable<T>)
    detail::refuse_not_differentiable<T>("clear_grad");
  else
    detail::ad_clear_grad(x.ad_index());
}

template <class T>

requires(!ArrayType<T>) void clear_grad(T& x) {
  detail::for_each_float_array(x, [](auto& a) { clear_grad(a); });
}

/// Reverse mode: propagates a gradient of 1 for every element of y (or `seed`, of y's size)
/// back to the grad-enabled arrays y depends on, adding to their gradients. An array that
/// depends on none is no error and no work: every gradient stays as it was.
template <class T>

requires detail::kDifferentiable<T>

void backward(const Array<T>& y) {
  detail::ad_backward(y.ad_index(), y.id(), 0);
}

template <class T>

requires detail::kDifferentiable<T>

void backward(const Array<T>& y, const Array<T>& seed) {
  detail::ad_backward(y.ad_index(), y.id(), seed.id());
}

/// Forward mode: propagates a tangent of 1 from `x` (grad-enabled) through the operations
/// already built from it, adding the derivative along it to the gradient of each array that
/// depends on x, and 1 to x's own (dx/dx). ff::grad(y) reads it.
template <class T>

requires detail::kDifferentiable<T>

void forward(const Array<T>& x) {
  if (!x.ad_index())
    throw Error(
        "forward: the array does not take part in the gradient graph (call "
        "ff::enable_grad on it before computing from it)");
  detail::ad_forward(x.ad_index());
}

/// x's value without gradients: what is computed from it does not reach x's gradient.
template <class T>
Array<T> detach(const Array<T>& x) {
  Array<T> r = x;
  r.set_ad_index(0);
  return r;
}

/// A copy of `x` (any type ff::freeze walks) whose Float and Float64 arrays are detached.
template <class T>

requires(!ArrayType<T>) T detach(const T& x) {
  T r = x;
  detail::for_each_float_array(r, [](auto& a) { a.set_ad_index(0); });
  return r;
}

/// While alive, operations on this thread record no gradient graph: their results are
/// detached (nests).
class SuspendGrad {
 public:
  SuspendGrad() { detail::ad_suspend(1); }

  ~SuspendGrad() { detail::ad_suspend(-1); }

  SuspendGrad(const SuspendGrad&) = delete;
  SuspendGrad& operator=(const SuspendGrad&) = delete;
};

}  // namespace ff
