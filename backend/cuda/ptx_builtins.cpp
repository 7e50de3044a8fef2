// The built-in kernels as PTX (see ptx_builtins.h for their entries). Blocks have 256 threads
// (8 warps); block-wide reductions combine with warp shuffles (butterfly: every lane ends with
// the warp's result), then each warp reduces the 8 warp results from shared memory again, so
// every thread holds the block's result without a broadcast. Scans use the same scheme with
// shfl.up inside a warp and a scan of the 8 warp totals in every warp.
#include "backend/cuda/ptx_builtins.h"

#include <algorithm>
#include <vector>

#include "freezeframe/errors.h"

namespace ff::cuda_backend {
namespace {

constexpr unsigned kWarps = kBuiltinBlock / 32;

// How a reduction or scan holds its values: Bool as a 0/1 u32.
struct Acc {
  ScalarType type;  // the element type (Bool included)
  RegClass cls;
  const char* arith;  // add/mul/min/max suffix
  const char* bits;   // b32 / b64
  const char* mem;    // shared/global access of one accumulator
  unsigned bytes;
  bool fp;
};

Acc acc_of(ScalarType t) {
  switch (t) {
    case ScalarType::Bool:
      return {t, RegClass::B32, "u32", "b32", "u32", 4, false};
    case ScalarType::Int32:
      return {t, RegClass::B32, "s32", "b32", "u32", 4, false};
    case ScalarType::UInt32:
      return {t, RegClass::B32, "u32", "b32", "u32", 4, false};
    case ScalarType::Int64:
      return {t, RegClass::B64, "s64", "b64", "u64", 8, false};
    case ScalarType::UInt64:
      return {t, RegClass::B64, "u64", "b64", "u64", 8, false};
    case ScalarType::Float32:
      return {t, RegClass::F32, "f32", "b32", "f32", 4, true};
    case ScalarType::Float64:
      return {t, RegClass::F64, "f64", "b64", "f64", 8, true};
  }
  return {t, RegClass::B32, "u32", "b32", "u32", 4, false};
}

// Bool reductions: Min is And, Max is Or.
ReduceOp effective(ReduceOp op, ScalarType t) {
  if (t == ScalarType::Bool && op == ReduceOp::Min)
    return ReduceOp::And;
  if (t == ScalarType::Bool && op == ReduceOp::Max)
    return ReduceOp::Or;
  return op;
}

// An immediate of the accumulator's type.
std::string imm_int(const Acc& a, uint64_t bits) {
  return a.bytes == 8 ? fmt::format("0x{:016X}", bits)
                      : fmt::format("0x{:08X}", static_cast<uint32_t>(bits));
}

// The identity the loops start from. Float Min/Max start from NaN, which min/max ignore, so
// a share of only NaN stays NaN (host_reduce's "all NaN gives NaN").
std::string identity(ReduceOp op, const Acc& a) {
  bool d = a.type == ScalarType::Float64;
  switch (effective(op, a.type)) {
    case ReduceOp::Add:
      return a.fp ? (d ? ptx_f64(0.0) : ptx_f32(0.0f)) : "0";
    case ReduceOp::Mul:
      return a.fp ? (d ? ptx_f64(1.0) : ptx_f32(1.0f)) : "1";
    case ReduceOp::Min:
    case ReduceOp::Max: {
      if (a.fp)
        return d ? ptx_f64_bits(0x7FF8000000000000ULL) : ptx_f32_bits(0x7FC00000u);
      bool mn = op == ReduceOp::Min;
      switch (a.type) {
        case ScalarType::Int32:
          return imm_int(a, mn ? 0x7FFFFFFFu : 0x80000000u);
        case ScalarType::UInt32:
          return imm_int(a, mn ? 0xFFFFFFFFu : 0);
        case ScalarType::Int64:
          return imm_int(a, mn ? 0x7FFFFFFFFFFFFFFFULL : 0x8000000000000000ULL);
        default:
          return imm_int(a, mn ? ~0ULL : 0);
      }
    }
    case ReduceOp::And:
      return a.type == ScalarType::Bool ? "1" : imm_int(a, ~0ULL);
    case ReduceOp::Or:
      return "0";
  }
  return "0";
}

// The result of an empty reduction (host_reduce): +-inf for float Min/Max, else identity().
std::string empty_result(ReduceOp op, const Acc& a) {
  bool d = a.type == ScalarType::Float64;
  if (a.fp && op == ReduceOp::Min)
    return d ? ptx_f64_bits(0x7FF0000000000000ULL) : ptx_f32_bits(0x7F800000u);
  if (a.fp && op == ReduceOp::Max)
    return d ? ptx_f64_bits(0xFFF0000000000000ULL) : ptx_f32_bits(0xFF800000u);
  return identity(op, a);
}

// One entry point under construction.
class Kernel {
 public:
  Kernel(std::string name, std::vector<std::string> params, unsigned shared_bytes)
      : name_(std::move(name)), params_(std::move(params)), shared_bytes_(shared_bytes) {
    tid = b32();
    ntid = b32();
    ctaid = b32();
    nctaid = b32();
    lane = b32();
    warp = b32();
    w.op("mov.u32 {}, %tid.x", tid);
    w.op("mov.u32 {}, %ntid.x", ntid);
    w.op("mov.u32 {}, %ctaid.x", ctaid);
    w.op("mov.u32 {}, %nctaid.x", nctaid);
    w.op("and.b32 {}, {}, 31", lane, tid);
    w.op("shr.u32 {}, {}, 5", warp, tid);
    if (shared_bytes_) {
      smem = b32();
      w.op("mov.u32 {}, ff_smem", smem);
    }
  }

