// The freeze section's codec (recorder/freeze_section.h) on hand-built sections: a round trip,
// both key layouts, and one negative test per validation rule, each named by the file, the
// byte offset and what is wrong.
#include "recorder/freeze_section.h"

#include <catch2/catch.hpp>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "freezeframe/errors.h"

namespace {

using Catch::Matchers::Contains;
namespace fmt = ff::format;

/// Little-endian bytes, built up field by field.
struct Bytes {
  std::vector<uint8_t> b;

  Bytes& u8(uint8_t v) {
    b.push_back(v);
    return *this;
  }

  Bytes& u32(uint32_t v) { return raw(&v, 4); }

  Bytes& u64(uint64_t v) { return raw(&v, 8); }

  Bytes& add(const Bytes& o) {
    b.insert(b.end(), o.b.begin(), o.b.end());
    return *this;
  }

  Bytes& raw(const void* p, size_t n) {
    auto* c = static_cast<const uint8_t*>(p);
    b.insert(b.end(), c, c + n);
    return *this;
  }
};

constexpr uint64_t kStructHash = 0x8f3a5c7e1b2d4f60ull;
constexpr uint8_t kInt32Tag = 4 << 2 | 1;
constexpr uint8_t kF32 = static_cast<uint8_t>(ff::ScalarType::Float32);

/// struct {array float32, array float32, value int32 v}
Bytes body(int32_t v) {
  Bytes s;
  s.u8(9).u64(3).u64(kStructHash).u8(1).u8(kF32).u8(1).u8(kF32).u8(2).u8(kInt32Tag);
  s.raw(&v, 4);
  return s;
}

/// args[0] = body(5), args[1] = an array float32.
Bytes shape() {
  Bytes s;
  s.u8(0xA0).add(body(5)).u8(0xA0).u8(1).u8(kF32);
  return s;
}

/// Debug off; leaf 0 an input (group 0), leaf 1 an alias of leaf 0, leaf 2 the literal 0.5 of
/// the size of group 0.
Bytes tracer_part() {
  float half = 0.5f;
  uint32_t bits;
  std::memcpy(&bits, &half, 4);
  Bytes t;
  t.u8(0).u8(0).u32(0).u8(1).u32(0).u8(2).u64(bits).u8(1).u32(0);
  return t;
}

/// tracer_part() without its flags byte: what follows a gradient part.
Bytes leaves() {
  Bytes t = tracer_part();
  t.b.erase(t.b.begin());
  return t;
}

fmt::FreezeSection sample() {
  fmt::FreezeSection s;
  s.version = "v1";
  s.name = "f";
  fmt::FreezeRecord r;
  r.recording = 0;
  Bytes k = shape();
  r.shape_bytes = static_cast<uint32_t>(k.b.size());
  k.add(tracer_part());
  r.key = k.b;
  float half = 0.5f;
  uint32_t bits;
  std::memcpy(&bits, &half, 4);
  r.infos = {{ff::ScalarType::Float32, false, false, 0, 100},
             {ff::ScalarType::Float32, false, false, 0, 100},
             {ff::ScalarType::Float32, true, true, bits, 100}};
  Bytes out;
  out.u8(1).u8(kF32).add(body(6));  // the result, then args[0] written back
  r.out_shape = out.b;
  r.written = {1, 0};
  r.tolerant = true;
  r.leaf_paths = {"args[0].pos", "args[0].vel", "args[1]"};
  s.records.push_back(r);
  s.opaque.push_back({0x1234, {2, 0}});
  s.struct_names.push_back({kStructHash, "Particle"});
  return s;
}

const std::vector<size_t> kOutputs = {3};  // the result's array and args[0]'s two

std::string decode_error(const fmt::FreezeSection& s,
                         const std::vector<size_t>& outputs = kOutputs) {
  std::vector<std::byte> bytes = fmt::encode_freeze_section(s);
  try {
    fmt::decode_freeze_section(bytes, outputs, "file.ffr");
  } catch (const ff::FormatError& e) {
    return e.what();
  }
  return "(decoded)";
}

}  // namespace

