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
// Threads: the cache is guarded by a mutex; replays and recordings run outside it. A thread
// that finds its key being recorded by another runs its call traced (a wait could deadlock:
// the recording thread may be waiting for this call). Each
// thread remembers its last kind of call of each function (LastHit): a repeat replays without
// the mutex or the hashes while the cache's epoch is unchanged.
// Nesting: inside an open recording scope a hit replays into it (the outer recording sees the
// replayed ops) and a miss runs the body traced into it.
#include "freezeframe/freeze.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "common/hash.h"
#include "common/log.h"
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

/// The sizes of a call's input size groups, from its leaves (an alias has its target's size,
/// so counting aliases too numbers the groups as build_key does).
std::vector<uint64_t> group_sizes_of(const std::vector<LeafInfo>& infos) {
  std::vector<uint64_t> sizes;
  for (const LeafInfo& li : infos)
    if (!li.literal && std::find(sizes.begin(), sizes.end(), li.size) == sizes.end())
      sizes.push_back(li.size);
  return sizes;
}

/// Whether the recording holds an operation whose float results depend on the order of work.
bool order_dependent(const rec::RecordingData& d) {
  for (const rec::Op& op : d.ops)
    if ((op.code == rec::OpCode::Reduce || op.code == rec::OpCode::PrefixSum) && is_float(op.type))
      return true;
  for (const auto& k : d.kernels)
    for (const IrInstr& in : k->instrs)
      if (in.op == IrOp::ScatterAdd && is_float(in.type))
        return true;
  return false;
}

/// An array's contents as raw bytes (outside recordings: a host read).
std::vector<uint8_t> read_bytes(const AnyArray& a, ScalarType* type) {
  Handle h = a.id();
  uint64_t n = var_size(h);
  *type = a.type();
  std::vector<uint8_t> out(n * size_of(a.type()));
  if (n)
    var_read(h, out.data());
  return out;
}

template <class T>
T element(const std::vector<uint8_t>& b, size_t i) {
  T v;
  std::memcpy(&v, b.data() + i * sizeof(T), sizeof(T));
  return v;
}

/// The first element where `a` and `b` differ, or -1.
int64_t first_difference(ScalarType t, const std::vector<uint8_t>& a, const std::vector<uint8_t>& b,
                         bool tolerant) {
  size_t n = a.size() / size_of(t);
  auto close = [&](double x, double y) {
    if (std::isnan(x) && std::isnan(y))
      return true;
    if (x == y)
      return true;
    return tolerant && std::fabs(x - y) <= 1e-5 * std::max(std::fabs(x), std::fabs(y)) + 1e-6;
  };
  for (size_t i = 0; i < n; ++i) {
    bool same;
    if (t == ScalarType::Float32)
      same = close(element<float>(a, i), element<float>(b, i));
    else if (t == ScalarType::Float64)
      same = close(element<double>(a, i), element<double>(b, i));
    else
      same = std::memcmp(a.data() + i * size_of(t), b.data() + i * size_of(t), size_of(t)) == 0;
    if (!same)
      return static_cast<int64_t>(i);
  }
  return -1;
}

std::string element_string(ScalarType t, const std::vector<uint8_t>& b, size_t i) {
  uint64_t bits = 0;
  std::memcpy(&bits, b.data() + i * size_of(t), size_of(t));
  return format::element_value(t, bits);
}

}  // namespace

FreezeCore::FreezeCore(FreezeOptions options) : impl_(std::make_unique<Impl>()) {
  impl_->options = std::move(options);
  impl_->id = g_next_function++;
  if (impl_->options.name.empty())
    impl_->options.name = "frozen function #" + std::to_string(impl_->id);
  impl_->verify_every = impl_->options.verify;
  if (!impl_->verify_every)
    impl_->verify_every = detail::freeze_verify_from_environment();
  impl_->replays_until_verify = impl_->verify_every;
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

const FreezeOptions& FreezeCore::options() const {
  return impl_->options;
}

size_t FreezeCore::n_recordings() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->n_recordings;
}

size_t FreezeCore::n_cached() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->n_cached;
}

size_t FreezeCore::n_replays() const {
  return impl_->n_replays.load();
}

