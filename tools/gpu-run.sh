#!/bin/sh
# tools/gpu-run.sh: everything one device call should do, in one go.
#
# Here (the CPU machine):   sh tools/gpu-bundle.sh (build-gpu/, .gpu-deps/)
# Then one device call:     run  command: "TIRX_BUILD_DIR=build-gpu sh tools/gpu-run.sh"
#                           carry: ["build-gpu", ".gpu-deps"]
#
# Runs the examples, the whole GPU suite and the benchmarks that exist in build/bench, writing
# logs and CSV files under $OUT (or ./gpu-out), and prints a short table last. Exits non-zero
# when an example or the GPU suite fails; benchmarks never change the exit status.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 2
bd=${TIRX_BUILD_DIR:-build}
out=${OUT:-$root/gpu-out}
mkdir -p "$out"
export LD_LIBRARY_PATH="$root/.gpu-deps:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
status=0

# At most 8 files come back from a device call: summary.txt, examples.log, gpu.log, bench.log
# and four CSVs: bench-membound.csv, bench-membound-torch.csv, bench-gemm.csv and
# bench-attention.csv (tirx, torch and the ratios combined). The small CSVs (launch_overhead,
# jit) and decode attention's lines go into bench.log.
nvidia-smi -L > "$out/summary.txt" 2>&1 || echo "nvidia-smi failed" >> "$out/summary.txt"

for ex in vector_add saxpy broadcast2d softmax layout_tour dist_allreduce gemm_example tp_linear; do
  [ -x "$bd/examples/$ex" ] || continue
  echo "==== $ex" >> "$out/examples.log"
  if "$bd/examples/$ex" >> "$out/examples.log" 2>&1; then r=ok; else r=FAIL; status=1; fi
  echo "example $ex: $r" >> "$out/summary.txt"
done

if "$bd/tests/gpu/test_gpu" --verbose > "$out/gpu.log" 2>&1; then r=ok; else r=FAIL; status=1; fi
echo "gpu suite: $r: $(grep 'Synthesis' "$out/gpu.log" | tail -1)" >> "$out/summary.txt"

for b in launch_overhead jit membound gemm; do
  [ -x "$bd/bench/$b" ] || continue
  echo "==== $b" >> "$out/bench.log"
  "$bd/bench/$b" "$out/bench-$b.csv" > "$out/bench-$b.tmp" 2>&1 || echo "bench $b: exit $?" >> "$out/summary.txt"
  cat "$out/bench-$b.tmp" >> "$out/bench.log"
  echo "bench $b:" >> "$out/summary.txt"
  tail -6 "$out/bench-$b.tmp" >> "$out/summary.txt"
  rm -f "$out/bench-$b.tmp"
  case $b in launch_overhead|jit) # into bench.log: their own files would pass the limit of 8
    if [ -f "$out/bench-$b.csv" ]; then
      echo "==== $b csv" >> "$out/bench.log"
      cat "$out/bench-$b.csv" >> "$out/bench.log"
      rm -f "$out/bench-$b.csv"
    fi ;;
  esac
done

# Decode attention over a paged KV cache and its torch SDPA side: CSV lines into bench.log
# (no file of their own: at most 8 files come back), a short tail in the summary.
if [ -x "$bd/bench/decode_attention" ]; then
  echo "==== decode_attention" >> "$out/bench.log"
  "$bd/bench/decode_attention" - > "$out/decode.tmp" 2>&1 || echo "bench decode_attention: exit $?" >> "$out/summary.txt"
  cat "$out/decode.tmp" >> "$out/bench.log"
  echo "bench decode_attention:" >> "$out/summary.txt"
  grep -v '^tirx' "$out/decode.tmp" | tail -30 >> "$out/summary.txt"
  rm -f "$out/decode.tmp"
  if python3 -c 'import torch' >/dev/null 2>&1; then
    echo "==== decode_attention_torch" >> "$out/bench.log"
    python3 bench/decode_attention_torch.py - >> "$out/bench.log" 2>&1 \
      || echo "decode_attention_torch: exit $?" >> "$out/summary.txt"
  fi
fi

# The torch side of bench/membound (eager and torch.compile), when python3 has torch.
if python3 -c 'import torch, triton' >/dev/null 2>&1 && [ -x "$bd/bench/membound" ]; then
  python3 bench/membound_torch.py "$out/bench-membound-torch.csv" >> "$out/bench.log" 2>&1 \
    || echo "membound_torch: exit $?" >> "$out/summary.txt"
  echo "bench membound_torch: $(wc -l < "$out/bench-membound-torch.csv" 2>/dev/null) lines" >> "$out/summary.txt"
fi

# bench/attention and its torch side (SDPA forced to cuDNN and to flash), joined by
# bench/attention_join.sh; one file comes back, bench-attention.csv: tirx's rows, torch's rows and
# the ratios, each part under its own header line. The geomeans also go to the summary.
if [ -x "$bd/bench/attention" ]; then
  echo "==== attention" >> "$out/bench.log"
  "$bd/bench/attention" "$out/attn-tirx.csv" > "$out/attn.tmp" 2>&1 || echo "bench attention: exit $?" >> "$out/summary.txt"
  cat "$out/attn.tmp" >> "$out/bench.log"
  echo "bench attention:" >> "$out/summary.txt"
  tail -3 "$out/attn.tmp" >> "$out/summary.txt"
  if python3 -c 'import torch' >/dev/null 2>&1; then
    echo "==== attention_torch" >> "$out/bench.log"
    python3 bench/attention_torch.py "$out/attn-torch.csv" >> "$out/bench.log" 2>&1 \
      || echo "attention_torch: exit $?" >> "$out/summary.txt"
  fi
  if [ -s "$out/attn-tirx.csv" ] && [ -s "$out/attn-torch.csv" ]; then
    echo "==== attention_join" >> "$out/bench.log"
    sh bench/attention_join.sh "$out/attn-tirx.csv" "$out/attn-torch.csv" "$out/attn-ratios.csv" \
      > "$out/attn.tmp" 2>&1 || echo "attention_join: exit $?" >> "$out/summary.txt"
    cat "$out/attn.tmp" >> "$out/bench.log"
    sed -n '/^geometric/,$p' "$out/attn.tmp" >> "$out/summary.txt"
  fi
  cat "$out/attn-tirx.csv" "$out/attn-torch.csv" "$out/attn-ratios.csv" > "$out/bench-attention.csv" 2>/dev/null
  rm -f "$out/attn-tirx.csv" "$out/attn-torch.csv" "$out/attn-ratios.csv" "$out/attn.tmp"
fi

cat "$out/summary.txt"
exit $status
