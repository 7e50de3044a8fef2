// Kernel cache, JIT warm-up and tier-up thread.
#include "backend/llvm/kernel_cache.h"

#include <chrono>
#include <exception>
#include <string>

#include "backend/llvm/launch_plan.h"
#include "common/log.h"
#include "common/version.h"
#include "freezeframe/errors.h"

namespace ff::llvm_backend {
namespace {

void bump(std::atomic<uint64_t>& counter) {
  counter.fetch_add(1, std::memory_order_relaxed);
}

// A small kernel touching what most kernels use (vector loads/stores, float and integer
// arithmetic, compare/select, the masked tail), compiled once to warm LLVM up.
KernelIR warm_up_kernel() {
  KernelIR ir;
  auto F = ScalarType::Float32, I = ScalarType::Int32;
  ir.params = {{ParamKind::BufferIn, F}, {ParamKind::BufferOut, F}, {ParamKind::BufferOut, I}};
  uint32_t x = ir.emit(IrOp::Load, F, {0});
  uint32_t half = ir.emit(IrOp::Literal, F, {}, 0x3f000000);
  uint32_t f = ir.emit(IrOp::Fma, F, {x, half, x});
  uint32_t m = ir.emit(IrOp::Gt, ScalarType::Bool, {x, half});
  ir.emit(IrOp::Store, F, {1, ir.emit(IrOp::Select, F, {m, ir.emit(IrOp::Sqrt, F, {f}), x})});
  uint32_t i = ir.emit(IrOp::Index, I);
  ir.emit(IrOp::Store, I, {2, ir.emit(IrOp::Add, I, {i, ir.emit(IrOp::Cast, I, {f})})});
  ir.finalize();
  return ir;
}

}  // namespace

LlvmKernel::LlvmKernel(std::shared_ptr<const KernelIR> ir, std::unique_ptr<JitCode> code, Tier tier)
    : CompiledKernel(std::move(ir)),
      n_params_(this->ir().params.size()),
      work_per_elem_(kernel_work_per_elem(this->ir())),
      accumulate_(accumulate_info(this->ir())),
      first_(std::move(code)),
      entry_(first_->entry()),
      tier_(tier),
      tier_up_requested_(tier == Tier::Optimized) {}

void LlvmKernel::install_optimized(std::unique_ptr<JitCode> code) const {
  optimized_ = std::move(code);
  entry_.store(optimized_->entry(), std::memory_order_release);
  tier_.store(Tier::Optimized, std::memory_order_release);
}

KernelCache::KernelCache(const LlvmTuning& tuning, bool background, const std::string& disk_dir,
                         uint64_t disk_max_bytes)
    : tuning_(tuning),
      tiered_(tuning.tiered && background),
      tier_up_work_(tuning.tier_up_work),
      disk_(disk_dir, disk_max_bytes) {
  if (!(background && tuning.warm_up))
    return;
  Tier tier = tiered_ ? Tier::Quick : Tier::Optimized;
  warm_up_ = std::thread([this, tier] {
    try {
      auto start = std::chrono::steady_clock::now();
      auto jit = std::make_unique<LlvmJit>(tuning_.jit);
      // A compile already waiting for the JIT warms LLVM up itself: skip the throw-away one.
      // With a disk cache the warm-up kernel is usually there: linking it is enough (and
      // leaves the codegen cost to a process that needs it).
      if (!compile_waiting_.load(std::memory_order_acquire)) {
        KernelIR warm = warm_up_kernel();
        std::unique_ptr<JitCode> code = load_code(*jit, warm, tier);
        if (!code)
          code = compile_code(*jit, warm, tier);
      }
      warm_jit_ = std::move(jit);
      ff::logging::llvm().debug(
          "JIT warm-up took {:.2f} ms",
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
              .count());
    } catch (const std::exception& e) {
      // The first compile creates the JIT again and reports the error.
      ff::logging::llvm().debug("JIT warm-up failed: {}", e.what());
    }
  });
}

KernelCache::~KernelCache() {
  stop_background_work();
}

void KernelCache::stop_background_work() noexcept {
  {
    std::lock_guard lock(tier_mutex_);
    tier_stop_ = true;
  }
  tier_wake_.notify_all();
  if (tier_thread_.joinable())
    tier_thread_.join();
  std::lock_guard lock(compile_mutex_);
  join_warm_up_locked();
}

void KernelCache::join_warm_up_locked() {
  if (!warm_up_.joinable())
    return;
  compile_waiting_.store(true, std::memory_order_release);  // skip its throw-away compile
  warm_up_.join();
  if (warm_jit_)
    jit_ = std::move(warm_jit_);
}

LlvmJit& KernelCache::jit_locked() {
  join_warm_up_locked();
  if (!jit_)
    jit_ = std::make_unique<LlvmJit>(tuning_.jit);
  return *jit_;
}

LlvmJit& KernelCache::jit() {
  std::lock_guard lock(compile_mutex_);
  return jit_locked();
}

KernelHandle KernelCache::compile(const KernelIR& ir) {
  if (ir.hash == Hash128{})
    throw BackendError("llvm backend: kernel IR has no hash (call KernelIR::finalize())");
  auto find = [&]() -> KernelHandle {
    std::shared_lock lock(cache_mutex_);
    auto it = cache_.find(ir.hash);
    if (it == cache_.end())
      return nullptr;
    bump(cache_hits_);
    return it->second;
  };
  if (KernelHandle hit = find())
    return hit;
  std::lock_guard compile_lock(compile_mutex_);
  if (KernelHandle hit = find())  // another thread compiled it meanwhile
    return hit;
  std::shared_ptr<const KernelIR> checked = kernel_to_compile(ir, "llvm backend");
  auto start = std::chrono::steady_clock::now();
  Tier tier = tiered_ ? Tier::Quick : Tier::Optimized;
  LlvmJit& jit = jit_locked();
  std::unique_ptr<JitCode> code;
  bool from_disk = false;
  if (disk_.enabled()) {
    // Optimised code first: a kernel that was hot in an earlier process starts optimised.
    code = load_code(jit, ir, Tier::Optimized);
    if (code)
      tier = Tier::Optimized;
    else if (tier == Tier::Quick)
      code = load_code(jit, ir, Tier::Quick);
    from_disk = code != nullptr;
  }
  if (!code)
    code = compile_code(jit, ir, tier);
  auto kernel = std::make_shared<LlvmKernel>(std::move(checked), std::move(code), tier);
  {
    std::unique_lock lock(cache_mutex_);
    cache_.emplace(ir.hash, kernel);
  }
  bump(from_disk ? disk_hits_ : compiles_);
  auto& logger = ff::logging::llvm();
  if (logger.should_log(spdlog::level::debug))
    logger.debug("{} kernel {} ({} instructions, {} params, {} tier) in {:.2f} ms",
                 from_disk ? "loaded from the disk cache" : "compiled", ir.hash.to_hex(),
                 ir.instrs.size(), ir.params.size(), tier == Tier::Quick ? "quick" : "optimized",
                 std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                     .count());
  return kernel;
}

Hash128 KernelCache::disk_key(LlvmJit& jit, const KernelIR& ir, Tier tier) {
  std::call_once(fingerprint_once_, [&] { fingerprint_ = jit.codegen_fingerprint(); });
  // Everything that decides the machine code besides the IR: the library (codegen changes
  // between releases), the IR format, LLVM, the target and options, the tier.
  std::string key = std::string("freezeframe ") + library_version() + "\nir-version " +
                    std::to_string(kKernelIrVersion) + "\nir " + ir.hash.to_hex() + "\ntier " +
                    (tier == Tier::Quick ? "quick" : "optimized") + "\n" + fingerprint_;
  return hash128(std::span(reinterpret_cast<const std::byte*>(key.data()), key.size()));
}

std::unique_ptr<JitCode> KernelCache::load_code(LlvmJit& jit, const KernelIR& ir, Tier tier) {
  std::string symbol = LlvmJit::canonical_symbol(ir, tier);
  if (jit.is_linked(symbol))
    return nullptr;
  Hash128 key = disk_key(jit, ir, tier);
  std::optional<std::string> object = disk_.load(key);
  if (!object)
    return nullptr;
  try {
    return jit.link(*object, symbol);
  } catch (const BackendError& e) {  // checksummed but unusable: compile and replace it
    ff::logging::llvm().debug("disk cache: entry for kernel {} does not link ({}); recompiling",
                              ir.hash.to_hex(), e.what());
    return nullptr;
  }
}

std::unique_ptr<JitCode> KernelCache::compile_code(LlvmJit& jit, const KernelIR& ir, Tier tier) {
  if (!disk_.enabled())
    return jit.compile(ir, tier);
  std::string symbol = LlvmJit::canonical_symbol(ir, tier);
  if (jit.is_linked(symbol))  // compiled again after a flush, old code still held
    return jit.compile(ir, tier);
  std::string object = jit.emit_object(ir, tier, symbol);
  std::unique_ptr<JitCode> code = jit.link(object, symbol);
  if (!code)  // another thread linked it meanwhile (the tier-up thread)
    return jit.compile(ir, tier);
  disk_.store(disk_key(jit, ir, tier), object);
  return code;
}

void KernelCache::flush() {
  std::unordered_map<Hash128, KernelHandle> dropped;
  {
    std::unique_lock lock(cache_mutex_);
    dropped.swap(cache_);
    generation_.fetch_add(1, std::memory_order_relaxed);
  }
  ff::logging::llvm().debug("flushed {} kernels", dropped.size());
  // `dropped` frees the code of kernels nobody else holds, outside the cache lock.
}

void KernelCache::request_tier_up(const KernelHandle& handle) {
  std::lock_guard lock(tier_mutex_);
  if (tier_stop_)
    return;
  tier_queue_.push_back(std::static_pointer_cast<const LlvmKernel>(handle));
  if (!tier_thread_.joinable()) {
    try {
      tier_thread_ = std::thread([this] { tier_up_main(); });
    } catch (const std::system_error& e) {  // stay at the quick tier
      ff::logging::llvm().warn("cannot start the tier-up thread: {}", e.what());
      tier_queue_.clear();
      tier_stop_ = true;
      return;
    }
  }
  tier_wake_.notify_one();
}

void KernelCache::tier_up_main() {
  for (;;) {
    std::shared_ptr<const LlvmKernel> kernel;
    {
      std::unique_lock lock(tier_mutex_);
      tier_wake_.wait(lock, [&] { return tier_stop_ || !tier_queue_.empty(); });
      if (tier_stop_)
        return;
      kernel = tier_queue_.front().lock();
      tier_queue_.pop_front();
    }
    if (!kernel)
      continue;  // dropped meanwhile
    try {
      auto start = std::chrono::steady_clock::now();
      LlvmJit& j = jit();
      kernel->install_optimized(compile_code(j, kernel->ir(), Tier::Optimized));
      ff::logging::llvm().debug(
          "re-compiled hot kernel {} optimized in {:.2f} ms", kernel->hash().to_hex(),
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
              .count());
    } catch (const std::exception& e) {
      ff::logging::llvm().warn("optimising kernel {} failed, it stays at the quick tier: {}",
                               kernel->hash().to_hex(), e.what());
    }
  }
}

}  // namespace ff::llvm_backend
