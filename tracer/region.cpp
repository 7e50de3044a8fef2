// Symbolic regions: loops, branches and calls traced once into the variable graph.
//
// Theory of operation
// -------------------
// The front end (include/freezeframe/control_flow.h) opens a region, runs the user's functions
// once and closes it:
//
//   loop = var_loop_begin(name, limit, inits, placeholders)   cond = user_cond(placeholders...)
//   var_loop_cond(loop, cond)                                 body(placeholders...) -> yields
//   var_loop_end(loop, yields, results)
//
// A region is a variable (kind Op, op LoopBegin / IfBegin / CallBegin) whose RegionData holds
// what its kernel code reads: the selector, the initial values and placeholders, the condition,
// each part's yields and side effects. Results are variables that depend on it. Every variable
// made while a region is open carries its serial as a tag: eval.cpp emits those inside the
// region's code, everything else before it. Scatters traced in a part are that part's effects
// (the pending list is set aside while the region is open); a region with effects is itself a
// pending effect once closed, so it runs with the next eval even if no result is used.
//
// While a region is open nothing computed inside it can be evaluated (an eval, a host read, a
// gather from such an array, a reduction of it): it has no value outside the region's code.
// Work on arrays from outside still evaluates (its pending effects are set aside meanwhile).
#include <algorithm>
#include <string>

#include "common/log.h"
#include "freezeframe/errors.h"
#include "tracer/variable.h"

