/*
 * src/dispatch: tile-primitive dispatch (paper section 5.4, DESIGN.md "Dispatch").
 *
 * A primitive call (tirx__call) forms a dispatch key
 *
 *     (primitive, target arch, storage roles of its operands, team kind, config.family)
 *
 * and the registry (registry.c: one explicit, ordered table; one file per rule under
 * families/) resolves it to a rule. Each rule describes its instruction as data (tirx__rule:
 * the key pattern it accepts, the arch features it needs, dtypes, rank, team completeness, the
 * ops it implements) plus two functions: a legality check that sees the operand layouts and the scope
 * and records every failed constraint as a sentence, and a shape enumerator that lists the
 * legal instruction shapes, largest first.
 *
 * Resolution (tirx__dispatch):
 *   - config.family set: the one rule of that family matching the key is forced. Unknown for
 *     the key: TIRX_E_NO_RULE naming the key. Illegal: TIRX_E_INVALID_ARG with its reasons.
 *   - otherwise the table is walked in order and the first legal candidate wins. The table
 *     lists, for every key, at most one default (specialised) rule before the registered
 *     fallbacks (tests/unit/dispatch/test_registry.c walks it). Rules of kind EXPLICIT are only
 *     ever taken through config.family (protocols such as TMA vs cp.async).
 *   - no candidate at all: TIRX_E_NO_RULE, "tirx_dispatch: no rule for copy(arch=sm_90,
 *     roles=global->shared, team=warp)". Candidates but none legal: TIRX_E_NO_RULE listing
 *     every candidate's failed constraints. A rule whose key pattern matches but whose
 *     features no target as old as the call's has (tirx__rule_min_arch) is no candidate (a
 *     successful dispatch does not list it), but a failure names it: "...: copy_async.tma:
 *     needs sm_90 or newer". A candidate whose target lacks one of its arch-specific features
 *     is rejected with a reason naming it: "needs wgmma (sm_90a only): the target is sm_90".
 *     The call's target features are tirx__arch_features(arch, generic ? 0 : 'a').
 *   - the shape: config.shape when it is one of the rule's legal shapes (else
 *     TIRX_E_INVALID_ARG listing the legal ones), otherwise the largest legal shape.
 * The result names the rule and shape, and for a fallback each rejected rule with its failed
 * constraints; results collect into a report (tirx__dispatch_report) rendered as text by
 * tirx__dispatch_report_str, which the builder, TIRX_DUMP_DIR and `tirx dump` will expose.
 *
 * Lowering. Each rule has an `emit` hook (tirx__emit_fn) that receives the builder's emitter
 * (a tirx__lower, lower.h: the insertion point is the primitive statement's body) and writes
 * the residual loops around the chosen instruction as native IR. Every rule of the table is
 * lowered (each in its family file, with elementwise.c shared); a rule
 * with emit == NULL would make tirx_kernel_build report "rule X has no lowering yet" when
 * dispatch picks it. Dispatch itself stays a pure function of the call description (the CPU
 * tests use it on its own).
 *
 * Conventions for operands. Operand 0 is the destination; the sources follow in the order of
 * tirx__prim_operand_name() (copy: dst, src; binary: dst, a, b; select: dst, cond, a, b;
 * fill: dst, value; reduce: dst, src). A region operand carries its layout grouped to the
 * region's logical shape (what tirx_layout_slice returns). Global and shared layouts are on m
 * (thread axes, such as a cluster-sharded global tensor's cbx, are ignored by the memory
 * checks); local layouts place elements on reg (or m) and on thread axes, as tirx_alloc_local
 * takes them. A scalar operand (an expression broadcast to the tile) has role SCALAR and no
 * layout. Base pointers of global tensors are assumed 16-byte aligned: the lowering records
 * the widest vector access of each global tensor (tirx_tensor.vec_bytes) and the launch plan
 * requires that alignment of the argument; offsets inside a tensor are part of the layout and
 * are checked here.
 *
 * Everything this module allocates lives in the arena passed to tirx__dispatch.
 */
#ifndef TIRX_DISPATCH_H
#define TIRX_DISPATCH_H

#include "../core/internal.h"
#include "../ir/native.h" /* tirx__prelude_frag */

/* ---- The call -------------------------------------------------------------------------------- */

