/*
 * CUDA C++ code generation from the kernel IR.
 *
 * One translation unit: a comment, the prelude (prelude.c) and one extern "C" __global__ entry
 * point. The output depends only on the IR (no addresses, no time), so the same kernel gives
 * the same bytes. Names are the ones the caller chose, made unique where scopes would clash
 * and kept clear of C++ keywords and of the functions the generated code calls.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../ir/ir.h"
#include "../ir/kernel_abi.h" /* TIRX__MAX_PARAMS */
#include "../layout/layout_internal.h"
#include "../dispatch/dispatch.h" /* tirx__registry: the families' prelude fragments */
#include "../dispatch/lower.h"    /* tirx__known_divisor */

static const char fn[] = "tirx_kernel_build";

/* ---- names ---- */

static const char *const reserved[] = {
    /* C++ keywords */
    "alignas", "alignof", "and", "and_eq", "asm", "auto", "bitand", "bitor", "bool", "break",
    "case", "catch", "char", "char16_t", "char32_t", "char8_t", "class", "compl", "concept",
    "const", "consteval", "constexpr", "constinit", "const_cast", "continue", "co_await",
    "co_return", "co_yield", "decltype", "default", "delete", "do", "double", "dynamic_cast",
    "else", "enum", "explicit", "export", "extern", "false", "float", "for", "friend", "goto",
    "if", "inline", "int", "long", "mutable", "namespace", "new", "noexcept", "not", "not_eq",
    "nullptr", "operator", "or", "or_eq", "private", "protected", "public", "register",
    "reinterpret_cast", "requires", "return", "short", "signed", "sizeof", "static",
    "static_assert", "static_cast", "struct", "switch", "template", "this", "thread_local",
    "throw", "true", "try", "typedef", "typeid", "typename", "union", "unsigned", "using",
    "virtual", "void", "volatile", "wchar_t", "while", "xor", "xor_eq", "restrict",
    /* CUDA built-ins and the functions generated code calls */
    "threadIdx", "blockIdx", "blockDim", "gridDim", "warpSize", "atomicAdd", "min", "max",
    "expf", "exp2f", "logf", "log2f", "sqrtf", "rsqrtf", "tanhf", "erff", "fabsf", "sinf", "cosf",
    "floorf", "ceilf", "powf", "fminf", "fmaxf", "exp", "exp2", "log", "log2", "sqrt", "rsqrt",
    "tanh", "erf", "fabs", "sin", "cos", "floor", "ceil", "pow", "fmin", "fmax",
    "__syncthreads", "__syncwarp", "__shfl_xor_sync", "__shfl_down_sync", "__int_as_float",
    "__uint_as_float", "__longlong_as_double", "__launch_bounds__", "__global__", "__device__",
    "__shared__", "__align__", "__forceinline__", "__builtin_assume", "main", "fmod", "fmodf",
    /* macros of NVRTC's built-in headers that do not match reserved_prefix() */
    "NULL", "assert", "va_arg", "va_copy", "va_end", "va_start"};

/*
 * Names no suffix can make usable: identifiers reserved to the implementation in C and C++
 * (a leading "__", or "_" and a capital: __CUDA_ARCH__, __LINE__, __cplusplus, __host__,
 * __restrict__, _Bool) and the prefixes of the macros NVRTC's built-in headers define
 * (CUDART_VERSION, CUDA_IPC_HANDLE_SIZE, CU_UUID_HAS_BEEN_DEFINED, NV_IF_TARGET,
 * cudaStreamLegacy, ...).
 */
static bool reserved_prefix(const char *s) {
  if (s[0] == '_' && (s[1] == '_' || (s[1] >= 'A' && s[1] <= 'Z'))) return true;
  if (strncmp(s, "CUDA", 4) == 0 || strncmp(s, "CU_", 3) == 0 || strncmp(s, "NV_", 3) == 0)
    return true;
  return strncmp(s, "cuda", 4) == 0 && s[4] >= 'A' && s[4] <= 'Z';
}

bool tirx__cpp_reserved(const char *name) {
  if (reserved_prefix(name)) return true;
  for (size_t i = 0; i < sizeof reserved / sizeof reserved[0]; i++)
    if (strcmp(reserved[i], name) == 0) return true;
  return false;
}

typedef struct cg {
  const tirx__ir_kernel *k;
  tirx_arena *arena; /* the names' */
  tirx__strbuf sb;
  /* Names visible at the current point: a stack, popped at the end of each block. */
  const char **names;
  int nnames, cap;
  /* The naming table: the C++ name of each declaration (by id), of each parameter's entry
   * point argument (policy VALUE: the body reads a local of the declaration's name), of the
   * hidden stride parameters (by parameter and dimension) and of the tensor maps. */
  const char **decl_name;
  const char **arg_name;
  const char *(*stride_name)[TIRX_BUILDER_MAX_RANK];
  const char *tmap_name[TIRX__MAX_TMAPS];
  /* The first error (the IR stays untouched: the caller records it). */
  bool failed;
  tirx_status status;
  char error[TIRX__ERROR_MAX];
  /* What the walk over the native statements collected (tirx__uses): the register operands
   * fenced after a wait, with the op's fence, and the prelude fragments with their keys, both
   * in first-use order. */
  struct fenced {
    const tirx_tensor *t;
    void (*fence)(tirx__writer *w, const tirx_tensor *t);
  } *fenced;
  int nfenced;
  struct frag_use {
    const tirx__prelude_frag *f;
    int key;
  } *frags;
  int nfrags, capfrags;
} cg;

static void fail(cg *c, tirx_status st, const char *fmt, ...) TIRX_PRINTF(3, 4);
static void fail(cg *c, tirx_status st, const char *fmt, ...) {
  if (c->status == TIRX_OK) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->error, sizeof c->error, fmt, ap);
    va_end(ap);
    c->status = st;
  }
  c->failed = true;
}

/* The C++ name of d ("?" before its declaration: validation rules that out). */
static const char *cname(const cg *c, const tirx__decl *d) {
  const char *s = d->id >= 0 && d->id < c->k->ndecls ? c->decl_name[d->id] : NULL;
  return s ? s : "?";
}

static bool name_taken(const cg *c, const char *s) {
  if (tirx__cpp_reserved(s) || strcmp(s, c->k->name) == 0) return true;
  for (int i = 0; i < c->nnames; i++)
    if (strcmp(c->names[i], s) == 0) return true;
  return false;
}

/* Gives d (NULL: a name of codegen's own) a C++ name that no visible declaration uses and
 * pushes it. */
