// recorder-dump's view of a saved frozen function's freeze section (f.save): the keys, result
// shapes and written arguments of the recordings it held, readable, for the text and JSON
// views. The bytes are decoded by recorder/freeze_section.h.
#include <charconv>
#include <cstdio>
#include <cstring>
#include <map>

#include "dump_internal.h"

namespace ff::dump::detail {
namespace {

using json = nlohmann::ordered_json;

std::string hex64(uint64_t v) {
  char buf[20];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

using ff::dump::detail::escaped;  // the strings' overloads, beside the bytes' below
using ff::dump::detail::printable;

std::string escaped(const std::vector<uint8_t>& b) {
  return escaped(std::string(b.begin(), b.end()));
}

std::string printable(const std::vector<uint8_t>& b) {
  return printable(std::string(b.begin(), b.end()));
}

template <class F>
std::string shortest(F v) {
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

/// A scalar node's value, decoded by its tag.
std::string scalar_value(const format::ShapeNode& n) {
  size_t bytes = format::scalar_bytes(n.tag);
  bool is_float = n.tag & 2, is_signed = n.tag & 1;
  if (n.bytes.size() != bytes || bytes > 8) {  // long double, __int128: the bytes
    std::string s = "0x";
    for (size_t i = n.bytes.size(); i-- > 0;) {
      char buf[4];
      std::snprintf(buf, sizeof buf, "%02x", n.bytes[i]);
      s += buf;
    }
    return s;
  }
  if (is_float && bytes == 4) {
    float f;
    std::memcpy(&f, n.bytes.data(), 4);
    return shortest(f);
  }
  if (is_float && bytes == 8) {
    double d;
    std::memcpy(&d, n.bytes.data(), 8);
    return shortest(d);
  }
  uint64_t u = 0;
  std::memcpy(&u, n.bytes.data(), bytes);
  if (is_signed && bytes < 8 && (u >> (8 * bytes - 1)) & 1)  // sign-extend
    u |= ~uint64_t{0} << (8 * bytes);
  return is_signed ? std::to_string(static_cast<int64_t>(u)) : std::to_string(u);
}

/// The FF_STRUCT names the section lists, by the hash keys hold.
using Names = std::map<uint64_t, std::string>;

Names names_of(const format::FreezeSection& s) {
  Names names;
  for (const format::StructName& n : s.struct_names)
    names.emplace(n.hash, n.name);
  for (const format::FreezeRecord& rec : s.records)
    if (rec.backward)
      names.merge(names_of(*rec.backward));
  return names;
}

/// A struct's name where the file lists it, else its hash.
std::string struct_name(const Names& names, uint64_t hash) {
  auto it = names.find(hash);
  return it != names.end() ? escaped(it->second) : hex64(hash);
}

/// "struct 8f3a... {array float32, value int32 5}", "vector(2) {...}", "string \"a\"".
std::string node_text(const format::ShapeNode& n, const Names& names) {
  switch (n.token) {
    case format::ShapeToken::Array:
      return std::string("array ") + to_string(n.type);
    case format::ShapeToken::Scalar:
      return "value " + format::scalar_type_name(n.tag) + " " + scalar_value(n);
    case format::ShapeToken::String:
      return "string \"" + escaped(n.bytes) + "\"";
    default:
      break;
  }
  std::string s = format::to_string(n.token);
  if (n.token == format::ShapeToken::Struct)
    s += " " + struct_name(names, n.name_hash);
  else
    s += "(" +
         std::to_string(n.token == format::ShapeToken::Map ? n.children.size() / 2
                                                           : n.children.size()) +
         ")";
  if (n.children.empty())
    return s + " {}";
  s += " {";
  for (size_t i = 0; i < n.children.size(); ++i) {
    if (n.token == format::ShapeToken::Map) {
      s += (i ? ", \"" : "\"") + escaped(n.children[i].bytes) +
           "\": " + node_text(n.children[i + 1], names);
      ++i;
    } else {
      s += (i ? ", " : "") + node_text(n.children[i], names);
    }
  }
  return s + "}";
}

json node_json(const format::ShapeNode& n, const Names& names) {
  json j = {{"node", format::to_string(n.token)}};
  switch (n.token) {
    case format::ShapeToken::Array:
      j["type"] = to_string(n.type);
      return j;
    case format::ShapeToken::Scalar:
      j["type"] = format::scalar_type_name(n.tag);
      j["value"] = scalar_value(n);
      return j;
    case format::ShapeToken::String:
      j["value"] = printable(n.bytes);
      return j;
    default:
      break;
  }
  if (n.token == format::ShapeToken::Struct) {
    j["name_hash"] = hex64(n.name_hash);
    if (auto it = names.find(n.name_hash); it != names.end())
      j["name"] = it->second;
  }
  json items = json::array();
  if (n.token == format::ShapeToken::Map) {
    for (size_t i = 0; i + 1 < n.children.size(); i += 2)
      items.push_back({{"key", printable(n.children[i].bytes)},
                       {"value", node_json(n.children[i + 1], names)}});
    j["count"] = items.size();
    j["entries"] = std::move(items);
    return j;
  }
  for (const format::ShapeNode& c : n.children)
    items.push_back(node_json(c, names));
  j["count"] = items.size();
  j[n.token == format::ShapeToken::Struct ? "fields" : "elements"] = std::move(items);
  return j;
}

/// The paths of the Array nodes under `n`, in walking order: args[0].1 (a struct's field 1),
/// args[1][2] (an element), args[2]["k"] (a map's value).
void leaf_paths(const format::ShapeNode& n, const std::string& path,
                std::vector<std::string>& out) {
  if (n.token == format::ShapeToken::Array) {
    out.push_back(path);
    return;
  }
  for (size_t i = 0; i < n.children.size(); ++i) {
    if (n.token == format::ShapeToken::Map) {
      leaf_paths(n.children[i + 1], path + "[\"" + escaped(n.children[i].bytes) + "\"]", out);
      ++i;
    } else if (n.token == format::ShapeToken::Struct) {
      leaf_paths(n.children[i], path + "." + std::to_string(i), out);
    } else {
      leaf_paths(n.children[i], path + "[" + std::to_string(i) + "]", out);
    }
  }
}

/// A literal's size class: "size 1", "size of group 0", "size 100", "size of another array".
std::string literal_size(const format::KeyLeaf& l) {
  switch (l.size_class) {
    case format::LiteralSize::One:
      return "size 1";
    case format::LiteralSize::Group:
      return "size of group " + std::to_string(l.group);
    case format::LiteralSize::Exact:
      return "size " + std::to_string(l.size);
    case format::LiteralSize::FromArray:
      return "size of another array";
  }
  return "?";
}

const char* size_class_name(format::LiteralSize c) {
  switch (c) {
    case format::LiteralSize::One:
      return "one";
    case format::LiteralSize::Group:
      return "group";
    case format::LiteralSize::Exact:
      return "exact";
    case format::LiteralSize::FromArray:
      return "from_array";
  }
  return "?";
}

/// One held recording, decoded for both views.
struct Held {
  const format::FreezeRecord* rec;
  format::DecodedKey key;
  std::vector<std::string> paths;                             // per leaf
  std::vector<format::ShapeNode> result;                      // 0 or 1 node
  std::vector<std::pair<size_t, format::ShapeNode>> written;  // argument, its shape after
};

Held decode_held(const format::FreezeRecord& rec, uint32_t layout) {
  Held h{&rec, format::decode_key(rec.key, rec.shape_bytes, layout, "recording file"), {}, {}, {}};
  if (!rec.leaf_paths.empty())  // the paths as the user wrote them (field names)
    h.paths = rec.leaf_paths;
  else
    for (size_t a = 0; a < h.key.arguments.size(); ++a)
      leaf_paths(h.key.arguments[a], "args[" + std::to_string(a) + "]", h.paths);
  while (h.paths.size() < h.key.leaves.size())  // gradients brought in, unnamed
    h.paths.push_back("gradient");
  std::vector<format::ShapeNode> out = format::decode_shape(rec.out_shape, false, "recording file");
  size_t n_written = 0;
  for (uint8_t w : rec.written)
    n_written += w;
  size_t next = 0;
  if (out.size() > n_written)  // decode checked: the result, then one node per written argument
    h.result.push_back(std::move(out[next++]));
  for (size_t a = 0; a < rec.written.size() && next < out.size(); ++a)
    if (rec.written[a])
      h.written.emplace_back(a, std::move(out[next++]));
  return h;
}

std::string leaf_text(const Held& h, size_t i) {
  const format::KeyLeaf& l = h.key.leaves[i];
  const format::FreezeLeafInfo& li = h.rec->infos[i];
  switch (l.kind) {
    case format::LeafKind::Input:
      return "input (size group " + std::to_string(l.group) + "), recorded size " +
             std::to_string(li.size);
    case format::LeafKind::Alias:
      return "alias of leaf " + std::to_string(l.alias);
    case format::LeafKind::Literal:
      return "literal " + format::element_value(li.type, l.bits) + ", " + literal_size(l);
  }
  return "?";
}

/// What grad item j brings in: "no gradient yet", "its gradient (leaf 7)", "the node of leaf 2".
std::string grad_item_text(const Held& h, size_t j) {
  const format::GradItem& g = h.key.grads[j];
  switch (g.state) {
    case format::GradState::NoGradient:
      return "no gradient yet";
    case format::GradState::Gradient: {
      size_t leaf = h.key.leaves.size();  // the gradients are the last leaves, in item order
      for (size_t k = j; k < h.key.grads.size(); ++k)
        leaf -= h.key.grads[k].state == format::GradState::Gradient ? 1 : 0;
      return "its gradient (leaf " + std::to_string(leaf) + ")";
    }
    case format::GradState::SameNode:
      return "the node of leaf " + std::to_string(h.key.grads[g.same_as].leaf);
  }
  return "?";
}

/// What output array k does with gradients after a replay.
std::string grad_output_text(uint32_t kind, const Held& h) {
  switch (kind) {
    case static_cast<uint32_t>(format::GradOutput::Detached):
      return "detached";
    case static_cast<uint32_t>(format::GradOutput::NewLeaf):
      return "a new grad-enabled leaf";
    case static_cast<uint32_t>(format::GradOutput::NewLeafGradient):
      return "a new grad-enabled leaf with a gradient (an extra output)";
    case static_cast<uint32_t>(format::GradOutput::ThroughCall):
      return "a node whose gradient flows back to the grad-enabled leaves through the call's "
             "frozen backward";
    default: {
      size_t j = kind - static_cast<uint32_t>(format::GradOutput::InputNode);
      return "the node of leaf " + std::to_string(h.key.grads[j].leaf);
    }
  }
}

const char* grad_end_text(uint8_t end) {
  switch (end) {
    case static_cast<uint8_t>(format::GradEnd::Cleared):
      return "cleared";
    case static_cast<uint8_t>(format::GradEnd::Gradient):
      return "a new gradient (an extra output)";
    default:
      return "unchanged";
  }
}

/// Whether `rec` or a record of its backward is the recording `o` selects (all without one).
bool holds_selected(const format::FreezeRecord& rec, const Options& o) {
  if (!o.recording || rec.recording == *o.recording)
    return true;
  return rec.backward && std::any_of(rec.backward->records.begin(), rec.backward->records.end(),
                                     [&](const auto& b) { return holds_selected(b, o); });
}

std::vector<const format::FreezeRecord*> selected_records(const format::FreezeSection& s,
                                                          const Options& o) {
  std::vector<const format::FreezeRecord*> out;
  for (const format::FreezeRecord& r : s.records)
    if (holds_selected(r, o))
      out.push_back(&r);
  return out;
}

}  // namespace

bool is_freeze_section(const format::RawSection& s) {
  return s.type == format::kSectionFreeze && s.recording == format::kFileLevel;
}

std::optional<format::FreezeSection> freeze_section(const format::ParsedFile& file) {
  for (const format::RawSection& s : file.skipped)
    if (is_freeze_section(s)) {
      std::vector<size_t> n_outputs;
      for (const auto& d : file.recordings)
        n_outputs.push_back(d->outputs.size());
      return format::decode_freeze_section(s.bytes, n_outputs, "recording file");
    }
  return std::nullopt;
}

namespace {

/// The held recordings of `s`, each line indented by `in` (a backward's by more).
std::string records_text(const format::FreezeSection& s, const Names& names, const Options& o,
                         const std::string& in) {
  std::string t;
  for (const format::FreezeRecord* rec : selected_records(s, o)) {
    Held h = decode_held(*rec, s.layout);
    t += in + "held recording " + std::to_string(rec->recording) + ": " +
         std::to_string(h.key.arguments.size()) + " argument(s), " +
         std::to_string(h.key.leaves.size()) + " array leaf(s)" +
         (h.key.debug ? ", keyed with Flag::Debug on" : "") +
         (h.key.suspended ? ", called under ff::SuspendGrad" : "") +
         (rec->tolerant ? ", verify within tolerance" : ", verify exact") + "\n";
    for (size_t a = 0; a < h.key.arguments.size(); ++a)
      t += in + "  args[" + std::to_string(a) + "]: " + node_text(h.key.arguments[a], names) + "\n";
    for (size_t i = 0; i < h.key.leaves.size(); ++i)
      t += in + "  leaf " + std::to_string(i) + " " + h.paths[i] + " " +
           to_string(rec->infos[i].type) + ": " + leaf_text(h, i) + "\n";
    for (size_t j = 0; j < h.key.grads.size(); ++j) {
      uint32_t leaf = h.key.grads[j].leaf;
      t += in + "  grad-enabled leaf " + std::to_string(leaf) + " " + h.paths[leaf] + ": brings " +
           grad_item_text(h, j) + "; after the call its gradient is " +
           grad_end_text(j < rec->grad_ends.size() ? rec->grad_ends[j] : 2) + "\n";
    }
    t += in +
         "  result: " + (h.result.empty() ? std::string("none") : node_text(h.result[0], names)) +
         "\n";
    if (h.written.empty())
      t += in + "  written back: none\n";
    for (const auto& [a, node] : h.written)
      t += in + "  written back: args[" + std::to_string(a) + "]: " + node_text(node, names) + "\n";
    for (size_t k = 0; k < rec->grad_outputs.size(); ++k)
      t += in + "  output array " + std::to_string(k) + " comes out " +
           grad_output_text(rec->grad_outputs[k], h) + "\n";
    if (rec->backward) {
      const format::FreezeSection& b = *rec->backward;
      t += in + "  its backward, frozen function '" + escaped(b.name) +
           "': " + std::to_string(b.records.size()) + " recording(s) held, " +
           std::to_string(b.opaque.size()) + " opaque set(s)\n";
      t += records_text(b, names, o, in + "    ");
    }
  }
  for (const format::OpaqueSet& set : s.opaque) {
    t += in + "opaque for argument shape " + hex64(set.shape_hash) + ": leaves";
    for (size_t i = 0; i < set.ordinals.size(); ++i)
      t += (i ? ", " : " ") + std::to_string(set.ordinals[i]);
    t += "\n";
  }
  return t;
}

}  // namespace

std::string freeze_text(const format::FreezeSection& s, const Options& o) {
  Names names = names_of(s);
  return "  frozen function '" + escaped(s.name) + "' (saved by f.save): version '" +
         escaped(s.version) + "', freeze layout " + std::to_string(s.layout) + ", " +
         std::to_string(s.records.size()) + " recording(s) held, " +
         std::to_string(s.opaque.size()) + " opaque set(s)\n" + records_text(s, names, o, "    ");
}

namespace {

/// The held recordings of `s` and its opaque sets, a backward's within its record.
json section_json(const format::FreezeSection& s, const Names& names, const Options& o) {
  json held = json::array();
  for (const format::FreezeRecord* rec : selected_records(s, o)) {
    Held h = decode_held(*rec, s.layout);
    json args = json::array(), leaves = json::array(), written = json::array();
    for (size_t a = 0; a < h.key.arguments.size(); ++a)
      args.push_back({{"index", a},
                      {"text", node_text(h.key.arguments[a], names)},
                      {"shape", node_json(h.key.arguments[a], names)}});
    for (size_t i = 0; i < h.key.leaves.size(); ++i) {
      const format::KeyLeaf& l = h.key.leaves[i];
      const format::FreezeLeafInfo& li = rec->infos[i];
      json jl = {{"leaf", i}, {"path", h.paths[i]}, {"type", to_string(li.type)}};
      switch (l.kind) {
        case format::LeafKind::Input:
          jl["kind"] = "input";
          jl["size_group"] = l.group;
          jl["recorded_size"] = li.size;
          break;
        case format::LeafKind::Alias:
          jl["kind"] = "alias";
          jl["of"] = l.alias;
          break;
        case format::LeafKind::Literal:
          jl["kind"] = "literal";
          jl["value"] = format::element_value(li.type, l.bits);
          jl["bits"] = l.bits;
          jl["size_class"] = size_class_name(l.size_class);
          if (l.size_class == format::LiteralSize::Group)
            jl["size_group"] = l.group;
          if (l.size_class != format::LiteralSize::FromArray)
            jl["size"] = l.size_class == format::LiteralSize::Group ? json(nullptr) : json(l.size);
          break;
      }
      jl["text"] = leaf_text(h, i);
      leaves.push_back(std::move(jl));
    }
    for (const auto& [a, node] : h.written)
      written.push_back(
          {{"argument", a}, {"text", node_text(node, names)}, {"shape", node_json(node, names)}});
    json grads = json::array(), grad_outputs = json::array();
    for (size_t j = 0; j < h.key.grads.size(); ++j) {
      uint8_t end = j < rec->grad_ends.size() ? rec->grad_ends[j] : 2;
      grads.push_back({{"leaf", h.key.grads[j].leaf},
                       {"state", static_cast<int>(h.key.grads[j].state)},
                       {"brings", grad_item_text(h, j)},
                       {"end", end},
                       {"after", grad_end_text(end)}});
    }
    for (size_t k = 0; k < rec->grad_outputs.size(); ++k)
      grad_outputs.push_back({{"output", k},
                              {"kind", rec->grad_outputs[k]},
                              {"text", grad_output_text(rec->grad_outputs[k], h)}});
    held.push_back(
        {{"recording", rec->recording},
         {"debug", h.key.debug},
         {"suspended", h.key.suspended},
         {"grads", std::move(grads)},
         {"grad_outputs", std::move(grad_outputs)},
         {"arguments", std::move(args)},
         {"leaves", std::move(leaves)},
         {"result", h.result.empty() ? json(nullptr)
                                     : json{{"text", node_text(h.result[0], names)},
                                            {"shape", node_json(h.result[0], names)}}},
         {"written", std::move(written)},
         {"tolerant", rec->tolerant},
         {"backward", rec->backward ? section_json(*rec->backward, names, o) : json(nullptr)}});
  }
  json opaque = json::array();
  for (const format::OpaqueSet& set : s.opaque)
    opaque.push_back({{"shape_hash", hex64(set.shape_hash)}, {"leaves", set.ordinals}});
  return {{"name", printable(s.name)},
          {"version", printable(s.version)},
          {"layout", s.layout},
          {"held", std::move(held)},
          {"opaque", std::move(opaque)}};
}

}  // namespace

nlohmann::ordered_json freeze_json(const format::FreezeSection& s, const Options& o) {
  return section_json(s, names_of(s), o);
}

}  // namespace ff::dump::detail
