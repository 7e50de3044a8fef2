// Accumulating launches of the llvm backend (backend/llvm/accumulate_launch.h): which strategy
// a launch takes (alone, private copies, atomics), and that each gives the reference sums on
// 1-4 threads, at the edge sizes, with masks, out-of-range indices, targets that already hold
// values, two targets in one kernel and launches from two host threads at once.
#include <llvm/IR/Instructions.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include <bit>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <set>
#include <thread>
#include <type_traits>
#include <vector>

#include "backend/ir/ir_analysis.h"
#include "backend/ir/kernel_ir.h"
#include "backend/llvm/accumulate_launch.h"
#include "backend/llvm/launch_plan.h"
#include "backend/llvm/llvm_backend.h"
#include "backend/llvm/llvm_codegen.h"
#include "backend/llvm/llvm_jit.h"
#include "support/host_values.h"
#include "support/scatter_reference.h"

namespace {

using namespace ff;
using namespace ff::llvm_backend;
using ff_test::bits_of;
using ff_test::type_of;

uint32_t emit(KernelIR& ir, IrOp op, ScalarType t, uint32_t a = kNoOperand, uint32_t b = kNoOperand,
              uint32_t c = kNoOperand, uint32_t d = kNoOperand, uint32_t e = kNoOperand) {
  return ir.emit(op, t, {a, b, c, d, e}, 0, 0);
}

uint32_t param(KernelIR& ir, ParamKind kind, ScalarType t) {
  ir.params.push_back({kind, t});
  return static_cast<uint32_t>(ir.params.size() - 1);
}

// Params: 0 target, 1 idx (UInt32), 2 mask (Bool), 3 val, 4 the target's length; with
// `second`, also 5 a second target and 6 its length, which receives val * 2 at idx + 1.
// With `gather_target`, lane i also reads target[idx] (so the target is not privatisable).
// `op`: the accumulation (ScatterAdd ... ScatterOr) of both targets.
KernelIR accumulate_kernel(ScalarType t, bool second = false, bool gather_target = false,
                           IrOp op = IrOp::ScatterAdd) {
  KernelIR ir;
  uint32_t pt = param(ir, ParamKind::BufferInOut, t);
  uint32_t pi = param(ir, ParamKind::BufferIn, ScalarType::UInt32);
  uint32_t pm = param(ir, ParamKind::BufferIn, ScalarType::Bool);
  uint32_t pv = param(ir, ParamKind::BufferIn, t);
  uint32_t pn = param(ir, ParamKind::Scalar, ScalarType::UInt64);
  uint32_t idx = emit(ir, IrOp::Load, ScalarType::UInt32, pi);
  uint32_t mask = emit(ir, IrOp::Load, ScalarType::Bool, pm);
  uint32_t val = emit(ir, IrOp::Load, t, pv);
  if (gather_target) {
    uint32_t g = emit(ir, IrOp::Gather, t, pt, idx, mask, pn);
    val = emit(ir, IrOp::Add, t, val, emit(ir, IrOp::Sub, t, g, g));
  }
  emit(ir, op, t, pt, idx, mask, val, pn);
  if (second) {
    uint32_t pt2 = param(ir, ParamKind::BufferInOut, t);
    uint32_t pn2 = param(ir, ParamKind::Scalar, ScalarType::UInt64);
    uint32_t one = ir.emit(IrOp::Literal, ScalarType::UInt32,
                           {kNoOperand, kNoOperand, kNoOperand, kNoOperand, kNoOperand}, 1, 0);
    uint32_t idx2 = emit(ir, IrOp::Add, ScalarType::UInt32, idx, one);
    emit(ir, op, t, pt2, idx2, mask, emit(ir, IrOp::Add, t, val, val), pn2);
  }
  ir.finalize();
  return ir;
}

KernelArg buf(const void* p) {
  return KernelArg{bits_of(p)};
}

KernelArg scalar(uint64_t v) {
  return KernelArg{v};
}

// The inputs of one accumulation: indices with a few out of range, every 5th lane masked off.
struct Lanes {
  std::vector<uint32_t> idx;
  std::vector<uint8_t> mask;
};

Lanes make_lanes(size_t n, size_t bins, uint32_t seed) {
  Lanes l{std::vector<uint32_t>(n), std::vector<uint8_t>(n)};
  std::mt19937 rng(seed);
  for (size_t i = 0; i < n; ++i) {
    l.idx[i] = uint32_t(rng() % (bins + 2));  // bins and bins + 1 are out of range
    l.mask[i] = i % 5 != 3;
  }
  return l;
}

// Runs the accumulation of `vals` into `target` (and into `target2` at idx + 1, doubled) on
// `be` and returns the strategy the launch took.
template <class T>
AccumulateStrategy run(Backend& be, const KernelHandle& h, const AccumulateInfo& info,
                       const Lanes& l, const std::vector<T>& vals, std::vector<T>& target,
                       std::type_identity_t<std::vector<T>>* target2, unsigned threads,
                       uint64_t atomic_work = LlvmTuning{}.atomic_accumulate_work) {
  std::vector<KernelArg> args{buf(target.data()), buf(l.idx.data()), buf(l.mask.data()),
                              buf(vals.data()), scalar(target.size())};
  if (target2) {
    args.push_back(buf(target2->data()));
    args.push_back(scalar(target2->size()));
  }
  std::vector<uint64_t> words;
  for (const KernelArg& a : args)
    words.push_back(a.bits);
  size_t n = l.idx.size();
  LlvmTuning t;  // the backend's (check_type sets only its atomic work)
  t.atomic_accumulate_work = atomic_work;
  AccumulateStrategy how =
      choose_accumulate(info, words, n, launch_plan(be, h, n).n_blocks, threads,
                        kernel_work_per_elem(h), t.accumulate_costs());
  be.launch(h, n, {}, args);
  return how;
}

// `atomic_work`: the backend's LlvmTuning::atomic_accumulate_work (0: split launches that
// cannot keep private copies take atomics).
template <class T>
void check_type(unsigned threads, uint64_t atomic_work, std::set<AccumulateStrategy>& seen,
                IrOp op = IrOp::ScatterAdd) {
  LlvmTuning tuning;
  tuning.atomic_accumulate_work = atomic_work;
  auto be = create_llvm_backend(BackendOptions{threads}, tuning);
  for (bool second : {false, true}) {
    KernelIR ir = accumulate_kernel(type_of<T>(), second, false, op);
    AccumulateInfo info = accumulate_info(ir);
    REQUIRE(info.targets.size() == (second ? 2u : 1u));
    REQUIRE(info.privatizable);
    KernelHandle h = be->compile(ir);
    for (size_t n : {0, 1, 2, 7, 61, 4099, 20011, 100003})
      for (size_t bins : {1, 3, 1000, 20011, 100003}) {
        INFO(to_string(op) << "." << to_string(type_of<T>()) << ", " << threads << " threads, " << n
                           << " lanes into " << bins << " bins" << (second ? ", two targets" : ""));
        Lanes l = make_lanes(n, bins, uint32_t(n * 31 + bins));
        std::vector<T> vals(n);
        for (size_t i = 0; i < n; ++i)
          vals[i] = ff_test::lane_value<T>(op_facts(op).reduce, i);
        // Targets that already hold values (float Min/Max: NaN too): the launch combines
        // into them.
        std::vector<T> target(bins), target2(bins + 1);
        for (size_t b = 0; b < bins; ++b)
          target[b] = b % 5 == 4 && std::is_floating_point_v<T>
                          ? ff_test::lane_value<T>(op_facts(op).reduce, 0)
                          : T(b % 3 + 1);
        for (size_t b = 0; b <= bins; ++b)  // not 0: a float product must not meet 0 * inf
          target2[b] = T(b % 2 + 1);
        std::vector<T> want = target, want2 = target2;
        for (size_t i = 0; i < n; ++i) {
          if (!l.mask[i])
            continue;
          if (l.idx[i] < bins)
            want[l.idx[i]] =
                ff_test::reference_combine(op_facts(op).reduce, want[l.idx[i]], vals[i]);
          if (l.idx[i] + 1 < bins + 1)
            want2[l.idx[i] + 1] = ff_test::reference_combine(
                op_facts(op).reduce, want2[l.idx[i] + 1], T(vals[i] + vals[i]));
        }
        seen.insert(
            run(*be, h, info, l, vals, target, second ? &target2 : nullptr, threads, atomic_work));
        REQUIRE(ff_test::same_bits(target, want));
        if (second)
          REQUIRE(ff_test::same_bits(target2, want2));
      }
  }
}

}  // namespace

