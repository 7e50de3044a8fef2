// Arrays handed between threads: made on one thread, read, computed on, evaluated, scattered
// into, copied and destroyed on another, lazy or evaluated, and outliving the thread that made
// them (tracer/var_table.h explains how). Also run under ThreadSanitizer in CI.
#include <freezeframe/freezeframe.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <thread>
#include <vector>

#include "tracer/var_table.h"

namespace {

std::vector<float> ramp(size_t n, float scale = 1.f) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = static_cast<float>(i) * scale;
  return v;
}

/// Runs `fn` on a new thread and waits for it (exceptions come back to the caller).
template <class F>
auto on_thread(F&& fn) {
  auto task = std::async(std::launch::async, std::forward<F>(fn));
  return task.get();
}

uint64_t live_bytes() {
  ff::sync();
  return ff::stats().bytes_allocated;
}

/// Fails the test (and ends the process: a deadlocked library cannot be unwound) if `fn`
/// does not finish in time.
template <class F>
void within_seconds(int seconds, F&& fn, const char* what) {
  // No shared_ptr between the threads: ThreadSanitizer misreads libstdc++ 12's last-reference
  // check (a 64-bit load over two 32-bit counters) as a race. The thread is joined instead.
  std::promise<void> done;
  std::future<void> finished = done.get_future();
  std::thread worker([&] {
    fn();
    done.set_value();
  });
  if (finished.wait_for(std::chrono::seconds(seconds)) != std::future_status::ready) {
    std::fprintf(stderr, "FAILED: %s did not finish within %d s (deadlock?)\n", what, seconds);
    std::_Exit(1);
  }
  worker.join();
  finished.get();
}

}  // namespace

TEST_CASE("an evaluated array made on one thread is read on another", "[tracer][threads]") {
  ff::init("llvm");
  ff::Float x = ff::Float::from(ramp(1000));
  ff::eval(x);
  // A second array on this thread, so that the worker's own variable numbers overlap ours.
  ff::Float other = ff::Float::from(ramp(1000, 5.f));
  std::vector<float> got = on_thread([x] { return x.to_vector(); });
  CHECK(got == ramp(1000));
  CHECK(other.to_vector() == ramp(1000, 5.f));
}

TEST_CASE("a lazy array made on one thread is computed on and evaluated on another",
          "[tracer][threads]") {
  ff::init("llvm");
  ff::Float x = ff::Float::from(ramp(257));
  ff::Float lazy = x * 2.f + 1.f;  // not evaluated here
  ff::Bool mask = x > 100.f;       // a lazy Bool
  ff::UInt32 idx = ff::arange<ff::UInt32>(257);
  auto [y, z, n] = on_thread([&] {
    ff::Float dummy = ff::Float::from(ramp(3));  // the worker's own variables
    ff::Float y2 = ff::select(mask, lazy, -lazy) * static_cast<float>(dummy.to_vector().size());
    ff::Float z2 = ff::gather<ff::Float>(x, idx);
    return std::tuple{y2.to_vector(), z2.to_vector(), static_cast<size_t>(ff::width(lazy))};
  });
  REQUIRE(y.size() == 257);
  for (size_t i = 0; i < 257; ++i) {
    float l = static_cast<float>(i) * 2.f + 1.f;
    CHECK(y[i] == (i > 100 ? l : -l) * 3.f);
  }
  CHECK(z == ramp(257));
  CHECK(n == 257);
  // The lazy array was evaluated where it lives: this thread reads the same values.
  CHECK(lazy.to_vector()[5] == 11.f);
}

TEST_CASE("ff::eval of another thread's array evaluates it for every holder", "[tracer][threads]") {
  ff::init("llvm");
  ff::Float x = ff::Float::from(ramp(64));
  ff::Float lazy = ff::sqrt(x);
  uint64_t launches = ff::stats().launches;
  on_thread([lazy] { ff::eval(lazy); });
  CHECK(ff::stats().launches == launches + 1);
  CHECK(lazy.to_vector()[16] == 4.f);  // no second launch: already evaluated
  CHECK(ff::stats().launches == launches + 1);
}

TEST_CASE("arrays copied and destroyed on other threads release their memory",
          "[tracer][threads]") {
  ff::init("llvm");
  uint64_t baseline = live_bytes();
  {
    ff::Float x = ff::Float::from(ramp(4096));
    ff::Float y = x * 3.f;
    ff::eval(y);
    std::vector<std::thread> workers;
    for (int t = 0; t < 4; ++t)
      workers.emplace_back([copy = y, x]() mutable {
        ff::Float local = copy;  // copies and destroys handles of the main thread's table
        copy = ff::Float();
        CHECK(local.to_vector()[10] == 30.f);
      });
    for (auto& w : workers)
      w.join();
  }
  CHECK(live_bytes() == baseline);
}

TEST_CASE("an array outlives the thread that made it", "[tracer][threads]") {
  ff::init("llvm");
  uint64_t baseline = live_bytes();  // (this thread's table exists from here on)
  size_t tables = ff::detail::n_tables();
  ff::Float lazy, evaluated;
  ff::Int32 literal;
  std::thread([&] {
    ff::Float x = ff::Float::from(ramp(100));
    evaluated = x + 1.f;
    ff::eval(evaluated);
    lazy = x * x;  // still lazy when the thread ends
    literal = ff::Int32(7);
  }).join();
  CHECK(ff::detail::n_tables() == tables + 1);  // orphaned, kept for its variables
  CHECK(lazy.to_vector()[9] == 81.f);
  CHECK(evaluated.to_vector()[9] == 10.f);
  CHECK((literal + 1).to_vector() == std::vector<int32_t>{8});
  ff::Float sum = lazy + evaluated;  // computed on this thread from the orphan's arrays
  CHECK(sum.to_vector()[2] == 7.f);
  lazy = evaluated = sum = ff::Float();
  literal = ff::Int32();
  CHECK(ff::detail::n_tables() == tables);  // freed with its last variable
  CHECK(live_bytes() == baseline);
}

