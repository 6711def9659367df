/* Decode attention over a paged KV cache (split-KV, flash-decoding) and reshape_and_cache,
 * written with the builder (tirx/kernels.h), and their ops. */
#include "attention_internal.h"

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

/*
 * UNSPLIT and PARTIAL on tensor cores (sm_90a): persistent CTAs of three warpgroups over the
 * items (sequence bi, split sp, KV head kvh), item t = (bi * splits + sp) * H_kv + kvh (the KV
 * heads of a page side by side), CTA c taking items c, c + grid, ...; the items' KV blocks of
 * TC_BN keys stream through one ring (K and V of a block a stage), across items.
 *   warpgroup 0, its first thread (the producer): per block, the page ids from the block table
 *     and one TMA load of K and one of V per page the sequence has ([P, D] boxes of the
 *     [num_pages, P, H_kv, D] caches); the stage's full barrier expects their bytes.
 *   warpgroups 1 and 2 (the consumers) take the CTA's items in turn, so that one's item
 *     epilogue and next Q load run under the other's blocks and the ring keeps streaming.
 *     An item's R = G q_len query rows (row r: token r / G of head kvh G + r % G) sit in the
 *     warpgroup's 64-row Q tile, rows R.. zero; per block S = Q K^T (SS wgmma, m64n64), the
 *     online softmax in registers (the prefill kernel's pieces), O += P V (RS wgmma, V
 *     MN-major). Blocks past the causal bound of some row (the last one or two of a sequence)
 *     run in their own loop: scores masked by position, and V rows past L zeroed in the stage
 *     first (their bytes are another sequence's tail or stale, and 0 * NaN is NaN).
 * Epilogue per item through the warpgroup's shared tiles: UNSPLIT O / l in 16 bits to o (a warp
 * a row) and lse; PARTIAL the unnormalised f32 O and (m log2-scaled, l) to the item's
 * workspace rows ((bi * H_kv + kvh) * splits + sp) * R + r, the combine kernel's order.
 */
enum { TC_BN = TIRX_DECODE_TILE, TC_WM = 64, TC_THREADS = 384 };

/* Ring stages: 4 (128 KiB at D = 128); 3 in the split kernel, whose f32 output tiles are
 * twice as large (both then fit 227 KiB of shared memory with the two consumers' tiles). */
static int tc_stages(const dspec *s) { return s->which == TIRX_DECODE_PARTIAL ? 3 : 4; }

typedef struct tc_item {
  tirx_expr *bi, *kvh, *sp, *L, *t0, *t1;
} tc_item;

/* Item t's coordinates and its blocks [t0, t1) (every warpgroup derives them alike). */
static tc_item tc_item_of(tirx_builder *b, tirx_expr *t, tirx_expr *splits, tirx_expr *tps,
                          tirx_tensor *cl, int hkv) {
  tc_item it;
  it.kvh = tirx_let(b, "kvh", tirx_mod(b, t, I(b, hkv)));
  tirx_expr *bs = tirx_let(b, "bs", tirx_div(b, t, I(b, hkv)));
  it.sp = tirx_let(b, "sp", tirx_mod(b, bs, splits));
  it.bi = tirx_let(b, "bi", tirx_div(b, bs, splits));
  it.L = tirx_let(b, "L", tirx_load(b, cl, TIRX_EXPRS(it.bi)));
  it.t0 = tirx_let(b, "t0", tirx_mul(b, it.sp, tps));
  it.t1 = tirx_let(b, "t1", tirx_min(b, tirx_ceildiv(b, it.L, I(b, TC_BN)), tirx_add(b, it.t0, tps)));
  return it;
}

/* The blocks of item t (0 when its split starts past the sequence). */
static tirx_expr *tc_blocks_of(tirx_builder *b, tirx_expr *t, tirx_expr *splits, tirx_expr *tps,
                               tirx_tensor *cl, int hkv) {
  tc_item o = tc_item_of(b, t, splits, tps, cl, hkv);
  return tirx_max(b, tirx_sub(b, o.t1, o.t0), I(b, 0));
}

