/*
 * GPU tests of copy_async.cp_async (examples/cp_async_tiles.c): tiles of an odd-shaped f32,
 * f16 or bf16 matrix with a padded row stride are loaded into shared memory with cp.async
 * (16-, 8- and 4-byte copies; the tails past M and N zero-filled through the src-size operand),
 * waited for (wait_all, or wait_group 1 in the double-buffered loop over two stages) and
 * stored to an output rounded up to whole tiles. The comparison is exact, bit for bit: O[r, c]
 * must be A[r, c] inside A and zero outside it, so the random padding between N and the row
 * stride must never be read. Fresh random inputs (TIRX_SEED replays them), outputs poisoned
 * first. Every wait on the device has a 10-second host timeout. Skips without a device.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cp_async_tiles.h"
#include "tirx.h"

#define OK(call) cr_assert_eq((call), TIRX_OK, "%s: %s", #call, tirx_last_error())
#define POISON32 0x7fc0badu

#define GPU_HANG "a cp.async group hang"
#include "gpu_util.h"

/* ---- one tile kernel over one shape ---- */

/* Runs t's kernel k over an M x N matrix and checks O bit for bit. */
static void run(tirx_runtime *rt, const cp_async_tile *t, tirx_kernel *k, int64_t M, int64_t N) {
  cr_assert_leq(N, t->ld);
  size_t e = t->dtype == TIRX_F32 ? 4 : 2;
  int64_t MT = (M + t->tm - 1) / t->tm * t->tm, NT = (N + t->tn - 1) / t->tn * t->tn;
  size_t na = (size_t)(M * t->ld), no = (size_t)(MT * NT);
  /* Random bits everywhere, the padding past N included: finite values for the 16-bit types
   * (sign, exponent below 0x1f/0xff), any bits for f32 (compared bit for bit). */
  unsigned char *host = malloc(na * e), *back = malloc(no * e);
  cr_assert(host && back);
  for (size_t i = 0; i < na * e; i += 2) {
    uint16_t x = (uint16_t)(rnd32() & (e == 2 ? 0xbbffu : 0xffffu));
    memcpy(host + i, &x, 2);
  }
  void *da, *dout;
  OK(tirx_runtime_alloc(rt, na * e, &da));
  OK(tirx_runtime_alloc(rt, no * e, &dout));
  OK(tirx_runtime_copy(rt, da, host, na * e, TIRX_COPY_HOST_TO_DEVICE));
  OK(tirx_runtime_fill32(rt, dout, POISON32, no * e / 4));
  tirx_arg args[4] = {
      tirx_arg_i32((int32_t)M), tirx_arg_i32((int32_t)N),
      tirx_arg_tensor(da, t->dtype, 2, (int64_t[]){M, N}, (int64_t[]){t->ld, 1}),
      tirx_arg_tensor(dout, t->dtype, 2, (int64_t[]){MT, NT}, NULL)};
  OK(tirx_launch(rt, k, args, 4, NULL));
  sync_or_fail(rt);
  OK(tirx_runtime_copy(rt, back, dout, no * e, TIRX_COPY_DEVICE_TO_HOST));
  static const unsigned char zero[8];
  for (int64_t r = 0; r < MT; r++)
    for (int64_t c = 0; c < NT; c++) {
      const unsigned char *got = back + (size_t)(r * NT + c) * e;
      const unsigned char *want = r < M && c < N ? host + (size_t)(r * t->ld + c) * e : zero;
      if (memcmp(got, want, e) != 0) {
        uint32_t g = 0, w = 0;
        memcpy(&g, got, e);
        memcpy(&w, want, e);
        cr_assert_fail("%s, %lld x %lld: O[%lld, %lld] is 0x%x, expected 0x%x (%s)",
                       tirx_kernel_name(k), (long long)M, (long long)N, (long long)r,
                       (long long)c, g, w,
                       r < M && c < N ? "A's element" : "zero: outside A, the zero-filled tail");
      }
    }
  OK(tirx_runtime_free(rt, da));
  OK(tirx_runtime_free(rt, dout));
  free(host);
  free(back);
}

/* Odd shapes: single elements, tails in both dimensions, exact tiles, wide and thin. */
static const int64_t SHAPES[][2] = {{1, 1}, {37, 50}, {64, 64}, {130, 200}, {3, 1000}, {17, 999}};

static void run_suite(int stages) {
  tirx_runtime *rt = gpu();
  int ran = 0;
  for (int i = 0; i < cp_async_tile_suite_count; i++) {
    const cp_async_tile *t = &cp_async_tile_suite[i];
    if (t->stages != stages) continue;
    char err[2048] = "";
    tirx_kernel *k = example_cp_async_tile(t, err, sizeof err);
    cr_assert_not_null(k, "%s", err);
    cr_log_info("%s", tirx_kernel_dispatch_report(k));
    for (size_t s = 0; s < sizeof SHAPES / sizeof SHAPES[0]; s++)
      run(rt, t, k, SHAPES[s][0], SHAPES[s][1]);
    tirx_kernel_release(k);
    ran++;
  }
  cr_assert_gt(ran, 0);
  tirx_runtime_destroy(rt);
}

Test(gpu_cp_async, one_stage_tiles_odd_shapes, .timeout = 300) { run_suite(1); }

Test(gpu_cp_async, double_buffered_two_stages_wait_group_1, .timeout = 300) { run_suite(2); }