TEST_CASE("many threads share one input", "[tracer][threads]") {
  ff::init("llvm");
  ff::Float x = ff::Float::from(ramp(1000, 0.001f));
  ff::Float lazy_shared = x * 2.f;  // lazy: the first thread to use it evaluates it
  constexpr int kThreads = 8, kRounds = 25;
  std::atomic<int> wrong{0};
  std::vector<std::thread> workers;
  for (int t = 0; t < kThreads; ++t)
    workers.emplace_back([&, t] {
      for (int r = 0; r < kRounds; ++r) {
        ff::Float y = ff::fma(x, static_cast<float>(t), lazy_shared) + static_cast<float>(r);
        float want =
            0.001f * 10.f * static_cast<float>(t) + 0.001f * 10.f * 2.f + static_cast<float>(r);
        float got = y.to_vector()[10];
        if (std::abs(got - want) > 1e-4f)
          ++wrong;
        ff::Float s = ff::sum(x);
        if (std::abs(s.to_vector()[0] - 499.5f) > 1e-2f)
          ++wrong;
      }
    });
  for (auto& w : workers)
    w.join();
  CHECK(wrong == 0);
}

TEST_CASE("a scatter into another thread's array copies it first", "[tracer][threads]") {
  ff::init("llvm");
  ff::Float x = ff::Float::from(ramp(8));
  ff::eval(x);
  ff::Float updated = on_thread([x]() mutable {
    ff::scatter(x, ff::full<ff::Float>(-1.f, 2), ff::arange<ff::UInt32>(2));
    return x;
  });
  CHECK(x.to_vector() == ramp(8));  // the main thread's handle keeps the old contents
  std::vector<float> want = ramp(8);
  want[0] = want[1] = -1.f;
  CHECK(updated.to_vector() == want);
  // The other way round: a worker's evaluated array, scattered into here.
  ff::Float w = on_thread([] {
    ff::Float a = ff::Float::from(ramp(4));
    ff::eval(a);
    return a;
  });
  ff::Float keep = w;
  ff::scatter(w, ff::Float(9.f), ff::UInt32(3));
  CHECK(w.to_vector() == std::vector<float>{0.f, 1.f, 2.f, 9.f});
  CHECK(keep.to_vector() == ramp(4));
}

TEST_CASE("a scatter pending on one thread is seen by a reader on another", "[tracer][threads]") {
  ff::init("llvm");
  ff::Float t = ff::zeros<ff::Float>(4);
  ff::make_opaque(t);
  ff::scatter(t, ff::Float(5.f), ff::UInt32(2));  // pending on this thread
  std::vector<float> seen = on_thread([t] { return t.to_vector(); });
  CHECK(seen == std::vector<float>{0.f, 0.f, 5.f, 0.f});
}

TEST_CASE("make_opaque of another thread's literal turns it into a buffer", "[tracer][threads]") {
  ff::init("llvm");
  ff::Float k = ff::full<ff::Float>(2.f, 16);
  uint64_t allocs = ff::stats().allocs;
  on_thread([k] { ff::make_opaque(k); });
  CHECK(ff::stats().allocs == allocs + 1);
  CHECK((k * 3.f).to_vector() == std::vector<float>(16, 6.f));
}

TEST_CASE("two threads using each other's arrays at the same time do not deadlock",
          "[tracer][threads]") {
  ff::init("llvm");
  within_seconds(
      120,
      [] {
        ff::Float a = ff::Float::from(ramp(512));
        std::promise<ff::Float> from_worker;
        std::future<ff::Float> b_future = from_worker.get_future();
        std::atomic<int> wrong{0};
        std::thread worker([&] {
          ff::Float b = ff::Float::from(ramp(512, 2.f));
          from_worker.set_value(b);
          for (int i = 0; i < 200; ++i) {
            ff::Float c = a + b;  // a is the main thread's
            if (c.to_vector()[3] != 9.f)
              ++wrong;
          }
        });
        ff::Float b = b_future.get();
        for (int i = 0; i < 200; ++i) {
          ff::Float c = b - a;  // b is the worker's
          if (c.to_vector()[3] != 3.f)
            ++wrong;
        }
        worker.join();
        CHECK(wrong == 0);
      },
      "two threads trading arrays");
}

TEST_CASE("an array from another thread is an input of a recording made on a worker",
          "[tracer][threads][record]") {
  ff::init("llvm");
  ff::Float x = ff::Float::from(ramp(10));
  ff::Recording r = on_thread([x] {
    return ff::record({x}, [&] {
      return std::vector<ff::AnyArray>{x * 2.f +
                                       ff::cast<ff::Float>(ff::arange<ff::UInt32>(ff::width(x)))};
    });
  });
  CHECK(r.n_inputs() == 1);
  auto outs = r.replay({ff::Float::from(ramp(3))});
  CHECK(outs[0].as<ff::Float>().to_vector() == std::vector<float>{0.f, 3.f, 6.f});
}
