// Recordings beyond one call: peak memory of a replay against the recorded run, whole-session
// capture ("record:llvm") over two threads, nesting (a replay inside ff::record), kernel-cache
// flushes between replays, and concurrent replays of one Recording on two threads.
#include <barrier>
#include <catch2/catch.hpp>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "support/errors.h"
#include "support/record_corpus.h"

using namespace ffr;
using ff::AnyArray;
using ff::Float;
using ff::Float64;
using ff::Int64;
using ff::UInt32;

namespace {

/// Evals inside, temporaries released along the way, a reduction, a gather, a compress.
Inputs busy(const Float& x) {
  Float y = x * 2.f + 1.f;
  ff::eval(y);
  UInt32 a = ff::arange<UInt32>(ff::width(x));
  Float z = ff::gather<Float>(y, ff::max_reduce(a) - a);
  ff::eval(z);
  y = Float();
  UInt32 idx = ff::compress(z > 1.5f);
  Float w = ff::gather<Float>(z, idx) + ff::sum(z);
  return {w, z * 0.5f};
}

size_t count_lines(const std::string& text, const std::string& needle) {
  std::istringstream is(text);
  std::string line;
  size_t n = 0;
  while (std::getline(is, line))
    n += line.find(needle) != std::string::npos;
  return n;
}

}  // namespace

TEST_CASE("peak memory: a replay at the recorded sizes peaks like the recorded run",
          "[record][memory]") {
  fresh();
  Inputs ins{make_array(ff::ScalarType::Float32, 100000, 7)};
  Float x = ins[0].as<Float>();
  ff::sync();

  ff::reset_peak_memory();
  uint64_t base = ff::stats().bytes_allocated;
  ff::Recording r = ff::record(
      ins, [&] { return busy(x); }, ff::RecordOptions{false});
  ff::sync();
  uint64_t recorded_peak = ff::stats().peak_bytes;
  ff::Recording optimised = ff::record(ins, [&] { return busy(x); });
  REQUIRE(ff::stats().bytes_allocated == base);  // the recorded run's outputs were dropped
  REQUIRE(recorded_peak > base);

  for (int round = 0; round < 2; ++round) {
    INFO("replay " << round);
    ff::reset_peak_memory();
    {
      Inputs outs = r.replay(ins);
      ff::sync();
      uint64_t replay_peak = ff::stats().peak_bytes;
      CHECK(replay_peak == recorded_peak);
    }
    REQUIRE(ff::stats().bytes_allocated == base);
    // The optimiser never raises the peak (here it lowers it: buffers live shorter).
    ff::reset_peak_memory();
    {
      Inputs outs = optimised.replay(ins);
      ff::sync();
      CHECK(ff::stats().peak_bytes <= recorded_peak);
    }
    REQUIRE(ff::stats().bytes_allocated == base);
  }
}

