// One negative test per rule of RecordingData::validate (recorder/recording.cpp): a recording
// made by ff::record that uses every op kind is damaged in exactly one way per rule, and
// validation must refuse it with ff::FormatError (exactly that type) naming the rule. The rule
// families are the validator's: size expressions, kernels, slots, the flat tables, guards, each
// op's own fields, and slot lifetimes. Also: the error types at the recorder's boundary (a
// recording that fails validation when its scope closes is a FreezeError; a launch with the
// wrong argument count is a BackendError, as the backend below would say).
#include <freezeframe/freezeframe.h>

#include <catch2/catch.hpp>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "backend/llvm/llvm_backend.h"
#include "frontend/recording_state.h"
#include "recorder/recording.h"
#include "recorder/recording_backend.h"
#include "replay/replay_plan.h"
#include "replay/replayer.h"
#include "support/errors.h"

namespace {

using namespace ff;
using Catch::Matchers::Contains;
using rec::kNone;
using rec::OpCode;
using rec::RecordingData;

/// A recording with every op kind: allocs, launches (a gather with a bound argument, a scatter,
/// a scatter_add), a host constant copied in, a fill, reduce, prefix_sum, compress, releases of
/// temporaries and a guard after the compress. Inputs: x (float32), i (uint32), k (bool).
const RecordingData& good() {
  static const RecordingData data = [] {
    ff::init("llvm");
    ff::Float x = ff::Float::from({0.5f, 1.5f, 2.5f, 3.5f, 4.5f, 5.5f, 6.5f, 7.5f});
    ff::UInt32 i = ff::UInt32::from({1u, 0u, 3u, 2u, 7u, 6u, 5u, 4u});
    ff::Bool k = x > 3.f;
    ff::eval(k);
    ff::Recording r = ff::record({x, i, k}, [&] {
      ff::UInt32 idx = ff::arange<ff::UInt32>(ff::width(x) - 1);
      ff::Float d = ff::gather<ff::Float>(x, idx + 1u) - ff::gather<ff::Float>(x, idx);
      ff::Float t = ff::zeros<ff::Float>(ff::width(x));
      ff::scatter(t, x * 2.f, i);
      ff::scatter_add(t, 1.f, i % 3u);
      ff::Float c = ff::Float::from({1.f, 2.f, 3.f});  // a host constant
      ff::UInt32 hits = ff::compress(k);
      ff::Float picked = ff::gather<ff::Float>(x, hits);
      if (hits.size() > 2)  // a guard after the compress
        picked = picked * 2.f;
      return std::vector<ff::AnyArray>{
          d, ff::sum(d), ff::prefix_sum(x), t, c + 1.f, ff::max_reduce(x), picked};
    });
    return *ff::detail::recording_state(r)->data;
  }();
  return data;
}

/// Index of the first op with `code` (the test fails if there is none).
uint32_t first(const RecordingData& d, OpCode code) {
  for (uint32_t i = 0; i < d.ops.size(); ++i)
    if (d.ops[i].code == code)
      return i;
  FAIL("the recording has no " << rec::to_string(code) << " op");
  return 0;
}

/// The index of a launch whose kernel reads a buffer and takes a sized scalar (the gather).
uint32_t gather_launch(const RecordingData& d) {
  for (uint32_t i = 0; i < d.ops.size(); ++i) {
    const rec::Op& op = d.ops[i];
    if (op.code != OpCode::Launch)
      continue;
    for (uint32_t a = op.arg_begin; a < op.arg_end; ++a)
      if (!d.args[a].is_buffer && d.args[a].size_expr != kNone)
        return i;
  }
  FAIL("the recording has no launch with a sized scalar argument");
  return 0;
}

/// The first Alloc slot (a temporary) that is released, and the op that releases it.
std::pair<uint32_t, uint32_t> released_slot(const RecordingData& d) {
  for (uint32_t i = 0; i < d.ops.size(); ++i)
    if (d.ops[i].code == OpCode::Release)
      return {d.ops[i].dst, i};
  FAIL("the recording releases nothing");
  return {0, 0};
}

uint32_t push_expr(RecordingData& d, rec::ExprNode n) {
  d.exprs.push_back(n);
  return static_cast<uint32_t>(d.exprs.size() - 1);
}

uint32_t size32(size_t n) {
  return static_cast<uint32_t>(n);
}

struct Rule {
  const char* name;
  std::function<void(RecordingData&)> damage;
  std::string message;  // what the FormatError must say
};

/// Damages a copy of the good recording per rule and checks the refusal.
void check_rules(const std::vector<Rule>& rules) {
  const RecordingData& base = good();
  REQUIRE_NOTHROW(base.validate());
  for (const Rule& rule : rules) {
    DYNAMIC_SECTION(rule.name) {
      RecordingData d = base;
      rule.damage(d);
      fft::Thrown t = fft::thrown_by([&] { d.validate(); });
      INFO("threw " << t.type << ": " << t.what);
      CHECK(t.type == fft::type_name_of<FormatError>());
      CHECK_THAT(t.what, Contains(rule.message));
    }
  }
}

}  // namespace

