// The llvm backend's launch plans: kernel work estimates, plan_launch's decision and block
// shapes, and launches around the thresholds computing every element exactly once.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "backend/llvm/launch_plan.h"
#include "backend/llvm/llvm_backend.h"
#include "backend/llvm/llvm_tuning.h"
#include "support/host_values.h"

namespace {

using ff_test::copy_kernel;

using namespace ff;
using namespace ff::llvm_backend;

constexpr ScalarType F32 = ScalarType::Float32, F64 = ScalarType::Float64, I32 = ScalarType::Int32,
                     U32 = ScalarType::UInt32;

// out[i] = in[i] + 1.
KernelIR add_kernel() {
  KernelIR ir;
  ir.params = {{ParamKind::BufferIn, F32}, {ParamKind::BufferOut, F32}};
  uint32_t one = ir.emit(IrOp::Literal, F32, {}, 0x3f800000);
  ir.emit(IrOp::Store, F32, {1, ir.emit(IrOp::Add, F32, {ir.emit(IrOp::Load, F32, {0}), one})});
  ir.finalize();
  return ir;
}

// out[i] = sum over k < n_terms of op_k(in[i]), op_k cycling sin, exp, cos, sqrt.
KernelIR heavy_kernel(int n_terms) {
  KernelIR ir;
  ir.params = {{ParamKind::BufferIn, F32}, {ParamKind::BufferOut, F32}};
  uint32_t x = ir.emit(IrOp::Load, F32, {0});
  uint32_t acc = ir.emit(IrOp::Literal, F32, {}, 0);
  const IrOp ops[4] = {IrOp::Sin, IrOp::Exp, IrOp::Cos, IrOp::Sqrt};
  for (int k = 0; k < n_terms; ++k)
    acc = ir.emit(IrOp::Add, F32, {acc, ir.emit(ops[k % 4], F32, {x})});
  ir.emit(IrOp::Store, F32, {1, acc});
  ir.finalize();
  return ir;
}

// out[i] = x after `levels` nested loops, each of trips[i] iterations, whose innermost body
// does x = sin(x) + exp(x) * cos(x) + 1 (or the same body alone, levels = 0).
KernelIR loop_kernel(int levels) {
  KernelIR ir;
  ir.params = {{ParamKind::BufferIn, F32}, {ParamKind::BufferIn, U32}, {ParamKind::BufferOut, F32}};
  const ScalarType B = ScalarType::Bool;
  uint32_t x = ir.emit(IrOp::Load, F32, {0});
  uint32_t trips = ir.emit(IrOp::Load, U32, {1});
  uint32_t zero = ir.emit(IrOp::Literal, U32, {}, 0), one = ir.emit(IrOp::Literal, U32, {}, 1);
  uint32_t onef = ir.emit(IrOp::Literal, F32, {}, 0x3f800000);
  std::vector<uint32_t> counters;
  for (int l = 0; l < levels; ++l) {
    ir.emit(IrOp::LoopBegin, B, {}, kNoIterationLimit);
    uint32_t c = ir.emit(IrOp::LoopVar, U32, {zero});
    x = ir.emit(IrOp::LoopVar, F32, {x});
    ir.emit(IrOp::LoopCond, B, {ir.emit(IrOp::Lt, B, {c, trips})});
    counters.push_back(c);
  }
  uint32_t e =
      ir.emit(IrOp::Mul, F32, {ir.emit(IrOp::Exp, F32, {x}), ir.emit(IrOp::Cos, F32, {x})});
  x = ir.emit(IrOp::Add, F32, {ir.emit(IrOp::Add, F32, {ir.emit(IrOp::Sin, F32, {x}), e}), onef});
  for (int l = levels; l-- > 0;) {
    uint32_t next = ir.emit(IrOp::Add, U32, {counters[l], one});
    ir.emit(IrOp::Yield, U32, {next});
    ir.emit(IrOp::Yield, F32, {x});
    ir.emit(IrOp::EndRegion, B);
    ir.emit(IrOp::Result, U32);
    x = ir.emit(IrOp::Result, F32);
  }
  ir.emit(IrOp::Store, F32, {2, x});
  ir.finalize();
  ir.validate();
  return ir;
}

// Exact results for every element, and a count of how often each element ran:
//   q[i] = sum over k in 1..8 of (i ^ k) / d (Int32), s[i] = sin(i / 1024) (Float32),
//   hits[i] += 1 (ScatterAdd at index i: 1 where the element ran exactly once).
// Params: q, s, hits, d, bound of hits.
KernelIR checked_kernel() {
  KernelIR ir;
  ir.params = {{ParamKind::BufferOut, I32},
               {ParamKind::BufferOut, F32},
               {ParamKind::BufferInOut, U32},
               {ParamKind::Scalar, I32},
               {ParamKind::Scalar, ScalarType::UInt64}};
  uint32_t i = ir.emit(IrOp::Index, I32);
  uint32_t d = ir.emit(IrOp::Scalar, I32, {3});
  uint32_t q = ir.emit(IrOp::Literal, I32, {}, 0);
  for (uint64_t k = 1; k <= 8; ++k)
    q = ir.emit(
        IrOp::Add, I32,
        {q, ir.emit(IrOp::Div, I32,
                    {ir.emit(IrOp::Xor, I32, {i, ir.emit(IrOp::Literal, I32, {}, k)}), d})});
  ir.emit(IrOp::Store, I32, {0, q});
  uint32_t scale = ir.emit(IrOp::Literal, F32, {}, 0x3a800000);  // 1/1024
  uint32_t f = ir.emit(IrOp::Mul, F32, {ir.emit(IrOp::Cast, F32, {i}), scale});
  ir.emit(IrOp::Store, F32, {1, ir.emit(IrOp::Sin, F32, {f})});
  uint32_t yes = ir.emit(IrOp::Literal, ScalarType::Bool, {}, 1);
  uint32_t one = ir.emit(IrOp::Literal, U32, {}, 1);
  ir.emit(IrOp::ScatterAdd, U32, {2, i, yes, one, 4});
  ir.finalize();
  return ir;
}

// The invariants of every plan; returns the plan.
LaunchPlan checked_plan(uint64_t wpe, size_t size, unsigned threads, const LlvmTuning& t) {
  LaunchPlan p = plan_launch(wpe, size, threads, t);
  INFO("wpe " << wpe << ", size " << size << ", threads " << threads << ": " << p.n_blocks
              << " blocks of " << p.block);
  if (size == 0) {
    CHECK(p.n_blocks == 0);
    return p;
  }
  const uint64_t work = wpe * size;
  if (p.n_blocks == 1) {
    CHECK(p.block == size);
    CHECK_FALSE(p.wake);
    return p;
  }
  REQUIRE(p.n_blocks >= 2);
  CHECK(threads > 1);
  CHECK(work >= t.parallel_min_work);
  CHECK(p.block % kBlockAlign == 0);
  CHECK((p.n_blocks - 1) * p.block < size);  // every block has elements
  CHECK(p.n_blocks * p.block >= size);       // and together they cover the launch
  CHECK(p.n_blocks <= threads * kBlocksPerThread);
  if (p.n_blocks > threads)  // more than one block per thread only with block_min_work each
    CHECK(p.block * wpe >= t.block_min_work);
  CHECK(p.wake == (work >= t.wake_min_work));
  return p;
}

}  // namespace

