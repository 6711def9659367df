/* The layout object: construction, accessors, evaluation, span and the printer. */
#include <stdlib.h>
#include <string.h>

#include "layout_internal.h"

static bool valid_axis(tirx_axis axis) { return tirx_axis_name(axis) != NULL; }

static int cmp_offset(const void *a, const void *b) {
  const tirx_axis_offset *x = a, *y = b;
  return (x->axis > y->axis) - (x->axis < y->axis);
}

static bool check_iters(const char *fn, const char *what, int n, const tirx_iter *it) {
  for (int i = 0; i < n; i++) {
    if (it[i].extent < 1) {
      tirx__error(TIRX_E_INVALID_ARG, "%s: %s iter %d has extent %lld, expected >= 1", fn, what,
                  i, (long long)it[i].extent);
      return false;
    }
    if (!valid_axis(it[i].axis)) {
      tirx__error(TIRX_E_UNKNOWN_AXIS, "%s: %s iter %d has unknown axis %d", fn, what, i,
                  (int)it[i].axis);
      return false;
    }
  }
  return true;
}

/* Adds |stride| * (extent - 1) of each iter to the per-axis magnitude; false on overflow. */
static bool add_reach(int n, const tirx_iter *it, int64_t *reach) {
  for (int i = 0; i < n; i++) {
    int64_t s = it[i].stride, span;
    if (s == INT64_MIN) return false;
    if (s < 0) s = -s;
    if (!tirx__mul_ok(s, it[i].extent - 1, &span)) return false;
    if (!tirx__add_ok(reach[it[i].axis], span, &reach[it[i].axis])) return false;
  }
  return true;
}

