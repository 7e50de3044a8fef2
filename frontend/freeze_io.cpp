// f.save / f.load: a frozen function's recordings in one recording file, with the freeze data
// (docs/recording-format.md, "The freeze section") in an optional file-level section.
//
// The freeze data is a little-endian byte string: a header (layout version, counts, the
// user's FreezeOptions::version and the function's name), one record per held recording (its
// index among the file's recordings, its key, the leaves' literal information, the result
// shape, the written arguments, whether verify compares within tolerance) and the opaque
// argument sets. Keys are stable across processes by construction: node tokens, element
// types, scalar bytes, struct name hashes (FNV-1a of the FF_STRUCT name), leaf ordinals and
// size-group numbers; no pointers or typeid names.
#include <algorithm>
#include <cstring>
#include <mutex>

#include "common/file_io.h"
#include "common/log.h"
#include "frontend/freeze_cache.h"
#include "frontend/recording_state.h"
#include "recorder/format_reader.h"
#include "recorder/format_writer.h"

namespace ff::detail {

namespace {

constexpr uint32_t kFreezeLayout = 1;

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

/// Reads the freeze data; every read is bounds-checked and a failure names what was read.
class Reader {
 public:
  Reader(std::span<const std::byte> b, std::string where) : b_(b), where_(std::move(where)) {}

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

  std::vector<uint8_t> blob(const char* what) {
    uint32_t n = u32(what);
    if (n > b_.size() - pos_)
      fail(std::string(what) + " of " + std::to_string(n) + " bytes runs past the end");
    std::vector<uint8_t> v(n);
    raw(v.data(), n, what);
    return v;
  }

  std::string str(const char* what) {
    std::vector<uint8_t> v = blob(what);
    return std::string(v.begin(), v.end());
  }

  bool at_end() const { return pos_ == b_.size(); }

  [[noreturn]] void fail(const std::string& what) const {
    throw FormatError(where_ + ": freeze data, byte " + std::to_string(pos_) + ": " + what);
  }

 private:
  void raw(void* out, size_t n, const char* what) {
    if (n > b_.size() - pos_)
      fail(std::string("the data ends inside ") + what);
    if (n)
      std::memcpy(out, b_.data() + pos_, n);
    pos_ += n;
  }

