/* The builder object, its sticky error, parameters, allocations and the launch configuration. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../layout/layout_internal.h"
#include "builder_internal.h"

/* ---- the builder and its error ---- */

/* Kernel names that are fine for variables but not for the extern "C" entry point: "_" is not
 * a PTX identifier, and these are global functions or types of NVRTC's built-in headers (the
 * functions generated code calls are in tirx__cpp_reserved already). Not exhaustive: the
 * CUDA math API's other functions (hypotf, sincosf, ...) clash too. */
static const char *const entry_reserved[] = {"_",      "printf", "malloc",    "free",
                                             "dim3",   "size_t", "ptrdiff_t", "clock_t",
                                             "abs",    "labs",   "llabs"};

static bool entry_name_reserved(const char *name) {
  if (tirx__cpp_reserved(name)) return true;
  for (size_t i = 0; i < sizeof entry_reserved / sizeof entry_reserved[0]; i++)
    if (strcmp(entry_reserved[i], name) == 0) return true;
  return false;
}

tirx_builder *tirx_builder_create(const char *name) {
  static const char fn[] = "tirx_builder_create";
  tirx_builder *b = calloc(1, sizeof *b);
  if (!b) {
    tirx__error(TIRX_E_NO_MEMORY, "%s: out of memory", fn);
    return NULL;
  }
  b->arena = tirx_arena_create();
  if (!b->arena) {
    free(b);
    tirx__error(TIRX_E_NO_MEMORY, "%s: out of memory", fn);
    return NULL;
  }
  b->frames[0].kind = TIRX__FRAME_ROOT;
  b->frames[0].block = &b->body;
  b->name = "";
  b->target = 90; /* tirx_set_target's default: sm_90a */
  b->target_suffix = 'a';
  b->target_name = "sm_90a";
  if (tirx__b_name(b, fn, name, "name") && entry_name_reserved(name))
    tirx__b_fail(b, TIRX_E_INVALID_ARG, "%s: name \"%s\" is reserved in CUDA C++", fn, name);
  if (b->status == TIRX_OK) {
    char *copy = tirx__arena_strdup(b->arena, name, fn);
    if (!copy) {
      tirx_builder_destroy(b);
      return NULL;
    }
    b->name = copy;
  }
  return b;
}

void tirx_builder_destroy(tirx_builder *b) {
  if (!b) return;
  tirx_arena_destroy(b->arena);
  free(b);
}

tirx_arena *tirx_builder_arena(tirx_builder *b) {
  if (!b) {
    tirx__error(TIRX_E_NULL_ARG, "tirx_builder_arena: b is NULL");
    return NULL;
  }
  return b->arena;
}

const char *tirx_builder_error(const tirx_builder *b) {
  if (!b) return "tirx_builder_error: b is NULL";
  return b->error;
}

tirx_status tirx_builder_status(const tirx_builder *b) {
  if (!b) return TIRX_E_NULL_ARG;
  return b->status;
}

bool tirx__b_ok(tirx_builder *b, const char *fn) {
  if (!b) {
    tirx__error(TIRX_E_NULL_ARG, "%s: b is NULL", fn);
    return false;
  }
  return b->status == TIRX_OK;
}

tirx_status tirx__b_fail(tirx_builder *b, tirx_status status, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  if (b && b->status == TIRX_OK) {
    va_list ap2;
    va_copy(ap2, ap);
    vsnprintf(b->error, sizeof b->error, fmt, ap2);
    va_end(ap2);
    b->status = status;
  }
  tirx__verror(status, fmt, ap);
  va_end(ap);
  return status;
}

bool tirx__b_expr(tirx_builder *b, const char *fn, const tirx_expr *e, const char *arg) {
  if (!e) {
    tirx__b_fail(b, TIRX_E_NULL_ARG, "%s: %s is NULL", fn, arg);
    return false;
  }
  if (e->owner != b) {
    tirx__b_fail(b, TIRX_E_INVALID_ARG, "%s: %s belongs to another builder", fn, arg);
    return false;
  }
  return true;
}

bool tirx__b_tensor(tirx_builder *b, const char *fn, const tirx_tensor *t, const char *arg) {
  if (!t) {
    tirx__b_fail(b, TIRX_E_NULL_ARG, "%s: %s is NULL", fn, arg);
    return false;
  }
  if (t->owner != b) {
    tirx__b_fail(b, TIRX_E_INVALID_ARG, "%s: %s belongs to another builder", fn, arg);
    return false;
  }
  return true;
}

bool tirx__b_name(tirx_builder *b, const char *fn, const char *name, const char *arg) {
  if (!name) {
    tirx__b_fail(b, TIRX_E_NULL_ARG, "%s: %s is NULL", fn, arg);
    return false;
  }
  size_t n = strlen(name);
  bool ok = n > 0 && n <= TIRX_BUILDER_MAX_NAME &&
            ((name[0] >= 'a' && name[0] <= 'z') || (name[0] >= 'A' && name[0] <= 'Z') ||
             name[0] == '_');
  for (size_t i = 1; ok && i < n; i++) {
    char c = name[i];
    ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  }
  if (!ok) {
    tirx__b_fail(b, TIRX_E_INVALID_ARG,
                 "%s: %s \"%.80s\" is not an identifier ([A-Za-z_][A-Za-z0-9_]*, at most %d "
                 "characters)",
                 fn, arg, name, TIRX_BUILDER_MAX_NAME);
    return false;
  }
  if (strncmp(name, "tirx_", 5) == 0 || strncmp(name, "TIRX_", 5) == 0) {
    tirx__b_fail(b, TIRX_E_INVALID_ARG, "%s: %s \"%s\" uses the reserved prefix %.5s", fn, arg,
                 name, name);
    return false;
  }
  return true;
}

