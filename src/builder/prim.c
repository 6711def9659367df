/*
 * Execution scopes (tirx_team_begin, tirx_filter_begin), regions and tile-primitive
 * statements, and their dispatch and lowering at tirx_kernel_build (tirx__prim_lower_all).
 *
 * A primitive is recorded as a TIRX__ST_PRIM statement holding its operands, the scope at the
 * call and its config. At build time each one becomes a tirx__call (operand layouts: the
 * tensor's layout sliced to the region), goes through tirx__dispatch, and the chosen rule's
 * emit hook writes native IR into the statement's body (src/dispatch/lower.c), which codegen
 * prints under a comment naming the rule.
 *
 * Global tensors without a layout (shape and strides, possibly symbolic) are described to
 * dispatch as one iter per dimension, (extent_k):(stride_k), with an m offset standing for
 * the region's start: the part of the start's alignment known at build time (the gcd of
 * begin_k * stride_k over constant begins and d_k * stride_k over symbolic ones, d_k what the
 * begin is known to be a multiple of: 64 for block_idx * 64, 1 for a tirx_let; base pointers
 * are 16-byte aligned). A symbolic stride is a constant only for the innermost dimension of a
 * dense tensor (1); any other symbolic stride under an extent > 1, or under a symbolic
 * begin, makes the start's alignment unknown (vector width 1: the scalar fallbacks). So
 * vector accesses on global memory need constant inner dimensions: a kernel specialised on its
 * row width vectorises, one with a symbolic width falls back to scalar accesses, correctly.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../dispatch/lower.h"
#include "../dispatch/tma.h"
#include "../layout/layout_internal.h"
#include "builder_internal.h"

/* ---- scopes ---- */

static const char *strip_fn(const char *msg) {
  const char *c = strstr(msg, ": ");
  return c ? c + 2 : msg;
}

/* The scope at the insertion point, made from the block size at the first need. */
static const tirx_scope *cur_scope(tirx_builder *b, const char *fn) {
  if (b->scope) return b->scope;
  if (!b->block_set) {
    tirx__b_fail(b, TIRX_E_BUILD, "%s: the block size is not set (call tirx_set_block first)",
                 fn);
    return NULL;
  }
  int threads = b->block[0] * b->block[1] * b->block[2];
  b->scope = tirx_scope_new(b->arena, (threads + 31) / 32, 1, 1);
  if (!b->scope)
    tirx__b_fail(b, tirx_last_status(), "%s: %s", fn, strip_fn(tirx_last_error()));
  return b->scope;
}

static bool push_scope(tirx_builder *b, const char *fn, bool filter, const tirx_scope *next,
                       const tirx_scope *outer) {
  if (b->nscopes >= TIRX_BUILDER_MAX_NESTING) {
    tirx__b_fail(b, TIRX_E_LIMIT, "%s: more than %d nested scopes", fn,
                 TIRX_BUILDER_MAX_NESTING);
    return false;
  }
  b->scopes[b->nscopes++] = (tirx__scope_frame){filter, b->depth, outer};
  b->scope = next;
  return true;
}

/* Closes the innermost scope frame when it is of the expected kind and level. */
static bool pop_scope(tirx_builder *b, const char *fn, bool filter) {
  const char *what = filter ? "tirx_filter_begin" : "tirx_team_begin";
  if (b->nscopes == 0) {
    tirx__b_fail(b, TIRX_E_BUILD, "%s: no open %s", fn, what);
    return false;
  }
  const tirx__scope_frame *f = &b->scopes[b->nscopes - 1];
  if (f->filter != filter) {
    tirx__b_fail(b, TIRX_E_BUILD, "%s: the innermost open scope is a %s", fn,
                 f->filter ? "tirx_filter_begin" : "tirx_team_begin");
    return false;
  }
  if (f->depth != b->depth) {
    tirx__b_fail(b, TIRX_E_BUILD, "%s: a for or if block opened inside %s is still open", fn,
                 what);
    return false;
  }
  b->scope = f->outer;
  b->nscopes--;
  return true;
}

