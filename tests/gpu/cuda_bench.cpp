// GPU benchmarks of the CUDA backend (tests/gpu/run.sh runs this on a GPU machine):
//   1. launch cost: a chain of 100 kernels over 1,024 elements, per kernel: traced, replayed
//      op by op, replayed as a CUDA graph (target: graph <= 0.5x op by op);
//   2. bandwidth: y = x * a + b over 256M floats against the device's own device-to-device copy
//      (target >= 80%).
// Every figure is a ratio measured in one run; every timed call's result is checked. Prints a
// summary and `BENCH name=value` lines; exit status 1 when a result is wrong, 0 otherwise
// (targets missed are reported, not failed). `--quick` shrinks the work (a smoke test).
#include <freezeframe/freezeframe.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_driver.h"
#include "registry/backend_registry.h"
#include "runtime/environment.h"

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

bool g_ok = true;

void verify(bool ok, const std::string& what) {
  if (!ok) {
    std::cout << "WRONG RESULT: " << what << "\n";
    g_ok = false;
  }
}

constexpr int kChain = 100;

ff::Float chain(ff::Float x) {
  for (int i = 0; i < kChain; ++i) {
    x = x * 1.0001f + 0.5f;
    ff::eval(x);
  }
  return x;
}

float chain_expected(float x) {
  for (int i = 0; i < kChain; ++i) {
    volatile float m = x * 1.0001f;  // no contraction into an fma: the kernels round twice
    x = m + 0.5f;
  }
  return x;
}

// Median seconds per call of `call` (which must leave its work finished).
template <class F>
double time_calls(int reps, F&& call) {
  std::vector<double> t;
  for (int r = 0; r < reps; ++r) {
    auto start = Clock::now();
    call();
    t.push_back(seconds_since(start));
  }
  return median(t);
}

struct LaunchCost {
  double traced = 0, op_by_op = 0, graph = 0;
};

LaunchCost launch_cost(int reps) {
  const size_t n = 1024;
  std::vector<float> host(n);
  for (size_t i = 0; i < n; ++i)
    host[i] = float(i % 97) * 0.01f;
  LaunchCost c;
  auto check = [&](const ff::Float& y, const char* what) {
    std::vector<float> v = y.to_vector();
    bool ok = v.size() == n;
    for (size_t i = 0; ok && i < n; i += 101)
      ok = std::fabs(v[i] - chain_expected(host[i])) <= 1e-4f * std::fabs(v[i]);
    verify(ok, std::string("launch chain, ") + what);
  };
  // Traced, and the recording both replays use.
  setenv("FF_CUDA_GRAPHS", "0", 1);
  ff::init("cuda");
  ff::Float x = ff::Float::from(host);
  ff::eval(x);
  check(chain(x), "traced (warm-up)");
  c.traced = time_calls(reps,
                        [&] {
                          ff::Float y = chain(x);
                          ff::sync();
                        }) /
             kChain;
  check(chain(x), "traced");
  ff::Recording r = ff::record({ff::AnyArray(x)},
                               [&] { return std::vector<ff::AnyArray>{ff::AnyArray(chain(x))}; });
  for (int graphs = 0; graphs < 2; ++graphs) {
    setenv("FF_CUDA_GRAPHS", graphs ? "1" : "0", 1);
    ff::init("cuda");
    ff::Float xi = ff::Float::from(host);
    ff::eval(xi);
    check(r.replay({ff::AnyArray(xi)})[0].as<ff::Float>(), graphs ? "graph (warm-up)" : "replay");
    double t = time_calls(reps,
                          [&] {
                            auto outs = r.replay({ff::AnyArray(xi)});
                            ff::sync();
                          }) /
               kChain;
    check(r.replay({ff::AnyArray(xi)})[0].as<ff::Float>(), graphs ? "graph replay" : "replay");
    (graphs ? c.graph : c.op_by_op) = t;
  }
  unsetenv("FF_CUDA_GRAPHS");
  ff::shutdown();
  return c;
}

struct Bandwidth {
  size_t n = 0;
  double kernel_gbs = 0, copy_gbs = 0;
};