bool tirx__b_dtype(tirx_builder *b, const char *fn, tirx_dtype t, const char *arg) {
  if ((int)t < 0 || t >= TIRX_DTYPE_COUNT) {
    tirx__b_fail(b, TIRX_E_INVALID_ARG, "%s: %s is %d, not a tirx_dtype", fn, arg, (int)t);
    return false;
  }
  if (t == TIRX_FP8_E4M3 || t == TIRX_FP8_E5M2) {
    tirx__b_fail(b, TIRX_E_NOT_SUPPORTED, "%s: %s %s is not supported yet", fn, arg,
                 tirx_dtype_name(t));
    return false;
  }
  return true;
}

void *tirx__b_node(tirx_builder *b, const char *fn, size_t n) {
  if (b->nodes >= TIRX_BUILDER_MAX_NODES) {
    tirx__b_fail(b, TIRX_E_LIMIT, "%s: the kernel has more than %d nodes", fn,
                 TIRX_BUILDER_MAX_NODES);
    return NULL;
  }
  void *p = tirx__arena_alloc(b->arena, n, fn);
  if (!p) {
    tirx__b_fail(b, TIRX_E_NO_MEMORY, "%s: out of memory", fn);
    return NULL;
  }
  b->nodes++;
  return p;
}

static char *b_strdup(tirx_builder *b, const char *fn, const char *s) {
  char *c = tirx__arena_strdup(b->arena, s, fn);
  if (!c) tirx__b_fail(b, TIRX_E_NO_MEMORY, "%s: out of memory", fn);
  return c;
}

const char *tirx__b_expr_str(const tirx_expr *e, char *buf, size_t cap) {
  tirx__strbuf sb = {0};
  tirx__ir_print_expr(&sb, e);
  char *s = tirx__sb_finish(&sb);
  snprintf(buf, cap, "%s", s ? s : "?");
  if (cap > 4 && s && strlen(s) >= cap) memcpy(buf + cap - 4, "...", 4);
  free(s);
  return buf;
}

bool tirx__b_host_int(tirx_builder *b, const char *fn, const tirx_expr *e, const char *arg) {
  if (!tirx__b_expr(b, fn, e, arg)) return false;
  if (!tirx__dtype_is_int(e->dtype)) {
    tirx__b_fail(b, TIRX_E_TYPE, "%s: %s has dtype %s, expected an integer", fn, arg,
                 tirx_dtype_name((tirx_dtype)e->dtype));
    return false;
  }
  if (!e->host) {
    char buf[160];
    tirx__b_fail(b, TIRX_E_INVALID_ARG,
                 "%s: %s (%s) is not computable at launch: use constants, integer parameters "
                 "and arithmetic on them",
                 fn, arg, tirx__b_expr_str(e, buf, sizeof buf));
    return false;
  }
  return true;
}

/* ---- parameters ---- */

bool tirx__b_name_unique(tirx_builder *b, const char *fn, const char *name) {
  for (int i = 0; i < b->nparams; i++)
    if (strcmp(b->params[i]->name, name) == 0) {
      tirx__b_fail(b, TIRX_E_INVALID_ARG, "%s: a parameter named \"%s\" already exists", fn,
                   name);
      return false;
    }
  for (int i = 0; i < b->nshared; i++)
    if (strcmp(b->shared[i]->decl.name, name) == 0) {
      tirx__b_fail(b, TIRX_E_INVALID_ARG, "%s: a shared tensor named \"%s\" already exists", fn,
                   name);
      return false;
    }
  return true;
}

static tirx__decl *new_param(tirx_builder *b, const char *fn, const char *name, int kind,
                             tirx_dtype dtype, tirx__decl *decl) {
  if (!tirx__b_name(b, fn, name, "name") || !tirx__b_name_unique(b, fn, name)) return NULL;
  if (b->nparams >= TIRX_BUILDER_MAX_PARAMS) {
    tirx__b_fail(b, TIRX_E_LIMIT, "%s: the kernel has more than %d parameters", fn,
                 TIRX_BUILDER_MAX_PARAMS);
    return NULL;
  }
  if (!decl) {
    decl = tirx__b_node(b, fn, sizeof *decl);
    if (!decl) return NULL;
    decl->id = b->ndecls++;
  }
  decl->name = b_strdup(b, fn, name);
  if (!decl->name) return NULL;
  decl->kind = (uint8_t)kind;
  decl->dtype = (uint8_t)dtype;
  decl->param_index = b->nparams;
  decl->live = true;
  b->params[b->nparams++] = decl;
  return decl;
}

