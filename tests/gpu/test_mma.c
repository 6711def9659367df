/*
 * GPU tests of the tensor-core families and the synchronisation statements: single-CTA GEMM
 * tiles (examples/mma_tiles.c) through gemm_async.wgmma, gemm.mma and gemm.scalar, with the
 * cast + stmatrix epilogue, against a float64 reference on fresh random inputs (the seed is
 * printed; TIRX_SEED replays it) with poisoned outputs; the RS form of gemm_async.wgmma (A
 * ldmatrix'd into registers) on single-CTA tiles and in a TMA-fed GEMM with tails in every
 * dimension, against the reference and the SS form on the same inputs; an mbarrier
 * producer/consumer ring with
 * setmaxnreg, elect.sync, named barriers and the cluster rank; the GEMMs of examples/gemm.c
 * (every family, the decode tile shapes, the fused bias/SiLU/GeLU epilogues).
 *
 * Every launch is compiled first (outside the clock), then waited for at most 10 seconds on the
 * host: a kernel that hangs (a wrong mbarrier phase, a missing arrival) fails its test instead
 * of blocking the suite. Each test skips cleanly without a device.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bounded_sync.h"
#include "gemm_ref.h"
#include "mma_tiles.h"

#define OK(call) cr_assert_eq((call), TIRX_OK, "%s: %s", #call, tirx_last_error())

static uint64_t seed_state, seed_initial;

static tirx_runtime *gpu(void) {
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
  seed_state = s && *s ? strtoull(s, NULL, 0)
                       : ((uint64_t)ts.tv_sec * 1000000007ull) ^ (uint64_t)ts.tv_nsec;
  if (!seed_state) seed_state = 1;
  seed_initial = seed_state;
  cr_log_info("device %s (%s), seed %llu", tirx_runtime_device_name(rt), tirx_runtime_arch(rt),
              (unsigned long long)seed_state);
  return rt;
}

static double uniform(double lo, double hi) {
  seed_state ^= seed_state >> 12;
  seed_state ^= seed_state << 25;
  seed_state ^= seed_state >> 27;
  return lo + (hi - lo) * (double)((seed_state * 2685821657736338717ull) >> 11) /
                  9007199254740992.0;
}

/* ---- 16-bit floats on the host (round to nearest even) ---- */

static uint16_t to_bf16(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  return (uint16_t)((x + 0x7fff + ((x >> 16) & 1)) >> 16);
}
static float from_bf16(uint16_t h) {
  uint32_t x = (uint32_t)h << 16;
  float f;
  memcpy(&f, &x, 4);
  return f;
}
static uint16_t to_f16(float f) { /* normal range only: the tests' values are */
  uint32_t x;
  memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000, mant = x & 0x7fffff;
  int e = (int)((x >> 23) & 0xff) - 127 + 15;
  if (e <= 0) return (uint16_t)sign; /* tiny: flush (none occur here) */
  uint32_t h = sign | ((uint32_t)e << 10) | (mant >> 13), rem = mant & 0x1fff;
  if (rem > 0x1000 || (rem == 0x1000 && (h & 1))) h++;
  return (uint16_t)h;
}
static float from_f16(uint16_t h) {
  int e = (h >> 10) & 0x1f;
  float m = (float)(h & 0x3ff);
  float v = e == 0 ? ldexpf(m, -24) : ldexpf(1024.0f + m, e - 25);
  return (h & 0x8000) ? -v : v;
}

/* ---- a launch with a host-side timeout ---- */

/* Compiles (no clock), then launches and synchronises within 10 seconds or fails the test
 * (bounded_sync.h). */
static void launch_within_10s(tirx_runtime *rt, const tirx_kernel *k, const tirx_arg *args,
                              int nargs, const char *what) {
  tirx_future *f = NULL;
  OK(tirx_prepare_async(rt, k, args, nargs, &f));
  tirx_status st = tirx_future_wait(f, -1);
  tirx_future_release(f);
  cr_assert_eq(st, TIRX_OK, "%s: compile: %s", what, tirx_last_error());
  cr_assert_eq(tirx_launch(rt, k, args, nargs, NULL), TIRX_OK, "%s: %s", what, tirx_last_error());
  sync_within(rt, 10, what);
}

/* ---- GEMM tiles ---- */

