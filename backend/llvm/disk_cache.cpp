// On-disk kernel cache entries: "<dir>/<key>.ffk", a 48-byte header and the object code.
//
//   bytes 0-3   magic "FFKC"          bytes 24-31  object bytes (u64)
//   bytes 4-7   entry version (1)     bytes 32-39  XXH3-64 of the object
//   bytes 8-23  the key (lo, hi)      bytes 40-47  reserved, 0
//
// The key (computed by the kernel cache) covers everything that decides the machine code, so
// an entry is never stale, only missing or damaged. Readers and writers need no lock: a
// writer renames a complete file into place, a reader checks the header and checksum.
#include "backend/llvm/disk_cache.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <vector>

#include "common/file_io.h"
#include "common/log.h"
#include "freezeframe/errors.h"

namespace ff::llvm_backend {
namespace {

constexpr char kMagic[4] = {'F', 'F', 'K', 'C'};
constexpr uint32_t kEntryVersion = 1;
constexpr size_t kHeaderBytes = 48;
constexpr const char* kSuffix = ".ffk";

namespace fs = std::filesystem;

}  // namespace

DiskCache::DiskCache(std::string dir, uint64_t max_bytes)
    : dir_(std::move(dir)), max_bytes_(max_bytes) {}

std::string DiskCache::entry_path(const Hash128& key) const {
  return dir_ + "/" + key.to_hex() + kSuffix;
}

std::optional<std::string> DiskCache::load(const Hash128& key) {
  if (!enabled())
    return std::nullopt;
  std::string path = entry_path(key);
  std::vector<std::byte> bytes;
  try {
    bytes = read_file(path);
  } catch (const Error&) {
    return std::nullopt;  // no entry (or unreadable: then a store replaces it)
  }
  auto damaged = [&](const char* why) -> std::optional<std::string> {
    logging::llvm().debug("disk cache: ignoring damaged entry {} ({}); it will be rewritten", path,
                          why);
    std::error_code ec;
    fs::remove(path, ec);
    return std::nullopt;
  };
  if (bytes.size() < kHeaderBytes || std::memcmp(bytes.data(), kMagic, 4) != 0)
    return damaged("no header");
  uint32_t version;
  uint64_t lo, hi, n, sum, reserved;
  std::memcpy(&version, bytes.data() + 4, 4);
  std::memcpy(&lo, bytes.data() + 8, 8);
  std::memcpy(&hi, bytes.data() + 16, 8);
  std::memcpy(&n, bytes.data() + 24, 8);
  std::memcpy(&sum, bytes.data() + 32, 8);
  std::memcpy(&reserved, bytes.data() + 40, 8);
  if (version != kEntryVersion || reserved != 0)
    return damaged("unknown entry version");
  if (lo != key.lo || hi != key.hi)
    return damaged("key mismatch");
  if (n != bytes.size() - kHeaderBytes)
    return damaged("truncated");
  std::span<const std::byte> object(bytes.data() + kHeaderBytes, n);
  if (hash64(object) != sum)
    return damaged("checksum mismatch");
  ::utimensat(AT_FDCWD, path.c_str(), nullptr, 0);  // last use, for trimming
  return std::string(reinterpret_cast<const char*>(object.data()), object.size());
}

void DiskCache::store(const Hash128& key, std::string_view object) {
  if (!enabled())
    return;
  std::vector<std::byte> bytes(kHeaderBytes + object.size());
  uint64_t n = object.size(), reserved = 0;
  uint64_t sum = hash64(std::span(reinterpret_cast<const std::byte*>(object.data()), n));
  std::memcpy(bytes.data(), kMagic, 4);
  std::memcpy(bytes.data() + 4, &kEntryVersion, 4);
  std::memcpy(bytes.data() + 8, &key.lo, 8);
  std::memcpy(bytes.data() + 16, &key.hi, 8);
  std::memcpy(bytes.data() + 24, &n, 8);
  std::memcpy(bytes.data() + 32, &sum, 8);
  std::memcpy(bytes.data() + 40, &reserved, 8);
  if (n)
    std::memcpy(bytes.data() + kHeaderBytes, object.data(), n);
  try {
    std::error_code ec;
    fs::create_directories(dir_, ec);  // the error, if any, shows in the write below
    write_file_atomic(entry_path(key), bytes, /*durable=*/false);
  } catch (const Error& e) {
    logging::llvm().warn("disk cache: cannot store a kernel in '{}': {}", dir_, e.what());
    return;
  }
  uint64_t total = approx_bytes_.fetch_add(bytes.size()) + bytes.size();
  if (!scanned_.exchange(true) || total > max_bytes_)
    trim(max_bytes_ - max_bytes_ / 8);  // trim to 7/8 of the cap, so trims are rare
}

uint64_t DiskCache::trim(uint64_t target) {
  std::lock_guard lock(trim_mutex_);

  struct Entry {
    fs::path path;
    uint64_t bytes;
    fs::file_time_type used;
  };

  std::vector<Entry> entries;
  uint64_t total = 0;
  std::error_code ec;
  auto now = fs::file_time_type::clock::now();
  for (const fs::directory_entry& e : fs::directory_iterator(dir_, ec)) {
    std::error_code ec2;
    if (!e.is_regular_file(ec2))
      continue;
    std::string name = e.path().filename().string();
    auto used = e.last_write_time(ec2);
    if (ec2)
      continue;
    if (name.find(".tmp-") != std::string::npos) {
      if (now - used > std::chrono::minutes(10))  // left by a writer that died
        fs::remove(e.path(), ec2);
      continue;
    }
    if (name.size() <= 4 || name.compare(name.size() - 4, 4, kSuffix) != 0)
      continue;
    uint64_t bytes = e.file_size(ec2);
    if (ec2)
      continue;
    entries.push_back({e.path(), bytes, used});
    total += bytes;
  }
  if (total > target) {
    std::sort(entries.begin(), entries.end(),
              [](const Entry& a, const Entry& b) { return a.used < b.used; });
    size_t removed = 0;
    for (const Entry& e : entries) {
      if (total <= target)
        break;
      std::error_code ec2;
      if (fs::remove(e.path, ec2) || !ec2) {  // gone either way (another process trims too)
        total -= e.bytes;
        ++removed;
      }
    }
    logging::llvm().debug("disk cache: trimmed {} entries of '{}' to {} bytes", removed, dir_,
                          total);
  }
  approx_bytes_ = total;
  return total;
}

}  // namespace ff::llvm_backend
