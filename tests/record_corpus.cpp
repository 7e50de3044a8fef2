// The recording corpus: each function is recorded once at size 1000 and replayed at sizes 1,
// 2, 1000, 3001, 777 and 1234 against the same function run traced (see
// tests/support/record_corpus.h for what check_case asserts). The functions cover element-wise
// chains of every element type, evals inside, gathers and scatters sized from ff::width
// arithmetic, reductions, prefix sums, compress (data-dependent sizes), scatters into an
// input, inputs returned unchanged, aliased inputs, literals, make_opaque, host constants and
// a broadcast size-1 input.
#include "support/record_corpus.h"

#include <catch2/catch.hpp>
#include <set>
#include <string>
#include <vector>

#include "frontend/recording_state.h"

using namespace ffr;
using ff::AnyArray;
using ff::Bool;
using ff::Float;
using ff::Float64;
using ff::Int32;
using ff::Int64;
using ff::UInt32;
using ff::UInt64;

namespace {

/// Every corpus function, for the coverage test at the end.
std::vector<Case>& registry() {
  static std::vector<Case> cases;
  return cases;
}

const Case& register_case(Case c) {
  registry().push_back(std::move(c));
  return registry().back();  // static init is single-threaded; cases are copied out below
}

}  // namespace

#define FF_CAT2(a, b) a##b
#define FF_CAT(a, b) FF_CAT2(a, b)
/// CORPUS("name", specs(...), { body using `in` (Inputs&) returning Inputs })
#define CORPUS(NAME, SPECS, ...)                                               \
  static const Case FF_CAT(corpus_case_, __LINE__) =                           \
      register_case(Case{NAME, SPECS, [](Inputs & in) -> Inputs __VA_ARGS__}); \
  TEST_CASE("corpus: " NAME, "[record][corpus]") {                             \
    check_case(FF_CAT(corpus_case_, __LINE__));                                \
  }

// ------------------------------------------------------------------------------------------
// Element-wise chains

CORPUS("float32 element-wise chain", specs(f32()), {
  Float x = get<Float>(in, 0);
  Float a = ff::sqrt(ff::abs(x * 2.f - 1.f)) + ff::select(x > 0.5f, x * x, -x);
  Float b = ff::exp(-x) * ff::cos(x) + ff::sin(x * 3.f);
  return {a, b};
})

CORPUS("two float32 inputs - fma min max", specs(f32(), f32()), {
  Float x = get<Float>(in, 0), y = get<Float>(in, 1);
  return {ff::fma(x, y, 1.f) - ff::min(x, y) * 0.5f, ff::max(x, y) / (y + 1.f)};
})

CORPUS("int32 arithmetic", specs(i32()), {
  Int32 i = get<Int32>(in, 0);
  return {(i * 3 + 7) % 11, i / 7 - ff::abs(i), -i, ff::min(i, 10) + ff::max(i, -10)};
})

CORPUS("uint32 bit operations", specs(u32()), {
  UInt32 u = get<UInt32>(in, 0);
  return {((u << 3u) ^ (u >> 2u)) | 5u, ~u & 0xFFu, u % 13u};
})

CORPUS("float64 transcendental", specs(f64()), {
  Float64 d = get<Float64>(in, 0);
  return {ff::exp(-d * d) + ff::log(1.0 + d * d), ff::sin(d) * ff::cos(d),
          ff::floor(d * 10.0) + ff::ceil(d * 3.0)};
})

CORPUS("int64 and uint64 mixed", specs(i64(), u64()), {
  Int64 l = get<Int64>(in, 0);
  UInt64 ul = get<UInt64>(in, 1);
  return {l * 1000003 + 17, ff::cast<Int64>(ul % 97ull) - l, ul * ul + 1ull};
})

CORPUS("casts and bitcasts", specs(f32()), {
  Float x = get<Float>(in, 0);
  return {ff::cast<Int32>(x * 100.f), ff::cast<Float64>(x) * 2.0, ff::bitcast<UInt32>(x) >> 23u,
          ff::cast<Bool>(ff::cast<Int32>(x * 3.f))};
})

CORPUS("bool outputs", specs(f32(), f32()), {
  Float x = get<Float>(in, 0), y = get<Float>(in, 1);
  Bool gt = x > y;
  return {gt, !gt | (x == y), ff::select(gt, x, y)};
})

