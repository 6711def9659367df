/*
 * saxpy: y = a * x + y over vectors with any stride.
 *
 * Compiles for sm_90a; on a GPU launches on fresh random inputs of sizes 1, 7, 1000 and
 * 1000003, contiguous and with x strided by 3 and y by 2 (views into larger buffers whose
 * other elements must stay untouched), and checks against a float64 reference. Without a GPU
 * it says so and exits 0. --print-source prints the generated CUDA.
 */
#include "example_util.h"
#include "demo_kernels.h"

static bool run(tirx_runtime *rt, const tirx_kernel *k, uint64_t *seed, int64_t n, int64_t sx,
                int64_t sy) {
  size_t len = (size_t)n, lx = len * (size_t)sx, ly = len * (size_t)sy;
  bool ok = false;
  float a = ex_uniform(seed, -2, 2);
  float *hx = ex_random(seed, lx, -1, 1), *hy = ex_random(seed, ly, -1, 1), *hout = NULL;
  double *want = malloc(ly * sizeof *want);
  float *dx = NULL, *dy = NULL;
  if (!hx || !hy || !want)
    goto done;
  /* Every element of y's buffer: the strided view is updated, the gaps keep their values. */
  for (size_t i = 0; i < ly; i++)
    want[i] = hy[i];
  for (size_t i = 0; i < len; i++)
    want[i * (size_t)sy] = (double)a * (double)hx[i * (size_t)sx] + (double)hy[i * (size_t)sy];
  if (!(dx = ex_device(rt, hx, lx)) || !(dy = ex_device(rt, hy, ly)))
    goto done;
  tirx_arg args[] = {
      tirx_arg_i64(n),
      tirx_arg_f32(a),
      tirx_arg_tensor(dx, TIRX_F32, 1, (int64_t[]){n}, (int64_t[]){sx}),
      tirx_arg_tensor(dy, TIRX_F32, 1, (int64_t[]){n}, (int64_t[]){sy}),
  };
  if (!ex_ok(tirx_launch(rt, k, args, 4, NULL), "tirx_launch") ||
      !ex_ok(tirx_runtime_synchronize(rt, NULL), "tirx_runtime_synchronize") ||
      !(hout = ex_download(rt, dy, ly)))
    goto done;
  char what[64];
  snprintf(what, sizeof what, "saxpy n=%lld strides (%lld, %lld)", (long long)n, (long long)sx,
           (long long)sy);
  /* One fused or unfused multiply-add in f32: within 2 ulp of the magnitudes involved. */
  ok = ex_compare(what, hout, want, ly, 1e-6, 1e-6);
done:
  tirx_runtime_free(rt, dx);
  tirx_runtime_free(rt, dy);
  free(hx);
  free(hy);
  free(hout);
  free(want);
  return ok;
}

int main(int argc, char **argv) {
  tirx_kernel *k;
  tirx_runtime *rt;
  int rc = ex_start(argc, argv, example_saxpy, false, &k, &rt);
  if (rc == 0) {
    uint64_t seed = ex_seed();
    printf("saxpy: seed %llu (TIRX_SEED replays it)\n", (unsigned long long)seed);
    static const int64_t sizes[] = {1, 7, 1000, 1000003};
    for (int i = 0; i < 4; i++) {
      if (!run(rt, k, &seed, sizes[i], 1, 1))
        rc = 1;
      if (!run(rt, k, &seed, sizes[i], 3, 2))
        rc = 1;
    }
    printf("saxpy: %s\n", rc == 0 ? "all results match" : "FAILED");
  }
  return ex_finish(rc, k, rt);
}
