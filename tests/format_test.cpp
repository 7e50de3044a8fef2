// Recording files (recorder/format*, Recording::save/load): round trips, versions, damage.
// The catch-all at the end truncates a file at every offset and flips every byte in turn
// (checksums bypassed, so the flips reach the parser and the validator): each load must
// succeed with a recording that plans and replays cleanly, or raise ff::FormatError.
#include "recorder/format.h"

#include <freezeframe/freezeframe.h>
#include <unistd.h>

#include <array>
#include <catch2/catch.hpp>
#include <cstring>
#include <filesystem>
#include <map>
#include <string>

#include "common/file_io.h"
#include "frontend/recording_state.h"
#include "recorder/format_reader.h"
#include "recorder/format_writer.h"
#include "recorder/size_eval.h"
#include "support/collective_recording.h"
#include "support/record_corpus.h"
#include "support/sample_recordings.h"
#include "support/temp_file.h"

namespace {

/// "format 1.1": this reader's format version as messages name it.
std::string this_format() {
  return "format " + std::to_string(ff::format::kVersionMajor) + "." +
         std::to_string(ff::format::kVersionMinor);
}

using Catch::Matchers::Contains;
using Bytes = std::vector<std::byte>;
namespace fs = std::filesystem;

using fft::TempDir;

const ff::rec::RecordingData& data_of(const ff::Recording& r) {
  return *ff::detail::recording_state(r)->data;
}

ff::Recording from_data(ff::rec::ValidatedRecording d) {
  return ff::Recording(std::make_shared<ff::detail::RecordingState>(std::move(d)));
}

/// The entry of the (last) section of type `t` in `f`, or nullptr.
const ff::format::SectionEntry* section_of(const ff::format::ParsedFile& f,
                                           ff::format::SectionType t) {
  const ff::format::SectionEntry* found = nullptr;
  for (const auto& sec : f.sections)
    if (sec.entry.type == static_cast<uint32_t>(t))
      found = &sec.entry;
  return found;
}

Bytes bytes_of(const ff::Recording& r) {
  return ff::format::write(data_of(r));
}

ffr::Inputs sample_inputs(const ff::Recording& r, size_t n) {
  ffr::Inputs in;
  const auto& d = data_of(r);
  for (size_t k = 0; k < d.inputs.size(); ++k) {
    bool alias = false;
    for (size_t j = 0; j < k; ++j)
      if (d.inputs[j] == d.inputs[k]) {
        in.push_back(in[j]);
        alias = true;
        break;
      }
    if (!alias)
      in.push_back(ffr::make_array(d.slots[d.inputs[k]].type, n, 77 + k));
  }
  return in;
}

/// Whether a replay with inputs of n elements allocates at most 2^24 elements per buffer (a
/// damaged constant can ask for terabytes: a valid request, but not one for a unit test).
bool modest(const ff::rec::RecordingData& d, size_t n) {
  std::vector<uint64_t> sizes(d.slots.size(), 0);
  for (size_t s = 0; s < d.slots.size(); ++s)
    if (d.slots[s].origin == ff::rec::SlotOrigin::Input)
      sizes[s] = n;
  for (const ff::rec::Op& op : d.ops) {
    if (op.code != ff::rec::OpCode::Alloc)
      continue;
    try {
      sizes[op.dst] = ff::rec::evaluate(d, op.size_expr, sizes, {}, "alloc");
    } catch (const ff::Error&) {
      return true;  // the replay refuses it before allocating
    }
    if (sizes[op.dst] > (uint64_t{1} << 24))
      return false;
  }
  return true;
}

void patch_u16(Bytes& b, size_t at, uint16_t v) {
  std::memcpy(b.data() + at, &v, 2);
}

}  // namespace

TEST_CASE("format: every sample recording round-trips through a file and replays the same",
          "[format]") {
  ffr::fresh();
  TempDir dir;
  for (auto& [name, r] : ff_samples::sample_recordings()) {
    INFO(name);
    r.save(dir.file(name + ".ffr"));
    ff::Recording loaded = ff::Recording::load(dir.file(name + ".ffr"));
    CHECK(loaded.to_string() == r.to_string());
    CHECK(loaded.n_ops() == r.n_ops());
    CHECK(loaded.n_kernels() == r.n_kernels());
    // Saved again, it gives the same bytes: the writer is deterministic.
    CHECK(bytes_of(loaded) == bytes_of(r));
    for (size_t n : {8, 1000}) {
      ffr::Inputs in = sample_inputs(r, n);
      auto want = ffr::snapshot(r.replay(in));
      ff::Stats s0 = ff::stats();
      auto got = ffr::snapshot(loaded.replay(in));
      ff::Stats s1 = ff::stats();
      ffr::require_same(got, want, "loaded vs original at size " + std::to_string(n));
      CHECK(s1.traced_kernels == s0.traced_kernels);
    }
  }
}

