/*
 * reduce.shuffle: a warp reduces register tiles with an in-thread loop over the reduced
 * registers and then a butterfly of shfl.sync.bfly over the reduced lane bits, which leaves
 * the result in every lane of each group.
 *
 * The instruction, as data: team warp or warpgroup, complete (32 lanes: the shuffles use the
 * full mask); source and destination in registers; dtype f32, f64, i32, u32 or i64 (what shfl
 * moves); every reduced iter of the source on reg/m or on lane bits (laneid; in a warpgroup,
 * tid_in_wg bits 0..4, so that each warp reduces its own rows: the wgmma accumulator's rows),
 * those iters with power-of-two extents and strides on disjoint lane bits; every element of
 * the destination held only by lanes that take part in the reduction of its row (same thread
 * outside the reduced bits).
 * Shape: (lanes) combined by the butterfly, 1 to 32.
 */
#include <stdlib.h>

#include "../../layout/layout_internal.h"
#include "../lower.h"
#include "families.h"

/* The lane bits the butterfly flips, or -1 after recording why there is no butterfly. */
static int64_t lane_mask(tirx__rule_ctx *ctx) {
  return tirx__reduce_lane_mask(ctx, "is not a butterfly over lane bits");
}

/* Whether lane-and-thread coordinates p (a dst point) receive the reduction computed from q. */
static bool receives(const tirx_coord *p, const tirx_coord *q, int64_t mask) {
  for (int ax = 0; ax < TIRX_AXIS_MAX; ax++) {
    if (!tirx_axis_is_thread(ax)) continue;
    bool lanes = ax == TIRX_AXIS_LANEID || ax == TIRX_AXIS_TID_IN_WG;
    if (lanes ? ((p->v[ax] ^ q->v[ax]) & ~mask) != 0 : p->v[ax] != q->v[ax])
      return false;
  }
  return true;
}

/* dst's placement p of element x receives its reduction: some q (the group's first element)
 * differs from it only in the reduced lane bits (mask). */
static bool dst_receives(tirx__rule_ctx *ctx, int64_t x, const tirx_coord *p,
                         const tirx_coord *q, int64_t nq, int64_t mask) {
  for (int64_t j = 0; j < nq; j++)
    if (receives(p, &q[j], mask)) return true;
  tirx__reason(ctx,
               "dst element %lld is on lane %lld, which does not take part in its "
               "reduction (lane %lld, reduced lane bits 0x%llx)",
               (long long)x, (long long)p->v[TIRX_AXIS_LANEID],
               (long long)q[0].v[TIRX_AXIS_LANEID], (unsigned long long)mask);
  return false;
}

static void check(tirx__rule_ctx *ctx) {
  bool wg = tirx_scope_team_kind(ctx->call->scope) == TIRX_TEAM_WARPGROUP;
  int64_t threads = tirx__reduce_check_axes(
      ctx, TIRX__AXIS_BIT(TIRX_AXIS_LANEID) | (wg ? TIRX__AXIS_BIT(TIRX_AXIS_TID_IN_WG) : 0),
      wg ? "a warpgroup's shuffle reduces over lane bits (laneid, tid_in_wg bits 0..4) and "
           "registers only"
         : "a warp shuffle reduces over laneid and registers only");
  if (ctx->nreasons) return;
  if (wg) { /* every reduced tid_in_wg iter inside one warp */
    tirx__reduced_iter it[TIRX_LAYOUT_MAX_ITERS];
    int n = tirx__reduced_iters(ctx, it, TIRX_LAYOUT_MAX_ITERS);
    for (int i = 0; i < n; i++) {
      if (it[i].iter.axis != TIRX_AXIS_TID_IN_WG || it[i].iter.stride == 0 ||
          tirx__reduce_is_lane_iter(ctx->call, &it[i].iter))
        continue;
      char buf[96];
      tirx__reason(ctx, "reduced dim %d iter %s crosses warps: a shuffle reduces inside a warp",
                   it[i].dim, tirx__iter_text(buf, sizeof buf, &it[i].iter));
      return;
    }
  }
  int64_t mask = lane_mask(ctx);
  if (mask < 0) return;
  tirx__reduce_check_dst(ctx, dst_receives, mask);
  ctx->scratch[0] = threads;
}

static int shapes(tirx__rule_ctx *ctx, tirx__shape *out, int cap) {
  (void)cap;
  out[0] = (tirx__shape){{ctx->scratch[0]}};
  return 1;
}

static tirx_status emit(const tirx__rule *rule, const tirx__call *call,
                                      const tirx__shape *shape, void *emitter) {
  (void)rule;
  (void)shape;
  /* The lane bits the butterfly flips: those of the reduced laneid iters (reduce_shuffle.c). */
  const tirx_layout *src = tirx_layout_canonicalize(((tirx__lower *)emitter)->arena,
                                                    call->operands[1].layout);
  if (!src) return tirx_last_status();
  int64_t mask = 0;
  for (int k = 0; k < src->rank; k++) {
    if (!(call->config.reduce_axes >> k & 1)) continue;
    for (int i = src->dim_begin[k]; i < src->dim_begin[k + 1]; i++)
      if (tirx__reduce_is_lane_iter(call, &src->d[i]))
        mask |= (src->d[i].extent - 1) * src->d[i].stride;
  }
  return tirx__lower_reduce(emitter, mask);
}

const tirx__rule tirx__rule_reduce_shuffle = {
    .name = "reduce.shuffle",
    .family = "shuffle",
    .summary = "in-thread loop, then a shfl.sync.bfly butterfly over the reduced lane bits",
    .kind = TIRX__RULE_FALLBACK, /* of a warp reduction's specialised rule, before reduce.scalar */
    .prims = TIRX__BIT(TIRX__PRIM_REDUCE),
    .flows = TIRX__FLOW(TIRX__ROLE_LOCAL, TIRX__ROLE_LOCAL),
    .teams = TIRX__BIT(TIRX_TEAM_WARP) | TIRX__BIT(TIRX_TEAM_WARPGROUP),
    .needs = {.dtypes =
                  TIRX__DT(F32) | TIRX__DT(F64) | TIRX__DT(I32) | TIRX__DT(U32) | TIRX__DT(I64),
              .full_team = true,
              .ops = TIRX__OPS_REDUCE},
    .shape_dims = {"lanes"},
    .check = check,
    .shapes = shapes,
    .emit = emit,
};
