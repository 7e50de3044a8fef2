// Host reduce / prefix sum / compress / fill / copy. Large arrays are cut into at most
// kMaxBlocks blocks of at least kMinBlockBytes: reductions combine per-block partials, scans and
// compress run two passes (per-block totals, then each block with its offset).
#include "backend/llvm/host_algorithms.h"

#include <algorithm>
#include <cmath>
#include <concepts>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>

#include "freezeframe/errors.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace ff::llvm_backend {
namespace {

constexpr size_t kMinBlockBytes = 64 * 1024;
constexpr size_t kMaxBlocks = 64;

struct Blocks {
  size_t n_blocks, block_elems;
  bool wake;  // worth waking sleeping workers (~50 us)
};

// Blocks of at least `min_elems` elements; one block (no pool) for small arrays.
Blocks split(const ThreadPool& pool, size_t count, size_t min_elems) {
  if (pool.n_threads() == 1 || count < 2 * min_elems)
    return {1, count, false};
  size_t n = std::min({kMaxBlocks, size_t{pool.n_threads()} * 4, count / min_elems});
  size_t per = ((count + n - 1) / n + 63) / 64 * 64;
  return {(count + per - 1) / per, per, count >= 32 * min_elems};
}

// Runs f(begin, end, block) over the blocks of `count` elements.
template <class F>
void for_blocks(ThreadPool& pool, const Blocks& b, size_t count, F&& f) {
  if (b.n_blocks == 1) {
    f(size_t{0}, count, size_t{0});
    return;
  }
  pool.parallel_for(
      b.n_blocks,
      [&](size_t k) {
        size_t begin = k * b.block_elems;
        f(begin, std::min(count, begin + b.block_elems), k);
      },
      b.wake);
}

// Integer sums and products wrap: compute them in the unsigned type.
template <class T>
struct ArithOf {
  using type = T;
};

template <std::integral T>
struct ArithOf<T> {
  using type = std::make_unsigned_t<T>;
};
template <class T>
using Arith = typename ArithOf<T>::type;

// Several independent accumulators so the compiler can keep a vector of them in flight.
template <class T, class F>
T reduce_range(const T* p, size_t n, T identity, F f) {
  constexpr size_t kLanes = 64 / sizeof(T);
  T acc[kLanes];
  std::fill_n(acc, kLanes, identity);
  size_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (size_t j = 0; j < kLanes; ++j)
      acc[j] = f(acc[j], p[i + j]);
  T r = identity;
  for (size_t j = 0; j < kLanes; ++j)
    r = f(r, acc[j]);
  for (; i < n; ++i)
    r = f(r, p[i]);
  return r;
}

template <class T, class F>
void reduce_with(ThreadPool& pool, const void* in, size_t count, void* out, T identity, F f) {
  const T* p = static_cast<const T*>(in);
  Blocks b = split(pool, count, kMinBlockBytes / sizeof(T));
  T partial[kMaxBlocks];
  for_blocks(pool, b, count, [&](size_t begin, size_t end, size_t k) {
    partial[k] = reduce_range(p + begin, end - begin, identity, f);
  });
  T r = identity;
  for (size_t k = 0; k < b.n_blocks; ++k)
    r = f(r, partial[k]);
  std::memcpy(out, &r, sizeof(T));
}

/// Like std::fmin/fmax, a min/max over only NaNs is NaN (not the identity the NaN-skipping
/// loop leaves). Scans only when the result is the identity, and stops at the first number.
template <class T>
void nan_if_all_nan(const void* in, size_t count, void* out, T identity) {
  if constexpr (std::is_floating_point_v<T>) {
    T r;
    std::memcpy(&r, out, sizeof(T));
    if (count == 0 || r != identity)
      return;
    const T* p = static_cast<const T*>(in);
    for (size_t i = 0; i < count; ++i)
      if (!std::isnan(p[i]))
        return;
    r = std::numeric_limits<T>::quiet_NaN();
    std::memcpy(out, &r, sizeof(T));
  } else {
    (void)in, (void)count, (void)out, (void)identity;
  }
}

template <class T>
void reduce_typed(ThreadPool& pool, ReduceOp op, ScalarType type, const void* in, size_t count,
                  void* out) {
  using A = Arith<T>;
  using L = std::numeric_limits<T>;
  switch (op) {
    case ReduceOp::Add:
      return reduce_with<A>(pool, in, count, out, A(0), [](A a, A x) { return A(a + x); });
    case ReduceOp::Mul:
      return reduce_with<A>(pool, in, count, out, A(1), [](A a, A x) { return A(a * x); });
    case ReduceOp::Min: {
      // `x < a ? x : a` skips NaN entries (and maps to minps/vpminsd).
      T id = L::has_infinity ? L::infinity() : L::max();
      reduce_with<T>(pool, in, count, out, id, [](T a, T x) { return x < a ? x : a; });
      return nan_if_all_nan<T>(in, count, out, id);
    }
    case ReduceOp::Max: {
      T id = L::has_infinity ? -L::infinity() : L::lowest();
      reduce_with<T>(pool, in, count, out, id, [](T a, T x) { return x > a ? x : a; });
      return nan_if_all_nan<T>(in, count, out, id);
    }
    case ReduceOp::And:
    case ReduceOp::Or:
      if constexpr (std::is_integral_v<T>) {
        if (op == ReduceOp::And)
          return reduce_with<A>(pool, in, count, out, A(~A(0)), [](A a, A x) { return A(a & x); });
        return reduce_with<A>(pool, in, count, out, A(0), [](A a, A x) { return A(a | x); });
      }
      break;
  }
  throw BackendError(std::string("llvm backend: reduce ") + to_string(op) + " is not defined for " +
                     to_string(type));
}

void reduce_bool(ThreadPool& pool, ReduceOp op, const void* in, size_t count, void* out) {
  // Logical and/or over bytes that are 0 or 1 (any nonzero byte counts as true).
  if (op == ReduceOp::And || op == ReduceOp::Min) {
    reduce_with<uint8_t>(pool, in, count, out, uint8_t(1),
                         [](uint8_t a, uint8_t x) { return uint8_t(a & (x != 0)); });
  } else if (op == ReduceOp::Or || op == ReduceOp::Max) {
    reduce_with<uint8_t>(pool, in, count, out, uint8_t(0),
                         [](uint8_t a, uint8_t x) { return uint8_t(a | (x != 0)); });
  } else {
    throw BackendError(std::string("llvm backend: reduce ") + to_string(op) +
                       " is not defined for bool (use and/or)");
  }
}

template <class T>
T scan_range(const T* in, T* out, size_t n, T carry, bool exclusive) {
  if (exclusive) {
    for (size_t i = 0; i < n; ++i) {
      T v = in[i];  // read before writing: `out` may alias `in`
      out[i] = carry;
      carry = T(carry + v);
    }
  } else {
    for (size_t i = 0; i < n; ++i) {
      carry = T(carry + in[i]);
      out[i] = carry;
    }
  }
  return carry;
}

template <class T>
void prefix_sum_typed(ThreadPool& pool, bool exclusive, const void* in_v, size_t count,
                      void* out_v) {
  using A = Arith<T>;
  const A* in = static_cast<const A*>(in_v);
  A* out = static_cast<A*>(out_v);
  Blocks b = split(pool, count, kMinBlockBytes / sizeof(A));
  if (b.n_blocks == 1) {
    scan_range<A>(in, out, count, A(0), exclusive);
    return;
  }
  A offset[kMaxBlocks];
  for_blocks(pool, b, count, [&](size_t begin, size_t end, size_t k) {
    offset[k] = reduce_range(in + begin, end - begin, A(0), [](A a, A x) { return A(a + x); });
  });
  A carry = A(0);
  for (size_t k = 0; k < b.n_blocks; ++k) {
    A total = offset[k];
    offset[k] = carry;
    carry = A(carry + total);
  }
  for_blocks(pool, b, count, [&](size_t begin, size_t end, size_t k) {
    scan_range<A>(in + begin, out + begin, end - begin, offset[k], exclusive);
  });
}

size_t count_true(const uint8_t* m, size_t n) {
  size_t c = 0, i = 0;
#if defined(__SSE2__)
  const __m128i zero = _mm_setzero_si128();
  for (; i + 16 <= n; i += 16) {
    __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(m + i));
    c += static_cast<size_t>(16 - __builtin_popcount(_mm_movemask_epi8(_mm_cmpeq_epi8(v, zero))));
  }
#endif
  for (; i < n; ++i)
    c += m[i] != 0;
  return c;
}

