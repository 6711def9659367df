/*
 * The operations of upstream TIRx that relate layouts to each other rather than change one's
 * view: coordinates as per-iter digits, tile recovery (the outer of a tiling given its inner,
 * and the inner given its outer), the direct sum and its split, and element-width
 * reinterpretation (pack, unpack).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layout_internal.h"

enum { WORK = TIRX_LAYOUT_MAX_ITERS + 2 * TIRX_LAYOUT_MAX_RANK };

static bool check_arena(tirx_arena *a, const char *fn) {
  if (!a) {
    tirx__error(TIRX_E_NULL_ARG, "%s: arena is NULL", fn);
    return false;
  }
  return true;
}

/* ---- coordinates ---- */

tirx_status tirx_layout_coord(const tirx_layout *l, const int64_t *index, int64_t *digits, int cap,
                              int *count) {
  static const char fn[] = "tirx_layout_coord";
  if (!tirx__layout_check(l, fn, "layout")) return TIRX_E_NULL_ARG;
  if (!index || !count) {
    tirx__error(TIRX_E_NULL_ARG, "%s: %s is NULL", fn, !index ? "index" : "count");
    return TIRX_E_NULL_ARG;
  }
  *count = l->nd;
  int64_t x = 0;
  if (l->rank == 0) {
    if (index[0] < 0 || index[0] >= l->size) {
      tirx__error(TIRX_E_OUT_OF_RANGE, "%s: index %lld outside [0, %lld)", fn,
                  (long long)index[0], (long long)l->size);
      return TIRX_E_OUT_OF_RANGE;
    }
    x = index[0];
  } else {
    for (int k = 0; k < l->rank; k++) {
      if (index[k] < 0 || index[k] >= l->shape[k]) {
        tirx__error(TIRX_E_OUT_OF_RANGE, "%s: index[%d] is %lld, outside [0, %lld)", fn, k,
                    (long long)index[k], (long long)l->shape[k]);
        return TIRX_E_OUT_OF_RANGE;
      }
      x = x * l->shape[k] + index[k]; /* below the size: fits */
    }
  }
  if (cap < l->nd || (!digits && l->nd > 0)) {
    tirx__error(TIRX_E_BUFFER_TOO_SMALL, "%s: the layout has %d iters, cap is %d", fn, l->nd, cap);
    return TIRX_E_BUFFER_TOO_SMALL;
  }
  if (l->nd) tirx__layout_digits(l, x, digits);
  return TIRX_OK;
}

/* ---- tile recovery ---- */

static bool offsets_sub(const char *fn, const tirx_layout *l, const tirx_layout *part,
                        tirx_axis_offset *o, int *no) {
  int64_t off[TIRX_AXIS_MAX] = {0};
  for (int i = 0; i < l->no; i++) off[l->o[i].axis] = l->o[i].value;
  for (int i = 0; i < part->no; i++)
    if (!tirx__add_ok(off[part->o[i].axis], -part->o[i].value, &off[part->o[i].axis]) ||
        part->o[i].value == INT64_MIN) {
      tirx__error(TIRX_E_OVERFLOW, "%s: the difference of the offsets overflows int64", fn);
      return false;
    }
  *no = 0;
  for (int ax = 0; ax < TIRX_AXIS_MAX; ax++)
    if (off[ax] != 0) o[(*no)++] = (tirx_axis_offset){ax, off[ax]};
  return true;
}

/*
 * The two halves of l as a tiling by a part of shape pshape (per dimension, part inner when
 * want_outer): l's iters grouped to (S0/s0, s0, S1/s1, s1, ...), the outer half and the inner
 * half. The known part (given) must have no replicas and no swizzle and must equal its half;
 * the other half gets l's replicas and swizzle and l's offset minus the given one's.
 */
