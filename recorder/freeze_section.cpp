// The freeze section's codec. Decoding is validation: every read is bounds-checked, and every
// rule the writer keeps by construction (see freeze_section.h) is checked, so that what
// f.load accepts is what a save in this process could have written.
#include "recorder/freeze_section.h"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <optional>
#include <utility>

#include "freezeframe/errors.h"

namespace ff::format {

namespace {

// Deeper nests than this are refused (the decoder recurses).
constexpr int kMaxDepth = 256;

class Writer {
 public:
  void u8(uint8_t v) { bytes_.push_back(static_cast<std::byte>(v)); }

  void u32(uint32_t v) { raw(&v, 4); }

  void u64(uint64_t v) { raw(&v, 8); }

  void blob(const void* p, size_t n) {
    u32(static_cast<uint32_t>(n));
    raw(p, n);
  }

  void str(const std::string& s) { blob(s.data(), s.size()); }

  std::vector<std::byte> take() { return std::move(bytes_); }

 private:
  void raw(const void* p, size_t n) {
    auto* b = static_cast<const std::byte*>(p);
    bytes_.insert(bytes_.end(), b, b + n);
  }

  std::vector<std::byte> bytes_;
};

/// Reads bytes that start at `base` in the section; a failure names the offset in the section
/// and what was read.
class Reader {
 public:
  Reader(const uint8_t* p, size_t n, const std::string& where, size_t base)
      : p_(p), n_(n), where_(where), base_(base) {}

  uint8_t u8(const char* what) {
    uint8_t v;
    raw(&v, 1, what);
    return v;
  }

  uint32_t u32(const char* what) {
    uint32_t v;
    raw(&v, 4, what);
    return v;
  }

  uint64_t u64(const char* what) {
    uint64_t v;
    raw(&v, 8, what);
    return v;
  }

  /// A u32 length and that many bytes.
  std::vector<uint8_t> blob(const char* what) {
    uint32_t n = u32(what);
    if (n > left())
      fail(std::string(what) + " of " + std::to_string(n) + " bytes runs past the end");
    std::vector<uint8_t> v(p_ + pos_, p_ + pos_ + n);
    pos_ += n;
    return v;
  }

  std::string str(const char* what) {
    std::vector<uint8_t> v = blob(what);
    return std::string(v.begin(), v.end());
  }

  /// A flag that must be 0 or 1.
  bool flag(const char* what) {
    uint8_t v = u8(what);
    if (v > 1)
      fail(std::string(what) + " is " + std::to_string(v) + ", not 0 or 1");
    return v;
  }

  void skip(size_t n, const char* what) {
    if (n > left())
      fail(std::string("the data ends inside ") + what);
    pos_ += n;
  }

  size_t left() const { return n_ - pos_; }

  size_t pos() const { return pos_; }

  /// Where the next byte is, in the section.
  size_t offset() const { return base_ + pos_; }

  const uint8_t* here() const { return p_ + pos_; }

  [[noreturn]] void fail(const std::string& what) const { fail_at(offset(), what); }

  [[noreturn]] void fail_at(size_t offset, const std::string& what) const {
    throw FormatError(where_ + ": freeze data, byte " + std::to_string(offset) + ": " + what);
  }

 private:
  void raw(void* out, size_t n, const char* what) {
    if (n > left())
      fail(std::string("the data ends inside ") + what);
    std::memcpy(out, p_ + pos_, n);
    pos_ += n;
  }

