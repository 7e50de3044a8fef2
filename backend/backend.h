// The Backend interface: the whole contract between the tracer and every backend.
//
// Every real backend (llvm, cuda) and every decorator (record, count) implements it. The
// operations are the unit of recording, so they are few and explicit; add one only with the
// checklist in STYLE.md. A backend never sees tracer variables: only pointers, sizes,
// kernels in the neutral IR, and size provenance (backend/ir/size_expr.h).
//
// Errors (docs/errors.md): a backend throws ff::BackendError when it cannot do what it was
// asked (allocate, compile valid IR, start, run an op with these arguments) and
// ff::FormatError for kernel IR that fails validation; the recording decorator adds
// ff::FreezeError for work that cannot be recorded.
//
// Thread safety: every method may be called concurrently from several threads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "backend/ir/kernel_ir.h"
#include "backend/ir/size_expr.h"
#include "backend/ir/types.h"
#include "dist/collective.h"
#include "freezeframe/reduce_op.h"

namespace ff {

/// Direction of a copy. Persisted: never renumber.
enum class CopyKind : uint8_t { HostToDevice = 0, DeviceToHost = 1, DeviceToDevice = 2 };
const char* to_string(CopyKind k);

/// Whether reduce() defines `op` over elements of `type`: Bool takes min/max/and/or (logical),
/// integers every op, floats add/mul/min/max.
constexpr bool reduce_defined(ReduceOp op, ScalarType type) {
  if (!is_valid(type) || static_cast<uint8_t>(op) > static_cast<uint8_t>(ReduceOp::Or))
    return false;
  if (type == ScalarType::Bool)
    return op != ReduceOp::Add && op != ReduceOp::Mul;
  if (is_float(type))
    return op != ReduceOp::And && op != ReduceOp::Or;
  return true;
}

/// Counters for tests and benchmarks. Not recorded.
struct BackendStats {
  uint64_t compiles = 0;         // kernels compiled (cache misses)
  uint64_t cache_hits = 0;       // compile() answered from the kernel cache
  uint64_t threads = 0;          // host threads launches may run on (0: not a host backend)
  uint64_t disk_cache_hits = 0;  // compile() answered from the on-disk kernel cache (no codegen)
  uint64_t launches = 0;         // kernel launches
  uint64_t reductions = 0;       // reduce + prefix_sum + compress calls
  uint64_t allocs = 0;           // alloc() calls
  uint64_t bytes_allocated = 0;  // bytes currently allocated (live buffers)
  uint64_t peak_bytes = 0;       // high-water mark of bytes_allocated since creation or reset
  uint64_t copies = 0;           // copy() calls
  uint64_t host_reads = 0;       // DeviceToHost copies (and compress counts read back)
  uint64_t generation = 0;       // kernel-cache generation, bumped by flush_kernels()
};

/// A compiled kernel. Reference-counted so a flush never pulls code from under a launch.
/// It keeps the IR it was compiled from, so a decorator (the recorder) can store a launched
/// kernel without copying IR on every compile.
class CompiledKernel {
 public:
  virtual ~CompiledKernel() = default;

  const Hash128& hash() const { return ir_->hash; }

  const KernelIR& ir() const { return *ir_; }

  const std::shared_ptr<const KernelIR>& ir_ptr() const { return ir_; }

 protected:
  explicit CompiledKernel(std::shared_ptr<const KernelIR> ir) : ir_(std::move(ir)) {}

 private:
  std::shared_ptr<const KernelIR> ir_;
};

using KernelHandle = std::shared_ptr<const CompiledKernel>;

struct CommandList;  // backend/command_list.h

/// One kernel argument: a buffer pointer or a scalar bit pattern, in parameter order. A
/// scalar that is a size (a gather's bound, a mean's count) carries its provenance.
struct KernelArg {
  uint64_t bits = 0;
  SizeProv prov = {};

  static KernelArg buffer(const void* p) { return {reinterpret_cast<uint64_t>(p), {}}; }
};

/// What a backend compiles for `ir` (a cache miss) and keeps in its CompiledKernel: an
/// immutable copy known valid. IR that is not ir.is_validated() is validated first
/// (ff::FormatError) and its hash checked against its contents (ff::BackendError, naming
/// `backend`): the one check of IR from outside, for every backend.
std::shared_ptr<const KernelIR> kernel_to_compile(const KernelIR& ir, const char* backend);

class Backend {
 public:
  Backend();
  virtual ~Backend() = default;
  Backend(const Backend&) = delete;
  Backend& operator=(const Backend&) = delete;

  /// This backend object's identity: unique for the life of the process, never reused (an
  /// address can be, after shutdown() and init()). Replay plans are keyed by it.
  uint64_t instance_id() const { return instance_id_; }

  /// The stack's spec, e.g. "llvm" or "record:llvm".
  virtual std::string name() const = 0;

