/*
 * pointwise.vec: unary, binary and ternary maps, cast, fill and select over vectors of up to
 * 16 bytes per operand: vector loads and stores (or consecutive registers), and packed
 * f16x2/bf16x2 arithmetic or conversion where PACKED below lists the op for the dtype and the
 * arch. Scalar operands are broadcast. The default of every pointwise key; its fallback is
 * pointwise.scalar.
 *
 * Shape: (vec, pack): vec elements per access, a power of two >= 2 (largest first); pack 2
 * when the arithmetic runs on f16x2/bf16x2 pairs, else 1. Lowering (packed_pair below) runs
 * pack 2 as TIRX__ST_PACKED statements on the pairs of each vector: prelude helpers on 32-bit
 * registers (add/sub/mul.rn.bf16x2 on sm_90, fma.rn.bf16x2 forms on sm_80; .f16x2 likewise).
 * Conversions (PACKED_CAST) report pack 2 but are still lowered per element, so f32-computing
 * kernels keep their code. An innermost run that is odd or not 2-element aligned leaves no
 * vector: pointwise.scalar (pack 1) takes the call and the report gives the reason.
 */
#include "../lower.h"
#include "families.h"

/* ---- the native statement: packed f16x2/bf16x2 math ---- */

/* dst and the next element of its last dim = op(src...) on pairs; src[i] (NULL past the last)
 * is the pair starting at that load when bit i of pairs is set, else a value broadcast to both */
typedef struct packed_payload {
  tirx__elem dst;
  tirx_expr *src[3];
  int32_t op;
  int32_t pairs;
} packed_payload;

/* "out[0..2] = x2.add(src[0..2], b)" */
static void print_packed(tirx__writer *w, const tirx__stmt *s) {
  const packed_payload *p = s->native.p;
  const tirx__elem *d = &p->dst;
  tirx__sb_printf(w->sb, "%s[", w->tensor(w, d->tensor)); /* "t[i, j +0..2]" */
  for (int k = 0; k < d->tensor->rank; k++) {
    if (k) tirx__sb_append(w->sb, ", ");
    w->expr(w, d->index[k]);
  }
  tirx__sb_printf(w->sb, " +0..2] = x2.%s(", tirx__prim_op_name((tirx__prim_op)p->op));
  for (int i = 0; i < 3 && p->src[i]; i++) {
    if (i) tirx__sb_append(w->sb, ", ");
    w->expr(w, p->src[i]);
    if (p->pairs >> i & 1) tirx__sb_append(w->sb, " +0..2");
  }
  tirx__sb_append(w->sb, ")");
}

static void emit_packed(tirx__writer *w, const tirx__stmt *s) {
  const packed_payload *p = s->native.p;
  const tirx__elem *d = &p->dst;
  tirx__sb_append(w->sb, "tirx_x2_st(");
  w->elem(w, d->tensor, d->index);
  tirx__sb_printf(w->sb, ", tirx_x2_%s_%s(", d->tensor->dtype == TIRX_F16 ? "f16x2" : "bf16x2",
                  tirx__prim_op_name((tirx__prim_op)p->op));
  for (int i = 0; i < 3 && p->src[i]; i++) {
    const tirx_expr *e = p->src[i];
    if (i) tirx__sb_append(w->sb, ", ");
    if (p->pairs >> i & 1) { /* the pair at a load */
      tirx__sb_append(w->sb, "tirx_x2_ld(");
      w->elem(w, e->tensor, e->index);
      tirx__sb_append(w->sb, ")");
    } else { /* a value broadcast to both halves */
      tirx__sb_append(w->sb, "tirx_x2_dup(");
      w->expr(w, e);
      tirx__sb_append(w->sb, ")");
    }
  }
  tirx__sb_append(w->sb, "));");
}

static const tirx__native_op nv_packed = {
    .name = "x2", .helper = "tirx_x2", .need = TIRX__NEED(0),
    .size = sizeof(packed_payload),
    .ops = {TIRX__ELEM(packed_payload, dst), TIRX__EXPR(packed_payload, src[0]),
            TIRX__EXPR(packed_payload, src[1]), TIRX__EXPR(packed_payload, src[2])},
    .print = print_packed, .emit = emit_packed};

/* The tirx_x2_* helpers, in every kernel's core for now (byte-identical generated code;
 * making them conditional on the op is a follow-up). */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Woverlength-strings"
