/*
 * gemm_async.wgmma and gemm_async.wgmma_rs: a full warpgroup issues
 * wgmma.mma_async.sync.aligned.m64nNk16.f32.{bf16,f16} (sm_90a), B from shared memory through a
 * 64-bit matrix descriptor and A either from shared memory as well (the SS form) or from
 * registers (the RS form). One instruction, so one file and one family ("wgmma"): which rule
 * a call gets follows from where its a operand lives (the rules' key patterns), and
 * config.family = "wgmma" forces either.
 *
 * The instruction, as data:
 *   d: a local f32 tile (M, N), M a multiple of 64: each 64-row slab is the warpgroup's m64nN
 *      accumulator fragment (tirx_layout_wgmma_acc: warp w holds rows 16w..16w+15 as the m16n8
 *      C fragment repeated along N) at some register offset, N a multiple of 8 up to 256;
 *   a (M, K): SS: shared, K-major (each row holds K consecutive elements) in a 32/64/128-byte
 *      swizzled or interleaved tile (gemm_common.h); RS: local, every (64, 16) block (m64 slab,
 *      k16 step) the wgmma A fragment (tirx_layout_wgmma_a(64, 16): per warp the mma.sync
 *      m16n8k16 A fragment, the four warps stacked by 16 rows) at some register offset: eight
 *      16-bit values of each thread, packed in pairs into the instruction's four 32-bit
 *      registers. The A fragment is K-major by construction: the RS form has no transpose bit
 *      for A;
 *   b (K, N): shared, K-major (each column holds K consecutive elements), as a in the SS form;
 *   a and b one dtype (f16 or bf16), K a multiple of 16; team: a full warpgroup.
 * Shape: (m=64, n, k=16), n = N or N/2, N/4, ... (a multiple of 8): one instruction covers an
 * m64 slab and n columns; the lowering (below) issues M/64 * N/n * K/16 of them after a
 * wgmma.fence, between register fences of d (and of a in the RS form). Its completion is the
 * caller's: tirx_wgmma_commit and tirx_wgmma_wait.
 */
#include "../../layout/layout_internal.h"
#include "../lower.h"
#include "gemm_common.h"

static const char FN[] = "tirx_kernel_build";

/* What both forms require of d, the dtypes and M, N, K; ctx->scratch[0..2] = M, N, K. */
static bool check_common(tirx__rule_ctx *ctx) {
  const tirx__call *c = ctx->call;
  int64_t m, n, k;
  if (!tirx__gemm_shape(ctx, &m, &n, &k)) return false;
  if (c->operands[0].dtype != TIRX_F32)
    tirx__reason(ctx, "d dtype %s is not f32: wgmma accumulates in f32 here",
                 tirx_dtype_name(c->operands[0].dtype));
  tirx_dtype at = c->operands[1].dtype, bt = c->operands[2].dtype;
  if ((at != TIRX_F16 && at != TIRX_BF16) || at != bt)
    tirx__reason(ctx, "a and b have dtypes %s and %s: the instruction needs both f16 or both bf16",
                 tirx_dtype_name(at), tirx_dtype_name(bt));
  if (m % 64)
    tirx__reason(ctx, "M is %lld: a warpgroup's wgmma covers slabs of 64 rows", (long long)m);
  if (n % 8 || n > 256)
    tirx__reason(ctx, "N is %lld: the instruction's N is a multiple of 8 up to 256", (long long)n);
  if (k % 16) tirx__reason(ctx, "K is %lld: not a multiple of 16 (k16 steps)", (long long)k);
  if (ctx->nreasons) return false;
  ctx->scratch[0] = m;
  ctx->scratch[1] = n;
  ctx->scratch[2] = k;
  /* The accumulator: every 64-row slab is the m64nN fragment at some register offset. */
  const tirx_layout *d = c->operands[0].layout;
  const tirx_layout *frag = tirx_layout_wgmma_acc(ctx->arena, 64, (int)n);
  for (int64_t s = 0; s < m / 64 && frag; s++) {
    if (!tirx__block_is_fragment(ctx->arena, d, m, n, 64 * s, 0, 64, n, frag)) {
      tirx__reason(ctx,
                   "d rows %lld..%lld are not the wgmma m64n%lld accumulator fragment "
                   "(tirx_layout_wgmma_acc) of a warpgroup",
                   (long long)(64 * s), (long long)(64 * s + 63), (long long)n);
      return false;
    }
  }
  return true;
}

static void check_b(tirx__rule_ctx *ctx) {
  tirx__wgmma_operand op;
  const char *why = NULL;
  if (!tirx__wgmma_operand_of(ctx->arena, &ctx->call->operands[2], 0, &op, &why))
    tirx__reason(ctx, "b: %s", why);
}