typedef struct tc_ctx {
  const dspec *s;
  tirx_tensor *Qs, *Kt, *Vs, *S, *P, *O;
  tirx__attn_rows rows;
  tirx_ring *kv;
  tirx_expr *it, *tid, *c, *cw, *L; /* ring uses, thread in the warpgroup, scale, consumer */
  tirx_expr *hand_j, *has_next;      /* the block after whose wait the other consumer may go on */
} tc_ctx;

/* The consumer warpgroup's own named barrier (1 or 2, its 128 threads). */
static void tc_bar(tirx_builder *b, const tc_ctx *x) { tirx__attn_wg_barrier(b, x->cw); }

/* One KV block j of the item on the ring's next stage. */
static void tc_block(tirx_builder *b, tc_ctx *x, tirx_expr *j, bool masked) {
  const int D = x->s->d, G = x->s->h / x->s->hkv;
  tirx_expr *st = tirx_ring_stage(b, x->kv, x->it), *ph = tirx_ring_phase(b, x->kv, x->it, false);
  tirx_ring_wait(b, x->kv, st, ph);
  tirx_if_begin(b, tirx_and(b, x->has_next, tirx_eq(b, j, x->hand_j)));
  tirx_named_barrier_arrive(b, 3, 256); /* the hand-off (build_attention_tc) */
  tirx_if_end(b);
  if (masked) { /* V rows at or past L to zero */
    tirx_expr *nv = tirx_let(b, "nv", tirx_sub(b, x->L, tirx_mul(b, j, I(b, TC_BN))));
    tirx_if_begin(b, tirx_lt(b, nv, I(b, TC_BN)));
    tirx_expr *e = tirx_for_begin(b, "e", tirx_add(b, tirx_mul(b, nv, I(b, D)), x->tid),
                                  I(b, TC_BN * D), I(b, 128), TIRX_LOOP_SERIAL);
    tirx_store(b, x->Vs, TIRX_EXPRS(tirx_add(b, tirx_mul(b, st, I(b, TC_BN)), tirx_div(b, e, I(b, D))),
                                    tirx_mod(b, e, I(b, D))),
               tirx_cast(b, F(b, 0.0), x->s->dt));
    tirx_for_end(b);
    tirx_fence_proxy_async(b);
    tc_bar(b, x);
    tirx_if_end(b);
  }
  tirx_team_begin(b, TIRX_TEAM_WARPGROUP);
  tirx_gemm_config fresh = {.accumulate = tirx_bool(b, false)};
  tirx_gemm_async(b, tirx_whole(b, x->S), tirx__attn_rect(b, x->Qs, tirx_mul(b, x->cw, I(b, TC_WM)), I(b, 0), TC_WM, D),
                  tirx__attn_rect(b, x->Kt, I(b, 0), tirx_mul(b, st, I(b, TC_BN)), D, TC_BN), &fresh);
  tirx_wgmma_commit(b);
  tirx_team_end(b);
  tirx_wgmma_wait(b, 0);
  tirx_team_begin(b, TIRX_TEAM_WARPGROUP);
  tirx_region *S = tirx_whole(b, x->S);
  if (masked) { /* row r (token r / G) sees keys <= L - q_len + r / G */
    tirx_expr *key = tirx_add(b, tirx_mul(b, j, I(b, TC_BN)), tirx_elem_index(b, 1));
    tirx_expr *lim = tirx_add(b, tirx_sub(b, x->L, I(b, x->s->ql)), tirx_div(b, tirx_elem_index(b, 0), I(b, G)));
    tirx_select_region(b, S, tirx_broadcast(b, tirx_le(b, key, lim)), S,
                       tirx_broadcast(b, tirx_float(b, -INFINITY, TIRX_F32)), NULL);
  }
  tirx__attn_softmax_step(b, &x->rows, S, x->c);
  tirx__attn_rescale_pack(b, &x->rows, x->O, x->P, x->S);
  tirx_gemm_config acc = {.accumulate = tirx_bool(b, true)};
  tirx_gemm_async(b, tirx_whole(b, x->O), tirx_whole(b, x->P),
                  tirx__attn_rect(b, x->Vs, tirx_mul(b, st, I(b, TC_BN)), I(b, 0), TC_BN, D), &acc);
  tirx_wgmma_commit(b);
  tirx_team_end(b);
  tirx_wgmma_wait(b, 0);
  tirx_if_begin(b, tirx_eq(b, x->tid, I(b, 0)));
  tirx_ring_release(b, x->kv, st);
  tirx_if_end(b);
  tirx_assign(b, x->it, tirx_add(b, x->it, I(b, 1)));
}

