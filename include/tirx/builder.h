/*
 * tirx/builder.h: building kernels with C calls, and the built kernel.
 *
 * Included by <tirx.h>; do not include it on its own.
 *
 * A tirx_builder describes one kernel. It is an arena (libgccjit's model): every expression and
 * tensor it hands out lives in it and dies with tirx_builder_destroy(); strings passed in are
 * copied; no builder object has a free function of its own. A builder is not thread-safe.
 *
 * Errors. The first error sticks to the builder. Every builder call checks its arguments and,
 * on the first failure, records a message that starts with the public function's name and
 * names the argument and what was expected:
 *
 *     tirx_add: b has dtype f32, expected i32 (the dtype of a)
 *
 * It also sets tirx_last_error() on the calling thread. After that, calls that return an
 * object return NULL and the others do nothing; tirx_kernel_build() returns the status of the
 * first error, and tirx_builder_error() gives its message. So kernel code needs no error
 * checks between calls: check once, at tirx_kernel_build(). A NULL builder, a NULL expression
 * or tensor, an out-of-range enum, an expression from another builder or a dtype mismatch
 * never crashes the library.
 *
 * Types. Every expression has a dtype (tirx/types.h). Binary arithmetic needs operands of one
 * type, with two conveniences: integer operands of different integer types are promoted (i64
 * wins, then u32, then i32; i8, u8 compute as i32), and constants made with tirx_int() are
 * "weak": they take the type of the other operand (of any numeric type, when the value is
 * exact in it). Floating-point operands of different types need tirx_cast(). bool is only
 * produced by comparisons and logical operators and only accepted by them, tirx_select() and
 * tirx_if_begin(). f16 and bf16 values compute in f32 and round back to their type after each
 * operation. fp8 types are rejected (TIRX_E_NOT_SUPPORTED) for now.
 *
 * Integer division and modulo follow C (truncating); thread and block indices are i32 and
 * memory addresses are computed in 64 bits (index * stride in i64), so a tensor may hold more
 * than 2^31 elements while a flat index computed from block_idx * block_dim stays i32 unless
 * cast to i64.
 *
 * A minimal kernel (y = x + y over n elements):
 *
 *     tirx_builder *b = tirx_builder_create("vector_add");
 *     tirx_expr   *n = tirx_param_int(b, "n", TIRX_I64);
 *     tirx_tensor *x = tirx_param_tensor(b, "x", TIRX_F32, TIRX_EXPRS(n), NULL);
 *     tirx_tensor *y = tirx_param_tensor(b, "y", TIRX_F32, TIRX_EXPRS(n), NULL);
 *     tirx_set_block(b, 256, 1, 1);
 *     tirx_set_grid(b, tirx_ceildiv(b, n, tirx_int(b, 256)), NULL, NULL);
 *     tirx_expr *i = tirx_let(b, "i", tirx_add(b, tirx_mul(b, tirx_block_idx(b, 0),
 *                                       tirx_int(b, 256)), tirx_thread_idx(b, 0)));
 *     tirx_if_begin(b, tirx_lt(b, i, n));
 *       tirx_store(b, y, TIRX_EXPRS(i), tirx_add(b, tirx_load(b, x, TIRX_EXPRS(i)),
 *                                                 tirx_load(b, y, TIRX_EXPRS(i))));
 *     tirx_if_end(b);
 *     tirx_kernel *k = NULL;
 *     if (tirx_kernel_build(b, &k) != TIRX_OK) fprintf(stderr, "%s\n", tirx_builder_error(b));
 *     tirx_builder_destroy(b);     // k lives on; tirx_kernel_release(k) when done
 *
 * Launching (tirx_launch, in the runtime API) takes one tirx_arg per parameter in declaration
 * order. Integer parameters that appear as a whole dimension of some tensor's shape (or
 * stride) may instead be left out altogether: then they are bound from the tensors' shapes.
 */
#ifndef TIRX_BUILDER_H
#define TIRX_BUILDER_H

#include "layout.h"
#include "scope.h"
#include "types.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tirx_builder tirx_builder; /* one kernel under construction; the arena      */
typedef struct tirx_expr tirx_expr;       /* builder-owned, immutable expression             */
typedef struct tirx_tensor tirx_tensor;   /* builder-owned: a parameter or an allocation     */

/*
 * Count-and-array argument pairs for index lists and shapes, so the count can never disagree
 * with the array: tirx_load(b, x, TIRX_EXPRS(i, j)) passes 2, (tirx_expr *[]){i, j};
 * tirx_alloc_shared(b, "s", TIRX_F32, TIRX_DIMS(64, 64), NULL) passes 2, (int64_t[]){64, 64}.
 */
#ifndef __cplusplus
#define TIRX_EXPRS(...)                                                                        \
  (int)(sizeof((tirx_expr *[]){__VA_ARGS__}) / sizeof(tirx_expr *)), (tirx_expr *[]){__VA_ARGS__}
/* The same for a list of int64_t dimensions. */
#define TIRX_DIMS(...)                                                                         \
  (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), (int64_t[]){__VA_ARGS__}
