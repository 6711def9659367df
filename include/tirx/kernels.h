/*
 * tirx/kernels.h: the kernel library, built with the public builder.
 *
 *   the GEMM            C = epilogue(A B^T [+ bias]), f16/bf16, f32 accumulation (Hopper wgmma;
 *                       "mma" and "scalar" families for testing)
 *   row kernels         rmsnorm, layernorm, add_rmsnorm, softmax, silu_mul, row sum/max, and
 *                       a pointwise chain (benchmarks); rmsnorm and add_rmsnorm with an FP8
 *                       (e4m3) output and per-row scales
 *   rotary embedding    RoPE in place on q and k (neox and gptj styles, partial rotary dim)
 *   attention           prefill attention (FlashAttention-3 structure), causal, GQA, varlen
 *   decode attention    attention of a few new tokens over a paged KV cache (split-KV), and
 *                       the append of a step's K and V into the pages (reshape_and_cache)
 *   tensor parallelism  a row-parallel linear layer: per-rank GEMM on K shards, then the
 *                       reduce-scatter chosen from the output's layouts (tirx/dist.h)
 *
 * Each kernel has two entry points:
 *
 *   tirx_kernels_<name>_build(opts, <shape>, &kernel)  builds a new kernel for the options and
 *       the shape-dependent choices (dtype, row width, tile shape); the caller releases it
 *       with tirx_kernel_release(). Pure: no device, no runtime, no global state.
 *   tirx_op_<name>(rt, opts, <tensors>, stream)  checks the tensors, finds the kernel for
 *       (options, dtype, width or tile shape) in a process-wide table (built once, under a
 *       lock, on first use; one build per distinct key even when many threads ask at once)
 *       and launches it with tirx_launch. Thread-safe.
 *
 * Options structs: a NULL pointer and a zeroed struct are the defaults, and every field's 0 is
 * its sane default. The options are read during the call only. Options and plan structs are
 * extensible (README.md, "ABI policy"): their first field, size, is 0 (version 1) or the
 * struct's sizeof; any other value is TIRX_E_INVALID_ARG naming the argument:
 *
 *     tirx_op_gemm: opts->size is 12, expected 0, 40 or 48 (sizeof(tirx_gemm_options))
 *
 * A plan (an output) must have its size set, or be zeroed, before the call; on return size
 * holds the bytes written.
 *
 * Errors. Every function returns a tirx_status; the calling thread's message
 * (tirx_last_error()) names the function and the argument:
 *
 *     tirx_op_gemm: b has shape [512, 64], expected [N, K] = [256, 64]
 *     tirx_op_rmsnorm: x->data 0x1008 is not aligned to 16 bytes
 *     tirx_kernels_row_build: opts->threads is 96, expected 0 or a power of two in 64..1024
 *
 * Streams. Every op takes its stream last, with tirx_launch's convention (tirx/runtime.h,
 * "Streams": a CUstream of the runtime's context, NULL the legacy default stream), and queues
 * all of its kernels on it in order (split-K's reduction and split decode's combine follow their
 * first kernel on the same stream); it returns once they are queued. On a capturing stream the
 * runtime's capture_policy applies to each of its launches: warm an op up (one call per shape)
 * before capturing it.
 *
 * An op never launches on bad input. Without a device, an op checks its input, builds (or
 * finds) the kernel and returns TIRX_E_NO_DEVICE from tirx_launch. Tensor arguments are
 * tirx_tensor_arg (tirx/types.h): a device pointer, dtype, rank, shape and strides in elements
 * (NULL strides: dense row-major). Device pointers must be 16-byte aligned (the kernels use
 * 16-byte vector moves and TMA).
 */
#ifndef TIRX_KERNELS_H
#define TIRX_KERNELS_H

#include "core.h"
#include "types.h"
#include "builder.h"
#include "runtime.h"
#include "dist.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------------------------ */
/* GEMM                                                                                        */
/* ------------------------------------------------------------------------------------------ */

/*
 * C = epilogue(A B^T [+ bias]) with A [M, K] and B [N, K] K-major (row-major, K innermost),
 * C [M, N] row-major, all of one dtype, f16 or bf16, and f32 accumulation.
 *
 * Family "wgmma" (the default, sm_90a): persistent and warp-specialised. A producer warpgroup
 * whose elected thread issues TMA loads into a ring of shared-memory stages (full/empty
 * mbarriers), one or two consumer warpgroups issuing wgmma on their rows of the tile,
 * setmaxnreg, and an epilogue that adds the bias and applies the activation on the f32
 * accumulators, casts, writes a swizzled shared tile with stmatrix and stores it with TMA.
 * The tile shape is chosen per shape (tirx_kernels_gemm_tiles). Families "mma" (mma.sync) and
 * "scalar" (FMA loops): the same answer, slower; one CTA of four warps per 64x64 tile.
 */
typedef enum tirx_epilogue {
  TIRX_EPILOGUE_NONE = 0,      /* C = A B^T */
  TIRX_EPILOGUE_BIAS = 1,      /* C = A B^T + bias */
  TIRX_EPILOGUE_BIAS_SILU = 2, /* C = silu(A B^T + bias) */
  TIRX_EPILOGUE_BIAS_GELU = 3  /* C = gelu(A B^T + bias), erf form */
} tirx_epilogue;

/*
 * The paths of family "wgmma" (tirx_kernels_gemm_plan says which one a shape takes):
 *
 *   TIRX_GEMM_PATH_AUTO   0: tirx_op_gemm takes the plan's choice for its real M, N, K and
 *                         opts->sms; tirx_kernels_gemm_build builds the wgmma kernel (its
 *                         launch parameters below), as before the paths existed.
 *   TIRX_GEMM_PATH_WGMMA  the warp-specialised wgmma kernel with the tile shape of
 *                         tirx_kernels_gemm_tiles.
 *   TIRX_GEMM_PATH_GEMV   M <= 8 (GEMV-like, bandwidth-bound): B read exactly once with
 *                         16-byte vector loads, `rows` rows of B per CTA of 256 threads
 *                         (8 warps), K split across the CTA's threads (each holds one 8-element
 *                         vector of every row per step, the M rows of A's vector in registers,
 *                         read through L1/L2), f32 accumulators, then a warp butterfly and the
 *                         8 warps' partials summed in warp order from shared memory
 *                         (deterministic: the same bits on every run), the epilogue, one store
 *                         per output. Built for one M (the kernel is specialised on it).
 *   TIRX_GEMM_PATH_WGMMA_SPLITK  M <= 65535: the wgmma kernel's tiles with K split in
 *                         `splits` ranges of whole 64-column blocks (none empty); the
 *                         persistent CTAs take (tile, split) units and write f32 partial tiles
 *                         into a workspace, then a second kernel sums the splits of each
 *                         element in split order (deterministic: the same bits on every run)
 *                         and applies the epilogue. The workspace (splits x the tiles' padded
 *                         M x N, f32; tirx_gemm_plan.workspace_bytes) is owned by the runtime:
 *                         one buffer per stream, reused by every later call on that stream
 *                         while large enough (work on a stream runs in order), a larger one
 *                         allocated otherwise (the outgrown one is kept until
 *                         tirx_runtime_destroy, which frees them all). The first split-K call
 *                         on a stream allocates (cuMemAlloc): not under stream capture.
 *                         Split-K calls of all threads are serialised from the workspace to
 *                         their second launch (one process-wide lock: the enqueueing only).
 */
typedef enum tirx_gemm_path {
  TIRX_GEMM_PATH_AUTO = 0,
  TIRX_GEMM_PATH_WGMMA = 1,
  TIRX_GEMM_PATH_GEMV = 2,
  TIRX_GEMM_PATH_WGMMA_SPLITK = 3
} tirx_gemm_path;

/* Options of the GEMM (tirx_kernels_gemm_build, _plan, _tiles, tirx_op_gemm); zeros are the
 * defaults. */
