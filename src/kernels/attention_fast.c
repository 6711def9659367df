/*
 * The default attention kernel, written with the builder in FlashAttention-3's structure:
 *
 *   one CTA of three warpgroups, persistent over tiles of BM = 128 query rows of one (batch,
 *   head); warpgroup 0 is the producer (setmaxnreg 24): one thread issues the TMA loads of
 *   the Q tile and of K and V blocks of BN keys into separate two-stage rings (full/empty
 *   mbarriers each); warpgroups 1 and 2 are the consumers (setmaxnreg 240), 64 query rows each:
 *     S = Q K^T                       wgmma SS, f32 in registers
 *     mask (boundary blocks only)     tirx_elem_index: key >= S_k, causal diagonal
 *     m' = max(m, rowmax S)           reduce.shuffle over the accumulator's quads
 *     P = exp2(S c - m' c)            one FMA and ex2 per score (c = scale * log2 e)
 *     l = l a + rowsum P, O = O a     a = exp2((m - m') c)
 *     O += P V                        wgmma RS: P cast to 16 bits is the A fragment as it
 *                                     stands; V from shared memory MN-major
 *   then O / l cast, stmatrix into a swizzled tile, TMA store (fixed length; varlen rows are
 *   stored one by one, a packed sequence's neighbours being another sequence's rows), and the
 *   log-sum-exp through shared memory.
 * KV blocks run from the last to the first: the masked ones (the causal diagonal and the key
 * tail) in their own loop, then the unmasked ones, whose loop has no masking code.
 * Four schedules of those loops, chosen by $TIRX_ATTN_SCHEDULE when the kernel is looked up or
 * built (schedule_of; part of the kernel table's key and of the kernel's name):
 *   "serial", the default   each GEMM waited for before the next step (kv_block)
 *   "overlap"               FlashAttention-3's intra-warpgroup overlap: S of the next block
 *                           issued with the P V GEMM of the current one and the softmax run
 *                           under P V (wgmma wait_group 1, then 0: kv_blocks_overlap)
 *   "pingpong"              FlashAttention-3's inter-warpgroup ping-pong on the serial steps:
 *                           the two consumers take turns issuing their GEMMs (named barriers
 *                           3 and 4, turn_wait and turn_pass), so that one's softmax runs
 *                           under the other's GEMMs
 *   "pingpong_overlap"      both (FlashAttention-3's schedule at D = 128)
 * Tiles go to CTAs in pairs (a long and a short m-block of one (batch, head), tile_of) so that
 * static rounds balance when causal; a head's pairs run together (its K and V stay in L2).
 *
 * The tile's shape by head dim (plan_of): D = 64 and 128 take KV blocks of BN = 128 keys and
 * stage O in a tile of its own; D = 256 takes BN = 64 (O's accumulator is 128 registers a
 * thread there, S 32 and P 16 beside it) and writes O over Q's bytes, Q being dead after the
 * tile's last S = Q K^T, so that it fits an SM's 227 KB (plan_of's table; the epilogue's
 * comment says how the two uses are ordered). D = 256 has the serial schedule only
 * (schedule_of): the others spill there.
 */
#include "attention_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { BM = 128, WM = 64, STAGES = 2 };

/* The consumers' schedule of a tile's KV blocks ($TIRX_ATTN_SCHEDULE, read when a kernel is
 * looked up or built), two flags: OVERLAP is FlashAttention-3's intra-warpgroup overlap
 * (kv_blocks_overlap; without it each GEMM is waited for before the next step, kv_block),
 * PINGPONG its inter-warpgroup ping-pong (turn_wait, turn_pass). SERIAL, neither, is the
 * default. */
enum { SCHED_SERIAL = 0, SCHED_OVERLAP = 1, SCHED_PINGPONG = 2 };

/* The schedules by their $TIRX_ATTN_SCHEDULE value; a kernel's name ends in its suffix. */
static const struct {
  const char *name, *suffix;
  int32_t schedule;
} SCHEDULES[] = {
    {"serial", "", SCHED_SERIAL},
    {"overlap", "_overlap", SCHED_OVERLAP},
    {"pingpong", "_pingpong", SCHED_PINGPONG},
    {"pingpong_overlap", "_pingpong_overlap", SCHED_PINGPONG | SCHED_OVERLAP},
};
enum { NSCHEDULES = sizeof SCHEDULES / sizeof SCHEDULES[0] };

typedef struct attn_key {
  int32_t dtype, d, causal, varlen;
  int32_t schedule; /* SCHED_* flags: part of the table's key and of the kernel's name */
} attn_key;

/*
 * What the head dim decides: bn, the keys of a KV block, and o_over_q, whether the epilogue
 * stages O in Q's shared memory instead of a tile of its own. Dynamic shared memory of each
 * (the tiles 1024-aligned; the LSE rows, then the six barriers 128-aligned, the last one's 16
 * bytes ending it):
 *
 *   D     BN   Q        K ring      V ring      O             LSE, barriers  total
 *   64    128  16 KiB   2 x 16 KiB  2 x 16 KiB  16 KiB        1,168          99,472
 *   128   128  32 KiB   2 x 32 KiB  2 x 32 KiB  32 KiB        1,168          197,776
 *   256   64   64 KiB   2 x 32 KiB  2 x 32 KiB  (Q's bytes)   1,168          197,776
 *
 * D = 256 with an O tile of its own would take 263,312 bytes, past the 232,448 (227 KiB) an
 * SM gives one CTA; BN = 128 there would need a third of the consumers' registers more for S
 * and P (O alone is 128 of them). One stage a ring instead would give up the double buffering.
 */
typedef struct attn_plan {
  int bn;
  bool o_over_q;
} attn_plan;

static attn_plan plan_of(int d) {
  if (d == 256)
    return (attn_plan){.bn = 64, .o_over_q = true};
  return (attn_plan){.bn = 128, .o_over_q = false};
}

static tirx_expr *I(tirx_builder *b, int64_t v) { return tirx_int(b, v); }

static tirx_region *rect(tirx_builder *b, tirx_tensor *t, tirx_expr *r0, tirx_expr *c0,
                         int64_t rows, int64_t cols) {
  return tirx_region_new(b, t, TIRX_EXPRS(r0, c0), (int64_t[]){rows, cols});
}

/* Rows r0 .. r0 + rows - 1 of head h at index bi of the first dim of a [batch, seq, heads, D]
 * tensor: the (1, rows, 1, D) region of a TMA box or a row's copy. */
static tirx_region *head_rows(tirx_builder *b, tirx_tensor *t, tirx_expr *bi, tirx_expr *r0,
                              tirx_expr *h, int64_t rows, int64_t d) {
  return tirx_region_new(b, t, TIRX_EXPRS(bi, r0, h, I(b, 0)), (int64_t[]){1, rows, 1, d});
}

/* Rows r0.. of the [1, rows, 1, D] view of a tile (the TMA box's shape). */
static tirx_region *box(tirx_builder *b, tirx_tensor *t, tirx_expr *r0, int64_t rows, int64_t d) {
  return head_rows(b, t, I(b, 0), r0, I(b, 0), rows, d);
}