static tirx_layout *tile_recover(tirx_arena *a, const char *fn, const tirx_layout *l,
                                 const tirx_layout *given, bool given_is_inner) {
  const char *gname = given_is_inner ? "inner" : "outer";
  if (!check_arena(a, fn) || !tirx__layout_check(l, fn, "layout") ||
      !tirx__layout_check(given, fn, gname))
    return NULL;
  if (l->rank == 0 || given->rank == 0) {
    tirx__error(TIRX_E_INVALID_ARG, "%s: %s is not grouped (it has no logical shape)", fn,
                l->rank == 0 ? "layout" : gname);
    return NULL;
  }
  if (l->rank != given->rank) {
    tirx__error(TIRX_E_INVALID_ARG, "%s: layout has rank %d, %s has rank %d", fn, l->rank, gname,
                given->rank);
    return NULL;
  }
  if (given->nr > 0 || given->swizzle_bytes) {
    tirx__error(TIRX_E_INVALID_ARG, "%s: %s has %s; only the recovered half may", fn, gname,
                given->nr ? "replicas" : "a swizzle");
    return NULL;
  }
  int rank = l->rank;
  if (2 * rank > TIRX_LAYOUT_MAX_RANK) {
    tirx__error(TIRX_E_LIMIT, "%s: rank %d is above %d", fn, rank, TIRX_LAYOUT_MAX_RANK / 2);
    return NULL;
  }
  int64_t shape2[TIRX_LAYOUT_MAX_RANK];
  for (int k = 0; k < rank; k++) {
    if (l->shape[k] % given->shape[k] != 0) {
      tirx__error(TIRX_E_NOT_REPRESENTABLE,
                  "%s: dim %d of the layout has extent %lld, not a multiple of %s's %lld", fn, k,
                  (long long)l->shape[k], gname, (long long)given->shape[k]);
      return NULL;
    }
    int64_t q = l->shape[k] / given->shape[k];
    shape2[2 * k] = given_is_inner ? q : given->shape[k];
    shape2[2 * k + 1] = given_is_inner ? given->shape[k] : q;
  }
  tirx_iter g[WORK];
  int32_t gb[TIRX_LAYOUT_MAX_RANK + 1];
  int ng;
  if (!tirx__layout_group_iters(fn, l->nd, l->d, 2 * rank, shape2, g, &ng, gb)) return NULL;
  tirx_iter half[2][WORK];
  int32_t hb[2][TIRX_LAYOUT_MAX_RANK + 1];
  int nh[2] = {0, 0};
  hb[0][0] = hb[1][0] = 0;
  for (int k = 0; k < 2 * rank; k++) {
    int h = k % 2; /* 0 outer, 1 inner */
    for (int i = gb[k]; i < gb[k + 1]; i++) half[h][nh[h]++] = g[i];
    hb[h][k / 2 + 1] = nh[h];
  }
  int gh = given_is_inner ? 1 : 0;
  if (nh[0] > TIRX_LAYOUT_MAX_ITERS || nh[1] > TIRX_LAYOUT_MAX_ITERS) {
    tirx__error(TIRX_E_LIMIT, "%s: a half needs more than %d iters", fn,
                (int)TIRX_LAYOUT_MAX_ITERS);
    return NULL;
  }
  tirx_layout *mine = tirx__layout_make(a, fn, nh[gh], half[gh], 0, NULL, given->no, given->o,
                                        rank, hb[gh], 0, 0);
  if (!mine) return NULL;
  if (!tirx_layout_equal(mine, given)) {
    char *want = tirx_layout_str(given), *got = tirx_layout_str(mine);
    tirx__error(TIRX_E_NOT_REPRESENTABLE, "%s: the layout is not a tiling with this %s: its %s "
                "half is %s, %s is %s", fn, gname, gname, got ? got : "?", gname,
                want ? want : "?");
    free(want);
    free(got);
    return NULL;
  }
  tirx_axis_offset o[TIRX_AXIS_MAX];
  int no;
  if (!offsets_sub(fn, l, given, o, &no)) return NULL;
  return tirx__layout_make(a, fn, nh[1 - gh], half[1 - gh], l->nr, l->r, no, o, rank,
                           hb[1 - gh], l->swizzle_bytes, l->swizzle_elem);
}

tirx_layout *tirx_layout_tile_outer(tirx_arena *a, const tirx_layout *l,
                                    const tirx_layout *inner) {
  return tile_recover(a, "tirx_layout_tile_outer", l, inner, true);
}

