/* Decode attention over a paged KV cache (split-KV, flash-decoding) and reshape_and_cache,
 * written with the builder (tirx/kernels.h), and their ops. */
#include "kernels_internal.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { T = 128, N = TIRX_DECODE_TILE };

/* The masked score and the max of a row that has seen no key yet: finite, so that no inf
 * arithmetic is needed (exp2 of it less any real max is 0). */
#define NEG_BIG (-3.0e38)

/* A checked kernel request. */
typedef struct dspec {
  tirx_decode_kernel which;
  tirx_dtype dt;
  int d, p, h, hkv, ql;
  bool lse;
} dspec;

static tirx_expr *I(tirx_builder *b, int64_t v) { return tirx_int(b, v); }
static tirx_expr *F(tirx_builder *b, double v) { return tirx_float(b, v, TIRX_F32); }


static tirx_expr *dyn_int(tirx_builder *b, const char *name) {
  tirx_expr *e = tirx_param_int(b, name, TIRX_I32);
  tirx_param_set_policy(b, e, TIRX_SPECIALIZE_DYNAMIC);
  return e;
}

/* A rank-n tensor parameter with every stride a hidden argument. */
static tirx_tensor *strided(tirx_builder *b, const char *name, tirx_dtype dt, int n,
                            tirx_expr *const *shape) {
  tirx_expr *none[4] = {NULL, NULL, NULL, NULL};
  return tirx_param_tensor_strided(b, name, dt, n, shape, none);
}

/* A cache page tile in shared memory: [2 * pages per tile, P, 1, D], rows pitch elements apart
 * (two stages of a tile each). */
static tirx_tensor *page_ring(tirx_builder *b, const char *name, const dspec *s, int64_t pitch) {
  int64_t np = N / s->p;
  const tirx_layout *l =
      tirx_layout_strided(tirx_builder_arena(b), 4, (int64_t[]){2 * np, s->p, 1, s->d},
                          (int64_t[]){s->p * pitch, pitch, pitch, 1});
  return tirx_alloc_shared(b, name, s->dt, TIRX_DIMS(2 * np, s->p, 1, s->d), l);
}

/*
 * UNSPLIT and PARTIAL: grid (splits, H_kv, B), 128 threads. Rows r = qi * G + g of the CTA are
 * query token qi of head kvh * G + g. Per tile of N keys: cp.async of its pages (K and V) into
 * stage it % 2 of the ring, the next tile's issued before this one is waited for; scores
 * S[r, j] (thread: key j = tid % N, rows tid / N + 2 i; K rows as 16-byte shared vectors, q
 * from shared f32); the online softmax per row (warp w: rows w + 4 i; lanes: keys lane and
 * lane + 32) leaving P in S and each row's rescale factor; P V (thread: column tid % D, rows
 * tid / D + (T / D) i; V from shared).
 */
