// The names of the regions (ff::LoopOptions::name) of the kernel this thread launches next.
// A name is kept beside the kernel, never in its IR or hash (two equal loops with different
// names are one kernel), so it cannot travel with compile(): the tracer sets the names around
// its compile and launch, and the recording backend copies them into the recording it writes
// (format 1.8), where recorder-dump shows them.
#pragma once

#include <string>
#include <vector>

namespace ff {

/// One name per region-opening marker (LoopBegin, IfBegin, CallBegin) of the kernel, in
/// instruction order; "" for an unnamed region.
using RegionNames = std::vector<std::string>;

/// Sets this thread's names for its lifetime (nested scopes restore the outer ones).
class RegionNamesScope {
 public:
  explicit RegionNamesScope(const RegionNames* names);
  ~RegionNamesScope();
  RegionNamesScope(const RegionNamesScope&) = delete;
  RegionNamesScope& operator=(const RegionNamesScope&) = delete;

 private:
  const RegionNames* outer_;
};

/// The names of the innermost scope on this thread, or nullptr.
const RegionNames* current_region_names();

}  // namespace ff
