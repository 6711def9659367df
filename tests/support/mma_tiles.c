/* Single-CTA matrix-multiply tiles (mma_tiles.h). */
#include "mma_tiles.h"

#include <stdio.h>
#include <string.h>

/* A K-major (rows, k) shared tile for wgmma: swizzled column blocks, or (swizzle 0) 8x16-byte
 * core matrices, K blocks 128 bytes apart, 8-row groups k * 16 bytes apart. */
static const tirx_layout *wgmma_tile(tirx_arena *a, int64_t rows, int64_t k, int esize,
                                     int swizzle) {
  if (swizzle) return tirx_layout_smem_tile(a, rows, k, esize, swizzle);
  int64_t c = 16 / esize; /* elements per core-matrix row */
  char text[160];
  snprintf(text, sizeof text, "((%lld,8),(%lld,%lld)):((%lld@m,%lld@m),(%lld@m,1@m))",
           (long long)(rows / 8), (long long)(k / c), (long long)c, (long long)(8 * k),
           (long long)c, (long long)(8 * c));
  return tirx_layout_parse(a, text);
}

/* The (K, N) view of an (N, K) tile: b's columns are the tile's rows. */
static const tirx_layout *k_by_n(tirx_arena *a, const tirx_layout *nk) {
  return nk ? tirx_layout_permute(a, nk, 2, (int64_t[]){1, 0}) : NULL;
}

/* rows x cols, row pitch cols + 8 (16 bytes of padding: ldmatrix/stmatrix rows of successive
 * rows fall in different banks). */
static const tirx_layout *padded(tirx_arena *a, int64_t rows, int64_t cols) {
  return tirx_layout_strided(a, 2, (int64_t[]){rows, cols}, (int64_t[]){cols + 8, 1});
}

static tirx_region *rows_of(tirx_builder *b, tirx_tensor *t, tirx_expr *r0, int64_t rows,
                            int64_t c0, int64_t cols) {
  return tirx_region_new(b, t, TIRX_EXPRS(r0, tirx_int(b, c0)), (int64_t[]){rows, cols});
}

