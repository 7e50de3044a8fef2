// Host evaluation of IR operations on literals, mirroring the kernel semantics.
#include "tracer/fold.h"

#include <bit>
#include <cmath>
#include <limits>
#include <type_traits>

#include "backend/ir/ir_analysis.h"
#include "common/assert.h"

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

/// The sign bit and the quiet bit of a float type's bit pattern.
template <class T>
constexpr uint64_t kSignBit = uint64_t{1} << (sizeof(T) * 8 - 1);
template <class T>
constexpr uint64_t kQuietBit = uint64_t{1} << (std::numeric_limits<T>::digits - 2);

/// Float arithmetic with a NaN operand gives that NaN, quieted (the first NaN of a, b, c):
/// what the kernels give on x86, although docs/kernel-ir.md leaves the payload unspecified.
template <class T>
bool propagate_nan(const uint64_t* in, int n_operands, uint64_t& out) {
  for (int k = 0; k < n_operands; ++k)
    if (std::isnan(from_bits<T>(in[k]))) {
      out = in[k] | kQuietBit<T>;
      return true;
    }
  return false;
}

/// Float min/max as the kernels compute them (docs/kernel-ir.md): a NaN `a` gives `b`;
/// otherwise `b` if it is strictly less (min) or greater (max) than `a`, else `a` (so
/// min(-0, +0) is -0 and min(+0, -0) is +0). The chosen operand's bits are kept exactly.
template <class T>
uint64_t float_min_max(bool max, const uint64_t* in) {
  T a = from_bits<T>(in[0]), b = from_bits<T>(in[1]);
  bool take_b = std::isnan(a) || (max ? b > a : b < a);
  return take_b ? in[1] : in[0];
}

/// Float operations: bit operations for the sign, float_min_max, NaN propagation, and the
/// host's IEEE arithmetic otherwise (the same instructions the kernels use).
template <class T>
bool fold_float(IrOp op, const uint64_t* in, uint64_t& out) {
  const T a = from_bits<T>(in[0]), b = from_bits<T>(in[1]), c = from_bits<T>(in[2]);
  switch (op) {
    case IrOp::Neg:  // sign bit only: NaN payloads and signalling NaNs stay as they are
      out = in[0] ^ kSignBit<T>;
      return true;
    case IrOp::Abs:
      out = in[0] & ~kSignBit<T>;
      return true;
    case IrOp::Min:
    case IrOp::Max:
      out = float_min_max<T>(op == IrOp::Max, in);
      return true;
    case IrOp::Sqrt:
      out = propagate_nan<T>(in, 1, out) ? out : to_bits<T>(std::sqrt(a));
      return true;
    case IrOp::Floor:
      out = propagate_nan<T>(in, 1, out) ? out : to_bits<T>(std::floor(a));
      return true;
    case IrOp::Ceil:
      out = propagate_nan<T>(in, 1, out) ? out : to_bits<T>(std::ceil(a));
      return true;
    case IrOp::Round:  // halfway cases away from zero, as llvm.round and the PTX sequence
      out = propagate_nan<T>(in, 1, out) ? out : to_bits<T>(std::round(a));
      return true;
    case IrOp::Trunc:
      out = propagate_nan<T>(in, 1, out) ? out : to_bits<T>(std::trunc(a));
      return true;
    case IrOp::Copysign:  // bits only, like llvm.copysign: a NaN's payload stays
      out = (in[0] & ~kSignBit<T>) | (in[1] & kSignBit<T>);
      return true;
    case IrOp::Add:
      out = propagate_nan<T>(in, 2, out) ? out : to_bits<T>(a + b);
      return true;
    case IrOp::Sub:
      out = propagate_nan<T>(in, 2, out) ? out : to_bits<T>(a - b);
      return true;
    case IrOp::Mul:
      out = propagate_nan<T>(in, 2, out) ? out : to_bits<T>(a * b);
      return true;
    case IrOp::Div:
      out = propagate_nan<T>(in, 2, out) ? out : to_bits<T>(a / b);
      return true;
    case IrOp::Fma:
      out = propagate_nan<T>(in, 3, out) ? out : to_bits<T>(std::fma(a, b, c));
      return true;
    default:
      return false;
  }
}

