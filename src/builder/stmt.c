/* Statements and the insertion stack: for/if blocks, variables, stores, barriers. */
#include <stdio.h>

#include "builder_internal.h"

tirx__stmt *tirx__b_stmt_in(tirx_builder *b, const char *fn, int kind, tirx__block *blk) {
  tirx__stmt *s = tirx__b_node(b, fn, sizeof *s);
  if (!s) return NULL;
  s->kind = (uint8_t)kind;
  if (!blk) blk = b->frames[b->depth].block;
  if (blk->last)
    blk->last->next = s;
  else
    blk->first = s;
  blk->last = s;
  return s;
}

tirx__stmt *tirx__b_stmt(tirx_builder *b, const char *fn, int kind) {
  return tirx__b_stmt_in(b, fn, kind, NULL);
}

/* The statement and its payload are one node (one allocation). */
static tirx__stmt *native(tirx_builder *b, const char *fn, const tirx__native_op *op, bool need,
                          tirx__block *blk) {
  if (!op) {
    tirx__b_fail(b, TIRX_E_INTERNAL, "%s: no native op", fn);
    return NULL;
  }
  enum { ALIGN = _Alignof(max_align_t) };
  size_t head = (sizeof(tirx__stmt) + ALIGN - 1) / ALIGN * ALIGN;
  char *m = tirx__b_node(b, fn, head + op->size);
  if (!m) return NULL;
  tirx__stmt *s = (tirx__stmt *)(void *)m;
  s->kind = TIRX__ST_NATIVE;
  if (!blk) blk = b->frames[b->depth].block;
  if (blk->last)
    blk->last->next = s;
  else
    blk->first = s;
  blk->last = s;
  s->native.op = op;
  s->native.p = m + head;
  b->preludes |= op->section;
  if (need) tirx__b_need(b, op->need, fn);
  return s;
}

tirx__stmt *tirx__b_native(tirx_builder *b, const char *fn, const tirx__native_op *op) {
  return native(b, fn, op, true, NULL);
}

tirx__stmt *tirx__b_native_in(tirx_builder *b, const char *fn, const tirx__native_op *op,
                              tirx__block *blk) {
  return native(b, fn, op, true, blk);
}

tirx__stmt *tirx__b_lowered_native(tirx_builder *b, const char *fn, const tirx__native_op *op) {
  return native(b, fn, op, false, NULL);
}

tirx__stmt *tirx__b_lowered_native_in(tirx_builder *b, const char *fn, const tirx__native_op *op,
                                      tirx__block *blk) {
  return native(b, fn, op, false, blk);
}

static bool push(tirx_builder *b, const char *fn, int kind, tirx__stmt *s, tirx__block *blk) {
  if (b->depth >= TIRX_BUILDER_MAX_NESTING) {
    tirx__b_fail(b, TIRX_E_LIMIT, "%s: more than %d nested blocks", fn, TIRX_BUILDER_MAX_NESTING);
    return false;
  }
  b->depth++;
  b->frames[b->depth].kind = kind;
  b->frames[b->depth].stmt = s;
  b->frames[b->depth].block = blk;
  return true;
}

static bool value_of(tirx_builder *b, const char *fn, tirx_expr **v, tirx_dtype want,
                     const char *arg, const char *what) {
  tirx_expr *e = *v;
  if (e->dtype == want && !e->weak) return true;
  if (!e->weak || e->kind != TIRX__EX_INT || want == TIRX_BOOL) {
    tirx__b_fail(b, TIRX_E_TYPE, "%s: %s has dtype %s, expected %s (%s)", fn, arg,
                 tirx_dtype_name((tirx_dtype)e->dtype), tirx_dtype_name(want), what);
    return false;
  }
  /* A weak constant adapts only when its value is exact in want (builder.h, Types). */
  if (!tirx__b_weak_exact(e->i, want)) {
    tirx__b_fail(b, TIRX_E_TYPE, "%s: %s is the constant %lld, not exact in %s (%s)", fn, arg,
                 (long long)e->i, tirx_dtype_name(want), what);
    return false;
  }
  *v = tirx__b_convert(b, fn, e, want);
  return *v != NULL;
}

