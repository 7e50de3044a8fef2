// Replay executors: how the ops a replay describes reach the backend.
//
// The replay walker (replayer.cpp) describes each op once, with this replay's pointers and
// sizes, and hands it to an executor through the calls below, which mirror the Backend
// operations. The executor is the walker's template parameter: nothing per op asks which
// executor runs, and the direct path is the backend's own virtual calls and nothing more.
//
//   Direct       op by op (the fast path: no observer, no provenance, no batching);
//   Nested       op by op with size provenance and guards passed down (replaying into an open
//                recording scope, so the outer recording learns exact sizes);
//   Batching     device work gathered into a CommandList and handed to Backend::submit where
//                the host needs a result and at the end (CUDA graphs);
//   Observed<E>  a decorator over E that tells an OpObserver before and after each op.
//
// What an executor provides:
//   kProvenance      the walker passes size provenance to alloc/launch and calls guard()
//   kReusesBuffers   an alloc may take over the buffer of a slot that ends there (the
//                    optimiser's reuse-buffers); else the backend sees a release and an alloc
//   begin_op(i), end_op(i, slot sizes)          op boundaries (observers)
//   alloc, release, copy, fill, launch, reduce, prefix_sum, compress, collective_count,
//   collective, sync, guard: the op
//   finish()         hands over work still held (the end of a replay)
//   flush()          runs work still held before the host talks to other ranks (agreements)
//   abandon()        drops work still held after an error; buffers it was to release go back
#pragma once

#include <cstdint>
#include <span>

#include "backend/backend.h"
#include "backend/command_list.h"
#include "replay/replayer.h"

namespace ff::replay {

/// Op by op on the backend; with `Provenance`, sizes carry their provenance and guards go down.
template <bool Provenance>
class OpByOp {
 public:
  static constexpr bool kProvenance = Provenance;
  static constexpr bool kReusesBuffers = !Provenance;

  explicit OpByOp(Backend& backend) : backend_(backend) {}

  void begin_op(size_t) {}

  void end_op(size_t, std::span<const uint64_t>) {}

  void* alloc(ScalarType type, uint64_t n, SizeProv prov) { return backend_.alloc(type, n, prov); }

  void release(void* ptr) noexcept { backend_.release(ptr); }

  void copy(void* dst, const void* src, uint64_t bytes, CopyKind kind) {
    backend_.copy(dst, src, bytes, kind);
  }

  void fill(void* dst, uint64_t n, uint32_t elem_size, uint64_t value) {
    backend_.fill(dst, n, elem_size, value);
  }

  void launch(const KernelHandle& kernel, uint64_t n, SizeProv prov,
              std::span<const KernelArg> args) {
    backend_.launch(kernel, n, prov, args);
  }

  void reduce(ReduceOp op, ScalarType type, const void* in, uint64_t n, void* out) {
    backend_.reduce(op, type, in, n, out);
  }

  void prefix_sum(ScalarType type, bool exclusive, const void* in, uint64_t n, void* out) {
    backend_.prefix_sum(type, exclusive, in, n, out);
  }

  uint64_t compress(const void* mask, uint64_t n, void* out) {
    return backend_.compress(mask, n, out);
  }

  uint64_t collective_count(const dist_impl::Collective& c) { return backend_.collective_count(c); }

  void collective(const dist_impl::Collective& c) { backend_.collective(c); }

  void sync() { backend_.sync(); }

  void guard(const SizeGuard& g, bool outcome) { backend_.guard(g, outcome); }

  void finish() {}

  /// Runs the work queued so far (a batching executor's): nothing is queued here.
  void flush() {}

  void abandon() noexcept {}

 private:
  Backend& backend_;
};

using Direct = OpByOp<false>;
using Nested = OpByOp<true>;

/// Device work goes into a CommandList and reaches the backend in one Backend::submit() at the
/// points where the host needs a result (a compress count, a sync, a copy to or from host
/// memory) and at the end. A list has the same key at the same place of the same plan every
/// replay, so a backend can recognise it (a CUDA graph built once, re-bound later).
/// Allocations are not work in a list: they happen at once.
class Batching {
 public:
  static constexpr bool kProvenance = false;
  static constexpr bool kReusesBuffers = false;

  /// `list` is empty and stays the caller's (per-thread scratch); `plan_id` names the plan.
  Batching(Backend& backend, CommandList& list, uint64_t plan_id)
      : backend_(backend), list_(list), plan_id_(plan_id) {}

