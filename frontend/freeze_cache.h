// The recording cache behind ff::freeze: entries by key, their recordings (least recently used
// dropped first), the opaque sets, and this thread's last hits. Its bookkeeping is in
// freeze_cache.cpp; frontend/freeze.cpp calls through it (freeze_key.h keys, freeze_replay.h
// replays, freeze_verify.h checks) and frontend/freeze_io.cpp saves and loads it. Internal.
#pragma once

#include <array>
#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/hash.h"
#include "freezeframe/freeze.h"
#include "frontend/freeze_grads.h"
#include "frontend/freeze_key.h"
#include "frontend/freeze_replay.h"
#include "frontend/freeze_verify.h"
#include "recorder/recording.h"
#include "tracer/variable.h"

namespace ff::detail {

/// The recordings that a loaded recording's frozen backward held when it was saved: kept until
/// a call site makes that backward (one per call-site types), which adopts them.
struct LoadedBackward {
  std::shared_ptr<const format::FreezeSection> section;
  // The file's recordings (the section's indices), shared by every record that has a backward.
  std::shared_ptr<const std::vector<rec::ValidatedRecording>> recordings;
  std::string path;
};

/// A recorded path: the recording and what a replay rebuilds the outputs from.
struct Held {
  Recording recording;
  std::vector<uint8_t> out_shape;
  WrittenArgs written;  // the arguments the body wrote: outputs after the result
  // Calls with grad-enabled arguments: what the outputs and the arguments' gradients do
  // (freeze_grads.h). The recording's first n_regular outputs are the result's and the
  // written arguments' arrays, the rest the gradients the outcome names.
  GradOutcome grads;
  size_t n_regular = 0;
  // Outputs of kind kThroughCall: the frozen backward made for each type of call site
  // (CallSite::make_backward), under the mutex; for a recording f.load read, what the file held
  // for them (null: nothing).
  std::mutex backward_mutex;
  std::map<const void*, BackwardCache> backwards;
  std::shared_ptr<const LoadedBackward> loaded_backward;
  bool tolerant = false;  // float scatter_add or reduction inside: verify within tolerance
  // ff::dist collectives inside: verify never re-runs it traced, which would issue collectives
  // the other ranks do not.
  bool collective = false;
  // Its replay failed a guard after a collective while another rank recorded the call: the
  // next call skips it (and records), as the recording rank will have recorded the call.
  mutable std::atomic<bool> skip_next{false};
  std::string context;  // what its messages start with: the function, the file it came from
  // The types (CallSite::types) its result shape fitted last: rebuilt into those directly,
  // into any others staged first.
  std::atomic<const void*> fitted_types{nullptr};
  uint64_t created = 0;
  std::atomic<uint64_t> last_used{0};
};

/// This thread's last hits of one frozen function: what the fast path of the next call
/// compares against (the argument shape, the leaves it made opaque, the key's tracer part) and
/// the recordings it tries, valid while the function's epoch is unchanged.
struct LastHit {
  uint64_t function = 0;  // FreezeCore::Impl::id; 0 = unused
  uint64_t epoch = 0;
  ByteBuffer shape;
  std::vector<uint32_t> opaque;
  ByteBuffer key;
  std::vector<std::weak_ptr<Held>> held;
};

/// Everything one call needs, reused between calls (one per nesting depth and thread): its
/// key, its replay's buffers and this thread's last hits at this depth.
struct CallScratch : KeyScratch {
  GradCall grad_call;
  ReplayScratch replay;
  std::array<LastHit, 4> last;  // the functions this thread called last at this depth
  size_t next_last = 0;

  LastHit* find_last(uint64_t function) {
    for (LastHit& h : last)
      if (h.function == function)
        return &h;
    return nullptr;
  }

  LastHit& slot_for(uint64_t function) {
    if (LastHit* h = find_last(function))
      return *h;
    LastHit& h = last[next_last++ % last.size()];
    h.function = function;
    return h;
  }
};

struct Entry {
  std::vector<uint8_t> key;  // the scan's shape, then what build_key adds
  size_t shape_bytes = 0;    // of the key: the shape part
  uint64_t shape_hash = 0;
  std::vector<LeafInfo> infos;
  std::vector<std::shared_ptr<Held>> held;  // most recently used first
  std::vector<KeyItem> description;
  std::vector<std::string> leaf_paths;  // each leaf's path ("args[0].pos"), for f.save
  bool recording = false;               // a thread is recording this key now
};

/// A call past the fast path: what it has found out so far.
struct SlowCall {
  bool nested = false;           // inside an open recording scope
  uint64_t tried_epoch = 0;      // the epoch at which the fast path tried this key's recordings
  uint64_t shape_hash = 0;       // of the argument shape
  std::vector<uint32_t> opaque;  // the leaves made opaque before keying
  Hash128 hash{};                // of the full key
};

/// What the full path does next with a call (FreezeCore::Impl::step).
enum class Step {
  Replayed,   // done
  RunTraced,  // run the body traced: nested, or its key is being recorded
  KeyAgain,   // leaves were made opaque, or the entry went away: key the call again
  Record,     // the entry is marked recording: record the call
};

/// True when `d` holds an ff::dist collective.
bool has_collectives(const rec::RecordingData& d);

struct FreezeCore::Impl {
  FreezeOptions options;
  VerifySchedule verify;
  std::atomic<bool> verify_skip_logged{false};  // the warning that collectives skip verify

