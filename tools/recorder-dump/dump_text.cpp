// recorder-dump's text view: a summary per recording and a table of its ops.
#include <algorithm>
#include <array>
#include <optional>
#include <string>
#include <vector>

#include "backend/ir/ir_analysis.h"
#include "dump.h"
#include "dump_internal.h"
#include "recorder/recording_text.h"
#include "recorder/size_eval.h"

namespace ff::dump {
namespace {

std::string pad(std::string s, size_t width) {
  if (s.size() < width)
    s.append(width - s.size(), ' ');
  return s;
}

/// 1234567 -> "1,234,567".
std::string grouped(uint64_t v) {
  std::string digits = std::to_string(v), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0)
      out += ',';
    out += digits[i];
  }
  return out;
}

void recording_text(std::string& s, const rec::RecordingData& d, size_t r, const Options& o) {
  std::array<size_t, rec::kNumOpCodes> per_code{};
  for (const rec::Op& op : d.ops)
    ++per_code[static_cast<size_t>(op.code)];
  uint64_t constant_bytes = 0;
  for (const auto& c : d.constants)
    constant_bytes += c.size();
  MemoryFigures m = memory_figures(d);

  s += "\nrecording " + std::to_string(r) + ": backend '" + d.backend + "'" +
       (d.label.empty() ? "" : ", label '" + detail::escaped(d.label) + "'") +
       (d.is_capture ? ", whole-session capture (inspect only: replay is refused)" : "") + "\n";
  s += "  ops " + std::to_string(d.ops.size());
  std::string by_kind;
  for (size_t c = 0; c < per_code.size(); ++c)
    if (per_code[c])
      by_kind += (by_kind.empty() ? "" : ", ") +
                 std::string(rec::to_string(static_cast<rec::OpCode>(c))) + " " +
                 std::to_string(per_code[c]);
  s += by_kind.empty() ? "\n" : " (" + by_kind + ")\n";
  s += "  kernels " + std::to_string(d.kernels.size()) + ", slots " +
       std::to_string(d.slots.size()) + ", guards " + std::to_string(d.guards.size()) +
       ", inputs " + std::to_string(d.inputs.size()) + ", outputs " +
       std::to_string(d.outputs.size()) + ", constants " + std::to_string(d.constants.size()) +
       " (" + grouped(constant_bytes) + " bytes), size expression nodes " +
       std::to_string(d.exprs.size()) + "\n";
  if (d.passes.empty()) {
    s += "  optimised: no (recorded with the optimiser off, or by a writer without it)\n";
  } else {
    s += "  optimised by:\n";
    for (const rec::PassStats& p : d.passes)
      s += "    " + pad(p.name, 16) + rec::pass_counts(p) + "\n";
  }
  s += "  bytes allocated " + grouped(m.bytes_allocated) + ", peak memory " +
       grouped(m.peak_bytes) + " bytes at the recorded sizes" +
       (m.exact ? "" : " (some sizes could not be evaluated)") + "\n";

  s += "  slots:\n";
  for (size_t i = 0; i < d.slots.size(); ++i) {
    const rec::Slot& sl = d.slots[i];
    s += "    " + pad("s" + std::to_string(i), 6) + pad(to_string(sl.type), 8) +
         pad(detail::slot_origin(sl), 18) + "recorded " + grouped(sl.recorded_size) + " elements";
    if (sl.size_expr != rec::kNone)
      s += ", size " + rec::expr_to_string(d, sl.size_expr);
    s += "\n";
  }
  // The slots and size columns are as wide as their longest entry ("s5 new, s3 end (its
  // buffer)" of a reused allocation, a long size expression) and two spaces.
  std::vector<std::string> slot_cells, size_cells;
  size_t slots_width = 24, size_width = 26;
  for (const rec::Op& op : d.ops) {
    std::string slots;
    for (const std::string& x : detail::op_slots(d, op))
      slots += (slots.empty() ? "" : ", ") + x;
    slots_width = std::max(slots_width, slots.size() + 2);
    slot_cells.push_back(std::move(slots));
    size_cells.push_back(detail::op_size(d, op));
    size_width = std::max(size_width, size_cells.back().size() + 2);
  }
  s += "  ops:\n    " + pad("#", 6) + pad("op", 11) + pad("slots", slots_width) +
       pad("size", size_width) + pad("recorded", 10) + "details\n";
  for (size_t i = 0; i < d.ops.size(); ++i) {
    const rec::Op& op = d.ops[i];
    s += "    " + pad(std::to_string(i), 6) + pad(rec::to_string(op.code), 11) +
         pad(slot_cells[i], slots_width) + pad(size_cells[i], size_width) +
         pad(detail::op_size_value(d, op), 10) + detail::op_detail(d, op, false) + "\n";
  }
  if (!d.guards.empty()) {
    s += "  guards:\n";
    for (size_t g = 0; g < d.guards.size(); ++g)
      s += "    " + pad(std::to_string(g), 6) + detail::guard_line(d, d.guards[g]) + "\n";
  }
  s += "  inputs:";
  for (size_t k = 0; k < d.inputs.size(); ++k)
    s += (k ? ", " : " ") + std::to_string(k) + "=s" + std::to_string(d.inputs[k]);
  s += "\n  outputs:";
  for (size_t k = 0; k < d.outputs.size(); ++k)
    s += (k ? ", " : " ") + std::to_string(k) + "=s" + std::to_string(d.outputs[k].slot);
  s += "\n  kernels:\n";
  for (size_t k = 0; k < d.kernels.size(); ++k) {
    const KernelIR& ir = *d.kernels[k];
    const RegionNames no_names, *of_kernel = d.region_names_of(k);
    const RegionNames& names = of_kernel ? *of_kernel : no_names;
    s += "    " + pad("k" + std::to_string(k), 6) + ir.hash.to_hex() + "  " +
         std::to_string(ir.params.size()) + " params, " + std::to_string(ir.instrs.size()) +
         " instructions";
    std::string named;
    for (const std::string& n : names)
      if (!n.empty())
        named += (named.empty() ? ", regions '" : "', '") + n;
    s += named.empty() ? "\n" : named + "'\n";
    if (o.kernels) {
      // One line per instruction after the header and the parameters: a region's opening
      // marker shows its name.
      std::string listing = ir.to_string();
      size_t at = 0, line = 0, region = 0;
      while (at < listing.size()) {
        size_t end = listing.find('\n', at);
        if (end == std::string::npos)
          end = listing.size();
        s += "      " + listing.substr(at, end - at);
        if (line >= 1 + ir.params.size()) {
          size_t instr = line - 1 - ir.params.size();
          if (instr < ir.instrs.size() && opens_region(ir.instrs[instr])) {
            if (region < names.size() && !names[region].empty())
              s += "  '" + names[region] + "'";
            ++region;
          }
        }
        s += "\n";
        at = end + 1;
        ++line;
      }
    }
  }
}

}  // namespace

std::string text(const format::ParsedFile& file, const Options& options) {
  check_selection(file, options);
  std::string s = "recording file: format " + std::to_string(file.version_major) + "." +
                  std::to_string(file.version_minor) + ", written by freezeframe " +
                  file.library_version + ", " + grouped(file.file_bytes) + " bytes, " +
                  std::to_string(file.recordings.size()) + " recording(s), backend '" +
                  file.backend + "'\n";
  size_t unknown = 0;
  for (const format::RawSection& raw : file.skipped)
    unknown += !detail::is_freeze_section(raw);
  if (unknown)
    s += "  " + std::to_string(unknown) + " optional section(s) of a newer format skipped\n";
  if (std::optional<format::FreezeSection> freeze = detail::freeze_section(file))
    s += detail::freeze_text(*freeze, options);
  for (size_t r : detail::selected(file.recordings.size(), options.recording))
    recording_text(s, *file.recordings[r], r, options);
  return s;
}

}  // namespace ff::dump
