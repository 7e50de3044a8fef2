// Control-flow regions (loops, branches, calls) in the PTX code generator, without a GPU: the
// region kernels of the IR corpus (tests/support/region_kernels.h: Collatz loops with a
// scatter_add and an iteration limit, nested ifs with a scatter, calls with 1 ... 64 targets, a
// loop in an if in a loop, loops without carried values, carried values of every type,
// scatter_inc in a branch) assembled by ptxas and run on the PTX reference interpreter against
// their host models in several schedules. tests/cuda_codegen_test.cpp compares them with the
// LLVM backend along with the rest of the corpus. And the kernels of
// tests/support/region_op_kernels.h (every opcode family at the top level, in a loop body, an
// if part and a call target; loops carrying every element type; nested regions), which
// tests/llvm_regions_test.cpp runs on LlvmJit: assembled by ptxas and run on the interpreter
// against the host IR interpreter (tests/support/ir_interpreter.h).
#include <catch2/catch.hpp>
#include <cstdint>
#include <cstdlib>
#include <regex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "backend/cuda/ptx_codegen.h"
#include "cuda/ir_corpus.h"
#include "cuda/ptx_interpreter.h"
#include "cuda/ptxas.h"
#include "support/region_kernels.h"
#include "support/region_op_kernels.h"

using namespace ff;
using namespace ff::cuda_backend;

namespace {

std::vector<ffcuda::CorpusCase> region_corpus() {
  std::vector<ffcuda::CorpusCase> r;
  for (auto& c : ffcuda::ir_corpus())
    if (c.name.rfind("regions.", 0) == 0)
      r.push_back(std::move(c));
  return r;
}

// ptxas, or "" after a warning where there is none (a failure when FF_REQUIRE_PTXAS is set).
std::string ptxas_or_skip() {
  std::string ptxas = ffcuda::find_ptxas();
  if (ptxas.empty()) {
    const char* req = std::getenv("FF_REQUIRE_PTXAS");
    if (req && *req && std::string(req) != "0")
      FAIL("ptxas not found (FF_REQUIRE_PTXAS is set)");
    WARN("skipped: ptxas not found (on PATH, in $FF_PTXAS or /usr/local/cuda/bin)");
  }
  return ptxas;
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + 1))
    ++n;
  return n;
}

}  // namespace

TEST_CASE("region kernels assemble with ptxas for sm_75, sm_80 and sm_90, unrolled or not",
          "[cuda_codegen][ptxas][regions]") {
  std::string ptxas = ptxas_or_skip();
  if (ptxas.empty())
    return;
  std::vector<ffcuda::CorpusCase> corpus = region_corpus();
  for (unsigned sm : {75u, 80u, 90u}) {
    INFO("sm_" << sm);
    std::vector<std::string> kernels;
    for (unsigned unroll : {1u, 4u, 8u}) {
      PtxOptions o;
      o.target.sm = sm;
      o.unroll = unroll;
      for (const auto& c : corpus)
        kernels.push_back(emit_ptx_kernel(c.ir, "k", o));
    }
    auto r = ffcuda::run_ptxas(ptxas, ffcuda::combine_modules(kernels, sm), sm);
    INFO(r.output);
    CHECK(r.status == 0);
    CHECK(r.output.empty());
  }
}

TEST_CASE("region kernels give their host model's result on the interpreter, in any schedule",
          "[cuda_codegen][semantics][regions]") {
  std::vector<ffcuda::CorpusCase> corpus = region_corpus();
  CHECK(corpus.size() == 16);
  PtxOptions plain, wide;
  plain.unroll = 1;
  wide.unroll = 8;
  for (const auto& c : corpus) {
    INFO(c.name);
    REQUIRE(!c.expect.empty());
    CHECK(ffcuda::compare(c, ffcuda::run_on_interpreter(c), c.expect, 0) == "");
    // Threads switching every instruction or every few: other lanes' scatters (and
    // scatter_inc's increments) land between a lane's loop trips and branches.
    CHECK(ffcuda::compare(c, ffcuda::run_on_interpreter(c, {}, 2, 64, 1), c.expect, 0) == "");
    CHECK(ffcuda::compare(c, ffcuda::run_on_interpreter(c, plain, 1, 96, 3), c.expect, 0) == "");
    CHECK(ffcuda::compare(c, ffcuda::run_on_interpreter(c, wide, 3, 32, 5), c.expect, 0) == "");
    // More threads than elements.
    CHECK(ffcuda::compare(c, ffcuda::run_on_interpreter(c, {}, 5, 256), c.expect, 0) == "");
  }
}