tirx_layout *tirx_layout_tile_inner(tirx_arena *a, const tirx_layout *l,
                                    const tirx_layout *outer) {
  return tile_recover(a, "tirx_layout_tile_inner", l, outer, false);
}

/* ---- direct sum ---- */

/* The dims of a layout as (begin, count) of its iters and their extents; a flat one is one. */
static int dims_of(const tirx_layout *l, int32_t *begin, int64_t *shape) {
  if (l->rank == 0) {
    begin[0] = 0;
    begin[1] = l->nd;
    shape[0] = l->size;
    return 1;
  }
  for (int k = 0; k <= l->rank; k++) begin[k] = l->dim_begin[k];
  for (int k = 0; k < l->rank; k++) shape[k] = l->shape[k];
  return l->rank;
}

tirx_layout *tirx_layout_direct_sum(tirx_arena *a, const tirx_layout *x, const tirx_layout *y) {
  static const char fn[] = "tirx_layout_direct_sum";
  if (!check_arena(a, fn) || !tirx__layout_check(x, fn, "x") || !tirx__layout_check(y, fn, "y"))
    return NULL;
  if (x->swizzle_bytes || y->swizzle_bytes) {
    tirx__error(TIRX_E_INVALID_ARG, "%s: %s is swizzled (a swizzle does not distribute over a "
                "sum)", fn, x->swizzle_bytes ? "x" : "y");
    return NULL;
  }
  int32_t bx[TIRX_LAYOUT_MAX_RANK + 1], by[TIRX_LAYOUT_MAX_RANK + 1];
  int64_t sx[TIRX_LAYOUT_MAX_RANK], sy[TIRX_LAYOUT_MAX_RANK];
  int rx = dims_of(x, bx, sx), ry = dims_of(y, by, sy);
  if (rx + ry > TIRX_LAYOUT_MAX_RANK || x->nd + y->nd > TIRX_LAYOUT_MAX_ITERS ||
      x->nr + y->nr > TIRX_LAYOUT_MAX_ITERS) {
    tirx__error(TIRX_E_LIMIT, "%s: the sum needs rank %d, %d iters and %d replicas (limits %d, "
                "%d)", fn, rx + ry, x->nd + y->nd, x->nr + y->nr, (int)TIRX_LAYOUT_MAX_RANK,
                (int)TIRX_LAYOUT_MAX_ITERS);
    return NULL;
  }
  tirx_iter d[2 * TIRX_LAYOUT_MAX_ITERS], r[2 * TIRX_LAYOUT_MAX_ITERS];
  int32_t begin[2 * TIRX_LAYOUT_MAX_RANK + 1];
  int nd = 0, nr = 0;
  if (x->nd) memcpy(d, x->d, (size_t)x->nd * sizeof *d);
  if (y->nd) memcpy(d + x->nd, y->d, (size_t)y->nd * sizeof *d);
  nd = x->nd + y->nd;
  if (x->nr) memcpy(r, x->r, (size_t)x->nr * sizeof *r);
  if (y->nr) memcpy(r + x->nr, y->r, (size_t)y->nr * sizeof *r);
  nr = x->nr + y->nr;
  for (int k = 0; k <= rx; k++) begin[k] = bx[k];
  for (int k = 1; k <= ry; k++) begin[rx + k] = x->nd + by[k];
  int64_t off[TIRX_AXIS_MAX] = {0};
  for (int i = 0; i < x->no; i++) off[x->o[i].axis] = x->o[i].value;
  for (int i = 0; i < y->no; i++)
    if (!tirx__add_ok(off[y->o[i].axis], y->o[i].value, &off[y->o[i].axis])) {
      tirx__error(TIRX_E_OVERFLOW, "%s: a coordinate of the sum overflows int64", fn);
      return NULL;
    }
  tirx_axis_offset o[TIRX_AXIS_MAX];
  int no = 0;
  for (int ax = 0; ax < TIRX_AXIS_MAX; ax++)
    if (off[ax] != 0) o[no++] = (tirx_axis_offset){ax, off[ax]};
  return tirx__layout_make(a, fn, nd, d, nr, r, no, o, rx + ry, begin, 0, 0);
}

