// A host interpreter of the kernel IR, one lane at a time in lane order: the reference a
// backend's code is compared with on hand-built kernels (regions included). It follows
// docs/kernel-ir.md: integers wrap, divisions never trap, float -> integer casts saturate,
// float Min/Max ignore a NaN `a`, gathers and scatters skip masked and out-of-range lanes.
// Side effects happen in program order per lane and lane after lane, so a kernel compared
// with it must not depend on the order of lanes (distinct elements per lane, or integer and
// exact accumulations), as the backends run lanes in any order.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <type_traits>
#include <vector>

#include "backend/ir/ir_analysis.h"
#include "backend/ir/kernel_ir.h"

namespace ff_test {

/// Calls f(T{}) with the C++ type of `t` (bool for Bool).
template <class F>
decltype(auto) with_type(ff::ScalarType t, F&& f) {
  switch (t) {
    case ff::ScalarType::Bool:
      return f(bool{});
    case ff::ScalarType::Int32:
      return f(int32_t{});
    case ff::ScalarType::UInt32:
      return f(uint32_t{});
    case ff::ScalarType::Int64:
      return f(int64_t{});
    case ff::ScalarType::UInt64:
      return f(uint64_t{});
    case ff::ScalarType::Float32:
      return f(float{});
    case ff::ScalarType::Float64:
      break;
  }
  return f(double{});
}

template <class T>
T from_bits64(uint64_t b) {
  if constexpr (std::is_same_v<T, bool>) {
    return b != 0;
  } else {
    T v;
    std::memcpy(&v, &b, sizeof(T));
    return v;
  }
}

template <class T>
uint64_t to_bits64(T v) {
  if constexpr (std::is_same_v<T, bool>) {
    return v ? 1 : 0;
  } else {
    uint64_t b = 0;
    std::memcpy(&b, &v, sizeof(T));
    return b;
  }
}

/// Runs `ir` with the argument words `args` (buffer addresses, scalar bit patterns) for every
/// lane in [0, n), in order.
class IrInterpreter {
 public:
  IrInterpreter(const ff::KernelIR& ir, const uint64_t* args) : ir_(ir), args_(args) {}

  void run(uint64_t n) {
    for (uint64_t i = 0; i < n; ++i) {
      vals_.assign(ir_.instrs.size(), 0);
      i_ = i;
      size_t k = 0;
      part(k, nullptr);
    }
  }

 private:
  using IrOp = ff::IrOp;
  using RegionRole = ff::RegionRole;

  const ff::IrInstr& at(size_t k) const { return ir_.instrs[k]; }

  ff::ScalarType type_of(uint32_t v) const { return ir_.instrs[v].type; }

  // Runs instructions from k to the end of the current part (k is left at the LoopCond,
  // IfElse, CallCase or EndRegion that ends it); yields go to `yields`.
  void part(size_t& k, std::vector<uint64_t>* yields) {
    while (k < ir_.instrs.size()) {
      const ff::IrInstr& in = at(k);
      switch (ff::op_facts(in.op).region) {
        case RegionRole::None:
          vals_[k] = instr(in);
          ++k;
          break;
        case RegionRole::Open:
          if (in.op == IrOp::LoopBegin)
            loop(k);
          else if (in.op == IrOp::IfBegin)
            branch(k);
          else
            call(k);
          break;
        case RegionRole::Yield:
          yields->push_back(vals_[in.a]);
          ++k;
          break;
        default:
          return;
      }
    }
  }

  // Moves k over the current part without running it, nested regions included.
  void skip(size_t& k) {
    int depth = 0;
    for (; k < ir_.instrs.size(); ++k) {
      RegionRole role = ff::op_facts(at(k).op).region;
      if (role == RegionRole::Open) {
        ++depth;
      } else if (role == RegionRole::Close) {
        if (depth == 0)
          return;
        --depth;
      } else if ((role == RegionRole::Part || role == RegionRole::Cond) && depth == 0) {
        return;
      }
    }
  }

  void results(size_t& k, const std::vector<uint64_t>& ys) {
    for (size_t j = 0; j < ys.size(); ++j, ++k)
      vals_[k] = ys[j];
  }

  void loop(size_t& k) {
    const uint64_t limit = at(k).imm;
    ++k;
    std::vector<size_t> vars;
    for (; at(k).op == IrOp::LoopVar; ++k)
      vars.push_back(k);
    std::vector<uint64_t> cur;
    for (size_t v : vars)
      cur.push_back(vals_[at(v).a]);
    const size_t cond = k;
    for (uint64_t trips = 0;; ++trips) {
      for (size_t j = 0; j < vars.size(); ++j)
        vals_[vars[j]] = cur[j];
      k = cond;
      part(k, nullptr);
      bool go = vals_[at(k).a] != 0;
      ++k;
      if (!go || (limit != ff::kNoIterationLimit && trips >= limit))
        break;
      std::vector<uint64_t> next;
      part(k, &next);
      cur = next;
    }
    skip(k);  // the body, after the last condition
    ++k;
    results(k, cur);
  }

