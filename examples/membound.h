/*
 * Memory-bound row kernels written with tile primitives (copy, cast, pointwise, reduce),
 * shared by the CPU tests (dispatch reports, NVRTC), the GPU tests (float64 references) and
 * bench/membound. Each builder function is specialised on the row width at build time.
 *
 * Mapping. Rows of at most MEMBOUND_WARP_MAX_WIDTH elements: one warp per row,
 * MEMBOUND_RMSNORM_WARPS rows per CTA (team warp, reduce.shuffle). Wider rows: one CTA per
 * row of T = 64..1024 threads (team CTA, reduce.smem), T the largest power of two that
 * leaves each thread at least two 16-byte vectors. A row is split into at most three register
 * tiles: (n,T,V):(V@reg,1@tid,1@reg) (V = 16 bytes of dtype: copy.vec), then the rest: CTA,
 * (q,V):(1@tid,1@reg) (whole vectors on the first q threads) and fewer than V elements as
 * (r):(1@tid); warp, (q,32):(1@reg,1@laneid) and fewer than 32 elements held by every lane
 * (reduce.shuffle needs all lanes). Values stay in registers between the reductions; arithmetic is
 * f32. LayerNorm reduces sum(d) and sum(d^2) of d = x - x[row, 0] together (a [2, n] tile,
 * one barrier pair per tile; the shift keeps E[d^2] - E[d]^2 from cancelling: a constant row
 * gives 0 exactly) and takes var = max(E[d^2] - E[d]^2, 0). scalar: force the scalar families on copy,
 * cast and pointwise (the forced fallback).
 *
 * Launch parameters, in order (all tensors of dtype unless said; widths W):
 *   RMSNORM      rows (i32), x [rows,W], w [1,W], out [rows,W], eps (f32)
 *   LAYERNORM    rows, x, w [1,W], bias [1,W], out, eps
 *   SOFTMAX      rows, x, out
 *   ADD_RMSNORM  rows, x, res [rows,W], w [1,W], out, res_out [rows,W], eps
 *                (h = x + res; res_out = h; out = rmsnorm(h) * w)
 *   ROW_SUM      rows, x, out (f32 [rows,1])
 *   ROW_MAX      rows, x, out (f32 [rows,1])
 *   SILU_MUL     rows, x [rows,2W], out [rows,W]   (out = silu(x[:, :W]) * x[:, W:])
 *   CHAIN        rows, x, out, a (f32), c (f32)    (out = x * sigmoid(a x) + c)
 * Block and grid are set by the kernel (from rows). Returns a new kernel, or NULL with the
 * builder's error in err.
 */
#ifndef TIRX_EXAMPLES_MEMBOUND_H
#define TIRX_EXAMPLES_MEMBOUND_H

#include <tirx.h>

enum {
  MEMBOUND_RMSNORM_WARPS = 4,      /* rows per CTA in warp-per-row kernels */
  MEMBOUND_WARP_MAX_WIDTH = 1024,  /* wider rows get a CTA each */
  MEMBOUND_CLUSTER_MIN_WIDTH = 16384, /* wider rows may get a cluster of CTAs (below) */
  MEMBOUND_STAGE_MIN_BYTES = 32768,   /* rows of at least this many bytes are staged (below) */
  MEMBOUND_STAGE_SMEM = 200 * 1024    /* shared memory for the ring of staged rows */
};

typedef enum membound_kind {
  MEMBOUND_RMSNORM = 0,
  MEMBOUND_LAYERNORM,
  MEMBOUND_SOFTMAX,
  MEMBOUND_ADD_RMSNORM,
  MEMBOUND_ROW_SUM,
  MEMBOUND_ROW_MAX,
  MEMBOUND_SILU_MUL,
  MEMBOUND_CHAIN,
  MEMBOUND_KIND_COUNT
} membound_kind;

/* "rmsnorm", "layernorm", ...; NULL out of range. */
const char *membound_name(membound_kind kind);

/* Bytes a launch over rows x width must move at least (inputs read once, outputs written
 * once; the weight rows are not counted). */
double membound_bytes(membound_kind kind, tirx_dtype dtype, int64_t rows, int64_t width);

/* Threads per row of the CTA-per-row kernels built afterwards (64..1024, a power of two; 0
 * restores the heuristic above). For benchmark sweeps; not thread-safe. Returns false (and
 * changes nothing) for another value. */
bool membound_set_threads(int threads);

/* Variants of the weight-row loads for benchmark sweeps (0: the default, weights read with
 * ld.global.nc after the reduction). Not thread-safe; false (nothing changed) for unknown bits. */
