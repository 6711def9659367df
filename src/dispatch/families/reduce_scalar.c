/*
 * reduce.scalar: each thread loops over the reduced elements of the destination elements it
 * holds. Legal when a thread can read every element it reduces: a source in global or shared
 * memory, or a register source whose reduced iters all lie in the thread's own registers. The
 * last fallback of reduce. Shape: (vec=1).
 */
#include "../lower.h"
#include "families.h"

static void check(tirx__rule_ctx *ctx) {
  if (ctx->call->operands[1].role == TIRX__ROLE_LOCAL)
    tirx__reduce_check_axes(ctx, 0, "a scalar loop reads only the thread's own registers");
}

static tirx_status emit(const tirx__rule *rule, const tirx__call *call,
                                     const tirx__shape *shape, void *emitter) {
  (void)rule;
  (void)call;
  (void)shape;
  return tirx__lower_reduce(emitter, 0);
}

const tirx__rule tirx__rule_reduce_scalar = {
    .name = "reduce.scalar",
    .family = "scalar",
    .summary = "a per-thread loop over the reduced elements",
    .kind = TIRX__RULE_FALLBACK,
    .prims = TIRX__BIT(TIRX__PRIM_REDUCE),
    .flows = TIRX__FLOWS_MEMORY,
    .teams = TIRX__TEAMS_ALL,
    .needs = {.dtypes = TIRX__DTYPES_NUMERIC, .ops = TIRX__OPS_REDUCE},
    .shape_dims = {"vec"},
    .check = check,
    .emit = emit,
};
