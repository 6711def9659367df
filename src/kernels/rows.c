/* Memory-bound row kernels with tile primitives (tirx/kernels.h), and their ops. */
#include "kernels_internal.h"
#include "../builder/builder_internal.h" /* the e4m3 stores: native statements (below) */

#include <stdio.h>
#include <string.h>

/* The options, checked, with their defaults filled in (sms 132). Every choice below reads
 * them from here: there is no global state. */
typedef tirx_row_options opts;

/* One row of the kernel: up to three register tiles (tirx/kernels.h), each a tensor of shape
 * [1, extent] at column begin. */
typedef struct tile {
  tirx_tensor *t[3];
} tile;

typedef struct rk {
  tirx_builder *b;
  const opts *o;
  tirx_row_op kind;
  tirx_dtype dt;
  int64_t width, T; /* threads per row (per CTA of the row's cluster) */
  int64_t ncta, cols; /* CTAs per row (a cluster when > 1) and the columns each holds */
  bool cta, scalar;
  tirx_expr *rows, *row;
  int np;
  int64_t begin[3], extent[3];
  const tirx_layout *layout[3];
  /* A piece's iters as text (shape, strides) and the registers a thread holds of it, for the
   * stacked [2, extent] tiles (rk_local2); shape[i][0] == 0: no layout (warp tail). */
  char shape[3][96], strides[3][96];
  int64_t regs[3];
  tirx_config ld, st, pw, wld; /* wld: weight rows (read by every row: cached, not streamed) */
  /* Staged rows (row_stages > 0): a persistent CTA reads its rows x[row] through a ring
   * of `stages` shared rows filled by TMA, up to `stages` rows ahead of the one it computes;
   * wsmem: the weight rows wt[] are read once into the shared rows wrows (unless
   * TIRX_ROW_VARIANT_WEIGHTS_GLOBAL). */
  int stages;
  bool wsmem;
  tirx_tensor *wt[2], *wrows;
  tirx_tensor *ring, *full;
  tirx_expr *slot, *phase, *it, *first; /* first: x[row, 0] in f32, read from the ring */
  bool want_first;                         /* (layernorm's shift) */
} rk;

static void rk_pieces(rk *k) {
  int64_t vec = 16 / tirx_dtype_size(k->dt), T = k->T, chunk = T * vec;
  int64_t n = k->cols / chunk, rest = k->cols - n * chunk; /* ncta > 1: rest is 0 */
  /* CTA: the rest in whole vectors on the first q threads; warp: q strided elements per lane
   * (reduce.shuffle needs every lane: a butterfly over a partial lane range is not lowered). */
  int64_t q = k->cta ? rest / vec : rest / T, r = rest - q * (k->cta ? vec : T);
  char text[224];
  const char *ax = k->cta ? "tid" : "laneid";
  tirx_arena *a = tirx_builder_arena(k->b);
  k->np = 0;
  if (n) { /* whole chunks: vec contiguous elements per thread, n times; a cluster's CTAs
             * hold consecutive parts of the row: (ncta,n,T,V):(1@cbx,V@reg,1@tid,1@reg) */
    char cs[24] = "";
    const char *cd = k->ncta > 1 ? "1@cbx," : "";
    if (k->ncta > 1) snprintf(cs, sizeof cs, "%lld,", (long long)k->ncta);
    snprintf(k->shape[k->np], sizeof k->shape[0], "%s%lld,%lld,%lld", cs, (long long)n,
             (long long)T, (long long)vec);
    snprintf(k->strides[k->np], sizeof k->strides[0], "%s%lld@reg,1@%s,1@reg", cd,
             (long long)vec, ax);
    k->regs[k->np] = n * vec;
    k->begin[k->np] = 0, k->extent[k->np++] = k->ncta * n * chunk;
  }
  if (q) {
    snprintf(k->shape[k->np], sizeof k->shape[0], "%lld,%lld", (long long)q,
             (long long)(k->cta ? vec : T));
    snprintf(k->strides[k->np], sizeof k->strides[0], "%s",
             k->cta ? "1@tid,1@reg" : "1@reg,1@laneid");
    k->regs[k->np] = k->cta ? vec : q;
    k->begin[k->np] = n * chunk, k->extent[k->np++] = k->cta ? q * vec : q * T;
  }
  if (r) { /* CTA: one element on each of the first r threads; warp: every lane holds all */
    k->shape[k->np][0] = '\0';
    if (k->cta) {
      snprintf(k->shape[k->np], sizeof k->shape[0], "%lld", (long long)r);
      snprintf(k->strides[k->np], sizeof k->strides[0], "1@tid");
    }
    k->regs[k->np] = k->cta ? 1 : r;
    k->begin[k->np] = k->width - r, k->extent[k->np++] = r;
  }
  for (int i = 0; i < k->np; i++) {
    snprintf(text, sizeof text, "(%s):(%s)", k->shape[i], k->strides[i]);
    k->layout[i] = k->shape[i][0] ? tirx_layout_parse(a, text) : NULL;
  }
}

/* row_threads, the vectors a thread holds preferred nearest `near` (4 in general; 2 for
 * rmsnorm, add_rmsnorm and softmax, measured faster at 8192 with 512 threads: 0.95 against
 * 0.92 of a copy; layernorm and silu_mul slower so). */
static int threads_near(const opts *o, tirx_dtype dtype, int64_t width, int64_t near) {
  if (width <= TIRX_ROW_WARP_MAX_WIDTH) return 32;
  if (o->threads) return o->threads;
  int64_t vec = 16 / tirx_dtype_size(dtype), nvec = width / vec;
  /* A row of whole vectors: T threads holding v vectors each, T * v = nvec exactly, so the
   * row is one register tile and one reduction (5000 bf16 = 125 threads x 5 vectors). Among
   * v in 2..8 with T <= 1024, the least idle lanes in the last warp, then v nearest `near`. */
  if (width % vec == 0) {
    int64_t best = 0, best_waste = 0, best_v = 0;
    for (int64_t v = 2; v <= 8; v++) {
      if (nvec % v || nvec / v > 1024 || nvec / v < 32) continue;
      int64_t T = nvec / v, waste = (T + 31) / 32 * 32 - T;
      int64_t dv = v > near ? v - near : near - v;
      int64_t dbest = best_v > near ? best_v - near : near - best_v;
      if (!best || waste < best_waste || (waste == best_waste && dv < dbest))
        best = T, best_waste = waste, best_v = v;
    }
    if (best && best_waste * 8 <= best) return (int)best; /* at most 1/8 of the lanes idle */
  }
  int64_t T = 64;
  while (T < 1024 && nvec / (2 * T) >= 2) T *= 2;
  return (int)T;
}

static int row_threads(const opts *o, tirx_dtype dtype, int64_t width) {
  return threads_near(o, dtype, width, 4);
}

/* The kernels with an FP8 output (tirx_kernels_rmsnorm_fp8_build): kinds past the public ones,
 * threads as rmsnorm's, never clustered (row_cluster); rmsnorm_fp8 is staged as rmsnorm is
 * (row_stages, its weight row in shared memory), add_rmsnorm_fp8 never (two inputs). */
enum { ROW_RMSNORM_FP8 = TIRX_ROW_OP_COUNT, ROW_ADD_RMSNORM_FP8 };

static const char *row_kind_name(int kind) {
  return kind == ROW_RMSNORM_FP8       ? "rmsnorm_fp8"
         : kind == ROW_ADD_RMSNORM_FP8 ? "add_rmsnorm_fp8"
                                       : tirx_kernels_row_name((tirx_row_op)kind);
}

static int kind_threads(const opts *o, tirx_row_op kind, tirx_dtype dtype, int64_t width) {
  bool two = kind == TIRX_ROW_OP_RMSNORM || kind == TIRX_ROW_OP_ADD_RMSNORM || kind == TIRX_ROW_OP_SOFTMAX ||
             (int)kind == ROW_RMSNORM_FP8 || (int)kind == ROW_ADD_RMSNORM_FP8;
  return threads_near(o, dtype, width, two ? 2 : 4);
}

/* Staged CTAs per SM: what the registers (about 56 a thread besides its row values, as ptxas
 * reports for these kernels) and two stages each allow; a persistent grid larger than what is
 * resident would leave its last CTAs waiting for whole CTAs to finish. */
static int64_t stage_ctas(const opts *o, tirx_row_op kind, tirx_dtype dtype, int64_t width) {
  int64_t T = kind_threads(o, kind, dtype, width), Tw = (T + 31) / 32 * 32;
  int64_t regs = (width + T - 1) / T + 56;
  int64_t by_regs = 65536 / (Tw * (regs < 64 ? 64 : regs));
  int64_t by_smem = TIRX_ROW_STAGE_SMEM / (2 * width * tirx_dtype_size(dtype));
  int64_t n = by_regs < by_smem ? by_regs : by_smem;
  return n < 1 ? 1 : n;
}

/* The weight rows kind reads where it is staged (rmsnorm and rmsnorm_fp8 w; layernorm w and
 * bias). */
static int weight_rows(tirx_row_op kind) {
  if (kind == TIRX_ROW_OP_LAYERNORM) return 2;
  return kind == TIRX_ROW_OP_RMSNORM || (int)kind == ROW_RMSNORM_FP8 ? 1 : 0;
}

static int row_cluster(const opts *o, tirx_row_op kind, tirx_dtype dtype, int64_t width);

static int row_stages(const opts *o, tirx_row_op kind, tirx_dtype dtype, int64_t width) {
  if (o->variant & TIRX_ROW_VARIANT_UNSTAGED) return 0;
  if (kind != TIRX_ROW_OP_RMSNORM && kind != TIRX_ROW_OP_LAYERNORM && kind != TIRX_ROW_OP_SOFTMAX &&
      (int)kind != ROW_RMSNORM_FP8)
    return 0;
  if (width <= TIRX_ROW_WARP_MAX_WIDTH || row_cluster(o, kind, dtype, width) > 1) return 0;
  int64_t size = tirx_dtype_size(dtype), bytes = width * size;
  /* TMA: rows of whole 16-byte units, a row one box of inner x outer elements, both at most
   * 256, the inner part whole 16-byte units (copy_async.tma splits it so: 5000 = 200 x 25) */
  int64_t inner = 256;
  while (inner > 1 && (width % inner || inner * size % 16)) inner--;
  if (bytes % 16 || inner <= 1 || width / inner > 256) return 0;
  bool forced = o->stages || (o->variant & TIRX_ROW_VARIANT_STAGED);
  if (bytes < TIRX_ROW_STAGE_MIN_BYTES && !forced) return 0;
  int64_t pitch = (bytes + 127) / 128 * 128;
  int64_t avail = TIRX_ROW_STAGE_SMEM / stage_ctas(o, kind, dtype, width);
  if (!(o->variant & TIRX_ROW_VARIANT_WEIGHTS_GLOBAL)) avail -= weight_rows(kind) * pitch;
  int64_t n = o->stages ? o->stages : avail / pitch > 2 ? 2 : avail / pitch;
  if (n < 1 || n * pitch > avail) return 0;
  return (int)n;
}

static int row_cluster(const opts *o, tirx_row_op kind, tirx_dtype dtype, int64_t width) {
  int c = o->cluster;
  if (c < 2 || (kind != TIRX_ROW_OP_RMSNORM && kind != TIRX_ROW_OP_ADD_RMSNORM &&
                kind != TIRX_ROW_OP_LAYERNORM && kind != TIRX_ROW_OP_SOFTMAX))
    return 1;
  int64_t vec = 16 / tirx_dtype_size(dtype), part = width / c;
  if (width <= TIRX_ROW_CLUSTER_MIN_WIDTH || width % c || part % vec) return 1;
  return part % (row_threads(o, dtype, part) * vec) == 0 ? c : 1; /* one tile per CTA */
}

