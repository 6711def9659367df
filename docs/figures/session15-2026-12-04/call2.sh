# Session 15, call 2 (issue 20): torch.compile's row kernels under ncu (call 1's output of it
# did not come back), tirx's and torch's row kernels timed the same way (bench/membound.c's
# loop of 10 launches; TIRX_BENCH_TORCH_TIMING=both), the cache-hint experiment
# (TIRX_EXP_ROW_HINTS, an experiment build, not landed), and the split gemm_paths tests.
set -u
export LD_LIBRARY_PATH=$PWD/.gpu-deps:/usr/local/cuda/lib64
export TIRX_CACHE_DIR=/tmp/cf
L=$OUT/log.txt
B=$OUT/b
mkdir -p $B
t0=$(date +%s)
left() { echo $(( $1 - ($(date +%s) - t0) )); }
SEC="--section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy --section LaunchStats --section WarpStateStats --section SchedulerStats"
MET="--metrics dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sector_hit_rate.pct,smsp__inst_executed.sum,sm__cycles_active.avg"
CASES="rmsnorm:16384:8192 silu_mul:16384:8192 chain:16384:8192 layernorm:16384:5000 add_rmsnorm:16384:5000 softmax:4096:32768 rmsnorm:4096:32768"
s=$(date +%s)
TORCHINDUCTOR_COMPILE_THREADS=1 timeout 90 ncu --clock-control none --profile-from-start off $SEC $MET \
  python3 docs/figures/session15-2026-12-04/torch_ncu.py $CASES > $B/ncu-torch.txt 2>&1
echo "ncu torch rc $? $(( $(date +%s) - s )) s" >> $L
timeout 20 ncu --clock-control none $SEC $MET -k "regex:^softmax\$" --launch-skip 3 -c 1 \
  build-gpu/bench/membound /dev/null 3 classic softmax 32768 > $B/ncu-tirx-softmax-32768.txt 2>&1
# tirx, the hint experiment: ld/st .cs (the default), st plain, both plain, ld plain; twice
for n in 1 2; do
  for h in ss sn nn ns; do
    [ $(left 300) -lt 0 ] && break
    s=$(date +%s)
    TIRX_EXP_ROW_HINTS=$h timeout 60 build-gpu/bench/membound $B/tirx-$h-$n.csv 15 classic > $B/tirx-$h-$n.log 2>&1
    echo "tirx $h $n rc $? $(( $(date +%s) - s )) s" >> $L
  done
done
s=$(date +%s)
TIRX_BENCH_TORCH_TIMING=both timeout $(left 500) python3 bench/membound_torch.py $B/torch.csv classic > $B/torch.log 2>&1
echo "torch rc $? $(( $(date +%s) - s )) s" >> $L
s=$(date +%s)
timeout $(left 585) build-gpu/tests/gpu/test_gpu --verbose -j8 --filter='gpu/gemm_paths*' > $B/gemm-paths.log 2>&1
echo "gemm_paths rc $? $(grep Synthesis $B/gemm-paths.log | tail -1) $(( $(date +%s) - s )) s" >> $L
grep -E '^\[(PASS|FAIL)\]|CRASH' $B/gemm-paths.log >> $L
echo "total $(( $(date +%s) - t0 )) s" >> $L
cd $OUT && tar czf b.tgz b && rm -rf b; cat $L