static tirx_expr *param_ref(tirx_builder *b, const char *fn, tirx__decl *d, bool host) {
  tirx_expr *e = tirx__b_expr_new(b, fn, TIRX__EX_PARAM, 0, (tirx_dtype)d->dtype, NULL, NULL,
                                  NULL);
  if (!e) return NULL;
  e->decl = d;
  e->host = host;
  d->ref = e;
  return e;
}

/* Integer parameters with a non-dynamic specialisation policy. */
static int count_specialized(const tirx_builder *b) {
  int n = 0;
  for (int i = 0; i < b->nparams; i++)
    n += b->params[i]->kind == TIRX__DECL_PARAM_INT &&
         b->params[i]->policy != TIRX_SPECIALIZE_DYNAMIC;
  return n;
}

tirx_expr *tirx_param_int(tirx_builder *b, const char *name, tirx_dtype dtype) {
  static const char fn[] = "tirx_param_int";
  if (!tirx__b_ok(b, fn)) return NULL;
  if (dtype != TIRX_I32 && dtype != TIRX_I64) {
    const char *dn = tirx_dtype_name(dtype);
    if (dn)
      tirx__b_fail(b, TIRX_E_TYPE, "%s: dtype is %s, expected i32 or i64", fn, dn);
    else
      tirx__b_fail(b, TIRX_E_INVALID_ARG, "%s: dtype is %d, expected i32 or i64", fn, (int)dtype);
    return NULL;
  }
  tirx__decl *d = new_param(b, fn, name, TIRX__DECL_PARAM_INT, dtype, NULL);
  if (!d) return NULL;
  d->policy = count_specialized(b) < TIRX_BUILDER_MAX_SPECIALIZED ? TIRX_SPECIALIZE_DIV16
                                                                  : TIRX_SPECIALIZE_DYNAMIC;
  return param_ref(b, fn, d, true);
}

tirx_status tirx_param_set_policy(tirx_builder *b, tirx_expr *param, tirx_specialize policy) {
  static const char fn[] = "tirx_param_set_policy";
  if (!tirx__b_ok(b, fn)) return b ? b->status : TIRX_E_NULL_ARG;
  if (!tirx__b_expr(b, fn, param, "param")) return b->status;
  if (param->kind != TIRX__EX_PARAM || param->decl->kind != TIRX__DECL_PARAM_INT) {
    char buf[160];
    return tirx__b_fail(b, TIRX_E_INVALID_ARG,
                        "%s: param (%s) is not an integer parameter (from tirx_param_int)", fn,
                        tirx__b_expr_str(param, buf, sizeof buf));
  }
  if ((int)policy < TIRX_SPECIALIZE_DYNAMIC || (int)policy > TIRX_SPECIALIZE_VALUE)
    return tirx__b_fail(b, TIRX_E_INVALID_ARG, "%s: policy is %d, not a tirx_specialize", fn,
                        (int)policy);
  tirx__decl *d = param->decl;
  if (policy != TIRX_SPECIALIZE_DYNAMIC && d->policy == TIRX_SPECIALIZE_DYNAMIC &&
      count_specialized(b) >= TIRX_BUILDER_MAX_SPECIALIZED)
    return tirx__b_fail(b, TIRX_E_LIMIT,
                        "%s: %s would be the %dth specialised parameter, limit %d (set another "
                        "to TIRX_SPECIALIZE_DYNAMIC first)",
                        fn, d->name, TIRX_BUILDER_MAX_SPECIALIZED + 1,
                        TIRX_BUILDER_MAX_SPECIALIZED);
  d->policy = (uint8_t)policy;
  return TIRX_OK;
}

tirx_expr *tirx_param_scalar(tirx_builder *b, const char *name, tirx_dtype dtype) {
  static const char fn[] = "tirx_param_scalar";
  if (!tirx__b_ok(b, fn)) return NULL;
  if (dtype != TIRX_F32 && dtype != TIRX_F64 && dtype != TIRX_I32 && dtype != TIRX_I64) {
    const char *dn = tirx_dtype_name(dtype);
    if (dn)
      tirx__b_fail(b, TIRX_E_TYPE, "%s: dtype is %s, expected f32, f64, i32 or i64", fn, dn);
    else
      tirx__b_fail(b, TIRX_E_INVALID_ARG, "%s: dtype is %d, expected f32, f64, i32 or i64", fn,
                   (int)dtype);
    return NULL;
  }
  tirx__decl *d = new_param(b, fn, name, TIRX__DECL_PARAM_SCALAR, dtype, NULL);
  return d ? param_ref(b, fn, d, tirx__dtype_is_int(dtype)) : NULL;
}