/* A builder with the rows parameter; tensors are declared next, then rk_open. */
static void rk_init(rk *k, const opts *o, tirx_row_op kind, tirx_dtype dt, int64_t width) {
  bool scalar = o->scalar;
  *k = (rk){.b = tirx_builder_create(row_kind_name(kind)), .o = o, .kind = kind, .dt = dt,
            .width = width, .scalar = scalar, .ncta = row_cluster(o, kind, dt, width)};
  k->cols = width / k->ncta;
  k->rows = tirx_param_int(k->b, "rows", TIRX_I32);
  /* Cache hints of the rows' loads and stores, as measured on the H200 (PERF-NOTES, session
   * 15: every kernel at three shapes, .cs or none on each side): plain loads were 1-6% faster
   * than ld.global.cs on every kernel that writes rows (silu_mul 5-6%, add_rmsnorm and chain
   * 4%), and 1% slower on the two row reductions, which keep .cs; plain stores were faster
   * where the rows are loaded directly (add_rmsnorm, chain 1-2.5%) but 2-2.6% slower on
   * layernorm at 8192 and the staged rows (softmax at 32768), which keep st.global.cs (set
   * below, once the stages are known). */
  bool reduction = kind == TIRX_ROW_OP_SUM || kind == TIRX_ROW_OP_MAX;
  k->ld = (tirx_config){.family = scalar ? "scalar" : NULL,
                        .hint = reduction ? TIRX_HINT_STREAM : TIRX_HINT_NONE};
  k->st = (tirx_config){.family = scalar ? "scalar" : NULL};
  k->wld = (tirx_config){.family = scalar ? "scalar" : NULL,
                         .hint = o->variant & TIRX_ROW_VARIANT_WEIGHTS_STREAM ? TIRX_HINT_STREAM
                                                                            : TIRX_HINT_NC};
  k->pw = (tirx_config){.family = scalar ? "scalar" : NULL};
  k->cta = width > TIRX_ROW_WARP_MAX_WIDTH;
  k->T = k->ncta > 1 ? row_threads(o, dt, k->cols) : kind_threads(o, kind, dt, k->cols);
  k->stages = k->cta && !scalar ? row_stages(o, kind, dt, width) : 0;
  k->wsmem = k->stages && !(o->variant & TIRX_ROW_VARIANT_WEIGHTS_GLOBAL) && weight_rows(kind);
  if (k->stages || kind == TIRX_ROW_OP_LAYERNORM) k->st.hint = TIRX_HINT_STREAM;
}

static tirx_tensor *rk_param(rk *k, const char *name, tirx_expr *rows, int64_t width) {
  return tirx_param_tensor(k->b, name, k->dt, TIRX_EXPRS(rows, tirx_int(k->b, width)), NULL);
}

static tirx_tensor *rk_local(rk *k, const char *name, tirx_dtype dt, int i);
static tile rk_load_raw(rk *k, const char *name, tirx_tensor *x, tirx_expr *row, int64_t col0,
                        const tirx_config *cfg);

static tirx_expr *I(rk *k, int64_t v) { return tirx_int(k->b, v); }

static tirx_region *bar(rk *k, tirx_tensor *bars, tirx_expr *i) {
  return tirx_region_new(k->b, bars, TIRX_EXPRS(i), (int64_t[]){1});
}

/* One thread: if row < rows, TMA x[row] into stage s of the ring, completing on full[s]. */
static void rk_fetch(rk *k, tirx_tensor *x, tirx_expr *row, tirx_expr *s) {
  tirx_builder *b = k->b;
  tirx_if_begin(b, tirx_lt(b, row, k->rows));
  tirx_mbarrier_expect_tx(b, bar(k, k->full, s), I(k, k->width * tirx_dtype_size(k->dt)));
  tirx_config ld = {.barrier = bar(k, k->full, s)};
  tirx_copy_async(b, tirx_region_new(b, k->ring, TIRX_EXPRS(s, I(k, 0)), (int64_t[]){1, k->width}),
                  tirx_region_new(b, x, TIRX_EXPRS(row, I(k, 0)), (int64_t[]){1, k->width}), &ld);
  tirx_if_end(b);
}

/* n shared rows of the row's width, 128 bytes apart (TMA's shared-memory alignment). */
static tirx_tensor *rk_rows(rk *k, const char *name, int64_t n) {
  int64_t size = tirx_dtype_size(k->dt), pitch = (k->width * size + 127) / 128 * 128 / size;
  return tirx_alloc_shared(k->b, name, k->dt, TIRX_DIMS(n, k->width),
                           tirx_layout_strided(tirx_builder_arena(k->b), 2,
                                               (int64_t[]){n, k->width}, (int64_t[]){pitch, 1}));
}

/* Staged rows: the ring and its mbarriers, the first `stages` rows of this CTA in flight,
 * then the loop over rows blockIdx.x + i * gridDim.x (block, grid and team set by rk_open). */
static void rk_open_staged(rk *k, tirx_tensor *x) {
  tirx_builder *b = k->b;
  int S = k->stages;
  /* a persistent grid of the CTAs an SM holds: ptxas is told to fit that many */
  int64_t ctas = stage_ctas(k->o, k->kind, k->dt, k->width);
  tirx_set_grid(b, tirx_min(b, k->rows, I(k, k->o->sms * ctas)), NULL, NULL);
  if (ctas > 1 && !k->o->min_blocks) tirx_set_min_blocks(b, (int)ctas);
  int64_t size = tirx_dtype_size(k->dt);
  int nw = k->wsmem ? (k->wt[1] ? 2 : 1) : 0;
  k->ring = rk_rows(k, "ring", S);
  k->wrows = nw ? rk_rows(k, "wrows", nw) : NULL; /* the weight rows, read once (full[S]) */
  k->full = tirx_alloc_mbarrier(b, "full", S + (nw > 0));
  tirx_expr *tid = tirx_let(b, "tid", tirx_thread_linear(b));
  tirx_if_begin(b, tirx_eq(b, tid, I(k, 0)));
  for (int i = 0; i < S + (nw > 0); i++) tirx_mbarrier_init(b, bar(k, k->full, I(k, i)), 1);
  tirx_fence_mbarrier_init(b);
  tirx_if_end(b);
  tirx_sync_threads(b);
  tirx_filter_begin(b, TIRX_AXIS_TID, 0, 1);
  if (nw) {
    tirx_mbarrier_expect_tx(b, bar(k, k->full, I(k, S)), I(k, nw * k->width * size));
    tirx_config ld = {.barrier = bar(k, k->full, I(k, S))};
    for (int j = 0; j < nw; j++)
      tirx_copy_async(b, tirx_region_new(b, k->wrows, TIRX_EXPRS(I(k, j), I(k, 0)), (int64_t[]){1, k->width}),
                      tirx_region_new(b, k->wt[j], TIRX_EXPRS(I(k, 0), I(k, 0)), (int64_t[]){1, k->width}),
                      &ld);
  }
  for (int i = 0; i < S; i++)
    rk_fetch(k, x, tirx_add(b, tirx_block_idx(b, 0), tirx_mul(b, I(k, i), tirx_grid_dim(b, 0))),
             I(k, i));
  tirx_filter_end(b);
  if (nw) tirx_mbarrier_wait(b, bar(k, k->full, I(k, S)), I(k, 0));
  k->it = tirx_var(b, "it", TIRX_I32, NULL);
  k->row = tirx_for_begin(b, "row", tirx_block_idx(b, 0), k->rows, tirx_grid_dim(b, 0),
                          TIRX_LOOP_SERIAL);
  k->slot = tirx_let(b, "slot", tirx_mod(b, k->it, I(k, S)));
  k->phase = tirx_let(b, "phase", tirx_bit_and(b, tirx_div(b, k->it, I(k, S)), I(k, 1)));
  tirx_team_begin(b, TIRX_TEAM_CTA);
}

/* Staged: row `row` of x from the ring; once every thread holds its part, the slot is refilled
 * with the row `stages` rows ahead. */
static tile rk_load_staged(rk *k, tirx_tensor *x) {
  tirx_builder *b = k->b;
  tirx_mbarrier_wait(b, bar(k, k->full, k->slot), k->phase);
  tile t = rk_load_raw(k, "xh", k->ring, k->slot, 0, NULL);
  if (k->want_first) /* before the slot is released */
    k->first = tirx_let(b, "first", tirx_cast(b, tirx_load(b, k->ring, TIRX_EXPRS(k->slot, I(k, 0))),
                                             TIRX_F32));
  tirx_sync_threads(b); /* every thread has read the slot: refill it, stages rows ahead */
  tirx_filter_begin(b, TIRX_AXIS_TID, 0, 1);
  rk_fetch(k, x, tirx_add(b, k->row, tirx_mul(b, I(k, k->stages), tirx_grid_dim(b, 0))), k->slot);
  tirx_filter_end(b);
  return t;
}

/* Block, grid, the row index and the team; x: the streamed input (staged rows). */
static void rk_open(rk *k, tirx_tensor *x) {
  tirx_builder *b = k->b;
  rk_pieces(k);
  if (k->o->min_blocks) tirx_set_min_blocks(b, k->o->min_blocks);
  if (k->stages > 0) {
    tirx_set_block(b, (int)((k->T + 31) / 32 * 32), 1, 1);
    rk_open_staged(k, x);
    return;
  }
  int per = k->cta ? 1 : TIRX_ROW_WARPS;
  tirx_set_block(b, (int)(k->cta ? (k->T + 31) / 32 * 32 : 32 * per), 1, 1);
  if (k->ncta > 1) { /* a cluster of ncta CTAs per row */
    tirx_set_cluster(b, (int)k->ncta, 1, 1);
    tirx_set_grid(b, tirx_mul(b, k->rows, tirx_int(b, k->ncta)), NULL, NULL);
  } else {
    tirx_set_grid(b, tirx_ceildiv(b, k->rows, tirx_int(b, per)), NULL, NULL);
  }
  k->row = tirx_let(b, "row", k->ncta > 1 ? tirx_cluster_id(b, 0)
                              : k->cta    ? tirx_block_idx(b, 0)
                                          : tirx_add(b, tirx_mul(b, tirx_block_idx(b, 0),
                                                                 tirx_int(b, per)),
                                                     tirx_warp_id(b)));
  tirx_if_begin(b, tirx_lt(b, k->row, k->rows)); /* CTA, cluster: always true, uniform */
  tirx_team_begin(b, k->ncta > 1 ? TIRX_TEAM_CLUSTER : k->cta ? TIRX_TEAM_CTA : TIRX_TEAM_WARP);
}

/* Builds the kernel (errors prefixed with the public build function's name) and destroys the
 * builder. */
static const char ROW_BUILD[] = "tirx_kernels_row_build", FP8_BUILD[] = "tirx_kernels_rmsnorm_fp8_build";

static tirx_status rk_finish(rk *k, tirx_kernel **out) {
  tirx_status st = tirx_kernel_build(k->b, out);
  const char *fn = (unsigned)k->kind < TIRX_ROW_OP_COUNT ? ROW_BUILD : FP8_BUILD;
  if (st == TIRX_E_LIMIT) /* a row too wide for the threads' registers and local arrays */
    tirx__error(st, "%s: width is %lld, more than a row kernel holds (%s)", fn,
                (long long)k->width, tirx_builder_error(k->b));
  else if (st != TIRX_OK)
    tirx__error(st, "%s: %s", fn, tirx_builder_error(k->b));
  tirx_builder_destroy(k->b);
  return st;
}

static tirx_status rk_close(rk *k, tirx_kernel **out) {
  tirx_team_end(k->b);
  if (k->stages > 0) {
    tirx_assign(k->b, k->it, tirx_add(k->b, k->it, I(k, 1)));
    tirx_for_end(k->b);
  } else {
    tirx_if_end(k->b);
  }
  return rk_finish(k, out);
}

