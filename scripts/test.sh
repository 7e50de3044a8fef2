#!/usr/bin/env bash
# Installs the dependencies, configures build/, builds everything and runs the test suite
# (every test except the `fuzz` label). Works on its own from a fresh clone.
#
#   bash scripts/test.sh [extra cmake args...]      e.g. -DFF_WERROR=ON
#
# Environment: FF_BUILD_DIR (default build), FF_BUILD_TYPE (default Release),
# FF_WERROR=ON (adds -DFF_WERROR=ON), FF_CTEST_EXCLUDE (ctest -LE regex, default fuzz),
# FF_JOBS (build jobs, default: cores, limited by memory), FF_TEST_JOBS (default 2),
# FF_TEST_TIMEOUT (seconds per test without its own TIMEOUT, default 180: a hang fails the
# test instead of stalling the run).
set -euo pipefail
# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

bash "$ff_root/scripts/install-deps.sh"

build_dir="${FF_BUILD_DIR:-$ff_root/build}"
extra=("$@")
if [[ -n "${FF_WERROR:-}" ]]; then
  extra+=(-DFF_WERROR="$FF_WERROR")
fi
ff_configure "$build_dir" "${FF_BUILD_TYPE:-Release}" "${extra[@]}"

jobs="$(ff_jobs)"
echo "+ cmake --build $build_dir -j $jobs"
cmake --build "$build_dir" -j "$jobs"

exclude="${FF_CTEST_EXCLUDE:-fuzz}"
ctest_args=(--test-dir "$build_dir" --output-on-failure -j "${FF_TEST_JOBS:-2}"
  --timeout "${FF_TEST_TIMEOUT:-180}" -LE "$exclude")
echo "+ ctest ${ctest_args[*]}"
ctest "${ctest_args[@]}"
