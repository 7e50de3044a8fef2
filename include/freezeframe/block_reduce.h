// Block reductions: each consecutive block of `block` elements reduced to one (ff::block_sum,
// ff::block_reduce). A scatter-reduction of every element into its block's slot
// (scatter_reduce), so every backend runs them as one kernel, the CPU without atomics
// (docs/llvm-backend-parallel.md), and recordings and frozen functions replay them at any
// size like any other kernel.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <type_traits>

#include "freezeframe/array.h"
#include "freezeframe/errors.h"
#include "freezeframe/reduce_op.h"

namespace ff {
namespace detail {

/// Block i of `a` reduced with `op` into element i of a ceil(n / block) array.
template <class T>
Array<T> block_reduce_impl(ReduceOp op, const Array<T>& a, uint64_t block) {
  if (block == 0)
    throw Error("block_reduce: the block size is 0 (it must be positive)");
  // The size as it is now, read without pinning a recording to it.
  uint64_t now = var_size(a.id());
  if (now > uint64_t{UINT32_MAX})
    throw Error("block_reduce: an array of " + std::to_string(now) +
                " elements is past the 2^32 - 1 that block indices count");
  // Past 2^32 - 1 every element is in block 0 anyway: the divisor fits 32 bits.
  const auto b = static_cast<uint32_t>(std::min<uint64_t>(block, UINT32_MAX));
  Size n = width(a);
  Array<T> out = full<Array<T>>(reduce_identity<T>(op), (n + (b - 1)) / b);
  UInt32 slot = arange<UInt32>(n);
  if (b != 1)
    slot = slot / b;
  // op was checked against T where the caller named it (ReduceOpFor).
  Bool all(true);
  scatter_impl(out, a, slot, all, true, op);
  return out;
}

}  // namespace detail

/// Each consecutive block of `block` elements of `a` reduced with `op`, as scatter_reduce
/// combines (integers wrap; float Min/Max ignore NaN and count -0 below +0; And/Or only for
/// integers: on floats they do not compile): element i of the result reduces elements
/// [i * block, min((i + 1) * block, n)), so the last block may be short and the result has
/// ceil(n / block) elements (none for an empty `a`). `block` must be positive (ff::Error
/// otherwise); like any C++ scalar it is part of the kernel, and a frozen function keys on
/// it. Float sums and products are rounded in lane order on one thread; split over threads,
/// the partial results of the parts are combined at the end.
template <class T>

requires(!std::is_same_v<T, bool>) Array<T> block_reduce(std::type_identity_t<ReduceOpFor<T>> op,
                                                         const Array<T>& a, uint64_t block) {
  return detail::block_reduce_impl(op.op, a, block);
}

/// block_reduce(ReduceOp::Add, a, block).
template <class T>

requires(!std::is_same_v<T, bool>) Array<T> block_sum(const Array<T>& a, uint64_t block) {
  return detail::block_reduce_impl(ReduceOp::Add, a, block);
}

}  // namespace ff