uint32_t* write_true(const uint8_t* m, size_t begin, size_t end, uint32_t* out) {
  size_t i = begin;
#if defined(__SSE2__)
  const __m128i zero = _mm_setzero_si128();
  for (; i + 16 <= end; i += 16) {
    __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(m + i));
    unsigned bits = ~static_cast<unsigned>(_mm_movemask_epi8(_mm_cmpeq_epi8(v, zero))) & 0xFFFFu;
    while (bits) {
      *out++ = static_cast<uint32_t>(i + static_cast<unsigned>(__builtin_ctz(bits)));
      bits &= bits - 1;
    }
  }
#endif
  for (; i < end; ++i)
    if (m[i])
      *out++ = static_cast<uint32_t>(i);
  return out;
}

template <class T>
void fill_typed(ThreadPool& pool, void* ptr, size_t count, uint64_t value) {
  T v;
  std::memcpy(&v, &value, sizeof(T));  // the low bytes (little-endian)
  T* p = static_cast<T*>(ptr);
  Blocks b = split(pool, count, 4 * kMinBlockBytes / sizeof(T));  // fills are cheap per byte
  for_blocks(pool, b, count,
             [&](size_t begin, size_t end, size_t) { std::fill(p + begin, p + end, v); });
}

}  // namespace

