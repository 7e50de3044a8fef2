#include "autodiff/rules.h"

#include <cstdint>
#include <numbers>

#include "common/assert.h"

namespace ff::detail::ad {
namespace {

/// x times the partial derivative of elementwise node n by operand k. A linear map on a
/// diagonal Jacobian: the same in both modes.
Var elementwise(const Node& n, int k, const Var& x) {
  const ScalarType t = n.type;
  auto c = [t](double v) { return lit(t, v); };
  const Var& a = n.arg[0];
  const Var& b = n.arg[1];
  const Var& r = n.result;
  switch (n.op) {
    case Op::Neg:
      return -x;
    case Op::Add:
      return x;
    case Op::Sub:
      return k == 0 ? x : -x;
    case Op::Mul:
      return x * n.arg[1 - k];
    case Op::Div:
      return k == 0 ? x / b : -(x * r / b);
    case Op::Fma:
      return k == 2 ? x : x * n.arg[1 - k];
    case Op::Select:  // operand 0 is the mask
      return k == 1 ? select(a, x, c(0)) : select(a, c(0), x);
    case Op::Min: {  // a wins ties (and NaN comparisons)
      Var b_wins = bin(Op::Lt, b, a);
      return k == 0 ? select(b_wins, c(0), x) : select(b_wins, x, c(0));
    }
    case Op::Max: {
      Var b_wins = bin(Op::Gt, b, a);
      return k == 0 ? select(b_wins, c(0), x) : select(b_wins, x, c(0));
    }
    case Op::Abs:
      return select(bin(Op::Gt, a, c(0)), x, select(bin(Op::Lt, a, c(0)), -x, c(0)));
    case Op::Sqrt:
      return x * (c(0.5) / r);
    case Op::Exp:
      return x * r;
    case Op::Log:
      return x / a;
    case Op::Sin:
      return x * un(Op::Cos, a);
    case Op::Cos:
      return -(x * un(Op::Sin, a));
    case Op::Tan:
      return x * (c(1) + r * r);
    case Op::Asin:
      return x / un(Op::Sqrt, c(1) - a * a);
    case Op::Acos:
      return -(x / un(Op::Sqrt, c(1) - a * a));
    case Op::Atan:
      return x / (c(1) + a * a);
    case Op::Sinh:
      return x * un(Op::Cosh, a);
    case Op::Cosh:
      return x * un(Op::Sinh, a);
    case Op::Tanh:
      return x * (c(1) - r * r);
    case Op::Asinh:
      return x / un(Op::Sqrt, a * a + c(1));
    case Op::Acosh:  // sqrt(a - 1) sqrt(a + 1): no cancellation in a * a - 1 near 1
      return x / (un(Op::Sqrt, a - c(1)) * un(Op::Sqrt, a + c(1)));
    case Op::Atanh:
      return x / (c(1) - a * a);
    case Op::Exp2:
      return x * (r * c(std::numbers::ln2));
    case Op::Log2:
      return x / (a * c(std::numbers::ln2));
    case Op::Erf:
      return x * (c(2 * std::numbers::inv_sqrtpi) * un(Op::Exp, -(a * a)));
    case Op::Cbrt:
      return x / (c(3) * r * r);
    case Op::Atan2: {  // atan2(y = a, x = b)
      Var denom = a * a + b * b;
      return k == 0 ? x * b / denom : -(x * a / denom);
    }
    case Op::Pow:
      // d/da = b a^(b-1) (0 where b == 0, so 0^0 stays flat); d/db = r log(a) for a > 0, where
      // the power is differentiable in b, and 0 elsewhere.
      if (k == 0)
        return select(bin(Op::Eq, b, c(0)), c(0), x * b * bin(Op::Pow, a, b - c(1)));
      return select(bin(Op::Gt, a, c(0)), x * r * un(Op::Log, a), c(0));
    case Op::Copysign:  // |a| with b's sign: d/da = sign(a) sign(b)
      return x * (bin(Op::Copysign, c(1), a) * bin(Op::Copysign, c(1), b));
    default:
      FF_ASSERT(false, "gradient rule: no elementwise rule for operation {}",
                static_cast<int>(n.op));
      return {};
  }
}

Var zeros(const Node& n) {
  return lit(n.type, 0, n.width);
}

/// 0, 1, ..., width(v) - 1 as UInt32.
Var lanes(const Size& width) {
  return Var::steal(var_arange(ScalarType::UInt32, width));
}

/// The lanes of a scatter: the widest of its value, index and mask.
Size scatter_lanes(const Node& n) {
  const Var* widest = &n.index;
  for (const Var* v : {&n.arg[1], &n.mask})
    if (v->size() != 1 && widest->size() == 1)
      widest = v;
  return widest->width();
}

/// The lanes of scatter node n whose write is the one its entry holds afterwards: of the lanes
/// whose value equals what the entry holds, the first. Decided from the result itself, so the
/// gradient agrees with the value whichever lane's write won the race (threads, a GPU).
Var won(const Node& n) {
  Var lane = lanes(scatter_lanes(n));
  Var holds_mine = bin(Op::And, n.mask, bin(Op::Eq, gather(n.result, n.index, n.mask), n.arg[1]));
  Var owner = scattered(lit(ScalarType::UInt32, UINT32_MAX, n.width), lane, n.index, holds_mine,
                        true, ReduceOp::Min);
  Var first = gather(owner, n.index, holds_mine);
  return bin(Op::And, holds_mine, bin(Op::Eq, first, lane));
}

/// scatter_reduce Min/Max node n: which target entries kept their old value (the gradient of a
/// tie goes there, as a tie with the old value leaves it in place), and which value lanes won
/// the others: of the lanes whose value equals what their entry holds, the first.
std::pair<Var, Var> extreme_winners(const Node& n) {
  const Var& old = n.arg[0];
  Var kept = bin(Op::Eq, n.result, old);
  Var lane = lanes(scatter_lanes(n));
  Var holds_mine =
      bin(Op::And, bin(Op::And, n.mask, bin(Op::Eq, gather(n.result, n.index, n.mask), n.arg[1])),
          un(Op::Not, gather(kept, n.index, n.mask)));
  Var owner = scattered(lit(ScalarType::UInt32, UINT32_MAX, n.width), lane, n.index, holds_mine,
                        true, ReduceOp::Min);
  Var first = gather(owner, n.index, holds_mine);
  return {kept, bin(Op::And, holds_mine, bin(Op::Eq, first, lane))};
}

/// scatter_reduce Mul node n: per target entry, the product of its nonzero values and how many
/// were zero; per value lane, the product of the other values of its entry times the entry's
/// old value (its partial derivative), zeros included as prod's rule does.
struct ProductParts {
  Var entry_partial;  // d result / d old, per target entry
  Var lane_partial;   // d result / d value, per value lane
};

ProductParts product_parts(const Node& n) {
  const ScalarType t = n.type;
  const ScalarType u = ScalarType::UInt32;
  const Var& v = n.arg[1];
  Var lane = lanes(scatter_lanes(n));
  Var zero = bin(Op::Eq, v, lit(t, 0));
  Var nonzero_product = scattered(lit(t, 1, n.width), select(zero, lit(t, 1), v), n.index, n.mask,
                                  true, ReduceOp::Mul);
  Var n_zero = scattered(lit(u, 0, n.width), cast(u, zero), n.index, n.mask, true, ReduceOp::Add);
  Var none_zero = bin(Op::Eq, n_zero, lit(u, 0));
  ProductParts p;
  p.entry_partial = select(none_zero, nonzero_product, lit(t, 0));
  Var product_at = gather(nonzero_product, n.index, n.mask);
  Var zeros_at = gather(n_zero, n.index, n.mask);
  Var others = select(zero, select(bin(Op::Eq, zeros_at, lit(u, 1)), product_at, lit(t, 0)),
                      select(bin(Op::Eq, zeros_at, lit(u, 0)), product_at / v, lit(t, 0)));
  p.lane_partial = select(n.mask, others * gather(n.arg[0], n.index, n.mask), lit(t, 0));
  return p;
}

/// The transpose of a gather: g's lanes added into zeros of the source's width at their
/// indices. Where each lane reads at a fixed offset from itself (a stencil's neighbours), that
/// is a gather at the opposite offset, which runs as fast as the forward one; otherwise a
/// scatter_add.
Var gather_transpose(const Node& n, const Var& g, const Node& src, ReversePass& pass) {
  int64_t offset = 0;
  if (!var_lane_offset(n.index.get(), &offset))
    return scattered(zeros(src), g, n.index, n.mask, /*reduce=*/true);
  const ScalarType it = n.index.type();
  Var j = Var::steal(var_arange(it, src.width));
  // j - offset in the index's own (wrapping) arithmetic: a lane before the first or past the
  // last reads nothing, as no forward lane wrote there. Written as j + k or j - k with k >= 0,
  // the form the backends read as a contiguous load at an offset (docs/kernel-ir.md).
  const uint64_t k = offset < 0 ? 0 - static_cast<uint64_t>(offset) : static_cast<uint64_t>(offset);
  Var back = bin(offset < 0 ? Op::Add : Op::Sub, j, Var::steal(var_literal(it, k, Size(1))));
  // One masked copy of g per (mask, g) and pass: a stencil's four neighbours gather from one
  // buffer, evaluated once (the gradient it is made from fuses into that evaluation).
  Var& masked = pass.masked[{n.mask.get(), g.get()}];
  if (!masked)
    masked = select(n.mask, g, lit(n.type, 0));
  return gather(masked, back, lit(ScalarType::Bool, 1));
}

/// mean's divisor: its operand's element count, with provenance.
Var count(const Node& n) {
  return Var::steal(var_width_value(n.type, n.arg[0].get()));
}

/// x in reverse order.
Var flip(const Var& x) {
  Var last = Var::steal(var_width_value(ScalarType::UInt32, x.get())) - lit(ScalarType::UInt32, 1);
  return gather(x, last - lanes(x.width()), lit(ScalarType::Bool, 1));
}

/// Prod's partial by each element, zeros included: the product of the others.
Var prod_partial(const Node& n) {
  const Var& a = n.arg[0];
  const ScalarType t = n.type;
  Var zero = bin(Op::Eq, a, lit(t, 0));
  Var n_zero = reduce(Reduction::Sum, cast(ScalarType::UInt32, zero));
  Var others = reduce(Reduction::Prod, select(zero, lit(t, 1), a));  // product of the nonzeros
  Var only_zero = bin(Op::And, zero, bin(Op::Eq, n_zero, lit(ScalarType::UInt32, 1)));
  return select(bin(Op::Eq, n_zero, lit(ScalarType::UInt32, 0)), others / a,
                select(only_zero, others, lit(t, 0)));
}

/// min_reduce / max_reduce: the first element equal to the result takes the gradient.
Var first_extreme(const Node& n) {
  const Var& a = n.arg[0];
  Var at = select(bin(Op::Eq, a, n.result), lanes(a.width()), lit(ScalarType::UInt32, UINT32_MAX));
  return reduce(Reduction::Min, at);
}

}  // namespace

Var reverse(const Node& n, int k, const Var& g, const Node& src, ReversePass& pass) {
  switch (n.kind) {
    case Kind::Leaf:
      return {};
    case Kind::Elementwise:
      return elementwise(n, k, g);
    case Kind::Cast:
      return cast(src.type, g);
    case Kind::Gather:
      return gather_transpose(n, g, src, pass);
    case Kind::Scatter: {
      if (k == 0)  // overwritten entries take no gradient
        return scattered(g, lit(n.type, 0), n.index, n.mask, false);
      // Each written entry's gradient goes to the lane whose write won.
      return select(won(n), gather(g, n.index, n.mask), lit(n.type, 0));
    }
    case Kind::ScatterAdd:
      return k == 0 ? g : gather(g, n.index, n.mask);
    case Kind::ScatterReduce:
      if (n.reduction == Reduction::Prod) {
        ProductParts p = product_parts(n);
        return k == 0 ? g * p.entry_partial : gather(g, n.index, n.mask) * p.lane_partial;
      } else {
        auto [kept, won_lane] = extreme_winners(n);
        if (k == 0)
          return select(kept, g, lit(n.type, 0));
        return select(won_lane, gather(g, n.index, n.mask), lit(n.type, 0));
      }
    case Kind::Reduce:
      switch (n.reduction) {
        case Reduction::Sum:
          return zeros(src) + g;
        case Reduction::Prod:
          return prod_partial(n) * g;
        case Reduction::Min:
        case Reduction::Max:
          return select(bin(Op::Eq, lanes(src.width), first_extreme(n)), g, lit(n.type, 0));
      }
      return {};
    case Kind::Mean:
      return (zeros(src) + g) / count(n);
    case Kind::PrefixSum:  // a suffix sum: the prefix sum of the reversed gradient, reversed
      return flip(Var::steal(var_prefix_sum(flip(g).get(), n.exclusive)));
    case Kind::CallOutput:  // propagate.cpp runs the call's backward
    case Kind::Linear:      // propagate.cpp passes it to each of Node::more
      return {};
  }
  return {};
}

Var forward(const Node& n, int k, const Var& t) {
  switch (n.kind) {
    case Kind::Leaf:
      return {};
    case Kind::Elementwise:
      return elementwise(n, k, t);
    case Kind::Cast:
      return cast(n.type, t);
    case Kind::Gather:
      return gather(t, n.index, n.mask);
    case Kind::Scatter:
      if (k == 0)
        return scattered(t, lit(n.type, 0), n.index, n.mask, false);
      return scattered(zeros(n), t, n.index, won(n), false);
    case Kind::ScatterAdd:
      return k == 0 ? t : scattered(zeros(n), t, n.index, n.mask, true);
    case Kind::ScatterReduce:
      if (n.reduction == Reduction::Prod) {
        ProductParts p = product_parts(n);
        if (k == 0)
          return t * p.entry_partial;
        return scattered(zeros(n), t * p.lane_partial, n.index, n.mask, true);
      } else {
        auto [kept, won_lane] = extreme_winners(n);
        if (k == 0)
          return select(kept, t, lit(n.type, 0));
        return scattered(zeros(n), t, n.index, won_lane, false);
      }
    case Kind::Reduce:
      switch (n.reduction) {
        case Reduction::Sum:
          return reduce(Reduction::Sum, t);
        case Reduction::Prod:
          return reduce(Reduction::Sum, prod_partial(n) * t);
        case Reduction::Min:
        case Reduction::Max:
          return gather(t, first_extreme(n), lit(ScalarType::Bool, 1));
      }
      return {};
    case Kind::Mean:
      return reduce(Reduction::Sum, t) / count(n);
    case Kind::PrefixSum:
      return Var::steal(var_prefix_sum(t.get(), n.exclusive));
    case Kind::CallOutput:  // refused by propagate.cpp
    case Kind::Linear:      // propagate.cpp adds up Node::more's
      return {};
  }
  return {};
}

bool broadcast_over(const Var& c, const Node& src) {
  return raw_value(src.width) == 1 &&
         (c.size() != 1 || (c.width().has_provenance() && !src.width.has_provenance()));
}

Var fit_node(Var t, const Node& n) {
  if (raw_value(n.width) != t.size() || (n.width.has_provenance() && !t.width().has_provenance()))
    return zeros(n) + t;
  return t;
}

}  // namespace ff::detail::ad
