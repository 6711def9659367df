/*
 * What the rules of the registry (one file each in this folder) share: the masks of their key
 * patterns, helpers and the native statements one family defines and another emits.
 * registry.c lists the rules in one ordered table; adding a rule is one file here, one line
 * in that table and one line in ../meson.build.
 */
#ifndef TIRX_DISPATCH_FAMILIES_H
#define TIRX_DISPATCH_FAMILIES_H

#include "../dispatch.h"

#define TIRX__DT(t) TIRX__BIT(TIRX_##t)
#define TIRX__DTYPES_16BIT (TIRX__DT(F16) | TIRX__DT(BF16))
/* Every dtype the builder accepts (fp8 is declared but rejected for now). */
#define TIRX__DTYPES_ALL                                                                           \
  (TIRX__DT(F32) | TIRX__DT(F16) | TIRX__DT(BF16) | TIRX__DT(F64) | TIRX__DT(I8) | TIRX__DT(U8) |  \
   TIRX__DT(I32) | TIRX__DT(U32) | TIRX__DT(I64) | TIRX__DT(BOOL))
#define TIRX__DTYPES_NUMERIC (TIRX__DTYPES_ALL & ~TIRX__DT(BOOL))

/* Every flow between the memory roles, and from a scalar into memory. */
#define TIRX__FLOWS_INTO(dst)                                                                      \
  (TIRX__FLOW(TIRX__ROLE_GLOBAL, dst) | TIRX__FLOW(TIRX__ROLE_SHARED, dst) |                       \
   TIRX__FLOW(TIRX__ROLE_LOCAL, dst))
#define TIRX__FLOWS_MEMORY                                                                         \
  (TIRX__FLOWS_INTO(TIRX__ROLE_GLOBAL) | TIRX__FLOWS_INTO(TIRX__ROLE_SHARED) |                     \
   TIRX__FLOWS_INTO(TIRX__ROLE_LOCAL))
#define TIRX__FLOWS_SCALAR                                                                         \
  (TIRX__FLOW(TIRX__ROLE_SCALAR, TIRX__ROLE_GLOBAL) |                                              \
   TIRX__FLOW(TIRX__ROLE_SCALAR, TIRX__ROLE_SHARED) |                                              \
   TIRX__FLOW(TIRX__ROLE_SCALAR, TIRX__ROLE_LOCAL))

#define TIRX__PRIMS_POINTWISE                                                                      \
  (TIRX__BIT(TIRX__PRIM_UNARY) | TIRX__BIT(TIRX__PRIM_BINARY) | TIRX__BIT(TIRX__PRIM_TERNARY) |    \
   TIRX__BIT(TIRX__PRIM_CAST) | TIRX__BIT(TIRX__PRIM_FILL) | TIRX__BIT(TIRX__PRIM_SELECT))

#define TIRX__OPBIT(op) (UINT64_C(1) << TIRX__PRIM_OP_##op)
#define TIRX__OPS_REDUCE                                                                           \
  (TIRX__OPBIT(SUM) | TIRX__OPBIT(SUMSQ) | TIRX__OPBIT(PROD) | TIRX__OPBIT(MAX) | TIRX__OPBIT(MIN))

/*
 * Shared by the reduce rules (reduce_common.c): checks that every reduced iter of the source
 * lies on a storage axis (reg, m) or on an axis of `allowed`, recording "reduced dim 1 iter
 * (4):(1@warpid) is on warpid: <why>" otherwise, and that for sum, sumsq and prod the source
 * is not replicated on an axis it reduces over (each element would count more than once).
 * Returns the number of threads combined: the product of the reduced iters' extents on
 * thread axes.
 */
int64_t tirx__reduce_check_axes(tirx__rule_ctx *ctx, uint64_t allowed, const char *why);
/* The dst placement check of the warp reductions (reduce_common.c): accept(ctx, x, p, q, nq,
 * arg) for each placement p of dst element x against the placements q of its group's first
 * source element; false (with the reason recorded) stops the check. */
typedef bool (*tirx__reduce_dst_fn)(tirx__rule_ctx *ctx, int64_t x, const tirx_coord *p,
                                    const tirx_coord *q, int64_t nq, int64_t arg);
void tirx__reduce_check_dst(tirx__rule_ctx *ctx, tirx__reduce_dst_fn accept, int64_t arg);
/* The lane bits a warp reduction covers, or -1 with the reason "... iter I <what>: ..." recorded
 * (reduce_common.c). */
int64_t tirx__reduce_lane_mask(tirx__rule_ctx *ctx, const char *what);
/* Whether a reduced iter is on lane bits: on laneid, or, in a warpgroup team, on tid_in_wg
 * bits 0..4 (inside one warp). */
bool tirx__reduce_is_lane_iter(const tirx__call *call, const tirx_iter *it);

/* ---- native statements that one family defines and others emit ---- */

typedef struct tirx__emit tirx__emit;

/* copy.vec's vector move (copy_vec.c): dst[index] = n elements from the load src; hints: */
enum {
  TIRX__VC_LD_CS = 1,   /* the source is global: ld.global.cs */
  TIRX__VC_ST_CS = 2,   /* the destination is global: st.global.cs */
  TIRX__VC_SRC_REG = 4, /* the source is a local array: element moves */
  TIRX__VC_DST_REG = 8, /* the destination is a local array: element moves */
  TIRX__VC_LD_NC = 16,  /* ld.global.nc */
  TIRX__VC_LD_LU = 32   /* ld.global.lu */
};
tirx__stmt *tirx__vcopy_stmt(tirx__emit *e, tirx_tensor *dst, tirx_expr **index, tirx_expr *src,
                             int n, int hints);

/* ldmatrix.x<n> (stmatrix with store) of copy_ldmatrix.c: t[index] this lane's shared row
 * address, regs[i] (loads of a local array) the first element of matrix i's register. */
extern const tirx__native_op tirx__nv_ldmatrix, tirx__nv_stmatrix;
tirx__stmt *tirx__matrix_stmt(tirx__emit *e, bool store, tirx_tensor *t, tirx_expr **index,
                              tirx_expr **regs, int n);

/* reduce.dsmem's cluster barrier and DSMEM store (reduce_dsmem.c), which reduce.smem's
 * lowering writes: barrier.cluster.arrive.release + wait.acquire by every thread; value (f32)
 * into shared element t[index] of the cluster's CTA rank (mapa + st.shared::cluster). */
void tirx__dsmem_cluster_barrier(tirx__emit *e);
void tirx__dsmem_store(tirx__emit *e, tirx_tensor *t, tirx_expr *const *index, tirx_expr *rank,
                       tirx_expr *value);

/* The rules themselves (tirx__rule_<file>) are declared by registry.c's list. */

#endif
