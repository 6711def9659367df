/*
 * pointwise.scalar: unary, binary and ternary maps, cast, fill and select one element at a
 * time; legal for every layout. The fallback of pointwise.vec. Shape: (vec=1, pack=1).
 */
#include "../lower.h"
#include "families.h"

static int shapes(tirx__rule_ctx *ctx, tirx__shape *out, int cap) {
  (void)ctx;
  (void)cap;
  out[0] = (tirx__shape){{1, 1}};
  return 1;
}

const tirx__rule tirx__rule_pointwise_scalar = {
    .name = "pointwise.scalar",
    .family = "scalar",
    .summary = "per-element arithmetic with scalar loads and stores",
    .kind = TIRX__RULE_FALLBACK,
    .prims = TIRX__PRIMS_POINTWISE,
    .flows = TIRX__FLOWS_MEMORY | TIRX__FLOWS_SCALAR,
    .teams = TIRX__TEAMS_ALL,
    .needs = {.dtypes = TIRX__DTYPES_ALL, .hints = true},
    .shape_dims = {"vec", "pack"},
    .shapes = shapes,
    .emit = tirx__emit_elementwise, /* elementwise.c */
};
