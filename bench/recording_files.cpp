// Recording files: save and load throughput, and the start-up of a fresh process that loads a
// saved frozen function (f.load) and replays it on its first call, with and without the
// on-disk kernel cache, against one whose frozen function records from scratch.
//
//   ff_bench_recording_files [--runs N] [--ops N]   the driver: throughput in this process,
//                                                  then each start-up case in N fresh processes
//   ff_bench_recording_files once MODE FILE         one start-up measurement (a child); MODE is
//                                                  record | load
//
// Start-up is timed inside the child from before ff::init to the first result on the host
// (init, tracing or loading, compiling or linking kernels, the run itself) and, by the
// driver, as the child's whole wall time (exec and dynamic loading included). Each case gets
// its own cache directory; FF_CACHE_DIR=off where the case says "without".
#include <fcntl.h>
#include <freezeframe/freezeframe.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "common/file_io.h"
#include "frontend/recording_state.h"
#include "recorder/format_reader.h"
#include "recorder/format_writer.h"

extern char** environ;

namespace {

using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

constexpr size_t kColdSize = size_t{1} << 20;

// The start-up workload: eight distinct element-wise kernels (evaluated one by one) and a sum.
std::pair<ff::Float, ff::Float> workload(const ff::Float& x) {
  ff::Float v = x;
  for (int k = 0; k < 8; ++k) {
    v = ff::fma(v, 1.0f + 0.01f * static_cast<float>(k), 0.5f * static_cast<float>(k));
    v = ff::sqrt(ff::abs(v)) + ff::sin(v) * 0.1f;
    ff::eval(v);
  }
  return {v, ff::sum(v)};
}

// The workload as the frozen function every child builds.
auto frozen_workload() {
  return ff::freeze(workload, ff::FreezeOptions{.name = "workload", .version = "bench-1"});
}

std::vector<float> cold_input() {
  std::vector<float> h(kColdSize);
  for (size_t i = 0; i < h.size(); ++i)
    h[i] = static_cast<float>(i % 1000) * 0.001f;
  return h;
}

// ---------------------------------------------------------------------------------------
// Child: one start-up measurement

int once(const std::string& mode, const std::string& file) {
  std::vector<float> host = cold_input();
  auto t0 = Clock::now();
  ff::init("llvm");
  ff::Float x = ff::Float::from(host);
  ff::eval(x);
  ff::Stats s0 = ff::stats();
  auto f = frozen_workload();
  if (mode == "load")
    f.load(file);  // its first call replays
  // Record mode: the first call traces, records, compiles and runs.
  auto [v, sum] = f(x);
  if (mode == "record" && !file.empty())
    f.save(file);
  float total = sum.to_vector()[0];
  if ((mode == "load") != (f.n_recordings() == 0)) {
    std::fprintf(stderr, "%s: %zu recordings made on the first call\n", mode.c_str(),
                 f.n_recordings());
    return 1;
  }
  double ms = ms_since(t0);
  ff::Stats s1 = ff::stats();
  std::printf("RESULT ms=%.3f compiles=%llu disk_hits=%llu traced_kernels=%llu sum=%.6g\n", ms,
              static_cast<unsigned long long>(s1.compiles - s0.compiles),
              static_cast<unsigned long long>(s1.disk_cache_hits - s0.disk_cache_hits),
              static_cast<unsigned long long>(s1.traced_kernels - s0.traced_kernels), total);
  ff::shutdown();
  return std::isfinite(total) ? 0 : 1;
}

// ---------------------------------------------------------------------------------------
// Driver

struct Child {
  double inner_ms = 0, wall_ms = 0;
  unsigned long long compiles = 0, disk_hits = 0, traced_kernels = 0;
};

Child run_child(const std::string& self, const std::vector<std::string>& args,
                const std::string& cache_dir) {
  fs::path out = fs::temp_directory_path() / ("ff-bench-rf-" + std::to_string(::getpid()));
  std::vector<std::string> env_strings;
  for (char** e = environ; *e; ++e)
    if (std::strncmp(*e, "FF_CACHE_DIR=", 13) != 0)
      env_strings.push_back(*e);
  env_strings.push_back("FF_CACHE_DIR=" + cache_dir);
  std::vector<char*> envp, argv{const_cast<char*>(self.c_str())};
  for (auto& s : env_strings)
    envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> a = args;
  for (auto& s : a)
    argv.push_back(s.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  auto t0 = Clock::now();
  pid_t pid;
  if (posix_spawn(&pid, self.c_str(), &fa, nullptr, argv.data(), envp.data()) != 0) {
    std::perror("posix_spawn");
    std::exit(1);
  }
  posix_spawn_file_actions_destroy(&fa);
  int status = 0;
  ::waitpid(pid, &status, 0);
  Child c;
  c.wall_ms = ms_since(t0);
  std::vector<std::byte> text = ff::read_file(out.string());
  fs::remove(out);
  std::string s(reinterpret_cast<const char*>(text.data()), text.size());
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 ||
      std::sscanf(s.c_str(), "RESULT ms=%lf compiles=%llu disk_hits=%llu traced_kernels=%llu",
                  &c.inner_ms, &c.compiles, &c.disk_hits, &c.traced_kernels) != 4) {
    std::fprintf(stderr, "ff_bench_recording_files: child failed: %s\n", s.c_str());
    std::exit(1);
  }
  return c;
}

void throughput(size_t target_ops, int runs) {
  ff::init("llvm");
  ff::Float x = ff::Float::from(std::vector<float>(1024, 0.5f));
  // Each evaluation records an alloc, a launch and (from the second on) a release.
  size_t evals = (target_ops + 2) / 3;
  ff::Recording r = ff::record({x}, [&] {
    ff::Float v = x;
    for (size_t i = 0; i < evals; ++i) {
      v = v * 1.0001f + static_cast<float>(i % 8);  // 8 distinct kernels
      ff::eval(v);
    }
    return std::vector<ff::AnyArray>{v};
  });
  const ff::rec::RecordingData& d = *ff::detail::recording_state(r)->data;
  std::vector<double> write_ms, parse_ms, save_ms, read_ms, load_ms;
  std::vector<std::byte> bytes;
  fs::path file =
      fs::temp_directory_path() / ("ff-bench-rf-" + std::to_string(::getpid()) + ".ffr");
  for (int i = 0; i < runs; ++i) {
    auto t0 = Clock::now();
    bytes = ff::format::write(d);
    write_ms.push_back(ms_since(t0));
    t0 = Clock::now();
    ff::format::ParsedFile f = ff::format::parse(bytes);
    parse_ms.push_back(ms_since(t0));
    if (f.recordings[0]->ops.size() != d.ops.size())
      std::exit(1);
    t0 = Clock::now();
    r.save(file.string());
    save_ms.push_back(ms_since(t0));
    t0 = Clock::now();
    {
      ff::MappedFile again(file.string());
      if (again.bytes().size() != bytes.size())
        std::exit(1);
    }
    read_ms.push_back(ms_since(t0));
    t0 = Clock::now();
    ff::Recording l = ff::Recording::load(file.string());
    load_ms.push_back(ms_since(t0));
    if (l.n_ops() != r.n_ops())
      std::exit(1);
  }
  fs::remove(file);
  double mb = static_cast<double>(bytes.size()) / 1e6;
  std::printf("recording of %zu ops, %zu kernels, %zu slots: %.2f MB on disk (%zu bytes per op)\n",
              d.ops.size(), d.kernels.size(), d.slots.size(), mb, bytes.size() / d.ops.size());
  auto line = [&](const char* what, const std::vector<double>& ms) {
    double m = median(ms);
    std::printf("  %-38s %8.3f ms  %8.1f MB/s  %6.2f M ops/s\n", what, m, mb / (m / 1e3),
                static_cast<double>(d.ops.size()) / (m / 1e3) / 1e6);
  };
  line("serialise (format::write, in memory)", write_ms);
  line("parse + validate (format::parse)", parse_ms);
  line("Recording::save (file, fsync, rename)", save_ms);
  line("map the file alone (mmap, prefaulted)", read_ms);
  line("Recording::load (read, parse, validate)", load_ms);
  ff::shutdown();
}

int driver(const std::string& self, int runs, size_t ops) {
  std::printf("== save and load throughput (median of %d)\n", runs < 5 ? 5 : runs);
  throughput(ops, runs < 5 ? 5 : runs);

  fs::path dir = fs::temp_directory_path() / ("ff-bench-rf-dir-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::string file = (dir / "workload.ffr").string();
  std::string warm = (dir / "cache").string();
  // Save the recording and fill the cache once (the "first process").
  run_child(self, {"once", "record", file}, warm);

  struct Case {
    const char* label;
    std::vector<std::string> args;
    std::string cache;
  };

  std::vector<Case> cases = {
      {"record from scratch, no disk cache", {"once", "record", ""}, "off"},
      {"record from scratch, warm disk cache", {"once", "record", ""}, warm},
      {"f.load + first call, no disk cache", {"once", "load", file}, "off"},
      {"f.load + first call, warm disk cache", {"once", "load", file}, warm},
  };
  std::printf(
      "\n== fresh process: first result of a frozen 8-kernel function on 2^20 floats "
      "(median of %d processes)\n",
      runs);
  std::printf("  %-40s %10s %10s %9s %6s %7s\n", "case", "in-proc ms", "wall ms", "compiles",
              "disk", "traced");
  std::vector<double> inner_medians;
  for (const Case& c : cases) {
    std::vector<double> inner, wall;
    Child last;
    for (int i = 0; i < runs; ++i) {
      last = run_child(self, c.args, c.cache);
      inner.push_back(last.inner_ms);
      wall.push_back(last.wall_ms);
    }
    inner_medians.push_back(median(inner));
    std::printf("  %-40s %10.2f %10.2f %9llu %6llu %7llu\n", c.label, median(inner), median(wall),
                last.compiles, last.disk_hits, last.traced_kernels);
  }
  std::printf(
      "  ratios: record from scratch / f.load + first call without cache = %.2fx, with warm "
      "cache = %.2fx\n",
      inner_medians[0] / inner_medians[2], inner_medians[0] / inner_medians[3]);
  fs::remove_all(dir);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> a(argv + 1, argv + argc);
  try {
    if (a.size() >= 2 && a[0] == "once")
      return once(a[1], a.size() > 2 ? a[2] : "");
    int runs = 7;
    size_t ops = 10000;
    for (size_t i = 0; i + 1 < a.size(); i += 2) {
      if (a[i] == "--runs")
        runs = std::max(1, std::atoi(a[i + 1].c_str()));
      else if (a[i] == "--ops")
        ops = std::strtoull(a[i + 1].c_str(), nullptr, 10);
    }
    return driver(fs::canonical("/proc/self/exe").string(), runs, ops);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ff_bench_recording_files: %s\n", e.what());
    return 1;
  }
}
