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
#include "kernels.h"

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
