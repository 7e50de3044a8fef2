#!/usr/bin/env bash
# Regenerates tests/data/recording-<major>.<minor>.ffr, the golden recording file of the current
# format version (the "gather" sample of tests/support/sample_recordings.h). Run it only when
# the format version changes: the golden files of released versions stay as they are, and the
# format test must keep loading them.
#
#   bash scripts/make-golden.sh [build-dir=build]
set -euo pipefail
# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

build_dir="${1:-$ff_root/build}"
cmake --build "$build_dir" -j "$(ff_jobs)" --target ff_test_make_recordings
major="$(sed -n 's/^inline constexpr uint16_t kVersionMajor = \([0-9]*\);/\1/p' "$ff_root/recorder/format.h")"
minor="$(sed -n 's/^inline constexpr uint16_t kVersionMinor = \([0-9]*\);/\1/p' "$ff_root/recorder/format.h")"
out="$ff_root/tests/data/recording-$major.$minor.ffr"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
FF_CACHE_DIR=off "$build_dir/tests/ff_test_make_recordings" "$tmp"
cp "$tmp/gather.ffr" "$out"
echo "wrote $out"
