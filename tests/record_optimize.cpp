// The recording optimiser (docs/optimizer.md): launches fuse across evals where that is valid
// and only there, dead work goes, compresses that size later work stay, the passes are listed
// and saved, and it can be turned off. Results are compared bitwise with the same function
// recorded with the optimiser off; the corpus (tests/record_corpus.cpp) does the same for
// every corpus function at every replay size.
#include <freezeframe/freezeframe.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "backend/ir/ir_analysis.h"
#include "frontend/recording_state.h"
#include "recorder/launch_body.h"
#include "recorder/recording.h"

using ff::AnyArray;
using ff::Float;
using ff::UInt32;

namespace {

using Inputs = std::vector<AnyArray>;

Float seeded(size_t n, float scale = 1.f) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = scale * static_cast<float>((i * 7919u) % 1000u) / 1000.f + 0.25f;
  Float x = Float::from(v);
  ff::eval(x);
  return x;
}

const ff::rec::RecordingData& data(const ff::Recording& r) {
  return *ff::detail::recording_state(r)->data;
}

/// Launches of one replay of `r` on `inputs`, and its outputs.
struct Replayed {
  uint64_t launches = 0;
  std::vector<std::vector<float>> floats;
};

Replayed replay(const ff::Recording& r, const Inputs& inputs) {
  ff::sync();
  ff::Stats s0 = ff::stats();
  Inputs outs = r.replay(inputs);
  ff::sync();
  Replayed out;
  out.launches = ff::stats().launches - s0.launches;
  for (const AnyArray& a : outs)
    if (a.type() == ff::ScalarType::Float32)
      out.floats.push_back(a.as<Float>().to_vector());
  return out;
}

/// Records `fn` with the optimiser on and off, replays both at `sizes` and checks the outputs
/// are bitwise equal; returns the launches of one replay {optimised, unoptimised} at the last.
template <class F>
std::pair<uint64_t, uint64_t> both_ways(F&& fn, size_t record_size,
                                        const std::vector<size_t>& sizes) {
  Float x0 = seeded(record_size);
  ff::Recording opt = ff::record({x0}, [&] { return fn(x0); });
  ff::Recording plain = ff::record(
      {x0}, [&] { return fn(x0); }, ff::RecordOptions{false});
  REQUIRE(opt.is_optimized());
  REQUIRE_FALSE(plain.is_optimized());
  std::pair<uint64_t, uint64_t> launches;
  for (size_t n : sizes) {
    INFO("replayed at size " << n << " (recorded at " << record_size << ")");
    Float x = seeded(n);
    Replayed a = replay(opt, {x}), b = replay(plain, {x});
    REQUIRE(a.floats.size() == b.floats.size());
    for (size_t k = 0; k < a.floats.size(); ++k) {
      REQUIRE(a.floats[k].size() == b.floats[k].size());
      for (size_t i = 0; i < a.floats[k].size(); ++i)
        REQUIRE(std::bit_cast<uint32_t>(a.floats[k][i]) == std::bit_cast<uint32_t>(b.floats[k][i]));
    }
    // And both equal the function run traced.
    Inputs traced = fn(x);
    for (size_t k = 0; k < traced.size(); ++k)
      if (traced[k].type() == ff::ScalarType::Float32)
        REQUIRE(traced[k].as<Float>().to_vector() == a.floats[k]);
    launches = {a.launches, b.launches};
  }
  return launches;
}

const std::vector<size_t> kSizes = {1000, 0, 1, 2, 3, 13, 61, 1021, 4099};

}  // namespace

TEST_CASE("optimiser: a chain of evals replays as one launch at every size", "[record][optimize]") {
  auto chain = [](const Float& x) {
    Float y = x;
    for (int k = 0; k < 20; ++k) {
      y = k % 3 == 0 ? ff::fma(y, 0.5f, x) : k % 3 == 1 ? ff::sqrt(y + 1.f) : y * 0.75f;
      ff::eval(y);
    }
    return Inputs{y};
  };
  auto [opt, plain] = both_ways(chain, 1000, kSizes);
  CHECK(plain == 20);
  CHECK(opt == 1);
  Float x = seeded(100);
  ff::Recording r = ff::record({x}, [&] { return chain(x); });
  const ff::rec::RecordingData& d = data(r);
  // One launch, one allocation (the output): every intermediate's buffer is gone.
  size_t allocs = 0, launches = 0;
  for (const ff::rec::Op& op : d.ops) {
    allocs += op.code == ff::rec::OpCode::Alloc;
    launches += op.code == ff::rec::OpCode::Launch;
  }
  CHECK(launches == 1);
  CHECK(allocs == 1);
  CHECK(d.guards.empty());  // the per-eval "equal sizes" guards compared a size with itself
}

