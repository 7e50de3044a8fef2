#!/usr/bin/env bash
# Builds a libFuzzer target with clang (ASan + UBSan + coverage, in build-fuzz/) and fuzzes it
# for a while from a seed corpus:
#   FF_FUZZ_TARGET=kernel_ir (default)  the kernel IR parser, validator and code generator;
#   FF_FUZZ_TARGET=recording_file       recording files: parse, validate, plan (the run fails
#                                       if no input reached the ops).
#
#   bash scripts/fuzz.sh [seconds=300] [libFuzzer flags...]
#
# Environment: FF_FUZZ_COMPILE=0 skips compiling valid kernels (kernel_ir only: parser and
# validator, ~50x more inputs per second). Crashes land in build-fuzz/fuzz-<target>/artifacts/;
# replay one with `build-fuzz/tests/ff_fuzz_<target> <file>`.
set -euo pipefail
# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

FF_EXTRA_PACKAGES="clang libclang-rt-14-dev" bash "$ff_root/scripts/install-deps.sh"
seconds="${1:-300}"
shift || true
build_dir="$ff_root/build-fuzz"
# -O1 -g1 as in CI's sanitizer leg (ASan's recommended level; line tables are all a report
# needs): about half the compile time of -O2 -g, which CI pays on every run.
CC=clang CXX=clang++ ff_configure "$build_dir" RelWithDebInfo -DFF_FUZZ=ON \
  -DFF_SANITIZE=address,undefined -DFF_BUILD_BENCH=OFF -DFF_BUILD_EXAMPLES=OFF \
  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG" "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG"
target="${FF_FUZZ_TARGET:-kernel_ir}"
case "$target" in
  kernel_ir) corpus_tool=ff_fuzz_kernel_ir_corpus ;;
  recording_file) corpus_tool=ff_test_make_recordings ;;
  *)
    echo "fuzz.sh: unknown FF_FUZZ_TARGET '$target' (kernel_ir, recording_file)" >&2
    exit 2
    ;;
esac
cmake --build "$build_dir" -j "$(ff_jobs)" --target "ff_fuzz_$target" "$corpus_tool"
FF_CACHE_DIR=off FF_FUZZ_CORPUS_TOOL="$build_dir/tests/$corpus_tool" \
  bash "$ff_root/tests/fuzz/run_fuzzer.sh" "$build_dir/tests/ff_fuzz_$target" \
  "$build_dir/fuzz-${target//_/-}" -max_total_time="$seconds" "$@"
