// The CUDA backend's code generation, tested without a GPU: every kernel of the IR corpus and
// every built-in kernel is assembled by ptxas for sm_75, sm_80 and sm_90 (no errors, no
// warnings), and run on the PTX reference interpreter (tests/cuda/ptx_interpreter.h) against
// the LLVM backend and host references, so a semantic mistake in the generator fails here,
// in CI, not first on a GPU. The math routines are measured against a long double reference.
#include <algorithm>
#include <bit>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <sstream>
#include <tuple>
#include <type_traits>

#include "backend/cuda/ptx_builtins.h"
#include "backend/cuda/ptx_codegen.h"
#include "backend/cuda/ptx_math.h"
#include "cuda/ir_corpus.h"
#include "cuda/ptx_interpreter.h"
#include "cuda/ptxas.h"
#include "freezeframe/errors.h"
#include "support/ulp.h"
#ifdef FF_HAVE_LLVM_BACKEND
#include "backend/llvm/llvm_backend.h"
#endif

using namespace ff;
using namespace ff::cuda_backend;
using ffcuda::PtxModule;

namespace {

// Wrapping integer arithmetic (in the unsigned type: no signed overflow in the reference).
template <class T>
T wrap_add(T a, T b) {
  if constexpr (std::is_integral_v<T>)
    return static_cast<T>(static_cast<std::make_unsigned_t<T>>(a) +
                          static_cast<std::make_unsigned_t<T>>(b));
  else
    return T(a + b);
}

template <class T>
T wrap_mul(T a, T b) {
  if constexpr (std::is_integral_v<T>)
    return static_cast<T>(static_cast<std::make_unsigned_t<T>>(a) *
                          static_cast<std::make_unsigned_t<T>>(b));
  else
    return T(a * b);
}

// Every built-in module the backend can ask for.
std::vector<std::string> builtin_modules(const PtxTarget& t) {
  std::vector<std::string> m;
  for (unsigned e : {1u, 2u, 4u, 8u})
    m.push_back(ptx_fill(e, t));
  m.push_back(ptx_copy(t));
  m.push_back(ptx_compress(t));
  for (int ty = 0; ty < kNumScalarTypes; ++ty)
    for (int op = 0; op < 6; ++op)
      if (reduce_defined(ReduceOp(op), ScalarType(ty)))
        m.push_back(ptx_reduce(ReduceOp(op), ScalarType(ty), t));
  for (int ty = 1; ty < kNumScalarTypes; ++ty)
    for (bool ex : {false, true})
      m.push_back(ptx_prefix_sum(ScalarType(ty), ex, t));
  return m;
}

std::string ptxas_or_skip() {
  std::string p = ffcuda::find_ptxas();
  if (p.empty()) {
    const char* req = std::getenv("FF_REQUIRE_PTXAS");
    if (req && *req && std::string(req) != "0")
      FAIL(
          "ptxas not found (FF_REQUIRE_PTXAS is set): install the CUDA toolkit or put ptxas "
          "on PATH");
    WARN("skipped: ptxas not found (on PATH, in $FF_PTXAS or /usr/local/cuda/bin)");
  }
  return p;
}

}  // namespace

TEST_CASE("every corpus kernel assembles with ptxas for sm_75, sm_80 and sm_90 without warnings",
          "[cuda_codegen][ptxas]") {
  std::string ptxas = ptxas_or_skip();
  if (ptxas.empty())
    return;
  std::vector<ffcuda::CorpusCase> corpus = ffcuda::ir_corpus();
  for (unsigned sm : {75u, 80u, 90u}) {
    INFO("sm_" << sm);
    PtxOptions o;
    o.target.sm = sm;
    std::vector<std::string> kernels;
    for (const auto& c : corpus) {
      kernels.push_back(emit_ptx_kernel(c.ir, "k", o));
      PtxOptions plain = o;
      plain.unroll = 1;
      kernels.push_back(emit_ptx_kernel(c.ir, "k", plain));
    }
    auto r = ffcuda::run_ptxas(ptxas, ffcuda::combine_modules(kernels, sm), sm);
    INFO(r.output);
    CHECK(r.status == 0);
    CHECK(r.output.empty());
  }
}

TEST_CASE("every built-in kernel assembles with ptxas for sm_75, sm_80 and sm_90 without warnings",
          "[cuda_codegen][ptxas]") {
  std::string ptxas = ptxas_or_skip();
  if (ptxas.empty())
    return;
  for (unsigned sm : {75u, 80u, 90u}) {
    INFO("sm_" << sm);
    PtxTarget t;
    t.sm = sm;
    auto r = ffcuda::run_ptxas(ptxas, ffcuda::combine_modules(builtin_modules(t), sm), sm);
    INFO(r.output);
    CHECK(r.status == 0);
    CHECK(r.output.empty());
  }
  // One module as the backend loads it, whole (its own header), for the default target.
  auto r = ffcuda::run_ptxas(ptxas, ptx_reduce(ReduceOp::Add, ScalarType::Float64, {}), 75);
  INFO(r.output);
  CHECK(r.status == 0);
}

TEST_CASE("PTX policy: ISA 6.4 for sm_75, raised to the first version that knows the target",
          "[cuda_codegen]") {
  CHECK(ptx_version_for(PtxTarget{}) == 64);
  CHECK(ptx_version_for(PtxTarget{80, 0}) == 70);
  CHECK(ptx_version_for(PtxTarget{86, 0}) == 71);
  CHECK(ptx_version_for(PtxTarget{90, 0}) == 78);
  CHECK(ptx_version_for(PtxTarget{100, 0}) == 86);
  CHECK(ptx_version_for(PtxTarget{120, 0}) == 87);
  CHECK(ptx_version_for(PtxTarget{75, 80}) == 80);  // an explicit version wins
  CHECK_THAT(ptx_module_header(PtxTarget{}),
             Catch::Matchers::StartsWith(".version 6.4\n.target sm_75\n.address_size 64"));
  KernelIR ir;
  ir.params.push_back({ParamKind::BufferOut, ScalarType::Int32});
  ir.emit(IrOp::Store, ScalarType::Int32, {0, ir.emit(IrOp::Index, ScalarType::Int32)});
  ir.finalize();
  PtxOptions o;
  o.target.sm = 90;
  std::string text = emit_ptx_kernel(ir, "my_kernel", o);
  CHECK_THAT(text, Catch::Matchers::Contains(".version 7.8\n.target sm_90"));
  CHECK_THAT(text, Catch::Matchers::Contains(".visible .entry my_kernel("));
  CHECK_THAT(text, Catch::Matchers::Contains(ir.hash.to_hex()));
}

TEST_CASE("a kernel with more parameters than a launch can pass is refused", "[cuda_codegen]") {
  KernelIR ir;
  for (size_t p = 0; p <= kMaxKernelParams; ++p)
    ir.params.push_back({ParamKind::Scalar, ScalarType::Int32});
  ir.finalize();
  CHECK_THROWS_AS(emit_ptx_kernel(ir, "k"), BackendError);
  ir.params.pop_back();
  ir.finalize();
  CHECK_NOTHROW(emit_ptx_kernel(ir, "k"));
}

#ifdef FF_HAVE_LLVM_BACKEND
TEST_CASE("generated PTX computes what the LLVM backend computes, for every corpus kernel",
          "[cuda_codegen][semantics]") {
  auto llvm = create_llvm_backend(BackendOptions{1});
  size_t n_cases = 0;
  for (const auto& c : ffcuda::ir_corpus()) {
    INFO(c.name);
    ffcuda::Buffers got = ffcuda::run_on_interpreter(c);
    ++n_cases;
    // Kernels with a host model (the scatter kinds) are held to it as well.
    if (!c.expect.empty())
      CHECK(ffcuda::compare(c, got, c.expect, 0) == "");
    ffcuda::Buffers want = ffcuda::run_on_backend(*llvm, c);
    // exp/log/sin/cos: libm (and libmvec, within 4 ulp of it) vs our routines (within 2 ulp).
    CHECK(ffcuda::compare(c, got, want, 8.0) == "");
  }
  CHECK(n_cases > 300);
}
#endif