static tirx__decl *new_var(tirx_builder *b, const char *fn, const char *name, int kind,
                           tirx_dtype dtype) {
  if (!tirx__b_name(b, fn, name, "name")) return NULL;
  tirx__decl *d = tirx__b_node(b, fn, sizeof *d);
  if (!d) return NULL;
  d->name = tirx__arena_strdup(b->arena, name, fn);
  if (!d->name) {
    tirx__b_fail(b, TIRX_E_NO_MEMORY, "%s: out of memory", fn);
    return NULL;
  }
  d->kind = (uint8_t)kind;
  d->dtype = (uint8_t)dtype;
  d->param_index = -1;
  d->id = b->ndecls++;
  tirx_expr *e = tirx__b_expr_new(b, fn, TIRX__EX_VAR, 0, dtype, NULL, NULL, NULL);
  if (!e) return NULL;
  e->decl = d;
  e->host = false;
  d->ref = e;
  return d;
}

tirx__stmt *tirx__b_for_in(tirx_builder *b, tirx__block *blk, const char *name, tirx_expr *lo,
                           tirx_expr *hi, tirx_expr *step, tirx_loop_kind kind) {
  static const char fn[] = "tirx_for_begin";
  if (!tirx__b_ok(b, fn)) return NULL;
  if (!tirx__b_expr(b, fn, lo, "lo") || !tirx__b_expr(b, fn, hi, "hi")) return NULL;
  if (step && !tirx__b_expr(b, fn, step, "step")) return NULL;
  if (kind != TIRX_LOOP_SERIAL && kind != TIRX_LOOP_UNROLL) {
    tirx__b_fail(b, TIRX_E_INVALID_ARG, "%s: kind is %d, not a tirx_loop_kind", fn, (int)kind);
    return NULL;
  }
  tirx_expr *v[3] = {lo, hi, step};
  static const char *const names[3] = {"lo", "hi", "step"};
  for (int i = 0; i < 3; i++)
    if (v[i] && !tirx__dtype_is_int(v[i]->dtype)) {
      tirx__b_fail(b, TIRX_E_TYPE, "%s: %s has dtype %s, expected an integer", fn, names[i],
                   tirx_dtype_name((tirx_dtype)v[i]->dtype));
      return NULL;
    }
  if (step && step->kind == TIRX__EX_INT && step->i <= 0) {
    tirx__b_fail(b, TIRX_E_INVALID_ARG, "%s: step is %lld, expected > 0", fn,
                 (long long)step->i);
    return NULL;
  }
  /* The loop variable's type: i32 unless an operand is wider. */
  int t = TIRX_I32;
  for (int i = 0; i < 3; i++) {
    if (!v[i]) continue;
    int d = v[i]->dtype;
    if (v[i]->weak) d = (v[i]->i >= INT32_MIN && v[i]->i <= INT32_MAX) ? TIRX_I32 : TIRX_I64;
    if (d == TIRX_I64) t = TIRX_I64;
    else if (d == TIRX_U32 && t != TIRX_I64) t = TIRX_U32;
  }
  if (!step) step = tirx__b_const(b, fn, 1, (tirx_dtype)t);
  lo = tirx__b_convert(b, fn, lo, (tirx_dtype)t);
  hi = tirx__b_convert(b, fn, hi, (tirx_dtype)t);
  step = tirx__b_convert(b, fn, step, (tirx_dtype)t);
  if (!lo || !hi || !step) return NULL;
  tirx__decl *d = new_var(b, fn, name, TIRX__DECL_LOOP, (tirx_dtype)t);
  if (!d) return NULL;
  tirx__stmt *s = tirx__b_stmt_in(b, fn, TIRX__ST_FOR, blk);
  if (!s) return NULL;
  s->loop.var = d;
  s->loop.lo = lo;
  s->loop.hi = hi;
  s->loop.step = step;
  s->loop.kind = (uint8_t)kind;
  if (lo->kind == TIRX__EX_INT && hi->kind == TIRX__EX_INT && lo->i < hi->i) /* for codegen */
    d->ranged = true, d->lo = lo->i, d->hi = hi->i - 1;
  return s;
}

tirx_expr *tirx_for_begin(tirx_builder *b, const char *name, tirx_expr *lo, tirx_expr *hi,
                          tirx_expr *step, tirx_loop_kind kind) {
  static const char fn[] = "tirx_for_begin";
  if (!tirx__b_ok(b, fn)) return NULL;
  if (b->depth >= TIRX_BUILDER_MAX_NESTING) {
    tirx__b_fail(b, TIRX_E_LIMIT, "%s: more than %d nested blocks", fn, TIRX_BUILDER_MAX_NESTING);
    return NULL;
  }
  tirx__stmt *s = tirx__b_for_in(b, NULL, name, lo, hi, step, kind);
  if (!s || !push(b, fn, TIRX__FRAME_FOR, s, &s->loop.body)) return NULL;
  return s->loop.var->ref;
}

