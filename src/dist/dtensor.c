/*
 * Distributed tensors: a global shape, a layout over pid and m, and a partial flag. Creation
 * checks the layout's rules (tirx/dist.h) and derives each holding rank's local shape and
 * strides; tirx_dtensor_check compares a rank's buffer with them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../layout/layout_internal.h"
#include "dist.h"

const char *tirx_partial_name(tirx_partial p) {
  switch (p) {
  case TIRX_PARTIAL_NONE: return "none";
  case TIRX_PARTIAL_SUM: return "sum";
  case TIRX_PARTIAL_PROD: return "prod";
  case TIRX_PARTIAL_MAX: return "max";
  case TIRX_PARTIAL_MIN: return "min";
  }
  return NULL;
}

int tirx__nccl_dtype(tirx_dtype t) {
  switch (t) {
  case TIRX_F32: return TIRX__NCCL_FLOAT32;
  case TIRX_F16: return TIRX__NCCL_FLOAT16;
  case TIRX_BF16: return TIRX__NCCL_BFLOAT16;
  case TIRX_F64: return TIRX__NCCL_FLOAT64;
  case TIRX_I8: return TIRX__NCCL_INT8;
  case TIRX_I32: return TIRX__NCCL_INT32;
  case TIRX_U32: return TIRX__NCCL_UINT32;
  case TIRX_I64: return TIRX__NCCL_INT64;
  default: return TIRX__NCCL_UINT8; /* u8, and bool and fp8 moved as bytes */
  }
}

/* "(64,128)" into buf. */
static const char *shape_text(char *buf, size_t cap, int rank, const int64_t *shape) {
  size_t n = (size_t)snprintf(buf, cap, "(");
  for (int k = 0; k < rank && n < cap; k++)
    n += (size_t)snprintf(buf + n, cap - n, "%s%lld", k ? "," : "", (long long)shape[k]);
  if (n < cap) snprintf(buf + n, cap - n, ")");
  return buf;
}

/* The iters of a dimension's local part as "(4,8):(16,1)". */
static const char *iters_text(char *buf, size_t cap, int n, const tirx_iter *it) {
  size_t len = (size_t)snprintf(buf, cap, "(");
  for (int i = 0; i < n && len < cap; i++)
    len += (size_t)snprintf(buf + len, cap - len, "%s%lld", i ? "," : "", (long long)it[i].extent);
  if (len < cap) len += (size_t)snprintf(buf + len, cap - len, "):(");
  for (int i = 0; i < n && len < cap; i++)
    len += (size_t)snprintf(buf + len, cap - len, "%s%lld", i ? "," : "", (long long)it[i].stride);
  if (len < cap) snprintf(buf + len, cap - len, ")");
  return buf;
}

static bool axis_ok(tirx_axis a) { return a == TIRX_AXIS_M || a == TIRX_AXIS_PID; }

/* The rules a layout must keep before it is grouped: axes, swizzle, replicas. */
static tirx_status check_parts(const char *fn, const tirx_layout *l) {
  for (int i = 0; i < l->nd; i++)
    if (!axis_ok(l->d[i].axis))
      return tirx__error(TIRX_E_INVALID_ARG,
                         "%s: layout uses axis %s; a distributed layout uses pid and m only", fn,
                         tirx_axis_name(l->d[i].axis));
  for (int i = 0; i < l->nr; i++) {
    if (!axis_ok(l->r[i].axis))
      return tirx__error(TIRX_E_INVALID_ARG,
                         "%s: layout uses axis %s; a distributed layout uses pid and m only", fn,
                         tirx_axis_name(l->r[i].axis));
    if (l->r[i].axis == TIRX_AXIS_M && l->r[i].stride != 0 && l->r[i].extent > 1)
      return tirx__error(TIRX_E_INVALID_ARG,
                         "%s: replica [%lld:%lld@m] is on m; a distributed layout places copies "
                         "on pid",
                         fn, (long long)l->r[i].extent, (long long)l->r[i].stride);
  }
  for (int i = 0; i < l->no; i++)
    if (!axis_ok(l->o[i].axis))
      return tirx__error(TIRX_E_INVALID_ARG,
                         "%s: layout uses axis %s; a distributed layout uses pid and m only", fn,
                         tirx_axis_name(l->o[i].axis));
  if (l->swizzle_bytes)
    return tirx__error(TIRX_E_INVALID_ARG, "%s: layout is swizzled; a distributed layout has no "
                                           "swizzle", fn);
  return TIRX_OK;
}

