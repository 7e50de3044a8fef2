// The scatter kinds' atomic read-modify-write in PTX (see ptx_scatter.h). Integer add, min,
// max, and, or and float add are single `red` instructions; multiply and float min/max, which
// PTX has no atomic for on sm_75, loop on `atom.cas` over the element's bit pattern.
#include "backend/cuda/ptx_scatter.h"

namespace ff::cuda_backend {
namespace {

// The type suffix ptxas takes for red.<op> on t: min/max by signedness, the bitwise ops by
// size (it refuses red.and.u32 and red.min.b32), add in the unsigned form for integers (there
// is no red.add.s64; signed sums wrap identically).
const char* red_type(ReduceOp op, ScalarType t) {
  bool wide = size_of(t) == 8;
  if (t == ScalarType::Float32)
    return "f32";
  if (t == ScalarType::Float64)
    return "f64";
  if (op == ReduceOp::And || op == ReduceOp::Or)
    return wide ? "b64" : "b32";
  if ((op == ReduceOp::Min || op == ReduceOp::Max) && is_signed_int(t))
    return wide ? "s64" : "s32";
  return wide ? "u64" : "u32";
}

// Replaces the element at `addr` with bits computed from its current bits, atomically, in
// the lanes where `ok` holds: load the element, compute the new bits, swap them in if the
// element still holds the bits they came from, else retry from the bits the swap found.
// `next(old, done)` emits the new bits from register `old` and returns their register; it may
// branch to `done` where the element is to stay as it is. Labels are fresh per call, so each
// unrolled copy of the instruction has its own loop.
template <class Next>
void cas_loop(PtxWriter& w, bool wide, const std::string& ok, const std::string& addr, Next next) {
  const char* b = wide ? "b64" : "b32";
  RegClass c = wide ? RegClass::B64 : RegClass::B32;
  std::string old = w.reg(c), seen = w.reg(c), again = w.reg(RegClass::Pred);
  std::string retry = w.label(), done = w.label();
  w.op("@!{} bra {}", ok, done);
  // A stale value only costs one more round: the swap compares with the element itself.
  w.op("ld.global.{} {}, [{}]", wide ? "u64" : "u32", old, addr);
  w.place(retry);
  std::string bits = next(old, done);
  w.op("atom.global.cas.{} {}, [{}], {}, {}", b, seen, addr, old, bits);
  w.op("setp.ne.{} {}, {}, {}", b, again, seen, old);
  w.op("mov.{} {}, {}", b, old, seen);
  w.op("@{} bra {}", again, retry);
  w.place(done);
}

// ScatterMul: integers wrap (the low half of the product is the same signed or not), floats
// round to nearest.
void emit_mul(PtxWriter& w, ScalarType t, const std::string& ok, const std::string& addr,
              const std::string& value) {
  bool wide = size_of(t) == 8;
  const char* b = wide ? "b64" : "b32";
  cas_loop(w, wide, ok, addr, [&](const std::string& old, const std::string&) {
    std::string bits = w.reg(wide ? RegClass::B64 : RegClass::B32);
    if (!is_float(t)) {
      w.op("mul.lo.{} {}, {}, {}", wide ? "u64" : "u32", bits, old, value);
      return bits;
    }
    RegClass f = wide ? RegClass::F64 : RegClass::F32;
    std::string x = w.reg(f), p = w.reg(f);
    w.op("mov.{} {}, {}", b, x, old);
    w.op("mul.rn.{} {}, {}, {}", wide ? "f64" : "f32", p, x, value);
    w.op("mov.{} {}, {}", b, bits, p);
    return bits;
  });
}

// Float ScatterMin/Max as docs/kernel-ir.md states them, bit for bit with the CPU backend: the
// value replaces the element iff it is not NaN and the element is NaN, or the value is below
// (Max: above) it, or they are equal and the value is -0 where the element is +0 (Max: +0
// where it is -0). Otherwise the element keeps its bits and nothing is written, so a NaN value
// never starts the loop.
void emit_float_min_max(PtxWriter& w, bool max, ScalarType t, const std::string& ok,
                        const std::string& addr, const std::string& value) {
  bool wide = size_of(t) == 8;
  const char* b = wide ? "b64" : "b32";
  const char* f = wide ? "f64" : "f32";
  const char* s = wide ? "s64" : "s32";
  std::string go = w.reg(RegClass::Pred), vbits = w.reg(wide ? RegClass::B64 : RegClass::B32);
  w.op("setp.num.{} {}, {}, {}", f, go, value, value);
  w.op("and.pred {}, {}, {}", go, go, ok);
  w.op("mov.{} {}, {}", b, vbits, value);
  cas_loop(w, wide, go, addr, [&](const std::string& old, const std::string& done) {
    std::string x = w.reg(wide ? RegClass::F64 : RegClass::F32);
    std::string take = w.reg(RegClass::Pred), tie = w.reg(RegClass::Pred),
                signs = w.reg(RegClass::Pred);
    w.op("mov.{} {}, {}", b, x, old);
    // Unordered: also true where the element is NaN (the value is not).
    w.op("setp.{}.{} {}, {}, {}", max ? "gtu" : "ltu", f, take, value, x);
    // Equal values differ in their bits only as -0 and +0, and -0's bits are the smaller
    // signed integer.
    w.op("setp.eq.{} {}, {}, {}", f, tie, value, x);
    w.op("setp.{}.{} {}, {}, {}", max ? "gt" : "lt", s, signs, vbits, old);
    w.op("and.pred {}, {}, {}", tie, tie, signs);
    w.op("or.pred {}, {}, {}", take, take, tie);
    w.op("@!{} bra {}", take, done);
    return vbits;
  });
}

}  // namespace

void emit_scatter_update(PtxWriter& w, ReduceOp op, ScalarType t, const std::string& ok,
                         const std::string& addr, const std::string& value) {
  if (op == ReduceOp::Mul) {
    emit_mul(w, t, ok, addr, value);
    return;
  }
  if (is_float(t) && (op == ReduceOp::Min || op == ReduceOp::Max)) {
    emit_float_min_max(w, op == ReduceOp::Max, t, ok, addr, value);
    return;
  }
  // A reduction without a result: red.add/min/max/and/or, named as ReduceOp names them.
  w.op("@{} red.global.{}.{} [{}], {}", ok, to_string(op), red_type(op, t), addr, value);
}

std::string emit_scatter_inc(PtxWriter& w, const std::string& ok, const std::string& addr) {
  std::string old = w.reg(RegClass::B32);
  w.op("mov.u32 {}, 0", old);  // what the lanes that increment nothing get
  w.op("@{} atom.global.add.u32 {}, [{}], 1", ok, old, addr);
  return old;
}

}  // namespace ff::cuda_backend
