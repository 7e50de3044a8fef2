// Building the gradient graph: the array templates call these after each traced operation
// that has an operand with a node (detail/autodiff_api.h). Each records what the operation's
// derivative rule (rules.cpp) will need, and nothing is computed until a gradient is asked for.
#include <string>

#include "autodiff/graph.h"
#include "freezeframe/errors.h"

namespace ff::detail {
namespace {

using ad::Graph;
using ad::Kind;
using ad::Node;
using ad::Var;

/// Whether to make no node: inside ff::SuspendGrad. Inside a symbolic region a node would
/// name values that exist only in the region's kernel: refused, but in a branch part or loop
/// body being differentiated (regions.cpp, control_flow.h), whose nodes stay inside it (`part_ok`;
/// add() checks that their operands are the part's own).
bool skip(bool part_ok = true) {
  if (ad::suspended())
    return true;
  if (var_in_region() && !(part_ok && ad::region_floor()))
    throw Error(
        "an array with gradients enabled is used inside a symbolic region: a while_loop "
        "differentiates only the arrays in its state and a branch of ff::if_stmt or ff::switch_ "
        "only those passed as its arguments, scatters with gradients aside (pass the array in "
        "the loop's state or as the branch's argument, or ff::detach(x))");
  return false;
}

Node node(Kind kind, Handle result) {
  Node n;
  n.kind = kind;
  n.type = var_type(result);
  n.width = var_width(result);
  return n;
}

AdIndex add(Node n) {
  ad::check_floor(n);
  Graph& g = Graph::get();
  std::lock_guard lock(g.lock());
  return g.add(std::move(n));
}

/// Which of an elementwise operation's values its rule reads (rules.cpp: elementwise).
struct Needs {
  bool args = true;
  bool result = false;
};

Needs needs(Op op) {
  switch (op) {
    case Op::Neg:
    case Op::Add:
    case Op::Sub:
      return {false, false};
    case Op::Sqrt:
    case Op::Exp:
    case Op::Tan:
    case Op::Tanh:
    case Op::Exp2:
    case Op::Cbrt:
      return {false, true};
    case Op::Div:
    case Op::Pow:
      return {true, true};
    default:
      return {true, false};
  }
}

/// Operations whose derivative is zero wherever it exists: their results get no node.
bool constant_derivative_zero(Op op) {
  return op == Op::Floor || op == Op::Ceil || op == Op::Round || op == Op::Trunc;
}

AdIndex elementwise(Op op, std::initializer_list<std::pair<AdIndex, Handle>> operands,
                    Handle result) {
  if (constant_derivative_zero(op) || skip())
    return 0;
  Node n = node(Kind::Elementwise, result);
  n.op = op;
  Needs what = needs(op);
  size_t k = 0;
  for (auto [src, v] : operands) {
    n.source[k] = src;
    if (what.args)
      n.arg[k] = Var::borrow(v);
    ++k;
  }
  if (op == Op::Copysign)
    n.source[1] = 0;  // the sign operand: zero derivative almost everywhere
  if (!n.source[0] && !n.source[1] && !n.source[2])
    return 0;
  if (what.result)
    n.result = Var::borrow(result);
  return add(std::move(n));
}

}  // namespace

AdIndex ad_unary(Op op, AdIndex a, Handle av, Handle result) {
  return elementwise(op, {{a, av}}, result);
}

AdIndex ad_binary(Op op, AdIndex a, Handle av, AdIndex b, Handle bv, Handle result) {
  return elementwise(op, {{a, av}, {b, bv}}, result);
}

AdIndex ad_ternary(Op op, AdIndex a, Handle av, AdIndex b, Handle bv, AdIndex c, Handle cv,
                   Handle result) {
  return elementwise(op, {{a, av}, {b, bv}, {c, cv}}, result);
}

AdIndex ad_cast(AdIndex a, Handle, Handle result) {
  if (skip())
    return 0;
  Node n = node(Kind::Cast, result);
  n.source[0] = a;
  return add(std::move(n));
}

AdIndex ad_gather(AdIndex source, Handle, Handle index, Handle mask, Handle result) {
  if (skip())
    return 0;
  Node n = node(Kind::Gather, result);
  n.source[0] = source;
  n.index = Var::borrow(index);
  n.mask = Var::borrow(mask);
  return add(std::move(n));
}

void ad_check_scatter(bool reduce, ReduceOp op) {
  // And and Or combine integers only (refused on floats at compile time): no gradient to follow.
  if (reduce && (op == ReduceOp::And || op == ReduceOp::Or) && !ad::suspended())
    throw Error(std::string("scatter_reduce(") + to_string(op) +
                "): an operand has gradients enabled, and this reduction has no gradient rule "
                "(pass ff::detach(x))");
  skip(false);  // the region check, before the scatter changes the target
}

AdIndex ad_scatter(AdIndex target, Handle tv, AdIndex value, Handle vv, Handle index, Handle mask,
                   bool reduce, ReduceOp op, Handle result) {
  if (skip())
    return 0;
  bool adds = reduce && op == ReduceOp::Add;
  Node n = node(!reduce ? Kind::Scatter : adds ? Kind::ScatterAdd : Kind::ScatterReduce, result);
  n.source[0] = target;
  n.source[1] = value;
  n.arg[1] = Var::borrow(vv);
  if (!adds)
    n.result = Var::borrow(result);  // which lane's write won (rules.cpp: won, winners)
  if (n.kind == Kind::ScatterReduce) {
    n.arg[0] = Var::borrow(tv);
    n.reduction = op == ReduceOp::Mul   ? Reduction::Prod
                  : op == ReduceOp::Min ? Reduction::Min
                                        : Reduction::Max;
  }
  n.index = Var::borrow(index);
  n.mask = Var::borrow(mask);
  return add(std::move(n));
}

AdIndex ad_reduce(Reduction op, AdIndex a, Handle av, Handle result) {
  if (skip())
    return 0;
  Node n = node(Kind::Reduce, result);
  n.reduction = op;
  n.source[0] = a;
  n.arg[0] = Var::borrow(av);
  if (op != Reduction::Sum)
    n.result = Var::borrow(result);
  return add(std::move(n));
}

AdIndex ad_mean(AdIndex a, Handle av, Handle result) {
  if (skip())
    return 0;
  Node n = node(Kind::Mean, result);
  n.source[0] = a;
  n.arg[0] = Var::borrow(av);  // for its width
  return add(std::move(n));
}

AdIndex ad_prefix_sum(AdIndex a, Handle, bool exclusive, Handle result) {
  if (skip())
    return 0;
  Node n = node(Kind::PrefixSum, result);
  n.exclusive = exclusive;
  n.source[0] = a;
  return add(std::move(n));
}

}  // namespace ff::detail
