// Writes the sample recordings (tests/support/sample_recordings.h) as files into DIR: one
// .ffr per sample, "multi.ffr" holding all of them, "capture.ffr" (a whole-session capture),
// "reuse.ffr" (allocations that take a released buffer over) and "frozen.ffr" (a frozen
// function's f.save: a struct, literals, an alias, a scalar, a written-back argument and an
// opaque set), "frozen_grads.ffr" (a frozen training step on grad-enabled parameters: freeze
// layout 3's gradient part), "frozen_backward.ffr" (a frozen call through whose results
// ff::backward ran, with its frozen backward: freeze layout 4, recording labels),
// "collective.ffr" (one collective of each kind, built by hand). The
// tool tests' fixture, the fuzzer's seed corpus and the golden files come from here.
//
//   ff_test_make_recordings DIR
//   ff_test_make_recordings 0 --write-corpus DIR      (the same, as run_fuzzer.sh asks)
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "common/file_io.h"
#include "frontend/recording_state.h"
#include "recorder/format_writer.h"
#include "support/collective_recording.h"
#include "support/grad_steps.h"
#include "support/sample_recordings.h"

namespace {

struct Body {
  ff::Float pos, vel;
  int id = 0;
};

}  // namespace

FF_STRUCT(Body, pos, vel, id)

namespace {

// ffg::fit_step<ff::Adam> recorded at n = 5 on parameters grad-enabled outside the call (the
// golden file tests/data/frozen-grads-layout-3.ffr is a copy).
void save_frozen_grads(const std::string& path) {
  const size_t n = 5;
  auto step = ff::freeze(ffg::fit_step<ff::Adam>, ff::FreezeOptions{.name = "fit_step"});
  ff::Float64 x = ff::Float64::from(ffg::ramp(n, 0.3, 0.2));
  ff::Float64 y = ff::Float64::from(ffg::ramp(n, -0.1, 1.0));
  ff::Float64 w = ff::zeros<ff::Float64>(n);
  ff::make_opaque(w);
  ff::enable_grad(w);
  ff::Adam opt(0.05);
  opt.init(w);
  step(w, opt, x, y);
  step.save(path);
}

// ffg::through_step recorded at n = 5, then replayed twice with ff::backward through its
// result and written argument (the loss of tests/freeze_grads_test.cpp's through_and_back):
// its frozen backward holds one recording per output (the golden file
// tests/data/frozen-backward-layout-4.ffr is a copy).
void save_frozen_backward(const std::string& path) {
  const size_t n = 5;
  auto step = ff::freeze(ffg::through_step, ff::FreezeOptions{.name = "through_step"});
  ff::Float x = ff::Float::from(std::vector<float>(n, 0.75f));
  for (int call = 0; call < 3; ++call) {
    ff::Float w = ff::Float::from(std::vector<float>(n, 0.5f));
    ff::Float y = ff::Float::from(std::vector<float>(n, 0.125f));
    ff::enable_grad(w);
    ff::Float r = step(w, y, x);
    ff::backward(ff::sum(r * r) + ff::sum(y));
  }
  step.save(path);
}

// Gathers at reversed indices keep every launch apart, so each eval allocates a buffer and
// the optimiser hands the released one to the next allocation.
ff::Recording reuse_recording() {
  using ff::Float;
  Float x = Float::from(std::vector<float>(64, 1.5f));
  ff::eval(x);
  return ff::record({x}, [&] {
    ff::UInt32 i = ff::arange<ff::UInt32>(ff::width(x));
    ff::UInt32 rev = ff::max_reduce(i) - i;
    Float y = x;
    for (int k = 0; k < 4; ++k) {
      y = ff::gather<Float>(y, rev) * 2.f + 1.f;
      ff::eval(y);
    }
    return std::vector<ff::AnyArray>{y};
  });
}

// Leaves: b.pos, b.vel (inputs, one size group), dt (an input of size 1), scale (a literal of
// size 1, made opaque by the second call), half (a literal of b.pos's size), w (dt again).
void save_frozen(const std::string& path) {
  using ff::Float;
  auto f = ff::freeze(
      [](Body& b, const Float& dt, const Float& scale, int mode, const Float& half,
         const Float& w) {
        b.vel = b.vel * scale + dt * w;
        b.pos = b.pos + b.vel * half;
        b.id += mode;
        return ff::sum(b.pos);
      },
      ff::FreezeOptions{.name = "dumped", .version = "v7"});
  for (float scale : {2.f, 3.f}) {
    Body b{Float::from(std::vector<float>(100, 1.f)), Float::from(std::vector<float>(100, 0.f)), 7};
    ff::eval(b.pos, b.vel);
    Float dt = Float::from({0.1f});
    ff::eval(dt);
    Float half = ff::full<Float>(0.5f, ff::width(b.pos));
    (void)f(b, dt, Float(scale), 3, half, dt);
  }
  f.save(path);
}

}  // namespace

int main(int argc, char** argv) {
  // "0 --write-corpus DIR" is how tests/fuzz/run_fuzzer.sh asks for a seed corpus.
  bool corpus = argc == 4 && std::string(argv[2]) == "--write-corpus";
  if (argc != 2 && !corpus) {
    std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  std::filesystem::path dir = argv[corpus ? 3 : 1];
  std::filesystem::create_directories(dir);
  try {
    ff::init("llvm");
    auto samples = ff_samples::sample_recordings();
    std::vector<const ff::rec::RecordingData*> all;
    for (auto& [name, r] : samples) {
      r.save((dir / (name + ".ffr")).string());
      all.push_back(ff::detail::recording_state(r)->data.get());
    }
    ff::write_file_atomic((dir / "multi.ffr").string(), ff::format::write(all), false);
    reuse_recording().save((dir / "reuse.ffr").string());
    save_frozen((dir / "frozen.ffr").string());
    save_frozen_grads((dir / "frozen_grads.ffr").string());
    save_frozen_backward((dir / "frozen_backward.ffr").string());
    ff::write_file_atomic((dir / "collective.ffr").string(),
                          ff::format::write(ff_samples::collective_recording()), false);

    ff::init("record:llvm");
    ff::Float x = ff::Float::from({1.f, 2.f, 3.f});
    ff::Float y = ff::sqrt(x) * 2.f;
    std::vector<float> host = y.to_vector();  // a host read: only a capture can hold it
    ff::capture().save((dir / "capture.ffr").string());
    ff::shutdown();
    std::printf(
        "wrote %zu recordings, multi.ffr, reuse.ffr, frozen.ffr, frozen_grads.ffr, "
        "frozen_backward.ffr, collective.ffr and "
        "capture.ffr to %s\n",
        samples.size(), dir.c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "make_recordings: %s\n", e.what());
    return 1;
  }
  return 0;
}