void tirx_for_end(tirx_builder *b) {
  static const char fn[] = "tirx_for_end";
  if (!tirx__b_ok(b, fn)) return;
  int k = b->frames[b->depth].kind;
  if (k != TIRX__FRAME_FOR) {
    if (k == TIRX__FRAME_ROOT)
      tirx__b_fail(b, TIRX_E_BUILD, "%s: no open tirx_for_begin", fn);
    else
      tirx__b_fail(b, TIRX_E_BUILD, "%s: the innermost open block is a tirx_if_begin", fn);
    return;
  }
  b->depth--;
}

tirx__stmt *tirx__b_if_in(tirx_builder *b, tirx__block *blk, tirx_expr *cond) {
  static const char fn[] = "tirx_if_begin";
  if (!tirx__b_ok(b, fn) || !tirx__b_expr(b, fn, cond, "cond")) return NULL;
  if (cond->dtype != TIRX_BOOL) {
    tirx__b_fail(b, TIRX_E_TYPE, "%s: cond has dtype %s, expected bool", fn,
                 tirx_dtype_name((tirx_dtype)cond->dtype));
    return NULL;
  }
  tirx__stmt *s = tirx__b_stmt_in(b, fn, TIRX__ST_IF, blk);
  if (!s) return NULL;
  s->branch.cond = cond;
  return s;
}

void tirx_if_begin(tirx_builder *b, tirx_expr *cond) {
  static const char fn[] = "tirx_if_begin";
  if (!tirx__b_ok(b, fn)) return;
  if (b->depth >= TIRX_BUILDER_MAX_NESTING) {
    tirx__b_fail(b, TIRX_E_LIMIT, "%s: more than %d nested blocks", fn, TIRX_BUILDER_MAX_NESTING);
    return;
  }
  tirx__stmt *s = tirx__b_if_in(b, NULL, cond);
  if (s) push(b, fn, TIRX__FRAME_THEN, s, &s->branch.then);
}

void tirx_else(tirx_builder *b) {
  static const char fn[] = "tirx_else";
  if (!tirx__b_ok(b, fn)) return;
  tirx__frame *f = &b->frames[b->depth];
  if (f->kind != TIRX__FRAME_THEN) {
    tirx__b_fail(b, TIRX_E_BUILD, "%s: %s", fn,
                 f->kind == TIRX__FRAME_ELSE  ? "the innermost if already has an else"
                 : f->kind == TIRX__FRAME_FOR ? "the innermost open block is a tirx_for_begin"
                                              : "no open tirx_if_begin");
    return;
  }
  f->kind = TIRX__FRAME_ELSE;
  f->stmt->branch.has_else = true;
  f->block = &f->stmt->branch.orelse;
}

void tirx_if_end(tirx_builder *b) {
  static const char fn[] = "tirx_if_end";
  if (!tirx__b_ok(b, fn)) return;
  int k = b->frames[b->depth].kind;
  if (k != TIRX__FRAME_THEN && k != TIRX__FRAME_ELSE) {
    tirx__b_fail(b, TIRX_E_BUILD, "%s: %s", fn,
                 k == TIRX__FRAME_FOR ? "the innermost open block is a tirx_for_begin"
                                      : "no open tirx_if_begin");
    return;
  }
  b->depth--;
}

tirx_expr *tirx__b_let_in(tirx_builder *b, tirx__block *blk, const char *name,
                          tirx_expr *value) {
  static const char fn[] = "tirx_let";
  if (!tirx__b_ok(b, fn) || !tirx__b_expr(b, fn, value, "value")) return NULL;
  if (value->weak) value = tirx__b_convert(b, fn, value, TIRX_I64);
  if (!value) return NULL;
  tirx__decl *d = new_var(b, fn, name, TIRX__DECL_LET, (tirx_dtype)value->dtype);
  if (!d) return NULL;
  tirx__stmt *s = tirx__b_stmt_in(b, fn, TIRX__ST_LET, blk);
  if (!s) return NULL;
  s->var.decl = d;
  s->var.value = value;
  return d->ref;
}

tirx_expr *tirx_let(tirx_builder *b, const char *name, tirx_expr *value) {
  return tirx__b_let_in(b, NULL, name, value);
}

