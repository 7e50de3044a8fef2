// The replay walker and its executors (replay/executors.h), driven below the public API on a
// backend that logs what reaches it: the same recording replayed op by op, batched into
// command lists (Backend::submit) and observed runs the same work in the same order with the
// same results; an observer sees each op once, in order, with the op's work between its two
// calls; a failed batched replay leaks nothing.
#include <freezeframe/freezeframe.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "backend/command_list.h"
#include "backend/forwarding_backend.h"
#include "backend/llvm/llvm_backend.h"
#include "frontend/recording_state.h"
#include "replay/replay_plan.h"
#include "replay/replayer.h"

namespace {

using namespace ff;

// The LLVM backend, logging every operation that reaches it with buffers named by allocation
// order ("b3+16"), so logs of different replays compare. `batches` answers
// prefers_command_lists(); submit() is Backend's op-by-op default, so a batched replay's work
// is logged too, command by command.
class LoggingBackend final : public ForwardingBackend {
 public:
  explicit LoggingBackend(bool batches, std::vector<std::string>& log)
      : ForwardingBackend("logging:", create_llvm_backend(BackendOptions{})),
        batches_(batches),
        log_(log) {}

  size_t submits = 0;
  std::vector<std::string> allocs;  // "Float32 x 8", in allocation order

  void* alloc(ScalarType type, size_t count, SizeProv prov) override {
    void* p = inner().alloc(type, count, prov);
    buffers_[reinterpret_cast<uintptr_t>(p)] = {next_++, count * size_of(type)};
    allocs.push_back(std::string(to_string(type)) + " x " + std::to_string(count));
    return p;
  }

  void release(void* ptr) noexcept override {
    log_.push_back("release " + name_of(ptr));
    buffers_.erase(reinterpret_cast<uintptr_t>(ptr));
    inner().release(ptr);
  }

  void copy(void* dst, const void* src, size_t bytes, CopyKind kind) override {
    log_.push_back(std::string("copy ") + to_string(kind) + " " + name_of(dst) + " " +
                   (kind == CopyKind::HostToDevice ? "host" : name_of(src)) + " " +
                   std::to_string(bytes));
    inner().copy(dst, src, bytes, kind);
  }

  void fill(void* ptr, size_t count, uint32_t elem_size, uint64_t value) override {
    log_.push_back("fill " + name_of(ptr) + " " + std::to_string(count) + " " +
                   std::to_string(elem_size) + " " + std::to_string(value));
    inner().fill(ptr, count, elem_size, value);
  }

  void launch(const KernelHandle& kernel, size_t size, SizeProv prov,
              std::span<const KernelArg> args) override {
    std::string line =
        "launch " + std::to_string(kernel->hash().lo % 1000) + " " + std::to_string(size);
    for (size_t a = 0; a < args.size(); ++a)
      line += " " + (kernel->ir().params[a].kind == ParamKind::Scalar
                         ? std::to_string(args[a].bits)
                         : name_of(reinterpret_cast<const void*>(args[a].bits)));
    log_.push_back(line);
    inner().launch(kernel, size, prov, args);
  }

  void reduce(ReduceOp op, ScalarType type, const void* in, size_t count, void* out) override {
    log_.push_back(std::string("reduce ") + to_string(op) + " " + name_of(in) + " " +
                   std::to_string(count) + " " + name_of(out));
    inner().reduce(op, type, in, count, out);
  }

  void prefix_sum(ScalarType type, bool exclusive, const void* in, size_t count,
                  void* out) override {
    log_.push_back("prefix_sum " + std::to_string(exclusive) + " " + name_of(in) + " " +
                   std::to_string(count) + " " + name_of(out));
    inner().prefix_sum(type, exclusive, in, count, out);
  }

  size_t compress(const void* mask, size_t count, void* out) override {
    log_.push_back("compress " + name_of(mask) + " " + std::to_string(count) + " " + name_of(out));
    return inner().compress(mask, count, out);
  }

