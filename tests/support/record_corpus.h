// Helpers for the recording/replay tests (tests/record_*.cpp): host snapshots of type-erased
// arrays, seeded inputs described by a small spec, and the corpus driver that records a
// function once and replays it at many sizes against the same function run traced.
//
// The driver's contract for one corpus entry (check_case):
//   1. build the inputs at size N and ff::record the function;
//   2. for every replay size n (N first, then 1, 2, 3N+1, 777, 1234): build the inputs at n,
//      run the function traced on an identical second set, then replay the recording and
//      compare every output element (exact for integers and Bool, 1e-5 relative for floats);
//   3. during each replay: no kernel compiles (after the first replay), no traced array
//      operations and no traced kernels on this thread;
//   4. the caller's inputs keep their contents after each replay (writes into inputs are
//      copy-on-write in the replayer);
//   5. entries that broadcast a size-1 input ("one" inputs) are also replayed with that input
//      widened to size n > 1: the traced code then takes the element-wise path instead of the
//      broadcast one, so the recording must refuse with ff::GuardError (and nothing else);
//   6. the recording saved to a file and loaded back (through_a_file) lists the same, its
//      recorder-dump JSON parses with counts equal to the API's, and it replays at every size
//      with the same results as the original;
//   7. the same function recorded with the optimiser off replays to bitwise-equal outputs at
//      every size, with no higher peak memory and no more launches (check_optimizer_equivalence).
#pragma once

#include <freezeframe/freezeframe.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "common/file_io.h"
#include "recorder/format_reader.h"
#include "support/errors.h"
#include "tools/recorder-dump/dump.h"

namespace ffr {

using Catch::Matchers::Contains;
using Inputs = std::vector<ff::AnyArray>;
using Fn = std::function<Inputs(Inputs&)>;

/// A fresh backend stack (empty kernel cache), whatever the previous test left behind. The
/// default spec "" is FF_BACKEND's stack, default "llvm" (the CUDA test executables set "cuda").
inline void fresh(const char* spec = "") {
  ff::shutdown();
  ff::init(spec);
}

// ---------------------------------------------------------------------------------------
// Host snapshots

/// The contents of an array on the host: integers and Bool as exact 64-bit patterns (sign-
/// extended for signed types), floats widened to double (exact).
struct HostArray {
  ff::ScalarType type = ff::ScalarType::Float32;
  std::vector<uint64_t> bits;
  std::vector<double> real;

  size_t size() const { return ff::is_float(type) ? real.size() : bits.size(); }
};

template <class T>
HostArray snapshot_typed(const ff::AnyArray& a) {
  HostArray h;
  h.type = ff::scalar_type_of<T>;
  auto v = a.as<ff::Array<T>>().to_vector();
  if constexpr (std::is_floating_point_v<T>) {
    h.real.assign(v.begin(), v.end());
  } else {
    h.bits.reserve(v.size());
    for (size_t i = 0; i < v.size(); ++i)
      h.bits.push_back(static_cast<uint64_t>(static_cast<T>(v[i])));
  }
  return h;
}

inline HostArray snapshot(const ff::AnyArray& a) {
  switch (a.type()) {
    case ff::ScalarType::Bool:
      return snapshot_typed<bool>(a);
    case ff::ScalarType::Int32:
      return snapshot_typed<int32_t>(a);
    case ff::ScalarType::UInt32:
      return snapshot_typed<uint32_t>(a);
    case ff::ScalarType::Int64:
      return snapshot_typed<int64_t>(a);
    case ff::ScalarType::UInt64:
      return snapshot_typed<uint64_t>(a);
    case ff::ScalarType::Float32:
      return snapshot_typed<float>(a);
    case ff::ScalarType::Float64:
      return snapshot_typed<double>(a);
  }
  return {};
}

inline std::vector<HostArray> snapshot(const Inputs& arrays) {
  std::vector<HostArray> out;
  out.reserve(arrays.size());
  for (const ff::AnyArray& a : arrays)
    out.push_back(a.valid() ? snapshot(a) : HostArray{});
  return out;
}

/// "" when equal (exact for integers, |got - want| <= rel * max(1, |want|) for floats, NaN
/// equal to NaN), else a description of the size difference or first mismatch.
inline std::string compare(const HostArray& got, const HostArray& want, double rel = 1e-5) {
  std::ostringstream os;
  if (got.type != want.type) {
    os << "element type " << ff::to_string(got.type) << ", expected " << ff::to_string(want.type);
    return os.str();
  }
  if (got.size() != want.size()) {
    os << "size " << got.size() << ", expected " << want.size();
    return os.str();
  }
  size_t bad = 0, first = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    bool ok;
    if (ff::is_float(got.type)) {
      double g = got.real[i], w = want.real[i];
      ok = (std::isnan(g) && std::isnan(w)) || g == w ||
           std::fabs(g - w) <= rel * std::max(1.0, std::fabs(w));
    } else {
      ok = got.bits[i] == want.bits[i];
    }
    if (!ok && bad++ == 0)
      first = i;
  }
  if (!bad)
    return "";
  os << bad << " of " << got.size() << " elements differ; first at [" << first << "]: got ";
  if (ff::is_float(got.type))
    os << got.real[first] << ", expected " << want.real[first];
  else
    os << static_cast<int64_t>(got.bits[first]) << ", expected "
       << static_cast<int64_t>(want.bits[first]);
  return os.str();
}

