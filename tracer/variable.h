// The tracer's data: buffers, variables (SSA nodes with reference counts), per-thread state.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "backend/ir/kernel_ir.h"
#include "freezeframe/detail/tracer_api.h"
#include "tracer/device.h"
#include "tracer/size_expr_node.h"
#include "tracer/var_table.h"

namespace ff::detail {

/// A variable of one table: its index there (0 = none). Handles add the table's id.
using VarId = uint32_t;

/// Device memory owned by one evaluated variable (or shared by several after make_opaque).
/// Releasing goes through the stack that allocated it, which it keeps alive.
struct Buffer {
  void* ptr = nullptr;
  uint64_t size = 0;  // logical element count (for a compress result: the count)
  ScalarType type = ScalarType::Float32;
  std::shared_ptr<Device> device;

  Buffer(void* p, uint64_t n, ScalarType t, std::shared_ptr<Device> d)
      : ptr(p), size(n), type(t), device(std::move(d)) {}

  ~Buffer() { device->backend().release(ptr); }

  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
};

/// Kinds of tracer variables beyond plain IR operations.
enum class VarKind : uint8_t {
  Evaluated,  // holds a buffer
  Literal,    // a constant (imm), no buffer
  Scalar,     // a uniform kernel argument (imm) with provenance, e.g. a mean's count
  Op,         // a lazy IR operation over deps
  Empty,      // a free slot in the table
};

struct Variable {
  VarKind kind = VarKind::Empty;
  IrOp op = IrOp::Literal;  // for VarKind::Op
  ScalarType type = ScalarType::Float32;
  bool dirty = false;   // a pending scatter writes this variable's buffer
  bool shared = false;  // another table's variable holds the same buffer: never write in place
  uint32_t refs = 0;    // handles plus other variables that use it
  VarId dep[4] = {0, 0, 0, 0};
  uint64_t imm = 0;  // literal bits, scalar value
  uint64_t size = 0;
  std::shared_ptr<Buffer> buffer;  // VarKind::Evaluated
  SizeExprPtr prov;                // where `size` came from; null = the constant `size`
  SizeExprPtr value_prov;          // VarKind::Scalar: where the value (a count) came from
  uint32_t scratch_epoch = 0;      // eval scratch: instruction index valid in this epoch
  uint32_t scratch = 0;
  uint32_t tag = 0;  // the serial of the innermost symbolic region open when it was made (0:
                     // none): what a region's kernel code computes inside it (region.h)
};

/// A scheduled scatter: executed with the next eval.
struct SideEffect {
  VarId target;              // evaluated variable whose buffer is written (0 for a region)
  VarId value, index, mask;  // value is 0 for an increment; a region's variable for a region
  IrOp op;                   // Scatter, ScatterAdd ... ScatterOr, ScatterInc, or LoopBegin,
                             // IfBegin, CallBegin: a region whose parts hold side effects
  VarId result;              // ScatterInc: its variable (the old values), which names this effect's
                             // target, index and mask; 0 for the other kinds
  uint64_t size;
  SizeExprPtr prov;

  /// The variables it holds a reference to.
  std::array<VarId, 5> held() const { return {target, value, index, mask, result}; }
};

/// A symbolic region (a loop, a two-way branch or an N-way call; tracer/region.cpp): what its
/// variable (kind Op, op LoopBegin / IfBegin / CallBegin, imm = its index in
/// TracerState::regions) holds. Its Result variables depend on that variable; it holds a
/// reference to everything listed here, released with it.
struct RegionData {
  IrOp kind = IrOp::LoopBegin;
  uint64_t imm = 0;  // LoopBegin: the iteration limit; CallBegin: the number of targets
  std::string name;  // for messages ("while_loop 'bounce'"); never in the IR
  // Variables made while it was open have tags in [serial, serial_end): its kernel code
  // computes them inside the region.
  uint32_t serial = 0, serial_end = 0;
  bool open = true;
  VarId selector = 0;        // IfBegin: the mask; CallBegin: the index
  std::vector<VarId> inits;  // LoopBegin: initial values
  std::vector<VarId> vars;   // LoopBegin: the placeholders (op LoopVar) of the carried values
  VarId cond = 0;            // LoopBegin: the condition

  struct Part {
    std::vector<VarId> yields;
    std::vector<SideEffect> effects;
  };

  std::vector<Part> parts;                // the body, the two branches, the targets
  std::vector<VarId> results;             // its Result variables (not references: each may have
                                          // been evaluated or freed since)
  std::vector<SideEffect> outer_effects;  // while open: the pending effects set aside
  uint32_t outer_tag = 0;                 // while open: the tag to restore when it closes
};

/// Per-thread tracing state: everything the hot path needs behind one thread-local access. Its
/// owner thread uses it inside Windows; other threads only through a ForeignAccess.
struct TracerState {
  uint32_t id = 0;                // table id (Handle's high bits), never reused
  std::vector<Variable> vars{1};  // index 0 is "no variable"
  std::vector<VarId> free_list;
  std::vector<SideEffect> side_effects;
  // Symbolic regions (region.h): their data by index (a region variable's imm), the regions
  // being traced (innermost last), and the serial the next region opened takes.
  std::vector<std::unique_ptr<RegionData>> regions;
  std::vector<uint32_t> free_regions;
  std::vector<uint32_t> open_regions;
  uint32_t current_tag = 0;  // the tag of variables made now (the innermost open serial)
  uint32_t next_serial = 1;
  // Masks of the evaluated-mode loop bodies being run (innermost last): scatters apply to
  // their lanes only.
  std::vector<VarId> scatter_masks;
  uint64_t live = 0;  // variables in use (an orphaned table is freed at 0)
  uint32_t epoch = 0;
  uint64_t n_traced_ops = 0;      // variables created by tracing (statistics)
  uint64_t n_traced_kernels = 0;  // kernels assembled by eval (statistics)

