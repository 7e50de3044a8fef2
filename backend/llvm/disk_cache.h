// The on-disk kernel cache: object code of compiled kernels in a directory shared by every
// process (FF_CACHE_DIR), so a second process links what the first compiled instead of
// compiling it. Entries are written atomically (temporary file + rename); a damaged entry is
// ignored, deleted and written anew; a size cap trims the least recently used entries.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "common/hash.h"

namespace ff::llvm_backend {

class DiskCache {
 public:
  /// `dir` empty: disabled (every call does nothing). The directory is created on first
  /// store; if that fails the cache disables itself with a warning. `max_bytes` caps the
  /// bytes of all entries (FF_CACHE_MAX_MB).
  DiskCache(std::string dir, uint64_t max_bytes);

  bool enabled() const { return !dir_.empty(); }

  const std::string& dir() const { return dir_; }

  /// The object code stored under `key`, or nothing (no entry; or a damaged one, which is
  /// deleted). Never throws.
  std::optional<std::string> load(const Hash128& key);
  /// Stores `object` under `key` and trims the cache if it grew past the cap. Never throws
  /// (failures are logged: the cache is an optimisation).
  void store(const Hash128& key, std::string_view object);

  /// The file of an entry (for tests that damage one).
  std::string entry_path(const Hash128& key) const;
  /// Removes least recently used entries (and stale temporary files) until the entries take
  /// at most `target` bytes. Returns the bytes the entries take afterwards.
  uint64_t trim(uint64_t target);

 private:
  std::string dir_;
  uint64_t max_bytes_;
  std::atomic<uint64_t> approx_bytes_{0};  // entries' bytes as last scanned, plus stores since
  std::atomic<bool> scanned_{false};
  std::mutex trim_mutex_;
};

}  // namespace ff::llvm_backend