  void begin_op(size_t) {}

  void end_op(size_t, std::span<const uint64_t>) {}

  void* alloc(ScalarType type, uint64_t n, SizeProv) { return backend_.alloc(type, n, {}); }

  /// After the work before it.
  void release(void* ptr) { add(CommandKind::Release).dst = ptr; }

  void copy(void* dst, const void* src, uint64_t bytes, CopyKind kind) {
    if (kind != CopyKind::DeviceToDevice) {  // host memory: not part of a batch
      flush();
      backend_.copy(dst, src, bytes, kind);
      return;
    }
    Command& c = add(CommandKind::Copy);
    c.copy_kind = kind;
    c.dst = dst;
    c.src = src;
    c.size = bytes;
  }

  void fill(void* dst, uint64_t n, uint32_t elem_size, uint64_t value) {
    Command& c = add(CommandKind::Fill);
    c.dst = dst;
    c.size = n;
    c.elem_size = elem_size;
    c.value = value;
  }

  void launch(const KernelHandle& kernel, uint64_t n, SizeProv, std::span<const KernelArg> args) {
    Command& c = add(CommandKind::Launch);
    c.kernel = &kernel;
    c.size = n;
    c.args_begin = static_cast<uint32_t>(list_.args.size());
    c.n_args = static_cast<uint32_t>(args.size());
    list_.args.insert(list_.args.end(), args.begin(), args.end());
  }

  void reduce(ReduceOp op, ScalarType type, const void* in, uint64_t n, void* out) {
    Command& c = add(CommandKind::Reduce);
    c.reduce_op = op;
    c.type = type;
    c.src = in;
    c.size = n;
    c.dst = out;
  }

  void prefix_sum(ScalarType type, bool exclusive, const void* in, uint64_t n, void* out) {
    Command& c = add(CommandKind::PrefixSum);
    c.type = type;
    c.exclusive = exclusive;
    c.src = in;
    c.size = n;
    c.dst = out;
  }

  /// The count ends the batch.
  uint64_t compress(const void* mask, uint64_t n, void* out) {
    Command& c = add(CommandKind::Compress);
    c.src = mask;
    c.size = n;
    c.dst = out;
    return flush();
  }

  /// A collective talks to other processes from the host: the work before it runs first.
  uint64_t collective_count(const dist_impl::Collective& c) {
    flush();
    return backend_.collective_count(c);
  }

  void collective(const dist_impl::Collective& c) {
    flush();
    backend_.collective(c);
  }

  void sync() {
    flush();
    backend_.sync();
  }

  void guard(const SizeGuard&, bool) {}

  void finish() { flush(); }

  /// Hands the work queued so far to the backend (also before the walker's agreements: an
  /// error in it is then this rank's own, raised before the exchange). Returns the list's
  /// compress count.
  size_t flush() {
    if (list_.empty())
      return 0;
    list_.key = (plan_id_ * 0x9E3779B97F4A7C15ull) ^ (++segment_);
    size_t count;
    try {
      count = backend_.submit(list_);
    } catch (...) {
      list_.clear();  // submit disposed of the list's releases either way
      throw;
    }
    list_.clear();
    return count;
  }

  /// A batch abandoned by an error never runs: its buffers go back at once.
  void abandon() noexcept {
    for (const Command& c : list_.commands)
      if (c.kind == CommandKind::Release)
        backend_.release(c.dst);
    list_.clear();
  }

 private:
  Command& add(CommandKind kind) {
    Command& c = list_.commands.emplace_back();
    c.kind = kind;
    return c;
  }

  Backend& backend_;
  CommandList& list_;
  uint64_t plan_id_;
  uint64_t segment_ = 0;
};

/// Tells `observer` before and after each op that `Inner` runs (recorder-replay's per-op
/// timings and Chrome trace). Over Direct or Nested it sees each op run; over Batching it
/// would see the op queued, not run, so a replay with an observer runs op by op.
template <class Inner>
class Observed : public Inner {
 public:
  Observed(Inner inner, OpObserver& observer) : Inner(inner), observer_(observer) {}

  void begin_op(size_t op) {
    observer_.before_op(op);
    Inner::begin_op(op);
  }

  void end_op(size_t op, std::span<const uint64_t> slot_sizes) {
    Inner::end_op(op, slot_sizes);
    observer_.after_op(op, slot_sizes);
  }

 private:
  OpObserver& observer_;
};

}  // namespace ff::replay
