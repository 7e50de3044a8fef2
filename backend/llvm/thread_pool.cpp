// Fork-join pool. A job is (fn, ctx, n_blocks); threads claim blocks with a CAS on
// state_ = epoch << 32 | next, so a worker that wakes late can never run a block of a newer job
// with an older job's function (its claim fails once the epoch or the counter moved on).
#include "backend/llvm/thread_pool.h"

#include <algorithm>
#include <chrono>
#include <string>
#include <system_error>

#include "freezeframe/errors.h"

namespace ff::llvm_backend {
namespace {

// How long an idle worker spins before sleeping: long enough to catch the next launch of a
// replay or traced loop, short enough not to burn a core when the program does other things.
constexpr auto kSpinTime = std::chrono::microseconds(200);

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#else
  std::this_thread::yield();
#endif
}

}  // namespace

ThreadPool::ThreadPool(unsigned n_threads) {
  if (n_threads == 0)
    n_threads = std::max(1u, std::thread::hardware_concurrency());
  try {
    for (unsigned k = 1; k < n_threads; ++k)
      workers_.emplace_back([this] { worker_main(); });
  } catch (const std::system_error& e) {
    shutdown();  // joins the workers already started
    throw BackendError(std::string("llvm backend: cannot start pool threads: ") + e.what());
  }
}

ThreadPool::~ThreadPool() { shutdown(); }

void ThreadPool::shutdown() noexcept {
  stop_.store(true, std::memory_order_release);
  epoch_.fetch_add(1, std::memory_order_seq_cst);
  wake_sleepers();
  for (auto& t : workers_)
    if (t.joinable())
      t.join();
  workers_.clear();
}

void ThreadPool::run(size_t n_blocks, BlockFn fn, void* ctx) {
  if (n_blocks == 0)
    return;
  std::unique_lock lock(submit_, std::defer_lock);
  if (workers_.empty() || n_blocks == 1 || !lock.try_lock()) {
    for (size_t b = 0; b < n_blocks; ++b)
      fn(ctx, b);
    return;
  }
  fn_.store(fn, std::memory_order_relaxed);
  ctx_.store(ctx, std::memory_order_relaxed);
  n_blocks_.store(n_blocks, std::memory_order_relaxed);
  remaining_.store(n_blocks, std::memory_order_relaxed);
  uint32_t epoch = epoch_.load(std::memory_order_relaxed) + 1;
  state_.store(uint64_t{epoch} << 32, std::memory_order_release);
  epoch_.store(epoch, std::memory_order_seq_cst);
  if (n_sleeping_.load(std::memory_order_seq_cst) > 0)
    wake_sleepers();

  work_on(epoch);
  // Blocks other threads claimed may still be running.
  for (unsigned spins = 0; remaining_.load(std::memory_order_acquire) != 0; ++spins) {
    if (spins < 100000)
      cpu_relax();
    else
      std::this_thread::yield();
  }
}

void ThreadPool::wake_sleepers() {
  std::lock_guard lock(sleep_mutex_);
  wake_.notify_all();
}

bool ThreadPool::work_on(uint32_t epoch) {
  bool did_work = false;
  uint64_t s = state_.load(std::memory_order_acquire);
  for (;;) {
    if (static_cast<uint32_t>(s >> 32) != epoch)
      return did_work;
    BlockFn fn = fn_.load(std::memory_order_relaxed);
    void* ctx = ctx_.load(std::memory_order_relaxed);
    uint64_t n = n_blocks_.load(std::memory_order_relaxed);
    uint64_t next = s & 0xFFFFFFFFu;
    if (next >= n)
      return did_work;
    if (!state_.compare_exchange_weak(s, s + 1, std::memory_order_acq_rel,
                                      std::memory_order_acquire))
      continue;
    fn(ctx, next);
    did_work = true;
    remaining_.fetch_sub(1, std::memory_order_acq_rel);
    s = state_.load(std::memory_order_acquire);
  }
}

void ThreadPool::worker_main() {
  using Clock = std::chrono::steady_clock;
  // Start from the epoch before any job: a thread that starts late must still notice a job
  // (or the shutdown) published before it ran.
  uint32_t seen = 0;
  for (;;) {
    uint32_t epoch;
    auto spin_start = Clock::now();
    unsigned spins = 0;
    while ((epoch = epoch_.load(std::memory_order_acquire)) == seen) {
      cpu_relax();
      if (++spins % 128 == 0 && Clock::now() - spin_start > kSpinTime) {
        // Dekker with run(): we announce ourselves, then re-check the epoch; run() bumps the
        // epoch, then checks for sleepers. One of the two sees the other (seq_cst).
        std::unique_lock lock(sleep_mutex_);
        n_sleeping_.fetch_add(1, std::memory_order_seq_cst);
        wake_.wait(lock, [&] { return epoch_.load(std::memory_order_seq_cst) != seen; });
        n_sleeping_.fetch_sub(1, std::memory_order_relaxed);
        spin_start = Clock::now();
      }
    }
    seen = epoch;
    if (stop_.load(std::memory_order_acquire))
      return;
    work_on(epoch);
  }
}

}  // namespace ff::llvm_backend
