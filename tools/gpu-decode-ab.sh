#!/bin/sh
# tools/gpu-decode-ab.sh BEFORE_DIR [REPS]: decode attention before and after in one device
# call (docs/PERF-NOTES.md, "decode attention at B = 1: the launch gaps"): the GPU tests of
# decode (tests/gpu/test_decode.c) on this build, then bench/decode_attention of an earlier
# build (BEFORE_DIR/decode_attention) and of this one (build-gpu/bench, or $TIRX_BUILD_DIR),
# interleaved three times (before; after, the default; nopdl, TIRX_DECODE_PDL=0; fused,
# TIRX_DECODE_COMBINE=fused: the merge in the split kernel) so that all see the same card in
# the same state; every run is the whole bench (16 shapes, each also unsplit where the plan
# splits). Logs and CSVs under $OUT; printed last: per shape the median of each side's runs and
# each side's time over before's (below 1 is faster).
#
# Here:     sh tools/gpu-bundle.sh; build the earlier commit's bench (git worktree add
#           /tmp/before 745c114 && cd /tmp/before && meson setup build && ninja -C build
#           bench/decode_attention) and copy build/bench/decode_attention into build-before/
# Device:   run command "sh tools/gpu-decode-ab.sh build-before 5" carry ["build-gpu",
#           ".gpu-deps", "build-before"], timeout 600 (about 5 minutes: the tests 2-3, twelve
#           bench runs of 5-15 s, each side's first run compiles)
set -u
before=${1:?usage: gpu-decode-ab.sh BEFORE_DIR [REPS]}
reps=${2:-5}
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 2
build=${TIRX_BUILD_DIR:-build-gpu}
out=${OUT:-$root/gpu-out}
mkdir -p "$out"
export LD_LIBRARY_PATH="$root/.gpu-deps:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export TIRX_CACHE_DIR=${TIRX_CACHE_DIR:-/tmp/tirx-decode-ab}
log=$out/log.txt
: > "$log"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader >> "$log" 2>&1

s=$(date +%s)
timeout 300 "$build/tests/gpu/test_gpu" --filter 'gpu_decode/*' --verbose -j2 > "$out/gpu-decode.log" 2>&1
echo "gpu_decode rc $? $(grep Synthesis "$out/gpu-decode.log" | tail -1) $(( $(date +%s) - s )) s" >> "$log"
grep -E '^\[FAIL\]|CRASH|Assertion' "$out/gpu-decode.log" | head -20 >> "$log"

run() { # run SIDE N: one whole bench run
  side=$1 n=$2
  case $side in
    before) bin=$before/decode_attention; env= ;;
    after) bin=$build/bench/decode_attention; env= ;;
    nopdl) bin=$build/bench/decode_attention; env=TIRX_DECODE_PDL=0 ;;
    fused) bin=$build/bench/decode_attention; env=TIRX_DECODE_COMBINE=fused ;;
  esac
  [ -x "$bin" ] || { echo "no $bin" >> "$log"; return; }
  s=$(date +%s)
  env $env timeout 90 "$bin" "$out/dec-$side-$n.csv" "$reps" > "$out/dec-$side-$n.log" 2>&1
  echo "bench $side $n rc $? $(( $(date +%s) - s )) s $(head -1 "$out/dec-$side-$n.log")" >> "$log"
}
for n in 1 2 3; do
  for side in before after nopdl fused; do run "$side" "$n"; done
done

# per (impl, B, context): the median us of each side's runs, and the ratios to before
echo "impl B context splits | before after nopdl fused us | after nopdl fused / before" >> "$log"
for side in before after nopdl fused; do
  cat "$out"/dec-"$side"-*.csv 2>/dev/null | awk -F, -v s="$side" '$1 != "impl" { print s "," $0 }'
done | awk -F, '
  { k = $2 "," $3 "," $4; v[$1 "," k] = v[$1 "," k] " " $11; sp[k] = $10
    if (!(k in seen)) { seen[k] = 1; order[++n] = k } }
  function med(str,   a, m, i, j, t) {
    m = split(str, a, " "); if (!m) return 0
    for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
    return m % 2 ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2 }
  END {
    for (i = 1; i <= n; i++) {
      k = order[i]; b = med(v["before," k]); a = med(v["after," k]); p = med(v["nopdl," k])
      u = med(v["fused," k])
      split(k, f, ",")
      printf "%-12s %4s %6s %4s | %8.2f %8.2f %8.2f %8.2f | %6.3f %6.3f %6.3f\n", f[1], f[2],
             f[3], sp[k], b, a, p, u, (b > 0 ? a / b : 0), (b > 0 ? p / b : 0),
             (b > 0 ? u / b : 0) } }' >> "$log"
cat "$log"