void FreezeCore::clear() {
  std::lock_guard lock(impl_->mutex);
  for (auto& [h, list] : impl_->entries)
    for (auto& e : list)
      if (e->recording)
        throw FreezeError(impl_->prefix() + "clear() while a call is recording it");
  impl_->entries.clear();
  impl_->opaque.clear();
  impl_->epoch++;
  impl_->n_recordings = impl_->n_cached = 0;
  impl_->n_replays = 0;
  impl_->warned = false;
  impl_->loaded_from.clear();
  impl_->n_loaded_keys = 0;
}

Recording FreezeCore::recording(size_t i) const {
  std::lock_guard lock(impl_->mutex);
  std::vector<const Held*> all;
  for (auto& [h, list] : impl_->entries)
    for (auto& e : list)
      for (auto& held : e->held)
        all.push_back(held.get());
  std::sort(all.begin(), all.end(),
            [](const Held* a, const Held* b) { return a->created < b->created; });
  if (i >= all.size())
    throw Error(impl_->prefix() + "recording(" + std::to_string(i) + "): it holds " +
                std::to_string(all.size()) + " recording(s)");
  return all[i]->recording;
}

// ---------------------------------------------------------------------------------------------
// Keys

void FreezeCore::Impl::build_key(CallScratch& cs, bool borrow) {
  const std::vector<Handle>& leaves = cs.scan.leaves;
  size_t n = leaves.size();
  cs.key.clear();
  cs.key.push_back(flag(Flag::Debug) ? 1 : 0);
  cs.infos.resize(n);
  leaf_infos(leaves.data(), n, cs.infos.data());

  // Aliases: the first leaf holding the same variable. Arrays made one after another have
  // ascending handles: then there is none, and no search.
  cs.alias.assign(n, -1);
  bool ascending = true;
  for (size_t i = 1; i < n && ascending; ++i)
    ascending = leaves[i - 1] < leaves[i];
  if (!ascending && n <= 16) {
    for (size_t i = 0; i < n; ++i)
      for (size_t j = 0; j < i; ++j)
        if (leaves[j] == leaves[i]) {
          cs.alias[i] = static_cast<int32_t>(j);
          break;
        }
  } else if (!ascending) {
    auto& sorted = cs.sort_scratch;
    sorted.clear();
    for (size_t i = 0; i < n; ++i)
      sorted.push_back({leaves[i], static_cast<uint32_t>(i)});
    std::sort(sorted.begin(), sorted.end());
    for (size_t k = 1; k < sorted.size(); ++k)
      if (sorted[k].first == sorted[k - 1].first)
        cs.alias[sorted[k].second] = cs.alias[sorted[k - 1].second] >= 0
                                         ? cs.alias[sorted[k - 1].second]
                                         : static_cast<int32_t>(sorted[k - 1].second);
  }

  // Inputs first: their size groups (inputs sharing a size, numbered by first appearance) are
  // what a literal's size is described by.
  std::vector<uint64_t>& group_sizes = cs.group_sizes;
  group_sizes.clear();
  cs.group_input.clear();
  cs.drop_inputs();
  cs.borrowed = borrow;
  cs.input_group.assign(n, 0);
  for (size_t i = 0; i < n; ++i) {
    const LeafInfo& li = cs.infos[i];
    if (li.literal || cs.alias[i] >= 0)
      continue;
    // Size 1 is a size like any other here: a recording made with a size-1 input that
    // broadcast holds a guard for it, and one where it did not replays at any size.
    auto it = std::find(group_sizes.begin(), group_sizes.end(), li.size);
    cs.input_group[i] = static_cast<uint32_t>(it - group_sizes.begin());
    if (it == group_sizes.end()) {
      group_sizes.push_back(li.size);
      cs.group_input.push_back(static_cast<uint32_t>(cs.inputs.size()));
    }
    if (!borrow)
      inc_ref(leaves[i]);
    cs.inputs.push_back(AnyArray::steal(leaves[i], li.type));
  }

  // Per leaf: an input (its size group), an alias (of which leaf) or a literal: its bits and
  // its size class (literal_size_class), never its size alone, which a replay could not tell.
  for (size_t i = 0; i < n; ++i) {
    const LeafInfo& li = cs.infos[i];
    if (li.literal) {
      cs.key.push_back(2);
      cs.key.append(&li.bits, sizeof li.bits);
      SizeClass c = literal_size_class(li.size, group_sizes);
      cs.key.push_back(static_cast<uint8_t>(c.kind));
      if (c.kind == SizeClass::Group) {
        auto g = static_cast<uint32_t>(c.value);
        cs.key.append(&g, sizeof g);
      } else if (c.kind == SizeClass::Exact) {
        cs.key.append(&c.value, sizeof c.value);
      }
      continue;
    }
    if (int32_t alias = cs.alias[i]; alias >= 0) {
      cs.key.push_back(1);
      cs.key.append(&alias, sizeof alias);
      continue;
    }
    cs.key.push_back(0);
    cs.key.append(&cs.input_group[i], sizeof(uint32_t));
  }
}

