/*
 * tirx__kernel_plan: binds the caller's arguments to a built kernel's parameters, checks them
 * against the declarations and fills a launch plan (kernel_abi.h).
 *
 * Arguments are numbered from 0 as positions in the caller's array: "argument 1 (x)".
 */
#include <stdio.h>
#include <string.h>

#include "dlpack_abi.h"
#include "ir.h"
#include "kernel_abi.h"

typedef struct view {
  void *data;
  int dtype;
  int rank;
  int64_t shape[TIRX_BUILDER_MAX_RANK];
  int64_t stride[TIRX_BUILDER_MAX_RANK];
} view;

static const char *kind_name(int kind) {
  static const char *const names[] = {"i32",    "i64",    "f32",
                                      "f64",    "tensor", "dlpack",
                                      "dlpack_versioned"};
  return kind >= 0 && kind <= TIRX_ARG_DLPACK_VERSIONED ? names[kind] : "unknown";
}

static const char *dn(int t) {
  const char *s = tirx_dtype_name((tirx_dtype)t);
  return s ? s : "invalid";
}

/* The tirx dtype of a DLPack dtype, or -1. */
static int dl_dtype(DLDataType t) {
  switch (t.code) {
  case kDLFloat: return t.bits == 32 ? TIRX_F32 : t.bits == 16 ? TIRX_F16 : t.bits == 64 ? TIRX_F64 : -1;
  case kDLBfloat: return t.bits == 16 ? TIRX_BF16 : -1;
  case kDLInt: return t.bits == 8 ? TIRX_I8 : t.bits == 32 ? TIRX_I32 : t.bits == 64 ? TIRX_I64 : -1;
  case kDLUInt: return t.bits == 8 ? TIRX_U8 : t.bits == 32 ? TIRX_U32 : t.bits == 1 ? TIRX_BOOL : -1;
  case 6: /* kDLBool in DLPack >= 0.8 */ return t.bits == 8 ? TIRX_BOOL : -1;
  case 10: /* kDLFloat8_e4m3fn in DLPack >= 1.1: CUDA's __nv_fp8_e4m3 */
    return t.bits == 8 ? TIRX_FP8_E4M3 : -1;
  case 12: /* kDLFloat8_e5m2 in DLPack >= 1.1: CUDA's __nv_fp8_e5m2 */
    return t.bits == 8 ? TIRX_FP8_E5M2 : -1;
  default: return -1;
  }
}

#define ARG_FAIL(st, ...) fail_arg(fn, i, ai, p->name, st, __VA_ARGS__)

static tirx_status fail_arg(const char *fn, int param, int ai, const char *name, tirx_status st,
                            const char *fmt, ...) TIRX_PRINTF(6, 7);
static tirx_status fail_arg(const char *fn, int param, int ai, const char *name, tirx_status st,
                            const char *fmt, ...) {
  (void)param;
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return tirx__error(st, "%s: argument %d (%s): %s", fn, ai, name, msg);
}