/* Primitive kinds. Values index name tables; new kinds are appended. */
typedef enum tirx__prim {
  TIRX__PRIM_COPY = 0,
  TIRX__PRIM_UNARY = 1,   /* pointwise, one source:    dst = op(a)       */
  TIRX__PRIM_BINARY = 2,  /* pointwise, two sources:   dst = op(a, b)    */
  TIRX__PRIM_TERNARY = 3, /* pointwise, three sources: dst = op(a, b, c) */
  TIRX__PRIM_CAST = 4,
  TIRX__PRIM_FILL = 5,
  TIRX__PRIM_SELECT = 6,
  TIRX__PRIM_REDUCE = 7,
  TIRX__PRIM_COPY_ASYNC = 8,  /* copy_async.tma, copy_async.cp_async (families/copy_*.c) */
  TIRX__PRIM_GEMM = 9,        /* gemm.mma, gemm.scalar (families/gemm_*.c) */
  TIRX__PRIM_GEMM_ASYNC = 10, /* gemm_async.wgmma, gemm_async.wgmma_rs (families/gemm_wgmma.c) */
  TIRX__PRIM_COUNT = 11
} tirx__prim;

/* Where an operand lives. SCALAR is an expression broadcast over the tile (no layout). */
typedef enum tirx__role {
  TIRX__ROLE_GLOBAL = 0,
  TIRX__ROLE_SHARED = 1,
  TIRX__ROLE_LOCAL = 2, /* registers (a thread's local array) */
  TIRX__ROLE_SCALAR = 3,
  TIRX__ROLE_COUNT = 4
} tirx__role;

/*
 * Operation codes of pointwise and reduce primitives. Internal until the builder's public
 * primitive API names them; the builder will translate its enums to these.
 */
#define TIRX__PRIM_OP_MAP(X)                                                                       \
  X(NONE, "none")                                                                                  \
  X(ADD, "add")                                                                                    \
  X(SUB, "sub")                                                                                    \
  X(MUL, "mul")                                                                                    \
  X(DIV, "div")                                                                                    \
  X(MAX, "max")                                                                                    \
  X(MIN, "min")                                                                                    \
  X(FMA, "fma")                                                                                    \
  X(NEG, "neg")                                                                                    \
  X(ABS, "abs")                                                                                    \
  X(EXP, "exp")                                                                                    \
  X(EXP2, "exp2")                                                                                  \
  X(LOG, "log")                                                                                    \
  X(SQRT, "sqrt")                                                                                  \
  X(RSQRT, "rsqrt")                                                                                \
  X(TANH, "tanh")                                                                                  \
  X(SIGMOID, "sigmoid")                                                                            \
  X(SUM, "sum")                                                                                    \
  X(SUMSQ, "sumsq")                                                                                \
  X(PROD, "prod")                                                                                  \
  X(SILU, "silu")                                                                                  \
  X(GELU, "gelu")                                                                                  \
  X(COPY, "copy")                                                                                  \
  X(EXP2_APPROX, "exp2_approx")
typedef enum tirx__prim_op {
#define TIRX__PRIM_OP_ENUM_(name, text) TIRX__PRIM_OP_##name,
  TIRX__PRIM_OP_MAP(TIRX__PRIM_OP_ENUM_)
#undef TIRX__PRIM_OP_ENUM_
  TIRX__PRIM_OP_COUNT
} tirx__prim_op;

/* Cache hints of memory accesses (PTX ld/st qualifiers). Only global accesses take them. */
typedef enum tirx__hint {
  TIRX__HINT_NONE = 0,
  TIRX__HINT_STREAM = 1,   /* .cs: evict first, for data read or written once */
  TIRX__HINT_LAST_USE = 2, /* .lu: the last read of this data */
  TIRX__HINT_NC = 3,       /* ld.global.nc: read-only path */
  TIRX__HINT_COUNT = 4
} tirx__hint;

enum {
  TIRX__MAX_OPERANDS = 4, /* dst + up to three sources */
  TIRX__SHAPE_DIMS = 3,   /* dimensions of an instruction shape */
  TIRX__MAX_REASONS = 16, /* failed constraints recorded per rule */
  TIRX__MAX_SHAPES = 16   /* legal shapes a rule may list */
};

/* An instruction shape: v[k] along the rule's shape_dims[k]; unused dims are 0. An all-zero
 * shape in a config means "choose the largest legal one". */
typedef struct tirx__shape {
  int64_t v[TIRX__SHAPE_DIMS];
} tirx__shape;

/* One operand: a region view. layout is NULL exactly for role SCALAR. Borrowed. */
typedef struct tirx__operand {
  const tirx_layout *layout;
  tirx_dtype dtype;
  tirx__role role;
} tirx__operand;