TEST_CASE("accumulate_info finds the targets and whether they can be privatised", "[llvm]") {
  AccumulateInfo one = accumulate_info(accumulate_kernel(ScalarType::Float32));
  REQUIRE(one.targets.size() == 1);
  CHECK(one.targets[0].param == 0);
  CHECK(one.targets[0].type == ScalarType::Float32);
  CHECK(one.targets[0].bounds == std::vector<uint32_t>{4});
  CHECK(one.privatizable);
  AccumulateInfo two = accumulate_info(accumulate_kernel(ScalarType::Int64, true));
  REQUIRE(two.targets.size() == 2);
  CHECK(two.targets[1].param == 5);
  CHECK(two.targets[1].bounds == std::vector<uint32_t>{6});
  CHECK(two.privatizable);
  // A target the kernel also reads cannot be split into partial sums.
  CHECK_FALSE(accumulate_info(accumulate_kernel(ScalarType::Int32, false, true)).privatizable);
  // A kernel without accumulations has none.
  KernelIR plain;
  uint32_t p = param(plain, ParamKind::BufferOut, ScalarType::Int32);
  emit(plain, IrOp::Store, ScalarType::Int32, p, emit(plain, IrOp::Index, ScalarType::Int32));
  plain.finalize();
  CHECK_FALSE(accumulate_info(plain).accumulates());
}

