// Frozen functions in files: f.save / f.load round trips (every kind of call replays without
// tracing, written-back arguments and opaque literals included), version and structure
// mismatches, files without freeze data, damaged freeze data, freeze data that does not fit
// its recordings, layout-1 files. A fresh process loading a saved frozen function:
// tests/tools/process_test.cpp, mode frozen-fresh-process. The codec's own rules:
// tests/freeze_section_test.cpp.
#include <spdlog/sinks/ostream_sink.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <sstream>

#include "common/file_io.h"
#include "common/log.h"
#include "recorder/format.h"
#include "recorder/format_reader.h"
#include "recorder/format_writer.h"
#include "recorder/freeze_section.h"
#include "support/freeze_check.h"
#include "support/log_capture.h"
#include "support/temp_file.h"

using namespace fff;
using Catch::Matchers::Contains;
using ff::Float;
using ff::UInt32;
using fft::TempFile;

namespace {

namespace fs = std::filesystem;

void fresh() {
  ff::shutdown();
  ff::init("llvm");
}

ff::FreezeOptions named(std::string version = "") {
  ff::FreezeOptions o;
  o.name = "step";
  o.version = std::move(version);
  return o;
}

/// A saved function's file: its recordings and its freeze section, decoded, to be written
/// back with a changed section.
struct SavedFile {
  ff::format::ParsedFile parsed;
  ff::format::FreezeSection section;

  explicit SavedFile(const std::string& path) {
    parsed = ff::format::parse(ff::read_file(path));
    std::vector<size_t> outputs;
    for (const auto& d : parsed.recordings)
      outputs.push_back(d->outputs.size());
    REQUIRE(parsed.skipped.size() == 1);
    section = ff::format::decode_freeze_section(parsed.skipped[0].bytes, outputs, path);
  }

  void write(const std::string& path, const ff::format::FreezeSection& s) const {
    std::vector<const ff::rec::RecordingData*> recs;
    for (const auto& d : parsed.recordings)
      recs.push_back(d.get());
    ff::format::WriteOptions o;
    o.extra.push_back({ff::format::kSectionFreeze, ff::format::kSectionOptional,
                       ff::format::kFileLevel, 1, ff::format::encode_freeze_section(s)});
    ff::write_file_atomic(path, ff::format::write(recs, o), false);
  }
};

/// A layout-2 key's tracer part in layout 1's encoding: a literal's size as a u64 after its
/// bits (~0 for a size taken from an array), instead of a size class.
std::vector<uint8_t> as_layout_1(const std::vector<uint8_t>& key, size_t shape_bytes,
                                 const std::vector<ff::format::FreezeLeafInfo>& infos) {
  ff::format::DecodedKey k = ff::format::decode_key(key, shape_bytes, 2, "a key");
  std::vector<uint8_t> out(key.begin(), key.begin() + static_cast<ptrdiff_t>(shape_bytes));
  auto put = [&](const void* p, size_t n) {
    auto* b = static_cast<const uint8_t*>(p);
    out.insert(out.end(), b, b + n);
  };
  out.push_back(k.debug ? 1 : 0);
  for (size_t i = 0; i < k.leaves.size(); ++i) {
    const ff::format::KeyLeaf& l = k.leaves[i];
    out.push_back(static_cast<uint8_t>(l.kind));
    if (l.kind == ff::format::LeafKind::Input) {
      put(&l.group, 4);
    } else if (l.kind == ff::format::LeafKind::Alias) {
      put(&l.alias, 4);
    } else {
      uint64_t size = infos[i].size_has_prov ? ~uint64_t{0} : infos[i].size;
      put(&l.bits, 8);
      put(&size, 8);
    }
  }
  return out;
}

}  // namespace