Entry* FreezeCore::Impl::find(const Hash128& h, const std::vector<uint8_t>& key) {
  auto it = entries.find(h);
  if (it == entries.end())
    return nullptr;
  for (auto& e : it->second)
    if (e->key == key)
      return e.get();
  return nullptr;
}

// The leaves whose literal values differ from an entry that is otherwise the same call.
std::vector<uint32_t> FreezeCore::Impl::changed_literals(const CallScratch& cs,
                                                         uint64_t shape_hash) const {
  for (auto& [h, list] : entries)
    for (auto& e : list) {
      if (e->shape_hash != shape_hash || e->infos.size() != cs.infos.size())
        continue;
      std::vector<uint32_t> changed;
      bool same_otherwise = true;
      std::vector<uint64_t> then = group_sizes_of(e->infos);
      for (size_t i = 0; i < cs.infos.size() && same_otherwise; ++i) {
        const LeafInfo &a = e->infos[i], &b = cs.infos[i];
        if (a.literal != b.literal || a.type != b.type)
          same_otherwise = false;
        else if (a.literal && (a.bits != b.bits || literal_size_class(a.size, then) !=
                                                       literal_size_class(b.size, cs.group_sizes)))
          changed.push_back(static_cast<uint32_t>(i));
      }
      if (same_otherwise && !changed.empty())
        return changed;
    }
  return {};
}

CallDescription FreezeCore::Impl::describe(CallSite& site, const CallScratch& cs) const {
  PathVisitor p;
  site.describe_arguments(p);
  CallDescription d;
  d.structs = std::move(p.structs);
  std::vector<std::string>& leaf_path = d.leaf_paths;
  leaf_path.resize(cs.infos.size());
  for (const PathVisitor::Item& it : p.items)
    if (it.leaf >= 0 && static_cast<size_t>(it.leaf) < leaf_path.size())
      leaf_path[static_cast<size_t>(it.leaf)] = it.path;
  std::vector<KeyItem>& items = d.items;
  for (const PathVisitor::Item& it : p.items) {
    if (it.leaf < 0 || static_cast<size_t>(it.leaf) >= cs.infos.size()) {
      bool structural = it.what.rfind("size ", 0) == 0 || it.what.rfind("struct ", 0) == 0;
      items.push_back({it.path, structural ? "structure" : "value", it.what});
      continue;
    }
    auto leaf = static_cast<size_t>(it.leaf);
    const LeafInfo& li = cs.infos[leaf];
    items.push_back({it.path, "element type", it.what});
    if (li.literal) {
      SizeClass c = literal_size_class(li.size, cs.group_sizes);
      std::string size = c.kind == SizeClass::One ? "size 1"
                         : c.kind == SizeClass::Exact
                             ? std::to_string(c.value) + " elements"
                             : "the size of input group " + std::to_string(c.value);
      items.push_back({it.path, "literal",
                       "literal " + format::element_value(li.type, li.bits) + " of " + size});
      continue;
    }
    items.push_back({it.path, "literal", "not a literal"});
    items.push_back({it.path, "aliasing",
                     cs.alias[leaf] >= 0
                         ? "the same array as " + leaf_path[static_cast<size_t>(cs.alias[leaf])]
                         : "its own array"});
    if (cs.alias[leaf] >= 0)
      continue;
    std::string group = "a size of its own";
    for (size_t j = 0; j < leaf; ++j)
      if (!cs.infos[j].literal && cs.alias[j] < 0 && cs.infos[j].size == li.size) {
        group = "the size of " + leaf_path[j];
        break;
      }
    items.push_back({it.path, "size pattern", group});
  }
  return d;
}

