// The kernel IR operation corpus (see ir_corpus.h).
#include "cuda/ir_corpus.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <sstream>

#include "cuda/ptx_interpreter.h"
#include "support/region_kernels.h"

namespace ffcuda {

using namespace ff;

namespace {

constexpr size_t kN = 1000;
const ScalarType kAll[] = {ScalarType::Bool,   ScalarType::Int32,  ScalarType::UInt32,
                           ScalarType::Int64,  ScalarType::UInt64, ScalarType::Float32,
                           ScalarType::Float64};
const ScalarType kNumeric[] = {ScalarType::Int32,  ScalarType::UInt32,  ScalarType::Int64,
                               ScalarType::UInt64, ScalarType::Float32, ScalarType::Float64};
const ScalarType kInts[] = {ScalarType::Int32, ScalarType::UInt32, ScalarType::Int64,
                            ScalarType::UInt64};
const ScalarType kFloats[] = {ScalarType::Float32, ScalarType::Float64};

uint64_t fbits(float v) {
  return std::bit_cast<uint32_t>(v);
}

uint64_t dbits(double v) {
  return std::bit_cast<uint64_t>(v);
}

// A value of type t as its bit pattern (Float32 in the low 32 bits, Bool 0/1).
uint64_t from_double(ScalarType t, double v) {
  switch (t) {
    case ScalarType::Bool:
      return v != 0;
    case ScalarType::Float32:
      return fbits(static_cast<float>(v));
    case ScalarType::Float64:
      return dbits(v);
    case ScalarType::Int32:
      return static_cast<uint32_t>(static_cast<int32_t>(v));
    case ScalarType::UInt32:
      return static_cast<uint32_t>(v);
    case ScalarType::Int64:
      return static_cast<uint64_t>(static_cast<int64_t>(v));
    case ScalarType::UInt64:
      return static_cast<uint64_t>(v);
  }
  return 0;
}

std::vector<uint64_t> edge_values(ScalarType t) {
  switch (t) {
    case ScalarType::Bool:
      return {0, 1};
    case ScalarType::Int32: {
      std::vector<uint64_t> v;
      for (int64_t x : {0LL, 1LL, -1LL, 2LL, -2LL, 7LL, -7LL, 100LL, -2147483648LL, 2147483647LL,
                        -2147483647LL, 12345LL, -99999LL, 31LL, 32LL, 33LL, 63LL, 64LL, 65LL})
        v.push_back(static_cast<uint32_t>(static_cast<int32_t>(x)));
      return v;
    }
    case ScalarType::UInt32:
      return {0, 1, 2, 7, 100, 0xFFFFFFFFu, 0xFFFFFFFEu, 0x80000000u, 12345, 99999, 31, 32, 33, 64};
    case ScalarType::Int64: {
      std::vector<uint64_t> v;
      for (int64_t x :
           {int64_t{0}, int64_t{1}, int64_t{-1}, int64_t{2}, int64_t{-2}, int64_t{7}, int64_t{-7},
            int64_t{100}, std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max(),
            std::numeric_limits<int64_t>::min() + 1, int64_t{12345}, int64_t{-99999}, int64_t{63},
            int64_t{64}, int64_t{65}, int64_t{1} << 40, -(int64_t{1} << 40)})
        v.push_back(static_cast<uint64_t>(x));
      return v;
    }
    case ScalarType::UInt64:
      return {0, 1, 2, 7, 100, ~0ULL, ~0ULL - 1, 1ULL << 63, 12345, 99999, 63, 64, 65, 1ULL << 40};
    case ScalarType::Float32: {
      using L = std::numeric_limits<float>;
      std::vector<uint64_t> v;
      for (float x : {0.0f,     -0.0f,          1.0f,           -1.0f,
                      0.5f,     -2.5f,          3.75f,          1e10f,
                      -1e10f,   L::infinity(),  -L::infinity(), L::quiet_NaN(),
                      L::max(), L::lowest(),    L::min(),       L::denorm_min(),
                      7.0f,     -7.0f,          2147483520.0f,  3e9f,
                      4.3e9f,   -2147483904.0f, 1e19f,          2e19f,
                      -9.3e18f, 0.99f,          -0.99f,         1.5f,
                      2.5f})
        v.push_back(fbits(x));
      return v;
    }
    case ScalarType::Float64: {
      using L = std::numeric_limits<double>;
      std::vector<uint64_t> v;
      for (double x : {0.0,
                       -0.0,
                       1.0,
                       -1.0,
                       0.5,
                       -2.5,
                       3.75,
                       1e10,
                       -1e10,
                       L::infinity(),
                       -L::infinity(),
                       L::quiet_NaN(),
                       L::max(),
                       L::lowest(),
                       L::min(),
                       L::denorm_min(),
                       7.0,
                       -7.0,
                       2147483647.5,
                       3e9,
                       4.3e9,
                       -2147483648.9,
                       1e19,
                       2e19,
                       -9.3e18,
                       0.99,
                       -0.99,
                       1.5,
                       2.5,
                       9.2233720368547748e18})
        v.push_back(dbits(x));
      return v;
    }
  }
  return {};
}

uint64_t random_value(ScalarType t, std::mt19937_64& g) {
  switch (t) {
    case ScalarType::Bool:
      return g() & 1;
    case ScalarType::Int32:
    case ScalarType::UInt32:
      return g() & 0xFFFFFFFFu;
    case ScalarType::Int64:
    case ScalarType::UInt64:
      return g();
    case ScalarType::Float32:
    case ScalarType::Float64: {
      double mag = std::pow(10.0, std::uniform_real_distribution<double>(-5, 5)(g));
      double v = g() & 1 ? mag : -mag;
      return from_double(t, v);
    }
  }
  return 0;
}

// n values: for `which` = 0 / 1, the first m*m lanes enumerate every pair of edge values
// (operand 0 varies fastest), the rest are random.
std::vector<uint64_t> values(ScalarType t, size_t n, int which, uint64_t seed) {
  std::vector<uint64_t> e = edge_values(t), v(n);
  std::mt19937_64 g(seed * 7919 + static_cast<uint64_t>(t) * 31 + static_cast<uint64_t>(which));
  size_t m = e.size();
  for (size_t i = 0; i < n; ++i) {
    if (i < m * m)
      v[i] = which == 0 ? e[i % m] : e[(i / m) % m];
    else
      v[i] = random_value(t, g);
  }
  return v;
}

std::vector<uint8_t> pack(ScalarType t, const std::vector<uint64_t>& v) {
  size_t s = size_of(t);
  std::vector<uint8_t> out(v.size() * s);
  for (size_t i = 0; i < v.size(); ++i) {
    uint64_t x = t == ScalarType::Bool ? (v[i] != 0) : v[i];
    std::memcpy(out.data() + i * s, &x, s);
  }
  return out;
}

struct Builder {
  CorpusCase c;

