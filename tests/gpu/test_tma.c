/*
 * GPU tests of copy_async.tma: TMA loads of odd-shaped tiles (tails zero-filled) into swizzled
 * shared memory, completing on an mbarrier, read back through the shared layout with plain
 * loads (so TMA's swizzle and the layout's must agree) and stored back with TMA stores
 * (tails clipped); the split (3-D) form; a cluster of 2 with a multicast load. Exact
 * comparisons against the input on fresh random data, outputs poisoned first. Every wait on
 * the device has a 10-second host timeout, so a hang fails the test instead of blocking.
 * Skips without a device.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "builder/builder_internal.h"
#include "tirx.h"

#define OK(call) cr_assert_eq((call), TIRX_OK, "%s: %s", #call, tirx_last_error())
#define POISON32 0x7fc0badu

#define GPU_HANG "a TMA/mbarrier hang"
#include "gpu_util.h"

/* ---- the kernel ---- */

typedef struct variant {
  tirx_dtype dtype;
  int elem, swizzle;
  int64_t rows, cols; /* the tile */
  bool split;         /* ask for the split (one-instruction) form */
} variant;

/*
 * One CTA per (rows x cols) tile of A (M, K): thread 0 inits the mbarrier, arrives with the
 * tile's bytes and issues the TMA load; everyone waits on phase 0, then copies the shared tile
 * to tiles[by*rows.., bx*cols..] with plain loads through the shared layout, and thread 0 TMA-
 * stores the shared tile to out at the tile's place.
 */
static tirx_kernel *tile_kernel(const variant *v) {
  tirx_builder *b = tirx_builder_create("tma_tile");
  tirx_expr *M = tirx_param_int(b, "M", TIRX_I32);
  tirx_expr *K = tirx_param_int(b, "K", TIRX_I32);
  tirx_expr *TM = tirx_param_int(b, "TM", TIRX_I32);
  tirx_expr *TK = tirx_param_int(b, "TK", TIRX_I32);
  tirx_tensor *a = tirx_param_tensor(b, "A", v->dtype, TIRX_EXPRS(M, K), NULL);
  tirx_tensor *o = tirx_param_tensor(b, "out", v->dtype, TIRX_EXPRS(M, K), NULL);
  tirx_tensor *tiles = tirx_param_tensor(b, "tiles", v->dtype, TIRX_EXPRS(TM, TK), NULL);
  tirx_set_block(b, 128, 1, 1);
  tirx_set_grid(b, tirx_ceildiv(b, K, tirx_int(b, v->cols)),
                tirx_ceildiv(b, M, tirx_int(b, v->rows)), NULL);
  tirx_arena *ar = tirx_builder_arena(b);
  const tirx_layout *sl = v->swizzle ? tirx_layout_smem_tile(ar, v->rows, v->cols, v->elem,
                                                             v->swizzle)
                                     : NULL;
  tirx_tensor *s = tirx_alloc_shared(b, "tile", v->dtype, TIRX_DIMS(v->rows, v->cols), sl);
  tirx_tensor *bar = tirx_alloc_mbarrier(b, "bar", 1);
  tirx_region *bar0 = tirx_region_new(b, bar, TIRX_EXPRS(tirx_int(b, 0)), (int64_t[]){1});
  /* Expressions, not lets: the split form needs to see that c0 is a multiple of 64. */
  tirx_expr *r0 = tirx_mul(b, tirx_block_idx(b, 1), tirx_int(b, v->rows));
  tirx_expr *c0 = tirx_mul(b, tirx_block_idx(b, 0), tirx_int(b, v->cols));
  tirx_filter_begin(b, TIRX_AXIS_TID, 0, 1);
  tirx_tmap_prefetch(b, a);
  tirx_mbarrier_init(b, bar0, 1);
  tirx_fence_mbarrier_init(b);
  tirx_filter_end(b);
  tirx_sync_threads(b);
  tirx_filter_begin(b, TIRX_AXIS_TID, 0, 1);
  tirx_mbarrier_expect_tx(b, bar0, tirx_int(b, v->rows * v->cols * v->elem));
  tirx_copy_async(b, tirx_whole(b, s),
                  tirx_region_new(b, a, TIRX_EXPRS(r0, c0), (int64_t[]){v->rows, v->cols}),
                  &(tirx_config){.barrier = bar0,
                                 .shape = {v->split ? v->rows * v->cols : 0}});
  tirx_filter_end(b);
  tirx_mbarrier_wait(b, bar0, tirx_int(b, 0));
  /* The tile through the shared layout (swizzle included) into tiles. */
  tirx_expr *e = tirx_for_begin(b, "e", tirx_thread_idx(b, 0), tirx_int(b, v->rows * v->cols),
                                tirx_int(b, 128), TIRX_LOOP_SERIAL);
  tirx_expr *r = tirx_div(b, e, tirx_int(b, v->cols)), *c = tirx_mod(b, e, tirx_int(b, v->cols));
  tirx_store(b, tiles, TIRX_EXPRS(tirx_add(b, r0, r), tirx_add(b, c0, c)),
             tirx_load(b, s, TIRX_EXPRS(r, c)));
  tirx_for_end(b);
  tirx_filter_begin(b, TIRX_AXIS_TID, 0, 1);
  tirx_copy_async(b, tirx_region_new(b, o, TIRX_EXPRS(r0, c0), (int64_t[]){v->rows, v->cols}),
                  tirx_whole(b, s), NULL);
  tirx_bulk_commit(b);
  tirx_bulk_wait(b, 0, false);
  tirx_filter_end(b);
  tirx_kernel *k = NULL;
  cr_assert_eq(tirx_kernel_build(b, &k), TIRX_OK, "%s", tirx_builder_error(b));
  cr_log_info("%s", tirx_kernel_dispatch_report(k));
  tirx_builder_destroy(b);
  return k;
}

