set -u
export LD_LIBRARY_PATH=$PWD/.gpu-deps:/usr/local/cuda/lib64
export TIRX_CACHE_DIR=/tmp/cf
L=$OUT/log.txt
s=$(date +%s)
timeout 190 build-gpu/tests/gpu/test_gpu --verbose -j4 > $OUT/gpu.log 2>&1
echo "suite rc $? $(grep Synthesis $OUT/gpu.log | tail -1) $(( $(date +%s) - s )) s" >> $L
grep -E '^\[FAIL\]' $OUT/gpu.log | head -20 >> $L
mkdir -p $OUT/b
B="TIRX_EXPERIMENT_WGMMA_STEP=1 TIRX_EXPERIMENT_SMEM_CVTA=1" # the previous bundle with today's default code
# attention: before (no RS stepping), after (RS stepped), after with the overlap schedule
s=$(date +%s); env $B timeout 25 build-before/attention $OUT/b/attn-before.csv 3 > $OUT/b/attn-before.log 2>&1; echo "attn before rc $? $(( $(date +%s) - s )) s" >> $L
s=$(date +%s); timeout 25 build-gpu/bench/attention $OUT/b/attn-after.csv 3 > $OUT/b/attn-after.log 2>&1; echo "attn after rc $? $(( $(date +%s) - s )) s" >> $L
s=$(date +%s); TIRX_ATTN_SCHEDULE=overlap timeout 25 build-gpu/bench/attention $OUT/b/attn-overlap.csv 3 > $OUT/b/attn-overlap.log 2>&1; echo "attn overlap rc $? $(( $(date +%s) - s )) s" >> $L
s=$(date +%s); env $B timeout 10 build-before/decode_attention $OUT/b/dec-before.csv 5 > $OUT/b/dec-before.log 2>&1; echo "dec before rc $? $(( $(date +%s) - s )) s" >> $L
s=$(date +%s); timeout 10 build-gpu/bench/decode_attention $OUT/b/dec-after.csv 5 > $OUT/b/dec-after.log 2>&1; echo "dec after rc $? $(( $(date +%s) - s )) s" >> $L
# gemm: M = 4 and 64 before (old plan, no dependent launch) and after
s=$(date +%s); env $B TIRX_BENCH_GEMM_MS=4,64 timeout 55 build-before/gemm $OUT/b/gemm-before.csv 3 > $OUT/b/gemm-before.log 2>&1; echo "gemm before rc $? $(( $(date +%s) - s )) s" >> $L
s=$(date +%s); TIRX_BENCH_GEMM_DECODE_ONLY=1 TIRX_BENCH_GEMM_MS=4,64 timeout 40 build-gpu/bench/gemm $OUT/b/gemm-after.csv 3 > $OUT/b/gemm-after.log 2>&1; echo "gemm after rc $? $(( $(date +%s) - s )) s" >> $L
# row kernels: silu_mul and chain in both forms (and the rest as they are)
s=$(date +%s); TIRX_BENCH_ROW_FORM=both timeout 25 build-gpu/bench/membound $OUT/b/mb-forms.csv 5 all > $OUT/b/mb-forms.log 2>&1; echo "mb forms rc $? $(( $(date +%s) - s )) s" >> $L
cd $OUT && tar czf b.tgz b && rm -rf b; cat $L
