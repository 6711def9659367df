/* The builder's state (struct tirx_builder, its frames and scope frames) and the helpers shared
 * by the files of src/builder: the sticky error, checks, node allocation, constructors. */
#ifndef TIRX_BUILDER_INTERNAL_H
#define TIRX_BUILDER_INTERNAL_H

#include "../ir/ir.h"

/* ---- The builder's state ------------------------------------------------------------------ */

enum { TIRX__FRAME_ROOT = 0, TIRX__FRAME_FOR, TIRX__FRAME_THEN, TIRX__FRAME_ELSE,
       TIRX__FRAME_FILTER /* tirx_filter_begin's runtime guard (an if) */ };

/* An open tirx_team_begin / tirx_filter_begin (prim.c). */
typedef struct tirx__scope_frame {
  bool filter;
  int depth;                 /* b->depth when opened (after the filter's own frame) */
  const tirx_scope *outer;   /* the scope to restore */
} tirx__scope_frame;

typedef struct tirx__frame {
  int kind;
  tirx__stmt *stmt;   /* the for/if statement; NULL for the root */
  tirx__block *block; /* where statements go */
} tirx__frame;

struct tirx_builder {
  tirx_arena *arena;
  const char *name;
  tirx_status status;
  char error[TIRX__ERROR_MAX];        /* the first error's message */
  int nparams;
  tirx__decl *params[TIRX_BUILDER_MAX_PARAMS];
  int32_t ndecls;                    /* declarations made (tirx__decl.id) */
  int nshared;
  tirx_tensor **shared;              /* arena array, grown by doubling */
  int shared_cap;
  int64_t shared_bytes;              /* sum of shared buffers, aligned */
  tirx__block body;
  int depth;                         /* open frames above the root */
  tirx__frame frames[TIRX_BUILDER_MAX_NESTING + 1];
  tirx_expr *grid[3];                /* NULL: 1 */
  int block[3];
  bool block_set;
  tirx_expr *shared_extra;           /* NULL: none */
  int64_t nodes;
  /* Execution scopes and primitives (prim.c). */
  const tirx_scope *scope;           /* at the insertion point; NULL until first needed */
  int nscopes;
  tirx__scope_frame scopes[TIRX_BUILDER_MAX_NESTING];
  int nprims;
  const char *dispatch_report;       /* the last build's, arena */
  /* TMA tensor maps registered by the lowering (one hidden parameter each) and the cluster
   * shape (tirx_set_cluster; 0: no cluster launch). */
  int ntmaps;
  tirx_tensor *tmap_tensor[TIRX__MAX_TMAPS];
  tirx__tmap_desc tmap[TIRX__MAX_TMAPS];
  int cluster[3];
  bool pdl; /* tirx_grid_dependency_wait: launched with programmatic stream serialization */
  /* ---- synchronisation and tensor cores ---- */
  bool uses_setmaxnreg;              /* codegen: __launch_bounds__(threads, 1) */
  int min_blocks;                    /* tirx_set_min_blocks; 0: none */
  uint8_t preludes;                  /* codegen: TIRX__PRE_* sections the kernel's native
                                      * statements and expressions need (native.h) */
  /* ---- the dispatch target (tirx_set_target) and what the kernel needs of the compile target
   * (tirx__b_need: the chosen rules' features, those of the native statements) ---- */
  int target;                        /* compute capability * 10 + minor: 90 */
  char target_suffix;                /* 'a', 'f' or 0 */
  const char *target_name;           /* "sm_90a" */
  tirx__features need;               /* every arch feature the kernel's code uses */
  const char *need_what[TIRX__FEAT_COUNT]; /* the first use of each (NULL outside need) */
  const char *raw_source;            /* tirx_set_source (arena); NULL: generated code */
};

/* The kernel IR of b (a view of b's nodes) for the printer, codegen and the kernel ABI. */
void tirx__b_ir_kernel(const tirx_builder *b, tirx__ir_kernel *out);

/* Tile primitives (src/builder/prim.c): dispatches and lowers every TIRX__ST_PRIM of the
 * builder into its body and sets b->dispatch_report. TIRX_OK or the error recorded on b. */
tirx_status tirx__prim_lower_all(tirx_builder *b);


/* True when b is usable: non-NULL (else "fn: b is NULL" goes to tirx_last_error) and without
 * an error. A builder with an error makes every later call a no-op. */
