// The freeze section of a saved frozen function (docs/recording-format.md, "The freeze
// section"): its plain data, and the one encoder and decoder of its bytes, of the keys and of
// the result shapes in it. Knows nothing of the front end: f.save / f.load and recorder-dump
// both use it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "freezeframe/scalar_type.h"

namespace ff::format {

/// The layout this build writes. Layouts 1 (until the literal size classes), 2 (until
/// gradients crossed the boundary) and 3 (until files held a call's backward) are still read.
inline constexpr uint32_t kFreezeLayout = 4;
inline constexpr uint32_t kFreezeLayoutOldest = 1;

/// Before each argument of a key's shape part.
inline constexpr uint8_t kArgumentMarker = 0xA0;

/// Node tokens of shapes (ScanVisitor's encoding; the front end's ff::detail::Node has the
/// same values). Persisted: never renumber.
enum class ShapeToken : uint8_t {
  Array = 1,     // + element type (u8)
  Scalar = 2,    // + tag (u8: size in bytes << 2 | is_float << 1 | is_signed) + the value bytes
  String = 3,    // + length (u64) + the bytes
  Vector = 4,    // + element count (u64), then the elements
  StdArray = 5,  // as Vector
  Tuple = 6,     // as Vector
  Optional = 7,  // + count (u64, 0 or 1), then the value
  Map = 8,       // + entry count (u64), then per entry its key (a String node) and its value
  Struct = 9,    // + field count (u64) + FNV-1a hash of the FF_STRUCT name (u64), then fields
};

/// "array", "value", "string", "vector", "std::array", "tuple", "optional", "map", "struct".
const char* to_string(ShapeToken t);

/// One node of a decoded shape.
struct ShapeNode {
  ShapeToken token = ShapeToken::Array;
  ScalarType type = ScalarType::Float32;  // Array: element type
  uint8_t tag = 0;                        // Scalar: size << 2 | is_float << 1 | is_signed
  std::vector<uint8_t> bytes;             // Scalar: the value; String: the characters
  uint64_t name_hash = 0;                 // Struct
  std::vector<ShapeNode> children;        // elements, fields; Map: key, value, key, value, ...
};

/// A scalar's size in bytes, from its tag.
inline size_t scalar_bytes(uint8_t tag) {
  return tag >> 2;
}

/// "int32", "uint8", "float64", ... from a scalar's tag (bool reads as uint8).
std::string scalar_type_name(uint8_t tag);

/// How a leaf of a key reaches the recording (the key's tracer part). Persisted.
enum class LeafKind : uint8_t {
  Input = 0,    // + size group (u32): inputs sharing a size share a group, numbered by first use
  Alias = 1,    // + leaf (i32): the same array as that earlier leaf
  Literal = 2,  // + bits (u64) + size class (layout 2; layout 1: + size u64)
};

/// A literal leaf's size in its key. Persisted (the class byte of layout 2).
enum class LiteralSize : uint8_t {
  One = 0,    // size 1
  Group = 1,  // + u32: the size of input size group g
  Exact = 2,  // + u64: this size
  // Layout 1 only (not a class byte there): the size came from another array (size ~0).
  FromArray = 255,
};

struct KeyLeaf {
  LeafKind kind = LeafKind::Input;
  uint32_t group = 0;  // Input; Literal of class Group
  int32_t alias = -1;  // Alias
  uint64_t bits = 0;   // Literal: the value's bits
  LiteralSize size_class = LiteralSize::One;
  uint64_t size = 0;  // Literal of class Exact (layout 1: the size, unless FromArray)
};

/// What a grad-enabled array leaf of a key brings in (layout 3). Persisted.
enum class GradState : uint8_t {
  NoGradient = 0,  // its node has no gradient yet
  Gradient = 1,    // its node's gradient is an extra leaf of the key (after the array leaves)
  SameNode = 2,    // + item (u32): the node of an earlier item (one array passed twice)
};

/// One grad-enabled array leaf of a key, in leaf order.
struct GradItem {
  uint32_t leaf = 0;
  GradState state = GradState::NoGradient;
  uint32_t same_as = 0;  // SameNode: the item
};

/// The key's flag byte: bit 0 Flag::Debug; layout 3: bit 1 a gradient part follows, bit 2
/// ff::SuspendGrad was active (only with a gradient part: otherwise it changes nothing).
inline constexpr uint8_t kKeyFlagDebug = 1, kKeyFlagGrads = 2, kKeyFlagSuspended = 4;

/// The writer of a key's tracer part (layout kFreezeLayout) that decode_key reads: the front
/// end keys every call with these. `Out` has push_back(uint8_t) and append(const void*, size_t)
/// (the front end's ByteBuffer, which keeps the call's hot path free of allocations). A call
/// without grad-enabled arguments is keyed as in layout 2.
template <class Out>
void put_key_flags(Out& out, bool debug, const std::vector<GradItem>& grads, bool suspended) {
  uint8_t grad_flags = grads.empty() ? 0 : kKeyFlagGrads | (suspended ? kKeyFlagSuspended : 0);
  out.push_back(static_cast<uint8_t>((debug ? kKeyFlagDebug : 0) | grad_flags));
  if (grads.empty())
    return;
  uint32_t n = static_cast<uint32_t>(grads.size());
  out.append(&n, sizeof n);
  for (const GradItem& g : grads) {
    out.append(&g.leaf, sizeof g.leaf);
    out.push_back(static_cast<uint8_t>(g.state));
    if (g.state == GradState::SameNode)
      out.append(&g.same_as, sizeof g.same_as);
  }
}

template <class Out>
void put_key_leaf(Out& out, const KeyLeaf& leaf) {
  out.push_back(static_cast<uint8_t>(leaf.kind));
  switch (leaf.kind) {
    case LeafKind::Input:
      out.append(&leaf.group, sizeof leaf.group);
      return;
    case LeafKind::Alias:
      out.append(&leaf.alias, sizeof leaf.alias);
      return;
    case LeafKind::Literal:
      out.append(&leaf.bits, sizeof leaf.bits);
      out.push_back(static_cast<uint8_t>(leaf.size_class));
      if (leaf.size_class == LiteralSize::Group)
        out.append(&leaf.group, sizeof leaf.group);
      else if (leaf.size_class == LiteralSize::Exact)
        out.append(&leaf.size, sizeof leaf.size);
      return;
  }
}

/// A key decoded: the arguments' shapes, then the tracer part.
struct DecodedKey {
  std::vector<ShapeNode> arguments;  // one per argument
  bool debug = false;                // Flag::Debug was on
  bool suspended = false;            // layout 3: ff::SuspendGrad was active
  std::vector<GradItem> grads;       // layout 3: the grad-enabled array leaves
  std::vector<KeyLeaf> leaves;       // one per Array node, in walking order, then one per
                                     // grad item of state Gradient
};

/// How a frozen call's output array comes out with respect to gradients (layout 3). Persisted.
enum class GradOutput : uint32_t {
  Detached = 0,
  NewLeaf = 1,          // a new grad-enabled leaf, without gradient
  NewLeafGradient = 2,  // a new leaf whose gradient is the next extra output
  // InputNode + j: the node of grad item j of the key (the array passed in, or a copy of it)
  InputNode = 3,
  // Layout 4: a node whose backward is the call's frozen backward (its gradient flows back to
  // the grad items); that backward's recordings are the record's FreezeRecord::backward.
  ThroughCall = 0xFFFFFFFFu,
};

/// What a frozen call left in the gradient of each grad item's node (layout 3). Persisted.
enum class GradEnd : uint8_t {
  Cleared = 0,    // none
  Gradient = 1,   // the next extra output
  Unchanged = 2,  // as it came in (always for SameNode items)
};

/// What the tracer knew of one leaf when it keyed the call.
struct FreezeLeafInfo {
  ScalarType type = ScalarType::Float32;
  bool literal = false;
  bool size_has_prov = false;  // the size came from an array (else a plain constant)
  uint64_t bits = 0;           // literal: the value's bits
  uint64_t size = 0;           // element count
};

struct FreezeSection;

/// One recording the function held.
struct FreezeRecord {
  uint32_t recording = 0;    // its index among the file's recordings
  uint32_t shape_bytes = 0;  // of the key: the arguments' shape; the rest is the tracer part
  std::vector<uint8_t> key;
  std::vector<FreezeLeafInfo> infos;  // one per leaf
  std::vector<uint8_t> out_shape;     // the result, then the written arguments (bare nodes)
  std::vector<uint8_t> written;       // one byte per argument: 1 where the body wrote it
  bool tolerant = false;              // verify compares floats within tolerance
  // Layout 2: each leaf's path as the user wrote it ("args[0].pos"), for tools and messages;
  // empty, or one per leaf.
  std::vector<std::string> leaf_paths;
  // Layout 3, calls with grad-enabled arguments (else both empty): per array of the result
  // shape its GradOutput, per grad item of the key its GradEnd. The recording's outputs are
  // the result shape's arrays, then the extra ones these name, in this order.
  std::vector<uint32_t> grad_outputs;
  std::vector<uint8_t> grad_ends;
  // Layout 4, a record with ThroughCall outputs: the recordings its frozen backward held (a
  // section of their own, of this layout, whose indices are among the file's recordings and
  // whose records have no backward); null where it held none.
  std::shared_ptr<const FreezeSection> backward;
};

/// The extra outputs (gradients) that a record's grad_outputs and grad_ends name.
size_t count_grad_outputs(const std::vector<uint32_t>& grad_outputs,
                          const std::vector<uint8_t>& grad_ends);

/// An FF_STRUCT's name, by the hash keys hold instead (layout 2; for tools and messages).
struct StructName {
  uint64_t hash = 0;
  std::string name;
};

/// The leaves made opaque for calls whose argument shape hashes to `shape_hash`.
struct OpaqueSet {
  uint64_t shape_hash = 0;  // XXH3-64 of the argument shape
  std::vector<uint32_t> ordinals;
};

struct FreezeSection {
  // Every recording of the file is held by one record: one of `records`, or (layout 4) one of
  // a record's backward.
  uint32_t layout = kFreezeLayout;
  std::string version;  // FreezeOptions::version
  std::string name;     // the function's name when it was saved
  std::vector<FreezeRecord> records;
  std::vector<OpaqueSet> opaque;
  std::vector<StructName> struct_names;  // layout 2
};

/// The section's bytes, in `s.layout` (the caller's records must be of that layout's keys).
std::vector<std::byte> encode_freeze_section(const FreezeSection& s);

/// Decodes and validates the section of a file whose recordings have `n_outputs[k]` outputs
/// each: counts and lengths, flags, element types, the recording indices (each used by one
/// record, a backward's included),
/// each key (its shape, its tracer part: one entry per leaf, matching the leaf infos), each
/// result shape (as many arrays as the recording's outputs, one node per written argument
/// and the result) and the written flags (one per argument). Throws ff::FormatError
/// "<where>: freeze data, byte N: <what>".
FreezeSection decode_freeze_section(std::span<const std::byte> bytes,
                                    std::span<const size_t> n_outputs, const std::string& where);

/// Decodes a key of `layout`. Throws ff::FormatError as decode_freeze_section, with byte
/// offsets from `base` (where the key starts in the section).
DecodedKey decode_key(std::span<const uint8_t> key, size_t shape_bytes, uint32_t layout,
                      const std::string& where, size_t base = 0);

/// Decodes a shape: with `arguments` a key's shape part (each node after kArgumentMarker),
/// else a result shape (bare nodes). Throws ff::FormatError as decode_key.
std::vector<ShapeNode> decode_shape(std::span<const uint8_t> shape, bool arguments,
                                    const std::string& where, size_t base = 0);

/// An array element's value from its bits (a literal's): "0.5", "-3", "true".
std::string element_value(ScalarType t, uint64_t bits);

/// Whether two nodes are of one C++ type: the same tokens, element and scalar types, struct
/// names and fixed counts (tuples, std::arrays, structs); container lengths and values aside.
bool same_type(const ShapeNode& a, const ShapeNode& b);

/// The Array nodes in `nodes`, nested ones included.
size_t count_arrays(std::span<const ShapeNode> nodes);

}  // namespace ff::format
