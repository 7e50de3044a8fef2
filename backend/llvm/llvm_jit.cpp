// ORC LLJIT ownership. Each kernel gets its own LLVMContext and module, is compiled to an
// object file by the TargetMachine of its tier (ours, not LLJIT's compile layer, so one JIT
// serves both tiers), and is linked under its own ResourceTracker so freeing the kernel frees
// its code. Nothing here lets an exception unwind through LLVM frames: llvm::Error is
// converted to ff::BackendError in our own frames.
#include "backend/llvm/llvm_jit.h"

#include <llvm/ExecutionEngine/Orc/CompileUtils.h>
#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/IR/DiagnosticInfo.h>
#include <llvm/IR/DiagnosticPrinter.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>

#include <atomic>
#include <mutex>
#include <unordered_set>

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
    case 0:
      return llvm::CodeGenOpt::None;
    case 1:
      return llvm::CodeGenOpt::Less;
    case 3:
      return llvm::CodeGenOpt::Aggressive;
    default:
      return llvm::CodeGenOpt::Default;
  }
}

// LLVM's default handler prints remarks and warnings to stderr (and exits on errors): log
// them instead, and keep the first error to report after codegen.
void on_diagnostic(const llvm::DiagnosticInfo& info, void* first_error) {
  std::string text;
  llvm::raw_string_ostream os(text);
  llvm::DiagnosticPrinterRawOStream printer(os);
  info.print(printer);
  auto* error = static_cast<std::string*>(first_error);
  if (info.getSeverity() == llvm::DS_Error && error->empty())
    *error = os.str();
  else
    ff::logging::llvm().debug("LLVM: {}", os.str());
}

bool has_feature(const std::string& features, const std::string& name) {
  return ("," + features + ",").find(",+" + name + ",") != std::string::npos;
}

}  // namespace

struct LlvmJit::Impl {
  JitOptions options;
  CodegenTarget target;

  // Codegen per tier. A TargetMachine caches subtargets without locking: one user at a time.
  struct Codegen {
    std::mutex mutex;
    std::unique_ptr<llvm::TargetMachine> tm;
  };

  Codegen codegen[2];
  std::unique_ptr<llvm::orc::LLJIT> jit;  // after codegen: destroyed first (it points at one)
  std::unique_ptr<llvm::orc::JITTargetMachineBuilder> jtmb;  // for creating the second tier
  std::atomic<uint64_t> n_kernels{0};                        // makes symbol names unique
  mutable std::mutex symbols_mutex;
  std::unordered_set<std::string> symbols;  // linked now (two definitions would clash)
};

struct JitCode::Resources {
  std::shared_ptr<LlvmJit::Impl> jit;
  llvm::orc::ResourceTrackerSP tracker;
  std::string symbol;
};

JitCode::~JitCode() {
  if (!res_)
    return;
  // ORC serialises removal with lookups and linking itself.
  if (auto err = res_->tracker->remove())
    ff::logging::llvm().error("freeing kernel code failed: {}", llvm::toString(std::move(err)));
  res_->tracker.reset();
  std::lock_guard lock(res_->jit->symbols_mutex);
  res_->jit->symbols.erase(res_->symbol);
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
  auto layout = take(jtmb.getDefaultDataLayoutForTarget(), "computing the data layout");
  CodegenTarget& t = im.target;
  t.triple = jtmb.getTargetTriple().str();
  t.data_layout = layout.getStringRepresentation();
  t.cpu = jtmb.getCPU();
  t.features = jtmb.getFeatures().getString();
  t.avx512 = has_feature(t.features, "avx512f");
  t.lanes = t.avx512 ? 16 : 8;
  im.jtmb = std::make_unique<llvm::orc::JITTargetMachineBuilder>(jtmb);

  // LLJIT's own compile layer stays unused (we add object files), so give it our quick
  // TargetMachine's compiler instead of letting it build a third one.
  auto& quick = im.codegen[static_cast<int>(Tier::Quick)];
  jtmb.setCodeGenOptLevel(llvm::CodeGenOpt::None);
  quick.tm = take(jtmb.createTargetMachine(), "creating a target machine");
  llvm::TargetMachine* quick_tm = quick.tm.get();
  im.jit =
      take(llvm::orc::LLJITBuilder()
               .setJITTargetMachineBuilder(std::move(jtmb))
               .setCompileFunctionCreator(
                   [quick_tm](llvm::orc::JITTargetMachineBuilder)
                       -> llvm::Expected<std::unique_ptr<llvm::orc::IRCompileLayer::IRCompiler>> {
                     return std::make_unique<llvm::orc::SimpleCompiler>(*quick_tm);
                   })
               .setPlatformSetUp(llvm::orc::setUpInactivePlatform)  // no static ctors
               .create(),
           "creating the ORC LLJIT");
  // Kernels call libm (expf, sinf, ...) once codegen scalarises vector math intrinsics.
  auto process =
      take(llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(layout.getGlobalPrefix()),
           "opening the process's symbols");
  im.jit->getMainJITDylib().addGenerator(std::move(process));
  if (options.vector_math && (t.avx512 || has_feature(t.features, "avx2"))) {
    auto mvec =
        llvm::orc::DynamicLibrarySearchGenerator::Load("libmvec.so.1", layout.getGlobalPrefix());
    if (mvec) {
      im.jit->getMainJITDylib().addGenerator(std::move(*mvec));
      t.vector_math_isa = t.avx512 ? 'e' : 'd';
      t.vector_math_bits = t.avx512 ? 512 : 256;
    } else {
      ff::logging::llvm().info("libmvec not loaded ({}): vector math calls libm per element",
                               llvm::toString(mvec.takeError()));
    }
  }
  ff::logging::llvm().info("LLVM {} JIT for {} (cpu {}), {} lanes, optimized codegen level {}",
                           LLVM_VERSION_STRING, t.triple, t.cpu, t.lanes, options.optimized_level);
}

