set -u
export LD_LIBRARY_PATH=$PWD/.gpu-deps:/usr/local/cuda/lib64
export TIRX_CACHE_DIR=/tmp/cf
L=$OUT/sweep.txt
t0=$(date +%s)
run() { # shape then env settings
  sh=$1; shift
  [ $(( $(date +%s) - t0 )) -gt 520 ] && { echo "skip $sh $*" >> $L; return; }
  line=$(env "$@" TIRX_BENCH_GEMM_ONLY=$sh TIRX_BENCH_GEMM_DTYPE=bf16 timeout 30 build-exp/gemm - 10 2>&1 | grep '^decode' | head -1)
  echo "$sh | $* | $line" >> $L
}
for sh in 128,4096,14336 64,4096,4096; do
  run $sh X=plan
  for S in 2 3 6 8; do run $sh TIRX_BENCH_GEMM_SPLITS=$S; done
  for S in 2 4 8; do run $sh TIRX_EXP_BN=256 TIRX_BENCH_GEMM_SPLITS=$S; done
  for S in 2 4; do run $sh TIRX_EXP_BN=64 TIRX_BENCH_GEMM_SPLITS=$S; done
  run $sh TIRX_BENCH_GEMM_SPLITS=4 TIRX_BENCH_GEMM_CLUSTER=1x2
  run $sh TIRX_EXP_BN=256 TIRX_BENCH_GEMM_SPLITS=4 TIRX_BENCH_GEMM_CLUSTER=1x2
done
sh=256,4096,14336
run $sh X=plan
run $sh TIRX_EXP_BN=128 TIRX_BENCH_GEMM_SPLITS=2
run $sh TIRX_EXP_BN=128 TIRX_BENCH_GEMM_SPLITS=2 TIRX_BENCH_GEMM_CLUSTER=2x1
run $sh TIRX_EXP_BN=128 TIRX_BENCH_GEMM_SPLITS=4
run $sh TIRX_EXP_BN=256 TIRX_BENCH_GEMM_SPLITS=4
run $sh TIRX_EXP_BN=256 TIRX_BENCH_GEMM_SPLITS=2 TIRX_BENCH_GEMM_CLUSTER=2x1
for sh in 128,8192,8192 128,6144,4096 256,57344,8192; do
  run $sh X=plan
  run $sh TIRX_EXP_BN=128 TIRX_BENCH_GEMM_SPLITS=2
  run $sh TIRX_EXP_BN=128 TIRX_BENCH_GEMM_SPLITS=3
  run $sh TIRX_EXP_BN=256 TIRX_BENCH_GEMM_SPLITS=4
  run $sh TIRX_EXP_BN=128 TIRX_BENCH_GEMM_SPLITS=2 TIRX_BENCH_GEMM_CLUSTER=1x2
  run $sh TIRX_EXP_BN=64 X=nosplit
done
echo "total $(( $(date +%s) - t0 )) s" >> $L
cat $L | awk -F'|' '{print $1 "|" $2 "|" substr($3, 30)}'
