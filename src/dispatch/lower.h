/*
 * Lowering of tile primitives to native IR: the helpers shared by the emit hooks of the rules in
 * families/. An emit hook receives a tirx__lower as its opaque emitter: the builder (for
 * expressions), the IR-level emitter (emit.h) whose target is the primitive statement's body,
 * and the primitive's operands. Lowering writes ordinary IR (for loops, lets, loads, stores,
 * shuffles) plus the rules' own statements (vector moves, ldmatrix, native statements), so
 * codegen, the printer and validation need nothing else.
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
#include "emit.h"

typedef struct tirx__lower {
  tirx_builder *b;   /* expressions (statements go through e) */
  tirx__emit *e;     /* writes into the primitive statement's body */
  tirx__prim_stmt *p;
  const tirx__call *call;
  const char *rule;  /* the rule's name, for messages and comments */
  tirx_arena *arena; /* the call's layouts live here (until the end of the build) */
  int loops;         /* for loops of the kernel around the call (0: it runs once per thread) */
  /* When set, tirx__lower_elementwise offers it elements j and j + 1 of each vector (tmp: the
   * temporaries of memory operands, NULL for registers and scalars); true when it wrote them
   * (pointwise.vec's packed f16x2/bf16x2 math, families/pointwise_vec.c). */
  bool (*pair)(struct tirx__lower *lw, tirx_tensor *const *tmp, tirx_expr *const *idx,
               int64_t j);
  /* When set, tirx__lower_elementwise hands it each vector (vec elements from logical index idx
   * along the innermost dim) instead of moving it itself: copy_async.cp_async issues a
   * cp.async there (families/copy_cp_async.c). */
  void (*element)(struct tirx__lower *lw, tirx_expr *const *idx, int64_t vec);
} tirx__lower;

/* ---- shared lowering helpers (elementwise.c) ---- */

/* Records "tirx_kernel_build: [kernel:n] rule: <message>" (TIRX_E_NOT_SUPPORTED). */
tirx_status tirx__lower_fail(tirx__lower *lw, const char *fmt, ...) TIRX_PRINTF(2, 3);

/* The threads of the builder's block. */
int64_t tirx__lower_threads(const tirx_builder *b);

/* The iteration plan of a register layout: its iters (extent 1 dropped) in order, each with its
 * logical dim and inner step; a slot (reg/m) or broadcast iter is a loop, any other a digit of
 * a thread coordinate. */
typedef struct tirx__plan_iter {
  int dim;
  int64_t extent, stride, inner;
  tirx_axis axis;
  bool loop; /* a slot (reg/m) or broadcast iter: looped; else a digit of a coordinate */
} tirx__plan_iter;

typedef struct tirx__plan {
  const tirx_layout *l;
  int n;
  tirx__plan_iter it[TIRX_LAYOUT_MAX_ITERS];
} tirx__plan;

void tirx__lower_plan(const tirx_layout *l, tirx__plan *p);

/* Checks that the thread iters of p are digits of the coordinates and says, in *guard, the
 * condition under which this thread holds elements (NULL: every thread does); want_guard
 * false builds none. */
tirx_status tirx__lower_thread_digits(tirx__lower *lw, const tirx__plan *p, bool want_guard,
                                      tirx_expr **guard);

/* sum + term (term when sum is NULL). */
tirx_expr *tirx__lower_add_term(tirx_builder *b, tirx_expr *sum, tirx_expr *term);

/* Opens a loop "i" over [0, n) and returns its variable. */
tirx_expr *tirx__lower_loop(tirx__emit *e, int64_t n, tirx_loop_kind kind);

/* Walks the iters of pl whose dim is in the mask dims (loops opened, digits of layout l), adding
 * each times its inner step to idx of its dim; returns the loops opened (the caller closes
 * them). */
int tirx__lower_walk(tirx__emit *e, const tirx_layout *l, const tirx__plan *pl, uint32_t dims,
                     tirx_expr **idx);

/* The tensor index of region r's element at logical index idx (NULL entries: 0), plus j on the
 * last dim, into out[r's rank]. */
void tirx__lower_tensor_index(tirx__lower *lw, const tirx_region *r, tirx_expr *const *idx,
                              int64_t j, tirx_expr **out);
/* The value of r at idx (+ j on the last dim): a load, or a broadcast's value. */
tirx_expr *tirx__lower_load(tirx__lower *lw, const tirx_region *r, tirx_expr *const *idx,
                            int64_t j);
