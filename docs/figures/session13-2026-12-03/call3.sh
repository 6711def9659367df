set -u
export LD_LIBRARY_PATH=$PWD/.gpu-deps:/usr/local/cuda/lib64
export TIRX_CACHE_DIR=/tmp/cf
L=$OUT/sweep3.txt
t0=$(date +%s)
run() { # shape then env settings
  sh=$1; shift
  [ $(( $(date +%s) - t0 )) -gt 400 ] && { echo "skip $sh $*" >> $L; return; }
  line=$(env "$@" TIRX_BENCH_GEMM_ONLY=$sh TIRX_BENCH_GEMM_DTYPE=bf16 timeout 30 build-exp/gemm - 10 2>&1 | grep '^decode' | head -1)
  echo "$sh | $* | $line" >> $L
}
for sh in 8,4096,4096 16,4096,4096 32,4096,4096 64,4096,4096 8,4096,14336 16,4096,14336 32,4096,14336 64,4096,14336 128,4096,14336; do
  run $sh X=plan
  for S in 2 3 4; do run $sh TIRX_EXP_BN=64 TIRX_BENCH_GEMM_SPLITS=$S; done
  run $sh TIRX_EXP_BN=96 TIRX_BENCH_GEMM_SPLITS=3
  run $sh TIRX_EXP_BN=32 X=nosplit
  run $sh TIRX_EXP_BN=64 TIRX_BENCH_GEMM_SPLITS=2 TIRX_BENCH_GEMM_CLUSTER=1x2
  run $sh X=plan2
done
echo "total $(( $(date +%s) - t0 )) s" >> $L
cat $L | awk -F'|' '{print $1 "|" $2 "|" substr($3, 30)}'
