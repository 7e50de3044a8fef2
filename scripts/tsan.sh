#!/usr/bin/env bash
# ThreadSanitizer run of the tests that hand arrays, recordings and backends between threads
# (every test tagged [threads]): builds build-tsan/ (RelWithDebInfo, -fsanitize=thread) with
# only the test executables they live in, then runs them. Under TSan the tracer uses sequentially
# consistent fences on both sides of its thread handshake (TSan cannot see membarrier(2)).
#
#   bash scripts/tsan.sh
set -euo pipefail
# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

bash "$ff_root/scripts/install-deps.sh"
build_dir="${FF_TSAN_BUILD_DIR:-$ff_root/build-tsan}"
ff_configure "$build_dir" RelWithDebInfo -DFF_SANITIZE=thread -DFF_BUILD_BENCH=OFF \
  -DFF_BUILD_EXAMPLES=OFF "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG" \
  "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG" "$@"
cmake --build "$build_dir" -j "$(ff_jobs)" --target ff_tests_tracer ff_tests_record ff_tests_freeze
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1${TSAN_OPTIONS:+:$TSAN_OPTIONS}"
status=0
for t in ff_tests_tracer ff_tests_record ff_tests_freeze; do
  echo "+ $t [threads]"
  "$build_dir/tests/$t" "[threads]" || status=1
done
exit "$status"
