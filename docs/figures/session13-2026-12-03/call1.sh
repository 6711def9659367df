set -u
export LD_LIBRARY_PATH=$PWD/.gpu-deps:/usr/local/cuda/lib64
export TIRX_CACHE_DIR=/tmp/cf
L=$OUT/log.txt
mkdir -p $OUT/b
s=$(date +%s)
timeout 200 build-gpu/tests/gpu/test_gpu --verbose -j4 > $OUT/b/gpu.log 2>&1
echo "suite rc $? $(grep Synthesis $OUT/b/gpu.log | tail -1) $(( $(date +%s) - s )) s" >> $L
grep -E '^\[FAIL\]|FAIL' $OUT/b/gpu.log | head -20 >> $L
s=$(date +%s); timeout 60 build-gpu/bench/attention $OUT/b/attn.csv 3 > $OUT/b/attn.log 2>&1; echo "attn rc $? $(( $(date +%s) - s )) s" >> $L
s=$(date +%s); timeout 120 python3 bench/attention_torch.py $OUT/b/attn-torch.csv 20 > $OUT/b/attn-torch.log 2>&1; echo "attn torch rc $? $(( $(date +%s) - s )) s" >> $L
sh bench/attention_join.sh $OUT/b/attn.csv $OUT/b/attn-torch.csv $OUT/b/attn-join.csv > $OUT/b/attn-join.txt 2>&1
grep -i geomean $OUT/b/attn-join.csv >> $L
s=$(date +%s); timeout 80 build-gpu/bench/jit $OUT/b/jit.csv --only d --rounds 3 > $OUT/b/jit.log 2>&1; echo "jit d rc $? $(( $(date +%s) - s )) s" >> $L
tail -8 $OUT/b/jit.log >> $L
s=$(date +%s); TIRX_BENCH_GEMM_DECODE_ONLY=1 TIRX_BENCH_GEMM_MS=64,128,256 timeout 120 build-gpu/bench/gemm $OUT/b/gemm-dec.csv 5 > $OUT/b/gemm-dec.log 2>&1; echo "gemm dec rc $? $(( $(date +%s) - s )) s" >> $L
tail -12 $OUT/b/gemm-dec.log >> $L
nproc >> $L
cd $OUT && tar czf b.tgz b && rm -rf b; cat $L