#else
} /* extern "C" */
/* C++ has no compound literals: a temporary holds the list until the end of the call. */
template <class... T> char (&tirx_count_(T...))[sizeof...(T)];
struct tirx_expr_list_ { tirx_expr *v[8]; };
struct tirx_dim_list_ { int64_t v[8]; };
extern "C" {
#define TIRX_EXPRS(...) (int)sizeof(tirx_count_(__VA_ARGS__)), tirx_expr_list_{{__VA_ARGS__}}.v
#define TIRX_DIMS(...) (int)sizeof(tirx_count_(__VA_ARGS__)), tirx_dim_list_{{__VA_ARGS__}}.v
#endif

/* Limits checked by the builder; exceeding one is TIRX_E_LIMIT. */
enum {
  TIRX_BUILDER_MAX_NAME = 63,          /* characters of a kernel, parameter or variable name */
  TIRX_BUILDER_MAX_RANK = 8,           /* tensor rank */
  TIRX_BUILDER_MAX_EXPR_DEPTH = 256,   /* nesting of one expression */
  TIRX_BUILDER_MAX_EXPR_SIZE = 65536,  /* nodes of one expression, counted as a tree */
  TIRX_BUILDER_MAX_NODES = 1 << 20,    /* expressions and statements of one builder */
  TIRX_BUILDER_MAX_NESTING = 64,       /* open for/if blocks */
  TIRX_BUILDER_MAX_PARAMS = 64,        /* declared parameters */
  TIRX_BUILDER_MAX_SPECIALIZED = 16,   /* integer parameters with a non-dynamic policy */
  TIRX_BUILDER_MAX_SHARED = 232448,    /* bytes of shared memory (227 KiB, sm_90) */
  TIRX_BUILDER_MAX_LOCAL = 16384,      /* bytes of one thread's local arrays */
  TIRX_BUILDER_MAX_SOURCE = 16 << 20   /* bytes of generated source */
};

/* ---- The builder ------------------------------------------------------------------------ */

/*
 * A new builder for a kernel called name (the generated extern "C" entry point's name: a C
 * identifier [A-Za-z_][A-Za-z0-9_]*, at most TIRX_BUILDER_MAX_NAME characters, not starting
 * with "tirx_" or "TIRX_": the generated code's own names and macros; and not a name reserved
 * in CUDA C++: a keyword, a function the generated code calls, an identifier starting with
 * "__" or "_" and a capital, NULL, assert, va_*, or a name starting with CUDA, CU_, NV_ or
 * cuda and a capital, the prefixes of NVRTC's predefined macros; nor "_", printf, malloc,
 * free, dim3, size_t, ptrdiff_t, clock_t, abs, labs, llabs: other global names of NVRTC's
 * built-in headers, of which the CUDA math API's functions also clash). Other names
 * (parameters, variables, tensors) may be any identifier: the generated code renames those
 * that clash with these (v___CUDA_ARCH__, NULL_1). The caller destroys it. An invalid name is
 * recorded as the builder's first error (it still returns a builder). Returns NULL only when
 * out of memory (TIRX_E_NO_MEMORY, tirx_last_error() set).
 */
TIRX_API tirx_builder *tirx_builder_create(const char *name);

/* Frees the builder and every object it handed out. Kernels built from it live on. NULL is a
 * no-op. */
TIRX_API void tirx_builder_destroy(tirx_builder *b);

/* The builder's arena, for layouts used by this kernel (borrowed; lives with the builder).
 * NULL for a NULL builder. */
TIRX_API tirx_arena *tirx_builder_arena(tirx_builder *b);

/* The first error's message, "" when there is none; "tirx_builder_error: b is NULL" for a
 * NULL builder. The string lives as long as the builder. */
TIRX_API const char *tirx_builder_error(const tirx_builder *b);

/* The first error's status; TIRX_OK when none, TIRX_E_NULL_ARG for a NULL builder. */
TIRX_API tirx_status tirx_builder_status(const tirx_builder *b);

/* ---- Parameters ----------------------------------------------------------------------------- */
/* Parameter names are C identifiers as for tirx_builder_create(), unique within the kernel. */

/* A symbolic integer parameter (a size such as M or N), dtype TIRX_I32 or TIRX_I64. The
 * result may be used in tensor shapes and strides, launch dimensions and kernel code. Its
 * specialisation policy is TIRX_SPECIALIZE_DIV16 (see tirx_param_set_policy()). */
TIRX_API tirx_expr *tirx_param_int(tirx_builder *b, const char *name, tirx_dtype dtype);

/*
 * Specialisation policies of integer parameters (tirx_param_int). The kernel has one generated
 * source; at launch the runtime may compile a variant of it for the parameter's actual value:
 *
 *   TIRX_SPECIALIZE_DYNAMIC  the value is only known at run time: one variant for all values.
 *   TIRX_SPECIALIZE_DIV16    two variants: one where the value is known to be a multiple of 16
 *                            (the compiler may assume it: vector loads, fewer remainder checks),
 *                            one for other values. The default (as Triton's), see below.
 *   TIRX_SPECIALIZE_VALUE    one variant per distinct value, compiled with the value as a
 *                            constant (loops fully known, index arithmetic folded). For values
 *                            that take few distinct values (a head dimension, a tile count).
 *
 * Every variant takes the same parameters: a specialised one receives the value and ignores
 * it, so launching is identical. The policy changes neither the launch arguments nor the
 * kernel's behaviour, only what it is compiled for.
 */
typedef enum tirx_specialize {
  TIRX_SPECIALIZE_DYNAMIC = 0,
  TIRX_SPECIALIZE_DIV16 = 1,
  TIRX_SPECIALIZE_VALUE = 2
} tirx_specialize;

/*
 * Sets the specialisation policy of param, an expression returned by tirx_param_int().
 * tirx_param_int() gives its parameter TIRX_SPECIALIZE_DIV16 while fewer than
 * TIRX_BUILDER_MAX_SPECIALIZED parameters have a non-dynamic policy, and
 * TIRX_SPECIALIZE_DYNAMIC after that. At most TIRX_BUILDER_MAX_SPECIALIZED parameters may have
 * a non-dynamic policy (set others to TIRX_SPECIALIZE_DYNAMIC first). Returns TIRX_OK, or the
 * error recorded on the builder (the builder's first error when it already has one):
 * TIRX_E_NULL_ARG, TIRX_E_INVALID_ARG (param is not an integer parameter, policy out of the
 * enum), TIRX_E_LIMIT.
 */
TIRX_API tirx_status tirx_param_set_policy(tirx_builder *b, tirx_expr *param,
                                           tirx_specialize policy);

/* A scalar parameter of dtype f32, f64, i32 or i64 (an epsilon, a scale), usable in kernel
 * code. Integer scalars may also be used in launch dimensions. */
TIRX_API tirx_expr *tirx_param_scalar(tirx_builder *b, const char *name, tirx_dtype dtype);

/*
 * A global-memory tensor parameter of rank 1..TIRX_BUILDER_MAX_RANK. shape has rank integer
 * expressions computable at launch (constants, integer parameters and arithmetic on them).
 * layout NULL: dense row-major; the strides are derived from the shape (symbolic strides
 * become hidden kernel parameters). A non-NULL layout must be a single-valued layout on m
 * (no replicas, no thread axes) whose size is the shape's product; the shape must then be
 * constant (the layout fixes it; a product that overflows int64 is TIRX_E_OVERFLOW), and it
 * is grouped to the shape when it is flat.
 */
TIRX_API tirx_tensor *tirx_param_tensor(tirx_builder *b, const char *name, tirx_dtype dtype,
                                        int rank, tirx_expr *const *shape,
                                        const tirx_layout *layout);

/*
 * A global-memory tensor parameter with explicit strides, in elements (non-contiguous
 * tensors: a row pitch, a transposed view). strides has rank entries computable at launch;
 * an entry that is a bare integer parameter is bound from the argument's strides when that
 * parameter is left out of the launch. A NULL entry, or strides NULL, means "any stride":
 * the argument's stride is passed to the kernel as a hidden parameter.
 */
TIRX_API tirx_tensor *tirx_param_tensor_strided(tirx_builder *b, const char *name,
                                                tirx_dtype dtype, int rank,
                                                tirx_expr *const *shape,
                                                tirx_expr *const *strides);

/* ---- Allocations ---------------------------------------------------------------------------- */
/* Note: a NULL layout means "dense row-major", so a layout call that failed (NULL, with
 * tirx_last_error() set) silently gives a dense tensor: check layouts before passing them. */

/*
 * A shared-memory tensor with a constant shape. layout NULL: dense row-major. Otherwise a
 * single-valued layout on m (swizzles allowed; no replicas, no thread axes, no negative
 * strides or offset) of the shape's size; it is grouped to the shape when flat. Buffers are
 * 128-byte aligned (1024 when swizzled) and carved from dynamic shared memory; their total
 * size is part of the launch (at most TIRX_BUILDER_MAX_SHARED bytes).
 */
TIRX_API tirx_tensor *tirx_alloc_shared(tirx_builder *b, const char *name, tirx_dtype dtype,
                                        int rank, const int64_t *shape,
                                        const tirx_layout *layout);

/*
 * A second view of shared memory already allocated: a shared tensor (its own name, dtype,
 * shape and layout, the rules of tirx_alloc_shared) over the bytes of base from byte_offset on
 * (a multiple of 1024 for a swizzled layout, else of 128; a swizzled view's start in shared
 * memory must be a multiple of 1024 too, which an unswizzled base need not give), allocating
 * nothing. For one buffer seen two ways (a TMA box [1, rows, 1, D] of a [B, S, H, D] tensor
 * and the (rows, D) tile wgmma reads) and for reusing a buffer whose first use is over (an
 * epilogue's tile in the ring). Accesses through both views are ordered by the caller's
 * barriers, as any shared data. Errors (recorded): TIRX_E_NULL_ARG, TIRX_E_INVALID_ARG (base
 * not a shared tensor of b, a negative or misaligned byte_offset or view start, a view larger
 * than what base has from there), and tirx_alloc_shared's.
 */
TIRX_API tirx_tensor *tirx_alloc_shared_view(tirx_builder *b, const char *name,
                                             tirx_tensor *base, int64_t byte_offset,
                                             tirx_dtype dtype, int rank, const int64_t *shape,
                                             const tirx_layout *layout);

/*
 * A per-thread (register) array with a constant shape. layout NULL: dense row-major. A layout
 * may place elements on reg and m (the thread's own slots) and on thread axes (which threads
 * hold them: those iters and replicas are dropped, the storage view). Declared where the call
 * is made: it lives until the enclosing block ends.
 */
TIRX_API tirx_tensor *tirx_alloc_local(tirx_builder *b, const char *name, tirx_dtype dtype,
                                       int rank, const int64_t *shape,
                                       const tirx_layout *layout);

/* Accessors of a tensor: its rank, dtype (TIRX_DTYPE_COUNT for NULL), name (lives with the
 * builder) and the expression of shape dimension dim (NULL and a recorded error when dim is
 * out of range). */
TIRX_API int tirx_tensor_rank(const tirx_tensor *t);
TIRX_API tirx_dtype tirx_tensor_dtype(const tirx_tensor *t);
TIRX_API const char *tirx_tensor_name(const tirx_tensor *t);
TIRX_API tirx_expr *tirx_tensor_dim(tirx_builder *b, const tirx_tensor *t, int dim);

/* ---- Expressions: constants and indices ----------------------------------------------------- */

/* A weak integer constant (dtype i64, adopting the type of the other operand; see above). */
TIRX_API tirx_expr *tirx_int(tirx_builder *b, int64_t v);
/* An integer constant of an integer dtype (i8, u8, i32, u32, i64) or bool (v 0 or 1). */
TIRX_API tirx_expr *tirx_int_typed(tirx_builder *b, int64_t v, tirx_dtype dtype);
/* A floating-point constant of dtype f32, f64, f16 or bf16 (rounded to nearest even). */
TIRX_API tirx_expr *tirx_float(tirx_builder *b, double v, tirx_dtype dtype);
/* true / false as bool. */
TIRX_API tirx_expr *tirx_bool(tirx_builder *b, bool v);

/* threadIdx, blockIdx, blockDim, gridDim on dimension dim (0 = x, 1 = y, 2 = z); i32. */
TIRX_API tirx_expr *tirx_thread_idx(tirx_builder *b, int dim);
TIRX_API tirx_expr *tirx_block_idx(tirx_builder *b, int dim);
TIRX_API tirx_expr *tirx_block_dim(tirx_builder *b, int dim);
TIRX_API tirx_expr *tirx_grid_dim(tirx_builder *b, int dim);
/* The linear thread index within the CTA, its lane (tid % 32) and warp (tid / 32); i32. */
TIRX_API tirx_expr *tirx_thread_linear(tirx_builder *b);
TIRX_API tirx_expr *tirx_lane_id(tirx_builder *b);
TIRX_API tirx_expr *tirx_warp_id(tirx_builder *b);

/* ---- Expressions: operators ------------------------------------------------------------------ */
/* Operands follow the type rules above; NULL on any error. */

TIRX_API tirx_expr *tirx_add(tirx_builder *b, tirx_expr *x, tirx_expr *y); /* x + y */
TIRX_API tirx_expr *tirx_sub(tirx_builder *b, tirx_expr *x, tirx_expr *y); /* x - y */
TIRX_API tirx_expr *tirx_mul(tirx_builder *b, tirx_expr *x, tirx_expr *y); /* x * y */
TIRX_API tirx_expr *tirx_div(tirx_builder *b, tirx_expr *x, tirx_expr *y); /* x / y */
TIRX_API tirx_expr *tirx_mod(tirx_builder *b, tirx_expr *x, tirx_expr *y); /* integers only */
TIRX_API tirx_expr *tirx_min(tirx_builder *b, tirx_expr *x, tirx_expr *y); /* min(x, y) */
TIRX_API tirx_expr *tirx_max(tirx_builder *b, tirx_expr *x, tirx_expr *y); /* max(x, y) */
TIRX_API tirx_expr *tirx_neg(tirx_builder *b, tirx_expr *x);               /* -x */
/* (x + y - 1) / y for integers (y > 0 expected). */
TIRX_API tirx_expr *tirx_ceildiv(tirx_builder *b, tirx_expr *x, tirx_expr *y);

/* Bitwise operators and shifts, integers only. */
TIRX_API tirx_expr *tirx_bit_and(tirx_builder *b, tirx_expr *x, tirx_expr *y);
TIRX_API tirx_expr *tirx_bit_or(tirx_builder *b, tirx_expr *x, tirx_expr *y);
TIRX_API tirx_expr *tirx_bit_xor(tirx_builder *b, tirx_expr *x, tirx_expr *y);
TIRX_API tirx_expr *tirx_shl(tirx_builder *b, tirx_expr *x, tirx_expr *y);
TIRX_API tirx_expr *tirx_shr(tirx_builder *b, tirx_expr *x, tirx_expr *y);

/* Comparisons: bool results. */
TIRX_API tirx_expr *tirx_eq(tirx_builder *b, tirx_expr *x, tirx_expr *y);
TIRX_API tirx_expr *tirx_ne(tirx_builder *b, tirx_expr *x, tirx_expr *y);
TIRX_API tirx_expr *tirx_lt(tirx_builder *b, tirx_expr *x, tirx_expr *y);
TIRX_API tirx_expr *tirx_le(tirx_builder *b, tirx_expr *x, tirx_expr *y);
TIRX_API tirx_expr *tirx_gt(tirx_builder *b, tirx_expr *x, tirx_expr *y);
TIRX_API tirx_expr *tirx_ge(tirx_builder *b, tirx_expr *x, tirx_expr *y);

/* Logical operators on bool. */
TIRX_API tirx_expr *tirx_and(tirx_builder *b, tirx_expr *x, tirx_expr *y);
TIRX_API tirx_expr *tirx_or(tirx_builder *b, tirx_expr *x, tirx_expr *y);
TIRX_API tirx_expr *tirx_not(tirx_builder *b, tirx_expr *x);

/* cond ? x : y; cond is bool, x and y follow the arithmetic type rules. */
TIRX_API tirx_expr *tirx_select(tirx_builder *b, tirx_expr *cond, tirx_expr *x, tirx_expr *y);

/* x converted to dtype (C conversion rules; floats round to nearest even). */
TIRX_API tirx_expr *tirx_cast(tirx_builder *b, tirx_expr *x, tirx_dtype dtype);

/* Math on floating-point operands (f32, f64, f16, bf16), result of the operand's type. */
typedef enum tirx_math_op {
  TIRX_MATH_EXP = 0,
  TIRX_MATH_EXP2 = 1,
  TIRX_MATH_LOG = 2,
  TIRX_MATH_LOG2 = 3,
  TIRX_MATH_SQRT = 4,
  TIRX_MATH_RSQRT = 5,
  TIRX_MATH_TANH = 6,
  TIRX_MATH_ERF = 7,
  TIRX_MATH_FABS = 8,
  TIRX_MATH_SIN = 9,
  TIRX_MATH_COS = 10,
  TIRX_MATH_FLOOR = 11,
  TIRX_MATH_CEIL = 12,
  TIRX_MATH_SIGMOID = 13, /* 1 / (1 + exp(-x)) */
  /* 2^x by the MUFU unit as one instruction (ex2.approx.ftz.f32: about 2 ulp, subnormal
   * inputs and results flushed to zero) where TIRX_MATH_EXP2 (exp2f) handles subnormals in
   * three more; f64 stays exact. For softmax-like code whose tiny values do not matter. */
  TIRX_MATH_EXP2_APPROX = 14,
  TIRX_MATH_COUNT = 15
} tirx_math_op;

/* op(x) (tirx_math_op), and the same for one op each: exp, exp2, log, log2, sqrt, rsqrt, tanh,
 * erf, fabs. */
TIRX_API tirx_expr *tirx_math(tirx_builder *b, tirx_math_op op, tirx_expr *x);
TIRX_API tirx_expr *tirx_exp(tirx_builder *b, tirx_expr *x);
TIRX_API tirx_expr *tirx_exp2(tirx_builder *b, tirx_expr *x);
TIRX_API tirx_expr *tirx_log(tirx_builder *b, tirx_expr *x);
TIRX_API tirx_expr *tirx_log2(tirx_builder *b, tirx_expr *x);
TIRX_API tirx_expr *tirx_sqrt(tirx_builder *b, tirx_expr *x);
TIRX_API tirx_expr *tirx_rsqrt(tirx_builder *b, tirx_expr *x);
TIRX_API tirx_expr *tirx_tanh(tirx_builder *b, tirx_expr *x);
TIRX_API tirx_expr *tirx_erf(tirx_builder *b, tirx_expr *x);
TIRX_API tirx_expr *tirx_fabs(tirx_builder *b, tirx_expr *x);
/* x raised to y, both of one floating-point type. */
TIRX_API tirx_expr *tirx_pow(tirx_builder *b, tirx_expr *x, tirx_expr *y);

/* ---- Expressions: memory and warps ---------------------------------------------------------- */

/*
 * Element index[0..n) of t, of t's dtype; n must be t's rank and the indices integers. The
 * address is t's layout evaluated on m (global and shared) or on the thread's storage
 * (local): no hand-written address arithmetic. Indices are not bounds-checked at run time;
 * a constant index into a constant dimension must be within it (TIRX_E_OUT_OF_RANGE, also
 * for tirx_store and tirx_atomic_add).
 */
TIRX_API tirx_expr *tirx_load(tirx_builder *b, tirx_tensor *t, int n,
                              tirx_expr *const *index);

/* __shfl_xor_sync / __shfl_down_sync over the full warp: x from lane (lane ^ mask) or
 * (lane + delta). x is f32, f64, i32, u32 or i64; mask and delta are integers. Every lane of
 * the warp must evaluate it together. */
TIRX_API tirx_expr *tirx_shfl_xor(tirx_builder *b, tirx_expr *x, tirx_expr *mask);
TIRX_API tirx_expr *tirx_shfl_down(tirx_builder *b, tirx_expr *x, tirx_expr *delta);

/* ---- Statements ------------------------------------------------------------------------------ */
/* Statements are appended at the insertion point: the innermost open for/if block, else the
 * kernel body. */

typedef enum tirx_loop_kind {
  TIRX_LOOP_SERIAL = 0, /* an ordinary loop */
  TIRX_LOOP_UNROLL = 1  /* #pragma unroll */
} tirx_loop_kind;

/*
 * Opens `for (name = lo; name < hi; name += step)` and returns the loop variable, valid
 * until the matching tirx_for_end(). lo, hi and step are integers (step NULL means 1; a
 * constant step must be > 0); the variable has their common type.
 */
TIRX_API tirx_expr *tirx_for_begin(tirx_builder *b, const char *name, tirx_expr *lo,
                                   tirx_expr *hi, tirx_expr *step, tirx_loop_kind kind);
TIRX_API void tirx_for_end(tirx_builder *b);

/* if (cond) { ... } [else { ... }]; cond is bool. tirx_else() switches the innermost open if
 * to its else branch (once). */
TIRX_API void tirx_if_begin(tirx_builder *b, tirx_expr *cond);
TIRX_API void tirx_else(tirx_builder *b);
TIRX_API void tirx_if_end(tirx_builder *b);

/* An immutable named value: evaluates value once here; the result refers to it until the
 * enclosing block ends. */
TIRX_API tirx_expr *tirx_let(tirx_builder *b, const char *name, tirx_expr *value);

/* A mutable variable of dtype, initialised to init (NULL: zero). The result reads it; write it
 * with tirx_assign(). Valid until the enclosing block ends. */
TIRX_API tirx_expr *tirx_var(tirx_builder *b, const char *name, tirx_dtype dtype,
                             tirx_expr *init);
/* var = value; var must come from tirx_var() and value have its dtype (weak constants
 * adapt when exact in it; otherwise TIRX_E_TYPE, as for tirx_var's init). */
TIRX_API void tirx_assign(tirx_builder *b, tirx_expr *var, tirx_expr *value);

/* t[index] = value (n indices, t's rank); value must have t's dtype (weak constants adapt
 * when exact in it, so tirx_int(b, 1000) is not stored to u8; otherwise tirx_cast). */
TIRX_API void tirx_store(tirx_builder *b, tirx_tensor *t, int n, tirx_expr *const *index,
                         tirx_expr *value);

/* atomicAdd(&t[index], value) on a global or shared tensor of dtype f32, f64, i32, u32 or
 * i64. */
TIRX_API void tirx_atomic_add(tirx_builder *b, tirx_tensor *t, int n,
                              tirx_expr *const *index, tirx_expr *value);

/* __syncthreads() and __syncwarp(). */
TIRX_API void tirx_sync_threads(tirx_builder *b);
TIRX_API void tirx_sync_warp(tirx_builder *b);

/* ---- Launch configuration --------------------------------------------------------------- */

/* Grid dimensions: integer expressions computable at launch (NULL means 1). Default (1,1,1).
 * At launch x must be in [1, 2^31-1], y and z in [1, 65535]. */
TIRX_API void tirx_set_grid(tirx_builder *b, tirx_expr *x, tirx_expr *y, tirx_expr *z);

/* Block dimensions, constants (required before tirx_kernel_build): each >= 1, x, y <= 1024,
 * z <= 64, product <= 1024. Also emitted as __launch_bounds__. Set it before the body: tile
 * primitives (with their scopes) and native statements are checked against it as they are
 * built, so once one exists another block is refused (TIRX_E_INVALID_ARG; the same block
 * again is accepted). */
TIRX_API void tirx_set_block(tirx_builder *b, int x, int y, int z);

/* An occupancy floor: n CTAs of the kernel resident on one SM at least (1 to 32), emitted as
 * __launch_bounds__(threads, n), so ptxas caps the registers at what n CTAs leave (65536 / (n x
 * threads), less its allocation granularity) and spills the rest to local memory. Default:
 * none (ptxas chooses). Checked by tirx_kernel_build: n x threads at most 2048 (an SM's
 * threads), and n = 1 in a kernel that uses tirx_setmaxnreg (TIRX_E_BUILD otherwise). */
TIRX_API void tirx_set_min_blocks(tirx_builder *b, int n);

/* Extra dynamic shared memory in bytes (an integer expression computable at launch), added
 * after the buffers of tirx_alloc_shared(). Default none. */
TIRX_API void tirx_set_shared_bytes(tirx_builder *b, tirx_expr *bytes);

/*
 * Raw CUDA source (what CuPy's RawKernel and jitify do): the kernel's code is source, CUDA C++
 * text with an extern "C" __global__ entry point named as the builder (tirx_builder_create's
 * name), instead of code generated from statements. Everything else stays: the declared
 * parameters and their policies give the argument checks and the specialisation,
 * tirx_set_block/_grid/_shared_bytes the launch, the text's hash the cache key, and launches
 * use the same cache, compile queue and launch path as any kernel. The entry point takes, in
 * this order: every declared parameter in declaration order (i32 int, i64 long long, f32 float,
 * f64 double, a tensor a pointer to its element type), then one long long per tensor
 * dimension whose stride is neither a constant nor a single integer parameter (a dense
 * [a, b, c] tensor passes b * c for dimension 0), tensors and dimensions in declaration order.
 * A specialised variant's source is the text after "#define TIRX_SPEC_<param> <value>" lines
 * (TIRX_DIV16_<param> 1 for a divisibility policy), which the text may use. source is copied.
 * tirx_kernel_build refuses (TIRX_E_BUILD) a kernel that also has statements or shared
 * buffers. A name the text does not define fails when the module is loaded (TIRX_E_DRIVER,
 * CUDA_ERROR_NOT_FOUND). Records on b: TIRX_E_NULL_ARG (source), TIRX_E_INVALID_ARG (an empty
 * source, or a second call).
 */
TIRX_API void tirx_set_source(tirx_builder *b, const char *source);

/*
 * The dispatch target: the GPU architecture the kernel's tile primitives are dispatched for,
 * "sm_<major><minor>" with an optional "a" (arch-specific) or "f" suffix, sm_80 or newer:
 * "sm_80", "sm_86", "sm_89", "sm_90", "sm_90a", "sm_100a". Default "sm_90a". Copied; may be
 * called any time before tirx_kernel_build (dispatch happens there); the last call counts.
 *
 * Dispatch considers only the rules of the target (a rule's minimum arch: TMA, wgmma, stmatrix
 * and DSMEM reductions are sm_90; wgmma is sm_90a only, so "sm_90" excludes it), and the
 * dispatch report's keys print it as arch=sm_NN. When no rule of the target is legal, the
 * error also names the rules that need a newer one ("copy_async.tma: needs sm_90 or newer").
 * tirx_kernel_build also fails with TIRX_E_NOT_SUPPORTED when a native statement needs a newer
 * target than this one (mbarriers, fences, clusters, elect, TMA bulk groups: sm_90; setmaxnreg
 * and the wgmma groups: sm_90a exactly; cp.async groups: sm_80):
 *
 *     tirx_kernel_build: tirx_mbarrier_init needs sm_90 or newer: the target is sm_80
 *     (tirx_set_target)
 *
 * The kernel remembers its target (tirx_kernel_target) and what its code needs: tirx_compile
 * and launches refuse an arch older than the newest need (a kernel dispatched for sm_90a that
 * uses wgmma does not compile for sm_80; one whose rules all run on sm_80 does), and a kernel
 * dispatched for sm_80 compiles for any newer arch.
 * Errors (recorded): TIRX_E_NULL_ARG (arch NULL), TIRX_E_INVALID_ARG (not of the form above),
 * TIRX_E_NOT_SUPPORTED (older than sm_80).
 */
TIRX_API void tirx_set_target(tirx_builder *b, const char *arch);

/* ---- Building and the kernel -------------------------------------------------------------- */

/*
 * Validates the kernel (the first recorded error; every for/if closed; every variable used
 * only where it is in scope; the block size set; resource limits) and freezes it: generates
 * the CUDA C++ source, its XXH3-128 hash and the IR text. On success *out is a new kernel
 * with one reference, owned by the caller (tirx_kernel_release()). The builder stays usable.
 * Errors: the first error's status, TIRX_E_NULL_ARG, TIRX_E_BUILD (validation), TIRX_E_LIMIT,
 * TIRX_E_OVERFLOW, TIRX_E_NO_MEMORY. On failure *out is set to NULL and the message is also
 * in tirx_builder_error(b) (unless b is NULL); like any argument error, a NULL out is recorded
 * as the builder's error when it has none.
 */
TIRX_API tirx_status tirx_kernel_build(tirx_builder *b, tirx_kernel **out);

/* Adds a reference; returns k. Thread-safe. NULL is a no-op returning NULL. */
TIRX_API tirx_kernel *tirx_kernel_retain(tirx_kernel *k);
/* Drops a reference; the last one frees the kernel. Thread-safe. NULL is a no-op. */
TIRX_API void tirx_kernel_release(tirx_kernel *k);

/* The kernel's name (its entry point), the readable IR and the generated CUDA C++. The
 * strings are owned by the kernel and live as long as it. NULL for a NULL kernel. */
TIRX_API const char *tirx_kernel_name(const tirx_kernel *k);
/* The dispatch target the kernel was built for (tirx_set_target: "sm_90a" by default). Owned by
 * the kernel; NULL for a NULL kernel. */
TIRX_API const char *tirx_kernel_target(const tirx_kernel *k);
TIRX_API const char *tirx_kernel_ir_str(const tirx_kernel *k);
TIRX_API const char *tirx_kernel_source(const tirx_kernel *k);

/* The number of declared parameters (the launch arguments in full), and the name of
 * parameter i (NULL when out of range). */
TIRX_API int tirx_kernel_num_params(const tirx_kernel *k);
TIRX_API const char *tirx_kernel_param_name(const tirx_kernel *k, int i);

/* The specialisation policy of parameter i; TIRX_SPECIALIZE_DYNAMIC for a NULL kernel, an
 * index out of range and parameters not made by tirx_param_int(). */
TIRX_API tirx_specialize tirx_kernel_param_policy(const tirx_kernel *k, int i);

/* ---- Execution scopes (paper section 4.1) ------------------------------------------------ */
/*
 * The builder tracks the execution scope at the insertion point: the active thread set A and
 * the team kind. The kernel body starts with every thread of the CTA active and team kind
 * CTA (cluster size 1). Scopes need the block size: call tirx_set_block() first (else
 * TIRX_E_BUILD). Team and filter blocks nest with each other and with for/if blocks; each
 * must be closed at the nesting level where it was opened.
 */

/* Switches the team kind to team for the enclosed code (tile primitives are lowered at that
 * granularity); the active threads are unchanged. Errors (recorded on the builder, messages
 * as tirx_scope_team's with the function name "tirx_team_begin"): TIRX_E_INVALID_ARG (team
 * out of range), TIRX_E_SCOPE (the teams would not be uniform, e.g. active warps [3, 7) under
 * TIRX_TEAM_WARPGROUP), TIRX_E_BUILD (no block size), TIRX_E_LIMIT (nesting). */
TIRX_API void tirx_team_begin(tirx_builder *b, tirx_team team);
TIRX_API void tirx_team_end(tirx_builder *b);

/* Narrows the active threads to those whose coordinate on axis (laneid, warpid, wid_in_wg,
 * wgid, tid_in_wg, tid) lies in [lo, hi) (a point when hi == lo + 1). Checked at build time
 * with the rules of paper 4.1 (tirx_scope_filter: only shrink, one contiguous range, uniform
 * teams) and guarded at run time: the enclosed code runs under `if (lo <= coord && coord <
 * hi)`. Errors: those of tirx_scope_filter with the function name "tirx_filter_begin",
 * TIRX_E_NOT_SUPPORTED (an axis outside the CTA: cta, cbx, cluster), TIRX_E_BUILD, TIRX_E_LIMIT. */
TIRX_API void tirx_filter_begin(tirx_builder *b, tirx_axis axis, int64_t lo, int64_t hi);
TIRX_API void tirx_filter_end(tirx_builder *b);

/* ---- Tile primitives (paper section 5) --------------------------------------------------- */

/* A region: a tensor and, per dimension, a begin (an integer expression) and a constant
 * extent >= 1; or a scalar expression broadcast over the tile (tirx_broadcast). Builder-owned. */
typedef struct tirx_region tirx_region;

/* The region begins[k] .. begins[k] + extents[k] of t (n = t's rank). Constant begins are
 * checked against constant dimensions (TIRX_E_OUT_OF_RANGE). Local tensors, and global
 * tensors with a layout, need constant begins (TIRX_E_NOT_SUPPORTED otherwise). A shared
 * tensor's begin may be any integer expression (stage s of a ring: not checked at run time);
 * as a primitive's operand its dim must then be one iter of the layout, and for a swizzled
 * layout the begin must move the start by multiples of 1024 bytes, which the builder sees when
 * the begin is written as a multiple (s, s * 64: TIRX_E_NOT_SUPPORTED at build otherwise). */
TIRX_API tirx_region *tirx_region_new(tirx_builder *b, tirx_tensor *t, int n,
                                      tirx_expr *const *begins, const int64_t *extents);
/* All of t (its shape must be constant: shared, local or laid-out tensors). */
TIRX_API tirx_region *tirx_whole(tirx_builder *b, tirx_tensor *t);
/* value broadcast over the tile, usable as a source of tirx_map and tirx_fill's siblings. */
TIRX_API tirx_region *tirx_broadcast(tirx_builder *b, tirx_expr *value);
/* The index along dim (0-based, i32) of the element a tile primitive computes, usable only
 * inside the value of a tirx_broadcast operand of a pointwise primitive (tirx_map, tirx_binary,
 * tirx_select_region, ...): the broadcast becomes per element, as an iota. With it a primitive
 * can mask by position, as attention's causal and tail masks do:
 *   cond = tirx_broadcast(b, tirx_le(b, tirx_add(b, kv0, tirx_elem_index(b, 1)), limit));
 *   tirx_select_region(b, S, cond, tirx_whole(b, S), tirx_broadcast(b, minus_inf), NULL);
 * The index is within the tile (0 .. extent - 1): add the region's begin for a position in
 * the tensor. Such a primitive runs one element at a time (no vectors, no packed math).
 * Errors: TIRX_E_INVALID_ARG (dim outside 0 .. TIRX_BUILDER_MAX_RANK - 1, recorded; and at
 * tirx_kernel_build, a use outside a broadcast operand or a dim at or above the tile's rank). */
TIRX_API tirx_expr *tirx_elem_index(tirx_builder *b, int dim);

/* Operations of pointwise and reduce primitives. */
typedef enum tirx_op {
  TIRX_OP_ADD = 1, TIRX_OP_SUB = 2, TIRX_OP_MUL = 3, TIRX_OP_DIV = 4, TIRX_OP_MAX = 5,
  TIRX_OP_MIN = 6, TIRX_OP_FMA = 7, TIRX_OP_NEG = 8, TIRX_OP_ABS = 9, TIRX_OP_EXP = 10,
  TIRX_OP_EXP2 = 11, TIRX_OP_LOG = 12, TIRX_OP_SQRT = 13, TIRX_OP_RSQRT = 14,
  TIRX_OP_TANH = 15, TIRX_OP_SIGMOID = 16,
  TIRX_OP_SUM = 17,   /* reduce */
  TIRX_OP_SUMSQ = 18, /* reduce: the sum of squares */
  TIRX_OP_PROD = 19,  /* reduce */
  TIRX_OP_SILU = 20, TIRX_OP_GELU = 21, /* gelu: 0.5 x (1 + erf(x / sqrt 2)) */
  TIRX_OP_COPY = 22,  /* unary identity */
  TIRX_OP_EXP2_APPROX = 23 /* unary: TIRX_MATH_EXP2_APPROX (flushes subnormals) */
} tirx_op;

/* Cache hints of global accesses (PTX ld/st qualifiers). */
typedef enum tirx_hint {
  TIRX_HINT_NONE = 0,
  TIRX_HINT_STREAM = 1,   /* .cs: evict first; data read or written once */
  TIRX_HINT_LAST_USE = 2, /* .lu */
  TIRX_HINT_NC = 3        /* ld.global.nc */
} tirx_hint;

/* How a primitive call is dispatched. All-zero (or a NULL config) lets the registry choose
 * the rule and the largest legal instruction shape. family forces a family ("vec", "scalar",
 * "shuffle", ...; copied); shape requests one of the rule's legal shapes (zeros: any). */
typedef struct tirx_config {
  const char *family; /* NULL: the registry's choice */
  int64_t shape[3];   /* zeros: the largest legal shape */
  tirx_hint hint;     /* cache hint of global accesses */
  /* tirx_copy_async (TMA loads): the mbarrier the load completes on, one element of a shared
   * TIRX_I64 tensor (tirx_region_new with extents 1), and an optional u16 mask of the CTAs
   * of the cluster that receive the tile (NULL: this CTA only). */
  tirx_region *barrier;
  tirx_expr *multicast;
} tirx_config;

/*
 * The primitives. Each appends one primitive statement at the insertion point, recording its
 * operands, the current scope and config; tirx_kernel_build dispatches it to a rule of the
 * registry and lowers it to native IR (tirx_kernel_dispatch_report says what was chosen).
 * Region operands have one logical shape (the extents; reduce: see below); dst is a region of
 * a tensor, never a broadcast. Argument errors are recorded on the builder as usual;
 * dispatch errors (TIRX_E_NO_RULE, an illegal forced family or shape, a rule without
 * lowering) are returned by tirx_kernel_build.
 */
TIRX_API void tirx_copy(tirx_builder *b, tirx_region *dst, tirx_region *src,
                        const tirx_config *cfg);
/* dst = op(srcs[0..n)), n = 1, 2 or 3 (the op's arity); region sources have dst's dtype,
 * broadcast sources are converted to it. */
TIRX_API void tirx_map(tirx_builder *b, tirx_region *dst, tirx_op op, int n,
                       tirx_region *const *srcs, const tirx_config *cfg);
TIRX_API void tirx_unary(tirx_builder *b, tirx_region *dst, tirx_op op, tirx_region *a,
                         const tirx_config *cfg);
TIRX_API void tirx_binary(tirx_builder *b, tirx_region *dst, tirx_op op, tirx_region *a,
                          tirx_region *x, const tirx_config *cfg);
TIRX_API void tirx_ternary(tirx_builder *b, tirx_region *dst, tirx_op op, tirx_region *a,
                           tirx_region *x, tirx_region *y, const tirx_config *cfg);
/* dst = src converted to dst's dtype (tirx_cast's rules). Named _region: tirx_cast converts
 * an expression. */
TIRX_API void tirx_cast_region(tirx_builder *b, tirx_region *dst, tirx_region *src,
                               const tirx_config *cfg);
/* dst = value (converted to dst's dtype). */
TIRX_API void tirx_fill(tirx_builder *b, tirx_region *dst, tirx_expr *value,
                        const tirx_config *cfg);
/* dst = cond ? x : y elementwise; cond is a bool region or a bool broadcast. */
TIRX_API void tirx_select_region(tirx_builder *b, tirx_region *dst, tirx_region *cond,
                                 tirx_region *x, tirx_region *y, const tirx_config *cfg);
/* dst = reduction of src over the dims in axes (bit k = dim k; TIRX_OP_SUM, SUMSQ, PROD, MAX,
 * MIN); dst keeps the reduced dims with extent 1 or drops them. accumulate: dst = op(dst,
 * result) (sumsq adds). */
TIRX_API void tirx_reduce(tirx_builder *b, tirx_region *dst, tirx_region *src, tirx_op op,
                          uint32_t axes, bool accumulate, const tirx_config *cfg);

/* ---- Asynchronous copies: TMA (sm_90) and cp.async (sm_80) ----------------------------- */
/*
 * dst = src as an asynchronous tile copy between a region of a global tensor and a region of a
 * shared tensor of one dtype and the same extents. The protocol the caller writes picks the
 * instruction family: a load with cfg->barrier, and every store, is a TMA copy; a load without
 * it is a cp.async copy. One never becomes the other (a cp.async load would never complete the
 * mbarrier's transaction bytes, a TMA load without an mbarrier could not be waited for).
 *
 * TMA (rule copy_async.tma, cp.async.bulk.tensor, sm_90):
 *   global -> shared: a load; cfg->barrier is the mbarrier it completes on with
 *     complete_tx: the caller arrives with expect_tx(box bytes) and waits on its phase. A
 *     cfg->multicast mask (a load with a barrier only) delivers the tile to the same shared
 *     offset (and barrier) of every CTA of the cluster in the mask (needs tirx_set_cluster).
 *     cfg->hint TIRX_HINT_STREAM (data read once, a KV cache) gives the load an L2
 *     evict_first policy (.L2::cache_hint); a load with a mask takes no hint.
 *   shared -> global: a store, tracked by bulk groups (tirx_bulk_commit, tirx_bulk_wait);
 *     cfg->barrier, cfg->multicast and cfg->hint must be NULL / none.
 *   One thread issues it: the active threads at the call must be exactly one
 *   (tirx_filter_begin(b, TIRX_AXIS_TID, t, t + 1)); the dispatch report says otherwise.
 *   The tensor map is derived from the layouts (the shared layout's dense part is the box,
 *   the rest are unrolled loops of TMA instructions) and encoded at launch from the argument's
 *   pointer, shape and strides: elements outside the tensor read as zero and are not written,
 *   so tiles at the edges need no special code. The global tensor's innermost dimension of the
 *   box must be contiguous, its base pointer 16-byte aligned and its other strides multiples
 *   of 16 bytes (tirx_launch checks). A store clips only at 16-byte granularity: it writes
 *   the whole 16-byte piece that holds a row's last element, so tirx_launch refuses a stored
 *   tensor whose innermost extent is not a multiple of 16 bytes (TIRX_E_LAUNCH_ARG); store
 *   such tensors with tirx_store or tirx_copy instead.
 *
 * cp.async (rule copy_async.cp_async, sm_80; global -> shared without cfg->barrier):
 *   the threads of the call's team (complete: a whole warp, warpgroup or CTA) share the
 *   tile's vectors round-robin, each moved by one cp.async of 16 bytes (.cg, where both
 *   layouts hold 16-byte vectors along the innermost dimension, the global start's alignment
 *   known at build time: constant strides, begins written as multiples) or else 8 or 4 bytes
 *   (.ca). A copy whose innermost elements cannot be grouped into 4 bytes (f16 with an odd or
 *   unknown stride) has no legal rule. Elements outside the global tensor read as zero (the
 *   src-size operand: a partial vector reads its valid bytes, a row past the end reads none),
 *   so tiles at the edges need no special code; begins are taken to be >= 0. The copies join
 *   the issuing thread's open cp.async group: close it with tirx_cp_async_commit(), wait with
 *   tirx_cp_async_wait(n) or tirx_cp_async_wait_all(), then tirx_sync_threads() (or a barrier
 *   over the team) before a thread reads what another one copied.
 *   On sm_90 targets copy_async.tma is tried first and rejected for the missing barrier: the
 *   report shows the load as a fallback with TMA's reasons; cfg->family "cp_async" forces it.
 *
 * Shared regions may have a non-constant begin on dims of extent 1 (a stage of a ring buffer).
 * Errors (recorded): TIRX_E_NULL_ARG, TIRX_E_INVALID_ARG (operands, barrier, multicast),
 * TIRX_E_TYPE (dtypes).
 */
TIRX_API void tirx_copy_async(tirx_builder *b, tirx_region *dst, tirx_region *src,
                              const tirx_config *cfg);

/* cp.async.bulk.commit_group: closes the bulk group of this thread's TMA stores so far. */
TIRX_API void tirx_bulk_commit(tirx_builder *b);

/* cp.async.bulk.wait_group[.read] n: waits until at most n (0 to 63) of this thread's bulk
 * groups are pending; read_only waits only until their shared-memory sources have been read
 * (enough to overwrite them). */
TIRX_API void tirx_bulk_wait(tirx_builder *b, int n, bool read_only);

/* prefetch.tensormap of every tensor map of the global tensor t the kernel's copies use
 * (none: nothing is emitted). */
TIRX_API void tirx_tmap_prefetch(tirx_builder *b, tirx_tensor *t);

/*
 * cp.async groups (sm_80): each thread counts its own. These are not the bulk groups of TMA
 * stores: a tirx_bulk_wait does not wait for cp.async copies, nor the other way round. A
 * double-buffered loop issues the next stage's tirx_copy_async, commits, waits with n = 1 (the
 * current stage's group is done, the next one may still run), synchronises the threads and
 * reads the current stage. Errors (recorded): TIRX_E_INVALID_ARG (n).
 */
/* cp.async.commit_group: closes this thread's group of cp.async copies issued since its last
 * commit (an empty group is allowed: loops may commit every iteration). */
TIRX_API void tirx_cp_async_commit(tirx_builder *b);
/* cp.async.wait_group n: waits until at most n (0 to 63) of this thread's committed groups
 * are pending. The data of the finished groups is then visible to this thread. */
TIRX_API void tirx_cp_async_wait(tirx_builder *b, int n);
/* cp.async.wait_all: waits for all of this thread's cp.async copies, committed or not. */
TIRX_API void tirx_cp_async_wait_all(tirx_builder *b);

/* ---- Clusters (sm_90) -------------------------------------------------------------------- */

/* Launches the kernel in clusters of x * y * z CTAs (constants, each >= 1, product <= 8)
 * through cuLaunchKernelEx; at launch every grid dimension must be a multiple of the
 * cluster's (TIRX_E_LAUNCH_ARG otherwise). Register layouts may then place iters on cbx
 * (clusters of x CTAs: the coordinate is %cluster_ctarank), and a reduction over them under
 * TIRX_TEAM_CLUSTER is reduce.dsmem. */
TIRX_API void tirx_set_cluster(tirx_builder *b, int x, int y, int z);

/* %cluster_ctarank (this CTA's rank in its cluster) and %clusterid.{x,y,z}; i32. */
TIRX_API tirx_expr *tirx_cluster_ctarank(tirx_builder *b);
TIRX_API tirx_expr *tirx_cluster_id(tirx_builder *b, int dim);
/* ---- Matrix multiply (paper table 2: gemm, gemm_async) ---------------------------------- */

/*
 * How a gemm or gemm_async call is dispatched. family forces a family ("wgmma" for
 * gemm_async; "mma" or "scalar" for gemm; copied), NULL lets the registry choose; shape
 * requests an instruction shape (m, n, k; zeros: the largest legal). accumulate is the bool
 * predicate of d = accumulate ? d + a*b : a*b (wgmma's scale-d: false on a tile's first
 * k-block overwrites d, so no zeroing is needed); NULL means always accumulate.
 */
typedef struct tirx_gemm_config {
  const char *family;    /* NULL: the registry's choice */
  int64_t shape[3];      /* m, n, k; zeros: the largest legal */
  tirx_expr *accumulate; /* NULL: always accumulate */
} tirx_gemm_config;

/*
 * d (M, N) = [d +] a (M, K) x b (K, N), a tile primitive at the current scope: d is a local
 * f32 tensor held as register fragments (or a shared/global region for "scalar"), a and b are
 * regions of one 16-bit dtype (f16 or bf16), in shared memory for "mma" and "wgmma" (a may be
 * in registers for "wgmma", the RS form). Families:
 *   gemm "mma"     (warp) mma.sync.aligned.m16n8k16.row.col.f32.{bf16,f16} with ldmatrix
 *                  operands: d is tiled by the m16n8 C fragment on laneid and reg
 *                  (tirx_layout_mma_m16n8k16_c), a K-major with 16-byte rows, b K-major
 *                  (logically (K, N) with stride 1 along K).
 *   gemm "scalar"  (any scope; the fallback) FMA loops: each thread computes the elements of d
 *                  it holds (or, for d in memory, the team shares them); a and b in memory.
 *   gemm_async "wgmma" (a full warpgroup, sm_90a) wgmma.mma_async.sync.aligned.m64nNk16:
 *                  d is tirx_layout_wgmma_acc(M, N) (M a multiple of 64: one m64 slab each, N
 *                  <= 256), b K-major in a 32/64/128-byte swizzled tile
 *                  (tirx_layout_smem_tile) or a core-matrix tile, K a multiple of 16; a either
 *                  the same in shared memory (rule gemm_async.wgmma, the SS form) or a local
 *                  tensor of the warpgroup (rule gemm_async.wgmma_rs, the RS form) whose every
 *                  (64, 16) block is the wgmma A fragment at some register offset, as
 *                  tirx_layout_wgmma_a(M, K) lays it out. Such a tile is filled by tirx_copy
 *                  from a K-major shared tile at warpgroup scope (copy.ldmatrix), or by a
 *                  pointwise primitive: an accumulator cast to f16/bf16 is one as it stands
 *                  (tirx_layout_wgmma_acc(M, K) places elements as tirx_layout_wgmma_a(M, K)).
 *                  The RS form has no transposed A. Each call issues a wgmma.fence after
 *                  register fences on d and (RS) a, so registers written before the call are
 *                  written before the wgmma reads them, as the PTX ISA requires. It only
 *                  issues: pair it with tirx_wgmma_commit() and tirx_wgmma_wait() before d is
 *                  read or a and b are overwritten (a's registers included).
 * Argument errors are recorded on the builder (NULL operands, a broadcast, cfg->family
 * unknown is a dispatch error); dispatch errors come from tirx_kernel_build.
 */
TIRX_API void tirx_gemm(tirx_builder *b, tirx_region *d, tirx_region *a, tirx_region *bm,
                        const tirx_gemm_config *cfg);
TIRX_API void tirx_gemm_async(tirx_builder *b, tirx_region *d, tirx_region *a, tirx_region *bm,
                              const tirx_gemm_config *cfg);

/* ---- Synchronisation and asynchronous hardware (sm_90) -------------------------------------- */
/*
 * Native statements, each one small inline-PTX helper in the generated code. An mbarrier is an
 * element of a shared TIRX_I64 tensor (tirx_alloc_mbarrier), passed as a region of exactly one
 * element; its index may be any integer expression (stage s of a ring). Errors (recorded on
 * the builder, the message starting with the function's name): TIRX_E_NULL_ARG,
 * TIRX_E_INVALID_ARG (an argument out of its range, a region that is not one mbarrier),
 * TIRX_E_TYPE (an expression of the wrong dtype), TIRX_E_SCOPE (a warpgroup-wide statement
 * where the active threads are not whole warpgroups), TIRX_E_BUILD (no block size).
 */

/* n mbarriers: a shared TIRX_I64 tensor of shape [n] (n >= 1), 8-byte aligned. Initialise each
 * with tirx_mbarrier_init() before use. */
TIRX_API tirx_tensor *tirx_alloc_mbarrier(tirx_builder *b, const char *name, int64_t n);

/* mbarrier.init with count arrivals per phase (1 to 2^20 - 1). Run it from one thread, then
 * tirx_fence_mbarrier_init() (or tirx_fence_proxy_async()) and a barrier. */
TIRX_API void tirx_mbarrier_init(tirx_builder *b, tirx_region *bar, int64_t count);
/* One arrival (mbarrier.arrive.release.cta). */
TIRX_API void tirx_mbarrier_arrive(tirx_builder *b, tirx_region *bar);
/* One arrival on the mbarrier at the same offset in the shared memory of the cluster's CTA of
 * rank cta_rank (an integer expression): mapa + mbarrier.arrive.shared::cluster, with the
 * default release semantics at CTA scope (CUTLASS's ClusterBarrier::arrive): what a consumer
 * needs to give a stage it has read back to a producer in another CTA of the cluster. (A
 * release at cluster scope stalled the GEMM's consumers on every stage: PERF-NOTES.) */
TIRX_API void tirx_mbarrier_arrive_cluster(tirx_builder *b, tirx_region *bar,
                                           tirx_expr *cta_rank);
/* One arrival that also expects bytes more transaction bytes in the current phase
 * (mbarrier.arrive.expect_tx; bytes an integer expression, a constant in [0, 2^20 - 1]). */
TIRX_API void tirx_mbarrier_expect_tx(tirx_builder *b, tirx_region *bar, tirx_expr *bytes);
/* Waits until the phase with parity phase (an integer expression; its lowest bit counts) has
 * completed: a mbarrier.try_wait.parity loop. */
TIRX_API void tirx_mbarrier_wait(tirx_builder *b, tirx_region *bar, tirx_expr *phase);

/* fence.proxy.async.shared::cta: shared-memory writes of ordinary code become visible to the
 * async proxy (TMA, wgmma) and the other way round. */
TIRX_API void tirx_fence_proxy_async(tirx_builder *b);

/* fence.mbarrier_init.release.cluster: initialised mbarriers become visible to the cluster. */
TIRX_API void tirx_fence_mbarrier_init(tirx_builder *b);

/*
 * Rings: the stages of a pipeline handed between producers and consumers, each stage a pair of
 * mbarriers: "full" completes when the producers have arrived (with the transaction bytes of
 * their TMA loads), "empty" when the consumers have released it. A ring counts its uses with
 * the caller's counter n (a tirx_var incremented once per use, on both sides alike): use n is
 * stage n % stages, phase (n / stages) & 1; the producer waits for the opposite phase of
 * "empty", so that its first pass over fresh barriers does not wait.
 *
 *   tirx_ring *kv = tirx_ring_new(b, "k", 2, 1, 2);      // k_full[2], k_empty[2]
 *   if (thread 0) tirx_rings_init(b, (tirx_ring *[]){kv}, 1); then tirx_sync_threads(b)
 *   producer:  s = tirx_ring_stage(b, kv, it); ph = tirx_ring_phase(b, kv, it, true);
 *              tirx_ring_acquire(b, kv, s, ph, bytes); TMA with barrier tirx_ring_full(b, kv, s)
 *   consumer:  s = ...; ph = tirx_ring_phase(b, kv, it, false); tirx_ring_wait(b, kv, s, ph);
 *              ... use the stage ...; tirx_ring_release(b, kv, s) (one arrival per consumer)
 *
 * tirx_ring_new allocates the two barrier arrays as shared tensors "<name>_full" and
 * "<name>_empty" (stages 1..64; producers and consumers the arrival counts, >= 1).
 * tirx_rings_init initialises every stage of the given rings (stage by stage, each ring's full
 * then empty barrier) and fences the initialisation: call it from one thread, then synchronise
 * the CTA. tirx_ring_stage and tirx_ring_phase bind n's stage and phase to lets ("s", "ph").
 * tirx_ring_acquire waits for the stage to be empty and, with non-NULL bytes, arms its full
 * barrier with them (mbarrier.expect_tx); tirx_ring_wait waits for it to be full;
 * tirx_ring_release arrives on its empty barrier. The ring is owned by the builder.
 * Errors (recorded): TIRX_E_NULL_ARG (a NULL ring or array), TIRX_E_INVALID_ARG (stages, counts,
 * a name too long), and the mbarrier calls' own.
 */
typedef struct tirx_ring tirx_ring;
TIRX_API tirx_ring *tirx_ring_new(tirx_builder *b, const char *name, int stages,
                                  int64_t producers, int64_t consumers);
TIRX_API int tirx_ring_stages(const tirx_ring *r);
TIRX_API void tirx_rings_init(tirx_builder *b, tirx_ring *const *rings, int n);
TIRX_API tirx_expr *tirx_ring_stage(tirx_builder *b, const tirx_ring *r, tirx_expr *n);
TIRX_API tirx_expr *tirx_ring_phase(tirx_builder *b, const tirx_ring *r, tirx_expr *n,
                                    bool producer);
TIRX_API tirx_region *tirx_ring_full(tirx_builder *b, const tirx_ring *r, tirx_expr *stage);
TIRX_API tirx_region *tirx_ring_empty(tirx_builder *b, const tirx_ring *r, tirx_expr *stage);
TIRX_API void tirx_ring_acquire(tirx_builder *b, const tirx_ring *r, tirx_expr *stage,
                                tirx_expr *phase, tirx_expr *bytes);
TIRX_API void tirx_ring_wait(tirx_builder *b, const tirx_ring *r, tirx_expr *stage,
                             tirx_expr *phase);
TIRX_API void tirx_ring_release(tirx_builder *b, const tirx_ring *r, tirx_expr *stage);
/* Every thread of every CTA of the cluster: barrier.cluster.arrive.release.aligned +
 * barrier.cluster.wait.acquire.aligned. */
TIRX_API void tirx_cluster_sync(tirx_builder *b);
/* Programmatic dependent launch (sm_90). tirx_grid_dependency_wait: griddepcontrol.wait, every
 * thread that reaches it waits until the grids this one depends on have completed and their
 * memory is visible; a kernel that calls it is launched with programmatic stream serialization
 * (the launch attribute), so it may start, and run what comes before the wait, while the
 * stream's previous kernel is still running. Call it before the kernel's first read of
 * anything an earlier kernel writes, or its first write of anything an earlier kernel reads,
 * on every path. tirx_grid_launch_dependents: griddepcontrol.launch_dependents, lets a
 * dependent launched after this kernel be scheduled once every CTA has issued it or exited
 * (without it: once every CTA has exited); it changes when the dependent starts, never what it
 * may read. */
TIRX_API void tirx_grid_dependency_wait(tirx_builder *b);
TIRX_API void tirx_grid_launch_dependents(tirx_builder *b);
/* The CTA's rank in its cluster (%cluster_ctarank), i32. */
TIRX_API tirx_expr *tirx_cluster_ctarank(tirx_builder *b);
/* True in exactly one lane of the warp (elect.sync over the full warp), bool. Every lane of
 * the warp must evaluate it together: bind it with tirx_let() where the warp is converged. */
TIRX_API tirx_expr *tirx_elect_one(tirx_builder *b);

/*
 * setmaxnreg.{inc,dec}.sync.aligned.u32 regs: the warpgroup's threads raise (inc true) or lower
 * their register budget to regs, a multiple of 8 in [24, 256]. Every thread of the warpgroup
 * executes it (the active threads must be whole warpgroups; the block a multiple of 128), and
 * the kernel then gets __launch_bounds__(threads, 1), without which ptxas ignores it.
 */
TIRX_API void tirx_setmaxnreg(tirx_builder *b, int regs, bool inc);

/* bar.sync / bar.arrive on named barrier id (1 to 15; 0 is tirx_sync_threads) for nthreads
 * threads (a multiple of 32, at most the block size). */
TIRX_API void tirx_named_barrier_sync(tirx_builder *b, int id, int nthreads);
TIRX_API void tirx_named_barrier_arrive(tirx_builder *b, int id, int nthreads);

/* wgmma.fence / wgmma.commit_group / wgmma.wait_group n (0 to 7 groups left in flight), each
 * by every thread of the warpgroup (whole warpgroups active). tirx_gemm_async issues its own
 * fence; after tirx_wgmma_wait the accumulators and register A tiles (RS form) in scope are
 * fenced so that their reads and writes stay after the wait. */
TIRX_API void tirx_wgmma_fence(tirx_builder *b);
TIRX_API void tirx_wgmma_commit(tirx_builder *b);
TIRX_API void tirx_wgmma_wait(tirx_builder *b, int n);

/*
 * The dispatch report of a built kernel: one line per primitive call, in program order,
 * "[<kernel>:<n>] <key> -> <rule> <shape>", with "(forced)" / "(fallback)" and, for a
 * fallback, one indented line per failed constraint of each rejected rule. "" when the kernel
 * has no primitive; NULL for a NULL kernel. Owned by the kernel.
 */
TIRX_API const char *tirx_kernel_dispatch_report(const tirx_kernel *k);

#ifdef __cplusplus
}
#endif
#endif /* TIRX_BUILDER_H */