TEST_CASE("optimiser: a gather of an intermediate keeps both launches", "[record][optimize]") {
  auto fn = [](const Float& x) {
    Float t = x * 2.f + 1.f;
    ff::eval(t);
    UInt32 i = ff::arange<UInt32>(ff::width(x));
    Float y = ff::gather<Float>(t, ff::max_reduce(i) - i) + x;  // reversed: another lane
    ff::eval(y);
    return Inputs{y};
  };
  auto [opt, plain] = both_ways(fn, 1000, kSizes);
  CHECK(plain == 3);  // t, the index (for max_reduce), the gather
  CHECK(opt >= 2);    // the index may join t's launch; the gather joins neither
}

TEST_CASE("optimiser: a scatter into an intermediate keeps its launches", "[record][optimize]") {
  auto fn = [](const Float& x) {
    Float t = x + 1.f;
    ff::eval(t);
    UInt32 i = ff::arange<UInt32>(ff::width(x));
    ff::scatter(t, x * 3.f, ff::max_reduce(i) - i);  // writes other lanes (reversed)
    ff::eval(t);
    Float y = t * 2.f;
    ff::eval(y);
    return Inputs{y};
  };
  auto [opt, plain] = both_ways(fn, 1000, kSizes);
  CHECK(plain == 4);  // t, the index, the scatter, y
  CHECK(opt >= 3);    // the scatter joins neither t's launch nor y's
}

TEST_CASE("optimiser: an intermediate that is also an output is still stored",
          "[record][optimize]") {
  // Fusing here is valid (each lane stores t and then reads its own t), so the launches fuse
  // and the store of t stays because t is returned.
  auto fn = [](const Float& x) {
    Float t = ff::sqrt(x) + 0.5f;
    ff::eval(t);
    Float y = t * t - x;
    ff::eval(y);
    return Inputs{t, y};
  };
  auto [opt, plain] = both_ways(fn, 1000, kSizes);
  CHECK(plain == 2);
  CHECK(opt == 1);
}

TEST_CASE("optimiser: launches of different sizes keep their launches", "[record][optimize]") {
  auto fn = [](const Float& x) {
    Float t = x * 3.f;
    ff::eval(t);
    // The first width(x) - 1 elements: another size expression.
    UInt32 i = ff::arange<UInt32>(ff::width(x) - 1u);
    Float y = ff::gather<Float>(t, i) + 1.f;
    ff::eval(y);
    return Inputs{y};
  };
  auto [opt, plain] = both_ways(fn, 1000, {1000, 1, 2, 13, 1021});
  CHECK(plain == 2);
  CHECK(opt == 2);
}

TEST_CASE("optimiser: a compress between launches keeps them apart and stays live",
          "[record][optimize]") {
  auto fn = [](const Float& x) {
    Float t = x * 2.f;
    ff::eval(t);
    UInt32 idx = ff::compress(t > 1.f);  // its count sizes the gather below
    Float y = ff::gather<Float>(t, idx) + 1.f;
    ff::eval(y);
    return Inputs{y};
  };
  both_ways(fn, 1000, kSizes);
  Float x = seeded(1000);
  ff::Recording r = ff::record({x}, [&] { return fn(x); });
  size_t compresses = 0;
  for (const ff::rec::Op& op : data(r).ops)
    compresses += op.code == ff::rec::OpCode::Compress;
  CHECK(compresses == 1);
}

