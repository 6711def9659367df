/*
 * What the gemm rules (gemm_wgmma.c, gemm_mma.c, gemm_scalar.c) and their lowerings
 * (gemm_mma.c, gemm_wgmma.c, gemm_scalar.c) share: the operand shapes and the layout analyses of the operands,
 * each decided by evaluating the layout over every element of the tile (tiles are at most a
 * few thousand elements), so that the check and the instruction can never disagree.
 *
 * Operands: d (M,N), a (M,K), b (K,N), in the order of the call.
 */
#ifndef TIRX_DISPATCH_FAMILIES_GEMM_COMMON_H
#define TIRX_DISPATCH_FAMILIES_GEMM_COMMON_H

#include "../lower.h"
#include "families.h"

/* M, N, K of a gemm call, after checking that the shapes agree (a reason otherwise). */
bool tirx__gemm_shape(tirx__rule_ctx *ctx, int64_t *m, int64_t *n, int64_t *k);

/*
 * A wgmma shared-memory operand, K-major: the rows (M of a, N of b) each hold K consecutive
 * elements, in one of the canonical layouts the descriptor describes:
 *   swizzled (32/64/128 bytes, the layout's own swizzle over elem_bytes elements): row r at
 *     byte (r % 8) * S + (r / 8) * sbo, column k at (k / T) * kb + (k % T) * elem_bytes
 *     (T = S / elem_bytes columns per swizzle row), the start and kb multiples of 8 * S;
 *   interleaved (no swizzle): 8x16-byte core matrices, row r at (r % 8) * 16 + (r / 8) * sbo,
 *     column k at (k * elem_bytes / 16) * lbo + (k * elem_bytes) % 16, the start 16-aligned.
 */
typedef struct tirx__wgmma_operand {
  int swizzle;     /* descriptor code: 0 interleaved, 1 128B, 2 64B, 3 32B */
  int64_t lbo, sbo; /* bytes */
  int mn_major;    /* 1: the MN-major form (the instruction's transpose bit; 16-bit types) */
} tirx__wgmma_operand;

/* Analyses operand i (1: a, kdim 1; 2: b, kdim 0) of a wgmma call. false, and *why set (arena
 * text), when it is neither a K-major wgmma tile nor a swizzled MN-major one (gemm_common.c:
 * the MN index contiguous in atoms of one swizzle row by 8 K rows; V of attention's P V). */
bool tirx__wgmma_operand_of(tirx_arena *a, const tirx__operand *op, int kdim,
                            tirx__wgmma_operand *out, const char **why);

/* Whether every 8 consecutive K elements of every row of operand op (kdim as above) are 16
 * contiguous bytes, 16-byte aligned (after the swizzle): one ldmatrix row. */
bool tirx__ldmatrix_rows(tirx_arena *a, const tirx__operand *op, int kdim, const char **why);

/* Whether the (h, w) block at (r, c) of register layout l, of shape (m, n), is the fragment
 * layout frag placed at the block's own register offset (mma C fragments, wgmma accumulator
 * slabs and A fragments). */
bool tirx__block_is_fragment(tirx_arena *a, const tirx_layout *l, int64_t m, int64_t n,
                             int64_t r, int64_t c, int64_t h, int64_t w, const tirx_layout *frag);

/* ---- lowering helpers (gemm_common.c) ---- */

/* The load of region r (rank 2) at its begin + (i, j). */
tirx_expr *tirx__gemm_at(tirx_builder *b, const tirx_region *r, int64_t i, int64_t j);

#endif