/* The SS form: a from shared memory through a descriptor, as b. */
static void check(tirx__rule_ctx *ctx) {
  if (!check_common(ctx)) return;
  tirx__wgmma_operand op;
  const char *why = NULL;
  if (!tirx__wgmma_operand_of(ctx->arena, &ctx->call->operands[1], 1, &op, &why))
    tirx__reason(ctx, "a: %s", why);
  check_b(ctx);
}

/* The first axis other than tid_in_wg and reg that l's iters or offsets use, or -1. */
static tirx_axis foreign_axis(const tirx_layout *l) {
  for (int i = 0; i < l->nd; i++)
    if (l->d[i].extent > 1 && l->d[i].stride != 0 && l->d[i].axis != TIRX_AXIS_TID_IN_WG &&
        l->d[i].axis != TIRX_AXIS_REG)
      return l->d[i].axis;
  for (int i = 0; i < l->no; i++)
    if (l->o[i].axis != TIRX_AXIS_TID_IN_WG && l->o[i].axis != TIRX_AXIS_REG) return l->o[i].axis;
  return -1;
}

/* Whether every (64, 16) block of a (m, k) is the wgmma A fragment at some register offset; a
 * reason naming the first block that is not otherwise. */
static bool a_fragments(tirx__rule_ctx *ctx, const tirx_layout *a, int64_t m, int64_t k) {
  const tirx_layout *frag = tirx_layout_wgmma_a(ctx->arena, 64, 16);
  for (int64_t s = 0; s < m / 64 && frag; s++)
    for (int64_t ks = 0; ks < k / 16; ks++) {
      if (!tirx__block_is_fragment(ctx->arena, a, m, k, 64 * s, 16 * ks, 64, 16, frag)) {
        tirx__reason(ctx,
                     "a rows %lld..%lld, K %lld..%lld are not the wgmma A fragment "
                     "(tirx_layout_wgmma_a) of a warpgroup: thread 32w+l must hold rows "
                     "16w+l/4 and +8, K 2*(l%%4)+{0,1} and +8 of the k16 step in 8 "
                     "consecutive registers",
                     (long long)(64 * s), (long long)(64 * s + 63), (long long)(16 * ks),
                     (long long)(16 * ks + 15));
        return false;
      }
    }
  return frag != NULL;
}

/* The RS form: a, a warpgroup's register tile of A fragments, b from shared memory. */
static void check_rs(tirx__rule_ctx *ctx) {
  if (!check_common(ctx)) return;
  const tirx_layout *a = ctx->call->operands[1].layout;
  tirx_axis bad = foreign_axis(a);
  if (bad >= 0)
    tirx__reason(ctx,
                 "a uses %s: the RS form takes a warpgroup's register tile on tid_in_wg and reg "
                 "(tirx_layout_wgmma_a)",
                 tirx_axis_name(bad));
  else if (tirx_layout_replica_count(a) != 1)
    tirx__reason(ctx, "a is replicated: the RS form takes one warpgroup's register tile "
                      "(tirx_layout_wgmma_a)");
  else
    a_fragments(ctx, a, ctx->scratch[0], ctx->scratch[2]);
  check_b(ctx);
}

static int shapes(tirx__rule_ctx *ctx, tirx__shape *out, int cap) {
  int c = 0;
  int64_t n = ctx->scratch[1];
  for (int64_t v = n; v >= 8 && v % 8 == 0 && n % v == 0 && c < cap; v /= 2)
    out[c++] = (tirx__shape){{64, v, 16}};
  return c;
}

/* ---- gemm_async.wgmma, gemm_async.wgmma_rs ---- */

/*
 * For each k16 step, each m64 slab and each n-column block one wgmma.mma_async (scale-d: the
 * call's accumulate predicate on the first k step, 1 after), after one wgmma.fence. Register
 * fences (DeepGEMM's warpgroup_fence_operand) on the accumulator, and in the RS form on the A
 * tile, before the wgmma.fence and after the last instruction: every write of those registers
 * that precedes the call in the program stays above the wgmma.fence, which is what the PTX ISA
 * asks of registers written before a wgmma reads them, and nothing after the call moves into
 * it (codegen fences them again after tirx_wgmma_wait). SS descriptors start at the slab's row
 * 0 and the step's column: inside a swizzle row that is +32 bytes per k16 (row 0 of a swizzle
 * atom is unswizzled). RS: the A operand is the local tile at the (slab, step) block's corner,
 * its fragment's 8 registers from there on (check_rs in families/gemm_wgmma.c).
 */
