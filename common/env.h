// Reading on/off switches from the environment with the usual spellings, one rule for every
// FF_* switch: a misspelt value is an error, never silently ignored.
#pragma once

#include <optional>

namespace ff::detail {

/// The switch `name`: nullopt when unset or empty; true for 1, on, true, yes; false for 0, off,
/// false, no (any case). Throws ff::Error naming the variable and the value otherwise.
std::optional<bool> env_switch(const char* name);

}  // namespace ff::detail