TEST_CASE("optimiser: a released buffer is handed to the next allocation of its size",
          "[record][optimize]") {
  // Gathers at reversed indices keep every launch apart, so each eval allocates a buffer.
  auto fn = [](const Float& x) {
    UInt32 i = ff::arange<UInt32>(ff::width(x));
    UInt32 rev = ff::max_reduce(i) - i;
    Float y = x;
    for (int k = 0; k < 5; ++k) {
      y = ff::gather<Float>(y, rev) * 2.f + 1.f;
      ff::eval(y);
    }
    return Inputs{y};
  };
  both_ways(fn, 1000, kSizes);
  Float x0 = seeded(1000);
  ff::Recording opt = ff::record({x0}, [&] { return fn(x0); });
  ff::Recording plain = ff::record(
      {x0}, [&] { return fn(x0); }, ff::RecordOptions{false});
  size_t taken_over = 0;
  for (const ff::rec::Op& op : data(opt).ops)
    taken_over += op.code == ff::rec::OpCode::Alloc && op.src != ff::rec::kNone;
  CHECK(taken_over >= 2);
  for (size_t n : {1000, 1, 2, 13, 4099}) {
    INFO("size " << n);
    Float x = seeded(n);
    auto count = [&](const ff::Recording& r, uint64_t& allocs, uint64_t& peak) {
      ff::sync();
      ff::reset_peak_memory();
      ff::Stats s0 = ff::stats();
      std::vector<float> out = r.replay({x})[0].as<Float>().to_vector();
      ff::Stats s1 = ff::stats();
      allocs = s1.allocs - s0.allocs;
      peak = s1.peak_bytes;
      return out;
    };
    uint64_t allocs_opt = 0, allocs_plain = 0, peak_opt = 0, peak_plain = 0;
    std::vector<float> b = count(plain, allocs_plain, peak_plain);
    std::vector<float> a = count(opt, allocs_opt, peak_opt);
    CHECK(a == b);
    CHECK(allocs_opt + taken_over <= allocs_plain);
    CHECK(peak_opt <= peak_plain);
  }
  // The listing names the slot whose buffer an allocation takes over.
  CHECK(opt.to_string().find(" src=s") != std::string::npos);
  CHECK(opt.to_string().find("pass reuse-buffers:") != std::string::npos);
}

TEST_CASE("optimiser: work whose results reach nothing is removed", "[record][optimize]") {
  auto fn = [](const Float& x) {
    Float unused = ff::exp(x) * 3.f;  // evaluated, never returned
    ff::eval(unused);
    Float sum_unused = ff::sum(x * 2.f);
    ff::eval(sum_unused);
    Float y = x + 1.f;
    ff::eval(y);
    return Inputs{y};
  };
  auto [opt, plain] = both_ways(fn, 1000, kSizes);
  CHECK(plain >= 2);
  CHECK(opt == 1);
  Float x = seeded(100);
  ff::Recording r = ff::record({x}, [&] { return fn(x); });
  for (const ff::rec::Op& op : data(r).ops)
    CHECK(op.code != ff::rec::OpCode::Reduce);
}

TEST_CASE("optimiser: a frozen function's scatter into its argument is kept",
          "[record][optimize][freeze]") {
  // Nothing is returned: the written argument is the only effect (freeze hands it back).
  auto body = [](Float& x) {
    Float t = x * 2.f;
    ff::eval(t);
    UInt32 i = ff::arange<UInt32>(ff::width(x));
    ff::scatter(x, t + 1.f, i);
    ff::eval(x);
  };
  auto frozen = ff::freeze(body);
  for (size_t n : {100, 100, 0, 1, 2, 13, 1021}) {
    INFO("size " << n);
    Float a = seeded(n), b = seeded(n);
    frozen(a);
    body(b);
    CHECK(a.to_vector() == b.to_vector());
  }
  CHECK(frozen.n_recordings() == 1);
}

TEST_CASE("optimiser: off per call and listed in the recording, its file and the dump",
          "[record][optimize]") {
  Float x = seeded(64);
  auto fn = [&] {
    Float y = x * 2.f;
    ff::eval(y);
    Float z = y + 1.f;
    ff::eval(z);
    return Inputs{z};
  };
  ff::Recording opt = ff::record({x}, fn);
  ff::Recording plain = ff::record({x}, fn, ff::RecordOptions{false});
  CHECK(opt.is_optimized());
  CHECK_FALSE(plain.is_optimized());
  CHECK(opt.n_ops() < plain.n_ops());
  std::string listing = opt.to_string();
  CHECK(listing.find("pass fuse-launches: ops") != std::string::npos);
  CHECK(listing.find("launches 2 -> 1") != std::string::npos);
  CHECK(plain.to_string().find("pass ") == std::string::npos);

  // Named after this process: two test runs at once (two build trees, two users) must not
  // write each other's file between a save and its load.
  auto path = std::filesystem::temp_directory_path() /
              ("ff-optimize-test-" + std::to_string(::getpid()) + ".ffr");
  opt.save(path.string());
  ff::Recording loaded = ff::Recording::load(path.string());
  CHECK(loaded.is_optimized());
  CHECK(loaded.to_string() == listing);
  plain.save(path.string());
  CHECK_FALSE(ff::Recording::load(path.string()).is_optimized());
  std::filesystem::remove(path);
  Float x2 = seeded(17);
  CHECK(loaded.replay({x2})[0].as<Float>().to_vector() ==
        plain.replay({x2})[0].as<Float>().to_vector());
}

