#!/bin/sh
# tools/gpu-bundle.sh: a slim copy of build/ for a device call (the device tool carries at most
# 64 MiB): build-gpu/ without object files, meson's state or debug information, and the shared
# libraries the binaries need beside it in .gpu-deps/. Then: run with carry
# ["build-gpu", ".gpu-deps"] and TIRX_BUILD_DIR=build-gpu sh tools/gpu-run.sh (or the binaries
# under build-gpu/ directly).
set -eu
cd "$(dirname "$0")/.."
ninja -C build >/dev/null
rm -rf build-gpu .gpu-deps
cp -a build build-gpu
find build-gpu -name '*.p' -type d -prune -exec rm -rf {} +
rm -rf build-gpu/meson-*
find build-gpu -type f \( -perm -u+x -o -name '*.so*' -o -name '*.a' \) \
  -exec sh -c 'file "$1" | grep -q ELF && strip --strip-debug "$1"' _ {} \;
sh ../shared/gpu/bundle-deps .gpu-deps build >/dev/null
du -sh build-gpu .gpu-deps
