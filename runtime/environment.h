// The environment: every FF_* variable freezeframe reads is read here, in runtime/, and nowhere
// else (the test layers.ff_environment_reads_in_runtime_only checks the sources). The layers
// below never read the environment: the runtime hands the values down, to the backends in
// BackendOptions, to the tracer through the functions it declares (tracer/device.h), and the
// front end (above the runtime) asks here.
//
// Read when asked, not cached, except where a comment says "once": ff::init reads what it
// needs each time it builds a stack, so a test may change a variable between two inits.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "backend/backend_options.h"

namespace ff::detail {

/// The variable `name` as written, or "" when it is unset.
std::string env_string(const char* name);

/// The switch `name`: nullopt when unset or empty; true for 1, on, true, yes; false for 0, off,
/// false, no (any case). Throws ff::Error naming the variable and the value otherwise: one rule
/// for every FF_* switch, a misspelt value is an error, never silently ignored.
std::optional<bool> env_switch(const char* name);

/// The backend options the environment sets: the on-disk kernel cache (FF_CACHE_DIR, else
/// $XDG_CACHE_HOME/freezeframe, else ~/.cache/freezeframe; FF_CACHE_MAX_MB) and the cuda
/// backend's FF_CUDA_DEVICE (as written: the backend parses it when it starts),
/// FF_CUDA_DRIVER_LIBRARY and FF_CUDA_GRAPHS. Not the thread count (FF_THREADS, which
/// ff::InitOptions overrides: see runtime.cpp). Logs the cache's choice at info level.
BackendOptions environment_backend_options();

/// FF_FREEZE_VERIFY: every frozen function created without FreezeOptions::verify re-runs its
/// body traced on every Nth replay (0 or unset: never). Throws ff::Error for a value that is
/// not a replay count.
uint32_t freeze_verify_from_environment();

/// FF_OPTIMIZE: false when it turns the recording optimiser off for the process (read once, at
/// the first recording); throws ff::Error for a value that is not a switch.
bool optimizer_enabled_by_environment();

/// FF_DIST_CUDA_AWARE: true or false (1/on/..., 0/off/...: hand device buffers to MPI, or stage
/// them through host memory); nullopt when unset or `auto` (ff::dist asks the MPI library).
/// Throws ff::Error naming the variable for any other value.
std::optional<bool> dist_cuda_aware_from_environment();

/// True when an MPI launcher (mpirun / mpiexec of OpenMPI, MPICH or a PMI-based one) started this
/// process: recorder-replay starts ff::dist only then, instead of MPI as a lone singleton.
bool launched_by_mpi();

}  // namespace ff::detail
