// Deterministic mutation run of the recording file fuzz target, for CTest: the sample
// recordings (tests/support/sample_recordings.h) are written as files and each is damaged many
// times (random bytes overwritten, spans zeroed or duplicated, truncations, bytes inserted),
// then parsed, validated and planned with checksums bypassed. Fails on a crash, a property
// violation, or a run in which no mutant reached the ops.
//
//   ff_fuzz_recording_file_corpus [mutants per sample=2000] [seed=1]
#include <freezeframe/freezeframe.h>

#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "frontend/recording_state.h"
#include "fuzz/recording_file_target.h"
#include "recorder/format_writer.h"
#include "support/collective_recording.h"
#include "support/sample_recordings.h"

int main(int argc, char** argv) {
  size_t mutants = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 2000;
  uint64_t seed = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 1;
  ff::init("llvm");
  std::vector<std::vector<std::byte>> seeds;
  for (auto& [name, r] : ff_samples::sample_recordings())
    seeds.push_back(ff::format::write(*ff::detail::recording_state(r)->data));
  seeds.push_back(ff::format::write(ff_samples::collective_recording()));  // format 1.6's op
  std::mt19937_64 rng(seed);
  auto pick = [&](size_t n) { return n ? static_cast<size_t>(rng() % n) : 0; };
  ff::fuzz::FileStats stats;
  for (const auto& good : seeds) {
    ff::fuzz::run_recording_file(good, stats);
    for (size_t m = 0; m < mutants; ++m) {
      std::vector<std::byte> b = good;
      int edits = 1 + static_cast<int>(pick(4));
      for (int e = 0; e < edits && !b.empty(); ++e) {
        size_t at = pick(b.size());
        switch (pick(10)) {
          case 0:
          case 1:
          case 2:
          case 3:
          case 4:
            b[at] = static_cast<std::byte>(rng());
            break;
          case 5:
          case 6: {  // an interesting 32-bit value
            const uint32_t values[] = {0, 1, 2, 0x7fffffffu, 0xfffffffeu, 0xffffffffu, 0x10000u};
            uint32_t v = values[pick(std::size(values))];
            for (size_t k = 0; k < 4 && at + k < b.size(); ++k)
              b[at + k] = static_cast<std::byte>(v >> (8 * k));
            break;
          }
          case 7:
            b.resize(at);
            break;
          case 8:
            b.insert(b.begin() + static_cast<long>(at), static_cast<std::byte>(rng()));
            break;
          default:
            for (size_t k = 0; k < 8 && at + k < b.size(); ++k)
              b[at + k] = std::byte{0};
        }
      }
      ff::fuzz::run_recording_file(b, stats);
    }
  }
  ff::shutdown();
  return ff::fuzz::report(stats, "recording file mutations") ? 0 : 1;
}
