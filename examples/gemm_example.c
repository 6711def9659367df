/*
 * gemm_example: the kernel library's Hopper GEMM (tirx/kernels.h) for a few shapes.
 *
 * For each case: builds the kernel for the shape (tirx_kernels_gemm_build; tile shape from
 * tirx_kernels_gemm_tiles), prints its dispatch report (the first case; --print-source prints
 * its CUDA too), compiles it with NVRTC for sm_90a; on a GPU runs tirx_op_gemm on fresh random
 * bf16/f16 inputs with C poisoned (NaN) and checks 2048 sampled elements and the corners
 * against a float64 reference. Without a GPU it says so and exits 0. TIRX_SEED replays a run.
 */
#include "example_util.h"
#include "gemm_ref.h"

typedef struct gcase {
  tirx_dtype dt;
  int64_t m, n, k;
  tirx_epilogue ep;
} gcase;

static void *upload16(tirx_runtime *rt, const uint16_t *h, size_t n) {
  void *d = NULL;
  if (!ex_ok(tirx_runtime_alloc(rt, n * 2 + 4, &d), "tirx_runtime_alloc")) return NULL;
  if (!ex_ok(tirx_runtime_copy(rt, d, h, n * 2, TIRX_COPY_HOST_TO_DEVICE), "tirx_runtime_copy")) {
    tirx_runtime_free(rt, d);
    return NULL;
  }
  return d;
}

static bool run(tirx_runtime *rt, const gcase *c, uint64_t *seed) {
  int64_t m = c->m, n = c->n, kk = c->k;
  size_t na = (size_t)(m * kk), nb = (size_t)(n * kk), nc = (size_t)(m * n);
  uint16_t *ha = malloc(na * 2), *hb = malloc(nb * 2), *hbias = malloc((size_t)n * 2);
  uint16_t *hc = malloc(nc * 2);
  void *da = NULL, *db = NULL, *dbias = NULL, *dc = NULL;
  bool ok = false;
  if (!ha || !hb || !hbias || !hc) goto done;
  for (size_t i = 0; i < na; i++) ha[i] = ex_to16(c->dt, ex_uniform(seed, -1, 1));
  for (size_t i = 0; i < nb; i++) hb[i] = ex_to16(c->dt, ex_uniform(seed, -1, 1));
  for (int64_t i = 0; i < n; i++) hbias[i] = ex_to16(c->dt, ex_uniform(seed, -1, 1));
  if (!(da = upload16(rt, ha, na)) || !(db = upload16(rt, hb, nb)) ||
      !(dbias = upload16(rt, hbias, (size_t)n)))
    goto done;
  if (!ex_ok(tirx_runtime_alloc(rt, nc * 2 + 4, &dc), "tirx_runtime_alloc") ||
      !ex_ok(tirx_runtime_fill32(rt, dc, 0xffffffffu, (nc * 2 + 3) / 4), "tirx_runtime_fill32"))
    goto done;
  tirx_tensor_arg a = {da, c->dt, 2, (int64_t[]){m, kk}, NULL};
  tirx_tensor_arg b = {db, c->dt, 2, (int64_t[]){n, kk}, NULL};
  tirx_tensor_arg cc = {dc, c->dt, 2, (int64_t[]){m, n}, NULL};
  tirx_tensor_arg bias = {dbias, c->dt, 1, (int64_t[]){n}, NULL};
  tirx_gemm_options o = {.epilogue = c->ep};
  if (!ex_ok(tirx_op_gemm(rt, &o, &a, &b, c->ep == TIRX_EPILOGUE_NONE ? NULL : &bias, &cc, NULL),
             "tirx_op_gemm") ||
      !ex_ok(tirx_runtime_synchronize(rt, NULL), "tirx_runtime_synchronize") ||
      !ex_ok(tirx_runtime_copy(rt, hc, dc, nc * 2, TIRX_COPY_DEVICE_TO_HOST), "tirx_runtime_copy"))
    goto done;
  int wrong = 0;
  double worst = 0;
  for (int t = 0; t < 2052; t++) {
    int64_t i = t < 4 ? (t & 1 ? m - 1 : 0) : (int64_t)(ex_rand(seed) % (uint64_t)m);
    int64_t j = t < 4 ? (t & 2 ? n - 1 : 0) : (int64_t)(ex_rand(seed) % (uint64_t)n);
    double acc = 0, mag = 0;
    for (int64_t q = 0; q < kk; q++) {
      double p = ex_from16(c->dt, ha[i * kk + q]) * ex_from16(c->dt, hb[j * kk + q]);
      acc += p, mag += fabs(p);
    }
    if (c->ep != TIRX_EPILOGUE_NONE) acc += ex_from16(c->dt, hbias[j]), mag += fabs(ex_from16(c->dt, hbias[j]));
    double want = gemm_epilogue_ref(c->ep, acc), got = ex_from16(c->dt, hc[i * n + j]);
    /* f32 accumulation, one rounding to the output type */
    double tol = (c->dt == TIRX_BF16 ? 1.0 / 128 : 1.0 / 1024) * fabs(want) + 1e-5 * mag + 1e-6;
    double e = fabs(got - want);
    if (!(e <= tol)) {
      if (!wrong)
        fprintf(stderr, "  C[%lld, %lld] = %.6g, want %.6g\n", (long long)i, (long long)j, got,
                want);
      wrong++;
    }
    if (e > worst || e != e) worst = e;
  }
  static const char *const eps[] = {"", " + bias", " + bias, silu", " + bias, gelu"};
  printf("gemm %s %lldx%lldx%lld%s: 2052 sampled elements, max abs error %.3g: %s\n",
         tirx_dtype_name(c->dt), (long long)m, (long long)n, (long long)kk, eps[c->ep], worst,
         wrong ? "MISMATCH" : "all results match");
  ok = wrong == 0;
done:
  tirx_runtime_free(rt, da);
  tirx_runtime_free(rt, db);
  tirx_runtime_free(rt, dbias);
  tirx_runtime_free(rt, dc);
  free(ha), free(hb), free(hbias), free(hc);
  return ok;
}

