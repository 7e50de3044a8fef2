// A recording with one Collective op of each kind, built by hand (recording one needs MPI and
// several ranks): the format tests' and the fuzzer's sample of format 1.6's Collective op.
#pragma once

#include "recorder/recording.h"

namespace ff_samples {

/// Input s0 (float32, n elements) on rank `rank` of `ranks`; outputs all_reduce(s0, Add),
/// all_gather(s0), broadcast(s0, root 1), sendrecv(s0, to rank + 1, from rank - 1) (kNone at
/// the ends).
inline ff::rec::RecordingData collective_recording(int rank = 0, int ranks = 2) {
  using namespace ff::rec;
  RecordingData d;
  d.backend = "llvm";
  d.slots.push_back(Slot{ff::ScalarType::Float32, SlotOrigin::Input, 0, 4, kNone});
  d.inputs.push_back(0);
  d.exprs.push_back(ExprNode{ff::SizeOp::BufferSize, 0, 0, kNone, kNone});  // size(s0)
  auto kinds = {CollectiveKind::AllReduce, CollectiveKind::AllGather, CollectiveKind::Broadcast,
                CollectiveKind::SendRecv};
  for (CollectiveKind kind : kinds) {
    auto slot = static_cast<uint32_t>(d.slots.size());
    auto at = static_cast<uint32_t>(d.ops.size());
    d.slots.push_back(Slot{ff::ScalarType::Float32, SlotOrigin::Alloc, at, 4, 0});
    Op alloc;
    alloc.code = OpCode::Alloc;
    alloc.type = ff::ScalarType::Float32;
    alloc.dst = slot;
    alloc.size_expr = 0;
    d.ops.push_back(alloc);
    Op op;
    op.code = OpCode::Collective;
    op.sub = static_cast<uint8_t>(kind);
    op.type = ff::ScalarType::Float32;
    op.src = 0;
    op.dst = slot;
    op.size_expr = 0;
    op.elem_size = static_cast<uint32_t>(ranks);
    CollectivePeers peers;
    peers.rank = rank;
    if (kind == CollectiveKind::Broadcast)
      peers.peer = 1;
    if (kind == CollectiveKind::SendRecv) {
      peers.peer = rank + 1 < ranks ? rank + 1 : -1;
      peers.source = rank > 0 ? rank - 1 : -1;
    }
    op.value = peers.pack();
    d.ops.push_back(op);
    d.outputs.push_back(RecordingData::Output{slot});
  }
  return d;
}

}  // namespace ff_samples