/* The TMA load of src into dst, stage st of ring r: waits for the stage to be empty (phase
 * ph), arms its full barrier with the load's bytes, and issues the load on that barrier. */
static void ring_load(tirx_builder *b, const tirx_ring *r, tirx_expr *st, tirx_expr *ph,
                      int64_t bytes, tirx_region *dst, tirx_region *src) {
  tirx_ring_acquire(b, r, st, ph, I(b, bytes));
  tirx_config load = {.barrier = tirx_ring_full(b, r, st)};
  tirx_copy_async(b, dst, src, &load);
}

/* What the producer and the consumers both derive for a tile. */
typedef struct tile_info {
  tirx_expr *b, *h, *kvh, *mb;       /* batch, head, its KV head, m-block */
  tirx_expr *bq, *bk;                /* index in the tensors' first dim (varlen: 0) */
  tirx_expr *q_off, *k_off;          /* the sequence's first row (fixed: 0) */
  tirx_expr *len_q, *len_k;
  tirx_expr *valid;                  /* the m-block has rows */
  tirx_expr *nblocks, *nfull;        /* KV blocks, of which the first nfull need no mask */
} tile_info;

typedef struct kctx {
  tirx_builder *b;
  const attn_key *key;
  int bn;
  tirx_expr *B, *H, *G, *Sq, *Sk, *mblocks, *c_log2;
  tirx_tensor *cu_q, *cu_k;
} kctx;

static tile_info tile_of(const kctx *x, tirx_expr *t, tirx_expr *second) {
  tirx_builder *b = x->b;
  tile_info ti;
  /* Tiles in pairs: pair p of (batch, head) bh = p / half is its m-block mb_p = mblocks - 1 - k
   * and then mblocks - 1 - mb_p = k (k = p % half), a long and a short tile when causal, so
   * that every pair costs about the same and a static round of the grid is balanced; pairs of
   * one (batch, head) run side by side, sharing its K and V in L2. */
  tirx_expr *half = tirx_ceildiv(b, x->mblocks, I(b, 2));
  tirx_expr *bh = tirx_let(b, "bh", tirx_div(b, t, half));
  tirx_expr *k = tirx_let(b, "k", tirx_mod(b, t, half));
  tirx_expr *hi_mb = tirx_sub(b, tirx_sub(b, x->mblocks, I(b, 1)), k);
  ti.mb = tirx_let(b, "mb", tirx_select(b, tirx_eq(b, second, I(b, 0)), hi_mb, k));
  tirx_expr *dup = tirx_and(b, tirx_ne(b, second, I(b, 0)), tirx_eq(b, k, hi_mb)); /* odd middle */
  ti.b = tirx_let(b, "bi", tirx_div(b, bh, x->H));
  ti.h = tirx_let(b, "hi", tirx_mod(b, bh, x->H));
  ti.kvh = tirx_let(b, "kvh", tirx_div(b, ti.h, x->G));
  if (x->key->varlen) {
    ti.bq = ti.bk = I(b, 0);
    ti.q_off = tirx_let(b, "q_off", tirx_load(b, x->cu_q, TIRX_EXPRS(ti.b)));
    ti.k_off = tirx_let(b, "k_off", tirx_load(b, x->cu_k, TIRX_EXPRS(ti.b)));
    ti.len_q = tirx_let(b, "len_q", tirx_sub(b, tirx_load(b, x->cu_q, TIRX_EXPRS(tirx_add(b, ti.b, I(b, 1)))), ti.q_off));
    ti.len_k = tirx_let(b, "len_k", tirx_sub(b, tirx_load(b, x->cu_k, TIRX_EXPRS(tirx_add(b, ti.b, I(b, 1)))), ti.k_off));
  } else {
    ti.bq = ti.bk = ti.b;
    ti.q_off = ti.k_off = I(b, 0);
    ti.len_q = x->Sq;
    ti.len_k = x->Sk;
  }
  ti.valid = tirx_let(b, "valid", tirx_and(b, tirx_not(b, dup), tirx_lt(b, tirx_mul(b, ti.mb, I(b, BM)), ti.len_q)));
  /* Keys the tile's last row sees: all, or (causal) up to row + len_k - len_q. */
  tirx_expr *kend = ti.len_k;
  tirx_expr *full_end = tirx_div(b, ti.len_k, I(b, x->bn));
  if (x->key->causal) {
    tirx_expr *shift = tirx_sub(b, ti.len_k, ti.len_q);
    kend = tirx_min(b, ti.len_k, tirx_add(b, tirx_mul(b, tirx_add(b, ti.mb, I(b, 1)), I(b, BM)), shift));
    /* Blocks every row of the tile sees whole: keys <= mb * BM + shift. */
    tirx_expr *first_row_end = tirx_add(b, tirx_add(b, tirx_mul(b, ti.mb, I(b, BM)), shift), I(b, 1));
    full_end = tirx_min(b, full_end, tirx_div(b, tirx_max(b, first_row_end, I(b, 0)), I(b, x->bn)));
  }
  ti.nblocks = tirx_let(b, "nblocks", tirx_select(b, ti.valid, tirx_ceildiv(b, tirx_max(b, kend, I(b, 0)), I(b, x->bn)), I(b, 0)));
  ti.nfull = tirx_let(b, "nfull", tirx_min(b, full_end, ti.nblocks));
  return ti;
}

/* The consumer's state across the KV blocks of a tile. */
typedef struct cons {
  tirx_tensor *S, *P, *O;
  tirx__attn_rows rows; /* the online softmax's row state */
  tirx_tensor *Qs, *Ks, *Vs;
  tirx_ring *kr, *vr; /* the K and V rings */
  tirx_expr *c, *it, *tid_wg;
} cons;

/* The warpgroup's release of a stage: one arrival, from its first thread. */
static void release(tirx_builder *b, const cons *s, const tirx_ring *r, tirx_expr *st) {
  tirx_if_begin(b, tirx_eq(b, s->tid_wg, I(b, 0)));
  tirx_ring_release(b, r, st);
  tirx_if_end(b);
}

/* Waits until at most n of the warpgroup's GEMM groups are pending, then releases stage st of
 * r, which the finished ones read. */
static void retire(tirx_builder *b, const cons *s, int n, const tirx_ring *r, tirx_expr *st) {
  tirx_wgmma_wait(b, n);
  release(b, s, r, st);
}

/*
 * The ping-pong's turns (SCHED_PINGPONG): the two consumers take turns issuing their GEMMs, so
 * that one's softmax runs while the other's GEMMs have the tensor cores. Consumer c's turn is
 * named barrier TURN_BAR + c over 256 threads: its own 128 sync on it (turn_wait), the other's
 * 128 arrive on it (turn_pass). Barrier 0 is tirx_sync_threads's, 1 and 2 the consumers' own
 * (tirx__attn_wg_barrier). Consumer 1 arms consumer 0's barrier once before its first tile, so
 * consumer 0 has the first turn; after that each consumer alternates wait, pass, wait, pass,
 * the same number of each in every tile, so a consumer's pass always finds the other's barrier
 * without an arrival pending (two arrivals of one consumer would complete the barrier alone).
 */
