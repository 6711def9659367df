/*
 * gemm.scalar: FMA loops, the fallback of gemm at any scope. Each thread computes the elements
 * of d it holds (d local, any register layout the elementwise lowering walks), or the team
 * shares the elements of d round-robin (d in shared or global memory); a and b are read from
 * memory. Sums run in f32 (f64 when an operand is f64). Shape: (vec=1). Lowering: below
 * (tirx__lower_gemm_scalar).
 */
#include "../lower.h"
#include "gemm_common.h"

#define FLOATS (TIRX__DT(F32) | TIRX__DT(F64) | TIRX__DTYPES_16BIT)

static void check(tirx__rule_ctx *ctx) {
  int64_t m, n, k;
  tirx__gemm_shape(ctx, &m, &n, &k);
}

/* ---- gemm.scalar ---- */

/* d[idx] = [d[idx] +] sum_k a[i, k] * b[k, j], summed in f32 (f64 when an operand is). */
static void gemm_dot(tirx__lower *lw, tirx_expr *const *idx) {
  tirx_builder *b = lw->b;
  tirx__emit *e = lw->e;
  const tirx__prim_stmt *p = lw->p;
  const tirx_region *d = p->ops[0], *a = p->ops[1], *bm = p->ops[2];
  int at = TIRX_F32;
  for (int i = 0; i < 3; i++)
    if (p->ops[i]->tensor->dtype == TIRX_F64) at = TIRX_F64;
  tirx_expr *old = tirx__lower_as_type(b, tirx__lower_load(lw, d, idx, 0), at);
  tirx_expr *init = p->scale_d ? tirx_select(b, p->scale_d, old, tirx__lower_fconst(b, 0.0, at)) : old;
  tirx_expr *acc = tirx__emit_var(e, "acc", (tirx_dtype)at, init);
  tirx_expr *kk = tirx__emit_for_begin(e, "kk", tirx_int(b, 0), tirx_int(b, a->extent[1]), NULL,
                                 TIRX_LOOP_SERIAL);
  if (!acc || !kk) return;
  tirx_expr *ai[2] = {idx[0], kk}, *bi[2] = {kk, idx[1]};
  tirx__emit_assign(e, acc, tirx_add(b, acc, tirx_mul(b, tirx__lower_as_type(b, tirx__lower_load(lw, a, ai, 0), at),
                                                tirx__lower_as_type(b, tirx__lower_load(lw, bm, bi, 0), at))));
  tirx__emit_for_end(e);
  tirx__lower_store(lw, d, idx, 0, tirx__lower_as_type(b, acc, d->tensor->dtype));
}

/*
 * Each element of d once: d local, every thread walks the elements it holds (the plan of the
 * elementwise lowering); d in memory, the team shares them round-robin.
 */
static tirx_status emit(const tirx__rule *rule, const tirx__call *call,
                                   const tirx__shape *shape, void *emitter) {
  (void)rule;
  (void)shape;
  tirx__lower *lw = emitter;
  tirx_builder *b = lw->b;
  tirx__emit *e = lw->e;
  const int64_t *ext = lw->p->ops[0]->extent;
  tirx_expr *idx[TIRX_BUILDER_MAX_RANK] = {NULL};
  if (call->operands[0].role != TIRX__ROLE_LOCAL) {
    tirx_expr *r;
    int64_t size;
    if (!tirx__lower_team_share(lw, &r, &size)) return b->status;
    tirx_expr *f = tirx__emit_for_begin(e, "e", r, tirx_int(b, ext[0] * ext[1]), tirx_int(b, size),
                                  TIRX_LOOP_SERIAL);
    if (!f) return b->status;
    idx[0] = tirx_div(b, f, tirx_int(b, ext[1]));
    idx[1] = tirx_mod(b, f, tirx_int(b, ext[1]));
    gemm_dot(lw, idx);
    tirx__emit_for_end(e);
    return b->status;
  }
  const tirx_layout *dl = call->operands[0].layout;
  tirx__plan pl;
  tirx__lower_plan(dl, &pl);
  tirx_expr *guard;
  if (tirx__lower_thread_digits(lw, &pl, true, &guard) != TIRX_OK) return b->status;
  if (guard) tirx__emit_if_begin(e, guard);
  int opened = tirx__lower_walk(e, dl, &pl, ~0u, idx);
  if (b->status != TIRX_OK) return b->status;
  gemm_dot(lw, idx);
  for (int i = 0; i < opened; i++) tirx__emit_for_end(e);
  if (guard) tirx__emit_if_end(e);
  return b->status;
}

/* ---- end gemm.scalar ---- */

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
    .emit = emit,
};