TEST_CASE("unrolled, plain and any grid size give the same results", "[cuda_codegen][semantics]") {
  for (const auto& c : ffcuda::ir_corpus()) {
    INFO(c.name);
    ffcuda::Buffers ref = ffcuda::run_on_interpreter(c);
    PtxOptions plain;
    plain.unroll = 1;
    PtxOptions wide;
    wide.unroll = 8;
    CHECK(ffcuda::compare(c, ffcuda::run_on_interpreter(c, plain, 1, 32), ref, 0) == "");
    CHECK(ffcuda::compare(c, ffcuda::run_on_interpreter(c, wide, 2, 96), ref, 0) == "");
    // More threads than elements.
    CHECK(ffcuda::compare(c, ffcuda::run_on_interpreter(c, {}, 5, 256), ref, 0) == "");
  }
}

TEST_CASE("scatter-reduction and scatter_inc corpus kernels give their host model's result",
          "[cuda_codegen][semantics][scatter]") {
  size_t n = 0, n_regions = 0;
  for (const auto& c : ffcuda::ir_corpus()) {
    if (c.expect.empty())
      continue;
    if (c.name.rfind("regions.", 0) == 0) {
      ++n_regions;
      continue;  // tests/cuda_regions_test.cpp runs them
    }
    INFO(c.name);
    PtxOptions plain;
    plain.unroll = 1;
    CHECK(ffcuda::compare(c, ffcuda::run_on_interpreter(c), c.expect, 0) == "");
    // Threads switching every few instructions: the compare-and-swap loops retry.
    CHECK(ffcuda::compare(c, ffcuda::run_on_interpreter(c, {}, 2, 64, 1), c.expect, 0) == "");
    CHECK(ffcuda::compare(c, ffcuda::run_on_interpreter(c, plain, 1, 96, 3), c.expect, 0) == "");
    ++n;
  }
  // mul, min, max on 6 types, and, or on 4, scatter_inc: 2 index types, with and without a
  // range report.
  CHECK(n == (3 * 6 + 2 * 4 + 1) * 4);
  CHECK(n_regions == 16);
}

namespace {

// One scatter of kind `op` into `buf` (T elements): buf[idx[i]] = combine(buf[idx[i]], val[i])
// where mask[i] and idx[i] < buf.size(), as a corpus case (so it runs on the interpreter).
template <class T>
ffcuda::CorpusCase scatter_kernel(IrOp op, const std::vector<T>& buf,
                                  const std::vector<uint32_t>& idx,
                                  const std::vector<uint8_t>& mask, const std::vector<T>& val) {
  auto bytes = [](const auto& v) {
    std::vector<uint8_t> b(v.size() * sizeof(v[0]));
    std::memcpy(b.data(), v.data(), b.size());
    return b;
  };
  const ScalarType t = scalar_type_of<T>;
  ffcuda::CorpusCase c;
  c.name = std::string(to_string(op)) + "." + to_string(t);
  c.size = idx.size();
  c.ir.params = {{ParamKind::BufferInOut, t},
                 {ParamKind::BufferIn, ScalarType::UInt32},
                 {ParamKind::BufferIn, ScalarType::Bool},
                 {ParamKind::BufferIn, t},
                 {ParamKind::Scalar, ScalarType::UInt64}};
  c.init = {bytes(buf), bytes(idx), bytes(mask), bytes(val), {}};
  c.scalar = {0, 0, 0, 0, buf.size()};
  uint32_t i = c.ir.emit(IrOp::Load, ScalarType::UInt32, {1});
  uint32_t m = c.ir.emit(IrOp::Load, ScalarType::Bool, {2});
  uint32_t v = c.ir.emit(IrOp::Load, t, {3});
  c.ir.emit(op, t, {0, i, m, v, 4});
  c.ir.validate();
  c.ir.finalize();
  return c;
}

template <class T>
std::vector<T> elements(const ffcuda::Buffers& b) {
  std::vector<T> v(b[0].size() / sizeof(T));
  std::memcpy(v.data(), b[0].data(), b[0].size());
  return v;
}

// The scalar reference of combine(old, v) (docs/kernel-ir.md).
template <class T>
T combine_ref(IrOp op, T old, T v) {
  if constexpr (std::is_floating_point_v<T>) {
    if (op == IrOp::ScatterMul)
      return old * v;
    // The value wins iff it is not NaN and the element is NaN, or the value is below (Max:
    // above) it, or they are equal with the value -0 and the element +0 (Max: the reverse).
    bool max = op == IrOp::ScatterMax;
    bool wins = !std::isnan(v) && (std::isnan(old) || (max ? v > old : v < old) ||
                                   (v == old && (max ? !std::signbit(v) && std::signbit(old)
                                                     : std::signbit(v) && !std::signbit(old))));
    return wins ? v : old;
  } else {
    switch (op) {
      case IrOp::ScatterMul:
        return wrap_mul(old, v);
      case IrOp::ScatterMin:
        return v < old ? v : old;
      case IrOp::ScatterMax:
        return v > old ? v : old;
      case IrOp::ScatterAnd:
        return old & v;
      default:
        return old | v;
    }
  }
}

// Whether a and b are the same bits (Mul: or both NaN, whose payload the IR leaves open).
template <class T>
bool same(IrOp op, T a, T b) {
  if constexpr (std::is_floating_point_v<T>)
    if (op == IrOp::ScatterMul && std::isnan(a) && std::isnan(b))
      return true;
  return std::memcmp(&a, &b, sizeof(T)) == 0;
}

// Runs the kernel in several schedules (grids, unrolling, threads switching every 1 or 3
// instructions) and checks each result against `want` bit for bit.
template <class T>
void check_schedules(IrOp op, const ffcuda::CorpusCase& c, const std::vector<T>& want) {
  PtxOptions plain, wide;
  plain.unroll = 1;
  wide.unroll = 8;

  struct Run {
    PtxOptions o;
    unsigned grid, block, quantum;
  };

  for (const Run& r :
       {Run{{}, 3, 64, 0}, Run{plain, 1, 32, 1}, Run{wide, 2, 96, 3}, Run{{}, 5, 256, 1}}) {
    std::vector<T> got =
        elements<T>(ffcuda::run_on_interpreter(c, r.o, r.grid, r.block, r.quantum));
    INFO(c.name << ": grid " << r.grid << " x " << r.block << ", unroll " << r.o.unroll
                << ", quantum " << r.quantum);
    REQUIRE(got.size() == want.size());
    size_t bad = 0;
    for (size_t k = 0; k < want.size(); ++k)
      if (!same(op, got[k], want[k]) && bad++ < 3)
        UNSCOPED_INFO("element " << k << ": got " << got[k] << ", want " << want[k]);
    CHECK(bad == 0);
  }
}

// Values for the reference runs: random bits (integers; two set or two clear bits for Or and
// And), powers of two with zeros, infinities and NaN (float Mul: exact in any order), or a mix
// of NaN of both signs and several payloads, +-0, +-inf, subnormals, duplicates and random
// values (float Min/Max).
template <class T>
T scatter_value(IrOp op, std::mt19937_64& g) {
  if constexpr (std::is_floating_point_v<T>) {
    using L = std::numeric_limits<T>;
    using Bits = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
    if (op == IrOp::ScatterMul) {
      const T pow2[] = {1, -1, 2, -2, T(0.5), T(-0.5), 4, T(-0.25)};
      const T special[] = {T(0), T(-0.0), L::infinity(), -L::infinity(), L::quiet_NaN()};
      return g() % 50 == 0 ? special[g() % 5] : pow2[g() % 8];
    }
    Bits nan_bits = std::bit_cast<Bits>(L::quiet_NaN()) | static_cast<Bits>(g() % 1000);
    const T pool[] = {T(0),
                      T(-0.0),
                      L::infinity(),
                      -L::infinity(),
                      std::bit_cast<T>(nan_bits),
                      -std::bit_cast<T>(nan_bits),
                      L::denorm_min(),
                      -L::denorm_min(),
                      T(1),
                      T(-1),
                      L::max(),
                      L::lowest()};
    if (g() % 3 == 0)
      return static_cast<T>(std::uniform_real_distribution<double>(-4, 4)(g));
    return pool[g() % std::size(pool)];
  } else {
    using U = std::make_unsigned_t<T>;
    constexpr unsigned w = sizeof(T) * 8;
    U two = static_cast<U>((U{1} << (g() % w)) | (U{1} << (g() % w)));
    if (op == IrOp::ScatterOr)
      return static_cast<T>(two);
    if (op == IrOp::ScatterAnd)
      return static_cast<T>(static_cast<U>(~two));
    return static_cast<T>(g() % 4 == 0 ? g() % 7 : g());  // small values make ties
  }
}

template <class T>
void check_scatter_reductions() {
  std::vector<IrOp> ops = {IrOp::ScatterMul, IrOp::ScatterMin, IrOp::ScatterMax};
  if constexpr (std::is_integral_v<T>) {
    ops.push_back(IrOp::ScatterAnd);
    ops.push_back(IrOp::ScatterOr);
  }
  for (IrOp op : ops) {
    std::mt19937_64 g(static_cast<uint64_t>(op) * 131 + sizeof(T) * 7 + std::is_signed_v<T>);
    const size_t n = 777, slots = 13;
    std::vector<T> buf(slots), val(n);
    std::vector<uint32_t> idx(n);
    std::vector<uint8_t> mask(n);
    for (T& x : buf)
      x = scatter_value<T>(op, g);
    for (size_t i = 0; i < n; ++i) {
      idx[i] = static_cast<uint32_t>(g() % (slots + 3));  // 13 .. 15: out of range
      mask[i] = g() % 7 != 0;
      val[i] = scatter_value<T>(op, g);
    }
    std::vector<T> want = buf;
    for (size_t i = 0; i < n; ++i)
      if (mask[i] && idx[i] < slots)
        want[idx[i]] = combine_ref(op, want[idx[i]], val[i]);
    check_schedules(op, scatter_kernel(op, buf, idx, mask, val), want);
  }
}

}  // namespace

