/*
 * reduce.dsmem: a cluster reduces register tiles: a CTA reduction (as reduce.smem), then the
 * CTAs' partials pushed into every peer through distributed shared memory (mapa +
 * st.shared::cluster), a cluster barrier (barrier.cluster.arrive.release/wait.acquire) and a
 * fold in rank order, sm_90 (lowering: tirx__lower_reduce_dsmem below, tirx__reduce_smem in reduce_smem.c). The cluster
 * must be one-dimensional (x CTAs) and the reduced cbx iters must cover it; f32 accumulators.
 *
 * The instruction, as data: team cluster, arch >= 90; source and destination in registers;
 * any numeric dtype; every reduced iter on reg/m or on a thread axis inside the cluster
 * (laneid, warpid, wid_in_wg, wgid, tid_in_wg, tid, cbx, cby, cbz).
 * Shape: (ctas) whose partials are combined.
 */
#include "../lower.h"
#include "families.h"

#define AXES_CLUSTER                                                                               \
  (TIRX__AXIS_BIT(TIRX_AXIS_LANEID) | TIRX__AXIS_BIT(TIRX_AXIS_WARPID) |                           \
   TIRX__AXIS_BIT(TIRX_AXIS_WID_IN_WG) | TIRX__AXIS_BIT(TIRX_AXIS_WGID) |                          \
   TIRX__AXIS_BIT(TIRX_AXIS_TID_IN_WG) | TIRX__AXIS_BIT(TIRX_AXIS_TID) | AXES_CB)
#define AXES_CB                                                                                    \
  (TIRX__AXIS_BIT(TIRX_AXIS_CBX) | TIRX__AXIS_BIT(TIRX_AXIS_CBY) | TIRX__AXIS_BIT(TIRX_AXIS_CBZ))

/* The product of the reduced iters' extents on cbx, cby and cbz. */
static int64_t ctas(tirx__rule_ctx *ctx) {
  tirx__reduced_iter it[TIRX_LAYOUT_MAX_ITERS];
  int n = tirx__reduced_iters(ctx, it, TIRX_LAYOUT_MAX_ITERS);
  int64_t c = 1;
  for (int i = 0; i < n; i++)
    if (it[i].iter.stride != 0 && (AXES_CB >> it[i].iter.axis & 1)) c *= it[i].iter.extent;
  return c;
}

static void check(tirx__rule_ctx *ctx) {
  tirx__reduce_check_axes(ctx, AXES_CLUSTER,
                          "a cluster reduction combines threads of one cluster only");
  ctx->scratch[0] = ctas(ctx);
}

static int shapes(tirx__rule_ctx *ctx, tirx__shape *out, int cap) {
  (void)cap;
  out[0] = (tirx__shape){{ctx->scratch[0]}};
  return 1;
}

/*
 * reduce.dsmem: as reduce.smem within each CTA (reduced iters on cbx are left to the last
 * step), then thread 0 of every CTA stores its CTA's partial into its own slot
 * [kept][rank] of a shared scratch in every CTA of the cluster (mapa + st.shared::cluster);
 * a cluster barrier (arrive.release, wait.acquire) publishes them; every thread folds the
 * slots in rank order, so all CTAs get the same bits. Inside a for loop, a second cluster
 * barrier keeps a peer from writing the slots of the next iteration before every CTA has read
 * this one's; a call outside loops ends at the fold.
 * The reduced cbx iters must cover the whole cluster (one dimension of x CTAs).
 */
tirx_status tirx__lower_reduce_dsmem(tirx__lower *lw) { return tirx__reduce_smem(lw, true); }

static tirx_status emit(const tirx__rule *rule, const tirx__call *call,
                                    const tirx__shape *shape, void *emitter) {
  (void)rule;
  (void)call;
  (void)shape;
  return tirx__lower_reduce_dsmem(emitter);
}

const tirx__rule tirx__rule_reduce_dsmem = {
    .name = "reduce.dsmem",
    .family = "dsmem",
    .summary = "CTA reduction, then partials through distributed shared memory",
    .kind = TIRX__RULE_DEFAULT,
    .prims = TIRX__BIT(TIRX__PRIM_REDUCE),
    .flows = TIRX__FLOW(TIRX__ROLE_LOCAL, TIRX__ROLE_LOCAL),
    .teams = TIRX__BIT(TIRX_TEAM_CLUSTER),
    .needs = {.dtypes = TIRX__DTYPES_NUMERIC, .ops = TIRX__OPS_REDUCE,
              .features = TIRX__FEAT(CLUSTER)},
    .shape_dims = {"ctas"},
    .check = check,
    .shapes = shapes,
    .emit = emit,
};