  void sync() override {
    log_.push_back("sync");
    inner().sync();
  }

  size_t submit(const CommandList& list) override {
    ++submits;
    return Backend::submit(list);
  }

  bool prefers_command_lists() const override { return batches_; }

 private:
  // "b<k>+<offset>" for a pointer into the k-th allocation, "?" for one outside them all.
  std::string name_of(const void* p) const {
    auto at = reinterpret_cast<uintptr_t>(p);
    auto it = buffers_.upper_bound(at);
    if (it == buffers_.begin())
      return "?";
    --it;
    if (at - it->first > it->second.second)
      return "?";
    return "b" + std::to_string(it->second.first) + "+" + std::to_string(at - it->first);
  }

  bool batches_;
  std::vector<std::string>& log_;
  std::map<uintptr_t, std::pair<size_t, size_t>> buffers_;  // base -> (number, bytes)
  size_t next_ = 0;
};

// Logs op boundaries into the backend's log, and the slot sizes after each op.
class LoggingObserver final : public replay::OpObserver {
 public:
  explicit LoggingObserver(std::vector<std::string>& log) : log_(log) {}

  std::vector<size_t> before, after;
  std::vector<std::vector<uint64_t>> sizes_after;

  void before_op(size_t op) override {
    before.push_back(op);
    log_.push_back("before " + std::to_string(op));
  }

  void after_op(size_t op, std::span<const uint64_t> slot_sizes) override {
    after.push_back(op);
    sizes_after.emplace_back(slot_sizes.begin(), slot_sizes.end());
    log_.push_back("after " + std::to_string(op));
  }

 private:
  std::vector<std::string>& log_;
};

std::vector<float> seeded(size_t n) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = static_cast<float>((i * 7919u) % 1000u) / 250.f - 1.f;  // [-1, 3)
  return v;
}

std::vector<uint32_t> permutation(size_t n) {
  std::vector<uint32_t> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = static_cast<uint32_t>((i * 5u + 3u) % n);
  return v;
}

// Recordings that together use every op kind: launches with buffer and scalar patches,
// allocations, releases, fills, host and device copies (a written input's copy), reduce,
// prefix sum, compress with a guard after it; optimised (buffers reused) or not.
std::vector<std::pair<std::string, Recording>> corpus(bool optimize) {
  ff::init("llvm");
  RecordOptions options;
  options.optimize = optimize;
  Float x = Float::from(seeded(64));
  UInt32 idx = UInt32::from(permutation(64));
  std::vector<std::pair<std::string, Recording>> out;
  out.emplace_back(
      "reductions",
      ff::record(
          {x, idx},
          [&] {
            Float y = ff::sqrt(ff::abs(x) * 2.f + 1.f);
            Float s = ff::gather<Float>(y, idx);
            ff::eval(s);
            return std::vector<AnyArray>{s + ff::sum(y), ff::prefix_sum(s), ff::prod(x)};
          },
          options));
  out.emplace_back("compress", ff::record(
                                   {x},
                                   [&] {
                                     UInt32 hits = ff::compress(x > 0.5f);
                                     Float picked = ff::gather<Float>(x, hits);
                                     if (hits.size() > 2)  // a guard after the compress
                                       picked = picked * 2.f;
                                     return std::vector<AnyArray>{picked, ff::mean(picked)};
                                   },
                                   options));
  out.emplace_back("scatter", ff::record(
                                  {x, idx},
                                  [&] {
                                    Float t = ff::zeros<Float>(ff::width(x));
                                    ff::scatter(t, x * 2.f, idx);
                                    Float y = x;
                                    ff::scatter(y, 9.f, UInt32::from({0u}));  // copy-on-write
                                    Float c = Float::from({1.f, 2.f, 3.f});   // a host constant
                                    return std::vector<AnyArray>{t, y, c + ff::max_reduce(x)};
                                  },
                                  options));
  ff::sync();
  return out;
}

