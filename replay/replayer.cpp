// The replay loop: bind inputs, check guards, walk the planned ops with new pointers.
#include "replay/replayer.h"

#include <cstring>
#include <string>

#include "backend/command_list.h"
#include "freezeframe/errors.h"
#include "recorder/size_eval.h"

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
  CommandList list;  // batched device work (Backend::prefers_command_lists)
};

thread_local Scratch t_scratch;

class Run {
 public:
  Run(const ReplayPlan& plan, Backend& backend, const ReplayOptions& options)
      : plan_(plan),
        d_(plan.data()),
        backend_(backend),
        options_(options),
        s_(t_scratch),
        // Op by op when an observer times or traces each op, or when an outer recording
        // must see single ops with their provenance.
        batch_(!options.provenance && !options.observer && backend.prefers_command_lists()) {
    s_.list.clear();
    size_t n = d_.slots.size();
    s_.ptr.assign(n, nullptr);
    s_.size.assign(n, 0);
    s_.capacity.assign(n, 0);
    s_.live.assign(n, 0);
    s_.args.resize(plan.max_args);
  }

  std::vector<ReplayOutput> execute(std::span<const ReplayInput> inputs);
  void cleanup() noexcept;

 private:
  /// Gives a live slot's buffer back: after the work before it when batching.
  void release_slot(uint32_t slot) {
    if (!s_.live[slot])
      return;
    if (batch_)
      batched(CommandKind::Release).dst = s_.ptr[slot];
    else
      backend_.release(s_.ptr[slot]);
    s_.live[slot] = 0;
  }

  uint64_t eval(const SizeRef& r, const char* where) const {
    switch (r.kind) {
      case SizeRef::Const:
        return r.value;
      case SizeRef::SlotSize:
        return s_.size[r.index];
      case SizeRef::Expr:
        return rec::evaluate(d_, r.index, s_.size, where);
    }
    return 0;
  }

  /// Postfix provenance of expression `e` with slot leaves mapped to this replay's pointers.
  SizeProv prov_of(uint32_t e, std::vector<SizeNode>& out) const {
    out.clear();
    if (!options_.provenance || e == rec::kNone)
      return {};
    append_prov(e, out);
    return out;
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

  void check_range(uint32_t slot, uint64_t offset, uint64_t bytes, size_t op) const {
    if (offset > s_.capacity[slot] || bytes > s_.capacity[slot] - offset)
      throw FreezeError("replay op " + std::to_string(op) + " (" + to_string(d_.ops[op].code) +
                        ") would access bytes [" + std::to_string(offset) + ", " +
                        std::to_string(offset + bytes) + ") of slot s" + std::to_string(slot) +
                        " which holds " + std::to_string(s_.capacity[slot]) +
                        " bytes for these inputs");
  }

  void check_guards(uint32_t begin, uint32_t end);
  void op_launch(size_t i, const PlannedOp& p);

  // Batching: device work goes into s_.list and reaches the backend in one submit() at the
  // points where the host needs a result (a compress count, a sync, a copy from host memory)
  // and at the end; a list has the same key at the same place of the same plan every replay.
  Command& batched(CommandKind kind) {
    Command& c = s_.list.commands.emplace_back();
    c.kind = kind;
    return c;
  }

  size_t flush() {
    if (s_.list.empty())
      return 0;
    auto plan_id = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(&plan_));
    s_.list.key = (plan_id * 0x9E3779B97F4A7C15ull) ^ (++segment_);
    size_t count;
    try {
      count = backend_.submit(s_.list);
    } catch (...) {
      s_.list.clear();  // submit disposed of the list's releases either way
      throw;
    }
    s_.list.clear();
    return count;
  }

  const ReplayPlan& plan_;
  const rec::RecordingData& d_;
  Backend& backend_;
  const ReplayOptions& options_;
  Scratch& s_;
  std::vector<void*> input_copies_;
  bool batch_;
  uint64_t segment_ = 0;
};

