// ff::dist benchmarks, run under mpirun (bench/dist_bench.sh runs every configuration):
//
//   all_reduce   the latency of a 1-float all_reduce: raw MPI_Allreduce, the same inside a
//                replayed frozen call, and traced; medians of every call, timed one by one,
//                the three kinds interleaved in blocks so that they see the same machine.
//   heat         the distributed heat step of examples/heat_dist.h, frozen and traced, per
//                step (median over steps); the plate is checked bit for bit against the
//                single-process demo at the end. bench/dist_bench.sh compares 2 ranks x 1
//                thread with 1 rank x 2 threads on the same plate.
//   share        time to the first result of a frozen step on every rank: each recording for
//                itself, against the root recording and ff::dist::share.
//
// A plain program rather than Google Benchmark: every rank must issue the same collectives,
// so the number of calls is fixed instead of chosen per process. Results are checked (each
// replayed all_reduce's value; the plate at the end); --expect-wrong perturbs the expected
// values and must make the run fail (bench-smoke checks-fire).
//
//   mpirun -np R ff_bench_dist all_reduce [--calls N] [--expect-wrong]
//   mpirun -np R ff_bench_dist heat [--n N] [--steps S] [--expect-wrong]
//   mpirun -np R ff_bench_dist share [--n N] [--expect-wrong]
#include <freezeframe/freezeframe.h>
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "heat_dist.h"
#include "heat_step.h"

