// The cuda backend driven directly through the Backend interface: memory, copies (through the
// page-locked staging chunks), fills, the whole IR corpus against the PTX reference
// interpreter, reduce / prefix_sum / compress, the kernel cache, the allocator and the error
// paths. Compiled twice: into the host test executable on the simulated driver, and into the
// GPU executable on the real one (where every case first calls require_cuda()).
#include "backend/cuda/cuda_backend.h"

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <thread>
#include <type_traits>
#include <vector>

#include "backend/cuda/ptx_builtins.h"
#include "cuda/backend_env.h"
#include "cuda/ir_corpus.h"
#include "freezeframe/errors.h"

using namespace ff;
using ffcuda::large_size;
using ffcuda::make_cuda_backend;
using ffcuda::require_cuda;

#include "support/host_values.h"

namespace {

using ff_test::Bool8;
using ff_test::copy_kernel;
using ff_test::type_of;

// Wrapping integer arithmetic (in the unsigned type: no signed overflow in the reference).
template <class T>
T wrap_add(T a, T b) {
  if constexpr (std::is_integral_v<T>)
    return static_cast<T>(static_cast<std::make_unsigned_t<T>>(a) +
                          static_cast<std::make_unsigned_t<T>>(b));
  else
    return T(a + b);
}

template <class T>
T wrap_mul(T a, T b) {
  if constexpr (std::is_integral_v<T>)
    return static_cast<T>(static_cast<std::make_unsigned_t<T>>(a) *
                          static_cast<std::make_unsigned_t<T>>(b));
  else
    return T(a * b);
}

struct Env {
  std::unique_ptr<Backend> be = make_cuda_backend();
  std::vector<void*> owned;

  ~Env() {
    for (void* p : owned)
      be->release(p);
  }

  template <class T>
  T* alloc(size_t n) {
    auto* p = static_cast<T*>(be->alloc(type_of<T>(), n, {}));
    owned.push_back(p);
    return p;
  }

  template <class T>
  T* upload(const std::vector<T>& v) {
    T* p = alloc<T>(v.size());
    be->copy(p, v.data(), v.size() * sizeof(T), CopyKind::HostToDevice);
    return p;
  }

  template <class T>
  std::vector<T> download(const T* p, size_t n) {
    std::vector<T> v(n);
    be->copy(v.data(), p, n * sizeof(T), CopyKind::DeviceToHost);
    return v;
  }
};

KernelIR index_plus(int32_t c) {
  KernelIR ir;
  ir.params = {{ParamKind::BufferOut, ScalarType::Int32}};
  uint32_t i = ir.emit(IrOp::Index, ScalarType::Int32);
  uint32_t k = ir.emit(IrOp::Literal, ScalarType::Int32, {}, static_cast<uint32_t>(c));
  ir.emit(IrOp::Store, ScalarType::Int32, {0, ir.emit(IrOp::Add, ScalarType::Int32, {i, k})});
  ir.finalize();
  return ir;
}

template <class F>
void for_each_numeric(F&& f) {
  f.template operator()<int32_t>();
  f.template operator()<uint32_t>();
  f.template operator()<int64_t>();
  f.template operator()<uint64_t>();
  f.template operator()<float>();
  f.template operator()<double>();
}

}  // namespace

TEST_CASE("backend: load and store round-trip every type at tail sizes", "[cuda_backend]") {
  if (!require_cuda())
    return;
  Env env;
  auto check = [&]<class T>() {
    KernelIR ir = copy_kernel(type_of<T>());
    for (size_t n : {size_t(1), size_t(7), size_t(255), size_t(257), size_t(1000), large_size()}) {
      std::vector<T> in(n);
      for (size_t i = 0; i < n; ++i)
        in[i] = std::is_same_v<T, Bool8> ? T(i % 3 == 0) : T(i * 3 + 1);
      T* out = env.alloc<T>(n + 1);
      env.be->fill(out, n + 1, sizeof(T), 0x5A5A5A5A5A5A5A5Aull);
      env.be->launch(
          env.be->compile(ir), n, {},
          std::vector<KernelArg>{KernelArg::buffer(env.upload(in)), KernelArg::buffer(out)});
      auto got = env.download(out, n + 1);
      INFO(to_string(type_of<T>()) << " n=" << n);
      CHECK(std::equal(in.begin(), in.end(), got.begin()));
      uint64_t guard = 0;
      std::memcpy(&guard, &got[n], sizeof(T));
      CHECK(guard ==
            (0x5A5A5A5A5A5A5A5Aull & (sizeof(T) == 8 ? ~0ull : (1ull << (8 * sizeof(T))) - 1)));
    }
  };
  check.operator()<Bool8>();
  for_each_numeric(check);
}

