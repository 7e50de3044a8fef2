// Evaluation: turning lazy variables into kernels and launching them.
//
// Theory of operation
// -------------------
// ff::eval(roots) evaluates the given lazy variables plus every pending scatter. Roots and
// scatters are grouped by size; each group becomes one kernel over [0, size):
//
//   x (evaluated, 1000)    y = fma(x, 0.5, x) + 1      eval(y)
//   => kernel(size 1000): %0 = load p0; %1 = literal 0.5; %2 = fma %0 %1 %0;
//                         %3 = literal 1; %4 = add %2 %3; store p1 %4
//
// A depth-first walk (iterative, so long chains cannot overflow the stack) visits each
// variable once per kernel (scratch_epoch/scratch cache its instruction index):
// - evaluated variables become buffer parameters (deduplicated per buffer) read with Load,
//   or LoadBroadcast when their size is 1 inside a larger kernel (so the kernel is specialised
//   for broadcast operands, exactly what the freeze key's size-1 pattern captures);
// - literals become Literal instructions (their values are part of the kernel's identity);
// - Scalar variables (a mean's count) and gather/scatter bounds become scalar parameters that
//   carry size provenance, so the same code at another size is the same kernel;
// - a size-1 Index inside a larger kernel is the constant 0 (arange(1) broadcasts).
// Each root gets a fresh output buffer (alloc with the root's size provenance) and a Store.
// The IR is hashed (XXH3-128) and handed to Backend::compile, whose cache makes the second
// identical eval compile nothing; then Backend::launch with the buffers and scalars.
//
// Invariants: a gather's source is always evaluated (materialised when the gather is built);
// nothing lazy reads a buffer with a pending scatter (reading a dirty variable flushes the
// scatters first, and scatter is copy-on-write), so kernels of different sizes may run in any
// order. Afterwards each root holds its buffer, drops its operands, and its provenance becomes
// a leaf naming its own buffer.
//
// Failure: if compiling or launching throws, roots stay lazy and unlaunched scatters stay
// pending, so the state is as before the call.
#include <algorithm>
#include <cstring>
#include <deque>
#include <unordered_set>

#include "backend/ir/ir_analysis.h"
#include "backend/region_names.h"
#include "common/assert.h"
#include "common/log.h"
#include "freezeframe/errors.h"
#include "tracer/variable.h"

namespace ff::detail {

std::shared_ptr<Buffer> alloc_buffer(ScalarType t, uint64_t size, const SizeExprNode* prov) {
  const std::shared_ptr<Device>& dev = current_device();
  std::vector<SizeNode>& nodes = state().scratch.alloc_prov;
  nodes.clear();
  if (prov)
    flatten(prov, size, nodes);
  void* p = dev->backend().alloc(t, size, nodes);
  try {
    return std::make_shared<Buffer>(p, size, t, dev);
  } catch (...) {
    dev->backend().release(p);
    throw;
  }
}

VarId var_from_buffer(std::shared_ptr<Buffer> buffer, bool traced) {
  ScalarType t = buffer->type;
  uint64_t n = buffer->size;
  SizeExprPtr leaf = size_leaf(buffer);
  VarId v = new_var(VarKind::Evaluated, t, n, std::move(leaf));
  if (!traced)
    --state().n_traced_ops;
  state()[v].buffer = std::move(buffer);
  return v;
}

namespace {

/// Turns a variable into an evaluated one that owns `buffer`, dropping its operands.
void become_evaluated(VarId v, std::shared_ptr<Buffer> buffer) {
  TracerState& s = state();
  VarId deps[4];
  std::copy(std::begin(s[v].dep), std::end(s[v].dep), deps);
  Variable& var = s[v];
  var.kind = VarKind::Evaluated;
  std::fill(std::begin(var.dep), std::end(var.dep), 0);
  var.prov = size_leaf(buffer);
  var.buffer = std::move(buffer);
  for (VarId d : deps)
    dec_local(d);
}

// FF_DEBUG range reports, except inside a recording: reading a report back is a host read,
// which a recording refuses, and a replay has nobody to report to. Recorded functions are
// checked when they run traced (outside ff::record).
bool range_checks() {
  return debug_checks() && !recording_open();
}

/// A gather's source and an increment's counter (dep[0]) are buffers, not values to emit.
bool first_dep_is_buffer(IrOp op) {
  return op == IrOp::Gather ||
         (op_facts(op).side_effect && op_facts(op).region == RegionRole::None);
}

/// Calls fn(VarId) for each result of region effect `e` still lazy (not evaluated or freed
/// since: RegionData::results holds no references), which would run the region again if
/// evaluated later. Nothing for other effects.
template <class Fn>
void for_each_lazy_result(TracerState& s, const SideEffect& e, Fn&& fn) {
  if (!is_region_op(e.op))
    return;
  for (VarId res : region_of(e.value).results)
    if (res && s[res].kind == VarKind::Op && s[res].op == IrOp::Result && s[res].dep[0] == e.value)
      fn(res);
}

struct RangeReport {
  std::shared_ptr<Buffer> buffer;  // two words: offending access seen (0/1), its index
  const char* what;
  uint64_t bound;
  ScalarType index_type;
};

/// Builds one kernel's IR and arguments.
class KernelBuilder {
 public:
  KernelBuilder(TracerState& s, KernelIR& ir, uint64_t size)
      : s_(s),
        ir_(ir),
        size_(size),
        bits_(s.scratch.arg_bits),
        prov_ranges_(s.scratch.arg_prov_ranges),
        prov_nodes_(s.scratch.arg_prov),
        buffer_params_(s.scratch.buffer_params) {
    epoch_ = ++s.epoch;
    ir_.params.clear();
    ir_.instrs.clear();
    bits_.clear();
    prov_ranges_.clear();
    prov_nodes_.clear();
    buffer_params_.clear();
  }

