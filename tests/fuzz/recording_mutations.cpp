// Deterministic mutation run over Recordings, for CTest: recordings of a set of programs are
// damaged field by field (slot, expression, op, argument, access, guard, input and output
// indices set to edge values; ops swapped, dropped or repeated) and each mutant goes through
// RecordingData::validate, the replay plan and a replay at several input sizes. Outcomes are
// classified by the exact exception type (docs/errors.md), never by message text:
//   - validate refuses it: exactly ff::FormatError;
//   - the plan of a validated recording must build (a refusal there is a validation gap);
//   - a replay refuses it: ff::FreezeError or ff::GuardError (sizes, guards, bounds for these
//     inputs) or ff::BackendError (an absurd allocation); a FormatError here would be damage
//     that validation missed;
// anything else (another type, a crash, a sanitizer report, a hang) fails the test. So does a
// run in which too few mutants reach each stage: a mutator whose mutants all stop at
// validation tests nothing behind it. This is the safety net for recordings from files or
// other processes.
//
//   ff_fuzz_recording_mutations [mutants=2000] [seed=1]
#include <freezeframe/freezeframe.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <typeinfo>
#include <vector>

#include "backend/llvm/llvm_backend.h"
#include "frontend/recording_state.h"
#include "recorder/recording.h"
#include "replay/replay_plan.h"
#include "replay/replayer.h"

namespace {

using ff::rec::RecordingData;

// Programs using every op kind a recording holds: launches with gathers and scatters,
// copies of host constants, fills, reductions, prefix sums, compress, guards, aliasing.
std::vector<std::shared_ptr<const RecordingData>> seeds() {
  ff::Float x = ff::Float::from({0.5f, 1.5f, 2.5f, 3.5f, 4.5f, 5.5f, 6.5f, 7.5f});
  ff::UInt32 i = ff::UInt32::from({1u, 0u, 3u, 2u, 7u, 6u, 5u, 4u});
  std::vector<std::function<std::vector<ff::AnyArray>()>> bodies = {
      [&] {
        ff::UInt32 idx = ff::arange<ff::UInt32>(ff::width(x) - 1);
        ff::Float d = ff::gather<ff::Float>(x, idx + 1u) - ff::gather<ff::Float>(x, idx);
        return std::vector<ff::AnyArray>{d, ff::sum(d), ff::prefix_sum(x)};
      },
      [&] {
        ff::Float t = ff::zeros<ff::Float>(ff::width(x));
        ff::scatter(t, x * 2.f, i);
        ff::scatter_add(t, 1.f, i % 3u);
        ff::Float c = ff::Float::from({1.f, 2.f, 3.f});  // a host constant
        return std::vector<ff::AnyArray>{t, c + ff::max_reduce(x)};
      },
      [&] {
        ff::UInt32 hits = ff::compress(x > 3.f);
        ff::Float picked = ff::gather<ff::Float>(x, hits);
        if (hits.size() > 2)  // a guard after the compress
          picked = picked * 2.f;
        return std::vector<ff::AnyArray>{picked, x, ff::mean(picked)};
      },
      [&] {
        ff::Float y = x;
        ff::scatter(y, 9.f, ff::UInt32::from({0u}));  // into an input: copy-on-write
        return std::vector<ff::AnyArray>{y, ff::full<ff::Float>(3.f, ff::width(i) / 2)};
      },
  };
  std::vector<std::shared_ptr<const RecordingData>> out;
  for (auto& body : bodies)
    out.push_back(ff::detail::recording_state(ff::record({x, i}, body))->data);
  return out;
}

class Mutator {
 public:
  explicit Mutator(uint64_t seed) : rng_(seed) {}

  void mutate(RecordingData& d) {
    int count = 1 + static_cast<int>(pick(3));
    for (int m = 0; m < count; ++m)
      mutate_once(d);
  }

 private:
  size_t pick(size_t n) { return n ? static_cast<size_t>(rng_() % n) : 0; }

  // An index near the edges of a table of n entries.
  uint32_t index(size_t n) {
    const uint32_t v[] = {0,
                          1,
                          static_cast<uint32_t>(n ? n - 1 : 0),
                          static_cast<uint32_t>(n),
                          static_cast<uint32_t>(n + 1),
                          ff::rec::kNone,
                          0x7FFFFFFFu,
                          static_cast<uint32_t>(pick(n + 2))};
    return v[pick(std::size(v))];
  }

  // A 64-bit value: small, aligned or absurd (never a size that would really be allocated
  // and filled: the run must stay fast).
  uint64_t value() {
    const uint64_t v[] = {
        0, 1, 2, 3, 4, 7, 8, 16, 1000, uint64_t(1) << 40, uint64_t(1) << 62, UINT64_MAX};
    return v[pick(std::size(v))];
  }

