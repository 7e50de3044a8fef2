#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (ASan + UBSan + coverage, in build-fuzz/) and fuzzes
# the kernel IR parser, validator and code generator for a while.
#
#   bash scripts/fuzz.sh [seconds=300] [libFuzzer flags...]
#
# Environment: FF_FUZZ_COMPILE=0 skips compiling valid kernels (parser and validator only,
# ~50x more inputs per second). Crashes land in build-fuzz/fuzz-kernel-ir/artifacts/; replay
# one with `build-fuzz/tests/ff_fuzz_kernel_ir <file>`.
set -euo pipefail
# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

FF_EXTRA_PACKAGES="clang libclang-rt-14-dev" bash "$ff_root/scripts/install-deps.sh"
seconds="${1:-300}"
shift || true
build_dir="$ff_root/build-fuzz"
CC=clang CXX=clang++ ff_configure "$build_dir" RelWithDebInfo -DFF_FUZZ=ON \
  -DFF_SANITIZE=address,undefined -DFF_BUILD_BENCH=OFF -DFF_BUILD_EXAMPLES=OFF
cmake --build "$build_dir" -j "$(ff_jobs)" --target ff_fuzz_kernel_ir ff_fuzz_kernel_ir_corpus
FF_FUZZ_CORPUS_TOOL="$build_dir/tests/ff_fuzz_kernel_ir_corpus" \
  bash "$ff_root/tests/fuzz/run_fuzzer.sh" "$build_dir/tests/ff_fuzz_kernel_ir" \
  "$build_dir/fuzz-kernel-ir" -max_total_time="$seconds" "$@"