enum { TURN_BAR = 3, TURN_THREADS = 256 };

/* Both consumers (256 threads) before varlen's epilogue writes O over Q (plan.o_over_q; the
 * epilogue's comment): barrier 5, past the ping-pong's. */
enum { O_BAR = 5 };

typedef void barrier_op(tirx_builder *b, int id, int nthreads); /* sync or arrive */

/* op by each consumer on its own turn's barrier, or (other) on the other consumer's. */
static void turn_op(tirx_builder *b, const cons *s, barrier_op *op, bool other) {
  tirx_if_begin(b, tirx_eq(b, s->c, I(b, 0)));
  op(b, TURN_BAR + other, TURN_THREADS);
  tirx_else(b);
  op(b, TURN_BAR + !other, TURN_THREADS);
  tirx_if_end(b);
}

static void turn_wait(tirx_builder *b, const cons *s) {
  turn_op(b, s, tirx_named_barrier_sync, false);
}

static void turn_pass(tirx_builder *b, const cons *s) {
  turn_op(b, s, tirx_named_barrier_arrive, true);
}

/* op by consumer c alone on consumer 0's turn barrier. Before the consumers' first tile,
 * consumer 1 arrives (the first turn is consumer 0's); after their last, consumer 0 syncs,
 * taking consumer 1's last pass, so that the CTA exits with no arrival pending. */
static void turn_edge(tirx_builder *b, const cons *s, int c, barrier_op *op) {
  tirx_if_begin(b, tirx_eq(b, s->c, I(b, c)));
  op(b, TURN_BAR, TURN_THREADS);
  tirx_if_end(b);
}

/* D = A B (accumulate: D += A B) on stage st of ring r, issued and committed, not waited for:
 * once the stage is full (phase ph) and, with turn, in the consumer's turn (FlashAttention-3's
 * order: the data, then the turn). */
static void issue(tirx_builder *b, const cons *s, const tirx_ring *r, tirx_expr *st,
                  tirx_expr *ph, bool turn, tirx_region *D, tirx_region *A, tirx_region *B,
                  bool accumulate) {
  tirx_ring_wait(b, r, st, ph);
  if (turn)
    turn_wait(b, s);
  tirx_team_begin(b, TIRX_TEAM_WARPGROUP);
  tirx_gemm_config g = {.accumulate = tirx_bool(b, accumulate)};
  tirx_gemm_async(b, D, A, B, &g);
  tirx_wgmma_commit(b);
  tirx_team_end(b);
}

/* S = Q K^T (not S +=) on stage st of the K ring; turn as issue's. */
static void issue_s(const kctx *x, const cons *s, tirx_expr *st, tirx_expr *ph, bool turn) {
  tirx_builder *b = x->b;
  int bn = x->bn, d = x->key->d;
  issue(b, s, s->kr, st, ph, turn, tirx_whole(b, s->S),
        rect(b, s->Qs, tirx_mul(b, s->c, I(b, WM)), I(b, 0), WM, d),
        rect(b, s->Ks, I(b, 0), tirx_mul(b, st, I(b, bn)), d, bn), false);
}

/* O += P V on stage st of the V ring; turn as issue's. */
static void issue_pv(const kctx *x, const cons *s, tirx_expr *st, tirx_expr *ph, bool turn) {
  tirx_builder *b = x->b;
  issue(b, s, s->vr, st, ph, turn, tirx_whole(b, s->O), tirx_whole(b, s->P),
        rect(b, s->Vs, tirx_mul(b, st, I(b, x->bn)), I(b, 0), x->bn, x->key->d), true);
}

/* The online softmax of block j on S (complete): mask, m' = max(m, rowmax S), a = exp2((m -
 * m') c), S = exp2(S c - m' c), l = l a + rowsum S. O's rescale and P wait for the P V GEMM. */
static void softmax(const kctx *x, const cons *s, const tile_info *ti, tirx_expr *j, bool masked) {
  tirx_builder *b = x->b;
  int bn = x->bn;
  tirx_team_begin(b, TIRX_TEAM_WARPGROUP);
  tirx_region *S = tirx_whole(b, s->S);
  if (masked) { /* keys past len_k, and (causal) past the row's diagonal, to -inf */
    tirx_expr *key = tirx_add(b, tirx_mul(b, j, I(b, bn)), tirx_elem_index(b, 1));
    tirx_expr *ok = tirx_lt(b, key, ti->len_k);
    if (x->key->causal) {
      tirx_expr *row = tirx_add(b, tirx_add(b, tirx_mul(b, ti->mb, I(b, BM)), tirx_mul(b, s->c, I(b, WM))),
                                tirx_elem_index(b, 0));
      ok = tirx_and(b, ok, tirx_le(b, key, tirx_add(b, row, tirx_sub(b, ti->len_k, ti->len_q))));
    }
    tirx_select_region(b, S, tirx_broadcast(b, ok), S,
                       tirx_broadcast(b, tirx_float(b, -INFINITY, TIRX_F32)), NULL);
  }
  tirx__attn_softmax_step(b, &s->rows, S, x->c_log2);
  tirx_team_end(b);
}

/* Before the block's P V GEMM: O = O a, P = S as 16 bits (the RS A fragment as it stands). */
static void rescale_and_pack(const kctx *x, const cons *s) {
  tirx_builder *b = x->b;
  tirx_team_begin(b, TIRX_TEAM_WARPGROUP);
  tirx__attn_rescale_pack(b, &s->rows, s->O, s->P, s->S);
  tirx_team_end(b);
}

/*
 * Block j without the overlap: S_j = Q K_j^T, its softmax, then O += P_j V_j, each GEMM waited
 * for before the next step. SCHED_SERIAL leaves the two consumer warpgroups to interleave on
 * their own (one's softmax under the other's GEMMs, when it happens). SCHED_PINGPONG makes
 * them take turns (FlashAttention-3's schedule without the overlap): a consumer's turn is
 * O += P_{j+1} V_{j+1} of its previous block, waited for, then S_j issued, and it passes the
 * turn on before waiting for S_j,
 *
 *   consumer 0:  [P V, S] softmax  . . . . . . . [P V, S] softmax
 *   consumer 1:  . . . . . [P V, S] softmax  . . . . . . . [P V, S]
 *
 * so each one's softmax runs under the other's GEMMs. kv_blocks takes the turn for the tile's
 * first S and passes it after its last P V.
 */