TEST_CASE("accumulating kernels add atomically or plainly as the mode word says", "[llvm]") {
  // The lane loops by name: the plain ones (exclusive launches: the lane loop, and the unrolled
  // lanes of a full vector) have no atomic, the atomic one has nothing else; in every loop
  // style, for integer and float targets.
  LlvmJit jit;
  for (ScalarType t : {ScalarType::Int32, ScalarType::Float64})
    for (LoopStyle style :
         {LoopStyle::VectorSplitTail, LoopStyle::VectorMasked, LoopStyle::Scalar}) {
      INFO(to_string(t) << ", loop style " << int(style));
      llvm::LLVMContext ctx;
      auto module = emit_kernel(accumulate_kernel(t), "k", jit.target(), style, ctx);
      int plain = 0, atomic = 0;
      for (const llvm::BasicBlock& block : *module->getFunction("k")) {
        bool has_atomic = false, has_store = false;
        for (const llvm::Instruction& in : block) {
          has_atomic = has_atomic || llvm::isa<llvm::AtomicRMWInst>(in);
          has_store = has_store || llvm::isa<llvm::StoreInst>(in);
        }
        if (block.getName().startswith("scatter_add_plain")) {
          ++plain;
          CHECK_FALSE(has_atomic);
          CHECK(has_store);
        } else if (block.getName().startswith("scatter_add_atomic")) {
          ++atomic;
          CHECK(has_atomic);
          CHECK_FALSE(has_store);
        } else {
          CHECK_FALSE(has_atomic);
        }
      }
      CHECK(atomic >= 1);
      CHECK(plain >= atomic);  // a plain loop beside each atomic one (and the unrolled lanes)
    }
}