TEST_CASE("scatter_mul, min, max, and and or give a scalar loop's result, in any schedule",
          "[cuda_codegen][semantics][scatter]") {
  check_scatter_reductions<int32_t>();
  check_scatter_reductions<uint32_t>();
  check_scatter_reductions<int64_t>();
  check_scatter_reductions<uint64_t>();
  check_scatter_reductions<float>();
  check_scatter_reductions<double>();
}

TEST_CASE("float scatter_min/max ignore NaN values, fill NaN elements and put -0 below +0",
          "[cuda_codegen][semantics][scatter]") {
  auto check = [&]<class T>() {
    using L = std::numeric_limits<T>;
    using Bits = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
    const T nan = std::bit_cast<T>(std::bit_cast<Bits>(L::quiet_NaN()) | Bits{0x123});
    const T pz = T(0), nz = T(-0.0);
    // Per element: its initial value and the values sent to it (lanes interleaved below).
    struct Slot {
      T init;
      std::vector<T> vals;
      T min, max;  // the results
    };
    const std::vector<Slot> slots = {
        {pz, {nz}, nz, pz},                                  // -0 replaces +0 in Min only
        {nz, {pz}, nz, pz},                                  // +0 replaces -0 in Max only
        {pz, {nz, pz, nz}, nz, pz},                          // ties in any order
        {nan, {L::quiet_NaN(), T(3), T(-2)}, T(-2), T(3)},   // a NaN element takes values
        {nan, {-L::quiet_NaN(), L::quiet_NaN()}, nan, nan},  // keeps its bits with NaN values
        {T(5), {L::quiet_NaN()}, T(5), T(5)},                // NaN values are ignored
        {T(1), {L::infinity(), -L::infinity()}, -L::infinity(), L::infinity()},
        {T(1), {L::denorm_min(), -L::denorm_min()}, -L::denorm_min(), T(1)},
        {nan, {nz, pz}, nz, pz},  // the zeros' order does not matter
        {nan, {pz, nz}, nz, pz},
    };
    for (IrOp op : {IrOp::ScatterMin, IrOp::ScatterMax}) {
      std::vector<T> buf, val, want;
      std::vector<uint32_t> idx;
      std::vector<uint8_t> mask;
      for (const Slot& s : slots) {
        buf.push_back(s.init);
        want.push_back(op == IrOp::ScatterMin ? s.min : s.max);
      }
      // Round r sends every slot its r-th value, and the extreme value through a masked lane
      // and an out-of-range one (which must write nothing).
      const T extreme = op == IrOp::ScatterMin ? -L::infinity() : L::infinity();
      for (size_t r = 0; r < 3; ++r)
        for (uint32_t k = 0; k < slots.size(); ++k) {
          if (r >= slots[k].vals.size())
            continue;
          idx.push_back(k);
          mask.push_back(1);
          val.push_back(slots[k].vals[r]);
          idx.push_back(k);
          mask.push_back(0);
          val.push_back(extreme);
          idx.push_back(static_cast<uint32_t>(slots.size()) + k);
          mask.push_back(1);
          val.push_back(extreme);
        }
      check_schedules(op, scatter_kernel(op, buf, idx, mask, val), want);
    }
  };
  check.operator()<float>();
  check.operator()<double>();
}

TEST_CASE("scatter_inc gives each counter's lanes a permutation of its old values",
          "[cuda_codegen][semantics][scatter]") {
  // old = scatter_inc(counters, idx, mask); out[i] = old.
  const ScalarType U32 = ScalarType::UInt32;
  const size_t n = 1500, slots = 17;
  std::mt19937_64 g(91);
  std::vector<uint32_t> counters(slots), idx(n), out(n, 0xA5A5A5A5u);
  std::vector<uint8_t> mask(n);
  for (size_t k = 0; k < slots; ++k)
    counters[k] = static_cast<uint32_t>(k * 1000);
  for (size_t i = 0; i < n; ++i) {
    idx[i] = static_cast<uint32_t>(g() % (slots + 4));
    mask[i] = g() % 6 != 0;
  }
  auto bytes = [](const auto& v) {
    std::vector<uint8_t> b(v.size() * sizeof(v[0]));
    std::memcpy(b.data(), v.data(), b.size());
    return b;
  };
  ffcuda::CorpusCase c;
  c.name = "scatter_inc";
  c.size = n;
  c.ir.params = {{ParamKind::BufferInOut, U32},
                 {ParamKind::BufferIn, U32},
                 {ParamKind::BufferIn, ScalarType::Bool},
                 {ParamKind::Scalar, ScalarType::UInt64},
                 {ParamKind::BufferOut, U32}};
  c.init = {bytes(counters), bytes(idx), bytes(mask), {}, bytes(out)};
  c.scalar = {0, 0, 0, slots, 0};
  uint32_t li = c.ir.emit(IrOp::Load, U32, {1});
  uint32_t lm = c.ir.emit(IrOp::Load, ScalarType::Bool, {2});
  uint32_t old = c.ir.emit(IrOp::ScatterInc, U32, {0, li, lm, 0, 3});
  c.ir.emit(IrOp::Store, U32, {4, old});
  c.ir.validate();
  c.ir.finalize();

  PtxOptions plain;
  plain.unroll = 1;
  for (auto [grid, block, quantum, o] :
       {std::tuple{3u, 64u, 0u, PtxOptions{}}, std::tuple{2u, 96u, 1u, PtxOptions{}},
        std::tuple{1u, 32u, 2u, plain}}) {
    INFO("grid " << grid << " x " << block << ", quantum " << quantum);
    ffcuda::Buffers b = ffcuda::run_on_interpreter(c, o, grid, block, quantum);
    std::vector<uint32_t> end(slots), got(n);
    std::memcpy(end.data(), b[0].data(), b[0].size());
    std::memcpy(got.data(), b[4].data(), b[4].size());
    std::vector<std::vector<uint32_t>> seen(slots);
    size_t zeros = 0, not_written = 0;
    for (size_t i = 0; i < n; ++i) {
      if (mask[i] && idx[i] < slots) {
        seen[idx[i]].push_back(got[i]);
      } else {
        ++not_written;
        zeros += got[i] == 0;
      }
    }
    CHECK(zeros == not_written);  // lanes that increment nothing get 0
    for (size_t k = 0; k < slots; ++k) {
      INFO("counter " << k);
      std::vector<uint32_t> want(seen[k].size());
      for (size_t j = 0; j < want.size(); ++j)
        want[j] = static_cast<uint32_t>(k * 1000 + j);
      std::sort(seen[k].begin(), seen[k].end());
      CHECK(seen[k] == want);
      CHECK(end[k] == k * 1000 + want.size());
    }
  }
}

