// Optional LLVM optimisation passes on a kernel module (off by default: the codegen emits
// vector code directly). Kept apart because the pass-builder headers are slow to compile.
#pragma once

#include <string>

namespace llvm {
class Module;
class TargetMachine;
}  // namespace llvm

namespace ff::llvm_backend {

/// Runs the new-pass-manager pipeline `pipeline` (textual, as `opt -passes=`) on `module`,
/// with `tm` supplying the target's cost model. Throws ff::BackendError on a bad pipeline.
void run_passes(llvm::Module& module, llvm::TargetMachine& tm, const std::string& pipeline);

}  // namespace ff::llvm_backend