  // The handshake with other threads (var_table.h).
  std::atomic<int> busy{0};     // the owner is inside a window
  std::atomic<int> request{0};  // another thread waits for the table
  std::mutex foreign_mutex;     // held by the thread that has the table exclusively
  bool orphaned = false;        // the owner thread has exited (guarded by foreign_mutex)

  /// Reusable scratch buffers (capacity kept between calls, so tracing allocates little).
  struct Scratch {
    std::vector<VarId> free_work;
    std::vector<SizeNode> guard_lhs, guard_rhs, alloc_prov, launch_prov, arg_prov;
    std::vector<uint64_t> arg_bits;
    std::vector<std::pair<uint32_t, uint32_t>> arg_prov_ranges;
    std::vector<std::pair<const Buffer*, uint32_t>> buffer_params;
    std::vector<std::pair<VarId, bool>> emit_stack;
    KernelIR ir;
    std::vector<KernelArg> args;
  } scratch;

  Variable& operator[](VarId v) { return vars[v]; }

  VarId alloc_var();
  void free_var(VarId v);

  /// The handle of local variable `v`.
  Handle handle(VarId v) const { return v ? make_handle(id, v) : 0; }
};

template <class Fn>
void for_each_region_input(const RegionData& r, Fn&& fn) {
  if (r.selector)
    fn(r.selector);
  for (VarId v : r.inits)
    fn(v);
  if (r.cond)
    fn(r.cond);
  for (const RegionData::Part& p : r.parts) {
    for (VarId v : p.yields)
      fn(v);
    for (const SideEffect& e : p.effects)
      for (VarId v : {e.value, e.index, e.mask, e.result})
        if (v)
          fn(v);
  }
}

inline Window::Window() {
  if (t_window_depth++ == 0) {
    TracerState& s = *t_state;
    s.busy.store(1, std::memory_order_relaxed);
    if (g_asymmetric_fences)
      std::atomic_signal_fence(std::memory_order_seq_cst);
    else
      std::atomic_thread_fence(std::memory_order_seq_cst);
    if (s.request.load(std::memory_order_acquire)) [[unlikely]]
      window_enter_slow(s);
  }
}

inline Window::~Window() {
  if (--t_window_depth == 0)
    t_state->busy.store(0, std::memory_order_release);
}

/// The calling thread's table (created on first use), or the table it impersonates.
inline TracerState& state() {
  if (TracerState* s = t_state) [[likely]]
    return *s;
  return create_thread_table();
}

/// Runs fn(v) on the variable the handle `h` names, in its own thread's window or, for an
/// array of another thread's (or an orphaned) table, under a ForeignAccess: either way
/// state() inside `fn` is the variable's table.
template <class Fn>
auto with_variable(Handle h, Fn&& fn) {
  TracerState& s = state();
  if (table_of(h) != s.id) {
    ForeignAccess access(table_of(h));
    return fn(index_of(h));
  }
  Window w;
  return fn(index_of(h));
}

/// Reference counting of local variables (inside a window).
inline void inc_local(VarId v) {
  if (v)
    ++state()[v].refs;
}

inline void dec_local(VarId v) {
  if (!v)
    return;
  TracerState& s = state();
  if (--s[v].refs == 0)
    s.free_var(v);
}

/// Reference that dies with its scope (for temporaries inside the tracer).
class VarRef {
 public:
  VarRef() = default;

  explicit VarRef(VarId v) : v_(v) {}  // takes over a reference

  VarRef(const VarRef&) = delete;
  VarRef& operator=(const VarRef&) = delete;

  VarRef(VarRef&& o) noexcept : v_(o.v_) { o.v_ = 0; }

  ~VarRef() { dec_local(v_); }

  VarId get() const { return v_; }

  VarId release() {
    VarId v = v_;
    v_ = 0;
    return v;
  }

 private:
  VarId v_ = 0;
};

/// The operands of a library call as variables of this thread's table: handles from another
/// thread's table are imported (localize) and the imports released when the call ends.
class Operands {
 public:
  Operands(std::initializer_list<Handle> handles) {
    TracerState& s = state();
    for (Handle h : handles) {
      VarId v = 0;
      if (table_of(h) == s.id) [[likely]] {
        v = index_of(h);
      } else if (h) {
        bool fresh = false;
        v = localize(h, &fresh);
        if (fresh)
          imported_[n_imported_++] = v;
      }
      ids_[n_++] = v;
    }
  }