TEST_CASE("the compare-and-swap loops retry when other threads change the element",
          "[cuda_codegen][semantics][scatter]") {
  // Every lane multiplies element 0 by 3 (Int32) and maxes element 1 with its index (Float32).
  const size_t n = 300;
  KernelIR ir;
  ir.params = {{ParamKind::BufferInOut, ScalarType::Int32},
               {ParamKind::BufferInOut, ScalarType::Float32},
               {ParamKind::Scalar, ScalarType::UInt64}};
  uint32_t zero = ir.emit(IrOp::Literal, ScalarType::UInt32, {}, 0);
  uint32_t all = ir.emit(IrOp::Literal, ScalarType::Bool, {}, 1);
  uint32_t three = ir.emit(IrOp::Literal, ScalarType::Int32, {}, 3);
  uint32_t x = ir.emit(IrOp::Index, ScalarType::Float32);
  ir.emit(IrOp::ScatterMul, ScalarType::Int32, {0, zero, all, three, 2});
  ir.emit(IrOp::ScatterMax, ScalarType::Float32, {1, zero, all, x, 2});
  ir.finalize();
  PtxModule m(emit_ptx_kernel(ir, "k"));
  int32_t product = 1;
  float max = -1;
  m.allow(&product, sizeof product);
  m.allow(&max, sizeof max);
  uint64_t params[] = {n, reinterpret_cast<uint64_t>(&product), reinterpret_cast<uint64_t>(&max),
                       1};
  m.launch("k", 2, 64, params);
  uint64_t alone = m.executed();
  int32_t want = 1;
  for (size_t i = 0; i < n; ++i)
    want = wrap_mul(want, int32_t{3});
  CHECK(product == want);
  CHECK(max == float(n - 1));
  product = 1;
  max = -1;
  m.set_quantum(1);
  m.launch("k", 2, 64, params);
  CHECK(product == want);
  CHECK(max == float(n - 1));
  CHECK(m.executed() - alone > alone + alone / 4);  // the retries
}

// ---------------------------------------------------------------------------------------
// Math routines against a long double reference

namespace {

using ff_test::ulp_error;

// op(x), or op(x, y) when `y` is given, through the PTX interpreter.
template <class T>
std::vector<T> run_math(IrOp op, const std::vector<T>& in, const std::vector<T>* y = nullptr) {
  KernelIR ir;
  ScalarType t = scalar_type_of<T>;
  ir.params = {{ParamKind::BufferIn, t}, {ParamKind::BufferIn, t}, {ParamKind::BufferOut, t}};
  uint32_t a = ir.emit(IrOp::Load, t, {0});
  uint32_t r = y ? ir.emit(op, t, {a, ir.emit(IrOp::Load, t, {1})}) : ir.emit(op, t, {a});
  ir.emit(IrOp::Store, t, {2, r});
  ir.finalize();
  PtxModule m(emit_ptx_kernel(ir, "k"));
  std::vector<T> out(in.size());
  m.allow(in.data(), in.size() * sizeof(T));
  if (y)
    m.allow(y->data(), y->size() * sizeof(T));
  m.allow(out.data(), out.size() * sizeof(T));
  uint64_t params[] = {in.size(), reinterpret_cast<uint64_t>(in.data()),
                       reinterpret_cast<uint64_t>(y ? y->data() : in.data()),
                       reinterpret_cast<uint64_t>(out.data())};
  m.launch("k", 8, 128, params);
  return out;
}

template <class T>
std::vector<T> math_inputs(IrOp op, size_t n, uint64_t seed) {
  std::mt19937_64 g(seed);
  std::vector<T> v;
  using Bits = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
  while (v.size() < n) {
    size_t k = v.size() % 4;
    T x;
    if (k == 0) {
      // any finite value (random bits)
      x = std::bit_cast<T>(static_cast<Bits>(g()));
      if (!std::isfinite(x))
        continue;
    } else if (k == 1) {
      // the interesting range of the function
      double lo = op == IrOp::Exp ? (sizeof(T) == 4 ? -104 : -746) : op == IrOp::Log ? 0 : -100;
      double hi = op == IrOp::Exp ? (sizeof(T) == 4 ? 89 : 710) : op == IrOp::Log ? 4 : 100;
      x = static_cast<T>(std::uniform_real_distribution<double>(lo, hi)(g));
    } else if (k == 2) {
      // near 1 (log) / near multiples of pi/2 (sin, cos) / small (exp)
      double base = op == IrOp::Log   ? 1.0
                    : op == IrOp::Exp ? 0.0
                                      : 1.5707963267948966 * double(g() % 200000);
      x = static_cast<T>(base + std::uniform_real_distribution<double>(-1e-3, 1e-3)(g));
    } else {
      // wide magnitudes
      double mag = std::pow(10.0, std::uniform_real_distribution<double>(-40, 40)(g));
      x = static_cast<T>(g() & 1 ? mag : -mag);
    }
    if (op == IrOp::Log)
      x = std::fabs(x);
    v.push_back(x);
  }
  return v;
}

}  // namespace

TEST_CASE("exp, log, sin and cos are within 2 ulp of a long double reference",
          "[cuda_codegen][math]") {
  struct Fn {
    IrOp op;
    const char* name;
    long double (*ref)(long double);
  };

  const Fn fns[] = {{IrOp::Exp, "exp", [](long double x) { return std::exp(x); }},
                    {IrOp::Log, "log", [](long double x) { return std::log(x); }},
                    {IrOp::Sin, "sin", [](long double x) { return std::sin(x); }},
                    {IrOp::Cos, "cos", [](long double x) { return std::cos(x); }}};
  auto check = [&]<class T>() {
    for (const Fn& f : fns) {
      // FF_MATH_SAMPLES raises the sample count (docs/cuda.md quotes a run with 2,000,000).
      const char* env = std::getenv("FF_MATH_SAMPLES");
      size_t samples = env && *env ? std::strtoull(env, nullptr, 10) : 100000;
      std::vector<T> in = math_inputs<T>(f.op, samples, 17 + static_cast<unsigned>(f.op));
      std::vector<T> out = run_math(f.op, in);
      double worst = 0;
      T worst_x = 0;
      for (size_t i = 0; i < in.size(); ++i) {
        double e = ulp_error(out[i], f.ref(static_cast<long double>(in[i])));
        if (e > worst) {
          worst = e;
          worst_x = in[i];
        }
      }
      INFO(f.name << "." << (sizeof(T) == 4 ? "f32" : "f64") << ": worst " << worst
                  << " ulp at x = " << std::hexfloat << worst_x);
      if (std::getenv("FF_MATH_REPORT"))
        WARN(f.name << "." << (sizeof(T) == 4 ? "f32" : "f64") << ": worst " << worst
                    << " ulp over " << in.size() << " inputs, at x = " << std::hexfloat << worst_x);
      CHECK(worst <= kMathUlpBound);
    }
  };
  check.operator()<float>();
  check.operator()<double>();
}