static tirx_status build_attention(const dspec *s, tirx_kernel **out) {
  const int G = s->h / s->hkv, R = G * s->ql, D = s->d, P = s->p, NP = N / P;
  const bool split = s->which == TIRX_DECODE_PARTIAL;
  const int KP = D + 8; /* K rows padded by 16 bytes: 16-byte reads of 8 rows hit 32 banks */
  const int RS = (R + 1) / 2;      /* score rows per thread (T / N = 2 row groups) */
  const int CG = T / D;            /* row groups of P V (1 or 2) */
  const int RT = (R + CG - 1) / CG; /* output rows per thread */
  const int RW = (R + 3) / 4;       /* softmax rows per warp */
  tirx_dtype dt = s->dt;
  char name[64];
  snprintf(name, sizeof name, "decode_%s_%s_d%d_p%d_g%d_q%d%s", split ? "partial" : "attn",
           tirx_dtype_name(dt), D, P, G, s->ql, s->lse && !split ? "_lse" : "");
  tirx_builder *b = tirx_builder_create(name);
  tirx_expr *B = dyn_int(b, "batch"), *NPG = dyn_int(b, "num_pages");
  tirx_expr *MP = dyn_int(b, "max_pages");
  tirx_expr *splits = dyn_int(b, "splits"), *tps = dyn_int(b, "tiles_per_split");
  tirx_expr *c = tirx_param_scalar(b, "scale_log2", TIRX_F32);
  tirx_tensor *q = strided(b, "q", dt, 4, (tirx_expr *[]){B, I(b, s->ql), I(b, s->h), I(b, D)});
  tirx_tensor *kc = tirx_param_tensor(b, "k_cache", dt, TIRX_EXPRS(NPG, I(b, P), I(b, s->hkv), I(b, D)), NULL);
  tirx_tensor *vc = tirx_param_tensor(b, "v_cache", dt, TIRX_EXPRS(NPG, I(b, P), I(b, s->hkv), I(b, D)), NULL);
  tirx_tensor *bt = strided(b, "block_table", TIRX_I32, 2, (tirx_expr *[]){B, MP});
  tirx_tensor *cl = tirx_param_tensor(b, "context_lens", TIRX_I32, TIRX_EXPRS(B), NULL);
  tirx_tensor *o = NULL, *lse = NULL, *po = NULL, *pml = NULL;
  if (split) {
    tirx_expr *prows = dyn_int(b, "prows");
    po = tirx_param_tensor(b, "part_o", TIRX_F32, TIRX_EXPRS(prows, I(b, D)), NULL);
    pml = tirx_param_tensor(b, "part_ml", TIRX_F32, TIRX_EXPRS(prows, I(b, 2)), NULL);
  } else {
    o = strided(b, "o", dt, 4, (tirx_expr *[]){B, I(b, s->ql), I(b, s->h), I(b, D)});
    if (s->lse)
      lse = strided(b, "lse", TIRX_F32, 3, (tirx_expr *[]){B, I(b, s->ql), I(b, s->h)});
  }
  tirx_set_block(b, T, 1, 1);
  tirx_set_grid(b, splits, I(b, s->hkv), B);

  tirx_tensor *Ks = page_ring(b, "ks", s, KP), *Vs = page_ring(b, "vs", s, D);
  tirx_tensor *qs = tirx_alloc_shared(b, "qs", TIRX_F32, TIRX_DIMS(R, D), NULL);
  tirx_tensor *Ss = tirx_alloc_shared(b, "ss", TIRX_F32, TIRX_DIMS(R, N), NULL);
  tirx_tensor *ms = tirx_alloc_shared(b, "ms", TIRX_F32, TIRX_DIMS(3, R), NULL); /* m, l, alpha */

  tirx_expr *sp = tirx_let(b, "sp", tirx_block_idx(b, 0));
  tirx_expr *kvh = tirx_let(b, "kvh", tirx_block_idx(b, 1));
  tirx_expr *bi = tirx_let(b, "bi", tirx_block_idx(b, 2));
  tirx_expr *tid = tirx_let(b, "tid", tirx_thread_linear(b));
  tirx_expr *L = tirx_let(b, "L", tirx_load(b, cl, TIRX_EXPRS(bi)));
  tirx_expr *npages = tirx_let(b, "npages", tirx_ceildiv(b, L, I(b, P)));
  tirx_expr *ntiles = tirx_let(b, "ntiles", tirx_ceildiv(b, L, I(b, N)));
  tirx_expr *t0 = tirx_let(b, "t0", tirx_mul(b, sp, tps));
  tirx_expr *t1 = tirx_let(b, "t1", tirx_min(b, ntiles, tirx_add(b, t0, tps)));
  tirx_expr *last = tirx_let(b, "last", tirx_sub(b, L, I(b, s->ql))); /* row qi sees <= last + qi */

  /* q rows in f32; m = NEG_BIG, l = 0 */
  tirx_expr *i = tirx_for_begin(b, "i", tid, I(b, R * D), I(b, T), TIRX_LOOP_SERIAL);
  {
    tirx_expr *r = tirx_let(b, "r", tirx_div(b, i, I(b, D)));
    tirx_expr *col = tirx_let(b, "col", tirx_mod(b, i, I(b, D)));
    tirx_expr *h = tirx_add(b, tirx_mul(b, kvh, I(b, G)), tirx_mod(b, r, I(b, G)));
    tirx_expr *v = tirx_load(b, q, TIRX_EXPRS(bi, tirx_div(b, r, I(b, G)), h, col));
    tirx_store(b, qs, TIRX_EXPRS(r, col), tirx_cast(b, v, TIRX_F32));
  }
  tirx_for_end(b);
  tirx_if_begin(b, tirx_lt(b, tid, I(b, R)));
  tirx_store(b, ms, TIRX_EXPRS(I(b, 0), tid), F(b, NEG_BIG));
  tirx_store(b, ms, TIRX_EXPRS(I(b, 1), tid), F(b, 0.0));
  tirx_store(b, ms, TIRX_EXPRS(I(b, 2), tid), F(b, 1.0));
  tirx_if_end(b);

  /* the output accumulators: rows rg2 + CG * k of column col2 */
  tirx_expr *col2 = tirx_let(b, "col2", tirx_mod(b, tid, I(b, D)));
  tirx_expr *rg2 = tirx_let(b, "rg2", tirx_div(b, tid, I(b, D)));
  tirx_expr *acc[TIRX_DECODE_MAX_ROWS];
  tirx_expr *orow[TIRX_DECODE_MAX_ROWS];
  for (int k = 0; k < RT; k++) {
    char nm[16];
    snprintf(nm, sizeof nm, "o%d", k);
    acc[k] = tirx_var(b, nm, TIRX_F32, F(b, 0.0));
    snprintf(nm, sizeof nm, "orow%d", k);
    /* clamped to a real row for the reads; rows >= R are never written */
    orow[k] = tirx_let(b, nm, tirx_min(b, tirx_add(b, rg2, I(b, CG * k)), I(b, R - 1)));
  }
  tirx_sync_threads(b);

  /* The pages of tile t into stage st: those the sequence has (ids from the table). */
  tirx_config cpa = {.family = "cp_async"};
#define FETCH(t_, st_)                                                                          \
  for (int pp = 0; pp < NP; pp++) {                                                             \
    tirx_expr *slot = tirx_add(b, tirx_mul(b, (t_), I(b, NP)), I(b, pp));                      \
    tirx_if_begin(b, tirx_lt(b, slot, npages));                                                 \
    tirx_expr *pid = tirx_let(b, "pid", tirx_load(b, bt, TIRX_EXPRS(bi, slot)));                \
    tirx_expr *row = tirx_add(b, tirx_mul(b, (st_), I(b, NP)), I(b, pp));                       \
    tirx_copy_async(b, tirx_region_new(b, Ks, TIRX_EXPRS(row, I(b, 0), I(b, 0), I(b, 0)),       \
                                       (int64_t[]){1, P, 1, D}),                                \
                    tirx_region_new(b, kc, TIRX_EXPRS(pid, I(b, 0), kvh, I(b, 0)),              \
                                    (int64_t[]){1, P, 1, D}), &cpa);                            \
    tirx_copy_async(b, tirx_region_new(b, Vs, TIRX_EXPRS(row, I(b, 0), I(b, 0), I(b, 0)),       \
                                       (int64_t[]){1, P, 1, D}),                                \
                    tirx_region_new(b, vc, TIRX_EXPRS(pid, I(b, 0), kvh, I(b, 0)),              \
                                    (int64_t[]){1, P, 1, D}), &cpa);                            \
    tirx_if_end(b);                                                                             \
  }

  tirx_if_begin(b, tirx_lt(b, t0, t1));
  FETCH(t0, I(b, 0));
  tirx_if_end(b);
  tirx_cp_async_commit(b);

  tirx_expr *t = tirx_for_begin(b, "t", t0, t1, NULL, TIRX_LOOP_SERIAL);
  {
    tirx_expr *st = tirx_let(b, "st", tirx_bit_and(b, tirx_sub(b, t, t0), I(b, 1)));
    tirx_expr *nt = tirx_let(b, "nt", tirx_add(b, t, I(b, 1)));
    tirx_if_begin(b, tirx_lt(b, nt, t1));
    FETCH(nt, tirx_bit_xor(b, st, I(b, 1)));
    tirx_if_end(b);
    tirx_cp_async_commit(b);
    tirx_cp_async_wait(b, 1); /* tile t is in; tile t + 1 may still be loading */
    tirx_sync_threads(b);

    /* scores: key j of the tile, rows rg + 2 k */
    tirx_expr *j = tirx_let(b, "j", tirx_mod(b, tid, I(b, N)));
    tirx_expr *rg = tirx_let(b, "rg", tirx_div(b, tid, I(b, N)));
    tirx_expr *krow = tirx_let(b, "krow", tirx_add(b, tirx_mul(b, st, I(b, NP)), tirx_div(b, j, I(b, P))));
    tirx_expr *koff = tirx_let(b, "koff", tirx_mod(b, j, I(b, P)));
    tirx_expr *sc[TIRX_DECODE_MAX_ROWS], *srow[TIRX_DECODE_MAX_ROWS];
    for (int k = 0; k < RS; k++) {
      char nm[16];
      snprintf(nm, sizeof nm, "s%d", k);
      sc[k] = tirx_var(b, nm, TIRX_F32, F(b, 0.0));
      snprintf(nm, sizeof nm, "srow%d", k);
      srow[k] = tirx_let(b, nm, tirx_min(b, tirx_add(b, rg, I(b, 2 * k)), I(b, R - 1)));
    }
    /* unrolled for few rows; a loop for many (fully unrolled, nvcc split the 16-byte reads) */
    tirx_expr *c8 = tirx_for_begin(b, "c8", I(b, 0), I(b, D / 8), NULL, RS <= 4 ? TIRX_LOOP_UNROLL : TIRX_LOOP_SERIAL);
    {
      tirx_tensor *kv = tirx_alloc_local(b, "kv", dt, TIRX_DIMS(1, 1, 1, 8), NULL);
      tirx_team_begin(b, TIRX_TEAM_THREAD);
      tirx_copy(b, tirx_whole(b, kv),
                tirx_region_new(b, Ks, TIRX_EXPRS(krow, koff, I(b, 0), tirx_mul(b, c8, I(b, 8))),
                                (int64_t[]){1, 1, 1, 8}), NULL);
      tirx_expr *kf[8];
      for (int e = 0; e < 8; e++)
        kf[e] = tirx_let(b, "kf", tirx_cast(b, tirx_load(b, kv, TIRX_EXPRS(I(b, 0), I(b, 0), I(b, 0), I(b, e))), TIRX_F32));
      for (int k = 0; k < RS; k++) { /* q[row, c8 * 8 ..] as two 16-byte shared vectors */
        tirx_tensor *qv = tirx_alloc_local(b, "qv", TIRX_F32, TIRX_DIMS(1, 8), NULL);
        tirx_copy(b, tirx_whole(b, qv),
                  tirx_region_new(b, qs, TIRX_EXPRS(srow[k], tirx_mul(b, c8, I(b, 8))), (int64_t[]){1, 8}), NULL);
        for (int e = 0; e < 8; e++)
          tirx_assign(b, sc[k], tirx_add(b, sc[k], tirx_mul(b, kf[e], tirx_load(b, qv, TIRX_EXPRS(I(b, 0), I(b, e))))));
      }
      tirx_team_end(b);
    }
    tirx_for_end(b);
    tirx_expr *pos = tirx_let(b, "pos", tirx_add(b, tirx_mul(b, t, I(b, N)), j));
    for (int k = 0; k < RS; k++) {
      tirx_expr *r = tirx_add(b, rg, I(b, 2 * k));
      tirx_if_begin(b, tirx_lt(b, r, I(b, R)));
      tirx_expr *ok = tirx_le(b, pos, tirx_add(b, last, tirx_div(b, srow[k], I(b, G))));
      tirx_store(b, Ss, TIRX_EXPRS(srow[k], j), tirx_select(b, ok, tirx_mul(b, sc[k], c), F(b, NEG_BIG)));
      tirx_if_end(b);
    }
    tirx_sync_threads(b);

    /* online softmax: warp w has rows w + 4 k, lanes keys lane and lane + 32 */
    tirx_expr *w = tirx_let(b, "w", tirx_warp_id(b)), *lane = tirx_let(b, "lane", tirx_lane_id(b));
    for (int k = 0; k < RW; k++) {
      tirx_expr *r = tirx_let(b, "sr", tirx_add(b, w, I(b, 4 * k)));
      tirx_if_begin(b, tirx_lt(b, r, I(b, R))); /* uniform in the warp */
      tirx_expr *a0 = tirx_let(b, "a0", tirx_load(b, Ss, TIRX_EXPRS(r, lane)));
      tirx_expr *a1 = tirx_let(b, "a1", tirx_load(b, Ss, TIRX_EXPRS(r, tirx_add(b, lane, I(b, 32)))));
      tirx_expr *mx = tirx_var(b, "mx", TIRX_F32, tirx_max(b, a0, a1));
      for (int sh = 16; sh >= 1; sh /= 2)
        tirx_assign(b, mx, tirx_max(b, mx, tirx_shfl_xor(b, mx, I(b, sh))));
      tirx_expr *mold = tirx_let(b, "mold", tirx_load(b, ms, TIRX_EXPRS(I(b, 0), r)));
      tirx_expr *mnew = tirx_let(b, "mnew", tirx_max(b, mold, mx));
      tirx_expr *muse = tirx_let(b, "muse", tirx_select(b, tirx_lt(b, mnew, F(b, -1.0e38)), F(b, 0.0), mnew));
      tirx_expr *p0 = tirx_let(b, "p0", tirx_exp2(b, tirx_sub(b, a0, muse)));
      tirx_expr *p1 = tirx_let(b, "p1", tirx_exp2(b, tirx_sub(b, a1, muse)));
      tirx_expr *sum = tirx_var(b, "sum", TIRX_F32, tirx_add(b, p0, p1));
      for (int sh = 16; sh >= 1; sh /= 2)
        tirx_assign(b, sum, tirx_add(b, sum, tirx_shfl_xor(b, sum, I(b, sh))));
      tirx_sync_warp(b); /* every lane has read its scores before P overwrites them */
      tirx_store(b, Ss, TIRX_EXPRS(r, lane), p0);
      tirx_store(b, Ss, TIRX_EXPRS(r, tirx_add(b, lane, I(b, 32))), p1);
      tirx_expr *alpha = tirx_let(b, "alpha", tirx_exp2(b, tirx_sub(b, mold, muse)));
      tirx_if_begin(b, tirx_eq(b, lane, I(b, 0)));
      tirx_store(b, ms, TIRX_EXPRS(I(b, 0), r), mnew);
      tirx_store(b, ms, TIRX_EXPRS(I(b, 1), r),
                 tirx_add(b, tirx_mul(b, tirx_load(b, ms, TIRX_EXPRS(I(b, 1), r)), alpha), sum));
      tirx_store(b, ms, TIRX_EXPRS(I(b, 2), r), alpha);
      tirx_if_end(b);
      tirx_if_end(b);
    }
    tirx_sync_threads(b);

    /* P V over the tile's keys below L */
    for (int k = 0; k < RT; k++)
      tirx_assign(b, acc[k], tirx_mul(b, acc[k], tirx_load(b, ms, TIRX_EXPRS(I(b, 2), orow[k]))));
    tirx_expr *nv = tirx_let(b, "nv", tirx_min(b, I(b, N), tirx_sub(b, L, tirx_mul(b, t, I(b, N)))));
    /* keys in fours (P of a row as one 16-byte shared vector), then the rest one by one; keys
     * at or past L are never read (their V rows may hold anything) */
    tirx_expr *j4 = tirx_for_begin(b, "j4", I(b, 0), tirx_div(b, nv, I(b, 4)), NULL, TIRX_LOOP_SERIAL);
    {
      tirx_expr *v[4];
      for (int e = 0; e < 4; e++) {
        tirx_expr *jj = tirx_add(b, tirx_mul(b, j4, I(b, 4)), I(b, e));
        v[e] = tirx_let(b, "v", tirx_cast(b, tirx_load(b, Vs, TIRX_EXPRS(tirx_add(b, tirx_mul(b, st, I(b, NP)), tirx_div(b, jj, I(b, P))),
                                                                        tirx_mod(b, jj, I(b, P)), I(b, 0), col2)),
                                          TIRX_F32));
      }
      tirx_team_begin(b, TIRX_TEAM_THREAD);
      for (int k = 0; k < RT; k++) {
        tirx_tensor *pv = tirx_alloc_local(b, "pv", TIRX_F32, TIRX_DIMS(1, 4), NULL);
        tirx_copy(b, tirx_whole(b, pv),
                  tirx_region_new(b, Ss, TIRX_EXPRS(orow[k], tirx_mul(b, j4, I(b, 4))), (int64_t[]){1, 4}), NULL);
        for (int e = 0; e < 4; e++)
          tirx_assign(b, acc[k], tirx_add(b, acc[k], tirx_mul(b, tirx_load(b, pv, TIRX_EXPRS(I(b, 0), I(b, e))), v[e])));
      }
      tirx_team_end(b);
    }
    tirx_for_end(b);
    tirx_expr *jj = tirx_for_begin(b, "jj", tirx_mul(b, tirx_div(b, nv, I(b, 4)), I(b, 4)), nv, NULL, TIRX_LOOP_SERIAL);
    {
      tirx_expr *v = tirx_let(b, "v", tirx_cast(b, tirx_load(b, Vs, TIRX_EXPRS(tirx_add(b, tirx_mul(b, st, I(b, NP)),
                                                                                        tirx_div(b, jj, I(b, P))),
                                                                              tirx_mod(b, jj, I(b, P)), I(b, 0), col2)),
                                             TIRX_F32));
      for (int k = 0; k < RT; k++)
        tirx_assign(b, acc[k], tirx_add(b, acc[k], tirx_mul(b, tirx_load(b, Ss, TIRX_EXPRS(orow[k], jj)), v)));
    }
    tirx_for_end(b);
    tirx_sync_threads(b); /* the stage and S are free for the next tile */
  }
  tirx_for_end(b);

  /* outputs */
  for (int k = 0; k < RT; k++) {
    tirx_expr *r = tirx_add(b, rg2, I(b, CG * k));
    tirx_if_begin(b, tirx_lt(b, r, I(b, R)));
    tirx_expr *m = tirx_load(b, ms, TIRX_EXPRS(I(b, 0), orow[k]));
    tirx_expr *l = tirx_let(b, "l", tirx_load(b, ms, TIRX_EXPRS(I(b, 1), orow[k])));
    if (split) {
      tirx_expr *prow = tirx_let(b, "prow", tirx_add(b, tirx_mul(b, tirx_add(b, tirx_mul(b, tirx_add(b, tirx_mul(b, bi, I(b, s->hkv)), kvh), splits), sp), I(b, R)), orow[k]));
      tirx_store(b, po, TIRX_EXPRS(prow, col2), acc[k]);
      tirx_if_begin(b, tirx_eq(b, col2, I(b, 0)));
      tirx_store(b, pml, TIRX_EXPRS(prow, I(b, 0)), m);
      tirx_store(b, pml, TIRX_EXPRS(prow, I(b, 1)), l);
      tirx_if_end(b);
    } else {
      tirx_expr *qi = tirx_div(b, orow[k], I(b, G));
      tirx_expr *h = tirx_let(b, "h", tirx_add(b, tirx_mul(b, kvh, I(b, G)), tirx_mod(b, orow[k], I(b, G))));
      tirx_store(b, o, TIRX_EXPRS(bi, qi, h, col2), tirx_cast(b, tirx_div(b, acc[k], l), dt));
      if (lse) {
        tirx_if_begin(b, tirx_eq(b, col2, I(b, 0)));
        tirx_store(b, lse, TIRX_EXPRS(bi, qi, h), tirx_mul(b, tirx_add(b, m, tirx_log2(b, l)), F(b, 0.6931471805599453)));
        tirx_if_end(b);
      }
    }
    tirx_if_end(b);
  }
#undef FETCH
  return tirx__kernels_finish(b, "tirx_kernels_decode_build", out);
}

