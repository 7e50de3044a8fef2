// ForwardingBackend, the base of the decorator backends: every Backend operation reaches the
// wrapped backend, and the decorators built on it (count:, record:) pass what they do not
// change through unchanged. A Backend operation added without a forwarding method here makes
// ForwardingBackend abstract (a pure virtual) or fails the probe below (a virtual with a
// default), so a decorator can no longer drop an operation silently.
#include "backend/forwarding_backend.h"

#include <catch2/catch.hpp>
#include <map>
#include <memory>
#include <string>
#include <type_traits>

#include "backend/command_list.h"
#include "backend/counting_backend.h"
#include "recorder/recording_backend.h"

namespace {

using namespace ff;

static_assert(!std::is_abstract_v<ForwardingBackend>,
              "ForwardingBackend must forward every pure virtual of Backend");

/// Counts which operations reached it; answers with values a default would not give.
class Probe final : public Backend {
 public:
  std::map<std::string, int> calls;
  alignas(8) unsigned char memory[64] = {};

  std::string name() const override { return "probe"; }

  void* alloc(ScalarType, size_t, SizeProv) override { return hit("alloc", memory); }

  void release(void*) noexcept override { hit("release", 0); }

  void copy(void*, const void*, size_t, CopyKind) override { hit("copy", 0); }

  void fill(void*, size_t, uint32_t, uint64_t) override { hit("fill", 0); }

  KernelHandle compile(const KernelIR&) override { return hit("compile", KernelHandle{}); }

  void flush_kernels() override { hit("flush_kernels", 0); }

  BackendStats stats() const override {
    BackendStats s;
    s.launches = 41;
    return hit("stats", s);
  }

  uint64_t kernel_generation() const override { return hit("kernel_generation", 7); }

  void reset_peak() override { hit("reset_peak", 0); }

  void launch(const KernelHandle&, size_t, SizeProv, std::span<const KernelArg>) override {
    hit("launch", 0);
  }

  void reduce(ReduceOp, ScalarType, const void*, size_t, void*) override { hit("reduce", 0); }

  void prefix_sum(ScalarType, bool, const void*, size_t, void*) override { hit("prefix_sum", 0); }

  size_t compress(const void*, size_t, void*) override { return hit("compress", size_t{3}); }

  size_t collective_count(const dist_impl::Collective&) override {
    return hit("collective_count", size_t{9});
  }

  void collective(const dist_impl::Collective&) override { hit("collective", 0); }

  void sync() override { hit("sync", 0); }

  void stop_background_work() noexcept override { hit("stop_background_work", 0); }

  std::string describe_buffer(const void*) const override {
    return hit("describe_buffer", std::string("probe buffer"));
  }

  bool recording_scope_open() const override { return hit("recording_scope_open", true); }

  void guard(const SizeGuard&, bool) override { hit("guard", 0); }

  size_t submit(const CommandList&) override { return hit("submit", size_t{5}); }

  bool prefers_command_lists() const override { return hit("prefers_command_lists", true); }

 private:
  template <class T>
  T hit(const char* what, T result) const {
    ++const_cast<Probe*>(this)->calls[what];
    return result;
  }
};

/// Calls every Backend operation once on `b` and checks the answers came from the probe.
void call_everything(Backend& b) {
  void* p = b.alloc(ScalarType::Float32, 4, {});
  CHECK(p != nullptr);
  b.copy(p, p, 4, CopyKind::DeviceToDevice);
  b.fill(p, 4, 4, 0);
  KernelIR ir;
  (void)b.compile(ir);
  b.flush_kernels();
  CHECK(b.stats().launches == 41);
  CHECK(b.kernel_generation() == 7);
  b.reset_peak();
  b.launch(KernelHandle{}, 4, {}, {});
  b.reduce(ReduceOp::Add, ScalarType::Float32, p, 4, p);
  b.prefix_sum(ScalarType::Float32, false, p, 4, p);
  CHECK(b.compress(p, 4, p) == 3);
  dist_impl::Collective c;
  c.in = p;
  c.count = 1;
  c.out = p;
  c.out_count = 1;
  CHECK(b.collective_count(c) == 9);
  b.collective(c);
  b.sync();
  b.stop_background_work();
  CHECK(b.describe_buffer(p) == "probe buffer");
  CHECK(b.recording_scope_open());
  b.guard(SizeGuard{}, true);
  CommandList list;
  CHECK(b.submit(list) == 5);
  CHECK(b.prefers_command_lists());
  b.release(p);
}

const char* const kOperations[] = {"alloc",
                                   "release",
                                   "copy",
                                   "fill",
                                   "compile",
                                   "flush_kernels",
                                   "stats",
                                   "kernel_generation",
                                   "reset_peak",
                                   "launch",
                                   "reduce",
                                   "prefix_sum",
                                   "compress",
                                   "collective_count",
                                   "collective",
                                   "sync",
                                   "stop_background_work",
                                   "describe_buffer",
                                   "recording_scope_open",
                                   "guard",
                                   "submit",
                                   "prefers_command_lists"};

}  // namespace

TEST_CASE("ForwardingBackend forwards every Backend operation to the backend it wraps",
          "[record][forwarding]") {
  auto probe = std::make_unique<Probe>();
  Probe& inner = *probe;
  ForwardingBackend forwarding("fwd:", std::move(probe));
  CHECK(forwarding.name() == "fwd:probe");
  CHECK(forwarding.instance_id() != inner.instance_id());  // its own identity
  call_everything(forwarding);
  for (const char* op : kOperations) {
    INFO(op);
    CHECK(inner.calls[op] == 1);
  }
}

TEST_CASE("count: forwards every operation, submit and prefers_command_lists included",
          "[record][forwarding]") {
  auto probe = std::make_unique<Probe>();
  Probe& inner = *probe;
  CountingBackend counting(std::move(probe));
  CHECK(counting.name() == "count:probe");
  call_everything(counting);
  for (const char* op : kOperations) {
    INFO(op);
    CHECK(inner.calls[op] == 1);
  }
  CHECK(counting.counts().launch == 1);
  CHECK(counting.counts().collective == 1);
}

TEST_CASE("record: outside a scope forwards every operation to the backend it wraps",
          "[record][forwarding]") {
  auto probe = std::make_unique<Probe>();
  Probe& inner = *probe;
  rec::RecordingBackend recording(std::move(probe), /*capture_session=*/false);
  CHECK(recording.name() == "record:probe");
  call_everything(recording);
  for (const char* op : kOperations) {
    INFO(op);
    CHECK(inner.calls[op] == 1);
  }
}
