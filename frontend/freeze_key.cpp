// The key of a frozen call: building it (build_key), comparing it with an earlier one's leaves
// (only_literals_differ) and describing it (describe_call). See freeze_key.h.
#include "frontend/freeze_key.h"

#include <algorithm>
#include <bit>

#include "recorder/freeze_section.h"

namespace ff::detail {

// The persisted form is written by ScanVisitor (the shape part) and format::put_key_leaf (the
// tracer part), and read by format::decode_key: both sides spell the same bytes.
static_assert(kArgumentMarker == format::kArgumentMarker);
static_assert(static_cast<uint8_t>(Node::Array) == uint8_t(format::ShapeToken::Array) &&
              static_cast<uint8_t>(Node::Scalar) == uint8_t(format::ShapeToken::Scalar) &&
              static_cast<uint8_t>(Node::String) == uint8_t(format::ShapeToken::String) &&
              static_cast<uint8_t>(Node::Vector) == uint8_t(format::ShapeToken::Vector) &&
              static_cast<uint8_t>(Node::StdArray) == uint8_t(format::ShapeToken::StdArray) &&
              static_cast<uint8_t>(Node::Tuple) == uint8_t(format::ShapeToken::Tuple) &&
              static_cast<uint8_t>(Node::Optional) == uint8_t(format::ShapeToken::Optional) &&
              static_cast<uint8_t>(Node::Map) == uint8_t(format::ShapeToken::Map) &&
              static_cast<uint8_t>(Node::Struct) == uint8_t(format::ShapeToken::Struct));
static_assert(uint8_t(SizeClass::One) == uint8_t(format::LiteralSize::One) &&
              uint8_t(SizeClass::Group) == uint8_t(format::LiteralSize::Group) &&
              uint8_t(SizeClass::Exact) == uint8_t(format::LiteralSize::Exact));

std::vector<uint64_t> group_sizes_of(const std::vector<LeafInfo>& infos) {
  std::vector<uint64_t> sizes;
  for (const LeafInfo& li : infos)
    if (!li.literal && std::find(sizes.begin(), sizes.end(), li.size) == sizes.end())
      sizes.push_back(li.size);
  return sizes;
}

namespace {

/// ks.alias: per leaf, the first leaf holding the same variable. Arrays made one after another
/// have ascending handles: then there is none, and no search; else a scan of the earlier leaves
/// (few) or a hash table (many: linear, where sorting cost microseconds at 100 leaves).
void find_aliases(KeyScratch& ks) {
  const std::vector<Handle>& leaves = ks.scan.leaves;
  size_t n = leaves.size();
  ks.alias.assign(n, -1);
  bool ascending = true;
  for (size_t i = 1; i < n && ascending; ++i)
    ascending = leaves[i - 1] < leaves[i];
  if (ascending)
    return;
  if (n <= 16) {
    for (size_t i = 0; i < n; ++i)
      for (size_t j = 0; j < i; ++j)
        if (leaves[j] == leaves[i]) {
          ks.alias[i] = static_cast<int32_t>(j);
          break;
        }
    return;
  }
  auto& table = ks.alias_table;  // open addressing; second < 0: an empty slot
  size_t mask = std::bit_ceil(2 * n) - 1;
  table.assign(mask + 1, {Handle{0}, -1});
  for (size_t i = 0; i < n; ++i) {
    Handle h = leaves[i];
    size_t slot = static_cast<size_t>((h * 0x9E3779B97F4A7C15ull) >> 32) & mask;
    while (table[slot].second >= 0 && table[slot].first != h)
      slot = (slot + 1) & mask;
    if (table[slot].second >= 0)
      ks.alias[i] = table[slot].second;  // the first leaf with this handle
    else
      table[slot] = {h, static_cast<int32_t>(i)};
  }
}

/// The inputs and their size groups (inputs sharing a size, numbered by first appearance):
/// what a literal's size is described by. Size 1 is a size like any other here: a recording
/// made with a size-1 input that broadcast holds a guard for it, and one where it did not
/// replays at any size.
void group_inputs(KeyScratch& ks) {
  size_t n = ks.scan.leaves.size();
  ks.group_sizes.clear();
  ks.group_input.clear();
  ks.inputs.clear();
  ks.input_group.assign(n, 0);
  for (size_t i = 0; i < n; ++i) {
    const LeafInfo& li = ks.infos[i];
    if (li.literal || ks.alias[i] >= 0)
      continue;
    auto it = std::find(ks.group_sizes.begin(), ks.group_sizes.end(), li.size);
    ks.input_group[i] = static_cast<uint32_t>(it - ks.group_sizes.begin());
    if (it == ks.group_sizes.end()) {
      ks.group_sizes.push_back(li.size);
      ks.group_input.push_back(static_cast<uint32_t>(ks.inputs.size()));
    }
    ks.inputs.push_back({ks.scan.leaves[i], li.type});
  }
}

/// Leaf i of the key's tracer part: an input (its size group), an alias (of which leaf) or a
/// literal: its bits and its size class, never its size alone, which a replay could not tell.
format::KeyLeaf key_leaf(const KeyScratch& ks, size_t i) {
  const LeafInfo& li = ks.infos[i];
  format::KeyLeaf leaf;
  if (li.literal) {
    SizeClass c = literal_size_class(li.size, ks.group_sizes);
    leaf.kind = format::LeafKind::Literal;
    leaf.bits = li.bits;
    leaf.size_class = static_cast<format::LiteralSize>(c.kind);
    if (c.kind == SizeClass::Group)
      leaf.group = static_cast<uint32_t>(c.value);
    else if (c.kind == SizeClass::Exact)
      leaf.size = c.value;
  } else if (ks.alias[i] >= 0) {
    leaf.kind = format::LeafKind::Alias;
    leaf.alias = ks.alias[i];
  } else {
    leaf.kind = format::LeafKind::Input;
    leaf.group = ks.input_group[i];
  }
  return leaf;
}

}  // namespace

void build_key(KeyScratch& ks) {
  const std::vector<Handle>& leaves = ks.scan.leaves;
  size_t n = leaves.size();
  ks.infos.resize(n);
  leaf_infos(leaves.data(), n, ks.infos.data());
  find_aliases(ks);
  group_inputs(ks);  // before the leaves: a literal's size class names a group
  ks.key.clear();
  format::put_key_flags(ks.key, flag(Flag::Debug), ks.grads, !ks.grads.empty() && ad_suspended());
  for (size_t i = 0; i < n; ++i)
    format::put_key_leaf(ks.key, key_leaf(ks, i));
}

void full_key(KeyScratch& ks) {
  ks.full_key.assign(ks.scan.shape.begin(), ks.scan.shape.end());
  ks.full_key.insert(ks.full_key.end(), ks.key.begin(), ks.key.end());
}

bool only_literals_differ(const std::vector<LeafInfo>& then, const KeyScratch& now,
                          std::vector<uint32_t>& changed) {
  changed.clear();
  if (then.size() != now.infos.size())
    return false;
  std::vector<uint64_t> then_groups = group_sizes_of(then);
  for (size_t i = 0; i < then.size(); ++i) {
    const LeafInfo &a = then[i], &b = now.infos[i];
    if (a.literal != b.literal || a.type != b.type)
      return false;
    if (a.literal && (a.bits != b.bits || literal_size_class(a.size, then_groups) !=
                                              literal_size_class(b.size, now.group_sizes)))
      changed.push_back(static_cast<uint32_t>(i));
  }
  return !changed.empty();
}

namespace {

/// The key's attributes of array leaf `leaf` at `path`.
void describe_leaf(const KeyScratch& ks, const std::vector<std::string>& leaf_paths, size_t leaf,
                   const PathVisitor::Item& it, std::vector<KeyItem>& items) {
  const LeafInfo& li = ks.infos[leaf];
  items.push_back({it.path, "element type", it.what});
  if (li.literal) {
    SizeClass c = literal_size_class(li.size, ks.group_sizes);
    std::string size = c.kind == SizeClass::One ? "size 1"
                       : c.kind == SizeClass::Exact
                           ? std::to_string(c.value) + " elements"
                           : "the size of input group " + std::to_string(c.value);
    items.push_back(
        {it.path, "literal", "literal " + format::element_value(li.type, li.bits) + " of " + size});
    return;
  }
  int32_t alias = ks.alias[leaf];
  items.push_back({it.path, "literal", "not a literal"});
  items.push_back({it.path, "aliasing",
                   alias >= 0 ? "the same array as " + leaf_paths[static_cast<size_t>(alias)]
                              : "its own array"});
  if (alias >= 0)
    return;
  std::string group = "a size of its own";
  for (size_t j = 0; j < leaf; ++j)
    if (!ks.infos[j].literal && ks.alias[j] < 0 && ks.infos[j].size == li.size) {
      group = "the size of " + leaf_paths[j];
      break;
    }
  items.push_back({it.path, "size pattern", group});
}

}  // namespace

CallDescription describe_call(CallSite& site, const KeyScratch& ks) {
  PathVisitor p;
  site.describe_arguments(p);
  CallDescription d;
  d.structs = std::move(p.structs);
  d.leaf_paths.resize(ks.infos.size());
  auto leaf_of = [&](const PathVisitor::Item& it) -> int64_t {
    return it.leaf >= 0 && static_cast<size_t>(it.leaf) < ks.infos.size() ? it.leaf : -1;
  };
  for (const PathVisitor::Item& it : p.items)
    if (int64_t leaf = leaf_of(it); leaf >= 0)
      d.leaf_paths[static_cast<size_t>(leaf)] = it.path;
  for (const PathVisitor::Item& it : p.items) {
    if (int64_t leaf = leaf_of(it); leaf >= 0) {
      describe_leaf(ks, d.leaf_paths, static_cast<size_t>(leaf), it, d.items);
      continue;
    }
    bool structural = it.what.rfind("size ", 0) == 0 || it.what.rfind("struct ", 0) == 0;
    d.items.push_back({it.path, structural ? "structure" : "value", it.what});
  }
  // Grad-enabled arrays; the gradients they bring in follow the arguments' arrays as leaves.
  size_t extra = ks.scan.leaves.size();
  for (const format::GradItem& g : ks.grads)
    extra -= g.state == format::GradState::Gradient ? 1 : 0;
  for (const format::GradItem& g : ks.grads) {
    const std::string& path = d.leaf_paths[g.leaf];
    if (g.state == format::GradState::SameNode) {
      d.items.push_back(
          {path, "gradients", "enabled, the node of " + d.leaf_paths[ks.grads[g.same_as].leaf]});
    } else if (g.state == format::GradState::NoGradient || extra >= d.leaf_paths.size()) {
      d.items.push_back({path, "gradients", "enabled, none accumulated"});
    } else {
      d.leaf_paths[extra] = "ff::grad(" + path + ")";
      d.items.push_back({path, "gradients",
                         ks.infos[extra].literal ? "enabled, a literal accumulated"
                                                 : "enabled, an array accumulated"});
      ++extra;
    }
  }
  return d;
}

std::string leaf_path(CallSite& site, uint32_t leaf) {
  PathVisitor p;
  site.describe_arguments(p);
  for (const PathVisitor::Item& it : p.items)
    if (it.leaf == static_cast<int64_t>(leaf))
      return it.path;
  return "argument array " + std::to_string(leaf);
}

}  // namespace ff::detail
