/*
 * gemm.mma: a warp issues mma.sync.aligned.m16n8k16.row.col.f32.{bf16,f16}.f32 (sm_80) with
 * its operands loaded from shared memory by ldmatrix.
 *
 * The instruction, as data:
 *   d: a local f32 tile (M, N) of the warp: each 16x8 block is the m16n8 C fragment
 *      ((2,8),(4,2)):((2@reg,4@laneid),(1@laneid,1@reg)) (tirx_layout_mma_m16n8k16_c) at
 *      some register offset, on laneid and reg only;
 *   a (M, K), b (K, N): shared, one 16-bit dtype, K-major: every 8 consecutive K elements of a
 *      row of a (a column of b) are 16 contiguous, 16-byte aligned bytes (one ldmatrix row);
 *   M, N, K multiples of 16, 8, 16; team: a full warp.
 * Shape: (m=16, n=8, k=16). Lowering (below): per k16 step, ldmatrix.x2 of every B
 * fragment, then per m16 row block ldmatrix.x4 of the A fragment and one mma per n8 block.
 */
#include "../../layout/layout_internal.h"
#include "../lower.h"
#include "gemm_common.h"

static const char FN[] = "tirx_kernel_build";

static void check(tirx__rule_ctx *ctx) {
  const tirx__call *c = ctx->call;
  int64_t m, n, k;
  if (!tirx__gemm_shape(ctx, &m, &n, &k)) return;
  if (c->operands[0].dtype != TIRX_F32)
    tirx__reason(ctx, "d dtype %s is not f32: the instruction accumulates in f32",
                 tirx_dtype_name(c->operands[0].dtype));
  tirx_dtype at = c->operands[1].dtype, bt = c->operands[2].dtype;
  if ((at != TIRX_F16 && at != TIRX_BF16) || at != bt)
    tirx__reason(ctx, "a and b have dtypes %s and %s: the instruction needs both f16 or both bf16",
                 tirx_dtype_name(at), tirx_dtype_name(bt));
  if (m % 16 || n % 8 || k % 16)
    tirx__reason(ctx, "M, N, K are %lld, %lld, %lld: expected multiples of 16, 8, 16",
                 (long long)m, (long long)n, (long long)k);
  if (ctx->nreasons) return;
  const tirx_layout *d = c->operands[0].layout, *frag = tirx_layout_mma_m16n8k16_c(ctx->arena);
  for (int i = 0; i < d->nd; i++)
    if (d->d[i].extent > 1 && d->d[i].stride != 0 && d->d[i].axis != TIRX_AXIS_LANEID &&
        d->d[i].axis != TIRX_AXIS_REG) {
      tirx__reason(ctx, "d uses %s: the instruction needs a per-warp tile on laneid and reg",
                   tirx_axis_name(d->d[i].axis));
      return;
    }
  for (int64_t r = 0; r < m && frag; r += 16)
    for (int64_t col = 0; col < n; col += 8) {
      if (!tirx__block_is_fragment(ctx->arena, d, m, n, r, col, 16, 8, frag)) {
        tirx__reason(ctx,
                     "d block at (%lld,%lld) is not the m16n8 C fragment "
                     "(tirx_layout_mma_m16n8k16_c)",
                     (long long)r, (long long)col);
        return;
      }
    }
  const char *why = NULL;
  if (!tirx__ldmatrix_rows(ctx->arena, &c->operands[1], 1, &why))
    tirx__reason(ctx, "a is not K-major for ldmatrix: %s", why);
  if (!tirx__ldmatrix_rows(ctx->arena, &c->operands[2], 0, &why))
    tirx__reason(ctx, "b is not K-major for ldmatrix: %s", why);
}

static int shapes(tirx__rule_ctx *ctx, tirx__shape *out, int cap) {
  (void)ctx;
  if (cap < 1) return 0;
  out[0] = (tirx__shape){{16, 8, 16}};
  return 1;
}

/* ---- gemm.mma ---- */

/* ---- the native statement: mma.sync m16n8k16 ---- */

/* loads of the C fragment's first register, the A fragment (8 16-bit values), the B fragment
 * (4); accumulate (bool); dtype of A and B */
typedef struct mma_payload {
  tirx_expr *c, *a, *b, *accumulate;
  int32_t dtype;
} mma_payload;