TEST_CASE("kernel work per element weighs each op", "[llvm][launch_plan]") {
  const uint64_t copy32 = kernel_work_per_elem(copy_kernel(F32));
  CHECK(copy32 == 4);  // a load and a store
  CHECK(kernel_work_per_elem(copy_kernel(F64)) == 2 * copy32);
  CHECK(kernel_work_per_elem(add_kernel()) == copy32 + 1);  // the literal is free
  const uint64_t heavy = kernel_work_per_elem(heavy_kernel(40));
  CHECK(heavy >= 40 * 25);  // 30 transcendental ops and 10 square roots dwarf the adds
  CHECK(kernel_work_per_elem(heavy_kernel(4)) < heavy / 5);
  IrInstr div{IrOp::Div, F32};
  IrInstr idiv{IrOp::Div, I32};
  IrInstr add{IrOp::Add, F32};
  IrInstr sin{IrOp::Sin, F32};
  CHECK(instr_work(add) == 1);
  CHECK(instr_work(div) > instr_work(add));
  CHECK(instr_work(sin) > instr_work(div));
  CHECK(instr_work(idiv) > instr_work(sin));     // scalarised, one idiv per lane
  CHECK(kernel_work_per_elem(KernelIR{}) == 1);  // never 0: every launch has some cost
}

