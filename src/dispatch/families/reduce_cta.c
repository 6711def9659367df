/*
 * reduce.smem: a warpgroup or a CTA reduces register tiles: an in-thread loop, a warp
 * butterfly, then one partial per warp through a shared-memory scratch and a named barrier,
 * the result broadcast back to every thread of the team.
 *
 * The instruction, as data: team warpgroup or CTA; source and destination in registers; any
 * numeric dtype; every reduced iter on reg/m or on a thread axis inside the team (warpgroup:
 * laneid, wid_in_wg, tid_in_wg; CTA: those and warpid, wgid, tid). The destination may be
 * held by any thread (the result is read back from shared memory).
 * Shape: (threads) combined.
 */
#include "../lower.h"
#include "families.h"

#define AXES_WARPGROUP                                                                             \
  (TIRX__AXIS_BIT(TIRX_AXIS_LANEID) | TIRX__AXIS_BIT(TIRX_AXIS_WID_IN_WG) |                        \
   TIRX__AXIS_BIT(TIRX_AXIS_TID_IN_WG))
#define AXES_CTA                                                                                   \
  (AXES_WARPGROUP | TIRX__AXIS_BIT(TIRX_AXIS_WARPID) | TIRX__AXIS_BIT(TIRX_AXIS_WGID) |            \
   TIRX__AXIS_BIT(TIRX_AXIS_TID))

static void check(tirx__rule_ctx *ctx) {
  bool wg = tirx_scope_team_kind(ctx->call->scope) == TIRX_TEAM_WARPGROUP;
  ctx->scratch[0] = tirx__reduce_check_axes(
      ctx, wg ? AXES_WARPGROUP : AXES_CTA,
      wg ? "a warpgroup reduction combines threads of one warpgroup only"
         : "a CTA reduction through shared memory combines threads of one CTA only");
}

static int shapes(tirx__rule_ctx *ctx, tirx__shape *out, int cap) {
  (void)cap;
  out[0] = (tirx__shape){{ctx->scratch[0]}};
  return 1;
}

const tirx__rule tirx__rule_reduce_smem = {
    .name = "reduce.smem",
    .family = "smem",
    .summary = "warp butterflies, then per-warp partials through shared memory",
    .kind = TIRX__RULE_DEFAULT,
    .prims = TIRX__BIT(TIRX__PRIM_REDUCE),
    .flows = TIRX__FLOW(TIRX__ROLE_LOCAL, TIRX__ROLE_LOCAL),
    .teams = TIRX__BIT(TIRX_TEAM_WARPGROUP) | TIRX__BIT(TIRX_TEAM_CTA),
    .needs = {.dtypes = TIRX__DTYPES_NUMERIC, .ops = TIRX__OPS_REDUCE},
    .shape_dims = {"threads"},
    .check = check,
    .shapes = shapes,
    .emit = tirx__emit_reduce_smem, /* lower.c */
};
