#!/usr/bin/env bash
# Runs the CUDA backend's GPU checks on a machine with an NVIDIA GPU and only its driver (no
# compiler, no packages, no network), from the binaries tests/gpu/build.sh staged in
# build-gpu/stage, and prints one summary. Finishes within 5 minutes (each step has a limit).
#
#   bash tests/gpu/run.sh        (from the repository root; FF_GPU_STAGE overrides the stage)
#
# A dry run without a GPU, on the simulated driver (slow: the PTX is interpreted):
#   FF_CUDA_DRIVER_LIBRARY=build/tests/libff_cuda_sim.so FF_GPU_TEST_LIMIT=1200 \
#   FF_GPU_BENCH_ARGS=--quick bash tests/gpu/run.sh
#
# What it checks:
#   1. ff_tests_cuda with FF_REQUIRE_CUDA=1 (a missing device fails instead of skipping):
#      - the backend through the Backend interface: memory, staged copies, fills, reduce /
#        prefix_sum / compress, kernel cache, errors, threads;
#      - every kernel of the IR corpus against the PTX reference interpreter, bit for bit
#        (the math routines included, docs/math.md: only correctly rounded instructions are
#        used; the scatter kinds' atomics and compare-and-swap loops too, whose corpus
#        results do not depend on the order of the lanes);
#      - the array test corpus on "cuda" against the scalar references;
#      - the recording corpus recorded and replayed on "cuda" (as CUDA graphs) against
#        traced runs, with the graph and op-by-op paths;
#      - recordings made on LLVM (exported files in data/) replayed on CUDA within the ulp
#        bounds, when the build could save recordings;
#   2. ff_cuda_bench: launch cost of 100 kernels x 1,024 elements (traced, op-by-op replay,
#      graph replay; target graph <= 0.5x op by op) and a bandwidth-bound kernel at 256M floats
#      against the device-to-device copy (target >= 80%).
# Exit status: 0 when every test passed and every benchmark result was correct.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
stage="${FF_GPU_STAGE:-$root/build-gpu/stage}"
logs="${FF_GPU_LOGS:-$(mktemp -d)}"
start=$SECONDS
status=0

if [[ ! -x "$stage/bin/ff_tests_cuda" ]]; then
  echo "run.sh: $stage/bin/ff_tests_cuda not found: run tests/gpu/build.sh on a build machine" \
    "and carry build-gpu/stage" >&2
  exit 2
fi

echo "== machine"
(command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total \
  --format=csv,noheader) || echo "(no nvidia-smi)"
cat "$stage/manifest.txt" 2>/dev/null | head -n 2

export FF_REQUIRE_CUDA=1
export FF_CUDA_CROSS_DATA="$stage/data"
export FF_LOG_LEVEL="${FF_LOG_LEVEL:-warn}"

test_limit="${FF_GPU_TEST_LIMIT:-210}"    # seconds; raised for dry runs on the simulated driver
bench_limit="${FF_GPU_BENCH_LIMIT:-75}"
echo "== tests (limit $test_limit s)"
timeout -k 10 "$test_limit" "$stage/bin/ff_tests_cuda" -r compact >"$logs/tests.log" 2>&1
tests_rc=$?
tail -n 25 "$logs/tests.log"
((tests_rc == 0)) || status=1

echo "== benchmarks (limit $bench_limit s)"
timeout -k 10 "$bench_limit" "$stage/bin/ff_cuda_bench" ${FF_GPU_BENCH_ARGS:-} >"$logs/bench.log" 2>&1
bench_rc=$?
cat "$logs/bench.log"
((bench_rc == 0)) || status=1

echo
echo "================ summary ================"
summary_line="$(grep -E '^(Passed|Failed) ' "$logs/tests.log" | tail -n 1)"
if [[ -z "$summary_line" ]]; then
  summary_line="$(grep -E 'test cases' "$logs/tests.log" | tail -n 1)"
fi
printf '%-12s exit %-3s %s\n' "tests" "$tests_rc" "${summary_line:-(no summary: crashed or timed out)}"
skips="$(grep -c '^skipped:' "$logs/tests.log" || true)"
((skips > 0)) && printf '%-12s %s\n' "skipped" "$(grep '^skipped:' "$logs/tests.log" | sort | uniq -c)"
grep -E '^(FAILED|.*: FAILED:)' "$logs/tests.log" | head -n 20
printf '%-12s exit %-3s %s\n' "benchmarks" "$bench_rc" "$(grep '^BENCH' "$logs/bench.log" || echo '(no result)')"
grep -E 'target' "$logs/bench.log" | sed 's/^/             /'
echo "logs in $logs; $((SECONDS - start)) s"
exit $status
