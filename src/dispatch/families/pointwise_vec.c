/*
 * pointwise.vec: unary, binary and ternary maps, cast, fill and select over vectors of up to
 * 16 bytes per operand: vector loads and stores (or consecutive registers), and packed
 * f16x2/bf16x2 arithmetic or conversion where PACKED below lists the op for the dtype and the
 * arch. Scalar operands are broadcast. The default of every pointwise key; its fallback is
 * pointwise.scalar.
 *
 * Shape: (vec, pack): vec elements per access, a power of two >= 2 (largest first); pack 2
 * when the arithmetic runs on f16x2/bf16x2 pairs, else 1. Lowering (lower.c packed_pair) runs
 * pack 2 as TIRX__ST_PACKED statements on the pairs of each vector: prelude helpers on 32-bit
 * registers (add/sub/mul.rn.bf16x2 on sm_90, fma.rn.bf16x2 forms on sm_80; .f16x2 likewise).
 * Conversions (PACKED_CAST) report pack 2 but are still lowered per element, so f32-computing
 * kernels keep their code. An innermost run that is odd or not 2-element aligned leaves no
 * vector: pointwise.scalar (pack 1) takes the call and the report gives the reason.
 */
#include "../lower.h"
#include "families.h"

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
    {TIRX__PRIM_OP_EXP2, 75, 90}, /* ex2.approx.f16x2, ex2.approx.ftz.bf16x2 */
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
   * lower.c) and broadcast to both halves. */
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
    .emit = tirx__emit_elementwise, /* lower.c */
};