TEST_CASE("a launch's writes are unaliased unless a written parameter shares another's buffer",
          "[llvm]") {
  // An accumulation into param 0 with indices from param 1, and a plain store of the values
  // into param 5: both written.
  KernelIR ir;
  uint32_t pt = param(ir, ParamKind::BufferInOut, ScalarType::Float32);
  uint32_t pi = param(ir, ParamKind::BufferIn, ScalarType::UInt32);
  uint32_t pm = param(ir, ParamKind::BufferIn, ScalarType::Bool);
  uint32_t pv = param(ir, ParamKind::BufferIn, ScalarType::Float32);
  uint32_t pn = param(ir, ParamKind::Scalar, ScalarType::UInt64);
  uint32_t po = param(ir, ParamKind::BufferOut, ScalarType::Float32);
  uint32_t idx = emit(ir, IrOp::Load, ScalarType::UInt32, pi);
  uint32_t mask = emit(ir, IrOp::Load, ScalarType::Bool, pm);
  uint32_t val = emit(ir, IrOp::Load, ScalarType::Float32, pv);
  emit(ir, IrOp::ScatterAdd, ScalarType::Float32, pt, idx, mask, val, pn);
  emit(ir, IrOp::Store, ScalarType::Float32, po, val);
  ir.finalize();
  AccumulateInfo info = accumulate_info(ir);
  CHECK(info.written == std::vector<uint32_t>{pt, po});
  CHECK(writes_unaliased(info, std::vector<uint64_t>{1, 2, 3, 4, 99, 5}));
  // The store's buffer is the index input: a lane reading its index again would see a store.
  CHECK_FALSE(writes_unaliased(info, std::vector<uint64_t>{1, 2, 3, 4, 99, 2}));
  CHECK_FALSE(writes_unaliased(info, std::vector<uint64_t>{1, 2, 3, 1, 99, 5}));  // target
  CHECK_FALSE(writes_unaliased(info, std::vector<uint64_t>{1, 2, 3, 4, 99, 1}));  // two writes
  // Two accumulation targets on one buffer combine in any order: still unaliased.
  AccumulateInfo two = accumulate_info(accumulate_kernel(ScalarType::Float32, true));
  CHECK(two.written == std::vector<uint32_t>{0, 5});
  CHECK(writes_unaliased(two, std::vector<uint64_t>{1, 2, 3, 4, 37, 1, 38}));
  CHECK_FALSE(writes_unaliased(two, std::vector<uint64_t>{1, 2, 3, 4, 37, 2, 38}));
}