  void branch(size_t& k) {
    bool m = vals_[at(k).a] != 0;
    ++k;
    std::vector<uint64_t> ys;
    if (m) {
      part(k, &ys);
      ++k;
      skip(k);
    } else {
      skip(k);
      ++k;
      part(k, &ys);
    }
    ++k;
    results(k, ys);
  }

  void call(size_t& k) {
    uint64_t index = vals_[at(k).a] & 0xFFFFFFFFu;
    const uint64_t n = at(k).imm;
    ++k;
    std::vector<uint64_t> ys;
    for (uint64_t t = 0; t < n; ++t) {
      if (t == index)
        part(k, &ys);
      else
        skip(k);
      ++k;
    }
    if (index >= n)  // zeros, as many as the Results that follow
      for (size_t r = k; r < ir_.instrs.size() && at(r).op == IrOp::Result; ++r)
        ys.push_back(0);
    results(k, ys);
  }

  template <class T>
  static T load(const void* base, uint64_t idx) {
    if constexpr (std::is_same_v<T, bool>) {
      return static_cast<const uint8_t*>(base)[idx] != 0;
    } else {
      T v;
      std::memcpy(&v, static_cast<const char*>(base) + idx * sizeof(T), sizeof(T));
      return v;
    }
  }

  template <class T>
  static void store(void* base, uint64_t idx, T v) {
    if constexpr (std::is_same_v<T, bool>)
      static_cast<uint8_t*>(base)[idx] = v ? 1 : 0;
    else
      std::memcpy(static_cast<char*>(base) + idx * sizeof(T), &v, sizeof(T));
  }

  void* buffer(uint32_t p) const { return reinterpret_cast<void*>(args_[p]); }

  // An index operand widened to 64 bits (signed types sign-extend).
  uint64_t index64(uint32_t v) const {
    uint64_t b = vals_[v];
    switch (type_of(v)) {
      case ff::ScalarType::Int32:
        return static_cast<uint64_t>(static_cast<int64_t>(static_cast<int32_t>(b)));
      case ff::ScalarType::UInt32:
        return b & 0xFFFFFFFFu;
      default:
        return b;
    }
  }

  bool lane_active(const ff::IrInstr& in, uint32_t bound_param, uint64_t* idx) const {
    *idx = index64(in.b);
    return vals_[in.c] != 0 && *idx < args_[bound_param];
  }

  template <class T>
  static T combine(ff::ReduceOp op, T old, T v) {
    using ff::ReduceOp;
    if constexpr (std::is_floating_point_v<T>) {
      switch (op) {
        case ReduceOp::Add:
          return old + v;
        case ReduceOp::Mul:
          return old * v;
        case ReduceOp::Min:
        case ReduceOp::Max: {
          bool beyond = op == ReduceOp::Min ? v < old : v > old;
          bool zero_tie = v == old && (op == ReduceOp::Min ? std::signbit(v) && !std::signbit(old)
                                                           : std::signbit(old) && !std::signbit(v));
          return !std::isnan(v) && (std::isnan(old) || beyond || zero_tie) ? v : old;
        }
        default:
          return old;
      }
    } else if constexpr (std::is_same_v<T, bool>) {
      return old;
    } else {
      using U = std::make_unsigned_t<T>;
      switch (op) {
        case ReduceOp::Add:
          return static_cast<T>(static_cast<U>(old) + static_cast<U>(v));
        case ReduceOp::Mul:
          return static_cast<T>(static_cast<U>(old) * static_cast<U>(v));
        case ReduceOp::Min:
          return v < old ? v : old;
        case ReduceOp::Max:
          return v > old ? v : old;
        case ReduceOp::And:
          return old & v;
        case ReduceOp::Or:
          return old | v;
      }
      return old;
    }
  }

  template <class To, class From>
  static To cast(From x) {
    if constexpr (std::is_same_v<To, bool>) {
      return x != From{0};
    } else if constexpr (std::is_floating_point_v<From> && std::is_integral_v<To>) {
      if (std::isnan(x))
        return 0;
      using L = std::numeric_limits<To>;
      if (x <= static_cast<From>(L::min()))
        return L::min();
      if (x >= static_cast<From>(L::max()))
        return L::max();
      return static_cast<To>(x);
    } else {
      return static_cast<To>(x);
    }
  }

