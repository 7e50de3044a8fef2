// Launch fusion and dead-work removal on the kernel IR of one launch.
#include "recorder/launch_body.h"

#include <algorithm>

#include "backend/ir/ir_analysis.h"

namespace ff::rec {
namespace {

bool same_arg(const LaunchArg& x, const LaunchArg& y) {
  return x.is_buffer == y.is_buffer && x.slot == y.slot && x.offset == y.offset &&
         x.size_expr == y.size_expr && (x.is_buffer || x.bits == y.bits);
}

ParamKind merge_kind(ParamKind a, ParamKind b) {
  if (a == b)
    return a;
  return ParamKind::BufferInOut;
}

}  // namespace

std::vector<ParamUse> param_uses(const KernelIR& ir) {
  std::vector<ParamUse> uses(ir.params.size());
  std::vector<ParamSummary> summary = param_summary(ir);
  for (size_t p = 0; p < uses.size(); ++p) {
    uses[p].lane_read = summary[p].has(ParamAccess::LaneRead);
    uses[p].lane_write = summary[p].has(ParamAccess::LaneWrite);
    uses[p].other = summary[p].cross_lane();
  }
  return uses;
}

void append_launch(LaunchBody& body, const KernelIR& ir, std::span<const LaunchArg> args) {
  KernelIR& out = body.ir;
  // Parameters: a buffer (slot and offset) or scalar (value and provenance) the body already
  // passes is shared; the rest are appended.
  std::vector<uint32_t> pmap(ir.params.size());
  for (size_t q = 0; q < ir.params.size(); ++q) {
    uint32_t found = kNoOperand;
    for (size_t p = 0; p < body.args.size() && found == kNoOperand; ++p)
      if (same_arg(body.args[p], args[q]) && out.params[p].type == ir.params[q].type)
        found = static_cast<uint32_t>(p);
    if (found == kNoOperand) {
      found = static_cast<uint32_t>(out.params.size());
      out.params.push_back(ir.params[q]);
      body.args.push_back(args[q]);
    } else {
      out.params[found].kind = merge_kind(out.params[found].kind, ir.params[q].kind);
    }
    pmap[q] = found;
  }

  // What the body already knows per parameter at this lane: the value it stored last, or the
  // value it loaded. Only top-level accesses count: inside a region (a branch, a loop body that
  // may run again) an access runs for some lanes or several times, so a store there makes the
  // parameter unknown and a load there is never forwarded (it reads memory, which is right).
  std::vector<uint32_t> stored(out.params.size(), kNoOperand),
      loaded(out.params.size(), kNoOperand);
  // Instruction `index` of the body (its parameters numbered as the body's) is `in`.
  auto note = [&](const IrInstr& in, bool in_region, uint32_t index) {
    LaneAccess la = lane_access(in);
    if (la.writes() && in_region)
      stored[la.param] = loaded[la.param] = kNoOperand;
    else if (la.writes())
      stored[la.param] = la.value;
    else if (la.reads() && !in_region && loaded[la.param] == kNoOperand)
      loaded[la.param] = index;
  };
  std::vector<uint16_t> out_depth = region_depths(out);
  for_each_instr(out, [&](uint32_t k, const IrInstr& in) { note(in, out_depth[k] != 0, k); });

  std::vector<uint16_t> depth = region_depths(ir);
  std::vector<uint32_t> vmap(ir.instrs.size(), kNoOperand);
  for (size_t k = 0; k < ir.instrs.size(); ++k) {
    IrInstr in = ir.instrs[k];
    if (lane_access(in).reads() && !depth[k]) {
      uint32_t p = pmap[lane_access(in).param];
      if (stored[p] != kNoOperand) {
        vmap[k] = stored[p];
        continue;
      }
      if (loaded[p] != kNoOperand) {
        vmap[k] = loaded[p];
        continue;
      }
    }
    for_each_operand_field(
        in, [&](uint32_t& v) { v = vmap[v]; }, [&](uint32_t& p) { p = pmap[p]; });
    auto index = static_cast<uint32_t>(out.instrs.size());
    out.instrs.push_back(in);
    vmap[k] = index;
    note(in, depth[k] != 0, index);
  }
}

bool remove_dead_work(LaunchBody& body, const std::function<bool(uint32_t param)>& keep_store) {
  KernelIR& ir = body.ir;
  size_t n = ir.instrs.size();
  std::vector<uint8_t> live(n, 0);

  // One backward walk (operands precede their users). Side effects that stay: a store the
  // caller keeps and no later store overwrites first, every scatter, and an increment whose
  // buffer the caller keeps or a later instruction that stays accesses (another increment
  // counts on it), or whose value something that stays uses; every side effect inside a
  // region (it may run again, after what follows it in the list) and every region marker.
  // A store inside a region hides nothing (not every lane runs it). A store stays, too, while
  // an instruction after it that stays reads its parameter: append_launch() forwards top-level
  // lane reads of what the body stored, but never a read inside a region, nor one after a
  // region that stored (lanes that skipped the region read the earlier store). Then what they
  // need.
  std::vector<uint16_t> depth = region_depths(ir);
  std::vector<uint8_t> overwritten(ir.params.size(), 0), accessed_later(ir.params.size(), 0),
      read_later(ir.params.size(), 0);
  bool any_effect = false;
  for (size_t k = n; k-- > 0;) {
    const IrInstr& in = ir.instrs[k];
    LaneAccess la = lane_access(in);
    bool effect = false;
    if (depth[k] && op_facts(in.op).side_effect) {
      effect = true;
    } else if (la.writes()) {
      effect = !overwritten[la.param] && (keep_store(la.param) || read_later[la.param]);
    } else if (op_facts(in.op).side_effect) {
      effect = true;
      for_each_param(in, [&](const IrParamUse& u) {
        if (u.access == ParamAccess::IndexedIncrement)
          effect = keep_store(u.param) || accessed_later[u.param];
      });
    }
    any_effect = any_effect || effect;
    live[k] = live[k] || effect;
    for_each_param(in, [&](const IrParamUse& u) {
      if (!is_buffer_access(u.access))
        return;
      // A store hides what is before it; the rest see it.
      bool hides = u.access == ParamAccess::LaneWrite && !depth[k];
      overwritten[u.param] = hides;
      accessed_later[u.param] |= live[k];
      read_later[u.param] = !hides && (read_later[u.param] || (live[k] && access_reads(u.access)));
    });
    if (live[k])
      for_each_value(in, [&](uint32_t v) { live[v] = 1; });
  }

  // Renumber instructions and parameters; recompute parameter kinds.
  std::vector<uint32_t> vmap(n, kNoOperand);
  std::vector<uint8_t> read(ir.params.size(), 0), written(ir.params.size(), 0),
      used(ir.params.size(), 0);
  std::vector<IrInstr> kept;
  for (size_t k = 0; k < n; ++k) {
    if (!live[k])
      continue;
    IrInstr in = ir.instrs[k];
    for_each_param(in, [&](const IrParamUse& u) {
      read[u.param] |= access_reads(u.access);
      written[u.param] |= access_writes(u.access);
    });
    for_each_operand_field(
        in, [&](uint32_t& v) { v = vmap[v]; }, [&](uint32_t& p) { used[p] = 1; });
    vmap[k] = static_cast<uint32_t>(kept.size());
    kept.push_back(in);
  }
  std::vector<uint32_t> pmap(ir.params.size(), kNoOperand);
  std::vector<IrParam> params;
  std::vector<LaunchArg> args;
  for (size_t p = 0; p < ir.params.size(); ++p) {
    if (!used[p])
      continue;
    pmap[p] = static_cast<uint32_t>(params.size());
    IrParam param = ir.params[p];
    if (param.kind != ParamKind::Scalar)
      param.kind = read[p] && written[p] ? ParamKind::BufferInOut
                   : written[p]          ? ParamKind::BufferOut
                                         : ParamKind::BufferIn;
    params.push_back(param);
    args.push_back(body.args[p]);
  }
  for (IrInstr& in : kept)
    for_each_operand_field(
        in, [](uint32_t&) {}, [&](uint32_t& p) { p = pmap[p]; });
  ir.instrs = std::move(kept);
  ir.params = std::move(params);
  body.args = std::move(args);
  return any_effect;
}

}  // namespace ff::rec