TEST_CASE("freeze files: a loaded function replays every saved kind of call without tracing",
          "[freeze][files]") {
  fresh();
  auto fn = [](Particle& p, const Float& dt, int mode) {
    p.vel = mode == 1 ? p.vel * 0.5f : p.vel + dt;
    p.pos = p.pos + p.vel * dt;
    p.id += 1;
    return ff::sum(p.pos);
  };
  auto make = [](size_t n, int mode) {
    Particle p{ramp(n), ramp(n, 0.5f, 1.f), 10};
    return std::tuple{p, Float::from({0.25f}), mode};
  };
  TempFile file("roundtrip.ffr");
  {
    auto f = ff::freeze(fn, named());
    same_as_traced(
        f, fn, [&](size_t n) { return make(n, 1); }, 50);
    same_as_traced(
        f, fn, [&](size_t n) { return make(n, 2); }, 50);
    REQUIRE(f.n_recordings() == 2);
    f.save(file.str());
  }
  fresh();
  auto g = ff::freeze(fn, named());
  g.load(file.str());
  CHECK(g.n_cached() == 2);
  ff::Stats s0 = ff::stats();
  for (size_t n : {7, 2, 131})
    for (int mode : {1, 2})
      same_as_traced(
          g, fn, [&](size_t m) { return make(m, mode); }, n);
  CHECK(g.n_recordings() == 0);
  CHECK(g.n_replays() == 6);
  // At size 1 every input shares one size: another kind of call, recorded as usual.
  same_as_traced(
      g, fn, [&](size_t m) { return make(m, 1); }, 1);
  CHECK(g.n_recordings() == 1);
  // The frozen calls traced nothing: every kernel traced since came from the traced twins.
  ff::Stats s1 = ff::stats();
  CHECK(s1.traced_kernels - s0.traced_kernels > 0);
  auto h = ff::freeze(fn, named());
  h.load(file.str());
  ff::Stats s2 = ff::stats();
  auto [p, dt, mode] = make(9, 2);
  Float out = h(p, dt, mode);
  ff::eval(out);
  CHECK(ff::stats().traced_kernels == s2.traced_kernels);
  CHECK(p.id == 11);
  // A new kind of call (mode 3) records as usual.
  same_as_traced(
      h, fn, [&](size_t m) { return make(m, 3); }, 5);
  CHECK(h.n_recordings() == 1);
}

TEST_CASE("freeze files: opaque literals are saved", "[freeze][files]") {
  fresh();
  auto fn = [](const Float& x, const Float& scale) { return x * scale; };
  TempFile file("opaque.ffr");
  {
    auto f = ff::freeze(fn, named());
    same_as_traced(
        f, fn,
        [](size_t n) {
          return std::tuple{ramp(n), Float(2.f)};
        },
        8);
    same_as_traced(
        f, fn,
        [](size_t n) {
          return std::tuple{ramp(n), Float(3.f)};
        },
        8);
    REQUIRE(f.n_recordings() == 2);  // the literal changed: made opaque, recorded again
    f.save(file.str());
  }
  auto g = ff::freeze(fn, named());
  g.load(file.str());
  for (float s : {4.f, 5.f})
    same_as_traced(
        g, fn,
        [s](size_t n) {
          return std::tuple{ramp(n), Float(s)};
        },
        6);
  CHECK(g.n_recordings() == 0);
}

TEST_CASE("freeze files: another version string is refused, another argument structure records",
          "[freeze][files]") {
  fresh();
  auto fn = [](const Float& x) { return x + 1.f; };
  TempFile file("versions.ffr");
  {
    auto f = ff::freeze(fn, named("v1"));
    f(ramp(4));
    f.save(file.str());
  }
  auto other = ff::freeze(fn, named("v2"));
  REQUIRE_THROWS_AS(other.load(file.str()), ff::FreezeError);
  REQUIRE_THROWS_WITH(other.load(file.str()),
                      Contains("'step'") && Contains("'v1'") && Contains("'v2'"));
  CHECK(other.n_cached() == 0);
  CHECK(host(other(ramp(2))) == std::vector<float>{1.f, 2.f});  // works, records

  // A generic callable loaded with the saved calls: a call of another structure records for
  // itself, with one log line; the saved kind still replays without tracing.
  auto generic = [](const auto&... xs) { return (xs + ...) + 1.f; };
  auto g = ff::freeze(generic, named("v1"));
  g.load(file.str());
  ff::set_log_level(ff::LogLevel::Info);
  std::string said;
  {
    LogCapture log(ff::logging::record());
    CHECK(host(g(ramp(3), ramp(3))) == std::vector<float>{1.f, 3.f, 5.f});
    said = log.str();
  }
  ff::set_log_level(ff::LogLevel::Warn);
  CHECK_THAT(said, Contains("'step'") && Contains("matched none of the 1 key(s) loaded from") &&
                       Contains("versions.ffr") && Contains("recording"));
  CHECK(g.n_recordings() == 1);
  CHECK(host(g(ramp(2))) == std::vector<float>{1.f, 2.f});  // the loaded kind: a replay
  CHECK(g.n_recordings() == 1);
  CHECK(g.n_replays() == 1);
  // After clear() nothing loaded is left, and every kind of call records as usual.
  g.clear();
  CHECK(host(g(ramp(2), ramp(2), ramp(2))) == std::vector<float>{1.f, 4.f});
  CHECK(host(g(ramp(2))) == std::vector<float>{1.f, 2.f});
  CHECK(g.n_recordings() == 2);
}

