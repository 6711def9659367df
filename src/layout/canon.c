/*
 * The canonical form and placement equality (paper section 5.1).
 *
 * Why the canonical form is a normal form. L(x) = swz(D(x) + R + O), where the swizzle is a
 * bijection of m and D(0) = 0, so two layouts with the same swizzle place every x alike exactly
 * when R + O is the same point set and D is the same function (a finite set has one
 * translate equal to another only by the zero vector).
 *
 *  - D: once extent-1 iters are dropped, stride-0 iters moved to m and adjacent mergeable iters
 *    merged, the innermost extent is the first x > 0 with D(x) != x * D(1), and its stride is
 *    D(1); induction on the outer iters shows the iter list is a function of D alone.
 *  - R + O: with every replica stride made positive, R lies in the non-negative orthant and
 *    contains 0, so O is the componentwise minimum of R + O. R is the Cartesian product over
 *    axes of one-dimensional sums of progressions; two iters of one axis whose sum is a single
 *    progression (stride s and k*s with k <= the first extent) are merged into it. That makes
 *    the replica list unique in every case we know of short of contrived overlapping sums, so
 *    tirx_layout_equal compares replica point sets rather than replica lists.
 */
#include <stdlib.h>
#include <string.h>

#include "layout_internal.h"

/* Canonical D iters of one logical dimension, appended to out->d. */
static void canon_dim(const tirx_iter *d, int n, tirx__canon *out) {
  int first = out->nd;
  for (int i = 0; i < n; i++) {
    tirx_iter it = d[i];
    if (it.extent == 1) continue;
    if (it.stride == 0) it.axis = TIRX_AXIS_M;
    if (out->nd > first) {
      /* The previous iter is the outer neighbour: (eo, ei):(ei*si, si) is (eo*ei):(si). */
      tirx_iter *outer = &out->d[out->nd - 1];
      int64_t step;
      if (outer->axis == it.axis && tirx__mul_ok(it.extent, it.stride, &step) &&
          outer->stride == step) {
        outer->extent *= it.extent; /* bounded by the layout's size */
        outer->stride = it.stride;
        continue;
      }
    }
    out->d[out->nd++] = it;
  }
}

static int cmp_replica(const void *a, const void *b) {
  const tirx_iter *x = a, *y = b;
  if (x->axis != y->axis) return x->axis < y->axis ? -1 : 1;
  if (x->stride != y->stride) return x->stride < y->stride ? -1 : 1;
  return (x->extent > y->extent) - (x->extent < y->extent);
}

/*
 * Merges two replica iters of one axis, strides s <= t, when their point sum is one
 * progression: t = k*s with 1 <= k <= e1 gives {0, s, ..., ((e1-1) + (e2-1)*k) * s}.
 */
static bool merge_replicas(tirx_iter *a, const tirx_iter *b) {
  if (a->axis != b->axis || b->stride % a->stride != 0) return false;
  int64_t k = b->stride / a->stride, last;
  if (k > a->extent) return false;
  /* The reach of the merged iter is the sum of the two reaches, which the layout bounds. */
  if (!tirx__mul_ok(b->extent - 1, k, &last) || !tirx__add_ok(last, a->extent, &last))
    return false;
  a->extent = last;
  return true;
}

static void canon_replicas(const tirx_layout *l, tirx__canon *out) {
  for (int i = 0; i < l->nr; i++) {
    tirx_iter it = l->r[i];
    if (it.extent == 1 || it.stride == 0) continue;
    if (it.stride < 0) {
      /* {0, s, ..., (e-1)s} = (e-1)s + {0, -s, ..., (e-1)(-s)}: move the lowest point into O. */
      out->offset[it.axis] += (it.extent - 1) * it.stride;
      it.stride = -it.stride;
    }
    out->r[out->nr++] = it;
  }
  for (bool merged = true; merged;) {
    merged = false;
    qsort(out->r, (size_t)out->nr, sizeof out->r[0], cmp_replica);
    for (int i = 0; i < out->nr && !merged; i++)
      for (int j = i + 1; j < out->nr && !merged; j++)
        if (merge_replicas(&out->r[i], &out->r[j])) {
          memmove(&out->r[j], &out->r[j + 1], (size_t)(out->nr - j - 1) * sizeof out->r[0]);
          out->nr--;
          merged = true;
        }
  }
}

void tirx__layout_canon(const tirx_layout *l, bool flat, tirx__canon *out) {
  memset(out, 0, sizeof *out);
  for (int i = 0; i < l->no; i++) out->offset[l->o[i].axis] = l->o[i].value;
  if (flat || l->rank == 0) {
    canon_dim(l->d, l->nd, out);
  } else {
    out->rank = l->rank;
    for (int k = 0; k < l->rank; k++) {
      out->dim_begin[k] = out->nd;
      int n = l->dim_begin[k + 1] - l->dim_begin[k];
      /* A grouped scalar has d == NULL, and NULL + 0 is undefined in C. */
      canon_dim(n > 0 ? l->d + l->dim_begin[k] : NULL, n, out);
    }
    out->dim_begin[l->rank] = out->nd;
  }
  canon_replicas(l, out);
}

