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

namespace {

/// One recording held, as the freeze section keeps it (`k`: its recording in the file).
format::FreezeRecord to_record(const Held& one, const Entry& e, uint32_t k) {
  format::FreezeRecord rec;
  rec.recording = k;
  rec.shape_bytes = static_cast<uint32_t>(e.shape_bytes);
  rec.key = e.key;
  for (const LeafInfo& li : e.infos)
    rec.infos.push_back({li.type, li.literal, li.size_has_prov, li.bits, li.size});
  rec.out_shape = one.out_shape;
  rec.written.assign(one.written.begin(), one.written.end());
  rec.tolerant = one.tolerant;
  rec.leaf_paths = e.leaf_paths;
  rec.grad_outputs = one.grads.outputs;
  rec.grad_ends = one.grads.ends;
  return rec;
}

/// What save() writes, taken under the cache's mutex: the section and its recordings, oldest
/// first (so that a load recreates the same order of recordings and entries), and per record
/// the cores of the frozen backwards made for it (their recordings go with it).
struct SaveSnapshot {
  format::FreezeSection section;
  std::vector<std::shared_ptr<Held>> held;
  std::vector<std::vector<std::shared_ptr<FreezeCore>>> backwards;
};

SaveSnapshot snapshot_for_save(const FreezeCore::Impl& m) {
  std::vector<std::pair<std::shared_ptr<Held>, const Entry*>> all;
  for (auto& [h, list] : m.entries)
    for (auto& e : list)
      for (auto& one : e->held)
        all.emplace_back(one, e.get());
  std::sort(all.begin(), all.end(),
            [](const auto& a, const auto& b) { return a.first->created < b.first->created; });
  SaveSnapshot s;
  s.section.version = m.options.version;
  s.section.name = m.options.name;
  for (size_t k = 0; k < all.size(); ++k) {
    Held& one = *all[k].first;
    s.section.records.push_back(to_record(one, *all[k].second, uint32_t(k)));
    s.held.push_back(all[k].first);
    std::vector<std::shared_ptr<FreezeCore>>& cores = s.backwards.emplace_back();
    std::lock_guard lock(one.backward_mutex);
    for (const auto& [types, cache] : one.backwards)
      if (cache.core)
        cores.push_back(cache.core);
  }
  for (const auto& [hash, name] : m.struct_names)
    s.section.struct_names.push_back({hash, name});
  std::vector<std::pair<uint64_t, std::vector<uint32_t>>> opaque(m.opaque.begin(), m.opaque.end());
  std::sort(opaque.begin(), opaque.end());
  for (auto& [hash, ordinals] : opaque)
    s.section.opaque.push_back({hash, std::move(ordinals)});
  return s;
}

/// The recordings a file holds, each with its label (empty: none).
struct FileRecordings {
  std::vector<const rec::RecordingData*> data;
  std::vector<std::string> labels;

  void add(const Held& one, const std::string& label) {
    data.push_back(recording_state(one.recording)->data.get());
    labels.push_back(label);
  }
};

}  // namespace

void FreezeCore::save(const std::string& path) const {
  Impl& m = *impl_;
  SaveSnapshot s;
  {
    std::lock_guard lock(m.mutex);
    s = snapshot_for_save(m);
  }
  if (s.held.empty())
    throw FreezeError(m.prefix() + "save('" + path + "'): it holds no recordings yet");
  FileRecordings file;
  for (const auto& one : s.held)
    file.add(*one, "");
  // Each record's backward: the recordings its frozen backwards held (one per type of call
  // site, usually one), after the function's own, labelled with the backward's name.
  for (size_t k = 0; k < s.backwards.size(); ++k) {
    auto backward = std::make_shared<format::FreezeSection>();
    for (const std::shared_ptr<FreezeCore>& core : s.backwards[k]) {
      Impl& b = *core->impl_;
      SaveSnapshot inner;
      {
        std::lock_guard lock(b.mutex);
        inner = snapshot_for_save(b);
      }
      backward->name = inner.section.name;
      for (size_t r = 0; r < inner.held.size(); ++r) {
        format::FreezeRecord& rec = inner.section.records[r];
        rec.recording = static_cast<uint32_t>(file.data.size());
        file.add(*inner.held[r], inner.section.name);
        backward->records.push_back(std::move(rec));
      }
      for (format::OpaqueSet& set : inner.section.opaque)
        backward->opaque.push_back(std::move(set));
      for (format::StructName& n : inner.section.struct_names)
        backward->struct_names.push_back(std::move(n));
    }
    if (!backward->records.empty())
      s.section.records[k].backward = std::move(backward);
  }
  format::WriteOptions options;
  options.labels = std::move(file.labels);
  options.extra.push_back({format::kSectionFreeze, format::kSectionOptional, format::kFileLevel, 1,
                           format::encode_freeze_section(s.section)});
  std::vector<std::byte> bytes = format::write(file.data, options);
  write_file_atomic(path, bytes, /*durable=*/true);
  logging::format().info("{}saved {} recording(s) to '{}' ({} bytes)", m.prefix(), file.data.size(),
                         path, bytes.size());
}

