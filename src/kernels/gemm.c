/* A warp-specialised, persistent Hopper GEMM written with the builder (tirx/kernels.h), and
 * tirx_op_gemm. */
#include "kernels_internal.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

/* EW: the columns of one chunk of a fused activation's epilogue (build_wgmma): one 64-column
 * block of the C tile's 128-byte swizzle (two or four blocks of the narrower ones), where a
 * region of it may begin. */
enum { BK = 64, GROUP_M = 8, SMEM = 232448, EW = 64 };

/* A checked build request: the problem and the options with their defaults filled in. */
typedef struct gemm_spec {
  tirx_dtype dtype;
  int64_t m, n, k;
  tirx_epilogue epilogue;
  const char *family; /* "wgmma", "mma" or "scalar" */
  int sms;            /* 1..1024 */
  tirx_gemm_path path; /* as asked (TIRX_GEMM_PATH_AUTO: the plan's) */
  int gemv_rows;       /* 0 (the plan's), 1, 2 or 4 */
  int splits;          /* the wgmma kernel's K splits: 0 or 1, or > 1 for the split-K variant;
                        * as asked by opts->splits until planned */
  bool reduce;         /* build the split-K reduction (build_reduce) instead */
  int cm, cn;          /* the cluster shape asked for (opts->cluster_m/_n; 0, 0: the plan's) */
} gemm_spec;

typedef tirx_gemm_tiles gemm_tiles;

/* Shared bytes of the wgmma kernel for tile shape t: the ring, the C tile, the f32 bias row
 * and the barriers (each buffer rounded up to its 1024-byte alignment). */
static int64_t smem_bytes(const gemm_tiles *t, int stages) {
  int64_t ring = (int64_t)stages * (t->block_m + t->block_n) * t->block_k * 2;
  int64_t ctile = (int64_t)t->block_m * t->block_n * 2;
  return ring + ctile + 1024 + 1024 + (int64_t)t->block_n * 4;
}

/*
 * The busiest SM's time for tile shape (bm, bn) in arbitrary units: waves of tiles, each the
 * larger of its bytes over the SM's share of the memory bandwidth and its flops over the SM's
 * tensor rate. Bytes: the rows of B it reads from HBM and the rows of A, which every tile of
 * a row re-reads from L2 (counted at a quarter); rows past M or N are zero-filled by TMA, not
 * read. Memory: ~3.5 TB/s shared by the SMs that work, at most 1/120 of it each (an estimate:
 * saturating HBM takes nearly every SM); tensor cores: ~7 TFLOP/s per SM (989 over 132).
 */
static double tile_cost(const gemm_spec *s, int sms, int64_t bm, int64_t bn) {
  int64_t tiles = (s->m + bm - 1) / bm * ((s->n + bn - 1) / bn);
  int64_t waves = (tiles + sms - 1) / sms, active = tiles < sms ? tiles : sms;
  double rows = 0.25 * (double)(s->m < bm ? s->m : bm) + (double)(s->n < bn ? s->n : bn);
  double bytes = rows * (double)s->k * 2 + (double)(bm * bn) * 2;
  double bw = 3.5e12 / (double)(active > 120 ? active : 120);
  double flops = 2.0 * (double)bm * (double)bn * (double)s->k;
  double mem = bytes / bw, mma = flops / 7.0e12;
  return (double)waves * (mem > mma ? mem : mma);
}

enum { GEMV_MAX_M = 8, GEMV_THREADS = 256, SPLITK_MAX = 64, SPLITK_MAX_M = 65535 };

static gemm_tiles gemm_pick(const gemm_spec *s) {
  /* The compute-bound default: 128 x 256 per CTA as two consumer warpgroups of 64 rows over
   * three stages (the accumulator, its 16-bit copy and the stmatrix addresses fit the
   * consumers' 232 registers). Kept whenever it gives every SM four tiles or more. */
  gemm_tiles t = {.block_m = 128, .block_n = 256, .block_k = BK, .stages = 3, .consumers = 2};
  int sms = s->sms;
  if ((s->m + 127) / 128 * ((s->n + 255) / 256) >= 4 * (int64_t)sms) return t;
  /* Fewer tiles than that (decode-like M, narrow N): the tile shape that keeps the busiest
   * SM shortest (DeepGEMM's idea: BLOCK_N in steps of 16 so the tiles fill the SMs), rows of
   * 64 (one consumer warpgroup) when M <= 64, else 128 (two). Ties go to the wider tile. */
  int64_t bm = s->m <= 64 ? 64 : 128;
  int64_t best = 256;
  double best_cost = tile_cost(s, sms, bm, 256);
  for (int64_t bn = 240; bn >= 16; bn -= 16) {
    double c = tile_cost(s, sms, bm, bn);
    if (c < best_cost * 0.999) best = bn, best_cost = c;
  }
  /* Narrow tiles and split-K, where split-K may follow (not for a forced wgmma path). Measured
   * on the H200 with the stepped descriptors (session 13, PERF-NOTES; bf16, N = 4096, K = 4096
   * and 14336): 64 x 32 tiles without a split were the fastest at M = 8..64, 13.7 and 36.5 us,
   * against 14.9-16.4 and 38.5-39.9 for 64 x 128 with 4 splits (which session 6 had measured
   * 1.2-1.7x faster than 64 x 32 when every descriptor was rebuilt); at M = 128, K = 14336,
   * 128 x 64 with 2 splits took 43.3 us against 47.1 for 128 x 32 and 47.3 for 128 x 128 with 4.
   * So rows of 64 keep a 32-wide tile, and only the 16-wide one (not measured since) still
   * becomes 128 columns split over K; rows of 128 on a long K take 64 columns and the splits
   * that fill the SMs. */
  if (s->path != TIRX_GEMM_PATH_WGMMA && s->m <= SPLITK_MAX_M) {
    if (bm == 64 && best < 32)
      best = 128;
    else if (bm == 128 && best < 48 && s->k >= 8192)
      best = 64;
  }
  t.block_m = (int)bm;
  t.block_n = (int)best;
  t.consumers = bm == 64 ? 1 : 2;
  /* As many stages as shared memory holds (small tiles are memory-bound: bytes in flight),
   * at most 16. */
  t.stages = 3;
  while (t.stages < 16 && smem_bytes(&t, t.stages + 1) <= SMEM) t.stages++;
  return t;
}

/* The rows of A one TMA load of the wgmma kernel reads (see build_wgmma): M rounded up to 8
 * when M < block_m, else block_m. */
static int64_t a_rows_of(const gemm_spec *s, const gemm_tiles *t) {
  return s->m < t->block_m ? (s->m + 7) / 8 * 8 : t->block_m;
}

/*
 * The cluster shape, in tiles, of the wgmma kernel with tiles t: *cm x *cn CTAs whose tiles
 * are neighbours along M (2 x 1: one tile of B for both) or along N (1 x 2: one tile of A),
 * each CTA loading half of the shared tile with a TMA multicast into both. Only where asked
 * for (s->cm, s->cn): measured on the H200 (PERF-NOTES, session 8) against the same kernels
 * without, clusters were 5% faster on 8192 x 57344 x 8192 only and 1-12% slower on most other
 * shapes (the decode tiles' L2 reads are not what limits them; each stage then waits for the
 * slower CTA of the two), so the plan's own choice is 1 x 1. A halves only on 8-row
 * boundaries (the swizzle atom): a tile of fewer than 16 rows of A (M < 16 on the decode
 * tiles) is never shared and 1 x 2 falls back to 1 x 1 there.
 */
static void cluster_pick(const gemm_spec *s, const gemm_tiles *t, int *cm, int *cn) {
  *cm = *cn = 1;
  if (strcmp(s->family, "wgmma") || s->path == TIRX_GEMM_PATH_GEMV) return;
  if (s->cn == 2 && a_rows_of(s, t) % 16 == 0) *cn = 2;
  if (s->cm == 2 && t->block_n % 16 == 0) *cm = 2;
}

static tirx_region *rect(tirx_builder *b, tirx_tensor *t, tirx_expr *r0, tirx_expr *c0,
                         int64_t rows, int64_t cols) {
  return tirx_region_new(b, t, TIRX_EXPRS(r0, c0), (int64_t[]){rows, cols});
}

static tirx_region *elem(tirx_builder *b, tirx_tensor *bars, tirx_expr *i) {
  return tirx_region_new(b, bars, TIRX_EXPRS(i), (int64_t[]){1});
}

static tirx_expr *I(tirx_builder *b, int64_t v) { return tirx_int(b, v); }

/* The tile (tm, tn) of persistent step `tile`, in groups of GROUP_M tile rows (L2 reuse). */
static void tile_coords(tirx_builder *b, tirx_expr *tile, tirx_expr *tiles_m, tirx_expr *tiles_n,
                        tirx_expr **tm, tirx_expr **tn) {
  tirx_expr *per_group = tirx_let(b, "per_group", tirx_mul(b, tiles_n, I(b, GROUP_M)));
  tirx_expr *first = tirx_let(b, "first_m", tirx_mul(b, tirx_div(b, tile, per_group), I(b, GROUP_M)));
  tirx_expr *rows = tirx_let(b, "group_rows", tirx_min(b, tirx_sub(b, tiles_m, first), I(b, GROUP_M)));
  tirx_expr *in = tirx_let(b, "in_group", tirx_mod(b, tile, per_group));
  *tm = tirx_let(b, "tm", tirx_add(b, first, tirx_mod(b, in, rows)));
  *tn = tirx_let(b, "tn", tirx_div(b, in, rows));
}

static tirx_status build_wgmma(const gemm_spec *s, tirx_kernel **out);
static tirx_status build_simple(const gemm_spec *s, tirx_kernel **out);
static tirx_status build_gemv(const gemm_spec *s, int rows, tirx_kernel **out);

/* The plan's gemv range: measured on the H200 (PERF-NOTES, session 5), gemv is 1.05-1.52x
 * cuBLAS at M = 1 but FMA-bound at M = 8 (0.49-0.68x). M <= 2 always takes gemv. M = 3 and 4
 * take it only where the wgmma plan would split K, or take a tile under 48 columns on a K of
 * 8192 or more: the wgmma tiles at M = 8 (which M = 3, 4 share: A's rows rounded up to 8)
 * were faster than gemv at M = 4 on the six LLaMA shapes without a split (session 12, by
 * 3-23%: 28672 x 4096 61.1 against 75.0 us), and, forced side by side in one call (session 14),
 * on the 64 x 32 tile at 4 x 4096 x 4096 (13.3 against 13.6 us bf16, 13.2 against 14.4 f16)
 * but not at 4 x 4096 x 14336 (36.5 against 34.3, 36.3 against 33.8). Forcing gemv still
 * works up to GEMV_MAX_M. */
enum { GEMV_ALWAYS_MAX_M = 2, GEMV_AUTO_MAX_M = 4 };

/* Split-K's count for the tiles t: 0 when the tiles fill half the SMs or more or K has fewer
 * than 8 blocks of 64; else as many splits as fill the SMs, each of 4 K blocks or more, at most
 * 16. Then the count that leaves no split empty (ceil(kblocks / ceil(kblocks / S))). */
static int splits_for(const gemm_spec *s, const gemm_tiles *t, int asked) {
  int64_t tiles = (s->m + t->block_m - 1) / t->block_m * ((s->n + t->block_n - 1) / t->block_n);
  int64_t kblocks = (s->k + BK - 1) / BK, S = asked;
  if (!S) {
    if (tiles * 2 > s->sms || kblocks < 8) return 0;
    S = s->sms / tiles;
    if (S > kblocks / 4) S = kblocks / 4;
    if (S > 16) S = 16;
    if (S < 2) return 0;
  }
  if (S > kblocks) S = kblocks;
  int64_t kbs = (kblocks + S - 1) / S;
  return (int)((kblocks + kbs - 1) / kbs);
}

