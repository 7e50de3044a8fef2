// recorder-dump and recorder-replay on real files (written by ff_test_make_recordings into
// FF_TOOLS_DATA_DIR, a CTest fixture): the ff_dump library called directly, and the binaries
// run as a user would, checking output, exit codes and stderr.
#include <fcntl.h>
#include <freezeframe/freezeframe.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "common/file_io.h"
#include "recorder/format.h"
#include "recorder/format_reader.h"
#include "recorder/format_writer.h"
#include "tools/recorder-dump/dump.h"

extern char** environ;

namespace {

/// "format 1.N" of this build's writer.
std::string current_format() {
  return "format " + std::to_string(ff::format::kVersionMajor) + "." +
         std::to_string(ff::format::kVersionMinor);
}

using Catch::Matchers::Contains;
namespace fs = std::filesystem;

std::string data(const std::string& name) {
  return std::string(FF_TOOLS_DATA_DIR) + "/" + name;
}

ff::format::ParsedFile parsed(const std::string& name) {
  return ff::format::parse(ff::read_file(data(name)));
}

struct Result {
  int status = -1;
  std::string out, err;
};

std::string slurp(const fs::path& p) {
  std::ifstream f(p);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

/// Runs `argv` with stdout and stderr captured in files.
Result run(const std::vector<std::string>& argv) {
  static int n = 0;
  fs::path base = fs::temp_directory_path() /
                  ("ff-tools-test-" + std::to_string(::getpid()) + "-" + std::to_string(n++));
  std::string out = base.string() + ".out", err = base.string() + ".err";
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  std::vector<std::string> args = argv;
  std::vector<char*> cargs;
  for (std::string& a : args)
    cargs.push_back(a.data());
  cargs.push_back(nullptr);
  pid_t pid = 0;
  int rc = posix_spawnp(&pid, cargs[0], &actions, nullptr, cargs.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  Result r;
  if (rc != 0) {
    r.err = "cannot start " + argv[0];
    return r;
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = slurp(out);
  r.err = slurp(err);
  fs::remove(out);
  fs::remove(err);
  return r;
}

Result dump(std::vector<std::string> args) {
  args.insert(args.begin(), FF_RECORDER_DUMP);
  return run(args);
}

Result replay(std::vector<std::string> args) {
  args.insert(args.begin(), FF_RECORDER_REPLAY);
  return run(args);
}

}  // namespace

// ---------------------------------------------------------------------------------------
// ff_dump, called directly

TEST_CASE("tools: the text view has the summary, the op table and the kernels", "[tools]") {
  ff::format::ParsedFile f = parsed("compress.ffr");
  const auto& d = *f.recordings[0];
  std::string t = ff::dump::text(f, {});
  CHECK_THAT(t, Contains(current_format()) && Contains("backend 'llvm'"));
  CHECK_THAT(t, Contains("ops " + std::to_string(d.ops.size()) + " ("));
  CHECK_THAT(t, Contains("kernels " + std::to_string(d.kernels.size()) + ", slots " +
                         std::to_string(d.slots.size()) + ", guards " +
                         std::to_string(d.guards.size()) + ", inputs 2, outputs 4"));
  CHECK_THAT(t, Contains("bytes allocated") && Contains("peak memory"));
  CHECK_THAT(t, Contains("compress") && Contains("size(s0)") && Contains("s0 r"));
  CHECK_THAT(t, !Contains("param 0"));
  ff::dump::Options o;
  o.kernels = true;
  CHECK_THAT(ff::dump::text(f, o), Contains("param 0: in float32") && Contains("= load."));
}

TEST_CASE("tools: memory figures at the recorded sizes", "[tools]") {
  // chain: y = sqrt(x*2+1) (8 floats), exp(-y) (8 floats), both outputs: 64 bytes, all live.
  auto m = ff::dump::memory_figures(*parsed("chain.ffr").recordings[0]);
  CHECK(m.bytes_allocated == 64);
  CHECK(m.peak_bytes == 64);
  CHECK(m.exact);
}

TEST_CASE("tools: the JSON view follows its schema and its counts match the API's", "[tools]") {
  for (const char* name :
       {"chain.ffr", "gather.ffr", "scatter.ffr", "compress.ffr", "aliased.ffr", "capture.ffr"}) {
    INFO(name);
    ff::Recording r = ff::Recording::load(data(name));
    nlohmann::json j = nlohmann::json::parse(ff::dump::json(parsed(name), {}).dump());
    CHECK(j["schema"] == "freezeframe.recording-dump");
    CHECK(j["schema_version"] == 1);
    CHECK("format " + j["file"]["format_version"].get<std::string>() == current_format());
    const auto& rec = j["recordings"][0];
    CHECK(rec["counts"]["ops"] == r.n_ops());
    CHECK(rec["counts"]["kernels"] == r.n_kernels());
    CHECK(rec["counts"]["slots"] == r.n_slots());
    CHECK(rec["counts"]["guards"] == r.n_guards());
    CHECK(rec["counts"]["inputs"] == r.n_inputs());
    CHECK(rec["counts"]["outputs"] == r.n_outputs());
    CHECK(rec["ops"].size() == r.n_ops());
    CHECK(rec["capture"] == r.is_capture());
  }
}

TEST_CASE(
    "tools: the diff of a file with itself is empty, of two recordings it lists ops and "
    "kernels",
    "[tools]") {
  ff::dump::DiffResult same = ff::dump::diff(parsed("gather.ffr"), parsed("gather.ffr"), {});
  CHECK(same.same);
  CHECK(same.text.empty());
  ff::dump::DiffResult other = ff::dump::diff(parsed("gather.ffr"), parsed("chain.ffr"), {});
  CHECK_FALSE(other.same);
  CHECK_THAT(other.text, Contains("kernel") && Contains("op 1:") && Contains("inputs: 2 vs 1"));
  // Metadata (library version, backend) is ignored.
  ff::format::ParsedFile renamed = parsed("gather.ffr");
  renamed.library_version = "9.9.9";
  auto d = std::make_shared<ff::rec::RecordingData>(*renamed.recordings[0]);
  d->backend = "cuda";
  renamed.recordings[0] = ff::rec::ValidatedRecording::check(d);
  CHECK(ff::dump::diff(parsed("gather.ffr"), renamed, {}).same);
}

TEST_CASE("tools: the text view shows a saved frozen function's freeze section", "[tools]") {
  // frozen.ffr (tests/tools/make_recordings.cpp): f(Body& b, dt, scale, mode, half, w = dt),
  // called with scale 2 (a literal), then 3 (made opaque): two recordings.
  ff::format::ParsedFile f = parsed("frozen.ffr");
  std::string t = ff::dump::text(f, {});
  CHECK_THAT(t, !Contains("skipped"));
  CHECK_THAT(t, Contains("frozen function 'dumped'") && Contains("version 'v7'") &&
                    Contains("freeze layout 4") && Contains("2 recording(s) held"));
  // Structs by the names and leaves by the paths the saving function knew (freeze layout 2).
  std::string st = "struct Body";
  CHECK_THAT(t, Contains("held recording 0: 6 argument(s), 6 array leaf(s)"));
  CHECK_THAT(t, Contains("args[0]: " + st + " {array float32, array float32, value int32 7}"));
  CHECK_THAT(t, Contains("args[3]: value int32 3"));
  CHECK_THAT(t, Contains("leaf 0 args[0].pos float32: input (size group 0), recorded size 100"));
  CHECK_THAT(t, Contains("leaf 1 args[0].vel float32"));
  CHECK_THAT(t, Contains("leaf 2 args[1] float32: input (size group 1)"));
  CHECK_THAT(t, Contains("leaf 3 args[2] float32: literal 2, size 1"));
  CHECK_THAT(t, Contains("leaf 4 args[4] float32: literal 0.5, size of group 0"));
  CHECK_THAT(t, Contains("leaf 5 args[5] float32: alias of leaf 2"));
  CHECK_THAT(t, Contains("leaf 3 args[2] float32: input (size group 1)"));  // the second one
  CHECK_THAT(t, Contains("result: array float32"));
  CHECK_THAT(t, Contains("written back: args[0]: " + st +
                         " {array float32, array float32, value int32 10}"));
  CHECK_THAT(t, Contains("verify within tolerance"));
  CHECK_THAT(t, Contains("opaque for argument shape ") && Contains(": leaves 3"));
  // --recording K shows K's held record only.
  ff::dump::Options one;
  one.recording = 1;
  std::string t1 = ff::dump::text(f, one);
  CHECK_THAT(t1, Contains("held recording 1") && !Contains("held recording 0"));
}

TEST_CASE("tools: both views show what a frozen call does with gradients", "[tools]") {
  // frozen_grads.ffr (tests/tools/make_recordings.cpp): an Adam step on w, grad-enabled
  // outside the call: w's gradient comes out of the recording, the step leaves a new leaf.
  ff::format::ParsedFile f = parsed("frozen_grads.ffr");
  std::string t = ff::dump::text(f, {});
  CHECK_THAT(t, Contains("frozen function 'fit_step'") && Contains("freeze layout 4"));
  CHECK_THAT(t, Contains("grad-enabled leaf 0 args[0]: brings no gradient yet; after the call "
                         "its gradient is a new gradient (an extra output)"));
  CHECK_THAT(t, Contains("output array 0 comes out detached"));                 // the loss
  CHECK_THAT(t, Contains("output array 1 comes out a new grad-enabled leaf"));  // w
  nlohmann::json j = nlohmann::json::parse(ff::dump::json(f, {}).dump());
  const auto& h = j["freeze"]["held"][0];
  REQUIRE(h["grads"].size() == 1);
  CHECK(h["grads"][0]["leaf"] == 0);
  CHECK(h["grads"][0]["state"] == 0);
  CHECK(h["grads"][0]["end"] == 1);
  CHECK(h["grad_outputs"][1]["kind"] == 1);
  CHECK(h["suspended"] == false);
  // A function saved without gradients has none to show.
  CHECK_THAT(ff::dump::text(parsed("frozen.ffr"), {}), !Contains("grad-enabled"));
}

TEST_CASE("tools: both views show a frozen call's backward and its labelled recordings",
          "[tools]") {
  // frozen_backward.ffr (tests/tools/make_recordings.cpp): through_step's recording, then its
  // backward's two (one per output), labelled with the backward's name.
  ff::format::ParsedFile f = parsed("frozen_backward.ffr");
  REQUIRE(f.recordings.size() == 3);
  CHECK(f.recordings[0]->label.empty());
  CHECK(f.recordings[1]->label == "through_step (backward)");
  CHECK(f.recordings[2]->label == "through_step (backward)");
  std::string t = ff::dump::text(f, {});
  CHECK_THAT(t, Contains("recording 1: backend 'llvm', label 'through_step (backward)'"));
  CHECK_THAT(t, Contains("output array 0 comes out a node whose gradient flows back to the "
                         "grad-enabled leaves through the call's frozen backward"));
  CHECK_THAT(t, Contains("its backward, frozen function 'through_step (backward)': 2 "
                         "recording(s) held"));
  CHECK_THAT(t, Contains("      held recording 1: ") && Contains("      held recording 2: "));
  // --recording 2 shows the record that holds it, and in its backward only recording 2.
  ff::dump::Options two;
  two.recording = 2;
  std::string t2 = ff::dump::text(f, two);
  CHECK_THAT(t2, Contains("held recording 0") && Contains("held recording 2") &&
                     !Contains("held recording 1"));
  nlohmann::json j = nlohmann::json::parse(ff::dump::json(f, {}).dump());
  CHECK(j["recordings"][0]["label"].is_null());
  CHECK(j["recordings"][1]["label"] == "through_step (backward)");
  const auto& h = j["freeze"]["held"][0];
  CHECK(h["grad_outputs"][0]["kind"] == 0xFFFFFFFFu);
  REQUIRE(h["backward"].is_object());
  CHECK(h["backward"]["name"] == "through_step (backward)");
  REQUIRE(h["backward"]["held"].size() == 2);
  CHECK(h["backward"]["held"][0]["recording"] == 1);
  CHECK(h["backward"]["held"][0]["backward"].is_null());
}

TEST_CASE("tools: the JSON view shows a saved frozen function's freeze section", "[tools]") {
  nlohmann::json j = nlohmann::json::parse(ff::dump::json(parsed("frozen.ffr"), {}).dump());
  CHECK(j["file"]["sections"].back()["name"] == "freeze");
  const auto& fz = j["freeze"];
  REQUIRE(fz.is_object());
  CHECK(fz["name"] == "dumped");
  CHECK(fz["version"] == "v7");
  CHECK(fz["layout"] == 4);
  REQUIRE(fz["held"].size() == 2);
  const auto& h = fz["held"][0];
  CHECK(h["recording"] == 0);
  CHECK(h["arguments"].size() == 6);
  CHECK(h["arguments"][0]["shape"]["node"] == "struct");
  CHECK(h["arguments"][0]["shape"]["name"] == "Body");
  CHECK(h["leaves"][1]["path"] == "args[0].vel");
  CHECK(h["arguments"][0]["shape"]["fields"][2]["value"] == "7");
  CHECK(h["arguments"][3]["text"] == "value int32 3");
  CHECK(h["leaves"][0]["kind"] == "input");
  CHECK(h["leaves"][0]["size_group"] == 0);
  CHECK(h["leaves"][3]["kind"] == "literal");
  CHECK(h["leaves"][3]["value"] == "2");
  CHECK(h["leaves"][3]["size_class"] == "one");
  CHECK(h["leaves"][4]["size_class"] == "group");
  CHECK(h["leaves"][4]["size_group"] == 0);
  CHECK(h["leaves"][5]["kind"] == "alias");
  CHECK(h["leaves"][5]["of"] == 2);
  CHECK(h["result"]["text"] == "array float32");
  REQUIRE(h["written"].size() == 1);
  CHECK(h["written"][0]["argument"] == 0);
  CHECK(h["tolerant"] == true);
  REQUIRE(fz["opaque"].size() == 1);
  CHECK(fz["opaque"][0]["leaves"] == nlohmann::json::array({3}));
  // A plain recording file has none.
  CHECK(nlohmann::json::parse(ff::dump::json(parsed("chain.ffr"), {}).dump())["freeze"].is_null());
}

TEST_CASE("tools: a reused buffer shows in the text, JSON and DOT views", "[tools]") {
  ff::format::ParsedFile f = parsed("reuse.ffr");
  const auto& d = *f.recordings[0];
  size_t alloc = d.ops.size();
  for (size_t i = 0; i < d.ops.size() && alloc == d.ops.size(); ++i)
    if (d.ops[i].code == ff::rec::OpCode::Alloc && d.ops[i].src != ff::rec::kNone)
      alloc = i;
  REQUIRE(alloc < d.ops.size());  // the optimiser handed a buffer over
  uint32_t donor = d.ops[alloc].src, taker = d.ops[alloc].dst;

  // Text: the slots cell "sN new, sM end (its buffer)" stays inside its column.
  std::string t = ff::dump::text(f, {});
  std::istringstream lines(t);
  std::string line;
  size_t size_col = std::string::npos, checked = 0;
  while (std::getline(lines, line)) {
    if (line.find("    #") == 0)
      size_col = line.find("size");
    size_t at = line.find("(its buffer)");
    if (at == std::string::npos)
      continue;
    REQUIRE(size_col != std::string::npos);
    INFO(line);
    CHECK(at + std::string("(its buffer)").size() + 2 <= size_col);
    CHECK(line.substr(size_col, 8) == "size(s0)");
    ++checked;
  }
  CHECK(checked > 0);

  nlohmann::json j = nlohmann::json::parse(ff::dump::json(f, {}).dump());
  const auto& r = j["recordings"][0];
  CHECK(r["ops"][alloc]["reuses"] == donor);
  bool taken_over = false;
  for (const auto& a : r["ops"][alloc]["slots"])
    taken_over |= a["slot"] == donor && a["access"] == "taken_over";
  CHECK(taken_over);
  CHECK(r["slots"][donor]["buffer_taken_over_by"] == taker);
  CHECK(r["slots"][taker]["reuses"] == donor);
  CHECK(r["ops"][0]["reuses"].is_null());  // a fresh allocation

  std::string g = ff::dump::dot(f, {});
  std::string edge =
      "r0_s" + std::to_string(donor) + " -> r0_op" + std::to_string(alloc) +
      " [style=dashed, arrowhead=tee, color=darkorange, label=\"buffer taken over\"]";
  CHECK_THAT(g, Contains(edge));
  CHECK_THAT(g, Contains("(reuses s" + std::to_string(donor) + "'s buffer)"));
}

// ---------------------------------------------------------------------------------------
// The binaries

TEST_CASE("tools: recorder-dump prints a summary, kernels, JSON and a graph dot accepts",
          "[tools]") {
  Result r = dump({data("compress.ffr")});
  CHECK(r.status == 0);
  CHECK(r.err.empty());
  CHECK_THAT(r.out, Contains("recording 0: backend 'llvm'") && Contains("guards:"));
  Result k = dump({data("compress.ffr"), "--kernels"});
  CHECK(k.status == 0);
  CHECK_THAT(k.out, Contains("param 0"));
  // The math opcodes by name (the "math" sample uses every one after the first 41).
  Result mk = dump({data("math.ffr"), "--kernels"});
  CHECK(mk.status == 0);
  for (const char* op : {"= tan.", "= asinh.", "= erf.", "= round.", "= popcnt.", "= ctz.",
                         "= atan2.", "= pow.", "= copysign."})
    CHECK_THAT(mk.out, Contains(op));
  // The scatter kinds by name, scatter_inc's value used by the scatter after it.
  Result sk = dump({data("scatter_kinds.ffr"), "--kernels"});
  CHECK(sk.status == 0);
  for (const char* op : {"= scatter_min.", "= scatter_max.", "= scatter_mul.", "= scatter_or.",
                         "= scatter_and.", "= scatter_inc.uint32"})
    CHECK_THAT(sk.out, Contains(op));
  // Regions by name, their contents indented under them.
  Result cf = dump({data("control_flow.ffr"), "--kernels"});
  CHECK(cf.status == 0);
  for (const char* op :
       {"= loop.bool", "= loop_var.float32", "= loop_cond.bool", "= if.bool", "= else.bool",
        "= call.bool", "= case.bool", "= yield.", "= end.bool", "= result."})
    CHECK_THAT(cf.out, Contains(op));
  {
    // The line after the loop marker (its first carried value) is indented one step more.
    size_t at = cf.out.find("= loop.bool");
    REQUIRE(at != std::string::npos);
    size_t line = cf.out.rfind('\n', at) + 1, next = cf.out.find('\n', at) + 1;
    size_t indent = cf.out.find('%', line) - line, next_indent = cf.out.find('%', next) - next;
    CHECK(next_indent == indent + 2);
    // The loop's name (format 1.8) ends its marker's line and the kernel's summary line; the
    // branch and the call have none.
    CHECK(cf.out.substr(at, cf.out.find('\n', at) - at).ends_with("  'halve'"));
    CHECK_THAT(cf.out, Contains("instructions, regions 'halve'\n"));
    CHECK(cf.out.find("'halve'", cf.out.find('\n', at)) == std::string::npos);
    CHECK(cf.out.compare(cf.out.find('=', next), 10, "= loop_var") == 0);
  }
  {
    // JSON: one name per region of the kernel (the loop's; the branch and the call are in
    // the next kernel, which has no names).
    Result cj = dump({data("control_flow.ffr"), "--json"});
    REQUIRE(cj.status == 0);
    std::vector<std::vector<std::string>> names;
    nlohmann::json cjj = nlohmann::json::parse(cj.out);
    for (const auto& jk : cjj["recordings"][0]["kernels"])
      if (jk.contains("region_names"))
        names.push_back(jk["region_names"].get<std::vector<std::string>>());
    CHECK(names == std::vector<std::vector<std::string>>{{"halve"}});
  }
  Result j = dump({data("multi.ffr"), "--json"});
  REQUIRE(j.status == 0);
  nlohmann::json parsed_json = nlohmann::json::parse(j.out);
  CHECK(parsed_json["recordings"].size() == 8);
  Result one = dump({data("multi.ffr"), "--json", "--recording", "3"});
  REQUIRE(one.status == 0);
  CHECK(nlohmann::json::parse(one.out)["recordings"][0]["index"] == 3);

  Result g = dump({data("multi.ffr"), "--dot"});
  REQUIRE(g.status == 0);
  CHECK_THAT(g.out, Contains("digraph") && Contains("palegreen") && Contains("lightskyblue"));
  fs::path dot_file =
      fs::temp_directory_path() / ("ff-tools-" + std::to_string(::getpid()) + ".dot");
  { std::ofstream(dot_file) << g.out; }
  Result svg = run({"dot", "-Tsvg", dot_file.string()});
  fs::remove(dot_file);
  INFO("dot: " << svg.err);
  REQUIRE(svg.status == 0);  // Graphviz (scripts/install-deps.sh) accepts the graph
  CHECK_THAT(svg.out, Contains("<svg"));
}

TEST_CASE("tools: recorder-dump --diff exits 0 for equal, 1 for different, 2 for trouble",
          "[tools]") {
  Result same = dump({data("gather.ffr"), "--diff", data("gather.ffr")});
  CHECK(same.status == 0);
  CHECK(same.out.empty());
  Result differ = dump({data("gather.ffr"), "--diff", data("chain.ffr")});
  CHECK(differ.status == 1);
  CHECK_THAT(differ.out, Contains("---") && Contains("+++") && Contains("op "));
  Result missing = dump({data("gather.ffr"), "--diff", data("missing.ffr")});
  CHECK(missing.status == 2);
  CHECK_THAT(missing.err, Contains("missing.ffr") && Contains("No such file"));
}

TEST_CASE("tools: recorder-dump shows a capture and each recording of a multi-recording file",
          "[tools]") {
  Result c = dump({data("capture.ffr")});
  CHECK(c.status == 0);
  CHECK_THAT(c.out, Contains("whole-session capture"));
  Result m = dump({data("multi.ffr")});
  CHECK(m.status == 0);
  CHECK_THAT(m.out, Contains("8 recording(s)") && Contains("recording 7:"));
  Result bad = dump({data("multi.ffr"), "--recording", "8"});
  CHECK(bad.status == 2);
  CHECK_THAT(bad.err, Contains("holds 8 recording(s)"));
}

TEST_CASE("tools: recorder-dump refuses a negative or non-numeric --recording",
          "[tools][negative]") {
  for (const char* k : {"-1", "abc", "18446744073709551616"}) {
    INFO(k);
    Result r = dump({data("multi.ffr"), "--recording", k});
    CHECK(r.status == 2);
    CHECK_THAT(r.err, Contains(std::string("--recording ") + k + ": not a recording index") &&
                          Contains("holds 8 recording(s)"));
    CHECK_THAT(r.err, !Contains("18446744073709551615"));
    CHECK(r.out.empty());
  }
  Result replay_bad = replay({data("gather.ffr"), "--recording", "-1"});
  CHECK(replay_bad.status == 2);
  CHECK_THAT(replay_bad.err,
             Contains("--recording -1: not a recording index") && Contains("holds 1 recording(s)"));
}

TEST_CASE("tools: recorder-dump shows a saved frozen function and counts no skipped section",
          "[tools]") {
  Result r = dump({data("frozen.ffr")});
  CHECK(r.status == 0);
  CHECK(r.err.empty());
  CHECK_THAT(r.out, Contains("frozen function 'dumped'") && Contains("held recording 1") &&
                        Contains("recording 1: backend 'llvm'"));
  CHECK_THAT(r.out, !Contains("skipped"));
  Result j = dump({data("frozen.ffr"), "--json"});
  REQUIRE(j.status == 0);
  CHECK(nlohmann::json::parse(j.out)["freeze"]["name"] == "dumped");
  // A damaged freeze section is a damaged file (exit 1), named as such.
  ff::format::ParsedFile f = parsed("frozen.ffr");
  std::vector<std::byte> freeze = f.skipped.at(0).bytes;
  freeze.resize(freeze.size() - 1);  // cut inside the last opaque set
  std::vector<const ff::rec::RecordingData*> recs;
  for (const auto& d : f.recordings)
    recs.push_back(d.get());
  ff::format::WriteOptions o;
  o.extra.push_back({ff::format::kSectionFreeze, ff::format::kSectionOptional,
                     ff::format::kFileLevel, 1, freeze});
  fs::path cut =
      fs::temp_directory_path() / ("ff-tools-freeze-" + std::to_string(::getpid()) + ".ffr");
  ff::write_file_atomic(cut.string(), ff::format::write(recs, o), false);
  Result damaged = dump({cut.string()});
  fs::remove(cut);
  CHECK(damaged.status == 1);
  CHECK_THAT(damaged.err, Contains("recording file: freeze data, byte"));
}

TEST_CASE("tools: recorder-dump: usage, --help, --version, a missing and a damaged file",
          "[tools][negative]") {
  Result help = dump({"--help"});
  CHECK(help.status == 0);
  CHECK_THAT(help.out, Contains("Usage") && Contains("--diff"));
  Result version = dump({"--version"});
  CHECK(version.status == 0);
  CHECK_THAT(version.out, Contains("freezeframe") && Contains(current_format()));
  Result none = dump({});
  CHECK(none.status == 2);
  CHECK_THAT(none.err, Contains("FILE is required") && Contains("Usage"));
  CHECK(none.out.empty());
  Result bogus = dump({data("gather.ffr"), "--bogus"});
  CHECK(bogus.status == 2);
  CHECK_THAT(bogus.err, Contains("--bogus"));
  Result both = dump({data("gather.ffr"), "--json", "--dot"});
  CHECK(both.status == 2);
  Result missing = dump({data("missing.ffr")});
  CHECK(missing.status == 1);
  CHECK_THAT(missing.err, Contains("cannot open") && Contains("missing.ffr"));
  CHECK(missing.out.empty());
  fs::path cut =
      fs::temp_directory_path() / ("ff-tools-cut-" + std::to_string(::getpid()) + ".ffr");
  auto bytes = ff::read_file(data("gather.ffr"));
  bytes.resize(bytes.size() / 2);
  ff::write_file_atomic(cut.string(), bytes, false);
  Result damaged = dump({cut.string()});
  fs::remove(cut);
  CHECK(damaged.status == 1);
  CHECK_THAT(damaged.err, Contains("recording file:") && Contains("truncated"));
}

TEST_CASE("tools: recorder-dump links no backend", "[tools]") {
  Result r = run({"readelf", "-d", FF_RECORDER_DUMP});
  REQUIRE(r.status == 0);
  CHECK_THAT(r.out, Contains("NEEDED"));
  CHECK_THAT(r.out, !Contains("libLLVM") && !Contains("libfreezeframe"));
}

TEST_CASE("tools: recorder-replay replays, times ops and writes a trace with one event per op",
          "[tools]") {
  fs::path trace = fs::temp_directory_path() / ("ff-trace-" + std::to_string(::getpid()) + ".json");
  Result r = replay({data("compress.ffr"), "--repeat", "3", "--trace", trace.string(),
                     "--sync-each", "--size", "input0=5000"});
  INFO(r.out << r.err);
  REQUIRE(r.status == 0);
  CHECK_THAT(r.out, Contains("input 0: float32 x 5000") && Contains("replays: 3") &&
                        Contains("launch") && Contains("compress"));
  nlohmann::json t = nlohmann::json::parse(slurp(trace));
  fs::remove(trace);
  size_t n_ops = ff::Recording::load(data("compress.ffr")).n_ops(), spans = 0;
  for (const auto& e : t["traceEvents"]) {
    if (e["ph"] != "X")
      continue;
    ++spans;
    CHECK(e["dur"].get<double>() >= 0);
    CHECK(e["args"].contains("slots"));
    CHECK(e["args"].contains("size"));
  }
  CHECK(spans == 3 * n_ops);
}

TEST_CASE("tools: recorder-replay replays a recording with a loop, a branch and a call afresh",
          "[tools]") {
  // A fresh process loads the file and replays it at another size (and so other trip counts).
  for (const char* size : {"input0=0", "input0=1", "input0=1001"}) {
    Result r = replay({data("control_flow.ffr"), "--size", size, "--size",
                       std::string("input1=") + (std::string(size).substr(7))});
    INFO(size << ": " << r.out << r.err);
    CHECK(r.status == 0);
    CHECK_THAT(r.out, Contains("replays: 1"));
  }
}

TEST_CASE("tools: recorder-replay: sizes tied by guards follow, a size a guard rejects is named",
          "[tools]") {
  // aliased: one input passed twice; its sizes follow each other.
  Result tied = replay({data("aliased.ffr"), "--size", "input1=50"});
  INFO(tied.out << tied.err);
  CHECK(tied.status == 0);
  CHECK_THAT(tied.out, Contains("input 0: float32 x 50"));
  // compress keeps more than 2 hits only if there are more than 2 elements.
  Result rejected = replay({data("compress.ffr"), "--size", "input0=2"});
  CHECK(rejected.status == 1);
  CHECK_THAT(rejected.err, Contains("guard 0") && Contains("record this path anew"));
}

TEST_CASE(
    "tools: recorder-dump shows each collective with its kind, peers, ranks and size, and rank "
    "expressions",
    "[tools]") {
  Result r = dump({data("collective.ffr")});
  INFO(r.out << r.err);
  CHECK(r.status == 0);
  CHECK_THAT(r.out, Contains("all_reduce float32 add -> s1 (rank 0 of 2)"));
  CHECK_THAT(r.out, Contains("all_gather float32 -> s2"));
  CHECK_THAT(r.out, Contains("broadcast float32 root 1 -> s3"));
  CHECK_THAT(r.out, Contains("sendrecv float32 to 1 from none -> s4"));
  CHECK_THAT(r.out, Contains("sendrecv float32 to rank+1 from rank-1 -> s5"));
  CHECK_THAT(r.out, Contains("(rank + ranks)"));
  CHECK_THAT(r.out, Contains("size(s0)"));
}

TEST_CASE("tools: recorder-replay outside mpirun refuses collectives, saying how to run them",
          "[tools][negative]") {
  Result r = replay({data("collective.ffr")});
  INFO(r.out << r.err);
  CHECK(r.status == 1);
  CHECK_THAT(r.err, Contains("collectives over 2 ranks") &&
                        Contains("ff::dist is not initialised") && Contains("mpirun -np 2"));
}

TEST_CASE("tools: recorder-replay refuses a capture, bad usage and a missing file",
          "[tools][negative]") {
  Result c = replay({data("capture.ffr")});
  CHECK(c.status == 1);
  CHECK_THAT(c.err, Contains("whole-session capture") && Contains("not replayed"));
  Result size = replay({data("gather.ffr"), "--size", "width=3"});
  CHECK(size.status == 2);
  CHECK_THAT(size.err, Contains("inputK=N"));
  Result range = replay({data("gather.ffr"), "--size", "input7=3"});
  CHECK(range.status == 2);
  // A negative or non-numeric size is refused as usage, before the file is read.
  for (const char* bad : {"input0=-1", "input0=abc", "input0=", "input0=1e3"}) {
    INFO(bad);
    Result neg = replay({data("gather.ffr"), "--size", bad});
    CHECK(neg.status == 2);
    CHECK_THAT(neg.err, Contains(std::string("--size ") + bad + ":") &&
                            Contains("not a whole number of elements"));
    CHECK_THAT(neg.out, !Contains("replaying"));
  }
  Result neg_missing = replay({data("missing.ffr"), "--size", "input0=-1"});
  CHECK(neg_missing.status == 2);
  Result none = replay({});
  CHECK(none.status == 2);
  CHECK_THAT(none.err, Contains("Usage"));
  Result missing = replay({data("missing.ffr")});
  CHECK(missing.status == 1);
  CHECK_THAT(missing.err, Contains("cannot open"));
  Result help = replay({"--help"});
  CHECK(help.status == 0);
  CHECK_THAT(help.out, Contains("--trace") && Contains("--sync-each"));
}
