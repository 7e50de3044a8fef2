#!/usr/bin/env bash
# clang-format (14, with the repository's .clang-format) over every C++ file git knows about.
#   bash scripts/format.sh           reformat in place
#   bash scripts/format.sh --check   list the files that need formatting; exit 1 if any
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

if ! command -v clang-format >/dev/null 2>&1; then
  echo "format.sh: clang-format not found (apt-get install clang-format)" >&2
  exit 2
fi
mapfile -t files < <(git ls-files --cached --others --exclude-standard -- '*.h' '*.cpp' |
  while read -r f; do [[ -f "$f" ]] && echo "$f"; done)

if [[ "${1:-}" != --check ]]; then
  ((${#files[@]} == 0)) || clang-format -i "${files[@]}"
  echo "format.sh: formatted ${#files[@]} files"
  exit 0
fi

bad=()
for f in "${files[@]}"; do
  clang-format --dry-run -Werror "$f" >/dev/null 2>&1 || bad+=("$f")
done
if ((${#bad[@]} > 0)); then
  echo "format.sh: ${#bad[@]} of ${#files[@]} files need clang-format:"
  printf '  %s\n' "${bad[@]}"
  echo "fix with: bash scripts/format.sh   (see a diff: clang-format --dry-run FILE)"
  exit 1
fi
echo "format.sh: ${#files[@]} files formatted correctly"
