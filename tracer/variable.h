// The tracer's data: buffers, variables (SSA nodes with reference counts), per-thread state.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "backend/ir/kernel_ir.h"
#include "freezeframe/detail/tracer_api.h"
#include "tracer/device.h"
#include "tracer/size_expr_node.h"

namespace ff::detail {

/// Device memory owned by one evaluated variable (or shared by several after make_opaque).
/// Releasing goes through the stack that allocated it, which it keeps alive.
struct Buffer {
  void* ptr = nullptr;
  uint64_t size = 0;  // logical element count (for a compress result: the count)
  ScalarType type = ScalarType::Float32;
  std::shared_ptr<Device> device;
  uint32_t param_epoch = 0;  // eval scratch: kernel parameter index valid in this epoch
  uint32_t param_index = 0;

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
  bool dirty = false;  // a pending scatter writes this variable's buffer
  uint32_t refs = 0;   // handles plus other variables that use it
  VarId dep[4] = {0, 0, 0, 0};
  uint64_t imm = 0;  // literal bits, scalar value
  uint64_t size = 0;
  std::shared_ptr<Buffer> buffer;  // VarKind::Evaluated
  SizeExprPtr prov;                // where `size` came from; null = the constant `size`
  SizeExprPtr value_prov;          // VarKind::Scalar: where the value (a count) came from
  uint32_t scratch_epoch = 0;      // eval scratch: instruction index valid in this epoch
  uint32_t scratch = 0;
};

/// A scheduled scatter: executed with the next eval.
struct SideEffect {
  VarId target;  // evaluated variable whose buffer is written
  VarId value, index, mask;
  bool add;
  uint64_t size;
  SizeExprPtr prov;
};

/// Per-thread tracing state: everything the hot path needs behind one thread-local access.
struct TracerState {
  std::shared_ptr<Device> device;  // this thread's reference to the current stack
  std::vector<Variable> vars{1};   // index 0 is "no variable"
  std::vector<VarId> free_list;
  std::vector<SideEffect> side_effects;
  uint32_t epoch = 0;
  uint64_t n_traced_ops = 0;      // variables created by tracing (statistics)
  uint64_t n_traced_kernels = 0;  // kernels assembled by eval (statistics)

  /// Reusable scratch buffers (capacity kept between calls, so tracing allocates little).
  struct Scratch {
    std::vector<VarId> free_work;
    std::vector<SizeNode> guard_lhs, guard_rhs, alloc_prov, launch_prov, arg_prov;
    std::vector<uint64_t> arg_bits;
    std::vector<std::pair<uint32_t, uint32_t>> arg_prov_ranges;
    std::vector<std::pair<VarId, bool>> emit_stack;
    KernelIR ir;
    std::vector<KernelArg> args;
  } scratch;

  Variable& operator[](VarId v) { return vars[v]; }

  VarId alloc_var();
  void free_var(VarId v);
};

TracerState& state();

/// Reference that dies with its scope (for temporaries inside the tracer).
class VarRef {
 public:
  VarRef() = default;

  explicit VarRef(VarId v) : v_(v) {}  // takes over a reference

  VarRef(const VarRef&) = delete;
  VarRef& operator=(const VarRef&) = delete;

  VarRef(VarRef&& o) noexcept : v_(o.v_) { o.v_ = 0; }

  ~VarRef() { dec_ref(v_); }

  VarId get() const { return v_; }

  VarId release() {
    VarId v = v_;
    v_ = 0;
    return v;
  }

 private:
  VarId v_ = 0;
};

/// A new variable with one reference (the caller's).
VarId new_var(VarKind kind, ScalarType type, uint64_t size, SizeExprPtr prov);

/// The size provenance of a variable as an expression (a leaf for evaluated variables).
SizeExprPtr width_expr(VarId v);

/// Runs every pending scatter (and what it depends on).
void flush_side_effects();
/// Drops every pending scatter unexecuted (a failed recording scope: refused work must have
/// no effect later).
void discard_side_effects() noexcept;
/// Evaluates `v` into a buffer (literals are filled): afterwards kind == Evaluated.
void materialize(VarId v);
/// A new evaluated variable owning `buffer` (size = buffer->size). `traced` = false for
/// buffers that come from a replay, which traces nothing (they do not count in statistics).
VarId var_from_buffer(std::shared_ptr<Buffer> buffer, bool traced = true);
/// Allocates a buffer of `size` elements whose count came from `prov`.
std::shared_ptr<Buffer> alloc_buffer(ScalarType t, uint64_t size, const SizeExprNode* prov);

}  // namespace ff::detail