/* COMBINE: grid B * q_len * H, D threads: row (b, qi, h) merges its splits in split order. */
static tirx_status build_combine(const dspec *s, tirx_kernel **out) {
  const int G = s->h / s->hkv, R = G * s->ql, D = s->d;
  tirx_dtype dt = s->dt;
  char name[64];
  snprintf(name, sizeof name, "decode_combine_%s_d%d_g%d_q%d%s", tirx_dtype_name(dt), D, G, s->ql,
           s->lse ? "_lse" : "");
  tirx_builder *b = tirx_builder_create(name);
  tirx_expr *B = dyn_int(b, "batch"), *splits = dyn_int(b, "splits"), *prows = dyn_int(b, "prows");
  tirx_tensor *po = tirx_param_tensor(b, "part_o", TIRX_F32, TIRX_EXPRS(prows, I(b, D)), NULL);
  tirx_tensor *pml = tirx_param_tensor(b, "part_ml", TIRX_F32, TIRX_EXPRS(prows, I(b, 2)), NULL);
  tirx_tensor *o = strided(b, "o", dt, 4, (tirx_expr *[]){B, I(b, s->ql), I(b, s->h), I(b, D)});
  tirx_tensor *lse = s->lse ? strided(b, "lse", TIRX_F32, 3, (tirx_expr *[]){B, I(b, s->ql), I(b, s->h)}) : NULL;
  tirx_set_block(b, D, 1, 1);
  tirx_set_grid(b, tirx_mul(b, B, I(b, s->ql * s->h)), NULL, NULL);
  tirx_expr *idx = tirx_let(b, "idx", tirx_block_idx(b, 0));
  tirx_expr *bi = tirx_let(b, "bi", tirx_div(b, idx, I(b, s->ql * s->h)));
  tirx_expr *rem = tirx_let(b, "rem", tirx_mod(b, idx, I(b, s->ql * s->h)));
  tirx_expr *qi = tirx_let(b, "qi", tirx_div(b, rem, I(b, s->h)));
  tirx_expr *h = tirx_let(b, "h", tirx_mod(b, rem, I(b, s->h)));
  tirx_expr *r = tirx_let(b, "r", tirx_add(b, tirx_mul(b, qi, I(b, G)), tirx_mod(b, h, I(b, G))));
  tirx_expr *base = tirx_let(b, "base", tirx_mul(b, tirx_add(b, tirx_mul(b, bi, I(b, s->hkv)), tirx_div(b, h, I(b, G))), splits));
  tirx_expr *col = tirx_let(b, "col", tirx_thread_linear(b));
  tirx_expr *M = tirx_var(b, "M", TIRX_F32, F(b, NEG_BIG));
  tirx_expr *sp = tirx_for_begin(b, "sp", I(b, 0), splits, NULL, TIRX_LOOP_SERIAL);
  tirx_assign(b, M, tirx_max(b, M, tirx_load(b, pml, TIRX_EXPRS(tirx_add(b, tirx_mul(b, tirx_add(b, base, sp), I(b, R)), r), I(b, 0)))));
  tirx_for_end(b);
  tirx_expr *Ls = tirx_var(b, "Ls", TIRX_F32, F(b, 0.0)), *acc = tirx_var(b, "acc", TIRX_F32, F(b, 0.0));
  sp = tirx_for_begin(b, "sp", I(b, 0), splits, NULL, TIRX_LOOP_SERIAL);
  {
    tirx_expr *row = tirx_let(b, "row", tirx_add(b, tirx_mul(b, tirx_add(b, base, sp), I(b, R)), r));
    tirx_expr *wt = tirx_let(b, "wt", tirx_exp2(b, tirx_sub(b, tirx_load(b, pml, TIRX_EXPRS(row, I(b, 0))), M)));
    tirx_assign(b, Ls, tirx_add(b, Ls, tirx_mul(b, tirx_load(b, pml, TIRX_EXPRS(row, I(b, 1))), wt)));
    tirx_assign(b, acc, tirx_add(b, acc, tirx_mul(b, tirx_load(b, po, TIRX_EXPRS(row, col)), wt)));
  }
  tirx_for_end(b);
  tirx_store(b, o, TIRX_EXPRS(bi, qi, h, col), tirx_cast(b, tirx_div(b, acc, Ls), dt));
  if (lse) {
    tirx_if_begin(b, tirx_eq(b, col, I(b, 0)));
    tirx_store(b, lse, TIRX_EXPRS(bi, qi, h), tirx_mul(b, tirx_add(b, M, tirx_log2(b, Ls)), F(b, 0.6931471805599453)));
    tirx_if_end(b);
  }
  return tirx__kernels_finish(b, "tirx_kernels_decode_build", out);
}