TEST_CASE("format: a file of several recordings loads each by index", "[format]") {
  ffr::fresh();
  TempDir dir;
  auto samples = ff_samples::sample_recordings();
  std::vector<const ff::rec::RecordingData*> all;
  for (auto& [name, r] : samples)
    all.push_back(&data_of(r));
  ff::write_file_atomic(dir.file("multi.ffr"), ff::format::write(all), false);
  for (size_t k = 0; k < samples.size(); ++k)
    CHECK(ff::Recording::load(dir.file("multi.ffr"), k).to_string() ==
          samples[k].second.to_string());
  REQUIRE_THROWS_WITH(ff::Recording::load(dir.file("multi.ffr"), samples.size()),
                      Contains("holds " + std::to_string(samples.size()) + " recording(s)"));
  ff::format::ParsedFile f = ff::format::parse(ff::format::write(all));
  CHECK(f.recordings.size() == samples.size());
}

TEST_CASE("format: a missing file is an ff::Error naming the path, not a FormatError",
          "[format][negative]") {
  try {
    ff::Recording::load("/nonexistent/dir/x.ffr");
    FAIL("loaded a missing file");
  } catch (const ff::FormatError&) {
    FAIL("a missing file is not a damaged one");
  } catch (const ff::Error& e) {
    CHECK_THAT(e.what(), Contains("/nonexistent/dir/x.ffr") && Contains("No such file"));
  }
}

TEST_CASE("format: a newer major version is refused with both versions in the message",
          "[format][negative]") {
  ffr::fresh();
  Bytes b = bytes_of(ff_samples::sample_recordings()[0].second);
  patch_u16(b, 4, 2);
  patch_u16(b, 6, 3);
  REQUIRE_THROWS_AS(ff::format::parse(b), ff::FormatError);
  REQUIRE_THROWS_WITH(ff::format::parse(b), Contains("file format version 2.3") &&
                                                Contains(this_format()) && Contains("newer"));
  patch_u16(b, 4, 0);
  REQUIRE_THROWS_WITH(ff::format::parse(b), Contains("0.3") && Contains("older"));
}

TEST_CASE("format: a newer minor version with unknown optional sections loads", "[format]") {
  ffr::fresh();
  ff::Recording r = ff_samples::sample_recordings()[1].second;
  ff::format::WriteOptions o;
  o.version_minor = 7;
  ff::format::ExtraSection later;  // e.g. a freeze-data section a later release adds
  later.type = 1000;
  later.flags = ff::format::kSectionOptional;
  later.bytes = Bytes(24, std::byte{0x5a});
  o.extra.push_back(later);
  ff::format::ExtraSection per_recording = later;
  per_recording.type = 1001;
  per_recording.recording = 0;
  per_recording.item_bytes = 8;
  o.extra.push_back(per_recording);
  ff::format::ParsedFile f = ff::format::parse(ff::format::write(data_of(r), o));
  CHECK(f.version_minor == 7);
  REQUIRE(f.skipped.size() == 2);
  CHECK(f.skipped[0].type == 1000);
  CHECK(f.skipped[0].bytes == later.bytes);
  CHECK(from_data(f.recordings[0]).to_string() == r.to_string());

  SECTION("an unknown required section is refused, naming both versions") {
    o.extra[0].flags = 0;
    REQUIRE_THROWS_WITH(ff::format::parse(ff::format::write(data_of(r), o)),
                        Contains("type 1000") && Contains("not optional") &&
                            Contains(this_format()) && Contains("format 1.7"));
  }
}

