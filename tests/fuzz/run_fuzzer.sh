#!/usr/bin/env bash
# Runs a libFuzzer target from a seed corpus kept in WORKDIR (written by the corpus tool in
# $FF_FUZZ_CORPUS_TOOL on first use); crashes are written to WORKDIR/artifacts/.
#
#   run_fuzzer.sh FUZZER WORKDIR [libFuzzer flags...]     e.g. -max_total_time=600
set -euo pipefail
fuzzer="$1" work="$2"
shift 2
mkdir -p "$work/corpus" "$work/artifacts"
if [[ -z "$(ls -A "$work/corpus")" && -n "${FF_FUZZ_CORPUS_TOOL:-}" ]]; then
  "$FF_FUZZ_CORPUS_TOOL" 0 --write-corpus "$work/corpus"
fi
exec "$fuzzer" -artifact_prefix="$work/artifacts/" -max_len=65536 "$@" "$work/corpus"