static void print_mma(tirx__writer *w, const tirx__stmt *s) {
  const mma_payload *p = s->native.p;
  tirx__sb_printf(w->sb, "mma.m16n8k16.%s(", tirx_dtype_name((tirx_dtype)p->dtype));
  const tirx_expr *r[3] = {p->c, p->a, p->b};
  for (int i = 0; i < 3; i++) {
    w->expr(w, r[i]);
    tirx__sb_append(w->sb, ", ");
  }
  tirx__sb_append(w->sb, "accumulate ");
  w->expr(w, p->accumulate);
  tirx__sb_append(w->sb, ")");
}

static const tirx__native_op nv_mma = {
    .name = "mma.m16n8k16", .helper = "tirx_mma_m16n8k16", .need = TIRX__NEED(TIRX__FEAT(MMA_SYNC)),
    .section = TIRX__PRE_SYNC, .size = sizeof(mma_payload),
    .ops = {TIRX__LOAD(mma_payload, c), TIRX__LOAD(mma_payload, a), TIRX__LOAD(mma_payload, b),
            TIRX__EXPR(mma_payload, accumulate)},
    .print = print_mma, .emit_fmt = "$h($0, $1, $2, $3);"};

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Woverlength-strings"
/* The helper, at the end of the sync section. */
static const tirx__prelude_frag mma_frag = {.order = 740, .when = TIRX__PRE_SYNC, .text =
    "/* mma.sync m16n8k16 with f32 accumulators: d (4 registers) = [d +] a (8 16-bit values of the\n"
    " * A fragment) x b (4 of the B fragment). */\n"
    "#if __CUDA_ARCH__ >= 800\n"
    "#define TIRX_MMA_M16N8K16(T, ty) \\\n"
    "__device__ __forceinline__ void tirx_mma_m16n8k16(float *d, const T *a, const T *b, bool acc) { \\\n"
    "  float c0 = acc ? d[0] : 0.0f, c1 = acc ? d[1] : 0.0f, c2 = acc ? d[2] : 0.0f, c3 = acc ? d[3] : 0.0f; \\\n"
    "  asm(\"mma.sync.aligned.m16n8k16.row.col.f32.\" ty \".\" ty \".f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%10, %11, %12, %13};\" \\\n"
    "      : \"=f\"(d[0]), \"=f\"(d[1]), \"=f\"(d[2]), \"=f\"(d[3]) \\\n"
    "      : \"r\"(tirx_pack2(a)), \"r\"(tirx_pack2(a + 2)), \"r\"(tirx_pack2(a + 4)), \"r\"(tirx_pack2(a + 6)), \\\n"
    "        \"r\"(tirx_pack2(b)), \"r\"(tirx_pack2(b + 2)), \"f\"(c0), \"f\"(c1), \"f\"(c2), \"f\"(c3)); \\\n"
    "}\n"
    "TIRX_MMA_M16N8K16(tirx_bf16, \"bf16\")\n"
    "TIRX_MMA_M16N8K16(tirx_f16, \"f16\")\n"
    "#undef TIRX_MMA_M16N8K16\n"
    "#endif\n"
};
#pragma GCC diagnostic pop

static const tirx__prelude_frag *const frags[] = {&mma_frag, NULL};


/* ldmatrix.x<num> (copy_ldmatrix.c's statement) from sm at (row, col) into frag[first + 2i], i < num. */
static void ldmatrix(tirx__emit *e, const tirx_region *sm, tirx_expr *row, tirx_expr *col,
                     tirx_tensor *frag, int64_t first, int num) {
  tirx_builder *b = e->b;
  tirx_expr *six[2] = {tirx_add(b, sm->begin[0], row), tirx_add(b, sm->begin[1], col)};
  tirx_expr **index = tirx__b_index_list(b, FN, sm->tensor, 2, six);
  tirx_expr **regs = tirx__arena_array(b->arena, (size_t)num, sizeof *regs, FN);
  if (!index || !regs) {
    if (b->status == TIRX_OK) tirx__b_fail(b, TIRX_E_NO_MEMORY, "%s: out of memory", FN);
    return;
  }
  for (int i = 0; i < num; i++) {
    tirx_expr *x = tirx_int(b, first + 2 * i);
    regs[i] = tirx_load(b, frag, 1, &x);
  }
  if (b->status == TIRX_OK) tirx__matrix_stmt(e, false, sm->tensor, index, regs, num);
}

