// Var: a tracer variable reference without a gradient (the gradient layer's own arithmetic),
// and the traced operations the derivative rules are written in. Nothing here calls back into
// the gradient layer, so the graph's lock may be held around it.
#pragma once

#include <bit>
#include <utility>

#include "freezeframe/detail/tracer_api.h"

namespace ff::detail::ad {

class Var {
 public:
  Var() = default;

  /// Takes over a reference.
  static Var steal(Handle h) {
    Var v;
    v.h_ = h;
    return v;
  }

  /// Adds a reference to a borrowed handle.
  static Var borrow(Handle h) {
    inc_ref(h);
    return steal(h);
  }

  Var(const Var& o) noexcept : h_(o.h_) { inc_ref(h_); }

  Var(Var&& o) noexcept : h_(std::exchange(o.h_, 0)) {}

  Var& operator=(Var o) noexcept {
    std::swap(h_, o.h_);
    return *this;
  }

  ~Var() { dec_ref(h_); }

  Handle get() const { return h_; }

  explicit operator bool() const { return h_ != 0; }

  ScalarType type() const { return var_type(h_); }

  uint64_t size() const { return var_size(h_); }

  Size width() const { return var_width(h_); }

  /// Gives up the reference (the caller owns it).
  Handle release() { return std::exchange(h_, 0); }

 private:
  Handle h_ = 0;
};

inline uint64_t bits_of(ScalarType t, double v) {
  switch (t) {
    case ScalarType::Float32:
      return std::bit_cast<uint32_t>(static_cast<float>(v));
    case ScalarType::Float64:
      return std::bit_cast<uint64_t>(v);
    case ScalarType::Bool:
      return v != 0 ? 1 : 0;
    default:
      return static_cast<uint64_t>(static_cast<int64_t>(v));
  }
}

/// `n` copies of v (a literal).
inline Var lit(ScalarType t, double v, const Size& n = Size(1)) {
  return Var::steal(var_literal(t, bits_of(t, v), n));
}

inline Var un(Op op, const Var& a) {
  return Var::steal(var_unary(op, a.get()));
}

inline Var bin(Op op, const Var& a, const Var& b) {
  return Var::steal(var_binary(op, a.get(), b.get()));
}

inline Var operator+(const Var& a, const Var& b) {
  return bin(Op::Add, a, b);
}

inline Var operator-(const Var& a, const Var& b) {
  return bin(Op::Sub, a, b);
}

inline Var operator*(const Var& a, const Var& b) {
  return bin(Op::Mul, a, b);
}

inline Var operator/(const Var& a, const Var& b) {
  return bin(Op::Div, a, b);
}

inline Var operator-(const Var& a) {
  return un(Op::Neg, a);
}

inline Var select(const Var& m, const Var& a, const Var& b) {
  return Var::steal(var_ternary(Op::Select, m.get(), a.get(), b.get()));
}

inline Var cast(ScalarType t, const Var& a) {
  return Var::steal(var_cast(t, a.get()));
}

inline Var gather(const Var& source, const Var& index, const Var& mask) {
  return Var::steal(var_gather(source.type(), source.get(), index.get(), mask.get()));
}

/// A copy of `target` with target[index] = value (or, with `reduce`, op= value) where mask
/// holds.
inline Var scattered(Var target, const Var& value, const Var& index, const Var& mask, bool reduce,
                     ReduceOp op = ReduceOp::Add) {
  Handle h = target.release();
  try {
    var_scatter(&h, value.get(), index.get(), mask.get(), reduce, op);
  } catch (...) {
    dec_ref(h);
    throw;
  }
  return Var::steal(h);
}

inline Var reduce(Reduction op, const Var& a) {
  return Var::steal(var_reduce(op, a.get()));
}

}  // namespace ff::detail::ad
