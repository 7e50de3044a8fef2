// Bytes of a recording file -> Recordings, validated: a pure function over a byte span, and
// parse_file() for a file by path. Every problem raises ff::FormatError naming the section, the
// item, the byte offset where there is one, and what was wrong.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "recorder/format.h"
#include "recorder/recording.h"

namespace ff::format {

/// How far a parse got (for the damaged-file tests and the fuzzer's "reached the ops" check).
enum class ParseStage : uint8_t {
  Header = 0,        // reading the header
  SectionTable = 1,  // reading the section table
  Kernels = 2,       // decoding and validating kernel IR
  Tables = 3,        // decoding slots, expressions, ops, arguments, guards, ...
  Validate = 4,      // ValidatedRecording::try_check (the op walk)
  Done = 5,
};
const char* to_string(ParseStage s);

struct ParseOptions {
  /// Off: skip the header and section checksums, so damaged bytes reach the structural checks
  /// (the libFuzzer target and the flip-every-byte test). Everything else is still checked.
  bool verify_checksums = true;
  /// Receives the furthest stage reached, also when parse throws (may be null).
  ParseStage* reached = nullptr;
};

/// A section as the table describes it, for the dumper.
struct SectionInfo {
  SectionEntry entry;
  bool known = false;  // a type this reader decodes (else an optional section it skipped)
};

/// A section this reader does not know, kept as bytes (file-level optional sections, e.g.
/// data a newer writer added).
struct RawSection {
  uint32_t type = 0, flags = 0, recording = kFileLevel, item_bytes = 1;
  std::vector<std::byte> bytes;
};

struct ParsedFile {
  uint16_t version_major = 0, version_minor = 0;
  std::string backend;          // from the header
  std::string library_version;  // of the writer
  uint64_t file_bytes = 0;
  std::vector<SectionInfo> sections;
  std::vector<RawSection> skipped;                  // unknown optional sections, in file order
  std::vector<rec::ValidatedRecording> recordings;  // validated here: none is validated again
};

/// Parses and validates a whole file. Throws ff::FormatError; the message starts with
/// "recording file: " and names the section, item and byte offset where it can.
ParsedFile parse(std::span<const std::byte> bytes, const ParseOptions& options = {});

/// parse() of the file at `path` (mapped, not copied). A FormatError's message starts with
/// the path; a file that cannot be opened is an ff::Error naming it.
ParsedFile parse_file(const std::string& path, const ParseOptions& options = {});

}  // namespace ff::format
