/*
 * cp.async in the builder: the group statements (tirx_cp_async_commit, tirx_cp_async_wait,
 * tirx_cp_async_wait_all); the copy statement is copy_async.cp_async's
 * (src/dispatch/families/copy_cp_async.c). Each is one native statement (a generic op of
 * native.c) printed as a call of an inline-PTX helper of the prelude's cp.async section, which
 * codegen appends only to kernels that use one. cp.async is sm_80.
 *
 * These groups are not TMA's bulk groups (tirx_bulk_commit / tirx_bulk_wait): cp.async and
 * cp.async.bulk keep separate per-thread group counts.
 */
#include "builder_internal.h"

/* The op's need (sm_80) and prelude section (native.c). */
static tirx__stmt *cp_stmt(tirx_builder *b, const char *fn, const tirx__native_op *op) {
  return tirx__b_native(b, fn, op);
}

void tirx_cp_async_commit(tirx_builder *b) {
  static const char fn[] = "tirx_cp_async_commit";
  if (tirx__b_ok(b, fn)) cp_stmt(b, fn, &tirx__nv_cp_async_commit);
}

void tirx_cp_async_wait(tirx_builder *b, int n) {
  static const char fn[] = "tirx_cp_async_wait";
  if (!tirx__b_ok(b, fn)) return;
  if (n < 0 || n > TIRX__CP_ASYNC_MAX_PENDING) {
    tirx__b_fail(b, TIRX_E_INVALID_ARG, "%s: n is %d, expected 0 to %d (groups left pending)",
                 fn, n, TIRX__CP_ASYNC_MAX_PENDING);
    return;
  }
  tirx__stmt *s = cp_stmt(b, fn, &tirx__nv_cp_async_wait);
  if (s) ((tirx__nv_imm *)s->native.p)->n = n;
}

void tirx_cp_async_wait_all(tirx_builder *b) {
  static const char fn[] = "tirx_cp_async_wait_all";
  if (!tirx__b_ok(b, fn)) return;
  cp_stmt(b, fn, &tirx__nv_cp_async_wait_all);
}
