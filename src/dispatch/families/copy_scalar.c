/*
 * copy.scalar: one element per load and store; legal for every layout. The last fallback of
 * copy. Shape: (vec=1).
 */
#include "../lower.h"
#include "families.h"

const tirx__rule tirx__rule_copy_scalar = {
    .name = "copy.scalar",
    .family = "scalar",
    .summary = "scalar ld/st, one element at a time",
    .kind = TIRX__RULE_FALLBACK,
    .prims = TIRX__BIT(TIRX__PRIM_COPY),
    .flows = TIRX__FLOWS_MEMORY,
    .teams = TIRX__TEAMS_ALL,
    .needs = {.dtypes = TIRX__DTYPES_ALL, .hints = true},
    .shape_dims = {"vec"},
    .emit = tirx__emit_elementwise, /* elementwise.c */
};