typedef struct tirx_gemm_options {
  size_t size;            /* 0 or sizeof(tirx_gemm_options) */
  tirx_epilogue epilogue; /* 0: none */
  const char *family;     /* NULL or "wgmma" (default); "mma"; "scalar" */
  int sms;                /* streaming multiprocessors to fill; 0: 132 (an H200); 1..1024 */
  /* Forces a path of family "wgmma" (0: TIRX_GEMM_PATH_AUTO, see above); another path with
   * family "mma" or "scalar" is refused, and so is TIRX_GEMM_PATH_GEMV for M > 8. */
  tirx_gemm_path path;
  int gemv_rows;          /* rows of B per CTA of the gemv path: 0 (the plan's), 1, 2 or 4 */
  /* K splits of TIRX_GEMM_PATH_WGMMA_SPLITK: 0 (the plan's) or 2..64 (fewer when K has fewer
   * 64-column blocks, so that no split is empty); must be 0 with the other paths. */
  int splits;
  /* Version 2 (set size = sizeof(tirx_gemm_options)). The wgmma paths' thread-block clusters,
   * in tiles: cluster_m x cluster_n CTAs whose tiles are neighbours along M (2 x 1: they share
   * the tile of B) or along N (1 x 2: they share the tile of A); each CTA loads its part of
   * the shared tile with a TMA multicast into every CTA of the cluster, so the L2 reads that
   * operand once for the two. Both 0: the plan's choice, which is 1 x 1 (measured on the
   * H200: clusters were faster on few shapes, slower on most; PERF-NOTES, session 8); 1 x 1:
   * no cluster; 2 x 1 or 1 x 2: asked for (1 x 2 falls back to 1 x 1 where A's tile cannot be
   * halved on 8-row boundaries: fewer than 16 rows of A). Families "mma" and "scalar" and the
   * gemv path take no cluster (0 or 1 x 1 only), and neither does sms = 1. */
  int cluster_m;
  int cluster_n;
} tirx_gemm_options;

/* The tile shape of the wgmma kernel: block_m x block_n x block_k (64), the stages of the TMA
 * ring, and the consumer warpgroups (each block_m / consumers rows). */
typedef struct tirx_gemm_tiles {
  int block_m;   /* rows of a tile */
  int block_n;   /* columns of a tile */
  int block_k;   /* the K step (64) */
  int stages;    /* stages of the TMA ring */
  int consumers; /* consumer warpgroups */
} tirx_gemm_tiles;

/*
 * The tile shape the wgmma kernel uses for an M x N x K problem: 128x256 over 3 stages while
 * that gives every SM four tiles or more; otherwise 64 rows (one consumer) for M <= 64, else
 * 128, a BLOCK_N in steps of 16 from a per-SM cost model, and as many stages as shared memory
 * holds (at most 16). Unless opts->path is TIRX_GEMM_PATH_WGMMA, two narrow cases take K
 * splits instead, which the plan chooses to fill the SMs: rows of 64 whose BLOCK_N would be 16
 * take 128 columns, and rows of 128 whose BLOCK_N would be under 48 with K >= 8192 take 64
 * columns (measured on the H200, PERF-NOTES session 13). When M < block_m, each TMA load reads
 * M rounded up to 8 rows of A. opts may be NULL (only opts->sms and opts->path are read).
 * Errors: TIRX_E_NULL_ARG (out), TIRX_E_INVALID_ARG (m, n or k < 1 or > 2^31 - 1; opts->sms
 * out of range).
 */
TIRX_API tirx_status tirx_kernels_gemm_tiles(const tirx_gemm_options *opts, int64_t m, int64_t n,
                                             int64_t k, tirx_gemm_tiles *out);

/* What tirx_op_gemm does for a shape: the path (never TIRX_GEMM_PATH_AUTO) and its name
 * ("wgmma", "wgmma_splitk", "gemv"; "mma" or "scalar" for those families), the wgmma tile
 * shape (the wgmma paths; zeros for gemv), the rows of B per CTA of the gemv path (0
 * otherwise), the K splits (1 but for split-K), the CTAs launched (split-K: its first kernel)
 * and split-K's workspace bytes (0 otherwise). */
typedef struct tirx_gemm_plan {
  size_t size;      /* in: 0 or sizeof(tirx_gemm_plan); out: bytes written */
  tirx_gemm_path path;     /* never TIRX_GEMM_PATH_AUTO */
  const char *name;        /* the path's name; static storage */
  tirx_gemm_tiles tiles;   /* the wgmma tile shape tirx_op_gemm runs (zeros for gemv) */
  int gemv_rows;           /* rows of B per CTA of the gemv path (0 otherwise) */
  int splits;              /* K splits (1 but for split-K) */
  int64_t ctas;            /* CTAs launched (split-K: its first kernel) */
  int64_t workspace_bytes; /* split-K's workspace (0 otherwise) */
  /* Version 2 (set size = sizeof(tirx_gemm_plan)): the cluster shape in tiles (see
   * tirx_gemm_options.cluster_m): 1 x 1 (none; the gemv path, families "mma" and "scalar"),
   * 2 x 1 (B shared) or 1 x 2 (A shared). ctas is then a multiple of 2. */
  int cluster_m;
  int cluster_n;
} tirx_gemm_plan;

/*
 * The plan for an M x N x K problem under opts (NULL: defaults). The cost model of
 * TIRX_GEMM_PATH_AUTO: the gemv path for M <= 2, and for M = 3, 4 where the wgmma plan would
 * split K or take a tile under 48 columns on K >= 8192 (measured: 1.05-1.52x cuBLAS at M = 1,
 * but FMA-bound and behind the wgmma decode tiles at M = 8, and at M = 4 behind them except
 * there; forced, it takes M <= 8), where the
 * wgmma kernel's 64-row tiles
 * waste 8x or more of the tensor work and, more to the point, give too few tiles to keep
 * every SM streaming B (N / block_n tiles: 0.5x cuBLAS at M = 1, N = 4096, K = 14336); its
 * rows per CTA the most of 4, 2, 1 that still gives 2 * sms CTAs or more (N >= 264 rows per
 * row of the CTA at 132 SMs). Otherwise the wgmma kernel with the tiles of
 * tirx_kernels_gemm_tiles, split-K when those tiles fill fewer than half the SMs and K has 8
 * blocks of 64 or more: as many splits as fill the SMs, each of 4 K blocks or more, at most
 * 16 (the decode tile choice is kept where it fills the SMs: gemm_pick's BLOCK_N already
 * aims at that, so on the LLaMA shapes split-K is taken for narrow N only); where it does not
 * split, the tiles (and CTAs) reported are those of opts->path TIRX_GEMM_PATH_WGMMA, which
 * tirx_op_gemm then runs (tirx_kernels_gemm_tiles' two narrow split-K cases do not apply
 * unsplit). A forced path
 * (opts->path) is reported as forced; split-K forced without opts->splits takes the model's
 * count, at least 2 where K allows. Families "mma"
 * and "scalar" report path TIRX_GEMM_PATH_WGMMA's tile shape under their own name.
 * Errors: TIRX_E_NULL_ARG (out), TIRX_E_INVALID_ARG (m, n or k < 1 or > 2^31 - 1; an option
 * out of range, named as in tirx_kernels_gemm_build's messages).
 */
TIRX_API tirx_status tirx_kernels_gemm_plan(const tirx_gemm_options *opts, int64_t m, int64_t n,
                                            int64_t k, tirx_gemm_plan *out);

/*
 * Builds the GEMM for dtype and the tile shape chosen for M x N x K (the kernel itself takes
 * any M, N, K at launch; the shape only picks the tiles). *out: a new kernel, one reference.
 *
 * Launch parameters, in order: M, N, K (i32), A [M, K], B as its (K, N) view (shape (K, N),
 * strides (1, ldb)), C [M, N], and with a bias epilogue bias [1, N] (dense). Leading dimensions
 * come from the strides and must be multiples of 16 bytes (TMA). tirx_op_gemm does all this.
 * With opts->path TIRX_GEMM_PATH_GEMV (M <= 8): the gemv kernel for exactly M rows, whose
 * parameters are N, K (i32), LDA8, LDB8 (i64: the row strides of A and B over 8, elements),
 * LDC (i64), AL, BL, CL (i64: the flat lengths (M-1)*lda + K, (N-1)*ldb + K, (M-1)*ldc + N),
 * then A, B [N, K] and C as dense 1-D tensors of those lengths, and with a bias epilogue
 * bias [1, N]; it launches ceil(N / rows) CTAs of 256 threads and no shared-memory size.
 * With TIRX_GEMM_PATH_WGMMA_SPLITK: the split-K wgmma kernel (its reduction is tirx_op_gemm's
 * second launch), whose parameters are M, N, K, A, B as above, then KBS (K blocks per split),
 * WR, WC (i32) and W [WR, WC] f32 dense: the workspace, WR = splits * ceil(M / block_m) *
 * block_m, WC = ceil(N / block_n) * block_n; no C, no bias (the epilogue is the reduction's).
 * Errors (then *out is NULL): TIRX_E_NULL_ARG (out), TIRX_E_INVALID_ARG (dtype not f16/bf16,
 * m, n or k < 1 or > 2^31 - 1, an epilogue out of the enum, an unknown family, opts->sms,
 * opts->path or opts->gemv_rows out of range, opts->splits out of 0..64 or set with another
 * path than split-K, a path with family "mma" or "scalar", the gemv path for M > 8, split-K
 * for M > 65535), and the builder's error (its status, "tirx_kernels_gemm_build: <message>").
 */