inline void require_same(const std::vector<HostArray>& got, const std::vector<HostArray>& want,
                         const std::string& what, double rel = 1e-5) {
  INFO(what);
  REQUIRE(got.size() == want.size());
  for (size_t k = 0; k < got.size(); ++k) {
    INFO("output " << k);
    CHECK(compare(got[k], want[k], rel) == "");
  }
}

// ---------------------------------------------------------------------------------------
// Inputs

/// One input of a corpus function: element type and size (scale * n + offset), or the same
/// AnyArray as an earlier input (alias).
struct InputSpec {
  ff::ScalarType type = ff::ScalarType::Float32;
  uint32_t scale = 1;
  uint32_t offset = 0;
  int alias = -1;

  bool is_one() const { return scale == 0 && offset == 1; }
};

inline InputSpec in(ff::ScalarType t, uint32_t scale = 1, uint32_t offset = 0) {
  return {t, scale, offset, -1};
}

inline InputSpec f32() {
  return in(ff::ScalarType::Float32);
}

inline InputSpec f64() {
  return in(ff::ScalarType::Float64);
}

inline InputSpec i32() {
  return in(ff::ScalarType::Int32);
}

inline InputSpec u32() {
  return in(ff::ScalarType::UInt32);
}

inline InputSpec i64() {
  return in(ff::ScalarType::Int64);
}

inline InputSpec u64() {
  return in(ff::ScalarType::UInt64);
}

inline InputSpec boolean() {
  return in(ff::ScalarType::Bool);
}

/// A size-1 input that broadcasts.
inline InputSpec one(ff::ScalarType t) {
  return in(t, 0, 1);
}

/// The same AnyArray as input k.
inline InputSpec alias(int k) {
  InputSpec s;
  s.alias = k;
  return s;
}

template <class... S>
std::vector<InputSpec> specs(S... s) {
  return {s...};
}

inline uint64_t salt_of(const std::string& name, size_t n, size_t k) {
  uint64_t h = 1469598103934665603ULL;
  for (char c : name)
    h = (h ^ static_cast<uint8_t>(c)) * 1099511628211ULL;
  return h ^ (n * 0x9E3779B97F4A7C15ULL) ^ (k * 0xC2B2AE3D27D4EB4FULL);
}

/// Seeded data: floats in [0, 1), Int32 in [-1000, 1000], UInt32 in [0, 100000], Int64 in
/// [-1e9, 1e9], UInt64 in [0, 1e12], Bool with p = 0.5.
inline ff::AnyArray make_array(ff::ScalarType t, size_t n, uint64_t salt) {
  std::mt19937_64 g(salt);
  auto ints = [&](auto tag, int64_t lo, int64_t hi) {
    using T = decltype(tag);
    std::uniform_int_distribution<int64_t> d(lo, hi);
    std::vector<T> v(n);
    for (auto& e : v)
      e = static_cast<T>(d(g));
    return ff::AnyArray(ff::Array<T>::from(v));
  };
  auto reals = [&](auto tag) {
    using T = decltype(tag);
    std::uniform_real_distribution<double> d(0.0, 1.0);
    std::vector<T> v(n);
    for (auto& e : v)
      e = static_cast<T>(d(g));
    return ff::AnyArray(ff::Array<T>::from(v));
  };
  switch (t) {
    case ff::ScalarType::Bool: {
      std::vector<bool> v(n);
      for (size_t i = 0; i < n; ++i)
        v[i] = (g() >> 17) & 1;
      return ff::AnyArray(ff::Bool::from(v));
    }
    case ff::ScalarType::Int32:
      return ints(int32_t{}, -1000, 1000);
    case ff::ScalarType::UInt32:
      return ints(uint32_t{}, 0, 100000);
    case ff::ScalarType::Int64:
      return ints(int64_t{}, -1000000000LL, 1000000000LL);
    case ff::ScalarType::UInt64:
      return ints(uint64_t{}, 0, 1000000000000LL);
    case ff::ScalarType::Float32:
      return reals(float{});
    case ff::ScalarType::Float64:
      return reals(double{});
  }
  return {};
}

