// The recording optimiser (docs/optimizer.md). The passes work on "drafts": one per op, a
// launch carrying its own IR and arguments, so a pass can merge, drop and move ops without
// keeping the flat tables consistent; assemble() writes the tables back once at the end.
#include "recorder/optimize.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <unordered_map>

#include "backend/ir/ir_analysis.h"
#include "common/log.h"
#include "freezeframe/errors.h"
#include "recorder/launch_body.h"

namespace ff::rec {
namespace {

struct Draft {
  Op op;
  std::shared_ptr<const KernelIR> kernel;  // Launch
  std::vector<LaunchArg> args;             // Launch: one per parameter
  std::vector<uint32_t> from;              // the recorded ops it stands for (guard positions)
  RegionNames names;  // Launch: its kernel's region names (RecordingData::region_names), or none
};

using Drafts = std::vector<Draft>;

Drafts to_drafts(const RecordingData& d) {
  Drafts out(d.ops.size());
  for (size_t i = 0; i < d.ops.size(); ++i) {
    Draft& dr = out[i];
    dr.op = d.ops[i];
    dr.from = {static_cast<uint32_t>(i)};
    if (dr.op.code == OpCode::Launch) {
      dr.kernel = d.kernels[dr.op.kernel];
      dr.args.assign(d.args.begin() + dr.op.arg_begin, d.args.begin() + dr.op.arg_end);
      if (const RegionNames* names = d.region_names_of(dr.op.kernel))
        dr.names = *names;
    }
  }
  return out;
}

/// The slots a draft reads and writes (Alloc and Release: none), as op_uses() says of ops.
void draft_uses(const Draft& dr, std::vector<SlotUse>& out) {
  if (dr.op.code != OpCode::Launch) {
    op_uses(RecordingData{}, dr.op, out);  // needs the recording's tables only for launches
    return;
  }
  out.clear();
  launch_uses(*dr.kernel, dr.args, out);
}

/// Per slot: 1 for the outputs and, with `inputs`, the inputs too (the slots whose contents
/// the caller sees after a replay).
std::vector<uint8_t> caller_slots(const RecordingData& d, bool inputs) {
  std::vector<uint8_t> seen(d.slots.size(), 0);
  for (const RecordingData::Output& o : d.outputs)
    seen[o.slot] = 1;
  if (inputs)
    for (uint32_t s : d.inputs)
      seen[s] = 1;
  return seen;
}

/// Whether a launch's arguments name `slot`.
bool uses_slot(const std::vector<LaunchArg>& args, uint32_t slot) {
  for (const LaunchArg& a : args)
    if (a.is_buffer && a.slot == slot)
      return true;
  return false;
}

/// Whether two size expressions are the same expression (the same nodes, or nodes of equal
/// structure: the recorder does not intern them).
bool same_expr(const RecordingData& d, uint32_t a, uint32_t b) {
  std::vector<std::pair<uint32_t, uint32_t>> todo{{a, b}};
  while (!todo.empty()) {
    auto [x, y] = todo.back();
    todo.pop_back();
    if (x == y)
      continue;
    if (x == kNone || y == kNone)
      return false;
    const ExprNode &nx = d.exprs[x], &ny = d.exprs[y];
    if (nx.op != ny.op)
      return false;
    if (nx.op == SizeOp::Const) {
      if (nx.value != ny.value)
        return false;
    } else if (nx.op == SizeOp::BufferSize) {
      if (nx.slot != ny.slot)
        return false;
    } else if (!is_leaf(nx.op)) {
      todo.push_back({nx.lhs, ny.lhs});
      todo.push_back({nx.rhs, ny.rhs});
    }
  }
  return true;
}

/// Calls f(uint32_t&) for every reference to a size expression outside the table itself.
template <class F>
void for_expr_refs(RecordingData& d, F&& f) {
  for (Op& op : d.ops)
    if (op.size_expr != kNone)
      f(op.size_expr);
  for (LaunchArg& a : d.args)
    if (a.size_expr != kNone)
      f(a.size_expr);
  for (Guard& g : d.guards) {
    f(g.lhs);
    f(g.rhs);
  }
  for (Slot& sl : d.slots)
    if (sl.size_expr != kNone)
      f(sl.size_expr);
}

/// Rewrites every size to read input sizes and constants instead of allocation sizes where
/// the two are equal wherever they are evaluated: an allocation's size is fixed when it is
/// allocated, so size(s) equals s's own size expression as long as that reads only inputs
/// (whose sizes never change during a replay) and constants. Sizes that read a compress
/// result stay as they are. Then equal sizes look equal (launch fusion compares them), guards
/// that compare a size with itself go, and an allocation nobody reads the size of can be
/// dropped with its data.
void canonicalize_sizes(RecordingData& d) {
  std::vector<uint8_t> resized(d.slots.size(), 0);
  for (const Op& op : d.ops)
    if (op.code == OpCode::Compress || op.code == OpCode::Collective)
      resized[op.dst] = 1;
  size_t n = d.exprs.size();
  std::vector<uint32_t> canon(n);
  std::vector<uint8_t> inputs_only(n, 0);
  for (size_t i = 0; i < n; ++i) {
    ExprNode node = d.exprs[i];
    canon[i] = static_cast<uint32_t>(i);
    switch (node.op) {
      case SizeOp::Const:
      case SizeOp::Rank:  // known before the first op, like an input's size
      case SizeOp::Ranks:
        inputs_only[i] = 1;
        break;
      case SizeOp::BufferSize: {
        const Slot& sl = d.slots[node.slot];
        if (sl.origin == SlotOrigin::Input) {
          inputs_only[i] = 1;
        } else if (sl.origin == SlotOrigin::Alloc && !resized[node.slot] && sl.size_expr < i &&
                   inputs_only[sl.size_expr]) {
          canon[i] = canon[sl.size_expr];
          inputs_only[i] = 1;
        }
        break;
      }
      default:
        inputs_only[i] = inputs_only[node.lhs] && inputs_only[node.rhs];
        if (canon[node.lhs] != node.lhs || canon[node.rhs] != node.rhs) {
          node.lhs = canon[node.lhs];
          node.rhs = canon[node.rhs];
          canon[i] = static_cast<uint32_t>(d.exprs.size());
          d.exprs.push_back(node);
        }
    }
  }
  for_expr_refs(d, [&](uint32_t& e) { e = canon[e]; });

  std::erase_if(d.guards, [&](const Guard& g) {
    if (!same_expr(d, g.lhs, g.rhs))
      return false;
    bool holds = g.cmp == SizeCmp::Eq || g.cmp == SizeCmp::Le || g.cmp == SizeCmp::Ge;
    return holds == g.outcome;  // always decides the same way
  });
}

/// Slots whose size an op, argument or guard reads: their allocation must stay where it is,
/// whatever their contents (an expression evaluated at replay looks the size up).
std::vector<uint8_t> sized_slots(const RecordingData& d) {
  std::vector<uint8_t> pinned(d.slots.size(), 0), seen(d.exprs.size(), 0);
  std::vector<uint32_t> todo;
  auto visit = [&](uint32_t root) {
    todo.push_back(root);
    while (!todo.empty()) {
      uint32_t e = todo.back();
      todo.pop_back();
      if (seen[e])
        continue;
      seen[e] = 1;
      const ExprNode& node = d.exprs[e];
      if (node.op == SizeOp::BufferSize)
        pinned[node.slot] = 1;
      else if (!is_leaf(node.op)) {
        todo.push_back(node.lhs);
        todo.push_back(node.rhs);
      }
    }
  };
  // Allocations included: the slots their sizes read stay too (deciding that per kept
  // allocation would need a fixed point; this rarely keeps more).
  for (const Op& op : d.ops)
    if (op.size_expr != kNone)
      visit(op.size_expr);
  for (const LaunchArg& a : d.args)
    if (a.size_expr != kNone)
      visit(a.size_expr);
  for (const Guard& g : d.guards) {
    visit(g.lhs);
    visit(g.rhs);
  }
  return pinned;
}

struct Counts {
  uint32_t ops = 0, launches = 0, allocs = 0;
};

Counts count(const Drafts& ops) {
  Counts c;
  c.ops = static_cast<uint32_t>(ops.size());
  for (const Draft& dr : ops) {
    c.launches += dr.op.code == OpCode::Launch;
    c.allocs += dr.op.code == OpCode::Alloc && dr.op.src == kNone;  // fresh allocations
  }
  return c;
}

// --- launch fusion ---------------------------------------------------------------------------

class Fuser {
 public:
  Fuser(const RecordingData& d, const OptimizeOptions& o, const std::vector<uint8_t>& pinned)
      : d_(d),
        o_(o),
        pinned_(pinned),
        last_read_(d.slots.size(), 0),
        first_use_(d.slots.size(), ~size_t{0}),
        kept_(caller_slots(d, true)) {
    std::vector<SlotUse> uses;
    for (size_t i = 0; i < d.ops.size(); ++i) {
      op_uses(d, d.ops[i], uses);
      for (const SlotUse& u : uses) {
        if (u.read)
          last_read_[u.slot] = i + 1;
        first_use_[u.slot] = std::min(first_use_[u.slot], i);
      }
    }
  }

