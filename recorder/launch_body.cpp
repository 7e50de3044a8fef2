// Launch fusion and dead-work removal on the kernel IR of one launch.
#include "recorder/launch_body.h"

#include <algorithm>

namespace ff::rec {
namespace {

bool has_range_report(const IrInstr& in) {
  return (in.flags & kIrFlagReportRange) != 0;
}

/// Calls `value(uint32_t&)` for every operand naming an earlier instruction and
/// `param(uint32_t&)` for every operand naming a parameter, as operand_roles() says.
template <class V, class P>
void for_operands(IrInstr& in, V&& value, P&& param) {
  OperandRoles roles = operand_roles(in.op);
  uint32_t* fields[] = {&in.a, &in.b, &in.c, &in.d, &in.e};
  for (int f = 0; f < 5; ++f) {
    if (roles.values & (1u << f))
      value(*fields[f]);
    else if (roles.params & (1u << f))
      param(*fields[f]);
  }
  if (has_range_report(in)) {
    uint32_t p = static_cast<uint32_t>(in.imm);
    param(p);
    in.imm = p;
  }
}

bool is_side_effect(IrOp op) {
  return op == IrOp::Store || op == IrOp::Scatter || op == IrOp::ScatterAdd;
}

/// The parameter `in` accesses as a buffer (kNoOperand for instructions that touch no
/// buffer's elements).
uint32_t buffer_param(const IrInstr& in) {
  switch (in.op) {
    case IrOp::Load:
    case IrOp::LoadBroadcast:
    case IrOp::Store:
    case IrOp::Gather:
    case IrOp::Scatter:
    case IrOp::ScatterAdd:
      return in.a;
    default:
      return kNoOperand;
  }
}

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
  for (const IrInstr& in : ir.instrs) {
    switch (in.op) {
      case IrOp::Load:
        uses[in.a].lane_read = true;
        break;
      case IrOp::Store:
        uses[in.a].lane_write = true;
        break;
      case IrOp::LoadBroadcast:
      case IrOp::Gather:
      case IrOp::Scatter:
      case IrOp::ScatterAdd:
        uses[in.a].other = true;
        break;
      default:
        break;
    }
    if (has_range_report(in) && in.imm < uses.size())
      uses[in.imm].other = true;
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
  // value it loaded.
  std::vector<uint32_t> stored(out.params.size(), kNoOperand),
      loaded(out.params.size(), kNoOperand);
  for (size_t k = 0; k < out.instrs.size(); ++k) {
    const IrInstr& in = out.instrs[k];
    if (in.op == IrOp::Store)
      stored[in.a] = in.b;
    else if (in.op == IrOp::Load && loaded[in.a] == kNoOperand)
      loaded[in.a] = static_cast<uint32_t>(k);
  }

  std::vector<uint32_t> vmap(ir.instrs.size(), kNoOperand);
  for (size_t k = 0; k < ir.instrs.size(); ++k) {
    IrInstr in = ir.instrs[k];
    if (in.op == IrOp::Load) {
      uint32_t p = pmap[in.a];
      if (stored[p] != kNoOperand) {
        vmap[k] = stored[p];
        continue;
      }
      if (loaded[p] != kNoOperand) {
        vmap[k] = loaded[p];
        continue;
      }
    }
    for_operands(
        in, [&](uint32_t& v) { v = vmap[v]; }, [&](uint32_t& p) { p = pmap[p]; });
    auto index = static_cast<uint32_t>(out.instrs.size());
    out.instrs.push_back(in);
    vmap[k] = index;
    if (in.op == IrOp::Load)
      loaded[in.a] = index;
    else if (in.op == IrOp::Store)
      stored[in.a] = in.b;
  }
}

bool remove_dead_work(LaunchBody& body, const std::function<bool(uint32_t param)>& keep_store) {
  KernelIR& ir = body.ir;
  size_t n = ir.instrs.size();
  std::vector<uint8_t> live(n, 0);

  // Side effects that stay: a store the caller keeps and no later store overwrites first.
  std::vector<uint8_t> overwritten(ir.params.size(), 0);
  for (size_t k = n; k-- > 0;) {
    const IrInstr& in = ir.instrs[k];
    uint32_t p = buffer_param(in);
    if (in.op == IrOp::Store) {
      live[k] = !overwritten[p] && keep_store(p);
      overwritten[p] = 1;
    } else if (is_side_effect(in.op)) {
      live[k] = 1;
    }
    if (p != kNoOperand && in.op != IrOp::Store)
      overwritten[p] = 0;  // read (or scattered) here: an earlier store is seen
    if (has_range_report(in))
      overwritten[in.imm] = 0;
  }
  bool any_effect = std::find(live.begin(), live.end(), 1) != live.end();

  // What they need, transitively (operands precede their users).
  for (size_t k = n; k-- > 0;) {
    if (!live[k])
      continue;
    IrInstr in = ir.instrs[k];
    for_operands(
        in, [&](uint32_t& v) { live[v] = 1; }, [](uint32_t&) {});
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
    for_operands(
        in, [&](uint32_t& v) { v = vmap[v]; }, [&](uint32_t& p) { used[p] = 1; });
    switch (in.op) {
      case IrOp::Load:
      case IrOp::LoadBroadcast:
      case IrOp::Gather:
        read[in.a] = 1;
        break;
      case IrOp::Store:
        written[in.a] = 1;
        break;
      case IrOp::Scatter:
      case IrOp::ScatterAdd:
        read[in.a] = written[in.a] = 1;
        break;
      default:
        break;
    }
    if (has_range_report(in))
      read[in.imm] = written[in.imm] = 1;
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
    for_operands(
        in, [](uint32_t&) {}, [&](uint32_t& p) { p = pmap[p]; });
  ir.instrs = std::move(kept);
  ir.params = std::move(params);
  body.args = std::move(args);
  return any_effect;
}

}  // namespace ff::rec