TEST_CASE("every region and every unrolled copy of it has its own labels",
          "[cuda_codegen][regions]") {
  namespace rk = ff_test::regions;
  for (const KernelIR& ir : {rk::nested_loop_kernel(), rk::call_kernel(3), rk::call_kernel(9),
                             rk::scatter_inc_branch_kernel(), rk::counted_loop_kernel(2)}) {
    for (unsigned unroll : {1u, 4u}) {
      PtxOptions o;
      o.unroll = unroll;
      std::string text = emit_ptx_kernel(ir, "k", o);
      std::set<std::string> labels;
      std::regex def(R"((\$L__\d+):)");
      size_t defs = 0;
      for (auto it = std::sregex_iterator(text.begin(), text.end(), def);
           it != std::sregex_iterator(); ++it, ++defs)
        labels.insert((*it)[1]);
      INFO(text);
      CHECK(defs == labels.size());
      CHECK_NOTHROW(ffcuda::PtxModule(text));
    }
  }
}

TEST_CASE("calls dispatch through compares up to 4 targets, brx.idx beyond, once per copy",
          "[cuda_codegen][regions]") {
  namespace rk = ff_test::regions;
  PtxOptions o;  // 4 unrolled copies, then the plain loop's copy
  CHECK(count(emit_ptx_kernel(rk::call_kernel(4), "k", o), "brx.idx") == 0);
  std::string text = emit_ptx_kernel(rk::call_kernel(5), "k", o);
  CHECK(count(text, "brx.idx") == 5);
  CHECK(count(text, ".branchtargets") == 5);
  o.unroll = 1;
  CHECK(count(emit_ptx_kernel(rk::call_kernel(64), "k", o), "brx.idx") == 1);
}

TEST_CASE("the reference interpreter's brx.idx jumps to the index-th target and refuses others",
          "[cuda_codegen][regions]") {
  const std::string head = R"(.version 6.4
.target sm_75
.address_size 64

.visible .entry k(
	.param .u64 p,
	.param .u64 i
)
{
	.reg .b32 %r<4>;
	.reg .b64 %rd<4>;
	ld.param.u64 %rd0, [p];
	ld.param.u64 %rd1, [i];
	cvt.u32.u64 %r0, %rd1;
	cvta.to.global.u64 %rd2, %rd0;
)";
  const std::string brx = "\tbrx.idx %r0, $L__t;\n";
  const std::string table = "\t$L__t: .branchtargets $L__0, $L__1, $L__2;\n";
  const std::string tail = R"($L__0:
	mov.u32 %r1, 10;
	bra $L__9;
$L__1:
	mov.u32 %r1, 11;
	bra $L__9;
$L__2:
	mov.u32 %r1, 12;
$L__9:
	st.global.u32 [%rd2], %r1;
	ret;
}
)";
  ffcuda::PtxModule m(head + table + brx + tail);
  uint32_t out = 0;
  m.allow(&out, sizeof out);
  for (uint64_t i : {0u, 1u, 2u}) {
    m.launch("k", 1, 1, std::vector<uint64_t>{reinterpret_cast<uint64_t>(&out), i});
    CHECK(out == 10 + i);
  }
  CHECK_THROWS_AS(
      m.launch("k", 1, 1, std::vector<uint64_t>{reinterpret_cast<uint64_t>(&out), uint64_t{3}}),
      ffcuda::PtxError);
  // A table that is not declared, or declared after its use.
  CHECK_THROWS_AS(ffcuda::PtxModule(head + brx + tail), ffcuda::PtxError);
  CHECK_THROWS_AS(ffcuda::PtxModule(head + brx + table + tail), ffcuda::PtxError);
}

// --- every opcode family in regions (tests/support/region_op_kernels.h) -----------------------

