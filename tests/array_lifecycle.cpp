// init / shutdown / re-init, automatic initialisation, the kernel cache flush and the memory
// counters. Clean under ASan + LeakSanitizer is part of the contract (the CI's sanitizer leg).
#include <freezeframe/freezeframe.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "support/reference.h"

using namespace fft;

namespace {

/// The stack a plain ff::init() builds: FF_BACKEND, default "llvm".
std::string default_backend() {
  const char* e = std::getenv("FF_BACKEND");
  return e && *e ? e : "llvm";
}

/// A little of everything: a fused kernel, a reduction, a scatter, a compress.
void some_work(size_t n, uint64_t salt) {
  const auto a = random_vector<int32_t>(n, salt);
  ff::Int32 x = to_array(a);
  ff::Int32 y = x * 3 + 1;
  ff::Int32 s = ff::sum(y);
  ff::Int32 t = ff::zeros<ff::Int32>(n);
  ff::scatter(t, y, ff::arange<ff::UInt32>(n));
  ff::UInt32 c = ff::compress(x > 0);
  std::vector<int32_t> want(n);
  uint32_t want_s = 0;
  size_t want_c = 0;
  for (size_t i = 0; i < n; ++i) {
    want[i] = r_add<int32_t>(r_mul<int32_t>(a[i], 3), 1);
    want_s += static_cast<uint32_t>(want[i]);
    want_c += a[i] > 0;
  }
  check_exact("x * 3 + 1", y, want);
  check_exact("scatter of x * 3 + 1", t, want);
  CHECK(scalar_of(s) == static_cast<int32_t>(want_s));
  CHECK(c.size() == want_c);
}

}  // namespace

TEST_CASE("shutdown then init again gives a working library", "[tracer][init]") {
  ff::init();
  CHECK(ff::is_initialized());
  some_work(1000, 500);
  ff::shutdown();
  CHECK_FALSE(ff::is_initialized());
  ff::init("llvm");
  CHECK(ff::is_initialized());
  CHECK(ff::backend_name() == "llvm");
  some_work(1000, 501);
  ff::shutdown();
}

TEST_CASE("init followed at once by shutdown returns with no work in between", "[tracer][init]") {
  // Runs on a helper thread so a hang fails this test after a while instead of blocking ctest
  // until its timeout; a hung library cannot be unwound, so the process then exits at once.
  auto done = std::make_shared<std::promise<void>>();
  std::future<void> finished = done->get_future();
  std::thread([done] {
    for (int i = 0; i < 50; ++i) {
      ff::init("llvm");
      ff::shutdown();
    }
    done->set_value();
  }).detach();
  if (finished.wait_for(std::chrono::seconds(60)) != std::future_status::ready) {
    std::fprintf(stderr,
                 "FAILED: 50 x (ff::init(\"llvm\"); ff::shutdown();) did not finish within 60 s: "
                 "shutdown hangs when no work ran since init\n");
    std::fflush(stderr);
    std::_Exit(EXIT_FAILURE);
  }
  SUCCEED("50 init/shutdown pairs finished");
}

TEST_CASE("a loop of init work shutdown leaves no buffer behind and works the same each round",
          "[tracer][init]") {
  // Native leaks across the rounds are LeakSanitizer's to find (the CI's sanitizer leg); the
  // backend's own counters show that every buffer of a round went back before its shutdown.
  uint64_t launches = 0, allocs = 0;
  for (int round = 0; round < 5; ++round) {
    INFO("round " << round);
    ff::init("llvm");
    CHECK(ff::stats().bytes_allocated == 0);
    some_work(round % 2 ? 7 : 10000, 502 + static_cast<uint64_t>(round));
    ff::sync();
    const ff::Stats s = ff::stats();
    CHECK(s.bytes_allocated == 0);  // the arrays of some_work are gone, and so are their buffers
    if (round == 0) {
      launches = s.launches;
      allocs = s.allocs;
      CHECK(launches > 0);
    }
    CHECK(s.launches == launches);  // a fresh backend each round runs the same work
    CHECK(s.allocs == allocs);
    ff::shutdown();
  }
  ff::shutdown();  // a second shutdown is harmless
}

TEST_CASE("arrays initialise the default llvm backend when init was not called", "[tracer][init]") {
  ff::shutdown();
  CHECK_FALSE(ff::is_initialized());
  ff::Float x = ff::arange<ff::Float>(10) * 0.5f;
  check_exact("arange(10) * 0.5", x, 10, [](size_t i) { return 0.5f * static_cast<float>(i); });
  CHECK(ff::is_initialized());
  CHECK(ff::backend_name() == default_backend());
  ff::shutdown();
  // and again after a shutdown
  some_work(100, 503);
  CHECK(ff::is_initialized());
}