/// Inputs for `specs` at size n; `widen_one` sizes the "one" inputs n as well.
inline Inputs make_inputs(const std::string& name, const std::vector<InputSpec>& specs, size_t n,
                          bool widen_one = false) {
  Inputs out;
  for (size_t k = 0; k < specs.size(); ++k) {
    const InputSpec& s = specs[k];
    if (s.alias >= 0) {
      out.push_back(out[static_cast<size_t>(s.alias)]);
      continue;
    }
    size_t size = s.is_one() && widen_one ? n : s.scale * n + s.offset;
    out.push_back(make_array(s.type, size, salt_of(name, n, k)));
  }
  return out;
}

/// Moves input k out of `in` so the function holds the only reference: a scatter into it then
/// writes the input buffer in place (what a front end does for an argument taken by reference).
template <class A>
A take(Inputs& in, size_t k) {
  A a = in[k].as<A>();
  in[k] = ff::AnyArray();
  return a;
}

template <class A>
A get(const Inputs& in, size_t k) {
  return in[k].as<A>();
}

// ---------------------------------------------------------------------------------------
// Counters

struct Delta {
  int64_t compiles, launches, traced_ops, traced_kernels;
};

inline Delta delta(const ff::Stats& a, const ff::Stats& b) {
  return {static_cast<int64_t>(b.compiles - a.compiles),
          static_cast<int64_t>(b.launches - a.launches),
          static_cast<int64_t>(b.traced_ops - a.traced_ops),
          static_cast<int64_t>(b.traced_kernels - a.traced_kernels)};
}

// ---------------------------------------------------------------------------------------
// The corpus driver

struct Case {
  std::string name;
  std::vector<InputSpec> inputs;
  Fn fn;
};

inline constexpr size_t kRecordSize = 1000;

inline std::vector<size_t> replay_sizes() {
  return {kRecordSize, 1, 2, 3 * kRecordSize + 1, 777, 1234};
}

/// Runs the function traced (not recorded) and evaluates its outputs.
inline std::vector<HostArray> run_traced(const Case& c, Inputs in) {
  Inputs outs = c.fn(in);
  return snapshot(outs);
}

/// Saves `r` to a file and loads it back; checks the listing and recorder-dump's JSON counts.
inline ff::Recording through_a_file(const ff::Recording& r, const std::string& name) {
  namespace fs = std::filesystem;
  fs::path path =
      fs::temp_directory_path() / ("ff-corpus-" + std::to_string(::getpid()) + "-" +
                                   std::to_string(salt_of(name, 0, 0) % 1000000007) + ".ffr");
  r.save(path.string());
  ff::Recording loaded = ff::Recording::load(path.string());
  std::vector<std::byte> bytes = ff::read_file(path.string());
  fs::remove(path);
  CHECK(loaded.to_string() == r.to_string());
  nlohmann::json j =
      nlohmann::json::parse(ff::dump::json(ff::format::parse(bytes), {}).dump());  // parses
  CHECK(j["schema"] == ff::dump::kJsonSchema);
  REQUIRE(j["recordings"].size() == 1);
  const nlohmann::json& counts = j["recordings"][0]["counts"];
  CHECK(counts["ops"] == r.n_ops());
  CHECK(counts["kernels"] == r.n_kernels());
  CHECK(counts["inputs"] == r.n_inputs());
  CHECK(counts["outputs"] == r.n_outputs());
  CHECK(counts["slots"] == r.n_slots());
  CHECK(counts["guards"] == r.n_guards());
  CHECK(j["recordings"][0]["ops"].size() == r.n_ops());
  return loaded;
}