/* The gemv path's rows of B per CTA: the most of 4, 2, 1 that gives 2 * sms CTAs or more
 * (each CTA then streams rows * K elements of B; more rows share each vector of A). */
static int gemv_rows_for(const gemm_spec *s) {
  if (s->gemv_rows) return s->gemv_rows;
  for (int r = 4; r > 1; r /= 2)
    if ((s->n + r - 1) / r >= 2 * (int64_t)s->sms) return r;
  return 1;
}

/* The plan (tirx_kernels_gemm_plan) for a checked spec. */
static tirx_gemm_plan plan_of(const gemm_spec *s) {
  tirx_gemm_plan p = {0};
  p.cluster_m = p.cluster_n = 1;
  bool wgmma = strcmp(s->family, "wgmma") == 0;
  tirx_gemm_path path = s->path;
  if (path == TIRX_GEMM_PATH_AUTO) {
    path = wgmma && s->m <= GEMV_ALWAYS_MAX_M ? TIRX_GEMM_PATH_GEMV : TIRX_GEMM_PATH_WGMMA;
    if (path == TIRX_GEMM_PATH_WGMMA && wgmma && s->m <= SPLITK_MAX_M) {
      gemm_tiles t = gemm_pick(s);
      bool split = splits_for(s, &t, 0) >= 2;
      if (s->m <= GEMV_AUTO_MAX_M && (split || (t.block_n < 48 && s->k >= 8192)))
        path = TIRX_GEMM_PATH_GEMV;
      else if (split)
        path = TIRX_GEMM_PATH_WGMMA_SPLITK;
    }
  }
  p.path = path;
  p.splits = 1;
  if (path == TIRX_GEMM_PATH_GEMV) {
    p.name = "gemv";
    p.gemv_rows = gemv_rows_for(s);
    p.ctas = (s->n + p.gemv_rows - 1) / p.gemv_rows;
    return p;
  }
  p.name = wgmma ? "wgmma" : s->family;
  /* The tiles of the path taken, as tirx_op_gemm builds them (it passes the plan's path):
   * gemm_pick's split-K tiles only where the plan splits. */
  gemm_spec taken = *s;
  taken.path = path;
  p.tiles = gemm_pick(&taken);
  int64_t tiles = (s->m + p.tiles.block_m - 1) / p.tiles.block_m *
                  ((s->n + p.tiles.block_n - 1) / p.tiles.block_n);
  if (path == TIRX_GEMM_PATH_WGMMA_SPLITK) {
    p.name = "wgmma_splitk";
    p.splits = splits_for(s, &p.tiles, s->splits ? s->splits : 0);
    if (p.splits < 2 && !s->splits) /* forced without a count: the fewest that split */
      p.splits = splits_for(s, &p.tiles, 2);
    tiles *= p.splits;
    p.workspace_bytes = (int64_t)p.splits * ((s->m + p.tiles.block_m - 1) / p.tiles.block_m) *
                        p.tiles.block_m * ((s->n + p.tiles.block_n - 1) / p.tiles.block_n) *
                        p.tiles.block_n * 4;
  }
  cluster_pick(s, &p.tiles, &p.cluster_m, &p.cluster_n);
  if (wgmma) { /* the persistent grid: whole clusters, at most sms CTAs */
    int64_t cs = p.cluster_m * p.cluster_n;
    int64_t tm = (s->m + p.tiles.block_m - 1) / p.tiles.block_m;
    int64_t tn = (s->n + p.tiles.block_n - 1) / p.tiles.block_n;
    int64_t units = (tm + p.cluster_m - 1) / p.cluster_m * ((tn + p.cluster_n - 1) / p.cluster_n) *
                    p.splits * cs;
    p.ctas = units < s->sms / cs * cs ? units : s->sms / cs * cs;
  } else {
    p.ctas = (s->m + 63) / 64 * ((s->n + 63) / 64);
  }
  return p;
}


static const char *const ep_name[4] = {"", "_bias", "_bias_silu", "_bias_gelu"};

/* The options checked, with their defaults, into s (the problem is filled in by the caller). */
static tirx_status check_options(const char *fn, const tirx_gemm_options *o, gemm_spec *s) {
  tirx_gemm_options copy;
  if (tirx__ext_in(fn, "opts", &tirx__ext_gemm_options, o, &copy) != TIRX_OK)
    return TIRX_E_INVALID_ARG;
  o = &copy;
  if (o->epilogue < TIRX_EPILOGUE_NONE || o->epilogue > TIRX_EPILOGUE_BIAS_GELU)
    return tirx__error(TIRX_E_INVALID_ARG,
                       "%s: opts->epilogue is %d, expected a tirx_epilogue (0 to 3)", fn,
                       (int)o->epilogue);
  if (o->family && strcmp(o->family, "wgmma") && strcmp(o->family, "mma") &&
      strcmp(o->family, "scalar"))
    return tirx__error(TIRX_E_INVALID_ARG,
                       "%s: opts->family is \"%.64s\", expected NULL, \"wgmma\", \"mma\" or "
                       "\"scalar\"", fn, o->family);
  if (o->sms < 0 || o->sms > 1024)
    return tirx__error(TIRX_E_INVALID_ARG, "%s: opts->sms is %d, expected 0 (132) to 1024", fn,
                       o->sms);
  if (o->path < TIRX_GEMM_PATH_AUTO || o->path > TIRX_GEMM_PATH_WGMMA_SPLITK)
    return tirx__error(TIRX_E_INVALID_ARG, "%s: opts->path is %d, expected a tirx_gemm_path (0 "
                       "to 3)", fn, (int)o->path);
  if (o->splits < 0 || o->splits > SPLITK_MAX)
    return tirx__error(TIRX_E_INVALID_ARG, "%s: opts->splits is %d, expected 0 (the plan's) to "
                       "%d", fn, o->splits, SPLITK_MAX);
  if (o->splits && o->path != TIRX_GEMM_PATH_WGMMA_SPLITK)
    return tirx__error(TIRX_E_INVALID_ARG, "%s: opts->splits is %d, expected 0 unless "
                       "opts->path is TIRX_GEMM_PATH_WGMMA_SPLITK", fn, o->splits);
  if (o->path != TIRX_GEMM_PATH_AUTO && o->family && strcmp(o->family, "wgmma"))
    return tirx__error(TIRX_E_INVALID_ARG, "%s: opts->path is %d with opts->family \"%s\", "
                       "expected TIRX_GEMM_PATH_AUTO (the paths are family \"wgmma\"'s)", fn,
                       (int)o->path, o->family);
  if (o->gemv_rows != 0 && o->gemv_rows != 1 && o->gemv_rows != 2 && o->gemv_rows != 4)
    return tirx__error(TIRX_E_INVALID_ARG, "%s: opts->gemv_rows is %d, expected 0, 1, 2 or 4",
                       fn, o->gemv_rows);
  bool cl_set = o->cluster_m || o->cluster_n;
  bool cl_ok = (o->cluster_m == 1 || o->cluster_m == 2) && (o->cluster_n == 1 || o->cluster_n == 2) &&
               o->cluster_m * o->cluster_n <= 2;
  if (cl_set && !cl_ok)
    return tirx__error(TIRX_E_INVALID_ARG, "%s: opts->cluster_m x cluster_n is %d x %d, expected "
                       "0 x 0 (the plan's), 1 x 1, 2 x 1 or 1 x 2", fn, o->cluster_m, o->cluster_n);
  bool wgmma_family = !o->family || !strcmp(o->family, "wgmma");
  if (cl_set && o->cluster_m * o->cluster_n > 1 &&
      (!wgmma_family || o->path == TIRX_GEMM_PATH_GEMV))
    return tirx__error(TIRX_E_INVALID_ARG, "%s: opts->cluster_m x cluster_n is %d x %d, expected "
                       "0 x 0 or 1 x 1 for %s (clusters are the wgmma paths')", fn, o->cluster_m,
                       o->cluster_n, wgmma_family ? "the gemv path" : "this family");
  if (cl_set && o->cluster_m * o->cluster_n > 1 && o->sms == 1) /* a grid of no whole cluster */
    return tirx__error(TIRX_E_INVALID_ARG, "%s: opts->sms is 1 with a %d x %d cluster, expected 0 "
                       "or at least 2 (the cluster's CTAs)", fn, o->cluster_m, o->cluster_n);
  s->cm = o->cluster_m, s->cn = o->cluster_n;
  s->epilogue = o->epilogue;
  s->path = o->path;
  s->gemv_rows = o->gemv_rows;
  s->splits = o->splits;
  s->family = !o->family ? "wgmma" : !strcmp(o->family, "mma") ? "mma"
              : !strcmp(o->family, "scalar") ? "scalar" : "wgmma";
  s->sms = o->sms ? o->sms : 132;
  return TIRX_OK;
}

static tirx_status check_shape(const char *fn, int64_t m, int64_t n, int64_t k) {
  if (m < 1 || n < 1 || k < 1)
    return tirx__error(TIRX_E_INVALID_ARG, "%s: m, n, k are %lld, %lld, %lld, expected >= 1", fn,
                       (long long)m, (long long)n, (long long)k);
  /* the kernels take M, N, K as i32 (and the plan's arithmetic stays within int64) */
  if (m > INT32_MAX || n > INT32_MAX || k > INT32_MAX)
    return tirx__error(TIRX_E_INVALID_ARG, "%s: m, n, k are %lld, %lld, %lld, expected at most "
                       "2^31 - 1", fn, (long long)m, (long long)n, (long long)k);
  return TIRX_OK;
}

/* The forced gemv path needs M <= 8 (after check_options and check_shape). */
static tirx_status check_path(const char *fn, const gemm_spec *s) {
  if (s->path == TIRX_GEMM_PATH_GEMV && s->m > GEMV_MAX_M)
    return tirx__error(TIRX_E_INVALID_ARG, "%s: opts->path is TIRX_GEMM_PATH_GEMV, expected "
                       "M <= %d (M is %lld)", fn, GEMV_MAX_M, (long long)s->m);
  if (s->path == TIRX_GEMM_PATH_WGMMA_SPLITK && s->m > SPLITK_MAX_M)
    return tirx__error(TIRX_E_INVALID_ARG, "%s: opts->path is TIRX_GEMM_PATH_WGMMA_SPLITK, "
                       "expected M <= %d (M is %lld)", fn, SPLITK_MAX_M, (long long)s->m);
  return TIRX_OK;
}

tirx_status tirx_kernels_gemm_plan(const tirx_gemm_options *opts, int64_t m, int64_t n,
                                   int64_t k, tirx_gemm_plan *out) {
  static const char fn[] = "tirx_kernels_gemm_plan";
  if (!out)
    return tirx__error(TIRX_E_NULL_ARG, "%s: out is NULL", fn);
  size_t bytes;
  if (tirx__ext_out(fn, "out", &tirx__ext_gemm_plan, out, &bytes) != TIRX_OK)
    return TIRX_E_INVALID_ARG;
  gemm_spec s = {.dtype = TIRX_BF16, .m = m, .n = n, .k = k};
  tirx_status st = check_options(fn, opts, &s);
  if (st == TIRX_OK)
    st = check_shape(fn, m, n, k);
  if (st == TIRX_OK)
    st = check_path(fn, &s);
  if (st == TIRX_OK) {
    tirx_gemm_plan p = plan_of(&s);
    tirx__ext_write(out, &p, bytes);
  }
  return st;
}

tirx_status tirx_kernels_gemm_tiles(const tirx_gemm_options *opts, int64_t m, int64_t n,
                                    int64_t k, tirx_gemm_tiles *out) {
  static const char fn[] = "tirx_kernels_gemm_tiles";
  if (!out)
    return tirx__error(TIRX_E_NULL_ARG, "%s: out is NULL", fn);
  gemm_spec s = {.dtype = TIRX_BF16, .m = m, .n = n, .k = k};
  tirx_status st = check_options(fn, opts, &s);
  if (st == TIRX_OK)
    st = check_shape(fn, m, n, k);
  if (st == TIRX_OK)
    *out = gemm_pick(&s);
  return st;
}

