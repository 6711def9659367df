/*
 * GPU tests: every example kernel against a float64 CPU reference on fresh random inputs
 * (the seed is printed; TIRX_SEED replays it) with poisoned outputs, sizes 1, 7, 1000 and
 * 1000003, non-contiguous strides; a bad-argument matrix that must fail without launching;
 * the kernel table, context hygiene, threads, and the sticky failure after a device fault.
 *
 * Every test skips cleanly (cr_skip_test) when there is no device. Each Criterion test runs
 * in its own process, so a sticky fault in one cannot poison another; the parent process
 * never touches CUDA.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "jit/jit.h"
#include "demo_kernels.h"
#include "rows_ref.h"
#include "gemm_ref.h"
#include "bounded_sync.h"
#include "e4m3_ref.h"

/* The row kernels' options of the current test (each test runs in its own process). */
static tirx_row_options ro;

/* ---- helpers ---- */

#define POISON 0x7fc0badu

static uint64_t seed_state, seed_initial;

static tirx_runtime *gpu_runtime(void) {
  tirx_runtime *rt = NULL;
  if (tirx_runtime_create(NULL, &rt) != TIRX_OK)
    cr_assert_fail("tirx_runtime_create: %s", tirx_last_error());
  if (!tirx_runtime_has_device(rt)) {
    char why[512];
    snprintf(why, sizeof why, "%s", tirx_runtime_device_error(rt));
    tirx_runtime_destroy(rt);
    cr_skip_test("no CUDA device: %s", why);
  }
  const char *s = getenv("TIRX_SEED");
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  seed_state =
      s && *s ? strtoull(s, NULL, 0) : ((uint64_t)ts.tv_sec * 1000000007ull) ^ (uint64_t)ts.tv_nsec;
  if (!seed_state)
    seed_state = 1;
  seed_initial = seed_state;
  cr_log_info("device %s (%s), seed %llu (TIRX_SEED=%llu replays it)", tirx_runtime_device_name(rt),
              tirx_runtime_arch(rt), (unsigned long long)seed_state,
              (unsigned long long)seed_state);
  return rt;
}

static uint64_t rnd(void) {
  seed_state ^= seed_state >> 12;
  seed_state ^= seed_state << 25;
  seed_state ^= seed_state >> 27;
  return seed_state * 2685821657736338717ull;
}
static float uniform(float lo, float hi) {
  return lo + (hi - lo) * (float)((double)(rnd() >> 11) / 9007199254740992.0);
}
static float *random_floats(size_t n, float lo, float hi) {
  float *p = malloc((n ? n : 1) * sizeof *p);
  cr_assert_not_null(p);
  for (size_t i = 0; i < n; i++)
    p[i] = uniform(lo, hi);
  return p;
}

#define OK(call) cr_assert_eq((call), TIRX_OK, "%s: %s", #call, tirx_last_error())

static float *dev_upload(tirx_runtime *rt, const float *host, size_t n) {
  void *d = NULL;
  OK(tirx_runtime_alloc(rt, (n ? n : 1) * sizeof(float), &d));
  if (host)
    OK(tirx_runtime_copy(rt, d, host, n * sizeof(float), TIRX_COPY_HOST_TO_DEVICE));
  else
    OK(tirx_runtime_fill32(rt, d, POISON, n));
  return d;
}
static float *dev_download(tirx_runtime *rt, const float *d, size_t n) {
  float *h = malloc((n ? n : 1) * sizeof *h);
  cr_assert_not_null(h);
  OK(tirx_runtime_copy(rt, h, d, n * sizeof(float), TIRX_COPY_DEVICE_TO_HOST));
  return h;
}

static void compare(const char *what, const float *got, const double *want, size_t n, double atol,
                    double rtol) {
  double worst = 0;
  size_t bad = 0, first = 0;
  for (size_t i = 0; i < n; i++) {
    double err = fabs((double)got[i] - want[i]);
    if (!(err <= atol + rtol * fabs(want[i]))) {
      if (bad++ == 0)
        first = i;
    } else if (err > worst) {
      worst = err;
    }
  }
  cr_log_info("%s: %zu elements, max abs error %.3g, %zu wrong", what, n, worst, bad);
  cr_assert_eq(bad, 0, "%s: %zu of %zu wrong; first at %zu: got %.9g want %.9g (TIRX_SEED=%llu)",
               what, bad, n, first, bad ? (double)got[first] : 0.0, bad ? want[first] : 0.0,
               (unsigned long long)seed_initial);
}

static tirx_kernel *kernel(tirx_kernel *(*make)(void)) {
  tirx_kernel *k = make();
  cr_assert_not_null(k, "kernel build failed: %s", tirx_last_error());
  return k;
}

static const int64_t sizes[] = {1, 7, 1000, 1000003};

/* ---- vector_add ---- */

static void check_vector_add(tirx_runtime *rt, const tirx_kernel *k, int64_t n) {
  size_t len = (size_t)n;
  float *hx = random_floats(len, -1, 1), *hy = random_floats(len, -1, 1);
  double *want = malloc(len * sizeof *want);
  for (size_t i = 0; i < len; i++)
    want[i] = (double)hx[i] + (double)hy[i];
  float *dx = dev_upload(rt, hx, len), *dy = dev_upload(rt, hy, len),
        *dout = dev_upload(rt, NULL, len);
  tirx_arg args[] = {
      tirx_arg_i64(n),
      tirx_arg_tensor(dx, TIRX_F32, 1, (int64_t[]){n}, NULL),
      tirx_arg_tensor(dy, TIRX_F32, 1, (int64_t[]){n}, NULL),
      tirx_arg_tensor(dout, TIRX_F32, 1, (int64_t[]){n}, NULL),
  };
  OK(tirx_launch(rt, k, args, 4, NULL));
  OK(tirx_runtime_synchronize(rt, NULL));
  float *got = dev_download(rt, dout, len);
  char what[64];
  snprintf(what, sizeof what, "vector_add n=%lld", (long long)n);
  compare(what, got, want, len, 1e-7, 1e-6);
  tirx_runtime_free(rt, dx);
  tirx_runtime_free(rt, dy);
  tirx_runtime_free(rt, dout);
  free(hx);
  free(hy);
  free(want);
  free(got);
}

Test(gpu, vector_add) {
  tirx_runtime *rt = gpu_runtime();
  tirx_kernel *k = kernel(example_vector_add);
  for (int i = 0; i < 4; i++)
    check_vector_add(rt, k, sizes[i]);
  tirx_kernel_release(k);
  tirx_runtime_destroy(rt);
}

/* ---- saxpy, contiguous and strided ---- */

static void check_saxpy(tirx_runtime *rt, const tirx_kernel *k, int64_t n, int64_t sx, int64_t sy) {
  size_t len = (size_t)n, lx = len * (size_t)sx, ly = len * (size_t)sy;
  float a = uniform(-2, 2);
  float *hx = random_floats(lx, -1, 1), *hy = random_floats(ly, -1, 1);
  double *want = malloc(ly * sizeof *want);
  for (size_t i = 0; i < ly; i++)
    want[i] = hy[i];
  for (size_t i = 0; i < len; i++)
    want[i * (size_t)sy] = (double)a * hx[i * (size_t)sx] + (double)hy[i * (size_t)sy];
  float *dx = dev_upload(rt, hx, lx), *dy = dev_upload(rt, hy, ly);
  tirx_arg args[] = {
      tirx_arg_i64(n),
      tirx_arg_f32(a),
      tirx_arg_tensor(dx, TIRX_F32, 1, (int64_t[]){n}, (int64_t[]){sx}),
      tirx_arg_tensor(dy, TIRX_F32, 1, (int64_t[]){n}, (int64_t[]){sy}),
  };
  OK(tirx_launch(rt, k, args, 4, NULL));
  OK(tirx_runtime_synchronize(rt, NULL));
  float *got = dev_download(rt, dy, ly);
  char what[96];
  snprintf(what, sizeof what, "saxpy n=%lld strides (%lld,%lld)", (long long)n, (long long)sx,
           (long long)sy);
  compare(what, got, want, ly, 1e-6, 1e-6);
  tirx_runtime_free(rt, dx);
  tirx_runtime_free(rt, dy);
  free(hx);
  free(hy);
  free(want);
  free(got);
}

Test(gpu, saxpy) {
  tirx_runtime *rt = gpu_runtime();
  tirx_kernel *k = kernel(example_saxpy);
  for (int i = 0; i < 4; i++) {
    check_saxpy(rt, k, sizes[i], 1, 1);
    check_saxpy(rt, k, sizes[i], 3, 2);
    check_saxpy(rt, k, sizes[i], 1, 5);
  }
  tirx_kernel_release(k);
  tirx_runtime_destroy(rt);
}

/* ---- broadcast2d, dense, transposed and padded x ---- */

static void check_broadcast(tirx_runtime *rt, const tirx_kernel *k, int64_t m, int64_t n,
                            int layout) {
  /* layout 0: dense; 1: transposed (column-major); 2: rows padded to n + 3. */
  int64_t sx0 = layout == 0 ? n : layout == 1 ? 1 : n + 3, sx1 = layout == 1 ? m : 1;
  size_t len = (size_t)(m * n), xlen = layout == 2 ? (size_t)(m * (n + 3)) : len;
  float *hx = random_floats(xlen, -1, 1), *hc = random_floats((size_t)m, -2, 2);
  float *hr = random_floats((size_t)n, -1, 1);
  double *want = malloc(len * sizeof *want);
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < n; j++)
      want[i * n + j] = (double)hx[i * sx0 + j * sx1] * hc[i] + (double)hr[j];
  float *dx = dev_upload(rt, hx, xlen), *dc = dev_upload(rt, hc, (size_t)m);
  float *dr = dev_upload(rt, hr, (size_t)n), *dout = dev_upload(rt, NULL, len);
  tirx_arg args[] = {
      tirx_arg_i64(m),
      tirx_arg_i64(n),
      tirx_arg_tensor(dx, TIRX_F32, 2, (int64_t[]){m, n}, (int64_t[]){sx0, sx1}),
      tirx_arg_tensor(dc, TIRX_F32, 1, (int64_t[]){m}, NULL),
      tirx_arg_tensor(dr, TIRX_F32, 1, (int64_t[]){n}, NULL),
      tirx_arg_tensor(dout, TIRX_F32, 2, (int64_t[]){m, n}, NULL),
  };
  OK(tirx_launch(rt, k, args, 6, NULL));
  OK(tirx_runtime_synchronize(rt, NULL));
  float *got = dev_download(rt, dout, len);
  char what[96];
  snprintf(what, sizeof what, "broadcast2d %lldx%lld x strides (%lld,%lld)", (long long)m,
           (long long)n, (long long)sx0, (long long)sx1);
  compare(what, got, want, len, 1e-6, 1e-6);
  tirx_runtime_free(rt, dx);
  tirx_runtime_free(rt, dc);
  tirx_runtime_free(rt, dr);
  tirx_runtime_free(rt, dout);
  free(hx);
  free(hc);
  free(hr);
  free(want);
  free(got);
}

Test(gpu, broadcast2d) {
  tirx_runtime *rt = gpu_runtime();
  tirx_kernel *k = kernel(example_broadcast2d);
  static const int64_t shapes[][2] = {{1, 1},     {7, 1},     {1, 7},       {7, 13},
                                      {1000, 37}, {37, 1000}, {1, 1000003}, {100003, 10}};
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
    for (int layout = 0; layout < 3; layout++)
      check_broadcast(rt, k, shapes[i][0], shapes[i][1], layout);
  /* 1000003 rows need grid y = 125001 > 65535: an error, never a launch. */
  const int64_t m = 1000003;
  float *d = dev_upload(rt, NULL, (size_t)m);
  tirx_arg args[] = {tirx_arg_i64(m),
                     tirx_arg_i64(1),
                     tirx_arg_tensor(d, TIRX_F32, 2, (int64_t[]){m, 1}, NULL),
                     tirx_arg_tensor(d, TIRX_F32, 1, (int64_t[]){m}, NULL),
                     tirx_arg_tensor(d, TIRX_F32, 1, (int64_t[]){1}, NULL),
                     tirx_arg_tensor(d, TIRX_F32, 2, (int64_t[]){m, 1}, NULL)};
  tirx_clear_error();
  cr_assert_eq(tirx_launch(rt, k, args, 6, NULL), TIRX_E_LIMIT, "%s", tirx_last_error());
  cr_assert(strncmp(tirx_last_error(), "tirx_launch: grid y is 125001", 29) == 0, "%s",
            tirx_last_error());
  tirx_runtime_free(rt, d);
  tirx_kernel_release(k);
  tirx_runtime_destroy(rt);
}

/* ---- softmax ---- */

static void check_softmax(tirx_runtime *rt, const tirx_kernel *k, int64_t m, int64_t n) {
  size_t len = (size_t)(m * n);
  float *hx = random_floats(len, -8, 8);
  double *want = malloc(len * sizeof *want);
  for (int64_t i = 0; i < m; i++) {
    const float *x = hx + i * n;
    double mx = -INFINITY, sum = 0;
    for (int64_t j = 0; j < n; j++)
      mx = fmax(mx, x[j]);
    for (int64_t j = 0; j < n; j++)
      sum += exp((double)x[j] - mx);
    for (int64_t j = 0; j < n; j++)
      want[i * n + j] = exp((double)x[j] - mx) / sum;
  }
  float *dx = dev_upload(rt, hx, len), *dout = dev_upload(rt, NULL, len);
  tirx_arg args[] = {
      tirx_arg_i64(m),
      tirx_arg_i64(n),
      tirx_arg_tensor(dx, TIRX_F32, 2, (int64_t[]){m, n}, NULL),
      tirx_arg_tensor(dout, TIRX_F32, 2, (int64_t[]){m, n}, NULL),
  };
  OK(tirx_launch(rt, k, args, 4, NULL));
  OK(tirx_runtime_synchronize(rt, NULL));
  float *got = dev_download(rt, dout, len);
  char what[64];
  snprintf(what, sizeof what, "softmax %lldx%lld", (long long)m, (long long)n);
  compare(what, got, want, len, 1e-12, 1e-4);
  tirx_runtime_free(rt, dx);
  tirx_runtime_free(rt, dout);
  free(hx);
  free(want);
  free(got);
}

Test(gpu, softmax, .timeout = 300) {
  tirx_runtime *rt = gpu_runtime();
  tirx_kernel *k = kernel(example_softmax);
  static const int64_t shapes[][2] = {{1, 1},       {7, 1},     {1, 7},       {7, 7},
                                      {1000, 1000}, {1000, 33}, {1, 1000003}, {1000003, 1}};
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
    check_softmax(rt, k, shapes[i][0], shapes[i][1]);
  tirx_kernel_release(k);
  tirx_runtime_destroy(rt);
}

/* ---- bad arguments: an error, never a launch ---- */