static const char *declare(cg *c, const tirx__decl *d, const char *base) {
  char pre[TIRX_BUILDER_MAX_NAME + 40], buf[TIRX_BUILDER_MAX_NAME + 56];
  /* A reserved name stays reserved with a suffix: it gets the prefix v_ (v___CUDA_ARCH__,
   * v_NV_IS_HOST), which no reserved_prefix() matches. Keywords and macros get a suffix. */
  snprintf(pre, sizeof pre, reserved_prefix(base) ? "v_%s" : "%s", base);
  snprintf(buf, sizeof buf, "%s", pre);
  for (int n = 1; name_taken(c, buf); n++) snprintf(buf, sizeof buf, "%s_%d", pre, n);
  char *s = tirx__arena_strdup(c->arena, buf, fn);
  if (!s || c->nnames == c->cap) {
    int cap = c->cap ? 2 * c->cap : 64;
    const char **n = s ? realloc(c->names, (size_t)cap * sizeof *n) : NULL;
    if (!n) {
      fail(c, TIRX_E_NO_MEMORY, "%s: out of memory", fn);
      return "?";
    }
    c->names = n;
    c->cap = cap;
  }
  c->names[c->nnames++] = s;
  if (d && d->id >= 0 && d->id < c->k->ndecls) c->decl_name[d->id] = s;
  return s;
}

/* ---- types and constants ---- */

static const char *ctype(int t) {
  switch (t) {
  case TIRX_F32: return "float";
  case TIRX_F16: return "tirx_f16";
  case TIRX_BF16: return "tirx_bf16";
  case TIRX_F64: return "double";
  case TIRX_I8: return "signed char";
  case TIRX_U8: return "unsigned char";
  case TIRX_I32: return "int";
  case TIRX_U32: return "unsigned";
  case TIRX_I64: return "long long";
  case TIRX_BOOL: return "bool";
  default: return "void";
  }
}

static bool is_half(int t) { return t == TIRX_F16 || t == TIRX_BF16; }

static uint16_t f32_to_f16(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000, exp = (x >> 23) & 0xff, mant = x & 0x7fffff;
  if (exp == 0xff) return (uint16_t)(sign | 0x7c00 | (mant ? 0x200 : 0));
  int e = (int)exp - 127 + 15;
  if (e >= 31) return (uint16_t)(sign | 0x7c00);
  if (e <= 0) {
    if (e < -10) return (uint16_t)sign;
    mant |= 0x800000;
    int shift = 14 - e;
    uint32_t h = mant >> shift, rem = mant & ((1u << shift) - 1), mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (h & 1))) h++;
    return (uint16_t)(sign | h);
  }
  uint32_t h = sign | ((uint32_t)e << 10) | (mant >> 13), rem = mant & 0x1fff;
  if (rem > 0x1000 || (rem == 0x1000 && (h & 1))) h++;
  return (uint16_t)h;
}

static uint16_t f32_to_bf16(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  if ((x & 0x7fffffff) > 0x7f800000) return (uint16_t)((x >> 16) | 0x40);
  return (uint16_t)((x + 0x7fff + ((x >> 16) & 1)) >> 16);
}

static void int_const(tirx__strbuf *sb, int64_t v, int t) {
  switch (t) {
  case TIRX_BOOL: tirx__sb_append(sb, v ? "true" : "false"); return;
  case TIRX_U32: tirx__sb_printf(sb, "%lluu", (unsigned long long)v); return;
  case TIRX_I64:
    if (v == INT64_MIN)
      tirx__sb_append(sb, "(-9223372036854775807LL - 1)");
    else
      tirx__sb_printf(sb, v < 0 ? "(%lldLL)" : "%lldLL", (long long)v);
    return;
  case TIRX_I8:
  case TIRX_U8: tirx__sb_printf(sb, "((%s)%lld)", ctype(t), (long long)v); return;
  default:
    if (v == INT32_MIN)
      tirx__sb_append(sb, "(-2147483647 - 1)");
    else
      tirx__sb_printf(sb, v < 0 ? "(%lld)" : "%lld", (long long)v);
    return;
  }
}

static void float_const(tirx__strbuf *sb, double v, int t) {
  if (is_half(t)) {
    uint16_t bits = t == TIRX_F16 ? f32_to_f16((float)v) : f32_to_bf16((float)v);
    tirx__sb_printf(sb, "%s_bits(0x%04x)", t == TIRX_F16 ? "tirx_f16" : "tirx_bf16", bits);
    return;
  }
  if (!isfinite(v)) {
    if (t == TIRX_F32) {
      float f = (float)v;
      uint32_t x;
      memcpy(&x, &f, 4);
      tirx__sb_printf(sb, "__int_as_float(0x%08x)", x);
    } else {
      uint64_t x;
      memcpy(&x, &v, 8);
      tirx__sb_printf(sb, "__longlong_as_double(0x%016llxLL)", (unsigned long long)x);
    }
    return;
  }
  char buf[64];
  snprintf(buf, sizeof buf, t == TIRX_F32 ? "%.9g" : "%.17g", v);
  bool plain = strpbrk(buf, ".e") == NULL;
  /* signbit, not v < 0: -0.0 prints as "-0.0" too, and "(-" "-0.0f" would be "--0.0f". */
  bool neg = signbit(v);
  tirx__sb_printf(sb, "%s%s%s%s%s", neg ? "(" : "", buf, plain ? ".0" : "",
                  t == TIRX_F32 ? "f" : "", neg ? ")" : "");
}

/* ---- expressions ---- */

static void expr(cg *c, const tirx_expr *e);

/* e converted to float when it is f16/bf16 (arithmetic on halves computes in f32). */
static void as_float(cg *c, const tirx_expr *e) {
  if (is_half(e->dtype)) {
    tirx__sb_printf(&c->sb, "%s_to_f32(", e->dtype == TIRX_F16 ? "tirx_f16" : "tirx_bf16");
    expr(c, e);
    tirx__sb_append(&c->sb, ")");
  } else {
    expr(c, e);
  }
}

static void half_open(cg *c, int t) {
  if (is_half(t))
    tirx__sb_printf(&c->sb, "%s_from_f32(", t == TIRX_F16 ? "tirx_f16" : "tirx_bf16");
}
static void half_close(cg *c, int t) {
  if (is_half(t)) tirx__sb_append(&c->sb, ")");
}

static const char *math_fn(int op, int t) {
  static const char *const f32[TIRX_MATH_COUNT] = {
      "expf", "exp2f", "logf", "log2f", "sqrtf", "rsqrtf", "tanhf",
      "erff", "fabsf", "sinf", "cosf",  "floorf", "ceilf", "tirx_sigmoid", "tirx_ex2"};
  static const char *const f64[TIRX_MATH_COUNT] = {
      "exp", "exp2", "log", "log2", "sqrt", "rsqrt", "tanh",
      "erf", "fabs", "sin", "cos",  "floor", "ceil", "tirx_sigmoid", "exp2"};
  /* Deliberate: exp of an f16/bf16 expression uses ex2.approx (tirx_fexp: a few f32 ulp, far
   * under a half's rounding); f32 exp stays expf. sigmoid (and silu, lowered to x * sigmoid)
   * is the fast form for f32 and the halves (prelude.c: a few ulp); f64 stays exact. */
  if (op == TIRX_MATH_EXP && is_half(t)) return "tirx_fexp";
  return t == TIRX_F64 ? f64[op] : f32[op];
}

