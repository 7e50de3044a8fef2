// Pointer -> slot for the buffers live inside a recording: one slot per buffer lifetime, and
// pointers into the middle of a buffer resolve to that slot plus a byte offset.
#pragma once

#include <cstdint>
#include <map>
#include <optional>

namespace ff::rec {

class SlotMap {
 public:
  struct Live {
    uint32_t slot;
    uint64_t capacity_bytes;  // bytes addressable from the base
    uint64_t cur_size;        // logical element count now (a compress result: its count)
    bool written;             // holds defined data (inputs, or after a write)
  };

  struct Hit {
    Live* live;
    uint64_t offset;  // bytes from the base
  };

  void insert(const void* base, Live live) { map_[key(base)] = live; }

  /// The slot whose buffer starts exactly at `p`.
  Live* find_base(const void* p) {
    auto it = map_.find(key(p));
    return it == map_.end() ? nullptr : &it->second;
  }

  /// The slot whose buffer contains `p` (a base, or a pointer into its bytes).
  std::optional<Hit> find(const void* p) {
    auto it = map_.upper_bound(key(p));
    if (it == map_.begin())
      return std::nullopt;
    --it;
    uint64_t offset = key(p) - it->first;
    if (offset != 0 && offset >= it->second.capacity_bytes)
      return std::nullopt;
    return Hit{&it->second, offset};
  }

  void erase(const void* base) { map_.erase(key(base)); }

  void clear() { map_.clear(); }

  size_t size() const { return map_.size(); }

 private:
  static uintptr_t key(const void* p) { return reinterpret_cast<uintptr_t>(p); }

  std::map<uintptr_t, Live> map_;
};

}  // namespace ff::rec
