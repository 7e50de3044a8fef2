// Forwarding with one relaxed counter increment per call.
#include "backend/counting_backend.h"

#include "backend/command_list.h"

namespace ff {

namespace {
void bump(std::atomic<uint64_t>& c) {
  c.fetch_add(1, std::memory_order_relaxed);
}
}  // namespace

CallCounts CountingBackend::counts() const {
  CallCounts c;
  c.alloc = n_.alloc;
  c.release = n_.release;
  c.copy = n_.copy;
  c.fill = n_.fill;
  c.compile = n_.compile;
  c.launch = n_.launch;
  c.reduce = n_.reduce;
  c.prefix_sum = n_.prefix_sum;
  c.compress = n_.compress;
  c.collective = n_.collective;
  c.sync = n_.sync;
  c.guard = n_.guard;
  return c;
}

void CountingBackend::reset_counts() {
  for (auto* c : {&n_.alloc, &n_.release, &n_.copy, &n_.fill, &n_.compile, &n_.launch, &n_.reduce,
                  &n_.prefix_sum, &n_.compress, &n_.collective, &n_.sync, &n_.guard})
    c->store(0);
}

void* CountingBackend::alloc(ScalarType type, size_t count, SizeProv prov) {
  bump(n_.alloc);
  return ForwardingBackend::alloc(type, count, prov);
}

void CountingBackend::release(void* ptr) noexcept {
  bump(n_.release);
  ForwardingBackend::release(ptr);
}

void CountingBackend::copy(void* dst, const void* src, size_t bytes, CopyKind kind) {
  bump(n_.copy);
  ForwardingBackend::copy(dst, src, bytes, kind);
}

void CountingBackend::fill(void* ptr, size_t count, uint32_t elem_size, uint64_t value) {
  bump(n_.fill);
  ForwardingBackend::fill(ptr, count, elem_size, value);
}

KernelHandle CountingBackend::compile(const KernelIR& ir) {
  bump(n_.compile);
  return ForwardingBackend::compile(ir);
}

void CountingBackend::launch(const KernelHandle& kernel, size_t size, SizeProv prov,
                             std::span<const KernelArg> args) {
  bump(n_.launch);
  ForwardingBackend::launch(kernel, size, prov, args);
}

void CountingBackend::reduce(ReduceOp op, ScalarType type, const void* in, size_t count,
                             void* out) {
  bump(n_.reduce);
  ForwardingBackend::reduce(op, type, in, count, out);
}

void CountingBackend::prefix_sum(ScalarType type, bool exclusive, const void* in, size_t count,
                                 void* out) {
  bump(n_.prefix_sum);
  ForwardingBackend::prefix_sum(type, exclusive, in, count, out);
}

size_t CountingBackend::submit(const CommandList& list) {
  for (const Command& c : list.commands)
    switch (c.kind) {
      case CommandKind::Launch:
        bump(n_.launch);
        break;
      case CommandKind::Copy:
        bump(n_.copy);
        break;
      case CommandKind::Fill:
        bump(n_.fill);
        break;
      case CommandKind::Reduce:
        bump(n_.reduce);
        break;
      case CommandKind::PrefixSum:
        bump(n_.prefix_sum);
        break;
      case CommandKind::Compress:
        bump(n_.compress);
        break;
      case CommandKind::Release:
        bump(n_.release);
        break;
    }
  return ForwardingBackend::submit(list);
}

size_t CountingBackend::compress(const void* mask, size_t count, void* out) {
  bump(n_.compress);
  return ForwardingBackend::compress(mask, count, out);
}

void CountingBackend::collective(const dist_impl::Collective& c) {
  bump(n_.collective);
  ForwardingBackend::collective(c);
}

void CountingBackend::sync() {
  bump(n_.sync);
  ForwardingBackend::sync();
}

void CountingBackend::guard(const SizeGuard& guard, bool outcome) {
  bump(n_.guard);
  ForwardingBackend::guard(guard, outcome);
}

}  // namespace ff
