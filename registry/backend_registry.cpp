// Spec parsing and the explicit list of built-in backends.
#include "registry/backend_registry.h"

#include "backend/counting_backend.h"
#include "backend/cuda/cuda_backend.h"
#ifndef FF_NO_LLVM_BACKEND
#include "backend/llvm/llvm_backend.h"
#endif
#include "freezeframe/errors.h"
#include "recorder/recording_backend.h"

namespace ff {

void BackendRegistry::add(std::string name, BackendFactory factory, bool is_decorator) {
  entries_[std::move(name)] = Entry{std::move(factory), is_decorator};
}

std::vector<std::string> BackendRegistry::names() const {
  std::vector<std::string> out;
  for (auto& [name, entry] : entries_)
    out.push_back(entry.is_decorator ? name + ":" : name);
  return out;
}

std::unique_ptr<Backend> BackendRegistry::create(std::string_view spec,
                                                 const BackendOptions& options) const {
  auto known = [&] {
    std::string s;
    for (auto& n : names())
      s += (s.empty() ? "" : ", ") + n;
    return s;
  };
  size_t colon = spec.find(':');
  std::string_view head = spec.substr(0, colon);
  if (head.empty())
    throw Error("backend spec '" + std::string(spec) + "' names no backend" +
                (colon == std::string_view::npos ? "" : " before its ':'") +
                "; known backends: " + known());
  if (colon != std::string_view::npos && colon + 1 == spec.size())
    throw Error("backend spec '" + std::string(spec) + "': '" + std::string(head) +
                "' needs an inner backend after the ':', e.g. '" + std::string(head) + ":llvm'" +
                "; known backends: " + known());
  auto it = entries_.find(head);
  if (it == entries_.end())
    throw Error("unknown backend '" + std::string(head) + "' in spec '" + std::string(spec) +
                "'; known backends: " + known());
  if (colon == std::string_view::npos) {
    if (it->second.is_decorator)
      throw Error("backend spec '" + std::string(spec) + "': '" + std::string(head) +
                  "' is a decorator and needs an inner backend, e.g. '" + std::string(head) +
                  ":llvm'");
    return it->second.factory(options, nullptr);
  }
  if (!it->second.is_decorator)
    throw Error("backend spec '" + std::string(spec) + "': '" + std::string(head) +
                "' is not a decorator and cannot wrap another backend");
  auto inner = create(spec.substr(colon + 1), options);
  return it->second.factory(options, std::move(inner));
}

static void register_builtin_backends(BackendRegistry& r) {
#ifndef FF_NO_LLVM_BACKEND
  r.add(
      "llvm",
      [](const BackendOptions& o, std::unique_ptr<Backend>) { return create_llvm_backend(o); },
      false);
#endif
  r.add(
      "cuda",
      [](const BackendOptions& o, std::unique_ptr<Backend>) { return create_cuda_backend(o); },
      false);
  r.add(
      "record",
      [](const BackendOptions&, std::unique_ptr<Backend> inner) {
        return std::unique_ptr<Backend>(
            std::make_unique<rec::RecordingBackend>(std::move(inner), /*capture_session=*/true));
      },
      true);
  r.add(
      "count",
      [](const BackendOptions&, std::unique_ptr<Backend> inner) {
        return std::unique_ptr<Backend>(std::make_unique<CountingBackend>(std::move(inner)));
      },
      true);
}

BackendRegistry& backend_registry() {
  static BackendRegistry* registry = [] {
    auto* r = new BackendRegistry;
    register_builtin_backends(*r);
    return r;
  }();
  return *registry;
}

}  // namespace ff