static tirx_tensor *rk_local(rk *k, const char *name, tirx_dtype dt, int i) {
  return tirx_alloc_local(k->b, name, dt, TIRX_DIMS(1, k->extent[i]), k->layout[i]);
}

static tile rk_new(rk *k, const char *name) {
  tile t = {{NULL}};
  for (int i = 0; i < k->np; i++) t.t[i] = rk_local(k, name, TIRX_F32, i);
  return t;
}

static tirx_region *rk_gregion(rk *k, tirx_tensor *x, tirx_expr *row, int64_t col0, int i) {
  return tirx_region_new(k->b, x, TIRX_EXPRS(row, tirx_int(k->b, col0 + k->begin[i])),
                         (int64_t[]){1, k->extent[i]});
}

/* Row `row` of x from column col0, in f32 registers. */
/* Row `row` of x from column col0, in registers of x's dtype (cfg: the cache hint). */
static tile rk_load_raw(rk *k, const char *name, tirx_tensor *x, tirx_expr *row, int64_t col0,
                        const tirx_config *cfg) {
  tile t = {{NULL}};
  for (int i = 0; i < k->np; i++) {
    t.t[i] = rk_local(k, name, k->dt, i);
    tirx_copy(k->b, tirx_whole(k->b, t.t[i]), rk_gregion(k, x, row, col0, i), cfg);
  }
  return t;
}

/* The tile in f32 (itself for f32). */
static tile rk_widen(rk *k, const tile *h) {
  if (k->dt == TIRX_F32) return *h;
  tile t = {{NULL}};
  for (int i = 0; i < k->np; i++) {
    t.t[i] = rk_local(k, "xf", TIRX_F32, i);
    tirx_cast_region(k->b, tirx_whole(k->b, t.t[i]), tirx_whole(k->b, h->t[i]), &k->pw);
  }
  return t;
}

/* Row `row` of x from column col0, in f32 registers (streamed: read once). */
static tile rk_load(rk *k, tirx_tensor *x, tirx_expr *row, int64_t col0) {
  tile h = k->stages > 0 ? rk_load_staged(k, x) : rk_load_raw(k, "xh", x, row, col0, &k->ld);
  return rk_widen(k, &h);
}

/* A weight row (row 0 of w), cached; with TIRX_ROW_VARIANT_WEIGHTS_EARLY loaded by rk_weights_early
 * before the reduction (*early) and only widened here. */
static tile rk_weights(rk *k, tirx_tensor *w, const tile *early) {
  if (early && early->t[0]) return rk_widen(k, early);
  for (int j = 0; k->wsmem && j < 2; j++)
    if (k->wt[j] == w) { /* row j of the shared weight rows (rk_open_staged) */
      tile h = rk_load_raw(k, "wh", k->wrows, I(k, j), 0, NULL);
      return rk_widen(k, &h);
    }
  tile h = rk_load_raw(k, "xh", w, tirx_int(k->b, 0), 0, &k->wld);
  return rk_widen(k, &h);
}

static tile rk_weights_early(rk *k, tirx_tensor *w) {
  tile none = {{NULL}};
  if (!(k->o->variant & TIRX_ROW_VARIANT_WEIGHTS_EARLY) || !w) return none;
  return rk_load_raw(k, "xh", w, tirx_int(k->b, 0), 0, &k->wld);
}

static void rk_store(rk *k, tirx_tensor *out, const tile *t) {
  for (int i = 0; i < k->np; i++) {
    tirx_tensor *h = t->t[i];
    if (k->dt != TIRX_F32) {
      h = rk_local(k, "yh", k->dt, i);
      tirx_cast_region(k->b, tirx_whole(k->b, h), tirx_whole(k->b, t->t[i]), &k->pw);
    }
    tirx_copy(k->b, rk_gregion(k, out, k->row, 0, i), tirx_whole(k->b, h), &k->st);
  }
}

/* d = op(a, y) with y a tile (yt) or an f32 scalar (ys). */
static void rk_bin(rk *k, const tile *d, tirx_op op, const tile *a, const tile *yt,
                   tirx_expr *ys) {
  for (int i = 0; i < k->np; i++)
    tirx_binary(k->b, tirx_whole(k->b, d->t[i]), op, tirx_whole(k->b, a->t[i]),
                yt ? tirx_whole(k->b, yt->t[i]) : tirx_broadcast(k->b, ys), &k->pw);
}

static void rk_un(rk *k, const tile *d, tirx_op op, const tile *a) {
  for (int i = 0; i < k->np; i++)
    tirx_unary(k->b, tirx_whole(k->b, d->t[i]), op, tirx_whole(k->b, a->t[i]), &k->pw);
}

/* The row's reduction (sum, sumsq, max), in every thread of the team. */
static tirx_expr *rk_reduce(rk *k, const tile *t, tirx_op op) {
  tirx_builder *b = k->b;
  tirx_tensor *s = tirx_alloc_local(b, "red", TIRX_F32, TIRX_DIMS(1, 1), NULL);
  for (int i = 0; i < k->np; i++)
    tirx_reduce(b, tirx_whole(b, s), tirx_whole(b, t->t[i]), op, 1u << 1, i > 0, NULL);
  return tirx_let(b, "r", tirx_load(b, s, TIRX_EXPRS(tirx_int(b, 0), tirx_int(b, 0))));
}

/* Row sum and sum of squares in one reduction (one barrier pair per piece): per piece a
 * stacked [2, extent] tile, row 0 the values and row 1 their squares, whose kept dim lies on
 * registers ((2,...):(regs@reg,...)); the copies fold away in registers. */
static void rk_moments(rk *k, const tile *t, tirx_expr **sum, tirx_expr **sumsq) {
  tirx_builder *b = k->b;
  tirx_tensor *s = tirx_alloc_local(b, "mom", TIRX_F32, TIRX_DIMS(2, 1), NULL);
  for (int i = 0; i < k->np; i++) {
    char text[256];
    snprintf(text, sizeof text, "((2),(%s)):((%lld@reg),(%s))", k->shape[i],
             (long long)k->regs[i], k->strides[i]);
    const tirx_layout *l =
        k->shape[i][0] ? tirx_layout_parse(tirx_builder_arena(b), text) : NULL;
    tirx_tensor *x2 = tirx_alloc_local(b, "x2", TIRX_F32, TIRX_DIMS(2, k->extent[i]), l);
    tirx_region *row[2];
    for (int j = 0; j < 2; j++)
      row[j] = tirx_region_new(b, x2, TIRX_EXPRS(tirx_int(b, j), tirx_int(b, 0)),
                               (int64_t[]){1, k->extent[i]});
    tirx_unary(b, row[0], TIRX_OP_COPY, tirx_whole(b, t->t[i]), &k->pw);
    tirx_binary(b, row[1], TIRX_OP_MUL, tirx_whole(b, t->t[i]), tirx_whole(b, t->t[i]), &k->pw);
    tirx_reduce(b, tirx_whole(b, s), tirx_whole(b, x2), TIRX_OP_SUM, 1u << 1, i > 0, NULL);
  }
  *sum = tirx_let(b, "s1", tirx_load(b, s, TIRX_EXPRS(tirx_int(b, 0), tirx_int(b, 0))));
  *sumsq = tirx_let(b, "s2", tirx_load(b, s, TIRX_EXPRS(tirx_int(b, 1), tirx_int(b, 0))));
}

static tirx_expr *f32(rk *k, double v) { return tirx_float(k->b, v, TIRX_F32); }

/* t *= rsqrt(sumsq(t) / W + eps) * w; with eps NULL only t *= w, the row's rsqrt left to the
 * caller. Returns the mean square sumsq(t) / W, taken before t changes. */
static tirx_expr *rk_rmsnorm(rk *k, const tile *t, tirx_tensor *w, tirx_expr *eps) {
  tirx_builder *b = k->b;
  tile we = rk_weights_early(k, w);
  tirx_expr *ms = tirx_div(b, rk_reduce(k, t, TIRX_OP_SUMSQ), f32(k, (double)k->width));
  if (eps)
    rk_bin(k, t, TIRX_OP_MUL, t, NULL, tirx_let(b, "rs", tirx_rsqrt(b, tirx_add(b, ms, eps))));
  tile wt = rk_weights(k, w, &we);
  rk_bin(k, t, TIRX_OP_MUL, t, &wt, NULL);
  return ms;
}

static tirx_status build_rmsnorm(rk *k, bool add, tirx_kernel **kout) {
  tirx_builder *b = k->b;
  tirx_tensor *x = rk_param(k, "x", k->rows, k->width);
  tirx_tensor *res = add ? rk_param(k, "res", k->rows, k->width) : NULL;
  tirx_tensor *w = rk_param(k, "w", tirx_int(b, 1), k->width);
  tirx_tensor *out = rk_param(k, "out", k->rows, k->width);
  tirx_tensor *res_out = add ? rk_param(k, "res_out", k->rows, k->width) : NULL;
  tirx_expr *eps = tirx_param_scalar(b, "eps", TIRX_F32);
  k->wt[0] = w;
  rk_open(k, x);
  tile t = rk_load(k, x, k->row, 0);
  if (add) {
    tile r = rk_load(k, res, k->row, 0);
    rk_bin(k, &t, TIRX_OP_ADD, &t, &r, NULL);
    rk_store(k, res_out, &t);
  }
  rk_rmsnorm(k, &t, w, eps);
  rk_store(k, out, &t);
  return rk_close(k, kout);
}

static tirx_status build_layernorm(rk *k, tirx_kernel **kout) {
  tirx_builder *b = k->b;
  tirx_tensor *x = rk_param(k, "x", k->rows, k->width);
  tirx_tensor *w = rk_param(k, "w", tirx_int(b, 1), k->width);
  tirx_tensor *bias = rk_param(k, "bias", tirx_int(b, 1), k->width);
  tirx_tensor *out = rk_param(k, "out", k->rows, k->width);
  tirx_expr *eps = tirx_param_scalar(b, "eps", TIRX_F32);
  k->wt[0] = w, k->wt[1] = bias;
  k->want_first = true; /* staged: rk_load_staged reads x[row, 0] for k0 below */
  rk_open(k, x);
  tile t = rk_load(k, x, k->row, 0);
  /* One reduction of sum and sum of squares of the values shifted by the row's first element
   * k0 (shifted data: E[d^2] - E[d]^2 with d = x - k0 cancels little when k0 is a sample of
   * the row, and a constant row gives exactly 0), then y = d * rs - mean_d * rs. */
  tirx_expr *k0 = k->stages > 0 ? k->first
                                 : tirx_let(b, "k0", tirx_cast(b, tirx_load(b, x, TIRX_EXPRS(k->row, tirx_int(b, 0))),
                                                               TIRX_F32));
  rk_bin(k, &t, TIRX_OP_SUB, &t, NULL, k0);
  tile we = rk_weights_early(k, w), be = rk_weights_early(k, bias);
  tirx_expr *s1, *s2, *inv_w = f32(k, 1.0 / (double)k->width);
  rk_moments(k, &t, &s1, &s2);
  tirx_expr *mean = tirx_let(b, "mean_d", tirx_mul(b, s1, inv_w));
  tirx_expr *var = tirx_max(b, tirx_sub(b, tirx_mul(b, s2, inv_w), tirx_mul(b, mean, mean)),
                            f32(k, 0.0));
  tirx_expr *rs = tirx_let(b, "rs", tirx_rsqrt(b, tirx_add(b, var, eps)));
  tirx_expr *shift = tirx_let(b, "shift", tirx_neg(b, tirx_mul(b, mean, rs)));
  for (int i = 0; i < k->np; i++)
    tirx_ternary(b, tirx_whole(b, t.t[i]), TIRX_OP_FMA, tirx_whole(b, t.t[i]),
                 tirx_broadcast(b, rs), tirx_broadcast(b, shift), &k->pw);
  tile wt = rk_weights(k, w, &we);
  rk_bin(k, &t, TIRX_OP_MUL, &t, &wt, NULL);
  tile bt = rk_weights(k, bias, &be);
  rk_bin(k, &t, TIRX_OP_ADD, &t, &bt, NULL);
  rk_store(k, out, &t);
  return rk_close(k, kout);
}