static tirx_status build_attention_tc(const dspec *s, tirx_kernel **out) {
  const int G = s->h / s->hkv, R = G * s->ql, D = s->d, P = s->p, NP = TC_BN / P;
  const int ST = tc_stages(s);
  const bool split = s->which == TIRX_DECODE_PARTIAL;
  tirx_dtype dt = s->dt;
  char name[64];
  snprintf(name, sizeof name, "decode_tc_%s_%s_d%d_p%d_g%d_q%d%s", split ? "partial" : "attn",
           tirx_dtype_name(dt), D, P, G, s->ql, s->lse && !split ? "_lse" : "");
  tirx_builder *b = tirx_builder_create(name);
  tirx_arena *ar = tirx_builder_arena(b);
  tirx_set_target(b, "sm_90a");
  tirx_expr *B = dyn_int(b, "batch"), *NPG = dyn_int(b, "num_pages");
  tirx_expr *MP = dyn_int(b, "max_pages");
  tirx_expr *splits = dyn_int(b, "splits"), *tps = dyn_int(b, "tiles_per_split");
  tirx_expr *ctas = dyn_int(b, "ctas");
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
  tirx_set_block(b, TC_THREADS, 1, 1);
  tirx_set_grid(b, ctas, NULL, NULL);
  tirx_expr *nitems = tirx_let(b, "nitems", tirx_mul(b, tirx_mul(b, B, I(b, s->hkv)), splits));

  /* Shared memory: the K and V stages; per consumer its Q tile, O rows and row values. */
  tirx_tensor *Kbox, *Vbox, *Qbox, *Obox = NULL;
  tirx_tensor *Kring = tirx__attn_tile(b, "Ks", dt, ST * TC_BN, D, 128, &Kbox);
  tirx_tensor *Vs = tirx__attn_tile(b, "Vs", dt, ST * TC_BN, D, 128, &Vbox);
  tirx_tensor *Kt = tirx_alloc_shared_view(b, "Kt", Kring, 0, dt, 2, (int64_t[]){D, ST * TC_BN},
      tirx_layout_permute(ar, tirx_layout_smem_tile(ar, ST * TC_BN, D, 2, 128), 2, (int64_t[]){1, 0}));
  tirx_tensor *Qs = tirx__attn_tile(b, "Qs", dt, 2 * TC_WM, D, 128, &Qbox);
  tirx_tensor *Os = split ? tirx_alloc_shared(b, "Of", TIRX_F32, TIRX_DIMS(2 * TC_WM, D), NULL)
                          : tirx__attn_tile(b, "Os", dt, 2 * TC_WM, D, 0, &Obox);
  tirx_tensor *MLs = tirx_alloc_shared(b, "MLs", TIRX_F32, TIRX_DIMS(2 * TC_WM, 2), NULL);
  tirx_ring *kv = tirx_ring_new(b, "kv", ST, 1, 1);

  tirx_expr *tid = tirx_let(b, "tid", tirx_thread_linear(b));
  tirx_if_begin(b, tirx_eq(b, tid, I(b, 0)));
  tirx_rings_init(b, (tirx_ring *[]){kv}, 1);
  tirx_if_end(b);
  tirx_sync_threads(b);
  tirx_expr *wg = tirx_let(b, "wg", tirx_div(b, tid, I(b, 128)));

  /* ---- producer: thread 0 loads the pages of every block of the CTA's items ---- */
  tirx_if_begin(b, tirx_eq(b, wg, I(b, 0)));
  tirx_filter_begin(b, TIRX_AXIS_TID, 0, 1);
  {
    tirx_expr *it = tirx_var(b, "it", TIRX_I32, NULL);
    tirx_expr *t = tirx_for_begin(b, "t", tirx_block_idx(b, 0), nitems, tirx_grid_dim(b, 0), TIRX_LOOP_SERIAL);
    tc_item im = tc_item_of(b, t, splits, tps, cl, s->hkv);
    tirx_expr *npages = tirx_let(b, "npages", tirx_ceildiv(b, im.L, I(b, P)));
    tirx_expr *j = tirx_for_begin(b, "j", im.t0, im.t1, NULL, TIRX_LOOP_SERIAL);
    tirx_expr *st = tirx_ring_stage(b, kv, it), *ph = tirx_ring_phase(b, kv, it, true);
    /* the block's pages the sequence has (>= 1: j * TC_BN < L) */
    tirx_expr *nload = tirx_let(b, "nload", tirx_min(b, I(b, NP), tirx_sub(b, npages, tirx_mul(b, j, I(b, NP)))));
    tirx_ring_acquire(b, kv, st, ph, tirx_mul(b, nload, I(b, 2 * P * D * 2)));
    for (int pp = 0; pp < NP; pp++) {
      if (pp) tirx_if_begin(b, tirx_lt(b, I(b, pp), nload));
      tirx_expr *pid = tirx_let(b, "pid", tirx_load(b, bt, TIRX_EXPRS(im.bi, tirx_add(b, tirx_mul(b, j, I(b, NP)), I(b, pp)))));
      tirx_expr *row = tirx_add(b, tirx_mul(b, st, I(b, TC_BN)), I(b, pp * P));
      /* K and V are read once a step: L2 evict-first */
      tirx_config lk = {.hint = TIRX_HINT_STREAM, .barrier = tirx_ring_full(b, kv, st)};
      tirx_copy_async(b, tirx_region_new(b, Kbox, TIRX_EXPRS(I(b, 0), row, I(b, 0), I(b, 0)), (int64_t[]){1, P, 1, D}),
                      tirx_region_new(b, kc, TIRX_EXPRS(pid, I(b, 0), im.kvh, I(b, 0)), (int64_t[]){1, P, 1, D}), &lk);
      tirx_copy_async(b, tirx_region_new(b, Vbox, TIRX_EXPRS(I(b, 0), row, I(b, 0), I(b, 0)), (int64_t[]){1, P, 1, D}),
                      tirx_region_new(b, vc, TIRX_EXPRS(pid, I(b, 0), im.kvh, I(b, 0)), (int64_t[]){1, P, 1, D}), &lk);
      if (pp) tirx_if_end(b);
    }
    tirx_assign(b, it, tirx_add(b, it, I(b, 1)));
    tirx_for_end(b);
    tirx_for_end(b);
  }
  tirx_filter_end(b);

  /* ---- consumers: warpgroup 1 + cw takes the CTA's items cw, cw + 2, ... ---- */
  tirx_else(b);
  tc_ctx x = {.s = s, .Qs = Qs, .Kt = Kt, .Vs = Vs, .kv = kv, .c = c};
  x.cw = tirx_let(b, "cw", tirx_sub(b, wg, I(b, 1)));
  x.tid = tirx_let(b, "tid_wg", tirx_mod(b, tid, I(b, 128)));
  tirx_expr *q0 = tirx_let(b, "q0", tirx_mul(b, x.cw, I(b, TC_WM))); /* its rows of the tiles */
  /* the ring's uses before the warpgroup's first item: consumer 1 after consumer 0's first */
  x.it = tirx_var(b, "it", TIRX_I32, NULL);
  tirx_if_begin(b, tirx_eq(b, x.cw, I(b, 1)));
  tirx_assign(b, x.it, tc_blocks_of(b, tirx_block_idx(b, 0), splits, tps, cl, s->hkv));
  tirx_if_end(b);
  if (R < TC_WM) { /* Q's rows past R: zero once (no item writes them) */
    tirx_expr *e = tirx_for_begin(b, "e", x.tid, I(b, (TC_WM - R) * D), I(b, 128), TIRX_LOOP_SERIAL);
    tirx_store(b, Qs, TIRX_EXPRS(tirx_add(b, tirx_add(b, q0, I(b, R)), tirx_div(b, e, I(b, D))), tirx_mod(b, e, I(b, D))),
               tirx_cast(b, F(b, 0.0), dt));
    tirx_for_end(b);
  }
  tirx_expr *w = tirx_let(b, "w", tirx_div(b, x.tid, I(b, 32)));
  tirx_expr *step = tirx_let(b, "step", tirx_mul(b, tirx_grid_dim(b, 0), I(b, 2)));
  tirx_expr *t = tirx_for_begin(b, "t", tirx_add(b, tirx_block_idx(b, 0), tirx_mul(b, x.cw, tirx_grid_dim(b, 0))),
                                nitems, step, TIRX_LOOP_SERIAL);
  tc_item im = tc_item_of(b, t, splits, tps, cl, s->hkv);
  x.L = im.L;
  /* blocks every row sees whole: keys <= L - q_len */
  tirx_expr *tfull = tirx_let(b, "tfull", tirx_div(b, tirx_max(b, tirx_add(b, tirx_sub(b, im.L, I(b, s->ql)), I(b, 1)), I(b, 0)), I(b, TC_BN)));
  /* The hand-off. A ring's waiter tells phases apart by parity, so it must never wait for a
   * block two uses of its stage ahead of the last fill. Within an item it cannot (fills go in
   * order and it has the previous block). Its first block, n0, is ST uses after block n0 - ST
   * of the other consumer's item: that consumer arrives on barrier 3 once it has waited for that
   * block (or its own first, or at once without blocks), and this one syncs on it first. */
  tirx_expr *nb = tirx_let(b, "nb", tirx_max(b, tirx_sub(b, im.t1, im.t0), I(b, 0)));
  x.hand_j = tirx_let(b, "hand_j", tirx_add(b, im.t0, tirx_max(b, tirx_sub(b, nb, I(b, ST)), I(b, 0))));
  x.has_next = tirx_let(b, "has_next", tirx_lt(b, tirx_add(b, t, tirx_grid_dim(b, 0)), nitems));
  tirx_if_begin(b, tirx_ne(b, t, tirx_block_idx(b, 0))); /* all but consumer 0's first item */
  tirx_named_barrier_sync(b, 3, 256);
  tirx_if_end(b);
  tirx_if_begin(b, tirx_and(b, x.has_next, tirx_eq(b, nb, I(b, 0))));
  tirx_named_barrier_arrive(b, 3, 256);
  tirx_if_end(b);
  tc_bar(b, &x); /* the last item's S GEMMs are done with the Q tile */
  /* element by element: the swizzled tile's columns are two iters, which a vector region with
   * a non-constant begin cannot address */
  tirx_expr *e = tirx_for_begin(b, "e", x.tid, I(b, R * D), I(b, 128), TIRX_LOOP_SERIAL);
  {
    tirx_expr *r = tirx_let(b, "r", tirx_div(b, e, I(b, D)));
    tirx_expr *col = tirx_let(b, "col", tirx_mod(b, e, I(b, D)));
    tirx_expr *h = tirx_add(b, tirx_mul(b, im.kvh, I(b, G)), tirx_mod(b, r, I(b, G)));
    tirx_store(b, Qs, TIRX_EXPRS(tirx_add(b, q0, r), col), tirx_load(b, q, TIRX_EXPRS(im.bi, tirx_div(b, r, I(b, G)), h, col)));
  }
  tirx_for_end(b);
  tirx_fence_proxy_async(b);
  tc_bar(b, &x);
  tirx_team_begin(b, TIRX_TEAM_WARPGROUP);
  x.S = tirx_alloc_local(b, "S", TIRX_F32, TIRX_DIMS(TC_WM, TC_BN), tirx_layout_wgmma_acc(ar, TC_WM, TC_BN));
  x.P = tirx_alloc_local(b, "P", dt, TIRX_DIMS(TC_WM, TC_BN), tirx_layout_wgmma_a(ar, TC_WM, TC_BN));
  x.O = tirx_alloc_local(b, "O", TIRX_F32, TIRX_DIMS(TC_WM, D), tirx_layout_wgmma_acc(ar, TC_WM, D));
  tirx__attn_rows_new(b, &x.rows, TC_BN, D);
  tirx_fill(b, tirx_whole(b, x.O), F(b, 0.0), NULL);
  tirx_team_end(b);
  tirx_expr *j = tirx_for_begin(b, "j", im.t0, tirx_min(b, im.t1, tfull), NULL, TIRX_LOOP_SERIAL);
  tc_block(b, &x, j, false);
  tirx_for_end(b);
  j = tirx_for_begin(b, "j", tirx_max(b, im.t0, tfull), im.t1, NULL, TIRX_LOOP_SERIAL);
  tc_block(b, &x, j, true);
  tirx_for_end(b);

  /* epilogue: shared memory, then rows r < R (warp w: rows w, w + 4, ...) */
  tirx_team_begin(b, TIRX_TEAM_WARPGROUP);
  tirx_tensor *O16 = NULL;
  if (split) { /* m in the combine's log2 units */
    tirx_binary(b, tirx__attn_col0(b, x.rows.Lx), TIRX_OP_MUL, tirx__attn_col0(b, x.rows.Mrun),
                tirx_broadcast(b, c), NULL);
  } else {
    tirx__attn_normalize(b, &x.rows, x.O);
    O16 = tirx_alloc_local(b, "O16", dt, TIRX_DIMS(TC_WM, D), tirx_layout_wgmma_acc(ar, TC_WM, D));
    tirx_cast_region(b, tirx_whole(b, O16), tirx_whole(b, x.O), NULL);
    if (lse) tirx__attn_lse(b, &x.rows, c);
  }
  tirx_team_end(b);
  tc_bar(b, &x); /* the last item's rows are out of the O and row tiles */
  tirx_team_begin(b, TIRX_TEAM_WARPGROUP);
  tirx_copy(b, tirx__attn_rect(b, Os, q0, I(b, 0), TC_WM, D), tirx_whole(b, split ? x.O : O16), NULL);
  tirx_copy(b, tirx__attn_rect(b, MLs, q0, I(b, 0), TC_WM, 1), tirx__attn_col0(b, x.rows.Lx), NULL);
  if (split)
    tirx_copy(b, tirx__attn_rect(b, MLs, q0, I(b, 1), TC_WM, 1), tirx__attn_col0(b, x.rows.Lrun), NULL);
  tirx_team_end(b);
  tc_bar(b, &x);
  tirx_expr *prow0 = NULL;
  if (split)
    prow0 = tirx_let(b, "prow0", tirx_mul(b, tirx_add(b, tirx_mul(b, tirx_add(b, tirx_mul(b, im.bi, I(b, s->hkv)), im.kvh), splits), im.sp), I(b, R)));
  tirx_expr *rr = tirx_for_begin(b, "rr", w, I(b, R), I(b, 4), TIRX_LOOP_SERIAL);
  {
    tirx_expr *h = tirx_add(b, tirx_mul(b, im.kvh, I(b, G)), tirx_mod(b, rr, I(b, G)));
    tirx_team_begin(b, TIRX_TEAM_WARP);
    if (split)
      tirx_copy(b, tirx__attn_rect(b, po, tirx_add(b, prow0, rr), I(b, 0), 1, D), tirx__attn_rect(b, Os, tirx_add(b, q0, rr), I(b, 0), 1, D), NULL);
    else
      tirx_copy(b, tirx_region_new(b, o, TIRX_EXPRS(im.bi, tirx_div(b, rr, I(b, G)), h, I(b, 0)), (int64_t[]){1, 1, 1, D}),
                tirx_region_new(b, Obox, TIRX_EXPRS(I(b, 0), tirx_add(b, q0, rr), I(b, 0), I(b, 0)), (int64_t[]){1, 1, 1, D}), NULL);
    tirx_team_end(b);
  }
  tirx_for_end(b);
  tirx_if_begin(b, tirx_lt(b, x.tid, I(b, R)));
  tirx_expr *mr = tirx_add(b, q0, x.tid);
  if (split) {
    tirx_expr *prow = tirx_add(b, prow0, x.tid);
    tirx_store(b, pml, TIRX_EXPRS(prow, I(b, 0)), tirx_load(b, MLs, TIRX_EXPRS(mr, I(b, 0))));
    tirx_store(b, pml, TIRX_EXPRS(prow, I(b, 1)), tirx_load(b, MLs, TIRX_EXPRS(mr, I(b, 1))));
  } else if (lse) {
    tirx_expr *h = tirx_add(b, tirx_mul(b, im.kvh, I(b, G)), tirx_mod(b, x.tid, I(b, G)));
    tirx_store(b, lse, TIRX_EXPRS(im.bi, tirx_div(b, x.tid, I(b, G)), h), tirx_load(b, MLs, TIRX_EXPRS(mr, I(b, 0))));
  }
  tirx_if_end(b);
  /* the other consumer's next item: its blocks go by before this one's next */
  tirx_expr *tn = tirx_let(b, "tn", tirx_add(b, t, tirx_grid_dim(b, 0)));
  tirx_if_begin(b, tirx_lt(b, tn, nitems));
  tirx_assign(b, x.it, tirx_add(b, x.it, tc_blocks_of(b, tn, splits, tps, cl, s->hkv)));
  tirx_if_end(b);
  tirx_for_end(b); /* items */
  tirx_if_end(b);
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
  if (s->which == TIRX_DECODE_COMBINE) return build_combine(s, out);
  return build_attention_tc(s, out);
}