typedef struct tirx__config {
  const char *family;   /* NULL: let the registry choose; else force that family */
  tirx__shape shape;    /* all zero: the largest legal shape */
  tirx__prim_op op;     /* pointwise and reduce */
  uint32_t reduce_axes; /* reduce: bit k = logical dim k of the source is reduced */
  bool accumulate;      /* reduce/gemm: combine with the destination's old value */
  tirx__hint hint;      /* cache hint for global accesses */
  bool barrier;         /* copy_async: completes on an mbarrier (TMA's protocol; else groups) */
} tirx__config;

typedef struct tirx__call {
  tirx__prim prim;
  int arch;      /* compute capability * 10 + minor: 80, 90, 100 */
  bool generic;  /* the target lacks the arch-specific features: "sm_90", not "sm_90a" (an
                  * "f" target is dispatched as generic: no rule needs a family feature) */
  int noperands; /* must equal tirx__prim_operand_count(prim) */
  tirx__operand operands[TIRX__MAX_OPERANDS];
  const tirx_scope *scope; /* team kind and (A_inter, A_intra) at the call site */
  tirx__config config;
  const char *where; /* optional label for reports (statement, source line); borrowed */
  /* copy_async: what the builder knows of the global operand (strides, extents, begins);
   * NULL: the global operand's layout strides are taken as known constants, its extents as
   * known only at launch (tma.h). Borrowed. */
  const struct tirx__tma_global *tma;
} tirx__call;

/* "copy", "unary", ...; NULL outside the enum. Static. */
const char *tirx__prim_name(tirx__prim p);
/* Operands a primitive takes (dst included); 0 outside the enum. */
int tirx__prim_operand_count(tirx__prim p);
/* The name of operand i of p ("dst", "src", "a", "cond", ...); NULL out of range. Static. */
const char *tirx__prim_operand_name(tirx__prim p, int i);
/* "global", "shared", "local", "scalar"; NULL outside the enum. Static. */
const char *tirx__role_name(tirx__role r);
/* "add", "sumsq", ...; NULL outside the enum. Static. */
const char *tirx__prim_op_name(tirx__prim_op op);
/* ".cs", ".lu", ".nc" ("" for NONE); NULL outside the enum. Static. */
const char *tirx__hint_name(tirx__hint h);

/* ---- Rules ----------------------------------------------------------------------------------- */

#define TIRX__BIT(k) (UINT32_C(1) << (k))
/* A data flow: one source role into the destination role. A rule's `flows` is a mask of these;
 * a call matches when every (source role, dst role) pair is in it. */
#define TIRX__FLOW(src, dst) TIRX__BIT((src)*TIRX__ROLE_COUNT + (dst))
#define TIRX__TEAMS_ALL 0x1fu

typedef enum tirx__rule_kind {
  TIRX__RULE_DEFAULT = 0,  /* the specialised rule of its keys: at most one per key */
  TIRX__RULE_FALLBACK = 1, /* tried in table order after the default */
  TIRX__RULE_EXPLICIT = 2  /* only through config.family */
} tirx__rule_kind;

/* Constraints every rule declares as data; tirx__dispatch checks them before rule->check and
 * words the failures the same way for every rule. Zero means "no constraint". */
typedef struct tirx__needs {
  uint32_t dtypes; /* accepted dtypes of region operands, TIRX__BIT(tirx_dtype) */
  int rank;        /* logical rank of every region operand */
  bool full_team;  /* every thread of the team kind active (a full warp of 32, ...) */
  bool hints;      /* accepts config.hint */
  uint64_t ops;    /* accepted config.op, bit per tirx__prim_op */
  /* The arch features (internal.h) the rule's instructions need: TIRX__FEAT(TMA) | ... Its
   * oldest arch is the newest `since` among them (tirx__rule_min_arch). */
  tirx__features features;
} tirx__needs;

typedef struct tirx__rule tirx__rule;
typedef struct tirx__rule_ctx tirx__rule_ctx;

/* Records failed constraints through tirx__reason; no reason means legal. Called only when the
 * rule's data constraints (tirx__needs) hold, so it may rely on them (rank, dtypes). */
typedef void (*tirx__check_fn)(tirx__rule_ctx *ctx);

/* Writes the legal instruction shapes of a legal call into out[cap], largest first, and
 * returns how many (at least 1). Called only after the checks passed, with the same ctx. */
typedef int (*tirx__shapes_fn)(tirx__rule_ctx *ctx, tirx__shape *out, int cap);

/*
 * The lowering hook: writes the residual loops and the chosen instruction for `call` at the
 * emitter's insertion point; `emitter` is a tirx__lower (lower.h). TIRX_OK or the error
 * recorded on the builder.
 */