Test(gpu, bad_argument_matrix) {
  tirx_runtime *rt = gpu_runtime();
  tirx_kernel *k = kernel(example_vector_add);
  const int64_t n = 1000;
  float *dx = dev_upload(rt, NULL, n + 1), *dy = dev_upload(rt, NULL, n + 1);
  float *dout = dev_upload(rt, NULL, n + 1);
  const int64_t shape[] = {n}, wrong_shape[] = {n + 1}, shape2[] = {n, 1};
  const char *misaligned = (const char *)dx + 2;
  struct {
    const char *what;
    tirx_arg args[4];
    int nargs;
  } cases[] = {
      {"wrong dtype (f16 for f32)",
       {tirx_arg_i64(n), tirx_arg_tensor(dx, TIRX_F16, 1, shape, NULL),
        tirx_arg_tensor(dy, TIRX_F32, 1, shape, NULL),
        tirx_arg_tensor(dout, TIRX_F32, 1, shape, NULL)},
       4},
      {"wrong dtype (i32 for f32)",
       {tirx_arg_i64(n), tirx_arg_tensor(dx, TIRX_F32, 1, shape, NULL),
        tirx_arg_tensor(dy, TIRX_I32, 1, shape, NULL),
        tirx_arg_tensor(dout, TIRX_F32, 1, shape, NULL)},
       4},
      {"wrong shape (n + 1 with n)",
       {tirx_arg_i64(n), tirx_arg_tensor(dx, TIRX_F32, 1, shape, NULL),
        tirx_arg_tensor(dy, TIRX_F32, 1, wrong_shape, NULL),
        tirx_arg_tensor(dout, TIRX_F32, 1, shape, NULL)},
       4},
      {"wrong rank",
       {tirx_arg_i64(n), tirx_arg_tensor(dx, TIRX_F32, 2, shape2, NULL),
        tirx_arg_tensor(dy, TIRX_F32, 1, shape, NULL),
        tirx_arg_tensor(dout, TIRX_F32, 1, shape, NULL)},
       4},
      {"misaligned pointer",
       {tirx_arg_i64(n), tirx_arg_tensor((void *)misaligned, TIRX_F32, 1, shape, NULL),
        tirx_arg_tensor(dy, TIRX_F32, 1, shape, NULL),
        tirx_arg_tensor(dout, TIRX_F32, 1, shape, NULL)},
       4},
      {"NULL data",
       {tirx_arg_i64(n), tirx_arg_tensor(dx, TIRX_F32, 1, shape, NULL),
        tirx_arg_tensor(dy, TIRX_F32, 1, shape, NULL),
        tirx_arg_tensor(NULL, TIRX_F32, 1, shape, NULL)},
       4},
      {"NULL shape",
       {tirx_arg_i64(n), tirx_arg_tensor(dx, TIRX_F32, 1, NULL, NULL),
        tirx_arg_tensor(dy, TIRX_F32, 1, shape, NULL),
        tirx_arg_tensor(dout, TIRX_F32, 1, shape, NULL)},
       4},
      {"a scalar where a tensor is declared",
       {tirx_arg_i64(n), tirx_arg_f32(1.0f), tirx_arg_tensor(dy, TIRX_F32, 1, shape, NULL),
        tirx_arg_tensor(dout, TIRX_F32, 1, shape, NULL)},
       4},
      {"a tensor where an integer is declared",
       {tirx_arg_tensor(dx, TIRX_F32, 1, shape, NULL),
        tirx_arg_tensor(dx, TIRX_F32, 1, shape, NULL),
        tirx_arg_tensor(dy, TIRX_F32, 1, shape, NULL),
        tirx_arg_tensor(dout, TIRX_F32, 1, shape, NULL)},
       4},
      {"n disagrees with the shapes",
       {tirx_arg_i64(n - 1), tirx_arg_tensor(dx, TIRX_F32, 1, shape, NULL),
        tirx_arg_tensor(dy, TIRX_F32, 1, shape, NULL),
        tirx_arg_tensor(dout, TIRX_F32, 1, shape, NULL)},
       4},
      {"negative size",
       {tirx_arg_i64(-5), tirx_arg_tensor(dx, TIRX_F32, 1, (int64_t[]){-5}, NULL),
        tirx_arg_tensor(dy, TIRX_F32, 1, (int64_t[]){-5}, NULL),
        tirx_arg_tensor(dout, TIRX_F32, 1, (int64_t[]){-5}, NULL)},
       4},
      {"too few arguments", {tirx_arg_i64(n), tirx_arg_tensor(dx, TIRX_F32, 1, shape, NULL)}, 2},
      {"a NULL DLPack tensor",
       {tirx_arg_i64(n), tirx_arg_dlpack(NULL), tirx_arg_tensor(dy, TIRX_F32, 1, shape, NULL),
        tirx_arg_tensor(dout, TIRX_F32, 1, shape, NULL)},
       4},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    tirx_clear_error();
    tirx_status st = tirx_launch(rt, k, cases[i].args, cases[i].nargs, NULL);
    cr_log_info("%-40s -> %s: %s", cases[i].what, tirx_status_name(st), tirx_last_error());
    cr_expect_neq(st, TIRX_OK, "%s: launched", cases[i].what);
    cr_expect(st == TIRX_E_LAUNCH_ARG || st == TIRX_E_NULL_ARG || st == TIRX_E_LIMIT,
              "%s: status %s", cases[i].what, tirx_status_name(st));
    cr_expect(strncmp(tirx_last_error(), "tirx_launch: ", 13) == 0, "%s: message '%s'",
              cases[i].what, tirx_last_error());
  }
  /* Nothing ran: the outputs are still poisoned. */
  OK(tirx_runtime_synchronize(rt, NULL));
  uint32_t *got = (uint32_t *)dev_download(rt, dout, n + 1);
  for (int64_t i = 0; i <= n; i++)
    cr_assert_eq(got[i], POISON, "out[%lld] was written", (long long)i);
  free(got);
  cr_assert_eq(tirx_runtime_health(rt), TIRX_OK);
  tirx_runtime_free(rt, dx);
  tirx_runtime_free(rt, dy);
  tirx_runtime_free(rt, dout);
  tirx_kernel_release(k);
  tirx_runtime_destroy(rt);
}

/* ---- the kernel table, contexts, threads ---- */

Test(gpu, kernels_are_loaded_once_per_hash) {
  tirx_runtime *rt = gpu_runtime();
  tirx_kernel *a = kernel(example_vector_add), *b = kernel(example_vector_add);
  float *d = dev_upload(rt, NULL, 8);
  tirx_arg args[] = {tirx_arg_i64(8), tirx_arg_tensor(d, TIRX_F32, 1, (int64_t[]){8}, NULL),
                     tirx_arg_tensor(d, TIRX_F32, 1, (int64_t[]){8}, NULL),
                     tirx_arg_tensor(d, TIRX_F32, 1, (int64_t[]){8}, NULL)};
  OK(tirx_launch(rt, a, args, 4, NULL));
  cr_assert_eq(rt->nloaded, 1);
  OK(tirx_launch(rt, b, args, 4, NULL)); /* another kernel object, the same source */
  OK(tirx_launch(rt, a, args, 4, NULL));
  cr_assert_eq(rt->nloaded, 1);
  tirx_kernel *c = kernel(example_softmax);
  tirx_arg sargs[] = {tirx_arg_i64(2), tirx_arg_i64(4),
                      tirx_arg_tensor(d, TIRX_F32, 2, (int64_t[]){2, 4}, NULL),
                      tirx_arg_tensor(d, TIRX_F32, 2, (int64_t[]){2, 4}, NULL)};
  OK(tirx_launch(rt, c, sargs, 4, NULL));
  cr_assert_eq(rt->nloaded, 2);
  OK(tirx_runtime_synchronize(rt, NULL));
  tirx_runtime_free(rt, d);
  tirx_kernel_release(a);
  tirx_kernel_release(b);
  tirx_kernel_release(c);
  tirx_runtime_destroy(rt);
}

Test(gpu, host_context_is_left_alone) {
  tirx_runtime *rt = gpu_runtime();
  CUcontext before = (CUcontext)&rt, after = NULL;
  cr_assert_eq(rt->drv.CtxGetCurrent(&before), CUDA_SUCCESS);
  cr_assert_null(before, "the test thread starts without a current context");
  tirx_kernel *k = kernel(example_vector_add);
  check_vector_add(rt, k, 1000);
  cr_assert_eq(rt->drv.CtxGetCurrent(&after), CUDA_SUCCESS);
  cr_assert_null(after, "tirx changed the thread's current context");
  tirx_kernel_release(k);
  tirx_runtime_destroy(rt);
}

typedef struct thread_arg {
  tirx_runtime *rt;
  tirx_kernel *k;
  int failures;
  char message[512];
} thread_arg;

static void *launch_many(void *p) {
  thread_arg *a = p;
  enum { N = 4096 };
  void *d = NULL;
  if (tirx_runtime_alloc(a->rt, N * sizeof(float), &d) != TIRX_OK)
    goto fail;
  if (tirx_runtime_fill32(a->rt, d, 0x3f800000u /* 1.0f */, N) != TIRX_OK)
    goto fail;
  tirx_arg args[] = {tirx_arg_i64(N), tirx_arg_tensor(d, TIRX_F32, 1, (int64_t[]){N}, NULL),
                     tirx_arg_tensor(d, TIRX_F32, 1, (int64_t[]){N}, NULL),
                     tirx_arg_tensor(d, TIRX_F32, 1, (int64_t[]){N}, NULL)};
  /* d = d + d, 20 times: 2^20. */
  for (int i = 0; i < 20; i++)
    if (tirx_launch(a->rt, a->k, args, 4, NULL) != TIRX_OK)
      goto fail;
  if (tirx_runtime_synchronize(a->rt, NULL) != TIRX_OK)
    goto fail;
  float h[N];
  if (tirx_runtime_copy(a->rt, h, d, sizeof h, TIRX_COPY_DEVICE_TO_HOST) != TIRX_OK)
    goto fail;
  for (int i = 0; i < N; i++)
    if (h[i] != 1048576.0f) {
      snprintf(a->message, sizeof a->message, "element %d is %g, expected 2^20", i, h[i]);
      a->failures++;
      break;
    }
  tirx_runtime_free(a->rt, d);
  return NULL;
fail:
  snprintf(a->message, sizeof a->message, "%s", tirx_last_error());
  a->failures++;
  return NULL;
}

Test(gpu, threads_without_a_context_compile_and_launch) {
  enum { T = 16 };
  tirx_runtime *rt = gpu_runtime();
  tirx_kernel *k = kernel(example_vector_add);
  thread_arg a[T];
  pthread_t th[T];
  for (int i = 0; i < T; i++) {
    a[i] = (thread_arg){.rt = rt, .k = k};
    cr_assert_eq(pthread_create(&th[i], NULL, launch_many, &a[i]), 0);
  }
  for (int i = 0; i < T; i++)
    pthread_join(th[i], NULL);
  for (int i = 0; i < T; i++)
    cr_expect_eq(a[i].failures, 0, "thread %d: %s", i, a[i].message);
  cr_assert_eq(rt->nloaded, 1, "the kernel was loaded %zu times", rt->nloaded);
  tirx_kernel_release(k);
  tirx_runtime_destroy(rt);
}

/* ---- sticky failure ---- */

Test(gpu, a_device_fault_makes_the_runtime_sticky) {
  tirx_runtime *rt = gpu_runtime();
  tirx_kernel *k = kernel(example_vector_add);
  /* An aligned, non-NULL address that is not mapped: the kernel faults. */
  void *bad = (void *)(uintptr_t)0x10000;
  const int64_t n = 1 << 20;
  tirx_arg args[] = {tirx_arg_i64(n), tirx_arg_tensor(bad, TIRX_F32, 1, (int64_t[]){n}, NULL),
                     tirx_arg_tensor(bad, TIRX_F32, 1, (int64_t[]){n}, NULL),
                     tirx_arg_tensor(bad, TIRX_F32, 1, (int64_t[]){n}, NULL)};
  tirx_status st = tirx_launch(rt, k, args, 4, NULL);
  if (st == TIRX_OK)
    st = tirx_runtime_synchronize(rt, NULL);
  cr_log_info("after the fault: %s: %s", tirx_status_name(st), tirx_last_error());
  cr_assert_eq(st, TIRX_E_STICKY, "%s: %s", tirx_status_name(st), tirx_last_error());
  cr_assert_eq(tirx_runtime_health(rt), TIRX_E_STICKY);
  cr_assert(strstr(tirx_last_error(), "CUDA_ERROR_ILLEGAL_ADDRESS") != NULL, "%s",
            tirx_last_error());
  /* Every later device call fails fast with the same code. */
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (int i = 0; i < 1000; i++)
    cr_assert_eq(tirx_launch(rt, k, args, 4, NULL), TIRX_E_STICKY);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double us =
      ((double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec)) / 1e3 / 1000;
  cr_log_info("sticky launch fails in %.2f us", us);
  cr_assert(us < 1000, "a sticky failure took %.1f us", us);
  void *p;
  cr_assert_eq(tirx_runtime_alloc(rt, 16, &p), TIRX_E_STICKY);
  cr_assert_eq(tirx_runtime_synchronize(rt, NULL), TIRX_E_STICKY);
  cr_assert(
      strncmp(tirx_last_error(), "tirx_runtime_synchronize: the runtime failed earlier", 52) == 0,
      "%s", tirx_last_error());
  tirx_kernel_release(k);
  tirx_runtime_destroy(rt); /* must not hang or crash */
}

/* ---- the kernel cache: specialised variants, tiered compilation, a second runtime ---- */

#include <sys/stat.h>
#include <unistd.h>

/* A fresh cache directory for one test (removed by cache_dir_remove). */
static void cache_dir_new(char *buf, size_t len) {
  const char *t = getenv("TMPDIR");
  snprintf(buf, len, "%s/tirx-gpu-cache-XXXXXX", t && t[0] ? t : "/tmp");
  cr_assert_not_null(mkdtemp(buf));
}

static void cache_dir_remove(const char *dir) {
  tirx__store_options o;
  tirx__store_options_init(&o);
  o.path = dir;
  tirx__store *s = NULL;
  tirx__store_open(&o, &s);
  if (s && tirx__store_enabled(s))
    tirx__store_clear(s, NULL);
  tirx__store_close(s);
  rmdir(dir);
}

static tirx_runtime *gpu_runtime_with(const tirx_runtime_options *o) {
  tirx_runtime *probe = gpu_runtime(); /* skips without a device; seeds the RNG */
  tirx_runtime_destroy(probe);
  tirx_runtime *rt = NULL;
  OK(tirx_runtime_create(o, &rt));
  cr_assert(tirx_runtime_has_device(rt));
  return rt;
}

static tirx_cache_stats cache_stats(tirx_runtime *rt) {
  tirx_cache_stats s = {0};
  OK(tirx_runtime_cache_stats(rt, &s));
  cr_log_info("cache: hits %llu misses %llu compiles %llu loads %llu variants %llu corrupt %llu "
              "tiered_fallbacks %llu dedup %llu nvrtc %.1f ms",
              (unsigned long long)s.hits, (unsigned long long)s.misses,
              (unsigned long long)s.compiles, (unsigned long long)s.loads,
              (unsigned long long)s.variants, (unsigned long long)s.corrupt_detected,
              (unsigned long long)s.tiered_fallbacks, (unsigned long long)s.dedup_joined,
              s.nvrtc_millis);
  return s;
}

/* rowsum(m: i32 div16, n: i64 with n_policy, x: f32[m, n], y: f32[m]): y[i] = sum_j x[i, j]. */
static tirx_kernel *rowsum_kernel(tirx_specialize m_policy, tirx_specialize n_policy) {
  tirx_builder *b = tirx_builder_create("gpu_rowsum");
  tirx_expr *m = tirx_param_int(b, "m", TIRX_I32);
  tirx_expr *n = tirx_param_int(b, "n", TIRX_I64);
  tirx_param_set_policy(b, m, m_policy);
  tirx_param_set_policy(b, n, n_policy);
  tirx_tensor *x = tirx_param_tensor(b, "x", TIRX_F32, TIRX_EXPRS(m, n), NULL);
  tirx_tensor *y = tirx_param_tensor(b, "y", TIRX_F32, TIRX_EXPRS(m), NULL);
  tirx_set_block(b, 128, 1, 1);
  tirx_set_grid(b, tirx_ceildiv(b, m, tirx_int(b, 128)), NULL, NULL);
  tirx_expr *i = tirx_let(b, "i", tirx_add(b, tirx_mul(b, tirx_block_idx(b, 0), tirx_int(b, 128)),
                                           tirx_thread_idx(b, 0)));
  tirx_if_begin(b, tirx_lt(b, i, m));
  tirx_expr *acc = tirx_var(b, "acc", TIRX_F32, NULL);
  tirx_expr *j = tirx_for_begin(b, "j", tirx_int(b, 0), n, NULL, TIRX_LOOP_SERIAL);
  tirx_assign(b, acc, tirx_add(b, acc, tirx_load(b, x, TIRX_EXPRS(i, j))));
  tirx_for_end(b);
  tirx_store(b, y, TIRX_EXPRS(i), acc);
  tirx_if_end(b);
  tirx_kernel *k = NULL;
  cr_assert_eq(tirx_kernel_build(b, &k), TIRX_OK, "%s", tirx_builder_error(b));
  tirx_builder_destroy(b);
  return k;
}

/* Launches rowsum on fresh random data of shape (m, n) and checks y. */
static void check_rowsum(tirx_runtime *rt, const tirx_kernel *k, int64_t m, int64_t n) {
  size_t len = (size_t)(m * n);
  float *hx = random_floats(len, -1, 1);
  double *want = calloc((size_t)m, sizeof *want);
  for (int64_t r = 0; r < m; r++)
    for (int64_t c = 0; c < n; c++)
      want[r] += (double)hx[r * n + c];
  float *dx = dev_upload(rt, hx, len), *dy = dev_upload(rt, NULL, (size_t)m);
  tirx_arg args[] = {tirx_arg_tensor(dx, TIRX_F32, 2, (int64_t[]){m, n}, NULL),
                     tirx_arg_tensor(dy, TIRX_F32, 1, (int64_t[]){m}, NULL)};
  OK(tirx_launch(rt, k, args, 2, NULL));
  OK(tirx_runtime_synchronize(rt, NULL));
  float *got = dev_download(rt, dy, (size_t)m);
  char what[96];
  snprintf(what, sizeof what, "rowsum m=%lld n=%lld", (long long)m, (long long)n);
  compare(what, got, want, (size_t)m, 1e-4 * (double)n, 1e-5);
  tirx_runtime_free(rt, dx);
  tirx_runtime_free(rt, dy);
  free(hx);
  free(want);
  free(got);
}

