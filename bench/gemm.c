/*
 * gemm: the builder's Hopper GEMM (examples/gemm.c) against cuBLAS (cublasGemmEx, loaded with
 * dlopen), side by side in one run.
 *
 *   gemm [out.csv] [reps] [--quick]
 *
 * Shapes: M = 8192 with the (N, K) of LLaMA-3.1-8B and 70B, f16 and bf16; decode-like M in
 * {1, 16, 64, 128, 256} on the same (N, K) (bf16); a fused bias+SiLU epilogue against cuBLAS
 * followed by a separate elementwise kernel (bf16, M = 8192). Each case: the tirx kernel is
 * built for the shape, launched once and checked on 512 sampled elements against a float64
 * reference on the host (relative error within the dtype's rounding); then warm-up, then
 * `reps` samples of 5 back-to-back launches followed by a synchronize (host clock), median
 * per launch, for tirx and cuBLAS alike. Prints TFLOP/s and the ratio per shape and the
 * geometric means; CSV columns case,dtype,m,n,k,tirx_us,cublas_us,tirx_tflops,cublas_tflops,
 * ratio,max_rel_err.
 *
 * First, with or without a GPU: the cold compile of three GEMM variants (M=8192 plain and
 * bias+SiLU, a decode shape): the build (builder, dispatch, CUDA source), the whole miss path
 * of a launch on a runtime with a fresh, empty disk cache (tirx_prepare_async: cache key,
 * disk miss, NVRTC to a cubin, publish, load), a direct tirx_compile (NVRTC alone), and
 * ptxas' register and spill report for the PTX (the toolkit's ptxas -v: $CUDA_HOME, else
 * /usr/local/cuda; skipped when absent). Without a GPU or without libcublas the measurement
 * against cuBLAS says so and the program exits 0.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench_util.h"
#include "example_util.h"
#include "gemm_ref.h"

#define CHECK(call)                                                                                \
  do {                                                                                             \
    if ((call) != TIRX_OK) {                                                                       \
      fprintf(stderr, "%s: %s\n", #call, tirx_last_error());                                       \
      exit(1);                                                                                     \
    }                                                                                              \
  } while (0)

/* ---- cuBLAS, loaded at run time ---- */

typedef int (*cublas_create_fn)(void **);
typedef int (*cublas_destroy_fn)(void *);
typedef int (*cublas_gemm_ex_fn)(void *, int, int, int, int, int, const void *, const void *, int,
                                 int, const void *, int, int, const void *, void *, int, int, int,
                                 int);
static struct {
  void *lib, *handle;
  cublas_create_fn create;
  cublas_destroy_fn destroy;
  cublas_gemm_ex_fn gemm_ex;
} cublas;

enum { CUBLAS_OP_N = 0, CUBLAS_OP_T = 1, CUDA_R_32F = 0, CUDA_R_16F = 2, CUDA_R_16BF = 14,
       CUBLAS_COMPUTE_32F = 68, CUBLAS_GEMM_DEFAULT = -1 };

static bool cublas_load(void) {
  const char *names[] = {"libcublas.so.13", "libcublas.so.12", "libcublas.so"};
  for (int i = 0; i < 3 && !cublas.lib; i++) cublas.lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
  if (!cublas.lib) return false;
  *(void **)&cublas.create = dlsym(cublas.lib, "cublasCreate_v2");
  *(void **)&cublas.destroy = dlsym(cublas.lib, "cublasDestroy_v2");
  *(void **)&cublas.gemm_ex = dlsym(cublas.lib, "cublasGemmEx");
  return cublas.create && cublas.destroy && cublas.gemm_ex && cublas.create(&cublas.handle) == 0;
}

/* C [M, N] row-major = A [M, K] B [N, K]^T: in cuBLAS's column-major terms C^T = B A^T. */
static void cublas_gemm(tirx_dtype dt, int64_t m, int64_t n, int64_t k, const void *a,
                        const void *b, void *c) {
  float one = 1.0f, zero = 0.0f;
  int t = dt == TIRX_BF16 ? CUDA_R_16BF : CUDA_R_16F;
  int r = cublas.gemm_ex(cublas.handle, CUBLAS_OP_T, CUBLAS_OP_N, (int)n, (int)m, (int)k, &one, b,
                         t, (int)k, a, t, (int)k, &zero, c, t, (int)n, CUBLAS_COMPUTE_32F,
                         CUBLAS_GEMM_DEFAULT);
  if (r != 0) {
    fprintf(stderr, "cublasGemmEx: status %d\n", r);
    exit(1);
  }
}

