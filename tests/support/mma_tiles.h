/*
 * Single-CTA matrix-multiply tiles, built with the builder's tile primitives: the test bed of
 * the gemm and gemm_async families (tests/unit/dispatch/families/test_gemm.c compiles them with NVRTC,
 * tests/gpu/test_mma.c runs them against a float64 reference).
 *
 * c (M, N) = a (M, K) x b (K, N) in one CTA: a and b are copied into shared memory with
 * ordinary copies (no TMA), multiplied by the family, the f32 accumulator cast to the 16-bit
 * dtype in registers, stored to a shared tile with stmatrix and copied to c.
 * Parameters: a (dtype [M, K], dense), b (dtype [K, N], strides (1, K): b^T stored row-major,
 * i.e. K-major), c (dtype [M, N], dense). Grid 1.
 */
#ifndef TIRX_EXAMPLES_MMA_TILES_H
#define TIRX_EXAMPLES_MMA_TILES_H

#include <stdbool.h>
#include <stddef.h>
#include <tirx.h>

typedef struct mma_tile {
  const char *family; /* "wgmma" (gemm_async), "mma" or "scalar" (gemm) */
  tirx_dtype dtype;   /* TIRX_BF16 or TIRX_F16 */
  int m, n, k;
  /* wgmma (and scalar at warpgroup scope, when > 0): consumer warpgroups, each M / warpgroups
   * rows (a multiple of 64); mma (and scalar at warp scope, when 0): one warp per 16 rows. */
  int warpgroups;
  int swizzle;  /* wgmma: the a/b tiles' swizzle (128, 64, 32; 0: interleaved core matrices) */
  bool split_k; /* two calls over the halves of K: accumulate false, then true */
  /* wgmma: the RS form: a copied from shared memory into registers by ldmatrix
   * (tirx_layout_wgmma_a, K <= 256) and multiplied from there, b from shared memory. */
  bool a_regs;
} mma_tile;

/* The kernel for t, or NULL with the builder's error in err[cap]. */
tirx_kernel *example_mma_tile(const mma_tile *t, char *err, size_t cap);

/*
 * y = x (dtype [rows, k], dense) through the wgmma A fragments of one warpgroup: x is copied
 * into a shared tile (tirx_layout_smem_tile with the swizzle; 0: row-major), copy.ldmatrix at
 * warpgroup scope fills a register tile of layout tirx_layout_wgmma_a(rows, k), and an
 * ordinary register copy (no ldmatrix) writes it to y. Block 128, grid 1.
 */
tirx_kernel *example_wgmma_a_load(tirx_dtype dtype, int rows, int k, int swizzle, char *err,
                                  size_t cap);

/*
 * C (M, N) = A (M, K) x B (K, N) by one warpgroup per 64 x block_n tile of C, through
 * gemm_async in the RS form (a_regs: each K block of A ldmatrix'd into registers as wgmma A
 * fragments, tirx_layout_wgmma_a) or the SS form (A read from shared memory), on the same tiles:
 * per K block of 64, thread 0 loads the A (64 x 64) and B (64 x block_n) tiles with TMA into
 * 128-byte swizzled shared tiles (elements past M, N or K zero-filled, so every size works),
 * the warpgroup multiplies them (wgmma_commit, wgmma_wait 0), a barrier, the next block. The
 * f32 accumulator is cast to the dtype, stored to a shared tile with stmatrix and written out
 * with one TMA store (clipped at M and N). Parameters: M, N, K (i32), A (dtype [M, K], row
 * stride any multiple of 8 elements, contiguous rows), B (dtype [K, N], strides (1, ldb): B^T
 * stored row-major), C (dtype [M, N], strides (ldc, 1)). Block 128, grid (ceil(N / block_n),
 * ceil(M / 64)).
 */
typedef struct wgmma_gemm {
  tirx_dtype dtype; /* TIRX_BF16 or TIRX_F16 */
  int block_n;      /* a multiple of 16 in [16, 256] */
  bool a_regs;      /* RS form (a in registers) rather than SS */
  /* C stored element by element (guarded by M and N) instead of one TMA store: for an N that
   * is not a multiple of 8, where a TMA store would write the rest of the row's last 16-byte
   * piece (tirx_launch refuses it). */
  bool plain_store;
} wgmma_gemm;

/* The kernel for g, or NULL with the reason in err[cap] ("example_wgmma_gemm: ..." for bad g). */
tirx_kernel *example_wgmma_gemm(const wgmma_gemm *g, char *err, size_t cap);

/*
 * A two-warpgroup producer/consumer ring over two shared stages, synchronised by mbarriers
 * (full: one arrival from the producer, empty: one from the consumer), with setmaxnreg on both
 * roles, elect.sync, a named barrier and the cluster rank: y[it, l] = 2 * x[it, l] + it.
 * Parameters: x, y (f32 [iters, 32], dense), info (i32 [2]): info[0] the CTA's cluster rank,
 * info[1] the number of lanes elect.sync chose once in warp 0 (1). Block 256, grid 1.
 */
tirx_kernel *example_mbarrier_ring(int iters, char *err, size_t cap);

#endif
