// Backends by name: "llvm", "cuda", and decorators such as "record:" and "count:". The one
// place that knows every backend, so it sits above them all in the link graph.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "backend/backend.h"
#include "backend/backend_options.h"

namespace ff {

/// Builds a backend; decorators receive the already-built inner backend, leaves get null.
using BackendFactory =
    std::function<std::unique_ptr<Backend>(const BackendOptions&, std::unique_ptr<Backend> inner)>;

class BackendRegistry {
 public:
  void add(std::string name, BackendFactory factory, bool is_decorator);
  /// Builds a stack from a spec ("llvm", "record:llvm", "count:record:llvm"). Throws
  /// ff::Error listing the known names when a name is unknown.
  std::unique_ptr<Backend> create(std::string_view spec, const BackendOptions& options) const;
  std::vector<std::string> names() const;

 private:
  struct Entry {
    BackendFactory factory;
    bool is_decorator;
  };

  std::map<std::string, Entry, std::less<>> entries_;
};

/// The registry with every built-in backend (filled once, explicitly, on first use).
BackendRegistry& backend_registry();

}  // namespace ff
