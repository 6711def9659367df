/*
 * Regions and tile-primitive statements (execution scopes are scope.c's). A primitive is recorded as a TIRX__ST_PRIM statement holding its operands, the
 * scope at the call and its config; src/dispatch/lower_driver.c dispatches and lowers it at
 * tirx_kernel_build (tirx__prim_lower_all).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../dispatch/lower.h"
#include "builder_internal.h"

/* ---- regions ---- */

static tirx_region *new_region(tirx_builder *b, const char *fn) {
  tirx_region *r = tirx__b_node(b, fn, sizeof *r);
  if (r) r->owner = b;
  return r;
}

static bool const_shape(const tirx_tensor *t, int k, int64_t *out) {
  if (t->storage != TIRX__GLOBAL || t->layout) {
    *out = t->const_shape[k];
    return true;
  }
  if (t->shape[k]->kind != TIRX__EX_INT) return false;
  *out = t->shape[k]->i;
  return true;
}

tirx_region *tirx_region_new(tirx_builder *b, tirx_tensor *t, int n, tirx_expr *const *begins,
                             const int64_t *extents) {
  static const char fn[] = "tirx_region_new";
  if (!tirx__b_ok(b, fn) || !tirx__b_tensor(b, fn, t, "t")) return NULL;
  if (!extents) {
    tirx__b_fail(b, TIRX_E_NULL_ARG, "%s: extents is NULL", fn);
    return NULL;
  }
  tirx_expr **idx = tirx__b_index_list(b, fn, t, n, begins);
  if (!idx) return NULL;
  /* Shared tensors take any integer begin (stage s of a ring): region_layout describes it to
   * dispatch. Registers need constant indices. */
  bool need_const = t->storage == TIRX__LOCAL || (t->storage == TIRX__GLOBAL && t->layout);
  for (int k = 0; k < n; k++) {
    if (extents[k] < 1) {
      tirx__b_fail(b, TIRX_E_INVALID_ARG, "%s: extents[%d] is %lld, expected >= 1", fn, k,
                   (long long)extents[k]);
      return NULL;
    }
    if (idx[k]->kind != TIRX__EX_INT) {
      if (need_const) {
        tirx__b_fail(b, TIRX_E_NOT_SUPPORTED,
                     "%s: begins[%d] is not a constant: regions of %s need constant begins%s",
                     fn, k, t->decl.name,
                     "");
        return NULL;
      }
      continue;
    }
    int64_t dim;
    if (idx[k]->i < 0 || (const_shape(t, k, &dim) && (idx[k]->i > dim ||
                                                       extents[k] > dim - idx[k]->i))) {
      int64_t end;
      if (__builtin_add_overflow(idx[k]->i, extents[k], &end)) /* an extent near INT64_MAX */
        tirx__b_fail(b, TIRX_E_OUT_OF_RANGE, "%s: region dim %d begins at %lld with extent %lld: "
                     "it exceeds the extent of %s", fn, k, (long long)idx[k]->i,
                     (long long)extents[k], t->decl.name);
      else
        tirx__b_fail(b, TIRX_E_OUT_OF_RANGE, "%s: region dim %d [%lld, %lld) exceeds the extent "
                     "of %s", fn, k, (long long)idx[k]->i, (long long)end, t->decl.name);
      return NULL;
    }
  }
  tirx_region *r = new_region(b, fn);
  if (!r) return NULL;
  r->tensor = t;
  for (int k = 0; k < n; k++) {
    r->begin[k] = idx[k];
    r->extent[k] = extents[k];
  }
  return r;
}

tirx_region *tirx_whole(tirx_builder *b, tirx_tensor *t) {
  static const char fn[] = "tirx_whole";
  if (!tirx__b_ok(b, fn) || !tirx__b_tensor(b, fn, t, "t")) return NULL;
  tirx_expr *zero[TIRX_BUILDER_MAX_RANK];
  int64_t ext[TIRX_BUILDER_MAX_RANK];
  for (int k = 0; k < t->rank; k++) {
    if (!const_shape(t, k, &ext[k])) {
      tirx__b_fail(b, TIRX_E_INVALID_ARG,
                   "%s: %s has a symbolic shape: use tirx_region_new with constant extents", fn,
                   t->decl.name);
      return NULL;
    }
    zero[k] = tirx_int(b, 0);
    if (!zero[k]) return NULL;
  }
  tirx_region *r = new_region(b, fn);
  if (!r) return NULL;
  r->tensor = t;
  for (int k = 0; k < t->rank; k++) {
    r->begin[k] = tirx__b_const(b, fn, 0, TIRX_I32);
    r->extent[k] = ext[k];
  }
  return b->status == TIRX_OK ? r : NULL;
}

