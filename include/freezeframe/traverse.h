// Walking the arguments and results of frozen functions: arrays, scalars, std containers and
// user structs declared with FF_STRUCT, nested to any depth. A type that cannot be walked is a
// compile-time error naming it.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "freezeframe/array.h"

namespace ff {

/// Specialised by FF_STRUCT(Type, fields...): the fields of a user struct, in order.
template <class T>
struct StructFields;

namespace detail {

template <class T>
inline constexpr bool kAlwaysFalse = false;

template <class T, class = void>
struct IsStruct : std::false_type {};

template <class T>
struct IsStruct<T, std::void_t<decltype(StructFields<T>::kName)>> : std::true_type {};

template <class T>
struct IsVector : std::false_type {};

template <class T, class A>
struct IsVector<std::vector<T, A>> : std::true_type {};

template <class T>
struct IsVectorOfBool : std::false_type {};

template <class A>
struct IsVectorOfBool<std::vector<bool, A>> : std::true_type {};

template <class T>
struct IsStdArray : std::false_type {};

template <class T, size_t N>
struct IsStdArray<std::array<T, N>> : std::true_type {};

template <class T>
struct IsOptional : std::false_type {};

template <class T>
struct IsOptional<std::optional<T>> : std::true_type {};

template <class T>
struct IsStringMap : std::false_type {};

template <class T, class C, class A>
struct IsStringMap<std::map<std::string, T, C, A>> : std::true_type {};

template <class T>
struct IsTupleLike : std::false_type {};

template <class... T>
struct IsTupleLike<std::tuple<T...>> : std::true_type {};

template <class A, class B>
struct IsTupleLike<std::pair<A, B>> : std::true_type {};

/// Node kinds in a traversal, written into keys and result shapes. Persisted (recording files
/// store frozen functions' keys): never renumber.
enum class Node : uint8_t {
  Array = 1,
  Scalar = 2,
  String = 3,
  Vector = 4,
  StdArray = 5,
  Tuple = 6,
  Optional = 7,
  Map = 8,
  Struct = 9,
};

/// FNV-1a of a struct's name, at compile time: how keys and result shapes name a struct.
constexpr uint64_t name_hash(const char* name) {
  uint64_t h = 14695981039346656037ull;
  for (; *name; ++name)
    h = (h ^ static_cast<uint8_t>(*name)) * 1099511628211ull;
  return h;
}

/// Walks `x`, calling on the visitor `v`:
///   v.array(a)               ff::Array<T> (const or not, as `x` is)
///   v.scalar(s)              arithmetic types and enums
///   v.string(s)              std::string
///   v.enter(node, size&)     containers and structs; `size` is the element count (a visitor
///                            that rebuilds may change it first: the container is resized)
///   v.struct_name(name, h)   after enter(Node::Struct): the struct's name and name_hash()
///   v.name(const char*)      a struct field or map key follows (for paths in messages)
///   v.index(size_t)          a sequence element follows
///   v.leave()                after a container's elements
/// Visitors that rebuild set `static constexpr bool kRebuilds = true` and get non-const
/// references; the others see the value as it is.
template <class V, class T>
void traverse(V& v, T& x) {
  using U = std::remove_cv_t<T>;
  if constexpr (is_array<U>::value) {
    v.array(x);
  } else if constexpr (std::is_arithmetic_v<U> || std::is_enum_v<U>) {
    v.scalar(x);
  } else if constexpr (std::is_same_v<U, std::string>) {
    v.string(x);
  } else if constexpr (IsVectorOfBool<U>::value) {
    static_assert(kAlwaysFalse<U>,
                  "ff::freeze cannot traverse std::vector<bool> (its elements are bits, not "
                  "bools): use std::vector<uint8_t>, std::vector<int> or an ff::Bool array");
  } else if constexpr (IsVector<U>::value) {
    size_t n = x.size();
    v.enter(Node::Vector, n);
    if constexpr (V::kRebuilds)
      x.resize(n);
    for (size_t i = 0; i < x.size(); ++i) {
      v.index(i);
      traverse(v, x[i]);
    }
    v.leave();
  } else if constexpr (IsStdArray<U>::value) {
    size_t n = x.size();
    v.enter(Node::StdArray, n);
    for (size_t i = 0; i < x.size(); ++i) {
      v.index(i);
      traverse(v, x[i]);
    }
    v.leave();
  } else if constexpr (IsTupleLike<U>::value) {
    size_t n = std::tuple_size_v<U>;
    v.enter(Node::Tuple, n);
    size_t i = 0;
    std::apply([&](auto&... elems) { ((v.index(i++), traverse(v, elems)), ...); }, x);
    v.leave();
  } else if constexpr (IsOptional<U>::value) {
    size_t n = x.has_value() ? 1 : 0;
    v.enter(Node::Optional, n);
    if constexpr (V::kRebuilds) {
      if (n && !x.has_value())
        x.emplace();
      else if (!n)
        x.reset();
    }
    if (x.has_value()) {
      v.index(0);
      traverse(v, *x);
    }
    v.leave();
  } else if constexpr (IsStringMap<U>::value) {
    size_t n = x.size();
    v.enter(Node::Map, n);
    if constexpr (V::kRebuilds) {
      // The keys come from the visitor (a recorded result): rebuild the map from them.
      U rebuilt;
      for (size_t i = 0; i < n; ++i) {
        std::string key;
        v.map_key(key);
        auto& value = rebuilt[key];
        v.name(key.c_str());
        traverse(v, value);
      }
      x = std::move(rebuilt);
    } else {
      for (auto& [key, value] : x) {
        std::string k = key;
        v.map_key(k);
        v.name(key.c_str());
        traverse(v, value);
      }
    }
    v.leave();
  } else if constexpr (IsStruct<U>::value) {
    size_t n = StructFields<U>::kCount;
    v.enter(Node::Struct, n);
    // The name's hash identifies the struct in keys: 8 bytes however long the name.
    constexpr uint64_t kNameHash = name_hash(StructFields<U>::kName);
    v.struct_name(StructFields<U>::kName, kNameHash);
    StructFields<U>::for_each(x, [&](const char* field, auto& value) {
      v.name(field);
      traverse(v, value);
    });
    v.leave();
  } else {
    static_assert(
        kAlwaysFalse<U>,
        "ff::freeze cannot traverse this type (see the instantiation below): use "
        "ff::Array, scalars, std::string, std::vector/array/tuple/pair/optional, "
        "std::map<std::string, T>, or declare the struct with FF_STRUCT(Type, fields...)");
  }
}

/// A visitor that only looks at arrays: everything else it passes by. Derived visitors add
/// array(A&).
struct ArrayOnlyVisitor {
  static constexpr bool kRebuilds = false;