/* The epilogue of one f32 output held in the variable sum, column n: + bias[0, n] (bias NULL:
 * none), then SiLU or GeLU (gemv's and the split-K reduction's scalar form of what the tile
 * kernels do with tirx_binary/tirx_unary on their fragments). */
static void epilogue_scalar(tirx_builder *b, tirx_epilogue ep, tirx_expr *sum, tirx_tensor *bias,
                            tirx_expr *n) {
  if (bias)
    tirx_assign(b, sum, tirx_add(b, sum, tirx_cast(b, tirx_load(b, bias, TIRX_EXPRS(I(b, 0), n)), TIRX_F32)));
  if (ep == TIRX_EPILOGUE_BIAS_SILU) /* x / (1 + e^-x) */
    tirx_assign(b, sum, tirx_div(b, sum, tirx_add(b, tirx_float(b, 1.0, TIRX_F32),
                                                  tirx_exp(b, tirx_neg(b, sum)))));
  if (ep == TIRX_EPILOGUE_BIAS_GELU) /* 0.5 x (1 + erf(x / sqrt 2)) */
    tirx_assign(b, sum, tirx_mul(b, tirx_mul(b, tirx_float(b, 0.5, TIRX_F32), sum),
                                 tirx_add(b, tirx_float(b, 1.0, TIRX_F32),
                                          tirx_erf(b, tirx_mul(b, sum, tirx_float(b, 0.70710678118654752, TIRX_F32))))));
}

/* Whether C's rows end inside a 16-byte piece (N * 2 bytes not a multiple of 16): then a TMA
 * store would also write the rest of that piece, past N (the hardware clips at 16 bytes), and
 * the epilogue stores element by element instead (store_plain). */
static bool ragged_n(const gemm_spec *s) { return s->n % 8 != 0; }

/*
 * C[r0 + r, c0 + c] = Cs[s0 + r, c] for the rows x cols tile, r0 + r < M and c0 + c < N,
 * by nthr threads (t: this one's index), consecutive threads on consecutive columns: the
 * epilogue of a ragged N (ragged_n).
 */
static void store_plain(tirx_builder *b, tirx_tensor *C, tirx_tensor *Cs, tirx_expr *r0,
                        tirx_expr *c0, tirx_expr *s0, int64_t rows, int64_t cols, tirx_expr *t,
                        int nthr, tirx_expr *M, tirx_expr *N) {
  tirx_expr *e = tirx_for_begin(b, "e", t, I(b, rows * cols), I(b, nthr), TIRX_LOOP_SERIAL);
  tirx_expr *r = tirx_let(b, "er", tirx_div(b, e, I(b, cols)));
  tirx_expr *c = tirx_let(b, "ec", tirx_mod(b, e, I(b, cols)));
  tirx_expr *gr = tirx_add(b, r0, r), *gc = tirx_add(b, c0, c);
  tirx_if_begin(b, tirx_and(b, tirx_lt(b, gr, M), tirx_lt(b, gc, N)));
  tirx_store(b, C, TIRX_EXPRS(gr, gc), tirx_load(b, Cs, TIRX_EXPRS(tirx_add(b, s0, r), c)));
  tirx_if_end(b);
  tirx_for_end(b);
}

/* The kernel of s's path; TIRX_GEMM_PATH_AUTO is the wgmma kernel here (tirx_op_gemm plans
 * first and passes the plan's path). */
static tirx_status build_reduce(const gemm_spec *s, tirx_kernel **out);

static tirx_status gemm_build(const gemm_spec *s, tirx_kernel **out) {
  if (s->reduce) return build_reduce(s, out);
  if (s->path == TIRX_GEMM_PATH_GEMV) return build_gemv(s, gemv_rows_for(s), out);
  if (s->path == TIRX_GEMM_PATH_WGMMA_SPLITK) {
    gemm_spec t = *s;
    t.splits = 2; /* any count > 1: the kernel takes its K blocks per split at launch */
    return build_wgmma(&t, out);
  }
  return strcmp(s->family, "wgmma") == 0 ? build_wgmma(s, out) : build_simple(s, out);
}

tirx_status tirx_kernels_gemm_build(const tirx_gemm_options *opts, tirx_dtype dtype, int64_t m,
                                    int64_t n, int64_t k, tirx_kernel **out) {
  static const char fn[] = "tirx_kernels_gemm_build";
  if (!out)
    return tirx__error(TIRX_E_NULL_ARG, "%s: out is NULL", fn);
  *out = NULL;
  gemm_spec s = {.dtype = dtype, .m = m, .n = n, .k = k};
  tirx_status st = check_options(fn, opts, &s);
  if (st != TIRX_OK)
    return st;
  if (dtype != TIRX_F16 && dtype != TIRX_BF16)
    return tirx__error(TIRX_E_INVALID_ARG, "%s: dtype is %s, expected f16 or bf16", fn,
                       tirx_dtype_name(dtype) ? tirx_dtype_name(dtype) : "invalid");
  if ((st = check_shape(fn, m, n, k)) != TIRX_OK || (st = check_path(fn, &s)) != TIRX_OK)
    return st;
  return gemm_build(&s, out);
}

/*
 * Families "mma" and "scalar": simple and correct, not fast. One CTA of four warps per 64x64
 * tile of C, one shared stage: thread 0 loads the A and B tiles of a K block with TMA (tails
 * zero-filled), every warp multiplies its 16 rows with tirx_gemm of the family (the m16n8 C
 * fragment on its lanes), a barrier, the next block. Epilogue: bias row (f32, row stride 0)
 * and activation on the accumulators, cast, copy into a swizzled C tile, one TMA store.
 */
static tirx_status build_simple(const gemm_spec *s, tirx_kernel **out) {
  enum { T = 64, WR = 16 };
  tirx_dtype dt = s->dtype;
  bool has_bias = s->epilogue != TIRX_EPILOGUE_NONE;
  char name[64];
  snprintf(name, sizeof name, "gemm_%s_%s%s%s", s->family, tirx_dtype_name(dt),
           ep_name[s->epilogue], ragged_n(s) ? "_ragged" : "");
  tirx_builder *b = tirx_builder_create(name);
  tirx_arena *ar = tirx_builder_arena(b);
  tirx_expr *M = tirx_param_int(b, "M", TIRX_I32), *N = tirx_param_int(b, "N", TIRX_I32);
  tirx_expr *K = tirx_param_int(b, "K", TIRX_I32);
  tirx_tensor *A = tirx_param_tensor_strided(b, "A", dt, TIRX_EXPRS(M, K), (tirx_expr *[]){NULL, I(b, 1)});
  tirx_tensor *Bt = tirx_param_tensor_strided(b, "B", dt, TIRX_EXPRS(K, N), (tirx_expr *[]){I(b, 1), NULL});
  tirx_tensor *C = tirx_param_tensor_strided(b, "C", dt, TIRX_EXPRS(M, N), (tirx_expr *[]){NULL, I(b, 1)});
  tirx_tensor *bias = has_bias ? tirx_param_tensor(b, "bias", dt, TIRX_EXPRS(I(b, 1), N), NULL) : NULL;
  tirx_set_block(b, 128, 1, 1);
  tirx_set_grid(b, tirx_ceildiv(b, N, I(b, T)), tirx_ceildiv(b, M, I(b, T)), NULL);
  tirx_tensor *As = tirx_alloc_shared(b, "As", dt, TIRX_DIMS(T, BK), tirx_layout_smem_tile(ar, T, BK, 2, 128));
  tirx_tensor *Bs = tirx_alloc_shared(b, "Bs", dt, TIRX_DIMS(BK, T),
                                      tirx_layout_permute(ar, tirx_layout_smem_tile(ar, T, BK, 2, 128),
                                                          2, (int64_t[]){1, 0}));
  tirx_tensor *Cs = tirx_alloc_shared(b, "Cs", dt, TIRX_DIMS(T, T), tirx_layout_smem_tile(ar, T, T, 2, 128));
  tirx_tensor *full = tirx_alloc_mbarrier(b, "full", 1);
  tirx_tensor *biasF = has_bias ? tirx_alloc_shared(b, "biasF", TIRX_F32, TIRX_DIMS(WR, T),
                                                    tirx_layout_strided(ar, 2, (int64_t[]){WR, T},
                                                                        (int64_t[]){0, 1}))
                                : NULL;
  tirx_expr *tm = tirx_let(b, "tm", tirx_block_idx(b, 1)), *tn = tirx_let(b, "tn", tirx_block_idx(b, 0));
  tirx_expr *tid = tirx_let(b, "tid", tirx_thread_linear(b));
  tirx_if_begin(b, tirx_eq(b, tid, I(b, 0)));
  tirx_mbarrier_init(b, elem(b, full, I(b, 0)), 1);
  tirx_fence_mbarrier_init(b);
  tirx_if_end(b);
  if (has_bias) { /* bias[0, tn*T + j] as f32, zero past N */
    tirx_if_begin(b, tirx_lt(b, tid, I(b, T)));
    tirx_expr *col = tirx_let(b, "col", tirx_add(b, tirx_mul(b, tn, I(b, T)), tid));
    tirx_expr *v = tirx_cast(b, tirx_load(b, bias, TIRX_EXPRS(I(b, 0), tirx_min(b, col, tirx_sub(b, N, I(b, 1))))),
                             TIRX_F32);
    tirx_store(b, biasF, TIRX_EXPRS(I(b, 0), tid), tirx_select(b, tirx_lt(b, col, N), v, tirx_float(b, 0.0, TIRX_F32)));
    tirx_if_end(b);
  }
  tirx_sync_threads(b);

  tirx_expr *w = tirx_let(b, "w", tirx_warp_id(b));
  /* The warp's accumulator: 16 rows as T/8 m16n8 C fragments side by side. */
  char frag[128];
  snprintf(frag, sizeof frag, "((2,8),(%d,4,2)):((2@reg,4@laneid),(4@reg,1@laneid,1@reg))", T / 8);
  const tirx_layout *accl = tirx_layout_parse(ar, frag);
  tirx_tensor *acc = tirx_alloc_local(b, "acc", TIRX_F32, TIRX_DIMS(WR, T), accl);
  tirx_expr *kb = tirx_for_begin(b, "kb", I(b, 0), tirx_ceildiv(b, K, I(b, BK)), NULL, TIRX_LOOP_SERIAL);
  tirx_filter_begin(b, TIRX_AXIS_TID, 0, 1);
  tirx_mbarrier_expect_tx(b, elem(b, full, I(b, 0)), I(b, 2 * T * BK * 2));
  tirx_config ld = {.barrier = elem(b, full, I(b, 0))};
  tirx_copy_async(b, tirx_whole(b, As), rect(b, A, tirx_mul(b, tm, I(b, T)), tirx_mul(b, kb, I(b, BK)), T, BK), &ld);
  tirx_copy_async(b, tirx_whole(b, Bs), rect(b, Bt, tirx_mul(b, kb, I(b, BK)), tirx_mul(b, tn, I(b, T)), BK, T), &ld);
  tirx_filter_end(b);
  tirx_mbarrier_wait(b, elem(b, full, I(b, 0)), tirx_bit_and(b, kb, I(b, 1)));
  tirx_team_begin(b, TIRX_TEAM_WARP);
  tirx_gemm_config g = {.family = s->family, .accumulate = tirx_gt(b, kb, I(b, 0))};
  /* rows w*16: a product, so the swizzled tile's start moves by whole 1024-byte atoms */
  tirx_gemm(b, tirx_whole(b, acc), rect(b, As, tirx_mul(b, w, I(b, WR)), I(b, 0), WR, BK), tirx_whole(b, Bs), &g);
  tirx_team_end(b);
  tirx_sync_threads(b); /* every warp has read the stage before the next load */
  tirx_for_end(b);

  tirx_team_begin(b, TIRX_TEAM_WARP);
  tirx_region *accr = tirx_whole(b, acc);
  if (has_bias) tirx_binary(b, accr, TIRX_OP_ADD, accr, tirx_whole(b, biasF), NULL);
  if (s->epilogue == TIRX_EPILOGUE_BIAS_SILU) tirx_unary(b, accr, TIRX_OP_SILU, accr, NULL);
  if (s->epilogue == TIRX_EPILOGUE_BIAS_GELU) tirx_unary(b, accr, TIRX_OP_GELU, accr, NULL);
  tirx_tensor *acc16 = tirx_alloc_local(b, "acc16", dt, TIRX_DIMS(WR, T), accl);
  tirx_cast_region(b, tirx_whole(b, acc16), accr, NULL);
  tirx_copy(b, rect(b, Cs, tirx_mul(b, w, I(b, WR)), I(b, 0), WR, T), tirx_whole(b, acc16), NULL);
  tirx_team_end(b);
  if (ragged_n(s)) {
    tirx_sync_threads(b);
    store_plain(b, C, Cs, tirx_mul(b, tm, I(b, T)), tirx_mul(b, tn, I(b, T)), I(b, 0), T, T, tid,
                128, M, N);
    return tirx__kernels_finish(b, "tirx_kernels_gemm_build", out);
  }
  tirx_fence_proxy_async(b);
  tirx_sync_threads(b);
  tirx_filter_begin(b, TIRX_AXIS_TID, 0, 1);
  tirx_copy_async(b, rect(b, C, tirx_mul(b, tm, I(b, T)), tirx_mul(b, tn, I(b, T)), T, T), tirx_whole(b, Cs), NULL);
  tirx_bulk_commit(b);
  tirx_bulk_wait(b, 0, false);
  tirx_filter_end(b);
  return tirx__kernels_finish(b, "tirx_kernels_gemm_build", out);
}

