// Deterministic mutation run of the kernel IR fuzz target (kernel_ir_target.h), for CTest: the
// seeds are the kernels the tracer builds for a set of programs covering every operation, and
// hand-built kernels with every region kind, nested;
// each seed is mutated many times (bit flips, interesting values in operand fields, swapped
// instructions, changed parameter kinds and types, truncation) and every mutant goes through
// parse, validate and, when it validates, the llvm backend's compiler. A crash, an LLVM
// assertion, a refusal of another type than ff::FormatError or a validated kernel that fails
// to compile fails the test; so does a run in which too few mutants reach each stage.
//
//   ff_fuzz_kernel_ir_corpus [mutants=4000] [seed=1] [--write-corpus DIR] [--keep FILE]
//   ff_fuzz_kernel_ir_corpus --run FILE
//
// --write-corpus writes the seeds as files, e.g. to start the libFuzzer target from them;
// --keep writes each mutant to FILE before running it, so a crash leaves its reproducer, which
// --run runs alone.
#include <freezeframe/freezeframe.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "backend/ir/kernel_ir.h"
#include "frontend/recording_state.h"
#include "fuzz/kernel_ir_target.h"

namespace {

using Bytes = std::vector<std::byte>;

// Programs whose kernels together use every IR operation and parameter kind.
std::vector<std::function<std::vector<ff::AnyArray>(const ff::Float&, const ff::Int32&)>>
programs() {
  using ff::Float;
  return {
      [](const Float& x, const ff::Int32&) {
        Float y = ff::fma(x, 0.5f, ff::sqrt(ff::abs(x))) + ff::exp(x) * ff::log(x + 2.f);
        y = ff::select(y > 1.f, ff::sin(y), ff::cos(y)) - ff::floor(x) / ff::ceil(x + 0.5f);
        return std::vector<ff::AnyArray>{ff::min(y, x), ff::max(-y, x), x != y, x <= y};
      },
      [](const Float&, const ff::Int32& i) {
        ff::Int32 a = (i * 3 + 7) / (i + 1) % 5 - (i << 2) + (i >> 1);
        ff::UInt32 u = ff::bitcast<ff::UInt32>(a) ^ 0xF0F0u;
        ff::Bool b = ((a < 3) & !(u == 7u)) | (a >= 0);
        return std::vector<ff::AnyArray>{a & ~i,
                                         u | 1u,
                                         b ^ (i > 2),
                                         ff::cast<ff::Float64>(a),
                                         ff::cast<ff::Int64>(u) * int64_t{-3},
                                         ff::cast<ff::UInt64>(a) + uint64_t{1}};
      },
      [](const Float& x, const ff::Int32& i) {
        ff::UInt32 idx = ff::arange<ff::UInt32>(ff::width(x));
        Float g = ff::gather<Float>(x, (idx * 7u) % ff::UInt32(13u), x > 0.2f);
        Float t = ff::zeros<Float>(ff::width(x));
        ff::scatter(t, g, idx, i > 0);
        ff::scatter_add(t, 1.f, (i + 2) % 4);
        return std::vector<ff::AnyArray>{t, g};
      },
      [](const Float& x, const ff::Int32&) {
        ff::Float64 d = ff::cast<ff::Float64>(x);
        return std::vector<ff::AnyArray>{d - ff::mean(d), ff::prefix_sum(x), ff::sum(x * 2.f)};
      },
      [](const Float& x, const ff::Int32& i) {  // the math opcodes after the first 41
        Float s = x * 0.5f;
        Float a = ff::tan(s) + ff::asin(s) + ff::acos(s) + ff::atan(x) + ff::sinh(s) + ff::cosh(s) +
                  ff::tanh(x) + ff::asinh(x) + ff::acosh(x + 1.f) + ff::atanh(s) + ff::exp2(s) +
                  ff::log2(x) + ff::erf(s) + ff::cbrt(x);
        ff::Float64 d = ff::cast<ff::Float64>(x);
        ff::Float64 b = ff::round(d) + ff::trunc(d) + ff::atan2(d, d + 1.0) + ff::pow(d, 1.5) +
                        ff::copysign(d, -d);
        ff::UInt64 u = ff::cast<ff::UInt64>(i);
        return std::vector<ff::AnyArray>{a, b, ff::popcnt(i) + ff::clz(i) + ff::ctz(i),
                                         ff::popcnt(u) + ff::clz(u) + ff::ctz(u)};
      },
      [](const Float& x, const ff::Int32& i) {  // the scatter kinds and scatter_inc
        ff::UInt32 bin = ff::cast<ff::UInt32>(i) % 4u;
        Float lo = ff::full<Float>(1e9f, 4), hi = ff::zeros<Float>(4), p = ff::full<Float>(1.f, 4);
        ff::scatter_reduce(ff::ReduceOp::Min, lo, x, bin);
        ff::scatter_reduce(ff::ReduceOp::Max, hi, x, bin, x > 0.f);
        ff::scatter_reduce(ff::ReduceOp::Mul, p, x, bin);
        ff::Int64 bits = ff::zeros<ff::Int64>(4), all = ff::full<ff::Int64>(-1, 4);
        ff::scatter_reduce(ff::ReduceOp::Or, bits, ff::cast<ff::Int64>(i), bin);
        ff::scatter_reduce(ff::ReduceOp::And, all, ff::cast<ff::Int64>(i), bin);
        ff::UInt32 counter = ff::zeros<ff::UInt32>(4);
        ff::UInt32 slot = ff::scatter_inc(counter, bin, x > 0.f);
        return std::vector<ff::AnyArray>{lo, hi, p, bits, all, counter, slot * 2u};
      },
  };
}

// Hand-built kernels with each region kind, nested (the tracer does not emit regions yet), so
// that mutants start from loops, branches and calls: a loop with carried values and a limit
// whose body holds an if whose parts hold a call of three targets (one with a loop in it) and
// a gather, scatters and an increment under the region's lanes.
std::vector<Bytes> region_seeds() {
  using ff::IrOp;
  using ff::ParamKind;
  const auto F = ff::ScalarType::Float32, U = ff::ScalarType::UInt32, B = ff::ScalarType::Bool,
             U64 = ff::ScalarType::UInt64;
  std::vector<Bytes> out;
  for (int variant = 0; variant < 3; ++variant) {
    ff::KernelIR ir;
    ir.params = {{ParamKind::BufferIn, F},      {ParamKind::BufferIn, U},
                 {ParamKind::Scalar, U64},      {ParamKind::BufferOut, F},
                 {ParamKind::BufferInOut, F},   {ParamKind::BufferInOut, U},
                 {ParamKind::BufferInOut, U64}, {ParamKind::BufferOut, U}};
    auto mark = [&](IrOp op, uint32_t a = ff::kNoOperand, uint64_t imm = 0) {
      return ir.emit(op, B, {a}, imm);
    };
    uint32_t x = ir.emit(IrOp::Load, F, {0});
    uint32_t sel = ir.emit(IrOp::Load, U, {1});
    uint32_t i = ir.emit(IrOp::Index, U);
    uint32_t zero = ir.emit(IrOp::Literal, U, {}, 0), one = ir.emit(IrOp::Literal, U, {}, 1);
    uint32_t yes = ir.emit(IrOp::Literal, B, {}, 1);
    uint32_t half = ir.emit(IrOp::Literal, F, {}, 0x3f000000);
    mark(IrOp::LoopBegin, ff::kNoOperand, variant == 1 ? ff::kNoIterationLimit : 8);
    uint32_t c = ir.emit(IrOp::LoopVar, U, {zero});
    uint32_t v = ir.emit(IrOp::LoopVar, F, {x});
    mark(IrOp::LoopCond,
         ir.emit(IrOp::Lt, B, {c, ir.emit(IrOp::And, U, {sel, ir.emit(IrOp::Literal, U, {}, 7)})}));
    mark(IrOp::IfBegin, ir.emit(IrOp::Eq, B, {ir.emit(IrOp::And, U, {c, one}), zero}));
    {
      uint32_t idx = ir.emit(IrOp::Add, U, {i, c});  // "lane index + ..." (not uniform)
      uint32_t g = ir.emit(IrOp::Gather, F, {0, idx, yes, 2}, variant == 2 ? 6 : 0,
                           variant == 2 ? ff::kIrFlagReportRange : 0);
      ir.emit(IrOp::ScatterAdd, F, {4, i, yes, g, 2});
      mark(IrOp::CallBegin, ir.emit(IrOp::Add, U, {sel, c}), 3);
      ir.emit(IrOp::Yield, F, {ir.emit(IrOp::Sin, F, {v})});
      mark(IrOp::CallCase);
      uint32_t slot = ir.emit(IrOp::ScatterInc, U, {5, i, yes, ff::kNoOperand, 2});
      ir.emit(IrOp::Yield, F, {ir.emit(IrOp::Cast, F, {slot})});
      mark(IrOp::CallCase);
      mark(IrOp::LoopBegin, ff::kNoOperand, 4);
      uint32_t w = ir.emit(IrOp::LoopVar, F, {v});
      mark(IrOp::LoopCond, ir.emit(IrOp::Gt, B, {w, half}));
      ir.emit(IrOp::Yield, F, {ir.emit(IrOp::Mul, F, {w, half})});
      mark(IrOp::EndRegion);
      ir.emit(IrOp::Yield, F, {ir.emit(IrOp::Result, F)});
      mark(IrOp::EndRegion);
      uint32_t r = ir.emit(IrOp::Result, F);
      ir.emit(IrOp::Yield, F, {ir.emit(IrOp::Add, F, {r, g})});
    }
    mark(IrOp::IfElse);
    ir.emit(IrOp::Scatter, U, {5, i, yes, c, 2});
    ir.emit(IrOp::Yield, F, {ir.emit(IrOp::Fma, F, {v, half, x})});
    mark(IrOp::EndRegion);
    uint32_t nv = ir.emit(IrOp::Result, F);
    uint32_t nc = ir.emit(IrOp::Add, U, {c, one});
    ir.emit(IrOp::Yield, U, {nc});
    ir.emit(IrOp::Yield, F, {nv});
    mark(IrOp::EndRegion);
    uint32_t rc = ir.emit(IrOp::Result, U);
    uint32_t rv = ir.emit(IrOp::Result, F);
    ir.emit(IrOp::Store, F, {3, rv});
    ir.emit(IrOp::Store, U, {7, rc});
    ir.finalize();
    ir.validate();
    out.push_back(ir.serialize());
  }
  return out;
}

std::vector<Bytes> seeds() {
  // A session capture sees every kernel, FF_DEBUG range reports included (ff::record leaves
  // those out, as it refuses host reads).
  ff::init("record:llvm");
  std::vector<float> xs(100);
  std::vector<int32_t> is(100);
  for (size_t k = 0; k < xs.size(); ++k) {
    xs[k] = 0.01f * static_cast<float>(k);
    is[k] = static_cast<int32_t>(k % 9) - 2;
  }
  {
    ff::Float x = ff::Float::from(xs);
    ff::Int32 i = ff::Int32::from(is);
    for (bool debug : {false, true}) {
      ff::set_flag(ff::Flag::Debug, debug);
      for (auto& program : programs()) {
        std::vector<ff::detail::Handle> ids;
        for (const ff::AnyArray& out : program(x, i))
          ids.push_back(out.id());
        ff::detail::var_eval(ids);
      }
    }
    ff::set_flag(ff::Flag::Debug, false);
  }
  std::vector<Bytes> out;
  ff::Recording session = ff::capture();
  for (const auto& kernel : ff::detail::recording_state(session)->data->kernels)
    out.push_back(kernel->serialize());
  ff::shutdown();
  for (Bytes& b : region_seeds())
    out.push_back(std::move(b));
  return out;
}

// One to three mutations, biased towards bytes that keep the header intact.
Bytes mutate(const Bytes& seed, std::mt19937_64& rng) {
  Bytes b = seed;
  auto pick = [&](size_t n) { return static_cast<size_t>(rng() % n); };
  uint32_t n_params = 0, n_instrs = 0;
  std::memcpy(&n_params, b.data() + 8, 4);
  std::memcpy(&n_instrs, b.data() + 12, 4);
  const size_t instr_base = 16 + size_t{n_params} * 2;
  const uint32_t interesting[] = {0,        1,       2,           n_params - 1, n_params,
                                  n_instrs, 0xFFFFu, 0xFFFFFFFFu, 0x80000000u,  7};
  int count = 1 + static_cast<int>(pick(3));
  for (int m = 0; m < count; ++m) {
    switch (pick(7)) {
      case 0:  // flip one bit anywhere past the magic
        b[4 + pick(b.size() - 4)] ^= std::byte(1u << pick(8));
        break;
      case 1:  // an interesting value in an instruction's 32-bit field
        if (n_instrs) {
          size_t at = instr_base + pick(n_instrs) * sizeof(ff::IrInstr) + 4 * pick(8);
          uint32_t v = interesting[pick(std::size(interesting))];
          std::memcpy(b.data() + at, &v, 4);
        }
        break;
      case 2:  // a random opcode, type or flags byte of an instruction
        if (n_instrs) {
          size_t at = instr_base + pick(n_instrs) * sizeof(ff::IrInstr) + pick(4);
          b[at] = std::byte(pick(64));
        }
        break;
      case 3:  // swap two instructions
        if (n_instrs > 1) {
          size_t a = instr_base + pick(n_instrs) * sizeof(ff::IrInstr);
          size_t c = instr_base + pick(n_instrs) * sizeof(ff::IrInstr);
          std::swap_ranges(b.begin() + static_cast<std::ptrdiff_t>(a),
                           b.begin() + static_cast<std::ptrdiff_t>(a + sizeof(ff::IrInstr)),
                           b.begin() + static_cast<std::ptrdiff_t>(c));
        }
        break;
      case 4:  // a parameter's kind or type
        if (n_params)
          b[16 + pick(n_params) * 2 + pick(2)] = std::byte(pick(8));
        break;
      case 5:  // the last instruction dropped, header adjusted (stays well-formed)
        if (n_instrs) {
          --n_instrs;
          std::memcpy(b.data() + 12, &n_instrs, 4);
          b.resize(b.size() - sizeof(ff::IrInstr));
        }
        break;
      default:  // truncated or extended
        if (pick(2))
          b.resize(pick(b.size()));
        else
          b.resize(b.size() + 1 + pick(40), std::byte{0x5a});
        return b;
    }
  }
  return b;
}

}  // namespace

