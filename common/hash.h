// The project's only door to xxHash: 128-bit kernel identities and 64-bit checksums.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>

namespace ff {

struct Hash128 {
  uint64_t lo = 0, hi = 0;
  friend bool operator==(const Hash128&, const Hash128&) = default;

  friend bool operator<(const Hash128& a, const Hash128& b) {
    return a.hi != b.hi ? a.hi < b.hi : a.lo < b.lo;
  }

  /// 32 hex digits, high half first.
  std::string to_hex() const;
};

Hash128 hash128(std::span<const std::byte> bytes);
uint64_t hash64(std::span<const std::byte> bytes);

}  // namespace ff

template <>
struct std::hash<ff::Hash128> {
  size_t operator()(const ff::Hash128& h) const noexcept {
    return h.lo ^ (h.hi * 0x9E3779B97F4A7C15ull);
  }
};
