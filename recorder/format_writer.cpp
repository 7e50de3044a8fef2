// The recording file writer: each recording becomes one group of sections (format.h), written
// in a fixed order with deduplicated strings, so equal recordings give equal bytes.
#include "recorder/format_writer.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <string_view>

#include "common/hash.h"
#include "common/version.h"
#include "freezeframe/errors.h"

namespace ff::format {
namespace {

using Bytes = std::vector<std::byte>;

struct Section {
  SectionType type;
  uint32_t flags = 0, recording = 0, item_bytes = 1;
  Bytes bytes;
};

template <class Item>
void append(Bytes& out, const Item& item) {
  size_t at = out.size();
  out.resize(at + sizeof(Item));
  std::memcpy(out.data() + at, &item, sizeof(Item));
}

uint32_t index32(size_t n, const char* what) {
  if (n >= rec::kNone)
    throw Error(std::string("recording file: too many ") + what + " (" + std::to_string(n) +
                ") for 32-bit indices");
  return static_cast<uint32_t>(n);
}

/// A blob of strings, each stored once.
class Strings {
 public:
  std::pair<uint32_t, uint32_t> add(std::string_view s) {
    auto it = index_.find(std::string(s));
    if (it != index_.end())
      return {it->second, static_cast<uint32_t>(s.size())};
    uint32_t at = index32(bytes_.size(), "string bytes");
    index32(bytes_.size() + s.size(), "string bytes");
    const auto* p = reinterpret_cast<const std::byte*>(s.data());
    bytes_.insert(bytes_.end(), p, p + s.size());
    index_.emplace(std::string(s), at);
    return {at, static_cast<uint32_t>(s.size())};
  }

  Bytes take() { return std::move(bytes_); }