namespace ff::detail {

namespace {

/// The API function that makes a region of `kind`, as messages name it.
const char* kind_name(IrOp kind) {
  return kind == IrOp::LoopBegin ? "while_loop" : kind == IrOp::IfBegin ? "if_stmt" : "switch_";
}

}  // namespace

std::string region_label(const RegionData& r) {
  std::string label = kind_name(r.kind);
  if (!r.name.empty())
    label += " '" + r.name + "'";
  return label;
}

void set_effect_dirty(TracerState& s, const SideEffect& e, bool dirty) {
  if (e.target) {
    s[e.target].dirty = dirty;
  } else if (is_region_op(e.op)) {
    for (const RegionData::Part& p : region_of(e.value).parts)
      for (const SideEffect& inner : p.effects)
        set_effect_dirty(s, inner, dirty);
  }
}

RegionData& region_of(VarId region_var) {
  TracerState& s = state();
  return *s.regions[s[region_var].imm];
}

void release_region(TracerState& s, uint32_t index, std::vector<VarId>& held) {
  std::unique_ptr<RegionData> r = std::move(s.regions[index]);
  s.free_regions.push_back(index);
  if (!r)
    return;
  held.push_back(r->selector);
  held.push_back(r->cond);
  held.insert(held.end(), r->inits.begin(), r->inits.end());
  held.insert(held.end(), r->vars.begin(), r->vars.end());
  for (const RegionData::Part& p : r->parts) {
    held.insert(held.end(), p.yields.begin(), p.yields.end());
    for (const SideEffect& e : p.effects)
      for (VarId v : e.held())
        held.push_back(v);
  }
}

namespace {

/// Marks the targets of `effects` (and of the effects of the regions among them) dirty or not.
void mark_targets(TracerState& s, const std::vector<SideEffect>& effects, bool dirty) {
  for (const SideEffect& e : effects)
    set_effect_dirty(s, e, dirty);
}

/// Opens a region of `kind` over `size` lanes: pending effects are run at the top level and set
/// aside inside another region; variables made from now on carry its serial.
VarId open_region(IrOp kind, uint64_t imm, const char* name, uint64_t size, SizeExprPtr prov) {
  TracerState& s = state();
  if (s.open_regions.size() >= static_cast<size_t>(kMaxRegionDepth))
    throw Error(std::string(kind_name(kind)) + ": control flow nests deeper than " +
                std::to_string(kMaxRegionDepth) + " levels");
  std::vector<SideEffect> outer;
  if (s.open_regions.empty())
    flush_side_effects();
  else
    outer.swap(s.side_effects);
  VarId v = new_var(VarKind::Op, ScalarType::Bool, size, std::move(prov));
  uint32_t index;
  if (!s.free_regions.empty()) {
    index = s.free_regions.back();
    s.free_regions.pop_back();
  } else {
    index = static_cast<uint32_t>(s.regions.size());
    s.regions.emplace_back();
  }
  s.regions[index] = std::make_unique<RegionData>();
  RegionData& r = *s.regions[index];
  r.kind = kind;
  r.imm = imm;
  r.name = name ? name : "";
  r.serial = s.next_serial++;
  r.outer_tag = s.current_tag;
  r.outer_effects = std::move(outer);
  s[v].op = kind;
  s[v].imm = index;
  s.current_tag = r.serial;
  s.open_regions.push_back(index);
  return v;
}

/// Ends the current part with `yields` (references taken) and the effects traced in it.
void end_part(TracerState& s, RegionData& r, std::span<const VarId> yields) {
  RegionData::Part part;
  for (VarId y : yields) {
    inc_local(y);
    part.yields.push_back(y);
  }
  part.effects.swap(s.side_effects);
  r.parts.push_back(std::move(part));
}

/// Closes the innermost region: its variables' size becomes `sd`, results are made (0 where
/// `passthrough` names a variable to hand out instead), and a region with effects is pending.
void close_region(TracerState& s, VarId rv, const SizeDecision& sd,
                  std::span<const ScalarType> types, std::span<const VarId> passthrough,
                  Handle* results) {
  RegionData& r = region_of(rv);
  r.open = false;
  r.serial_end = s.next_serial;
  s.current_tag = r.outer_tag;
  s.open_regions.pop_back();
  s.side_effects = std::move(r.outer_effects);
  r.outer_effects.clear();
  s[rv].size = sd.size;
  s[rv].prov = sd.prov;
  for (size_t j = 0; j < types.size(); ++j) {
    VarId through = j < passthrough.size() ? passthrough[j] : 0;
    if (through) {
      inc_local(through);
      results[j] = s.handle(through);
      r.results.push_back(0);
      continue;
    }
    VarId res = new_var(VarKind::Op, types[j], sd.size, sd.prov);
    s[res].op = IrOp::Result;
    s[res].imm = j;
    s[res].dep[0] = rv;
    ++s[rv].refs;
    region_of(rv).results.push_back(res);
    results[j] = s.handle(res);
  }
  RegionData& again = region_of(rv);
  bool effects = false;
  for (const RegionData::Part& p : again.parts)
    effects = effects || !p.effects.empty();
  if (effects) {
    ++s[rv].refs;
    s.side_effects.push_back(SideEffect{0, rv, 0, 0, again.kind, 0, sd.size, sd.prov});
  }
}

/// The size of a region's lanes: every value in `ops` has it or 1 (guards as elsewhere);
/// `what` names the region in errors.
SizeDecision region_size(const RegionData& r, std::span<const VarId> ops) {
  std::string what = region_label(r);
  return decide_size(what.c_str(), ops);
}

/// The variables of `handles` as local variables with a reference each (imports from other
/// threads included); call outside a window.
std::vector<VarId> take_local(std::span<const Handle> handles) {
  std::vector<VarId> out;
  out.reserve(handles.size());
  try {
    for (Handle h : handles) {
      bool fresh = false;
      VarId v = localize(h, &fresh);
      if (!fresh) {
        Window w;
        inc_local(v);
      }
      out.push_back(v);
    }
  } catch (...) {
    Window w;
    for (VarId v : out)
      dec_local(v);
    throw;
  }
  return out;
}

/// References to local variables (from take_local), dropped at the end of a scope (in a window
/// of this thread: declare it before the Window).
struct LocalRefs {
  std::vector<VarId> vars;

  explicit LocalRefs(std::vector<VarId> v) : vars(std::move(v)) {}

  ~LocalRefs() {
    Window w;
    for (VarId x : vars)
      dec_local(x);
  }

