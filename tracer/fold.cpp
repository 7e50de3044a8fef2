// Host evaluation of IR operations on literals, mirroring the kernel semantics.
#include "tracer/fold.h"

#include <bit>
#include <cmath>
#include <limits>
#include <type_traits>

namespace ff::detail {
namespace {

template <class T>
T from_bits(uint64_t b) {
  if constexpr (std::is_same_v<T, bool>)
    return b != 0;
  else if constexpr (std::is_same_v<T, float>)
    return std::bit_cast<float>(static_cast<uint32_t>(b));
  else if constexpr (std::is_same_v<T, double>)
    return std::bit_cast<double>(b);
  else
    return static_cast<T>(b);
}

template <class T>
uint64_t to_bits(T v) {
  if constexpr (std::is_same_v<T, bool>)
    return v ? 1 : 0;
  else if constexpr (std::is_same_v<T, float>)
    return std::bit_cast<uint32_t>(v);
  else if constexpr (std::is_same_v<T, double>)
    return std::bit_cast<uint64_t>(v);
  else
    return static_cast<uint64_t>(v);  // sign-extends signed types
}

template <class F>
auto dispatch(ScalarType t, F&& f) {
  switch (t) {
    case ScalarType::Bool:
      return f(bool{});
    case ScalarType::Int32:
      return f(int32_t{});
    case ScalarType::UInt32:
      return f(uint32_t{});
    case ScalarType::Int64:
      return f(int64_t{});
    case ScalarType::UInt64:
      return f(uint64_t{});
    case ScalarType::Float32:
      return f(float{});
    case ScalarType::Float64:
      return f(double{});
  }
  return f(bool{});
}

/// Float -> integer conversion that saturates and maps NaN to 0 (llvm.fpto*i.sat).
template <class To, class From>
To saturating_cast(From v) {
  if (std::isnan(v))
    return 0;
  if (v <= static_cast<From>(std::numeric_limits<To>::lowest()))
    return std::numeric_limits<To>::lowest();
  if (v >= static_cast<From>(std::numeric_limits<To>::max()))
    return std::numeric_limits<To>::max();
  return static_cast<To>(v);
}

template <class To, class From>
To convert(From v) {
  if constexpr (std::is_same_v<To, bool>)
    return v != From(0);
  else if constexpr (std::is_floating_point_v<From> && std::is_integral_v<To>)
    return saturating_cast<To>(v);
  else
    return static_cast<To>(v);
}

template <class T>
bool fold_typed(IrOp op, const uint64_t* in, uint64_t& out) {
  T a = from_bits<T>(in[0]);
  T b = from_bits<T>(in[1]);
  T c = from_bits<T>(in[2]);
  constexpr bool is_fp = std::is_floating_point_v<T>;
  constexpr bool is_b = std::is_same_v<T, bool>;
  using U = std::make_unsigned_t<std::conditional_t<is_fp || is_b, int, T>>;
  constexpr unsigned bits = is_fp || is_b ? 0 : sizeof(T) * 8;
  switch (op) {
    case IrOp::Neg:
      if constexpr (is_fp)
        out = to_bits<T>(-a);
      else if constexpr (!is_b)
        out = to_bits<T>(static_cast<T>(U(0) - static_cast<U>(a)));
      return true;
    case IrOp::Not:
      if constexpr (is_b)
        out = to_bits<T>(!a);
      else if constexpr (!is_fp)
        out = to_bits<T>(static_cast<T>(~static_cast<U>(a)));
      return true;
    case IrOp::Abs:
      if constexpr (is_fp)
        out = to_bits<T>(std::fabs(a));
      else if constexpr (std::is_signed_v<T>)
        out = to_bits<T>(a < 0 ? static_cast<T>(U(0) - static_cast<U>(a)) : a);
      else
        out = to_bits<T>(a);
      return true;
    case IrOp::Sqrt:
      if constexpr (is_fp)
        out = to_bits<T>(std::sqrt(a));
      return true;
    case IrOp::Floor:
      if constexpr (is_fp)
        out = to_bits<T>(std::floor(a));
      return true;
    case IrOp::Ceil:
      if constexpr (is_fp)
        out = to_bits<T>(std::ceil(a));
      return true;
    case IrOp::Add:
      if constexpr (is_fp)
        out = to_bits<T>(a + b);
      else if constexpr (!is_b)
        out = to_bits<T>(static_cast<T>(static_cast<U>(a) + static_cast<U>(b)));
      return true;
    case IrOp::Sub:
      if constexpr (is_fp)
        out = to_bits<T>(a - b);
      else if constexpr (!is_b)
        out = to_bits<T>(static_cast<T>(static_cast<U>(a) - static_cast<U>(b)));
      return true;
    case IrOp::Mul:
      if constexpr (is_fp)
        out = to_bits<T>(a * b);
      else if constexpr (!is_b)
        out = to_bits<T>(static_cast<T>(static_cast<U>(a) * static_cast<U>(b)));
      return true;
    case IrOp::Div:
    case IrOp::Mod:
      if constexpr (is_fp) {
        if (op == IrOp::Mod)
          return false;
        out = to_bits<T>(a / b);
      } else if constexpr (!is_b) {
        T d = b == 0 ? T(1) : b;
        if constexpr (std::is_signed_v<T>) {
          if (d == T(-1)) {
            out = to_bits<T>(op == IrOp::Div ? static_cast<T>(U(0) - static_cast<U>(a)) : T(0));
            return true;
          }
        }
        out = to_bits<T>(op == IrOp::Div ? static_cast<T>(a / d) : static_cast<T>(a % d));
      }
      return true;
    case IrOp::Min:
      if constexpr (is_fp)
        out = to_bits<T>(std::fmin(a, b));
      else
        out = to_bits<T>(b < a ? b : a);
      return true;
    case IrOp::Max:
      if constexpr (is_fp)
        out = to_bits<T>(std::fmax(a, b));
      else
        out = to_bits<T>(a < b ? b : a);
      return true;
    case IrOp::And:
      if constexpr (!is_fp)
        out = to_bits<T>(static_cast<T>(a & b));
      return true;
    case IrOp::Or:
      if constexpr (!is_fp)
        out = to_bits<T>(static_cast<T>(a | b));
      return true;
    case IrOp::Xor:
      if constexpr (!is_fp)
        out = to_bits<T>(static_cast<T>(a ^ b));
      return true;
    case IrOp::Shl:
      if constexpr (bits != 0)
        out = to_bits<T>(static_cast<T>(static_cast<U>(a) << (static_cast<U>(b) & (bits - 1))));
      return true;
    case IrOp::Shr:
      if constexpr (bits != 0) {
        unsigned s = static_cast<unsigned>(static_cast<U>(b) & (bits - 1));
        out = to_bits<T>(static_cast<T>(a >> s));  // arithmetic for signed (C++20)
      }
      return true;
    case IrOp::Eq:
      out = a == b;
      return true;
    case IrOp::Ne:
      out = a != b;
      return true;
    case IrOp::Lt:
      out = a < b;
      return true;
    case IrOp::Le:
      out = a <= b;
      return true;
    case IrOp::Gt:
      out = a > b;
      return true;
    case IrOp::Ge:
      out = a >= b;
      return true;
    case IrOp::Fma:
      if constexpr (is_fp)
        out = to_bits<T>(std::fma(a, b, c));
      else if constexpr (!is_b)
        out = to_bits<T>(static_cast<T>(static_cast<U>(a) * static_cast<U>(b) + static_cast<U>(c)));
      return true;
    default:
      return false;
  }
}

}  // namespace

bool fold(IrOp op, ScalarType type, ScalarType operand_type, const uint64_t* in, uint64_t& result) {
  switch (op) {
    case IrOp::Exp:
    case IrOp::Log:
    case IrOp::Sin:
    case IrOp::Cos:
      return false;  // left to kernels, so folding never differs from libm-vs-JIT results
    case IrOp::Select:
      result = in[0] ? in[1] : in[2];
      return true;
    case IrOp::Cast:
      return dispatch(operand_type, [&](auto from) {
        using From = decltype(from);
        return dispatch(type, [&](auto to) {
          using To = decltype(to);
          result = to_bits<To>(convert<To>(from_bits<From>(in[0])));
          return true;
        });
      });
    case IrOp::Bitcast:
      result = size_of(type) == 4 ? (in[0] & 0xFFFFFFFFu) : in[0];
      // A 32-bit signed result keeps the widened (sign-extended) canonical form.
      if (type == ScalarType::Int32)
        result = static_cast<uint64_t>(static_cast<int64_t>(static_cast<int32_t>(result)));
      return true;
    default:
      return dispatch(operand_type,
                      [&](auto tag) { return fold_typed<decltype(tag)>(op, in, result); });
  }
}

}  // namespace ff::detail