TEST_CASE("optimiser: frozen functions fuse too, and FreezeOptions::optimize turns it off",
          "[record][optimize][freeze]") {
  auto body = [](const Float& x) {
    Float y = x * 2.f;
    ff::eval(y);
    Float z = ff::sqrt(y) + 1.f;
    ff::eval(z);
    return z;
  };
  ff::FreezeOptions off;
  off.optimize = false;
  auto on_fn = ff::freeze(body);
  auto off_fn = ff::freeze(body, off);
  for (size_t n : {5, 5, 1, 2, 13, 1000}) {
    Float x = seeded(n);
    on_fn(x);  // records, then replays
    off_fn(x);
    ff::sync();
    ff::Stats s0 = ff::stats();
    Float a = on_fn(x);
    ff::sync();
    ff::Stats s1 = ff::stats();
    Float b = off_fn(x);
    ff::sync();
    ff::Stats s2 = ff::stats();
    CHECK(s1.launches - s0.launches == 1u);
    CHECK(s2.launches - s1.launches == 2u);
    CHECK(a.to_vector() == b.to_vector());
  }
}

TEST_CASE("optimiser: kernel rewrites read only the operand fields an opcode uses",
          "[record][optimize]") {
  // Valid IR may hold anything in the fields its opcodes do not use (a loaded file's kernels,
  // replayed inside ff::record, reach the optimiser): fusion and dead-work removal must not
  // read them.
  using ff::IrOp;
  using ff::ParamKind;
  using ff::rec::LaunchArg;
  constexpr auto F32 = ff::ScalarType::Float32;
  ff::KernelIR ir;
  ir.params = {{ParamKind::BufferIn, F32}, {ParamKind::BufferOut, F32}};
  uint32_t x = ir.emit(IrOp::Load, F32, {0});
  uint32_t y = ir.emit(IrOp::Sqrt, F32, {x});
  ir.instrs[y].b = 12345;  // unused by sqrt
  ir.instrs[y].e = 99999;
  ir.emit(IrOp::Store, F32, {1, y});
  ir.instrs.back().c = 777;  // unused by store
  ir.finalize();
  REQUIRE_NOTHROW(ir.validate());

  auto buffer = [](uint32_t slot) {
    LaunchArg a;
    a.is_buffer = true;
    a.slot = slot;
    return a;
  };
  // s0 -> s1, then s1 -> s2: the second launch's load of s1 becomes the first one's value.
  ff::rec::LaunchBody body{ir, {buffer(0), buffer(1)}};
  std::vector<LaunchArg> second = {buffer(1), buffer(2)};
  ff::rec::append_launch(body, ir, second);
  CHECK(ff::rec::remove_dead_work(body, [](uint32_t) { return true; }));
  body.ir.finalize();
  REQUIRE_NOTHROW(body.ir.validate());
  CHECK(body.ir.params.size() == 3);
  CHECK(body.ir.instrs.size() == 5);  // load, sqrt, store s1, sqrt, store s2
  // Without the intermediate's store: load, sqrt, sqrt, store s2.
  CHECK(ff::rec::remove_dead_work(body, [&](uint32_t p) { return body.args[p].slot != 1; }));
  body.ir.finalize();
  REQUIRE_NOTHROW(body.ir.validate());
  CHECK(body.ir.params.size() == 2);
  CHECK(body.ir.instrs.size() == 4);
}

