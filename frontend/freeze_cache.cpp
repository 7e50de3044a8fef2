// The recording cache behind ff::freeze: its bookkeeping (entries, recordings, LRU, opaque
// sets, this thread's last hits) and the accessors of FreezeCore. See freeze_cache.h.
#include "frontend/freeze_cache.h"

#include <algorithm>

#include "common/log.h"

namespace ff::detail {

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

Entry* FreezeCore::Impl::find(const Hash128& h, const std::vector<uint8_t>& key) {
  auto it = entries.find(h);
  if (it == entries.end())
    return nullptr;
  for (auto& e : it->second)
    if (e->key == key)
      return e.get();
  return nullptr;
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

std::vector<uint32_t> FreezeCore::Impl::changed_literals(const CallScratch& cs,
                                                         uint64_t shape_hash) const {
  std::vector<uint32_t> changed;
  for (auto& [h, list] : entries)
    for (auto& e : list)
      if (e->shape_hash == shape_hash && only_literals_differ(e->infos, cs, changed))
        return changed;
  return {};
}

std::vector<uint32_t> FreezeCore::Impl::add_opaque(uint64_t shape_hash,
                                                   const std::vector<uint32_t>& changed) {
  auto& set = opaque[shape_hash];
  for (uint32_t i : changed)
    if (std::find(set.begin(), set.end(), i) == set.end())
      set.push_back(i);
  epoch++;
  return set;
}

void FreezeCore::Impl::keep(CallScratch& cs, const SlowCall& c, std::shared_ptr<Held> held,
                            CallDescription description) {
  Entry* e = find(c.hash, cs.full_key);
  hold(*e, held);
  e->recording = false;
  if (e->description.empty()) {  // with the names f.save keeps
    e->description = std::move(description.items);
    e->leaf_paths = std::move(description.leaf_paths);
    struct_names.insert(description.structs.begin(), description.structs.end());
  }
  ++n_recordings;
  logging::record().debug("{}recorded {} ({} recording(s) held)", prefix(),
                          held->recording.summary(), n_cached);
  warn_if_due(*e);
  evict_locked();
  if ((e = find(c.hash, cs.full_key)))
    remember(cs, *e, c.opaque);
}

void FreezeCore::Impl::abandon(const SlowCall& c, const std::vector<uint8_t>& key) {
  if (Entry* e = find(c.hash, key)) {
    e->recording = false;
    if (e->held.empty())
      erase_entry(e);
  }
}

namespace {

using EntryMap = std::unordered_map<Hash128, std::vector<std::unique_ptr<Entry>>>;

/// The entry other than `fresh` whose key differs from it in the fewest attributes.
const Entry* nearest_earlier(const EntryMap& entries, const Entry& fresh) {
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
  return nearest;
}

/// What changed from `before` to `now`: at most three paths, each once with everything that
/// changed there.
std::string what_changed(const Entry& before, const Entry& now) {
  std::string what;
  size_t shown = 0;
  std::string last_path;
  for (size_t i = 0; i < now.description.size(); ++i) {
    const KeyItem& item = now.description[i];
    if (i >= before.description.size() || before.description[i].path != item.path) {
      if (shown < 3)
        what += (shown++ ? "; " : "") + item.path + ": the argument structure changed";
      break;
    }
    const KeyItem& then = before.description[i];
    if (then.value == item.value)
      continue;
    std::string change = item.category + " (" + then.value + " -> " + item.value + ")";
    if (item.path == last_path) {
      what += ", " + change;
    } else if (shown < 3) {
      what += (shown++ ? "; " : "") + item.path + ": " + change;
      last_path = item.path;
    }
  }
  return what;
}

}  // namespace

void FreezeCore::Impl::warn_if_due(const Entry& fresh) {
  if (warned || n_recordings != options.warn_after + 1)
    return;
  warned = true;
  const Entry* nearest = nearest_earlier(entries, fresh);
  std::string what = nearest ? what_changed(*nearest, fresh) : "";
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

}  // namespace ff::detail