/* Reads a tensor argument into v. */
static tirx_status read_tensor(const char *fn, int i, int ai, const tirx__kparam *p,
                               const tirx_arg *a, view *v) {
  const int64_t *shape, *strides;
  if (a->kind == TIRX_ARG_TENSOR) {
    const tirx_tensor_arg *t = &a->u.tensor;
    v->data = t->data;
    v->dtype = t->dtype;
    v->rank = t->rank;
    shape = t->shape;
    strides = t->strides;
  } else if (a->kind == TIRX_ARG_DLPACK || a->kind == TIRX_ARG_DLPACK_VERSIONED) {
    if (a->kind == TIRX_ARG_DLPACK_VERSIONED) {
      const DLManagedTensorVersioned *m = a->u.dlpack;
      if (!m) return ARG_FAIL(TIRX_E_NULL_ARG, "DLManagedTensorVersioned is NULL");
      /* Another major version has another layout past the flags: read nothing else. */
      if (m->version.major != TIRX__DLPACK_MAJOR)
        return ARG_FAIL(TIRX_E_LAUNCH_ARG, "DLPack version is %u.%u, expected major version %d",
                        (unsigned)m->version.major, (unsigned)m->version.minor,
                        TIRX__DLPACK_MAJOR);
      if ((m->flags & DLPACK_FLAG_BITMASK_READ_ONLY) && p->writes != TIRX__KP_WRITES_NO)
        return ARG_FAIL(TIRX_E_LAUNCH_ARG,
                        "the DLPack tensor is read-only (DLPACK_FLAG_BITMASK_READ_ONLY), "
                        "expected a writable one: %s",
                        p->writes == TIRX__KP_WRITES_YES
                            ? "the kernel stores to it"
                            : "the kernel's source is the caller's (tirx_set_source), so it "
                              "may store to it");
    }
    const DLTensor *t = tirx__arg_dltensor(a);
    if (!t) return ARG_FAIL(TIRX_E_NULL_ARG, "DLTensor is NULL");
    if (t->device.device_type != kDLCUDA && t->device.device_type != kDLCUDAManaged)
      return ARG_FAIL(TIRX_E_LAUNCH_ARG, "DLPack device type is %d, expected kDLCUDA (%d)",
                      (int)t->device.device_type, (int)kDLCUDA);
    if (t->dtype.lanes != 1)
      return ARG_FAIL(TIRX_E_LAUNCH_ARG, "DLPack dtype has %d lanes, expected 1",
                      (int)t->dtype.lanes);
    v->dtype = dl_dtype(t->dtype);
    if (v->dtype < 0)
      return ARG_FAIL(TIRX_E_LAUNCH_ARG, "DLPack dtype (code %d, bits %d) is not supported",
                      (int)t->dtype.code, (int)t->dtype.bits);
    v->data = t->data ? (char *)t->data + t->byte_offset : NULL;
    v->rank = t->ndim;
    shape = t->shape;
    strides = t->strides;
  } else {
    return ARG_FAIL(TIRX_E_LAUNCH_ARG, "kind is %s, expected a tensor", kind_name(a->kind));
  }
  if (!v->data) return ARG_FAIL(TIRX_E_NULL_ARG, "data is NULL");
  if (v->dtype != p->dtype)
    return ARG_FAIL(TIRX_E_LAUNCH_ARG, "dtype is %s, expected %s", dn(v->dtype), dn(p->dtype));
  if (v->rank != p->rank)
    return ARG_FAIL(TIRX_E_LAUNCH_ARG, "rank is %d, expected %d", v->rank, p->rank);
  if (!shape) return ARG_FAIL(TIRX_E_NULL_ARG, "shape is NULL");
  for (int k = 0; k < v->rank; k++) {
    if (shape[k] < 0)
      return ARG_FAIL(TIRX_E_LAUNCH_ARG, "shape[%d] is %lld, expected >= 0", k,
                      (long long)shape[k]);
    v->shape[k] = shape[k];
  }
  int64_t dense = 1;
  for (int k = v->rank - 1; k >= 0; k--) {
    v->stride[k] = strides ? strides[k] : dense;
    if (!tirx__mul_ok(dense, v->shape[k] ? v->shape[k] : 1, &dense))
      return ARG_FAIL(TIRX_E_LAUNCH_ARG, "shape is too large: its elements overflow int64 at "
                      "shape[%d] = %lld, expected a product of extents up to 2^63 - 1", k,
                      (long long)v->shape[k]);
  }
  if ((uintptr_t)v->data % (uintptr_t)p->align)
    return ARG_FAIL(TIRX_E_LAUNCH_ARG, "data %p is not aligned to %d bytes", v->data, p->align);
  return TIRX_OK;
}

/* The tensor map of argument v (a TMA copy's global tensor) as TMA takes it, checked against
 * TMA's rules (cuTensorMapEncodeTiled's documentation) so that encoding cannot fail on them. */
