// The recording decorator.
//
// Theory of operation
// -------------------
// A RecordingBackend owns the backend below it and forwards every call. Work is recorded
// only while a *scope* is open on the calling thread (ff::record / ff::freeze open one), or
// for every thread when the backend was built for a whole-session capture ("record:llvm").
// Other threads' work passes through untouched, so replays of other recordings can run
// concurrently. With no scope open an override costs one thread-local read and a branch.
//
// Each scope keeps a SlotMap from live buffer pointers to *slots*. A slot is one buffer
// lifetime: inputs get slots when the scope opens; alloc() creates one; release() ends it,
// so a pointer the caching allocator hands out again becomes a new slot. A pointer into the
// middle of a live buffer is that slot plus a byte offset.
//
// Every override follows one template:
//   1. no scope open: forward and return;
//   2. validate against every open scope *before* forwarding and throw ff::FreezeError for
//      what cannot be replayed (a host read inside a recording, a buffer that is neither an
//      input nor created inside: an implicit input, a buffer read before anything wrote it),
//      so a refused op has no side effects;
//   3. forward to the inner backend;
//   4. append the op to each open scope. If the inner call threw, each scope is marked
//      failed (sticky) and the exception propagates unchanged; close_scope() on a failed
//      scope throws rather than return a partial recording.
//
// Sizes: alloc/launch receive provenance (backend/ir/size_expr.h) as postfix spans whose
// leaves name live buffers; those become expressions over slots (size_eval.h). An op that
// covers a whole buffer (copy, fill, reduce) records the slot's size instead of a constant.
// Leaves naming buffers outside the scope become constants: their sizes cannot change
// between replays. guard() records a size decision with its outcome and position.
//
// Example: record(x) { y = x * 2; eval(y); } with x of 1000 floats records
//   slot 0: input 0 (float32, 1000)
//   op 0: alloc   s1 float32 count=size(s0)
//   op 1: launch  k0 size=size(s0) args=[s0 (read), s1 (write)]
// and outputs = [s1]. Replaying with x' of 17 floats allocates 17 and launches 17 lanes.
//
// Nesting: scopes on one thread form a stack and each records every op (the outer scope
// sees what the inner one did, including replays), which is how frozen functions compose.
#include "recorder/recording_backend.h"

#include <algorithm>
#include <cstring>
#include <unordered_map>

#include "common/log.h"
#include "dist/mpi_world.h"
#include "freezeframe/errors.h"
#include "recorder/size_eval.h"
#include "recorder/slot_map.h"

namespace ff::rec {

struct Scope {
  RecordingBackend* owner = nullptr;
  Scope* parent = nullptr;  // the next outer scope open on this thread (any backend)
  bool capture = false;     // session capture: refuse nothing, adopt unknown buffers
  RecordingData data;
  SlotMap slots;
  std::unordered_map<Hash128, uint32_t> kernel_index;
  bool failed = false;
  ScopeCollectives collectives;  // ff::dist collectives so far (the ranks' agreements)
  std::string failure;

  uint32_t new_slot(ScalarType type, SlotOrigin origin, uint32_t origin_index, uint64_t size) {
    data.slots.push_back(Slot{type, origin, origin_index, size, kNone});
    return static_cast<uint32_t>(data.slots.size() - 1);
  }

  uint32_t op_index() const { return static_cast<uint32_t>(data.ops.size()); }

  void fail(const std::string& why) {
    if (!failed) {
      failed = true;
      failure = why;
    }
  }

  /// Resolves a buffer pointer; in capture mode unknown memory becomes an External slot.
  std::optional<SlotMap::Hit> resolve(const void* p, ScalarType type, uint64_t bytes_hint) {
    if (auto hit = slots.find(p))
      return hit;
    if (!capture)
      return std::nullopt;
    uint64_t elems = bytes_hint / size_of(type);
    uint32_t s = new_slot(type, SlotOrigin::External, kNone, elems);
    slots.insert(p, SlotMap::Live{s, bytes_hint, elems, true});
    return slots.find(p);
  }

  void access(uint32_t slot, bool write) { data.accesses.push_back(Access{slot, write}); }

  Op& push(Op op) {
    op.access_begin = op.access_end = static_cast<uint32_t>(data.accesses.size());
    data.ops.push_back(op);
    return data.ops.back();
  }

  void close_accesses() {
    data.ops.back().access_end = static_cast<uint32_t>(data.accesses.size());
  }

