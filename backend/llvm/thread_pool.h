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
  /// thread's job occupies the pool, the blocks run on the calling thread instead. `fn` must
  /// not throw.
  void run(size_t n_blocks, BlockFn fn, void* ctx);

  /// Convenience: f(block) for every block; `f` must not throw.
  template <class F>
  void parallel_for(size_t n_blocks, F&& f) {
    run(n_blocks, [](void* c, size_t b) { (*static_cast<F*>(c))(b); }, &f);
  }

 private:
  void worker_main();
  void shutdown() noexcept;
  void wake_sleepers();
  bool work_on(uint32_t epoch);

  std::vector<std::thread> workers_;
  std::mutex submit_;  // one job at a time
  // The current job. Fields are atomics because a late worker may read them while the next
  // job is being set up; it then fails the claim on state_ and discards what it read.
  std::atomic<BlockFn> fn_{nullptr};
  std::atomic<void*> ctx_{nullptr};
  std::atomic<uint64_t> n_blocks_{0};
  alignas(64) std::atomic<uint64_t> state_{0};  // epoch << 32 | next unclaimed block
  alignas(64) std::atomic<uint64_t> remaining_{0};  // blocks of the job not yet finished
  alignas(64) std::atomic<uint32_t> epoch_{0};  // bumped per job; workers watch it
  std::atomic<uint32_t> n_sleeping_{0};
  std::mutex sleep_mutex_;  // idle workers sleep on wake_ after spinning a while
  std::condition_variable wake_;
  std::atomic<bool> stop_{false};
};

}  // namespace ff::llvm_backend
