// The replay loop: bind inputs, check guards, walk the planned ops with new pointers.
//
// One walker, Replay<Executor>, describes each op once: it evaluates the op's sizes, checks
// every access against the slots' capacities, computes the pointers, keeps the slots' books
// (live buffers, sizes) and hands the op to an executor (replay/executors.h), which decides
// how it reaches the backend: op by op, batched into command lists, observed. run() picks the
// executor once per replay; the walker is instantiated per executor, so no per-op code asks
// which mode it is in.
#include "replay/replayer.h"

#include <cstring>
#include <string>

#include "backend/command_list.h"
#include "dist/mpi_world.h"
#include "freezeframe/errors.h"
#include "recorder/size_eval.h"
#include "replay/executors.h"

namespace ff::replay {
namespace {

using rec::OpCode;

/// Per-thread scratch, reused across replays so the loop allocates nothing of its own.
struct Scratch {
  std::vector<void*> ptr;
  std::vector<uint64_t> size;      // logical sizes (expressions read these)
  std::vector<uint64_t> capacity;  // bytes addressable in the slot
  std::vector<uint8_t> live;       // allocated by this replay and not yet released
  std::vector<KernelArg> args;
  std::vector<SizeNode> prov;
  std::vector<SizeNode> prov2;
  std::vector<std::vector<SizeNode>> arg_provs;  // Nested: per launch argument
  CommandList list;                              // Batching
};

thread_local Scratch t_scratch;

template <class Exec>
class Replay {
 public:
  Replay(const ReplayPlan& plan, Backend& backend, Exec exec, Scratch& scratch)
      : plan_(plan), d_(plan.data()), backend_(backend), exec_(exec), s_(scratch) {
    s_.list.clear();
    size_t n = d_.slots.size();
    s_.ptr.assign(n, nullptr);
    s_.size.assign(n, 0);
    s_.capacity.assign(n, 0);
    s_.live.assign(n, 0);
    s_.args.resize(plan.max_args);
  }

  /// True once this replay has issued a collective: from then on the other ranks wait for this
  /// one's next collective, so an error may not leave it alone (replay_with()).
  bool issued_collective() const { return collectives_done_ > 0 || in_collective_; }

  /// True while a collective is under way (its count or data exchange): an error there leaves
  /// the other ranks inside it, which no agreement can reach.
  bool in_collective() const { return in_collective_; }

  /// True when an agreement is still ahead in this replay (before its next collective, or at
  /// its end): the other ranks will wait there for this one (agree_failure()).
  bool agreement_ahead() const {
    return collectives_done_ < plan_.n_collectives || (plan_.agree_at_end && !end_agreed_);
  }

  /// True once an agreement said that another rank failed: this rank's error is already the
  /// agreed one.
  bool agreed() const { return agreed_; }

  /// This rank failed after a collective (`guard`: a size guard): tells every rank in the
  /// agreement they wait in next. Returns that agreement.
  dist_impl::Agreement agree_failure(bool guard) {
    return agree(guard ? dist_impl::Outcome::GuardFailed : dist_impl::Outcome::Failed);
  }

  void set_check_collectives(bool on) { check_collectives_ = on; }

  void set_agreements(bool on) { agreements_ = on; }

  /// Whether this replay makes the agreements (ReplayOptions::agreements).
  bool agreements() const { return agreements_; }

  void run(std::span<const ReplayInput> inputs, std::vector<ReplayOutput>& outs) {
    check_ranks();
    bind_inputs(inputs);
    check_guards(0, plan_.n_early_guards);
    copy_written_inputs(inputs);
    walk(plan_.sequence());
    exec_.finish();
    if (agreements_ && plan_.agree_at_end) {
      end_agreed_ = true;
      agree_ok();
    }
    hand_over_outputs(outs);
    cleanup();
  }

  /// Gives back everything this replay still holds (at once: the executor's work has run or
  /// is abandoned): the executor's unrun work, live slots and input copies.
  void cleanup() noexcept {
    exec_.abandon();
    for (size_t s = 0; s < s_.live.size(); ++s)
      if (s_.live[s]) {
        backend_.release(s_.ptr[s]);
        s_.live[s] = 0;
      }
    for (void* c : input_copies_)
      backend_.release(c);
    input_copies_.clear();
  }