static void special(cg *c, const tirx_expr *e) {
  static const char *const vars[4] = {"threadIdx", "blockIdx", "blockDim", "gridDim"};
  const int *blk = c->k->block;
  const char *lin = blk[1] == 1 && blk[2] == 1 ? "(int)threadIdx.x"
                    : blk[2] == 1 ? "(int)(threadIdx.x + blockDim.x * threadIdx.y)"
                                  : "(int)(threadIdx.x + blockDim.x * (threadIdx.y + "
                                    "blockDim.y * threadIdx.z))";
  switch (e->op) {
  case TIRX__SP_THREAD_LINEAR: tirx__sb_printf(&c->sb, "%s", lin); break;
  case TIRX__SP_LANE: tirx__sb_printf(&c->sb, "(%s & 31)", lin); break;
  case TIRX__SP_WARP: tirx__sb_printf(&c->sb, "(%s >> 5)", lin); break;
  case TIRX__SP_CLUSTER_CTARANK: tirx__sb_append(&c->sb, "tirx_cluster_ctarank()"); break;
  case TIRX__SP_CLUSTER_ID: tirx__sb_printf(&c->sb, "tirx_cluster_id(%d)", (int)e->i); break;
  case TIRX__SP_ELECT_ONE: tirx__sb_append(&c->sb, "tirx_elect_one()"); break;
  case TIRX__SP_ELEM_INDEX:
    fail(c, TIRX_E_INVALID_ARG, "tirx_kernel_build: tirx_elem_index(%d) is used outside a tile "
         "primitive's broadcast operand (tirx_broadcast), where no element is meant", (int)e->i);
    break;
  default: tirx__sb_printf(&c->sb, "(int)%s.%c", vars[e->op], "xyz"[e->i]); break;
  }
}

/* ---- Register indices without divisions --------------------------------------------------
 * A local tensor's storage index is (index / inner) % extent per register iter. Lowered tile
 * code indexes with sums such as i * 1000 + d * 8 + j (i, j unrolled loop variables, d a
 * thread digit in [0, 125)): a division by 1000 the compiler cannot fold, which leaves the
 * array in local memory. The bounds of the terms fold it here: the terms whose constant
 * factor is a multiple of inner give the quotient exactly when the others lie in [0, inner). */

/* Bounds of an integer expression, when known: constants, loop variables with constant
 * bounds, thread indices, masks, unsigned remainders, and sums and products of those. */
static bool bounds(const tirx_expr *e, int64_t *lo, int64_t *hi) {
  int64_t a0, a1, b0, b1;
  switch (e->kind) {
  case TIRX__EX_INT: *lo = *hi = e->i; return true;
  case TIRX__EX_VAR:
    if (!e->decl || !e->decl->ranged) return false;
    *lo = e->decl->lo, *hi = e->decl->hi;
    return true;
  case TIRX__EX_SPECIAL:
    if (e->op == TIRX__SP_THREAD_IDX || e->op == TIRX__SP_THREAD_LINEAR) *lo = 0, *hi = 1023;
    else if (e->op == TIRX__SP_LANE || e->op == TIRX__SP_WARP) *lo = 0, *hi = 31;
    else return false;
    return true;
  case TIRX__EX_CAST:
    if (e->dtype != TIRX_I32 && e->dtype != TIRX_I64 && e->dtype != TIRX_U32) return false;
    if (!bounds(e->a, lo, hi) || *lo < 0 || *hi > INT32_MAX) return false;
    return true;
  case TIRX__EX_BINARY:
    if (e->op == TIRX__OP_BAND && e->b->kind == TIRX__EX_INT && e->b->i >= 0) {
      *lo = 0, *hi = e->b->i;
      return true;
    }
    if (e->op == TIRX__OP_MOD && e->b->kind == TIRX__EX_INT && e->b->i > 0 &&
        bounds(e->a, &a0, &a1) && a0 >= 0) {
      *lo = 0, *hi = a1 < e->b->i ? a1 : e->b->i - 1;
      return true;
    }
    if (!bounds(e->a, &a0, &a1) || !bounds(e->b, &b0, &b1)) return false;
    if (a0 < -(1LL << 40) || a1 > (1LL << 40) || b0 < -(1LL << 40) || b1 > (1LL << 40))
      return false;
    switch (e->op) {
    case TIRX__OP_ADD: *lo = a0 + b0, *hi = a1 + b1; return true;
    case TIRX__OP_SUB: *lo = a0 - b1, *hi = a1 - b0; return true;
    case TIRX__OP_MUL:
      if (a0 < 0 || b0 < 0) return false;
      *lo = a0 * b0, *hi = a1 * b1;
      return true;
    case TIRX__OP_SHR:
      if (a0 < 0 || b0 != b1 || b0 < 0 || b0 > 62) return false;
      *lo = a0 >> b0, *hi = a1 >> b0;
      return true;
    default: return false;
    }
  default: return false;
  }
}

enum { MAX_TERMS = 16 };

/* Flattens a sum into terms x * k (x NULL: the constant k). False when it is not a sum of
 * such terms with known non-negative bounds, or has too many. */
static bool terms_of(const tirx_expr *e, const tirx_expr **x, int64_t *k, int *n) {
  if (e->kind == TIRX__EX_BINARY && e->op == TIRX__OP_ADD)
    return terms_of(e->a, x, k, n) && terms_of(e->b, x, k, n);
  if (*n >= MAX_TERMS) return false;
  int64_t lo, hi;
  if (e->kind == TIRX__EX_INT) {
    if (e->i < 0) return false;
    x[*n] = NULL, k[(*n)++] = e->i;
    return true;
  }
  const tirx_expr *base = e;
  int64_t f = 1;
  if (e->kind == TIRX__EX_BINARY && e->op == TIRX__OP_MUL && e->b->kind == TIRX__EX_INT &&
      e->b->i > 0)
    base = e->a, f = e->b->i;
  if (!bounds(base, &lo, &hi) || lo < 0) return false;
  x[*n] = base, k[(*n)++] = f;
  return true;
}

/* Prints (index / inner) % extent (div, mod as in address) without the division when the
 * terms allow it; false (nothing printed) otherwise. */
