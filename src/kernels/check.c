/* The ops' tensor argument checks: each names the op and the argument. */
#include "kernels_internal.h"

#include <stdio.h>
#include <stdlib.h>

static const char *dtype_name(tirx_dtype t) {
  const char *s = tirx_dtype_name(t);
  return s ? s : "invalid";
}

/* "[a, b]" of n entries into buf. */
static const char *shape_str(char *buf, size_t cap, int n, const int64_t *v) {
  size_t at = 0;
  at += (size_t)snprintf(buf, cap, "[");
  for (int i = 0; i < n && at < cap; i++)
    at += (size_t)snprintf(buf + at, cap - at, "%s%lld", i ? ", " : "", (long long)v[i]);
  if (at < cap)
    snprintf(buf + at, cap - at, "]");
  return buf;
}

tirx_status tirx__check_tensor(const char *fn, const char *name, const tirx_tensor_arg *t,
                               int rank) {
  if (!t)
    return tirx__error(TIRX_E_NULL_ARG, "%s: %s is NULL", fn, name);
  if (!t->data)
    return tirx__error(TIRX_E_NULL_ARG, "%s: %s->data is NULL", fn, name);
  if ((uintptr_t)t->data % 16)
    return tirx__error(TIRX_E_INVALID_ARG, "%s: %s->data %p is not aligned to 16 bytes", fn,
                       name, t->data);
  if (t->rank != rank)
    return tirx__error(TIRX_E_INVALID_ARG, "%s: %s has rank %d, expected %d", fn, name,
                       t->rank, rank);
  if (!t->shape)
    return tirx__error(TIRX_E_NULL_ARG, "%s: %s->shape is NULL", fn, name);
  for (int i = 0; i < rank; i++)
    if (t->shape[i] < 1) {
      char s[128];
      return tirx__error(TIRX_E_INVALID_ARG, "%s: %s has shape %s, expected extents >= 1", fn,
                         name, shape_str(s, sizeof s, rank, t->shape));
    }
  return TIRX_OK;
}

tirx_status tirx__check_shape(const char *fn, const char *name, const tirx_tensor_arg *t,
                              const int64_t *want, const char *what) {
  for (int i = 0; i < t->rank; i++)
    if (t->shape[i] != want[i]) {
      char got[128], exp[128];
      return tirx__error(TIRX_E_INVALID_ARG, "%s: %s has shape %s, expected %s = %s", fn, name,
                         shape_str(got, sizeof got, t->rank, t->shape), what,
                         shape_str(exp, sizeof exp, t->rank, want));
    }
  return TIRX_OK;
}

tirx_status tirx__check_dense(const char *fn, const char *name, const tirx_tensor_arg *t) {
  if (!t->strides)
    return TIRX_OK;
  int64_t want = 1;
  for (int i = t->rank - 1; i >= 0; i--) {
    if (t->strides[i] != want && t->shape[i] != 1) {
      char got[128];
      return tirx__error(TIRX_E_INVALID_ARG, "%s: %s has strides %s, expected dense row-major",
                         fn, name, shape_str(got, sizeof got, t->rank, t->strides));
    }
    want *= t->shape[i];
  }
  return TIRX_OK;
}

tirx_status tirx__check_dtype(const char *fn, const char *name, const tirx_tensor_arg *t,
                              tirx_dtype want) {
  if (t->dtype != want)
    return tirx__error(TIRX_E_TYPE, "%s: %s has dtype %s, expected %s", fn, name,
                       dtype_name(t->dtype), dtype_name(want));
  return TIRX_OK;
}

