/*
 * reduce.smem: a warpgroup or a CTA reduces register tiles: an in-thread loop, a warp
 * butterfly, then one partial per warp through a shared-memory scratch and a named barrier,
 * the result broadcast back to every thread of the team.
 *
 * The instruction, as data: team warpgroup or CTA; source and destination in registers; any
 * numeric dtype; every reduced iter on reg/m or on a thread axis inside the team (warpgroup:
 * laneid, wid_in_wg, tid_in_wg; CTA: those and warpid, wgid, tid). The destination may be
 * held by any thread (the result is read back from shared memory).
 * Shape: (threads) combined.
 */
#include <stdio.h>
#include <string.h>

#include "../../layout/layout_internal.h"
#include "../lower.h"
#include "families.h"

#define AXES_WARPGROUP                                                                             \
  (TIRX__AXIS_BIT(TIRX_AXIS_LANEID) | TIRX__AXIS_BIT(TIRX_AXIS_WID_IN_WG) |                        \
   TIRX__AXIS_BIT(TIRX_AXIS_TID_IN_WG))
#define AXES_CTA                                                                                   \
  (AXES_WARPGROUP | TIRX__AXIS_BIT(TIRX_AXIS_WARPID) | TIRX__AXIS_BIT(TIRX_AXIS_WGID) |            \
   TIRX__AXIS_BIT(TIRX_AXIS_TID))

static void check(tirx__rule_ctx *ctx) {
  bool wg = tirx_scope_team_kind(ctx->call->scope) == TIRX_TEAM_WARPGROUP;
  ctx->scratch[0] = tirx__reduce_check_axes(
      ctx, wg ? AXES_WARPGROUP : AXES_CTA,
      wg ? "a warpgroup reduction combines threads of one warpgroup only"
         : "a CTA reduction through shared memory combines threads of one CTA only");
  /* Kept dims stay in registers here: rows spread over threads (a wgmma accumulator's rows,
   * each reduced by its quad of lanes) are reduce.shuffle's. */
  const tirx_layout *src = ctx->call->operands[1].layout;
  for (int k = 0; k < src->rank && !ctx->nreasons; k++) {
    if (ctx->call->config.reduce_axes >> k & 1) continue;
    for (int i = src->dim_begin[k]; i < src->dim_begin[k + 1]; i++)
      if (src->d[i].extent > 1 && src->d[i].stride != 0 && tirx_axis_is_thread(src->d[i].axis)) {
        char buf[96];
        tirx__reason(ctx, "kept dim %d iter %s is on %s: the kept dims of a reduction through "
                     "shared memory stay in registers", k,
                     tirx__iter_text(buf, sizeof buf, &src->d[i]), tirx_axis_name(src->d[i].axis));
        break;
      }
  }
}

static int shapes(tirx__rule_ctx *ctx, tirx__shape *out, int cap) {
  (void)cap;
  out[0] = (tirx__shape){{ctx->scratch[0]}};
  return 1;
}

/* ---- reduce through shared memory (reduce.smem) ---- */

/* barrier.cluster.arrive.release + wait.acquire by every thread: the DSMEM exchange's barrier
 * (reduce_dsmem.c). */
static void cluster_barrier(tirx__emit *e) { tirx__dsmem_cluster_barrier(e); }

/* Bit positions of a thread axis inside the team's linear thread index (tid), or -1. */
static int64_t tid_scale(tirx_axis ax) {
  switch (ax) {
  case TIRX_AXIS_LANEID: case TIRX_AXIS_TID: case TIRX_AXIS_TID_IN_WG: return 1;
  case TIRX_AXIS_WARPID: case TIRX_AXIS_WID_IN_WG: return 32;
  case TIRX_AXIS_WGID: return 128;
  default: return -1;
  }
}

/*
 * reduce.smem: (1) every thread folds the reduced elements it holds (threads that hold none
 * start from the identity); (2) a shfl.xor butterfly over the lane bits; (3) lane 0 of each
 * warp writes its partial to a shared scratch [groups][kept][warps of the team]; a barrier;
 * (4) every warp reads the partials of its team (lane w reads warp w's, the other lanes take
 * the identity) and folds them with a second butterfly over all 32 lanes, so every thread of
 * the team has the result; a second barrier lets the
 * scratch be reused (the call may sit in a loop). Kept dims must lie on registers (a loop);
 * the barriers are __syncthreads, so every thread of the CTA must reach the call.
 */