/*
 * For each k16 step (a loop): every B fragment of the step by ldmatrix.x2 (lanes 0-7 address
 * the columns' K elements 0-7, lanes 8-15 elements 8-15: the m16n8k16 B fragment, the other
 * lanes repeat them), then per m16 block the A fragment by ldmatrix.x4 (lanes 8q..8q+7 rows
 * (q % 2) * 8 + 0..7 at K (q / 2) * 8: registers a0a1, a2a3, a4a5, a6a7) and one mma per n8
 * block. The accumulate predicate holds on the first step only as the call's; d's block
 * (r, c) starts at the register of its element (r, c).
 */
static tirx_status emit(const tirx__rule *rule, const tirx__call *call,
                           const tirx__shape *shape, void *emitter) {
  (void)rule;
  (void)shape;
  tirx__lower *lw = emitter;
  tirx_builder *b = lw->b;
  tirx__emit *e = lw->e;
  const tirx__prim_stmt *p = lw->p;
  const tirx_region *d = p->ops[0], *a = p->ops[1], *bm = p->ops[2];
  int64_t m = d->extent[0], n = d->extent[1], k = a->extent[1];
  tirx_dtype dt = call->operands[1].dtype;
  tirx_expr *lane = tirx__emit_let(e, "lane", tirx_lane_id(b));
  tirx_expr *r8 = tirx_bit_and(b, lane, tirx_int(b, 7));
  tirx_expr *half = tirx_mul(b, tirx_bit_and(b, tirx_shr(b, lane, tirx_int(b, 3)), tirx_int(b, 1)),
                             tirx_int(b, 8));
  tirx_tensor *af = tirx__emit_alloc_local(e, "afrag", dt, 1, (int64_t[]){8});
  tirx_tensor *bf = tirx__emit_alloc_local(e, "bfrag", dt, 1, (int64_t[]){n / 8 * 4});
  tirx_expr *ki = tirx__emit_for_begin(e, "kstep", tirx_int(b, 0), tirx_int(b, k / 16), NULL,
                                 TIRX_LOOP_SERIAL);
  if (!ki || !af || !bf) return b->status;
  tirx_expr *k0 = tirx_mul(b, ki, tirx_int(b, 16));
  /* B fragments of the step: column n0 + lane % 8, K k0 + (lane / 8 % 2) * 8. */
  for (int64_t nb = 0; nb < n / 8; nb++)
    ldmatrix(e, bm, tirx_add(b, k0, half), tirx_add(b, r8, tirx_int(b, 8 * nb)), bf, 4 * nb, 2);
  tirx_expr *acc = p->scale_d ? tirx_or(b, p->scale_d, tirx_gt(b, ki, tirx_int(b, 0)))
                              : tirx_bool(b, true);
  tirx_expr *acol = tirx_add(b, k0, tirx_mul(b, tirx_shr(b, lane, tirx_int(b, 4)), tirx_int(b, 8)));
  for (int64_t mb = 0; mb < m / 16; mb++) {
    ldmatrix(e, a, tirx_add(b, tirx_add(b, r8, half), tirx_int(b, 16 * mb)), acol, af, 0, 4);
    for (int64_t nb = 0; nb < n / 8; nb++) {
      tirx__stmt *s = tirx__emit_native(e, &nv_mma);
      if (!s) return b->status;
      mma_payload *q = s->native.p;
      tirx_expr *zero = tirx_int(b, 0), *bx = tirx_int(b, 4 * nb);
      q->c = tirx__gemm_at(b, d, 16 * mb, 8 * nb);
      q->a = tirx_load(b, af, 1, &zero);
      q->b = tirx_load(b, bf, 1, &bx);
      q->accumulate = acc;
      q->dtype = dt;
    }
  }
  tirx__emit_for_end(e);
  return b->status;
}

const tirx__rule tirx__rule_gemm_mma = {
    .name = "gemm.mma",
    .family = "mma",
    .summary = "mma.sync.aligned.m16n8k16.row.col.f32.{bf16,f16}.f32, ldmatrix operands",
    .kind = TIRX__RULE_DEFAULT,
    .prims = TIRX__BIT(TIRX__PRIM_GEMM),
    .flows = TIRX__FLOW(TIRX__ROLE_SHARED, TIRX__ROLE_LOCAL),
    .teams = TIRX__BIT(TIRX_TEAM_WARP),
    .needs = {.dtypes = TIRX__DT(F32) | TIRX__DTYPES_16BIT, .rank = 2, .full_team = true,
              .features = TIRX__FEAT(MMA_SYNC) | TIRX__FEAT(LDMATRIX)},
    .shape_dims = {"m", "n", "k"},
    .check = check,
    .shapes = shapes,
    .emit = emit,
    .prelude = frags,
};