TEST_CASE("the recording the validation tests damage uses every op kind and validates",
          "[record][validate]") {
  const RecordingData& d = good();
  for (OpCode code : {OpCode::Alloc, OpCode::Release, OpCode::Copy, OpCode::Fill, OpCode::Launch,
                      OpCode::Reduce, OpCode::PrefixSum, OpCode::Compress})
    (void)first(d, code);
  CHECK(d.guards.size() >= 1);
  CHECK(!d.constants.empty());
  CHECK(released_slot(d).first >= d.inputs.size());
  CHECK_NOTHROW(d.validate());
}

TEST_CASE("validation refuses damaged size expressions", "[record][validate][negative]") {
  check_rules({
      {"an invalid operator", [](RecordingData& d) { d.exprs[0].op = static_cast<SizeOp>(10); },
       "size expression 0 has an invalid operator"},
      {"a slot leaf out of range",
       [](RecordingData& d) {
         push_expr(d, {SizeOp::BufferSize, 0, size32(d.slots.size()), kNone, kNone});
       },
       "names slot 12 of 12"},
      {"an operand that does not precede its node",
       [](RecordingData& d) {
         uint32_t self = size32(d.exprs.size());
         push_expr(d, {SizeOp::Add, 0, kNone, 0, self});
       },
       "has an operand that does not precede it"},
      {"an expression that unfolds exponentially",
       [](RecordingData& d) {
         uint32_t e = 0;
         for (int k = 0; k < 40; ++k)  // 2^40 nodes if evaluated naively
           e = push_expr(d, {SizeOp::Add, 0, kNone, e, e});
       },
       "unfolds to more than 65536 nodes"},
  });
}

TEST_CASE("validation refuses missing or invalid kernels", "[record][validate][negative]") {
  check_rules({
      {"a missing kernel", [](RecordingData& d) { d.kernels[0] = nullptr; }, "kernel 0 is missing"},
      {"kernel IR that fails its own validation",
       [](RecordingData& d) {
         KernelIR ir = *d.kernels[0];
         ir.instrs.back().b = 99;  // an operand naming a later instruction
         d.kernels[0] = std::make_shared<const KernelIR>(ir);
       },
       "kernel 0: kernel IR instruction"},
  });
}

TEST_CASE("validation refuses damaged slots", "[record][validate][negative]") {
  check_rules({
      {"an invalid element type",
       [](RecordingData& d) { d.slots[0].type = static_cast<ScalarType>(9); },
       "slot 0 has an invalid element type"},
      {"a size expression out of range",
       [](RecordingData& d) { d.slots[3].size_expr = size32(d.exprs.size()); },
       "slot 3 names size expression"},
      {"an input index out of range",
       [](RecordingData& d) { d.slots[0].origin_index = size32(d.inputs.size()); },
       "slot 0 is bound to input 3 of 3"},
      {"an input that is bound to another slot",
       [](RecordingData& d) { d.slots[0].origin_index = 1; },
       "slot 0 names input 1, which is bound to another slot"},
      {"an allocating op that allocates another slot",
       [](RecordingData& d) { d.slots[3].origin_index = d.slots[4].origin_index; },
       "slot 3 claims an allocating op that does not allocate it"},
      {"external memory outside a session capture",
       [](RecordingData& d) { d.slots[3].origin = rec::SlotOrigin::External; },
       "slot 3 is external, which only session captures may hold"},
      {"an invalid origin",
       [](RecordingData& d) { d.slots[3].origin = static_cast<rec::SlotOrigin>(7); },
       "slot 3 has an invalid origin"},
  });
}

