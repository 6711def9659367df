set -u
export LD_LIBRARY_PATH=$PWD/.gpu-deps:/usr/local/cuda/lib64
export TIRX_CACHE_DIR=/tmp/c2
L=$OUT/log.txt
t0=$(date +%s)
TIRX_EXPERIMENT_WGMMA_STEP=1 TIRX_EXPERIMENT_SMEM_CVTA=1 timeout 200 build-gpu/tests/gpu/test_gpu --verbose -j3 > $OUT/gpu-C.log 2>&1
echo "suite C rc $? $(grep Synthesis $OUT/gpu-C.log | tail -1) $(( $(date +%s) - t0 )) s" >> $L
grep -E '^\[FAIL\]|FAIL' $OUT/gpu-C.log | head >> $L
for t in A C; do
  if [ $t = C ]; then export TIRX_EXPERIMENT_WGMMA_STEP=1 TIRX_EXPERIMENT_SMEM_CVTA=1; fi
  s=$(date +%s); timeout 90 build-gpu/bench/attention $OUT/attn-$t.csv 5 > $OUT/attn-$t.log 2>&1; echo "attn $t rc $? $(( $(date +%s) - s )) s" >> $L
done
cd $OUT && tar czf all.tgz gpu-C.log attn-* && rm -f gpu-C.log attn-*; cat $L
