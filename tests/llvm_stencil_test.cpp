// The LLVM backend's two fast paths for stencils (docs/kernel-ir.md, "How the LLVM backend
// compiles it"), on hand-built kernels run directly through LlvmJit, every loop style and tier:
//   - gathers at "lane index + uniform" (a literal or a scalar offset, casts, wrapping 32-bit
//     indices) give exactly what the same gather at a computed index buffer gives, and plain C++;
//   - they read nothing outside the source: guard pages (PROT_NONE) right before and after it
//     turn any stray read into SIGSEGV;
//   - unsigned 32-bit division and remainder by a uniform, non-constant divisor (multiply-high
//     by a magic number) are exact for edge and random numerators and divisors, 0 included.
#include <sys/mman.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "backend/llvm/llvm_jit.h"
#include "support/host_values.h"

namespace {

using ff_test::bits_of;
using ff_test::Bool8;
using ff_test::type_of;

using namespace ff;
using namespace ff::llvm_backend;

struct Builder {
  KernelIR ir;

  uint32_t param(ParamKind kind, ScalarType t) {
    ir.params.push_back({kind, t});
    return static_cast<uint32_t>(ir.params.size() - 1);
  }

  uint32_t emit(IrOp op, ScalarType t, uint32_t a = kNoOperand, uint32_t b = kNoOperand,
                uint32_t c = kNoOperand, uint32_t d = kNoOperand) {
    return ir.emit(op, t, {a, b, c, d, kNoOperand}, 0, 0);
  }

  uint32_t literal(ScalarType t, uint64_t bits) {
    return ir.emit(IrOp::Literal, t, {kNoOperand, kNoOperand, kNoOperand, kNoOperand, kNoOperand},
                   bits, 0);
  }

