// Frozen functions: the recording cache behind ff::freeze.
//
// Theory of operation
// -------------------
// Each call is first *scanned* (freeze.h: the template walks the arguments): the structure,
// element types and scalar values become the key's first part, and every array leaf is
// listed. This file adds what only the tracer knows about each leaf:
//   - a literal (an unevaluated constant) is baked into the kernels and is no input of the
//     recording: its value and its size class go into the key (1; the size of an input size
//     group of this call; else its exact size: literal_size_class), and while the call records
//     its size is rebound to what the class says (LiteralSizes), so the recording holds the
//     literal's size exactly as the key pins it;
//   - any other array is an input: which earlier leaf it aliases and which other inputs share
//     its size (the tracer fuses work of equal sizes into one kernel and broadcasts size 1
//     against any size, so the pattern of equal sizes shapes the kernels);
// plus the flags that change generated code. Sizes themselves are not in the key: recordings
// replay at any size their size expressions and guards allow.
//
// The key's XXH3-128 finds an entry; its bytes are compared. An entry holds recordings (most
// recently used first): a replay whose guard fails (ff::GuardError) tries the next, and when
// none fits the body is recorded again for this path and kept beside the others. A miss
// records: ff::record with the input leaves, running the body on the caller's own arguments,
// so the call itself is the traced call. The outputs are the result's arrays, then the arrays
// of every argument the body changed (compared before and after it ran; written back after a
// replay), with the shape (containers' sizes, scalar values) a replay rebuilds them from. A
// recording's first replay into a set of types rebuilds into copies and commits only when the
// whole shape fitted (RebuildVisitor checks every type): a mismatch writes no argument.
//
// Literals that change: with auto_opaque, a miss whose key equals an earlier one except for
// the values of some literals marks those leaves opaque for that argument shape (logged with
// their paths), makes them buffers in the caller's arrays, and keys again; later calls apply
// the opaque set before keying, so a fresh literal each call costs one more recording in all.
//
// The parts: freeze_key.h builds and compares keys (and writes them with the codec of their
// persisted form), freeze_cache.h/.cpp keeps the entries and recordings, freeze_replay.h
// replays at the level of tracer handles, freeze_verify.h checks replays against traced runs,
// freeze_io.cpp saves and loads; this file walks a call through them.
//
// Threads: the cache is guarded by a mutex; replays and recordings run outside it. A thread
// that finds its key being recorded by another runs its call traced (a wait could deadlock:
// the recording thread may be waiting for this call). Each
// thread remembers its last kind of call of each function (LastHit): a repeat replays without
// the mutex or the hashes while the cache's epoch is unchanged.
// Nesting: inside an open recording scope a hit replays into it (the outer recording sees the
// replayed ops) and a miss runs the body traced into it.
#include "freezeframe/freeze.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <deque>
#include <mutex>

#include "backend/ir/ir_analysis.h"
#include "common/hash.h"
#include "common/log.h"
#include "dist/mpi_world.h"
#include "frontend/freeze_cache.h"
#include "frontend/recording_state.h"
#include "recorder/freeze_section.h"
#include "recorder/recording_backend.h"
#include "runtime/environment.h"
#include "tracer/variable.h"

namespace ff::detail {

void RebuildVisitor::fail(const std::string& what) const {
  throw FreezeError(context_ + "rebuilding the result: " + what);
}

void RebuildVisitor::mismatch(const std::string& recorded, const std::string& type) const {
  throw FreezeError(context_ + "the recording's result holds " + recorded +
                    " where the function's types hold " + type + " (byte " + std::to_string(pos_) +
                    " of its result shape)");
}

std::string RebuildVisitor::array_name(uint8_t type) {
  if (type > static_cast<uint8_t>(ScalarType::Float64))
    return "an array of unknown element type " + std::to_string(type);
  return std::string("an array of ") + to_string(static_cast<ScalarType>(type));
}

std::string scalar_tag_name(uint8_t tag) {
  return tag == 4 ? "bool or uint8" : format::scalar_type_name(tag);  // one byte, unsigned
}

std::string shape_node_name(uint8_t node) {
  auto token = static_cast<format::ShapeToken>(node);
  std::string name = format::to_string(token);
  if (name == "unknown")
    return "an unknown node " + std::to_string(node);
  bool vowel = name[0] == 'a' || name[0] == 'o';
  return (vowel ? "an " : "a ") + name;
}

namespace {

std::atomic<uint64_t> g_next_function{1};

thread_local size_t t_depth = 0;

struct DepthScope {
  DepthScope() { ++t_depth; }

