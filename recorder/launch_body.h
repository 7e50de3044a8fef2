// A launch as the recording optimiser edits it: a kernel's IR together with the arguments of
// one launch of it (one per parameter). The rewrites that fuse two launches into one and
// remove dead work inside a kernel live here; recorder/optimize.cpp decides when they apply.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "backend/ir/kernel_ir.h"
#include "recorder/recording.h"

namespace ff::rec {

/// How a kernel uses one of its parameters.
struct ParamUse {
  bool lane_read = false;   // Load: element i at lane i
  bool lane_write = false;  // Store: element i at lane i
  bool other = false;       // Gather, Scatter, ScatterAdd, LoadBroadcast or a range report:
                            // elements of other lanes (a dependence across lanes)

  bool reads() const { return lane_read || other; }

  bool writes(ParamKind kind) const { return lane_write || (other && kind != ParamKind::BufferIn); }
};

std::vector<ParamUse> param_uses(const KernelIR& ir);

struct LaunchBody {
  KernelIR ir;                  // `hash` is stale until finalize()
  std::vector<LaunchArg> args;  // one per parameter of `ir`
};

/// Appends the launch (`ir`, `args`) to `body` as if it ran after `body` at every lane, where
/// the caller has checked that this is valid (recorder/optimize.cpp, fusable()): buffers both
/// touch are shared as one parameter, a load of what `body` stored at the same lane becomes
/// that value, a second load of one buffer becomes the first, equal scalars become one.
void append_launch(LaunchBody& body, const KernelIR& ir, std::span<const LaunchArg> args);

/// Removes a kernel's dead work: stores for which `keep_store(param)` is false and that no
/// later instruction left reads, stores that a
/// later store to the same parameter overwrites with nothing reading the parameter between,
/// increments (ScatterInc) whose buffer `keep_store` drops and whose value nothing left uses,
/// instructions no remaining side effect needs, and parameters nothing uses (with their
/// arguments); parameter kinds are recomputed from the remaining accesses. Returns whether
/// any side effect is left.
bool remove_dead_work(LaunchBody& body, const std::function<bool(uint32_t param)>& keep_store);

}  // namespace ff::rec