  std::string b32() { return w.reg(RegClass::B32); }

  std::string b64() { return w.reg(RegClass::B64); }

  std::string pred() { return w.reg(RegClass::Pred); }

  std::string reg(const Acc& a) { return w.reg(a.cls); }

  // A u64 parameter's value.
  std::string param(const std::string& name) {
    std::string r = b64();
    w.op("ld.param.u64 {}, [{}]", r, name);
    return r;
  }

  // A pointer parameter as a global address.
  std::string pointer(const std::string& name) {
    std::string raw = param(name), g = b64();
    w.op("cvta.to.global.u64 {}, {}", g, raw);
    return g;
  }

  // base + index * size (index: a u64 register).
  std::string element(const std::string& base, const std::string& index, unsigned size) {
    std::string a = b64();
    if (size == 1) {
      w.op("add.u64 {}, {}, {}", a, base, index);
    } else {
      std::string off = b64();
      w.op("mul.lo.u64 {}, {}, {}", off, index, size);
      w.op("add.u64 {}, {}, {}", a, base, off);
    }
    return a;
  }

  std::string widen(const std::string& u32) {
    std::string r = b64();
    w.op("cvt.u64.u32 {}, {}", r, u32);
    return r;
  }

  void mov(const Acc& a, const std::string& d, const std::string& v) {
    w.op("mov.{} {}, {}", a.fp ? a.arith : a.bits, d, v);
  }

  // d = x op y.
  void combine(ReduceOp op, const Acc& a, const std::string& d, const std::string& x,
               const std::string& y) {
    switch (effective(op, a.type)) {
      case ReduceOp::Add:
        w.op("add{}.{} {}, {}, {}", a.fp ? ".rn" : "", a.arith, d, x, y);
        break;
      case ReduceOp::Mul:
        w.op("mul{}.{} {}, {}, {}", a.fp ? ".rn" : ".lo", a.arith, d, x, y);
        break;
      case ReduceOp::Min:
        w.op("min.{} {}, {}, {}", a.arith, d, x, y);
        break;
      case ReduceOp::Max:
        w.op("max.{} {}, {}, {}", a.arith, d, x, y);
        break;
      case ReduceOp::And:
        w.op("and.{} {}, {}, {}", a.bits, d, x, y);
        break;
      case ReduceOp::Or:
        w.op("or.{} {}, {}, {}", a.bits, d, x, y);
        break;
    }
  }

  // Loads one element of `type` at `addr` into an accumulator register (Bool: 0/1).
  std::string load(const Acc& a, const std::string& addr, const std::string& guard = {},
                   const char* qualifier = "") {
    std::string g = guard.empty() ? "" : "@" + guard + " ";
    std::string r = reg(a);
    if (a.type == ScalarType::Bool) {
      std::string byte = b32(), p = pred();
      w.op("mov.u32 {}, 0", byte);
      w.op("{}ld{}.global.u8 {}, [{}]", g, qualifier, byte, addr);
      w.op("setp.ne.u32 {}, {}, 0", p, byte);
      w.op("selp.u32 {}, 1, 0, {}", r, p);
      return r;
    }
    if (!guard.empty())
      mov(a, r, identity(ReduceOp::Add, a));
    w.op("{}ld{}.global.{} {}, [{}]", g, qualifier, a.mem, r, addr);
    return r;
  }

