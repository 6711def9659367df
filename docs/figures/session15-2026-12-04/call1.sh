# Session 15, call 1: the GPU suite on main as session 14 left it (21af9d2), then ncu of the
# row kernels that trail torch.compile or the copy (issue 20), tirx's and torch.compile's
# kernel of each at the same shape, the same sections.
set -u
export LD_LIBRARY_PATH=$PWD/.gpu-deps:/usr/local/cuda/lib64
export TIRX_CACHE_DIR=/tmp/cf
L=$OUT/log.txt
mkdir -p $OUT/n
t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader >> $L
s=$(date +%s)
timeout 380 build-gpu/tests/gpu/test_gpu --verbose -j6 > $OUT/gpu-suite.log 2>&1
echo "suite rc $? $(grep Synthesis $OUT/gpu-suite.log | tail -1) $(( $(date +%s) - s )) s" >> $L
grep -E '^\[FAIL\]|CRASH' $OUT/gpu-suite.log | head -20 >> $L
SEC="--section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy --section LaunchStats --section WarpStateStats --section SchedulerStats"
MET="--metrics dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sector_hit_rate.pct,smsp__inst_executed.sum,sm__cycles_active.avg"
CASES="rmsnorm:16384:8192 silu_mul:16384:8192 chain:16384:8192 layernorm:16384:5000 add_rmsnorm:16384:5000 softmax:4096:32768 rmsnorm:4096:32768"
for c in $CASES; do
  [ $(( $(date +%s) - t0 )) -gt 480 ] && break
  k=${c%%:*}; w=${c##*:}
  s=$(date +%s)
  timeout 40 ncu --clock-control none $SEC $MET -k "regex:^${k}\$" --launch-skip 3 -c 1 \
    build-gpu/bench/membound /dev/null 3 classic $k $w > $OUT/n/tirx-$k-$w.txt 2>&1
  echo "ncu tirx $c rc $? $(( $(date +%s) - s )) s" >> $L
done
s=$(date +%s)
rem=$(( 585 - (s - t0) ))
TORCHINDUCTOR_COMPILE_THREADS=1 timeout $rem ncu --clock-control none --profile-from-start off $SEC $MET \
  python3 docs/figures/session15-2026-12-04/torch_ncu.py $CASES > $OUT/n/torch.txt 2>&1
echo "ncu torch rc $? $(( $(date +%s) - s )) s" >> $L
echo "total $(( $(date +%s) - t0 )) s" >> $L
cat $L
