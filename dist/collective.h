// The collectives of ff::dist as plain data, shared by the backends (which run them on their
// buffers) and the MPI module (which runs them on host memory).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "freezeframe/detail/collective_kind.h"
#include "freezeframe/reduce_op.h"
#include "freezeframe/scalar_type.h"

namespace ff::dist_impl {

using detail::CollectiveKind;
using detail::kNoPeer;
using detail::to_string;

/// One collective call on this rank. `in`/`count` is this rank's part; `out`/`out_count` the
/// result, whose count collective_count() gives: `count` for AllReduce, the sum of every rank's
/// count for AllGather, the root's count for Broadcast, what `source` sends for SendRecv.
struct Collective {
  CollectiveKind kind = CollectiveKind::AllReduce;
  ScalarType type = ScalarType::Float32;
  ReduceOp op = ReduceOp::Add;              // AllReduce
  int root = 0;                             // Broadcast
  int dest = kNoPeer;                       // SendRecv: resolved ranks (kNoPeer: none)
  int source = kNoPeer;                     // SendRecv
  detail::PeerSpec dest_spec, source_spec;  // SendRecv: as the program named them (recorded)
  bool check = false;  // FF_DEBUG: every rank must make the same call (kind, op, type,
                       // root, and an all_reduce's count): checked before it runs
  const void* in = nullptr;
  size_t count = 0;
  void* out = nullptr;
  size_t out_count = 0;
  int rank = 0;   // this process's rank and the number of ranks (filled in by the tracer, for
  int ranks = 1;  // the recorder: a recording replays only with as many ranks)
  // AllGather: every rank's count, as collective_count exchanged them; the collective reuses
  // them instead of exchanging again (the same Collective goes to both calls).
  mutable std::vector<uint64_t> counts;
};

}  // namespace ff::dist_impl