TEST_CASE("plan: a heavy kernel on 1,024 elements is split, a cheap one is not",
          "[llvm][launch_plan]") {
  const LlvmTuning t;
  const uint64_t heavy = kernel_work_per_elem(heavy_kernel(40));
  const uint64_t copy = kernel_work_per_elem(copy_kernel(F32));
  const uint64_t add = kernel_work_per_elem(add_kernel());
  LaunchPlan p = checked_plan(heavy, 1024, 2, t);
  CHECK(p.n_blocks >= 2);
  CHECK(p.n_blocks <= 2 * kBlocksPerThread);
  for (size_t n : {size_t(1024), size_t(30000)}) {
    CHECK(checked_plan(copy, n, 2, t).n_blocks == 1);
    CHECK(checked_plan(add, n, 2, t).n_blocks == 1);
    CHECK(checked_plan(copy, n, 16, t).n_blocks == 1);
  }
  // A single thread never splits; an empty launch has no block.
  CHECK(checked_plan(heavy, 1 << 20, 1, t).n_blocks == 1);
  CHECK(checked_plan(heavy, 0, 2, t).n_blocks == 0);
  // Large cheap launches still use the pool, and wake it when they are large enough.
  LaunchPlan big = checked_plan(copy, size_t(1) << 24, 2, t);
  CHECK(big.n_blocks == 2 * kBlocksPerThread);
  CHECK(big.wake);
  CHECK_FALSE(checked_plan(heavy, 1024, 2, t).wake);
}

TEST_CASE("plan: the work threshold decides, exactly at the boundary", "[llvm][launch_plan]") {
  LlvmTuning t;
  t.parallel_min_work = 100000;
  t.block_min_work = 0;
  for (uint64_t wpe : {uint64_t(1), uint64_t(7), uint64_t(100), uint64_t(781)}) {
    const size_t at = size_t((t.parallel_min_work + wpe - 1) / wpe);  // first size at the threshold
    if (at < 2 * kBlockAlign)
      continue;
    INFO("work per element " << wpe << ", threshold at " << at << " elements");
    CHECK(checked_plan(wpe, at - 1, 2, t).n_blocks == 1);
    CHECK(checked_plan(wpe, at, 2, t).n_blocks >= 2);
    CHECK(checked_plan(wpe, at + 1, 2, t).n_blocks >= 2);
  }
  // Below two aligned blocks nothing splits, even with no threshold at all.
  t.parallel_min_work = 0;
  CHECK(checked_plan(1000, 2 * kBlockAlign - 1, 2, t).n_blocks == 1);
  CHECK(checked_plan(1000, 2 * kBlockAlign, 2, t).n_blocks == 2);
  // UINT64_MAX never splits.
  t.parallel_min_work = std::numeric_limits<uint64_t>::max();
  CHECK(checked_plan(1000000, size_t(1) << 30, 8, t).n_blocks == 1);
}