/* The persistent loop's head: over tiles (split-K off: as the kernel always was), or over
 * units (tile, split) with the split's K blocks [*kb_lo, *kb_hi) (split-K on). */
typedef struct unit_loop {
  bool sk;
  tirx_expr *ntiles, *nunits, *kbs, *kblocks, *tiles_m, *tiles_n;
  /* Clusters (cm * cn > 1): the loop runs over the cluster's tiles (tiles_m, tiles_n and
   * ntiles count them: tiles of cm x cn tiles), cluster blockIdx.x / cs of gridDim.x / cs,
   * and this CTA takes the tile of its rank within them. */
  int cm, cn;
  tirx_expr *rank;
} unit_loop;

static void unit_begin(tirx_builder *b, const unit_loop *u, tirx_expr **tm, tirx_expr **tn,
                       tirx_expr **split, tirx_expr **kb_lo, tirx_expr **kb_hi) {
  int cs = u->cm * u->cn;
  tirx_expr *first = tirx_block_idx(b, 0), *step = tirx_grid_dim(b, 0);
  if (cs > 1)
    first = tirx_div(b, first, I(b, cs)), step = tirx_div(b, step, I(b, cs));
  if (!u->sk) {
    tirx_expr *tile = tirx_for_begin(b, "tile", first, u->ntiles, step, TIRX_LOOP_SERIAL);
    tile_coords(b, tile, u->tiles_m, u->tiles_n, tm, tn);
    *split = NULL, *kb_lo = I(b, 0), *kb_hi = u->kblocks;
  } else {
    tirx_expr *unit = tirx_for_begin(b, "unit", first, u->nunits, step, TIRX_LOOP_SERIAL);
    tirx_expr *tile = tirx_let(b, "tile", tirx_mod(b, unit, u->ntiles));
    *split = tirx_let(b, "split", tirx_div(b, unit, u->ntiles));
    tile_coords(b, tile, u->tiles_m, u->tiles_n, tm, tn);
    *kb_lo = tirx_let(b, "kb_lo", tirx_mul(b, *split, u->kbs));
    *kb_hi = tirx_let(b, "kb_hi", tirx_min(b, tirx_add(b, *kb_lo, u->kbs), u->kblocks));
  }
  if (u->cm > 1) *tm = tirx_let(b, "tm_c", tirx_add(b, tirx_mul(b, *tm, I(b, u->cm)), u->rank));
  if (u->cn > 1) *tn = tirx_let(b, "tn_c", tirx_add(b, tirx_mul(b, *tn, I(b, u->cn)), u->rank));
}

/* A consumer's release of a stage: one arrival on its empty barrier in every CTA of the
 * cluster (cs 1: this CTA's only). */
static void release(tirx_builder *b, tirx_region *bar, int cs) {
  if (cs == 1) {
    tirx_mbarrier_arrive(b, bar);
    return;
  }
  for (int q = 0; q < cs; q++) tirx_mbarrier_arrive_cluster(b, bar, I(b, q));
}

/* Whether a cluster's tile (tm, tn) lies inside C: the cluster's second tile is past the edge
 * where the tiles along its dimension are odd (it still loads its half of the shared tile). */
static tirx_expr *edge_ok(tirx_builder *b, tirx_expr *tm, tirx_expr *tn, tirx_expr *tiles_m,
                          tirx_expr *tiles_n) {
  return tirx_and(b, tirx_lt(b, tm, tiles_m), tirx_lt(b, tn, tiles_n));
}

/* Named barrier 1 + c: consumer warpgroup c's 128 threads (c of consumers; the id is a
 * constant, hence one tiny if per consumer). */
static void consumer_barrier(tirx_builder *b, tirx_expr *c, int consumers) {
  for (int q = 0; q < consumers; q++) {
    tirx_if_begin(b, tirx_eq(b, c, I(b, q)));
    tirx_named_barrier_sync(b, 1 + q, 128);
    tirx_if_end(b);
  }
}

/* A consumer warpgroup has read the bias row: its first thread releases it. */
static void release_bias(tirx_builder *b, tirx_expr *tid, tirx_tensor *bias_empty) {
  tirx_if_begin(b, tirx_eq(b, tirx_mod(b, tid, I(b, 128)), I(b, 0)));
  tirx_mbarrier_arrive(b, elem(b, bias_empty, I(b, 0)));
  tirx_if_end(b);
}

/* The kernel's end: with clusters, no CTA leaves while its partner may still multicast into
 * its shared memory or arrive on its barriers. */
static tirx_status finish_wgmma(tirx_builder *b, int cs, tirx_kernel **out) {
  if (cs > 1) tirx_cluster_sync(b);
  return tirx__kernels_finish(b, "tirx_kernels_gemm_build", out);
}