TIRX_API tirx_status tirx_kernels_gemm_build(const tirx_gemm_options *opts, tirx_dtype dtype,
                                             int64_t m, int64_t n, int64_t k, tirx_kernel **out);

/*
 * C = epilogue(A B^T [+ bias]) on stream. a: [M, K], b: [N, K], c: [M, N], all of one dtype
 * (f16 or bf16), rank 2, innermost stride 1, row strides >= the row and multiples of 16 bytes
 * (NULL strides: dense). bias: [N] or [1, N] dense, of the dtype, required by the bias
 * epilogues and NULL otherwise. M, N, K at most 2^31 - 1. Only C's M x N elements are
 * written, never the padding of its rows: where N is not a multiple of 8 (a row ends inside a
 * 16-byte piece, which a TMA store would write whole), the wgmma, mma and scalar kernels store
 * C element by element (their kernel names end in "_ragged").
 * Errors: TIRX_E_NULL_ARG (rt, a, b, c, a data pointer, or bias for a bias epilogue),
 * TIRX_E_INVALID_ARG (options as tirx_kernels_gemm_build; a rank, shape, stride or pointer
 * alignment that breaks the rules above; a bias without a bias epilogue), TIRX_E_TYPE (dtypes),
 * the build's errors, and tirx_launch's (TIRX_E_NO_DEVICE without a device), its message
 * prefixed with "tirx_op_gemm: ".
 */
TIRX_API tirx_status tirx_op_gemm(tirx_runtime *rt, const tirx_gemm_options *opts,
                                  const tirx_tensor_arg *a, const tirx_tensor_arg *b,
                                  const tirx_tensor_arg *bias, const tirx_tensor_arg *c,
                                  void *stream);

/* ------------------------------------------------------------------------------------------ */
/* Row kernels                                                                                 */
/* ------------------------------------------------------------------------------------------ */

/*
 * Memory-bound kernels over the rows of a [rows, W] tensor, specialised on W at build time;
 * dtype f32, f16 or bf16 (arithmetic in f32).
 *
 * Mapping. Rows of at most TIRX_ROW_WARP_MAX_WIDTH elements: one warp per row,
 * TIRX_ROW_WARPS rows per CTA (reduce.shuffle). Wider rows: one CTA per row of 64..1024
 * threads (reduce.smem), each thread holding whole 16-byte vectors where the row allows;
 * values stay in registers between the reductions. Rows of at least TIRX_ROW_STAGE_MIN_BYTES
 * (rmsnorm, layernorm, softmax) are staged: a persistent grid whose CTAs read their rows
 * through a TMA-filled ring of shared rows (tirx_kernels_row_plan gives the stages). On
 * request, rows wider than TIRX_ROW_CLUSTER_MIN_WIDTH get a cluster of 2 or 4 CTAs whose
 * reductions combine through distributed shared memory.
 *
 * The elementwise form of silu_mul and chain, only where TIRX_ROW_VARIANT_ELEMENTWISE asks for
 * it (measured slower than the per-row kernels on the H200: 0.90-0.95x at 16384 x 8192,
 * 16384 x 5000 and 4096 x 32768, bf16; the per-row form is the default): no CTA per row but
 * a grid of at most sms x (1024 / threads) CTAs of opts->threads (256 by default) threads, all
 * resident (__launch_bounds__(threads, 1024 / threads), or opts->min_blocks CTAs per SM),
 * striding over units of the flattened tensors: 16 bytes of elements for chain at every width
 * (its tensors are dense: element e of [rows, W] is element e of the buffer), and for silu_mul
 * the largest power of two of elements up to 16 bytes that divides W (a unit stays in its row
 * and half). Each thread moves 64 bytes of each input an iteration in 4 units of 16 bytes
 * (narrower units: 8 of them, fewer bytes), every load issued before any use; the last, partial block of units
 * is masked, and chain's last rows * W mod (16 bytes / element size) elements go one a thread.
 * Its launch parameters are the per-row form's.
 *
 * Launch parameters, in order (tensors of dtype unless said, dense; width W):
 *   RMSNORM      rows (i32), x [rows,W], w [1,W], out [rows,W], eps (f32)
 *   LAYERNORM    rows, x, w [1,W], bias [1,W], out, eps
 *   SOFTMAX      rows, x, out
 *   ADD_RMSNORM  rows, x, res [rows,W], w [1,W], out, res_out [rows,W], eps
 *                (h = x + res; res_out = h; out = rmsnorm(h) * w)
 *   SUM, MAX     rows, x, out (f32 [rows,1])
 *   SILU_MUL     rows, x [rows,2W], out [rows,W]   (out = silu(x[:, :W]) * x[:, W:])
 *   CHAIN        rows, x, out, a (f32), c (f32)    (out = x * sigmoid(a x) + c)
 * Block and grid are set by the kernel from rows.
 */
typedef enum tirx_row_op {
  TIRX_ROW_OP_RMSNORM = 0,
  TIRX_ROW_OP_LAYERNORM,
  TIRX_ROW_OP_SOFTMAX,
  TIRX_ROW_OP_ADD_RMSNORM,
  TIRX_ROW_OP_SUM,
  TIRX_ROW_OP_MAX,
  TIRX_ROW_OP_SILU_MUL,
  TIRX_ROW_OP_CHAIN,
  TIRX_ROW_OP_COUNT
} tirx_row_op;

enum {
  TIRX_ROW_WARPS = 4,                 /* rows per CTA in warp-per-row kernels */
  TIRX_ROW_WARP_MAX_WIDTH = 1024,     /* wider rows get a CTA each */
  TIRX_ROW_CLUSTER_MIN_WIDTH = 16384, /* wider rows may get a cluster of CTAs */
  TIRX_ROW_STAGE_MIN_BYTES = 32768,   /* rows of at least this many bytes are staged */
  TIRX_ROW_STAGE_SMEM = 200 * 1024    /* shared memory for the ring of staged rows */
};

/* Variants of the weight-row loads and of staging (tirx_row_options.variant, or-ed). */
enum {
  TIRX_ROW_VARIANT_WEIGHTS_STREAM = 1, /* weights read with ld.global.cs (else .nc) */
  TIRX_ROW_VARIANT_WEIGHTS_EARLY = 2,  /* weights loaded before the reduction, widened after */
  TIRX_ROW_VARIANT_STAGED = 4,         /* staged rows also under TIRX_ROW_STAGE_MIN_BYTES */
  TIRX_ROW_VARIANT_UNSTAGED = 8,       /* never staged rows */
  TIRX_ROW_VARIANT_WEIGHTS_GLOBAL = 16, /* staged rows read the weight rows from global memory */
  TIRX_ROW_VARIANT_PER_ROW = 32,        /* silu_mul, chain: a warp or CTA per row, never the
                                           elementwise form */
  TIRX_ROW_VARIANT_ELEMENTWISE = 64     /* silu_mul, chain: the elementwise form at every width */
};

/* Options of the row kernels and ops (tirx_kernels_row_*, tirx_op_rmsnorm, ...); zeros are the
 * defaults. */
