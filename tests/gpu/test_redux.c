/*
 * GPU test of reduce.redux (src/dispatch/families/reduce_redux.c): every warp of a grid of
 * 128-thread blocks sums, mins or maxes its 256 i32 or u32 values (a 32 x 8 register tile)
 * with redux.sync and lane 0 writes the result; checked exactly against a CPU reference on
 * fresh random inputs (full-range bits: sums wrap as the GPU's do; TIRX_SEED replays them),
 * outputs poisoned first. Without a device the kernels are built (and must choose
 * reduce.redux) and the test skips.
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tirx.h"

#define OK(call) cr_assert_eq((call), TIRX_OK, "%s: %s", #call, tirx_last_error())
#define POISON32 0x7fc0badu

#define GPU_HANG "a redux.sync hang"
#include "gpu_util.h"

enum { WARPS = 4, TILE = 256, BLOCKS = 37 };

/* Warp w of block g reduces x[(g * WARPS + w) * TILE ..] into y[g * WARPS + w]. */
static tirx_kernel *warp_kernel(tirx_dtype dt, tirx_op op) {
  tirx_builder *b = tirx_builder_create("redux_warps");
  tirx_expr *n = tirx_param_int(b, "n", TIRX_I32);
  tirx_tensor *x = tirx_param_tensor(b, "x", dt, TIRX_EXPRS(tirx_mul(b, n, tirx_int(b, TILE))),
                                     NULL);
  tirx_tensor *y = tirx_param_tensor(b, "y", dt, TIRX_EXPRS(n), NULL);
  tirx_set_block(b, 32 * WARPS, 1, 1);
  tirx_set_grid(b, tirx_ceildiv(b, n, tirx_int(b, WARPS)), NULL, NULL);
  tirx_team_begin(b, TIRX_TEAM_WARP);
  tirx_layout *lv = tirx_layout_parse(tirx_builder_arena(b), "(32,8):(1@laneid,1@reg)");
  tirx_tensor *v = tirx_alloc_local(b, "v", dt, TIRX_DIMS(TILE), lv);
  tirx_expr *row = tirx_let(b, "row", tirx_add(b, tirx_mul(b, tirx_block_idx(b, 0),
                                                           tirx_int(b, WARPS)),
                                               tirx_warp_id(b)));
  tirx_if_begin(b, tirx_lt(b, row, n));
  tirx_copy(b, tirx_whole(b, v),
            tirx_region_new(b, x, 1, (tirx_expr *[]){tirx_mul(b, row, tirx_int(b, TILE))},
                            (int64_t[]){TILE}),
            NULL);
  tirx_tensor *s = tirx_alloc_local(b, "s", dt, TIRX_DIMS(1), NULL);
  tirx_reduce(b, tirx_whole(b, s), tirx_whole(b, v), op, 1, false, NULL);
  tirx_if_begin(b, tirx_eq(b, tirx_lane_id(b), tirx_int(b, 0)));
  tirx_store(b, y, TIRX_EXPRS(row), tirx_load(b, s, TIRX_EXPRS(tirx_int(b, 0))));
  tirx_if_end(b);
  tirx_if_end(b);
  tirx_team_end(b);
  tirx_kernel *k = NULL;
  cr_assert_eq(tirx_kernel_build(b, &k), TIRX_OK, "%s", tirx_builder_error(b));
  tirx_builder_destroy(b);
  cr_assert_not_null(strstr(tirx_kernel_dispatch_report(k), "-> reduce.redux lanes=32"), "%s",
                     tirx_kernel_dispatch_report(k));
  return k;
}

static uint32_t reference(tirx_dtype dt, tirx_op op, const uint32_t *v) {
  uint32_t r = v[0];
  for (int i = 1; i < TILE; i++) {
    uint32_t a = r, x = v[i];
    if (op == TIRX_OP_SUM)
      r = a + x; /* wraps, as redux.sync.add does */
    else if (dt == TIRX_U32)
      r = op == TIRX_OP_MIN ? (x < a ? x : a) : (x > a ? x : a);
    else {
      int32_t sa = (int32_t)a, sx = (int32_t)x;
      r = (uint32_t)(op == TIRX_OP_MIN ? (sx < sa ? sx : sa) : (sx > sa ? sx : sa));
    }
  }
  return r;
}

static void run(tirx_runtime *rt, tirx_dtype dt, tirx_op op, int64_t rows) {
  tirx_kernel *k = warp_kernel(dt, op);
  size_t nx = (size_t)(rows * TILE);
  uint32_t *host = malloc(nx * 4), *back = malloc((size_t)rows * 4);
  cr_assert(host && back);
  for (size_t i = 0; i < nx; i++) host[i] = rnd32();
  void *dx, *dy;
  OK(tirx_runtime_alloc(rt, nx * 4, &dx));
  OK(tirx_runtime_alloc(rt, (size_t)rows * 4, &dy));
  OK(tirx_runtime_copy(rt, dx, host, nx * 4, TIRX_COPY_HOST_TO_DEVICE));
  OK(tirx_runtime_fill32(rt, dy, POISON32, (size_t)rows));
  tirx_arg args[3] = {tirx_arg_i32((int32_t)rows),
                      tirx_arg_tensor(dx, dt, 1, (int64_t[]){(int64_t)nx}, NULL),
                      tirx_arg_tensor(dy, dt, 1, (int64_t[]){rows}, NULL)};
  OK(tirx_launch(rt, k, args, 3, NULL));
  sync_or_fail(rt);
  OK(tirx_runtime_copy(rt, back, dy, (size_t)rows * 4, TIRX_COPY_DEVICE_TO_HOST));
  for (int64_t r = 0; r < rows; r++) {
    uint32_t want = reference(dt, op, host + r * TILE);
    cr_assert_eq(back[r], want, "%s %s, row %lld of %lld: 0x%08x, expected 0x%08x",
                 tirx_dtype_name(dt), op == TIRX_OP_SUM ? "sum" : op == TIRX_OP_MIN ? "min" : "max",
                 (long long)r, (long long)rows, back[r], want);
  }
  OK(tirx_runtime_free(rt, dx));
  OK(tirx_runtime_free(rt, dy));
  free(host);
  free(back);
  tirx_kernel_release(k);
}

Test(gpu_redux, warp_sum_min_max_of_i32_and_u32) {
  static const tirx_op ops[] = {TIRX_OP_SUM, TIRX_OP_MIN, TIRX_OP_MAX};
  /* The kernels build and choose reduce.redux without a device too. */
  for (int d = 0; d < 2; d++)
    for (int i = 0; i < 3; i++) tirx_kernel_release(warp_kernel(d ? TIRX_U32 : TIRX_I32, ops[i]));
  tirx_runtime *rt = gpu();
  static const int64_t rows[] = {1, 5, BLOCKS * WARPS - 3};
  for (int d = 0; d < 2; d++)
    for (int i = 0; i < 3; i++)
      for (int r = 0; r < 3; r++) run(rt, d ? TIRX_U32 : TIRX_I32, ops[i], rows[r]);
  tirx_runtime_destroy(rt);
}
