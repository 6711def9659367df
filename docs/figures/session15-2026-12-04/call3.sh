# Session 15, call 3: the whole GPU suite on the final tree (the row kernels' cache hints, the
# fused-epilogue bias release, gemm_paths in eight tests), then bench/membound before (21af9d2's
# binary, build-before/membound) and after, interleaved, classic and server rows, and torch's
# rows in the same call (do_bench and loop10 timing).
set -u
export LD_LIBRARY_PATH=$PWD/.gpu-deps:/usr/local/cuda/lib64
export TIRX_CACHE_DIR=/tmp/cf
L=$OUT/log.txt
B=$OUT/b
mkdir -p $B
t0=$(date +%s)
left() { echo $(( $1 - ($(date +%s) - t0) )); }
s=$(date +%s)
timeout 300 build-gpu/tests/gpu/test_gpu --verbose -j8 > $OUT/gpu-suite.log 2>&1
echo "suite rc $? $(grep Synthesis $OUT/gpu-suite.log | tail -1) $(( $(date +%s) - s )) s" >> $L
grep -E '^\[FAIL\]|CRASH' $OUT/gpu-suite.log | head -20 >> $L
for n in 1 2; do
  for side in before after; do
    bin=build-before/membound; [ $side = after ] && bin=build-gpu/bench/membound
    s=$(date +%s)
    timeout 40 $bin $B/classic-$side-$n.csv 15 classic > $B/classic-$side-$n.log 2>&1
    echo "classic $side $n rc $? $(( $(date +%s) - s )) s" >> $L
  done
done
for side in before after; do
  [ $(left 400) -lt 0 ] && break
  bin=build-before/membound; [ $side = after ] && bin=build-gpu/bench/membound
  s=$(date +%s)
  timeout $(left 420) $bin $B/server-$side.csv 15 server > $B/server-$side.log 2>&1
  echo "server $side rc $? $(( $(date +%s) - s )) s" >> $L
done
s=$(date +%s)
[ $(left 440) -gt 30 ] && TIRX_BENCH_TORCH_TIMING=both timeout $(left 480) python3 bench/membound_torch.py $B/torch.csv all > $B/torch.log 2>&1
echo "torch rc $? $(( $(date +%s) - s )) s" >> $L
echo "total $(( $(date +%s) - t0 )) s" >> $L
cd $OUT && tar czf b.tgz b && rm -rf b; cat $L