static void kv_block(const kctx *x, const cons *s, const tile_info *ti, tirx_expr *j, bool masked) {
  tirx_builder *b = x->b;
  const bool pingpong = x->key->schedule & SCHED_PINGPONG;
  tirx_expr *st = tirx_ring_stage(b, s->kr, s->it), *ph = tirx_ring_phase(b, s->kr, s->it, false);
  issue_s(x, s, st, ph, false);
  if (pingpong)
    turn_pass(b, s);
  retire(b, s, 0, s->kr, st);
  softmax(x, s, ti, j, masked);
  rescale_and_pack(x, s);
  issue_pv(x, s, st, ph, pingpong);
  retire(b, s, 0, s->vr, st);
  tirx_assign(b, s->it, tirx_add(b, s->it, I(b, 1)));
}

static void kv_blocks_overlap(const kctx *x, const cons *s, const tile_info *ti);

/* The tile's KV blocks from the last: the masked ones (the causal diagonal, the key tail) in
 * their own loop, then the unmasked ones, whose loop has no masking code (the overlap has its
 * own, kv_blocks_overlap). With the ping-pong a consumer takes one turn more than it has
 * blocks, a tile without blocks included: one wait and one pass each, as many as the other
 * consumer, whose tile is the same. */
static void kv_blocks(const kctx *x, const cons *s, const tile_info *ti) {
  tirx_builder *b = x->b;
  const bool pingpong = x->key->schedule & SCHED_PINGPONG;
  if (x->key->schedule & SCHED_OVERLAP) {
    kv_blocks_overlap(x, s, ti);
    return;
  }
  if (pingpong)
    turn_wait(b, s);
  tirx_expr *jm = tirx_for_begin(b, "jm", I(b, 0), tirx_sub(b, ti->nblocks, ti->nfull), NULL,
                                 TIRX_LOOP_SERIAL);
  kv_block(x, s, ti, tirx_let(b, "j", tirx_sub(b, tirx_sub(b, ti->nblocks, I(b, 1)), jm)), true);
  tirx_for_end(b);
  tirx_expr *ju = tirx_for_begin(b, "ju", I(b, 0), ti->nfull, NULL, TIRX_LOOP_SERIAL);
  kv_block(x, s, ti, tirx_let(b, "j", tirx_sub(b, tirx_sub(b, ti->nfull, I(b, 1)), ju)), false);
  tirx_for_end(b);
  if (pingpong)
    turn_pass(b, s);
}

/*
 * FlashAttention-3's intra-warpgroup overlap (SCHED_OVERLAP). Block n of the tile (n counts
 * from its first block, the last in key order; it is the CTA-wide count, so block n - 1's
 * stage is it - 1's) in the steady state:
 *
 *   issue S_n = Q K_n^T; issue O += P_{n-1} V_{n-1}     two wgmma groups in flight
 *   wait_group 1: S_n is complete; release K_n         P V still runs
 *   softmax of S_n (mask when masked)                  on the CUDA cores, under P V
 *   wait_group 0: P V is complete; release V_{n-1}
 *   O = O a_n, P_n = S_n as 16 bits
 *
 * so S_n, P_{n-1} and O are live together. The first block has no P V to overlap (S, wait,
 * softmax, P; O is 0 and needs no rescale) and the last P V is issued after the loops. The
 * rescale after P_{n-1} V_{n-1} is exact: O then holds the blocks up to n - 1 under the max
 * m_{n-1}, and a_n = exp2((m_{n-1} - m_n) c) brings it to m_n before P_n V_n adds to it.
 *
 * With the ping-pong as well (SCHED_PINGPONG | SCHED_OVERLAP, FlashAttention-3's schedule at
 * D = 128) a step's two GEMMs are issued in the consumer's turn, and the softmax under P V
 * then also runs under the other consumer's two GEMMs:
 *
 *   consumer 0:  [S_n, P_{n-1} V_{n-1}] softmax of S_n . . . . . [S_n+1, P_n V_n] ...
 *   consumer 1:  . . . . . . . . . . . [S_n, P_{n-1} V_{n-1}] softmax of S_n . . . . . .
 *
 * The first block's S and the last block's P V are outside the turns (there is one turn a
 * step, the same number, nblocks - 1, for both consumers, whose tile is the same).
 */
static void kv_step_overlap(const kctx *x, const cons *s, const tile_info *ti, tirx_expr *j,
                            bool masked) {
  tirx_builder *b = x->b;
  tirx_expr *st = tirx_ring_stage(b, s->kr, s->it), *ph = tirx_ring_phase(b, s->kr, s->it, false);
  tirx_expr *prev = tirx_sub(b, s->it, I(b, 1));
  tirx_expr *pst = tirx_ring_stage(b, s->vr, prev), *pph = tirx_ring_phase(b, s->vr, prev, false);
  const bool pingpong = x->key->schedule & SCHED_PINGPONG;
  issue_s(x, s, st, ph, pingpong);
  issue_pv(x, s, pst, pph, false);
  if (pingpong)
    turn_pass(b, s);
  retire(b, s, 1, s->kr, st); /* S_n; P_{n-1} V_{n-1} in flight */
  softmax(x, s, ti, j, masked);
  retire(b, s, 0, s->vr, pst);
  rescale_and_pack(x, s);
  tirx_assign(b, s->it, tirx_add(b, s->it, I(b, 1)));
}

/* The tile's KV blocks from the last, overlapped: the first alone (masked: the diagonal or
 * the key tail, or a mask that changes nothing when every block is whole), the other masked
 * ones, the unmasked ones, then the last block's P V. */
static void kv_blocks_overlap(const kctx *x, const cons *s, const tile_info *ti) {
  tirx_builder *b = x->b;
  tirx_expr *nm = tirx_let(b, "nmasked", tirx_sub(b, ti->nblocks, ti->nfull));
  tirx_if_begin(b, tirx_gt(b, ti->nblocks, I(b, 0)));
  {
    tirx_expr *st = tirx_ring_stage(b, s->kr, s->it), *ph = tirx_ring_phase(b, s->kr, s->it, false);
    issue_s(x, s, st, ph, false);
    retire(b, s, 0, s->kr, st);
    softmax(x, s, ti, tirx_sub(b, ti->nblocks, I(b, 1)), true);
    tirx_team_begin(b, TIRX_TEAM_WARPGROUP);
    tirx_cast_region(b, tirx_whole(b, s->P), tirx_whole(b, s->S), NULL); /* O is 0: no rescale */
    tirx_team_end(b);
    tirx_assign(b, s->it, tirx_add(b, s->it, I(b, 1)));
  }
  tirx_expr *jm = tirx_for_begin(b, "jm", I(b, 1), nm, NULL, TIRX_LOOP_SERIAL);
  kv_step_overlap(x, s, ti, tirx_let(b, "j", tirx_sub(b, tirx_sub(b, ti->nblocks, I(b, 1)), jm)), true);
  tirx_for_end(b);
  /* the first block was an unmasked one when there are no masked ones */
  tirx_expr *ju = tirx_for_begin(b, "ju", tirx_select(b, tirx_eq(b, nm, I(b, 0)), I(b, 1), I(b, 0)),
                                 ti->nfull, NULL, TIRX_LOOP_SERIAL);
  kv_step_overlap(x, s, ti, tirx_let(b, "j", tirx_sub(b, tirx_sub(b, ti->nfull, I(b, 1)), ju)), false);
  tirx_for_end(b);
  {
    tirx_expr *prev = tirx_sub(b, s->it, I(b, 1));
    tirx_expr *pst = tirx_ring_stage(b, s->vr, prev), *pph = tirx_ring_phase(b, s->vr, prev, false);
    issue_pv(x, s, pst, pph, false);
    retire(b, s, 0, s->vr, pst);
  }
  tirx_if_end(b);
}

