// Control-flow regions (loops, branches, calls) in the LLVM backend, on hand-built kernels run
// directly through LlvmJit for every loop style and tier, against the same computation per lane
// on the host.
#include <algorithm>
#include <catch2/catch.hpp>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "backend/llvm/llvm_jit.h"
#include "support/host_values.h"
#include "support/region_kernels.h"
#include "support/region_op_kernels.h"

namespace {

using ff_test::bits_of;

using namespace ff;
using namespace ff::llvm_backend;
using namespace ff_test::regions;

struct Config {
  LoopStyle style;
  Tier tier;
};

std::vector<Config> configs() {
  std::vector<Config> c;
  for (LoopStyle s : {LoopStyle::VectorSplitTail, LoopStyle::VectorMasked, LoopStyle::Scalar})
    for (Tier t : {Tier::Quick, Tier::Optimized})
      c.push_back({s, t});
  return c;
}

LlvmJit& jit_for(LoopStyle style) {
  auto make = [](LoopStyle s) {
    JitOptions opt;
    opt.loop_style = s;
    return opt;
  };
  static LlvmJit split(make(LoopStyle::VectorSplitTail));
  static LlvmJit masked(make(LoopStyle::VectorMasked));
  static LlvmJit scalar(make(LoopStyle::Scalar));
  return style == LoopStyle::VectorSplitTail ? split
         : style == LoopStyle::VectorMasked  ? masked
                                             : scalar;
}

// Compiles `ir` once per loop style and tier.
const JitCode& compiled(const Config& cfg, const KernelIR& ir) {
  static std::map<std::string, std::unique_ptr<JitCode>> cache;
  std::string key =
      std::to_string(int(cfg.style)) + "/" + std::to_string(int(cfg.tier)) + "/" + ir.hash.to_hex();
  auto& code = cache[key];
  if (!code)
    code = jit_for(cfg.style).compile(ir, cfg.tier);
  return *code;
}

// Runs `ir` over [0, n) in two pieces split at 5 (a begin that is no multiple of the width).
// `args` gets the launch-mode word that accumulating kernels read after their parameters
// (accumulate_launch.h): exclusive or atomic, as `exclusive` says.
void run(const Config& cfg, const KernelIR& ir, size_t n, std::vector<uint64_t> args,
         bool exclusive = false) {
  args.resize(ir.params.size());
  args.push_back(exclusive ? 1 : 0);
  const JitCode& code = compiled(cfg, ir);
  size_t split = std::min<size_t>(5, n);
  if (split > 0)
    code.entry()(0, split, args.data());
  if (n > split)
    code.entry()(split, n, args.data());
}

}  // namespace

TEST_CASE("a loop region runs each lane until its condition fails, scatters only for active lanes",
          "[llvm][regions]") {
  for (uint64_t limit : {kNoIterationLimit, uint64_t{0}, uint64_t{1}, uint64_t{17}}) {
    KernelIR ir = collatz_kernel(limit);
    for (const Config& cfg : configs())
      for (size_t n : {0, 1, 2, 3, 17, 31, 64, 97}) {
        INFO("limit " << limit << " n " << n << " style " << int(cfg.style) << " tier "
                      << int(cfg.tier));
        std::vector<uint32_t> steps(n, 99), xs(n, 99), hist(7, 0), want_hist(7, 0);
        run(cfg, ir, n,
            {bits_of(steps.data()), bits_of(xs.data()), bits_of(hist.data()), uint64_t{7}});
        size_t bad = 0;
        for (size_t i = 0; i < n; ++i) {
          uint32_t fx = 0;
          uint32_t want = collatz_steps(static_cast<uint32_t>(i + 1), limit, want_hist, &fx);
          bad += steps[i] != want || xs[i] != fx;
        }
        CHECK(bad == 0);
        CHECK(hist == want_hist);
      }
  }
}

