// ORC LLJIT ownership: one LLJIT per LlvmJit, one ResourceTracker (and LLVMContext) per kernel
// so freeing a kernel frees its code. Nothing here lets an exception unwind through LLVM
// frames: llvm::Error is converted to ff::BackendError in our own frames.
#include "backend/llvm/llvm_jit.h"

#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/ExecutionEngine/Orc/ThreadSafeModule.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>

#include <mutex>

#include "backend/llvm/llvm_passes.h"
#include "common/log.h"
#include "freezeframe/errors.h"

namespace ff::llvm_backend {
namespace {

[[noreturn]] void fail(const std::string& what, llvm::Error err) {
  throw BackendError("llvm backend: " + what + ": " + llvm::toString(std::move(err)));
}

template <class T>
T take(llvm::Expected<T> value, const std::string& what) {
  if (!value)
    fail(what, value.takeError());
  return std::move(*value);
}

llvm::CodeGenOpt::Level codegen_level(int level) {
  switch (level) {
    case 0: return llvm::CodeGenOpt::None;
    case 1: return llvm::CodeGenOpt::Less;
    case 3: return llvm::CodeGenOpt::Aggressive;
    default: return llvm::CodeGenOpt::Default;
  }
}

bool has_feature(const std::string& features, const std::string& name) {
  return ("," + features + ",").find(",+" + name + ",") != std::string::npos;
}

}  // namespace

struct LlvmJit::Impl {
  JitOptions options;
  CodegenTarget target;
  std::unique_ptr<llvm::orc::LLJIT> jit;
  std::unique_ptr<llvm::TargetMachine> pass_tm;  // only when options.passes is set
  std::mutex mutex;                              // serialises compiles and code removal
  uint64_t n_kernels = 0;                        // makes every symbol name unique
};

struct JitCode::Resources {
  std::shared_ptr<LlvmJit::Impl> jit;
  llvm::orc::ResourceTrackerSP tracker;
};

JitCode::~JitCode() {
  if (!res_)
    return;
  std::lock_guard lock(res_->jit->mutex);
  if (auto err = res_->tracker->remove())
    ff::logging::llvm().error("freeing kernel code failed: {}", llvm::toString(std::move(err)));
  res_->tracker.reset();
}

LlvmJit::LlvmJit(const JitOptions& options) : impl_(std::make_shared<Impl>()) {
  static std::once_flag once;
  static bool init_failed = false;
  std::call_once(once, [] {
    init_failed = llvm::InitializeNativeTarget() || llvm::InitializeNativeTargetAsmPrinter();
  });
  if (init_failed)
    throw BackendError("llvm backend: LLVM has no native target for this host");

  Impl& im = *impl_;
  im.options = options;
  auto jtmb = take(llvm::orc::JITTargetMachineBuilder::detectHost(), "detecting the host CPU");
  jtmb.setCodeGenOptLevel(codegen_level(options.codegen_opt_level));
  auto layout = take(jtmb.getDefaultDataLayoutForTarget(), "computing the data layout");
  CodegenTarget& t = im.target;
  t.triple = jtmb.getTargetTriple().str();
  t.data_layout = layout.getStringRepresentation();
  t.cpu = jtmb.getCPU();
  t.features = jtmb.getFeatures().getString();
  t.avx512 = has_feature(t.features, "avx512f");
  t.lanes = t.avx512 ? 16 : 8;
  if (!options.passes.empty())
    im.pass_tm = take(jtmb.createTargetMachine(), "creating a target machine");

  im.jit = take(llvm::orc::LLJITBuilder()
                    .setJITTargetMachineBuilder(std::move(jtmb))
                    .setPlatformSetUp(llvm::orc::setUpInactivePlatform)  // no static ctors
                    .create(),
                "creating the ORC LLJIT");
  // Kernels call libm (expf, sinf, ...) once codegen scalarises vector math intrinsics.
  auto process = take(llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(
                          layout.getGlobalPrefix()),
                      "opening the process's symbols");
  im.jit->getMainJITDylib().addGenerator(std::move(process));
  ff::logging::llvm().info("LLVM {} JIT for {} (cpu {}), {} lanes, codegen level {}",
                       LLVM_VERSION_STRING, t.triple, t.cpu, t.lanes, options.codegen_opt_level);
}

LlvmJit::~LlvmJit() = default;

const CodegenTarget& LlvmJit::target() const { return impl_->target; }

std::unique_ptr<JitCode> LlvmJit::compile(const KernelIR& ir) {
  Impl& im = *impl_;
  std::lock_guard lock(im.mutex);
  std::string name = "ffk_" + ir.hash.to_hex() + "_" + std::to_string(im.n_kernels++);
  auto ctx = std::make_unique<llvm::LLVMContext>();
  auto module = emit_kernel(ir, name, im.target, im.options.loop_style, *ctx);
  if (im.pass_tm)
    run_passes(*module, *im.pass_tm, im.options.passes);

  llvm::orc::ResourceTrackerSP tracker = im.jit->getMainJITDylib().createResourceTracker();
  if (auto err = im.jit->addIRModule(
          tracker, llvm::orc::ThreadSafeModule(std::move(module), std::move(ctx))))
    fail("adding kernel " + name, std::move(err));
  auto addr = im.jit->lookup(name);
  if (!addr) {
    llvm::Error err = addr.takeError();
    llvm::consumeError(tracker->remove());
    fail("compiling kernel " + name, std::move(err));
  }
  std::unique_ptr<JitCode> code(new JitCode);
  code->entry_ = addr->toPtr<KernelFn>();
  code->res_ = std::make_unique<JitCode::Resources>(JitCode::Resources{impl_, std::move(tracker)});
  return code;
}

std::string LlvmJit::emit_llvm_ir(const KernelIR& ir) {
  llvm::LLVMContext ctx;
  auto module = emit_kernel(ir, "kernel", impl_->target, impl_->options.loop_style, ctx);
  if (impl_->pass_tm)
    run_passes(*module, *impl_->pass_tm, impl_->options.passes);
  std::string text;
  llvm::raw_string_ostream os(text);
  module->print(os, nullptr);
  return os.str();
}

}  // namespace ff::llvm_backend