struct Replayed {
  std::vector<std::string> log;
  std::vector<std::string> allocs;
  std::vector<std::vector<uint8_t>> outputs;  // bytes of each output
  size_t submits = 0;
  size_t ops = 0;
  std::vector<size_t> observed_before, observed_after;
  std::vector<std::vector<uint64_t>> sizes_after;
};

enum class Mode { Direct, Batching, Observed };

// Replays `r` on a fresh logging backend with inputs of `n` elements (the log begins after
// the inputs are uploaded).
Replayed replay_logged(const Recording& r, Mode mode, size_t n) {
  Replayed out;
  LoggingBackend backend(mode != Mode::Direct, out.log);
  std::shared_ptr<const rec::RecordingData> data = detail::recording_state(r)->data;
  replay::ReplayPlan plan(data, backend);
  out.ops = plan.ops.size();
  std::vector<float> xs = seeded(n);
  std::vector<uint32_t> is = permutation(n);
  std::vector<replay::ReplayInput> inputs;
  std::vector<void*> uploaded;
  for (uint32_t slot : data->inputs) {
    ScalarType type = data->slots[slot].type;
    const void* host = type == ScalarType::Float32 ? static_cast<const void*>(xs.data())
                                                   : static_cast<const void*>(is.data());
    void* p = backend.alloc(type, n, {});
    backend.copy(p, host, n * size_of(type), CopyKind::HostToDevice);
    uploaded.push_back(p);
    inputs.push_back({p, type, n});
  }
  out.log.clear();
  out.allocs.clear();
  uint64_t bytes_before = backend.stats().bytes_allocated;

  LoggingObserver observer(out.log);
  replay::ReplayOptions options;
  if (mode == Mode::Observed)
    options.observer = &observer;
  std::vector<replay::ReplayOutput> outs = replay::run(plan, backend, inputs, options);
  std::vector<std::string> log = out.log;  // without the sync, downloads and releases below
  backend.sync();
  out.submits = backend.submits;
  out.allocs = backend.allocs;
  out.observed_before = observer.before;
  out.observed_after = observer.after;
  out.sizes_after = observer.sizes_after;
  for (const replay::ReplayOutput& o : outs) {
    std::vector<uint8_t> bytes(o.size * size_of(o.type));
    backend.copy(bytes.data(), o.ptr, bytes.size(), CopyKind::DeviceToHost);
    out.outputs.push_back(std::move(bytes));
  }
  for (const replay::ReplayOutput& o : outs)
    if (o.input < 0 && o.same_as < 0)
      backend.release(o.ptr);
  CHECK(backend.stats().bytes_allocated == bytes_before);  // nothing left behind
  for (void* p : uploaded)
    backend.release(p);
  out.log = std::move(log);
  return out;
}

// The log without the observer's lines.
std::vector<std::string> work_of(const std::vector<std::string>& log) {
  std::vector<std::string> w;
  for (const std::string& line : log)
    if (line.rfind("before ", 0) != 0 && line.rfind("after ", 0) != 0)
      w.push_back(line);
  return w;
}

}  // namespace

TEST_CASE("replay executors: op by op, batched and observed replays run the same work in order",
          "[record][replay]") {
  for (bool optimize : {false, true}) {
    for (auto& [name, r] : corpus(optimize)) {
      for (size_t n : {64, 37, 1000}) {
        INFO(name << (optimize ? " optimised" : " not optimised") << " at size " << n);
        Replayed direct = replay_logged(r, Mode::Direct, n);
        Replayed batched = replay_logged(r, Mode::Batching, n);
        Replayed observed = replay_logged(r, Mode::Observed, n);
        CHECK(direct.submits == 0);
        CHECK(batched.submits > 0);
        CHECK(observed.submits == 0);  // an observer sees ops run, one by one
        CHECK(batched.outputs == direct.outputs);
        CHECK(observed.outputs == direct.outputs);
        CHECK(work_of(observed.log) == direct.log);
        if (!optimize) {
          // Without reuse-buffers every executor allocates the same buffers, and the work (the
          // releases included) reaches the backend in the same order with the same buffers.
          CHECK(batched.allocs == direct.allocs);
          CHECK(batched.log == direct.log);
        }
      }
    }
  }
  ff::shutdown();
}

