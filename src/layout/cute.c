/*
 * CuTe's layout algebra on index maps (layouts on m with no replicas, offset or swizzle):
 * complement, logical_divide and logical_product. Composition is tirx_layout_compose.
 *
 * CuTe lists modes colexicographically (mode 0 varies fastest); tirx lists iters and logical
 * dimensions row-major (the last varies fastest). A CuTe layout (e0,e1,...):(s0,s1,...) is
 * the tirx layout (...,e1,e0):(...,s1,s0), and CuTe's mode k of a rank-r result is tirx's
 * dimension r-1-k: logical_divide's ((tile),(rest)) is tirx's ((rest),(tile)).
 */
#include <stdio.h>
#include <stdlib.h>

#include "layout_internal.h"

static bool check_arena(tirx_arena *a, const char *fn) {
  if (!a) {
    tirx__error(TIRX_E_NULL_ARG, "%s: arena is NULL", fn);
    return false;
  }
  return true;
}

/* An index map with non-negative strides: no replicas, offset or swizzle, every iter of extent
 * > 1 on m. */
static bool check_index_map(const char *fn, const tirx_layout *l, const char *what) {
  const char *bad = l->nr ? "replicas" : l->no ? "an offset" : l->swizzle_bytes ? "a swizzle" : NULL;
  if (bad) {
    tirx__error(TIRX_E_INVALID_ARG, "%s: %s is not an index map (it has %s)", fn, what, bad);
    return false;
  }
  for (int i = 0; i < l->nd; i++) {
    const tirx_iter *it = &l->d[i];
    if (it->extent > 1 && it->stride != 0 && it->axis != TIRX_AXIS_M) {
      tirx__error(TIRX_E_INVALID_ARG, "%s: %s is not an index map (iter %d is on %s)", fn, what,
                  i, tirx_axis_name(it->axis));
      return false;
    }
    if (it->extent > 1 && it->stride < 0) {
      tirx__error(TIRX_E_INVALID_ARG, "%s: %s has a negative stride (iter %d: %lld)", fn, what, i,
                  (long long)it->stride);
      return false;
    }
  }
  return true;
}

/* Records the last error again with fn in front (compose's reason, named by the caller). */
static void rename_error(const char *fn) {
  char msg[512];
  snprintf(msg, sizeof msg, "%s", tirx_last_error());
  tirx__error(tirx_last_status(), "%s: %s", fn, msg);
}

static int by_stride(const void *x, const void *y) {
  const tirx_iter *a = x, *b = y;
  if (a->stride != b->stride) return a->stride < b->stride ? -1 : 1;
  return a->extent < b->extent ? -1 : a->extent > b->extent;
}

/* The complement's iters, outermost first, into out (at most nd + 1). */
static bool complement_iters(const char *fn, const tirx_layout *l, int64_t cosize, tirx_iter *out,
                             int *n_out) {
  tirx_iter s[TIRX_LAYOUT_MAX_ITERS], rev[TIRX_LAYOUT_MAX_ITERS + 1];
  int n = 0, nr = 0;
  for (int i = 0; i < l->nd; i++)
    if (l->d[i].extent > 1 && l->d[i].stride != 0) s[n++] = l->d[i]; /* CuTe's filter */
  qsort(s, (size_t)n, sizeof *s, by_stride);
  int64_t cur = 1;
  for (int i = 0; i < n; i++) {
    if (s[i].stride % cur != 0) {
      tirx__error(TIRX_E_NOT_REPRESENTABLE, "%s: iter (%lld):(%lld@m) does not sit on a multiple "
                  "of %lld, the span of the iters below it: the layout has no complement", fn,
                  (long long)s[i].extent, (long long)s[i].stride, (long long)cur);
      return false;
    }
    if (s[i].stride / cur > 1) rev[nr++] = (tirx_iter){s[i].stride / cur, cur, TIRX_AXIS_M};
    if (!tirx__mul_ok(s[i].stride, s[i].extent, &cur)) {
      tirx__error(TIRX_E_OVERFLOW, "%s: the layout's span overflows int64", fn);
      return false;
    }
  }
  int64_t rest = cosize / cur + (cosize % cur != 0);
  if (rest > 1) rev[nr++] = (tirx_iter){rest, cur, TIRX_AXIS_M};
  for (int i = 0; i < nr; i++) out[i] = rev[nr - 1 - i];
  *n_out = nr;
  return true;
}

