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
  d.exprs.push_back(ExprNode{ff::SizeOp::BufferSize, 0, 0, kNone, kNone});  // 0: size(s0)
  d.exprs.push_back(ExprNode{ff::SizeOp::Rank, 0, kNone, kNone, kNone});    // 1: rank
  d.exprs.push_back(ExprNode{ff::SizeOp::Ranks, 0, kNone, kNone, kNone});   // 2: ranks
  d.exprs.push_back(ExprNode{ff::SizeOp::Add, 0, kNone, 1, 2});             // 3: rank + ranks
  // A fresh float32 slot of `size` elements (expression `expr`), allocated and an output.
  auto alloc_output = [&](uint64_t size, uint32_t expr) {
    auto slot = static_cast<uint32_t>(d.slots.size());
    d.slots.push_back(Slot{ff::ScalarType::Float32, SlotOrigin::Alloc,
                           static_cast<uint32_t>(d.ops.size()), size, expr});
    Op alloc;
    alloc.code = OpCode::Alloc;
    alloc.type = ff::ScalarType::Float32;
    alloc.dst = slot;
    alloc.size_expr = expr;
    d.ops.push_back(alloc);
    d.outputs.push_back(RecordingData::Output{slot});
    return slot;
  };
  auto collective = [&](CollectiveKind kind, CollectivePeers peers) {
    Op op;
    op.code = OpCode::Collective;
    op.sub = static_cast<uint8_t>(kind);
    op.type = ff::ScalarType::Float32;
    op.src = 0;
    op.dst = alloc_output(4, 0);
    op.size_expr = 0;
    op.elem_size = static_cast<uint32_t>(ranks);
    peers.rank = rank;
    op.value = peers.pack();
    if (kind == CollectiveKind::SendRecv)
      op.flag = peers.modes();
    d.ops.push_back(op);
  };
  collective(CollectiveKind::AllReduce, {});
  collective(CollectiveKind::AllGather, {});
  CollectivePeers root;
  root.peer = 1;
  collective(CollectiveKind::Broadcast, root);
  CollectivePeers line;
  line.peer = rank + 1 < ranks ? rank + 1 : -1;
  line.source = rank > 0 ? rank - 1 : -1;
  collective(CollectiveKind::SendRecv, line);
  // Format 1.7: a sendrecv with relative peers, and a fill of rank + ranks elements.
  CollectivePeers relative;
  relative.peer = +1;
  relative.peer_mode = PeerMode::Relative;
  relative.source = -1;
  relative.source_mode = PeerMode::Relative;
  collective(CollectiveKind::SendRecv, relative);
  Op fill;
  fill.code = OpCode::Fill;
  fill.type = ff::ScalarType::Float32;
  fill.dst = alloc_output(static_cast<uint64_t>(rank + ranks), 3);
  fill.size_expr = 3;
  fill.elem_size = 4;
  fill.value = 0x3f800000;  // 1.0f
  d.ops.push_back(fill);
  return d;
}

}  // namespace ff_samples
