// The recording file reader: the one trust point for recordings from outside. Loading is
// validation: the header and section table are checked against the file's size, every item
// field against its range (enums, booleans, reserved zeros, blob references), every kernel
// through KernelIR::load (known valid from then on) and its stored hash, and then each
// recording through ValidatedRecording::try_check, whose ValidationIssue (table, index, what)
// becomes an ff::FormatError located at that item's section and byte offset. What loads is a
// ValidatedRecording, as trustworthy as a recording made in this process: nothing downstream
// (the replay plan, the backends) validates it or its kernels again.
#include "recorder/format_reader.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <variant>

#include "backend/ir/ir_analysis.h"
#include "common/file_io.h"
#include "common/hash.h"
#include "common/log.h"
#include "common/version.h"
#include "freezeframe/errors.h"

namespace ff::format {

const char* to_string(SectionType t) {
  switch (t) {
    case SectionType::Info:
      return "info";
    case SectionType::Strings:
      return "strings";
    case SectionType::Kernels:
      return "kernels";
    case SectionType::KernelCode:
      return "kernel_code";
    case SectionType::Slots:
      return "slots";
    case SectionType::Exprs:
      return "size_exprs";
    case SectionType::Ops:
      return "ops";
    case SectionType::Args:
      return "args";
    case SectionType::Accesses:
      return "accesses";
    case SectionType::Guards:
      return "guards";
    case SectionType::Constants:
      return "constants";
    case SectionType::ConstantData:
      return "constant_data";
    case SectionType::Inputs:
      return "inputs";
    case SectionType::Outputs:
      return "outputs";
    case SectionType::Passes:
      return "passes";
    case SectionType::RegionNames:
      return "region_names";
    case SectionType::Label:
      return "label";
  }
  if (static_cast<uint32_t>(t) == kSectionFreeze)
    return "freeze";
  return "unknown";
}

const char* to_string(ParseStage s) {
  switch (s) {
    case ParseStage::Header:
      return "header";
    case ParseStage::SectionTable:
      return "section table";
    case ParseStage::Kernels:
      return "kernels";
    case ParseStage::Tables:
      return "tables";
    case ParseStage::Validate:
      return "validate";
    case ParseStage::Done:
      return "done";
  }
  return "invalid-stage";
}

namespace {

using Bytes = std::span<const std::byte>;

/// Item size of each known section type in format 1.0 (blobs: 1).
uint32_t min_item_bytes(SectionType t) {
  switch (t) {
    case SectionType::Info:
      return sizeof(InfoItem);
    case SectionType::Kernels:
      return sizeof(KernelItem);
    case SectionType::Slots:
      return sizeof(SlotItem);
    case SectionType::Exprs:
      return sizeof(ExprItem);
    case SectionType::Ops:
      return sizeof(OpItem);
    case SectionType::Args:
      return sizeof(ArgItem);
    case SectionType::Accesses:
      return sizeof(AccessItem);
    case SectionType::Guards:
      return sizeof(GuardItem);
    case SectionType::Constants:
      return sizeof(ConstantItem);
    case SectionType::Inputs:
      return sizeof(InputItem);
    case SectionType::Outputs:
      return sizeof(OutputItem);
    case SectionType::Passes:
      return sizeof(PassItem);
    case SectionType::RegionNames:
      return sizeof(RegionNameItem);
    case SectionType::Label:
      return sizeof(LabelItem);
    default:
      return 1;
  }
}

bool is_blob(SectionType t) {
  return t == SectionType::Strings || t == SectionType::KernelCode ||
         t == SectionType::ConstantData;
}

bool is_known(uint32_t type) {
  return type >= 1 && type < kNumSectionTypes;
}

std::string version_string(uint16_t major, uint16_t minor) {
  return std::to_string(major) + "." + std::to_string(minor);
}

bool all_zero(const void* p, size_t n) {
  const auto* b = static_cast<const unsigned char*>(p);
  return std::all_of(b, b + n, [](unsigned char c) { return c == 0; });
}

class Reader {
 public:
  Reader(Bytes file, const ParseOptions& options) : file_(file), options_(options) {}

