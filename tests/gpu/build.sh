#!/usr/bin/env bash
# Builds what tests/gpu/run.sh needs on a GPU machine that has only the NVIDIA driver, on a
# machine like the CI one (Debian packages, no GPU), into build-gpu/stage/:
#   bin/ff_tests_cuda   the GPU tests (FF_CUDA_ONLY: no LLVM; libstdc++, xxHash static,
#                       spdlog/fmt header-only; glibc dynamic so dlopen("libcuda.so.1") works)
#   bin/ff_cuda_bench   the GPU benchmarks
#   data/               recordings made on the LLVM backend and their inputs and outputs
#                       (when this build can save recordings: ff::Recording::save)
#   manifest.txt        what was built, from which commit
# Then checks that the binaries need nothing beyond glibc and that the working tree plus the
# stage fit the device tool's 64 MiB.
#
#   bash tests/gpu/build.sh            (FF_JOBS, default 2; FF_FULL_BUILD_DIR, default build)
#
# On the GPU machine: bash tests/gpu/run.sh   (carry build-gpu/stage)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
jobs="${FF_JOBS:-2}"
stage="$root/build-gpu/stage"
cuda_only="$root/build-gpu/cuda-only"
full="${FF_FULL_BUILD_DIR:-$root/build}"
launcher=()
if command -v ccache >/dev/null 2>&1; then
  launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
generator=()
if [[ ! -f "$cuda_only/CMakeCache.txt" ]] && command -v ninja >/dev/null 2>&1; then
  generator=(-G Ninja)
fi

echo "== CUDA-only build in $cuda_only"
cmake -S "$root" -B "$cuda_only" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DFF_CUDA_ONLY=ON \
  -DFF_WERROR=ON "${launcher[@]}" >/dev/null
cmake --build "$cuda_only" -j "$jobs" --target ff_tests_cuda ff_cuda_bench

echo "== exporter (full build in $full)"
if [[ ! -f "$full/CMakeCache.txt" ]]; then
  cmake -S "$root" -B "$full" -DCMAKE_BUILD_TYPE=Release "${generator[@]}" "${launcher[@]}" \
    >/dev/null
fi
cmake --build "$full" -j "$jobs" --target ff_cuda_export_recordings

rm -rf "$stage"
mkdir -p "$stage/bin" "$stage/data"
cp "$cuda_only/tests/ff_tests_cuda" "$cuda_only/tests/ff_cuda_bench" "$stage/bin/"
strip --strip-debug "$stage/bin/"*
"$full/tests/ff_cuda_export_recordings" "$stage/data"

# Only glibc's libraries, the dynamic loader and libgcc_s may remain; report the newest glibc
# symbol version needed (2.34 expected: see cmake/FFCudaOnly.cmake).
glibc_needed=""
for b in "$stage/bin/"*; do
  extra="$(ldd "$b" | awk '{print $1}' |
    grep -Ev '^(linux-vdso\.so|libc\.so|libm\.so|libdl\.so|libpthread\.so|librt\.so|libgcc_s\.so|/lib64/ld-linux)' ||
    true)"
  if [[ -n "$extra" ]]; then
    echo "build.sh: $(basename "$b") needs more than glibc: $extra" >&2
    exit 1
  fi
  glibc_needed="$( (echo "$glibc_needed"; objdump -T "$b" | grep -o 'GLIBC_[0-9.]*') |
    sed 's/GLIBC_//' | sort -uV | tail -n 1)"
done
echo "== the binaries need glibc >= $glibc_needed"

{
  echo "commit $(git rev-parse HEAD 2>/dev/null || echo unknown)"
  echo "built $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(uname -m)"
  ls -l "$stage/bin"
  echo "needs glibc >= $glibc_needed, libgcc_s.so.1, libcuda.so.1 (at run time)"
  echo "data files: $(find "$stage/data" -type f | wc -l)"
} >"$stage/manifest.txt"

stage_kb=$(du -sk "$stage" | cut -f1)
tree_kb=$(git ls-files -z | xargs -0 du -ck 2>/dev/null | tail -n 1 | cut -f1)
total_mb=$(((stage_kb + tree_kb) / 1024))
echo "== stage: $((stage_kb / 1024)) MiB, tracked tree: $((tree_kb / 1024)) MiB, total ${total_mb} MiB"
if ((total_mb >= 64)); then
  echo "build.sh: the tree and the stage exceed 64 MiB" >&2
  exit 1
fi
cat "$stage/manifest.txt"
echo "== ready: on the GPU machine run  bash tests/gpu/run.sh  (carry build-gpu/stage)"