  uint64_t instr(const ff::IrInstr& in) {
    return with_type(in.type, [&](auto tag) -> uint64_t {
      using T = decltype(tag);
      return to_bits64<T>(compute<T>(in));
    });
  }

  // Integers compute in their unsigned type (wrapping); floats and bools in themselves.
  template <class T, bool = std::is_integral_v<T> && !std::is_same_v<T, bool>>
  struct Wrapping {
    using type = T;
  };

  template <class T>
  struct Wrapping<T, true> {
    using type = std::make_unsigned_t<T>;
  };

  template <class T>
  T val(uint32_t v) const {
    return from_bits64<T>(vals_[v]);
  }

  template <class T>
  T compute(const ff::IrInstr& in) {
    constexpr bool fp = std::is_floating_point_v<T>;
    constexpr bool boolean = std::is_same_v<T, bool>;
    // Unsigned arithmetic for integers (wrapping), the type itself for floats and bools.
    using W = typename Wrapping<T>::type;
    auto a = [&] { return val<T>(in.a); };
    auto b = [&] { return val<T>(in.b); };
    switch (in.op) {
      case IrOp::Index:  // integers truncate, floats convert the unsigned index
        return static_cast<T>(i_);
      case IrOp::Literal:
        return from_bits64<T>(in.imm);
      case IrOp::Scalar:
        return from_bits64<T>(args_[in.a]);
      case IrOp::Load:
        return load<T>(buffer(in.a), i_);
      case IrOp::LoadBroadcast:
        return load<T>(buffer(in.a), 0);
      case IrOp::Gather: {
        uint64_t idx;
        return lane_active(in, in.d, &idx) ? load<T>(buffer(in.a), idx) : T{};
      }
      case IrOp::Store:
        store<T>(buffer(in.a), i_, b());
        return T{};
      case IrOp::Scatter: {
        uint64_t idx;
        if (lane_active(in, in.e, &idx))
          store<T>(buffer(in.a), idx, val<T>(in.d));
        return T{};
      }
      case IrOp::ScatterAdd:
      case IrOp::ScatterMul:
      case IrOp::ScatterMin:
      case IrOp::ScatterMax:
      case IrOp::ScatterAnd:
      case IrOp::ScatterOr: {
        uint64_t idx;
        if (lane_active(in, in.e, &idx)) {
          T old = load<T>(buffer(in.a), idx);
          store<T>(buffer(in.a), idx, combine<T>(ff::op_facts(in.op).reduce, old, val<T>(in.d)));
        }
        return T{};
      }
      case IrOp::ScatterInc: {
        uint64_t idx;
        if (!lane_active(in, in.e, &idx))
          return T{};
        T old = load<T>(buffer(in.a), idx);
        store<T>(buffer(in.a), idx, static_cast<T>(old + 1));
        return old;
      }
      case IrOp::Cast:
        return with_type(type_of(in.a), [&](auto from) -> T {
          using F = decltype(from);
          return cast<T>(val<F>(in.a));
        });
      case IrOp::Bitcast:
        return from_bits64<T>(vals_[in.a]);
      default:
        break;
    }
    if constexpr (boolean) {
      switch (in.op) {
        case IrOp::Not:
          return !a();
        case IrOp::And:
          return a() && b();
        case IrOp::Or:
          return a() || b();
        case IrOp::Xor:
          return a() != b();
        case IrOp::Select:
          return val<bool>(in.a) ? b() : val<T>(in.c);
        default:
          return compare(in);
      }
    } else {
      switch (in.op) {
        case IrOp::Neg:
          return static_cast<T>(-static_cast<W>(a()));
        case IrOp::Abs:
          if constexpr (fp)
            return std::fabs(a());
          else if constexpr (std::is_signed_v<T>)
            return a() < 0 ? static_cast<T>(-static_cast<W>(a())) : a();
          else
            return a();
        case IrOp::Add:
          return static_cast<T>(static_cast<W>(a()) + static_cast<W>(b()));
        case IrOp::Sub:
          return static_cast<T>(static_cast<W>(a()) - static_cast<W>(b()));
        case IrOp::Mul:
          return static_cast<T>(static_cast<W>(a()) * static_cast<W>(b()));
        case IrOp::Div:
        case IrOp::Mod:
          if constexpr (fp) {
            return a() / b();
          } else {
            T x = a(), d = b();
            if (d == 0)
              d = 1;
            if constexpr (std::is_signed_v<T>)
              if (x == std::numeric_limits<T>::min() && d == -1)
                d = 1;
            return in.op == IrOp::Div ? static_cast<T>(x / d) : static_cast<T>(x % d);
          }
        case IrOp::Min:
          if constexpr (fp)
            return std::isnan(a()) || b() < a() ? b() : a();
          else
            return b() < a() ? b() : a();
        case IrOp::Max:
          if constexpr (fp)
            return std::isnan(a()) || b() > a() ? b() : a();
          else
            return b() > a() ? b() : a();
        case IrOp::Fma:
          if constexpr (fp)
            return std::fma(a(), b(), val<T>(in.c));
          else
            return static_cast<T>(static_cast<W>(a()) * static_cast<W>(b()) +
                                  static_cast<W>(val<T>(in.c)));
        case IrOp::Select:
          return val<bool>(in.a) ? b() : val<T>(in.c);
        default:
          break;
      }
      if constexpr (fp)
        return float_op(in, a());
      else
        return int_op<T, W>(in);
    }
  }

