// Runs a textual new-pass-manager pipeline on one kernel module.
#include "backend/llvm/llvm_passes.h"

#include <llvm/IR/Module.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Target/TargetMachine.h>

#include "freezeframe/errors.h"

namespace ff::llvm_backend {

void run_passes(llvm::Module& module, llvm::TargetMachine& tm, const std::string& pipeline) {
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PassBuilder pb(&tm);
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::ModulePassManager mpm;
  if (auto err = pb.parsePassPipeline(mpm, pipeline))
    throw BackendError("llvm backend: pass pipeline '" + pipeline +
                       "': " + llvm::toString(std::move(err)));
  mpm.run(module, mam);
}

}  // namespace ff::llvm_backend