/* The result acc at the kept index idx of dst (reduced dims at 0, or dropped). */
static void store_result(tirx__lower *lw, tirx_expr *const *idx, tirx_expr *acc, int at) {
  tirx_builder *b = lw->b;
  const tirx__prim_stmt *p = lw->p;
  const tirx_region *dst = p->ops[0];
  int srank = p->ops[1]->tensor->rank, drank = dst->tensor->rank;
  tirx_expr *di[TIRX_BUILDER_MAX_RANK] = {NULL};
  for (int k = 0, j = 0; k < srank; k++) {
    bool red = p->axes >> k & 1;
    if (drank == srank)
      di[k] = red ? NULL : idx[k];
    else if (!red)
      di[j++] = idx[k];
  }
  tirx_expr *res = acc;
  if (p->accumulate) res = tirx__reduce_combine(b, p->op, tirx__lower_as_type(b, tirx__lower_load(lw, dst, di, 0), at), acc);
  tirx__lower_store(lw, dst, di, 0, tirx__lower_as_type(b, res, dst->tensor->dtype));
}

/* Opens the unrolled loops of the kept dims of src (plan pl) and sets idx and kflat, the
 * kept index flattened over src's kept extents; returns the loops opened. */
static int open_kept(tirx__lower *lw, const tirx__plan *pl, tirx_expr **idx, tirx_expr **kflat) {
  tirx_builder *b = lw->b;
  tirx__emit *e = lw->e;
  const tirx__prim_stmt *p = lw->p;
  const tirx_region *src = p->ops[1];
  int opened = 0;
  for (int i = 0; i < pl->n; i++) {
    const tirx__plan_iter *it = &pl->it[i];
    if (p->axes >> it->dim & 1) continue;
    tirx_expr *d = tirx__lower_loop(e, it->extent, TIRX_LOOP_UNROLL);
    opened++;
    if (it->inner != 1) d = tirx_mul(b, d, tirx_int(b, it->inner));
    idx[it->dim] = tirx__lower_add_term(b, idx[it->dim], d);
  }
  *kflat = tirx_int(b, 0);
  for (int k = 0; k < src->tensor->rank; k++)
    if (!(p->axes >> k & 1))
      *kflat = tirx_add(b, tirx_mul(b, *kflat, tirx_int(b, src->extent[k])),
                        idx[k] ? idx[k] : tirx_int(b, 0));
  return opened;
}

tirx_status tirx__lower_reduce_smem(tirx__lower *lw) { return tirx__reduce_smem(lw, false); }