TEST_CASE("session capture: record:llvm sees both threads and host reads", "[record][capture]") {
  fresh("record:llvm");
  std::vector<double> host_a;
  std::vector<int64_t> host_b;
  {
    std::barrier sync_point(2);
    std::thread ta([&] {
      Float64 a = Float64::from(std::vector<double>(333, 1.5));
      sync_point.arrive_and_wait();
      Float64 b = a * 3.0 + 1.0;
      host_a = b.to_vector();
    });
    std::thread tb([&] {
      Int64 i = Int64::from(std::vector<int64_t>(444, 7));
      sync_point.arrive_and_wait();
      Int64 j = i * 7 - 2;
      host_b = j.to_vector();
    });
    ta.join();
    tb.join();
  }
  REQUIRE(host_a == std::vector<double>(333, 5.5));
  REQUIRE(host_b == std::vector<int64_t>(444, 47));

  ff::Recording c = ff::capture();
  std::string text = c.to_string();
  INFO(text);
  REQUIRE(c.n_kernels() == 2);  // one kernel per thread
  // Per thread: alloc + upload of the input, alloc + launch of the result, the host read,
  // and the two releases when the thread's arrays die.
  CHECK(c.n_ops() == 14);
  // Both threads' buffers: two float64 slots of 333 and two int64 slots of 444 elements.
  CHECK(count_lines(text, "float64 alloc") == 2);
  CHECK(count_lines(text, "int64 alloc") == 2);
  CHECK(count_lines(text, "recorded_size=333") == 2);
  CHECK(count_lines(text, "recorded_size=444") == 2);
  // Host reads are copies (device to host: a source, no destination), one per thread.
  CHECK(count_lines(text, ": copy src=") == 2);
  // Host uploads (from) are copies too.
  CHECK(count_lines(text, ": copy dst=") == 2);

  // A snapshot is a copy: later work does not change it, a new snapshot has more.
  Float later = Float::from(std::vector<float>(10, 1.f));
  (void)(later * 2.f).to_vector();
  REQUIRE(ff::capture().n_ops() > c.n_ops());
  REQUIRE(c.to_string() == text);
  // A capture can be inspected, not replayed.
  REQUIRE_THROWS_EXACTLY(c.replay({}), ff::FreezeError);

  // ff::record still works on a capturing stack.
  Float x = Float::from(std::vector<float>{1.f, 2.f, 3.f});
  ff::Recording r = ff::record({x}, [&] { return Inputs{x + 1.f}; });
  Inputs outs = r.replay({Float::from(std::vector<float>{5.f, 6.f})});
  REQUIRE(outs[0].as<Float>().to_vector() == std::vector<float>{6.f, 7.f});
}

TEST_CASE("session capture: plain llvm stack refuses ff::capture", "[record][capture]") {
  fresh("llvm");
  REQUIRE_THROWS_EXACTLY(ff::capture(), ff::Error);
  REQUIRE_THROWS_WITH(ff::capture(), Contains("record:llvm"));
  // Also after ff::record inserted a (non-capturing) recorder on demand.
  Float x = Float::from(std::vector<float>{1.f, 2.f});
  ff::Recording r = ff::record({x}, [&] { return Inputs{x * 2.f}; });
  REQUIRE_THROWS_EXACTLY(ff::capture(), ff::Error);
  (void)r;
}

TEST_CASE("nesting: replaying A inside ff::record of B records A's ops into B",
          "[record][nesting]") {
  fresh();
  Float xa = make_array(ff::ScalarType::Float32, 1000, 11).as<Float>();
  ff::Recording a = ff::record({xa}, [&] { return busy(xa); });

  Float xb = make_array(ff::ScalarType::Float32, 1000, 12).as<Float>();
  Float yb = make_array(ff::ScalarType::Float32, 1000, 13).as<Float>();
  auto b_body = [&a](const Float& x, const Float& y, bool replay_a) {
    Inputs inner = replay_a ? a.replay({x}) : busy(x);
    Float w = inner[0].as<Float>(), z = inner[1].as<Float>();
    return Inputs{w * 2.f, z + y, ff::sum(w)};
  };
  ff::Recording b = ff::record({xb, yb}, [&] { return b_body(xb, yb, true); });
  INFO("A: " << a.summary() << "\nB: " << b.summary());
  REQUIRE(b.n_ops() > a.n_ops());
  REQUIRE(b.n_kernels() > a.n_kernels());
  REQUIRE(b.n_inputs() == 2);

  for (size_t n : {1000u, 1u, 2345u, 517u}) {
    INFO("B replayed at " << n);
    Float x = make_array(ff::ScalarType::Float32, n, 100 + n).as<Float>();
    Float y = make_array(ff::ScalarType::Float32, n, 200 + n).as<Float>();
    // Reference: the same work traced (A's body inlined).
    std::vector<HostArray> want = snapshot(b_body(x, y, false));
    ff::sync();
    ff::Stats s0 = ff::stats();
    Inputs outs = b.replay({x, y});
    ff::Stats s1 = ff::stats();
    CHECK(s1.traced_kernels == s0.traced_kernels);
    CHECK(s1.compiles == s0.compiles);
    require_same(snapshot(outs), want, "B replay vs traced");
  }
  // A replay of A that fails its guard inside ff::record of C: the recording is refused with
  // that GuardError, nothing is left allocated, and the next nested recording works.
  {
    ff::Recording guarded = ff::record({xa}, [&] {
      if (xa.size() > 100)
        return Inputs{xa * 2.f};
      return Inputs{xa * 3.f};
    });
    Float small = make_array(ff::ScalarType::Float32, 10, 6).as<Float>();
    ff::sync();
    uint64_t baseline = ff::stats().bytes_allocated;
    auto c_body = [&] {
      Inputs inner = guarded.replay({small});
      return Inputs{inner[0].as<Float>() + 1.f};
    };
    REQUIRE_THROWS_EXACTLY(ff::record({small}, c_body), ff::GuardError);
    ff::sync();
    REQUIRE(ff::stats().bytes_allocated == baseline);
    Float big = make_array(ff::ScalarType::Float32, 200, 7).as<Float>();
    ff::Recording c = ff::record({big}, [&] {
      Inputs inner = guarded.replay({big});
      return Inputs{inner[0].as<Float>() + 1.f};
    });
    Float other = make_array(ff::ScalarType::Float32, 333, 8).as<Float>();
    require_same(snapshot(c.replay({other})), snapshot(Inputs{other * 2.f + 1.f}),
                 "nested replay after a refused one");
  }
  // A itself is unaffected by having been replayed inside B.
  Float x = make_array(ff::ScalarType::Float32, 300, 5).as<Float>();
  require_same(snapshot(a.replay({x})), snapshot(busy(x)), "A replay vs traced");
}

