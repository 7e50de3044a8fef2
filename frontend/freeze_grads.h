// Gradients across a frozen call's boundary (docs/freeze.md, "Gradients"): a grad-enabled
// argument is part of the key (and so is whether its node holds a gradient yet); that gradient
// goes into the recording as an extra input; what the body leaves in it comes out as an extra
// output that a replay writes back into the caller's node; written arguments that were
// grad-enabled come out as new grad-enabled leaves, as the optimisers leave them. A replayed
// output through which a later ff::backward reaches the arguments gets a node whose backward
// is a frozen function of its own (CallSite::make_backward). Internal to the front end.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "freezeframe/freeze.h"
#include "frontend/freeze_key.h"
#include "recorder/freeze_section.h"

namespace ff::detail {

/// One call's grad-enabled arguments (one per nesting depth and thread, empty for calls
/// without them).
struct GradCall {
  // Per grad item of the key: its node, with a reference (a rebuild may replace the caller's
  // arrays before the gradients are written back).
  std::vector<AdIndex> nodes;
  std::vector<AnyArray> grads;  // the items' gradients, held for the call (extra key leaves)
  std::vector<AdIndex> entry;   // per argument leaf: its node as the call came in (borrowed)

  GradCall() = default;
  GradCall(const GradCall&) = delete;
  GradCall& operator=(const GradCall&) = delete;

  ~GradCall() { clear(); }

  /// Drops what the call held (at its end: nothing of the gradient graph outlives it here).
  void clear() noexcept {
    for (AdIndex n : nodes)
      ad_dec_ref(n);
    nodes.clear();
    grads.clear();
    entry.clear();
  }
};

/// An output through which a later ff::backward reaches the call's grad-enabled arguments: a
/// replay gives it a node whose backward runs the call's frozen backward (CallSite::
/// make_backward). f.save writes that backward's recordings with the record (freeze layout 4).
inline constexpr uint32_t kThroughCall = static_cast<uint32_t>(format::GradOutput::ThroughCall);

/// What a call does with gradients: per output array a format::GradOutput (or kThroughCall),
/// per grad item a format::GradEnd (freeze_section.h).
struct GradOutcome {
  std::vector<uint32_t> outputs;
  std::vector<uint8_t> ends;
};

/// Before a call whose scan met grad-enabled arrays is keyed: refuses one computed from other
/// grad-enabled arrays (ff::FreezeError naming its path), writes the key's grad items into
/// `ks.grads` and appends each item's gradient to the scan's leaves, held in `g`.
void gather_grads(CallSite& site, KeyScratch& ks, GradCall& g, const std::string& prefix);

/// After the body ran on the caller's arguments and its outputs were sunk into `sink`: what
/// each output and item does with gradients. `extra` (recording only) receives the gradients
/// a replay must produce, in the order the outcome names them.
GradOutcome classify_grads(const KeyScratch& ks, const GradCall& g, const SinkVisitor& sink,
                           std::vector<AnyArray>* extra);

/// ... then gives the caller's outputs their nodes as the outcome says (the ones a replay
/// would give), and the arguments the body did not write the nodes they came in with.
void settle_traced(CallSite& site, const KeyScratch& ks, const GradCall& g, const SinkVisitor& sink,
                   const GradOutcome& o, const WrittenArgs& written);

/// The distinct nodes of the call's grad items (what a frozen backward's gradients reach).
std::vector<AdIndex> backward_sources(const KeyScratch& ks, const GradCall& g);

/// Whether the outcome has an output of kind kThroughCall.
bool has_backward(const GradOutcome& o);

/// A replay's nodes for its first `outputs.size()` outputs (references; what the rebuild
/// gives the arrays), from the recording's outcome and its outputs; `backward` and `sources`
/// for the outputs of kind kThroughCall.
std::vector<AdIndex> replay_output_nodes(const GradCall& g, const GradOutcome& o,
                                         std::span<const TypedHandle> outputs,
                                         std::span<const TypedHandle> extra,
                                         const std::shared_ptr<CallBackward>& backward,
                                         const std::vector<AdIndex>& sources);

/// ... and the items' gradients written back into the caller's nodes.
void write_back_grads(const GradCall& g, const GradOutcome& o, std::span<const TypedHandle> extra);

}  // namespace ff::detail