typedef struct tirx_row_options {
  size_t size;    /* 0 or sizeof(tirx_row_options) */
  int threads;    /* threads per row of the CTA-per-row kernels (of a CTA of the elementwise
                     form); 0: chosen per width (below; elementwise 256); else a power of two
                     in 64..1024 */
  int variant;    /* TIRX_ROW_VARIANT_* bits; 0: weights read with ld.global.nc after the
                     reduction, staging by row size */
  int cluster;    /* CTAs per row where a cluster is allowed: 0 or 1, one; 2 or 4 */
  int stages;     /* stages of the staged kernels; 0: chosen; 1..4 (forces staging where legal) */
  int min_blocks; /* occupancy floor, tirx_set_min_blocks(n); 0: none (elementwise form:
                     1024 / threads, the CTAs per SM its grid assumes); 1..32, with
                     min_blocks x the CTA's threads at most 2048 (one SM) */
  int sms;        /* SMs the persistent grids (staged, elementwise) are sized for; 0: 132;
                     1..1024 */
  bool scalar;    /* force the scalar families on copy, cast and pointwise (tests) */
} tirx_row_options;

/* What a row kernel will be for (op, options, dtype, width): threads per row (32 for the warp
 * kernels; per CTA of the cluster), CTAs per row (1 unless a cluster), and the stages of the
 * ring of staged rows (0: one row per CTA). */
typedef struct tirx_row_plan {
  size_t size; /* in: 0 or sizeof(tirx_row_plan); out: bytes written */
  int threads; /* threads per row (32 for the warp kernels; per CTA of the cluster); for the
                  elementwise form, threads per CTA */
  int cluster; /* CTAs per row */
  int stages;  /* stages of the ring of staged rows (0: one row per CTA) */
  /* Version 2: */
  int elementwise; /* 1: the elementwise form of silu_mul and chain (below): a grid of CTAs
                      striding over the flattened elements, not a warp or CTA per row */
} tirx_row_plan;

/* "rmsnorm", "layernorm", "softmax", "add_rmsnorm", "row_sum", "row_max", "silu_mul", "chain";
 * NULL for an op out of range. A static string. */
TIRX_API const char *tirx_kernels_row_name(tirx_row_op op);

/*
 * The plan of the kernel tirx_kernels_row_build would build. Threads: for a row of whole
 * 16-byte vectors, T threads of v = 2..8 vectors each with T * v the row exactly (v nearest 2
 * for rmsnorm, add_rmsnorm and softmax, else 4; at most 1/8 of the last warp idle), else a
 * power of two leaving each thread at least two vectors. Cluster: opts->cluster when it is 2
 * or 4, op is rmsnorm, add_rmsnorm, layernorm or softmax, the row is wider than
 * TIRX_ROW_CLUSTER_MIN_WIDTH and its parts are whole vectors split evenly over the threads.
 * Stages: see above; 0 under opts->scalar. Elementwise: 1 where the elementwise form is
 * built (above); then threads is its CTA's size, cluster 1 and stages 0. A caller whose plan
 * is version 1 (size offsetof(tirx_row_plan, elementwise), or 0) gets no elementwise field.
 * Errors: TIRX_E_NULL_ARG (out), TIRX_E_INVALID_ARG (op, dtype, width < 1, an option out of
 * range, opts->variant with both TIRX_ROW_VARIANT_PER_ROW and TIRX_ROW_VARIANT_ELEMENTWISE).
 */
TIRX_API tirx_status tirx_kernels_row_plan(tirx_row_op op, const tirx_row_options *opts,
                                           tirx_dtype dtype, int64_t width, tirx_row_plan *out);

/*
 * Builds row kernel op for dtype and row width (any number of rows at launch). *out: a new
 * kernel, one reference.
 * Errors (then *out is NULL): those of tirx_kernels_row_plan, and the builder's error (its
 * status, "tirx_kernels_row_build: <message>").
 */
TIRX_API tirx_status tirx_kernels_row_build(tirx_row_op op, const tirx_row_options *opts,
                                            tirx_dtype dtype, int64_t width, tirx_kernel **out);

/*
 * The row ops. x: [rows, W] (for silu_mul [rows, 2W]), rows in 1..2^31-1, dtype f32, f16 or
 * bf16; every tensor dense (NULL strides, or the dense row-major ones), 16-byte aligned and
 * of x's dtype except the f32 outputs of row_sum/row_max. Weight rows w, bias: [W] or [1, W].
 * Outputs: out [rows, W] (row_sum/row_max: f32 [rows] or [rows, 1]), res_out [rows, W].
 * Errors: TIRX_E_NULL_ARG (rt, a tensor, a data pointer), TIRX_E_INVALID_ARG (options as
 * tirx_kernels_row_plan; a rank, shape, stride or alignment that breaks these rules),
 * TIRX_E_TYPE (a dtype), the build's errors, and tirx_launch's (TIRX_E_NO_DEVICE without a
 * device), its message prefixed with the op's name.
 */
TIRX_API tirx_status tirx_op_rmsnorm(tirx_runtime *rt, const tirx_row_options *opts,
                                     const tirx_tensor_arg *x, const tirx_tensor_arg *w,
                                     const tirx_tensor_arg *out, float eps, void *stream);
TIRX_API tirx_status tirx_op_layernorm(tirx_runtime *rt, const tirx_row_options *opts,
                                       const tirx_tensor_arg *x, const tirx_tensor_arg *w,
                                       const tirx_tensor_arg *bias, const tirx_tensor_arg *out,
                                       float eps, void *stream);
/* h = x + res; res_out = h; out = rmsnorm(h) * w. */
TIRX_API tirx_status tirx_op_add_rmsnorm(tirx_runtime *rt, const tirx_row_options *opts,
                                         const tirx_tensor_arg *x, const tirx_tensor_arg *res,
                                         const tirx_tensor_arg *w, const tirx_tensor_arg *out,
                                         const tirx_tensor_arg *res_out, float eps,
                                         void *stream);
TIRX_API tirx_status tirx_op_softmax(tirx_runtime *rt, const tirx_row_options *opts,
                                     const tirx_tensor_arg *x, const tirx_tensor_arg *out,
                                     void *stream);
/* out = silu(x[:, :W]) * x[:, W:]. */
TIRX_API tirx_status tirx_op_silu_mul(tirx_runtime *rt, const tirx_row_options *opts,
                                      const tirx_tensor_arg *x, const tirx_tensor_arg *out,
                                      void *stream);
TIRX_API tirx_status tirx_op_row_sum(tirx_runtime *rt, const tirx_row_options *opts,
                                     const tirx_tensor_arg *x, const tirx_tensor_arg *out,
                                     void *stream);
TIRX_API tirx_status tirx_op_row_max(tirx_runtime *rt, const tirx_row_options *opts,
                                     const tirx_tensor_arg *x, const tirx_tensor_arg *out,
                                     void *stream);

/*
 * RMSNorm with an FP8 output and a per-row scale (dynamic per-token quantisation, what an FP8
 * GEMM takes):
 *
 *   y = rmsnorm(h) * w          (f32, as tirx_op_rmsnorm)
 *   scale[r] = max_j |y[r, j]| / 448                          (f32)
 *   out[r, j] = e4m3(y[r, j] * (448 / max_j |y[r, j]|))       (round to nearest even,
 *                                                              saturated to +-448)
 *
 * so that out * scale ~ y. A row whose y is all zeros has scale 0 and out 0. With a residual
 * (tirx_op_add_rmsnorm_fp8) h = x + res in f32, res_out = h rounded to x's dtype, and the norm
 * is of the f32 h (as tirx_op_add_rmsnorm); without one h = x.
 * The kernel is a row kernel as above (a warp or a CTA per row, never clustered; threads per
 * row as rmsnorm's; without a residual its rows are staged where rmsnorm's would be for the
 * same options, with one never), built for (options, dtype, width, residual). The e4m3 values
 * are converted with cvt.rn.satfinite.e4m3x2.f32 (sm_89 or newer) and stored eight bytes at a
 * time where W is a multiple of 8 and x is f16 or bf16, four where W is a multiple of 4, one
 * byte otherwise.
 * Launch parameters: rows (i32), x [rows, W], [res [rows, W]], w [1, W], out (u8 [rows, W]: the
 * e4m3 bits), [res_out [rows, W]], scale (f32 [rows, 1]), eps (f32).
 * Errors of the build: those of tirx_kernels_row_build (options checked as rmsnorm's).
 */