TEST_CASE("kernel flush: the next replay recompiles from the stored IR", "[record][flush]") {
  fresh();
  Float x0 = make_array(ff::ScalarType::Float32, 1000, 21).as<Float>();
  ff::Recording r = ff::record({x0}, [&] { return busy(x0); });
  const size_t n_ops = r.n_ops();
  REQUIRE(r.n_kernels() >= 2);
  (void)r.replay({make_array(ff::ScalarType::Float32, 500, 22)});

  for (int round = 0; round < 2; ++round) {
    INFO("flush round " << round);
    Float x = make_array(ff::ScalarType::Float32, 777 + round, 23).as<Float>();
    std::vector<HostArray> want = snapshot(busy(x));  // traced before the flush
    ff::flush_kernel_cache();
    ff::sync();
    ff::Stats s0 = ff::stats();
    Inputs outs = r.replay({x});
    ff::Stats s1 = ff::stats();
    CHECK(s1.compiles - s0.compiles == r.n_kernels());  // recompiled from the stored IR
    CHECK(s1.traced_kernels == s0.traced_kernels);      // never a re-record
    require_same(snapshot(outs), want, "replay after a flush vs traced");
    REQUIRE(r.n_ops() == n_ops);

    ff::Stats s2 = ff::stats();
    Inputs again = r.replay({x});
    ff::Stats s3 = ff::stats();
    CHECK(s3.compiles == s2.compiles);  // the rebuilt plan is reused
    require_same(snapshot(again), want, "second replay after a flush");
  }
}

TEST_CASE("shutdown and init: a replay plan is rebuilt for the new backend object",
          "[record][flush]") {
  // The new backend may sit at the address of the old one; plans are keyed by
  // Backend::instance_id, which is never reused, so each new stack compiles the kernels again.
  fresh();
  Float x0 = make_array(ff::ScalarType::Float32, 1000, 31).as<Float>();
  ff::Recording r = ff::record({x0}, [&] { return busy(x0); });
  for (int round = 0; round < 4; ++round) {
    INFO("round " << round);
    ff::shutdown();
    ff::init("llvm");
    Float x = make_array(ff::ScalarType::Float32, 300 + round, 32).as<Float>();
    ff::sync();
    ff::Stats s0 = ff::stats();  // a fresh backend: generation 0, like the old one's
    Inputs outs = r.replay({x});
    CHECK(ff::stats().compiles - s0.compiles == r.n_kernels());
    require_same(snapshot(outs), snapshot(busy(x)), "replay on a fresh stack vs traced");
  }
}