void tirx_team_begin(tirx_builder *b, tirx_team team) {
  static const char fn[] = "tirx_team_begin";
  if (!tirx__b_ok(b, fn)) return;
  if ((unsigned)team > TIRX_TEAM_CLUSTER) {
    tirx__b_fail(b, TIRX_E_INVALID_ARG, "%s: team is %d, not a tirx_team", fn, (int)team);
    return;
  }
  const tirx_scope *s = cur_scope(b, fn);
  if (!s) return;
  const tirx_scope *n = tirx_scope_team(b->arena, s, team);
  if (!n) {
    tirx__b_fail(b, tirx_last_status(), "%s: %s", fn, strip_fn(tirx_last_error()));
    return;
  }
  push_scope(b, fn, false, n, s);
}

void tirx_team_end(tirx_builder *b) {
  static const char fn[] = "tirx_team_end";
  if (tirx__b_ok(b, fn)) pop_scope(b, fn, false);
}

void tirx_filter_begin(tirx_builder *b, tirx_axis axis, int64_t lo, int64_t hi) {
  static const char fn[] = "tirx_filter_begin";
  if (!tirx__b_ok(b, fn)) return;
  const tirx_scope *s = cur_scope(b, fn);
  if (!s) return;
  const tirx_scope *n = tirx_scope_filter(b->arena, s, axis, lo, hi);
  if (!n) {
    tirx__b_fail(b, tirx_last_status(), "%s: %s", fn, strip_fn(tirx_last_error()));
    return;
  }
  /* The guard is an if block: its nesting limit is checked here, so that the error names
   * this function rather than the tirx_if_begin it calls. */
  if (b->depth >= TIRX_BUILDER_MAX_NESTING) {
    tirx__b_fail(b, TIRX_E_LIMIT, "%s: more than %d nested blocks", fn,
                 TIRX_BUILDER_MAX_NESTING);
    return;
  }
  tirx_expr *coord = tirx__lower_axis_coord(b, axis);
  if (!coord) {
    const char *an = tirx_axis_name(axis);
    tirx__b_fail(b, TIRX_E_NOT_SUPPORTED,
                 "%s: a filter on %s cannot be guarded at run time yet (axes of one CTA only)",
                 fn, an ? an : "?");
    return;
  }
  tirx_expr *cond = hi == lo + 1 ? tirx_eq(b, coord, tirx_int(b, lo))
                    : lo == 0    ? tirx_lt(b, coord, tirx_int(b, hi))
                                 : tirx_and(b, tirx_ge(b, coord, tirx_int(b, lo)),
                                            tirx_lt(b, coord, tirx_int(b, hi)));
  if (!cond) return;
  tirx_if_begin(b, cond);
  if (b->status != TIRX_OK) return;
  b->frames[b->depth].kind = TIRX__FRAME_FILTER;
  push_scope(b, fn, true, n, s);
}

void tirx_filter_end(tirx_builder *b) {
  static const char fn[] = "tirx_filter_end";
  if (!tirx__b_ok(b, fn)) return;
  if (b->frames[b->depth].kind != TIRX__FRAME_FILTER && b->nscopes &&
      b->scopes[b->nscopes - 1].filter) {
    tirx__b_fail(b, TIRX_E_BUILD, "%s: a for or if block opened inside tirx_filter_begin is "
                 "still open", fn);
    return;
  }
  if (!pop_scope(b, fn, true)) return;
  b->depth--; /* the guard's if */
}

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
      tirx__b_fail(b, TIRX_E_OUT_OF_RANGE, "%s: region dim %d [%lld, %lld) exceeds the extent of "
                   "%s", fn, k, (long long)idx[k]->i, (long long)idx[k]->i + extents[k],
                   t->decl.name);
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
  const tirx_scope *scope = cur_scope(b, fn);
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
  case TIRX_OP_SILU: case TIRX_OP_GELU: case TIRX_OP_COPY: return 1;
  default: return 0;
  }
}

static bool float_only(tirx_op op) {
  return op >= TIRX_OP_EXP && op <= TIRX_OP_SIGMOID ? true : op == TIRX_OP_SILU ||
                                                                 op == TIRX_OP_GELU;
}

