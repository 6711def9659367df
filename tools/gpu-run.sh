#!/bin/sh
# tools/gpu-run.sh: everything one device call should do, in one go.
#
# Here (the CPU machine):   ninja -C build && sh ../shared/gpu/bundle-deps .gpu-deps build
# Then one device call:     run  command: "sh tools/gpu-run.sh"   carry: ["build", ".gpu-deps"]
#
# Runs the examples, the whole GPU suite and the benchmarks that exist in build/bench, writing
# logs and CSV files under $OUT (or ./gpu-out), and prints a short table last. Exits non-zero
# when an example or the GPU suite fails; benchmarks never change the exit status.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 2
out=${OUT:-$root/gpu-out}
mkdir -p "$out"
export LD_LIBRARY_PATH="$root/.gpu-deps:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
status=0

nvidia-smi -L > "$out/device.txt" 2>&1 || echo "nvidia-smi failed" >> "$out/device.txt"

for ex in vector_add saxpy broadcast2d softmax layout_tour; do
  [ -x "build/examples/$ex" ] || continue
  if "build/examples/$ex" > "$out/example-$ex.log" 2>&1; then r=ok; else r=FAIL; status=1; fi
  echo "example $ex: $r" >> "$out/summary.txt"
done

if build/tests/gpu/test_gpu --verbose > "$out/gpu.log" 2>&1; then r=ok; else r=FAIL; status=1; fi
echo "gpu suite: $r: $(grep 'Synthesis' "$out/gpu.log" | tail -1)" >> "$out/summary.txt"

for b in launch_overhead jit membound; do
  [ -x "build/bench/$b" ] || continue
  "build/bench/$b" "$out/bench-$b.csv" > "$out/bench-$b.log" 2>&1 || echo "bench $b: exit $?" >> "$out/summary.txt"
  echo "bench $b: $(tail -3 "$out/bench-$b.log" | tr '\n' ' ')" >> "$out/summary.txt"
done

cat "$out/summary.txt"
exit $status