/* Stores v into r at idx (+ j on the last dim). */
void tirx__lower_store(tirx__lower *lw, const tirx_region *r, tirx_expr *const *idx, int64_t j,
                       tirx_expr *v);

/* The constant v of dtype dt; e as dtype dt (a cast unless it has it). */
tirx_expr *tirx__lower_fconst(tirx_builder *b, double v, int dt);
tirx_expr *tirx__lower_as_type(tirx_builder *b, tirx_expr *e, int dt);

/* The team's rank and size for work shared round-robin; false after recording why not (a team
 * that is not complete). */
bool tirx__lower_team_share(tirx__lower *lw, tirx_expr **rank, int64_t *size);

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

/* The emit hook of the elementwise rules (copy.vec, copy.scalar, pointwise.scalar; pointwise.vec
 * through its own): tirx__lower_elementwise with the shape's vec. */
tirx_status tirx__emit_elementwise(const tirx__rule *rule, const tirx__call *call,
                                   const tirx__shape *shape, void *emitter);

/* ---- reduce (families/reduce_common.c, reduce_smem.c) ---- */

/* The identity of op in dtype dt, and x op y. */
tirx_expr *tirx__reduce_identity(tirx_builder *b, int op, int dt);
tirx_expr *tirx__reduce_combine(tirx_builder *b, int op, tirx_expr *x, tirx_expr *y);

/* reduce: a per-thread loop over the reduced elements the thread holds, then a shfl.xor
 * butterfly over the lane bits `lane_mask` (0: none). reduce.shuffle and reduce.scalar. */
tirx_status tirx__lower_reduce(tirx__lower *lw, int64_t lane_mask);

/* The cross-lane step of a warp reduction: writes through e what combines the accumulator acc
 * (a variable of dtype dt, reduce op `op`) over the lane bits lane_mask, leaving the result in
 * acc in every lane of each group. */
typedef void (*tirx__reduce_lanes_fn)(tirx__emit *e, tirx_expr *acc, int op, int dt,
                                      int64_t lane_mask);
/* tirx__lower_reduce with another cross-lane step (NULL: the butterfly). */
tirx_status tirx__lower_reduce_with(tirx__lower *lw, int64_t lane_mask,
                                    tirx__reduce_lanes_fn lanes);

/* reduce.smem (cluster false) and reduce.dsmem (cluster true; families/reduce_smem.c):
 * per-thread fold, warp butterfly, per-warp partials through a shared scratch, a barrier, a
 * final butterfly in every warp; with cluster, the CTAs' partials through distributed shared
 * memory, folded in rank order. */
tirx_status tirx__reduce_smem(tirx__lower *lw, bool cluster);
tirx_status tirx__lower_reduce_smem(tirx__lower *lw);
tirx_status tirx__lower_reduce_dsmem(tirx__lower *lw);

/* ---- ldmatrix / stmatrix (families/copy_ldmatrix.c; copy_stmatrix.c uses them) ---- */
/* The legality check, the instruction shapes and the lowering of copy.ldmatrix (store false)
 * and copy.stmatrix (store true), at warp or warpgroup scope. */
void tirx__matrix_check(tirx__rule_ctx *ctx, bool store);
int tirx__matrix_shapes(tirx__rule_ctx *ctx, tirx__shape *out, int cap);
tirx_status tirx__matrix_emit(const tirx__call *call, const tirx__shape *shape, void *emitter,
                              bool store);
/* ldmatrix (store false: shared -> local) or stmatrix (store true: local -> shared), num
 * matrices per instruction, residual loops over the rest (TIRX__ST_MATRIX statements). */
tirx_status tirx__lower_matrix(tirx__lower *lw, int64_t num, bool store);
/* A warpgroup ldmatrix/stmatrix tile (copy_ldmatrix.c): warp 0's 8x8 blocks in row-major order, each
 * at (row, col) of the tile with its first register; the other warps' are rows_per_warp * w
 * rows further down. */
typedef struct tirx__matrix_block {
  int64_t row, col, reg;
} tirx__matrix_block;
bool tirx__matrix_wg_blocks(tirx_arena *a, const tirx_layout *rl, tirx__matrix_block *blocks,
                            int cap, int *per_warp, int64_t *rows_per_warp, const char **why);
/* ---- end ldmatrix / stmatrix ---- */

#endif