static void run_tile(tirx_runtime *rt, const variant *v, int64_t M, int64_t K) {
  tirx_kernel *k = tile_kernel(v);
  int64_t gy = (M + v->rows - 1) / v->rows, gx = (K + v->cols - 1) / v->cols;
  int64_t TM = gy * v->rows, TK = gx * v->cols;
  size_t n = (size_t)(M * K), nt = (size_t)(TM * TK), e = (size_t)v->elem;
  unsigned char *host = malloc(n * e), *back = malloc(n * e), *tb = malloc(nt * e);
  for (size_t i = 0; i < n * e; i += 2) {
    uint16_t x = (uint16_t)(rnd32() & 0x3fffu); /* finite values in f16/bf16, any bits in f32 */
    memcpy(host + i, &x, 2);
  }
  void *da, *dout, *dt;
  OK(tirx_runtime_alloc(rt, n * e, &da));
  OK(tirx_runtime_alloc(rt, n * e, &dout));
  OK(tirx_runtime_alloc(rt, nt * e, &dt));
  OK(tirx_runtime_copy(rt, da, host, n * e, TIRX_COPY_HOST_TO_DEVICE));
  OK(tirx_runtime_fill32(rt, dout, POISON32, n * e / 4));
  OK(tirx_runtime_fill32(rt, dt, POISON32, nt * e / 4));
  tirx_arg args[7] = {
      tirx_arg_i32((int32_t)M), tirx_arg_i32((int32_t)K), tirx_arg_i32((int32_t)TM),
      tirx_arg_i32((int32_t)TK), tirx_arg_tensor(da, v->dtype, 2, (int64_t[]){M, K}, NULL),
      tirx_arg_tensor(dout, v->dtype, 2, (int64_t[]){M, K}, NULL),
      tirx_arg_tensor(dt, v->dtype, 2, (int64_t[]){TM, TK}, NULL)};
  OK(tirx_launch(rt, k, args, 7, NULL));
  sync_or_fail(rt);
  OK(tirx_runtime_copy(rt, back, dout, n * e, TIRX_COPY_DEVICE_TO_HOST));
  OK(tirx_runtime_copy(rt, tb, dt, nt * e, TIRX_COPY_DEVICE_TO_HOST));
  cr_assert(memcmp(back, host, n * e) == 0, "TMA store: out differs from A (%lldx%lld, %s)",
            (long long)M, (long long)K, tirx_dtype_name(v->dtype));
  for (int64_t r = 0; r < TM; r++)
    for (int64_t c = 0; c < TK; c++) {
      const unsigned char *got = tb + (size_t)(r * TK + c) * e;
      static const unsigned char zero[8];
      const unsigned char *want = r < M && c < K ? host + (size_t)(r * K + c) * e : zero;
      cr_assert(memcmp(got, want, e) == 0,
                "TMA load: tile element (%lld, %lld) differs (%s; outside the tensor it must be "
                "zero-filled)",
                (long long)r, (long long)c, tirx_dtype_name(v->dtype));
    }
  OK(tirx_runtime_free(rt, da));
  OK(tirx_runtime_free(rt, dout));
  OK(tirx_runtime_free(rt, dt));
  free(host);
  free(back);
  free(tb);
  tirx_kernel_release(k);
}

