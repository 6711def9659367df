/* What the reduce rules share: the placement of the reduced iters (families.h). */
#include "../../layout/layout_internal.h"
#include "families.h"

int64_t tirx__reduce_check_axes(tirx__rule_ctx *ctx, uint64_t allowed, const char *why) {
  tirx__reduced_iter it[TIRX_LAYOUT_MAX_ITERS];
  int n = tirx__reduced_iters(ctx, it, TIRX_LAYOUT_MAX_ITERS);
  int64_t threads = 1;
  uint64_t reduced_axes = 0;
  for (int i = 0; i < n; i++) {
    tirx_axis ax = it[i].iter.axis;
    if (it[i].iter.stride == 0 || (TIRX__AXES_MEMORY >> ax & 1)) continue;
    reduced_axes |= TIRX__AXIS_BIT(ax);
    if (allowed >> ax & 1) {
      threads *= it[i].iter.extent;
      continue;
    }
    char buf[96];
    tirx__reason(ctx, "reduced dim %d iter %s is on %s: %s", it[i].dim,
                 tirx__iter_text(buf, sizeof buf, &it[i].iter), tirx_axis_name(ax), why);
  }
  tirx__prim_op op = ctx->call->config.op;
  if (op == TIRX__PRIM_OP_SUM || op == TIRX__PRIM_OP_SUMSQ || op == TIRX__PRIM_OP_PROD) {
    const tirx_layout *src = ctx->call->operands[1].layout;
    for (int i = 0; i < src->nr; i++)
      if (src->r[i].extent > 1 && src->r[i].stride != 0 && (reduced_axes >> src->r[i].axis & 1)) {
        tirx__reason(ctx,
                     "src is replicated on %s, an axis it reduces over: %s would count "
                     "each element %lld times",
                     tirx_axis_name(src->r[i].axis), tirx__prim_op_name(op),
                     (long long)src->r[i].extent);
        break;
      }
  }
  return threads;
}