/* reshape_and_cache: grid num_tokens, 128 threads; token t's H_kv * D elements of k and v into
 * slot slots[t] of the caches, unless it is negative or past the caches. */
static tirx_status build_cache(const dspec *s, tirx_kernel **out) {
  const int D = s->d, P = s->p, HD = s->hkv * s->d;
  tirx_dtype dt = s->dt;
  char name[64];
  snprintf(name, sizeof name, "reshape_and_cache_%s_d%d_p%d_h%d", tirx_dtype_name(dt), D, P, s->hkv);
  tirx_builder *b = tirx_builder_create(name);
  tirx_expr *NT = dyn_int(b, "num_tokens"), *NPG = dyn_int(b, "num_pages");
  tirx_tensor *k = strided(b, "k", dt, 3, (tirx_expr *[]){NT, I(b, s->hkv), I(b, D)});
  tirx_tensor *v = strided(b, "v", dt, 3, (tirx_expr *[]){NT, I(b, s->hkv), I(b, D)});
  tirx_tensor *kc = tirx_param_tensor(b, "k_cache", dt, TIRX_EXPRS(NPG, I(b, P), I(b, s->hkv), I(b, D)), NULL);
  tirx_tensor *vc = tirx_param_tensor(b, "v_cache", dt, TIRX_EXPRS(NPG, I(b, P), I(b, s->hkv), I(b, D)), NULL);
  tirx_tensor *sm = tirx_param_tensor(b, "slot_mapping", TIRX_I32, TIRX_EXPRS(NT), NULL);
  tirx_set_block(b, T, 1, 1);
  tirx_set_grid(b, NT, NULL, NULL);
  tirx_expr *tok = tirx_let(b, "tok", tirx_block_idx(b, 0));
  tirx_expr *slot = tirx_let(b, "slot", tirx_load(b, sm, TIRX_EXPRS(tok)));
  tirx_if_begin(b, tirx_and(b, tirx_ge(b, slot, I(b, 0)),
                            tirx_lt(b, tirx_cast(b, slot, TIRX_I64), tirx_mul(b, tirx_cast(b, NPG, TIRX_I64), I(b, P)))));
  tirx_expr *page = tirx_let(b, "page", tirx_div(b, slot, I(b, P)));
  tirx_expr *off = tirx_let(b, "off", tirx_mod(b, slot, I(b, P)));
  tirx_expr *e = tirx_for_begin(b, "e", tirx_thread_linear(b), I(b, HD), I(b, T), TIRX_LOOP_SERIAL);
  {
    tirx_expr *hh = tirx_let(b, "hh", tirx_div(b, e, I(b, D)));
    tirx_expr *cc = tirx_let(b, "cc", tirx_mod(b, e, I(b, D)));
    tirx_store(b, kc, TIRX_EXPRS(page, off, hh, cc), tirx_load(b, k, TIRX_EXPRS(tok, hh, cc)));
    tirx_store(b, vc, TIRX_EXPRS(page, off, hh, cc), tirx_load(b, v, TIRX_EXPRS(tok, hh, cc)));
  }
  tirx_for_end(b);
  tirx_if_end(b);
  return tirx__kernels_finish(b, "tirx_kernels_reshape_and_cache_build", out);
}