void Run::check_guards(uint32_t begin, uint32_t end) {
  for (uint32_t k = begin; k < end; ++k) {
    const rec::Guard& g = d_.guards[plan_.guard_order[k]];
    uint64_t a = rec::evaluate(d_, g.lhs, s_.size, "guard");
    uint64_t b = rec::evaluate(d_, g.rhs, s_.size, "guard");
    bool outcome = compare(g.cmp, a, b);
    if (outcome != g.outcome)
      throw GuardError("recorded size guard " + std::to_string(plan_.guard_order[k]) + " (" +
                       g.what + ": " + rec::expr_to_string(d_, g.lhs) + " " + to_string(g.cmp) +
                       " " + rec::expr_to_string(d_, g.rhs) + " was " +
                       (g.outcome ? "true" : "false") + " with " + std::to_string(g.lhs_value) +
                       " and " + std::to_string(g.rhs_value) + ") is " +
                       (outcome ? "true" : "false") + " with " + std::to_string(a) + " and " +
                       std::to_string(b) + " for these inputs: record this path anew");
    if (options_.provenance) {
      SizeGuard sg{g.cmp, prov_of(g.lhs, s_.prov), prov_of(g.rhs, s_.prov2), a, b, g.what.c_str()};
      backend_.guard(sg, outcome);
    }
  }
}

void Run::op_launch(size_t i, const PlannedOp& p) {
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
  if (options_.provenance) {
    // Slow path (nested recording): each sized scalar carries its expression.
    thread_local std::vector<std::vector<SizeNode>> arg_provs;
    arg_provs.resize(p.n_args);
    const rec::Op& op = d_.ops[i];
    for (uint32_t a = 0; a < p.n_args; ++a) {
      const rec::LaunchArg& la = d_.args[op.arg_begin + a];
      if (!la.is_buffer && la.size_expr != rec::kNone)
        args[a].prov = prov_of(la.size_expr, arg_provs[a]);
    }
    backend_.launch(plan_.kernels[p.kernel], n, prov_of(op.size_expr, s_.prov),
                    std::span<const KernelArg>(args, p.n_args));
    return;
  }
  if (batch_) {
    Command& c = batched(CommandKind::Launch);
    c.kernel = &plan_.kernels[p.kernel];
    c.size = n;
    c.args_begin = static_cast<uint32_t>(s_.list.args.size());
    c.n_args = p.n_args;
    s_.list.args.insert(s_.list.args.end(), args, args + p.n_args);
    return;
  }
  backend_.launch(plan_.kernels[p.kernel], n, {}, std::span<const KernelArg>(args, p.n_args));
}

