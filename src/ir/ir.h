/*
 * The kernel IR: expressions, statements, tensors and the built kernel object.
 *
 * The builder (src/builder) creates these nodes in its arena; the printer (printer.c) and the
 * CUDA code generator (src/jit/codegen.c) read them at tirx_kernel_build time, as a
 * tirx__ir_kernel (the builder's own state is in src/builder/builder_internal.h). The built
 * kernel keeps no pointer into the builder: it owns its strings and a flattened copy of the
 * expressions it needs at launch (host expressions: shapes, strides, grid, shared bytes).
 */
#ifndef TIRX_IR_IR_H
#define TIRX_IR_IR_H

#include <stdatomic.h>

#include "../core/internal.h"
#include "native.h"

/* ---- Expressions ---------------------------------------------------------------------------- */

typedef enum tirx__ex_kind {
  TIRX__EX_INT = 0,  /* i */
  TIRX__EX_FLOAT,    /* f */
  TIRX__EX_PARAM,    /* decl: an integer or scalar parameter */
  TIRX__EX_VAR,      /* decl: a let, mutable variable or loop variable */
  TIRX__EX_SPECIAL,  /* op: tirx__special, i: dimension */
  TIRX__EX_UNARY,    /* op: TIRX__OP_NEG / TIRX__OP_NOT; a */
  TIRX__EX_BINARY,   /* op: tirx__op; a, b (of one type: the builder inserts casts) */
  TIRX__EX_SELECT,   /* a ? b : c */
  TIRX__EX_CAST,     /* a converted to dtype */
  TIRX__EX_MATH,     /* op: tirx_math_op; a */
  TIRX__EX_LOAD,     /* tensor[index] */
  TIRX__EX_SHFL      /* op: 0 xor, 1 down; a (value), b (lane mask or delta) */
} tirx__ex_kind;

typedef enum tirx__op {
  TIRX__OP_ADD = 0, TIRX__OP_SUB, TIRX__OP_MUL, TIRX__OP_DIV, TIRX__OP_MOD, TIRX__OP_MIN,
  TIRX__OP_MAX, TIRX__OP_CEILDIV, TIRX__OP_BAND, TIRX__OP_BOR, TIRX__OP_BXOR, TIRX__OP_SHL,
  TIRX__OP_SHR, TIRX__OP_EQ, TIRX__OP_NE, TIRX__OP_LT, TIRX__OP_LE, TIRX__OP_GT, TIRX__OP_GE,
  TIRX__OP_AND, TIRX__OP_OR, TIRX__OP_POW,
  TIRX__OP_NEG, TIRX__OP_NOT,
  TIRX__OP_COUNT
} tirx__op;

typedef enum tirx__special {
  TIRX__SP_THREAD_IDX = 0, TIRX__SP_BLOCK_IDX, TIRX__SP_BLOCK_DIM, TIRX__SP_GRID_DIM,
  TIRX__SP_THREAD_LINEAR, TIRX__SP_LANE, TIRX__SP_WARP,
  /* clusters (src/builder/bulk.c): %cluster_ctarank, %clusterid.{x,y,z} (i: dimension) */
  TIRX__SP_CLUSTER_CTARANK, TIRX__SP_CLUSTER_ID,
  /* ---- synchronisation (builder/sync.c) ---- */
  TIRX__SP_ELECT_ONE,       /* elect.sync over the full warp, bool */
  /* tirx_elem_index (i: dimension): only inside a tile primitive's broadcast operand, where
   * the lowering replaces it with the element's index (elementwise.c); codegen refuses it */
  TIRX__SP_ELEM_INDEX
} tirx__special;

typedef struct tirx__decl tirx__decl;

struct tirx_expr {
  uint8_t kind;       /* tirx__ex_kind */
  uint8_t op;
  uint8_t dtype;      /* tirx_dtype */
  bool weak;          /* an untyped integer constant from tirx_int() */
  bool host;          /* computable at launch: constants, integer params, arithmetic */
  uint16_t depth;     /* 1 for a leaf */
  uint32_t size;      /* nodes counted as a tree (saturates above the limit) */
  const tirx_builder *owner;
  int64_t i;
  double f;
  tirx__decl *decl;
  tirx_expr *a, *b, *c;
  tirx_tensor *tensor;
  tirx_expr **index;
};

