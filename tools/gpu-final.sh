#!/bin/sh
# tools/gpu-final.sh: one short device call for a session's last checks when device time is
# scarce: the whole GPU suite, bench/attention beside torch SDPA (cuDNN, flash) joined into
# ratios, bench/decode_attention beside torch, bench/membound's server rows (tirx only, against
# its device copy), and bench/gemm's bf16 decode rows at M = 1, 8, 64.
# Each step has its own time limit; logs under $OUT (at most 8 files come back).
# Run: TIRX_BUILD_DIR=build-gpu sh tools/gpu-final.sh, carry ["build-gpu", ".gpu-deps"].
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 2
bd=${TIRX_BUILD_DIR:-build}
out=${OUT:-$root/gpu-out}
mkdir -p "$out"
export LD_LIBRARY_PATH="$root/.gpu-deps:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export TIRX_CACHE_DIR=${TIRX_CACHE_DIR:-/tmp/tirx-final-cache}
timeout 170 "$bd/tests/gpu/test_gpu" --verbose -j3 > "$out/gpu.log" 2>&1
echo "gpu suite: rc $?: $(grep 'Synthesis' "$out/gpu.log" | tail -1)" > "$out/summary.txt"
grep -E '^\[FAIL\]' "$out/gpu.log" >> "$out/summary.txt"
timeout 100 "$bd/bench/attention" "$out/attn-tirx.csv" 5 > "$out/bench.log" 2>&1
if python3 -c 'import torch' >/dev/null 2>&1; then
  timeout 100 python3 bench/attention_torch.py "$out/attn-torch.csv" >> "$out/bench.log" 2>&1
  sh bench/attention_join.sh "$out/attn-tirx.csv" "$out/attn-torch.csv" "$out/attn-ratios.csv" \
    > "$out/attn-join.txt" 2>&1
fi
echo "==== decode_attention" >> "$out/bench.log"
timeout 60 "$bd/bench/decode_attention" - 3 >> "$out/bench.log" 2>&1
echo "==== decode_attention_torch" >> "$out/bench.log"
timeout 45 python3 bench/decode_attention_torch.py - >> "$out/bench.log" 2>&1
echo "==== membound server rows (norms at server widths and batch sizes, rope)" >> "$out/bench.log"
timeout 60 "$bd/bench/membound" /tmp/membound-server.csv 5 server >> "$out/bench.log" 2>&1
echo "==== gemm --decode-lite" >> "$out/bench.log"
timeout 90 "$bd/bench/gemm" "$out/gemm-decode.csv" 5 --decode-lite >> "$out/bench.log" 2>&1
cat "$out/summary.txt"; tail -30 "$out/attn-join.txt" 2>/dev/null
exit 0