Test(gpu_tma, load_and_store_odd_shapes_with_swizzles, .timeout = 300) {
  tirx_runtime *rt = gpu();
  static const variant vs[] = {
      {TIRX_BF16, 2, 128, 64, 64, false}, {TIRX_F16, 2, 64, 32, 32, false},
      {TIRX_F32, 4, 32, 16, 8, false},    {TIRX_F32, 4, 0, 24, 16, false},
      {TIRX_BF16, 2, 128, 64, 128, false},
  };
  /* K: row strides must be multiples of 16 bytes (8 halves, 4 floats). */
  static const int64_t shapes[][2] = {{1, 8}, {77, 136}, {130, 200}, {64, 64}, {3, 1000}};
  for (size_t i = 0; i < sizeof vs / sizeof vs[0]; i++)
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
      run_tile(rt, &vs[i], shapes[s][0], shapes[s][1]);
  tirx_runtime_destroy(rt);
}

/* The split form (fast.cu's 3-D map {64, rows, K/64}): K a multiple of 64, M odd. */
Test(gpu_tma, split_form_three_dim_map, .timeout = 300) {
  tirx_runtime *rt = gpu();
  variant v = {TIRX_BF16, 2, 128, 64, 128, true};
  run_tile(rt, &v, 77, 192);
  run_tile(rt, &v, 130, 256);
  tirx_runtime_destroy(rt);
}

/*
 * A cluster of 2: CTA rank 0 loads one 64x64 bf16 tile with a multicast mask 0b11 into both
 * CTAs' shared memory; each CTA arrives with the tile's bytes on its own barrier and waits;
 * each writes what it received to out[cluster][rank]. Every CTA must see the same tile.
 */