TEST_CASE("dead-work removal keeps an increment while its counter or its values are used",
          "[record][optimize]") {
  using ff::IrOp;
  using ff::ParamKind;
  using ff::rec::LaunchArg;
  constexpr auto U32 = ff::ScalarType::UInt32, U64 = ff::ScalarType::UInt64;
  // p0: the counter, p1: its length, p2: where the old values are stored.
  ff::KernelIR ir;
  ir.params = {
      {ParamKind::BufferInOut, U32}, {ParamKind::Scalar, U64}, {ParamKind::BufferOut, U32}};
  uint32_t zero = ir.emit(IrOp::Literal, U32, {}, 0);
  uint32_t all = ir.emit(IrOp::Literal, ff::ScalarType::Bool, {}, 1);
  uint32_t slot = ir.emit(IrOp::ScatterInc, U32, {0, zero, all, ff::kNoOperand, 1});
  ir.emit(IrOp::Store, U32, {2, slot});
  ir.finalize();
  REQUIRE_NOTHROW(ir.validate());
  auto args = [] {
    std::vector<LaunchArg> a(3);
    for (uint32_t s : {0u, 2u}) {
      a[s].is_buffer = true;
      a[s].slot = s;
    }
    return a;
  };
  auto run = [&](auto keep) {
    ff::rec::LaunchBody body{ir, args()};
    bool effect = ff::rec::remove_dead_work(body, keep);
    body.ir.finalize();
    REQUIRE_NOTHROW(body.ir.validate());
    return std::make_pair(effect, body);
  };
  // Both used: everything stays.
  auto [both, b1] = run([](uint32_t) { return true; });
  CHECK(both);
  CHECK(b1.ir.instrs.size() == 4);
  // Only the values used (the counter is dropped afterwards): the increment stays.
  auto [values, b2] = run([](uint32_t p) { return p != 0; });
  CHECK(values);
  CHECK(b2.ir.instrs.size() == 4);
  // Only the counter used: the increment stays, the store of its values goes.
  auto [counter, b3] = run([](uint32_t p) { return p != 2; });
  CHECK(counter);
  REQUIRE(b3.ir.instrs.size() == 3);
  CHECK(b3.ir.instrs.back().op == IrOp::ScatterInc);
  // Neither: nothing is left to do.
  auto [none, b4] = run([](uint32_t p) { return p == 1; });
  CHECK_FALSE(none);
  CHECK(b4.ir.instrs.empty());

  // Two increments of one counter: the second one's values count on the first, which stays
  // though neither its values nor the counter are kept.
  ff::KernelIR two;
  two.params = ir.params;
  uint32_t z = two.emit(IrOp::Literal, U32, {}, 0);
  uint32_t t = two.emit(IrOp::Literal, ff::ScalarType::Bool, {}, 1);
  two.emit(IrOp::ScatterInc, U32, {0, z, t, ff::kNoOperand, 1});
  uint32_t later = two.emit(IrOp::ScatterInc, U32, {0, z, t, ff::kNoOperand, 1});
  two.emit(IrOp::Store, U32, {2, later});
  two.finalize();
  REQUIRE_NOTHROW(two.validate());
  ff::rec::LaunchBody body{two, args()};
  CHECK(ff::rec::remove_dead_work(body, [](uint32_t p) { return p != 0; }));
  int increments = 0;
  for (const ff::IrInstr& in : body.ir.instrs)
    increments += in.op == IrOp::ScatterInc;
  CHECK(increments == 2);
}

// --- regions (kernel_ir.h): only top-level lane accesses forward or hide others ----------------