  ~DepthScope() { --t_depth; }
};

thread_local std::deque<CallScratch> t_scratch;

/// Whether the recording holds an operation whose float results depend on the order of work.
}  // namespace

bool has_collectives(const rec::RecordingData& d) {
  return std::any_of(d.ops.begin(), d.ops.end(),
                     [](const rec::Op& op) { return op.code == rec::OpCode::Collective; });
}

namespace {

bool order_dependent(const rec::RecordingData& d) {
  for (const rec::Op& op : d.ops)
    if ((op.code == rec::OpCode::Reduce || op.code == rec::OpCode::PrefixSum) && is_float(op.type))
      return true;
  return std::any_of(d.kernels.begin(), d.kernels.end(),
                     [](const auto& k) { return ff::order_dependent(*k); });
}

}  // namespace

FreezeCore::FreezeCore(FreezeOptions options) : impl_(std::make_unique<Impl>()) {
  impl_->options = std::move(options);
  impl_->id = g_next_function++;
  if (impl_->options.name.empty())
    impl_->options.name = "frozen function #" + std::to_string(impl_->id);
  uint32_t verify_every = impl_->options.verify;
  if (!verify_every)
    verify_every = detail::freeze_verify_from_environment();
  impl_->verify.set_every(verify_every);
}

FreezeCore::~FreezeCore() = default;

ScanVisitor& FreezeCore::scan() {
  while (t_scratch.size() <= t_depth)
    t_scratch.emplace_back();
  ScanVisitor& s = t_scratch[t_depth].scan;
  s.clear();
  return s;
}

bool FreezeCore::freezing() const {
  return flag(Flag::KernelFreezing) && impl_->options.limit > 0;
}

// ---------------------------------------------------------------------------------------------
// A call: the fast path, else key, look up, replay what the entry holds, or record.

void FreezeCore::call(CallSite& site) {
  Impl& m = *impl_;
  CallScratch& cs = t_scratch[t_depth];
  DepthScope depth;  // calls inside the body use the next scratch

  struct ReleaseGrads {  // the grad-enabled arguments' nodes and gradients, held for the call
    GradCall& g;

    ~ReleaseGrads() { g.clear(); }
  } release_grads{cs.grad_call};

  if (!cs.scan.grad_leaves.empty()) [[unlikely]]
    gather_grads(site, cs, cs.grad_call, m.prefix());
  else
    cs.grads.clear();
  SlowCall c;
  // Nested calls take the full path (it decides between replaying into the outer recording
  // and tracing into it).
  c.nested = recording_open();
  if (!c.nested && m.replay_last_hit(site, cs, &c.tried_epoch))
    return;
  m.apply_opaque_set(cs, c);
  for (;;) {
    switch (m.step(site, cs, c)) {
      case Step::Replayed:
        return;
      case Step::RunTraced:
        m.run_traced(site, cs);
        return;
      case Step::KeyAgain:
        continue;
      case Step::Record:
        m.record_call(site, cs, c);
        return;
    }
  }
}

bool FreezeCore::Impl::replay_last_hit(CallSite& site, CallScratch& cs, uint64_t* tried) {
  LastHit* hit = cs.find_last(id);
  uint64_t now = epoch.load(std::memory_order_acquire);
  if (!hit || hit->epoch != now || !(hit->shape == cs.scan.shape))
    return false;
  make_opaque_leaves(cs, hit->opaque);
  build_key(cs);
  if (!(cs.key == hit->key))
    return false;
  *tried = now;
  for (size_t i = 0; i < hit->held.size(); ++i) {
    std::shared_ptr<Held> held = hit->held[i].lock();
    if (!held)
      return false;  // dropped meanwhile (the epoch moved on too)
    if (!replay(site, cs, held))
      continue;
    touch(*held);
    if (i > 0) {
      // Another path fitted: it goes first in the entry, for this thread and the others.
      std::lock_guard lock(mutex);
      full_key(cs);
      if (Entry* e = find(hash128(std::as_bytes(std::span(cs.full_key))), cs.full_key)) {
        promote(*e, held);
        remember(cs, *e, hit->opaque);
      }
    }
    return true;
  }
  return false;
}

void FreezeCore::Impl::apply_opaque_set(CallScratch& cs, SlowCall& c) {
  c.shape_hash = hash64(std::as_bytes(std::span(cs.scan.shape.data(), cs.scan.shape.size())));
  if (options.auto_opaque) {
    std::lock_guard lock(mutex);
    auto it = opaque.find(c.shape_hash);
    if (it != opaque.end())
      c.opaque = it->second;
  }
  make_opaque_leaves(cs, c.opaque);
}

Step FreezeCore::Impl::step(CallSite& site, CallScratch& cs, SlowCall& c) {
  build_key(cs);
  full_key(cs);
  c.hash = hash128(std::as_bytes(std::span(cs.full_key)));
  std::unique_lock lock(mutex);
  Entry* e = find(c.hash, cs.full_key);
  if (!e)
    return miss(site, cs, c, lock);
  // Being recorded, further out on this thread (the body calls itself: traced into the open
  // recording) or by another thread: this call runs traced, as the traced program would.
  // Never a wait: the recording thread may be waiting for this very call (a body that hands
  // the same call to a worker and joins it), and a traced call is exactly as correct as the
  // replay it would have waited for.
  if (e->recording && (c.nested || e->held.empty()))
    return Step::RunTraced;
  // The fast path tried these already when it matched this key at this epoch.
  std::vector<std::shared_ptr<Held>> held;
  if (c.tried_epoch != epoch.load())
    held = e->held;
  lock.unlock();
  if (replay_first_fit(site, cs, c, held))
    return Step::Replayed;
  if (c.nested)
    return Step::RunTraced;
  lock.lock();
  e = find(c.hash, cs.full_key);
  if (!e) {  // dropped meanwhile
    c.tried_epoch = 0;
    return Step::KeyAgain;
  }
  if (e->recording)  // another path of this key is being recorded (see above)
    return Step::RunTraced;
  e->recording = true;
  return Step::Record;
}

Step FreezeCore::Impl::miss(CallSite& site, CallScratch& cs, SlowCall& c,
                            std::unique_lock<std::mutex>& lock) {
  if (c.nested)  // traced into the outer recording, which sees every op
    return Step::RunTraced;
  std::vector<uint32_t> changed =
      options.auto_opaque ? changed_literals(cs, c.shape_hash) : std::vector<uint32_t>{};
  if (!changed.empty()) {
    c.opaque = add_opaque(c.shape_hash, changed);
    lock.unlock();
    for (uint32_t i : changed)
      logging::record().info(
          "{}the literal {} changed between calls (now {}): it is made opaque (a buffer, "
          "passed to the kernels as an argument) from now on, and the function is "
          "recorded once more",
          prefix(), leaf_path(site, i), format::element_value(cs.infos[i].type, cs.infos[i].bits));
    make_opaque_leaves(cs, changed);
    return Step::KeyAgain;  // with buffers there
  }
  if (!loaded_from.empty())
    // Not an error: a call of another kind records for itself, as it would had nothing been
    // loaded (a generic callable may take other arguments than the saved calls).
    logging::record().info("{}this call matched none of the {} key(s) loaded from '{}'; recording",
                           prefix(), n_loaded_keys, loaded_from);
  add_entry(c.hash, cs.full_key, cs.scan.shape.size(), cs.infos).recording = true;
  return Step::Record;
}

bool FreezeCore::Impl::replay_first_fit(CallSite& site, CallScratch& cs, const SlowCall& c,
                                        const std::vector<std::shared_ptr<Held>>& held) {
  for (const auto& candidate : held) {
    if (!replay(site, cs, candidate))
      continue;
    touch(*candidate);
    std::lock_guard lock(mutex);
    if (Entry* e = find(c.hash, cs.full_key)) {
      promote(*e, candidate);
      if (!c.nested)
        remember(cs, *e, c.opaque);
    }
    return true;
  }
  return false;
}

void FreezeCore::Impl::run_traced(CallSite& site, CallScratch& cs) {
  if (cs.grads.empty()) {
    site.run();
    return;
  }
  site.snapshot_arguments();
  site.run();
  WrittenArgs written = site.written_arguments();
  SinkVisitor sink;
  site.outputs(sink, written);
  GradOutcome o = classify_grads(cs, cs.grad_call, sink, nullptr);
  settle_traced(site, cs, cs.grad_call, sink, o, written);
}

void FreezeCore::Impl::record_call(CallSite& site, CallScratch& cs, const SlowCall& c) {
  std::shared_ptr<Held> held;
  CallDescription description;
  int failed_rank = -1;
  try {
    description = describe_call(site, cs);  // the arguments as passed, before the body runs
    held = record(site, cs, &failed_rank);
  } catch (...) {
    std::lock_guard lock(mutex);
    abandon(c, cs.full_key);
    throw;
  }
  {
    std::lock_guard lock(mutex);
    keep(cs, c, std::move(held), std::move(description));
  }
  if (failed_rank >= 0)  // kept: the next call with these arguments replays it
    throw dist_impl::EveryRankError(
        prefix() + dist_impl::recorder_cannot_retry(failed_rank, "after its last collective") +
        " (the recording is kept)");
}

void FreezeCore::Impl::make_opaque_leaves(CallScratch& cs,
                                          const std::vector<uint32_t>& ordinals) const {
  const std::vector<Handle>& leaves = cs.scan.leaves;
  std::vector<Handle> to_make;
  if (options.auto_opaque) {
    for (uint32_t i : ordinals)
      if (i < leaves.size())
        to_make.push_back(leaves[i]);
  } else {
    cs.infos.resize(leaves.size());
    leaf_infos(leaves.data(), leaves.size(), cs.infos.data());
    for (size_t i = 0; i < leaves.size(); ++i)
      if (cs.infos[i].literal)
        to_make.push_back(leaves[i]);
  }
  if (!to_make.empty())
    var_make_opaque(to_make);  // literals become buffers, in the caller's arrays too
}

// ---------------------------------------------------------------------------------------------
// Replaying and recording

bool FreezeCore::Impl::replay(CallSite& site, CallScratch& cs, const std::shared_ptr<Held>& held) {
  if (held->skip_next.exchange(false))
    return false;  // this rank records the call this time (Held::skip_next)
  // Verify runs the body traced on copies of the arguments as they were before the replay.
  bool check = verify.due();
  if (check && held->collective) {
    check = false;  // a traced re-run on this rank alone would leave the others waiting
    if (!verify_skip_logged.exchange(true))
      logging::record().warn(
          "{}verify mode does not check replays with ff::dist collectives "
          "(a traced re-run would issue collectives the other ranks do not)",
          prefix());
  }
  if (check)
    site.keep_copies();
  if (!run_replay(cs, *held)) {
    if (check)
      verify.retry_next();
    return false;
  }
  rebuild(site, cs, *held);
  ++n_replays;
  if (check)
    verify_replay(site, held->written, held->tolerant, prefix());
  return true;
}

bool FreezeCore::Impl::run_replay(CallScratch& cs, const Held& held) {
  try {
    replay_handles(held.recording, cs.inputs, cs.replay);
  } catch (const dist_impl::GuardBesideRecorder&) {
    held.skip_next = true;
    throw;
  } catch (const GuardError& e) {
    logging::record().debug("{}a recorded path does not fit: {}", prefix(), e.what());
    return false;
  } catch (const FreezeError& e) {  // the same error, naming the function (and the file)
    throw FreezeError(held.context + "replaying: " + e.what());
  } catch (const BackendError& e) {
    throw BackendError(held.context + "replaying: " + e.what());
  }
  return true;
}

void FreezeCore::Impl::rebuild(CallSite& site, CallScratch& cs, Held& held) {
  struct DropOutputs {  // what the rebuild did not take (it threw)
    ReplayScratch& s;

    ~DropOutputs() { s.drop_outputs(); }
  } drop{cs.replay};

  std::span<TypedHandle> outputs(cs.replay.outputs);
  size_t n_regular = std::min(held.n_regular, outputs.size());
  RebuildVisitor rebuild(held.out_shape, outputs.first(n_regular), held.context);

  struct DropNodes {  // the gradient nodes the rebuild did not take (it threw)
    std::vector<AdIndex> nodes;

    ~DropNodes() {
      for (AdIndex n : nodes)
        ad_dec_ref(n);
    }
  } grad_nodes;

  bool grads = !cs.grads.empty();
  if (grads) [[unlikely]] {
    std::vector<AdIndex> sources;
    std::shared_ptr<CallBackward> backward;
    if (has_backward(held.grads)) {  // over the arguments as they came in: before the rebuild
      sources = backward_sources(cs, cs.grad_call);
      std::lock_guard lock(held.backward_mutex);
      BackwardCache& cache = held.backwards[site.types()];
      bool fresh = !cache.frozen;
      backward = site.make_backward(held.written, sources, cache, options.name);
      if (fresh && held.loaded_backward)  // what the file held for it
        cache.core->adopt(*held.loaded_backward);
    }
    grad_nodes.nodes = replay_output_nodes(cs.grad_call, held.grads, outputs.first(n_regular),
                                           outputs.subspan(n_regular), backward, sources);
    rebuild.set_grad_nodes(grad_nodes.nodes);
  }
  const void* types = site.types();
  bool fitted = held.fitted_types.load(std::memory_order_acquire) == types;
  site.rebuild(rebuild, held.written, /*staged=*/!fitted);
  rebuild.finish();
  if (grads) [[unlikely]]
    write_back_grads(cs.grad_call, held.grads, outputs.subspan(n_regular));
  if (!fitted)
    held.fitted_types.store(types, std::memory_order_release);
}

namespace {

/// While a frozen call records: every literal argument's size comes from where its size class
/// says (its group's first input, else a plain constant), so the recording holds the literal's
/// size exactly as the key pins it, never the recorded size of an array outside it. Restored
/// afterwards (in reverse: a literal passed twice is rebound twice).
class LiteralSizes {
 public:
  explicit LiteralSizes(const KeyScratch& ks) {
    try {
      for (size_t i = 0; i < ks.scan.leaves.size(); ++i)
        if (ks.infos[i].literal)
          rebind(ks, i);
    } catch (...) {
      restore();
      throw;
    }
  }