  LocalRefs(const LocalRefs&) = delete;
  LocalRefs& operator=(const LocalRefs&) = delete;
};

/// Every value a region's lanes read (for_each_region_input): each must have the region's size
/// or 1.
std::vector<VarId> lane_values(const RegionData& r) {
  std::vector<VarId> ops;
  for_each_region_input(r, [&](VarId v) { ops.push_back(v); });
  return ops;
}

void check_region_var(TracerState& s, VarId rv, IrOp kind) {
  if (!rv || s[rv].kind != VarKind::Op || s[rv].op != kind || !region_of(rv).open ||
      s.open_regions.empty() || s.open_regions.back() != s[rv].imm)
    throw Error(std::string(kind_name(kind)) +
                ": internal: the region is not the innermost one being traced");
}

}  // namespace

void check_eval_in_region(const TracerState& s, VarId v, const char* what) {
  if (s.open_regions.empty())
    return;
  const RegionData& outer = *s.regions[s.open_regions.front()];
  if (s.vars[v].tag < outer.serial)
    return;  // made before any open region: an ordinary value
  const RegionData& r = *s.regions[s.open_regions.back()];
  throw Error(region_label(r) + ": " + what + " of an array computed inside a symbolic " +
              (r.kind == IrOp::LoopBegin ? "loop body" : "branch or call target") +
              " is impossible: it has no value outside the kernel the region compiles to (an "
              "eval, a host read, a gather from it or a reduction of it); compute it before "
              "the region, return it as a result, or use ff::LoopMode::Evaluated");
}

Handle var_loop_begin(const char* name, uint64_t limit, std::span<const Handle> inits,
                      Handle* placeholders) {
  TracerState& s = state();
  std::vector<VarId> local = take_local(inits);
  Window w;
  VarId rv = 0;  // the region, until its placeholders are made
  size_t made = 0;
  try {
    for (VarId v : local)
      if (s[v].dirty)
        flush_side_effects();
    SizeDecision sd = decide_size(name && *name ? name : "while_loop", local);
    rv = open_region(IrOp::LoopBegin, limit, name, sd.size, sd.prov);
    region_of(rv).inits = local;
    local.clear();
    for (; made < inits.size(); ++made) {
      VarId p = new_var(VarKind::Op, s[region_of(rv).inits[made]].type, sd.size, sd.prov);
      s[p].op = IrOp::LoopVar;
      s[p].imm = s[rv].imm;
      region_of(rv).vars.push_back(p);
      inc_local(p);
      placeholders[made] = s.handle(p);
    }
  } catch (...) {
    for (VarId v : local)
      dec_local(v);
    if (rv) {
      for (size_t j = 0; j < made; ++j)
        dec_local(index_of(placeholders[j]));
      var_region_abort(s.handle(rv));
      dec_local(rv);
    }
    throw;
  }
  return s.handle(rv);
}

void var_loop_cond(Handle loop, Handle cond) {
  TracerState& s = state();
  std::vector<VarId> c = take_local(std::span<const Handle>(&cond, 1));
  Window w;
  VarRef held(c[0]);
  VarId rv = index_of(loop);
  check_region_var(s, rv, IrOp::LoopBegin);
  RegionData& r = region_of(rv);
  if (s[held.get()].type != ScalarType::Bool)
    throw Error(region_label(r) + ": the condition must be a Bool array, not " +
                to_string(s[held.get()].type));
  r.cond = held.release();
}

void var_loop_end(Handle loop, std::span<const Handle> yields, Handle* results) {
  TracerState& s = state();
  LocalRefs held(take_local(yields));
  const std::vector<VarId>& local = held.vars;
  Window w;

  VarId rv = index_of(loop);
  check_region_var(s, rv, IrOp::LoopBegin);
  RegionData& r = region_of(rv);
  if (!r.cond)
    throw Error(region_label(r) + ": internal: the loop has no condition");
  if (local.size() != r.vars.size())
    throw Error(region_label(r) + ": the body yields " + std::to_string(local.size()) +
                " state arrays, the state has " + std::to_string(r.vars.size()));
  std::vector<ScalarType> types;
  std::vector<VarId> through(local.size(), 0);
  for (size_t j = 0; j < local.size(); ++j) {
    ScalarType t = s[r.vars[j]].type;
    if (s[local[j]].type != t)
      throw Error(region_label(r) + ": state array " + std::to_string(j) +
                  " changed its type from " + to_string(t) + " to " + to_string(s[local[j]].type));
    types.push_back(t);
    if (local[j] == r.vars[j])
      through[j] = r.inits[j];  // unchanged: the loop hands out what it was given
  }
  end_part(s, r, local);
  RegionData& again = region_of(rv);
  std::vector<VarId> ops = lane_values(again);
  ops.push_back(rv);
  SizeDecision sd = region_size(again, ops);
  close_region(s, rv, sd, types, through, results);
}

Handle var_branch_begin(const char* name, Handle selector, uint32_t n_targets) {
  TracerState& s = state();
  std::vector<VarId> sel = take_local(std::span<const Handle>(&selector, 1));
  Window w;
  VarRef held(sel[0]);
  bool call = n_targets != 0;
  IrOp kind = call ? IrOp::CallBegin : IrOp::IfBegin;
  ScalarType want = call ? ScalarType::UInt32 : ScalarType::Bool;
  if (s[held.get()].type != want)
    throw Error(std::string(kind_name(kind)) + (call ? ": the index" : ": the mask") +
                " must be a " + (call ? "UInt32" : "Bool") + " array, not " +
                to_string(s[held.get()].type));
  if (call && n_targets > kMaxCallTargets)
    throw Error("switch_: " + std::to_string(n_targets) + " targets, at most " +
                std::to_string(kMaxCallTargets) + " are supported");
  if (s[held.get()].dirty)
    flush_side_effects();
  VarId rv = open_region(kind, call ? n_targets : 0, name, s[held.get()].size, s[held.get()].prov);
  region_of(rv).selector = held.release();
  return s.handle(rv);
}

void var_branch_part(Handle region, std::span<const Handle> yields) {
  TracerState& s = state();
  LocalRefs held(take_local(yields));
  const std::vector<VarId>& local = held.vars;
  Window w;

  VarId rv = index_of(region);
  if (!rv || s[rv].kind != VarKind::Op ||
      (s[rv].op != IrOp::IfBegin && s[rv].op != IrOp::CallBegin))
    throw Error("internal: var_branch_part on a variable that is no branch");
  check_region_var(s, rv, s[rv].op);
  RegionData& r = region_of(rv);
  uint64_t n_parts = r.kind == IrOp::IfBegin ? 2 : r.imm;
  if (r.parts.size() >= n_parts)
    throw Error(region_label(r) + ": internal: more parts than the region has");
  if (!r.parts.empty()) {
    const std::vector<VarId>& first = r.parts.front().yields;
    bool same = first.size() == local.size();
    for (size_t j = 0; same && j < local.size(); ++j)
      same = s[first[j]].type == s[local[j]].type;
    if (!same)
      throw Error(region_label(r) + ": " +
                  (r.kind == IrOp::IfBegin ? "the two branches" : "the targets") +
                  " return different types (" + std::to_string(first.size()) + " arrays, then " +
                  std::to_string(local.size()) + " arrays or other element types)");
  }
  end_part(s, r, local);
}

void var_branch_end(Handle region, Handle* results) {
  TracerState& s = state();
  Window w;
  VarId rv = index_of(region);
  check_region_var(s, rv, s[rv].op);
  RegionData& r = region_of(rv);
  uint64_t n_parts = r.kind == IrOp::IfBegin ? 2 : r.imm;
  if (r.parts.size() != n_parts)
    throw Error(region_label(r) + ": internal: " + std::to_string(r.parts.size()) + " parts of " +
                std::to_string(n_parts));
  std::vector<ScalarType> types;
  for (VarId y : r.parts.front().yields)
    types.push_back(s[y].type);
  std::vector<VarId> ops = lane_values(r);
  SizeDecision sd = region_size(r, ops);
  close_region(s, rv, sd, types, {}, results);
}

void var_region_abort(Handle region) noexcept {
  TracerState& s = state();
  Window w;
  VarId rv = index_of(region);
  if (!rv || s[rv].kind != VarKind::Op || !is_region_op(s[rv].op))
    return;
  RegionData& r = region_of(rv);
  if (!r.open)
    return;
  // Drop what the failed part traced; the parts already ended go with the region's variable.
  mark_targets(s, s.side_effects, false);
  discard_side_effects();
  for (const RegionData::Part& p : r.parts)
    mark_targets(s, p.effects, false);
  r.open = false;
  r.serial_end = s.next_serial;
  s.current_tag = r.outer_tag;
  if (!s.open_regions.empty() && s.open_regions.back() == s[rv].imm)
    s.open_regions.pop_back();
  s.side_effects = std::move(r.outer_effects);
  r.outer_effects.clear();
  mark_targets(s, s.side_effects, true);
}

void var_push_scatter_mask(Handle mask) {
  TracerState& s = state();
  std::vector<VarId> m = take_local(std::span<const Handle>(&mask, 1));
  Window w;
  s.scatter_masks.push_back(m[0]);
}

void var_pop_scatter_mask() noexcept {
  TracerState& s = state();
  Window w;
  if (s.scatter_masks.empty())
    return;
  VarId m = s.scatter_masks.back();
  s.scatter_masks.pop_back();
  dec_local(m);
}

bool var_recording() {
  return recording_open();
}

bool var_in_region() {
  return !state().open_regions.empty();
}

size_t var_region_depth() {
  return state().open_regions.size();
}

void warn_iteration_limit(const std::string& label, uint64_t lanes, uint64_t limit) {
  logging::tracer().warn(
      "{}: {} lane(s) were still active after max_iterations = {} iterations; they left the "
      "loop with their state as it was (FF_DEBUG)",
      label, lanes, limit);
}

}  // namespace ff::detail
