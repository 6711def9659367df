/*
 * copy.stmatrix: one warp (or warpgroup) moves 8x8 matrices of 16-bit elements from registers
 * into shared memory (stmatrix.sync.aligned.m8n8.x{1,2,4}.shared.b16, sm_90): the epilogue of
 * the wgmma accumulator cast to 16 bits. The instruction's data is ldmatrix's with the
 * directions swapped, so its checks, shapes and lowering are copy_ldmatrix.c's
 * (tirx__matrix_check, tirx__matrix_shapes, tirx__matrix_emit with store true).
 */
#include "../lower.h"
#include "families.h"

static void check_stmatrix(tirx__rule_ctx *ctx) { tirx__matrix_check(ctx, true); }

static tirx_status emit_stmatrix(const tirx__rule *rule, const tirx__call *call,
                                const tirx__shape *shape, void *emitter) {
  (void)rule;
  return tirx__matrix_emit(call, shape, emitter, true);
}

const tirx__rule tirx__rule_copy_stmatrix = {
    .name = "copy.stmatrix",
    .family = "stmatrix",
    .summary = "stmatrix.sync.aligned.m8n8.x{1,2,4}.shared.b16",
    .kind = TIRX__RULE_DEFAULT,
    .prims = TIRX__BIT(TIRX__PRIM_COPY),
    .flows = TIRX__FLOW(TIRX__ROLE_LOCAL, TIRX__ROLE_SHARED),
    .teams = TIRX__BIT(TIRX_TEAM_WARP) | TIRX__BIT(TIRX_TEAM_WARPGROUP),
    .needs = {.dtypes = TIRX__DTYPES_16BIT, .rank = 2, .full_team = true,
              .features = TIRX__FEAT(STMATRIX)},
    .shape_dims = {"num"},
    .check = check_stmatrix,
    .shapes = tirx__matrix_shapes,
    .emit = emit_stmatrix,
};