Test(gpu_tma, cluster_of_two_multicast_load, .timeout = 300) {
  tirx_runtime *rt = gpu();
  tirx_builder *b = tirx_builder_create("tma_mc");
  tirx_expr *M = tirx_param_int(b, "M", TIRX_I32);
  tirx_tensor *a = tirx_param_tensor(b, "A", TIRX_BF16, TIRX_EXPRS(M, tirx_int(b, 64)), NULL);
  tirx_tensor *o = tirx_param_tensor(
      b, "out", TIRX_BF16,
      TIRX_EXPRS(tirx_mul(b, tirx_ceildiv(b, M, tirx_int(b, 64)), tirx_int(b, 128)),
                 tirx_int(b, 64)),
      NULL);
  tirx_set_block(b, 128, 1, 1);
  tirx_set_cluster(b, 2, 1, 1);
  tirx_set_grid(b, tirx_mul(b, tirx_ceildiv(b, M, tirx_int(b, 64)), tirx_int(b, 2)), NULL, NULL);
  tirx_tensor *s = tirx_alloc_shared(b, "tile", TIRX_BF16, TIRX_DIMS(64, 64),
                                     tirx_layout_smem_tile(tirx_builder_arena(b), 64, 64, 2, 128));
  tirx_tensor *bar = tirx_alloc_mbarrier(b, "bar", 1);
  tirx_region *bar0 = tirx_region_new(b, bar, TIRX_EXPRS(tirx_int(b, 0)), (int64_t[]){1});
  tirx_expr *rank = tirx_let(b, "rank", tirx_cluster_ctarank(b));
  tirx_expr *cl = tirx_let(b, "cl", tirx_cluster_id(b, 0));
  tirx_expr *r0 = tirx_let(b, "r0", tirx_mul(b, cl, tirx_int(b, 64)));
  tirx_filter_begin(b, TIRX_AXIS_TID, 0, 1);
  tirx_mbarrier_init(b, bar0, 1);
  tirx_fence_mbarrier_init(b);
  tirx_filter_end(b);
  tirx_cluster_sync(b); /* both barriers exist before any multicast targets them */
  tirx_filter_begin(b, TIRX_AXIS_TID, 0, 1);
  tirx_mbarrier_expect_tx(b, bar0, tirx_int(b, 64 * 64 * 2));
  tirx_if_begin(b, tirx_eq(b, rank, tirx_int(b, 0)));
  tirx_copy_async(b, tirx_whole(b, s),
                  tirx_region_new(b, a, TIRX_EXPRS(r0, tirx_int(b, 0)), (int64_t[]){64, 64}),
                  &(tirx_config){.barrier = bar0, .multicast = tirx_int(b, 3)});
  tirx_if_end(b);
  tirx_filter_end(b);
  tirx_mbarrier_wait(b, bar0, tirx_int(b, 0));
  tirx_expr *e = tirx_for_begin(b, "e", tirx_thread_idx(b, 0), tirx_int(b, 64 * 64),
                                tirx_int(b, 128), TIRX_LOOP_SERIAL);
  tirx_expr *r = tirx_div(b, e, tirx_int(b, 64)), *c = tirx_mod(b, e, tirx_int(b, 64));
  tirx_expr *orow = tirx_add(b, tirx_mul(b, tirx_add(b, tirx_mul(b, cl, tirx_int(b, 2)), rank),
                                         tirx_int(b, 64)),
                             r);
  tirx_if_begin(b, tirx_lt(b, tirx_add(b, r0, r), M));
  tirx_store(b, o, TIRX_EXPRS(orow, c), tirx_load(b, s, TIRX_EXPRS(r, c)));
  tirx_if_end(b);
  tirx_for_end(b);
  tirx_cluster_sync(b);
  tirx_kernel *k = NULL;
  cr_assert_eq(tirx_kernel_build(b, &k), TIRX_OK, "%s", tirx_builder_error(b));
  tirx_builder_destroy(b);

  int64_t m = 130; /* three clusters, the last tile partly outside (zero-filled rows) */
  int64_t clusters = (m + 63) / 64;
  size_t n = (size_t)(m * 64), no = (size_t)(clusters * 128 * 64);
  uint16_t *host = malloc(n * 2), *back = malloc(no * 2);
  for (size_t i = 0; i < n; i++) host[i] = (uint16_t)(rnd32() & 0x3fffu);
  void *da, *dout;
  OK(tirx_runtime_alloc(rt, n * 2, &da));
  OK(tirx_runtime_alloc(rt, no * 2, &dout));
  OK(tirx_runtime_copy(rt, da, host, n * 2, TIRX_COPY_HOST_TO_DEVICE));
  OK(tirx_runtime_fill32(rt, dout, POISON32, no / 2));
  tirx_arg args[3] = {tirx_arg_i32((int32_t)m),
                      tirx_arg_tensor(da, TIRX_BF16, 2, (int64_t[]){m, 64}, NULL),
                      tirx_arg_tensor(dout, TIRX_BF16, 2, (int64_t[]){clusters * 128, 64}, NULL)};
  OK(tirx_launch(rt, k, args, 3, NULL));
  sync_or_fail(rt);
  OK(tirx_runtime_copy(rt, back, dout, no * 2, TIRX_COPY_DEVICE_TO_HOST));
  for (int64_t cidx = 0; cidx < clusters; cidx++)
    for (int rk = 0; rk < 2; rk++)
      for (int64_t hr = 0; hr < 64 && cidx * 64 + hr < m; hr++)
        for (int64_t hc = 0; hc < 64; hc++) {
          int64_t hrow = (cidx * 2 + rk) * 64 + hr;
          uint16_t got = back[hrow * 64 + hc], want = host[(cidx * 64 + hr) * 64 + hc];
          cr_assert_eq(got, want, "cluster %lld rank %d element (%lld, %lld): 0x%04x, expected "
                       "0x%04x", (long long)cidx, rk, (long long)hr, (long long)hc, got, want);
        }
  OK(tirx_runtime_free(rt, da));
  OK(tirx_runtime_free(rt, dout));
  free(host);
  free(back);
  tirx_kernel_release(k);
  tirx_runtime_destroy(rt);
}