 private:
  void check_ranks();
  void bind_inputs(std::span<const ReplayInput> inputs);
  void copy_written_inputs(std::span<const ReplayInput> inputs);
  // Fills `outs` (its capacity reused: a replay loop allocates nothing for them).
  void hand_over_outputs(std::vector<ReplayOutput>& outs);

  /// Runs an op sequence in order: the plan's (ReplayPlan::sequence) or, once the IR has loops,
  /// a loop op's body, a subrange of the same array. A loop op's case in step() would run
  /// `while (condition) walk(plan_.body(p));`, its condition read like a compress count (a
  /// host read: a batching executor submits what it holds first).
  void walk(std::span<const PlannedOp> ops) {
    for (const PlannedOp& p : ops)
      step(plan_.index_of(p), p);
  }

  void step(size_t i, const PlannedOp& p) {
    const rec::Op& op = d_.ops[i];
    exec_.begin_op(i);
    switch (p.code) {
      case OpCode::Alloc:
        alloc(i, p, op);
        break;
      case OpCode::Release:
        release_slot(op.dst);
        break;
      case OpCode::Copy:
        copy(i, p, op);
        break;
      case OpCode::Fill: {
        uint64_t n = eval(p.size, "fill");
        char* dst = access(op.dst, op.dst_offset, bytes_of(n, op.elem_size, i), i);
        exec_.fill(dst, n, op.elem_size, op.value);
        break;
      }
      case OpCode::Launch:
        launch(i, p, op);
        break;
      case OpCode::Reduce:
      case OpCode::PrefixSum:
      case OpCode::Compress:
        scan(i, p, op);
        break;
      case OpCode::Collective:
        collective(i, p, op);
        break;
      case OpCode::Sync:
        exec_.sync();
        break;
    }
    exec_.end_op(i, s_.size);
    if (p.guard_begin != p.guard_end)
      check_guards(p.guard_begin, p.guard_end);
  }

  void alloc(size_t i, const PlannedOp& p, const rec::Op& op) {
    uint64_t n = eval(p.size, "alloc");
    uint64_t capacity = bytes_of(n, size_of(op.type), i);
    void* ptr;
    if (Exec::kReusesBuffers && op.src != rec::kNone && s_.live[op.src] &&
        s_.capacity[op.src] == capacity) {
      // The optimiser handed this slot the buffer of one that ends here (reuse-buffers).
      ptr = s_.ptr[op.src];
      s_.live[op.src] = 0;
    } else {
      if (op.src != rec::kNone)
        release_slot(op.src);
      ptr = exec_.alloc(op.type, n, prov_of(op.size_expr, s_.prov));
    }
    s_.ptr[op.dst] = ptr;
    s_.size[op.dst] = n;
    s_.capacity[op.dst] = capacity;
    s_.live[op.dst] = 1;
  }

  /// Gives a live slot's buffer back (after the work before it).
  void release_slot(uint32_t slot) {
    if (!s_.live[slot])
      return;
    exec_.release(s_.ptr[slot]);
    s_.live[slot] = 0;
  }

  void copy(size_t i, const PlannedOp& p, const rec::Op& op) {
    uint64_t bytes = eval(p.size, "copy");
    char* dst = access(op.dst, op.dst_offset, bytes, i);
    auto kind = static_cast<CopyKind>(op.sub);
    const void* src;
    if (kind == CopyKind::HostToDevice) {
      const auto& c = d_.constants[op.constant];
      if (bytes > c.size())
        throw FreezeError("replay op " + std::to_string(i) + ": constant too small");
      src = c.data();
    } else {
      src = access(op.src, op.src_offset, bytes, i);
    }
    exec_.copy(dst, src, bytes, kind);
  }