/* What the producer's loads of K and V use. */
typedef struct kv_loads {
  tirx_tensor *K, *V, *Kbox, *Vbox;
  tirx_ring *kr, *vr;
  tirx_expr *it; /* the CTA's count of KV blocks */
} kv_loads;

/* The producer's TMA loads of the tile's KV block jj (from the last in key order: block
 * nblocks - 1 - jj) into the stage of block it, K then V. */
static void load_kv(const kctx *x, const kv_loads *p, const tile_info *ti, tirx_expr *jj) {
  tirx_builder *b = x->b;
  const int bn = x->bn, d = x->key->d;
  const int64_t kvbytes = (int64_t)bn * d * 2;
  tirx_expr *j = tirx_let(b, "j", tirx_sub(b, tirx_sub(b, ti->nblocks, I(b, 1)), jj));
  tirx_expr *st = tirx_ring_stage(b, p->kr, p->it), *ph = tirx_ring_phase(b, p->kr, p->it, true);
  tirx_expr *row = tirx_add(b, ti->k_off, tirx_mul(b, j, I(b, bn)));
  ring_load(b, p->kr, st, ph, kvbytes, box(b, p->Kbox, tirx_mul(b, st, I(b, bn)), bn, d),
            head_rows(b, p->K, ti->bk, row, ti->kvh, bn, d));
  /* V's stages go with K's */
  ring_load(b, p->vr, st, ph, kvbytes, box(b, p->Vbox, tirx_mul(b, st, I(b, bn)), bn, d),
            head_rows(b, p->V, ti->bk, row, ti->kvh, bn, d));
  tirx_assign(b, p->it, tirx_add(b, p->it, I(b, 1)));
}