TEST_CASE("an accumulating launch chooses alone, private copies or atomics", "[llvm]") {
  AccumulateInfo info = accumulate_info(accumulate_kernel(ScalarType::Float32));
  float target[1024], other[4];
  auto args = [&](uint64_t bins, const void* fourth = nullptr) {
    return std::vector<uint64_t>{bits_of(target), bits_of(other), bits_of(other),
                                 bits_of(fourth ? fourth : other), bins};
  };
  using S = AccumulateStrategy;
  constexpr uint64_t w = 90, atomic = 3000;  // work per element; an atomic lane's (LlvmTuning)
  // A privatised split's start and its cost per byte of the copies, as LlvmTuning's defaults.
  constexpr uint64_t start = uint64_t{1} << 20, per_byte = 64;
  auto choose = [&](const AccumulateInfo& i, const std::vector<uint64_t>& a, size_t size,
                    size_t n_blocks, unsigned threads, uint64_t work = 90) {
    return choose_accumulate(i, a, size, n_blocks, threads, work, {atomic, start, per_byte});
  };
  // One block (or one thread): no other thread adds, whatever the sizes.
  CHECK(choose(info, args(1024), 65536, 1, 2) == S::Alone);
  CHECK(choose(info, args(1 << 30), 1 << 20, 8, 1) == S::Alone);
  // Small targets and enough work for the other threads to pay for the split and the copies:
  // private copies. 1,024 floats on 2 threads: (2^20 + 4,096 * 64) * 2 / 90 = 29,127.1 lanes.
  CHECK(choose(info, args(1024), 65536, 2, 2) == S::Private);
  CHECK(choose(info, args(1024), 29128, 2, 2) == S::Private);
  CHECK(choose(info, args(1024), 29127, 2, 2) == S::Alone);
  CHECK(choose(info, args(1024), 29127, 2, 2, 91) == S::Private);  // more work per lane
  CHECK(choose(info, args(1), 23393, 2, 2) == S::Private);  // a copy is one cache line (64 B)
  CHECK(choose(info, args(1), 23392, 2, 2) == S::Alone);
  // More threads take more of the work, and need more copies: (2^20 + 3 * 4,096 * 64) * 4 /
  // 3 / 90 = 27,186 lanes on 4 (27,185.3).
  CHECK(choose(info, args(1024), 27186, 4, 4) == S::Private);
  CHECK(choose(info, args(1024), 27185, 4, 4) == S::Alone);
  // No start or copy cost: any split launch whose targets allow copies keeps them.
  CHECK(choose_accumulate(info, args(1024), 128, 2, 2, w, {atomic, 0, 0}) == S::Private);
  // Targets as large as the launch, or past the copy's cap: alone, unless the kernel's other
  // work split over the threads saves more than the atomics cost.
  CHECK(choose(info, args(1000000), 1000000, 8, 2) == S::Alone);
  CHECK(choose(info, args(1000000), 1000000, 8, 2, 3001) == S::Atomic);
  CHECK(choose(info, args(1000000), 1000000, 8, 2, 3000) == S::Alone);
  CHECK(choose(info, args(1000000), 1000000, 16, 16, 201) == S::Atomic);  // 15 * 201 > 3000
  CHECK(choose(info, args(kPrivateMaxBytes / 4 + 16), uint64_t{1} << 32, 64, 2) == S::Alone);
  CHECK(choose_accumulate(info, args(1000000), 1000000, 8, 2, w, {0, start, per_byte}) ==
        S::Atomic);
  // Two accumulations cost twice the atomics.
  AccumulateInfo two = accumulate_info(accumulate_kernel(ScalarType::Float32, true));
  CHECK(two.n_accumulations == 2);
  auto two_args = args(1000000);
  two_args.push_back(bits_of(other));
  two_args.push_back(1000000);
  CHECK(choose(two, two_args, 1000000, 8, 2, 5000) == S::Alone);
  CHECK(choose(two, two_args, 1000000, 8, 2, 6000) == S::Alone);
  CHECK(choose(two, two_args, 1000000, 8, 2, 6001) == S::Atomic);
  // The target bound to another parameter too (the kernel may read it): no private copies.
  CHECK(choose(info, args(1024, target), 65536, 2, 2) == S::Alone);
  CHECK(choose(info, args(1024, target), 65536, 2, 2, 4000) == S::Atomic);
  // A target the kernel also reads: no private copies.
  AccumulateInfo read = accumulate_info(accumulate_kernel(ScalarType::Float32, false, true));
  CHECK(choose(read, args(1024), 65536, 2, 2) == S::Alone);
  CHECK(choose(read, args(1024), 65536, 2, 2, 4000) == S::Atomic);
}

TEST_CASE("accumulating launches give the reference sums by every strategy", "[llvm]") {
  for (unsigned threads : {1u, 2u, 3u, 4u})
    for (uint64_t atomic_work : {LlvmTuning{}.atomic_accumulate_work, uint64_t{0}}) {
      std::set<AccumulateStrategy> seen;
      check_type<int32_t>(threads, atomic_work, seen);
      check_type<uint32_t>(threads, atomic_work, seen);
      check_type<int64_t>(threads, atomic_work, seen);
      check_type<uint64_t>(threads, atomic_work, seen);
      check_type<float>(threads, atomic_work, seen);
      check_type<double>(threads, atomic_work, seen);
      INFO(threads << " threads, atomic work " << atomic_work);
      CHECK(seen.count(AccumulateStrategy::Alone));
      if (threads > 1) {  // the sizes above reach each strategy
        CHECK(seen.count(AccumulateStrategy::Private));
        CHECK(seen.count(AccumulateStrategy::Atomic) == (atomic_work == 0));
      }
    }
}