static tirx_status build_wgmma(const gemm_spec *s, tirx_kernel **out) {
  gemm_tiles T = gemm_pick(s);
  const int64_t BM = T.block_m, BN = T.block_n, ST = T.stages, WM = BM / T.consumers;
  /* Rows of A per TMA load: M rounded up to 8 when the tile holds all of M (decode), else
   * BM. The rows of the stage past them are never written: wgmma's rows are independent and
   * the epilogue stores none of those rows. (A box mostly past M, zero-filled by TMA, made
   * M = 8 20-30% slower than M = 64 with the same tiles: PERF-NOTES.) */
  const int64_t AR = a_rows_of(s, &T);
  const int sms = s->sms;
  /* The split-K variant (S > 1): work units (tile, split) of KBS K blocks each, f32 partial
   * tiles into the workspace, no epilogue (gemm_reduce's); S == 1 is the kernel as it was. */
  const bool SK = s->splits > 1, ragged = !SK && ragged_n(s);
  /* Clusters (cluster_pick): CN = 2 shares A's tile between the tiles (tm, 2j) and (tm, 2j+1),
   * CM = 2 B's between (2i, tn) and (2i+1, tn); each CTA loads half of it (AR / 2 rows of A or
   * BN / 2 columns of B) with a multicast to both. Each stage is then written by both CTAs'
   * producers, so it is free only once the consumers of both have released it: each consumer
   * arrives on the empty barrier of every CTA of the cluster (CS * consumers arrivals). */
  int CM, CN;
  cluster_pick(s, &T, &CM, &CN);
  const int CS = CM * CN;
  tirx_dtype dt = s->dtype;
  char name[96], arows[24] = "";
  if (AR < BM) snprintf(arows, sizeof arows, "_a%lld", (long long)AR);
  if (CS > 1)
    snprintf(arows + strlen(arows), sizeof arows - strlen(arows), "_c%d%s", CS, CM > 1 ? "m" : "n");
  if (SK)
    snprintf(name, sizeof name, "gemm_%s_%lldx%lldx%lld%s_splitk", tirx_dtype_name(dt),
             (long long)BM, (long long)BN, (long long)ST, arows);
  else
  snprintf(name, sizeof name, "gemm_%s_%lldx%lldx%lld%s%s%s", tirx_dtype_name(dt), (long long)BM,
           (long long)BN, (long long)ST, arows, ep_name[s->epilogue], ragged ? "_ragged" : "");
  tirx_builder *b = tirx_builder_create(name);
  tirx_arena *ar = tirx_builder_arena(b);

  tirx_expr *M = tirx_param_int(b, "M", TIRX_I32), *N = tirx_param_int(b, "N", TIRX_I32);
  tirx_expr *K = tirx_param_int(b, "K", TIRX_I32);
  /* Row strides come with the arguments (leading dimensions, multiples of 16 bytes for TMA):
   * A [M, K], B [N, K] seen as its transpose (K, N) with K contiguous (wgmma's K-major B
   * operand), C [M, N]. */
  tirx_tensor *A = tirx_param_tensor_strided(b, "A", dt, TIRX_EXPRS(M, K), (tirx_expr *[]){NULL, I(b, 1)});
  tirx_tensor *Bt = tirx_param_tensor_strided(b, "B", dt, TIRX_EXPRS(K, N), (tirx_expr *[]){I(b, 1), NULL});
  tirx_tensor *C = NULL, *Wk = NULL;
  tirx_expr *KBS = NULL;
  if (SK) { /* the workspace: S slabs of tiles_m * BM rows, tiles_n * BN columns, f32 */
    KBS = tirx_param_int(b, "KBS", TIRX_I32);
    tirx_expr *WR = tirx_param_int(b, "WR", TIRX_I32), *WC = tirx_param_int(b, "WC", TIRX_I32);
    Wk = tirx_param_tensor(b, "W", TIRX_F32, TIRX_EXPRS(WR, WC), NULL);
  } else
  C = tirx_param_tensor_strided(b, "C", dt, TIRX_EXPRS(M, N), (tirx_expr *[]){NULL, I(b, 1)});
  bool has_bias = !SK && s->epilogue != TIRX_EPILOGUE_NONE;
  tirx_tensor *bias = has_bias ? tirx_param_tensor(b, "bias", dt, TIRX_EXPRS(I(b, 1), N), NULL) : NULL;

  tirx_expr *tiles_m = tirx_ceildiv(b, M, I(b, BM)), *tiles_n = tirx_ceildiv(b, N, I(b, BN));
  /* With clusters the persistent loop counts the clusters' tiles of CM x CN tiles */
  tirx_expr *tiles_mc = CM > 1 ? tirx_ceildiv(b, tiles_m, I(b, CM)) : tiles_m;
  tirx_expr *tiles_nc = CN > 1 ? tirx_ceildiv(b, tiles_n, I(b, CN)) : tiles_n;
  tirx_expr *ntiles = tirx_mul(b, tiles_mc, tiles_nc);
  /* Split-K: unit u is tile u % ntiles of split u / ntiles, K blocks [split * KBS, min(+KBS,
   * kblocks)); nunits = ntiles * ceil(kblocks / KBS) (every split has a K block). */
  tirx_expr *nunits = ntiles;
  if (SK)
    nunits = tirx_mul(b, ntiles, tirx_ceildiv(b, tirx_ceildiv(b, K, I(b, BK)), KBS));
  tirx_set_block(b, 128 * (1 + T.consumers), 1, 1);
  if (CS > 1) { /* whole clusters, at most sms CTAs */
    tirx_set_cluster(b, CS, 1, 1);
    tirx_set_grid(b, tirx_min(b, tirx_mul(b, nunits, I(b, CS)), I(b, sms / CS * CS)), NULL, NULL);
  } else {
    tirx_set_grid(b, tirx_min(b, nunits, I(b, sms)), NULL, NULL);
  }

  /* Shared memory: a ring of ST stages of A (BM x 64) and B (64 x BN as (K, N)), both
   * 128-byte swizzled K-major, and the C tile of the epilogue (128-byte swizzled for TMA). */
  tirx_tensor *As = tirx_alloc_shared(b, "As", dt, TIRX_DIMS(ST * BM, BK),
                                      tirx_layout_smem_tile(ar, ST * BM, BK, 2, 128));
  tirx_tensor *Bs = tirx_alloc_shared(b, "Bs", dt, TIRX_DIMS(BK, ST * BN),
                                      tirx_layout_permute(ar, tirx_layout_smem_tile(ar, ST * BN, BK, 2, 128),
                                                          2, (int64_t[]){1, 0}));
  /* The C tile's swizzle: the widest whose column block (64, 32 or 16 columns) divides BN. */
  int cswz = BN % 64 == 0 ? 128 : BN % 32 == 0 ? 64 : 32;
  tirx_tensor *Cs = tirx_alloc_shared(b, "Cs", dt, TIRX_DIMS(BM, BN),
                                      tirx_layout_smem_tile(ar, BM, BN, 2, cswz));
  tirx_tensor *full = tirx_alloc_mbarrier(b, "full", ST), *empty = tirx_alloc_mbarrier(b, "empty", ST);
  /* The bias epilogues: the tile's bias columns in f32, one row that every row of the
   * accumulator reads (row stride 0), filled per tile by producer warp 1 (bias_full, one
   * arrival per lane) and released by each consumer warpgroup after its epilogue has read
   * it (bias_empty). */
  tirx_tensor *biasF = NULL, *bias_full = NULL, *bias_empty = NULL;
  if (has_bias) {
    biasF = tirx_alloc_shared(b, "biasF", TIRX_F32, TIRX_DIMS(WM, BN),
                              tirx_layout_strided(ar, 2, (int64_t[]){WM, BN}, (int64_t[]){0, 1}));
    bias_full = tirx_alloc_mbarrier(b, "bias_full", 1);
    bias_empty = tirx_alloc_mbarrier(b, "bias_empty", 1);
  }

  tirx_expr *tid = tirx_let(b, "tid", tirx_thread_linear(b));
  tirx_if_begin(b, tirx_eq(b, tid, I(b, 0)));
  for (int64_t i = 0; i < ST; i++) {
    tirx_mbarrier_init(b, elem(b, full, I(b, i)), 1);
    /* one arrive per consumer (of every CTA of the cluster) */
    tirx_mbarrier_init(b, elem(b, empty, I(b, i)), T.consumers * CS);
  }
  if (has_bias) {
    tirx_mbarrier_init(b, elem(b, bias_full, I(b, 0)), 32);
    tirx_mbarrier_init(b, elem(b, bias_empty, I(b, 0)), T.consumers);
  }
  tirx_fence_mbarrier_init(b);
  tirx_if_end(b);
  if (CS > 1)
    tirx_cluster_sync(b); /* both CTAs' barriers exist before a multicast targets them */
  else
    tirx_sync_threads(b);
  if (SK) tirx_grid_launch_dependents(b); /* the reduction may be scheduled (build_reduce) */

  tirx_expr *kblocks = tirx_let(b, "kblocks", tirx_ceildiv(b, K, I(b, BK)));
  tirx_expr *wg = tirx_let(b, "wg", tirx_div(b, tid, I(b, 128)));
  tirx_expr *rank = CS > 1 ? tirx_let(b, "rank", tirx_cluster_ctarank(b)) : NULL;
  unit_loop ul = {SK, ntiles, nunits, KBS, kblocks, tiles_mc, tiles_nc, CM, CN, rank};
  tirx_expr *split, *kb_lo, *kb_hi;

  /* ---- producer: one thread issues the TMA loads of every stage ---- */
  tirx_if_begin(b, tirx_eq(b, wg, I(b, 0)));
  tirx_setmaxnreg(b, 40, false);
  tirx_filter_begin(b, TIRX_AXIS_TID, 0, 1);
  {
    tirx_expr *it = tirx_var(b, "it", TIRX_I32, NULL);
    tirx_expr *tm, *tn;
    unit_begin(b, &ul, &tm, &tn, &split, &kb_lo, &kb_hi);
    tirx_expr *kb = tirx_for_begin(b, "kb", kb_lo, kb_hi, NULL, TIRX_LOOP_SERIAL);
    tirx_expr *st = tirx_let(b, "s", tirx_mod(b, it, I(b, ST)));
    tirx_expr *ph = tirx_let(b, "ph", tirx_bit_and(b, tirx_div(b, it, I(b, ST)), I(b, 1)));
    tirx_mbarrier_wait(b, elem(b, empty, st), tirx_bit_xor(b, ph, I(b, 1)));
    tirx_mbarrier_expect_tx(b, elem(b, full, st), I(b, (AR + BN) * BK * 2));
    tirx_config ld = {.barrier = elem(b, full, st)};
    tirx_config mc = {.barrier = elem(b, full, st), .multicast = I(b, (1 << CS) - 1)};
    /* A's and B's tiles of the stage; a shared one (CN > 1: A's, CM > 1: B's) is this CTA's
     * half of it, rows (A) or columns (B) rank * H.., multicast into both CTAs */
    const int64_t AH = CN > 1 ? AR / 2 : AR, BH = CM > 1 ? BN / 2 : BN;
    tirx_expr *as0 = tirx_mul(b, st, I(b, BM)), *ag0 = tirx_mul(b, tm, I(b, BM));
    tirx_expr *bs0 = tirx_mul(b, st, I(b, BN)), *bg0 = tirx_mul(b, tn, I(b, BN));
    if (CN > 1) {
      tirx_expr *r0 = tirx_mul(b, rank, I(b, AH));
      as0 = tirx_add(b, as0, r0), ag0 = tirx_add(b, ag0, r0);
    }
    if (CM > 1) {
      tirx_expr *c0 = tirx_mul(b, rank, I(b, BH));
      bs0 = tirx_add(b, bs0, c0), bg0 = tirx_add(b, bg0, c0);
    }
    tirx_copy_async(b, rect(b, As, as0, I(b, 0), AH, BK),
                    rect(b, A, ag0, tirx_mul(b, kb, I(b, BK)), AH, BK), CN > 1 ? &mc : &ld);
    tirx_copy_async(b, rect(b, Bs, I(b, 0), bs0, BK, BH),
                    rect(b, Bt, tirx_mul(b, kb, I(b, BK)), bg0, BK, BH), CM > 1 ? &mc : &ld);
    tirx_assign(b, it, tirx_add(b, it, I(b, 1)));
    tirx_for_end(b);
    tirx_for_end(b);
  }
  tirx_filter_end(b);
  if (has_bias) { /* warp 1: bias[0, tn*BN + j] as f32, zero past N, one tile at a time */
    tirx_filter_begin(b, TIRX_AXIS_TID, 32, 64);
    tirx_expr *lt = tirx_var(b, "lt", TIRX_I32, NULL);
    tirx_expr *tm, *tn;
    unit_begin(b, &ul, &tm, &tn, &split, &kb_lo, &kb_hi); /* the consumers' tiles */
    (void)tm;
    tirx_mbarrier_wait(b, elem(b, bias_empty, I(b, 0)), tirx_bit_xor(b, tirx_bit_and(b, lt, I(b, 1)), I(b, 1)));
    tirx_expr *j = tirx_for_begin(b, "j", tirx_lane_id(b), I(b, BN), I(b, 32), TIRX_LOOP_SERIAL);
    tirx_expr *col = tirx_let(b, "col", tirx_add(b, tirx_mul(b, tn, I(b, BN)), j));
    tirx_expr *v = tirx_cast(b, tirx_load(b, bias, TIRX_EXPRS(I(b, 0), tirx_min(b, col, tirx_sub(b, N, I(b, 1))))),
                             TIRX_F32);
    tirx_store(b, biasF, TIRX_EXPRS(I(b, 0), j),
               tirx_select(b, tirx_lt(b, col, N), v, tirx_float(b, 0.0, TIRX_F32)));
    tirx_for_end(b);
    tirx_mbarrier_arrive(b, elem(b, bias_full, I(b, 0)));
    tirx_assign(b, lt, tirx_add(b, lt, I(b, 1)));
    tirx_for_end(b);
    tirx_filter_end(b);
  }

  /* ---- consumers: warpgroup c owns rows c*WM .. of the tile ---- */
  tirx_else(b);
  tirx_setmaxnreg(b, 232, true);
  tirx_expr *c = tirx_let(b, "c", tirx_sub(b, wg, I(b, 1)));
  tirx_expr *it = tirx_var(b, "it", TIRX_I32, NULL);
  tirx_expr *lt = has_bias ? tirx_var(b, "lt", TIRX_I32, NULL) : NULL;
  tirx_expr *tm, *tn;
  unit_begin(b, &ul, &tm, &tn, &split, &kb_lo, &kb_hi);
  tirx_team_begin(b, TIRX_TEAM_WARPGROUP);
  const tirx_layout *accl = tirx_layout_wgmma_acc(ar, (int)WM, (int)BN);
  tirx_tensor *acc = tirx_alloc_local(b, "acc", TIRX_F32, TIRX_DIMS(WM, BN), accl);
  tirx_expr *kb = tirx_for_begin(b, "kb", kb_lo, kb_hi, NULL, TIRX_LOOP_SERIAL);
  {
    tirx_expr *st = tirx_let(b, "s", tirx_mod(b, it, I(b, ST)));
    tirx_expr *ph = tirx_let(b, "ph", tirx_bit_and(b, tirx_div(b, it, I(b, ST)), I(b, 1)));
    tirx_mbarrier_wait(b, elem(b, full, st), ph);
    /* rows st*BM + c*WM: written as products so the swizzle atoms stay whole */
    tirx_region *a_s = rect(b, As, tirx_add(b, tirx_mul(b, st, I(b, BM)), tirx_mul(b, c, I(b, WM))),
                            I(b, 0), WM, BK);
    tirx_region *b_s = rect(b, Bs, I(b, 0), tirx_mul(b, st, I(b, BN)), BK, BN);
    tirx_gemm_config g = {.accumulate = tirx_gt(b, kb, kb_lo)};
    tirx_gemm_async(b, tirx_whole(b, acc), a_s, b_s, &g);
    tirx_wgmma_commit(b);
    /* One batch stays in flight: the previous one is complete, so its stage is released.
     * (Two or four in flight measured no faster on the decode tiles: PERF-NOTES.) */
    tirx_wgmma_wait(b, 1);
    tirx_if_begin(b, tirx_and(b, tirx_gt(b, kb, kb_lo), tirx_eq(b, tirx_mod(b, tid, I(b, 128)), I(b, 0))));
    release(b, elem(b, empty, tirx_mod(b, tirx_add(b, it, I(b, ST - 1)), I(b, ST))), CS);
    tirx_if_end(b);
    tirx_assign(b, it, tirx_add(b, it, I(b, 1)));
  }
  tirx_for_end(b);
  tirx_wgmma_wait(b, 0); /* the tile's last batch, then its stage */
  tirx_if_begin(b, tirx_and(b, tirx_gt(b, kb_hi, kb_lo), tirx_eq(b, tirx_mod(b, tid, I(b, 128)), I(b, 0))));
  release(b, elem(b, empty, tirx_mod(b, tirx_add(b, it, I(b, ST - 1)), I(b, ST))), CS);
  tirx_if_end(b);
  if (SK) { /* the f32 partial tile into slab `split` of the workspace; gemm_reduce does the rest */
    tirx_expr *row = tirx_add(b, tirx_add(b, tirx_mul(b, tirx_mul(b, split, tiles_m), I(b, BM)),
                                          tirx_mul(b, tm, I(b, BM))),
                              tirx_mul(b, c, I(b, WM)));
    if (CS > 1) tirx_if_begin(b, edge_ok(b, tm, tn, tiles_m, tiles_n));
    tirx_copy(b, rect(b, Wk, row, tirx_mul(b, tn, I(b, BN)), WM, BN), tirx_whole(b, acc), NULL);
    if (CS > 1) tirx_if_end(b);
    tirx_team_end(b);
    tirx_for_end(b);
    tirx_if_end(b);
    return finish_wgmma(b, CS, out);
  }
  /*
   * Epilogue: bias and activation on the f32 accumulators, their 16-bit copy, stmatrix into
   * the swizzled C tile, one TMA store per consumer. With an activation it runs in chunks of
   * EW columns (the last one narrower where EW does not divide BN), the chunk's bias,
   * activation, cast and stmatrix before the next chunk's, so that only one chunk's
   * temporaries are live beside the accumulators and each chunk's accumulators die at its
   * stmatrix: the whole tile's phases one after the other spilled 12 to 604 bytes under
   * ptxas' cap (168 registers with two consumers, 232 with one) on the fused epilogues of the
   * tiles 192 to 256 wide (PERF-NOTES, session 14); without one (plain and bias, which never
   * spilled) the tile is one chunk, the kernel as it was. The first consumer barrier comes
   * before the first stmatrix: it waits for the storing thread, which waited for its previous
   * store to have read Cs. The bias row is released after the barrier that follows the last
   * chunk's reads of it. The stmatrix copies are written once for both consumers (rows
   * c * WM): two copies doubled the epilogue's code, its compile time and the registers kept
   * live across the main loop (the copy's addresses, hoisted out of the tile loop: 28 bytes of
   * spills).
   */
  const bool act = s->epilogue == TIRX_EPILOGUE_BIAS_SILU || s->epilogue == TIRX_EPILOGUE_BIAS_GELU;
  /* at most the tile: a tile no wider than a chunk is one chunk (ew == BN), and the bias row
   * is released after the first barrier as without an activation */
  const int64_t ew = act && BN > EW ? EW : BN;
  if (has_bias) tirx_mbarrier_wait(b, elem(b, bias_full, I(b, 0)), tirx_bit_and(b, lt, I(b, 1)));
  tirx_tensor *acc16 = NULL;
  for (int64_t j = 0; j < BN; j += ew) {
    const int64_t w = BN - j < ew ? BN - j : ew;
    tirx_region *accr = rect(b, acc, I(b, 0), I(b, j), WM, w);
    if (has_bias)
      tirx_binary(b, accr, TIRX_OP_ADD, accr, rect(b, biasF, I(b, 0), I(b, j), WM, w), NULL);
    if (s->epilogue == TIRX_EPILOGUE_BIAS_SILU) tirx_unary(b, accr, TIRX_OP_SILU, accr, NULL);
    if (s->epilogue == TIRX_EPILOGUE_BIAS_GELU) tirx_unary(b, accr, TIRX_OP_GELU, accr, NULL);
    if (j == 0) {
      if (has_bias) tirx_assign(b, lt, tirx_add(b, lt, I(b, 1)));
      acc16 = tirx_alloc_local(b, "acc16", dt, TIRX_DIMS(WM, BN), accl);
    }
    tirx_region *a16 = rect(b, acc16, I(b, 0), I(b, j), WM, w);
    tirx_cast_region(b, a16, accr, NULL);
    if (j == 0) {
      tirx_team_end(b);
      consumer_barrier(b, c, T.consumers);
      if (has_bias && ew == BN) release_bias(b, tid, bias_empty);
      tirx_team_begin(b, TIRX_TEAM_WARPGROUP);
    }
    tirx_copy(b, rect(b, Cs, tirx_mul(b, c, I(b, WM)), I(b, j), WM, w), a16, NULL);
  }
  tirx_team_end(b);
  if (!ragged) tirx_fence_proxy_async(b);
  consumer_barrier(b, c, T.consumers);
  if (has_bias && ew < BN) release_bias(b, tid, bias_empty);
  if (ragged) { /* the warpgroup's rows, element by element; the next tile's first barrier
                 * orders these reads before Cs is written again */
    tirx_expr *r0 = tirx_add(b, tirx_mul(b, tm, I(b, BM)), tirx_mul(b, c, I(b, WM)));
    store_plain(b, C, Cs, r0, tirx_mul(b, tn, I(b, BN)), tirx_mul(b, c, I(b, WM)), WM, BN,
                tirx_mod(b, tid, I(b, 128)), 128, M, N);
    tirx_for_end(b);
    tirx_if_end(b);
    return finish_wgmma(b, CS, out);
  }
  if (CS > 1) tirx_if_begin(b, edge_ok(b, tm, tn, tiles_m, tiles_n));
  for (int q = 0; q < T.consumers; q++) { /* one TMA store per consumer, from its thread 0 */
    tirx_filter_begin(b, TIRX_AXIS_TID, 128 * (1 + q), 128 * (1 + q) + 1);
    tirx_copy_async(b, rect(b, C, tirx_add(b, tirx_mul(b, tm, I(b, BM)), I(b, q * WM)),
                            tirx_mul(b, tn, I(b, BN)), WM, BN),
                    rect(b, Cs, I(b, q * WM), I(b, 0), WM, BN), NULL);
    tirx_bulk_commit(b);
    tirx_bulk_wait(b, 0, true);
    tirx_filter_end(b);
  }
  if (CS > 1) tirx_if_end(b);
  tirx_for_end(b);
  for (int q = 0; q < T.consumers; q++) { /* stores complete before the CTA exits */
    tirx_filter_begin(b, TIRX_AXIS_TID, 128 * (1 + q), 128 * (1 + q) + 1);
    tirx_bulk_wait(b, 0, false);
    tirx_filter_end(b);
  }
  tirx_if_end(b);
  return finish_wgmma(b, CS, out);
}