  template <class T>
  T& any(std::vector<T>& v) {
    return v[pick(v.size())];
  }

  void mutate_once(RecordingData& d) {
    switch (pick(9)) {
      case 0:
        if (!d.slots.empty()) {
          auto& s = any(d.slots);
          switch (pick(4)) {
            case 0:
              s.type = static_cast<ff::ScalarType>(pick(9));
              break;
            case 1:
              s.origin = static_cast<ff::rec::SlotOrigin>(pick(4));
              break;
            case 2:
              s.origin_index = index(d.ops.size());
              break;
            default:
              s.size_expr = index(d.exprs.size());
          }
        }
        break;
      case 1:
        if (!d.exprs.empty()) {
          auto& e = any(d.exprs);
          switch (pick(5)) {
            case 0:
              e.op = static_cast<ff::SizeOp>(pick(10));
              break;
            case 1:
              e.value = value();
              break;
            case 2:
              e.slot = index(d.slots.size());
              break;
            case 3:
              e.lhs = index(d.exprs.size());
              break;
            default:
              e.rhs = index(d.exprs.size());
          }
        }
        break;
      case 2:
        if (!d.ops.empty()) {
          auto& o = any(d.ops);
          switch (pick(12)) {
            case 0:
              o.code = static_cast<ff::rec::OpCode>(pick(11));
              break;
            case 1:
              o.sub = static_cast<uint8_t>(pick(8));
              break;
            case 2:
              o.type = static_cast<ff::ScalarType>(pick(8));
              break;
            case 3:
              o.dst = index(d.slots.size());
              break;
            case 4:
              o.src = index(d.slots.size());
              break;
            case 5:
              o.dst_offset = value();
              break;
            case 6:
              o.src_offset = value();
              break;
            case 7:
              o.size_expr = index(d.exprs.size());
              break;
            case 8:
              o.kernel = index(d.kernels.size());
              break;
            case 9:
              o.arg_begin = index(d.args.size());
              break;
            case 10:
              o.constant = index(d.constants.size());
              break;
            default:
              o.elem_size = static_cast<uint32_t>(pick(10));
          }
        }
        break;
      case 3:
        if (!d.args.empty()) {
          auto& a = any(d.args);
          switch (pick(5)) {
            case 0:
              a.is_buffer = !a.is_buffer;
              break;
            case 1:
              a.slot = index(d.slots.size());
              break;
            case 2:
              a.offset = value();
              break;
            case 3:
              a.size_expr = index(d.exprs.size());
              break;
            default:
              a.bits = value();
          }
        }
        break;
      case 4:
        if (!d.accesses.empty()) {
          auto& a = any(d.accesses);
          if (pick(2))
            a.slot = index(d.slots.size());
          else
            a.write = !a.write;
        }
        break;
      case 5:
        if (!d.guards.empty()) {
          auto& g = any(d.guards);
          switch (pick(4)) {
            case 0:
              g.lhs = index(d.exprs.size());
              break;
            case 1:
              g.rhs = index(d.exprs.size());
              break;
            case 2:
              g.after_op = index(d.ops.size());
              break;
            default:
              g.outcome = !g.outcome;
          }
        }
        break;
      case 6:
        if (!d.inputs.empty())
          any(d.inputs) = index(d.slots.size());
        break;
      case 7:
        if (!d.outputs.empty())
          any(d.outputs).slot = index(d.slots.size());
        break;
      default:
        if (d.ops.size() > 1) {
          size_t a = pick(d.ops.size()), b = pick(d.ops.size());
          switch (pick(3)) {
            case 0:
              std::swap(d.ops[a], d.ops[b]);
              break;
            case 1:
              d.ops.erase(d.ops.begin() + static_cast<std::ptrdiff_t>(a));
              break;
            default:
              d.ops.insert(d.ops.begin() + static_cast<std::ptrdiff_t>(a), d.ops[b]);
          }
        }
    }
  }

