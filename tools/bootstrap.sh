#!/bin/sh
# tools/bootstrap.sh main|test
#
# Sets up a fresh Debian 12 machine (run as root; the CUDA toolkit is expected at
# /usr/local/cuda, or set CUDA_ROOT), builds tirx with -Werror, then:
#   main  runs the examples: on a machine without a GPU they build their kernels, print the
#         generated CUDA of one, compile it with NVRTC and say that no GPU is present; on a
#         GPU they launch and verify against a CPU reference.
#   test  runs the test suites (CPU unit tests; GPU tests skip cleanly without a device).
set -eu

mode=${1:-}
case "$mode" in
  main|test) ;;
  *) echo "usage: tools/bootstrap.sh main|test" >&2; exit 2 ;;
esac

cd "$(dirname "$0")/.."
cuda_root=${CUDA_ROOT:-/usr/local/cuda}
build=${TIRX_BUILD_DIR:-build}

packages="gcc g++ meson ninja-build pkg-config libuv1-dev libxxhash-dev libcriterion-dev libdlpack-dev doxygen"
missing=""
for p in $packages; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
  echo "bootstrap: installing$missing"
  if [ "$(id -u)" -ne 0 ]; then
    echo "bootstrap: missing packages and not root; install them first:$missing" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  # shellcheck disable=SC2086
  apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi

if [ ! -f "$cuda_root/include/nvrtc.h" ]; then
  echo "bootstrap: no CUDA toolkit at $cuda_root (set CUDA_ROOT)" >&2
  exit 1
fi
export LD_LIBRARY_PATH="$cuda_root/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

if [ -f "$build/build.ninja" ]; then
  meson setup --reconfigure "$build" -Dwerror=true -Dcuda-root="$cuda_root" >/dev/null
else
  meson setup "$build" -Dwerror=true -Dcuda-root="$cuda_root" >/dev/null
fi
ninja -C "$build"

if [ "$mode" = main ]; then
  exec meson test -C "$build" --suite examples --print-errorlogs --verbose
else
  # The GPU suite first (it skips without a device), the golden tests, then the CPU suite,
  # whose Criterion summary is the last line printed.
  meson test -C "$build" --suite gpu --print-errorlogs --verbose
  # The docs: the README's snippets against the sources the build compiled
  # (tools/check_snippets.py), and the API reference with Doxygen, warnings as errors.
  meson test -C "$build" --suite docs --print-errorlogs --verbose
  # The golden tests: the generated CUDA of every kernel, byte for byte (tests/golden).
  meson test -C "$build" --suite golden --print-errorlogs --verbose
  exec meson test -C "$build" --suite unit --print-errorlogs --verbose
fi