TIRX_API tirx_status tirx_kernels_rmsnorm_fp8_build(const tirx_row_options *opts,
                                                    tirx_dtype dtype, int64_t width,
                                                    bool residual, tirx_kernel **out);

/*
 * The ops: x [rows, W] of f32, f16 or bf16; w [W] or [1, W] and res, res_out [rows, W] of x's
 * dtype; out [rows, W] of dtype TIRX_FP8_E4M3; scale f32 [rows] or [rows, 1]; all dense and
 * 16-byte aligned. Errors as the row ops above (TIRX_E_TYPE for out not fp8_e4m3 or scale not
 * f32), messages prefixed with "tirx_op_rmsnorm_fp8" / "tirx_op_add_rmsnorm_fp8".
 */
TIRX_API tirx_status tirx_op_rmsnorm_fp8(tirx_runtime *rt, const tirx_row_options *opts,
                                         const tirx_tensor_arg *x, const tirx_tensor_arg *w,
                                         const tirx_tensor_arg *out,
                                         const tirx_tensor_arg *scale, float eps, void *stream);
TIRX_API tirx_status tirx_op_add_rmsnorm_fp8(tirx_runtime *rt, const tirx_row_options *opts,
                                             const tirx_tensor_arg *x, const tirx_tensor_arg *res,
                                             const tirx_tensor_arg *w, const tirx_tensor_arg *out,
                                             const tirx_tensor_arg *res_out,
                                             const tirx_tensor_arg *scale, float eps,
                                             void *stream);

/* ------------------------------------------------------------------------------------------ */
/* Rotary position embedding                                                                   */
/* ------------------------------------------------------------------------------------------ */

/*
 * RoPE applied in place to q [T, H, D] and k [T, H_kv, D] (f16 or bf16; last dimension
 * contiguous, the other strides arguments, in elements) at the positions pos (int32 [T]),
 * with cos and sin caches [max_pos, R/2] (f32, or q's dtype; dense) for the rotary dimension
 * R <= D. For token t at p = pos[t], each head's pairs (a_i, b_i), i < R/2:
 *
 *   a_i' = a_i cos[p, i] - b_i sin[p, i],   b_i' = b_i cos[p, i] + a_i sin[p, i]
 *
 * with (a_i, b_i) = (x[i], x[i + R/2]) for TIRX_ROPE_NEOX (rotate halves) and (x[2i], x[2i+1])
 * for TIRX_ROPE_GPTJ (interleaved); elements from R to D are left untouched. Arithmetic in f32,
 * rounded once to the dtype. A token whose position lies outside [0, max_pos) is left
 * untouched (the positions are device data the op cannot check).
 */
typedef enum tirx_rope_style {
  TIRX_ROPE_NEOX = 0, /* pairs (i, i + R/2): GPT-NeoX, LLaMA (HF), vLLM's is_neox_style */
  TIRX_ROPE_GPTJ = 1  /* pairs (2i, 2i + 1): GPT-J, interleaved */
} tirx_rope_style;

/* Options of RoPE (tirx_kernels_rope_build, tirx_op_rope); zeros are the defaults. */
typedef struct tirx_rope_options {
  size_t size;           /* 0 or sizeof(tirx_rope_options) */
  tirx_rope_style style; /* 0: neox */
  int rot_dim;           /* R: 0 means D; else even, 2..D */
  /* Version 2: the token and head strides of q and of k (elements) the kernel is built for;
   * [0, 0]: any, passed at launch. The launch checks given ones against the arguments.
   * tirx_op_rope sets them itself (from q and k), over the caller's. */
  int64_t q_strides[2];
  int64_t k_strides[2];
} tirx_rope_options;

/*
 * Builds the RoPE kernel for the options, dtype (f16, bf16), the caches' dtype (f32 or dtype),
 * head dim d (1..1024), h query heads and h_kv key heads (each 1..1024; h_kv 0: no k). One CTA
 * per token. Where R/2 is a multiple of 8, a thread rotates a chunk of 8 pairs of one head
 * held in x[8c .. 8c + 8) and x[R/2 + 8c .. R/2 + 8c + 8) (neox: element e of one with element
 * e of the other, the cache's [p, 8c .. 8c + 8); gptj: adjacent elements within each, pairs
 * 4c .. 4c + 3 and R/4 + 4c .., the cache's [p, 4c .. 4c + 4) and [p, R/4 + 4c ..]), one
 * chunk per thread (the token's chunks rounded up to a warp; at most 512 threads, looping);
 * its moves of q and k are 16-byte vectors when opts gives their strides and they are
 * multiples of 8, element moves otherwise. Other R: 128 threads loop over the (head,
 * pair) items (where R/2 divides 128, each thread keeps one pair and its cos, sin over heads).
 * *out: a new kernel. Launch parameters: tokens (i32), q [tokens, h, d] (strides: opts's, or
 * hidden parameters; the last 1), k [tokens, h_kv, d] (absent when h_kv is 0), pos (i32
 * [tokens]), max_pos (i32), cos, sin [max_pos, R/2]. Errors: TIRX_E_NULL_ARG (out),
 * TIRX_E_INVALID_ARG (a dtype, d, h, h_kv, opts->style, opts->rot_dim, opts->q_strides or
 * k_strides neither [0, 0] nor positive), the builder's ("tirx_kernels_rope_build: <message>").
 */
TIRX_API tirx_status tirx_kernels_rope_build(const tirx_rope_options *opts, tirx_dtype dtype,
                                             tirx_dtype cache_dtype, int d, int h, int h_kv,
                                             tirx_kernel **out);

/*
 * RoPE on stream, in place. q: [T, H, D], k: [T, H_kv, D] or NULL (q only), of one dtype (f16,
 * bf16), innermost stride 1 (NULL strides: dense), heads not overlapping (stride[1] >= D,
 * stride[0] >= heads * stride[1]); pos: int32 [T] dense; cos, sin: [max_pos, R/2] dense, f32 or
 * q's dtype, both alike; T and max_pos at most 2^31 - 1; data 16-byte aligned. Strides of q and
 * k that are all multiples of 8 (those of extent-1 dimensions aside) are built into the kernel
 * (opts->q_strides, k_strides: a kernel per stride set, with 16-byte moves where R/2 is a
 * multiple of 8); any others are passed at launch, to one kernel with element moves.
 * Errors: TIRX_E_NULL_ARG (rt, q, pos, cos, sin, a data pointer), TIRX_E_INVALID_ARG (options
 * as tirx_kernels_rope_build; ranks, shapes and strides breaking these rules), TIRX_E_TYPE
 * (dtypes), the build's errors and tirx_launch's, prefixed with "tirx_op_rope: ".
 */
TIRX_API tirx_status tirx_op_rope(tirx_runtime *rt, const tirx_rope_options *opts,
                                  const tirx_tensor_arg *q, const tirx_tensor_arg *k,
                                  const tirx_tensor_arg *pos, const tirx_tensor_arg *cos,
                                  const tirx_tensor_arg *sin, void *stream);

/* ------------------------------------------------------------------------------------------ */
/* Tensor parallelism: a row-parallel linear layer                                             */
/* ------------------------------------------------------------------------------------------ */

/*
 * Y = X W^T with the reduction dimension K split over P ranks (Megatron's RowParallelLinear),
 * written with distributed layouts (tirx/dist.h):
 *
 *   X [M, K]  S1   (M,P,K/P):(ldx@m,1@pid,1@m)     rank r holds X[:, r*K/P : (r+1)*K/P]
 *   W [N, K]  S1   (N,P,K/P):(ldw@m,1@pid,1@m)     rank r holds W[:, r*K/P : (r+1)*K/P]
 *   Y_r [M, N]     (M,N):(N@m,1@m)+[P:1@pid], partial sum: rank r's X_r W_r^T, an addend
 *   Y [M, N]  S0   (P,M/P,N):(1@pid,N@m,1@m)       rank r holds rows r*M/P .. (r+1)*M/P - 1
 *
 * Each rank runs the GEMM above on its shards (M x N x K/P) into Y_r, then the collective tirx
 * chooses from the two layouts of Y (a reduce-scatter, named so that the NCCL call is the same
 * at every mesh size). ldx and ldw are K/P rounded up to 8 elements (TMA strides are multiples
 * of 16 bytes). Y_r and Y are dense for NCCL, so N is a multiple of 8; M and K split evenly.
 */
