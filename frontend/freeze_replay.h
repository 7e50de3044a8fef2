// The replay entry at the level of tracer handles: what a frozen call (and Recording::replay,
// which wraps it in AnyArrays) replays through. Internal to the front end.
#pragma once

#include <span>
#include <vector>

#include "freezeframe/freeze.h"
#include "replay/replayer.h"

namespace ff::detail {

/// The replay's buffers, reused between calls (a frozen call keeps one per nesting depth and
/// thread): once they have grown, a replay allocates nothing but its output buffers' own.
struct ReplayScratch {
  std::vector<replay::ReplayInput> bound;
  std::vector<replay::ReplayOutput> outs;
  /// The replay's outputs: one reference each, until a rebuild takes it.
  std::vector<TypedHandle> outputs;

  ReplayScratch() = default;
  ReplayScratch(const ReplayScratch&) = delete;
  ReplayScratch& operator=(const ReplayScratch&) = delete;

  ~ReplayScratch() { drop_outputs(); }

  /// Drops the output references nobody took.
  void drop_outputs() noexcept;
};

/// Replays `r` on the arrays `inputs` (borrowed: the caller holds them until this returns),
/// leaving its outputs in `s.outputs` (earlier ones must have been taken or dropped). Enters
/// the tracer once: one window binds the inputs' buffers (evaluating them), runs the replay and
/// wraps its output buffers as arrays of this thread. Throws what Recording::replay documents
/// (ff::GuardError for a recorded size decision that does not hold, ...); nothing leaks.
void replay_handles(const Recording& r, std::span<const TypedHandle> inputs, ReplayScratch& s);

}  // namespace ff::detail
