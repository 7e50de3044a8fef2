// Exports the cross-backend corpus (tests/cuda/cross_corpus.h) recorded on the LLVM backend:
// for each function its recording (<name>.ffr) and, per replay size n, the inputs
// (<name>_<n>.in) and the outputs the function gives traced on LLVM (<name>_<n>.out). The GPU
// machine, which has only the CUDA-only build, replays these on CUDA (cuda_cross_test.cpp).
//
//   ff_cuda_export_recordings <folder>
//
// Exit status 0 also when this build cannot save recordings (it says so and writes nothing).
#include <freezeframe/freezeframe.h>

#include <filesystem>
#include <iostream>

#include "cuda/cross_corpus.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: " << argv[0] << " <folder>\n";
    return 2;
  }
  if (!ffcuda::kHaveRecordingFiles) {
    std::cout << "recording files are not in this build (ff::Recording::save/load): nothing "
                 "exported\n";
    return 0;
  }
  try {
    std::filesystem::create_directories(argv[1]);
    std::string dir = argv[1];
    ff::init("llvm");
    size_t files = 0;
    for (const ffcuda::CrossCase& c : ffcuda::cross_corpus()) {
      ffr::Inputs rec_in = ffr::make_inputs(c.name, c.inputs, ffcuda::kCrossRecordSize);
      ff::Recording r = ff::record(rec_in, [&] { return c.fn(rec_in); });
      ffcuda::save_recording(r, dir + "/" + c.name + ".ffr");
      ++files;
      for (size_t n : ffcuda::cross_replay_sizes()) {
        std::string stem = dir + "/" + c.name + "_" + std::to_string(n);
        ffr::Inputs in = ffr::make_inputs(c.name, c.inputs, n);
        ffcuda::save_arrays(stem + ".in", ffr::snapshot(in));
        ffr::Case traced{c.name, c.inputs, c.fn};
        ffcuda::save_arrays(stem + ".out", ffr::run_traced(traced, in));
        files += 2;
      }
    }
    ff::shutdown();
    std::cout << "exported " << files << " files to " << dir << "\n";
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "export failed: " << e.what() << "\n";
    return 1;
  }
}