TEST_CASE("plan: blocks hold block_min_work in whole 64-element steps", "[llvm][launch_plan]") {
  LlvmTuning t;
  t.parallel_min_work = 0;
  t.block_min_work = 64 * 1000;
  // 1000 per element: blocks of 64 elements hold enough, 8 of them (the cap for 2 threads).
  CHECK(checked_plan(1000, 512, 2, t) == LaunchPlan{8, 64, false});
  // 999 per element: 64 elements are not enough, so 4 blocks of 128.
  CHECK(checked_plan(999, 512, 2, t) == LaunchPlan{4, 128, false});
  // Rounding to 64 elements can leave fewer blocks than the cap: 640 / 8 = 80 -> 128.
  CHECK(checked_plan(1000, 640, 2, t) == LaunchPlan{5, 128, false});
  // Too little work for block_min_work in any block: still one block per thread.
  CHECK(checked_plan(10, 1024, 2, t) == LaunchPlan{2, 512, false});
  CHECK(checked_plan(10, 1024, 3, t) == LaunchPlan{3, 384, false});
  // Invariants over a grid of shapes, work and tunings.
  for (uint64_t bmw : {uint64_t(0), uint64_t(5000), uint64_t(1) << 16})
    for (uint64_t pmw : {uint64_t(0), uint64_t(20000), uint64_t(1) << 20})
      for (unsigned threads : {1u, 2u, 3u, 16u})
        for (uint64_t wpe : {uint64_t(1), uint64_t(3), uint64_t(250), uint64_t(4000)})
          for (size_t n :
               {size_t(0), size_t(1), size_t(63), size_t(64), size_t(65), size_t(127), size_t(128),
                size_t(129), size_t(1021), size_t(4099), size_t(65537), size_t(1000003)}) {
            t.block_min_work = bmw;
            t.parallel_min_work = pmw;
            LaunchPlan q = checked_plan(wpe, n, threads, t);
            // It splits whenever the work reaches the threshold and two blocks fit.
            bool can = threads > 1 && wpe * n >= pmw && n >= 2 * kBlockAlign;
            CHECK((q.n_blocks >= 2) == can);
          }
}

TEST_CASE("launches around the thresholds compute every element exactly once",
          "[llvm][launch_plan]") {
  LlvmTuning eager;  // splits anything with two 64-element blocks, into up to 8 blocks
  eager.parallel_min_work = 0;
  eager.block_min_work = 0;
  eager.wake_min_work = 0;
  for (const LlvmTuning& tuning : {LlvmTuning{}, eager}) {
    auto be = create_llvm_backend(BackendOptions{2}, tuning);
    KernelHandle h = be->compile(checked_kernel());
    const uint64_t wpe = kernel_work_per_elem(h);
    CHECK(wpe == kernel_work_per_elem(checked_kernel()));
    // The backend's plan is plan_launch's with its two threads and its tuning.
    CHECK(launch_plan(*be, h, 1024) == plan_launch(wpe, 1024, 2, tuning));
    const size_t at = size_t((tuning.parallel_min_work + wpe - 1) / wpe);
    std::vector<size_t> sizes = {0,    1,    63,   64,    65,    127,    128, 129,
                                 1021, 1024, 4099, 16411, 65537, at - 1, at,  at + 1};
    bool split_seen = false;
    for (size_t n : sizes) {
      if (n == size_t(-1))
        continue;
      INFO("size " << n);
      LaunchPlan p = launch_plan(*be, h, n);
      split_seen |= p.n_blocks >= 2;
      std::vector<int32_t> q(n + 1, -7);
      std::vector<float> s(n + 1, -7.f);
      std::vector<uint32_t> hits(n + 1, 0);
      be->launch(h, n, {},
                 std::vector<KernelArg>{KernelArg::buffer(q.data()), KernelArg::buffer(s.data()),
                                        KernelArg::buffer(hits.data()), KernelArg{7, {}},
                                        KernelArg{uint64_t(n), {}}});
      size_t bad = 0;
      for (size_t i = 0; i < n; ++i) {
        int32_t want_q = 0;
        for (int32_t k = 1; k <= 8; ++k)
          want_q += (int32_t(i) ^ k) / 7;
        float want_s = std::sin(float(i) * (1.f / 1024.f));
        bad += q[i] != want_q || !(std::abs(s[i] - want_s) <= 1e-6f) || hits[i] != 1;
      }
      CHECK(bad == 0);
      // Nothing past the end was touched.
      CHECK(q[n] == -7);
      CHECK(s[n] == -7.f);
      CHECK(hits[n] == 0);
    }
    CHECK(split_seen);  // the heavy kernel splits at some of these sizes under both tunings
  }
}

