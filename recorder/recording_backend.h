// RecordingBackend ("record:"): a Backend that wraps another, forwards every call
// (ForwardingBackend), and while a recording scope is open on the calling thread appends what
// it saw to a Recording.
#pragma once

#include <memory>
#include <mutex>
#include <span>

#include "backend/forwarding_backend.h"
#include "freezeframe/errors.h"
#include "recorder/recording.h"

namespace ff::rec {

/// An operation a recording scope refuses (a host read, an implicit input, a size it cannot
/// express): a FreezeError the front ends tell apart from a body's own exceptions, which pass
/// through unchanged.
class Refusal : public FreezeError {
 public:
  using FreezeError::FreezeError;
};

struct Scope;

/// An input buffer bound to a recording scope.
struct InputBinding {
  const void* ptr;
  ScalarType type;
  uint64_t size;  // logical element count
};

/// The ff::dist collectives a scope has recorded, for the ranks' agreements (the recording
/// backend makes one before each collective after a scope's first; the front end one at the end
/// of an outermost scope that exchanged sizes, and one to report its failure).
struct ScopeCollectives {
  uint32_t count = 0;   // collectives run
  bool sizes = false;   // one of them exchanged sizes (exchanges_sizes())
  bool inside = false;  // a collective has begun (its count exchange) and not yet finished
};

class RecordingBackend final : public ForwardingBackend {
 public:
  /// `capture_session`: record everything every thread does (ff::init("record:llvm")).
  RecordingBackend(std::unique_ptr<Backend> inner, bool capture_session);
  ~RecordingBackend() override;

  /// Opens a scope on the calling thread. Scopes nest: every open scope on the thread records
  /// each op. Returns a token for close/abort.
  Scope* open_scope(std::span<const InputBinding> inputs);
  /// Closes the innermost scope (which must be `scope`) and returns what it recorded, with
  /// `outputs` (buffers live in the scope) as the outputs, validated (a recorder bug cannot
  /// reach a replay). Throws ff::FreezeError if an op inside was refused or failed, an output
  /// is not a buffer the scope knows, or the recording fails validation.
  ValidatedRecording close_scope(Scope* scope, std::span<const void* const> outputs);
  /// Drops the innermost scope (which must be `scope`) after an error. Never throws.
  void abort_scope(Scope* scope) noexcept;
  /// True while the calling thread has a scope open on this backend.
  bool scope_open() const;
  /// What `scope` (open on this thread) has recorded of ff::dist's collectives.
  ScopeCollectives collectives_of(const Scope* scope) const;
  /// The data recorded by the innermost scope of the calling thread (or null), for callers
  /// that must not replay a recording into itself.
  const RecordingData* innermost() const;

  /// Session capture: a copy of everything recorded so far.
  RecordingData capture_snapshot() const;

  bool is_capturing() const { return capture_ != nullptr; }

  void* alloc(ScalarType type, size_t count, SizeProv prov) override;
  void release(void* ptr) noexcept override;
  void copy(void* dst, const void* src, size_t bytes, CopyKind kind) override;
  void fill(void* ptr, size_t count, uint32_t elem_size, uint64_t value) override;

  bool recording_scope_open() const override {
    return scope_open() || inner().recording_scope_open();
  }

  void launch(const KernelHandle& kernel, size_t size, SizeProv prov,
              std::span<const KernelArg> args) override;
  void reduce(ReduceOp op, ScalarType type, const void* in, size_t count, void* out) override;
  void prefix_sum(ScalarType type, bool exclusive, const void* in, size_t count,
                  void* out) override;
  size_t compress(const void* mask, size_t count, void* out) override;
  size_t collective_count(const dist_impl::Collective& c) override;
  void collective(const dist_impl::Collective& c) override;
  void sync() override;

  std::string describe_buffer(const void* ptr) const override;

  void guard(const SizeGuard& guard, bool outcome) override;

  /// A batch passes through to the inner backend when nothing is recorded on this thread;
  /// otherwise it runs op by op through this recorder, which records each operation.
  size_t submit(const CommandList& list) override {
    return active() ? Backend::submit(list) : inner().submit(list);
  }

  bool prefers_command_lists() const override {
    return !active() && inner().prefers_command_lists();
  }

 private:
  template <class F>
  void for_each_scope(F&& f);
  /// Runs the inner call; if it throws, marks every open scope failed and rethrows.
  template <class F>
  auto forward(const char* what, F&& call);
  bool active() const;

  std::unique_ptr<Scope> capture_;  // session capture, shared by every thread
  mutable std::mutex capture_mutex_;
};

}  // namespace ff::rec
