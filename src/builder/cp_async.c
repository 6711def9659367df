/*
 * cp.async in the builder: the group statements (tirx_cp_async_commit, tirx_cp_async_wait,
 * tirx_cp_async_wait_all) and the copy statement the copy_async.cp_async lowering writes
 * (src/dispatch/families/copy_cp_async.c). Each is one native statement (native.h:
 * TIRX__NV_CP_ASYNC*) printed as a call of an inline-PTX helper of tirx__prelude_cp_async, which
 * codegen appends only to kernels that use one. cp.async is sm_80.
 *
 * These groups are not TMA's bulk groups (tirx_bulk_commit / tirx_bulk_wait): cp.async and
 * cp.async.bulk keep separate per-thread group counts.
 */
#include "builder_internal.h"

/* The row's need (sm_80) and prelude (native.h); blk NULL: the insertion point. */
static tirx__stmt *cp_stmt(tirx_builder *b, const char *fn, int op, tirx__block *blk) {
  return tirx__b_native_in(b, fn, op, blk);
}

void tirx_cp_async_commit(tirx_builder *b) {
  static const char fn[] = "tirx_cp_async_commit";
  if (tirx__b_ok(b, fn)) cp_stmt(b, fn, TIRX__NV_CP_ASYNC_COMMIT, NULL);
}

void tirx_cp_async_wait(tirx_builder *b, int n) {
  static const char fn[] = "tirx_cp_async_wait";
  if (!tirx__b_ok(b, fn)) return;
  if (n < 0 || n > TIRX__CP_ASYNC_MAX_PENDING) {
    tirx__b_fail(b, TIRX_E_INVALID_ARG, "%s: n is %d, expected 0 to %d (groups left pending)",
                 fn, n, TIRX__CP_ASYNC_MAX_PENDING);
    return;
  }
  tirx__stmt *s = cp_stmt(b, fn, TIRX__NV_CP_ASYNC_WAIT, NULL);
  if (s) s->native.wait.n = n;
}

void tirx_cp_async_wait_all(tirx_builder *b) {
  static const char fn[] = "tirx_cp_async_wait_all";
  if (!tirx__b_ok(b, fn)) return;
  cp_stmt(b, fn, TIRX__NV_CP_ASYNC_WAIT_ALL, NULL);
}

tirx__stmt *tirx__cp_async(tirx_builder *b, tirx__block *blk, tirx_tensor *dst,
                           tirx_expr *const *index, tirx_expr *src, int bytes,
                           tirx_expr *src_bytes) {
  static const char fn[] = "tirx_kernel_build";
  tirx_expr **ix = tirx__b_index_list(b, fn, dst, dst->rank, index);
  if (!ix || b->status != TIRX_OK) return NULL;
  tirx__stmt *s = cp_stmt(b, fn, TIRX__NV_CP_ASYNC, blk);
  if (!s) return NULL;
  s->native.cp_async.dst.tensor = dst;
  s->native.cp_async.dst.index = ix;
  s->native.cp_async.src = src;
  if (bytes > src->tensor->vec_bytes) src->tensor->vec_bytes = bytes; /* the launch checks it */
  s->native.cp_async.src_bytes = src_bytes;
  s->native.cp_async.bytes = bytes;
  return s;
}
