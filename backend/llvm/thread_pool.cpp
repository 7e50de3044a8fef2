// Fork-join pool. A job lives on its caller's stack and is published through job_; threads claim
// its blocks with a fetch_add on a part's cursor, their own part first. A worker counts itself in
// active_ before it reads job_, and the caller, once every block is done, clears job_ and waits for
// active_ to drain: so no worker can touch a Job after its caller returned (seq_cst orders the two
// sides, Dekker-style).
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
      workers_.emplace_back([this, k] { worker_main(k); });
  } catch (const std::system_error& e) {
    shutdown();  // joins the workers already started
    throw BackendError(std::string("llvm backend: cannot start pool threads: ") + e.what());
  }
}

ThreadPool::~ThreadPool() {
  shutdown();
}

void ThreadPool::shutdown() noexcept {
  stop_.store(true, std::memory_order_release);
  epoch_.fetch_add(1, std::memory_order_seq_cst);
  wake_sleepers();
  for (auto& t : workers_)
    if (t.joinable())
      t.join();
  workers_.clear();
}

void ThreadPool::run(size_t n_blocks, BlockFn fn, void* ctx, bool wake) {
  if (n_blocks == 0)
    return;
  std::unique_lock lock(submit_, std::defer_lock);
  if (workers_.empty() || n_blocks == 1 || !lock.try_lock()) {
    for (size_t b = 0; b < n_blocks; ++b)
      fn(ctx, b);
    return;
  }
  Job job(fn, ctx, n_blocks, std::min<size_t>(n_blocks, n_threads()));
  job_.store(&job, std::memory_order_seq_cst);
  epoch_.fetch_add(1, std::memory_order_seq_cst);
  if (wake && n_sleeping_.load(std::memory_order_seq_cst) > 0)
    wake_sleepers();

  work_on(job, 0);
  // Blocks other threads claimed may still be running; then late workers must leave.
  for (unsigned spins = 0; job.remaining.load(std::memory_order_acquire) != 0; ++spins) {
    if (spins < 100000)
      cpu_relax();
    else
      std::this_thread::yield();
  }
  job_.store(nullptr, std::memory_order_seq_cst);
  for (unsigned spins = 0; active_.load(std::memory_order_seq_cst) != 0; ++spins) {
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

BlockDealer::BlockDealer(size_t n_blocks, size_t n_parts)
    : n_parts_(std::clamp<size_t>(n_parts, 1, kMaxParts)) {
  for (size_t p = 0; p < n_parts_; ++p) {
    parts_[p].next.store(p * n_blocks / n_parts_, std::memory_order_relaxed);
    parts_[p].end = (p + 1) * n_blocks / n_parts_;
  }
}

size_t BlockDealer::claim(size_t own) {
  for (size_t k = 0; k < n_parts_; ++k) {
    Part& part = parts_[(own + k) % n_parts_];
    if (part.next.load(std::memory_order_relaxed) >= part.end)
      continue;
    size_t b = part.next.fetch_add(1, std::memory_order_relaxed);
    if (b < part.end)
      return b;
  }
  return kNone;
}

void ThreadPool::work_on(Job& job, size_t own) {
  for (size_t b; (b = job.deal.claim(own)) != BlockDealer::kNone;) {
    job.fn(job.ctx, b);
    job.remaining.fetch_sub(1, std::memory_order_acq_rel);
  }
}

void ThreadPool::worker_main(size_t part) {
  using Clock = std::chrono::steady_clock;
  // Start from the epoch before any job: a thread that starts late must still notice the
  // shutdown (or a job) published before it ran.
  uint32_t seen = 0;
  bool idle = true;  // no job yet: sleep right away instead of spinning at start-up
  for (;;) {
    uint32_t epoch;
    auto spin_start = Clock::now();
    unsigned spins = 0;
    while ((epoch = epoch_.load(std::memory_order_acquire)) == seen) {
      cpu_relax();
      if (idle || (++spins % 128 == 0 && Clock::now() - spin_start > kSpinTime)) {
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
    idle = false;
    if (stop_.load(std::memory_order_acquire))
      return;
    active_.fetch_add(1, std::memory_order_seq_cst);
    if (Job* job = job_.load(std::memory_order_seq_cst))
      work_on(*job, part);
    active_.fetch_sub(1, std::memory_order_seq_cst);
  }
}

}  // namespace ff::llvm_backend