/* ---- data ---- */

static uint64_t seed_state;

static float rnd(void) { /* uniform in [-1, 1) */
  seed_state = seed_state * 6364136223846793005ull + 1442695040888963407ull;
  return -1.0f + 2.0f * (float)(seed_state >> 40) / 16777216.0f;
}

typedef struct dev_mat {
  uint16_t *host;
  void *dev;
  size_t n;
} dev_mat;

static dev_mat mat_random(tirx_runtime *rt, tirx_dtype dt, size_t n, float scale) {
  dev_mat m = {malloc(n * 2), NULL, n};
  for (size_t i = 0; i < n; i++) m.host[i] = ex_to16(dt, rnd() * scale);
  CHECK(tirx_runtime_alloc(rt, n * 2 + 256, &m.dev));
  CHECK(tirx_runtime_copy(rt, m.dev, m.host, n * 2, TIRX_COPY_HOST_TO_DEVICE));
  return m;
}

static void mat_free(tirx_runtime *rt, dev_mat *m) {
  free(m->host);
  tirx_runtime_free(rt, m->dev);
}

/* The largest relative error over 512 sampled elements of C (after poisoning C with 0xffff
 * before the launch: NaN in both dtypes, so an element not written fails). */
static double check(tirx_runtime *rt, tirx_dtype dt, const gemm_spec *s, const dev_mat *a,
                    const dev_mat *b, const dev_mat *bias, void *c, bool *ok) {
  int64_t m = s->m, n = s->n, k = s->k;
  uint16_t *hc = malloc((size_t)(m * n) * 2);
  CHECK(tirx_runtime_copy(rt, hc, c, (size_t)(m * n) * 2, TIRX_COPY_DEVICE_TO_HOST));
  double worst = 0;
  *ok = true;
  for (int t = 0; t < 512; t++) {
    seed_state = seed_state * 6364136223846793005ull + 1442695040888963407ull;
    int64_t i = (int64_t)((seed_state >> 33) % (uint64_t)m);
    seed_state = seed_state * 6364136223846793005ull + 1442695040888963407ull;
    int64_t j = (int64_t)((seed_state >> 33) % (uint64_t)n);
    if (t == 0) i = m - 1, j = n - 1; /* the far corner: tails */
    double acc = 0, mag = 0;
    for (int64_t q = 0; q < k; q++) {
      double p = ex_from16(dt, a->host[i * k + q]) * ex_from16(dt, b->host[j * k + q]);
      acc += p, mag += fabs(p);
    }
    if (s->epilogue != TIRX_EPILOGUE_NONE) acc += ex_from16(dt, bias->host[j]);
    double want = gemm_epilogue_ref(s->epilogue, acc);
    double got = ex_from16(dt, hc[i * n + j]);
    /* f32 accumulation plus one rounding to the output type: relative to the magnitude. */
    double ulp = dt == TIRX_BF16 ? 1.0 / 128 : 1.0 / 1024;
    double tol = ulp * fabs(want) + 1e-5 * (mag + 1.0);
    double err = fabs(got - want) / (fabs(want) + 1e-3 * (mag + 1.0));
    if (!(fabs(got - want) <= tol)) {
      if (*ok)
        fprintf(stderr, "  mismatch at (%lld, %lld): got %.6g want %.6g\n", (long long)i,
                (long long)j, got, want);
      *ok = false;
    }
    if (err > worst || err != err) worst = err;
  }
  free(hc);
  return worst;
}

static double time_tirx(tirx_runtime *rt, tirx_kernel *kern, tirx_arg *args, int na, int reps) {
  for (int i = 0; i < 3; i++) CHECK(tirx_launch(rt, kern, args, na, NULL));
  CHECK(tirx_runtime_synchronize(rt, NULL));
  double *t = malloc((size_t)reps * sizeof *t);
  for (int r = 0; r < reps; r++) {
    double t0 = now_us();
    for (int i = 0; i < 5; i++) CHECK(tirx_launch(rt, kern, args, na, NULL));
    CHECK(tirx_runtime_synchronize(rt, NULL));
    t[r] = (now_us() - t0) / 5;
  }
  double us = median(t, reps);
  free(t);
  return us;
}