TEST_CASE("exp, log, sin and cos give C's special values", "[cuda_codegen][math]") {
  auto check = [&]<class T>() {
    using L = std::numeric_limits<T>;
    std::vector<T> in = {T(0),          T(-0.0),        T(1),           T(-1),
                         L::infinity(), -L::infinity(), L::quiet_NaN(), L::denorm_min(),
                         L::min(),      L::max(),       -L::max(),      T(1e-30)};
    for (IrOp op : {IrOp::Exp, IrOp::Log, IrOp::Sin, IrOp::Cos}) {
      std::vector<T> out = run_math(op, in);
      for (size_t i = 0; i < in.size(); ++i) {
        T x = in[i];
        T want = op == IrOp::Exp   ? std::exp(x)
                 : op == IrOp::Log ? std::log(x)
                 : op == IrOp::Sin ? std::sin(x)
                                   : std::cos(x);
        INFO(to_string(op) << "(" << x << ") = " << out[i] << ", C gives " << want);
        if (std::isnan(want) || std::isinf(want) || want == 0 || want == 1 || x == 0) {
          CHECK((std::isnan(want) ? std::isnan(out[i]) : out[i] == want));
          if (!std::isnan(want))  // NaN's sign bit is not specified
            CHECK(std::signbit(out[i]) == std::signbit(want));
        } else {
          CHECK(ulp_error(out[i], static_cast<long double>(want)) <= kMathUlpBound + 1);
        }
      }
    }
  };
  check.operator()<float>();
  check.operator()<double>();
}

TEST_CASE("the Payne-Hanek table holds the binary digits of 2/pi", "[cuda_codegen][math]") {
  CHECK(kTwoOverPi[0] == 0);
  // The first 64 bits against long double's 2/pi (64-bit significand), within its rounding.
  long double two_over_pi = 0.636619772367581343075535053490057448L;
  auto top = static_cast<uint64_t>(std::ldexp(two_over_pi, 64));
  CHECK((kTwoOverPi[1] >= top - 1 && kTwoOverPi[1] <= top + 1));
  // The rest is checked by the huge arguments of the accuracy test (up to 1e38 and 1e300).
}

// ---------------------------------------------------------------------------------------
// Built-in kernels on the interpreter

namespace {

// A scratch area like the backend's: partials plus a zeroed counter word.
struct Scratch {
  std::vector<uint64_t> partials = std::vector<uint64_t>(kMaxBuiltinBlocks, 0xDEADBEEFDEADBEEFull);
  uint32_t counter = 0;
  uint64_t total = 0;
};

template <class T>
T host_reduce_ref(ReduceOp op, const std::vector<T>& v) {
  using L = std::numeric_limits<T>;
  T r;
  switch (op) {
    case ReduceOp::Add:
      r = T(0);
      for (T x : v)
        r = wrap_add(r, x);
      return r;
    case ReduceOp::Mul:
      r = T(1);
      for (T x : v)
        r = wrap_mul(r, x);
      return r;
    case ReduceOp::Min:
    case ReduceOp::Max: {
      bool mn = op == ReduceOp::Min;
      r = mn ? (L::has_infinity ? L::infinity() : L::max())
             : (L::has_infinity ? -L::infinity() : L::lowest());
      bool any_number = false;
      for (T x : v) {
        if constexpr (std::is_floating_point_v<T>)
          if (std::isnan(x))
            continue;
        any_number = true;
        r = mn ? std::min(r, x) : std::max(r, x);
      }
      if constexpr (std::is_floating_point_v<T>)
        if (!v.empty() && !any_number)
          r = L::quiet_NaN();
      return r;
    }
    case ReduceOp::And:
    case ReduceOp::Or:
      if constexpr (std::is_integral_v<T>) {
        r = op == ReduceOp::And ? T(~T(0)) : T(0);
        for (T x : v)
          r = op == ReduceOp::And ? T(r & x) : T(r | x);
        return r;
      }
      break;
  }
  return T(0);
}

template <class T>
void check_reduce(ReduceOp op, size_t n, unsigned max_blocks) {
  ScalarType t = scalar_type_of<T>;
  std::mt19937_64 g(n * 31 + static_cast<unsigned>(op));
  std::vector<T> v(n);
  for (auto& x : v) {
    if constexpr (std::is_floating_point_v<T>)
      x = op == ReduceOp::Mul ? T(g() % 7 == 0 ? -1 : 1) : T(int(g() % 9) - 4);
    else
      x = static_cast<T>(g());
  }
  if constexpr (std::is_floating_point_v<T>) {
    bool minmax = op == ReduceOp::Min || op == ReduceOp::Max;
    if (minmax && n > 3)
      v[n / 2] = std::numeric_limits<T>::quiet_NaN();  // skipped
    if (minmax && n == 1)
      v[0] = std::numeric_limits<T>::quiet_NaN();  // only NaN: NaN
  }
  PtxModule m(ptx_reduce(op, t, {}));
  Scratch s;
  T out = T(123);
  m.allow(v.data(), v.size() * sizeof(T));
  m.allow(s.partials.data(), s.partials.size() * 8);
  m.allow(&s.counter, 4);
  m.allow(&out, sizeof out);
  BuiltinGrid grid = reduce_grid(n, max_blocks);
  uint64_t params[] = {n, reinterpret_cast<uint64_t>(v.data()), reinterpret_cast<uint64_t>(&out),
                       reinterpret_cast<uint64_t>(s.partials.data()),
                       reinterpret_cast<uint64_t>(&s.counter)};
  m.launch("ff_reduce", grid.grid, kBuiltinBlock, params);
  T want = host_reduce_ref(op, v);
  INFO(to_string(t) << " op " << int(op) << " n=" << n << " grid " << grid.grid << ": got " << +out
                    << ", expected " << +want);
  if constexpr (std::is_floating_point_v<T>)
    CHECK(((std::isnan(out) && std::isnan(want)) || out == want));
  else
    CHECK(out == want);
  CHECK(s.counter == 0);  // reset for the next launch
}

}  // namespace

