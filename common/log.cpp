// Logger registry: lazily created, never at namespace scope (spdlog#811).
#include "common/log.h"

#include <spdlog/cfg/helpers.h>
#include <spdlog/sinks/stdout_color_sinks.h>

#include <atomic>
#include <mutex>
#include <string>
#include <vector>

namespace ff::logging {
namespace {

std::atomic<int> g_default_level{spdlog::level::warn};

spdlog::logger& get(const char* name) {
  static std::mutex mutex;
  std::lock_guard lock(mutex);
  if (auto existing = spdlog::get(name))
    return *existing;
  static auto sink = std::make_shared<spdlog::sinks::stderr_color_sink_mt>();
  auto logger = std::make_shared<spdlog::logger>(name, sink);
  logger->set_level(static_cast<spdlog::level::level_enum>(g_default_level.load()));
  logger->set_pattern("[%H:%M:%S.%e] [%n] [%l] %v");
  spdlog::register_logger(logger);
  // spdlog's registry drops its loggers at exit, while backend threads (the JIT warm-up) may
  // still log: keep every logger alive for the whole process (reachable, so not a leak).
  static auto* keep = new std::vector<std::shared_ptr<spdlog::logger>>;
  keep->push_back(logger);
  return *logger;
}

}  // namespace

#define FF_DEFINE_LOGGER(fn, name)        \
  spdlog::logger& fn() {                  \
    static spdlog::logger& l = get(name); \
    return l;                             \
  }
FF_DEFINE_LOGGER(tracer, "ff.tracer")
FF_DEFINE_LOGGER(llvm, "ff.llvm")
FF_DEFINE_LOGGER(cuda, "ff.cuda")
FF_DEFINE_LOGGER(backend, "ff.backend")
FF_DEFINE_LOGGER(record, "ff.record")
FF_DEFINE_LOGGER(replay, "ff.replay")
FF_DEFINE_LOGGER(format, "ff.format")
FF_DEFINE_LOGGER(dist, "ff.dist")
FF_DEFINE_LOGGER(assertions, "ff.assert")
#undef FF_DEFINE_LOGGER

static void touch_all() {
  tracer();
  llvm();
  cuda();
  backend();
  record();
  replay();
  format();
  dist();
  assertions();
}

void set_all_levels(spdlog::level::level_enum level) {
  touch_all();
  g_default_level = level;
  spdlog::apply_all([&](const std::shared_ptr<spdlog::logger>& l) {
    if (l->name().rfind("ff.", 0) == 0)
      l->set_level(level);
  });
}

void apply_level_spec(std::string_view spec) {
  touch_all();
  std::vector<std::string> unknown;
  std::string s(spec);
  size_t pos = 0;
  while (pos <= s.size()) {
    size_t comma = s.find(',', pos);
    std::string item = s.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    size_t eq = item.find('=');
    std::string level = eq == std::string::npos ? item : item.substr(eq + 1);
    if (!level.empty() && spdlog::level::from_str(level) == spdlog::level::off && level != "off")
      unknown.push_back(level);
    if (comma == std::string::npos)
      break;
    pos = comma + 1;
  }
  if (s.find('=') == std::string::npos && unknown.empty() && !s.empty()) {
    set_all_levels(spdlog::level::from_str(s));
    return;
  }
  spdlog::cfg::helpers::load_levels(s);
  for (auto& u : unknown)
    tracer().warn(
        "FF_LOG_LEVEL: unknown level name '{}' (expected trace, debug, info, warn, error, "
        "critical or off)",
        u);
}

}  // namespace ff::logging
