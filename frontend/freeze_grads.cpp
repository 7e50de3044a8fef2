// Gradients across a frozen call's boundary. See freeze_grads.h.
#include "frontend/freeze_grads.h"

#include <algorithm>

#include "freezeframe/errors.h"

namespace ff::detail {

using format::GradEnd;
using format::GradOutput;
using format::GradState;

void gather_grads(CallSite& site, KeyScratch& ks, GradCall& g, const std::string& prefix) {
  ScanVisitor& scan = ks.scan;
  g.clear();
  ks.grads.clear();
  g.entry.assign(scan.leaves.size(), 0);
  for (auto [leaf, node] : scan.grad_leaves) {
    g.entry[leaf] = node;
    format::GradItem item;
    item.leaf = leaf;
    auto same = std::find(g.nodes.begin(), g.nodes.end(), node);
    if (same != g.nodes.end()) {
      item.state = GradState::SameNode;
      item.same_as = static_cast<uint32_t>(same - g.nodes.begin());
    } else if (!ad_is_leaf(node)) {
      throw FreezeError(prefix + leaf_path(site, leaf) +
                        " is computed from grad-enabled arrays outside the call, and gradients "
                        "do not flow through a frozen call to them: pass a leaf of its own "
                        "(ff::detach, then ff::enable_grad), or call the function unfrozen");
    } else if (Handle grad = ad_grad_var(node)) {
      item.state = GradState::Gradient;
      g.grads.push_back(AnyArray::steal(grad, var_type(grad)));
    }
    ks.grads.push_back(item);
    ad_inc_ref(node);
    g.nodes.push_back(node);
  }
  // The gradients are leaves of the key like the arguments' arrays: inputs of the recording,
  // or literals baked into it, with their sizes in the key's size groups.
  for (const AnyArray& grad : g.grads)
    scan.leaves.push_back(grad.id());
}

namespace {

/// Whether argument `arg` came in with a grad-enabled array.
bool had_grads(const KeyScratch& ks, const GradCall& g, int32_t arg) {
  const std::vector<uint32_t>& starts = ks.scan.argument_starts;
  size_t a = static_cast<size_t>(arg);
  if (arg < 0 || a >= starts.size())
    return false;
  size_t begin = starts[a], end = a + 1 < starts.size() ? starts[a + 1] : g.entry.size();
  return std::any_of(ks.grads.begin(), ks.grads.end(), [&](const format::GradItem& item) {
    return item.leaf >= begin && item.leaf < end;
  });
}

}  // namespace

GradOutcome classify_grads(const KeyScratch& ks, const GradCall& g, const SinkVisitor& sink,
                           std::vector<AnyArray>* extra) {
  GradOutcome o;
  for (size_t k = 0; k < sink.arrays.size(); ++k) {
    AdIndex n = sink.nodes[k];
    auto item = std::find(g.nodes.begin(), g.nodes.end(), n);
    uint32_t kind = static_cast<uint32_t>(GradOutput::Detached);
    if (n == 0) {
      // detached
    } else if (item != g.nodes.end()) {
      kind = static_cast<uint32_t>(GradOutput::InputNode) +
             static_cast<uint32_t>(item - g.nodes.begin());
    } else if (ad_is_leaf(n)) {
      // A new leaf in an argument that came in grad-enabled (an optimiser's step) stays one;
      // any other leaf the body made is its own business, and comes out detached.
      if (had_grads(ks, g, sink.owners[k])) {
        kind = static_cast<uint32_t>(GradOutput::NewLeaf);
        if (Handle grad = ad_grad_var(n)) {
          kind = static_cast<uint32_t>(GradOutput::NewLeafGradient);
          AnyArray held = AnyArray::steal(grad, sink.arrays[k].type());
          if (extra)
            extra->push_back(std::move(held));
        }
      }
    } else if (ad_reaches(n, g.nodes.data(), g.nodes.size())) {
      kind = kThroughCall;  // its gradient flows back to the arguments
    }
    o.outputs.push_back(kind);
  }
  size_t next_grad = 0;
  for (size_t j = 0; j < ks.grads.size(); ++j) {
    const format::GradItem& item = ks.grads[j];
    Handle entry = item.state == GradState::Gradient ? g.grads[next_grad++].id() : 0;
    GradEnd end = GradEnd::Unchanged;
    if (item.state != GradState::SameNode) {
      AnyArray now = AnyArray();
      if (Handle h = ad_grad_var(g.nodes[j]))
        now = AnyArray::steal(h, var_type(h));
      if (!now.valid())
        end = entry ? GradEnd::Cleared : GradEnd::Unchanged;
      else if (now.id() != entry) {
        end = GradEnd::Gradient;
        if (extra)
          extra->push_back(std::move(now));
      }
    }
    o.ends.push_back(static_cast<uint8_t>(end));
  }
  return o;
}

void settle_traced(CallSite& site, const KeyScratch& ks, const GradCall& g, const SinkVisitor& sink,
                   const GradOutcome& o, const WrittenArgs& written) {
  std::vector<AdIndex> nodes(o.outputs.size(), 0);
  for (size_t k = 0; k < nodes.size(); ++k)
    if (o.outputs[k] != static_cast<uint32_t>(GradOutput::Detached)) {
      nodes[k] = sink.nodes[k];
      ad_inc_ref(nodes[k]);
    }
  site.set_output_grads(nodes, written);
  site.restore_argument_grads(g.entry, ks.scan.argument_starts, written);
}

std::vector<AdIndex> backward_sources(const KeyScratch& ks, const GradCall& g) {
  std::vector<AdIndex> sources;
  for (size_t j = 0; j < ks.grads.size() && j < g.nodes.size(); ++j)
    if (ks.grads[j].state != GradState::SameNode)
      sources.push_back(g.nodes[j]);
  return sources;
}

bool has_backward(const GradOutcome& o) {
  return std::find(o.outputs.begin(), o.outputs.end(), kThroughCall) != o.outputs.end();
}

std::vector<AdIndex> replay_output_nodes(const GradCall& g, const GradOutcome& o,
                                         std::span<const TypedHandle> outputs,
                                         std::span<const TypedHandle> extra,
                                         const std::shared_ptr<CallBackward>& backward,
                                         const std::vector<AdIndex>& sources) {
  std::vector<AdIndex> nodes(outputs.size(), 0);
  size_t next_extra = 0;
  try {
    for (size_t k = 0; k < nodes.size() && k < o.outputs.size(); ++k) {
      uint32_t kind = o.outputs[k];
      if (kind == kThroughCall) {
        nodes[k] = ad_call_output(backward, static_cast<uint32_t>(k), sources.data(),
                                  sources.size(), outputs[k].handle);
      } else if (kind == static_cast<uint32_t>(GradOutput::NewLeaf)) {
        nodes[k] = ad_new_leaf(outputs[k].handle, 0);
      } else if (kind == static_cast<uint32_t>(GradOutput::NewLeafGradient)) {
        nodes[k] = ad_new_leaf(outputs[k].handle, extra[next_extra++].handle);
      } else if (kind >= static_cast<uint32_t>(GradOutput::InputNode)) {
        nodes[k] = g.nodes[kind - static_cast<uint32_t>(GradOutput::InputNode)];
        ad_inc_ref(nodes[k]);
      }
    }
  } catch (...) {
    for (AdIndex n : nodes)
      ad_dec_ref(n);
    throw;
  }
  return nodes;
}

void write_back_grads(const GradCall& g, const GradOutcome& o, std::span<const TypedHandle> extra) {
  size_t next_extra = static_cast<size_t>(std::count(
      o.outputs.begin(), o.outputs.end(), static_cast<uint32_t>(GradOutput::NewLeafGradient)));
  for (size_t j = 0; j < o.ends.size() && j < g.nodes.size(); ++j) {
    if (o.ends[j] == static_cast<uint8_t>(GradEnd::Cleared))
      ad_set_grad(g.nodes[j], 0);
    else if (o.ends[j] == static_cast<uint8_t>(GradEnd::Gradient))
      ad_set_grad(g.nodes[j], extra[next_extra++].handle);
  }
}

}  // namespace ff::detail
