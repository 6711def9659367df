#!/bin/sh
# bench/attention_join.sh TIRX.csv TORCH.csv [OUT.csv]
#
# Joins bench/attention's CSV with bench/attention_torch.py's on (dtype, d, h, batch, seq,
# causal): per shape tirx's TFLOP/s over cuDNN's and over flash's, then the geometric means of
# both ratios per (dtype, D, causal). Prints a table; with OUT.csv also writes the ratios as
# CSV (columns kind,path,dtype,d,h,batch,seq,causal,tirx_tflops,cudnn_tflops,flash_tflops,
# tirx_over_cudnn,tirx_over_flash; kind "shape" or "geomean", whose batch and seq are "all").
# A tirx row of path "reference" (the default kernel not built yet) is joined too, and says so.
set -eu
[ $# -ge 2 ] || { echo "usage: attention_join.sh TIRX.csv TORCH.csv [OUT.csv]" >&2; exit 2; }
out=${3:-/dev/null}
awk -F, -v out="$out" '
  FNR == 1 { next }                       # headers
  NR == FNR { if ($1 == "tirx") { k = $3 FS $4 FS $5 FS $6 FS $7 FS $8; tirx[k] = $10; path[k] = $2; order[n++] = k } next }
  { k = $3 FS $4 FS $5 FS $6 FS $7 FS $8; if ($1 == "torch_cudnn") cudnn[k] = $10; if ($1 == "torch_flash") flash[k] = $10 }
  END {
    print "kind,path,dtype,d,h,batch,seq,causal,tirx_tflops,cudnn_tflops,flash_tflops,tirx_over_cudnn,tirx_over_flash" > out
    printf "%-5s %4s %3s %3s %6s %6s %-9s %8s %8s %8s %8s %8s\n", "type", "D", "H", "B", "S", "causal", "path", "tirx_TF", "cudnn_TF", "flash_TF", "/cudnn", "/flash"
    for (i = 0; i < n; i++) {
      k = order[i]; split(k, f, FS)
      rc = (k in cudnn && cudnn[k] > 0) ? tirx[k] / cudnn[k] : ""
      rf = (k in flash && flash[k] > 0) ? tirx[k] / flash[k] : ""
      g = f[1] FS f[2] FS f[6] FS path[k]
      if (!(g in seen)) { seen[g] = 1; groups[ng++] = g }
      if (rc != "" && rc > 0) { lc[g] += log(rc); nc[g]++ }
      if (rf != "" && rf > 0) { lf[g] += log(rf); nf[g]++ }
      printf "%-5s %4s %3s %3s %6s %6s %-9s %8.1f %8s %8s %8s %8s\n", f[1], f[2], f[3], f[4], f[5], f[6], path[k], tirx[k], \
             (k in cudnn) ? sprintf("%.1f", cudnn[k]) : "-", (k in flash) ? sprintf("%.1f", flash[k]) : "-", \
             rc == "" ? "-" : sprintf("%.3f", rc), rf == "" ? "-" : sprintf("%.3f", rf)
      printf "shape,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s\n", path[k], f[1], f[2], f[3], f[4], f[5], f[6], tirx[k], \
             (k in cudnn) ? cudnn[k] : "", (k in flash) ? flash[k] : "", rc == "" ? "" : sprintf("%.4f", rc), \
             rf == "" ? "" : sprintf("%.4f", rf) > out
    }
    print "geometric means (per dtype, D, causal):"
    for (j = 0; j < ng; j++) {
      g = groups[j]; split(g, f, FS)
      gc = nc[g] ? exp(lc[g] / nc[g]) : ""; gf = nf[g] ? exp(lf[g] / nf[g]) : ""
      printf "  %-5s D=%-3s causal=%s %-9s tirx/cuDNN %s (%d shapes)  tirx/flash %s (%d shapes)\n", f[1], f[2], f[3], f[4], \
             gc == "" ? "-" : sprintf("%.3f", gc), nc[g], gf == "" ? "-" : sprintf("%.3f", gf), nf[g]
      printf "geomean,%s,%s,%s,,all,all,%s,,,,%s,%s\n", f[4], f[1], f[2], f[3], gc == "" ? "" : sprintf("%.4f", gc), \
             gf == "" ? "" : sprintf("%.4f", gf) > out
    }
  }' "$1" "$2"