TEST_CASE("validation refuses damaged inputs, outputs, arguments and accesses",
          "[record][validate][negative]") {
  check_rules({
      {"an input naming a slot out of range",
       [](RecordingData& d) { d.inputs.push_back(size32(d.slots.size())); },
       "input 3 names slot 12 of 12"},
      {"an input bound to a slot that is not an input",
       [](RecordingData& d) { d.inputs.push_back(3); },
       "input 3 is bound to a slot that is not an input"},
      {"an output naming a slot out of range",
       [](RecordingData& d) { d.outputs[0].slot = size32(d.slots.size()); },
       "output 0 names slot 12 of 12"},
      {"a launch argument naming a slot out of range",
       [](RecordingData& d) {
         uint32_t a = d.ops[first(d, OpCode::Launch)].arg_begin;
         REQUIRE(d.args[a].is_buffer);
         d.args[a].slot = size32(d.slots.size());
       },
       "launch argument 0 names slot 12 of 12"},
      {"a launch argument naming a size expression out of range",
       [](RecordingData& d) {
         const rec::Op& op = d.ops[gather_launch(d)];
         for (uint32_t a = op.arg_begin; a < op.arg_end; ++a)
           if (!d.args[a].is_buffer && d.args[a].size_expr != kNone)
             d.args[a].size_expr = size32(d.exprs.size());
       },
       "names size expression"},
      {"an access naming a slot out of range",
       [](RecordingData& d) { d.accesses[0].slot = size32(d.slots.size()); },
       "access 0 names slot 12 of 12"},
  });
}

TEST_CASE("validation refuses damaged guards", "[record][validate][negative]") {
  check_rules({
      {"an invalid comparison", [](RecordingData& d) { d.guards[0].cmp = static_cast<SizeCmp>(9); },
       "guard 0 has an invalid comparison"},
      {"an expression out of range",
       [](RecordingData& d) { d.guards[0].rhs = size32(d.exprs.size()); },
       "guard 0 names size expression"},
      {"a position after a missing op",
       [](RecordingData& d) { d.guards[0].after_op = size32(d.ops.size()); },
       "guard 0 is placed after op 22 of 22"},
  });
}

