/*
 * gemm_async.wgmma: a full warpgroup issues wgmma.mma_async.sync.aligned.m64nNk16.f32.
 * {bf16,f16} (sm_90a) with both operands in shared memory (the SS form) described by 64-bit
 * matrix descriptors.
 *
 * The instruction, as data:
 *   d: a local f32 tile (M, N), M a multiple of 64: each 64-row slab is the warpgroup's m64nN
 *      accumulator fragment (tirx_layout_wgmma_acc: warp w holds rows 16w..16w+15 as the m16n8
 *      C fragment repeated along N) at some register offset, N a multiple of 8 up to 256;
 *   a (M, K) and b (K, N): shared, one dtype (f16 or bf16), K-major (each row of a, each column
 *      of b holds K consecutive elements) in a 32/64/128-byte swizzled or interleaved tile
 *      (gemm_common.h), K a multiple of 16;
 *   team: a full warpgroup.
 * Shape: (m=64, n, k=16), n = N or N/2, N/4, ... (a multiple of 8): one instruction covers an
 * m64 slab and n columns; the lowering (lower_gemm.c) issues M/64 * N/n * K/16 of them between
 * a wgmma.fence and register fences. Its completion is the caller's: tirx_wgmma_commit and
 * tirx_wgmma_wait.
 */
#include "../../layout/layout_internal.h"
#include "../lower.h"
#include "gemm_common.h"

static void check(tirx__rule_ctx *ctx) {
  const tirx__call *c = ctx->call;
  int64_t m, n, k;
  if (!tirx__gemm_shape(ctx, &m, &n, &k)) return;
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
  if (ctx->nreasons) return;
  /* The accumulator: every 64-row slab is the m64nN fragment at some register offset. */
  const tirx_layout *d = c->operands[0].layout;
  const tirx_layout *frag = tirx_layout_wgmma_acc(ctx->arena, 64, (int)n);
  for (int64_t s = 0; s < m / 64 && frag; s++) {
    const tirx_layout *slab = tirx_layout_slice(ctx->arena, d, 2, (int64_t[]){m, n},
                                                (int64_t[]){64 * s, 0}, (int64_t[]){64, n});
    tirx_axis_offset o = {TIRX_AXIS_REG, slab ? tirx_layout_offset(slab, TIRX_AXIS_REG) : 0};
    const tirx_layout *want = slab ? tirx__layout_make(ctx->arena, "tirx_dispatch", frag->nd,
                                                       frag->d, 0, NULL, 1, &o, frag->rank,
                                                       frag->dim_begin, 0, 0)
                                   : NULL;
    if (!want || !tirx_layout_equal(slab, want)) {
      tirx__reason(ctx,
                   "d rows %lld..%lld are not the wgmma m64n%lld accumulator fragment "
                   "(tirx_layout_wgmma_acc) of a warpgroup",
                   (long long)(64 * s), (long long)(64 * s + 63), (long long)n);
      return;
    }
  }
  tirx__wgmma_operand op;
  const char *why = NULL;
  if (!tirx__wgmma_operand_of(ctx->arena, &c->operands[1], 1, &op, &why))
    tirx__reason(ctx, "a: %s", why);
  if (!tirx__wgmma_operand_of(ctx->arena, &c->operands[2], 0, &op, &why))
    tirx__reason(ctx, "b: %s", why);
  ctx->scratch[0] = n;
}

static int shapes(tirx__rule_ctx *ctx, tirx__shape *out, int cap) {
  int c = 0;
  int64_t n = ctx->scratch[0];
  for (int64_t v = n; v >= 8 && v % 8 == 0 && n % v == 0 && c < cap; v /= 2)
    out[c++] = (tirx__shape){{64, v, 16}};
  return c;
}

const tirx__rule tirx__rule_gemm_async_wgmma = {
    .name = "gemm_async.wgmma",
    .family = "wgmma",
    .summary = "wgmma.mma_async.sync.aligned.m64nNk16.f32.{bf16,f16}, both operands in shared",
    .kind = TIRX__RULE_DEFAULT,
    .prims = TIRX__BIT(TIRX__PRIM_GEMM_ASYNC),
    .flows = TIRX__FLOW(TIRX__ROLE_SHARED, TIRX__ROLE_LOCAL),
    .teams = TIRX__BIT(TIRX_TEAM_WARPGROUP),
    .min_arch = 90,
    .needs = {.dtypes = TIRX__DT(F32) | TIRX__DTYPES_16BIT, .rank = 2, .full_team = true,
              .sm90a = true},
    .shape_dims = {"m", "n", "k"},
    .check = check,
    .shapes = shapes,
    .emit = tirx__emit_wgmma, /* lower_gemm.c */
};