typedef tirx_status (*tirx__emit_fn)(const tirx__rule *rule, const tirx__call *call,
                                     const tirx__shape *shape, void *emitter);

struct tirx__rule {
  const char *name;    /* "copy.vec": what reports print */
  const char *family;  /* "vec": what config.family names */
  const char *summary; /* one line: the instruction */
  tirx__rule_kind kind;
  /* Key pattern. */
  uint32_t prims; /* TIRX__BIT(tirx__prim) */
  uint32_t flows; /* TIRX__FLOW(src role, dst role) */
  /* Optional, per operand: TIRX__BIT(tirx__role) of the roles operand i may have, for keys
   * that flows cannot tell apart (gemm_async's a in registers and b in shared memory, not the
   * other way round); 0 leaves operand i to flows. */
  uint32_t roles[TIRX__MAX_OPERANDS];
  uint32_t teams; /* TIRX__BIT(tirx_team) */
  tirx__needs needs;
  const char *shape_dims[TIRX__SHAPE_DIMS]; /* names of the shape's dims, NULL after the last */
  tirx__check_fn check;                     /* NULL: the data constraints are all */
  tirx__shapes_fn shapes;                   /* NULL: the single shape {1} */
  tirx__emit_fn emit; /* NULL: lowering not written yet (an error when chosen) */
  /* Prelude fragments of the rule's family that go by section (tirx__prelude_frag.when: every
   * kernel's, or the sections a kernel uses) rather than by the ops a kernel emits;
   * NULL-terminated, NULL: none. Codegen reads them through the registry. */
  const tirx__prelude_frag *const *prelude;
};

/* The oldest compute capability the rule can run on: tirx__features_min_arch of its
 * features (0: any). */
int tirx__rule_min_arch(const tirx__rule *rule);

/* The arch features a call needs whatever rule serves it: cluster when an operand's layout
 * places elements on cbx (the lowering reads the coordinate from %cluster_ctarank). */
tirx__features tirx__call_features(const tirx__call *call);

/* The registry: the ordered table of registry.c. *count is set; the array is static. */
const tirx__rule *const *tirx__registry(int *count);

/* Whether rule's key pattern accepts (prim, arch, roles of the call's operands, team): every
 * (source role, dst role) pair in flows and, where the rule names them, each operand's role in
 * roles[i]. */
bool tirx__rule_matches(const tirx__rule *rule, tirx__prim prim, int arch, int noperands,
                        const tirx__role *roles, tirx_team team);

/* ---- Dispatch -------------------------------------------------------------------------------- */

typedef struct tirx__rejection {
  const tirx__rule *rule;
  int nreasons;
  const char **reasons; /* arena strings */
} tirx__rejection;

typedef struct tirx__dispatch_result {
  const char *key;        /* "copy(arch=sm_90, roles=global->shared, team=warp)", arena */
  const char *where;      /* the call's label, copied into the arena, or NULL */
  const tirx__rule *rule; /* NULL when dispatch failed */
  tirx__shape shape;
  bool forced;   /* chosen through config.family */
  bool fallback; /* some candidate was rejected before rule */
  int nrejected;
  tirx__rejection *rejected; /* in table order */
} tirx__dispatch_result;

/*
 * Resolves call to a rule and shape. *out is always filled (on failure: rule NULL, the key,
 * and every rejected candidate), its strings in arena a. Errors, the message starting with
 * "tirx_dispatch: ": TIRX_E_NULL_ARG, TIRX_E_INVALID_ARG (malformed call: operand count,
 * roles, missing layouts, shapes that disagree, reduce axes; an illegal forced family or
 * requested shape), TIRX_E_TYPE (copy between dtypes), TIRX_E_NO_RULE (no rule for the key,
 * or no candidate legal), TIRX_E_NO_MEMORY.
 */
tirx_status tirx__dispatch(tirx_arena *a, const tirx__call *call, tirx__dispatch_result *out);

/* The key of a call as text, arena-allocated; NULL on bad input (the key of an invalid call
 * is still rendered where its fields are in range). */
const char *tirx__dispatch_key_str(tirx_arena *a, const tirx__call *call);

/* A shape as text with the rule's dim names: "vec=8", "vec=8,pack=2". Malloc'ed. */
char *tirx__shape_str(const tirx__rule *rule, const tirx__shape *shape);

/* ---- Report ---------------------------------------------------------------------------------- */