/* ---- checks of the shapes ---- */

static const char *dname(tirx_dtype t) {
  const char *s = tirx_dtype_name(t);
  return s ? s : "invalid";
}

/* The heads and query rows of an item: the builds' and the plan's limits. */
static tirx_status check_heads(const char *fn, int h, int hkv, int ql) {
  if (hkv < 1 || h < 1 || h % hkv)
    return tirx__error(TIRX_E_INVALID_ARG, "%s: h is %d and h_kv %d, expected h a multiple of "
                       "h_kv >= 1", fn, h, hkv);
  if (hkv > 65535)
    return tirx__error(TIRX_E_INVALID_ARG, "%s: h_kv is %d, expected at most 65535", fn, hkv);
  if (ql < 1 || ql > 8)
    return tirx__error(TIRX_E_INVALID_ARG, "%s: q_len is %d, expected 1 to 8", fn, ql);
  if ((int64_t)(h / hkv) * ql > TIRX_DECODE_MAX_ROWS)
    return tirx__error(TIRX_E_INVALID_ARG, "%s: (h / h_kv) * q_len is %d * %d, expected at most "
                       "%d", fn, h / hkv, ql, TIRX_DECODE_MAX_ROWS);
  return TIRX_OK;
}

static tirx_status check_d(const char *fn, int d) {
  if (d != 64 && d != 128)
    return tirx__error(TIRX_E_INVALID_ARG, "%s: d is %d, expected 64 or 128", fn, d);
  return TIRX_OK;
}

