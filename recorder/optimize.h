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

/// `d` with the passes run and their counts appended to its passes. A capture (inspect only)
/// and a recording already optimised are returned as they are. The result is validated (the
/// one check of the kernels the passes made); if a pass produced something invalid (a bug),
/// `d` is returned unoptimised and the problem logged.
ValidatedRecording optimize(const ValidatedRecording& d, const OptimizeOptions& options = {});

}  // namespace ff::rec