TEST_CASE("validation refuses ops with damaged fields", "[record][validate][negative]") {
  // Appends an Alloc op of float32 elements into `slot` (no slot claims it).
  auto append_alloc = [](RecordingData& d, uint32_t slot) {
    rec::Op op;
    op.code = OpCode::Alloc;
    op.type = ScalarType::Float32;
    op.dst = slot;
    op.size_expr = 0;
    op.access_begin = op.access_end = 0;
    d.ops.push_back(op);
  };
  check_rules({
      {"an invalid op code",
       [](RecordingData& d) { d.ops[released_slot(d).second].code = static_cast<OpCode>(30); },
       "has an invalid op code"},
      {"an access range past the table",
       [](RecordingData& d) { d.ops[0].access_end = size32(d.accesses.size() + 1); },
       "op 0 (alloc) has an invalid access range"},
      {"a size expression out of range",
       [](RecordingData& d) { d.ops[first(d, OpCode::Fill)].size_expr = size32(d.exprs.size()); },
       "(fill) names size expression"},
      {"a sized op without a size",
       [](RecordingData& d) { d.ops[first(d, OpCode::Fill)].size_expr = kNone; },
       "(fill) has no size expression"},
      {"an alloc of a slot out of range",
       [&](RecordingData& d) { append_alloc(d, size32(d.slots.size())); },
       "op 22 (alloc) names slot 12 of 12"},
      {"an alloc of a slot with another origin", [&](RecordingData& d) { append_alloc(d, 0); },
       "op 22 (alloc) allocates slot 0 which names another origin"},
      {"an alloc of another element type than its slot's",
       [](RecordingData& d) { d.ops[0].type = ScalarType::Float64; },
       "op 0 (alloc) allocates float64 elements for a slot of float32"},
      {"a release of a slot out of range",
       [](RecordingData& d) { d.ops[released_slot(d).second].dst = size32(d.slots.size()); },
       "(release) names slot 12 of 12"},
      {"an invalid copy kind", [](RecordingData& d) { d.ops[first(d, OpCode::Copy)].sub = 3; },
       "(copy) has an invalid copy kind"},
      {"a copy of a missing constant",
       [](RecordingData& d) {
         d.ops[first(d, OpCode::Copy)].constant = size32(d.constants.size());
       },
       "(copy) names a missing constant"},
      {"a host read outside a session capture",
       [](RecordingData& d) {
         d.ops[first(d, OpCode::Copy)].sub = static_cast<uint8_t>(CopyKind::DeviceToHost);
       },
       "(copy) reads to the host, which only session captures may hold"},
      {"a fill of an invalid element size",
       [](RecordingData& d) { d.ops[first(d, OpCode::Fill)].elem_size = 3; },
       "(fill) has an invalid element size 3"},
      {"a launch of a kernel out of range",
       [](RecordingData& d) { d.ops[first(d, OpCode::Launch)].kernel = size32(d.kernels.size()); },
       "(launch) names kernel 5 of 5"},
      {"a launch argument range past the table",
       [](RecordingData& d) {
         d.ops[first(d, OpCode::Launch)].arg_end = size32(d.args.size() + 1);
       },
       "(launch) has an invalid argument range"},
      {"a launch with one argument too few",
       [](RecordingData& d) { --d.ops[first(d, OpCode::Launch)].arg_end; },
       "(launch) passes 3 arguments to a kernel with 4 parameters"},
      {"a launch argument of the wrong kind",
       [](RecordingData& d) {
         uint32_t a = d.ops[first(d, OpCode::Launch)].arg_begin;
         d.args[a].is_buffer = !d.args[a].is_buffer;
       },
       "(launch) argument 0 does not match its parameter's kind"},
      {"an invalid reduction", [](RecordingData& d) { d.ops[first(d, OpCode::Reduce)].sub = 6; },
       "(reduce) has an invalid reduction"},
      {"a reduction not defined for its type",
       [](RecordingData& d) {
         rec::Op& op = d.ops[first(d, OpCode::Reduce)];
         REQUIRE(op.sub == static_cast<uint8_t>(ReduceOp::Add));
         op.type = ScalarType::Bool;
       },
       "(reduce) reduces bool elements with reduction 0, which is not defined for them"},
      {"a reduction of another type than its slots'",
       [](RecordingData& d) { d.ops[first(d, OpCode::Reduce)].type = ScalarType::Float64; },
       "(needs float64 into float64)"},
      {"a prefix sum of bool elements",
       [](RecordingData& d) { d.ops[first(d, OpCode::PrefixSum)].type = ScalarType::Bool; },
       "(prefix_sum) sums elements of an invalid or bool type"},
      {"a compress of a float mask",
       [](RecordingData& d) { d.ops[first(d, OpCode::Compress)].src = d.inputs[0]; },
       "(compress) reads float32 slot 0 into uint32 slot 5 (needs bool into uint32)"},
  });
}

TEST_CASE("validation refuses slots used outside their lifetimes", "[record][validate][negative]") {
  check_rules({
      {"a release of a slot that is not live",
       [](RecordingData& d) { d.ops.push_back(d.ops[released_slot(d).second]); },
       "op 22 (release) releases slot 4 which is not live"},
      {"a launch reading a released slot",
       [](RecordingData& d) {
         auto [slot, release] = released_slot(d);
         for (uint32_t i = release + 1; i < d.ops.size(); ++i)
           if (d.ops[i].code == OpCode::Launch) {
             d.args[d.ops[i].arg_begin].slot = slot;
             return;
           }
         FAIL("no launch after the release");
       },
       "uses slot 4 outside its lifetime"},
      {"a reduction reading its own unwritten destination",
       [](RecordingData& d) {
         rec::Op& op = d.ops[first(d, OpCode::Reduce)];
         op.src = op.dst;
       },
       "(reduce) reads slot 7 before anything wrote it"},
      {"an access the op does not make",
       [](RecordingData& d) {
         const rec::Op& op = d.ops[first(d, OpCode::Launch)];
         REQUIRE(op.access_end > op.access_begin);
         d.accesses[op.access_begin] = {d.inputs[1], true};  // the kernel only reads input 1
       },
       "lists an access to slot 1 that the op does not make"},
      {"an output released by the recording",
       [](RecordingData& d) { d.outputs[0].slot = released_slot(d).first; },
       "output 0 (slot 4) is released by the recording"},
      {"an output never written",
       [](RecordingData& d) {
         uint32_t slot = size32(d.slots.size());
         d.slots.push_back(
             {ScalarType::Float32, rec::SlotOrigin::Alloc, size32(d.ops.size()), 0, 0});
         rec::Op op;
         op.code = OpCode::Alloc;
         op.type = ScalarType::Float32;
         op.dst = slot;
         op.size_expr = 0;
         d.ops.push_back(op);
         d.outputs[0].slot = slot;
       },
       "output 0 (slot 12) is never written by the recording"},
  });
}

