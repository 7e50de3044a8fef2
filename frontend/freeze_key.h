// The key of a frozen call: what identifies a kind of call, built from the scan of the
// arguments (freeze.h: ScanVisitor) and what only the tracer knows about each array leaf, and
// written with the codec of its persisted form (recorder/freeze_section.h: put_key_leaf, read
// by decode_key). Internal to the front end.
//
// A key is the scan's shape (per argument: kArgumentMarker, then its nodes), then the tracer
// part: the flags (debug; with grad-enabled arguments, their items: freeze_grads.h), then per
// leaf (the arguments' arrays, then the gradients the items bring in)
//   - a literal (an unevaluated constant, baked into the kernels and no input of the
//     recording): its bits and its size class (literal_size_class: 1; the size of an input
//     size group of this call; else its exact size);
//   - an alias: the first earlier leaf that holds the same variable;
//   - an input: its size group (inputs sharing a size, numbered by first appearance: the
//     tracer fuses work of equal sizes and broadcasts size 1, so the pattern shapes kernels).
// Sizes themselves are not in the key: recordings replay at any size their guards allow.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "freezeframe/freeze.h"
#include "recorder/freeze_section.h"
#include "tracer/variable.h"

namespace ff::detail {

/// How a literal argument's size is described in the key: the only thing a replay knows about
/// it (the literal is no input). Persisted in keys (recording files) as format::LiteralSize:
/// never renumber.
struct SizeClass {
  enum Kind : uint8_t {
    One = 0,    // size 1: it broadcasts
    Group = 1,  // the size of input size group `value` in this call
    Exact = 2,  // none of those: exactly `value` elements
  };

  Kind kind = One;
  uint64_t value = 0;

  friend bool operator==(const SizeClass&, const SizeClass&) = default;
};

/// The size class of a literal of `size` elements, given the sizes of the call's input groups.
inline SizeClass literal_size_class(uint64_t size, const std::vector<uint64_t>& group_sizes) {
  if (size == 1)
    return {SizeClass::One, 0};
  for (size_t g = 0; g < group_sizes.size(); ++g)
    if (group_sizes[g] == size)
      return {SizeClass::Group, g};
  return {SizeClass::Exact, size};
}

/// The sizes of a call's input size groups, from its leaves (an alias has its target's size,
/// so counting aliases too numbers the groups as build_key does).
std::vector<uint64_t> group_sizes_of(const std::vector<LeafInfo>& infos);

/// An input of the recording: an array leaf that is neither a literal nor an alias. Borrowed:
/// the caller's arguments hold it for the whole call.
using InputLeaf = TypedHandle;

/// One call's key and what it was built from, reused between calls (one per nesting depth and
/// thread: the call's hot path allocates nothing once the vectors have grown).
struct KeyScratch {
  ScanVisitor scan;
  // The grad-enabled array leaves (frontend/freeze_grads: gather_grads); their gradients
  // follow the arguments' arrays in scan.leaves. Empty for calls without gradients.
  std::vector<format::GradItem> grads;
  ByteBuffer key;                     // the tracer part (build_key)
  std::vector<uint8_t> full_key;      // the scan's shape, then `key`: the cache's key (full_key)
  std::vector<LeafInfo> infos;        // per leaf
  std::vector<int32_t> alias;         // per leaf: the first leaf with the same handle, or -1
  std::vector<InputLeaf> inputs;      // the recording's inputs, in leaf order
  std::vector<uint64_t> group_sizes;  // per input size group: its size
  std::vector<uint32_t> group_input;  // per input size group: its first input (in `inputs`)
  std::vector<uint32_t> input_group;  // per leaf that is an input: its size group
  std::vector<std::pair<Handle, int32_t>> alias_table;  // find_aliases, above 16 leaves
};

/// Keys the scanned call: reads the leaves from the tracer (one window), finds aliases, groups
/// the inputs by size and writes the tracer part into `ks.key`.
void build_key(KeyScratch& ks);
/// `ks.full_key` = the scan's shape, then the tracer part.
void full_key(KeyScratch& ks);

/// Whether a call keyed as `now` is the same as one whose leaves were `then` except for the
/// values (or size classes) of some literals: those leaves, in `changed`.
bool only_literals_differ(const std::vector<LeafInfo>& then, const KeyScratch& now,
                          std::vector<uint32_t>& changed);

/// One attribute of a key, with the argument path it belongs to (for the warn_after message).
struct KeyItem {
  std::string path, category, value;
};

/// A call's arguments described: the key's attributes, each leaf's path, the structs' names.
struct CallDescription {
  std::vector<KeyItem> items;
  std::vector<std::string> leaf_paths;                    // one per leaf
  std::vector<std::pair<uint64_t, std::string>> structs;  // name_hash, name
};

/// Describes the keyed call (its arguments as passed, before the body runs).
CallDescription describe_call(CallSite& site, const KeyScratch& ks);

/// The path of leaf `leaf` of the call ("args[0].pos"), for messages.
std::string leaf_path(CallSite& site, uint32_t leaf);

}  // namespace ff::detail