  uint32_t emit(VarId root);
  /// A side effect's instructions: a scatter of any kind, an increment, a region.
  void emit_effect(const SideEffect& e);

  // Buffers are deduplicated per kernel by a scan of this kernel's buffer parameters (few),
  // not by scratch fields in the Buffer: a buffer may be shared with another thread's table
  // that is building a kernel at the same time.
  uint32_t buffer_param(Buffer& b, ParamKind kind) {
    for (const auto& [buffer, index] : buffer_params_)
      if (buffer == &b) {
        IrParam& p = ir_.params[index];
        if (p.kind != kind)
          p.kind = ParamKind::BufferInOut;
        return index;
      }
    auto index = static_cast<uint32_t>(ir_.params.size());
    buffer_params_.push_back({&b, index});
    ir_.params.push_back({kind, b.type});
    bits_.push_back(reinterpret_cast<uint64_t>(b.ptr));
    prov_ranges_.push_back({0, 0});
    return index;
  }

  uint32_t scalar_param(ScalarType t, uint64_t bits, const SizeExprNode* prov) {
    auto index = static_cast<uint32_t>(ir_.params.size());
    ir_.params.push_back({ParamKind::Scalar, t});
    bits_.push_back(bits);
    auto begin = static_cast<uint32_t>(prov_nodes_.size());
    if (prov)
      flatten(prov, bits, prov_nodes_);
    prov_ranges_.push_back({begin, static_cast<uint32_t>(prov_nodes_.size()) - begin});
    return index;
  }

  uint32_t instr(IrInstr in) {
    ir_.instrs.push_back(in);
    return static_cast<uint32_t>(ir_.instrs.size() - 1);
  }

  /// The bound of a gather or scatter: a scalar parameter naming the buffer's size.
  uint32_t bound_param(const std::shared_ptr<Buffer>& b) {
    SizeNode leaf{SizeOp::BufferSize, b->size, b->ptr};
    auto index = static_cast<uint32_t>(ir_.params.size());
    ir_.params.push_back({ParamKind::Scalar, ScalarType::UInt64});
    bits_.push_back(b->size);
    prov_ranges_.push_back({static_cast<uint32_t>(prov_nodes_.size()), 1});
    prov_nodes_.push_back(leaf);
    return index;
  }

  /// FF_DEBUG: a report buffer for a gather/scatter's out-of-range indices (kernel-ir.md).
  void add_range_report(IrInstr& in, const char* what, uint64_t bound, ScalarType index_type) {
    auto report = alloc_buffer(ScalarType::UInt64, 2, nullptr);
    report->device->backend().fill(report->ptr, 2, 8, 0);
    in.flags |= kIrFlagReportRange;
    in.imm = buffer_param(*report, ParamKind::BufferInOut);
    reports_.push_back({std::move(report), what, bound, index_type});
  }

