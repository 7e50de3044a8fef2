#!/usr/bin/env bash
# Compares two builds side by side in one run: the traced W1 and W3 benchmarks of ff_bench (and,
# with --replay, ff_bench_replay's traced and replayed ones) from BUILD_A and BUILD_B, run
# alternately (A B B A A B ...) for several rounds, so that the machine's drift and other load
# hit both alike. Prints each side's median over the rounds and the ratio B/A; B/A = 1.05
# means B is 5% slower.
#
#   bash bench/compare_builds.sh [options] BUILD_A BUILD_B [filter]
#
#   filter         Google Benchmark regex over benchmark names (default 'W1|W3')
#   --replay       also run ff_bench_replay (BM_W1_traced, BM_W1_replay, ...)
#   --rounds N     rounds, each running both builds once per binary (default 6)
#   --reps N       repetitions per run; a run's value is their median (default 3)
#   --min-time S   --benchmark_min_time of each repetition, in seconds (default 0.2)
#   --limit R      exit 1 when a benchmark's B/A (ratio of the medians) exceeds R, e.g. 1.05
#
# Each value is a benchmark's time per iteration (one call: W1 = 10 kernels, W3 = 100), in µs.
# The binaries check their results and steady state; a failing run stops the comparison.
# Both builds should be Release builds of the same benchmark code.
set -euo pipefail

usage() {
  sed -n '8,17p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

replay=0 rounds=6 reps=3 min_time=0.2 limit=""
positional=()
while (($#)); do
  case "$1" in
    --replay) replay=1 ;;
    --rounds) rounds="$2"; shift ;;
    --reps) reps="$2"; shift ;;
    --min-time) min_time="$2"; shift ;;
    --limit) limit="$2"; shift ;;
    -h | --help) usage ;;
    -*) echo "compare_builds: unknown option $1" >&2; usage ;;
    *) positional+=("$1") ;;
  esac
  shift