  template <class T, class W>
  T int_op(const ff::IrInstr& in) {
    T x = val<T>(in.a);
    constexpr int bits = sizeof(T) * 8;
    switch (in.op) {
      case IrOp::Not:
        return static_cast<T>(~x);
      case IrOp::And:
        return x & val<T>(in.b);
      case IrOp::Or:
        return x | val<T>(in.b);
      case IrOp::Xor:
        return x ^ val<T>(in.b);
      case IrOp::Shl:
        return static_cast<T>(static_cast<W>(x) << (static_cast<W>(val<T>(in.b)) % bits));
      case IrOp::Shr:
        return static_cast<T>(x >> (static_cast<W>(val<T>(in.b)) % bits));
      case IrOp::Popcnt:
        return static_cast<T>(std::popcount(static_cast<W>(x)));
      case IrOp::Clz:
        return static_cast<T>(std::countl_zero(static_cast<W>(x)));
      case IrOp::Ctz:
        return static_cast<T>(std::countr_zero(static_cast<W>(x)));
      default:
        throw std::logic_error("ir_interpreter: no integer rule for this opcode");
    }
  }

  template <class T>
  T float_op(const ff::IrInstr& in, T x) {
    switch (in.op) {
      case IrOp::Sqrt:
        return std::sqrt(x);
      case IrOp::Exp:
        return std::exp(x);
      case IrOp::Log:
        return std::log(x);
      case IrOp::Sin:
        return std::sin(x);
      case IrOp::Cos:
        return std::cos(x);
      case IrOp::Floor:
        return std::floor(x);
      case IrOp::Ceil:
        return std::ceil(x);
      case IrOp::Tan:
        return std::tan(x);
      case IrOp::Asin:
        return std::asin(x);
      case IrOp::Acos:
        return std::acos(x);
      case IrOp::Atan:
        return std::atan(x);
      case IrOp::Sinh:
        return std::sinh(x);
      case IrOp::Cosh:
        return std::cosh(x);
      case IrOp::Tanh:
        return std::tanh(x);
      case IrOp::Asinh:
        return std::asinh(x);
      case IrOp::Acosh:
        return std::acosh(x);
      case IrOp::Atanh:
        return std::atanh(x);
      case IrOp::Exp2:
        return std::exp2(x);
      case IrOp::Log2:
        return std::log2(x);
      case IrOp::Erf:
        return static_cast<T>(std::erf(static_cast<double>(x)));
      case IrOp::Cbrt:
        return std::cbrt(x);
      case IrOp::Round:
        return std::round(x);
      case IrOp::Trunc:
        return std::trunc(x);
      case IrOp::Atan2:
        return std::atan2(x, val<T>(in.b));
      case IrOp::Pow:
        return std::pow(x, val<T>(in.b));
      case IrOp::Copysign:
        return std::copysign(x, val<T>(in.b));
      default:
        throw std::logic_error("ir_interpreter: no float rule for this opcode");
    }
  }

  bool compare(const ff::IrInstr& in) {
    return with_type(type_of(in.a), [&](auto tag) -> bool {
      using T = decltype(tag);
      T x = val<T>(in.a), y = val<T>(in.b);
      switch (in.op) {
        case IrOp::Eq:
          return x == y;
        case IrOp::Ne:
          return x != y;
        case IrOp::Lt:
          return x < y;
        case IrOp::Le:
          return x <= y;
        case IrOp::Gt:
          return x > y;
        case IrOp::Ge:
          return x >= y;
        default:
          throw std::logic_error("ir_interpreter: no bool rule for this opcode");
      }
    });
  }

  const ff::KernelIR& ir_;
  const uint64_t* args_;
  uint64_t i_ = 0;
  std::vector<uint64_t> vals_;
};

/// Runs `ir` on the host over lanes [0, n) with argument words `args`.
inline void interpret(const ff::KernelIR& ir, uint64_t n, const std::vector<uint64_t>& args) {
  IrInterpreter(ir, args.data()).run(n);
}

}  // namespace ff_test