tirx_layout *tirx__layout_make(tirx_arena *a, const char *fn, int nd, const tirx_iter *d, int nr,
                               const tirx_iter *r, int no, const tirx_axis_offset *o, int rank,
                               const int32_t *dim_begin, int swizzle_bytes, int swizzle_elem) {
  if (!a) {
    tirx__error(TIRX_E_NULL_ARG, "%s: arena is NULL", fn);
    return NULL;
  }
  if (nd < 0 || nr < 0 || no < 0) {
    tirx__error(TIRX_E_INVALID_ARG, "%s: negative count (nd=%d, nr=%d, no=%d)", fn, nd, nr, no);
    return NULL;
  }
  if (nd > TIRX_LAYOUT_MAX_ITERS || nr > TIRX_LAYOUT_MAX_ITERS || no > TIRX_AXIS_MAX) {
    tirx__error(TIRX_E_LIMIT, "%s: %d iters, %d replicas, %d offsets exceed the limits (%d, %d, %d)",
                fn, nd, nr, no, (int)TIRX_LAYOUT_MAX_ITERS, (int)TIRX_LAYOUT_MAX_ITERS,
                (int)TIRX_AXIS_MAX);
    return NULL;
  }
  if ((nd && !d) || (nr && !r) || (no && !o)) {
    tirx__error(TIRX_E_NULL_ARG, "%s: %s is NULL with a non-zero count", fn,
                (nd && !d) ? "d" : (nr && !r) ? "r" : "o");
    return NULL;
  }
  if (!check_iters(fn, "shard", nd, d) || !check_iters(fn, "replica", nr, r)) return NULL;
  if (rank < 0 || rank > TIRX_LAYOUT_MAX_RANK) {
    tirx__error(TIRX_E_LIMIT, "%s: rank %d outside [0, %d]", fn, rank, (int)TIRX_LAYOUT_MAX_RANK);
    return NULL;
  }
  if (rank > 0) {
    if (!dim_begin || dim_begin[0] != 0 || dim_begin[rank] != nd) {
      tirx__error(TIRX_E_INTERNAL, "%s: malformed grouping", fn);
      return NULL;
    }
    for (int k = 0; k < rank; k++)
      if (dim_begin[k + 1] < dim_begin[k]) {
        tirx__error(TIRX_E_INTERNAL, "%s: malformed grouping", fn);
        return NULL;
      }
  }
  if (swizzle_bytes != 0) {
    if (swizzle_bytes != 32 && swizzle_bytes != 64 && swizzle_bytes != 128) {
      tirx__error(TIRX_E_INVALID_ARG, "%s: swizzle_bytes is %d, expected 0, 32, 64 or 128", fn,
                  swizzle_bytes);
      return NULL;
    }
    if (swizzle_elem != 1 && swizzle_elem != 2 && swizzle_elem != 4 && swizzle_elem != 8) {
      tirx__error(TIRX_E_INVALID_ARG, "%s: elem_bytes is %d, expected 1, 2, 4 or 8", fn,
                  swizzle_elem);
      return NULL;
    }
  } else {
    swizzle_elem = 0;
  }

  /* Offsets: sorted, merged per axis, zeros dropped; a repeated axis is an error. */
  tirx_axis_offset off[TIRX_AXIS_MAX];
  int n_off = 0;
  for (int i = 0; i < no; i++) {
    if (!valid_axis(o[i].axis)) {
      tirx__error(TIRX_E_UNKNOWN_AXIS, "%s: offset %d has unknown axis %d", fn, i, (int)o[i].axis);
      return NULL;
    }
    for (int j = 0; j < i; j++)
      if (o[j].axis == o[i].axis) {
        tirx__error(TIRX_E_INVALID_ARG, "%s: offset on axis %s given twice", fn,
                    tirx_axis_name(o[i].axis));
        return NULL;
      }
    if (o[i].value != 0) off[n_off++] = o[i];
  }
  qsort(off, (size_t)n_off, sizeof off[0], cmp_offset);

  /* Every coordinate must fit in int64: size, and per axis |offset| + sum |s|(e-1). */
  int64_t size = 1;
  for (int i = 0; i < nd; i++)
    if (!tirx__mul_ok(size, d[i].extent, &size)) {
      tirx__error(TIRX_E_OVERFLOW, "%s: the product of the extents overflows int64", fn);
      return NULL;
    }
  int64_t rcount = 1;
  for (int i = 0; i < nr; i++)
    if (!tirx__mul_ok(rcount, r[i].extent, &rcount)) {
      tirx__error(TIRX_E_OVERFLOW, "%s: the product of the replica extents overflows int64", fn);
      return NULL;
    }
  int64_t reach[TIRX_AXIS_MAX] = {0};
  bool ok = add_reach(nd, d, reach) && add_reach(nr, r, reach);
  for (int i = 0; ok && i < n_off; i++) {
    int64_t v = off[i].value;
    if (v == INT64_MIN || !tirx__add_ok(reach[off[i].axis], v < 0 ? -v : v, &reach[off[i].axis]))
      ok = false;
  }
  /* The span (reach + 1) must fit too, and a swizzled m coordinate must fit in bytes. */
  for (int i = 0; ok && i < TIRX_AXIS_MAX; i++)
    if (reach[i] == INT64_MAX) ok = false;
  if (ok && swizzle_bytes && reach[TIRX_AXIS_M] > INT64_MAX / swizzle_elem) ok = false;
  if (!ok) {
    tirx__error(TIRX_E_OVERFLOW, "%s: a coordinate of the layout overflows int64", fn);
    return NULL;
  }

  tirx_layout *l = tirx__arena_alloc(a, sizeof *l, fn);
  if (!l) return NULL;
  l->nd = nd;
  l->nr = nr;
  l->no = n_off;
  l->size = size;
  l->swizzle_bytes = swizzle_bytes;
  l->swizzle_elem = swizzle_elem;
  if (nd) {
    if (!(l->d = tirx__arena_array(a, (size_t)nd, sizeof *d, fn))) return NULL;
    memcpy(l->d, d, (size_t)nd * sizeof *d);
  }
  if (nr) {
    if (!(l->r = tirx__arena_array(a, (size_t)nr, sizeof *r, fn))) return NULL;
    memcpy(l->r, r, (size_t)nr * sizeof *r);
  }
  if (n_off) {
    if (!(l->o = tirx__arena_array(a, (size_t)n_off, sizeof *o, fn))) return NULL;
    memcpy(l->o, off, (size_t)n_off * sizeof *o);
  }
  if (rank > 0) {
    l->rank = rank;
    if (!(l->dim_begin = tirx__arena_array(a, (size_t)rank + 1, sizeof(int32_t), fn))) return NULL;
    if (!(l->shape = tirx__arena_array(a, (size_t)rank, sizeof(int64_t), fn))) return NULL;
    memcpy(l->dim_begin, dim_begin, ((size_t)rank + 1) * sizeof(int32_t));
    for (int k = 0; k < rank; k++) {
      int64_t e = 1;
      for (int i = dim_begin[k]; i < dim_begin[k + 1]; i++) e *= d[i].extent;
      l->shape[k] = e;
    }
  }
  return l;
}

