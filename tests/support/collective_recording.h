// A recording with one Collective op of each kind, built by hand (recording one needs MPI and
// several ranks): the format tests' and the fuzzer's sample of format 1.6's Collective op and
// format 1.7's relative peers and rank expressions.
#pragma once

#include "recorder/recording.h"

namespace ff_samples {

/// Input s0 (float32, n elements) on rank `rank` of `ranks`; outputs all_reduce(s0, Add),
/// all_gather(s0), broadcast(s0, root 1), sendrecv(s0, to rank + 1, from rank - 1) (kNone at
/// the ends, absolute peers), the same sendrecv with relative peers (format 1.7), and rank +
/// ranks ones (a size expression over the rank, format 1.7).
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
  // Format 1.7: a sendrecv with relative peers, and a fill of rank + ranks elements.
  auto slot = static_cast<uint32_t>(d.slots.size());
  d.slots.push_back(
      Slot{ff::ScalarType::Float32, SlotOrigin::Alloc, static_cast<uint32_t>(d.ops.size()), 4, 0});
  Op alloc;
  alloc.code = OpCode::Alloc;
  alloc.type = ff::ScalarType::Float32;
  alloc.dst = slot;
  alloc.size_expr = 0;
  d.ops.push_back(alloc);
  Op relative;
  relative.code = OpCode::Collective;
  relative.sub = static_cast<uint8_t>(CollectiveKind::SendRecv);
  relative.type = ff::ScalarType::Float32;
  relative.src = 0;
  relative.dst = slot;
  relative.size_expr = 0;
  relative.elem_size = static_cast<uint32_t>(ranks);
  CollectivePeers peers;
  peers.rank = rank;
  peers.peer = +1;
  peers.peer_mode = PeerMode::Relative;
  peers.source = -1;
  peers.source_mode = PeerMode::Relative;
  relative.value = peers.pack();
  relative.flag = peers.modes();
  d.ops.push_back(relative);
  d.outputs.push_back(RecordingData::Output{slot});
  d.exprs.push_back(ExprNode{ff::SizeOp::Rank, 0, kNone, kNone, kNone});   // 1: rank
  d.exprs.push_back(ExprNode{ff::SizeOp::Ranks, 0, kNone, kNone, kNone});  // 2: ranks
  d.exprs.push_back(ExprNode{ff::SizeOp::Add, 0, kNone, 1, 2});            // 3: rank + ranks
  slot = static_cast<uint32_t>(d.slots.size());
  d.slots.push_back(Slot{ff::ScalarType::Float32, SlotOrigin::Alloc,
                         static_cast<uint32_t>(d.ops.size()), static_cast<uint64_t>(rank + ranks),
                         3});
  alloc.dst = slot;
  alloc.size_expr = 3;
  d.ops.push_back(alloc);
  Op fill;
  fill.code = OpCode::Fill;
  fill.type = ff::ScalarType::Float32;
  fill.dst = slot;
  fill.size_expr = 3;
  fill.elem_size = 4;
  fill.value = 0x3f800000;  // 1.0f
  d.ops.push_back(fill);
  d.outputs.push_back(RecordingData::Output{slot});
  return d;
}

}  // namespace ff_samples
