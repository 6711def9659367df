# Session 14, call 5: the final tree (h-d256, h-spill, the M = 3, 4 plan; h-dec1 reverted).
# First the tests call 4 did not finish on the merged tree (gpu::gemm_paths, which the plan
# change touches, and gpu_decode, whose code is 745c114's again), then the whole suite while
# device time lasts; every log goes straight to $OUT.
set -u
export LD_LIBRARY_PATH=$PWD/.gpu-deps:/usr/local/cuda/lib64
export TIRX_CACHE_DIR=/tmp/cf
L=$OUT/log.txt
s=$(date +%s)
timeout 90 build-gpu/tests/gpu/test_gpu --verbose -j4 --filter 'gpu/gemm_paths' > $OUT/gpu-paths.log 2>&1
echo "gemm_paths rc $? $(grep Synthesis $OUT/gpu-paths.log | tail -1) $(( $(date +%s) - s )) s" >> $L
s=$(date +%s)
timeout 90 build-gpu/tests/gpu/test_gpu --verbose -j6 --filter 'gpu_decode/*' > $OUT/gpu-decode.log 2>&1
echo "gpu_decode rc $? $(grep Synthesis $OUT/gpu-decode.log | tail -1) $(( $(date +%s) - s )) s" >> $L
grep -hE '^\[FAIL\]|CRASH' $OUT/gpu-paths.log $OUT/gpu-decode.log >> $L
s=$(date +%s)
timeout 300 build-gpu/tests/gpu/test_gpu --verbose -j8 > $OUT/gpu.log 2>&1
echo "suite rc $? $(grep Synthesis $OUT/gpu.log | tail -1) $(( $(date +%s) - s )) s" >> $L
grep -E '^\[FAIL\]|CRASH' $OUT/gpu.log | head -20 >> $L
cat $L