enum { KIND_CACHE = 3 };

static tirx_status dbuild(const dspec *s, tirx_kernel **out) {
  if ((int)s->which == KIND_CACHE) return build_cache(s, out);
  return s->which == TIRX_DECODE_COMBINE ? build_combine(s, out) : build_attention(s, out);
}

/* ---- checks of the shapes ---- */

static const char *dname(tirx_dtype t) {
  const char *s = tirx_dtype_name(t);
  return s ? s : "invalid";
}

static tirx_status check_dims(const char *fn, tirx_dtype dt, int d, int p, int h, int hkv,
                              int ql) {
  if (dt != TIRX_F16 && dt != TIRX_BF16)
    return tirx__error(TIRX_E_INVALID_ARG, "%s: dtype is %s, expected f16 or bf16", fn, dname(dt));
  if (d != 64 && d != 128)
    return tirx__error(TIRX_E_INVALID_ARG, "%s: d is %d, expected 64 or 128", fn, d);
  if (p != 16 && p != 32 && p != 64)
    return tirx__error(TIRX_E_INVALID_ARG, "%s: page_size is %d, expected 16, 32 or 64", fn, p);
  if (hkv < 1 || h < 1 || h % hkv)
    return tirx__error(TIRX_E_INVALID_ARG, "%s: h is %d and h_kv %d, expected h a multiple of "
                       "h_kv >= 1", fn, h, hkv);
  if (ql < 1 || ql > 8)
    return tirx__error(TIRX_E_INVALID_ARG, "%s: q_len is %d, expected 1 to 8", fn, ql);
  if ((h / hkv) * ql > TIRX_DECODE_MAX_ROWS)
    return tirx__error(TIRX_E_INVALID_ARG, "%s: (h / h_kv) * q_len is %d * %d, expected at most "
                       "%d", fn, h / hkv, ql, TIRX_DECODE_MAX_ROWS);
  return TIRX_OK;
}

tirx_status tirx_kernels_decode_build(tirx_decode_kernel which, tirx_dtype dtype, int d,
                                      int page_size, int h, int h_kv, int q_len, bool lse,
                                      tirx_kernel **out) {
  static const char fn[] = "tirx_kernels_decode_build";
  if (!out)
    return tirx__error(TIRX_E_NULL_ARG, "%s: out is NULL", fn);
  *out = NULL;
  if ((unsigned)which > TIRX_DECODE_COMBINE)
    return tirx__error(TIRX_E_INVALID_ARG, "%s: which is %d, expected a tirx_decode_kernel (0 "
                       "to 2)", fn, (int)which);
  tirx_status st = check_dims(fn, dtype, d, page_size, h, h_kv, q_len);
  if (st != TIRX_OK)
    return st;
  dspec s = {which, dtype, d, page_size, h, h_kv, q_len, lse && which != TIRX_DECODE_PARTIAL};
  return dbuild(&s, out);
}