namespace {

using ff::IrOp;
using ff::ParamKind;
constexpr auto kF32 = ff::ScalarType::Float32, kBool = ff::ScalarType::Bool,
               kU32 = ff::ScalarType::UInt32, kU64 = ff::ScalarType::UInt64;

ff::rec::LaunchArg buffer_arg(uint32_t slot) {
  ff::rec::LaunchArg a;
  a.is_buffer = true;
  a.slot = slot;
  return a;
}

uint32_t marker(ff::KernelIR& ir, IrOp op, uint32_t a = ff::kNoOperand, uint64_t imm = 0) {
  return ir.emit(op, kBool, {a}, imm);
}

size_t count_ops(const ff::KernelIR& ir, IrOp op) {
  size_t n = 0;
  for (const ff::IrInstr& in : ir.instrs)
    n += in.op == op;
  return n;
}

// Params: 0 in float32 (slot 0), 1 out float32 (slot 1). out = x at the top level, then, in an
// if on x > 1 (or a loop of 3 iterations), out = -x.
ff::KernelIR store_in_region_kernel(bool loop) {
  ff::KernelIR ir;
  ir.params = {{ParamKind::BufferIn, kF32}, {ParamKind::BufferOut, kF32}};
  uint32_t x = ir.emit(IrOp::Load, kF32, {0});
  ir.emit(IrOp::Store, kF32, {1, x});
  if (loop) {
    uint32_t zero = ir.emit(IrOp::Literal, kU32, {}, 0);
    marker(ir, IrOp::LoopBegin, ff::kNoOperand, 3);
    uint32_t c = ir.emit(IrOp::LoopVar, kU32, {zero});
    marker(ir, IrOp::LoopCond, ir.emit(IrOp::Literal, kBool, {}, 1));
    ir.emit(IrOp::Store, kF32, {1, ir.emit(IrOp::Neg, kF32, {x})});
    ir.emit(IrOp::Yield, kU32,
            {ir.emit(IrOp::Add, kU32, {c, ir.emit(IrOp::Literal, kU32, {}, 1)})});
    marker(ir, IrOp::EndRegion);
    ir.emit(IrOp::Result, kU32);
  } else {
    marker(ir, IrOp::IfBegin,
           ir.emit(IrOp::Gt, kBool, {x, ir.emit(IrOp::Literal, kF32, {}, 0x3f800000)}));
    ir.emit(IrOp::Store, kF32, {1, ir.emit(IrOp::Neg, kF32, {x})});
    marker(ir, IrOp::IfElse);
    marker(ir, IrOp::EndRegion);
  }
  ir.finalize();
  REQUIRE_NOTHROW(ir.validate());
  return ir;
}

// Params: 0 in float32, 1 out float32: out = 2 * in, loaded at the top level or in a loop body
// of 2 iterations (where the load's value is carried out).
ff::KernelIR double_kernel(bool load_in_loop) {
  ff::KernelIR ir;
  ir.params = {{ParamKind::BufferIn, kF32}, {ParamKind::BufferOut, kF32}};
  uint32_t two = ir.emit(IrOp::Literal, kF32, {}, 0x40000000);
  uint32_t v;
  if (load_in_loop) {
    uint32_t zero = ir.emit(IrOp::Literal, kF32, {}, 0);
    marker(ir, IrOp::LoopBegin, ff::kNoOperand, 2);
    uint32_t acc = ir.emit(IrOp::LoopVar, kF32, {zero});
    marker(ir, IrOp::LoopCond, ir.emit(IrOp::Literal, kBool, {}, 1));
    uint32_t x = ir.emit(IrOp::Load, kF32, {0});
    ir.emit(IrOp::Yield, kF32, {ir.emit(IrOp::Add, kF32, {acc, x})});
    marker(ir, IrOp::EndRegion);
    v = ir.emit(IrOp::Result, kF32);
  } else {
    v = ir.emit(IrOp::Mul, kF32, {ir.emit(IrOp::Load, kF32, {0}), two});
  }
  ir.emit(IrOp::Store, kF32, {1, v});
  ir.finalize();
  REQUIRE_NOTHROW(ir.validate());
  return ir;
}

}  // namespace

TEST_CASE("optimiser: a store inside a region does not hide an earlier store",
          "[record][optimize][regions]") {
  for (bool loop : {false, true}) {
    INFO((loop ? "a loop" : "an if"));
    ff::rec::LaunchBody body{store_in_region_kernel(loop), {buffer_arg(0), buffer_arg(1)}};
    CHECK(ff::rec::remove_dead_work(body, [](uint32_t) { return true; }));
    body.ir.finalize();
    REQUIRE_NOTHROW(body.ir.validate());
    CHECK(count_ops(body.ir, IrOp::Store) == 2);  // not every lane, or maybe no lane, runs it
  }
  // A second top-level store does hide the first.
  ff::KernelIR plain;
  plain.params = {{ParamKind::BufferIn, kF32}, {ParamKind::BufferOut, kF32}};
  uint32_t x = plain.emit(IrOp::Load, kF32, {0});
  plain.emit(IrOp::Store, kF32, {1, x});
  plain.emit(IrOp::Store, kF32, {1, plain.emit(IrOp::Neg, kF32, {x})});
  plain.finalize();
  ff::rec::LaunchBody body{plain, {buffer_arg(0), buffer_arg(1)}};
  CHECK(ff::rec::remove_dead_work(body, [](uint32_t) { return true; }));
  CHECK(count_ops(body.ir, IrOp::Store) == 1);
}