// ------------------------------------------------------------------------------------------
// Evaluations inside the function

CORPUS("evals inside a chain", specs(f32()), {
  Float x = get<Float>(in, 0);
  Float y = x * 2.f + 1.f;
  ff::eval(y);
  Float z = y * y - x;
  ff::eval(z);
  return {z + y, y};
})

CORPUS("eval in a loop", specs(f32()), {
  Float v = get<Float>(in, 0);
  for (int i = 0; i < 4; ++i) {
    v = v * 1.5f + 0.25f;
    ff::eval(v);
  }
  return {v};
})

// ------------------------------------------------------------------------------------------
// Gathers with sizes from ff::width arithmetic

CORPUS("gather forward difference - width - 1", specs(f32()), {
  Float x = get<Float>(in, 0);
  UInt32 i = ff::arange<UInt32>(ff::width(x) - 1);
  return {ff::gather<Float>(x, i + 1u) - ff::gather<Float>(x, i)};
})

CORPUS("gather even elements - (width + 1) / 2", specs(f32()), {
  Float x = get<Float>(in, 0);
  UInt32 idx = ff::arange<UInt32>((ff::width(x) + 1) / 2) * 2u;
  return {ff::gather<Float>(x, idx), ff::cast<Float>(idx)};
})

CORPUS("gather reversed via max_reduce", specs(f32()), {
  Float x = get<Float>(in, 0);
  UInt32 a = ff::arange<UInt32>(ff::width(x));
  UInt32 last = ff::max_reduce(a);
  return {ff::gather<Float>(x, last - a)};
})

CORPUS("gather pair sums - width / 2", specs(f32()), {
  Float x = get<Float>(in, 0);
  UInt32 i = ff::arange<UInt32>(ff::width(x) / 2) * 2u;
  return {ff::gather<Float>(x, i) + ff::gather<Float>(x, i + 1u)};
})

CORPUS("nested gathers - quarter size", specs(f32()), {
  Float x = get<Float>(in, 0);
  Float g1 = ff::gather<Float>(x, ff::arange<UInt32>((ff::width(x) + 1) / 2) * 2u);
  Float g2 = ff::gather<Float>(g1, ff::arange<UInt32>((ff::width(g1) + 1) / 2) * 2u);
  return {g2, g1 * 2.f};
})

CORPUS("masked gather", specs(f32()), {
  Float x = get<Float>(in, 0);
  UInt32 a = ff::arange<UInt32>(ff::width(x));
  return {ff::gather<Float>(x, a / 2u, (a % 2u) == 0u)};
})

CORPUS("sizes with min and max", specs(f32()), {
  Float x = get<Float>(in, 0);
  UInt32 head = ff::arange<UInt32>(ff::min(ff::width(x), 100));
  return {ff::gather<Float>(x, head), ff::arange<UInt32>(ff::max(ff::width(x), 10))};
})

CORPUS("inputs of different sizes (n and 2n)", specs(f32(), in(ff::ScalarType::Float32, 2)), {
  Float x = get<Float>(in, 0), y = get<Float>(in, 1);
  Float ye = ff::gather<Float>(y, ff::arange<UInt32>(ff::width(x)) * 2u);
  return {x + ye, ff::sum(y)};
})

CORPUS("host constant inside", specs(f32()), {
  Float x = get<Float>(in, 0);
  Float table = Float::from({1.f, 2.f, 3.f, 4.f});
  return {ff::gather<Float>(table, ff::arange<UInt32>(ff::width(x)) % 4u) * x};
})

// ------------------------------------------------------------------------------------------
// Scatters

CORPUS("scatter into a new array - reversed", specs(f32()), {
  Float x = get<Float>(in, 0);
  Float out = ff::zeros<Float>(ff::width(x));
  UInt32 a = ff::arange<UInt32>(ff::width(x));
  ff::scatter(out, x * 2.f, ff::max_reduce(a) - a);
  return {out};
})

CORPUS("scatter_add histogram - 16 bins", specs(i32()), {
  Int32 i = get<Int32>(in, 0);
  Int32 bins = ff::zeros<Int32>(16);
  ff::scatter_add(bins, 1, ff::cast<UInt32>(i & 15));
  return {bins};
})

