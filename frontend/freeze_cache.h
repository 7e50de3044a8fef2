// The recording cache behind ff::freeze, shared by frontend/freeze.cpp (calls: keys, replay,
// recording, verify) and frontend/freeze_io.cpp (f.save / f.load). Internal.
#pragma once

#include <array>
#include <atomic>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/hash.h"
#include "freezeframe/freeze.h"
#include "tracer/variable.h"

namespace ff::detail {

/// A recorded path: the recording and what a replay rebuilds the outputs from.
struct Held {
  Recording recording;
  std::vector<uint8_t> out_shape;
  WrittenArgs written;    // the arguments the body wrote: outputs after the result
  bool tolerant = false;  // float scatter_add or reduction inside: verify within tolerance
  std::string context;    // what its messages start with: the function, the file it came from
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

/// How a literal argument's size is described in the key: the only thing a replay knows about
/// it (the literal is no input). Persisted in keys (recording files): never renumber.
struct SizeClass {
  enum Kind : uint8_t {
    One = 0,    // size 1: it broadcasts
    Group = 1,  // the size of input size group `value` in this call
    Exact = 2,  // none of those: exactly `value` elements
  };

  Kind kind = One;
  uint64_t value = 0;

  friend bool operator==(const SizeClass&, const SizeClass&) = default;
};

/// The size class of a literal of `size` elements, given the sizes of the call's input groups.
inline SizeClass literal_size_class(uint64_t size, const std::vector<uint64_t>& group_sizes) {
  if (size == 1)
    return {SizeClass::One, 0};
  for (size_t g = 0; g < group_sizes.size(); ++g)
    if (group_sizes[g] == size)
      return {SizeClass::Group, g};
  return {SizeClass::Exact, size};
}

/// Everything one call needs, reused between calls (one per nesting depth and thread).
struct CallScratch {
  ScanVisitor scan;
  ByteBuffer key;                 // what the tracer adds to the scan's shape (build_key)
  std::vector<uint8_t> full_key;  // the scan's shape, then `key`: the cache's key
  std::vector<LeafInfo> infos;
  std::vector<int32_t> alias;  // per leaf: the first leaf with the same handle, or -1
  std::vector<AnyArray> inputs;
  bool borrowed = false;  // `inputs` hold no references: the caller's arguments keep them
  std::vector<uint64_t> group_sizes;  // per input size group: its size
  std::vector<uint32_t> group_input;  // per input size group: its first input (in `inputs`)
  std::vector<uint32_t> input_group;  // per leaf that is an input: its size group
  std::vector<std::pair<uint64_t, uint32_t>> sort_scratch;
  std::array<LastHit, 4> last;  // the functions this thread called last at this depth
  size_t next_last = 0;

  LastHit* find_last(uint64_t function) {
    for (LastHit& h : last)
      if (h.function == function)
        return &h;
    return nullptr;
  }

  /// Empties `inputs`, dropping the references unless they were borrowed.
  void drop_inputs() {
    if (borrowed)
      for (AnyArray& a : inputs)
        a.release();
    inputs.clear();
    borrowed = false;
  }

  LastHit& slot_for(uint64_t function) {
    if (LastHit* h = find_last(function))
      return *h;
    LastHit& h = last[next_last++ % last.size()];
    h.function = function;
    return h;
  }
};

/// One attribute of a key, with the argument path it belongs to (for the warn_after message).
struct KeyItem {
  std::string path, category, value;
};

/// A call's arguments described: the key's attributes, each leaf's path, the structs' names.
struct CallDescription {
  std::vector<KeyItem> items;
  std::vector<std::string> leaf_paths;                    // one per leaf
  std::vector<std::pair<uint64_t, std::string>> structs;  // name_hash, name
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

struct FreezeCore::Impl {
  FreezeOptions options;
  uint32_t verify_every = 0;

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
  std::atomic<uint64_t> replays_until_verify{0};
  bool warned = false;

  std::string prefix() const { return "frozen function '" + options.name + "': "; }

  /// Makes leaves opaque before keying: those at `ordinals` (auto_opaque), or every literal.
  void make_opaque_leaves(CallScratch& cs, const std::vector<uint32_t>& ordinals) const;
  void build_key(CallScratch& cs, bool borrow = false);
  void full_key(CallScratch& cs) const;
  bool replay_last_hit(CallSite& site, CallScratch& cs, uint64_t* tried_epoch);
  void remember(CallScratch& cs, const Entry& e, const std::vector<uint32_t>& opaque_applied);
  Entry* find(const Hash128& h, const std::vector<uint8_t>& key);
  std::vector<uint32_t> changed_literals(const CallScratch& cs, uint64_t shape_hash) const;
  bool replay(CallSite& site, CallScratch& cs, const std::shared_ptr<Held>& held);
  std::shared_ptr<Held> record(CallSite& site, CallScratch& cs);
  void verify(CallSite& site, const Held& held);
  CallDescription describe(CallSite& site, const CallScratch& cs) const;
  void warn_if_due(const Entry& fresh);
  void evict_locked();

  // The cache's bookkeeping (under the mutex unless said otherwise).
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

  // The FF_STRUCT names seen in keys, by the hash keys hold (for f.save and recorder-dump).
  std::map<uint64_t, std::string> struct_names;

  // Loaded from a file (f.load): the file and how many keys it brought (for the log line of a
  // call that matches none of them).
  std::string loaded_from;
  size_t n_loaded_keys = 0;
};

}  // namespace ff::detail
