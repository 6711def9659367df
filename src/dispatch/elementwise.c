/*
 * What the lowerings of the families share (lower.h has what is supported): thread
 * coordinates, the iteration plan of register layouts, operand access, vector moves, element
 * operations, and the elementwise lowering of copy, pointwise, cast, fill and select (with
 * hooks for copy_async.cp_async's instruction and pointwise.vec's packed pairs). Each family's
 * own lowering is in its file under families/.
 *
 * Register operands. A local tensor's region layout L maps a logical index to one thread's
 * slots (reg/m iters) and to the threads that hold it (iters on thread axes). A thread visits
 * the elements it holds: every iter on a thread axis is a digit of the thread's coordinate,
 * ((coord - offset) / stride) % extent, and every iter on reg/m (or with stride 0) is a
 * loop, unrolled so that register indices are constants. The logical index of dim k is
 * sum(digit_j * inner_j) over the iters j of dim k (inner_j: the product of the extents of
 * the iters after j in that dim).
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../layout/layout_internal.h"
#include "lower.h"
#include "families/families.h" /* copy.vec's vector move */

static const char FN[] = "tirx_kernel_build";

tirx_status tirx__lower_fail(tirx__lower *lw, const char *fmt, ...) {
  char msg[400];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return tirx__b_fail(lw->b, TIRX_E_NOT_SUPPORTED, "%s: [%s:%d] %s: %s", FN, lw->b->name,
                      (int)lw->p->number, lw->rule, msg);
}

/* ---- thread coordinates ---- */

tirx_expr *tirx__lower_axis_coord(tirx_builder *b, tirx_axis axis) {
  switch (axis) {
  case TIRX_AXIS_LANEID: return tirx_lane_id(b);
  case TIRX_AXIS_WARPID: return tirx_warp_id(b);
  case TIRX_AXIS_TID: return tirx_thread_linear(b);
  case TIRX_AXIS_TID_IN_WG: return tirx_mod(b, tirx_thread_linear(b), tirx_int(b, 128));
  case TIRX_AXIS_WID_IN_WG: return tirx_mod(b, tirx_warp_id(b), tirx_int(b, 4));
  case TIRX_AXIS_WGID: return tirx_div(b, tirx_thread_linear(b), tirx_int(b, 128));
  case TIRX_AXIS_CBX: /* a cluster of x CTAs only: the CTA's rank in it */
    return b->cluster[0] && b->cluster[1] == 1 && b->cluster[2] == 1 ? tirx_cluster_ctarank(b)
                                                                      : NULL;
  default: return NULL;
  }
}

int64_t tirx__lower_threads(const tirx_builder *b) {
  return (int64_t)b->block[0] * b->block[1] * b->block[2];
}

static int64_t axis_size(const tirx_builder *b, tirx_axis axis) {
  int64_t t = tirx__lower_threads(b);
  switch (axis) {
  case TIRX_AXIS_LANEID: return 32;
  case TIRX_AXIS_WARPID: return (t + 31) / 32;
  case TIRX_AXIS_TID: return t;
  case TIRX_AXIS_TID_IN_WG: return 128;
  case TIRX_AXIS_WID_IN_WG: return 4;
  case TIRX_AXIS_WGID: return (t + 127) / 128;
  case TIRX_AXIS_CBX: return b->cluster[1] == 1 && b->cluster[2] == 1 ? b->cluster[0] : 0;
  default: return 0;
  }
}

static bool storage_axis(tirx_axis ax) { return ax == TIRX_AXIS_M || ax == TIRX_AXIS_REG; }

/* ---- the iteration plan of a register layout ---- */

void tirx__lower_plan(const tirx_layout *l, tirx__plan *p) {
  p->l = l;
  p->n = 0;
  for (int k = 0; k < l->rank; k++)
    for (int j = l->dim_begin[k]; j < l->dim_begin[k + 1]; j++) {
      const tirx_iter *it = &l->d[j];
      if (it->extent == 1) continue;
      int64_t inner = 1;
      for (int q = j + 1; q < l->dim_begin[k + 1]; q++) inner *= l->d[q].extent;
      p->it[p->n++] = (tirx__plan_iter){k, it->extent, it->stride, inner, it->axis,
                                  storage_axis(it->axis) || it->stride == 0};
    }
}

