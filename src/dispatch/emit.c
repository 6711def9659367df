/* The IR-level emitter of the lowerings (emit.h). */
#include "emit.h"

void tirx__emit_init(tirx__emit *e, tirx_builder *b, tirx__block *target) {
  e->b = b;
  e->depth = 0;
  e->frames[0].block = target;
  e->frames[0].loop = false;
}

tirx_status tirx__emit_finish(tirx__emit *e, const char *who) {
  if (e->b->status != TIRX_OK) return e->b->status;
  if (e->depth)
    return tirx__b_fail(e->b, TIRX_E_INTERNAL, "tirx_kernel_build: %s left %d block%s open", who,
                        e->depth, e->depth > 1 ? "s" : "");
  return TIRX_OK;
}

tirx__block *tirx__emit_block(tirx__emit *e) { return e->frames[e->depth].block; }

tirx__stmt *tirx__emit_stmt(tirx__emit *e, int kind) {
  static const char fn[] = "tirx_kernel_build";
  if (!tirx__b_ok(e->b, fn)) return NULL;
  return tirx__b_stmt_in(e->b, fn, kind, tirx__emit_block(e));
}

tirx__stmt *tirx__emit_native(tirx__emit *e, const tirx__native_op *op) {
  static const char fn[] = "tirx_kernel_build";
  if (!tirx__b_ok(e->b, fn)) return NULL;
  return tirx__b_lowered_native_in(e->b, fn, op, tirx__emit_block(e));
}

static bool push(tirx__emit *e, const char *fn, tirx__block *blk, bool loop) {
  if (e->depth >= TIRX__EMIT_MAX_DEPTH) {
    tirx__b_fail(e->b, TIRX_E_LIMIT, "%s: more than %d nested blocks", fn, TIRX__EMIT_MAX_DEPTH);
    return false;
  }
  e->depth++;
  e->frames[e->depth].block = blk;
  e->frames[e->depth].loop = loop;
  return true;
}

static void pop(tirx__emit *e, const char *fn, bool loop) {
  if (!tirx__b_ok(e->b, fn)) return;
  if (e->depth == 0 || e->frames[e->depth].loop != loop) {
    tirx__b_fail(e->b, TIRX_E_INTERNAL, "%s: no open %s in the lowering", fn,
                 loop ? "for" : "if");
    return;
  }
  e->depth--;
}

tirx_expr *tirx__emit_for_begin(tirx__emit *e, const char *name, tirx_expr *lo, tirx_expr *hi,
                                tirx_expr *step, tirx_loop_kind kind) {
  tirx__stmt *s = tirx__b_for_in(e->b, tirx__emit_block(e), name, lo, hi, step, kind);
  if (!s || !push(e, "tirx_for_begin", &s->loop.body, true)) return NULL;
  return s->loop.var->ref;
}

void tirx__emit_for_end(tirx__emit *e) { pop(e, "tirx_for_end", true); }

void tirx__emit_if_begin(tirx__emit *e, tirx_expr *cond) {
  tirx__stmt *s = tirx__b_if_in(e->b, tirx__emit_block(e), cond);
  if (s) push(e, "tirx_if_begin", &s->branch.then, false);
}

void tirx__emit_if_end(tirx__emit *e) { pop(e, "tirx_if_end", false); }

tirx_expr *tirx__emit_let(tirx__emit *e, const char *name, tirx_expr *value) {
  return tirx__b_let_in(e->b, tirx__emit_block(e), name, value);
}

tirx_expr *tirx__emit_var(tirx__emit *e, const char *name, tirx_dtype dtype, tirx_expr *init) {
  return tirx__b_var_in(e->b, tirx__emit_block(e), name, dtype, init);
}

void tirx__emit_assign(tirx__emit *e, tirx_expr *var, tirx_expr *value) {
  tirx__b_assign_in(e->b, tirx__emit_block(e), var, value);
}

void tirx__emit_store(tirx__emit *e, tirx_tensor *t, int n, tirx_expr *const *index,
                      tirx_expr *value) {
  tirx__b_store_in(e->b, tirx__emit_block(e), t, n, index, value);
}

void tirx__emit_sync_threads(tirx__emit *e) {
  static const char fn[] = "tirx_sync_threads";
  if (tirx__b_ok(e->b, fn)) tirx__b_stmt_in(e->b, fn, TIRX__ST_SYNC, tirx__emit_block(e));
}

tirx_tensor *tirx__emit_alloc_local(tirx__emit *e, const char *name, tirx_dtype dtype, int rank,
                                    const int64_t *shape) {
  return tirx__b_alloc_in(e->b, tirx__emit_block(e), "tirx_alloc_local", TIRX__LOCAL, name,
                          dtype, rank, shape, NULL);
}