TEST_CASE("a recording that fails validation when its scope closes is a FreezeError",
          "[record][validate]") {
  // Not damaged input: the recording could not be made (here an output is allocated inside the
  // scope and never written).
  rec::RecordingBackend rb(create_llvm_backend(BackendOptions{}), false);
  rec::Scope* scope = rb.open_scope({});
  void* p = rb.alloc(ScalarType::Float32, 4, {});
  const void* outs[] = {p};
  REQUIRE_THROWS_EXACTLY(rb.close_scope(scope, outs), rec::Refusal);  // a FreezeError
  rb.release(p);
}

TEST_CASE("the recorder refuses a launch with the wrong argument count as a BackendError",
          "[record][validate]") {
  // The same check, and the same type, as the llvm backend below it.
  rec::RecordingBackend rb(create_llvm_backend(BackendOptions{}), false);
  KernelIR ir;
  ir.params = {{ParamKind::BufferOut, ScalarType::Int32}};
  ir.emit(IrOp::Store, ScalarType::Int32, {0, ir.emit(IrOp::Index, ScalarType::Int32)});
  ir.finalize();
  KernelHandle k = rb.compile(ir);
  rec::Scope* scope = rb.open_scope({});
  CHECK_THROWS_EXACTLY(rb.launch(k, 4, {}, {}), BackendError);
  rb.abort_scope(scope);
  CHECK_THROWS_EXACTLY(rb.inner().launch(k, 4, {}, {}), BackendError);
}

TEST_CASE("a recording whose alloc type differs from its slot's is refused before it replays",
          "[record][validate]") {
  // Regression: validation did not compare them. The replay allocated op.type elements and
  // handed the buffer out as the slot's wider type, so reading the output overran it.
  ff::init("llvm");
  ff::Float64 x = ff::Float64::from({1.0, 2.0, 3.0, 4.0});
  ff::Recording r = ff::record({x}, [&] { return std::vector<ff::AnyArray>{x * 2.0}; });
  auto data = std::make_shared<RecordingData>(*ff::detail::recording_state(r)->data);
  rec::Op& alloc = data->ops[first(*data, OpCode::Alloc)];
  REQUIRE(alloc.type == ScalarType::Float64);
  alloc.type = ScalarType::Float32;
  auto state = std::make_shared<detail::RecordingState>();
  state->data = data;
  ff::Recording damaged(state);
  REQUIRE_THROWS_EXACTLY(damaged.replay({x}), FormatError);
}

TEST_CASE("a compress into a slot that is not uint32 is refused before it replays",
          "[record][validate]") {
  // Regression: the count a compress leaves is its destination's size, read as the slot's
  // type: a float64 destination would be handed out with twice the bytes it holds.
  ff::init("llvm");
  ff::Bool k = ff::Bool::from({true, false, true, true});
  ff::Recording r = ff::record({k}, [&] { return std::vector<ff::AnyArray>{ff::compress(k)}; });
  auto data = std::make_shared<RecordingData>(*ff::detail::recording_state(r)->data);
  uint32_t dst = data->ops[first(*data, OpCode::Compress)].dst;
  data->slots[dst].type = ScalarType::Float64;
  data->ops[data->slots[dst].origin_index].type = ScalarType::Float64;  // its alloc agrees
  auto state = std::make_shared<detail::RecordingState>();
  state->data = data;
  ff::Recording damaged(state);
  REQUIRE_THROWS_EXACTLY(damaged.replay({k}), FormatError);
}
