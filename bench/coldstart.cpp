// Cold start: the first W1 call and the first W3 call in a fresh process (nothing compiled),
// two ways:
//   JIT only      the first call itself (trace, compile, launch, sync), as timed inside the
//                 process; ff::init (JIT set-up) and the upload are reported beside it;
//   as users see  from the parent's posix_spawn to the child's first result on the host:
//                 exec, loading libfreezeframe and libLLVM, static initialisers, ff::init, the
//                 upload and the first call (page cache warm: the parent loaded the same
//                 libraries).
//
//   ff_bench_coldstart once w1|w3      one measurement in this process; prints a RESULT line
//   ff_bench_coldstart [--runs N]      the driver: runs `once` in N fresh processes per workload
//                                      (default 11) and prints the medians
//   --ff_expect_wrong                  self-test: the check of the first result expects wrong
//                                      values, so every run must fail (exit status 1)
//
// Every first result is checked against the host reference, and the first call must launch
// exactly one kernel per eval and compile at least one (or it was not a cold start); a failed
// run makes the exit status 1.
#include <freezeframe/freezeframe.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

#include "chain.h"
#include "workloads.h"

extern char** environ;

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// CLOCK_MONOTONIC in ns: one clock for every process on the machine, so a child's time stamps
// and its parent's compare.
int64_t monotonic_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
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