typedef struct tirx_tp_spec {
  size_t size;      /* 0 or sizeof(tirx_tp_spec) */
  tirx_dtype dtype; /* TIRX_BF16 or TIRX_F16 */
  int64_t m;        /* global shape: X [m, k], W [n, k], Y [m, n] */
  int64_t n;        /* (see m) */
  int64_t k;        /* (see m) */
  int nranks;       /* P >= 1; m % P == 0, k % P == 0, n % 8 == 0 */
  tirx_gemm_options gemm; /* the per-rank GEMM's options (epilogue none, path not gemv) */
} tirx_tp_spec;

/* A layer for one mesh size; immutable after creation and shared by every rank's call. The
 * fields are read-only for callers. */
typedef struct tirx_tp_linear {
  tirx_tp_spec spec;         /* the spec it was created from */
  int64_t m_local;           /* M/P rows of Y per rank */
  int64_t k_local;           /* K/P columns of X and W per rank */
  int64_t ldx;               /* the local leading dimension of X_r */
  int64_t ldw;               /* the local leading dimension of W_r */
  tirx_dtensor *x;           /* the input X, sharded on K */
  tirx_dtensor *w;           /* the input W, sharded on K */
  tirx_dtensor *y_partial;   /* Y_r on every rank, partial sum */
  tirx_dtensor *y;           /* the output, sharded on rows */
  tirx_collective *reduce;   /* y_partial -> y (reduce_scatter) */
  tirx_kernel *gemm;         /* the GEMM, built for (M, N, K/P) */
  /* Local shapes and strides (from the dtensors) that the tensor arguments point into. */
  int64_t x_shape[2];    /* X_r */
  int64_t x_strides[2];  /* (see x_shape) */
  int64_t w_shape[2];    /* W_r */
  int64_t w_strides[2];  /* (see w_shape) */
  int64_t b_shape[2];    /* W_r seen as the GEMM's B: (K/P, N) with strides (1, ldw) */
  int64_t b_strides[2];  /* (see b_shape) */
  int64_t yp_shape[2];   /* Y_r */
  int64_t yp_strides[2]; /* (see yp_shape) */
  int64_t y_shape[2];    /* this rank's rows of Y */
  int64_t y_strides[2];  /* (see y_shape) */
} tirx_tp_linear;

/* One rank's device buffers (sizes: tirx_kernels_tp_linear_bytes). */
typedef struct tirx_tp_buffers {
  void *x;         /* X_r: [M, K/P], row stride ldx */
  void *w;         /* W_r: [N, K/P], row stride ldw */
  void *y_partial; /* Y_r: [M, N], dense (the GEMM's output, the collective's input) */
  void *y;         /* this rank's rows of Y: [M/P, N], dense */
} tirx_tp_buffers;

/* One of a rank's buffers (tirx_kernels_tp_linear_bytes). */
typedef enum tirx_tp_buffer {
  TIRX_TP_BUFFER_X = 0,
  TIRX_TP_BUFFER_W = 1,
  TIRX_TP_BUFFER_Y_PARTIAL = 2,
  TIRX_TP_BUFFER_Y = 3
} tirx_tp_buffer;

/*
 * Builds the dtensors, the collective and the GEMM into *out (which the caller owns; destroy it
 * with tirx_kernels_tp_linear_destroy). On failure *out holds nothing to destroy.
 * Errors: TIRX_E_NULL_ARG (spec, out), TIRX_E_INVALID_ARG (a spec that breaks a rule above),
 * and the failing tirx call's status ("tirx_kernels_tp_linear_create: <its message>").
 */
TIRX_API tirx_status tirx_kernels_tp_linear_create(const tirx_tp_spec *spec, tirx_tp_linear *out);

/* Frees what tirx_kernels_tp_linear_create made; NULL or a zeroed layer is a no-op. */
TIRX_API void tirx_kernels_tp_linear_destroy(tirx_tp_linear *t);

/* Bytes of one rank's buffer `which` (0 for NULL t or an unknown buffer). */
TIRX_API size_t tirx_kernels_tp_linear_bytes(const tirx_tp_linear *t, tirx_tp_buffer which);

/* The six GEMM arguments (M, N, K/P, X_r, W_r as (K/P, N), Y_r) for b; they point into t.
 * NULL t or b: args are zeroed (a launch refuses them) and the thread's last error is
 * TIRX_E_NULL_ARG naming it; NULL args: nothing is written. */
TIRX_API void tirx_kernels_tp_linear_gemm_args(const tirx_tp_linear *t, const tirx_tp_buffers *b,
                                               tirx_arg args[6]);

/* Compiles (or finds in the cache) and loads the GEMM variant tirx_op_tp_linear launches, so
 * that no module is loaded while a collective runs (tirx/dist.h). tirx_runtime_warmup's errors,
 * and TIRX_E_NULL_ARG. */
TIRX_API tirx_status tirx_kernels_tp_linear_prepare(const tirx_tp_linear *t, tirx_runtime *rt,
                                                    const tirx_tp_buffers *b);

/*
 * One forward pass on this rank (comm's rank) on stream: checks comm's health and the four
 * buffers against their dtensors, then enqueues the GEMM (X_r W_r^T -> Y_r) and the reduce-
 * scatter (Y_r -> this rank's rows of Y). Asynchronous: wait with tirx_comm_synchronize.
 * Errors: TIRX_E_NULL_ARG (rt, t, comm, b), then the first failing call's status and message
 * (tirx_comm_health, tirx_dtensor_check, tirx_launch, tirx_collective_run).
 */
TIRX_API tirx_status tirx_op_tp_linear(tirx_runtime *rt, const tirx_tp_linear *t, tirx_comm *comm,
                                       const tirx_tp_buffers *b, void *stream);

/* ------------------------------------------------------------------------------------------ */
/* Attention (prefill)                                                                         */
/* ------------------------------------------------------------------------------------------ */

/*
 * O = softmax(scale * Q K^T [+ causal mask]) V per (batch, head), f16 or bf16 in, f32
 * softmax and accumulation, the dtype out; optional log-sum-exp in f32 (natural log, of the
 * scaled scores: lse = log(sum_j exp(scale * q.k_j))).
 *
 * Shapes (last dimension contiguous; other strides are arguments, in elements, multiples of
 * 16 bytes):
 *   fixed length   q, o [B, S_q, H, D], k, v [B, S_k, H_kv, D], lse [B, H, S_q] (dense)
 *   varlen         q, o [T_q, H, D], k, v [T_k, H_kv, D] (sequences packed along the first
 *                  dimension), lse [H, T_q] (dense), and tirx_attention_varlen
 * H a multiple of H_kv (grouped-query; H_kv = 1 is multi-query); D 64, 128 or 256.
 * Causal masks are aligned to the bottom right when S_q != S_k (FlashAttention's
 * convention): query row i sees keys j <= i + S_k - S_q; a row that sees no key (possible
 * when S_q > S_k) has o = 0 and lse = -inf.
 */
typedef struct tirx_attention_options {
  size_t size;      /* 0 or sizeof(tirx_attention_options) */
  double scale;     /* softmax scale; 0: 1 / sqrt(D) */
  bool causal;      /* the causal mask (aligned to the bottom right) */
  const char *path; /* NULL: the default kernel; "reference": a simple, slow kernel (tests) */
  int sms;          /* streaming multiprocessors to fill; 0: 132 (an H200); 1..1024 */
} tirx_attention_options;

/*
 * Builds the default attention kernel for the options (scale and sms are launch-time and not
 * read), dtype, head dim d, heads h over h_kv, and varlen (true: packed sequences with
 * cumulative offsets). *out: a new kernel, one reference. Pure: no device. The launch
 * parameters are internal (use tirx_op_attention). $TIRX_ATTN_SCHEDULE (tirx/runtime.h) picks
 * the KV-block schedule of the kernel built (its name ends in the schedule: "_overlap",
 * "_pingpong", "_pingpong_overlap"); d = 256 has the serial schedule only.
 * Errors: TIRX_E_NULL_ARG (out), TIRX_E_INVALID_ARG (dtype, d other than 64, 128 and 256, h,
 * h_kv, a TIRX_ATTN_SCHEDULE other than serial, overlap, pingpong and pingpong_overlap, or
 * other than serial at d = 256), the builder's.
 */
