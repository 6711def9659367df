/*
 * gemm: the builder's Hopper GEMM (examples/gemm.c) against cuBLAS (cublasGemmEx, loaded with
 * dlopen), side by side in one run.
 *
 *   gemm [out.csv] [reps] [--quick]
 *
 * Shapes: M = 8192 with the (N, K) of LLaMA-3.1-8B and 70B, f16 and bf16; decode-like M in
 * {1, 2, 4, 8, 16, 32, 64, 128, 256} n_only the same (N, K), bf16 and f16; a fused bias+SiLU
 * epilogue against cuBLAS followed by a separate elementwise kernel (bf16, M = 8192). Each
 * case: the path tirx_op_gemm takes (tirx_kernels_gemm_plan: "gemv" for M <= 8, else "wgmma"
 * with its tile shape) is built for the shape, launched once and checked n_only 512 sampled
 * elements against a float64 reference n_only the host (relative error within the dtype's
 * rounding); then warm-up, then `reps` samples of 5 back-to-back launches followed by a
 * synchronize (host clock), median per launch, for tirx and cuBLAS alike (the split-K path's
 * rows, two launches and a workspace, through tirx_op_gemm itself). For M <= 8 also
 * the weights' bytes (N K 2) over the time against a device copy of a buffer of the same
 * size measured in the same run (10 back-to-back device-to-device tirx_runtime_copy calls,
 * cuMemcpyDtoD, then a synchronize; median; its bandwidth counts the bytes read and written).
 * Prints TFLOP/s, the ratio per shape and the path, and the geometric means (per group, and
 * of the weights' bandwidth over the copy's for M <= 8); CSV columns case,dtype,m,n,k,path,
 * tirx_us,cublas_us,tirx_tflops,cublas_tflops,ratio,max_rel_err,weights_gbps,copy_gbps,
 * ratio_copy (the last three empty for M > 8).
 *
 * TIRX_BENCH_GEMM_ONLY=M,N,K runs only the rows of that shape (both dtypes; for ncu).
 * TIRX_BENCH_GEMM_MS=128,256 keeps only the decode rows of those M.
 * TIRX_BENCH_GEMM_DECODE_ONLY=1 leaves out every row but the decode ones (M = 8192, epilogues).
 * TIRX_BENCH_GEMM_CLUSTER=1x1|2x1|1x2 forces the wgmma paths' cluster shape (M > 4; the path
 * column says /c2x1 or /c1x2 where a cluster is used).
 * TIRX_BENCH_GEMM_DTYPE=bf16|f16 keeps only the rows of that type.
 * TIRX_BENCH_GEMM_FUSED=silu|gelu|both replaces the three bf16 bias+SiLU rows with fused rows of
 * those epilogues in both dtypes on the same three (N, K) at M = 8192 (cuBLAS followed by a
 * separate bias+SiLU or bias+GeLU kernel as the anchor): an A/B of the fused epilogues.
 * For A/B runs in one device call: TIRX_BENCH_GEMM_PATH=wgmma|gemv|splitk forces that path on
 * only the rows where it applies (gemv: M <= 8; the others: family wgmma),
 * TIRX_BENCH_GEMV_ROWS=1|2|4 forces the gemv path's rows of B per CTA, and
 * TIRX_BENCH_GEMM_SPLITS=2..64 forces the split-K path with that many K splits (as the plan
 * trims them) on the rows of M <= 256.
 *
 * First, with or without a GPU: the cold compile of four GEMM variants (M=8192 plain and
 * bias+SiLU, a decode shape on the wgmma and the gemv path), each on a runtime of its own with
 * a fresh, empty disk cache, and with NVRTC's own cache off (bench_nvrtc_cache_off: with it on,
 * a GPU host answers a source it compiled before, in the GPU suite say, after the front end
 * alone, and the "cold" plain GEMM printed 25-50 ms beside a real 450 ms bias+SiLU):
 *   build         gemm_build: builder, dispatch, the CUDA source
 *   launch miss   tirx_prepare_async and its wait: plan, the launch variant's source (with its
 *                 DIV16 #defines) and key, the disk miss, the compile queue's start, the compile
 *                 (in a compile worker that the runtime starts for it, else in the process),
 *                 the store's write and, with a GPU, the module load
 *   NVRTC         the launch miss's compile as the runtime reports it (TIRX_EVENT_COMPILE_
 *                 FINISHED's nvrtc_millis): with compile workers, a worker's start-up included
 *   tirx_compile  tirx_compile for sm_90a of the kernel's own source (no DIV16 #defines, so
 *                 not the variant the launch compiled), PTX kept, in the worker already started
 * and ptxas' register and spill report for that PTX (the toolkit's ptxas -v: $CUDA_HOME, else
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

/* The split-K path's two launches and its workspace are tirx_op_gemm's: those rows time the
 * op (its argument checks and table lookup included: well under a microsecond). */
