#!/usr/bin/env bash
# ctest's command for an ONE_PROCESS group (tests/CMakeLists.txt): runs the tests of a gtest
# binary that one filter selects, in one process. Exit status: 0 when they passed, 77 (the
# group's SKIP_RETURN_CODE) when every one of them was skipped, 1 when one failed or when the
# filter selected no test at all.
set -uo pipefail
if [ $# -ne 2 ]; then
  echo "usage: $0 GTEST_BINARY FILTER" >&2
  exit 2
fi
binary=$1 filter=$2
log=$(mktemp)
trap 'rm -f "$log"' EXIT
"$binary" --gtest_filter="$filter" 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
if [ "$rc" -ne 0 ]; then
  echo "run_one_process: $binary exited with status $rc" >&2
  exit 1
fi
if grep -q '^\[==========\] 0 tests from' "$log"; then
  echo "run_one_process: the filter '$filter' selects no test of $binary" >&2
  exit 1
fi
if grep -q '^\[  PASSED  \] 0 tests\.' "$log"; then
  exit 77  # nothing failed and nothing passed: every selected test was skipped
fi
exit 0
