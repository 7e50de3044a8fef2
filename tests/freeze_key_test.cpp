// The seams of the freeze front end's parts: the key a call is cached by is written by the
// front end (ScanVisitor, build_key through format::put_key_leaf) and read back by the freeze
// section's decoder (format::decode_key, what f.load and recorder-dump use): a key of every node
// kind and every leaf kind round-trips; the argument marker is one named constant; the result
// shape a recording keeps decodes and rebuilds; the handle-level replay entry hands over one
// reference per output.
#include "frontend/freeze_key.h"

#include <catch2/catch.hpp>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "freezeframe/freezeframe.h"
#include "frontend/freeze_replay.h"
#include "recorder/freeze_section.h"

namespace {

struct KeyProbe {
  ff::Float a, b;
  int tag = 3;
};

}  // namespace

FF_STRUCT(KeyProbe, a, b, tag)

namespace {

namespace fmt = ff::format;
using ff::Float;

void fresh() {
  ff::shutdown();
  ff::init("llvm");
}

template <class... A>
void scan_all(ff::detail::KeyScratch& ks, A&... args) {
  ks.scan.clear();
  ((ks.scan.argument(), ff::detail::traverse(ks.scan, args)), ...);
}

void collect_tokens(const fmt::ShapeNode& n, std::set<fmt::ShapeToken>& seen) {
  seen.insert(n.token);
  for (const fmt::ShapeNode& c : n.children)
    collect_tokens(c, seen);
}

}  // namespace

TEST_CASE("freeze key: every node kind and leaf kind round-trips through the section's decoder",
          "[freeze]") {
  fresh();
  Float x = Float::from({1.f, 2.f, 3.f, 4.f});
  Float y = Float::from({1.f, 2.f, 3.f, 4.f, 5.f});
  ff::eval(x, y);
  Float one = 0.5f;                              // literal of size 1
  Float like_x = ff::full<Float>(2.f, 4);        // literal of x's size: group 0
  Float exact = ff::full<Float>(3.f, 7);         // literal of a size no input has
  std::string label = "probe";                   // String
  std::vector<Float> list{y, x};                 // Vector (y: group 1; x again: an alias)
  std::array<Float, 1> fixed{x};                 // StdArray
  std::tuple<int, double> pair{-2, 0.25};        // Tuple of Scalars
  std::optional<Float> maybe = y;                // Optional
  std::map<std::string, Float> named{{"k", x}};  // Map
  KeyProbe probe{x, y, 9};                       // Struct

  ff::detail::KeyScratch ks;
  scan_all(ks, x, one, like_x, exact, label, list, fixed, pair, maybe, named, probe);
  ff::detail::build_key(ks);
  ff::detail::full_key(ks);

  fmt::DecodedKey key =
      fmt::decode_key(ks.full_key, ks.scan.shape.size(), fmt::kFreezeLayout, "the test's key");
  REQUIRE(key.arguments.size() == 11);
  std::set<fmt::ShapeToken> seen;
  for (const fmt::ShapeNode& n : key.arguments)
    collect_tokens(n, seen);
  for (auto t : {fmt::ShapeToken::Array, fmt::ShapeToken::Scalar, fmt::ShapeToken::String,
                 fmt::ShapeToken::Vector, fmt::ShapeToken::StdArray, fmt::ShapeToken::Tuple,
                 fmt::ShapeToken::Optional, fmt::ShapeToken::Map, fmt::ShapeToken::Struct})
    CHECK(seen.count(t) == 1);
  CHECK(key.arguments[10].name_hash == ff::detail::name_hash("KeyProbe"));
  CHECK(key.arguments[4].bytes == std::vector<uint8_t>(label.begin(), label.end()));

  // Leaves in walking order: x, one, like_x, exact, y, x, x, y, x, x (probe.a), y (probe.b).
  REQUIRE(key.leaves.size() == ks.scan.leaves.size());
  REQUIRE(key.leaves.size() == 11);
  CHECK(key.debug == ff::flag(ff::Flag::Debug));
  CHECK(key.leaves[0].kind == fmt::LeafKind::Input);
  CHECK(key.leaves[0].group == 0);
  CHECK(key.leaves[1].kind == fmt::LeafKind::Literal);
  CHECK(key.leaves[1].size_class == fmt::LiteralSize::One);
  CHECK(key.leaves[2].kind == fmt::LeafKind::Literal);
  CHECK(key.leaves[2].size_class == fmt::LiteralSize::Group);
  CHECK(key.leaves[2].group == 0);
  float two = 2.f;
  uint32_t two_bits;
  std::memcpy(&two_bits, &two, 4);
  CHECK(key.leaves[2].bits == two_bits);
  CHECK(key.leaves[3].kind == fmt::LeafKind::Literal);
  CHECK(key.leaves[3].size_class == fmt::LiteralSize::Exact);
  CHECK(key.leaves[3].size == 7);
  CHECK(key.leaves[4].kind == fmt::LeafKind::Input);
  CHECK(key.leaves[4].group == 1);
  for (size_t i : {5, 6, 8, 9}) {
    CHECK(key.leaves[i].kind == fmt::LeafKind::Alias);
    CHECK(key.leaves[i].alias == 0);
  }
  CHECK(key.leaves[7].kind == fmt::LeafKind::Alias);
  CHECK(key.leaves[7].alias == 4);
  CHECK(key.leaves[10].alias == 4);
  // The inputs a replay binds: x and y, once each.
  REQUIRE(ks.inputs.size() == 2);
  CHECK(ks.inputs[0].handle == x.id());
  CHECK(ks.inputs[1].handle == y.id());
}

