// The "llvm" Backend: host memory from a caching allocator, kernels compiled by LlvmJit and
// cached by IR hash, launches split over a thread pool (small ones run on the caller), and
// native reduce / prefix_sum / compress. Launches are synchronous, so sync() has nothing to do.
#include "backend/llvm/llvm_backend.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "backend/llvm/host_algorithms.h"
#include "backend/llvm/host_allocator.h"
#include "backend/llvm/llvm_jit.h"
#include "backend/llvm/thread_pool.h"
#include "common/log.h"
#include "freezeframe/errors.h"

namespace ff {
namespace llvm_backend {
namespace {

// Launches below this many elements run on the calling thread: handing work to the pool costs
// about a microsecond, which these finish in.
constexpr size_t kParallelMinElems = 32768;
constexpr size_t kMinBlockElems = 16384;
constexpr size_t kStackArgs = 64;

class LlvmKernel final : public CompiledKernel {
 public:
  LlvmKernel(std::shared_ptr<const KernelIR> ir, std::unique_ptr<JitCode> code)
      : CompiledKernel(std::move(ir)),
        entry_(code->entry()),
        n_params_(this->ir().params.size()),
        code_(std::move(code)) {}

  KernelFn entry() const { return entry_; }
  size_t n_params() const { return n_params_; }

 private:
  KernelFn entry_;
  size_t n_params_;
  std::unique_ptr<JitCode> code_;  // owns the machine code; freed with the last handle
};

struct LaunchCtx {
  KernelFn fn;
  const uint64_t* args;
  size_t size, block;
};

void bump(std::atomic<uint64_t>& counter) { counter.fetch_add(1, std::memory_order_relaxed); }

class LlvmBackend final : public Backend {
 public:
  explicit LlvmBackend(const BackendOptions& options) : pool_(options.n_threads) {
    ff::logging::llvm().info("llvm backend: {} threads", pool_.n_threads());
  }

  ~LlvmBackend() override {
    if (uint64_t live = alloc_.bytes_allocated())
      ff::logging::llvm().debug("llvm backend destroyed with {} bytes still allocated", live);
  }

  std::string name() const override { return "llvm"; }

  void* alloc(ScalarType type, size_t count, SizeProv) override {
    if (!is_valid(type))
      throw BackendError("llvm backend: alloc of an invalid element type");
    size_t elem = size_of(type);
    if (count > (size_t{1} << 60) / elem)
      throw BackendError("llvm backend: alloc of " + std::to_string(count) + " " +
                         to_string(type) + " elements is too large");
    bump(allocs_);
    return alloc_.alloc(count * elem);
  }

  void release(void* ptr) noexcept override { alloc_.release(ptr); }

  void copy(void* dst, const void* src, size_t bytes, CopyKind kind) override {
    if (bytes && (!dst || !src))
      throw BackendError("llvm backend: copy of " + std::to_string(bytes) +
                         " bytes with a null pointer");
    bump(copies_);
    if (kind == CopyKind::DeviceToHost)
      bump(host_reads_);
    host_copy(pool_, dst, src, bytes);
  }

  void fill(void* ptr, size_t count, uint32_t elem_size, uint64_t value) override {
    if (count && !ptr)
      throw BackendError("llvm backend: fill of a null pointer");
    host_fill(pool_, ptr, count, elem_size, value);
  }

  KernelHandle compile(const KernelIR& ir) override;
  void flush_kernels() override;
  BackendStats stats() const override;
  void reset_peak() override { alloc_.reset_peak(); }
  void launch(const KernelHandle& kernel, size_t size, SizeProv prov,
              std::span<const KernelArg> args) override;

  void reduce(ReduceOp op, ScalarType type, const void* in, size_t count, void* out) override {
    if (!out || (count && !in))
      throw BackendError("llvm backend: reduce with a null pointer");
    bump(reductions_);
    host_reduce(pool_, op, type, in, count, out);
  }

  void prefix_sum(ScalarType type, bool exclusive, const void* in, size_t count,
                  void* out) override {
    if (count && (!in || !out))
      throw BackendError("llvm backend: prefix_sum with a null pointer");
    bump(reductions_);
    host_prefix_sum(pool_, type, exclusive, in, count, out);
  }

  size_t compress(const void* mask, size_t count, void* out) override {
    if (count && (!mask || !out))
      throw BackendError("llvm backend: compress with a null pointer");
    bump(reductions_);
    bump(host_reads_);  // the count comes back to the host
    return host_compress(pool_, static_cast<const uint8_t*>(mask), count,
                         static_cast<uint32_t*>(out));
  }

  void sync() override {}
  void guard(const SizeGuard&, bool) override {}

 private:
  LlvmJit& jit();

  ThreadPool pool_;
  HostAllocator alloc_;

  mutable std::shared_mutex cache_mutex_;
  std::unordered_map<Hash128, KernelHandle> cache_;
  std::mutex compile_mutex_;      // one compile at a time; guards jit_
  std::unique_ptr<LlvmJit> jit_;  // created by the first compile