  /// Reduce, PrefixSum, Compress: `n` elements in, one (Reduce) or `n` out.
  void scan(size_t i, const PlannedOp& p, const rec::Op& op) {
    uint64_t n = eval(p.size, to_string(p.code));
    size_t in_elem = p.code == OpCode::Compress ? 1 : size_of(op.type);
    size_t out_elems = p.code == OpCode::Reduce ? 1 : n;
    size_t out_elem = p.code == OpCode::Compress ? 4 : size_of(op.type);
    const char* in = access(op.src, op.src_offset, bytes_of(n, in_elem, i), i);
    char* out = access(op.dst, op.dst_offset, bytes_of(out_elems, out_elem, i), i);
    if (p.code == OpCode::Reduce)
      exec_.reduce(static_cast<ReduceOp>(op.sub), op.type, in, n, out);
    else if (p.code == OpCode::PrefixSum)
      exec_.prefix_sum(op.type, op.flag != 0, in, n, out);
    else
      s_.size[op.dst] = exec_.compress(in, n, out);  // data-dependent, read at replay
  }

  /// An ff::dist collective: the result's count comes from the other ranks (all_gather,
  /// broadcast, sendrecv), and a destination buffer too small for it is replaced.
  void collective(size_t i, const PlannedOp& p, const rec::Op& op) {
    uint64_t n = eval(p.size, "collective");
    size_t elem = size_of(op.type);
    dist_impl::Collective c;
    c.kind = static_cast<rec::CollectiveKind>(op.sub);
    rec::CollectivePeers peers = rec::collective_peers(op);
    c.type = op.type;
    c.op =
        c.kind == rec::CollectiveKind::AllReduce ? static_cast<ReduceOp>(op.flag) : ReduceOp::Add;
    // This process's place: relative peers resolve here, and a recording inside this replay
    // records the peers as they were named.
    c.rank = static_cast<int>(place_.rank);
    c.ranks = static_cast<int>(place_.ranks);
    c.root = peers.peer;
    c.dest_spec = peers.dest();
    c.source_spec = peers.from();
    c.dest = detail::resolve_peer(c.dest_spec, c.rank, c.ranks);
    c.source = detail::resolve_peer(c.source_spec, c.rank, c.ranks);
    c.check = check_collectives_;
    c.in = access(op.src, op.src_offset, bytes_of(n, elem, i), i);
    c.count = n;
    // A replay into an open recording leaves the agreements to that recording (the recording
    // backend makes them for the outermost one), so each call makes them once. The work queued
    // before runs first: its errors are this rank's, before the exchange, not inside it.
    exec_.flush();
    if (agreements_ && collectives_done_ > 0)
      agree_ok();
    in_collective_ = true;
    c.out_count = exec_.collective_count(c);
    uint64_t bytes = bytes_of(c.out_count, elem, i);
    if (bytes > s_.capacity[op.dst]) {
      release_slot(op.dst);
      s_.ptr[op.dst] = exec_.alloc(op.type, c.out_count, {});
      s_.capacity[op.dst] = bytes;
      s_.live[op.dst] = 1;
    }
    c.out = s_.ptr[op.dst];
    exec_.collective(c);
    in_collective_ = false;
    ++collectives_done_;
    s_.size[op.dst] = c.out_count;
  }

  /// This rank's agreement with the others; an MPI error inside leaves them in it, as one
  /// inside a collective does.
  dist_impl::Agreement agree(dist_impl::Outcome mine) {
    in_collective_ = true;
    dist_impl::Agreement a = dist_impl::agree(mine);
    in_collective_ = false;
    return a;
  }

  /// An agreement in which this rank is fine; raises where another failed (settle()).
  void agree_ok() { settle(agree(dist_impl::Outcome::Ok)); }

  /// After an agreement in which this rank was fine: raises where another rank failed. Every
  /// replaying rank retries the call on another path when only guards failed and no rank is
  /// tracing; otherwise every rank raises.
  void settle(const dist_impl::Agreement& a) {
    if (!a.failed())
      return;
    agreed_ = true;
    std::string who = "rank " + std::to_string(a.failed_rank);
    if (a.retry())
      throw GuardError(who + " left this replay after a collective on a size guard that did " +
                       "not hold; every rank tries the call's other paths");
    throw dist_impl::EveryRankError("ff::dist: " + who +
                                    " failed in a replay after a collective (see that rank's " +
                                    "error), so every rank raises here instead of waiting for it");
  }

  void launch(size_t i, const PlannedOp& p, const rec::Op& op);
  void check_guards(uint32_t begin, uint32_t end);

  uint64_t eval(const SizeRef& r, const char* where) const {
    switch (r.kind) {
      case SizeRef::Const:
        return r.value;
      case SizeRef::SlotSize:
        return s_.size[r.index];
      case SizeRef::Expr:
        return rec::evaluate(d_, r.index, s_.size, place_, where);
    }
    return 0;
  }

