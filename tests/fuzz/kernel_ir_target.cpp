// See kernel_ir_target.h.
#include "fuzz/kernel_ir_target.h"

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <string>
#include <typeinfo>

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

/// A refusal of IR from outside must be exactly ff::FormatError (docs/errors.md): anything
/// else, a subclass included, is a violation.
void require_format_error(const std::exception& e, const char* stage) {
  if (typeid(e) != typeid(FormatError))
    violated((std::string(stage) + " threw something other than ff::FormatError").c_str(),
             std::string(typeid(e).name()) + ": " + e.what());
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
  // The two halves of KernelIR::deserialize, so the outcome follows from which one refused
  // the input (never from the message text).
  KernelIR ir;
  try {
    ir = KernelIR::parse(bytes);
  } catch (const std::exception& e) {
    require_format_error(e, "parse");
    return IrOutcome::Rejected;
  }
  try {
    ir.validate();
  } catch (const std::exception& e) {
    require_format_error(e, "validate");
    return IrOutcome::Invalid;
  }
  ir.finalize();
  // Valid IR re-serialises to the same bytes, deserialises in one step, lists without trouble.
  std::vector<std::byte> again = ir.serialize();
  if (again.size() != bytes.size() || !std::equal(again.begin(), again.end(), bytes.begin()))
    violated("serialize(parse(bytes)) != bytes", ir.to_string());
  try {
    if (KernelIR::deserialize(bytes).hash != ir.hash)
      violated("deserialize gives another hash than parse + validate", ir.to_string());
  } catch (const std::exception& e) {
    violated("deserialize refused what parse + validate accepted", e.what());
  }
  (void)ir.to_string();
  if (!compile)
    return IrOutcome::Compiled;
  try {
    (void)backend().compile(ir);
    backend().flush_kernels();  // frees the code: a fuzzer compiles many kernels
  } catch (const std::exception& e) {
    // Validated IR the code generator rejects is a validator gap.
    violated("validated IR failed to compile", std::string(e.what()) + "\n" + ir.to_string());
  }
  return IrOutcome::Compiled;
}

}  // namespace ff::fuzz