  /// Memory for `count` elements of `type` (count may be 0; the result is then still a
  /// unique non-null pointer). `prov` says where `count` came from. Throws ff::BackendError.
  virtual void* alloc(ScalarType type, size_t count, SizeProv prov) = 0;
  /// Returns memory from alloc(). Never throws.
  virtual void release(void* ptr) noexcept = 0;

  /// Copies `bytes` bytes; host pointers are plain process memory.
  virtual void copy(void* dst, const void* src, size_t bytes, CopyKind kind) = 0;
  /// Fills `count` elements of `elem_size` (1, 2, 4 or 8) bytes with the low bytes of `value`.
  virtual void fill(void* ptr, size_t count, uint32_t elem_size, uint64_t value) = 0;

  /// Compiles (or finds in the cache, keyed by ir.hash) a kernel. Throws ff::FormatError for
  /// IR that fails KernelIR::validate() (malformed input), ff::BackendError when the backend
  /// cannot compile valid IR (or `ir` has no hash, or one that does not match its contents).
  /// IR that is ir.is_validated() (loaded or vouched for, backend/ir/kernel_ir.h) is not
  /// checked again; any other is, before it is compiled (kernel_to_compile()).
  virtual KernelHandle compile(const KernelIR& ir) = 0;
  /// Drops the kernel cache and bumps the generation; handles held elsewhere stay valid.
  virtual void flush_kernels() = 0;
  virtual BackendStats stats() const = 0;
  /// The kernel-cache generation: bumped by every flush_kernels(), so a holder of compiled
  /// handles (a replay plan) knows when to look them up again. Decorators forward it.
  virtual uint64_t kernel_generation() const = 0;
  /// Resets peak_bytes to the current bytes_allocated (for measuring one stretch of work).
  virtual void reset_peak() = 0;

  /// Runs `kernel` for indices [0, size). `args` follow the kernel's parameter order. Throws
  /// ff::BackendError for a kernel of another backend or an argument count that differs from
  /// the kernel's parameters (the backend cannot run it).
  virtual void launch(const KernelHandle& kernel, size_t size, SizeProv prov,
                      std::span<const KernelArg> args) = 0;

  /// out[0] = op over in[0, count) (identity when count == 0).
  virtual void reduce(ReduceOp op, ScalarType type, const void* in, size_t count, void* out) = 0;
  /// Inclusive or exclusive running sum of in[0, count) into out[0, count).
  virtual void prefix_sum(ScalarType type, bool exclusive, const void* in, size_t count,
                          void* out) = 0;
  /// Writes the indices (UInt32) of the true entries of the Bool array mask[0, count) to out
  /// (capacity count), in order, and returns how many (a sync point).
  virtual size_t compress(const void* mask, size_t count, void* out) = 0;

  /// The collectives of ff::dist (dist/collective.h): the result count of `c` (exchanging
  /// counts with the other ranks where the kind needs it), then the collective itself on this
  /// backend's buffers c.in and c.out. Both run after the work queued before them. The
  /// defaults stage through host memory with copy() and call dist/; a backend whose buffers
  /// are host memory passes them to MPI directly. Throw ff::BackendError naming the
  /// collective on an MPI error.
  virtual size_t collective_count(const dist_impl::Collective& c);
  virtual void collective(const dist_impl::Collective& c);

  /// Waits until all queued work has finished.
  virtual void sync() = 0;

  /// Finishes the background work in flight (JIT warm-up, tier-up compiles) and starts no
  /// more. Called when the main thread exits, before static destructors run: LLVM's own
  /// function-local statics die then, and a compile still running would use them.
  virtual void stop_background_work() noexcept {}

  /// Names a buffer in messages: its address by default; the recorder says which input or
  /// slot it is ("input 0", "s3").
  virtual std::string describe_buffer(const void* ptr) const;
  /// The default description: the address (what callers replace with something readable).
  static std::string address_of(const void* ptr);

  /// True while the calling thread has a recording scope open in this stack (the recorder
  /// answers; other decorators forward; real backends say false). The one owner of "a
  /// recording is open": the tracer asks here instead of keeping a counter of its own.
  virtual bool recording_scope_open() const { return false; }

  /// A size decision made by the tracer or user code. Real backends ignore it; the
  /// recorder keeps it and checks it at replay.
  virtual void guard(const SizeGuard& guard, bool outcome) = 0;

  /// Runs a batch of operations (backend/command_list.h) in order, with the effect of calling
  /// each one on its own, which is what this default does. Returns the count of the last
  /// command when it is a Compress, else 0. Throws what the operations throw (the batch may
  /// then have run in part); the buffers of its Release commands are released whether it
  /// returns or throws. The replayer hands its work over this way when
  /// prefers_command_lists() says so; a backend with CUDA graphs runs a batch as one graph.
  virtual size_t submit(const CommandList& list);

  /// True when submit() is cheaper than the same operations one by one. Decorators forward
  /// it; the recorder says false while a scope of its own is open (it records single ops).
  virtual bool prefers_command_lists() const { return false; }

 private:
  uint64_t instance_id_;
};

}  // namespace ff