  explicit Builder(std::string name, size_t n = kN) {
    c.name = std::move(name);
    c.size = n;
  }

  uint32_t param(ParamKind k, ScalarType t, std::vector<uint8_t> init, uint64_t scalar = 0) {
    c.ir.params.push_back({k, t});
    c.init.push_back(std::move(init));
    c.scalar.push_back(scalar);
    return static_cast<uint32_t>(c.ir.params.size() - 1);
  }

  uint32_t in(ScalarType t, const std::vector<uint64_t>& v) {
    return param(ParamKind::BufferIn, t, pack(t, v));
  }

  uint32_t out(ScalarType t, size_t n = 0) {
    // Garbage the kernel must overwrite.
    return param(ParamKind::BufferOut, t,
                 std::vector<uint8_t>((n ? n : c.size) * size_of(t), 0xA5));
  }

  uint32_t inout(ScalarType t, const std::vector<uint64_t>& v) {
    return param(ParamKind::BufferInOut, t, pack(t, v));
  }

  uint32_t scalar(ScalarType t, uint64_t bits) { return param(ParamKind::Scalar, t, {}, bits); }

  uint32_t emit(IrOp op, ScalarType t, std::initializer_list<uint32_t> ops = {}, uint64_t imm = 0,
                uint16_t flags = 0) {
    return c.ir.emit(op, t, ops, imm, flags);
  }

  uint32_t load(uint32_t p) { return emit(IrOp::Load, c.ir.params[p].type, {p}); }

  void store(uint32_t p, uint32_t v) { emit(IrOp::Store, c.ir.params[p].type, {p, v}); }

  /// The parameters of scatter(): its target and its range report's words.
  struct ScatterParams {
    uint32_t target, report;
  };

  /// One scatter of kind `op` (Scatter, ScatterAdd ... ScatterOr) of `vals` (type t) at the
  /// indices `idx` (type it) where `mask` is set, into a target holding `init`, bounded at
  /// `bound`, with a range report when `report`.
  ScatterParams scatter(IrOp op, ScalarType t, ScalarType it, const std::vector<uint64_t>& init,
                        const std::vector<uint64_t>& idx, const std::vector<uint64_t>& mask,
                        const std::vector<uint64_t>& vals, uint64_t bound, bool report) {
    uint32_t pd = inout(t, init);
    uint32_t pi = in(it, idx);
    uint32_t pm = in(ScalarType::Bool, mask);
    uint32_t pv = in(t, vals);
    uint32_t pn = scalar(ScalarType::UInt64, bound);
    uint32_t pr = inout(ScalarType::UInt64, {0, 0});
    uint32_t li = load(pi), lm = load(pm), lv = load(pv);
    emit(op, t, {pd, li, lm, lv, pn}, report ? pr : 0, report ? kIrFlagReportRange : 0);
    return {pd, pr};
  }