static void check_tile(tirx_runtime *rt, mma_tile t) {
  char err[2048] = "", what[160];
  snprintf(what, sizeof what, "%s %s %dx%dx%d wg=%d swizzle=%d split_k=%d", t.family,
           t.dtype == TIRX_F16 ? "f16" : "bf16", t.m, t.n, t.k, t.warpgroups, t.swizzle,
           (int)t.split_k);
  tirx_kernel *k = example_mma_tile(&t, err, sizeof err);
  cr_assert_not_null(k, "%s: %s", what, err);
  size_t M = (size_t)t.m, N = (size_t)t.n, K = (size_t)t.k;
  bool half = t.dtype == TIRX_F16;
  uint16_t *ha = malloc(M * K * 2), *hb = malloc(N * K * 2), *hc = malloc(M * N * 2);
  double *fa = malloc(M * K * sizeof(double)), *fb = malloc(N * K * sizeof(double));
  cr_assert(ha && hb && hc && fa && fb);
  /* Inputs rounded to the dtype; the reference multiplies the rounded values in float64. */
  for (size_t i = 0; i < M * K; i++) {
    float v = (float)uniform(-1, 1);
    ha[i] = half ? to_f16(v) : to_bf16(v);
    fa[i] = half ? from_f16(ha[i]) : from_bf16(ha[i]);
  }
  for (size_t i = 0; i < N * K; i++) { /* b^T: row n holds b[:, n] */
    float v = (float)uniform(-1, 1);
    hb[i] = half ? to_f16(v) : to_bf16(v);
    fb[i] = half ? from_f16(hb[i]) : from_bf16(hb[i]);
  }
  void *da, *db, *dc;
  OK(tirx_runtime_alloc(rt, M * K * 2, &da));
  OK(tirx_runtime_alloc(rt, N * K * 2, &db));
  OK(tirx_runtime_alloc(rt, M * N * 2, &dc));
  OK(tirx_runtime_copy(rt, da, ha, M * K * 2, TIRX_COPY_HOST_TO_DEVICE));
  OK(tirx_runtime_copy(rt, db, hb, N * K * 2, TIRX_COPY_HOST_TO_DEVICE));
  OK(tirx_runtime_fill32(rt, dc, 0x7fc07fc0u, M * N / 2)); /* NaN in both 16-bit formats */
  tirx_arg args[] = {
      tirx_arg_tensor(da, t.dtype, 2, (int64_t[]){t.m, t.k}, NULL),
      tirx_arg_tensor(db, t.dtype, 2, (int64_t[]){t.k, t.n}, (int64_t[]){1, t.k}),
      tirx_arg_tensor(dc, t.dtype, 2, (int64_t[]){t.m, t.n}, NULL),
  };
  launch_within_10s(rt, k, args, 3, what);
  OK(tirx_runtime_copy(rt, hc, dc, M * N * 2, TIRX_COPY_DEVICE_TO_HOST));
  /* f32 accumulation (error ~K * 2^-24) then one rounding to the dtype (2^-9 or 2^-12). */
  double rtol = half ? 1.0 / 1024 : 1.0 / 256, atol = 1e-4, worst = 0;
  size_t bad = 0, first = 0;
  double got_first = 0, want_first = 0;
  for (size_t i = 0; i < M; i++)
    for (size_t j = 0; j < N; j++) {
      double want = 0;
      for (size_t q = 0; q < K; q++) want += fa[i * K + q] * fb[j * K + q];
      double got = half ? from_f16(hc[i * N + j]) : from_bf16(hc[i * N + j]);
      double e = fabs(got - want);
      if (!(e <= atol + rtol * fabs(want))) {
        if (bad++ == 0) {
          first = i * N + j;
          got_first = got;
          want_first = want;
        }
      } else if (e > worst) {
        worst = e;
      }
    }
  cr_log_info("%s: max abs error %.3g, %zu wrong of %zu", what, worst, bad, M * N);
  cr_assert_eq(bad, 0, "%s: %zu of %zu wrong; first (%zu,%zu): got %.6g want %.6g (TIRX_SEED=%llu)",
               what, bad, M * N, first / N, first % N, got_first, want_first,
               (unsigned long long)seed_initial);
  tirx_runtime_free(rt, da);
  tirx_runtime_free(rt, db);
  tirx_runtime_free(rt, dc);
  free(ha);
  free(hb);
  free(hc);
  free(fa);
  free(fb);
  tirx_kernel_release(k);
}

Test(mma, wgmma_tiles, .timeout = 240) {
  tirx_runtime *rt = gpu();
  /* family, dtype, M, N, K, consumer warpgroups, swizzle, split K, a in registers */
  check_tile(rt, (mma_tile){"wgmma", TIRX_BF16, 64, 128, 64, 1, 128, false, false});
  check_tile(rt, (mma_tile){"wgmma", TIRX_BF16, 128, 256, 64, 2, 128, false, false});
  check_tile(rt, (mma_tile){"wgmma", TIRX_F16, 128, 64, 128, 1, 128, true, false}); /* 2 slabs */
  check_tile(rt, (mma_tile){"wgmma", TIRX_BF16, 64, 64, 64, 1, 64, true, false});
  check_tile(rt, (mma_tile){"wgmma", TIRX_BF16, 64, 32, 64, 1, 32, false, false});
  check_tile(rt, (mma_tile){"wgmma", TIRX_BF16, 64, 48, 64, 1, 0, true, false}); /* interleaved */
  check_tile(rt, (mma_tile){"wgmma", TIRX_F16, 64, 24, 32, 1, 64, false, false});
  tirx_runtime_destroy(rt);
}

/* copy.ldmatrix at warpgroup scope into tirx_layout_wgmma_a, written back by an ordinary
 * register copy: y must be x bit for bit (rows, K, swizzle of the shared tile). */
static const int WGMMA_A_LOADS[][3] = {{64, 16, 32}, {64, 64, 128}, {128, 32, 64},
                                       {64, 48, 32}, {192, 16, 0},  {256, 64, 128}};