bool tirx__b_ok(tirx_builder *b, const char *fn);

/* Records the builder's first error (and the thread's last error); returns status. */
tirx_status tirx__b_fail(tirx_builder *b, tirx_status status, const char *fmt, ...)
    TIRX_PRINTF(3, 4);

/* Checks an expression argument: non-NULL and from this builder. */
bool tirx__b_expr(tirx_builder *b, const char *fn, const tirx_expr *e, const char *arg);
/* tirx__b_expr, and of an integer (not bool) dtype: TIRX_E_TYPE naming fn and arg otherwise. */
bool tirx__b_int_arg(tirx_builder *b, const char *fn, const tirx_expr *e, const char *arg);

/* Checks a tensor argument likewise. */
bool tirx__b_tensor(tirx_builder *b, const char *fn, const tirx_tensor *t, const char *arg);

/* Checks a name: a C identifier of at most TIRX_BUILDER_MAX_NAME characters, not "tirx_..."
 * or "TIRX_...". */
bool tirx__b_name(tirx_builder *b, const char *fn, const char *name, const char *arg);

/* No parameter or shared tensor of b is named name (else records on b, naming fn). */
bool tirx__b_name_unique(tirx_builder *b, const char *fn, const char *name);

/* Checks a dtype value: in the enum and not fp8. */
bool tirx__b_dtype(tirx_builder *b, const char *fn, tirx_dtype t, const char *arg);

/* An mbarrier's arrival count and transaction bytes (mbarrier.init, expect_tx): 1 to and 0 to
 * these. */
enum { TIRX__MBAR_MAX_COUNT = (1 << 20) - 1, TIRX__MBAR_MAX_TX = (1 << 20) - 1 };

/* Allocates n zeroed bytes counted as one node; NULL (error recorded) on failure or when the
 * node limit is reached. */
void *tirx__b_node(tirx_builder *b, const char *fn, size_t n);

/* A new expression node of kind and dtype with children a, b, c (may be NULL), depth, size
 * and host flag derived from them. */
tirx_expr *tirx__b_expr_new(tirx_builder *b, const char *fn, int kind, int op, tirx_dtype dtype,
                            tirx_expr *x, tirx_expr *y, tirx_expr *z);

/* Appends a statement at the insertion point. */
tirx__stmt *tirx__b_stmt(tirx_builder *b, const char *fn, int kind);

/* Appends a native statement of op (native.h) with its payload zeroed (s->native.p), and
 * records the op's prelude section and its need (in fn's name). NULL with the error recorded. */
tirx__stmt *tirx__b_native(tirx_builder *b, const char *fn, const tirx__native_op *op);

/* The same for a statement a rule's lowering writes: the row's need is not recorded, the
 * rule's declared features (recorded by the lowering driver, which checks that they cover the
 * statements the lowering wrote) stand for it. */
tirx__stmt *tirx__b_lowered_native(tirx_builder *b, const char *fn, const tirx__native_op *op);
/* The same two, appended to blk (NULL: the insertion point): for the emitter
 * (src/dispatch/emit.c) and the statements lowerings write through it. */
tirx__stmt *tirx__b_native_in(tirx_builder *b, const char *fn, const tirx__native_op *op,
                              tirx__block *blk);
tirx__stmt *tirx__b_lowered_native_in(tirx_builder *b, const char *fn, const tirx__native_op *op,
                                      tirx__block *blk);

/* ---- statements into a given block (NULL: the insertion point) ----
 * What the public statement functions do, without touching the builder's insertion stack:
 * src/dispatch/emit.c writes a primitive's lowering into the primitive's body through these,
 * with its own stack of open blocks. Errors are recorded under the public function's name. */
tirx__stmt *tirx__b_stmt_in(tirx_builder *b, const char *fn, int kind, tirx__block *blk);
/* tirx_for_begin's statement (its variable is s->decl->ref; the body is not opened). */
tirx__stmt *tirx__b_for_in(tirx_builder *b, tirx__block *blk, const char *name, tirx_expr *lo,
                           tirx_expr *hi, tirx_expr *step, tirx_loop_kind kind);
/* tirx_if_begin's statement (the body is not opened). */
tirx__stmt *tirx__b_if_in(tirx_builder *b, tirx__block *blk, tirx_expr *cond);
tirx_expr *tirx__b_let_in(tirx_builder *b, tirx__block *blk, const char *name,
                          tirx_expr *value);