static tirx_status build(const attn_key *key, tirx_kernel **out) {
  const attn_plan plan = plan_of(key->d);
  const int d = key->d, bn = plan.bn;
  tirx_dtype dt = (tirx_dtype)key->dtype;
  const char *suffix = "";
  for (int i = 0; i < NSCHEDULES; i++)
    if (SCHEDULES[i].schedule == key->schedule) suffix = SCHEDULES[i].suffix;
  char name[64];
  snprintf(name, sizeof name, "attention_%s_d%d%s%s%s", tirx_dtype_name(dt), d,
           key->causal ? "_causal" : "", key->varlen ? "_varlen" : "", suffix);
  tirx_builder *b = tirx_builder_create(name);
  tirx_arena *ar = tirx_builder_arena(b);
  tirx_set_target(b, "sm_90a");
  kctx x = {.b = b, .key = key, .bn = bn};
  x.B = tirx_param_int(b, "B", TIRX_I32);
  x.H = tirx_param_int(b, "H", TIRX_I32);
  x.G = tirx_param_int(b, "G", TIRX_I32);          /* query heads per KV head */
  x.Sq = tirx_param_int(b, "Sq", TIRX_I32);        /* varlen: the longest */
  x.Sk = tirx_param_int(b, "Sk", TIRX_I32);
  tirx_expr *Tq = tirx_param_int(b, "Tq", TIRX_I32), *Tk = tirx_param_int(b, "Tk", TIRX_I32);
  tirx_expr *Bq = tirx_param_int(b, "Bq", TIRX_I32), *Bk = tirx_param_int(b, "Bk", TIRX_I32);
  tirx_expr *Hkv = tirx_param_int(b, "Hkv", TIRX_I32);
  x.c_log2 = tirx_param_scalar(b, "scale_log2", TIRX_F32);
  tirx_expr *last1[4] = {NULL, NULL, NULL, I(b, 1)};
  tirx_tensor *Q = tirx_param_tensor_strided(b, "Q", dt, TIRX_EXPRS(Bq, Tq, x.H, I(b, d)), last1);
  tirx_tensor *K = tirx_param_tensor_strided(b, "K", dt, TIRX_EXPRS(Bk, Tk, Hkv, I(b, d)), last1);
  tirx_tensor *V = tirx_param_tensor_strided(b, "V", dt, TIRX_EXPRS(Bk, Tk, Hkv, I(b, d)), last1);
  tirx_tensor *O = tirx_param_tensor_strided(b, "O", dt, TIRX_EXPRS(Bq, Tq, x.H, I(b, d)), last1);
  /* LSE [B, H, Sq] (varlen [1, H, Tq]), dense; a launch without it passes has_lse = 0 */
  tirx_tensor *LSE = tirx_param_tensor(b, "LSE", TIRX_F32, TIRX_EXPRS(Bq, x.H, Tq), NULL);
  tirx_expr *has_lse = tirx_param_int(b, "has_lse", TIRX_I32);
  if (key->varlen) {
    x.cu_q = tirx_param_tensor(b, "cu_q", TIRX_I32, TIRX_EXPRS(tirx_add(b, x.B, I(b, 1))), NULL);
    x.cu_k = tirx_param_tensor(b, "cu_k", TIRX_I32, TIRX_EXPRS(tirx_add(b, x.B, I(b, 1))), NULL);
  }
  tirx_expr *sms = tirx_param_int(b, "sms", TIRX_I32);
  x.mblocks = tirx_let(b, "mblocks", tirx_ceildiv(b, x.Sq, I(b, BM)));
  /* pairs of tiles (tile_of) */
  tirx_expr *ntiles = tirx_let(b, "npairs", tirx_mul(b, tirx_mul(b, tirx_ceildiv(b, x.mblocks, I(b, 2)), x.B), x.H));
  tirx_set_block(b, 384, 1, 1);
  tirx_set_grid(b, tirx_max(b, tirx_min(b, tirx_mul(b, tirx_mul(b, tirx_ceildiv(b, tirx_ceildiv(b, x.Sq, I(b, BM)), I(b, 2)), x.B), x.H), sms), I(b, 1)), NULL, NULL);

  /* Shared memory: Q, the K and V rings, the O tile (plan.o_over_q: over Q's bytes), the LSE
   * rows, the barriers (plan_of's table). */
  tirx_tensor *Qbox, *Kbox, *Vbox, *Obox;
  tirx_tensor *Qs = tirx__attn_tile(b, "Qs", dt, BM, d, 128, &Qbox);
  tirx_tensor *Kring = tirx__attn_tile(b, "Ks", dt, STAGES * bn, d, 128, &Kbox);
  tirx_tensor *Vs = tirx__attn_tile(b, "Vs", dt, STAGES * bn, d, 128, &Vbox);
  /* O: swizzled for the TMA store; varlen stores rows one by one, from a plain tile */
  const int oswz = key->varlen ? 0 : 128;
  tirx_tensor *Os = plan.o_over_q ? tirx__attn_tile_over(b, "Os", Qs, dt, BM, d, oswz, &Obox)
                                  : tirx__attn_tile(b, "Os", dt, BM, d, oswz, &Obox);
  /* K as the (D, keys) B operand of S = Q K^T: K-major, the same bytes */
  tirx_tensor *Ks = tirx_alloc_shared_view(b, "Kt", Kring, 0, dt, 2, (int64_t[]){d, STAGES * bn},
      tirx_layout_permute(ar, tirx_layout_smem_tile(ar, STAGES * bn, d, 2, 128), 2, (int64_t[]){1, 0}));
  tirx_tensor *LseS = tirx_alloc_shared(b, "LseS", TIRX_F32, TIRX_DIMS(BM, 1), NULL);
  /* Q once per tile (released by both consumers), K and V block by block */
  tirx_ring *qr = tirx_ring_new(b, "q", 1, 1, 2), *kr = tirx_ring_new(b, "k", STAGES, 1, 2),
            *vr = tirx_ring_new(b, "v", STAGES, 1, 2);

  tirx_expr *tid = tirx_let(b, "tid", tirx_thread_linear(b));
  tirx_if_begin(b, tirx_eq(b, tid, I(b, 0)));
  tirx_rings_init(b, (tirx_ring *[]){qr, kr, vr}, 3);
  tirx_if_end(b);
  tirx_sync_threads(b);
  tirx_expr *wg = tirx_let(b, "wg", tirx_div(b, tid, I(b, 128)));
  const int64_t qbytes = (int64_t)BM * d * 2;

  /* ---- producer: one thread loads Q once per tile, then K and V block by block ---- */
  tirx_if_begin(b, tirx_eq(b, wg, I(b, 0)));
  tirx_setmaxnreg(b, 24, false);
  tirx_filter_begin(b, TIRX_AXIS_TID, 0, 1);
  {
    tirx_expr *it = tirx_var(b, "it", TIRX_I32, NULL), *qt = tirx_var(b, "qt", TIRX_I32, NULL);
    tirx_expr *t = tirx_for_begin(b, "t", tirx_block_idx(b, 0), ntiles, tirx_grid_dim(b, 0), TIRX_LOOP_SERIAL);
    tirx_expr *second = tirx_for_begin(b, "second", I(b, 0), I(b, 2), NULL, TIRX_LOOP_SERIAL);
    tile_info ti = tile_of(&x, t, second);
    tirx_if_begin(b, ti.valid);
    const kv_loads kv = {.K = K, .V = V, .Kbox = Kbox, .Vbox = Vbox, .kr = kr, .vr = vr, .it = it};
    /* o_over_q: the tile's first KV block before its Q, whose stage the previous tile's
     * epilogue holds until its O is stored (a block needs no more than its own ring's stages:
     * the consumers' epilogue waits for nothing the producer issues after it) */
    if (plan.o_over_q) {
      tirx_if_begin(b, tirx_gt(b, ti.nblocks, I(b, 0)));
      load_kv(&x, &kv, &ti, I(b, 0));
      tirx_if_end(b);
    }
    ring_load(b, qr, I(b, 0), tirx_bit_xor(b, tirx_bit_and(b, qt, I(b, 1)), I(b, 1)), qbytes,
              tirx_whole(b, Qbox),
              head_rows(b, Q, ti.bq, tirx_add(b, ti.q_off, tirx_mul(b, ti.mb, I(b, BM))), ti.h, BM, d));
    tirx_assign(b, qt, tirx_add(b, qt, I(b, 1)));
    tirx_expr *jj = tirx_for_begin(b, "jj", I(b, plan.o_over_q ? 1 : 0), ti.nblocks, NULL,
                                   TIRX_LOOP_SERIAL);
    load_kv(&x, &kv, &ti, jj);
    tirx_for_end(b);
    tirx_if_end(b);
    tirx_for_end(b); /* second */
    tirx_for_end(b);
  }
  tirx_filter_end(b);

  /* ---- consumers: warpgroup c owns query rows c * 64 .. of the tile ---- */
  tirx_else(b);
  tirx_setmaxnreg(b, 240, true);
  cons s = {.Qs = Qs, .Ks = Ks, .Vs = Vs, .kr = kr, .vr = vr};
  s.c = tirx_let(b, "c", tirx_sub(b, wg, I(b, 1)));
  s.tid_wg = tirx_let(b, "tid_wg", tirx_mod(b, tid, I(b, 128)));
  s.it = tirx_var(b, "it", TIRX_I32, NULL);
  tirx_expr *qt = tirx_var(b, "qt", TIRX_I32, NULL);
  if (key->schedule & SCHED_PINGPONG)
    turn_edge(b, &s, 1, tirx_named_barrier_arrive);
  tirx_expr *t = tirx_for_begin(b, "t", tirx_block_idx(b, 0), ntiles, tirx_grid_dim(b, 0), TIRX_LOOP_SERIAL);
  tirx_expr *second = tirx_for_begin(b, "second", I(b, 0), I(b, 2), NULL, TIRX_LOOP_SERIAL);
  tile_info ti = tile_of(&x, t, second);
  tirx_if_begin(b, ti.valid);
  tirx_team_begin(b, TIRX_TEAM_WARPGROUP);
  s.S = tirx_alloc_local(b, "S", TIRX_F32, TIRX_DIMS(WM, bn), tirx_layout_wgmma_acc(ar, WM, bn));
  s.P = tirx_alloc_local(b, "P", dt, TIRX_DIMS(WM, bn), tirx_layout_wgmma_a(ar, WM, bn));
  s.O = tirx_alloc_local(b, "O", TIRX_F32, TIRX_DIMS(WM, d), tirx_layout_wgmma_acc(ar, WM, d));
  tirx__attn_rows_new(b, &s.rows, bn, d);
  tirx_fill(b, tirx_whole(b, s.O), tirx_float(b, 0.0, TIRX_F32), NULL);
  tirx_team_end(b);
  tirx_ring_wait(b, qr, I(b, 0), tirx_bit_and(b, qt, I(b, 1)));
  kv_blocks(&x, &s, &ti);
  /* Q is free once both consumers are past their last S = Q K^T (o_over_q: once O, written
   * over it, is stored) */
  if (!plan.o_over_q)
    release(b, &s, qr, I(b, 0));
  tirx_assign(b, qt, tirx_add(b, qt, I(b, 1)));
  /* Epilogue: O / l (0 for a row that saw no key), lse = m scale + ln l */
  tirx_team_begin(b, TIRX_TEAM_WARPGROUP);
  tirx__attn_normalize(b, &s.rows, s.O);
  tirx_tensor *O16 = tirx_alloc_local(b, "O16", dt, TIRX_DIMS(WM, d), tirx_layout_wgmma_acc(ar, WM, d));
  tirx_cast_region(b, tirx_whole(b, O16), tirx_whole(b, s.O), NULL);
  tirx__attn_lse(b, &s.rows, x.c_log2);
  tirx_team_end(b);
  /*
   * Before the warpgroup writes O: without o_over_q, the previous tile's O store has read Os
   * (its thread waited). With o_over_q O goes over Q's bytes, which this tile's S = Q K^T read
   * through the async proxy; the ordering, for consumer c (rows R_c = 64 c .. 64 c + 63):
   *
   *   1. Every thread of the warpgroup ran wgmma.wait_group 0 after its last GEMM (retire, the
   *      tile's last S and its last P V; a tile without KV blocks ran none, and Q's TMA load is
   *      complete: the q_full wait), so the warpgroup's reads of Q are complete.
   *   2. A barrier, then the writes: fixed length, the warpgroup's own (named barrier 1 + c):
   *      O's view has Q's layout, so R_c of O is R_c of Q, bytes only this warpgroup's wgmma
   *      read. Varlen's plain O tile puts R_c over other bytes (rows 0..63 of O are the first
   *      two 64-column blocks of every row of Q), so there both consumers wait for each other
   *      (named barrier O_BAR, 256 threads): each one's reads are complete before either writes.
   *   3. O's stmatrix writes (generic proxy), fence.proxy.async, named barrier 1 + c, then the
   *      TMA store (async proxy) reads R_c from one thread (the warpgroup's first); varlen's
   *      row copies read them through the generic proxy from all four warps.
   *   4. Only then is Q released: fixed length, by the storing thread itself after
   *      cp.async.bulk.wait_group.read 0 (its store has read O); varlen, after every thread's
   *      row copies, a fence.proxy.async (the next Q is an async-proxy write) and named barrier
   *      1 + c. The producer loads the next tile's Q once both consumers released it (the
   *      ring's two arrivals), so no write of the next Q meets a read of this O, and the next
   *      tile's O is written after its own steps 1-2. Both consumers take every valid tile, so
   *      O_BAR always has its 256 threads.
   *
   * The price: the next tile's Q load waits for this epilogue (without o_over_q it runs under
   * it); the producer loads that tile's first KV block before it, under the epilogue.
   */
  if (plan.o_over_q && key->varlen)
    tirx_named_barrier_sync(b, O_BAR, 256);
  else
    tirx__attn_wg_barrier(b, s.c);
  tirx_team_begin(b, TIRX_TEAM_WARPGROUP);
  tirx_copy(b, rect(b, Os, tirx_mul(b, s.c, I(b, WM)), I(b, 0), WM, d), tirx_whole(b, O16), NULL);
  tirx_copy(b, rect(b, LseS, tirx_mul(b, s.c, I(b, WM)), I(b, 0), WM, 1), tirx__attn_col0(b, s.rows.Lx), NULL);
  tirx_team_end(b);
  tirx_fence_proxy_async(b);
  tirx__attn_wg_barrier(b, s.c);
  tirx_expr *row0 = tirx_let(b, "row0", tirx_add(b, tirx_mul(b, ti.mb, I(b, BM)), tirx_mul(b, s.c, I(b, WM))));
  /* lse: thread r < 64 of the warpgroup writes row row0 + r */
  tirx_expr *r = s.tid_wg;
  tirx_if_begin(b, tirx_and(b, tirx_and(b, tirx_ne(b, has_lse, I(b, 0)), tirx_lt(b, r, I(b, WM))),
                            tirx_lt(b, tirx_add(b, row0, r), ti.len_q)));
  tirx_store(b, LSE, TIRX_EXPRS(ti.bq, ti.h, tirx_add(b, ti.q_off, tirx_add(b, row0, r))),
             tirx_load(b, LseS, TIRX_EXPRS(tirx_add(b, tirx_mul(b, s.c, I(b, WM)), r), I(b, 0))));
  tirx_if_end(b);
  if (!key->varlen) { /* rows past S_q are clipped by the tensor map */
    for (int q = 0; q < 2; q++) {
      tirx_filter_begin(b, TIRX_AXIS_TID, 128 * (1 + q), 128 * (1 + q) + 1);
      tirx_copy_async(b, head_rows(b, O, ti.bq, tirx_add(b, tirx_mul(b, ti.mb, I(b, BM)), I(b, q * WM)), ti.h, WM, d),
                      box(b, Obox, I(b, q * WM), WM, d), NULL);
      tirx_bulk_commit(b);
      tirx_bulk_wait(b, 0, true);
      tirx_filter_end(b);
    }
    if (plan.o_over_q) /* tid_wg 0 is the thread that stored and waited */
      release(b, &s, qr, I(b, 0));
  } else { /* varlen: row by row, warp w of the warpgroup rows w, w + 4, ... */
    tirx_expr *w = tirx_let(b, "w", tirx_div(b, s.tid_wg, I(b, 32)));
    tirx_expr *rr = tirx_for_begin(b, "rr", w, I(b, WM), I(b, 4), TIRX_LOOP_SERIAL);
    tirx_if_begin(b, tirx_lt(b, tirx_add(b, row0, rr), ti.len_q));
    tirx_team_begin(b, TIRX_TEAM_WARP);
    tirx_copy(b, head_rows(b, O, I(b, 0), tirx_add(b, ti.q_off, tirx_add(b, row0, rr)), ti.h, 1, d),
              box(b, Obox, tirx_add(b, tirx_mul(b, s.c, I(b, WM)), rr), 1, d), NULL);
    tirx_team_end(b);
    tirx_if_end(b);
    tirx_for_end(b);
    if (plan.o_over_q) { /* every row read before the next Q is loaded over them */
      tirx_fence_proxy_async(b);
      tirx__attn_wg_barrier(b, s.c);
      release(b, &s, qr, I(b, 0));
    }
  }
  tirx_if_end(b); /* valid */
  tirx_for_end(b); /* second */
  tirx_for_end(b);
  if (key->schedule & SCHED_PINGPONG)
    turn_edge(b, &s, 0, tirx_named_barrier_sync);
  if (!key->varlen)
    for (int q = 0; q < 2; q++) { /* stores complete before the CTA exits */
      tirx_filter_begin(b, TIRX_AXIS_TID, 128 * (1 + q), 128 * (1 + q) + 1);
      tirx_bulk_wait(b, 0, false);
      tirx_filter_end(b);
    }
  tirx_if_end(b);
  return tirx__kernels_finish(b, "tirx_kernels_attention_build", out);
}