void FreezeCore::Impl::warn_if_due(const Entry& fresh) {
  if (warned || n_recordings != options.warn_after + 1)
    return;
  warned = true;
  // The nearest earlier key: the fewest differing attributes.
  const Entry* nearest = nullptr;
  size_t best = SIZE_MAX;
  for (auto& [h, list] : entries)
    for (auto& e : list) {
      if (e.get() == &fresh)
        continue;
      size_t diff = e->description.size() == fresh.description.size() ? 0 : 1000;
      for (size_t i = 0; i < std::min(e->description.size(), fresh.description.size()); ++i)
        diff += e->description[i].value != fresh.description[i].value ||
                e->description[i].path != fresh.description[i].path;
      if (diff < best) {
        best = diff;
        nearest = e.get();
      }
    }
  // At most three paths, each once with everything that changed there.
  std::string what;
  if (nearest) {
    size_t shown = 0;
    std::string last_path;
    for (size_t i = 0; i < fresh.description.size(); ++i) {
      const KeyItem& now = fresh.description[i];
      if (i >= nearest->description.size() || nearest->description[i].path != now.path) {
        if (shown < 3)
          what += (shown++ ? "; " : "") + now.path + ": the argument structure changed";
        break;
      }
      const KeyItem& before = nearest->description[i];
      if (before.value == now.value)
        continue;
      std::string change = now.category + " (" + before.value + " -> " + now.value + ")";
      if (now.path == last_path) {
        what += ", " + change;
      } else if (shown < 3) {
        what += (shown++ ? "; " : "") + now.path + ": " + change;
        last_path = now.path;
      }
    }
  }
  if (fresh.held.size() > 1)
    what = "the same kind of arguments (a size guard failed: another path through the body)";
  else if (!nearest)
    what = "nothing (this is the first recording)";
  else if (what.empty())
    what = "the same arguments (a size guard failed: another path through the body)";
  logging::record().warn(
      "{}recorded {} times (warn_after = {}); what changed against the nearest earlier call: {}. "
      "Each new kind of call records anew: keep scalar arguments fixed, pass values that "
      "change as arrays, or raise warn_after",
      prefix(), n_recordings, options.warn_after, what);
}

// ---------------------------------------------------------------------------------------------
// Recording, replaying, verifying

namespace {

/// While a frozen call records: every literal argument's size comes from where its size class
/// says (its group's first input, else a plain constant), so the recording holds the literal's
/// size exactly as the key pins it, never the recorded size of an array outside it. Restored
/// afterwards (in reverse: a literal passed twice is rebound twice).
class LiteralSizes {
 public:
  explicit LiteralSizes(const CallScratch& cs) {
    const std::vector<Handle>& leaves = cs.scan.leaves;
    try {
      for (size_t i = 0; i < leaves.size(); ++i) {
        const LeafInfo& li = cs.infos[i];
        if (!li.literal)
          continue;
        SizeClass c = literal_size_class(li.size, cs.group_sizes);
        std::shared_ptr<Buffer> like;
        if (c.kind == SizeClass::Group)
          like = evaluated_buffer(cs.inputs[cs.group_input[c.value]].id());
        inc_ref(leaves[i]);  // the body may drop the caller's array: the variable stays ours
        rebound_.push_back({leaves[i], nullptr});
        rebound_.back().second = rebind_literal_size(leaves[i], like);
      }
    } catch (...) {
      restore();
      throw;
    }
  }

  ~LiteralSizes() { restore(); }

  LiteralSizes(const LiteralSizes&) = delete;
  LiteralSizes& operator=(const LiteralSizes&) = delete;

 private:
  void restore() noexcept {
    for (auto it = rebound_.rbegin(); it != rebound_.rend(); ++it) {
      restore_literal_size(it->first, std::move(it->second));
      dec_ref(it->first);
    }
    rebound_.clear();
  }

  std::vector<std::pair<Handle, SizeExprPtr>> rebound_;
};

}  // namespace

std::shared_ptr<Held> FreezeCore::Impl::record(CallSite& site, CallScratch& cs) {
  SinkVisitor sink;
  WrittenArgs written;
  Recording r;
  try {
    LiteralSizes literal_sizes(cs);
    site.snapshot_arguments();
    r = record_scope(
        cs.inputs,
        [&] {
          site.run();
          written = site.written_arguments();
          site.outputs(sink, written);
          return sink.arrays;
        },
        RecordOptions{options.optimize});
  } catch (const rec::Refusal& e) {
    // What the recorder refused, with the function's name; the body's own exceptions
    // (FreezeErrors from nested calls, f.clear() inside it, ...) pass through unchanged.
    throw FreezeError(prefix() + e.what() +
                      " (a frozen function takes every array it reads as an argument and "
                      "returns what it computes; read results after the call)");
  }
  auto held = std::make_shared<Held>();
  held->recording = r;
  held->out_shape = sink.shape.to_vector();
  held->written = std::move(written);
  held->tolerant = order_dependent(*recording_state(r)->data);
  held->context = prefix();
  held->fitted_types = site.types();  // the shape was taken from these very types
  return held;
}

