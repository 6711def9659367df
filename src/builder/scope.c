/*
 * Execution scopes in the builder (paper section 4): the scope at the insertion point, made
 * from the block size at the first need, and the frames of tirx_team_begin (a new team kind
 * over the same threads) and tirx_filter_begin (a narrower active set, guarded at run time by
 * an if block). The scopes themselves, their layouts and the uniform-team rules are
 * src/layout/scope.c's; every tile primitive records the scope it was called in (prim.c).
 */
#include <stdio.h>
#include <string.h>

#include "../dispatch/lower.h"
#include "builder_internal.h"

static const char *strip_fn(const char *msg) {
  const char *c = strstr(msg, ": ");
  return c ? c + 2 : msg;
}

/* The scope at the insertion point, made from the block size at the first need. */
const tirx_scope *tirx__b_scope(tirx_builder *b, const char *fn) {
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
  const tirx_scope *s = tirx__b_scope(b, fn);
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
  const tirx_scope *s = tirx__b_scope(b, fn);
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