  std::mt19937_64 rng_;
};

[[noreturn]] void violated(const char* what, const std::exception& e) {
  std::fprintf(stderr, "recording mutation property violated: %s\n%s: %s\n", what, typeid(e).name(),
               e.what());
  std::exit(1);
}

/// How a replay ended: completed, or refused with one of the types a replay may throw.
enum Replay { Completed, RefusedFreeze, RefusedGuard, RefusedBackend, kReplays };

// One replay of `plan` with inputs of `n` elements each (their recorded types).
Replay replay_once(const ff::replay::ReplayPlan& plan, ff::Backend& backend, uint64_t n) {
  const RecordingData& d = plan.data();
  std::vector<void*> owned;
  std::vector<ff::replay::ReplayInput> inputs;
  for (uint32_t slot : d.inputs) {
    ff::ScalarType t = d.slots[slot].type;
    void* p = backend.alloc(t, n, {});
    owned.push_back(p);
    // 5.0 in float inputs (past the compress threshold of the seeds), 1 in integer ones
    uint64_t pattern = t == ff::ScalarType::Float32   ? 0x40A00000u
                       : t == ff::ScalarType::Float64 ? 0x4014000000000000u
                                                      : 1u;
    backend.fill(p, n, static_cast<uint32_t>(ff::size_of(t)), pattern);
    inputs.push_back({p, t, n});
  }
  Replay result = Completed;
  try {
    auto outs = ff::replay::run(plan, backend, inputs, {});
    for (auto& o : outs)
      if (o.input < 0 && o.same_as < 0)
        backend.release(o.ptr);
  } catch (const std::exception& e) {
    if (typeid(e) == typeid(ff::FreezeError))
      result = RefusedFreeze;
    else if (typeid(e) == typeid(ff::GuardError))
      result = RefusedGuard;
    else if (typeid(e) == typeid(ff::BackendError))
      result = RefusedBackend;
    else
      violated("a replay of a validated recording threw another type", e);
  }
  for (void* p : owned)
    backend.release(p);
  return result;
}

}  // namespace

int main(int argc, char** argv) {
  size_t mutants = argc > 1 ? std::stoull(argv[1]) : 2000;
  uint64_t seed = argc > 2 ? std::stoull(argv[2]) : 1;
  ff::set_log_level(ff::LogLevel::Off);
  ff::init("llvm");
  std::vector<std::shared_ptr<const RecordingData>> corpus = seeds();
  auto backend = ff::create_llvm_backend(ff::BackendOptions{});

  // The seeds themselves replay.
  for (auto& data : corpus) {
    ff::replay::ReplayPlan plan(data, *backend);
    if (replay_once(plan, *backend, 8) != Completed) {
      std::fprintf(stderr, "a seed recording does not replay\n");
      return 1;
    }
  }
  Mutator mutator(seed);
  size_t invalid = 0, replayed = 0, refused = 0;  // per mutant
  size_t replays[kReplays] = {};                  // per replay (four sizes per mutant)
  for (size_t k = 0; k < mutants; ++k) {
    auto data = std::make_shared<RecordingData>(*corpus[k % corpus.size()]);
    mutator.mutate(*data);
    try {
      data->validate();
    } catch (const std::exception& e) {
      if (typeid(e) != typeid(ff::FormatError))
        violated("validate threw something other than ff::FormatError", e);
      ++invalid;
      continue;
    }
    std::unique_ptr<ff::replay::ReplayPlan> plan;
    try {
      plan = std::make_unique<ff::replay::ReplayPlan>(data, *backend);
    } catch (const std::exception& e) {
      violated("the replay plan of a validated recording failed", e);
    }
    bool all = true;
    for (uint64_t n : {uint64_t(0), uint64_t(1), uint64_t(8), uint64_t(25)}) {
      Replay r = replay_once(*plan, *backend, n);
      ++replays[r];
      all = all && r == Completed;
    }
    ++(all ? replayed : refused);
  }
  std::printf(
      "%zu mutants: %zu refused by validation (ff::FormatError), %zu refused by a replay, %zu "
      "replayed at every size\n"
      "%zu replays: %zu completed, %zu refused with ff::FreezeError, %zu with ff::GuardError, "
      "%zu with ff::BackendError\n",
      mutants, invalid, refused, replayed, (mutants - invalid) * 4, replays[Completed],
      replays[RefusedFreeze], replays[RefusedGuard], replays[RefusedBackend]);
  ff::shutdown();
  // Seed 1 over 2000 mutants: about 73% refused by validation, 16% refused by a replay, 11%
  // replayed at every size. A run in which every mutant stops at validation, or none replays
  // completely, or none is refused by a replay tests nothing behind validation.
  if (mutants >= 100 && (invalid * 20 < mutants || refused * 20 < mutants ||
                         replayed * 40 < mutants || invalid == mutants)) {
    std::fprintf(stderr,
                 "the mutants do not reach every stage: at least 5%% must be refused by "
                 "validation, 5%% by a replay and 2.5%% must replay at every size\n");
    return 1;
  }
  if (mutants > 0 && invalid == mutants) {
    std::fprintf(stderr, "every mutant was refused by validation\n");
    return 1;
  }
  return 0;
}