TEST_CASE("reduce kernels: every op and type, empty input gives the identity, NaN is skipped",
          "[cuda_codegen][builtins]") {
  for (size_t n : {size_t(0), size_t(1), size_t(300), size_t(5003)})
    for (ReduceOp op : {ReduceOp::Add, ReduceOp::Mul, ReduceOp::Min, ReduceOp::Max, ReduceOp::And,
                        ReduceOp::Or}) {
      auto one = [&]<class T>() {
        if (reduce_defined(op, scalar_type_of<T>))
          check_reduce<T>(op, n, 5);
      };
      one.operator()<int32_t>();
      one.operator()<uint32_t>();
      one.operator()<int64_t>();
      one.operator()<uint64_t>();
      one.operator()<float>();
      one.operator()<double>();
    }
  // Bool: bytes, any nonzero byte is true; Min/And = all, Max/Or = any; Sum/Prod undefined.
  CHECK_FALSE(reduce_defined(ReduceOp::Add, ScalarType::Bool));
  CHECK_FALSE(reduce_defined(ReduceOp::And, ScalarType::Float32));
  CHECK_THROWS_AS(ptx_reduce(ReduceOp::Mul, ScalarType::Bool, {}), BackendError);
  for (size_t n : {size_t(0), size_t(1), size_t(2000)})
    for (int pattern = 0; pattern < 3; ++pattern)
      for (ReduceOp op : {ReduceOp::And, ReduceOp::Or, ReduceOp::Min, ReduceOp::Max}) {
        std::vector<uint8_t> v(n, pattern == 0 ? 0 : 2);  // all false, all true (2 counts)
        if (pattern == 2 && n)
          v[n - 1] = 0;  // one false at the end
        bool all = std::all_of(v.begin(), v.end(), [](uint8_t b) { return b != 0; });
        bool any = std::any_of(v.begin(), v.end(), [](uint8_t b) { return b != 0; });
        PtxModule m(ptx_reduce(op, ScalarType::Bool, {}));
        Scratch s;
        uint8_t out = 7;
        m.allow(v.data(), v.size());
        m.allow(s.partials.data(), s.partials.size() * 8);
        m.allow(&s.counter, 4);
        m.allow(&out, 1);
        uint64_t params[] = {
            n, reinterpret_cast<uint64_t>(v.data()), reinterpret_cast<uint64_t>(&out),
            reinterpret_cast<uint64_t>(s.partials.data()), reinterpret_cast<uint64_t>(&s.counter)};
        m.launch("ff_reduce", reduce_grid(n, 3).grid, kBuiltinBlock, params);
        bool want = (op == ReduceOp::And || op == ReduceOp::Min) ? all : any;
        INFO("n=" << n << " pattern " << pattern << " op " << int(op));
        CHECK(out == uint8_t(want));
      }
}

namespace {

template <class T>
void check_scan(bool exclusive, size_t n, unsigned max_blocks, bool in_place) {
  ScalarType t = scalar_type_of<T>;
  std::mt19937_64 g(n + 99);
  std::vector<T> v(n);
  for (auto& x : v)
    x = std::is_floating_point_v<T> ? T(int(g() % 9) - 4) : static_cast<T>(g());
  std::vector<T> want(n);
  T acc = T(0);
  for (size_t i = 0; i < n; ++i) {
    T next = wrap_add(acc, v[i]);
    want[i] = exclusive ? acc : next;
    acc = next;
  }
  PtxModule m(ptx_prefix_sum(t, exclusive, {}));
  BuiltinGrid grid = chunked_grid(n, max_blocks);
  Scratch s;
  std::vector<T> out(in_place ? 0 : n, T(77));
  T* dst = in_place ? v.data() : out.data();
  m.allow(v.data(), v.size() * sizeof(T));
  m.allow(out.data(), out.size() * sizeof(T));
  m.allow(s.partials.data(), s.partials.size() * 8);
  uint64_t p1[] = {n, reinterpret_cast<uint64_t>(v.data()),
                   reinterpret_cast<uint64_t>(s.partials.data()), grid.chunk};
  m.launch("ff_scan_partials", grid.grid, kBuiltinBlock, p1);
  uint64_t p2[] = {n, reinterpret_cast<uint64_t>(v.data()), reinterpret_cast<uint64_t>(dst),
                   reinterpret_cast<uint64_t>(s.partials.data()), grid.chunk};
  m.launch("ff_scan_apply", grid.grid, kBuiltinBlock, p2);
  std::vector<T> got(dst, dst + n);
  INFO(to_string(t) << (exclusive ? " exclusive" : " inclusive") << " n=" << n << " grid "
                    << grid.grid << " chunk " << grid.chunk << (in_place ? " in place" : ""));
  CHECK(got == want);
}

}  // namespace

TEST_CASE("prefix sum kernels: inclusive and exclusive, in place, over several blocks",
          "[cuda_codegen][builtins]") {
  for (size_t n : {size_t(0), size_t(1), size_t(7), size_t(256), size_t(1000), size_t(5003)})
    for (bool exclusive : {false, true}) {
      bool in_place = n % 2 == 1;
      check_scan<int32_t>(exclusive, n, 4, in_place);
      check_scan<uint32_t>(exclusive, n, 3, !in_place);
      check_scan<int64_t>(exclusive, n, 4, in_place);
      check_scan<uint64_t>(exclusive, n, 2, in_place);
      check_scan<float>(exclusive, n, 4, !in_place);
      check_scan<double>(exclusive, n, 4, in_place);
    }
  CHECK_THROWS_AS(ptx_prefix_sum(ScalarType::Bool, false, {}), BackendError);
}

TEST_CASE("compress kernels write the indices of true entries in order and their count",
          "[cuda_codegen][builtins]") {
  for (size_t n : {size_t(0), size_t(1), size_t(17), size_t(256), size_t(1000), size_t(10007)})
    for (int density : {0, 1, 50, 100}) {
      std::mt19937_64 g(n + density);
      std::vector<uint8_t> mask(n);
      std::vector<uint32_t> want;
      for (size_t i = 0; i < n; ++i) {
        mask[i] = int(g() % 100) < density ? uint8_t(1 + g() % 3) : 0;
        if (mask[i])
          want.push_back(uint32_t(i));
      }
      PtxModule m(ptx_compress({}));
      BuiltinGrid grid = chunked_grid(n, 4);
      std::vector<uint32_t> counts(kMaxBuiltinBlocks, 0xBAD), out(n + 1, 0xFFFFFFFF);
      uint64_t total = 12345;
      m.allow(mask.data(), mask.size());
      m.allow(counts.data(), counts.size() * 4);
      m.allow(out.data(), out.size() * 4);
      m.allow(&total, 8);
      uint64_t p1[] = {n, reinterpret_cast<uint64_t>(mask.data()),
                       reinterpret_cast<uint64_t>(counts.data()), grid.chunk};
      m.launch("ff_compress_count", grid.grid, kBuiltinBlock, p1);
      uint64_t p2[] = {n,
                       reinterpret_cast<uint64_t>(mask.data()),
                       reinterpret_cast<uint64_t>(out.data()),
                       reinterpret_cast<uint64_t>(counts.data()),
                       grid.chunk,
                       reinterpret_cast<uint64_t>(&total)};
      m.launch("ff_compress_write", grid.grid, kBuiltinBlock, p2);
      INFO("n=" << n << " density " << density << " grid " << grid.grid);
      REQUIRE(total == want.size());
      CHECK(std::vector<uint32_t>(out.begin(), out.begin() + long(total)) == want);
      CHECK(out[total] == 0xFFFFFFFF);  // nothing written past the count
    }
}

TEST_CASE("fill and copy kernels", "[cuda_codegen][builtins]") {
  for (unsigned size : {1u, 2u, 4u, 8u})
    for (size_t n : {size_t(0), size_t(1), size_t(1001)}) {
      std::vector<uint8_t> buf(n * size + 16, 0x11);
      PtxModule m(ptx_fill(size, {}));
      m.allow(buf.data(), n * size);
      uint64_t params[] = {n, reinterpret_cast<uint64_t>(buf.data()), 0x8877665544332211ull};
      m.launch("ff_fill", 2, kBuiltinBlock, params);
      for (size_t i = 0; i < n * size; ++i)
        REQUIRE(buf[i] == uint8_t(0x11 * (1 + i % size)));
      CHECK(buf[n * size] == 0x11);
    }
  CHECK_THROWS_AS(ptx_fill(3, {}), BackendError);
  for (size_t offset : {size_t(0), size_t(1), size_t(8)})
    for (size_t bytes : {size_t(0), size_t(5), size_t(64), size_t(8001)}) {
      std::vector<uint8_t> src(bytes + 16), dst(bytes + 16, 0);
      for (size_t i = 0; i < src.size(); ++i)
        src[i] = uint8_t(i * 7 + 3);
      PtxModule m(ptx_copy({}));
      m.allow(src.data() + offset, bytes);
      m.allow(dst.data() + offset, bytes);
      uint64_t params[] = {bytes, reinterpret_cast<uint64_t>(dst.data() + offset),
                           reinterpret_cast<uint64_t>(src.data() + offset)};
      m.launch("ff_copy", 3, kBuiltinBlock, params);
      INFO("offset " << offset << " bytes " << bytes);
      CHECK(std::equal(dst.begin() + long(offset), dst.begin() + long(offset + bytes),
                       src.begin() + long(offset)));
      CHECK(dst[offset + bytes] == 0);
    }
}

