// recorder-dump --json: the documented JSON form (docs/recording-format.md).
#include <optional>

#include "dump.h"
#include "dump_internal.h"
#include "recorder/size_eval.h"

namespace ff::dump {
namespace {

nlohmann::ordered_json expr_or_null(const rec::RecordingData& d, uint32_t e) {
  return e == rec::kNone ? nlohmann::ordered_json(nullptr)
                         : nlohmann::ordered_json(rec::expr_to_string(d, e));
}

nlohmann::ordered_json recording_json(const rec::RecordingData& d, size_t r, const Options& o) {
  using json = nlohmann::ordered_json;
  MemoryFigures m = memory_figures(d);
  uint64_t constant_bytes = 0;
  for (const auto& c : d.constants)
    constant_bytes += c.size();
  json j;
  j["index"] = r;
  j["backend"] = d.backend;
  j["label"] = d.label.empty() ? json(nullptr) : json(detail::printable(d.label));
  j["capture"] = d.is_capture;
  j["counts"] = {{"ops", d.ops.size()},
                 {"kernels", d.kernels.size()},
                 {"slots", d.slots.size()},
                 {"guards", d.guards.size()},
                 {"inputs", d.inputs.size()},
                 {"outputs", d.outputs.size()},
                 {"constants", d.constants.size()},
                 {"size_expr_nodes", d.exprs.size()},
                 {"launch_args", d.args.size()}};
  j["constant_bytes"] = constant_bytes;
  j["bytes_allocated"] = m.bytes_allocated;
  j["peak_bytes"] = m.peak_bytes;
  j["memory_exact"] = m.exact;

  // Buffer reuse (format 1.2): an Alloc whose src names a donor slot takes its buffer over.
  std::vector<uint32_t> reuses(d.slots.size(), rec::kNone), taken_by(d.slots.size(), rec::kNone);
  for (const rec::Op& op : d.ops)
    if (op.code == rec::OpCode::Alloc && op.src != rec::kNone && op.src < d.slots.size() &&
        op.dst < d.slots.size()) {
      reuses[op.dst] = op.src;
      taken_by[op.src] = op.dst;
    }
  auto slot_or_null = [](uint32_t s) { return s == rec::kNone ? json(nullptr) : json(s); };
  json slots = json::array();
  for (size_t i = 0; i < d.slots.size(); ++i) {
    const rec::Slot& s = d.slots[i];
    slots.push_back(
        {{"index", i},
         {"type", to_string(s.type)},
         {"origin", to_string(s.origin)},
         {"origin_index", s.origin_index == rec::kNone ? json(nullptr) : json(s.origin_index)},
         {"recorded_size", s.recorded_size},
         {"size", expr_or_null(d, s.size_expr)},
         {"reuses", slot_or_null(reuses[i])},
         {"buffer_taken_over_by", slot_or_null(taken_by[i])}});
  }
  j["slots"] = std::move(slots);

  json ops = json::array();
  std::vector<rec::SlotUse> uses;
  for (size_t i = 0; i < d.ops.size(); ++i) {
    const rec::Op& op = d.ops[i];
    json jo = {
        {"index", i}, {"op", rec::to_string(op.code)}, {"size", expr_or_null(d, op.size_expr)}};
    std::string value = detail::op_size_value(d, op);
    jo["recorded_size"] = value.empty() ? json(nullptr) : json(std::stoull(value));
    json accesses = json::array();
    if (op.code == rec::OpCode::Alloc || op.code == rec::OpCode::Release) {
      accesses.push_back(
          {{"slot", op.dst}, {"access", op.code == rec::OpCode::Alloc ? "alloc" : "release"}});
      if (op.code == rec::OpCode::Alloc && op.src != rec::kNone)  // the donor ends here
        accesses.push_back({{"slot", op.src}, {"access", "taken_over"}});
    } else {
      rec::op_uses(d, op, uses);
      for (const rec::SlotUse& u : uses)
        accesses.push_back({{"slot", u.slot},
                            {"access", u.read && u.write ? "readwrite"
                                       : u.read          ? "read"
                                                         : "write"}});
    }
    jo["slots"] = std::move(accesses);
    switch (op.code) {
      case rec::OpCode::Alloc:
        jo["type"] = to_string(op.type);
        jo["reuses"] = op.src == rec::kNone ? json(nullptr) : json(op.src);
        break;
      case rec::OpCode::Copy:
        jo["kind"] = to_string(static_cast<CopyKind>(op.sub));
        jo["dst_offset"] = op.dst_offset;
        jo["src_offset"] = op.src_offset;
        if (static_cast<CopyKind>(op.sub) == CopyKind::HostToDevice)
          jo["constant"] = op.constant;
        break;
      case rec::OpCode::Fill:
        jo["value"] = op.value;
        jo["elem_bytes"] = op.elem_size;
        jo["dst_offset"] = op.dst_offset;
        break;
      case rec::OpCode::Launch: {
        jo["kernel"] = op.kernel;
        jo["kernel_hash"] = d.kernels[op.kernel]->hash.to_hex();
        json args = json::array();
        for (uint32_t a = op.arg_begin; a < op.arg_end; ++a) {
          const rec::LaunchArg& arg = d.args[a];
          if (arg.is_buffer)
            args.push_back({{"slot", arg.slot}, {"offset", arg.offset}});
          else
            args.push_back({{"bits", arg.bits}, {"size", expr_or_null(d, arg.size_expr)}});
        }
        jo["args"] = std::move(args);
        break;
      }
      case rec::OpCode::Reduce:
        jo["reduction"] = to_string(static_cast<ReduceOp>(op.sub));
        jo["type"] = to_string(op.type);
        break;
      case rec::OpCode::PrefixSum:
        jo["exclusive"] = op.flag != 0;
        jo["type"] = to_string(op.type);
        break;
      default:
        break;
    }
    ops.push_back(std::move(jo));
  }
  j["ops"] = std::move(ops);

  json guards = json::array();
  for (size_t g = 0; g < d.guards.size(); ++g) {
    const rec::Guard& gd = d.guards[g];
    guards.push_back({{"index", g},
                      {"lhs", rec::expr_to_string(d, gd.lhs)},
                      {"cmp", to_string(gd.cmp)},
                      {"rhs", rec::expr_to_string(d, gd.rhs)},
                      {"outcome", gd.outcome},
                      {"recorded", {gd.lhs_value, gd.rhs_value}},
                      {"what", gd.what},
                      {"after_op", gd.after_op == rec::kNone ? json(nullptr) : json(gd.after_op)}});
  }
  j["guards"] = std::move(guards);
  json passes = json::array();
  for (const rec::PassStats& p : d.passes)
    passes.push_back({{"name", p.name},
                      {"ops", {p.ops_before, p.ops_after}},
                      {"launches", {p.launches_before, p.launches_after}},
                      {"allocs", {p.allocs_before, p.allocs_after}},
                      {"guards", {p.guards_before, p.guards_after}}});
  j["passes"] = std::move(passes);
  json inputs = json::array(), outputs = json::array();
  for (uint32_t s : d.inputs)
    inputs.push_back({{"slot", s}, {"type", to_string(d.slots[s].type)}});
  for (const auto& out : d.outputs)
    outputs.push_back({{"slot", out.slot}, {"type", to_string(d.slots[out.slot].type)}});
  j["inputs"] = std::move(inputs);
  j["outputs"] = std::move(outputs);
  json kernels = json::array();
  for (size_t k = 0; k < d.kernels.size(); ++k) {
    const KernelIR& ir = *d.kernels[k];
    json jk = {{"index", k},
               {"hash", ir.hash.to_hex()},
               {"params", ir.params.size()},
               {"instructions", ir.instrs.size()}};
    if (const RegionNames* names = d.region_names_of(k))
      jk["region_names"] = *names;  // one per region-opening marker, "" unnamed
    if (o.kernels)
      jk["ir"] = ir.to_string();
    kernels.push_back(std::move(jk));
  }
  j["kernels"] = std::move(kernels);
  return j;
}

}  // namespace

nlohmann::ordered_json json(const format::ParsedFile& file, const Options& options) {
  check_selection(file, options);
  using json = nlohmann::ordered_json;
  json j;
  j["schema"] = kJsonSchema;
  j["schema_version"] = kJsonSchemaVersion;
  json sections = json::array();
  for (const format::SectionInfo& s : file.sections)
    sections.push_back(
        {{"type", s.entry.type},
         {"name", s.known || s.entry.type == format::kSectionFreeze
                      ? format::to_string(static_cast<format::SectionType>(s.entry.type))
                      : "unknown"},
         {"recording",
          s.entry.recording == format::kFileLevel ? json(nullptr) : json(s.entry.recording)},
         {"optional", (s.entry.flags & format::kSectionOptional) != 0},
         {"offset", s.entry.offset},
         {"bytes", s.entry.n_bytes},
         {"items", s.entry.n_items}});
  std::optional<format::FreezeSection> freeze = detail::freeze_section(file);
  j["file"] = {{"format_version",
                std::to_string(file.version_major) + "." + std::to_string(file.version_minor)},
               {"library_version", file.library_version},
               {"backend", file.backend},
               {"bytes", file.file_bytes},
               {"recordings", file.recordings.size()},
               {"sections", std::move(sections)}};
  j["freeze"] = freeze ? detail::freeze_json(*freeze, options) : json(nullptr);
  json recs = json::array();
  for (size_t r : detail::selected(file.recordings.size(), options.recording))
    recs.push_back(recording_json(*file.recordings[r], r, options));
  j["recordings"] = std::move(recs);
  return j;
}

}  // namespace ff::dump