typedef struct op_call {
  tirx_gemm_options o;
  tirx_tensor_arg a, b, bias, c;
  int64_t a_shape[2], b_shape[2], c_shape[2], bias_shape[1];
} op_call;

static tirx_status launch_one(tirx_runtime *rt, tirx_kernel *kern, tirx_arg *args, int na,
                              const op_call *op) {
  if (kern) return tirx_launch(rt, kern, args, na, NULL);
  return tirx_op_gemm(rt, &op->o, &op->a, &op->b,
                      op->o.epilogue == TIRX_EPILOGUE_NONE ? NULL : &op->bias, &op->c, NULL);
}

static double time_tirx(tirx_runtime *rt, tirx_kernel *kern, tirx_arg *args, int na,
                        const op_call *op, int reps) {
  for (int i = 0; i < 3; i++) CHECK(launch_one(rt, kern, args, na, op));
  CHECK(tirx_runtime_synchronize(rt, NULL));
  double *t = malloc((size_t)reps * sizeof *t);
  for (int r = 0; r < reps; r++) {
    double t0 = now_us();
    for (int i = 0; i < 5; i++) CHECK(launch_one(rt, kern, args, na, op));
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

/* out[i, j] = act(c[i, j] + bias[j]), act SiLU (ep TIRX_EPILOGUE_BIAS_SILU) or GeLU (erf, as the
 * fused epilogue): the separate elementwise kernel after cuBLAS. */
static tirx_kernel *bias_act_kernel(tirx_dtype dt, tirx_epilogue ep) {
  tirx_builder *b = tirx_builder_create(ep == TIRX_EPILOGUE_BIAS_GELU ? "bias_gelu" : "bias_silu");
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
  tirx_expr *y =
      ep == TIRX_EPILOGUE_BIAS_GELU
          ? tirx_mul(b, tirx_mul(b, tirx_float(b, 0.5, TIRX_F32), x),
                     tirx_add(b, tirx_float(b, 1.0, TIRX_F32),
                              tirx_erf(b, tirx_mul(b, x, tirx_float(b, 0.70710678118654752, TIRX_F32)))))
          : tirx_mul(b, x, tirx_math(b, TIRX_MATH_SIGMOID, x));
  tirx_store(b, c, TIRX_EXPRS(r, col), tirx_cast(b, y, dt));
  tirx_if_end(b);
  tirx_kernel *k = NULL;
  if (tirx_kernel_build(b, &k) != TIRX_OK)
    fprintf(stderr, "%s: %s\n", ep == TIRX_EPILOGUE_BIAS_GELU ? "bias_gelu" : "bias_silu",
            tirx_builder_error(b));
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

/* The launch arguments of the plan's kernel (kernels.h): the wgmma kernel's seven, or the
 * gemv kernel's twelve; dense operands. The shapes live in *la. */
typedef struct launch_args {
  int64_t a_shape[2], b_shape[2], b_strides[2], c_shape[2], bias_shape[2], al, bl, cl;
  tirx_arg args[12];
  int n; /* with the bias; one fewer without */
} launch_args;

static void make_args(launch_args *la, const gemm_spec *s, bool gemv, void *a, void *b, void *c,
                      void *bias) {
  int64_t m = s->m, n = s->n, k = s->k;
  la->bias_shape[0] = 1, la->bias_shape[1] = n;
  if (gemv) {
    la->al = (m - 1) * k + k, la->bl = (n - 1) * k + k, la->cl = (m - 1) * n + n;
    tirx_arg g[12] = {tirx_arg_i32((int32_t)n), tirx_arg_i32((int32_t)k), tirx_arg_i64(k / 8),
                      tirx_arg_i64(k / 8), tirx_arg_i64(n), tirx_arg_i64(la->al),
                      tirx_arg_i64(la->bl), tirx_arg_i64(la->cl),
                      tirx_arg_tensor(a, s->dtype, 1, &la->al, NULL),
                      tirx_arg_tensor(b, s->dtype, 1, &la->bl, NULL),
                      tirx_arg_tensor(c, s->dtype, 1, &la->cl, NULL),
                      tirx_arg_tensor(bias, s->dtype, 2, la->bias_shape, NULL)};
    memcpy(la->args, g, sizeof g);
    la->n = 12;
  } else {
    la->a_shape[0] = m, la->a_shape[1] = k;
    la->b_shape[0] = k, la->b_shape[1] = n, la->b_strides[0] = 1, la->b_strides[1] = k;
    la->c_shape[0] = m, la->c_shape[1] = n;
    tirx_arg w[7] = {tirx_arg_i32((int32_t)m), tirx_arg_i32((int32_t)n), tirx_arg_i32((int32_t)k),
                     tirx_arg_tensor(a, s->dtype, 2, la->a_shape, NULL),
                     tirx_arg_tensor(b, s->dtype, 2, la->b_shape, la->b_strides),
                     tirx_arg_tensor(c, s->dtype, 2, la->c_shape, NULL),
                     tirx_arg_tensor(bias, s->dtype, 2, la->bias_shape, NULL)};
    memcpy(la->args, w, sizeof w);
    la->n = 7;
  }
  if (s->epilogue == TIRX_EPILOGUE_NONE) la->n--;
}

/* Keeps the NVRTC time of the last COMPILE_FINISHED event; written on the compile thread before
 * the request's future is finished, so the waiter reads it after its wait. */
static void on_compiled(const tirx_event *ev, void *user) {
  if (ev->kind == TIRX_EVENT_COMPILE_FINISHED) *(double *)user = ev->nvrtc_millis;
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
  double miss_nvrtc_ms = -1;
  tirx_runtime_options o = {.cache_dir = dir, .on_event = on_compiled, .event_user = &miss_nvrtc_ms};
  tirx_runtime *rt = NULL;
  CHECK(tirx_runtime_create(&o, &rt));
  /* Arguments of the spec's shape; the pointers are checked (16-byte aligned), never read. */
  void *fake = (void *)(uintptr_t)4096;
  launch_args la;
  make_args(&la, s, s->path == TIRX_GEMM_PATH_GEMV, fake, fake, fake, fake);
  tirx_future *f = NULL;
  t0 = now_us();
  tirx_status st = tirx_prepare_async(rt, k, la.args, la.n, &f);
  if (st == TIRX_OK) st = tirx_future_wait(f, -1);
  double miss_ms = (now_us() - t0) / 1e3;
  tirx_future_release(f);
  if (st != TIRX_OK) printf("  %s: prepare failed: %s\n", what, tirx_last_error());
  tirx_compiled *c = NULL;
  t0 = now_us();
  tirx_status cst = tirx_compile(rt, k, "sm_90a", &c);
  double nvrtc_ms = (now_us() - t0) / 1e3;
  printf("  %-34s build %6.1f ms, launch miss (fresh cache) %7.1f ms (NVRTC %7.1f), "
         "tirx_compile %7.1f ms\n",
         tirx_kernel_name(k), build_ms, miss_ms, miss_nvrtc_ms, nvrtc_ms);
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
  /* --decode-lite: only bf16 decode rows at M = 1, 8, 64 (a short device call) */
  bool lite = argc > 3 && strcmp(argv[3], "--decode-lite") == 0;
  if (reps < 3) reps = 3;
  seed_state = (uint64_t)time(NULL) * 2654435761u;
  bench_nvrtc_cache_off();
  printf("cold compile of one GEMM variant (target: launch miss <= 150 ms; NVRTC's own cache "
         "off):\n");
  cold_compile(&(gemm_spec){.dtype = TIRX_BF16, .m = 8192, .n = 8192, .k = 8192}, "M=8192");
  cold_compile(&(gemm_spec){.dtype = TIRX_BF16, .m = 8192, .n = 8192, .k = 8192,
                            .epilogue = TIRX_EPILOGUE_BIAS_SILU}, "M=8192 bias+silu");
  cold_compile(&(gemm_spec){.dtype = TIRX_BF16, .m = 1, .n = 4096, .k = 14336}, "M=1 wgmma");
  cold_compile(&(gemm_spec){.dtype = TIRX_BF16, .m = 1, .n = 4096, .k = 14336,
                            .path = TIRX_GEMM_PATH_GEMV}, "M=1 gemv");
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
  if (f)
    fprintf(f, "case,dtype,m,n,k,path,tirx_us,cublas_us,tirx_tflops,cublas_tflops,ratio,"
               "max_rel_err,weights_gbps,copy_gbps,ratio_copy\n");

  static const int64_t nk[8][2] = {{6144, 4096}, {4096, 4096}, {28672, 4096}, {4096, 14336},
                                   {10240, 8192}, {8192, 8192}, {57344, 8192}, {8192, 28672}};
  static const int64_t decode_m[9] = {1, 2, 4, 8, 16, 32, 64, 128, 256};
  row rows[200];
  int nrows = 0;
  for (int d = 0; d < 2 && !lite; d++)
    for (int s = 0; s < 8; s++)
      rows[nrows++] = (row){"llama", 8192, nk[s][0], nk[s][1], d ? TIRX_F16 : TIRX_BF16, TIRX_EPILOGUE_NONE};
  for (int d = 0; d < (lite ? 1 : 2) && !quick; d++)
    for (int mi = 0; mi < 9; mi++)
      if (!lite || decode_m[mi] == 1 || decode_m[mi] == 8 || decode_m[mi] == 64)
      for (int s = 0; s < 8; s++)
        rows[nrows++] = (row){"decode", decode_m[mi], nk[s][0], nk[s][1], d ? TIRX_F16 : TIRX_BF16,
                              TIRX_EPILOGUE_NONE};
  /* TIRX_BENCH_GEMM_FUSED=silu|gelu|both: the fused rows of those epilogues in both dtypes */
  const char *fused = getenv("TIRX_BENCH_GEMM_FUSED");
  if (fused && strcmp(fused, "silu") && strcmp(fused, "gelu") && strcmp(fused, "both")) {
    fprintf(stderr, "gemm: TIRX_BENCH_GEMM_FUSED is \"%s\", expected silu, gelu or both\n", fused);
    return 2;
  }
  for (int e = 0; e < 2; e++) {
    bool silu = e == 0;
    if (fused ? !strcmp(fused, silu ? "gelu" : "silu") : !silu) continue;
    for (int d = 0; d < (fused ? 2 : 1); d++)
      for (int s = 0; s < (quick ? 1 : lite ? 0 : 3); s++)
        rows[nrows++] = (row){silu ? "bias_silu" : "bias_gelu", 8192, nk[s][0], nk[s][1],
                              d ? TIRX_F16 : TIRX_BF16,
                              silu ? TIRX_EPILOGUE_BIAS_SILU : TIRX_EPILOGUE_BIAS_GELU};
  }

  /* Groups: M=8192 bf16, f16; decode bf16, f16; and the weights' bandwidth over the copy's
   * for M <= 8 (both dtypes); decode bf16 at the M of the issue (1, 16, 64, 128, 256); the
   * fused rows (against cuBLAS and the separate bias+activation kernel). */
  double lg[7] = {0}, cnt[7] = {0}, worst_ratio[7] = {1e9, 1e9, 1e9, 1e9, 1e9, 1e9, 1e9};
  int failures = 0;
  printf("%-9s %-4s %6s %6s %6s %-18s %9s %9s %8s %8s %6s %9s %8s %8s %6s\n", "case", "type",
         "M", "N", "K", "path", "tirx_us", "cublas_us", "tirx_TF", "cublas_TF", "ratio",
         "max_rel", "w_GB/s", "copyGB/s", "/copy");
  /* TIRX_BENCH_GEMM_ONLY=M,N,K: only the rows of that shape (both dtypes), e.g. under ncu */
  const char *only = getenv("TIRX_BENCH_GEMM_ONLY");
  long long m_only = 0, n_only = 0, k_only = 0;
  if (only && sscanf(only, "%lld,%lld,%lld", &m_only, &n_only, &k_only) != 3) {
    fprintf(stderr, "gemm: TIRX_BENCH_GEMM_ONLY is \"%s\", expected M,N,K\n", only);
    return 2;
  }
  /* TIRX_BENCH_GEMM_MS=128,256: only the decode rows of those M (the M = 8192 rows stay) */
  const char *ms_only = getenv("TIRX_BENCH_GEMM_MS");
  const char *decode_only = getenv("TIRX_BENCH_GEMM_DECODE_ONLY");
  const char *dt_only = getenv("TIRX_BENCH_GEMM_DTYPE");
  const char *splits_env = getenv("TIRX_BENCH_GEMM_SPLITS");
  if (dt_only && strcmp(dt_only, "bf16") && strcmp(dt_only, "f16")) {
    fprintf(stderr, "gemm: TIRX_BENCH_GEMM_DTYPE is \"%s\", expected bf16 or f16\n", dt_only);
    return 2;
  }
  int force_splits = splits_env ? atoi(splits_env) : 0;
  if (splits_env && (force_splits < 2 || force_splits > 64)) {
    fprintf(stderr, "gemm: TIRX_BENCH_GEMM_SPLITS is \"%s\", expected 2 to 64\n", splits_env);
    return 2;
  }
  for (int r = 0; r < nrows; r++) {
    const row *w = &rows[r];
    if (only && (w->m != m_only || w->n != n_only || w->k != k_only)) continue;
    if (decode_only && !strcmp(decode_only, "1") && strcmp(w->name, "decode") != 0) continue;
    if (dt_only && (strcmp(dt_only, "bf16") == 0) != (w->dt == TIRX_BF16)) continue;
    if (ms_only && strcmp(w->name, "decode") == 0) {
      char mtext[24];
      snprintf(mtext, sizeof mtext, ",%lld,", (long long)w->m);
      char list[128];
      snprintf(list, sizeof list, ",%s,", ms_only);
      if (!strstr(list, mtext)) continue;
    }
    gemm_spec spec = {.dtype = w->dt, .m = w->m, .n = w->n, .k = w->k, .epilogue = w->ep};
    const char *fp = getenv("TIRX_BENCH_GEMM_PATH"), *fr = getenv("TIRX_BENCH_GEMV_ROWS");
    if (fp && !strcmp(fp, "wgmma")) spec.path = TIRX_GEMM_PATH_WGMMA;
    if (fp && !strcmp(fp, "splitk")) spec.path = TIRX_GEMM_PATH_WGMMA_SPLITK;
    if (fp && !strcmp(fp, "gemv") && w->m <= 8) spec.path = TIRX_GEMM_PATH_GEMV;
    if (fr && (!strcmp(fr, "1") || !strcmp(fr, "2") || !strcmp(fr, "4"))) spec.gemv_rows = atoi(fr);
    if (force_splits && w->m <= 256)
      spec.path = TIRX_GEMM_PATH_WGMMA_SPLITK, spec.splits = force_splits;
    const char *fc = getenv("TIRX_BENCH_GEMM_CLUSTER");
    if (fc && (!strcmp(fc, "1x1") || !strcmp(fc, "2x1") || !strcmp(fc, "1x2")) && w->m > 4)
      spec.cluster_m = fc[0] - '0', spec.cluster_n = fc[2] - '0';
    tirx_gemm_options po = gemm_options(&spec);
    tirx_gemm_plan plan = {.size = sizeof plan};
    CHECK(tirx_kernels_gemm_plan(&po, w->m, w->n, w->k, &plan));
    spec.path = plan.path, spec.gemv_rows = plan.gemv_rows; /* what tirx_op_gemm launches */
    bool gemv = plan.path == TIRX_GEMM_PATH_GEMV;
    char path[40];
    if (gemv)
      snprintf(path, sizeof path, "gemv/r%d", plan.gemv_rows);
    else
      snprintf(path, sizeof path, "%s/%dx%dx%d%s", plan.name, plan.tiles.block_m,
               plan.tiles.block_n, plan.tiles.stages,
               plan.cluster_m > 1 ? "/c2x1" : plan.cluster_n > 1 ? "/c1x2" : "");
    char err[4096] = "";
    bool splitk = plan.path == TIRX_GEMM_PATH_WGMMA_SPLITK;
    tirx_kernel *kern = splitk ? NULL : gemm_build(&spec, err, sizeof err);
    if (!kern && !splitk) {
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
    launch_args la;
    make_args(&la, &spec, gemv, a.dev, bm.dev, c, bias.dev);
    tirx_arg *args = la.args;
    int na = la.n;
    op_call op = {.o = po};
    op.a_shape[0] = w->m, op.a_shape[1] = w->k, op.b_shape[0] = w->n, op.b_shape[1] = w->k;
    op.c_shape[0] = w->m, op.c_shape[1] = w->n, op.bias_shape[0] = w->n;
    op.a = (tirx_tensor_arg){a.dev, w->dt, 2, op.a_shape, NULL};
    op.b = (tirx_tensor_arg){bm.dev, w->dt, 2, op.b_shape, NULL};
    op.c = (tirx_tensor_arg){c, w->dt, 2, op.c_shape, NULL};
    op.bias = (tirx_tensor_arg){bias.dev, w->dt, 1, op.bias_shape, NULL};
    if (launch_one(rt, kern, args, na, &op) != TIRX_OK ||
        tirx_runtime_synchronize(rt, NULL) != TIRX_OK) {
      printf("%s %lldx%lldx%lld: launch failed: %s\n", w->name, (long long)w->m, (long long)w->n,
             (long long)w->k, tirx_last_error());
      return 1; /* a sticky error: nothing more can run */
    }
    bool ok;
    double rel = check(rt, w->dt, &spec, &a, &bm, &bias, c, &ok);
    if (!ok) failures++;
    double tus = time_tirx(rt, kern, args, na, &op, reps);
    tirx_kernel *post = NULL;
    tirx_arg pargs[4] = {tirx_arg_i32((int32_t)w->m), tirx_arg_i32((int32_t)w->n),
                         tirx_arg_tensor(c, w->dt, 2, (int64_t[]){w->m, w->n}, NULL),
                         tirx_arg_tensor(bias.dev, w->dt, 2, (int64_t[]){1, w->n}, NULL)};
    if (w->ep == TIRX_EPILOGUE_BIAS_SILU || w->ep == TIRX_EPILOGUE_BIAS_GELU)
      post = bias_act_kernel(w->dt, w->ep);
    double cus = time_cublas(rt, w->dt, &spec, a.dev, bm.dev, c, post, pargs, 4, reps);
    tirx_kernel_release(post);
    double flops = 2.0 * (double)w->m * (double)w->n * (double)w->k;
    double ttf = flops / tus / 1e6, ctf = flops / cus / 1e6, ratio = cus / tus;
    int g = strcmp(w->name, "llama") == 0 ? (w->dt == TIRX_BF16 ? 0 : 1)
                                          : (w->dt == TIRX_BF16 ? 2 : 3);
    if (w->ep != TIRX_EPILOGUE_NONE) g = 6; /* the fused rows: a group of their own */
    lg[g] += log(ratio), cnt[g] += 1;
    if (ratio < worst_ratio[g]) worst_ratio[g] = ratio;
    if (g == 2 && (w->m == 1 || w->m >= 16) && (w->m & (w->m - 1)) == 0 && w->m != 32) {
      lg[5] += log(ratio), cnt[5] += 1;
      if (ratio < worst_ratio[5]) worst_ratio[5] = ratio;
    }
    /* M <= 8: the weights' bytes over the time, against a device copy of as many bytes. */
    char bw[64] = "", bwcsv[64] = ",,";
    if (w->m <= 8) {
      size_t wbytes = (size_t)(w->n * w->k) * 2;
      void *dst = NULL;
      CHECK(tirx_runtime_alloc(rt, wbytes, &dst));
      double *t = malloc((size_t)reps * sizeof *t);
      CHECK(tirx_runtime_copy(rt, dst, bm.dev, wbytes, TIRX_COPY_DEVICE_TO_DEVICE));
      CHECK(tirx_runtime_synchronize(rt, NULL));
      for (int q = 0; q < reps; q++) {
        double t0 = now_us();
        for (int i = 0; i < 10; i++)
          CHECK(tirx_runtime_copy(rt, dst, bm.dev, wbytes, TIRX_COPY_DEVICE_TO_DEVICE));
        CHECK(tirx_runtime_synchronize(rt, NULL));
        t[q] = (now_us() - t0) / 10;
      }
      double copy_us = median(t, reps);
      free(t);
      tirx_runtime_free(rt, dst);
      double wgbps = (double)wbytes / tus / 1e3, cgbps = 2.0 * (double)wbytes / copy_us / 1e3;
      double rc = wgbps / cgbps;
      lg[4] += log(rc), cnt[4] += 1;
      if (rc < worst_ratio[4]) worst_ratio[4] = rc;
      snprintf(bw, sizeof bw, " %8.0f %8.0f %6.3f", wgbps, cgbps, rc);
      snprintf(bwcsv, sizeof bwcsv, "%.1f,%.1f,%.4f", wgbps, cgbps, rc);
    }
    printf("%-9s %-4s %6lld %6lld %6lld %-18s %9.1f %9.1f %8.1f %8.1f %6.3f %9.2e%s%s\n",
           w->name, w->dt == TIRX_BF16 ? "bf16" : "f16", (long long)w->m, (long long)w->n,
           (long long)w->k, path, tus, cus, ttf, ctf, ratio, rel, bw, ok ? "" : "  WRONG");
    fflush(stdout);
    if (f)
      fprintf(f, "%s,%s,%lld,%lld,%lld,%s,%.2f,%.2f,%.1f,%.1f,%.4f,%.3e,%s\n", w->name,
              w->dt == TIRX_BF16 ? "bf16" : "f16", (long long)w->m, (long long)w->n,
              (long long)w->k, path, tus, cus, ttf, ctf, ratio, rel, bwcsv);
    tirx_kernel_release(kern);
    mat_free(rt, &a);
    mat_free(rt, &bm);
    mat_free(rt, &bias);
    tirx_runtime_free(rt, c);
  }
  static const char *gname[4] = {"M=8192 bf16", "M=8192 f16", "decode bf16", "decode f16"};
  for (int g = 0; g < 4; g++)
    if (cnt[g])
      printf("geomean ratio to cuBLAS, %s: %.3f (lowest %.3f, %d shapes)\n", gname[g],
             exp(lg[g] / cnt[g]), worst_ratio[g], (int)cnt[g]);
  if (cnt[5])
    printf("geomean ratio to cuBLAS, decode bf16 at M in {1, 16, 64, 128, 256}: %.3f (lowest "
           "%.3f, %d shapes; target >= 1.00, none below 0.90)\n", exp(lg[5] / cnt[5]),
           worst_ratio[5], (int)cnt[5]);
  if (cnt[6])
    printf("geomean ratio to cuBLAS + a bias/activation kernel, fused epilogues (M = 8192): "
           "%.3f (lowest %.3f, %d shapes)\n", exp(lg[6] / cnt[6]), worst_ratio[6], (int)cnt[6]);
  if (cnt[4])
    printf("geomean weights' bandwidth over the copy's, M <= 8: %.3f (lowest %.3f, %d shapes)\n",
           exp(lg[4] / cnt[4]), worst_ratio[4], (int)cnt[4]);
  printf("wrong results: %d\n", failures);
  if (f) fclose(f);
  cublas.destroy(cublas.handle);
  tirx_runtime_destroy(rt);
  return failures ? 1 : 0;
}