/* tirx_x2_* */
static const tirx__prelude_frag packed_frag = {.order = 400, .when = TIRX__PRE_ALWAYS, .text =
    "/* Packed f16x2/bf16x2 math of tile primitives (pointwise.vec pack=2, TIRX__ST_PACKED): a pair\n"
    " * of 16-bit elements in one 32-bit register, element 0 in the low half. The instructions are\n"
    " * guarded by the arch that has them (dispatch packs only there). */\n"
    "__device__ __forceinline__ unsigned tirx_x2_ld(const tirx_f16 *p) {\n"
    "  return (unsigned)p[0].bits | ((unsigned)p[1].bits << 16);\n"
    "}\n"
    "__device__ __forceinline__ unsigned tirx_x2_ld(const tirx_bf16 *p) {\n"
    "  return (unsigned)p[0].bits | ((unsigned)p[1].bits << 16);\n"
    "}\n"
    "__device__ __forceinline__ void tirx_x2_st(tirx_f16 *p, unsigned u) {\n"
    "  p[0].bits = (unsigned short)u; p[1].bits = (unsigned short)(u >> 16);\n"
    "}\n"
    "__device__ __forceinline__ void tirx_x2_st(tirx_bf16 *p, unsigned u) {\n"
    "  p[0].bits = (unsigned short)u; p[1].bits = (unsigned short)(u >> 16);\n"
    "}\n"
    "__device__ __forceinline__ unsigned tirx_x2_dup(tirx_f16 h) { return (unsigned)h.bits * 0x10001u; }\n"
    "__device__ __forceinline__ unsigned tirx_x2_dup(tirx_bf16 h) { return (unsigned)h.bits * 0x10001u; }\n"
    "#define TIRX_X2_1(name, ins) __device__ __forceinline__ unsigned name(unsigned a) { unsigned d; asm(ins \" %0, %1;\" : \"=r\"(d) : \"r\"(a)); return d; }\n"
    "#define TIRX_X2_2(name, ins) __device__ __forceinline__ unsigned name(unsigned a, unsigned b) { unsigned d; asm(ins \" %0, %1, %2;\" : \"=r\"(d) : \"r\"(a), \"r\"(b)); return d; }\n"
    "#define TIRX_X2_3(name, ins) __device__ __forceinline__ unsigned name(unsigned a, unsigned b, unsigned c) { unsigned d; asm(ins \" %0, %1, %2, %3;\" : \"=r\"(d) : \"r\"(a), \"r\"(b), \"r\"(c)); return d; }\n"
    "#if __CUDA_ARCH__ >= 530\n"
    "TIRX_X2_2(tirx_x2_f16x2_add, \"add.rn.f16x2\")\n"
    "TIRX_X2_2(tirx_x2_f16x2_sub, \"sub.rn.f16x2\")\n"
    "TIRX_X2_2(tirx_x2_f16x2_mul, \"mul.rn.f16x2\")\n"
    "TIRX_X2_3(tirx_x2_f16x2_fma, \"fma.rn.f16x2\")\n"
    "TIRX_X2_1(tirx_x2_f16x2_neg, \"neg.f16x2\")\n"
    "TIRX_X2_1(tirx_x2_f16x2_abs, \"abs.f16x2\")\n"
    "#endif\n"
    "#if __CUDA_ARCH__ >= 750\n"
    "TIRX_X2_1(tirx_x2_f16x2_exp2, \"ex2.approx.f16x2\")\n"
    "#endif\n"
    "#if __CUDA_ARCH__ >= 800\n"
    "TIRX_X2_2(tirx_x2_f16x2_max, \"max.f16x2\")\n"
    "TIRX_X2_2(tirx_x2_f16x2_min, \"min.f16x2\")\n"
    "TIRX_X2_3(tirx_x2_bf16x2_fma, \"fma.rn.bf16x2\")\n"
    "TIRX_X2_2(tirx_x2_bf16x2_max, \"max.bf16x2\")\n"
    "TIRX_X2_2(tirx_x2_bf16x2_min, \"min.bf16x2\")\n"
    "TIRX_X2_1(tirx_x2_bf16x2_neg, \"neg.bf16x2\")\n"
    "TIRX_X2_1(tirx_x2_bf16x2_abs, \"abs.bf16x2\")\n"
    "#if __CUDA_ARCH__ >= 900\n"
    "TIRX_X2_2(tirx_x2_bf16x2_add, \"add.rn.bf16x2\")\n"
    "TIRX_X2_2(tirx_x2_bf16x2_sub, \"sub.rn.bf16x2\")\n"
    "TIRX_X2_2(tirx_x2_bf16x2_mul, \"mul.rn.bf16x2\")\n"
    "TIRX_X2_1(tirx_x2_bf16x2_exp2, \"ex2.approx.ftz.bf16x2\")\n"
    "#else\n"
    "/* sm_80 has only fma.rn.bf16x2: a + b = fma(a, 1, b), a - b = fma(b, -1, a), a * b = fma(a,\n"
    " * b, -0), each rounded once. */\n"
    "__device__ __forceinline__ unsigned tirx_x2_bf16x2_add(unsigned a, unsigned b) {\n"
    "  return tirx_x2_bf16x2_fma(a, 0x3f803f80u, b);\n"
    "}\n"
    "__device__ __forceinline__ unsigned tirx_x2_bf16x2_sub(unsigned a, unsigned b) {\n"
    "  return tirx_x2_bf16x2_fma(b, 0xbf80bf80u, a);\n"
    "}\n"
    "__device__ __forceinline__ unsigned tirx_x2_bf16x2_mul(unsigned a, unsigned b) {\n"
    "  return tirx_x2_bf16x2_fma(a, b, 0x80008000u);\n"
    "}\n"
    "#endif\n"
    "#endif\n"
    "#undef TIRX_X2_1\n"
    "#undef TIRX_X2_2\n"
    "#undef TIRX_X2_3\n"
};
#pragma GCC diagnostic pop