Test(mma, warpgroup_ldmatrix_fills_wgmma_a_fragments, .timeout = 120) {
  tirx_runtime *rt = gpu();
  for (int d = 0; d < 2; d++)
    for (size_t c = 0; c < sizeof WGMMA_A_LOADS / sizeof WGMMA_A_LOADS[0]; c++) {
      tirx_dtype dt = d ? TIRX_F16 : TIRX_BF16;
      int rows = WGMMA_A_LOADS[c][0], k = WGMMA_A_LOADS[c][1], sw = WGMMA_A_LOADS[c][2];
      char err[2048] = "", what[96];
      snprintf(what, sizeof what, "wgmma_a_load %s %dx%d swizzle %d", tirx_dtype_name(dt), rows,
               k, sw);
      tirx_kernel *kern = example_wgmma_a_load(dt, rows, k, sw, err, sizeof err);
      cr_assert_not_null(kern, "%s: %s", what, err);
      size_t n = (size_t)rows * (size_t)k;
      uint16_t *hx = malloc(n * 2), *hy = malloc(n * 2);
      cr_assert(hx && hy);
      for (size_t i = 0; i < n; i++) /* distinct finite values */
        hx[i] = d ? to_f16((float)uniform(-8, 8)) : to_bf16((float)uniform(-8, 8));
      void *dx, *dy;
      OK(tirx_runtime_alloc(rt, n * 2, &dx));
      OK(tirx_runtime_alloc(rt, n * 2, &dy));
      OK(tirx_runtime_copy(rt, dx, hx, n * 2, TIRX_COPY_HOST_TO_DEVICE));
      OK(tirx_runtime_fill32(rt, dy, 0x7fc07fc0u, n / 2));
      tirx_arg args[] = {tirx_arg_tensor(dx, dt, 2, (int64_t[]){rows, k}, NULL),
                         tirx_arg_tensor(dy, dt, 2, (int64_t[]){rows, k}, NULL)};
      launch_within_10s(rt, kern, args, 2, what);
      OK(tirx_runtime_copy(rt, hy, dy, n * 2, TIRX_COPY_DEVICE_TO_HOST));
      for (size_t i = 0; i < n; i++)
        cr_assert_eq(hy[i], hx[i], "%s: y[%zu, %zu] = 0x%04x, want 0x%04x (TIRX_SEED=%llu)", what,
                     i / (size_t)k, i % (size_t)k, hy[i], hx[i], (unsigned long long)seed_initial);
      tirx_runtime_free(rt, dx);
      tirx_runtime_free(rt, dy);
      free(hx);
      free(hy);
      tirx_kernel_release(kern);
    }
  tirx_runtime_destroy(rt);
}

/* The RS form: a ldmatrix'd from the same shared tiles into wgmma A fragments. */
Test(mma, wgmma_rs_tiles, .timeout = 240) {
  tirx_runtime *rt = gpu();
  check_tile(rt, (mma_tile){"wgmma", TIRX_BF16, 64, 64, 16, 1, 32, false, true});
  check_tile(rt, (mma_tile){"wgmma", TIRX_F16, 64, 128, 16, 1, 32, false, true});
  check_tile(rt, (mma_tile){"wgmma", TIRX_BF16, 64, 128, 64, 1, 128, false, true});
  check_tile(rt, (mma_tile){"wgmma", TIRX_F16, 128, 64, 128, 1, 128, true, true}); /* 2 slabs */
  check_tile(rt, (mma_tile){"wgmma", TIRX_BF16, 128, 256, 64, 2, 128, false, true});
  check_tile(rt, (mma_tile){"wgmma", TIRX_BF16, 64, 48, 64, 1, 0, true, true}); /* interleaved */
  check_tile(rt, (mma_tile){"wgmma", TIRX_F16, 64, 24, 32, 1, 64, false, true});
  check_tile(rt, (mma_tile){"wgmma", TIRX_BF16, 64, 8, 48, 1, 32, false, true});
  tirx_runtime_destroy(rt);
}

/* ---- the TMA-fed GEMM, RS against SS ---- */

/* C = A B with examples/mma_tiles.c's example_wgmma_gemm; *out (M x ld) as 16-bit values. */
static void run_wgmma_gemm(tirx_runtime *rt, tirx_dtype dt, int bn, bool rs, int64_t m, int64_t n,
                           int64_t k, const uint16_t *ha, const uint16_t *hb, uint16_t *hc,
                           const char *what) {
  char err[4096] = "";
  tirx_kernel *kern = example_wgmma_gemm(&(wgmma_gemm){dt, bn, rs, n % 8 != 0}, err, sizeof err);
  cr_assert_not_null(kern, "%s: %s", what, err);
  /* Leading dimensions padded to 8 elements (TMA strides are multiples of 16 bytes). */
  int64_t lk = (k + 7) / 8 * 8, ln = (n + 7) / 8 * 8;
  size_t na = (size_t)(m * lk), nb = (size_t)(n * lk), nc = (size_t)(m * ln);
  void *da, *db, *dc;
  OK(tirx_runtime_alloc(rt, na * 2, &da));
  OK(tirx_runtime_alloc(rt, nb * 2, &db));
  OK(tirx_runtime_alloc(rt, nc * 2 + 4, &dc));
  OK(tirx_runtime_copy(rt, da, ha, na * 2, TIRX_COPY_HOST_TO_DEVICE));
  OK(tirx_runtime_copy(rt, db, hb, nb * 2, TIRX_COPY_HOST_TO_DEVICE));
  OK(tirx_runtime_fill32(rt, dc, 0x7fc07fc0u, (nc * 2 + 3) / 4)); /* NaN in both formats */
  tirx_arg args[6] = {tirx_arg_i32((int32_t)m), tirx_arg_i32((int32_t)n), tirx_arg_i32((int32_t)k),
                      tirx_arg_tensor(da, dt, 2, (int64_t[]){m, k}, (int64_t[]){lk, 1}),
                      tirx_arg_tensor(db, dt, 2, (int64_t[]){k, n}, (int64_t[]){1, lk}),
                      tirx_arg_tensor(dc, dt, 2, (int64_t[]){m, n}, (int64_t[]){ln, 1})};
  launch_within_10s(rt, kern, args, 6, what);
  OK(tirx_runtime_copy(rt, hc, dc, nc * 2, TIRX_COPY_DEVICE_TO_HOST));
  tirx_runtime_free(rt, da), tirx_runtime_free(rt, db), tirx_runtime_free(rt, dc);
  tirx_kernel_release(kern);
}

