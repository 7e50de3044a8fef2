// Building a replay plan: kernel resolution, patch lists, guard placement. The recording comes
// validated (rec::ValidatedRecording): the plan trusts its indices without checking them.
//
// The plan turns the Recording's general structure into flat arrays the replay loop walks
// without allocating: per launch a template of argument bits (constants already in place), a
// list of buffer patches (argument <- slot pointer + offset) and of scalar patches (argument
// <- evaluated size expression). Sizes that are constants or a slot's size are resolved to
// SizeRef so most evaluations are one load. Guards whose expressions read only inputs are
// hoisted before the first op (a replay that would take another path fails before doing any
// work); the rest are checked right after the op they were recorded after (e.g. a compress).
#include "replay/replay_plan.h"

#include <algorithm>
#include <span>
#include <utility>
#include <vector>

#include "backend/ir/ir_analysis.h"
#include "freezeframe/errors.h"
#include "recorder/size_eval.h"

namespace ff::replay {

namespace {

SizeRef size_ref(const rec::RecordingData& d, uint32_t e) {
  const rec::ExprNode& n = d.exprs[e];
  if (n.op == SizeOp::Const)
    return {SizeRef::Const, n.value, 0};
  if (n.op == SizeOp::BufferSize)
    return {SizeRef::SlotSize, 0, n.slot};
  return {SizeRef::Expr, 0, e};
}

// What a kernel touches in each buffer parameter, so a replay can check it against the slot.
struct Extent {
  uint32_t lane_bytes = 0, fixed_bytes = 0;
  std::vector<std::pair<uint32_t, uint32_t>> bounds;  // (bound parameter, element bytes)
};

std::vector<Extent> buffer_extents(const KernelIR& ir) {
  std::vector<Extent> e(ir.params.size());
  auto elem = [&](uint32_t p) { return static_cast<uint32_t>(size_of(ir.params[p].type)); };
  for_each_instr(ir, [&](uint32_t, const IrInstr& in) {
    for_each_param(in, [&](const IrParamUse& u) {
      Extent& x = e[u.param];
      if (is_lane_access(u.access))
        x.lane_bytes = elem(u.param);
      else if (u.access == ParamAccess::BroadcastRead)
        x.fixed_bytes = std::max(x.fixed_bytes, elem(u.param));
      else if (is_indexed_access(u.access))
        x.bounds.push_back({u.bound, elem(u.param)});
      else if (u.access == ParamAccess::RangeReport)
        x.fixed_bytes = std::max<uint32_t>(x.fixed_bytes, 16);  // two words
    });
  });
  return e;
}

}  // namespace

bool agrees_at_end(const rec::RecordingData& d) {
  return std::any_of(d.ops.begin(), d.ops.end(), [](const rec::Op& op) {
    return op.code == rec::OpCode::Collective &&
           exchanges_sizes(static_cast<rec::CollectiveKind>(op.sub));
  });
}

ReplayPlan::ReplayPlan(std::shared_ptr<const rec::RecordingData> data, Backend& backend)
    : ReplayPlan(rec::ValidatedRecording::check(std::move(data)), backend) {}

ReplayPlan::ReplayPlan(rec::ValidatedRecording data, Backend& backend)
    : data_(std::move(data)),
      backend_id_(backend.instance_id()),
      generation_(backend.kernel_generation()) {
  const rec::RecordingData& d = *data_;
  for (const rec::ExprNode& n : d.exprs)
    reads_rank = reads_rank || n.op == SizeOp::Rank || n.op == SizeOp::Ranks;
  if (d.is_capture)
    throw FreezeError(
        "a session capture records host reads and external memory; it can be "
        "inspected but not replayed");
  kernels.reserve(d.kernels.size());
  std::vector<std::vector<Extent>> extents(d.kernels.size());
  for (size_t k = 0; k < d.kernels.size(); ++k) {
    kernels.push_back(backend.compile(*d.kernels[k]));  // validates IR not known valid
    extents[k] = buffer_extents(*d.kernels[k]);
  }

  written_inputs.assign(d.inputs.size(), 0);
  is_output.assign(d.slots.size(), 0);
  for (auto& o : d.outputs)
    is_output[o.slot] = 1;
  std::vector<rec::SlotUse> uses;
  for (const rec::Op& op : d.ops) {
    rec::op_uses(d, op, uses);
    for (const rec::SlotUse& u : uses)
      if (u.write && d.slots[u.slot].origin == rec::SlotOrigin::Input)
        written_inputs[d.slots[u.slot].origin_index] = 1;
  }

  // Guards: early ones first, then grouped by the op they follow.
  std::vector<std::vector<uint32_t>> after(d.ops.size());
  for (uint32_t g = 0; g < d.guards.size(); ++g) {
    const rec::Guard& gd = d.guards[g];
    bool early = gd.after_op == rec::kNone ||
                 (rec::depends_only_on_inputs(d, gd.lhs) && rec::depends_only_on_inputs(d, gd.rhs));
    if (early)
      guard_order.push_back(g);
    else
      after[gd.after_op].push_back(g);
  }
  n_early_guards = static_cast<uint32_t>(guard_order.size());
  agree_at_end = agrees_at_end(d);

  // The op sequence, each op planned at its own index. A nested op list (a loop op's body, to
  // come) is a subrange of d.ops planned by this same loop right after its loop op, which
  // then holds its body's range (PlannedOp).
  ops.reserve(d.ops.size());
  std::span<const rec::Op> sequence = d.ops;
  for (const rec::Op& op : sequence) {
    auto i = static_cast<size_t>(&op - d.ops.data());
    PlannedOp p;
    p.code = op.code;
    if (op.size_expr != rec::kNone)
      p.size = size_ref(d, op.size_expr);
    if (op.code == rec::OpCode::Launch) {
      p.kernel = op.kernel;
      p.n_args = op.arg_end - op.arg_begin;
      p.template_begin = static_cast<uint32_t>(arg_template.size());
      p.buffer_begin = static_cast<uint32_t>(buffer_patches.size());
      p.scalar_begin = static_cast<uint32_t>(scalar_patches.size());
      p.bound_begin = static_cast<uint32_t>(bound_checks.size());
      for (uint32_t a = op.arg_begin; a < op.arg_end; ++a) {
        const rec::LaunchArg& arg = d.args[a];
        uint32_t pos = a - op.arg_begin;
        arg_template.push_back(arg.is_buffer ? 0 : arg.bits);
        if (arg.is_buffer) {
          const Extent& x = extents[op.kernel][pos];
          for (auto [bound, bytes] : x.bounds)
            bound_checks.push_back({static_cast<uint32_t>(buffer_patches.size()), bound, bytes});
          buffer_patches.push_back({pos, arg.slot, arg.offset, x.lane_bytes, x.fixed_bytes});
        } else if (arg.size_expr != rec::kNone)
          scalar_patches.push_back({pos, size_ref(d, arg.size_expr)});
      }
      p.buffer_end = static_cast<uint32_t>(buffer_patches.size());
      p.scalar_end = static_cast<uint32_t>(scalar_patches.size());
      p.bound_end = static_cast<uint32_t>(bound_checks.size());
      max_args = std::max(max_args, p.n_args);
    }
    if (op.code == rec::OpCode::Collective) {
      dist_ranks = op.elem_size;  // validation: the same in every collective of a recording
      ++n_collectives;
      rec::CollectivePeers peers = rec::collective_peers(op);
      if (static_cast<rec::CollectiveKind>(op.sub) == rec::CollectiveKind::SendRecv &&
          (peers.peer_mode == rec::PeerMode::Absolute ||
           peers.source_mode == rec::PeerMode::Absolute))
        dist_rank = peers.rank;
    }
    p.guard_begin = static_cast<uint32_t>(guard_order.size());
    guard_order.insert(guard_order.end(), after[i].begin(), after[i].end());
    p.guard_end = static_cast<uint32_t>(guard_order.size());
    ops.push_back(p);
  }
}

}  // namespace ff::replay
