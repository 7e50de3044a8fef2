// Running the CUDA toolkit's ptxas from tests: where it is, and assembling a PTX text.
#pragma once

#include <string>
#include <vector>

namespace ffcuda {

/// The ptxas executable: $FF_PTXAS (CMake passes what find_program found), else `ptxas` on
/// PATH, else the toolkit's usual prefix (/usr/local/cuda/bin). Empty when none is found.
std::string find_ptxas();

struct PtxasResult {
  int status = -1;     // exit status
  std::string output;  // stdout and stderr together
};

/// Assembles `ptx` for sm_<sm> with warnings as errors.
PtxasResult run_ptxas(const std::string& ptxas, const std::string& ptx, unsigned sm);

/// Concatenates PTX modules into one: keeps one header for `sm` (version by the PTX policy)
/// and the math globals once, renames every entry `name` to `name_<k>`.
std::string combine_modules(const std::vector<std::string>& modules, unsigned sm);

}  // namespace ffcuda
