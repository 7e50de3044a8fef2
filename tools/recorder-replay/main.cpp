// recorder-replay: replays a recording file with generated inputs on a backend, prints timings
// per op kind and can write a Chrome trace-event file of the replay (Perfetto and
// chrome://tracing open it). Exit status: 0 success, 1 a bad file or a failed replay (a
// guard that rejects the sizes, a capture), 2 bad usage.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <numeric>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/version.h"
#include "freezeframe/dist.h"
#include "freezeframe/errors.h"
#include "freezeframe/init.h"
#include "recorder/format_reader.h"
#include "recorder/size_eval.h"
#include "replay/replay_plan.h"
#include "replay/replayer.h"
#include "runtime/environment.h"
#include "tools/parse_count.h"
#include "tracer/device.h"

namespace {

using Clock = std::chrono::steady_clock;

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

double us_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::micro>(b - a).count();
}

/// The innermost backend of a recorded stack spec ("record:llvm" -> "llvm").
std::string innermost(const std::string& spec) {
  size_t colon = spec.rfind(':');
  return colon == std::string::npos ? spec : spec.substr(colon + 1);
}

/// Deterministic values for input k: floats in [0, 1), integers in [0, 100), Bool 0/1.
std::vector<std::byte> generate(ff::ScalarType type, uint64_t n, uint64_t seed, size_t k) {
  uint64_t state = seed * 0x9E3779B97F4A7C15ull + k * 0xD1B54A32D192ED03ull + 1;
  auto next = [&] {  // splitmix64
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  };
  size_t elem = ff::size_of(type);
  std::vector<std::byte> out(n * elem);
  for (uint64_t i = 0; i < n; ++i) {
    uint64_t r = next();
    std::byte* p = out.data() + i * elem;
    auto put = [&](auto v) { std::memcpy(p, &v, sizeof v); };
    switch (type) {
      case ff::ScalarType::Bool:
        put(static_cast<uint8_t>(r >> 63));
        break;
      case ff::ScalarType::Int32:
        put(static_cast<int32_t>(r % 100));
        break;
      case ff::ScalarType::UInt32:
        put(static_cast<uint32_t>(r % 100));
        break;
      case ff::ScalarType::Int64:
        put(static_cast<int64_t>(r % 100));
        break;
      case ff::ScalarType::UInt64:
        put(static_cast<uint64_t>(r % 100));
        break;
      case ff::ScalarType::Float32:
        put(static_cast<float>(r >> 40) * 0x1p-24f);
        break;
      case ff::ScalarType::Float64:
        put(static_cast<double>(r >> 11) * 0x1p-53);
        break;
    }
  }
  return out;
}

/// A --size option: input `input` gets `size` elements.
struct SizeOverride {
  std::string text;  // as given, for messages
  uint64_t input = 0, size = 0;
};

/// The --size options, checked before the file is read: "inputK=N" with K and N whole numbers
/// (a negative or non-numeric size is a usage error here, not a failed allocation later).
std::vector<SizeOverride> parse_sizes(const std::vector<std::string>& options) {
  std::vector<SizeOverride> out;
  for (const std::string& o : options) {
    size_t eq = o.find('=');
    std::optional<uint64_t> k, v;
    if (eq != std::string::npos && o.compare(0, 5, "input") == 0) {
      k = ff::tools::parse_count(std::string_view(o).substr(5, eq - 5));
      v = ff::tools::parse_count(std::string_view(o).substr(eq + 1));
    }
    if (!k)
      throw UsageError("--size " + o + ": expected inputK=N, e.g. input0=4096");
    if (!v)
      throw UsageError("--size " + o + ": the size '" + o.substr(eq + 1) +
                       "' is not a whole number of elements (0 or more, e.g. input0=4096)");
    out.push_back({o, *k, *v});
  }
  return out;
}

