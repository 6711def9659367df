/*
 * The table of native statements: one row per op (TIRX__NATIVE_OPS below). A row says
 *
 *   - the op's name as the IR prints it, and the prelude helper codegen calls;
 *   - its arch need: the features of the compile target its helper needs (TIRX__NEED);
 *   - the prelude fragment its helper lives in (TIRX__PRE_*);
 *   - its operands: kind and place in the op's payload (tirx__native_stmt in ir.h), which
 *     validation (builder/build.c) walks;
 *   - how it prints and how it emits: a format string (below) or, where one is not enough, a
 *     function of native.c.
 *
 * The enum tirx__native, the printer, codegen and the build-time checks read this table; the
 * constructor (tirx__b_native, builder/stmt.c) records the row's need and prelude fragment.
 * Adding a native op is one row here, its payload in ir.h when no existing one fits, and its
 * helper's text in the prelude (jit/prelude.c).
 *
 * Formats: text is copied; $0..$4 is operand i by its kind (an element or a load: "t[i, j]"
 * in the IR, "&t[offset]" in C++; an expression; an integer; a tensor: its name); $n is the
 * row's name, $h its helper; {...} is printed only when every operand it names is non-NULL.
 * Printing and emitting end without the newline, which the caller adds.
 */
#ifndef TIRX_IR_NATIVE_H
#define TIRX_IR_NATIVE_H

#include "../core/internal.h"

/* The prelude fragments a native op's helper needs (codegen appends each once). */
enum {
  TIRX__PRE_NONE = 0,
  TIRX__PRE_TMA = 1,      /* tirx__prelude_tma: TMA, bulk groups, cluster registers */
  TIRX__PRE_CP_ASYNC = 2, /* tirx__prelude_cp_async */
  TIRX__PRE_SYNC = 4      /* tirx__prelude_sync (after tirx__prelude_tma) and the wgmma helpers */
};

/* What an op needs of the compile target: a set of arch features (core/internal.h,
 * TIRX__FEATURE_MAP), TIRX__NEED(TIRX__FEAT(TMA) | TIRX__FEAT(MBARRIER)); 0 runs anywhere. */
#define TIRX__NEED(features) ((tirx__features)(features))

/* Operand kinds (validation walks them; the formats print them). */
typedef enum tirx__opnd_kind {
  TIRX__OPND_NONE = 0,
  TIRX__OPND_ELEM,   /* tirx__elem: an element of a tensor */
  TIRX__OPND_LOAD,   /* tirx_expr *: a load, printed as its element (NULL: absent) */
  TIRX__OPND_EXPR,   /* tirx_expr *: a value (NULL: absent) */
  TIRX__OPND_LOADS,  /* tirx_expr **: count loads; count the int32_t at .count */
  TIRX__OPND_TENSOR, /* tirx_tensor *: a whole tensor */
  TIRX__OPND_IMM     /* int32_t: a constant */
} tirx__opnd_kind;

typedef struct tirx__opnd {
  uint8_t kind;   /* tirx__opnd_kind */
  uint16_t at;    /* offset in tirx__native_stmt */
  uint16_t count; /* LOADS: offset of the int32_t count */
} tirx__opnd;

enum { TIRX__NATIVE_MAX_OPS = 5 };

/*
 * The rows: X(id, name, helper, need, prelude, operands, print format, print function, emit
 * format, emit function). Operands: OPS(...) of ELEM(f), LOAD(f), EXPR(f), LOADS(f, count),
 * TENSOR(f), IMM(f), side by side without commas, f a member path of tirx__native_stmt.
 * Needs: the public statements' own; a rule's lowering records the rule's declared features
 * instead (tirx__b_lowered_native), and the lowering driver checks that they cover the rows it
 * wrote (src/dispatch/lower_driver.c).
 */