tirx_status tirx_layout_direct_sum_split(tirx_arena *a, const tirx_layout *s, int k,
                                         tirx_layout **x, tirx_layout **y) {
  static const char fn[] = "tirx_layout_direct_sum_split";
  if (!check_arena(a, fn) || !tirx__layout_check(s, fn, "layout")) return TIRX_E_NULL_ARG;
  if (!x || !y) {
    tirx__error(TIRX_E_NULL_ARG, "%s: %s is NULL", fn, !x ? "x" : "y");
    return TIRX_E_NULL_ARG;
  }
  *x = *y = NULL;
  if (s->rank < 2 || k < 1 || k >= s->rank) {
    tirx__error(TIRX_E_INVALID_ARG, "%s: k is %d, the layout's rank is %d: expected 1 <= k < rank",
                fn, k, s->rank);
    return TIRX_E_INVALID_ARG;
  }
  int32_t b1[TIRX_LAYOUT_MAX_RANK + 1], b2[TIRX_LAYOUT_MAX_RANK + 1];
  int split = s->dim_begin[k];
  for (int j = 0; j <= k; j++) b1[j] = s->dim_begin[j];
  for (int j = k; j <= s->rank; j++) b2[j - k] = s->dim_begin[j] - split;
  tirx_layout *l1 = tirx__layout_make(a, fn, split, s->d, s->nr, s->r, s->no, s->o, k, b1,
                                      s->swizzle_bytes, s->swizzle_elem);
  if (!l1) return tirx_last_status();
  const tirx_iter *rest = s->nd > split ? s->d + split : NULL; /* a scalar has no iters */
  tirx_layout *l2 = tirx__layout_make(a, fn, s->nd - split, rest, 0, NULL, 0, NULL, s->rank - k,
                                      b2, 0, 0);
  if (!l2) return tirx_last_status();
  *x = l1;
  *y = l2;
  return TIRX_OK;
}

/* ---- pack / unpack ---- */

static bool check_width(const char *fn, const tirx_layout *l, tirx_axis axis, int64_t factor) {
  if (factor < 1) {
    tirx__error(TIRX_E_INVALID_ARG, "%s: factor is %lld, expected >= 1", fn, (long long)factor);
    return false;
  }
  if ((int)axis < 0 || (int)axis >= TIRX_AXIS_MAX || !tirx_axis_name(axis)) {
    tirx__error(TIRX_E_UNKNOWN_AXIS, "%s: axis %d is not an axis", fn, (int)axis);
    return false;
  }
  if (l->swizzle_bytes) {
    tirx__error(TIRX_E_NOT_REPRESENTABLE, "%s: the layout is swizzled: compose the swizzle "
                "after changing the element width", fn);
    return false;
  }
  return true;
}

