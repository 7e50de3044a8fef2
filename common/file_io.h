// Whole-file reads and atomic writes (temporary file + rename), shared by recording files and
// the on-disk kernel cache.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <vector>

namespace ff {

/// The bytes of the file at `path`. Throws ff::Error naming the path and the system's reason
/// (a missing file, a directory, a read error).
std::vector<std::byte> read_file(const std::string& path);

/// Writes `bytes` to `path` atomically: into a temporary file in the same directory, then
/// rename(2) over `path`, so a reader (another process included) sees the old file or the
/// whole new one, never a part. `durable` also fsyncs the data before the rename. Throws
/// ff::Error naming the path and the reason; the temporary file is removed on failure.
void write_file_atomic(const std::string& path, std::span<const std::byte> bytes, bool durable);

}  // namespace ff