namespace {

namespace ro = ff_test::region_ops;

// A kernel of region_op_kernels.h with the arguments it runs with, and the tolerance of its
// float outputs (ro::close_enough).
struct OpKernel {
  std::string name;
  KernelIR ir;
  ro::Setup setup;
  double tol = 0;
};

// Every family at every place, loops carrying every element type (with and without an
// iteration limit), the nested regions and a call with indices out of range.
std::vector<OpKernel> op_kernels() {
  std::vector<OpKernel> r;
  for (const ro::Family& fam : ro::families())
    for (ro::Place place : ro::kPlaces)
      r.push_back({std::string(fam.name) + " at " + ro::to_string(place),
                   ro::placed_kernel(fam, place), ro::placed_setup(fam, place), fam.tol});
  for (uint64_t limit : {kNoIterationLimit, uint64_t{0}, uint64_t{1}, uint64_t{4}})
    r.push_back({"carried, limit " + std::to_string(limit), ro::carried_kernel(limit),
                 ro::carried_setup([](size_t k) { return double((k * 5) % 7); }), 0});
  r.push_back({"nested", ro::nested_kernel(), ro::nested_args, 0});
  r.push_back(
      {"call out of range", ff_test::regions::call_kernel(5), ro::out_of_range_call_setup(5), 0});
  return r;
}

// How the interpreter runs a kernel: elements per thread per trip of the grid-stride loop,
// grid and block, and the instructions after which threads take turns (0: at collectives).
struct Schedule {
  unsigned unroll, grid, block, quantum;
};

// Runs `m`'s entry "k" over [0, n) with `args` (buffers updated in place).
void launch(ffcuda::PtxModule& m, const Schedule& s, size_t n, std::vector<ro::Arg>& args) {
  m.clear_allowed();
  std::vector<uint64_t> params{n};
  for (ro::Arg& a : args) {
    if (a.buffer)
      m.allow(a.bytes.data(), a.bytes.size());
    params.push_back(a.buffer ? reinterpret_cast<uint64_t>(a.bytes.data()) : a.bits);
  }
  m.launch("k", s.grid, s.block, params);
}

}  // namespace

TEST_CASE("every opcode family in regions assembles with ptxas for sm_75, sm_80 and sm_90",
          "[cuda_codegen][ptxas][regions]") {
  std::string ptxas = ptxas_or_skip();
  if (ptxas.empty())
    return;
  std::vector<OpKernel> kernels = op_kernels();
  // The generated PTX differs between targets in its header only, and ptxas takes ~10 s a
  // target for every unrolling (the math kernels are large): the default unrolling for every
  // target, 1 and 8 besides for sm_75.
  const std::pair<unsigned, std::vector<unsigned>> targets[] = {
      {75u, {1u, 4u, 8u}}, {80u, {4u}}, {90u, {4u}}};
  for (const auto& [sm, unrolls] : targets) {
    INFO("sm_" << sm);
    std::vector<std::string> modules;
    for (unsigned unroll : unrolls) {
      PtxOptions o;
      o.target.sm = sm;
      o.unroll = unroll;
      for (const OpKernel& k : kernels)
        modules.push_back(emit_ptx_kernel(k.ir, "k", o));
    }
    auto r = ffcuda::run_ptxas(ptxas, ffcuda::combine_modules(modules, sm), sm);
    INFO(r.output);
    CHECK(r.status == 0);
    CHECK(r.output.empty());
  }
}

TEST_CASE("every opcode family in regions gives the host interpreter's result on the PTX one",
          "[cuda_codegen][semantics][regions]") {
  // Unrolled copies (16 elements a trip of the grid-stride loop: sizes 17 and 33 run them and
  // the plain loop), more threads than elements switching every 3 instructions, and 2 threads
  // switching every instruction (other lanes' scatters land between a lane's loads and
  // stores).
  const Schedule schedules[] = {{4, 1, 4, 0}, {1, 2, 32, 3}, {8, 1, 2, 1}};
  for (const OpKernel& k : op_kernels())
    for (const Schedule& s : schedules) {
      INFO(k.name << ", unroll " << s.unroll << ", " << s.grid << " x " << s.block
                  << " threads, quantum " << s.quantum);
      PtxOptions o;
      o.unroll = s.unroll;
      ffcuda::PtxModule m(emit_ptx_kernel(k.ir, "k", o));
      m.set_quantum(s.quantum);
      for (size_t n : {0, 1, 2, 5, 17, 33}) {
        INFO("n " << n);
        std::vector<ro::Arg> got = k.setup(n), want = k.setup(n);
        REQUIRE(got.size() == k.ir.params.size());
        launch(m, s, n, got);
        ro::run_on_host(k.ir, n, want);
        CHECK(ro::mismatch(got, want, k.tol) == "");
      }
    }
}
