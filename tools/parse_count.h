// Strict parsing of the whole numbers the tools take on their command lines (an index, a
// size): CLI11 reads an unsigned option with strtoull, which turns "-1" into 2^64 - 1.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace ff::tools {

/// `s` as a decimal whole number (digits only: no sign, no spaces, no 0x), or nullopt when it
/// is not one or does not fit in 64 bits.
inline std::optional<uint64_t> parse_count(std::string_view s) {
  if (s.empty())
    return std::nullopt;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9')
      return std::nullopt;
    auto digit = static_cast<uint64_t>(c - '0');
    if (v > (UINT64_MAX - digit) / 10)
      return std::nullopt;
    v = v * 10 + digit;
  }
  return v;
}

}  // namespace ff::tools