static const int64_t spec_shapes[][2] = {{1, 1},  {7, 13},  {16, 64},  {33, 17},
                                         {48, 96}, {1000, 3}, {16, 13}, {7, 64}};

Test(gpu, specialised_variants_value_and_div16_odd_sizes, .timeout = 300) {
  char dir[256];
  cache_dir_new(dir, sizeof dir);
  tirx_runtime *rt = gpu_runtime_with(&(tirx_runtime_options){.cache_dir = dir});
  static const tirx_specialize policies[][2] = {
      {TIRX_SPECIALIZE_DIV16, TIRX_SPECIALIZE_VALUE},
      {TIRX_SPECIALIZE_DIV16, TIRX_SPECIALIZE_DIV16},
      {TIRX_SPECIALIZE_VALUE, TIRX_SPECIALIZE_DYNAMIC},
      {TIRX_SPECIALIZE_DYNAMIC, TIRX_SPECIALIZE_DYNAMIC}};
  for (int p = 0; p < 4; p++) {
    tirx_kernel *k = rowsum_kernel(policies[p][0], policies[p][1]);
    cr_log_info("policies m=%d n=%d", (int)policies[p][0], (int)policies[p][1]);
    for (size_t s = 0; s < sizeof spec_shapes / sizeof spec_shapes[0]; s++)
      check_rowsum(rt, k, spec_shapes[s][0], spec_shapes[s][1]);
    /* Again: every variant is in memory now. */
    uint64_t before = cache_stats(rt).compiles;
    for (size_t s = 0; s < sizeof spec_shapes / sizeof spec_shapes[0]; s++)
      check_rowsum(rt, k, spec_shapes[s][0], spec_shapes[s][1]);
    cr_assert_eq(cache_stats(rt).compiles, before, "a second pass compiled again");
    tirx_kernel_release(k);
  }
  tirx_cache_stats s = cache_stats(rt);
  cr_assert_eq(s.corrupt_detected, 0);
  cr_assert_geq(s.variants, 8); /* the VALUE policy alone gives one variant per n */
  tirx_runtime_destroy(rt);
  cache_dir_remove(dir);
}

Test(gpu, tiered_mode_gives_correct_results_while_compiling, .timeout = 300) {
  char dir[256];
  cache_dir_new(dir, sizeof dir);
  tirx_runtime *rt =
      gpu_runtime_with(&(tirx_runtime_options){.cache_dir = dir, .tiered = true});
  tirx_kernel *k = rowsum_kernel(TIRX_SPECIALIZE_DIV16, TIRX_SPECIALIZE_VALUE);
  /* The first launch runs the dynamic variant (the specialised one is compiling). */
  check_rowsum(rt, k, 1000, 96);
  tirx_cache_stats s = cache_stats(rt);
  cr_assert_geq(s.tiered_fallbacks, 1, "the first launch did not run the dynamic variant");
  /* Keep launching (and checking) until the specialised variant takes over. */
  static tirx__launch_plan plan;
  float *probe = (float *)(uintptr_t)0x10000;
  tirx_arg pa[] = {tirx_arg_tensor(probe, TIRX_F32, 2, (int64_t[]){1000, 96}, NULL),
                   tirx_arg_tensor(probe, TIRX_F32, 1, (int64_t[]){1000}, NULL)};
  OK(tirx__kernel_plan(k, "test", pa, 2, &plan));
  uint64_t kh[2];
  tirx__kernel_hash(k, kh);
  bool ready = false;
  int launches = 1;
  for (int i = 0; i < 3000 && !ready; i++, launches++) {
    check_rowsum(rt, k, 1000, 96);
    tirx__variant *v = tirx__variant_lookup(
        rt, kh, tirx__variant_hash(kh, plan.nspec, plan.spec), plan.nspec, plan.spec);
    ready = v && atomic_load(&v->state) == TIRX__VARIANT_READY;
    if (!ready)
      usleep(1000);
  }
  cr_assert(ready, "the specialised variant never became ready");
  uint64_t fallbacks = cache_stats(rt).tiered_fallbacks;
  cr_log_info("specialised variant ready after %d launches (%llu ran the dynamic variant)",
              launches, (unsigned long long)fallbacks);
  for (int i = 0; i < 5; i++)
    check_rowsum(rt, k, 1000, 96);
  s = cache_stats(rt);
  cr_assert_eq(s.tiered_fallbacks, fallbacks, "launches after readiness used the dynamic variant");
  cr_assert_eq(s.compiles, 2);
  tirx_kernel_release(k);
  tirx_runtime_destroy(rt);
  cache_dir_remove(dir);
}

Test(gpu, a_second_runtime_with_the_same_cache_launches_with_zero_compiles, .timeout = 300) {
  char dir[256];
  cache_dir_new(dir, sizeof dir);
  tirx_runtime_options o = {.cache_dir = dir};
  tirx_runtime *rt = gpu_runtime_with(&o);
  tirx_kernel *va = kernel(example_vector_add), *sm = kernel(example_softmax);
  tirx_kernel *rs = rowsum_kernel(TIRX_SPECIALIZE_DIV16, TIRX_SPECIALIZE_VALUE);
  check_vector_add(rt, va, 1000);
  check_softmax(rt, sm, 33, 100);
  check_rowsum(rt, rs, 48, 96);
  tirx_cache_stats s = cache_stats(rt);
  cr_assert_eq(s.compiles, 3);
  cr_assert_eq(s.hits, 0);
  tirx_runtime_destroy(rt);

  rt = NULL;
  OK(tirx_runtime_create(&o, &rt));
  check_vector_add(rt, va, 1000);
  check_softmax(rt, sm, 33, 100);
  check_rowsum(rt, rs, 48, 96);
  s = cache_stats(rt);
  cr_assert_eq(s.compiles, 0, "the second runtime compiled %llu kernels",
               (unsigned long long)s.compiles);
  cr_assert_eq(s.hits, 3);
  cr_assert_eq(s.loads, 3);
  cr_assert_eq(s.corrupt_detected, 0);
  tirx_kernel_release(va);
  tirx_kernel_release(sm);
  tirx_kernel_release(rs);
  tirx_runtime_destroy(rt);
  cache_dir_remove(dir);
}

typedef struct first_launch_arg {
  tirx_runtime *rt;
  tirx_kernel *k;
  float *d;
  pthread_barrier_t *barrier;
  tirx_status st;
  char message[512];
} first_launch_arg;

static void *first_launch(void *p) {
  first_launch_arg *a = p;
  tirx_arg args[] = {tirx_arg_tensor(a->d, TIRX_F32, 2, (int64_t[]){32, 40}, NULL),
                     tirx_arg_tensor(a->d, TIRX_F32, 1, (int64_t[]){32}, NULL)};
  pthread_barrier_wait(a->barrier);
  a->st = tirx_launch(a->rt, a->k, args, 2, NULL);
  if (a->st != TIRX_OK)
    snprintf(a->message, sizeof a->message, "%s", tirx_last_error());
  return NULL;
}

Test(gpu, concurrent_first_launches_compile_once, .timeout = 300) {
  enum { T = 16 };
  char dir[256];
  cache_dir_new(dir, sizeof dir);
  tirx_runtime *rt = gpu_runtime_with(&(tirx_runtime_options){.cache_dir = dir});
  tirx_kernel *k = rowsum_kernel(TIRX_SPECIALIZE_DIV16, TIRX_SPECIALIZE_VALUE);
  float *d = dev_upload(rt, NULL, 32 * 40);
  OK(tirx_runtime_fill32(rt, d, 0, 32 * 40));
  pthread_barrier_t barrier;
  pthread_barrier_init(&barrier, NULL, T);
  first_launch_arg a[T];
  pthread_t th[T];
  for (int i = 0; i < T; i++) {
    a[i] = (first_launch_arg){.rt = rt, .k = k, .d = d, .barrier = &barrier};
    cr_assert_eq(pthread_create(&th[i], NULL, first_launch, &a[i]), 0);
  }
  for (int i = 0; i < T; i++)
    pthread_join(th[i], NULL);
  for (int i = 0; i < T; i++)
    cr_expect_eq(a[i].st, TIRX_OK, "thread %d: %s", i, a[i].message);
  OK(tirx_runtime_synchronize(rt, NULL));
  tirx_cache_stats s = cache_stats(rt);
  cr_assert_eq(s.compiles, 1, "%llu compiles for one variant", (unsigned long long)s.compiles);
  cr_assert_eq(s.loads, 1);
  pthread_barrier_destroy(&barrier);
  tirx_runtime_free(rt, d);
  tirx_kernel_release(k);
  tirx_runtime_destroy(rt);
  cache_dir_remove(dir);
}

/* ---- RMSNorm with tile primitives (examples/membound.c), vector and forced-scalar ---- */

/* Rounds f to dtype's precision (round to nearest even) and returns its bits. */
static uint16_t to_half_bits(float f, tirx_dtype dt) {
  uint32_t x;
  memcpy(&x, &f, 4);
  if (dt == TIRX_BF16) return (uint16_t)((x + 0x7fff + ((x >> 16) & 1)) >> 16);
  uint32_t sign = (x >> 16) & 0x8000, exp = (x >> 23) & 0xff, mant = x & 0x7fffff;
  int e = (int)exp - 127 + 15;
  if (e >= 31) return (uint16_t)(sign | 0x7c00);
  if (e <= 0) {
    if (e < -10) return (uint16_t)sign;
    mant |= 0x800000;
    int shift = 14 - e;
    uint32_t h = mant >> shift, rem = mant & ((1u << shift) - 1), mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (h & 1))) h++;
    return (uint16_t)(sign | h);
  }
  uint32_t h = sign | ((uint32_t)e << 10) | (mant >> 13), rem = mant & 0x1fff;
  if (rem > 0x1000 || (rem == 0x1000 && (h & 1))) h++;
  return (uint16_t)h;
}
static float from_half_bits(uint16_t h, tirx_dtype dt) {
  if (dt == TIRX_BF16) {
    uint32_t x = (uint32_t)h << 16;
    float f;
    memcpy(&f, &x, 4);
    return f;
  }
  int e = (h >> 10) & 0x1f, m = h & 0x3ff;
  float v = e == 0 ? ldexpf((float)m, -24) : e == 31 ? INFINITY : ldexpf((float)(m | 0x400), e - 25);
  return h & 0x8000 ? -v : v;
}

static void check_rmsnorm(tirx_runtime *rt, tirx_dtype dt, int64_t width, bool scalar) {
  char err[1024] = "";
  tirx_kernel *k = row_kernel(TIRX_ROW_OP_RMSNORM, &ro, dt, width, scalar, err, sizeof err);
  cr_assert_not_null(k, "row_kernel(TIRX_ROW_OP_RMSNORM, &ro, %s, %lld): %s", tirx_dtype_name(dt), (long long)width,
                     err);
  const int rows = 37;
  size_t n = (size_t)rows * (size_t)width, es = (size_t)tirx_dtype_size(dt);
  float *hx = random_floats(n, -2, 2), *hw = random_floats((size_t)width, 0.5f, 1.5f);
  void *bx = malloc(n * es), *bw = malloc((size_t)width * es);
  for (size_t i = 0; i < n; i++) { /* inputs rounded to dtype; the reference sees them so */
    if (dt == TIRX_F32) continue;
    ((uint16_t *)bx)[i] = to_half_bits(hx[i], dt);
    hx[i] = from_half_bits(((uint16_t *)bx)[i], dt);
  }
  for (size_t i = 0; i < (size_t)width; i++) {
    if (dt == TIRX_F32) continue;
    ((uint16_t *)bw)[i] = to_half_bits(hw[i], dt);
    hw[i] = from_half_bits(((uint16_t *)bw)[i], dt);
  }
  if (dt == TIRX_F32) {
    memcpy(bx, hx, n * es);
    memcpy(bw, hw, (size_t)width * es);
  }
  float eps = 1e-5f;
  double *want = malloc(n * sizeof *want);
  for (int r = 0; r < rows; r++) {
    double ss = 0;
    for (int64_t j = 0; j < width; j++) ss += (double)hx[r * width + j] * hx[r * width + j];
    double rs = 1.0 / sqrt(ss / (double)width + eps);
    for (int64_t j = 0; j < width; j++) want[r * width + j] = hx[r * width + j] * rs * hw[j];
  }
  void *dx = NULL, *dw = NULL, *dout = NULL;
  OK(tirx_runtime_alloc(rt, n * es, &dx));
  OK(tirx_runtime_alloc(rt, (size_t)width * es, &dw));
  OK(tirx_runtime_alloc(rt, n * es + 4, &dout));
  OK(tirx_runtime_copy(rt, dx, bx, n * es, TIRX_COPY_HOST_TO_DEVICE));
  OK(tirx_runtime_copy(rt, dw, bw, (size_t)width * es, TIRX_COPY_HOST_TO_DEVICE));
  OK(tirx_runtime_fill32(rt, dout, POISON, (n * es + 4) / 4));
  tirx_arg args[] = {
      tirx_arg_i32(rows),
      tirx_arg_tensor(dx, dt, 2, (int64_t[]){rows, width}, NULL),
      tirx_arg_tensor(dw, dt, 2, (int64_t[]){1, width}, NULL),
      tirx_arg_tensor(dout, dt, 2, (int64_t[]){rows, width}, NULL),
      tirx_arg_f32(eps),
  };
  OK(tirx_launch(rt, k, args, 5, NULL));
  OK(tirx_runtime_synchronize(rt, NULL));
  void *bout = malloc(n * es);
  OK(tirx_runtime_copy(rt, bout, dout, n * es, TIRX_COPY_DEVICE_TO_HOST));
  float *got = malloc((n ? n : 1) * sizeof *got);
  for (size_t i = 0; i < n; i++)
    got[i] = dt == TIRX_F32 ? ((float *)bout)[i] : from_half_bits(((uint16_t *)bout)[i], dt);
  char what[128];
  snprintf(what, sizeof what, "rmsnorm %s width %lld%s", tirx_dtype_name(dt), (long long)width,
           scalar ? " (scalar forced)" : "");
  double tol = dt == TIRX_F32 ? 1e-5 : dt == TIRX_F16 ? 2e-3 : 1.6e-2;
  compare(what, got, want, n, tol, tol);
  tirx_runtime_free(rt, dx);
  tirx_runtime_free(rt, dw);
  tirx_runtime_free(rt, dout);
  free(hx);
  free(hw);
  free(bx);
  free(bw);
  free(bout);
  free(got);
  free(want);
  tirx_kernel_release(k);
}

Test(gpu, rmsnorm_primitives, .timeout = 600) {
  tirx_runtime *rt = gpu_runtime();
  static const tirx_dtype dts[] = {TIRX_F32, TIRX_F16, TIRX_BF16};
  static const int64_t widths[] = {1, 3, 127, 5000, 8191};
  for (int scalar = 0; scalar < 2; scalar++)
    for (int d = 0; d < 3; d++)
      for (int w = 0; w < 5; w++)
        check_rmsnorm(rt, dts[d], widths[w], scalar);
  tirx_runtime_destroy(rt);
}

/* ---- Every membound kernel (examples/membound.c) against a float64 reference ---- */

/* n random values in [lo, hi) rounded to dt: host floats (what the reference sees) and the
 * device bytes. */
static void *mb_input(tirx_runtime *rt, tirx_dtype dt, size_t n, float lo, float hi, float **host) {
  size_t es = (size_t)tirx_dtype_size(dt);
  float *h = random_floats(n, lo, hi);
  void *bytes = malloc((n ? n : 1) * es), *d = NULL;
  for (size_t i = 0; i < n; i++) {
    if (dt == TIRX_F32) continue;
    ((uint16_t *)bytes)[i] = to_half_bits(h[i], dt);
    h[i] = from_half_bits(((uint16_t *)bytes)[i], dt);
  }
  if (dt == TIRX_F32) memcpy(bytes, h, n * es);
  OK(tirx_runtime_alloc(rt, n * es + 16, &d));
  OK(tirx_runtime_copy(rt, d, bytes, n * es, TIRX_COPY_HOST_TO_DEVICE));
  free(bytes);
  *host = h;
  return d;
}

static void *mb_output(tirx_runtime *rt, size_t bytes) {
  void *d = NULL;
  OK(tirx_runtime_alloc(rt, bytes + 16, &d));
  OK(tirx_runtime_fill32(rt, d, POISON, (bytes + 16) / 4));
  return d;
}

