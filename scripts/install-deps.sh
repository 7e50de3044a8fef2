#!/usr/bin/env bash
# Installs the Debian 12 packages freezeframe needs to build, test and benchmark.
# Only missing packages are installed, and `apt-get update` runs only if something is missing,
# so a second run is a fast no-op. Needs root (or sudo) when something is missing.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config
  llvm-16-dev libzstd-dev clang
  libspdlog-dev libxxhash-dev
  catch2 libbenchmark-dev libcli11-dev nlohmann-json3-dev
  graphviz
  libopenmpi-dev openmpi-bin
)
# Extra packages on request, e.g. FF_EXTRA_PACKAGES=clang-format (CI's format check).
read -r -a extra <<<"${FF_EXTRA_PACKAGES:-}"
packages+=("${extra[@]}")

missing=()
for pkg in "${packages[@]}"; do
  status="$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)"
  if [[ "$status" != "install ok installed" ]]; then
    missing+=("$pkg")
  fi
done

if ((${#missing[@]} == 0)); then
  echo "install-deps: all ${#packages[@]} packages already installed"
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
sudo=()
if [[ "$(id -u)" != 0 ]]; then
  if command -v sudo >/dev/null 2>&1; then
    sudo=(sudo)
  else
    echo "install-deps: missing packages (${missing[*]}) and not root; no sudo found" >&2
    exit 1
  fi
fi

"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q
# Recommends stay on: clang's sanitizer/fuzzer runtimes (libclang-rt-14-dev) are one.
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}"
