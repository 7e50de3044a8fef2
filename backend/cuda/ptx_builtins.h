// The backend's own kernels, written as PTX in the tree (no nvcc at build time): fill with a
// 1/2/4/8-byte pattern, device-to-device copy, reduce, prefix sum and compress. Every kernel
// runs with kBuiltinBlock threads per block and any grid size up to kMaxBuiltinBlocks.
//
// Entries and their parameters (each .u64):
//   ff_fill(n, ptr, value)                        ptr[i] = value for i < n (elements of elem_size)
//   ff_copy(n_bytes, dst, src)                    memcpy; 8 bytes at a time when all are aligned
//   ff_reduce(n, in, out, partials, counter)      one launch: each block reduces a grid-stride
//       share into partials[block]; the last block to finish (a ticket from an atomic add on
//       *counter, which it resets to 0) combines them into out[0]. n == 0 gives the identity.
//   ff_scan_partials(n, in, partials, chunk)      block b sums in[b*chunk, (b+1)*chunk)
//   ff_scan_apply(n, in, out, partials, chunk)    block b adds the sum of partials[0, b) and
//       scans its chunk tile by tile (in place is allowed)
//   ff_compress_count(n, mask, counts, chunk)     block b counts the true bytes of its chunk
//   ff_compress_write(n, mask, out, counts, chunk, total)
//       block b writes the indices of its true entries at the sum of counts[0, b); the last
//       block stores the total count (u64) to *total.
// Reductions follow host_algorithms.h: Min/Max over floats ignore NaN (all NaN gives NaN), Bool
// And/Min are "all", Or/Max "any"; integer sums and products wrap.
#pragma once

#include <cstdint>
#include <string>

#include "backend/backend.h"
#include "backend/cuda/ptx_writer.h"

namespace ff::cuda_backend {

inline constexpr unsigned kBuiltinBlock = 256;
inline constexpr unsigned kMaxBuiltinBlocks = 1024;

/// ff_fill for elements of 1, 2, 4 or 8 bytes.
std::string ptx_fill(unsigned elem_size, const PtxTarget& target);
/// ff_copy.
std::string ptx_copy(const PtxTarget& target);
/// ff_reduce for `op` over `type` (a combination host_reduce accepts).
std::string ptx_reduce(ReduceOp op, ScalarType type, const PtxTarget& target);
/// ff_scan_partials and ff_scan_apply for a numeric `type`.
std::string ptx_prefix_sum(ScalarType type, bool exclusive, const PtxTarget& target);
/// ff_compress_count and ff_compress_write.
std::string ptx_compress(const PtxTarget& target);

/// Bytes of one partial result of ff_reduce / ff_scan_partials for `type` (Bool: 4).
unsigned accumulator_bytes(ScalarType type);

/// The grid of a built-in over n elements: `grid` blocks (1 <= grid <= max_blocks) and, for
/// the chunked kernels (scan, compress), the elements per block (a multiple of kBuiltinBlock;
/// every block's chunk starts below n unless n == 0).
struct BuiltinGrid {
  unsigned grid = 1;
  uint64_t chunk = kBuiltinBlock;
};

BuiltinGrid reduce_grid(uint64_t n, unsigned max_blocks);
BuiltinGrid chunked_grid(uint64_t n, unsigned max_blocks);

}  // namespace ff::cuda_backend