CORPUS("scatter_add pairs into (width + 1) / 2", specs(f32()), {
  Float x = get<Float>(in, 0);
  Float acc = ff::zeros<Float>((ff::width(x) + 1) / 2);
  ff::scatter_add(acc, x, ff::arange<UInt32>(ff::width(x)) / 2u);
  return {acc};
})

CORPUS("scatter into an input (returned updated)", specs(f32()), {
  Float x = take<Float>(in, 0);
  ff::scatter(x, 0.f, ff::arange<UInt32>((ff::width(x) + 1) / 2) * 2u);
  return {x, x + 1.f};
})

CORPUS("scatter_add into an int input (returned updated)", specs(i32(), u32()), {
  Int32 i = take<Int32>(in, 0);
  UInt32 u = get<UInt32>(in, 1);
  UInt32 a = ff::arange<UInt32>(ff::width(i));
  ff::scatter_add(i, ff::cast<Int32>(u % 5u), a);
  ff::scatter(i, -1, a, (u % 7u) == 0u);
  return {i};
})

// ------------------------------------------------------------------------------------------
// Reductions and prefix sums

CORPUS("float32 reductions", specs(f32()), {
  Float x = get<Float>(in, 0);
  return {ff::sum(x), ff::prod(x * 0.001f + 1.f), ff::min_reduce(x), ff::max_reduce(x),
          ff::mean(x)};
})

CORPUS("integer reductions", specs(i32(), u64()), {
  Int32 i = get<Int32>(in, 0);
  UInt64 u = get<UInt64>(in, 1);
  return {ff::sum(i),          ff::min_reduce(i), ff::max_reduce(i),
          ff::prod(i % 3 + 2), ff::sum(u),        ff::max_reduce(u)};
})

CORPUS("float64 mean centering", specs(f64()), {
  Float64 d = get<Float64>(in, 0);
  Float64 m = ff::mean(d);
  return {d - m, ff::mean(d * d) - m * m};
})

CORPUS("normalize by min and max reductions", specs(f32()), {
  Float x = get<Float>(in, 0);
  Float mn = ff::min_reduce(x), mx = ff::max_reduce(x);
  return {(x - mn) / (mx - mn + 1e-3f)};
})

CORPUS("prefix sums - exclusive and inclusive", specs(f32(), i32()), {
  Float x = get<Float>(in, 0);
  Int32 i = get<Int32>(in, 1);
  return {ff::prefix_sum(x, true), ff::prefix_sum(i, false)};
})

CORPUS("prefix sum then gathers", specs(u32()), {
  UInt32 u = get<UInt32>(in, 0);
  UInt32 c = ff::prefix_sum(u % 10u, false);
  UInt32 a = ff::arange<UInt32>(ff::width(u));
  return {ff::gather<UInt32>(c, ff::arange<UInt32>(ff::width(u) / 2) * 2u),
          ff::gather<UInt32>(c, ff::max_reduce(a))};
})

// ------------------------------------------------------------------------------------------
// Compress: data-dependent sizes

CORPUS("compress then gathers", specs(f32(), f32()), {
  Float x = get<Float>(in, 0), y = get<Float>(in, 1);
  UInt32 idx = ff::compress(x > 0.5f);
  return {ff::gather<Float>(x, idx) * 2.f + ff::gather<Float>(y, idx), idx};
})

CORPUS("compress - gather - reductions", specs(f32()), {
  Float x = get<Float>(in, 0);
  UInt32 idx = ff::compress(x < 0.3f);
  Float g = ff::gather<Float>(x, idx);
  return {ff::sum(g), g * g, ff::cast<Float>(idx) + g};
})

CORPUS("compress of an int mask then arithmetic", specs(i32()), {
  Int32 i = get<Int32>(in, 0);
  UInt32 idx = ff::compress((i % 3) == 0);
  Int32 v = ff::gather<Int32>(i, idx);
  return {v + ff::cast<Int32>(idx), ff::prefix_sum(v, true)};
})

CORPUS("compress twice", specs(f32()), {
  Float x = get<Float>(in, 0);
  UInt32 idx1 = ff::compress(x > 0.2f);
  Float g = ff::gather<Float>(x, idx1);
  UInt32 idx2 = ff::compress(g < 0.7f);
  return {ff::gather<Float>(g, idx2), ff::gather<UInt32>(idx1, idx2)};
})