TEST_CASE("freeze section: a section round-trips through the codec", "[format][freeze]") {
  fmt::FreezeSection s = sample();
  std::vector<std::byte> bytes = fmt::encode_freeze_section(s);
  fmt::FreezeSection d = fmt::decode_freeze_section(bytes, kOutputs, "file.ffr");
  CHECK(d.layout == fmt::kFreezeLayout);
  CHECK(d.version == "v1");
  CHECK(d.name == "f");
  REQUIRE(d.records.size() == 1);
  const fmt::FreezeRecord& r = d.records[0];
  CHECK(r.key == s.records[0].key);
  CHECK(r.shape_bytes == s.records[0].shape_bytes);
  CHECK(r.out_shape == s.records[0].out_shape);
  CHECK(r.written == s.records[0].written);
  CHECK(r.tolerant);
  REQUIRE(r.infos.size() == 3);
  CHECK(r.infos[2].literal);
  CHECK(r.infos[2].size_has_prov);
  CHECK(r.infos[1].size == 100);
  REQUIRE(d.opaque.size() == 1);
  CHECK(d.opaque[0].shape_hash == 0x1234);
  CHECK(d.opaque[0].ordinals == std::vector<uint32_t>{2, 0});
  CHECK(r.leaf_paths == std::vector<std::string>{"args[0].pos", "args[0].vel", "args[1]"});
  REQUIRE(d.struct_names.size() == 1);
  CHECK(d.struct_names[0].hash == kStructHash);
  CHECK(d.struct_names[0].name == "Particle");
  CHECK(fmt::encode_freeze_section(d) == bytes);

  fmt::DecodedKey k = fmt::decode_key(r.key, r.shape_bytes, d.layout, "file.ffr");
  REQUIRE(k.arguments.size() == 2);
  CHECK(k.arguments[0].token == fmt::ShapeToken::Struct);
  CHECK(k.arguments[0].name_hash == kStructHash);
  REQUIRE(k.arguments[0].children.size() == 3);
  CHECK(k.arguments[0].children[2].tag == kInt32Tag);
  CHECK(fmt::scalar_type_name(kInt32Tag) == "int32");
  CHECK(fmt::count_arrays(k.arguments) == 3);
  REQUIRE(k.leaves.size() == 3);
  CHECK(k.leaves[0].kind == fmt::LeafKind::Input);
  CHECK(k.leaves[1].kind == fmt::LeafKind::Alias);
  CHECK(k.leaves[1].alias == 0);
  CHECK(k.leaves[2].kind == fmt::LeafKind::Literal);
  CHECK(k.leaves[2].size_class == fmt::LiteralSize::Group);
  CHECK(k.leaves[2].group == 0);
}

TEST_CASE("freeze section: a key with grad-enabled leaves and what the outputs do with them",
          "[format][freeze]") {
  // args[0].pos grad-enabled with a gradient (an extra leaf, an input of group 0), args[1]
  // grad-enabled without one; debug on.
  fmt::FreezeSection s = sample();
  fmt::FreezeRecord& r = s.records[0];
  Bytes k = shape();
  k.u8(3).u32(2).u32(0).u8(1).u32(2).u8(0);
  k.u8(0).u32(0).u8(1).u32(0).u8(2).u64(0).u8(1).u32(0).u8(0).u32(0);
  r.key = k.b;
  r.infos.push_back({ff::ScalarType::Float32, false, false, 0, 100});
  r.leaf_paths.push_back("ff::grad(args[0].pos)");
  // The result is detached, args[0].pos a new leaf with its gradient, args[0].vel item 1's
  // node; item 0's gradient is new, item 1's unchanged.
  r.grad_outputs = {0, 2, 4};
  r.grad_ends = {1, 2};
  std::vector<std::byte> bytes = fmt::encode_freeze_section(s);
  fmt::FreezeSection d = fmt::decode_freeze_section(bytes, std::vector<size_t>{5}, "file.ffr");
  CHECK(d.records[0].grad_outputs == r.grad_outputs);
  CHECK(d.records[0].grad_ends == r.grad_ends);
  CHECK(fmt::count_grad_outputs(r.grad_outputs, r.grad_ends) == 2);
  CHECK(fmt::encode_freeze_section(d) == bytes);
  fmt::DecodedKey key = fmt::decode_key(r.key, r.shape_bytes, 3, "file.ffr");
  CHECK(key.debug);
  CHECK_FALSE(key.suspended);
  REQUIRE(key.grads.size() == 2);
  CHECK(key.grads[0].state == fmt::GradState::Gradient);
  CHECK(key.grads[1].leaf == 2);
  CHECK(key.leaves.size() == 4);
  // Layout 2 has no gradient part: the same key is refused there.
  REQUIRE_THROWS_WITH(fmt::decode_key(r.key, r.shape_bytes, 2, "file.ffr"),
                      Contains("the key's flags are 3"));
}

