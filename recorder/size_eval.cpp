// Size expressions: construction from provenance and evaluation at replay.
#include "recorder/size_eval.h"

#include <algorithm>
#include <string>
#include <vector>

#include "common/assert.h"
#include "freezeframe/errors.h"

namespace ff::rec {

uint32_t add_const(RecordingData& data, uint64_t value) {
  data.exprs.push_back(ExprNode{SizeOp::Const, value, kNone, kNone, kNone});
  return static_cast<uint32_t>(data.exprs.size() - 1);
}

uint32_t add_slot_size(RecordingData& data, uint32_t slot) {
  data.exprs.push_back(ExprNode{SizeOp::BufferSize, 0, slot, kNone, kNone});
  return static_cast<uint32_t>(data.exprs.size() - 1);
}

uint32_t add_dist_leaf(RecordingData& data, SizeOp op) {
  data.exprs.push_back(ExprNode{op, 0, kNone, kNone, kNone});
  return static_cast<uint32_t>(data.exprs.size() - 1);
}

uint32_t add_binary(RecordingData& data, SizeOp op, uint32_t lhs, uint32_t rhs) {
  data.exprs.push_back(ExprNode{op, 0, kNone, lhs, rhs});
  return static_cast<uint32_t>(data.exprs.size() - 1);
}

int compare_exprs(const RecordingData& data, uint32_t a, uint32_t b) {
  if (a == b)
    return 0;
  const ExprNode &x = data.exprs[a], &y = data.exprs[b];
  auto three_way = [](auto u, auto v) { return u < v ? -1 : u > v ? 1 : 0; };
  if (int c = three_way(static_cast<int>(x.op), static_cast<int>(y.op)))
    return c;
  switch (x.op) {
    case SizeOp::Const:
      return three_way(x.value, y.value);
    case SizeOp::BufferSize:
      return three_way(x.slot, y.slot);
    case SizeOp::Rank:
    case SizeOp::Ranks:
      return 0;
    default:
      if (int c = compare_exprs(data, x.lhs, y.lhs))
        return c;
      return compare_exprs(data, x.rhs, y.rhs);
  }
}

uint32_t add_expr(RecordingData& data, SizeProv prov, SlotMap& slots, uint64_t fallback) {
  if (prov.empty())
    return add_const(data, fallback);
  std::vector<uint32_t> stack;
  for (const SizeNode& n : prov) {
    switch (n.op) {
      case SizeOp::Const:
        stack.push_back(add_const(data, n.value));
        break;
      case SizeOp::BufferSize: {
        SlotMap::Live* live = slots.find_base(n.buffer);
        stack.push_back(live ? add_slot_size(data, live->slot) : add_const(data, n.value));
        break;
      }
      case SizeOp::Rank:
      case SizeOp::Ranks:
        stack.push_back(add_dist_leaf(data, n.op));
        break;
      default: {
        // Provenance comes from the tracer (or a replay of a validated recording), never from
        // outside: a malformed one is a bug.
        FF_ASSERT(stack.size() >= 2, "malformed size provenance: operator '{}' lacks operands",
                  to_string(n.op));
        uint32_t rhs = stack.back();
        stack.pop_back();
        uint32_t lhs = stack.back();
        stack.pop_back();
        stack.push_back(add_binary(data, n.op, lhs, rhs));
      }
    }
  }
  FF_ASSERT(stack.size() == 1, "malformed size provenance: {} values left on the stack",
            stack.size());
  return stack.back();
}

RankPlace recorded_place(const RecordingData& data) {
  for (const Op& op : data.ops)
    if (op.code == OpCode::Collective)
      return {static_cast<uint64_t>(std::max(collective_peers(op).rank, 0)), op.elem_size};
  return {};
}

uint64_t evaluate(const RecordingData& data, uint32_t e, std::span<const uint64_t> slot_sizes,
                  RankPlace place, const char* where) {
  const ExprNode& n = data.exprs[e];
  switch (n.op) {
    case SizeOp::Const:
      return n.value;
    case SizeOp::BufferSize:
      return slot_sizes[n.slot];
    case SizeOp::Rank:
      return place.rank;
    case SizeOp::Ranks:
      return place.ranks;
    default:
      break;
  }
  uint64_t a = evaluate(data, n.lhs, slot_sizes, place, where);
  uint64_t b = evaluate(data, n.rhs, slot_sizes, place, where);
  switch (n.op) {
    case SizeOp::Add:
      if (a + b < a)
        throw FreezeError(std::string(where) + ": size " + expr_to_string(data, e) +
                          " overflows 64 bits for these inputs");
      return a + b;
    case SizeOp::Sub:
      if (b > a)
        throw FreezeError(std::string(where) + ": size " + expr_to_string(data, e) +
                          " evaluates below zero (" + std::to_string(a) + " - " +
                          std::to_string(b) + ") for these inputs");
      return a - b;
    case SizeOp::Mul:
      if (a != 0 && b > UINT64_MAX / a)
        throw FreezeError(std::string(where) + ": size " + expr_to_string(data, e) +
                          " overflows 64 bits for these inputs");
      return a * b;
    case SizeOp::Div:
      if (b == 0)
        throw FreezeError(std::string(where) + ": size " + expr_to_string(data, e) +
                          " divides by zero for these inputs");
      return a / b;
    case SizeOp::Min:
      return std::min(a, b);
    case SizeOp::Max:
      return std::max(a, b);
    default:
      FF_ASSERT(false, "size expression {} has operator {}: validation lets none through", e,
                static_cast<int>(n.op));
      return 0;
  }
}

std::string expr_to_string(const RecordingData& data, uint32_t e) {
  if (e >= data.exprs.size())
    return "<invalid>";
  const ExprNode& n = data.exprs[e];
  switch (n.op) {
    case SizeOp::Const:
      return std::to_string(n.value);
    case SizeOp::BufferSize:
      return "size(s" + std::to_string(n.slot) + ")";
    case SizeOp::Rank:
      return "rank";
    case SizeOp::Ranks:
      return "ranks";
    case SizeOp::Min:
    case SizeOp::Max:
      return std::string(to_string(n.op)) + "(" + expr_to_string(data, n.lhs) + ", " +
             expr_to_string(data, n.rhs) + ")";
    default:
      return "(" + expr_to_string(data, n.lhs) + " " + to_string(n.op) + " " +
             expr_to_string(data, n.rhs) + ")";
  }
}

bool depends_only_on_inputs(const RecordingData& data, uint32_t e) {
  const ExprNode& n = data.exprs[e];
  switch (n.op) {
    case SizeOp::Const:
      return true;
    case SizeOp::BufferSize:
      return data.slots[n.slot].origin == SlotOrigin::Input;
    case SizeOp::Rank:  // known before the first op
    case SizeOp::Ranks:
      return true;
    default:
      return depends_only_on_inputs(data, n.lhs) && depends_only_on_inputs(data, n.rhs);
  }
}

}  // namespace ff::rec
