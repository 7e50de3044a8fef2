// A fork-join pool for launches and host algorithms: the caller thread works too, idle workers
// spin briefly before sleeping so back-to-back launches dispatch in about a microsecond.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

namespace ff::llvm_backend {

/// How a job's blocks are handed out: [0, n_blocks) in contiguous parts, one per thread. A
/// thread claims from its own part in order, then the first unclaimed blocks of the parts
/// after it (wrapping): every thread streams through one region, and a late one is covered
/// for. Thread-safe (a fetch_add per claim).
class BlockDealer {
 public:
  /// Parts at most: threads past this many share parts.
  static constexpr size_t kMaxParts = 64;
  static constexpr size_t kNone = SIZE_MAX;

  /// n_parts is clamped to [1, kMaxParts].
  BlockDealer(size_t n_blocks, size_t n_parts);

  size_t n_parts() const { return n_parts_; }

  /// The next block for the thread of part `own` (taken modulo n_parts), or kNone when every
  /// block is claimed.
  size_t claim(size_t own);

 private:
  // [next, end) are unclaimed; a cursor past its end stays so. Own cache line: its owner
  // claims from it at every block.
  struct alignas(64) Part {
    std::atomic<size_t> next{0};
    size_t end = 0;
  };

  size_t n_parts_;
  Part parts_[kMaxParts];
};

class ThreadPool {
 public:
  using BlockFn = void (*)(void* ctx, size_t block);

  /// `n_threads` counts the caller: n_threads - 1 workers are started (0 = every core).
  explicit ThreadPool(unsigned n_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  /// Threads that share a job, the caller included.
  unsigned n_threads() const { return static_cast<unsigned>(workers_.size()) + 1; }

  /// Runs fn(ctx, b) for every b in [0, n_blocks) and returns when all are done, the blocks
  /// dealt by a BlockDealer with a part per thread (the caller's first; blocks handed out
  /// round-robin made W2 ~8% slower: docs/llvm-backend-parallel.md). If another
  /// thread's job occupies the pool, the blocks run on the calling thread instead. Workers
  /// that went to sleep are woken only if `wake` (waking costs tens of microseconds, more
  /// than a small job takes); spinning workers always join. `fn` must not throw.
  void run(size_t n_blocks, BlockFn fn, void* ctx, bool wake = true);

  /// Convenience: f(block) for every block; `f` must not throw.
  template <class F>
  void parallel_for(size_t n_blocks, F&& f, bool wake = true) {
    run(
        n_blocks, [](void* c, size_t b) { (*static_cast<F*>(c))(b); }, &f, wake);
  }

 private:
  // One job, on the stack of the thread that runs it.
  struct Job {
    Job(BlockFn f, void* c, size_t n, size_t n_parts)
        : fn(f), ctx(c), remaining(n), deal(n, n_parts) {}

    BlockFn fn;
    void* ctx;
    std::atomic<size_t> remaining;  // blocks not yet finished
    BlockDealer deal;
  };

  void worker_main(size_t part);
  void shutdown() noexcept;
  void wake_sleepers();
  // Runs blocks of `job` until none is unclaimed; `own`: the thread's part.
  static void work_on(Job& job, size_t own);

  std::vector<std::thread> workers_;
  std::mutex submit_;  // one job at a time
  // The job being run, or null. A worker announces itself in active_ before reading it; the
  // owner clears job_ and waits for active_ to drain before the Job leaves its stack.
  alignas(64) std::atomic<Job*> job_{nullptr};
  alignas(64) std::atomic<uint32_t> active_{0};
  alignas(64) std::atomic<uint32_t> epoch_{0};  // bumped per job; workers watch it
  std::atomic<uint32_t> n_sleeping_{0};
  std::mutex sleep_mutex_;  // idle workers sleep on wake_ after spinning a while
  std::condition_variable wake_;
  std::atomic<bool> stop_{false};
};

}  // namespace ff::llvm_backend
