# Session 15, call 4 (the rest of the device time, data for the next step; nothing changed
# after it): the occupancy floors and threads per row of the row kernels with the new hints.
export LD_LIBRARY_PATH=$PWD/.gpu-deps:/usr/local/cuda/lib64 TIRX_CACHE_DIR=/tmp/cf; timeout 70 build-gpu/bench/membound $OUT/occ.csv 9 occupancy > $OUT/occ.log 2>&1; echo "occ rc $?"; timeout 70 build-gpu/bench/membound $OUT/sweep.csv 9 sweep > $OUT/sweep.log 2>&1; echo "sweep rc $?"