tirx_layout *tirx_layout_pack(tirx_arena *a, const tirx_layout *l, tirx_axis axis,
                              int64_t factor) {
  static const char fn[] = "tirx_layout_pack";
  if (!check_arena(a, fn) || !tirx__layout_check(l, fn, "layout")) return NULL;
  if (!check_width(fn, l, axis, factor)) return NULL;
  const char *an = tirx_axis_name(axis);
  int inner = l->nd - 1;
  while (inner >= 0 && l->d[inner].extent == 1) inner--;
  if (factor == 1) return tirx__layout_with(a, fn, l, l->nd, l->d, l->nr, l->r, l->rank,
                                            l->dim_begin);
  if (inner < 0 || l->d[inner].axis != axis || l->d[inner].stride != 1 ||
      l->d[inner].extent % factor != 0) {
    char buf[128] = "none";
    if (inner >= 0)
      snprintf(buf, sizeof buf, "(%lld):(%lld@%s)", (long long)l->d[inner].extent,
               (long long)l->d[inner].stride, tirx_axis_name(l->d[inner].axis));
    tirx__error(TIRX_E_NOT_REPRESENTABLE, "%s: the innermost iter %s is not %lld or a multiple "
                "of it with stride 1@%s", fn, buf, (long long)factor, an);
    return NULL;
  }
  if (l->rank > 0 && l->shape[l->rank - 1] % factor != 0) {
    tirx__error(TIRX_E_NOT_REPRESENTABLE, "%s: the last dimension has extent %lld, not a "
                "multiple of %lld", fn, (long long)l->shape[l->rank - 1], (long long)factor);
    return NULL;
  }
  tirx_iter d[TIRX_LAYOUT_MAX_ITERS], r[TIRX_LAYOUT_MAX_ITERS];
  for (int i = 0; i < l->nd; i++) {
    d[i] = l->d[i];
    if (i == inner) {
      d[i].extent /= factor;
      continue;
    }
    if (d[i].axis == axis && d[i].extent > 1 && d[i].stride % factor != 0) {
      tirx__error(TIRX_E_NOT_REPRESENTABLE, "%s: iter %d has stride %lld@%s, not a multiple of "
                  "%lld", fn, i, (long long)d[i].stride, an, (long long)factor);
      return NULL;
    }
    if (d[i].axis == axis) d[i].stride /= factor;
  }
  for (int i = 0; i < l->nr; i++) {
    r[i] = l->r[i];
    if (r[i].axis != axis) continue;
    if (r[i].extent > 1 && r[i].stride % factor != 0) {
      tirx__error(TIRX_E_NOT_REPRESENTABLE, "%s: replica %d has stride %lld@%s, not a multiple "
                  "of %lld", fn, i, (long long)r[i].stride, an, (long long)factor);
      return NULL;
    }
    r[i].stride /= factor;
  }
  tirx_axis_offset o[TIRX_AXIS_MAX];
  for (int i = 0; i < l->no; i++) {
    o[i] = l->o[i];
    if (o[i].axis != axis) continue;
    if (o[i].value % factor != 0) {
      tirx__error(TIRX_E_NOT_REPRESENTABLE, "%s: the offset %lld@%s is not a multiple of %lld",
                  fn, (long long)o[i].value, an, (long long)factor);
      return NULL;
    }
    o[i].value /= factor;
  }
  return tirx__layout_make(a, fn, l->nd, d, l->nr, r, l->no, o, l->rank, l->dim_begin, 0, 0);
}

tirx_layout *tirx_layout_unpack(tirx_arena *a, const tirx_layout *l, tirx_axis axis,
                                int64_t factor) {
  static const char fn[] = "tirx_layout_unpack";
  if (!check_arena(a, fn) || !tirx__layout_check(l, fn, "layout")) return NULL;
  if (!check_width(fn, l, axis, factor)) return NULL;
  if (l->nd >= TIRX_LAYOUT_MAX_ITERS) {
    tirx__error(TIRX_E_LIMIT, "%s: the layout has %d iters, the limit is %d", fn, l->nd,
                (int)TIRX_LAYOUT_MAX_ITERS);
    return NULL;
  }
  tirx_iter d[TIRX_LAYOUT_MAX_ITERS], r[TIRX_LAYOUT_MAX_ITERS];
  tirx_axis_offset o[TIRX_AXIS_MAX];
  bool ok = true;
  for (int i = 0; i < l->nd; i++) {
    d[i] = l->d[i];
    if (d[i].axis == axis) ok &= tirx__mul_ok(d[i].stride, factor, &d[i].stride);
  }
  d[l->nd] = (tirx_iter){factor, 1, axis};
  for (int i = 0; i < l->nr; i++) {
    r[i] = l->r[i];
    if (r[i].axis == axis) ok &= tirx__mul_ok(r[i].stride, factor, &r[i].stride);
  }
  for (int i = 0; i < l->no; i++) {
    o[i] = l->o[i];
    if (o[i].axis == axis) ok &= tirx__mul_ok(o[i].value, factor, &o[i].value);
  }
  if (!ok) {
    tirx__error(TIRX_E_OVERFLOW, "%s: a coordinate times %lld overflows int64", fn,
                (long long)factor);
    return NULL;
  }
  int32_t begin[TIRX_LAYOUT_MAX_RANK + 1];
  for (int k = 0; k < l->rank; k++) begin[k] = l->dim_begin[k];
  if (l->rank) begin[l->rank] = l->nd + 1;
  return tirx__layout_make(a, fn, l->nd + 1, d, l->nr, r, l->no, o, l->rank,
                           l->rank ? begin : NULL, 0, 0);
}