TEST_CASE("optimiser: a load after a region is not forwarded from a store inside it",
          "[record][optimize][regions]") {
  for (bool loop : {false, true}) {
    INFO((loop ? "a loop" : "an if"));
    // s0 -> s1 (a store at the top and one in the region), then s1 -> s2: the second launch
    // must read s1 from memory.
    ff::rec::LaunchBody body{store_in_region_kernel(loop), {buffer_arg(0), buffer_arg(1)}};
    std::vector<ff::rec::LaunchArg> second = {buffer_arg(1), buffer_arg(2)};
    ff::rec::append_launch(body, double_kernel(false), second);
    body.ir.finalize();
    REQUIRE_NOTHROW(body.ir.validate());
    REQUIRE(body.ir.params.size() == 3);
    CHECK(body.ir.params[1].kind == ParamKind::BufferInOut);
    CHECK(count_ops(body.ir, IrOp::Load) == 2);  // s0, and s1 after the region
    const ff::IrInstr& last_load = [&]() -> const ff::IrInstr& {
      for (size_t k = body.ir.instrs.size(); k-- > 0;)
        if (body.ir.instrs[k].op == IrOp::Load)
          return body.ir.instrs[k];
      return body.ir.instrs[0];
    }();
    CHECK(last_load.a == 1);
    CHECK(ff::rec::remove_dead_work(body, [](uint32_t) { return true; }));
    body.ir.finalize();
    REQUIRE_NOTHROW(body.ir.validate());
    CHECK(count_ops(body.ir, IrOp::Load) == 2);
    // s1 is an intermediate nothing after the body reads: its stores still stay, as the load
    // after the region reads them (the top-level one where a lane skipped the region). Found
    // by this test: the top-level store went, and those lanes read stale memory.
    CHECK(ff::rec::remove_dead_work(body, [&](uint32_t p) { return body.args[p].slot != 1; }));
    body.ir.finalize();
    REQUIRE_NOTHROW(body.ir.validate());
    CHECK(count_ops(body.ir, IrOp::Store) == 3);
    CHECK(count_ops(body.ir, IrOp::Load) == 2);
  }
  // Without the region the load becomes the stored value.
  ff::KernelIR plain = double_kernel(false);
  ff::rec::LaunchBody body{plain, {buffer_arg(0), buffer_arg(1)}};
  std::vector<ff::rec::LaunchArg> second = {buffer_arg(1), buffer_arg(2)};
  ff::rec::append_launch(body, double_kernel(false), second);
  CHECK(count_ops(body.ir, IrOp::Load) == 1);
}

TEST_CASE("optimiser: a load inside a loop is not forwarded", "[record][optimize][regions]") {
  // s0 -> s1 at the top level, then a loop loading s1 twice: its load stays in the loop, and
  // s1's store stays too (the loop reads it).
  ff::rec::LaunchBody body{double_kernel(false), {buffer_arg(0), buffer_arg(1)}};
  std::vector<ff::rec::LaunchArg> second = {buffer_arg(1), buffer_arg(2)};
  ff::rec::append_launch(body, double_kernel(true), second);
  body.ir.finalize();
  REQUIRE_NOTHROW(body.ir.validate());
  std::vector<uint16_t> depth = ff::region_depths(body.ir);
  size_t loads_in_loop = 0;
  for (size_t k = 0; k < body.ir.instrs.size(); ++k)
    loads_in_loop += body.ir.instrs[k].op == IrOp::Load && depth[k] > 0 && body.ir.instrs[k].a == 1;
  CHECK(loads_in_loop == 1);
  CHECK(ff::rec::remove_dead_work(body, [&](uint32_t p) { return body.args[p].slot != 1; }));
  body.ir.finalize();
  REQUIRE_NOTHROW(body.ir.validate());
  // s1 is read by the loop: its store stays though nothing after the body reads s1 (found by
  // this test: it went).
  CHECK(count_ops(body.ir, IrOp::Store) == 2);
  // A load of the appended kernel in a loop does not become an earlier top-level load either.
  ff::rec::LaunchBody reread{double_kernel(false), {buffer_arg(0), buffer_arg(1)}};
  std::vector<ff::rec::LaunchArg> same_input = {buffer_arg(0), buffer_arg(2)};
  ff::rec::append_launch(reread, double_kernel(true), same_input);
  reread.ir.finalize();
  REQUIRE_NOTHROW(reread.ir.validate());
  CHECK(count_ops(reread.ir, IrOp::Load) == 2);
}

