set -u
export LD_LIBRARY_PATH=$PWD/.gpu-deps:/usr/local/cuda/lib64
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu --format=csv > $OUT/log.txt 2>&1
run() { tag=$1; shift; s=$(date +%s); env "$@" TIRX_CACHE_DIR=/tmp/c-$tag timeout 190 build-gpu/bench/gemm $OUT/gemm-$tag.csv 5 > $OUT/gemm-$tag.log 2>&1; echo "$tag rc $? $(( $(date +%s) - s )) s" >> $OUT/log.txt; }
run A X=0
run B TIRX_EXPERIMENT_WGMMA_STEP=1
run C TIRX_EXPERIMENT_WGMMA_STEP=1 TIRX_EXPERIMENT_SMEM_CVTA=1
for t in A B C; do echo "== $t"; grep -E "geomean|wrong" $OUT/gemm-$t.log; done >> $OUT/log.txt
cat $OUT/log.txt