static int cmp_stride(const void *x, const void *y) {
  const tirx_iter *a = x, *b = y;
  return a->stride < b->stride ? -1 : a->stride > b->stride;
}

/*
 * Checks that the thread iters of l are digits of the coordinates and says, in *guard, the
 * condition under which this thread holds elements (NULL: every thread does). want_guard
 * false: no guard is built (reductions: every lane must take part in the shuffles).
 */
tirx_status tirx__lower_thread_digits(tirx__lower *lw, const tirx__plan *p, bool want_guard,
                                 tirx_expr **guard) {
  tirx_builder *b = lw->b;
  const tirx_layout *l = p->l;
  *guard = NULL;
  uint64_t seen = 0;
  for (int i = 0; i < p->n; i++)
    if (!p->it[i].loop) seen |= UINT64_C(1) << p->it[i].axis;
  for (int i = 0; i < l->nr; i++)
    if (!storage_axis(l->r[i].axis) && l->r[i].stride != 0 && l->r[i].extent > 1)
      seen |= UINT64_C(1) << l->r[i].axis;
  for (int i = 0; i < l->no; i++)
    if (!storage_axis(l->o[i].axis)) seen |= UINT64_C(1) << l->o[i].axis;
  for (int ax = 0; ax < TIRX_AXIS_MAX; ax++) {
    if (!(seen >> ax & 1)) continue;
    const char *an = tirx_axis_name((tirx_axis)ax);
    int64_t size = axis_size(b, (tirx_axis)ax);
    if (!size) return tirx__lower_fail(lw, "register layouts on %s are not lowered yet", an ? an : "?");
    tirx_iter its[2 * TIRX_LAYOUT_MAX_ITERS];
    int n = 0, nrep = 0;
    for (int i = 0; i < p->n; i++)
      if (!p->it[i].loop && p->it[i].axis == ax)
        its[n++] = (tirx_iter){p->it[i].extent, p->it[i].stride, (tirx_axis)ax};
    for (int i = 0; i < l->nr; i++)
      if (l->r[i].axis == ax && l->r[i].stride != 0 && l->r[i].extent > 1) {
        its[n++] = l->r[i];
        nrep++;
      }
    qsort(its, (size_t)n, sizeof its[0], cmp_stride);
    int64_t expect = 1;
    bool chain = true;
    for (int i = 0; i < n; i++) {
      if (its[i].stride < 0 || (i && its[i].stride < its[i - 1].stride * its[i - 1].extent))
        return tirx__lower_fail(lw, "the iters on %s overlap: they are not digits of the coordinate", an);
      chain = chain && its[i].stride == expect;
      expect = its[i].stride * its[i].extent;
    }
    int64_t off = tirx_layout_offset(l, (tirx_axis)ax);
    if (chain && expect == size && off == 0) continue; /* every thread holds elements */
    if (nrep) return tirx__lower_fail(lw, "a layout replicated over part of %s is not lowered yet", an);
    if (!want_guard) continue;
    /* coord == off + sum(digit * stride) */
    tirx_expr *coord = tirx__lower_axis_coord(b, (tirx_axis)ax);
    tirx_expr *rec = tirx_int(b, off);
    for (int i = 0; i < p->n; i++) {
      const tirx__plan_iter *it = &p->it[i];
      if (it->loop || it->axis != (tirx_axis)ax) continue;
      tirx_expr *d = tirx_mod(b, tirx_div(b, tirx_sub(b, coord, tirx_int(b, off)),
                                          tirx_int(b, it->stride)),
                              tirx_int(b, it->extent));
      rec = tirx_add(b, rec, tirx_mul(b, d, tirx_int(b, it->stride)));
    }
    tirx_expr *g = tirx_and(b, tirx_ge(b, coord, tirx_int(b, off)), tirx_eq(b, coord, rec));
    *guard = *guard ? tirx_and(b, *guard, g) : g;
  }
  return b->status;
}