  // A warp shuffle of an accumulator (64-bit values as two 32-bit halves).
  std::string shfl(const Acc& a, const char* mode, const std::string& v, const std::string& b,
                   const char* c) {
    std::string out = reg(a);
    if (a.bytes == 4) {
      std::string in = v, res = b32();
      if (a.fp) {
        in = b32();
        w.op("mov.b32 {}, {}", in, v);
      }
      w.op("shfl.sync.{}.b32 {}, {}, {}, {}, 0xffffffff", mode, res, in, b, c);
      w.op("mov.b32 {}, {}", out, res);
      return out;
    }
    std::string in = v;
    if (a.fp) {
      in = b64();
      w.op("mov.b64 {}, {}", in, v);
    }
    std::string lo = b32(), hi = b32(), h64 = b64(), slo = b32(), shi = b32();
    w.op("cvt.u32.u64 {}, {}", lo, in);
    w.op("shr.b64 {}, {}, 32", h64, in);
    w.op("cvt.u32.u64 {}, {}", hi, h64);
    w.op("shfl.sync.{}.b32 {}, {}, {}, {}, 0xffffffff", mode, slo, lo, b, c);
    w.op("shfl.sync.{}.b32 {}, {}, {}, {}, 0xffffffff", mode, shi, hi, b, c);
    std::string l64 = b64(), u64 = b64(), both = b64();
    w.op("cvt.u64.u32 {}, {}", l64, slo);
    w.op("cvt.u64.u32 {}, {}", u64, shi);
    w.op("shl.b64 {}, {}, 32", u64, u64);
    w.op("or.b64 {}, {}, {}", both, u64, l64);
    w.op("mov.b64 {}, {}", out, both);
    return out;
  }

  // Every lane gets op over the warp's 32 values.
  std::string warp_allreduce(ReduceOp op, const Acc& a, const std::string& v) {
    std::string cur = v;
    for (int off = 16; off >= 1; off /= 2) {
      std::string other = shfl(a, "bfly", cur, std::to_string(off), "0x1f"), next = reg(a);
      combine(op, a, next, cur, other);
      cur = next;
    }
    return cur;
  }

  // Every thread gets op over the block's values. Uses ff_smem[0, 8 * kWarps).
  std::string block_allreduce(ReduceOp op, const Acc& a, const std::string& v) {
    std::string wv = warp_allreduce(op, a, v);
    std::string p0 = pred(), pw = pred(), slot = b32(), mine = b32();
    w.op("setp.eq.u32 {}, {}, 0", p0, lane);
    w.op("mad.lo.u32 {}, {}, 8, {}", slot, warp, smem);
    w.op("@{} st.shared.{} [{}], {}", p0, a.mem, slot, wv);
    w.op("bar.sync 0");
    std::string x = reg(a);
    mov(a, x, identity(op, a));
    w.op("setp.lt.u32 {}, {}, {}", pw, lane, kWarps);
    w.op("mad.lo.u32 {}, {}, 8, {}", mine, lane, smem);
    w.op("@{} ld.shared.{} {}, [{}]", pw, a.mem, x, mine);
    std::string total = warp_allreduce(op, a, x);
    w.op("bar.sync 0");  // ff_smem may be written again after this
    return total;
  }

  // Inclusive scan (sum) over the warp's lanes.
  std::string warp_scan(const Acc& a, const std::string& v) {
    std::string cur = v, zero = reg(a);
    mov(a, zero, identity(ReduceOp::Add, a));
    for (int off = 1; off < 32; off *= 2) {
      std::string up = shfl(a, "up", cur, std::to_string(off), "0"), p = pred(), add = reg(a);
      std::string next = reg(a);
      w.op("setp.ge.u32 {}, {}, {}", p, lane, off);
      w.op("selp.{} {}, {}, {}, {}", a.fp ? a.arith : a.bits, add, up, zero, p);
      combine(ReduceOp::Add, a, next, cur, add);
      cur = next;
    }
    return cur;
  }

  // The scan's exclusive value from its inclusive one: the previous lane's (0 in lane 0).
  std::string warp_exclusive(const Acc& a, const std::string& incl) {
    std::string prev = shfl(a, "up", incl, "1", "0"), zero = reg(a), out = reg(a), p = pred();
    mov(a, zero, identity(ReduceOp::Add, a));
    w.op("setp.eq.u32 {}, {}, 0", p, lane);
    w.op("selp.{} {}, {}, {}, {}", a.fp ? a.arith : a.bits, out, zero, prev, p);
    return out;
  }

  // [begin, end) of this block's chunk: begin = ctaid * chunk, end = min(begin + chunk, n).
  std::pair<std::string, std::string> chunk_range(const std::string& n, const std::string& chunk) {
    std::string begin = b64(), end = b64(), c64 = widen(ctaid);
    w.op("mul.lo.u64 {}, {}, {}", begin, c64, chunk);
    w.op("add.u64 {}, {}, {}", end, begin, chunk);
    w.op("min.u64 {}, {}, {}", end, end, n);
    return {begin, end};
  }