TEST_CASE("nested if regions give each lane its branch's result and side effects",
          "[llvm][regions]") {
  KernelIR ir = branch_kernel();
  for (const Config& cfg : configs())
    for (size_t n : {0, 1, 2, 3, 16, 47, 64}) {
      INFO("n " << n << " style " << int(cfg.style) << " tier " << int(cfg.tier));
      std::vector<uint32_t> out(n, 99), hit(n, 0);
      run(cfg, ir, n, {bits_of(out.data()), bits_of(hit.data()), uint64_t{n}});
      size_t bad = 0;
      for (size_t i = 0; i < n; ++i) {
        uint32_t want = i % 3 == 0 ? uint32_t(i * 2) : i % 3 == 1 ? uint32_t(i + 100) : 7u;
        bad += out[i] != want || hit[i] != (i % 3 == 0 ? 1u : 0u);
      }
      CHECK(bad == 0);
    }
}

TEST_CASE("a call region runs the target each lane's index names, zeros out of range",
          "[llvm][regions]") {
  for (uint32_t targets = 1; targets <= 8; ++targets) {
    KernelIR ir = call_kernel(targets);
    for (const Config& cfg : configs())
      for (size_t n : {0, 1, 2, 13, 64, 101}) {
        INFO("targets " << targets << " n " << n << " style " << int(cfg.style));
        std::vector<uint32_t> idx(n), out(n, 99);
        for (size_t i = 0; i < n; ++i)
          idx[i] = call_index(i, targets);  // some out of range
        run(cfg, ir, n, {bits_of(idx.data()), bits_of(out.data())});
        size_t bad = 0;
        for (size_t i = 0; i < n; ++i)
          bad += out[i] != call_model(i, idx[i], targets);
        CHECK(bad == 0);
      }
  }
}

// --- kernels against the host interpreter (support/region_op_kernels.h) ----------------------

namespace {

using namespace ff_test::region_ops;

// Runs `ir` in every loop style and tier at every size of `sizes`, and the interpreter on the
// host, each on its own copy of `setup(n)`'s arguments; every buffer must end up the same
// (floats within `tol`, see close_enough()). Accumulating launches alternate between exclusive
// and atomic.
void check_against_host(const KernelIR& ir, const Setup& setup, const std::vector<size_t>& sizes,
                        double tol = 0) {
  int round = 0;
  for (const Config& cfg : configs())
    for (size_t n : sizes) {
      INFO("n " << n << " style " << int(cfg.style) << " tier " << int(cfg.tier));
      std::vector<Arg> got = setup(n), want = setup(n);
      REQUIRE(got.size() == ir.params.size());
      run(cfg, ir, n, words(got), ++round % 2 == 0);
      run_on_host(ir, n, want);
      CHECK(mismatch(got, want, tol) == "");
    }
}

const std::vector<size_t> kSizes = {0, 1, 2, 3, 5, 13, 17, 31, 37, 61, 67, 97};

}  // namespace

TEST_CASE("every opcode family computes per lane in a loop body, an if part and a call target",
          "[llvm][regions]") {
  for (const Family& fam : families())
    for (Place place : kPlaces) {
      INFO("family " << fam.name << " at " << to_string(place));
      check_against_host(placed_kernel(fam, place), placed_setup(fam, place), kSizes, fam.tol);
    }
}

TEST_CASE("loops carry values of every element type, with and without an iteration limit",
          "[llvm][regions]") {
  for (uint64_t limit : {kNoIterationLimit, uint64_t{0}, uint64_t{1}, uint64_t{4}}) {
    INFO("limit " << limit);
    KernelIR ir = carried_kernel(limit);
    check_against_host(ir, carried_setup([](size_t k) { return double((k * 5) % 7); }), kSizes);
    // Zero iterations everywhere: the initial values come out, nothing is scattered.
    check_against_host(ir, carried_setup([](size_t) { return 0; }), kSizes);
    // Every lane the same trip count (a vector whose lanes all leave at once).
    check_against_host(ir, carried_setup([](size_t) { return 6; }), {1, 16, 37});
  }
}

TEST_CASE("one lane iterating 10^4 times while the others stop at once", "[llvm][regions]") {
  KernelIR ir = carried_kernel(kNoIterationLimit);
  for (size_t lane : {size_t{0}, size_t{6}, size_t{30}}) {
    INFO("the long lane " << lane);
    check_against_host(ir, carried_setup([lane](size_t k) { return k == lane ? 10000 : k % 2; }),
                       {31, 64});
  }
  // With an iteration limit below the trip count, the long lane stops at the limit.
  check_against_host(carried_kernel(777),
                     carried_setup([](size_t k) { return k == 3 ? 10000 : 0; }), {5, 40});
}