static bool folded_digit(cg *c, const tirx_expr *index, int64_t inner, int64_t extent, bool mod) {
  const tirx_expr *x[MAX_TERMS];
  int64_t k[MAX_TERMS];
  int n = 0;
  if (!terms_of(index, x, k, &n)) return false;
  if (mod && inner <= INT64_MAX / extent) { /* multiples of inner * extent add whole turns */
    int64_t turn = inner * extent;
    int m = 0;
    for (int i = 0; i < n; i++) {
      if (x[i] && k[i] % turn == 0) continue;
      x[m] = x[i], k[m++] = x[i] ? k[i] : k[i] % turn;
    }
    n = m;
  }
  /* Quotient terms: factor a multiple of inner; the rest must stay below inner. */
  int64_t rest_hi = 0, lo, hi;
  for (int i = 0; i < n; i++) {
    if (k[i] % inner == 0 && x[i]) continue;
    if (!x[i]) {
      rest_hi += k[i] % inner; /* a constant's quotient is added below */
      continue;
    }
    if (!bounds(x[i], &lo, &hi) || hi > (1LL << 40) / k[i]) return false;
    rest_hi += hi * k[i];
  }
  if (rest_hi >= inner) return false;
  /* digit = sum of x * (k / inner) + the constants' quotient; its bounds decide the mod. */
  int64_t dhi = 0, cq = 0;
  for (int i = 0; i < n; i++) {
    if (!x[i]) {
      cq += k[i] / inner;
      continue;
    }
    if (k[i] % inner) continue;
    if (!bounds(x[i], &lo, &hi)) return false;
    dhi += hi * (k[i] / inner);
  }
  dhi += cq;
  bool need_mod = mod && dhi >= extent;
  tirx__strbuf *sb = &c->sb;
  tirx__sb_append(sb, need_mod ? "((" : "(");
  int printed = 0;
  for (int i = 0; i < n; i++) {
    if (!x[i] || k[i] % inner) continue;
    if (printed++) tirx__sb_append(sb, " + ");
    expr(c, x[i]);
    if (k[i] / inner != 1) tirx__sb_printf(sb, " * %lld", (long long)(k[i] / inner));
  }
  if (cq || !printed) tirx__sb_printf(sb, "%s%lld", printed ? " + " : "", (long long)cq);
  tirx__sb_append(sb, ")");
  if (need_mod) tirx__sb_printf(sb, " %% %lld)", (long long)extent);
  return true;
}

/* The element offset of t[index] in t's storage. */
static void address(cg *c, const tirx_tensor *t, tirx_expr *const *index) {
  tirx__strbuf *sb = &c->sb;
  if (!t->layout) {
    /* A global tensor with strides. */
    bool single = t->rank == 1 && tirx__stride_kind(t, 0) == TIRX__STRIDE_CONST &&
                  t->stride[0]->i == 1;
    if (single) {
      expr(c, index[0]);
      return;
    }
    int terms = 0;
    for (int k = 0; k < t->rank; k++) {
      bool last = k + 1 == t->rank;
      if (index[k]->kind == TIRX__EX_INT && index[k]->i == 0 && (terms || !last)) continue;
      if (terms++) tirx__sb_append(sb, " + ");
      if (index[k]->kind == TIRX__EX_INT) {
        int_const(sb, index[k]->i, TIRX_I64);
      } else {
        if (index[k]->dtype != TIRX_I64) tirx__sb_append(sb, "(long long)");
        expr(c, index[k]);
      }
      switch (tirx__stride_kind(t, k)) {
      case TIRX__STRIDE_CONST:
        if (t->stride[k]->i != 1) {
          tirx__sb_append(sb, " * ");
          int_const(sb, t->stride[k]->i, TIRX_I64);
        }
        break;
      case TIRX__STRIDE_PARAM: {
        const tirx__decl *p = tirx__bare_param(t->stride[k]);
        tirx__sb_printf(sb, " * %s%s", p->dtype == TIRX_I64 ? "" : "(long long)",
                        cname(c, p));
        break;
      }
      default: {
        const char *v = t->decl.param_index >= 0 ? c->stride_name[t->decl.param_index][k] : NULL;
        tirx__sb_printf(sb, " * %s", v ? v : "?");
        break;
      }
      }
    }
    return;
  }
  const tirx_layout *l = t->layout;
  bool wide = t->storage == TIRX__GLOBAL;
  bool storage_axis[TIRX_AXIS_MAX] = {false};
  storage_axis[TIRX_AXIS_M] = true;
  if (t->storage == TIRX__LOCAL) storage_axis[TIRX_AXIS_REG] = true;
  if (l->swizzle_bytes) tirx__sb_append(sb, "tirx_swizzle(");
  int terms = 0;
  int64_t folded = 0;
  bool overflow = false;
  for (int k = 0; k < t->rank; k++) {
    int first = l->dim_begin[k], last = l->dim_begin[k + 1];
    for (int j = first; j < last; j++) {
      const tirx_iter *it = &l->d[j];
      if (!storage_axis[it->axis] || it->stride == 0 || it->extent == 1) continue;
      int64_t inner = 1;
      for (int q = j + 1; q < last; q++) inner *= l->d[q].extent;
      bool div = inner != 1, mod = j != first;
      if (index[k]->kind == TIRX__EX_INT) { /* a constant index folds into the offset */
        /* tirx_load/tirx_store keep constant indices within the shape, so the sum stays
         * within the layout's reach; checked all the same. */
        int64_t digit = index[k]->i / inner, term;
        if (mod) digit %= it->extent;
        if (!tirx__mul_ok(digit, it->stride, &term) || !tirx__add_ok(folded, term, &folded))
          overflow = true;
        continue;
      }
      if (terms++) tirx__sb_append(sb, " + ");
      if (t->storage == TIRX__LOCAL && folded_digit(c, index[k], inner, it->extent, mod)) {
        if (it->stride != 1) tirx__sb_printf(sb, " * %lld", (long long)it->stride);
        continue;
      }
      if (mod) tirx__sb_append(sb, "(");
      if (div) tirx__sb_append(sb, "(");
      if (wide && index[k]->dtype != TIRX_I64) tirx__sb_append(sb, "(long long)");
      expr(c, index[k]);
      if (div) tirx__sb_printf(sb, " / %lld)", (long long)inner);
      if (mod) tirx__sb_printf(sb, " %% %lld)", (long long)it->extent);
      if (it->stride != 1) tirx__sb_printf(sb, " * %lld", (long long)it->stride);
    }
  }
  int64_t off = folded;
  for (int i = 0; i < l->no; i++)
    if (storage_axis[l->o[i].axis] && !tirx__add_ok(off, l->o[i].value, &off)) overflow = true;
  if (overflow) {
    fail(c, TIRX_E_OVERFLOW, "%s: the constant offset of an element of %s overflows", fn,
         t->decl.name);
    off = 0;
  }
  if (off || !terms) tirx__sb_printf(sb, "%s%lld", terms ? " + " : "", (long long)off);
  if (l->swizzle_bytes) {
    int bits = l->swizzle_bytes == 32 ? 1 : l->swizzle_bytes == 64 ? 2 : 3;
    tirx__sb_printf(sb, ", %d, %d)", bits, l->swizzle_elem);
  }
}