  ~LiteralSizes() { restore(); }

  LiteralSizes(const LiteralSizes&) = delete;
  LiteralSizes& operator=(const LiteralSizes&) = delete;

 private:
  void rebind(const KeyScratch& ks, size_t i) {
    Handle leaf = ks.scan.leaves[i];
    SizeClass c = literal_size_class(ks.infos[i].size, ks.group_sizes);
    std::shared_ptr<Buffer> like;
    if (c.kind == SizeClass::Group)
      like = evaluated_buffer(ks.inputs[ks.group_input[c.value]].handle);
    inc_ref(leaf);  // the body may drop the caller's array: the variable stays ours
    rebound_.push_back({leaf, nullptr});
    rebound_.back().second = rebind_literal_size(leaf, like);
  }

  void restore() noexcept {
    for (auto it = rebound_.rbegin(); it != rebound_.rend(); ++it) {
      restore_literal_size(it->first, std::move(it->second));
      dec_ref(it->first);
    }
    rebound_.clear();
  }

  std::vector<std::pair<Handle, SizeExprPtr>> rebound_;
};

/// The call's inputs with a reference each: the body may drop the caller's arrays.
std::vector<AnyArray> owned_inputs(const KeyScratch& ks) {
  std::vector<AnyArray> inputs;
  inputs.reserve(ks.inputs.size());
  for (const InputLeaf& in : ks.inputs) {
    inc_ref(in.handle);
    inputs.push_back(AnyArray::steal(in.handle, in.type));
  }
  return inputs;
}

}  // namespace

std::shared_ptr<Held> FreezeCore::Impl::record(CallSite& site, CallScratch& cs, int* failed_rank) {
  SinkVisitor sink;
  WrittenArgs written;
  GradOutcome grads;
  Recording r;
  try {
    std::vector<AnyArray> inputs = owned_inputs(cs);
    LiteralSizes literal_sizes(cs);
    site.snapshot_arguments();
    auto body = [&] {
      site.run();
      written = site.written_arguments();
      site.outputs(sink, written);
      if (cs.grads.empty())
        return sink.arrays;
      // Then the gradients a replay writes back (freeze_grads.h).
      std::vector<AnyArray> outputs = sink.arrays;
      grads = classify_grads(cs, cs.grad_call, sink, &outputs);
      return outputs;
    };
    r = record_scope(inputs, body, RecordOptions{options.optimize}, failed_rank);
  } catch (const rec::Refusal& e) {
    // What the recorder refused, with the function's name; the body's own exceptions
    // (FreezeErrors from nested calls, f.clear() inside it, ...) pass through unchanged.
    throw FreezeError(prefix() + e.what() +
                      " (a frozen function takes every array it reads as an argument and "
                      "returns what it computes; read results after the call)");
  }
  if (!cs.grads.empty())  // the caller's outputs as a replay leaves them
    settle_traced(site, cs, cs.grad_call, sink, grads, written);
  auto held = std::make_shared<Held>();
  held->recording = r;
  held->out_shape = sink.shape.to_vector();
  held->written = std::move(written);
  held->grads = std::move(grads);
  held->n_regular = sink.arrays.size();
  held->tolerant = order_dependent(*recording_state(r)->data);
  held->collective = has_collectives(*recording_state(r)->data);
  held->context = prefix();
  held->fitted_types = site.types();  // the shape was taken from these very types
  return held;
}

}  // namespace ff::detail
