// Decorating a stack's top in place.
#include "backend/backend_stack.h"

namespace ff {

Backend& BackendStack::decorate(
    const std::function<bool(Backend&)>& keep,
    const std::function<std::unique_ptr<Backend>(std::unique_ptr<Backend>)>& decorate) {
  std::lock_guard lock(mutex_);
  if (keep(*owner_))
    return *owner_;
  owner_ = decorate(std::move(owner_));
  top_.store(owner_.get(), std::memory_order_release);
  return *owner_;
}

}  // namespace ff