std::vector<ReplayOutput> Run::execute(std::span<const ReplayInput> inputs) {
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
  check_guards(0, plan_.n_early_guards);

  // Copy-on-write for inputs the recording writes: the caller's arrays change only if the
  // whole replay succeeds (the front end writes the outputs back).
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

  for (size_t i = 0; i < plan_.ops.size(); ++i) {
    const PlannedOp& p = plan_.ops[i];
    const rec::Op& op = d_.ops[i];
    if (options_.observer)
      options_.observer->before_op(i);
    switch (p.code) {
      case OpCode::Alloc: {
        uint64_t n = eval(p.size, "alloc");
        uint64_t capacity = bytes_of(n, size_of(op.type), i);
        void* ptr;
        if (op.src != rec::kNone && s_.live[op.src] && s_.capacity[op.src] == capacity &&
            !options_.provenance && !batch_) {
          // The optimiser handed this slot the buffer of one that ends here (reuse-buffers).
          // Nested in a recording (or batched) the backend sees a release and an allocation.
          ptr = s_.ptr[op.src];
          s_.live[op.src] = 0;
        } else {
          if (op.src != rec::kNone)
            release_slot(op.src);
          ptr = backend_.alloc(op.type, n, prov_of(op.size_expr, s_.prov));
        }
        s_.ptr[op.dst] = ptr;
        s_.size[op.dst] = n;
        s_.capacity[op.dst] = capacity;
        s_.live[op.dst] = 1;
        break;
      }
      case OpCode::Release:
        release_slot(op.dst);
        break;
      case OpCode::Copy: {
        uint64_t bytes = eval(p.size, "copy");
        check_range(op.dst, op.dst_offset, bytes, i);
        char* dst = static_cast<char*>(s_.ptr[op.dst]) + op.dst_offset;
        auto kind = static_cast<CopyKind>(op.sub);
        if (kind == CopyKind::HostToDevice) {
          const auto& c = d_.constants[op.constant];
          if (bytes > c.size())
            throw FreezeError("replay op " + std::to_string(i) + ": constant too small");
          flush();  // host memory: not part of a batch
          backend_.copy(dst, c.data(), bytes, kind);
        } else {
          check_range(op.src, op.src_offset, bytes, i);
          const char* src = static_cast<char*>(s_.ptr[op.src]) + op.src_offset;
          if (batch_ && kind == CopyKind::DeviceToDevice) {
            Command& c = batched(CommandKind::Copy);
            c.dst = dst;
            c.src = src;
            c.size = bytes;
          } else {
            flush();
            backend_.copy(dst, src, bytes, kind);
          }
        }
        break;
      }
      case OpCode::Fill: {
        uint64_t n = eval(p.size, "fill");
        check_range(op.dst, op.dst_offset, bytes_of(n, op.elem_size, i), i);
        char* dst = static_cast<char*>(s_.ptr[op.dst]) + op.dst_offset;
        if (batch_) {
          Command& c = batched(CommandKind::Fill);
          c.dst = dst;
          c.size = n;
          c.elem_size = op.elem_size;
          c.value = op.value;
        } else {
          backend_.fill(dst, n, op.elem_size, op.value);
        }
        break;
      }
      case OpCode::Launch:
        op_launch(i, p);
        break;
      case OpCode::Reduce:
      case OpCode::PrefixSum:
      case OpCode::Compress: {
        uint64_t n = eval(p.size, to_string(p.code));
        size_t in_elem = p.code == OpCode::Compress ? 1 : size_of(op.type);
        size_t out_elems = p.code == OpCode::Reduce ? 1 : n;
        size_t out_elem = p.code == OpCode::Compress ? 4 : size_of(op.type);
        check_range(op.src, op.src_offset, bytes_of(n, in_elem, i), i);
        check_range(op.dst, op.dst_offset, bytes_of(out_elems, out_elem, i), i);
        const char* in = static_cast<const char*>(s_.ptr[op.src]) + op.src_offset;
        char* out = static_cast<char*>(s_.ptr[op.dst]) + op.dst_offset;
        if (batch_) {
          Command& c = batched(p.code == OpCode::Reduce      ? CommandKind::Reduce
                               : p.code == OpCode::PrefixSum ? CommandKind::PrefixSum
                                                             : CommandKind::Compress);
          c.reduce_op = static_cast<ReduceOp>(op.sub);
          c.type = op.type;
          c.exclusive = op.flag != 0;
          c.src = in;
          c.size = n;
          c.dst = out;
          if (p.code == OpCode::Compress)
            s_.size[op.dst] = flush();  // the count ends the batch
        } else if (p.code == OpCode::Reduce)
          backend_.reduce(static_cast<ReduceOp>(op.sub), op.type, in, n, out);
        else if (p.code == OpCode::PrefixSum)
          backend_.prefix_sum(op.type, op.flag != 0, in, n, out);
        else
          s_.size[op.dst] = backend_.compress(in, n, out);  // data-dependent, read at replay
        break;
      }
      case OpCode::Sync:
        flush();
        backend_.sync();
        break;
    }
    if (options_.observer)
      options_.observer->after_op(i, s_.size);
    if (p.guard_begin != p.guard_end)
      check_guards(p.guard_begin, p.guard_end);
  }

  flush();

  std::vector<ReplayOutput> outs(d_.outputs.size());
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
  cleanup();
  return outs;
}

void Run::cleanup() noexcept {
  // A batch abandoned by an error never runs: its buffers go back at once.
  for (const Command& c : s_.list.commands)
    if (c.kind == CommandKind::Release)
      backend_.release(c.dst);
  s_.list.clear();
  for (size_t s = 0; s < s_.live.size(); ++s)
    if (s_.live[s]) {
      backend_.release(s_.ptr[s]);
      s_.live[s] = 0;
    }
  for (void* c : input_copies_)
    backend_.release(c);
  input_copies_.clear();
}

}  // namespace

std::vector<ReplayOutput> run(const ReplayPlan& plan, Backend& backend,
                              std::span<const ReplayInput> inputs, const ReplayOptions& options) {
  Run r(plan, backend, options);
  try {
    return r.execute(inputs);
  } catch (...) {
    r.cleanup();
    throw;
  }
}

}  // namespace ff::replay
