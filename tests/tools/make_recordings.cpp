// Writes the sample recordings (tests/support/sample_recordings.h) as files into DIR: one
// .ffr per sample, "multi.ffr" holding all of them, "capture.ffr" (a whole-session capture).
// The tool tests' fixture, the fuzzer's seed corpus and the golden file come from here.
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
#include "support/sample_recordings.h"

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

    ff::init("record:llvm");
    ff::Float x = ff::Float::from({1.f, 2.f, 3.f});
    ff::Float y = ff::sqrt(x) * 2.f;
    std::vector<float> host = y.to_vector();  // a host read: only a capture can hold it
    ff::capture().save((dir / "capture.ffr").string());
    ff::shutdown();
    std::printf("wrote %zu recordings, multi.ffr and capture.ffr to %s\n", samples.size(),
                dir.c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "make_recordings: %s\n", e.what());
    return 1;
  }
  return 0;
}
