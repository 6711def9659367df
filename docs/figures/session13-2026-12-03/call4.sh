set -u
export LD_LIBRARY_PATH=$PWD/.gpu-deps:/usr/local/cuda/lib64
export TIRX_CACHE_DIR=/tmp/cf
L=$OUT/log.txt
mkdir -p $OUT/b
t0=$(date +%s)
s=$(date +%s)
timeout 280 build-gpu/tests/gpu/test_gpu --verbose -j4 > $OUT/b/gpu.log 2>&1
echo "suite rc $? $(grep Synthesis $OUT/b/gpu.log | tail -1) $(( $(date +%s) - s )) s" >> $L
grep -E '^\[FAIL\]' $OUT/b/gpu.log | head -20 >> $L
for sc in serial pingpong pingpong_overlap; do
  s=$(date +%s); TIRX_ATTN_SCHEDULE=$sc timeout 45 build-gpu/bench/attention $OUT/b/attn-$sc.csv 3 > $OUT/b/attn-$sc.log 2>&1; echo "attn $sc rc $? $(( $(date +%s) - s )) s" >> $L
done
s=$(date +%s); timeout 60 python3 bench/attention_torch.py $OUT/b/attn-torch.csv 20 > $OUT/b/attn-torch.log 2>&1; echo "attn torch rc $? $(( $(date +%s) - s )) s" >> $L
for sc in serial pingpong pingpong_overlap; do
  sh bench/attention_join.sh $OUT/b/attn-$sc.csv $OUT/b/attn-torch.csv $OUT/b/attn-join-$sc.csv > $OUT/b/attn-join-$sc.txt 2>&1
  grep geomean $OUT/b/attn-join-$sc.csv | cut -d, -f2-5,12 | tr '\n' ' ' >> $L; echo >> $L
done
G=$OUT/b/gemm-ab.txt
for round in 1; do
  for sh in 8,4096,4096 16,4096,4096 32,4096,4096 64,4096,4096 8,4096,14336 16,4096,14336 32,4096,14336 64,4096,14336 128,4096,14336; do
    [ $(( $(date +%s) - t0 )) -gt 520 ] && break
    for side in before after; do
      bin=build-exp/gemm; [ $side = after ] && bin=build-gpu/bench/gemm
      line=$(TIRX_BENCH_GEMM_ONLY=$sh TIRX_BENCH_GEMM_DTYPE=bf16 timeout 30 $bin - 10 2>&1 | grep '^decode' | head -1)
      echo "$round $side $sh | $line" >> $G
    done
  done
done
for round in 1; do
  [ $(( $(date +%s) - t0 )) -gt 540 ] && break
  for side in before after; do
    bin=build-before/bench/jit; [ $side = after ] && bin=build-gpu/bench/jit
    timeout 30 $bin --only d --rounds 3 > $OUT/b/jit-$side-$round.log 2>&1
    echo "jit $side $round: $(grep 'pool running' $OUT/b/jit-$side-$round.log | tail -1)" >> $L
  done
done
echo "total $(( $(date +%s) - t0 )) s" >> $L
cd $OUT && tar czf b.tgz b && rm -rf b; cat $L; cat $G | cut -c1-40,60-140