tirx_expr *tirx__b_var_in(tirx_builder *b, tirx__block *blk, const char *name, tirx_dtype dtype,
                          tirx_expr *init);
void tirx__b_assign_in(tirx_builder *b, tirx__block *blk, tirx_expr *var, tirx_expr *value);
void tirx__b_store_in(tirx_builder *b, tirx__block *blk, tirx_tensor *t, int n,
                      tirx_expr *const *index, tirx_expr *value);

/* A typed integer constant (not weak). */
tirx_expr *tirx__b_const(tirx_builder *b, const char *fn, int64_t v, tirx_dtype dtype);

/* Converts e to dtype for use as an operand: weak constants are retyped, other expressions
 * get a cast node. */
tirx_expr *tirx__b_convert(tirx_builder *b, const char *fn, tirx_expr *e, tirx_dtype dtype);

/* True when the weak constant v is exact in dtype (an integer type it fits, or a
 * floating-point type that represents it exactly): then, and only then, it adapts to dtype
 * where a value of dtype is required (tirx_store, tirx_assign, tirx_var). */
bool tirx__b_weak_exact(int64_t v, int dtype);

/* Checks n indices for t (count, NULL, owner, integer dtype) and returns an arena copy with
 * weak constants typed. */
tirx_expr **tirx__b_index_list(tirx_builder *b, const char *fn, tirx_tensor *t, int n,
                               tirx_expr *const *index);

/* Checks that e is an integer (not bool) expression computable at launch. */
bool tirx__b_host_int(tirx_builder *b, const char *fn, const tirx_expr *e, const char *arg);

/* The printed form of e for messages, into buf. */
const char *tirx__b_expr_str(const tirx_expr *e, char *buf, size_t cap);

/* Records that the kernel uses `what` (a public function or a rule name: a static string),
 * which needs the arch features fs of its compile target; the first use of each feature is
 * kept for messages. tirx_kernel_build checks the needs against the dispatch target
 * (tirx_set_target); the kernel keeps them for tirx_compile and launches. */
void tirx__b_need(tirx_builder *b, tirx__features fs, const char *what);

/* ---- TMA and clusters (tma.c) ---- */

/* Registers the tensor map d of global tensor t (deduplicated) and returns its index, the
 * kernel's hidden tensor-map parameter; -1 with the error recorded past TIRX__MAX_TMAPS. */
int tirx__b_tmap(tirx_builder *b, tirx_tensor *t, const tirx__tmap_desc *d);

/* Checks that r is one element of a shared i64 tensor (an mbarrier), recording
 * "fn: arg is not one element of a shared i64 tensor (an mbarrier)" otherwise. */
bool tirx__b_region_barrier(tirx_builder *b, const char *fn, const tirx_region *r,
                            const char *arg);

/* ---- cp.async (cp_async.c) ---- */

/* The most groups tirx_cp_async_wait may leave pending. */
enum { TIRX__CP_ASYNC_MAX_PENDING = 63 };

/* ---- shared with the other files of src/builder ---- */

/* The scope at the insertion point, made from the block size at the first need (prim.c); NULL
 * with the error recorded (TIRX_E_BUILD without a block size). */
const tirx_scope *tirx__b_scope(tirx_builder *b, const char *fn);

/* A shared (storage TIRX__SHARED) or local tensor as tirx_alloc_shared/_local make it, with
 * errors in fn's name (builder.c); a local one's declaration goes into blk (NULL: the
 * insertion point). */
tirx_tensor *tirx__b_alloc_in(tirx_builder *b, tirx__block *blk, const char *fn, int storage,
                              const char *name, tirx_dtype dtype, int rank, const int64_t *shape,
                              const tirx_layout *layout);

/* Appends a tile-primitive statement (prim.c): ops[0] is the destination; cfg may be NULL.
 * Returns it (NULL with the error recorded). */
tirx__prim_stmt *tirx__b_add_prim(tirx_builder *b, const char *fn, int prim, int op, int n,
                                  tirx_region *const *ops, const tirx_config *cfg,
                                  uint32_t axes, bool accumulate);

/* Checks a region argument (prim.c): non-NULL, of this builder, and (dst) not a broadcast. */
bool tirx__b_region(tirx_builder *b, const char *fn, const tirx_region *r, const char *arg,
                    bool dst);

#endif
