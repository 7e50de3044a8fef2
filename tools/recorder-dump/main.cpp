// recorder-dump: shows a recording file (summary and op table, kernels, JSON, Graphviz) or
// what differs between two. Reads files only and links no backend. Exit status: 0 success
// (--diff: the same), 1 a bad or missing file (--diff: different), 2 bad usage (--diff: a bad
// or missing file too, like diff(1)).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>
#include <optional>
#include <string>

#include "common/version.h"
#include "dump.h"
#include "freezeframe/errors.h"
#include "recorder/format.h"
#include "recorder/format_reader.h"
#include "tools/parse_count.h"

int main(int argc, char** argv) {
  CLI::App app{"Shows what a freezeframe recording file holds.", "recorder-dump"};
  app.set_version_flag("--version", std::string("recorder-dump (freezeframe ") +
                                        ff::library_version() + ", recording format " +
                                        std::to_string(ff::format::kVersionMajor) + "." +
                                        std::to_string(ff::format::kVersionMinor) + ")");
  std::string file, other;
  bool kernels = false, json = false, dot = false;
  std::optional<std::string> recording;  // checked against the file's count once it is read
  app.add_option("FILE", file, "recording file (.ffr)")->required();
  app.add_flag("--kernels", kernels, "print each kernel's IR");
  auto* json_opt =
      app.add_flag("--json", json, "print the JSON form (schema freezeframe.recording-dump)");
  auto* dot_opt = app.add_flag("--dot", dot, "print a Graphviz graph of ops and slots");
  auto* diff_opt =
      app.add_option("--diff", other,
                     "print what differs from OTHER; exit 0 same, 1 different, 2 trouble")
          ->type_name("OTHER");
  app.add_option("--recording", recording, "show only recording K of a file that holds several")
      ->type_name("K");
  json_opt->excludes(dot_opt)->excludes(diff_opt);
  dot_opt->excludes(diff_opt);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "recorder-dump: " << e.what() << "\n\n" << app.help();
    return 2;
  }

  ff::dump::Options options;
  options.kernels = kernels;
  bool diffing = !other.empty();
  ff::format::ParsedFile a, b;
  try {
    a = ff::format::parse_file(file);
    if (diffing)
      b = ff::format::parse_file(other);
  } catch (const ff::Error& e) {
    std::cerr << "recorder-dump: " << e.what() << "\n";
    return diffing ? 2 : 1;
  }
  if (recording) {
    std::optional<uint64_t> k = ff::tools::parse_count(*recording);
    if (!k || *k >= a.recordings.size()) {
      std::cerr << "recorder-dump: --recording " << *recording << ": "
                << (k ? "" : "not a recording index: ") << "the file holds " << a.recordings.size()
                << " recording(s), numbered from 0\n";
      return 2;
    }
    options.recording = *k;
  }
  try {
    if (diffing) {
      ff::dump::DiffResult r = ff::dump::diff(a, b, options);
      std::cout << (r.same ? "" : "--- " + file + "\n+++ " + other + "\n") << r.text;
      return r.same ? 0 : 1;
    }
    if (json)
      std::cout << ff::dump::json(a, options).dump(2) << "\n";
    else if (dot)
      std::cout << ff::dump::dot(a, options);
    else
      std::cout << ff::dump::text(a, options);
  } catch (const ff::FormatError& e) {  // a damaged freeze section
    std::cerr << "recorder-dump: " << e.what() << "\n";
    return diffing ? 2 : 1;
  } catch (const ff::Error& e) {
    std::cerr << "recorder-dump: " << e.what() << "\n";
    return 2;
  }
  std::cout.flush();
  return std::cout ? 0 : 1;
}