static tirx_status build_softmax(rk *k, tirx_kernel **kout) {
  tirx_builder *b = k->b;
  tirx_tensor *x = rk_param(k, "x", k->rows, k->width);
  tirx_tensor *out = rk_param(k, "out", k->rows, k->width);
  rk_open(k, x);
  tile t = rk_load(k, x, k->row, 0);
  tirx_expr *m = tirx_let(b, "m", rk_reduce(k, &t, TIRX_OP_MAX));
  /* exp(x - m) as exp2(x log2e - m log2e): one FMA and the MUFU.EX2 of exp2f per element
   * (expf's range reduction is several instructions and registers more per element). */
  const double log2e = 1.4426950408889634;
  tirx_expr *mb = tirx_let(b, "mb", tirx_neg(b, tirx_mul(b, m, f32(k, log2e))));
  for (int i = 0; i < k->np; i++)
    tirx_ternary(b, tirx_whole(b, t.t[i]), TIRX_OP_FMA, tirx_whole(b, t.t[i]),
                 tirx_broadcast(b, f32(k, log2e)), tirx_broadcast(b, mb), &k->pw);
  rk_un(k, &t, TIRX_OP_EXP2, &t);
  tirx_expr *s = rk_reduce(k, &t, TIRX_OP_SUM);
  rk_bin(k, &t, TIRX_OP_MUL, &t, NULL, tirx_let(b, "inv", tirx_div(b, f32(k, 1.0), s)));
  rk_store(k, out, &t);
  return rk_close(k, kout);
}

/* out[row, 0] = sum or max of the row, written by the team's first thread. */
static tirx_status build_rowreduce(rk *k, tirx_op op, tirx_kernel **kout) {
  tirx_builder *b = k->b;
  tirx_tensor *x = rk_param(k, "x", k->rows, k->width);
  tirx_tensor *out = tirx_param_tensor(b, "out", TIRX_F32, TIRX_EXPRS(k->rows, tirx_int(b, 1)),
                                       NULL);
  rk_open(k, x);
  tile t = rk_load(k, x, k->row, 0);
  tirx_expr *r = rk_reduce(k, &t, op);
  tirx_expr *rank = k->cta ? tirx_thread_linear(b) : tirx_lane_id(b);
  tirx_if_begin(b, tirx_eq(b, rank, tirx_int(b, 0)));
  tirx_store(b, out, TIRX_EXPRS(k->row, tirx_int(b, 0)), r);
  tirx_if_end(b);
  return rk_close(k, kout);
}

/* The math of the two elementwise ops on f32 tiles, shared by both forms: g = silu(g) * u,
 * t = t * sigmoid(a t) + c. */
static void silu_mul_math(rk *k, const tile *g, const tile *u) {
  rk_un(k, g, TIRX_OP_SILU, g);
  rk_bin(k, g, TIRX_OP_MUL, g, u, NULL);
}

static void chain_math(rk *k, const tile *t, tirx_expr *a, tirx_expr *c) {
  tile s = rk_new(k, "s");
  rk_bin(k, &s, TIRX_OP_MUL, t, NULL, a);
  rk_un(k, &s, TIRX_OP_SIGMOID, &s);
  rk_bin(k, t, TIRX_OP_MUL, t, &s, NULL);
  rk_bin(k, t, TIRX_OP_ADD, t, NULL, c);
}

static tirx_status build_silu_mul(rk *k, tirx_kernel **kout) {
  tirx_tensor *x = rk_param(k, "x", k->rows, 2 * k->width);
  tirx_tensor *out = rk_param(k, "out", k->rows, k->width);
  rk_open(k, x);
  tile g = rk_load(k, x, k->row, 0), u = rk_load(k, x, k->row, k->width);
  silu_mul_math(k, &g, &u);
  rk_store(k, out, &g);
  return rk_close(k, kout);
}

static tirx_status build_chain(rk *k, tirx_kernel **kout) {
  tirx_tensor *x = rk_param(k, "x", k->rows, k->width);
  tirx_tensor *out = rk_param(k, "out", k->rows, k->width);
  tirx_expr *a = tirx_param_scalar(k->b, "a", TIRX_F32), *c = tirx_param_scalar(k->b, "c", TIRX_F32);
  rk_open(k, x);
  tile t = rk_load(k, x, k->row, 0);
  chain_math(k, &t, a, c);
  rk_store(k, out, &t);
  return rk_close(k, kout);
}

/* ---- the elementwise form of silu_mul and chain ----
 *
 * Nothing in these two ops needs a CTA per row: a grid of about sms x EW_SM_THREADS / T CTAs
 * of T threads (a persistent grid, its CTAs resident at once: __launch_bounds__(T, ctas))
 * strides over units, each unit g consecutive elements moved as one vector. chain's tensors
 * are dense, so they are flattened: element e of the [rows, W] tensor is x[0, e] (a region of
 * row 0 whose columns run on into the next rows), units of g = 16 bytes whatever W is, and the
 * N % g elements at the end (W not a multiple of g) one at a time. silu_mul's two halves are W
 * apart in each row, so its unit is the largest power of two of elements up to 16 bytes that
 * divides W (a unit never crosses a row or a half; x[r, c] and x[r, W + c] then start on
 * g-element boundaries): unit u of the output is element u g of out, in row r = u / (W / g),
 * and its gate is flattened element 2 W r + (u g - W r) = u g + W r of x. Every region is one
 * of row 0 of the flattened tensor, so the lowering sees the alignment of its flat start.
 *
 * An iteration of a CTA moves a block of T x U units: unit blk T U + s T + tid is thread tid's
 * slot s (s < U, so that a warp's slots are consecutive vectors), all U loads of an input
 * issued before any use (U: EW_SLOT_BYTES of each input a thread has in flight, in at most
 * EW_MAX_SLOTS units). The full
 * blocks need no masks; the last, partial block is done once, by the CTA whose turn it is,
 * with every slot loaded (past the end: the last unit again) and only the slots inside stored.
 * The threads work as a team of one (TIRX_TEAM_THREAD): each slot is a tirx_copy of a [1, g]
 * region into its place in the thread's [1, U g] register tile, and the math is the per-row
 * form's on that tile. */
enum {
  EW_THREADS = 256,      /* threads a CTA, unless opts->threads */
  EW_SM_THREADS = 1024,  /* threads resident per SM the grid assumes (64 registers a thread) */
  EW_SLOT_BYTES = 64,    /* bytes of each input a thread has in flight per iteration */
  /* at most this many slots: silu_mul's narrower units (odd W) keep fewer bytes in flight, as
   * 16 or 32 slots (each with its row, its 64-bit addresses live across the math) spilled
   * 28-1252 bytes of registers under the 64-register bound (ptxas, sm_90a); 8 spill none */
  EW_MAX_SLOTS = 8
};

static bool ew_op(tirx_row_op kind) {
  return kind == TIRX_ROW_OP_SILU_MUL || kind == TIRX_ROW_OP_CHAIN;
}

/* Elements of a unit (above). */
static int64_t ew_unit(tirx_row_op kind, tirx_dtype dt, int64_t width) {
  int64_t g = 16 / tirx_dtype_size(dt);
  if (kind == TIRX_ROW_OP_SILU_MUL)
    while (g > 1 && width % g) g /= 2;
  return g;
}

/* Whether (options, kind) builds the elementwise form: only where the variant
 * bits force it. Measured on the H200 (PERF-NOTES, session 12: bench/membound with
 * TIRX_BENCH_ROW_FORM=both, bf16), it was slower than the per-row kernels at every measured
 * shape: silu_mul 0.90-0.93x and chain 0.92-0.95x at 16384 x 8192, 16384 x 5000 and 4096 x 32768
 * (0.85-0.87 of a copy against the per-row kernels' 0.90-0.96), so the per-row form stays the
 * default. */
static bool row_elementwise(const opts *o, tirx_row_op kind) {
  if (!ew_op(kind) || (o->variant & TIRX_ROW_VARIANT_PER_ROW)) return false;
  return (o->variant & TIRX_ROW_VARIANT_ELEMENTWISE) != 0;
}

static int64_t ew_threads(const opts *o) { return o->threads ? o->threads : EW_THREADS; }

/* CTAs per SM of the grid, each resident (the kernel's __launch_bounds__ floor). */
static int64_t ew_ctas(const opts *o) {
  int64_t n = o->min_blocks ? o->min_blocks : EW_SM_THREADS / ew_threads(o);
  return n < 1 ? 1 : n;
}

/* Slots a thread: EW_SLOT_BYTES of each input in units of g elements, 1 to EW_MAX_SLOTS. */
static int64_t ew_slots(tirx_dtype dt, int64_t g) {
  int64_t u = EW_SLOT_BYTES / (g * tirx_dtype_size(dt));
  return u < 1 ? 1 : u > EW_MAX_SLOTS ? EW_MAX_SLOTS : u;
}

typedef struct ew {
  rk *k;
  tirx_tensor *x, *out;
  tirx_expr *a, *c; /* chain's scalars */
  bool silu;
  int64_t g, T, U, nvr; /* nvr: silu_mul's units a row, W / g */
  tirx_expr *nu, *tid;  /* units in all; the thread's index (both i64) */
} ew;

/* Where unit u (i64) is, as flattened offsets (the column of row 0): *o in out (u g), *xo in x
 * (silu_mul: its row r = u / (W / g) of x's 2W lies r W further on, u g + r W; chain: u g). */
static void ew_place(const ew *e, tirx_expr *u, tirx_expr **o, tirx_expr **xo) {
  tirx_builder *b = e->k->b;
  *o = tirx_mul(b, u, I(e->k, e->g));
  *xo = e->silu ? tirx_add(b, *o, tirx_mul(b, tirx_div(b, u, I(e->k, e->nvr)), I(e->k, e->k->width)))
                : *o;
}

/* The places of slots s < n of the full block whose slot 0 is unit u0 (u0 - tid a multiple of
 * T U). silu_mul divides by W / g once, u0 = r0 (W / g) + q0, and finds slot s's row in 32-bit
 * arithmetic from there: r0 + (q0 + s T) / (W / g), with q0 + s T < W / g + U T < 2^32. */
static void ew_places(const ew *e, tirx_expr *u0, int64_t n, tirx_expr **o, tirx_expr **xo) {
  rk *k = e->k;
  tirx_builder *b = k->b;
  tirx_expr *r0 = NULL, *q0 = NULL, *nv = NULL;
  if (e->silu) {
    r0 = tirx_let(b, "r0", tirx_div(b, u0, I(k, e->nvr)));
    q0 = tirx_let(b, "q0", tirx_cast(b, tirx_sub(b, u0, tirx_mul(b, r0, I(k, e->nvr))), TIRX_U32));
    nv = tirx_int_typed(b, e->nvr, TIRX_U32);
  }
  for (int64_t s = 0; s < n; s++) {
    o[s] = tirx_mul(b, tirx_add(b, u0, I(k, s * e->T)), I(k, e->g));
    if (!e->silu) {
      xo[s] = o[s];
      continue;
    }
    tirx_expr *q = s ? tirx_add(b, q0, tirx_int_typed(b, s * e->T, TIRX_U32)) : q0;
    tirx_expr *r = s ? tirx_add(b, r0, tirx_cast(b, tirx_div(b, q, nv), TIRX_I64)) : r0;
    xo[s] = tirx_add(b, o[s], tirx_mul(b, r, I(k, k->width)));
  }
}

