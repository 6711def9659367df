/*
 * Edge inputs of the row kernels found by the session-16 review
 * (docs/figures/session16-2026-12-04/review-rows.md), against float64 references in the style
 * of test_gpu.c's row tests, f32 data so that the inputs are exact:
 *
 *  - softmax of rows whose maximum is above FLT_MAX / log2e (2.36e38, finite in f32 and bf16):
 *    the kernel's exp2(x log2e - m log2e) overflows m log2e to -inf and the row comes out NaN
 *    (sum 0, or inf - inf). EXPECTED TO FAIL until
 *    docs/figures/session16-2026-12-04/softmax-max-overflow.patch lands.
 *  - rmsnorm_fp8 of a row of tiny values (max |x w| below 448 / FLT_MAX, 1.3e-36): the kernel's
 *    448 / max|x w| is inf, so the row's zeros come out NaN (0 * inf) and every other value
 *    448. EXPECTED TO FAIL until docs/figures/session16-2026-12-04/fp8-tiny-amax.patch lands.
 *
 * Each runs a warp-per-row width (100), a CTA-per-row one (4096) and a staged one (softmax
 * 32768 f32, rmsnorm_fp8 16384 f32), and softmax also a cluster of 2 (32768); a row of
 * ordinary values rides along in every call (it must stay right). Without a device: skipped.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tirx.h"

#define GPU_HANG "a row kernel hangs"
#include "gpu_util.h"
#include "e4m3_ref.h"

static void *upload(tirx_runtime *rt, const void *host, size_t bytes) {
  void *d = NULL;
  OK(tirx_runtime_alloc(rt, bytes, &d));
  OK(tirx_runtime_copy(rt, d, host, bytes, TIRX_COPY_HOST_TO_DEVICE));
  return d;
}

/* bytes of device memory filled with 0xff (NaN as f32, NaN as e4m3): an unwritten value fails */
static void *poisoned(tirx_runtime *rt, size_t bytes) {
  void *d = NULL;
  OK(tirx_runtime_alloc(rt, bytes, &d));
  OK(tirx_runtime_fill32(rt, d, 0xffffffffu, (bytes + 3) / 4));
  return d;
}

static float uniform(float lo, float hi) {
  return lo + (hi - lo) * (float)(rnd32() >> 8) / (float)(1u << 24);
}

/* ---- softmax with a row maximum near FLT_MAX ---- */

/* Rows: 0 ordinary values in [-2, 2]; 1 the same with x[0] = 3e38 and x[W - 1] = -3e38 (out:
 * one-hot at 0); 2 ordinary values with 2.5e38 at columns 1 and W / 2 (out: 0.5 at each, or
 * 1 at column 1 where W / 2 == 1). */
static void check_softmax_big(tirx_runtime *rt, int64_t W, const tirx_row_options *o) {
  enum { ROWS = 3 };
  size_t n = (size_t)ROWS * (size_t)W;
  float *hx = malloc(n * sizeof *hx);
  for (size_t i = 0; i < n; i++) hx[i] = uniform(-2, 2);
  hx[(size_t)W] = 3e38f;
  hx[(size_t)W + (size_t)W - 1] = W > 1 ? -3e38f : 3e38f;
  hx[2 * (size_t)W + (W > 1 ? 1 : 0)] = 2.5e38f;
  hx[2 * (size_t)W + (size_t)(W / 2)] = 2.5e38f;
  void *dx = upload(rt, hx, n * 4), *dout = poisoned(rt, n * 4);
  int64_t xs[2] = {ROWS, W};
  tirx_tensor_arg x = {dx, TIRX_F32, 2, xs, NULL}, out = {dout, TIRX_F32, 2, xs, NULL};
  OK(tirx_op_softmax(rt, o, &x, &out, NULL));
  sync_or_fail(rt);
  float *got = malloc(n * sizeof *got);
  OK(tirx_runtime_copy(rt, got, dout, n * 4, TIRX_COPY_DEVICE_TO_HOST));
  size_t bad = 0;
  for (int64_t r = 0; r < ROWS; r++) {
    const float *xr = hx + (size_t)r * (size_t)W;
    double m = -INFINITY, s = 0;
    for (int64_t j = 0; j < W; j++) m = fmax(m, (double)xr[j]);
    for (int64_t j = 0; j < W; j++) s += exp((double)xr[j] - m);
    for (int64_t j = 0; j < W; j++) {
      double want = exp((double)xr[j] - m) / s, g = got[(size_t)r * (size_t)W + (size_t)j];
      if (!(fabs(g - want) <= 2e-5 + 2e-5 * want) && bad++ < 4)
        cr_log_error("softmax f32 W=%lld cluster %d: out[%lld, %lld] = %.9g, want %.9g (x %.9g, "
                     "row max %.9g)", (long long)W, o->cluster, (long long)r, (long long)j, g, want,
                     (double)xr[j], m);
    }
  }
  cr_assert_eq(bad, 0, "softmax f32 W=%lld cluster %d: %zu of %zu values wrong (TIRX_SEED "
               "replays the inputs)", (long long)W, o->cluster, bad, n);
  tirx_runtime_free(rt, dx), tirx_runtime_free(rt, dout);
  free(hx), free(got);
}

/* Expected to fail until softmax-max-overflow.patch (see the top of this file). */
Test(gpu_rows_review, softmax_of_rows_with_a_maximum_near_flt_max, .timeout = 300) {
  tirx_runtime *rt = gpu();
  const tirx_row_options plain = {0}, c2 = {.cluster = 2};
  static const int64_t widths[] = {100, 4096, 32768};
  for (size_t i = 0; i < 3; i++) check_softmax_big(rt, widths[i], &plain);
  tirx_row_plan p = {.size = sizeof p};
  OK(tirx_kernels_row_plan(TIRX_ROW_OP_SOFTMAX, &c2, TIRX_F32, 32768, &p));
  cr_assert_eq(p.cluster, 2, "softmax f32 32768 with opts.cluster 2 is not clustered");
  check_softmax_big(rt, 32768, &c2);
  tirx_runtime_destroy(rt);
}

