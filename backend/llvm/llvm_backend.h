// Factory of the CPU backend: neutral IR -> LLVM IR -> ORC LLJIT, launches over a thread pool.
// No LLVM type appears here.
#pragma once

#include <memory>

#include "backend/backend.h"
#include "backend/backend_options.h"

namespace ff {

/// Creates the "llvm" backend. Throws ff::BackendError if the host JIT cannot be set up.
std::unique_ptr<Backend> create_llvm_backend(const BackendOptions& options);

}  // namespace ff