static tirx_status build_for_op(const void *ctx, tirx_kernel **out) { return build(ctx, out); }

/* The schedule $TIRX_ATTN_SCHEDULE asks for at head dim d: unset or empty the default
 * (serial), else one of SCHEDULES by name; anything else is TIRX_E_INVALID_ARG (an A/B run with
 * a misspelt value would otherwise time the default twice), and so is a schedule other than
 * serial at D = 256, rather than a kernel other than the one asked for: their kernels spill
 * there (ptxas 13, bf16: overlap and pingpong_overlap 116-184 bytes in every variant, S, P and
 * O being live together; pingpong 80 bytes causal). */
static tirx_status schedule_of(const char *fn, int d, int32_t *out) {
  const char *v = getenv("TIRX_ATTN_SCHEDULE");
  *out = SCHED_SERIAL;
  if (!v || !*v)
    return TIRX_OK;
  for (int i = 0; i < NSCHEDULES; i++)
    if (strcmp(v, SCHEDULES[i].name) == 0) {
      if (d == 256 && SCHEDULES[i].schedule != SCHED_SERIAL)
        return tirx__error(TIRX_E_INVALID_ARG, "%s: TIRX_ATTN_SCHEDULE is \"%s\", which D = 256 "
                           "does not have (its kernels spill there): expected serial (the "
                           "default) at D = 256", fn, v);
      *out = SCHEDULES[i].schedule;
      return TIRX_OK;
    }
  return tirx__error(TIRX_E_INVALID_ARG, "%s: TIRX_ATTN_SCHEDULE is \"%.64s\", expected serial "
                     "(the default), overlap, pingpong or pingpong_overlap", fn, v);
}