static void expr(cg *c, const tirx_expr *e) {
  tirx__strbuf *sb = &c->sb;
  switch (e->kind) {
  case TIRX__EX_INT: int_const(sb, e->i, e->dtype); break;
  case TIRX__EX_FLOAT: float_const(sb, e->f, e->dtype); break;
  case TIRX__EX_PARAM:
  case TIRX__EX_VAR: tirx__sb_append(sb, cname(c, e->decl)); break;
  case TIRX__EX_SPECIAL: special(c, e); break;
  case TIRX__EX_UNARY:
    half_open(c, e->dtype);
    tirx__sb_append(sb, e->op == TIRX__OP_NOT ? "(!" : "(-");
    as_float(c, e->a);
    tirx__sb_append(sb, ")");
    half_close(c, e->dtype);
    break;
  case TIRX__EX_BINARY: {
    int t = e->a->dtype;
    bool fl = tirx__dtype_is_float(t);
    half_open(c, e->dtype);
    if (e->op == TIRX__OP_MIN || e->op == TIRX__OP_MAX || e->op == TIRX__OP_POW) {
      const char *name = e->op == TIRX__OP_POW ? (t == TIRX_F64 ? "pow" : "powf")
                         : !fl ? (e->op == TIRX__OP_MIN ? "tirx_min" : "tirx_max")
                         : t == TIRX_F64 ? (e->op == TIRX__OP_MIN ? "fmin" : "fmax")
                                         : (e->op == TIRX__OP_MIN ? "fminf" : "fmaxf");
      tirx__sb_printf(sb, "%s(", name);
      as_float(c, e->a);
      tirx__sb_append(sb, ", ");
      as_float(c, e->b);
      tirx__sb_append(sb, ")");
    } else if (e->op == TIRX__OP_CEILDIV) {
      tirx__sb_append(sb, "((");
      expr(c, e->a);
      tirx__sb_append(sb, " + ");
      expr(c, e->b);
      tirx__sb_append(sb, " - 1) / ");
      expr(c, e->b);
      tirx__sb_append(sb, ")");
    } else if (e->op == TIRX__OP_MOD && fl) {
      tirx__sb_printf(sb, "%s(", t == TIRX_F64 ? "fmod" : "fmodf");
      as_float(c, e->a);
      tirx__sb_append(sb, ", ");
      as_float(c, e->b);
      tirx__sb_append(sb, ")");
    } else {
      tirx__sb_append(sb, "(");
      as_float(c, e->a);
      tirx__sb_printf(sb, " %s ", tirx__op_name(e->op));
      as_float(c, e->b);
      tirx__sb_append(sb, ")");
    }
    half_close(c, e->dtype);
    break;
  }
  case TIRX__EX_SELECT:
    tirx__sb_append(sb, "(");
    expr(c, e->a);
    tirx__sb_append(sb, " ? ");
    expr(c, e->b);
    tirx__sb_append(sb, " : ");
    expr(c, e->c);
    tirx__sb_append(sb, ")");
    break;
  case TIRX__EX_CAST:
    if (is_half(e->dtype)) {
      half_open(c, e->dtype);
      if (!is_half(e->a->dtype) && e->a->dtype != TIRX_F32) tirx__sb_append(sb, "(float)");
      as_float(c, e->a);
      half_close(c, e->dtype);
    } else {
      if (is_half(e->a->dtype) && e->dtype == TIRX_F32) {
        as_float(c, e->a);
        break;
      }
      tirx__sb_printf(sb, "((%s)", ctype(e->dtype));
      as_float(c, e->a);
      tirx__sb_append(sb, ")");
    }
    break;
  case TIRX__EX_MATH:
    half_open(c, e->dtype);
    tirx__sb_printf(sb, "%s(", math_fn(e->op, e->dtype));
    as_float(c, e->a);
    tirx__sb_append(sb, ")");
    half_close(c, e->dtype);
    break;
  case TIRX__EX_LOAD:
    tirx__sb_printf(sb, "%s[", cname(c, &e->tensor->decl));
    address(c, e->tensor, e->index);
    tirx__sb_append(sb, "]");
    break;
  case TIRX__EX_SHFL:
    tirx__sb_printf(sb, "%s(0xffffffffu, ", e->op ? "__shfl_down_sync" : "__shfl_xor_sync");
    expr(c, e->a);
    tirx__sb_append(sb, ", ");
    expr(c, e->b);
    tirx__sb_append(sb, ")");
    break;
  default: tirx__sb_append(sb, "?"); break;
  }
}

/* ---- statements ---- */

static void indent(cg *c, int depth) {
  for (int i = 0; i < depth; i++) tirx__sb_append(&c->sb, "  ");
}

static void block(cg *c, const tirx__block *blk, int depth);

/* ---- native statements (native.c writes them through these) ---- */

/* &t[index] */
static void element_ptr(cg *c, const tirx_tensor *t, tirx_expr *const *index) {
  tirx__sb_printf(&c->sb, "&%s[", cname(c, &t->decl));
  address(c, t, index);
  tirx__sb_append(&c->sb, "]");
}

static bool visible(const cg *c, const char *cname) {
  for (int i = 0; i < c->nnames; i++)
    if (c->names[i] == cname) return true;
  return false;
}

static void w_expr(tirx__writer *w, const tirx_expr *e) { expr(w->ctx, e); }
static void w_elem(tirx__writer *w, const tirx_tensor *t, tirx_expr *const *index) {
  element_ptr(w->ctx, t, index);
}
/* tirx_swizzle of the prelude on an element offset m (bits, elem as the layout's). */
static int64_t swizzle_of(int64_t m, int bits, int elem) {
  int64_t byte = m * elem;
  return (byte ^ (((byte >> 7) & ((1 << bits) - 1)) << 4)) / elem;
}

/* The constant part of address(t, index) over the dims whose index is a constant (the others
 * are skipped: the caller has checked they are the same expression in both addresses), and in
 * *sym_div a divisor (elements) of the part those other dims add. False on overflow. */
static bool address_const(const tirx_tensor *t, tirx_expr *const *index, int64_t *off,
                          int64_t *sym_div) {
  const tirx_layout *l = t->layout;
  int64_t folded = 0, g = 0;
  for (int k = 0; k < t->rank; k++) {
    int first = l->dim_begin[k], last = l->dim_begin[k + 1];
    for (int j = first; j < last; j++) {
      const tirx_iter *it = &l->d[j];
      if (it->axis != TIRX_AXIS_M || it->stride == 0 || it->extent == 1) continue;
      int64_t inner = 1;
      for (int q = j + 1; q < last; q++) inner *= l->d[q].extent;
      bool div = inner != 1, mod = j != first;
      if (index[k]->kind == TIRX__EX_INT) {
        int64_t digit = index[k]->i / inner, term;
        if (mod) digit %= it->extent;
        if (!tirx__mul_ok(digit, it->stride, &term) || !tirx__add_ok(folded, term, &folded))
          return false;
        continue;
      }
      /* (index / inner) % extent * stride: a multiple of stride, of index's divisor times
       * stride when neither divides nor wraps */
      int64_t d = it->stride, kd = div || mod ? 1 : tirx__known_divisor(index[k]), term;
      if (kd > 1 && tirx__mul_ok(kd, it->stride, &term)) d = term;
      if (d < 0) d = -d;
      while (d) { int64_t r = g % d; g = d; d = r; } /* gcd */
    }
  }
  for (int i = 0; i < l->no; i++)
    if (l->o[i].axis == TIRX_AXIS_M && !tirx__add_ok(folded, l->o[i].value, &folded)) return false;
  *off = folded;
  *sym_div = g; /* 0: no symbolic term */
  return true;
}