static tirx_expr *digit_of(tirx_builder *b, const tirx_layout *l, const tirx__plan_iter *it) {
  tirx_expr *c = tirx__lower_axis_coord(b, it->axis);
  int64_t off = tirx_layout_offset(l, it->axis);
  if (off) c = tirx_sub(b, c, tirx_int(b, off));
  /* Coordinates are >= 0: powers of two become shifts and masks, whose known bits let the
   * compiler fold the register index (i * 4096 + (tid & 511) * 8) / 4096 to a constant. */
  bool p2 = !(it->stride & (it->stride - 1)) && !(it->extent & (it->extent - 1));
  if (p2 && !off) {
    int sh = 0;
    while (((int64_t)1 << sh) < it->stride) sh++;
    if (sh) c = tirx_shr(b, c, tirx_int(b, sh));
    return tirx_bit_and(b, c, tirx_int(b, it->extent - 1));
  }
  /* Otherwise in unsigned arithmetic: the result's known range [0, extent) lets the compiler
   * fold (digit * 8 + i) % 8 to i and keep the tile in registers (a signed remainder of an
   * unknown sign kept a 113-thread tail in local memory). */
  c = tirx_cast(b, c, TIRX_U32);
  if (it->stride != 1) c = tirx_div(b, c, tirx_int_typed(b, it->stride, TIRX_U32));
  return tirx_cast(b, tirx_mod(b, c, tirx_int_typed(b, it->extent, TIRX_U32)), TIRX_I32);
}

tirx_expr *tirx__lower_add_term(tirx_builder *b, tirx_expr *sum, tirx_expr *term) {
  return sum ? tirx_add(b, sum, term) : term;
}

/* Opens an unrolled loop over [0, n) and returns its variable. Every such loop is named "i":
 * codegen gives clashing names deterministic suffixes (i, i_1, ...), so the generated source
 * depends only on the kernel, never on what else the process built before (a counter here
 * made two builds of one kernel differ, and so miss the cache). */
tirx_expr *tirx__lower_loop(tirx__emit *e, int64_t n, tirx_loop_kind kind) {
  tirx_builder *b = e->b;
  return tirx__emit_for_begin(e, "i", tirx_int(b, 0), tirx_int(b, n), NULL, kind);
}

/* Walks the iters of plan pl whose dim is in the mask dims: a loop iter opens an unrolled loop,
 * another is its thread digit of layout l; each, times its inner step, is added to idx of its
 * dim. Returns the loops opened (the caller closes them). */
int tirx__lower_walk(tirx__emit *e, const tirx_layout *l, const tirx__plan *pl, uint32_t dims,
                      tirx_expr **idx) {
  tirx_builder *b = e->b;
  int opened = 0;
  for (int i = 0; i < pl->n; i++) {
    const tirx__plan_iter *it = &pl->it[i];
    if (!(dims >> it->dim & 1)) continue;
    tirx_expr *d = it->loop ? tirx__lower_loop(e, it->extent, TIRX_LOOP_UNROLL) : digit_of(b, l, it);
    opened += it->loop;
    if (it->inner != 1) d = tirx_mul(b, d, tirx_int(b, it->inner));
    idx[it->dim] = tirx__lower_add_term(b, idx[it->dim], d);
  }
  return opened;
}

/* ---- operand access ---- */

static int rank_of(const tirx__lower *lw) { return lw->p->ops[0]->tensor->rank; }

/* The tensor index of operand r at logical idx (+ j on the last dim). */
void tirx__lower_tensor_index(tirx__lower *lw, const tirx_region *r, tirx_expr *const *idx,
                         int64_t j, tirx_expr **out) {
  tirx_builder *b = lw->b;
  int rank = r->tensor->rank;
  for (int k = 0; k < rank; k++) {
    tirx_expr *i = idx[k];
    if (k == rank - 1 && j) i = i ? tirx_add(b, i, tirx_int(b, j)) : tirx_int(b, j);
    bool zero = r->begin[k]->kind == TIRX__EX_INT && r->begin[k]->i == 0;
    out[k] = !i ? r->begin[k] : zero ? i : tirx_add(b, r->begin[k], i);
  }
}

/* Whether e uses tirx_elem_index. */
static bool has_elem_index(const tirx_expr *e) {
  if (!e || e->host) return false;
  if (e->kind == TIRX__EX_SPECIAL) return e->op == TIRX__SP_ELEM_INDEX;
  if (has_elem_index(e->a) || has_elem_index(e->b) || has_elem_index(e->c)) return true;
  if (e->kind == TIRX__EX_LOAD && e->index && e->tensor)
    for (int d = 0; d < e->tensor->rank; d++)
      if (has_elem_index(e->index[d])) return true;
  return false;
}