tirx_kernel *example_mma_tile(const mma_tile *t, char *err, size_t cap) {
  bool wg = strcmp(t->family, "wgmma") == 0 || t->warpgroups > 0;
  int64_t M = t->m, N = t->n, K = t->k;
  int esize = t->dtype == TIRX_F16 || t->dtype == TIRX_BF16 ? 2 : 4;
  char name[64];
  snprintf(name, sizeof name, "mma_tile_%s%s_%s", t->family, t->a_regs ? "_rs" : "",
           wg ? "wg" : "warp");
  tirx_builder *b = tirx_builder_create(name);
  tirx_arena *A = tirx_builder_arena(b);
  tirx_tensor *a = tirx_param_tensor(b, "a", t->dtype, TIRX_EXPRS(tirx_int(b, M), tirx_int(b, K)),
                                     NULL);
  tirx_tensor *bt = tirx_param_tensor_strided(b, "b", t->dtype,
                                              TIRX_EXPRS(tirx_int(b, K), tirx_int(b, N)),
                                              (tirx_expr *[]){tirx_int(b, 1), tirx_int(b, K)});
  tirx_tensor *c = tirx_param_tensor(b, "c", t->dtype, TIRX_EXPRS(tirx_int(b, M), tirx_int(b, N)),
                                     NULL);
  int teams = wg ? (t->warpgroups > 0 ? t->warpgroups : 1) : (int)(M / 16);
  int64_t rows = wg ? M / teams : 16;
  tirx_set_block(b, wg ? 128 * teams : 32 * teams, 1, 1);

  /* Shared tiles: a and b as the family reads them, c for the epilogue. */
  const tirx_layout *al, *bl;
  if (wg && strcmp(t->family, "wgmma") == 0) {
    al = wgmma_tile(A, M, K, esize, t->swizzle);
    bl = k_by_n(A, wgmma_tile(A, N, K, esize, t->swizzle));
  } else {
    al = padded(A, M, K);
    bl = k_by_n(A, padded(A, N, K));
  }
  const tirx_layout *cl = N % 64 == 0 ? tirx_layout_smem_tile(A, M, N, esize, 128)
                                      : padded(A, M, N);
  if (!al || !bl || !cl) {
    snprintf(err, cap, "layout: %s", tirx_last_error());
    tirx_builder_destroy(b);
    return NULL;
  }
  tirx_tensor *as = tirx_alloc_shared(b, "as", t->dtype, TIRX_DIMS(M, K), al);
  tirx_tensor *bs = tirx_alloc_shared(b, "bs", t->dtype, TIRX_DIMS(K, N), bl);
  tirx_tensor *cs = tirx_alloc_shared(b, "cs", t->dtype, TIRX_DIMS(M, N), cl);

  tirx_copy(b, tirx_whole(b, as), tirx_whole(b, a), NULL);
  tirx_copy(b, tirx_whole(b, bs), tirx_whole(b, bt), NULL);
  /* The writers make their generic-proxy stores visible to the async proxy (wgmma reads
   * shared memory through it), then the barrier publishes them. */
  tirx_fence_proxy_async(b);
  tirx_sync_threads(b);

  tirx_team_begin(b, wg ? TIRX_TEAM_WARPGROUP : TIRX_TEAM_WARP);
  tirx_expr *team = wg ? tirx_div(b, tirx_thread_linear(b), tirx_int(b, 128)) : tirx_warp_id(b);
  /* The team's first row: a product the builder can see is a multiple of rows (a tirx_let
   * would hide that), so the swizzled tiles' stage moves stay whole swizzle atoms. */
  tirx_expr *r0 = teams > 1 ? tirx_mul(b, team, tirx_int(b, rows)) : tirx_int(b, 0);
  /* The accumulator: the wgmma fragment of the warpgroup's rows, or the warp's 16 rows as
   * N/8 m16n8 C fragments side by side. */
  char frag[128];
  snprintf(frag, sizeof frag, "((2,8),(%lld,4,2)):((2@reg,4@laneid),(4@reg,1@laneid,1@reg))",
           (long long)(N / 8));
  const tirx_layout *accl = wg ? tirx_layout_wgmma_acc(A, (int)rows, (int)N)
                               : tirx_layout_parse(A, frag);
  if (!accl) { /* a NULL layout would silently make a dense array */
    snprintf(err, cap, "accumulator layout: %s", tirx_last_error());
    tirx_builder_destroy(b);
    return NULL;
  }
  tirx_tensor *acc = tirx_alloc_local(b, "acc", TIRX_F32, TIRX_DIMS(rows, N), accl);
  bool async = strcmp(t->family, "wgmma") == 0;
  /* The RS form: the team's rows of a into registers as wgmma A fragments (copy.ldmatrix at
   * warpgroup scope), the calls then take K slices of that register tile. */
  tirx_tensor *afrag = NULL;
  if (async && t->a_regs) {
    const tirx_layout *fl = tirx_layout_wgmma_a(A, (int)rows, (int)K);
    if (!fl) {
      snprintf(err, cap, "A fragment layout: %s", tirx_last_error());
      tirx_builder_destroy(b);
      return NULL;
    }
    afrag = tirx_alloc_local(b, "afrag", t->dtype, TIRX_DIMS(rows, K), fl);
    tirx_copy(b, tirx_whole(b, afrag), rows_of(b, as, r0, rows, 0, K), NULL);
  }
  int halves = t->split_k ? 2 : 1;
  for (int h = 0; h < halves; h++) {
    int64_t k0 = h * K / halves, kn = K / halves;
    tirx_gemm_config g = {.family = t->family, .accumulate = tirx_bool(b, h > 0)};
    tirx_region *ar = afrag ? rows_of(b, afrag, tirx_int(b, 0), rows, k0, kn)
                            : rows_of(b, as, r0, rows, k0, kn);
    tirx_region *br = tirx_region_new(b, bs, TIRX_EXPRS(tirx_int(b, k0), tirx_int(b, 0)),
                                      (int64_t[]){kn, N});
    if (async)
      tirx_gemm_async(b, tirx_whole(b, acc), ar, br, &g);
    else
      tirx_gemm(b, tirx_whole(b, acc), ar, br, &g);
  }
  if (async) {
    tirx_wgmma_commit(b);
    tirx_wgmma_wait(b, 0);
  }
  tirx_tensor *acc16 = tirx_alloc_local(b, "acc16", t->dtype, TIRX_DIMS(rows, N), accl);
  tirx_cast_region(b, tirx_whole(b, acc16), tirx_whole(b, acc), NULL);
  tirx_copy(b, rows_of(b, cs, r0, rows, 0, N), tirx_whole(b, acc16), NULL);
  tirx_team_end(b);
  tirx_sync_threads(b);
  tirx_copy(b, tirx_whole(b, c), tirx_whole(b, cs), NULL);

  tirx_kernel *k = NULL;
  if (tirx_kernel_build(b, &k) != TIRX_OK) snprintf(err, cap, "%s", tirx_builder_error(b));
  tirx_builder_destroy(b);
  return k;
}