/* One 16-bit ulp of |x| (bf16: 8 significant bits, f16: 11). */
static double ulp16(double x, bool bf) {
  int e = 0;
  frexp(fabs(x), &e);
  return ldexp(1.0, e - (bf ? 8 : 11));
}

/* RS and SS on the same fresh inputs: each against the float64 reference (every element), and
 * RS against SS within one 16-bit ulp (the same products summed in f32 by the same
 * instruction; the count of bitwise-equal elements is logged). */
static void check_rs_gemm(tirx_runtime *rt, tirx_dtype dt, int bn, int64_t m, int64_t n,
                          int64_t k) {
  bool bf = dt == TIRX_BF16;
  char what[128];
  snprintf(what, sizeof what, "wgmma_gemm %s block_n=%d %lldx%lldx%lld", tirx_dtype_name(dt), bn,
           (long long)m, (long long)n, (long long)k);
  int64_t lk = (k + 7) / 8 * 8, ln = (n + 7) / 8 * 8;
  size_t na = (size_t)(m * lk), nb = (size_t)(n * lk), nc = (size_t)(m * ln);
  uint16_t *ha = calloc(na, 2), *hb = calloc(nb, 2), *rs = malloc(nc * 2), *ss = malloc(nc * 2);
  double *fa = malloc(na * sizeof(double)), *fb = malloc(nb * sizeof(double));
  cr_assert(ha && hb && rs && ss && fa && fb);
  for (size_t i = 0; i < na; i++) {
    ha[i] = bf ? to_bf16((float)uniform(-1, 1)) : to_f16((float)uniform(-1, 1));
    fa[i] = bf ? from_bf16(ha[i]) : from_f16(ha[i]);
  }
  for (size_t i = 0; i < nb; i++) { /* B^T: row j holds B[:, j] */
    hb[i] = bf ? to_bf16((float)uniform(-1, 1)) : to_f16((float)uniform(-1, 1));
    fb[i] = bf ? from_bf16(hb[i]) : from_f16(hb[i]);
  }
  char w_rs[160], w_ss[160];
  snprintf(w_rs, sizeof w_rs, "%s RS", what);
  snprintf(w_ss, sizeof w_ss, "%s SS", what);
  run_wgmma_gemm(rt, dt, bn, true, m, n, k, ha, hb, rs, w_rs);
  run_wgmma_gemm(rt, dt, bn, false, m, n, k, ha, hb, ss, w_ss);
  size_t bad_rs = 0, bad_ss = 0, apart = 0, same = 0;
  double worst = 0;
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < n; j++) {
      double want = 0, mag = 0;
      for (int64_t q = 0; q < k; q++) {
        double p = fa[i * lk + q] * fb[j * lk + q];
        want += p, mag += fabs(p);
      }
      size_t at = (size_t)(i * ln + j);
      double r = bf ? from_bf16(rs[at]) : from_f16(rs[at]);
      double s2 = bf ? from_bf16(ss[at]) : from_f16(ss[at]);
      double tol = (bf ? 1.0 / 128 : 1.0 / 1024) * fabs(want) + 1.2e-5 * mag + 1e-5;
      if (!(fabs(r - want) <= tol)) {
        if (!bad_rs++)
          cr_log_error("%s RS: C[%lld, %lld] = %.6g, want %.6g (seed %llu)", what, (long long)i,
                       (long long)j, r, want, (unsigned long long)seed_initial);
      }
      if (!(fabs(s2 - want) <= tol)) {
        if (!bad_ss++)
          cr_log_error("%s SS: C[%lld, %lld] = %.6g, want %.6g (seed %llu)", what, (long long)i,
                       (long long)j, s2, want, (unsigned long long)seed_initial);
      }
      same += rs[at] == ss[at];
      double gap = fabs(r - s2);
      if (!(gap <= ulp16(fmax(fabs(r), fabs(s2)), bf))) {
        if (!apart++)
          cr_log_error("%s: RS C[%lld, %lld] = %.6g, SS %.6g (seed %llu)", what, (long long)i,
                       (long long)j, r, s2, (unsigned long long)seed_initial);
      }
      if (fabs(r - want) > worst || r != r) worst = fabs(r - want);
    }
  size_t total = (size_t)(m * n);
  cr_log_info("%s: RS max abs error %.3g; RS and SS bitwise equal on %zu of %zu", what, worst,
              same, total);
  cr_expect_eq(bad_rs, 0, "%s: RS %zu of %zu wrong (TIRX_SEED=%llu)", what, bad_rs, total,
               (unsigned long long)seed_initial);
  cr_expect_eq(bad_ss, 0, "%s: SS %zu of %zu wrong (TIRX_SEED=%llu)", what, bad_ss, total,
               (unsigned long long)seed_initial);
  cr_expect_eq(apart, 0, "%s: RS and SS differ by more than an ulp on %zu of %zu", what, apart,
               total);
  free(ha), free(hb), free(rs), free(ss), free(fa), free(fb);
}

