/* Tile copies through shared memory with cp.async (cp_async_tiles.h). */
#include "cp_async_tiles.h"

#include <stdio.h>

/* The TM x TN region of t at (r0, c0). */
static tirx_region *tile_at(tirx_builder *b, tirx_tensor *t, tirx_expr *r0, tirx_expr *c0,
                            int tm, int tn) {
  return tirx_region_new(b, t, TIRX_EXPRS(r0, c0), (int64_t[]){tm, tn});
}

tirx_kernel *example_cp_async_tile(const cp_async_tile *t, char *err, size_t cap) {
  char name[64];
  snprintf(name, sizeof name, "cp_async_%s_%dx%d_s%d", tirx_dtype_name(t->dtype), t->tm, t->tn,
           t->stages);
  tirx_builder *b = tirx_builder_create(name);
  if (t->target) tirx_set_target(b, t->target);
  tirx_expr *M = tirx_param_int(b, "M", TIRX_I32);
  tirx_expr *N = tirx_param_int(b, "N", TIRX_I32);
  tirx_expr *TM = tirx_int(b, t->tm), *TN = tirx_int(b, t->tn);
  tirx_tensor *a = tirx_param_tensor_strided(b, "A", t->dtype, TIRX_EXPRS(M, N),
                                             (tirx_expr *[]){tirx_int(b, t->ld), tirx_int(b, 1)});
  tirx_expr *tiles_m = tirx_ceildiv(b, M, TM), *tiles_n = tirx_ceildiv(b, N, TN);
  tirx_tensor *o = tirx_param_tensor(b, "O", t->dtype,
                                     TIRX_EXPRS(tirx_mul(b, tiles_m, TM), tirx_mul(b, tiles_n, TN)),
                                     NULL);
  tirx_set_block(b, t->threads, 1, 1);
  tirx_config cfg = {.family = t->family};
  if (t->stages == 1) {
    tirx_set_grid(b, tiles_n, tiles_m, NULL);
    tirx_tensor *s = tirx_alloc_shared(b, "tile", t->dtype, TIRX_DIMS(t->tm, t->tn), NULL);
    tirx_expr *r0 = tirx_mul(b, tirx_block_idx(b, 1), TM);
    tirx_expr *c0 = tirx_mul(b, tirx_block_idx(b, 0), TN);
    tirx_copy_async(b, tirx_whole(b, s), tile_at(b, a, r0, c0, t->tm, t->tn), &cfg);
    tirx_cp_async_wait_all(b);
    tirx_sync_threads(b);
    tirx_copy(b, tile_at(b, o, r0, c0, t->tm, t->tn), tirx_whole(b, s), NULL);
  } else {
    /* Two stages of TM rows each; stage s is rows [s * TM, s * TM + TM). */
    tirx_set_grid(b, tiles_m, NULL, NULL);
    tirx_tensor *s = tirx_alloc_shared(b, "stages", t->dtype, TIRX_DIMS(2 * t->tm, t->tn), NULL);
    tirx_expr *r0 = tirx_let(b, "r0", tirx_mul(b, tirx_block_idx(b, 0), TM));
    tirx_copy_async(b, tile_at(b, s, tirx_int(b, 0), tirx_int(b, 0), t->tm, t->tn),
                    tile_at(b, a, r0, tirx_int(b, 0), t->tm, t->tn), &cfg);
    tirx_cp_async_commit(b);
    tirx_expr *j = tirx_for_begin(b, "t", tirx_int(b, 0), tiles_n, NULL, TIRX_LOOP_SERIAL);
    tirx_expr *next = tirx_add(b, j, tirx_int(b, 1));
    tirx_if_begin(b, tirx_lt(b, next, tiles_n));
    tirx_expr *ns = tirx_let(b, "ns", tirx_mod(b, next, tirx_int(b, 2)));
    tirx_copy_async(b, tile_at(b, s, tirx_mul(b, ns, TM), tirx_int(b, 0), t->tm, t->tn),
                    tile_at(b, a, r0, tirx_mul(b, next, TN), t->tm, t->tn), &cfg);
    tirx_if_end(b);
    tirx_cp_async_commit(b); /* every iteration, empty or not: one group per tile */
    tirx_cp_async_wait(b, 1); /* tile t's group is done; tile t + 1's may still run */
    tirx_sync_threads(b);
    tirx_expr *cs = tirx_let(b, "cs", tirx_mod(b, j, tirx_int(b, 2)));
    tirx_copy(b, tile_at(b, o, r0, tirx_mul(b, j, TN), t->tm, t->tn),
              tile_at(b, s, tirx_mul(b, cs, TM), tirx_int(b, 0), t->tm, t->tn), NULL);
    tirx_sync_threads(b); /* stage cs is refilled by the next iteration's copy */
    tirx_for_end(b);
  }
  tirx_kernel *k = NULL;
  if (tirx_kernel_build(b, &k) != TIRX_OK) snprintf(err, cap, "%s", tirx_builder_error(b));
  tirx_builder_destroy(b);
  return k;
}

const cp_async_tile cp_async_tile_suite[] = {
    /* 16-byte vectors: cp.async.cg */
    {TIRX_F32, 16, 64, 1024, 1, 128, "sm_80", NULL},
    {TIRX_F16, 32, 64, 1024, 1, 128, "sm_80", NULL},
    {TIRX_BF16, 8, 40, 1024, 1, 96, NULL, NULL},      /* sm_90a: TMA rejected, the fallback */
    {TIRX_F32, 12, 36, 1024, 1, 64, NULL, "cp_async"}, /* sm_90a, forced */
    /* 4- and 8-byte vectors: cp.async.ca */
    {TIRX_F32, 16, 32, 1001, 1, 128, "sm_80", NULL},   /* rows 4-byte aligned: 4 bytes */
    {TIRX_F16, 16, 32, 1002, 1, 128, "sm_86", NULL},   /* 4 bytes: two halves */
    {TIRX_BF16, 16, 32, 1004, 1, 128, "sm_80", NULL},  /* 8 bytes */
    /* two stages, wait_group 1 */
    {TIRX_F32, 16, 64, 1024, 2, 128, "sm_80", NULL},
    {TIRX_F16, 8, 64, 1024, 2, 64, NULL, NULL},
    {TIRX_BF16, 32, 32, 1002, 2, 128, "sm_89", NULL},
};
const int cp_async_tile_suite_count = (int)(sizeof cp_async_tile_suite /
                                            sizeof cp_async_tile_suite[0]);