tirx_status tirx_kernels_reshape_and_cache_build(tirx_dtype dtype, int d, int page_size, int h_kv,
                                                 tirx_kernel **out) {
  static const char fn[] = "tirx_kernels_reshape_and_cache_build";
  if (!out)
    return tirx__error(TIRX_E_NULL_ARG, "%s: out is NULL", fn);
  *out = NULL;
  tirx_status st = check_dims(fn, dtype, d, page_size, h_kv, h_kv, 1);
  if (st != TIRX_OK)
    return st;
  dspec s = {(tirx_decode_kernel)KIND_CACHE, dtype, d, page_size, h_kv, h_kv, 1, false};
  return dbuild(&s, out);
}

/* ---- the split choice ---- */

/* The caller's options (NULL: defaults) checked into *o. */
static tirx_status check_options(const char *fn, const tirx_decode_options *in,
                                 tirx_decode_options *o) {
  if (tirx__ext_in(fn, "opts", &tirx__ext_decode_options, in, o) != TIRX_OK)
    return TIRX_E_INVALID_ARG;
  if (!(o->scale >= 0.0) || isinf(o->scale))
    return tirx__error(TIRX_E_INVALID_ARG, "%s: opts->scale is %g, expected 0 (1 / sqrt(D)) or "
                       "a finite scale > 0", fn, o->scale);
  if (o->splits < 0 || o->splits > TIRX_DECODE_MAX_SPLITS)
    return tirx__error(TIRX_E_INVALID_ARG, "%s: opts->splits is %d, expected 0 (chosen) to %d",
                       fn, o->splits, TIRX_DECODE_MAX_SPLITS);
  if (o->sms < 0 || o->sms > 1024)
    return tirx__error(TIRX_E_INVALID_ARG, "%s: opts->sms is %d, expected 0 (132) to 1024", fn,
                       o->sms);
  return TIRX_OK;
}

static tirx_decode_plan plan_of(const tirx_decode_options *o, int batch, int h, int hkv, int ql,
                                int d, int64_t maxl) {
  int sms = o && o->sms ? o->sms : 132;
  int64_t tiles = (maxl + N - 1) / N, ctas = (int64_t)batch * hkv, splits;
  if (o && o->splits)
    splits = o->splits;
  else if (ctas >= 2 * (int64_t)sms) /* two CTAs an SM keep two tiles each in flight */
    splits = 1;
  else {
    splits = (2 * sms + ctas - 1) / ctas;
    int64_t by_len = tiles / 4; /* at least 4 tiles a split */
    if (splits > by_len) splits = by_len;
    if (splits > TIRX_DECODE_MAX_SPLITS) splits = TIRX_DECODE_MAX_SPLITS;
    if (splits < 1) splits = 1;
  }
  if (splits > tiles) splits = tiles;
  int64_t tps = (tiles + splits - 1) / splits;
  splits = (tiles + tps - 1) / tps;
  tirx_decode_plan p = {.size = sizeof p, .splits = (int)splits, .tiles_per_split = (int)tps};
  if (splits > 1)
    p.workspace_bytes = (int64_t)batch * hkv * splits * (h / hkv) * ql * (d + 2) * 4;
  return p;
}

tirx_status tirx_kernels_decode_plan(const tirx_decode_options *opts, int batch, int h, int h_kv,
                                     int q_len, int d, int64_t max_context,
                                     tirx_decode_plan *out) {
  static const char fn[] = "tirx_kernels_decode_plan";
  if (!out)
    return tirx__error(TIRX_E_NULL_ARG, "%s: out is NULL", fn);
  size_t bytes;
  if (tirx__ext_out(fn, "out", &tirx__ext_decode_plan, out, &bytes) != TIRX_OK)
    return TIRX_E_INVALID_ARG;
  tirx_decode_options o;
  tirx_status st = check_options(fn, opts, &o);
  if (st != TIRX_OK)
    return st;
  if (batch < 1 || h < 1 || h_kv < 1 || q_len < 1 || d < 1 || max_context < 1)
    return tirx__error(TIRX_E_INVALID_ARG, "%s: batch, h, h_kv, q_len, d, max_context are %d, %d, "
                       "%d, %d, %d, %lld, expected >= 1", fn, batch, h, h_kv, q_len, d,
                       (long long)max_context);
  if (h % h_kv)
    return tirx__error(TIRX_E_INVALID_ARG, "%s: h is %d, expected a multiple of h_kv (%d)", fn, h,
                       h_kv);
  tirx_decode_plan p = plan_of(&o, batch, h, h_kv, q_len, d, max_context);
  tirx__ext_write(out, &p, bytes);
  return TIRX_OK;
}

/* ---- the ops ---- */

typedef struct dkey {
  int32_t tag, which, dtype, d, p, h, hkv, ql, lse;
} dkey;

static tirx_status build_for_op(const void *ctx, tirx_kernel **out) { return dbuild(ctx, out); }

static tirx_status get_kernel(const char *fn, const dspec *s, tirx_kernel **k) {
  dkey key;
  memset(&key, 0, sizeof key);
  key.tag = 0x44454344; /* "DECD": apart from the other ops' keys */
  key.which = (int32_t)s->which, key.dtype = (int32_t)s->dt, key.d = s->d, key.p = s->p;
  key.h = s->h, key.hkv = s->hkv, key.ql = s->ql, key.lse = s->lse;
  tirx_status st = tirx__kernels_get(&key, sizeof key, build_for_op, s, k);
  if (st != TIRX_OK)
    return tirx__error(st, "%s: %s", fn, tirx_last_error());
  return TIRX_OK;
}

static tirx_status launch(const char *fn, tirx_runtime *rt, const dspec *s, const tirx_arg *args,
                          int nargs, void *stream) {
  tirx_kernel *k;
  tirx_status st = get_kernel(fn, s, &k);
  if (st != TIRX_OK)
    return st;
  st = tirx__kernels_launch(fn, rt, k, args, nargs, stream);
  tirx_kernel_release(k);
  return st;
}

/* A 16-bit tensor of rank n, extents >= 1, of dtype f16/bf16 (want: TIRX_DTYPE_COUNT for any). */
static tirx_status check_t(const char *fn, const char *name, const tirx_tensor_arg *t, int rank,
                           tirx_dtype want) {
  tirx_status st = tirx__check_tensor(fn, name, t, rank);
  if (st != TIRX_OK)
    return st;
  if (want != TIRX_DTYPE_COUNT)
    return tirx__check_dtype(fn, name, t, want);
  if (t->dtype != TIRX_F16 && t->dtype != TIRX_BF16)
    return tirx__error(TIRX_E_TYPE, "%s: %s has dtype %s, expected f16 or bf16", fn, name,
                       dname(t->dtype));
  return TIRX_OK;
}

static const int64_t *strides_of(const tirx_tensor_arg *t) { return t->strides; }

