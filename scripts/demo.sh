#!/usr/bin/env bash
# Installs the dependencies, builds the demo (Release, in build/) and runs it.
# Works on its own from a fresh clone. Arguments are passed to the demo (try --help).
set -euo pipefail
# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

bash "$ff_root/scripts/install-deps.sh"

build_dir="${FF_BUILD_DIR:-$ff_root/build}"
ff_configure "$build_dir" Release
cmake --build "$build_dir" -j "$(ff_jobs)" --target ff_demo

echo "+ $build_dir/examples/ff_demo $*"
"$build_dir/examples/ff_demo" "$@"
