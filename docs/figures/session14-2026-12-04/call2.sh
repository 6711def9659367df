# Session 14, call 2: the decode GEMM rows in full (M 1..256 x 8 shapes), bf16 then f16, on
# main 745c114 (the plan of 3423c7c), and the bias+SiLU rows (M = 8192) with their spills.
set -u
export LD_LIBRARY_PATH=$PWD/.gpu-deps:/usr/local/cuda/lib64
export TIRX_CACHE_DIR=/tmp/cf
L=$OUT/log.txt
t0=$(date +%s)
for dt in bf16 f16; do
  s=$(date +%s)
  TIRX_BENCH_GEMM_DECODE_ONLY=1 TIRX_BENCH_GEMM_DTYPE=$dt timeout 250 build-gpu/bench/gemm $OUT/gemm-decode-$dt.csv 10 > $OUT/gemm-decode-$dt.log 2>&1
  echo "gemm decode $dt rc $? $(( $(date +%s) - s )) s" >> $L
  grep -i geomean $OUT/gemm-decode-$dt.log >> $L
done
for sh in 8192,6144,4096 8192,4096,4096 8192,28672,4096; do
  [ $(( $(date +%s) - t0 )) -gt 540 ] && break
  TIRX_BENCH_GEMM_ONLY=$sh timeout 40 build-gpu/bench/gemm - 10 2>&1 | grep -E '^(llama|bias_silu)' >> $OUT/gemm-silu.txt
done
echo "total $(( $(date +%s) - t0 )) s" >> $L
cat $L; cat $OUT/gemm-silu.txt
