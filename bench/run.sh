#!/usr/bin/env bash
# Builds the benchmarks (Release) and runs them all (ff_bench: W1 W3 W2 traced, W2's hand loop
# and copy loop; ff_bench_replay: the same replayed; ff_bench_coldstart; ff_bench_loops:
# ff::while_loop on Mandelbrot against an OpenMP loop), then prints one summary. Every binary
# checks what it times and exits non-zero on a wrong result; this script stops at the first
# failure.
#
#   bash bench/run.sh [ff_bench flags...]     e.g. --benchmark_filter=W2
#
# Environment: FF_BUILD_DIR (default build/, (re)configured as a Release build),
# FF_BENCH_REPS (repetitions of ff_bench and ff_bench_replay, default 10), FF_COLDSTART_RUNS
# (default 11). OpenMP's idle threads sleep (OMP_WAIT_POLICY=passive, unless set), so they do
# not slow what runs after them. Results are also kept in $FF_BUILD_DIR/bench-results/
# (console text and JSON). To compare two builds side by side: bench/compare_builds.sh.
set -euo pipefail
# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/common.sh"

build_dir="${FF_BUILD_DIR:-$ff_root/build}"
bash "$ff_root/scripts/install-deps.sh"
# Benchmark figures are only meaningful for an optimised build.
ff_configure "$build_dir" Release -DFF_BUILD_BENCH=ON
cmake --build "$build_dir" -j "$(ff_jobs)" --target ff_bench ff_bench_coldstart ff_bench_replay \
  ff_bench_loops

export OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-passive}"
results="$build_dir/bench-results"
mkdir -p "$results"
stamp="$(date +%Y%m%d-%H%M%S)"

echo "== ff_bench (W1, W3, W2) =="
"$build_dir/bench/ff_bench" \
  --benchmark_repetitions="${FF_BENCH_REPS:-10}" --benchmark_report_aggregates_only=true \
  --benchmark_enable_random_interleaving=true \
  --benchmark_out="$results/ff_bench-$stamp.json" --benchmark_out_format=json \
  "$@" | tee "$results/ff_bench-$stamp.txt"

echo
echo "== ff_bench_replay (replay vs traced, recorder pass-through) =="
"$build_dir/bench/ff_bench_replay" \
  --benchmark_repetitions="${FF_BENCH_REPS:-10}" --benchmark_report_aggregates_only=true \
  --benchmark_enable_random_interleaving=true \
  --benchmark_out="$results/ff_bench_replay-$stamp.json" --benchmark_out_format=json |
  tee "$results/ff_bench_replay-$stamp.txt"

echo
echo "== ff_bench_coldstart =="
"$build_dir/bench/ff_bench_coldstart" --runs "${FF_COLDSTART_RUNS:-11}" |
  tee "$results/coldstart-$stamp.txt"

echo
echo "== ff_bench_loops (while_loop: Mandelbrot symbolic, frozen, OpenMP loop; evaluated; compile) =="
"$build_dir/bench/ff_bench_loops" \
  --benchmark_out="$results/ff_bench_loops-$stamp.json" --benchmark_out_format=json |
  tee "$results/ff_bench_loops-$stamp.txt"

echo
echo "== summary ($(nproc) cores, $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)) =="
printf '%-24s | %-44s | %-12s | %s\n' workload result target verdict
printf '%s\n' "-------------------------+----------------------------------------------+--------------+--------"
cat "$results/ff_bench-$stamp.txt" "$results/coldstart-$stamp.txt" |
  sed -n 's/^SUMMARY | //p'
echo
sed -n '/^replay summary/,$p' "$results/ff_bench_replay-$stamp.txt"
echo
sed -n '/^while_loop summary/,$p' "$results/ff_bench_loops-$stamp.txt"
echo "(raw results: $results/*-$stamp.*)"