/* Checks a layout for a tensor of the given storage and groups it to shape. */
static const tirx_layout *tensor_layout(tirx_builder *b, const char *fn, const tirx_layout *l,
                                        int storage, tirx_dtype dtype, int rank,
                                        const int64_t *shape, int64_t *elems) {
  static const char *const what[] = {"a global tensor", "a shared tensor", "a local tensor"};
  int64_t size = 1;
  for (int k = 0; k < rank; k++)
    if (!tirx__mul_ok(size, shape[k], &size)) {
      tirx__b_fail(b, TIRX_E_OVERFLOW, "%s: the product of the shape overflows int64", fn);
      return NULL;
    }
  if (tirx_layout_size(l) != size) {
    tirx__b_fail(b, TIRX_E_INVALID_ARG,
                 "%s: layout has size %lld, expected %lld (the product of the shape)", fn,
                 (long long)tirx_layout_size(l), (long long)size);
    return NULL;
  }
  bool storage_axis[TIRX_AXIS_MAX] = {false};
  storage_axis[TIRX_AXIS_M] = true;
  if (storage == TIRX__LOCAL) storage_axis[TIRX_AXIS_REG] = true;
  for (int i = 0; i < l->nd; i++) {
    const tirx_iter *it = &l->d[i];
    if (storage_axis[it->axis]) {
      if (it->stride < 0) {
        tirx__b_fail(b, TIRX_E_INVALID_ARG, "%s: layout has a negative stride on %s", fn,
                     tirx_axis_name(it->axis));
        return NULL;
      }
    } else if (storage != TIRX__LOCAL || !tirx_axis_is_thread(it->axis)) {
      tirx__b_fail(b, TIRX_E_INVALID_ARG,
                   "%s: layout has an iter on %s: %s is addressed on %s only", fn,
                   tirx_axis_name(it->axis), what[storage],
                   storage == TIRX__LOCAL ? "m and reg (and thread axes)" : "m");
      return NULL;
    }
  }
  for (int i = 0; i < l->nr; i++)
    if (storage != TIRX__LOCAL || !tirx_axis_is_thread(l->r[i].axis)) {
      tirx__b_fail(b, TIRX_E_INVALID_ARG,
                   "%s: layout has a replica on %s: %s needs a single-valued layout", fn,
                   tirx_axis_name(l->r[i].axis), what[storage]);
      return NULL;
    }
  int64_t max = 0;
  for (int i = 0; i < l->no; i++) {
    if (!storage_axis[l->o[i].axis]) continue;
    if (l->o[i].value < 0) {
      tirx__b_fail(b, TIRX_E_INVALID_ARG, "%s: layout has a negative offset on %s", fn,
                   tirx_axis_name(l->o[i].axis));
      return NULL;
    }
    if (!tirx__add_ok(max, l->o[i].value, &max)) goto reach_overflow;
  }
  if (l->swizzle_bytes && storage != TIRX__SHARED) {
    tirx__b_fail(b, TIRX_E_INVALID_ARG, "%s: layout is swizzled: only shared tensors may be", fn);
    return NULL;
  }
  if (l->swizzle_bytes && l->swizzle_elem != tirx_dtype_size(dtype)) {
    tirx__b_fail(b, TIRX_E_INVALID_ARG,
                 "%s: layout swizzles %d-byte elements, expected %d (the size of %s)", fn,
                 l->swizzle_elem, tirx_dtype_size(dtype), tirx_dtype_name(dtype));
    return NULL;
  }
  for (int i = 0; i < l->nd; i++) {
    int64_t span;
    if (storage_axis[l->d[i].axis] &&
        (!tirx__mul_ok(l->d[i].extent - 1, l->d[i].stride, &span) ||
         !tirx__add_ok(max, span, &max)))
      goto reach_overflow;
  }
  int64_t n;
  if (!tirx__add_ok(max, 1, &n)) goto reach_overflow;
  if (l->swizzle_bytes) {
    int64_t atom = 8 * (int64_t)l->swizzle_bytes / l->swizzle_elem;
    if (n > INT64_MAX - (atom - 1)) goto reach_overflow;
    n = (n + atom - 1) / atom * atom;
  }
  *elems = n;
  bool same = l->rank == rank;
  for (int k = 0; same && k < rank; k++) same = l->shape[k] == shape[k];
  if (same) return l;
  tirx_layout *g = tirx_layout_group(b->arena, l, rank, shape);
  if (!g) {
    tirx__b_fail(b, tirx_last_status(), "%s: layout does not fit the shape: %s", fn,
                 tirx_last_error());
    return NULL;
  }
  return g;
reach_overflow: /* layouts keep their coordinates and spans within int64: defensive */
  tirx__b_fail(b, TIRX_E_OVERFLOW, "%s: layout addresses more than INT64_MAX elements on %s",
               fn, storage == TIRX__LOCAL ? "m and reg" : "m");
  return NULL;
}

static bool check_rank(tirx_builder *b, const char *fn, int rank) {
  if (rank < 1 || rank > TIRX_BUILDER_MAX_RANK) {
    tirx__b_fail(b, TIRX_E_INVALID_ARG, "%s: rank is %d, expected 1 to %d", fn, rank,
                 TIRX_BUILDER_MAX_RANK);
    return false;
  }
  return true;
}

static tirx_tensor *new_tensor(tirx_builder *b, const char *fn, int storage, tirx_dtype dtype,
                               int rank) {
  tirx_tensor *t = tirx__b_node(b, fn, sizeof *t);
  if (!t) return NULL;
  t->owner = b;
  t->storage = (uint8_t)storage;
  t->dtype = (uint8_t)dtype;
  t->rank = rank;
  t->decl.tensor = t;
  t->decl.dtype = (uint8_t)dtype;
  t->decl.param_index = -1;
  t->decl.id = b->ndecls++;
  return t;
}