bool FreezeCore::Impl::replay(CallSite& site, CallScratch& cs, const std::shared_ptr<Held>& held) {
  // Verify runs the body traced on copies of the arguments as they were before the replay;
  // never inside an outer recording, which would record it.
  bool check = verify_every && !recording_open() && --replays_until_verify == 0;
  if (check) {
    replays_until_verify = verify_every;
    site.keep_copies();
  }
  std::vector<AnyArray> outs;
  try {
    outs = held->recording.replay(cs.inputs);
  } catch (const GuardError& e) {
    if (check)
      replays_until_verify = 1;  // the next replay that fits is checked instead
    logging::record().debug("{}a recorded path does not fit: {}", prefix(), e.what());
    return false;
  } catch (const FreezeError& e) {  // the same error, naming the function (and the file)
    throw FreezeError(held->context + "replaying: " + e.what());
  } catch (const BackendError& e) {
    throw BackendError(held->context + "replaying: " + e.what());
  }
  RebuildVisitor rebuild(held->out_shape, outs, held->context);
  const void* types = site.types();
  bool fitted = held->fitted_types.load(std::memory_order_acquire) == types;
  site.rebuild(rebuild, held->written, /*staged=*/!fitted);
  rebuild.finish();
  if (!fitted)
    held->fitted_types.store(types, std::memory_order_release);
  ++n_replays;
  if (check)
    verify(site, *held);
  return true;
}

void FreezeCore::Impl::verify(CallSite& site, const Held& held) {
  SinkVisitor traced, replayed;
  site.run_on_copies(traced, held.written);
  site.outputs(replayed, held.written);
  PathVisitor paths;
  site.describe_outputs(paths, held.written);
  auto path_of = [&](size_t leaf) -> std::string {
    for (const PathVisitor::Item& it : paths.items)
      if (it.leaf == static_cast<int64_t>(leaf))
        return it.path;
    return "output " + std::to_string(leaf);
  };
  if (traced.shape != replayed.shape || traced.arrays.size() != replayed.arrays.size())
    throw FreezeError(prefix() +
                      "verify: the traced run's outputs have another structure or other "
                      "scalar values than the replay's (a scalar result or argument field "
                      "that depends on array contents cannot be frozen)");
  for (size_t k = 0; k < traced.arrays.size(); ++k) {
    ScalarType ta, tb;
    std::vector<uint8_t> a = read_bytes(replayed.arrays[k], &ta);
    std::vector<uint8_t> b = read_bytes(traced.arrays[k], &tb);
    if (ta != tb || a.size() != b.size())
      throw FreezeError(prefix() + "verify: output " + path_of(k) + " has " +
                        std::to_string(a.size() / size_of(ta)) + " " + to_string(ta) +
                        " elements after the replay, " + std::to_string(b.size() / size_of(tb)) +
                        " " + to_string(tb) + " when traced");
    int64_t i = first_difference(ta, a, b, held.tolerant && is_float(ta));
    if (i >= 0)
      throw FreezeError(prefix() + "verify: output " + path_of(k) + " differs at index " +
                        std::to_string(i) + ": the replay gave " +
                        element_string(ta, a, static_cast<size_t>(i)) + ", the traced run " +
                        element_string(ta, b, static_cast<size_t>(i)));
  }
}

void FreezeCore::Impl::evict_locked() {
  while (n_cached > options.limit) {
    Entry* victim_entry = nullptr;
    size_t victim = 0;
    uint64_t oldest = UINT64_MAX;
    for (auto& [h, list] : entries)
      for (auto& e : list)
        for (size_t i = 0; i < e->held.size(); ++i)
          if (e->held[i]->last_used < oldest) {
            oldest = e->held[i]->last_used;
            victim_entry = e.get();
            victim = i;
          }
    if (!victim_entry)
      return;
    victim_entry->held.erase(victim_entry->held.begin() + static_cast<ptrdiff_t>(victim));
    --n_cached;
    epoch++;
    if (victim_entry->held.empty() && !victim_entry->recording)
      erase_entry(victim_entry);
  }
}

