// Element types of arrays; shared with the kernel IR and backends.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace ff {

/// Element type of an array. Persisted in kernels and recordings: never renumber.
enum class ScalarType : uint8_t {
  Bool = 0,  // stored as one byte, 0 or 1
  Int32 = 1,
  UInt32 = 2,
  Int64 = 3,
  UInt64 = 4,
  Float32 = 5,
  Float64 = 6,
};
inline constexpr int kNumScalarTypes = 7;

constexpr size_t size_of(ScalarType t) {
  switch (t) {
    case ScalarType::Bool:
      return 1;
    case ScalarType::Int32:
    case ScalarType::UInt32:
    case ScalarType::Float32:
      return 4;
    default:
      return 8;
  }
}

constexpr bool is_float(ScalarType t) {
  return t == ScalarType::Float32 || t == ScalarType::Float64;
}

constexpr bool is_signed_int(ScalarType t) {
  return t == ScalarType::Int32 || t == ScalarType::Int64;
}

constexpr bool is_unsigned_int(ScalarType t) {
  return t == ScalarType::UInt32 || t == ScalarType::UInt64;
}

constexpr bool is_integer(ScalarType t) {
  return is_signed_int(t) || is_unsigned_int(t);
}

constexpr bool is_valid(ScalarType t) {
  return static_cast<uint8_t>(t) < kNumScalarTypes;
}

/// "bool", "int32", ..., "float64".
const char* to_string(ScalarType t);

/// The ScalarType of a C++ element type (bool, int32_t, uint32_t, int64_t, uint64_t, float,
/// double).
template <class T>
inline constexpr ScalarType scalar_type_of = [] {
  if constexpr (std::is_same_v<T, bool>)
    return ScalarType::Bool;
  else if constexpr (std::is_same_v<T, int32_t>)
    return ScalarType::Int32;
  else if constexpr (std::is_same_v<T, uint32_t>)
    return ScalarType::UInt32;
  else if constexpr (std::is_same_v<T, int64_t>)
    return ScalarType::Int64;
  else if constexpr (std::is_same_v<T, uint64_t>)
    return ScalarType::UInt64;
  else if constexpr (std::is_same_v<T, float>)
    return ScalarType::Float32;
  else {
    static_assert(std::is_same_v<T, double>, "unsupported array element type");
    return ScalarType::Float64;
  }
}();

}  // namespace ff