int main(int argc, char** argv) {
  size_t mutants = 4000;
  uint64_t rng_seed = 1;
  std::string corpus_dir, keep, run;
  int positional = 0;
  for (int a = 1; a < argc; ++a) {
    std::string arg = argv[a];
    if (arg == "--write-corpus" && a + 1 < argc)
      corpus_dir = argv[++a];
    else if (arg == "--keep" && a + 1 < argc)
      keep = argv[++a];
    else if (arg == "--run" && a + 1 < argc)
      run = argv[++a];
    else if (positional++ == 0)
      mutants = std::stoull(arg);
    else
      rng_seed = std::stoull(arg);
  }
  ff::set_log_level(ff::LogLevel::Off);
  if (!run.empty()) {
    std::ifstream f(run, std::ios::binary);
    std::vector<char> chars((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    Bytes bytes(chars.size());
    std::memcpy(bytes.data(), chars.data(), chars.size());
    static const char* const names[] = {"rejected by parse", "rejected by validate", "compiled"};
    std::printf("%s\n", names[static_cast<int>(ff::fuzz::run_kernel_ir(bytes, true))]);
    return 0;
  }
  std::vector<Bytes> corpus = seeds();
  std::printf("%zu seed kernels\n", corpus.size());
  if (!corpus_dir.empty()) {
    std::filesystem::create_directories(corpus_dir);
    for (size_t k = 0; k < corpus.size(); ++k) {
      std::ofstream f(corpus_dir + "/seed" + std::to_string(k) + ".ffir", std::ios::binary);
      f.write(reinterpret_cast<const char*>(corpus[k].data()),
              static_cast<std::streamsize>(corpus[k].size()));
    }
  }
  size_t counts[3] = {0, 0, 0};
  for (const Bytes& seed : corpus) {  // every seed compiles as it is
    if (ff::fuzz::run_kernel_ir(seed, true) != ff::fuzz::IrOutcome::Compiled) {
      std::fprintf(stderr, "a seed kernel does not compile\n");
      return 1;
    }
  }
  std::mt19937_64 rng(rng_seed);
  for (size_t k = 0; k < mutants; ++k) {
    Bytes mutant = mutate(corpus[k % corpus.size()], rng);
    if (!keep.empty()) {
      std::ofstream f(keep, std::ios::binary | std::ios::trunc);
      f.write(reinterpret_cast<const char*>(mutant.data()),
              static_cast<std::streamsize>(mutant.size()));
    }
    ++counts[static_cast<int>(ff::fuzz::run_kernel_ir(mutant, true))];
  }
  std::printf(
      "%zu mutants: %zu rejected by parse (header, sizes), %zu rejected by validate "
      "(instructions), %zu compiled\n",
      mutants, counts[0], counts[1], counts[2]);
  // A run in which the mutants stop at the header, or none reaches the validator or the
  // compiler, tests nothing past the door. Seed 1 gives about 28% / 48% / 24% over 3000
  // mutants; each outcome must keep at least a twentieth.
  const char* const names[] = {"rejected by parse", "rejected by validate", "compiled"};
  bool ok = true;
  if (mutants > 0 && (counts[0] == mutants || counts[2] == 0)) {
    std::fprintf(stderr, "no mutant got past the header into the compiler\n");
    ok = false;
  }
  for (int k = 0; k < 3; ++k)
    if (mutants >= 100 && counts[k] * 20 < mutants) {
      std::fprintf(stderr, "too few mutants %s: %zu of %zu (at least 5%% expected)\n", names[k],
                   counts[k], mutants);
      ok = false;
    }
  return ok ? 0 : 1;
}
