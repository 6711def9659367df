/*
 * copy.vec: vector loads and stores of up to 16 bytes (ld.global.v4.b32, ld.shared.v4,
 * st.global.cs.v2, a float4 move between registers), with the cache hints .cs, .lu and .nc on
 * global accesses. The vector covers `vec` consecutive logical elements that are contiguous
 * and vec-aligned in both operands (for registers: consecutive registers of one thread).
 * Registered as the fallback of ldmatrix/stmatrix and the first choice elsewhere (paper
 * table 2: copy falls back to vector/scalar load/store).
 *
 * Shape: (vec), a power of two from the largest legal width down to 2.
 */
#include "../lower.h"
#include "families.h"

static void check(tirx__rule_ctx *ctx) { ctx->scratch[0] = tirx__common_vector_width(ctx, 16, 2); }

static int shapes(tirx__rule_ctx *ctx, tirx__shape *out, int cap) {
  int n = 0;
  for (int64_t v = ctx->scratch[0]; v >= 2 && n < cap; v /= 2) out[n++] = (tirx__shape){{v}};
  return n;
}

const tirx__rule tirx__rule_copy_vec = {
    .name = "copy.vec",
    .family = "vec",
    .summary = "vector ld/st of up to 16 bytes, with cache hints on global accesses",
    .kind = TIRX__RULE_FALLBACK,
    .prims = TIRX__BIT(TIRX__PRIM_COPY),
    .flows = TIRX__FLOWS_MEMORY,
    .teams = TIRX__TEAMS_ALL,
    .needs = {.dtypes = TIRX__DTYPES_ALL, .hints = true},
    .shape_dims = {"vec"},
    .check = check,
    .shapes = shapes,
    .emit = tirx__emit_elementwise, /* elementwise.c */
};