done
((${#positional[@]} >= 2 && ${#positional[@]} <= 3)) || usage
build_a="$(cd "${positional[0]}" && pwd)"
build_b="$(cd "${positional[1]}" && pwd)"
filter="${positional[2]:-W1|W3}"

if ! command -v jq >/dev/null 2>&1; then
  FF_EXTRA_PACKAGES=jq bash "$(dirname "${BASH_SOURCE[0]}")/../scripts/install-deps.sh"
fi

binaries=(ff_bench)
((replay)) && binaries+=(ff_bench_replay)
for dir in "$build_a" "$build_b"; do
  for bin in "${binaries[@]}"; do
    [[ -x "$dir/bench/$bin" ]] || {
      echo "compare_builds: $dir/bench/$bin is missing (build it: cmake --build $dir --target $bin)" >&2
      exit 1
    }
  done
done

# What a build was made from: the source tree's commit, "+dirty" if it had changes.
describe() {
  local src
  src="$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$1/CMakeCache.txt" 2>/dev/null || true)"
  if [[ -n "$src" ]] && git -C "$src" rev-parse --short HEAD >/dev/null 2>&1; then
    local dirty=""
    git -C "$src" diff --quiet HEAD 2>/dev/null || dirty="+dirty"
    echo "$(git -C "$src" rev-parse --short HEAD)$dirty, $(sed -n 's/^CMAKE_BUILD_TYPE:STRING=//p' "$1/CMakeCache.txt")"
  else
    echo "source unknown"
  fi
}

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
values="$work/values.tsv"  # side, round, benchmark, µs per iteration
: >"$values"

echo "A: $build_a ($(describe "$build_a"))"
echo "B: $build_b ($(describe "$build_b"))"
echo "filter '$filter', ${binaries[*]}; $rounds rounds (A B, then B A, ...), $reps repetitions x ${min_time}s per run"
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores"

run_one() {  # <side> <build dir> <round> <binary>
  local side="$1" dir="$2" round="$3" bin="$4" json="$work/$1-$3-$4.json"
  if ! OMP_WAIT_POLICY=passive "$dir/bench/$bin" --benchmark_filter="$filter" \
    --benchmark_repetitions="$reps" --benchmark_min_time="$min_time" \
    --benchmark_report_aggregates_only=true --benchmark_out="$json" \
    --benchmark_out_format=json >"$work/$side-$round-$bin.txt" 2>&1; then
    cat "$work/$side-$round-$bin.txt" >&2
    echo "compare_builds: $dir/bench/$bin failed (round $round); output above" >&2
    exit 1
  fi
  # The median aggregate of each benchmark, its real (or manual) time per iteration in µs; the
  # name without the suffixes that say how it was timed or repeated (they may differ between
  # versions of a benchmark).
  # Without repetitions there is no median: the single run is taken then.
  jq -r --arg side "$side" --arg round "$round" '
    .benchmarks
    | map(select(.run_type == "iteration" or .aggregate_name == "median")
          | .base = (.run_name | gsub("/(repeats:[0-9]+|manual_time|real_time)"; "")))
    | group_by(.base)[]
    | (map(select(.run_type == "aggregate")) + .)[0]
    | (if .time_unit == "ns" then 1e-3 elif .time_unit == "ms" then 1e3
       elif .time_unit == "s" then 1e6 else 1 end) as $to_us
    | [$side, $round, .base, (.real_time * $to_us)] | @tsv' "$json" >>"$values"
}

for ((round = 0; round < rounds; ++round)); do
  for bin in "${binaries[@]}"; do
    if ((round % 2 == 0)); then
      run_one A "$build_a" "$round" "$bin"
      run_one B "$build_b" "$round" "$bin"
    else
      run_one B "$build_b" "$round" "$bin"
      run_one A "$build_a" "$round" "$bin"
    fi
  done
  printf 'round %d/%d done\n' $((round + 1)) "$rounds"
done

[[ -s "$values" ]] || {
  echo "compare_builds: no benchmark matched '$filter'" >&2
  exit 1
}

echo
awk -F'\t' -v limit="$limit" '
  function median(list,    a, n, i, j, t) {
    n = split(list, a, " ")
    for (i = 2; i <= n; ++i)  # insertion sort: a handful of values
      for (j = i; j > 1 && a[j - 1] + 0 > a[j] + 0; --j) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
  }
  {
    key = $3 SUBSEP $2
    v[$1, key] = $4
    if (!($3 in seen)) { seen[$3] = 1; order[++n_names] = $3 }
    rounds[$2] = 1
  }
  END {
    printf "%-26s %12s %12s %8s   %s\n", "benchmark (us/call)", "A median", "B median", "B/A", \
      "per-round B/A: median (min .. max)"
    over = 0
    for (i = 1; i <= n_names; ++i) {
      name = order[i]; la = ""; lb = ""; lr = ""; lo = 1e300; hi = 0; pairs = 0
      for (r in rounds) {
        if (!(("A", name SUBSEP r) in v) || !(("B", name SUBSEP r) in v)) continue
        a = v["A", name SUBSEP r]; b = v["B", name SUBSEP r]
        la = la " " a; lb = lb " " b; lr = lr " " b / a; ++pairs
        if (b / a < lo) lo = b / a
        if (b / a > hi) hi = b / a
      }
      if (pairs == 0) {
        printf "%-26s (ran in one build only)\n", name
        continue
      }
      ma = median(la); mb = median(lb); ratio = mb / ma
      verdict = ""
      if (limit != "" && ratio > limit + 0) { verdict = "  OVER " limit; over = 1 }
      printf "%-26s %12.3f %12.3f %8.3f   %.3f (%.3f .. %.3f)%s\n", name, ma, mb, ratio, \
        median(lr), lo, hi, verdict
    }
    exit over
  }' "$values" || {
  echo "compare_builds: B is slower than A by more than the limit ($limit)" >&2
  exit 1
}
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg) (timings on a busy machine are noisy: compare the per-round spread)"