  template <class S>
  void scalar(const S&) {}

  void string(const std::string&) {}

  void enter(Node, size_t&) {}

  void struct_name(const char*, uint64_t) {}

  void map_key(std::string&) {}

  void name(const char*) {}

  void index(size_t) {}

  void leave() {}
};

/// Calls f on every Float and Float64 array in a walkable value (integer and Bool arrays,
/// scalars and strings are skipped): what gradients act on (autodiff.h).
template <class F>
struct FloatLeafVisitor : ArrayOnlyVisitor {
  F& f;

  template <class A>
  void array(A& a) {
    if constexpr (kDifferentiable<typename A::Value>)
      f(a);
  }
};

/// Whether traverse() walks a T (a type it refuses, or one holding such, is not).
template <class T>
constexpr bool walkable() {
  using U = std::remove_cvref_t<T>;
  if constexpr (is_array<U>::value || std::is_arithmetic_v<U> || std::is_enum_v<U> ||
                std::is_same_v<U, std::string>)
    return true;
  else if constexpr (IsVectorOfBool<U>::value)
    return false;
  else if constexpr (IsVector<U>::value || IsStdArray<U>::value || IsOptional<U>::value)
    return walkable<typename U::value_type>();
  else if constexpr (IsStringMap<U>::value)
    return walkable<typename U::mapped_type>();
  else if constexpr (IsTupleLike<U>::value)
    return []<size_t... I>(std::index_sequence<I...>) {
      return (walkable<std::tuple_element_t<I, U>>() && ...);
    }
  (std::make_index_sequence<std::tuple_size_v<U>>());
  else return IsStruct<U>::value;
}

template <class T, class F>
void for_each_float_array(T& x, F&& f) {
  FloatLeafVisitor<F> v{{}, f};
  traverse(v, x);
}

}  // namespace detail
}  // namespace ff