TIRX_API tirx_status tirx_kernels_attention_build(const tirx_attention_options *opts,
                                                  tirx_dtype dtype, int d, int h, int h_kv,
                                                  bool varlen, tirx_kernel **out);

/* Variable-length batches (FlashAttention's varlen API): cumulative sequence offsets, B + 1
 * entries from 0, non-decreasing, in host memory (checked, and used to schedule the tiles)
 * and the same values in device memory (int32, read by the kernel). */
typedef struct tirx_attention_varlen {
  int batch;                   /* B >= 1 */
  const int32_t *cu_seqlens_q; /* host, B + 1 */
  const int32_t *cu_seqlens_k; /* host, B + 1 */
  const void *cu_seqlens_q_dev; /* device, B + 1 int32, 16-byte aligned */
  const void *cu_seqlens_k_dev; /* device, B + 1 int32, 16-byte aligned */
} tirx_attention_varlen;

/*
 * Attention on stream. varlen NULL: fixed-length rank-4 tensors; else rank-3 packed tensors
 * as above. lse may be NULL. Strides NULL mean dense; given strides are >= 0, in elements,
 * innermost 1, the others multiples of 8 (16 bytes), and for the default path (TMA) those of
 * dimensions longer than 1 positive and below 2^39 elements; extents are at most 2^31 - 1. Varlen
 * sequences may be empty (equal offsets): a sequence of no keys gives its rows o = 0 and
 * lse = -inf. opts->path "reference" runs a simple kernel (one group of four lanes per query
 * row, K and V read from global memory, f32 online softmax; B and H up to 65535), for tests.
 * Errors (never a launch): TIRX_E_NULL_ARG (rt, q, k, v, o, a data pointer, varlen's arrays),
 * TIRX_E_INVALID_ARG (shapes that disagree, H not a multiple of H_kv, D not 64, 128 or 256, an
 * innermost stride other than 1, strides or pointers not 16-byte aligned, decreasing or
 * out-of-range offsets, options out of range: scale negative or not finite, sms outside
 * 0..1024, a path other than NULL and "reference"; for the default path, a TIRX_ATTN_SCHEDULE
 * other than serial, overlap, pingpong and pingpong_overlap, or other than serial at D = 256:
 * tirx/runtime.h), TIRX_E_TYPE (dtypes: q, k, v, o one of f16 and bf16, lse f32), the build's
 * errors and tirx_launch's (its message prefixed with "tirx_op_attention: "; TIRX_E_NO_DEVICE
 * without a device).
 */
TIRX_API tirx_status tirx_op_attention(tirx_runtime *rt, const tirx_attention_options *opts,
                                       const tirx_tensor_arg *q, const tirx_tensor_arg *k,
                                       const tirx_tensor_arg *v, const tirx_tensor_arg *o,
                                       const tirx_tensor_arg *lse,
                                       const tirx_attention_varlen *varlen, void *stream);

/* ------------------------------------------------------------------------------------------ */
/* Decode attention over a paged KV cache                                                      */
/* ------------------------------------------------------------------------------------------ */

/*
 * O = softmax(scale * Q K^T + mask) V for the q_len newest tokens of each sequence of a batch,
 * with K and V in a paged cache (vLLM's layout). f16 or bf16 in and out, f32 softmax (online,
 * exp2 with the scale folded in) and accumulation; optional log-sum-exp in f32 (natural log
 * of the scaled scores, lse = log(sum_j exp(scale * q.k_j))).
 *
 *   q, o          [B, q_len, H, D]; q_len 1..8 (speculative decoding); any strides
 *   k_cache,      [num_pages, page_size, H_kv, D], dense; page_size 16, 32 or 64; D 64 or 128;
 *   v_cache       H a multiple of H_kv (grouped-query; H_kv = 1 is multi-query), with
 *                 (H / H_kv) * q_len <= TIRX_DECODE_MAX_ROWS
 *   block_table   int32 [B, max_pages], any strides: page p of sequence b holds its tokens
 *                 p * page_size .. (p + 1) * page_size - 1
 *   context_lens  int32 [B] (device), and the same lengths in host memory in
 *                 opts->context_lens_host (the host checks them and chooses the splits;
 *                 the kernel reads the device values, which must be the same)
 *   lse           f32 [B, q_len, H] (any strides), or NULL
 *
 * A sequence of context length L holds its q_len new tokens last (L >= q_len): query i sees
 * keys j <= L - q_len + i (causal among the new tokens). Entries of block_table past the pages
 * a sequence needs (ceil(L / page_size)) are never read. Page ids are the caller's data and
 * are not checked: an id outside [0, num_pages) (negative included) reads a page of zeros (the
 * TMA load's bounds fill), so its keys score 0 and its values add nothing: wrong results for
 * that sequence, never a read outside the cache or a fault.
 *
 * Kernel (sm_90a, tensor cores; on another device the launch fails with tirx_launch's arch
 * error). A persistent grid (tirx_decode_plan.ctas CTAs of 384 threads,
 * one an SM) runs over the items (sequence, KV split, KV head); the KV heads of a sequence's
 * pages go side by side. One thread issues, per block of TIRX_DECODE_TILE keys, the TMA loads
 * of its K and V pages (page ids from the block table) into a ring of shared stages that
 * streams across items; two consumer warpgroups take the CTA's items in turn (one's epilogue
 * under the other's blocks), each reading every K and V page of its item once for all
 * H / H_kv query heads of the KV head: their (H / H_kv) * q_len rows are a 64-row wgmma tile,
 * S = Q K^T and O += P V on wgmma, the online softmax in f32 registers. Key slots past a
 * sequence's length in its last page are masked, and their V rows zeroed before P V: those
 * slots may hold anything, NaN included.
 * Split-KV (flash-decoding): when the items B x H_kv would leave SMs idle, each (sequence, KV
 * head) is split into ranges of tiles (tirx_kernels_decode_plan); each split writes its
 * unnormalised f32 partial O and its (max, sum) to a workspace, and a combine kernel merges
 * the splits of each row in split order (deterministic).
 *
 * Workspace. Split launches use the runtime's scratch buffer for the stream (the one split-K
 * GEMMs use too), kept by the runtime and reused by later calls; it grows when a call needs
 * more (a larger buffer is allocated; the outgrown one stays until tirx_runtime_destroy, which
 * frees them all, since work queued earlier may still read it). Split calls hold one
 * process-wide lock from the buffer's lookup until their two launches are queued (a first
 * launch that compiles holds it meanwhile). Calls on one stream share the buffer in stream
 * order, so a split call may be captured into a CUDA graph once the buffer is large enough
 * (make one call of the largest shape before capturing: growing allocates).
 */
enum {
  TIRX_DECODE_TILE = 64,      /* keys per tile (whole pages) */
  TIRX_DECODE_MAX_ROWS = 64,  /* (H / H_kv) * q_len, the rows of a CTA */
  TIRX_DECODE_MAX_SPLITS = 256
};

/* Options of decode attention (tirx_kernels_decode_plan, tirx_op_decode_attention). */
typedef struct tirx_decode_options {
  size_t size;  /* 0 or sizeof(tirx_decode_options) */
  double scale; /* softmax scale; 0: 1 / sqrt(D) */
  int splits;   /* KV splits per (sequence, KV head): 0 chosen (tirx_kernels_decode_plan);
                   1: unsplit; N in 2..TIRX_DECODE_MAX_SPLITS forced (capped at the tiles of
                   the longest context) */
  int sms;      /* streaming multiprocessors to fill; 0: 132 (an H200); 1..1024 */
  /* tirx_op_decode_attention: the B context lengths in host memory (required; the values of
   * the device array context_lens). */
  const int32_t *context_lens_host;
} tirx_decode_options;

/* The split of a launch: KV splits per (sequence, KV head) (1: unsplit, no workspace), the
 * tiles of TIRX_DECODE_TILE keys each split reads (the last split of the longest sequence may
 * read fewer; splits of shorter sequences may read none), the workspace bytes, and (version 2)
 * the persistent grid. */
