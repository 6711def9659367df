/*
 * gemm.scalar: FMA loops, the fallback of gemm at any scope. Each thread computes the elements
 * of d it holds (d local, any register layout the elementwise lowering walks), or the team
 * shares the elements of d round-robin (d in shared or global memory); a and b are read from
 * memory. Sums run in f32 (f64 when an operand is f64). Shape: (vec=1). Lowering: lower.c
 * (tirx__lower_gemm_scalar).
 */
#include "../lower.h"
#include "gemm_common.h"

#define FLOATS (TIRX__DT(F32) | TIRX__DT(F64) | TIRX__DTYPES_16BIT)

static void check(tirx__rule_ctx *ctx) {
  int64_t m, n, k;
  tirx__gemm_shape(ctx, &m, &n, &k);
}

const tirx__rule tirx__rule_gemm_scalar = {
    .name = "gemm.scalar",
    .family = "scalar",
    .summary = "per-element FMA loops over K",
    .kind = TIRX__RULE_FALLBACK,
    .prims = TIRX__BIT(TIRX__PRIM_GEMM),
    .flows = TIRX__FLOW(TIRX__ROLE_SHARED, TIRX__ROLE_LOCAL) |
             TIRX__FLOW(TIRX__ROLE_GLOBAL, TIRX__ROLE_LOCAL) |
             TIRX__FLOW(TIRX__ROLE_SHARED, TIRX__ROLE_SHARED) |
             TIRX__FLOW(TIRX__ROLE_GLOBAL, TIRX__ROLE_SHARED) |
             TIRX__FLOW(TIRX__ROLE_SHARED, TIRX__ROLE_GLOBAL) |
             TIRX__FLOW(TIRX__ROLE_GLOBAL, TIRX__ROLE_GLOBAL),
    .teams = TIRX__TEAMS_ALL,
    .needs = {.dtypes = FLOATS, .rank = 2},
    .shape_dims = {"vec"},
    .check = check,
    .emit = tirx__emit_gemm_scalar, /* lower.c */
};