#define TIRX__NATIVE_OPS(X)                                                                     \
  /* ---- mbarriers, fences, clusters (builder/sync.c) ---- */                                \
  X(MBAR_INIT, "mbarrier_init", "tirx_mbar_init", TIRX__NEED(TIRX__FEAT(MBARRIER)), TIRX__PRE_SYNC,      \
    OPS(ELEM(mbar.bar) EXPR(mbar.value)), "$n($0, $1)", NULL, "$h($0, $1);", NULL)            \
  X(MBAR_ARRIVE, "mbarrier_arrive", "tirx_mbar_arrive", TIRX__NEED(TIRX__FEAT(MBARRIER)), TIRX__PRE_SYNC,\
    OPS(ELEM(mbar.bar)), "$n($0)", NULL, "$h($0);", NULL)                                      \
  X(MBAR_ARRIVE_CLUSTER, "mbarrier_arrive_cluster", "tirx_mbar_arrive_cluster",               \
    TIRX__NEED(TIRX__FEAT(MBARRIER) | TIRX__FEAT(CLUSTER)), TIRX__PRE_SYNC, OPS(ELEM(mbar.bar) EXPR(mbar.value)),             \
    "$n($0, $1)", NULL, "$h($0, $1);", NULL)                                                   \
  X(MBAR_EXPECT_TX, "mbarrier_expect_tx", "tirx_mbar_expect_tx", TIRX__NEED(TIRX__FEAT(MBARRIER)),       \
    TIRX__PRE_SYNC, OPS(ELEM(mbar.bar) EXPR(mbar.value)), "$n($0, $1)", NULL, "$h($0, $1);", \
    NULL)                                                                                      \
  X(MBAR_WAIT, "mbarrier_wait", "tirx_mbar_wait", TIRX__NEED(TIRX__FEAT(MBARRIER)), TIRX__PRE_SYNC,      \
    OPS(ELEM(mbar.bar) EXPR(mbar.value)), "$n($0, $1)", NULL, "$h($0, $1);", NULL)            \
  X(FENCE_PROXY_ASYNC, "fence_proxy_async", "tirx_fence_proxy_async", TIRX__NEED(TIRX__FEAT(TMA)),  \
    TIRX__PRE_SYNC, OPS(), "$n()", NULL, "$h();", NULL)                                        \
  X(FENCE_MBAR_INIT, "fence_mbarrier_init", "tirx_fence_mbarrier_init", TIRX__NEED(TIRX__FEAT(MBARRIER)),\
    TIRX__PRE_SYNC, OPS(), "$n()", NULL, "$h();", NULL)                                        \
  X(CLUSTER_SYNC, "cluster_sync", "tirx_cluster_sync", TIRX__NEED(TIRX__FEAT(CLUSTER)), TIRX__PRE_SYNC, \
    OPS(), "$n()", NULL, "$h();", NULL)                                                        \
  /* ---- setmaxnreg, named barriers, wgmma groups (builder/sync.c) ---- */                   \
  X(SETMAXNREG_INC, "setmaxnreg.inc", "tirx_setmaxnreg_inc", TIRX__NEED(TIRX__FEAT(SETMAXNREG)),            \
    TIRX__PRE_SYNC, OPS(IMM(setmaxnreg.regs)), "$n $0", NULL, "$h<$0>();", NULL)               \
  X(SETMAXNREG_DEC, "setmaxnreg.dec", "tirx_setmaxnreg_dec", TIRX__NEED(TIRX__FEAT(SETMAXNREG)),            \
    TIRX__PRE_SYNC, OPS(IMM(setmaxnreg.regs)), "$n $0", NULL, "$h<$0>();", NULL)               \
  X(NAMED_BAR_SYNC, "named_barrier_sync", "tirx_named_bar_sync", TIRX__NEED(0),        \
    TIRX__PRE_SYNC, OPS(IMM(named_bar.id) IMM(named_bar.threads)), "$n($0, $1)", NULL,        \
    "$h($0, $1);", NULL)                                                                       \
  X(NAMED_BAR_ARRIVE, "named_barrier_arrive", "tirx_named_bar_arrive", TIRX__NEED(0),  \
    TIRX__PRE_SYNC, OPS(IMM(named_bar.id) IMM(named_bar.threads)), "$n($0, $1)", NULL,        \
    "$h($0, $1);", NULL)                                                                       \
  X(WGMMA_FENCE, "wgmma_fence", "tirx_wgmma_fence", TIRX__NEED(TIRX__FEAT(WGMMA)), TIRX__PRE_SYNC,     \
    OPS(), "$n()", NULL, "$h();", NULL)                                                        \
  X(WGMMA_COMMIT, "wgmma_commit", "tirx_wgmma_commit", TIRX__NEED(TIRX__FEAT(WGMMA)), TIRX__PRE_SYNC,  \
    OPS(), "$n()", NULL, "$h();", NULL)                                                        \
  X(WGMMA_WAIT, "wgmma_wait", "tirx_wgmma_wait", TIRX__NEED(TIRX__FEAT(WGMMA)), TIRX__PRE_SYNC,        \
    OPS(IMM(wait.n)), "$n($0)", NULL, NULL, emit_wgmma_wait)                                   \
  /* ---- tensor cores (dispatch/families/gemm_*.c) ---- */                                        \
  X(WGMMA, "wgmma", "tirx_wgmma", TIRX__NEED(TIRX__FEAT(WGMMA)), TIRX__PRE_SYNC,                       \
    OPS(LOAD(wgmma.acc) EXPR(wgmma.a) LOAD(wgmma.b) EXPR(wgmma.scale_d)), NULL,            \
    print_wgmma, NULL, emit_wgmma)                                                             \
  X(MMA, "mma.m16n8k16", "tirx_mma_m16n8k16", TIRX__NEED(TIRX__FEAT(MMA_SYNC)), TIRX__PRE_SYNC,          \
    OPS(LOAD(mma.c) LOAD(mma.a) LOAD(mma.b) EXPR(mma.accumulate)), NULL, print_mma,        \
    "$h($0, $1, $2, $3);", NULL)                                                               \
  X(FENCE_REGS, "fence_regs", "tirx_fence_regs", TIRX__NEED(0), TIRX__PRE_SYNC,        \
    OPS(TENSOR(fence_regs.regs)), NULL, print_fence_regs, NULL, emit_fence_regs)              \
  /* ---- TMA and bulk groups (dispatch/families/copy_tma.c, builder/bulk.c) ---- */           \
  X(TMA_LOAD, "tma_load", "tirx_tma_load", TIRX__NEED(TIRX__FEAT(TMA) | TIRX__FEAT(MBARRIER)), TIRX__PRE_TMA,              \
    OPS(ELEM(tma.smem) LOADS(tma.coords, tma.rank) LOAD(tma.bar) EXPR(tma.multicast)),     \
    NULL, print_tma, NULL, emit_tma_load)                                                      \
  X(TMA_STORE, "tma_store", "tirx_tma_store", TIRX__NEED(TIRX__FEAT(TMA)), TIRX__PRE_TMA,           \
    OPS(ELEM(tma.smem) LOADS(tma.coords, tma.rank)), NULL, print_tma, NULL, emit_tma_store)  \
  X(BULK_COMMIT, "bulk_commit", "tirx_bulk_commit", TIRX__NEED(TIRX__FEAT(TMA)), TIRX__PRE_TMA,     \
    OPS(), "$n", NULL, "$h();", NULL)                                                          \
  X(BULK_WAIT, "bulk_wait", "tirx_bulk_wait", TIRX__NEED(TIRX__FEAT(TMA)), TIRX__PRE_TMA,           \
    OPS(IMM(wait.n)), "$n $0", NULL, "$h<$0, 0>();", NULL)                                     \
  X(BULK_WAIT_READ, "bulk_wait.read", "tirx_bulk_wait", TIRX__NEED(TIRX__FEAT(TMA)), TIRX__PRE_TMA, \
    OPS(IMM(wait.n)), "$n $0", NULL, "$h<$0, 1>();", NULL)                                     \
  X(TMAP_PREFETCH, "tmap_prefetch", "tirx_tmap_prefetch", TIRX__NEED(TIRX__FEAT(TMA)),              \
    TIRX__PRE_TMA, OPS(TENSOR(prefetch.tensor)), "$n $0", NULL, NULL, emit_prefetch)          \
  /* reduce.dsmem's cluster barrier and DSMEM store (families/reduce_smem.c, builder/bulk.c) */\
  X(TMA_CLUSTER_SYNC, "cluster_sync", "tirx_cluster_sync_all", TIRX__NEED(TIRX__FEAT(CLUSTER)),         \
    TIRX__PRE_TMA, OPS(), "$n", NULL, "$h();", NULL)                                           \
  X(DSMEM_STORE, "dsmem_store", "tirx_dsmem_st_f32", TIRX__NEED(TIRX__FEAT(CLUSTER)), TIRX__PRE_TMA,    \
    OPS(ELEM(dsmem.dst) EXPR(dsmem.cta) EXPR(dsmem.value)), "$n $0 of cta $1 = $2", NULL,   \
    "$h($0, (unsigned)($1), $2);", NULL)                                                       \
  /* ---- cp.async (builder/cp_async.c) ---- */                                               \
  X(CP_ASYNC, "cp_async", "tirx_cp_async", TIRX__NEED(TIRX__FEAT(CP_ASYNC)), TIRX__PRE_CP_ASYNC,         \
    OPS(ELEM(cp_async.dst) LOAD(cp_async.src) EXPR(cp_async.src_bytes)                     \
        IMM(cp_async.bytes)),                                                                  \
    "$n.$3 $0 <- $1{ zfill past $2}", NULL, "$h<$3>($0, $1{, (unsigned)($2)});", NULL)         \
  X(CP_ASYNC_COMMIT, "cp_async_commit", "tirx_cp_async_commit", TIRX__NEED(TIRX__FEAT(CP_ASYNC)),        \
    TIRX__PRE_CP_ASYNC, OPS(), "$n", NULL, "$h();", NULL)                                      \
  X(CP_ASYNC_WAIT, "cp_async_wait", "tirx_cp_async_wait", TIRX__NEED(TIRX__FEAT(CP_ASYNC)),              \
    TIRX__PRE_CP_ASYNC, OPS(IMM(wait.n)), "$n $0", NULL, "$h<$0>();", NULL)                    \
  X(CP_ASYNC_WAIT_ALL, "cp_async_wait_all", "tirx_cp_async_wait_all", TIRX__NEED(TIRX__FEAT(CP_ASYNC)),  \
    TIRX__PRE_CP_ASYNC, OPS(), "$n", NULL, "$h();", NULL)                                      \
  /* ---- vector moves, ldmatrix/stmatrix, packed math (dispatch/lower*.c; prelude core) ---- */\
  X(VCOPY, "vec", "tirx_vcopy", TIRX__NEED(0), TIRX__PRE_NONE,                         \
    OPS(ELEM(vcopy.dst) LOAD(vcopy.src)), NULL, print_vcopy, NULL, emit_vcopy)               \
  X(LDMATRIX, "ldmatrix", "tirx_ldmatrix", TIRX__NEED(TIRX__FEAT(LDMATRIX)), TIRX__PRE_NONE,              \
    OPS(ELEM(matrix.row) LOADS(matrix.regs, matrix.n)), NULL, print_matrix, NULL,            \
    emit_matrix)                                                                               \
  X(STMATRIX, "stmatrix", "tirx_stmatrix", TIRX__NEED(TIRX__FEAT(STMATRIX)), TIRX__PRE_NONE,              \
    OPS(ELEM(matrix.row) LOADS(matrix.regs, matrix.n)), NULL, print_matrix, NULL,            \
    emit_matrix)                                                                               \
  X(PACKED, "x2", "tirx_x2", TIRX__NEED(0), TIRX__PRE_NONE,                            \
    OPS(ELEM(packed.dst) EXPR(packed.src[0]) EXPR(packed.src[1]) EXPR(packed.src[2])),    \
    NULL, print_packed, NULL, emit_packed)

typedef enum tirx__native {
#define TIRX__NATIVE_ENUM(id, ...) TIRX__NV_##id,
  TIRX__NATIVE_OPS(TIRX__NATIVE_ENUM)
#undef TIRX__NATIVE_ENUM
  TIRX__NV_COUNT
} tirx__native;

#endif
