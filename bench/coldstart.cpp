// Cold start: the first W1 call and the first W3 call in a fresh process (nothing compiled).
//
//   ff_bench_coldstart once w1|w3   one measurement in this process; prints a RESULT line
//   ff_bench_coldstart [--runs N]   the driver: runs `once` in N fresh processes per workload
//                                   (default 11) and prints the medians against the targets
//
// The measured call is exactly a benchmark call (bench/workloads.h): trace the chain, eval,
// sync — it includes compiling its kernels. ff::init (JIT set-up) and the upload of the input
// are timed separately and reported as init_ms / upload_ms.
#include <freezeframe/freezeframe.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "chain.h"
#include "workloads.h"

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

struct Workload {
  const char* name;
  const char* label;
  size_t size;
  int n_ops;
  int eval_every;
  double target_ms;
};

constexpr std::array<Workload, 2> kWorkloads = {{
    {"w1", "cold start W1", ff_bench::kW1Size, ff_bench::kW1Ops, ff_bench::kW1EvalEvery, 32.0},
    {"w3", "cold start W3", ff_bench::kW3Size, ff_bench::kW3Ops, ff_bench::kW3EvalEvery, 56.0},
}};

const Workload* find_workload(const std::string& name) {
  for (const Workload& w : kWorkloads) {
    if (name == w.name) {
      return &w;
    }
  }
  return nullptr;
}

// One measurement in this (fresh) process.
int once(const Workload& w) {
  // A cold start compiles: kernels an earlier process left in the on-disk cache would only be
  // linked (bench/recording_files.cpp measures that case).
  ::setenv("FF_CACHE_DIR", "off", 1);
  auto t0 = Clock::now();
  ff::init();
  const double init_ms = ms_since(t0);

  std::vector<float> host = ff_bench::make_input(w.size);
  t0 = Clock::now();
  ff::Float x = ff::Float::from(host);
  ff::eval(x);
  ff::sync();
  const double upload_ms = ms_since(t0);

  const ff::Stats before = ff::stats();
  t0 = Clock::now();
  ff::Float y = ff_bench::run_chain(x, w.n_ops, w.eval_every);
  ff::sync();
  const double call_ms = ms_since(t0);
  const ff::Stats after = ff::stats();

  if (std::string err = ff_bench::check_chain(y, host, w.n_ops); !err.empty()) {
    std::fprintf(stderr, "ff_bench_coldstart: %s: wrong result: %s\n", w.name, err.c_str());
    return 1;
  }
  std::printf("RESULT %s call_ms=%.3f init_ms=%.3f upload_ms=%.3f compiles=%llu launches=%llu\n",
              w.name, call_ms, init_ms, upload_ms,
              static_cast<unsigned long long>(after.compiles - before.compiles),
              static_cast<unsigned long long>(after.launches - before.launches));
  y = ff::Float();
  x = ff::Float();
  ff::shutdown();
  return 0;
}

double field(const std::string& line, const char* key) {
  std::string k = std::string(" ") + key + "=";
  size_t at = line.find(k);
  return at == std::string::npos ? -1 : std::atof(line.c_str() + at + k.size());
}

double median(std::vector<double> v) {
  if (v.empty()) {
    return -1;
  }
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::string self_exe(const char* argv0) {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) {
    return argv0;
  }
  buf[n] = 0;
  return buf;
}

// Runs `exe once <w>` in `runs` fresh processes; returns 0 if every run succeeded.
int drive(const std::string& exe, int runs) {
  int failures = 0;
  std::printf("cold start: %d fresh processes per workload (%s)\n", runs, exe.c_str());
  std::vector<std::string> summary;
  for (const Workload& w : kWorkloads) {
    std::vector<double> call, init;
    std::string compiles = "?";
    for (int r = 0; r < runs; ++r) {
      std::string cmd = "'" + exe + "' once " + w.name;
      std::FILE* p = popen(cmd.c_str(), "r");
      if (!p) {
        std::perror("popen");
        return 1;
      }
      std::string result;
      char line[512];
      while (std::fgets(line, sizeof line, p)) {
        if (std::strncmp(line, "RESULT ", 7) == 0) {
          result = line;
        }
      }
      int status = pclose(p);
      if (status != 0 || result.empty()) {
        std::fprintf(stderr, "ff_bench_coldstart: run %d of %s failed (status %d)\n", r, w.name,
                     status);
        ++failures;
        continue;
      }
      call.push_back(field(result, "call_ms"));
      init.push_back(field(result, "init_ms"));
      compiles = std::to_string(static_cast<long long>(field(result, "compiles")));
      std::printf("  %s run %2d: call %7.2f ms  init %6.2f ms  compiles %s\n", w.name, r,
                  call.back(), init.back(), compiles.c_str());
    }
    const double m = median(call);
    char value[128];
    std::snprintf(value, sizeof value, "%.2f ms (init %.2f ms, %s compiles)", m, median(init),
                  compiles.c_str());
    char target[32];
    std::snprintf(target, sizeof target, "<= %g ms", w.target_ms);
    char buf[256];
    std::snprintf(buf, sizeof buf, "SUMMARY | %-24s | %-36s | %-12s | %s\n", w.label, value, target,
                  call.empty() ? "ERROR" : (m <= w.target_ms ? "PASS" : "MISS"));
    summary.emplace_back(buf);
  }
  std::printf("\ncold start summary (medians of %d runs)\n", runs);
  for (const std::string& s : summary) {
    std::fputs(s.c_str(), stdout);
  }
  return failures == 0 ? 0 : 1;
}

int usage() {
  std::fprintf(stderr, "usage: ff_bench_coldstart [--runs N] | once w1|w3\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    if (argc == 3 && std::strcmp(argv[1], "once") == 0) {
      const Workload* w = find_workload(argv[2]);
      return w ? once(*w) : usage();
    }
    int runs = 11;
    for (int i = 1; i < argc; ++i) {
      if (std::strncmp(argv[i], "--runs=", 7) == 0) {
        runs = std::atoi(argv[i] + 7);
      } else if (std::strcmp(argv[i], "--runs") == 0 && i + 1 < argc) {
        runs = std::atoi(argv[++i]);
      } else {
        return usage();
      }
    }
    if (runs < 1) {
      return usage();
    }
    return drive(self_exe(argv[0]), runs);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ff_bench_coldstart: %s\n", e.what());
    return 1;
  }
}