  KernelIR finish() {
    ir.finalize();
    return ir;
  }
};

// Every loop style, both tiers: (jit, tier) pairs to compile with.
struct Config {
  LoopStyle style;
  Tier tier;
};

std::vector<Config> configs() {
  std::vector<Config> c;
  for (LoopStyle s : {LoopStyle::VectorSplitTail, LoopStyle::VectorMasked, LoopStyle::Scalar})
    for (Tier t : {Tier::Quick, Tier::Optimized})
      c.push_back({s, t});
  return c;
}

LlvmJit& jit_for(LoopStyle style) {
  auto make = [](LoopStyle s) {
    JitOptions opt;
    opt.loop_style = s;
    if (s == LoopStyle::Scalar)
      opt.passes = "function(loop-vectorize,instcombine,simplifycfg)";
    return opt;
  };
  static LlvmJit split(make(LoopStyle::VectorSplitTail));
  static LlvmJit masked(make(LoopStyle::VectorMasked));
  static LlvmJit scalar(make(LoopStyle::Scalar));
  return style == LoopStyle::VectorSplitTail ? split
         : style == LoopStyle::VectorMasked  ? masked
                                             : scalar;
}

// Compiles `ir` once per loop style and tier (the sweeps below reuse a few kernels many times).
const JitCode& compiled(const Config& cfg, const KernelIR& ir) {
  static std::map<std::string, std::unique_ptr<JitCode>> cache;
  std::string key =
      std::to_string(int(cfg.style)) + "/" + std::to_string(int(cfg.tier)) + "/" + ir.hash.to_hex();
  auto& code = cache[key];
  if (!code)
    code = jit_for(cfg.style).compile(ir, cfg.tier);
  return *code;
}

// Runs `code` over [0, n) in two pieces split at `split` (a begin that is no multiple of the
// vector width, as the thread pool's blocks are not for every kernel).
void run(const JitCode& code, size_t n, const std::vector<uint64_t>& args, size_t split = 5) {
  split = std::min(split, n);
  if (split > 0)
    code.entry()(0, split, args.data());
  if (n > split)
    code.entry()(split, n, args.data());
}

// How an offset is applied to the lane index.
enum class Form { AddLiteral, SubLiteral, AddScalar, SubScalar, CastAddLiteral, WidenSubLiteral };

const char* name(Form f) {
  switch (f) {
    case Form::AddLiteral:
      return "i + literal";
    case Form::SubLiteral:
      return "i - literal";
    case Form::AddScalar:
      return "i + scalar";
    case Form::SubScalar:
      return "i - scalar";
    case Form::CastAddLiteral:
      return "I(uint64 i) + literal";
    case Form::WidenSubLiteral:
      return "I(int32 i) - literal";
  }
  return "?";
}

// The index of element `i` as the kernel computes it for `form` and offset `off`, widened to
// 64 bits as a gather does (sign-extended for signed I).
template <class I>
uint64_t host_index(Form form, size_t i, uint64_t off) {
  using U = std::make_unsigned_t<I>;
  auto widen = [](U u) {
    return std::is_signed_v<I> ? static_cast<uint64_t>(static_cast<int64_t>(static_cast<I>(u)))
                               : static_cast<uint64_t>(u);
  };
  switch (form) {
    case Form::AddLiteral:
    case Form::AddScalar:
    case Form::CastAddLiteral:
      return widen(static_cast<U>(static_cast<U>(i) + static_cast<U>(off)));
    case Form::SubLiteral:
    case Form::SubScalar:
      return widen(static_cast<U>(static_cast<U>(i) - static_cast<U>(off)));
    case Form::WidenSubLiteral: {
      // int32 index, cast to I (sign-extended or truncated), then minus off in I.
      auto i32 = static_cast<int32_t>(static_cast<uint32_t>(i));
      auto v = static_cast<U>(static_cast<I>(i32));
      return widen(static_cast<U>(v - static_cast<U>(off)));
    }
  }
  return 0;
}

// out[i] = gather(src, index, mask[i]) of element type T with index type I, the index being
// either computed from the lane index (`form` with offset `off`: a literal baked in, or the
// scalar parameter 3 for the Scalar forms) or, when `form` is null, loaded from an index buffer
// (what a gather at an arbitrary index does). Parameters: src, mask, index buffer, offset
// scalar, bound, out.
template <class T, class I>
KernelIR gather_kernel(const Form* form, uint64_t off) {
  Builder k;
  ScalarType it = type_of<I>();
  uint32_t psrc = k.param(ParamKind::BufferIn, type_of<T>());
  uint32_t pmask = k.param(ParamKind::BufferIn, ScalarType::Bool);
  uint32_t pidx = k.param(ParamKind::BufferIn, it);
  uint32_t poff = k.param(ParamKind::Scalar, it);
  uint32_t pbound = k.param(ParamKind::Scalar, ScalarType::UInt64);
  uint32_t pout = k.param(ParamKind::BufferOut, type_of<T>());
  uint32_t idx = 0;
  if (!form) {
    idx = k.emit(IrOp::Load, it, pidx);
  } else {
    switch (*form) {
      case Form::AddScalar:
      case Form::SubScalar:
        idx = k.emit(*form == Form::AddScalar ? IrOp::Add : IrOp::Sub, it, k.emit(IrOp::Index, it),
                     k.emit(IrOp::Scalar, it, poff));
        break;
      case Form::AddLiteral:
        idx = k.emit(IrOp::Add, it, k.literal(it, off), k.emit(IrOp::Index, it));
        break;
      case Form::SubLiteral:
        idx = k.emit(IrOp::Sub, it, k.emit(IrOp::Index, it), k.literal(it, off));
        break;
      case Form::CastAddLiteral: {
        uint32_t i = k.emit(IrOp::Cast, it, k.emit(IrOp::Index, ScalarType::UInt64));
        idx = k.emit(IrOp::Add, it, i, k.literal(it, off));
        break;
      }
      case Form::WidenSubLiteral: {
        // A widening cast: not "lane index + uniform" for the code generator (the plain
        // gather), but the same values.
        uint32_t i = k.emit(IrOp::Cast, it, k.emit(IrOp::Index, ScalarType::Int32));
        idx = k.emit(IrOp::Sub, it, i, k.literal(it, off));
        break;
      }
    }
  }
  uint32_t mask = k.emit(IrOp::Load, ScalarType::Bool, pmask);
  uint32_t g = k.emit(IrOp::Gather, type_of<T>(), psrc, idx, mask, pbound);
  k.emit(IrOp::Store, type_of<T>(), pout, g);
  return k.finish();
}

template <class T>
T value_at(size_t i) {
  if constexpr (std::is_same_v<T, Bool8>)
    return static_cast<Bool8>((i * 7 + 3) % 5 < 2);
  else
    return static_cast<T>(static_cast<T>(i % 1000) + T(1));  // never 0: a read shows
}

// Checks the stencil kernel of (form, off) on n elements over a source of `src_n` elements with
// each mask against plain C++ and the computed-index kernel; `width` the grid width of the
// interior mask.
template <class T, class I>
void check_gathers(const Config& cfg, Form form, uint64_t off, size_t n, size_t src_n,
                   size_t width) {
  bool literal = form != Form::AddScalar && form != Form::SubScalar;
  const JitCode& stencil = compiled(cfg, gather_kernel<T, I>(&form, literal ? off : 0));
  const JitCode& plain = compiled(cfg, gather_kernel<T, I>(nullptr, 0));
  std::vector<T> src(src_n);
  for (size_t i = 0; i < src_n; ++i)
    src[i] = value_at<T>(i);
  std::vector<I> idx(n);
  for (size_t i = 0; i < n; ++i)
    idx[i] = static_cast<I>(host_index<I>(form, i, off));
  std::mt19937 rng(static_cast<uint32_t>(n * 31 + off));
  for (int m = 0; m < 3; ++m) {
    std::vector<Bool8> mask(n, 1);
    for (size_t i = 0; i < n; ++i) {
      if (m == 1) {
        size_t x = i % width, y = i / width, rows = (n + width - 1) / width;
        mask[i] = x > 0 && x + 1 < width && y > 0 && y + 1 < rows;
      } else if (m == 2) {
        mask[i] = rng() % 3 != 0;
      }
    }
    INFO(name(form) << " off=" << static_cast<int64_t>(off) << " n=" << n << " src=" << src_n
                    << " width=" << width << " mask "
                    << (m == 0   ? "all"
                        : m == 1 ? "interior"
                                 : "random")
                    << " style " << int(cfg.style) << " tier " << int(cfg.tier));
    std::vector<T> got(n, T(7)), want_plain(n, T(7));
    std::vector<uint64_t> args = {
        bits_of(src.data()), bits_of(mask.data()), bits_of(idx.data()), off, src_n,
        bits_of(got.data())};
    run(stencil, n, args);
    args[5] = bits_of(want_plain.data());
    run(plain, n, args);
    size_t bad = 0, bad_plain = 0;
    for (size_t i = 0; i < n; ++i) {
      uint64_t j = host_index<I>(form, i, off);
      T want = mask[i] && j < src_n ? src[j] : T(0);
      bad += got[i] != want;
      bad_plain += want_plain[i] != want;
    }
    CHECK(bad == 0);
    CHECK(bad_plain == 0);
  }
}

template <class I>
constexpr uint64_t minus(uint64_t v) {
  return static_cast<uint64_t>(static_cast<std::make_unsigned_t<I>>(0 - v));
}

}  // namespace

