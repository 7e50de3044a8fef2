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

  /// Runs fn(ctx, b) for every b in [0, n_blocks) and returns when all are done. If another
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
    Job(BlockFn f, void* c, size_t n) : fn(f), ctx(c), n_blocks(n), remaining(n) {}

    BlockFn fn;
    void* ctx;
    size_t n_blocks;
    std::atomic<size_t> next{0};    // next unclaimed block
    std::atomic<size_t> remaining;  // blocks not yet finished
  };

  void worker_main();
  void shutdown() noexcept;
  void wake_sleepers();
  static void work_on(Job& job);

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
