/*
 * Lowering of tile primitives to native IR (lower.c), shared by the emit hooks of the rules in
 * families/. An emit hook receives a tirx__lower as its opaque emitter: the builder, whose
 * insertion point is the primitive statement's body, and the primitive's operands. Lowering
 * writes ordinary builder IR (for loops, lets, loads, stores, shuffles) plus TIRX__ST_VCOPY
 * vector moves, so codegen, the printer and validation need nothing else.
 *
 * What the lowerings support (each returns TIRX_E_NOT_SUPPORTED with a message otherwise):
 *   - register operands: a local tensor's layout places logical elements on reg/m slots and on
 *     the thread axes laneid, warpid, tid, tid_in_wg, wid_in_wg, wgid; the iters of one thread
 *     axis must be digits of the coordinate (distinct strides, none overlapping); a thread
 *     whose coordinate holds no element skips the elementwise work (a run-time guard);
 *   - elementwise primitives with register operands are driven by one of them (dst when it is
 *     local): every other register operand must have the same thread placement;
 *   - without register operands, the team's threads share the region's vectors round-robin
 *     (the team must be complete: no filter that narrows it);
 *   - vectors run along the innermost logical dimension;
 *   - packed math (pack 2): add, sub, mul, fma, max, min, neg, abs, exp2 whose operands are all
 *     f16 (or all bf16; float scalars are rounded to it, as per element) run on pairs of a
 *     vector (TIRX__ST_PACKED, prelude tirx_x2_*); conversions stay per element.
 */
#ifndef TIRX_DISPATCH_LOWER_H
#define TIRX_DISPATCH_LOWER_H

#include "../builder/builder_internal.h"
#include "dispatch.h"

typedef struct tirx__lower {
  tirx_builder *b;
  tirx__prim_stmt *p;
  const tirx__call *call;
  const char *rule;  /* the rule's name, for messages and comments */
  tirx_arena *arena; /* the call's layouts live here (until the end of the build) */
  int loops;         /* for loops of the kernel around the call (0: it runs once per thread) */
  /* ---- packed f16x2/bf16x2 math ---- */
  int64_t pack; /* the shape's pack (pointwise.vec): 2 lowers pairs with packed instructions
                 * (TIRX__ST_PACKED) where the op and dtypes allow; 0 or 1: per element */
  /* When set, tirx__lower_elementwise hands it each vector (vec elements from logical index idx
   * along the innermost dim) instead of moving it itself: copy_async.cp_async issues a
   * cp.async there (families/copy_cp_async.c). */
  void (*element)(struct tirx__lower *lw, tirx_expr *const *idx, int64_t vec);
} tirx__lower;

/* The tensor index of region r's element at logical index idx (NULL entries: 0), plus j on the
 * last dim, into out[r's rank]. */
void tirx__lower_tensor_index(tirx__lower *lw, const tirx_region *r, tirx_expr *const *idx,
                              int64_t j, tirx_expr **out);

/* A positive number that every value of the integer expression e is a multiple of (1 when
 * nothing is known), or 0 when e is always 0: constants, negations, sums and differences (the
 * gcd), products (the product of the divisors), shifts by constants and integer casts, taking
 * the kernel's index arithmetic not to overflow; a variable (tirx_let, a loop variable) or a
 * parameter is 1. The one divisor analysis of dispatch (lower_driver.c): the known alignment of
 * a region's start, and TMA's split form. */
int64_t tirx__known_divisor(const tirx_expr *e);

/* The coordinate of the current thread on a thread axis of one CTA (i32), or NULL (no error
 * recorded) for axes outside it. */
tirx_expr *tirx__lower_axis_coord(tirx_builder *b, tirx_axis axis);

/* copy, pointwise (unary/binary/ternary), cast, fill and select: vectors of vec elements
 * (1: scalar accesses). */
tirx_status tirx__lower_elementwise(tirx__lower *lw, int64_t vec);

/* reduce: a per-thread loop over the reduced elements the thread holds, then (butterfly) a
 * shfl.xor butterfly over the lane bits `lanes` (0: none). */
tirx_status tirx__lower_reduce(tirx__lower *lw, int64_t lane_mask);

/* reduce.smem: per-thread fold, warp butterfly, per-warp partials through a shared scratch,
 * a barrier, a final butterfly in every warp (the result in every thread of the team). */
tirx_status tirx__lower_reduce_smem(tirx__lower *lw);

/* reduce.dsmem: reduce.smem in each CTA of the cluster, then the CTAs' partials through
 * distributed shared memory (mapa + st.shared::cluster into every peer, barrier.cluster),
 * folded in rank order (the result in every thread of the cluster). */
tirx_status tirx__lower_reduce_dsmem(tirx__lower *lw);

/* The emit hooks, one per lowered rule (families/ point their rules at them). */
tirx_status tirx__emit_elementwise(const tirx__rule *rule, const tirx__call *call,
                                   const tirx__shape *shape, void *emitter);
tirx_status tirx__emit_reduce_shuffle(const tirx__rule *rule, const tirx__call *call,
                                      const tirx__shape *shape, void *emitter);
tirx_status tirx__emit_reduce_smem(const tirx__rule *rule, const tirx__call *call,
                                   const tirx__shape *shape, void *emitter);
tirx_status tirx__emit_reduce_dsmem(const tirx__rule *rule, const tirx__call *call,
                                    const tirx__shape *shape, void *emitter);
tirx_status tirx__emit_reduce_scalar(const tirx__rule *rule, const tirx__call *call,
                                     const tirx__shape *shape, void *emitter);

/* ---- ldmatrix / stmatrix (copy.ldmatrix, copy.stmatrix) ---- */
/* ldmatrix (store false: shared -> local) or stmatrix (store true: local -> shared), num
 * matrices per instruction, residual loops over the rest (TIRX__ST_MATRIX statements). */
tirx_status tirx__lower_matrix(tirx__lower *lw, int64_t num, bool store);
tirx_status tirx__emit_ldmatrix(const tirx__rule *rule, const tirx__call *call,
                                const tirx__shape *shape, void *emitter);
tirx_status tirx__emit_stmatrix(const tirx__rule *rule, const tirx__call *call,
                                const tirx__shape *shape, void *emitter);
/* A warpgroup ldmatrix/stmatrix tile (copy_ldmatrix.c): warp 0's 8x8 blocks in row-major order, each
 * at (row, col) of the tile with its first register; the other warps' are rows_per_warp * w
 * rows further down. */
typedef struct tirx__matrix_block {
  int64_t row, col, reg;
} tirx__matrix_block;
bool tirx__matrix_wg_blocks(tirx_arena *a, const tirx_layout *rl, tirx__matrix_block *blocks,
                            int cap, int *per_warp, int64_t *rows_per_warp, const char **why);
/* ---- end ldmatrix / stmatrix ---- */

/* ---- gemm, gemm_async ---- */
/* gemm.scalar (lower.c): FMA loops over K per element of d. */
tirx_status tirx__emit_gemm_scalar(const tirx__rule *rule, const tirx__call *call,
                                   const tirx__shape *shape, void *emitter);
/* gemm.mma and gemm_async.wgmma (lower_gemm.c). */
tirx_status tirx__emit_mma(const tirx__rule *rule, const tirx__call *call,
                           const tirx__shape *shape, void *emitter);
tirx_status tirx__emit_wgmma(const tirx__rule *rule, const tirx__call *call,
                             const tirx__shape *shape, void *emitter);
/* ---- end gemm ---- */

#endif