/* One pass over n slots of g elements at flattened offsets o[s] of out and xo[s] of x (silu_mul's
 * second half W further on): the inputs' slots loaded (every load before any use), the math, the
 * slots stored where keep[s] (keep NULL: all). */
static void ew_pass(ew *e, int64_t n, int64_t g, tirx_expr *const *o, tirx_expr *const *xo,
                    tirx_expr *const *keep) {
  rk *k = e->k;
  tirx_builder *b = k->b;
  k->np = 1, k->begin[0] = 0, k->extent[0] = n * g, k->layout[0] = NULL;
  int nin = e->silu ? 2 : 1;
  tile h[2];
  for (int i = 0; i < nin; i++) {
    h[i] = (tile){{rk_local(k, i ? "uh" : "xh", k->dt, 0)}};
    for (int64_t s = 0; s < n; s++)
      tirx_copy(b, tirx_region_new(b, h[i].t[0], TIRX_EXPRS(I(k, 0), I(k, s * g)), (int64_t[]){1, g}),
                tirx_region_new(b, e->x, TIRX_EXPRS(I(k, 0), i ? tirx_add(b, xo[s], I(k, k->width)) : xo[s]),
                                (int64_t[]){1, g}),
                &k->ld);
  }
  tile t = rk_widen(k, &h[0]);
  if (e->silu) {
    tile u = rk_widen(k, &h[1]);
    silu_mul_math(k, &t, &u);
  } else {
    chain_math(k, &t, e->a, e->c);
  }
  tirx_tensor *y = t.t[0];
  if (k->dt != TIRX_F32) {
    y = rk_local(k, "yh", k->dt, 0);
    tirx_cast_region(b, tirx_whole(b, y), tirx_whole(b, t.t[0]), &k->pw);
  }
  for (int64_t s = 0; s < n; s++) {
    if (keep) tirx_if_begin(b, keep[s]);
    tirx_copy(b, tirx_region_new(b, e->out, TIRX_EXPRS(I(k, 0), o[s]), (int64_t[]){1, g}),
              tirx_region_new(b, y, TIRX_EXPRS(I(k, 0), I(k, s * g)), (int64_t[]){1, g}), &k->st);
    if (keep) tirx_if_end(b);
  }
}

static tirx_status build_elementwise(rk *k, tirx_kernel **kout) {
  tirx_builder *b = k->b;
  const opts *op = k->o;
  ew e = {.k = k, .silu = k->kind == TIRX_ROW_OP_SILU_MUL, .T = ew_threads(op)};
  e.g = ew_unit(k->kind, k->dt, k->width);
  e.U = ew_slots(k->dt, e.g);
  e.nvr = k->width / e.g;
  e.x = rk_param(k, "x", k->rows, (e.silu ? 2 : 1) * k->width);
  e.out = rk_param(k, "out", k->rows, k->width);
  if (!e.silu)
    e.a = tirx_param_scalar(b, "a", TIRX_F32), e.c = tirx_param_scalar(b, "c", TIRX_F32);
  int64_t ctas = ew_ctas(op), TU = e.T * e.U;
  tirx_set_block(b, (int)e.T, 1, 1);
  tirx_set_min_blocks(b, (int)ctas);
  /* N: the output's elements; the grid covers them (at least one CTA) up to sms x ctas */
  tirx_expr *n_host = tirx_mul(b, tirx_cast(b, k->rows, TIRX_I64), I(k, k->width));
  tirx_set_grid(b, tirx_min(b, tirx_ceildiv(b, n_host, I(k, TU * e.g)), I(k, (int64_t)op->sms * ctas)),
                NULL, NULL);
  tirx_team_begin(b, TIRX_TEAM_THREAD);
  tirx_expr *N = tirx_let(b, "n", n_host);
  e.nu = tirx_let(b, "nu", tirx_div(b, N, I(k, e.g)));
  e.tid = tirx_let(b, "tid", tirx_cast(b, tirx_thread_linear(b), TIRX_I64));
  tirx_expr *full = tirx_let(b, "full", tirx_div(b, e.nu, I(k, TU)));
  tirx_expr *grid = tirx_let(b, "grid", tirx_cast(b, tirx_grid_dim(b, 0), TIRX_I64));
  tirx_expr *cta = tirx_let(b, "cta", tirx_cast(b, tirx_block_idx(b, 0), TIRX_I64));
  tirx_expr *o[EW_MAX_SLOTS], *xo[EW_MAX_SLOTS], *keep[EW_MAX_SLOTS];
  /* the full blocks */
  tirx_expr *blk = tirx_for_begin(b, "blk", cta, full, grid, TIRX_LOOP_SERIAL);
  ew_places(&e, tirx_let(b, "u0", tirx_add(b, tirx_mul(b, blk, I(k, TU)), e.tid)), e.U, o, xo);
  ew_pass(&e, e.U, e.g, o, xo, NULL);
  tirx_for_end(b);
  /* the partial block, by the CTA whose turn it is: its slots past the end load the last unit */
  tirx_if_begin(b, tirx_and(b, tirx_lt(b, tirx_mul(b, full, I(k, TU)), e.nu),
                            tirx_eq(b, cta, tirx_mod(b, full, grid))));
  tirx_expr *last = tirx_let(b, "last", tirx_sub(b, e.nu, I(k, 1)));
  for (int64_t s = 0; s < e.U; s++) {
    tirx_expr *u = tirx_let(b, "u", tirx_add(b, tirx_mul(b, full, I(k, TU)), tirx_add(b, e.tid, I(k, s * e.T))));
    keep[s] = tirx_let(b, "keep", tirx_lt(b, u, e.nu));
    ew_place(&e, tirx_min(b, u, last), &o[s], &xo[s]);
  }
  ew_pass(&e, e.U, e.g, o, xo, keep);
  tirx_if_end(b);
  /* chain where W is not a multiple of g: the N % g elements after the last unit, one a thread
   * of the last CTA */
  if (!e.silu && k->width % e.g) {
    tirx_expr *el = tirx_add(b, tirx_mul(b, e.nu, I(k, e.g)), e.tid);
    tirx_if_begin(b, tirx_and(b, tirx_eq(b, cta, tirx_sub(b, grid, I(k, 1))), tirx_lt(b, el, N)));
    ew_pass(&e, 1, 1, &el, &el, NULL);
    tirx_if_end(b);
  }
  tirx_team_end(b);
  return rk_finish(k, kout);
}

/* ---- RMSNorm with an FP8 (e4m3) output and a per-row scale ---- */

/* The e4m3 stores: a native statement of one, four or eight consecutive f32 values converted
 * to e4m3 (cvt.rn.satfinite: round to nearest even, saturated to +-448, NaN kept) and stored as
 * bytes at an element of a u8 tensor. The helper is emitted only in kernels that use it. */
typedef struct e4m3_payload {
  tirx__elem dst;
  tirx_expr *v[8];
} e4m3_payload;

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Woverlength-strings"
static const tirx__prelude_frag e4m3_frag = {.order = 950, .when = 0, .text =
    "/* f32 -> fp8 e4m3 (rmsnorm_fp8): cvt.rn.satfinite.e4m3x2.f32 rounds to nearest even and\n"
    " * saturates to +-448 (NaN stays NaN); a pair packs lo in the low byte. sm_89. */\n"
    "#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 890\n"
    "#error \"the e4m3 conversion (cvt.rn.satfinite.e4m3x2.f32) needs sm_89 or newer\"\n"
    "#endif\n"
    "__device__ __forceinline__ unsigned short tirx_e4m3x2(float lo, float hi) {\n"
    "  unsigned short r;\n"
    "  asm(\"cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;\" : \"=h\"(r) : \"f\"(hi), \"f\"(lo));\n"
    "  return r;\n"
    "}\n"
    "__device__ __forceinline__ void tirx_st_e4m3x1(void *p, float a) {\n"
    "  *(unsigned char *)p = (unsigned char)tirx_e4m3x2(a, 0.0f);\n"
    "}\n"
    "/* four bytes at p (4-byte aligned) */\n"
    "__device__ __forceinline__ void tirx_st_e4m3x4(void *p, float a, float b, float c, float d) {\n"
    "  *(unsigned *)p = (unsigned)tirx_e4m3x2(a, b) | ((unsigned)tirx_e4m3x2(c, d) << 16);\n"
    "}\n"
    "/* eight bytes at p (8-byte aligned): one 8-byte store of two packed words */\n"
    "__device__ __forceinline__ void tirx_st_e4m3x8(void *p, float a, float b, float c, float d,\n"
    "                                               float e, float f, float g, float h) {\n"
    "  uint2 v;\n"
    "  v.x = (unsigned)tirx_e4m3x2(a, b) | ((unsigned)tirx_e4m3x2(c, d) << 16);\n"
    "  v.y = (unsigned)tirx_e4m3x2(e, f) | ((unsigned)tirx_e4m3x2(g, h) << 16);\n"
    "  *(uint2 *)p = v;\n"
    "}\n"};
#pragma GCC diagnostic pop

static const tirx__prelude_frag *const e4m3_frags[] = {&e4m3_frag, NULL};

static const tirx__native_op nv_st_e4m3x1 = {
    .name = "st_e4m3", .helper = "tirx_st_e4m3x1", .size = sizeof(e4m3_payload),
    .ops = {TIRX__ELEM(e4m3_payload, dst), TIRX__EXPR(e4m3_payload, v[0])},
    .print_fmt = "$n $0 <- $1", .emit_fmt = "$h($0, $1);", .prelude = e4m3_frags};
static const tirx__native_op nv_st_e4m3x4 = {
    .name = "st_e4m3x4", .helper = "tirx_st_e4m3x4", .size = sizeof(e4m3_payload),
    .ops = {TIRX__ELEM(e4m3_payload, dst), TIRX__EXPR(e4m3_payload, v[0]),
            TIRX__EXPR(e4m3_payload, v[1]), TIRX__EXPR(e4m3_payload, v[2]),
            TIRX__EXPR(e4m3_payload, v[3])},
    .print_fmt = "$n $0 <- $1, $2, $3, $4", .emit_fmt = "$h($0, $1, $2, $3, $4);",
    .prelude = e4m3_frags};

static const tirx__native_op nv_st_e4m3x8 = {
    .name = "st_e4m3x8", .helper = "tirx_st_e4m3x8", .size = sizeof(e4m3_payload),
    .ops = {TIRX__ELEM(e4m3_payload, dst), TIRX__EXPR(e4m3_payload, v[0]),
            TIRX__EXPR(e4m3_payload, v[1]), TIRX__EXPR(e4m3_payload, v[2]),
            TIRX__EXPR(e4m3_payload, v[3]), TIRX__EXPR(e4m3_payload, v[4]),
            TIRX__EXPR(e4m3_payload, v[5]), TIRX__EXPR(e4m3_payload, v[6]),
            TIRX__EXPR(e4m3_payload, v[7])},
    .print_fmt = "$n $0 <- $1, $2, $3, $4, $5, $6, $7, $8",
    .emit_fmt = "$h($0, $1, $2, $3, $4, $5, $6, $7, $8);", .prelude = e4m3_frags};

/* out[row, col .. col + n) = e4m3(v[0..n)), n 1, 4 or 8 (then col a multiple of n and the row
 * pitch too; v loads of the thread's registers). */