/// Integer operations: wrapping arithmetic in the unsigned type of the same width, division
/// that never traps (a zero divisor counts as 1, INT_MIN / -1 wraps), shift counts modulo the
/// width, min/max by signedness.
template <class T>
bool fold_integer(IrOp op, const uint64_t* in, uint64_t& out) {
  using U = std::make_unsigned_t<T>;
  constexpr unsigned kBits = sizeof(T) * 8;
  const T a = from_bits<T>(in[0]), b = from_bits<T>(in[1]), c = from_bits<T>(in[2]);
  const U ua = static_cast<U>(a), ub = static_cast<U>(b), uc = static_cast<U>(c);
  switch (op) {
    case IrOp::Neg:
      out = to_bits<T>(static_cast<T>(U(0) - ua));
      return true;
    case IrOp::Not:
      out = to_bits<T>(static_cast<T>(~ua));
      return true;
    case IrOp::Abs:
      out = to_bits<T>(a < 0 ? static_cast<T>(U(0) - ua) : a);
      return true;
    case IrOp::Add:
      out = to_bits<T>(static_cast<T>(ua + ub));
      return true;
    case IrOp::Sub:
      out = to_bits<T>(static_cast<T>(ua - ub));
      return true;
    case IrOp::Mul:
      out = to_bits<T>(static_cast<T>(ua * ub));
      return true;
    case IrOp::Fma:
      out = to_bits<T>(static_cast<T>(ua * ub + uc));
      return true;
    case IrOp::Div:
    case IrOp::Mod: {
      // The divisor the kernels use: 1 for 0 and, for signed types, for INT_MIN / -1.
      bool bad = b == 0;
      if constexpr (std::is_signed_v<T>)
        bad = bad || (a == std::numeric_limits<T>::min() && b == T(-1));
      const T d = bad ? T(1) : b;
      out = to_bits<T>(op == IrOp::Div ? static_cast<T>(a / d) : static_cast<T>(a % d));
      return true;
    }
    case IrOp::Min:
      out = to_bits<T>(b < a ? b : a);
      return true;
    case IrOp::Max:
      out = to_bits<T>(a < b ? b : a);
      return true;
    case IrOp::And:
      out = to_bits<T>(static_cast<T>(ua & ub));
      return true;
    case IrOp::Or:
      out = to_bits<T>(static_cast<T>(ua | ub));
      return true;
    case IrOp::Xor:
      out = to_bits<T>(static_cast<T>(ua ^ ub));
      return true;
    case IrOp::Shl:
      out = to_bits<T>(static_cast<T>(ua << (ub & (kBits - 1))));
      return true;
    case IrOp::Shr:  // arithmetic for signed types (C++20), logical for unsigned
      out = to_bits<T>(static_cast<T>(a >> (ub & (kBits - 1))));
      return true;
    case IrOp::Popcnt:  // counts in T's type; clz(0) == ctz(0) == the width
      out = to_bits<T>(static_cast<T>(std::popcount(ua)));
      return true;
    case IrOp::Clz:
      out = to_bits<T>(static_cast<T>(std::countl_zero(ua)));
      return true;
    case IrOp::Ctz:
      out = to_bits<T>(static_cast<T>(std::countr_zero(ua)));
      return true;
    default:
      return false;
  }
}

template <class T>
bool fold_bool(IrOp op, const uint64_t* in, uint64_t& out) {
  const bool a = in[0] != 0, b = in[1] != 0;
  switch (op) {
    case IrOp::Not:
      out = !a;
      return true;
    case IrOp::And:
      out = a && b;
      return true;
    case IrOp::Or:
      out = a || b;
      return true;
    case IrOp::Xor:
      out = a != b;
      return true;
    default:
      return false;
  }
}

/// Comparisons: floats ordered (false with a NaN) except !=; integers by signedness; Bool as
/// unsigned.
template <class T>
bool fold_compare(IrOp op, const uint64_t* in, uint64_t& out) {
  const T a = from_bits<T>(in[0]), b = from_bits<T>(in[1]);
  switch (op) {
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
    default:
      return false;
  }
}

template <class T>
bool fold_typed(IrOp op, const uint64_t* in, uint64_t& out) {
  if (fold_compare<T>(op, in, out))
    return true;
  if constexpr (std::is_same_v<T, bool>)
    return fold_bool<T>(op, in, out);
  else if constexpr (std::is_floating_point_v<T>)
    return fold_float<T>(op, in, out);
  else
    return fold_integer<T>(op, in, out);
}

}  // namespace

bool fold(IrOp op, ScalarType type, ScalarType operand_type, const uint64_t* in, uint64_t& result) {
  // Transcendental functions are left to kernels, so folding never differs from what libm or
  // libmvec compute there.
  if (op_facts(op).cost == CostClass::Transcendental)
    return false;
  switch (op) {
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
    default: {
      bool folded = dispatch(operand_type,
                             [&](auto tag) { return fold_typed<decltype(tag)>(op, in, result); });
      // The array API only builds operations its types allow (float Mod does not exist).
      FF_ASSERT(folded, "fold: {} is not an operation on {}", to_string(op),
                to_string(operand_type));
      return folded;
    }
  }
}

}  // namespace ff::detail