static float *mb_download(tirx_runtime *rt, const void *d, tirx_dtype dt, size_t n) {
  size_t es = (size_t)tirx_dtype_size(dt);
  void *b = malloc((n ? n : 1) * es);
  float *f = malloc((n ? n : 1) * sizeof *f);
  OK(tirx_runtime_copy(rt, b, d, n * es, TIRX_COPY_DEVICE_TO_HOST));
  for (size_t i = 0; i < n; i++)
    f[i] = dt == TIRX_F32 ? ((float *)b)[i] : from_half_bits(((uint16_t *)b)[i], dt);
  free(b);
  return f;
}

/* The float64 reference of one row (membound.h); out2 for add_rmsnorm's res_out. */
static void mb_ref_row(tirx_row_op kind, int64_t W, const float *x, const float *res,
                       const float *w, const float *bias, double *out, double *out2) {
  double s = 0, m = -INFINITY, mean = 0;
  switch (kind) {
  case TIRX_ROW_OP_ADD_RMSNORM:
  case TIRX_ROW_OP_RMSNORM:
    for (int64_t j = 0; j < W; j++) {
      double h = (double)x[j] + (res ? (double)res[j] : 0.0);
      if (out2) out2[j] = h;
      s += h * h;
    }
    for (int64_t j = 0; j < W; j++)
      out[j] = ((double)x[j] + (res ? (double)res[j] : 0.0)) / sqrt(s / (double)W + 1e-5) * w[j];
    break;
  case TIRX_ROW_OP_LAYERNORM:
    for (int64_t j = 0; j < W; j++) mean += x[j];
    mean /= (double)W;
    for (int64_t j = 0; j < W; j++) s += (x[j] - mean) * (x[j] - mean);
    for (int64_t j = 0; j < W; j++)
      out[j] = (x[j] - mean) / sqrt(s / (double)W + 1e-5) * w[j] + bias[j];
    break;
  case TIRX_ROW_OP_SOFTMAX:
    for (int64_t j = 0; j < W; j++) m = fmax(m, x[j]);
    for (int64_t j = 0; j < W; j++) s += exp(x[j] - m);
    for (int64_t j = 0; j < W; j++) out[j] = exp(x[j] - m) / s;
    break;
  case TIRX_ROW_OP_SUM:
    for (int64_t j = 0; j < W; j++) s += x[j];
    out[0] = s;
    break;
  case TIRX_ROW_OP_MAX:
    for (int64_t j = 0; j < W; j++) m = fmax(m, x[j]);
    out[0] = m;
    break;
  case TIRX_ROW_OP_SILU_MUL:
    for (int64_t j = 0; j < W; j++) out[j] = x[j] / (1 + exp(-(double)x[j])) * x[W + j];
    break;
  default:
    for (int64_t j = 0; j < W; j++) out[j] = x[j] / (1 + exp(-0.75 * x[j])) + 0.25;
  }
}

/* kind's kernel (options ro) over `rows` rows of W against the float64 reference; the 16
 * bytes after each output must keep their poison. */
static void check_membound_rows(tirx_runtime *rt, tirx_row_op kind, tirx_dtype dt, int64_t W,
                                bool scalar, int rows) {
  char err[2048] = "";
  tirx_kernel *k = row_kernel(kind, &ro, dt, W, scalar, err, sizeof err);
  cr_assert_not_null(k, "row_kernel(%s, &ro, %s, %lld): %s", tirx_kernels_row_name(kind),
                     tirx_dtype_name(dt), (long long)W, err);
  bool red = kind == TIRX_ROW_OP_SUM || kind == TIRX_ROW_OP_MAX;
  int64_t win = kind == TIRX_ROW_OP_SILU_MUL ? 2 * W : W, wout = red ? 1 : W;
  tirx_dtype odt = red ? TIRX_F32 : dt;
  size_t nin = (size_t)rows * (size_t)win, nout = (size_t)rows * (size_t)wout;
  float *hx, *hr = NULL, *hw, *hb;
  void *dx = mb_input(rt, dt, nin, -2, 2, &hx), *dr = mb_input(rt, dt, nout, -1, 1, &hr);
  void *dw = mb_input(rt, dt, (size_t)W, 0.5f, 1.5f, &hw), *db = mb_input(rt, dt, (size_t)W, -1, 1, &hb);
  size_t obytes = nout * (size_t)tirx_dtype_size(odt);
  void *dout = mb_output(rt, obytes), *dout2 = mb_output(rt, obytes);
  tirx_arg t_x = tirx_arg_tensor(dx, dt, 2, (int64_t[]){rows, win}, NULL);
  tirx_arg t_r = tirx_arg_tensor(dr, dt, 2, (int64_t[]){rows, W}, NULL);
  tirx_arg t_w = tirx_arg_tensor(dw, dt, 2, (int64_t[]){1, W}, NULL);
  tirx_arg t_b = tirx_arg_tensor(db, dt, 2, (int64_t[]){1, W}, NULL);
  tirx_arg t_o = tirx_arg_tensor(dout, odt, 2, (int64_t[]){rows, wout}, NULL);
  tirx_arg t_o2 = tirx_arg_tensor(dout2, dt, 2, (int64_t[]){rows, W}, NULL);
  tirx_arg eps = tirx_arg_f32(1e-5f), r = tirx_arg_i32(rows);
  tirx_arg args[8];
  int n = 0;
  args[n++] = r;
  args[n++] = t_x;
  switch (kind) {
  case TIRX_ROW_OP_RMSNORM: args[n++] = t_w, args[n++] = t_o, args[n++] = eps; break;
  case TIRX_ROW_OP_LAYERNORM: args[n++] = t_w, args[n++] = t_b, args[n++] = t_o, args[n++] = eps; break;
  case TIRX_ROW_OP_ADD_RMSNORM:
    args[n++] = t_r, args[n++] = t_w, args[n++] = t_o, args[n++] = t_o2, args[n++] = eps;
    break;
  case TIRX_ROW_OP_CHAIN: args[n++] = t_o, args[n++] = tirx_arg_f32(0.75f), args[n++] = tirx_arg_f32(0.25f); break;
  default: args[n++] = t_o;
  }
  OK(tirx_launch(rt, k, args, n, NULL));
  OK(tirx_runtime_synchronize(rt, NULL));
  double *want = malloc(nout * sizeof *want), *want2 = malloc(nout * sizeof *want2);
  for (int i = 0; i < rows; i++)
    mb_ref_row(kind, W, hx + (size_t)i * (size_t)win, kind == TIRX_ROW_OP_ADD_RMSNORM ? hr + (size_t)i * (size_t)W : NULL,
               hw, hb, want + (size_t)i * (size_t)wout, want2 + (size_t)i * (size_t)wout);
  float *got = mb_download(rt, dout, odt, nout);
  char what[200];
  snprintf(what, sizeof what, "%s %s width %lld, %d rows%s%s", tirx_kernels_row_name(kind),
           tirx_dtype_name(dt), (long long)W, rows, scalar ? " (scalar forced)" : "",
           row_plan(kind, &ro, dt, W).elementwise ? " (elementwise)" : "");
  double tol = dt == TIRX_F32 ? 2e-5 : dt == TIRX_F16 ? 2e-3 : 1.6e-2;
  double atol = red && kind == TIRX_ROW_OP_SUM ? 1e-5 * (double)W : tol;
  compare(what, got, want, nout, atol, tol);
  free(got);
  if (kind == TIRX_ROW_OP_ADD_RMSNORM) {
    got = mb_download(rt, dout2, dt, nout);
    compare("add_rmsnorm res_out", got, want2, nout, tol, tol);
    free(got);
  }
  /* Nothing written past the outputs: their next 12 bytes keep the poison (mb_output fills
   * whole words from the buffer's start, so byte i holds byte i % 4 of POISON). */
  uint8_t poison[4];
  memcpy(poison, &(uint32_t){POISON}, 4);
  for (int o = 0; o < (kind == TIRX_ROW_OP_ADD_RMSNORM ? 2 : 1); o++) {
    uint8_t guard[12];
    OK(tirx_runtime_copy(rt, guard, (char *)(o ? dout2 : dout) + obytes, sizeof guard,
                         TIRX_COPY_DEVICE_TO_HOST));
    for (size_t j = 0; j < sizeof guard; j++)
      cr_assert_eq(guard[j], poison[(obytes + j) % 4], "%s: byte %zu after %s was written", what,
                   j, o ? "res_out" : "out");
  }
  void *bufs[] = {dx, dr, dw, db, dout, dout2};
  for (int i = 0; i < 6; i++) tirx_runtime_free(rt, bufs[i]);
  free(hx), free(hr), free(hw), free(hb), free(want), free(want2);
  tirx_kernel_release(k);
}

static void check_membound(tirx_runtime *rt, tirx_row_op kind, tirx_dtype dt, int64_t W,
                           bool scalar) {
  check_membound_rows(rt, kind, dt, W, scalar, 19);
}

/* Every dtype, width (1, 3, 127, 5000, 8191; the last two one CTA per row) and the forced
 * scalar fallback of one kernel; one Criterion test per kernel, so one failure hides no other. */
static void check_membound_kind(tirx_row_op kind) {
  tirx_runtime *rt = gpu_runtime();
  static const tirx_dtype dts[] = {TIRX_F32, TIRX_F16, TIRX_BF16};
  static const int64_t widths[] = {1, 3, 127, 5000, 8191};
  for (int scalar = 0; scalar < 2; scalar++)
    for (int d = 0; d < 3; d++)
      for (int w = 0; w < 5; w++)
        check_membound(rt, kind, dts[d], widths[w], scalar);
  tirx_runtime_destroy(rt);
}

/* Wide rows at 32768 and the odd 20000: one CTA per row (the default), then a cluster of 2
 * and of 4 CTAs per row (membound_set_cluster), the reductions through DSMEM (reduce.dsmem;
 * 20000 in f16/bf16: 2 x 250 threads x 5 vectors, 4 x 125 x 5), every dtype, vector and
 * forced-scalar families. */
static void check_membound_cluster(tirx_row_op kind) {
  tirx_runtime *rt = gpu_runtime();
  static const tirx_dtype dts[] = {TIRX_F32, TIRX_F16, TIRX_BF16};
  static const int64_t widths[] = {32768, 20000};
  for (int ctas = 1; ctas <= 4; ctas *= 2)
    for (int scalar = 0; scalar < 2; scalar++)
      for (int d = 0; d < 3; d++)
        for (int w = 0; w < 2; w++) {
          ro.cluster = ctas;
          int got = row_plan(kind, &ro, dts[d], widths[w]).cluster;
          cr_assert_eq(got, ctas, "%s %s %lld: %d CTAs per row, expected %d", tirx_kernels_row_name(kind),
                       tirx_dtype_name(dts[d]), (long long)widths[w], got, ctas);
          check_membound(rt, kind, dts[d], widths[w], scalar); /* builds with the choice */
          ro.cluster = 0;
        }
  tirx_runtime_destroy(rt);
}

/* Staged rows (membound_stages): the persistent kernels that read rows through a TMA-filled
 * ring, with 132, 2 and 1 SMs' worth of CTAs for the 19 rows (each CTA loops over up to 19
 * rows: the ring wraps and the mbarrier phases flip several times), at 32768 and 20000 (staged
 * by default in f16/bf16; 20000 a box of 200 x 100), forced at 8192, 5000 (200 x 25) and 2048
 * in every dtype (the weight rows in shared memory), forced off at 32768, and with the weight
 * rows read from global memory (TIRX_ROW_VARIANT_WEIGHTS_GLOBAL) at 32768 and 5000. */
static void check_membound_staged(tirx_row_op kind) {
  tirx_runtime *rt = gpu_runtime();
  static const tirx_dtype dts[] = {TIRX_F32, TIRX_F16, TIRX_BF16};
  static const struct { int64_t width; int flags; } cases[] = {
      {32768, 0}, {20000, 0}, {8192, TIRX_ROW_VARIANT_STAGED}, {5000, TIRX_ROW_VARIANT_STAGED},
      {2048, TIRX_ROW_VARIANT_STAGED}, {32768, TIRX_ROW_VARIANT_UNSTAGED},
      {32768, TIRX_ROW_VARIANT_WEIGHTS_GLOBAL}, {5000, TIRX_ROW_VARIANT_STAGED | TIRX_ROW_VARIANT_WEIGHTS_GLOBAL}};
  static const int sms[] = {132, 2, 1};
  int staged = 0;
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
    for (int d = 0; d < 3; d++)
      for (int m = 0; m < 3; m++) {
        ro.variant = cases[c].flags;
        ro.sms = sms[m];
        int S = row_plan(kind, &ro, dts[d], cases[c].width).stages;
        if (cases[c].flags == TIRX_ROW_VARIANT_UNSTAGED) cr_assert_eq(S, 0);
        staged += S > 0;
        check_membound(rt, kind, dts[d], cases[c].width, false);
        ro.variant = 0;
        ro.sms = 132;
      }
  cr_assert_geq(staged, 30, "%s: only %d staged kernels checked", tirx_kernels_row_name(kind), staged);
  tirx_runtime_destroy(rt);
}

Test(gpu, membound_staged_rmsnorm, .timeout = 300) { check_membound_staged(TIRX_ROW_OP_RMSNORM); }
Test(gpu, membound_staged_layernorm, .timeout = 300) { check_membound_staged(TIRX_ROW_OP_LAYERNORM); }
Test(gpu, membound_staged_softmax, .timeout = 300) { check_membound_staged(TIRX_ROW_OP_SOFTMAX); }

Test(gpu, membound_cluster_rmsnorm, .timeout = 300) { check_membound_cluster(TIRX_ROW_OP_RMSNORM); }
Test(gpu, membound_cluster_layernorm, .timeout = 300) { check_membound_cluster(TIRX_ROW_OP_LAYERNORM); }
Test(gpu, membound_cluster_softmax, .timeout = 300) { check_membound_cluster(TIRX_ROW_OP_SOFTMAX); }
Test(gpu, membound_cluster_add_rmsnorm, .timeout = 300) {
  check_membound_cluster(TIRX_ROW_OP_ADD_RMSNORM);
}

/* Both forms of silu_mul and chain (TIRX_ROW_VARIANT_ELEMENTWISE, TIRX_ROW_VARIANT_PER_ROW),
 * whatever the default takes, in every dtype at whole-vector and odd widths (1, 3, 127, 4095,
 * 5000, 8191, 8192; silu_mul's elementwise units there are 1 to 8 elements, chain's 16 bytes
 * with an element tail): 19 rows (a partial last block), 1 row, 300 rows on a grid sized for 1
 * and for 3 SMs (4 and 12 CTAs striding over up to 600 blocks: many iterations, the partial
 * block on a CTA other than the first), and the forced scalar families; each case checked to
 * build the form it names. */
static void check_membound_forms(tirx_row_op kind) {
  tirx_runtime *rt = gpu_runtime();
  static const tirx_dtype dts[] = {TIRX_F32, TIRX_F16, TIRX_BF16};
  static const int64_t widths[] = {1, 3, 127, 4095, 5000, 8191, 8192};
  static const int forms[] = {TIRX_ROW_VARIANT_ELEMENTWISE, TIRX_ROW_VARIANT_PER_ROW};
  static const struct { int rows, sms; bool scalar; } runs[] = {
      {19, 0, false}, {1, 0, false}, {300, 1, false}, {300, 3, false}, {19, 0, true}};
  for (int f = 0; f < 2; f++)
    for (int d = 0; d < 3; d++)
      for (size_t w = 0; w < sizeof widths / sizeof widths[0]; w++)
        for (size_t r = 0; r < sizeof runs / sizeof runs[0]; r++) {
          if (f == 1 && runs[r].sms) continue; /* the per-row grid is one CTA a row */
          ro.variant = forms[f];
          ro.sms = runs[r].sms;
          cr_assert_eq(row_plan(kind, &ro, dts[d], widths[w]).elementwise, f == 0);
          check_membound_rows(rt, kind, dts[d], widths[w], runs[r].scalar, runs[r].rows);
          ro.variant = 0;
          ro.sms = 0;
        }
  tirx_runtime_destroy(rt);
}

Test(gpu, membound_forms_silu_mul, .timeout = 600) { check_membound_forms(TIRX_ROW_OP_SILU_MUL); }
Test(gpu, membound_forms_chain, .timeout = 600) { check_membound_forms(TIRX_ROW_OP_CHAIN); }

/* Rows reduced by a CTA of 3, 6 and 12 warps (reduce.smem over a number of warps that is not
 * a power of two: common hidden sizes 1536, 3072, 6144), every reducing kernel, f32 and bf16,
 * each case checked to run on the warp count it names. Not yet run on a GPU. */
