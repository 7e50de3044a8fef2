// Helpers shared by the dump views (not part of ff_dump's interface).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "dump.h"
#include "recorder/freeze_section.h"
#include "recorder/recording.h"

namespace ff::dump::detail {

/// "s0 r", "s2 w", "s3 rw" for the slots the op uses; "s2 new" / "s2 end" for Alloc/Release.
std::vector<std::string> op_slots(const rec::RecordingData& d, const rec::Op& op);

/// What else identifies the op: element type, copy kind, reduction, kernel and arguments.
/// `by_hash` names kernels by hash instead of index (for diffs).
std::string op_detail(const rec::RecordingData& d, const rec::Op& op, bool by_hash);

/// The op's size expression ("-" for none).
std::string op_size(const rec::RecordingData& d, const rec::Op& op);

/// The op's size at the recorded sizes, or "" when it has none or cannot be evaluated.
std::string op_size_value(const rec::RecordingData& d, const rec::Op& op);

/// "input 2", "alloc by op 7", "external".
std::string slot_origin(const rec::Slot& s);

/// "guard: size(s0) == size(s1) is true (operand sizes of add) after op 3".
std::string guard_line(const rec::RecordingData& d, const rec::Guard& g);

/// Printable ASCII as it is, quotes and backslashes escaped, every other byte as \xNN: user
/// strings (names, labels) in the text view.
std::string escaped(const std::string& s);

/// The same for JSON (which quotes by itself, and needs valid UTF-8): only backslashes and
/// bytes outside printable ASCII escaped.
std::string printable(const std::string& s);

/// The recordings `options` selects.
std::vector<size_t> selected(size_t n_recordings, const std::optional<size_t>& one);

/// Whether `s` is a saved frozen function's freeze section (the reader keeps it as skipped).
bool is_freeze_section(const format::RawSection& s);

/// The file's freeze section, decoded and validated; nullopt when it has none. Throws
/// ff::FormatError when it is damaged.
std::optional<format::FreezeSection> freeze_section(const format::ParsedFile& file);

/// The freeze section for the text view: the function's name, version and layout, per held
/// recording (the selected one only with options.recording) its key decoded (arguments,
/// leaves), result shape and written arguments, and the opaque sets.
std::string freeze_text(const format::FreezeSection& s, const Options& options);

/// The same for the JSON view (the top-level "freeze" object).
nlohmann::ordered_json freeze_json(const format::FreezeSection& s, const Options& options);

}  // namespace ff::dump::detail