TEST_CASE("nested loops, a loop in an if and an if in a loop, calls with a loop in a target",
          "[llvm][regions]") {
  check_against_host(nested_kernel(), nested_args, kSizes);
}

TEST_CASE("calls with indices out of range run nothing and give zeros", "[llvm][regions]") {
  // call_kernel's targets for indices including N, 2^31 and 2^32 - 1, one target and many.
  for (uint32_t targets : {1u, 2u, 5u, 33u}) {
    KernelIR ir = call_kernel(targets);
    check_against_host(ir, out_of_range_call_setup(targets), kSizes);
  }
}

TEST_CASE("a loop in an if in a loop, loops without carried values, carried values of every type",
          "[llvm][regions]") {
  KernelIR nested = nested_loop_kernel(), mixed = mixed_carried_kernel();
  for (const Config& cfg : configs())
    for (size_t n : {0, 1, 5, 17, 64, 101}) {
      INFO("n " << n << " style " << int(cfg.style) << " tier " << int(cfg.tier));
      std::vector<uint32_t> js(n, 99), hist(8, 0), want_hist(8, 0);
      std::vector<uint64_t> accs(n, 99);
      run(cfg, nested, n,
          {bits_of(js.data()), bits_of(accs.data()), bits_of(hist.data()), uint64_t{8}});
      size_t bad = 0;
      for (size_t i = 0; i < n; ++i)
        bad += js[i] != i % 5 || accs[i] != nested_loop_model(i, want_hist);
      CHECK(bad == 0);
      CHECK(hist == want_hist);

      for (uint64_t limit : {0, 1, 3}) {
        std::vector<uint32_t> conds(4, 0), bodies(4, 0), want_conds(4, 0), want_bodies(4, 0);
        run(cfg, counted_loop_kernel(limit), n,
            {bits_of(conds.data()), bits_of(bodies.data()), uint64_t{4}});
        counted_loop_model(n, limit, want_conds, want_bodies);
        CHECK(conds == want_conds);
        CHECK(bodies == want_bodies);
      }

      std::vector<uint32_t> ks(n);
      std::vector<float> fs(n);
      std::vector<double> ds(n);
      std::vector<uint64_t> us(n);
      std::vector<uint8_t> bs(n);
      std::vector<int32_t> ps(n), qs(n);
      run(cfg, mixed, n,
          {bits_of(ks.data()), bits_of(fs.data()), bits_of(ds.data()), bits_of(us.data()),
           bits_of(bs.data()), bits_of(ps.data()), bits_of(qs.data())});
      bad = 0;
      for (size_t i = 0; i < n; ++i) {
        MixedCarried w = mixed_carried_model(i);
        bad += ks[i] != w.k || fs[i] != w.f || ds[i] != w.d || us[i] != w.u ||
               bs[i] != uint8_t{w.b} || ps[i] != w.p || qs[i] != w.q;
      }
      CHECK(bad == 0);
    }
}

TEST_CASE("scatter_inc inside a branch increments only for the lanes that take the branch",
          "[llvm][regions]") {
  KernelIR ir = scatter_inc_branch_kernel();
  for (const Config& cfg : configs())
    for (size_t n : {0, 1, 5, 64, 101}) {
      INFO("n " << n << " style " << int(cfg.style) << " tier " << int(cfg.tier));
      std::vector<uint32_t> counters(5, 0), sums(5, 0), others(1, 0), hist(40, 0);
      run(cfg, ir, n,
          {bits_of(counters.data()), bits_of(sums.data()), bits_of(others.data()),
           bits_of(hist.data()), uint64_t{5}, uint64_t{1}, uint64_t{40}});
      std::vector<uint32_t> wc(5, 0), ws(5, 0), wo(1, 0), wh(40, 0);
      scatter_inc_branch_model(n, wc, ws, wo, wh);
      CHECK(counters == wc);
      CHECK(sums == ws);
      CHECK(others == wo);
      CHECK(hist == wh);
    }
}