/*
 * The gemv path (M <= 8, bandwidth-bound): C[m, n] = epilogue(sum_k A[m, k] B[n, k] [+ bias]).
 * One CTA of 256 threads per `rows` consecutive rows of B (rows past N read row N - 1 and
 * store nothing). K is split across the CTA's threads as 8-element vectors: thread t takes
 * vectors t, t + 256, ... of K / 8, loads that vector of each of its rows of B (16 bytes,
 * ld.global.cs: read once) and of each of the M rows of A (ld.global.nc: A is re-read by
 * every CTA, from L1/L2) and accumulates rows x M f32 sums; the K % 8 last columns one column
 * per thread. Then a xor butterfly in each warp, lane 0's sums into shared memory, and thread
 * (m, r) < M x rows adds the 8 warps' partials in warp order, the bias and the activation,
 * and stores C[m, n0 + r]. Every sum is in a fixed order: the same bits on every run.
 *
 * A, B and C are flat 1-D tensors (row starts m * lda with lda = 8 * LDA8, so the divisor
 * analysis of dispatch sees every vector's start as a multiple of 8 elements: 16 bytes).
 */
static tirx_status build_gemv(const gemm_spec *s, int rows, tirx_kernel **out) {
  enum { T = GEMV_THREADS, W = GEMV_THREADS / 32, V = 8 };
  const int MM = (int)s->m, R = rows;
  tirx_dtype dt = s->dtype;
  bool has_bias = s->epilogue != TIRX_EPILOGUE_NONE;
  char name[64];
  snprintf(name, sizeof name, "gemv_%s_m%d_r%d%s", tirx_dtype_name(dt), MM, R,
           ep_name[s->epilogue]);
  tirx_builder *b = tirx_builder_create(name);
  tirx_expr *N = tirx_param_int(b, "N", TIRX_I32), *K = tirx_param_int(b, "K", TIRX_I32);
  tirx_expr *LDA8 = tirx_param_int(b, "LDA8", TIRX_I64), *LDB8 = tirx_param_int(b, "LDB8", TIRX_I64);
  tirx_expr *LDC = tirx_param_int(b, "LDC", TIRX_I64);
  tirx_expr *AL = tirx_param_int(b, "AL", TIRX_I64), *BL = tirx_param_int(b, "BL", TIRX_I64);
  tirx_expr *CL = tirx_param_int(b, "CL", TIRX_I64);
  tirx_tensor *A = tirx_param_tensor(b, "A", dt, TIRX_EXPRS(AL), NULL);
  tirx_tensor *Bf = tirx_param_tensor(b, "B", dt, TIRX_EXPRS(BL), NULL);
  tirx_tensor *C = tirx_param_tensor(b, "C", dt, TIRX_EXPRS(CL), NULL);
  tirx_tensor *bias = has_bias ? tirx_param_tensor(b, "bias", dt, TIRX_EXPRS(I(b, 1), N), NULL) : NULL;
  tirx_set_block(b, T, 1, 1);
  tirx_set_grid(b, tirx_ceildiv(b, N, I(b, R)), NULL, NULL);
  tirx_tensor *red = tirx_alloc_shared(b, "red", TIRX_F32, TIRX_DIMS(W, MM * R), NULL);

  tirx_expr *tid = tirx_let(b, "tid", tirx_thread_linear(b));
  /* Row and column indices in i64: N and K may be up to 2^31 - 1, and n0 + 3 or the last
   * column's kv * 8 + 255 would overflow i32. */
  tirx_expr *N64 = tirx_cast(b, N, TIRX_I64), *K64 = tirx_cast(b, K, TIRX_I64);
  tirx_expr *n0 = tirx_let(b, "n0", tirx_mul(b, tirx_cast(b, tirx_block_idx(b, 0), TIRX_I64), I(b, R)));
  /* Row starts, as products of 8 (not tirx_let: a let hides its divisor from dispatch). */
  tirx_expr *brow[4], *arow[GEMV_MAX_M];
  for (int r = 0; r < R; r++) {
    char nm[16];
    snprintf(nm, sizeof nm, "nr%d", r);
    tirx_expr *nr = tirx_let(b, nm, tirx_min(b, tirx_add(b, n0, I(b, r)), tirx_sub(b, N64, I(b, 1))));
    brow[r] = tirx_mul(b, tirx_mul(b, nr, LDB8), I(b, V));
  }
  for (int m = 0; m < MM; m++) arow[m] = tirx_mul(b, tirx_mul(b, I(b, m), LDA8), I(b, V));
  tirx_expr *acc[GEMV_MAX_M][4];
  for (int m = 0; m < MM; m++)
    for (int r = 0; r < R; r++) {
      char nm[16];
      snprintf(nm, sizeof nm, "acc%d_%d", m, r);
      acc[m][r] = tirx_var(b, nm, TIRX_F32, tirx_float(b, 0.0, TIRX_F32));
    }
  tirx_expr *kv = tirx_let(b, "kv", tirx_div(b, K, I(b, V)));
  tirx_config ldb = {.hint = TIRX_HINT_STREAM}, lda = {.hint = TIRX_HINT_NC};
  tirx_expr *c = tirx_for_begin(b, "c", tid, kv, I(b, T), TIRX_LOOP_SERIAL);
  {
    tirx_expr *k0 = tirx_mul(b, tirx_cast(b, c, TIRX_I64), I(b, V));
    tirx_tensor *bv[4], *av[GEMV_MAX_M];
    for (int r = 0; r < R; r++) {
      char nm[16];
      snprintf(nm, sizeof nm, "bv%d", r);
      bv[r] = tirx_alloc_local(b, nm, dt, TIRX_DIMS(V), NULL);
      tirx_copy(b, tirx_whole(b, bv[r]),
                tirx_region_new(b, Bf, TIRX_EXPRS(tirx_add(b, brow[r], k0)), (int64_t[]){V}), &ldb);
    }
    for (int m = 0; m < MM; m++) {
      char nm[16];
      snprintf(nm, sizeof nm, "av%d", m);
      av[m] = tirx_alloc_local(b, nm, dt, TIRX_DIMS(V), NULL);
      tirx_copy(b, tirx_whole(b, av[m]),
                tirx_region_new(b, A, TIRX_EXPRS(tirx_add(b, arow[m], k0)), (int64_t[]){V}), &lda);
    }
    for (int m = 0; m < MM; m++)
      for (int r = 0; r < R; r++) {
        tirx_expr *sum = acc[m][r];
        for (int j = 0; j < V; j++)
          sum = tirx_add(b, sum, tirx_mul(b, tirx_cast(b, tirx_load(b, av[m], TIRX_EXPRS(I(b, j))), TIRX_F32),
                                          tirx_cast(b, tirx_load(b, bv[r], TIRX_EXPRS(I(b, j))), TIRX_F32)));
        tirx_assign(b, acc[m][r], sum);
      }
  }
  tirx_for_end(b);
  /* The K % 8 last columns: column kv * 8 + tid on the first threads. */
  tirx_expr *kt = tirx_let(b, "kt", tirx_add(b, tirx_mul(b, tirx_cast(b, kv, TIRX_I64), I(b, V)),
                                              tirx_cast(b, tid, TIRX_I64)));
  tirx_if_begin(b, tirx_lt(b, kt, K64));
  {
    tirx_expr *kt64 = kt;
    for (int m = 0; m < MM; m++) {
      tirx_expr *a = tirx_cast(b, tirx_load(b, A, TIRX_EXPRS(tirx_add(b, arow[m], kt64))), TIRX_F32);
      for (int r = 0; r < R; r++)
        tirx_assign(b, acc[m][r],
                    tirx_add(b, acc[m][r],
                             tirx_mul(b, a, tirx_cast(b, tirx_load(b, Bf, TIRX_EXPRS(tirx_add(b, brow[r], kt64))),
                                                      TIRX_F32))));
    }
  }
  tirx_if_end(b);
  /* The warp's sums: a xor butterfly (lane 0's result is what is kept). */
  for (int m = 0; m < MM; m++)
    for (int r = 0; r < R; r++)
      for (int off = 16; off >= 1; off /= 2)
        tirx_assign(b, acc[m][r], tirx_add(b, acc[m][r], tirx_shfl_xor(b, acc[m][r], I(b, off))));
  tirx_expr *w = tirx_let(b, "w", tirx_warp_id(b));
  tirx_if_begin(b, tirx_eq(b, tirx_lane_id(b), I(b, 0)));
  for (int m = 0; m < MM; m++)
    for (int r = 0; r < R; r++) tirx_store(b, red, TIRX_EXPRS(w, I(b, m * R + r)), acc[m][r]);
  tirx_if_end(b);
  tirx_sync_threads(b);
  /* Thread (m, r) = (tid / R, tid % R): the warps' partials in warp order, the epilogue. */
  tirx_if_begin(b, tirx_lt(b, tid, I(b, MM * R)));
  {
    tirx_expr *v = tirx_load(b, red, TIRX_EXPRS(I(b, 0), tid));
    for (int q = 1; q < W; q++) v = tirx_add(b, v, tirx_load(b, red, TIRX_EXPRS(I(b, q), tid)));
    tirx_expr *sum = tirx_var(b, "sum", TIRX_F32, v);
    tirx_expr *m = tirx_let(b, "m", tirx_div(b, tid, I(b, R)));
    tirx_expr *n = tirx_let(b, "n", tirx_add(b, n0, tirx_cast(b, tirx_mod(b, tid, I(b, R)), TIRX_I64)));
    tirx_if_begin(b, tirx_lt(b, n, N64));
    epilogue_scalar(b, s->epilogue, sum, bias, n);
    tirx_store(b, C, TIRX_EXPRS(tirx_add(b, tirx_mul(b, tirx_cast(b, m, TIRX_I64), LDC), n)),
               tirx_cast(b, sum, dt));
    tirx_if_end(b);
  }
  tirx_if_end(b);
  return tirx__kernels_finish(b, "tirx_kernels_gemm_build", out);
}