TEST_CASE("format: items of a newer minor version (longer, with appended fields) load",
          "[format]") {
  // Rewrites every table so each item carries 8 extra bytes, as a later minor version that
  // appended a field would write them.
  ffr::fresh();
  ff::Recording r = ff_samples::sample_recordings()[3].second;
  Bytes b = bytes_of(r);
  ff::format::FileHeader h;
  std::memcpy(&h, b.data(), sizeof h);
  Bytes out(b.begin(),
            b.begin() + h.header_bytes + h.n_sections * sizeof(ff::format::SectionEntry));
  std::vector<ff::format::SectionEntry> entries(h.n_sections);
  std::memcpy(entries.data(), b.data() + h.header_bytes, entries.size() * sizeof entries[0]);
  for (auto& e : entries) {
    Bytes section(b.begin() + e.offset, b.begin() + e.offset + e.n_bytes);
    e.offset = out.size();
    if (e.item_bytes > 1) {
      Bytes wide;
      for (uint64_t i = 0; i < e.n_items; ++i) {
        wide.insert(wide.end(), section.begin() + i * e.item_bytes,
                    section.begin() + (i + 1) * e.item_bytes);
        wide.insert(wide.end(), 8, std::byte{0x77});
      }
      e.item_bytes += 8;
      section = wide;
    }
    e.n_bytes = section.size();
    e.checksum = ff::hash64(section);
    out.insert(out.end(), section.begin(), section.end());
  }
  std::memcpy(out.data() + h.header_bytes, entries.data(), entries.size() * sizeof entries[0]);
  h.file_bytes = out.size();
  h.version_minor = 1;
  h.header_checksum = 0;
  std::memcpy(out.data(), &h, sizeof h);
  ff::format::ParseOptions no_sums;
  no_sums.verify_checksums = false;
  ff::format::ParsedFile f = ff::format::parse(out, no_sums);
  CHECK(from_data(f.recordings[0]).to_string() == r.to_string());
}

TEST_CASE("format: region names (1.8) round-trip and must fit their kernels",
          "[format][negative]") {
  ffr::fresh();
  ff::Recording r;
  for (auto& [name, sample] : ff_samples::sample_recordings())
    if (name == "control_flow")  // a named loop, an unnamed branch and call
      r = sample;
  const ff::rec::RecordingData& d = data_of(r);
  size_t k = 0;
  while (k < d.region_names.size() && d.region_names[k].empty())
    ++k;
  REQUIRE(k < d.region_names.size());
  CHECK(d.region_names[k] == ff::RegionNames{"halve"});
  ff::format::ParsedFile f = ff::format::parse(bytes_of(r));
  CHECK(f.recordings[0]->region_names == d.region_names);

  // In memory: a name too many, names for a kernel that does not exist.
  ff::rec::RecordingData extra = d;
  extra.region_names[k].push_back("more");
  REQUIRE_THROWS_WITH(
      ff::rec::ValidatedRecording::check(extra),
      Contains("kernel " + std::to_string(k) + " has 1 region(s) but 2 region names"));
  ff::rec::RecordingData beyond = d;
  beyond.region_names.resize(d.kernels.size() + 1);
  REQUIRE_THROWS_WITH(ff::rec::ValidatedRecording::check(beyond),
                      Contains("region names for " + std::to_string(d.kernels.size() + 1)));

  // In a file: the item of the name, patched to a region or kernel that is not there.
  Bytes good = bytes_of(r);
  const ff::format::SectionEntry* names = section_of(f, ff::format::SectionType::RegionNames);
  REQUIRE(names != nullptr);
  CHECK(names->n_items == 1);
  CHECK((names->flags & ff::format::kSectionOptional) != 0);
  ff::format::ParseOptions no_sums;
  no_sums.verify_checksums = false;
  Bytes b = good;
  ff::format::RegionNameItem item;
  std::memcpy(&item, good.data() + names->offset, sizeof item);
  item.region = 7;
  std::memcpy(b.data() + names->offset, &item, sizeof item);
  REQUIRE_THROWS_WITH(ff::format::parse(b, no_sums),
                      Contains("'region_names'") && Contains("names region 7 of kernel"));
  item.region = 0;
  item.kernel = 99;
  std::memcpy(b.data() + names->offset, &item, sizeof item);
  REQUIRE_THROWS_WITH(ff::format::parse(b, no_sums), Contains("kernel 99 of"));
  item.kernel = static_cast<uint32_t>(k);
  item.name_bytes = 0;
  std::memcpy(b.data() + names->offset, &item, sizeof item);
  REQUIRE_THROWS_WITH(ff::format::parse(b, no_sums), Contains("an empty name"));
}

