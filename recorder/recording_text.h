// A plain-text listing of a Recording (slots, ops, guards, kernels) for logs and errors.
#pragma once

#include <string>

#include "recorder/recording.h"

namespace ff::rec {

std::string to_text(const RecordingData& data);

}  // namespace ff::rec