Test(gpu, membound_warps_not_a_power_of_two, .timeout = 600) {
  tirx_runtime *rt = gpu_runtime();
  static const struct {
    tirx_row_op kind;
    tirx_dtype dt;
    int64_t width;
    int threads;
  } cases[] = {
      {TIRX_ROW_OP_SUM, TIRX_BF16, 3072, 96},     {TIRX_ROW_OP_SUM, TIRX_BF16, 6144, 192},
      {TIRX_ROW_OP_SUM, TIRX_BF16, 12288, 384},   {TIRX_ROW_OP_SUM, TIRX_F32, 1536, 96},
      {TIRX_ROW_OP_MAX, TIRX_BF16, 3072, 96},     {TIRX_ROW_OP_MAX, TIRX_F32, 3072, 192},
      {TIRX_ROW_OP_MAX, TIRX_F32, 6144, 384},     {TIRX_ROW_OP_RMSNORM, TIRX_BF16, 1536, 96},
      {TIRX_ROW_OP_RMSNORM, TIRX_BF16, 3072, 192},    {TIRX_ROW_OP_RMSNORM, TIRX_BF16, 6144, 384},
      {TIRX_ROW_OP_RMSNORM, TIRX_F32, 3072, 384},     {TIRX_ROW_OP_ADD_RMSNORM, TIRX_BF16, 3072, 192},
      {TIRX_ROW_OP_LAYERNORM, TIRX_BF16, 3072, 96},   {TIRX_ROW_OP_SOFTMAX, TIRX_BF16, 6144, 384},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char err[1024] = "", want[64];
    tirx_kernel *k = row_kernel(cases[i].kind, &ro, cases[i].dt, cases[i].width, false, err,
                                sizeof err);
    cr_assert_not_null(k, "%s", err);
    snprintf(want, sizeof want, "-> reduce.smem threads=%d\n", cases[i].threads);
    cr_assert_not_null(strstr(tirx_kernel_dispatch_report(k), want), "%s %s %lld: no '%s' in\n%s",
                       tirx_kernels_row_name(cases[i].kind), tirx_dtype_name(cases[i].dt),
                       (long long)cases[i].width, want, tirx_kernel_dispatch_report(k));
    tirx_kernel_release(k);
    check_membound(rt, cases[i].kind, cases[i].dt, cases[i].width, false);
  }
  tirx_runtime_destroy(rt);
}

/* ---- The one-call ops of the kernel library (tirx/kernels.h) against float64 ---- */

/* One row op through its tirx_op_* call (the kernel found or built from the options and the
 * shape, the arguments checked, then launched), rows x W, outputs poisoned. */
static void check_row_op(tirx_runtime *rt, tirx_row_op kind, tirx_dtype dt, int64_t W,
                         int64_t rows) {
  bool red = kind == TIRX_ROW_OP_SUM || kind == TIRX_ROW_OP_MAX;
  int64_t win = kind == TIRX_ROW_OP_SILU_MUL ? 2 * W : W, wout = red ? 1 : W;
  tirx_dtype odt = red ? TIRX_F32 : dt;
  size_t nin = (size_t)rows * (size_t)win, nout = (size_t)rows * (size_t)wout;
  float *hx, *hr, *hw, *hb;
  void *dx = mb_input(rt, dt, nin, -2, 2, &hx), *dr = mb_input(rt, dt, nout, -1, 1, &hr);
  void *dw = mb_input(rt, dt, (size_t)W, 0.5f, 1.5f, &hw);
  void *db = mb_input(rt, dt, (size_t)W, -1, 1, &hb);
  size_t obytes = nout * (size_t)tirx_dtype_size(odt);
  void *dout = mb_output(rt, obytes), *dout2 = mb_output(rt, obytes);
  int64_t xs[2] = {rows, win}, os[2] = {rows, wout}, ws[1] = {W};
  tirx_tensor_arg x = {dx, dt, 2, xs, NULL}, res = {dr, dt, 2, os, NULL};
  tirx_tensor_arg w = {dw, dt, 1, ws, NULL}, bias = {db, dt, 1, ws, NULL};
  tirx_tensor_arg out = {dout, odt, 2, os, NULL}, res_out = {dout2, dt, 2, os, NULL};
  switch (kind) {
  case TIRX_ROW_OP_RMSNORM: OK(tirx_op_rmsnorm(rt, NULL, &x, &w, &out, 1e-5f, NULL)); break;
  case TIRX_ROW_OP_LAYERNORM: OK(tirx_op_layernorm(rt, NULL, &x, &w, &bias, &out, 1e-5f, NULL)); break;
  case TIRX_ROW_OP_ADD_RMSNORM:
    OK(tirx_op_add_rmsnorm(rt, NULL, &x, &res, &w, &out, &res_out, 1e-5f, NULL));
    break;
  case TIRX_ROW_OP_SOFTMAX: OK(tirx_op_softmax(rt, NULL, &x, &out, NULL)); break;
  case TIRX_ROW_OP_SILU_MUL: OK(tirx_op_silu_mul(rt, NULL, &x, &out, NULL)); break;
  case TIRX_ROW_OP_SUM: OK(tirx_op_row_sum(rt, NULL, &x, &out, NULL)); break;
  case TIRX_ROW_OP_MAX: OK(tirx_op_row_max(rt, NULL, &x, &out, NULL)); break;
  default: cr_assert_fail("no op for %s", tirx_kernels_row_name(kind));
  }
  OK(tirx_runtime_synchronize(rt, NULL));
  double *want = malloc(nout * sizeof *want), *want2 = malloc(nout * sizeof *want2);
  for (int64_t i = 0; i < rows; i++)
    mb_ref_row(kind, W, hx + (size_t)i * (size_t)win,
               kind == TIRX_ROW_OP_ADD_RMSNORM ? hr + (size_t)i * (size_t)W : NULL, hw, hb,
               want + (size_t)i * (size_t)wout, want2 + (size_t)i * (size_t)wout);
  float *got = mb_download(rt, dout, odt, nout);
  char what[160];
  snprintf(what, sizeof what, "tirx_op_%s %s %lldx%lld", tirx_kernels_row_name(kind),
           tirx_dtype_name(dt), (long long)rows, (long long)W);
  double tol = dt == TIRX_F32 ? 2e-5 : dt == TIRX_F16 ? 2e-3 : 1.6e-2;
  compare(what, got, want, nout, kind == TIRX_ROW_OP_SUM ? 1e-5 * (double)W : tol, tol);
  free(got);
  if (kind == TIRX_ROW_OP_ADD_RMSNORM) {
    got = mb_download(rt, dout2, dt, nout);
    compare("tirx_op_add_rmsnorm res_out", got, want2, nout, tol, tol);
    free(got);
  }
  void *bufs[] = {dx, dr, dw, db, dout, dout2};
  for (int i = 0; i < 6; i++) tirx_runtime_free(rt, bufs[i]);
  free(hx), free(hr), free(hw), free(hb), free(want), free(want2);
}

/* Every row op, every dtype, warp-per-row and CTA-per-row widths (odd ones among them), one
 * row and a few; the same op and shape twice (the second call finds the kernel). */
Test(gpu, ops_rows, .timeout = 600) {
  tirx_runtime *rt = gpu_runtime();
  static const tirx_row_op ops[] = {TIRX_ROW_OP_RMSNORM, TIRX_ROW_OP_LAYERNORM,
                                    TIRX_ROW_OP_ADD_RMSNORM, TIRX_ROW_OP_SOFTMAX,
                                    TIRX_ROW_OP_SILU_MUL, TIRX_ROW_OP_SUM, TIRX_ROW_OP_MAX};
  static const tirx_dtype dts[] = {TIRX_F32, TIRX_F16, TIRX_BF16};
  static const int64_t widths[] = {100, 1000, 4096, 5000};
  static const int64_t rows[] = {1, 37};
  for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++)
    for (size_t d = 0; d < 3; d++)
      for (size_t w = 0; w < sizeof widths / sizeof widths[0]; w++)
        for (size_t r = 0; r < 2; r++) check_row_op(rt, ops[o], dts[d], widths[w], rows[r]);
  check_row_op(rt, TIRX_ROW_OP_RMSNORM, TIRX_BF16, 5000, 37);
  tirx_runtime_destroy(rt);
}

/* ---- rmsnorm_fp8 and add_rmsnorm_fp8 (tirx_op_*) against float64 ---- */

/* e4m3_value and e4m3_ulp: e4m3_ref.h */

/* rows x W through tirx_op_rmsnorm_fp8 (add: tirx_op_add_rmsnorm_fp8) with options o, outputs
 * poisoned (16 bytes past each end too, which must stay so); zero_row: row 0 all zeros (scale
 * 0, out 0). */
static void check_fp8(tirx_runtime *rt, bool add, tirx_dtype dt, int64_t W, int64_t rows,
                      bool zero_row, const tirx_row_options *o) {
  size_t n = (size_t)rows * (size_t)W, es = (size_t)tirx_dtype_size(dt);
  float *hx, *hr, *hw;
  void *dx = mb_input(rt, dt, n, -2, 2, &hx), *dr = mb_input(rt, dt, n, -1, 1, &hr);
  void *dw = mb_input(rt, dt, (size_t)W, 0.5f, 1.5f, &hw);
  if (zero_row) { /* zeros are exact in every dtype */
    if ((size_t)W * es >= 4) {
      OK(tirx_runtime_fill32(rt, dx, 0, (size_t)W * es / 4));
      OK(tirx_runtime_fill32(rt, dr, 0, (size_t)W * es / 4));
    }
    for (int64_t j = 0; j < (int64_t)((size_t)W * es / 4 * 4 / es); j++) hx[j] = 0, hr[j] = 0;
    for (int64_t j = (int64_t)((size_t)W * es / 4 * 4 / es); j < W; j++) { /* the odd tail */
      uint16_t z = 0;
      OK(tirx_runtime_copy(rt, (char *)dx + (size_t)j * es, &z, es, TIRX_COPY_HOST_TO_DEVICE));
      OK(tirx_runtime_copy(rt, (char *)dr + (size_t)j * es, &z, es, TIRX_COPY_HOST_TO_DEVICE));
      hx[j] = 0, hr[j] = 0;
    }
  }
  void *dout = mb_output(rt, n), *dsc = mb_output(rt, (size_t)rows * 4);
  void *dres = mb_output(rt, n * es);
  int64_t xs[2] = {rows, W}, ws[1] = {W}, ss[1] = {rows};
  tirx_tensor_arg x = {dx, dt, 2, xs, NULL}, res = {dr, dt, 2, xs, NULL}, w = {dw, dt, 1, ws, NULL};
  tirx_tensor_arg out = {dout, TIRX_FP8_E4M3, 2, xs, NULL}, sc = {dsc, TIRX_F32, 1, ss, NULL};
  tirx_tensor_arg res_out = {dres, dt, 2, xs, NULL};
  if (add) OK(tirx_op_add_rmsnorm_fp8(rt, o, &x, &res, &w, &out, &res_out, &sc, 1e-5f, NULL));
  else OK(tirx_op_rmsnorm_fp8(rt, o, &x, &w, &out, &sc, 1e-5f, NULL));
  OK(tirx_runtime_synchronize(rt, NULL));
  uint8_t *got = malloc(n + 16);
  float *gsc = malloc((size_t)rows * 4 + 16);
  OK(tirx_runtime_copy(rt, got, dout, n + 16, TIRX_COPY_DEVICE_TO_HOST));
  OK(tirx_runtime_copy(rt, gsc, dsc, (size_t)rows * 4 + 16, TIRX_COPY_DEVICE_TO_HOST));
  char what[200];
  snprintf(what, sizeof what, "tirx_op_%srmsnorm_fp8 %s %lldx%lld%s%s (variant %d, stages %d, "
           "sms %d)", add ? "add_" : "", tirx_dtype_name(dt), (long long)rows, (long long)W,
           zero_row ? " (row 0 zeros)" : "", o->scalar ? " (scalar forced)" : "", o->variant,
           o->stages, o->sms);
  /* mb_output poisons whole words of bytes + 16: byte p holds the poison's byte p % 4 */
  uint32_t poison = POISON;
  const uint8_t *pb = (const uint8_t *)&poison;
  for (size_t p = n; p < (n + 16) / 4 * 4; p++)
    cr_assert_eq(got[p], pb[p % 4], "%s: out written past its end (byte %zu)", what, p);
  for (size_t p = (size_t)rows * 4; p < (size_t)rows * 4 + 16; p++)
    cr_assert_eq(((uint8_t *)gsc)[p], pb[p % 4], "%s: scale written past its end", what);
  double *y = malloc((size_t)W * sizeof *y), *want_h = malloc(n * sizeof *want_h);
  size_t bad = 0, bad_sc = 0;
  double worst_ulps = 0;
  for (int64_t r = 0; r < rows; r++) {
    const float *xr = hx + (size_t)r * (size_t)W, *rr = hr + (size_t)r * (size_t)W;
    double ss2 = 0, amax = 0;
    for (int64_t j = 0; j < W; j++) {
      double h = (double)xr[j] + (add ? (double)rr[j] : 0.0);
      want_h[(size_t)r * (size_t)W + (size_t)j] = h;
      ss2 += h * h;
    }
    double rs = 1.0 / sqrt(ss2 / (double)W + 1e-5);
    for (int64_t j = 0; j < W; j++) {
      y[j] = want_h[(size_t)r * (size_t)W + (size_t)j] * rs * hw[j];
      amax = fmax(amax, fabs(y[j]));
    }
    double s = amax / 448;
    /* the scale to f32 rounding of the row's sums (2e-5 relative) */
    if (!(fabs((double)gsc[r] - s) <= 2e-5 * s) && bad_sc++ == 0)
      cr_log_error("%s: scale[%lld] = %.9g, want %.9g", what, (long long)r, (double)gsc[r], s);
    for (int64_t j = 0; j < W; j++) {
      double q = s > 0 ? y[j] / s : 0.0, g = e4m3_value(got[(size_t)r * (size_t)W + (size_t)j]);
      double err = fabs(g - q), ulp = e4m3_ulp(q);
      if (!(err <= ulp)) { /* NaN fails too */
        if (bad++ == 0)
          cr_log_error("%s: out[%lld, %lld] = 0x%02x (%.6g), want %.6g (one e4m3 ulp: %.3g)", what,
                       (long long)r, (long long)j, got[(size_t)r * (size_t)W + (size_t)j], g, q, ulp);
      } else if (err / ulp > worst_ulps) {
        worst_ulps = err / ulp;
      }
    }
  }
  cr_log_info("%s: %zu values, worst %.3f e4m3 ulp, %zu wrong, %zu scales wrong", what, n,
              worst_ulps, bad, bad_sc);
  cr_assert_eq(bad, 0, "%s: %zu of %zu e4m3 values off by more than one ulp (TIRX_SEED=%llu)", what,
               bad, n, (unsigned long long)seed_initial);
  cr_assert_eq(bad_sc, 0, "%s: %zu of %lld scales wrong (TIRX_SEED=%llu)", what, bad_sc,
               (long long)rows, (unsigned long long)seed_initial);
  if (add) {
    float *gh = mb_download(rt, dres, dt, n);
    double tol = dt == TIRX_F32 ? 2e-5 : dt == TIRX_F16 ? 2e-3 : 1.6e-2;
    compare("add_rmsnorm_fp8 res_out", gh, want_h, n, tol, tol);
    free(gh);
  }
  void *bufs[] = {dx, dr, dw, dout, dsc, dres};
  for (int i = 0; i < 6; i++) tirx_runtime_free(rt, bufs[i]);
  free(hx), free(hr), free(hw), free(got), free(gsc), free(y), free(want_h);
}

/* The widths servers use (2048..7168) and odd ones (a warp a row, CTA rows with a partial
 * vector tail and rows of no whole 4-byte units), one row, a few and many (a zero row among
 * them); bf16 everywhere, f16 and f32 and the forced scalar families on some. */
static void check_fp8_kind(bool add) {
  tirx_runtime *rt = gpu_runtime();
  static const int64_t widths[] = {2048, 3072, 4096, 5120, 6144, 7168, 1, 3, 100, 1000, 5000,
                                   7000, 8191};
  static const int64_t rows[] = {1, 37, 300};
  const tirx_row_options plain = {0}, scalar = {.scalar = true};
  for (size_t w = 0; w < sizeof widths / sizeof widths[0]; w++)
    for (size_t r = 0; r < 3; r++) check_fp8(rt, add, TIRX_BF16, widths[w], rows[r], r == 1, &plain);
  static const int64_t few[] = {4096, 7168, 5000, 100, 3};
  for (size_t w = 0; w < 5; w++) {
    check_fp8(rt, add, TIRX_F16, few[w], 37, false, &plain);
    check_fp8(rt, add, TIRX_F32, few[w], 37, true, &plain);
    check_fp8(rt, add, TIRX_BF16, few[w], 19, false, &scalar);
  }
  tirx_runtime_destroy(rt);
}