LlvmJit::~LlvmJit() = default;

const CodegenTarget& LlvmJit::target() const {
  return impl_->target;
}

std::string LlvmJit::canonical_symbol(const KernelIR& ir, Tier tier) {
  return "ffk_" + ir.hash.to_hex() + (tier == Tier::Quick ? "_q" : "_o");
}

std::string LlvmJit::emit_object(const KernelIR& ir, Tier tier, const std::string& symbol) {
  Impl& im = *impl_;
  Impl::Codegen& cg = im.codegen[static_cast<int>(tier)];
  std::lock_guard lock(cg.mutex);
  if (!cg.tm) {
    llvm::orc::JITTargetMachineBuilder jtmb = *im.jtmb;
    jtmb.setCodeGenOptLevel(codegen_level(im.options.optimized_level));
    cg.tm = take(jtmb.createTargetMachine(), "creating a target machine");
  }
  llvm::LLVMContext ctx;
  std::string error;
  ctx.setDiagnosticHandlerCallBack(on_diagnostic, &error);
  auto module =
      emit_kernel(ir, symbol, im.target, im.options.loop_style, ctx, tier == Tier::Optimized);
  if (!im.options.passes.empty())
    run_passes(*module, *cg.tm, im.options.passes);
  llvm::orc::SimpleCompiler compiler(*cg.tm);
  std::unique_ptr<llvm::MemoryBuffer> object =
      take(compiler(*module), "generating code for kernel " + symbol);
  if (!error.empty())
    throw BackendError("llvm backend: generating code for kernel " + symbol + ": " + error);
  return std::string(object->getBufferStart(), object->getBufferSize());
}

bool LlvmJit::is_linked(const std::string& symbol) const {
  std::lock_guard lock(impl_->symbols_mutex);
  return impl_->symbols.count(symbol) != 0;
}

std::unique_ptr<JitCode> LlvmJit::link(std::string_view object, const std::string& symbol) {
  Impl& im = *impl_;
  {
    std::lock_guard lock(im.symbols_mutex);
    if (!im.symbols.insert(symbol).second)
      return nullptr;
  }
  auto unreserve = [&] {
    std::lock_guard lock(im.symbols_mutex);
    im.symbols.erase(symbol);
  };
  llvm::orc::ResourceTrackerSP tracker = im.jit->getMainJITDylib().createResourceTracker();
  auto buffer =
      llvm::MemoryBuffer::getMemBufferCopy(llvm::StringRef(object.data(), object.size()), symbol);
  if (auto err = im.jit->addObjectFile(tracker, std::move(buffer))) {
    unreserve();
    fail("adding kernel " + symbol, std::move(err));
  }
  auto addr = im.jit->lookup(symbol);
  if (!addr) {
    llvm::Error err = addr.takeError();
    llvm::consumeError(tracker->remove());
    unreserve();
    fail("linking kernel " + symbol, std::move(err));
  }
  std::unique_ptr<JitCode> code(new JitCode);
  code->entry_ = addr->toPtr<KernelFn>();
  code->res_ =
      std::make_unique<JitCode::Resources>(JitCode::Resources{impl_, std::move(tracker), symbol});
  return code;
}

std::unique_ptr<JitCode> LlvmJit::compile(const KernelIR& ir, Tier tier) {
  std::string name = "ffk_" + ir.hash.to_hex() + "_" + std::to_string(impl_->n_kernels++);
  std::unique_ptr<JitCode> code = link(emit_object(ir, tier, name), name);
  if (!code)  // unique names never clash
    throw BackendError("llvm backend: kernel symbol " + name + " is already linked");
  return code;
}

std::string LlvmJit::codegen_fingerprint() const {
  const Impl& im = *impl_;
  const CodegenTarget& t = im.target;
  return std::string("codegen-revision ") + std::to_string(kCodegenRevision) + "\nllvm " +
         LLVM_VERSION_STRING + "\ntriple " + t.triple + "\ncpu " + t.cpu + "\nfeatures " +
         t.features + "\nlayout " + t.data_layout + "\nlanes " + std::to_string(t.lanes) +
         "\nvector-math " +
         (t.vector_math_isa ? std::string(1, t.vector_math_isa) : std::string("none")) + " " +
         std::to_string(t.vector_math_bits) + "\nloop-style " +
         std::to_string(static_cast<int>(im.options.loop_style)) + "\noptimized-level " +
         std::to_string(im.options.optimized_level) + "\npasses " + im.options.passes + "\n";
}

std::string LlvmJit::emit_llvm_ir(const KernelIR& ir) {
  llvm::LLVMContext ctx;
  auto module = emit_kernel(ir, "kernel", impl_->target, impl_->options.loop_style, ctx);
  if (!impl_->options.passes.empty()) {
    Impl::Codegen& cg = impl_->codegen[static_cast<int>(Tier::Quick)];
    std::lock_guard lock(cg.mutex);
    run_passes(*module, *cg.tm, impl_->options.passes);
  }
  std::string text;
  llvm::raw_string_ostream os(text);
  module->print(os, nullptr);
  return os.str();
}

}  // namespace ff::llvm_backend