tirx_layout *tirx__layout_with(tirx_arena *a, const char *fn, const tirx_layout *l, int nd,
                               const tirx_iter *d, int nr, const tirx_iter *r, int rank,
                               const int32_t *dim_begin) {
  return tirx__layout_make(a, fn, nd, d, nr, r, l->no, l->o, rank, dim_begin, l->swizzle_bytes,
                           l->swizzle_elem);
}

tirx_layout *tirx_layout_new(tirx_arena *a, int nd, const tirx_iter *d, int nr,
                             const tirx_iter *r, int no, const tirx_axis_offset *o) {
  return tirx__layout_make(a, "tirx_layout_new", nd, d, nr, r, no, o, 0, NULL, 0, 0);
}

static tirx_layout *strided(tirx_arena *a, const char *fn, int rank, const int64_t *shape,
                            const int64_t *strides, int order /* 0 given, 1 row, 2 col */) {
  if (!a) {
    tirx__error(TIRX_E_NULL_ARG, "%s: arena is NULL", fn);
    return NULL;
  }
  if (rank < 1 || rank > TIRX_LAYOUT_MAX_RANK) {
    tirx__error(TIRX_E_INVALID_ARG, "%s: rank is %d, expected 1 to %d", fn, rank,
                (int)TIRX_LAYOUT_MAX_RANK);
    return NULL;
  }
  if (!shape) {
    tirx__error(TIRX_E_NULL_ARG, "%s: shape is NULL", fn);
    return NULL;
  }
  if (order == 0 && !strides) {
    tirx__error(TIRX_E_NULL_ARG, "%s: strides is NULL", fn);
    return NULL;
  }
  tirx_iter d[TIRX_LAYOUT_MAX_RANK];
  int32_t begin[TIRX_LAYOUT_MAX_RANK + 1];
  for (int k = 0; k < rank; k++)
    if (shape[k] < 1) {
      tirx__error(TIRX_E_INVALID_ARG, "%s: shape[%d] is %lld, expected >= 1", fn, k,
                  (long long)shape[k]);
      return NULL;
    }
  int64_t step = 1;
  for (int i = 0; i < rank; i++) {
    int k = order == 2 ? i : rank - 1 - i;
    d[k].extent = shape[k];
    d[k].axis = TIRX_AXIS_M;
    if (order == 0) {
      d[k].stride = strides[k];
    } else {
      d[k].stride = step;
      if (!tirx__mul_ok(step, shape[k], &step)) {
        tirx__error(TIRX_E_OVERFLOW, "%s: the product of the extents overflows int64", fn);
        return NULL;
      }
    }
  }
  for (int k = 0; k <= rank; k++) begin[k] = k;
  return tirx__layout_make(a, fn, rank, d, 0, NULL, 0, NULL, rank, begin, 0, 0);
}

tirx_layout *tirx_layout_row_major(tirx_arena *a, int rank, const int64_t *shape) {
  return strided(a, "tirx_layout_row_major", rank, shape, NULL, 1);
}
tirx_layout *tirx_layout_col_major(tirx_arena *a, int rank, const int64_t *shape) {
  return strided(a, "tirx_layout_col_major", rank, shape, NULL, 2);
}
tirx_layout *tirx_layout_strided(tirx_arena *a, int rank, const int64_t *shape,
                                 const int64_t *strides) {
  return strided(a, "tirx_layout_strided", rank, shape, strides, 0);
}

/* ---- accessors ---- */

int tirx_layout_num_iters(const tirx_layout *l) { return l ? l->nd : 0; }
int tirx_layout_num_replicas(const tirx_layout *l) { return l ? l->nr : 0; }
int tirx_layout_num_offsets(const tirx_layout *l) { return l ? l->no : 0; }

static tirx_status get_item(const char *fn, const tirx_layout *l, int i, int n, const void *arr,
                            size_t size, void *out) {
  if (!l) return tirx__error(TIRX_E_NULL_ARG, "%s: layout is NULL", fn);
  if (!out) return tirx__error(TIRX_E_NULL_ARG, "%s: out is NULL", fn);
  if (i < 0 || i >= n)
    return tirx__error(TIRX_E_OUT_OF_RANGE, "%s: index %d outside [0, %d)", fn, i, n);
  memcpy(out, (const char *)arr + (size_t)i * size, size);
  return TIRX_OK;
}