/* Both dtypes, several block N (16 to 256), whole tiles and tails in M, N and K (K not a
 * multiple of 16 or of the 64-wide K block: the TMA loads zero-fill past K). */
Test(mma, wgmma_rs_tma_gemm, .timeout = 600) {
  tirx_runtime *rt = gpu();
  static const struct {
    int bn;
    int64_t m, n, k;
  } cases[] = {{64, 64, 64, 64},     {128, 128, 256, 512}, {256, 192, 512, 256},
               {16, 64, 16, 16},     {48, 129, 130, 65},   {128, 200, 300, 1000},
               {256, 1, 100, 17},    {80, 300, 77, 40},    {112, 77, 224, 200},
               {64, 65, 63, 8}};
  for (int d = 0; d < 2; d++)
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
      check_rs_gemm(rt, d ? TIRX_F16 : TIRX_BF16, cases[i].bn, cases[i].m, cases[i].n,
                    cases[i].k);
  tirx_runtime_destroy(rt);
}

Test(mma, mma_sync_tiles, .timeout = 240) {
  tirx_runtime *rt = gpu();
  check_tile(rt, (mma_tile){"mma", TIRX_BF16, 64, 128, 64, 0, 0, false, false});
  check_tile(rt, (mma_tile){"mma", TIRX_F16, 32, 24, 32, 0, 0, true, false});
  check_tile(rt, (mma_tile){"mma", TIRX_BF16, 16, 8, 16, 0, 0, false, false});
  tirx_runtime_destroy(rt);
}

Test(mma, scalar_tiles, .timeout = 240) {
  tirx_runtime *rt = gpu();
  check_tile(rt, (mma_tile){"scalar", TIRX_BF16, 64, 128, 64, 0, 0, false, false}); /* warp scope */
  check_tile(rt, (mma_tile){"scalar", TIRX_F16, 32, 24, 32, 0, 0, true, false});
  check_tile(rt, (mma_tile){"scalar", TIRX_BF16, 128, 64, 32, 2, 0, true, false}); /* warpgroups */
  tirx_runtime_destroy(rt);
}

/* ---- mbarrier ring ---- */

enum { RING_ITERS = 37, RING_LANES = 32 };

Test(mma, mbarrier_producer_consumer_ring, .timeout = 120) {
  tirx_runtime *rt = gpu();
  char err[1024] = "";
  tirx_kernel *k = example_mbarrier_ring(RING_ITERS, err, sizeof err);
  cr_assert_not_null(k, "%s", err);
  size_t n = RING_ITERS * RING_LANES;
  float *hx = malloc(n * sizeof *hx), *hy = malloc(n * sizeof *hy);
  for (size_t i = 0; i < n; i++) hx[i] = (float)uniform(-4, 4);
  void *dx, *dy, *dinfo;
  OK(tirx_runtime_alloc(rt, n * 4, &dx));
  OK(tirx_runtime_alloc(rt, n * 4, &dy));
  OK(tirx_runtime_alloc(rt, 8, &dinfo));
  OK(tirx_runtime_copy(rt, dx, hx, n * 4, TIRX_COPY_HOST_TO_DEVICE));
  OK(tirx_runtime_fill32(rt, dy, 0x7fc00bad, n));
  OK(tirx_runtime_fill32(rt, dinfo, 0x7777, 2));
  tirx_arg args[] = {
      tirx_arg_tensor(dx, TIRX_F32, 2, (int64_t[]){RING_ITERS, RING_LANES}, NULL),
      tirx_arg_tensor(dy, TIRX_F32, 2, (int64_t[]){RING_ITERS, RING_LANES}, NULL),
      tirx_arg_tensor(dinfo, TIRX_I32, 1, (int64_t[]){2}, NULL),
  };
  launch_within_10s(rt, k, args, 3, "mbarrier ring");
  int32_t info[2];
  OK(tirx_runtime_copy(rt, hy, dy, n * 4, TIRX_COPY_DEVICE_TO_HOST));
  OK(tirx_runtime_copy(rt, info, dinfo, 8, TIRX_COPY_DEVICE_TO_HOST));
  for (size_t i = 0; i < n; i++) {
    double want = 2.0 * hx[i] + (double)(i / RING_LANES);
    cr_assert(fabs(hy[i] - want) <= 1e-6 * fabs(want) + 1e-6,
              "y[%zu, %zu] = %.9g, expected %.9g (TIRX_SEED=%llu)", i / RING_LANES,
              i % RING_LANES, hy[i], want, (unsigned long long)seed_initial);
  }
  cr_assert_eq(info[0], 0, "cluster rank %d of a CTA launched without a cluster", info[0]);
  cr_assert_eq(info[1], 1, "elect.sync chose %d lanes, expected 1", info[1]);
  tirx_runtime_free(rt, dx);
  tirx_runtime_free(rt, dy);
  tirx_runtime_free(rt, dinfo);
  free(hx);
  free(hy);
  tirx_kernel_release(k);
  tirx_runtime_destroy(rt);
}