TEST_CASE("threads: two threads replay one Recording concurrently", "[record][threads]") {
  fresh();
  Float x0 = make_array(ff::ScalarType::Float32, 1000, 31).as<Float>();
  ff::Recording r = ff::record({x0}, [&] { return busy(x0); });
  (void)r.replay({make_array(ff::ScalarType::Float32, 10, 32)});  // plan built once here

  std::mutex m;
  std::vector<std::string> failures;
  std::barrier start(2);
  auto worker = [&](size_t n, uint64_t seed) {
    try {
      // Tracing state is per thread: this thread builds its own arrays and reference.
      Float x = make_array(ff::ScalarType::Float32, n, seed).as<Float>();
      std::vector<HostArray> want = snapshot(busy(x));
      std::vector<HostArray> before = snapshot(Inputs{x});
      start.arrive_and_wait();
      for (int it = 0; it < 25; ++it) {
        std::vector<HostArray> got = snapshot(r.replay({x}));
        for (size_t k = 0; k < want.size(); ++k) {
          std::string diff = compare(got.at(k), want[k]);
          if (!diff.empty()) {
            std::lock_guard lock(m);
            failures.push_back("n=" + std::to_string(n) + " iteration " + std::to_string(it) +
                               " output " + std::to_string(k) + ": " + diff);
          }
        }
      }
      if (compare(snapshot(Inputs{x})[0], before[0]) != "") {
        std::lock_guard lock(m);
        failures.push_back("n=" + std::to_string(n) + ": the input changed");
      }
    } catch (const std::exception& e) {
      std::lock_guard lock(m);
      failures.push_back("n=" + std::to_string(n) + " threw: " + e.what());
    }
  };
  std::thread t1(worker, 1234, 41);
  std::thread t2(worker, 20001, 42);
  t1.join();
  t2.join();
  std::string all;
  for (auto& f : failures)
    all += f + "\n";
  INFO(all);
  REQUIRE(failures.empty());
}

TEST_CASE("threads: two threads record concurrently, each only its own work", "[record][threads]") {
  fresh();
  // Alone first: the op counts a recording of busy() must have.
  size_t alone_ops = 0, alone_kernels = 0;
  {
    Float x = make_array(ff::ScalarType::Float32, 1000, 51).as<Float>();
    ff::Recording r = ff::record({x}, [&] { return busy(x); });
    alone_ops = r.n_ops();
    alone_kernels = r.n_kernels();
  }
  std::mutex m;
  std::vector<std::string> failures;
  std::barrier start(2);
  auto worker = [&](size_t n, uint64_t seed) {
    try {
      Float x = make_array(ff::ScalarType::Float32, 1000, seed).as<Float>();
      start.arrive_and_wait();
      for (int it = 0; it < 10; ++it) {
        ff::Recording r = ff::record({x}, [&] { return busy(x); });
        // Traced work on this thread between recordings is not recorded anywhere else.
        Float noise = x * 7.f - 1.f;
        ff::eval(noise);
        if (r.n_ops() != alone_ops || r.n_kernels() != alone_kernels) {
          std::lock_guard lock(m);
          failures.push_back("seed " + std::to_string(seed) + " iteration " + std::to_string(it) +
                             ": " + r.summary());
        }
        Float y = make_array(ff::ScalarType::Float32, n, seed + it).as<Float>();
        std::vector<HostArray> want = snapshot(busy(y));
        std::vector<HostArray> got = snapshot(r.replay({y}));
        for (size_t k = 0; k < want.size(); ++k) {
          std::string diff = compare(got.at(k), want[k]);
          if (!diff.empty()) {
            std::lock_guard lock(m);
            failures.push_back("seed " + std::to_string(seed) + " output " + std::to_string(k) +
                               ": " + diff);
          }
        }
      }
    } catch (const std::exception& e) {
      std::lock_guard lock(m);
      failures.push_back("seed " + std::to_string(seed) + " threw: " + e.what());
    }
  };
  std::thread t1(worker, 2222, 61);
  std::thread t2(worker, 333, 62);
  t1.join();
  t2.join();
  std::string all;
  for (auto& f : failures)
    all += f + "\n";
  INFO(all);
  REQUIRE(failures.empty());
}