namespace {

/// sample() with args[0].pos grad-enabled, both outputs of args[0] passing gradients through
/// the call, and its backward holding one recording (sample()'s record as recording 1).
fmt::FreezeSection with_backward() {
  fmt::FreezeSection s = sample();
  fmt::FreezeRecord& r = s.records[0];
  r.key.resize(r.shape_bytes);
  Bytes t = Bytes().u8(2).u32(1).u32(0).u8(0).add(leaves());
  r.key.insert(r.key.end(), t.b.begin(), t.b.end());
  constexpr auto kThrough = static_cast<uint32_t>(fmt::GradOutput::ThroughCall);
  r.grad_outputs = {0, kThrough, kThrough};
  r.grad_ends = {2};
  auto backward = std::make_shared<fmt::FreezeSection>();
  backward->name = "f (backward)";
  backward->records.push_back(sample().records[0]);
  backward->records[0].recording = 1;
  backward->opaque.push_back({0x99, {1}});
  r.backward = backward;
  return s;
}

const std::vector<size_t> kTwoOutputs = {3, 3};

}  // namespace

TEST_CASE("freeze section: a record's backward round-trips, and each rule of it is checked",
          "[format][freeze]") {
  fmt::FreezeSection saved = with_backward();
  std::vector<std::byte> bytes = fmt::encode_freeze_section(saved);
  fmt::FreezeSection d = fmt::decode_freeze_section(bytes, kTwoOutputs, "file.ffr");
  REQUIRE(d.records.size() == 1);
  CHECK(d.records[0].grad_outputs == saved.records[0].grad_outputs);
  REQUIRE(d.records[0].backward);
  const fmt::FreezeSection& back = *d.records[0].backward;
  CHECK(back.layout == fmt::kFreezeLayout);
  CHECK(back.name == "f (backward)");
  REQUIRE(back.records.size() == 1);
  CHECK(back.records[0].recording == 1);
  CHECK(back.records[0].key == saved.records[0].backward->records[0].key);
  CHECK_FALSE(back.records[0].backward);
  REQUIRE(back.opaque.size() == 1);
  CHECK(back.opaque[0].shape_hash == 0x99);
  CHECK(fmt::encode_freeze_section(d) == bytes);
  // A record whose outputs pass gradients through the call may have no backward (none ran).
  saved.records[0].backward.reset();
  CHECK(decode_error(saved, {3}) == "(decoded)");

  struct Case {
    const char* what;
    std::function<void(fmt::FreezeSection&)> change;
    std::vector<size_t> outputs = kTwoOutputs;
  };

  auto inner = [](fmt::FreezeSection& s) -> fmt::FreezeSection& {
    auto copy = std::make_shared<fmt::FreezeSection>(*s.records[0].backward);
    s.records[0].backward = copy;
    return *copy;
  };
  std::vector<Case> cases = {
      {"backward recording 1 holds a backward, but it is a backward itself",
       [&](auto& s) {
         fmt::FreezeSection& b = inner(s);
         b.records[0] = with_backward().records[0];
         b.records[0].recording = 1;
         b.records[0].grad_outputs = {0, 3, 0};
       },
       {3, 3, 3}},
      {"backward recording 1: output array 1 has gradient kind 4294967295",
       [&](auto& s) {
         fmt::FreezeSection& b = inner(s);
         b.records[0] = with_backward().records[0];
         b.records[0].recording = 1;
         b.records[0].backward.reset();
       }},
      {"recording 0 holds a backward, but no output of it passes gradients through",
       [](auto& s) {
         s.records[0].grad_outputs = {0, 3, 0};
       }},
      {"recording 0: output array 1 has gradient kind 4294967295",
       [](auto& s) {
         s.records[0].backward.reset();
         s.layout = 3;
       },
       {3}},
      {"recording index 0 is out of range or used twice",
       [&](auto& s) { inner(s).records[0].recording = 0; }},
      {"recording index 2 is out of range or used twice",
       [&](auto& s) { inner(s).records[0].recording = 2; }},
      {"a backward's section has layout 3, its function's 4",
       [&](auto& s) { inner(s).layout = 3; }},
      {"recording 2 of the file is held by no record", [](auto&) {}, {3, 3, 3}},
      {"backward recording 1: 2 leaf infos, its key has 3 leaves",
       [&](auto& s) { inner(s).records[0].infos.pop_back(); }},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    fmt::FreezeSection t = with_backward();
    c.change(t);
    std::string e = decode_error(t, c.outputs);
    CHECK_THAT(e, Contains("file.ffr: freeze data, byte ") && Contains(c.what));
  }
  // Every proper prefix is incomplete, the backward's included.
  for (size_t at = 0; at < bytes.size(); ++at) {
    std::span<const std::byte> cut(bytes.data(), at);
    REQUIRE_THROWS_AS(fmt::decode_freeze_section(cut, kTwoOutputs, "file.ffr"), ff::FormatError);
  }
}