  mutable std::mutex mutex;
  std::unordered_map<Hash128, std::vector<std::unique_ptr<Entry>>> entries;
  std::unordered_map<uint64_t, std::vector<uint32_t>> opaque;  // shape hash -> leaf ordinals
  uint64_t id = 0;  // never reused: what this thread's LastHit names
  // Bumped (under the mutex) whenever entries, their recordings' order or the opaque sets
  // change: a LastHit of an older epoch is not trusted.
  std::atomic<uint64_t> epoch{1};
  std::atomic<uint64_t> tick{0};
  uint64_t seq = 0;
  size_t n_recordings = 0, n_cached = 0;
  std::atomic<size_t> n_replays{0};
  bool warned = false;

  // The FF_STRUCT names seen in keys, by the hash keys hold (for f.save and recorder-dump).
  std::map<uint64_t, std::string> struct_names;

  // Loaded from a file (f.load): the file and how many keys it brought (for the log line of a
  // call that matches none of them).
  std::string loaded_from;
  size_t n_loaded_keys = 0;

  std::string prefix() const { return "frozen function '" + options.name + "': "; }

  // A call (freeze.cpp), in the order FreezeCore::call takes them.
  /// The same kind of call as this thread's last one, nothing changed since: replays it (no
  /// lock, no hash). `tried_epoch`: set where it tried the key's recordings.
  bool replay_last_hit(CallSite& site, CallScratch& cs, uint64_t* tried_epoch);
  /// Makes the call's leaves of its argument shape's opaque set opaque (all literals without
  /// auto_opaque), so the key sees buffers where it must.
  void apply_opaque_set(CallScratch& cs, SlowCall& c);
  /// Keys the call, looks it up and replays what the entry holds; says what comes next.
  Step step(CallSite& site, CallScratch& cs, SlowCall& c);
  /// A miss: the literals that changed against an otherwise equal key are made opaque (true:
  /// key again), else a new entry is marked recording.
  Step miss(CallSite& site, CallScratch& cs, SlowCall& c, std::unique_lock<std::mutex>& lock);
  /// Replays the first of `held` that fits, and remembers it for this thread.
  bool replay_first_fit(CallSite& site, CallScratch& cs, const SlowCall& c,
                        const std::vector<std::shared_ptr<Held>>& held);
  /// Runs the body traced on the caller's arguments (nested, or its key is being recorded);
  /// with grad-enabled arguments, its outputs then get the nodes a replay would give them.
  void run_traced(CallSite& site, CallScratch& cs);
  /// Records the call for its entry (marked recording) and keeps the recording.
  void record_call(CallSite& site, CallScratch& cs, const SlowCall& c);

  // Replaying and recording (freeze.cpp).
  /// Replays `held` into the call's outputs (verify: checks it when due); false where a guard
  /// did not hold.
  bool replay(CallSite& site, CallScratch& cs, const std::shared_ptr<Held>& held);
  bool run_replay(CallScratch& cs, const Held& held);
  void rebuild(CallSite& site, CallScratch& cs, Held& held);
  /// `failed_rank`: set (>= 0) where another rank's replay failed after this recording's last
  /// collective; the recording is complete and kept, and the call raises after keeping it.
  std::shared_ptr<Held> record(CallSite& site, CallScratch& cs, int* failed_rank);
  /// Makes leaves opaque: those at `ordinals` (auto_opaque), or every literal.
  void make_opaque_leaves(CallScratch& cs, const std::vector<uint32_t>& ordinals) const;

  // The cache's bookkeeping (freeze_cache.cpp; under the mutex unless said otherwise).
  Entry* find(const Hash128& h, const std::vector<uint8_t>& key);
  /// A new entry for `key`, whose first `shape_bytes` bytes are the argument shape.
  Entry& add_entry(const Hash128& h, std::vector<uint8_t> key, size_t shape_bytes,
                   std::vector<LeafInfo> infos);
  /// Keeps `held` in `e`, first (most recently used).
  void hold(Entry& e, std::shared_ptr<Held> held);
  /// Moves `held` to the front of `e`'s recordings (it fitted where the first did not).
  void promote(Entry& e, const std::shared_ptr<Held>& held);
  /// Drops `e` and its recordings.
  void erase_entry(const Entry* e);
  /// Marks `held` used now, for LRU (no mutex: an approximate clock is enough).
  void touch(Held& held);
  void evict_locked();
  /// This thread's last hit of this function: `e` with the call's key and opaque set.
  void remember(CallScratch& cs, const Entry& e, const std::vector<uint32_t>& opaque_applied);
  /// The leaves whose literal values differ from an entry that is otherwise the same call.
  std::vector<uint32_t> changed_literals(const CallScratch& cs, uint64_t shape_hash) const;
  /// Adds `changed` to the opaque set of `shape_hash`; returns the set.
  std::vector<uint32_t> add_opaque(uint64_t shape_hash, const std::vector<uint32_t>& changed);
  /// After a recording of `cs`'s key: keeps it, with the call's description, and remembers it.
  void keep(CallScratch& cs, const SlowCall& c, std::shared_ptr<Held> held,
            CallDescription description);
  /// After a failed recording: the entry is no longer recording (dropped if it holds none).
  void abandon(const SlowCall& c, const std::vector<uint8_t>& key);
  /// Logs the warning of FreezeOptions::warn_after when this recording is the one it names.
  void warn_if_due(const Entry& fresh);
};

}  // namespace ff::detail
