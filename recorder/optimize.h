// The recording optimiser: passes over a closed Recording that make its replays cheaper
// without changing what they compute. docs/optimizer.md states each pass and the condition
// under which it is valid.
#pragma once

#include "recorder/recording.h"

namespace ff::rec {

struct OptimizeOptions {
  bool fuse_launches = true;
  bool remove_dead_ops = true;
  bool tighten_lifetimes = true;
  bool reuse_buffers = true;
  /// A fused kernel grows no larger than this (instructions), so one replay never compiles a
  /// huge kernel for a long chain; the chain is split there.
  size_t max_fused_instrs = 2048;
  /// Nor passes more arguments than this.
  size_t max_fused_params = 64;
};

/// Runs the passes on `d` in place and appends their counts to d.passes. A capture (inspect
/// only) and a recording already optimised are left as they are. The result is validated; if
/// a pass produced something invalid (a bug), `d` is left unoptimised and the problem logged.
void optimize(RecordingData& d, const OptimizeOptions& options = {});

}  // namespace ff::rec