TEST_CASE("format: a recording's label (1.10) round-trips and is checked", "[format][negative]") {
  ffr::fresh();
  ff::Recording r = ff_samples::sample_recordings().front().second;
  ff::rec::RecordingData d = data_of(r);
  CHECK(d.label.empty());
  ff::format::WriteOptions labelled;
  labelled.labels = {"f (backward)"};
  Bytes good = ff::format::write(d, labelled);
  ff::format::ParsedFile f = ff::format::parse(good);
  CHECK(f.recordings[0]->label == "f (backward)");
  CHECK(ff::format::write(*f.recordings[0]) == good);  // its own label, written again
  d.label = "own";
  CHECK(ff::format::parse(ff::format::write(d)).recordings[0]->label == "own");
  CHECK(ff::format::parse(ff::format::write(d, labelled)).recordings[0]->label == "f (backward)");
  // Unlabelled, a file has no label section (a 1.9 reader sees the same sections as before).
  d.label.clear();
  CHECK(section_of(ff::format::parse(ff::format::write(d)), ff::format::SectionType::Label) ==
        nullptr);

  const ff::format::SectionEntry* label = section_of(f, ff::format::SectionType::Label);
  REQUIRE(label != nullptr);
  CHECK(label->n_items == 1);
  CHECK((label->flags & ff::format::kSectionOptional) != 0);
  ff::format::ParseOptions no_sums;
  no_sums.verify_checksums = false;
  Bytes b = good;
  ff::format::LabelItem item;
  std::memcpy(&item, good.data() + label->offset, sizeof item);
  item.name_bytes = 0;
  std::memcpy(b.data() + label->offset, &item, sizeof item);
  REQUIRE_THROWS_WITH(ff::format::parse(b, no_sums), Contains("'label'") && Contains("is empty"));
  item.name_bytes = 1u << 30;
  std::memcpy(b.data() + label->offset, &item, sizeof item);
  REQUIRE_THROWS_WITH(ff::format::parse(b, no_sums), Contains("'label'") && Contains("label"));
  // Two labels for one recording (each naming the backend's first letter in `strings`).
  ff::format::WriteOptions two;
  ff::format::LabelItem first{0, 1};
  std::vector<std::byte> items(2 * sizeof first);
  std::memcpy(items.data(), &first, sizeof first);
  std::memcpy(items.data() + sizeof first, &first, sizeof first);
  two.extra.push_back({static_cast<uint32_t>(ff::format::SectionType::Label),
                       ff::format::kSectionOptional, 0, sizeof first, items});
  REQUIRE_THROWS_WITH(ff::format::parse(ff::format::write(d, two)),
                      Contains("holds 2 labels, a recording has one at most"));
}