/* ---- wgmma A fragments filled by ldmatrix (mma_tiles.h) ---- */

tirx_kernel *example_wgmma_a_load(tirx_dtype dtype, int rows, int k, int swizzle, char *err,
                                  size_t cap) {
  tirx_builder *b = tirx_builder_create("wgmma_a_load");
  tirx_arena *A = tirx_builder_arena(b);
  tirx_tensor *x = tirx_param_tensor(b, "x", dtype, TIRX_EXPRS(tirx_int(b, rows), tirx_int(b, k)),
                                     NULL);
  tirx_tensor *y = tirx_param_tensor(b, "y", dtype, TIRX_EXPRS(tirx_int(b, rows), tirx_int(b, k)),
                                     NULL);
  tirx_set_block(b, 128, 1, 1);
  const tirx_layout *sl = tirx_layout_smem_tile(A, rows, k, 2, swizzle);
  const tirx_layout *fl = tirx_layout_wgmma_a(A, rows, k);
  if (!sl || !fl) {
    snprintf(err, cap, "layout: %s", tirx_last_error());
    tirx_builder_destroy(b);
    return NULL;
  }
  tirx_tensor *xs = tirx_alloc_shared(b, "xs", dtype, TIRX_DIMS(rows, k), sl);
  tirx_copy(b, tirx_whole(b, xs), tirx_whole(b, x), NULL);
  tirx_sync_threads(b);
  tirx_team_begin(b, TIRX_TEAM_WARPGROUP);
  tirx_tensor *frag = tirx_alloc_local(b, "frag", dtype, TIRX_DIMS(rows, k), fl);
  tirx_copy(b, tirx_whole(b, frag), tirx_whole(b, xs), NULL);
  tirx_copy(b, tirx_whole(b, y), tirx_whole(b, frag), NULL);
  tirx_team_end(b);
  tirx_kernel *kern = NULL;
  if (tirx_kernel_build(b, &kern) != TIRX_OK) snprintf(err, cap, "%s", tirx_builder_error(b));
  tirx_builder_destroy(b);
  return kern;
}

/* ---- a TMA-fed wgmma GEMM, SS or RS (mma_tiles.h) ---- */

static tirx_region *at2(tirx_builder *b, tirx_tensor *t, tirx_expr *r0, tirx_expr *c0,
                        int64_t rows, int64_t cols) {
  return tirx_region_new(b, t, TIRX_EXPRS(r0, c0), (int64_t[]){rows, cols});
}

