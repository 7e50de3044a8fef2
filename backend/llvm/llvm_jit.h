// The only owner of ORC LLJIT: host detection, kernel IR -> machine code at two codegen tiers,
// freeing code. llvm::Error / Expected never leave llvm_jit.cpp; failures become
// ff::BackendError.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "backend/ir/kernel_ir.h"
#include "backend/llvm/llvm_codegen.h"

namespace ff::llvm_backend {

/// The fixed kernel ABI: computes every element index in [begin, end); args[p] is parameter p.
using KernelFn = void (*)(uint64_t begin, uint64_t end, const uint64_t* args);

/// Codegen effort. Quick (LLVM's -O0 codegen: fast instruction selection and register
/// allocation) compiles ~3x faster; Optimized runs compute-bound kernels ~1.5x faster. Both run
/// memory-bound kernels at the same speed, since the IR is vectorised either way.
enum class Tier : uint8_t { Quick = 0, Optimized = 1 };

/// How kernels are compiled; the defaults are what the backend uses.
struct JitOptions {
  LoopStyle loop_style = LoopStyle::VectorSplitTail;
  /// Vector exp/log/sin/cos call glibc's libmvec (at most 4 ulp from libm) when it loads.
  bool vector_math = true;
  /// LLVM codegen level of Tier::Optimized: 0 None, 1 Less, 2 Default, 3 Aggressive.
  /// (1 runs as fast as 2 and 3 on our IR and compiles faster.)
  int optimized_level = 1;
  /// New-pass-manager pipeline run on each module before codegen, e.g.
  /// "function(loop-vectorize,instcombine,simplifycfg)"; empty runs none.
  std::string passes;
};

class LlvmJit;

/// Machine code of one kernel. Owns its ResourceTracker: destroying it frees the code. Keeps
/// the JIT alive, so it may outlive the LlvmJit and the backend that made it.
class JitCode {
 public:
  ~JitCode();
  JitCode(const JitCode&) = delete;
  JitCode& operator=(const JitCode&) = delete;

  KernelFn entry() const { return entry_; }

 private:
  friend class LlvmJit;
  struct Resources;
  JitCode() = default;

  KernelFn entry_ = nullptr;
  std::unique_ptr<Resources> res_;
};

/// One LLJIT for the host CPU. Thread-safe: compiles of one tier are serialised, the two tiers
/// compile concurrently.
class LlvmJit {
 public:
  /// Detects the host and creates the JIT. Throws ff::BackendError on failure.
  explicit LlvmJit(const JitOptions& options = {});
  ~LlvmJit();
  LlvmJit(const LlvmJit&) = delete;
  LlvmJit& operator=(const LlvmJit&) = delete;

  /// Compiles `ir` (already validated) into fresh machine code. Throws ff::BackendError.
  std::unique_ptr<JitCode> compile(const KernelIR& ir, Tier tier = Tier::Optimized);

  /// Generated LLVM IR of `ir` as text (for tests, debugging and docs).
  std::string emit_llvm_ir(const KernelIR& ir);

  const CodegenTarget& target() const;

 private:
  friend class JitCode;  // its resources keep Impl alive
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

}  // namespace ff::llvm_backend