TEST_CASE("the reference interpreter refuses what it does not understand", "[cuda_codegen]") {
  const std::string head = ".version 6.4\n.target sm_75\n.address_size 64\n";
  CHECK_THROWS_AS(PtxModule(head + ".visible .entry k()\n{\n\ttex.1d.v4.f32 %r1, [%rd1];\n}\n"),
                  ffcuda::PtxError);
  PtxModule m(head +
              ".visible .entry k(\n\t.param .u64 p\n)\n{\n\t.reg .b64 %rd<3>;\n"
              "\tld.param.u64 %rd0, [p];\n\tld.global.u32 %rd1, [%rd0];\n\tret;\n}\n");
  uint32_t word = 5;
  uint64_t params[] = {reinterpret_cast<uint64_t>(&word)};
  CHECK_THROWS_AS(m.launch("k", 1, 1, params), ffcuda::PtxError);  // not allowed: no allow()
  m.allow(&word, 4);
  CHECK_NOTHROW(m.launch("k", 1, 1, params));
}

TEST_CASE("the reference interpreter's atomics: add, and, or, xor, min, max, exch and cas",
          "[cuda_codegen]") {
  // 64 threads in 2 blocks; thread t (0..63) combines t - 20 (s32 min/max), 1 << (t % 32)
  // (or), ~(1 << (t % 32)) (and), t (xor, u32 max), exchanges t into a word, and increments a
  // counter with a compare-and-swap loop.
  const std::string ptx = R"(.version 6.4
.target sm_75
.address_size 64
.visible .entry k(
	.param .u64 p
)
{
	.reg .pred %p<2>;
	.reg .b32 %r<12>;
	.reg .b64 %rd<4>;
	ld.param.u64 %rd0, [p];
	cvta.to.global.u64 %rd0, %rd0;
	mov.u32 %r0, %tid.x;
	mov.u32 %r1, %ctaid.x;
	mov.u32 %r2, %ntid.x;
	mad.lo.u32 %r0, %r1, %r2, %r0;
	sub.s32 %r3, %r0, 20;
	red.global.min.s32 [%rd0], %r3;
	red.global.max.s32 [%rd0+4], %r3;
	and.b32 %r4, %r0, 31;
	shl.b32 %r5, 1, %r4;
	red.global.or.b32 [%rd0+8], %r5;
	not.b32 %r6, %r5;
	red.global.and.b32 [%rd0+12], %r6;
	red.global.xor.b32 [%rd0+16], %r0;
	red.global.max.u32 [%rd0+20], %r0;
	atom.global.exch.b32 %r7, [%rd0+24], %r0;
	ld.global.u32 %r8, [%rd0+28];
LOOP:
	add.s32 %r9, %r8, 1;
	atom.global.cas.b32 %r10, [%rd0+28], %r8, %r9;
	setp.ne.s32 %p0, %r10, %r8;
	mov.u32 %r8, %r10;
	@%p0 bra LOOP;
	ret;
}
)";
  PtxModule m(ptx);
  int32_t words[8] = {0, 0, 0, -1, 0, 0, -7, 100};
  m.allow(words, sizeof words);
  uint64_t params[] = {reinterpret_cast<uint64_t>(words)};
  m.launch("k", 2, 32, params);
  uint32_t xor_all = 0;
  for (uint32_t t = 0; t < 64; ++t)
    xor_all ^= t;
  CHECK(words[0] == -20);  // min(0, -20 .. 43)
  CHECK(words[1] == 43);
  CHECK(static_cast<uint32_t>(words[2]) == 0xFFFFFFFFu);
  CHECK(words[3] == 0);
  CHECK(static_cast<uint32_t>(words[4]) == xor_all);
  CHECK(words[5] == 63);
  CHECK((words[6] >= 0 && words[6] < 64));  // the last exchange's value
  CHECK(words[7] == 164);                   // 100 + one increment per thread
  // red has no exch or cas, and the forms ptxas refuses are refused here too.
  for (const char* form : {"red.global.exch.b32 [%rd0], %r0", "red.global.and.u32 [%rd0], %r0",
                           "red.global.min.b32 [%rd0], %r0", "red.global.add.s64 [%rd0], %rd1",
                           "red.global.min.f32 [%rd0], %r0",
                           "atom.global.cas.u32 %r0, [%rd0], "
                           "%r1, %r1",
                           "atom.global.add.u32 [%rd0], %r0"}) {
    INFO(form);
    CHECK_THROWS_AS(PtxModule(".version 6.4\n.target sm_75\n.address_size 64\n.visible .entry "
                              "k()\n{\n\t.reg .b32 %r<2>;\n\t.reg .b64 %rd<2>;\n\t" +
                              std::string(form) + ";\n\tret;\n}\n"),
                    ffcuda::PtxError);
  }
}

TEST_CASE("round and trunc are exact, halfway cases of round away from zero",
          "[cuda_codegen][math]") {
  auto check = [&]<class T>() {
    using L = std::numeric_limits<T>;
    std::vector<T> in = {T(0.5),
                         T(-0.5),
                         T(1.5),
                         T(-2.5),
                         T(0.49),
                         T(-0.0),
                         T(0),
                         L::infinity(),
                         -L::infinity(),
                         L::quiet_NaN(),
                         L::max(),
                         L::denorm_min(),
                         T(1) / L::epsilon() - T(0.5),
                         T(0.5) - L::epsilon() / 4,
                         T(-7.75)};
    std::vector<T> r = run_math(IrOp::Round, in), t = run_math(IrOp::Trunc, in);
    for (size_t i = 0; i < in.size(); ++i) {
      INFO(in[i]);
      T want_r = std::round(in[i]), want_t = std::trunc(in[i]);
      CHECK((std::isnan(want_r) ? std::isnan(r[i]) : r[i] == want_r));
      CHECK(std::signbit(r[i]) == std::signbit(want_r));
      CHECK((std::isnan(want_t) ? std::isnan(t[i]) : t[i] == want_t));
      CHECK(std::signbit(t[i]) == std::signbit(want_t));
    }
  };
  check.operator()<float>();
  check.operator()<double>();
}