tirx_region *tirx_broadcast(tirx_builder *b, tirx_expr *value) {
  static const char fn[] = "tirx_broadcast";
  if (!tirx__b_ok(b, fn) || !tirx__b_expr(b, fn, value, "value")) return NULL;
  tirx_region *r = new_region(b, fn);
  if (r) r->value = value;
  return r;
}

/* ---- primitives ---- */

static bool region_arg(tirx_builder *b, const char *fn, const tirx_region *r, const char *arg,
                       bool dst) {
  if (!r) {
    tirx__b_fail(b, TIRX_E_NULL_ARG, "%s: %s is NULL", fn, arg);
    return false;
  }
  if (r->owner != b) {
    tirx__b_fail(b, TIRX_E_INVALID_ARG, "%s: %s belongs to another builder", fn, arg);
    return false;
  }
  if (dst && !r->tensor) {
    tirx__b_fail(b, TIRX_E_INVALID_ARG, "%s: %s is a broadcast: the destination must be a "
                 "region of a tensor", fn, arg);
    return false;
  }
  return true;
}

static int region_dtype(const tirx_region *r) {
  return r->tensor ? r->tensor->dtype : r->value->dtype;
}

static bool same_shape(tirx_builder *b, const char *fn, const tirx_region *d,
                       const tirx_region *s, const char *arg) {
  if (!s->tensor) return true;
  bool ok = s->tensor->rank == d->tensor->rank;
  for (int k = 0; ok && k < d->tensor->rank; k++) ok = s->extent[k] == d->extent[k];
  if (!ok)
    tirx__b_fail(b, TIRX_E_INVALID_ARG, "%s: %s's extents differ from dst's", fn, arg);
  return ok;
}

static tirx__prim_stmt *add_prim(tirx_builder *b, const char *fn, int prim, int op, int n,
                                 tirx_region *const *ops, const tirx_config *cfg, uint32_t axes,
                                 bool accumulate) {
  const tirx_scope *scope = tirx__b_scope(b, fn);
  if (!scope) return NULL;
  if (cfg && ((unsigned)cfg->hint > TIRX_HINT_NC)) {
    tirx__b_fail(b, TIRX_E_INVALID_ARG, "%s: cfg->hint is %d, not a tirx_hint", fn,
                 (int)cfg->hint);
    return NULL;
  }
  tirx__prim_stmt *p = tirx__b_node(b, fn, sizeof *p);
  if (!p) return NULL;
  p->prim = (uint8_t)prim;
  p->op = (uint8_t)op;
  p->axes = axes;
  p->accumulate = accumulate;
  p->nops = n;
  for (int i = 0; i < n; i++) p->ops[i] = ops[i];
  p->scope = scope;
  p->number = ++b->nprims;
  if (cfg) {
    if (cfg->family && !(p->family = tirx__arena_strdup(b->arena, cfg->family, fn))) {
      tirx__b_fail(b, TIRX_E_NO_MEMORY, "%s: out of memory", fn);
      return NULL;
    }
    for (int k = 0; k < 3; k++) p->shape[k] = cfg->shape[k];
    p->hint = (uint8_t)cfg->hint;
  }
  tirx__stmt *s = tirx__b_stmt(b, fn, TIRX__ST_PRIM);
  if (!s) return NULL;
  s->prim.call = p;
  ops[0]->tensor->written = true;
  return p;
}

void tirx_copy(tirx_builder *b, tirx_region *dst, tirx_region *src, const tirx_config *cfg) {
  static const char fn[] = "tirx_copy";
  if (!tirx__b_ok(b, fn) || !region_arg(b, fn, dst, "dst", true) ||
      !region_arg(b, fn, src, "src", true) || !same_shape(b, fn, dst, src, "src"))
    return;
  if (dst->tensor->dtype != src->tensor->dtype) {
    tirx__b_fail(b, TIRX_E_TYPE, "%s: src has dtype %s, dst %s: use tirx_cast_region", fn,
                 tirx_dtype_name((tirx_dtype)src->tensor->dtype),
                 tirx_dtype_name((tirx_dtype)dst->tensor->dtype));
    return;
  }
  add_prim(b, fn, TIRX__PRIM_COPY, TIRX__PRIM_OP_NONE, 2, (tirx_region *[]){dst, src}, cfg, 0,
           false);
}