TEST_CASE("stencil gathers equal gathers at computed indices and plain C++", "[llvm][stencil]") {
  for (const Config& cfg : configs()) {
    auto each_index_type = [&]<class I>() {
      using U = std::make_unsigned_t<I>;
      for (size_t n : {size_t(1), size_t(2), size_t(7), size_t(13), size_t(61), size_t(1021)}) {
        for (size_t width : {size_t(1), size_t(3), size_t(7), size_t(16), n}) {
          // offsets +-1 and +-width, as a literal and as a scalar
          check_gathers<float, I>(cfg, Form::SubLiteral, 1, n, n, width);
          check_gathers<float, I>(cfg, Form::AddLiteral, 1, n, n, width);
          check_gathers<float, I>(cfg, Form::SubScalar, width, n, n, width);
          check_gathers<float, I>(cfg, Form::AddScalar, width, n, n, width);
        }
        // a source shorter and longer than the launch; -1 as "+ (2^bits - 1)"
        check_gathers<float, I>(cfg, Form::AddScalar, minus<I>(1), n, n / 2 + 1, 7);
        check_gathers<float, I>(cfg, Form::SubScalar, 3, n, n + 40, 7);
        // the index wraps in the middle of a vector (32-bit types past their max)
        check_gathers<float, I>(cfg, Form::AddScalar, uint64_t(U(~U(0) - 5)), n, n, 7);
        check_gathers<float, I>(cfg, Form::AddScalar,
                                uint64_t(U(std::numeric_limits<I>::max() - 9)), n, n + 20, 7);
      }
      check_gathers<float, I>(cfg, Form::CastAddLiteral, 5, 1021, 1000, 7);
      check_gathers<float, I>(cfg, Form::WidenSubLiteral, 3, 1021, 1000, 7);
    };
    each_index_type.template operator()<uint32_t>();
    each_index_type.template operator()<int32_t>();
    each_index_type.template operator()<uint64_t>();
    each_index_type.template operator()<int64_t>();
    // other element types, Bool (bytes) included
    check_gathers<double, uint32_t>(cfg, Form::SubScalar, 61, 1021, 1021, 61);
    check_gathers<Bool8, int32_t>(cfg, Form::SubLiteral, 1, 1021, 1021, 61);
    check_gathers<Bool8, uint32_t>(cfg, Form::AddScalar, 61, 1021, 1021, 61);
    check_gathers<int64_t, int64_t>(cfg, Form::AddLiteral, 1, 1021, 1021, 61);
  }
}