tirx_kernel *example_wgmma_gemm(const wgmma_gemm *g, char *err, size_t cap) {
  enum { BM = 64, BK = 64 };
  if (!g || (g->dtype != TIRX_BF16 && g->dtype != TIRX_F16) || g->block_n < 16 ||
      g->block_n > 256 || g->block_n % 16) {
    snprintf(err, cap, "example_wgmma_gemm: g must have dtype f16 or bf16 and block_n a "
                       "multiple of 16 in [16, 256]");
    return NULL;
  }
  const int64_t BN = g->block_n;
  tirx_dtype dt = g->dtype;
  char name[64];
  snprintf(name, sizeof name, "wgmma_gemm_%s_%s_n%lld", g->a_regs ? "rs" : "ss",
           tirx_dtype_name(dt), (long long)BN);
  tirx_builder *b = tirx_builder_create(name);
  tirx_arena *ar = tirx_builder_arena(b);
  tirx_expr *M = tirx_param_int(b, "M", TIRX_I32), *N = tirx_param_int(b, "N", TIRX_I32);
  tirx_expr *K = tirx_param_int(b, "K", TIRX_I32);
  tirx_expr *one = tirx_int(b, 1);
  tirx_tensor *A = tirx_param_tensor_strided(b, "A", dt, TIRX_EXPRS(M, K),
                                             (tirx_expr *[]){NULL, one});
  tirx_tensor *Bt = tirx_param_tensor_strided(b, "B", dt, TIRX_EXPRS(K, N),
                                              (tirx_expr *[]){one, NULL});
  tirx_tensor *C = tirx_param_tensor_strided(b, "C", dt, TIRX_EXPRS(M, N),
                                             (tirx_expr *[]){NULL, one});
  tirx_set_block(b, 128, 1, 1);
  tirx_set_grid(b, tirx_ceildiv(b, N, tirx_int(b, BN)), tirx_ceildiv(b, M, tirx_int(b, BM)),
                NULL);
  /* C's column blocks: the widest swizzle whose width divides BN. */
  int csw = BN % 64 == 0 ? 128 : BN % 32 == 0 ? 64 : 32;
  const tirx_layout *al = tirx_layout_smem_tile(ar, BM, BK, 2, 128);
  const tirx_layout *bl = k_by_n(ar, tirx_layout_smem_tile(ar, BN, BK, 2, 128));
  const tirx_layout *cl = tirx_layout_smem_tile(ar, BM, BN, 2, csw);
  const tirx_layout *accl = tirx_layout_wgmma_acc(ar, BM, (int)BN);
  const tirx_layout *fl = tirx_layout_wgmma_a(ar, BM, BK);
  if (!al || !bl || !cl || !accl || !fl) {
    snprintf(err, cap, "layout: %s", tirx_last_error());
    tirx_builder_destroy(b);
    return NULL;
  }
  tirx_tensor *As = tirx_alloc_shared(b, "As", dt, TIRX_DIMS(BM, BK), al);
  tirx_tensor *Bs = tirx_alloc_shared(b, "Bs", dt, TIRX_DIMS(BK, BN), bl);
  tirx_tensor *Cs = tirx_alloc_shared(b, "Cs", dt, TIRX_DIMS(BM, BN), cl);
  tirx_tensor *full = tirx_alloc_mbarrier(b, "full", 1);
  tirx_region *bar = tirx_region_new(b, full, TIRX_EXPRS(tirx_int(b, 0)), (int64_t[]){1});
  tirx_expr *tm = tirx_let(b, "tm", tirx_block_idx(b, 1));
  tirx_expr *tn = tirx_let(b, "tn", tirx_block_idx(b, 0));
  tirx_expr *tid = tirx_let(b, "tid", tirx_thread_linear(b));
  tirx_if_begin(b, tirx_eq(b, tid, tirx_int(b, 0)));
  tirx_mbarrier_init(b, bar, 1);
  tirx_fence_mbarrier_init(b);
  tirx_if_end(b);
  tirx_sync_threads(b);

  tirx_team_begin(b, TIRX_TEAM_WARPGROUP);
  tirx_tensor *acc = tirx_alloc_local(b, "acc", TIRX_F32, TIRX_DIMS(BM, BN), accl);
  tirx_tensor *afrag = g->a_regs ? tirx_alloc_local(b, "afrag", dt, TIRX_DIMS(BM, BK), fl) : NULL;
  tirx_team_end(b);
  tirx_expr *kb = tirx_for_begin(b, "kb", tirx_int(b, 0), tirx_ceildiv(b, K, tirx_int(b, BK)),
                                 NULL, TIRX_LOOP_SERIAL);
  tirx_filter_begin(b, TIRX_AXIS_TID, 0, 1);
  tirx_mbarrier_expect_tx(b, bar, tirx_int(b, (BM + BN) * BK * 2));
  tirx_config ld = {.barrier = bar};
  tirx_expr *k0 = tirx_mul(b, kb, tirx_int(b, BK));
  tirx_copy_async(b, tirx_whole(b, As), at2(b, A, tirx_mul(b, tm, tirx_int(b, BM)), k0, BM, BK),
                  &ld);
  tirx_copy_async(b, tirx_whole(b, Bs), at2(b, Bt, k0, tirx_mul(b, tn, tirx_int(b, BN)), BK, BN),
                  &ld);
  tirx_filter_end(b);
  tirx_mbarrier_wait(b, bar, tirx_bit_and(b, kb, one));
  tirx_team_begin(b, TIRX_TEAM_WARPGROUP);
  tirx_gemm_config cfg = {.accumulate = tirx_gt(b, kb, tirx_int(b, 0))};
  if (afrag) { /* RS: A's K block into registers, then the wgmma reads them there */
    tirx_copy(b, tirx_whole(b, afrag), tirx_whole(b, As), NULL);
    tirx_gemm_async(b, tirx_whole(b, acc), tirx_whole(b, afrag), tirx_whole(b, Bs), &cfg);
  } else {
    tirx_gemm_async(b, tirx_whole(b, acc), tirx_whole(b, As), tirx_whole(b, Bs), &cfg);
  }
  tirx_wgmma_commit(b);
  tirx_wgmma_wait(b, 0);
  tirx_team_end(b);
  tirx_sync_threads(b); /* every thread has read the stage before the next load */
  tirx_for_end(b);

  tirx_team_begin(b, TIRX_TEAM_WARPGROUP);
  tirx_tensor *acc16 = tirx_alloc_local(b, "acc16", dt, TIRX_DIMS(BM, BN), accl);
  tirx_cast_region(b, tirx_whole(b, acc16), tirx_whole(b, acc), NULL);
  tirx_copy(b, tirx_whole(b, Cs), tirx_whole(b, acc16), NULL);
  tirx_team_end(b);
  if (g->plain_store) {
    tirx_sync_threads(b);
    tirx_expr *e = tirx_for_begin(b, "e", tirx_thread_linear(b), tirx_int(b, BM * BN),
                                  tirx_int(b, 128), TIRX_LOOP_SERIAL);
    tirx_expr *r = tirx_let(b, "r", tirx_div(b, e, tirx_int(b, BN)));
    tirx_expr *c = tirx_let(b, "c", tirx_mod(b, e, tirx_int(b, BN)));
    tirx_expr *gr = tirx_add(b, tirx_mul(b, tm, tirx_int(b, BM)), r);
    tirx_expr *gc = tirx_add(b, tirx_mul(b, tn, tirx_int(b, BN)), c);
    tirx_if_begin(b, tirx_and(b, tirx_lt(b, gr, M), tirx_lt(b, gc, N)));
    tirx_store(b, C, TIRX_EXPRS(gr, gc), tirx_load(b, Cs, TIRX_EXPRS(r, c)));
    tirx_if_end(b);
    tirx_for_end(b);
  } else {
    tirx_fence_proxy_async(b);
    tirx_sync_threads(b);
    tirx_filter_begin(b, TIRX_AXIS_TID, 0, 1);
    tirx_copy_async(b, at2(b, C, tirx_mul(b, tm, tirx_int(b, BM)),
                           tirx_mul(b, tn, tirx_int(b, BN)), BM, BN),
                    tirx_whole(b, Cs), NULL);
    tirx_bulk_commit(b);
    tirx_bulk_wait(b, 0, false);
    tirx_filter_end(b);
  }

  tirx_kernel *k = NULL;
  if (tirx_kernel_build(b, &k) != TIRX_OK) snprintf(err, cap, "%s", tirx_builder_error(b));
  tirx_builder_destroy(b);
  return k;
}

