// Recordings made on the LLVM backend replayed on the CUDA backend, outputs within the ulp
// bounds of docs/cuda.md: in one process where both backends are built (the full build, also
// on the simulated GPU in CI), and from files the LLVM build exported (tests/gpu/export_
// recordings.cpp) on a GPU machine that has only the CUDA-only build.
#include <catch2/catch.hpp>
#include <cstdlib>
#include <fstream>
#include <iostream>

#include "cuda/backend_env.h"
#include "cuda/cross_corpus.h"

using namespace ffcuda;

namespace {

// Float32 results within 16 ulp or 1e-5 of max(1, |want|) (composite expressions cancel),
// Float64 within 16 ulp or 1e-10; integers and Bool exactly.
void check_outputs(const std::vector<ffr::HostArray>& got,
                   const std::vector<ffr::HostArray>& want) {
  REQUIRE(got.size() == want.size());
  for (size_t k = 0; k < got.size(); ++k) {
    INFO("output " << k);
    double tol = got[k].type == ff::ScalarType::Float32 ? 1e-5 : 1e-10;
    CHECK(compare_within(got[k], want[k], 16, tol) == "");
  }
}

}  // namespace

#ifdef FF_HAVE_LLVM_BACKEND
TEST_CASE("recordings made on llvm replay on cuda within the ulp bounds", "[cuda][cross]") {
  if (!require_cuda())
    return;
  for (const CrossCase& c : cross_corpus()) {
    INFO("cross case " << c.name);
    ffr::fresh("llvm");
    ff::Recording r;
    {
      ffr::Inputs rec_in = ffr::make_inputs(c.name, c.inputs, kCrossRecordSize);
      r = ff::record(rec_in, [&] { return c.fn(rec_in); });
    }
    for (size_t n : cross_replay_sizes()) {
      INFO("replayed at size " << n);
      ffr::fresh("llvm");
      ffr::Case traced{c.name, c.inputs, c.fn};
      std::vector<ffr::HostArray> want =
          ffr::run_traced(traced, ffr::make_inputs(c.name, c.inputs, n));
      ffr::fresh("cuda");
      ff::Stats s0 = ff::stats();
      ffr::Inputs outs = r.replay(ffr::make_inputs(c.name, c.inputs, n));
      ff::Stats s1 = ff::stats();
      CHECK(s1.traced_kernels == s0.traced_kernels);
      check_outputs(ffr::snapshot(outs), want);
    }
  }
  ff::shutdown();
}
#endif

TEST_CASE("recording files made on llvm replay on cuda within the ulp bounds",
          "[cuda][cross][files]") {
  if (!require_cuda())
    return;
  const char* dir_env = std::getenv("FF_CUDA_CROSS_DATA");
  std::string dir = dir_env && *dir_env ? dir_env : "";
  std::string why;
  if (!kHaveRecordingFiles)
    why = "ff::Recording::save/load are not in this build";
  else if (dir.empty())
    why = "FF_CUDA_CROSS_DATA names no folder of exported recordings";
  else if (!std::ifstream(dir + "/" + cross_corpus().front().name + ".ffr"))
    why = dir + " holds no exported recordings";
  if (!why.empty()) {
    std::cout << "skipped: recording files not available (" << why << ")\n";
    return;
  }
  ffr::fresh("cuda");
  size_t replayed = 0;
  for (const CrossCase& c : cross_corpus()) {
    INFO("cross case " << c.name);
    std::optional<ff::Recording> r = load_recording(dir + "/" + c.name + ".ffr");
    REQUIRE(r.has_value());
    for (size_t n : cross_replay_sizes()) {
      INFO("replayed at size " << n);
      std::string stem = dir + "/" + c.name + "_" + std::to_string(n);
      ffr::Inputs in = to_inputs(load_arrays(stem + ".in"));
      ffr::Inputs outs = r->replay(in);
      check_outputs(ffr::snapshot(outs), load_arrays(stem + ".out"));
      ++replayed;
    }
  }
  CHECK(replayed == cross_corpus().size() * cross_replay_sizes().size());
  ff::shutdown();
}