/* Splits the canonical layout's dims into local parts (shape, strides, density). */
static tirx_status derive_local(const char *fn, tirx_dtensor *t) {
  const tirx_layout *l = t->layout;
  tirx_iter local[TIRX_LAYOUT_MAX_RANK];
  int nlocal = 0;
  t->local_size = 1;
  for (int k = 0; k < t->rank; k++) {
    tirx_iter m[TIRX_LAYOUT_MAX_ITERS];
    int nm = 0;
    for (int i = l->dim_begin[k]; i < l->dim_begin[k + 1]; i++) {
      tirx_iter it = l->d[i];
      if (it.axis != TIRX_AXIS_M) continue;
      /* Merge with the previous m iter when they are adjacent once the pid iters are out. */
      if (nm > 0 && m[nm - 1].stride == it.extent * it.stride) {
        m[nm - 1].extent *= it.extent;
        m[nm - 1].stride = it.stride;
      } else {
        m[nm++] = it;
      }
    }
    if (nm > 1) {
      char text[256];
      return tirx__error(TIRX_E_NOT_REPRESENTABLE,
                         "%s: dim %d's local part %s is not one stride; a local buffer has one "
                         "stride per dimension",
                         fn, k, iters_text(text, sizeof text, nm, m));
    }
    t->local_shape[k] = nm ? m[0].extent : 1;
    t->local_strides[k] = nm ? m[0].stride : 1;
    if (nm && m[0].stride <= 0)
      return tirx__error(TIRX_E_INVALID_ARG,
                         "%s: dim %d has m stride %lld; local strides must be positive", fn, k,
                         (long long)m[0].stride);
    if (nm) local[nlocal++] = m[0];
    t->local_size *= t->local_shape[k]; /* cannot overflow: a divisor of the global size */
  }
  /* Dense: sorted by stride, the strides are 1, e0, e0*e1, ... */
  for (int i = 1; i < nlocal; i++)
    for (int j = i; j > 0 && local[j].stride < local[j - 1].stride; j--) {
      tirx_iter tmp = local[j];
      local[j] = local[j - 1];
      local[j - 1] = tmp;
    }
  int64_t expect = 1;
  t->local_dense = true;
  for (int i = 0; i < nlocal; i++) {
    if (local[i].stride != expect) t->local_dense = false;
    if (!tirx__mul_ok(expect, local[i].extent, &expect)) t->local_dense = false;
  }
  return TIRX_OK;
}

/* Enumerates the ranks the pid iters and replicas reach: one part per rank, inside the mesh. */
static tirx_status derive_ranks(const char *fn, tirx_dtensor *t) {
  const tirx_layout *l = t->layout;
  tirx_iter pid[2 * TIRX_LAYOUT_MAX_ITERS];
  int np = 0;
  t->nshards = 1;
  t->ncopies = 1;
  for (int i = 0; i < l->nd; i++)
    if (l->d[i].axis == TIRX_AXIS_PID) {
      pid[np++] = l->d[i];
      if (!tirx__mul_ok(t->nshards, l->d[i].extent, &t->nshards)) t->nshards = INT64_MAX;
    }
  for (int i = 0; i < l->nr; i++) {
    pid[np++] = l->r[i]; /* canonical replicas are on pid only (m ones were rejected) */
    if (!tirx__mul_ok(t->ncopies, l->r[i].extent, &t->ncopies)) t->ncopies = INT64_MAX;
  }
  t->pid_offset = tirx_layout_offset(l, TIRX_AXIS_PID);
  int64_t parts;
  if (!tirx__mul_ok(t->nshards, t->ncopies, &parts) || parts > t->nranks)
    return tirx__error(TIRX_E_INVALID_ARG,
                       "%s: layout needs %lld ranks (%lld parts x %lld copies), the mesh has %d",
                       fn, t->nshards == INT64_MAX || t->ncopies == INT64_MAX
                               ? (long long)INT64_MAX
                               : (long long)(t->nshards * t->ncopies),
                       (long long)t->nshards, (long long)t->ncopies, t->nranks);
  t->holds = tirx__arena_array(t->arena, (size_t)t->nranks, 1, fn);
  if (!t->holds) return TIRX_E_NO_MEMORY;
  int64_t digit[2 * TIRX_LAYOUT_MAX_ITERS] = {0};
  for (int64_t n = 0; n < parts; n++) {
    int64_t p = t->pid_offset; /* bounded: every coordinate of a layout fits in int64 */
    for (int i = 0; i < np; i++) p += digit[i] * pid[i].stride;
    if (p < 0 || p >= t->nranks)
      return tirx__error(TIRX_E_OUT_OF_RANGE,
                         "%s: layout places a part on rank %lld, outside the mesh [0, %d)", fn,
                         (long long)p, t->nranks);
    if (t->holds[p])
      return tirx__error(TIRX_E_INVALID_ARG,
                         "%s: layout places two parts on rank %lld; a rank holds at most one part",
                         fn, (long long)p);
    t->holds[p] = 1;
    for (int i = np - 1; i >= 0 && ++digit[i] == pid[i].extent; i--) digit[i] = 0;
  }
  t->nholders = (int)parts;
  return TIRX_OK;
}