  Drafts run(Drafts ops) {
    for (Draft& dr : ops) {
      switch (dr.op.code) {
        case OpCode::Alloc:
        case OpCode::Release:
          (open_ ? between_ : out_).push_back(std::move(dr));
          break;
        case OpCode::Launch:
          if (!(open_ && fusable(dr) && try_fuse(dr))) {
            flush();
            open_ = true;
            body_ = LaunchBody{*dr.kernel, dr.args};
            head_first_ = dr.from.front();
            head_ = std::move(dr);
            fused_ = false;
          }
          break;
        default:
          flush();
          out_.push_back(std::move(dr));
      }
    }
    flush();
    return std::move(out_);
  }

 private:
  /// Launch `b` can join the open launch: same size; every buffer both touch that either
  /// writes is touched by both at their own lane only (Load/Store), at the same offset and
  /// type; and the fused kernel stays within the size limits.
  bool fusable(const Draft& b) const {
    if (!same_expr(d_, head_.op.size_expr, b.op.size_expr))
      return false;
    const KernelIR& bi = *b.kernel;
    if (body_.ir.instrs.size() + bi.instrs.size() > o_.max_fused_instrs ||
        body_.args.size() + b.args.size() > o_.max_fused_params)
      return false;
    std::vector<ParamUse> pu = param_uses(body_.ir), bu = param_uses(bi);
    for (size_t q = 0; q < b.args.size(); ++q) {
      if (!b.args[q].is_buffer)
        continue;
      bool bw = bu[q].writes(bi.params[q].kind);
      for (size_t p = 0; p < body_.args.size(); ++p) {
        if (!body_.args[p].is_buffer || body_.args[p].slot != b.args[q].slot)
          continue;
        bool pw = pu[p].writes(body_.ir.params[p].kind);
        if (!pw && !bw)
          continue;  // both only read it
        if (pu[p].other || bu[q].other || body_.args[p].offset != b.args[q].offset ||
            body_.ir.params[p].type != bi.params[q].type)
          return false;
      }
    }
    return true;
  }