static tirx_expr *mul_i64(tirx_builder *b, const char *fn, tirx_expr *x, tirx_expr *y) {
  x = tirx__b_convert(b, fn, x, TIRX_I64);
  y = tirx__b_convert(b, fn, y, TIRX_I64);
  if (!x || !y) return NULL;
  if (x->kind == TIRX__EX_INT && y->kind == TIRX__EX_INT) {
    int64_t v;
    if (tirx__mul_ok(x->i, y->i, &v)) return tirx__b_const(b, fn, v, TIRX_I64);
  }
  if (x->kind == TIRX__EX_INT && x->i == 1) return y;
  if (y->kind == TIRX__EX_INT && y->i == 1) return x;
  return tirx__b_expr_new(b, fn, TIRX__EX_BINARY, TIRX__OP_MUL, TIRX_I64, x, y, NULL);
}

static tirx_tensor *param_tensor(tirx_builder *b, const char *fn, const char *name,
                                 tirx_dtype dtype, int rank, tirx_expr *const *shape,
                                 const tirx_layout *layout, bool strided,
                                 tirx_expr *const *strides) {
  if (!tirx__b_ok(b, fn)) return NULL;
  if (!tirx__b_dtype(b, fn, dtype, "dtype") || !check_rank(b, fn, rank)) return NULL;
  if (!shape) {
    tirx__b_fail(b, TIRX_E_NULL_ARG, "%s: shape is NULL", fn);
    return NULL;
  }
  char arg[32];
  for (int k = 0; k < rank; k++) {
    snprintf(arg, sizeof arg, "shape[%d]", k);
    if (!tirx__b_host_int(b, fn, shape[k], arg)) return NULL;
    if (shape[k]->kind == TIRX__EX_INT && shape[k]->i < 0) {
      tirx__b_fail(b, TIRX_E_INVALID_ARG, "%s: shape[%d] is %lld, expected >= 0", fn, k,
                   (long long)shape[k]->i);
      return NULL;
    }
  }
  if (strided && strides)
    for (int k = 0; k < rank; k++) {
      snprintf(arg, sizeof arg, "strides[%d]", k);
      if (strides[k] && !tirx__b_host_int(b, fn, strides[k], arg)) return NULL;
    }
  tirx_tensor *t = new_tensor(b, fn, TIRX__GLOBAL, dtype, rank);
  if (!t) return NULL;
  if (!new_param(b, fn, name, TIRX__DECL_PARAM_TENSOR, dtype, &t->decl)) return NULL;
  for (int k = 0; k < rank; k++) t->shape[k] = shape[k];
  if (layout) {
    for (int k = 0; k < rank; k++) {
      if (shape[k]->kind != TIRX__EX_INT) {
        char buf[120];
        tirx__b_fail(b, TIRX_E_INVALID_ARG,
                     "%s: shape[%d] (%s) is not a constant: a tensor with a layout needs a "
                     "constant shape",
                     fn, k, tirx__b_expr_str(shape[k], buf, sizeof buf));
        return NULL;
      }
      t->const_shape[k] = shape[k]->i;
    }
    t->layout = tensor_layout(b, fn, layout, TIRX__GLOBAL, dtype, rank, t->const_shape,
                              &t->elems);
    if (!t->layout) return NULL;
    /* Strides when each dimension is one iter on m (or none). */
    bool expressible = true;
    for (int k = 0; k < rank && expressible; k++) {
      int n = t->layout->dim_begin[k + 1] - t->layout->dim_begin[k];
      if (n > 1) expressible = false;
      int64_t s = n ? t->layout->d[t->layout->dim_begin[k]].stride : 0;
      t->stride[k] = tirx__b_const(b, fn, s, TIRX_I64);
      if (!t->stride[k]) return NULL;
    }
    if (!expressible)
      for (int k = 0; k < rank; k++) t->stride[k] = NULL;
    return t;
  }
  if (strided) {
    for (int k = 0; k < rank; k++)
      t->stride[k] = strides && strides[k] ? tirx__b_convert(b, fn, strides[k], TIRX_I64) : NULL;
    if (b->status != TIRX_OK) return NULL;
    return t;
  }
  t->dense = true;
  t->stride[rank - 1] = tirx__b_const(b, fn, 1, TIRX_I64);
  for (int k = rank - 2; k >= 0; k--) {
    t->stride[k] = mul_i64(b, fn, t->stride[k + 1], shape[k + 1]);
    if (!t->stride[k]) return NULL;
  }
  return t;
}

tirx_tensor *tirx_param_tensor(tirx_builder *b, const char *name, tirx_dtype dtype, int rank,
                               tirx_expr *const *shape, const tirx_layout *layout) {
  return param_tensor(b, "tirx_param_tensor", name, dtype, rank, shape, layout, false, NULL);
}

tirx_tensor *tirx_param_tensor_strided(tirx_builder *b, const char *name, tirx_dtype dtype,
                                       int rank, tirx_expr *const *shape,
                                       tirx_expr *const *strides) {
  return param_tensor(b, "tirx_param_tensor_strided", name, dtype, rank, shape, NULL, true,
                      strides);
}

/* ---- allocations ---- */

