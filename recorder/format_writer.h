// Recording -> bytes of a recording file (recorder/format.h, docs/recording-format.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "recorder/format.h"
#include "recorder/recording.h"

namespace ff::format {

/// A section the writer adds as it is: for data that has no type in this version (the freeze
/// data of a saved frozen function will be one), and for tests of forward compatibility.
struct ExtraSection {
  uint32_t type = 0;
  uint32_t flags = 0;               // kSectionOptional for data older readers may skip
  uint32_t recording = kFileLevel;  // or the recording it belongs to
  uint32_t item_bytes = 1;
  std::vector<std::byte> bytes;  // a multiple of item_bytes
};

struct WriteOptions {
  /// Written into the header (the dumper shows it; --diff ignores it).
  std::string library_version;  // empty: this build's version
  /// Tests of forward compatibility write a newer minor version.
  uint16_t version_minor = kVersionMinor;
  /// Per recording (or fewer): where not empty, the label written instead of its own.
  std::vector<std::string> labels;
  /// Appended after the recordings' sections, in this order.
  std::vector<ExtraSection> extra;
};

/// The file bytes for `recordings` (at least one). Deterministic: equal recordings give equal
/// bytes. Throws ff::Error for what the format cannot hold (a backend name longer than 31
/// characters, a kernel whose hash does not match its IR, more than 2^32 - 2 items).
std::vector<std::byte> write(std::span<const rec::RecordingData* const> recordings,
                             const WriteOptions& options = {});

/// One recording.
std::vector<std::byte> write(const rec::RecordingData& recording, const WriteOptions& options = {});

}  // namespace ff::format