/* ---- rmsnorm_fp8 of a row of tiny values ---- */

/* e4m3_value and e4m3_ulp: e4m3_ref.h */

/* Rows: 0 ordinary values in [-2, 2]; 1 zeros but x[0] = 1e-37; 2 values 1e-37 u, u in
 * [-1, 1], every third one 0. w in [0.5, 1.5], eps 1e-5: y = x rsqrt(mean(x^2) + eps) w is
 * about 3e-35 at most in rows 1 and 2, its scale max|y| / 448 a normal f32, and out =
 * e4m3(y / scale) as tirx/kernels.h defines it (zeros stay 0). */
static void check_fp8_tiny(tirx_runtime *rt, int64_t W, const tirx_row_options *o) {
  enum { ROWS = 3 };
  size_t n = (size_t)ROWS * (size_t)W;
  float *hx = malloc(n * sizeof *hx), *hw = malloc((size_t)W * sizeof *hw);
  for (int64_t j = 0; j < W; j++) {
    hw[j] = uniform(0.5f, 1.5f);
    hx[j] = uniform(-2, 2);
    hx[(size_t)W + (size_t)j] = j ? 0.0f : 1e-37f;
    hx[2 * (size_t)W + (size_t)j] = j % 3 == 2 ? 0.0f : 1e-37f * uniform(-1, 1);
  }
  void *dx = upload(rt, hx, n * 4), *dw = upload(rt, hw, (size_t)W * 4);
  void *dout = poisoned(rt, n), *dsc = poisoned(rt, ROWS * 4);
  int64_t xs[2] = {ROWS, W}, ws[1] = {W}, ss[1] = {ROWS};
  tirx_tensor_arg x = {dx, TIRX_F32, 2, xs, NULL}, w = {dw, TIRX_F32, 1, ws, NULL};
  tirx_tensor_arg out = {dout, TIRX_FP8_E4M3, 2, xs, NULL}, sc = {dsc, TIRX_F32, 1, ss, NULL};
  OK(tirx_op_rmsnorm_fp8(rt, o, &x, &w, &out, &sc, 1e-5f, NULL));
  sync_or_fail(rt);
  uint8_t *got = malloc(n);
  float gsc[ROWS];
  OK(tirx_runtime_copy(rt, got, dout, n, TIRX_COPY_DEVICE_TO_HOST));
  OK(tirx_runtime_copy(rt, gsc, dsc, sizeof gsc, TIRX_COPY_DEVICE_TO_HOST));
  size_t bad = 0, bad_sc = 0;
  double *y = malloc((size_t)W * sizeof *y);
  for (int64_t r = 0; r < ROWS; r++) {
    const float *xr = hx + (size_t)r * (size_t)W;
    double ss2 = 0, amax = 0;
    for (int64_t j = 0; j < W; j++) ss2 += (double)xr[j] * xr[j];
    double rs = 1.0 / sqrt(ss2 / (double)W + 1e-5);
    for (int64_t j = 0; j < W; j++) amax = fmax(amax, fabs(y[j] = (double)xr[j] * rs * hw[j]));
    double s = amax / 448;
    if (!(fabs((double)gsc[r] - s) <= 2e-5 * s) && bad_sc++ < 4)
      cr_log_error("rmsnorm_fp8 f32 W=%lld: scale[%lld] = %.9g, want %.9g", (long long)W,
                   (long long)r, (double)gsc[r], s);
    for (int64_t j = 0; j < W; j++) {
      double q = s > 0 ? y[j] / s : 0.0, g = e4m3_value(got[(size_t)r * (size_t)W + (size_t)j]);
      if (!(fabs(g - q) <= e4m3_ulp(q)) && bad++ < 4) /* NaN fails too */
        cr_log_error("rmsnorm_fp8 f32 W=%lld: out[%lld, %lld] = 0x%02x (%.6g), want %.6g (x %.3g)",
                     (long long)W, (long long)r, (long long)j,
                     got[(size_t)r * (size_t)W + (size_t)j], g, q, (double)xr[j]);
    }
  }
  cr_assert_eq(bad, 0, "rmsnorm_fp8 f32 W=%lld: %zu of %zu e4m3 values wrong (TIRX_SEED replays "
               "the inputs)", (long long)W, bad, n);
  cr_assert_eq(bad_sc, 0, "rmsnorm_fp8 f32 W=%lld: %zu scales wrong", (long long)W, bad_sc);
  void *bufs[] = {dx, dw, dout, dsc};
  for (int i = 0; i < 4; i++) tirx_runtime_free(rt, bufs[i]);
  free(hx), free(hw), free(got), free(y);
}

/* Expected to fail until fp8-tiny-amax.patch (see the top of this file). */
Test(gpu_rows_review, rmsnorm_fp8_of_rows_of_tiny_values, .timeout = 300) {
  tirx_runtime *rt = gpu();
  const tirx_row_options plain = {0};
  static const int64_t widths[] = {100, 4096, 16384};
  tirx_row_plan p = {.size = sizeof p};
  OK(tirx_kernels_row_plan(TIRX_ROW_OP_RMSNORM, &plain, TIRX_F32, 16384, &p));
  cr_assert_gt(p.stages, 0, "rmsnorm f32 16384 is not staged (rmsnorm_fp8 is staged as it is)");
  for (size_t i = 0; i < 3; i++) check_fp8_tiny(rt, widths[i], &plain);
  tirx_runtime_destroy(rt);
}