static tirx_status dtensor_make(const char *fn, tirx_dtype dtype, int rank, const int64_t *shape,
                                const tirx_layout *layout, int nranks, tirx_partial partial,
                                tirx_dtensor **out) {
  if (!out) return tirx__error(TIRX_E_NULL_ARG, "%s: out is NULL", fn);
  *out = NULL;
  if (!shape) return tirx__error(TIRX_E_NULL_ARG, "%s: shape is NULL", fn);
  if (!layout) return tirx__error(TIRX_E_NULL_ARG, "%s: layout is NULL", fn);
  if (tirx_dtype_size(dtype) == 0)
    return tirx__error(TIRX_E_INVALID_ARG, "%s: dtype %d is not a tirx_dtype", fn, (int)dtype);
  if (rank < 1 || rank > TIRX_LAYOUT_MAX_RANK)
    return tirx__error(TIRX_E_INVALID_ARG, "%s: rank is %d, expected 1 to %d", fn, rank,
                       TIRX_LAYOUT_MAX_RANK);
  int64_t size = 1;
  for (int k = 0; k < rank; k++) {
    if (shape[k] < 1)
      return tirx__error(TIRX_E_INVALID_ARG, "%s: shape[%d] is %lld, expected >= 1", fn, k,
                         (long long)shape[k]);
    if (!tirx__mul_ok(size, shape[k], &size))
      return tirx__error(TIRX_E_OVERFLOW, "%s: the global shape's size overflows int64", fn);
  }
  if (nranks < 1 || nranks > TIRX_DIST_MAX_RANKS)
    return tirx__error(TIRX_E_INVALID_ARG, "%s: nranks is %d, expected 1 to %d", fn, nranks,
                       TIRX_DIST_MAX_RANKS);
  if (!tirx_partial_name(partial))
    return tirx__error(TIRX_E_INVALID_ARG, "%s: partial %d is not a tirx_partial", fn,
                       (int)partial);
  tirx_status st = check_parts(fn, layout);
  if (st != TIRX_OK) return st;
  if (layout->size != size) {
    char text[256];
    return tirx__error(TIRX_E_INVALID_ARG,
                       "%s: layout has %lld elements, global shape %s has %lld", fn,
                       (long long)layout->size, shape_text(text, sizeof text, rank, shape),
                       (long long)size);
  }
  tirx_arena *a = tirx_arena_create();
  if (!a) return tirx__error(TIRX_E_NO_MEMORY, "%s: out of memory", fn);
  tirx_dtensor *t = tirx__arena_alloc(a, sizeof *t, fn);
  if (!t) {
    tirx_arena_destroy(a);
    return TIRX_E_NO_MEMORY;
  }
  t->arena = a;
  t->dtype = dtype;
  t->rank = rank;
  memcpy(t->shape, shape, (size_t)rank * sizeof *shape);
  t->nranks = nranks;
  t->partial = partial;
  tirx_layout *grouped = tirx_layout_group(a, layout, rank, shape);
  if (!grouped) {
    char text[256], why[TIRX__ERROR_MAX];
    st = tirx_last_status();
    snprintf(why, sizeof why, "%s", tirx_last_error());
    tirx_arena_destroy(a);
    return tirx__error(st, "%s: layout cannot be grouped to the global shape %s: %s", fn,
                       shape_text(text, sizeof text, rank, shape), why);
  }
  t->layout = tirx_layout_canonicalize(a, grouped);
  if (!t->layout) {
    tirx_arena_destroy(a);
    return tirx_last_status();
  }
  int64_t m_offset = tirx_layout_offset(t->layout, TIRX_AXIS_M);
  if (m_offset != 0) {
    tirx_arena_destroy(a);
    return tirx__error(TIRX_E_INVALID_ARG,
                       "%s: layout has offset %lld on m; a local part starts at its buffer "
                       "(offset 0)",
                       fn, (long long)m_offset);
  }
  st = derive_local(fn, t);
  if (st == TIRX_OK) st = derive_ranks(fn, t);
  if (st != TIRX_OK) {
    tirx_arena_destroy(a);
    return st;
  }
  *out = t;
  return TIRX_OK;
}