/* ---- the GEMMs of examples/gemm.c ---- */

/* One GEMM case: the shape, the dtype, the fused epilogue and the family (NULL: wgmma). */
typedef struct gemm_case {
  tirx_dtype dt;
  int64_t m, n, k;
  tirx_epilogue ep;
  const char *family;
} gemm_case;

/* C = epilogue(A B^T [+ bias]) for one case, the wgmma kernel's persistent grid sized for sms
 * SMs (0: 132; fewer make each CTA run more tiles): fresh inputs in [-1, 1) (bias in [-2, 2)), C
 * poisoned (NaN) first, 4096 sampled elements (and the four corners) against a float64
 * reference within the output's rounding plus f32-accumulation slack relative to sum |a b|
 * (times 1.2 through an activation: the slopes of SiLU and GeLU stay below 1.13). */
static void check_gemm_on(tirx_runtime *rt, const gemm_case *g, int sms) {
  tirx_dtype dt = g->dt;
  int64_t m = g->m, n = g->n, k = g->k;
  gemm_spec s = {.dtype = dt, .m = m, .n = n, .k = k, .epilogue = g->ep, .family = g->family,
                 .sms = sms};
  static const char *const ep_names[] = {"plain", "bias", "bias+silu", "bias+gelu"};
  char err[4096] = "", what[128];
  tirx_gemm_tiles tile = gemm_pick(&s);
  snprintf(what, sizeof what, "gemm %s %s %s %lldx%lldx%lld (tile %dx%d, %d SMs)",
           g->family ? g->family : "wgmma", tirx_dtype_name(dt), ep_names[g->ep], (long long)m,
           (long long)n, (long long)k, tile.block_m, tile.block_n, sms ? sms : 132);
  tirx_kernel *kern = gemm_build(&s, err, sizeof err);
  cr_assert_not_null(kern, "%s: %s", what, err);
  /* Leading dimensions padded to 8 elements (TMA strides are multiples of 16 bytes); the
   * logical shape keeps its tails. */
  int64_t lk = (k + 7) / 8 * 8, ln = (n + 7) / 8 * 8;
  size_t na = (size_t)(m * lk), nb = (size_t)(n * lk), nc = (size_t)(m * ln);
  uint16_t *ha = malloc(na * 2), *hb = malloc(nb * 2), *hc = malloc(nc * 2);
  uint16_t *hbias = malloc((size_t)n * 2);
  bool bf = dt == TIRX_BF16;
  for (size_t i = 0; i < na; i++) ha[i] = bf ? to_bf16((float)uniform(-1, 1)) : to_f16((float)uniform(-1, 1));
  for (size_t i = 0; i < nb; i++) hb[i] = bf ? to_bf16((float)uniform(-1, 1)) : to_f16((float)uniform(-1, 1));
  for (int64_t i = 0; i < n; i++) hbias[i] = bf ? to_bf16((float)uniform(-2, 2)) : to_f16((float)uniform(-2, 2));
  void *da, *db, *dc, *dbias;
  OK(tirx_runtime_alloc(rt, na * 2, &da));
  OK(tirx_runtime_alloc(rt, nb * 2, &db));
  OK(tirx_runtime_alloc(rt, nc * 2 + 4, &dc));
  OK(tirx_runtime_alloc(rt, (size_t)n * 2 + 4, &dbias));
  OK(tirx_runtime_copy(rt, da, ha, na * 2, TIRX_COPY_HOST_TO_DEVICE));
  OK(tirx_runtime_copy(rt, db, hb, nb * 2, TIRX_COPY_HOST_TO_DEVICE));
  OK(tirx_runtime_copy(rt, dbias, hbias, (size_t)n * 2, TIRX_COPY_HOST_TO_DEVICE));
  OK(tirx_runtime_fill32(rt, dc, 0xffffffffu, (nc * 2 + 3) / 4));
  tirx_arg args[7] = {tirx_arg_i32((int32_t)m), tirx_arg_i32((int32_t)n), tirx_arg_i32((int32_t)k),
                      tirx_arg_tensor(da, dt, 2, (int64_t[]){m, k}, (int64_t[]){lk, 1}),
                      tirx_arg_tensor(db, dt, 2, (int64_t[]){k, n}, (int64_t[]){1, lk}),
                      tirx_arg_tensor(dc, dt, 2, (int64_t[]){m, n}, (int64_t[]){ln, 1}),
                      tirx_arg_tensor(dbias, dt, 2, (int64_t[]){1, n}, NULL)};
  launch_within_10s(rt, kern, args, g->ep == TIRX_EPILOGUE_NONE ? 6 : 7, what);
  OK(tirx_runtime_copy(rt, hc, dc, nc * 2, TIRX_COPY_DEVICE_TO_HOST));
  int wrong = 0;
  double worst = 0;
  for (int t = 0; t < 4100; t++) {
    int64_t i = t < 4 ? (t & 1 ? m - 1 : 0) : (int64_t)uniform(0, (double)m);
    int64_t j = t < 4 ? (t & 2 ? n - 1 : 0) : (int64_t)uniform(0, (double)n);
    if (i >= m) i = m - 1;
    if (j >= n) j = n - 1;
    double x = 0, mag = 0;
    for (int64_t q = 0; q < k; q++) {
      double p = (bf ? from_bf16(ha[i * lk + q]) : from_f16(ha[i * lk + q])) *
                 (double)(bf ? from_bf16(hb[j * lk + q]) : from_f16(hb[j * lk + q]));
      x += p, mag += fabs(p);
    }
    if (g->ep != TIRX_EPILOGUE_NONE) x += bf ? from_bf16(hbias[j]) : from_f16(hbias[j]);
    double want = gemm_epilogue_ref(g->ep, x);
    double got = bf ? from_bf16(hc[i * ln + j]) : from_f16(hc[i * ln + j]);
    double tol = (bf ? 1.0 / 128 : 1.0 / 1024) * fabs(want) + 1.2e-5 * mag + 1e-5;
    double e = fabs(got - want);
    if (!(e <= tol)) {
      if (!wrong)
        cr_log_error("%s: C[%lld, %lld] = %.6g, want %.6g (seed %llu)", what, (long long)i,
                     (long long)j, got, want, (unsigned long long)seed_initial);
      wrong++;
    }
    if (e > worst || e != e) worst = e;
  }
  cr_log_info("%s: 4100 sampled elements, max abs error %.3g, %d wrong", what, worst, wrong);
  cr_expect_eq(wrong, 0, "%s: %d of 4100 sampled elements wrong", what, wrong);
  free(ha), free(hb), free(hc), free(hbias);
  tirx_runtime_free(rt, da), tirx_runtime_free(rt, db), tirx_runtime_free(rt, dc);
  tirx_runtime_free(rt, dbias);
  tirx_kernel_release(kern);
}