static const tirx__prelude_frag *const frags[] = {&packed_frag, NULL};


static const char FN[] = "tirx_kernel_build";

/* Packed 16-bit arithmetic: the minimum arch of the f16x2 and bf16x2 forms (PTX ISA). */
static const struct {
  tirx__prim_op op;
  int f16_arch, bf16_arch;
} PACKED[] = {
    {TIRX__PRIM_OP_ADD, 53, 80},  /* add.f16x2; add.rn.bf16x2 via fma.rn.bf16x2 on sm_80 */
    {TIRX__PRIM_OP_SUB, 53, 80},  /* sub.f16x2 */
    {TIRX__PRIM_OP_MUL, 53, 80},  /* mul.f16x2 */
    {TIRX__PRIM_OP_FMA, 53, 80},  /* fma.rn.f16x2, fma.rn.bf16x2 */
    {TIRX__PRIM_OP_NEG, 53, 80},  /* neg.f16x2, neg.bf16x2 */
    {TIRX__PRIM_OP_ABS, 53, 80},  /* abs.f16x2, abs.bf16x2 */
    {TIRX__PRIM_OP_MAX, 80, 80},  /* max.f16x2, max.bf16x2 */
    {TIRX__PRIM_OP_MIN, 80, 80},  /* min.f16x2, min.bf16x2 */
    /* Not TIRX_OP_EXP2: it is exp2f per element (subnormals kept, rounded once to 16 bits),
     * while ex2.approx.ftz.bf16x2 flushes subnormal inputs and results to zero and
     * ex2.approx.{f16x2,bf16x2} are approximations at 16-bit precision: packing it made the
     * result depend on whether the region vectorised. The prelude keeps the helpers. */
};

/* Packed conversions: cvt.rn.{bf16x2,f16x2}.f32 and the widening unpacks. */
static const struct {
  tirx_dtype from, to;
  int arch;
} PACKED_CAST[] = {
    {TIRX_F32, TIRX_BF16, 80},
    {TIRX_F32, TIRX_F16, 80},
    {TIRX_BF16, TIRX_F32, 80},
    {TIRX_F16, TIRX_F32, 53},
};

/* 2 when the call's arithmetic has a packed form on its arch, else 1. */
static int64_t pack_of(const tirx__call *c) {
  tirx_dtype t = c->operands[0].dtype;
  if (c->prim == TIRX__PRIM_CAST) {
    for (size_t i = 0; i < sizeof PACKED_CAST / sizeof PACKED_CAST[0]; i++)
      if (PACKED_CAST[i].from == c->operands[1].dtype && PACKED_CAST[i].to == t &&
          c->arch >= PACKED_CAST[i].arch)
        return 2;
    return 1;
  }
  if (c->prim == TIRX__PRIM_FILL || c->prim == TIRX__PRIM_SELECT) return 1;
  if (t != TIRX_F16 && t != TIRX_BF16) return 1;
  /* Every region operand of the dtype; a float scalar is rounded to it first (as per element,
   * elementwise.c) and broadcast to both halves. */
  for (int i = 1; i < c->noperands; i++) {
    const tirx__operand *o = &c->operands[i];
    bool fscalar = o->role == TIRX__ROLE_SCALAR &&
                   (o->dtype == TIRX_F32 || o->dtype == TIRX_F64 || o->dtype == t);
    if (o->dtype != t && !fscalar) return 1;
  }
  for (size_t i = 0; i < sizeof PACKED / sizeof PACKED[0]; i++)
    if (PACKED[i].op == c->config.op)
      return c->arch >= (t == TIRX_F16 ? PACKED[i].f16_arch : PACKED[i].bf16_arch) ? 2 : 1;
  return 1;
}

static void check(tirx__rule_ctx *ctx) {
  ctx->scratch[0] = tirx__common_vector_width(ctx, 16, 2);
  ctx->scratch[1] = pack_of(ctx->call);
}