  std::atomic<uint64_t> compiles_{0}, cache_hits_{0}, launches_{0}, reductions_{0}, allocs_{0},
      copies_{0}, host_reads_{0}, generation_{0};
};

LlvmJit& LlvmBackend::jit() {
  if (!jit_)
    jit_ = std::make_unique<LlvmJit>();
  return *jit_;
}

KernelHandle LlvmBackend::compile(const KernelIR& ir) {
  if (ir.hash == Hash128{})
    throw BackendError("llvm backend: kernel IR has no hash (call KernelIR::finalize())");
  {
    std::shared_lock lock(cache_mutex_);
    auto it = cache_.find(ir.hash);
    if (it != cache_.end()) {
      bump(cache_hits_);
      return it->second;
    }
  }
  std::lock_guard compile_lock(compile_mutex_);
  {
    std::shared_lock lock(cache_mutex_);  // another thread may have compiled it meanwhile
    auto it = cache_.find(ir.hash);
    if (it != cache_.end()) {
      bump(cache_hits_);
      return it->second;
    }
  }
  ir.validate();
  auto bytes = ir.serialize();
  if (hash128(bytes) != ir.hash)
    throw BackendError("llvm backend: kernel IR hash " + ir.hash.to_hex() +
                       " does not match its contents (call KernelIR::finalize() after editing)");
  auto start = std::chrono::steady_clock::now();
  auto handle = std::make_shared<LlvmKernel>(std::make_shared<const KernelIR>(ir), jit().compile(ir));
  {
    std::unique_lock lock(cache_mutex_);
    cache_.emplace(ir.hash, handle);
  }
  bump(compiles_);
  auto& log = ff::logging::llvm();
  if (log.should_log(spdlog::level::debug)) {
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                    .count();
    log.debug("compiled kernel {} ({} instructions, {} params) in {:.2f} ms", ir.hash.to_hex(),
              ir.instrs.size(), ir.params.size(), ms);
  }
  return handle;
}

void LlvmBackend::flush_kernels() {
  std::unordered_map<Hash128, KernelHandle> dropped;
  {
    std::unique_lock lock(cache_mutex_);
    dropped.swap(cache_);
    generation_.fetch_add(1, std::memory_order_relaxed);
  }
  ff::logging::llvm().debug("flushed {} kernels", dropped.size());
  // `dropped` frees the code of kernels nobody else holds, outside the cache lock.
}

BackendStats LlvmBackend::stats() const {
  BackendStats s;
  auto get = [](const std::atomic<uint64_t>& c) { return c.load(std::memory_order_relaxed); };
  s.compiles = get(compiles_);
  s.cache_hits = get(cache_hits_);
  s.launches = get(launches_);
  s.reductions = get(reductions_);
  s.allocs = get(allocs_);
  s.bytes_allocated = alloc_.bytes_allocated();
  s.peak_bytes = alloc_.peak_bytes();
  s.copies = get(copies_);
  s.host_reads = get(host_reads_);
  s.generation = get(generation_);
  return s;
}

void LlvmBackend::launch(const KernelHandle& kernel, size_t size, SizeProv,
                         std::span<const KernelArg> args) {
  const auto* k = dynamic_cast<const LlvmKernel*>(kernel.get());
  if (!k)
    throw BackendError("llvm backend: launch of a null kernel or one compiled by another backend");
  if (args.size() != k->n_params())
    throw BackendError("llvm backend: kernel " + k->hash().to_hex() + " takes " +
                       std::to_string(k->n_params()) + " arguments, launch passed " +
                       std::to_string(args.size()));
  bump(launches_);
  if (size == 0)
    return;
  // The ABI wants the bare 64-bit words contiguous.
  uint64_t stack_bits[kStackArgs];
  thread_local std::vector<uint64_t> heap_bits;
  uint64_t* bits = stack_bits;
  if (args.size() > kStackArgs) {
    heap_bits.resize(args.size());
    bits = heap_bits.data();
  }
  for (size_t i = 0; i < args.size(); ++i)
    bits[i] = args[i].bits;

  if (size < kParallelMinElems || pool_.n_threads() == 1) {
    k->entry()(0, size, bits);
    return;
  }
  // Blocks are multiples of 64 elements, so only the last one has a vector tail.
  size_t n_blocks = std::min<size_t>(size / kMinBlockElems, size_t{pool_.n_threads()} * 4);
  size_t block = ((size + n_blocks - 1) / n_blocks + 63) / 64 * 64;
  LaunchCtx ctx{k->entry(), bits, size, block};
  pool_.run(
      (size + block - 1) / block,
      [](void* c, size_t b) {
        auto& x = *static_cast<LaunchCtx*>(c);
        uint64_t begin = b * x.block;
        x.fn(begin, std::min<uint64_t>(begin + x.block, x.size), x.args);
      },
      &ctx);
}

}  // namespace
}  // namespace llvm_backend

std::unique_ptr<Backend> create_llvm_backend(const BackendOptions& options) {
  return std::make_unique<llvm_backend::LlvmBackend>(options);
}

}  // namespace ff