/* cuBLAS, optionally followed by a separate elementwise kernel (post, args). */
static double time_cublas(tirx_runtime *rt, tirx_dtype dt, const gemm_spec *s, void *a, void *b,
                          void *c, tirx_kernel *post, tirx_arg *pargs, int pna, int reps) {
  for (int i = 0; i < 3; i++) {
    cublas_gemm(dt, s->m, s->n, s->k, a, b, c);
    if (post) CHECK(tirx_launch(rt, post, pargs, pna, NULL));
  }
  CHECK(tirx_runtime_synchronize(rt, NULL));
  double *t = malloc((size_t)reps * sizeof *t);
  for (int r = 0; r < reps; r++) {
    double t0 = now_us();
    for (int i = 0; i < 5; i++) {
      cublas_gemm(dt, s->m, s->n, s->k, a, b, c);
      if (post) CHECK(tirx_launch(rt, post, pargs, pna, NULL));
    }
    CHECK(tirx_runtime_synchronize(rt, NULL));
    t[r] = (now_us() - t0) / 5;
  }
  double us = median(t, reps);
  free(t);
  return us;
}

/* out[i, j] = silu(c[i, j] + bias[j]): the separate elementwise kernel after cuBLAS. */
static tirx_kernel *bias_silu_kernel(tirx_dtype dt) {
  tirx_builder *b = tirx_builder_create("bias_silu");
  tirx_expr *rows = tirx_param_int(b, "rows", TIRX_I32), *cols = tirx_param_int(b, "cols", TIRX_I32);
  tirx_tensor *c = tirx_param_tensor(b, "c", dt, TIRX_EXPRS(rows, cols), NULL);
  tirx_tensor *bias = tirx_param_tensor(b, "bias", dt, TIRX_EXPRS(tirx_int(b, 1), cols), NULL);
  tirx_set_block(b, 256, 1, 1);
  tirx_set_grid(b, tirx_ceildiv(b, tirx_mul(b, rows, cols), tirx_int(b, 256)), NULL, NULL);
  tirx_expr *i = tirx_let(b, "i", tirx_add(b, tirx_mul(b, tirx_cast(b, tirx_block_idx(b, 0), TIRX_I64),
                                                      tirx_int(b, 256)),
                                          tirx_cast(b, tirx_thread_idx(b, 0), TIRX_I64)));
  tirx_expr *total = tirx_mul(b, tirx_cast(b, rows, TIRX_I64), tirx_cast(b, cols, TIRX_I64));
  tirx_if_begin(b, tirx_lt(b, i, total));
  tirx_expr *r = tirx_cast(b, tirx_div(b, i, tirx_cast(b, cols, TIRX_I64)), TIRX_I32);
  tirx_expr *col = tirx_cast(b, tirx_mod(b, i, tirx_cast(b, cols, TIRX_I64)), TIRX_I32);
  tirx_expr *x = tirx_add(b, tirx_cast(b, tirx_load(b, c, TIRX_EXPRS(r, col)), TIRX_F32),
                          tirx_cast(b, tirx_load(b, bias, TIRX_EXPRS(tirx_int(b, 0), col)), TIRX_F32));
  tirx_expr *y = tirx_mul(b, x, tirx_math(b, TIRX_MATH_SIGMOID, x));
  tirx_store(b, c, TIRX_EXPRS(r, col), tirx_cast(b, y, dt));
  tirx_if_end(b);
  tirx_kernel *k = NULL;
  if (tirx_kernel_build(b, &k) != TIRX_OK) fprintf(stderr, "bias_silu: %s\n", tirx_builder_error(b));
  tirx_builder_destroy(b);
  return k;
}

/* ---- cold compile ---- */

/* Removes the files of the flat directory dir, then dir. */
static void remove_dir(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return;
  struct dirent *e;
  char path[4096];
  while ((e = readdir(d)))
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
      snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
      unlink(path);
    }
  closedir(d);
  rmdir(dir);
}