TEST_CASE("format: damage is named by section, item and byte offset", "[format][negative]") {
  ffr::fresh();
  ff::Recording r = ff_samples::sample_recordings()[3].second;  // compress: guards, kernels
  Bytes good = bytes_of(r);
  ff::format::ParsedFile f = ff::format::parse(good);
  auto section = [&](ff::format::SectionType t) {
    for (const auto& s : f.sections)
      if (s.entry.type == static_cast<uint32_t>(t))
        return s.entry;
    FAIL("no section");
    return ff::format::SectionEntry{};
  };
  ff::format::ParseOptions no_sums;
  no_sums.verify_checksums = false;

  SECTION("a checksum mismatch names the section") {
    Bytes b = good;
    b[section(ff::format::SectionType::Ops).offset + 5] ^= std::byte{1};
    REQUIRE_THROWS_WITH(ff::format::parse(b), Contains("'ops'") && Contains("checksum"));
  }
  SECTION("a header checksum mismatch") {
    Bytes b = good;
    b[60] ^= std::byte{1};  // in the backend name
    REQUIRE_THROWS_WITH(ff::format::parse(b), Contains("header checksum"));
  }
  SECTION("an unknown op code") {
    Bytes b = good;
    auto ops = section(ff::format::SectionType::Ops);
    b[ops.offset + 2 * ops.item_bytes] = std::byte{200};
    REQUIRE_THROWS_WITH(ff::format::parse(b, no_sums),
                        Contains("section 'ops' of recording 0, item 2 (byte " +
                                 std::to_string(ops.offset + 2 * ops.item_bytes) + ")") &&
                            Contains("op code 200"));
  }
  SECTION("a nonzero reserved field") {
    Bytes b = good;
    auto slots = section(ff::format::SectionType::Slots);
    b[slots.offset + slots.item_bytes + 2] = std::byte{1};
    REQUIRE_THROWS_WITH(ff::format::parse(b, no_sums),
                        Contains("'slots' of recording 0, item 1") && Contains("reserved"));
  }
  SECTION("a validation failure is located at the item it names") {
    auto d = std::make_shared<ff::rec::RecordingData>(data_of(r));
    size_t launch = 0;
    while (d->ops[launch].code != ff::rec::OpCode::Launch)
      ++launch;
    d->ops[launch].kernel = 42;
    Bytes b = ff::format::write(*d);
    auto ops = ff::format::parse(good).sections;  // same layout
    uint64_t ops_offset = 0;
    for (auto& s : ops)
      if (s.entry.type == static_cast<uint32_t>(ff::format::SectionType::Ops))
        ops_offset = s.entry.offset + launch * s.entry.item_bytes;
    REQUIRE_THROWS_AS(ff::format::parse(b), ff::FormatError);
    REQUIRE_THROWS_WITH(ff::format::parse(b),
                        Contains("section 'ops' of recording 0, item " + std::to_string(launch) +
                                 " (byte " + std::to_string(ops_offset) + ")") &&
                            Contains("names kernel 42"));
  }
  SECTION("a kernel whose stored hash differs from its IR") {
    Bytes b = good;
    b[section(ff::format::SectionType::Kernels).offset] ^= std::byte{1};
    REQUIRE_THROWS_WITH(ff::format::parse(b, no_sums),
                        Contains("'kernels'") && Contains("hashes to"));
  }
  SECTION("an incomplete file (file_bytes 0)") {
    Bytes b = good;
    std::memset(b.data() + 16, 0, 8);
    REQUIRE_THROWS_WITH(ff::format::parse(b, no_sums), Contains("incomplete"));
  }
  SECTION("a truncated file") {
    Bytes b(good.begin(), good.end() - 10);
    REQUIRE_THROWS_WITH(ff::format::parse(b), Contains("truncated"));
  }
  SECTION("not a recording file") {
    std::string text = "hello, world: not a recording at all, but long enough for a header";
    Bytes b(reinterpret_cast<const std::byte*>(text.data()),
            reinterpret_cast<const std::byte*>(text.data()) + text.size());
    REQUIRE_THROWS_WITH(ff::format::parse(b), Contains("not a recording file"));
  }
  SECTION("Recording::load prefixes the path") {
    TempDir dir;
    Bytes b(good.begin(), good.begin() + 200);
    ff::write_file_atomic(dir.file("cut.ffr"), b, false);
    REQUIRE_THROWS_AS(ff::Recording::load(dir.file("cut.ffr")), ff::FormatError);
    REQUIRE_THROWS_WITH(ff::Recording::load(dir.file("cut.ffr")),
                        Contains(dir.file("cut.ffr") + ": recording file:"));
  }
}

TEST_CASE("format: a session capture saves and loads, and replaying it is refused", "[format]") {
  ffr::fresh("record:llvm");
  ff::Float x = ff::Float::from({1.f, 2.f, 3.f});
  ff::Float y = ff::sqrt(x) + 1.f;
  (void)y.to_vector();
  TempDir dir;
  ff::capture().save(dir.file("capture.ffr"));
  ffr::fresh();
  ff::Recording c = ff::Recording::load(dir.file("capture.ffr"));
  CHECK(c.is_capture());
  CHECK(c.n_ops() > 0);
  REQUIRE_THROWS_WITH(c.replay({}), Contains("capture") && Contains("not replayed"));
}