  CorpusCase finish() {
    c.ir.validate();
    c.ir.finalize();
    return std::move(c);
  }
};

std::string tn(ScalarType t) {
  return to_string(t);
}

bool is_math(IrOp op) {
  return op == IrOp::Exp || op == IrOp::Log || op == IrOp::Sin || op == IrOp::Cos;
}

// Inputs for exp/log/sin/cos: edge values, then magnitudes from 1e-30 to 1e30 of both signs.
std::vector<uint64_t> math_values(ScalarType t, size_t n, uint64_t seed) {
  std::vector<uint64_t> v = edge_values(t);
  std::mt19937_64 g(seed);
  for (double x : {88.72, -103.9, 709.78, -745.1, 1e-40, 3.14159265358979, 1.5707963267948966,
                   6381956970095103.0 * std::ldexp(1.0, 797), 1e22, 1e300})
    v.push_back(from_double(t, x));
  while (v.size() < n) {
    double mag = std::pow(10.0, std::uniform_real_distribution<double>(-30, 30)(g));
    if (v.size() % 3 == 0)
      mag = std::uniform_real_distribution<double>(0, 100)(g);
    v.push_back(from_double(t, g() & 1 ? mag : -mag));
  }
  v.resize(n);
  return v;
}

void unary_cases(std::vector<CorpusCase>& out) {
  struct U {
    IrOp op;
    bool ints, bools, floats;
  };

  const U ops[] = {{IrOp::Neg, true, false, true},     {IrOp::Abs, true, false, true},
                   {IrOp::Not, true, true, false},     {IrOp::Sqrt, false, false, true},
                   {IrOp::Floor, false, false, true},  {IrOp::Ceil, false, false, true},
                   {IrOp::Exp, false, false, true},    {IrOp::Log, false, false, true},
                   {IrOp::Sin, false, false, true},    {IrOp::Cos, false, false, true},
                   {IrOp::Round, false, false, true},  {IrOp::Trunc, false, false, true},
                   {IrOp::Popcnt, true, false, false}, {IrOp::Clz, true, false, false},
                   {IrOp::Ctz, true, false, false}};
  for (const U& u : ops)
    for (ScalarType t : kAll) {
      bool ok = t == ScalarType::Bool ? u.bools : is_float(t) ? u.floats : u.ints;
      if (!ok)
        continue;
      Builder b(std::string(to_string(u.op)) + "." + tn(t));
      uint32_t pa = b.in(t, is_math(u.op) ? math_values(t, kN, 5) : values(t, kN, 0, 1));
      uint32_t po = b.out(t);
      b.store(po, b.emit(u.op, t, {b.load(pa)}));
      if (is_math(u.op))
        b.c.ulp = 1;
      out.push_back(b.finish());
    }
  // The other transcendental opcodes.
  for (ScalarType f : {ScalarType::Float32, ScalarType::Float64})
    for (IrOp op : {IrOp::Tan, IrOp::Asin, IrOp::Acos, IrOp::Atan, IrOp::Sinh, IrOp::Cosh,
                    IrOp::Tanh, IrOp::Asinh, IrOp::Acosh, IrOp::Atanh, IrOp::Exp2, IrOp::Log2,
                    IrOp::Erf, IrOp::Cbrt, IrOp::Atan2, IrOp::Pow}) {
      bool binary = op == IrOp::Atan2 || op == IrOp::Pow;
      Builder b(std::string(to_string(op)) + "." + tn(f));
      uint32_t pa = b.in(f, binary ? values(f, kN, 0, 9) : math_values(f, kN, 6));
      uint32_t pb = binary ? b.in(f, values(f, kN, 1, 9)) : 0;
      uint32_t po = b.out(f);
      uint32_t la = b.load(pa);
      b.store(po, binary ? b.emit(op, f, {la, b.load(pb)}) : b.emit(op, f, {la}));
      b.c.ulp = 1;
      out.push_back(b.finish());
    }
}

void cast_cases(std::vector<CorpusCase>& out) {
  for (ScalarType from : kAll)
    for (ScalarType to : kAll) {
      Builder b("cast." + tn(from) + "->" + tn(to));
      std::vector<uint64_t> v = values(from, kN, 0, 2);
      if (is_float(from)) {
        // Around the integer types' limits, where saturation starts.
        size_t k = 700;
        for (double x : {2147483520.0, 2147483647.0, 2147483648.0, 4294967295.0, 4294967296.0,
                         -2147483648.0, -2147483649.0, 9.2233720368547758e18, 1.8446744073709552e19,
                         -9.2233720368547758e18, -1.0, -0.5, 0.5, 1e-45, 65536.5, -65536.5,
                         // the largest float and double below 2^32, 2^63 and 2^64 (the LLVM
                         // backend's clamp bounds), the next ones below -2^31 and -2^63
                         4294967040.0, 9223371487098961920.0, 18446742974197923840.0,
                         9223372036854774784.0, 18446744073709549568.0, 2147483647.5, -2147483648.5,
                         -2147483904.0, -9223373136366403584.0, -9223372036854777856.0})
          v[k++] = from_double(from, x);
      }
      uint32_t pa = b.in(from, v);
      uint32_t po = b.out(to);
      b.store(po, b.emit(IrOp::Cast, to, {b.load(pa)}));
      out.push_back(b.finish());
    }
}

void bitcast_cases(std::vector<CorpusCase>& out) {
  const std::vector<std::vector<ScalarType>> groups = {
      {ScalarType::Int32, ScalarType::UInt32, ScalarType::Float32},
      {ScalarType::Int64, ScalarType::UInt64, ScalarType::Float64}};
  for (const auto& g : groups)
    for (ScalarType from : g)
      for (ScalarType to : g) {
        if (from == to)
          continue;
        Builder b("bitcast." + tn(from) + "->" + tn(to));
        uint32_t pa = b.in(from, values(from, kN, 0, 3));
        uint32_t po = b.out(to);
        b.store(po, b.emit(IrOp::Bitcast, to, {b.load(pa)}));
        out.push_back(b.finish());
      }
}

void binary_cases(std::vector<CorpusCase>& out) {
  struct Bop {
    IrOp op;
    bool ints, bools, floats;
  };

  const Bop ops[] = {{IrOp::Add, true, false, true},      {IrOp::Sub, true, false, true},
                     {IrOp::Mul, true, false, true},      {IrOp::Div, true, false, true},
                     {IrOp::Mod, true, false, false},     {IrOp::Min, true, false, true},
                     {IrOp::Max, true, false, true},      {IrOp::And, true, true, false},
                     {IrOp::Or, true, true, false},       {IrOp::Xor, true, true, false},
                     {IrOp::Shl, true, false, false},     {IrOp::Shr, true, false, false},
                     {IrOp::Copysign, false, false, true}};
  for (const Bop& o : ops)
    for (ScalarType t : kAll) {
      bool ok = t == ScalarType::Bool ? o.bools : is_float(t) ? o.floats : o.ints;
      if (!ok)
        continue;
      Builder b(std::string(to_string(o.op)) + "." + tn(t));
      uint32_t pa = b.in(t, values(t, kN, 0, 4));
      uint32_t pb = b.in(t, values(t, kN, 1, 4));
      uint32_t po = b.out(t);
      uint32_t la = b.load(pa), lb = b.load(pb);
      b.store(po, b.emit(o.op, t, {la, lb}));
      out.push_back(b.finish());
    }
  for (IrOp op : {IrOp::Eq, IrOp::Ne, IrOp::Lt, IrOp::Le, IrOp::Gt, IrOp::Ge})
    for (ScalarType t : kAll) {
      Builder b(std::string(to_string(op)) + "." + tn(t));
      uint32_t pa = b.in(t, values(t, kN, 0, 5));
      uint32_t pb = b.in(t, values(t, kN, 1, 5));
      uint32_t po = b.out(ScalarType::Bool);
      uint32_t la = b.load(pa), lb = b.load(pb);
      b.store(po, b.emit(op, ScalarType::Bool, {la, lb}));
      out.push_back(b.finish());
    }
  for (ScalarType t : kNumeric) {
    Builder b("fma." + tn(t));
    uint32_t pa = b.in(t, values(t, kN, 0, 6));
    uint32_t pb = b.in(t, values(t, kN, 1, 6));
    uint32_t pc = b.in(t, values(t, kN, 0, 7));
    uint32_t po = b.out(t);
    uint32_t la = b.load(pa), lb = b.load(pb), lc = b.load(pc);
    b.store(po, b.emit(IrOp::Fma, t, {la, lb, lc}));
    out.push_back(b.finish());
  }
  for (ScalarType t : kAll) {
    Builder b("select." + tn(t));
    uint32_t pm = b.in(ScalarType::Bool, values(ScalarType::Bool, kN, 0, 8));
    uint32_t pa = b.in(t, values(t, kN, 0, 9));
    uint32_t pb = b.in(t, values(t, kN, 1, 9));
    uint32_t po = b.out(t);
    uint32_t lm = b.load(pm), la = b.load(pa), lb = b.load(pb);
    b.store(po, b.emit(IrOp::Select, t, {lm, la, lb}));
    out.push_back(b.finish());
  }
}

void leaf_cases(std::vector<CorpusCase>& out) {
  for (ScalarType t : kAll) {
    {
      Builder b("copy." + tn(t), 777);
      uint32_t pa = b.in(t, values(t, 777, 0, 10));
      uint32_t po = b.out(t);
      b.store(po, b.load(pa));
      out.push_back(b.finish());
    }
    if (t != ScalarType::Bool) {
      Builder b("index." + tn(t), 1003);
      uint32_t po = b.out(t);
      b.store(po, b.emit(IrOp::Index, t));
      out.push_back(b.finish());
    }
    {
      // Literals: every edge value of the type, each stored to an output of its own.
      std::vector<uint64_t> e = edge_values(t);
      Builder b("literal." + tn(t), 33);
      for (uint64_t v : e) {
        uint32_t po = b.out(t);
        b.store(po, b.emit(IrOp::Literal, t, {}, t == ScalarType::Bool ? v * 2 : v));
      }
      out.push_back(b.finish());
    }
    {
      // A scalar parameter (Bool: any nonzero word is true) and a broadcast load.
      Builder b("scalar_broadcast." + tn(t), 65);
      uint64_t bits = t == ScalarType::Bool ? 0x100 : edge_values(t)[3];
      uint32_t ps = b.scalar(t, bits);
      uint32_t pb = b.in(t, {edge_values(t).back()});
      uint32_t o1 = b.out(t), o2 = b.out(t);
      b.store(o1, b.emit(IrOp::Scalar, t, {ps}));
      b.store(o2, b.emit(IrOp::LoadBroadcast, t, {pb}));
      out.push_back(b.finish());
    }
  }
}

// Index values of type it: in range [0, bound), out of range above it, negative (signed types)
// and the largest values; exactly one masked-in offender when `one_offender`.
std::vector<uint64_t> index_values(ScalarType it, size_t n, uint64_t bound, bool one_offender,
                                   std::vector<uint64_t>& mask, uint64_t seed) {
  std::mt19937_64 g(seed);
  std::vector<uint64_t> v(n);
  mask.assign(n, 0);
  bool sgn = is_signed_int(it);
  uint64_t top = size_of(it) == 4 ? 0xFFFFFFFFu : ~0ULL;
  for (size_t i = 0; i < n; ++i) {
    mask[i] = g() % 5 != 0;
    uint64_t r = g() % 100;
    int64_t x;
    if (one_offender || r < 70)
      x = static_cast<int64_t>(g() % bound);
    else if (r < 85)
      x = static_cast<int64_t>(bound + g() % 100);
    else if (r < 95 && sgn)
      x = -static_cast<int64_t>(1 + g() % 50);
    else
      x = static_cast<int64_t>(top - g() % 3);
    v[i] = static_cast<uint64_t>(x) & top;
  }
  if (one_offender) {
    v[n / 2 + 17] = sgn ? (static_cast<uint64_t>(-3) & top) : bound + 5;
    mask[n / 2 + 17] = 1;
  }
  return v;
}

void gather_cases(std::vector<CorpusCase>& out) {
  for (ScalarType t : kAll)
    for (ScalarType it : kInts)
      for (bool report : {false, true}) {
        if (report && !(it == ScalarType::Int32 || it == ScalarType::UInt64))
          continue;
        Builder b(std::string("gather") + (report ? "_report." : ".") + tn(t) + "[" + tn(it) + "]");
        const uint64_t bound = 300;
        std::vector<uint64_t> mask;
        std::vector<uint64_t> idx = index_values(it, kN, bound, report, mask, 11);
        uint32_t ps = b.in(t, values(t, bound, 0, 12));
        uint32_t pi = b.in(it, idx);
        uint32_t pm = b.in(ScalarType::Bool, mask);
        uint32_t pn = b.scalar(ScalarType::UInt64, bound);
        uint32_t po = b.out(t);
        uint32_t pr = b.inout(ScalarType::UInt64, {0, 0});
        uint32_t li = b.load(pi), lm = b.load(pm);
        uint32_t gv = b.emit(IrOp::Gather, t, {ps, li, lm, pn}, report ? pr : 0,
                             report ? kIrFlagReportRange : 0);
        b.store(po, gv);
        out.push_back(b.finish());
      }
}

void scatter_cases(std::vector<CorpusCase>& out) {
  for (ScalarType t : kAll)
    for (ScalarType it : kInts)
      for (bool report : {false, true}) {
        if (report && !(it == ScalarType::Int64 || it == ScalarType::UInt32))
          continue;
        Builder b(std::string("scatter") + (report ? "_report." : ".") + tn(t) + "[" + tn(it) +
                  "]");
        // Distinct targets (a permutation), some pushed past the bound; the bound is below the
        // buffer's end so a dropped write that happened anyway shows in the tail.
        const uint64_t bound = 1100, cap = 1200;
        std::mt19937_64 g(13);
        std::vector<uint64_t> perm(kN), mask(kN);
        for (size_t i = 0; i < kN; ++i)
          perm[i] = i;
        std::shuffle(perm.begin(), perm.end(), g);
        bool sgn = is_signed_int(it);
        uint64_t top = size_of(it) == 4 ? 0xFFFFFFFFu : ~0ULL;
        for (size_t i = 0; i < kN; ++i) {
          mask[i] = g() % 5 != 0;
          if (!report && i % 9 == 0)
            perm[i] = bound + g() % 100;
          if (!report && i % 13 == 0)
            perm[i] = sgn ? static_cast<uint64_t>(-static_cast<int64_t>(1 + g() % 5)) & top : top;
        }
        if (report) {
          perm[kN / 3] = bound + 7;
          mask[kN / 3] = 1;
        }
        b.scatter(IrOp::Scatter, t, it, values(t, cap, 1, 14), perm, mask, values(t, kN, 0, 15),
                  bound, report);
        out.push_back(b.finish());
      }
  for (ScalarType t : kNumeric)
    for (ScalarType it : {ScalarType::UInt32, ScalarType::Int64})
      for (bool report : {false, true}) {
        Builder b(std::string("scatter_add") + (report ? "_report." : ".") + tn(t) + "[" + tn(it) +
                  "]");
        const uint64_t bound = 60, cap = 64;
        std::vector<uint64_t> idx(kN), mask(kN), vals(kN);
        for (size_t i = 0; i < kN; ++i) {
          idx[i] = report ? i % bound : (i * 7) % 70;  // collisions; 60..69 out of range
          if (!report && it == ScalarType::Int64 && i % 17 == 0)
            idx[i] = static_cast<uint64_t>(-static_cast<int64_t>(i % 5 + 1));
          mask[i] = i % 10 != 3;
          vals[i] = from_double(t, static_cast<double>(i % 5));  // small: float sums are exact
        }
        if (report)
          idx[kN / 4] = bound + 2;
        std::vector<uint64_t> init(cap);
        for (size_t i = 0; i < cap; ++i)
          init[i] = from_double(t, static_cast<double>(i % 3));
        b.scatter(IrOp::ScatterAdd, t, it, init, idx, mask, vals, bound, report);
        out.push_back(b.finish());
      }
}

// ---------------------------------------------------------------------------------------
// Scatter-reductions and scatter_inc, with a host model of each case's result.

// An index of type it widened to 64 bits as the kernels do (signed types sign-extend).
uint64_t widen(ScalarType it, uint64_t bits) {
  if (size_of(it) == 8)
    return bits;
  return is_signed_int(it) ? static_cast<uint64_t>(int64_t{static_cast<int32_t>(bits)}) : bits;
}

// Float Min/Max (docs/kernel-ir.md): the value replaces the element iff it is not NaN and the
// element is NaN, or it is below (Max: above) the element, or they are equal and it is -0 over
// +0 (Max: +0 over -0).
template <class F>
bool float_takes(bool max, F old, F v) {
  if (std::isnan(v))
    return false;
  if (std::isnan(old) || (max ? v > old : v < old))
    return true;
  return v == old && std::signbit(v) != std::signbit(old) && std::signbit(v) != max;
}

// combine(old, v) of a scatter-reduction on bit patterns of t.
uint64_t combine(IrOp op, ScalarType t, uint64_t old, uint64_t v) {
  const bool wide = size_of(t) == 8, max = op == IrOp::ScatterMax;
  const uint64_t m = wide ? ~0ULL : 0xFFFFFFFFULL;
  if (t == ScalarType::Float32) {
    float a = std::bit_cast<float>(static_cast<uint32_t>(old));
    float b = std::bit_cast<float>(static_cast<uint32_t>(v));
    if (op == IrOp::ScatterMul)
      return fbits(a * b);
    return float_takes(max, a, b) ? v : old;
  }
  if (t == ScalarType::Float64) {
    double a = std::bit_cast<double>(old), b = std::bit_cast<double>(v);
    if (op == IrOp::ScatterMul)
      return dbits(a * b);
    return float_takes(max, a, b) ? v : old;
  }
  switch (op) {
    case IrOp::ScatterMul:
      return (old * v) & m;
    case IrOp::ScatterAnd:
      return old & v;
    case IrOp::ScatterOr:
      return old | v;
    default: {
      bool less = is_signed_int(t)
                      ? static_cast<int64_t>(widen(t, v)) < static_cast<int64_t>(widen(t, old))
                      : v < old;
      bool greater = v != old && !less;
      return (max ? greater : less) ? v : old;
    }
  }
}

// Values of type t for scatter `op`: products of powers of two (exact in any order: at most
// ~20 factors of 2^-2 .. 2^2 per element) with zeros, infinities and NaN among them for float
// Mul; few clear (And) or set (Or) bits, so the result keeps some; the edge values, then random
// ones, for the others.
std::vector<uint64_t> scatter_values(IrOp op, ScalarType t, size_t n, uint64_t seed) {
  const bool pow2 = op == IrOp::ScatterMul && is_float(t);
  if (!pow2 && op != IrOp::ScatterAnd && op != IrOp::ScatterOr)
    return values(t, n, 0, seed);
  std::mt19937_64 g(seed);
  std::vector<uint64_t> v(n);
  const unsigned w = static_cast<unsigned>(size_of(t) * 8);
  const double factors[] = {1, -1, 2, -2, 0.5, -0.5, 4, -0.25};
  const double special[] = {0.0, -0.0, std::numeric_limits<double>::infinity(),
                            -std::numeric_limits<double>::infinity(),
                            std::numeric_limits<double>::quiet_NaN()};
  for (size_t i = 0; i < n; ++i) {
    if (pow2) {
      v[i] = from_double(t, i % 97 == 5 ? special[(i / 97) % 5] : factors[g() % 8]);
    } else {
      uint64_t bits = (uint64_t{1} << (g() % w)) | (uint64_t{1} << (g() % w));
      v[i] = op == IrOp::ScatterOr ? bits : ~bits & (w == 64 ? ~0ULL : 0xFFFFFFFFULL);
    }
  }
  return v;
}

// Indices with collisions (~13 lanes per element), some out of range (bound .. bound + 9) or
// negative (Int64); for a range report, all in range but one masked-in offender.
void collision_indices(ScalarType it, uint64_t bound, bool report, std::vector<uint64_t>& idx,
                       std::vector<uint64_t>& mask) {
  idx.assign(kN, 0);
  mask.assign(kN, 0);
  for (size_t i = 0; i < kN; ++i) {
    idx[i] = report ? i % bound : (i * 13) % (bound + 10);
    if (!report && it == ScalarType::Int64 && i % 17 == 0)
      idx[i] = static_cast<uint64_t>(-static_cast<int64_t>(i % 5 + 1));
    mask[i] = i % 10 != 3;
  }
  if (report)
    idx[kN / 4] = bound + 2;
}

// The host model of one scatter-reduction over the lanes in order: the final element values and
// the range report's two words.
std::vector<uint64_t> model_reduction(IrOp op, ScalarType t, ScalarType it, uint64_t bound,
                                      std::vector<uint64_t> buf, const std::vector<uint64_t>& idx,
                                      const std::vector<uint64_t>& mask,
                                      const std::vector<uint64_t>& vals,
                                      std::vector<uint64_t>& report) {
  for (size_t i = 0; i < idx.size(); ++i) {
    uint64_t k = widen(it, idx[i]);
    if (!mask[i])
      continue;
    if (k >= bound)
      report = {1, k};
    else
      buf[k] = combine(op, t, buf[k], vals[i]);
  }
  return buf;
}

void scatter_reduction_cases(std::vector<CorpusCase>& out) {
  struct R {
    IrOp op;
    bool floats;
  };

  const R ops[] = {{IrOp::ScatterMul, true},
                   {IrOp::ScatterMin, true},
                   {IrOp::ScatterMax, true},
                   {IrOp::ScatterAnd, false},
                   {IrOp::ScatterOr, false}};
  for (const R& r : ops)
    for (ScalarType t : kNumeric)
      for (ScalarType it : {ScalarType::UInt32, ScalarType::Int64})
        for (bool report : {false, true}) {
          if (is_float(t) && !r.floats)
            continue;
          Builder b(std::string(to_string(r.op)) + (report ? "_report." : ".") + tn(t) + "[" +
                    tn(it) + "]");
          const uint64_t bound = 60, cap = 64;
          std::vector<uint64_t> idx, mask;
          collision_indices(it, bound, report, idx, mask);
          uint64_t seed = 40 + static_cast<uint64_t>(r.op) * 8 + static_cast<uint64_t>(t);
          std::vector<uint64_t> vals = scatter_values(r.op, t, kN, seed);
          // Every edge value (NaN, -0 and +0 included) is some element's initial value.
          std::vector<uint64_t> init = scatter_values(r.op, t, cap, seed + 1);
          if (r.op == IrOp::ScatterMin || r.op == IrOp::ScatterMax) {
            std::vector<uint64_t> e = edge_values(t);
            for (size_t i = 0; i < cap; ++i)
              init[i] = e[(i * 5) % e.size()];
          }
          auto [pd, pr] = b.scatter(r.op, t, it, init, idx, mask, vals, bound, report);
          std::vector<uint64_t> words = {0, 0};
          b.c.expect = b.c.init;
          b.c.expect[pd] =
              pack(t, model_reduction(r.op, t, it, bound, init, idx, mask, vals, words));
          if (report)
            b.c.expect[pr] = pack(ScalarType::UInt64, words);
          out.push_back(b.finish());
        }
}

// scatter_inc's value used by later instructions, in ways that do not depend on the order of
// the lanes: per counter, the sum of the values its lanes get and a bit per value (each a
// permutation of init .. init + k - 1), a histogram of every lane's value (masked and
// out-of-range lanes get 0), and per lane 7 where it incremented, else its value (0).
void scatter_inc_cases(std::vector<CorpusCase>& out) {
  const ScalarType U32 = ScalarType::UInt32, U64 = ScalarType::UInt64;
  for (ScalarType it : {ScalarType::UInt32, ScalarType::Int64})
    for (bool report : {false, true}) {
      Builder b(std::string("scatter_inc") + (report ? "_report." : ".") + tn(U32) + "[" + tn(it) +
                "]");
      const uint64_t bound = 60, cap = 64, hist_n = 40;
      std::vector<uint64_t> idx, mask;
      collision_indices(it, bound, report, idx, mask);
      std::vector<uint64_t> counters(cap);
      for (size_t i = 0; i < cap; ++i)
        counters[i] = i % 3;
      uint32_t pc = b.inout(U32, counters);
      uint32_t pi = b.in(it, idx);
      uint32_t pm = b.in(ScalarType::Bool, mask);
      uint32_t pn = b.scalar(U64, bound);
      uint32_t pr = b.inout(U64, {0, 0});
      uint32_t psum = b.inout(U32, std::vector<uint64_t>(cap, 0));
      uint32_t pbits = b.inout(U64, std::vector<uint64_t>(cap, 0));
      uint32_t phist = b.inout(U32, std::vector<uint64_t>(hist_n, 0));
      uint32_t pnh = b.scalar(U64, hist_n);
      uint32_t po = b.out(U32);
      uint32_t li = b.load(pi), lm = b.load(pm);
      uint32_t old = b.emit(IrOp::ScatterInc, U32, {pc, li, lm, 0, pn}, report ? pr : 0,
                            report ? kIrFlagReportRange : 0);
      b.emit(IrOp::ScatterAdd, U32, {psum, li, lm, old, pn});
      uint32_t one = b.emit(IrOp::Literal, U64, {}, 1);
      uint32_t bit = b.emit(IrOp::Shl, U64, {one, b.emit(IrOp::Cast, U64, {old})});
      b.emit(IrOp::ScatterOr, U64, {pbits, li, lm, bit, pn});
      uint32_t all = b.emit(IrOp::Literal, ScalarType::Bool, {}, 1);
      b.emit(IrOp::ScatterInc, U32, {phist, old, all, 0, pnh});
      uint32_t in_range = b.emit(IrOp::Lt, ScalarType::Bool,
                                 {b.emit(IrOp::Cast, U64, {li}), b.emit(IrOp::Scalar, U64, {pn})});
      uint32_t wrote = b.emit(IrOp::And, ScalarType::Bool, {lm, in_range});
      b.store(po, b.emit(IrOp::Select, U32, {wrote, b.emit(IrOp::Literal, U32, {}, 7), old}));

      std::vector<uint64_t> sum(cap, 0), bits(cap, 0), hist(hist_n, 0), lane(kN, 0);
      std::vector<uint64_t> words = {0, 0};
      for (size_t i = 0; i < kN; ++i) {
        uint64_t k = widen(it, idx[i]), v = 0;
        if (mask[i] && k >= bound)
          words = {1, k};
        if (mask[i] && k < bound) {
          v = counters[k]++;
          sum[k] += v;
          bits[k] |= uint64_t{1} << v;
          lane[i] = 7;
        }
        if (v < hist_n)
          ++hist[v];
      }
      b.c.expect = b.c.init;
      b.c.expect[pc] = pack(U32, counters);
      b.c.expect[psum] = pack(U32, sum);
      b.c.expect[pbits] = pack(U64, bits);
      b.c.expect[phist] = pack(U32, hist);
      b.c.expect[po] = pack(U32, lane);
      if (report)
        b.c.expect[pr] = pack(U64, words);
      out.push_back(b.finish());
    }
}

// Mixed kernels: uniform values feeding element-wise code, a gather and a scatter_add in one
// kernel, Bool logic feeding selects.
void compound_cases(std::vector<CorpusCase>& out) {
  {
    Builder b("compound.select_gather_scatter_add", 1001);
    uint32_t px = b.in(ScalarType::Float32, [] {
      std::vector<uint64_t> v(1001);
      for (size_t i = 0; i < v.size(); ++i)
        v[i] = fbits(static_cast<float>(i));
      return v;
    }());
    uint32_t po = b.out(ScalarType::Float32);
    uint32_t pb = b.inout(ScalarType::Int32, {0, 0, 0});
    uint32_t pn = b.scalar(ScalarType::UInt64, 1001);
    uint32_t pn3 = b.scalar(ScalarType::UInt64, 3);
    uint32_t x = b.load(px);
    uint32_t i = b.emit(IrOp::Index, ScalarType::UInt32);
    uint32_t j = b.emit(IrOp::Xor, ScalarType::UInt32,
                        {i, b.emit(IrOp::Literal, ScalarType::UInt32, {}, 1)});
    uint32_t t = b.emit(IrOp::Literal, ScalarType::Bool, {}, 1);
    uint32_t g = b.emit(IrOp::Gather, ScalarType::Float32, {px, j, t, pn});
    uint32_t m = b.emit(IrOp::Lt, ScalarType::Bool,
                        {x, b.emit(IrOp::Literal, ScalarType::Float32, {}, fbits(500.0f))});
    uint32_t v = b.emit(IrOp::Fma, ScalarType::Float32,
                        {x, b.emit(IrOp::Literal, ScalarType::Float32, {}, fbits(2.0f)), g});
    b.store(po, b.emit(IrOp::Select, ScalarType::Float32,
                       {m, v, b.emit(IrOp::Neg, ScalarType::Float32, {x})}));
    uint32_t bin = b.emit(IrOp::Mod, ScalarType::UInt32,
                          {i, b.emit(IrOp::Literal, ScalarType::UInt32, {}, 3)});
    b.emit(IrOp::ScatterAdd, ScalarType::Int32,
           {pb, bin, t, b.emit(IrOp::Literal, ScalarType::Int32, {}, 1), pn3});
    out.push_back(b.finish());
  }
  {
    Builder b("compound.bool_logic", 999);
    uint32_t pa = b.in(ScalarType::Int64, values(ScalarType::Int64, 999, 0, 20));
    uint32_t pb = b.in(ScalarType::Float64, values(ScalarType::Float64, 999, 1, 20));
    uint32_t ps = b.scalar(ScalarType::Int64, 5);
    uint32_t po = b.out(ScalarType::Bool), po2 = b.out(ScalarType::Float64);
    uint32_t a = b.load(pa), d = b.load(pb), s = b.emit(IrOp::Scalar, ScalarType::Int64, {ps});
    uint32_t c1 = b.emit(IrOp::Gt, ScalarType::Bool, {a, s});
    uint32_t c2 = b.emit(IrOp::Cast, ScalarType::Bool, {d});
    uint32_t c3 =
        b.emit(IrOp::Xor, ScalarType::Bool, {c1, b.emit(IrOp::Not, ScalarType::Bool, {c2})});
    uint32_t c4 = b.emit(IrOp::Select, ScalarType::Bool, {c1, c3, c2});
    b.store(po, b.emit(IrOp::Le, ScalarType::Bool, {c4, c1}));
    b.store(po2, b.emit(IrOp::Select, ScalarType::Float64,
                        {c4, b.emit(IrOp::Cast, ScalarType::Float64, {a}), d}));
    out.push_back(b.finish());
  }
}

// The region kernels of tests/support/region_kernels.h (loops, branches, calls, and regions
// nested in each other), with inputs and their host models' results.
void region_cases(std::vector<CorpusCase>& out) {
  namespace rk = ff_test::regions;
  const ScalarType U32 = ScalarType::UInt32, U64 = ScalarType::UInt64;
  auto widen = [](const std::vector<uint32_t>& v) {
    return std::vector<uint64_t>(v.begin(), v.end());
  };
  // A case with `init` per parameter (empty for scalars: `scalar` holds them), expecting
  // `expect` (per parameter, as init; empty: an input, or a scalar).
  auto add = [&](std::string name, KernelIR ir, size_t n, std::vector<std::vector<uint8_t>> init,
                 std::vector<uint64_t> scalar, std::vector<std::vector<uint8_t>> expect) {
    CorpusCase c;
    c.name = "regions." + std::move(name);
    c.ir = std::move(ir);
    c.size = n;
    for (size_t p = 0; p < c.ir.params.size(); ++p) {
      if (init[p].empty() && c.ir.params[p].kind == ParamKind::BufferOut)
        init[p].assign(n * size_of(c.ir.params[p].type), 0xA5);  // garbage to overwrite
      if (expect[p].empty())
        expect[p] = init[p];
    }
    c.init = std::move(init);
    c.scalar = std::move(scalar);
    c.scalar.resize(c.ir.params.size());
    c.expect = std::move(expect);
    out.push_back(std::move(c));
  };
  const size_t n = kN;
  for (uint64_t limit : {kNoIterationLimit, uint64_t{0}, uint64_t{17}}) {
    std::vector<uint32_t> hist(7, 0);
    std::vector<uint64_t> steps(n), xs(n);
    for (size_t i = 0; i < n; ++i) {
      uint32_t x = 0;
      steps[i] = rk::collatz_steps(static_cast<uint32_t>(i + 1), limit, hist, &x);
      xs[i] = x;
    }
    add("collatz[" +
            (limit == kNoIterationLimit ? std::string("no limit") : std::to_string(limit)) + "]",
        rk::collatz_kernel(limit), n, {{}, {}, pack(U32, std::vector<uint64_t>(7, 0)), {}},
        {0, 0, 0, 7}, {pack(U32, steps), pack(U32, xs), pack(U32, widen(hist)), {}});
  }
  {
    std::vector<uint64_t> want(n), hit(n);
    for (size_t i = 0; i < n; ++i) {
      want[i] = rk::branch_model(i);
      hit[i] = i % 3 == 0;
    }
    add("nested_ifs", rk::branch_kernel(), n, {{}, pack(U32, std::vector<uint64_t>(n, 0)), {}},
        {0, 0, n}, {pack(U32, want), pack(U32, hit), {}});
  }
  // Compare chains up to 4 targets, brx.idx beyond.
  for (uint32_t targets : {1u, 2u, 3u, 4u, 5u, 8u, 64u}) {
    std::vector<uint64_t> idx(n), want(n);
    for (size_t i = 0; i < n; ++i) {
      idx[i] = rk::call_index(i, targets);
      want[i] = rk::call_model(i, static_cast<uint32_t>(idx[i]), targets);
    }
    add("call[" + std::to_string(targets) + " targets]", rk::call_kernel(targets), n,
        {pack(U32, idx), {}}, {0, 0}, {{}, pack(U32, want)});
  }
  {
    std::vector<uint32_t> hist(8, 0);
    std::vector<uint64_t> js(n), accs(n);
    for (size_t i = 0; i < n; ++i) {
      js[i] = i % 5;
      accs[i] = rk::nested_loop_model(i, hist);
    }
    add("loop_in_if_in_loop", rk::nested_loop_kernel(), n,
        {{}, {}, pack(U32, std::vector<uint64_t>(8, 0)), {}}, {0, 0, 0, 8},
        {pack(U32, js), pack(U64, accs), pack(U32, widen(hist)), {}});
  }
  for (uint64_t limit : {uint64_t{0}, uint64_t{3}}) {
    std::vector<uint32_t> conds(4, 0), bodies(4, 0);
    rk::counted_loop_model(n, limit, conds, bodies);
    std::vector<uint8_t> zeros = pack(U32, std::vector<uint64_t>(4, 0));
    add("no_carried_values[limit " + std::to_string(limit) + "]", rk::counted_loop_kernel(limit), n,
        {zeros, zeros, {}}, {0, 0, 4}, {pack(U32, widen(conds)), pack(U32, widen(bodies)), {}});
  }
  {
    std::vector<uint64_t> v[7];
    for (size_t i = 0; i < n; ++i) {
      rk::MixedCarried m = rk::mixed_carried_model(i);
      v[0].push_back(m.k);
      v[1].push_back(fbits(m.f));
      v[2].push_back(dbits(m.d));
      v[3].push_back(m.u);
      v[4].push_back(m.b);
      v[5].push_back(static_cast<uint32_t>(m.p));
      v[6].push_back(static_cast<uint32_t>(m.q));
    }
    KernelIR ir = rk::mixed_carried_kernel();
    std::vector<std::vector<uint8_t>> expect;
    for (int p = 0; p < 7; ++p)
      expect.push_back(pack(ir.params[p].type, v[p]));
    add("carried_values_of_every_type", std::move(ir), n, std::vector<std::vector<uint8_t>>(7), {},
        std::move(expect));
  }
  {
    const size_t hist_n = 200;
    std::vector<uint32_t> counters(5, 0), sums(5, 0), others(1, 0), hist(hist_n, 0);
    rk::scatter_inc_branch_model(n, counters, sums, others, hist);
    std::vector<uint8_t> five = pack(U32, std::vector<uint64_t>(5, 0));
    add("scatter_inc_in_branch", rk::scatter_inc_branch_kernel(), n,
        {five, five, pack(U32, {0}), pack(U32, std::vector<uint64_t>(hist_n, 0)), {}, {}, {}},
        {0, 0, 0, 0, 5, 1, hist_n},
        {pack(U32, widen(counters)),
         pack(U32, widen(sums)),
         pack(U32, widen(others)),
         pack(U32, widen(hist)),
         {},
         {},
         {}});
  }
}

double as_real(ScalarType t, const uint8_t* p) {
  if (t == ScalarType::Float32) {
    float f;
    std::memcpy(&f, p, 4);
    return f;
  }
  double d;
  std::memcpy(&d, p, 8);
  return d;
}

}  // namespace

double ulp_distance(double a, double b, bool single) {
  if (a == b)
    return 0;
  if (std::isnan(a) || std::isnan(b) || std::isinf(a) || std::isinf(b))
    return std::numeric_limits<double>::infinity();
  int e;
  std::frexp(std::max(std::fabs(a), std::fabs(b)), &e);
  int digits = single ? 24 : 53, emin = single ? -125 : -1021;
  double ulp = std::ldexp(1.0, std::max(e, emin) - digits);
  return std::fabs(a - b) / ulp;
}

std::vector<CorpusCase> ir_corpus() {
  std::vector<CorpusCase> out;
  leaf_cases(out);
  unary_cases(out);
  cast_cases(out);
  bitcast_cases(out);
  binary_cases(out);
  gather_cases(out);
  scatter_cases(out);
  scatter_reduction_cases(out);
  scatter_inc_cases(out);
  compound_cases(out);
  region_cases(out);
  return out;
}

Buffers run_on_backend(Backend& be, const CorpusCase& c) {
  const auto& params = c.ir.params;
  std::vector<void*> ptrs(params.size(), nullptr);
  std::vector<KernelArg> args(params.size());
  Buffers result(params.size());
  try {
    for (size_t p = 0; p < params.size(); ++p) {
      if (params[p].kind == ParamKind::Scalar) {
        args[p] = KernelArg{c.scalar[p], {}};
        continue;
      }
      size_t count = c.init[p].size() / size_of(params[p].type);
      ptrs[p] = be.alloc(params[p].type, count, {});
      be.copy(ptrs[p], c.init[p].data(), c.init[p].size(), CopyKind::HostToDevice);
      args[p] = KernelArg::buffer(ptrs[p]);
    }
    be.launch(be.compile(c.ir), c.size, {}, args);
    for (size_t p = 0; p < params.size(); ++p) {
      if (!ptrs[p])
        continue;
      result[p].resize(c.init[p].size());
      be.copy(result[p].data(), ptrs[p], result[p].size(), CopyKind::DeviceToHost);
    }
  } catch (...) {
    for (void* p : ptrs)
      be.release(p);
    throw;
  }
  for (void* p : ptrs)
    be.release(p);
  return result;
}

Buffers run_on_interpreter(const CorpusCase& c, const ff::cuda_backend::PtxOptions& options,
                           unsigned grid, unsigned block, unsigned quantum) {
  PtxModule m(ff::cuda_backend::emit_ptx_kernel(c.ir, "ff_kernel", options));
  m.set_quantum(quantum);
  Buffers bufs = c.init;
  std::vector<uint64_t> params{c.size};
  for (size_t p = 0; p < c.ir.params.size(); ++p) {
    if (c.ir.params[p].kind == ParamKind::Scalar) {
      params.push_back(c.scalar[p]);
    } else {
      m.allow(bufs[p].data(), bufs[p].size());
      params.push_back(reinterpret_cast<uint64_t>(bufs[p].data()));
    }
  }
  m.launch("ff_kernel", grid, block, params);
  return bufs;
}

std::string compare(const CorpusCase& c, const Buffers& got, const Buffers& want,
                    double ulp_bound) {
  for (size_t p = 0; p < c.ir.params.size(); ++p) {
    ParamKind k = c.ir.params[p].kind;
    if (k == ParamKind::BufferIn || k == ParamKind::Scalar)
      continue;
    ScalarType t = c.ir.params[p].type;
    size_t s = size_of(t);
    if (got[p].size() != want[p].size())
      return "parameter " + std::to_string(p) + ": sizes differ";
    size_t bad = 0, first = 0;
    double worst = 0;
    for (size_t i = 0; i < got[p].size() / s; ++i) {
      const uint8_t* g = got[p].data() + i * s;
      const uint8_t* w = want[p].data() + i * s;
      bool ok;
      if (is_float(t)) {
        double x = as_real(t, g), y = as_real(t, w);
        if (std::isnan(x) || std::isnan(y))
          ok = std::isnan(x) && std::isnan(y);
        else if (c.ulp > 0 && ulp_bound > 0)
          ok = ulp_distance(x, y, t == ScalarType::Float32) <= ulp_bound;
        else
          ok = std::memcmp(g, w, s) == 0;
        if (!ok)
          worst = std::max(worst, ulp_distance(x, y, t == ScalarType::Float32));
      } else {
        ok = std::memcmp(g, w, s) == 0;
      }
      if (!ok && bad++ == 0)
        first = i;
    }
    if (bad) {
      std::ostringstream os;
      os << c.name << ": parameter " << p << " (" << to_string(t) << "): " << bad
         << " elements differ, first [" << first << "]: got ";
      const uint8_t* g = got[p].data() + first * s;
      const uint8_t* w = want[p].data() + first * s;
      if (is_float(t)) {
        os.precision(17);
        os << as_real(t, g) << ", expected " << as_real(t, w) << " (worst " << worst << " ulp)";
      } else {
        uint64_t x = 0, y = 0;
        std::memcpy(&x, g, s);
        std::memcpy(&y, w, s);
        os << "0x" << std::hex << x << ", expected 0x" << y;
      }
      return os.str();
    }
  }
  return "";
}

}  // namespace ffcuda
