set -u
export LD_LIBRARY_PATH=$PWD/.gpu-deps:/usr/local/cuda/lib64
export TIRX_CACHE_DIR=/tmp/c3
L=$OUT/log.txt
for t in A C; do
  if [ $t = C ]; then export TIRX_EXPERIMENT_WGMMA_STEP=1 TIRX_EXPERIMENT_SMEM_CVTA=1; fi
  s=$(date +%s); timeout 45 build-gpu/bench/decode_attention $OUT/dec-$t.csv 3 > $OUT/dec-$t.log 2>&1; echo "dec $t rc $? $(( $(date +%s) - s )) s" >> $L
  s=$(date +%s); timeout 80 build-gpu/bench/membound $OUT/mb-$t.csv 5 all > $OUT/mb-$t.log 2>&1; echo "mb $t rc $? $(( $(date +%s) - s )) s" >> $L
done
cd $OUT && tar czf all.tgz dec-* mb-* && rm -f dec-* mb-*; cat $L
