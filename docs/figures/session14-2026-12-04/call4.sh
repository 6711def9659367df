# Session 14, call 4: the merged tree (h-d256, h-dec1, h-spill, the M = 3, 4 plan): the whole
# GPU suite, then before/after A/Bs in the same call: build-before/ holds bench/gemm and
# bench/decode_attention built at bfcf9bb (the library of 745c114, the bench of h-spill's first
# commit, which knows TIRX_BENCH_GEMM_FUSED).
set -u
export LD_LIBRARY_PATH=$PWD/.gpu-deps:/usr/local/cuda/lib64
export TIRX_CACHE_DIR=/tmp/cf
L=$OUT/log.txt
mkdir -p $OUT/b
t0=$(date +%s)
s=$(date +%s)
timeout 280 build-gpu/tests/gpu/test_gpu --verbose -j4 > $OUT/b/gpu.log 2>&1
echo "suite rc $? $(grep Synthesis $OUT/b/gpu.log | tail -1) $(( $(date +%s) - s )) s" >> $L
grep -E '^\[FAIL\]|CRASH' $OUT/b/gpu.log | head -20 >> $L
# the fused epilogues (and the plain M = 8192 rows, whose epilogue also changed)
for side in before after; do
  bin=build-before/gemm; [ $side = after ] && bin=build-gpu/bench/gemm
  s=$(date +%s)
  TIRX_BENCH_GEMM_FUSED=both TIRX_BENCH_GEMM_MS=0 timeout 120 $bin $OUT/b/gemm-$side.csv 9 > $OUT/b/gemm-$side.log 2>&1
  echo "gemm 8192 $side rc $? $(( $(date +%s) - s )) s" >> $L
  grep geomean $OUT/b/gemm-$side.log >> $L
done
# decode rows on the 64- and 128-row tiles (their epilogue changed too)
for side in before after; do
  [ $(( $(date +%s) - t0 )) -gt 470 ] && break
  bin=build-before/gemm; [ $side = after ] && bin=build-gpu/bench/gemm
  s=$(date +%s)
  TIRX_BENCH_GEMM_DECODE_ONLY=1 TIRX_BENCH_GEMM_MS=8,64,128 TIRX_BENCH_GEMM_DTYPE=bf16 timeout 60 $bin $OUT/b/gemmd-$side.csv 9 > $OUT/b/gemmd-$side.log 2>&1
  echo "gemm decode $side rc $? $(( $(date +%s) - s )) s" >> $L
done
# decode attention: before, after (dependent launches, 16-split combine), fused merge
for n in 1 2; do
  for side in before after fused; do
    [ $(( $(date +%s) - t0 )) -gt 560 ] && break
    bin=build-before/decode_attention; env=; [ $side != before ] && bin=build-gpu/bench/decode_attention
    [ $side = fused ] && env=TIRX_DECODE_COMBINE=fused
    s=$(date +%s)
    env $env timeout 40 $bin $OUT/b/dec-$side-$n.csv 5 > $OUT/b/dec-$side-$n.log 2>&1
    echo "dec $side $n rc $? $(( $(date +%s) - s )) s" >> $L
  done
done
echo "total $(( $(date +%s) - t0 )) s" >> $L
cd $OUT && tar czf b.tgz b && rm -rf b; cat $L
