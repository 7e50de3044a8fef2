// A replay plan: a validated Recording pre-digested for fast repeated replays on one backend
// (kernels compiled, argument patch lists, guard positions, size evaluation order).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "backend/backend.h"
#include "recorder/recording.h"

namespace ff::replay {

/// How to compute one size at replay without walking an expression tree in the common cases.
struct SizeRef {
  enum Kind : uint8_t { Const, SlotSize, Expr } kind = Const;

  uint64_t value = 0;  // Const
  uint32_t index = 0;  // SlotSize: slot; Expr: expression
};

/// A buffer argument to patch into a launch's argument array.
struct BufferPatch {
  uint32_t arg;  // position in the argument array
  uint32_t slot;
  uint64_t offset;           // bytes into the slot
  uint32_t lane_bytes;       // >0: the kernel reads or writes element i of every lane (Load or
                             // Store), so the slot must hold `size` elements of this many bytes
  uint32_t fixed_bytes = 0;  // bytes the kernel touches at any size (LoadBroadcast reads
                             // element 0, a debug range report writes two words)
};

/// A gather or scatter into a buffer argument indexes below a bound argument: the slot must
/// hold `bound` elements (a recording from outside could pass any bound).
struct BoundCheck {
  uint32_t patch;  // into ReplayPlan::buffer_patches
  uint32_t bound_arg;
  uint32_t elem_bytes;
};

/// A scalar argument whose value is a size expression (a gather bound, a mean's count).
struct ScalarPatch {
  uint32_t arg;
  SizeRef size;
};

struct PlannedOp {
  rec::OpCode code;
  SizeRef size;
  uint32_t kernel = 0;                        // Launch
  uint32_t n_args = 0;                        // Launch: arguments in the template
  uint32_t template_begin = 0;                // into ReplayPlan::arg_template
  uint32_t buffer_begin = 0, buffer_end = 0;  // into ReplayPlan::buffer_patches
  uint32_t scalar_begin = 0, scalar_end = 0;  // into ReplayPlan::scalar_patches
  uint32_t bound_begin = 0, bound_end = 0;    // into ReplayPlan::bound_checks
  uint32_t guard_begin = 0, guard_end = 0;    // guards checked after this op
  // A loop op (the control-flow issue) plugs in here: its body is a nested op list, planned
  // like the top level into a subrange [body_begin, body_end) of ReplayPlan::ops right after
  // the loop op (so an op's index stays its position in the plan, the index observers and
  // messages name), handed out by ReplayPlan::body() as the same span type as sequence(),
  // and walked by the replayer while the loop's condition holds.
};

/// True when a recording has an ff::dist collective that exchanges sizes (all_gather,
/// broadcast, sendrecv: every kind but all_reduce): a replay of it, and the traced run that
/// records it, end with one more agreement of every rank (replay/replayer.h), so that a guard
/// on such a size failing after the last collective sends every rank to retry, not this one
/// alone. The kinds of collectives are the same on every rank (MPI's lock-step), so every rank
/// makes the same agreements whatever its guards; the optimiser keeps every collective.
bool agrees_at_end(const rec::RecordingData& d);

class ReplayPlan {
 public:
  /// Compiles the kernels of `data` (validated already: not again) on `backend`. Throws
  /// ff::FreezeError for a session capture, and what Backend::compile throws.
  ReplayPlan(rec::ValidatedRecording data, Backend& backend);
  /// For a recording no one has validated (built by hand): validates it first
  /// (ff::FormatError naming the problem).
  ReplayPlan(std::shared_ptr<const rec::RecordingData> data, Backend& backend);

  const rec::RecordingData& data() const { return *data_; }

  /// Backend::instance_id() of the backend the kernels were compiled on.
  uint64_t backend_id() const { return backend_id_; }

  uint64_t generation() const { return generation_; }

  /// The op sequence a replay walks, in order. A nested op list (a loop op's body, to come) is
  /// a span of the same type over a subrange of `ops`, walked the same way.
  std::span<const PlannedOp> sequence() const { return ops; }

  /// The position in the plan of `op`, an element of `ops`: its index in RecordingData::ops.
  size_t index_of(const PlannedOp& op) const { return static_cast<size_t>(&op - ops.data()); }

  rec::ValidatedRecording data_;
  uint64_t backend_id_;
  uint64_t generation_;
  std::vector<KernelHandle> kernels;
  std::vector<PlannedOp> ops;
  std::vector<uint64_t> arg_template;  // launch arguments with constants filled in
  std::vector<BufferPatch> buffer_patches;
  std::vector<ScalarPatch> scalar_patches;
  std::vector<BoundCheck> bound_checks;
  std::vector<uint32_t> guard_order;    // guard indices: [0, n_early) before the first op,
  uint32_t n_early_guards = 0;          // then per-op ranges (PlannedOp::guard_*)
  std::vector<uint8_t> written_inputs;  // per input: some op writes it (copied first)
  std::vector<uint8_t> is_output;       // per slot
  uint32_t max_args = 0;
  // Collectives (ff::dist): the rank count the recording needs (0: none), and the rank it
  // must replay on (-1: any; a sendrecv with an absolute peer sets it). Checked before any op.
  uint32_t dist_ranks = 0;
  uint32_t n_collectives = 0;  // every rank agrees before each one after the first
  bool agree_at_end = false;   // agrees_at_end(): and once more after the last op
  int dist_rank = -1;
  bool reads_rank = false;  // a size expression reads ff::dist's rank or rank count
};

}  // namespace ff::replay