static tirx_status check_dims(const char *fn, tirx_dtype dt, int d, int p, int h, int hkv,
                              int ql) {
  if (dt != TIRX_F16 && dt != TIRX_BF16)
    return tirx__error(TIRX_E_INVALID_ARG, "%s: dtype is %s, expected f16 or bf16", fn, dname(dt));
  tirx_status st = check_d(fn, d);
  if (st != TIRX_OK)
    return st;
  if (p != 16 && p != 32 && p != 64)
    return tirx__error(TIRX_E_INVALID_ARG, "%s: page_size is %d, expected 16, 32 or 64", fn, p);
  return check_heads(fn, h, hkv, ql);
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

/* Items (sequence, KV head, split) against the persistent grid of sms CTAs: the fraction of
 * the CTAs' rounds that do work, items of equal length assumed. */
static double round_use(int64_t items, int sms) {
  int64_t rounds = (items + sms - 1) / sms;
  return (double)items / (double)(rounds * sms);
}

static tirx_decode_plan plan_of(const tirx_decode_options *o, int batch, int h, int hkv, int ql,
                                int d, int64_t maxl) {
  int sms = o && o->sms ? o->sms : 132;
  int64_t tiles = (maxl + N - 1) / N, ctas = (int64_t)batch * hkv, splits;
  if (o && o->splits)
    splits = o->splits;
  else {
    /* the fewest splits whose items use 95% of the CTAs' rounds (splits of at least 2 tiles,
     * at most TIRX_DECODE_MAX_SPLITS); failing that, the best use */
    int64_t cap = tiles / 2;
    if (cap > TIRX_DECODE_MAX_SPLITS) cap = TIRX_DECODE_MAX_SPLITS;
    if (cap < 1) cap = 1;
    splits = 1;
    double best = round_use(ctas, sms);
    for (int64_t sp = 2; sp <= cap && best < 0.95; sp++) {
      double u = round_use(ctas * sp, sms);
      if (u > best + 1e-9) best = u, splits = sp;
    }
  }
  if (splits > tiles) splits = tiles;
  int64_t tps = (tiles + splits - 1) / splits;
  splits = (tiles + tps - 1) / tps;
  int64_t items = ctas * splits;
  tirx_decode_plan p = {.size = sizeof p, .splits = (int)splits, .tiles_per_split = (int)tps,
                        .ctas = (int)(items < sms ? items : sms)};
  if (splits > 1)
    p.workspace_bytes = (int64_t)batch * hkv * splits * (h / hkv) * ql * ((int64_t)d + 2) * 4;
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
  /* tirx_op_decode_attention's limits, which also keep the plan's arithmetic within range */
  if (batch > 65535)
    return tirx__error(TIRX_E_INVALID_ARG, "%s: batch is %d, expected at most 65535", fn, batch);
  if ((st = check_heads(fn, h, h_kv, q_len)) != TIRX_OK || (st = check_d(fn, d)) != TIRX_OK)
    return st;
  if (max_context > INT32_MAX)
    return tirx__error(TIRX_E_INVALID_ARG, "%s: max_context is %lld, expected at most 2^31 - 1 "
                       "(context lengths are int32)", fn, (long long)max_context);
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
  tirx_arg head[11] = {
      tirx_arg_i32((int32_t)B),
      tirx_arg_i32((int32_t)NPG),
      tirx_arg_i32((int32_t)MP),
      tirx_arg_i32(pl.splits),
      tirx_arg_i32(pl.tiles_per_split),
      tirx_arg_i32(pl.ctas),
      tirx_arg_f32(c),
      tirx_arg_tensor(q->data, dt, 4, q->shape, strides_of(q)),
      tirx_arg_tensor(k_cache->data, dt, 4, k_cache->shape, NULL),
      tirx_arg_tensor(v_cache->data, dt, 4, v_cache->shape, NULL),
      tirx_arg_tensor(block_table->data, TIRX_I32, 2, block_table->shape, bts),
  };
  tirx_arg args[15];
  memcpy(args, head, sizeof head);
  args[11] = tirx_arg_tensor(context_lens->data, TIRX_I32, 1, context_lens->shape, NULL);
  if (pl.splits == 1) {
    args[12] = tirx_arg_tensor(o->data, dt, 4, o->shape, strides_of(o));
    int n = 13;
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
    args[12] = tirx_arg_i32((int32_t)prows);
    args[13] = pa, args[14] = pm;
    st = tirx__kernels_launch(fn, rt, k1, args, 15, stream);
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