/* e with every tirx_elem_index(d) replaced by idx[d] (+ j on the last of rank dims); e itself
 * when it has none. Nodes are copied, never changed: the caller's expression stays as built. */
static tirx_expr *elem_subst(tirx__lower *lw, tirx_expr *e, tirx_expr *const *idx, int rank,
                             int64_t j) {
  if (!e) return NULL;
  if (e->kind == TIRX__EX_SPECIAL && e->op == TIRX__SP_ELEM_INDEX) {
    if (e->i >= rank) {
      tirx__lower_fail(lw, "a broadcast operand uses tirx_elem_index(%d), but the tile has rank %d",
                       (int)e->i, rank);
      return e;
    }
    tirx_expr *v = idx[e->i] ? idx[e->i] : tirx_int(lw->b, 0);
    if (e->i == rank - 1 && j) v = tirx_add(lw->b, v, tirx_int(lw->b, j));
    return tirx__lower_as_type(lw->b, v, TIRX_I32);
  }
  tirx_expr *k[3] = {elem_subst(lw, e->a, idx, rank, j), elem_subst(lw, e->b, idx, rank, j),
                     elem_subst(lw, e->c, idx, rank, j)};
  bool changed = k[0] != e->a || k[1] != e->b || k[2] != e->c;
  tirx_expr **ix = e->index;
  if (e->kind == TIRX__EX_LOAD && e->index && e->tensor)
    for (int d = 0; d < e->tensor->rank; d++) {
      tirx_expr *n = elem_subst(lw, e->index[d], idx, rank, j);
      if (n == e->index[d]) continue;
      if (ix == e->index) {
        ix = tirx__b_node(lw->b, "tirx_kernel_build", (size_t)e->tensor->rank * sizeof *ix);
        if (!ix) return e;
        for (int q = 0; q < e->tensor->rank; q++) ix[q] = e->index[q];
      }
      ix[d] = n;
      changed = true;
    }
  if (!changed) return e;
  tirx_expr *c = tirx__b_node(lw->b, "tirx_kernel_build", sizeof *c);
  if (!c) return e;
  *c = *e;
  c->a = k[0], c->b = k[1], c->c = k[2], c->index = ix;
  return c;
}

tirx_expr *tirx__lower_load(tirx__lower *lw, const tirx_region *r, tirx_expr *const *idx,
                          int64_t j) {
  if (!r->tensor) return r->value && r->value->host ? r->value
                         : elem_subst(lw, r->value, idx, lw->p->ops[0]->tensor ? lw->p->ops[0]->tensor->rank : 0, j);
  tirx_expr *ix[TIRX_BUILDER_MAX_RANK];
  tirx__lower_tensor_index(lw, r, idx, j, ix);
  return tirx_load(lw->b, r->tensor, r->tensor->rank, ix);
}

void tirx__lower_store(tirx__lower *lw, const tirx_region *r, tirx_expr *const *idx, int64_t j,
                     tirx_expr *v) {
  tirx__emit *e = lw->e;
  tirx_expr *ix[TIRX_BUILDER_MAX_RANK];
  tirx__lower_tensor_index(lw, r, idx, j, ix);
  tirx__emit_store(e, r->tensor, r->tensor->rank, ix, v);
}