static void st_e4m3(rk *k, tirx_tensor *out, tirx_expr *col, int n, tirx_expr *const *v) {
  static const char fn[] = "tirx_kernels_rmsnorm_fp8_build";
  tirx_builder *b = k->b;
  tirx_expr **ix = tirx__b_index_list(b, fn, out, 2, (tirx_expr *[]){k->row, col});
  if (!ix || b->status != TIRX_OK) return;
  const tirx__native_op *op = n == 8 ? &nv_st_e4m3x8 : n == 4 ? &nv_st_e4m3x4 : &nv_st_e4m3x1;
  tirx__stmt *s = tirx__b_native(b, fn, op);
  if (!s) return;
  e4m3_payload *p = s->native.p;
  p->dst.tensor = out;
  p->dst.index = ix;
  out->written = true; /* a non-const pointer */
  for (int i = 0; i < n; i++) p->v[i] = v[i];
}

/* Element idx of piece i's register tile (the thread's own: its thread digit is 0 in idx, and
 * a local tensor's address drops thread axes), in f32. */
static tirx_expr *reg(rk *k, const tile *t, int i, int64_t idx) {
  return tirx_load(k->b, t->t[i], TIRX_EXPRS(I(k, 0), I(k, idx)));
}

/* The row `row` of out (u8 holding e4m3) from the f32 tile t, piece by piece as rk_pieces laid
 * it out (a warp per row, or a CTA per row, staged or not: then k->row is the row loop's
 * variable; never a cluster): each thread stores the elements it holds, eight (one 8-byte
 * store) or four at a time where the row and its vectors allow. */
static void rk_store_e4m3(rk *k, tirx_tensor *out, const tile *t) {
  tirx_builder *b = k->b;
  int64_t vec = 16 / tirx_dtype_size(k->dt), T = k->T, chunk = T * vec;
  int64_t n = k->cols / chunk, rest = k->cols - n * chunk;
  int64_t q = k->cta ? rest / vec : rest / T, r = rest - q * (k->cta ? vec : T);
  /* stores of g bytes stay g-byte aligned: the row pitch and every vector's start (a multiple
   * of vec) are multiples of g */
  int g = k->width % 8 == 0 && vec % 8 == 0 ? 8 : k->width % 4 == 0 && vec % 4 == 0 ? 4 : 1;
  tirx_expr *tid = tirx_let(b, "qt", k->cta ? tirx_thread_linear(b) : tirx_lane_id(b));
  int i = 0;
  if (n) { /* (n,T,V):(V@reg,1@tid,1@reg): column c * chunk + tid * V + v */
    bool partial = k->cta && T % 32; /* threads past T hold nothing */
    if (partial) tirx_if_begin(b, tirx_lt(b, tid, I(k, T)));
    tirx_expr *base = tirx_let(b, "qc", tirx_mul(b, tid, I(k, vec)));
    for (int64_t c = 0; c < n; c++)
      for (int64_t v = 0; v < vec; v += g) {
        tirx_expr *vals[8];
        for (int j = 0; j < g; j++) vals[j] = reg(k, t, i, c * chunk + v + j);
        st_e4m3(k, out, tirx_add(b, base, I(k, c * chunk + v)), g, vals);
      }
    if (partial) tirx_if_end(b);
    i++;
  }
  if (q) {
    int64_t begin = n * chunk;
    if (k->cta) { /* (q,V):(1@tid,1@reg) on the first q threads: column begin + tid * V + v */
      tirx_if_begin(b, tirx_lt(b, tid, I(k, q)));
      tirx_expr *base = tirx_let(b, "qv", tirx_add(b, tirx_mul(b, tid, I(k, vec)), I(k, begin)));
      for (int64_t v = 0; v < vec; v += g) {
        tirx_expr *vals[8];
        for (int j = 0; j < g; j++) vals[j] = reg(k, t, i, v + j);
        st_e4m3(k, out, tirx_add(b, base, I(k, v)), g, vals);
      }
      tirx_if_end(b);
    } else { /* (q,32):(1@reg,1@laneid): column begin + a * 32 + lane */
      for (int64_t a = 0; a < q; a++) {
        tirx_expr *v = reg(k, t, i, a * T);
        st_e4m3(k, out, tirx_add(b, tid, I(k, begin + a * T)), 1, &v);
      }
    }
    i++;
  }
  if (r) {
    int64_t begin = k->width - r;
    if (k->cta) { /* (r):(1@tid): one element on each of the first r threads */
      tirx_if_begin(b, tirx_lt(b, tid, I(k, r)));
      tirx_expr *v = reg(k, t, i, 0);
      st_e4m3(k, out, tirx_add(b, tid, I(k, begin)), 1, &v);
      tirx_if_end(b);
    } else { /* every lane holds all r: lane 0 stores them */
      tirx_if_begin(b, tirx_eq(b, tid, I(k, 0)));
      for (int64_t j = 0; j < r; j++) {
        tirx_expr *v = reg(k, t, i, j);
        st_e4m3(k, out, I(k, begin + j), 1, &v);
      }
      tirx_if_end(b);
    }
  }
}

/* y = rmsnorm(h) * w with h = x (+ res, stored to res_out); scale[row] = max|y| / 448 (f32);
 * out = e4m3(y * (448 / max|y|)), all zeros with scale 0 for a row of zeros. */
static tirx_status build_rmsnorm_fp8(rk *k, bool add, tirx_kernel **kout) {
  tirx_builder *b = k->b;
  tirx_tensor *x = rk_param(k, "x", k->rows, k->width);
  tirx_tensor *res = add ? rk_param(k, "res", k->rows, k->width) : NULL;
  tirx_tensor *w = rk_param(k, "w", tirx_int(b, 1), k->width);
  tirx_tensor *out = tirx_param_tensor(b, "out", TIRX_U8, TIRX_EXPRS(k->rows, I(k, k->width)), NULL);
  tirx_tensor *res_out = add ? rk_param(k, "res_out", k->rows, k->width) : NULL;
  tirx_tensor *scale = tirx_param_tensor(b, "scale", TIRX_F32, TIRX_EXPRS(k->rows, I(k, 1)), NULL);
  tirx_expr *eps = tirx_param_scalar(b, "eps", TIRX_F32);
  k->wt[0] = w;
  rk_open(k, x);
  tile t = rk_load(k, x, k->row, 0);
  if (add) {
    tile r = rk_load(k, res, k->row, 0);
    rk_bin(k, &t, TIRX_OP_ADD, &t, &r, NULL);
    rk_store(k, res_out, &t);
  }
  /* rs = rsqrt(mean(h^2) + eps) > 0 is one number for the row, so max|h * rs * w| =
   * rs * max|h * w|: the max reduction does not wait on rsqrt, and h * w is scaled once,
   * by rs * 448 / amax = 448 / max|h * w|, instead of by rs and then by 448 / amax. */
  tirx_expr *ms = rk_rmsnorm(k, &t, w, NULL);
  tile a = rk_new(k, "ay");
  rk_un(k, &a, TIRX_OP_ABS, &t);
  tirx_expr *mx = tirx_let(b, "mx", rk_reduce(k, &a, TIRX_OP_MAX));
  tirx_expr *rs = tirx_let(b, "rs", tirx_rsqrt(b, tirx_add(b, ms, eps)));
  tirx_expr *sc = tirx_let(b, "sc", tirx_div(b, tirx_mul(b, mx, rs), f32(k, 448.0)));
  tirx_expr *inv = tirx_let(b, "inv", tirx_select(b, tirx_gt(b, mx, f32(k, 0.0)),
                                                   tirx_div(b, f32(k, 448.0), mx), f32(k, 0.0)));
  rk_bin(k, &t, TIRX_OP_MUL, &t, NULL, inv);
  rk_store_e4m3(k, out, &t);
  tirx_expr *rank = k->cta ? tirx_thread_linear(b) : tirx_lane_id(b);
  tirx_if_begin(b, tirx_eq(b, rank, tirx_int(b, 0)));
  tirx_store(b, scale, TIRX_EXPRS(k->row, tirx_int(b, 0)), sc);
  tirx_if_end(b);
  return rk_close(k, kout);
}

static const char *const NAMES[TIRX_ROW_OP_COUNT] = {
    "rmsnorm", "layernorm", "softmax", "add_rmsnorm", "row_sum", "row_max", "silu_mul", "chain"};

const char *tirx_kernels_row_name(tirx_row_op op) {
  return (unsigned)op < TIRX_ROW_OP_COUNT ? NAMES[op] : NULL;
}

/* The threads of a CTA of kind's kernel (rk_open, build_elementwise's tirx_set_block). */
static int64_t row_block_threads(const opts *o, tirx_row_op kind, tirx_dtype dt, int64_t width) {
  if (row_elementwise(o, kind)) return ew_threads(o);
  if (width <= TIRX_ROW_WARP_MAX_WIDTH) return 32 * TIRX_ROW_WARPS;
  int ncta = row_cluster(o, kind, dt, width);
  int64_t cols = width / ncta;
  int64_t T = ncta > 1 ? row_threads(o, dt, cols) : kind_threads(o, kind, dt, cols);
  return (T + 31) / 32 * 32;
}

/* opts->min_blocks CTAs of the kernel's size must fit on one SM (2048 threads), or the build
 * fails naming tirx_set_min_blocks, a call the caller never made. */
static tirx_status check_min_blocks(const char *fn, const opts *o, tirx_row_op kind,
                                    tirx_dtype dt, int64_t width) {
  int64_t T = row_block_threads(o, kind, dt, width);
  if (!o->min_blocks || o->min_blocks * T <= 2048)
    return TIRX_OK;
  return tirx__error(TIRX_E_INVALID_ARG, "%s: opts->min_blocks is %d with CTAs of %lld threads "
                     "(%s), expected min_blocks x threads at most 2048, the threads one SM holds",
                     fn, o->min_blocks, (long long)T,
                     o->threads ? "opts->threads" : "the plan's threads for this width");
}

/* The request checked into *o (its defaults filled in): op's options and width, and
 * opts->min_blocks against the threads of kind's kernel (op itself, or an FP8 kind, whose
 * options are rmsnorm's). */
