// A plain-text listing of a Recording (slots, ops, guards, kernels) for logs and errors.
#pragma once

#include <string>

#include "recorder/recording.h"

namespace ff::rec {

std::string to_text(const RecordingData& data);

/// One optimiser pass's counts: "ops 299 -> 2, launches 100 -> 1, allocs 100 -> 1, guards 19
/// -> 0" (the listing above and recorder-dump).
std::string pass_counts(const PassStats& pass);

}  // namespace ff::rec
