// recorder-dump --diff: what differs between two files' recordings, item by item. Items are
// compared in their canonical text form with kernels named by hash, so two recordings of the
// same work compare equal whatever their kernel order, library version or backend name.
#include <algorithm>
#include <set>
#include <string>

#include "common/hash.h"
#include "dump.h"
#include "dump_internal.h"
#include "recorder/size_eval.h"

namespace ff::dump {
namespace {

constexpr size_t kMaxLines = 40;  // differences listed per category

struct Differ {
  std::string out;
  bool same = true;

  void note(const std::string& line) {
    same = false;
    out += line + "\n";
  }

  /// Compares two lists position by position; lists the first kMaxLines differences.
  void lists(const std::string& what, const std::vector<std::string>& a,
             const std::vector<std::string>& b) {
    size_t shown = 0, differing = 0;
    size_t n = std::max(a.size(), b.size());
    for (size_t i = 0; i < n; ++i) {
      const std::string* x = i < a.size() ? &a[i] : nullptr;
      const std::string* y = i < b.size() ? &b[i] : nullptr;
      if (x && y && *x == *y)
        continue;
      ++differing;
      if (shown++ >= kMaxLines)
        continue;
      std::string head = "  " + what + " " + std::to_string(i) + ":";
      same = false;
      if (x)
        out += "-" + head + " " + *x + "\n";
      if (y)
        out += "+" + head + " " + *y + "\n";
    }
    if (a.size() != b.size())
      note("  " + what + "s: " + std::to_string(a.size()) + " vs " + std::to_string(b.size()));
    if (shown > kMaxLines)
      note("  ... " + std::to_string(differing - kMaxLines) + " more " + what + " differences");
  }
};

std::vector<std::string> slot_lines(const rec::RecordingData& d) {
  std::vector<std::string> v;
  for (const rec::Slot& s : d.slots)
    v.push_back(std::string(to_string(s.type)) + " " + detail::slot_origin(s) + " recorded " +
                std::to_string(s.recorded_size) +
                (s.size_expr == rec::kNone ? "" : " size " + rec::expr_to_string(d, s.size_expr)));
  return v;
}

std::vector<std::string> op_lines(const rec::RecordingData& d) {
  std::vector<std::string> v;
  for (const rec::Op& op : d.ops) {
    std::string slots;
    for (const std::string& x : detail::op_slots(d, op))
      slots += (slots.empty() ? "" : ", ") + x;
    v.push_back(std::string(rec::to_string(op.code)) + " [" + slots + "] size " +
                detail::op_size(d, op) + " " + detail::op_detail(d, op, true));
  }
  return v;
}

std::vector<std::string> guard_lines(const rec::RecordingData& d) {
  std::vector<std::string> v;
  for (const rec::Guard& g : d.guards)
    v.push_back(detail::guard_line(d, g));
  return v;
}

std::vector<std::string> io_lines(const rec::RecordingData& d, bool inputs) {
  std::vector<std::string> v;
  if (inputs)
    for (uint32_t s : d.inputs)
      v.push_back("s" + std::to_string(s) + " " + to_string(d.slots[s].type));
  else
    for (const auto& o : d.outputs)
      v.push_back("s" + std::to_string(o.slot) + " " + to_string(d.slots[o.slot].type));
  return v;
}

std::vector<std::string> constant_lines(const rec::RecordingData& d) {
  std::vector<std::string> v;
  for (const auto& c : d.constants)
    v.push_back(std::to_string(c.size()) + " bytes, hash " + hash128(c).to_hex().substr(0, 16));
  return v;
}

void compare(Differ& df, const rec::RecordingData& a, const rec::RecordingData& b) {
  std::set<std::string> ka, kb;
  for (const auto& k : a.kernels)
    ka.insert(k->hash.to_hex());
  for (const auto& k : b.kernels)
    kb.insert(k->hash.to_hex());
  for (const std::string& h : ka)
    if (!kb.count(h))
      df.note("- kernel " + h);
  for (const std::string& h : kb)
    if (!ka.count(h))
      df.note("+ kernel " + h);
  df.lists("slot", slot_lines(a), slot_lines(b));
  df.lists("op", op_lines(a), op_lines(b));
  df.lists("guard", guard_lines(a), guard_lines(b));
  df.lists("input", io_lines(a, true), io_lines(b, true));
  df.lists("output", io_lines(a, false), io_lines(b, false));
  df.lists("constant", constant_lines(a), constant_lines(b));
  if (a.is_capture != b.is_capture)
    df.note(std::string("  capture: ") + (a.is_capture ? "yes" : "no") + " vs " +
            (b.is_capture ? "yes" : "no"));
}

}  // namespace

DiffResult diff(const format::ParsedFile& a, const format::ParsedFile& b, const Options& options) {
  check_selection(a, options);
  check_selection(b, options);
  Differ df;
  if (!options.recording && a.recordings.size() != b.recordings.size())
    df.note("recordings: " + std::to_string(a.recordings.size()) + " vs " +
            std::to_string(b.recordings.size()));
  size_t n = std::min(a.recordings.size(), b.recordings.size());
  for (size_t r : detail::selected(n, options.recording)) {
    Differ one;
    compare(one, *a.recordings[r], *b.recordings[r]);
    if (!one.same) {
      df.note("recording " + std::to_string(r) + ":");
      df.out += one.out;
    }
  }
  return {df.same, df.out};
}

}  // namespace ff::dump