static tirx_status check_request(const char *fn, tirx_row_op op, int kind,
                                 const tirx_row_options *in, tirx_dtype dtype, int64_t width,
                                 opts *o) {
  tirx_row_options copy;
  if (tirx__ext_in(fn, "opts", &tirx__ext_row_options, in, &copy) != TIRX_OK)
    return TIRX_E_INVALID_ARG;
  in = &copy;
  if ((unsigned)op >= TIRX_ROW_OP_COUNT)
    return tirx__error(TIRX_E_INVALID_ARG, "%s: op is %d, expected a tirx_row_op (0 to %d)", fn,
                       (int)op, TIRX_ROW_OP_COUNT - 1);
  if (dtype != TIRX_F32 && dtype != TIRX_F16 && dtype != TIRX_BF16)
    return tirx__error(TIRX_E_INVALID_ARG, "%s: dtype is %s, expected f32, f16 or bf16", fn,
                       tirx_dtype_name(dtype) ? tirx_dtype_name(dtype) : "invalid");
  if (width < 1 || width > INT32_MAX)
    return tirx__error(TIRX_E_INVALID_ARG, "%s: width is %lld, expected 1 to 2^31 - 1", fn,
                       (long long)width);
  if (in->threads != 0 &&
      (in->threads < 64 || in->threads > 1024 || (in->threads & (in->threads - 1))))
    return tirx__error(TIRX_E_INVALID_ARG, "%s: opts->threads is %d, expected 0 or a power of "
                       "two in 64..1024", fn, in->threads);
  if (in->variant & ~(TIRX_ROW_VARIANT_WEIGHTS_STREAM | TIRX_ROW_VARIANT_WEIGHTS_EARLY | TIRX_ROW_VARIANT_STAGED |
                      TIRX_ROW_VARIANT_UNSTAGED | TIRX_ROW_VARIANT_WEIGHTS_GLOBAL |
                      TIRX_ROW_VARIANT_PER_ROW | TIRX_ROW_VARIANT_ELEMENTWISE))
    return tirx__error(TIRX_E_INVALID_ARG, "%s: opts->variant is %d, expected TIRX_ROW_VARIANT_* "
                       "bits (0 to 127)", fn, in->variant);
  if ((in->variant & TIRX_ROW_VARIANT_PER_ROW) && (in->variant & TIRX_ROW_VARIANT_ELEMENTWISE))
    return tirx__error(TIRX_E_INVALID_ARG, "%s: opts->variant is %d: TIRX_ROW_VARIANT_PER_ROW and "
                       "TIRX_ROW_VARIANT_ELEMENTWISE exclude each other", fn, in->variant);
  if (in->cluster != 0 && in->cluster != 1 && in->cluster != 2 && in->cluster != 4)
    return tirx__error(TIRX_E_INVALID_ARG, "%s: opts->cluster is %d, expected 0, 1, 2 or 4", fn,
                       in->cluster);
  if (in->stages < 0 || in->stages > 4)
    return tirx__error(TIRX_E_INVALID_ARG, "%s: opts->stages is %d, expected 0 to 4", fn,
                       in->stages);
  if (in->min_blocks < 0 || in->min_blocks > 32)
    return tirx__error(TIRX_E_INVALID_ARG, "%s: opts->min_blocks is %d, expected 0 to 32", fn,
                       in->min_blocks);
  if (in->sms < 0 || in->sms > 1024)
    return tirx__error(TIRX_E_INVALID_ARG, "%s: opts->sms is %d, expected 0 (132) to 1024", fn,
                       in->sms);
  *o = *in;
  o->scalar = in->scalar != 0;
  if (!o->sms)
    o->sms = 132;
  return check_min_blocks(fn, o, (tirx_row_op)kind, dtype, width);
}

tirx_status tirx_kernels_row_plan(tirx_row_op op, const tirx_row_options *opts_in,
                                  tirx_dtype dtype, int64_t width, tirx_row_plan *out) {
  static const char fn[] = "tirx_kernels_row_plan";
  if (!out)
    return tirx__error(TIRX_E_NULL_ARG, "%s: out is NULL", fn);
  size_t bytes;
  if (tirx__ext_out(fn, "out", &tirx__ext_row_plan, out, &bytes) != TIRX_OK)
    return TIRX_E_INVALID_ARG;
  opts o;
  tirx_status st = check_request(fn, op, op, opts_in, dtype, width, &o);
  if (st != TIRX_OK)
    return st;
  int ncta = row_cluster(&o, op, dtype, width);
  int64_t cols = width / ncta;
  tirx_row_plan p = {.size = sizeof p, .cluster = ncta};
  p.threads = ncta > 1 ? row_threads(&o, dtype, cols) : kind_threads(&o, op, dtype, cols);
  p.stages = width > TIRX_ROW_WARP_MAX_WIDTH && !o.scalar ? row_stages(&o, op, dtype, width) : 0;
  if (row_elementwise(&o, op))
    p.threads = (int)ew_threads(&o), p.elementwise = 1;
  tirx__ext_write(out, &p, bytes);
  return TIRX_OK;
}

static tirx_status row_build(const opts *o, tirx_row_op kind, tirx_dtype dtype, int64_t width,
                             tirx_kernel **out) {
  rk k;
  rk_init(&k, o, kind, dtype, width);
  switch (kind) {
  case TIRX_ROW_OP_RMSNORM: return build_rmsnorm(&k, false, out);
  case TIRX_ROW_OP_ADD_RMSNORM: return build_rmsnorm(&k, true, out);
  case TIRX_ROW_OP_LAYERNORM: return build_layernorm(&k, out);
  case TIRX_ROW_OP_SOFTMAX: return build_softmax(&k, out);
  case TIRX_ROW_OP_SUM: return build_rowreduce(&k, TIRX_OP_SUM, out);
  case TIRX_ROW_OP_MAX: return build_rowreduce(&k, TIRX_OP_MAX, out);
  case TIRX_ROW_OP_SILU_MUL:
    return row_elementwise(o, kind) ? build_elementwise(&k, out) : build_silu_mul(&k, out);
  case TIRX_ROW_OP_CHAIN:
    return row_elementwise(o, kind) ? build_elementwise(&k, out) : build_chain(&k, out);
  default: return build_rmsnorm_fp8(&k, (int)kind == ROW_ADD_RMSNORM_FP8, out);
  }
}

tirx_status tirx_kernels_row_build(tirx_row_op op, const tirx_row_options *opts_in,
                                   tirx_dtype dtype, int64_t width, tirx_kernel **out) {
  static const char fn[] = "tirx_kernels_row_build";
  if (!out)
    return tirx__error(TIRX_E_NULL_ARG, "%s: out is NULL", fn);
  *out = NULL;
  opts o;
  tirx_status st = check_request(fn, op, op, opts_in, dtype, width, &o);
  if (st != TIRX_OK)
    return st;
  return row_build(&o, op, dtype, width, out);
}

tirx_status tirx_kernels_rmsnorm_fp8_build(const tirx_row_options *opts_in, tirx_dtype dtype,
                                           int64_t width, bool residual, tirx_kernel **out) {
  static const char fn[] = "tirx_kernels_rmsnorm_fp8_build";
  if (!out)
    return tirx__error(TIRX_E_NULL_ARG, "%s: out is NULL", fn);
  *out = NULL;
  opts o;
  int kind = residual ? ROW_ADD_RMSNORM_FP8 : ROW_RMSNORM_FP8;
  tirx_status st = check_request(fn, TIRX_ROW_OP_RMSNORM, kind, opts_in, dtype, width, &o);
  if (st != TIRX_OK)
    return st;
  return row_build(&o, (tirx_row_op)kind, dtype, width, out);
}

/* ---- the ops ---- */

/* What decides a row kernel: every field explicit, so that the key has no padding. */
typedef struct row_key {
  int32_t op, dtype, threads, variant, cluster, stages, min_blocks, sms, scalar, pad;
  int64_t width;
} row_key;

typedef struct row_request {
  opts o;
  tirx_row_op op;
  tirx_dtype dtype;
  int64_t width;
} row_request;

static tirx_status build_for_op(const void *ctx, tirx_kernel **out) {
  const row_request *r = ctx;
  return row_build(&r->o, r->op, r->dtype, r->width, out);
}

/* Finds or builds op's kernel for (options, dtype, width) and launches it with args. */
static tirx_status row_launch(const char *fn, tirx_runtime *rt, const tirx_row_options *in,
                              tirx_row_op op, tirx_dtype dtype, int64_t width,
                              const tirx_arg *args, int nargs, void *stream) {
  row_request r = {.op = op, .dtype = dtype, .width = width};
  /* the FP8 kinds take rmsnorm's options */
  tirx_row_op checked = (unsigned)op < TIRX_ROW_OP_COUNT ? op : TIRX_ROW_OP_RMSNORM;
  tirx_status st = check_request(fn, checked, op, in, dtype, width, &r.o);
  if (st != TIRX_OK)
    return st;
  row_key key;
  memset(&key, 0, sizeof key);
  key.op = (int32_t)op, key.dtype = (int32_t)dtype, key.width = width;
  key.threads = r.o.threads, key.variant = r.o.variant, key.cluster = r.o.cluster;
  key.stages = r.o.stages, key.min_blocks = r.o.min_blocks, key.sms = r.o.sms;
  key.scalar = r.o.scalar;
  tirx_kernel *k;
  if ((st = tirx__kernels_get(&key, sizeof key, build_for_op, &r, &k)) == TIRX_E_LIMIT) {
    /* rk_finish's "<build>: width is W, more than ...": the op's caller gave W as x's shape */
    const char *msg = tirx_last_error(), *more = strstr(msg, ", more than a row kernel holds");
    return tirx__error(st, "%s: x has rows of W = %lld elements%s", fn, (long long)width,
                       more ? more : msg);
  }
  if (st != TIRX_OK)
    return tirx__error(st, "%s: %s", fn, tirx_last_error());
  st = tirx__kernels_launch(fn, rt, k, args, nargs, stream);
  tirx_kernel_release(k);
  return st;
}

/* x: [rows, cols] dense, of a row kernel's dtype (f32, f16, bf16), rows < 2^31. */
static tirx_status check_input(const char *fn, tirx_runtime *rt, const tirx_tensor_arg *x) {
  if (!rt)
    return tirx__error(TIRX_E_NULL_ARG, "%s: rt is NULL", fn);
  tirx_status st = tirx__check_tensor(fn, "x", x, 2);
  if (st != TIRX_OK)
    return st;
  if (x->dtype != TIRX_F32 && x->dtype != TIRX_F16 && x->dtype != TIRX_BF16)
    return tirx__error(TIRX_E_TYPE, "%s: x has dtype %s, expected f32, f16 or bf16", fn,
                       tirx_dtype_name(x->dtype) ? tirx_dtype_name(x->dtype) : "invalid");
  if (x->shape[0] > INT32_MAX)
    return tirx__error(TIRX_E_INVALID_ARG, "%s: x has %lld rows, expected at most 2^31 - 1", fn,
                       (long long)x->shape[0]);
  return tirx__check_dense(fn, "x", x);
}

/* The op's row width W (x's columns, silu_mul's half of them) within the kernels' 2^31 - 1, so
 * that the error names x, not the build's "width" the caller never passed. */
static tirx_status check_width(const char *fn, const tirx_tensor_arg *x, int64_t w,
                               const char *what) {
  if (w <= INT32_MAX)
    return TIRX_OK;
  return tirx__error(TIRX_E_INVALID_ARG, "%s: x has shape [%lld, %lld], expected %s with W at "
                     "most 2^31 - 1", fn, (long long)x->shape[0], (long long)x->shape[1], what);
}

/* A [rows, cols] tensor like x: dense, of dtype. */
static tirx_status check_like(const char *fn, const char *name, const tirx_tensor_arg *t,
                              tirx_dtype dtype, int64_t rows, int64_t cols, const char *what) {
  tirx_status st = tirx__check_tensor(fn, name, t, 2);
  if (st == TIRX_OK)
    st = tirx__check_shape(fn, name, t, (int64_t[]){rows, cols}, what);
  if (st == TIRX_OK)
    st = tirx__check_dense(fn, name, t);
  if (st == TIRX_OK)
    st = tirx__check_dtype(fn, name, t, dtype);
  return st;
}

static tirx_arg mat(const tirx_tensor_arg *t, tirx_dtype dt, const int64_t *shape) {
  return tirx_arg_tensor(t->data, dt, 2, shape, NULL);
}

tirx_status tirx_op_rmsnorm(tirx_runtime *rt, const tirx_row_options *opts_in,
                            const tirx_tensor_arg *x, const tirx_tensor_arg *w,
                            const tirx_tensor_arg *out, float eps, void *stream) {
  static const char fn[] = "tirx_op_rmsnorm";
  tirx_status st = check_input(fn, rt, x);
  if (st != TIRX_OK)
    return st;
  tirx_dtype dt = x->dtype;
  const int64_t R = x->shape[0], W = x->shape[1];
  if ((st = check_width(fn, x, W, "[rows, W]")) != TIRX_OK)
    return st;
  if ((st = tirx__check_row(fn, "w", w, dt, W)) != TIRX_OK ||
      (st = check_like(fn, "out", out, dt, R, W, "[rows, W]")) != TIRX_OK)
    return st;
  int64_t xs[2] = {R, W}, ws[2] = {1, W};
  tirx_arg args[5] = {tirx_arg_i32((int32_t)R), mat(x, dt, xs), mat(w, dt, ws), mat(out, dt, xs),
                      tirx_arg_f32(eps)};
  return row_launch(fn, rt, opts_in, TIRX_ROW_OP_RMSNORM, dt, W, args, 5, stream);
}

