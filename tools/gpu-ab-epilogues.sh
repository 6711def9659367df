#!/bin/sh
# tools/gpu-ab-epilogues.sh BEFORE_DIR [REPS]: the GEMM's fused epilogues before and after a
# change to them (issue 16, session 14: the chunked bias+SiLU / bias+GeLU epilogue that no
# longer spills), in one device call of at most 600 s:
#   1. bench/gemm of BEFORE_DIR/gemm and of this build (build-gpu/bench/gemm, or
#      $TIRX_BUILD_DIR/bench/gemm), before then after, on the rows TIRX_BENCH_GEMM_FUSED=both
#      selects at M = 8192: bias+SiLU and bias+GeLU in both dtypes on three (N, K), each
#      against cuBLAS followed by a separate bias+activation kernel, and the plain rows (8
#      shapes, both dtypes) as the control: their kernels are byte-identical on both sides, so
#      their before/after spread is the run's noise. No decode rows (TIRX_BENCH_GEMM_MS=0: no
#      M matches; their kernels are byte-identical too);
#   2. this build's GEMM GPU tests against float64: test_mma.c's gemm/* (every family, decode
#      shapes, the fused epilogues, fused_epilogues_wide_tiles: the widest tiles on 4 SMs) and
#      test_gpu.c's gpu/ops_gemm;
#   3. a second round of 1 while time is left.
# BEFORE_DIR/gemm must know TIRX_BENCH_GEMM_FUSED: bench/gemm built at bfcf9bb (bench only: the
# library is main's 745c114) or later; an older one runs its own three bf16 bias+SiLU rows.
# Each row's ratio is to cuBLAS in the same process, so the sides compare by ratio as well as
# by time.
#
# Here:     sh tools/gpu-bundle.sh (build-gpu/, .gpu-deps/); bench/gemm of the before side
#           copied to build-before/gemm (a folder under build*/, which git ignores)
# Device:   run command "sh tools/gpu-ab-epilogues.sh build-before" carry ["build-gpu",
#           ".gpu-deps", "build-before"]
# Prints each step's status, each side's geomeans and a row-by-row table of the tirx times
# (before, after, after / before: round 1, and round 2 where it ran); logs and CSVs under $OUT.
set -u
before=${1:?usage: gpu-ab-epilogues.sh BEFORE_DIR [REPS]}
reps=${2:-9}
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 2
bd=${TIRX_BUILD_DIR:-build-gpu}
out=${OUT:-$root/gpu-out}
mkdir -p "$out"
export LD_LIBRARY_PATH="$root/.gpu-deps:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export TIRX_CACHE_DIR=/tmp/tirx-ab-cache
t0=$(date +%s)
L=$out/summary.txt
: > "$L"

bench_round() { # $1: the round
  for side in before after; do
    bin=$before/gemm
    [ "$side" = after ] && bin=$bd/bench/gemm
    s=$(date +%s)
    TIRX_BENCH_GEMM_FUSED=both TIRX_BENCH_GEMM_MS=0 timeout 170 "$bin" \
      "$out/gemm-$side-$1.csv" "$reps" > "$out/gemm-$side-$1.log" 2>&1
    echo "gemm $side round $1 rc $? $(( $(date +%s) - s )) s" >> "$L"
  done
}

bench_round 1
s=$(date +%s)
timeout 150 "$bd/tests/gpu/test_gpu" --verbose -j4 --filter 'gemm/*' > "$out/gpu-gemm.log" 2>&1
echo "gemm/* rc $? $(grep Synthesis "$out/gpu-gemm.log" | tail -1) $(( $(date +%s) - s )) s" >> "$L"
s=$(date +%s)
timeout 60 "$bd/tests/gpu/test_gpu" --verbose --filter 'gpu/ops_gemm' > "$out/gpu-ops.log" 2>&1
echo "gpu/ops_gemm rc $? $(grep Synthesis "$out/gpu-ops.log" | tail -1) $(( $(date +%s) - s )) s" >> "$L"
grep -hE '^\[FAIL\]|wrong' "$out/gpu-gemm.log" "$out/gpu-ops.log" | head -20 >> "$L"
[ $(( $(date +%s) - t0 )) -lt 380 ] && bench_round 2

for f in "$out"/gemm-*-*.log; do
  echo "== $(basename "$f" .log)" >> "$L"
  grep -E "geomean|wrong results|WRONG|^  gemm_|ptxas -v: [0-9]+ bytes stack" "$f" >> "$L"
done
# Row by row: tirx_us before and after, and their ratio, per round.
for r in 1 2; do
  [ -f "$out/gemm-before-$r.csv" ] && [ -f "$out/gemm-after-$r.csv" ] || continue
  echo "== round $r, tirx_us per row: case dtype M N K path(after) before after after/before" >> "$L"
  awk -F, 'FNR == 1 { next }
           NR == FNR { b[$1 "," $2 "," $3 "," $4 "," $5] = $7; next }
           { k = $1 "," $2 "," $3 "," $4 "," $5
             if (k in b) printf "%-9s %-4s %5s %6s %6s %-20s %9.1f %9.1f %6.3f\n", $1, $2, $3,
                                $4, $5, $6, b[k], $7, $7 / b[k] }' \
    "$out/gemm-before-$r.csv" "$out/gemm-after-$r.csv" >> "$L"
done
echo "total $(( $(date +%s) - t0 )) s" >> "$L"
cat "$L"
