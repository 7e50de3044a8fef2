// The kernel IR operation corpus: a kernel for every opcode and every type it accepts (casts
// and bitcasts between every pair, gathers and scatters for every element and index type,
// masks, range reports, scatter_add ... scatter_or and scatter_inc with collisions), each with
// input data that reaches the edge cases (zero divisors, INT_MIN / -1, NaN, infinities, -0,
// shift counts past the width, negative and out-of-range indices). Every result is the same
// in any order of the lanes, so any grid shape and any GPU must give it bit for bit.
//
// A case runs on any Backend (run_on_backend) or on the PTX reference interpreter
// (run_on_interpreter); compare() checks two runs' final buffers: bit for bit (any NaN equals
// any NaN), or within an ulp bound for the cases that use the transcendental functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/cuda/ptx_codegen.h"

namespace ffcuda {

struct CorpusCase {
  std::string name;
  ff::KernelIR ir;
  size_t size = 0;                         // launch size
  std::vector<std::vector<uint8_t>> init;  // per parameter: a buffer's initial bytes
  std::vector<uint64_t> scalar;            // per parameter: a Scalar parameter's bits
  double ulp = 0;                          // 0: bit-exact; else the bound for float outputs
  // When not empty: every parameter's final bytes (as `init`) by a host model of the kernel
  // (the scatter-reduction and scatter_inc cases carry one).
  std::vector<std::vector<uint8_t>> expect;
};

/// Every case (several hundred kernels).
std::vector<CorpusCase> ir_corpus();

/// The final contents of every parameter's buffer (empty for scalars) after one launch.
using Buffers = std::vector<std::vector<uint8_t>>;

/// Allocates, uploads, launches through backend.compile/launch, downloads.
Buffers run_on_backend(ff::Backend& backend, const CorpusCase& c);

/// Generates PTX for the case and runs it on the interpreter with `grid` x `block` threads,
/// switching threads every `quantum` instructions (PtxModule::set_quantum; 0: the default).
Buffers run_on_interpreter(const CorpusCase& c, const ff::cuda_backend::PtxOptions& options = {},
                           unsigned grid = 3, unsigned block = 64, unsigned quantum = 0);

/// "" when `got` matches `want` for every output parameter, else the first difference.
std::string compare(const CorpusCase& c, const Buffers& got, const Buffers& want, double ulp_bound);

/// Distance in ulp between two finite values (of the type's own precision).
double ulp_distance(double a, double b, bool single);

}  // namespace ffcuda