void host_reduce(ThreadPool& pool, ReduceOp op, ScalarType type, const void* in, size_t count,
                 void* out) {
  switch (type) {
    case ScalarType::Bool:
      return reduce_bool(pool, op, in, count, out);
    case ScalarType::Int32:
      return reduce_typed<int32_t>(pool, op, type, in, count, out);
    case ScalarType::UInt32:
      return reduce_typed<uint32_t>(pool, op, type, in, count, out);
    case ScalarType::Int64:
      return reduce_typed<int64_t>(pool, op, type, in, count, out);
    case ScalarType::UInt64:
      return reduce_typed<uint64_t>(pool, op, type, in, count, out);
    case ScalarType::Float32:
      return reduce_typed<float>(pool, op, type, in, count, out);
    case ScalarType::Float64:
      return reduce_typed<double>(pool, op, type, in, count, out);
  }
  throw BackendError("llvm backend: reduce of an invalid type");
}

void host_prefix_sum(ThreadPool& pool, ScalarType type, bool exclusive, const void* in,
                     size_t count, void* out) {
  switch (type) {
    case ScalarType::Int32:
      return prefix_sum_typed<int32_t>(pool, exclusive, in, count, out);
    case ScalarType::UInt32:
      return prefix_sum_typed<uint32_t>(pool, exclusive, in, count, out);
    case ScalarType::Int64:
      return prefix_sum_typed<int64_t>(pool, exclusive, in, count, out);
    case ScalarType::UInt64:
      return prefix_sum_typed<uint64_t>(pool, exclusive, in, count, out);
    case ScalarType::Float32:
      return prefix_sum_typed<float>(pool, exclusive, in, count, out);
    case ScalarType::Float64:
      return prefix_sum_typed<double>(pool, exclusive, in, count, out);
    default:
      break;
  }
  throw BackendError(std::string("llvm backend: prefix_sum is not defined for ") + to_string(type));
}

size_t host_compress(ThreadPool& pool, const uint8_t* mask, size_t count, uint32_t* out) {
  if (count > size_t{std::numeric_limits<uint32_t>::max()} + 1)
    throw BackendError("llvm backend: compress of " + std::to_string(count) +
                       " entries exceeds the uint32 index range");
  Blocks b = split(pool, count, kMinBlockBytes / 4);  // index writes dominate
  if (b.n_blocks == 1)
    return static_cast<size_t>(write_true(mask, 0, count, out) - out);
  size_t offset[kMaxBlocks];
  for_blocks(pool, b, count, [&](size_t begin, size_t end, size_t k) {
    offset[k] = count_true(mask + begin, end - begin);
  });
  size_t total = 0;
  for (size_t k = 0; k < b.n_blocks; ++k) {
    size_t n = offset[k];
    offset[k] = total;
    total += n;
  }
  for_blocks(pool, b, count, [&](size_t begin, size_t end, size_t k) {
    write_true(mask, begin, end, out + offset[k]);
  });
  return total;
}

void host_fill(ThreadPool& pool, void* ptr, size_t count, uint32_t elem_size, uint64_t value) {
  switch (elem_size) {
    case 1:
      return fill_typed<uint8_t>(pool, ptr, count, value);
    case 2:
      return fill_typed<uint16_t>(pool, ptr, count, value);
    case 4:
      return fill_typed<uint32_t>(pool, ptr, count, value);
    case 8:
      return fill_typed<uint64_t>(pool, ptr, count, value);
    default:
      throw BackendError("llvm backend: fill element size " + std::to_string(elem_size) +
                         " is not 1, 2, 4 or 8");
  }
}

void host_copy(ThreadPool& pool, void* dst, const void* src, size_t bytes) {
  if (bytes == 0)
    return;
  auto* d = static_cast<std::byte*>(dst);
  auto* s = static_cast<const std::byte*>(src);
  Blocks b = split(pool, bytes, 16 * kMinBlockBytes);  // memcpy is cheap per byte
  for_blocks(pool, b, bytes, [&](size_t begin, size_t end, size_t) {
    std::memcpy(d + begin, s + begin, end - begin);
  });
}

}  // namespace ff::llvm_backend
