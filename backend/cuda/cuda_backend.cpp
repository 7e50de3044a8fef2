// The "cuda" Backend operations (see cuda_backend.h). Every public operation binds the context
// on the calling thread, then queues work on the one stream.
#include "backend/cuda/cuda_backend.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>

#include "backend/cuda/cuda_backend_impl.h"
#include "backend/cuda/ptx_builtins.h"
#include "backend/cuda/ptx_codegen.h"
#include "common/log.h"
#include "freezeframe/errors.h"

namespace ff {
namespace cuda_backend {
namespace {

constexpr unsigned kBlock = 256;                   // threads per block of generated kernels
constexpr size_t kStagingBytes = size_t{8} << 20;  // per staging chunk
constexpr size_t kScratchBytes = size_t{kMaxBuiltinBlocks} * 8;

void bump(std::atomic<uint64_t>& counter) {
  counter.fetch_add(1, std::memory_order_relaxed);
}

uint64_t word(const void* p) {
  return reinterpret_cast<uint64_t>(p);
}

}  // namespace

void StreamSink::kernel(CUfunction fn, unsigned grid, unsigned block,
                        std::span<const uint64_t> params) {
  constexpr size_t kStack = 64;
  void* stack_ptrs[kStack];
  thread_local std::vector<void*> heap_ptrs;
  void** ptrs = stack_ptrs;
  if (params.size() > kStack) {
    heap_ptrs.resize(params.size());
    ptrs = heap_ptrs.data();
  }
  for (size_t i = 0; i < params.size(); ++i)
    ptrs[i] = const_cast<uint64_t*>(&params[i]);
  ctx_.check(ctx_.api().cuLaunchKernel(fn, grid, 1, 1, block, 1, 1, 0, stream_, ptrs, nullptr),
             "cuLaunchKernel");
}

CudaBackend::CudaBackend(const CudaOptions& options) : target_(options.target) {
  auto driver = options.driver ? options.driver : Driver::shared(options.driver_library);
  ctx_ = std::make_shared<const CudaContext>(driver, options.device);
  ctx_->bind();
  stream_ = std::make_unique<Stream>(ctx_);
  alloc_ = std::make_unique<DeviceAllocator>(ctx_, [this] { stream_->synchronize(); });
  const DeviceProperties& p = ctx_->properties();
  resident_blocks_ = static_cast<unsigned>(
      std::max(1, p.n_sms * std::max(1, p.max_threads_per_sm / static_cast<int>(kBlock))));
  partials_ = alloc_->alloc(kScratchBytes);
  counter_ = alloc_->alloc(8);
  total_ = alloc_->alloc(8);
  ctx_->check(ctx_->api().cuMemsetD32Async(word(counter_), 0, 2, stream_->get()),
              "cuMemsetD32Async");
  for (int i = 0; i < 2; ++i) {
    staging_[i] = std::make_unique<PinnedBuffer>(ctx_, kStagingBytes);
    staged_[i] = std::make_unique<Event>(ctx_);
  }
  if (options.graphs && ctx_->api().has_graphs()) {
    graphs_ = std::make_unique<GraphCache>(ctx_);
    graphs_enabled_ = true;
  }
  alloc_->reset_peak();
  logging::cuda().info("cuda backend: PTX for sm_{} (ISA {}.{}), {} resident blocks of {}",
                       target_.sm, ptx_version_for(target_) / 10, ptx_version_for(target_) % 10,
                       resident_blocks_, kBlock);
}

CudaBackend::~CudaBackend() {
  try {
    ctx_->bind();
  } catch (...) {
  }
  // At process exit the driver may already be gone (CUDA_ERROR_DEINITIALIZED): nothing to say.
  ctx_->driver().log_failure(ctx_->api().cuStreamSynchronize(stream_->get()),
                             "cuStreamSynchronize");
  graphs_.reset();
  alloc_->release(partials_);
  alloc_->release(counter_);
  alloc_->release(total_);
  {
    std::lock_guard lock(kernels_mutex_);
    kernels_.clear();  // handles held elsewhere keep their modules
    builtins_.clear();
  }
  alloc_->trim();
}

void* CudaBackend::alloc(ScalarType type, size_t count, SizeProv) {
  if (!is_valid(type))
    throw BackendError("cuda backend: alloc of an invalid element type");
  size_t elem = size_of(type);
  if (count > (size_t{1} << 60) / elem)
    throw BackendError("cuda backend: alloc of " + std::to_string(count) + " " + to_string(type) +
                       " elements is too large");
  bump(allocs_);
  return alloc_->alloc(count * elem);
}

void CudaBackend::release(void* ptr) noexcept {
  alloc_->release(ptr);
}

void CudaBackend::copy(void* dst, const void* src, size_t bytes, CopyKind kind) {
  if (bytes && (!dst || !src))
    throw BackendError("cuda backend: copy of " + std::to_string(bytes) +
                       " bytes with a null pointer");
  bump(copies_);
  if (bytes == 0)
    return;
  ctx_->bind();
  const DriverApi& api = ctx_->api();
  CUstream s = stream_->get();
  switch (kind) {
    case CopyKind::DeviceToDevice:
      ctx_->check(api.cuMemcpyDtoDAsync(word(dst), word(src), bytes, s), "cuMemcpyDtoDAsync");
      return;
    case CopyKind::HostToDevice: {
      // Through page-locked chunks: the caller's memory is free again when copy() returns.
      std::lock_guard lock(staging_mutex_);
      for (size_t off = 0, k = 0; off < bytes; off += kStagingBytes, ++k) {
        size_t n = std::min(kStagingBytes, bytes - off);
        int b = static_cast<int>(k % 2);
        if (staged_used_[b])
          staged_[b]->synchronize();
        std::memcpy(staging_[b]->data(), static_cast<const char*>(src) + off, n);
        ctx_->check(api.cuMemcpyHtoDAsync(word(dst) + off, staging_[b]->data(), n, s),
                    "cuMemcpyHtoDAsync");
        staged_[b]->record(s);
        staged_used_[b] = true;
      }
      return;
    }
    case CopyKind::DeviceToHost: {
      bump(host_reads_);
      std::lock_guard lock(staging_mutex_);
      size_t prev_off = 0, prev_n = 0;
      int prev_b = -1;
      for (size_t off = 0, k = 0; off < bytes; off += kStagingBytes, ++k) {
        size_t n = std::min(kStagingBytes, bytes - off);
        int b = static_cast<int>(k % 2);
        ctx_->check(api.cuMemcpyDtoHAsync(staging_[b]->data(), word(src) + off, n, s),
                    "cuMemcpyDtoHAsync");
        staged_[b]->record(s);
        staged_used_[b] = true;
        if (prev_b >= 0) {  // copy the previous chunk out while this one transfers
          staged_[prev_b]->synchronize();
          std::memcpy(static_cast<char*>(dst) + prev_off, staging_[prev_b]->data(), prev_n);
        }
        prev_off = off;
        prev_n = n;
        prev_b = b;
      }
      staged_[prev_b]->synchronize();
      std::memcpy(static_cast<char*>(dst) + prev_off, staging_[prev_b]->data(), prev_n);
      return;
    }
  }
  throw BackendError("cuda backend: copy with an invalid kind");
}

void CudaBackend::fill(void* ptr, size_t count, uint32_t elem_size, uint64_t value) {
  if (count && !ptr)
    throw BackendError("cuda backend: fill of a null pointer");
  if (elem_size != 1 && elem_size != 2 && elem_size != 4 && elem_size != 8)
    throw BackendError("cuda backend: fill element size " + std::to_string(elem_size) +
                       " is not 1, 2, 4 or 8");
  if (count == 0)
    return;
  ctx_->bind();
  const DriverApi& api = ctx_->api();
  CUstream s = stream_->get();
  auto lo = static_cast<uint32_t>(value), hi = static_cast<uint32_t>(value >> 32);
  switch (elem_size) {
    case 1:
      ctx_->check(api.cuMemsetD8Async(word(ptr), static_cast<unsigned char>(value), count, s),
                  "cuMemsetD8Async");
      return;
    case 2:
      ctx_->check(api.cuMemsetD16Async(word(ptr), static_cast<unsigned short>(value), count, s),
                  "cuMemsetD16Async");
      return;
    case 4:
      ctx_->check(api.cuMemsetD32Async(word(ptr), lo, count, s), "cuMemsetD32Async");
      return;
    default:
      if (lo == hi) {
        ctx_->check(api.cuMemsetD32Async(word(ptr), lo, 2 * count, s), "cuMemsetD32Async");
        return;
      }
      StreamSink sink(*ctx_, s);
      issue_fill(sink, ptr, count, elem_size, value);
  }
}

KernelHandle CudaBackend::compile(const KernelIR& ir) {
  if (ir.hash == Hash128{})
    throw BackendError("cuda backend: kernel IR has no hash (call KernelIR::finalize())");
  std::lock_guard lock(kernels_mutex_);
  if (auto it = kernels_.find(ir.hash); it != kernels_.end()) {
    bump(cache_hits_);
    return it->second;
  }
  std::shared_ptr<const KernelIR> checked = kernel_to_compile(ir, "cuda backend");
  auto start = std::chrono::steady_clock::now();
  PtxOptions options;
  options.target = target_;
  std::string ptx = emit_ptx_kernel(ir, "ff_kernel", options);
  auto generated = std::chrono::steady_clock::now();
  auto module = std::make_unique<Module>(ctx_, ptx);
  auto kernel = std::make_shared<const CudaKernel>(std::move(checked), std::move(module));
  kernels_.emplace(ir.hash, kernel);
  bump(compiles_);
  auto ms = [](auto a, auto b) { return std::chrono::duration<double, std::milli>(b - a).count(); };
  logging::cuda().debug(
      "compiled kernel {} ({} instructions): PTX in {:.3f} ms, loaded in {:.2f} ms",
      ir.hash.to_hex(), ir.instrs.size(), ms(start, generated),
      ms(generated, std::chrono::steady_clock::now()));
  return kernel;
}

void CudaBackend::flush_kernels() {
  {
    std::lock_guard lock(scratch_mutex_);
    if (graphs_)
      graphs_->clear();
  }
  std::lock_guard lock(kernels_mutex_);
  kernels_.clear();
  generation_.fetch_add(1);
}

BackendStats CudaBackend::stats() const {
  auto get = [](const std::atomic<uint64_t>& c) { return c.load(std::memory_order_relaxed); };
  BackendStats s;
  s.compiles = get(compiles_);
  s.cache_hits = get(cache_hits_);
  s.launches = get(launches_);
  s.reductions = get(reductions_);
  s.allocs = get(allocs_);
  s.bytes_allocated = alloc_->bytes_allocated();
  s.peak_bytes = alloc_->peak_bytes();
  s.copies = get(copies_);
  s.host_reads = get(host_reads_);
  s.generation = generation_.load();
  return s;
}

const CudaKernel& CudaBackend::kernel_of(const KernelHandle& h) const {
  const auto* k = dynamic_cast<const CudaKernel*>(h.get());
  if (!k)
    throw BackendError("cuda backend: launch of a null kernel or one compiled by another backend");
  if (&k->context() != ctx_.get())
    throw BackendError("cuda backend: kernel " + k->hash().to_hex() +
                       " was compiled by another cuda backend (another context)");
  return *k;
}

void CudaBackend::launch(const KernelHandle& kernel, size_t size, SizeProv,
                         std::span<const KernelArg> args) {
  const CudaKernel& k = kernel_of(kernel);
  if (args.size() != k.n_params())
    throw BackendError("cuda backend: kernel " + k.hash().to_hex() + " takes " +
                       std::to_string(k.n_params()) + " arguments, launch passed " +
                       std::to_string(args.size()));
  bump(launches_);
  if (size == 0)
    return;
  thread_local std::vector<uint64_t> bits;
  bits.resize(args.size());
  for (size_t i = 0; i < args.size(); ++i)
    bits[i] = args[i].bits;
  ctx_->bind();
  StreamSink sink(*ctx_, stream_->get());
  issue_launch(sink, k, size, bits);
}

void CudaBackend::issue_launch(LaunchSink& sink, const CudaKernel& k, size_t size,
                               std::span<const uint64_t> arg_bits) {
  thread_local std::vector<uint64_t> params;
  params.resize(arg_bits.size() + 1);
  params[0] = size;
  std::copy(arg_bits.begin(), arg_bits.end(), params.begin() + 1);
  uint64_t blocks = (size + kBlock - 1) / kBlock;
  auto grid = static_cast<unsigned>(std::clamp<uint64_t>(blocks, 1, resident_blocks_));
  sink.kernel(k.function(), grid, kBlock, params);
}

CUfunction CudaBackend::builtin(const std::string& key, const std::function<std::string()>& make,
                                const char* entry) {
  std::lock_guard lock(kernels_mutex_);
  auto it = builtins_.find(key);
  if (it == builtins_.end()) {
    auto module = std::make_unique<Module>(ctx_, make());
    it = builtins_
             .emplace(key, std::make_pair(std::move(module), std::map<std::string, CUfunction>{}))
             .first;
    logging::cuda().debug("loaded built-in kernels {}", key);
  }
  auto& fns = it->second.second;
  auto f = fns.find(entry);
  if (f == fns.end())
    f = fns.emplace(entry, it->second.first->function(entry)).first;
  return f->second;
}

void CudaBackend::issue_fill(LaunchSink& sink, void* ptr, size_t count, uint32_t elem_size,
                             uint64_t value) {
  CUfunction fn = builtin(
      "fill" + std::to_string(elem_size), [&] { return ptx_fill(elem_size, target_); }, "ff_fill");
  uint64_t params[] = {count, word(ptr), value};
  BuiltinGrid g = reduce_grid(count, resident_blocks_);
  sink.kernel(fn, g.grid, kBuiltinBlock, params);
}

void CudaBackend::issue_copy(LaunchSink& sink, void* dst, const void* src, size_t bytes) {
  CUfunction fn = builtin(
      "copy", [&] { return ptx_copy(target_); }, "ff_copy");
  uint64_t params[] = {bytes, word(dst), word(src)};
  BuiltinGrid g = reduce_grid((bytes + 7) / 8, resident_blocks_);
  sink.kernel(fn, g.grid, kBuiltinBlock, params);
}

void CudaBackend::issue_reduce(LaunchSink& sink, ReduceOp op, ScalarType type, const void* in,
                               size_t count, void* out) {
  if (!reduce_defined(op, type))
    throw BackendError(std::string("cuda backend: reduce ") + to_string(op) +
                       " is not defined for " + to_string(type));
  std::string key = "reduce" + std::to_string(int(op)) + "." + to_string(type);
  CUfunction fn = builtin(
      key, [&] { return ptx_reduce(op, type, target_); }, "ff_reduce");
  BuiltinGrid g = reduce_grid(count, std::min(resident_blocks_, kMaxBuiltinBlocks));
  uint64_t params[] = {count, word(in), word(out), word(partials_), word(counter_)};
  sink.kernel(fn, g.grid, kBuiltinBlock, params);
}

void CudaBackend::issue_prefix_sum(LaunchSink& sink, ScalarType type, bool exclusive,
                                   const void* in, size_t count, void* out) {
  if (type == ScalarType::Bool || !is_valid(type))
    throw BackendError(std::string("cuda backend: prefix_sum is not defined for ") +
                       to_string(type));
  std::string key = std::string("scan.") + to_string(type) + (exclusive ? ".excl" : ".incl");
  auto make = [&] { return ptx_prefix_sum(type, exclusive, target_); };
  CUfunction partials = builtin(key, make, "ff_scan_partials");
  CUfunction apply = builtin(key, make, "ff_scan_apply");
  BuiltinGrid g = chunked_grid(count, std::min(resident_blocks_, kMaxBuiltinBlocks));
  uint64_t p1[] = {count, word(in), word(partials_), g.chunk};
  uint64_t p2[] = {count, word(in), word(out), word(partials_), g.chunk};
  sink.kernel(partials, g.grid, kBuiltinBlock, p1);
  sink.kernel(apply, g.grid, kBuiltinBlock, p2);
}

void CudaBackend::issue_compress(LaunchSink& sink, const void* mask, size_t count, void* out,
                                 void* total) {
  if (count > size_t{0xFFFFFFFFu} + 1)
    throw BackendError("cuda backend: compress of " + std::to_string(count) +
                       " entries exceeds the uint32 index range");
  auto make = [&] { return ptx_compress(target_); };
  CUfunction counts = builtin("compress", make, "ff_compress_count");
  CUfunction write = builtin("compress", make, "ff_compress_write");
  BuiltinGrid g = chunked_grid(count, std::min(resident_blocks_, kMaxBuiltinBlocks));
  uint64_t p1[] = {count, word(mask), word(partials_), g.chunk};
  uint64_t p2[] = {count, word(mask), word(out), word(partials_), g.chunk, word(total)};
  sink.kernel(counts, g.grid, kBuiltinBlock, p1);
  sink.kernel(write, g.grid, kBuiltinBlock, p2);
}

void CudaBackend::reduce(ReduceOp op, ScalarType type, const void* in, size_t count, void* out) {
  if (!out || (count && !in))
    throw BackendError("cuda backend: reduce with a null pointer");
  bump(reductions_);
  ctx_->bind();
  std::lock_guard lock(scratch_mutex_);  // the partials are shared with scan and compress
  StreamSink sink(*ctx_, stream_->get());
  issue_reduce(sink, op, type, in, count, out);
}

void CudaBackend::prefix_sum(ScalarType type, bool exclusive, const void* in, size_t count,
                             void* out) {
  if (count && (!in || !out))
    throw BackendError("cuda backend: prefix_sum with a null pointer");
  if (type == ScalarType::Bool || !is_valid(type))
    throw BackendError(std::string("cuda backend: prefix_sum is not defined for ") +
                       to_string(type));
  bump(reductions_);
  if (count == 0)
    return;
  ctx_->bind();
  std::lock_guard lock(scratch_mutex_);  // two kernels share the partials
  StreamSink sink(*ctx_, stream_->get());
  issue_prefix_sum(sink, type, exclusive, in, count, out);
}

size_t CudaBackend::compress(const void* mask, size_t count, void* out) {
  if (count && (!mask || !out))
    throw BackendError("cuda backend: compress with a null pointer");
  if (count > size_t{0xFFFFFFFFu} + 1)
    throw BackendError("cuda backend: compress of " + std::to_string(count) +
                       " entries exceeds the uint32 index range");
  bump(reductions_);
  bump(host_reads_);  // the count comes back to the host
  if (count == 0)
    return 0;
  ctx_->bind();
  std::lock_guard lock(scratch_mutex_);
  StreamSink sink(*ctx_, stream_->get());
  issue_compress(sink, mask, count, out, total_);
  return read_u64(total_);
}

uint64_t CudaBackend::read_u64(const void* p) {
  ctx_->bind();
  std::lock_guard lock(staging_mutex_);
  int b = 0;
  CUstream s = stream_->get();
  ctx_->check(ctx_->api().cuMemcpyDtoHAsync(staging_[b]->data(), word(p), 8, s),
              "cuMemcpyDtoHAsync");
  staged_[b]->record(s);
  staged_used_[b] = true;
  staged_[b]->synchronize();
  uint64_t v;
  std::memcpy(&v, staging_[b]->data(), 8);
  return v;
}

void CudaBackend::sync() {
  ctx_->bind();
  stream_->synchronize();
}

std::unique_ptr<Backend> create_cuda_backend(const CudaOptions& options) {
  return std::make_unique<CudaBackend>(options);
}

}  // namespace cuda_backend

namespace cuda_backend {

CudaOptions cuda_options(const BackendOptions& options) {
  CudaOptions o;
  o.device = cuda_device_ordinal(options.cuda_device);
  o.driver_library = options.cuda_driver_library;
  o.graphs = options.cuda_graphs;
  return o;
}

}  // namespace cuda_backend

std::unique_ptr<Backend> create_cuda_backend(const BackendOptions& options) {
  return cuda_backend::create_cuda_backend(cuda_backend::cuda_options(options));
}

}  // namespace ff
