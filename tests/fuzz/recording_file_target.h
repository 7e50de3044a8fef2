// One fuzz input through a recording file's untrusted-input path: parse (checksums bypassed,
// so damaged bytes reach the structural checks), validate, and build a replay plan (which
// compiles the kernels) for every recording that loads. Anything but success or a clean
// ff::FormatError / ff::Error is a bug; the process aborts so the fuzzer keeps the input.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "recorder/format_reader.h"

namespace ff::fuzz {

struct FileStats {
  uint64_t inputs = 0;
  uint64_t reached_tables = 0;  // decoded past the kernels into slots, exprs, ops, ...
  uint64_t reached_ops = 0;     // reached the validator's walk over the ops
  uint64_t loaded = 0;          // parsed and validated
  uint64_t planned = 0;         // every recording planned (kernels compiled)
};

/// Runs one input; updates `stats`.
void run_recording_file(std::span<const std::byte> bytes, FileStats& stats);

/// Prints the statistics; returns false (and says why) when no input reached the ops, i.e.
/// the run only exercised the header checks.
bool report(const FileStats& stats, const char* who);

}  // namespace ff::fuzz