CORPUS("compress then scatter back", specs(f32()), {
  Float x = get<Float>(in, 0);
  UInt32 idx = ff::compress(x > 0.5f);
  Float out = ff::zeros<Float>(ff::width(x));
  ff::scatter(out, ff::gather<Float>(x, idx) * 10.f, idx);
  return {out};
})

// ------------------------------------------------------------------------------------------
// Inputs and outputs: unchanged, aliased, many types

CORPUS("input returned unchanged (twice)", specs(f32(), i32()), {
  Float x = get<Float>(in, 0);
  Int32 i = get<Int32>(in, 1);
  return {x, i * 2, x};
})

CORPUS("one input used twice (aliased)", specs(f32(), alias(0)), {
  Float a = get<Float>(in, 0), b = get<Float>(in, 1);
  return {a * b + a, b};
})

CORPUS("several inputs of different types", specs(f32(), i32(), u32(), f64(), boolean()), {
  Float x = get<Float>(in, 0);
  Int32 i = get<Int32>(in, 1);
  UInt32 u = get<UInt32>(in, 2);
  Float64 d = get<Float64>(in, 3);
  Bool b = get<Bool>(in, 4);
  return {ff::select(b, x + ff::cast<Float>(i), ff::cast<Float>(u) * 0.5f),
          ff::cast<Float64>(x) * d, ff::cast<Int32>(b) + i, b & (x > 0.5f)};
})

// ------------------------------------------------------------------------------------------
// Literals, make_opaque, broadcasting

CORPUS("literals", specs(f32()), {
  Float x = get<Float>(in, 0);
  return {x + ff::full<Float>(2.5f, ff::width(x)) * 3.f, ff::zeros<Int32>(ff::width(x)) + 7,
          ff::arange<Float>(ff::width(x)) * 0.5f, Float(4.f) + 0.f};
})

CORPUS("make_opaque", specs(f32()), {
  Float x = get<Float>(in, 0);
  Float c = ff::full<Float>(0.25f, ff::width(x));
  Float k = 3.f;
  ff::make_opaque(c, k);
  return {x * c + k, c};
})

CORPUS("broadcast a size-1 input", specs(f32(), one(ff::ScalarType::Float32)), {
  Float x = get<Float>(in, 0), s = get<Float>(in, 1);
  return {x * s + s, ff::sum(x) * s};
})

TEST_CASE("corpus: the recordings hold every op kind and take inputs of every element type",
          "[record][corpus]") {
  // What the corpus is for: replays of every kind of recorded work. A corpus that lost its
  // compress or its host constants would still pass case by case.
  fresh();
  std::set<ff::rec::OpCode> ops;
  std::set<ff::ScalarType> input_types;
  std::set<std::string> names;
  bool guards = false;
  for (const Case& c : registry()) {
    INFO("corpus function '" << c.name << "'");
    CHECK(names.insert(c.name).second);  // names are distinct (they name the CTest tests)
    Inputs rec_in = make_inputs(c.name, c.inputs, kRecordSize);
    ff::Recording r = ff::record(rec_in, [&] { return c.fn(rec_in); });
    const ff::rec::RecordingData& d = *ff::detail::recording_state(r)->data;
    for (const ff::rec::Op& op : d.ops)
      ops.insert(op.code);
    for (uint32_t slot : d.inputs)
      input_types.insert(d.slots[slot].type);
    guards = guards || !d.guards.empty();
  }
  using ff::rec::OpCode;
  for (OpCode code : {OpCode::Alloc, OpCode::Release, OpCode::Copy, OpCode::Fill, OpCode::Launch,
                      OpCode::Reduce, OpCode::PrefixSum, OpCode::Compress}) {
    INFO("op kind " << ff::rec::to_string(code));
    CHECK(ops.count(code) == 1);
  }
  for (int t = 0; t < ff::kNumScalarTypes; ++t) {
    INFO("input type " << ff::to_string(static_cast<ff::ScalarType>(t)));
    CHECK(input_types.count(static_cast<ff::ScalarType>(t)) == 1);
  }
  CHECK(guards);
}