static bool same_expr(const tirx_expr *x, const tirx_expr *y) {
  return x == y || (x->kind == TIRX__EX_INT && y->kind == TIRX__EX_INT && x->i == y->i);
}

static bool w_elem_delta(tirx__writer *w, const tirx_tensor *t, tirx_expr *const *i0,
                         tirx_expr *const *i1, int64_t *bytes) {
  (void)w;
  const tirx_layout *l = t->layout;
  if (!l || t->storage != TIRX__SHARED) return false;
  for (int k = 0; k < t->rank; k++)
    if (!same_expr(i0[k], i1[k]) && (i0[k]->kind != TIRX__EX_INT || i1[k]->kind != TIRX__EX_INT))
      return false;
  int64_t f0, f1, g0, g1;
  if (!address_const(t, i0, &f0, &g0) || !address_const(t, i1, &f1, &g1)) return false;
  int elem = tirx_dtype_size(t->dtype);
  if (l->swizzle_bytes) {
    /* tirx_swizzle(S + f) = S + tirx_swizzle(f) when S's bytes are a multiple of 2^(7 + bits)
     * (the XOR reads bits 7.., writes bits 4..), which the symbolic part's divisor must show */
    int bits = l->swizzle_bytes == 32 ? 1 : l->swizzle_bytes == 64 ? 2 : 3;
    int64_t period = ((int64_t)1 << (7 + bits)) / l->swizzle_elem;
    if ((g0 && g0 % period) || f0 < 0 || f1 < 0) return false;
    f0 = swizzle_of(f0, bits, l->swizzle_elem), f1 = swizzle_of(f1, bits, l->swizzle_elem);
  }
  *bytes = (f1 - f0) * elem;
  return true;
}

static const char *w_tensor(tirx__writer *w, const tirx_tensor *t) {
  return cname(w->ctx, &t->decl);
}

/* The tensor map of index map, or (t non-NULL) the i-th of t's; NULL past the last. */
static const char *w_tmap(tirx__writer *w, const tirx_tensor *t, int map, int i) {
  const cg *c = w->ctx;
  const tirx__ir_kernel *k = c->k;
  if (!t) return map >= 0 && map < k->ntmaps && c->tmap_name[map] ? c->tmap_name[map] : "?";
  for (int j = 0; j < k->ntmaps; j++)
    if (k->tmap_tensor[j] == t && i-- == 0) return c->tmap_name[j];
  return NULL;
}

/* After a wait that fences: the register operands ops collected that are in scope. */
static void w_fences(tirx__writer *w) {
  cg *c = w->ctx;
  for (int i = 0; i < c->nfenced; i++) {
    const tirx_tensor *t = c->fenced[i].t;
    if (!visible(c, cname(c, &t->decl))) continue;
    tirx__sb_append(&c->sb, "\n");
    indent(c, w->depth);
    c->fenced[i].fence(w, t);
  }
}

static void native(cg *c, const tirx__stmt *s, int depth) {
  tirx__writer w = {.sb = &c->sb, .depth = depth, .ctx = c, .expr = w_expr, .elem = w_elem,
                    .tensor = w_tensor, .ctype = ctype, .tmap = w_tmap, .wait_fences = w_fences,
                    .elem_delta = w_elem_delta};
  tirx__native_emit(&w, s);
  tirx__sb_append(&c->sb, "\n");
}

/* ---- the prelude: fragments, each once, by order ---- */

/* Records fragment f with key (once). */
static void use_frag(cg *c, const tirx__prelude_frag *f, int key) {
  if (!f) return;
  for (int i = 0; i < c->nfrags; i++)
    if (c->frags[i].f == f && c->frags[i].key == key) return;
  if (c->nfrags == c->capfrags) {
    int cap = c->capfrags ? 2 * c->capfrags : 64;
    struct frag_use *n = realloc(c->frags, (size_t)cap * sizeof *n);
    if (!n) {
      fail(c, TIRX_E_NO_MEMORY, "%s: out of memory", fn);
      return;
    }
    c->frags = n;
    c->capfrags = cap;
  }
  c->frags[c->nfrags++] = (struct frag_use){f, key};
}

static void u_variant(tirx__uses *u, const tirx__prelude_frag *f, int key) {
  use_frag(u->ctx, f, key);
}

/* Records t among the registers fenced after a wait (once). */
static void u_fence(tirx__uses *u, const tirx_tensor *t,
                    void (*fence)(tirx__writer *w, const tirx_tensor *t)) {
  cg *c = u->ctx;
  if (!t || !fence) return;
  for (int i = 0; i < c->nfenced; i++)
    if (c->fenced[i].t == t) return;
  struct fenced *n = realloc(c->fenced, (size_t)(c->nfenced + 1) * sizeof *n);
  if (!n) {
    fail(c, TIRX_E_NO_MEMORY, "%s: out of memory", fn);
    return;
  }
  c->fenced = n;
  c->fenced[c->nfenced++] = (struct fenced){t, fence};
}

/* The blocks nested in s (NULL past the last). */
static const tirx__block *sub_block(const tirx__stmt *s, int i) {
  switch (s->kind) {
  case TIRX__ST_FOR: return i == 0 ? &s->loop.body : NULL;
  case TIRX__ST_IF: return i == 0 ? &s->branch.then : i == 1 ? &s->branch.orelse : NULL;
  case TIRX__ST_PRIM: return i == 0 ? &s->prim.body : NULL;
  default: return NULL;
  }
}

/* The native statements as codegen emits them (a run's first only): their ops' fragments and
 * what their collect hooks record. */
static void collect_native(cg *c, tirx__uses *u, const tirx__block *blk) {
  for (const tirx__stmt *s = blk->first; s; s = s->next) {
    for (int i = 0; sub_block(s, i); i++) collect_native(c, u, sub_block(s, i));
    if (s->kind != TIRX__ST_NATIVE || !s->native.op) continue;
    const tirx__native_op *op = s->native.op;
    for (int i = 0; op->prelude && op->prelude[i]; i++) use_frag(c, op->prelude[i], 0);
    if (op->collect) op->collect(u, s);
    for (int g = tirx__native_run(s); g > 1; g--) s = s->next; /* joined s */
  }
}

/* Whether a fragment of a section list is in the kernel: every kernel's, or one of the
 * sections it uses. */
static bool section_used(const tirx__prelude_frag *f, unsigned used) {
  return (f->when & TIRX__PRE_ALWAYS) || (f->when & used);
}

/* The prelude: the generic fragments and the registered families' of the sections the kernel
 * uses, its ops' own and the variants they collected, by order, then first use. */
