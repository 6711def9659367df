/* What the reduce rules share: the placement of the reduced iters (families.h). */
#include <stdlib.h>
#include "../../layout/layout_internal.h"
#include "../lower.h"
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

/* ---- lowering shared by the reduce rules (lower.h) ---- */

/* ---- reduce ---- */

tirx_expr *tirx__reduce_identity(tirx_builder *b, int op, int dt) {
  bool fl = tirx__dtype_is_float(dt);
  switch (op) {
  case TIRX__PRIM_OP_PROD: return fl ? tirx__lower_fconst(b, 1.0, dt) : tirx_int_typed(b, 1, (tirx_dtype)dt);
  case TIRX__PRIM_OP_MAX:
    if (fl) return tirx__lower_fconst(b, -__builtin_inf(), dt);
    return tirx_int_typed(b, dt == TIRX_I64 ? INT64_MIN : dt == TIRX_U32 ? 0 : INT32_MIN,
                          (tirx_dtype)dt);
  case TIRX__PRIM_OP_MIN:
    if (fl) return tirx__lower_fconst(b, __builtin_inf(), dt);
    return tirx_int_typed(b, dt == TIRX_I64 ? INT64_MAX : dt == TIRX_U32 ? UINT32_MAX : INT32_MAX,
                          (tirx_dtype)dt);
  default: return fl ? tirx__lower_fconst(b, 0.0, dt) : tirx_int_typed(b, 0, (tirx_dtype)dt);
  }
}

tirx_expr *tirx__reduce_combine(tirx_builder *b, int op, tirx_expr *x, tirx_expr *y) {
  switch (op) {
  case TIRX__PRIM_OP_PROD: return tirx_mul(b, x, y);
  case TIRX__PRIM_OP_MAX: return tirx_max(b, x, y);
  case TIRX__PRIM_OP_MIN: return tirx_min(b, x, y);
  default: return tirx_add(b, x, y);
  }
}

tirx_status tirx__lower_reduce(tirx__lower *lw, int64_t lane_mask) {
  return tirx__lower_reduce_with(lw, lane_mask, NULL);
}

tirx_status tirx__lower_reduce_with(tirx__lower *lw, int64_t lane_mask,
                                    tirx__reduce_lanes_fn lanes) {
  tirx_builder *b = lw->b;
  tirx__emit *e = lw->e;
  const tirx__prim_stmt *p = lw->p;
  const tirx__call *c = lw->call;
  const tirx_region *dst = p->ops[0], *src = p->ops[1];
  if (c->operands[1].role != TIRX__ROLE_LOCAL || c->operands[0].role != TIRX__ROLE_LOCAL)
    return tirx__lower_fail(lw, "reductions between memory operands are not lowered yet (registers only)");
  int op = p->op, srank = src->tensor->rank;
  /* 8-bit integers accumulate in i32, as reduce.smem's do (in their own dtype, every 8-bit
   * reduction failed the build: the combine is i32 by promotion, and the max/min identity,
   * INT32_MIN or INT32_MAX, is out of an 8-bit range); the store converts back. */
  int dt = dst->tensor->dtype;
  int at = tirx__dtype_is_float(dt) && (dt == TIRX_F64 || src->tensor->dtype == TIRX_F64)
               ? TIRX_F64
           : tirx__dtype_is_float(dt)             ? TIRX_F32
           : tirx_dtype_size((tirx_dtype)dt) < 4 ? TIRX_I32
                                                  : dt;
  const tirx_layout *sl = c->operands[1].layout;
  tirx__plan pl;
  tirx__lower_plan(sl, &pl);
  tirx_expr *guard;
  if (tirx__lower_thread_digits(lw, &pl, false, &guard) != TIRX_OK) return b->status;
  tirx_expr *idx[TIRX_BUILDER_MAX_RANK] = {NULL};
  /* Kept dims: digits and outer loops; then the accumulator; then the reduced dims. */
  int opened = 0;
  for (int pass = 0; pass < 2; pass++) {
    if (pass == 1) {
      tirx_expr *acc = tirx__emit_var(e, "acc", (tirx_dtype)at, tirx__reduce_identity(b, op, at));
      if (!acc) return b->status;
      int inner = tirx__lower_walk(e, sl, &pl, p->axes, idx);
      tirx_expr *v = tirx__lower_as_type(b, tirx__lower_load(lw, src, idx, 0), at);
      if (op == TIRX__PRIM_OP_SUMSQ) v = tirx_mul(b, v, v);
      tirx__emit_assign(e, acc, tirx__reduce_combine(b, op, acc, v));
      for (int i = 0; i < inner; i++) tirx__emit_for_end(e);
      if (lanes && lane_mask)
        lanes(e, acc, op, at, lane_mask);
      else
        for (int bit = 1; bit < 32; bit <<= 1)
          if (lane_mask & bit)
            tirx__emit_assign(e, acc, tirx__reduce_combine(b, op, acc, tirx_shfl_xor(b, acc, tirx_int(b, bit))));
      /* The result at the kept index of dst (reduced dims at 0, or dropped). */
      tirx_expr *di[TIRX_BUILDER_MAX_RANK] = {NULL};
      int drank = dst->tensor->rank;
      for (int k = 0, j = 0; k < srank; k++) {
        bool red = p->axes >> k & 1;
        if (drank == srank)
          di[k] = red ? NULL : idx[k];
        else if (!red)
          di[j++] = idx[k];
      }
      tirx_expr *res = acc;
      if (p->accumulate) res = tirx__reduce_combine(b, op, tirx__lower_as_type(b, tirx__lower_load(lw, dst, di, 0), at), acc);
      tirx__lower_store(lw, dst, di, 0, tirx__lower_as_type(b, res, dst->tensor->dtype));
      break;
    }
    opened += tirx__lower_walk(e, sl, &pl, ~p->axes, idx);
  }
  for (int i = 0; i < opened; i++) tirx__emit_for_end(e);
  return b->status;
}

