/*
 * copy.vec: vector loads and stores of up to 16 bytes (ld.global.v4.b32, ld.shared.v4,
 * st.global.cs.v2, a float4 move between registers), with the cache hints .cs, .lu and .nc on
 * global accesses. The vector covers `vec` consecutive logical elements that are contiguous
 * and vec-aligned in both operands (for registers: consecutive registers of one thread).
 * Registered as the fallback of ldmatrix/stmatrix and the first choice elsewhere (paper
 * table 2: copy falls back to vector/scalar load/store).
 *
 * Shape: (vec), a power of two from the largest legal width down to 2.
 */
#include "../lower.h"
#include "families.h"

/* ---- the native statement: a vector move ---- */

/* dst = src (a load), n elements; hints TIRX__VC_* (families.h) */
typedef struct vcopy_payload {
  tirx__elem dst;
  tirx_expr *src;
  int32_t n;
  int32_t hints;
} vcopy_payload;

static void print_vcopy(tirx__writer *w, const tirx__stmt *s) {
  const vcopy_payload *p = s->native.p;
  int h = p->hints;
  w->elem(w, p->dst.tensor, p->dst.index);
  tirx__sb_printf(w->sb, " = vec%d(", (int)p->n);
  w->expr(w, p->src);
  tirx__sb_printf(w->sb, ")%s%s", h & (TIRX__VC_LD_CS | TIRX__VC_ST_CS) ? " .cs" : "",
                  h & TIRX__VC_LD_NC ? " .nc" : h & TIRX__VC_LD_LU ? " .lu" : "");
}

static void emit_vcopy(tirx__writer *w, const tirx__stmt *s) {
  const vcopy_payload *p = s->native.p;
  tirx__sb_printf(w->sb, "tirx_vcopy<%s, %d, %d>(", w->ctype(p->dst.tensor->dtype), (int)p->n,
                  (int)p->hints);
  w->elem(w, p->dst.tensor, p->dst.index);
  tirx__sb_append(w->sb, ", ");
  w->elem(w, p->src->tensor, p->src->index);
  tirx__sb_append(w->sb, ");");
}

static const tirx__native_op nv_vcopy = {
    .name = "vec", .helper = "tirx_vcopy", .need = TIRX__NEED(0),
    .size = sizeof(vcopy_payload),
    .ops = {TIRX__ELEM(vcopy_payload, dst), TIRX__LOAD(vcopy_payload, src)},
    .print = print_vcopy, .emit = emit_vcopy};

tirx__stmt *tirx__vcopy_stmt(tirx__emit *e, tirx_tensor *dst, tirx_expr **index, tirx_expr *src,
                             int n, int hints) {
  tirx__stmt *s = tirx__emit_native(e, &nv_vcopy);
  if (!s) return NULL;
  vcopy_payload *p = s->native.p;
  p->dst.tensor = dst;
  p->dst.index = index;
  p->src = src;
  p->n = (int32_t)n;
  p->hints = (int32_t)hints;
  return s;
}

/* The tirx_vcopy template, in every kernel's core for now (byte-identical generated code;
 * making it conditional on the op is a follow-up). */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Woverlength-strings"