tirx_status tirx_dtensor_create(tirx_dtype dtype, int rank, const int64_t *shape,
                                const tirx_layout *layout, int nranks, tirx_partial partial,
                                tirx_dtensor **out) {
  return dtensor_make("tirx_dtensor_create", dtype, rank, shape, layout, nranks, partial, out);
}

tirx_dtensor *tirx__dtensor_clone(const tirx_dtensor *t, const char *fn) {
  tirx_dtensor *c = NULL;
  dtensor_make(fn, t->dtype, t->rank, t->shape, t->layout, t->nranks, t->partial, &c);
  return c;
}

void tirx_dtensor_destroy(tirx_dtensor *t) {
  if (t) tirx_arena_destroy(t->arena);
}

tirx_dtype tirx_dtensor_dtype(const tirx_dtensor *t) { return t ? t->dtype : (tirx_dtype)0; }
int tirx_dtensor_rank(const tirx_dtensor *t) { return t ? t->rank : 0; }
int tirx_dtensor_nranks(const tirx_dtensor *t) { return t ? t->nranks : 0; }
tirx_partial tirx_dtensor_partial(const tirx_dtensor *t) {
  return t ? t->partial : TIRX_PARTIAL_NONE;
}
const tirx_layout *tirx_dtensor_layout(const tirx_dtensor *t) { return t ? t->layout : NULL; }
int64_t tirx_dtensor_local_size(const tirx_dtensor *t) { return t ? t->local_size : 0; }

bool tirx_dtensor_on_rank(const tirx_dtensor *t, int rank) {
  return t && rank >= 0 && rank < t->nranks && t->holds[rank];
}

tirx_status tirx_dtensor_local_shape(const tirx_dtensor *t, int64_t *shape, int64_t *strides,
                                     int cap) {
  static const char fn[] = "tirx_dtensor_local_shape";
  if (!t) return tirx__error(TIRX_E_NULL_ARG, "%s: t is NULL", fn);
  if (cap < t->rank)
    return tirx__error(TIRX_E_BUFFER_TOO_SMALL, "%s: cap is %d, the rank is %d", fn, cap,
                       t->rank);
  if (shape) memcpy(shape, t->local_shape, (size_t)t->rank * sizeof *shape);
  if (strides) memcpy(strides, t->local_strides, (size_t)t->rank * sizeof *strides);
  return TIRX_OK;
}

tirx_status tirx_dtensor_check(const tirx_dtensor *t, int rank, const tirx_tensor_arg *local) {
  static const char fn[] = "tirx_dtensor_check";
  if (!t) return tirx__error(TIRX_E_NULL_ARG, "%s: t is NULL", fn);
  if (rank < 0 || rank >= t->nranks)
    return tirx__error(TIRX_E_OUT_OF_RANGE, "%s: rank %d is outside [0, %d)", fn, rank,
                       t->nranks);
  if (!t->holds[rank]) return TIRX_OK;
  if (!local) return tirx__error(TIRX_E_NULL_ARG, "%s: rank %d: local is NULL", fn, rank);
  if (!local->data) return tirx__error(TIRX_E_NULL_ARG, "%s: rank %d: data is NULL", fn, rank);
  if (local->dtype != t->dtype)
    return tirx__error(TIRX_E_LAUNCH_ARG, "%s: rank %d: dtype is %s, expected %s", fn, rank,
                       tirx_dtype_name(local->dtype) ? tirx_dtype_name(local->dtype) : "invalid",
                       tirx_dtype_name(t->dtype));
  if (local->rank != t->rank)
    return tirx__error(TIRX_E_LAUNCH_ARG, "%s: rank %d: the buffer has %d dimensions, expected %d",
                       fn, rank, local->rank, t->rank);
  if (!local->shape) return tirx__error(TIRX_E_NULL_ARG, "%s: rank %d: shape is NULL", fn, rank);
  for (int k = 0; k < t->rank; k++)
    if (local->shape[k] != t->local_shape[k])
      return tirx__error(TIRX_E_LAUNCH_ARG, "%s: rank %d: shape[%d] is %lld, expected %lld", fn,
                         rank, k, (long long)local->shape[k], (long long)t->local_shape[k]);
  int64_t dense = 1;
  for (int k = t->rank - 1; k >= 0; k--) {
    int64_t stride = local->strides ? local->strides[k] : dense;
    dense *= t->local_shape[k]; /* the local size fits: it divides the global size */
    if (t->local_shape[k] > 1 && stride != t->local_strides[k])
      return tirx__error(TIRX_E_LAUNCH_ARG, "%s: rank %d: strides[%d] is %lld, expected %lld", fn,
                         rank, k, (long long)stride, (long long)t->local_strides[k]);
  }
  int align = tirx_dtype_size(t->dtype);
  if ((uintptr_t)local->data % (uintptr_t)align)
    return tirx__error(TIRX_E_LAUNCH_ARG, "%s: rank %d: data %p is not aligned to %d bytes", fn,
                       rank, local->data, align);
  return TIRX_OK;
}