TEST_CASE("backend: every IR corpus kernel matches the PTX reference interpreter bit for bit",
          "[cuda_backend][corpus]") {
  if (!require_cuda())
    return;
  Env env;
  size_t n = 0;
  for (const auto& c : ffcuda::ir_corpus()) {
    INFO(c.name);
    ffcuda::Buffers got = ffcuda::run_on_backend(*env.be, c);
    ffcuda::Buffers want = ffcuda::run_on_interpreter(c);
    // Only correctly rounded instructions: exp/log/sin/cos included, the GPU agrees exactly.
    CHECK(ffcuda::compare(c, got, want, 0) == "");
    ++n;
  }
  CHECK(env.be->stats().compiles == n);
}

namespace {

template <class T>
T reduce_ref(ReduceOp op, const std::vector<T>& v) {
  using L = std::numeric_limits<T>;
  T r{};
  switch (op) {
    case ReduceOp::Add:
      r = T(0);
      for (T x : v)
        r = wrap_add(r, x);
      break;
    case ReduceOp::Mul:
      r = T(1);
      for (T x : v)
        r = wrap_mul(r, x);
      break;
    case ReduceOp::Min:
      r = L::has_infinity ? L::infinity() : L::max();
      for (T x : v)
        r = std::min(r, x);
      break;
    case ReduceOp::Max:
      r = L::has_infinity ? -L::infinity() : L::lowest();
      for (T x : v)
        r = std::max(r, x);
      break;
    case ReduceOp::And:
      if constexpr (std::is_integral_v<T>) {
        r = T(~T(0));
        for (T x : v)
          r = T(r & x);
      }
      break;
    case ReduceOp::Or:
      if constexpr (std::is_integral_v<T>) {
        r = T(0);
        for (T x : v)
          r = T(r | x);
      }
      break;
  }
  return r;
}

}  // namespace

TEST_CASE("backend: reduce, every op and type, count 0 gives the identity", "[cuda_backend]") {
  if (!require_cuda())
    return;
  Env env;
  for_each_numeric([&]<class T>() {
    for (int o = 0; o < 6; ++o) {
      auto op = ReduceOp(o);
      T* out = env.alloc<T>(1);
      if (!ff::reduce_defined(op, type_of<T>())) {
        CHECK_THROWS_AS(env.be->reduce(op, type_of<T>(), out, 1, out), BackendError);
        continue;
      }
      for (size_t n : {size_t(0), size_t(1), size_t(1000), large_size()}) {
        std::mt19937_64 g(n + o);
        std::vector<T> v(n);
        for (auto& x : v) {
          if constexpr (std::is_floating_point_v<T>)
            x = op == ReduceOp::Mul ? T(g() % 101 == 0 ? -1 : 1) : T(int(g() % 9) - 4);
          else
            x = static_cast<T>(g());
        }
        env.be->reduce(op, type_of<T>(), env.upload(v), n, out);
        T got = env.download(out, 1)[0];
        INFO(to_string(type_of<T>()) << " op " << o << " n=" << n);
        CHECK(got == reduce_ref(op, v));
      }
    }
  });
  // Bool: Min/And = all, Max/Or = any (nonzero bytes are true); float Min/Max skip NaN.
  std::vector<Bool8> mask(5000, 1);
  mask[4321] = 0;
  Bool8* m = env.upload(mask);
  Bool8* b = env.alloc<Bool8>(1);
  env.be->reduce(ReduceOp::And, ScalarType::Bool, m, mask.size(), b);
  CHECK(env.download(b, 1)[0] == 0);
  env.be->reduce(ReduceOp::Max, ScalarType::Bool, m, mask.size(), b);
  CHECK(env.download(b, 1)[0] == 1);
  CHECK_THROWS_AS(env.be->reduce(ReduceOp::Add, ScalarType::Bool, m, 1, b), BackendError);
  float nan = std::numeric_limits<float>::quiet_NaN();
  float* f = env.upload(std::vector<float>{nan, 3.0f, -2.0f, nan});
  float* fo = env.alloc<float>(1);
  env.be->reduce(ReduceOp::Min, ScalarType::Float32, f, 4, fo);
  CHECK(env.download(fo, 1)[0] == -2.0f);
  env.be->reduce(ReduceOp::Max, ScalarType::Float32, f, 1, fo);
  CHECK(std::isnan(env.download(fo, 1)[0]));  // only NaN: NaN
  env.be->reduce(ReduceOp::Min, ScalarType::Float32, f, 0, fo);
  CHECK(env.download(fo, 1)[0] == std::numeric_limits<float>::infinity());
}

