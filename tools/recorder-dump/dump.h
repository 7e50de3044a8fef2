// recorder-dump's library (ff_dump): views of a parsed recording file as text, JSON, Graphviz
// and a diff of two files. Links the format code only, never a backend; tests call it directly.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "recorder/format_reader.h"

namespace ff::dump {

/// The JSON form's schema name and version (docs/recording-format.md, "recorder-dump --json").
inline constexpr const char* kJsonSchema = "freezeframe.recording-dump";
inline constexpr int kJsonSchemaVersion = 1;

struct Options {
  /// Show only this recording of a file that holds several (default: all).
  std::optional<size_t> recording;
  /// Text and JSON: include every kernel's IR listing.
  bool kernels = false;
};

/// Memory the recording allocates, at the sizes it was recorded with.
struct MemoryFigures {
  uint64_t bytes_allocated = 0;  // every Alloc's bytes, summed
  uint64_t peak_bytes = 0;       // most bytes live at once (Alloc adds, Release frees)
  bool exact = true;             // false when a size could not be evaluated
};

MemoryFigures memory_figures(const rec::RecordingData& d);

/// Throws ff::Error when `options.recording` names a recording the file does not hold.
void check_selection(const format::ParsedFile& file, const Options& options);

/// The summary (versions, backend, counts, memory) and a table of ops with their slots and
/// size expressions, per recording; with options.kernels each kernel's IR. A saved frozen
/// function's freeze section (keys, result shapes, written arguments, opaque sets) comes
/// first. Throws ff::FormatError if that section is damaged.
std::string text(const format::ParsedFile& file, const Options& options);

/// The JSON form (schema kJsonSchema, version kJsonSchemaVersion), the freeze section as
/// "freeze". Throws ff::FormatError if that section is damaged.
nlohmann::ordered_json json(const format::ParsedFile& file, const Options& options);

/// A Graphviz digraph: ops as boxes, slots as ellipses (inputs, outputs and temporaries
/// styled differently), an edge per read (slot -> op) and write (op -> slot), and one from
/// the donor of a buffer an allocation takes over.
std::string dot(const format::ParsedFile& file, const Options& options);

struct DiffResult {
  bool same = true;
  std::string text;  // what differs, one item per line ("" when the same)
};

/// What differs between two files' recordings: ops, kernels (by hash), slots, size
/// expressions, guards, inputs and outputs. Ignores the library version, the backend name and
/// other metadata.
DiffResult diff(const format::ParsedFile& a, const format::ParsedFile& b, const Options& options);

}  // namespace ff::dump