TEST_CASE("scatter-reductions of every kind give the reference results by every strategy",
          "[llvm]") {
  // Exactly, floats included: the values make every order of lanes give one result, and float
  // Min/Max meet NaNs and zeros of both signs in the values and the targets.
  for (unsigned threads : {1u, 2u, 3u})
    for (uint64_t atomic_work : {LlvmTuning{}.atomic_accumulate_work, uint64_t{0}}) {
      std::set<AccumulateStrategy> seen;
      for (IrOp op : {IrOp::ScatterMul, IrOp::ScatterMin, IrOp::ScatterMax}) {
        check_type<int32_t>(threads, atomic_work, seen, op);
        check_type<uint64_t>(threads, atomic_work, seen, op);
        check_type<float>(threads, atomic_work, seen, op);
        check_type<double>(threads, atomic_work, seen, op);
      }
      for (IrOp op : {IrOp::ScatterAnd, IrOp::ScatterOr}) {
        check_type<uint32_t>(threads, atomic_work, seen, op);
        check_type<int64_t>(threads, atomic_work, seen, op);
      }
      INFO(threads << " threads, atomic work " << atomic_work);
      CHECK(seen.count(AccumulateStrategy::Alone));
      if (threads > 1) {
        CHECK(seen.count(AccumulateStrategy::Private));
        CHECK(seen.count(AccumulateStrategy::Atomic) == (atomic_work == 0));
      }
    }
}

TEST_CASE("a target accumulated by two kinds of reduction is not privatised", "[llvm]") {
  KernelIR ir = accumulate_kernel(ScalarType::Int32);
  // A second accumulation into the same target with another op.
  IrInstr again = ir.instrs.back();
  again.op = IrOp::ScatterMax;
  ir.instrs.push_back(again);
  ir.finalize();
  AccumulateInfo info = accumulate_info(ir);
  REQUIRE(info.targets.size() == 1);
  CHECK(info.n_accumulations == 2);
  CHECK_FALSE(info.privatizable);
  CHECK(accumulate_info(accumulate_kernel(ScalarType::Int32, false, false, IrOp::ScatterMax))
            .targets[0]
            .op == ReduceOp::Max);
}

TEST_CASE("an accumulation alone on one thread adds floats in lane order, as a loop does",
          "[llvm]") {
  auto be = create_llvm_backend(BackendOptions{1});
  KernelIR ir = accumulate_kernel(ScalarType::Float32);
  KernelHandle h = be->compile(ir);
  for (size_t n : {1, 2, 13, 1000, 65537}) {
    Lanes l = make_lanes(n, 37, 7);
    std::vector<float> vals(n);
    std::mt19937 rng{uint32_t(n)};
    std::uniform_real_distribution<float> dist(-1e3f, 1e3f);
    for (float& v : vals)
      v = dist(rng);
    std::vector<float> target(37, 0.1f), want = target;
    for (size_t i = 0; i < n; ++i)
      if (l.mask[i] && l.idx[i] < 37)
        want[l.idx[i]] += vals[i];
    CHECK(run(*be, h, accumulate_info(ir), l, vals, target, nullptr, 1) ==
          AccumulateStrategy::Alone);
    for (size_t b = 0; b < 37; ++b)
      REQUIRE(std::bit_cast<uint32_t>(target[b]) == std::bit_cast<uint32_t>(want[b]));
  }
}