TEST_CASE("backend: prefix_sum inclusive and exclusive, in place", "[cuda_backend]") {
  if (!require_cuda())
    return;
  Env env;
  for_each_numeric([&]<class T>() {
    for (bool exclusive : {false, true})
      for (size_t n : {size_t(0), size_t(1), size_t(7), size_t(1000), large_size()}) {
        std::mt19937_64 g(n * 3 + exclusive);
        std::vector<T> v(n), want(n);
        for (auto& x : v)
          x = std::is_floating_point_v<T> ? T(int(g() % 9) - 4) : static_cast<T>(g());
        T acc = T(0);
        for (size_t i = 0; i < n; ++i) {
          T next = wrap_add(acc, v[i]);
          want[i] = exclusive ? acc : next;
          acc = next;
        }
        INFO(to_string(type_of<T>()) << (exclusive ? " exclusive" : " inclusive") << " n=" << n);
        T* in = env.upload(v);
        T* out = env.alloc<T>(n);
        env.be->prefix_sum(type_of<T>(), exclusive, in, n, out);
        CHECK(env.download(out, n) == want);
        env.be->prefix_sum(type_of<T>(), exclusive, in, n, in);
        CHECK(env.download(in, n) == want);
      }
  });
  Bool8* b = env.alloc<Bool8>(4);
  CHECK_THROWS_AS(env.be->prefix_sum(ScalarType::Bool, false, b, 4, b), BackendError);
}

TEST_CASE("backend: compress returns the indices of true entries in order", "[cuda_backend]") {
  if (!require_cuda())
    return;
  Env env;
  for (size_t n : {size_t(0), size_t(1), size_t(17), size_t(1000), large_size()})
    for (int density : {0, 30, 100}) {
      std::mt19937_64 g(n + density);
      std::vector<Bool8> mask(n);
      std::vector<uint32_t> want;
      for (size_t i = 0; i < n; ++i) {
        mask[i] = int(g() % 100) < density;
        if (mask[i])
          want.push_back(uint32_t(i));
      }
      uint64_t reads = env.be->stats().host_reads;
      uint32_t* out = env.alloc<uint32_t>(n);
      size_t count = env.be->compress(env.upload(mask), n, out);
      INFO("n=" << n << " density " << density);
      REQUIRE(count == want.size());
      CHECK(env.download(out, count) == want);
      CHECK(env.be->stats().host_reads >= reads + 1);
    }
}