  /// Fuses `b` into the open launch unless that could raise the peak of memory; returns
  /// whether it did.
  bool try_fuse(Draft& b) {
    LaunchBody fused = body_;
    append_launch(fused, *b.kernel, b.args);
    // Stores nothing after this launch reads go now, so a long chain's intermediates do not
    // pile up as parameters of the growing kernel.
    uint32_t at = b.from.back();
    remove_dead_work(fused, [&](uint32_t p) {
      const LaunchArg& a = fused.args[p];
      return !a.is_buffer || kept_[a.slot] || last_read_[a.slot] > at + 1;
    });
    if (!peak_safe(b, fused, at))
      return false;
    // The allocations and releases between the two launches: a release of what the open
    // launch uses waits until after it; the rest go before it (the fused launch runs where
    // the later one did).
    for (Draft& x : between_) {
      if (x.op.code == OpCode::Release && uses_slot(body_.args, x.op.dst))
        after_.push_back(std::move(x));
      else
        out_.push_back(std::move(x));
    }
    between_.clear();
    // The fused kernel's regions are the open launch's, then b's (markers are never removed).
    if (!head_.names.empty() || !b.names.empty()) {
      if (head_.names.empty())
        head_.names.assign(count_regions(body_.ir), "");
      if (b.names.empty())
        b.names.assign(count_regions(*b.kernel), "");
      head_.names.insert(head_.names.end(), b.names.begin(), b.names.end());
    }
    body_ = std::move(fused);
    head_.from.insert(head_.from.end(), b.from.begin(), b.from.end());
    fused_ = true;
    return true;
  }