enum {
  MEMBOUND_V_WEIGHTS_STREAM = 1, /* weights read with .cs like the rows (streamed) */
  MEMBOUND_V_WEIGHTS_EARLY = 2,  /* weights loaded before the reduction, widened after it */
  MEMBOUND_V_STAGED = 4,         /* staged rows (below) also under MEMBOUND_STAGE_MIN_BYTES */
  MEMBOUND_V_UNSTAGED = 8,       /* never staged rows */
  MEMBOUND_V_WEIGHTS_GLOBAL = 16 /* staged rows read the weight rows from global memory */
};
bool membound_set_variant(int flags);

/* The threads per row the heuristic (or the override) picks for width and dtype: when the row
 * is a whole number of 16-byte vectors, T threads of v = 2..8 vectors each with T * v the
 * row exactly (the CTA rounds T up to whole warps; the idle lanes hold nothing), v nearest 4
 * among the choices that leave the fewest idle lanes, else a power of two (the three-tile
 * split above). rmsnorm, add_rmsnorm and softmax take v nearest 2 instead (8192 bf16: 512
 * threads of 2 vectors; measured 0.95 of a copy against 0.92 with 256 x 4, while layernorm and
 * silu_mul were slower so); clusters per row use this function's choice. */
int membound_threads(tirx_dtype dtype, int64_t width);

/* CTAs per row of the kernels built afterwards where membound_cluster allows a cluster: 0 (the
 * default) or 1, one CTA per row; 2 or 4, a cluster of that many CTAs. Opt-in, for benchmark
 * sweeps and tests: clusters of 2 measured slower than one CTA per row on the H200 at
 * 4096x32768 (rmsnorm 0.71 vs 0.89 of a copy; docs/PERF-NOTES.md). Not thread-safe. Returns
 * false (and changes nothing) for another value. */
bool membound_set_cluster(int ctas);

/* The CTAs per row of kind's kernel over rows of width: c = membound_set_cluster's choice
 * when c > 1, kind is rmsnorm, add_rmsnorm, layernorm or softmax, the row is wider than
 * MEMBOUND_CLUSTER_MIN_WIDTH and its c parts are whole vectors split evenly over
 * membound_threads(dtype, width / c) threads (32768 bf16: 2 x 512 threads x 4 vectors, or
 * 4 x 512 x 2; 20000: 2 x 250 x 5, or 4 x 125 x 5); else 1. With c > 1, each CTA holds its part
 * as one register tile and the reductions combine through distributed shared memory
 * (reduce.dsmem). */
int membound_cluster(membound_kind kind, tirx_dtype dtype, int64_t width);

/* Staged rows. rmsnorm, layernorm and softmax over rows of at least MEMBOUND_STAGE_MIN_BYTES
 * (one CTA per row, no cluster; a row of whole 16-byte units that is one TMA box of at most
 * 256 x 256 elements, its inner part whole 16-byte units) run as a persistent grid of
 * min(rows, c x SMs) CTAs, c the CTAs an SM holds (about 56 registers a thread besides its
 * row values; two stages each; 1 at 1024 threads). A CTA first reads the weight rows into
 * shared memory once (unless MEMBOUND_V_WEIGHTS_GLOBAL), then reads its rows through a ring
 * of S = min(2, what is left of MEMBOUND_STAGE_SMEM / c in rows) shared-memory rows filled by
 * TMA (copy_async.tma, one mbarrier per stage), S rows ahead of the row it computes, so the
 * loads of the next rows overlap the reductions and stores of this one (32768 bf16: layernorm
 * 1 stage beside w and bias, rmsnorm 2, softmax 2; measured in docs/PERF-NOTES.md). Returns
 * S, or 0 for the one-row-per-CTA kernels. */
int membound_stages(membound_kind kind, tirx_dtype dtype, int64_t width);
/* The stages of the staged kernels built afterwards (1..4; 0 restores the heuristic). Staged
 * rows are forced on where legal, as by MEMBOUND_V_STAGED. For benchmark sweeps; not
 * thread-safe; false (nothing changed) for another value. */
bool membound_set_stages(int stages);
/* An occupancy floor for the kernels built afterwards: tirx_set_min_blocks(n) (0, the default:
 * none; 1..32). For benchmark sweeps; not thread-safe; false (nothing changed) otherwise. */
bool membound_set_min_blocks(int n);
/* The SMs the persistent (staged) kernels built afterwards size their grid for (default 132,
 * an H200; 1..1024, false otherwise). Not thread-safe. */
bool membound_set_sms(int sms);
tirx_kernel *membound_build(membound_kind kind, tirx_dtype dtype, int64_t width, bool scalar,
                            char *err, size_t cap);

/* membound_build(MEMBOUND_RMSNORM, ...). */
tirx_kernel *membound_rmsnorm(tirx_dtype dtype, int64_t width, bool scalar, char *err,
                              size_t cap);

#endif