TEST_CASE("backend: fill patterns of 1, 2, 4 and 8 bytes and copies of every kind",
          "[cuda_backend]") {
  if (!require_cuda())
    return;
  Env env;
  for (size_t n : {size_t(0), size_t(1), size_t(33), large_size()}) {
    auto* b1 = env.alloc<Bool8>(n);
    auto* b2 = static_cast<uint16_t*>(env.be->alloc(ScalarType::Bool, 2 * n, {}));
    env.owned.push_back(b2);
    auto* b4 = env.alloc<uint32_t>(n);
    auto* b8 = env.alloc<uint64_t>(n);
    auto* b8s = env.alloc<uint64_t>(n);
    env.be->fill(b1, n, 1, 0x1234);
    env.be->fill(b2, n, 2, 0xABCDEF);
    env.be->fill(b4, n, 4, 0x1122334455ull);
    env.be->fill(b8, n, 8, 0x8877665544332211ull);
    env.be->fill(b8s, n, 8, 0x0102030401020304ull);  // equal halves: a 32-bit memset
    std::vector<uint16_t> v2(n);
    env.be->copy(v2.data(), b2, 2 * n, CopyKind::DeviceToHost);
    INFO("n=" << n);
    CHECK(std::all_of(v2.begin(), v2.end(), [](uint16_t x) { return x == 0xCDEF; }));
    auto v1 = env.download(b1, n);
    CHECK(std::all_of(v1.begin(), v1.end(), [](Bool8 x) { return x == 0x34; }));
    auto v4 = env.download(b4, n);
    CHECK(std::all_of(v4.begin(), v4.end(), [](uint32_t x) { return x == 0x22334455u; }));
    auto v8 = env.download(b8, n);
    CHECK(std::all_of(v8.begin(), v8.end(), [](uint64_t x) { return x == 0x8877665544332211ull; }));
    auto v8s = env.download(b8s, n);
    CHECK(
        std::all_of(v8s.begin(), v8s.end(), [](uint64_t x) { return x == 0x0102030401020304ull; }));
    auto* c8 = env.alloc<uint64_t>(n);
    env.be->copy(c8, b8, 8 * n, CopyKind::DeviceToDevice);
    CHECK(env.download(c8, n) == v8);
  }
  auto* p = env.alloc<uint32_t>(4);
  CHECK_THROWS_AS(env.be->fill(p, 4, 3, 0), BackendError);
  CHECK_THROWS_AS(env.be->copy(nullptr, p, 4, CopyKind::DeviceToHost), BackendError);
  // Larger than the two 8 MiB staging chunks: several rounds each way, contents intact.
  size_t big = (size_t{20} << 20) / 4 + 12345;
  std::vector<uint32_t> host(big);
  for (size_t i = 0; i < big; ++i)
    host[i] = uint32_t(i * 2654435761u);
  uint32_t* dev = env.upload(host);
  host.assign(big, 0);  // the upload must not read the caller's memory after returning
  std::vector<uint32_t> back = env.download(dev, big);
  bool ok = true;
  for (size_t i = 0; i < big && ok; ++i)
    ok = back[i] == uint32_t(i * 2654435761u);
  CHECK(ok);
}

TEST_CASE("backend: allocator caches blocks, count 0 is unique, peak is tracked, trimmed on OOM",
          "[cuda_backend]") {
  if (!require_cuda())
    return;
  Env env;
  Backend& be = *env.be;
  BackendStats s0 = be.stats();
  void* a = be.alloc(ScalarType::Float32, 1000, {});
  void* b = be.alloc(ScalarType::Float32, 0, {});
  void* c = be.alloc(ScalarType::Float32, 0, {});
  CHECK(a != nullptr);
  CHECK(b != nullptr);
  CHECK(b != c);
  CHECK(reinterpret_cast<uintptr_t>(a) % 256 == 0);
  BackendStats s1 = be.stats();
  CHECK(s1.bytes_allocated - s0.bytes_allocated == 4000);
  CHECK(s1.allocs - s0.allocs == 3);
  be.release(a);
  void* a2 = be.alloc(ScalarType::Int32, 990, {});  // same size class: the cached block
  CHECK(a2 == a);
  void* big = be.alloc(ScalarType::Float64, 1 << 20, {});
  be.release(big);
  BackendStats s3 = be.stats();
  CHECK(s3.peak_bytes >= s1.bytes_allocated - 4000 + 3960 + (8u << 20));
  be.reset_peak();
  CHECK(be.stats().peak_bytes == be.stats().bytes_allocated);
  for (void* p : {a2, b, c})
    be.release(p);
  be.release(nullptr);  // a no-op
  CHECK(be.stats().bytes_allocated == s0.bytes_allocated);
  // Asking for more than the device has: a clean BackendError, nothing leaked.
  CHECK_THROWS_AS(be.alloc(ScalarType::Float64, size_t{1} << 50, {}), BackendError);
  CHECK(be.stats().bytes_allocated == s0.bytes_allocated);
}

TEST_CASE("backend: kernel cache hits, flush keeps handles usable, handles outlive the backend",
          "[cuda_backend]") {
  if (!require_cuda())
    return;
  KernelHandle survivor;
  {
    Env env;
    Backend& be = *env.be;
    KernelIR k1 = index_plus(1), k2 = index_plus(2);
    BackendStats s0 = be.stats();
    KernelHandle h1 = be.compile(k1);
    KernelHandle h1b = be.compile(k1);
    KernelHandle h2 = be.compile(k2);
    BackendStats s1 = be.stats();
    CHECK(h1 == h1b);
    CHECK(h1 != h2);
    CHECK(h1->hash() == k1.hash);
    CHECK(s1.compiles - s0.compiles == 2);
    CHECK(s1.cache_hits - s0.cache_hits == 1);
    be.flush_kernels();
    CHECK(be.stats().generation == s1.generation + 1);
    auto* out = env.alloc<int32_t>(100);
    be.launch(h1, 100, {}, std::vector<KernelArg>{KernelArg::buffer(out)});
    CHECK(env.download(out, 100)[99] == 100);
    KernelHandle h1c = be.compile(k1);
    CHECK(h1c != h1);
    CHECK(be.stats().compiles == s1.compiles + 1);
    survivor = h1c;
  }
  // The backend is gone; the handle still holds its module and context.
  survivor.reset();
  SUCCEED();
}