/* ---- copy_async (TMA: tma.c has its statements, src/dispatch/families/copy_tma.c its rule;
 * cp.async: cp_async.c and families/copy_cp_async.c). cfg->barrier picks the protocol. */

void tirx_copy_async(tirx_builder *b, tirx_region *dst, tirx_region *src,
                     const tirx_config *cfg) {
  static const char fn[] = "tirx_copy_async";
  if (!tirx__b_ok(b, fn) || !region_arg(b, fn, dst, "dst", true) ||
      !region_arg(b, fn, src, "src", true) || !same_shape(b, fn, dst, src, "src"))
    return;
  if (dst->tensor->dtype != src->tensor->dtype) {
    tirx__b_fail(b, TIRX_E_TYPE, "%s: src has dtype %s, dst %s: asynchronous copies do not "
                 "convert", fn,
                 tirx_dtype_name((tirx_dtype)src->tensor->dtype),
                 tirx_dtype_name((tirx_dtype)dst->tensor->dtype));
    return;
  }
  bool load = src->tensor->storage == TIRX__GLOBAL && dst->tensor->storage == TIRX__SHARED;
  bool store = src->tensor->storage == TIRX__SHARED && dst->tensor->storage == TIRX__GLOBAL;
  const tirx_tensor *gt = load ? src->tensor : store ? dst->tensor : NULL;
  if (gt && gt->layout) {
    tirx__b_fail(b, TIRX_E_NOT_SUPPORTED,
                 "%s: %s has a layout: asynchronous copies take strided global tensors "
                 "(shape and strides) for now", fn, gt->decl.name);
    return;
  }
  tirx_region *bar = cfg ? cfg->barrier : NULL;
  tirx_expr *mask = cfg ? cfg->multicast : NULL;
  if (!load && (bar || mask)) {
    tirx__b_fail(b, TIRX_E_INVALID_ARG,
                 "%s: cfg->%s is set: only a load (global -> shared) takes a barrier or a "
                 "multicast mask%s",
                 fn, bar ? "barrier" : "multicast",
                 store ? " (a store completes in bulk groups: tirx_bulk_commit, tirx_bulk_wait)"
                       : "");
    return;
  }
  if (mask && !bar) { /* a load without a barrier is a cp.async load */
    tirx__b_fail(b, TIRX_E_INVALID_ARG,
                 "%s: cfg->multicast is set without cfg->barrier: a multicast load is a TMA "
                 "load, which completes on an mbarrier", fn);
    return;
  }
  if (bar && !tirx__b_region_barrier(b, fn, bar, "cfg->barrier")) return;
  if (mask && (!tirx__b_expr(b, fn, mask, "cfg->multicast") ||
               !tirx__dtype_is_int(mask->dtype))) {
    if (b->status == TIRX_OK)
      tirx__b_fail(b, TIRX_E_TYPE, "%s: cfg->multicast has dtype %s, expected an integer", fn,
                   tirx_dtype_name((tirx_dtype)mask->dtype));
    return;
  }
  tirx__prim_stmt *p = add_prim(b, fn, TIRX__PRIM_COPY_ASYNC, TIRX__PRIM_OP_NONE, 2,
                                (tirx_region *[]){dst, src}, cfg, 0, false);
  if (!p) return;
  p->barrier = bar;
  p->multicast = mask;
}

static int op_arity(tirx_op op) {
  switch (op) {
  case TIRX_OP_ADD: case TIRX_OP_SUB: case TIRX_OP_MUL: case TIRX_OP_DIV: case TIRX_OP_MAX:
  case TIRX_OP_MIN: return 2;
  case TIRX_OP_FMA: return 3;
  case TIRX_OP_NEG: case TIRX_OP_ABS: case TIRX_OP_EXP: case TIRX_OP_EXP2: case TIRX_OP_LOG:
  case TIRX_OP_SQRT: case TIRX_OP_RSQRT: case TIRX_OP_TANH: case TIRX_OP_SIGMOID:
  case TIRX_OP_SILU: case TIRX_OP_GELU: case TIRX_OP_COPY: case TIRX_OP_EXP2_APPROX: return 1;
  default: return 0;
  }
}

static bool float_only(tirx_op op) {
  return op >= TIRX_OP_EXP && op <= TIRX_OP_SIGMOID ? true : op == TIRX_OP_SILU ||
                                                                 op == TIRX_OP_GELU ||
                                                                 op == TIRX_OP_EXP2_APPROX;
}