/// Input sizes: the recorded ones, then --size overrides; inputs that an equality guard ties
/// to an overridden input (size(a) == size(b) was true) follow it.
std::vector<uint64_t> input_sizes(const ff::rec::RecordingData& d,
                                  const std::vector<SizeOverride>& overrides) {
  size_t n = d.inputs.size();
  std::vector<uint64_t> size(n);
  for (size_t k = 0; k < n; ++k)
    size[k] = d.slots[d.inputs[k]].recorded_size;
  std::vector<size_t> parent(n);
  std::iota(parent.begin(), parent.end(), 0);
  auto root = [&](size_t k) {
    while (parent[k] != k)
      k = parent[k] = parent[parent[k]];
    return k;
  };
  auto input_of = [&](uint32_t e) -> std::optional<size_t> {
    const ff::rec::ExprNode& node = d.exprs[e];
    if (node.op != ff::SizeOp::BufferSize)
      return std::nullopt;
    const ff::rec::Slot& s = d.slots[node.slot];
    if (s.origin != ff::rec::SlotOrigin::Input)
      return std::nullopt;
    return s.origin_index;
  };
  for (const ff::rec::Guard& g : d.guards) {
    if (g.cmp != ff::SizeCmp::Eq || !g.outcome)
      continue;
    auto a = input_of(g.lhs), b = input_of(g.rhs);
    if (a && b)
      parent[root(*a)] = root(*b);
  }
  // Inputs bound to one slot (one array passed twice) are one group too.
  for (size_t k = 0; k < n; ++k)
    for (size_t j = 0; j < k; ++j)
      if (d.inputs[j] == d.inputs[k])
        parent[root(k)] = root(j);

  std::vector<std::optional<uint64_t>> set(n);
  for (const SizeOverride& o : overrides) {
    if (o.input >= n)
      throw UsageError("--size " + o.text + ": the recording has " + std::to_string(n) +
                       " input(s), numbered from 0");
    set[o.input] = o.size;
  }
  for (size_t k = 0; k < n; ++k)
    if (set[k])
      size[k] = *set[k];
  for (size_t k = 0; k < n; ++k) {
    if (set[k])
      continue;
    for (size_t j = 0; j < n; ++j)
      if (set[j] && root(j) == root(k))
        size[k] = *set[j];
  }
  return size;
}

struct OpEvent {
  size_t op;
  size_t repeat;
  double start_us, dur_us;
  uint64_t size;
  bool has_size;
};

class Timer final : public ff::replay::OpObserver {
 public:
  Timer(const ff::rec::RecordingData& d, ff::Backend& backend, bool sync_each, bool trace,
        Clock::time_point origin)
      : d_(d), backend_(backend), sync_each_(sync_each), trace_(trace), origin_(origin) {}

  void before_op(size_t) override { start_ = Clock::now(); }

  void after_op(size_t op, std::span<const uint64_t> slot_sizes) override {
    if (sync_each_)
      backend_.sync();
    Clock::time_point end = Clock::now();
    double dur = us_between(start_, end);
    auto code = static_cast<size_t>(d_.ops[op].code);
    per_kind_us[code] += dur;
    per_kind_n[code] += 1;
    if (!trace_)
      return;
    OpEvent e{op, repeat, us_between(origin_, start_), dur, 0, false};
    uint32_t expr = d_.ops[op].size_expr;
    if (expr != ff::rec::kNone) {
      try {
        e.size = ff::rec::evaluate(d_, expr, slot_sizes, place_, "size");
        e.has_size = true;
      } catch (const ff::Error&) {
      }
    }
    events.push_back(e);
  }

  size_t repeat = 0;
  std::map<size_t, double> per_kind_us;
  std::map<size_t, uint64_t> per_kind_n;
  std::vector<OpEvent> events;

 private:
  const ff::rec::RecordingData& d_;
  ff::Backend& backend_;
  bool sync_each_, trace_;
  Clock::time_point origin_, start_;
  // The sizes of a recording that reads the rank are this process's (ff::dist runs here when
  // the recording needs it), else as recorded.
  ff::rec::RankPlace place_ = ff::dist::initialized()
                                  ? ff::rec::RankPlace{static_cast<uint64_t>(ff::dist::rank()),
                                                       static_cast<uint64_t>(ff::dist::size())}
                                  : ff::rec::recorded_place(d_);
};

nlohmann::json trace_json(const ff::rec::RecordingData& d, const Timer& t, const std::string& file,
                          const std::string& backend) {
  using nlohmann::json;
  json events = json::array();
  events.push_back({{"name", "process_name"},
                    {"ph", "M"},
                    {"pid", 1},
                    {"tid", 1},
                    {"args", {{"name", "recorder-replay " + file + " on " + backend}}}});
  std::vector<ff::rec::SlotUse> uses;
  for (const OpEvent& e : t.events) {
    const ff::rec::Op& op = d.ops[e.op];
    json slots = json::array();
    if (op.code == ff::rec::OpCode::Alloc || op.code == ff::rec::OpCode::Release) {
      slots.push_back("s" + std::to_string(op.dst));
    } else {
      ff::rec::op_uses(d, op, uses);
      for (const auto& u : uses)
        slots.push_back("s" + std::to_string(u.slot) + (u.read ? "r" : "") + (u.write ? "w" : ""));
    }
    std::string name = ff::rec::to_string(op.code);
    json args = {{"op", e.op},
                 {"repeat", e.repeat},
                 {"slots", std::move(slots)},
                 {"size", e.has_size ? json(e.size) : json(nullptr)},
                 {"size_expr", op.size_expr == ff::rec::kNone
                                   ? json(nullptr)
                                   : json(ff::rec::expr_to_string(d, op.size_expr))}};
    if (op.code == ff::rec::OpCode::Launch) {
      name += " k" + std::to_string(op.kernel);
      args["kernel"] = d.kernels[op.kernel]->hash.to_hex();
    }
    events.push_back({{"name", name},
                      {"cat", ff::rec::to_string(op.code)},
                      {"ph", "X"},
                      {"ts", e.start_us},
                      {"dur", e.dur_us},
                      {"pid", 1},
                      {"tid", 1},
                      {"args", std::move(args)}});
  }
  return {{"traceEvents", std::move(events)}, {"displayTimeUnit", "ms"}};
}