  const uint8_t* p_;
  size_t n_;
  const std::string& where_;
  size_t base_;
  size_t pos_ = 0;
};

bool valid_scalar_tag(uint8_t tag) {
  size_t bytes = scalar_bytes(tag);
  bool is_float = tag & 2, is_signed = tag & 1;
  if (bytes != 1 && bytes != 2 && bytes != 4 && bytes != 8 && bytes != 16)
    return false;
  return !is_float || (is_signed && bytes >= 4);  // float, double, long double: signed
}

ShapeNode read_node(Reader& r, int depth) {
  size_t at = r.offset();
  if (depth > kMaxDepth)
    r.fail("a shape nests deeper than " + std::to_string(kMaxDepth) + " levels");
  ShapeNode node;
  uint8_t token = r.u8("a shape node");
  if (token < static_cast<uint8_t>(ShapeToken::Array) ||
      token > static_cast<uint8_t>(ShapeToken::Struct))
    r.fail_at(at, "a shape node of unknown kind " + std::to_string(token));
  node.token = static_cast<ShapeToken>(token);
  uint64_t count = 0;
  switch (node.token) {
    case ShapeToken::Array: {
      uint8_t type = r.u8("an array's element type");
      if (!is_valid(static_cast<ScalarType>(type)))
        r.fail_at(at, "an array of element type " + std::to_string(type));
      node.type = static_cast<ScalarType>(type);
      return node;
    }
    case ShapeToken::Scalar:
      node.tag = r.u8("a scalar's tag");
      if (!valid_scalar_tag(node.tag))
        r.fail_at(at, "a scalar with tag " + std::to_string(node.tag) +
                          " (not a size of 1, 2, 4, 8 or 16 bytes, or a float that is not)");
      node.bytes.assign(r.here(), r.here() + std::min(r.left(), scalar_bytes(node.tag)));
      r.skip(scalar_bytes(node.tag), "a scalar's value");
      return node;
    case ShapeToken::String:
      count = r.u64("a string's length");
      if (count > r.left())
        r.fail_at(at, "a string of " + std::to_string(count) + " bytes runs past the end");
      node.bytes.assign(r.here(), r.here() + count);
      r.skip(count, "a string");
      return node;
    case ShapeToken::Struct:
      count = r.u64("a struct's field count");
      node.name_hash = r.u64("a struct's name hash");
      break;
    case ShapeToken::Optional:
      count = r.u64("an optional's count");
      if (count > 1)
        r.fail_at(at, "an optional holding " + std::to_string(count) + " values");
      break;
    default:
      count = r.u64("a container's element count");
      break;
  }
  // Every element takes a byte at least (a map entry two): a larger count cannot fit.
  uint64_t per = node.token == ShapeToken::Map ? 2 : 1;
  if (count > r.left() / per)
    r.fail_at(at, std::string("a ") + to_string(node.token) + " of " + std::to_string(count) +
                      " elements runs past the end");
  node.children.reserve(count * per);
  for (uint64_t i = 0; i < count; ++i) {
    if (node.token == ShapeToken::Map) {
      size_t key_at = r.offset();
      node.children.push_back(read_node(r, depth + 1));
      if (node.children.back().token != ShapeToken::String)
        r.fail_at(key_at, "a map's key is not a string");
    }
    node.children.push_back(read_node(r, depth + 1));
  }
  return node;
}

size_t count_arrays(const ShapeNode& n) {
  if (n.token == ShapeToken::Array)
    return 1;
  size_t k = 0;
  for (const ShapeNode& c : n.children)
    k += count_arrays(c);
  return k;
}

void array_types(const ShapeNode& n, std::vector<ScalarType>& out) {
  if (n.token == ShapeToken::Array)
    out.push_back(n.type);
  for (const ShapeNode& c : n.children)
    array_types(c, out);
}

/// Layout 3's gradient part of a key: the grad-enabled array leaves, ascending, each with what
/// its node brings. Returns the extra leaves they add.
size_t read_grad_part(Reader& r, size_t n_array_leaves, DecodedKey& key) {
  size_t at = r.offset();
  uint32_t n = r.u32("the grad-enabled leaf count");
  if (n == 0 || n > n_array_leaves)
    r.fail_at(at, std::to_string(n) + " grad-enabled leaves in a key of " +
                      std::to_string(n_array_leaves) + " array(s)");
  size_t extra = 0;
  for (uint32_t k = 0; k < n; ++k) {
    at = r.offset();
    GradItem g;
    g.leaf = r.u32("a grad-enabled leaf");
    if (g.leaf >= n_array_leaves || (k > 0 && g.leaf <= key.grads.back().leaf))
      r.fail_at(at,
                "grad-enabled leaf " + std::to_string(g.leaf) + " is out of range or out of order");
    uint8_t state = r.u8("a grad-enabled leaf's state");
    switch (state) {
      case static_cast<uint8_t>(GradState::NoGradient):
        g.state = GradState::NoGradient;
        break;
      case static_cast<uint8_t>(GradState::Gradient):
        g.state = GradState::Gradient;
        ++extra;
        break;
      case static_cast<uint8_t>(GradState::SameNode):
        g.state = GradState::SameNode;
        g.same_as = r.u32("the item of the same node");
        if (g.same_as >= k || key.grads[g.same_as].state == GradState::SameNode)
          r.fail_at(at, "grad-enabled leaf " + std::to_string(g.leaf) +
                            " shares the node of item " + std::to_string(g.same_as) +
                            ", not of an earlier item with a node of its own");
        break;
      default:
        r.fail_at(at, "grad-enabled leaf " + std::to_string(g.leaf) + " has state " +
                          std::to_string(state) + " (0 no gradient, 1 gradient, 2 same node)");
    }
    key.grads.push_back(g);
  }
  return extra;
}

/// The tracer part of a key: the flags, the gradient part (layout 3), then one entry per leaf.
void read_tracer_part(Reader& r, uint32_t layout, size_t n_leaves, DecodedKey& key) {
  size_t flags_at = r.offset();
  uint8_t flags = r.u8("the key's flags");
  uint8_t known = layout >= 3 ? (kKeyFlagDebug | kKeyFlagGrads | kKeyFlagSuspended) : kKeyFlagDebug;
  if ((flags & ~known) || ((flags & kKeyFlagSuspended) && !(flags & kKeyFlagGrads)))
    r.fail_at(flags_at, "the key's flags are " + std::to_string(flags) + " (this layout knows " +
                            std::to_string(known) + " at most; 4 only with 2)");
  key.debug = flags & kKeyFlagDebug;
  key.suspended = flags & kKeyFlagSuspended;
  if (flags & kKeyFlagGrads)
    n_leaves += read_grad_part(r, n_leaves, key);
  uint32_t n_groups = 0;
  std::vector<std::pair<size_t, uint32_t>> literal_groups;  // offset, group
  for (size_t i = 0; i < n_leaves; ++i) {
    size_t at = r.offset();
    KeyLeaf leaf;
    uint8_t kind = r.u8("a leaf's kind in the key");
    std::string which = "leaf " + std::to_string(i) + " of the key";
    switch (kind) {
      case static_cast<uint8_t>(LeafKind::Input):
        leaf.kind = LeafKind::Input;
        leaf.group = r.u32("a leaf's size group");
        if (leaf.group > n_groups)  // numbered by first appearance
          r.fail_at(at, which + " is in size group " + std::to_string(leaf.group) +
                            " before group " + std::to_string(n_groups) + " appeared");
        n_groups = std::max(n_groups, leaf.group + 1);
        break;
      case static_cast<uint8_t>(LeafKind::Alias): {
        leaf.kind = LeafKind::Alias;
        leaf.alias = static_cast<int32_t>(r.u32("an alias's leaf"));
        if (leaf.alias < 0 || static_cast<size_t>(leaf.alias) >= i ||
            key.leaves[static_cast<size_t>(leaf.alias)].kind != LeafKind::Input)
          r.fail_at(at, which + " is an alias of leaf " + std::to_string(leaf.alias) +
                            ", not of an earlier input");
        break;
      }
      case static_cast<uint8_t>(LeafKind::Literal):
        leaf.kind = LeafKind::Literal;
        leaf.bits = r.u64("a literal's bits");
        if (layout == 1) {
          leaf.size = r.u64("a literal's size");
          leaf.size_class = leaf.size == ~uint64_t{0} ? LiteralSize::FromArray : LiteralSize::Exact;
          break;
        }
        switch (uint8_t c = r.u8("a literal's size class")) {
          case static_cast<uint8_t>(LiteralSize::One):
            leaf.size_class = LiteralSize::One;
            leaf.size = 1;
            break;
          case static_cast<uint8_t>(LiteralSize::Group):
            leaf.size_class = LiteralSize::Group;
            leaf.group = r.u32("a literal's size group");
            literal_groups.emplace_back(at, leaf.group);
            break;
          case static_cast<uint8_t>(LiteralSize::Exact):
            leaf.size_class = LiteralSize::Exact;
            leaf.size = r.u64("a literal's size");
            break;
          default:
            r.fail_at(at, which + " is a literal of size class " + std::to_string(c) +
                              " (0 size 1, 1 an input's size, 2 an exact size)");
        }
        break;
      default:
        r.fail_at(at,
                  which + " is of kind " + std::to_string(kind) + " (0 input, 1 alias, 2 literal)");
    }
    key.leaves.push_back(leaf);
  }
  // A literal may take the size of a group that appears after it, not of one that is absent.
  for (auto [at, group] : literal_groups)
    if (group >= n_groups)
      r.fail_at(at, "a literal has the size of input size group " + std::to_string(group) +
                        ", the key has " + std::to_string(n_groups) + " group(s)");
  if (r.left())
    r.fail(std::to_string(r.left()) + " byte(s) follow the key's last leaf");
}

}  // namespace

const char* to_string(ShapeToken t) {
  switch (t) {
    case ShapeToken::Array:
      return "array";
    case ShapeToken::Scalar:
      return "value";
    case ShapeToken::String:
      return "string";
    case ShapeToken::Vector:
      return "vector";
    case ShapeToken::StdArray:
      return "std::array";
    case ShapeToken::Tuple:
      return "tuple";
    case ShapeToken::Optional:
      return "optional";
    case ShapeToken::Map:
      return "map";
    case ShapeToken::Struct:
      return "struct";
  }
  return "unknown";
}

namespace {

template <class F>
std::string shortest(F v) {
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

}  // namespace

std::string element_value(ScalarType t, uint64_t bits) {
  switch (t) {
    case ScalarType::Bool:
      return bits ? "true" : "false";
    case ScalarType::Int32:
      return std::to_string(static_cast<int32_t>(bits));
    case ScalarType::UInt32:
      return std::to_string(static_cast<uint32_t>(bits));
    case ScalarType::Int64:
      return std::to_string(static_cast<int64_t>(bits));
    case ScalarType::UInt64:
      return std::to_string(bits);
    case ScalarType::Float32: {
      float f;
      auto b = static_cast<uint32_t>(bits);
      std::memcpy(&f, &b, 4);
      return shortest(f);
    }
    case ScalarType::Float64: {
      double d;
      std::memcpy(&d, &bits, 8);
      return shortest(d);
    }
  }
  return "?";
}

bool same_type(const ShapeNode& a, const ShapeNode& b) {
  if (a.token != b.token)
    return false;
  switch (a.token) {
    case ShapeToken::Array:
      return a.type == b.type;
    case ShapeToken::Scalar:
      return a.tag == b.tag;
    case ShapeToken::String:
      return true;
    case ShapeToken::Struct:
      if (a.name_hash != b.name_hash)
        return false;
      [[fallthrough]];
    case ShapeToken::StdArray:
    case ShapeToken::Tuple:
      if (a.children.size() != b.children.size())
        return false;
      for (size_t i = 0; i < a.children.size(); ++i)
        if (!same_type(a.children[i], b.children[i]))
          return false;
      return true;
    case ShapeToken::Vector:
    case ShapeToken::Optional:
    case ShapeToken::Map: {
      // Elements (map values: every second child) share one type, whatever their count.
      size_t step = a.token == ShapeToken::Map ? 2 : 1, first = step - 1;
      const ShapeNode* model = a.children.size() > first   ? &a.children[first]
                               : b.children.size() > first ? &b.children[first]
                                                           : nullptr;
      for (const ShapeNode* side : {&a, &b})
        for (size_t i = first; i < side->children.size(); i += step)
          if (!same_type(*model, side->children[i]))
            return false;
      return true;
    }
  }
  return false;
}

std::string scalar_type_name(uint8_t tag) {
  std::string bits = std::to_string(8 * scalar_bytes(tag));
  if (tag & 2)
    return "float" + bits;
  return (tag & 1 ? "int" : "uint") + bits;
}

size_t count_arrays(std::span<const ShapeNode> nodes) {
  size_t k = 0;
  for (const ShapeNode& n : nodes)
    k += count_arrays(n);
  return k;
}

std::vector<ShapeNode> decode_shape(std::span<const uint8_t> shape, bool arguments,
                                    const std::string& where, size_t base) {
  Reader r(shape.data(), shape.size(), where, base);
  std::vector<ShapeNode> nodes;
  while (r.left()) {
    if (arguments) {
      size_t at = r.offset();
      if (r.u8("an argument marker") != kArgumentMarker)
        r.fail_at(at, "an argument does not start with the marker byte 0xA0");
    }
    nodes.push_back(read_node(r, 0));
  }
  return nodes;
}

DecodedKey decode_key(std::span<const uint8_t> key, size_t shape_bytes, uint32_t layout,
                      const std::string& where, size_t base) {
  if (shape_bytes > key.size())
    Reader(key.data(), key.size(), where, base)
        .fail("the key's shape part (" + std::to_string(shape_bytes) +
              " bytes) is longer than the key (" + std::to_string(key.size()) + ")");
  DecodedKey out;
  out.arguments = decode_shape(key.first(shape_bytes), true, where, base);
  Reader r(key.data() + shape_bytes, key.size() - shape_bytes, where, base + shape_bytes);
  read_tracer_part(r, layout, count_arrays(out.arguments), out);
  return out;
}

namespace {

void encode_section(Writer& w, const FreezeSection& s) {
  w.u32(s.layout);
  w.u32(static_cast<uint32_t>(s.records.size()));
  w.u32(static_cast<uint32_t>(s.opaque.size()));
  w.str(s.version);
  w.str(s.name);
  for (const FreezeRecord& rec : s.records) {
    w.u32(rec.recording);
    w.u32(rec.shape_bytes);
    w.blob(rec.key.data(), rec.key.size());
    w.u32(static_cast<uint32_t>(rec.infos.size()));
    for (const FreezeLeafInfo& li : rec.infos) {
      w.u8(static_cast<uint8_t>(li.type));
      w.u8(li.literal ? 1 : 0);
      w.u8(li.size_has_prov ? 1 : 0);
      w.u64(li.bits);
      w.u64(li.size);
    }
    w.blob(rec.out_shape.data(), rec.out_shape.size());
    w.blob(rec.written.data(), rec.written.size());
    w.u8(rec.tolerant ? 1 : 0);
    if (s.layout >= 2) {
      w.u32(static_cast<uint32_t>(rec.leaf_paths.size()));
      for (const std::string& path : rec.leaf_paths)
        w.str(path);
    }
    if (s.layout >= 3) {
      w.u32(static_cast<uint32_t>(rec.grad_outputs.size()));
      for (uint32_t g : rec.grad_outputs)
        w.u32(g);
      w.blob(rec.grad_ends.data(), rec.grad_ends.size());
    }
    if (s.layout >= 4) {
      w.u8(rec.backward ? 1 : 0);
      if (rec.backward) {
        Writer inner;
        encode_section(inner, *rec.backward);
        std::vector<std::byte> bytes = inner.take();
        w.blob(bytes.data(), bytes.size());
      }
    }
  }
  for (const OpaqueSet& set : s.opaque) {
    w.u64(set.shape_hash);
    w.u32(static_cast<uint32_t>(set.ordinals.size()));
    for (uint32_t i : set.ordinals)
      w.u32(i);
  }
  if (s.layout >= 2) {
    w.u32(static_cast<uint32_t>(s.struct_names.size()));
    for (const StructName& n : s.struct_names) {
      w.u64(n.hash);
      w.str(n.name);
    }
  }
}

}  // namespace

std::vector<std::byte> encode_freeze_section(const FreezeSection& s) {
  Writer w;
  encode_section(w, s);
  return w.take();
}

size_t count_grad_outputs(const std::vector<uint32_t>& grad_outputs,
                          const std::vector<uint8_t>& grad_ends) {
  return static_cast<size_t>(
      std::count(grad_outputs.begin(), grad_outputs.end(),
                 static_cast<uint32_t>(GradOutput::NewLeafGradient)) +
      std::count(grad_ends.begin(), grad_ends.end(), static_cast<uint8_t>(GradEnd::Gradient)));
}

namespace {

/// Layout 3: what a record's outputs do with gradients, checked against its key.
void read_grad_outputs(Reader& r, const std::string& which, const DecodedKey& key, size_t n_regular,
                       bool through, FreezeRecord& rec) {
  size_t at = r.offset();
  uint32_t n = r.u32("the gradient output count");
  bool grads = !key.grads.empty();
  if (n != (grads ? n_regular : 0))
    r.fail_at(at, which + ": " + std::to_string(n) + " gradient output kinds for " +
                      std::to_string(n_regular) + " output array(s) of a key " +
                      (grads ? "with" : "without") + " grad-enabled leaves");
  for (uint32_t k = 0; k < n; ++k) {
    size_t item_at = r.offset();
    uint32_t g = r.u32("a gradient output kind");
    if (through && g == static_cast<uint32_t>(GradOutput::ThroughCall)) {
      rec.grad_outputs.push_back(g);
      continue;
    }
    if (g >= static_cast<uint32_t>(GradOutput::InputNode) + key.grads.size() ||
        (g >= static_cast<uint32_t>(GradOutput::InputNode) &&
         key.grads[g - static_cast<uint32_t>(GradOutput::InputNode)].state == GradState::SameNode))
      r.fail_at(item_at, which + ": output array " + std::to_string(k) + " has gradient kind " +
                             std::to_string(g) +
                             " (0 detached, 1 and 2 new leaves, 3 + j item j's node" +
                             (through ? ", 4294967295 through the call's backward)" : ")"));
    rec.grad_outputs.push_back(g);
  }
  at = r.offset() + 4;
  rec.grad_ends = r.blob("the gradient ends");
  if (rec.grad_ends.size() != key.grads.size())
    r.fail_at(at, which + ": " + std::to_string(rec.grad_ends.size()) + " gradient ends for " +
                      std::to_string(key.grads.size()) + " grad-enabled leaves");
  for (size_t k = 0; k < rec.grad_ends.size(); ++k)
    if (rec.grad_ends[k] > static_cast<uint8_t>(GradEnd::Unchanged) ||
        (key.grads[k].state == GradState::SameNode &&
         rec.grad_ends[k] != static_cast<uint8_t>(GradEnd::Unchanged)))
      r.fail_at(at, which + ": grad-enabled leaf " + std::to_string(key.grads[k].leaf) +
                        " ends in state " + std::to_string(rec.grad_ends[k]) +
                        " (0 cleared, 1 a gradient, 2 unchanged; items sharing a node: 2)");
}

/// A section (a record's backward: `parent` its layout) whose recording indices are among the
/// file's n_outputs.size(), each marked in `used` (no two records may use one).
FreezeSection decode_section(Reader& r, std::span<const size_t> n_outputs, const std::string& where,
                             std::vector<bool>& used, std::optional<uint32_t> parent) {
  FreezeSection s;
  size_t layout_at = r.offset();
  s.layout = r.u32("the layout version");
  if (s.layout < kFreezeLayoutOldest || s.layout > kFreezeLayout)
    r.fail_at(layout_at, "layout version " + std::to_string(s.layout) + " (this reader knows " +
                             std::to_string(kFreezeLayoutOldest) + " to " +
                             std::to_string(kFreezeLayout) + ")");
  if (parent && s.layout != *parent)
    r.fail_at(layout_at, "a backward's section has layout " + std::to_string(s.layout) +
                             ", its function's " + std::to_string(*parent));
  size_t counts_at = r.offset();
  uint32_t n_held = r.u32("the recording count");
  uint32_t n_opaque = r.u32("the opaque set count");
  s.version = r.str("the version string");
  s.name = r.str("the function's name");
  // Before layout 4 the function's records are all the file holds; since, a backward's hold
  // some of them.
  if (s.layout < 4 ? n_held != n_outputs.size() : n_held > n_outputs.size())
    r.fail_at(counts_at, "it lists " + std::to_string(n_held) + " recordings, the file holds " +
                             std::to_string(n_outputs.size()));

  for (uint32_t k = 0; k < n_held; ++k) {
    FreezeRecord rec;
    size_t at = r.offset();
    rec.recording = r.u32("a recording index");
    if (rec.recording >= n_outputs.size() || used[rec.recording])
      r.fail_at(at, "recording index " + std::to_string(rec.recording) +
                        " is out of range or used twice");
    used[rec.recording] = true;
    std::string which =
        (parent ? "backward recording " : "recording ") + std::to_string(rec.recording);
    rec.shape_bytes = r.u32("the shape length");
    size_t key_at = r.offset() + 4;
    rec.key = r.blob("a key");
    DecodedKey key = decode_key(rec.key, rec.shape_bytes, s.layout, where, key_at);

    size_t infos_at = r.offset();
    uint32_t n_infos = r.u32("the leaf count");
    if (n_infos != key.leaves.size())
      r.fail_at(infos_at, which + ": " + std::to_string(n_infos) + " leaf infos, its key has " +
                              std::to_string(key.leaves.size()) + " leaves");
    std::vector<ScalarType> types;
    for (const ShapeNode& a : key.arguments)
      array_types(a, types);
    for (const GradItem& g : key.grads)  // the gradients, of their arrays' types
      if (g.state == GradState::Gradient)
        types.push_back(types[g.leaf]);
    for (uint32_t i = 0; i < n_infos; ++i) {
      size_t leaf_at = r.offset();
      FreezeLeafInfo li;
      uint8_t type = r.u8("a leaf's type");
      std::string leaf = which + ", leaf " + std::to_string(i);
      if (!is_valid(static_cast<ScalarType>(type)))
        r.fail_at(leaf_at, leaf + " has element type " + std::to_string(type));
      li.type = static_cast<ScalarType>(type);
      if (li.type != types[i])
        r.fail_at(leaf_at, leaf + " is of element type " + to_string(li.type) +
                               ", its array in the key of " + to_string(types[i]));
      li.literal = r.flag("a leaf's literal flag");
      if (li.literal != (key.leaves[i].kind == LeafKind::Literal))
        r.fail_at(leaf_at, leaf + (li.literal ? " is a literal, not in the key"
                                              : " is a literal in the key only"));
      li.size_has_prov = r.flag("a leaf's size flag");
      li.bits = r.u64("a leaf's literal bits");
      li.size = r.u64("a leaf's size");
      rec.infos.push_back(li);
    }

    size_t out_at = r.offset() + 4;
    rec.out_shape = r.blob("a result shape");
    std::vector<ShapeNode> out = decode_shape(rec.out_shape, false, where, out_at);
    size_t written_at = r.offset();
    rec.written = r.blob("the written arguments");
    size_t n_written = 0;
    for (uint8_t b : rec.written) {
      if (b > 1)
        r.fail_at(written_at, which + ": a written-argument flag other than 0 or 1");
      n_written += b;
    }
    if (rec.written.size() != key.arguments.size())
      r.fail_at(written_at, which + ": written flags for " + std::to_string(rec.written.size()) +
                                " argument(s), its key has " +
                                std::to_string(key.arguments.size()));
    // The result (none for void), then each written argument.
    if (out.size() != n_written && out.size() != n_written + 1)
      r.fail_at(out_at, which + ": the result shape holds " + std::to_string(out.size()) +
                            " value(s) for " + std::to_string(n_written) +
                            " written argument(s) and the result");
    size_t n_regular = count_arrays(out);
    // A written argument is rebuilt into the argument's own type: after the body it has the
    // structure it had before (the key's), only container lengths and values may change.
    for (size_t a = 0, node = out.size() - n_written; a < rec.written.size(); ++a)
      if (rec.written[a] && !same_type(key.arguments[a], out[node++]))
        r.fail_at(out_at, which + ": written argument " + std::to_string(a) +
                              " has another type in the result shape than in the key");
    rec.tolerant = r.flag("the tolerance flag");
    if (s.layout >= 2) {
      size_t paths_at = r.offset();
      uint32_t n_paths = r.u32("the leaf path count");
      if (n_paths != 0 && n_paths != rec.infos.size())
        r.fail_at(paths_at, which + ": " + std::to_string(n_paths) + " leaf paths for " +
                                std::to_string(rec.infos.size()) + " leaves");
      for (uint32_t i = 0; i < n_paths; ++i)
        rec.leaf_paths.push_back(r.str("a leaf path"));
    }
    if (s.layout >= 3)
      read_grad_outputs(r, which, key, n_regular, s.layout >= 4 && !parent, rec);
    if (size_t n = n_regular + count_grad_outputs(rec.grad_outputs, rec.grad_ends);
        n != n_outputs[rec.recording])
      r.fail_at(out_at, which + ": the result shape and gradients hold " + std::to_string(n) +
                            " array(s), the recording has " +
                            std::to_string(n_outputs[rec.recording]) + " output(s)");
    if (s.layout >= 4) {
      size_t backward_at = r.offset();
      if (r.flag("the backward flag")) {
        bool through = std::count(rec.grad_outputs.begin(), rec.grad_outputs.end(),
                                  static_cast<uint32_t>(GradOutput::ThroughCall)) > 0;
        if (parent || !through)
          r.fail_at(backward_at, which + " holds a backward, but " +
                                     (parent ? "it is a backward itself"
                                             : "no output of it passes gradients through"));
        size_t inner_at = r.offset() + 4;
        std::vector<uint8_t> bytes = r.blob("a backward's section");
        Reader inner(bytes.data(), bytes.size(), where, inner_at);
        rec.backward = std::make_shared<const FreezeSection>(
            decode_section(inner, n_outputs, where, used, s.layout));
      }
    }
    s.records.push_back(std::move(rec));
  }

  for (uint32_t k = 0; k < n_opaque; ++k) {
    OpaqueSet set;
    set.shape_hash = r.u64("an opaque set's shape hash");
    uint32_t n = r.u32("an opaque set's size");
    if (n > r.left() / 4)
      r.fail("an opaque set of " + std::to_string(n) + " leaves runs past the end");
    for (uint32_t i = 0; i < n; ++i)
      set.ordinals.push_back(r.u32("an opaque leaf ordinal"));
    s.opaque.push_back(std::move(set));
  }
  if (s.layout >= 2) {
    uint32_t n_names = r.u32("the struct name count");
    if (n_names > r.left() / 12)
      r.fail(std::to_string(n_names) + " struct names run past the end");
    for (uint32_t k = 0; k < n_names; ++k) {
      StructName n;
      n.hash = r.u64("a struct name's hash");
      n.name = r.str("a struct name");
      s.struct_names.push_back(std::move(n));
    }
  }
  if (r.left())
    r.fail(s.layout >= 2 ? "bytes follow the last struct name"
                         : "bytes follow the last opaque set");
  return s;
}

}  // namespace

FreezeSection decode_freeze_section(std::span<const std::byte> bytes,
                                    std::span<const size_t> n_outputs, const std::string& where) {
  Reader r(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), where, 0);
  std::vector<bool> used(n_outputs.size(), false);
  FreezeSection s = decode_section(r, n_outputs, where, used, std::nullopt);
  if (auto k = std::find(used.begin(), used.end(), false); k != used.end())
    r.fail_at(4, "recording " + std::to_string(k - used.begin()) +
                     " of the file is held by no record (neither the function's nor a "
                     "backward's)");
  return s;
}

}  // namespace ff::format