  std::span<const std::byte> b_;
  std::string where_;
  size_t pos_ = 0;
};

// Skips one node of a shape (ScanVisitor's encoding) at `pos`; false if it is malformed.
bool skip_node(const uint8_t* p, size_t n, size_t& pos, int depth) {
  if (pos >= n || depth > 256)
    return false;
  auto node = static_cast<Node>(p[pos++]);
  auto take = [&](size_t k) {
    if (k > n - pos)
      return false;
    pos += k;
    return true;
  };
  auto count = [&](uint64_t* c) {
    if (8 > n - pos)
      return false;
    std::memcpy(c, p + pos, 8);
    pos += 8;
    return true;
  };
  uint64_t c = 0;
  switch (node) {
    case Node::Array:
      return take(1);
    case Node::Scalar:
      return pos < n && take(1 + (p[pos] >> 2));
    case Node::String:
      return count(&c) && take(c);
    case Node::Struct:
      if (!count(&c) || !take(8))
        return false;
      break;
    case Node::Vector:
    case Node::StdArray:
    case Node::Tuple:
    case Node::Optional:
    case Node::Map:
      if (!count(&c))
        return false;
      break;
    default:
      return false;
  }
  if (c > n)
    return false;
  for (uint64_t i = 0; i < c; ++i) {
    if (node == Node::Map && !skip_node(p, n, pos, depth + 1))  // the entry's key
      return false;
    if (!skip_node(p, n, pos, depth + 1))
      return false;
  }
  return true;
}

std::string hex(uint64_t v) {
  char buf[20];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

}  // namespace

std::string argument_signature(const uint8_t* shape, size_t bytes) {
  std::string sig;
  size_t pos = 0;
  while (pos < bytes) {
    if (shape[pos++] != 0xA0 || pos >= bytes)
      return sig + (sig.empty() ? "" : ", ") + "(malformed)";
    if (!sig.empty())
      sig += ", ";
    size_t start = pos;
    auto node = static_cast<Node>(shape[pos]);
    switch (node) {
      case Node::Array:
        sig += std::string("array ") +
               (pos + 1 < bytes ? to_string(static_cast<ScalarType>(shape[pos + 1])) : "?");
        break;
      case Node::Scalar:
        sig += "value of " + std::to_string(pos + 1 < bytes ? shape[pos + 1] >> 2 : 0) + " bytes";
        break;
      case Node::String:
        sig += "string";
        break;
      case Node::Struct: {
        uint64_t name = 0;
        if (pos + 17 <= bytes)
          std::memcpy(&name, shape + pos + 9, 8);
        sig += "struct " + hex(name);
        break;
      }
      case Node::Vector:
        sig += "vector";
        break;
      case Node::StdArray:
        sig += "std::array";
        break;
      case Node::Tuple:
        sig += "tuple";
        break;
      case Node::Optional:
        sig += "optional";
        break;
      case Node::Map:
        sig += "map";
        break;
      default:
        sig += "(malformed)";
        return sig;
    }
    if (!skip_node(shape, bytes, pos, 0) || pos == start)
      return sig + " (malformed)";
  }
  return sig;
}

void FreezeCore::save(const std::string& path) const {
  Impl& m = *impl_;
  std::vector<std::shared_ptr<Held>> held;
  std::vector<const Entry*> owner;
  Writer w;
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

    w.u32(kFreezeLayout);
    w.u32(static_cast<uint32_t>(held.size()));
    w.u32(static_cast<uint32_t>(opaque.size()));
    w.str(m.options.version);
    w.str(m.options.name);
    std::vector<std::shared_ptr<Held>> sorted;
    for (size_t k = 0; k < order.size(); ++k) {
      const Held& one = *held[order[k]];
      const Entry& e = *owner[order[k]];
      w.u32(static_cast<uint32_t>(k));  // its recording in the file
      w.u32(static_cast<uint32_t>(e.shape_bytes));
      w.blob(e.key.data(), e.key.size());
      w.u32(static_cast<uint32_t>(e.infos.size()));
      for (const LeafInfo& li : e.infos) {
        w.u8(static_cast<uint8_t>(li.type));
        w.u8(li.literal ? 1 : 0);
        w.u8(li.size_has_prov ? 1 : 0);
        w.u64(li.bits);
        w.u64(li.size);
      }
      w.blob(one.out_shape.data(), one.out_shape.size());
      w.blob(one.written.data(), one.written.size());
      w.u8(one.tolerant ? 1 : 0);
      sorted.push_back(held[order[k]]);
    }
    held = std::move(sorted);
  }
  for (const auto& [hash, ordinals] : opaque) {
    w.u64(hash);
    w.u32(static_cast<uint32_t>(ordinals.size()));
    for (uint32_t i : ordinals)
      w.u32(i);
  }

  std::vector<const rec::RecordingData*> recordings;
  for (const auto& one : held)
    recordings.push_back(recording_state(one->recording)->data.get());
  format::WriteOptions options;
  options.extra.push_back(
      {format::kSectionFreeze, format::kSectionOptional, format::kFileLevel, 1, w.take()});
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
  Reader r(section->bytes, path);
  if (uint32_t layout = r.u32("the layout version"); layout != kFreezeLayout)
    r.fail("layout version " + std::to_string(layout) + " (this reader knows " +
           std::to_string(kFreezeLayout) + ")");
  uint32_t n_held = r.u32("the recording count");
  uint32_t n_opaque = r.u32("the opaque set count");
  std::string version = r.str("the version string");
  std::string saved_name = r.str("the function's name");
  if (version != m.options.version)
    throw FreezeError(m.prefix() + "load('" + path + "'): the file was saved with version '" +
                      version + "', this function has FreezeOptions::version '" +
                      m.options.version + "'");
  if (n_held != parsed.recordings.size())
    r.fail("it lists " + std::to_string(n_held) + " recordings, the file holds " +
           std::to_string(parsed.recordings.size()));