/* rmsnorm_fp8's staged rows (tests/unit/kernels/test_rows.c, rmsnorm_fp8_is_staged_as_rmsnorm_is)
 * as check_membound_staged runs rmsnorm's: 132, 2 and 1 SMs' worth of CTAs for 19 rows (the
 * ring wraps, the phases flip), 300 rows with a zero row on 132; staged by default at 16384,
 * 20000 and 32768, forced at 2048, 5000, 5120 and 7168 (and one stage at 7168), forced off at
 * 16384, the weight row from global memory at 16384 and 5000. add_rmsnorm_fp8 takes the same
 * options and stays unstaged. */
static void check_fp8_staged(bool add) {
  tirx_runtime *rt = gpu_runtime();
  static const tirx_dtype dts[] = {TIRX_F32, TIRX_F16, TIRX_BF16};
  static const struct { int64_t width; int flags, stages; } cases[] = {
      {16384, 0, 0}, {20000, 0, 0}, {32768, 0, 0}, {2048, TIRX_ROW_VARIANT_STAGED, 0},
      {5000, TIRX_ROW_VARIANT_STAGED, 0}, {5120, TIRX_ROW_VARIANT_STAGED, 0},
      {7168, TIRX_ROW_VARIANT_STAGED, 0}, {7168, 0, 1}, {16384, TIRX_ROW_VARIANT_UNSTAGED, 0},
      {16384, TIRX_ROW_VARIANT_WEIGHTS_GLOBAL, 0},
      {5000, TIRX_ROW_VARIANT_STAGED | TIRX_ROW_VARIANT_WEIGHTS_GLOBAL, 0}};
  static const int sms[] = {132, 2, 1};
  int staged = 0;
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
    for (int d = 0; d < 3; d++) {
      for (int m = 0; m < 3; m++) {
        tirx_row_options o = {.variant = cases[c].flags, .stages = cases[c].stages, .sms = sms[m]};
        staged += !add && row_plan(TIRX_ROW_OP_RMSNORM, &o, dts[d], cases[c].width).stages > 0;
        check_fp8(rt, add, dts[d], cases[c].width, 19, false, &o);
      }
      tirx_row_options o = {.variant = cases[c].flags, .stages = cases[c].stages};
      check_fp8(rt, add, dts[d], cases[c].width, 300, true, &o);
    }
  if (!add) cr_assert_eq(staged, 87, "%d staged kernels checked", staged);
  tirx_runtime_destroy(rt);
}

Test(gpu, fp8_rmsnorm, .timeout = 600) { check_fp8_kind(false); }
Test(gpu, fp8_add_rmsnorm, .timeout = 600) { check_fp8_kind(true); }
Test(gpu, fp8_staged_rmsnorm, .timeout = 600) { check_fp8_staged(false); }
Test(gpu, fp8_staged_add_rmsnorm, .timeout = 600) { check_fp8_staged(true); }

/* ---- rope (tirx_op_rope) against float64 ---- */

typedef struct rope_case {
  tirx_rope_style style;
  tirx_dtype dt, cdt;
  int64_t T, H, Hkv, D, rot; /* rot 0: D */
  bool fused;                /* q, k (and an untouched v) in one [T, (H + 2 Hkv) D] buffer */
  int64_t pad;               /* elements added to q's and k's token strides (left untouched) */
} rope_case;

/* In place on q and k; every element checked: the rotated pairs against float64, everything
 * else (dims past R, tokens at positions out of range, v, the gaps) unchanged bit for bit. */
static void check_rope(tirx_runtime *rt, const rope_case *c) {
  const int64_t T = c->T, H = c->H, Hkv = c->Hkv, D = c->D, R = c->rot ? c->rot : D, half = R / 2;
  const int64_t P = 1000; /* max_pos */
  tirx_dtype dt = c->dt;
  size_t es = (size_t)tirx_dtype_size(dt);
  /* the buffer: fused, a row holds q, k, v; else q's rows then k's rows */
  int64_t qrow = (c->fused ? (H + 2 * Hkv) * D : H * D) + c->pad;
  int64_t krow = c->fused ? qrow : Hkv * D + c->pad;
  size_t kat = c->fused ? (size_t)(H * D) : (size_t)(T * qrow); /* k's first element */
  if (!c->fused) kat = (kat + 7) / 8 * 8; /* 16-byte aligned (fused: H D is a multiple of 8) */
  size_t n = c->fused ? (size_t)(T * qrow) : kat + (size_t)(T * krow);
  float *h;
  void *d = mb_input(rt, dt, n, -2, 2, &h);
  /* positions: random in [0, P), the last token's out of range (untouched) when T > 1 */
  int32_t *pos = malloc((size_t)T * 4);
  for (int64_t t = 0; t < T; t++) pos[t] = (int32_t)(rnd() % (uint64_t)P);
  if (T > 1) pos[T - 1] = (rnd() & 1) ? (int32_t)P : -1;
  void *dpos = NULL;
  OK(tirx_runtime_alloc(rt, (size_t)T * 4 + 16, &dpos));
  OK(tirx_runtime_copy(rt, dpos, pos, (size_t)T * 4, TIRX_COPY_HOST_TO_DEVICE));
  /* caches: theta_i = 10000^(-2i/R), cos/sin(p theta_i), stored in cdt (the reference reads
   * the stored values) */
  size_t nc = (size_t)(P * half), ce = (size_t)tirx_dtype_size(c->cdt);
  float *hc = malloc(nc * 4), *hs = malloc(nc * 4);
  void *bc = malloc(nc * ce), *bs = malloc(nc * ce);
  for (int64_t p = 0; p < P; p++)
    for (int64_t i = 0; i < half; i++) {
      double th = (double)p * pow(10000.0, -2.0 * (double)i / (double)R);
      size_t at = (size_t)(p * half + i);
      hc[at] = (float)cos(th), hs[at] = (float)sin(th);
      if (c->cdt == TIRX_F32) {
        ((float *)bc)[at] = hc[at], ((float *)bs)[at] = hs[at];
      } else {
        ((uint16_t *)bc)[at] = to_half_bits(hc[at], c->cdt);
        ((uint16_t *)bs)[at] = to_half_bits(hs[at], c->cdt);
        hc[at] = from_half_bits(((uint16_t *)bc)[at], c->cdt);
        hs[at] = from_half_bits(((uint16_t *)bs)[at], c->cdt);
      }
    }
  void *dc = NULL, *ds = NULL;
  OK(tirx_runtime_alloc(rt, nc * ce + 16, &dc));
  OK(tirx_runtime_alloc(rt, nc * ce + 16, &ds));
  OK(tirx_runtime_copy(rt, dc, bc, nc * ce, TIRX_COPY_HOST_TO_DEVICE));
  OK(tirx_runtime_copy(rt, ds, bs, nc * ce, TIRX_COPY_HOST_TO_DEVICE));
  int64_t qs[3] = {T, H, D}, ks[3] = {T, Hkv, D}, qst[3] = {qrow, D, 1}, kst[3] = {krow, D, 1};
  int64_t ps[1] = {T}, cs[2] = {P, half};
  tirx_tensor_arg q = {d, dt, 3, qs, qst}, k = {(char *)d + kat * es, dt, 3, ks, kst};
  tirx_tensor_arg tp = {dpos, TIRX_I32, 1, ps, NULL};
  tirx_tensor_arg tc = {dc, c->cdt, 2, cs, NULL}, ts = {ds, c->cdt, 2, cs, NULL};
  tirx_rope_options o = {.style = c->style, .rot_dim = (int)c->rot};
  OK(tirx_op_rope(rt, &o, &q, Hkv ? &k : NULL, &tp, &tc, &ts, NULL));
  OK(tirx_runtime_synchronize(rt, NULL));
  float *got = mb_download(rt, d, dt, n);
  /* the reference: start from the input, rotate q's and k's pairs */
  double *want = malloc(n * sizeof *want);
  bool *rotated = calloc(n, 1);
  for (size_t i = 0; i < n; i++) want[i] = h[i];
  for (int64_t t = 0; t < T; t++) {
    if (pos[t] < 0 || pos[t] >= P) continue;
    for (int64_t hh = 0; hh < H + Hkv; hh++) {
      size_t base = hh < H ? (size_t)(t * qrow + hh * D) : kat + (size_t)(t * krow + (hh - H) * D);
      for (int64_t i = 0; i < half; i++) {
        size_t i1 = base + (size_t)(c->style == TIRX_ROPE_NEOX ? i : 2 * i);
        size_t i2 = base + (size_t)(c->style == TIRX_ROPE_NEOX ? i + half : 2 * i + 1);
        double cc = hc[pos[t] * half + i], sn = hs[pos[t] * half + i], a = h[i1], z = h[i2];
        want[i1] = a * cc - z * sn, want[i2] = z * cc + a * sn;
        rotated[i1] = rotated[i2] = true;
      }
    }
  }
  size_t nr = 0, nu = 0;
  float *gr = malloc(n * 4), *gu = malloc(n * 4);
  double *wr = malloc(n * sizeof *wr), *wu = malloc(n * sizeof *wu);
  for (size_t i = 0; i < n; i++) {
    if (rotated[i]) gr[nr] = got[i], wr[nr++] = want[i];
    else gu[nu] = got[i], wu[nu++] = want[i];
  }
  char what[200];
  snprintf(what, sizeof what, "rope %s %s cache %s T=%lld H=%lld H_kv=%lld D=%lld R=%lld%s "
           "pad %lld", c->style == TIRX_ROPE_NEOX ? "neox" : "gptj", tirx_dtype_name(dt),
           tirx_dtype_name(c->cdt), (long long)T, (long long)H, (long long)Hkv, (long long)D,
           (long long)R, c->fused ? " fused qkv" : "", (long long)c->pad);
  cr_assert_gt(nr, 0, "%s: nothing rotated", what);
  double tol = dt == TIRX_F16 ? 2e-3 : 1.6e-2;
  char w2[240];
  snprintf(w2, sizeof w2, "%s: rotated", what);
  compare(w2, gr, wr, nr, tol, tol);
  snprintf(w2, sizeof w2, "%s: untouched", what);
  compare(w2, gu, wu, nu, 0, 0);
  void *bufs[] = {d, dpos, dc, ds};
  for (int i = 0; i < 4; i++) tirx_runtime_free(rt, bufs[i]);
  free(h), free(pos), free(hc), free(hs), free(bc), free(bs), free(got), free(want);
  free(rotated), free(gr), free(gu), free(wr), free(wu);
}

/* Both styles; full and partial rotary dims; GQA (H != H_kv), MHA, MQA and q alone; a decode
 * step (T = 1), odd token counts and a prefill; q and k as slices of one fused qkv buffer;
 * token strides that are multiples of 8 (built into the kernel: 16-byte moves where R/2 is a
 * multiple of 8) and others (passed at launch); caches in f32 and in the dtype; random
 * positions with one out of range. */
Test(gpu, rope, .timeout = 600) {
  tirx_runtime *rt = gpu_runtime();
  static const rope_case cases[] = {
      {TIRX_ROPE_NEOX, TIRX_BF16, TIRX_F32, 37, 32, 8, 128, 0, false, 0},
      {TIRX_ROPE_GPTJ, TIRX_BF16, TIRX_F32, 37, 32, 8, 128, 0, false, 0},
      {TIRX_ROPE_NEOX, TIRX_BF16, TIRX_F32, 1, 32, 8, 128, 0, true, 0},
      {TIRX_ROPE_GPTJ, TIRX_BF16, TIRX_F32, 1, 32, 8, 128, 0, true, 0},
      {TIRX_ROPE_NEOX, TIRX_BF16, TIRX_F32, 513, 8, 8, 128, 64, true, 0},
      {TIRX_ROPE_GPTJ, TIRX_BF16, TIRX_F32, 513, 8, 8, 128, 64, true, 0},
      {TIRX_ROPE_NEOX, TIRX_F16, TIRX_F32, 19, 12, 4, 64, 32, false, 0},
      {TIRX_ROPE_GPTJ, TIRX_F16, TIRX_F32, 19, 12, 4, 64, 32, true, 0},
      {TIRX_ROPE_NEOX, TIRX_BF16, TIRX_BF16, 7, 5, 1, 80, 0, true, 0},
      {TIRX_ROPE_GPTJ, TIRX_BF16, TIRX_BF16, 7, 5, 1, 80, 0, false, 0},
      {TIRX_ROPE_NEOX, TIRX_F16, TIRX_F16, 33, 4, 0, 128, 96, false, 0},
      {TIRX_ROPE_GPTJ, TIRX_F16, TIRX_F16, 33, 4, 0, 128, 96, false, 0},
      {TIRX_ROPE_NEOX, TIRX_BF16, TIRX_F32, 4096, 32, 8, 128, 0, true, 0},
      {TIRX_ROPE_GPTJ, TIRX_BF16, TIRX_F32, 3, 3, 1, 2, 0, false, 0},
      /* token strides that are not multiples of 8: the chunked kernel with element moves */
      {TIRX_ROPE_NEOX, TIRX_BF16, TIRX_F32, 37, 32, 8, 128, 0, false, 1},
      {TIRX_ROPE_GPTJ, TIRX_F16, TIRX_F16, 21, 8, 2, 64, 48, true, 3},
      /* 72 heads x 8 chunks: 512 threads looping over 576 */
      {TIRX_ROPE_NEOX, TIRX_F16, TIRX_F32, 5, 64, 8, 128, 0, true, 0},
      {TIRX_ROPE_GPTJ, TIRX_BF16, TIRX_F32, 5, 64, 8, 128, 0, false, 0},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) check_rope(rt, &cases[i]);
  tirx_runtime_destroy(rt);
}

/* tirx_op_gemm: C = epilogue(A B^T [+ bias]) for decode and odd shapes, every epilogue, both
 * dtypes, against a float64 reference of every element; C poisoned first. */
static void check_op_gemm(tirx_runtime *rt, tirx_dtype dt, int64_t M, int64_t N, int64_t K,
                          tirx_epilogue ep) {
  float *ha, *hb, *hbias;
  void *da = mb_input(rt, dt, (size_t)(M * K), -1, 1, &ha);
  void *db = mb_input(rt, dt, (size_t)(N * K), -1, 1, &hb);
  void *dbias = mb_input(rt, dt, (size_t)N, -1, 1, &hbias);
  void *dc = mb_output(rt, (size_t)(M * N) * 2);
  int64_t as[2] = {M, K}, bs[2] = {N, K}, cs[2] = {M, N}, bias_s[1] = {N};
  tirx_tensor_arg a = {da, dt, 2, as, NULL}, b = {db, dt, 2, bs, NULL};
  tirx_tensor_arg bias = {dbias, dt, 1, bias_s, NULL}, c = {dc, dt, 2, cs, NULL};
  tirx_gemm_options o = {.epilogue = ep};
  OK(tirx_op_gemm(rt, &o, &a, &b, ep == TIRX_EPILOGUE_NONE ? NULL : &bias, &c, NULL));
  OK(tirx_runtime_synchronize(rt, NULL));
  double *want = malloc((size_t)(M * N) * sizeof *want);
  for (int64_t i = 0; i < M; i++)
    for (int64_t j = 0; j < N; j++) {
      double acc = 0;
      for (int64_t k = 0; k < K; k++) acc += (double)ha[i * K + k] * hb[j * K + k];
      if (ep != TIRX_EPILOGUE_NONE) acc += hbias[j];
      if (ep == TIRX_EPILOGUE_BIAS_SILU) acc = acc / (1 + exp(-acc));
      if (ep == TIRX_EPILOGUE_BIAS_GELU) acc = 0.5 * acc * (1 + erf(acc / sqrt(2.0)));
      want[i * N + j] = acc;
    }
  float *got = mb_download(rt, dc, dt, (size_t)(M * N));
  char what[160];
  snprintf(what, sizeof what, "tirx_op_gemm %s %lldx%lldx%lld epilogue %d", tirx_dtype_name(dt),
           (long long)M, (long long)N, (long long)K, (int)ep);
  double rel = dt == TIRX_F16 ? 4e-3 : 1.6e-2;
  compare(what, got, want, (size_t)(M * N), rel * sqrt((double)K) * 0.5, rel);
  void *bufs[] = {da, db, dbias, dc};
  for (int i = 0; i < 4; i++) tirx_runtime_free(rt, bufs[i]);
  free(ha), free(hb), free(hbias), free(want), free(got);
}

Test(gpu, ops_gemm, .timeout = 600) {
  tirx_runtime *rt = gpu_runtime();
  static const int64_t shapes[][3] = {{1, 256, 128}, {7, 136, 72}, {129, 136, 72}, {64, 512, 256},
                                      {300, 200, 520}};
  for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
    for (int d = 0; d < 2; d++)
      for (int e = 0; e < 4; e++)
        check_op_gemm(rt, d ? TIRX_F16 : TIRX_BF16, shapes[s][0], shapes[s][1], shapes[s][2],
                      (tirx_epilogue)e);
  tirx_runtime_destroy(rt);
}