static tirx_status emit(const tirx__rule *rule, const tirx__call *call,
                             const tirx__shape *shape, void *emitter) {
  (void)rule;
  tirx__lower *lw = emitter;
  tirx_builder *b = lw->b;
  tirx__emit *e = lw->e;
  const tirx__prim_stmt *p = lw->p;
  const tirx_region *d = p->ops[0], *a = p->ops[1], *bm = p->ops[2];
  bool rs = call->operands[1].role == TIRX__ROLE_LOCAL;
  tirx__wgmma_operand da = {0, 0, 0}, db;
  const char *why = NULL;
  if ((!rs && !tirx__wgmma_operand_of(lw->arena, &call->operands[1], 1, &da, &why)) ||
      !tirx__wgmma_operand_of(lw->arena, &call->operands[2], 0, &db, &why))
    return tirx__b_fail(b, TIRX_E_INTERNAL, "%s: gemm_async.wgmma: %s", FN, why);
  int64_t m = d->extent[0], n = d->extent[1], k = a->extent[1], in = shape->v[1];
  tirx_expr *yes = tirx_bool(b, true), *first = p->scale_d ? p->scale_d : yes;
  tirx__gemm_fence_regs(e, d->tensor);
  if (rs) tirx__gemm_fence_regs(e, a->tensor);
  tirx__gemm_native(e, TIRX__NV_WGMMA_FENCE);
  for (int64_t ks = 0; ks < k / 16; ks++)
    for (int64_t s = 0; s < m / 64; s++)
      for (int64_t nb = 0; nb < n / in; nb++) {
        tirx__stmt *w = tirx__gemm_native(e, TIRX__NV_WGMMA);
        if (!w) return b->status;
        w->native.wgmma.acc = tirx__gemm_at(b, d, 64 * s, nb * in);
        w->native.wgmma.a = tirx__gemm_at(b, a, 64 * s, 16 * ks);
        w->native.wgmma.b = tirx__gemm_at(b, bm, 16 * ks, nb * in);
        w->native.wgmma.scale_d = ks ? yes : first;
        w->native.wgmma.in = (tirx__wgmma_instr){
            .n = (int32_t)in, .dtype = call->operands[1].dtype, .rs = rs,
            .lbo_a = (int32_t)da.lbo, .sbo_a = (int32_t)da.sbo, .swz_a = da.swizzle,
            .lbo_b = (int32_t)db.lbo, .sbo_b = (int32_t)db.sbo, .swz_b = db.swizzle};
      }
  tirx__gemm_fence_regs(e, d->tensor);
  if (rs) tirx__gemm_fence_regs(e, a->tensor);
  return b->status;
}

const tirx__rule tirx__rule_gemm_async_wgmma = {
    .name = "gemm_async.wgmma",
    .family = "wgmma",
    .summary = "wgmma.mma_async.sync.aligned.m64nNk16.f32.{bf16,f16}, both operands in shared",
    .kind = TIRX__RULE_DEFAULT,
    .prims = TIRX__BIT(TIRX__PRIM_GEMM_ASYNC),
    .flows = TIRX__FLOW(TIRX__ROLE_SHARED, TIRX__ROLE_LOCAL),
    .teams = TIRX__BIT(TIRX_TEAM_WARPGROUP),
    .needs = {.dtypes = TIRX__DT(F32) | TIRX__DTYPES_16BIT, .rank = 2, .full_team = true,
              .features = TIRX__FEAT(WGMMA)},
    .shape_dims = {"m", "n", "k"},
    .check = check,
    .shapes = shapes,
    .emit = emit,
};

const tirx__rule tirx__rule_gemm_async_wgmma_rs = {
    .name = "gemm_async.wgmma_rs",
    .family = "wgmma",
    .summary = "wgmma.mma_async.sync.aligned.m64nNk16.f32.{bf16,f16}, a in registers, b in shared",
    .kind = TIRX__RULE_DEFAULT,
    .prims = TIRX__BIT(TIRX__PRIM_GEMM_ASYNC),
    .flows = TIRX__FLOW(TIRX__ROLE_LOCAL, TIRX__ROLE_LOCAL) |
             TIRX__FLOW(TIRX__ROLE_SHARED, TIRX__ROLE_LOCAL),
    .roles = {0, TIRX__BIT(TIRX__ROLE_LOCAL), TIRX__BIT(TIRX__ROLE_SHARED)},
    .teams = TIRX__BIT(TIRX_TEAM_WARPGROUP),
    .needs = {.dtypes = TIRX__DT(F32) | TIRX__DTYPES_16BIT, .rank = 2, .full_team = true,
              .features = TIRX__FEAT(WGMMA)},
    .shape_dims = {"m", "n", "k"},
    .check = check_rs,
    .shapes = shapes,
    .emit = emit,
};
