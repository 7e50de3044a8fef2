// The only owner of ORC LLJIT: host detection, kernel IR -> machine code at two codegen tiers,
// freeing code. llvm::Error / Expected never leave llvm_jit.cpp; failures become
// ff::BackendError.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "backend/ir/kernel_ir.h"
#include "backend/llvm/llvm_codegen.h"

namespace ff::llvm_backend {

/// The fixed kernel ABI: computes every element index in [begin, end); args[p] is parameter p,
/// and args[n_params] the AccumulateMode when the kernel accumulates (llvm_codegen.h).
using KernelFn = void (*)(uint64_t begin, uint64_t end, const uint64_t* args);

/// Codegen effort. Quick (LLVM's -O0 codegen: fast instruction selection and register
/// allocation) compiles ~3x faster; Optimized runs compute-bound kernels ~1.5x faster. Both run
/// memory-bound kernels at the same speed, since the IR is vectorised either way.
enum class Tier : uint8_t { Quick = 0, Optimized = 1 };

/// How kernels are compiled; the defaults are what the backend uses.
struct JitOptions {
  LoopStyle loop_style = LoopStyle::VectorSplitTail;
  /// Vector math (exp, log, sin, cos, tan, ..., atan2, pow) calls glibc's libmvec (at most 4
  /// ulp from the exact result) when it loads.
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

  /// Compiles `ir` (already validated) into fresh machine code under a symbol name unique to
  /// this JIT. Throws ff::BackendError.
  std::unique_ptr<JitCode> compile(const KernelIR& ir, Tier tier = Tier::Optimized);

  /// The symbol a kernel's object code defines when it may be stored in the on-disk cache:
  /// the same in every process ("ffk_<hash>_q" / "_o"), so a stored object links as it is.
  static std::string canonical_symbol(const KernelIR& ir, Tier tier);
  /// Relocatable object code (ELF) for `ir` (already validated) defining `symbol`, not linked.
  /// Throws ff::BackendError.
  std::string emit_object(const KernelIR& ir, Tier tier, const std::string& symbol);
  /// Links object code from emit_object (this process's, or another's from the disk cache)
  /// and returns its entry point. Returns null if `symbol` is linked in this JIT already (a
  /// kernel compiled again after a flush while its old code is still held): the caller then
  /// compiles under a unique name. Throws ff::BackendError for unusable object code.
  std::unique_ptr<JitCode> link(std::string_view object, const std::string& symbol);
  /// Whether `symbol` is linked in this JIT now.
  bool is_linked(const std::string& symbol) const;

  /// Everything besides the IR that decides the machine code: LLVM version, target triple,
  /// CPU, features, data layout, vector width, vector-math library and the codegen options.
  /// Part of the on-disk cache key.
  std::string codegen_fingerprint() const;

  /// Generated LLVM IR of `ir` as text (for tests, debugging and docs).
  std::string emit_llvm_ir(const KernelIR& ir);

  const CodegenTarget& target() const;

 private:
  friend class JitCode;  // its resources keep Impl alive
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

}  // namespace ff::llvm_backend