tirx_status tirx_kernels_attention_build(const tirx_attention_options *opts, tirx_dtype dtype,
                                         int d, int h, int h_kv, bool varlen, tirx_kernel **out) {
  static const char fn[] = "tirx_kernels_attention_build";
  if (!out)
    return tirx__error(TIRX_E_NULL_ARG, "%s: out is NULL", fn);
  *out = NULL;
  tirx_attention_options copy;
  if (tirx__ext_in(fn, "opts", &tirx__ext_attention_options, opts, &copy) != TIRX_OK)
    return TIRX_E_INVALID_ARG;
  opts = &copy;
  if (dtype != TIRX_F16 && dtype != TIRX_BF16)
    return tirx__error(TIRX_E_INVALID_ARG, "%s: dtype is %s, expected f16 or bf16", fn,
                       tirx_dtype_name(dtype) ? tirx_dtype_name(dtype) : "invalid");
  if (d != 64 && d != 128 && d != 256)
    return tirx__error(TIRX_E_INVALID_ARG, "%s: d is %d, expected 64, 128 or 256", fn, d);
  if (h_kv < 1 || h < h_kv || h % h_kv)
    return tirx__error(TIRX_E_INVALID_ARG, "%s: h is %d and h_kv %d, expected h a multiple of "
                       "h_kv >= 1", fn, h, h_kv);
  attn_key key = {.dtype = dtype, .d = d, .causal = opts->causal, .varlen = varlen};
  if (schedule_of(fn, d, &key.schedule) != TIRX_OK)
    return TIRX_E_INVALID_ARG;
  return build(&key, out);
}

tirx_status tirx__attention_fast_get(const tirx__attn_call *c, tirx_kernel **out) {
  static const char fn[] = "tirx_op_attention";
  *out = NULL;
  /* The kernel counts its tile pairs, ceil(ceil(S_q / BM) / 2) x B x H (build's npairs; varlen
   * S_q the longest sequence), and indexes them in int32: more would wrap and leave o
   * unwritten. Fixed length needs tensors too large to hold for it; varlen only many
   * sequences beside a long one. */
  int64_t pairs = ((c->s_q + BM - 1) / BM + 1) / 2 * (int64_t)c->batch * c->h;
  if (pairs > INT32_MAX)
    return tirx__error(TIRX_E_INVALID_ARG, "%s: B x H x ceil(S_q / %d) is %d x %d x %lld = %lld "
                       "tile pairs, expected at most 2^31 - 1 (S_q the longest query sequence)",
                       fn, 2 * BM, c->batch, c->h, (long long)((c->s_q + 2 * BM - 1) / (2 * BM)),
                       (long long)pairs);
  attn_key key = {.dtype = c->dtype, .d = c->d, .causal = c->causal, .varlen = c->varlen};
  if (schedule_of(fn, c->d, &key.schedule) != TIRX_OK)
    return TIRX_E_INVALID_ARG;
  tirx_status st = tirx__kernels_get(&key, sizeof key, build_for_op, &key, out);
  if (st != TIRX_OK)
    return tirx__error(st, "%s: %s", fn, tirx_last_error());
  return TIRX_OK;
}

void tirx__attention_fast_args(const tirx__attn_call *c, tirx__attn_args *a) {
  int64_t bq = c->varlen ? 1 : c->batch;
  int64_t tq = c->varlen ? c->t_q : c->s_q, tk = c->varlen ? c->t_k : c->s_k;
  memcpy(a->q_shape, (int64_t[]){bq, tq, c->h, c->d}, sizeof a->q_shape);
  memcpy(a->k_shape, (int64_t[]){bq, tk, c->h_kv, c->d}, sizeof a->k_shape);
  memcpy(a->lse_shape, (int64_t[]){bq, c->h, tq}, sizeof a->lse_shape);
  a->cu_shape[0] = (int64_t)c->batch + 1;
  /* the integer parameters in build's order: B, H, G, Sq, Sk, Tq, Tk, Bq, Bk, Hkv */
  const int64_t ints[] = {c->batch, c->h, c->h / c->h_kv, c->s_q, c->s_k, tq, tk, bq, bq, c->h_kv};
  tirx_arg *args = a->args;
  int n = 0;
  for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++)
    args[n++] = tirx_arg_i32((int32_t)ints[i]);
  args[n++] = tirx_arg_f32((float)(c->scale * M_LOG2E));
  args[n++] = tirx_arg_tensor(c->q, c->dtype, 4, a->q_shape, c->q_stride);
  args[n++] = tirx_arg_tensor(c->k, c->dtype, 4, a->k_shape, c->k_stride);
  args[n++] = tirx_arg_tensor(c->v, c->dtype, 4, a->k_shape, c->v_stride);
  args[n++] = tirx_arg_tensor(c->o, c->dtype, 4, a->q_shape, c->o_stride);
  /* without lse the kernel is passed o's pointer in its place and never writes it (has_lse 0) */
  args[n++] = tirx_arg_tensor(c->lse ? (void *)c->lse : c->o, TIRX_F32, 3, a->lse_shape, NULL);
  args[n++] = tirx_arg_i32(c->lse ? 1 : 0);
  if (c->varlen) {
    args[n++] = tirx_arg_tensor((void *)c->cu_q_dev, TIRX_I32, 1, a->cu_shape, NULL);
    args[n++] = tirx_arg_tensor((void *)c->cu_k_dev, TIRX_I32, 1, a->cu_shape, NULL);
  }
  args[n++] = tirx_arg_i32(c->sms);
  a->n = n;
}

tirx_status tirx__attention_fast(tirx_runtime *rt, const tirx__attn_call *c, void *stream) {
  tirx_kernel *k;
  tirx_status st = tirx__attention_fast_get(c, &k);
  if (st != TIRX_OK)
    return st;
  tirx__attn_args a;
  tirx__attention_fast_args(c, &a);
  st = tirx__kernels_launch("tirx_op_attention", rt, k, a.args, a.n, stream);
  tirx_kernel_release(k);
  return st;
}