TEST_CASE("arrays still alive at shutdown are destroyed safely afterwards", "[tracer][init]") {
  ff::init();
  {
    ff::Float kept = to_array(std::vector<float>{1, 2, 3});
    ff::eval(kept);
    ff::Float lazy = kept * 2.f;
    ff::Float lit = 5.f;
    ff::shutdown();
  }                    // destroyed with no backend stack
  some_work(10, 505);  // and the next use starts a fresh one
}

TEST_CASE("arrays alive across shutdown and init keep their contents", "[tracer][init]") {
  ff::init();
  ff::Float kept = to_array(std::vector<float>{1, 2, 3});
  ff::eval(kept);
  ff::Float lazy = kept * 2.f;
  ff::shutdown();
  // init.h: "arrays still alive keep their buffers until they are destroyed"
  ff::init();
  check_exact("an evaluated array across shutdown", kept, std::vector<float>{1, 2, 3});
  check_exact("a lazy array across shutdown", lazy, std::vector<float>{2, 4, 6});
}

TEST_CASE("flush_kernel_cache bumps the generation and the next use recompiles",
          "[tracer][cache]") {
  ff::shutdown();
  ff::init();
  ff::Float x = to_array(random_vector<float>(100, 504));
  auto run = [&] {
    ff::Float y = ff::exp(x) + 1.f;
    ff::eval(y);
  };
  const ff::Stats cold = delta(run);
  CHECK(cold.compiles == 1);
  const ff::Stats warm = delta(run);
  CHECK(warm.compiles == 0);
  const ff::Stats flushed = delta([] { ff::flush_kernel_cache(); });
  CHECK(flushed.generation == 1);
  const ff::Stats after = delta(run);
  CHECK(after.compiles == 1);
}

TEST_CASE("memory counters follow allocations and reset_peak_memory restarts the peak",
          "[tracer][memory]") {
  ff::shutdown();
  ff::init();
  const size_t n = kLargeSize;
  const ff::Stats before = ff::stats();
  {
    ff::Float a = ff::full<ff::Float>(1.f, n) + ff::arange<ff::Float>(n);
    ff::eval(a);
    ff::sync();
    const ff::Stats live = ff::stats();
    CHECK(live.allocs == before.allocs + 1);  // one fused kernel, one output buffer
    CHECK(live.bytes_allocated == before.bytes_allocated + n * sizeof(float));
    CHECK(live.peak_bytes == live.bytes_allocated);
  }
  ff::sync();
  const ff::Stats released = ff::stats();
  CHECK(released.bytes_allocated == before.bytes_allocated);  // the buffer went back
  CHECK(released.peak_bytes == before.bytes_allocated + n * sizeof(float));
  ff::reset_peak_memory();
  const ff::Stats reset = ff::stats();
  CHECK(reset.peak_bytes == reset.bytes_allocated);
  {
    ff::Float64 b = ff::zeros<ff::Float64>(1000);
    ff::make_opaque(b);
    CHECK(ff::stats().peak_bytes == reset.bytes_allocated + 1000 * sizeof(double));
  }
  // reading back counts as a host read
  ff::Float c = to_array(std::vector<float>{1, 2});
  const ff::Stats read = delta([&] { (void)c.to_vector(); });
  CHECK(read.host_reads == 1);
}

TEST_CASE("the CPU backend's thread count comes from InitOptions, then FF_THREADS",
          "[tracer][init][threads]") {
  auto work = [] {
    ff::Float x = ff::arange<ff::Float>(1 << 20);
    ff::Float y = ff::sum(x * 0.f + 1.f);  // large enough to be split over the pool
    return y.to_vector()[0];
  };
  ::unsetenv("FF_THREADS");
  ff::init("llvm", ff::InitOptions{1});
  CHECK(ff::stats().threads == 1);
  CHECK(work() == 1048576.f);
  ff::init("llvm", ff::InitOptions{3});
  CHECK(ff::stats().threads == 3);
  CHECK(work() == 1048576.f);
  ff::init("count:llvm");  // decorators report the backend below them
  CHECK(ff::stats().threads == std::max(1u, std::thread::hardware_concurrency()));

  ::setenv("FF_THREADS", "2", 1);
  ff::init();
  CHECK(ff::stats().threads == 2);
  ff::init("llvm", ff::InitOptions{1});  // the explicit option wins
  CHECK(ff::stats().threads == 1);
  for (const char* bad : {"0", "two", "-3", "2x", "100000"}) {
    INFO(bad);
    ::setenv("FF_THREADS", bad, 1);
    REQUIRE_THROWS_AS(ff::init("llvm"), ff::Error);
    REQUIRE_THROWS_WITH(ff::init("llvm"), Catch::Matchers::Contains("FF_THREADS"));
  }
  ::unsetenv("FF_THREADS");
  ff::init("llvm");
  CHECK(work() == 1048576.f);  // the call after a failed one
}
