// Neutral kernel IR -> PTX. Each IR value lives in a virtual register of its type's class
// (Bool in a predicate); ptxas allocates the real ones. The element loop is a grid-stride
// loop unrolled `unroll` times with the copies' instructions interleaved (all loads of a
// round come before its stores, so they are in flight together), then a plain loop for the
// remainder. Uniform values (literals, scalars, broadcast loads) are computed once per thread
// before the loop (they are pure or read-only, so hoisting one out of a region changes nothing).
// The semantics of every opcode follow docs/kernel-ir.md exactly; where PTX's own instruction
// differs (neg/abs of NaN, integer division by zero, shifts past the width) the code below says
// how it is made to agree. The scatter kinds' atomics are in ptx_scatter.cpp, regions (loops,
// branches, calls) as branches in ptx_regions.cpp.
#include "backend/cuda/ptx_codegen.h"

#include <vector>

#include "backend/cuda/ptx_math.h"
#include "backend/cuda/ptx_regions.h"
#include "backend/cuda/ptx_scatter.h"
#include "backend/ir/ir_analysis.h"
#include "freezeframe/errors.h"

namespace ff::cuda_backend {
namespace {

// Instruction type suffix for arithmetic and comparisons.
const char* arith(ScalarType t) {
  switch (t) {
    case ScalarType::Int32:
      return "s32";
    case ScalarType::UInt32:
      return "u32";
    case ScalarType::Int64:
      return "s64";
    case ScalarType::UInt64:
      return "u64";
    case ScalarType::Float32:
      return "f32";
    case ScalarType::Float64:
      return "f64";
    case ScalarType::Bool:
      break;
  }
  return "pred";
}

// Bit-size suffix (moves, selects, bitwise ops).
const char* bits(ScalarType t) {
  return size_of(t) == 8 ? "b64" : "b32";
}

// Memory access suffix: Bool is one byte.
const char* mem(ScalarType t) {
  switch (t) {
    case ScalarType::Bool:
      return "u8";
    case ScalarType::Int32:
    case ScalarType::UInt32:
      return "u32";
    case ScalarType::Int64:
    case ScalarType::UInt64:
      return "u64";
    case ScalarType::Float32:
      return "f32";
    case ScalarType::Float64:
      return "f64";
  }
  return "u8";
}

unsigned log2_size(ScalarType t) {
  switch (size_of(t)) {
    case 1:
      return 0;
    case 4:
      return 2;
    default:
      return 3;
  }
}

class KernelEmitter {
 public:
  KernelEmitter(const KernelIR& ir, const PtxOptions& options)
      : ir_(ir), options_(options), unroll_(options.unroll ? options.unroll : 1) {
    // Kernels with inline math routines are compute bound and long: one element per round.
    for (const IrInstr& in : ir.instrs)
      if (op_facts(in.op).cost == CostClass::Transcendental)
        unroll_ = 1;
  }

  std::string emit(const std::string& name);

 private:
  std::string reg(ScalarType t) { return w_.reg(reg_class(t)); }

  std::string b32() { return w_.reg(RegClass::B32); }

  std::string b64() { return w_.reg(RegClass::B64); }

  std::string pred() { return w_.reg(RegClass::Pred); }

  // Address of element `idx` (a u64 register) of buffer parameter p.
  std::string address(uint32_t p, const std::string& idx, ScalarType t) {
    std::string a = b64();
    unsigned s = log2_size(t);
    if (s == 0) {
      w_.op("add.u64 {}, {}, {}", a, ptr_[p], idx);
    } else {
      std::string off = b64();
      w_.op("shl.b64 {}, {}, {}", off, idx, s);
      w_.op("add.u64 {}, {}, {}", a, ptr_[p], off);
    }
    return a;
  }

  std::string load(ScalarType t, const std::string& addr, const std::string& guard = {});
  void store(ScalarType t, const std::string& addr, const std::string& value,
             const std::string& guard = {});
  std::string konst(ScalarType t, uint64_t imm);
  std::string from_param(ScalarType t, const std::string& raw);
  std::string widen_index(uint32_t v, unsigned u);

  void hoist_uniforms();
  void emit_body(const std::vector<std::string>& idx);

  // Instruction k of copy u: its hoisted value, or its code.
  void emit_value(uint32_t k, const std::string& i, unsigned u) {
    vals_[u][k] = !uniform_[k].empty() ? uniform_[k] : emit_instr(ir_.instrs[k], i, u);
  }

  // The values and instructions of copy u, for the regions' code.
  class RegionHost final : public PtxRegionHost {
   public:
    RegionHost(KernelEmitter& e, const std::string& i, unsigned u) : e_(e), i_(i), u_(u) {}

    const std::string& value(uint32_t v) override { return e_.vals_[u_][v]; }

    void define(uint32_t v, const std::string& reg) override { e_.vals_[u_][v] = reg; }

