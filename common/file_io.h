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

/// A whole file mapped read-only (prefaulted), for parsing without copying it: a fresh buffer
/// of a megabyte costs more in page faults than the parse. The file must not be truncated
/// while mapped (files written by write_file_atomic are replaced, never changed in place).
class MappedFile {
 public:
  /// Throws ff::Error naming the path and the system's reason.
  explicit MappedFile(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  std::span<const std::byte> bytes() const { return {data_, size_}; }

 private:
  const std::byte* data_ = nullptr;
  size_t size_ = 0;
};

/// Writes `bytes` to `path` atomically: into a temporary file in the same directory, then
/// rename(2) over `path`, so a reader (another process included) sees the old file or the
/// whole new one, never a part. `durable` also fsyncs the data before the rename. Throws
/// ff::Error naming the path and the reason; the temporary file is removed on failure.
void write_file_atomic(const std::string& path, std::span<const std::byte> bytes, bool durable);

}  // namespace ff
