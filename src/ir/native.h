/*
 * Native statements: a native statement points to its op (tirx__native_op below), a
 * descriptor that says
 *
 *   - the op's name as the IR prints it, and the prelude helper codegen calls;
 *   - its arch need: the features of the compile target its helper needs (one field,
 *     TIRX__NEED);
 *   - the prelude section its helper lives in (TIRX__PRE_*), and the prelude fragments only it
 *     needs (emitted in kernels that use the op);
 *   - its payload's size and its operands: kind and offset in the payload, which validation
 *     (builder/build.c) walks;
 *   - how it prints and how it emits: a format string (below) or a function;
 *   - optional codegen hooks: a run of statements one emission joins, and what a walk over the
 *     kernel collects (helper variants of a generated fragment, registers to fence after a
 *     wait).
 *
 * The payload's struct is the op's owner's: the generic ops of the public builder API
 * (mbarriers, fences, cluster sync, setmaxnreg, named barriers, wgmma groups, bulk groups,
 * tensor-map prefetch, cp.async groups) are defined in native.c with the payloads below; an op
 * that only one instruction family's lowering emits lives in that family's file
 * (src/dispatch/families/), with its payload, its print and emit functions and its prelude
 * text. Generic code never names one.
 *
 * Formats: text is copied; $0..$4 is operand i by its kind (an element or a load: "t[i, j]"
 * in the IR, "&t[offset]" in C++; an expression; an integer; a tensor: its name); $n is the
 * op's name, $h its helper; {...} is printed only when every operand it names is non-NULL.
 * Printing and emitting end without the newline, which the caller adds.
 */
#ifndef TIRX_IR_NATIVE_H
#define TIRX_IR_NATIVE_H

#include <stddef.h>

#include "../core/internal.h"

/* The prelude's sections (codegen appends the fragments of the sections a kernel uses). */
enum {
  TIRX__PRE_NONE = 0,
  TIRX__PRE_BULK = 1,     /* sm_90 tensor maps, bulk groups, cluster registers */
  TIRX__PRE_CP_ASYNC = 2, /* cp.async groups */
  TIRX__PRE_SYNC = 4,     /* mbarriers, fences, named barriers, warpgroup groups */
  TIRX__PRE_ALWAYS = 0x80 /* a fragment's `when`: every kernel */
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
  uint16_t at;    /* offset in the op's payload */
  uint16_t count; /* LOADS: offset of the int32_t count */
} tirx__opnd;

/* Operands $0 .. $9 of a format (an e4m3 store of eight values has nine). */
enum { TIRX__NATIVE_MAX_OPS = 10 };

/* Operand lists: .ops = {TIRX__ELEM(T, f), TIRX__EXPR(T, g)}, T the payload's struct. */
#define TIRX__OPND_AT(k, T, f) {TIRX__OPND_##k, (uint16_t)offsetof(T, f), 0}
#define TIRX__ELEM(T, f) TIRX__OPND_AT(ELEM, T, f)
#define TIRX__LOAD(T, f) TIRX__OPND_AT(LOAD, T, f)
#define TIRX__EXPR(T, f) TIRX__OPND_AT(EXPR, T, f)
#define TIRX__TENSOR(T, f) TIRX__OPND_AT(TENSOR, T, f)
#define TIRX__IMM(T, f) TIRX__OPND_AT(IMM, T, f)
#define TIRX__LOADS(T, f, n) {TIRX__OPND_LOADS, (uint16_t)offsetof(T, f), (uint16_t)offsetof(T, n)}

typedef struct tirx__stmt tirx__stmt;
typedef struct tirx__writer tirx__writer;
typedef struct tirx__uses tirx__uses;

/*
 * A prelude fragment: text, or a generator called once per key the walk collected for it (the
 * variants of a helper family), emitted once per kernel; codegen appends the fragments by
 * increasing order (then first use). Orders: the generic fragments of prelude.c are multiples
 * of 100 (tirx__prelude_core lists them); an owner's fragment takes a free number where its
 * text goes. when: TIRX__PRE_ALWAYS (every kernel), the sections any of which the kernel uses,
 * or 0 (only kernels whose statements' ops list it or collect it).
 */