void tirx_map(tirx_builder *b, tirx_region *dst, tirx_op op, int n, tirx_region *const *srcs,
              const tirx_config *cfg) {
  static const char fn[] = "tirx_map";
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
  static const char *const names[3] = {"srcs[0]", "srcs[1]", "srcs[2]"};
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

void tirx_unary(tirx_builder *b, tirx_region *dst, tirx_op op, tirx_region *a,
                const tirx_config *cfg) {
  tirx_map(b, dst, op, 1, (tirx_region *[]){a}, cfg);
}
void tirx_binary(tirx_builder *b, tirx_region *dst, tirx_op op, tirx_region *a, tirx_region *x,
                 const tirx_config *cfg) {
  tirx_map(b, dst, op, 2, (tirx_region *[]){a, x}, cfg);
}
void tirx_ternary(tirx_builder *b, tirx_region *dst, tirx_op op, tirx_region *a,
                  tirx_region *x, tirx_region *y, const tirx_config *cfg) {
  tirx_map(b, dst, op, 3, (tirx_region *[]){a, x, y}, cfg);
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

/* ---- dispatch and lowering at build time ---- */

static const char FN[] = "tirx_kernel_build";

static int64_t gcd64(int64_t a, int64_t b) {
  a = a < 0 ? -a : a;
  b = b < 0 ? -b : b;
  while (b) {
    int64_t t = a % b;
    a = b;
    b = t;
  }
  return a;
}

/* ---- shared regions with non-constant begins ---- */

/* A number every value of the integer expression e is a multiple of (1 when unknown, 0 for
 * the constant 0), at most 2^20: a larger divisor d is replaced by gcd(d, 2^20), which still
 * divides every value. */
static int64_t known_divisor(const tirx_expr *e) {
  const int64_t cap = (int64_t)1 << 20;
  int64_t x, y, v;
  switch (e->kind) {
  case TIRX__EX_INT:
    if (e->i == INT64_MIN) return cap;
    v = e->i < 0 ? -e->i : e->i;
    return v > cap ? gcd64(v, cap) : v;
  case TIRX__EX_CAST: return tirx__dtype_is_int(e->a->dtype) ? known_divisor(e->a) : 1;
  case TIRX__EX_UNARY: return e->op == TIRX__OP_NEG ? known_divisor(e->a) : 1;
  case TIRX__EX_BINARY:
    x = known_divisor(e->a);
    y = known_divisor(e->b);
    switch (e->op) {
    case TIRX__OP_ADD: case TIRX__OP_SUB: return gcd64(x, y);
    case TIRX__OP_MUL:
      if (!tirx__mul_ok(x, y, &v)) return gcd64(x, cap); /* x divides the product */
      return v > cap ? gcd64(v, cap) : v;
    case TIRX__OP_SHL:
      if (e->b->kind != TIRX__EX_INT || e->b->i < 0 || e->b->i > 20) return x;
      v = x << e->b->i;
      return v > cap ? gcd64(v, cap) : v;
    default: return 1;
    }
  default: return 1;
  }
}

/*
 * The layout for dispatch of a region of a laid-out tensor with non-constant begins: sliced
 * at begin 0 on those dims, whose layout must be one iter (e):(s@m). The start then moves by
 * begin * s, a multiple of g * s (g: known_divisor of the begin). Rules care about the start
 * modulo 1024 bytes at most (vector alignment, the swizzle atom): when every such move is a
 * multiple of 1024 bytes the slice at 0 is exact; otherwise an unswizzled layout gets the
 * start's known alignment as its m offset (as for global tensors), and a swizzled one is
 * rejected (its swizzle phase would differ from stage to stage).
 */
static const tirx_layout *dynamic_start(tirx_arena *a, const tirx_region *r,
                                        const tirx_layout *l) {
  const tirx_tensor *t = r->tensor;
  const tirx_layout *tl = t->layout;
  int64_t esize = tirx_dtype_size((tirx_dtype)t->dtype), align = 0;
  for (int k = 0; k < t->rank; k++) {
    if (r->begin[k]->kind == TIRX__EX_INT) continue;
    int64_t stride = 0, n = 0;
    for (int j = tl->dim_begin[k]; j < tl->dim_begin[k + 1]; j++)
      if (tl->d[j].extent > 1) {
        n++;
        stride = tl->d[j].stride;
      }
    if (n > 1) {
      tirx__error(TIRX_E_NOT_SUPPORTED,
                  "tirx_region_new: begin of dim %d is not a constant and the layout of %s splits "
                  "that dim into %lld iters: a non-constant begin needs one iter",
                  k, t->decl.name, (long long)n);
      return NULL;
    }
    int64_t unit;
    if (!tirx__mul_ok(known_divisor(r->begin[k]), stride, &unit)) unit = 0;
    align = gcd64(align, unit);
  }
  int64_t bytes;
  if (align == 0 || (tirx__mul_ok(align, esize, &bytes) && bytes % 1024 == 0)) return l;
  if (tl->swizzle_bytes) {
    tirx__error(TIRX_E_NOT_SUPPORTED,
                "tirx_region_new: a non-constant begin moves the start of swizzled %s by "
                "multiples of %lld bytes: it must move by multiples of 1024 (the swizzle atom); "
                "write the begin as a multiple (i * 8, ...)",
                t->decl.name, (long long)(align * esize));
    return NULL;
  }
  int64_t off = tirx_layout_offset(l, TIRX_AXIS_M), known = off | align;
  tirx_axis_offset o = {TIRX_AXIS_M, known & -known};
  return tirx__layout_make(a, "tirx_region_new", l->nd, l->d, l->nr, l->r, 1, &o, l->rank,
                           l->dim_begin, 0, 0);
}

/* ---- end shared regions with non-constant begins ---- */

/* The layout of region r for dispatch (file comment), in arena a; NULL with the error set. */
static const tirx_layout *region_layout(tirx_arena *a, const tirx_region *r) {
  const tirx_tensor *t = r->tensor;
  int rank = t->rank;
  int64_t begin[TIRX_BUILDER_MAX_RANK];
  if (t->layout) {
    bool dynamic = false; /* shared tensors only (tirx_region_new) */
    for (int k = 0; k < rank; k++) {
      dynamic |= r->begin[k]->kind != TIRX__EX_INT;
      begin[k] = r->begin[k]->kind == TIRX__EX_INT ? r->begin[k]->i : 0;
    }
    const tirx_layout *l = tirx_layout_slice(a, t->layout, rank, t->const_shape, begin,
                                             r->extent);
    return l && dynamic ? dynamic_start(a, r, l) : l;
  }
  tirx_iter d[TIRX_BUILDER_MAX_RANK];
  int64_t total = 1, align = 0;
  bool unknown = false;
  for (int k = 0; k < rank; k++) tirx__mul_ok(total, r->extent[k], &total);
  for (int k = 0; k < rank; k++) {
    bool known = tirx__stride_kind(t, k) == TIRX__STRIDE_CONST;
    int64_t s = known ? t->stride[k]->i : 2 * total + 1; /* odd: never contiguous */
    d[k] = (tirx_iter){r->extent[k], r->extent[k] > 1 ? s : 0, TIRX_AXIS_M};
    bool cbegin = r->begin[k]->kind == TIRX__EX_INT;
    if (cbegin && r->begin[k]->i == 0) continue;
    if (!known) {
      unknown = true;
      continue;
    }
    /* A non-constant begin moves the start by multiples of its known divisor (block_idx *
     * 64: 64) times the stride. */
    int64_t term;
    if (!tirx__mul_ok(cbegin ? r->begin[k]->i : known_divisor(r->begin[k]), s, &term))
      unknown = true;
    align = gcd64(align, term);
  }
  for (int k = 0; k + 1 < rank; k++)
    if (tirx__stride_kind(t, k) != TIRX__STRIDE_CONST && r->extent[k] > 1) unknown = true;
  tirx_axis_offset o = {TIRX_AXIS_M, unknown ? 1 : align % 1024 ? align % 1024 : 0};
  if (!unknown && align && o.value == 0) o.value = 1024; /* keeps the known alignment */
  tirx_layout *flat = tirx_layout_new(a, rank, d, 0, NULL, o.value ? 1 : 0, &o);
  return flat ? tirx_layout_group(a, flat, rank, r->extent) : NULL;
}

/* A divisor of every value e can take (0: e is always 0), for the TMA split form. */
static int64_t tma_known_divisor(const tirx_expr *e) {
  int64_t x, y, r;
  switch (e->kind) {
  case TIRX__EX_INT: return e->i == INT64_MIN ? 1 : e->i < 0 ? -e->i : e->i;
  case TIRX__EX_CAST: return tirx__dtype_is_int(e->a->dtype) ? tma_known_divisor(e->a) : 1;
  case TIRX__EX_BINARY:
    x = tma_known_divisor(e->a);
    y = tma_known_divisor(e->b);
    switch (e->op) {
    case TIRX__OP_ADD:
    case TIRX__OP_SUB: return gcd64(x, y);
    case TIRX__OP_MUL: return x == 0 || y == 0 ? 0 : tirx__mul_ok(x, y, &r) ? r : 1;
    case TIRX__OP_SHL:
      if (e->b->kind != TIRX__EX_INT || e->b->i < 0 || e->b->i > 32) return 1;
      return tirx__mul_ok(x, INT64_C(1) << e->b->i, &r) ? r : 1;
    default: return 1;
    }
  default: return 1;
  }
}

/* What the build knows of a strided global tensor's region, for copy_async.tma. */
static void tma_global_of(const tirx_region *r, tirx__tma_global *g) {
  const tirx_tensor *t = r->tensor;
  for (int k = 0; k < t->rank; k++) {
    g->stride[k] =
        tirx__stride_kind(t, k) == TIRX__STRIDE_CONST ? t->stride[k]->i : TIRX__TMA_UNKNOWN;
    g->size[k] = t->shape[k]->kind == TIRX__EX_INT ? t->shape[k]->i : TIRX__TMA_UNKNOWN;
    g->begin_div[k] = tma_known_divisor(r->begin[k]);
  }
}

static tirx__role role_of(const tirx_region *r) {
  if (!r->tensor) return TIRX__ROLE_SCALAR;
  return r->tensor->storage == TIRX__GLOBAL   ? TIRX__ROLE_GLOBAL
         : r->tensor->storage == TIRX__SHARED ? TIRX__ROLE_SHARED
                                              : TIRX__ROLE_LOCAL;
}

static tirx_status lower_one(tirx_builder *b, tirx_arena *a, tirx__stmt *s, int loops,
                             tirx__dispatch_report *rep) {
  tirx__prim_stmt *p = s->prim.call;
  char where[TIRX_BUILDER_MAX_NAME + 24];
  snprintf(where, sizeof where, "%s:%d", b->name, (int)p->number);
  tirx__call call = {.prim = (tirx__prim)p->prim, .arch = b->target,
                     .generic = b->target_suffix != 'a', .noperands = p->nops,
                     .scope = p->scope, .where = where};
  call.config.family = p->family;
  for (int k = 0; k < 3; k++) call.config.shape.v[k] = p->shape[k];
  call.config.op = (tirx__prim_op)p->op;
  call.config.reduce_axes = p->axes;
  call.config.accumulate = p->accumulate;
  call.config.hint = (tirx__hint)p->hint;
  call.config.barrier = p->barrier != NULL;
  tirx__tma_global tg;
  for (int i = 0; i < p->nops && call.prim == TIRX__PRIM_COPY_ASYNC; i++)
    if (p->ops[i]->tensor && p->ops[i]->tensor->storage == TIRX__GLOBAL) {
      tma_global_of(p->ops[i], &tg);
      call.tma = &tg;
    }
  for (int i = 0; i < p->nops; i++) {
    const tirx_region *r = p->ops[i];
    call.operands[i].role = role_of(r);
    call.operands[i].dtype = (tirx_dtype)(r->tensor ? r->tensor->dtype : r->value->dtype);
    if (!r->tensor) continue;
    call.operands[i].layout = region_layout(a, r);
    if (!call.operands[i].layout)
      return tirx__b_fail(b, tirx_last_status(), "%s: [%s] %s: operand %d: %s", FN, where,
                          tirx__prim_name(call.prim), i, strip_fn(tirx_last_error()));
  }
  tirx__dispatch_result res;
  tirx_status st = tirx__dispatch(a, &call, &res);
  if (tirx__dispatch_report_add(rep, &res) != TIRX_OK)
    return tirx__b_fail(b, TIRX_E_NO_MEMORY, "%s: out of memory", FN);
  if (st != TIRX_OK)
    return tirx__b_fail(b, st, "%s: [%s] %s", FN, where, strip_fn(tirx_last_error()));
  if (!res.rule->emit)
    return tirx__b_fail(b, TIRX_E_NOT_SUPPORTED, "%s: [%s] rule %s has no lowering yet", FN,
                        where, res.rule->name);
  tirx__b_need(b, res.rule->min_arch, res.rule->needs.sm90a, res.rule->name);
  char *shape = tirx__shape_str(res.rule, &res.shape);
  char text[512];
  snprintf(text, sizeof text, "%s %s: %s", res.rule->name, shape ? shape : "?", res.key);
  free(shape);
  p->comment = tirx__arena_strdup(b->arena, text, FN);
  if (!p->comment) return tirx__b_fail(b, TIRX_E_NO_MEMORY, "%s: out of memory", FN);
  /* The rule writes native IR at the insertion point: the statement's body. */
  s->prim.body.first = s->prim.body.last = NULL;
  tirx__block *saved = b->frames[0].block;
  int saved_depth = b->depth;
  b->frames[0].block = &s->prim.body;
  b->depth = 0;
  tirx__lower lw = {.b = b, .p = p, .call = &call, .rule = res.rule->name, .arena = a,
                    .loops = loops};
  st = res.rule->emit(res.rule, &call, &res.shape, &lw);
  b->frames[0].block = saved;
  b->depth = saved_depth;
  if (st != TIRX_OK && b->status == TIRX_OK)
    return tirx__b_fail(b, st, "%s: [%s] %s: %s", FN, where, res.rule->name,
                        strip_fn(tirx_last_error()));
  return b->status;
}

/* Lowers the primitives of blk, which sits inside `loops` for loops of the kernel. */
static tirx_status lower_block(tirx_builder *b, tirx_arena *a, tirx__block *blk, int loops,
                               tirx__dispatch_report *rep) {
  for (tirx__stmt *s = blk->first; s; s = s->next) {
    tirx_status st = TIRX_OK;
    int in = loops + (s->kind == TIRX__ST_FOR);
    if (s->kind == TIRX__ST_PRIM)
      st = lower_one(b, a, s, loops, rep);
    else if (s->kind == TIRX__ST_FOR)
      st = lower_block(b, a, &s->loop.body, in, rep);
    else if (s->kind == TIRX__ST_IF)
      st = lower_block(b, a, &s->branch.then, in, rep) != TIRX_OK
               ? b->status
               : lower_block(b, a, &s->branch.orelse, in, rep);
    if (st != TIRX_OK) return st;
  }
  return TIRX_OK;
}

tirx_status tirx__prim_lower_all(tirx_builder *b) {
  if (b->nscopes > 0) {
    const tirx__scope_frame *f = &b->scopes[b->nscopes - 1];
    return tirx__b_fail(b, TIRX_E_BUILD, "%s: %s is not closed by %s", FN,
                        f->filter ? "tirx_filter_begin" : "tirx_team_begin",
                        f->filter ? "tirx_filter_end" : "tirx_team_end");
  }
  b->dispatch_report = "";
  if (b->nprims == 0) return TIRX_OK;
  tirx_arena *a = tirx_arena_create();
  if (!a) return tirx__b_fail(b, TIRX_E_NO_MEMORY, "%s: out of memory", FN);
  tirx__dispatch_report rep;
  tirx__dispatch_report_init(&rep, a);
  tirx_status st = lower_block(b, a, &b->body, 0, &rep);
  char *text = tirx__dispatch_report_str(&rep);
  const char *copy = text ? tirx__arena_strdup(b->arena, text, FN) : NULL;
  free(text);
  tirx_arena_destroy(a);
  if (copy) b->dispatch_report = copy;
  if (st != TIRX_OK) return st;
  if (!copy) return tirx__b_fail(b, TIRX_E_NO_MEMORY, "%s: out of memory", FN);
  return TIRX_OK;
}

/* ---- for the other files of src/builder (builder_internal.h) ---- */

const tirx_scope *tirx__b_scope(tirx_builder *b, const char *fn) { return cur_scope(b, fn); }

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
