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
 * Shape: (m=16, n=8, k=16). Lowering (lower_gemm.c): per k16 step, ldmatrix.x2 of every B
 * fragment, then per m16 row block ldmatrix.x4 of the A fragment and one mma per n8 block.
 */
#include "../../layout/layout_internal.h"
#include "../lower.h"
#include "gemm_common.h"

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
    .emit = tirx__emit_mma, /* lower_gemm.c */
};