/* ---- Declarations: parameters, variables, tensors ------------------------------------------ */

typedef enum tirx__decl_kind {
  TIRX__DECL_PARAM_INT = 0, TIRX__DECL_PARAM_SCALAR, TIRX__DECL_PARAM_TENSOR,
  TIRX__DECL_LET, TIRX__DECL_VAR, TIRX__DECL_LOOP, TIRX__DECL_SHARED, TIRX__DECL_LOCAL
} tirx__decl_kind;

struct tirx__decl {
  uint8_t kind;          /* tirx__decl_kind */
  uint8_t dtype;
  bool live;             /* validation: in scope at the current point */
  bool declared;         /* validation: its declaration has been seen */
  uint8_t policy;        /* integer parameters: tirx_specialize */
  int32_t param_index;   /* parameters: position in declaration order; else -1 */
  int32_t id;            /* 0, 1, ... in creation order (codegen's names are by id) */
  const char *name;      /* as given */
  tirx_expr *ref;        /* the expression that reads it (params, variables) */
  bool ranged;           /* loops with constant bounds: the variable lies in [lo, hi] */
  int64_t lo, hi;
  tirx_tensor *tensor;   /* tensors */
};

typedef enum tirx__storage { TIRX__GLOBAL = 0, TIRX__SHARED, TIRX__LOCAL } tirx__storage;

struct tirx_tensor {
  tirx__decl decl;
  const tirx_builder *owner;
  uint8_t storage;                       /* tirx__storage */
  uint8_t dtype;
  int32_t rank;
  tirx_expr *shape[TIRX_BUILDER_MAX_RANK];
  /* Global tensors: the stride of each dimension, in elements; NULL means "any stride"
   * (taken from the argument). dense: the strides are the row-major ones of shape. */
  tirx_expr *stride[TIRX_BUILDER_MAX_RANK];
  bool dense;
  /* Tensors with a layout (grouped to shape): global (constant shape), shared and local. */
  const tirx_layout *layout;
  int64_t const_shape[TIRX_BUILDER_MAX_RANK]; /* shared, local and laid-out global tensors */
  int64_t elems;                 /* shared and local: storage size in elements */
  int64_t smem_offset;           /* shared: byte offset in the dynamic buffer */
  bool written;                  /* global: stored to (non-const pointer) */
  int32_t vec_bytes;             /* global: the widest vector access the lowering wrote (bytes,
                                  * 0: none); the launch requires a base aligned to it */
};

/* ---- Statements ----------------------------------------------------------------------------- */

typedef enum tirx__st_kind {
  TIRX__ST_FOR = 0,   /* loop */
  TIRX__ST_IF,        /* branch */
  TIRX__ST_LET,       /* var: decl = value */
  TIRX__ST_VAR,       /* var: decl = value (NULL: zero) */
  TIRX__ST_ASSIGN,    /* var: decl = value */
  TIRX__ST_STORE,     /* store: dst = value */
  TIRX__ST_ATOMIC_ADD,/* store: dst += value */
  TIRX__ST_SYNC,      /* no payload */
  TIRX__ST_SYNCWARP,  /* no payload */
  TIRX__ST_LOCAL,     /* local: the tensor declared */
  TIRX__ST_PRIM,      /* prim: a tile primitive and its lowering (filled at build time) */
  TIRX__ST_NATIVE     /* native: an op's statement (native.h) */
} tirx__st_kind;

/*
 * A native statement: op is its descriptor (native.h), p its payload, a struct of the op's
 * owner (op->size bytes in the builder's arena, zeroed at construction).
 */
typedef struct tirx__native_stmt {
  const tirx__native_op *op;
  void *p;
} tirx__native_stmt;

/* A region operand of a primitive (builder.h: tirx_region): tensor and begin/extent per
 * dimension, or a broadcast scalar (tensor NULL, value set). */
struct tirx_region {
  const tirx_builder *owner;
  tirx_tensor *tensor;
  tirx_expr *value;
  tirx_expr *begin[TIRX_BUILDER_MAX_RANK];
  int64_t extent[TIRX_BUILDER_MAX_RANK];
};

