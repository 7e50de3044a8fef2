// One fuzz input through the kernel IR's untrusted-input path: deserialize, validate, and for
// IR that validates, re-serialise (must round-trip), list, and compile with the llvm backend.
// Recordings loaded from files hand exactly such bytes to the backend, so anything here
// must end in a clean ff::Error, never a crash, a hang or an LLVM assertion.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace ff::fuzz {

/// What became of one input: refused by KernelIR::parse (the header and sizes), refused by
/// KernelIR::validate (the instructions), or accepted and compiled. Refusals must be exactly
/// ff::FormatError; any other exception is a violation (the process aborts).
enum class IrOutcome { Rejected, Invalid, Compiled };

/// Runs one input. `compile`: also JIT-compile valid IR (slower; needs the llvm backend).
/// Aborts the process (after printing why) on a property violation, like a fuzzer wants.
IrOutcome run_kernel_ir(std::span<const std::byte> bytes, bool compile);

}  // namespace ff::fuzz
