#!/usr/bin/env bash
# ff::dist benchmarks (bench/dist_bench.cpp) in every configuration the comparison needs:
# the 1-float all_reduce latency on 2 ranks, and the distributed heat step at 2 ranks x 1
# thread against 1 rank x 2 threads on the same plate.
#
#   bash bench/dist_bench.sh [build-dir=build] [n=1024] [steps=100]
set -euo pipefail
build="${1:-build}"
n="${2:-1024}"
steps="${3:-100}"
bin="$build/bench/ff_bench_dist"
[[ -x "$bin" ]] || { echo "dist_bench.sh: $bin not built (MPI missing?)" >&2; exit 1; }
mpi=(mpirun --allow-run-as-root --oversubscribe)
"${mpi[@]}" -np 2 -x FF_THREADS=1 "$bin" all_reduce --calls 20000
# --bind-to none for the heat steps: mpirun binds each rank to one core by default, which would
# put both threads of the 1 rank x 2 threads run on one core.
"${mpi[@]}" --bind-to none -np 2 -x FF_THREADS=1 "$bin" heat --n "$n" --steps "$steps"
"${mpi[@]}" --bind-to none -np 1 -x FF_THREADS=2 "$bin" heat --n "$n" --steps "$steps"
"${mpi[@]}" -np 2 -x FF_THREADS=1 -x FF_CACHE_DIR=off "$bin" share --n "$n"