/* Calls accept for every placement p of every dst element x with the placements q (nq of them)
 * of the first source element of x's group (the source sliced at 0 on the reduced dims), until
 * one is refused (accept records the reason). Layouts too large to enumerate are not checked. */
void tirx__reduce_check_dst(tirx__rule_ctx *ctx, tirx__reduce_dst_fn accept, int64_t arg) {
  enum { MAX_CHECKED = 1 << 16 };
  const tirx_layout *src = ctx->call->operands[1].layout, *dst = ctx->call->operands[0].layout;
  int rank = tirx_layout_rank(src);
  int64_t shape[TIRX_LAYOUT_MAX_RANK], begin[TIRX_LAYOUT_MAX_RANK] = {0}, ext[TIRX_LAYOUT_MAX_RANK];
  tirx_layout_shape(src, shape, TIRX_LAYOUT_MAX_RANK);
  for (int k = 0; k < rank; k++) ext[k] = ctx->call->config.reduce_axes >> k & 1 ? 1 : shape[k];
  const tirx_layout *first = tirx_layout_slice(ctx->arena, src, rank, shape, begin, ext);
  int64_t size = tirx_layout_size(dst), np = tirx_layout_replica_count(dst),
          nq = first ? tirx_layout_replica_count(first) : 0;
  if (!first || size > MAX_CHECKED || np * size > MAX_CHECKED || nq * size > MAX_CHECKED) return;
  tirx_coord *p = malloc((size_t)np * sizeof *p), *q = malloc((size_t)nq * sizeof *q);
  bool go = true;
  for (int64_t x = 0; p && q && go && x < size; x++) {
    int64_t cp = 0, cq = 0;
    if (tirx_layout_eval(dst, x, p, np, &cp) != TIRX_OK ||
        tirx_layout_eval(first, x, q, nq, &cq) != TIRX_OK)
      break;
    for (int64_t i = 0; i < cp && go; i++) go = accept(ctx, x, &p[i], q, cq, arg);
  }
  free(p);
  free(q);
}

/* The lane bits a warp reduction covers (each reduced laneid iter a distinct power-of-two run
 * of lane bits), or -1 after recording "reduced dim D iter I <what>: extents and strides must be
 * distinct powers of two". */
bool tirx__reduce_is_lane_iter(const tirx__call *call, const tirx_iter *it) {
  if (it->stride == 0 || it->extent <= 1) return false;
  if (it->axis == TIRX_AXIS_LANEID) return true;
  /* In a warpgroup, tid_in_wg bits 0..4 are the lane bits of each of its warps. */
  return it->axis == TIRX_AXIS_TID_IN_WG && call->scope &&
         tirx_scope_team_kind(call->scope) == TIRX_TEAM_WARPGROUP && (it->extent - 1) * it->stride < 32;
}

int64_t tirx__reduce_lane_mask(tirx__rule_ctx *ctx, const char *what) {
  tirx__reduced_iter it[TIRX_LAYOUT_MAX_ITERS];
  int n = tirx__reduced_iters(ctx, it, TIRX_LAYOUT_MAX_ITERS);
  int64_t mask = 0;
  for (int i = 0; i < n; i++) {
    if (!tirx__reduce_is_lane_iter(ctx->call, &it[i].iter)) continue;
    int64_t e = it[i].iter.extent, s = it[i].iter.stride, bits = (e - 1) * s;
    char buf[96];
    if (e <= 0 || (e & (e - 1)) || s <= 0 || (s & (s - 1)) || bits >= 32 || (mask & bits)) {
      tirx__reason(ctx,
                   "reduced dim %d iter %s %s: extents and strides must be distinct powers of "
                   "two",
                   it[i].dim, tirx__iter_text(buf, sizeof buf, &it[i].iter), what);
      return -1;
    }
    mask |= bits;
  }
  return mask;
}
