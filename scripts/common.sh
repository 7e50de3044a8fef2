# shellcheck shell=bash
# Shared helpers for scripts/*.sh (sourced, not run): paths, job counts, configure step.

ff_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

# Parallel build jobs: FF_JOBS, else one per core but at most one per ~1.5 GB of memory
# (a translation unit that includes LLVM's ORC headers needs ~800 MB with g++ 12).
ff_jobs() {
  if [[ -n "${FF_JOBS:-}" ]]; then
    echo "$FF_JOBS"
    return
  fi
  local cores mem_kb by_mem
  cores="$(nproc 2>/dev/null || echo 2)"
  mem_kb="$(awk '/^MemAvailable:/ {print $2}' /proc/meminfo 2>/dev/null || echo 0)"
  by_mem=$((mem_kb / 1500000))
  ((by_mem < 1)) && by_mem=1
  echo $((cores < by_mem ? cores : by_mem))
}

# ff_configure <build-dir> <build-type> [extra cmake args...]
# Uses Ninja when available (unless the build dir was already configured with another
# generator) and ccache when installed.
ff_configure() {
  local build_dir="$1" build_type="$2"
  shift 2
  local args=(-S "$ff_root" -B "$build_dir" -DCMAKE_BUILD_TYPE="$build_type")
  if [[ ! -f "$build_dir/CMakeCache.txt" ]] && command -v ninja >/dev/null 2>&1; then
    args+=(-G Ninja)
  fi
  if command -v ccache >/dev/null 2>&1; then
    args+=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  fi
  echo "+ cmake ${args[*]} $*"
  cmake "${args[@]}" "$@"
}