  ~Operands() {
    if (n_imported_) [[unlikely]] {
      Window w;
      for (uint32_t i = 0; i < n_imported_; ++i)
        dec_local(imported_[i]);
    }
  }

  Operands(const Operands&) = delete;
  Operands& operator=(const Operands&) = delete;

  VarId operator[](size_t i) const { return ids_[i]; }

 private:
  VarId ids_[4] = {0, 0, 0, 0};
  VarId imported_[4] = {0, 0, 0, 0};
  uint32_t n_ = 0, n_imported_ = 0;
};

/// Result size of an element-wise operation over `ops` (0 entries are skipped), with a guard
/// for every size decision whose inputs carry provenance; `what` names the operation in errors.
struct SizeDecision {
  uint64_t size;
  SizeExprPtr prov;
};

SizeDecision decide_size(const char* what, std::span<const VarId> ops);

/// Regions (region.cpp). Whether `op` is a region variable's (LoopBegin, IfBegin, CallBegin).
constexpr bool is_region_op(IrOp op) {
  return op == IrOp::LoopBegin || op == IrOp::IfBegin || op == IrOp::CallBegin;
}

/// Frees region `index` of `s`, appending every variable it held a reference to to `held` (the
/// caller releases them).
void release_region(TracerState& s, uint32_t index, std::vector<VarId>& held);
/// The region a region variable stands for.
RegionData& region_of(VarId region_var);
/// Calls fn(VarId) for every variable whose value region `r`'s kernel code reads: the selector,
/// the initial values, the condition, the yields and each effect's operands (not the targets:
/// buffers), the nested regions' variables included.
template <class Fn>
void for_each_region_input(const RegionData& r, Fn&& fn);
/// "while_loop 'name'", "if_stmt", ...: how messages name a region.
std::string region_label(const RegionData& r);
/// Marks the buffers effect `e` writes (a region's: those of every effect inside) as having a
/// pending write or not.
void set_effect_dirty(TracerState& s, const SideEffect& e, bool dirty);
/// Throws the error for an eval (or flush) of `v` while a symbolic region is traced, if `v`
/// was computed inside one; `what` says what was attempted.
void check_eval_in_region(const TracerState& s, VarId v, const char* what);

/// Element-wise operations on local variables, for other tracer files (var_mean).
VarId binary_local(Op op, VarId a, VarId b);
VarId cast_local(ScalarType t, VarId a);

/// A new variable with one reference (the caller's).
VarId new_var(VarKind kind, ScalarType type, uint64_t size, SizeExprPtr prov);

/// The size provenance of a variable as an expression (a leaf for evaluated variables).
SizeExprPtr width_expr(VarId v);

/// Runs every pending scatter (and what it depends on).
void flush_side_effects();
/// Drops every pending scatter unexecuted (a failed recording scope: refused work must have
/// no effect later).
void discard_side_effects() noexcept;

/// What a frozen function's key needs to know about an argument array.
struct LeafInfo {
  ScalarType type = ScalarType::Float32;
  bool literal = false;        // an unevaluated constant: its value is baked into kernels
  uint64_t bits = 0;           // literal: the value's bits
  uint64_t size = 0;           // element count
  bool size_has_prov = false;  // the size came from an array (else a plain constant)
};

/// The LeafInfo of `n` arrays of any thread (one tracer window for those of this thread).
void leaf_infos(const Handle* handles, size_t n, LeafInfo* out);

/// For a frozen function's recording: makes the size of the literal `literal` (any thread's)
/// come from `like` (the logical size of that buffer; null: a plain constant) and returns the
/// provenance it had, for restore_literal_size. The sizes must be equal. A recording then
/// expresses the literal's size exactly as the key describes it, never through arrays outside
/// the recording (which would bake the recorded size in).
SizeExprPtr rebind_literal_size(Handle literal, const std::shared_ptr<Buffer>& like);
/// Puts the provenance back, unless the variable was evaluated meanwhile (it then has a buffer).
void restore_literal_size(Handle literal, SizeExprPtr prov) noexcept;

/// For the front end (outside windows): runs / drops this thread's pending scatters, and wraps
/// a buffer in a new array of this thread.
void run_pending_scatters();
void drop_pending_scatters() noexcept;
Handle handle_for_buffer(std::shared_ptr<Buffer> buffer, bool traced);
/// The buffer of the array `h` names (any thread's), evaluating it and running the scatters
/// pending on it first.
std::shared_ptr<Buffer> evaluated_buffer(Handle h);
/// Evaluates `v` into a buffer (literals are filled): afterwards kind == Evaluated.
void materialize(VarId v);
/// A new evaluated variable owning `buffer` (size = buffer->size). `traced` = false for
/// buffers that come from a replay, which traces nothing (they do not count in statistics).
VarId var_from_buffer(std::shared_ptr<Buffer> buffer, bool traced = true);
/// Allocates a buffer of `size` elements whose count came from `prov`.
std::shared_ptr<Buffer> alloc_buffer(ScalarType t, uint64_t size, const SizeExprNode* prov);

}  // namespace ff::detail