  /// The fused launch holds, at once, what the open launch uses and what `b` allocated; the
  /// two launches did not, where a buffer the open launch uses was released between them.
  /// Fusion may go ahead only if each such buffer is matched by a buffer the fusion removes
  /// (an intermediate nothing else uses, which `dead-ops` drops) of the same size expression
  /// and at least its element size: then no point of the replay holds more bytes than the
  /// unfused recording did at `b`.
  bool peak_safe(const Draft& b, const LaunchBody& fused, uint32_t at) const {
    std::vector<uint32_t> delayed;
    for (const Draft& x : between_)
      if (x.op.code == OpCode::Release && uses_slot(body_.args, x.op.dst))
        delayed.push_back(x.op.dst);
    if (delayed.empty())
      return true;
    std::vector<uint32_t> removed;
    auto consider = [&](const LaunchArg& a) {
      if (!a.is_buffer)
        return;
      const Slot& sl = d_.slots[a.slot];
      if (!uses_slot(fused.args, a.slot) && sl.origin == SlotOrigin::Alloc && !kept_[a.slot] &&
          !pinned_[a.slot] && last_read_[a.slot] <= at + 1 && first_use_[a.slot] >= head_first_ &&
          std::find(removed.begin(), removed.end(), a.slot) == removed.end())
        removed.push_back(a.slot);
    };
    for (const LaunchArg& a : body_.args)
      consider(a);
    for (const LaunchArg& a : b.args)
      consider(a);
    for (uint32_t s : delayed) {
      const Slot& ds = d_.slots[s];
      auto match = std::find_if(removed.begin(), removed.end(), [&](uint32_t r) {
        const Slot& rs = d_.slots[r];
        return size_of(rs.type) >= size_of(ds.type) && ds.size_expr != kNone &&
               same_expr(d_, rs.size_expr, ds.size_expr);
      });
      if (match == removed.end())
        return false;
      removed.erase(match);
    }
    return true;
  }

  void flush() {
    if (!open_)
      return;
    if (fused_) {
      remove_dead_work(body_, [](uint32_t) { return true; });  // forwarded loads, CSE leftovers
      body_.ir.finalize();
      head_.kernel = std::make_shared<const KernelIR>(std::move(body_.ir));
      head_.args = std::move(body_.args);
    }
    out_.push_back(std::move(head_));
    for (Draft& x : after_)
      out_.push_back(std::move(x));
    for (Draft& x : between_)
      out_.push_back(std::move(x));
    after_.clear();
    between_.clear();
    open_ = false;
  }

