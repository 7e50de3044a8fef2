// Tests that need several processes: the on-disk kernel cache shared by processes, a saved
// recording replayed in a fresh process, a saved frozen training step (gradients and Adam)
// replayed in a fresh process, FF_CAPTURE written at shutdown and at exit. The driver modes
// spawn this program again in child modes with their own environment.
//
//   ff_test_processes two-fill | fresh-process | frozen-fresh-process |
//                     training-fresh-process | damaged-entries | trim | capture |
//                     flush-while-held
//
// Exit status 0 when every check passed; a failed check prints what and exits 1.
#include <freezeframe/freezeframe.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "backend/llvm/disk_cache.h"
#include "backend/llvm/llvm_backend.h"
#include "support/sample_recordings.h"

extern char** environ;

namespace {

namespace fs = std::filesystem;

int g_failures = 0;

#define EXPECT(cond, ...)                                                           \
  do {                                                                              \
    if (!(cond)) {                                                                  \
      std::fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #cond); \
      std::fprintf(stderr, __VA_ARGS__);                                            \
      std::fprintf(stderr, "\n");                                                   \
      ++g_failures;                                                                 \
    }                                                                               \
  } while (0)

std::string g_self;

struct TempDir {
  fs::path path;

  TempDir() {
    path = fs::temp_directory_path() / ("ff-process-test-" + std::to_string(::getpid()));
    fs::remove_all(path);
    fs::create_directories(path);
  }

  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

/// Starts this program in `mode` with `env` added to the environment; returns its pid.
pid_t spawn(const std::vector<std::string>& args, const std::vector<std::string>& env) {
  std::vector<std::string> all_env;
  for (char** e = environ; *e; ++e) {
    std::string kv = *e;
    bool overridden = false;
    for (const std::string& o : env)
      overridden |= kv.compare(0, o.find('=') + 1, o, 0, o.find('=') + 1) == 0;
    if (!overridden)
      all_env.push_back(kv);
  }
  all_env.insert(all_env.end(), env.begin(), env.end());
  std::vector<char*> argv{g_self.data()}, envp;
  std::vector<std::string> args_copy = args;
  for (std::string& a : args_copy)
    argv.push_back(a.data());
  argv.push_back(nullptr);
  for (std::string& kv : all_env)
    envp.push_back(kv.data());
  envp.push_back(nullptr);
  pid_t pid = 0;
  int err = posix_spawn(&pid, g_self.c_str(), nullptr, nullptr, argv.data(), envp.data());
  if (err != 0) {
    std::fprintf(stderr, "posix_spawn: %s\n", std::strerror(err));
    std::exit(1);
  }
  return pid;
}

int wait_for(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int run(const std::vector<std::string>& args, const std::vector<std::string>& env) {
  return wait_for(spawn(args, env));
}

size_t count_entries(const fs::path& dir) {
  size_t n = 0;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec))
    n += e.path().extension() == ".ffk";
  return n;
}

// ---------------------------------------------------------------------------------------
// Child modes

/// Records and replays the samples; prints the compile and disk-hit counts; checks them
/// against `expect` ("none-compiled", "all-compiled" or "any").
int child_record(const std::string& expect) {
  ff::init("llvm");
  ff::Stats s0 = ff::stats();
  auto samples = ff_samples::sample_recordings();
  size_t kernels = 0;
  for (auto& [name, r] : samples)
    kernels += r.n_kernels();
  ff::sync();
  ff::Stats s1 = ff::stats();
  uint64_t compiles = s1.compiles - s0.compiles, disk = s1.disk_cache_hits - s0.disk_cache_hits;
  std::printf("child: %zu kernels recorded: %llu compiled, %llu from the disk cache\n", kernels,
              static_cast<unsigned long long>(compiles), static_cast<unsigned long long>(disk));
  if (expect == "none-compiled") {
    EXPECT(compiles == 0, "%llu kernels compiled", static_cast<unsigned long long>(compiles));
    EXPECT(disk > 0, "no kernel came from the disk cache");
  } else if (expect == "all-compiled") {
    EXPECT(disk == 0, "%llu kernels from the disk cache", static_cast<unsigned long long>(disk));
    EXPECT(compiles > 0, "nothing compiled");
  }
  ff::shutdown();
  return g_failures ? 1 : 0;
}

int child_save(const std::string& path) {
  ff::init("llvm");
  auto samples = ff_samples::sample_recordings();
  samples[3].second.save(path);  // compress: 4 kernels, guards, reductions
  ff::shutdown();
  return 0;
}

/// Loads `path` and replays it on the first call; checks that nothing was traced and, with
/// `expect_compiles` "0", that nothing was compiled.
int child_load_replay(const std::string& path, const std::string& expect_compiles) {
  ff::init("llvm");
  ff::Float x = ff::Float::from({0.5f, 0.1f, 0.9f, 0.3f, 0.7f, 0.2f});
  ff::Int32 n = ff::Int32::from({1, 2, 3, 4, 5, 6});
  ff::eval(x, n);
  ff::sync();
  ff::Recording r = ff::Recording::load(path);
  ff::Stats s0 = ff::stats();
  std::vector<ff::AnyArray> outs = r.replay({x, n});
  ff::sync();
  ff::Stats s1 = ff::stats();
  std::printf(
      "child: first replay of a loaded recording: %llu traced ops, %llu traced kernels, "
      "%llu compiled, %llu from the disk cache\n",
      static_cast<unsigned long long>(s1.traced_ops - s0.traced_ops),
      static_cast<unsigned long long>(s1.traced_kernels - s0.traced_kernels),
      static_cast<unsigned long long>(s1.compiles - s0.compiles),
      static_cast<unsigned long long>(s1.disk_cache_hits - s0.disk_cache_hits));
  EXPECT(s1.traced_kernels == s0.traced_kernels, "the replay traced kernels");
  EXPECT(s1.traced_ops == s0.traced_ops, "the replay traced operations");
  if (expect_compiles == "0") {
    EXPECT(s1.compiles == s0.compiles, "the replay compiled");
    EXPECT(s1.disk_cache_hits - s0.disk_cache_hits == r.n_kernels(), "disk hits != kernels");
  } else {
    EXPECT(s1.compiles - s0.compiles == r.n_kernels(), "compiles != kernels");
  }
  // compress(x > 0.25) picks 0.5, 0.9, 0.3, 0.7, doubled (more than 2 hits).
  std::vector<float> picked = outs[0].as<ff::Float>().to_vector();
  EXPECT((picked == std::vector<float>{1.f, 1.8f, 0.6f, 1.4f}), "wrong replay result");
  ff::shutdown();
  return g_failures ? 1 : 0;
}

// The frozen function of frozen-fresh-process: a struct updated in place and a result of
// two reductions.
struct Body {
  ff::Float pos, vel;
};

}  // namespace