TEST_CASE("replay executors: an observer sees each op once, in order, around its work",
          "[record][replay]") {
  for (auto& [name, r] : corpus(true)) {
    INFO(name);
    Replayed observed = replay_logged(r, Mode::Observed, 100);
    std::vector<size_t> in_order(observed.ops);
    for (size_t i = 0; i < in_order.size(); ++i)
      in_order[i] = i;
    CHECK(observed.observed_before == in_order);
    CHECK(observed.observed_after == in_order);
    // Every op's work lies between its before and after: no work outside an op's pair.
    bool inside = false;
    size_t expect = 0;
    for (const std::string& line : observed.log) {
      if (line.rfind("before ", 0) == 0) {
        CHECK_FALSE(inside);
        CHECK(line == "before " + std::to_string(expect));
        inside = true;
      } else if (line.rfind("after ", 0) == 0) {
        CHECK(inside);
        CHECK(line == "after " + std::to_string(expect++));
        inside = false;
      } else {
        INFO(line);
        CHECK(inside);
      }
    }
    CHECK(expect == observed.ops);
    const rec::RecordingData& d = *detail::recording_state(r)->data;
    uint64_t above = 0;  // what the compress of x > 0.5 counts
    for (float v : seeded(100))
      above += v > 0.5f;
    for (size_t i = 0; i < observed.sizes_after.size(); ++i) {
      REQUIRE(observed.sizes_after[i].size() == d.slots.size());
      if (d.ops[i].code == rec::OpCode::Compress)  // the count read at replay
        CHECK(observed.sizes_after[i][d.ops[i].dst] == above);
    }
  }
  ff::shutdown();
}

TEST_CASE("replay executors: a batched replay that fails a guard gives every buffer back",
          "[record][replay]") {
  auto recs = corpus(true);
  const Recording& r = recs[1].second;  // compress, then a guard on its count
  for (bool batches : {false, true}) {
    INFO((batches ? "batched" : "op by op"));
    std::vector<std::string> log;
    LoggingBackend backend(batches, log);
    replay::ReplayPlan plan(detail::recording_state(r)->data, backend);
    std::vector<float> low(64, -1.f);  // no element > 0.5: the count is 0, the guard fails
    void* p = backend.alloc(ScalarType::Float32, low.size(), {});
    backend.copy(p, low.data(), low.size() * sizeof(float), CopyKind::HostToDevice);
    uint64_t bytes_before = backend.stats().bytes_allocated;
    replay::ReplayInput in[] = {{p, ScalarType::Float32, low.size()}};
    CHECK_THROWS_AS(replay::run(plan, backend, in, {}), GuardError);
    CHECK(backend.stats().bytes_allocated == bytes_before);
    CHECK((backend.submits > 0) == batches);
    // Into a kept vector (as frozen calls replay): a good replay fills it, and a failed one
    // after it leaves nothing of the good one's outputs (given back, not the caller's).
    std::vector<float> high(64, 1.f);
    void* q = backend.alloc(ScalarType::Float32, high.size(), {});
    backend.copy(q, high.data(), high.size() * sizeof(float), CopyKind::HostToDevice);
    replay::ReplayInput good[] = {{q, ScalarType::Float32, high.size()}};
    std::vector<replay::ReplayOutput> outs;
    replay::run(plan, backend, good, {}, outs);
    REQUIRE_FALSE(outs.empty());
    for (const replay::ReplayOutput& o : outs)
      if (o.input < 0 && o.same_as < 0)
        backend.release(o.ptr);
    CHECK_THROWS_AS(replay::run(plan, backend, in, {}, outs), GuardError);
    CHECK(outs.empty());
    CHECK(backend.stats().bytes_allocated == bytes_before + high.size() * sizeof(float));
    backend.release(q);
    backend.release(p);
  }
  ff::shutdown();
}