/* The same, the grid sized for 132 SMs. */
static void check_gemm_case(tirx_runtime *rt, const gemm_case *g) { check_gemm_on(rt, g, 0); }

/* The LLaMA shapes at a reduced M, and tails in every dimension, both dtypes. */
Test(gemm, warp_specialised_wgmma_tma, .timeout = 600) {
  tirx_runtime *rt = gpu();
  static const int64_t shapes[][3] = {
      {256, 6144, 4096}, {256, 4096, 4096},  {128, 28672, 4096}, {128, 4096, 14336},
      {256, 10240, 8192}, {128, 8192, 8192}, {64, 57344, 8192},  {64, 8192, 28672},
      {1000, 3000, 4000}, {8191, 257, 72},   {1, 4096, 4096},    {129, 130, 65}};
  for (int d = 0; d < 2; d++)
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
      check_gemm_case(rt, &(gemm_case){d ? TIRX_F16 : TIRX_BF16, shapes[i][0], shapes[i][1],
                                       shapes[i][2], TIRX_EPILOGUE_NONE, NULL});
  tirx_runtime_destroy(rt);
}

/* Decode-like M (the tile shapes gemm_pick chooses for them: 64 rows with one consumer,
 * BLOCK_N of 16 to 240, up to 16 stages) on LLaMA (N, K) and odd N. */
Test(gemm, decode_shapes, .timeout = 600) {
  tirx_runtime *rt = gpu();
  static const int64_t nk[][2] = {{6144, 4096}, {4096, 14336}, {28672, 4096}, {10240, 8192},
                                  {57344, 1024}, {1000, 3000}, {130, 4096}, {2000, 96}};
  static const int64_t ms[] = {1, 16, 64, 128, 256, 37, 200};
  for (size_t a = 0; a < sizeof ms / sizeof ms[0]; a++)
    for (size_t i = 0; i < sizeof nk / sizeof nk[0]; i++)
      check_gemm_case(rt, &(gemm_case){(a + i) % 2 ? TIRX_F16 : TIRX_BF16, ms[a], nk[i][0],
                                       nk[i][1], TIRX_EPILOGUE_NONE, NULL});
  tirx_runtime_destroy(rt);
}

/* bias, bias + SiLU and bias + GeLU on 128-row tiles (128 x 128 at 1024 x 2048), decode tiles
 * and tails; the widest tiles in fused_epilogues_wide_tiles. */
Test(gemm, fused_epilogues, .timeout = 600) {
  tirx_runtime *rt = gpu();
  static const int64_t shapes[][3] = {{1024, 2048, 1024}, {1, 4096, 4096}, {64, 6144, 512},
                                      {200, 1000, 640},   {129, 130, 65},  {8191, 257, 72}};
  for (int e = TIRX_EPILOGUE_BIAS; e <= TIRX_EPILOGUE_BIAS_GELU; e++)
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
      check_gemm_case(rt, &(gemm_case){(e + (int)i) % 2 ? TIRX_F16 : TIRX_BF16, shapes[i][0],
                                       shapes[i][1], shapes[i][2], (tirx_epilogue)e, NULL});
  tirx_runtime_destroy(rt);
}