/* ---- an mbarrier ring (mma_tiles.h) ---- */

/*
 * Two warpgroups: warp 0 (producer, setmaxnreg.dec 40) fills stage s = it % 2 of a shared
 * ring with x[it, :], then one elected lane arrives on full[s] (expect_tx 0 on odd it, a
 * plain arrive on even); warp 4 (consumer, setmaxnreg.inc 232) waits full[s] with parity
 * (it / 2) & 1, writes y[it, :] = 2 * data + it and releases the stage on empty[s], which the
 * producer waits with the opposite parity (a fresh barrier's previous phase counts as done).
 * Afterwards every thread passes named barrier 1; thread 0 writes the cluster rank and the
 * number of lanes elect.sync chose in warp 0 (atomics) to info[0], info[1].
 */
tirx_kernel *example_mbarrier_ring(int iters, char *err, size_t cap) {
  tirx_builder *b = tirx_builder_create("mbarrier_ring");
  tirx_tensor *x = tirx_param_tensor(b, "x", TIRX_F32,
                                     TIRX_EXPRS(tirx_int(b, iters), tirx_int(b, 32)),
                                     NULL);
  tirx_tensor *y = tirx_param_tensor(b, "y", TIRX_F32,
                                     TIRX_EXPRS(tirx_int(b, iters), tirx_int(b, 32)),
                                     NULL);
  tirx_tensor *info = tirx_param_tensor(b, "info", TIRX_I32, TIRX_EXPRS(tirx_int(b, 2)), NULL);
  tirx_set_block(b, 256, 1, 1);
  tirx_tensor *data = tirx_alloc_shared(b, "data", TIRX_F32, TIRX_DIMS(2, 32), NULL);
  tirx_tensor *full = tirx_alloc_mbarrier(b, "full", 2);
  tirx_tensor *empty = tirx_alloc_mbarrier(b, "empty", 2);
  tirx_expr *tid = tirx_thread_linear(b), *warp = tirx_warp_id(b), *lane = tirx_lane_id(b);
  tirx_if_begin(b, tirx_eq(b, tid, tirx_int(b, 0)));
  for (int s = 0; s < 2; s++) {
    tirx_mbarrier_init(b, tirx_region_new(b, full, TIRX_EXPRS(tirx_int(b, s)), (int64_t[]){1}), 1);
    tirx_mbarrier_init(b, tirx_region_new(b, empty, TIRX_EXPRS(tirx_int(b, s)), (int64_t[]){1}),
                       1);
  }
  tirx_store(b, info, TIRX_EXPRS(tirx_int(b, 1)), tirx_int_typed(b, 0, TIRX_I32));
  tirx_fence_mbarrier_init(b);
  tirx_if_end(b);
  tirx_sync_threads(b);
  tirx_if_begin(b, tirx_lt(b, tid, tirx_int(b, 128)));
  tirx_setmaxnreg(b, 40, false);
  tirx_if_begin(b, tirx_eq(b, warp, tirx_int(b, 0)));
  {
    tirx_expr *it = tirx_for_begin(b, "it", tirx_int(b, 0), tirx_int(b, iters), NULL,
                                   TIRX_LOOP_SERIAL);
    tirx_expr *s = tirx_let(b, "s", tirx_mod(b, it, tirx_int(b, 2)));
    tirx_expr *ph =
        tirx_let(b, "ph", tirx_bit_and(b, tirx_div(b, it, tirx_int(b, 2)), tirx_int(b, 1)));
    tirx_region *fs = tirx_region_new(b, full, TIRX_EXPRS(s), (int64_t[]){1});
    tirx_region *es = tirx_region_new(b, empty, TIRX_EXPRS(s), (int64_t[]){1});
    tirx_mbarrier_wait(b, es, tirx_bit_xor(b, ph, tirx_int(b, 1)));
    tirx_store(b, data, TIRX_EXPRS(s, lane), tirx_load(b, x, TIRX_EXPRS(it, lane)));
    tirx_sync_warp(b);
    tirx_if_begin(b, tirx_elect_one(b));
    tirx_if_begin(b, tirx_eq(b, s, tirx_int(b, 1)));
    tirx_mbarrier_expect_tx(b, fs, tirx_int(b, 0));
    tirx_else(b);
    tirx_mbarrier_arrive(b, fs);
    tirx_if_end(b);
    tirx_if_end(b);
    tirx_for_end(b);
    /* elect.sync chooses one lane of the (converged) warp. */
    tirx_expr *chosen = tirx_let(b, "chosen", tirx_elect_one(b));
    tirx_if_begin(b, chosen);
    tirx_atomic_add(b, info, TIRX_EXPRS(tirx_int(b, 1)), tirx_int_typed(b, 1, TIRX_I32));
    tirx_if_end(b);
  }
  tirx_if_end(b);
  tirx_else(b);
  tirx_setmaxnreg(b, 232, true);
  tirx_if_begin(b, tirx_eq(b, warp, tirx_int(b, 4)));
  {
    tirx_expr *it = tirx_for_begin(b, "it", tirx_int(b, 0), tirx_int(b, iters), NULL,
                                   TIRX_LOOP_SERIAL);
    tirx_expr *s = tirx_let(b, "s", tirx_mod(b, it, tirx_int(b, 2)));
    tirx_expr *ph =
        tirx_let(b, "ph", tirx_bit_and(b, tirx_div(b, it, tirx_int(b, 2)), tirx_int(b, 1)));
    tirx_mbarrier_wait(b, tirx_region_new(b, full, TIRX_EXPRS(s), (int64_t[]){1}), ph);
    tirx_expr *v = tirx_load(b, data, TIRX_EXPRS(s, lane));
    tirx_store(b, y, TIRX_EXPRS(it, lane),
               tirx_add(b, tirx_mul(b, v, tirx_float(b, 2.0, TIRX_F32)),
                        tirx_cast(b, it, TIRX_F32)));
    tirx_sync_warp(b);
    tirx_if_begin(b, tirx_elect_one(b));
    tirx_mbarrier_arrive(b, tirx_region_new(b, empty, TIRX_EXPRS(s), (int64_t[]){1}));
    tirx_if_end(b);
    tirx_for_end(b);
  }
  tirx_if_end(b);
  tirx_if_end(b);
  tirx_named_barrier_sync(b, 1, 256);
  tirx_if_begin(b, tirx_eq(b, tid, tirx_int(b, 0)));
  tirx_store(b, info, TIRX_EXPRS(tirx_int(b, 0)), tirx_cluster_ctarank(b));
  tirx_if_end(b);
  tirx_kernel *k = NULL;
  if (tirx_kernel_build(b, &k) != TIRX_OK) snprintf(err, cap, "%s", tirx_builder_error(b));
  tirx_builder_destroy(b);
  return k;
}