tirx_status tirx__reduce_smem(tirx__lower *lw, bool cluster) {
  tirx_builder *b = lw->b;
  tirx__emit *e = lw->e;
  tirx__prim_stmt *p = lw->p;
  const tirx__call *c = lw->call;
  const tirx_region *dst = p->ops[0], *src = p->ops[1];
  int op = p->op;
  int64_t threads = tirx__lower_threads(b), csize = 1;
  tirx_team team = tirx_scope_team_kind(p->scope);
  bool wg = team == TIRX_TEAM_WARPGROUP;
  if (cluster) {
    if (!b->cluster[0] || b->cluster[1] != 1 || b->cluster[2] != 1)
      return tirx__lower_fail(lw, "a cluster reduction needs a cluster of x CTAs (tirx_set_cluster(b, x, 1, "
                      "1)), got %d x %d x %d",
                  b->cluster[0], b->cluster[1], b->cluster[2]);
    csize = b->cluster[0];
  }
  if (threads % 32 || (wg && threads % 128))
    return tirx__lower_fail(lw, "a block of %lld threads is not whole %s", (long long)threads,
                wg ? "warpgroups" : "warps");
  /* The builder's scope models one CTA (its cluster teams are one CTA wide): cluster or not,
   * every thread of the CTA takes part. */
  if (tirx_scope_num_threads(p->scope) != threads)
    return tirx__lower_fail(lw, cluster ? "every thread of the cluster must take part (its barriers are "
                              "__syncthreads and barrier.cluster)"
                            : "every thread of the CTA must take part (its barriers are "
                              "__syncthreads)");
  int dt = dst->tensor->dtype;
  int at = !tirx__dtype_is_float(dt) ? (tirx_dtype_size((tirx_dtype)dt) < 4 ? TIRX_I32 : dt)
           : (dt == TIRX_F64 || src->tensor->dtype == TIRX_F64) ? TIRX_F64 : TIRX_F32;
  tirx__plan pl;
  tirx__lower_plan(c->operands[1].layout, &pl);
  tirx_expr *guard;
  if (tirx__lower_thread_digits(lw, &pl, true, &guard) != TIRX_OK) return b->status;
  /* The reduced thread bits, on the team's linear thread index; kept dims on registers. */
  int64_t bits = 0, nkept = 1, ctas = 1;
  for (int i = 0; i < pl.n; i++) {
    const tirx__plan_iter *it = &pl.it[i];
    bool red = p->axes >> it->dim & 1;
    if (!red) {
      if (!it->loop) return tirx__lower_fail(lw, "a kept dim on a thread axis is not lowered yet");
      nkept *= it->extent;
      continue;
    }
    if (it->loop) continue;
    if (cluster && it->axis == TIRX_AXIS_CBX) { /* combined through DSMEM */
      ctas *= it->extent;
      continue;
    }
    int64_t s = tid_scale(it->axis);
    bool pow2 = !(it->extent & (it->extent - 1)) && !(it->stride & (it->stride - 1));
    /* Unguarded, an extent that is not a power of two (6 warps) is lowered when its thread
     * step S is one and it covers whole warps: within a warp it is a power-of-two part (the
     * lanes that are multiples of S), across warps any count, which the cross-warp stage
     * folds in warp order (lanes past the warps hold the identity). */
    int64_t step = it->stride * s;
    bool warps = s > 0 && !(step & (step - 1)) &&
                 (step % 32 == 0 || (32 % step == 0 && it->extent * step % 32 == 0));
    if (s < 0 || (!pow2 && !guard && !warps))
      return tirx__lower_fail(lw, "reduced iters on %s with extent %lld, stride %lld are not lowered yet",
                  tirx_axis_name(it->axis), (long long)it->extent, (long long)it->stride);
    int64_t span = (it->extent - 1) * it->stride * s, m = 1; /* guarded: the bits it spans */
    while (m <= span) m <<= 1;
    if (pow2 || guard)
      bits |= pow2 ? span : m - 1;
    else /* this warp's lanes, and a bit above them: the partials cross warps */
      bits |= (step < 32 ? 31 & ~(step - 1) : 0) | 32;
  }
  if (cluster && ctas != csize)
    return tirx__lower_fail(lw, "the reduced iters on cbx span %lld CTAs, expected the cluster's %lld",
                (long long)ctas, (long long)csize);
  if (cluster && at != TIRX_F32)
    return tirx__lower_fail(lw, "a cluster reduction accumulates in %s, expected f32",
                tirx_dtype_name((tirx_dtype)at));
  int64_t lane_bits = bits & 31, nwarps = (wg ? 128 : threads) / 32;
  if (guard && lane_bits) lane_bits = 31; /* lanes that hold nothing add the identity */
  else if (guard && bits >> 5) return tirx__lower_fail(lw, "a guarded layout without lane iters is not lowered yet");
  /* Across warps when the reduced threads span several, or when the holders all sit in one
   * warp (a guarded tail) while the other warps of the team also need the result. */
  bool cross = bits >> 5 != 0 || (guard && nwarps > 1);
  if (cross && !p->scratch) {
    char name[32];
    snprintf(name, sizeof name, "red%d_smem", (int)p->number);
    p->scratch = tirx_alloc_shared(b, name, (tirx_dtype)at,
                                   TIRX_DIMS(wg ? threads / 128 : 1, nkept, nwarps), NULL);
    if (!p->scratch) return b->status;
  }
  tirx_expr *lane = cross ? tirx__emit_let(e, "lane", tirx_lane_id(b)) : NULL;
  tirx_expr *grp = cross && wg ? tirx__emit_let(e, "wg", tirx__lower_axis_coord(b, TIRX_AXIS_WGID))
                               : tirx_int(b, 0);
  tirx_expr *wslot = cross ? tirx__emit_let(e, "wslot", wg ? tirx__lower_axis_coord(b, TIRX_AXIS_WID_IN_WG)
                                                     : tirx_warp_id(b))
                           : NULL;
  if (cluster && !p->dscratch) {
    char name[32];
    snprintf(name, sizeof name, "red%d_dsmem", (int)p->number);
    p->dscratch = tirx_alloc_shared(b, name, TIRX_F32, TIRX_DIMS(nkept, csize), NULL);
    if (!p->dscratch) return b->status;
  }
  tirx_expr *rank = cluster ? tirx__emit_let(e, "rank", tirx_cluster_ctarank(b)) : NULL;
  for (int pass = 0; pass < (cross ? 2 : 1); pass++) {
    tirx_expr *idx[TIRX_BUILDER_MAX_RANK] = {NULL}, *kflat; /* the kept index: unrolled loops */
    int opened = open_kept(lw, &pl, idx, &kflat);
    tirx_expr *acc = tirx__emit_var(e, "acc", (tirx_dtype)at, tirx__reduce_identity(b, op, at));
    if (!acc) return b->status;
    if (pass == 0) {
      if (guard) tirx__emit_if_begin(e, guard);
      tirx_expr *ridx[TIRX_BUILDER_MAX_RANK];
      memcpy(ridx, idx, sizeof ridx);
      int inner = tirx__lower_walk(e, c->operands[1].layout, &pl, p->axes, ridx);
      tirx_expr *v = tirx__lower_as_type(b, tirx__lower_load(lw, src, ridx, 0), at);
      if (op == TIRX__PRIM_OP_SUMSQ) v = tirx_mul(b, v, v);
      tirx__emit_assign(e, acc, tirx__reduce_combine(b, op, acc, v));
      for (int i = 0; i < inner; i++) tirx__emit_for_end(e);
      if (guard) tirx__emit_if_end(e);
      for (int bit = 1; bit < 32; bit <<= 1)
        if (lane_bits & bit)
          tirx__emit_assign(e, acc, tirx__reduce_combine(b, op, acc, tirx_shfl_xor(b, acc, tirx_int(b, bit))));
    } else { /* lane w folds warp w's partial */
      tirx__emit_if_begin(e, tirx_lt(b, lane, tirx_int(b, nwarps)));
      tirx__emit_assign(e, acc, tirx_load(b, p->scratch, TIRX_EXPRS(grp, kflat, lane)));
      tirx__emit_if_end(e);
      for (int bit = 1; bit < 32; bit <<= 1) /* lanes past nwarps hold the identity */
        tirx__emit_assign(e, acc, tirx__reduce_combine(b, op, acc, tirx_shfl_xor(b, acc, tirx_int(b, bit))));
    }
    if (pass == 0 && cross) {
      tirx__emit_if_begin(e, tirx_eq(b, lane, tirx_int(b, 0)));
      tirx__emit_store(e, p->scratch, TIRX_EXPRS(grp, kflat, wslot), acc);
      tirx__emit_if_end(e);
    } else if (cluster) { /* the CTA's partial into slot [kept][rank] of every CTA */
      tirx__emit_if_begin(e, tirx_eq(b, tirx_thread_linear(b), tirx_int(b, 0)));
      tirx_expr *r = tirx__lower_loop(e, csize, TIRX_LOOP_UNROLL);
      tirx__dsmem_store(e, p->dscratch, (tirx_expr *[]){kflat, rank}, r, acc);
      tirx__emit_for_end(e);
      tirx__emit_if_end(e);
    } else {
      store_result(lw, idx, acc, at);
    }
    for (int i = 0; i < opened; i++) tirx__emit_for_end(e);
    if (cross && !(cluster && pass == 1)) tirx__emit_sync_threads(e); /* cluster: its barrier */
  }
  if (!cluster) return b->status;
  cluster_barrier(e); /* the peers' stores are visible */
  tirx_expr *idx[TIRX_BUILDER_MAX_RANK] = {NULL}, *kflat;
  int opened = open_kept(lw, &pl, idx, &kflat);
  tirx_expr *acc = tirx__emit_var(e, "acc", (tirx_dtype)at, tirx__reduce_identity(b, op, at));
  if (!acc) return b->status;
  for (int64_t r = 0; r < csize; r++) /* rank order: every CTA folds the same bits */
    tirx__emit_assign(e, acc, tirx__reduce_combine(b, op, acc, tirx_load(b, p->dscratch,
                                                      TIRX_EXPRS(kflat, tirx_int(b, r)))));
  store_result(lw, idx, acc, at);
  for (int i = 0; i < opened; i++) tirx__emit_for_end(e);
  /* In a loop, every CTA must have read its slots before a peer writes them again. Run once,
   * the call needs no second barrier: every DSMEM store into a CTA precedes its peer's
   * arrive.release, so it is done when that CTA's wait returns, and no CTA touches a peer
   * afterwards (push, not pull), so each may go on or exit; each call has its own scratch. */
  if (lw->loops) cluster_barrier(e);
  return b->status;
}

static tirx_status emit(const tirx__rule *rule, const tirx__call *call,
                                   const tirx__shape *shape, void *emitter) {
  (void)rule;
  (void)call;
  (void)shape;
  return tirx__lower_reduce_smem(emitter);
}

const tirx__rule tirx__rule_reduce_smem = {
    .name = "reduce.smem",
    .family = "smem",
    .summary = "warp butterflies, then per-warp partials through shared memory",
    .kind = TIRX__RULE_DEFAULT,
    .prims = TIRX__BIT(TIRX__PRIM_REDUCE),
    .flows = TIRX__FLOW(TIRX__ROLE_LOCAL, TIRX__ROLE_LOCAL),
    .teams = TIRX__BIT(TIRX_TEAM_WARPGROUP) | TIRX__BIT(TIRX_TEAM_CTA),
    .needs = {.dtypes = TIRX__DTYPES_NUMERIC, .ops = TIRX__OPS_REDUCE},
    .shape_dims = {"threads"},
    .check = check,
    .shapes = shapes,
    .emit = emit,
};