  std::span<const KernelArg> args(std::vector<KernelArg>& out) const {
    out.resize(bits_.size());
    for (size_t i = 0; i < bits_.size(); ++i)
      out[i] = KernelArg{
          bits_[i], SizeProv(prov_nodes_.data() + prov_ranges_[i].first, prov_ranges_[i].second)};
    return out;
  }

  /// The names of the kernel's regions, one per region-opening marker in order; empty when
  /// none of them has a name (region_names.h).
  const RegionNames* region_names() const {
    bool named = std::any_of(region_names_.begin(), region_names_.end(),
                             [](const std::string& n) { return !n.empty(); });
    return named ? &region_names_ : nullptr;
  }

  /// The first out-of-range report, or an empty string.
  std::string check_reports() {
    for (auto& r : reports_) {
      uint64_t words[2] = {0, 0};
      r.buffer->device->backend().copy(words, r.buffer->ptr, sizeof words, CopyKind::DeviceToHost);
      if (words[0] == 0)
        continue;
      // The kernel widened the index to 64 bits: sign-extended exactly when its type is signed.
      std::string index = is_signed_int(r.index_type)
                              ? std::to_string(static_cast<int64_t>(words[1]))
                              : std::to_string(words[1]);
      return (std::string(r.what) + ": index " + index + " is out of range for an array of size " +
              std::to_string(r.bound) + " (FF_DEBUG range check; the access was skipped)");
    }
    return {};
  }

 private:
  void emit_region(VarId rv);

  /// Whether a region being emitted now holds variables tagged `tag`.
  bool emitting_region_of(uint32_t tag) const {
    for (const RegionData* r : emitting_)
      if (tag >= r->serial && tag < r->serial_end)
        return true;
    return false;
  }

  /// The region (alive, since a variable tagged with it is) whose serial is `tag`, or the
  /// innermost one around it.
  const RegionData* region_with_serial(uint32_t tag) const {
    const RegionData* best = nullptr;
    for (const auto& r : s_.regions)
      if (r && tag >= r->serial && tag < r->serial_end && (!best || r->serial > best->serial))
        best = r.get();
    return best;
  }

  void hoist_inputs(const RegionData& r);
  void emit_part(const RegionData::Part& part);

  /// Records that `v` holds an instruction index now (regions forget them when they end).
  void emitted(VarId v, uint32_t index) {
    s_[v].scratch = index;
    s_[v].scratch_epoch = epoch_;
    if (region_level_)
      log_.push_back(v);
  }

  /// Forgets every instruction index recorded since `mark`: values of a region part are not
  /// visible after it.
  void forget_since(size_t mark) {
    for (size_t k = mark; k < log_.size(); ++k)
      s_[log_[k]].scratch_epoch = 0;
    log_.resize(mark);
  }