TEST_CASE("format: the golden files of formats 1.0 to 1.10 load and replay", "[format]") {
  // tests/data/recording-1.N.ffr: the "gather" sample, written by scripts/make-golden.sh with
  // format 1.N. Every later release of major version 1 must load them.
  ffr::fresh();
  std::string version = GENERATE(as<std::string>(), "1.0", "1.1", "1.2", "1.3", "1.4", "1.5", "1.6",
                                 "1.7", "1.8", "1.9", "1.10");
  INFO("recording-" << version << ".ffr");
  ff::Recording g =
      ff::Recording::load(std::string(FF_TEST_DATA_DIR) + "/recording-" + version + ".ffr");
  CHECK(g.n_inputs() == 2);
  CHECK(g.n_outputs() == 3);
  // 1.2 added the optimiser's passes.
  CHECK(g.is_optimized() == (std::stoi(version.substr(2)) >= 2));
  ff::Float x = ff::Float::from({1.f, 4.f, 9.f, 16.f});
  ff::UInt32 i = ff::UInt32::from({0u, 1u, 2u, 3u});
  auto outs = g.replay({x, i});
  CHECK(outs[0].as<ff::Float>().to_vector() == std::vector<float>{3.f, 5.f, 7.f});
  CHECK(outs[1].as<ff::Float>().to_vector() == std::vector<float>{15.f});
  CHECK(outs[2].as<ff::Float>().to_vector() == std::vector<float>{0.f, 1.f, 5.f, 14.f});
}

TEST_CASE("format: collectives (1.6) round-trip, and replay only where ff::dist runs", "[format]") {
  ffr::fresh();
  ff::rec::ValidatedRecording v =
      ff::rec::ValidatedRecording::check(ff_samples::collective_recording());
  Bytes file = ff::format::write(*v);
  ff::format::ParsedFile f = ff::format::parse(file);
  REQUIRE(f.recordings.size() == 1);
  CHECK(ff::format::write(*f.recordings[0]) == file);  // nothing lost or changed
  ff::Recording r = from_data(f.recordings[0]);
  std::string text = r.to_string();
  CHECK(text.find("collective") != std::string::npos);
  // Without ff::dist::init (this process is no MPI rank): a GuardError naming the rank count,
  // before any op runs.
  ff::Float x = ff::Float::from({1.f, 2.f});
  CHECK_THROWS_AS(r.replay({x}), ff::GuardError);
  CHECK_THROWS_WITH(r.replay({x}), Contains("collectives over 2 ranks") &&
                                       Contains("ff::dist is not initialised") &&
                                       Contains("mpirun -np 2"));
  CHECK((x + 1.f).to_vector() == std::vector<float>{2.f, 3.f});  // the call after works
}

TEST_CASE("format: relative peers and rank expressions (1.7) round-trip and read as written",
          "[format]") {
  ff::rec::RecordingData d = ff_samples::collective_recording(1, 3);
  Bytes file = ff::format::write(*ff::rec::ValidatedRecording::check(d));
  ff::format::ParsedFile f = ff::format::parse(file);
  REQUIRE(f.recordings.size() == 1);
  const ff::rec::RecordingData& back = *f.recordings[0];
  const ff::rec::Op& op = back.ops[9];
  ff::rec::CollectivePeers p = ff::rec::CollectivePeers::unpack(op.value, op.flag);
  CHECK(p.peer == 1);
  CHECK(p.peer_mode == ff::detail::PeerMode::Relative);
  CHECK(p.source == -1);
  CHECK(p.source_mode == ff::detail::PeerMode::Relative);
  CHECK(p.rank == 1);
  CHECK(ff::detail::to_string(p.dest()) == "rank+1");
  CHECK(ff::detail::to_string(p.from()) == "rank-1");
  CHECK(ff::rec::expr_to_string(back, back.ops[11].size_expr) == "(rank + ranks)");
  CHECK(ff::rec::evaluate(back, back.ops[11].size_expr, {}, {2, 5}, "test") == 7u);
  // Peers resolve on the replaying rank: relative ones are none past the ends, cyclic wrap.
  using ff::detail::PeerMode;
  using ff::detail::resolve_peer;
  CHECK(resolve_peer({1, PeerMode::Relative}, 2, 3) == ff::detail::kNoPeer);
  CHECK(resolve_peer({-1, PeerMode::Relative}, 0, 3) == ff::detail::kNoPeer);
  CHECK(resolve_peer({-1, PeerMode::Relative}, 2, 3) == 1);
  CHECK(resolve_peer({1, PeerMode::Cyclic}, 2, 3) == 0);
  CHECK(resolve_peer({-4, PeerMode::Cyclic}, 0, 3) == 2);
  CHECK(resolve_peer({7, PeerMode::Absolute}, 0, 3) == 7);  // checked where it is used
  // A size operator past Ranks is refused.
  ff::rec::RecordingData bad = d;
  bad.exprs[1].op = static_cast<ff::SizeOp>(10);
  CHECK_THROWS_AS(ff::rec::ValidatedRecording::check(bad), ff::FormatError);
}