typedef struct tirx_decode_plan {
  size_t size; /* in: 0 (version 1: up to workspace_bytes) or sizeof(tirx_decode_plan); out:
                  bytes written */
  int splits;              /* KV splits per (sequence, KV head); 1: unsplit */
  int tiles_per_split;     /* tiles of TIRX_DECODE_TILE keys each split reads */
  int64_t workspace_bytes; /* the split launches' workspace (0 unsplit) */
  int ctas;                /* the persistent grid: min(B x h_kv x splits, sms) CTAs */
} tirx_decode_plan;

/*
 * The split tirx_op_decode_attention uses for B sequences of at most max_context tokens, H
 * query heads over h_kv KV heads, q_len new tokens and head dim d. opts->splits forced: that
 * many (at most the tiles of max_context). Automatic: the fewest splits whose B x h_kv x splits
 * items fill at least 95% of the rounds of opts->sms persistent CTAs (items of equal length
 * assumed), each split of at least 2 tiles (128 keys), at most TIRX_DECODE_MAX_SPLITS; failing
 * 95%, the split that fills the most. Then the splits the tiles of max_context need at that
 * many tiles each. opts may be NULL (context_lens_host is not read).
 * Errors: TIRX_E_NULL_ARG (out), TIRX_E_INVALID_ARG (batch, heads, q_len, d, max_context < 1,
 * h not a multiple of h_kv, options out of range, and past tirx_op_decode_attention's limits:
 * batch or h_kv over 65535, q_len over 8, (h / h_kv) * q_len over TIRX_DECODE_MAX_ROWS, d other
 * than 64 and 128, max_context over 2^31 - 1).
 */
TIRX_API tirx_status tirx_kernels_decode_plan(const tirx_decode_options *opts, int batch, int h,
                                              int h_kv, int q_len, int d, int64_t max_context,
                                              tirx_decode_plan *out);

/* The kernels of a decode call. */
typedef enum tirx_decode_kernel {
  TIRX_DECODE_UNSPLIT = 0, /* each item (KV head, sequence) writes o (and lse) */
  TIRX_DECODE_PARTIAL = 1, /* each item (split, KV head, sequence) writes the workspace */
  TIRX_DECODE_COMBINE = 2  /* merges the splits into o (and lse) */
} tirx_decode_kernel;

/*
 * Builds one decode kernel for dtype, head dim d, page_size, heads h over h_kv, q_len, and
 * whether it writes lse (UNSPLIT, COMBINE). *out: a new kernel, one reference. Pure: no device.
 * The launch parameters are internal (use tirx_op_decode_attention). opts is not read (the
 * scale and splits are launch arguments).
 * Errors: TIRX_E_NULL_ARG (out), TIRX_E_INVALID_ARG (dtype, d, page_size, h, h_kv (1 to
 * 65535), q_len, which), the builder's.
 */
TIRX_API tirx_status tirx_kernels_decode_build(tirx_decode_kernel which, tirx_dtype dtype, int d,
                                               int page_size, int h, int h_kv, int q_len,
                                               bool lse, tirx_kernel **out);

/*
 * Decode attention on stream (shapes above). Errors (never a launch): TIRX_E_NULL_ARG (rt, q,
 * k_cache, v_cache, block_table, context_lens, o, a data pointer, opts or
 * opts->context_lens_host), TIRX_E_INVALID_ARG (a rank or shape that disagrees, H not a
 * multiple of H_kv, too many rows, D, page size or q_len unsupported, caches not dense,
 * pointers not 16-byte aligned, a context length below 1 or below q_len, a block table
 * narrower than the longest context needs, B over 65535, options out of range), TIRX_E_TYPE
 * (q, caches and o one of f16 and bf16, block_table and context_lens int32, lse f32), the
 * workspace allocation's (TIRX_E_NO_DEVICE without a device), the build's and tirx_launch's.
 */
TIRX_API tirx_status tirx_op_decode_attention(tirx_runtime *rt, const tirx_decode_options *opts,
                                              const tirx_tensor_arg *q,
                                              const tirx_tensor_arg *k_cache,
                                              const tirx_tensor_arg *v_cache,
                                              const tirx_tensor_arg *block_table,
                                              const tirx_tensor_arg *context_lens,
                                              const tirx_tensor_arg *o,
                                              const tirx_tensor_arg *lse, void *stream);

/*
 * Appends this step's K and V into the paged caches: k, v [num_tokens, H_kv, D] (any strides)
 * of the caches' dtype, slot_mapping int32 [num_tokens]: token t goes to page slot / page_size,
 * offset slot % page_size. A negative slot is skipped (vLLM's padding); so is a slot at or past
 * num_pages * page_size (caller data, never a write outside the caches). The caches as for
 * tirx_op_decode_attention (dense, f16 or bf16, page_size 16, 32 or 64, D 64 or 128).
 * Errors: TIRX_E_NULL_ARG, TIRX_E_INVALID_ARG (ranks, shapes, dense caches, alignment),
 * TIRX_E_TYPE, the build's and tirx_launch's.
 */
TIRX_API tirx_status tirx_op_reshape_and_cache(tirx_runtime *rt, const tirx_tensor_arg *k,
                                               const tirx_tensor_arg *v,
                                               const tirx_tensor_arg *k_cache,
                                               const tirx_tensor_arg *v_cache,
                                               const tirx_tensor_arg *slot_mapping, void *stream);

/* Builds the reshape_and_cache kernel for dtype, d, page_size and h_kv. Errors as
 * tirx_kernels_decode_build. */
TIRX_API tirx_status tirx_kernels_reshape_and_cache_build(tirx_dtype dtype, int d, int page_size,
                                                          int h_kv, tirx_kernel **out);

/* ------------------------------------------------------------------------------------------ */
/* Warm-up: ops that prepare instead of launching                                              */
/* ------------------------------------------------------------------------------------------ */

/*
 * Between tirx_kernels_prepare_begin() and tirx_kernels_prepare_end(), on the calling thread,
 * every kernel launch a tirx_op_* call would make becomes a preparation: tirx_prepare_async()
 * of the variant it would launch (compiled and published to the runtime's disk cache, loaded
 * when the runtime has a device; nothing runs on the GPU, no data is read). So an op called
 * with placeholder tensors (non-NULL, 16-byte aligned pointers that are never read) warms up
 * every kernel it would launch for those shapes, on a compile-only runtime too; an op whose
 * path launches two kernels (the split-K GEMM and its reduction, split decode attention) gives
 * two preparations. The op returns TIRX_OK when its preparations were submitted, or its usual
 * errors (argument checks, builds, and tirx_prepare_async's, prefixed with the op's name);
 * tirx_op_tp_linear is not covered (it launches a collective). A server warms its shapes up
 * this way before capturing graphs; `tirx warmup` does it from the command line.
 * Errors: TIRX_E_INVALID_ARG when the thread is already preparing:
 *   tirx_kernels_prepare_begin: this thread is already preparing (call
 *   tirx_kernels_prepare_end first)
 */
TIRX_API tirx_status tirx_kernels_prepare_begin(void);

/*
 * Ends the calling thread's preparing and hands over its preparations: *futures receives a
 * malloc'ed array (free it) of *count futures in launch order (release each, after waiting
 * for it as needed: tirx_future_wait), NULL when there were none. Errors: TIRX_E_NULL_ARG,
 * TIRX_E_INVALID_ARG when the thread was not preparing (then *futures is NULL, *count 0).
 */
TIRX_API tirx_status tirx_kernels_prepare_end(tirx_future ***futures, int *count);

/* ------------------------------------------------------------------------------------------ */
/* The table of the ops' kernels                                                               */
/* ------------------------------------------------------------------------------------------ */

/* Kernels the ops have built so far in this process. */
TIRX_API int tirx_kernels_cached(void);

/* Releases the ops' kernels (for leak checkers at exit; later op calls build again). Safe
 * while other threads call ops: a launch in progress holds its own reference. */
TIRX_API void tirx_kernels_clear(void);

#ifdef __cplusplus
}
#endif
#endif /* TIRX_KERNELS_H */