  TracerState& s_;
  KernelIR& ir_;
  uint64_t size_;
  uint32_t epoch_;
  std::deque<std::vector<std::pair<VarId, bool>>> nested_stacks_;  // emit() inside emit()
  std::vector<const RegionData*> emitting_;                        // regions being emitted
  size_t emit_depth_ = 0;
  int region_level_ = 0;
  RegionNames region_names_;  // one per region-opening marker emitted
  std::vector<VarId> log_;
  std::vector<uint64_t>& bits_;
  std::vector<std::pair<uint32_t, uint32_t>>& prov_ranges_;
  std::vector<SizeNode>& prov_nodes_;
  std::vector<std::pair<const Buffer*, uint32_t>>& buffer_params_;
  std::vector<RangeReport> reports_;
};

uint32_t KernelBuilder::emit(VarId root) {
  // Regions emit what they hold with nested calls, each with its own stack.
  if (emit_depth_ > 0 && nested_stacks_.size() < emit_depth_)
    nested_stacks_.emplace_back();
  std::vector<std::pair<VarId, bool>>& stack =
      emit_depth_ == 0 ? s_.scratch.emit_stack : nested_stacks_[emit_depth_ - 1];
  ++emit_depth_;

  struct Depth {
    size_t& d;

    ~Depth() { --d; }
  } depth{emit_depth_};

  stack.clear();
  stack.push_back({root, false});
  while (!stack.empty()) {
    auto [v, expanded] = stack.back();
    Variable& var = s_[v];
    if (var.scratch_epoch == epoch_) {
      stack.pop_back();
      continue;
    }
    if (var.kind == VarKind::Op && is_region_op(var.op)) {
      stack.pop_back();
      emit_region(v);
      continue;
    }
    if (var.kind == VarKind::Op && var.op == IrOp::LoopVar)
      throw Error(region_label(*s_.regions[var.imm]) +
                  ": a value computed from the loop state inside the loop body is used outside "
                  "the loop; hand it out through the state");
    if (var.kind == VarKind::Op && !expanded) {
      stack.back().second = true;
      bool buffer_dep = first_dep_is_buffer(var.op);
      for (int i = 3; i >= (buffer_dep ? 1 : 0); --i) {
        VarId d = var.dep[i];
        if (d && s_[d].scratch_epoch != epoch_)
          stack.push_back({d, false});
      }
      continue;
    }
    stack.pop_back();
    if (var.kind == VarKind::Op && var.op == IrOp::Result) {  // its region emitted it
      emitted(v, s_[var.dep[0]].scratch + static_cast<uint32_t>(var.imm));
      continue;
    }
    IrInstr in{IrOp::Literal, var.type};
    switch (var.kind) {
      case VarKind::Evaluated:
        in.op = var.size == 1 && size_ != 1 ? IrOp::LoadBroadcast : IrOp::Load;
        in.a = buffer_param(*var.buffer, ParamKind::BufferIn);
        break;
      case VarKind::Literal:
        in.imm = var.imm;
        break;
      case VarKind::Scalar:
        in.op = IrOp::Scalar;
        in.a = scalar_param(var.type, var.imm, var.value_prov.get());
        break;
      case VarKind::Op:
        in.op = var.op;
        if (var.op == IrOp::Index && var.size == 1 && (size_ != 1 || !var.prov)) {
          // arange(1) broadcasts: every lane reads element 0. Also in a kernel of size 1 when
          // the 1 is a constant, since a replay may launch that kernel at another size.
          in.op = IrOp::Literal;
        } else if (var.op == IrOp::Gather) {
          const std::shared_ptr<Buffer>& src = s_[var.dep[0]].buffer;
          in.a = buffer_param(*src, ParamKind::BufferIn);
          in.b = s_[var.dep[1]].scratch;
          in.c = s_[var.dep[2]].scratch;
          in.d = bound_param(src);
          if (range_checks())
            add_range_report(in, "gather", src->size, s_[var.dep[1]].type);
        } else if (var.op == IrOp::ScatterInc) {
          // The increment itself (its effect's entry in the group then finds it emitted). One
          // traced inside a region runs there: emitted elsewhere it would run twice.
          if (var.tag && !emitting_region_of(var.tag))
            throw Error((region_with_serial(var.tag) ? region_label(*region_with_serial(var.tag))
                                                     : std::string("a symbolic region")) +
                        ": the values of a scatter_inc inside it are used outside it; hand "
                        "them out as a result");
          const std::shared_ptr<Buffer>& counter = s_[var.dep[0]].buffer;
          in.a = buffer_param(*counter, ParamKind::BufferInOut);
          in.b = s_[var.dep[1]].scratch;
          in.c = s_[var.dep[2]].scratch;
          in.e = bound_param(counter);
          if (range_checks())
            add_range_report(in, "scatter_inc", counter->size, s_[var.dep[1]].type);
        } else if (var.op != IrOp::Index) {
          uint32_t* fields[3] = {&in.a, &in.b, &in.c};
          for (int i = 0; i < 3 && var.dep[i]; ++i)
            *fields[i] = s_[var.dep[i]].scratch;
        }
        break;
      case VarKind::Empty:
        throw Error("internal: a freed variable was reached during eval");
    }
    emitted(v, instr(in));
  }
  return s_[root].scratch;
}

void KernelBuilder::emit_effect(const SideEffect& e) {
  if (is_region_op(e.op)) {
    emit(e.value);
    return;
  }
  if (e.result) {  // an increment: its variable is the instruction
    emit(e.result);
    return;
  }
  IrInstr in{e.op, s_[e.target].type};
  in.b = emit(e.index);
  in.c = emit(e.mask);
  in.d = emit(e.value);
  const std::shared_ptr<Buffer>& target = s_[e.target].buffer;
  in.a = buffer_param(*target, ParamKind::BufferInOut);
  in.e = bound_param(target);
  if (range_checks())
    add_range_report(in, to_string(e.op), target->size, s_[e.index].type);
  instr(in);
}

// A region's code (kernel-ir.md, "Regions"): first everything it reads from outside (so that
// it is computed once, before the region), then its markers, parts and results. Variables made
// while it was traced (region.h's tags) are computed inside; each part forgets what it emitted
// when it ends.
void KernelBuilder::emit_region(VarId rv) {
  const RegionData& r = *s_.regions[s_[rv].imm];
  hoist_inputs(r);
  ++region_level_;
  emitting_.push_back(&r);
  size_t mark = log_.size();
  std::vector<ScalarType> types;
  auto marker = [&](IrOp op, uint32_t a = kNoOperand, uint64_t imm = 0) {
    IrInstr in{op, ScalarType::Bool};
    in.a = a;
    in.imm = imm;
    instr(in);
  };
  region_names_.push_back(r.name);  // the marker emitted next opens the region
  switch (r.kind) {
    case IrOp::LoopBegin: {
      marker(IrOp::LoopBegin, kNoOperand, r.imm);
      for (size_t j = 0; j < r.vars.size(); ++j) {
        IrInstr in{IrOp::LoopVar, s_[r.vars[j]].type};
        in.a = s_[r.inits[j]].scratch;
        emitted(r.vars[j], instr(in));
        types.push_back(in.type);
      }
      marker(IrOp::LoopCond, emit(r.cond));
      emit_part(r.parts.at(0));
      break;
    }
    case IrOp::IfBegin:
    case IrOp::CallBegin:
      marker(r.kind, s_[r.selector].scratch, r.kind == IrOp::CallBegin ? r.imm : 0);
      for (size_t p = 0; p < r.parts.size(); ++p) {
        if (p) {
          forget_since(mark);
          marker(r.kind == IrOp::IfBegin ? IrOp::IfElse : IrOp::CallCase);
        }
        emit_part(r.parts[p]);
      }
      for (VarId y : r.parts.at(0).yields)
        types.push_back(s_[y].type);
      break;
    default:
      throw Error("internal: emit_region of a variable that is no region");
  }
  marker(IrOp::EndRegion);
  forget_since(mark);
  --region_level_;
  emitting_.pop_back();
  auto first = static_cast<uint32_t>(ir_.instrs.size());
  for (ScalarType t : types)
    instr(IrInstr{IrOp::Result, t});
  emitted(rv, first);
}

void KernelBuilder::hoist_inputs(const RegionData& r) {
  std::vector<VarId> work;
  std::unordered_set<VarId> seen;
  for_each_region_input(r, [&](VarId v) { work.push_back(v); });
  while (!work.empty()) {
    VarId v = work.back();
    work.pop_back();
    if (!v || !seen.insert(v).second || s_[v].scratch_epoch == epoch_)
      continue;
    const Variable& var = s_[v];
    bool inside = var.tag >= r.serial && var.tag < r.serial_end;
    if (!inside) {
      emit(v);
      continue;
    }
    if (var.kind != VarKind::Op)
      continue;
    if (is_region_op(var.op)) {
      for_each_region_input(*s_.regions[var.imm], [&](VarId d) { work.push_back(d); });
      continue;
    }
    bool buffer_dep = first_dep_is_buffer(var.op);
    for (int i = buffer_dep ? 1 : 0; i < 4; ++i)
      if (var.dep[i])
        work.push_back(var.dep[i]);
  }
}

void KernelBuilder::emit_part(const RegionData::Part& part) {
  for (const SideEffect& e : part.effects)
    emit_effect(e);
  std::vector<uint32_t> values;
  for (VarId y : part.yields)
    values.push_back(emit(y));
  for (size_t j = 0; j < values.size(); ++j) {
    IrInstr in{IrOp::Yield, s_[part.yields[j]].type};
    in.a = values[j];
    instr(in);
  }
}

struct Group {
  uint64_t size;
  SizeExprPtr prov;
  std::vector<VarId> roots;
  std::vector<size_t> effects;  // indices into the effect list
};

/// Builds and launches one group's kernel; returns an FF_DEBUG range error, if any (raised
/// by the caller once the group's bookkeeping is complete).
std::string launch_group(TracerState& s, Group& g, std::vector<SideEffect>& effects) {
  KernelIR& ir = s.scratch.ir;
  std::vector<KernelArg>& args = s.scratch.args;
  std::vector<SizeNode>& launch_prov = s.scratch.launch_prov;
  KernelBuilder kb(s, ir, g.size);
  std::vector<std::shared_ptr<Buffer>> outputs;
  outputs.reserve(g.roots.size());
  for (VarId r : g.roots) {
    uint32_t value = kb.emit(r);
    auto out = alloc_buffer(s[r].type, g.size, s[r].prov.get());
    uint32_t p = kb.buffer_param(*out, ParamKind::BufferOut);
    kb.instr(IrInstr{IrOp::Store, s[r].type, 0, p, value});
    outputs.push_back(std::move(out));
  }
  // Values that would run an effect again if evaluated later are stored now (after the roots,
  // which may have emitted them already): increments whose old values someone besides the
  // effect holds, and the live results of regions with effects.
  std::vector<std::pair<VarId, std::shared_ptr<Buffer>>> kept;
  auto keep = [&](VarId v, uint32_t value) {
    bool root = std::find(g.roots.begin(), g.roots.end(), v) != g.roots.end();
    if (root)
      return;
    Variable& r = s[v];
    auto out = alloc_buffer(r.type, g.size, r.prov.get());
    uint32_t p = kb.buffer_param(*out, ParamKind::BufferOut);
    kb.instr(IrInstr{IrOp::Store, r.type, 0, p, value});
    kept.push_back({v, std::move(out)});
  };
  for (size_t i : g.effects) {
    SideEffect& e = effects[i];
    kb.emit_effect(e);
    if (e.result && s[e.result].refs > 1)
      keep(e.result, s[e.result].scratch);
    for_each_lazy_result(s, e, [&](VarId res) { keep(res, kb.emit(res)); });
  }
  ir.finalize();
  ++s.n_traced_kernels;
  Backend& backend = current_device()->backend();
  RegionNamesScope names(kb.region_names());  // for the recording backend, beside the kernel
  KernelHandle kernel = backend.compile(ir);
  launch_prov.clear();
  if (g.prov)
    flatten(g.prov.get(), g.size, launch_prov);
  backend.launch(kernel, g.size, launch_prov, kb.args(args));
  for (size_t i = 0; i < g.roots.size(); ++i)
    become_evaluated(g.roots[i], std::move(outputs[i]));
  for (auto& [v, buffer] : kept)
    become_evaluated(v, std::move(buffer));
  return kb.check_reports();
}

void eval_roots_now(std::span<const VarId> roots);

/// Evaluates `roots` (lazy variables) and every pending scatter. While a symbolic region is
/// traced, only values from outside it can be evaluated, and its pending scatters wait.
void eval_roots(std::span<const VarId> roots) {
  TracerState& s = state();
  if (s.open_regions.empty()) {
    eval_roots_now(roots);
    return;
  }
  for (VarId r : roots)
    check_eval_in_region(s, r, "evaluating the value");
  std::vector<SideEffect> waiting;
  waiting.swap(s.side_effects);
  try {
    eval_roots_now(roots);
  } catch (...) {
    s.side_effects.insert(s.side_effects.end(), waiting.begin(), waiting.end());
    throw;
  }
  s.side_effects = std::move(waiting);
}

void eval_roots_now(std::span<const VarId> roots) {
  TracerState& s = state();
  std::vector<SideEffect> effects;
  effects.swap(s.side_effects);
  std::vector<Group> groups;
  // Everything of one size fuses into one kernel. Fusing work whose sizes came from different
  // expressions is a size decision: a replay must launch both at one size, so it is a guard.
  auto group_for = [&](uint64_t size, const SizeExprPtr& prov) -> Group& {
    for (Group& g : groups)
      if (g.size == size) {
        if ((prov || g.prov) && !same_expr(prov.get(), g.prov.get()))
          guard_sizes(prov ? Size(prov) : Size(size), g.prov ? Size(g.prov) : Size(size),
                      "equal sizes of work fused into one kernel");
        return g;
      }
    groups.push_back(Group{size, prov, {}, {}});
    return groups.back();
  };
  for (VarId r : roots)
    group_for(s[r].size, s[r].prov).roots.push_back(r);
  for (size_t i = 0; i < effects.size(); ++i)
    group_for(effects[i].size, effects[i].prov).effects.push_back(i);

  std::vector<bool> done(effects.size(), false);
  std::string range_error;
  try {
    for (Group& g : groups) {
      // Nothing to compute at size 0, except inside a recording: there the launch is what
      // defines the outputs, and a replay at another size runs it for real.
      if (g.size == 0 && !recording_open()) {  // empty outputs, no-op scatters
        for (VarId r : g.roots)
          become_evaluated(r, alloc_buffer(s[r].type, 0, s[r].prov.get()));
        for (size_t i : g.effects) {
          VarId r = effects[i].result;
          if (r && s[r].kind == VarKind::Op)
            become_evaluated(r, alloc_buffer(ScalarType::UInt32, 0, s[r].prov.get()));
        }
      } else {
        std::string e = launch_group(s, g, effects);
        if (range_error.empty())
          range_error = std::move(e);
      }
      for (size_t i : g.effects)
        done[i] = true;
    }
  } catch (...) {
    // Unlaunched scatters stay pending; launched ones are released below.
    for (size_t i = 0; i < effects.size(); ++i)
      if (!done[i])
        s.side_effects.push_back(effects[i]);
    for (size_t i = 0; i < effects.size(); ++i)
      if (done[i])
        for (VarId d : effects[i].held())
          dec_local(d);
    throw;
  }
  for (SideEffect& e : effects) {
    set_effect_dirty(s, e, false);
    for (VarId d : e.held())
      dec_local(d);
  }
  for (SideEffect& e : s.side_effects)  // only non-empty after a nested failure
    set_effect_dirty(s, e, true);
  if (!range_error.empty())
    throw Error(range_error);
}

}  // namespace

void flush_side_effects() {
  TracerState& s = state();
  if (s.side_effects.empty())
    return;
  if (!s.open_regions.empty())
    throw Error(region_label(*s.regions[s.open_regions.back()]) +
                ": an array that a scatter traced in this region writes is read, copied or "
                "scattered into again in a way that needs the scatter done first; inside a "
                "symbolic region that is impossible (read it after the region, or scatter "
                "into a separate array)");
  eval_roots({});
}

void discard_side_effects() noexcept {
  TracerState& s = state();
  std::vector<SideEffect> effects;
  effects.swap(s.side_effects);
  // Values that someone still holds of an increment, or of a region with effects, become
  // zeros: evaluated later, they would run what is being discarded.
  auto to_zero = [&](VarId v) {
    Variable& r = s[v];
    VarId deps[4];
    std::copy(std::begin(r.dep), std::end(r.dep), deps);
    r.kind = VarKind::Literal;
    r.imm = 0;
    std::fill(std::begin(r.dep), std::end(r.dep), 0);
    for (VarId d : deps)
      dec_local(d);
  };
  for (SideEffect& e : effects) {
    set_effect_dirty(s, e, false);
    if (e.result && s[e.result].kind == VarKind::Op && s[e.result].refs > 1)
      to_zero(e.result);
    for_each_lazy_result(s, e, to_zero);
  }
  for (SideEffect& e : effects)
    for (VarId d : e.held())
      dec_local(d);
}

void materialize(VarId v) {
  TracerState& s = state();
  switch (s[v].kind) {
    case VarKind::Evaluated:
      return;
    case VarKind::Literal: {
      Variable& var = s[v];
      auto buffer = alloc_buffer(var.type, var.size, var.prov.get());
      if (var.size || recording_open())
        buffer->device->backend().fill(buffer->ptr, var.size,
                                       static_cast<uint32_t>(size_of(var.type)), var.imm);
      Variable& again = s[v];
      again.kind = VarKind::Evaluated;
      again.prov = size_leaf(buffer);
      again.buffer = std::move(buffer);
      return;
    }
    case VarKind::Scalar:
    case VarKind::Op: {
      VarId roots[1] = {v};
      eval_roots(roots);
      return;
    }
    case VarKind::Empty:
      throw Error("internal: materialize of a freed variable");
  }
}

namespace {

void eval_local(std::span<const VarId> vars) {
  TracerState& s = state();
  std::vector<VarId> roots;
  roots.reserve(vars.size());
  for (VarId v : vars) {
    auto k = s[v].kind;
    if ((k == VarKind::Op || k == VarKind::Scalar) &&
        std::find(roots.begin(), roots.end(), v) == roots.end())
      roots.push_back(v);
  }
  if (roots.empty() && s.side_effects.empty())
    return;
  eval_roots(roots);
}

void read_local(VarId v, void* out) {
  TracerState& s = state();
  if (s[v].dirty)
    flush_side_effects();
  Variable& var = s[v];
  size_t elem = size_of(var.type);
  if (var.kind == VarKind::Literal) {  // no device round trip for a constant
    auto* bytes = static_cast<unsigned char*>(out);
    for (uint64_t i = 0; i < var.size; ++i)
      std::memcpy(bytes + i * elem, &var.imm, elem);  // little-endian: low bytes first
    return;
  }
  materialize(v);
  Variable& ev = s[v];
  if (ev.size)
    ev.buffer->device->backend().copy(out, ev.buffer->ptr, ev.size * elem, CopyKind::DeviceToHost);
}

}  // namespace

// Arrays of other threads are evaluated (read, made opaque) in their own table, so the handle
// sees the result; this thread's arrays are evaluated together, in one eval.
void var_eval(std::span<const Handle> handles) {
  TracerState& s = state();
  VarId small[8];
  std::vector<VarId> large;
  VarId* local = small;
  if (handles.size() > std::size(small)) {
    large.resize(handles.size());
    local = large.data();
  }
  size_t n = 0;
  for (Handle h : handles) {
    if (table_of(h) == s.id) {
      local[n++] = index_of(h);
    } else {
      ForeignAccess access(table_of(h));
      VarId v = index_of(h);
      eval_local(std::span<const VarId>(&v, 1));
    }
  }
  Window w;
  eval_local(std::span<const VarId>(local, n));
}

void var_make_opaque(std::span<const Handle> handles) {
  TracerState& s = state();
  {
    Window w;
    flush_side_effects();
  }
  for (Handle h : handles) {
    if (table_of(h) == s.id) {
      Window w;
      materialize(index_of(h));
    } else {
      ForeignAccess access(table_of(h));
      flush_side_effects();
      materialize(index_of(h));
    }
  }
}

void var_read(Handle h, void* out) {
  with_variable(h, [&](VarId v) { read_local(v, out); });
}

namespace {

LeafInfo read_leaf_info(VarId v) {
  const Variable& var = state()[v];
  LeafInfo info;
  info.type = var.type;
  info.literal = var.kind == VarKind::Literal;
  info.bits = var.imm;
  info.size = var.size;
  info.size_has_prov = var.prov != nullptr;
  return info;
}

}  // namespace

void leaf_infos(const Handle* handles, size_t n, LeafInfo* out) {
  TracerState& s = state();
  bool foreign = false;
  {
    Window w;  // one window for every array of this thread
    for (size_t i = 0; i < n; ++i) {
      if (table_of(handles[i]) == s.id)
        out[i] = read_leaf_info(index_of(handles[i]));
      else
        foreign = true;
    }
  }
  if (foreign)
    for (size_t i = 0; i < n; ++i)
      if (table_of(handles[i]) != s.id) {
        ForeignAccess access(table_of(handles[i]));
        out[i] = read_leaf_info(index_of(handles[i]));
      }
}

SizeExprPtr rebind_literal_size(Handle literal, const std::shared_ptr<Buffer>& like) {
  return with_variable(literal, [&](VarId v) {
    Variable& var = state()[v];
    FF_ASSERT(var.kind == VarKind::Literal && (!like || like->size == var.size),
              "rebinding the size of a variable of kind {} and size {}", static_cast<int>(var.kind),
              var.size);
    SizeExprPtr old = std::move(var.prov);
    var.prov = like ? size_leaf(like) : nullptr;
    return old;
  });
}

void restore_literal_size(Handle literal, SizeExprPtr prov) noexcept {
  with_variable(literal, [&](VarId v) {
    Variable& var = state()[v];
    if (var.kind == VarKind::Literal)  // else evaluated meanwhile: its buffer is its size now
      var.prov = std::move(prov);
  });
}

void run_pending_scatters() {
  state();
  Window w;
  flush_side_effects();
}

void drop_pending_scatters() noexcept {
  if (!t_state)
    return;
  Window w;
  discard_side_effects();
}

Handle handle_for_buffer(std::shared_ptr<Buffer> buffer, bool traced) {
  TracerState& s = state();
  Window w;
  return s.handle(var_from_buffer(std::move(buffer), traced));
}

std::shared_ptr<Buffer> evaluated_buffer(Handle h) {
  TracerState& s = state();
  auto get = [](VarId v) {
    if (state()[v].dirty)
      flush_side_effects();
    materialize(v);
    return state()[v].buffer;
  };
  if (table_of(h) != s.id) {
    ForeignAccess access(table_of(h));
    return get(index_of(h));
  }
  Window w;
  return get(index_of(h));
}

}  // namespace ff::detail