static tirx_tensor *alloc_tensor(tirx_builder *b, const char *fn, int storage, const char *name,
                                 tirx_dtype dtype, int rank, const int64_t *shape,
                                 const tirx_layout *layout, tirx__block *blk,
                                 const tirx_tensor *base, int64_t base_off) {
  if (!tirx__b_ok(b, fn)) return NULL;
  if (!tirx__b_name(b, fn, name, "name") || !tirx__b_dtype(b, fn, dtype, "dtype") ||
      !check_rank(b, fn, rank))
    return NULL;
  if (!shape) {
    tirx__b_fail(b, TIRX_E_NULL_ARG, "%s: shape is NULL", fn);
    return NULL;
  }
  int64_t size = 1;
  for (int k = 0; k < rank; k++) {
    if (shape[k] < 1) {
      tirx__b_fail(b, TIRX_E_INVALID_ARG, "%s: shape[%d] is %lld, expected >= 1", fn, k,
                   (long long)shape[k]);
      return NULL;
    }
    if (!tirx__mul_ok(size, shape[k], &size) || size > ((int64_t)1 << 40)) {
      tirx__b_fail(b, TIRX_E_LIMIT, "%s: shape has too many elements", fn);
      return NULL;
    }
  }
  if (storage == TIRX__SHARED && !tirx__b_name_unique(b, fn, name)) return NULL;
  tirx_tensor *t = new_tensor(b, fn, storage, dtype, rank);
  if (!t) return NULL;
  t->decl.kind = storage == TIRX__SHARED ? TIRX__DECL_SHARED : TIRX__DECL_LOCAL;
  t->decl.name = b_strdup(b, fn, name);
  if (!t->decl.name) return NULL;
  for (int k = 0; k < rank; k++) {
    t->const_shape[k] = shape[k];
    t->shape[k] = tirx__b_const(b, fn, shape[k], TIRX_I64);
    if (!t->shape[k]) return NULL;
  }
  if (layout) {
    t->layout = tensor_layout(b, fn, layout, storage, dtype, rank, shape, &t->elems);
  } else {
    t->layout = tirx_layout_row_major(b->arena, rank, shape);
    if (!t->layout) tirx__b_fail(b, tirx_last_status(), "%s: %s", fn, tirx_last_error());
    t->elems = size;
  }
  if (!t->layout) return NULL;
  /* The size in bytes, checked: a layout's reach may be far beyond any limit (elems near
   * 2^62), and the limits below must see that instead of a wrapped product. */
  int esize = tirx_dtype_size(dtype);
  int64_t bytes;
  bool huge = !tirx__mul_ok(t->elems, esize, &bytes);
  if (storage == TIRX__SHARED && base) { /* a view: base's bytes, from base_off on */
    int64_t align = t->layout->swizzle_bytes ? 1024 : 128;
    int64_t base_bytes = base->elems * tirx_dtype_size((tirx_dtype)base->dtype);
    if (base_off % align) {
      tirx__b_fail(b, TIRX_E_INVALID_ARG, "%s: byte_offset is %lld, expected a multiple of %lld "
                   "(the alignment of a %s buffer)", fn, (long long)base_off, (long long)align,
                   align == 1024 ? "swizzled" : "shared");
      return NULL;
    }
    /* The view's own start, not only its offset in base: an unswizzled base is 128-byte
     * aligned, and a swizzled view of it at a start that is not a multiple of 1024 had its
     * swizzle's phase differ from the hardware's (TMA and wgmma swizzle by the shared address;
     * dispatch checks the start within the tensor only). */
    if ((base->smem_offset + base_off) % align) {
      tirx__b_fail(b, TIRX_E_INVALID_ARG, "%s: view \"%s\" would start at byte %lld of shared "
                   "memory (byte_offset %lld of \"%s\", which starts at byte %lld): a swizzled "
                   "view must start at a multiple of 1024; allocate %s with a swizzled layout or "
                   "place the view at a 1024-byte boundary", fn, name,
                   (long long)(base->smem_offset + base_off), (long long)base_off,
                   base->decl.name, (long long)base->smem_offset, base->decl.name);
      return NULL;
    }
    if (huge || bytes > base_bytes - base_off) {
      tirx__b_fail(b, TIRX_E_INVALID_ARG, "%s: view \"%s\" needs %lld bytes from byte %lld of "
                   "\"%s\", which has %lld", fn, name, (long long)bytes, (long long)base_off,
                   base->decl.name, (long long)base_bytes);
      return NULL;
    }
    t->smem_offset = base->smem_offset + base_off;
  }
  if (storage == TIRX__SHARED && !base) {
    int64_t align = t->layout->swizzle_bytes ? 1024 : 128;
    int64_t off = (b->shared_bytes + align - 1) / align * align;
    huge = huge || bytes > INT64_MAX - off;
    if (huge || bytes > TIRX_BUILDER_MAX_SHARED - off) {
      if (huge) {
        tirx__b_fail(b, TIRX_E_LIMIT,
                     "%s: shared tensor \"%s\" has %lld elements of %d bytes, more than the "
                     "limit of %d bytes of shared memory",
                     fn, name, (long long)t->elems, esize, TIRX_BUILDER_MAX_SHARED);
        return NULL;
      }
      tirx__b_fail(b, TIRX_E_LIMIT,
                   "%s: shared memory would be %lld bytes, limit %d", fn,
                   (long long)(off + bytes), TIRX_BUILDER_MAX_SHARED);
      return NULL;
    }
    t->smem_offset = off;
    b->shared_bytes = off + bytes;
  }
  if (storage == TIRX__SHARED) {
    if (b->nshared == b->shared_cap) {
      int cap = b->shared_cap ? 2 * b->shared_cap : 8;
      tirx_tensor **n = tirx__arena_array(b->arena, (size_t)cap, sizeof *n, fn);
      if (!n) {
        tirx__b_fail(b, TIRX_E_NO_MEMORY, "%s: out of memory", fn);
        return NULL;
      }
      if (b->nshared) memcpy(n, b->shared, (size_t)b->nshared * sizeof *n);
      b->shared = n;
      b->shared_cap = cap;
    }
    b->shared[b->nshared++] = t;
    t->decl.live = true;
  } else {
    if (huge) {
      tirx__b_fail(b, TIRX_E_LIMIT,
                   "%s: local array \"%s\" has %lld elements of %d bytes, more than the limit "
                   "of %d bytes",
                   fn, name, (long long)t->elems, esize, TIRX_BUILDER_MAX_LOCAL);
      return NULL;
    }
    if (bytes > TIRX_BUILDER_MAX_LOCAL) {
      tirx__b_fail(b, TIRX_E_LIMIT, "%s: local array \"%s\" is %lld bytes, limit %d", fn, name,
                   (long long)bytes, TIRX_BUILDER_MAX_LOCAL);
      return NULL;
    }
    tirx__stmt *s = tirx__b_stmt_in(b, fn, TIRX__ST_LOCAL, blk);
    if (!s) return NULL;
    s->local.tensor = t;
  }
  return t;
}

