// The replayer: executes a ReplayPlan on a backend with new input buffers.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "freezeframe/errors.h"
#include "replay/replay_plan.h"

namespace ff::replay {

struct ReplayInput {
  const void* ptr;
  ScalarType type;
  uint64_t size;  // logical element count
};

struct ReplayOutput {
  void* ptr = nullptr;  // owned by the caller now, unless `input` or `same_as` is set
  ScalarType type = ScalarType::Float32;
  uint64_t size = 0;
  int32_t input = -1;    // the output is input k, unchanged (aliasing)
  int32_t same_as = -1;  // the output is the same buffer as an earlier output
};

/// Told before and after each op of a replay (recorder-replay's per-op timings and traces).
struct OpObserver {
  virtual ~OpObserver() = default;
  virtual void before_op(size_t op) = 0;
  /// `slot_sizes`: every slot's logical size (elements) after the op.
  virtual void after_op(size_t op, std::span<const uint64_t> slot_sizes) = 0;
};

struct ReplayOptions {
  /// Null (the fast path): no calls.
  OpObserver* observer = nullptr;
  /// Pass size provenance and guards down (replaying into an open recording scope, so the
  /// outer recording learns exact sizes). Off: the fast path.
  bool provenance = false;
  /// FF_DEBUG: every rank must make the same collective call (kind, reduction, type, root, an
  /// all_reduce's count), checked with an extra exchange before each; MPI itself does not.
  bool check_collectives = false;
  /// Every rank agrees before each collective after the first (and at the end where the plan
  /// says): off only inside an open recording scope, whose recording backend makes them.
  bool agreements = true;
};

/// Replays `plan` with `inputs` on `backend` (the backend the plan was built for). Throws
/// ff::GuardError when a recorded size decision does not hold for these inputs, and
/// ff::FreezeError for inputs that do not match the recorded signature or sizes that would
/// be negative or out of bounds. Nothing leaks and no input is modified on any error.
///
/// With ff::dist collectives, every rank agrees before each collective after the first, and at
/// the end where agrees_at_end(), so that an error after a collective reaches every rank: where
/// one rank's guard failed (and no rank is tracing) every rank throws ff::GuardError (the call
/// may try its other paths), otherwise the failing rank throws its error and the others a
/// dist_impl::EveryRankError. Any other error after the last agreement is this rank's alone
/// (nobody waits for it); one inside a collective ends every rank (MPI_Abort). A replay into an
/// open recording leaves the agreements to the recording backend (ReplayOptions::agreements).
std::vector<ReplayOutput> run(const ReplayPlan& plan, Backend& backend,
                              std::span<const ReplayInput> inputs, const ReplayOptions& options);

/// The same, the outputs written to `outs` (cleared first; a caller that keeps it across
/// replays allocates nothing for them). On an error `outs` holds nothing the caller owns.
void run(const ReplayPlan& plan, Backend& backend, std::span<const ReplayInput> inputs,
         const ReplayOptions& options, std::vector<ReplayOutput>& outs);

}  // namespace ff::replay