  ParsedFile run();

 private:
  struct Where {
    std::string what;     // "header", "section table entry 3", "section 'ops' of recording 0"
    uint64_t offset = 0;  // byte offset into the file
    bool has_offset = true;
  };

  [[noreturn]] void fail(const Where& w, const std::string& what) const {
    std::string msg = "recording file: " + w.what;
    if (w.has_offset)
      msg += " (byte " + std::to_string(w.offset) + ")";
    msg += ": " + what;
    // A newer minor version may add operations, opcodes or values this reader cannot know:
    // say so, with both versions, rather than leave "invalid opcode 41" alone.
    if (stage_ != ParseStage::Header && h_.version_major == kVersionMajor &&
        h_.version_minor > kVersionMinor)
      msg += " (the file is format " + version_string(h_.version_major, h_.version_minor) +
             ", newer than this reader's format " + version_string(kVersionMajor, kVersionMinor) +
             " (freezeframe " + library_version() +
             "): it may use what a later release added; read it with that release)";
    throw FormatError(msg);
  }

  void reach(ParseStage s) {
    stage_ = s;
    if (options_.reached)
      *options_.reached = s;
  }

  void header();
  void table();
  rec::ValidatedRecording recording(uint32_t r);

  /// The entry of section `t` of recording `r`, or null when the file has none (an empty
  /// table).
  const SectionEntry* find(uint32_t r, SectionType t) const {
    auto it = by_recording_[r].find(static_cast<uint32_t>(t));
    return it == by_recording_[r].end() ? nullptr : &table_[it->second];
  }

  Where item_where(uint32_t r, const SectionEntry& e, uint64_t i) const {
    return {"section '" + std::string(to_string(static_cast<SectionType>(e.type))) +
                "' of recording " + std::to_string(r) + ", item " + std::to_string(i),
            e.offset + i * e.item_bytes, true};
  }

  /// Calls f(index, item, where) for every item of section `t` of recording `r`. Items longer
  /// than Item (a newer minor version appended fields) are read up to sizeof(Item).
  template <class Item, class F>
  void each(uint32_t r, SectionType t, F&& f) const {
    const SectionEntry* e = find(r, t);
    if (!e)
      return;
    const std::byte* base = file_.data() + e->offset;
    for (uint64_t i = 0; i < e->n_items; ++i) {
      Item item;
      std::memcpy(&item, base + i * e->item_bytes, sizeof(Item));
      f(i, item, [&] { return item_where(r, *e, i); });
    }
  }

  uint64_t count(uint32_t r, SectionType t) const {
    const SectionEntry* e = find(r, t);
    return e ? e->n_items : 0;
  }

  Bytes blob(uint32_t r, SectionType t) const {
    const SectionEntry* e = find(r, t);
    return e ? file_.subspan(e->offset, e->n_bytes) : Bytes{};
  }

  /// Bytes [offset, offset + n) of blob `t`, or fail at `w`. Strings may be shared (the
  /// writer stores each once), so the bytes decoded from them are capped at a few times the
  /// file's size.
  template <class W>
  Bytes slice(uint32_t r, SectionType t, uint64_t offset, uint64_t n, const W& w,
              const char* what) {
    if (t == SectionType::Strings) {
      string_bytes_ += n;
      if (n > kMaxString || string_bytes_ > 4 * file_.size() + 4096)
        fail(w(), std::string(what) + " of " + std::to_string(n) +
                      " bytes: strings are too long (at most " + std::to_string(kMaxString) +
                      " bytes each, 4 times the file's size in all)");
    }
    Bytes b = blob(r, t);
    if (offset > b.size() || n > b.size() - offset)
      fail(w(), std::string(what) + " [" + std::to_string(offset) + ", +" + std::to_string(n) +
                    ") lies outside the " + std::to_string(b.size()) + "-byte '" + to_string(t) +
                    "' section");
    return b.subspan(offset, n);
  }

  [[noreturn]] void fail_validation(uint32_t r, const rec::ValidationIssue& issue) const;

  static constexpr uint64_t kMaxString = 65536;