static tirx_status tmap_request(const char *fn, int ai, const tirx__kparam *p,
                                const tirx__tmap_desc *m, const view *v, tirx__tmap_request *rq) {
  int i = 0; /* for ARG_FAIL */
  int elem = tirx_dtype_size((tirx_dtype)v->dtype);
  if ((uintptr_t)v->data % 16)
    return ARG_FAIL(TIRX_E_LAUNCH_ARG, "data %p is not 16-byte aligned: a TMA tensor map needs it",
                    v->data);
  rq->data = v->data;
  rq->dtype = m->dtype;
  rq->rank = m->rank;
  rq->swizzle = m->swizzle;
  for (int d = 0; d < m->rank; d++) {
    const tirx__tmap_dim *md = &m->d[d];
    int k = md->dim;
    int64_t size = v->shape[k], stride = v->stride[k], n = size, s;
    if (size < 1)
      return ARG_FAIL(TIRX_E_LAUNCH_ARG, "shape[%d] is %lld: a TMA tensor map needs every "
                      "dimension >= 1", k, (long long)size);
    if (md->kind == TIRX__TMAP_INNER) {
      n = md->extent;
    } else if (md->kind == TIRX__TMAP_OUTER) {
      if (size % md->factor)
        return ARG_FAIL(TIRX_E_LAUNCH_ARG, "shape[%d] is %lld, not a multiple of %lld: the "
                        "split TMA tensor map of this tensor needs it (or use the loop form)",
                        k, (long long)size, (long long)md->factor);
      n = size / md->factor;
    }
    if (n > (INT64_C(1) << 32))
      return ARG_FAIL(TIRX_E_LAUNCH_ARG, "shape[%d] is %lld: a TMA tensor map allows at most "
                      "2^32", k, (long long)size);
    rq->dim[d] = (uint64_t)n;
    rq->box[d] = md->box;
    bool ok = tirx__mul_ok(stride, md->factor, &s) && tirx__mul_ok(s, elem, &s);
    if (d == 0) {
      if (!ok || s != elem)
        return ARG_FAIL(TIRX_E_LAUNCH_ARG, "stride[%d] is %lld, expected 1: the innermost "
                        "dimension of a TMA copy must be contiguous", k, (long long)stride);
      if (m->store && (n * elem) % 16)
        return ARG_FAIL(TIRX_E_LAUNCH_ARG, "shape[%d] is %lld (%lld bytes): a TMA store "
                        "writes the whole 16-byte piece that holds a row's last element, past "
                        "the tensor's end, so it needs an innermost extent that is a multiple "
                        "of 16 bytes", k, (long long)n, (long long)(n * elem));
      continue;
    }
    if (n == 1 && (!ok || s <= 0 || s % 16 || s >= (INT64_C(1) << 40)))
      s = 16, ok = true; /* a dimension of one element: its stride is never used */
    if (!ok)
      return ARG_FAIL(TIRX_E_LAUNCH_ARG, "stride[%d] is %lld elements (its bytes overflow "
                      "int64): TMA needs strides that are positive multiples of 16 bytes below "
                      "2^40", k, (long long)stride);
    if (s <= 0 || s % 16 || s >= (INT64_C(1) << 40))
      return ARG_FAIL(TIRX_E_LAUNCH_ARG, "stride[%d] is %lld elements (%lld bytes): TMA needs "
                      "strides that are positive multiples of 16 bytes below 2^40", k,
                      (long long)stride, (long long)s);
    rq->stride[d - 1] = (uint64_t)s;
  }
  return TIRX_OK;
}

/* The param read by a bare host expression (through an integer cast), or -1. */
static int bare_param(const tirx_kernel *k, int32_t idx) {
  if (idx < 0) return -1;
  const tirx__hexpr *h = &k->hx[idx];
  if (h->kind == TIRX__EX_CAST && h->a >= 0) h = &k->hx[h->a];
  return h->kind == TIRX__EX_PARAM ? (int)h->v : -1;
}

static bool fits(int64_t v, int dtype) {
  return dtype != TIRX_I32 || (v >= INT32_MIN && v <= INT32_MAX);
}

