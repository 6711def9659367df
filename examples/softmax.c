/*
 * softmax: a naive row-wise softmax, one warp per row, with native statements only (strided
 * loops and warp shuffles), and the kernel library's tirx_op_softmax (tirx/kernels.h).
 *
 * Compiles for sm_90a; on a GPU launches the native kernel on fresh random inputs for shapes
 * 1x1, 7x7, 1000x1000 and 3x1000003, and tirx_op_softmax for 7x64, 1000x1000 and 300x4096,
 * and checks each against a float64 reference. Without a GPU it says so and exits 0.
 * --print-source prints the generated CUDA of the native kernel.
 */
#include "example_util.h"
#include "demo_kernels.h"

/* k: the native kernel; NULL: tirx_op_softmax. */
static bool run(tirx_runtime *rt, const tirx_kernel *k, uint64_t *seed, int64_t m, int64_t n) {
  size_t len = (size_t)(m * n);
  bool ok = false;
  float *hx = ex_random(seed, len, -8, 8), *hout = NULL;
  double *want = malloc(len * sizeof *want);
  float *dx = NULL, *dout = NULL;
  if (!hx || !want)
    goto done;
  for (int64_t i = 0; i < m; i++) {
    const float *x = hx + i * n;
    double mx = -INFINITY, sum = 0;
    for (int64_t j = 0; j < n; j++)
      mx = fmax(mx, (double)x[j]);
    for (int64_t j = 0; j < n; j++)
      sum += exp((double)x[j] - mx);
    for (int64_t j = 0; j < n; j++)
      want[i * n + j] = exp((double)x[j] - mx) / sum;
  }
  if (!(dx = ex_device(rt, hx, len)) || !(dout = ex_device(rt, NULL, len)))
    goto done;
  tirx_arg args[] = {
      tirx_arg_i64(m),
      tirx_arg_i64(n),
      tirx_arg_tensor(dx, TIRX_F32, 2, (int64_t[]){m, n}, NULL),
      tirx_arg_tensor(dout, TIRX_F32, 2, (int64_t[]){m, n}, NULL),
  };
  tirx_tensor_arg x = {dx, TIRX_F32, 2, (int64_t[]){m, n}, NULL};
  tirx_tensor_arg out = {dout, TIRX_F32, 2, (int64_t[]){m, n}, NULL};
  if (!(k ? ex_ok(tirx_launch(rt, k, args, 4, NULL), "tirx_launch")
          : ex_ok(tirx_op_softmax(rt, NULL, &x, &out, NULL), "tirx_op_softmax")) ||
      !ex_ok(tirx_runtime_synchronize(rt, NULL), "tirx_runtime_synchronize") ||
      !(hout = ex_download(rt, dout, len)))
    goto done;
  char what[80];
  snprintf(what, sizeof what, "%s %lldx%lld", k ? "softmax" : "tirx_op_softmax", (long long)m,
           (long long)n);
  /* f32 exp and a sum of up to 1e6 terms in 32 lanes: relative error well under 1e-4. */
  ok = ex_compare(what, hout, want, len, 1e-12, 1e-4);
done:
  tirx_runtime_free(rt, dx);
  tirx_runtime_free(rt, dout);
  free(hx);
  free(hout);
  free(want);
  return ok;
}

int main(int argc, char **argv) {
  tirx_kernel *k;
  tirx_runtime *rt;
  int rc = ex_start(argc, argv, example_softmax, false, &k, &rt);
  if (rc == 0) {
    uint64_t seed = ex_seed();
    printf("softmax: seed %llu (TIRX_SEED replays it)\n", (unsigned long long)seed);
    static const int64_t shapes[][2] = {{1, 1}, {7, 7}, {1000, 1000}, {3, 1000003}};
    for (int i = 0; i < 4; i++)
      if (!run(rt, k, &seed, shapes[i][0], shapes[i][1]))
        rc = 1;
    static const int64_t op_shapes[][2] = {{7, 64}, {1000, 1000}, {300, 4096}};
    for (int i = 0; i < 3; i++)
      if (!run(rt, NULL, &seed, op_shapes[i][0], op_shapes[i][1]))
        rc = 1;
    printf("softmax: %s\n", rc == 0 ? "all results match" : "FAILED");
  }
  return ex_finish(rc, k, rt);
}
