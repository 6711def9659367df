# Session 14, call 3: h-d256 merged (2b762db): its GPU tests, then D = 256 beside torch SDPA;
# then the small-M GEMM questions of call 2 with forced paths and clusters (plan unchanged).
set -u
export LD_LIBRARY_PATH=$PWD/.gpu-deps:/usr/local/cuda/lib64
export TIRX_CACHE_DIR=/tmp/cf
L=$OUT/log.txt
t0=$(date +%s)
s=$(date +%s)
timeout 120 build-gpu/tests/gpu/test_gpu --verbose -j4 --filter 'gpu_attention*/d256*' > $OUT/d256-gpu.log 2>&1
echo "d256 gpu rc $? $(grep Synthesis $OUT/d256-gpu.log | tail -1) $(( $(date +%s) - s )) s" >> $L
grep -E '^\[FAIL\]|CRASH|Assertion' $OUT/d256-gpu.log | head -20 >> $L
s=$(date +%s); TIRX_BENCH_ATTN_D=256 timeout 90 build-gpu/bench/attention $OUT/a256.csv 3 > $OUT/a256.log 2>&1; echo "bench rc $? $(( $(date +%s) - s )) s" >> $L
s=$(date +%s); TIRX_BENCH_ATTN_D=256 timeout 90 python3 bench/attention_torch.py $OUT/t256.csv 20 > $OUT/t256.log 2>&1; echo "torch rc $? $(( $(date +%s) - s )) s" >> $L
sh bench/attention_join.sh $OUT/a256.csv $OUT/t256.csv $OUT/r256.csv > $OUT/r256.txt 2>&1
grep geomean $OUT/r256.csv >> $L
G=$OUT/gemm-sweep.txt
for sh in 4,4096,4096 4,6144,4096 4,4096,14336; do
  for p in gemv wgmma; do
    [ $(( $(date +%s) - t0 )) -gt 520 ] && break
    TIRX_BENCH_GEMM_PATH=$p TIRX_BENCH_GEMM_ONLY=$sh timeout 30 build-gpu/bench/gemm - 10 2>&1 | grep '^decode' | sed "s/^/$p /" >> $G
  done
done
for sh in 64,4096,4096 8,4096,4096 32,4096,4096 16,4096,4096 64,4096,14336 8,4096,14336; do
  for c in 1x1 1x2 2x1 1x1; do
    [ $(( $(date +%s) - t0 )) -gt 540 ] && break
    TIRX_BENCH_GEMM_CLUSTER=$c TIRX_BENCH_GEMM_ONLY=$sh timeout 30 build-gpu/bench/gemm - 10 2>&1 | grep '^decode' | sed "s/^/c$c /" >> $G
  done
done
echo "total $(( $(date +%s) - t0 )) s" >> $L
cat $L; cat $OUT/r256.csv; cut -c1-110 $G