tirx_status tirx_layout_iter(const tirx_layout *l, int i, tirx_iter *out) {
  return get_item("tirx_layout_iter", l, i, l ? l->nd : 0, l ? l->d : NULL, sizeof(tirx_iter), out);
}
tirx_status tirx_layout_replica(const tirx_layout *l, int i, tirx_iter *out) {
  return get_item("tirx_layout_replica", l, i, l ? l->nr : 0, l ? l->r : NULL, sizeof(tirx_iter),
                  out);
}
tirx_status tirx_layout_offset_at(const tirx_layout *l, int i, tirx_axis_offset *out) {
  return get_item("tirx_layout_offset_at", l, i, l ? l->no : 0, l ? l->o : NULL,
                  sizeof(tirx_axis_offset), out);
}

int64_t tirx_layout_offset(const tirx_layout *l, tirx_axis axis) {
  if (!l) return 0;
  for (int i = 0; i < l->no; i++)
    if (l->o[i].axis == axis) return l->o[i].value;
  return 0;
}

int64_t tirx_layout_size(const tirx_layout *l) { return l ? l->size : 0; }

int64_t tirx_layout_replica_count(const tirx_layout *l) {
  if (!l) return 0;
  int64_t n = 1;
  for (int i = 0; i < l->nr; i++) n *= l->r[i].extent;
  return n;
}

int tirx_layout_rank(const tirx_layout *l) { return l ? l->rank : 0; }

tirx_status tirx_layout_shape(const tirx_layout *l, int64_t *out, int cap) {
  if (!l) return tirx__error(TIRX_E_NULL_ARG, "tirx_layout_shape: layout is NULL");
  if (!out && l->rank > 0) return tirx__error(TIRX_E_NULL_ARG, "tirx_layout_shape: out is NULL");
  if (cap < l->rank)
    return tirx__error(TIRX_E_BUFFER_TOO_SMALL, "tirx_layout_shape: cap is %d, rank is %d", cap,
                       l->rank);
  for (int k = 0; k < l->rank; k++) out[k] = l->shape[k];
  return TIRX_OK;
}

int tirx_layout_swizzle_bytes(const tirx_layout *l) { return l ? l->swizzle_bytes : 0; }
int tirx_layout_swizzle_elem_bytes(const tirx_layout *l) { return l ? l->swizzle_elem : 0; }

/* ---- swizzle ---- */

int64_t tirx_swizzle_apply(int swizzle_bytes, int elem_bytes, int64_t m) {
  if (swizzle_bytes == 0) return m;
  if ((swizzle_bytes != 32 && swizzle_bytes != 64 && swizzle_bytes != 128) ||
      (elem_bytes != 1 && elem_bytes != 2 && elem_bytes != 4 && elem_bytes != 8))
    return -1;
  /* In bytes: bits [4, 4+b) ^= bits [7, 7+b). Element-granular bits below 16 bytes stay. */
  int64_t bits = swizzle_bytes == 32 ? 1 : swizzle_bytes == 64 ? 2 : 3;
  int64_t mask = ((int64_t)1 << bits) - 1;
  int64_t byte;
  if (__builtin_mul_overflow(m, (int64_t)elem_bytes, &byte)) return -1;
  int64_t x = byte ^ (((byte >> 7) & mask) << 4);
  return x / elem_bytes;
}

tirx_layout *tirx_layout_swizzle(tirx_arena *a, const tirx_layout *l, int swizzle_bytes,
                                 int elem_bytes) {
  static const char fn[] = "tirx_layout_swizzle";
  if (!tirx__layout_check(l, fn, "layout")) return NULL;
  if (swizzle_bytes == 0) elem_bytes = 0;
  return tirx__layout_make(a, fn, l->nd, l->d, l->nr, l->r, l->no, l->o, l->rank, l->dim_begin,
                           swizzle_bytes, elem_bytes);
}

/* ---- evaluation ---- */

void tirx__layout_digits(const tirx_layout *l, int64_t x, int64_t *digits) {
  for (int i = l->nd - 1; i >= 0; i--) {
    digits[i] = x % l->d[i].extent;
    x /= l->d[i].extent;
  }
}