 private:
  Bytes bytes_;
  std::map<std::string, uint32_t> index_;
};

void encode(const rec::RecordingData& d, uint32_t r, const std::string& label,
            std::vector<Section>& out) {
  auto section = [&](SectionType t, uint32_t item_bytes) -> Bytes& {
    out.push_back(Section{t, 0, r, item_bytes, {}});
    return out.back().bytes;
  };
  // Sizes of every table fit 32-bit indices (kNone is reserved).
  index32(d.slots.size(), "slots");
  index32(d.exprs.size(), "size expressions");
  index32(d.ops.size(), "ops");
  index32(d.args.size(), "launch arguments");
  index32(d.accesses.size(), "accesses");
  index32(d.kernels.size(), "kernels");
  index32(d.constants.size(), "constants");

  Strings strings;
  if (d.backend.size() > 31)
    throw Error("recording file: backend name '" + d.backend + "' is longer than 31 characters");
  InfoItem info{};
  info.flags = d.is_capture ? kInfoCapture : 0;
  std::tie(info.backend_offset, info.backend_bytes) = strings.add(d.backend);
  append(section(SectionType::Info, sizeof(InfoItem)), info);
  size_t strings_at = out.size();
  section(SectionType::Strings, 1);  // filled in last

  Bytes& kernels = section(SectionType::Kernels, sizeof(KernelItem));
  Bytes code;
  for (size_t k = 0; k < d.kernels.size(); ++k) {
    if (!d.kernels[k])
      throw Error("recording file: kernel " + std::to_string(k) + " is missing");
    Bytes ir = d.kernels[k]->serialize();
    Hash128 h = hash128(ir);
    if (h != d.kernels[k]->hash)
      throw Error("recording file: kernel " + std::to_string(k) + " has hash " +
                  d.kernels[k]->hash.to_hex() + " but its IR hashes to " + h.to_hex());
    append(kernels, KernelItem{h.lo, h.hi, code.size(), ir.size()});
    code.insert(code.end(), ir.begin(), ir.end());
  }
  section(SectionType::KernelCode, 1) = std::move(code);

  Bytes& slots = section(SectionType::Slots, sizeof(SlotItem));
  for (const rec::Slot& s : d.slots) {
    SlotItem it{};
    it.type = static_cast<uint8_t>(s.type);
    it.origin = static_cast<uint8_t>(s.origin);
    it.origin_index = s.origin_index;
    it.recorded_size = s.recorded_size;
    it.size_expr = s.size_expr;
    append(slots, it);
  }
  Bytes& exprs = section(SectionType::Exprs, sizeof(ExprItem));
  for (const rec::ExprNode& n : d.exprs) {
    ExprItem it{};
    it.op = static_cast<uint8_t>(n.op);
    it.slot = n.slot;
    it.lhs = n.lhs;
    it.rhs = n.rhs;
    it.value = n.value;
    append(exprs, it);
  }
  Bytes& ops = section(SectionType::Ops, sizeof(OpItem));
  for (const rec::Op& op : d.ops) {
    OpItem it{};
    it.code = static_cast<uint8_t>(op.code);
    it.sub = op.sub;
    it.type = static_cast<uint8_t>(op.type);
    it.flag = op.flag;
    it.dst = op.dst;
    it.src = op.src;
    it.size_expr = op.size_expr;
    it.dst_offset = op.dst_offset;
    it.src_offset = op.src_offset;
    it.kernel = op.kernel;
    it.arg_begin = op.arg_begin;
    it.arg_end = op.arg_end;
    it.constant = op.constant;
    it.value = op.value;
    it.elem_size = op.elem_size;
    it.access_begin = op.access_begin;
    it.access_end = op.access_end;
    append(ops, it);
  }
  Bytes& args = section(SectionType::Args, sizeof(ArgItem));
  for (const rec::LaunchArg& a : d.args) {
    ArgItem it{};
    it.is_buffer = a.is_buffer ? 1 : 0;
    it.slot = a.slot;
    it.offset = a.offset;
    it.size_expr = a.size_expr;
    it.bits = a.bits;
    append(args, it);
  }
  Bytes& accesses = section(SectionType::Accesses, sizeof(AccessItem));
  for (const rec::Access& a : d.accesses) {
    AccessItem it{};
    it.slot = a.slot;
    it.write = a.write ? 1 : 0;
    append(accesses, it);
  }
  Bytes& guards = section(SectionType::Guards, sizeof(GuardItem));
  for (const rec::Guard& g : d.guards) {
    GuardItem it{};
    it.cmp = static_cast<uint8_t>(g.cmp);
    it.outcome = g.outcome ? 1 : 0;
    it.lhs = g.lhs;
    it.rhs = g.rhs;
    it.after_op = g.after_op;
    it.lhs_value = g.lhs_value;
    it.rhs_value = g.rhs_value;
    std::tie(it.what_offset, it.what_bytes) = strings.add(g.what);
    append(guards, it);
  }
  Bytes& constants = section(SectionType::Constants, sizeof(ConstantItem));
  Bytes data;
  for (const auto& c : d.constants) {
    append(constants, ConstantItem{data.size(), c.size()});
    data.insert(data.end(), c.begin(), c.end());
  }
  section(SectionType::ConstantData, 1) = std::move(data);
  Bytes& inputs = section(SectionType::Inputs, sizeof(InputItem));
  for (uint32_t s : d.inputs)
    append(inputs, InputItem{s});
  Bytes& outputs = section(SectionType::Outputs, sizeof(OutputItem));
  for (const auto& o : d.outputs)
    append(outputs, OutputItem{o.slot, 0});
  if (!d.passes.empty()) {
    Bytes& passes = section(SectionType::Passes, sizeof(PassItem));
    out.back().flags = kSectionOptional;
    for (const rec::PassStats& p : d.passes) {
      PassItem it{};
      std::tie(it.name_offset, it.name_bytes) = strings.add(p.name);
      it.ops_before = p.ops_before;
      it.ops_after = p.ops_after;
      it.launches_before = p.launches_before;
      it.launches_after = p.launches_after;
      it.allocs_before = p.allocs_before;
      it.allocs_after = p.allocs_after;
      it.guards_before = p.guards_before;
      it.guards_after = p.guards_after;
      append(passes, it);
    }
  }
  bool named = std::any_of(d.region_names.begin(), d.region_names.end(),
                           [](const RegionNames& n) { return !n.empty(); });
  if (named) {
    Bytes& names = section(SectionType::RegionNames, sizeof(RegionNameItem));
    out.back().flags = kSectionOptional;
    for (size_t k = 0; k < d.region_names.size(); ++k)
      for (size_t i = 0; i < d.region_names[k].size(); ++i) {
        if (d.region_names[k][i].empty())
          continue;
        RegionNameItem it{};
        it.kernel = static_cast<uint32_t>(k);
        it.region = static_cast<uint32_t>(i);
        std::tie(it.name_offset, it.name_bytes) = strings.add(d.region_names[k][i]);
        append(names, it);
      }
  }
  if (!label.empty()) {
    LabelItem it{};
    std::tie(it.name_offset, it.name_bytes) = strings.add(label);
    append(section(SectionType::Label, sizeof(LabelItem)), it);
    out.back().flags = kSectionOptional;
  }
  out[strings_at].bytes = strings.take();
}

void put_name(char* field, size_t n, const std::string& s, const char* what) {
  if (s.size() >= n)
    throw Error(std::string("recording file: ") + what + " '" + s + "' is longer than " +
                std::to_string(n - 1) + " characters");
  std::memset(field, 0, n);
  std::memcpy(field, s.data(), s.size());
}

}  // namespace

std::vector<std::byte> write(std::span<const rec::RecordingData* const> recordings,
                             const WriteOptions& options) {
  if (recordings.empty())
    throw Error("recording file: nothing to write (no recordings)");
  std::vector<Section> sections;
  for (size_t r = 0; r < recordings.size(); ++r)
    encode(*recordings[r], index32(r, "recordings"),
           r < options.labels.size() && !options.labels[r].empty() ? options.labels[r]
                                                                   : recordings[r]->label,
           sections);
  for (const ExtraSection& e : options.extra) {
    if (e.item_bytes == 0 || e.bytes.size() % e.item_bytes != 0)
      throw Error("recording file: extra section of type " + std::to_string(e.type) + " holds " +
                  std::to_string(e.bytes.size()) + " bytes, not a multiple of its item size " +
                  std::to_string(e.item_bytes));
    sections.push_back(
        Section{static_cast<SectionType>(e.type), e.flags, e.recording, e.item_bytes, e.bytes});
  }

  FileHeader h{};
  std::memcpy(h.magic, kMagic, 4);
  h.version_major = kVersionMajor;
  h.version_minor = options.version_minor;
  h.header_bytes = sizeof(FileHeader);
  h.n_sections = index32(sections.size(), "sections");
  h.section_entry_bytes = sizeof(SectionEntry);
  h.n_recordings = static_cast<uint32_t>(recordings.size());
  h.checksum_algo = kChecksumXxh3_64;
  put_name(h.backend, sizeof h.backend, recordings[0]->backend, "backend name");
  put_name(h.library_version, sizeof h.library_version,
           options.library_version.empty() ? library_version() : options.library_version,
           "library version");

  uint64_t table_end = sizeof(FileHeader) + uint64_t{sizeof(SectionEntry)} * sections.size();
  uint64_t total = table_end;
  for (const Section& s : sections)
    total += s.bytes.size();
  Bytes out(total);
  uint64_t at = table_end;
  for (size_t i = 0; i < sections.size(); ++i) {
    const Section& s = sections[i];
    SectionEntry e{};
    e.type = static_cast<uint32_t>(s.type);
    e.flags = s.flags;
    e.recording = s.recording;
    e.item_bytes = s.item_bytes;
    e.offset = at;
    e.n_bytes = s.bytes.size();
    e.n_items = s.bytes.size() / s.item_bytes;
    e.checksum = hash64(s.bytes);
    std::memcpy(out.data() + sizeof(FileHeader) + i * sizeof(SectionEntry), &e, sizeof e);
    if (!s.bytes.empty())
      std::memcpy(out.data() + at, s.bytes.data(), s.bytes.size());
    at += s.bytes.size();
  }
  // file_bytes last (a reader takes 0 for an unfinished file), then the checksum over both.
  h.file_bytes = total;
  std::memcpy(out.data(), &h, sizeof h);
  h.header_checksum = hash64(std::span<const std::byte>(out.data(), table_end));
  std::memcpy(out.data(), &h, sizeof h);
  return out;
}

std::vector<std::byte> write(const rec::RecordingData& recording, const WriteOptions& options) {
  const rec::RecordingData* one[] = {&recording};
  return write(std::span<const rec::RecordingData* const>(one), options);
}

}  // namespace ff::format
