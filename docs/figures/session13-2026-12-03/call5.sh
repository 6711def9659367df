set -u
export LD_LIBRARY_PATH=$PWD/.gpu-deps:/usr/local/cuda/lib64
L=$OUT/jit5.txt
OLDW=$PWD/build-before/tirx-compile-worker NEWW=$PWD/build-gpu/tirx-compile-worker
for r in 1 2; do
  for cfg in "A build-before/bench/jit $OLDW" "B build-before/bench/jit $NEWW" "C build-gpu/bench/jit $NEWW" "D build-gpu/bench/jit $OLDW"; do
    set -- $cfg
    out=$(TIRX_COMPILE_WORKER=$3 timeout 40 $2 --only d --rounds 3 2>&1)
    echo "$r $1 $(echo "$out" | grep 'one at a time  ' | tail -1 | tr -s ' ') | $(echo "$out" | grep 'pool running' | tail -1 | tr -s ' ')" >> $L
  done
done
cat $L
