// One spdlog logger per subsystem (ff.tracer, ff.llvm, ...), created lazily, sharing one sink.
#pragma once

#include <spdlog/spdlog.h>

#include <string_view>

namespace ff::logging {

spdlog::logger& tracer();
spdlog::logger& llvm();
spdlog::logger& cuda();
spdlog::logger& backend();
spdlog::logger& record();
spdlog::logger& replay();
spdlog::logger& format();
/// ff.dist: MPI start-up and collectives (dist/).
spdlog::logger& dist();
/// ff.assert: failed FF_ASSERT checks (common/assert.h).
spdlog::logger& assertions();

/// Applies an FF_LOG_LEVEL-style spec ("warn", "info,ff.llvm=debug"); unknown level
/// names are reported with a warning instead of being ignored silently.
void apply_level_spec(std::string_view spec);

/// Sets every ff.* logger (existing and future) to one level.
void set_all_levels(spdlog::level::level_enum level);

}  // namespace ff::logging