typedef struct tirx__prelude_frag {
  int order;
  uint8_t when;
  const char *text;
  void (*gen)(tirx__strbuf *sb, int key);
} tirx__prelude_frag;

typedef struct tirx__native_op {
  const char *name;   /* as the IR prints it */
  const char *helper; /* the prelude helper codegen calls */
  tirx__features need; /* TIRX__NEED: the arch features its helper needs */
  uint8_t section;    /* TIRX__PRE_*: the section its helper is in */
  uint16_t size;      /* the payload's bytes (zeroed at construction) */
  tirx__opnd ops[TIRX__NATIVE_MAX_OPS]; /* ending at the first TIRX__OPND_NONE */
  const char *print_fmt;
  void (*print)(tirx__writer *w, const tirx__stmt *s);
  const char *emit_fmt;
  void (*emit)(tirx__writer *w, const tirx__stmt *s);
  /* The fragments only this op's helpers need (NULL-terminated; NULL: none). */
  const tirx__prelude_frag *const *prelude;
  /* ---- codegen hooks (NULL: none) ---- */
  /* The statements from s (s's op) one emission covers: emit writes them, codegen skips the
   * others. */
  int (*run)(const tirx__stmt *s);
  /* Called for each emitted statement of the op before the prelude is written: records
   * helper variants (tirx__uses_variant) and register operands to fence after a wait
   * (tirx__uses_fence). */
  void (*collect)(tirx__uses *u, const tirx__stmt *s);
} tirx__native_op;

/* What a kernel's walk collects (codegen fills the callbacks). */
struct tirx__uses {
  void *ctx;
  void (*variant)(tirx__uses *u, const tirx__prelude_frag *f, int key);
  /* t is fenced by fence(w, t) after every wait that fences (tirx__writer.wait_fences) */
  void (*fence)(tirx__uses *u, const tirx_tensor *t,
                void (*fence)(tirx__writer *w, const tirx_tensor *t));
};

/* ---- the generic ops (native.c) and their payloads ---- */

typedef struct tirx__elem {
  tirx_tensor *tensor;
  tirx_expr **index;
} tirx__elem;

/* mbarriers: value the arrival count (init, i32), the CTA rank (arrive_cluster), bytes
 * (expect_tx), the phase parity (wait); arrive has none */
typedef struct tirx__nv_mbar { tirx__elem bar; tirx_expr *value; } tirx__nv_mbar;
typedef struct tirx__nv_imm { int32_t n; } tirx__nv_imm; /* setmaxnreg regs, groups left */
typedef struct tirx__nv_named_bar { int32_t id, threads; } tirx__nv_named_bar;
typedef struct tirx__nv_tensor { tirx_tensor *tensor; } tirx__nv_tensor; /* tmap_prefetch */

extern const tirx__native_op tirx__nv_mbar_init, tirx__nv_mbar_arrive,
    tirx__nv_mbar_arrive_cluster, tirx__nv_mbar_expect_tx, tirx__nv_mbar_wait,
    tirx__nv_fence_proxy_async, tirx__nv_fence_mbar_init, tirx__nv_cluster_sync,
    tirx__nv_setmaxnreg_inc, tirx__nv_setmaxnreg_dec, tirx__nv_named_bar_sync,
    tirx__nv_named_bar_arrive, tirx__nv_wgmma_fence, tirx__nv_wgmma_commit,
    tirx__nv_wgmma_wait, tirx__nv_bulk_commit, tirx__nv_bulk_wait, tirx__nv_bulk_wait_read,
    tirx__nv_tmap_prefetch, tirx__nv_cp_async_commit, tirx__nv_cp_async_wait,
    tirx__nv_cp_async_wait_all, tirx__nv_griddep_wait, tirx__nv_griddep_launch;

/* The generic ops, NULL-terminated (tests walk them). */
extern const tirx__native_op *const tirx__native_generic_ops[];

#endif
