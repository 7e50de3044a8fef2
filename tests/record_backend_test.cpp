// The RecordingBackend and the replayer driven directly, below the tracer: the refusals and
// the pointer arithmetic that the public API cannot provoke on purpose (a buffer read before
// anything wrote it, a pointer into the middle of a buffer, an offset that no longer fits its
// slot at replay), and the warning for a size converted to a plain integer inside a scope.
#include <freezeframe/freezeframe.h>
#include <spdlog/sinks/ostream_sink.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <memory>
#include <sstream>
#include <vector>

#include "backend/llvm/llvm_backend.h"
#include "common/log.h"
#include "frontend/recording_state.h"
#include "recorder/recording_backend.h"
#include "replay/replay_plan.h"
#include "replay/replayer.h"
#include "support/errors.h"

namespace {

using namespace ff;

// out[i] = in[i] * 2 over float32.
KernelIR doubling_kernel() {
  KernelIR ir;
  ir.params = {{ParamKind::BufferIn, ScalarType::Float32},
               {ParamKind::BufferOut, ScalarType::Float32}};
  const ScalarType F = ScalarType::Float32;
  uint32_t x = ir.emit(IrOp::Load, F, {0});
  uint32_t two = ir.emit(IrOp::Literal, F, {}, 0x40000000);  // 2.0f
  ir.emit(IrOp::Store, F, {1, ir.emit(IrOp::Mul, F, {x, two})});
  ir.finalize();
  return ir;
}

struct Env {
  rec::RecordingBackend backend{create_llvm_backend(BackendOptions{}), false};
  KernelHandle kernel = backend.compile(doubling_kernel());

  // A buffer holding `values`, made outside any scope.
  float* upload(const std::vector<float>& values) {
    auto* p = static_cast<float*>(backend.alloc(ScalarType::Float32, values.size(), {}));
    backend.copy(p, values.data(), values.size() * sizeof(float), CopyKind::HostToDevice);
    return p;
  }

  std::vector<float> download(const void* p, size_t n) {
    std::vector<float> out(n);
    backend.copy(out.data(), p, n * sizeof(float), CopyKind::DeviceToHost);
    return out;
  }

  void launch(const void* in, void* out, size_t n) {
    KernelArg args[] = {KernelArg::buffer(in), KernelArg::buffer(out)};
    backend.launch(kernel, n, {}, args);
  }
};

// The message of the exception of exactly type E that `f` throws (another type, a subclass
// included, fails the test).
template <class E, class F>
std::string message_of(F&& f) {
  fft::Thrown t = fft::thrown_by(f);
  INFO("threw " << t.type << ": " << t.what);
  REQUIRE(t.type == fft::type_name_of<E>());
  return t.what;
}

template <class F>
std::string freeze_message(F&& f) {
  return message_of<FreezeError>(f);
}

// What the recorder refuses is a rec::Refusal (a FreezeError; ff::record reports it as exactly
// FreezeError, tests/record_refusals.cpp).
template <class F>
std::string refusal_message(F&& f) {
  return message_of<rec::Refusal>(f);
}

std::vector<float> iota_floats(size_t n, float start) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = start + static_cast<float>(i);
  return v;
}

}  // namespace

