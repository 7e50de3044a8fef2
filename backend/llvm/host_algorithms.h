// The backend's native array algorithms on host memory: reduce, prefix sum, compress, fill and
// copy, split over the thread pool when the array is large.
#pragma once

#include <cstddef>
#include <cstdint>

#include "backend/backend.h"
#include "backend/llvm/thread_pool.h"

namespace ff::llvm_backend {

/// out[0] = op over in[0, count); the identity when count == 0. Sum/Prod/Min/Max need a
/// numeric type; And/Or are bitwise on integers and logical on Bool, where Min/Max mean
/// And/Or. Float Min/Max ignore NaN entries. Throws ff::BackendError for other combinations.
void host_reduce(ThreadPool& pool, ReduceOp op, ScalarType type, const void* in, size_t count,
                 void* out);

/// Inclusive or exclusive running sum (numeric types; integers wrap); `out` may equal `in`.
/// Throws ff::BackendError for Bool.
void host_prefix_sum(ThreadPool& pool, ScalarType type, bool exclusive, const void* in,
                     size_t count, void* out);

/// Indices (UInt32) of the nonzero bytes of mask[0, count), in order; returns how many.
/// Throws ff::BackendError if count exceeds the UInt32 range.
size_t host_compress(ThreadPool& pool, const uint8_t* mask, size_t count, uint32_t* out);

/// Fills `count` elements of `elem_size` (1, 2, 4, 8) bytes with the low bytes of `value`.
/// Throws ff::BackendError for another element size.
void host_fill(ThreadPool& pool, void* ptr, size_t count, uint32_t elem_size, uint64_t value);

/// memcpy, split over the pool when large.
void host_copy(ThreadPool& pool, void* dst, const void* src, size_t bytes);

}  // namespace ff::llvm_backend