TEST_CASE("backend: compile and launch refuse bad input", "[cuda_backend][negative]") {
  if (!require_cuda())
    return;
  Env env;
  KernelIR bad;
  bad.params.push_back({ParamKind::BufferOut, ScalarType::Float32});
  bad.emit(IrOp::Store, ScalarType::Float32, {0, 5});  // operand names a later instruction
  bad.finalize();
  CHECK_THROWS_AS(env.be->compile(bad), Error);
  KernelIR ok = index_plus(0);
  KernelIR unhashed = ok;
  unhashed.hash = {};
  CHECK_THROWS_AS(env.be->compile(unhashed), BackendError);
  KernelIR stale = ok;
  stale.params[0].type = ScalarType::UInt32;
  for (auto& in : stale.instrs)
    in.type = ScalarType::UInt32;
  CHECK_THROWS_AS(env.be->compile(stale), BackendError);
  KernelHandle h = env.be->compile(ok);
  CHECK_THROWS_AS(env.be->launch(h, 10, {}, {}), BackendError);
  CHECK_THROWS_AS(env.be->launch(nullptr, 10, {}, {}), BackendError);
  Env other;
  auto* out = other.alloc<int32_t>(10);
  CHECK_THROWS_AS(other.be->launch(h, 10, {}, std::vector<KernelArg>{KernelArg::buffer(out)}),
                  BackendError);
  CHECK(env.be->name() == "cuda");
}

TEST_CASE("backend: kernels with many parameters, and several threads compiling and launching",
          "[cuda_backend]") {
  if (!require_cuda())
    return;
  Env env;
  {
    const uint32_t n_in = 80;
    KernelIR k;
    k.params.push_back({ParamKind::BufferOut, ScalarType::Int64});
    for (uint32_t p = 0; p < n_in; ++p)
      k.params.push_back({ParamKind::Scalar, ScalarType::Int64});
    uint32_t acc = k.emit(IrOp::Index, ScalarType::Int64);
    for (uint32_t p = 1; p <= n_in; ++p)
      acc =
          k.emit(IrOp::Add, ScalarType::Int64, {acc, k.emit(IrOp::Scalar, ScalarType::Int64, {p})});
    k.emit(IrOp::Store, ScalarType::Int64, {0, acc});
    k.finalize();
    auto* out = env.alloc<int64_t>(5000);
    std::vector<KernelArg> args{KernelArg::buffer(out)};
    for (uint32_t p = 0; p < n_in; ++p)
      args.push_back(KernelArg{p, {}});
    env.be->launch(env.be->compile(k), 5000, {}, args);
    auto v = env.download(out, 5000);
    int64_t base = int64_t(n_in) * (n_in - 1) / 2;
    CHECK(v[0] == base);
    CHECK(v[4999] == base + 4999);
  }
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int th = 0; th < 4; ++th)
    threads.emplace_back([&] {
      try {
        for (int rep = 0; rep < 10; ++rep) {
          KernelIR kir = index_plus(rep % 5);
          size_t n = rep % 2 ? 3000 : 100;
          auto* dev = static_cast<int32_t*>(env.be->alloc(ScalarType::Int32, n, {}));
          env.be->launch(env.be->compile(kir), n, {},
                         std::vector<KernelArg>{KernelArg::buffer(dev)});
          std::vector<int32_t> host(n);
          env.be->copy(host.data(), dev, n * 4, CopyKind::DeviceToHost);
          env.be->release(dev);
          for (size_t i = 0; i < n; ++i)
            failures += host[i] != int32_t(i) + rep % 5;
        }
      } catch (...) {
        ++failures;
      }
    });
  for (auto& th : threads)
    th.join();
  CHECK(failures == 0);
  BackendStats s = env.be->stats();
  CHECK(s.compiles == 5 + 1);  // the five index kernels and the 80-parameter one
}