/// The optimiser's contract (docs/optimizer.md) for one corpus function: `r` (recorded with the
/// optimiser on, unless FF_OPTIMIZE=0) and the same function recorded with it off replay to
/// bitwise-equal outputs at every replay size (fusion keeps each element's operation order),
/// the optimised replay never allocates a higher peak, and never issues more ops. Returns
/// the launches of one replay at the recorded size: {optimised, unoptimised}.
inline std::pair<uint64_t, uint64_t> check_optimizer_equivalence(const Case& c,
                                                                 const ff::Recording& r) {
  ff::Recording plain;
  {
    Inputs rec_in = make_inputs(c.name, c.inputs, kRecordSize);
    plain = ff::record(
        rec_in, [&] { return c.fn(rec_in); }, ff::RecordOptions{false});
  }
  REQUIRE_FALSE(plain.is_optimized());
  CHECK(r.n_ops() <= plain.n_ops());
  std::pair<uint64_t, uint64_t> launches{0, 0};
  for (size_t n : replay_sizes()) {
    INFO("optimised and unoptimised replays at size " << n);
    Inputs ins = make_inputs(c.name, c.inputs, n);
    auto replay = [&](const ff::Recording& rec, uint64_t& peak, uint64_t& n_launches) {
      ff::sync();
      ff::reset_peak_memory();
      ff::Stats s0 = ff::stats();
      std::vector<HostArray> out;
      try {
        Inputs outs = rec.replay(ins);
        ff::sync();
        ff::Stats s1 = ff::stats();
        peak = s1.peak_bytes;
        n_launches = s1.launches - s0.launches;
        out = snapshot(outs);
      } catch (const ff::GuardError&) {
        return std::optional<std::vector<HostArray>>();
      }
      return std::optional<std::vector<HostArray>>(std::move(out));
    };
    uint64_t peak_plain = 0, peak_opt = 0, launches_plain = 0, launches_opt = 0;
    auto want = replay(plain, peak_plain, launches_plain);
    auto got = replay(r, peak_opt, launches_opt);
    REQUIRE(want.has_value() == got.has_value());  // both replay, or both refuse
    if (!want)
      continue;
    require_same(*got, *want, "optimised vs unoptimised replay (bitwise)", 0.0);
    CHECK(peak_opt <= peak_plain);
    CHECK(launches_opt <= launches_plain);
    if (n == kRecordSize)
      launches = {launches_opt, launches_plain};
  }
  return launches;
}

/// What happened to one replay of a recording made at another size.
struct EdgeOutcome {
  size_t replayed = 0, refused = 0;
};

/// Records `c` at `record_size` (0 and 1 are the edges: nothing to compute, everything of size
/// 1) and replays it at `sizes`. At each size the function also runs traced: a replay gives
/// exactly the traced results (sizes included), or refuses with ff::GuardError — never a
/// result of another size. Where the traced function itself fails (sizes that do not fit its
/// constants), the replay must refuse too. At the recorded size the replay must succeed.
inline EdgeOutcome check_recorded_at(const Case& c, size_t record_size,
                                     const std::vector<size_t>& sizes) {
  INFO("corpus function '" << c.name << "' recorded at size " << record_size);
  EdgeOutcome outcome;
  bool defined = true;  // the function itself runs at this size
  try {
    run_traced(c, make_inputs(c.name, c.inputs, record_size));
  } catch (const ff::Error&) {
    defined = false;
  }
  ff::Recording r;
  {
    Inputs rec_in = make_inputs(c.name, c.inputs, record_size);
    if (!defined) {  // e.g. width(x) - 1 at width 0: recording fails exactly like tracing
      REQUIRE_THROWS_AS(ff::record(rec_in, [&] { return c.fn(rec_in); }), ff::Error);
      return outcome;
    }
    r = ff::record(rec_in, [&] { return c.fn(rec_in); });
  }
  INFO(r.summary());
  // The same recording through a file replays and refuses exactly like the original.
  ff::Recording loaded = through_a_file(r, c.name + " at " + std::to_string(record_size));
  for (size_t n : sizes) {
    INFO("replayed at size " << n);
    std::vector<HostArray> want;
    bool traced_ok = true;
    try {
      want = run_traced(c, make_inputs(c.name, c.inputs, n));
    } catch (const ff::Error&) {
      traced_ok = false;
    }
    Inputs ins = make_inputs(c.name, c.inputs, n);
    std::vector<HostArray> ins_before = snapshot(ins);
    if (!traced_ok) {
      REQUIRE(n != record_size);
      REQUIRE_THROWS_AS(r.replay(ins), ff::FreezeError);  // GuardError is one
      REQUIRE_THROWS_AS(loaded.replay(ins), ff::FreezeError);
      ++outcome.refused;
    } else if (n == record_size) {
      require_same(snapshot(r.replay(ins)), want, "replay at the recorded size vs traced");
      require_same(snapshot(loaded.replay(ins)), want, "loaded replay at the recorded size");
      ++outcome.replayed;
    } else {
      try {
        Inputs outs = r.replay(ins);
        require_same(snapshot(outs), want, "replay vs traced");
        require_same(snapshot(loaded.replay(ins)), want, "replay of the loaded file vs traced");
        ++outcome.replayed;
      } catch (const ff::GuardError&) {
        REQUIRE_THROWS_AS(loaded.replay(ins), ff::GuardError);
        ++outcome.refused;  // a size decision came out differently: record this path anew
      }
    }
    require_same(snapshot(ins), ins_before, "the caller's inputs after the replay");
  }
  return outcome;
}