  /// Postfix provenance of expression `e` with slot leaves mapped to this replay's pointers;
  /// empty unless the executor passes provenance down.
  SizeProv prov_of(uint32_t e, std::vector<SizeNode>& out) const {
    if constexpr (!Exec::kProvenance) {
      (void)e;
      (void)out;
      return {};
    } else {
      out.clear();
      if (e == rec::kNone)
        return {};
      append_prov(e, out);
      return out;
    }
  }

  void append_prov(uint32_t e, std::vector<SizeNode>& out) const {
    const rec::ExprNode& n = d_.exprs[e];
    switch (n.op) {
      case SizeOp::Const:
        out.push_back({SizeOp::Const, n.value, nullptr});
        return;
      case SizeOp::BufferSize:
        out.push_back({SizeOp::BufferSize, s_.size[n.slot], s_.ptr[n.slot]});
        return;
      case SizeOp::Rank:
        out.push_back({SizeOp::Rank, place_.rank, nullptr});
        return;
      case SizeOp::Ranks:
        out.push_back({SizeOp::Ranks, place_.ranks, nullptr});
        return;
      default:
        append_prov(n.lhs, out);
        append_prov(n.rhs, out);
        out.push_back({n.op, 0, nullptr});
    }
  }

  /// n elements of `elem` bytes, refused if that overflows (sizes from outside are arbitrary).
  uint64_t bytes_of(uint64_t n, uint64_t elem, size_t op) const {
    if (elem != 0 && n > UINT64_MAX / elem)
      throw FreezeError("replay op " + std::to_string(op) + " (" + to_string(d_.ops[op].code) +
                        "): " + std::to_string(n) + " elements of " + std::to_string(elem) +
                        " bytes overflow 64 bits");
    return n * elem;
  }

  /// The bounds check of every access: bytes [offset, offset + bytes) of `slot`.
  void check_range(uint32_t slot, uint64_t offset, uint64_t bytes, size_t op) const {
    if (offset > s_.capacity[slot] || bytes > s_.capacity[slot] - offset)
      throw FreezeError("replay op " + std::to_string(op) + " (" + to_string(d_.ops[op].code) +
                        ") would access bytes [" + std::to_string(offset) + ", " +
                        std::to_string(offset + bytes) + ") of slot s" + std::to_string(slot) +
                        " which holds " + std::to_string(s_.capacity[slot]) +
                        " bytes for these inputs");
  }

  /// The address of a checked access.
  char* access(uint32_t slot, uint64_t offset, uint64_t bytes, size_t op) const {
    check_range(slot, offset, bytes, op);
    return static_cast<char*>(s_.ptr[slot]) + offset;
  }