tirx_expr *tirx__b_var_in(tirx_builder *b, tirx__block *blk, const char *name, tirx_dtype dtype,
                          tirx_expr *init) {
  static const char fn[] = "tirx_var";
  if (!tirx__b_ok(b, fn) || !tirx__b_dtype(b, fn, dtype, "dtype")) return NULL;
  if (init && (!tirx__b_expr(b, fn, init, "init") ||
               !value_of(b, fn, &init, dtype, "init", "the variable's dtype")))
    return NULL;
  tirx__decl *d = new_var(b, fn, name, TIRX__DECL_VAR, dtype);
  if (!d) return NULL;
  tirx__stmt *s = tirx__b_stmt_in(b, fn, TIRX__ST_VAR, blk);
  if (!s) return NULL;
  s->var.decl = d;
  s->var.value = init;
  return d->ref;
}

tirx_expr *tirx_var(tirx_builder *b, const char *name, tirx_dtype dtype, tirx_expr *init) {
  return tirx__b_var_in(b, NULL, name, dtype, init);
}

void tirx__b_assign_in(tirx_builder *b, tirx__block *blk, tirx_expr *var, tirx_expr *value) {
  static const char fn[] = "tirx_assign";
  if (!tirx__b_ok(b, fn) || !tirx__b_expr(b, fn, var, "var") ||
      !tirx__b_expr(b, fn, value, "value"))
    return;
  if (var->kind != TIRX__EX_VAR || var->decl->kind != TIRX__DECL_VAR) {
    tirx__b_fail(b, TIRX_E_INVALID_ARG, "%s: var is not a variable from tirx_var", fn);
    return;
  }
  if (!value_of(b, fn, &value, (tirx_dtype)var->dtype, "value", "the dtype of var")) return;
  tirx__stmt *s = tirx__b_stmt_in(b, fn, TIRX__ST_ASSIGN, blk);
  if (!s) return;
  s->var.decl = var->decl;
  s->var.value = value;
}

void tirx_assign(tirx_builder *b, tirx_expr *var, tirx_expr *value) {
  tirx__b_assign_in(b, NULL, var, value);
}

static void store(tirx_builder *b, const char *fn, int kind, tirx_tensor *t, int n,
                  tirx_expr *const *index, tirx_expr *value, tirx__block *blk) {
  if (!tirx__b_ok(b, fn) || !tirx__b_tensor(b, fn, t, "t")) return;
  char what[96];
  snprintf(what, sizeof what, "the dtype of %s", t->decl.name);
  tirx_expr **idx = tirx__b_index_list(b, fn, t, n, index);
  if (!idx) return;
  if (!tirx__b_expr(b, fn, value, "value")) return;
  if (kind == TIRX__ST_ATOMIC_ADD) {
    int d = t->dtype;
    if (d != TIRX_F32 && d != TIRX_F64 && d != TIRX_I32 && d != TIRX_U32 && d != TIRX_I64) {
      tirx__b_fail(b, TIRX_E_TYPE, "%s: %s has dtype %s, expected f32, f64, i32, u32 or i64",
                   fn, t->decl.name, tirx_dtype_name((tirx_dtype)d));
      return;
    }
    if (t->storage == TIRX__LOCAL) {
      tirx__b_fail(b, TIRX_E_INVALID_ARG, "%s: %s is a local tensor, expected global or shared",
                   fn, t->decl.name);
      return;
    }
  }
  if (!value_of(b, fn, &value, (tirx_dtype)t->dtype, "value", what)) return;
  tirx__stmt *s = tirx__b_stmt_in(b, fn, kind, blk);
  if (!s) return;
  s->store.dst.tensor = t;
  s->store.dst.index = idx;
  s->store.value = value;
  t->written = true;
}

void tirx_store(tirx_builder *b, tirx_tensor *t, int n, tirx_expr *const *index,
                tirx_expr *value) {
  store(b, "tirx_store", TIRX__ST_STORE, t, n, index, value, NULL);
}

void tirx__b_store_in(tirx_builder *b, tirx__block *blk, tirx_tensor *t, int n,
                      tirx_expr *const *index, tirx_expr *value) {
  store(b, "tirx_store", TIRX__ST_STORE, t, n, index, value, blk);
}

void tirx_atomic_add(tirx_builder *b, tirx_tensor *t, int n, tirx_expr *const *index,
                     tirx_expr *value) {
  store(b, "tirx_atomic_add", TIRX__ST_ATOMIC_ADD, t, n, index, value, NULL);
}

void tirx_sync_threads(tirx_builder *b) {
  static const char fn[] = "tirx_sync_threads";
  if (tirx__b_ok(b, fn)) tirx__b_stmt(b, fn, TIRX__ST_SYNC);
}

void tirx_sync_warp(tirx_builder *b) {
  static const char fn[] = "tirx_sync_warp";
  if (tirx__b_ok(b, fn)) tirx__b_stmt(b, fn, TIRX__ST_SYNCWARP);
}