/* Prints the registers, spills and compile time that ptxas -v reports for ptx (sm_90a). */
static void ptxas_report(const char *ptx) {
  const char *home = getenv("CUDA_HOME");
  char ptxas[1024], file[] = "/tmp/tirx-gemm-ptx-XXXXXX", cmd[2300], line[512];
  snprintf(ptxas, sizeof ptxas, "%s/bin/ptxas", home && *home ? home : "/usr/local/cuda");
  if (access(ptxas, X_OK) != 0) {
    printf("    ptxas -v: %s not found, registers not reported\n", ptxas);
    return;
  }
  int fd = mkstemp(file);
  FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
  if (!f) {
    printf("    ptxas -v: cannot write a temporary file\n");
    return;
  }
  fputs(ptx, f);
  fclose(f);
  snprintf(cmd, sizeof cmd, "'%s' -arch=sm_90a -v -o /dev/null '%s' 2>&1", ptxas, file);
  FILE *p = popen(cmd, "r");
  while (p && fgets(line, sizeof line, p)) {
    if (!strstr(line, "Used") && !strstr(line, "spill") && !strstr(line, "Compile time"))
      continue;
    const char *info = strstr(line, "ptxas info    : ");
    info = info ? info + 16 : line + strspn(line, " ");
    printf("    ptxas -v: %s", info);
  }
  if (p) pclose(p);
  unlink(file);
}

static void cold_compile(const gemm_spec *s, const char *what) {
  double t0 = now_us();
  char err[4096] = "";
  tirx_kernel *k = gemm_build(s, err, sizeof err);
  double build_ms = (now_us() - t0) / 1e3;
  if (!k) {
    printf("  %s: build failed: %s\n", what, err);
    return;
  }
  char dir[] = "/tmp/tirx-gemm-cache-XXXXXX";
  if (!mkdtemp(dir)) {
    printf("  %s: no temporary cache directory\n", what);
    tirx_kernel_release(k);
    return;
  }
  tirx_runtime_options o = {.cache_dir = dir};
  tirx_runtime *rt = NULL;
  CHECK(tirx_runtime_create(&o, &rt));
  /* Arguments of the spec's shape; the pointers are checked (16-byte aligned), never read. */
  void *fake = (void *)(uintptr_t)4096;
  tirx_arg args[7] = {tirx_arg_i32((int32_t)s->m), tirx_arg_i32((int32_t)s->n), tirx_arg_i32((int32_t)s->k),
                      tirx_arg_tensor(fake, s->dtype, 2, (int64_t[]){s->m, s->k}, NULL),
                      tirx_arg_tensor(fake, s->dtype, 2, (int64_t[]){s->k, s->n}, (int64_t[]){1, s->k}),
                      tirx_arg_tensor(fake, s->dtype, 2, (int64_t[]){s->m, s->n}, NULL),
                      tirx_arg_tensor(fake, s->dtype, 2, (int64_t[]){1, s->n}, NULL)};
  tirx_future *f = NULL;
  t0 = now_us();
  tirx_status st = tirx_prepare_async(rt, k, args, s->epilogue == TIRX_EPILOGUE_NONE ? 6 : 7, &f);
  if (st == TIRX_OK) st = tirx_future_wait(f, -1);
  double miss_ms = (now_us() - t0) / 1e3;
  tirx_future_release(f);
  if (st != TIRX_OK) printf("  %s: prepare failed: %s\n", what, tirx_last_error());
  tirx_compiled *c = NULL;
  t0 = now_us();
  tirx_status cst = tirx_compile(rt, k, "sm_90a", &c);
  double nvrtc_ms = (now_us() - t0) / 1e3;
  printf("  %-34s build %6.1f ms, launch miss (fresh cache) %7.1f ms, NVRTC alone %7.1f ms\n",
         tirx_kernel_name(k), build_ms, miss_ms, nvrtc_ms);
  if (cst == TIRX_OK)
    ptxas_report(tirx_compiled_ptx(c));
  else
    printf("    tirx_compile: %s\n", tirx_last_error());
  tirx_compiled_destroy(c);
  tirx_runtime_destroy(rt);
  remove_dir(dir);
  tirx_kernel_release(k);
}

typedef struct row {
  const char *name;
  int64_t m, n, k;
  tirx_dtype dt;
  tirx_epilogue ep;
} row;