  Bytes file_;
  const ParseOptions& options_;
  uint64_t string_bytes_ = 0;
  ParseStage stage_ = ParseStage::Header;
  FileHeader h_{};
  std::vector<SectionEntry> table_;
  std::vector<std::map<uint32_t, size_t>> by_recording_;  // type -> table index
  ParsedFile out_;
};

void Reader::header() {
  reach(ParseStage::Header);
  Where w{"header", 0, true};
  if (file_.size() < 8 || std::memcmp(file_.data(), kMagic, 4) != 0)
    fail(w, "not a recording file (no 'FFRC' magic in the first " +
                std::to_string(std::min<size_t>(file_.size(), 4)) + " bytes)");
  uint16_t major, minor;
  std::memcpy(&major, file_.data() + 4, 2);
  std::memcpy(&minor, file_.data() + 6, 2);
  out_.version_major = major;
  out_.version_minor = minor;
  if (major != kVersionMajor)
    fail({"header", 4, true},
         "file format version " + version_string(major, minor) +
             " cannot be read by this reader (format " +
             version_string(kVersionMajor, kVersionMinor) + ", freezeframe " + library_version() +
             ")" +
             (major > kVersionMajor ? ": the file was written by a newer release"
                                    : ": the file was written by an older release"));
  if (file_.size() < sizeof(FileHeader))
    fail(w, "the file has " + std::to_string(file_.size()) + " bytes, fewer than the " +
                std::to_string(sizeof(FileHeader)) + "-byte header");
  std::memcpy(&h_, file_.data(), sizeof h_);
  if (h_.header_bytes < sizeof(FileHeader) || h_.header_bytes > file_.size())
    fail({"header", 8, true}, "header size " + std::to_string(h_.header_bytes) +
                                  " is not between " + std::to_string(sizeof(FileHeader)) +
                                  " and the file's " + std::to_string(file_.size()) + " bytes");
  if (h_.file_bytes == 0)
    fail({"header", 16, true}, "the file is incomplete (file_bytes is 0: its writer stopped)");
  if (h_.file_bytes != file_.size())
    fail({"header", 16, true},
         "the header says the file has " + std::to_string(h_.file_bytes) + " bytes, it has " +
             std::to_string(file_.size()) +
             (file_.size() < h_.file_bytes ? " (truncated)" : " (trailing bytes)"));
  if (h_.checksum_algo != kChecksumXxh3_64)
    fail({"header", 36, true},
         "checksum algorithm " + std::to_string(h_.checksum_algo) + " is unknown (1 = XXH3-64)");
  if (h_.section_entry_bytes < sizeof(SectionEntry))
    fail({"header", 28, true}, "section table entries of " +
                                   std::to_string(h_.section_entry_bytes) + " bytes, fewer than " +
                                   std::to_string(sizeof(SectionEntry)));
  uint64_t table_bytes = uint64_t{h_.n_sections} * h_.section_entry_bytes;
  if (table_bytes > file_.size() - h_.header_bytes)
    fail({"header", 24, true},
         std::to_string(h_.n_sections) + " section table entries do not fit in the file");
  if (options_.verify_checksums) {
    std::vector<std::byte> head(file_.begin(), file_.begin() + h_.header_bytes + table_bytes);
    std::memset(head.data() + offsetof(FileHeader, header_checksum), 0, 8);
    uint64_t sum = hash64(head);
    if (sum != h_.header_checksum)
      fail({"header", 40, true},
           "header checksum mismatch: the header or section table is "
           "damaged");
  }
  if (h_.flags != 0)
    fail({"header", 12, true}, "flags are " + std::to_string(h_.flags) + ", not 0");
  if (h_.reserved0 != 0)
    fail({"header", 38, true}, "reserved field is " + std::to_string(h_.reserved0) + ", not 0");
  if (h_.n_recordings == 0)
    fail({"header", 32, true}, "the file holds no recording");
  if (h_.n_recordings > h_.n_sections)  // each has at least its info section
    fail({"header", 32, true}, std::to_string(h_.n_recordings) + " recordings but only " +
                                   std::to_string(h_.n_sections) + " sections");
  auto name = [&](const char* field, size_t n, uint64_t at, const char* what) {
    size_t len = strnlen(field, n);
    if (len == n || !all_zero(field + len, n - len))
      fail({"header", at, true}, std::string(what) + " is not a NUL-padded string");
    for (size_t i = 0; i < len; ++i)
      if (field[i] < 0x20 || field[i] > 0x7e)
        fail({"header", at + i, true}, std::string(what) + " has a non-printable character");
    return std::string(field, len);
  };
  out_.backend = name(h_.backend, sizeof h_.backend, 48, "backend name");
  out_.library_version = name(h_.library_version, sizeof h_.library_version, 80, "library version");
  out_.file_bytes = h_.file_bytes;
}

void Reader::table() {
  reach(ParseStage::SectionTable);
  uint64_t at = h_.header_bytes + uint64_t{h_.n_sections} * h_.section_entry_bytes;
  by_recording_.resize(h_.n_recordings);
  std::set<std::pair<uint32_t, uint32_t>> seen;  // (recording, type) of file-level/unknown
  for (uint32_t i = 0; i < h_.n_sections; ++i) {
    uint64_t entry_at = h_.header_bytes + uint64_t{i} * h_.section_entry_bytes;
    Where w{"section table entry " + std::to_string(i), entry_at, true};
    SectionEntry e;
    std::memcpy(&e, file_.data() + entry_at, sizeof e);
    auto type = static_cast<SectionType>(e.type);
    bool known = is_known(e.type);
    if (known)
      w.what += " ('" + std::string(to_string(type)) + "')";
    if (e.flags & ~kSectionOptional)
      fail(w, "flags " + std::to_string(e.flags) + " set bits other than 0 (optional)");
    if (e.recording != kFileLevel && e.recording >= h_.n_recordings)
      fail(w, "belongs to recording " + std::to_string(e.recording) + " of " +
                  std::to_string(h_.n_recordings));
    if (e.offset != at)
      fail(w, "starts at byte " + std::to_string(e.offset) + ", not at byte " + std::to_string(at) +
                  " where the previous section ends");
    if (e.item_bytes == 0)
      fail(w, "items of 0 bytes");
    if (e.n_items > (file_.size() - at) / e.item_bytes || e.n_items * e.item_bytes != e.n_bytes)
      fail(w, std::to_string(e.n_items) + " items of " + std::to_string(e.item_bytes) +
                  " bytes do not make its " + std::to_string(e.n_bytes) +
                  " bytes inside the file's remaining " + std::to_string(file_.size() - at));
    if (options_.verify_checksums && hash64(file_.subspan(e.offset, e.n_bytes)) != e.checksum)
      fail({w.what, e.offset, true}, "checksum mismatch: the section's bytes are damaged");
    at += e.n_bytes;
    out_.sections.push_back({e, known});
    table_.push_back(e);
    if (!known) {
      if (!(e.flags & kSectionOptional))
        fail(w, "is of type " + std::to_string(e.type) + ", which this reader (format " +
                    version_string(kVersionMajor, kVersionMinor) +
                    ") does not know, and is not optional (the file is format " +
                    version_string(h_.version_major, h_.version_minor) + ")");
      logging::format().debug("skipping optional section of unknown type {} ({} bytes)", e.type,
                              e.n_bytes);
      RawSection raw{e.type, e.flags, e.recording, e.item_bytes, {}};
      raw.bytes.assign(file_.begin() + e.offset, file_.begin() + e.offset + e.n_bytes);
      out_.skipped.push_back(std::move(raw));
      continue;
    }
    if (e.recording == kFileLevel)
      fail(w, "belongs to no recording, but a '" + std::string(to_string(type)) +
                  "' section is part of one");
    if (is_blob(type) ? e.item_bytes != 1 : e.item_bytes < min_item_bytes(type))
      fail(w, "items of " + std::to_string(e.item_bytes) + " bytes; format 1.0 has " +
                  std::to_string(min_item_bytes(type)) + (is_blob(type) ? "" : " or more"));
    if (!is_blob(type) && e.n_items >= rec::kNone)
      fail(w, std::to_string(e.n_items) + " items exceed 32-bit indices");
    if (!by_recording_[e.recording].emplace(e.type, i).second)
      fail(w, "repeats the '" + std::string(to_string(type)) + "' section of recording " +
                  std::to_string(e.recording));
  }
  if (at != file_.size())
    fail({"section table", at, true}, "the sections end at byte " + std::to_string(at) +
                                          ", the file at byte " + std::to_string(file_.size()));
  for (uint32_t r = 0; r < h_.n_recordings; ++r) {
    const SectionEntry* info = find(r, SectionType::Info);
    if (!info)
      fail({"recording " + std::to_string(r), 0, false}, "has no 'info' section");
    if (info->n_items != 1)
      fail({"section 'info' of recording " + std::to_string(r), info->offset, true},
           std::to_string(info->n_items) + " items, not 1");
  }
}

/// The section that holds the items of `table`.
std::optional<SectionType> section_of(rec::Table table) {
  switch (table) {
    case rec::Table::None:
      return std::nullopt;
    case rec::Table::Kernels:
      return SectionType::Kernels;
    case rec::Table::Slots:
      return SectionType::Slots;
    case rec::Table::Exprs:
      return SectionType::Exprs;
    case rec::Table::Ops:
      return SectionType::Ops;
    case rec::Table::Args:
      return SectionType::Args;
    case rec::Table::Accesses:
      return SectionType::Accesses;
    case rec::Table::Guards:
      return SectionType::Guards;
    case rec::Table::Inputs:
      return SectionType::Inputs;
    case rec::Table::Outputs:
      return SectionType::Outputs;
  }
  return std::nullopt;
}

// A validation problem is located at the item it names (its table and index): the error gives
// that item's section and byte offset, or the recording when the file holds no such item.
void Reader::fail_validation(uint32_t r, const rec::ValidationIssue& issue) const {
  if (std::optional<SectionType> type = section_of(issue.table)) {
    const SectionEntry* e = find(r, *type);
    if (e && issue.index < e->n_items)
      fail(item_where(r, *e, issue.index), issue.message());
  }
  fail({"recording " + std::to_string(r), 0, false}, issue.message());
}

rec::ValidatedRecording Reader::recording(uint32_t r) {
  auto d = std::make_unique<rec::RecordingData>();
  auto check_zero = [&](const void* p, size_t n, auto where, const char* field) {
    if (!all_zero(p, n))
      fail(where(), std::string(field) + " is not 0");
  };
  auto check_bool = [&](uint8_t v, auto where, const char* field) {
    if (v > 1)
      fail(where(), std::string(field) + " is " + std::to_string(v) + ", not 0 or 1");
  };
  auto check_type = [&](uint8_t t, auto where, const char* field) {
    if (!is_valid(static_cast<ScalarType>(t)))
      fail(where(), std::string(field) + " " + std::to_string(t) + " is not an element type");
  };

  each<InfoItem>(r, SectionType::Info, [&](uint64_t, const InfoItem& it, auto where) {
    if (it.flags & ~kInfoCapture)
      fail(where(), "flags " + std::to_string(it.flags) + " set unknown bits");
    check_zero(&it.reserved, sizeof it.reserved, where, "reserved field");
    d->is_capture = (it.flags & kInfoCapture) != 0;
    Bytes name =
        slice(r, SectionType::Strings, it.backend_offset, it.backend_bytes, where, "backend name");
    d->backend.assign(reinterpret_cast<const char*>(name.data()), name.size());
  });

  reach(ParseStage::Kernels);
  std::set<std::pair<uint64_t, uint64_t>> hashes;
  d->kernels.reserve(count(r, SectionType::Kernels));
  // Blob references are consecutive (item k starts where item k - 1 ended), so no byte is
  // decoded twice: a file cannot make the reader allocate more than a small multiple of itself.
  uint64_t code_at = 0;
  each<KernelItem>(r, SectionType::Kernels, [&](uint64_t k, const KernelItem& it, auto where) {
    if (it.code_offset != code_at)
      fail(where(), "kernel IR starts at byte " + std::to_string(it.code_offset) +
                        " of 'kernel_code', not at byte " + std::to_string(code_at) +
                        " where the previous kernel ends");
    Bytes code =
        slice(r, SectionType::KernelCode, it.code_offset, it.code_bytes, where, "kernel IR");
    code_at += it.code_bytes;
    // The IR carries its own version: a reader keeps a converter for every older IR version
    // of its major file version (docs/recording-format.md); 1 is the only one so far.
    if (code.size() >= 6) {
      uint16_t v;
      std::memcpy(&v, code.data() + 4, 2);
      if (v != kKernelIrVersion)
        fail(where(), "kernel " + std::to_string(k) + " has IR version " + std::to_string(v) +
                          "; this reader reads IR version " + std::to_string(kKernelIrVersion));
    }
    std::shared_ptr<const KernelIR> ir;
    try {
      ir = KernelIR::load(code);  // validated here, once: known valid from now on
    } catch (const FormatError& e) {
      fail(where(), "kernel " + std::to_string(k) + ": " + e.what());
    }
    if (ir->hash.lo != it.hash_lo || ir->hash.hi != it.hash_hi)
      fail(where(), "kernel " + std::to_string(k) + " is stored with hash " +
                        Hash128{it.hash_lo, it.hash_hi}.to_hex() + " but its IR hashes to " +
                        ir->hash.to_hex());
    if (!hashes.emplace(it.hash_lo, it.hash_hi).second)
      fail(where(), "kernel " + std::to_string(k) + " repeats an earlier kernel (hash " +
                        ir->hash.to_hex() + ")");
    d->kernels.push_back(std::move(ir));
  });

  if (code_at != blob(r, SectionType::KernelCode).size())
    fail({"section 'kernel_code' of recording " + std::to_string(r), 0, false},
         "holds " + std::to_string(blob(r, SectionType::KernelCode).size()) +
             " bytes, the kernels use " + std::to_string(code_at));

  reach(ParseStage::Tables);
  d->slots.reserve(count(r, SectionType::Slots));
  each<SlotItem>(r, SectionType::Slots, [&](uint64_t, const SlotItem& it, auto where) {
    check_type(it.type, where, "element type");
    if (it.origin > static_cast<uint8_t>(rec::SlotOrigin::External))
      fail(where(), "origin " + std::to_string(it.origin) + " is unknown");
    check_zero(&it.reserved0, sizeof it.reserved0, where, "reserved field");
    check_zero(&it.reserved1, sizeof it.reserved1, where, "reserved field");
    d->slots.push_back(rec::Slot{static_cast<ScalarType>(it.type),
                                 static_cast<rec::SlotOrigin>(it.origin), it.origin_index,
                                 it.recorded_size, it.size_expr});
  });
  d->exprs.reserve(count(r, SectionType::Exprs));
  each<ExprItem>(r, SectionType::Exprs, [&](uint64_t, const ExprItem& it, auto where) {
    if (it.op > static_cast<uint8_t>(SizeOp::Ranks))
      fail(where(), "size operator " + std::to_string(it.op) + " is unknown");
    check_zero(it.reserved, sizeof it.reserved, where, "reserved field");
    d->exprs.push_back(
        rec::ExprNode{static_cast<SizeOp>(it.op), it.value, it.slot, it.lhs, it.rhs});
  });
  d->ops.reserve(count(r, SectionType::Ops));
  each<OpItem>(r, SectionType::Ops, [&](uint64_t, const OpItem& it, auto where) {
    if (it.code >= rec::kNumOpCodes)
      fail(where(), "op code " + std::to_string(it.code) + " is unknown");
    auto code = static_cast<rec::OpCode>(it.code);
    check_type(it.type, where, "element type");
    uint8_t max_sub = code == rec::OpCode::Copy         ? 2
                      : code == rec::OpCode::Reduce     ? 5
                      : code == rec::OpCode::Collective ? 3
                                                        : 0;
    if (it.sub > max_sub)
      fail(where(), std::string(code == rec::OpCode::Copy         ? "copy kind "
                                : code == rec::OpCode::Reduce     ? "reduction "
                                : code == rec::OpCode::Collective ? "collective kind "
                                                                  : "sub-code ") +
                        std::to_string(it.sub) + " is out of range for " + rec::to_string(code));
    // A collective's flag: an all_reduce's ReduceOp (0-5) or a sendrecv's peer modes (0-10).
    uint8_t max_flag = code == rec::OpCode::PrefixSum    ? 1
                       : code == rec::OpCode::Collective ? 10
                                                         : 0;
    if (it.flag > max_flag)
      fail(where(),
           "flag " + std::to_string(it.flag) + " is out of range for " + rec::to_string(code));
    check_zero(&it.reserved, sizeof it.reserved, where, "reserved field");
    rec::Op op;
    op.code = code;
    op.sub = it.sub;
    op.type = static_cast<ScalarType>(it.type);
    op.flag = it.flag;
    op.dst = it.dst;
    op.src = it.src;
    op.dst_offset = it.dst_offset;
    op.src_offset = it.src_offset;
    op.size_expr = it.size_expr;
    op.kernel = it.kernel;
    op.arg_begin = it.arg_begin;
    op.arg_end = it.arg_end;
    op.constant = it.constant;
    op.value = it.value;
    op.elem_size = it.elem_size;
    op.access_begin = it.access_begin;
    op.access_end = it.access_end;
    d->ops.push_back(op);
  });
  d->args.reserve(count(r, SectionType::Args));
  each<ArgItem>(r, SectionType::Args, [&](uint64_t, const ArgItem& it, auto where) {
    check_bool(it.is_buffer, where, "is_buffer");
    check_zero(it.reserved0, sizeof it.reserved0, where, "reserved field");
    check_zero(&it.reserved1, sizeof it.reserved1, where, "reserved field");
    d->args.push_back(rec::LaunchArg{it.is_buffer != 0, it.slot, it.offset, it.size_expr, it.bits});
  });
  d->accesses.reserve(count(r, SectionType::Accesses));
  each<AccessItem>(r, SectionType::Accesses, [&](uint64_t, const AccessItem& it, auto where) {
    check_bool(it.write, where, "write");
    check_zero(it.reserved, sizeof it.reserved, where, "reserved field");
    d->accesses.push_back(rec::Access{it.slot, it.write != 0});
  });
  d->guards.reserve(count(r, SectionType::Guards));
  each<GuardItem>(r, SectionType::Guards, [&](uint64_t, const GuardItem& it, auto where) {
    if (it.cmp > static_cast<uint8_t>(SizeCmp::Ge))
      fail(where(), "comparison " + std::to_string(it.cmp) + " is unknown");
    check_bool(it.outcome, where, "outcome");
    check_zero(&it.reserved, sizeof it.reserved, where, "reserved field");
    Bytes what =
        slice(r, SectionType::Strings, it.what_offset, it.what_bytes, where, "description");
    rec::Guard g;
    g.cmp = static_cast<SizeCmp>(it.cmp);
    g.lhs = it.lhs;
    g.rhs = it.rhs;
    g.outcome = it.outcome != 0;
    g.after_op = it.after_op;
    g.lhs_value = it.lhs_value;
    g.rhs_value = it.rhs_value;
    g.what.assign(reinterpret_cast<const char*>(what.data()), what.size());
    d->guards.push_back(std::move(g));
  });
  d->constants.reserve(count(r, SectionType::Constants));
  uint64_t data_at = 0;
  each<ConstantItem>(r, SectionType::Constants, [&](uint64_t, const ConstantItem& it, auto where) {
    if (it.data_offset != data_at)
      fail(where(), "constant data starts at byte " + std::to_string(it.data_offset) +
                        ", not at byte " + std::to_string(data_at) +
                        " where the previous constant ends");
    Bytes data =
        slice(r, SectionType::ConstantData, it.data_offset, it.data_bytes, where, "constant data");
    data_at += it.data_bytes;
    d->constants.emplace_back(data.begin(), data.end());
  });
  if (data_at != blob(r, SectionType::ConstantData).size())
    fail({"section 'constant_data' of recording " + std::to_string(r), 0, false},
         "holds " + std::to_string(blob(r, SectionType::ConstantData).size()) +
             " bytes, the constants use " + std::to_string(data_at));
  d->inputs.reserve(count(r, SectionType::Inputs));
  each<InputItem>(r, SectionType::Inputs,
                  [&](uint64_t, const InputItem& it, auto) { d->inputs.push_back(it.slot); });
  d->outputs.reserve(count(r, SectionType::Outputs));
  each<OutputItem>(r, SectionType::Outputs, [&](uint64_t, const OutputItem& it, auto where) {
    check_zero(&it.reserved, sizeof it.reserved, where, "reserved field");
    d->outputs.push_back(rec::RecordingData::Output{it.slot});
  });
  each<PassItem>(r, SectionType::Passes, [&](uint64_t, const PassItem& it, auto where) {
    auto name = slice(r, SectionType::Strings, it.name_offset, it.name_bytes, where, "pass name");
    d->passes.push_back({std::string(reinterpret_cast<const char*>(name.data()), name.size()),
                         it.ops_before, it.ops_after, it.launches_before, it.launches_after,
                         it.allocs_before, it.allocs_after, it.guards_before, it.guards_after});
  });
  // Region names, in increasing (kernel, region) order; the validation checks each kernel's
  // region count.
  uint64_t last_name = 0;
  each<RegionNameItem>(
      r, SectionType::RegionNames, [&](uint64_t, const RegionNameItem& it, auto where) {
        uint64_t at = (uint64_t{it.kernel} << 32 | it.region) + 1;
        if (at <= last_name)
          fail(where(), "is not after the previous region name (kernel " +
                            std::to_string(it.kernel) + ", region " + std::to_string(it.region) +
                            ")");
        last_name = at;
        if (it.kernel >= d->kernels.size())
          fail(where(), "names a region of kernel " + std::to_string(it.kernel) + " of " +
                            std::to_string(d->kernels.size()));
        size_t regions = count_regions(*d->kernels[it.kernel]);
        if (it.region >= regions)
          fail(where(), "names region " + std::to_string(it.region) + " of kernel " +
                            std::to_string(it.kernel) + ", which has " + std::to_string(regions));
        if (it.name_bytes == 0)
          fail(where(), "has an empty name");
        auto name =
            slice(r, SectionType::Strings, it.name_offset, it.name_bytes, where, "region name");
        if (d->region_names.size() <= it.kernel)
          d->region_names.resize(it.kernel + 1);
        RegionNames& names = d->region_names[it.kernel];
        names.resize(regions);
        names[it.region].assign(reinterpret_cast<const char*>(name.data()), name.size());
      });

  if (uint64_t n = count(r, SectionType::Label); n > 1)
    fail({"section 'label' of recording " + std::to_string(r), 0, false},
         "holds " + std::to_string(n) + " labels, a recording has one at most");
  each<LabelItem>(r, SectionType::Label, [&](uint64_t, const LabelItem& it, auto where) {
    if (it.name_bytes == 0)
      fail(where(), "is empty");
    auto name = slice(r, SectionType::Strings, it.name_offset, it.name_bytes, where, "label");
    d->label.assign(reinterpret_cast<const char*>(name.data()), name.size());
  });

  reach(ParseStage::Validate);
  auto checked = rec::ValidatedRecording::try_check(std::move(*d));
  if (const auto* issue = std::get_if<rec::ValidationIssue>(&checked))
    fail_validation(r, *issue);
  return std::get<rec::ValidatedRecording>(std::move(checked));
}

ParsedFile Reader::run() {
  header();
  table();
  for (uint32_t r = 0; r < h_.n_recordings; ++r)
    out_.recordings.push_back(recording(r));
  reach(ParseStage::Done);
  return std::move(out_);
}

}  // namespace

ParsedFile parse(std::span<const std::byte> bytes, const ParseOptions& options) {
  Reader reader(bytes, options);
  return reader.run();
}

ParsedFile parse_file(const std::string& path, const ParseOptions& options) {
  MappedFile bytes(path);
  try {
    return parse(bytes.bytes(), options);
  } catch (const FormatError& e) {
    throw FormatError(path + ": " + e.what());
  }
}

}  // namespace ff::format