/* The fused epilogues on the widest tiles, where they run in 64-column chunks (gemm.c; the
 * last one narrower: 240 = 3 x 64 + 48, 224 = ... + 32, 208 = ... + 16): 128 x 256 down to
 * 128 x 192 (two consumer warpgroups) and 64 x 256 to 64 x 224 (one), each sized for 4 SMs so
 * that every CTA runs several tiles (the bias row and the C tile are reused across tiles),
 * with tails in M, N and K (M = 120: the 120-row loads of A), and a ragged N (element stores)
 * on three of them; the tile each shape picks is checked first. SiLU and GeLU in both dtypes
 * everywhere, the bias alone on the 128 x 256 tiles. */
Test(gemm, fused_epilogues_wide_tiles, .timeout = 600) {
  tirx_runtime *rt = gpu();
  static const struct {
    int64_t m, n, k;
    int bm, bn;
  } cases[] = {{1000, 1000, 520, 128, 256}, {1000, 1001, 520, 128, 256},
               {120, 1808, 520, 128, 240},  {128, 1810, 520, 128, 240},
               {120, 1720, 520, 128, 224},  {120, 1544, 520, 128, 208},
               {128, 1456, 520, 128, 192},  {60, 1984, 520, 64, 256},
               {64, 1808, 520, 64, 240},    {64, 1810, 520, 64, 240},
               {60, 2600, 520, 64, 224}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    for (int d = 0; d < 2; d++)
      for (int e = TIRX_EPILOGUE_BIAS; e <= TIRX_EPILOGUE_BIAS_GELU; e++) {
        if (e == TIRX_EPILOGUE_BIAS && cases[i].bn != 256) continue;
        gemm_case g = {d ? TIRX_F16 : TIRX_BF16, cases[i].m, cases[i].n, cases[i].k,
                       (tirx_epilogue)e, NULL};
        gemm_spec s = {.dtype = g.dt, .m = g.m, .n = g.n, .k = g.k, .sms = 4};
        tirx_gemm_tiles t = gemm_pick(&s);
        cr_assert(t.block_m == cases[i].bm && t.block_n == cases[i].bn,
                  "%lldx%lldx%lld on 4 SMs picks %dx%d, expected %dx%d", (long long)g.m,
                  (long long)g.n, (long long)g.k, t.block_m, t.block_n, cases[i].bm,
                  cases[i].bn);
        check_gemm_on(rt, &g, 4);
      }
  tirx_runtime_destroy(rt);
}

/* The fused epilogues on tiles no wider than one 64-column chunk, and on 80 (64 + 16), where
 * every CTA of 4 SMs' grid runs two tiles: the bias row's barrier is released once per tile
 * whatever the tile's width (session 15: a tile narrower than the chunk never released it,
 * and a CTA's second tile waited for the bias forever; gemm_paths' 2 x 1 cluster at
 * 8 x 4096 x 14336 hung on it): N = 16 to 72 on 128-row tiles, M = 1000 (8 tile rows, the
 * last ragged), SiLU, GeLU and the bias alone in both dtypes; the tile each shape picks is
 * checked first. */
Test(gemm, fused_epilogues_narrow_tiles, .timeout = 600) {
  tirx_runtime *rt = gpu();
  static const struct {
    int64_t m, n, k;
    int bn;
  } cases[] = {{1000, 16, 256, 16}, {1000, 30, 256, 32}, {1000, 40, 256, 48},
               {1000, 60, 256, 64}, {1000, 72, 256, 80}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    for (int d = 0; d < 2; d++)
      for (int e = TIRX_EPILOGUE_BIAS; e <= TIRX_EPILOGUE_BIAS_GELU; e++) {
        gemm_case g = {d ? TIRX_F16 : TIRX_BF16, cases[i].m, cases[i].n, cases[i].k,
                       (tirx_epilogue)e, NULL};
        gemm_spec s = {.dtype = g.dt, .m = g.m, .n = g.n, .k = g.k, .sms = 4};
        tirx_gemm_tiles t = gemm_pick(&s);
        cr_assert(t.block_m == 128 && t.block_n == cases[i].bn,
                  "%lldx%lldx%lld on 4 SMs picks %dx%d, expected 128x%d", (long long)g.m,
                  (long long)g.n, (long long)g.k, t.block_m, t.block_n, cases[i].bn);
        check_gemm_on(rt, &g, 4);
      }
  tirx_runtime_destroy(rt);
}

/* The families mma and scalar give the reference's answer too (with and without epilogues),
 * on whole tiles and tails in every dimension. */
Test(gemm, every_family, .timeout = 600) {
  tirx_runtime *rt = gpu();
  static const int64_t shapes[][3] = {{256, 512, 256}, {129, 130, 65}, {1, 200, 1000},
                                      {300, 77, 40}};
  static const char *const families[] = {"wgmma", "mma", "scalar"};
  for (int f = 0; f < 3; f++)
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
      for (int e = TIRX_EPILOGUE_NONE; e <= TIRX_EPILOGUE_BIAS_GELU; e += 2)
        check_gemm_case(rt, &(gemm_case){(f + (int)i) % 2 ? TIRX_F16 : TIRX_BF16, shapes[i][0],
                                         shapes[i][1], shapes[i][2], (tirx_epilogue)e,
                                         families[f]});
  tirx_runtime_destroy(rt);
}