// FF_STRUCT(Type, field, ...): makes a struct (up to 32 fields) traversable by ff::freeze. At
// global namespace scope, after the struct's definition; `Type` may be qualified.
#define FF_STRUCT_EXPAND(x) x
#define FF_STRUCT_COUNT_(_1, _2, _3, _4, _5, _6, _7, _8, _9, _10, _11, _12, _13, _14, _15, _16, \
                         _17, _18, _19, _20, _21, _22, _23, _24, _25, _26, _27, _28, _29, _30,  \
                         _31, _32, N, ...)                                                      \
  N
#define FF_STRUCT_COUNT(...)                                                                      \
  FF_STRUCT_EXPAND(FF_STRUCT_COUNT_(__VA_ARGS__, 32, 31, 30, 29, 28, 27, 26, 25, 24, 23, 22, 21,  \
                                    20, 19, 18, 17, 16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, \
                                    3, 2, 1))
#define FF_STRUCT_F(f) fn(#f, s.f);
#define FF_STRUCT_1(f) FF_STRUCT_F(f)
#define FF_STRUCT_2(f, ...) FF_STRUCT_F(f) FF_STRUCT_EXPAND(FF_STRUCT_1(__VA_ARGS__))
#define FF_STRUCT_3(f, ...) FF_STRUCT_F(f) FF_STRUCT_EXPAND(FF_STRUCT_2(__VA_ARGS__))
#define FF_STRUCT_4(f, ...) FF_STRUCT_F(f) FF_STRUCT_EXPAND(FF_STRUCT_3(__VA_ARGS__))
#define FF_STRUCT_5(f, ...) FF_STRUCT_F(f) FF_STRUCT_EXPAND(FF_STRUCT_4(__VA_ARGS__))
#define FF_STRUCT_6(f, ...) FF_STRUCT_F(f) FF_STRUCT_EXPAND(FF_STRUCT_5(__VA_ARGS__))
#define FF_STRUCT_7(f, ...) FF_STRUCT_F(f) FF_STRUCT_EXPAND(FF_STRUCT_6(__VA_ARGS__))
#define FF_STRUCT_8(f, ...) FF_STRUCT_F(f) FF_STRUCT_EXPAND(FF_STRUCT_7(__VA_ARGS__))
#define FF_STRUCT_9(f, ...) FF_STRUCT_F(f) FF_STRUCT_EXPAND(FF_STRUCT_8(__VA_ARGS__))
#define FF_STRUCT_10(f, ...) FF_STRUCT_F(f) FF_STRUCT_EXPAND(FF_STRUCT_9(__VA_ARGS__))
#define FF_STRUCT_11(f, ...) FF_STRUCT_F(f) FF_STRUCT_EXPAND(FF_STRUCT_10(__VA_ARGS__))
#define FF_STRUCT_12(f, ...) FF_STRUCT_F(f) FF_STRUCT_EXPAND(FF_STRUCT_11(__VA_ARGS__))
#define FF_STRUCT_13(f, ...) FF_STRUCT_F(f) FF_STRUCT_EXPAND(FF_STRUCT_12(__VA_ARGS__))
#define FF_STRUCT_14(f, ...) FF_STRUCT_F(f) FF_STRUCT_EXPAND(FF_STRUCT_13(__VA_ARGS__))
#define FF_STRUCT_15(f, ...) FF_STRUCT_F(f) FF_STRUCT_EXPAND(FF_STRUCT_14(__VA_ARGS__))
#define FF_STRUCT_16(f, ...) FF_STRUCT_F(f) FF_STRUCT_EXPAND(FF_STRUCT_15(__VA_ARGS__))
#define FF_STRUCT_17(f, ...) FF_STRUCT_F(f) FF_STRUCT_EXPAND(FF_STRUCT_16(__VA_ARGS__))
#define FF_STRUCT_18(f, ...) FF_STRUCT_F(f) FF_STRUCT_EXPAND(FF_STRUCT_17(__VA_ARGS__))
#define FF_STRUCT_19(f, ...) FF_STRUCT_F(f) FF_STRUCT_EXPAND(FF_STRUCT_18(__VA_ARGS__))
#define FF_STRUCT_20(f, ...) FF_STRUCT_F(f) FF_STRUCT_EXPAND(FF_STRUCT_19(__VA_ARGS__))
#define FF_STRUCT_21(f, ...) FF_STRUCT_F(f) FF_STRUCT_EXPAND(FF_STRUCT_20(__VA_ARGS__))
#define FF_STRUCT_22(f, ...) FF_STRUCT_F(f) FF_STRUCT_EXPAND(FF_STRUCT_21(__VA_ARGS__))
#define FF_STRUCT_23(f, ...) FF_STRUCT_F(f) FF_STRUCT_EXPAND(FF_STRUCT_22(__VA_ARGS__))
#define FF_STRUCT_24(f, ...) FF_STRUCT_F(f) FF_STRUCT_EXPAND(FF_STRUCT_23(__VA_ARGS__))
#define FF_STRUCT_25(f, ...) FF_STRUCT_F(f) FF_STRUCT_EXPAND(FF_STRUCT_24(__VA_ARGS__))
#define FF_STRUCT_26(f, ...) FF_STRUCT_F(f) FF_STRUCT_EXPAND(FF_STRUCT_25(__VA_ARGS__))
#define FF_STRUCT_27(f, ...) FF_STRUCT_F(f) FF_STRUCT_EXPAND(FF_STRUCT_26(__VA_ARGS__))
#define FF_STRUCT_28(f, ...) FF_STRUCT_F(f) FF_STRUCT_EXPAND(FF_STRUCT_27(__VA_ARGS__))
#define FF_STRUCT_29(f, ...) FF_STRUCT_F(f) FF_STRUCT_EXPAND(FF_STRUCT_28(__VA_ARGS__))
#define FF_STRUCT_30(f, ...) FF_STRUCT_F(f) FF_STRUCT_EXPAND(FF_STRUCT_29(__VA_ARGS__))
#define FF_STRUCT_31(f, ...) FF_STRUCT_F(f) FF_STRUCT_EXPAND(FF_STRUCT_30(__VA_ARGS__))
#define FF_STRUCT_32(f, ...) FF_STRUCT_F(f) FF_STRUCT_EXPAND(FF_STRUCT_31(__VA_ARGS__))
#define FF_STRUCT_CAT2(a, b) a##b
#define FF_STRUCT_CAT(a, b) FF_STRUCT_CAT2(a, b)

#define FF_STRUCT(Type, ...)                                                                 \
  template <>                                                                                \
  struct ff::StructFields<Type> {                                                            \
    static constexpr const char* kName = #Type;                                              \
    static constexpr size_t kCount = FF_STRUCT_COUNT(__VA_ARGS__);                           \
    template <class S, class F>                                                              \
    static void for_each(S& s, F&& fn) {                                                     \
      FF_STRUCT_EXPAND(FF_STRUCT_CAT(FF_STRUCT_, FF_STRUCT_COUNT(__VA_ARGS__))(__VA_ARGS__)) \
    }                                                                                        \
  };