tirx_status tirx_op_layernorm(tirx_runtime *rt, const tirx_row_options *opts_in,
                              const tirx_tensor_arg *x, const tirx_tensor_arg *w,
                              const tirx_tensor_arg *bias, const tirx_tensor_arg *out, float eps,
                              void *stream) {
  static const char fn[] = "tirx_op_layernorm";
  tirx_status st = check_input(fn, rt, x);
  if (st != TIRX_OK)
    return st;
  tirx_dtype dt = x->dtype;
  const int64_t R = x->shape[0], W = x->shape[1];
  if ((st = check_width(fn, x, W, "[rows, W]")) != TIRX_OK)
    return st;
  if ((st = tirx__check_row(fn, "w", w, dt, W)) != TIRX_OK ||
      (st = tirx__check_row(fn, "bias", bias, dt, W)) != TIRX_OK ||
      (st = check_like(fn, "out", out, dt, R, W, "[rows, W]")) != TIRX_OK)
    return st;
  int64_t xs[2] = {R, W}, ws[2] = {1, W};
  tirx_arg args[6] = {tirx_arg_i32((int32_t)R), mat(x, dt, xs),   mat(w, dt, ws),
                      mat(bias, dt, ws),        mat(out, dt, xs), tirx_arg_f32(eps)};
  return row_launch(fn, rt, opts_in, TIRX_ROW_OP_LAYERNORM, dt, W, args, 6, stream);
}

tirx_status tirx_op_add_rmsnorm(tirx_runtime *rt, const tirx_row_options *opts_in,
                                const tirx_tensor_arg *x, const tirx_tensor_arg *res,
                                const tirx_tensor_arg *w, const tirx_tensor_arg *out,
                                const tirx_tensor_arg *res_out, float eps, void *stream) {
  static const char fn[] = "tirx_op_add_rmsnorm";
  tirx_status st = check_input(fn, rt, x);
  if (st != TIRX_OK)
    return st;
  tirx_dtype dt = x->dtype;
  const int64_t R = x->shape[0], W = x->shape[1];
  if ((st = check_width(fn, x, W, "[rows, W]")) != TIRX_OK)
    return st;
  if ((st = check_like(fn, "res", res, dt, R, W, "[rows, W]")) != TIRX_OK ||
      (st = tirx__check_row(fn, "w", w, dt, W)) != TIRX_OK ||
      (st = check_like(fn, "out", out, dt, R, W, "[rows, W]")) != TIRX_OK ||
      (st = check_like(fn, "res_out", res_out, dt, R, W, "[rows, W]")) != TIRX_OK)
    return st;
  int64_t xs[2] = {R, W}, ws[2] = {1, W};
  tirx_arg args[7] = {tirx_arg_i32((int32_t)R), mat(x, dt, xs),       mat(res, dt, xs),
                      mat(w, dt, ws),           mat(out, dt, xs),     mat(res_out, dt, xs),
                      tirx_arg_f32(eps)};
  return row_launch(fn, rt, opts_in, TIRX_ROW_OP_ADD_RMSNORM, dt, W, args, 7, stream);
}

/* softmax: out like x. */
tirx_status tirx_op_softmax(tirx_runtime *rt, const tirx_row_options *opts_in,
                            const tirx_tensor_arg *x, const tirx_tensor_arg *out, void *stream) {
  static const char fn[] = "tirx_op_softmax";
  tirx_status st = check_input(fn, rt, x);
  if (st != TIRX_OK)
    return st;
  tirx_dtype dt = x->dtype;
  const int64_t R = x->shape[0], W = x->shape[1];
  if ((st = check_width(fn, x, W, "[rows, W]")) != TIRX_OK)
    return st;
  if ((st = check_like(fn, "out", out, dt, R, W, "[rows, W]")) != TIRX_OK)
    return st;
  int64_t xs[2] = {R, W};
  tirx_arg args[3] = {tirx_arg_i32((int32_t)R), mat(x, dt, xs), mat(out, dt, xs)};
  return row_launch(fn, rt, opts_in, TIRX_ROW_OP_SOFTMAX, dt, W, args, 3, stream);
}

tirx_status tirx_op_silu_mul(tirx_runtime *rt, const tirx_row_options *opts_in,
                             const tirx_tensor_arg *x, const tirx_tensor_arg *out, void *stream) {
  static const char fn[] = "tirx_op_silu_mul";
  tirx_status st = check_input(fn, rt, x);
  if (st != TIRX_OK)
    return st;
  tirx_dtype dt = x->dtype;
  const int64_t R = x->shape[0], W2 = x->shape[1], W = W2 / 2;
  if (W2 % 2)
    return tirx__error(TIRX_E_INVALID_ARG, "%s: x has shape [%lld, %lld], expected [rows, 2W] "
                       "(an even number of columns)", fn, (long long)R, (long long)W2);
  if ((st = check_width(fn, x, W, "[rows, 2W]")) != TIRX_OK)
    return st;
  if ((st = check_like(fn, "out", out, dt, R, W, "[rows, W]")) != TIRX_OK)
    return st;
  int64_t xs[2] = {R, W2}, os[2] = {R, W};
  tirx_arg args[3] = {tirx_arg_i32((int32_t)R), mat(x, dt, xs), mat(out, dt, os)};
  return row_launch(fn, rt, opts_in, TIRX_ROW_OP_SILU_MUL, dt, W, args, 3, stream);
}

/* row_sum, row_max: out f32 [rows] or [rows, 1]. */
static tirx_status row_reduce(const char *fn, tirx_row_op op, tirx_runtime *rt,
                              const tirx_row_options *opts_in, const tirx_tensor_arg *x,
                              const tirx_tensor_arg *out, void *stream) {
  tirx_status st = check_input(fn, rt, x);
  if (st != TIRX_OK)
    return st;
  tirx_dtype dt = x->dtype;
  const int64_t R = x->shape[0], W = x->shape[1];
  if ((st = check_width(fn, x, W, "[rows, W]")) != TIRX_OK)
    return st;
  if (out && out->rank != 1 && out->rank != 2)
    return tirx__error(TIRX_E_INVALID_ARG, "%s: out has rank %d, expected 1 ([rows]) or 2 "
                       "([rows, 1])", fn, out->rank);
  if ((st = tirx__check_tensor(fn, "out", out, out ? out->rank : 1)) != TIRX_OK ||
      (st = tirx__check_shape(fn, "out", out, (int64_t[]){R, 1},
                              out->rank == 2 ? "[rows, 1]" : "[rows]")) != TIRX_OK ||
      (st = tirx__check_dense(fn, "out", out)) != TIRX_OK ||
      (st = tirx__check_dtype(fn, "out", out, TIRX_F32)) != TIRX_OK)
    return st;
  int64_t xs[2] = {R, W}, os[2] = {R, 1};
  tirx_arg args[3] = {tirx_arg_i32((int32_t)R), mat(x, dt, xs), mat(out, TIRX_F32, os)};
  return row_launch(fn, rt, opts_in, op, dt, W, args, 3, stream);
}

tirx_status tirx_op_row_sum(tirx_runtime *rt, const tirx_row_options *opts_in,
                            const tirx_tensor_arg *x, const tirx_tensor_arg *out, void *stream) {
  return row_reduce("tirx_op_row_sum", TIRX_ROW_OP_SUM, rt, opts_in, x, out, stream);
}

tirx_status tirx_op_row_max(tirx_runtime *rt, const tirx_row_options *opts_in,
                            const tirx_tensor_arg *x, const tirx_tensor_arg *out, void *stream) {
  return row_reduce("tirx_op_row_max", TIRX_ROW_OP_MAX, rt, opts_in, x, out, stream);
}

/* rmsnorm_fp8, add_rmsnorm_fp8: out e4m3 [rows, W], scale f32 [rows] or [rows, 1]. */
static tirx_status norm_fp8(const char *fn, tirx_runtime *rt, const tirx_row_options *opts_in,
                            const tirx_tensor_arg *x, const tirx_tensor_arg *res,
                            const tirx_tensor_arg *w, const tirx_tensor_arg *out,
                            const tirx_tensor_arg *res_out, const tirx_tensor_arg *scale,
                            float eps, bool add, void *stream) {
  tirx_status st = check_input(fn, rt, x);
  if (st != TIRX_OK)
    return st;
  tirx_dtype dt = x->dtype;
  const int64_t R = x->shape[0], W = x->shape[1];
  if ((st = check_width(fn, x, W, "[rows, W]")) != TIRX_OK)
    return st;
  if (add && (st = check_like(fn, "res", res, dt, R, W, "[rows, W]")) != TIRX_OK)
    return st;
  if ((st = tirx__check_row(fn, "w", w, dt, W)) != TIRX_OK ||
      (st = check_like(fn, "out", out, TIRX_FP8_E4M3, R, W, "[rows, W]")) != TIRX_OK)
    return st;
  if (add && (st = check_like(fn, "res_out", res_out, dt, R, W, "[rows, W]")) != TIRX_OK)
    return st;
  if (scale && scale->rank != 1 && scale->rank != 2)
    return tirx__error(TIRX_E_INVALID_ARG, "%s: scale has rank %d, expected 1 ([rows]) or 2 "
                       "([rows, 1])", fn, scale->rank);
  if ((st = tirx__check_tensor(fn, "scale", scale, scale ? scale->rank : 1)) != TIRX_OK ||
      (st = tirx__check_shape(fn, "scale", scale, (int64_t[]){R, 1},
                              scale->rank == 2 ? "[rows, 1]" : "[rows]")) != TIRX_OK ||
      (st = tirx__check_dense(fn, "scale", scale)) != TIRX_OK ||
      (st = tirx__check_dtype(fn, "scale", scale, TIRX_F32)) != TIRX_OK)
    return st;
  int64_t xs[2] = {R, W}, ws[2] = {1, W}, ss[2] = {R, 1};
  tirx_arg args[8];
  int n = 0;
  args[n++] = tirx_arg_i32((int32_t)R);
  args[n++] = mat(x, dt, xs);
  if (add) args[n++] = mat(res, dt, xs);
  args[n++] = mat(w, dt, ws);
  args[n++] = mat(out, TIRX_U8, xs); /* the kernel stores e4m3 bits as bytes */
  if (add) args[n++] = mat(res_out, dt, xs);
  args[n++] = mat(scale, TIRX_F32, ss);
  args[n++] = tirx_arg_f32(eps);
  int kind = add ? ROW_ADD_RMSNORM_FP8 : ROW_RMSNORM_FP8;
  return row_launch(fn, rt, opts_in, (tirx_row_op)kind, dt, W, args, n, stream);
}

tirx_status tirx_op_rmsnorm_fp8(tirx_runtime *rt, const tirx_row_options *opts_in,
                                const tirx_tensor_arg *x, const tirx_tensor_arg *w,
                                const tirx_tensor_arg *out, const tirx_tensor_arg *scale,
                                float eps, void *stream) {
  return norm_fp8("tirx_op_rmsnorm_fp8", rt, opts_in, x, NULL, w, out, NULL, scale, eps, false,
                  stream);
}

tirx_status tirx_op_add_rmsnorm_fp8(tirx_runtime *rt, const tirx_row_options *opts_in,
                                    const tirx_tensor_arg *x, const tirx_tensor_arg *res,
                                    const tirx_tensor_arg *w, const tirx_tensor_arg *out,
                                    const tirx_tensor_arg *res_out,
                                    const tirx_tensor_arg *scale, float eps, void *stream) {
  return norm_fp8("tirx_op_add_rmsnorm_fp8", rt, opts_in, x, res, w, out, res_out, scale, eps,
                  true, stream);
}