namespace {

using Clock = std::chrono::steady_clock;

double us(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::micro>(b - a).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

/// True on every rank when `ok` is true on every rank.
bool all_ok(bool ok) {
  int mine = ok ? 1 : 0, all = 0;
  MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  return all == 1;
}

int all_reduce_bench(size_t calls, bool expect_wrong) {
  int r = ff::dist::rank(), ranks = ff::dist::size();
  float mine = static_cast<float>(r + 1);
  float want = static_cast<float>(ranks * (ranks + 1) / 2) + (expect_wrong ? 1.f : 0.f);
  auto frozen =
      ff::freeze([](const ff::Float& x) { return ff::dist::all_reduce(x, ff::ReduceOp::Add); });
  ff::Float x = ff::Float::from({mine});
  ff::eval(x);
  std::vector<double> raw, replayed, traced;
  size_t wrong = 0;
  constexpr size_t kBlock = 100;
  (void)frozen(x);  // records
  for (size_t done = 0; done < calls; done += kBlock) {
    for (size_t k = 0; k < kBlock; ++k) {
      float out = 0.f;
      auto t0 = Clock::now();
      MPI_Allreduce(&mine, &out, 1, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      raw.push_back(us(t0, Clock::now()));
      wrong += out != want;
    }
    for (size_t k = 0; k < kBlock; ++k) {
      auto t0 = Clock::now();
      ff::Float s = frozen(x);
      replayed.push_back(us(t0, Clock::now()));
      if (k == 0)  // read back outside the timing of the others: a host read costs its own
        wrong += s.to_vector()[0] != want;
    }
    for (size_t k = 0; k < kBlock / 10; ++k) {
      auto t0 = Clock::now();
      ff::Float s = ff::dist::all_reduce(x, ff::ReduceOp::Add);
      ff::eval(s);
      traced.push_back(us(t0, Clock::now()));
    }
  }
  bool ok = all_ok(wrong == 0 && frozen.n_recordings() == 1);
  if (r == 0) {
    double m_raw = median(raw), m_rep = median(replayed), m_tr = median(traced);
    std::printf("all_reduce of 1 float, %d ranks, %zu calls each (medians):\n", ranks, raw.size());
    std::printf("  raw MPI_Allreduce         %8.2f us\n", m_raw);
    std::printf("  frozen call (replay)      %8.2f us   ratio to raw %.2f (target <= 1.5)\n", m_rep,
                m_rep / m_raw);
    std::printf("  traced ff::dist::all_reduce + eval %8.2f us   ratio to raw %.2f\n", m_tr,
                m_tr / m_raw);
    std::printf("  results: %s\n", ok ? "checked, all correct" : "WRONG");
  }
  return ok ? 0 : 1;
}

int heat_bench(uint32_t n, int steps, bool expect_wrong) {
  int r = ff::dist::rank(), ranks = ff::dist::size();
  heat_dist::Local l = heat_dist::local_plate(r, ranks, n);
  auto frozen = ff::freeze(heat_dist::local_step);
  std::vector<double> t_frozen, t_traced;
  ff::Float u = ff::Float::from(l.grid), v = ff::Float::from(l.grid);
  heat_dist::exchange_halos(u, n);
  heat_dist::exchange_halos(v, n);
  for (int s = 0; s < steps; ++s) {
    MPI_Barrier(MPI_COMM_WORLD);
    auto t0 = Clock::now();
    u = frozen(u, n);
    t_frozen.push_back(us(t0, Clock::now()) / 1000);
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = Clock::now();
    v = heat_dist::local_step(v, n);
    t_traced.push_back(us(t0, Clock::now()) / 1000);
  }
  // Check: both runs equal the single-process demo's steps bit for bit.
  std::vector<float> got_f = heat_dist::gather_plate(u, l, n);
  std::vector<float> got_t = heat_dist::gather_plate(v, l, n);
  ff::Float whole = ff::Float::from(l.plate);
  for (int s = 0; s < steps; ++s)
    whole = heat::step(whole, n);
  std::vector<float> want = whole.to_vector();
  if (expect_wrong)
    want[want.size() / 2 + n / 2] += 1.f;
  bool ok = all_ok(got_f == want && got_t == want);
  // On one rank, the demo's own step on the whole plate too (no halo rows, no exchange): what
  // the distributed step is measured against.
  double demo_ms = 0;
  if (ranks == 1) {
    auto demo = ff::freeze([](const ff::Float& p, uint32_t side) { return heat::step(p, side); });
    ff::Float w = ff::Float::from(l.plate);
    std::vector<double> t_demo;
    for (int s = 0; s < steps; ++s) {
      auto t0 = Clock::now();
      w = demo(w, n);
      t_demo.push_back(us(t0, Clock::now()) / 1000);
    }
    ok = ok && w.to_vector() == want;
    demo_ms = median(t_demo);
  }
  if (r == 0) {
    const char* threads = std::getenv("FF_THREADS");
    std::printf("heat step, %u x %u plate, %d ranks x %s threads, %d steps (medians):\n", n, n,
                ranks, threads ? threads : "default", steps);
    std::printf("  frozen %8.3f ms   traced %8.3f ms   traced/frozen %.2f\n", median(t_frozen),
                median(t_traced), median(t_traced) / median(t_frozen));
    if (ranks == 1)
      std::printf("  the demo's step on the whole plate, frozen: %8.3f ms\n", demo_ms);
    std::printf("  results: %s\n", ok ? "equal to the single-process run bit for bit" : "WRONG");
  }
  return ok ? 0 : 1;
}

/// Time to the first result of a frozen heat step on each rank: every rank recording for itself,
/// against the root recording, ff::dist::share, and the others replaying what they received.
/// The kernel cache is flushed before each (in-process; the disk cache is whatever FF_CACHE_DIR
/// says), so both pay for their compiles.
int share_bench(uint32_t n, bool expect_wrong) {
  int r = ff::dist::rank(), ranks = ff::dist::size();
  std::vector<float> plate = heat_dist::initial_plate(n);
  auto step = [](const ff::Float& u, uint32_t side) { return heat::step(u, side); };
  ff::Float u = ff::Float::from(plate);
  ff::eval(u);
  std::vector<float> want = heat::step(u, n).to_vector();
  if (expect_wrong)
    want[0] += 1.f;

  ff::flush_kernel_cache();
  auto own = ff::freeze(step);
  MPI_Barrier(MPI_COMM_WORLD);
  auto t0 = Clock::now();
  std::vector<float> got_own = own(u, n).to_vector();
  double own_ms = us(t0, Clock::now()) / 1000;

  ff::flush_kernel_cache();
  auto shared = ff::freeze(step);
  MPI_Barrier(MPI_COMM_WORLD);
  t0 = Clock::now();
  if (r == 0)
    (void)shared(u, n).to_vector();
  ff::dist::share(shared, 0);
  std::vector<float> got_shared = shared(u, n).to_vector();
  double shared_ms = us(t0, Clock::now()) / 1000;
  bool replayed = r == 0 || shared.n_replays() == 1;

  double own_all = 0, shared_all = 0;
  MPI_Allreduce(&own_ms, &own_all, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  MPI_Allreduce(&shared_ms, &shared_all, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  bool ok = all_ok(got_own == want && got_shared == want && replayed);
  if (r == 0) {
    std::printf("time to the first result of a frozen heat step (%u x %u), slowest of %d ranks:\n",
                n, n, ranks);
    std::printf("  every rank records for itself   %8.2f ms\n", own_all);
    std::printf("  root records + share + replay   %8.2f ms   ratio %.2f\n", shared_all,
                shared_all / own_all);
    std::printf("  results: %s\n", ok ? "checked, all correct" : "WRONG");
  }
  return ok ? 0 : 1;
}

int usage() {
  std::fprintf(stderr,
               "usage: mpirun -np R ff_bench_dist all_reduce [--calls N] [--expect-wrong]\n"
               "       mpirun -np R ff_bench_dist heat [--n N] [--steps S] [--expect-wrong]\n"
               "       mpirun -np R ff_bench_dist share [--n N] [--expect-wrong]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2)
    return usage();
  std::string what = argv[1];
  size_t calls = 20'000;
  uint32_t n = 1024;
  int steps = 50;
  bool expect_wrong = false;
  for (int i = 2; i < argc; ++i) {
    if (std::strcmp(argv[i], "--calls") == 0 && i + 1 < argc)
      calls = std::strtoull(argv[++i], nullptr, 10);
    else if (std::strcmp(argv[i], "--n") == 0 && i + 1 < argc)
      n = static_cast<uint32_t>(std::strtoul(argv[++i], nullptr, 10));
    else if (std::strcmp(argv[i], "--steps") == 0 && i + 1 < argc)
      steps = std::atoi(argv[++i]);
    else if (std::strcmp(argv[i], "--expect-wrong") == 0)
      expect_wrong = true;
    else
      return usage();
  }
  int rc = 2;
  try {
    ff::dist::init(argc, argv);
    if (what == "all_reduce")
      rc = all_reduce_bench(calls, expect_wrong);
    else if (what == "heat" && n >= 3 && steps >= 1)
      rc = heat_bench(n, steps, expect_wrong);
    else if (what == "share" && n >= 3)
      rc = share_bench(n, expect_wrong);
    else
      rc = usage();
    ff::dist::finalize();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ff_bench_dist: %s\n", e.what());
    return 1;
  }
  return rc;
}
