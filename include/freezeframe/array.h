// ff::Array<T>: a lazy, traced array. Operations build a graph that ff::eval fuses into
// kernels; copying an array shares its variable (no data is copied).
#pragma once

#include <bit>
#include <concepts>
#include <cstring>
#include <initializer_list>
#include <span>
#include <type_traits>
#include <utility>
#include <vector>

#include "freezeframe/detail/autodiff_api.h"
#include "freezeframe/detail/tracer_api.h"
#include "freezeframe/scalar_type.h"
#include "freezeframe/size.h"

namespace ff {

template <class T>
class Array;

namespace detail {

template <class T>
uint64_t to_bits(T v) {
  if constexpr (std::is_same_v<T, bool>) {
    return v ? 1 : 0;
  } else if constexpr (std::is_same_v<T, float>) {
    return std::bit_cast<uint32_t>(v);
  } else if constexpr (std::is_same_v<T, double>) {
    return std::bit_cast<uint64_t>(v);
  } else {
    return static_cast<uint64_t>(v);  // integers: two's complement, widened
  }
}

template <class T>
struct is_array : std::false_type {};

template <class T>
struct is_array<Array<T>> : std::true_type {};

/// A plain C++ scalar accepted where an array is (converted to the array's element type).
template <class S>
concept ScalarLike = std::is_arithmetic_v<S>;

}  // namespace detail

template <class T>
concept ArrayType = detail::is_array<std::remove_cvref_t<T>>::value;

namespace detail {
/// Element types whose arrays can have gradients (autodiff.h).
template <class T>
inline constexpr bool kDifferentiable = std::is_floating_point_v<T>;
}  // namespace detail

template <class T>
class Array {
 public:
  using Value = T;
  static constexpr ScalarType kType = scalar_type_of<T>;

  /// An empty array (size 0).
  Array() = default;

  /// A size-1 literal that broadcasts; allocates nothing until stored.
  Array(T value) : id_(detail::var_literal(kType, detail::to_bits(value), Size(1))) {}  // NOLINT

  /// Any arithmetic scalar converts to T (Float k = 1 is 1.0f).
  template <detail::ScalarLike S>

  requires(!std::is_same_v<S, T>) Array(S value) : Array(static_cast<T>(value)) {}  // NOLINT

  Array(const Array& o) noexcept : id_(o.id_), ad_(o.ad_) {
    detail::inc_ref(id_);
    if (ad_)
      detail::ad_inc_ref(ad_);
  }

  Array(Array&& o) noexcept : id_(o.id_), ad_(o.ad_) {
    o.id_ = 0;
    o.ad_ = 0;
  }

  Array& operator=(const Array& o) noexcept {
    detail::inc_ref(o.id_);
    if (o.ad_)
      detail::ad_inc_ref(o.ad_);
    release();
    id_ = o.id_;
    ad_ = o.ad_;
    return *this;
  }

  Array& operator=(Array&& o) noexcept {
    if (this != &o) {
      release();
      id_ = std::exchange(o.id_, 0);
      ad_ = std::exchange(o.ad_, 0);
    }
    return *this;
  }

  ~Array() { release(); }

  /// Copies host data into a new array.
  static Array from(std::span<const T> data) {
    return steal(detail::var_from_host(kType, data.data(), data.size()));
  }

  static Array from(std::initializer_list<T> data) {
    if constexpr (std::is_same_v<T, bool>) {
      std::vector<uint8_t> bytes(data.begin(), data.end());
      return steal(detail::var_from_host(kType, bytes.data(), bytes.size()));
    } else {
      return from(std::span<const T>(data.begin(), data.size()));
    }
  }

  static Array from(const std::vector<T>& data) {
    if constexpr (std::is_same_v<T, bool>) {
      std::vector<uint8_t> bytes(data.begin(), data.end());
      return steal(detail::var_from_host(kType, bytes.data(), bytes.size()));
    } else {
      return from(std::span<const T>(data));
    }
  }

  /// Evaluates and copies the contents to the host.
  std::vector<T> to_vector() const {
    uint64_t n = detail::var_size(id());
    if constexpr (std::is_same_v<T, bool>) {
      std::vector<uint8_t> bytes(n);
      detail::var_read(id(), bytes.data());
      return std::vector<bool>(bytes.begin(), bytes.end());
    } else {
      std::vector<T> out(n);
      detail::var_read(id(), out.data());
      return out;
    }
  }