int main(int argc, char **argv) {
  bool print_source = argc > 1 && strcmp(argv[1], "--print-source") == 0;
  static const gcase cases[] = {{TIRX_BF16, 2048, 4096, 4096, TIRX_EPILOGUE_NONE},
                                {TIRX_F16, 1000, 3000, 4000, TIRX_EPILOGUE_BIAS_SILU},
                                {TIRX_BF16, 1, 4096, 4096, TIRX_EPILOGUE_NONE},
                                {TIRX_BF16, 129, 136, 72, TIRX_EPILOGUE_BIAS_GELU}}; /* row strides: multiples of 16 bytes */
  tirx_runtime *rt = NULL;
  if (!ex_ok(tirx_runtime_create(NULL, &rt), "tirx_runtime_create")) return 1;
  bool gpu = tirx_runtime_has_device(rt);
  uint64_t seed = ex_seed();
  if (gpu) printf("gemm_example: seed %llu (TIRX_SEED replays it)\n", (unsigned long long)seed);
  int failed = 0;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const gcase *c = &cases[i];
    tirx_gemm_options o = {.epilogue = c->ep};
    tirx_gemm_tiles t;
    tirx_kernel *k = NULL;
    if (tirx_kernels_gemm_tiles(&o, c->m, c->n, c->k, &t) != TIRX_OK ||
        tirx_kernels_gemm_build(&o, c->dt, c->m, c->n, c->k, &k) != TIRX_OK) {
      fprintf(stderr, "%s\n", tirx_last_error());
      failed++;
      continue;
    }
    printf("%s: tiles %dx%dx%d, %d stages, %d consumer warpgroup(s)\n", tirx_kernel_name(k),
           t.block_m, t.block_n, t.block_k, t.stages, t.consumers);
    if (i == 0) printf("%s", tirx_kernel_dispatch_report(k));
    if (i == 0 && print_source) printf("%s\n", tirx_kernel_source(k));
    tirx_compiled *cc = NULL;
    if (!ex_ok(tirx_compile(rt, k, "sm_90a", &cc), "tirx_compile")) {
      failed++;
    } else {
      tirx_compiled_destroy(cc);
      if (gpu && !run(rt, c, &seed)) failed++;
    }
    tirx_kernel_release(k);
  }
  if (!gpu)
    printf("gemm_example: compiled for sm_90a; no GPU here (%s): nothing launched\n",
           tirx_runtime_device_error(rt));
  tirx_runtime_destroy(rt);
  return failed ? 1 : 0;
}