/* tirx_map and its fixed-arity forms, whose messages name the function called (fn) and its
 * source arguments (names: "srcs[i]" for tirx_map, "a", "x", "y" for the others). */
static void map_in(tirx_builder *b, const char *fn, tirx_region *dst, tirx_op op, int n,
                   tirx_region *const *srcs, const char *const *names, const tirx_config *cfg) {
  if (!tirx__b_ok(b, fn) || !region_arg(b, fn, dst, "dst", true)) return;
  int arity = op_arity(op);
  if (!arity) {
    tirx__b_fail(b, TIRX_E_INVALID_ARG, "%s: op %d is not a pointwise tirx_op", fn, (int)op);
    return;
  }
  if (n != arity || !srcs) {
    tirx__b_fail(b, TIRX_E_INVALID_ARG, "%s: op %s takes %d sources, got %d", fn,
                 tirx__prim_op_name((tirx__prim_op)op), arity, srcs ? n : 0);
    return;
  }
  int dt = dst->tensor->dtype;
  if (float_only(op) && !tirx__dtype_is_float(dt)) {
    tirx__b_fail(b, TIRX_E_TYPE, "%s: op %s needs a floating-point dst, not %s", fn,
                 tirx__prim_op_name((tirx__prim_op)op), tirx_dtype_name((tirx_dtype)dt));
    return;
  }
  for (int i = 0; i < n; i++) {
    if (!region_arg(b, fn, srcs[i], names[i], false) || !same_shape(b, fn, dst, srcs[i], names[i]))
      return;
    if (srcs[i]->tensor && srcs[i]->tensor->dtype != dt) {
      tirx__b_fail(b, TIRX_E_TYPE, "%s: %s has dtype %s, expected %s (dst's): use "
                   "tirx_cast_region", fn, names[i],
                   tirx_dtype_name((tirx_dtype)srcs[i]->tensor->dtype),
                   tirx_dtype_name((tirx_dtype)dt));
      return;
    }
    if (!srcs[i]->tensor && srcs[i]->value->dtype == TIRX_BOOL) {
      tirx__b_fail(b, TIRX_E_TYPE, "%s: %s is a bool broadcast", fn, names[i]);
      return;
    }
  }
  int prim = n == 1 ? TIRX__PRIM_UNARY : n == 2 ? TIRX__PRIM_BINARY : TIRX__PRIM_TERNARY;
  tirx_region *ops[4] = {dst, n > 0 ? srcs[0] : NULL, n > 1 ? srcs[1] : NULL,
                         n > 2 ? srcs[2] : NULL};
  add_prim(b, fn, prim, (int)op, n + 1, ops, cfg, 0, false);
}

static const char *const fixed_names[3] = {"a", "x", "y"};

void tirx_map(tirx_builder *b, tirx_region *dst, tirx_op op, int n, tirx_region *const *srcs,
              const tirx_config *cfg) {
  static const char *const names[3] = {"srcs[0]", "srcs[1]", "srcs[2]"};
  map_in(b, "tirx_map", dst, op, n, srcs, names, cfg);
}
void tirx_unary(tirx_builder *b, tirx_region *dst, tirx_op op, tirx_region *a,
                const tirx_config *cfg) {
  map_in(b, "tirx_unary", dst, op, 1, (tirx_region *[]){a}, fixed_names, cfg);
}
void tirx_binary(tirx_builder *b, tirx_region *dst, tirx_op op, tirx_region *a, tirx_region *x,
                 const tirx_config *cfg) {
  map_in(b, "tirx_binary", dst, op, 2, (tirx_region *[]){a, x}, fixed_names, cfg);
}
void tirx_ternary(tirx_builder *b, tirx_region *dst, tirx_op op, tirx_region *a,
                  tirx_region *x, tirx_region *y, const tirx_config *cfg) {
  map_in(b, "tirx_ternary", dst, op, 3, (tirx_region *[]){a, x, y}, fixed_names, cfg);
}

void tirx_cast_region(tirx_builder *b, tirx_region *dst, tirx_region *src,
                      const tirx_config *cfg) {
  static const char fn[] = "tirx_cast_region";
  if (!tirx__b_ok(b, fn) || !region_arg(b, fn, dst, "dst", true) ||
      !region_arg(b, fn, src, "src", true) || !same_shape(b, fn, dst, src, "src"))
    return;
  add_prim(b, fn, TIRX__PRIM_CAST, TIRX__PRIM_OP_NONE, 2, (tirx_region *[]){dst, src}, cfg, 0,
           false);
}

