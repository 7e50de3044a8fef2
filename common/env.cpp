#include "common/env.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <string>

#include "freezeframe/errors.h"

namespace ff::detail {

std::optional<bool> env_switch(const char* name) {
  const char* raw = std::getenv(name);
  if (!raw || !*raw)
    return std::nullopt;
  std::string v = raw;
  std::transform(v.begin(), v.end(), v.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (v == "1" || v == "on" || v == "true" || v == "yes")
    return true;
  if (v == "0" || v == "off" || v == "false" || v == "no")
    return false;
  throw Error(std::string(name) + "='" + raw +
              "' is not a switch: use 1, on, true or yes to turn it on, 0, off, false or no to "
              "turn it off");
}

}  // namespace ff::detail