/* ---- tirx_op_gemm's paths (issue 16): gemv (M <= 8) and wgmma, forced and chosen ---- */

/* rows x ld random values of dt (padding included: a kernel that read it would be wrong) on
 * the device; host: the same values as floats, row stride ld. */
static void *gp_matrix(tirx_runtime *rt, tirx_dtype dt, int64_t rows, int64_t ld, float **host) {
  return mb_input(rt, dt, (size_t)(rows * ld), -1, 1, host);
}

/* One GEMM problem: A [M, K], B [N, K] and bias [N] on the device with padded rows (lda, ldb,
 * ldc past K and N: multiples of 8 elements, ldb 8 more), fresh random values, C's buffer, and
 * the float64 reference epilogue(A B^T + bias), M x N dense. */
typedef struct gp_case {
  tirx_dtype dt;
  int64_t M, N, K, lda, ldb, ldc;
  float *ha, *hb, *hbias;
  void *da, *db, *dbias, *dc;
  double *want;
} gp_case;

/* One tirx_op_gemm on the padded operands with C (rows of ldc) poisoned first; the raw 16-bit
 * C back (M * ldc elements). The padding columns N..ldc of every row must still hold the
 * poison (POISON's halves: 0x0bad at even elements, 0x07fc at odd ones). */
static uint16_t *gp_run(tirx_runtime *rt, const tirx_gemm_options *o, const gp_case *gc,
                        const char *what) {
  tirx_dtype dt = gc->dt;
  int64_t M = gc->M, N = gc->N, K = gc->K, lda = gc->lda, ldb = gc->ldb, ldc = gc->ldc;
  void *da = gc->da, *db = gc->db, *dbias = gc->dbias, *dc = gc->dc;
  size_t cbytes = (size_t)(M * ldc) * 2;
  OK(tirx_runtime_fill32(rt, dc, POISON, (cbytes + 16) / 4));
  tirx_tensor_arg a = {da, dt, 2, (int64_t[]){M, K}, (int64_t[]){lda, 1}};
  tirx_tensor_arg b = {db, dt, 2, (int64_t[]){N, K}, (int64_t[]){ldb, 1}};
  tirx_tensor_arg c = {dc, dt, 2, (int64_t[]){M, N}, (int64_t[]){ldc, 1}};
  tirx_tensor_arg bias = {dbias, dt, 1, (int64_t[]){N}, NULL};
  OK(tirx_op_gemm(rt, o, &a, &b, o->epilogue == TIRX_EPILOGUE_NONE ? NULL : &bias, &c, NULL));
  sync_within(rt, 20, what); /* a hung path fails here, named, within 20 s */
  uint16_t *h = malloc(cbytes);
  cr_assert_not_null(h);
  OK(tirx_runtime_copy(rt, h, dc, cbytes, TIRX_COPY_DEVICE_TO_HOST));
  for (int64_t i = 0; i < M; i++)
    for (int64_t j = N; j < ldc; j++) {
      int64_t e = i * ldc + j;
      uint16_t want = (uint16_t)(e % 2 ? POISON >> 16 : POISON & 0xffff);
      cr_assert_eq(h[e], want, "%s: C[%lld, %lld] (padding past N) was written: 0x%04x "
                   "(TIRX_SEED=%llu)", what, (long long)i, (long long)j, h[e],
                   (unsigned long long)seed_initial);
    }
  return h;
}

/* C's M x N elements as floats (row stride ldc). */
static float *gp_values(const uint16_t *h, tirx_dtype dt, int64_t M, int64_t N, int64_t ldc) {
  float *f = malloc((size_t)(M * N) * sizeof *f);
  cr_assert_not_null(f);
  for (int64_t i = 0; i < M; i++)
    for (int64_t j = 0; j < N; j++) f[i * N + j] = from_half_bits(h[i * ldc + j], dt);
  return f;
}

typedef struct gp_path {
  tirx_gemm_options o;
  const char *name;
} gp_path;

/*
 * One shape, one dtype, one epilogue: the float64 reference, then every path that applies
 * (the default, wgmma forced, split-K forced with the plan's splits and with 3, gemv forced
 * with 1, 2 and 4 rows per CTA for M <= 8, family mma for small shapes, the wgmma path in
 * clusters of 1 x 1, 2 x 1 and 1 x 2 tiles: TMA multicast of B or A) against it; every
 * answer against the wgmma one; the clustered runs bit for bit the same as the 1 x 1 one (the
 * same tiles summed in the same order); and the default and split-K paths ten times more, bit
 * for bit the same as their first run (memcmp). Operands with padded rows (lda, ldb, ldc past K
 * and N: multiples of 8 elements, ldb 8 more), fresh random values, C poisoned before every
 * launch.
 */
/* gp_open: the problem and its float64 reference (gp_case above). */

static gp_case gp_open(tirx_runtime *rt, tirx_dtype dt, int64_t M, int64_t N, int64_t K,
                       tirx_epilogue ep) {
  gp_case c = {.dt = dt, .M = M, .N = N, .K = K, .lda = (K + 7) / 8 * 8};
  c.ldb = c.lda + 8, c.ldc = (N + 7) / 8 * 8;
  c.da = gp_matrix(rt, dt, M, c.lda, &c.ha), c.db = gp_matrix(rt, dt, N, c.ldb, &c.hb);
  c.dbias = mb_input(rt, dt, (size_t)N, -1, 1, &c.hbias);
  c.dc = mb_output(rt, (size_t)(M * c.ldc) * 2);
  c.want = malloc((size_t)(M * N) * sizeof *c.want);
  cr_assert_not_null(c.want);
  for (int64_t i = 0; i < M; i++)
    for (int64_t j = 0; j < N; j++) {
      double acc = 0;
      for (int64_t k = 0; k < K; k++) acc += (double)c.ha[i * c.lda + k] * c.hb[j * c.ldb + k];
      if (ep != TIRX_EPILOGUE_NONE) acc += c.hbias[j];
      c.want[i * N + j] = gemm_epilogue_ref(ep, acc);
    }
  return c;
}

static void gp_close(tirx_runtime *rt, gp_case *c) {
  void *bufs[] = {c->da, c->db, c->dbias, c->dc};
  for (int i = 0; i < 4; i++) tirx_runtime_free(rt, bufs[i]);
  free(c->ha), free(c->hb), free(c->hbias), free(c->want);
}

static void check_gemm_paths(tirx_runtime *rt, tirx_dtype dt, int64_t M, int64_t N, int64_t K,
                             tirx_epilogue ep) {
  gp_case gc = gp_open(rt, dt, M, N, K, ep);
  int64_t ldc = gc.ldc;
  double rel = dt == TIRX_F16 ? 4e-3 : 1.6e-2, atol = rel * sqrt((double)K) * 0.5;
  gp_path runs[12];
  int nr = 0;
  runs[nr++] = (gp_path){{.epilogue = ep}, "default"};
  runs[nr++] = (gp_path){{.epilogue = ep, .path = TIRX_GEMM_PATH_WGMMA}, "wgmma"};
  runs[nr++] = (gp_path){{.epilogue = ep, .path = TIRX_GEMM_PATH_WGMMA_SPLITK}, "split-K"};
  runs[nr++] = (gp_path){{.epilogue = ep, .path = TIRX_GEMM_PATH_WGMMA_SPLITK, .splits = 3},
                         "split-K 3"};
  if (M <= 8)
    for (int r = 1; r <= 4; r *= 2)
      runs[nr++] = (gp_path){{.epilogue = ep, .path = TIRX_GEMM_PATH_GEMV, .gemv_rows = r},
                                     r == 1 ? "gemv rows 1" : r == 2 ? "gemv rows 2" : "gemv rows 4"};
  if (M * N * K <= 4096 * 4096)
    runs[nr++] = (gp_path){{.epilogue = ep, .family = "mma"}, "mma"};
  int first_cluster = nr;
  static const int shapes[3][2] = {{1, 1}, {2, 1}, {1, 2}};
  static const char *const cnames[3] = {"wgmma cluster 1x1", "wgmma cluster 2x1",
                                        "wgmma cluster 1x2"};
  for (int q = 0; q < 3; q++)
    runs[nr++] = (gp_path){{.size = sizeof(tirx_gemm_options), .epilogue = ep,
                            .path = TIRX_GEMM_PATH_WGMMA, .cluster_m = shapes[q][0],
                            .cluster_n = shapes[q][1]},
                           cnames[q]};
  float *outs[12] = {NULL};
  uint16_t *unclustered = NULL;
  for (int r = 0; r < nr; r++) {
    tirx_gemm_plan p = {.size = sizeof p}; /* version 2: the cluster */
    OK(tirx_kernels_gemm_plan(&runs[r].o, M, N, K, &p));
    char what[192];
    snprintf(what, sizeof what, "gemm paths %s %lldx%lldx%lld epilogue %d, %s (plan %s)",
             tirx_dtype_name(dt), (long long)M, (long long)N, (long long)K, (int)ep,
             runs[r].name, p.name);
    /* gemm.c: M <= 2 always gemv; M = 3, 4 gemv only where the wgmma plan would split K */
    if (r == 0 && M <= 2) cr_assert_str_eq(p.name, "gemv", "%s", what);
    if (r == 0 && M > 4) cr_assert_str_neq(p.name, "gemv", "%s", what);
    if (r == 2) cr_assert_str_eq(p.name, "wgmma_splitk", "%s", what);
    if (r >= first_cluster) { /* the plan reports the cluster asked for where it can be had */
      const int *q = shapes[r - first_cluster];
      /* A is shared only in halves of 8-row multiples: the rows of A a tile loads (M rounded
       * up to 8 below the tile's 64 or 128 rows) a multiple of 16 */
      int64_t bm = M <= 64 ? 64 : 128, ar = M < bm ? (M + 7) / 8 * 8 : bm;
      bool can = q[1] == 1 || ar % 16 == 0;
      if (can) cr_assert(p.cluster_m == q[0] && p.cluster_n == q[1], "%s: plan cluster %dx%d",
                         what, p.cluster_m, p.cluster_n);
      cr_assert_eq(p.ctas % (p.cluster_m * p.cluster_n), 0, "%s: %lld CTAs", what,
                   (long long)p.ctas);
    }
    uint16_t *h = gp_run(rt, &runs[r].o, &gc, what);
    outs[r] = gp_values(h, dt, M, N, ldc);
    compare(what, outs[r], gc.want, (size_t)(M * N), atol, rel);
    if (r == first_cluster) {
      unclustered = h;
      continue;
    }
    if (r > first_cluster)
      cr_assert(memcmp(h, unclustered, (size_t)(M * ldc) * 2) == 0,
                "%s: not bit for bit the unclustered kernel's C (TIRX_SEED=%llu)", what,
                (unsigned long long)seed_initial);
    if (r == 0 || r == 2) { /* deterministic: ten more runs, the same bits */
      for (int rep = 0; rep < 10; rep++) {
        uint16_t *h2 = gp_run(rt, &runs[r].o, &gc, what);
        cr_assert(memcmp(h, h2, (size_t)(M * ldc) * 2) == 0,
                  "%s: run %d differs from the first (TIRX_SEED=%llu)", what, rep + 2,
                  (unsigned long long)seed_initial);
        free(h2);
      }
    }
    free(h);
  }
  free(unclustered);
  /* The paths agree with one another (the wgmma answer as the reference of the others). */
  double *w2 = malloc((size_t)(M * N) * sizeof *w2);
  cr_assert_not_null(w2);
  for (int64_t i = 0; i < M * N; i++) w2[i] = outs[1][i];
  for (int r = 0; r < nr; r++) {
    if (r == 1) continue;
    char what[192];
    snprintf(what, sizeof what, "gemm paths %s %lldx%lldx%lld epilogue %d: %s against wgmma",
             tirx_dtype_name(dt), (long long)M, (long long)N, (long long)K, (int)ep,
             runs[r].name);
    compare(what, outs[r], w2, (size_t)(M * N), 2 * atol, 2 * rel);
  }
  for (int r = 0; r < nr; r++) free(outs[r]);
  free(w2);
  gp_close(rt, &gc);
}

/* Odd shapes (M 1, 3, 7, 9, 17, 255; N and K not multiples of the tiles, K not of 8; some
 * with K long enough for split-K to be the default: 9 x 77 x 4096, 64 x 256 x 2056; an odd
 * number of tile rows and columns for the clusters' edge tiles: 300 x 520, 128 x 1000), decode
 * shapes of LLaMA (M = 1 and 8, N = 4096, K = 14336; M = 16, N = 1024, K = 14336: split-K by
 * default), both dtypes, every epilogue on the odd ones. */
static const int64_t gemm_paths_odd[][3] = {
    {1, 77, 40},     {3, 136, 9},     {7, 255, 300},   {8, 5, 24},      {9, 77, 40},
    {17, 130, 65},   {255, 200, 72},  {1, 1000, 4097}, {9, 77, 4096},   {17, 130, 1000},
    {255, 200, 1100}, {64, 256, 2056}, {300, 520, 256}, {128, 1000, 1024}};

/* Shapes [2 part, 2 part + 2) of gemm_paths_odd, both dtypes, every epilogue. The shapes are in
 * seven tests, not one, so that the suite's -j runs their compiles side by side (one test of
 * all of them took longer than the rest of the suite). */
static void gemm_paths_part(int part) {
  tirx_runtime *rt = gpu_runtime();
  for (int s = 2 * part; s < 2 * part + 2; s++)
    for (int d = 0; d < 2; d++)
      for (int e = 0; e < 4; e++)
        check_gemm_paths(rt, d ? TIRX_F16 : TIRX_BF16, gemm_paths_odd[s][0], gemm_paths_odd[s][1],
                         gemm_paths_odd[s][2], (tirx_epilogue)e);
  tirx_runtime_destroy(rt);
}
Test(gpu, gemm_paths_odd0, .timeout = 600) { gemm_paths_part(0); }
Test(gpu, gemm_paths_odd1, .timeout = 600) { gemm_paths_part(1); }
Test(gpu, gemm_paths_odd2, .timeout = 600) { gemm_paths_part(2); }
Test(gpu, gemm_paths_odd3, .timeout = 600) { gemm_paths_part(3); }
Test(gpu, gemm_paths_odd4, .timeout = 600) { gemm_paths_part(4); }
Test(gpu, gemm_paths_odd5, .timeout = 600) { gemm_paths_part(5); }
Test(gpu, gemm_paths_odd6, .timeout = 600) { gemm_paths_part(6); }
_Static_assert(sizeof gemm_paths_odd / sizeof gemm_paths_odd[0] == 14,
               "gemm_paths_odd0..6 take two shapes each");

Test(gpu, gemm_paths_decode, .timeout = 600) {
  tirx_runtime *rt = gpu_runtime();
  for (int d = 0; d < 2; d++) {
    check_gemm_paths(rt, d ? TIRX_F16 : TIRX_BF16, 1, 4096, 14336, TIRX_EPILOGUE_NONE);
    check_gemm_paths(rt, d ? TIRX_F16 : TIRX_BF16, 8, 4096, 14336, TIRX_EPILOGUE_BIAS_SILU);
    check_gemm_paths(rt, d ? TIRX_F16 : TIRX_BF16, 16, 1024, 14336, TIRX_EPILOGUE_BIAS_GELU);
  }
  tirx_runtime_destroy(rt);
}

/*
 * The persistent paths on grids of 2, 3 and 5 SMs, so that every CTA (and every 2-CTA
 * cluster) loops over several tiles or split units, an odd number on some: the wgmma path
 * unclustered and in 2 x 1 and 1 x 2 clusters, split-K with the plan's splits and with 3, no
 * epilogue and bias+SiLU (the chunked fused epilogue, whose bias row is released once a tile),
 * against the float64 reference, C poisoned before each launch. check_gemm_paths runs the same
 * paths on the default 132 SMs, where most CTAs of its shapes get one tile (a review of
 * session 16 found the multi-tile loops of the cluster and split-K paths covered on the GPU only
 * by the fused_epilogues tests' 4 SMs). Not yet run on a GPU when it was written.
 */