  struct Loaded {
    std::vector<uint8_t> key;
    size_t shape_bytes;
    std::vector<LeafInfo> infos;
    std::shared_ptr<Held> held;
  };

  std::vector<Loaded> loaded;
  std::vector<bool> used(n_held, false);
  for (uint32_t k = 0; k < n_held; ++k) {
    Loaded one;
    uint32_t index = r.u32("a recording index");
    if (index >= n_held || used[index])
      r.fail("recording index " + std::to_string(index) + " is out of range or used twice");
    used[index] = true;
    one.shape_bytes = r.u32("the shape length");
    one.key = r.blob("a key");
    if (one.shape_bytes > one.key.size())
      r.fail("a key's shape part is longer than the key");
    std::string sig = argument_signature(one.key.data(), one.shape_bytes);
    if (sig.find("malformed") != std::string::npos)
      r.fail("the key of recording " + std::to_string(index) + " has a malformed shape");
    uint32_t n_infos = r.u32("the leaf count");
    if (n_infos > section->bytes.size())
      r.fail("a leaf count of " + std::to_string(n_infos) + " is impossible here");
    for (uint32_t i = 0; i < n_infos; ++i) {
      LeafInfo li;
      uint8_t type = r.u8("a leaf's type");
      if (type > static_cast<uint8_t>(ScalarType::Float64))
        r.fail("leaf " + std::to_string(i) + " has element type " + std::to_string(type));
      li.type = static_cast<ScalarType>(type);
      uint8_t literal = r.u8("a leaf's literal flag");
      uint8_t prov = r.u8("a leaf's size flag");
      if (literal > 1 || prov > 1)
        r.fail("leaf " + std::to_string(i) + " has a flag other than 0 or 1");
      li.literal = literal;
      li.size_has_prov = prov;
      li.bits = r.u64("a leaf's literal bits");
      li.size = r.u64("a leaf's size");
      one.infos.push_back(li);
    }
    auto held = std::make_shared<Held>();
    auto state = std::make_shared<RecordingState>();
    state->data = parsed.recordings[index];
    held->recording = Recording(std::move(state));
    held->out_shape = r.blob("a result shape");
    std::vector<uint8_t> written = r.blob("the written arguments");
    for (uint8_t b : written)
      if (b > 1)
        r.fail("a written-argument flag other than 0 or 1");
    held->written.assign(written.begin(), written.end());
    uint8_t tolerant = r.u8("the tolerance flag");
    if (tolerant > 1)
      r.fail("a tolerance flag other than 0 or 1");
    held->tolerant = tolerant;
    held->context = m.prefix() + "the recording loaded from '" + path + "': ";
    one.held = std::move(held);
    loaded.push_back(std::move(one));
  }
  std::vector<std::pair<uint64_t, std::vector<uint32_t>>> opaque;
  for (uint32_t k = 0; k < n_opaque; ++k) {
    uint64_t hash = r.u64("an opaque set's shape hash");
    uint32_t n = r.u32("an opaque set's size");
    if (n > section->bytes.size())
      r.fail("an opaque set of " + std::to_string(n) + " leaves is impossible here");
    std::vector<uint32_t> ordinals;
    for (uint32_t i = 0; i < n; ++i)
      ordinals.push_back(r.u32("an opaque leaf ordinal"));
    opaque.emplace_back(hash, std::move(ordinals));
  }
  if (!r.at_end())
    r.fail("bytes follow the last opaque set");

  std::lock_guard lock(m.mutex);
  for (Loaded& one : loaded) {
    Hash128 h = hash128(std::as_bytes(std::span(one.key)));
    Entry* e = m.find(h, one.key);
    if (!e) {
      e = &m.add_entry(h, one.key, one.shape_bytes, std::move(one.infos));
      ++m.n_loaded_keys;
    }
    m.hold(*e, one.held);  // oldest first in the file: the newest ends first
  }
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
