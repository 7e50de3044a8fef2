// libFuzzer entry point of the recording file target (recording_file_target.h), built with
// FF_FUZZ=ON and clang; scripts/fuzz.sh recording_file runs it from a corpus of real
// recordings. At exit the run fails (status 3) if no input reached the ops.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "fuzz/recording_file_target.h"

namespace {

ff::fuzz::FileStats g_stats;

void check_at_exit() {
  if (!ff::fuzz::report(g_stats, "recording file fuzzer"))
    std::_Exit(3);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  std::atexit(check_at_exit);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ff::fuzz::run_recording_file({reinterpret_cast<const std::byte*>(data), size}, g_stats);
  return 0;
}