tirx_status tirx__check_row(const char *fn, const char *name, const tirx_tensor_arg *t,
                            tirx_dtype dtype, int64_t n) {
  if (t && t->rank != 1 && t->rank != 2)
    return tirx__error(TIRX_E_INVALID_ARG, "%s: %s has rank %d, expected 1 ([W]) or 2 ([1, W])",
                       fn, name, t->rank);
  tirx_status st = tirx__check_tensor(fn, name, t, t ? t->rank : 1);
  if (st != TIRX_OK)
    return st;
  int64_t want[2] = {1, n};
  char what[64];
  snprintf(what, sizeof what, t->rank == 2 ? "[1, W]" : "[W]");
  if ((st = tirx__check_shape(fn, name, t, t->rank == 2 ? want : want + 1, what)) != TIRX_OK ||
      (st = tirx__check_dense(fn, name, t)) != TIRX_OK)
    return st;
  return tirx__check_dtype(fn, name, t, dtype);
}

/* The calling thread's preparations between tirx_kernels_prepare_begin and _end. */
typedef struct preparing {
  tirx_future **futures;
  int count, cap;
} preparing;
static _Thread_local preparing *tls_preparing;

tirx_status tirx_kernels_prepare_begin(void) {
  if (tls_preparing)
    return tirx__error(TIRX_E_INVALID_ARG,
                       "tirx_kernels_prepare_begin: this thread is already preparing (call "
                       "tirx_kernels_prepare_end first)");
  tls_preparing = calloc(1, sizeof *tls_preparing);
  if (!tls_preparing)
    return tirx__error(TIRX_E_NO_MEMORY, "tirx_kernels_prepare_begin: out of memory");
  return TIRX_OK;
}

tirx_status tirx_kernels_prepare_end(tirx_future ***futures, int *count) {
  static const char fn[] = "tirx_kernels_prepare_end";
  if (futures)
    *futures = NULL;
  if (count)
    *count = 0;
  if (!futures)
    return tirx__error(TIRX_E_NULL_ARG, "%s: futures is NULL", fn);
  if (!count)
    return tirx__error(TIRX_E_NULL_ARG, "%s: count is NULL", fn);
  preparing *p = tls_preparing;
  if (!p)
    return tirx__error(TIRX_E_INVALID_ARG,
                       "%s: this thread is not preparing (tirx_kernels_prepare_begin)", fn);
  tls_preparing = NULL;
  *futures = p->futures;
  *count = p->count;
  free(p);
  return TIRX_OK;
}

/* A launch while preparing: the variant's preparation, its future kept for prepare_end. */
static tirx_status prepare_launch(preparing *p, const char *fn, tirx_runtime *rt,
                                  const tirx_kernel *k, const tirx_arg *args, int nargs) {
  if (p->count == p->cap) {
    int cap = p->cap ? p->cap * 2 : 16;
    tirx_future **grown = realloc(p->futures, (size_t)cap * sizeof *grown);
    if (!grown)
      return tirx__error(TIRX_E_NO_MEMORY, "%s: out of memory", fn);
    p->futures = grown;
    p->cap = cap;
  }
  tirx_future *f = NULL;
  tirx_status st = tirx_prepare_async(rt, k, args, nargs, &f);
  if (st != TIRX_OK)
    return tirx__error(st, "%s: %s", fn, tirx_last_error());
  p->futures[p->count++] = f;
  return TIRX_OK;
}

tirx_status tirx__kernels_launch(const char *fn, tirx_runtime *rt, const tirx_kernel *k,
                                 const tirx_arg *args, int nargs, void *stream) {
  if (TIRX_UNLIKELY(tls_preparing != NULL))
    return prepare_launch(tls_preparing, fn, rt, k, args, nargs);
  tirx_status st = tirx_launch(rt, k, args, nargs, stream);
  if (st != TIRX_OK)
    return tirx__error(st, "%s: %s", fn, tirx_last_error());
  return TIRX_OK;
}

tirx_status tirx__kernels_finish(tirx_builder *b, const char *fn, tirx_kernel **out) {
  tirx_status st = tirx_kernel_build(b, out);
  if (st != TIRX_OK)
    tirx__error(st, "%s: %s", fn, tirx_builder_error(b));
  tirx_builder_destroy(b);
  return st;
}