// One measurement in this (fresh) process; `main_ns` is when main started.
int once(const Workload& w, int64_t main_ns) {
  // A cold start compiles: kernels an earlier process left in the on-disk cache would only be
  // linked (bench/recording_files.cpp measures that case).
  ::setenv("FF_CACHE_DIR", "off", 1);
  auto t0 = Clock::now();
  ff::init();
  const double init_ms = ms_since(t0);

  const std::vector<float> host = ff_bench::make_input(w.size);
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
  const std::vector<float> result = y.to_vector();
  const int64_t result_ns = monotonic_ns();  // the first result is on the host

  std::vector<float> want = ff_bench::reference(host, w.n_ops);
  for (float& v : want) {
    v = ff_bench::timed_expectation(v);
  }
  if (std::string err = ff_bench::compare(result, want); !err.empty()) {
    std::fprintf(stderr,
                 "ff_bench_coldstart: %s: wrong result of the timed call (the first in a fresh "
                 "process): %s\n",
                 w.name, err.c_str());
    return 1;
  }
  const uint64_t compiles = after.compiles - before.compiles;
  const uint64_t launches = after.launches - before.launches;
  const uint64_t want_launches = ff_bench::launches_per_call(w.n_ops, w.eval_every);
  if (launches != want_launches || compiles == 0) {
    std::fprintf(stderr,
                 "ff_bench_coldstart: %s: the first call launched %llu kernels (expected %llu) "
                 "and compiled %llu (a cold start compiles some)\n",
                 w.name, static_cast<unsigned long long>(launches),
                 static_cast<unsigned long long>(want_launches),
                 static_cast<unsigned long long>(compiles));
    return 1;
  }
  std::printf(
      "RESULT %s call_ms=%.3f init_ms=%.3f upload_ms=%.3f compiles=%llu launches=%llu "
      "main_ns=%lld result_ns=%lld\n",
      w.name, call_ms, init_ms, upload_ms, static_cast<unsigned long long>(compiles),
      static_cast<unsigned long long>(launches), static_cast<long long>(main_ns),
      static_cast<long long>(result_ns));
  std::fflush(stdout);
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

int64_t field_ns(const std::string& line, const char* key) {
  std::string k = std::string(" ") + key + "=";
  size_t at = line.find(k);
  return at == std::string::npos ? -1 : std::strtoll(line.c_str() + at + k.size(), nullptr, 10);
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

// One child run: its RESULT line, when the process was spawned and when it had exited.
struct ChildRun {
  std::string result;
  int64_t spawn_ns = 0;
  int64_t exit_ns = 0;
  int status = -1;  // waitpid status
};

// Runs `exe args...` with its stdout on a pipe (stderr passes through), directly (no shell).
ChildRun run_child(const std::string& exe, std::vector<std::string> args) {
  ChildRun run;
  int fds[2];
  if (pipe(fds) != 0) {
    std::perror("ff_bench_coldstart: pipe");
    return run;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&actions, fds[0]);
  posix_spawn_file_actions_addclose(&actions, fds[1]);
  args.insert(args.begin(), exe);
  std::vector<char*> argv;
  for (std::string& a : args) {
    argv.push_back(a.data());
  }
  argv.push_back(nullptr);
  pid_t pid = 0;
  run.spawn_ns = monotonic_ns();
  const int err = posix_spawn(&pid, exe.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(fds[1]);
  if (err != 0) {
    std::fprintf(stderr, "ff_bench_coldstart: posix_spawn %s: %s\n", exe.c_str(),
                 std::strerror(err));
    close(fds[0]);
    return run;
  }
  std::FILE* out = fdopen(fds[0], "r");
  char line[512];
  while (out && std::fgets(line, sizeof line, out)) {
    if (std::strncmp(line, "RESULT ", 7) == 0) {
      run.result = line;
    }
  }
  if (out) {
    std::fclose(out);
  } else {
    close(fds[0]);
  }
  waitpid(pid, &run.status, 0);
  run.exit_ns = monotonic_ns();
  return run;
}

std::string summary_line(const char* what, const std::string& value, const std::string& target,
                         const char* verdict) {
  char buf[256];
  std::snprintf(buf, sizeof buf, "SUMMARY | %-24s | %-44s | %-12s | %s\n", what, value.c_str(),
                target.c_str(), verdict);
  return buf;
}

// Runs `exe once <w>` in `runs` fresh processes per workload; returns 0 if every run succeeded.
int drive(const std::string& exe, int runs, bool expect_wrong) {
  int failures = 0;
  std::printf("cold start: %d fresh processes per workload (%s)\n", runs, exe.c_str());
  std::printf(
      "  call: the first call (JIT only); process: spawn -> first result on the host; "
      "before main: spawn -> main (exec, libraries, static initialisers)\n");
  std::vector<std::string> summary;
  for (const Workload& w : kWorkloads) {
    std::vector<double> call, init, process, before_main, exit;
    std::string compiles = "?";
    for (int r = 0; r < runs; ++r) {
      std::vector<std::string> args{"once", w.name};
      if (expect_wrong) {
        args.emplace_back("--ff_expect_wrong");
      }
      const ChildRun run = run_child(exe, args);
      if (!WIFEXITED(run.status) || WEXITSTATUS(run.status) != 0 || run.result.empty()) {
        std::fprintf(stderr, "ff_bench_coldstart: run %d of %s failed (wait status %d)\n", r,
                     w.name, run.status);
        ++failures;
        continue;
      }
      call.push_back(field(run.result, "call_ms"));
      init.push_back(field(run.result, "init_ms"));
      process.push_back(static_cast<double>(field_ns(run.result, "result_ns") - run.spawn_ns) *
                        1e-6);
      before_main.push_back(static_cast<double>(field_ns(run.result, "main_ns") - run.spawn_ns) *
                            1e-6);
      exit.push_back(static_cast<double>(run.exit_ns - run.spawn_ns) * 1e-6);
      compiles = std::to_string(static_cast<long long>(field(run.result, "compiles")));
      std::printf(
          "  %s run %2d: call %7.2f ms  init %6.2f ms  compiles %s | process %7.2f ms  "
          "before main %6.2f ms  until exit %7.2f ms\n",
          w.name, r, call.back(), init.back(), compiles.c_str(), process.back(), before_main.back(),
          exit.back());
    }
    const double m = ff_bench::median(call);
    char value[128], target[32];
    std::snprintf(value, sizeof value, "%.2f ms (init %.2f ms, %s compiles)", m,
                  ff_bench::median(init), compiles.c_str());
    std::snprintf(target, sizeof target, "<= %g ms", w.target_ms);
    summary.push_back(summary_line(w.label, value, target,
                                   call.empty() ? "ERROR" : (m <= w.target_ms ? "PASS" : "MISS")));
    if (!process.empty()) {
      std::snprintf(value, sizeof value, "%.2f ms (%.2f before main; %.1fx the call)",
                    ff_bench::median(process), ff_bench::median(before_main),
                    ff_bench::median(process) / m);
      summary.push_back(summary_line((std::string(w.label) + ", process").c_str(), value, "", ""));
    }
  }
  std::printf("\ncold start summary (medians of %d runs)\n", runs);
  for (const std::string& s : summary) {
    std::fputs(s.c_str(), stdout);
  }
  return failures == 0 ? 0 : 1;
}

int usage() {
  std::fprintf(stderr,
               "usage: ff_bench_coldstart [--runs N] [--ff_expect_wrong]\n"
               "       ff_bench_coldstart once w1|w3 [--ff_expect_wrong]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  const int64_t main_ns = monotonic_ns();
  try {
    std::vector<std::string> args(argv + 1, argv + argc);
    ff_bench::g_expect_wrong = std::erase(args, "--ff_expect_wrong") > 0;
    if (args.size() == 2 && args[0] == "once") {
      const Workload* w = find_workload(args[1]);
      return w ? once(*w, main_ns) : usage();
    }
    int runs = 11;
    for (size_t i = 0; i < args.size(); ++i) {
      if (args[i].rfind("--runs=", 0) == 0) {
        runs = std::atoi(args[i].c_str() + 7);
      } else if (args[i] == "--runs" && i + 1 < args.size()) {
        runs = std::atoi(args[++i].c_str());
      } else {
        return usage();
      }
    }
    if (runs < 1) {
      return usage();
    }
    return drive(self_exe(argv[0]), runs, ff_bench::g_expect_wrong);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ff_bench_coldstart: %s\n", e.what());
    return 1;
  }
}