/* The caches: [num_pages, page_size, H_kv, D] dense, of dtype; k_cache fixes the shape. */
static tirx_status check_caches(const char *fn, const tirx_tensor_arg *kc,
                                const tirx_tensor_arg *vc, tirx_dtype dt, int d) {
  tirx_status st;
  if ((st = check_t(fn, "k_cache", kc, 4, dt)) != TIRX_OK ||
      (st = check_t(fn, "v_cache", vc, 4, dt)) != TIRX_OK)
    return st;
  if (kc->shape[3] != d)
    return tirx__error(TIRX_E_INVALID_ARG, "%s: k_cache has head dim %lld, expected D = %d", fn,
                       (long long)kc->shape[3], d);
  if (kc->shape[1] != 16 && kc->shape[1] != 32 && kc->shape[1] != 64)
    return tirx__error(TIRX_E_INVALID_ARG, "%s: k_cache has page size %lld, expected 16, 32 or 64",
                       fn, (long long)kc->shape[1]);
  if (kc->shape[0] > INT32_MAX || kc->shape[2] > 65535)
    return tirx__error(TIRX_E_INVALID_ARG, "%s: k_cache has %lld pages and %lld heads, expected at "
                       "most 2^31 - 1 and 65535", fn, (long long)kc->shape[0],
                       (long long)kc->shape[2]);
  if ((st = tirx__check_shape(fn, "v_cache", vc, kc->shape,
                              "k_cache's [num_pages, page_size, H_kv, D]")) != TIRX_OK ||
      (st = tirx__check_dense(fn, "k_cache", kc)) != TIRX_OK ||
      (st = tirx__check_dense(fn, "v_cache", vc)) != TIRX_OK)
    return st;
  return TIRX_OK;
}

tirx_status tirx_op_decode_attention(tirx_runtime *rt, const tirx_decode_options *opts,
                                     const tirx_tensor_arg *q, const tirx_tensor_arg *k_cache,
                                     const tirx_tensor_arg *v_cache,
                                     const tirx_tensor_arg *block_table,
                                     const tirx_tensor_arg *context_lens,
                                     const tirx_tensor_arg *o, const tirx_tensor_arg *lse,
                                     void *stream) {
  static const char fn[] = "tirx_op_decode_attention";
  if (!rt)
    return tirx__error(TIRX_E_NULL_ARG, "%s: rt is NULL", fn);
  if (!opts)
    return tirx__error(TIRX_E_NULL_ARG, "%s: opts is NULL, expected opts->context_lens_host (the "
                       "B context lengths in host memory)", fn);
  tirx_decode_options copy;
  tirx_status st = check_options(fn, opts, &copy);
  if (st != TIRX_OK)
    return st;
  opts = &copy;
  if ((st = check_t(fn, "q", q, 4, TIRX_DTYPE_COUNT)) != TIRX_OK)
    return st;
  tirx_dtype dt = q->dtype;
  const int64_t B = q->shape[0], QL = q->shape[1], H = q->shape[2], D = q->shape[3];
  if (QL > 8)
    return tirx__error(TIRX_E_INVALID_ARG, "%s: q has shape [%lld, %lld, %lld, %lld], expected "
                       "q_len (dimension 1) 1 to 8", fn, (long long)B, (long long)QL,
                       (long long)H, (long long)D);
  if (D != 64 && D != 128)
    return tirx__error(TIRX_E_INVALID_ARG, "%s: q has head dim %lld, expected 64 or 128", fn,
                       (long long)D);
  if (B > 65535)
    return tirx__error(TIRX_E_INVALID_ARG, "%s: q has batch %lld, expected at most 65535", fn,
                       (long long)B);
  if ((st = check_caches(fn, k_cache, v_cache, dt, (int)D)) != TIRX_OK)
    return st;
  const int64_t NPG = k_cache->shape[0], P = k_cache->shape[1], HKV = k_cache->shape[2];
  if (H % HKV)
    return tirx__error(TIRX_E_INVALID_ARG, "%s: q has %lld heads, expected a multiple of "
                       "k_cache's %lld KV heads", fn, (long long)H, (long long)HKV);
  if (H / HKV * QL > TIRX_DECODE_MAX_ROWS)
    return tirx__error(TIRX_E_INVALID_ARG, "%s: (H / H_kv) * q_len is %lld * %lld, expected at "
                       "most %d", fn, (long long)(H / HKV), (long long)QL, TIRX_DECODE_MAX_ROWS);
  if ((st = check_t(fn, "block_table", block_table, 2, TIRX_I32)) != TIRX_OK ||
      (st = check_t(fn, "context_lens", context_lens, 1, TIRX_I32)) != TIRX_OK ||
      (st = check_t(fn, "o", o, 4, dt)) != TIRX_OK ||
      (st = tirx__check_shape(fn, "o", o, q->shape, "q's [B, q_len, H, D]")) != TIRX_OK)
    return st;
  const int64_t MP = block_table->shape[1];
  if (block_table->shape[0] != B)
    return tirx__error(TIRX_E_INVALID_ARG, "%s: block_table has %lld rows, expected B = %lld", fn,
                       (long long)block_table->shape[0], (long long)B);
  if (MP > INT32_MAX)
    return tirx__error(TIRX_E_INVALID_ARG, "%s: block_table has %lld columns, expected at most "
                       "2^31 - 1", fn, (long long)MP);
  if ((st = tirx__check_shape(fn, "context_lens", context_lens, (int64_t[]){B}, "[B]")) != TIRX_OK ||
      (st = tirx__check_dense(fn, "context_lens", context_lens)) != TIRX_OK)
    return st;
  if (lse) {
    if ((st = check_t(fn, "lse", lse, 3, TIRX_F32)) != TIRX_OK ||
        (st = tirx__check_shape(fn, "lse", lse, (int64_t[]){B, QL, H}, "[B, q_len, H]")) != TIRX_OK)
      return st;
  }
  const int32_t *lens = opts->context_lens_host;
  if (!lens)
    return tirx__error(TIRX_E_NULL_ARG, "%s: opts->context_lens_host is NULL, expected the B "
                       "context lengths in host memory", fn);
  int64_t maxl = 0;
  for (int64_t i = 0; i < B; i++) {
    if (lens[i] < QL)
      return tirx__error(TIRX_E_INVALID_ARG, "%s: opts->context_lens_host[%lld] is %d, expected "
                         ">= q_len (%lld) and >= 1", fn, (long long)i, (int)lens[i], (long long)QL);
    if ((lens[i] + P - 1) / P > MP)
      return tirx__error(TIRX_E_INVALID_ARG, "%s: block_table has %lld columns, but context "
                         "length %d (sequence %lld) needs %lld pages of %lld", fn, (long long)MP,
                         (int)lens[i], (long long)i, (long long)((lens[i] + P - 1) / P),
                         (long long)P);
    if (lens[i] > maxl) maxl = lens[i];
  }

  const int G = (int)(H / HKV);
  tirx_decode_plan pl = plan_of(opts, (int)B, (int)H, (int)HKV, (int)QL, (int)D, maxl);
  double scale = opts->scale > 0 ? opts->scale : 1.0 / sqrt((double)D);
  float c = (float)(scale * 1.4426950408889634); /* log2(e) */
  dspec s = {pl.splits > 1 ? TIRX_DECODE_PARTIAL : TIRX_DECODE_UNSPLIT, dt, (int)D, (int)P,
             (int)H, (int)HKV, (int)QL, lse != NULL};
  int64_t bt_st[2] = {MP, 1};
  const int64_t *bts = block_table->strides ? block_table->strides : bt_st;
  tirx_arg head[10] = {
      tirx_arg_i32((int32_t)B),
      tirx_arg_i32((int32_t)NPG),
      tirx_arg_i32((int32_t)MP),
      tirx_arg_i32(pl.splits),
      tirx_arg_i32(pl.tiles_per_split),
      tirx_arg_f32(c),
      tirx_arg_tensor(q->data, dt, 4, q->shape, strides_of(q)),
      tirx_arg_tensor(k_cache->data, dt, 4, k_cache->shape, NULL),
      tirx_arg_tensor(v_cache->data, dt, 4, v_cache->shape, NULL),
      tirx_arg_tensor(block_table->data, TIRX_I32, 2, block_table->shape, bts),
  };
  tirx_arg args[14];
  memcpy(args, head, sizeof head);
  args[10] = tirx_arg_tensor(context_lens->data, TIRX_I32, 1, context_lens->shape, NULL);
  if (pl.splits == 1) {
    args[11] = tirx_arg_tensor(o->data, dt, 4, o->shape, strides_of(o));
    int n = 12;
    if (lse) args[n++] = tirx_arg_tensor(lse->data, TIRX_F32, 3, lse->shape, strides_of(lse));
    return launch(fn, rt, &s, args, n, stream);
  }
  int64_t prows = B * HKV * pl.splits * G * QL;
  if (prows > INT32_MAX)
    return tirx__error(TIRX_E_INVALID_ARG, "%s: %lld splits of B = %lld sequences need %lld "
                       "workspace rows, expected at most 2^31 - 1 (fewer opts->splits)", fn,
                       (long long)pl.splits, (long long)B, (long long)prows);
  /* Build both kernels before allocating, so that a build error comes first. */
  dspec cs = s;
  cs.which = TIRX_DECODE_COMBINE;
  tirx_kernel *k1, *k2;
  if ((st = get_kernel(fn, &s, &k1)) != TIRX_OK)
    return st;
  if ((st = get_kernel(fn, &cs, &k2)) != TIRX_OK) {
    tirx_kernel_release(k1);
    return st;
  }
  /* Without a device there is no workspace: a placeholder (never read), and the launch says
   * TIRX_E_NO_DEVICE as every op's does (or, preparing, prepares). */
  void *wsp = (void *)(uintptr_t)4096;
  /* the runtime's scratch for the stream, shared with split-K (kernels_internal.h) */
  pthread_mutex_lock(&tirx__kernels_scratch_lock);
  if (tirx_runtime_has_device(rt))
    st = tirx__runtime_scratch(rt, fn, stream, (size_t)pl.workspace_bytes, &wsp);
  if (st == TIRX_OK) {
    float *part_o = wsp, *part_ml = (float *)wsp + prows * D;
    int64_t po_shape[2] = {prows, D}, pml_shape[2] = {prows, 2};
    tirx_arg pa = tirx_arg_tensor(part_o, TIRX_F32, 2, po_shape, NULL);
    tirx_arg pm = tirx_arg_tensor(part_ml, TIRX_F32, 2, pml_shape, NULL);
    args[11] = tirx_arg_i32((int32_t)prows);
    args[12] = pa, args[13] = pm;
    st = tirx__kernels_launch(fn, rt, k1, args, 14, stream);
    if (st == TIRX_OK) {
      tirx_arg ca[7] = {tirx_arg_i32((int32_t)B), tirx_arg_i32(pl.splits),
                        tirx_arg_i32((int32_t)prows), pa, pm,
                        tirx_arg_tensor(o->data, dt, 4, o->shape, strides_of(o))};
      int n = 6;
      if (lse) ca[n++] = tirx_arg_tensor(lse->data, TIRX_F32, 3, lse->shape, strides_of(lse));
      st = tirx__kernels_launch(fn, rt, k2, ca, n, stream);
    }
  }
  pthread_mutex_unlock(&tirx__kernels_scratch_lock);
  tirx_kernel_release(k1);
  tirx_kernel_release(k2);
  return st;
}

