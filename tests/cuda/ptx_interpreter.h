// A reference interpreter for the PTX the CUDA backend generates, so the code generator's
// semantics are tested on machines without a GPU (CI) against the LLVM backend and the
// scalar references.
//
// It is not a general PTX implementation: it understands the subset freezeframe emits
// (ptx_codegen.cpp, ptx_math.cpp, ptx_builtins.cpp) and throws PtxError on anything else, so a
// new instruction form in the generator fails the tests loudly instead of being misread.
// Semantics follow the PTX ISA for what that subset uses: float -> integer conversions
// saturate and map NaN to 0, shift counts past the width give 0 (or the sign), min/max.f
// ignore a NaN operand, `.rn` arithmetic is IEEE round to nearest (the host's, without FTZ),
// add.cc/addc chain a carry flag. Device addresses are host addresses: every global access
// is checked against the ranges registered with allow(), so an access a masked gather or
// scatter should never make fails the test instead of reading stray memory.
//
// Threads of a block run one after the other up to the next collective instruction
// (bar.sync, shfl.sync, vote.sync), or take turns of a few instructions (set_quantum); a warp's
// shuffle or ballot runs once all its live lanes reach the same one, a barrier once every live
// thread of the block has. Blocks run in order.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace ffcuda {

class PtxError : public std::runtime_error {
 public:
  explicit PtxError(const std::string& what) : std::runtime_error(what) {}
};

struct PtxProgram;  // decoded module (ptx_interpreter.cpp)

class PtxModule {
 public:
  /// Parses and decodes `text`. Throws PtxError for syntax it does not know.
  explicit PtxModule(const std::string& text);
  ~PtxModule();
  PtxModule(PtxModule&&) noexcept;

  /// Makes [p, p + bytes) accessible to kernels (global memory).
  void allow(const void* p, size_t bytes);
  /// Forgets every range given to allow().
  void clear_allowed();

  /// Runs `entry` with `grid` blocks of `block` threads; `params` are the entry's parameter
  /// words in order. Throws PtxError on an unknown entry, a bad access, a deadlock or more
  /// than `max_instructions` executed instructions.
  void launch(const std::string& entry, unsigned grid, unsigned block,
              std::span<const uint64_t> params, uint64_t max_instructions = 4'000'000'000ull);

  /// The number of parameters of `entry`; throws PtxError when there is no such entry.
  size_t param_count(const std::string& entry) const;

  /// Instructions executed by all launches so far.
  uint64_t executed() const { return executed_; }

  /// Later launches switch between the threads of a block every `quantum` instructions (0, the
  /// default: a thread runs up to its next collective instruction), so other threads' atomics
  /// land between a thread's load of an element and its compare-and-swap, and retry loops
  /// retry.
  void set_quantum(unsigned quantum) { quantum_ = quantum; }

 private:
  std::unique_ptr<PtxProgram> program_;
  std::map<uint64_t, uint64_t> allowed_;  // begin -> end
  uint64_t executed_ = 0;
  unsigned quantum_ = 0;
};

}  // namespace ffcuda