TEST_CASE("format: a recording that reads the rank replays only where ff::dist runs", "[format]") {
  ffr::fresh();
  // Only the fill of rank + ranks elements: no collective, but the rank is read.
  ff::rec::RecordingData d = ff_samples::collective_recording();
  d.ops.erase(d.ops.begin(), d.ops.begin() + 10);
  ff::rec::RecordingData only;
  only.backend = d.backend;
  only.slots = {d.slots[0], d.slots.back()};
  only.slots[1].origin_index = 0;
  only.slots[1].size_expr = 3;
  only.inputs = {0};
  only.exprs = d.exprs;
  only.ops = d.ops;
  for (ff::rec::Op& op : only.ops)
    op.dst = 1;
  only.outputs = {{1}};
  ff::Recording r = from_data(ff::rec::ValidatedRecording::check(only));
  ff::Float x = ff::Float::from({1.f, 2.f});
  CHECK_THROWS_AS(r.replay({x}), ff::GuardError);
  CHECK_THROWS_WITH(r.replay({x}),
                    Contains("reads ff::dist's rank") && Contains("ff::dist is not initialised"));
  CHECK((x * 2.f).to_vector() == std::vector<float>{2.f, 4.f});  // the call after works
}

TEST_CASE("format: damaged collective ops are refused", "[format][negative]") {
  using ff::rec::CollectivePeers;
  auto refused = [](auto edit, const char* what) {
    ff::rec::RecordingData d = ff_samples::collective_recording(1, 3);
    edit(d);
    INFO(what);
    CHECK_THROWS_AS(ff::rec::ValidatedRecording::check(d), ff::FormatError);
  };
  uint32_t sendrecv = 7, broadcast = 5, all_reduce = 1;
  refused([&](auto& d) { d.ops[all_reduce].sub = 4; }, "an unknown kind");
  refused([&](auto& d) { d.ops[all_reduce].flag = 6; }, "an unknown reduction");
  refused([&](auto& d) { d.ops[5].flag = 1; }, "a reduction on a broadcast");
  refused([&](auto& d) { d.ops[all_reduce].elem_size = 0; }, "no ranks");
  refused(
      [&](auto& d) {
        CollectivePeers p = CollectivePeers::unpack(d.ops[sendrecv].value);
        p.peer = 3;  // of 3 ranks
        d.ops[sendrecv].value = p.pack();
      },
      "a peer outside the ranks");
  refused(
      [&](auto& d) {
        CollectivePeers p = CollectivePeers::unpack(d.ops[broadcast].value);
        p.peer = -1;
        d.ops[broadcast].value = p.pack();
      },
      "a broadcast without a root");
  refused(
      [&](auto& d) {
        CollectivePeers p = CollectivePeers::unpack(d.ops[sendrecv].value);
        p.rank = 2;
        d.ops[sendrecv].value = p.pack();
      },
      "collectives recorded on two ranks");
  refused([&](auto& d) { d.ops[sendrecv].elem_size = 4; },
          "collectives recorded with two rank counts");
  refused([&](auto& d) { d.ops[all_reduce].dst = 0; }, "a result written into the input");
  refused([&](auto& d) { d.ops[all_reduce].dst_offset = 4; },
          "a result written into part of a slot");
  refused([&](auto& d) { d.ops[all_reduce].value |= uint64_t{1} << 63; }, "stray bits");
  uint32_t relative = 9;
  refused([&](auto& d) { d.ops[relative].flag = 3; }, "an unknown destination mode");
  refused([&](auto& d) { d.ops[relative].flag = 12; }, "an unknown source mode");
  refused([&](auto& d) { d.ops[relative].flag = 16; }, "modes past four bits");
  refused([&](auto& d) { d.ops[3].flag = 1; }, "peer modes on an all_gather");
  refused(
      [&](auto& d) {
        d.ops[relative].flag = 0;  // the offsets read as absolute ranks are out of range
        CollectivePeers p = CollectivePeers::unpack(d.ops[relative].value, 0);
        CHECK((p.peer < 0 || p.peer >= 3));
      },
      "relative offsets read as ranks");
  CHECK_NOTHROW(ff::rec::ValidatedRecording::check(ff_samples::collective_recording(1, 3)));
}