/* tirx_layout_eval, with the messages naming fn (tirx_layout_eval_nd's come through here). */
static tirx_status eval_in(const char *fn, const tirx_layout *l, int64_t x, tirx_coord *out,
                           int64_t cap, int64_t *count) {
  if (!l) return tirx__error(TIRX_E_NULL_ARG, "%s: layout is NULL", fn);
  if (!count) return tirx__error(TIRX_E_NULL_ARG, "%s: count is NULL", fn);
  if (cap < 0) return tirx__error(TIRX_E_INVALID_ARG, "%s: cap is negative", fn);
  if (cap > 0 && !out) return tirx__error(TIRX_E_NULL_ARG, "%s: out is NULL", fn);
  if (x < 0 || x >= l->size)
    return tirx__error(TIRX_E_OUT_OF_RANGE, "%s: index %lld outside [0, %lld)", fn, (long long)x,
                       (long long)l->size);
  int64_t n = tirx_layout_replica_count(l);
  *count = n;
  if (cap < n)
    return tirx__error(TIRX_E_BUFFER_TOO_SMALL, "%s: %lld points, cap is %lld", fn, (long long)n,
                       (long long)cap);
  tirx_coord base;
  memset(&base, 0, sizeof base);
  for (int i = 0; i < l->no; i++) base.v[l->o[i].axis] = l->o[i].value;
  for (int i = l->nd - 1; i >= 0; i--) {
    int64_t digit = x % l->d[i].extent;
    x /= l->d[i].extent;
    base.v[l->d[i].axis] += digit * l->d[i].stride;
  }
  for (int64_t k = 0; k < n; k++) {
    tirx_coord c = base;
    int64_t j = k;
    for (int i = l->nr - 1; i >= 0; i--) {
      c.v[l->r[i].axis] += (j % l->r[i].extent) * l->r[i].stride;
      j /= l->r[i].extent;
    }
    if (l->swizzle_bytes)
      c.v[TIRX_AXIS_M] = tirx_swizzle_apply(l->swizzle_bytes, l->swizzle_elem, c.v[TIRX_AXIS_M]);
    out[k] = c;
  }
  return TIRX_OK;
}

tirx_status tirx_layout_eval(const tirx_layout *l, int64_t x, tirx_coord *out, int64_t cap,
                             int64_t *count) {
  return eval_in("tirx_layout_eval", l, x, out, cap, count);
}

tirx_status tirx_layout_eval_nd(const tirx_layout *l, const int64_t *index, tirx_coord *out,
                                int64_t cap, int64_t *count) {
  static const char fn[] = "tirx_layout_eval_nd";
  if (!l) return tirx__error(TIRX_E_NULL_ARG, "%s: layout is NULL", fn);
  if (l->rank == 0)
    return tirx__error(TIRX_E_INVALID_ARG, "%s: layout is not grouped (it has no logical shape)", fn);
  if (!index) return tirx__error(TIRX_E_NULL_ARG, "%s: index is NULL", fn);
  int64_t x = 0;
  for (int k = 0; k < l->rank; k++) {
    if (index[k] < 0 || index[k] >= l->shape[k])
      return tirx__error(TIRX_E_OUT_OF_RANGE, "%s: index[%d] = %lld outside [0, %lld)", fn, k,
                         (long long)index[k], (long long)l->shape[k]);
    x = x * l->shape[k] + index[k];
  }
  return eval_in(fn, l, x, out, cap, count);
}

tirx_status tirx_layout_eval_m(const tirx_layout *l, int64_t x, int64_t *out) {
  static const char fn[] = "tirx_layout_eval_m";
  if (!l) return tirx__error(TIRX_E_NULL_ARG, "%s: layout is NULL", fn);
  if (!out) return tirx__error(TIRX_E_NULL_ARG, "%s: out is NULL", fn);
  if (x < 0 || x >= l->size)
    return tirx__error(TIRX_E_OUT_OF_RANGE, "%s: index %lld outside [0, %lld)", fn, (long long)x,
                       (long long)l->size);
  int64_t m = tirx_layout_offset(l, TIRX_AXIS_M);
  for (int i = l->nd - 1; i >= 0; i--) {
    int64_t digit = x % l->d[i].extent;
    x /= l->d[i].extent;
    if (l->d[i].axis == TIRX_AXIS_M) m += digit * l->d[i].stride;
  }
  *out = l->swizzle_bytes ? tirx_swizzle_apply(l->swizzle_bytes, l->swizzle_elem, m) : m;
  return TIRX_OK;
}

