// Reading FF_* variables (see environment.h): the only getenv calls of the library.
#include "runtime/environment.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>

#include "common/log.h"
#include "freezeframe/errors.h"
#include "tracer/device.h"

namespace ff::detail {

std::string env_string(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

std::optional<bool> env_switch(const char* name) {
  std::string raw = env_string(name);
  if (raw.empty())
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

namespace {

/// The on-disk kernel cache from FF_CACHE_DIR ("off", a directory, or unset: the XDG cache
/// directory) and FF_CACHE_MAX_MB.
void configure_disk_cache(BackendOptions& o) {
  std::string dir = env_string("FF_CACHE_DIR");
  if (dir.empty()) {
    if (std::string xdg = env_string("XDG_CACHE_HOME"); xdg.starts_with('/'))
      dir = xdg + "/freezeframe";
    else if (std::string home = env_string("HOME"); !home.empty())
      dir = home + "/.cache/freezeframe";
  } else if (dir == "off") {
    dir.clear();
  }
  o.kernel_cache_dir = dir;
  if (std::string mb = env_string("FF_CACHE_MAX_MB"); !mb.empty()) {
    char* end = nullptr;
    double v = std::strtod(mb.c_str(), &end);
    if (*end != '\0' || !(v >= 0) || !std::isfinite(v) || v > 1e12)
      logging::backend().warn("FF_CACHE_MAX_MB='{}' is not a size in MB; keeping {} MB", mb,
                              o.kernel_cache_max_bytes >> 20);
    else
      o.kernel_cache_max_bytes = static_cast<uint64_t>(v * 1048576.0);
  }
  if (dir.empty())
    logging::backend().info("on-disk kernel cache: off");
  else
    logging::backend().info("on-disk kernel cache: '{}' (at most {} MB)", dir,
                            o.kernel_cache_max_bytes >> 20);
}

}  // namespace

BackendOptions environment_backend_options() {
  BackendOptions o;
  configure_disk_cache(o);
  o.cuda_device = env_string("FF_CUDA_DEVICE");
  o.cuda_driver_library = env_string("FF_CUDA_DRIVER_LIBRARY");
  o.cuda_graphs = env_string("FF_CUDA_GRAPHS") != "0";  // "0": replay op by op
  return o;
}

uint32_t freeze_verify_from_environment() {
  std::string e = env_string("FF_FREEZE_VERIFY");
  if (e.empty())
    return 0;
  char* end = nullptr;
  unsigned long n = std::strtoul(e.c_str(), &end, 10);
  if (*end || n > UINT32_MAX || e[0] == '-')
    throw Error(
        "FF_FREEZE_VERIFY must be a replay count (0 = off, N = every Nth replay), "
        "not '" +
        e + "'");
  return static_cast<uint32_t>(n);
}

bool optimizer_enabled_by_environment() {
  static const bool enabled = env_switch("FF_OPTIMIZE").value_or(true);
  return enabled;
}

std::optional<bool> dist_cuda_aware_from_environment() {
  std::string v = env_string("FF_DIST_CUDA_AWARE");
  if (v == "auto")
    return std::nullopt;
  try {
    return env_switch("FF_DIST_CUDA_AWARE");
  } catch (const Error&) {
    throw Error("FF_DIST_CUDA_AWARE='" + v + "': expected 1, on, 0, off or auto");
  }
}

bool launched_by_mpi() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "MPI_LOCALNRANKS"})
    if (!env_string(name).empty())
      return true;
  return false;
}

// Declared by the tracer (tracer/device.h): read when its first thread table is made.
bool asymmetric_fences_allowed() {
  return env_string("FF_ASYMMETRIC_FENCES") != "0";
}

}  // namespace ff::detail