Entry& FreezeCore::Impl::add_entry(const Hash128& h, std::vector<uint8_t> key, size_t shape_bytes,
                                   std::vector<LeafInfo> infos) {
  auto fresh = std::make_unique<Entry>();
  fresh->shape_hash = hash64(std::as_bytes(std::span(key.data(), shape_bytes)));
  fresh->key = std::move(key);
  fresh->shape_bytes = shape_bytes;
  fresh->infos = std::move(infos);
  Entry& e = *fresh;
  entries[h].push_back(std::move(fresh));
  return e;
}

void FreezeCore::Impl::hold(Entry& e, std::shared_ptr<Held> held) {
  held->created = ++seq;
  touch(*held);
  e.held.insert(e.held.begin(), std::move(held));
  ++n_cached;
  epoch++;
}

void FreezeCore::Impl::promote(Entry& e, const std::shared_ptr<Held>& held) {
  auto pos = std::find(e.held.begin(), e.held.end(), held);
  if (pos != e.held.end() && pos != e.held.begin()) {
    std::rotate(e.held.begin(), pos, pos + 1);
    epoch++;
  }
}

void FreezeCore::Impl::erase_entry(const Entry* e) {
  for (auto& [h, list] : entries)
    std::erase_if(list, [&](const std::unique_ptr<Entry>& x) { return x.get() == e; });
  std::erase_if(entries, [](const auto& kv) { return kv.second.empty(); });
  epoch++;
}