/* A vector move of vec elements: dst at didx (or index 0 of a temporary) from src. */
static void vcopy(tirx__lower *lw, tirx_tensor *dt, tirx_expr *const *dix, tirx_tensor *st,
                  tirx_expr *const *six, int64_t vec, int hint) {
  tirx_builder *b = lw->b;
  static const char fn[] = "tirx_kernel_build";
  tirx_expr *src = tirx_load(b, st, st->rank, six);
  tirx_expr **idx = tirx__b_index_list(b, fn, dt, dt->rank, dix);
  if (!src || !idx) return;
  int flags = 0;
  if (st->storage == TIRX__LOCAL) flags |= TIRX__VC_SRC_REG;
  if (dt->storage == TIRX__LOCAL) flags |= TIRX__VC_DST_REG;
  if (st->storage == TIRX__GLOBAL) {
    if (hint == TIRX__HINT_STREAM) flags |= TIRX__VC_LD_CS;
    if (hint == TIRX__HINT_NC) flags |= TIRX__VC_LD_NC;
    if (hint == TIRX__HINT_LAST_USE) flags |= TIRX__VC_LD_LU;
  }
  if (dt->storage == TIRX__GLOBAL && hint == TIRX__HINT_STREAM) flags |= TIRX__VC_ST_CS;
  if (!tirx__vcopy_stmt(lw->e, dt, idx, src, (int)vec, flags)) return;
  int32_t bytes = (int32_t)vec * tirx_dtype_size((tirx_dtype)dt->dtype);
  if (st->storage == TIRX__GLOBAL && bytes > st->vec_bytes) st->vec_bytes = bytes;
  if (dt->storage == TIRX__GLOBAL && bytes > dt->vec_bytes) dt->vec_bytes = bytes;
}

/* ---- element operations ---- */

tirx_expr *tirx__lower_fconst(tirx_builder *b, double v, int dt) {
  return tirx_float(b, v, (tirx_dtype)dt);
}

tirx_expr *tirx__lower_as_type(tirx_builder *b, tirx_expr *e, int dt) {
  if (!e) return NULL;
  if (e->dtype == dt && !e->weak) return e;
  return tirx_cast(b, e, (tirx_dtype)dt);
}

/* dst = op(v[0..]) for pointwise primitives; v are the sources' values (any dtype for
 * broadcasts). */
static tirx_expr *compute(tirx__lower *lw, tirx_expr **v) {
  tirx_builder *b = lw->b;
  const tirx__prim_stmt *p = lw->p;
  int dt = p->ops[0]->tensor->dtype;
  switch (p->prim) {
  case TIRX__PRIM_COPY: return v[0];
  case TIRX__PRIM_CAST:
  case TIRX__PRIM_FILL: return tirx__lower_as_type(b, v[0], dt);
  case TIRX__PRIM_SELECT: return tirx_select(b, v[0], tirx__lower_as_type(b, v[1], dt), tirx__lower_as_type(b, v[2], dt));
  default: break;
  }
  tirx_expr *a = tirx__lower_as_type(b, v[0], dt);
  tirx_expr *x = p->nops > 2 ? tirx__lower_as_type(b, v[1], dt) : NULL;
  tirx_expr *y = p->nops > 3 ? tirx__lower_as_type(b, v[2], dt) : NULL;
  switch ((tirx__prim_op)p->op) {
  case TIRX__PRIM_OP_ADD: return tirx_add(b, a, x);
  case TIRX__PRIM_OP_SUB: return tirx_sub(b, a, x);
  case TIRX__PRIM_OP_MUL: return tirx_mul(b, a, x);
  case TIRX__PRIM_OP_DIV: return tirx_div(b, a, x);
  case TIRX__PRIM_OP_MAX: return tirx_max(b, a, x);
  case TIRX__PRIM_OP_MIN: return tirx_min(b, a, x);
  case TIRX__PRIM_OP_FMA:
    /* Fused semantics, as the packed fma.rn.{bf16x2,f16x2} path has: a 16-bit product is exact
     * in f32, so computing in f32 and rounding once matches; bf16/f16 arithmetic would round
     * the product first and lose everything when it nearly cancels y. */
    if (dt == TIRX_BF16 || dt == TIRX_F16)
      return tirx_cast(b,
                       tirx_add(b, tirx_mul(b, tirx_cast(b, a, TIRX_F32), tirx_cast(b, x, TIRX_F32)),
                                tirx_cast(b, y, TIRX_F32)),
                       dt);
    return tirx_add(b, tirx_mul(b, a, x), y);
  case TIRX__PRIM_OP_NEG: return tirx_neg(b, a);
  case TIRX__PRIM_OP_ABS:
    return tirx__dtype_is_float(dt) ? tirx_fabs(b, a)
                                    : tirx_select(b, tirx_lt(b, a, tirx_int(b, 0)), tirx_neg(b, a), a);
  case TIRX__PRIM_OP_EXP: return tirx_exp(b, a);
  case TIRX__PRIM_OP_EXP2: return tirx_exp2(b, a);
  case TIRX__PRIM_OP_EXP2_APPROX: return tirx_math(b, TIRX_MATH_EXP2_APPROX, a);
  case TIRX__PRIM_OP_LOG: return tirx_log(b, a);
  case TIRX__PRIM_OP_SQRT: return tirx_sqrt(b, a);
  case TIRX__PRIM_OP_RSQRT: return tirx_rsqrt(b, a);
  case TIRX__PRIM_OP_TANH: return tirx_tanh(b, a);
  case TIRX__PRIM_OP_SIGMOID: return tirx_math(b, TIRX_MATH_SIGMOID, a);
  case TIRX__PRIM_OP_SILU: return tirx_mul(b, a, tirx_math(b, TIRX_MATH_SIGMOID, a));
  case TIRX__PRIM_OP_GELU:
    return tirx_mul(b, tirx_mul(b, tirx__lower_fconst(b, 0.5, dt), a),
                    tirx_add(b, tirx__lower_fconst(b, 1.0, dt),
                             tirx_erf(b, tirx_mul(b, a, tirx__lower_fconst(b, 0.70710678118654752, dt)))));
  case TIRX__PRIM_OP_COPY: return a;
  default: return NULL;
  }
}