FF_STRUCT(Body, pos, vel)

namespace {

auto frozen_step() {
  return ff::freeze(
      [](Body& b, const ff::Float& dt) {
        b.vel = b.vel - 9.81f * dt;
        b.pos = b.pos + b.vel * dt;
        return std::pair{ff::sum(b.pos), ff::max_reduce(b.vel)};
      },
      ff::FreezeOptions{.name = "fall", .version = "v3"});
}

Body make_body(size_t n) {
  std::vector<float> p(n), v(n, 0.f);
  for (size_t i = 0; i < n; ++i)
    p[i] = static_cast<float>(i);
  Body b{ff::Float::from(p), ff::Float::from(v)};
  ff::eval(b.pos, b.vel);
  return b;
}

int child_freeze_save(const std::string& path) {
  ff::init("llvm");
  auto step = frozen_step();
  Body b = make_body(100);
  ff::Float dt = ff::Float::from({0.1f});
  step(b, dt);
  step(b, dt);
  EXPECT(step.n_recordings() == 1, "%zu recordings", step.n_recordings());
  step.save(path);
  ff::shutdown();
  return g_failures ? 1 : 0;
}

/// Loads a saved frozen function; its first call (at another size) replays: nothing traced,
/// with `expect_compiles` "0" nothing compiled; the results match the same body traced.
int child_freeze_load(const std::string& path, const std::string& expect_compiles) {
  ff::init("llvm");
  auto step = frozen_step();
  step.load(path);
  Body b = make_body(37), t = make_body(37);
  ff::Float dt = ff::Float::from({0.1f});
  ff::eval(dt);
  ff::sync();
  ff::Stats s0 = ff::stats();
  auto [sum, top] = step(b, dt);
  std::vector<float> got_sum = sum.to_vector(), got_pos = b.pos.to_vector();
  ff::Stats s1 = ff::stats();
  std::printf(
      "child: first call of a loaded frozen function: %llu traced kernels, %llu compiled, "
      "%llu from the disk cache, %zu recordings made\n",
      static_cast<unsigned long long>(s1.traced_kernels - s0.traced_kernels),
      static_cast<unsigned long long>(s1.compiles - s0.compiles),
      static_cast<unsigned long long>(s1.disk_cache_hits - s0.disk_cache_hits),
      step.n_recordings());
  EXPECT(step.n_recordings() == 0 && step.n_replays() == 1, "the first call did not replay");
  EXPECT(s1.traced_kernels == s0.traced_kernels, "the first call traced kernels");
  if (expect_compiles == "0")
    EXPECT(s1.compiles == s0.compiles, "the first call compiled");
  // The same body traced.
  t.vel = t.vel - 9.81f * dt;
  t.pos = t.pos + t.vel * dt;
  EXPECT(got_pos == t.pos.to_vector(), "the written-back positions differ from the traced ones");
  EXPECT(got_sum == ff::sum(t.pos).to_vector(), "the result differs from the traced one");
  ff::shutdown();
  return g_failures ? 1 : 0;
}

// The frozen training step of training-fresh-process: the loss mean((w x - y)^2), its
// gradient and an Adam step, with the whole optimiser state in arrays.
ff::Float64 train_step(ff::Float64& w, ff::Adam& opt, const ff::Float64& x, const ff::Float64& y) {
  ff::enable_grad(w);
  ff::Float64 r = w * x - y;
  ff::Float64 loss = ff::mean(r * r);
  ff::backward(loss);
  opt.step(w);
  return ff::detach(loss);
}

ff::Float64 ramp(size_t n, double a, double c) {
  std::vector<double> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = a * static_cast<double>(i % 17) + c;
  return ff::Float64::from(v);
}

int child_train_save(const std::string& path) {
  ff::init("llvm");
  auto step = ff::freeze(train_step, ff::FreezeOptions{.name = "fit", .version = "v1"});
  const size_t n = 9;
  ff::Float64 x = ramp(n, 0.3, 0.2), y = ramp(n, -0.1, 1.0), w = ff::zeros<ff::Float64>(n);
  ff::make_opaque(w);
  ff::Adam opt(0.02);
  opt.init(w);
  for (int it = 0; it < 3; ++it)
    step(w, opt, x, y);
  EXPECT(step.n_recordings() == 1, "%zu recordings", step.n_recordings());
  step.save(path);
  ff::shutdown();
  return g_failures ? 1 : 0;
}

/// Loads the saved training step; at another size, 20 steps replay (nothing traced on the
/// first) and equal the same steps traced here bit for bit, optimiser state included.
int child_train_load(const std::string& path) {
  ff::init("llvm");
  auto step = ff::freeze(train_step, ff::FreezeOptions{.name = "fit", .version = "v1"});
  step.load(path);
  const size_t n = 13;
  ff::Float64 x = ramp(n, 0.3, 0.2), y = ramp(n, -0.1, 1.0);
  ff::Float64 wf = ff::zeros<ff::Float64>(n), wt = ff::zeros<ff::Float64>(n);
  ff::make_opaque(wf, wt);
  ff::Adam of(0.02), ot(0.02);
  of.init(wf);
  ot.init(wt);
  ff::eval(x, y, wf, wt);
  ff::sync();
  for (int it = 0; it < 20; ++it) {
    ff::Stats s0 = ff::stats();
    ff::Float64 lf = step(wf, of, x, y);
    ff::Stats s1 = ff::stats();
    if (it == 0)
      EXPECT(s1.traced_kernels == s0.traced_kernels, "the first call traced %llu kernels",
             static_cast<unsigned long long>(s1.traced_kernels - s0.traced_kernels));
    ff::Float64 lt = train_step(wt, ot, x, y);
    EXPECT(lf.to_vector() == lt.to_vector(), "step %d: the loss differs from the traced one", it);
    EXPECT(wf.to_vector() == wt.to_vector(), "step %d: the parameters differ", it);
  }
  EXPECT(of.t.to_vector() == ot.t.to_vector(), "the step counts differ");
  EXPECT(of.m64[0].to_vector() == ot.m64[0].to_vector(), "the first moments differ");
  EXPECT(step.n_recordings() == 0 && step.n_replays() == 20, "%zu recordings, %zu replays",
         step.n_recordings(), step.n_replays());
  std::printf("child: a loaded frozen training step replayed %zu times at a new size\n",
              step.n_replays());
  ff::shutdown();
  return g_failures ? 1 : 0;
}

int child_capture(bool shutdown) {
  ff::init("record:llvm");
  ff::Float x = ff::Float::from({1.f, 2.f, 3.f, 4.f});
  ff::Float y = ff::sqrt(x) * 2.f + 1.f;
  std::vector<float> v = y.to_vector();
  if (shutdown) {
    ff::shutdown();
    ff::Float z = ff::Float::from({1.f}) + 1.f;  // a new default stack: not captured
    (void)z.to_vector();
  }
  return v.size() == 4 ? 0 : 1;  // without shutdown: the file is written at exit
}

// ---------------------------------------------------------------------------------------
// Driver modes

int two_fill() {
  TempDir dir;
  std::string cache = "FF_CACHE_DIR=" + dir.path.string();
  pid_t a = spawn({"child-record", "any"}, {cache});
  pid_t b = spawn({"child-record", "any"}, {cache});
  EXPECT(wait_for(a) == 0, "the first filling process failed");
  EXPECT(wait_for(b) == 0, "the second filling process failed");
  size_t entries = count_entries(dir.path / "llvm");
  std::printf("two processes at once left %zu entries\n", entries);
  EXPECT(entries > 0, "no entries");
  EXPECT(run({"child-record", "none-compiled"}, {cache}) == 0,
         "a third process compiled something");
  return g_failures ? 1 : 0;
}

int fresh_process() {
  TempDir dir;
  std::string cache = "FF_CACHE_DIR=" + (dir.path / "cache").string();
  std::string file = (dir.path / "saved.ffr").string();
  EXPECT(run({"child-save", file}, {cache}) == 0, "saving failed");
  EXPECT(run({"child-load-replay", file, "0"}, {cache}) == 0,
         "a fresh process with the disk cache traced or compiled");
  EXPECT(run({"child-load-replay", file, "all"}, {"FF_CACHE_DIR=off"}) == 0,
         "a fresh process without the disk cache traced, or did not compile its kernels");
  return g_failures ? 1 : 0;
}

int frozen_fresh_process() {
  TempDir dir;
  std::string cache = "FF_CACHE_DIR=" + (dir.path / "cache").string();
  std::string file = (dir.path / "fall.ffr").string();
  EXPECT(run({"child-freeze-save", file}, {cache}) == 0, "saving the frozen function failed");
  EXPECT(run({"child-freeze-load", file, "0"}, {cache}) == 0,
         "a fresh process with the disk cache traced or compiled on its first call");
  EXPECT(run({"child-freeze-load", file, "any"}, {"FF_CACHE_DIR=off"}) == 0,
         "a fresh process without the disk cache traced on its first call");
  return g_failures ? 1 : 0;
}

int training_fresh_process() {
  TempDir dir;
  std::string file = (dir.path / "fit.ffr").string();
  EXPECT(run({"child-train-save", file}, {"FF_CACHE_DIR=off"}) == 0,
         "saving the frozen training step failed");
  EXPECT(run({"child-train-load", file}, {"FF_CACHE_DIR=off"}) == 0,
         "the loaded training step did not replay as the traced one");
  return g_failures ? 1 : 0;
}

int damaged_entries() {
  TempDir dir;
  std::string cache = "FF_CACHE_DIR=" + dir.path.string();
  EXPECT(run({"child-record", "any"}, {cache}) == 0, "filling failed");
  size_t n = 0;
  for (const auto& e : fs::directory_iterator(dir.path / "llvm")) {
    if (e.path().extension() != ".ffk")
      continue;
    std::FILE* f = std::fopen(e.path().c_str(), "r+b");
    if (n % 2 == 0) {  // flip a byte of the object code
      std::fseek(f, 60, SEEK_SET);
      int c = std::fgetc(f);
      std::fseek(f, 60, SEEK_SET);
      std::fputc(c ^ 0xff, f);
      std::fclose(f);
    } else {  // truncate
      std::fclose(f);
      fs::resize_file(e.path(), 30);
    }
    ++n;
  }
  std::printf("damaged %zu entries\n", n);
  EXPECT(n > 0, "nothing to damage");
  EXPECT(run({"child-record", "all-compiled"}, {cache}) == 0, "damaged entries were used");
  EXPECT(run({"child-record", "none-compiled"}, {cache}) == 0, "entries were not rewritten");
  return g_failures ? 1 : 0;
}

int trim() {
  TempDir dir;
  ff::llvm_backend::DiskCache cache(dir.path.string(), 10000);
  std::string object(1000, 'x');
  for (uint64_t k = 1; k <= 30; ++k)
    cache.store(ff::Hash128{k, 0}, object);
  uint64_t bytes = cache.trim(UINT64_MAX);
  std::printf("30 entries of %zu bytes under a 10000-byte cap: %llu bytes left in %zu entries\n",
              object.size() + 48, static_cast<unsigned long long>(bytes), count_entries(dir.path));
  EXPECT(bytes <= 10000, "%llu bytes above the cap", static_cast<unsigned long long>(bytes));
  EXPECT(cache.load(ff::Hash128{30, 0}).has_value(), "the newest entry was trimmed");
  EXPECT(!cache.load(ff::Hash128{1, 0}).has_value(), "the oldest entry survived");
  ff::llvm_backend::DiskCache off("", 0);
  off.store(ff::Hash128{1, 0}, object);
  EXPECT(!off.load(ff::Hash128{1, 0}).has_value(), "a disabled cache loaded something");
  return g_failures ? 1 : 0;
}

// A kernel compiled again after a flush while its old code is still held: the canonical
// symbol of the stored object is taken, so it compiles under a unique name (and both run);
// once the old code is gone, the next compile after a flush links the stored object.
int flush_while_held() {
  TempDir dir;
  ff::BackendOptions options;
  options.n_threads = 1;
  options.kernel_cache_dir = dir.path.string();
  std::unique_ptr<ff::Backend> be = ff::create_llvm_backend(options);
  ff::KernelIR ir;
  auto F = ff::ScalarType::Float32;
  ir.params = {{ff::ParamKind::BufferIn, F}, {ff::ParamKind::BufferOut, F}};
  uint32_t x = ir.emit(ff::IrOp::Load, F, {0});
  ir.emit(ff::IrOp::Store, F, {1, ir.emit(ff::IrOp::Add, F, {x, x})});
  ir.finalize();
  float in[4] = {1, 2, 3, 4}, out[4] = {};
  auto run = [&](const ff::KernelHandle& k) {
    ff::KernelArg args[2] = {ff::KernelArg::buffer(in), ff::KernelArg::buffer(out)};
    be->launch(k, 4, {}, args);
    return out[3] == 8.f;
  };
  ff::KernelHandle first = be->compile(ir);
  be->flush_kernels();
  ff::KernelHandle second = be->compile(ir);  // the stored object's symbol is still linked
  EXPECT(first.get() != second.get(), "the flush kept the kernel");
  EXPECT(run(first) && run(second), "a kernel computed the wrong result");
  ff::BackendStats s = be->stats();
  EXPECT(s.compiles == 2 && s.disk_cache_hits == 0, "compiles %llu, disk hits %llu",
         static_cast<unsigned long long>(s.compiles),
         static_cast<unsigned long long>(s.disk_cache_hits));
  first.reset();
  second.reset();
  be->flush_kernels();
  ff::KernelHandle third = be->compile(ir);
  EXPECT(run(third), "the stored kernel computed the wrong result");
  s = be->stats();
  EXPECT(s.disk_cache_hits == 1, "the stored object was not linked after the old code went");
  return g_failures ? 1 : 0;
}

int capture() {
  TempDir dir;
  for (bool shutdown : {false, true}) {
    std::string file = (dir.path / (shutdown ? "at-shutdown.ffr" : "at-exit.ffr")).string();
    EXPECT(run({"child-capture", shutdown ? "shutdown" : "exit"}, {"FF_CAPTURE=" + file}) == 0,
           "the capturing process failed");
    EXPECT(fs::exists(file), "no capture written %s", shutdown ? "at shutdown" : "at exit");
    if (!fs::exists(file))
      continue;
    ff::Recording c = ff::Recording::load(file);
    std::printf("capture %s: %s\n", shutdown ? "at shutdown" : "at exit", c.summary().c_str());
    EXPECT(c.is_capture(), "not marked as a capture");
    EXPECT(c.n_ops() >= 3, "too few ops");
    try {
      c.replay({});
      EXPECT(false, "a capture replayed");
    } catch (const ff::FreezeError& e) {
      EXPECT(std::strstr(e.what(), "capture") != nullptr, "message: %s", e.what());
    }
  }
  return g_failures ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  g_self = fs::canonical("/proc/self/exe").string();
  std::vector<std::string> a(argv + 1, argv + argc);
  try {
    if (a.size() == 2 && a[0] == "child-record")
      return child_record(a[1]);
    if (a.size() == 2 && a[0] == "child-save")
      return child_save(a[1]);
    if (a.size() == 3 && a[0] == "child-load-replay")
      return child_load_replay(a[1], a[2]);
    if (a.size() == 2 && a[0] == "child-freeze-save")
      return child_freeze_save(a[1]);
    if (a.size() == 3 && a[0] == "child-freeze-load")
      return child_freeze_load(a[1], a[2]);
    if (a.size() == 1 && a[0] == "frozen-fresh-process")
      return frozen_fresh_process();
    if (a.size() == 2 && a[0] == "child-train-save")
      return child_train_save(a[1]);
    if (a.size() == 2 && a[0] == "child-train-load")
      return child_train_load(a[1]);
    if (a.size() == 1 && a[0] == "training-fresh-process")
      return training_fresh_process();
    if (a.size() == 2 && a[0] == "child-capture")
      return child_capture(a[1] == "shutdown");
    if (a.size() == 1 && a[0] == "two-fill")
      return two_fill();
    if (a.size() == 1 && a[0] == "fresh-process")
      return fresh_process();
    if (a.size() == 1 && a[0] == "damaged-entries")
      return damaged_entries();
    if (a.size() == 1 && a[0] == "trim")
      return trim();
    if (a.size() == 1 && a[0] == "capture")
      return capture();
    if (a.size() == 1 && a[0] == "flush-while-held")
      return flush_while_held();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  std::fprintf(stderr,
               "usage: %s two-fill | fresh-process | frozen-fresh-process | "
               "training-fresh-process | damaged-entries | trim | capture | flush-while-held\n",
               argv[0]);
  return 2;
}