  const ReplayPlan& plan_;
  const rec::RecordingData& d_;
  Backend& backend_;
  Exec exec_;
  Scratch& s_;
  std::vector<void*> input_copies_;
  bool in_collective_ = false;
  bool agreed_ = false;
  bool end_agreed_ = false;
  uint32_t collectives_done_ = 0;
  bool check_collectives_ = false;
  bool agreements_ = true;
  rec::RankPlace place_;  // this process's rank, where the recording reads it (check_ranks)
};

/// A recording with collectives replays only with the rank count it was recorded with (and a
/// sendrecv with absolute peers only on its rank): checked before any op, so a rank that cannot
/// replay fails before the others wait for it (a frozen function then records anew, issuing
/// the same collectives in the same order). A recording that reads the rank as an expression
/// needs ff::dist running, on any rank.
template <class Exec>
void Replay<Exec>::check_ranks() {
  if (plan_.dist_ranks == 0 && !plan_.reads_rank)
    return;
  if (!dist_impl::initialized()) {
    if (plan_.dist_ranks == 0)
      throw GuardError(
          "the recording reads ff::dist's rank or rank count, and ff::dist is not initialised "
          "in this process (call ff::dist::init and run under mpirun)");
    std::string recorded = std::to_string(plan_.dist_ranks);
    throw GuardError("the recording runs collectives over " + recorded +
                     " ranks, and ff::dist is not initialised in this process (call "
                     "ff::dist::init and run under mpirun -np " +
                     recorded + ")");
  }
  int rank = dist_impl::rank(), ranks = dist_impl::size();
  place_ = {static_cast<uint64_t>(rank), static_cast<uint64_t>(ranks)};
  if (plan_.dist_ranks == 0)
    return;
  if (static_cast<uint32_t>(ranks) != plan_.dist_ranks) {
    std::string recorded = std::to_string(plan_.dist_ranks);
    throw GuardError("the recording runs collectives over " + recorded + " ranks, this run has " +
                     std::to_string(ranks) + " (run it under mpirun -np " + recorded +
                     ", or record it anew)");
  }
  if (plan_.dist_rank >= 0 && plan_.dist_rank != rank)
    throw GuardError("the recording's sendrecv was recorded on rank " +
                     std::to_string(plan_.dist_rank) +
                     " with absolute peers and cannot replay on rank " + std::to_string(rank) +
                     " (ff::dist::relative peers replay on every rank): record it anew");
}

template <class Exec>
void Replay<Exec>::bind_inputs(std::span<const ReplayInput> inputs) {
  if (inputs.size() != d_.inputs.size())
    throw FreezeError("replay: " + std::to_string(inputs.size()) +
                      " inputs given, the recording "
                      "takes " +
                      std::to_string(d_.inputs.size()));
  for (size_t k = 0; k < inputs.size(); ++k) {
    uint32_t slot = d_.inputs[k];
    const rec::Slot& sl = d_.slots[slot];
    if (inputs[k].type != sl.type)
      throw FreezeError("replay: input " + std::to_string(k) + " has element type " +
                        to_string(inputs[k].type) + ", the recording expects " +
                        to_string(sl.type));
    if (s_.ptr[slot] && s_.ptr[slot] != inputs[k].ptr)
      throw FreezeError("replay: inputs " + std::to_string(sl.origin_index) + " and " +
                        std::to_string(k) + " were one array when recorded and differ now");
    s_.ptr[slot] = const_cast<void*>(inputs[k].ptr);
    s_.size[slot] = inputs[k].size;
    s_.capacity[slot] = inputs[k].size * size_of(sl.type);
  }
  for (size_t k = 0; k < inputs.size(); ++k)
    for (size_t j = 0; j < k; ++j)
      if (inputs[j].ptr == inputs[k].ptr && d_.inputs[j] != d_.inputs[k] && inputs[k].size != 0)
        throw FreezeError("replay: inputs " + std::to_string(j) + " and " + std::to_string(k) +
                          " are one array now but were distinct when recorded");
}

// Copy-on-write for inputs the recording writes: the caller's arrays change only if the whole
// replay succeeds (the front end writes the outputs back). Before the first op, straight on
// the backend (not an op: no executor sees it).
template <class Exec>
void Replay<Exec>::copy_written_inputs(std::span<const ReplayInput> inputs) {
  for (size_t k = 0; k < inputs.size(); ++k) {
    if (!plan_.written_inputs[k])
      continue;
    uint32_t slot = d_.inputs[k];
    if (s_.ptr[slot] != inputs[k].ptr)
      continue;  // an alias already copied
    void* copy = backend_.alloc(d_.slots[slot].type, s_.size[slot], {});
    input_copies_.push_back(copy);
    if (s_.capacity[slot])
      backend_.copy(copy, inputs[k].ptr, s_.capacity[slot], CopyKind::DeviceToDevice);
    s_.ptr[slot] = copy;
  }
}

template <class Exec>
void Replay<Exec>::hand_over_outputs(std::vector<ReplayOutput>& outs) {
  outs.assign(d_.outputs.size(), ReplayOutput{});
  for (size_t k = 0; k < outs.size(); ++k) {
    uint32_t slot = d_.outputs[k].slot;
    const rec::Slot& sl = d_.slots[slot];
    ReplayOutput& o = outs[k];
    o.ptr = s_.ptr[slot];
    o.type = sl.type;
    o.size = s_.size[slot];
    for (size_t j = 0; j < k; ++j)
      if (d_.outputs[j].slot == slot)
        o.same_as = static_cast<int32_t>(j);
    if (o.same_as >= 0)
      continue;
    if (sl.origin == rec::SlotOrigin::Input) {
      bool copied = false;
      for (void* c : input_copies_)
        if (c == o.ptr)
          copied = true;
      if (copied)
        std::erase(input_copies_, o.ptr);  // the caller owns the written copy now
      else
        o.input = static_cast<int32_t>(sl.origin_index);
    } else {
      s_.live[slot] = 0;  // ownership passes to the caller
    }
  }
}

template <class Exec>
void Replay<Exec>::check_guards(uint32_t begin, uint32_t end) {
  for (uint32_t k = begin; k < end; ++k) {
    const rec::Guard& g = d_.guards[plan_.guard_order[k]];
    uint64_t a = rec::evaluate(d_, g.lhs, s_.size, place_, "guard");
    uint64_t b = rec::evaluate(d_, g.rhs, s_.size, place_, "guard");
    bool outcome = compare(g.cmp, a, b);
    if (outcome != g.outcome)
      throw GuardError("recorded size guard " + std::to_string(plan_.guard_order[k]) + " (" +
                       g.what + ": " + rec::expr_to_string(d_, g.lhs) + " " + to_string(g.cmp) +
                       " " + rec::expr_to_string(d_, g.rhs) + " was " +
                       (g.outcome ? "true" : "false") + " with " + std::to_string(g.lhs_value) +
                       " and " + std::to_string(g.rhs_value) + ") is " +
                       (outcome ? "true" : "false") + " with " + std::to_string(a) + " and " +
                       std::to_string(b) + " for these inputs: record this path anew");
    if constexpr (Exec::kProvenance) {
      SizeGuard sg{g.cmp, prov_of(g.lhs, s_.prov), prov_of(g.rhs, s_.prov2), a, b, g.what.c_str()};
      exec_.guard(sg, outcome);
    }
  }
}

template <class Exec>
void Replay<Exec>::launch(size_t i, const PlannedOp& p, const rec::Op& op) {
  uint64_t n = eval(p.size, "launch size");
  KernelArg* args = s_.args.data();
  const uint64_t* tmpl = plan_.arg_template.data() + p.template_begin;
  for (uint32_t a = 0; a < p.n_args; ++a)
    args[a] = KernelArg{tmpl[a], {}};
  for (uint32_t k = p.buffer_begin; k < p.buffer_end; ++k) {
    const BufferPatch& bp = plan_.buffer_patches[k];
    if (bp.lane_bytes)
      check_range(bp.slot, bp.offset, bytes_of(n, bp.lane_bytes, i), i);
    else if (bp.offset != 0 && bp.offset >= s_.capacity[bp.slot])
      check_range(bp.slot, bp.offset, 1, i);
    if (bp.fixed_bytes && n != 0)
      check_range(bp.slot, bp.offset, bp.fixed_bytes, i);
    args[bp.arg].bits = reinterpret_cast<uint64_t>(static_cast<char*>(s_.ptr[bp.slot]) + bp.offset);
  }
  for (uint32_t k = p.scalar_begin; k < p.scalar_end; ++k) {
    const ScalarPatch& sp = plan_.scalar_patches[k];
    args[sp.arg].bits = eval(sp.size, "launch argument");
  }
  for (uint32_t k = p.bound_begin; k < p.bound_end; ++k) {
    const BoundCheck& bc = plan_.bound_checks[k];
    const BufferPatch& bp = plan_.buffer_patches[bc.patch];
    check_range(bp.slot, bp.offset, bytes_of(args[bc.bound_arg].bits, bc.elem_bytes, i), i);
  }
  if constexpr (Exec::kProvenance) {
    // Each sized scalar carries its expression (the outer recording learns exact sizes).
    s_.arg_provs.resize(p.n_args);
    for (uint32_t a = 0; a < p.n_args; ++a) {
      const rec::LaunchArg& la = d_.args[op.arg_begin + a];
      if (!la.is_buffer && la.size_expr != rec::kNone)
        args[a].prov = prov_of(la.size_expr, s_.arg_provs[a]);
    }
  }
  auto run = [&] {
    exec_.launch(plan_.kernels[p.kernel], n, prov_of(op.size_expr, s_.prov),
                 std::span<const KernelArg>(args, p.n_args));
  };
  if constexpr (Exec::kProvenance) {
    // Into an outer recording: it keeps the kernel's region names as a traced launch's.
    RegionNamesScope names(d_.region_names_of(op.kernel));
    run();
  } else {
    run();
  }
}

/// This replay failed with `e` after issuing a collective. Where an agreement is still ahead
/// (before the next collective, or at the end), the other ranks wait in it: this rank tells them
/// there, and they raise (or retry) with it. Where none is, nobody waits for this rank any more
/// and it raises alone; a guard that fails there (one on a size this rank computed itself, a
/// compress count, after a recording whose collectives are all all_reduces) may not send it
/// back to record the call alone, so it becomes a FreezeError. Inside a collective or an
/// agreement, or inside an open recording (which makes the agreements itself), every rank ends.
template <class Exec>
void after_collective_failure(Replay<Exec>& r, const std::exception& e) {
  bool guard = dynamic_cast<const GuardError*>(&e) != nullptr;
  std::string what = e.what();
  if (r.agreements() && !r.in_collective()) {
    if (!r.agreement_ahead()) {
      if (guard)
        throw FreezeError("a size guard failed after the replay's last collective (" + what +
                          "); the other ranks have finished this call, so this rank cannot "
                          "retry it alone");
      return;  // the caller rethrows e
    }
    dist_impl::Agreement a{};
    try {
      a = r.agree_failure(guard);
    } catch (const std::exception& again) {
      dist_impl::abort_all("a replay failed after a collective (" + what +
                           ") and could not tell the other ranks (" + again.what() + ")");
      throw;
    }
    if (guard && !a.retry())  // another rank cannot retry: every rank raises instead
      throw dist_impl::GuardBesideRecorder(
          "ff::dist: a replay's size guard failed after a collective (" + what +
          ") where another rank cannot retry the call, so every rank raises");
    return;  // the caller rethrows e: the other ranks raise or retry with it
  }
  const char* where = r.in_collective() ? "inside a collective or agreement"
                                        : "after a collective, inside an open recording";
  dist_impl::abort_all("a replay failed " + std::string(where) + " (" + what +
                       "); the other ranks would wait for this one forever");
}

template <class Exec>
void replay_with(const ReplayPlan& plan, Backend& backend, Exec exec,
                 std::span<const ReplayInput> inputs, const ReplayOptions& options,
                 std::vector<ReplayOutput>& outs) {
  Replay<Exec> r(plan, backend, exec, t_scratch);
  r.set_check_collectives(options.check_collectives);
  r.set_agreements(options.agreements);
  try {
    r.run(inputs, outs);
  } catch (const dist_impl::EveryRankError&) {  // every rank gives up here: none waits
    r.cleanup();
    throw;
  } catch (const std::exception& e) {
    r.cleanup();
    if (r.issued_collective() && !r.agreed())
      after_collective_failure(r, e);
    throw;
  } catch (...) {
    r.cleanup();
    throw;
  }
}

}  // namespace

void run(const ReplayPlan& plan, Backend& backend, std::span<const ReplayInput> inputs,
         const ReplayOptions& options, std::vector<ReplayOutput>& outs) {
  outs.clear();  // nothing of an earlier replay's stays behind an error
  // Op by op when an observer times or traces each op, or when an outer recording must see
  // single ops with their provenance; batched when the backend prefers command lists.
  if (options.provenance)
    return options.observer
               ? replay_with(plan, backend, Observed<Nested>(Nested(backend), *options.observer),
                             inputs, options, outs)
               : replay_with(plan, backend, Nested(backend), inputs, options, outs);
  if (options.observer)
    return replay_with(plan, backend, Observed<Direct>(Direct(backend), *options.observer), inputs,
                       options, outs);
  if (backend.prefers_command_lists()) {
    auto plan_id = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(&plan));
    return replay_with(plan, backend, Batching(backend, t_scratch.list, plan_id), inputs, options,
                       outs);
  }
  return replay_with(plan, backend, Direct(backend), inputs, options, outs);
}

std::vector<ReplayOutput> run(const ReplayPlan& plan, Backend& backend,
                              std::span<const ReplayInput> inputs, const ReplayOptions& options) {
  std::vector<ReplayOutput> outs;
  run(plan, backend, inputs, options, outs);
  return outs;
}

}  // namespace ff::replay
