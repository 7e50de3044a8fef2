// See recording_file_target.h.
#include "fuzz/recording_file_target.h"

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "backend/backend.h"
#include "backend/llvm/llvm_backend.h"
#include "freezeframe/errors.h"
#include "replay/replay_plan.h"

namespace ff::fuzz {
namespace {

[[noreturn]] void violated(const char* what, const std::string& detail) {
  std::fprintf(stderr, "recording file property violated: %s\n%s\n", what, detail.c_str());
  std::abort();
}

Backend& backend() {
  // One single-threaded backend for the run, without the disk cache.
  static std::unique_ptr<Backend> b = [] {
    BackendOptions options;
    options.n_threads = 1;
    return create_llvm_backend(options);
  }();
  return *b;
}

}  // namespace

void run_recording_file(std::span<const std::byte> bytes, FileStats& stats) {
  ++stats.inputs;
  format::ParseStage stage = format::ParseStage::Header;
  format::ParseOptions options;
  options.verify_checksums = false;
  options.reached = &stage;
  format::ParsedFile file;
  try {
    file = format::parse(bytes, options);
  } catch (const FormatError&) {
  } catch (const std::exception& e) {
    violated("parse threw something other than ff::FormatError", e.what());
  }
  stats.reached_tables += stage >= format::ParseStage::Tables;
  stats.reached_ops += stage >= format::ParseStage::Validate;
  if (stage != format::ParseStage::Done)
    return;
  ++stats.loaded;
  try {
    for (const auto& d : file.recordings) {
      if (d->is_capture)
        continue;  // a plan refuses captures by design
      replay::ReplayPlan plan(d, backend());
    }
    ++stats.planned;
  } catch (const FreezeError& e) {
    violated("a loaded recording failed to plan (validation let it through)", e.what());
  } catch (const BackendError& e) {
    violated("a loaded recording's kernel failed to compile", e.what());
  }
  static int compiled_since_flush = 0;
  if (++compiled_since_flush > 256) {  // bound the code a long run keeps
    backend().flush_kernels();
    compiled_since_flush = 0;
  }
}

bool report(const FileStats& s, const char* who) {
  std::fprintf(stderr,
               "%s: %llu inputs: %llu reached the tables, %llu reached the ops, %llu loaded, "
               "%llu planned\n",
               who, static_cast<unsigned long long>(s.inputs),
               static_cast<unsigned long long>(s.reached_tables),
               static_cast<unsigned long long>(s.reached_ops),
               static_cast<unsigned long long>(s.loaded),
               static_cast<unsigned long long>(s.planned));
  if (s.inputs > 0 && s.reached_ops == 0) {
    std::fprintf(stderr,
                 "%s: no input reached the ops: the run exercised the header checks only (is "
                 "the seed corpus made of real recordings?)\n",
                 who);
    return false;
  }
  return true;
}

}  // namespace ff::fuzz