TEST_CASE("refuse: a buffer read before anything wrote it", "[record][refusal]") {
  Env env;
  rec::Scope* scope = env.backend.open_scope({});
  void* fresh = env.backend.alloc(ScalarType::Float32, 64, {});
  void* out = env.backend.alloc(ScalarType::Float32, 64, {});
  uint64_t launches = env.backend.stats().launches;

  SECTION("by a kernel") {
    CHECK_THAT(refusal_message([&] { env.launch(fresh, out, 64); }),
               Catch::Matchers::Contains("reads slot s0 before anything wrote it"));
    CHECK(env.backend.stats().launches == launches);  // refused before it ran
  }
  SECTION("by a device copy") {
    REQUIRE_THROWS_EXACTLY(
        env.backend.copy(out, fresh, 64 * sizeof(float), CopyKind::DeviceToDevice), rec::Refusal);
  }
  SECTION("by a reduction") {
    REQUIRE_THROWS_EXACTLY(env.backend.reduce(ReduceOp::Add, ScalarType::Float32, fresh, 64, out),
                           rec::Refusal);
  }
  env.backend.release(fresh);
  env.backend.release(out);
  env.backend.abort_scope(scope);

  // The next recording works.
  rec::Scope* next = env.backend.open_scope({});
  float* in = static_cast<float*>(env.backend.alloc(ScalarType::Float32, 8, {}));
  env.backend.fill(in, 8, 4, 0x3f800000);  // 1.0f: written, so readable
  void* doubled = env.backend.alloc(ScalarType::Float32, 8, {});
  env.launch(in, doubled, 8);
  const void* outputs[] = {doubled};
  rec::ValidatedRecording data = env.backend.close_scope(next, outputs);
  CHECK(data->ops.size() == 4);  // alloc, fill, alloc, launch
  CHECK(env.download(doubled, 8) == std::vector<float>(8, 2.f));
  env.backend.release(in);
  env.backend.release(doubled);
}

TEST_CASE("a pointer into the middle of a buffer is recorded as slot plus offset",
          "[record][offset]") {
  Env env;
  float* input = env.upload(iota_floats(100, 0.f));
  rec::InputBinding bindings[] = {{input, ScalarType::Float32, 100}};
  rec::Scope* scope = env.backend.open_scope(bindings);
  void* out = env.backend.alloc(ScalarType::Float32, 50, {});
  env.launch(input + 10, out, 50);  // elements [10, 60) of the input
  const void* outputs[] = {out};
  rec::ValidatedRecording data = env.backend.close_scope(scope, outputs);
  CHECK(env.download(out, 3) == std::vector<float>{20.f, 22.f, 24.f});

  // The launch's first argument is the input's slot at byte offset 40.
  const rec::Op* launch = nullptr;
  for (const rec::Op& op : data->ops)
    if (op.code == rec::OpCode::Launch)
      launch = &op;
  REQUIRE(launch != nullptr);
  const rec::LaunchArg& arg = data->args[launch->arg_begin];
  CHECK(arg.is_buffer);
  CHECK(arg.slot == data->inputs[0]);
  CHECK(arg.offset == 10 * sizeof(float));

  replay::ReplayPlan plan(data, env.backend);
  SECTION("replays with the offset applied to the new input") {
    float* other = env.upload(iota_floats(100, 1000.f));
    replay::ReplayInput in[] = {{other, ScalarType::Float32, 100}};
    auto results = replay::run(plan, env.backend, in, {});
    REQUIRE(results.size() == 1);
    REQUIRE(results[0].size == 50);
    std::vector<float> got = env.download(results[0].ptr, 50);
    for (size_t i = 0; i < 50; ++i)
      CHECK(got[i] == 2.f * (1010.f + static_cast<float>(i)));
    env.backend.release(results[0].ptr);
    env.backend.release(other);
  }
  SECTION("refuses an input too small for the offset and the launch") {
    float* small = env.upload(iota_floats(20, 0.f));
    replay::ReplayInput in[] = {{small, ScalarType::Float32, 20}};
    uint64_t launches = env.backend.stats().launches;
    CHECK_THAT(freeze_message([&] { replay::run(plan, env.backend, in, {}); }),
               Catch::Matchers::Contains("would access bytes [40, 240)"));
    CHECK(env.backend.stats().launches == launches);  // nothing ran out of bounds
    env.backend.release(small);
  }
  env.backend.release(out);
  env.backend.release(input);
}