TEST_CASE("launch plans follow the backend's tuning and thread count", "[llvm][launch_plan]") {
  KernelIR heavy = heavy_kernel(40), copy = copy_kernel(F32);
  {
    auto be = create_llvm_backend(BackendOptions{2}, LlvmTuning{});
    CHECK(launch_plan(*be, be->compile(heavy), 1024).n_blocks >= 2);
    CHECK(launch_plan(*be, be->compile(copy), 1024).n_blocks == 1);
    CHECK(launch_plan(*be, be->compile(copy), 30000).n_blocks == 1);
  }
  {
    auto be = create_llvm_backend(BackendOptions{1}, LlvmTuning{});
    CHECK(launch_plan(*be, be->compile(heavy), 1 << 20).n_blocks == 1);
  }
  {
    LlvmTuning never;
    never.parallel_min_work = std::numeric_limits<uint64_t>::max();
    auto be = create_llvm_backend(BackendOptions{2}, never);
    CHECK(launch_plan(*be, be->compile(heavy), 1 << 20).n_blocks == 1);
  }
  {
    LlvmTuning always;
    always.parallel_min_work = 0;
    always.block_min_work = 0;
    auto be = create_llvm_backend(BackendOptions{2}, always);
    CHECK(launch_plan(*be, be->compile(copy), 1024).n_blocks == 2 * kBlocksPerThread);
  }
}

TEST_CASE("work estimates weigh loop bodies, so heavy loops split over every thread",
          "[llvm][launch_plan]") {
  const uint64_t flat = kernel_work_per_elem(loop_kernel(0));
  const uint64_t one = kernel_work_per_elem(loop_kernel(1));
  const uint64_t two = kernel_work_per_elem(loop_kernel(2));
  // The body's work (three transcendental calls and some adds) counts kLoopWeight times per
  // loop, its loads and store once.
  CHECK(one > kLoopWeight * (flat - 10));
  CHECK(one < kLoopWeight * (flat + 20));
  CHECK(two > kLoopWeight * kLoopWeight * (flat - 10));
  // Beyond kMaxLoopLevels loops the body counts no more (uncapped, two more levels would make
  // it 64 times as much); only the extra loops' own markers add.
  const uint64_t deep = kernel_work_per_elem(loop_kernel(kMaxLoopLevels));
  const uint64_t deeper = kernel_work_per_elem(loop_kernel(kMaxLoopLevels + 2));
  CHECK(deep > kLoopWeight * two - kLoopWeight * 20);
  CHECK(deeper < 2 * deep);
  // 65,536 lanes of the loop: as many blocks as the pool takes (kBlocksPerThread per thread),
  // on 2 threads and on 16, where the same body without the loop gets fewer.
  const LlvmTuning t;
  CHECK(checked_plan(flat, 65536, 16, t).n_blocks < 16 * kBlocksPerThread);
  for (unsigned threads : {2u, 16u}) {
    INFO(threads << " threads");
    LaunchPlan looped = checked_plan(one, 65536, threads, t);
    CHECK(looped.n_blocks == threads * kBlocksPerThread);
    CHECK(looped.wake);
  }
  // A loop with a cheap body splits where the same instructions without it would not.
  KernelIR cheap;
  cheap.params = {{ParamKind::BufferIn, U32}, {ParamKind::BufferOut, U32}};
  {
    const ScalarType B = ScalarType::Bool;
    uint32_t trips = cheap.emit(IrOp::Load, U32, {0});
    uint32_t zero = cheap.emit(IrOp::Literal, U32, {}, 0);
    cheap.emit(IrOp::LoopBegin, B, {}, kNoIterationLimit);
    uint32_t c = cheap.emit(IrOp::LoopVar, U32, {zero});
    cheap.emit(IrOp::LoopCond, B, {cheap.emit(IrOp::Lt, B, {c, trips})});
    uint32_t next = cheap.emit(IrOp::Add, U32, {c, cheap.emit(IrOp::Literal, U32, {}, 1)});
    cheap.emit(IrOp::Yield, U32, {next});
    cheap.emit(IrOp::EndRegion, B);
    cheap.emit(IrOp::Store, U32, {1, cheap.emit(IrOp::Result, U32)});
    cheap.finalize();
    REQUIRE_NOTHROW(cheap.validate());
  }
  uint64_t unweighted = 0;
  for (const IrInstr& in : cheap.instrs)
    unweighted += instr_work(in);
  const size_t n = 16384;
  REQUIRE(unweighted * n < t.parallel_min_work);
  CHECK(checked_plan(kernel_work_per_elem(cheap), n, 2, t).n_blocks >= 2);
}