int main(int argc, char **argv) {
  const char *csv = argc > 1 ? argv[1] : NULL;
  int reps = argc > 2 ? atoi(argv[2]) : 9;
  bool quick = argc > 3 && strcmp(argv[3], "--quick") == 0;
  if (reps < 3) reps = 3;
  seed_state = (uint64_t)time(NULL) * 2654435761u;
  printf("cold compile of one GEMM variant (target: launch miss <= 150 ms):\n");
  cold_compile(&(gemm_spec){.dtype = TIRX_BF16, .m = 8192, .n = 8192, .k = 8192}, "M=8192");
  cold_compile(&(gemm_spec){.dtype = TIRX_BF16, .m = 8192, .n = 8192, .k = 8192,
                            .epilogue = TIRX_EPILOGUE_BIAS_SILU}, "M=8192 bias+silu");
  cold_compile(&(gemm_spec){.dtype = TIRX_BF16, .m = 1, .n = 4096, .k = 14336}, "M=1");
  fflush(stdout);
  tirx_runtime *rt = NULL;
  CHECK(tirx_runtime_create(NULL, &rt));
  if (!tirx_runtime_has_device(rt)) {
    printf("gemm: no CUDA device (%s): nothing measured\n", tirx_runtime_device_error(rt));
    tirx_runtime_destroy(rt);
    return 0;
  }
  if (!cublas_load()) {
    printf("gemm: libcublas could not be loaded (%s): nothing measured\n", dlerror());
    tirx_runtime_destroy(rt);
    return 0;
  }
  FILE *f = csv ? fopen(csv, "w") : NULL;
  if (f) fprintf(f, "case,dtype,m,n,k,tirx_us,cublas_us,tirx_tflops,cublas_tflops,ratio,max_rel_err\n");

  static const int64_t nk[8][2] = {{6144, 4096}, {4096, 4096}, {28672, 4096}, {4096, 14336},
                                   {10240, 8192}, {8192, 8192}, {57344, 8192}, {8192, 28672}};
  static const int64_t decode_m[5] = {1, 16, 64, 128, 256};
  row rows[128];
  int nrows = 0;
  for (int d = 0; d < 2; d++)
    for (int s = 0; s < 8; s++)
      rows[nrows++] = (row){"llama", 8192, nk[s][0], nk[s][1], d ? TIRX_F16 : TIRX_BF16, TIRX_EPILOGUE_NONE};
  for (int mi = 0; mi < 5 && !quick; mi++)
    for (int s = 0; s < 8; s++)
      rows[nrows++] = (row){"decode", decode_m[mi], nk[s][0], nk[s][1], TIRX_BF16, TIRX_EPILOGUE_NONE};
  for (int s = 0; s < (quick ? 1 : 3); s++)
    rows[nrows++] = (row){"bias_silu", 8192, nk[s][0], nk[s][1], TIRX_BF16, TIRX_EPILOGUE_BIAS_SILU};

  double lg[3] = {0}, cnt[3] = {0}, worst_ratio[3] = {1e9, 1e9, 1e9};
  int failures = 0;
  printf("%-9s %-4s %6s %6s %6s %9s %9s %8s %8s %6s %9s\n", "case", "type", "M", "N", "K",
         "tirx_us", "cublas_us", "tirx_TF", "cublas_TF", "ratio", "max_rel");
  for (int r = 0; r < nrows; r++) {
    const row *w = &rows[r];
    gemm_spec spec = {.dtype = w->dt, .m = w->m, .n = w->n, .k = w->k, .epilogue = w->ep};
    char err[4096] = "";
    tirx_kernel *kern = gemm_build(&spec, err, sizeof err);
    if (!kern) {
      printf("%s %lldx%lldx%lld: build failed: %s\n", w->name, (long long)w->m, (long long)w->n,
             (long long)w->k, err);
      failures++;
      continue;
    }
    dev_mat a = mat_random(rt, w->dt, (size_t)(w->m * w->k), 1.0f);
    dev_mat bm = mat_random(rt, w->dt, (size_t)(w->n * w->k), 1.0f);
    dev_mat bias = mat_random(rt, w->dt, (size_t)w->n, 1.0f);
    void *c = NULL;
    size_t cbytes = (size_t)(w->m * w->n) * 2;
    CHECK(tirx_runtime_alloc(rt, cbytes + 256, &c));
    CHECK(tirx_runtime_fill32(rt, c, 0xffffffffu, cbytes / 4)); /* NaN: unwritten elements fail */
    tirx_arg args[7] = {
        tirx_arg_i32((int32_t)w->m), tirx_arg_i32((int32_t)w->n), tirx_arg_i32((int32_t)w->k),
        tirx_arg_tensor(a.dev, w->dt, 2, (int64_t[]){w->m, w->k}, NULL),
        tirx_arg_tensor(bm.dev, w->dt, 2, (int64_t[]){w->k, w->n}, (int64_t[]){1, w->k}),
        tirx_arg_tensor(c, w->dt, 2, (int64_t[]){w->m, w->n}, NULL),
        tirx_arg_tensor(bias.dev, w->dt, 2, (int64_t[]){1, w->n}, NULL)};
    int na = w->ep == TIRX_EPILOGUE_NONE ? 6 : 7;
    if (tirx_launch(rt, kern, args, na, NULL) != TIRX_OK ||
        tirx_runtime_synchronize(rt, NULL) != TIRX_OK) {
      printf("%s %lldx%lldx%lld: launch failed: %s\n", w->name, (long long)w->m, (long long)w->n,
             (long long)w->k, tirx_last_error());
      return 1; /* a sticky error: nothing more can run */
    }
    bool ok;
    double rel = check(rt, w->dt, &spec, &a, &bm, &bias, c, &ok);
    if (!ok) failures++;
    double tus = time_tirx(rt, kern, args, na, reps);
    tirx_kernel *post = NULL;
    tirx_arg pargs[4] = {tirx_arg_i32((int32_t)w->m), tirx_arg_i32((int32_t)w->n),
                         tirx_arg_tensor(c, w->dt, 2, (int64_t[]){w->m, w->n}, NULL),
                         tirx_arg_tensor(bias.dev, w->dt, 2, (int64_t[]){1, w->n}, NULL)};
    if (w->ep == TIRX_EPILOGUE_BIAS_SILU) post = bias_silu_kernel(w->dt);
    double cus = time_cublas(rt, w->dt, &spec, a.dev, bm.dev, c, post, pargs, 4, reps);
    tirx_kernel_release(post);
    double flops = 2.0 * (double)w->m * (double)w->n * (double)w->k;
    double ttf = flops / tus / 1e6, ctf = flops / cus / 1e6, ratio = cus / tus;
    int g = strcmp(w->name, "llama") == 0 ? (w->dt == TIRX_BF16 ? 0 : 1) : 2;
    if (strcmp(w->name, "bias_silu") != 0) {
      lg[g] += log(ratio), cnt[g] += 1;
      if (ratio < worst_ratio[g]) worst_ratio[g] = ratio;
    }
    printf("%-9s %-4s %6lld %6lld %6lld %9.1f %9.1f %8.1f %8.1f %6.3f %9.2e%s\n", w->name,
           w->dt == TIRX_BF16 ? "bf16" : "f16", (long long)w->m, (long long)w->n, (long long)w->k,
           tus, cus, ttf, ctf, ratio, rel, ok ? "" : "  WRONG");
    fflush(stdout);
    if (f)
      fprintf(f, "%s,%s,%lld,%lld,%lld,%.2f,%.2f,%.1f,%.1f,%.4f,%.3e\n", w->name,
              w->dt == TIRX_BF16 ? "bf16" : "f16", (long long)w->m, (long long)w->n,
              (long long)w->k, tus, cus, ttf, ctf, ratio, rel);
    tirx_kernel_release(kern);
    mat_free(rt, &a);
    mat_free(rt, &bm);
    mat_free(rt, &bias);
    tirx_runtime_free(rt, c);
  }
  static const char *gname[3] = {"M=8192 bf16", "M=8192 f16", "decode bf16"};
  for (int g = 0; g < 3; g++)
    if (cnt[g])
      printf("geomean ratio to cuBLAS, %s: %.3f (lowest %.3f, %d shapes)\n", gname[g],
             exp(lg[g] / cnt[g]), worst_ratio[g], (int)cnt[g]);
  printf("wrong results: %d\n", failures);
  if (f) fclose(f);
  cublas.destroy(cublas.handle);
  tirx_runtime_destroy(rt);
  return failures ? 1 : 0;
}
