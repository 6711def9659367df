#!/bin/sh
# bench/plot_membound.sh: GB/s per kernel and implementation, one panel per shape, as a PNG.
#   sh bench/plot_membound.sh merged.csv out.png
# merged.csv: the CSVs of build/bench/membound and bench/membound_torch.py concatenated
# (header lines are skipped). Needs gnuplot (on the CPU machine, not the GPU one).
set -eu
in=${1:?merged csv}
png=${2:-membound.png}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for shape in 16384x8192 16384x5000 4096x32768; do
  r=${shape%x*}; w=${shape#*x}
  # kernel  tirx  torch_eager  torch_compile  copy
  awk -F, -v r="$r" -v w="$w" '
    $1 != "impl" && $4 == r && $5 == w { k[$2] = 1; g[$1 "," $2] = $7; if ($1 == "tirx") c[$2] = $8 }
    END { for (n in k) printf "%s %s %s %s %s\n", n, g["tirx," n] + 0, g["torch_eager," n] + 0,
                                g["torch_compile," n] + 0, c[n] + 0 }' "$in" | sort > "$tmp/$shape.dat"
done
gnuplot <<GP
set terminal pngcairo size 1500,550 font ",9" noenhanced
set output "$png"
set multiplot layout 1,3 title "bf16 row kernels on H200: GB/s (bytes read + written once)"
set style data histogram
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set xtics rotate by -35
set ylabel "GB/s"
set yrange [0:5000]
set key below horizontal
do for [s in "16384x8192 16384x5000 4096x32768"] {
  set title s
  plot "$tmp/".s.".dat" using 2:xtic(1) title "tirx", '' using 3 title "torch eager", \
       '' using 4 title "torch.compile", '' using 5 title "d2d copy"
}
unset multiplot
GP
echo "wrote $png"