TEST_CASE("optimiser: side effects inside regions survive dead-work removal, dead pure work goes",
          "[record][optimize][regions]") {
  // Params: 0 in float32, 1 out float32, 2 inout uint32 (a counter), 3 inout float32, 4 bound.
  ff::KernelIR ir;
  ir.params = {{ParamKind::BufferIn, kF32},
               {ParamKind::BufferOut, kF32},
               {ParamKind::BufferInOut, kU32},
               {ParamKind::BufferInOut, kF32},
               {ParamKind::Scalar, kU64}};
  uint32_t x = ir.emit(IrOp::Load, kF32, {0});
  uint32_t zero = ir.emit(IrOp::Literal, kU32, {}, 0), one = ir.emit(IrOp::Literal, kU32, {}, 1);
  uint32_t yes = ir.emit(IrOp::Literal, kBool, {}, 1);
  marker(ir, IrOp::LoopBegin, ff::kNoOperand, 4);
  uint32_t c = ir.emit(IrOp::LoopVar, kU32, {zero});
  uint32_t acc = ir.emit(IrOp::LoopVar, kF32, {x});
  marker(ir, IrOp::LoopCond, yes);
  ir.emit(IrOp::Sin, kF32, {ir.emit(IrOp::Mul, kF32, {acc, x})});      // dead
  ir.emit(IrOp::Add, kU32, {c, c});                                    // dead
  ir.emit(IrOp::ScatterInc, kU32, {2, zero, yes, ff::kNoOperand, 4});  // value unused
  marker(ir, IrOp::IfBegin, ir.emit(IrOp::Eq, kBool, {c, one}));
  ir.emit(IrOp::Store, kF32, {1, acc});
  ir.emit(IrOp::Scatter, kF32, {3, c, yes, acc, 4});
  marker(ir, IrOp::IfElse);
  ir.emit(IrOp::Cos, kF32, {acc});  // dead
  marker(ir, IrOp::EndRegion);
  uint32_t nc = ir.emit(IrOp::Add, kU32, {c, one});
  uint32_t na = ir.emit(IrOp::Add, kF32, {acc, x});
  ir.emit(IrOp::Yield, kU32, {nc});
  ir.emit(IrOp::Yield, kF32, {na});
  marker(ir, IrOp::EndRegion);
  ir.emit(IrOp::Result, kU32);
  ir.emit(IrOp::Result, kF32);  // unused
  ir.finalize();
  REQUIRE_NOTHROW(ir.validate());
  std::vector<ff::rec::LaunchArg> args = {buffer_arg(0), buffer_arg(1), buffer_arg(2),
                                          buffer_arg(3), ff::rec::LaunchArg{}};
  // Nothing kept outside: the stores, scatters and increments in the loop still stay.
  ff::rec::LaunchBody body{ir, args};
  CHECK(ff::rec::remove_dead_work(body, [](uint32_t) { return false; }));
  body.ir.finalize();
  REQUIRE_NOTHROW(body.ir.validate());
  CHECK(count_ops(body.ir, IrOp::Store) == 1);
  CHECK(count_ops(body.ir, IrOp::Scatter) == 1);
  CHECK(count_ops(body.ir, IrOp::ScatterInc) == 1);
  CHECK(count_ops(body.ir, IrOp::Sin) == 0);
  CHECK(count_ops(body.ir, IrOp::Cos) == 0);
  CHECK(count_ops(body.ir, IrOp::Mul) == 0);
  CHECK(body.ir.instrs.size() == ir.instrs.size() - 4);  // mul, sin, c + c and cos go
  // Markers, carried values, yields and results all stay, so the regions are whole.
  for (IrOp op : {IrOp::LoopBegin, IrOp::LoopVar, IrOp::LoopCond, IrOp::IfBegin, IrOp::IfElse,
                  IrOp::EndRegion, IrOp::Yield, IrOp::Result})
    CHECK(count_ops(body.ir, op) == count_ops(ir, op));
  CHECK(body.ir.params.size() == 5);
}