void tirx_fill(tirx_builder *b, tirx_region *dst, tirx_expr *value, const tirx_config *cfg) {
  static const char fn[] = "tirx_fill";
  /* value is checked here, so that its errors name tirx_fill, not tirx_broadcast. */
  if (!tirx__b_ok(b, fn) || !region_arg(b, fn, dst, "dst", true) ||
      !tirx__b_expr(b, fn, value, "value"))
    return;
  tirx_region *v = tirx_broadcast(b, value);
  if (!v) return;
  add_prim(b, fn, TIRX__PRIM_FILL, TIRX__PRIM_OP_NONE, 2, (tirx_region *[]){dst, v}, cfg, 0,
           false);
}

void tirx_select_region(tirx_builder *b, tirx_region *dst, tirx_region *cond, tirx_region *x,
                        tirx_region *y, const tirx_config *cfg) {
  static const char fn[] = "tirx_select_region";
  if (!tirx__b_ok(b, fn) || !region_arg(b, fn, dst, "dst", true) ||
      !region_arg(b, fn, cond, "cond", false) || !region_arg(b, fn, x, "x", false) ||
      !region_arg(b, fn, y, "y", false) || !same_shape(b, fn, dst, cond, "cond") ||
      !same_shape(b, fn, dst, x, "x") || !same_shape(b, fn, dst, y, "y"))
    return;
  if (region_dtype(cond) != TIRX_BOOL) {
    tirx__b_fail(b, TIRX_E_TYPE, "%s: cond has dtype %s, expected bool", fn,
                 tirx_dtype_name((tirx_dtype)region_dtype(cond)));
    return;
  }
  add_prim(b, fn, TIRX__PRIM_SELECT, TIRX__PRIM_OP_NONE, 4, (tirx_region *[]){dst, cond, x, y},
           cfg, 0, false);
}

void tirx_reduce(tirx_builder *b, tirx_region *dst, tirx_region *src, tirx_op op, uint32_t axes,
                 bool accumulate, const tirx_config *cfg) {
  static const char fn[] = "tirx_reduce";
  if (!tirx__b_ok(b, fn) || !region_arg(b, fn, dst, "dst", true) ||
      !region_arg(b, fn, src, "src", true))
    return;
  if (op != TIRX_OP_SUM && op != TIRX_OP_SUMSQ && op != TIRX_OP_PROD && op != TIRX_OP_MAX &&
      op != TIRX_OP_MIN) {
    tirx__b_fail(b, TIRX_E_INVALID_ARG, "%s: op %d is not sum, sumsq, prod, max or min", fn,
                 (int)op);
    return;
  }
  int rank = src->tensor->rank;
  if (axes == 0 || axes >> rank) {
    tirx__b_fail(b, TIRX_E_INVALID_ARG, "%s: axes 0x%x are not a non-empty subset of src's %d "
                 "dims", fn, (unsigned)axes, rank);
    return;
  }
  if (tirx__dtype_is_float(dst->tensor->dtype) != tirx__dtype_is_float(src->tensor->dtype) ||
      dst->tensor->dtype == TIRX_BOOL || src->tensor->dtype == TIRX_BOOL) {
    tirx__b_fail(b, TIRX_E_TYPE, "%s: src has dtype %s, dst %s", fn,
                 tirx_dtype_name((tirx_dtype)src->tensor->dtype),
                 tirx_dtype_name((tirx_dtype)dst->tensor->dtype));
    return;
  }
  add_prim(b, fn, TIRX__PRIM_REDUCE, (int)op, 2, (tirx_region *[]){dst, src}, cfg, axes,
           accumulate);
}

const char *tirx_kernel_dispatch_report(const tirx_kernel *k) {
  return k ? (k->dispatch_report ? k->dispatch_report : "") : NULL;
}

/* ---- for the other files of src/builder (builder_internal.h) ---- */


bool tirx__b_region(tirx_builder *b, const char *fn, const tirx_region *r, const char *arg,
                    bool dst) {
  return region_arg(b, fn, r, arg, dst);
}

tirx__prim_stmt *tirx__b_add_prim(tirx_builder *b, const char *fn, int prim, int op, int n,
                                  tirx_region *const *ops, const tirx_config *cfg,
                                  uint32_t axes, bool accumulate) {
  add_prim(b, fn, prim, op, n, ops, cfg, axes, accumulate);
  const tirx__stmt *s = b->status == TIRX_OK ? b->frames[b->depth].block->last : NULL;
  return s && s->kind == TIRX__ST_PRIM ? s->prim.call : NULL;
}