/* A tile primitive statement (src/builder/prim.c), lowered by src/dispatch/lower_driver.c and the rules. */
typedef struct tirx__prim_stmt {
  uint8_t prim;       /* tirx__prim (dispatch.h) */
  uint8_t op;         /* tirx__prim_op */
  uint8_t hint;       /* tirx__hint */
  bool accumulate;
  uint32_t axes;      /* reduce */
  int nops;           /* dst + sources */
  tirx_region *ops[4];
  const tirx_scope *scope;
  const char *family; /* NULL: registry's choice */
  int64_t shape[3];
  int32_t number;     /* 1-based call number, for reports */
  const char *comment; /* after lowering: "copy.vec vec=4" */
  tirx_tensor *scratch; /* reduce.smem: its shared scratch, allocated once */
  tirx_tensor *dscratch; /* reduce.dsmem: the partials of the cluster's CTAs [kept][rank] */
  /* copy_async (tirx_config.barrier, .multicast) */
  tirx_region *barrier; /* one element of a shared i64 tensor: the TMA load's mbarrier */
  tirx_expr *multicast; /* u16 CTA mask of a multicast TMA load; NULL: none */
  /* ---- gemm, gemm_async ---- */
  tirx_expr *scale_d;   /* accumulate into d (bool); NULL: always */
} tirx__prim_stmt;

typedef struct tirx__stmt tirx__stmt;
typedef struct tirx__block {
  tirx__stmt *first, *last;
} tirx__block;

/* A statement: kind says which member of the union is its payload. */
struct tirx__stmt {
  uint8_t kind; /* tirx__st_kind */
  tirx__stmt *next;
  union {
    struct {                  /* FOR: var in [lo, hi) by step */
      tirx__decl *var;
      tirx_expr *lo, *hi, *step;
      uint8_t kind;           /* tirx_loop_kind */
      tirx__block body;
    } loop;
    struct {                  /* IF */
      tirx_expr *cond;
      bool has_else;
      tirx__block then, orelse;
    } branch;
    struct {                  /* LET, VAR, ASSIGN */
      tirx__decl *decl;
      tirx_expr *value;
    } var;
    struct {                  /* STORE, ATOMIC_ADD */
      tirx__elem dst;
      tirx_expr *value;
    } store;
    struct { tirx_tensor *tensor; } local; /* LOCAL */
    struct {                  /* PRIM */
      tirx__prim_stmt *call;
      tirx__block body;       /* its lowering */
    } prim;
    tirx__native_stmt native; /* NATIVE */
  };
};

/* What statements need of the compile target (needs.c): a native statement its op's features
 * (native.h), a special register its own. tirx__stmt_features is the statement itself, not its
 * body; tirx__block_features every statement of blk, bodies included. */
tirx__features tirx__native_features(const tirx__native_op *op); /* 0 for NULL */
tirx__features tirx__special_features(int sp); /* tirx__special */
tirx__features tirx__stmt_features(const tirx__stmt *s);
tirx__features tirx__block_features(const tirx__block *blk);

/* ---- TMA tensor maps (copy_async.tma; derived by src/dispatch/tensor_map.c, encoded at launch) ---- */

enum {
  TIRX__TMAP_MAX_RANK = 5, /* cuTensorMapEncodeTiled's limit */
  TIRX__MAX_TMAPS = 8      /* tensor-map parameters of one kernel (128 bytes each) */
};

/* How a tensor-map dimension's globalDim comes from the tensor's shape at launch. */
typedef enum tirx__tmap_dim_kind {
  TIRX__TMAP_WHOLE = 0, /* shape[dim] */
  TIRX__TMAP_INNER = 1, /* extent: an inner part of a split dimension */
  TIRX__TMAP_OUTER = 2  /* shape[dim] / factor, which must divide exactly */
} tirx__tmap_dim_kind;

typedef struct tirx__tmap_dim {
  int8_t dim;     /* the tensor's logical dimension */
  uint8_t kind;   /* tirx__tmap_dim_kind */
  uint32_t box;   /* boxDim: elements per instruction along it (<= 256) */
  int64_t factor; /* its global stride is factor * stride[dim] (elements) */
  int64_t extent; /* INNER: its globalDim */
} tirx__tmap_dim;