TEST_CASE("freeze files: a file without freeze data, an empty function, damaged data",
          "[freeze][files]") {
  fresh();
  auto fn = [](const Float& x) { return x * 2.f; };
  auto f = ff::freeze(fn, named());
  TempFile plain("plain.ffr");
  REQUIRE_THROWS_AS(f.save(plain.str()), ff::FreezeError);  // nothing recorded yet
  Float x = ramp(4);
  ff::Recording r = ff::record({x}, [&] { return std::vector<ff::AnyArray>{x * 2.f}; });
  r.save(plain.str());
  REQUIRE_THROWS_AS(f.load(plain.str()), ff::FormatError);
  REQUIRE_THROWS_WITH(f.load(plain.str()), Contains("no freeze data"));
  TempFile missing("missing.ffr");
  REQUIRE_THROWS_AS(f.load(missing.str()), ff::Error);

  // A saved function's freeze data, cut short at every length and with bytes changed: a
  // FormatError or a load that still replays correctly, never a crash.
  f(ramp(5));
  TempFile good("good.ffr");
  f.save(good.str());
  ff::format::ParsedFile parsed;
  {
    std::ifstream in(good.str(), std::ios::binary);
    std::vector<char> raw((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    parsed = ff::format::parse(std::as_bytes(std::span(raw)));
  }
  REQUIRE(parsed.skipped.size() == 1);
  const std::vector<std::byte> data = parsed.skipped[0].bytes;
  std::vector<const ff::rec::RecordingData*> recs;
  for (const auto& d : parsed.recordings)
    recs.push_back(d.get());
  auto write_with = [&](const std::vector<std::byte>& freeze_bytes) {
    ff::format::WriteOptions o;
    o.extra.push_back({ff::format::kSectionFreeze, ff::format::kSectionOptional,
                       ff::format::kFileLevel, 1, freeze_bytes});
    std::vector<std::byte> bytes = ff::format::write(recs, o);
    std::ofstream out(good.str(), std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(bytes.data()),
              static_cast<std::streamsize>(bytes.size()));
  };
  size_t refused = 0, loaded = 0;
  for (size_t cut = 0; cut < data.size(); ++cut) {
    write_with(std::vector<std::byte>(data.begin(), data.begin() + static_cast<ptrdiff_t>(cut)));
    auto g = ff::freeze(fn, named());
    try {
      g.load(good.str());
      ++loaded;
    } catch (const ff::FormatError& e) {
      CHECK_THAT(e.what(), Contains("freeze data"));
      ++refused;
    }
  }
  CHECK(refused == data.size());  // every proper prefix is incomplete
  for (size_t i = 0; i < data.size(); ++i) {
    std::vector<std::byte> flipped = data;
    flipped[i] ^= std::byte{0x5a};
    write_with(flipped);
    auto g = ff::freeze(fn, named());
    try {
      g.load(good.str());
      ++loaded;
      // Loaded: a call either replays correctly, records anew or refuses cleanly.
      std::vector<float> got;
      bool refused_call = false;
      try {
        got = host(g(ramp(3)));
      } catch (const ff::Error&) {
        refused_call = true;
      }
      if (!refused_call)
        CHECK(got == std::vector<float>{0.f, 2.f, 4.f});
    } catch (const ff::Error&) {
      ++refused;
    }
  }
  CHECK(refused > data.size() / 2);
  write_with(data);
  auto g = ff::freeze(fn, named());
  g.load(good.str());
  CHECK(host(g(ramp(3))) == std::vector<float>{0.f, 2.f, 4.f});
  CHECK(g.n_recordings() == 0);
}

TEST_CASE(
    "freeze files: a result shape, written flags or key that do not fit the recording are a "
    "FormatError naming the file",
    "[freeze][files][negative]") {
  fresh();
  auto fn = [](const Float& x, Float& acc) {
    acc = acc + x;
    return x * 2.f;
  };
  TempFile file("fit.ffr");
  {
    auto f = ff::freeze(fn, named());
    Float acc = ramp(4);
    f(ramp(4), acc);
    f.save(file.str());
  }
  const SavedFile saved(file.str());
  REQUIRE(saved.section.records.size() == 1);
  REQUIRE(saved.section.records[0].written == std::vector<uint8_t>{0, 1});
  auto refused = [&](const char* what, const std::function<void(ff::format::FreezeRecord&)>& f) {
    INFO(what);
    ff::format::FreezeSection s = saved.section;
    f(s.records[0]);
    saved.write(file.str(), s);
    auto g = ff::freeze(fn, named());
    REQUIRE_THROWS_AS(g.load(file.str()), ff::FormatError);
    REQUIRE_THROWS_WITH(g.load(file.str()),
                        Contains(file.str() + ": freeze data, byte ") && Contains(what));
    CHECK(g.n_cached() == 0);
  };
  // The result shape: the result (an array), then acc (an array).
  REQUIRE(saved.section.records[0].out_shape == std::vector<uint8_t>{1, 5, 1, 5});
  refused(
      "the result shape and gradients hold 3 array(s), the recording has 2 output(s)", [](auto& r) {
        r.out_shape = {6, 2, 0, 0, 0, 0, 0, 0, 0, 1, 5, 1, 5, 1, 5};  // a tuple of two arrays, acc
      });
  refused("a shape node of unknown kind 66", [](auto& r) { r.out_shape[2] = 66; });
  refused("the data ends inside an array's element type", [](auto& r) { r.out_shape.pop_back(); });
  refused("written flags for 3 argument(s), its key has 2",
          [](auto& r) { r.written.push_back(0); });
  refused("the result shape holds 2 value(s) for 0 written argument(s)",
          [](auto& r) { r.written[1] = 0; });
  // The key: its shape part, then the tracer part (debug flag, per leaf: kind, group).
  refused("an argument does not start with the marker byte", [](auto& r) { r.key[0] = 0x42; });
  refused("leaf 1 of the key is of kind 9", [](auto& r) { r.key[r.shape_bytes + 6] = 9; });
  refused("1 byte(s) follow the key's last leaf", [](auto& r) { r.key.push_back(0); });
  refused("1 leaf infos, its key has 2 leaves", [](auto& r) { r.infos.pop_back(); });
  // The unchanged section still loads and replays.
  saved.write(file.str(), saved.section);
  auto g = ff::freeze(fn, named());
  g.load(file.str());
  Float acc = ramp(3);
  CHECK(host(g(ramp(3), acc)) == std::vector<float>{0.f, 2.f, 4.f});
  CHECK(host(acc) == std::vector<float>{0.f, 2.f, 4.f});
  CHECK(g.n_recordings() == 0);
}

TEST_CASE(
    "freeze files: a layout-1 file loads its recordings without literals and drops the others, "
    "a layout-2 file loads them all",
    "[freeze][files]") {
  fresh();
  auto fn = [](const Float& x, const Float& s) { return x * s; };
  auto buffer = [](size_t n) { return std::tuple{ramp(n), ramp(1, 0.f, 3.f)}; };
  auto literal = [](size_t n) { return std::tuple{ramp(n), Float(2.f)}; };
  TempFile file("layout1.ffr");
  {
    auto f = ff::freeze(fn, named());
    same_as_traced(f, fn, buffer, 8);
    same_as_traced(f, fn, literal, 8);
    REQUIRE(f.n_recordings() == 2);
    f.save(file.str());
  }
  SavedFile saved(file.str());
  CHECK(saved.section.layout == 4);
  ff::format::FreezeSection old = saved.section;
  old.layout = 1;
  size_t with_literal = 0;
  for (ff::format::FreezeRecord& r : old.records) {
    std::vector<uint8_t> key = as_layout_1(r.key, r.shape_bytes, r.infos);
    with_literal += key != r.key;  // a key without literals is the same in both layouts
    r.key = key;
  }
  REQUIRE(with_literal == 1);
  saved.write(file.str(), old);

  ff::set_log_level(ff::LogLevel::Info);
  auto g = ff::freeze(fn, named());
  {
    LogCapture log(ff::logging::format());
    g.load(file.str());
    CHECK_THAT(log.str(), Contains("freeze layout 1") && Contains("1 of its 2 recording(s)") &&
                              Contains("record anew"));
  }
  ff::set_log_level(ff::LogLevel::Warn);
  CHECK(g.n_cached() == 1);
  same_as_traced(g, fn, buffer, 5);
  CHECK(g.n_recordings() == 0);  // replayed
  CHECK(g.n_replays() == 1);
  same_as_traced(g, fn, literal, 5);
  CHECK(g.n_recordings() == 1);  // recorded anew

  // Layout-2 and layout-3 files (before gradients crossed the boundary; before files held a
  // call's backward) key calls without gradients as layout 4 does: every recording loads and
  // replays.
  for (uint32_t layout : {2u, 3u}) {
    INFO("layout " << layout);
    ff::format::FreezeSection older = saved.section;
    older.layout = layout;
    saved.write(file.str(), older);
    auto k = ff::freeze(fn, named());
    k.load(file.str());
    same_as_traced(k, fn, buffer, 6);
    same_as_traced(k, fn, literal, 6);
    CHECK(k.n_recordings() == 0);
    CHECK(k.n_replays() == 2);
  }

  // An unknown layout is refused.
  ff::format::FreezeSection newer = saved.section;
  newer.layout = 5;
  saved.write(file.str(), newer);
  auto h = ff::freeze(fn, named());
  REQUIRE_THROWS_AS(h.load(file.str()), ff::FormatError);
  REQUIRE_THROWS_WITH(h.load(file.str()), Contains("layout version 5"));
}

TEST_CASE("freeze files: a result shape that contradicts the types is damage: nothing is written",
          "[freeze][files]") {
  // Checksums valid, the section well formed, but a written argument's structure in the result
  // shape differs from its structure in the key (another struct), or the shape's arrays have
  // other element types than the recording's outputs: f.load raises ff::FormatError naming
  // the file, and no call ever writes a caller's argument from such a recording.
  fresh();
  auto body = [](Float& a, Particle& p) {
    a = a + 1.f;
    p.pos = p.pos * 2.f;
    return 0;
  };
  TempFile good("contradict-good.ffr"), bad("contradict-bad.ffr");
  {
    auto f = ff::freeze(body, named());
    Float a = ramp(3);
    Particle p{ramp(3), ramp(3), 1};
    f(a, p);
    f.save(good.str());
  }
  SavedFile saved(good.str());
  REQUIRE(saved.section.records.size() == 1);
  const std::vector<uint8_t> shape = saved.section.records[0].out_shape;
  // The result (a value), then a (an array), then p (a struct: token, count, name hash, ...).
  size_t struct_at = 0;
  for (size_t i = 0; i < shape.size(); ++i)
    if (shape[i] == 9) {  // the Struct token: the only one of its value here
      struct_at = i;
      break;
    }
  REQUIRE(struct_at > 0);
  SECTION("another struct in a written argument") {
    ff::format::FreezeSection s = saved.section;
    s.records[0].out_shape[struct_at + 9] ^= 0x5a;  // a byte of the struct's name hash
    saved.write(bad.str(), s);
  }
  SECTION("another element type for an output array") {
    ff::format::FreezeSection s = saved.section;
    size_t array_at = 0;
    for (size_t i = 0; i < shape.size(); ++i)
      if (shape[i] == 1 && i + 1 < shape.size() && shape[i + 1] == 5) {  // Array, float32
        array_at = i;
        break;
      }
    REQUIRE(array_at > 0);
    s.records[0].out_shape[array_at + 1] = 1;  // int32
    saved.write(bad.str(), s);
  }
  auto g = ff::freeze(body, named());
  REQUIRE_THROWS_AS(g.load(bad.str()), ff::FormatError);
  REQUIRE_THROWS_WITH(g.load(bad.str()), Contains(bad.str()));
  CHECK(g.n_cached() == 0);
  Float a = ramp(3);
  Particle p{ramp(3), ramp(3), 1};
  CHECK(g(a, p) == 0);  // records: the traced call's results
  CHECK(host(a) == std::vector<float>{1.f, 2.f, 3.f});
  CHECK(host(p.pos) == std::vector<float>{0.f, 2.f, 4.f});
}