// The catch-all: every truncation and every single-byte flip of a small file.
TEST_CASE(
    "format: truncated at every offset and with every byte flipped, a file loads as a "
    "valid recording or raises ff::FormatError",
    "[format][negative]") {
  ffr::fresh();
  ff::Recording r = ff_samples::sample_recordings()[3].second;  // every table in use
  Bytes good = bytes_of(r);
  INFO("file of " << good.size() << " bytes");
  ff::format::ParseOptions no_sums;
  no_sums.verify_checksums = false;
  std::map<ff::format::ParseStage, size_t> reached;
  size_t loaded = 0, replayed = 0;
  auto attempt = [&](const Bytes& b, const ff::format::ParseOptions& options) {
    ff::format::ParseStage stage = ff::format::ParseStage::Header;
    ff::format::ParseOptions o = options;
    o.reached = &stage;
    try {
      ff::format::ParsedFile f = ff::format::parse(b, o);
      ++loaded;
      // Loaded means as trustworthy as recorded: it plans and replays, or refuses cleanly.
      ff::Recording l = from_data(f.recordings[0]);
      for (size_t n : {8, 3}) {
        if (!modest(*f.recordings[0], n))
          continue;
        try {
          (void)l.replay(sample_inputs(l, n));
          ++replayed;
        } catch (const ff::FreezeError&) {
        } catch (const ff::BackendError&) {
        }
      }
    } catch (const ff::FormatError&) {
    }
    ++reached[stage];
  };
  for (size_t n = 0; n < good.size(); ++n)
    attempt(Bytes(good.begin(), good.begin() + n), {});
  CHECK(loaded == 0);
  size_t truncated = good.size();
  for (size_t at = 0; at < good.size(); ++at) {
    Bytes b = good;
    b[at] ^= std::byte{0x5a};
    attempt(b, no_sums);
    b[at] ^= std::byte{0x5a} ^ std::byte{0x01};  // a one-bit change too
    attempt(b, no_sums);
  }
  size_t flips = 2 * good.size();
  auto past = [&](ff::format::ParseStage s) {
    size_t n = 0;
    for (auto& [stage, count] : reached)
      n += stage >= s ? count : 0;
    return n;
  };
  INFO("of " << truncated << " truncations and " << flips << " flips: reached the tables "
             << past(ff::format::ParseStage::Tables) << ", validation "
             << past(ff::format::ParseStage::Validate) << ", loaded " << loaded << ", replayed "
             << replayed);
  // Most flips land in the sections (not the header), so they must reach the item decoders,
  // and a good share of those the validator; some flips (values, sizes) still load.
  CHECK(past(ff::format::ParseStage::Tables) > flips / 2);
  CHECK(past(ff::format::ParseStage::Validate) > flips / 4);
  CHECK(loaded > 0);
  CHECK(replayed > 0);
}

TEST_CASE(
    "format: what a reader cannot know in a newer minor version is refused naming both "
    "versions",
    "[format][negative]") {
  // A later release may add an op code (or an IR opcode, an enum value); this reader refuses
  // the file, and says the file is newer instead of leaving "invalid op code 41" alone.
  ffr::fresh();
  ff::Recording r = ff_samples::sample_recordings()[1].second;
  ff::rec::RecordingData d = data_of(r);
  d.ops[0].code = static_cast<ff::rec::OpCode>(41);
  ff::format::WriteOptions newer;
  newer.version_minor = static_cast<uint16_t>(ff::format::kVersionMinor + 3);
  std::string later = "format 1." + std::to_string(ff::format::kVersionMinor + 3);
  REQUIRE_THROWS_AS(ff::format::parse(ff::format::write(d, newer)), ff::FormatError);
  REQUIRE_THROWS_WITH(ff::format::parse(ff::format::write(d, newer)),
                      Contains("41") && Contains(later) && Contains("newer than this reader's") &&
                          Contains(this_format()));
  // The same damage in a file of this version is just damage.
  REQUIRE_THROWS_WITH(ff::format::parse(ff::format::write(d, {})),
                      Contains("41") && !Contains("newer than this reader's"));
}