tirx_status tirx_layout_span(const tirx_layout *l, tirx_axis axis, int64_t *min_out,
                             int64_t *span_out) {
  static const char fn[] = "tirx_layout_span";
  if (!l) return tirx__error(TIRX_E_NULL_ARG, "%s: layout is NULL", fn);
  if (!span_out) return tirx__error(TIRX_E_NULL_ARG, "%s: span_out is NULL", fn);
  if (!valid_axis(axis)) return tirx__error(TIRX_E_UNKNOWN_AXIS, "%s: unknown axis %d", fn, (int)axis);
  int64_t lo = tirx_layout_offset(l, axis), hi = lo;
  for (int pass = 0; pass < 2; pass++) {
    const tirx_iter *it = pass ? l->r : l->d;
    int n = pass ? l->nr : l->nd;
    for (int i = 0; i < n; i++) {
      if (it[i].axis != axis) continue;
      int64_t reach = it[i].stride * (it[i].extent - 1);
      if (reach > 0) hi += reach;
      else lo += reach;
    }
  }
  if (min_out) *min_out = lo;
  *span_out = hi - lo + 1;
  return TIRX_OK;
}

/* ---- printer ---- */

static void put_iter(tirx__strbuf *sb, const tirx_iter *it) {
  tirx__sb_printf(sb, "%lld@%s", (long long)it->stride, tirx_axis_name(it->axis));
}

static char *format(const tirx_layout *l) {
  tirx__strbuf sb = {0};
  /* extents */
  tirx__sb_append(&sb, "(");
  if (l->rank > 0) {
    for (int k = 0; k < l->rank; k++) {
      if (k) tirx__sb_append(&sb, ",");
      tirx__sb_append(&sb, "(");
      for (int i = l->dim_begin[k]; i < l->dim_begin[k + 1]; i++)
        tirx__sb_printf(&sb, i > l->dim_begin[k] ? ",%lld" : "%lld", (long long)l->d[i].extent);
      tirx__sb_append(&sb, ")");
    }
  } else {
    for (int i = 0; i < l->nd; i++)
      tirx__sb_printf(&sb, i ? ",%lld" : "%lld", (long long)l->d[i].extent);
  }
  tirx__sb_append(&sb, "):(");
  if (l->rank > 0) {
    for (int k = 0; k < l->rank; k++) {
      if (k) tirx__sb_append(&sb, ",");
      tirx__sb_append(&sb, "(");
      for (int i = l->dim_begin[k]; i < l->dim_begin[k + 1]; i++) {
        if (i > l->dim_begin[k]) tirx__sb_append(&sb, ",");
        put_iter(&sb, &l->d[i]);
      }
      tirx__sb_append(&sb, ")");
    }
  } else {
    for (int i = 0; i < l->nd; i++) {
      if (i) tirx__sb_append(&sb, ",");
      put_iter(&sb, &l->d[i]);
    }
  }
  tirx__sb_append(&sb, ")");
  if (l->nr) {
    tirx__sb_append(&sb, "+[");
    for (int i = 0; i < l->nr; i++) {
      tirx__sb_printf(&sb, i ? ",%lld:" : "%lld:", (long long)l->r[i].extent);
      put_iter(&sb, &l->r[i]);
    }
    tirx__sb_append(&sb, "]");
  }
  for (int i = 0; i < l->no; i++)
    tirx__sb_printf(&sb, "+%lld@%s", (long long)l->o[i].value, tirx_axis_name(l->o[i].axis));
  if (l->swizzle_bytes) tirx__sb_printf(&sb, "^sw(%d,%d)", l->swizzle_bytes, l->swizzle_elem);
  return tirx__sb_finish(&sb);
}

char *tirx_layout_str(const tirx_layout *l) {
  if (!l) {
    tirx__error(TIRX_E_NULL_ARG, "tirx_layout_str: layout is NULL");
    return NULL;
  }
  char *s = format(l);
  if (!s) tirx__error(TIRX_E_NO_MEMORY, "tirx_layout_str: out of memory");
  return s;
}

int64_t tirx_layout_format(const tirx_layout *l, char *buf, size_t cap) {
  if (!l) {
    tirx__error(TIRX_E_NULL_ARG, "tirx_layout_format: layout is NULL");
    return -1;
  }
  char *s = format(l);
  if (!s) {
    tirx__error(TIRX_E_NO_MEMORY, "tirx_layout_format: out of memory");
    return -1;
  }
  size_t n = strlen(s);
  if (buf && cap > 0) {
    size_t k = n < cap - 1 ? n : cap - 1;
    memcpy(buf, s, k);
    buf[k] = '\0';
  }
  free(s);
  return (int64_t)n;
}