int run(int argc, char** argv) {
  CLI::App app{"Replays a freezeframe recording file with generated inputs.", "recorder-replay"};
  app.set_version_flag("--version",
                       std::string("recorder-replay (freezeframe ") + ff::library_version() + ")");
  std::string file, backend_spec, trace_path;
  std::vector<std::string> sizes;
  std::string recording_arg = "0";  // checked against the file's count once it is read
  size_t repeat = 1;
  uint64_t seed = 1;
  bool sync_each = false;
  app.add_option("FILE", file, "recording file (.ffr)")->required();
  app.add_option("--backend", backend_spec, "backend to replay on (default: the recorded one)")
      ->type_name("B");
  app.add_option("--size", sizes,
                 "input size, e.g. input0=4096 (inputs a guard ties to it follow); repeatable")
      ->type_name("inputK=N");
  app.add_option("--repeat", repeat, "replays to run (default 1)")
      ->type_name("K")
      ->check(CLI::Range(size_t{1}, size_t{1} << 24));
  app.add_option("--trace", trace_path, "write a Chrome trace-event file of the replays")
      ->type_name("OUT.json");
  app.add_flag("--sync-each", sync_each, "wait after every op, so spans are execution times");
  app.add_option("--recording", recording_arg, "replay recording K of a file holding several")
      ->type_name("K");
  app.add_option("--seed", seed, "seed of the generated input values (default 1)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "recorder-replay: " << e.what() << "\n\n" << app.help();
    return 2;
  }
  std::vector<SizeOverride> size_overrides;
  try {
    size_overrides = parse_sizes(sizes);
  } catch (const UsageError& e) {
    std::cerr << "recorder-replay: " << e.what() << "\n";
    return 2;
  }

  ff::format::ParsedFile parsed;
  try {
    parsed = ff::format::parse_file(file);  // its messages name the file
  } catch (const ff::Error& e) {
    std::cerr << "recorder-replay: " << e.what() << "\n";
    return 1;
  }
  std::optional<uint64_t> index = ff::tools::parse_count(recording_arg);
  if (!index || *index >= parsed.recordings.size()) {
    std::cerr << "recorder-replay: --recording " << recording_arg << ": "
              << (index ? "" : "not a recording index: ") << "the file holds "
              << parsed.recordings.size() << " recording(s), numbered from 0\n";
    return 2;
  }
  size_t recording = *index;
  ff::rec::ValidatedRecording data = parsed.recordings[recording];  // validated: not again
  const ff::rec::RecordingData& d = *data;
  if (d.is_capture) {
    std::cerr << "recorder-replay: " << file
              << " is a whole-session capture (FF_CAPTURE / ff::capture): it records host reads "
                 "and memory from outside, so it can be inspected (recorder-dump) but not "
                 "replayed\n";
    return 1;
  }
  std::vector<uint64_t> in_sizes;
  try {
    in_sizes = input_sizes(d, size_overrides);
  } catch (const UsageError& e) {
    std::cerr << "recorder-replay: " << e.what() << "\n";
    return 2;
  }
  if (backend_spec.empty())
    backend_spec = innermost(d.backend);

  try {
    ff::init(backend_spec);
    ff::Backend& backend = ff::detail::current_device()->backend();
    std::printf("replaying %s (recording %zu: %zu ops, %zu kernels) on '%s'\n", file.c_str(),
                recording, d.ops.size(), d.kernels.size(), backend.name().c_str());

    // Inputs: one buffer per input slot (an input passed twice is one array).
    std::vector<void*> buffers;
    std::vector<ff::replay::ReplayInput> inputs(d.inputs.size());
    std::map<uint32_t, size_t> by_slot;

    struct Release {
      ff::Backend& b;
      std::vector<void*>& v;

      ~Release() {
        for (void* p : v)
          b.release(p);
      }
    } release{backend, buffers};

    for (size_t k = 0; k < d.inputs.size(); ++k) {
      uint32_t slot = d.inputs[k];
      ff::ScalarType type = d.slots[slot].type;
      auto [it, fresh] = by_slot.try_emplace(slot, k);
      if (!fresh) {
        inputs[k] = inputs[it->second];
        std::printf("  input %zu: the same array as input %zu\n", k, it->second);
        continue;
      }
      void* p = backend.alloc(type, in_sizes[k], {});
      buffers.push_back(p);
      std::vector<std::byte> host = generate(type, in_sizes[k], seed, k);
      if (!host.empty())
        backend.copy(p, host.data(), host.size(), ff::CopyKind::HostToDevice);
      inputs[k] = {p, type, in_sizes[k]};
      std::printf("  input %zu: %s x %llu\n", k, ff::to_string(type),
                  static_cast<unsigned long long>(in_sizes[k]));
    }
    backend.sync();

    Clock::time_point origin = Clock::now();
    ff::BackendStats s0 = backend.stats();
    ff::replay::ReplayPlan plan(data, backend);
    Clock::time_point planned = Clock::now();
    ff::BackendStats s1 = backend.stats();
    std::printf("plan: %.3f ms (%llu kernels compiled, %llu from the kernel caches)\n",
                us_between(origin, planned) / 1000,
                static_cast<unsigned long long>(s1.compiles - s0.compiles),
                static_cast<unsigned long long>(s1.cache_hits - s0.cache_hits + s1.disk_cache_hits -
                                                s0.disk_cache_hits));

    if (plan.dist_ranks > 0 && ff::detail::launched_by_mpi()) {
      // Collectives need the other ranks: under mpirun they are there (the replay checks their
      // count); in a plain run the replay refuses, saying to run it under mpirun.
      std::printf("collectives over %u ranks: starting ff::dist\n", plan.dist_ranks);
      ff::dist::init();
    }
    Timer timer(d, backend, sync_each, !trace_path.empty(), origin);
    ff::replay::ReplayOptions options;
    options.observer = &timer;
    std::vector<double> wall_ms;
    for (size_t r = 0; r < repeat; ++r) {
      timer.repeat = r;
      Clock::time_point t0 = Clock::now();
      std::vector<ff::replay::ReplayOutput> outs = ff::replay::run(plan, backend, inputs, options);
      backend.sync();
      wall_ms.push_back(us_between(t0, Clock::now()) / 1000);
      for (const auto& o : outs)
        if (o.input < 0 && o.same_as < 0)
          backend.release(o.ptr);
      if (r == 0)
        for (size_t k = 0; k < outs.size(); ++k)
          std::printf("  output %zu: %s x %llu\n", k, ff::to_string(outs[k].type),
                      static_cast<unsigned long long>(outs[k].size));
    }

    std::vector<double> sorted = wall_ms;
    std::sort(sorted.begin(), sorted.end());
    std::printf("replays: %zu, first %.3f ms, median %.3f ms, min %.3f ms\n", repeat, wall_ms[0],
                sorted[sorted.size() / 2], sorted[0]);
    double total_us = 0;
    for (auto& [code, us] : timer.per_kind_us)
      total_us += us;
    std::printf("%-12s %10s %12s %12s %7s\n", "op", "count", "total ms", "mean us", "share");
    for (auto& [code, us] : timer.per_kind_us) {
      uint64_t n = timer.per_kind_n[code];
      std::printf("%-12s %10llu %12.3f %12.3f %6.1f%%\n",
                  ff::rec::to_string(static_cast<ff::rec::OpCode>(code)),
                  static_cast<unsigned long long>(n), us / 1000, n ? us / n : 0.0,
                  total_us > 0 ? 100 * us / total_us : 0.0);
    }
    if (!trace_path.empty()) {
      std::ofstream out(trace_path);
      out << trace_json(d, timer, file, backend.name()).dump() << "\n";
      out.close();
      if (!out)
        throw ff::Error("cannot write the trace to '" + trace_path + "'");
      std::printf("trace: %zu events written to %s\n", timer.events.size(), trace_path.c_str());
    }
  } catch (const ff::Error& e) {
    std::fflush(stdout);
    std::cerr << "recorder-replay: " << e.what() << "\n";
    ff::shutdown();
    return 1;
  }
  ff::shutdown();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return run(argc, argv);
}