static void prelude(cg *c) {
  const tirx__ir_kernel *k = c->k;
  unsigned used = k->preludes | (k->ntmaps ? TIRX__PRE_BULK : 0);
  for (int i = 0; tirx__prelude_core[i]; i++)
    if (section_used(tirx__prelude_core[i], used)) use_frag(c, tirx__prelude_core[i], 0);
  int nrules = 0;
  const tirx__rule *const *rules = tirx__registry(&nrules);
  for (int r = 0; r < nrules; r++)
    for (int i = 0; rules[r]->prelude && rules[r]->prelude[i]; i++)
      if (section_used(rules[r]->prelude[i], used)) use_frag(c, rules[r]->prelude[i], 0);
  tirx__uses u = {.ctx = c, .variant = u_variant, .fence = u_fence};
  collect_native(c, &u, k->body);
  /* a stable insertion sort by order */
  for (int i = 1; i < c->nfrags; i++) {
    struct frag_use x = c->frags[i];
    int j = i;
    for (; j > 0 && c->frags[j - 1].f->order > x.f->order; j--) c->frags[j] = c->frags[j - 1];
    c->frags[j] = x;
  }
  for (int i = 0; i < c->nfrags; i++) {
    const tirx__prelude_frag *f = c->frags[i].f;
    if (f->gen)
      f->gen(&c->sb, c->frags[i].key);
    else if (f->text)
      tirx__sb_append(&c->sb, f->text);
  }
}


static void stmt(cg *c, const tirx__stmt *s, int depth) {
  tirx__strbuf *sb = &c->sb;
  if (s->kind == TIRX__ST_FOR && s->loop.kind == TIRX_LOOP_UNROLL) {
    indent(c, depth);
    tirx__sb_append(sb, "#pragma unroll\n");
  }
  indent(c, depth);
  switch (s->kind) {
  case TIRX__ST_FOR: {
    int mark = c->nnames;
    tirx__decl *d = s->loop.var;
    const char *v = declare(c, d, d->name);
    tirx__sb_printf(sb, "for (%s %s = ", ctype(d->dtype), v);
    expr(c, s->loop.lo);
    tirx__sb_printf(sb, "; %s < ", v);
    expr(c, s->loop.hi);
    if (s->loop.step->kind == TIRX__EX_INT && s->loop.step->i == 1) {
      tirx__sb_printf(sb, "; ++%s) {\n", v);
    } else {
      tirx__sb_printf(sb, "; %s += ", v);
      expr(c, s->loop.step);
      tirx__sb_append(sb, ") {\n");
    }
    block(c, &s->loop.body, depth + 1);
    c->nnames = mark;
    indent(c, depth);
    tirx__sb_append(sb, "}\n");
    break;
  }
  case TIRX__ST_IF:
    tirx__sb_append(sb, "if (");
    expr(c, s->branch.cond);
    tirx__sb_append(sb, ") {\n");
    block(c, &s->branch.then, depth + 1);
    indent(c, depth);
    if (s->branch.has_else) {
      tirx__sb_append(sb, "} else {\n");
      block(c, &s->branch.orelse, depth + 1);
      indent(c, depth);
    }
    tirx__sb_append(sb, "}\n");
    break;
  case TIRX__ST_LET:
  case TIRX__ST_VAR: {
    /* Visible names are unique, so the value cannot be captured by the new one. */
    tirx__decl *d = s->var.decl;
    const char *v = declare(c, d, d->name);
    tirx__sb_printf(sb, "%s%s %s = ", s->kind == TIRX__ST_LET ? "const " : "", ctype(d->dtype),
                    v);
    if (s->var.value)
      expr(c, s->var.value);
    else if (is_half(d->dtype))
      float_const(sb, 0.0, d->dtype);
    else
      tirx__sb_append(sb, "0");
    tirx__sb_append(sb, ";\n");
    break;
  }
  case TIRX__ST_ASSIGN:
    tirx__sb_printf(sb, "%s = ", cname(c, s->var.decl));
    expr(c, s->var.value);
    tirx__sb_append(sb, ";\n");
    break;
  case TIRX__ST_STORE:
  case TIRX__ST_ATOMIC_ADD: {
    const tirx_tensor *t = s->store.dst.tensor;
    if (s->kind == TIRX__ST_ATOMIC_ADD) {
      bool i64 = t->dtype == TIRX_I64;
      tirx__sb_printf(sb, "atomicAdd(%s&%s[", i64 ? "(unsigned long long *)" : "",
                      cname(c, &t->decl));
      address(c, t, s->store.dst.index);
      tirx__sb_printf(sb, "], %s", i64 ? "(unsigned long long)" : "");
      expr(c, s->store.value);
      tirx__sb_append(sb, ");\n");
      break;
    }
    tirx__sb_printf(sb, "%s[", cname(c, &t->decl));
    address(c, t, s->store.dst.index);
    tirx__sb_append(sb, "] = ");
    expr(c, s->store.value);
    tirx__sb_append(sb, ";\n");
    break;
  }
  case TIRX__ST_SYNC: tirx__sb_append(sb, "__syncthreads();\n"); break;
  case TIRX__ST_SYNCWARP: tirx__sb_append(sb, "__syncwarp();\n"); break;
  case TIRX__ST_PRIM: /* a tile primitive: the rule that lowered it, then its native code */
    tirx__sb_printf(sb, "{ /* tirx: %s */\n",
                    s->prim.call->comment ? s->prim.call->comment : "?");
    block(c, &s->prim.body, depth + 1);
    indent(c, depth);
    tirx__sb_append(sb, "}\n");
    break;
  case TIRX__ST_NATIVE: native(c, s, depth); break;
  case TIRX__ST_LOCAL: {
    tirx_tensor *t = s->local.tensor;
    const char *v = declare(c, &t->decl, t->decl.name);
    char *l = tirx_layout_str(t->layout);
    tirx__sb_printf(sb, "%s %s[%lld]; /* %s */\n", ctype(t->dtype), v, (long long)t->elems,
                    l ? l : "?");
    free(l);
    break;
  }
  default: break;
  }
}

static void block(cg *c, const tirx__block *blk, int depth) {
  int mark = c->nnames;
  for (const tirx__stmt *s = blk->first; s; s = s->next) {
    stmt(c, s, depth);
    for (int g = tirx__native_run(s); g > 1; g--) s = s->next; /* joined it: emitted */
  }
  c->nnames = mark;
}

/* ---- the translation unit ---- */

/*
 * The entry point's prologue for integer parameters with a specialisation policy: a variant's
 * source defines TIRX_SPEC_<name> (the value) or TIRX_DIV16_<name> before this translation
 * unit (tirx__kernel_variant_source); the plain source is the dynamic variant.
 */