  std::string text() const {
    std::string s = ".visible .entry " + name_ + "(";
    for (size_t i = 0; i < params_.size(); ++i)
      s += (i ? ",\n\t" : "\n\t") + std::string(".param .u64 ") + params_[i];
    s += "\n)\n.reqntid " + std::to_string(kBuiltinBlock) + ", 1, 1\n{\n";
    if (shared_bytes_)
      s += "\t.shared .align 8 .b8 ff_smem[" + std::to_string(shared_bytes_) + "];\n";
    s += w.declarations() + w.body() + "}\n\n";
    return s;
  }

  PtxWriter w;
  std::string tid, ntid, ctaid, nctaid, lane, warp, smem;

 private:
  std::string name_;
  std::vector<std::string> params_;
  unsigned shared_bytes_;
};

// i = ctaid * ntid + tid and the grid stride, as u64.
std::pair<std::string, std::string> grid_index(Kernel& k) {
  std::string i = k.b64(), stride = k.b64(), t64 = k.widen(k.tid);
  k.w.op("mad.wide.u32 {}, {}, {}, {}", i, k.ctaid, k.ntid, t64);
  k.w.op("mul.wide.u32 {}, {}, {}", stride, k.nctaid, k.ntid);
  return {i, stride};
}

// Emits `for (; i < n; i += stride) body(i);` around `body`.
template <class Body>
void grid_loop(Kernel& k, const std::string& i, const std::string& stride, const std::string& n,
               Body body) {
  std::string loop = k.w.label(), done = k.w.label(), p = k.pred();
  k.w.place(loop);
  k.w.op("setp.ge.u64 {}, {}, {}", p, i, n);
  k.w.op("@{} bra {}", p, done);
  body(i);
  k.w.op("add.u64 {}, {}, {}", i, i, stride);
  k.w.op("bra {}", loop);
  k.w.place(done);
}

const char* store_type(unsigned size) {
  return size == 1 ? "u8" : size == 2 ? "u16" : size == 4 ? "u32" : "u64";
}

}  // namespace

unsigned accumulator_bytes(ScalarType type) {
  return acc_of(type).bytes;
}

BuiltinGrid reduce_grid(uint64_t n, unsigned max_blocks) {
  uint64_t blocks = (n + kBuiltinBlock - 1) / kBuiltinBlock;
  uint64_t cap = std::max(1u, std::min(max_blocks, kMaxBuiltinBlocks));
  return {static_cast<unsigned>(std::clamp<uint64_t>(blocks, 1, cap)), kBuiltinBlock};
}

BuiltinGrid chunked_grid(uint64_t n, unsigned max_blocks) {
  BuiltinGrid g = reduce_grid(n, max_blocks);
  uint64_t per = (n + g.grid - 1) / g.grid;
  g.chunk = std::max<uint64_t>(1, (per + kBuiltinBlock - 1) / kBuiltinBlock) * kBuiltinBlock;
  g.grid = static_cast<unsigned>(std::max<uint64_t>(1, (n + g.chunk - 1) / g.chunk));
  return g;
}

std::string ptx_fill(unsigned elem_size, const PtxTarget& target) {
  if (elem_size != 1 && elem_size != 2 && elem_size != 4 && elem_size != 8)
    throw BackendError("cuda backend: fill element size " + std::to_string(elem_size) +
                       " is not 1, 2, 4 or 8");
  Kernel k("ff_fill", {"ff_n", "ff_ptr", "ff_value"}, 0);
  std::string n = k.param("ff_n"), ptr = k.pointer("ff_ptr"), value = k.param("ff_value");
  std::string v = value;
  if (elem_size < 8) {
    v = k.b32();
    k.w.op("cvt.u32.u64 {}, {}", v, value);
  }
  auto [i, stride] = grid_index(k);
  grid_loop(k, i, stride, n, [&](const std::string& idx) {
    k.w.op("st.global.{} [{}], {}", store_type(elem_size), k.element(ptr, idx, elem_size), v);
  });
  k.w.op("ret");
  return ptx_module_header(target) + k.text();
}

std::string ptx_copy(const PtxTarget& target) {
  Kernel k("ff_copy", {"ff_n", "ff_dst", "ff_src"}, 0);
  std::string n = k.param("ff_n"), dst = k.pointer("ff_dst"), src = k.pointer("ff_src");
  std::string any = k.b64(), p = k.pred(), words = k.b64(), bytes = k.w.label();
  std::string done = k.w.label();
  k.w.op("or.b64 {}, {}, {}", any, dst, src);
  k.w.op("or.b64 {}, {}, {}", any, any, n);
  k.w.op("and.b64 {}, {}, 7", any, any);
  k.w.op("setp.ne.u64 {}, {}, 0", p, any);
  k.w.op("@{} bra {}", p, bytes);
  k.w.op("shr.u64 {}, {}, 3", words, n);
  {
    auto [i, stride] = grid_index(k);
    grid_loop(k, i, stride, words, [&](const std::string& idx) {
      std::string v = k.b64();
      k.w.op("ld.global.u64 {}, [{}]", v, k.element(src, idx, 8));
      k.w.op("st.global.u64 [{}], {}", k.element(dst, idx, 8), v);
    });
    k.w.op("bra {}", done);
  }
  k.w.place(bytes);
  {
    auto [i, stride] = grid_index(k);
    grid_loop(k, i, stride, n, [&](const std::string& idx) {
      std::string v = k.b32();
      k.w.op("ld.global.u8 {}, [{}]", v, k.element(src, idx, 1));
      k.w.op("st.global.u8 [{}], {}", k.element(dst, idx, 1), v);
    });
  }
  k.w.place(done);
  k.w.op("ret");
  return ptx_module_header(target) + k.text();
}

std::string ptx_reduce(ReduceOp op, ScalarType type, const PtxTarget& target) {
  if (!reduce_defined(op, type))
    throw BackendError(std::string("cuda backend: reduce ") + to_string(op) +
                       " is not defined for " + to_string(type));
  Acc a = acc_of(type);
  unsigned elem = static_cast<unsigned>(size_of(type));
  Kernel k("ff_reduce", {"ff_n", "ff_in", "ff_out", "ff_partials", "ff_counter"}, 8 * kWarps + 8);
  std::string n = k.param("ff_n"), in = k.pointer("ff_in"), out = k.pointer("ff_out");
  std::string partials = k.pointer("ff_partials"), counter = k.pointer("ff_counter");
  // This block's grid-stride share.
  std::string acc = k.reg(a);
  k.mov(a, acc, identity(op, a));
  auto [i, stride] = grid_index(k);
  grid_loop(k, i, stride, n, [&](const std::string& idx) {
    std::string x = k.load(a, k.element(in, idx, elem));
    k.combine(op, a, acc, acc, x);
  });
  std::string total = k.block_allreduce(op, a, acc);
  // Thread 0 publishes the partial and takes a ticket; the last block combines them all.
  std::string p0 = k.pred(), plast = k.pred(), pnot = k.pred(), ticket = k.b32();
  std::string last_id = k.b32(), flag = k.b32(), flag_addr = k.b32(), flag2 = k.b32();
  k.w.op("setp.eq.u32 {}, {}, 0", p0, k.tid);
  k.w.op("@{} st.global.{} [{}], {}", p0, a.mem, k.element(partials, k.widen(k.ctaid), a.bytes),
         total);
  k.w.op("@{} membar.gl", p0);
  k.w.op("mov.u32 {}, 0xFFFFFFFF", ticket);
  k.w.op("@{} atom.global.add.u32 {}, [{}], 1", p0, ticket, counter);
  k.w.op("sub.u32 {}, {}, 1", last_id, k.nctaid);
  k.w.op("setp.eq.u32 {}, {}, {}", plast, ticket, last_id);
  k.w.op("selp.u32 {}, 1, 0, {}", flag, plast);
  k.w.op("add.u32 {}, {}, {}", flag_addr, k.smem, 8 * kWarps);
  k.w.op("@{} st.shared.u32 [{}], {}", p0, flag_addr, flag);
  k.w.op("bar.sync 0");
  k.w.op("ld.shared.u32 {}, [{}]", flag2, flag_addr);
  k.w.op("setp.eq.u32 {}, {}, 0", pnot, flag2);
  std::string exit = k.w.label();
  k.w.op("@{} bra {}", pnot, exit);
  k.w.op("membar.gl");
  std::string acc2 = k.reg(a), j = k.b32(), loop = k.w.label(), done = k.w.label();
  std::string pj = k.pred();
  k.mov(a, acc2, identity(op, a));
  k.w.op("mov.u32 {}, {}", j, k.tid);
  k.w.place(loop);
  k.w.op("setp.ge.u32 {}, {}, {}", pj, j, k.nctaid);
  k.w.op("@{} bra {}", pj, done);
  {
    std::string x = k.reg(a);
    k.w.op("ld.volatile.global.{} {}, [{}]", a.mem, x, k.element(partials, k.widen(j), a.bytes));
    k.combine(op, a, acc2, acc2, x);
  }
  k.w.op("add.u32 {}, {}, {}", j, j, k.ntid);
  k.w.op("bra {}", loop);
  k.w.place(done);
  std::string result = k.block_allreduce(op, a, acc2);
  std::string empty = empty_result(op, a);
  if (empty != identity(op, a)) {
    std::string pz = k.pred();
    k.w.op("setp.eq.u64 {}, {}, 0", pz, n);
    k.w.op("@{} mov.{} {}, {}", pz, a.fp ? a.arith : a.bits, result, empty);
  }
  if (type == ScalarType::Bool)
    k.w.op("@{} st.global.u8 [{}], {}", p0, out, result);
  else
    k.w.op("@{} st.global.{} [{}], {}", p0, a.mem, out, result);
  std::string zero = k.b32();
  k.w.op("mov.u32 {}, 0", zero);
  k.w.op("@{} st.global.u32 [{}], {}", p0, counter, zero);
  k.w.place(exit);
  k.w.op("ret");
  return ptx_module_header(target) + k.text();
}

std::string ptx_prefix_sum(ScalarType type, bool exclusive, const PtxTarget& target) {
  if (!is_valid(type) || type == ScalarType::Bool)
    throw BackendError(std::string("cuda backend: prefix_sum is not defined for ") +
                       to_string(type));
  Acc a = acc_of(type);
  std::string text = ptx_module_header(target);
  {
    Kernel k("ff_scan_partials", {"ff_n", "ff_in", "ff_partials", "ff_chunk"}, 8 * kWarps);
    std::string n = k.param("ff_n"), in = k.pointer("ff_in");
    std::string partials = k.pointer("ff_partials"), chunk = k.param("ff_chunk");
    auto [begin, end] = k.chunk_range(n, chunk);
    std::string acc = k.reg(a), i = k.b64(), step = k.widen(k.ntid), t64 = k.widen(k.tid);
    k.mov(a, acc, identity(ReduceOp::Add, a));
    k.w.op("add.u64 {}, {}, {}", i, begin, t64);
    grid_loop(k, i, step, end, [&](const std::string& idx) {
      std::string x = k.load(a, k.element(in, idx, a.bytes));
      k.combine(ReduceOp::Add, a, acc, acc, x);
    });
    std::string total = k.block_allreduce(ReduceOp::Add, a, acc), p0 = k.pred();
    k.w.op("setp.eq.u32 {}, {}, 0", p0, k.tid);
    k.w.op("@{} st.global.{} [{}], {}", p0, a.mem, k.element(partials, k.widen(k.ctaid), a.bytes),
           total);
    k.w.op("ret");
    text += k.text();
  }
  {
    Kernel k("ff_scan_apply", {"ff_n", "ff_in", "ff_out", "ff_partials", "ff_chunk"}, 8 * kWarps);
    std::string n = k.param("ff_n"), in = k.pointer("ff_in"), out = k.pointer("ff_out");
    std::string partials = k.pointer("ff_partials"), chunk = k.param("ff_chunk");
    // The chunk's offset: the sum of the partials of the blocks before it.
    std::string acc = k.reg(a), j = k.b32(), loop = k.w.label(), done = k.w.label();
    std::string pj = k.pred();
    k.mov(a, acc, identity(ReduceOp::Add, a));
    k.w.op("mov.u32 {}, {}", j, k.tid);
    k.w.place(loop);
    k.w.op("setp.ge.u32 {}, {}, {}", pj, j, k.ctaid);
    k.w.op("@{} bra {}", pj, done);
    {
      std::string x = k.reg(a);
      k.w.op("ld.global.{} {}, [{}]", a.mem, x, k.element(partials, k.widen(j), a.bytes));
      k.combine(ReduceOp::Add, a, acc, acc, x);
    }
    k.w.op("add.u32 {}, {}, {}", j, j, k.ntid);
    k.w.op("bra {}", loop);
    k.w.place(done);
    std::string carry = k.block_allreduce(ReduceOp::Add, a, acc);
    auto [begin, end] = k.chunk_range(n, chunk);
    // Tiles of 256 elements: scan in the warp, then across the 8 warps, then add the carry.
    std::string base = k.b64(), t64 = k.widen(k.tid), tile = k.w.label(), exit = k.w.label();
    std::string pt = k.pred();
    k.w.op("mov.u64 {}, {}", base, begin);
    k.w.place(tile);
    k.w.op("setp.ge.u64 {}, {}, {}", pt, base, end);
    k.w.op("@{} bra {}", pt, exit);
    std::string i = k.b64(), pin = k.pred();
    k.w.op("add.u64 {}, {}, {}", i, base, t64);
    k.w.op("setp.lt.u64 {}, {}, {}", pin, i, end);
    std::string addr_in = k.element(in, i, a.bytes);
    std::string x = k.load(a, addr_in, pin);
    std::string incl = k.warp_scan(a, x);
    std::string excl = k.warp_exclusive(a, incl);
    std::string p31 = k.pred(), slot = k.b32();
    k.w.op("setp.eq.u32 {}, {}, 31", p31, k.lane);
    k.w.op("mad.lo.u32 {}, {}, 8, {}", slot, k.warp, k.smem);
    k.w.op("@{} st.shared.{} [{}], {}", p31, a.mem, slot, incl);
    k.w.op("bar.sync 0");
    std::string wt = k.reg(a), p8 = k.pred(), mine = k.b32();
    k.mov(a, wt, identity(ReduceOp::Add, a));
    k.w.op("setp.lt.u32 {}, {}, {}", p8, k.lane, kWarps);
    k.w.op("mad.lo.u32 {}, {}, 8, {}", mine, k.lane, k.smem);
    k.w.op("@{} ld.shared.{} {}, [{}]", p8, a.mem, wt, mine);
    std::string winc = k.warp_scan(a, wt);
    std::string wex = k.warp_exclusive(a, winc);
    std::string wp = k.shfl(a, "idx", wex, k.warp, "0x1f");
    std::string tt = k.shfl(a, "idx", winc, std::to_string(kWarps - 1), "0x1f");
    k.w.op("bar.sync 0");
    std::string r1 = k.reg(a), r2 = k.reg(a);
    k.combine(ReduceOp::Add, a, r1, carry, wp);
    k.combine(ReduceOp::Add, a, r2, r1, exclusive ? excl : incl);
    k.w.op("@{} st.global.{} [{}], {}", pin, a.mem, k.element(out, i, a.bytes), r2);
    k.combine(ReduceOp::Add, a, carry, carry, tt);
    k.w.op("add.u64 {}, {}, {}", base, base, kBuiltinBlock);
    k.w.op("bra {}", tile);
    k.w.place(exit);
    k.w.op("ret");
    text += k.text();
  }
  return text;
}

std::string ptx_compress(const PtxTarget& target) {
  Acc a = acc_of(ScalarType::UInt32);
  std::string text = ptx_module_header(target);
  {
    Kernel k("ff_compress_count", {"ff_n", "ff_mask", "ff_counts", "ff_chunk"}, 8 * kWarps);
    std::string n = k.param("ff_n"), mask = k.pointer("ff_mask");
    std::string counts = k.pointer("ff_counts"), chunk = k.param("ff_chunk");
    auto [begin, end] = k.chunk_range(n, chunk);
    std::string acc = k.b32(), i = k.b64(), step = k.widen(k.ntid), t64 = k.widen(k.tid);
    k.w.op("mov.u32 {}, 0", acc);
    k.w.op("add.u64 {}, {}, {}", i, begin, t64);
    grid_loop(k, i, step, end, [&](const std::string& idx) {
      std::string byte = k.b32(), p = k.pred(), one = k.b32();
      k.w.op("ld.global.u8 {}, [{}]", byte, k.element(mask, idx, 1));
      k.w.op("setp.ne.u32 {}, {}, 0", p, byte);
      k.w.op("selp.u32 {}, 1, 0, {}", one, p);
      k.w.op("add.u32 {}, {}, {}", acc, acc, one);
    });
    std::string total = k.block_allreduce(ReduceOp::Add, a, acc), p0 = k.pred();
    k.w.op("setp.eq.u32 {}, {}, 0", p0, k.tid);
    k.w.op("@{} st.global.u32 [{}], {}", p0, k.element(counts, k.widen(k.ctaid), 4), total);
    k.w.op("ret");
    text += k.text();
  }
  {
    Kernel k("ff_compress_write",
             {"ff_n", "ff_mask", "ff_out", "ff_counts", "ff_chunk", "ff_total"}, 8 * kWarps);
    std::string n = k.param("ff_n"), mask = k.pointer("ff_mask"), out = k.pointer("ff_out");
    std::string counts = k.pointer("ff_counts"), chunk = k.param("ff_chunk");
    std::string total_ptr = k.pointer("ff_total");
    // Where this block's indices start: the counts of the blocks before it.
    std::string acc = k.b32(), j = k.b32(), loop = k.w.label(), done = k.w.label();
    std::string pj = k.pred();
    k.w.op("mov.u32 {}, 0", acc);
    k.w.op("mov.u32 {}, {}", j, k.tid);
    k.w.place(loop);
    k.w.op("setp.ge.u32 {}, {}, {}", pj, j, k.ctaid);
    k.w.op("@{} bra {}", pj, done);
    {
      std::string x = k.b32();
      k.w.op("ld.global.u32 {}, [{}]", x, k.element(counts, k.widen(j), 4));
      k.w.op("add.u32 {}, {}, {}", acc, acc, x);
    }
    k.w.op("add.u32 {}, {}, {}", j, j, k.ntid);
    k.w.op("bra {}", loop);
    k.w.place(done);
    std::string start = k.block_allreduce(ReduceOp::Add, a, acc);
    std::string carry = k.widen(start);
    auto [begin, end] = k.chunk_range(n, chunk);
    std::string base = k.b64(), t64 = k.widen(k.tid), tile = k.w.label(), exit = k.w.label();
    std::string pt = k.pred();
    k.w.op("mov.u64 {}, {}", base, begin);
    k.w.place(tile);
    k.w.op("setp.ge.u64 {}, {}, {}", pt, base, end);
    k.w.op("@{} bra {}", pt, exit);
    std::string i = k.b64(), pin = k.pred(), byte = k.b32(), flag = k.pred();
    k.w.op("add.u64 {}, {}, {}", i, base, t64);
    k.w.op("setp.lt.u64 {}, {}, {}", pin, i, end);
    k.w.op("mov.u32 {}, 0", byte);
    k.w.op("@{} ld.global.u8 {}, [{}]", pin, byte, k.element(mask, i, 1));
    k.w.op("setp.ne.u32 {}, {}, 0", flag, byte);
    // Rank within the warp from the ballot, warp counts through shared memory.
    std::string ballot = k.b32(), lt = k.b32(), below = k.b32(), rank = k.b32(), wc = k.b32();
    k.w.op("vote.sync.ballot.b32 {}, {}, 0xffffffff", ballot, flag);
    k.w.op("mov.u32 {}, %lanemask_lt", lt);
    k.w.op("and.b32 {}, {}, {}", below, ballot, lt);
    k.w.op("popc.b32 {}, {}", rank, below);
    k.w.op("popc.b32 {}, {}", wc, ballot);
    std::string p0 = k.pred(), slot = k.b32();
    k.w.op("setp.eq.u32 {}, {}, 0", p0, k.lane);
    k.w.op("mad.lo.u32 {}, {}, 8, {}", slot, k.warp, k.smem);
    k.w.op("@{} st.shared.u32 [{}], {}", p0, slot, wc);
    k.w.op("bar.sync 0");
    std::string wt = k.b32(), p8 = k.pred(), mine = k.b32();
    k.w.op("mov.u32 {}, 0", wt);
    k.w.op("setp.lt.u32 {}, {}, {}", p8, k.lane, kWarps);
    k.w.op("mad.lo.u32 {}, {}, 8, {}", mine, k.lane, k.smem);
    k.w.op("@{} ld.shared.u32 {}, [{}]", p8, wt, mine);
    std::string winc = k.warp_scan(a, wt);
    std::string wex = k.warp_exclusive(a, winc);
    std::string wp = k.shfl(a, "idx", wex, k.warp, "0x1f");
    std::string tt = k.shfl(a, "idx", winc, std::to_string(kWarps - 1), "0x1f");
    k.w.op("bar.sync 0");
    std::string off = k.b32(), pos = k.b64(), idx32 = k.b32();
    k.w.op("add.u32 {}, {}, {}", off, wp, rank);
    k.w.op("add.u64 {}, {}, {}", pos, carry, k.widen(off));
    k.w.op("cvt.u32.u64 {}, {}", idx32, i);
    k.w.op("@{} st.global.u32 [{}], {}", flag, k.element(out, pos, 4), idx32);
    k.w.op("add.u64 {}, {}, {}", carry, carry, k.widen(tt));
    k.w.op("add.u64 {}, {}, {}", base, base, kBuiltinBlock);
    k.w.op("bra {}", tile);
    k.w.place(exit);
    // The last block's end is the total count.
    std::string last_id = k.b32(), plast = k.pred(), pz = k.pred();
    k.w.op("sub.u32 {}, {}, 1", last_id, k.nctaid);
    k.w.op("setp.eq.u32 {}, {}, {}", plast, k.ctaid, last_id);
    k.w.op("setp.eq.u32 {}, {}, 0", pz, k.tid);
    k.w.op("and.pred {}, {}, {}", plast, plast, pz);
    k.w.op("@{} st.global.u64 [{}], {}", plast, total_ptr, carry);
    k.w.op("ret");
    text += k.text();
  }
  return text;
}

}  // namespace ff::cuda_backend