TEST_CASE("freeze section: every kind of node decodes, nested", "[format][freeze]") {
  Bytes s;
  s.u8(0xA0).u8(4).u64(2).u8(1).u8(kF32).u8(1).u8(kF32);              // vector(2) of arrays
  s.u8(0xA0).u8(8).u64(1).u8(3).u64(1).u8('k').u8(7).u64(0);          // map {"k": optional()}
  s.u8(0xA0).u8(6).u64(2).u8(3).u64(2).u8('a').u8('b').u8(5).u64(0);  // tuple(string, array<0>)
  double d = 2.5;
  s.u8(0xA0).u8(2).u8(8 << 2 | 3).raw(&d, 8);  // value float64
  std::vector<fmt::ShapeNode> nodes = fmt::decode_shape(s.b, true, "file.ffr");
  REQUIRE(nodes.size() == 4);
  CHECK(nodes[0].token == fmt::ShapeToken::Vector);
  CHECK(nodes[0].children.size() == 2);
  CHECK(nodes[1].token == fmt::ShapeToken::Map);
  REQUIRE(nodes[1].children.size() == 2);
  CHECK(nodes[1].children[0].bytes == std::vector<uint8_t>{'k'});
  CHECK(nodes[1].children[1].token == fmt::ShapeToken::Optional);
  CHECK(nodes[2].children[0].bytes == std::vector<uint8_t>{'a', 'b'});
  CHECK(nodes[3].bytes.size() == 8);
  CHECK(fmt::scalar_type_name(nodes[3].tag) == "float64");
  CHECK(fmt::count_arrays(nodes) == 2);

  // Too deep: refused, not a stack overflow.
  Bytes deep;
  deep.u8(0xA0);
  for (int i = 0; i < 300; ++i)
    deep.u8(7).u64(1);
  deep.u8(1).u8(kF32);
  REQUIRE_THROWS_WITH(fmt::decode_shape(deep.b, true, "file.ffr"), Contains("deeper than 256"));
}