/* tirx_vcopy and its vector types */
static const tirx__prelude_frag vcopy_frag = {.order = 200, .when = TIRX__PRE_ALWAYS, .text =
    "/* Vector moves of tile primitives (tirx_vcopy, TIRX__ST_VCOPY): N elements of T, 2 to 16\n"
    " * bytes. H: 1 ld.global.cs, 2 st.global.cs, 4 the source is a local array, 8 the destination\n"
    " * is, 16 ld.global.nc, 32 ld.global.lu. */\n"
    "template <class T, int N> struct alignas(sizeof(T) * N) tirx_vec { T v[N]; };\n"
    "template <int B> struct tirx_vbits;\n"
    "template <> struct tirx_vbits<16> {\n"
    "  static __device__ __forceinline__ void ld(int q, void *d, const void *p) {\n"
    "    unsigned *u = (unsigned *)d;\n"
    "    if (q == 1) asm volatile(\"ld.global.cs.v4.u32 {%0, %1, %2, %3}, [%4];\" : \"=r\"(u[0]), \"=r\"(u[1]), \"=r\"(u[2]), \"=r\"(u[3]) : \"l\"(p));\n"
    "    else if (q == 16) asm volatile(\"ld.global.nc.v4.u32 {%0, %1, %2, %3}, [%4];\" : \"=r\"(u[0]), \"=r\"(u[1]), \"=r\"(u[2]), \"=r\"(u[3]) : \"l\"(p));\n"
    "    else asm volatile(\"ld.global.lu.v4.u32 {%0, %1, %2, %3}, [%4];\" : \"=r\"(u[0]), \"=r\"(u[1]), \"=r\"(u[2]), \"=r\"(u[3]) : \"l\"(p));\n"
    "  }\n"
    "  static __device__ __forceinline__ void st_cs(void *p, const void *s) {\n"
    "    const unsigned *u = (const unsigned *)s;\n"
    "    asm volatile(\"st.global.cs.v4.u32 [%0], {%1, %2, %3, %4};\" :: \"l\"(p), \"r\"(u[0]), \"r\"(u[1]), \"r\"(u[2]), \"r\"(u[3]) : \"memory\");\n"
    "  }\n"
    "};\n"
    "template <> struct tirx_vbits<8> {\n"
    "  static __device__ __forceinline__ void ld(int q, void *d, const void *p) {\n"
    "    unsigned *u = (unsigned *)d;\n"
    "    if (q == 1) asm volatile(\"ld.global.cs.v2.u32 {%0, %1}, [%2];\" : \"=r\"(u[0]), \"=r\"(u[1]) : \"l\"(p));\n"
    "    else if (q == 16) asm volatile(\"ld.global.nc.v2.u32 {%0, %1}, [%2];\" : \"=r\"(u[0]), \"=r\"(u[1]) : \"l\"(p));\n"
    "    else asm volatile(\"ld.global.lu.v2.u32 {%0, %1}, [%2];\" : \"=r\"(u[0]), \"=r\"(u[1]) : \"l\"(p));\n"
    "  }\n"
    "  static __device__ __forceinline__ void st_cs(void *p, const void *s) {\n"
    "    const unsigned *u = (const unsigned *)s;\n"
    "    asm volatile(\"st.global.cs.v2.u32 [%0], {%1, %2};\" :: \"l\"(p), \"r\"(u[0]), \"r\"(u[1]) : \"memory\");\n"
    "  }\n"
    "};\n"
    "template <> struct tirx_vbits<4> {\n"
    "  static __device__ __forceinline__ void ld(int q, void *d, const void *p) {\n"
    "    unsigned *u = (unsigned *)d;\n"
    "    if (q == 1) asm volatile(\"ld.global.cs.u32 %0, [%1];\" : \"=r\"(u[0]) : \"l\"(p));\n"
    "    else if (q == 16) asm volatile(\"ld.global.nc.u32 %0, [%1];\" : \"=r\"(u[0]) : \"l\"(p));\n"
    "    else asm volatile(\"ld.global.lu.u32 %0, [%1];\" : \"=r\"(u[0]) : \"l\"(p));\n"
    "  }\n"
    "  static __device__ __forceinline__ void st_cs(void *p, const void *s) {\n"
    "    asm volatile(\"st.global.cs.u32 [%0], %1;\" :: \"l\"(p), \"r\"(*(const unsigned *)s) : \"memory\");\n"
    "  }\n"
    "};\n"
    "template <> struct tirx_vbits<2> {\n"
    "  static __device__ __forceinline__ void ld(int q, void *d, const void *p) {\n"
    "    unsigned short *u = (unsigned short *)d;\n"
    "    if (q == 1) asm volatile(\"ld.global.cs.u16 %0, [%1];\" : \"=h\"(u[0]) : \"l\"(p));\n"
    "    else if (q == 16) asm volatile(\"ld.global.nc.u16 %0, [%1];\" : \"=h\"(u[0]) : \"l\"(p));\n"
    "    else asm volatile(\"ld.global.lu.u16 %0, [%1];\" : \"=h\"(u[0]) : \"l\"(p));\n"
    "  }\n"
    "  static __device__ __forceinline__ void st_cs(void *p, const void *s) {\n"
    "    asm volatile(\"st.global.cs.u16 [%0], %1;\" :: \"l\"(p), \"h\"(*(const unsigned short *)s) : \"memory\");\n"
    "  }\n"
    "};\n"
    "template <class T, int N, int H> __device__ __forceinline__ void tirx_vcopy(T *d, const T *s) {\n"
    "  tirx_vec<T, N> r;\n"
    "  if (H & 4) {\n"
    "#pragma unroll\n"
    "    for (int i = 0; i < N; ++i) r.v[i] = s[i];\n"
    "  } else if (H & 49) {\n"
    "    tirx_vbits<sizeof(T) * N>::ld(H & 49, &r, s);\n"
    "  } else {\n"
    "    r = *reinterpret_cast<const tirx_vec<T, N> *>(s);\n"
    "  }\n"
    "  if (H & 8) {\n"
    "#pragma unroll\n"
    "    for (int i = 0; i < N; ++i) d[i] = r.v[i];\n"
    "  } else if (H & 2) {\n"
    "    tirx_vbits<sizeof(T) * N>::st_cs(d, &r);\n"
    "  } else {\n"
    "    *reinterpret_cast<tirx_vec<T, N> *>(d) = r;\n"
    "  }\n"
    "}\n"
};
#pragma GCC diagnostic pop

static const tirx__prelude_frag *const frags[] = {&vcopy_frag, NULL};

static void check(tirx__rule_ctx *ctx) { ctx->scratch[0] = tirx__common_vector_width(ctx, 16, 2); }

static int shapes(tirx__rule_ctx *ctx, tirx__shape *out, int cap) {
  int n = 0;
  for (int64_t v = ctx->scratch[0]; v >= 2 && n < cap; v /= 2) out[n++] = (tirx__shape){{v}};
  return n;
}

const tirx__rule tirx__rule_copy_vec = {
    .name = "copy.vec",
    .family = "vec",
    .summary = "vector ld/st of up to 16 bytes, with cache hints on global accesses",
    .kind = TIRX__RULE_FALLBACK,
    .prims = TIRX__BIT(TIRX__PRIM_COPY),
    .flows = TIRX__FLOWS_MEMORY,
    .teams = TIRX__TEAMS_ALL,
    .needs = {.dtypes = TIRX__DTYPES_ALL, .hints = true},
    .shape_dims = {"vec"},
    .check = check,
    .shapes = shapes,
    .emit = tirx__emit_elementwise, /* elementwise.c */
    .prelude = frags,
};