/* ---- elementwise ---- */

/* Whether b holds every element wherever a does: each thread placement of a's element x is one
 * of b's (b may hold it in more threads: a per-row value replicated over the lanes of its
 * row, broadcast along the row with stride-0 iters, serves every lane's elements). */
static bool holds_where(const tirx_layout *a, const tirx_layout *b) {
  int64_t size = tirx_layout_size(a), na = tirx_layout_replica_count(a),
          nb = tirx_layout_replica_count(b);
  if (size != tirx_layout_size(b) || na > nb) return false;
  if (size > (1 << 16) || nb > 1024) return true; /* too large to check here */
  tirx_coord *pa = malloc((size_t)na * sizeof *pa), *pb = malloc((size_t)nb * sizeof *pb);
  bool ok = pa && pb;
  for (int64_t x = 0; ok && x < size; x++) {
    int64_t ca = 0, cb = 0;
    if (tirx_layout_eval(a, x, pa, na, &ca) != TIRX_OK ||
        tirx_layout_eval(b, x, pb, nb, &cb) != TIRX_OK || ca > cb) {
      ok = false;
      break;
    }
    for (int64_t i = 0; ok && i < ca; i++) {
      bool found = false;
      for (int64_t j = 0; j < cb && !found; j++) {
        bool eq = true;
        for (int ax = 0; ax < TIRX_AXIS_MAX && eq; ax++)
          if (!storage_axis((tirx_axis)ax)) eq = pa[i].v[ax] == pb[j].v[ax];
        found = eq;
      }
      ok = found;
    }
  }
  free(pa);
  free(pb);
  return ok;
}