namespace {

// Sweep inputs for the math functions after the first four: edge values (both types' overflow
// and underflow thresholds, the atan reduction's band edges, ...), then in turn random finite
// bit patterns, magnitudes from 1e-20 to 1e20 of both signs, and uniform values in [lo, hi].
template <class T>
std::vector<T> sweep_inputs(size_t n, double lo, double hi, uint64_t seed) {
  using L = std::numeric_limits<T>;
  using Bits = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
  std::vector<T> v = {T(0),
                      T(-0.0),
                      T(1),
                      T(-1),
                      T(0.5),
                      T(-0.5),
                      T(2),
                      T(-2),
                      L::infinity(),
                      -L::infinity(),
                      L::quiet_NaN(),
                      L::denorm_min(),
                      -L::denorm_min(),
                      L::min(),
                      L::max(),
                      -L::max()};
  for (double x :
       {88.72,   89.5,    -103.9, 128.0,  -149.0, -150.0,  709.78, 710.4,    -745.1,   1024.0,
        -1074.0, -1075.0, 1e-30,  -1e-30, 1e-300, -1e-300, 0.4375, 0.6875,   1.1875,   2.4375,
        3.0,     3.9,     4.0,    27.0,   0x1p28, 0.999,   1.001,  0.999999, 1.000001, 1e200})
    v.push_back(static_cast<T>(x));
  std::mt19937_64 g(seed);
  while (v.size() < n) {
    if (v.size() % 3 == 0) {
      T x = std::bit_cast<T>(static_cast<Bits>(g()));
      if (std::isfinite(x))
        v.push_back(x);
    } else if (v.size() % 3 == 1) {
      double mag = std::pow(10.0, std::uniform_real_distribution<double>(-20, 20)(g));
      v.push_back(static_cast<T>(g() & 1 ? mag : -mag));
    } else {
      v.push_back(static_cast<T>(std::uniform_real_distribution<double>(lo, hi)(g)));
    }
  }
  return v;
}

// Runs op over the inputs on the interpreter and checks every result within `bound` ulp of the
// long double reference (specials exactly: ulp_error); FF_MATH_REPORT prints the worst.
template <class T, class Ref>
void check_sweep(IrOp op, const std::string& what, const std::vector<T>& x, const std::vector<T>* y,
                 const Ref& ref, double bound) {
  std::vector<T> out = run_math(op, x, y);
  size_t bad = 0;
  double worst = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    long double want = y ? ref(x[i], (*y)[i]) : ref(x[i], 0.0L);
    double err = ulp_error(out[i], want);
    worst = std::max(worst, err);
    if (err > bound && bad++ < 5) {
      std::ostringstream args;
      args << std::hexfloat << x[i];
      if (y)
        args << ", " << (*y)[i];
      UNSCOPED_INFO(to_string(op) << "(" << args.str() << ") = " << std::hexfloat << out[i]
                                  << ", exact " << static_cast<double>(want) << std::defaultfloat
                                  << " (" << err << " ulp)");
    }
  }
  const char* type = sizeof(T) == 4 ? "f32" : "f64";
  if (std::getenv("FF_MATH_REPORT"))
    WARN(to_string(op) << "." << type << " " << what << ": worst " << worst << " ulp over "
                       << x.size() << " inputs");
  INFO(to_string(op) << "." << type << " " << what);
  CHECK(bad == 0);
}

// Every function after the first four in type T within `bound` ulp: the one-argument ones over
// sweep_inputs of their main range (per type: where the results stay finite), atan2 and pow
// over random pairs and every pair of edge values, pow also on bases of every magnitude with
// exponents that keep the result finite, negative bases with integer exponents and bases near
// 1 with large exponents.
template <class T>
void check_math_sweeps(double bound) {
  using L = std::numeric_limits<T>;
  const bool f32 = sizeof(T) == 4;
  const char* env = std::getenv("FF_MATH_SAMPLES");
  const size_t n = env && *env ? std::strtoull(env, nullptr, 10) : 3000;
  using Ref = long double (*)(long double, long double);

  struct Fn {
    IrOp op;
    Ref ref;
    double lo32, hi32, lo64, hi64;
  };

  const Fn fns[] = {
      {IrOp::Tan, [](long double x, long double) { return std::tan(x); }, -1e4, 1e4, -1e4, 1e4},
      {IrOp::Asin, [](long double x, long double) { return std::asin(x); }, -1, 1, -1, 1},
      {IrOp::Acos, [](long double x, long double) { return std::acos(x); }, -1, 1, -1, 1},
      {IrOp::Atan, [](long double x, long double) { return std::atan(x); }, -10, 10, -10, 10},
      {IrOp::Sinh, [](long double x, long double) { return std::sinh(x); }, -90, 90, -5, 5},
      {IrOp::Cosh, [](long double x, long double) { return std::cosh(x); }, -90, 90, -5, 5},
      {IrOp::Tanh, [](long double x, long double) { return std::tanh(x); }, -10, 10, -3, 3},
      {IrOp::Asinh, [](long double x, long double) { return std::asinh(x); }, -100, 100, -3, 3},
      {IrOp::Acosh, [](long double x, long double) { return std::acosh(x); }, 1, 100, 1, 4},
      {IrOp::Atanh, [](long double x, long double) { return std::atanh(x); }, -1, 1, -1, 1},
      {IrOp::Exp2, [](long double x, long double) { return std::exp2(x); }, -151, 129, -1080, 1030},
      {IrOp::Log2, [](long double x, long double) { return std::log2(x); }, 0, 100, 0, 4},
      {IrOp::Erf, [](long double x, long double) { return std::erf(x); }, -5, 5, -7, 7},
      {IrOp::Cbrt, [](long double x, long double) { return std::cbrt(x); }, -100, 100, -30, 30},
  };
  for (const Fn& f : fns) {
    std::vector<T> in = sweep_inputs<T>(n, f32 ? f.lo32 : f.lo64, f32 ? f.hi32 : f.hi64,
                                        (f32 ? 31 : 41) + static_cast<unsigned>(f.op));
    check_sweep<T>(f.op, "sweep", in, nullptr, f.ref, bound);
  }
  std::vector<T> e = sweep_inputs<T>(0, 0, 0, 0), ex, ey;
  for (T a : e)
    for (T b : e) {
      ex.push_back(a);
      ey.push_back(b);
    }
  std::vector<T> rx = sweep_inputs<T>(n, -10, 10, 5), ry = sweep_inputs<T>(n, -10, 10, 6);
  const double max_log = std::log(static_cast<double>(L::max()));
  const double min_log = std::log(static_cast<double>(L::denorm_min()));
  const double decades = L::max_exponent10 - 8;  // bases 10^-30..10^30 (float), 10^-300.. (double)
  std::vector<T> bx, by, nx, ny, cx, cy;
  std::mt19937_64 g(77);
  for (size_t i = 0; i < n; ++i) {
    double base = std::pow(10.0, std::uniform_real_distribution<double>(-decades, decades)(g));
    double target = std::uniform_real_distribution<double>(min_log, max_log)(g);
    bx.push_back(static_cast<T>(base));
    by.push_back(static_cast<T>(bx.back() == 1 ? 1.0 : target / std::log(double(bx.back()))));
    nx.push_back(static_cast<T>(-std::uniform_real_distribution<double>(0.1, 10)(g)));
    ny.push_back(static_cast<T>(static_cast<int>(g() % 201) - 100));
    cx.push_back(static_cast<T>(std::uniform_real_distribution<double>(0.999, 1.001)(g)));
    cy.push_back(
        static_cast<T>(std::uniform_real_distribution<double>(-1000 * max_log, 1000 * max_log)(g)));
  }
  const Ref atan2_ref = [](long double y, long double x) { return std::atan2(y, x); };
  const Ref pow_ref = [](long double x, long double y) { return std::pow(x, y); };
  check_sweep<T>(IrOp::Atan2, "random pairs", ry, &rx, atan2_ref, bound);
  check_sweep<T>(IrOp::Atan2, "edge pairs", ey, &ex, atan2_ref, bound);
  check_sweep<T>(IrOp::Pow, "random pairs", rx, &ry, pow_ref, bound);
  check_sweep<T>(IrOp::Pow, "edge pairs", ex, &ey, pow_ref, bound);
  check_sweep<T>(IrOp::Pow, "finite results", bx, &by, pow_ref, bound);
  check_sweep<T>(IrOp::Pow, "negative base, integer exponent", nx, &ny, pow_ref, bound);
  check_sweep<T>(IrOp::Pow, "base near 1", cx, &cy, pow_ref, bound);
}

}  // namespace

// Float32 runs the Float64 routines and rounds once: within 1 ulp (measured 0.5).
TEST_CASE("float32 tan ... cbrt, atan2 and pow: within 1 ulp of long double, specials as C",
          "[cuda_codegen][math]") {
  check_math_sweeps<float>(1.0);
}

TEST_CASE("float64 tan ... erf, atan2 and pow: within 4 ulp of long double, specials as C",
          "[cuda_codegen][math]") {
  check_math_sweeps<double>(4.0);
}