tirx_layout *tirx_layout_canonicalize(tirx_arena *a, const tirx_layout *l) {
  static const char fn[] = "tirx_layout_canonicalize";
  if (!a) {
    tirx__error(TIRX_E_NULL_ARG, "%s: arena is NULL", fn);
    return NULL;
  }
  if (!tirx__layout_check(l, fn, "layout")) return NULL;
  tirx__canon c;
  tirx__layout_canon(l, false, &c);
  tirx_axis_offset o[TIRX_AXIS_MAX];
  int no = 0;
  for (int ax = 0; ax < TIRX_AXIS_MAX; ax++)
    if (c.offset[ax] != 0) o[no++] = (tirx_axis_offset){ax, c.offset[ax]};
  return tirx__layout_make(a, fn, c.nd, c.d, c.nr, c.r, no, o, c.rank,
                           c.rank ? c.dim_begin : NULL, l->swizzle_bytes, l->swizzle_elem);
}

/* ---- equality ------------------------------------------------------------------------------ */

enum { MAX_REPLICA_POINTS = 1 << 20 };

static bool iter_eq(const tirx_iter *x, const tirx_iter *y) {
  return x->extent == y->extent && x->stride == y->stride && x->axis == y->axis;
}

static bool iters_eq(int n, const tirx_iter *x, const tirx_iter *y) {
  for (int i = 0; i < n; i++)
    if (!iter_eq(&x[i], &y[i])) return false;
  return true;
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/*
 * The distinct points of the replica iters on one axis, sorted, into a malloc'ed *pts.
 * Returns false with the error recorded when there are too many or memory runs out.
 */
static bool axis_points(const tirx__canon *c, tirx_axis axis, int64_t **pts, int64_t *n) {
  static const char fn[] = "tirx_layout_equal";
  int64_t *cur = malloc(sizeof *cur), count = 1;
  if (!cur) goto oom;
  cur[0] = 0;
  for (int i = 0; i < c->nr; i++) {
    const tirx_iter *it = &c->r[i];
    if (it->axis != axis) continue;
    int64_t total;
    if (!tirx__mul_ok(count, it->extent, &total) || total > MAX_REPLICA_POINTS) {
      free(cur);
      tirx__error(TIRX_E_LIMIT, "%s: more than %d replica points to compare on axis %s", fn,
                  (int)MAX_REPLICA_POINTS, tirx_axis_name(axis));
      return false;
    }
    int64_t *next = malloc((size_t)total * sizeof *next);
    if (!next) {
      free(cur);
      goto oom;
    }
    int64_t k = 0;
    for (int64_t j = 0; j < it->extent; j++)
      for (int64_t p = 0; p < count; p++) next[k++] = cur[p] + j * it->stride;
    qsort(next, (size_t)total, sizeof *next, cmp_i64);
    count = 0;
    for (int64_t p = 0; p < total; p++)
      if (count == 0 || next[count - 1] != next[p]) next[count++] = next[p];
    free(cur);
    cur = next;
  }
  *pts = cur;
  *n = count;
  return true;
oom:
  tirx__error(TIRX_E_NO_MEMORY, "%s: out of memory", fn);
  return false;
}

/* Compares the replica point sets of two canonical forms axis by axis (R is their product). */
static bool replicas_equal(const tirx__canon *x, const tirx__canon *y, bool *equal) {
  *equal = true;
  if (x->nr == y->nr && iters_eq(x->nr, x->r, y->r)) return true;
  for (tirx_axis ax = 0; ax < TIRX_AXIS_MAX && *equal; ax++) {
    int64_t *px, *py, nx, ny;
    if (!axis_points(x, ax, &px, &nx)) return false;
    if (!axis_points(y, ax, &py, &ny)) {
      free(px);
      return false;
    }
    *equal = nx == ny && memcmp(px, py, (size_t)nx * sizeof *px) == 0;
    free(px);
    free(py);
  }
  return true;
}

bool tirx_layout_equal(const tirx_layout *a, const tirx_layout *b) {
  static const char fn[] = "tirx_layout_equal";
  if (!tirx__layout_check(a, fn, "a") || !tirx__layout_check(b, fn, "b")) return false;
  if (a->size != b->size || a->swizzle_bytes != b->swizzle_bytes ||
      a->swizzle_elem != b->swizzle_elem)
    return false;
  tirx__canon *ca = malloc(2 * sizeof *ca), *cb = ca + 1;
  if (!ca) {
    tirx__error(TIRX_E_NO_MEMORY, "%s: out of memory", fn);
    return false;
  }
  tirx__layout_canon(a, true, ca);
  tirx__layout_canon(b, true, cb);
  bool equal = ca->nd == cb->nd && iters_eq(ca->nd, ca->d, cb->d) &&
               memcmp(ca->offset, cb->offset, sizeof ca->offset) == 0;
  if (equal && !replicas_equal(ca, cb, &equal)) equal = false;
  free(ca);
  return equal;
}

bool tirx_layout_same(const tirx_layout *a, const tirx_layout *b) {
  static const char fn[] = "tirx_layout_same";
  if (!tirx__layout_check(a, fn, "a") || !tirx__layout_check(b, fn, "b")) return false;
  if (a->nd != b->nd || a->nr != b->nr || a->no != b->no || a->rank != b->rank ||
      a->swizzle_bytes != b->swizzle_bytes || a->swizzle_elem != b->swizzle_elem)
    return false;
  if (!iters_eq(a->nd, a->d, b->d) || !iters_eq(a->nr, a->r, b->r)) return false;
  for (int i = 0; i < a->no; i++)
    if (a->o[i].axis != b->o[i].axis || a->o[i].value != b->o[i].value) return false;
  for (int k = 0; a->rank > 0 && k <= a->rank; k++)
    if (a->dim_begin[k] != b->dim_begin[k]) return false;
  return true;
}