/* The launch-time recipe of one tensor map: dimension 0 is the innermost (contiguous). */
typedef struct tirx__tmap_desc {
  int32_t param;   /* the tensor parameter (kernel); -1 in a bare derivation */
  uint8_t rank;    /* 1..TIRX__TMAP_MAX_RANK */
  uint8_t dtype;   /* tirx_dtype */
  int16_t swizzle; /* 0, 32, 64, 128 (bytes) */
  /* A TMA store goes through it. The hardware clips a store at the 16-byte piece of the row
   * that holds the last element, so the launch plan needs an innermost extent that is a
   * whole number of 16-byte pieces (else the row's padding, or the next tensor, is written). */
  uint8_t store;
  tirx__tmap_dim d[TIRX__TMAP_MAX_RANK];
} tirx__tmap_desc;

/* ---- The kernel IR: what the printer, codegen and the kernel ABI read --------------------- */

/*
 * A finished kernel (src/builder/build.c fills it from the builder after lowering and
 * validation: a view of the builder's arena, valid while the builder lives). Read-only to
 * everything downstream.
 */
typedef struct tirx__ir_kernel {
  const char *name;
  int nparams;
  tirx__decl *const *params;         /* in declaration order */
  int32_t ndecls;                    /* declarations (tirx__decl.id < ndecls) */
  int nshared;
  tirx_tensor *const *shared;        /* the shared tensors, in allocation order */
  int64_t shared_bytes;              /* sum of shared buffers, aligned */
  tirx_expr *shared_extra;           /* dynamic shared bytes added at launch; NULL: none */
  const tirx__block *body;
  tirx_expr *grid[3];                /* NULL: 1 */
  int block[3];
  int min_blocks;                    /* __launch_bounds__'s second argument; 0: none */
  bool uses_setmaxnreg;              /* then __launch_bounds__(threads, 1) */
  uint8_t preludes;                  /* TIRX__PRE_* sections the native statements and expressions use */
  int ntmaps;                        /* TMA tensor maps (one hidden parameter each) */
  tirx_tensor *const *tmap_tensor;
  const tirx__tmap_desc *tmap;
} tirx__ir_kernel;

/* ---- The built kernel ---------------------------------------------------------------------- */

/* A launch-time expression, flattened: children are indices into the kernel's hx array. */
typedef struct tirx__hexpr {
  uint8_t kind;   /* TIRX__EX_INT, _PARAM (v = param index), _UNARY, _BINARY, _SELECT, _CAST */
  uint8_t op;
  uint8_t dtype;
  int32_t a, b, c;
  int64_t v;
} tirx__hexpr;

typedef enum { TIRX__KP_INT = 0, TIRX__KP_SCALAR, TIRX__KP_TENSOR } tirx__kparam_kind;

typedef struct tirx__kparam {
  const char *name;
  uint8_t kind;   /* tirx__kparam_kind */
  uint8_t dtype;
  bool bindable;  /* integer: a bare dimension or stride of some tensor */
  uint8_t policy; /* integer: tirx_specialize */
  const char *cname; /* integer with a policy: the name in the TIRX_SPEC_ / TIRX_DIV16_ macros */
  int32_t rank;
  int32_t shape[TIRX_BUILDER_MAX_RANK];  /* hexpr index */
  int32_t stride[TIRX_BUILDER_MAX_RANK]; /* hexpr index; -1: any stride */
  bool dense;                            /* strides are row-major of the shape */
  bool opaque;                           /* laid out: strides cannot express the layout */
  int32_t align;                         /* required pointer alignment in bytes */
  uint8_t writes;                        /* tensor: TIRX__KP_WRITES_* (read-only DLPack) */
} tirx__kparam;

/* Whether a kernel stores to a tensor parameter: a read-only DLPack tensor is refused for one
 * it may store to. A kernel of caller-written source may store to every tensor. */
enum { TIRX__KP_WRITES_NO = 0, TIRX__KP_WRITES_YES = 1, TIRX__KP_WRITES_MAYBE = 2 };