namespace {

/// The freeze section of a parsed file; FormatError where it has none.
const format::RawSection& freeze_section_of(const format::ParsedFile& parsed,
                                            const std::string& path) {
  for (const format::RawSection& s : parsed.skipped)
    if (s.type == format::kSectionFreeze && s.recording == format::kFileLevel)
      return s;
  throw FormatError(path +
                    ": holds no freeze data: it was not written by a frozen "
                    "function's save() (Recording::load reads its recordings)");
}

/// The result shape's arrays are the recording's outputs, in order: of their element types.
void check_output_types(const format::FreezeRecord& rec, const rec::RecordingData& d,
                        const std::string& path) {
  std::vector<ScalarType> types;
  auto collect = [&](auto& self, const format::ShapeNode& n) -> void {
    if (n.token == format::ShapeToken::Array)
      types.push_back(n.type);
    for (const format::ShapeNode& c : n.children)
      self(self, c);
  };
  for (const format::ShapeNode& n : format::decode_shape(rec.out_shape, false, path))
    collect(collect, n);
  // Then the gradients: of their arrays' types.
  if (!rec.grad_ends.empty()) {
    std::vector<ScalarType> grads;
    for (size_t k = 0; k < rec.grad_outputs.size() && k < types.size(); ++k)
      if (rec.grad_outputs[k] == static_cast<uint32_t>(format::GradOutput::NewLeafGradient))
        grads.push_back(types[k]);
    format::DecodedKey key = format::decode_key(rec.key, rec.shape_bytes, 3, path);
    for (size_t j = 0; j < key.grads.size() && j < rec.grad_ends.size(); ++j)
      if (rec.grad_ends[j] == static_cast<uint8_t>(format::GradEnd::Gradient))
        grads.push_back(rec.infos[key.grads[j].leaf].type);
    types.insert(types.end(), grads.begin(), grads.end());
  }
  if (types.size() != d.outputs.size())
    throw FormatError(path + ": freeze data: recording " + std::to_string(rec.recording) +
                      " returns " + std::to_string(d.outputs.size()) +
                      " arrays, its result shape and gradients name " +
                      std::to_string(types.size()));
  for (size_t i = 0; i < types.size() && i < d.outputs.size(); ++i)
    if (ScalarType t = d.slots[d.outputs[i].slot].type; t != types[i])
      throw FormatError(path + ": freeze data: the result shape of recording " +
                        std::to_string(rec.recording) + " holds an array of " +
                        to_string(types[i]) + " as output " + std::to_string(i) +
                        ", the recording's output " + std::to_string(i) + " is " + to_string(t));
}

/// One recording of the file, ready for the cache.
struct Loaded {
  std::vector<uint8_t> key;
  size_t shape_bytes;
  std::vector<LeafInfo> infos;
  std::vector<std::string> leaf_paths;
  std::shared_ptr<Held> held;
};

/// What the section's records read from: the file's recordings and its path.
struct Source {
  const std::shared_ptr<const std::vector<rec::ValidatedRecording>>& recordings;
  const std::string& path;
};

Loaded to_loaded(format::FreezeRecord& rec, const Source& from, const std::string& context) {
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
  auto state = std::make_shared<RecordingState>((*from.recordings)[rec.recording]);
  held->recording = Recording(std::move(state));
  held->out_shape = std::move(rec.out_shape);
  held->written.assign(rec.written.begin(), rec.written.end());
  held->tolerant = rec.tolerant;
  held->grads.outputs = std::move(rec.grad_outputs);
  held->grads.ends = std::move(rec.grad_ends);
  held->n_regular = held->recording.n_outputs() -
                    format::count_grad_outputs(held->grads.outputs, held->grads.ends);
  held->collective = has_collectives(*recording_state(held->recording)->data);
  held->context = context;
  if (rec.backward)
    held->loaded_backward = std::make_shared<const LoadedBackward>(
        LoadedBackward{std::move(rec.backward), from.recordings, from.path});
  one.held = std::move(held);
  return one;
}

/// The file's recordings, but those of layout 1 keyed on literals: layout 1 keyed a literal by
/// a size that the tracer did not always know (a size taken from another array was ~0,
/// whatever it was), so such a key cannot be trusted to match only the calls it fits. Their
/// calls record anew (logged).
std::vector<Loaded> loadable(format::FreezeSection& data, const Source& from,
                             const std::string& prefix) {
  const std::string& path = from.path;
  std::vector<Loaded> loaded;
  size_t dropped = 0;
  for (format::FreezeRecord& rec : data.records) {
    bool literal = std::any_of(rec.infos.begin(), rec.infos.end(),
                               [](const format::FreezeLeafInfo& li) { return li.literal; });
    if (data.layout == 1 && literal)
      ++dropped;
    else
      loaded.push_back(to_loaded(rec, from, prefix + "the recording loaded from '" + path + "': "));
  }
  if (dropped)
    logging::format().info(
        "{}'{}' has freeze layout 1: {} of its {} recording(s) were keyed on literal arguments "
        "with sizes layout 1 did not record reliably; they are not loaded, and those calls "
        "record anew",
        prefix, path, dropped, data.records.size());
  return loaded;
}

/// check_output_types for every record, a backward's included.
void check_all_output_types(const format::FreezeSection& s,
                            const std::vector<rec::ValidatedRecording>& recordings,
                            const std::string& path) {
  for (const format::FreezeRecord& rec : s.records) {
    check_output_types(rec, *recordings[rec.recording], path);
    if (rec.backward)
      check_all_output_types(*rec.backward, recordings, path);
  }
}

/// Adds what a section read from `path` holds to the cache.
void add_loaded(FreezeCore::Impl& m, std::vector<Loaded>& loaded, format::FreezeSection& data,
                const std::string& path) {
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
  for (format::OpaqueSet& set : data.opaque)
    m.add_opaque(set.shape_hash, set.ordinals);
  m.loaded_from = path;
  m.epoch++;
  m.evict_locked();
}

}  // namespace