tirx_tensor *tirx__b_alloc_in(tirx_builder *b, tirx__block *blk, const char *fn, int storage,
                              const char *name, tirx_dtype dtype, int rank, const int64_t *shape,
                              const tirx_layout *layout) {
  return alloc_tensor(b, fn, storage, name, dtype, rank, shape, layout, blk, NULL, 0);
}

tirx_tensor *tirx_alloc_shared(tirx_builder *b, const char *name, tirx_dtype dtype, int rank,
                               const int64_t *shape, const tirx_layout *layout) {
  return alloc_tensor(b, "tirx_alloc_shared", TIRX__SHARED, name, dtype, rank, shape, layout,
                      NULL, NULL, 0);
}

tirx_tensor *tirx_alloc_shared_view(tirx_builder *b, const char *name, tirx_tensor *base,
                                    int64_t byte_offset, tirx_dtype dtype, int rank,
                                    const int64_t *shape, const tirx_layout *layout) {
  static const char fn[] = "tirx_alloc_shared_view";
  if (!tirx__b_ok(b, fn) || !tirx__b_tensor(b, fn, base, "base")) return NULL;
  if (base->storage != TIRX__SHARED) {
    tirx__b_fail(b, TIRX_E_INVALID_ARG, "%s: base \"%s\" is not a shared tensor", fn,
                 base->decl.name);
    return NULL;
  }
  if (byte_offset < 0) {
    tirx__b_fail(b, TIRX_E_INVALID_ARG, "%s: byte_offset is %lld, expected >= 0", fn,
                 (long long)byte_offset);
    return NULL;
  }
  return alloc_tensor(b, fn, TIRX__SHARED, name, dtype, rank, shape, layout, NULL, base,
                      byte_offset);
}

tirx_tensor *tirx_alloc_local(tirx_builder *b, const char *name, tirx_dtype dtype, int rank,
                              const int64_t *shape, const tirx_layout *layout) {
  return alloc_tensor(b, "tirx_alloc_local", TIRX__LOCAL, name, dtype, rank, shape, layout,
                      NULL, NULL, 0);
}

int tirx_tensor_rank(const tirx_tensor *t) { return t ? t->rank : 0; }
tirx_dtype tirx_tensor_dtype(const tirx_tensor *t) {
  return t ? (tirx_dtype)t->dtype : TIRX_DTYPE_COUNT;
}
const char *tirx_tensor_name(const tirx_tensor *t) { return t ? t->decl.name : NULL; }

tirx_expr *tirx_tensor_dim(tirx_builder *b, const tirx_tensor *t, int dim) {
  static const char fn[] = "tirx_tensor_dim";
  if (!tirx__b_ok(b, fn) || !tirx__b_tensor(b, fn, t, "t")) return NULL;
  if (dim < 0 || dim >= t->rank) {
    tirx__b_fail(b, TIRX_E_OUT_OF_RANGE, "%s: dim is %d, expected 0 to %d (the rank of %s)", fn,
                 dim, t->rank - 1, t->decl.name);
    return NULL;
  }
  return t->shape[dim];
}

/* ---- launch configuration ---- */

void tirx_set_grid(tirx_builder *b, tirx_expr *x, tirx_expr *y, tirx_expr *z) {
  static const char fn[] = "tirx_set_grid";
  if (!tirx__b_ok(b, fn)) return;
  tirx_expr *v[3] = {x, y, z};
  static const char *const names[3] = {"x", "y", "z"};
  for (int i = 0; i < 3; i++)
    if (v[i] && !tirx__b_host_int(b, fn, v[i], names[i])) return;
  for (int i = 0; i < 3; i++) b->grid[i] = v[i];
}