tirx_layout *tirx_layout_complement(tirx_arena *a, const tirx_layout *l, int64_t cosize) {
  static const char fn[] = "tirx_layout_complement";
  if (!check_arena(a, fn) || !tirx__layout_check(l, fn, "layout")) return NULL;
  if (cosize < 1) {
    tirx__error(TIRX_E_INVALID_ARG, "%s: cosize is %lld, expected >= 1", fn, (long long)cosize);
    return NULL;
  }
  if (!check_index_map(fn, l, "layout")) return NULL;
  tirx_iter d[TIRX_LAYOUT_MAX_ITERS + 1];
  int nd;
  if (!complement_iters(fn, l, cosize, d, &nd)) return NULL;
  return tirx__layout_make(a, fn, nd, d, 0, NULL, 0, NULL, 0, NULL, 0, 0);
}

/* ((x),(y)): the direct sum of two flat index maps, x outer, as a grouped rank-2 layout. */
static tirx_layout *pair(tirx_arena *a, const char *fn, const tirx_layout *x,
                         const tirx_layout *y) {
  tirx_iter d[2 * TIRX_LAYOUT_MAX_ITERS];
  int n = 0;
  for (int i = 0; i < x->nd; i++) d[n++] = x->d[i];
  for (int i = 0; i < y->nd; i++) d[n++] = y->d[i];
  int32_t begin[3] = {0, x->nd, n};
  return tirx__layout_make(a, fn, n, d, 0, NULL, 0, NULL, 2, begin, 0, 0);
}

tirx_layout *tirx_layout_logical_divide(tirx_arena *a, const tirx_layout *l,
                                        const tirx_layout *tiler) {
  static const char fn[] = "tirx_layout_logical_divide";
  if (!check_arena(a, fn) || !tirx__layout_check(l, fn, "layout") ||
      !tirx__layout_check(tiler, fn, "tiler"))
    return NULL;
  if (!check_index_map(fn, tiler, "tiler")) return NULL;
  tirx_iter c[TIRX_LAYOUT_MAX_ITERS + 1];
  int nc;
  if (!complement_iters(fn, tiler, l->size, c, &nc)) return NULL;
  tirx_layout *cl = tirx__layout_make(a, fn, nc, c, 0, NULL, 0, NULL, 0, NULL, 0, 0);
  tirx_layout *tl = cl ? tirx__layout_with(a, fn, tiler, tiler->nd, tiler->d, 0, NULL, 0, NULL)
                       : NULL;
  tirx_layout *f = tl ? pair(a, fn, cl, tl) : NULL;
  if (!f) return NULL;
  if (f->size != l->size) {
    tirx__error(TIRX_E_NOT_REPRESENTABLE, "%s: the tiler and its complement cover %lld "
                "elements, the layout has %lld: the tiler does not divide it", fn,
                (long long)f->size, (long long)l->size);
    return NULL;
  }
  tirx_layout *r = tirx_layout_compose(a, l, f);
  if (!r) rename_error(fn);
  return r;
}

tirx_layout *tirx_layout_logical_product(tirx_arena *a, const tirx_layout *l,
                                         const tirx_layout *tiler) {
  static const char fn[] = "tirx_layout_logical_product";
  if (!check_arena(a, fn) || !tirx__layout_check(l, fn, "layout") ||
      !tirx__layout_check(tiler, fn, "tiler"))
    return NULL;
  if (!check_index_map(fn, l, "layout") || !check_index_map(fn, tiler, "tiler")) return NULL;
  int64_t span, cosize;
  tirx_layout_span(tiler, TIRX_AXIS_M, NULL, &span); /* strides >= 0: [0, span) */
  if (!tirx__mul_ok(l->size, span, &cosize)) {
    tirx__error(TIRX_E_OVERFLOW, "%s: size(layout) * cosize(tiler) overflows int64", fn);
    return NULL;
  }
  tirx_iter c[TIRX_LAYOUT_MAX_ITERS + 1];
  int nc;
  if (!complement_iters(fn, l, cosize, c, &nc)) return NULL;
  tirx_layout *cl = tirx__layout_make(a, fn, nc, c, 0, NULL, 0, NULL, 0, NULL, 0, 0);
  tirx_layout *tl = cl ? tirx__layout_with(a, fn, tiler, tiler->nd, tiler->d, 0, NULL, 0, NULL)
                       : NULL;
  tirx_layout *rep = tl ? tirx_layout_compose(a, cl, tl) : NULL;
  if (!rep) {
    if (tl) rename_error(fn);
    return NULL;
  }
  tirx_layout *ll = tirx__layout_with(a, fn, l, l->nd, l->d, 0, NULL, 0, NULL);
  return ll ? pair(a, fn, rep, ll) : NULL;
}