/* Every call's result, in call order. Lives in its arena; results are copied in. */
typedef struct tirx__dispatch_report {
  tirx_arena *arena;
  int n, cap;
  tirx__dispatch_result *entries;
} tirx__dispatch_report;

void tirx__dispatch_report_init(tirx__dispatch_report *r, tirx_arena *a);
/* Appends a copy of res (the pointers it holds must live as long as the report's arena).
 * TIRX_E_NO_MEMORY. */
tirx_status tirx__dispatch_report_add(tirx__dispatch_report *r, const tirx__dispatch_result *res);

/*
 * The report as text, malloc'ed (the caller frees it); NULL when out of memory. One line per
 * call, then one indented line per failed constraint of each rejected rule:
 *
 *   copy(arch=sm_90, roles=global->local, team=warp) -> copy.vec vec=4
 *   reduce(arch=sm_90, roles=local->local, team=warp) -> reduce.scalar vec=1 (fallback)
 *     rejected reduce.shuffle: src dtype f16 is not one of f32, f64, i32, u32, i64
 *
 * A call's label, when it has one, starts its line: "[row_norm:12] copy(...)". A failed call
 * reads "-> no rule".
 */
char *tirx__dispatch_report_str(const tirx__dispatch_report *r);

/* ---- For rule files -------------------------------------------------------------------------- */

/* What a rule's check and shapes functions see. */
struct tirx__rule_ctx {
  const tirx__call *call;
  const tirx__rule *rule;
  tirx_arena *arena;
  int nreasons;
  const char *reasons[TIRX__MAX_REASONS];
  int64_t scratch[8]; /* for a rule's check to pass results to its shapes function */
};

/* Records one failed constraint (a sentence without a final period). Past TIRX__MAX_REASONS
 * the extra ones are counted in the last entry. */
void tirx__reason(tirx__rule_ctx *ctx, const char *fmt, ...) TIRX_PRINTF(2, 3);

/* The operand's name for messages ("src", "dst", "a"). */
const char *tirx__rule_operand_name(const tirx__rule_ctx *ctx, int i);

/*
 * The widest legal vector access of operand i, in elements, at most max_bytes: for global and
 * shared operands the vector width of its storage view on m (tirx_layout_storage_view +
 * tirx_layout_vector_width); for local operands the same question asked of one thread's
 * slots (reg, or m for an array on m), thread axes turned into broadcasts. 0 for a scalar
 * operand (no constraint), and 1 when nothing wider is legal (or on failure).
 */
int64_t tirx__operand_vector_width(tirx__rule_ctx *ctx, int i, int max_bytes);

/* Why operand i has vector width 1: "innermost run not contiguous on m" and the like. */
const char *tirx__operand_vector_why(tirx__rule_ctx *ctx, int i);

/* The layout of operand i as one thread's slots on m (see tirx__operand_vector_width); for a
 * memory operand its storage view on m. NULL on failure. */
const tirx_layout *tirx__operand_slots(tirx__rule_ctx *ctx, int i);

/* The canonical form of a layout into ctx's arena (grouping kept), for rules that walk iters. */
const tirx_layout *tirx__canon_of(tirx__rule_ctx *ctx, const tirx_layout *l);

/*
 * The widest vector (in elements, a power of two) every region operand allows, each access at
 * most max_bytes; ctx->scratch is untouched. When it is below min_elems, one reason per
 * operand that is too narrow: "src vector width 1 < 2 elements: innermost run not contiguous
 * on m". Scalar operands do not constrain it; a call with no region operand gives max_bytes /
 * the dst element size.
 */
int64_t tirx__common_vector_width(tirx__rule_ctx *ctx, int max_bytes, int64_t min_elems);

/* One reduced iter of a reduce call's source, from its canonical form (grouping kept, so
 * iters of one logical dim are merged where they can be). Iters of extent 1 are skipped. */
typedef struct tirx__reduced_iter {
  int dim;
  tirx_iter iter;
} tirx__reduced_iter;

/* The reduced iters of operand 1 (src) of a reduce call into out[cap]; returns the count. */
int tirx__reduced_iters(tirx__rule_ctx *ctx, tirx__reduced_iter *out, int cap);

/* An iter as text, "(4):(1@warpid)", into buf. */
const char *tirx__iter_text(char *buf, size_t cap, const tirx_iter *it);

/* Bit masks of axes. */
#define TIRX__AXIS_BIT(ax) (UINT64_C(1) << (ax))
#define TIRX__AXES_MEMORY (TIRX__AXIS_BIT(TIRX_AXIS_M) | TIRX__AXIS_BIT(TIRX_AXIS_REG))

#endif
