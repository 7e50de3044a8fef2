// Recording validation and summaries. Validation guards the replayer (and, later, the file
// reader) against any index or expression that could make it touch memory it should not.
#include "recorder/recording.h"

#include <string>

#include "freezeframe/errors.h"
#include "recorder/size_eval.h"

namespace ff::rec {

const char* to_string(SlotOrigin o) {
  switch (o) {
    case SlotOrigin::Input:
      return "input";
    case SlotOrigin::Alloc:
      return "alloc";
    case SlotOrigin::External:
      return "external";
  }
  return "invalid-origin";
}

const char* to_string(OpCode c) {
  static const char* const names[kNumOpCodes] = {
      "alloc", "release", "copy", "fill", "launch", "reduce", "prefix_sum", "compress", "sync"};
  auto i = static_cast<unsigned>(c);
  return i < kNumOpCodes ? names[i] : "invalid-op";
}

void op_uses(const RecordingData& d, const Op& op, std::vector<SlotUse>& out) {
  out.clear();
  auto kind = static_cast<CopyKind>(op.sub);
  switch (op.code) {
    case OpCode::Copy:  // host memory is no slot: a constant's source, a host read's target
      if (kind != CopyKind::HostToDevice)
        out.push_back({op.src, true, false});
      if (kind != CopyKind::DeviceToHost)
        out.push_back({op.dst, false, true});
      break;
    case OpCode::Fill:
      out.push_back({op.dst, false, true});
      break;
    case OpCode::Launch:
      for (uint32_t a = op.arg_begin; a < op.arg_end; ++a) {
        if (!d.args[a].is_buffer)
          continue;
        ParamKind k = d.kernels[op.kernel]->params[a - op.arg_begin].kind;
        out.push_back({d.args[a].slot, k != ParamKind::BufferOut, k != ParamKind::BufferIn});
      }
      break;
    case OpCode::Reduce:
    case OpCode::PrefixSum:
    case OpCode::Compress:
      out.push_back({op.src, true, false});
      out.push_back({op.dst, false, true});
      break;
    default:  // Alloc and Release create and end a slot rather than use it
      break;
  }
}

void RecordingData::validate() const {
  auto fail = [](const std::string& what) { throw FreezeError("invalid recording: " + what); };
  auto check_slot = [&](uint32_t s, const std::string& where) {
    if (s >= slots.size())
      fail(where + " names slot " + std::to_string(s) + " of " + std::to_string(slots.size()));
  };
  auto check_expr = [&](uint32_t e, const std::string& where) {
    if (e >= exprs.size())
      fail(where + " names size expression " + std::to_string(e) + " of " +
           std::to_string(exprs.size()));
  };
  // Nodes an evaluation visits per expression (operands may be shared, so a chain of n nodes
  // can unfold to 2^n): bounded, so evaluating a damaged recording cannot hang.
  constexpr uint64_t kMaxExprTree = 1u << 16;
  std::vector<uint64_t> tree(exprs.size(), 1);
  for (size_t i = 0; i < exprs.size(); ++i) {
    const ExprNode& n = exprs[i];
    std::string where = "size expression " + std::to_string(i);
    switch (n.op) {
      case SizeOp::Const:
        break;
      case SizeOp::BufferSize:
        check_slot(n.slot, where);
        break;
      case SizeOp::Add:
      case SizeOp::Sub:
      case SizeOp::Mul:
      case SizeOp::Div:
      case SizeOp::Min:
      case SizeOp::Max:
        // Operands precede their node: expressions are acyclic and evaluation terminates.
        if (n.lhs >= i || n.rhs >= i)
          fail(where + " has an operand that does not precede it");
        tree[i] = 1 + tree[n.lhs] + tree[n.rhs];
        if (tree[i] > kMaxExprTree)
          fail(where + " unfolds to more than " + std::to_string(kMaxExprTree) + " nodes");
        break;
      default:
        fail(where + " has an invalid operator");
    }
  }
  for (size_t k = 0; k < kernels.size(); ++k)
    if (!kernels[k])
      fail("kernel " + std::to_string(k) + " is missing");
  for (size_t s = 0; s < slots.size(); ++s) {
    const Slot& sl = slots[s];
    std::string where = "slot " + std::to_string(s);
    if (!is_valid(sl.type))
      fail(where + " has an invalid element type");
    if (sl.size_expr != kNone)
      check_expr(sl.size_expr, where);
    switch (sl.origin) {
      case SlotOrigin::Input:
        if (sl.origin_index >= inputs.size())
          fail(where + " is bound to input " + std::to_string(sl.origin_index) + " of " +
               std::to_string(inputs.size()));
        break;
      case SlotOrigin::Alloc:
        if (sl.origin_index >= ops.size() || ops[sl.origin_index].code != OpCode::Alloc ||
            ops[sl.origin_index].dst != s)
          fail(where + " claims an allocating op that does not allocate it");
        break;
      case SlotOrigin::External:
        if (!is_capture)
          fail(where + " is external, which only session captures may hold");
        break;
      default:
        fail(where + " has an invalid origin");
    }
  }
  for (size_t k = 0; k < inputs.size(); ++k) {
    check_slot(inputs[k], "input " + std::to_string(k));
    if (slots[inputs[k]].origin != SlotOrigin::Input)
      fail("input " + std::to_string(k) + " is bound to a slot that is not an input");
  }
  for (size_t k = 0; k < outputs.size(); ++k)
    check_slot(outputs[k].slot, "output " + std::to_string(k));
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i].is_buffer)
      check_slot(args[i].slot, "launch argument " + std::to_string(i));
    if (args[i].size_expr != kNone)
      check_expr(args[i].size_expr, "launch argument " + std::to_string(i));
  }
  for (size_t i = 0; i < accesses.size(); ++i)
    check_slot(accesses[i].slot, "access " + std::to_string(i));
  for (size_t g = 0; g < guards.size(); ++g) {
    std::string where = "guard " + std::to_string(g);
    check_expr(guards[g].lhs, where);
    check_expr(guards[g].rhs, where);
    if (guards[g].after_op != kNone && guards[g].after_op >= ops.size())
      fail(where + " is placed after op " + std::to_string(guards[g].after_op) + " of " +
           std::to_string(ops.size()));
  }

  // Walk the ops: indices in range, slots live when used, nothing read before it is written.
  enum : uint8_t { kDead = 0, kLive = 1, kWritten = 2, kReleased = 3 };

  std::vector<uint8_t> state(slots.size(), kDead);
  std::vector<SlotUse> uses;
  for (size_t s = 0; s < slots.size(); ++s)
    if (slots[s].origin != SlotOrigin::Alloc)
      state[s] = kWritten;
  for (size_t i = 0; i < ops.size(); ++i) {
    const Op& op = ops[i];
    std::string where = "op " + std::to_string(i) + " (" + to_string(op.code) + ")";
    if (static_cast<unsigned>(op.code) >= kNumOpCodes)
      fail(where + " has an invalid op code");
    if (op.access_begin > op.access_end || op.access_end > accesses.size())
      fail(where + " has an invalid access range");
    auto need_expr = [&] { check_expr(op.size_expr, where); };
    if (op.size_expr != kNone)  // ops without a size may still carry one: it must be valid
      check_expr(op.size_expr, where);
    switch (op.code) {
      case OpCode::Alloc:
        check_slot(op.dst, where);
        need_expr();
        if (slots[op.dst].origin != SlotOrigin::Alloc || slots[op.dst].origin_index != i)
          fail(where + " allocates slot " + std::to_string(op.dst) + " which names another origin");
        state[op.dst] = kLive;
        continue;
      case OpCode::Release:
        check_slot(op.dst, where);
        if (state[op.dst] == kDead || state[op.dst] == kReleased)
          fail(where + " releases slot " + std::to_string(op.dst) + " which is not live");
        state[op.dst] = kReleased;
        continue;
      case OpCode::Copy:
        need_expr();
        if (op.sub > 2)
          fail(where + " has an invalid copy kind");
        if (static_cast<CopyKind>(op.sub) == CopyKind::HostToDevice &&
            op.constant >= constants.size())
          fail(where + " names a missing constant");
        if (static_cast<CopyKind>(op.sub) == CopyKind::DeviceToHost && !is_capture)
          fail(where + " reads to the host, which only session captures may hold");
        break;
      case OpCode::Fill:
        need_expr();
        if (op.elem_size != 1 && op.elem_size != 2 && op.elem_size != 4 && op.elem_size != 8)
          fail(where + " has an invalid element size " + std::to_string(op.elem_size));
        break;
      case OpCode::Launch: {
        need_expr();
        if (op.kernel >= kernels.size())
          fail(where + " names kernel " + std::to_string(op.kernel) + " of " +
               std::to_string(kernels.size()));
        if (op.arg_begin > op.arg_end || op.arg_end > args.size())
          fail(where + " has an invalid argument range");
        const KernelIR& ir = *kernels[op.kernel];
        if (op.arg_end - op.arg_begin != ir.params.size())
          fail(where + " passes " + std::to_string(op.arg_end - op.arg_begin) +
               " arguments to a kernel with " + std::to_string(ir.params.size()) + " parameters");
        for (uint32_t a = op.arg_begin; a < op.arg_end; ++a)
          if (args[a].is_buffer != (ir.params[a - op.arg_begin].kind != ParamKind::Scalar))
            fail(where + " argument " + std::to_string(a - op.arg_begin) +
                 " does not match its parameter's kind");
        break;
      }
      case OpCode::Reduce:
        need_expr();
        if (op.sub > 5)
          fail(where + " has an invalid reduction");
        break;
      case OpCode::PrefixSum:
      case OpCode::Compress:
        need_expr();
        break;
      case OpCode::Sync:
        break;
    }
    // The slots the op names (what a replay touches), in lifetime order: reads need a written
    // slot, writes a live one. The access list (for dumps) may only repeat them.
    op_uses(*this, op, uses);
    for (const SlotUse& u : uses) {
      check_slot(u.slot, where);
      uint8_t st = state[u.slot];
      if (st == kDead || st == kReleased)
        fail(where + " uses slot " + std::to_string(u.slot) + " outside its lifetime");
      if (u.read && st != kWritten && !is_capture)
        fail(where + " reads slot " + std::to_string(u.slot) + " before anything wrote it");
    }
    for (const SlotUse& u : uses)
      if (u.write)
        state[u.slot] = kWritten;
    for (uint32_t a = op.access_begin; a < op.access_end; ++a) {
      const Access& acc = accesses[a];
      bool listed = false;
      for (const SlotUse& u : uses)
        listed |= u.slot == acc.slot && (acc.write ? u.write : u.read);
      if (!listed)
        fail(where + " lists an access to slot " + std::to_string(acc.slot) +
             " that the op does not make");
    }
  }
  for (size_t k = 0; k < outputs.size(); ++k) {
    uint8_t st = state[outputs[k].slot];
    if (st != kWritten)
      fail("output " + std::to_string(k) + " (slot " + std::to_string(outputs[k].slot) + ") is " +
           (st == kReleased ? "released" : "never written") + " by the recording");
  }
}

std::string RecordingData::summary() const {
  return std::to_string(ops.size()) + " ops, " + std::to_string(kernels.size()) + " kernels, " +
         std::to_string(slots.size()) + " slots, " + std::to_string(inputs.size()) + " inputs, " +
         std::to_string(outputs.size()) + " outputs, " + std::to_string(guards.size()) + " guards";
}

}  // namespace ff::rec