TEST_CASE("freeze key: each argument starts with the one named marker the decoder expects",
          "[freeze]") {
  fresh();
  static_assert(ff::detail::kArgumentMarker == fmt::kArgumentMarker);
  Float x = Float::from({1.f});
  int k = 5;
  ff::detail::KeyScratch ks;
  scan_all(ks, x, k);
  std::vector<uint8_t> shape = ks.scan.shape.to_vector();
  REQUIRE(shape.size() == 1 + 2 + 1 + 2 + sizeof(int));
  CHECK(shape[0] == fmt::kArgumentMarker);
  CHECK(shape[3] == fmt::kArgumentMarker);
  CHECK(fmt::decode_shape(shape, true, "shape").size() == 2);
  shape[3] = 0;  // another byte where an argument starts
  CHECK_THROWS_AS(fmt::decode_shape(shape, true, "shape"), ff::FormatError);
}

TEST_CASE("freeze key: a result shape decodes and rebuilds from handle-level outputs", "[freeze]") {
  fresh();
  KeyProbe value{Float::from({1.f, 2.f}), Float::from({3.f}), 4};
  std::tuple<std::string, std::optional<Float>> extra{"s", Float::from({5.f})};
  ff::detail::SinkVisitor sink;
  ff::detail::traverse(sink, value);
  ff::detail::traverse(sink, extra);
  std::vector<uint8_t> shape = sink.shape.to_vector();
  std::vector<fmt::ShapeNode> nodes = fmt::decode_shape(shape, false, "result");
  REQUIRE(nodes.size() == 2);
  CHECK(fmt::count_arrays(nodes) == 3);

  std::vector<ff::detail::TypedHandle> outputs;
  for (const ff::AnyArray& a : sink.arrays) {
    ff::detail::inc_ref(a.id());  // a replay's output: one reference each
    outputs.push_back({a.id(), a.type()});
  }
  KeyProbe back;
  std::tuple<std::string, std::optional<Float>> back_extra;
  std::string context = "test: ";
  ff::detail::RebuildVisitor r(shape, outputs, context);
  ff::detail::traverse(r, back);
  ff::detail::traverse(r, back_extra);
  r.finish();
  for (const auto& o : outputs)
    CHECK(o.handle == 0);  // every reference taken over
  CHECK(back.a.to_vector() == std::vector<float>{1.f, 2.f});
  CHECK(back.b.to_vector() == std::vector<float>{3.f});
  CHECK(back.tag == 4);
  CHECK(std::get<0>(back_extra) == "s");
  CHECK(std::get<1>(back_extra)->to_vector() == std::vector<float>{5.f});
}

TEST_CASE("freeze replay: the handle-level entry gives what Recording::replay gives", "[freeze]") {
  fresh();
  Float x = Float::from({1.f, 2.f, 3.f});
  Float y = Float::from({10.f});
  ff::eval(x, y);
  ff::Recording rec = ff::record({ff::AnyArray(x), ff::AnyArray(y)}, [&] {
    Float z = x * 2.f + y;
    return std::vector<ff::AnyArray>{ff::AnyArray(z), ff::AnyArray(x), ff::AnyArray(z)};
  });
  Float x2 = Float::from({4.f, 5.f});
  Float y2 = Float::from({1.f});
  std::vector<ff::detail::TypedHandle> inputs{{x2.id(), Float::kType}, {y2.id(), Float::kType}};
  ff::detail::ReplayScratch s;
  ff::detail::replay_handles(rec, inputs, s);
  REQUIRE(s.outputs.size() == 3);
  CHECK(s.outputs[1].handle == x2.id());  // the input itself, another reference
  CHECK(s.outputs[2].handle == s.outputs[0].handle);
  Float z = Float::steal(std::exchange(s.outputs[0].handle, ff::detail::Handle{0}));
  Float again = Float::steal(std::exchange(s.outputs[2].handle, ff::detail::Handle{0}));
  Float same_x = Float::steal(std::exchange(s.outputs[1].handle, ff::detail::Handle{0}));
  CHECK(z.to_vector() == std::vector<float>{9.f, 11.f});
  CHECK(again.to_vector() == z.to_vector());
  CHECK(same_x.to_vector() == x2.to_vector());
  std::vector<ff::AnyArray> pub = rec.replay({ff::AnyArray(x2), ff::AnyArray(y2)});
  CHECK(pub[0].as<Float>().to_vector() == z.to_vector());
  // Outputs nobody took are dropped with the scratch (ASan would see a leak otherwise).
  ff::detail::replay_handles(rec, inputs, s);
}

TEST_CASE("freeze key: aliases among many leaves, in any order of handles", "[freeze]") {
  fresh();
  std::vector<Float> made;
  for (int i = 0; i < 20; ++i)
    made.push_back(Float::from({static_cast<float>(i)}));
  std::vector<Float> reversed(made.rbegin(), made.rend());
  ff::detail::KeyScratch ks;
  scan_all(ks, reversed, made);  // 40 leaves, handles descending, then ascending
  ff::detail::build_key(ks);
  REQUIRE(ks.alias.size() == 40);
  for (size_t i = 0; i < 20; ++i) {
    CHECK(ks.alias[i] == -1);
    CHECK(ks.alias[20 + i] == static_cast<int32_t>(19 - i));  // the first leaf with its handle
  }
  CHECK(ks.inputs.size() == 20);
}