void FreezeCore::load(const std::string& path) {
  Impl& m = *impl_;
  format::ParsedFile parsed = format::parse_file(path);
  const format::RawSection& section = freeze_section_of(parsed, path);
  std::vector<size_t> n_outputs;
  for (const auto& d : parsed.recordings)
    n_outputs.push_back(d->outputs.size());
  format::FreezeSection data = format::decode_freeze_section(section.bytes, n_outputs, path);
  auto recordings =
      std::make_shared<const std::vector<rec::ValidatedRecording>>(std::move(parsed.recordings));
  check_all_output_types(data, *recordings, path);
  if (data.version != m.options.version)
    throw FreezeError(m.prefix() + "load('" + path + "'): the file was saved with version '" +
                      data.version + "', this function has FreezeOptions::version '" +
                      m.options.version + "'");
  std::vector<Loaded> loaded = loadable(data, Source{recordings, path}, m.prefix());
  add_loaded(m, loaded, data, path);
  logging::format().info("{}loaded {} recording(s) from '{}' (saved by '{}')", m.prefix(),
                         loaded.size(), path, data.name);
}

void FreezeCore::adopt(const LoadedBackward& from) {
  Impl& m = *impl_;
  format::FreezeSection data = *from.section;  // the loaded records take their parts
  std::vector<Loaded> loaded = loadable(data, Source{from.recordings, from.path}, m.prefix());
  add_loaded(m, loaded, data, from.path);
  logging::format().debug("{}took {} recording(s) from '{}'", m.prefix(), loaded.size(), from.path);
}

}  // namespace ff::detail
