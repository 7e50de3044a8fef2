// A backend stack: the owner of a top backend (a real backend under decorators), which the
// runtime builds and installs in the tracer's slot (tracer/device.h). Buffers hold a
// shared_ptr to it, so a stack outlives ff::shutdown() until the last array that allocated
// from it is gone. The top can be decorated later (a recorder inserted on demand); threads
// already using the old top keep a valid backend, since the decorator owns it.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>

#include "backend/backend.h"

namespace ff {

class BackendStack {
 public:
  explicit BackendStack(std::unique_ptr<Backend> b) : owner_(std::move(b)), top_(owner_.get()) {}

  Backend& backend() const { return *top_.load(std::memory_order_acquire); }

  /// Replaces the top with `decorate(old top)` unless `keep(top)` says it already fits.
  /// Returns the (new or kept) top.
  Backend& decorate(
      const std::function<bool(Backend&)>& keep,
      const std::function<std::unique_ptr<Backend>(std::unique_ptr<Backend>)>& decorate);

 private:
  std::mutex mutex_;
  std::unique_ptr<Backend> owner_;
  std::atomic<Backend*> top_;
};

}  // namespace ff
