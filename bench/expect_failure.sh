#!/usr/bin/env bash
# Runs a command that must fail, for the bench-smoke *.checks-fire tests: passes only when the
# command exits 1 and its output matches a pattern, so a crash or a failure for another reason
# does not count.
#
#   bash bench/expect_failure.sh <grep -E pattern> <command> [args...]
set -uo pipefail
pattern="$1"
shift
output="$("$@" 2>&1)"
status=$?
printf '%s\n' "$output"
if ((status != 1)); then
  echo "expect_failure: exit status $status, expected 1" >&2
  exit 1
fi
if ! grep -Eq -- "$pattern" <<<"$output"; then
  echo "expect_failure: no line matches '$pattern'" >&2
  exit 1
fi
echo "expect_failure: failed as it must"