TEST_CASE(
    "a full vector reads its lanes' indices from memory only where no target aliases an input",
    "[llvm]") {
  // Every lane active (the tests above mask every fifth lane off): the unrolled lanes of a
  // full vector, with the index taken out of the vector register (mode word 1) or read from
  // the input again (1 | kWritesUnaliased); the value always comes from its register.
  KernelIR ir = accumulate_kernel(ScalarType::Float32);
  AccumulateInfo info = accumulate_info(ir);
  LlvmJit jit;
  const size_t n = 256;  // whole vectors at every width
  std::vector<uint8_t> mask(n, 1);
  for (Tier tier : {Tier::Quick, Tier::Optimized}) {
    INFO((tier == Tier::Quick ? "quick" : "optimized") << " tier");
    auto code = jit.compile(ir, tier);
    auto launch = [&](void* target, const uint32_t* idx, const float* vals, uint64_t bins,
                      uint64_t mode) {
      uint64_t args[] = {bits_of(target), bits_of(idx), bits_of(mask.data()),
                         bits_of(vals),   bins,         mode};
      code->entry()(0, n, args);
    };
    // Separate inputs: both ways give the serial loop's sums, bit for bit.
    std::vector<uint32_t> idx(n);
    std::vector<float> vals(n);
    std::mt19937 rng(5);
    for (size_t i = 0; i < n; ++i) {
      idx[i] = uint32_t(rng() % 37);
      vals[i] = float(rng() % 1000) * 0.37f;
    }
    std::vector<float> want(37, 0.5f);
    for (size_t i = 0; i < n; ++i)
      want[idx[i]] += vals[i];
    uint64_t words[] = {1, 2, 3, 4, 37};  // distinct buffers
    CHECK(writes_unaliased(info, words));
    for (uint64_t mode : {uint64_t{1}, 1 | kWritesUnaliased}) {
      std::vector<float> target(37, 0.5f);
      launch(target.data(), idx.data(), vals.data(), 37, mode);
      CHECK(ff_test::same_bits(target, want));
    }
    // The indices are the target itself: lane i takes index i + 1 and adds the smallest
    // subnormal there (subnormals add as their bit patterns do), so each lane moves the index
    // the next lane reads. Read from memory again, lane 1 would see lane 0's write. The launch
    // leaves the bit off for such arguments, and the register keeps each index as loaded.
    // (Forced on, a lane may leave the range its loaded index was checked against: the buffer
    // has room for every index a lane can then reach, at most 2n.)
    uint64_t aliased[] = {1, 1, 3, 4, n + 1};
    CHECK_FALSE(writes_unaliased(info, aliased));
    std::vector<uint32_t> start(2 * n + 2);
    std::iota(start.begin(), start.end(), 1u);
    const std::vector<float> tiny(n, std::bit_cast<float>(1u));
    std::vector<uint32_t> registers = start, memory = start;
    launch(registers.data(), registers.data(), tiny.data(), n + 1, 1);
    launch(memory.data(), memory.data(), tiny.data(), n + 1, 1 | kWritesUnaliased);
    CHECK(registers != memory);
    // Within the first vector (at least 4 lanes at every width) lane i added one at its loaded
    // index i + 1; no later lane reaches those elements.
    for (size_t i = 1; i <= 4; ++i)
      CHECK(registers[i] == start[i] + 1);
  }
}

TEST_CASE("accumulating launches from two host threads at once", "[llvm]") {
  // The pool runs one job at a time, so one launch runs its parts on its own thread; each
  // launching thread has its own private copies.
  auto be = create_llvm_backend(BackendOptions{2});
  KernelIR ir = accumulate_kernel(ScalarType::Int64);
  KernelHandle h = be->compile(ir);
  AccumulateInfo info = accumulate_info(ir);
  const size_t n = 100003, bins = 1000;
  bool ok[2] = {false, false};
  auto work = [&](int t) {
    Lanes l = make_lanes(n, bins, uint32_t(t + 1));
    std::vector<int64_t> vals(n, t + 1);
    bool all = true;
    for (int round = 0; round < 20; ++round) {
      std::vector<int64_t> target(bins, 0), want(bins, 0);
      for (size_t i = 0; i < n; ++i)
        if (l.mask[i] && l.idx[i] < bins)
          want[l.idx[i]] += t + 1;
      all = all && run(*be, h, info, l, vals, target, nullptr, 2) == AccumulateStrategy::Private;
      all = all && target == want;
    }
    ok[t] = all;
  };
  std::thread other(work, 1);
  work(0);
  other.join();
  CHECK(ok[0]);
  CHECK(ok[1]);
}