TEST_CASE("a size converted to a plain integer inside a recording pins it and logs where",
          "[record][size]") {
  std::ostringstream log;
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(log);
  auto& logger = logging::tracer();
  logger.sinks().push_back(sink);

  struct Unhook {
    spdlog::logger& logger;

    ~Unhook() { logger.sinks().pop_back(); }
  } unhook{logger};

  ff::init("llvm");
  auto x = ff::Float32::from(std::vector<float>(10, 1.f));
  ff::Recording r = ff::record({x}, [&] {
    size_t plain = ff::width(x) - 1;  // provenance lost here
    return std::vector<ff::AnyArray>{ff::gather(x, ff::arange<ff::UInt32>(plain))};
  });
  CHECK_THAT(log.str(), Catch::Matchers::Contains("the size (width(input 0) - 1) = 9 was "
                                                  "converted to a plain integer") &&
                            Catch::Matchers::Contains("pinned to (width(input 0) - 1) = 9"));
  REQUIRE(r.n_guards() == 1);

  // At the recorded size the pinned value is right, and the recording replays.
  auto same = ff::Float32::from(std::vector<float>(10, 2.f));
  auto out = r.replay({ff::AnyArray(same)});
  CHECK(out[0].as<ff::Float32>().to_vector() == std::vector<float>(9, 2.f));

  // At another size the stale constant 9 would be wrong (traced code gives 29 elements):
  // the pin refuses, naming the conversion.
  auto y = ff::Float32::from(std::vector<float>(30, 1.f));
  REQUIRE_THROWS_EXACTLY(r.replay({ff::AnyArray(y)}), ff::GuardError);
  REQUIRE_THROWS_WITH(r.replay({ff::AnyArray(y)}),
                      Catch::Matchers::Contains("a size converted to a plain integer") &&
                          Catch::Matchers::Contains("29"));

  // ff::Size::value() is the same conversion.
  log.str("");
  ff::Recording r2 = ff::record({x}, [&] {
    uint64_t n = ff::width(x).value();
    return std::vector<ff::AnyArray>{ff::full<ff::Float32>(1.f, n)};
  });
  CHECK_THAT(log.str(), Catch::Matchers::Contains("pinned to width(input 0) = 10"));
  REQUIRE_THROWS_EXACTLY(r2.replay({ff::AnyArray(y)}), ff::GuardError);

  // Outside a recording the same conversion is silent and records nothing.
  log.str("");
  size_t outside = ff::width(x) - 1;
  CHECK(outside == 9);
  CHECK(ff::width(x).value() == 10);
  CHECK(log.str().empty());
}

TEST_CASE("with FF_DEBUG on, recordings leave the range checks out and traced code keeps them",
          "[record][debug]") {
  ff::init("llvm");
  ff::set_flag(ff::Flag::Debug, true);

  struct Restore {
    ~Restore() { ff::set_flag(ff::Flag::Debug, false); }
  } restore;

  auto x = ff::Float32::from(iota_floats(10, 0.f));
  auto idx = ff::UInt32::from({0u, 3u, 9u});
  // Reading a range report back would be a host read, which a recording refuses.
  ff::Recording r = ff::record(
      {x, idx}, [&] { return std::vector<ff::AnyArray>{ff::gather<ff::Float32>(x, idx)}; });
  auto y = ff::Float32::from(iota_floats(5, 100.f));
  auto out = r.replay({y, ff::UInt32::from({4u, 1u})});
  CHECK(out[0].as<ff::Float32>().to_vector() == std::vector<float>{104.f, 101.f});
  // The same gather traced still raises on a bad index.
  CHECK_THROWS_WITH(ff::eval(ff::gather<ff::Float32>(x, ff::UInt32::from({42u}))),
                    Catch::Matchers::Contains("index 42 is out of range"));
}

