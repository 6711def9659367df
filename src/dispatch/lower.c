/*
 * Lowering of tile primitives to native IR (lower.h has what is supported). The lowering
 * calls the builder's own API with the insertion point set to the primitive's body, so what
 * it writes is validated and printed like hand-written kernel code.
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

static const char FN[] = "tirx_kernel_build";

static tirx_status fail(tirx__lower *lw, const char *fmt, ...) TIRX_PRINTF(2, 3);
static tirx_status fail(tirx__lower *lw, const char *fmt, ...) {
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

static int64_t threads_of(const tirx_builder *b) {
  return (int64_t)b->block[0] * b->block[1] * b->block[2];
}

static int64_t axis_size(const tirx_builder *b, tirx_axis axis) {
  int64_t t = threads_of(b);
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

typedef struct plan_iter {
  int dim;
  int64_t extent, stride, inner;
  tirx_axis axis;
  bool loop; /* a slot (reg/m) or broadcast iter: looped; else a digit of a coordinate */
} plan_iter;

typedef struct plan {
  const tirx_layout *l;
  int n;
  plan_iter it[TIRX_LAYOUT_MAX_ITERS];
} plan;

static void make_plan(const tirx_layout *l, plan *p) {
  p->l = l;
  p->n = 0;
  for (int k = 0; k < l->rank; k++)
    for (int j = l->dim_begin[k]; j < l->dim_begin[k + 1]; j++) {
      const tirx_iter *it = &l->d[j];
      if (it->extent == 1) continue;
      int64_t inner = 1;
      for (int q = j + 1; q < l->dim_begin[k + 1]; q++) inner *= l->d[q].extent;
      p->it[p->n++] = (plan_iter){k, it->extent, it->stride, inner, it->axis,
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
static tirx_status thread_digits(tirx__lower *lw, const plan *p, bool want_guard,
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
    if (!size) return fail(lw, "register layouts on %s are not lowered yet", an ? an : "?");
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
        return fail(lw, "the iters on %s overlap: they are not digits of the coordinate", an);
      chain = chain && its[i].stride == expect;
      expect = its[i].stride * its[i].extent;
    }
    int64_t off = tirx_layout_offset(l, (tirx_axis)ax);
    if (chain && expect == size && off == 0) continue; /* every thread holds elements */
    if (nrep) return fail(lw, "a layout replicated over part of %s is not lowered yet", an);
    if (!want_guard) continue;
    /* coord == off + sum(digit * stride) */
    tirx_expr *coord = tirx__lower_axis_coord(b, (tirx_axis)ax);
    tirx_expr *rec = tirx_int(b, off);
    for (int i = 0; i < p->n; i++) {
      const plan_iter *it = &p->it[i];
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

static tirx_expr *digit_of(tirx_builder *b, const tirx_layout *l, const plan_iter *it) {
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

static tirx_expr *add_term(tirx_builder *b, tirx_expr *sum, tirx_expr *term) {
  return sum ? tirx_add(b, sum, term) : term;
}

/* Opens an unrolled loop over [0, n) and returns its variable. Every such loop is named "i":
 * codegen gives clashing names deterministic suffixes (i, i_1, ...), so the generated source
 * depends only on the kernel, never on what else the process built before (a counter here
 * made two builds of one kernel differ, and so miss the cache). */
static tirx_expr *open_loop(tirx_builder *b, int64_t n, tirx_loop_kind kind) {
  return tirx_for_begin(b, "i", tirx_int(b, 0), tirx_int(b, n), NULL, kind);
}

/* Walks the iters of plan pl whose dim is in the mask dims: a loop iter opens an unrolled loop,
 * another is its thread digit of layout l; each, times its inner step, is added to idx of its
 * dim. Returns the loops opened (the caller closes them). */
static int walk_iters(tirx_builder *b, const tirx_layout *l, const plan *pl, uint32_t dims,
                      tirx_expr **idx) {
  int opened = 0;
  for (int i = 0; i < pl->n; i++) {
    const plan_iter *it = &pl->it[i];
    if (!(dims >> it->dim & 1)) continue;
    tirx_expr *d = it->loop ? open_loop(b, it->extent, TIRX_LOOP_UNROLL) : digit_of(b, l, it);
    opened += it->loop;
    if (it->inner != 1) d = tirx_mul(b, d, tirx_int(b, it->inner));
    idx[it->dim] = add_term(b, idx[it->dim], d);
  }
  return opened;
}

/* ---- operand access ---- */

static int rank_of(const tirx__lower *lw) { return lw->p->ops[0]->tensor->rank; }

/* The tensor index of operand r at logical idx (+ j on the last dim). */
static void tensor_index(tirx__lower *lw, const tirx_region *r, tirx_expr *const *idx,
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

static tirx_expr *load_at(tirx__lower *lw, const tirx_region *r, tirx_expr *const *idx,
                          int64_t j) {
  if (!r->tensor) return r->value;
  tirx_expr *ix[TIRX_BUILDER_MAX_RANK];
  tensor_index(lw, r, idx, j, ix);
  return tirx_load(lw->b, r->tensor, r->tensor->rank, ix);
}

void tirx__lower_tensor_index(tirx__lower *lw, const tirx_region *r, tirx_expr *const *idx,
                              int64_t j, tirx_expr **out) {
  tensor_index(lw, r, idx, j, out);
}

static void store_at(tirx__lower *lw, const tirx_region *r, tirx_expr *const *idx, int64_t j,
                     tirx_expr *v) {
  tirx_expr *ix[TIRX_BUILDER_MAX_RANK];
  tensor_index(lw, r, idx, j, ix);
  tirx_store(lw->b, r->tensor, r->tensor->rank, ix, v);
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
  tirx__stmt *s = tirx__b_lowered_native(b, fn, TIRX__NV_VCOPY);
  if (!s) return;
  int32_t bytes = (int32_t)vec * tirx_dtype_size((tirx_dtype)dt->dtype);
  if (st->storage == TIRX__GLOBAL && bytes > st->vec_bytes) st->vec_bytes = bytes;
  if (dt->storage == TIRX__GLOBAL && bytes > dt->vec_bytes) dt->vec_bytes = bytes;
  s->native.vcopy.dst.tensor = dt;
  s->native.vcopy.dst.index = idx;
  s->native.vcopy.src = src;
  s->native.vcopy.n = (int32_t)vec;
  s->native.vcopy.hints = flags;
}

/* ---- element operations ---- */

static tirx_expr *fconst(tirx_builder *b, double v, int dt) {
  return tirx_float(b, v, (tirx_dtype)dt);
}

static tirx_expr *as_type(tirx_builder *b, tirx_expr *e, int dt) {
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
  case TIRX__PRIM_FILL: return as_type(b, v[0], dt);
  case TIRX__PRIM_SELECT: return tirx_select(b, v[0], as_type(b, v[1], dt), as_type(b, v[2], dt));
  default: break;
  }
  tirx_expr *a = as_type(b, v[0], dt);
  tirx_expr *x = p->nops > 2 ? as_type(b, v[1], dt) : NULL;
  tirx_expr *y = p->nops > 3 ? as_type(b, v[2], dt) : NULL;
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
  case TIRX__PRIM_OP_LOG: return tirx_log(b, a);
  case TIRX__PRIM_OP_SQRT: return tirx_sqrt(b, a);
  case TIRX__PRIM_OP_RSQRT: return tirx_rsqrt(b, a);
  case TIRX__PRIM_OP_TANH: return tirx_tanh(b, a);
  case TIRX__PRIM_OP_SIGMOID: return tirx_math(b, TIRX_MATH_SIGMOID, a);
  case TIRX__PRIM_OP_SILU: return tirx_mul(b, a, tirx_math(b, TIRX_MATH_SIGMOID, a));
  case TIRX__PRIM_OP_GELU:
    return tirx_mul(b, tirx_mul(b, fconst(b, 0.5, dt), a),
                    tirx_add(b, fconst(b, 1.0, dt),
                             tirx_erf(b, tirx_mul(b, a, fconst(b, 0.70710678118654752, dt)))));
  case TIRX__PRIM_OP_COPY: return a;
  default: return NULL;
  }
}

/* ---- elementwise ---- */

/* Whether register operands a and b put every logical element on the same threads. */
static bool same_placement(const tirx_layout *a, const tirx_layout *b) {
  int64_t size = tirx_layout_size(a), na = tirx_layout_replica_count(a),
          nb = tirx_layout_replica_count(b);
  if (size != tirx_layout_size(b) || na != nb) return false;
  if (size > (1 << 16) || na > 1024) return true; /* too large to check here */
  tirx_coord *pa = malloc((size_t)na * sizeof *pa), *pb = malloc((size_t)nb * sizeof *pb);
  bool ok = pa && pb;
  for (int64_t x = 0; ok && x < size; x++) {
    int64_t ca = 0, cb = 0;
    if (tirx_layout_eval(a, x, pa, na, &ca) != TIRX_OK ||
        tirx_layout_eval(b, x, pb, nb, &cb) != TIRX_OK || ca != cb) {
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

/* ---- packed f16x2/bf16x2 math (pointwise.vec pack=2) ---- */

static bool half_dtype(int t) { return t == TIRX_F16 || t == TIRX_BF16; }

/* The ops with a packed helper in the prelude (tirx_x2_{f16x2,bf16x2}_<op>). */
static bool packed_op(int op) {
  switch (op) {
  case TIRX__PRIM_OP_ADD: case TIRX__PRIM_OP_SUB: case TIRX__PRIM_OP_MUL:
  case TIRX__PRIM_OP_FMA: case TIRX__PRIM_OP_MAX: case TIRX__PRIM_OP_MIN:
  case TIRX__PRIM_OP_NEG: case TIRX__PRIM_OP_ABS: case TIRX__PRIM_OP_EXP2: return true;
  default: return false;
  }
}

/*
 * Elements j and j + 1 of the vector at idx with one packed instruction (all operands f16, or
 * all bf16): sources from the
 * temporaries tmp (memory operands), in place (registers: dispatch checked that the vector is
 * consecutive slots of each), or broadcast (scalars, rounded to the dtype as per element).
 * false when the call has no packed form (nothing written).
 */
static bool packed_pair(tirx__lower *lw, tirx_tensor *const *tmp, tirx_expr *const *idx,
                        int64_t j) {
  tirx_builder *b = lw->b;
  const tirx__prim_stmt *p = lw->p;
  const tirx_region *dst = p->ops[0];
  int dt = dst->tensor->dtype;
  /* Conversions (cast f32 <-> f16/bf16, packed in dispatch's table) stay per element for now:
   * the f32-computing kernels (examples/membound.c) keep their code. */
  if (p->prim != TIRX__PRIM_UNARY && p->prim != TIRX__PRIM_BINARY &&
      p->prim != TIRX__PRIM_TERNARY)
    return false;
  if (!half_dtype(dt) || !packed_op(p->op)) return false;
  for (int i = 1; i < p->nops; i++) {
    const tirx_region *r = p->ops[i];
    if (r->tensor ? r->tensor->dtype != dt : !tirx__dtype_is_float(r->value->dtype))
      return false;
  }
  tirx_expr *src[3] = {NULL, NULL, NULL}, *jx = tirx_int(b, j);
  int pairs = 0;
  for (int i = 1; i < p->nops; i++) {
    const tirx_region *r = p->ops[i];
    if (tmp[i] || r->tensor) pairs |= 1 << (i - 1);
    src[i - 1] = tmp[i] ? tirx_load(b, tmp[i], 1, &jx)
                 : r->tensor ? load_at(lw, r, idx, j)
                             : as_type(b, r->value, dt);
  }
  tirx_tensor *t = tmp[0] ? tmp[0] : dst->tensor;
  tirx_expr *di[TIRX_BUILDER_MAX_RANK] = {jx};
  if (!tmp[0]) tensor_index(lw, dst, idx, j, di);
  tirx_expr **index = tirx__b_index_list(b, FN, t, t->rank, di);
  tirx__stmt *s =
      index && b->status == TIRX_OK ? tirx__b_lowered_native(b, FN, TIRX__NV_PACKED) : NULL;
  if (!s) return true; /* the error is recorded */
  s->native.packed.dst.tensor = t;
  s->native.packed.dst.index = index;
  for (int i = 0; i < 3; i++) s->native.packed.src[i] = src[i];
  s->native.packed.pairs = pairs;
  s->native.packed.op = p->op;
  return true;
}

/* ---- end packed math ---- */

/* The work for one vector (or element) at logical idx. */
static void element_body(tirx__lower *lw, tirx_expr *const *idx, int64_t vec) {
  tirx_builder *b = lw->b;
  const tirx__prim_stmt *p = lw->p;
  const tirx_region *dst = p->ops[0];
  int hint = p->hint;
  if (lw->element) { /* the rule's own instruction (copy_async.cp_async) */
    lw->element(lw, idx, vec);
    return;
  }
  if (vec > 1 && p->prim == TIRX__PRIM_COPY) {
    tirx_expr *di[TIRX_BUILDER_MAX_RANK], *si[TIRX_BUILDER_MAX_RANK];
    tensor_index(lw, dst, idx, 0, di);
    tensor_index(lw, p->ops[1], idx, 0, si);
    vcopy(lw, dst->tensor, di, p->ops[1]->tensor, si, vec, hint);
    return;
  }
  if (vec == 1) {
    tirx_expr *v[3] = {NULL, NULL, NULL};
    for (int i = 1; i < p->nops; i++) v[i - 1] = load_at(lw, p->ops[i], idx, 0);
    store_at(lw, dst, idx, 0, compute(lw, v));
    return;
  }
  /* Memory sources through vector moves into temporaries; registers read in place. */
  tirx_tensor *tmp[4] = {NULL, NULL, NULL, NULL};
  tirx_expr *zero = tirx_int(b, 0);
  for (int i = 0; i < p->nops; i++) {
    const tirx_region *r = p->ops[i];
    if (!r->tensor || r->tensor->storage == TIRX__LOCAL) continue;
    tmp[i] = tirx_alloc_local(b, i ? "src" : "out", (tirx_dtype)r->tensor->dtype, 1,
                              (int64_t[]){vec}, NULL);
    if (!tmp[i]) return;
    if (i == 0) continue;
    tirx_expr *si[TIRX_BUILDER_MAX_RANK];
    tensor_index(lw, r, idx, 0, si);
    vcopy(lw, tmp[i], &zero, r->tensor, si, vec, hint);
  }
  for (int64_t j = 0; j < vec; j++) {
    if (lw->pack == 2 && j + 1 < vec && packed_pair(lw, tmp, idx, j)) { /* packed math */
      j++;
      continue;
    }
    tirx_expr *v[3] = {NULL, NULL, NULL};
    tirx_expr *jx = tirx_int(b, j);
    for (int i = 1; i < p->nops; i++)
      v[i - 1] = tmp[i] ? tirx_load(b, tmp[i], 1, &jx) : load_at(lw, p->ops[i], idx, j);
    tirx_expr *val = compute(lw, v);
    if (tmp[0])
      tirx_store(b, tmp[0], 1, &jx, val);
    else
      store_at(lw, dst, idx, j, val);
  }
  if (tmp[0]) {
    tirx_expr *di[TIRX_BUILDER_MAX_RANK];
    tensor_index(lw, dst, idx, 0, di);
    vcopy(lw, dst->tensor, di, tmp[0], &zero, vec, hint);
  }
}

static int64_t fit_vec(int64_t vec, int64_t extent) {
  while (vec > 1 && extent % vec) vec /= 2;
  return vec;
}

/* The team's rank and size for work shared round-robin; false after recording why not. */
static bool team_share(tirx__lower *lw, tirx_expr **rank, int64_t *size) {
  tirx_builder *b = lw->b;
  tirx_team k = tirx_scope_team_kind(lw->p->scope);
  int64_t have = tirx_scope_team_size(lw->p->scope);
  int64_t full = k == TIRX_TEAM_THREAD ? 1 : k == TIRX_TEAM_WARP ? 32
                 : k == TIRX_TEAM_WARPGROUP ? 128 : k == TIRX_TEAM_CTA ? threads_of(b) : 0;
  if (have != full) {
    fail(lw, "a %s team of %lld threads (not all %lld) sharing memory-to-memory work is not "
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
  const tirx__prim_stmt *p = lw->p;
  const tirx__call *c = lw->call;
  int rank = rank_of(lw);
  const int64_t *ext = p->ops[0]->extent;
  tirx_expr *idx[TIRX_BUILDER_MAX_RANK] = {NULL};
  vec = fit_vec(vec, ext[rank - 1]);
  int drv = -1;
  for (int i = 0; i < p->nops && drv < 0; i++)
    if (c->operands[i].role == TIRX__ROLE_LOCAL) drv = i;
  if (drv < 0) { /* memory only: the team shares the vectors round-robin */
    tirx_expr *r;
    int64_t size;
    if (!team_share(lw, &r, &size)) return b->status;
    int64_t nlast = ext[rank - 1] / vec, total = nlast;
    for (int k = 0; k + 1 < rank; k++) total *= ext[k];
    tirx_expr *f = tirx_for_begin(b, "v", r, tirx_int(b, total), tirx_int(b, size),
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
    tirx_for_end(b);
    return b->status;
  }
  const tirx_layout *dl = c->operands[drv].layout;
  for (int i = 0; i < p->nops; i++)
    if (i != drv && c->operands[i].role == TIRX__ROLE_LOCAL &&
        !same_placement(dl, c->operands[i].layout))
      return fail(lw, "%s is held by other threads than %s: register operands need one "
                  "placement", tirx__prim_operand_name(c->prim, i),
                  tirx__prim_operand_name(c->prim, drv));
  plan pl;
  make_plan(dl, &pl);
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
  if (thread_digits(lw, &pl, memory, &guard) != TIRX_OK) return b->status;
  if (guard) tirx_if_begin(b, guard);
  int opened = 0;
  for (int i = 0; i < pl.n; i++) {
    const plan_iter *it = &pl.it[i];
    tirx_expr *d;
    if (!it->loop) {
      d = digit_of(b, dl, it);
    } else if (i == vi && vec > 1) {
      d = tirx_mul(b, open_loop(b, it->extent / vec, TIRX_LOOP_UNROLL), tirx_int(b, vec));
      opened++;
    } else {
      d = open_loop(b, it->extent, TIRX_LOOP_UNROLL);
      opened++;
    }
    if (it->inner != 1) d = tirx_mul(b, d, tirx_int(b, it->inner));
    idx[it->dim] = add_term(b, idx[it->dim], d);
  }
  if (b->status != TIRX_OK) return b->status;
  element_body(lw, idx, vec);
  for (int i = 0; i < opened; i++) tirx_for_end(b);
  if (guard) tirx_if_end(b);
  return b->status;
}

/* ---- reduce ---- */

static tirx_expr *identity(tirx_builder *b, int op, int dt) {
  bool fl = tirx__dtype_is_float(dt);
  switch (op) {
  case TIRX__PRIM_OP_PROD: return fl ? fconst(b, 1.0, dt) : tirx_int_typed(b, 1, (tirx_dtype)dt);
  case TIRX__PRIM_OP_MAX:
    if (fl) return fconst(b, -__builtin_inf(), dt);
    return tirx_int_typed(b, dt == TIRX_I64 ? INT64_MIN : dt == TIRX_U32 ? 0 : INT32_MIN,
                          (tirx_dtype)dt);
  case TIRX__PRIM_OP_MIN:
    if (fl) return fconst(b, __builtin_inf(), dt);
    return tirx_int_typed(b, dt == TIRX_I64 ? INT64_MAX : dt == TIRX_U32 ? UINT32_MAX : INT32_MAX,
                          (tirx_dtype)dt);
  default: return fl ? fconst(b, 0.0, dt) : tirx_int_typed(b, 0, (tirx_dtype)dt);
  }
}

static tirx_expr *combine(tirx_builder *b, int op, tirx_expr *x, tirx_expr *y) {
  switch (op) {
  case TIRX__PRIM_OP_PROD: return tirx_mul(b, x, y);
  case TIRX__PRIM_OP_MAX: return tirx_max(b, x, y);
  case TIRX__PRIM_OP_MIN: return tirx_min(b, x, y);
  default: return tirx_add(b, x, y);
  }
}

tirx_status tirx__lower_reduce(tirx__lower *lw, int64_t lane_mask) {
  tirx_builder *b = lw->b;
  const tirx__prim_stmt *p = lw->p;
  const tirx__call *c = lw->call;
  const tirx_region *dst = p->ops[0], *src = p->ops[1];
  if (c->operands[1].role != TIRX__ROLE_LOCAL || c->operands[0].role != TIRX__ROLE_LOCAL)
    return fail(lw, "reductions between memory operands are not lowered yet (registers only)");
  int op = p->op, srank = src->tensor->rank;
  int at = tirx__dtype_is_float(dst->tensor->dtype) &&
                   (dst->tensor->dtype == TIRX_F64 || src->tensor->dtype == TIRX_F64)
               ? TIRX_F64
           : tirx__dtype_is_float(dst->tensor->dtype) ? TIRX_F32
                                                       : dst->tensor->dtype;
  const tirx_layout *sl = c->operands[1].layout;
  plan pl;
  make_plan(sl, &pl);
  tirx_expr *guard;
  if (thread_digits(lw, &pl, false, &guard) != TIRX_OK) return b->status;
  tirx_expr *idx[TIRX_BUILDER_MAX_RANK] = {NULL};
  /* Kept dims: digits and outer loops; then the accumulator; then the reduced dims. */
  int opened = 0;
  for (int pass = 0; pass < 2; pass++) {
    if (pass == 1) {
      tirx_expr *acc = tirx_var(b, "acc", (tirx_dtype)at, identity(b, op, at));
      if (!acc) return b->status;
      int inner = walk_iters(b, sl, &pl, p->axes, idx);
      tirx_expr *v = as_type(b, load_at(lw, src, idx, 0), at);
      if (op == TIRX__PRIM_OP_SUMSQ) v = tirx_mul(b, v, v);
      tirx_assign(b, acc, combine(b, op, acc, v));
      for (int i = 0; i < inner; i++) tirx_for_end(b);
      for (int bit = 1; bit < 32; bit <<= 1)
        if (lane_mask & bit)
          tirx_assign(b, acc, combine(b, op, acc, tirx_shfl_xor(b, acc, tirx_int(b, bit))));
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
      if (p->accumulate) res = combine(b, op, as_type(b, load_at(lw, dst, di, 0), at), acc);
      store_at(lw, dst, di, 0, as_type(b, res, dst->tensor->dtype));
      break;
    }
    opened += walk_iters(b, sl, &pl, ~p->axes, idx);
  }
  for (int i = 0; i < opened; i++) tirx_for_end(b);
  return b->status;
}

/* ---- emit hooks ---- */

tirx_status tirx__emit_elementwise(const tirx__rule *rule, const tirx__call *call,
                                   const tirx__shape *shape, void *emitter) {
  (void)rule;
  (void)call;
  ((tirx__lower *)emitter)->pack = shape->v[1]; /* packed math: pointwise.vec's pack */
  return tirx__lower_elementwise(emitter, shape->v[0] > 1 ? shape->v[0] : 1);
}

tirx_status tirx__emit_reduce_shuffle(const tirx__rule *rule, const tirx__call *call,
                                      const tirx__shape *shape, void *emitter) {
  (void)rule;
  (void)shape;
  /* The lane bits the butterfly flips: those of the reduced laneid iters (reduce_warp.c). */
  const tirx_layout *src = tirx_layout_canonicalize(((tirx__lower *)emitter)->arena,
                                                    call->operands[1].layout);
  if (!src) return tirx_last_status();
  int64_t mask = 0;
  for (int k = 0; k < src->rank; k++) {
    if (!(call->config.reduce_axes >> k & 1)) continue;
    for (int i = src->dim_begin[k]; i < src->dim_begin[k + 1]; i++)
      if (src->d[i].axis == TIRX_AXIS_LANEID && src->d[i].stride != 0 && src->d[i].extent > 1)
        mask |= (src->d[i].extent - 1) * src->d[i].stride;
  }
  return tirx__lower_reduce(emitter, mask);
}

tirx_status tirx__emit_reduce_scalar(const tirx__rule *rule, const tirx__call *call,
                                     const tirx__shape *shape, void *emitter) {
  (void)rule;
  (void)call;
  (void)shape;
  return tirx__lower_reduce(emitter, 0);
}

/* ---- reduce through shared memory (reduce.smem) ---- */

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
  if (p->accumulate) res = combine(b, p->op, as_type(b, load_at(lw, dst, di, 0), at), acc);
  store_at(lw, dst, di, 0, as_type(b, res, dst->tensor->dtype));
}

/* Opens the unrolled loops of the kept dims of src (plan pl) and sets idx and kflat, the
 * kept index flattened over src's kept extents; returns the loops opened. */
static int open_kept(tirx__lower *lw, const plan *pl, tirx_expr **idx, tirx_expr **kflat) {
  tirx_builder *b = lw->b;
  const tirx__prim_stmt *p = lw->p;
  const tirx_region *src = p->ops[1];
  int opened = 0;
  for (int i = 0; i < pl->n; i++) {
    const plan_iter *it = &pl->it[i];
    if (p->axes >> it->dim & 1) continue;
    tirx_expr *d = open_loop(b, it->extent, TIRX_LOOP_UNROLL);
    opened++;
    if (it->inner != 1) d = tirx_mul(b, d, tirx_int(b, it->inner));
    idx[it->dim] = add_term(b, idx[it->dim], d);
  }
  *kflat = tirx_int(b, 0);
  for (int k = 0; k < src->tensor->rank; k++)
    if (!(p->axes >> k & 1))
      *kflat = tirx_add(b, tirx_mul(b, *kflat, tirx_int(b, src->extent[k])),
                        idx[k] ? idx[k] : tirx_int(b, 0));
  return opened;
}

static tirx_status reduce_smem(tirx__lower *lw, bool cluster);

tirx_status tirx__lower_reduce_smem(tirx__lower *lw) { return reduce_smem(lw, false); }

/*
 * reduce.dsmem: as reduce.smem within each CTA (reduced iters on cbx are left to the last
 * step), then thread 0 of every CTA stores its CTA's partial into its own slot
 * [kept][rank] of a shared scratch in every CTA of the cluster (mapa + st.shared::cluster);
 * a cluster barrier (arrive.release, wait.acquire) publishes them; every thread folds the
 * slots in rank order, so all CTAs get the same bits. Inside a for loop, a second cluster
 * barrier keeps a peer from writing the slots of the next iteration before every CTA has read
 * this one's; a call outside loops ends at the fold.
 * The reduced cbx iters must cover the whole cluster (one dimension of x CTAs).
 */
tirx_status tirx__lower_reduce_dsmem(tirx__lower *lw) { return reduce_smem(lw, true); }

static tirx_status reduce_smem(tirx__lower *lw, bool cluster) {
  tirx_builder *b = lw->b;
  tirx__prim_stmt *p = lw->p;
  const tirx__call *c = lw->call;
  const tirx_region *dst = p->ops[0], *src = p->ops[1];
  int op = p->op;
  int64_t threads = threads_of(b), csize = 1;
  tirx_team team = tirx_scope_team_kind(p->scope);
  bool wg = team == TIRX_TEAM_WARPGROUP;
  if (cluster) {
    if (!b->cluster[0] || b->cluster[1] != 1 || b->cluster[2] != 1)
      return fail(lw, "a cluster reduction needs a cluster of x CTAs (tirx_set_cluster(b, x, 1, "
                      "1)), got %d x %d x %d",
                  b->cluster[0], b->cluster[1], b->cluster[2]);
    csize = b->cluster[0];
  }
  if (threads % 32 || (wg && threads % 128))
    return fail(lw, "a block of %lld threads is not whole %s", (long long)threads,
                wg ? "warpgroups" : "warps");
  /* The builder's scope models one CTA (its cluster teams are one CTA wide): cluster or not,
   * every thread of the CTA takes part. */
  if (tirx_scope_num_threads(p->scope) != threads)
    return fail(lw, cluster ? "every thread of the cluster must take part (its barriers are "
                              "__syncthreads and barrier.cluster)"
                            : "every thread of the CTA must take part (its barriers are "
                              "__syncthreads)");
  int dt = dst->tensor->dtype;
  int at = !tirx__dtype_is_float(dt) ? (tirx_dtype_size((tirx_dtype)dt) < 4 ? TIRX_I32 : dt)
           : (dt == TIRX_F64 || src->tensor->dtype == TIRX_F64) ? TIRX_F64 : TIRX_F32;
  plan pl;
  make_plan(c->operands[1].layout, &pl);
  tirx_expr *guard;
  if (thread_digits(lw, &pl, true, &guard) != TIRX_OK) return b->status;
  /* The reduced thread bits, on the team's linear thread index; kept dims on registers. */
  int64_t bits = 0, nkept = 1, ctas = 1;
  for (int i = 0; i < pl.n; i++) {
    const plan_iter *it = &pl.it[i];
    bool red = p->axes >> it->dim & 1;
    if (!red) {
      if (!it->loop) return fail(lw, "a kept dim on a thread axis is not lowered yet");
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
    if (s < 0 || (!pow2 && !guard))
      return fail(lw, "reduced iters on %s with extent %lld, stride %lld are not lowered yet",
                  tirx_axis_name(it->axis), (long long)it->extent, (long long)it->stride);
    int64_t span = (it->extent - 1) * it->stride * s, m = 1; /* guarded: the bits it spans */
    while (m <= span) m <<= 1;
    bits |= pow2 ? span : m - 1;
  }
  if (cluster && ctas != csize)
    return fail(lw, "the reduced iters on cbx span %lld CTAs, expected the cluster's %lld",
                (long long)ctas, (long long)csize);
  if (cluster && at != TIRX_F32)
    return fail(lw, "a cluster reduction accumulates in %s, expected f32",
                tirx_dtype_name((tirx_dtype)at));
  int64_t lane_bits = bits & 31, nwarps = (wg ? 128 : threads) / 32;
  if (guard && lane_bits) lane_bits = 31; /* lanes that hold nothing add the identity */
  else if (guard && bits >> 5) return fail(lw, "a guarded layout without lane iters is not lowered yet");
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
  tirx_expr *lane = cross ? tirx_let(b, "lane", tirx_lane_id(b)) : NULL;
  tirx_expr *grp = cross && wg ? tirx_let(b, "wg", tirx__lower_axis_coord(b, TIRX_AXIS_WGID))
                               : tirx_int(b, 0);
  tirx_expr *wslot = cross ? tirx_let(b, "wslot", wg ? tirx__lower_axis_coord(b, TIRX_AXIS_WID_IN_WG)
                                                     : tirx_warp_id(b))
                           : NULL;
  if (cluster && !p->dscratch) {
    char name[32];
    snprintf(name, sizeof name, "red%d_dsmem", (int)p->number);
    p->dscratch = tirx_alloc_shared(b, name, TIRX_F32, TIRX_DIMS(nkept, csize), NULL);
    if (!p->dscratch) return b->status;
  }
  tirx_expr *rank = cluster ? tirx_let(b, "rank", tirx_cluster_ctarank(b)) : NULL;
  for (int pass = 0; pass < (cross ? 2 : 1); pass++) {
    tirx_expr *idx[TIRX_BUILDER_MAX_RANK] = {NULL}, *kflat; /* the kept index: unrolled loops */
    int opened = open_kept(lw, &pl, idx, &kflat);
    tirx_expr *acc = tirx_var(b, "acc", (tirx_dtype)at, identity(b, op, at));
    if (!acc) return b->status;
    if (pass == 0) {
      if (guard) tirx_if_begin(b, guard);
      tirx_expr *ridx[TIRX_BUILDER_MAX_RANK];
      memcpy(ridx, idx, sizeof ridx);
      int inner = walk_iters(b, c->operands[1].layout, &pl, p->axes, ridx);
      tirx_expr *v = as_type(b, load_at(lw, src, ridx, 0), at);
      if (op == TIRX__PRIM_OP_SUMSQ) v = tirx_mul(b, v, v);
      tirx_assign(b, acc, combine(b, op, acc, v));
      for (int i = 0; i < inner; i++) tirx_for_end(b);
      if (guard) tirx_if_end(b);
      for (int bit = 1; bit < 32; bit <<= 1)
        if (lane_bits & bit)
          tirx_assign(b, acc, combine(b, op, acc, tirx_shfl_xor(b, acc, tirx_int(b, bit))));
    } else { /* lane w folds warp w's partial */
      tirx_if_begin(b, tirx_lt(b, lane, tirx_int(b, nwarps)));
      tirx_assign(b, acc, tirx_load(b, p->scratch, TIRX_EXPRS(grp, kflat, lane)));
      tirx_if_end(b);
      for (int bit = 1; bit < 32; bit <<= 1) /* lanes past nwarps hold the identity */
        tirx_assign(b, acc, combine(b, op, acc, tirx_shfl_xor(b, acc, tirx_int(b, bit))));
    }
    if (pass == 0 && cross) {
      tirx_if_begin(b, tirx_eq(b, lane, tirx_int(b, 0)));
      tirx_store(b, p->scratch, TIRX_EXPRS(grp, kflat, wslot), acc);
      tirx_if_end(b);
    } else if (cluster) { /* the CTA's partial into slot [kept][rank] of every CTA */
      tirx_if_begin(b, tirx_eq(b, tirx_thread_linear(b), tirx_int(b, 0)));
      tirx_expr *r = open_loop(b, csize, TIRX_LOOP_UNROLL);
      tirx__dsmem_store(b, p->dscratch, (tirx_expr *[]){kflat, rank}, r, acc);
      tirx_for_end(b);
      tirx_if_end(b);
    } else {
      store_result(lw, idx, acc, at);
    }
    for (int i = 0; i < opened; i++) tirx_for_end(b);
    if (cross && !(cluster && pass == 1)) tirx_sync_threads(b); /* cluster: its barrier */
  }
  if (!cluster) return b->status;
  tirx__cluster_sync(b); /* the peers' stores are visible */
  tirx_expr *idx[TIRX_BUILDER_MAX_RANK] = {NULL}, *kflat;
  int opened = open_kept(lw, &pl, idx, &kflat);
  tirx_expr *acc = tirx_var(b, "acc", (tirx_dtype)at, identity(b, op, at));
  if (!acc) return b->status;
  for (int64_t r = 0; r < csize; r++) /* rank order: every CTA folds the same bits */
    tirx_assign(b, acc, combine(b, op, acc, tirx_load(b, p->dscratch,
                                                      TIRX_EXPRS(kflat, tirx_int(b, r)))));
  store_result(lw, idx, acc, at);
  for (int i = 0; i < opened; i++) tirx_for_end(b);
  /* In a loop, every CTA must have read its slots before a peer writes them again. Run once,
   * the call needs no second barrier: every DSMEM store into a CTA precedes its peer's
   * arrive.release, so it is done when that CTA's wait returns, and no CTA touches a peer
   * afterwards (push, not pull), so each may go on or exit; each call has its own scratch. */
  if (lw->loops) tirx__cluster_sync(b);
  return b->status;
}

tirx_status tirx__emit_reduce_smem(const tirx__rule *rule, const tirx__call *call,
                                   const tirx__shape *shape, void *emitter) {
  (void)rule;
  (void)call;
  (void)shape;
  return tirx__lower_reduce_smem(emitter);
}

tirx_status tirx__emit_reduce_dsmem(const tirx__rule *rule, const tirx__call *call,
                                    const tirx__shape *shape, void *emitter) {
  (void)rule;
  (void)call;
  (void)shape;
  return tirx__lower_reduce_dsmem(emitter);
}

/* ---- ldmatrix / stmatrix (copy.ldmatrix, copy.stmatrix) ---- */

/*
 * The register tile's 8x8 blocks, row-major, go num at a time into one instruction (an
 * unrolled residual loop over the instructions when there are several). For instruction g,
 * lanes 8i..8i+7 give the row addresses of block g*num + i (lanes past 8*num repeat them: their
 * addresses are ignored but stay in bounds); register i of every lane is block g*num + i's, at
 * the register slots its fragment puts it (check_matrix proved lane l holds row l/4, columns
 * 2*(l%4)+{0,1} of every block, at a slot of that block's and the next). The local array is
 * addressed at the block's corner: its slots do not depend on the lane, so they are constants
 * once the loop is unrolled.
 */
tirx_status tirx__lower_matrix(tirx__lower *lw, int64_t num, bool store) {
  tirx_builder *b = lw->b;
  const tirx__prim_stmt *p = lw->p;
  const tirx_region *reg = p->ops[store ? 1 : 0], *sm = p->ops[store ? 0 : 1];
  if (!reg->tensor || !sm->tensor || reg->tensor->rank != 2 || sm->tensor->rank != 2)
    return fail(lw, "operands of rank other than 2 are not lowered yet");
  if (num != 1 && num != 2 && num != 4) return fail(lw, "num=%lld is not 1, 2 or 4", (long long)num);
  int64_t rows = reg->extent[0], cols = reg->extent[1];
  if (rows % 8 || cols % 8 || sm->extent[0] != rows || sm->extent[1] != cols)
    return fail(lw, "the tile is not made of 8x8 matrices");
  int64_t cb = cols / 8, nblk = rows / 8 * cb;
  if (nblk % num) return fail(lw, "%lld matrices are not a multiple of %lld", (long long)nblk,
                              (long long)num);
  int64_t ninstr = nblk / num;
  tirx_expr *lane = tirx_let(b, "lane", tirx_lane_id(b));
  tirx_expr *g = ninstr > 1 ? open_loop(b, ninstr, TIRX_LOOP_UNROLL) : NULL;
  if (b->status != TIRX_OK) return b->status;
  tirx_expr *base = g && num > 1 ? tirx_mul(b, g, tirx_int(b, num)) : g;
  /* This lane's row address: row lane%8 of block base + (lane/8)%num. */
  tirx_expr *mine = num > 1 ? tirx_bit_and(b, tirx_shr(b, lane, tirx_int(b, 3)), tirx_int(b, num - 1))
                            : NULL;
  tirx_expr *j = base && mine ? tirx_add(b, base, mine) : base ? base : mine;
  tirx_expr *r8 = tirx_bit_and(b, lane, tirx_int(b, 7));
  tirx_expr *sidx[2];
  if (!j) {
    sidx[0] = r8;
    sidx[1] = NULL;
  } else {
    sidx[0] = cb == 1 ? tirx_mul(b, j, tirx_int(b, 8))
                      : tirx_mul(b, tirx_div(b, j, tirx_int(b, cb)), tirx_int(b, 8));
    sidx[0] = tirx_add(b, sidx[0], r8);
    sidx[1] = cb == 1 ? NULL : tirx_mul(b, tirx_mod(b, j, tirx_int(b, cb)), tirx_int(b, 8));
  }
  tirx_expr *six[2];
  tensor_index(lw, sm, sidx, 0, six);
  tirx_expr **index = tirx__b_index_list(b, FN, sm->tensor, 2, six);
  tirx_expr **regs = tirx__arena_array(b->arena, (size_t)num, sizeof *regs, FN);
  if (!index || !regs) return b->status != TIRX_OK ? b->status : tirx__b_fail(b, TIRX_E_NO_MEMORY, "%s: out of memory", FN);
  for (int64_t i = 0; i < num; i++) {
    /* Block base + i, at its corner. */
    tirx_expr *ridx[2];
    if (base) {
      tirx_expr *ji = i ? tirx_add(b, base, tirx_int(b, i)) : base;
      ridx[0] = tirx_mul(b, tirx_div(b, ji, tirx_int(b, cb)), tirx_int(b, 8));
      ridx[1] = tirx_mul(b, tirx_mod(b, ji, tirx_int(b, cb)), tirx_int(b, 8));
    } else {
      ridx[0] = tirx_int(b, i / cb * 8);
      ridx[1] = tirx_int(b, i % cb * 8);
    }
    regs[i] = load_at(lw, reg, ridx, 0);
    if (!regs[i]) return b->status;
  }
  tirx__stmt *s =
      tirx__b_lowered_native(b, FN, store ? TIRX__NV_STMATRIX : TIRX__NV_LDMATRIX);
  if (!s) return b->status;
  s->native.matrix.row.tensor = sm->tensor;
  s->native.matrix.row.index = index;
  s->native.matrix.regs = regs;
  s->native.matrix.n = (int32_t)num;
  if (g) tirx_for_end(b);
  return b->status;
}

/*
 * ldmatrix/stmatrix at warpgroup scope (on a tid_in_wg tile): warp 0's blocks
 * (tirx__matrix_wg_blocks), num per instruction, unrolled; lanes 8i..8i+7 address rows of
 * block g*num + i of their warp (warp w's rows are w * rows_per_warp further down), and every
 * register operand is the block's corner in the local array (its slots do not depend on the
 * lane or the warp).
 */
/* This lane's block's row (or column: field) among m[0..num): m[q]'s, as q * step + m[0]'s
 * when they are evenly spaced, as m[0]'s + (q & 1) * c + (q >> 1) * r for four blocks on a
 * 2x2 grid (the wgmma A fragment of one k16 step: c = 8 columns, r = 8 rows), else a select
 * chain. */
static tirx_expr *wg_coord(tirx_builder *b, tirx_expr *q, const tirx__matrix_block *m,
                           int64_t num, size_t field) {
  int64_t v[4] = {0, 0, 0, 0};
  for (int64_t i = 0; i < num; i++) memcpy(&v[i], (const char *)&m[i] + field, sizeof v[i]);
  bool even = true;
  for (int64_t i = 2; i < num; i++) even &= v[i] - v[i - 1] == v[1] - v[0];
  if (num == 1 || (even && v[1] == v[0])) return tirx_int(b, v[0]);
  if (even) return tirx_add(b, tirx_mul(b, q, tirx_int(b, v[1] - v[0])), tirx_int(b, v[0]));
  if (num == 4 && v[3] - v[2] == v[1] - v[0]) {
    tirx_expr *t[3] = {
        v[2] != v[0] ? tirx_mul(b, tirx_shr(b, q, tirx_int(b, 1)), tirx_int(b, v[2] - v[0])) : NULL,
        v[1] != v[0] ? tirx_mul(b, tirx_bit_and(b, q, tirx_int(b, 1)), tirx_int(b, v[1] - v[0]))
                     : NULL,
        v[0] ? tirx_int(b, v[0]) : NULL};
    tirx_expr *e = NULL;
    for (int i = 0; i < 3; i++)
      if (t[i]) e = e ? tirx_add(b, e, t[i]) : t[i];
    return e ? e : tirx_int(b, 0);
  }
  tirx_expr *e = tirx_int(b, v[num - 1]);
  for (int64_t i = num - 2; i >= 0; i--)
    e = tirx_select(b, tirx_eq(b, q, tirx_int(b, i)), tirx_int(b, v[i]), e);
  return e;
}

static tirx_status lower_matrix_wg(tirx__lower *lw, int64_t num, bool store) {
  tirx_builder *b = lw->b;
  const tirx__prim_stmt *p = lw->p;
  int ri = store ? 1 : 0;
  const tirx_region *reg = p->ops[ri], *sm = p->ops[1 - ri];
  int64_t rows = reg->extent[0], cols = reg->extent[1], step = 0;
  int n = 0, cap = (int)(rows / 8 * (cols / 8));
  const char *why = NULL;
  tirx__matrix_block *blk = tirx__arena_array(lw->arena, (size_t)cap, sizeof *blk, FN);
  if (!blk || !tirx__matrix_wg_blocks(lw->arena, lw->call->operands[ri].layout, blk, cap, &n,
                                      &step, &why))
    return fail(lw, "%s", why ? why : "out of memory");
  tirx_expr *lane = tirx_let(b, "lane", tirx_lane_id(b));
  tirx_expr *wid = tirx__lower_axis_coord(b, TIRX_AXIS_WID_IN_WG);
  tirx_expr *wrow = tirx_let(b, "wrow", tirx_mul(b, wid, tirx_int(b, step)));
  tirx_expr *q =
      num > 1 ? tirx_bit_and(b, tirx_shr(b, lane, tirx_int(b, 3)), tirx_int(b, num - 1)) : NULL;
  tirx_expr *r8 = tirx_bit_and(b, lane, tirx_int(b, 7));
  for (int64_t g = 0; g < n / num && b->status == TIRX_OK; g++) {
    const tirx__matrix_block *m = &blk[g * num];
    tirx_expr *row = wg_coord(b, q, m, num, offsetof(tirx__matrix_block, row));
    tirx_expr *col = wg_coord(b, q, m, num, offsetof(tirx__matrix_block, col));
    tirx_expr *sidx[2] = {tirx_add(b, tirx_add(b, row, r8), wrow), col}, *six[2];
    tensor_index(lw, sm, sidx, 0, six);
    tirx_expr **index = tirx__b_index_list(b, FN, sm->tensor, 2, six);
    tirx_expr **regs = tirx__arena_array(b->arena, (size_t)num, sizeof *regs, FN);
    if (!index || !regs)
      return b->status != TIRX_OK ? b->status
                                  : tirx__b_fail(b, TIRX_E_NO_MEMORY, "%s: out of memory", FN);
    for (int64_t i = 0; i < num; i++) {
      tirx_expr *ridx[2] = {tirx_int(b, m[i].row), tirx_int(b, m[i].col)};
      regs[i] = load_at(lw, reg, ridx, 0);
    }
    tirx__stmt *s = b->status == TIRX_OK ? tirx__b_lowered_native(
                                               b, FN, store ? TIRX__NV_STMATRIX : TIRX__NV_LDMATRIX)
                                         : NULL;
    if (!s) return b->status;
    s->native.matrix.row.tensor = sm->tensor;
    s->native.matrix.row.index = index;
    s->native.matrix.regs = regs;
    s->native.matrix.n = (int32_t)num;
  }
  return b->status;
}

tirx_status tirx__emit_ldmatrix(const tirx__rule *rule, const tirx__call *call,
                                const tirx__shape *shape, void *emitter) {
  (void)rule;
  if (tirx_scope_team_kind(call->scope) == TIRX_TEAM_WARPGROUP)
    return lower_matrix_wg(emitter, shape->v[0], false);
  return tirx__lower_matrix(emitter, shape->v[0], false);
}

tirx_status tirx__emit_stmatrix(const tirx__rule *rule, const tirx__call *call,
                                const tirx__shape *shape, void *emitter) {
  (void)rule;
  if (tirx_scope_team_kind(call->scope) == TIRX_TEAM_WARPGROUP)
    return lower_matrix_wg(emitter, shape->v[0], true);
  return tirx__lower_matrix(emitter, shape->v[0], true);
}

/* ---- end ldmatrix / stmatrix ---- */

/* ---- gemm.scalar ---- */

/* d[idx] = [d[idx] +] sum_k a[i, k] * b[k, j], summed in f32 (f64 when an operand is). */
static void gemm_dot(tirx__lower *lw, tirx_expr *const *idx) {
  tirx_builder *b = lw->b;
  const tirx__prim_stmt *p = lw->p;
  const tirx_region *d = p->ops[0], *a = p->ops[1], *bm = p->ops[2];
  int at = TIRX_F32;
  for (int i = 0; i < 3; i++)
    if (p->ops[i]->tensor->dtype == TIRX_F64) at = TIRX_F64;
  tirx_expr *old = as_type(b, load_at(lw, d, idx, 0), at);
  tirx_expr *init = p->scale_d ? tirx_select(b, p->scale_d, old, fconst(b, 0.0, at)) : old;
  tirx_expr *acc = tirx_var(b, "acc", (tirx_dtype)at, init);
  tirx_expr *kk = tirx_for_begin(b, "kk", tirx_int(b, 0), tirx_int(b, a->extent[1]), NULL,
                                 TIRX_LOOP_SERIAL);
  if (!acc || !kk) return;
  tirx_expr *ai[2] = {idx[0], kk}, *bi[2] = {kk, idx[1]};
  tirx_assign(b, acc, tirx_add(b, acc, tirx_mul(b, as_type(b, load_at(lw, a, ai, 0), at),
                                                as_type(b, load_at(lw, bm, bi, 0), at))));
  tirx_for_end(b);
  store_at(lw, d, idx, 0, as_type(b, acc, d->tensor->dtype));
}

/*
 * Each element of d once: d local, every thread walks the elements it holds (the plan of the
 * elementwise lowering); d in memory, the team shares them round-robin.
 */
tirx_status tirx__emit_gemm_scalar(const tirx__rule *rule, const tirx__call *call,
                                   const tirx__shape *shape, void *emitter) {
  (void)rule;
  (void)shape;
  tirx__lower *lw = emitter;
  tirx_builder *b = lw->b;
  const int64_t *ext = lw->p->ops[0]->extent;
  tirx_expr *idx[TIRX_BUILDER_MAX_RANK] = {NULL};
  if (call->operands[0].role != TIRX__ROLE_LOCAL) {
    tirx_expr *r;
    int64_t size;
    if (!team_share(lw, &r, &size)) return b->status;
    tirx_expr *f = tirx_for_begin(b, "e", r, tirx_int(b, ext[0] * ext[1]), tirx_int(b, size),
                                  TIRX_LOOP_SERIAL);
    if (!f) return b->status;
    idx[0] = tirx_div(b, f, tirx_int(b, ext[1]));
    idx[1] = tirx_mod(b, f, tirx_int(b, ext[1]));
    gemm_dot(lw, idx);
    tirx_for_end(b);
    return b->status;
  }
  const tirx_layout *dl = call->operands[0].layout;
  plan pl;
  make_plan(dl, &pl);
  tirx_expr *guard;
  if (thread_digits(lw, &pl, true, &guard) != TIRX_OK) return b->status;
  if (guard) tirx_if_begin(b, guard);
  int opened = walk_iters(b, dl, &pl, ~0u, idx);
  if (b->status != TIRX_OK) return b->status;
  gemm_dot(lw, idx);
  for (int i = 0; i < opened; i++) tirx_for_end(b);
  if (guard) tirx_if_end(b);
  return b->status;
}

/* ---- end gemm.scalar ---- */