void FreezeCore::Impl::touch(Held& held) {
  uint64_t now = tick.load(std::memory_order_relaxed) + 1;
  tick.store(now, std::memory_order_relaxed);
  held.last_used.store(now, std::memory_order_relaxed);
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

bool FreezeCore::Impl::replay_last_hit(CallSite& site, CallScratch& cs, uint64_t* tried) {
  LastHit* hit = cs.find_last(id);
  uint64_t now = epoch.load(std::memory_order_acquire);
  if (!hit || hit->epoch != now || !(hit->shape == cs.scan.shape))
    return false;
  make_opaque_leaves(cs, hit->opaque);
  // Borrowed inputs: nothing runs the body on this path, so the caller's arguments hold
  // every input until the replay is done.
  build_key(cs, /*borrow=*/true);
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

void FreezeCore::Impl::full_key(CallScratch& cs) const {
  cs.full_key.assign(cs.scan.shape.begin(), cs.scan.shape.end());
  cs.full_key.insert(cs.full_key.end(), cs.key.begin(), cs.key.end());
}

void FreezeCore::Impl::remember(CallScratch& cs, const Entry& e,
                                const std::vector<uint32_t>& opaque_applied) {
  LastHit& hit = cs.slot_for(id);
  hit.epoch = epoch.load(std::memory_order_relaxed);
  hit.shape = cs.scan.shape;
  if (&opaque_applied != &hit.opaque)
    hit.opaque = opaque_applied;
  hit.key = cs.key;
  hit.held.assign(e.held.begin(), e.held.end());
}

void FreezeCore::call(CallSite& site) {
  Impl& m = *impl_;
  CallScratch& cs = t_scratch[t_depth];
  DepthScope depth;  // calls inside the body use the next scratch

  struct ReleaseInputs {  // the scratch keeps no caller's arrays alive after the call
    CallScratch& cs;

    ~ReleaseInputs() { cs.drop_inputs(); }
  } release{cs};

  ScanVisitor& scan = cs.scan;
  bool nested = recording_open();

  // Fast path: the same kind of call as this thread's last one of this function, with nothing
  // changed since (no lock, no hash). Nested calls take the full path (it decides between
  // replaying into the outer recording and tracing into it).
  uint64_t tried_epoch = 0;  // the epoch at which the fast path tried this key's recordings
  if (!nested && m.replay_last_hit(site, cs, &tried_epoch))
    return;

  uint64_t shape_hash = hash64(std::as_bytes(std::span(scan.shape.data(), scan.shape.size())));
  // Opaque leaves first, so the key sees buffers where it must.
  std::vector<uint32_t> ordinals;
  if (m.options.auto_opaque) {
    std::lock_guard lock(m.mutex);
    auto it = m.opaque.find(shape_hash);
    if (it != m.opaque.end())
      ordinals = it->second;
  }
  m.make_opaque_leaves(cs, ordinals);

  for (;;) {
    m.build_key(cs);
    m.full_key(cs);
    Hash128 h = hash128(std::as_bytes(std::span(cs.full_key)));
    std::unique_lock lock(m.mutex);
    Entry* e = m.find(h, cs.full_key);
    if (e && e->recording && (nested || e->held.empty())) {
      // Being recorded, further out on this thread (the body calls itself: traced into the
      // open recording) or by another thread: this call runs traced, as the traced program
      // would. Never a wait: the recording thread may be waiting for this very call (a body
      // that hands the same call to a worker and joins it), and a traced call is exactly as
      // correct as the replay it would have waited for.
      lock.unlock();
      site.run();
      return;
    }
    if (e) {
      // The fast path tried these already when it matched this key at this epoch.
      std::vector<std::shared_ptr<Held>> held;
      if (tried_epoch != m.epoch.load())
        held = e->held;
      lock.unlock();
      for (const auto& candidate : held)
        if (m.replay(site, cs, candidate)) {
          m.touch(*candidate);
          std::lock_guard relock(m.mutex);
          if (Entry* again = m.find(h, cs.full_key)) {
            m.promote(*again, candidate);
            if (!nested)
              m.remember(cs, *again, ordinals);
          }
          return;
        }
      if (nested) {
        site.run();
        return;
      }
      lock.lock();
      e = m.find(h, cs.full_key);
      if (e && e->recording) {  // another path of this key is being recorded (see above)
        lock.unlock();
        site.run();
        return;
      }
      if (!e) {
        lock.unlock();
        tried_epoch = 0;
        continue;
      }
    } else {
      if (nested) {  // traced into the outer recording, which sees every op
        lock.unlock();
        site.run();
        return;
      }
      if (m.options.auto_opaque) {
        std::vector<uint32_t> changed = m.changed_literals(cs, shape_hash);
        if (!changed.empty()) {
          auto& set = m.opaque[shape_hash];
          for (uint32_t i : changed)
            if (std::find(set.begin(), set.end(), i) == set.end())
              set.push_back(i);
          ordinals = set;
          m.epoch++;
          lock.unlock();
          PathVisitor p;
          site.describe_arguments(p);
          for (uint32_t i : changed) {
            std::string path = "argument array " + std::to_string(i);
            for (const PathVisitor::Item& it : p.items)
              if (it.leaf == static_cast<int64_t>(i))
                path = it.path;
            logging::record().info(
                "{}the literal {} changed between calls (now {}): it is made opaque (a buffer, "
                "passed to the kernels as an argument) from now on, and the function is "
                "recorded once more",
                m.prefix(), path, format::element_value(cs.infos[i].type, cs.infos[i].bits));
          }
          m.make_opaque_leaves(cs, changed);
          continue;  // key again with buffers there
        }
      }
      if (!m.loaded_from.empty())
        // Not an error: a call of another kind records for itself, as it would had nothing
        // been loaded (a generic callable may take other arguments than the saved calls).
        logging::record().info(
            "{}this call matched none of the {} key(s) loaded from '{}'; "
            "recording",
            m.prefix(), m.n_loaded_keys, m.loaded_from);
      e = &m.add_entry(h, cs.full_key, scan.shape.size(), cs.infos);
    }
    e->recording = true;
    lock.unlock();

    std::shared_ptr<Held> held;
    CallDescription description;
    try {
      description = m.describe(site, cs);  // the arguments as passed, before the body runs
      held = m.record(site, cs);
    } catch (...) {
      std::lock_guard relock(m.mutex);
      if ((e = m.find(h, cs.full_key))) {
        e->recording = false;
        if (e->held.empty())
          m.erase_entry(e);
      }
      throw;
    }
    std::lock_guard relock(m.mutex);
    e = m.find(h, cs.full_key);
    m.hold(*e, held);
    e->recording = false;
    if (e->description.empty()) {  // with the names f.save keeps
      e->description = std::move(description.items);
      e->leaf_paths = std::move(description.leaf_paths);
      m.struct_names.insert(description.structs.begin(), description.structs.end());
    }
    ++m.n_recordings;
    logging::record().debug("{}recorded {} ({} recording(s) held)", m.prefix(),
                            held->recording.summary(), m.n_cached);
    m.warn_if_due(*e);
    m.evict_locked();
    if ((e = m.find(h, cs.full_key)))
      m.remember(cs, *e, ordinals);
    return;
  }
}

}  // namespace ff::detail