void tirx_set_source(tirx_builder *b, const char *source) {
  static const char fn[] = "tirx_set_source";
  if (!tirx__b_ok(b, fn)) return;
  if (!source) {
    tirx__b_fail(b, TIRX_E_NULL_ARG, "%s: source is NULL", fn);
    return;
  }
  if (!*source) {
    tirx__b_fail(b, TIRX_E_INVALID_ARG, "%s: source is empty", fn);
    return;
  }
  if (b->raw_source) {
    tirx__b_fail(b, TIRX_E_INVALID_ARG, "%s: kernel '%s' already has a source", fn, b->name);
    return;
  }
  char *copy = tirx__arena_strdup(b->arena, source, fn);
  if (!copy) {
    tirx__b_fail(b, TIRX_E_NO_MEMORY, "%s: out of memory", fn);
    return;
  }
  b->raw_source = copy;
}

void tirx_set_block(tirx_builder *b, int x, int y, int z) {
  static const char fn[] = "tirx_set_block";
  if (!tirx__b_ok(b, fn)) return;
  int v[3] = {x, y, z}, lim[3] = {1024, 1024, 64};
  static const char *const names[3] = {"x", "y", "z"};
  for (int i = 0; i < 3; i++)
    if (v[i] < 1 || v[i] > lim[i]) {
      tirx__b_fail(b, TIRX_E_INVALID_ARG, "%s: %s is %d, expected 1 to %d", fn, names[i], v[i],
                   lim[i]);
      return;
    }
  if ((int64_t)x * y * z > 1024) {
    tirx__b_fail(b, TIRX_E_INVALID_ARG, "%s: %d x %d x %d threads, expected at most 1024", fn,
                 x, y, z);
    return;
  }
  /* Tile primitives (and their scopes) and native statements are checked against the block
   * when they are built: it cannot change under them. */
  if (b->block_set && (b->nprims > 0 || (b->preludes & TIRX__PRE_SYNC)) &&
      (b->block[0] != x || b->block[1] != y || b->block[2] != z)) {
    tirx__b_fail(b, TIRX_E_INVALID_ARG,
                 "%s: the block is already %d x %d x %d and tile primitives or native statements "
                 "were built for it, expected the same block (set it before them)", fn, b->block[0],
                 b->block[1], b->block[2]);
    return;
  }
  for (int i = 0; i < 3; i++) b->block[i] = v[i];
  b->block_set = true;
}

void tirx_set_min_blocks(tirx_builder *b, int n) {
  static const char fn[] = "tirx_set_min_blocks";
  if (!tirx__b_ok(b, fn)) return;
  if (n < 1 || n > 32) {
    tirx__b_fail(b, TIRX_E_INVALID_ARG, "%s: n is %d, expected 1 to 32 CTAs per SM", fn, n);
    return;
  }
  b->min_blocks = n;
}

/* ---- the dispatch target ---- */

void tirx_set_target(tirx_builder *b, const char *arch) {
  static const char fn[] = "tirx_set_target";
  if (!tirx__b_ok(b, fn)) return;
  if (!arch) {
    tirx__b_fail(b, TIRX_E_NULL_ARG, "%s: arch is NULL, expected a target such as \"sm_90a\" "
                 "or \"sm_80\"", fn);
    return;
  }
  char suffix = 0;
  int number = tirx__arch_parse(arch, &suffix);
  if (number < 0) {
    tirx__b_fail(b, TIRX_E_INVALID_ARG, "%s: arch is \"%.32s%s\", expected sm_<major><minor> "
                 "with an optional a or f suffix (\"sm_80\", \"sm_86\", \"sm_89\", \"sm_90\", "
                 "\"sm_90a\")", fn, arch, strlen(arch) > 32 ? "..." : "");
    return;
  }
  if (number < 80) {
    tirx__b_fail(b, TIRX_E_NOT_SUPPORTED, "%s: arch is \"%s\", expected sm_80 or newer (the "
                 "oldest target of tirx's instruction families)", fn, arch);
    return;
  }
  char *copy = tirx__arena_strdup(b->arena, arch, fn);
  if (!copy) {
    tirx__b_fail(b, TIRX_E_NO_MEMORY, "%s: out of memory", fn);
    return;
  }
  b->target = number;
  b->target_suffix = suffix;
  b->target_name = copy;
}

void tirx__b_need(tirx_builder *b, tirx__features fs, const char *what) {
  if (!b) return;
  for (int f = 0; f < TIRX__FEAT_COUNT; f++)
    if (fs >> f & 1 && !(b->need >> f & 1)) {
      b->need |= (tirx__features)1 << f;
      b->need_what[f] = what;
    }
}

void tirx_set_shared_bytes(tirx_builder *b, tirx_expr *bytes) {
  static const char fn[] = "tirx_set_shared_bytes";
  if (!tirx__b_ok(b, fn)) return;
  if (!tirx__b_host_int(b, fn, bytes, "bytes")) return;
  b->shared_extra = bytes;
}