/* The work for one vector (or element) at logical idx. */
static void element_body(tirx__lower *lw, tirx_expr *const *idx, int64_t vec) {
  tirx_builder *b = lw->b;
  tirx__emit *e = lw->e;
  const tirx__prim_stmt *p = lw->p;
  const tirx_region *dst = p->ops[0];
  int hint = p->hint;
  if (lw->element) { /* the rule's own instruction (copy_async.cp_async) */
    lw->element(lw, idx, vec);
    return;
  }
  if (vec > 1 && p->prim == TIRX__PRIM_COPY) {
    tirx_expr *di[TIRX_BUILDER_MAX_RANK], *si[TIRX_BUILDER_MAX_RANK];
    tirx__lower_tensor_index(lw, dst, idx, 0, di);
    tirx__lower_tensor_index(lw, p->ops[1], idx, 0, si);
    vcopy(lw, dst->tensor, di, p->ops[1]->tensor, si, vec, hint);
    return;
  }
  if (vec == 1) {
    tirx_expr *v[3] = {NULL, NULL, NULL};
    for (int i = 1; i < p->nops; i++) v[i - 1] = tirx__lower_load(lw, p->ops[i], idx, 0);
    tirx__lower_store(lw, dst, idx, 0, compute(lw, v));
    return;
  }
  /* Memory sources through vector moves into temporaries; registers read in place. */
  tirx_tensor *tmp[4] = {NULL, NULL, NULL, NULL};
  tirx_expr *zero = tirx_int(b, 0);
  for (int i = 0; i < p->nops; i++) {
    const tirx_region *r = p->ops[i];
    if (!r->tensor || r->tensor->storage == TIRX__LOCAL) continue;
    tmp[i] = tirx__emit_alloc_local(e, i ? "src" : "out", (tirx_dtype)r->tensor->dtype, 1,
                              (int64_t[]){vec});
    if (!tmp[i]) return;
    if (i == 0) continue;
    tirx_expr *si[TIRX_BUILDER_MAX_RANK];
    tirx__lower_tensor_index(lw, r, idx, 0, si);
    vcopy(lw, tmp[i], &zero, r->tensor, si, vec, hint);
  }
  for (int64_t j = 0; j < vec; j++) {
    if (lw->pair && j + 1 < vec && lw->pair(lw, tmp, idx, j)) { /* packed math */
      j++;
      continue;
    }
    tirx_expr *v[3] = {NULL, NULL, NULL};
    tirx_expr *jx = tirx_int(b, j);
    for (int i = 1; i < p->nops; i++)
      v[i - 1] = tmp[i] ? tirx_load(b, tmp[i], 1, &jx) : tirx__lower_load(lw, p->ops[i], idx, j);
    tirx_expr *val = compute(lw, v);
    if (tmp[0])
      tirx__emit_store(e, tmp[0], 1, &jx, val);
    else
      tirx__lower_store(lw, dst, idx, j, val);
  }
  if (tmp[0]) {
    tirx_expr *di[TIRX_BUILDER_MAX_RANK];
    tirx__lower_tensor_index(lw, dst, idx, 0, di);
    vcopy(lw, dst->tensor, di, tmp[0], &zero, vec, hint);
  }
}

static int64_t fit_vec(int64_t vec, int64_t extent) {
  while (vec > 1 && extent % vec) vec /= 2;
  return vec;
}

/* The team's rank and size for work shared round-robin; false after recording why not. */
bool tirx__lower_team_share(tirx__lower *lw, tirx_expr **rank, int64_t *size) {
  tirx_builder *b = lw->b;
  tirx_team k = tirx_scope_team_kind(lw->p->scope);
  int64_t have = tirx_scope_team_size(lw->p->scope);
  int64_t full = k == TIRX_TEAM_THREAD ? 1 : k == TIRX_TEAM_WARP ? 32
                 : k == TIRX_TEAM_WARPGROUP ? 128 : k == TIRX_TEAM_CTA ? tirx__lower_threads(b) : 0;
  if (have != full) {
    tirx__lower_fail(lw, "a %s team of %lld threads (not all %lld) sharing memory-to-memory work is not "
         "lowered yet", tirx_team_name(k), (long long)have, (long long)full);
    return false;
  }
  *size = full;
  *rank = k == TIRX_TEAM_THREAD    ? tirx_int(b, 0)
          : k == TIRX_TEAM_WARP    ? tirx_lane_id(b)
          : k == TIRX_TEAM_WARPGROUP ? tirx_mod(b, tirx_thread_linear(b), tirx_int(b, 128))
                                     : tirx_thread_linear(b);
  return true;
}