typedef enum {
  TIRX__SLOT_VALUE = 0, TIRX__SLOT_POINTER, TIRX__SLOT_STRIDE,
  TIRX__SLOT_TMAP /* a TMA tensor map (128 bytes): dim is the kernel's tmap index */
} tirx__slot_kind;

/* One parameter of the generated entry point, in order. */
typedef struct tirx__slot {
  uint8_t kind;   /* tirx__slot_kind */
  uint8_t dtype;  /* VALUE: the parameter's dtype; STRIDE: i64 */
  int32_t param;  /* the declared parameter it comes from */
  int32_t dim;    /* STRIDE: the dimension */
} tirx__slot;

struct tirx_kernel {
  atomic_int refs;
  tirx_arena *arena;
  const char *name;
  const char *source;
  const char *ir;
  uint64_t hash[2];
  int nparams;
  tirx__kparam *params;
  int nslots;
  tirx__slot *slots;
  int nhx;
  tirx__hexpr *hx;
  int32_t grid[3];          /* hexpr index; -1: 1 */
  uint32_t block[3];
  int64_t shared_static;
  int32_t shared_extra;     /* hexpr index; -1: none */
  int nspec;                /* integer parameters with a non-dynamic policy */
  int32_t spec[TIRX_BUILDER_MAX_SPECIALIZED]; /* their param indices, in declaration order */
  const char *dispatch_report; /* tirx_kernel_dispatch_report: "" without primitives */
  int ntmaps;                  /* TMA tensor maps: entry-point parameters after the strides */
  tirx__tmap_desc *tmaps;
  uint32_t cluster[3];         /* cluster shape; 0: launched without one */
  bool pdl;                    /* launched as a programmatic dependent of the stream's previous
                                * kernel (it waits for it: tirx_grid_dependency_wait) */
  /* The dispatch target and what the code needs of a compile target (tirx_builder's fields of
   * the same names): tirx__kernel_check_arch compares them with the arch it is compiled for. */
  const char *target;          /* "sm_90a" */
  tirx__features need;         /* the arch features the code uses */
  const char *need_what[TIRX__FEAT_COUNT]; /* the first use of each; NULL outside need */
};

/* How codegen spells the stride of dimension k of a global tensor without a layout. */
enum { TIRX__STRIDE_CONST = 0, TIRX__STRIDE_PARAM, TIRX__STRIDE_HIDDEN };

/* The integer parameter e reads (through an integer cast), or NULL. */
static inline tirx__decl *tirx__bare_param(const tirx_expr *e) {
  if (e && e->kind == TIRX__EX_CAST && e->a && e->a->kind == TIRX__EX_PARAM &&
      e->a->dtype != TIRX_F32 && e->a->dtype != TIRX_F64)
    e = e->a;
  return e && e->kind == TIRX__EX_PARAM ? e->decl : NULL;
}

static inline int tirx__stride_kind(const tirx_tensor *t, int k) {
  const tirx_expr *s = t->stride[k];
  if (!s) return TIRX__STRIDE_HIDDEN;
  if (s->kind == TIRX__EX_INT) return TIRX__STRIDE_CONST;
  if (tirx__bare_param(s)) return TIRX__STRIDE_PARAM;
  return TIRX__STRIDE_HIDDEN;
}

/* ---- Functions ------------------------------------------------------------------------------ */

static inline bool tirx__dtype_is_int(int t) {
  return t == TIRX_I8 || t == TIRX_U8 || t == TIRX_I32 || t == TIRX_U32 || t == TIRX_I64;
}
static inline bool tirx__dtype_is_float(int t) {
  return t == TIRX_F32 || t == TIRX_F64 || t == TIRX_F16 || t == TIRX_BF16;
}

/* Names and C++ spellings of operators (tables in printer.c). */
const char *tirx__op_name(int op);      /* "+", "min", "ceildiv", ... */
const char *tirx__math_name(int op);    /* "exp", "rsqrt", ... */
const char *tirx__special_name(int sp); /* "thread_idx", ... */
bool tirx__op_is_compare(int op);

/* The readable IR of kernel k, malloc'ed (caller frees); NULL when out of memory. */
char *tirx__ir_print(const tirx__ir_kernel *k);

/* Prints one expression into sb (used by error messages and the printer). */
void tirx__ir_print_expr(tirx__strbuf *sb, const tirx_expr *e);