Bandwidth bandwidth(size_t n, int rounds) {
  Bandwidth b;
  b.n = n;
  auto be = ff::backend_registry().create("cuda", {});
  auto* x = static_cast<float*>(be->alloc(ff::ScalarType::Float32, n, {}));
  auto* y = static_cast<float*>(be->alloc(ff::ScalarType::Float32, n, {}));
  be->fill(x, n, 4, std::bit_cast<uint32_t>(1.5f));
  ff::KernelIR ir;
  ir.params = {{ff::ParamKind::BufferIn, ff::ScalarType::Float32},
               {ff::ParamKind::BufferOut, ff::ScalarType::Float32}};
  uint32_t a =
      ir.emit(ff::IrOp::Literal, ff::ScalarType::Float32, {}, std::bit_cast<uint32_t>(2.0f));
  uint32_t c =
      ir.emit(ff::IrOp::Literal, ff::ScalarType::Float32, {}, std::bit_cast<uint32_t>(0.25f));
  uint32_t v = ir.emit(ff::IrOp::Load, ff::ScalarType::Float32, {0});
  uint32_t m = ir.emit(ff::IrOp::Mul, ff::ScalarType::Float32, {v, a});
  ir.emit(ff::IrOp::Store, ff::ScalarType::Float32,
          {1, ir.emit(ff::IrOp::Add, ff::ScalarType::Float32, {m, c})});
  ir.finalize();
  ff::KernelHandle k = be->compile(ir);
  std::vector<ff::KernelArg> args{ff::KernelArg::buffer(x), ff::KernelArg::buffer(y)};
  double bytes = 2.0 * double(n) * 4;
  auto measure = [&](auto&& op) {
    op();  // warm-up
    be->sync();
    std::vector<double> per;
    for (int r = 0; r < 3; ++r) {
      auto start = Clock::now();
      for (int i = 0; i < rounds; ++i)
        op();
      be->sync();
      per.push_back(seconds_since(start) / rounds);
    }
    return bytes / median(per) / 1e9;
  };
  b.kernel_gbs = measure([&] { be->launch(k, n, {}, args); });
  std::vector<float> probe(4);
  for (size_t at : {size_t(0), n / 3, n - 1}) {
    be->copy(probe.data(), y + at, 4, ff::CopyKind::DeviceToHost);
    verify(probe[0] == 1.5f * 2.0f + 0.25f, "bandwidth kernel output at " + std::to_string(at));
  }
  b.copy_gbs = measure([&] { be->copy(y, x, n * 4, ff::CopyKind::DeviceToDevice); });
  be->copy(probe.data(), y + n / 2, 4, ff::CopyKind::DeviceToHost);
  verify(probe[0] == 1.5f, "device-to-device copy");
  be->release(x);
  be->release(y);
  return b;
}

}  // namespace

int main(int argc, char** argv) {
  bool quick = argc > 1 && std::string(argv[1]) == "--quick";
  ff::set_log_level(ff::LogLevel::Warn);
  ff::cuda_backend::CudaProbe probe =
      ff::cuda_backend::probe_cuda(ff::detail::environment_backend_options());
  if (probe.reason != ff::cuda_backend::Unavailable::None) {
    std::cout << "skipped: no CUDA device (" << probe.message << ")\n";
    return std::getenv("FF_REQUIRE_CUDA") ? 1 : 0;
  }
  try {
    LaunchCost lc = launch_cost(quick ? 5 : 200);
    double ratio = lc.graph / lc.op_by_op;
    std::cout.setf(std::ios::fixed);
    std::cout.precision(2);
    std::cout << "launch cost, " << kChain << " kernels x 1024 elements (median per kernel):\n"
              << "  traced           " << lc.traced * 1e6 << " us\n"
              << "  op-by-op replay  " << lc.op_by_op * 1e6 << " us\n"
              << "  graph replay     " << lc.graph * 1e6 << " us  (" << ratio
              << "x op-by-op; target <= 0.50x: " << (ratio <= 0.5 ? "met" : "MISSED") << ")\n";
    size_t n = quick ? (size_t{1} << 22) : (size_t{256} << 20);
    Bandwidth bw = bandwidth(n, quick ? 2 : 20);
    double frac = bw.kernel_gbs / bw.copy_gbs;
    std::cout << "bandwidth, y = x * a + b over " << (n >> 20) << "M floats: " << bw.kernel_gbs
              << " GB/s = " << frac * 100 << "% of the device-to-device copy (" << bw.copy_gbs
              << " GB/s; target >= 80%: " << (frac >= 0.8 ? "met" : "MISSED") << ")\n";
    std::cout << "BENCH traced_us=" << lc.traced * 1e6 << " op_by_op_us=" << lc.op_by_op * 1e6
              << " graph_us=" << lc.graph * 1e6 << " graph_ratio=" << ratio
              << " kernel_gbs=" << bw.kernel_gbs << " copy_gbs=" << bw.copy_gbs
              << " bandwidth_fraction=" << frac << "\n";
  } catch (const std::exception& e) {
    std::cout << "benchmark failed: " << e.what() << "\n";
    return 1;
  }
  return g_ok ? 0 : 1;
}