/// Sizes for the edge recordings: 0, 1, 2, primes, and the main recording's size.
inline std::vector<size_t> edge_replay_sizes() {
  return {0, 1, 2, 3, 13, 1000, 0, 1};
}

inline void check_case(const Case& c) {
  fresh();
  INFO("corpus function '" << c.name << "'");
  bool has_one = false;
  for (const InputSpec& s : c.inputs)
    has_one = has_one || s.is_one();

  ff::Recording r;
  {
    Inputs rec_in = make_inputs(c.name, c.inputs, kRecordSize);
    // `rec_in` is read by ff::record before the function runs; the function may take() from it.
    r = ff::record(rec_in, [&] { return c.fn(rec_in); });
  }
  INFO(r.summary());
  REQUIRE(r.n_inputs() == c.inputs.size());
  ff::Recording loaded = through_a_file(r, c.name);
  check_optimizer_equivalence(c, r);

  bool first = true;
  for (size_t n : replay_sizes()) {
    INFO("replayed at size " << n << " (recorded at " << kRecordSize << ")");
    Inputs ins = make_inputs(c.name, c.inputs, n);
    std::vector<HostArray> want = run_traced(c, make_inputs(c.name, c.inputs, n));
    std::vector<HostArray> ins_before = snapshot(ins);

    ff::sync();
    ff::Stats s0 = ff::stats();
    Inputs outs = r.replay(ins);
    ff::Stats s1 = ff::stats();
    Delta d = delta(s0, s1);
    // Outputs that are neither an input nor a repeat of an earlier output: new arrays the
    // replay had to hand back (for the diagnosis of a traced_ops difference).
    size_t fresh_outputs = 0;
    for (size_t k = 0; k < outs.size(); ++k) {
      bool seen = false;
      for (const ff::AnyArray& a : ins)
        seen = seen || a.id() == outs[k].id();
      for (size_t j = 0; j < k; ++j)
        seen = seen || outs[j].id() == outs[k].id();
      fresh_outputs += !seen;
    }
    INFO("replay deltas: compiles " << d.compiles << ", launches " << d.launches << ", traced_ops "
                                    << d.traced_ops << ", traced_kernels " << d.traced_kernels
                                    << "; new output arrays " << fresh_outputs);
    if (!first)
      CHECK(d.compiles == 0);
    CHECK(d.traced_kernels == 0);
    CHECK(d.traced_ops == 0);
    first = false;

    REQUIRE(outs.size() == r.n_outputs());
    require_same(snapshot(outs), want, "replay vs traced");
    require_same(snapshot(ins), ins_before, "the caller's inputs after the replay");
    require_same(snapshot(loaded.replay(ins)), want, "replay of the loaded file vs traced");
    require_same(snapshot(ins), ins_before, "the caller's inputs after the loaded replay");

    if (has_one && n > 1) {
      // The traced code takes another path here: with the size-1 input widened to n nothing
      // broadcasts, so the recorded "width == 1" guard must fail instead of replaying.
      Inputs wide = make_inputs(c.name, c.inputs, n, /*widen_one=*/true);
      std::vector<HostArray> wide_before = snapshot(wide);
      std::vector<HostArray> traced_wide = run_traced(c, make_inputs(c.name, c.inputs, n, true));
      REQUIRE_THROWS_EXACTLY(r.replay(wide), ff::GuardError);
      REQUIRE_THROWS_WITH(r.replay(wide), Contains("== 1") && Contains("record this path anew"));
      require_same(snapshot(wide), wide_before, "the caller's inputs after a GuardError");
      // What the GuardError asks for: that path recorded anew replays as the traced function.
      ff::Recording anew;
      {
        Inputs rec_wide = make_inputs(c.name, c.inputs, n, true);
        anew = ff::record(rec_wide, [&] { return c.fn(rec_wide); });
      }
      Inputs outs_wide = anew.replay(make_inputs(c.name, c.inputs, n, true));
      require_same(snapshot(outs_wide), traced_wide, "the path recorded anew vs traced");
    }
  }

  // The edges: recorded with every input empty, and with every sized input of size 1.
  // Refusals are allowed there (a function that broadcasts a reduction pins size 1), results
  // of another size are not; at the recorded size itself the replay must work.
  check_recorded_at(c, 0, edge_replay_sizes());
  check_recorded_at(c, 1, edge_replay_sizes());
}

}  // namespace ffr
