/* Helpers for the dispatch tests: building calls from layout text and scopes. */
#ifndef TIRX_TEST_DISPATCH_HELPERS_H
#define TIRX_TEST_DISPATCH_HELPERS_H

#include "../helpers.h"
#include "dispatch/dispatch.h"

static tirx_arena *A;

static inline void dispatch_setup(void) { A = tirx_arena_create(); }
static inline void dispatch_teardown(void) { tirx_arena_destroy(A); }

static inline const tirx_layout *lay(const char *text) {
  tirx_layout *l = tirx_layout_parse(A, text);
  cr_assert_not_null(l, "parse(\"%s\"): %s", text, tirx_last_error());
  return l;
}

/* The region [begin, begin + extent) of a dense row-major (rows, cols) tensor. */
static inline const tirx_layout *rows2d(int64_t rows, int64_t cols, int64_t r0, int64_t c0,
                                        int64_t nr, int64_t nc) {
  int64_t shape[2] = {rows, cols};
  tirx_layout *t = tirx_layout_row_major(A, 2, shape);
  tirx_layout *s = tirx_layout_slice(A, t, 2, shape, (int64_t[]){r0, c0}, (int64_t[]){nr, nc});
  cr_assert_not_null(s, "%s", tirx_last_error());
  return s;
}

/* A launch of 8 warps per CTA, clusters of 2, switched to team kind k. */
static inline const tirx_scope *team(tirx_team k) {
  tirx_scope *s = tirx_scope_team(A, tirx_scope_new(A, 8, 2, 1), k);
  cr_assert_not_null(s, "%s", tirx_last_error());
  return s;
}

static inline tirx__operand op(const tirx_layout *l, tirx_dtype t, tirx__role r) {
  return (tirx__operand){l, t, r};
}
static inline tirx__operand scalar(tirx_dtype t) {
  return (tirx__operand){NULL, t, TIRX__ROLE_SCALAR};
}

static inline tirx__call mkcall(tirx__prim p, int arch, const tirx_scope *s, int n,
                                const tirx__operand *ops) {
  tirx__call c = {.prim = p, .arch = arch, .noperands = n, .scope = s};
  for (int i = 0; i < n; i++) c.operands[i] = ops[i];
  return c;
}
#define CALL(p, arch, s, ...)                                                                      \
  mkcall(p, arch, s, (int)(sizeof((tirx__operand[]){__VA_ARGS__}) / sizeof(tirx__operand)),        \
         (tirx__operand[]){__VA_ARGS__})

/* Dispatches c, which must succeed, and checks the rule's name and the shape's text. */
static inline tirx__dispatch_result expect_rule(const tirx__call *c, const char *rule,
                                                const char *shape) {
  tirx__dispatch_result r;
  tirx_clear_error();
  tirx_status st = tirx__dispatch(A, c, &r);
  cr_assert_eq(st, TIRX_OK, "%s: %s", tirx_status_name(st), tirx_last_error());
  cr_assert_str_eq(r.rule->name, rule);
  char *s = tirx__shape_str(r.rule, &r.shape);
  cr_assert_str_eq(s, shape);
  free(s);
  return r;
}

/* Checks the reasons recorded for rejected rule number i of r. */
static inline void expect_rejected(const tirx__dispatch_result *r, int i, const char *rule, int n,
                                   const char *const *reasons) {
  cr_assert_gt(r->nrejected, i, "only %d rejected rules", r->nrejected);
  cr_assert_str_eq(r->rejected[i].rule->name, rule);
  cr_assert_eq(r->rejected[i].nreasons, n, "%d reasons (first: %s)", r->rejected[i].nreasons,
               r->rejected[i].nreasons ? r->rejected[i].reasons[0] : "");
  for (int k = 0; k < n; k++) cr_assert_str_eq(r->rejected[i].reasons[k], reasons[k]);
}
#define REASONS(...)                                                                               \
  (int)(sizeof((const char *[]){__VA_ARGS__}) / sizeof(const char *)), (const char *const[]) {     \
    __VA_ARGS__                                                                                    \
  }

/* Dispatches c, which must fail with status st and exactly message msg. */
static inline tirx__dispatch_result expect_fail(const tirx__call *c, tirx_status st,
                                                const char *msg) {
  tirx__dispatch_result r;
  expect_error(tirx__dispatch(A, c, &r), st, msg);
  cr_assert_null(r.rule);
  return r;
}

#endif
