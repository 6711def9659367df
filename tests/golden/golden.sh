#!/bin/sh
# tests/golden/golden.sh check|update [BUILD_DIR]
#
# The whole golden test: runs the unit suite once with TIRX_GOLDEN_RECORD set (every kernel a
# unit test builds is recorded as unit.<suite>.<test>.<n>: tests/unit/golden_capture.c), then
# compares those and the cases of tests/golden/cases.c with tests/golden/expected/ byte for
# byte (check), or rewrites expected/ and lists what changed (update). The unit suite's own
# verdict is the unit suite's business; a failing test there shows here as missing cases.
set -u
mode=${1:-check}
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${2:-$root/build}
case "$mode" in check|update) ;; *) echo "usage: golden.sh check|update [BUILD_DIR]" >&2; exit 2 ;; esac
rec=$(mktemp -d "${TMPDIR:-/tmp}/tirx-golden.XXXXXX") || exit 1
trap 'rm -rf "$rec"' EXIT INT TERM
TIRX_GOLDEN_RECORD=$rec "$build/tests/unit/test_unit" --jobs=2 >"$rec.log" 2>&1 ||
  echo "golden.sh: the unit suite failed while recording (see meson test --suite unit)"
rm -f "$rec.log"
"$build/tests/golden/golden" "$mode" --unit "$rec"