  /// Number of elements, with provenance (same as ff::width).
  Size size() const { return detail::var_width(id()); }

  /// size() == 0: a size decision, recorded as a guard inside a recording.
  bool empty() const { return detail::var_empty_check(id()); }

  /// The tracer variable (creating the empty variable on demand).
  detail::Handle id() const {
    if (!id_)
      id_ = detail::var_empty(kType);
    return id_;
  }

  /// The variable, or 0 where the array holds none yet (default-constructed or moved from);
  /// unlike id(), never creates one.
  detail::Handle raw_id() const noexcept { return id_; }

  /// Wraps a variable whose reference the caller hands over.
  static Array steal(detail::Handle id) {
    Array a;
    a.id_ = id;
    return a;
  }

  /// Gives up the variable reference (for the tracer's in-place updates).
  detail::Handle* id_ptr() {
    id();
    return &id_;
  }

  /// The array's node in the gradient graph; 0 (always, for integer and Bool arrays) where it
  /// depends on no grad-enabled array.
  detail::AdIndex ad_index() const noexcept { return ad_; }

  /// Takes over a node reference, dropping the one held (0: no gradient, as ff::detach).
  void set_ad_index(detail::AdIndex node) noexcept {
    if (ad_)
      detail::ad_dec_ref(ad_);
    ad_ = node;
  }

 private:
  void release() noexcept {
    detail::dec_ref(id_);
    if (ad_)
      detail::ad_dec_ref(ad_);
  }

