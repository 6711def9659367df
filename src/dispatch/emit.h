/*
 * The IR-level emitter of the lowerings (emit.c). A rule's lowering writes native IR into its
 * primitive's body through a tirx__emit: the target block, a stack of its own for the for and
 * if bodies it opens, and the builder as the error sink (and the arena the nodes live in). The
 * builder's insertion stack is never touched, so a lowering cannot write outside its body.
 * Expressions still come from the builder's constructors (tirx_add, tirx_load, ...): they do
 * not depend on an insertion point.
 *
 * Every function validates as the public builder function of the same statement does and
 * records its error under that function's name (tirx_for_begin, tirx_store, ...); after an
 * error every call does nothing (NULL for expressions). tirx__emit_finish reports blocks left
 * open.
 */
#ifndef TIRX_DISPATCH_EMIT_H
#define TIRX_DISPATCH_EMIT_H

#include "../builder/builder_internal.h"

enum { TIRX__EMIT_MAX_DEPTH = TIRX_BUILDER_MAX_NESTING };

typedef struct tirx__emit {
  tirx_builder *b; /* the error sink and the arena of the nodes */
  int depth;       /* open for/if bodies */
  struct {
    tirx__block *block;
    bool loop; /* a for body (else an if body) */
  } frames[TIRX__EMIT_MAX_DEPTH + 1];
} tirx__emit;

/* Starts an emitter that appends to target (frames[0]). */
void tirx__emit_init(tirx__emit *e, tirx_builder *b, tirx__block *target);
/* TIRX_OK, the builder's error, or TIRX_E_INTERNAL when a body was left open. */
tirx_status tirx__emit_finish(tirx__emit *e, const char *who);

/* The block statements go into now. */
tirx__block *tirx__emit_block(tirx__emit *e);

/* A statement of kind at the insertion point, its payload the caller's; NULL with the error
 * recorded. */
tirx__stmt *tirx__emit_stmt(tirx__emit *e, int kind);

/* A native statement of op (native.h) at the insertion point, its payload (s->native.p)
 * zeroed for the caller to fill; its prelude section is recorded, its need is the rule's (the
 * lowering driver records the rule's features). NULL with the error recorded. */
tirx__stmt *tirx__emit_native(tirx__emit *e, const tirx__native_op *op);

/* for (name = lo; name < hi; name += step): the loop variable; its body is the insertion point
 * until tirx__emit_for_end. */
tirx_expr *tirx__emit_for_begin(tirx__emit *e, const char *name, tirx_expr *lo, tirx_expr *hi,
                                tirx_expr *step, tirx_loop_kind kind);
void tirx__emit_for_end(tirx__emit *e);
/* if (cond): its body is the insertion point until tirx__emit_if_end. */
void tirx__emit_if_begin(tirx__emit *e, tirx_expr *cond);
void tirx__emit_if_end(tirx__emit *e);

tirx_expr *tirx__emit_let(tirx__emit *e, const char *name, tirx_expr *value);
tirx_expr *tirx__emit_var(tirx__emit *e, const char *name, tirx_dtype dtype, tirx_expr *init);
void tirx__emit_assign(tirx__emit *e, tirx_expr *var, tirx_expr *value);
void tirx__emit_store(tirx__emit *e, tirx_tensor *t, int n, tirx_expr *const *index,
                      tirx_expr *value);
void tirx__emit_sync_threads(tirx__emit *e);
/* A local array declared at the insertion point (tirx_alloc_local). */
tirx_tensor *tirx__emit_alloc_local(tirx__emit *e, const char *name, tirx_dtype dtype, int rank,
                                    const int64_t *shape);

#endif
