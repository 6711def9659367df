/*
 * broadcast2d: out[i, j] = x[i, j] * col[i] + row[j], a 2-D broadcast with runtime shapes.
 *
 * Compiles for sm_90a; on a GPU launches on fresh random inputs for shapes 1x1, 7x13,
 * 1000x37 and 1x1000003, with x dense and with x a transposed (column-major) view, and checks
 * against a float64 reference. Without a GPU it says so and exits 0. --print-source prints
 * the generated CUDA.
 */
#include "example_util.h"
#include "demo_kernels.h"

static bool run(tirx_runtime *rt, const tirx_kernel *k, uint64_t *seed, int64_t m, int64_t n,
                bool transposed) {
  size_t len = (size_t)(m * n);
  bool ok = false;
  float *hx = ex_random(seed, len, -1, 1), *hc = ex_random(seed, (size_t)m, -2, 2);
  float *hr = ex_random(seed, (size_t)n, -1, 1), *hout = NULL;
  double *want = malloc(len * sizeof *want);
  float *dx = NULL, *dc = NULL, *dr = NULL, *dout = NULL;
  if (!hx || !hc || !hr || !want)
    goto done;
  /* x[i, j] lives at i * sx0 + j * sx1. */
  int64_t sx0 = transposed ? 1 : n, sx1 = transposed ? m : 1;
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < n; j++)
      want[i * n + j] = (double)hx[i * sx0 + j * sx1] * (double)hc[i] + (double)hr[j];
  if (!(dx = ex_device(rt, hx, len)) || !(dc = ex_device(rt, hc, (size_t)m)) ||
      !(dr = ex_device(rt, hr, (size_t)n)) || !(dout = ex_device(rt, NULL, len)))
    goto done;
  tirx_arg args[] = {
      tirx_arg_i64(m),
      tirx_arg_i64(n),
      tirx_arg_tensor(dx, TIRX_F32, 2, (int64_t[]){m, n}, (int64_t[]){sx0, sx1}),
      tirx_arg_tensor(dc, TIRX_F32, 1, (int64_t[]){m}, NULL),
      tirx_arg_tensor(dr, TIRX_F32, 1, (int64_t[]){n}, NULL),
      tirx_arg_tensor(dout, TIRX_F32, 2, (int64_t[]){m, n}, NULL),
  };
  if (!ex_ok(tirx_launch(rt, k, args, 6, NULL), "tirx_launch") ||
      !ex_ok(tirx_runtime_synchronize(rt, NULL), "tirx_runtime_synchronize") ||
      !(hout = ex_download(rt, dout, len)))
    goto done;
  char what[80];
  snprintf(what, sizeof what, "broadcast2d %lldx%lld%s", (long long)m, (long long)n,
           transposed ? " (x transposed)" : "");
  ok = ex_compare(what, hout, want, len, 1e-6, 1e-6);
done:
  tirx_runtime_free(rt, dx);
  tirx_runtime_free(rt, dc);
  tirx_runtime_free(rt, dr);
  tirx_runtime_free(rt, dout);
  free(hx);
  free(hc);
  free(hr);
  free(hout);
  free(want);
  return ok;
}

int main(int argc, char **argv) {
  tirx_kernel *k;
  tirx_runtime *rt;
  int rc = ex_start(argc, argv, example_broadcast2d, false, &k, &rt);
  if (rc == 0) {
    uint64_t seed = ex_seed();
    printf("broadcast2d: seed %llu (TIRX_SEED replays it)\n", (unsigned long long)seed);
    static const int64_t shapes[][2] = {{1, 1}, {7, 13}, {1000, 37}, {1, 1000003}};
    for (int i = 0; i < 4; i++) {
      if (!run(rt, k, &seed, shapes[i][0], shapes[i][1], false))
        rc = 1;
      if (!run(rt, k, &seed, shapes[i][0], shapes[i][1], true))
        rc = 1;
    }
    printf("broadcast2d: %s\n", rc == 0 ? "all results match" : "FAILED");
  }
  return ex_finish(rc, k, rt);
}