  /// Size of a whole-buffer op: the slot's size when `count` covers it from its start.
  uint32_t whole_or_const(const SlotMap::Hit& hit, uint64_t count) {
    if (hit.offset == 0 && count == hit.live->cur_size)
      return add_slot_size(data, hit.live->slot);
    return add_const(data, count);
  }

  uint32_t kernel(const KernelHandle& k) {
    auto [it, inserted] = kernel_index.try_emplace(k->hash(), 0);
    if (inserted) {
      it->second = static_cast<uint32_t>(data.kernels.size());
      data.kernels.push_back(k->ir_ptr());
    }
    return it->second;
  }
};

namespace {

// Innermost scope of this thread; a trivially-initialised pointer, so the no-scope check on
// every call is one TLS load.
thread_local Scope* t_innermost = nullptr;

/// Unlinks `scope` from this thread's list; false if it is not there.
bool unlink(Scope* scope) {
  for (Scope** p = &t_innermost; *p; p = &(*p)->parent)
    if (*p == scope) {
      *p = scope->parent;
      return true;
    }
  return false;
}

/// What a guard asserts, its sides in one order: a > b is b < a, a >= b is b <= a, the sides
/// of == and != ordered by compare_exprs, a false outcome as the opposite comparison.
struct Fact {
  SizeCmp cmp;
  uint32_t lhs, rhs;
};

Fact fact_of(const RecordingData& d, const Guard& g) {
  Fact f{g.cmp, g.lhs, g.rhs};
  if (!g.outcome) {  // "a < b is false" is the fact "a >= b", and so on
    static constexpr SizeCmp kOpposite[] = {SizeCmp::Ne, SizeCmp::Eq, SizeCmp::Ge,
                                            SizeCmp::Gt, SizeCmp::Le, SizeCmp::Lt};
    f.cmp = kOpposite[static_cast<int>(f.cmp)];
  }
  if (f.cmp == SizeCmp::Gt || f.cmp == SizeCmp::Ge) {
    f.cmp = f.cmp == SizeCmp::Gt ? SizeCmp::Lt : SizeCmp::Le;
    std::swap(f.lhs, f.rhs);
  } else if ((f.cmp == SizeCmp::Eq || f.cmp == SizeCmp::Ne) && compare_exprs(d, f.lhs, f.rhs) > 0) {
    std::swap(f.lhs, f.rhs);
  }
  return f;
}

bool same_fact(const RecordingData& d, const Fact& a, const Fact& b) {
  return a.cmp == b.cmp && compare_exprs(d, a.lhs, b.lhs) == 0 &&
         compare_exprs(d, a.rhs, b.rhs) == 0;
}

ScalarType type_of_width(uint32_t bytes) {
  return bytes == 8 ? ScalarType::UInt64 : bytes == 4 ? ScalarType::UInt32 : ScalarType::Bool;
}

}  // namespace

RecordingBackend::RecordingBackend(std::unique_ptr<Backend> inner, bool capture_session)
    : ForwardingBackend("record:", std::move(inner)) {
  if (capture_session) {
    capture_ = std::make_unique<Scope>();
    capture_->owner = this;
    capture_->capture = true;
    capture_->data.is_capture = true;
    capture_->data.backend = this->inner().name();
  }
}

RecordingBackend::~RecordingBackend() {
  // Scopes this thread left open must not point at a dead backend.
  for (Scope* s = t_innermost; s;) {
    Scope* next = s->parent;
    if (s->owner == this) {
      unlink(s);
      delete s;
    }
    s = next;
  }
}

bool RecordingBackend::active() const {
  if (capture_)
    return true;
  return scope_open();
}

bool RecordingBackend::scope_open() const {
  for (Scope* s = t_innermost; s; s = s->parent)
    if (s->owner == this)
      return true;
  return false;
}

const RecordingData* RecordingBackend::innermost() const {
  for (Scope* s = t_innermost; s; s = s->parent)
    if (s->owner == this)
      return &s->data;
  return nullptr;
}

template <class F>
void RecordingBackend::for_each_scope(F&& f) {
  for (Scope* s = t_innermost; s; s = s->parent)
    if (s->owner == this)
      f(*s);
  if (capture_) {
    std::lock_guard lock(capture_mutex_);
    f(*capture_);
  }
}

template <class F>
auto RecordingBackend::forward(const char* what, F&& call) {
  try {
    return call();
  } catch (const std::exception& e) {
    for_each_scope([&](Scope& s) { s.fail(std::string(what) + " failed: " + e.what()); });
    throw;
  }
}

Scope* RecordingBackend::open_scope(std::span<const InputBinding> inputs) {
  auto scope = std::make_unique<Scope>();
  scope->owner = this;
  scope->data.backend = inner().name();
  for (size_t k = 0; k < inputs.size(); ++k) {
    const InputBinding& in = inputs[k];
    // The same buffer passed twice is one slot bound to both inputs (aliasing).
    if (SlotMap::Live* live = scope->slots.find_base(in.ptr)) {
      scope->data.inputs.push_back(live->slot);
      continue;
    }
    uint32_t s = scope->new_slot(in.type, SlotOrigin::Input, static_cast<uint32_t>(k), in.size);
    scope->slots.insert(in.ptr, SlotMap::Live{s, in.size * size_of(in.type), in.size, true});
    scope->data.inputs.push_back(s);
  }
  scope->parent = t_innermost;
  t_innermost = scope.get();
  return scope.release();
}

void RecordingBackend::abort_scope(Scope* scope) noexcept {
  unlink(scope);
  delete scope;
}

ValidatedRecording RecordingBackend::close_scope(Scope* scope,
                                                 std::span<const void* const> outputs) {
  std::unique_ptr<Scope> owned(scope);
  if (!unlink(scope)) {
    (void)owned.release();  // not ours to delete
    throw Refusal("close_scope: the scope is not open on this thread");
  }
  if (scope->failed)
    throw Refusal("the recording failed and was discarded: " + scope->failure);
  for (size_t k = 0; k < outputs.size(); ++k) {
    SlotMap::Live* live = scope->slots.find_base(outputs[k]);
    if (!live)
      throw Refusal("output " + std::to_string(k) +
                    " is neither an input nor an array created inside the recording");
    scope->data.outputs.push_back(RecordingData::Output{live->slot});
  }
  // The recording's one validation (its kernels are known valid: the backend below compiled
  // them). A failure is not damaged input but a recording this scope cannot make (an output
  // allocated inside and never written, say): the caller's FreezeError (docs/errors.md).
  auto checked = ValidatedRecording::try_check(std::move(scope->data));
  if (const auto* issue = std::get_if<ValidationIssue>(&checked))
    throw Refusal("the recording cannot be made: " + issue->message());
  return std::get<ValidatedRecording>(std::move(checked));
}

ScopeCollectives RecordingBackend::collectives_of(const Scope* scope) const {
  return scope->collectives;
}

RecordingData RecordingBackend::capture_snapshot() const {
  if (!capture_)
    throw Error("ff::capture() needs a capturing backend stack, e.g. ff::init(\"record:llvm\")");
  std::lock_guard lock(capture_mutex_);
  return capture_->data;
}

// ---------------------------------------------------------------------------------------------
// Overrides

void* RecordingBackend::alloc(ScalarType type, size_t count, SizeProv prov) {
  if (!active())
    return inner().alloc(type, count, prov);
  void* p = inner().alloc(type, count, prov);
  for_each_scope([&](Scope& s) {
    uint32_t e = add_expr(s.data, prov, s.slots, count);
    uint32_t slot = s.new_slot(type, SlotOrigin::Alloc, s.op_index(), count);
    s.data.slots[slot].size_expr = e;
    s.slots.insert(p, SlotMap::Live{slot, count * size_of(type), count, false});
    Op op;
    op.code = OpCode::Alloc;
    op.type = type;
    op.dst = slot;
    op.size_expr = e;
    s.push(op);
    s.access(slot, true);
    s.close_accesses();
  });
  return p;
}

void RecordingBackend::release(void* ptr) noexcept {
  if (active()) {
    try {
      for_each_scope([&](Scope& s) {
        SlotMap::Live* live = s.slots.find_base(ptr);
        if (!live)
          return;  // allocated before the scope: not ours to record
        uint32_t slot = live->slot;
        s.slots.erase(ptr);
        if (s.data.slots[slot].origin == SlotOrigin::Input)
          return;
        Op op;
        op.code = OpCode::Release;
        op.dst = slot;
        s.push(op);
      });
    } catch (const std::exception& e) {
      for_each_scope([&](Scope& s) { s.fail(std::string("recording a release: ") + e.what()); });
    }
  }
  inner().release(ptr);
}

void RecordingBackend::copy(void* dst, const void* src, size_t bytes, CopyKind kind) {
  if (!active())
    return inner().copy(dst, src, bytes, kind);
  // Validate first: a refused copy must have no effect.
  for_each_scope([&](Scope& s) {
    if (s.capture)
      return;
    if (kind == CopyKind::DeviceToHost)
      throw Refusal(
          "reading array contents on the host (to_vector, a debug check, ...) "
          "inside a recording cannot be replayed; return the array instead and "
          "read it after the call");
    if (!s.slots.find(dst))
      throw Refusal(
          "a copy writes to a buffer that is neither an input nor created "
          "inside the recording");
    if (kind == CopyKind::DeviceToDevice) {
      auto hit = s.slots.find(src);
      if (!hit)
        throw Refusal(
            "a copy reads an array that is neither an input nor created inside "
            "the recording (an implicit input): pass it as an input");
      if (!hit->live->written)
        throw Refusal("a copy reads slot s" + std::to_string(hit->live->slot) +
                      " before anything wrote it");
    }
  });
  forward("copy", [&] { inner().copy(dst, src, bytes, kind); });
  for_each_scope([&](Scope& s) {
    Op op;
    op.code = OpCode::Copy;
    op.sub = static_cast<uint8_t>(kind);
    if (kind == CopyKind::HostToDevice) {
      auto d = s.resolve(dst, ScalarType::UInt32, bytes);
      op.dst = d->live->slot;
      op.dst_offset = d->offset;
      op.type = s.data.slots[op.dst].type;
      auto* b = static_cast<const std::byte*>(src);
      s.data.constants.emplace_back(b, b + bytes);
      op.constant = static_cast<uint32_t>(s.data.constants.size() - 1);
      op.size_expr = add_const(s.data, bytes);
      s.push(op);
      s.access(op.dst, true);
      d->live->written = true;
    } else if (kind == CopyKind::DeviceToHost) {  // capture only
      auto h = s.resolve(src, ScalarType::UInt32, bytes);
      op.src = h->live->slot;
      op.src_offset = h->offset;
      op.type = s.data.slots[op.src].type;
      op.size_expr = add_const(s.data, bytes);
      s.push(op);
      s.access(op.src, false);
    } else {
      auto h = s.resolve(src, ScalarType::UInt32, bytes);
      auto d = s.resolve(dst, ScalarType::UInt32, bytes);
      op.src = h->live->slot;
      op.src_offset = h->offset;
      op.dst = d->live->slot;
      op.dst_offset = d->offset;
      op.type = s.data.slots[op.src].type;
      uint64_t elem = size_of(op.type);
      if (h->offset == 0 && bytes == h->live->cur_size * elem)
        op.size_expr =
            add_binary(s.data, SizeOp::Mul, add_slot_size(s.data, op.src), add_const(s.data, elem));
      else
        op.size_expr = add_const(s.data, bytes);
      s.push(op);
      s.access(op.src, false);
      s.access(op.dst, true);
      d->live->written = true;
    }
    s.close_accesses();
  });
}

void RecordingBackend::fill(void* ptr, size_t count, uint32_t elem_size, uint64_t value) {
  if (!active())
    return inner().fill(ptr, count, elem_size, value);
  for_each_scope([&](Scope& s) {
    if (!s.capture && !s.slots.find(ptr))
      throw Refusal(
          "a fill writes to a buffer that is neither an input nor created inside "
          "the recording");
  });
  forward("fill", [&] { inner().fill(ptr, count, elem_size, value); });
  for_each_scope([&](Scope& s) {
    auto d = s.resolve(ptr, type_of_width(elem_size), count * elem_size);
    Op op;
    op.code = OpCode::Fill;
    op.dst = d->live->slot;
    op.dst_offset = d->offset;
    op.type = s.data.slots[op.dst].type;
    op.value = value;
    op.elem_size = elem_size;
    op.size_expr =
        size_of(op.type) == elem_size ? s.whole_or_const(*d, count) : add_const(s.data, count);
    s.push(op);
    s.access(op.dst, true);
    s.close_accesses();
    d->live->written = true;
  });
}

void RecordingBackend::launch(const KernelHandle& kernel, size_t size, SizeProv prov,
                              std::span<const KernelArg> args) {
  if (!active())
    return inner().launch(kernel, size, prov, args);
  const KernelIR& ir = kernel->ir();
  if (args.size() != ir.params.size())  // as the backend below would refuse it
    throw BackendError("launch: " + std::to_string(args.size()) + " arguments for a kernel with " +
                       std::to_string(ir.params.size()) + " parameters");
  for_each_scope([&](Scope& s) {
    if (s.capture)
      return;
    for (size_t i = 0; i < args.size(); ++i) {
      const IrParam& p = ir.params[i];
      if (p.kind == ParamKind::Scalar)
        continue;
      auto hit = s.slots.find(reinterpret_cast<const void*>(args[i].bits));
      if (!hit)
        throw Refusal(std::string("a kernel launched over ") + std::to_string(size) + " elements " +
                      (p.kind == ParamKind::BufferOut ? "writes" : "reads") + " a " +
                      to_string(p.type) + " array (its parameter " + std::to_string(i) +
                      ") that is neither an input of the recording nor created inside it (an "
                      "implicit input: an array the function captured or reads from outside): "
                      "pass that array as an argument");
      if (p.kind != ParamKind::BufferOut && !hit->live->written)
        throw Refusal(std::string("a kernel launched over ") + std::to_string(size) +
                      " elements reads slot s" + std::to_string(hit->live->slot) +
                      " before anything wrote it (its parameter " + std::to_string(i) + ")");
    }
  });
  forward("launch", [&] { inner().launch(kernel, size, prov, args); });
  for_each_scope([&](Scope& s) {
    Op op;
    op.code = OpCode::Launch;
    op.kernel = s.kernel(kernel);
    if (const RegionNames* names = current_region_names())
      add_region_names(s.data, op.kernel, *names);
    op.size_expr = add_expr(s.data, prov, s.slots, size);
    op.arg_begin = static_cast<uint32_t>(s.data.args.size());
    std::vector<std::pair<uint32_t, bool>> touched;
    for (size_t i = 0; i < args.size(); ++i) {
      const IrParam& p = ir.params[i];
      LaunchArg a;
      a.bits = args[i].bits;
      if (p.kind == ParamKind::Scalar) {
        if (!args[i].prov.empty())
          a.size_expr = add_expr(s.data, args[i].prov, s.slots, args[i].bits);
      } else {
        auto hit =
            s.resolve(reinterpret_cast<const void*>(args[i].bits), p.type, size * size_of(p.type));
        a.is_buffer = true;
        a.slot = hit->live->slot;
        a.offset = hit->offset;
        if (p.kind != ParamKind::BufferIn)
          hit->live->written = true;
        if (p.kind != ParamKind::BufferOut)
          touched.push_back({a.slot, false});
        if (p.kind != ParamKind::BufferIn)
          touched.push_back({a.slot, true});
      }
      s.data.args.push_back(a);
    }
    op.arg_end = static_cast<uint32_t>(s.data.args.size());
    s.push(op);
    for (auto [slot, write] : touched)
      s.access(slot, write);
    s.close_accesses();
  });
}

namespace {

/// Shared validation of whole-array ops (reduce, prefix_sum, compress).
/// The input of a whole-array op must be an array of the scope that something wrote.
void check_reads_array(Scope& s, const char* what, const void* in) {
  if (s.capture)
    return;
  auto hit = s.slots.find(in);
  if (!hit)
    throw Refusal(std::string(what) +
                  " reads an array that is neither an input nor "
                  "created inside the recording (an implicit input): pass it as an input");
  if (!hit->live->written)
    throw Refusal(std::string(what) + " reads slot s" + std::to_string(hit->live->slot) +
                  " before anything wrote it");
}

void check_whole_array_op(Scope& s, const char* what, const void* in, const void* out) {
  check_reads_array(s, what, in);
  if (!s.capture && !s.slots.find(out))
    throw Refusal(std::string(what) +
                  " writes to a buffer that is neither an input nor "
                  "created inside the recording");
}

}  // namespace

static auto record_whole_array_op(Scope& s, OpCode code, ScalarType type, const void* in,
                                  uint64_t count, void* out, uint64_t out_elems) {
  auto h = s.resolve(in, type, count * size_of(type));
  auto d = s.resolve(out, type, out_elems * size_of(type));
  Op op;
  op.code = code;
  op.type = type;
  op.src = h->live->slot;
  op.src_offset = h->offset;
  op.dst = d->live->slot;
  op.dst_offset = d->offset;
  op.size_expr = s.whole_or_const(*h, count);
  Op& pushed = s.push(op);
  s.access(op.src, false);
  s.access(op.dst, true);
  s.close_accesses();
  d->live->written = true;
  return std::pair{&pushed, d->live};
}

void RecordingBackend::reduce(ReduceOp rop, ScalarType type, const void* in, size_t count,
                              void* out) {
  if (!active())
    return inner().reduce(rop, type, in, count, out);
  for_each_scope([&](Scope& s) { check_whole_array_op(s, "reduce", in, out); });
  forward("reduce", [&] { inner().reduce(rop, type, in, count, out); });
  for_each_scope([&](Scope& s) {
    auto [op, live] = record_whole_array_op(s, OpCode::Reduce, type, in, count, out, 1);
    op->sub = static_cast<uint8_t>(rop);
    (void)live;
  });
}

void RecordingBackend::prefix_sum(ScalarType type, bool exclusive, const void* in, size_t count,
                                  void* out) {
  if (!active())
    return inner().prefix_sum(type, exclusive, in, count, out);
  for_each_scope([&](Scope& s) { check_whole_array_op(s, "prefix_sum", in, out); });
  forward("prefix_sum", [&] { inner().prefix_sum(type, exclusive, in, count, out); });
  for_each_scope([&](Scope& s) {
    auto [op, live] = record_whole_array_op(s, OpCode::PrefixSum, type, in, count, out, count);
    op->flag = exclusive ? 1 : 0;
    (void)live;
  });
}

size_t RecordingBackend::compress(const void* mask, size_t count, void* out) {
  if (!active())
    return inner().compress(mask, count, out);
  for_each_scope([&](Scope& s) { check_whole_array_op(s, "compress", mask, out); });
  size_t n = forward("compress", [&] { return inner().compress(mask, count, out); });
  for_each_scope([&](Scope& s) {
    auto h = s.resolve(mask, ScalarType::Bool, count);
    auto d = s.resolve(out, ScalarType::UInt32, count * 4);
    Op op;
    op.code = OpCode::Compress;
    op.type = ScalarType::Bool;
    op.src = h->live->slot;
    op.src_offset = h->offset;
    op.dst = d->live->slot;
    op.dst_offset = d->offset;
    op.size_expr = s.whole_or_const(*h, count);
    s.push(op);
    s.access(op.src, false);
    s.access(op.dst, true);
    s.close_accesses();
    // From here on the slot's logical size is the count, known only at replay.
    d->live->written = true;
    d->live->cur_size = n;
    s.data.slots[op.dst].recorded_size = n;
  });
  return n;
}

// The count exchange is part of the Collective op at replay (the replayer asks the backend for
// the count again), so collective_count records nothing. Only session captures refuse
// collectives: their replay would have no other ranks to talk to.
//
// Before each collective of a recording after its first, every rank agrees, as a replay of the
// recording does (replay/replayer.cpp): a rank that records the call while the others replay it
// makes the same exchanges in the same order. The outermost scope has seen every collective
// the inner ones have, so any scope past its first collective means the outermost is.
size_t RecordingBackend::collective_count(const dist_impl::Collective& c) {
  if (active()) {
    bool agree = false;
    for_each_scope([&](Scope& s) {
      if (s.capture) {
        s.fail(std::string("a session capture cannot hold ff::dist::") +
               dist_impl::to_string(c.kind));
        return;
      }
      // Refused here, before the agreement and the count exchange, not between them and the
      // data exchange: the other ranks then wait in the agreement, which the front end tells.
      check_reads_array(s, dist_impl::to_string(c.kind), c.in);
      agree = agree || s.collectives.count > 0;
    });
    for_each_scope([&](Scope& s) {
      if (!s.capture)
        s.collectives.inside = true;  // until collective() has run it
    });
    if (agree) {
      dist_impl::Agreement a = dist_impl::agree(dist_impl::Outcome::Recording);
      if (a.failed())
        throw dist_impl::EveryRankError(
            dist_impl::recorder_cannot_retry(a.failed_rank, "between two collectives"));
    }
  }
  return inner().collective_count(c);
}

void RecordingBackend::collective(const dist_impl::Collective& c) {
  if (!active())
    return inner().collective(c);
  const char* what = dist_impl::to_string(c.kind);
  size_t elem = size_of(c.type);
  for_each_scope([&](Scope& s) {
    if (s.capture)
      return;
    check_whole_array_op(s, what, c.in, c.out);
    auto d = s.slots.find(c.out);
    if (d->offset != 0 || s.data.slots[d->live->slot].origin != SlotOrigin::Alloc)
      throw Refusal(std::string("ff::dist::") + what +
                    " writes into part of an array or into an input (a recorder bug)");
  });
  forward(what, [&] { inner().collective(c); });
  for_each_scope([&](Scope& s) {
    if (s.capture)
      return;
    ScopeCollectives& sc = s.collectives;
    ++sc.count;
    sc.sizes = sc.sizes || exchanges_sizes(c.kind);
    sc.inside = false;
    auto h = s.resolve(c.in, c.type, c.count * elem);
    auto d = s.resolve(c.out, c.type, c.out_count * elem);
    Op op;
    op.code = OpCode::Collective;
    op.sub = static_cast<uint8_t>(c.kind);
    op.flag = c.kind == CollectiveKind::AllReduce ? static_cast<uint8_t>(c.op) : 0;
    op.type = c.type;
    op.src = h->live->slot;
    op.src_offset = h->offset;
    op.dst = d->live->slot;
    op.size_expr = s.whole_or_const(*h, c.count);
    CollectivePeers peers;
    peers.rank = c.rank;
    if (c.kind == CollectiveKind::Broadcast)
      peers.peer = c.root;
    if (c.kind == CollectiveKind::SendRecv) {  // as the program named them
      peers.peer = c.dest_spec.value;
      peers.peer_mode = c.dest_spec.mode;
      peers.source = c.source_spec.value;
      peers.source_mode = c.source_spec.mode;
      op.flag = peers.modes();
    }
    op.value = peers.pack();
    op.elem_size = static_cast<uint32_t>(c.ranks);
    s.push(op);
    s.access(op.src, false);
    s.access(op.dst, true);
    s.close_accesses();
    // From here on the slot's logical size is the result's count, known only at replay.
    d->live->written = true;
    d->live->cur_size = c.out_count;
    s.data.slots[op.dst].recorded_size = c.out_count;
  });
}

void RecordingBackend::sync() {
  inner().sync();
  if (!active())
    return;
  for_each_scope([&](Scope& s) {
    Op op;
    op.code = OpCode::Sync;
    s.push(op);
  });
}

std::string RecordingBackend::describe_buffer(const void* ptr) const {
  for (Scope* s = t_innermost; s; s = s->parent) {
    if (s->owner != this)
      continue;
    auto hit = s->slots.find(ptr);
    if (!hit)
      break;
    const Slot& slot = s->data.slots[hit->live->slot];
    std::string name = slot.origin == SlotOrigin::Input
                           ? "input " + std::to_string(slot.origin_index)
                           : "s" + std::to_string(hit->live->slot);
    if (hit->offset)
      name += " + " + std::to_string(hit->offset) + " bytes";
    return name;
  }
  return inner().describe_buffer(ptr);
}

void RecordingBackend::guard(const SizeGuard& g, bool outcome) {
  if (!active())
    return inner().guard(g, outcome);
  // A guard compares two real expressions; one that cannot be expressed would be a
  // meaningless check at replay, so it is refused here, where the decision was made.
  if (g.lhs.empty() || g.rhs.empty())
    throw Refusal(std::string("the size decision '") + (g.what ? g.what : "") +
                  "' has no expression on its " + (g.lhs.empty() ? "left" : "right") +
                  " side and cannot be checked at replay");
  inner().guard(g, outcome);
  for_each_scope([&](Scope& s) {
    Guard r;
    r.cmp = g.cmp;
    r.lhs = add_expr(s.data, g.lhs, s.slots, g.lhs_value);
    r.rhs = add_expr(s.data, g.rhs, s.slots, g.rhs_value);
    r.outcome = outcome;
    r.after_op = s.data.ops.empty() ? kNone : s.op_index() - 1;
    r.lhs_value = g.lhs_value;
    r.rhs_value = g.rhs_value;
    r.what = g.what ? g.what : "";
    if (g.subject)
      r.what.append(" ").append(g.subject);
    if (!s.capture) {
      // One guard per fact: a fact already checked is not checked again (slot sizes never
      // change once a slot exists), whichever way round its sides were written.
      Fact fact = fact_of(s.data, r);
      for (const Guard& earlier : s.data.guards)
        if (same_fact(s.data, fact_of(s.data, earlier), fact))
          return;  // its expression nodes stay unused: validation allows that
    }
    s.data.guards.push_back(std::move(r));
  });
}

}  // namespace ff::rec