char *tirx_dtensor_str(const tirx_dtensor *t) {
  if (!t) return NULL;
  tirx__strbuf sb = {0};
  tirx__sb_printf(&sb, "%s[", tirx_dtype_name(t->dtype));
  for (int k = 0; k < t->rank; k++) tirx__sb_printf(&sb, "%s%lld", k ? "," : "", (long long)t->shape[k]);
  tirx__sb_printf(&sb, "] over %d rank%s: ", t->nranks, t->nranks == 1 ? "" : "s");
  char *l = tirx_layout_str(t->layout);
  tirx__sb_append(&sb, l ? l : "?");
  free(l);
  if (t->partial != TIRX_PARTIAL_NONE)
    tirx__sb_printf(&sb, " partial %s", tirx_partial_name(t->partial));
  return tirx__sb_finish(&sb);
}

/* ---- NCCL's view ---------------------------------------------------------------------------- */

const tirx_layout *tirx__dtensor_view(tirx_arena *a, const tirx_dtensor *t, int64_t pid_mult,
                                      int64_t blk, int64_t hi_mult) {
  static const char fn[] = "tirx_collective_create";
  const tirx_layout *l = t->layout;
  tirx_iter d[TIRX_LAYOUT_MAX_ITERS];
  int32_t dim_begin[TIRX_LAYOUT_MAX_RANK + 1];
  int nd = 0;
  for (int k = 0; k < l->rank; k++) {
    dim_begin[k] = nd;
    for (int i = l->dim_begin[k]; i < l->dim_begin[k + 1]; i++) {
      tirx_iter it = l->d[i];
      if (nd + 2 > TIRX_LAYOUT_MAX_ITERS) return NULL;
      if (it.axis == TIRX_AXIS_PID) {
        if (!tirx__mul_ok(it.stride, pid_mult, &it.stride)) return NULL;
        it.axis = TIRX_AXIS_M;
        d[nd++] = it;
        continue;
      }
      int64_t end;
      if (blk <= 0 || (tirx__mul_ok(it.stride, it.extent, &end) && end <= blk)) {
        d[nd++] = it; /* no split asked, or entirely below blk */
        continue;
      }
      if (it.stride % blk == 0) { /* entirely above: a multiple of blk */
        if (!tirx__mul_ok(it.stride / blk, hi_mult, &it.stride)) return NULL;
        d[nd++] = it;
        continue;
      }
      /* Straddles blk: split (e):(s) into (e/f, f):(blk, s) with f = blk / s. */
      if (blk % it.stride != 0) return NULL;
      int64_t f = blk / it.stride;
      if (it.extent % f != 0) return NULL;
      d[nd++] = (tirx_iter){it.extent / f, hi_mult, TIRX_AXIS_M};
      d[nd++] = (tirx_iter){f, it.stride, TIRX_AXIS_M};
    }
  }
  dim_begin[l->rank] = nd;
  int64_t off;
  if (!tirx__mul_ok(t->pid_offset, pid_mult, &off)) return NULL;
  tirx_axis_offset o = {TIRX_AXIS_M, off};
  /* A layout that cannot be made (an overflow) is "not this collective", not an error of the
   * caller's call: the thread's last error is put back as it was. */
  tirx_status saved = tirx_last_status();
  char msg[TIRX__ERROR_MAX];
  snprintf(msg, sizeof msg, "%s", tirx_last_error());
  const tirx_layout *v =
      tirx__layout_make(a, fn, nd, d, 0, NULL, 1, &o, l->rank, dim_begin, 0, 0);
  if (!v) {
    if (saved == TIRX_OK) tirx_clear_error();
    else tirx__error(saved, "%s", msg);
  }
  return v;
}
