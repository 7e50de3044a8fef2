// f.save / f.load: a frozen function's recordings in one recording file, with the freeze data
// (docs/recording-format.md, "The freeze section") in an optional file-level section, encoded
// and validated by recorder/freeze_section.h. This file maps it to and from the cache.
//
// Keys are stable across processes by construction: node tokens, element types, scalar bytes,
// struct name hashes (FNV-1a of the FF_STRUCT name), leaf ordinals and size-group numbers; no
// pointers or typeid names.
#include <algorithm>
#include <cstdio>
#include <mutex>

#include "common/file_io.h"
#include "common/log.h"
#include "frontend/freeze_cache.h"
#include "frontend/recording_state.h"
#include "recorder/format_reader.h"
#include "recorder/format_writer.h"
#include "recorder/freeze_section.h"

namespace ff::detail {

// The codec (recorder/freeze_section.h) spells the tokens of ScanVisitor's encoding itself.
static_assert(static_cast<uint8_t>(Node::Array) == uint8_t(format::ShapeToken::Array) &&
              static_cast<uint8_t>(Node::Scalar) == uint8_t(format::ShapeToken::Scalar) &&
              static_cast<uint8_t>(Node::String) == uint8_t(format::ShapeToken::String) &&
              static_cast<uint8_t>(Node::Vector) == uint8_t(format::ShapeToken::Vector) &&
              static_cast<uint8_t>(Node::StdArray) == uint8_t(format::ShapeToken::StdArray) &&
              static_cast<uint8_t>(Node::Tuple) == uint8_t(format::ShapeToken::Tuple) &&
              static_cast<uint8_t>(Node::Optional) == uint8_t(format::ShapeToken::Optional) &&
              static_cast<uint8_t>(Node::Map) == uint8_t(format::ShapeToken::Map) &&
              static_cast<uint8_t>(Node::Struct) == uint8_t(format::ShapeToken::Struct));

void FreezeCore::save(const std::string& path) const {
  Impl& m = *impl_;
  std::vector<std::shared_ptr<Held>> held;
  std::vector<const Entry*> owner;
  format::FreezeSection section;
  std::vector<std::pair<uint64_t, std::vector<uint32_t>>> opaque;
  {
    std::lock_guard lock(m.mutex);
    for (auto& [h, list] : m.entries)
      for (auto& e : list)
        for (auto& one : e->held) {
          held.push_back(one);
          owner.push_back(e.get());
        }
    opaque.assign(m.opaque.begin(), m.opaque.end());
    if (held.empty())
      throw FreezeError(m.prefix() + "save('" + path + "'): it holds no recordings yet");
    // Oldest first, so that a load recreates the same order of recordings and entries.
    std::vector<size_t> order(held.size());
    for (size_t i = 0; i < order.size(); ++i)
      order[i] = i;
    std::sort(order.begin(), order.end(),
              [&](size_t a, size_t b) { return held[a]->created < held[b]->created; });
    std::sort(opaque.begin(), opaque.end());

    section.version = m.options.version;
    section.name = m.options.name;
    std::vector<std::shared_ptr<Held>> sorted;
    for (size_t k = 0; k < order.size(); ++k) {
      const Held& one = *held[order[k]];
      const Entry& e = *owner[order[k]];
      format::FreezeRecord& rec = section.records.emplace_back();
      rec.recording = static_cast<uint32_t>(k);  // its recording in the file
      rec.shape_bytes = static_cast<uint32_t>(e.shape_bytes);
      rec.key = e.key;
      for (const LeafInfo& li : e.infos)
        rec.infos.push_back({li.type, li.literal, li.size_has_prov, li.bits, li.size});
      rec.out_shape = one.out_shape;
      rec.written.assign(one.written.begin(), one.written.end());
      rec.tolerant = one.tolerant;
      rec.leaf_paths = e.leaf_paths;
      sorted.push_back(held[order[k]]);
    }
    held = std::move(sorted);
    for (const auto& [hash, name] : m.struct_names)
      section.struct_names.push_back({hash, name});
  }
  for (auto& [hash, ordinals] : opaque)
    section.opaque.push_back({hash, std::move(ordinals)});

  std::vector<const rec::RecordingData*> recordings;
  for (const auto& one : held)
    recordings.push_back(recording_state(one->recording)->data.get());
  format::WriteOptions options;
  options.extra.push_back({format::kSectionFreeze, format::kSectionOptional, format::kFileLevel, 1,
                           format::encode_freeze_section(section)});
  std::vector<std::byte> bytes = format::write(recordings, options);
  write_file_atomic(path, bytes, /*durable=*/true);
  logging::format().info("{}saved {} recording(s) to '{}' ({} bytes)", m.prefix(),
                         recordings.size(), path, bytes.size());
}

void FreezeCore::load(const std::string& path) {
  Impl& m = *impl_;
  format::ParsedFile parsed = format::parse_file(path);
  const format::RawSection* section = nullptr;
  for (const format::RawSection& s : parsed.skipped)
    if (s.type == format::kSectionFreeze && s.recording == format::kFileLevel)
      section = &s;
  if (!section)
    throw FormatError(path +
                      ": holds no freeze data: it was not written by a frozen "
                      "function's save() (Recording::load reads its recordings)");
  std::vector<size_t> n_outputs;
  for (const auto& d : parsed.recordings)
    n_outputs.push_back(d->outputs.size());
  format::FreezeSection data = format::decode_freeze_section(section->bytes, n_outputs, path);
  // The result shape's arrays are the recording's outputs, in order: of their element types.
  for (size_t k = 0; k < data.records.size(); ++k) {
    const format::FreezeRecord& rec = data.records[k];
    const rec::RecordingData& d = *parsed.recordings[rec.recording];
    std::vector<ScalarType> types;
    auto collect = [&](auto& self, const format::ShapeNode& n) -> void {
      if (n.token == format::ShapeToken::Array)
        types.push_back(n.type);
      for (const format::ShapeNode& c : n.children)
        self(self, c);
    };
    for (const format::ShapeNode& n : format::decode_shape(rec.out_shape, false, path))
      collect(collect, n);
    for (size_t i = 0; i < types.size() && i < d.outputs.size(); ++i)
      if (ScalarType t = d.slots[d.outputs[i].slot].type; t != types[i])
        throw FormatError(path + ": freeze data: the result shape of recording " +
                          std::to_string(rec.recording) + " holds an array of " +
                          to_string(types[i]) + " as output " + std::to_string(i) +
                          ", the recording's output " + std::to_string(i) + " is " + to_string(t));
  }
  const std::string& saved_name = data.name;
  if (data.version != m.options.version)
    throw FreezeError(m.prefix() + "load('" + path + "'): the file was saved with version '" +
                      data.version + "', this function has FreezeOptions::version '" +
                      m.options.version + "'");

  struct Loaded {
    std::vector<uint8_t> key;
    size_t shape_bytes;
    std::vector<LeafInfo> infos;
    std::vector<std::string> leaf_paths;
    std::shared_ptr<Held> held;
  };

  std::vector<Loaded> loaded;
  size_t dropped = 0;
  for (format::FreezeRecord& rec : data.records) {
    // Layout 1 keyed a literal by a size that the tracer did not always know (a size taken
    // from another array was ~0, whatever it was): such a key cannot be trusted to match only
    // the calls it fits. Its calls record anew.
    bool literal = std::any_of(rec.infos.begin(), rec.infos.end(),
                               [](const format::FreezeLeafInfo& li) { return li.literal; });
    if (data.layout == 1 && literal) {
      ++dropped;
      continue;
    }
    Loaded one;
    one.shape_bytes = rec.shape_bytes;
    one.key = std::move(rec.key);
    one.leaf_paths = std::move(rec.leaf_paths);
    for (const format::FreezeLeafInfo& li : rec.infos) {
      LeafInfo& out = one.infos.emplace_back();
      out.type = li.type;
      out.literal = li.literal;
      out.bits = li.bits;
      out.size = li.size;
      out.size_has_prov = li.size_has_prov;
    }
    auto held = std::make_shared<Held>();
    auto state = std::make_shared<RecordingState>(parsed.recordings[rec.recording]);
    held->recording = Recording(std::move(state));
    held->out_shape = std::move(rec.out_shape);
    held->written.assign(rec.written.begin(), rec.written.end());
    held->tolerant = rec.tolerant;
    held->context = m.prefix() + "the recording loaded from '" + path + "': ";
    one.held = std::move(held);
    loaded.push_back(std::move(one));
  }
  if (dropped)
    logging::format().info(
        "{}'{}' has freeze layout 1: {} of its {} recording(s) were keyed on literal arguments "
        "with sizes layout 1 did not record reliably; they are not loaded, and those calls "
        "record anew",
        m.prefix(), path, dropped, data.records.size());
  std::vector<std::pair<uint64_t, std::vector<uint32_t>>> opaque;
  for (format::OpaqueSet& set : data.opaque)
    opaque.emplace_back(set.shape_hash, std::move(set.ordinals));

  std::lock_guard lock(m.mutex);
  for (Loaded& one : loaded) {
    Hash128 h = hash128(std::as_bytes(std::span(one.key)));
    Entry* e = m.find(h, one.key);
    if (!e) {
      e = &m.add_entry(h, one.key, one.shape_bytes, std::move(one.infos));
      e->leaf_paths = std::move(one.leaf_paths);
      ++m.n_loaded_keys;
    }
    m.hold(*e, one.held);  // oldest first in the file: the newest ends first
  }
  for (const format::StructName& n : data.struct_names)
    m.struct_names.emplace(n.hash, n.name);
  for (auto& [hash, ordinals] : opaque) {
    auto& set = m.opaque[hash];
    for (uint32_t i : ordinals)
      if (std::find(set.begin(), set.end(), i) == set.end())
        set.push_back(i);
  }
  m.loaded_from = path;
  m.epoch++;
  m.evict_locked();
  logging::format().info("{}loaded {} recording(s) from '{}' (saved by '{}')", m.prefix(),
                         loaded.size(), path, saved_name);
}

}  // namespace ff::detail
