#!/bin/sh
# examples/run_all.sh [build-dir]: runs every example of the 'examples' meson suite, verbosely.
# On a machine without a GPU each example builds its kernel, compiles it with NVRTC and says
# that no GPU is present; on a GPU it launches and verifies. $TIRX_SEED replays a run.
set -eu
build=${1:-build}
exec meson test -C "$build" --suite examples --print-errorlogs --verbose