tirx_status tirx__kernel_plan(const tirx_kernel *k, const char *fn, const tirx_arg *args,
                              int nargs, tirx__launch_plan *plan) {
  if (!fn) fn = "tirx_launch";
  if (!k) return tirx__error(TIRX_E_NULL_ARG, "%s: kernel is NULL", fn);
  if (!plan) return tirx__error(TIRX_E_NULL_ARG, "%s: plan is NULL", fn);
  if (nargs > 0 && !args) return tirx__error(TIRX_E_NULL_ARG, "%s: args is NULL", fn);

  /* Which declared parameter each argument is. */
  int nbind = 0;
  char bind_names[256] = "";
  for (int i = 0; i < k->nparams; i++)
    if (k->params[i].kind == TIRX__KP_INT && k->params[i].bindable) {
      size_t len = strlen(bind_names);
      snprintf(bind_names + len, sizeof bind_names - len, "%s%s", nbind ? ", " : "",
               k->params[i].name);
      nbind++;
    }
  bool all = nargs == k->nparams;
  if (!all && !(nbind && nargs == k->nparams - nbind)) {
    if (nbind)
      return tirx__error(TIRX_E_LAUNCH_ARG,
                         "%s: %d arguments, expected %d (or %d with %s bound from tensor shapes)",
                         fn, nargs, k->nparams, k->nparams - nbind, bind_names);
    return tirx__error(TIRX_E_LAUNCH_ARG, "%s: %d arguments, expected %d", fn, nargs,
                       k->nparams);
  }
  int argi[TIRX_BUILDER_MAX_PARAMS];
  int64_t vals[TIRX_BUILDER_MAX_PARAMS];
  bool bound[TIRX_BUILDER_MAX_PARAMS];
  view views[TIRX_BUILDER_MAX_PARAMS];
  for (int i = 0, a = 0; i < k->nparams; i++) {
    bool omitted = !all && k->params[i].kind == TIRX__KP_INT && k->params[i].bindable;
    argi[i] = omitted ? -1 : a++;
    vals[i] = 0;
    bound[i] = false;
  }

  /* Scalars and tensors as given. */
  for (int i = 0; i < k->nparams; i++) {
    const tirx__kparam *p = &k->params[i];
    int ai = argi[i];
    if (ai < 0) continue;
    const tirx_arg *a = &args[ai];
    if (p->kind == TIRX__KP_TENSOR) {
      tirx_status st = read_tensor(fn, i, ai, p, a, &views[i]);
      if (st != TIRX_OK) return st;
      continue;
    }
    bool is_int = p->dtype == TIRX_I32 || p->dtype == TIRX_I64;
    if (is_int && (a->kind == TIRX_ARG_I32 || a->kind == TIRX_ARG_I64)) {
      vals[i] = a->kind == TIRX_ARG_I32 ? a->u.i32 : a->u.i64;
      if (!fits(vals[i], p->dtype))
        return ARG_FAIL(TIRX_E_LAUNCH_ARG, "value %lld does not fit i32", (long long)vals[i]);
      bound[i] = true;
    } else if (p->dtype == TIRX_F32 && a->kind == TIRX_ARG_F32) {
    } else if (p->dtype == TIRX_F64 && (a->kind == TIRX_ARG_F64 || a->kind == TIRX_ARG_F32)) {
    } else {
      return ARG_FAIL(TIRX_E_LAUNCH_ARG, "kind is %s, expected %s", kind_name(a->kind),
                      is_int ? (p->dtype == TIRX_I32 ? "i32 (or i64)" : "i64 (or i32)")
                      : p->dtype == TIRX_F32 ? "f32"
                                             : "f64 (or f32)");
    }
  }

  /* Integer parameters left out: bound from the first tensor dimension (or stride) that is
   * exactly that parameter. */
  for (int i = 0; i < k->nparams; i++) {
    const tirx__kparam *p = &k->params[i];
    if (p->kind != TIRX__KP_TENSOR) continue;
    for (int d = 0; d < p->rank; d++) {
      for (int which = 0; which < 2; which++) {
        int q = bare_param(k, which ? p->stride[d] : p->shape[d]);
        if (q < 0 || bound[q] || k->params[q].kind != TIRX__KP_INT) continue;
        int64_t v = which ? views[i].stride[d] : views[i].shape[d];
        if (!fits(v, k->params[q].dtype))
          return tirx__error(TIRX_E_LAUNCH_ARG,
                             "%s: argument %d (%s): %s[%d] is %lld, which does not fit %s (i32)",
                             fn, argi[i], p->name, which ? "stride" : "shape", d, (long long)v,
                             k->params[q].name);
        vals[q] = v;
        bound[q] = true;
      }
    }
  }
  for (int i = 0; i < k->nparams; i++)
    if (k->params[i].kind == TIRX__KP_INT && !bound[i])
      return tirx__error(TIRX_E_LAUNCH_ARG, "%s: %s is not bound", fn, k->params[i].name);

  /* Shapes and strides against the declarations. */
  const char *why = "";
  for (int i = 0; i < k->nparams; i++) {
    const tirx__kparam *p = &k->params[i];
    if (p->kind != TIRX__KP_TENSOR) continue;
    int ai = argi[i];
    const view *v = &views[i];
    for (int d = 0; d < p->rank; d++) {
      int64_t want;
      if (!tirx__hexpr_eval(k, p->shape[d], vals, &want, &why))
        return ARG_FAIL(TIRX_E_LAUNCH_ARG, "cannot evaluate shape[%d]: %s", d, why);
      if (want != v->shape[d]) {
        int q = bare_param(k, p->shape[d]);
        char note[96] = "";
        if (q >= 0) snprintf(note, sizeof note, " (%s)", k->params[q].name);
        return ARG_FAIL(TIRX_E_LAUNCH_ARG, "shape[%d] is %lld, expected %lld%s", d,
                        (long long)v->shape[d], (long long)want, note);
      }
    }
    int64_t dense = 1;
    for (int d = p->rank - 1; d >= 0; d--) {
      int64_t want = dense;
      const char *note = p->opaque ? " (dense: the layout is not strided)" : " (dense row-major)";
      if (!p->opaque && !p->dense) {
        note = "";
        if (p->stride[d] < 0) {
          dense *= v->shape[d] ? v->shape[d] : 1;
          continue;
        }
        if (!tirx__hexpr_eval(k, p->stride[d], vals, &want, &why))
          return ARG_FAIL(TIRX_E_LAUNCH_ARG, "cannot evaluate stride[%d]: %s", d, why);
      }
      if (v->shape[d] > 1 && v->stride[d] != want)
        return ARG_FAIL(TIRX_E_LAUNCH_ARG, "stride[%d] is %lld, expected %lld%s", d,
                        (long long)v->stride[d], (long long)want, note);
      dense *= v->shape[d] ? v->shape[d] : 1;
    }
  }

  /* Launch dimensions. */
  static const char xyz[] = "xyz";
  for (int d = 0; d < 3; d++) {
    int64_t g = 1;
    if (k->grid[d] >= 0 && !tirx__hexpr_eval(k, k->grid[d], vals, &g, &why))
      return tirx__error(TIRX_E_LAUNCH_ARG, "%s: cannot evaluate grid %c: %s", fn, xyz[d], why);
    int64_t lim = d == 0 ? INT32_MAX : 65535;
    if (g < 1 || g > lim)
      return tirx__error(TIRX_E_LIMIT, "%s: grid %c is %lld, expected 1 to %lld", fn, xyz[d],
                         (long long)g, (long long)lim);
    plan->grid[d] = (uint32_t)g;
    plan->block[d] = k->block[d];
  }
  int64_t smem = k->shared_static;
  if (k->shared_extra >= 0) {
    int64_t extra;
    if (!tirx__hexpr_eval(k, k->shared_extra, vals, &extra, &why))
      return tirx__error(TIRX_E_LAUNCH_ARG, "%s: cannot evaluate shared bytes: %s", fn, why);
    if (extra < 0 || extra > TIRX_BUILDER_MAX_SHARED)
      return tirx__error(TIRX_E_LIMIT, "%s: extra shared memory is %lld bytes, expected 0 to %d",
                         fn, (long long)extra, TIRX_BUILDER_MAX_SHARED);
    smem += extra;
  }
  if (smem > TIRX_BUILDER_MAX_SHARED)
    return tirx__error(TIRX_E_LIMIT, "%s: shared memory is %lld bytes, limit %d", fn,
                       (long long)smem, TIRX_BUILDER_MAX_SHARED);
  plan->shared_bytes = (uint32_t)smem;

  /* The specialisation key: the variant this call runs. */
  plan->nspec = k->nspec;
  for (int j = 0; j < k->nspec; j++) {
    int64_t v = vals[k->spec[j]];
    plan->spec[j] = k->params[k->spec[j]].policy == TIRX_SPECIALIZE_VALUE ? v : v % 16 == 0;
  }

  /* Clusters: every grid dimension a multiple of the cluster's. */
  plan->ntmaps = 0;
  plan->pdl = k->pdl;
  for (int d = 0; d < 3; d++) {
    plan->cluster[d] = k->cluster[d];
    if (k->cluster[0] && plan->grid[d] % k->cluster[d])
      return tirx__error(TIRX_E_LAUNCH_ARG,
                         "%s: grid %c is %u, not a multiple of the cluster's %u (tirx_set_cluster)",
                         fn, xyz[d], plan->grid[d], k->cluster[d]);
  }

  /* Parameter values, in the entry point's order. */
  size_t off = 0;
  plan->nparams = k->nslots;
  for (int s = 0; s < k->nslots; s++) {
    const tirx__slot *sl = &k->slots[s];
    const tirx__kparam *p = &k->params[sl->param];
    int ai = argi[sl->param];
    size_t size = sl->kind == TIRX__SLOT_POINTER ? sizeof(void *)
                  : sl->kind == TIRX__SLOT_STRIDE ? 8
                  : sl->kind == TIRX__SLOT_TMAP   ? 128
                                                  : (size_t)tirx_dtype_size((tirx_dtype)sl->dtype);
    size_t align = sl->kind == TIRX__SLOT_TMAP ? 64 : size;
    off = (off + align - 1) / align * align;
    if (off + size > TIRX__PARAM_STORAGE)
      return tirx__error(TIRX_E_LIMIT, "%s: parameters exceed %d bytes", fn, TIRX__PARAM_STORAGE);
    unsigned char *dst = plan->storage + off;
    plan->params[s] = dst;
    off += size;
    if (sl->kind == TIRX__SLOT_TMAP) {
      if (plan->ntmaps == TIRX__PLAN_MAX_TMAPS)
        return tirx__error(TIRX_E_LIMIT, "%s: more than %d tensor maps", fn,
                           TIRX__PLAN_MAX_TMAPS);
      tirx__tmap_request *rq = &plan->tmaps[plan->ntmaps++];
      rq->offset = (uint32_t)(dst - plan->storage);
      tirx_status st = tmap_request(fn, argi[sl->param], p, &k->tmaps[sl->dim],
                                    &views[sl->param], rq);
      if (st != TIRX_OK) return st;
      memset(dst, 0, 128);
    } else if (sl->kind == TIRX__SLOT_POINTER) {
      memcpy(dst, &views[sl->param].data, sizeof(void *));
    } else if (sl->kind == TIRX__SLOT_STRIDE) {
      int64_t v = views[sl->param].stride[sl->dim];
      if (p->stride[sl->dim] >= 0 && !tirx__hexpr_eval(k, p->stride[sl->dim], vals, &v, &why))
        return tirx__error(TIRX_E_LAUNCH_ARG, "%s: cannot evaluate stride %d of %s: %s", fn,
                           sl->dim, p->name, why);
      memcpy(dst, &v, 8);
    } else if (p->dtype == TIRX_I32) {
      int32_t v = (int32_t)vals[sl->param];
      memcpy(dst, &v, 4);
    } else if (p->dtype == TIRX_I64) {
      memcpy(dst, &vals[sl->param], 8);
    } else if (p->dtype == TIRX_F32) {
      memcpy(dst, &args[ai].u.f32, 4);
    } else {
      double v = args[ai].kind == TIRX_ARG_F32 ? (double)args[ai].u.f32 : args[ai].u.f64;
      memcpy(dst, &v, 8);
    }
  }
  return TIRX_OK;
}