tirx_status tirx__lower_elementwise(tirx__lower *lw, int64_t vec) {
  tirx_builder *b = lw->b;
  tirx__emit *e = lw->e;
  const tirx__prim_stmt *p = lw->p;
  const tirx__call *c = lw->call;
  int rank = rank_of(lw);
  const int64_t *ext = p->ops[0]->extent;
  tirx_expr *idx[TIRX_BUILDER_MAX_RANK] = {NULL};
  vec = fit_vec(vec, ext[rank - 1]);
  for (int i = 1; i < p->nops; i++) /* per-element broadcasts: one element at a time */
    if (!p->ops[i]->tensor && has_elem_index(p->ops[i]->value)) vec = 1;
  int drv = -1;
  for (int i = 0; i < p->nops && drv < 0; i++)
    if (c->operands[i].role == TIRX__ROLE_LOCAL) drv = i;
  if (drv < 0) { /* memory only: the team shares the vectors round-robin */
    tirx_expr *r;
    int64_t size;
    if (!tirx__lower_team_share(lw, &r, &size)) return b->status;
    int64_t nlast = ext[rank - 1] / vec, total = nlast;
    for (int k = 0; k + 1 < rank; k++) total *= ext[k];
    tirx_expr *f = tirx__emit_for_begin(e, "v", r, tirx_int(b, total), tirx_int(b, size),
                                  TIRX_LOOP_SERIAL);
    if (!f) return b->status;
    tirx_expr *rest = f;
    idx[rank - 1] = tirx_mul(b, tirx_mod(b, f, tirx_int(b, nlast)), tirx_int(b, vec));
    rest = tirx_div(b, rest, tirx_int(b, nlast));
    for (int k = rank - 2; k >= 0; k--) {
      idx[k] = tirx_mod(b, rest, tirx_int(b, ext[k]));
      rest = tirx_div(b, rest, tirx_int(b, ext[k]));
    }
    element_body(lw, idx, vec);
    tirx__emit_for_end(e);
    return b->status;
  }
  const tirx_layout *dl = c->operands[drv].layout;
  for (int i = 0; i < p->nops; i++)
    if (i != drv && c->operands[i].role == TIRX__ROLE_LOCAL &&
        !holds_where(dl, c->operands[i].layout))
      return tirx__lower_fail(lw, "%s is held by other threads than %s: register operands need one "
                  "placement", tirx__prim_operand_name(c->prim, i),
                  tirx__prim_operand_name(c->prim, drv));
  tirx__plan pl;
  tirx__lower_plan(dl, &pl);
  /* The vector runs over the innermost iter of the last dim: a slot iter of stride 1. */
  int vi = -1;
  if (pl.n && pl.it[pl.n - 1].dim == rank - 1 && pl.it[pl.n - 1].loop &&
      pl.it[pl.n - 1].inner == 1)
    vi = pl.n - 1;
  if (vi < 0 || pl.it[vi].stride != 1)
    vec = 1;
  else
    vec = fit_vec(vec, pl.it[vi].extent);
  /* Threads that hold no elements (a tile over part of the team) are guarded out of memory
   * accesses only: register-only work in them computes values nothing reads (stores and
   * reductions have their own guards), and an unguarded body keeps the compiler from carrying
   * every tile through the branches (layernorm at 5000 in a loop: 255 registers -> 64). */
  bool memory = false;
  for (int i = 0; i < p->nops; i++)
    memory |= c->operands[i].role == TIRX__ROLE_GLOBAL || c->operands[i].role == TIRX__ROLE_SHARED;
  tirx_expr *guard;
  if (tirx__lower_thread_digits(lw, &pl, memory, &guard) != TIRX_OK) return b->status;
  if (guard) tirx__emit_if_begin(e, guard);
  int opened = 0;
  for (int i = 0; i < pl.n; i++) {
    const tirx__plan_iter *it = &pl.it[i];
    tirx_expr *d;
    if (!it->loop) {
      d = digit_of(b, dl, it);
    } else if (i == vi && vec > 1) {
      d = tirx_mul(b, tirx__lower_loop(e, it->extent / vec, TIRX_LOOP_UNROLL), tirx_int(b, vec));
      opened++;
    } else {
      d = tirx__lower_loop(e, it->extent, TIRX_LOOP_UNROLL);
      opened++;
    }
    if (it->inner != 1) d = tirx_mul(b, d, tirx_int(b, it->inner));
    idx[it->dim] = tirx__lower_add_term(b, idx[it->dim], d);
  }
  if (b->status != TIRX_OK) return b->status;
  element_body(lw, idx, vec);
  for (int i = 0; i < opened; i++) tirx__emit_for_end(e);
  if (guard) tirx__emit_if_end(e);
  return b->status;
}

/* ---- emit hooks ---- */

tirx_status tirx__emit_elementwise(const tirx__rule *rule, const tirx__call *call,
                                   const tirx__shape *shape, void *emitter) {
  (void)rule;
  (void)call;
  return tirx__lower_elementwise(emitter, shape->v[0] > 1 ? shape->v[0] : 1);
}