    void emit(uint32_t k) override { e_.emit_value(k, i_, u_); }

   private:
    KernelEmitter& e_;
    const std::string& i_;
    unsigned u_;
  };

  std::string emit_instr(const IrInstr& in, const std::string& i, unsigned u);
  std::string emit_gather(const IrInstr& in, unsigned u);

  struct ScatterTarget {
    std::string addr;  // u64 global address of the element
    std::string ok;    // predicate: this lane writes
  };

  ScatterTarget scatter_target(const IrInstr& in, unsigned u);
  void emit_range_report(const IrInstr& in, const std::string& idx, const std::string& in_range,
                         const std::string& mask);
  std::string emit_unary(const IrInstr& in, unsigned u);
  std::string emit_binary(const IrInstr& in, unsigned u);
  std::string emit_compare(const IrInstr& in, unsigned u);
  std::string emit_cast(ScalarType from, ScalarType to, const std::string& v);
  std::string emit_select(ScalarType t, const std::string& m, const std::string& a,
                          const std::string& b);

  const std::string& val(uint32_t v, unsigned u) const { return vals_[u][v]; }

  const KernelIR& ir_;
  const PtxOptions& options_;
  unsigned unroll_;
  PtxWriter w_;
  std::vector<std::string> raw_;                // per parameter: its 64-bit word (empty if unused)
  std::vector<std::string> ptr_;                // per buffer parameter: its global address
  std::vector<std::string> uniform_;            // per instruction: a value computed before the loop
  std::vector<std::vector<std::string>> vals_;  // [copy][instruction]: register of the value
  std::string one64_;                           // holds 1 (range reports)
};

std::string KernelEmitter::load(ScalarType t, const std::string& addr, const std::string& guard) {
  std::string g = guard.empty() ? "" : "@" + guard + " ";
  if (t == ScalarType::Bool) {
    std::string byte = b32(), p = pred();
    if (!guard.empty())
      w_.op("mov.u32 {}, 0", byte);
    w_.op("{}ld.global.u8 {}, [{}]", g, byte, addr);
    w_.op("setp.ne.u32 {}, {}, 0", p, byte);
    return p;
  }
  std::string v = reg(t);
  if (!guard.empty())
    w_.op("mov.{} {}, {}", is_float(t) ? arith(t) : bits(t), v,
          t == ScalarType::Float32   ? ptx_f32(0.0f)
          : t == ScalarType::Float64 ? ptx_f64(0.0)
                                     : "0");
  w_.op("{}ld.global.{} {}, [{}]", g, mem(t), v, addr);
  return v;
}

void KernelEmitter::store(ScalarType t, const std::string& addr, const std::string& value,
                          const std::string& guard) {
  std::string g = guard.empty() ? "" : "@" + guard + " ";
  if (t == ScalarType::Bool) {
    std::string byte = b32();
    w_.op("selp.u32 {}, 1, 0, {}", byte, value);
    w_.op("{}st.global.u8 [{}], {}", g, addr, byte);
    return;
  }
  w_.op("{}st.global.{} [{}], {}", g, mem(t), addr, value);
}

// A literal: the bit pattern in a register of t's class (floats from exact hex immediates).
std::string KernelEmitter::konst(ScalarType t, uint64_t imm) {
  switch (t) {
    case ScalarType::Bool: {
      std::string r = b32(), p = pred();
      w_.op("mov.u32 {}, {}", r, imm != 0 ? 1 : 0);
      w_.op("setp.ne.u32 {}, {}, 0", p, r);
      return p;
    }
    case ScalarType::Float32: {
      std::string r = reg(t);
      w_.op("mov.f32 {}, {}", r, ptx_f32_bits(static_cast<uint32_t>(imm)));
      return r;
    }
    case ScalarType::Float64: {
      std::string r = reg(t);
      w_.op("mov.f64 {}, {}", r, ptx_f64_bits(imm));
      return r;
    }
    default: {
      std::string r = reg(t);
      if (size_of(t) == 4)
        w_.op("mov.b32 {}, 0x{:08X}", r, static_cast<uint32_t>(imm));
      else
        w_.op("mov.b64 {}, 0x{:016X}", r, imm);
      return r;
    }
  }
}

// A scalar argument's 64-bit word -> a value of type t (KernelArg::bits layout).
std::string KernelEmitter::from_param(ScalarType t, const std::string& raw) {
  switch (t) {
    case ScalarType::Bool: {
      std::string p = pred();
      w_.op("setp.ne.u64 {}, {}, 0", p, raw);
      return p;
    }
    case ScalarType::Int32:
    case ScalarType::UInt32: {
      std::string r = b32();
      w_.op("cvt.u32.u64 {}, {}", r, raw);
      return r;
    }
    case ScalarType::Int64:
    case ScalarType::UInt64:
      return raw;
    case ScalarType::Float32: {
      std::string r = b32(), f = reg(t);
      w_.op("cvt.u32.u64 {}, {}", r, raw);
      w_.op("mov.b32 {}, {}", f, r);
      return f;
    }
    case ScalarType::Float64: {
      std::string f = reg(t);
      w_.op("mov.b64 {}, {}", f, raw);
      return f;
    }
  }
  return raw;
}

// An integer index operand widened to 64 bits: signed types sign-extend, so negative indices
// become huge unsigned values and fail the `< bound` test.
std::string KernelEmitter::widen_index(uint32_t v, unsigned u) {
  ScalarType t = ir_.instrs[v].type;
  if (size_of(t) == 8)
    return val(v, u);
  std::string r = b64();
  w_.op("cvt.{}.{} {}, {}", is_signed_int(t) ? "s64" : "u64", is_signed_int(t) ? "s32" : "u32", r,
        val(v, u));
  return r;
}

std::string KernelEmitter::emit(const std::string& name) {
  size_t n_params = ir_.params.size();
  if (n_params > kMaxKernelParams)
    throw BackendError("cuda backend: kernel " + ir_.hash.to_hex() + " has " +
                       std::to_string(n_params) + " parameters; at most " +
                       std::to_string(kMaxKernelParams) + " fit a launch");
  std::vector<ParamSummary> uses = param_summary(ir_);

  // Thread index and grid stride.
  std::string n = b64(), i = b64(), stride = b64();
  std::string ctaid = b32(), ntid = b32(), tid = b32(), nctaid = b32(), done = w_.label();
  std::string p_out = pred();
  w_.op("ld.param.u64 {}, [ff_n]", n);
  w_.op("mov.u32 {}, %ctaid.x", ctaid);
  w_.op("mov.u32 {}, %ntid.x", ntid);
  w_.op("mov.u32 {}, %tid.x", tid);
  w_.op("mov.u32 {}, %nctaid.x", nctaid);
  std::string tid64 = b64();
  w_.op("cvt.u64.u32 {}, {}", tid64, tid);
  w_.op("mad.wide.u32 {}, {}, {}, {}", i, ctaid, ntid, tid64);
  w_.op("mul.wide.u32 {}, {}, {}", stride, nctaid, ntid);
  w_.op("setp.ge.u64 {}, {}, {}", p_out, i, n);
  w_.op("@{} bra {}", p_out, done);

  // Arguments the kernel uses; buffers as global addresses.
  raw_.assign(n_params, {});
  ptr_.assign(n_params, {});
  for (size_t p = 0; p < n_params; ++p) {
    if (!uses[p].used())
      continue;
    raw_[p] = b64();
    w_.op("ld.param.u64 {}, [ff_p{}]", raw_[p], p);
    if (ir_.params[p].kind != ParamKind::Scalar) {
      ptr_[p] = b64();
      w_.op("cvta.to.global.u64 {}, {}", ptr_[p], raw_[p]);
    }
  }
  one64_ = b64();
  w_.op("mov.u64 {}, 1", one64_);
  hoist_uniforms();

  vals_.assign(unroll_, std::vector<std::string>(ir_.instrs.size()));
  if (unroll_ > 1) {
    // Rounds of `unroll_` elements i, i + stride, ... while the last of them is in range.
    std::string span = b64(), step = b64(), last = b64(), p_tail = pred();
    std::string round = w_.label(), tail_check = w_.label();
    w_.op("mul.lo.u64 {}, {}, {}", span, stride, unroll_ - 1);
    w_.op("mul.lo.u64 {}, {}, {}", step, stride, unroll_);
    w_.place(round);
    w_.op("add.u64 {}, {}, {}", last, i, span);
    w_.op("setp.ge.u64 {}, {}, {}", p_tail, last, n);
    w_.op("@{} bra {}", p_tail, tail_check);
    std::vector<std::string> idx{i};
    for (unsigned u = 1; u < unroll_; ++u) {
      std::string next = b64();
      w_.op("add.u64 {}, {}, {}", next, idx.back(), stride);
      idx.push_back(next);
    }
    emit_body(idx);
    w_.op("add.u64 {}, {}, {}", i, i, step);
    w_.op("bra {}", round);
    w_.place(tail_check);
    std::string p_done = pred();
    w_.op("setp.ge.u64 {}, {}, {}", p_done, i, n);
    w_.op("@{} bra {}", p_done, done);
  }
  // The remaining elements, one per iteration.
  std::string loop = w_.label(), p_more = pred();
  w_.place(loop);
  emit_body({i});
  w_.op("add.u64 {}, {}, {}", i, i, stride);
  w_.op("setp.lt.u64 {}, {}, {}", p_more, i, n);
  w_.op("@{} bra {}", p_more, loop);
  w_.place(done);
  w_.op("ret");

  std::string s =
      "// freezeframe kernel " + ir_.hash.to_hex() + "\n" + ptx_module_header(options_.target);
  s += ptx_math_globals(ir_);
  s += ".visible .entry " + name + "(\n\t.param .u64 ff_n";
  for (size_t p = 0; p < n_params; ++p)
    s += ",\n\t.param .u64 ff_p" + std::to_string(p);
  s += "\n)\n.maxntid 256, 1, 1\n{\n";
  s += w_.declarations();
  s += w_.body();
  s += "}\n";
  return s;
}

// Values that are the same for every element: computed once per thread before the loop.
void KernelEmitter::hoist_uniforms() {
  uniform_.assign(ir_.instrs.size(), {});
  for (size_t k = 0; k < ir_.instrs.size(); ++k) {
    const IrInstr& in = ir_.instrs[k];
    switch (in.op) {
      case IrOp::Literal:
        uniform_[k] = konst(in.type, in.imm);
        break;
      case IrOp::Scalar:
        uniform_[k] = from_param(in.type, raw_[in.a]);
        break;
      case IrOp::LoadBroadcast:
        uniform_[k] = load(in.type, ptr_[in.a]);
        break;
      default:
        break;
    }
  }
}

// The instructions of every copy, interleaved instruction by instruction. A region (a loop,
// branch or call: ptx_regions.cpp) cannot be interleaved, since each copy's lanes branch their
// own way: it is emitted whole for copy 0, then for copy 1, ..., each copy with its own labels
// and registers, and the instructions after it are interleaved again. So the loads before a
// region are in flight together, as in a kernel without regions.
void KernelEmitter::emit_body(const std::vector<std::string>& idx) {
  size_t k = 0;
  while (k < ir_.instrs.size()) {
    if (opens_region(ir_.instrs[k])) {
      size_t end = k;
      for (unsigned u = 0; u < idx.size(); ++u) {
        end = k;
        RegionHost host(*this, idx[u], u);
        emit_ptx_region(w_, ir_, end, host);
      }
      k = end;
      continue;
    }
    for (unsigned u = 0; u < idx.size(); ++u)
      emit_value(static_cast<uint32_t>(k), idx[u], u);
    ++k;
  }
}

std::string KernelEmitter::emit_instr(const IrInstr& in, const std::string& i, unsigned u) {
  ScalarType t = in.type;
  switch (in.op) {
    case IrOp::Index: {
      if (size_of(t) == 8 && !is_float(t))
        return i;
      std::string r = reg(t);
      if (is_float(t))
        w_.op("cvt.rn.{}.u64 {}, {}", arith(t), r, i);
      else
        w_.op("cvt.u32.u64 {}, {}", r, i);
      return r;
    }
    case IrOp::Literal:
    case IrOp::Scalar:
    case IrOp::LoadBroadcast:
      return {};  // hoisted
    case IrOp::Load:
      return load(t, address(in.a, i, t));
    case IrOp::Store:
      store(t, address(in.a, i, t), val(in.b, u));
      return {};
    case IrOp::Gather:
      return emit_gather(in, u);
    case IrOp::Scatter: {
      ScatterTarget to = scatter_target(in, u);
      store(t, to.addr, val(in.d, u), to.ok);
      return {};
    }
    case IrOp::ScatterAdd:
    case IrOp::ScatterMul:
    case IrOp::ScatterMin:
    case IrOp::ScatterMax:
    case IrOp::ScatterAnd:
    case IrOp::ScatterOr: {
      ScatterTarget to = scatter_target(in, u);
      emit_scatter_update(w_, op_facts(in.op).reduce, t, to.ok, to.addr, val(in.d, u));
      return {};
    }
    case IrOp::ScatterInc: {
      ScatterTarget to = scatter_target(in, u);
      return emit_scatter_inc(w_, to.ok, to.addr);
    }
    case IrOp::Neg:
    case IrOp::Not:
    case IrOp::Abs:
    case IrOp::Sqrt:
    case IrOp::Exp:
    case IrOp::Log:
    case IrOp::Sin:
    case IrOp::Cos:
    case IrOp::Floor:
    case IrOp::Ceil:
    case IrOp::Tan:
    case IrOp::Asin:
    case IrOp::Acos:
    case IrOp::Atan:
    case IrOp::Sinh:
    case IrOp::Cosh:
    case IrOp::Tanh:
    case IrOp::Asinh:
    case IrOp::Acosh:
    case IrOp::Atanh:
    case IrOp::Exp2:
    case IrOp::Log2:
    case IrOp::Erf:
    case IrOp::Cbrt:
    case IrOp::Round:
    case IrOp::Trunc:
    case IrOp::Popcnt:
    case IrOp::Clz:
    case IrOp::Ctz:
      return emit_unary(in, u);
    case IrOp::Cast:
      return emit_cast(ir_.instrs[in.a].type, t, val(in.a, u));
    case IrOp::Bitcast: {
      std::string r = reg(t);
      w_.op("mov.{} {}, {}", bits(t), r, val(in.a, u));
      return r;
    }
    case IrOp::Add:
    case IrOp::Sub:
    case IrOp::Mul:
    case IrOp::Div:
    case IrOp::Mod:
    case IrOp::Min:
    case IrOp::Max:
    case IrOp::And:
    case IrOp::Or:
    case IrOp::Xor:
    case IrOp::Shl:
    case IrOp::Shr:
    case IrOp::Atan2:
    case IrOp::Pow:
    case IrOp::Copysign:
      return emit_binary(in, u);
    case IrOp::Eq:
    case IrOp::Ne:
    case IrOp::Lt:
    case IrOp::Le:
    case IrOp::Gt:
    case IrOp::Ge:
      return emit_compare(in, u);
    case IrOp::Fma: {
      std::string r = reg(t);
      if (is_float(t))
        w_.op("fma.rn.{} {}, {}, {}, {}", arith(t), r, val(in.a, u), val(in.b, u), val(in.c, u));
      else  // wrapping
        w_.op("mad.lo.{} {}, {}, {}, {}", arith(t), r, val(in.a, u), val(in.b, u), val(in.c, u));
      return r;
    }
    case IrOp::Select:
      return emit_select(t, val(in.a, u), val(in.b, u), val(in.c, u));
    case IrOp::LoopBegin:
    case IrOp::LoopVar:
    case IrOp::LoopCond:
    case IrOp::IfBegin:
    case IrOp::IfElse:
    case IrOp::CallBegin:
    case IrOp::CallCase:
    case IrOp::Yield:
    case IrOp::EndRegion:
    case IrOp::Result:
      // Control flow: emit_body and ptx_regions.cpp consume the markers (valid IR never
      // places one elsewhere).
      throw BackendError("cuda backend: kernel " + ir_.hash.to_hex() + " has a misplaced " +
                         ff::to_string(in.op) + " marker");
  }
  return {};
}

std::string KernelEmitter::emit_gather(const IrInstr& in, unsigned u) {
  ScalarType t = in.type;
  std::string idx = widen_index(in.b, u);
  std::string in_range = pred(), ok = pred();
  w_.op("setp.lt.u64 {}, {}, {}", in_range, idx, raw_[in.d]);
  if (in.flags & kIrFlagReportRange)
    emit_range_report(in, idx, in_range, val(in.c, u));
  w_.op("and.pred {}, {}, {}", ok, in_range, val(in.c, u));
  // Masked or out-of-range lanes read nothing and give 0.
  return load(t, address(in.a, idx, t), ok);
}

// Every scatter kind: the element's address, and the lanes that write it (mask and index in
// range; masked-in lanes out of range report under FF_DEBUG).
KernelEmitter::ScatterTarget KernelEmitter::scatter_target(const IrInstr& in, unsigned u) {
  std::string idx = widen_index(in.b, u);
  std::string in_range = pred(), ok = pred();
  w_.op("setp.lt.u64 {}, {}, {}", in_range, idx, raw_[in.e]);
  if (in.flags & kIrFlagReportRange)
    emit_range_report(in, idx, in_range, val(in.c, u));
  w_.op("and.pred {}, {}, {}", ok, in_range, val(in.c, u));
  return {address(in.a, idx, in.type), ok};
}

// FF_DEBUG: word 1 of the report buffer receives an offending index, then word 0 becomes 1.
void KernelEmitter::emit_range_report(const IrInstr& in, const std::string& idx,
                                      const std::string& in_range, const std::string& mask) {
  std::string bad = pred(), out = pred(), words = ptr_[in.imm];
  w_.op("not.pred {}, {}", out, in_range);
  w_.op("and.pred {}, {}, {}", bad, out, mask);
  w_.op("@{} st.global.u64 [{}+8], {}", bad, words, idx);
  w_.op("@{} st.global.u64 [{}], {}", bad, words, one64_);
}

std::string KernelEmitter::emit_unary(const IrInstr& in, unsigned u) {
  ScalarType t = in.type;
  const std::string& a = val(in.a, u);
  if (op_facts(in.op).cost == CostClass::Transcendental)
    return emit_math(w_, in.op, t, a);  // exp ... cbrt: the math routines
  std::string r = reg(t);
  switch (in.op) {
    case IrOp::Neg:
    case IrOp::Abs:
      if (is_float(t)) {
        // On the bits, so NaN keeps its payload (PTX's neg/abs.f32 leave it unspecified).
        std::string b = size_of(t) == 8 ? b64() : b32();
        w_.op("mov.{} {}, {}", bits(t), b, a);
        if (in.op == IrOp::Neg)
          w_.op("xor.{} {}, {}, {}", bits(t), b, b,
                size_of(t) == 8 ? "0x8000000000000000" : "0x80000000");
        else
          w_.op("and.{} {}, {}, {}", bits(t), b, b,
                size_of(t) == 8 ? "0x7FFFFFFFFFFFFFFF" : "0x7FFFFFFF");
        w_.op("mov.{} {}, {}", bits(t), r, b);
      } else if (in.op == IrOp::Neg) {
        w_.op("neg.{} {}, {}", size_of(t) == 8 ? "s64" : "s32", r, a);  // wraps
      } else if (is_signed_int(t)) {
        w_.op("abs.{} {}, {}", arith(t), r, a);  // abs(INT_MIN) == INT_MIN
      } else {
        return a;
      }
      return r;
    case IrOp::Not:
      w_.op("not.{} {}, {}", t == ScalarType::Bool ? "pred" : bits(t), r, a);
      return r;
    case IrOp::Sqrt:
      w_.op("sqrt.rn.{} {}, {}", arith(t), r, a);  // correctly rounded
      return r;
    case IrOp::Floor:
      w_.op("cvt.rmi.{}.{} {}, {}", arith(t), arith(t), r, a);
      return r;
    case IrOp::Ceil:
      w_.op("cvt.rpi.{}.{} {}, {}", arith(t), arith(t), r, a);
      return r;
    case IrOp::Trunc:
      w_.op("cvt.rzi.{}.{} {}, {}", arith(t), arith(t), r, a);
      return r;
    case IrOp::Round: {
      // Halfway cases away from zero (cvt.rni would round them to even): truncate, then step
      // one away from zero where the dropped fraction (exact) is at least a half. Infinities
      // give inf - inf = NaN, which fails the test and keeps them.
      bool wide = size_of(t) == 8;
      const char* sign = wide ? "0x8000000000000000" : "0x80000000";
      std::string frac = reg(t), mag = reg(t), one = reg(t), bits_a = wide ? b64() : b32(),
                  bits_f = wide ? b64() : b32(), half = pred();
      w_.op("cvt.rzi.{}.{} {}, {}", arith(t), arith(t), r, a);
      w_.op("sub.rn.{} {}, {}, {}", arith(t), frac, a, r);
      w_.op("mov.{} {}, {}", bits(t), bits_f, frac);
      w_.op("and.{} {}, {}, {}", bits(t), bits_f, bits_f,
            wide ? "0x7FFFFFFFFFFFFFFF" : "0x7FFFFFFF");
      w_.op("mov.{} {}, {}", bits(t), mag, bits_f);
      w_.op("setp.ge.{} {}, {}, {}", arith(t), half, mag,
            wide ? "0d3FE0000000000000" : "0f3F000000");
      w_.op("mov.{} {}, {}", bits(t), bits_a, a);  // +-1 with the sign of a
      w_.op("and.{} {}, {}, {}", bits(t), bits_a, bits_a, sign);
      w_.op("or.{} {}, {}, {}", bits(t), bits_a, bits_a,
            wide ? "0x3FF0000000000000" : "0x3F800000");
      w_.op("mov.{} {}, {}", bits(t), one, bits_a);
      w_.op("@{} add.rn.{} {}, {}, {}", half, arith(t), r, r, one);
      return r;
    }
    case IrOp::Popcnt:
    case IrOp::Clz:
    case IrOp::Ctz: {
      // popc/clz count into a u32; ctz(x) = popc((x & -x) - 1), which is the width for 0.
      bool wide = size_of(t) == 8;
      std::string src = a;
      if (in.op == IrOp::Ctz) {
        std::string low = wide ? b64() : b32();
        w_.op("neg.{} {}, {}", wide ? "s64" : "s32", low, a);
        w_.op("and.{} {}, {}, {}", bits(t), low, low, a);
        w_.op("sub.{} {}, {}, 1", wide ? "s64" : "s32", low, low);
        src = low;
      }
      std::string count = wide ? b32() : r;
      w_.op("{}.{} {}, {}", in.op == IrOp::Clz ? "clz" : "popc", bits(t), count, src);
      if (wide)
        w_.op("cvt.u64.u32 {}, {}", r, count);
      return r;
    }
    default:
      return r;
  }
}

std::string KernelEmitter::emit_binary(const IrInstr& in, unsigned u) {
  ScalarType t = in.type;
  const std::string& a = val(in.a, u);
  const std::string& b = val(in.b, u);
  std::string r = reg(t);
  bool fp = is_float(t), sgn = is_signed_int(t), wide = size_of(t) == 8;
  switch (in.op) {
    case IrOp::Add:  // `.rn` on floats: an explicit rounding is never fused into an fma
      w_.op("add{}.{} {}, {}, {}", fp ? ".rn" : "", arith(t), r, a, b);
      return r;
    case IrOp::Sub:
      w_.op("sub{}.{} {}, {}, {}", fp ? ".rn" : "", arith(t), r, a, b);
      return r;
    case IrOp::Mul:
      w_.op("mul{}.{} {}, {}, {}", fp ? ".rn" : ".lo", arith(t), r, a, b);
      return r;
    case IrOp::Div:
    case IrOp::Mod: {
      if (fp) {
        w_.op("div.rn.{} {}, {}, {}", arith(t), r, a, b);  // IEEE, full range
        return r;
      }
      // Never trap: a zero divisor becomes 1, and so does -1 under INT_MIN (quotient INT_MIN,
      // remainder 0), as in the LLVM backend.
      std::string bad = pred(), d = reg(t);
      w_.op("setp.eq.{} {}, {}, 0", bits(t), bad, b);
      if (sgn) {
        std::string is_min = pred(), is_m1 = pred();
        w_.op("setp.eq.{} {}, {}, {}", bits(t), is_min, a,
              wide ? "0x8000000000000000" : "0x80000000");
        w_.op("setp.eq.{} {}, {}, {}", bits(t), is_m1, b,
              wide ? "0xFFFFFFFFFFFFFFFF" : "0xFFFFFFFF");
        w_.op("and.pred {}, {}, {}", is_min, is_min, is_m1);
        w_.op("or.pred {}, {}, {}", bad, bad, is_min);
      }
      w_.op("selp.{} {}, 1, {}, {}", bits(t), d, b, bad);
      w_.op("{}.{} {}, {}, {}", in.op == IrOp::Div ? "div" : "rem", arith(t), r, a, d);
      return r;
    }
    case IrOp::Min:
    case IrOp::Max: {
      bool mx = in.op == IrOp::Max;
      if (!fp) {
        w_.op("{}.{} {}, {}, {}", mx ? "max" : "min", arith(t), r, a, b);
        return r;
      }
      // isnan(a) || b < a ? b : a (Max: b > a), as docs/kernel-ir.md: a NaN operand is
      // ignored and of two equal operands (+0 and -0) the first is the result, which PTX's
      // min/max.f leave to the hardware.
      std::string take_b = pred(), a_nan = pred();
      w_.op("setp.{}.{} {}, {}, {}", mx ? "gt" : "lt", arith(t), take_b, b, a);
      w_.op("setp.nan.{} {}, {}, {}", arith(t), a_nan, a, a);
      w_.op("or.pred {}, {}, {}", take_b, take_b, a_nan);
      w_.op("selp.{} {}, {}, {}, {}", arith(t), r, b, a, take_b);
      return r;
    }
    case IrOp::And:
    case IrOp::Or:
    case IrOp::Xor: {
      const char* name = in.op == IrOp::And ? "and" : in.op == IrOp::Or ? "or" : "xor";
      w_.op("{}.{} {}, {}, {}", name, t == ScalarType::Bool ? "pred" : bits(t), r, a, b);
      return r;
    }
    case IrOp::Atan2:
    case IrOp::Pow:
      return emit_math2(w_, in.op, t, a, b);
    case IrOp::Copysign: {
      // On the bits: |a| with b's sign bit, NaN payloads kept (as llvm.copysign).
      std::string x = wide ? b64() : b32(), y = wide ? b64() : b32();
      w_.op("mov.{} {}, {}", bits(t), x, a);
      w_.op("mov.{} {}, {}", bits(t), y, b);
      w_.op("and.{} {}, {}, {}", bits(t), x, x, wide ? "0x7FFFFFFFFFFFFFFF" : "0x7FFFFFFF");
      w_.op("and.{} {}, {}, {}", bits(t), y, y, wide ? "0x8000000000000000" : "0x80000000");
      w_.op("or.{} {}, {}, {}", bits(t), x, x, y);
      w_.op("mov.{} {}, {}", bits(t), r, x);
      return r;
    }
    case IrOp::Shl:
    case IrOp::Shr: {
      // Counts modulo the width (PTX clamps counts past the width instead).
      std::string count = b32();
      if (wide) {
        w_.op("cvt.u32.u64 {}, {}", count, b);
        w_.op("and.b32 {}, {}, 63", count, count);
      } else {
        w_.op("and.b32 {}, {}, 31", count, b);
      }
      if (in.op == IrOp::Shl)
        w_.op("shl.{} {}, {}, {}", bits(t), r, a, count);
      else
        w_.op("shr.{} {}, {}, {}", arith(t), r, a, count);  // arithmetic for signed types
      return r;
    }
    default:
      return r;
  }
}

std::string KernelEmitter::emit_compare(const IrInstr& in, unsigned u) {
  ScalarType t = ir_.instrs[in.a].type;
  const std::string& a = val(in.a, u);
  const std::string& b = val(in.b, u);
  std::string r = pred();
  if (t == ScalarType::Bool) {
    // false < true, on predicates.
    std::string na = pred(), nb = pred();
    switch (in.op) {
      case IrOp::Eq:
        w_.op("xor.pred {}, {}, {}", na, a, b);
        w_.op("not.pred {}, {}", r, na);
        break;
      case IrOp::Ne:
        w_.op("xor.pred {}, {}, {}", r, a, b);
        break;
      case IrOp::Lt:  // !a & b
        w_.op("not.pred {}, {}", na, a);
        w_.op("and.pred {}, {}, {}", r, na, b);
        break;
      case IrOp::Le:  // !a | b
        w_.op("not.pred {}, {}", na, a);
        w_.op("or.pred {}, {}, {}", r, na, b);
        break;
      case IrOp::Gt:  // a & !b
        w_.op("not.pred {}, {}", nb, b);
        w_.op("and.pred {}, {}, {}", r, a, nb);
        break;
      default:  // Ge: a | !b
        w_.op("not.pred {}, {}", nb, b);
        w_.op("or.pred {}, {}, {}", r, a, nb);
        break;
    }
    return r;
  }
  // Floats: ordered comparisons, except != which is true for NaN (neu).
  const char* cmp = in.op == IrOp::Eq   ? "eq"
                    : in.op == IrOp::Ne ? (is_float(t) ? "neu" : "ne")
                    : in.op == IrOp::Lt ? "lt"
                    : in.op == IrOp::Le ? "le"
                    : in.op == IrOp::Gt ? "gt"
                                        : "ge";
  w_.op("setp.{}.{} {}, {}, {}", cmp, arith(t), r, a, b);
  return r;
}

std::string KernelEmitter::emit_cast(ScalarType from, ScalarType to, const std::string& v) {
  if (from == to)
    return v;
  std::string r = reg(to);
  if (to == ScalarType::Bool) {
    // x != 0; NaN counts as true (unordered not-equal).
    if (is_float(from))
      w_.op("setp.neu.{} {}, {}, {}", arith(from), r, v,
            from == ScalarType::Float32 ? ptx_f32(0.0f) : ptx_f64(0.0));
    else
      w_.op("setp.ne.{} {}, {}, 0", bits(from), r, v);
    return r;
  }
  if (from == ScalarType::Bool) {
    if (is_float(to))
      w_.op("selp.{} {}, {}, {}, {}", arith(to), r,
            to == ScalarType::Float32 ? ptx_f32(1.0f) : ptx_f64(1.0),
            to == ScalarType::Float32 ? ptx_f32(0.0f) : ptx_f64(0.0), v);
    else
      w_.op("selp.{} {}, 1, 0, {}", bits(to), r, v);
    return r;
  }
  if (is_float(to)) {
    if (is_float(from)) {
      if (to == ScalarType::Float64)
        w_.op("cvt.f64.f32 {}, {}", r, v);  // exact
      else
        w_.op("cvt.rn.f32.f64 {}, {}", r, v);
    } else {
      w_.op("cvt.rn.{}.{} {}, {}", arith(to), arith(from), r, v);
    }
    return r;
  }
  if (is_float(from)) {
    // Truncation toward zero; PTX saturates float -> integer conversions to the destination's
    // range and converts NaN to 0, which is what the IR specifies.
    w_.op("cvt.rzi.{}.{} {}, {}", arith(to), arith(from), r, v);
    return r;
  }
  // Integer -> integer: same width is the same bits; widening by the source's signedness;
  // narrowing keeps the low bits.
  if (size_of(from) == size_of(to))
    w_.op("mov.{} {}, {}", bits(to), r, v);
  else if (size_of(to) == 8)
    w_.op("cvt.{}.{} {}, {}", is_signed_int(from) ? "s64" : "u64", arith(from), r, v);
  else
    w_.op("cvt.u32.u64 {}, {}", r, v);
  return r;
}

std::string KernelEmitter::emit_select(ScalarType t, const std::string& m, const std::string& a,
                                       const std::string& b) {
  std::string r = reg(t);
  if (t == ScalarType::Bool) {
    // (m & a) | (!m & b)
    std::string x = pred(), nm = pred(), y = pred();
    w_.op("and.pred {}, {}, {}", x, m, a);
    w_.op("not.pred {}, {}", nm, m);
    w_.op("and.pred {}, {}, {}", y, nm, b);
    w_.op("or.pred {}, {}, {}", r, x, y);
    return r;
  }
  w_.op("selp.{} {}, {}, {}, {}", is_float(t) ? arith(t) : bits(t), r, a, b, m);
  return r;
}

}  // namespace

std::string emit_ptx_kernel(const KernelIR& ir, const std::string& name,
                            const PtxOptions& options) {
  return KernelEmitter(ir, options).emit(name);
}

}  // namespace ff::cuda_backend