tirx_status tirx_op_reshape_and_cache(tirx_runtime *rt, const tirx_tensor_arg *k,
                                      const tirx_tensor_arg *v, const tirx_tensor_arg *k_cache,
                                      const tirx_tensor_arg *v_cache,
                                      const tirx_tensor_arg *slot_mapping, void *stream) {
  static const char fn[] = "tirx_op_reshape_and_cache";
  if (!rt)
    return tirx__error(TIRX_E_NULL_ARG, "%s: rt is NULL", fn);
  tirx_status st;
  if ((st = check_t(fn, "k_cache", k_cache, 4, TIRX_DTYPE_COUNT)) != TIRX_OK)
    return st;
  tirx_dtype dt = k_cache->dtype;
  const int64_t D = k_cache->shape[3];
  if (D != 64 && D != 128)
    return tirx__error(TIRX_E_INVALID_ARG, "%s: k_cache has head dim %lld, expected 64 or 128", fn,
                       (long long)D);
  if ((st = check_caches(fn, k_cache, v_cache, dt, (int)D)) != TIRX_OK ||
      (st = check_t(fn, "k", k, 3, dt)) != TIRX_OK || (st = check_t(fn, "v", v, 3, dt)) != TIRX_OK)
    return st;
  const int64_t NT = k->shape[0], HKV = k_cache->shape[2];
  if ((st = tirx__check_shape(fn, "k", k, (int64_t[]){NT, HKV, D}, "[num_tokens, H_kv, D]")) != TIRX_OK ||
      (st = tirx__check_shape(fn, "v", v, k->shape, "k's [num_tokens, H_kv, D]")) != TIRX_OK ||
      (st = check_t(fn, "slot_mapping", slot_mapping, 1, TIRX_I32)) != TIRX_OK ||
      (st = tirx__check_shape(fn, "slot_mapping", slot_mapping, (int64_t[]){NT}, "[num_tokens]")) != TIRX_OK ||
      (st = tirx__check_dense(fn, "slot_mapping", slot_mapping)) != TIRX_OK)
    return st;
  if (NT > INT32_MAX)
    return tirx__error(TIRX_E_INVALID_ARG, "%s: k has %lld tokens, expected at most 2^31 - 1", fn,
                       (long long)NT);
  dspec s = {(tirx_decode_kernel)KIND_CACHE, dt, (int)D, (int)k_cache->shape[1], (int)HKV,
             (int)HKV, 1, false};
  tirx_arg args[7] = {
      tirx_arg_i32((int32_t)NT),
      tirx_arg_i32((int32_t)k_cache->shape[0]),
      tirx_arg_tensor(k->data, dt, 3, k->shape, strides_of(k)),
      tirx_arg_tensor(v->data, dt, 3, v->shape, strides_of(v)),
      tirx_arg_tensor(k_cache->data, dt, 4, k_cache->shape, NULL),
      tirx_arg_tensor(v_cache->data, dt, 4, v_cache->shape, NULL),
      tirx_arg_tensor(slot_mapping->data, TIRX_I32, 1, slot_mapping->shape, NULL),
  };
  return launch(fn, rt, &s, args, 7, stream);
}
