// Neutral kernel IR -> LLVM IR: one module holding one kernel function with the fixed ABI
//   extern "C" void kernel(uint64_t begin, uint64_t end, const uint64_t* args)
// args[p] is parameter p; a kernel with accumulating instructions (ScatterAdd) also reads
// args[n_params], the launch's AccumulateMode (accumulate_launch.h).
// No LLVM header is included here; callers own the LLVMContext.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "backend/ir/kernel_ir.h"

namespace llvm {
class LLVMContext;
class Module;
}  // namespace llvm

namespace ff::llvm_backend {

/// The generated code's revision: part of the on-disk kernel cache's key (with the library
/// version, LLVM and the target), so bump it whenever a change to the code generator changes
/// the machine code of some kernel; entries of other revisions are then never loaded.
/// 2: gathers at "lane index + uniform" as vector loads, division by uniforms by multiply.
/// 3: interleaved vector iterations at the optimised tier.
/// 4: accumulating kernels read the mode word args[n_params] (exclusive or atomic adds).
/// 5: float -> integer casts clamp in the float type instead of calling llvm.fpto*i.sat;
///    gathers with 32-bit indices from sources of at most 2^31 elements use 32-bit indices.
/// 6: the unrolled exclusive accumulation reads an index or value that is an unwritten
///    input's element from memory (accumulating kernels' mode word gains kWritesUnaliased,
///    then named for the targets only).
/// 7: ... its index only; the value is taken from its vector register.
inline constexpr int kCodegenRevision = 7;

/// How the element loop is generated.
enum class LoopStyle : uint8_t {
  /// Explicit `lanes`-wide vector loop without masks, then one masked vector iteration for the
  /// tail. Needs no optimisation pass (the default).
  VectorSplitTail = 0,
  /// One explicit vector loop whose every iteration is masked (smaller code, a few more
  /// instructions per iteration).
  VectorMasked = 1,
  /// A scalar loop carrying vectoriser hints; needs the loop vectoriser to be fast.
  Scalar = 2,
};

/// What the generated code may assume about the host.
struct CodegenTarget {
  std::string triple;
  std::string data_layout;
  std::string cpu;
  std::string features;  // "+avx2,+avx512f,..."
  unsigned lanes = 8;    // elements per vector iteration (16 with AVX-512)
  bool avx512 = false;
  /// glibc's libmvec, when it is loaded: the ISA letter of its vector-function ABI names
  /// ('e' AVX-512, 'd' AVX2) and its vector width in bits. 0: vector exp/log/sin/cos are
  /// scalarised by LLVM into one libm call per element.
  char vector_math_isa = 0;
  unsigned vector_math_bits = 0;
};

/// Vector iterations the VectorSplitTail loop interleaves for `ir` when interleaving is on:
/// independent copies of the body, instruction by instruction, so a long chain of dependent
/// operations (a fused kernel) keeps several elements' chains in flight instead of waiting
/// on each result's latency. 1 for kernels with scatters (their writes to one index keep the
/// element order) and for huge kernels (compile time).
unsigned interleave_factor(const KernelIR& ir);

/// Builds a module in `ctx` defining the kernel `name` for `ir` (which must be valid), with
/// interleave_factor(ir) vector iterations interleaved when `interleave` (the optimised tier).
/// Throws ff::BackendError if the generated IR fails LLVM's verifier (a codegen bug).
std::unique_ptr<llvm::Module> emit_kernel(const KernelIR& ir, const std::string& name,
                                          const CodegenTarget& target, LoopStyle style,
                                          llvm::LLVMContext& ctx, bool interleave = false);

}  // namespace ff::llvm_backend
