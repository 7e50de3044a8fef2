// See kernel_ir_target.h.
#include "fuzz/kernel_ir_target.h"

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>

#include "backend/backend.h"
#include "backend/ir/kernel_ir.h"
#include "backend/llvm/llvm_backend.h"
#include "freezeframe/errors.h"

namespace ff::fuzz {
namespace {

[[noreturn]] void violated(const char* what, const std::string& detail) {
  std::fprintf(stderr, "kernel IR property violated: %s\n%s\n", what, detail.c_str());
  std::abort();
}

Backend& backend() {
  // One backend for the whole run (threads and JIT start-up once); single-threaded, so a
  // fuzzer's timing stays deterministic.
  static std::unique_ptr<Backend> b = [] {
    BackendOptions options;
    options.n_threads = 1;
    return create_llvm_backend(options);
  }();
  return *b;
}

}  // namespace

IrOutcome run_kernel_ir(std::span<const std::byte> bytes, bool compile) {
  KernelIR ir;
  try {
    ir = KernelIR::deserialize(bytes);  // validates too
  } catch (const FormatError& e) {
    return std::string_view(e.what()).find("kernel IR instruction") != std::string_view::npos ||
                   std::string_view(e.what()).find("kernel IR parameter") != std::string_view::npos
               ? IrOutcome::Invalid
               : IrOutcome::Rejected;
  } catch (const Error& e) {
    violated("deserialize threw something other than ff::FormatError", e.what());
  }
  // Valid IR re-serialises to the same bytes and lists without trouble.
  std::vector<std::byte> again = ir.serialize();
  if (again.size() != bytes.size() || !std::equal(again.begin(), again.end(), bytes.begin()))
    violated("serialize(deserialize(bytes)) != bytes", ir.to_string());
  (void)ir.to_string();
  if (!compile)
    return IrOutcome::Compiled;
  try {
    (void)backend().compile(ir);
    backend().flush_kernels();  // frees the code: a fuzzer compiles many kernels
  } catch (const BackendError& e) {
    // Validated IR the code generator rejects is a validator gap.
    violated("validated IR failed to compile", std::string(e.what()) + "\n" + ir.to_string());
  }
  return IrOutcome::Compiled;
}

}  // namespace ff::fuzz