static void specialisations(cg *c) {
  tirx__strbuf *sb = &c->sb;
  for (int i = 0; i < c->k->nparams; i++) {
    const tirx__decl *d = c->k->params[i];
    if (d->kind != TIRX__DECL_PARAM_INT) continue;
    const char *t = ctype(d->dtype), *v = cname(c, d);
    if (d->policy == TIRX_SPECIALIZE_VALUE)
      tirx__sb_printf(sb,
                      "#ifdef TIRX_SPEC_%s\n"
                      "  const %s %s = TIRX_SPEC_%s; /* specialised on its value */\n"
                      "#else\n"
                      "  const %s %s = %s;\n"
                      "#endif\n",
                      v, t, v, v, t, v, c->arg_name[i]);
    else if (d->policy == TIRX_SPECIALIZE_DIV16)
      tirx__sb_printf(sb,
                      "#ifdef TIRX_DIV16_%s\n"
                      "  __builtin_assume(%s %% 16 == 0); /* specialised: a multiple of 16 */\n"
                      "#endif\n",
                      v, v);
  }
}

/* The entry point's parameter list, in the kernel ABI's order (tirx__kernel_slots). */
static void parameters(cg *c) {
  const tirx__ir_kernel *k = c->k;
  tirx__strbuf *sb = &c->sb;
  tirx__slot slots[TIRX__MAX_PARAMS];
  int n = tirx__kernel_slots(k, slots, TIRX__MAX_PARAMS);
  if (n > TIRX__MAX_PARAMS) { /* tirx_kernel_build checks the limit first */
    fail(c, TIRX_E_LIMIT, "%s: the entry point would have %d parameters, limit %d", fn, n,
         TIRX__MAX_PARAMS);
    return;
  }
  char base[TIRX_BUILDER_MAX_NAME + 32];
  for (int i = 0; i < n; i++) {
    const tirx__slot *sl = &slots[i];
    const tirx__decl *d = k->params[sl->param];
    tirx__sb_append(sb, i ? ", " : "");
    switch (sl->kind) {
    case TIRX__SLOT_VALUE: {
      const char *v = declare(c, d, d->name);
      if (d->kind == TIRX__DECL_PARAM_INT && d->policy == TIRX_SPECIALIZE_VALUE) {
        /* The body reads d through a local that a specialised variant makes a constant; the
         * entry point's parameter keeps its place (every variant has one parameter list). */
        snprintf(base, sizeof base, "tirx_arg_%s", v);
        c->arg_name[sl->param] = declare(c, NULL, base);
        tirx__sb_printf(sb, "%s %s", ctype(d->dtype), c->arg_name[sl->param]);
      } else {
        tirx__sb_printf(sb, "%s %s", ctype(d->dtype), v);
      }
      break;
    }
    case TIRX__SLOT_POINTER: {
      const char *v = declare(c, d, d->name);
      tirx__sb_printf(sb, "%s%s *%s", d->tensor->written ? "" : "const ", ctype(d->dtype), v);
      break;
    }
    case TIRX__SLOT_STRIDE:
      snprintf(base, sizeof base, "%s_stride%d", cname(c, d), (int)sl->dim);
      c->stride_name[sl->param][sl->dim] = declare(c, NULL, base);
      tirx__sb_printf(sb, "long long %s", c->stride_name[sl->param][sl->dim]);
      break;
    default: /* tensor maps (the kernel ABI's), by value in the parameter space */
      snprintf(base, sizeof base, "%s_tmap", cname(c, &k->tmap_tensor[sl->dim]->decl));
      c->tmap_name[sl->dim] = declare(c, NULL, base);
      tirx__sb_printf(sb, "const __grid_constant__ tirx_tmap %s", c->tmap_name[sl->dim]);
      break;
    }
  }
}

/* The first line of every generated translation unit starts with this. */
static const char banner[] = "/* Generated by tirx ";

bool tirx__codegen_wrote(const char *source) {
  while (strncmp(source, "#define ", 8) == 0) {
    const char *nl = strchr(source, '\n');
    if (!nl) return false;
    source = nl + 1;
  }
  return strncmp(source, banner, sizeof banner - 1) == 0;
}

tirx_status tirx__codegen(const tirx__ir_kernel *k, tirx_arena *names, const char **param_names,
                          char **out) {
  *out = NULL;
  int np = k->nparams ? k->nparams : 1;
  cg c = {.k = k, .arena = names};
  c.decl_name = calloc((size_t)(k->ndecls ? k->ndecls : 1), sizeof *c.decl_name);
  c.arg_name = calloc((size_t)np, sizeof *c.arg_name);
  c.stride_name = calloc((size_t)np, sizeof *c.stride_name);
  if (!c.decl_name || !c.arg_name || !c.stride_name)
    fail(&c, TIRX_E_NO_MEMORY, "%s: out of memory", fn);
  tirx__strbuf *sb = &c.sb;
  if (!c.failed) {
    tirx__sb_printf(sb, "%s%s: kernel %s. */\n", banner, tirx_version(), k->name);
    prelude(&c);
    int threads = k->block[0] * k->block[1] * k->block[2];
    /* setmaxnreg needs a register cap at entry: one block per SM (hopper-kernels.md, 5). */
    int min_blocks = k->uses_setmaxnreg ? 1 : k->min_blocks; /* tirx_set_min_blocks */
    char minb[16] = "";
    if (min_blocks) snprintf(minb, sizeof minb, ", %d", min_blocks);
    tirx__sb_printf(sb, "\nextern \"C\" __global__ void __launch_bounds__(%d%s) %s(", threads,
                    minb, k->name);
    parameters(&c);
    tirx__sb_append(sb, ") {\n");
    specialisations(&c);
    if (k->nshared) {
      tirx__sb_append(sb, "  extern __shared__ __align__(1024) unsigned char tirx_smem[];\n");
      for (int i = 0; i < k->nshared; i++) {
        const tirx_tensor *t = k->shared[i];
        const char *v = declare(&c, &t->decl, t->decl.name);
        char *l = tirx_layout_str(t->layout);
        tirx__sb_printf(sb, "  %s *%s = (%s *)(tirx_smem + %lld); /* %s */\n", ctype(t->dtype),
                        v, ctype(t->dtype), (long long)t->smem_offset, l ? l : "?");
        free(l);
      }
    }
    block(&c, k->body, 1);
    tirx__sb_append(sb, "}\n");
  }
  for (int i = 0; !c.failed && i < k->nparams; i++) param_names[i] = cname(&c, k->params[i]);
  free(c.names);
  free(c.fenced);
  free(c.frags);
  free(c.decl_name);
  free(c.arg_name);
  free(c.stride_name);
  char *src = tirx__sb_finish(sb);
  if (!src || c.failed) {
    free(src);
    if (c.status != TIRX_OK) return tirx__error(c.status, "%s", c.error);
    return tirx__error(TIRX_E_NO_MEMORY, "%s: out of memory", fn);
  }
  if (strlen(src) > TIRX_BUILDER_MAX_SOURCE) {
    size_t n = strlen(src);
    free(src);
    return tirx__error(TIRX_E_LIMIT, "%s: the generated source is %zu bytes, limit %d", fn, n,
                       TIRX_BUILDER_MAX_SOURCE);
  }
  *out = src;
  return TIRX_OK;
}
