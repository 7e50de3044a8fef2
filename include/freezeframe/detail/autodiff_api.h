// The gradient layer's entry points that the array templates call (not for direct use). An
// AdIndex names a node of the gradient graph (autodiff/); 0 means "no node": the array does not
// depend on a grad-enabled leaf, and its operations never call into the gradient layer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "freezeframe/detail/tracer_api.h"
#include "freezeframe/reduce_op.h"

namespace ff::detail {

using AdIndex = uint64_t;

void ad_inc_ref(AdIndex n) noexcept;
void ad_dec_ref(AdIndex n) noexcept;

// Each hook is called after the traced operation made `result` (borrowed, like every handle
// here), with the operands' nodes (0 where an operand has none) and variables. It returns the
// result's node (a reference, the caller's), or 0 inside ff::SuspendGrad.
AdIndex ad_unary(Op op, AdIndex a, Handle av, Handle result);
AdIndex ad_binary(Op op, AdIndex a, Handle av, AdIndex b, Handle bv, Handle result);
AdIndex ad_ternary(Op op, AdIndex a, Handle av, AdIndex b, Handle bv, AdIndex c, Handle cv,
                   Handle result);
/// Between floating types only (integer results have no gradient).
AdIndex ad_cast(AdIndex a, Handle av, Handle result);
AdIndex ad_gather(AdIndex source, Handle sv, Handle index, Handle mask, Handle result);
/// A scatter into a target whose node was `target` and value `tv` (now `result`) of `value`: a
/// plain write (reduce false) or a scatter-reduction by `op` (Add, Mul, Min, Max: the others
/// are integer-only and never reach here).
AdIndex ad_scatter(AdIndex target, Handle tv, AdIndex value, Handle vv, Handle index, Handle mask,
                   bool reduce, ReduceOp op, Handle result);
/// Before a scatter with gradients: refuses one inside a region (ff::while_loop, ...).
void ad_check_scatter(bool reduce, ReduceOp op);
AdIndex ad_reduce(Reduction op, AdIndex a, Handle av, Handle result);
AdIndex ad_mean(AdIndex a, Handle av, Handle result);
AdIndex ad_prefix_sum(AdIndex a, Handle av, bool exclusive, Handle result);

}  // namespace ff::detail

namespace ff::detail {

// What ff::freeze needs to carry gradients across a frozen call's boundary (autodiff/boundary.cpp).

/// Forward mode from x (a node): ff::forward, and the derivatives of a differentiated region.
void ad_forward(AdIndex x);
/// Whether node n is a leaf: made by ff::enable_grad on an array that depended on none.
bool ad_is_leaf(AdIndex n);
/// The gradient accumulated in n (a new reference), 0 where none.
Handle ad_grad_var(AdIndex n);
/// Replaces n's gradient by `grad` (borrowed; 0: none, as ff::clear_grad).
void ad_set_grad(AdIndex n, Handle grad);
/// A new leaf for array value v whose gradient is `grad` (borrowed; 0: none); a reference.
AdIndex ad_new_leaf(Handle v, Handle grad);
/// Whether a gradient from `from` would reach any of `targets` (walking its operands).
bool ad_reaches(AdIndex from, const AdIndex* targets, size_t n_targets);
/// A new leaf for a copy v of an array whose node is n, with n's gradient: verify re-runs a
/// frozen body on copies that must not touch the caller's gradients.
AdIndex ad_copy_leaf(AdIndex n, Handle v);
/// Whether ff::SuspendGrad is active on this thread.
bool ad_suspended() noexcept;

/// The backward of a replayed frozen call's outputs (ff::freeze makes it; ff::backward runs it,
/// outside the graph's lock: it records or replays a frozen function of its own).
class CallBackward {
 public:
  virtual ~CallBackward() = default;
  /// The gradients that `seed` (borrowed), a gradient of output `k`, gives the call's
  /// grad-enabled inputs: one per source of the output's node, in order (new references, 0
  /// where none).
  virtual std::vector<Handle> backward(uint32_t k, Handle seed) = 0;
  /// What messages call it ("frozen function 'f'").
  virtual std::string name() const = 0;
};

/// A node for output `k` (value `result`) of a replayed frozen call, whose gradient reaches
/// `sources` (a reference each) through `call`.
AdIndex ad_call_output(std::shared_ptr<CallBackward> call, uint32_t k, const AdIndex* sources,
                       size_t n_sources, Handle result);

// Differentiating ff::if_stmt, ff::switch_ and ff::while_loop (control_flow.h;
// autodiff/regions.cpp).

/// A branch part or loop body being differentiated: gradient nodes may be made inside `depth` open
/// regions (the part's own region, none opened inside it) from nodes numbered `first` or above (the
/// part's new leaves and what it computes from them); using an older node there is refused.
/// first == 0: none (nodes inside regions refused).
struct RegionFloor {
  AdIndex first = 0;
  size_t depth = 0;
};

/// Sets this thread's floor and returns the one before (to restore).
RegionFloor ad_region_floor(RegionFloor floor) noexcept;
/// The number the next node will get.
AdIndex ad_next_index();
/// "" when every node that `out` depends on, numbered `first` or above, is elementwise (a leaf,
/// an elementwise operation, a cast, a branch's or loop's result): its derivative is lane by lane;
/// else what the first other one is ("a gather", "a reduction", ...).
std::string ad_lanewise(AdIndex out, AdIndex first);
/// A node for `result` whose gradient reaches sources[j] times coefs[j] (borrowed, lane by
/// lane: a size-1 source gets the sum over the lanes), and whose tangent is the sum of the
/// sources' tangents times coefs[j]; 0 where no source has a node or inside ff::SuspendGrad.
AdIndex ad_linear(Handle result, const AdIndex* sources, const Handle* coefs, size_t n);

/// Forward mode from each of `leaves` in turn: the derivative of each of `outs` (0: no node)
/// by it, lane by lane, at [out * leaves.size() + leaf] (a reference each; 0 where none
/// reaches). The outs' gradients are left as they were.
std::vector<Handle> ad_lanewise_jacobian(const std::vector<AdIndex>& leaves,
                                         const std::vector<AdIndex>& outs);

// Differentiating ff::while_loop (control_flow.h LoopGrads): the loop carries the lane-wise
// Jacobian of its Float/Float64 state arrays (rows, of `types`) by its grad-enabled initial
// ones (columns), row-major.

/// The Jacobian before the first iteration: column j is 1 at row rows[j], else 0 (size-1
/// literals; a reference each).
std::vector<Handle> ad_loop_identity(const std::vector<ScalarType>& types,
                                     const std::vector<size_t>& rows);
/// One iteration: next[i][j] = sum over l of body[i*m + l] * carried[l][j] (cast to row i's
/// type), where body is the body's lane-wise Jacobian (0: no dependence). A reference each.
std::vector<Handle> ad_loop_step(const std::vector<ScalarType>& types,
                                 const std::vector<Handle>& body,
                                 const std::vector<Handle>& carried);

}  // namespace ff::detail