static int shapes(tirx__rule_ctx *ctx, tirx__shape *out, int cap) {
  int n = 0;
  for (int64_t v = ctx->scratch[0]; v >= 2 && n < cap; v /= 2)
    out[n++] = (tirx__shape){{v, ctx->scratch[1]}};
  return n;
}

/* ---- packed f16x2/bf16x2 math (pointwise.vec pack=2) ---- */

static bool half_dtype(int t) { return t == TIRX_F16 || t == TIRX_BF16; }

/* The ops with a packed helper in the prelude (tirx_x2_{f16x2,bf16x2}_<op>). */
static bool packed_op(int op) {
  switch (op) {
  case TIRX__PRIM_OP_ADD: case TIRX__PRIM_OP_SUB: case TIRX__PRIM_OP_MUL:
  case TIRX__PRIM_OP_FMA: case TIRX__PRIM_OP_MAX: case TIRX__PRIM_OP_MIN:
  case TIRX__PRIM_OP_NEG: case TIRX__PRIM_OP_ABS: return true;
  default: return false;
  }
}

/*
 * Elements j and j + 1 of the vector at idx with one packed instruction (all operands f16, or
 * all bf16): sources from the
 * temporaries tmp (memory operands), in place (registers: dispatch checked that the vector is
 * consecutive slots of each), or broadcast (scalars, rounded to the dtype as per element).
 * false when the call has no packed form (nothing written).
 */
static bool packed_pair(tirx__lower *lw, tirx_tensor *const *tmp, tirx_expr *const *idx,
                        int64_t j) {
  tirx_builder *b = lw->b;
  tirx__emit *e = lw->e;
  const tirx__prim_stmt *p = lw->p;
  const tirx_region *dst = p->ops[0];
  int dt = dst->tensor->dtype;
  /* Conversions (cast f32 <-> f16/bf16, packed in dispatch's table) stay per element for now:
   * the f32-computing kernels (examples/membound.c) keep their code. */
  if (p->prim != TIRX__PRIM_UNARY && p->prim != TIRX__PRIM_BINARY &&
      p->prim != TIRX__PRIM_TERNARY)
    return false;
  if (!half_dtype(dt) || !packed_op(p->op)) return false;
  for (int i = 1; i < p->nops; i++) {
    const tirx_region *r = p->ops[i];
    if (r->tensor ? r->tensor->dtype != dt : !tirx__dtype_is_float(r->value->dtype))
      return false;
  }
  tirx_expr *src[3] = {NULL, NULL, NULL}, *jx = tirx_int(b, j);
  int pairs = 0;
  for (int i = 1; i < p->nops; i++) {
    const tirx_region *r = p->ops[i];
    if (tmp[i] || r->tensor) pairs |= 1 << (i - 1);
    src[i - 1] = tmp[i] ? tirx_load(b, tmp[i], 1, &jx)
                 : r->tensor ? tirx__lower_load(lw, r, idx, j)
                             : tirx__lower_as_type(b, r->value, dt);
  }
  tirx_tensor *t = tmp[0] ? tmp[0] : dst->tensor;
  tirx_expr *di[TIRX_BUILDER_MAX_RANK] = {jx};
  if (!tmp[0]) tirx__lower_tensor_index(lw, dst, idx, j, di);
  tirx_expr **index = tirx__b_index_list(b, FN, t, t->rank, di);
  tirx__stmt *s = index && b->status == TIRX_OK ? tirx__emit_native(e, &nv_packed) : NULL;
  if (!s) return true; /* the error is recorded */
  packed_payload *q = s->native.p;
  q->dst.tensor = t;
  q->dst.index = index;
  for (int i = 0; i < 3; i++) q->src[i] = src[i];
  q->pairs = pairs;
  q->op = p->op;
  return true;
}

/* ---- end packed math ---- */

/* The elementwise lowering (elementwise.c) with pack 2: pairs of each vector through packed_pair. */
static tirx_status emit(const tirx__rule *rule, const tirx__call *call, const tirx__shape *shape,
                        void *emitter) {
  tirx__lower *lw = emitter;
  if (shape->v[1] == 2) lw->pair = packed_pair;
  return tirx__emit_elementwise(rule, call, shape, emitter);
}

const tirx__rule tirx__rule_pointwise_vec = {
    .name = "pointwise.vec",
    .family = "vec",
    .summary = "vectorised loads/stores, packed f16x2/bf16x2 arithmetic where it exists",
    .kind = TIRX__RULE_DEFAULT,
    .prims = TIRX__PRIMS_POINTWISE,
    .flows = TIRX__FLOWS_MEMORY | TIRX__FLOWS_SCALAR,
    .teams = TIRX__TEAMS_ALL,
    .needs = {.dtypes = TIRX__DTYPES_ALL, .hints = true},
    .shape_dims = {"vec", "pack"},
    .check = check,
    .shapes = shapes,
    .emit = emit,
    .prelude = frags,
};