static void check_gemm_few_sms(tirx_runtime *rt, tirx_dtype dt, int64_t M, int64_t N, int64_t K,
                               tirx_epilogue ep) {
  gp_case gc = gp_open(rt, dt, M, N, K, ep);
  double rel = dt == TIRX_F16 ? 4e-3 : 1.6e-2, atol = rel * sqrt((double)K) * 0.5;
  static const struct { tirx_gemm_path path; int splits, cm, cn; const char *name; } paths[] = {
      {TIRX_GEMM_PATH_WGMMA, 0, 1, 1, "wgmma"},
      {TIRX_GEMM_PATH_WGMMA, 0, 2, 1, "wgmma cluster 2x1"},
      {TIRX_GEMM_PATH_WGMMA, 0, 1, 2, "wgmma cluster 1x2"},
      {TIRX_GEMM_PATH_WGMMA_SPLITK, 0, 0, 0, "split-K"},
      {TIRX_GEMM_PATH_WGMMA_SPLITK, 3, 0, 0, "split-K 3"}};
  static const int sms[] = {2, 3, 5};
  for (size_t q = 0; q < sizeof paths / sizeof paths[0]; q++)
    for (size_t n = 0; n < sizeof sms / sizeof sms[0]; n++) {
      tirx_gemm_options o = {.size = sizeof o, .epilogue = ep, .sms = sms[n],
                             .path = paths[q].path, .splits = paths[q].splits,
                             .cluster_m = paths[q].cm, .cluster_n = paths[q].cn};
      tirx_gemm_plan p = {.size = sizeof p};
      OK(tirx_kernels_gemm_plan(&o, M, N, K, &p));
      char what[192];
      snprintf(what, sizeof what, "gemm %s %lldx%lldx%lld epilogue %d, %s on %d SMs (plan %s, "
               "%lld CTAs)", tirx_dtype_name(dt), (long long)M, (long long)N, (long long)K,
               (int)ep, paths[q].name, sms[n], p.name, (long long)p.ctas);
      cr_assert_leq(p.ctas, sms[n], "%s: more CTAs than SMs", what);
      uint16_t *h = gp_run(rt, &o, &gc, what);
      float *got = gp_values(h, dt, M, N, gc.ldc);
      compare(what, got, gc.want, (size_t)(M * N), atol, rel);
      free(got), free(h);
    }
  gp_close(rt, &gc);
}

/* Shapes with several tiles a CTA on 2..5 SMs: odd tile rows and columns (300 x 520, 255 x
 * 1000), a 64-row tile (17 x 130) and K long enough for many split units (1100, 2056). */
static void gemm_few_sms(tirx_dtype dt) {
  static const int64_t shapes[][3] = {{300, 520, 256}, {255, 1000, 1100}, {17, 130, 2056}};
  tirx_runtime *rt = gpu_runtime();
  for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
    for (int e = 0; e < 2; e++)
      check_gemm_few_sms(rt, dt, shapes[s][0], shapes[s][1], shapes[s][2],
                         e ? TIRX_EPILOGUE_BIAS_SILU : TIRX_EPILOGUE_NONE);
  tirx_runtime_destroy(rt);
}
Test(gpu, gemm_paths_few_sms_bf16, .timeout = 600) { gemm_few_sms(TIRX_BF16); }
Test(gpu, gemm_paths_few_sms_f16, .timeout = 600) { gemm_few_sms(TIRX_F16); }

Test(gpu, membound_rmsnorm, .timeout = 300) { check_membound_kind(TIRX_ROW_OP_RMSNORM); }
Test(gpu, membound_layernorm, .timeout = 300) { check_membound_kind(TIRX_ROW_OP_LAYERNORM); }
Test(gpu, membound_softmax, .timeout = 300) { check_membound_kind(TIRX_ROW_OP_SOFTMAX); }
Test(gpu, membound_add_rmsnorm, .timeout = 300) { check_membound_kind(TIRX_ROW_OP_ADD_RMSNORM); }
Test(gpu, membound_row_sum, .timeout = 300) { check_membound_kind(TIRX_ROW_OP_SUM); }
Test(gpu, membound_row_max, .timeout = 300) { check_membound_kind(TIRX_ROW_OP_MAX); }
Test(gpu, membound_silu_mul, .timeout = 300) { check_membound_kind(TIRX_ROW_OP_SILU_MUL); }
Test(gpu, membound_chain, .timeout = 300) { check_membound_kind(TIRX_ROW_OP_CHAIN); }

/* ---- copy.ldmatrix / copy.stmatrix (families/copy_ldmatrix.c): exact round trips ---- */

/* The mma.sync m16n8k16 A fragment: 16x16 in four 8x8 ldmatrix blocks. */
#define LDM_MMA_A "((2,8),(2,4,2)):((2@reg,4@laneid),(4@reg,1@laneid,1@reg))"

enum { LDM_LOAD = 0, LDM_STORE = 1, LDM_BOTH = 2 };

/*
 * One warp, a 16x16 tile x -> y in the mma A fragment v:
 *   LDM_LOAD:  x -> s (copy) -> v (ldmatrix) -> y (plain stores: lane l writes row 8*br + l/4,
 *              columns 8*bc + 2*(l%4) + {0,1} of every 8x8 block (br, bc));
 *   LDM_STORE: x -> v (plain loads, the same elements) -> s (stmatrix) -> y (copy);
 *   LDM_BOTH:  x -> s -> v (ldmatrix) -> s2 (stmatrix) -> y.
 * num: the instruction shape (0: the largest). swizzle: s (and s2) are 16x64 tiles with the
 * 128-byte swizzle and the tile is their columns [16, 32).
 */
static tirx_kernel *ldm_kernel(tirx_dtype dt, int mode, int64_t num, bool swizzle) {
  tirx_builder *b = tirx_builder_create("ldm");
  tirx_arena *a = tirx_builder_arena(b);
  tirx_tensor *x = tirx_param_tensor(b, "x", dt, TIRX_EXPRS(tirx_int(b, 16), tirx_int(b, 16)), NULL);
  tirx_tensor *y = tirx_param_tensor(b, "y", dt, TIRX_EXPRS(tirx_int(b, 16), tirx_int(b, 16)), NULL);
  tirx_set_block(b, 32, 1, 1);
  int64_t scols = swizzle ? 64 : 16, c0 = swizzle ? 16 : 0;
  const tirx_layout *sl = swizzle ? tirx_layout_smem_tile(a, 16, 64, tirx_dtype_size(dt), 128) : NULL;
  tirx_tensor *s = tirx_alloc_shared(b, "s", dt, TIRX_DIMS(16, scols), sl);
  tirx_tensor *s2 = tirx_alloc_shared(b, "s2", dt, TIRX_DIMS(16, scols), sl);
  tirx_region *rs = tirx_region_new(b, s, TIRX_EXPRS(tirx_int(b, 0), tirx_int(b, c0)), (int64_t[]){16, 16});
  tirx_region *rs2 = tirx_region_new(b, s2, TIRX_EXPRS(tirx_int(b, 0), tirx_int(b, c0)), (int64_t[]){16, 16});
  tirx_config cfg = {.shape = {num}};
  tirx_team_begin(b, TIRX_TEAM_WARP);
  tirx_tensor *v = tirx_alloc_local(b, "v", dt, TIRX_DIMS(16, 16), tirx_layout_parse(a, LDM_MMA_A));
  tirx_expr *lane = tirx_let(b, "l", tirx_lane_id(b));
  if (mode == LDM_LOAD || mode == LDM_BOTH) {
    tirx_copy(b, rs, tirx_whole(b, x), NULL);
    tirx_sync_warp(b);
    tirx_copy(b, tirx_whole(b, v), rs, &cfg);
  } else { /* plain loads of the fragment */
    for (int br = 0; br < 2; br++)
      for (int bc = 0; bc < 2; bc++)
        for (int e = 0; e < 2; e++) {
          tirx_expr *row = tirx_add(b, tirx_int(b, 8 * br), tirx_div(b, lane, tirx_int(b, 4)));
          tirx_expr *col = tirx_add(b, tirx_int(b, 8 * bc + e),
                                    tirx_mul(b, tirx_mod(b, lane, tirx_int(b, 4)), tirx_int(b, 2)));
          tirx_store(b, v, TIRX_EXPRS(row, col), tirx_load(b, x, TIRX_EXPRS(row, col)));
        }
  }
  if (mode == LDM_LOAD) { /* plain stores of the fragment */
    for (int br = 0; br < 2; br++)
      for (int bc = 0; bc < 2; bc++)
        for (int e = 0; e < 2; e++) {
          tirx_expr *row = tirx_add(b, tirx_int(b, 8 * br), tirx_div(b, lane, tirx_int(b, 4)));
          tirx_expr *col = tirx_add(b, tirx_int(b, 8 * bc + e),
                                    tirx_mul(b, tirx_mod(b, lane, tirx_int(b, 4)), tirx_int(b, 2)));
          tirx_store(b, y, TIRX_EXPRS(row, col), tirx_load(b, v, TIRX_EXPRS(row, col)));
        }
  } else {
    tirx_region *dst = mode == LDM_BOTH ? rs2 : rs;
    tirx_copy(b, dst, tirx_whole(b, v), &cfg);
    tirx_sync_warp(b);
    tirx_copy(b, tirx_whole(b, y), dst, NULL);
  }
  tirx_team_end(b);
  tirx_kernel *k = NULL;
  if (tirx_kernel_build(b, &k) != TIRX_OK)
    cr_assert_fail("ldm_kernel(%s, mode %d, num %lld%s): %s", tirx_dtype_name(dt), mode,
                   (long long)num, swizzle ? ", swizzled" : "", tirx_builder_error(b));
  tirx_builder_destroy(b);
  const char *rep = tirx_kernel_dispatch_report(k);
  if (mode != LDM_STORE)
    cr_assert_not_null(strstr(rep, "copy.ldmatrix"), "%s", rep);
  if (mode != LDM_LOAD)
    cr_assert_not_null(strstr(rep, "copy.stmatrix"), "%s", rep);
  return k;
}

/* Random 16-bit patterns through the kernel: the output equals the input bit for bit. */
static void check_ldm(tirx_runtime *rt, tirx_dtype dt, int mode, int64_t num, bool swizzle) {
  tirx_kernel *k = ldm_kernel(dt, mode, num, swizzle);
  uint16_t hx[256], hy[256];
  for (int i = 0; i < 256; i++) {
    uint16_t h = (uint16_t)(rnd() >> 48);
    if ((h & 0x7f80) == 0x7f80 || (h & 0x7c00) == 0x7c00) h &= 0x3fff; /* finite in both */
    hx[i] = h;
  }
  void *dx = NULL, *dy = NULL;
  OK(tirx_runtime_alloc(rt, sizeof hx, &dx));
  OK(tirx_runtime_alloc(rt, sizeof hy, &dy));
  OK(tirx_runtime_copy(rt, dx, hx, sizeof hx, TIRX_COPY_HOST_TO_DEVICE));
  OK(tirx_runtime_fill32(rt, dy, POISON, sizeof hy / 4));
  tirx_arg args[] = {
      tirx_arg_tensor(dx, dt, 2, (int64_t[]){16, 16}, NULL),
      tirx_arg_tensor(dy, dt, 2, (int64_t[]){16, 16}, NULL),
  };
  OK(tirx_launch(rt, k, args, 2, NULL));
  OK(tirx_runtime_synchronize(rt, NULL));
  OK(tirx_runtime_copy(rt, hy, dy, sizeof hy, TIRX_COPY_DEVICE_TO_HOST));
  for (int i = 0; i < 256; i++)
    cr_assert_eq(hy[i], hx[i],
                 "%s mode %d num %lld%s: element (%d, %d) is 0x%04x, want 0x%04x (seed %llu)",
                 tirx_dtype_name(dt), mode, (long long)num, swizzle ? " swizzled" : "", i / 16,
                 i % 16, hy[i], hx[i], (unsigned long long)seed_initial);
  tirx_runtime_free(rt, dx);
  tirx_runtime_free(rt, dy);
  tirx_kernel_release(k);
}

Test(gpu, ldmatrix_stmatrix_round_trips, .timeout = 300) {
  tirx_runtime *rt = gpu_runtime();
  static const tirx_dtype dts[] = {TIRX_BF16, TIRX_F16};
  static const int64_t nums[] = {0, 2, 1};
  for (int d = 0; d < 2; d++)
    for (int mode = LDM_LOAD; mode <= LDM_BOTH; mode++)
      for (int n = 0; n < 3; n++)
        for (int swz = 0; swz < 2; swz++)
          check_ldm(rt, dts[d], mode, nums[n], swz);
  tirx_runtime_destroy(rt);
}

/* ---- packed f16x2/bf16x2 math (pointwise.vec pack=2, TIRX__ST_PACKED) ---- */

/* out = op(a, b[, c]) over n elements of dtype dt in global memory, a CTA of 128 threads. */
static tirx_kernel *packed_kernel(tirx_dtype dt, tirx_op op, int nsrc, int64_t n) {
  tirx_builder *b = tirx_builder_create("packed");
  static const char *const names[4] = {"out", "a", "b", "c"};
  tirx_region *r[4];
  tirx_tensor *t[4];
  for (int i = 0; i <= nsrc; i++)
    t[i] = tirx_param_tensor(b, names[i], dt, TIRX_EXPRS(tirx_int(b, n)), NULL);
  tirx_set_block(b, 128, 1, 1);
  tirx_team_begin(b, TIRX_TEAM_CTA);
  for (int i = 0; i <= nsrc; i++) r[i] = tirx_whole(b, t[i]);
  if (nsrc == 2) tirx_binary(b, r[0], op, r[1], r[2], NULL);
  else tirx_ternary(b, r[0], op, r[1], r[2], r[3], NULL);
  tirx_team_end(b);
  tirx_kernel *k = NULL;
  cr_assert_eq(tirx_kernel_build(b, &k), TIRX_OK, "%s", tirx_builder_error(b));
  tirx_builder_destroy(b);
  return k;
}

static void check_packed(tirx_runtime *rt, tirx_dtype dt, tirx_op op, int64_t n) {
  int nsrc = op == TIRX_OP_FMA ? 3 : 2;
  tirx_kernel *k = packed_kernel(dt, op, nsrc, n);
  const char *rep = tirx_kernel_dispatch_report(k);
  /* Even widths pack pairs; odd ones fall back to per-element math. */
  const char *want = n % 2 ? "pointwise.scalar vec=1,pack=1 (fallback)" : ",pack=2\n";
  cr_assert_not_null(strstr(rep, want), "%s n=%lld: %s", tirx_dtype_name(dt), (long long)n, rep);
  float *h[4] = {NULL, NULL, NULL, NULL};
  void *d[4] = {NULL, NULL, NULL, NULL};
  d[0] = mb_output(rt, (size_t)n * 2);
  for (int i = 1; i <= nsrc; i++) d[i] = mb_input(rt, dt, (size_t)n, -4, 4, &h[i]);
  tirx_arg args[4];
  /* One shape array for every argument: a compound literal in the loop body would die with
   * each iteration, leaving args pointing at a dead array. */
  const int64_t shape[1] = {n};
  for (int i = 0; i <= nsrc; i++) args[i] = tirx_arg_tensor(d[i], dt, 1, shape, NULL);
  OK(tirx_launch(rt, k, args, nsrc + 1, NULL));
  OK(tirx_runtime_synchronize(rt, NULL));
  float *got = mb_download(rt, d[0], dt, (size_t)n);
  double *ref = malloc((size_t)n * sizeof *ref);
  cr_assert_not_null(ref);
  for (int64_t i = 0; i < n; i++) {
    double a = h[1][i], b = h[2][i];
    ref[i] = op == TIRX_OP_ADD   ? a + b
             : op == TIRX_OP_SUB ? a - b
             : op == TIRX_OP_MUL ? a * b
             : op == TIRX_OP_MAX ? (a < b ? b : a)
                                 : a * b + (double)h[3][i];
  }
  /* One rounding to the dtype: half an ulp, relative 2^-8 (bf16) or 2^-11 (f16); twice that. */
  char what[96];
  snprintf(what, sizeof what, "packed %s op %d n=%lld", tirx_dtype_name(dt), (int)op,
           (long long)n);
  compare(what, got, ref, (size_t)n, 1e-6, dt == TIRX_BF16 ? 0x1p-7 : 0x1p-10);
  free(ref);
  free(got);
  for (int i = 0; i <= nsrc; i++) {
    free(h[i]);
    tirx_runtime_free(rt, d[i]);
  }
  tirx_kernel_release(k);
}

Test(gpu, packed_bf16_f16_math, .timeout = 300) {
  tirx_runtime *rt = gpu_runtime();
  static const tirx_dtype dts[] = {TIRX_BF16, TIRX_F16};
  static const tirx_op ops[] = {TIRX_OP_ADD, TIRX_OP_SUB, TIRX_OP_MUL, TIRX_OP_FMA, TIRX_OP_MAX};
  static const int64_t widths[] = {1, 2, 3, 127, 5000};
  for (int d = 0; d < 2; d++)
    for (int o = 0; o < 5; o++)
      for (int w = 0; w < 5; w++) check_packed(rt, dts[d], ops[o], widths[w]);
  tirx_runtime_destroy(rt);
}