TEST_CASE("freeze section: layout 1 keys (a literal's size as u64) decode", "[format][freeze]") {
  fmt::FreezeSection s = sample();
  s.layout = 1;
  Bytes k = shape();
  k.u8(0).u8(0).u32(0).u8(1).u32(0).u8(2).u64(0x3f000000).u64(~uint64_t{0});
  s.records[0].key = k.b;
  std::vector<std::byte> bytes = fmt::encode_freeze_section(s);
  fmt::FreezeSection d = fmt::decode_freeze_section(bytes, kOutputs, "file.ffr");
  CHECK(d.layout == 1);
  fmt::DecodedKey key = fmt::decode_key(d.records[0].key, d.records[0].shape_bytes, 1, "file.ffr");
  CHECK(key.leaves[2].size_class == fmt::LiteralSize::FromArray);
  // The same key is not a layout-2 key.
  s.layout = 2;
  CHECK_THAT(decode_error(s), Contains("file.ffr: freeze data, byte"));
}

TEST_CASE("freeze section: each broken rule is named with the file and the byte",
          "[format][freeze][negative]") {
  struct Case {
    const char* what;
    std::function<void(fmt::FreezeSection&)> change;
    std::vector<size_t> outputs = kOutputs;
  };

  auto tracer = [](fmt::FreezeSection& s, const Bytes& t) {
    auto& r = s.records[0];
    r.key.resize(r.shape_bytes);
    r.key.insert(r.key.end(), t.b.begin(), t.b.end());
  };
  auto args = [](fmt::FreezeSection& s, const Bytes& shape_part) {
    auto& r = s.records[0];
    std::vector<uint8_t> t(r.key.begin() + r.shape_bytes, r.key.end());
    r.key = shape_part.b;
    r.shape_bytes = static_cast<uint32_t>(r.key.size());
    r.key.insert(r.key.end(), t.begin(), t.end());
  };
  std::vector<Case> cases = {
      {"layout version 5", [](auto& s) { s.layout = 5; }},
      {"2 leaf paths for 3 leaves", [](auto& s) { s.records[0].leaf_paths.pop_back(); }},
      {"byte 4: recording 1 of the file is held by no record", [](auto&) {}, {3, 1}},
      {"it lists 1 recordings, the file holds 2", [](auto& s) { s.layout = 3; }, {3, 1}},
      {"recording index 1 is out of range", [](auto& s) { s.records[0].recording = 1; }},
      {"is longer than the key", [](auto& s) { s.records[0].shape_bytes = 1000; }},
      // args[0] starts at byte 35: header (12), "v1" (6), "f" (5), index and shape length (8),
      // the key's length (4).
      {"byte 35: an argument does not start with the marker byte",
       [](auto& s) { s.records[0].key[0] = 0xA1; }},
      {"an array of element type 9",
       [&](auto& s) {
         Bytes b = shape();
         b.b[b.b.size() - 1] = 9;
         args(s, b);
       }},
      {"a scalar with tag 12",
       [&](auto& s) {
         Bytes b;
         b.u8(0xA0).u8(9).u64(3).u64(kStructHash).u8(1).u8(kF32).u8(1).u8(kF32).u8(2).u8(12);
         b.u32(5).u8(0xA0).u8(1).u8(kF32);
         args(s, b);
       }},
      {"a shape node of unknown kind 66",
       [&](auto& s) {
         Bytes b = shape();
         b.u8(0xA0).u8(66);
         args(s, b);
       }},
      {"an optional holding 2 values",
       [&](auto& s) {
         Bytes b = shape();
         b.b.pop_back();
         b.b.pop_back();
         b.u8(7).u64(2).u8(1).u8(kF32).u8(1).u8(kF32);
         args(s, b);
       }},
      {"a map's key is not a string",
       [&](auto& s) {
         Bytes b = shape();
         b.b.pop_back();
         b.b.pop_back();
         b.u8(8).u64(1).u8(1).u8(kF32).u8(1).u8(kF32);
         args(s, b);
       }},
      {"a vector of 1000 elements runs past the end",
       [&](auto& s) {
         Bytes b = shape();
         b.u8(0xA0).u8(4).u64(1000);
         args(s, b);
       }},
      {"the key's flags are 8", [&](auto& s) { s.records[0].key[s.records[0].shape_bytes] = 8; }},
      {"the key's flags are 4", [&](auto& s) { s.records[0].key[s.records[0].shape_bytes] = 4; }},
      {"0 grad-enabled leaves in a key of 3 array(s)",
       [&](auto& s) { s.records[0].key[s.records[0].shape_bytes] = 2; }},
      {"grad-enabled leaf 3 is out of range or out of order",
       [&](auto& s) { tracer(s, Bytes().u8(2).u32(1).u32(3).u8(0).add(leaves())); }},
      {"grad-enabled leaf 0 is out of range or out of order",
       [&](auto& s) { tracer(s, Bytes().u8(2).u32(2).u32(1).u8(0).u32(0).u8(0).add(leaves())); }},
      {"grad-enabled leaf 0 has state 7",
       [&](auto& s) { tracer(s, Bytes().u8(2).u32(1).u32(0).u8(7).add(leaves())); }},
      {"grad-enabled leaf 1 shares the node of item 1, not of an earlier item",
       [&](auto& s) {
         tracer(s, Bytes().u8(2).u32(2).u32(0).u8(0).u32(1).u8(2).u32(1).add(leaves()));
       }},
      {"recording 0: 0 gradient output kinds for 3 output array(s) of a key with",
       [&](auto& s) { tracer(s, Bytes().u8(2).u32(1).u32(0).u8(0).add(leaves())); }},
      {"recording 0: 3 gradient output kinds for 3 output array(s) of a key without",
       [&](auto& s) {
         s.records[0].grad_outputs = {0, 0, 0};
       }},
      {"recording 0: output array 1 has gradient kind 4",
       [&](auto& s) {
         tracer(s, Bytes().u8(2).u32(1).u32(0).u8(0).add(leaves()));
         s.records[0].grad_outputs = {0, 4, 0};
         s.records[0].grad_ends = {2};
       }},
      {"recording 0: 2 gradient ends for 1 grad-enabled leaves",
       [&](auto& s) {
         tracer(s, Bytes().u8(2).u32(1).u32(0).u8(0).add(leaves()));
         s.records[0].grad_outputs = {0, 3, 0};
         s.records[0].grad_ends = {2, 2};
       }},
      {"recording 0: grad-enabled leaf 0 ends in state 3",
       [&](auto& s) {
         tracer(s, Bytes().u8(2).u32(1).u32(0).u8(0).add(leaves()));
         s.records[0].grad_outputs = {0, 3, 0};
         s.records[0].grad_ends = {3};
       }},
      {"recording 0: the result shape and gradients hold 4 array(s), the recording has 3",
       [&](auto& s) {
         tracer(s, Bytes().u8(2).u32(1).u32(0).u8(0).add(leaves()));
         s.records[0].grad_outputs = {2, 0, 0};  // a new leaf with its gradient: an output more
         s.records[0].grad_ends = {2};
       }},
      {"leaf 0 of the key is of kind 5",
       [&](auto& s) { tracer(s, Bytes().u8(0).u8(5).u32(0).u8(1).u32(0).u8(0).u32(0)); }},
      {"leaf 0 of the key is in size group 2 before group 0 appeared",
       [&](auto& s) { tracer(s, Bytes().u8(0).u8(0).u32(2).u8(1).u32(0).u8(0).u32(0)); }},
      {"leaf 1 of the key is an alias of leaf 1, not of an earlier input",
       [&](auto& s) { tracer(s, Bytes().u8(0).u8(0).u32(0).u8(1).u32(1).u8(0).u32(0)); }},
      {"leaf 2 of the key is a literal of size class 3",
       [&](auto& s) { tracer(s, Bytes().u8(0).u8(0).u32(0).u8(1).u32(0).u8(2).u64(0).u8(3)); }},
      {"a literal has the size of input size group 5, the key has 1 group(s)",
       [&](auto& s) {
         tracer(s, Bytes().u8(0).u8(0).u32(0).u8(1).u32(0).u8(2).u64(0).u8(1).u32(5));
       }},
      {"1 byte(s) follow the key's last leaf", [&](auto& s) { s.records[0].key.push_back(0); }},
      {"the data ends inside a literal's size",
       [&](auto& s) {
         tracer(s, Bytes().u8(0).u8(0).u32(0).u8(1).u32(0).u8(2).u64(0).u8(2).u32(0));
       }},
      {"recording 0: 2 leaf infos, its key has 3 leaves",
       [](auto& s) { s.records[0].infos.pop_back(); }},
      {"recording 0, leaf 1 is of element type int32, its array in the key of float32",
       [](auto& s) { s.records[0].infos[1].type = ff::ScalarType::Int32; }},
      {"recording 0, leaf 2 is a literal in the key only",
       [](auto& s) { s.records[0].infos[2].literal = false; }},
      {"recording 0: the result shape and gradients hold 4 array(s), the recording has 3 output(s)",
       [](auto& s) {
         Bytes out;
         out.u8(6).u64(2).u8(1).u8(kF32).u8(1).u8(kF32).add(body(6));
         s.records[0].out_shape = out.b;
       }},
      {"recording 0: the result shape and gradients hold 3 array(s), the recording has 2 output(s)",
       [](auto&) {},
       {2}},
      {"a shape node of unknown kind 66", [](auto& s) { s.records[0].out_shape.push_back(66); }},
      {"the data ends inside a scalar's value", [](auto& s) { s.records[0].out_shape.pop_back(); }},
      {"recording 0: written flags for 3 argument(s), its key has 2",
       [](auto& s) { s.records[0].written.push_back(0); }},
      {"recording 0: written flags for 1 argument(s), its key has 2",
       [](auto& s) { s.records[0].written.pop_back(); }},
      {"recording 0: a written-argument flag other than 0 or 1",
       [](auto& s) { s.records[0].written[1] = 2; }},
      {"recording 0: the result shape holds 2 value(s) for 0 written argument(s)",
       [](auto& s) { s.records[0].written[0] = 0; }},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    fmt::FreezeSection s = sample();
    c.change(s);
    std::string e = decode_error(s, c.outputs);
    CHECK_THAT(e, Contains("file.ffr: freeze data, byte ") && Contains(c.what));
  }
  // Bytes after the last struct name, and a flag that is neither 0 nor 1.
  std::vector<std::byte> bytes = fmt::encode_freeze_section(sample());
  bytes.push_back(std::byte{0});
  REQUIRE_THROWS_WITH(fmt::decode_freeze_section(bytes, kOutputs, "file.ffr"),
                      Contains("bytes follow the last struct name"));
  bytes.pop_back();
  for (size_t at = 0; at < bytes.size(); ++at) {  // every proper prefix is incomplete
    std::span<const std::byte> cut(bytes.data(), at);
    REQUIRE_THROWS_AS(fmt::decode_freeze_section(cut, kOutputs, "file.ffr"), ff::FormatError);
  }
  // An opaque set's count larger than the bytes left (the last set: hash, count, 2 ordinals;
  // then the struct names: a count, and "Particle" with its hash).
  uint32_t huge = 1000000;
  size_t names = 4 + 8 + 4 + 8;
  std::memcpy(bytes.data() + bytes.size() - names - 12, &huge, 4);
  REQUIRE_THROWS_WITH(fmt::decode_freeze_section(bytes, kOutputs, "file.ffr"),
                      Contains("an opaque set of 1000000 leaves runs past the end"));
}