TEST_CASE("a gather bound that exceeds its buffer is refused at replay", "[record][offset]") {
  // Recordings from outside may say anything: a kernel masks indices against its bound
  // argument, so a bound larger than the buffer would let a gather read past it.
  ff::init("llvm");
  auto x = ff::Float32::from(iota_floats(10, 0.f));
  auto idx = ff::UInt32::from({0u, 5u});
  ff::Recording r = ff::record(
      {x, idx}, [&] { return std::vector<ff::AnyArray>{ff::gather<ff::Float32>(x, idx)}; });
  auto data = std::make_shared<rec::RecordingData>(*ff::detail::recording_state(r)->data);
  data->exprs.push_back({SizeOp::Const, 1000, rec::kNone, rec::kNone, rec::kNone});
  size_t patched = 0;
  for (const rec::Op& op : data->ops)
    for (uint32_t a = op.arg_begin; op.code == rec::OpCode::Launch && a < op.arg_end; ++a)
      if (!data->args[a].is_buffer && data->args[a].size_expr != rec::kNone) {
        data->args[a].size_expr = static_cast<uint32_t>(data->exprs.size() - 1);
        ++patched;
      }
  REQUIRE(patched == 1);  // the gather's bound
  data->validate();       // structurally sound: only the replay can tell

  Env env;
  replay::ReplayPlan plan(data, env.backend);
  float* src = env.upload(iota_floats(10, 0.f));
  auto* index = static_cast<uint32_t*>(env.backend.alloc(ScalarType::UInt32, 2, {}));
  const uint32_t host_index[] = {0, 500};
  env.backend.copy(index, host_index, sizeof host_index, CopyKind::HostToDevice);
  replay::ReplayInput in[] = {{src, ScalarType::Float32, 10}, {index, ScalarType::UInt32, 2}};
  CHECK_THAT(freeze_message([&] { replay::run(plan, env.backend, in, {}); }),
             Catch::Matchers::Contains("would access bytes [0, 4000)"));
  env.backend.release(index);
  env.backend.release(src);
}

TEST_CASE("validation refuses recordings whose ops and lists disagree", "[record][refusal]") {
  ff::init("llvm");
  auto x = ff::Float32::from(iota_floats(10, 0.f));
  ff::Recording r = ff::record({x}, [&] { return std::vector<ff::AnyArray>{x * 2.f + 1.f}; });
  const rec::RecordingData& good = *ff::detail::recording_state(r)->data;
  good.validate();
  size_t launch = 0;
  while (good.ops[launch].code != rec::OpCode::Launch)
    ++launch;
  rec::RecordingData d = good;
  auto message = [&] { return message_of<FormatError>([&] { d.validate(); }); };

  SECTION("a launch argument naming a slot outside the table") {
    d.args[d.ops[launch].arg_begin].slot = static_cast<uint32_t>(d.slots.size());
    CHECK_THAT(message(), Catch::Matchers::Contains("names slot"));
  }
  SECTION("an access the op does not make") {
    rec::Op& op = d.ops[launch];
    REQUIRE(op.access_end > op.access_begin);
    d.accesses[op.access_begin] = {d.inputs[0], true};  // the kernel only reads its input
    CHECK_THAT(message(), Catch::Matchers::Contains("that the op does not make"));
  }
  SECTION("a size expression that unfolds exponentially") {
    uint32_t e = d.ops[launch].size_expr;
    for (int k = 0; k < 40; ++k) {  // 2^40 nodes if evaluated naively
      d.exprs.push_back({SizeOp::Add, 0, rec::kNone, e, e});
      e = static_cast<uint32_t>(d.exprs.size() - 1);
    }
    d.ops[launch].size_expr = e;
    CHECK_THAT(message(), Catch::Matchers::Contains("unfolds to more than"));
  }
}

TEST_CASE("a size expression that overflows 64 bits is refused at replay", "[record][refusal]") {
  ff::init("llvm");
  auto x = ff::Float32::from(iota_floats(10, 0.f));
  ff::Recording r = ff::record({x}, [&] { return std::vector<ff::AnyArray>{x * 2.f}; });
  auto data = std::make_shared<rec::RecordingData>(*ff::detail::recording_state(r)->data);
  data->exprs.push_back({SizeOp::Const, uint64_t(1) << 40, rec::kNone, rec::kNone, rec::kNone});
  auto big = static_cast<uint32_t>(data->exprs.size() - 1);
  data->exprs.push_back({SizeOp::Mul, 0, rec::kNone, big, big});
  for (rec::Op& op : data->ops)
    if (op.code == rec::OpCode::Launch)
      op.size_expr = static_cast<uint32_t>(data->exprs.size() - 1);
  data->validate();
  Env env;
  replay::ReplayPlan plan(data, env.backend);
  float* src = env.upload(iota_floats(10, 0.f));
  replay::ReplayInput in[] = {{src, ScalarType::Float32, 10}};
  CHECK_THAT(freeze_message([&] { replay::run(plan, env.backend, in, {}); }),
             Catch::Matchers::Contains("overflows 64 bits"));
  env.backend.release(src);
}
