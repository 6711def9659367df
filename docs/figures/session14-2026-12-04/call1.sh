# Session 14, call 1: the GPU suite on main (745c114), then bench/jit whole (a-g; NVRTC's
# driver cache off, as bench/jit sets it), for issue 18's real-compile figures.
set -u
export LD_LIBRARY_PATH=$PWD/.gpu-deps:/usr/local/cuda/lib64
export TIRX_CACHE_DIR=/tmp/cf
L=$OUT/log.txt
mkdir -p $OUT/b
t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader >> $L
s=$(date +%s)
timeout 280 build-gpu/tests/gpu/test_gpu --verbose -j4 > $OUT/b/gpu.log 2>&1
echo "suite rc $? $(grep Synthesis $OUT/b/gpu.log | tail -1) $(( $(date +%s) - s )) s" >> $L
grep -E '^\[FAIL\]|CRASH' $OUT/b/gpu.log | head -20 >> $L
s=$(date +%s)
rem=$(( 570 - (s - t0) ))
timeout $rem build-gpu/bench/jit $OUT/b/jit.csv --rounds 3 > $OUT/b/jit.log 2>&1
echo "jit rc $? $(( $(date +%s) - s )) s" >> $L
echo "total $(( $(date +%s) - t0 )) s" >> $L
cp $OUT/b/jit.log $OUT/jit.log
cd $OUT && tar czf b.tgz b && rm -rf b; cat $L; tail -60 $OUT/jit.log