/*
 * The CUDA C++ translation unit of kernel k: codegen reads the IR and writes nothing into it
 * (its C++ names are its own, by declaration id). Deterministic. On success *out is malloc'ed
 * (caller frees) and param_names[i] (k->nparams entries) is the C++ name of parameter i,
 * allocated in names. Errors (the thread's last error set):
 * TIRX_E_NO_MEMORY, TIRX_E_LIMIT (the source is too long), TIRX_E_OVERFLOW (a constant
 * offset).
 */
tirx_status tirx__codegen(const tirx__ir_kernel *k, tirx_arena *names, const char **param_names,
                          char **out);

/* Whether source is a translation unit tirx__codegen wrote (a variant's "#define" lines
 * before it included): it starts with codegen's "/\* Generated by tirx " line. A kernel's own
 * CUDA text (tirx_set_source) is not, unless it starts with that line itself. */
bool tirx__codegen_wrote(const char *source);

/*
 * The kernel ABI: the generated entry point's parameters in order, the one place that orders
 * them (codegen declares them, tirx_kernel_build records them, the launch plan fills them):
 * the declared parameters (a pointer for a tensor, else its value), then the hidden strides of
 * the tensors without a layout (a stride no parameter or constant gives), then the TMA tensor
 * maps. Writes at most cap slots to out (out may be NULL with cap 0) and returns how many
 * there are.
 */
int tirx__kernel_slots(const tirx__ir_kernel *k, tirx__slot *out, int cap);

/* True for C++ keywords and names the generated code uses (codegen.c). */
bool tirx__cpp_reserved(const char *name);


/* The generic fragments of the prelude (prelude.c), NULL-terminated: the core every kernel
 * starts with and the sections' own text. Codegen adds the registered families' and the
 * kernel's ops' fragments and sorts them by order (native.h: tirx__prelude_frag). */
extern const tirx__prelude_frag *const tirx__prelude_core[];

/* ---- Native statements (native.c) ---- */

/*
 * Where printing (the IR printer) and emitting (codegen) write a native statement: the
 * callbacks spell the operands; the rows' formats and functions write the rest. An IR writer
 * prints an element as t[i, j], C++ as &t[offset].
 */
struct tirx__writer {
  tirx__strbuf *sb;
  int depth; /* the statement's indentation (two spaces a level) */
  void *ctx; /* the writer's own */
  void (*expr)(tirx__writer *w, const tirx_expr *e);
  void (*elem)(tirx__writer *w, const tirx_tensor *t, tirx_expr *const *index);
  const char *(*tensor)(tirx__writer *w, const tirx_tensor *t); /* its name */
  /* C++ only: the C++ type of a dtype; the i-th tensor map of t's (NULL past the last, map -1)
   * or the tensor map of index map (t NULL); after a wait that fences, the register operands
   * in scope that ops collected (tirx__uses.fence), each on its own line. */
  const char *(*ctype)(int dtype);
  const char *(*tmap)(tirx__writer *w, const tirx_tensor *t, int map, int i);
  void (*wait_fences)(tirx__writer *w);
  /* C++ only (NULL in the IR printer): whether the storage addresses (bytes) of t[i1] and
   * t[i0] differ by a constant for every value of the indices' symbols, swizzle included;
   * then the difference in *bytes. Index dims must be the same expression or both
   * constants. */
  bool (*elem_delta)(tirx__writer *w, const tirx_tensor *t, tirx_expr *const *i0,
                     tirx_expr *const *i1, int64_t *bytes);
};

/* Prints (IR) or emits (C++) native statement s, without the final newline. */
void tirx__native_print(tirx__writer *w, const tirx__stmt *s);
void tirx__native_emit(tirx__writer *w, const tirx__stmt *s);

/* The statements from s on that one emission covers (1: s alone; native.h: run). */
int tirx__native_run(const tirx__stmt *s);

/* Evaluates host expression idx of k with integer parameter values vals (by param index).
 * Returns false and writes a reason ("division by zero", "overflow") on failure. */
bool tirx__hexpr_eval(const tirx_kernel *k, int32_t idx, const int64_t *vals, int64_t *out,
                      const char **why);

#endif