/*
 * The split-K reduction: C[m, n] = epilogue(sum over s = 0 .. S-1, in that order, of
 * W[s * WS + m, n] [+ bias[n]]), the partial tiles of the split-K wgmma kernel (f32, slab s
 * of WS = tiles_m * block_m rows). One thread per (m, n): blockIdx.y = m, 256 columns per
 * CTA. A fixed order, so the same bits on every run.
 */
static tirx_status build_reduce(const gemm_spec *s, tirx_kernel **out) {
  tirx_dtype dt = s->dtype;
  bool has_bias = s->epilogue != TIRX_EPILOGUE_NONE;
  char name[64];
  snprintf(name, sizeof name, "gemm_reduce_%s%s", tirx_dtype_name(dt), ep_name[s->epilogue]);
  tirx_builder *b = tirx_builder_create(name);
  tirx_expr *M = tirx_param_int(b, "M", TIRX_I32), *N = tirx_param_int(b, "N", TIRX_I32);
  tirx_expr *S = tirx_param_int(b, "S", TIRX_I32), *WS = tirx_param_int(b, "WS", TIRX_I32);
  tirx_expr *WR = tirx_param_int(b, "WR", TIRX_I32), *WC = tirx_param_int(b, "WC", TIRX_I32);
  tirx_tensor *W = tirx_param_tensor(b, "W", TIRX_F32, TIRX_EXPRS(WR, WC), NULL);
  tirx_tensor *C = tirx_param_tensor_strided(b, "C", dt, TIRX_EXPRS(M, N), (tirx_expr *[]){NULL, I(b, 1)});
  tirx_tensor *bias = has_bias ? tirx_param_tensor(b, "bias", dt, TIRX_EXPRS(I(b, 1), N), NULL) : NULL;
  tirx_set_block(b, 256, 1, 1);
  tirx_set_grid(b, tirx_ceildiv(b, N, I(b, 256)), M, NULL);
  /* Launched as a programmatic dependent of the split-K kernel (which lets it be scheduled
   * from its start): its launch and start overlap that kernel's last tiles, and it waits here,
   * before reading W, for that kernel to complete. */
  tirx_grid_dependency_wait(b);
  tirx_expr *m = tirx_let(b, "m", tirx_block_idx(b, 1));
  /* n in i64: ceil(N / 256) * 256 may pass 2^31 - 1. */
  tirx_expr *n = tirx_let(b, "n", tirx_add(b, tirx_mul(b, tirx_cast(b, tirx_block_idx(b, 0), TIRX_I64), I(b, 256)),
                                           tirx_cast(b, tirx_thread_linear(b), TIRX_I64)));
  tirx_if_begin(b, tirx_lt(b, n, tirx_cast(b, N, TIRX_I64)));
  tirx_expr *sum = tirx_var(b, "sum", TIRX_F32, tirx_float(b, 0.0, TIRX_F32));
  tirx_expr *sp = tirx_for_begin(b, "sp", I(b, 0), S, NULL, TIRX_LOOP_SERIAL);
  tirx_assign(b, sum, tirx_add(b, sum, tirx_load(b, W, TIRX_EXPRS(tirx_add(b, tirx_mul(b, sp, WS), m), n))));
  tirx_for_end(b);
  epilogue_scalar(b, s->epilogue, sum, bias, n);
  tirx_store(b, C, TIRX_EXPRS(m, n), tirx_cast(b, sum, dt));
  tirx_if_end(b);
  return tirx__kernels_finish(b, "tirx_kernels_gemm_build", out);
}

tirx_status tirx__kernels_gemm_reduce_build(tirx_dtype dtype, tirx_epilogue epilogue,
                                            tirx_kernel **out) {
  gemm_spec s = {.dtype = dtype, .m = 1, .n = 1, .k = 1, .epilogue = epilogue, .family = "wgmma",
                 .sms = 132, .reduce = true};
  *out = NULL;
  if ((dtype != TIRX_F16 && dtype != TIRX_BF16) || epilogue < TIRX_EPILOGUE_NONE ||
      epilogue > TIRX_EPILOGUE_BIAS_GELU)
    return tirx__error(TIRX_E_INVALID_ARG, "tirx_op_gemm split-K reduction: dtype %d or "
                       "epilogue %d out of range", (int)dtype, (int)epilogue);
  return build_reduce(&s, out);
}

/* ---- tirx_op_gemm ---- */

/* What decides the kernel: the tile shape matters to the wgmma family only, and so do sms;
 * the gemv path is specialised on M and its rows per CTA (tiles and sms zero). */
typedef struct gemm_key {
  int32_t dtype, epilogue, family, sms;
  gemm_tiles tiles;
  int32_t path, gemv_m, gemv_rows, reduce;
  int32_t ragged; /* ragged_n: C stored element by element */
  int32_t a_rows; /* a_rows_of: the rows of A per TMA load */
  int32_t cluster_m, cluster_n; /* cluster_pick's */
} gemm_key;
_Static_assert(sizeof(gemm_key) <= TIRX__KERNELS_KEY_MAX, "gemm_key fits the kernel table");

static tirx_status build_for_op(const void *ctx, tirx_kernel **out) {
  return gemm_build(ctx, out);
}

/*
 * The split-K path of tirx_op_gemm: the split-K wgmma kernel (f32 partial tiles into the
 * runtime's workspace for the stream: tirx__runtime_scratch) and then the reduction with the
 * epilogue, both on stream, under tirx__kernels_scratch_lock (calls from many threads are serialised from
 * the workspace to the second launch). Without a device there is no workspace: the first
 * launch returns
 * tirx_launch's TIRX_E_NO_DEVICE as every op does (a placeholder pointer, never read).
 */
/* Held from the workspace's lookup to the second launch: two threads enqueueing split-K on one
 * stream could otherwise interleave as kernel, kernel, reduction, reduction, and the first
 * reduction would read the second call's partial tiles. */