namespace {

// A source of n elements of T whose first element starts a page (`at_start`) or whose last
// element ends one, between two PROT_NONE pages: any read outside it is a SIGSEGV.
template <class T>
class GuardedSource {
 public:
  GuardedSource(size_t n, bool at_start) {
    page_ = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    size_t bytes = n * sizeof(T);
    size_t pages = std::max<size_t>(1, (bytes + page_ - 1) / page_);
    total_ = (pages + 2) * page_;
    base_ = mmap(nullptr, total_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    REQUIRE(base_ != MAP_FAILED);
    char* b = static_cast<char*>(base_);
    REQUIRE(mprotect(b, page_, PROT_NONE) == 0);
    REQUIRE(mprotect(b + (pages + 1) * page_, page_, PROT_NONE) == 0);
    char* first = b + page_;
    data_ = reinterpret_cast<T*>(at_start ? first : first + pages * page_ - bytes);
    for (size_t i = 0; i < n; ++i)
      data_[i] = value_at<T>(i);
  }

  ~GuardedSource() { munmap(base_, total_); }

  GuardedSource(const GuardedSource&) = delete;
  GuardedSource& operator=(const GuardedSource&) = delete;

  T* data() const { return data_; }

 private:
  size_t page_ = 0, total_ = 0;
  void* base_ = nullptr;
  T* data_ = nullptr;
};

template <class T, class I>
void check_guarded(const Config& cfg, size_t n, size_t width, bool at_start) {
  GuardedSource<T> src(n, at_start);
  std::vector<I> unused(1);
  std::mt19937 rng(static_cast<uint32_t>(n + width));
  for (int m = 0; m < 3; ++m) {
    std::vector<Bool8> mask(n, 1);
    for (size_t i = 0; i < n; ++i) {
      size_t x = i % width, y = i / width, rows = (n + width - 1) / width;
      if (m == 1)
        mask[i] = x > 0 && x + 1 < width && y > 0 && y + 1 < rows;
      if (m == 2)
        mask[i] = rng() % 2 != 0;
    }
    for (auto [form, off] : {std::pair{Form::SubLiteral, uint64_t(1)},
                             {Form::AddLiteral, uint64_t(1)},
                             {Form::SubScalar, uint64_t(width)},
                             {Form::AddScalar, uint64_t(width)}}) {
      INFO(name(form) << " off=" << off << " n=" << n << " width=" << width
                      << (at_start ? " source starts a page" : " source ends a page") << " mask "
                      << m << " style " << int(cfg.style) << " tier " << int(cfg.tier));
      bool literal = form == Form::SubLiteral || form == Form::AddLiteral;
      const JitCode& code = compiled(cfg, gather_kernel<T, I>(&form, literal ? off : 0));
      std::vector<T> got(n, T(7));
      run(code, n,
          {bits_of(src.data()), bits_of(mask.data()), bits_of(unused.data()), off, n,
           bits_of(got.data())});
      size_t bad = 0;
      for (size_t i = 0; i < n; ++i) {
        uint64_t j = host_index<I>(form, i, off);
        bad += got[i] != (mask[i] && j < n ? src.data()[j] : T(0));
      }
      CHECK(bad == 0);
    }
  }
}

}  // namespace

TEST_CASE("stencil gathers read nothing outside the source (guard pages)", "[llvm][stencil]") {
  for (const Config& cfg : configs()) {
    for (bool at_start : {false, true}) {
      for (size_t n : {size_t(1), size_t(2), size_t(7), size_t(61), size_t(1021), size_t(1024),
                       size_t(4096 + 3)}) {
        for (size_t width : {size_t(1), size_t(7), size_t(32)}) {
          check_guarded<float, uint32_t>(cfg, n, width, at_start);
          check_guarded<float, int32_t>(cfg, n, width, at_start);
          check_guarded<double, int64_t>(cfg, n, width, at_start);
          check_guarded<Bool8, uint64_t>(cfg, n, width, at_start);
        }
      }
    }
  }
}

namespace {

// The divisor of the division kernels.
enum class Divisor { Scalar, Broadcast, ScalarPlusOne };

// q[i] = n[i] / d, r[i] = n[i] % d (UInt32), d uniform: a scalar, a broadcast buffer, or
// scalar + 1 (an expression of uniforms). Parameters: n, d scalar, d buffer, q, r.
KernelIR division_kernel(Divisor divisor, bool index_numerator) {
  Builder k;
  const ScalarType u32 = ScalarType::UInt32;
  uint32_t pn = k.param(ParamKind::BufferIn, u32);
  uint32_t pd = k.param(ParamKind::Scalar, u32);
  uint32_t pdb = k.param(ParamKind::BufferIn, u32);
  uint32_t pq = k.param(ParamKind::BufferOut, u32);
  uint32_t pr = k.param(ParamKind::BufferOut, u32);
  uint32_t n = index_numerator ? k.emit(IrOp::Index, u32) : k.emit(IrOp::Load, u32, pn);
  uint32_t d = 0;
  switch (divisor) {
    case Divisor::Scalar:
      d = k.emit(IrOp::Scalar, u32, pd);
      break;
    case Divisor::Broadcast:
      d = k.emit(IrOp::LoadBroadcast, u32, pdb);
      break;
    case Divisor::ScalarPlusOne:
      d = k.emit(IrOp::Add, u32, k.emit(IrOp::Scalar, u32, pd), k.literal(u32, 1));
      break;
  }
  k.emit(IrOp::Store, u32, pq, k.emit(IrOp::Div, u32, n, d));
  k.emit(IrOp::Store, u32, pr, k.emit(IrOp::Mod, u32, n, d));
  return k.finish();
}

std::vector<uint32_t> test_divisors() {
  std::vector<uint32_t> d = {0,           1,           2,           3,           5,
                             6,           7,           10,          11,          25,
                             100,         641,         1000,        2047,        2048,
                             2049,        6700417,     0x7FFFFFFFu, 0x80000000u, 0x80000001u,
                             0xFFFFFFFEu, 0xFFFFFFFFu, 0xAAAAAAABu, 0x55555555u};
  for (int k = 1; k < 32; ++k) {
    uint32_t p = uint32_t{1} << k;
    d.insert(d.end(), {p - 1, p, p + 1});
  }
  std::mt19937 rng(12345);
  for (int k = 0; k < 60; ++k) {
    d.push_back(rng());
    d.push_back(rng() >> (rng() % 32));
  }
  return d;
}

}  // namespace

TEST_CASE("unsigned division and remainder by a uniform divisor are exact", "[llvm][stencil]") {
  const std::vector<uint32_t> divisors = test_divisors();
  std::mt19937 rng(777);
  std::vector<uint32_t> random_n(600);
  for (uint32_t& v : random_n)
    v = rng() >> (rng() % 32);
  for (const Config& cfg : configs()) {
    for (Divisor form : {Divisor::Scalar, Divisor::Broadcast, Divisor::ScalarPlusOne}) {
      const JitCode& code = compiled(cfg, division_kernel(form, false));
      for (uint32_t d : divisors) {
        std::vector<uint32_t> n = random_n;
        for (uint32_t base :
             {0u, 1u, d - 1, d, d + 1, 2 * d - 1, 2 * d, 3 * d + 2, 0x7FFFFFFFu, 0x80000000u,
              0xFFFFFFFEu, 0xFFFFFFFFu, d * (0xFFFFFFFFu / std::max(d, 1u))})
          n.push_back(base);
        std::vector<uint32_t> q(n.size()), r(n.size());
        uint32_t d_arg = form == Divisor::ScalarPlusOne ? d - 1 : d;
        run(code, n.size(),
            {bits_of(n.data()), d_arg, bits_of(&d_arg), bits_of(q.data()), bits_of(r.data())});
        size_t bad = 0;
        for (size_t i = 0; i < n.size(); ++i) {
          // A zero divisor divides by 1 (docs/kernel-ir.md): quotient n, remainder 0.
          uint32_t want_q = d == 0 ? n[i] : n[i] / d, want_r = d == 0 ? 0 : n[i] % d;
          if (q[i] != want_q || r[i] != want_r) {
            if (bad++ == 0)
              FAIL_CHECK(n[i] << " / " << d << ": got " << q[i] << " rem " << r[i] << ", expected "
                              << want_q << " rem " << want_r << " (divisor form " << int(form)
                              << ", style " << int(cfg.style) << ", tier " << int(cfg.tier) << ")");
          }
        }
        CHECK(bad == 0);
      }
    }
    // The lane index as numerator (arange(n) % d, arange(n) / d), from a begin that is no
    // multiple of the vector width.
    const JitCode& code = compiled(cfg, division_kernel(Divisor::Scalar, true));
    for (uint32_t d : {0u, 1u, 3u, 7u, 64u, 61u, 2048u, 0x80000000u}) {
      size_t count = 3001;
      std::vector<uint32_t> q(count), r(count);
      run(code, count, {0, d, 0, bits_of(q.data()), bits_of(r.data())}, 13);
      size_t bad = 0;
      for (size_t i = 0; i < count; ++i) {
        auto v = static_cast<uint32_t>(i);
        bad += q[i] != (d == 0 ? v : v / d) || r[i] != (d == 0 ? 0 : v % d);
      }
      INFO("arange % " << d << ", style " << int(cfg.style) << ", tier " << int(cfg.tier));
      CHECK(bad == 0);
    }
  }
}

TEST_CASE("stencil gathers whose 32-bit index wraps inside a vector, at huge bounds",
          "[llvm][stencil]") {
  // The vector load applies only when the lanes' widened indices are consecutive; a 32-bit index
  // that wraps past 2^32 (unsigned) or 2^31 (signed), or a widened one whose 32-bit source did,
  // is not, and that matters only where the bound lets such indices in: sources of 2^32
  // elements. They are mapped without reserving memory (untouched pages read 0); the elements
  // the lanes read, or would read if the wrap were missed, are set.
  const uint64_t kTwo31 = uint64_t{1} << 31, kTwo32 = uint64_t{1} << 32;
  const size_t count = kTwo32 + 4096;
  const size_t bytes = count * sizeof(float);
  void* region = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (region == MAP_FAILED) {
    WARN("skipped: cannot map 16 GiB of address space");
    return;
  }
  auto* src = static_cast<float*>(region);
  for (uint64_t base : {uint64_t{0}, kTwo31 - 64, kTwo31, kTwo32 - 64, kTwo32})
    for (uint64_t k = 0; k < 64; ++k)
      src[base + k] = static_cast<float>(base % 9973 + k + 1);
  const size_t n = 64;
  std::vector<Bool8> mask(n, 1);
  for (const Config& cfg : configs()) {
    auto check = [&]<class I>(Form form, uint64_t off, uint64_t bound, uint64_t begin) {
      INFO(name(form) << " off=" << off << " bound=" << bound << " begin=" << begin << " style "
                      << int(cfg.style) << " tier " << int(cfg.tier));
      bool literal = form != Form::AddScalar && form != Form::SubScalar;
      const JitCode& code = compiled(cfg, gather_kernel<float, I>(&form, literal ? off : 0));
      std::vector<float> got(n, 7.f);
      // Element e of the launch is got[e - begin] and mask[e - begin].
      uint64_t out = bits_of(got.data()) - begin * sizeof(float);
      uint64_t m = bits_of(mask.data()) - begin;
      std::vector<uint64_t> args = {bits_of(src), m, 0, off, bound, out};
      code.entry()(begin, begin + n, args.data());
      size_t bad = 0;
      for (size_t e = 0; e < n; ++e) {
        uint64_t j = host_index<I>(form, begin + e, off);
        bad += got[e] != (j < bound ? src[j] : 0.f);
      }
      CHECK(bad == 0);
    };
    // uint32: i + (2^32 - 6) wraps to 0 at lane 6.
    check.template operator()<uint32_t>(Form::AddScalar, kTwo32 - 6, count, 0);
    check.template operator()<uint32_t>(Form::SubLiteral, 6, count, 0);
    // int32: i + (2^31 - 10) turns negative at lane 10.
    check.template operator()<int32_t>(Form::AddScalar, kTwo31 - 10, count, 0);
    // The lane index itself wraps: uint32 at 2^32, int32 at 2^31, and int32 widened to int64.
    check.template operator()<uint32_t>(Form::AddLiteral, 3, count, kTwo32 - 20);
    check.template operator()<int32_t>(Form::SubLiteral, 3, count, kTwo31 - 20);
    check.template operator()<int64_t>(Form::WidenSubLiteral, 3, count, kTwo31 - 20);
    check.template operator()<uint64_t>(Form::CastAddLiteral, 5, count, kTwo32 - 20);
  }
  munmap(region, bytes);
}