  const RecordingData& d_;
  const OptimizeOptions& o_;
  const std::vector<uint8_t>& pinned_;
  std::vector<size_t> last_read_;  // per slot: 1 + the last recorded op that reads it (0: none)
  std::vector<size_t> first_use_;  // per slot: the first recorded op that uses it
  size_t head_first_ = 0;          // the first recorded op of the open launch
  std::vector<uint8_t> kept_;      // per slot: an input or an output (its contents are seen)
  Drafts out_;
  bool open_ = false, fused_ = false;
  Draft head_;       // the open launch (its op, and the recorded ops it stands for)
  LaunchBody body_;  // its kernel and arguments as they grow
  Drafts between_;   // allocations and releases since it, in order
  Drafts after_;     // releases that must follow it
};

// --- dead-op elimination ---------------------------------------------------------------------

/// Walks the ops backwards keeping what reaches an output, an input (a written input is seen by
/// the caller), a size (compress) or the host; stores into slots nothing reads later are
/// removed from kernels, and allocations of slots nothing uses any more go with them.
Drafts remove_dead(const RecordingData& d, Drafts ops, const std::vector<uint8_t>& pinned) {
  std::vector<uint8_t> needed = caller_slots(d, true);
  std::vector<uint8_t> keep(ops.size(), 1);
  for (size_t i = ops.size(); i-- > 0;) {
    Draft& dr = ops[i];
    const Op& op = dr.op;
    switch (op.code) {
      case OpCode::Alloc:
      case OpCode::Release:
      case OpCode::Sync:
        break;
      case OpCode::Launch: {
        LaunchBody body{*dr.kernel, dr.args};
        size_t n_instrs = body.ir.instrs.size(), n_params = body.ir.params.size();
        bool effect = remove_dead_work(
            body, [&](uint32_t p) { return !body.args[p].is_buffer || needed[body.args[p].slot]; });
        if (!effect) {
          keep[i] = 0;
          break;
        }
        if (body.ir.instrs.size() != n_instrs || body.ir.params.size() != n_params) {
          body.ir.finalize();
          dr.kernel = std::make_shared<const KernelIR>(std::move(body.ir));
          dr.args = std::move(body.args);
        }
        std::vector<ParamUse> uses = param_uses(*dr.kernel);
        for (size_t p = 0; p < dr.args.size(); ++p)
          if (dr.args[p].is_buffer && uses[p].reads())
            needed[dr.args[p].slot] = 1;
        break;
      }
      case OpCode::Copy: {
        auto kind = static_cast<CopyKind>(op.sub);
        if (kind != CopyKind::DeviceToHost && !needed[op.dst]) {
          keep[i] = 0;
          break;
        }
        if (kind != CopyKind::HostToDevice)
          needed[op.src] = 1;
        break;
      }
      case OpCode::Fill:
        keep[i] = needed[op.dst];
        break;
      case OpCode::Reduce:
      case OpCode::PrefixSum:
        keep[i] = needed[op.dst];
        if (keep[i])
          needed[op.src] = 1;
        break;
      case OpCode::Compress:    // its count is a size: always kept
      case OpCode::Collective:  // the other ranks wait for it: always kept
        needed[op.src] = 1;
        break;
    }
  }
  // Slots still used by a kept op (or an output, or whose size is read) keep their lifetime.
  std::vector<uint8_t> used = caller_slots(d, false);
  for (size_t s = 0; s < used.size(); ++s)
    used[s] |= pinned[s];
  std::vector<SlotUse> uses;
  for (size_t i = 0; i < ops.size(); ++i) {
    if (!keep[i])
      continue;
    draft_uses(ops[i], uses);
    for (const SlotUse& u : uses)
      used[u.slot] = 1;
  }
  Drafts out;
  out.reserve(ops.size());
  for (size_t i = 0; i < ops.size(); ++i) {
    OpCode c = ops[i].op.code;
    if (keep[i] && ((c != OpCode::Alloc && c != OpCode::Release) || used[ops[i].op.dst]))
      out.push_back(std::move(ops[i]));
  }
  return out;
}

// --- lifetimes -------------------------------------------------------------------------------

/// Moves each allocation down to just before the first op that uses its slot (never past a
/// compress, which changes sizes an allocation's size may read) and each release up to just
/// after the last one, for slots whose size no expression reads. Fewer buffers are live at
/// once; nothing runs in another order.
Drafts tighten_lifetimes(const RecordingData& d, Drafts ops, const std::vector<uint8_t>& pinned) {
  constexpr size_t kUnset = ~size_t{0};
  size_t n_slots = d.slots.size();
  std::vector<size_t> first(n_slots, kUnset), last(n_slots, kUnset), alloc_at(n_slots, kUnset),
      release_at(n_slots, kUnset);
  std::vector<uint8_t> is_output = caller_slots(d, false);
  std::vector<SlotUse> uses;
  for (size_t i = 0; i < ops.size(); ++i) {
    const Op& op = ops[i].op;
    if (op.code == OpCode::Alloc)
      alloc_at[op.dst] = i;
    else if (op.code == OpCode::Release)
      release_at[op.dst] = i;
    draft_uses(ops[i], uses);
    for (const SlotUse& u : uses) {
      if (first[u.slot] == kUnset)
        first[u.slot] = i;
      last[u.slot] = i;
    }
  }
  // Where each movable allocation and release goes: before / after op `i`.
  std::vector<std::vector<size_t>> allocs_before(ops.size() + 1), releases_after(ops.size());
  std::vector<uint8_t> moved(ops.size(), 0);
  size_t next_barrier = ops.size();
  std::vector<size_t> barrier_after(ops.size());
  for (size_t i = ops.size(); i-- > 0;) {
    barrier_after[i] = next_barrier;
    if (ops[i].op.code == OpCode::Compress || ops[i].op.code == OpCode::Collective)
      next_barrier = i;
  }
  for (size_t s = 0; s < n_slots; ++s) {
    if (pinned[s] || alloc_at[s] == kUnset || first[s] == kUnset)
      continue;
    size_t a = alloc_at[s];
    size_t to = std::min(first[s], barrier_after[a]);
    if (to > a) {
      moved[a] = 1;
      allocs_before[to].push_back(a);
    }
    if (release_at[s] != kUnset && !is_output[s] && last[s] < release_at[s] && last[s] > a) {
      moved[release_at[s]] = 1;
      releases_after[last[s]].push_back(release_at[s]);
    }
  }
  Drafts out;
  out.reserve(ops.size());
  for (size_t i = 0; i <= ops.size(); ++i) {
    std::sort(allocs_before[i].begin(), allocs_before[i].end());
    for (size_t a : allocs_before[i])
      out.push_back(std::move(ops[a]));
    if (i == ops.size())
      break;
    if (!moved[i])
      out.push_back(std::move(ops[i]));
    std::sort(releases_after[i].begin(), releases_after[i].end());
    for (size_t r : releases_after[i])
      out.push_back(std::move(ops[r]));
  }
  return out;
}

// --- buffer reuse ----------------------------------------------------------------------------

/// Hands the buffer of a slot released before an allocation to that allocation (Alloc with
/// `src`: docs/optimizer.md), in place of the release and a fresh allocation, where both have
/// the same size expression and element size (so the same bytes at every replay; the replayer
/// checks and falls back to a fresh allocation all the same) and no fresh allocation lies
/// between them (so no point of the replay holds more than before). Slots whose size an
/// expression reads keep their own buffers, and an output's buffer goes to the caller.
Drafts reuse_buffers(const RecordingData& d, Drafts ops, const std::vector<uint8_t>& pinned) {
  std::vector<uint8_t> is_output = caller_slots(d, false);
  auto movable = [&](uint32_t s) {
    const Slot& sl = d.slots[s];
    return sl.origin == SlotOrigin::Alloc && !pinned[s] && !is_output[s] && sl.size_expr != kNone;
  };
  std::vector<uint8_t> dropped(ops.size(), 0);
  std::vector<size_t> released;  // releases of movable slots since the last fresh allocation
  for (size_t i = 0; i < ops.size(); ++i) {
    Op& op = ops[i].op;
    if (op.code == OpCode::Release && movable(op.dst)) {
      released.push_back(i);
    } else if (op.code == OpCode::Alloc) {
      const Slot& ts = d.slots[op.dst];
      auto donor = pinned[op.dst] ? released.end()
                                  : std::find_if(released.begin(), released.end(), [&](size_t r) {
                                      const Slot& ds = d.slots[ops[r].op.dst];
                                      return size_of(ds.type) == size_of(ts.type) &&
                                             same_expr(d, ds.size_expr, ts.size_expr);
                                    });
      if (donor == released.end()) {
        released.clear();  // a fresh allocation: earlier releases must stay before it
        continue;
      }
      op.src = ops[*donor].op.dst;
      dropped[*donor] = 1;
      released.erase(donor);
    }
  }
  Drafts out;
  out.reserve(ops.size());
  for (size_t i = 0; i < ops.size(); ++i)
    if (!dropped[i])
      out.push_back(std::move(ops[i]));
  return out;
}

// --- writing the tables back -----------------------------------------------------------------

/// Rebuilds `d`'s ops, arguments, accesses, kernels and slots from the drafts; slots no op
/// allocates any more are dropped and the rest renumbered; guards follow the ops they were
/// placed after.
void assemble(RecordingData& d, Drafts& ops) {
  size_t n_slots = d.slots.size();
  std::vector<uint8_t> keep_slot(n_slots, 0);
  for (size_t s = 0; s < n_slots; ++s)
    keep_slot[s] = d.slots[s].origin != SlotOrigin::Alloc;
  for (const Draft& dr : ops)
    if (dr.op.code == OpCode::Alloc)
      keep_slot[dr.op.dst] = 1;
  std::vector<uint32_t> smap(n_slots, kNone);
  std::vector<Slot> slots;
  for (size_t s = 0; s < n_slots; ++s)
    if (keep_slot[s]) {
      smap[s] = static_cast<uint32_t>(slots.size());
      slots.push_back(d.slots[s]);
    }
  auto slot = [&](uint32_t s) { return s == kNone ? kNone : smap[s]; };

  std::vector<uint32_t> new_pos(d.ops.size(), kNone);
  std::vector<Op> new_ops;
  std::vector<LaunchArg> args;
  std::vector<Access> accesses;
  std::vector<std::shared_ptr<const KernelIR>> kernels;
  std::unordered_map<Hash128, uint32_t> kernel_index;
  std::vector<SlotUse> uses;
  for (Draft& dr : ops) {
    auto pos = static_cast<uint32_t>(new_ops.size());
    for (uint32_t f : dr.from)
      new_pos[f] = pos;
    Op op = dr.op;
    draft_uses(dr, uses);
    op.dst = slot(op.dst);
    op.src = slot(op.src);
    if (op.code == OpCode::Alloc)
      slots[op.dst].origin_index = pos;
    if (op.code == OpCode::Launch) {
      auto [it, added] =
          kernel_index.try_emplace(dr.kernel->hash, static_cast<uint32_t>(kernels.size()));
      if (added)
        kernels.push_back(dr.kernel);
      op.kernel = it->second;
      op.arg_begin = static_cast<uint32_t>(args.size());
      for (LaunchArg a : dr.args) {
        if (a.is_buffer)
          a.slot = slot(a.slot);
        args.push_back(a);
      }
      op.arg_end = static_cast<uint32_t>(args.size());
    }
    op.access_begin = static_cast<uint32_t>(accesses.size());
    for (const SlotUse& u : uses) {
      if (u.read)
        accesses.push_back({slot(u.slot), false});
      if (u.write)
        accesses.push_back({slot(u.slot), true});
    }
    op.access_end = static_cast<uint32_t>(accesses.size());
    new_ops.push_back(op);
  }

  // A guard is checked once every op it followed has run: after the latest of their new
  // positions (ops dropped as dead impose nothing).
  std::vector<uint32_t> after(d.ops.size(), kNone);
  uint32_t latest = kNone;
  for (size_t i = 0; i < d.ops.size(); ++i) {
    if (new_pos[i] != kNone && (latest == kNone || new_pos[i] > latest))
      latest = new_pos[i];
    after[i] = latest;
  }
  for (Guard& g : d.guards)
    if (g.after_op != kNone)
      g.after_op = after[g.after_op];
  std::stable_sort(d.guards.begin(), d.guards.end(), [](const Guard& a, const Guard& b) {
    return (a.after_op == kNone ? 0 : uint64_t{a.after_op} + 1) <
           (b.after_op == kNone ? 0 : uint64_t{b.after_op} + 1);
  });

  for (uint32_t& s : d.inputs)
    s = slot(s);
  for (RecordingData::Output& o : d.outputs)
    o.slot = slot(o.slot);
  d.slots = std::move(slots);
  d.ops = std::move(new_ops);
  d.args = std::move(args);
  d.accesses = std::move(accesses);
  d.kernels = std::move(kernels);
  d.region_names.clear();
  for (size_t i = 0; i < d.ops.size(); ++i)
    if (d.ops[i].code == OpCode::Launch && !ops[i].names.empty())
      add_region_names(d, d.ops[i].kernel, ops[i].names);

  // The size expressions something still reads, in their order (operands stay first).
  std::vector<uint8_t> reached(d.exprs.size(), 0);
  for_expr_refs(d, [&](uint32_t& e) { reached[e] = 1; });
  for (size_t i = d.exprs.size(); i-- > 0;) {
    const ExprNode& node = d.exprs[i];
    if (reached[i] && !is_leaf(node.op))
      reached[node.lhs] = reached[node.rhs] = 1;
  }
  std::vector<uint32_t> emap(d.exprs.size(), kNone);
  std::vector<ExprNode> exprs;
  for (size_t i = 0; i < d.exprs.size(); ++i) {
    if (!reached[i])
      continue;
    ExprNode node = d.exprs[i];
    if (node.op == SizeOp::BufferSize)
      node.slot = slot(node.slot);
    else if (!is_leaf(node.op)) {
      node.lhs = emap[node.lhs];
      node.rhs = emap[node.rhs];
    }
    emap[i] = static_cast<uint32_t>(exprs.size());
    exprs.push_back(node);
  }
  d.exprs = std::move(exprs);
  for_expr_refs(d, [&](uint32_t& e) { e = emap[e]; });
}

}  // namespace

ValidatedRecording optimize(const ValidatedRecording& d, const OptimizeOptions& options) {
  if (d->is_capture || !d->passes.empty())
    return d;
  RecordingData out = *d;
  auto guards_before = static_cast<uint32_t>(out.guards.size());
  canonicalize_sizes(out);
  Drafts ops = to_drafts(out);
  {
    Counts c = count(ops);
    out.passes.push_back({"sizes", c.ops, c.ops, c.launches, c.launches, c.allocs, c.allocs,
                          guards_before, static_cast<uint32_t>(out.guards.size())});
  }
  std::vector<uint8_t> pinned = sized_slots(out);
  auto run = [&](const char* name, auto&& pass) {
    Counts before = count(ops);
    ops = pass(std::move(ops));
    Counts after = count(ops);
    auto guards = static_cast<uint32_t>(out.guards.size());
    out.passes.push_back({name, before.ops, after.ops, before.launches, after.launches,
                          before.allocs, after.allocs, guards, guards});
  };
  if (options.fuse_launches)
    run("fuse-launches", [&](Drafts x) { return Fuser(out, options, pinned).run(std::move(x)); });
  if (options.remove_dead_ops)
    run("dead-ops", [&](Drafts x) { return remove_dead(out, std::move(x), pinned); });
  if (options.tighten_lifetimes)
    run("lifetimes", [&](Drafts x) { return tighten_lifetimes(out, std::move(x), pinned); });
  if (options.reuse_buffers)
    run("reuse-buffers", [&](Drafts x) { return reuse_buffers(out, std::move(x), pinned); });
  assemble(out, ops);
  auto checked = ValidatedRecording::try_check(std::move(out));
  if (const auto* issue = std::get_if<ValidationIssue>(&checked)) {
    logging::record().error(
        "the recording optimiser produced an invalid recording ({}); "
        "replaying the recording unoptimised",
        issue->message());
    return d;
  }
  return std::get<ValidatedRecording>(std::move(checked));
}

}  // namespace ff::rec