static tirx_status op_splitk(tirx_runtime *rt, const gemm_spec *s, const tirx_gemm_plan *plan,
                             void *a, int64_t lda, void *b, int64_t ldb, void *c, int64_t ldc,
                             void *bias, void *stream) {
  static const char fn[] = "tirx_op_gemm";
  const int64_t M = s->m, N = s->n, K = s->k, BM = plan->tiles.block_m, BN = plan->tiles.block_n;
  const int64_t S = plan->splits, kblocks = (K + BK - 1) / BK, kbs = (kblocks + S - 1) / S;
  const int64_t ws = (M + BM - 1) / BM * BM, wc = (N + BN - 1) / BN * BN, wr = S * ws;
  if (wr > INT32_MAX || wc > INT32_MAX)
    return tirx__error(TIRX_E_INVALID_ARG, "%s: the split-K workspace [%lld, %lld] is too "
                       "large, expected extents up to 2^31 - 1: use opts->path "
                       "TIRX_GEMM_PATH_WGMMA", fn, (long long)wr, (long long)wc);
  gemm_key key = {0}, rkey = {0};
  key.dtype = rkey.dtype = (int32_t)s->dtype;
  key.path = rkey.path = (int32_t)TIRX_GEMM_PATH_WGMMA_SPLITK;
  key.sms = s->sms, key.tiles = plan->tiles; /* no epilogue: the reduction's */
  key.a_rows = (int32_t)a_rows_of(s, &plan->tiles);
  key.cluster_m = plan->cluster_m, key.cluster_n = plan->cluster_n;
  rkey.epilogue = (int32_t)s->epilogue, rkey.reduce = 1;
  gemm_spec rs = *s;
  rs.reduce = true;
  tirx_kernel *k = NULL, *r = NULL;
  tirx_status st = tirx__kernels_get(&key, sizeof key, build_for_op, s, &k);
  if (st == TIRX_OK) st = tirx__kernels_get(&rkey, sizeof rkey, build_for_op, &rs, &r);
  if (st != TIRX_OK) {
    tirx_kernel_release(k);
    return tirx__error(st, "%s: %s", fn, tirx_last_error());
  }
  void *w = (void *)(uintptr_t)4096;
  pthread_mutex_lock(&tirx__kernels_scratch_lock);
  if (tirx_runtime_has_device(rt))
    st = tirx__runtime_scratch(rt, fn, stream, (size_t)plan->workspace_bytes, &w);
  int64_t a_shape[2] = {M, K}, a_strides[2] = {lda, 1};
  int64_t b_shape[2] = {K, N}, b_strides[2] = {1, ldb};
  int64_t c_shape[2] = {M, N}, c_strides[2] = {ldc, 1};
  int64_t w_shape[2] = {wr, wc}, bias_shape[2] = {1, N};
  if (st == TIRX_OK) {
    tirx_arg args[9] = {
        tirx_arg_i32((int32_t)M), tirx_arg_i32((int32_t)N), tirx_arg_i32((int32_t)K),
        tirx_arg_tensor(a, s->dtype, 2, a_shape, a_strides),
        tirx_arg_tensor(b, s->dtype, 2, b_shape, b_strides),
        tirx_arg_i32((int32_t)kbs), tirx_arg_i32((int32_t)wr), tirx_arg_i32((int32_t)wc),
        tirx_arg_tensor(w, TIRX_F32, 2, w_shape, NULL),
    };
    st = tirx__kernels_launch(fn, rt, k, args, 9, stream);
  }
  if (st == TIRX_OK) {
    tirx_arg rargs[9] = {
        tirx_arg_i32((int32_t)M), tirx_arg_i32((int32_t)N), tirx_arg_i32((int32_t)S),
        tirx_arg_i32((int32_t)ws), tirx_arg_i32((int32_t)wr), tirx_arg_i32((int32_t)wc),
        tirx_arg_tensor(w, TIRX_F32, 2, w_shape, NULL),
        tirx_arg_tensor(c, s->dtype, 2, c_shape, c_strides),
        tirx_arg_tensor(bias, s->dtype, 2, bias_shape, NULL),
    };
    st = tirx__kernels_launch(fn, rt, r, rargs, bias ? 9 : 8, stream);
  }
  pthread_mutex_unlock(&tirx__kernels_scratch_lock);
  tirx_kernel_release(k);
  tirx_kernel_release(r);
  return st;
}

/* A 16-bit matrix operand [rows, cols] with innermost stride 1: its row stride (elements) in
 * *ld, a multiple of 16 bytes and at least cols. */
static tirx_status check_matrix(const char *fn, const char *name, const tirx_tensor_arg *t,
                                int64_t *ld) {
  int64_t rows = t->shape[0], cols = t->shape[1];
  if (t->strides && t->strides[1] != 1 && cols != 1)
    return tirx__error(TIRX_E_INVALID_ARG, "%s: %s has strides [%lld, %lld], expected an "
                       "innermost stride of 1", fn, name, (long long)t->strides[0],
                       (long long)t->strides[1]);
  *ld = t->strides ? t->strides[0] : cols;
  if (rows > 1 && *ld < cols)
    return tirx__error(TIRX_E_INVALID_ARG, "%s: %s has row stride %lld, expected >= %lld (its "
                       "rows would overlap)", fn, name, (long long)*ld, (long long)cols);
  if (rows == 1 && *ld < cols)
    *ld = cols;
  /* ld >= cols >= 1 here: its bytes fit an unsigned 64-bit number */
  if (*ld % 8)
    return tirx__error(TIRX_E_INVALID_ARG, "%s: %s has a row stride of %lld elements (%llu "
                       "bytes), expected a multiple of 16 bytes (TMA): pad its rows", fn, name,
                       (long long)*ld, (unsigned long long)*ld * 2u);
  if (rows > INT32_MAX || cols > INT32_MAX)
    return tirx__error(TIRX_E_INVALID_ARG, "%s: %s has shape [%lld, %lld], expected extents up "
                       "to 2^31 - 1", fn, name, (long long)rows, (long long)cols);
  /* the last element's byte offset, (rows - 1) * ld + cols elements of 2 bytes, within int64
   * (the gemv path passes the flat lengths; TMA takes byte strides) */
  int64_t span;
  if (__builtin_mul_overflow(rows - 1, *ld, &span) || __builtin_add_overflow(span, cols, &span) ||
      span > INT64_MAX / 2)
    return tirx__error(TIRX_E_INVALID_ARG, "%s: %s has row stride %lld: its %lld rows span more "
                       "than 2^63 - 1 bytes, expected a smaller stride", fn, name,
                       (long long)*ld, (long long)rows);
  return TIRX_OK;
}

tirx_status tirx_op_gemm(tirx_runtime *rt, const tirx_gemm_options *opts,
                         const tirx_tensor_arg *a, const tirx_tensor_arg *b,
                         const tirx_tensor_arg *bias, const tirx_tensor_arg *c, void *stream) {
  static const char fn[] = "tirx_op_gemm";
  if (!rt)
    return tirx__error(TIRX_E_NULL_ARG, "%s: rt is NULL", fn);
  gemm_spec s = {0};
  tirx_status st = check_options(fn, opts, &s);
  if (st != TIRX_OK)
    return st;
  if ((st = tirx__check_tensor(fn, "a", a, 2)) != TIRX_OK ||
      (st = tirx__check_tensor(fn, "b", b, 2)) != TIRX_OK ||
      (st = tirx__check_tensor(fn, "c", c, 2)) != TIRX_OK)
    return st;
  tirx_dtype dt = a->dtype;
  if (dt != TIRX_F16 && dt != TIRX_BF16)
    return tirx__error(TIRX_E_TYPE, "%s: a has dtype %s, expected f16 or bf16", fn,
                       tirx_dtype_name(dt) ? tirx_dtype_name(dt) : "invalid");
  const int64_t M = a->shape[0], K = a->shape[1], N = b->shape[0];
  if ((st = tirx__check_dtype(fn, "b", b, dt)) != TIRX_OK ||
      (st = tirx__check_dtype(fn, "c", c, dt)) != TIRX_OK ||
      (st = tirx__check_shape(fn, "b", b, (int64_t[]){N, K}, "[N, K]")) != TIRX_OK ||
      (st = tirx__check_shape(fn, "c", c, (int64_t[]){M, N}, "[M, N]")) != TIRX_OK)
    return st;
  int64_t lda, ldb, ldc;
  if ((st = check_matrix(fn, "a", a, &lda)) != TIRX_OK ||
      (st = check_matrix(fn, "b", b, &ldb)) != TIRX_OK ||
      (st = check_matrix(fn, "c", c, &ldc)) != TIRX_OK)
    return st;
  bool has_bias = s.epilogue != TIRX_EPILOGUE_NONE;
  if (!has_bias && bias)
    return tirx__error(TIRX_E_INVALID_ARG, "%s: bias is given, but opts->epilogue is "
                       "TIRX_EPILOGUE_NONE", fn);
  if (has_bias && !bias)
    return tirx__error(TIRX_E_NULL_ARG, "%s: bias is NULL, expected [N] for epilogue %d", fn,
                       (int)s.epilogue);
  if (has_bias && (st = tirx__check_row(fn, "bias", bias, dt, N)) != TIRX_OK)
    return st;

  s.dtype = dt, s.m = M, s.n = N, s.k = K;
  if ((st = check_path(fn, &s)) != TIRX_OK)
    return st;
  tirx_gemm_plan plan = plan_of(&s);
  s.path = plan.path, s.gemv_rows = plan.gemv_rows;
  bool gemv = plan.path == TIRX_GEMM_PATH_GEMV;
  if (plan.path == TIRX_GEMM_PATH_WGMMA_SPLITK)
    return op_splitk(rt, &s, &plan, a->data, lda, b->data, ldb, c->data, ldc,
                     has_bias ? bias->data : NULL, stream);
  gemm_key key = {0};
  key.dtype = (int32_t)dt, key.epilogue = (int32_t)s.epilogue;
  key.family = strcmp(s.family, "wgmma") == 0 ? 0 : strcmp(s.family, "mma") == 0 ? 1 : 2;
  key.path = (int32_t)plan.path;
  if (gemv)
    key.gemv_m = (int32_t)M, key.gemv_rows = plan.gemv_rows;
  else if (key.family == 0)
    key.sms = s.sms, key.tiles = gemm_pick(&s), key.a_rows = (int32_t)a_rows_of(&s, &key.tiles),
    cluster_pick(&s, &key.tiles, &key.cluster_m, &key.cluster_n); /* what build_wgmma takes */
  if (!gemv)
    key.ragged = ragged_n(&s);
  tirx_kernel *k;
  if ((st = tirx__kernels_get(&key, sizeof key, build_for_op, &s, &k)) != TIRX_OK)
    return tirx__error(st, "%s: %s", fn, tirx_last_error());

  if (gemv) { /* flat views: lengths and row strides (over 8 for A and B: multiples of 16 bytes) */
    int64_t al = (M - 1) * lda + K, bl = (N - 1) * ldb + K, cl = (M - 1) * ldc + N;
    tirx_arg gargs[12] = {
        tirx_arg_i32((int32_t)N), tirx_arg_i32((int32_t)K),
        tirx_arg_i64(lda / 8),    tirx_arg_i64(ldb / 8),
        tirx_arg_i64(ldc),        tirx_arg_i64(al),
        tirx_arg_i64(bl),         tirx_arg_i64(cl),
        tirx_arg_tensor(a->data, dt, 1, &al, NULL),
        tirx_arg_tensor(b->data, dt, 1, &bl, NULL),
        tirx_arg_tensor(c->data, dt, 1, &cl, NULL),
        tirx_arg_tensor(has_bias ? bias->data : NULL, dt, 2, (int64_t[]){1, N}, NULL),
    };
    st = tirx__kernels_launch(fn, rt, k, gargs, has_bias ? 12 : 11, stream);
    tirx_kernel_release(k);
    return st;
  }
  int64_t a_shape[2] = {M, K}, a_strides[2] = {lda, 1};
  int64_t b_shape[2] = {K, N}, b_strides[2] = {1, ldb}; /* B [N, K] as its (K, N) view */
  int64_t c_shape[2] = {M, N}, c_strides[2] = {ldc, 1};
  int64_t bias_shape[2] = {1, N};
  tirx_arg args[7] = {
      tirx_arg_i32((int32_t)M),
      tirx_arg_i32((int32_t)N),
      tirx_arg_i32((int32_t)K),
      tirx_arg_tensor(a->data, dt, 2, a_shape, a_strides),
      tirx_arg_tensor(b->data, dt, 2, b_shape, b_strides),
      tirx_arg_tensor(c->data, dt, 2, c_shape, c_strides),
      tirx_arg_tensor(has_bias ? bias->data : NULL, dt, 2, bias_shape, NULL),
  };
  st = tirx__kernels_launch(fn, rt, k, args, has_bias ? 7 : 6, stream);
  tirx_kernel_release(k);
  return st;
}
