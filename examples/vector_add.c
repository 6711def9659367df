/*
 * vector_add: out = x + y, built with the builder, compiled with NVRTC and launched.
 *
 * Prints the generated CUDA C++ (this is the example that shows it), compiles it for sm_90a,
 * and on a GPU launches it on fresh random inputs of sizes 1, 7, 1000 and 1000003 and checks
 * every element against a float64 reference. Without a GPU it says so and exits 0.
 * $TIRX_SEED replays a run.
 */
#include "example_util.h"
#include "demo_kernels.h"

static bool run(tirx_runtime *rt, const tirx_kernel *k, uint64_t *seed, int64_t n) {
  size_t len = (size_t)n;
  bool ok = false;
  float *hx = ex_random(seed, len, -1, 1), *hy = ex_random(seed, len, -1, 1), *hout = NULL;
  double *want = malloc(len * sizeof *want);
  float *dx = NULL, *dy = NULL, *dout = NULL;
  if (!hx || !hy || !want)
    goto done;
  for (size_t i = 0; i < len; i++)
    want[i] = (double)hx[i] + (double)hy[i];
  if (!(dx = ex_device(rt, hx, len)) || !(dy = ex_device(rt, hy, len)) ||
      !(dout = ex_device(rt, NULL, len)))
    goto done;
  tirx_arg args[] = {
      tirx_arg_i64(n),
      tirx_arg_tensor(dx, TIRX_F32, 1, (int64_t[]){n}, NULL),
      tirx_arg_tensor(dy, TIRX_F32, 1, (int64_t[]){n}, NULL),
      tirx_arg_tensor(dout, TIRX_F32, 1, (int64_t[]){n}, NULL),
  };
  if (!ex_ok(tirx_launch(rt, k, args, 4, NULL), "tirx_launch") ||
      !ex_ok(tirx_runtime_synchronize(rt, NULL), "tirx_runtime_synchronize") ||
      !(hout = ex_download(rt, dout, len)))
    goto done;
  char what[64];
  snprintf(what, sizeof what, "vector_add n=%lld", (long long)n);
  ok = ex_compare(what, hout, want, len, 1e-7, 1e-6); /* one f32 rounding */
done:
  tirx_runtime_free(rt, dx);
  tirx_runtime_free(rt, dy);
  tirx_runtime_free(rt, dout);
  free(hx);
  free(hy);
  free(hout);
  free(want);
  return ok;
}

int main(int argc, char **argv) {
  tirx_kernel *k;
  tirx_runtime *rt;
  int rc = ex_start(argc, argv, example_vector_add, true, &k, &rt);
  if (rc == 0) {
    uint64_t seed = ex_seed();
    printf("vector_add: seed %llu (TIRX_SEED replays it)\n", (unsigned long long)seed);
    static const int64_t sizes[] = {1, 7, 1000, 1000003};
    for (int i = 0; i < 4; i++)
      if (!run(rt, k, &seed, sizes[i]))
        rc = 1;
    printf("vector_add: %s\n", rc == 0 ? "all results match" : "FAILED");
  }
  return ex_finish(rc, k, rt);
}