  mutable detail::Handle id_ = 0;
  detail::AdIndex ad_ = 0;
};

using Bool = Array<bool>;
using Int32 = Array<int32_t>;
using UInt32 = Array<uint32_t>;
using Int64 = Array<int64_t>;
using UInt64 = Array<uint64_t>;
using Float = Array<float>;
using Float32 = Array<float>;
using Float64 = Array<double>;

namespace detail {

template <class T>
Array<T> unary(Op op, const Array<T>& a) {
  Array<T> r = Array<T>::steal(var_unary(op, a.id()));
  if constexpr (kDifferentiable<T>)
    if (a.ad_index()) [[unlikely]]
      r.set_ad_index(ad_unary(op, a.ad_index(), a.id(), r.id()));
  return r;
}

template <class R, class T>
Array<R> binary(Op op, const Array<T>& a, const Array<T>& b) {
  Array<R> r = Array<R>::steal(var_binary(op, a.id(), b.id()));
  if constexpr (kDifferentiable<R>)
    if (a.ad_index() | b.ad_index()) [[unlikely]]
      r.set_ad_index(ad_binary(op, a.ad_index(), a.id(), b.ad_index(), b.id(), r.id()));
  return r;
}

template <class T>
Array<T> select_impl(const Bool& m, const Array<T>& a, const Array<T>& b) {
  Array<T> r = Array<T>::steal(var_ternary(Op::Select, m.id(), a.id(), b.id()));
  if constexpr (kDifferentiable<T>)
    if (a.ad_index() | b.ad_index()) [[unlikely]]
      r.set_ad_index(
          ad_ternary(Op::Select, 0, m.id(), a.ad_index(), a.id(), b.ad_index(), b.id(), r.id()));
  return r;
}

template <class T>
Array<T> ternary(Op op, const Array<T>& a, const Array<T>& b, const Array<T>& c) {
  Array<T> r = Array<T>::steal(var_ternary(op, a.id(), b.id(), c.id()));
  if constexpr (kDifferentiable<T>)
    if (a.ad_index() | b.ad_index() | c.ad_index()) [[unlikely]]
      r.set_ad_index(
          ad_ternary(op, a.ad_index(), a.id(), b.ad_index(), b.id(), c.ad_index(), c.id(), r.id()));
  return r;
}

/// target[index] = value (or op= value), with the gradient graph following where it must.
template <class T, class I>
void scatter_impl(Array<T>& target, const Array<T>& value, const Array<I>& index,
                  const Array<bool>& mask, bool reduce, ReduceOp op) {
  if constexpr (kDifferentiable<T>) {
    if (target.ad_index() | value.ad_index()) [[unlikely]] {
      ad_check_scatter(reduce, op);
      Array<T> old = target;  // Mul, Min and Max's rules read the values the scatter combined
      var_scatter(target.id_ptr(), value.id(), index.id(), mask.id(), reduce, op);
      // The target holds its old node until the new one (which references it) replaces it.
      target.set_ad_index(ad_scatter(target.ad_index(), old.id(), value.ad_index(), value.id(),
                                     index.id(), mask.id(), reduce, op, target.id()));
      return;
    }
  }
  var_scatter(target.id_ptr(), value.id(), index.id(), mask.id(), reduce, op);
}

}  // namespace detail

// Element-wise binary operators: array with array of one element type, or with a scalar on
// either side (converted to the array's element type).
#define FF_BINARY_OPERATOR(op, code, Result, Constraint)                             \
  template <class T>                                                                 \
  requires(Constraint) Array<Result> op(const Array<T>& a, const Array<T>& b) {      \
    return detail::binary<Result>(detail::Op::code, a, b);                           \
  }                                                                                  \
  template <class T, detail::ScalarLike S>                                           \
  requires(Constraint) Array<Result> op(const Array<T>& a, S b) {                    \
    return detail::binary<Result>(detail::Op::code, a, Array<T>(static_cast<T>(b))); \
  }                                                                                  \
  template <class T, detail::ScalarLike S>                                           \
  requires(Constraint) Array<Result> op(S a, const Array<T>& b) {                    \
    return detail::binary<Result>(detail::Op::code, Array<T>(static_cast<T>(a)), b); \
  }

#define FF_NUMERIC (!std::is_same_v<T, bool>)
#define FF_INTEGRAL (std::is_integral_v<T> && !std::is_same_v<T, bool>)
#define FF_BITWISE (std::is_integral_v<T>)
#define FF_ANY (true)
FF_BINARY_OPERATOR(operator+, Add, T, FF_NUMERIC)
FF_BINARY_OPERATOR(operator-, Sub, T, FF_NUMERIC)
FF_BINARY_OPERATOR(operator*, Mul, T, FF_NUMERIC)
FF_BINARY_OPERATOR(operator/, Div, T, FF_NUMERIC)
FF_BINARY_OPERATOR(operator%, Mod, T, FF_INTEGRAL)
FF_BINARY_OPERATOR(operator&, And, T, FF_BITWISE)
FF_BINARY_OPERATOR(operator|, Or, T, FF_BITWISE)
FF_BINARY_OPERATOR(operator^, Xor, T, FF_BITWISE)
FF_BINARY_OPERATOR(operator<<, Shl, T, FF_INTEGRAL)
FF_BINARY_OPERATOR(operator>>, Shr, T, FF_INTEGRAL)
FF_BINARY_OPERATOR(operator==, Eq, bool, FF_ANY)
FF_BINARY_OPERATOR(operator!=, Ne, bool, FF_ANY)
FF_BINARY_OPERATOR(operator<, Lt, bool, FF_ANY)
FF_BINARY_OPERATOR(operator<=, Le, bool, FF_ANY)
FF_BINARY_OPERATOR(operator>, Gt, bool, FF_ANY)
FF_BINARY_OPERATOR(operator>=, Ge, bool, FF_ANY)
FF_BINARY_OPERATOR(min, Min, T, FF_NUMERIC)
FF_BINARY_OPERATOR(max, Max, T, FF_NUMERIC)
#undef FF_BINARY_OPERATOR

// Compound assignment (rebinds the handle to the new variable).
#define FF_COMPOUND(op, binop, Constraint) \
  template <class T, class U>              \
  requires(Constraint) Array<T>            \
  &op(Array<T>& a, const U& b) {           \
    a = binop(a, b);                       \
    return a;                              \
  }
FF_COMPOUND(operator+=, operator+, FF_NUMERIC)
FF_COMPOUND(operator-=, operator-, FF_NUMERIC)
FF_COMPOUND(operator*=, operator*, FF_NUMERIC)
FF_COMPOUND(operator/=, operator/, FF_NUMERIC)
FF_COMPOUND(operator%=, operator%, FF_INTEGRAL)
FF_COMPOUND(operator&=, operator&, FF_BITWISE)
FF_COMPOUND(operator|=, operator|, FF_BITWISE)
FF_COMPOUND(operator^=, operator^, FF_BITWISE)
FF_COMPOUND(operator<<=, operator<<, FF_INTEGRAL)
FF_COMPOUND(operator>>=, operator>>, FF_INTEGRAL)
#undef FF_COMPOUND

template <class T>
requires FF_NUMERIC Array<T>

operator-(const Array<T>& a) {
  return detail::unary(detail::Op::Neg, a);
}
/// Bitwise not for integers, logical not for Bool.
template <class T>
requires FF_BITWISE Array<T>

operator~(const Array<T>& a) {
  return detail::unary(detail::Op::Not, a);
}

inline Bool operator!(const Bool& a) {
  return detail::unary(detail::Op::Not, a);
}

#define FF_UNARY_FUNCTION(name, code, Constraint)         \
  template <class T>                                      \
  requires(Constraint) Array<T> name(const Array<T>& a) { \
    return detail::unary(detail::Op::code, a);            \
  }
#define FF_FLOATING (std::is_floating_point_v<T>)
FF_UNARY_FUNCTION(abs, Abs, FF_NUMERIC)
FF_UNARY_FUNCTION(sqrt, Sqrt, FF_FLOATING)
FF_UNARY_FUNCTION(exp, Exp, FF_FLOATING)
FF_UNARY_FUNCTION(log, Log, FF_FLOATING)
FF_UNARY_FUNCTION(sin, Sin, FF_FLOATING)
FF_UNARY_FUNCTION(cos, Cos, FF_FLOATING)
FF_UNARY_FUNCTION(floor, Floor, FF_FLOATING)
FF_UNARY_FUNCTION(ceil, Ceil, FF_FLOATING)
#undef FF_UNARY_FUNCTION

namespace detail {
/// Turns an array or a scalar into Array<T>.
template <class T, class U>
Array<T> as_array(const U& v) {
  if constexpr (std::is_same_v<U, Array<T>>)
    return v;
  else
    return Array<T>(static_cast<T>(v));
}

template <class U>
struct value_of {
  using type = U;
};

template <class T>
struct value_of<Array<T>> {
  using type = T;
};
/// The element type of the first array among the arguments.
template <class... U>
struct first_array_value;

template <class U, class... Rest>
struct first_array_value<U, Rest...> {
  using type = std::conditional_t<is_array<U>::value, typename value_of<U>::type,
                                  typename first_array_value<Rest...>::type>;
};

template <>
struct first_array_value<> {
  using type = void;
};
}  // namespace detail

/// a * b + c, fused (one rounding) for floating point. Scalars may stand for any argument.
template <class A, class B, class C, class T = typename detail::first_array_value<A, B, C>::type>

requires(!std::is_void_v<T> && !std::is_same_v<T, bool>) Array<T> fma(const A& a, const B& b,
                                                                      const C& c) {
  return detail::ternary(detail::Op::Fma, detail::as_array<T>(a), detail::as_array<T>(b),
                         detail::as_array<T>(c));
}

/// mask ? a : b, element-wise.
template <class A, class B, class T = typename detail::first_array_value<A, B>::type>

requires(!std::is_void_v<T>) Array<T> select(const Bool& mask, const A& a, const B& b) {
  return detail::select_impl(mask, detail::as_array<T>(a), detail::as_array<T>(b));
}

/// Numeric conversion: float -> integer saturates (NaN -> 0), x -> Bool is x != 0.
template <ArrayType Target, class T>
Target cast(const Array<T>& a) {
  Target r = Target::steal(detail::var_cast(Target::kType, a.id()));
  if constexpr (detail::kDifferentiable<T> && detail::kDifferentiable<typename Target::Value>)
    if (a.ad_index()) [[unlikely]]
      r.set_ad_index(detail::ad_cast(a.ad_index(), a.id(), r.id()));
  return r;
}

/// Reinterprets the bits (both element types have one width).
template <ArrayType Target, class T>

requires(sizeof(typename Target::Value) == sizeof(T) && !std::is_same_v<T, bool>) Target
    bitcast(const Array<T>& a) {
  return Target::steal(detail::var_bitcast(Target::kType, a.id()));
}

/// source[index] where mask is true and the index is in range; 0 elsewhere.
template <ArrayType Target, class I>

requires(std::is_integral_v<I> && !std::is_same_v<I, bool>) Target
    gather(const Target& source, const Array<I>& index, const Bool& mask = Bool(true)) {
  Target r = Target::steal(detail::var_gather(Target::kType, source.id(), index.id(), mask.id()));
  if constexpr (detail::kDifferentiable<typename Target::Value>)
    if (source.ad_index()) [[unlikely]]
      r.set_ad_index(
          detail::ad_gather(source.ad_index(), source.id(), index.id(), mask.id(), r.id()));
  return r;
}

/// target[index] = value where mask is true and the index is in range; updates `target` in
/// place (copy-on-write: other handles and expressions that read it keep the old contents).
template <class T, class V, class I>

requires(std::is_integral_v<I> && !std::is_same_v<I, bool>) void scatter(
    Array<T>& target, const V& value, const Array<I>& index, const Bool& mask = Bool(true)) {
  detail::scatter_impl(target, detail::as_array<T>(value), index, mask, false, ReduceOp::Add);
}

/// target[index] += value (atomically) where mask is true and the index is in range.
template <class T, class V, class I>

requires(std::is_integral_v<I> && !std::is_same_v<I, bool> &&
         !std::is_same_v<T, bool>) void scatter_add(Array<T>& target, const V& value,
                                                    const Array<I>& index,
                                                    const Bool& mask = Bool(true)) {
  detail::scatter_impl(target, detail::as_array<T>(value), index, mask, true, ReduceOp::Add);
}

/// target[index] = op(target[index], value), atomically, where mask is true and the index is
/// in range (other lanes write nothing); updates `target` in place (copy-on-write, as
/// scatter). Add and Mul wrap for integers; Min and Max compare by signedness, and for floats
/// ignore NaN values and count -0 below +0 (the result is the same in any order of lanes); And
/// and Or are for integers (on floats they do not compile). Float Add and Mul round in the
/// order the lanes happen to run.
template <class T, class V, class I>

requires(std::is_integral_v<I> && !std::is_same_v<I, bool> &&
         !std::is_same_v<T, bool>) void scatter_reduce(std::type_identity_t<ReduceOpFor<T>> op,
                                                       Array<T>& target, const V& value,
                                                       const Array<I>& index,
                                                       const Bool& mask = Bool(true)) {
  detail::scatter_impl(target, detail::as_array<T>(value), index, mask, true, op.op);
}

/// counter[index] += 1 for each lane where mask is true and the index is in range, atomically;
/// returns each lane's old value of its element (slots in a queue: the lanes that increment
/// one element get distinct values, a permutation of its old value .. old value + k - 1).
/// Masked and out-of-range lanes increment nothing and get 0. The CPU hands the values out in
/// lane order; a GPU in the order its threads arrive.
template <class I>

requires(std::is_integral_v<I> && !std::is_same_v<I, bool>) UInt32
    scatter_inc(UInt32& counter, const Array<I>& index, const Bool& mask = Bool(true)) {
  return UInt32::steal(detail::var_scatter_inc(counter.id_ptr(), index.id(), mask.id()));
}

namespace detail {
template <class T>
Array<T> reduce(Reduction op, const Array<T>& a) {
  Array<T> r = Array<T>::steal(var_reduce(op, a.id()));
  if constexpr (kDifferentiable<T>)
    if (a.ad_index()) [[unlikely]]
      r.set_ad_index(ad_reduce(op, a.ad_index(), a.id(), r.id()));
  return r;
}
}  // namespace detail

/// Reductions to a size-1 array.
template <class T>

requires FF_NUMERIC Array<T> sum(const Array<T>& a) {
  return detail::reduce(detail::Reduction::Sum, a);
}
template <class T>

requires FF_NUMERIC Array<T> prod(const Array<T>& a) {
  return detail::reduce(detail::Reduction::Prod, a);
}

template <class T>
Array<T> min_reduce(const Array<T>& a) {
  return detail::reduce(detail::Reduction::Min, a);
}

template <class T>
Array<T> max_reduce(const Array<T>& a) {
  return detail::reduce(detail::Reduction::Max, a);
}
/// sum(a) / width(a); the count is a kernel argument, so any size reuses one kernel.
template <class T>

requires FF_NUMERIC Array<T> mean(const Array<T>& a) {
  Array<T> r = Array<T>::steal(detail::var_mean(a.id()));
  if constexpr (detail::kDifferentiable<T>)
    if (a.ad_index()) [[unlikely]]
      r.set_ad_index(detail::ad_mean(a.ad_index(), a.id(), r.id()));
  return r;
}
/// sum(a * b) as a size-1 array (0 for empty arrays). Either argument may be a scalar.
template <class A, class B, class T = typename detail::first_array_value<A, B>::type>

requires(!std::is_void_v<T> && !std::is_same_v<T, bool>) Array<T> dot(const A& a, const B& b) {
  return sum(detail::as_array<T>(a) * detail::as_array<T>(b));
}

/// True when some element of `mask` is (a size-1 array; false for an empty mask).
inline Bool any(const Bool& mask) {
  return max_reduce(mask);
}

/// True when every element of `mask` is (a size-1 array; true for an empty mask).
inline Bool all(const Bool& mask) {
  return min_reduce(mask);
}

/// The number of true elements of `mask` (a size-1 array; 0 for an empty mask). Counted in
/// 32 bits, as compress() indexes.
inline UInt32 count(const Bool& mask) {
  return sum(cast<UInt32>(mask));
}
/// Running sum; exclusive starts at 0.
template <class T>

requires FF_NUMERIC Array<T> prefix_sum(const Array<T>& a, bool exclusive = true) {
  Array<T> r = Array<T>::steal(detail::var_prefix_sum(a.id(), exclusive));
  if constexpr (detail::kDifferentiable<T>)
    if (a.ad_index()) [[unlikely]]
      r.set_ad_index(detail::ad_prefix_sum(a.ad_index(), a.id(), exclusive, r.id()));
  return r;
}

/// Indices of the true entries of `mask`, in order (reads the count back: a sync point).
inline UInt32 compress(const Bool& mask) {
  return UInt32::steal(detail::var_compress(mask.id()));
}

#undef FF_NUMERIC
#undef FF_INTEGRAL
#undef FF_BITWISE
#undef FF_ANY
#undef FF_FLOATING

/// An array of `size` copies of `value` (a literal: allocates nothing until stored).
template <ArrayType A>
A full(typename A::Value value, const Size& size) {
  return A::steal(detail::var_literal(A::kType, detail::to_bits(value), size));
}

template <ArrayType A>
A zeros(const Size& size) {
  return full<A>(typename A::Value(0), size);
}

/// 0, 1, ..., size - 1.
template <ArrayType A>

requires(!std::is_same_v<typename A::Value, bool>) A arange(const Size& size) {
  return A::steal(detail::var_arange(A::kType, size));
}

/// The size of `a`, with provenance.
template <class T>
Size width(const Array<T>& a) {
  return a.size();
}

/// An array of one element holding `s` (converted to the element type): for kernels that
/// compute with a size (`width(x) - 1`, ff::dist::rank_expr()). Inside a recording its value
/// is `s`'s expression, evaluated at every replay (a kernel argument: any value reuses one
/// kernel), not the value while tracing.
template <ArrayType A>

requires(!std::is_same_v<typename A::Value, bool>) A from_size(const Size& s) {
  return A::steal(detail::var_size_value(A::kType, s));
}

/// Evaluates the arrays (and every pending scatter) now; other lazy arrays stay lazy.
template <ArrayType... A>
void eval(const A&... arrays) {
  detail::Handle ids[sizeof...(A) + 1] = {arrays.id()..., 0};
  detail::var_eval(std::span<const detail::Handle>(ids, sizeof...(A)));
}

/// Turns literals into buffers, so kernels take them as arguments instead of constants.
template <ArrayType... A>
void make_opaque(const A&... arrays) {
  detail::Handle ids[sizeof...(A) + 1] = {arrays.id()..., 0};
  detail::var_make_opaque(std::span<const detail::Handle>(ids, sizeof...(A)));
}

}  // namespace ff
