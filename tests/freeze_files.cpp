// Frozen functions in files: f.save / f.load round trips (every kind of call replays without
// tracing, written-back arguments and opaque literals included), version and structure
// mismatches, files without freeze data, damaged freeze data. A fresh process loading a saved
// frozen function: tests/tools/process_test.cpp, mode frozen-fresh-process.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "common/log.h"
#include "recorder/format.h"
#include "recorder/format_reader.h"
#include "recorder/format_writer.h"
#include "support/freeze_check.h"
#include "support/log_capture.h"

using namespace fff;
using Catch::Matchers::Contains;
using ff::Float;
using ff::UInt32;

namespace {

namespace fs = std::filesystem;

void fresh() {
  ff::shutdown();
  ff::init("llvm");
}

struct TempFile {
  fs::path path;

  explicit TempFile(const std::string& name)
      : path(fs::temp_directory_path() /
             ("ff-freeze-files-" + std::to_string(::getpid()) + "-" + name)) {}

  ~TempFile() {
    std::error_code ec;
    fs::remove(path, ec);
  }

  std::string str() const { return path.string(); }
};

ff::FreezeOptions named(std::string version = "") {
  ff::FreezeOptions o;
  o.name = "step";
  o.version = std::move(version);
  return o;
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
