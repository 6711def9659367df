# The second device call prepared for the next session with device time (not run): the row
# threads of row-threads-512.patch (silu_mul and chain: 512 threads where a row has > 512
# vectors, from session 15's call 4 sweep) against the tree of next-call1.sh.
#
# Here, before the call: with next-call1.sh's tree built (build-before/membound is its
# binary, copied there before next-call1's bundle),
#   git apply docs/figures/session16-2026-12-04/row-threads-512.patch
#   ninja -C build && sh tests/golden/golden.sh update build   # silu_mul / chain only: with the
#     threshold at >= 512 vectors it was 54 cases (32 changed, 10 added and 12 removed: case
#     names carry the thread count); at > 512 the w4096 ones drop out
#   git diff --stat tests/golden | tail -1                     # per-row kernels > 512 vectors
#   sh tools/gpu-bundle.sh; rm -f build-gpu/libtirx.a build-gpu/compile_commands.json
# Device: run command "sh docs/figures/session16-2026-12-04/next-call2.sh"
#         carry ["build-gpu", ".gpu-deps", "build-before"]
# Keep the patch if the suite is green and no silu_mul / chain row is slower (min of the two
# runs a side); the torch rows say whether silu_mul 5000 and chain 5000 / 32768 pass 1.00x.
set -u
export LD_LIBRARY_PATH=$PWD/.gpu-deps:/usr/local/cuda/lib64
export TIRX_CACHE_DIR=/tmp/cf
L=$OUT/log.txt
B=$OUT/b
mkdir -p $B
t0=$(date +%s)
left() { echo $(( $1 - ($(date +%s) - t0) )); }
s=$(date +%s)
timeout 300 build-gpu/tests/gpu/test_gpu --verbose -j8 > $B/gpu-suite.log 2>&1
echo "suite rc $? $(grep Synthesis $B/gpu-suite.log | tail -1) $(( $(date +%s) - s )) s" >> $L
grep -E '^\[FAIL\]|CRASH' $B/gpu-suite.log | head -20 >> $L
for n in 1 2; do
  for side in before after; do
    bin=build-before/membound; [ $side = after ] && bin=build-gpu/bench/membound
    s=$(date +%s)
    timeout 40 $bin $B/classic-$side-$n.csv 15 classic > $B/classic-$side-$n.log 2>&1
    echo "classic $side $n rc $? $(( $(date +%s) - s )) s" >> $L
  done
done
s=$(date +%s)
[ $(left 480) -gt 30 ] && TIRX_BENCH_TORCH_TIMING=both timeout $(left 520) python3 bench/membound_torch.py $B/torch.csv all > $B/torch.log 2>&1
echo "torch rc $? $(( $(date +%s) - s )) s" >> $L
echo "total $(( $(date +%s) - t0 )) s" >> $L
cd $OUT && tar czf b.tgz b && rm -rf b; cat $L
