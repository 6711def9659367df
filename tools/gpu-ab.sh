#!/bin/sh
# tools/gpu-ab.sh BEFORE_DIR [REPS]: the GEMM and row-kernel benchmarks of an earlier build
# (BEFORE_DIR/gemm, BEFORE_DIR/membound: bench binaries of the commit measured against) and of
# this one (build-gpu/bench, or $TIRX_BUILD_DIR/bench), in one device call, interleaved
# (before, after, before, after) so that both see the same card in the same state. Each
# benchmark times its own anchor in the same process (cuBLAS, a device-to-device copy), so the
# ratios compare. Logs and CSV under $OUT; the geomeans and ratios printed last.
#
# Here:     sh tools/gpu-bundle.sh; copy the earlier build's bench/gemm and bench/membound
#           into BEFORE_DIR (a folder under build*/, which git ignores)
# Device:   run command "sh tools/gpu-ab.sh build-before" carry ["build-gpu", ".gpu-deps",
#           "build-before"]
set -u
before=${1:?usage: gpu-ab.sh BEFORE_DIR [REPS]}
reps=${2:-7}
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 2
after=${TIRX_BUILD_DIR:-build-gpu}/bench
out=${OUT:-$root/gpu-out}
mkdir -p "$out"
export LD_LIBRARY_PATH="$root/.gpu-deps:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

for b in gemm membound; do
  for side in before after; do
    if [ "$side" = before ]; then bin=$before/$b; else bin=$after/$b; fi
    [ -x "$bin" ] || { echo "gpu-ab: no $bin" >&2; continue; }
    "$bin" "$out/$b-$side.csv" "$reps" > "$out/$b-$side.log" 2>&1 || echo "$b $side: exit $?"
  done
done

for side in before after; do
  echo "== gemm $side"
  grep -E "geomean|wrong results" "$out/gemm-$side.log"
done
# membound: the ratio to a copy of each kernel and shape, before and after side by side.
if [ -f "$out/membound-before.csv" ] && [ -f "$out/membound-after.csv" ]; then
  echo "== membound ratio to a d2d copy: kernel rows width before after"
  awk -F, 'FNR == 1 { next }
           NR == FNR { b[$2 "," $4 "," $5] = $9; next }
           { k = $2 "," $4 "," $5; printf "%-12s %6s %6s %6.3f %6.3f\n", $2, $4, $5, b[k], $9 }' \
    "$out/membound-before.csv" "$out/membound-after.csv"
fi
