/*
 * Every status that include/tirx/layout.h documents for a layout function, triggered once
 * each (issue 18: tirx_layout_canonicalize returned TIRX_E_OVERFLOW, which its comment did not
 * list). Each check asserts the status and that the message names the function.
 */
#include "../helpers.h"

void tirx__arena_fail_after(int64_t n); /* src/core/arena.c */

static tirx_arena *A;
static void setup(void) {
  tirx_clear_error();
  A = tirx_arena_create();
}
static void teardown(void) {
  tirx__arena_fail_after(-1);
  tirx_arena_destroy(A);
}
TestSuite(layout_errors, .init = setup, .fini = teardown);

/* The last error has status st and its message starts with "fn: ". */
static void expect_last(tirx_status st, const char *fn, const char *what) {
  cr_assert_eq(tirx_last_status(), st, "%s: status %s, expected %s (%s)", what,
               tirx_status_name(tirx_last_status()), tirx_status_name(st), tirx_last_error());
  size_t n = strlen(fn);
  cr_assert(strncmp(tirx_last_error(), fn, n) == 0 && tirx_last_error()[n] == ':', "%s: '%s'",
            what, tirx_last_error());
}

#define NUL(call, st, fn)                                                                    \
  do {                                                                                       \
    tirx_clear_error();                                                                      \
    const void *r_ = (call);                                                                 \
    cr_assert_null(r_, "%s returned a layout", #call);                                       \
    expect_last(st, fn, #call);                                                              \
  } while (0)

#define ST(call, st, fn)                                                                     \
  do {                                                                                       \
    tirx_clear_error();                                                                      \
    tirx_status s_ = (call);                                                                 \
    cr_assert_eq(s_, st, "%s: %s (%s)", #call, tirx_status_name(s_), tirx_last_error());     \
    expect_last(st, fn, #call);                                                              \
  } while (0)

/* The first arena allocation of call fails. */
#define OOM(call, fn)                                                                        \
  do {                                                                                       \
    tirx_arena *fresh_ = tirx_arena_create();                                                \
    tirx_arena *keep_ = A;                                                                   \
    A = fresh_;                                                                              \
    tirx__arena_fail_after(0);                                                               \
    NUL(call, TIRX_E_NO_MEMORY, fn);                                                         \
    tirx__arena_fail_after(-1);                                                              \
    A = keep_;                                                                               \
    tirx_arena_destroy(fresh_);                                                              \
  } while (0)

static tirx_layout *P(const char *text) {
  tirx_layout *l = tirx_layout_parse(A, text);
  cr_assert_not_null(l, "parse(\"%s\"): %s", text, tirx_last_error());
  return l;
}

static const int64_t s44[2] = {4, 4}, s16[1] = {16};

Test(layout_errors, new) {
  static const char fn[] = "tirx_layout_new";
  tirx_iter d[TIRX_LAYOUT_MAX_ITERS + 1];
  for (int i = 0; i <= TIRX_LAYOUT_MAX_ITERS; i++) d[i] = (tirx_iter){1, 1, TIRX_AXIS_M};
  NUL(tirx_layout_new(NULL, 1, d, 0, NULL, 0, NULL), TIRX_E_NULL_ARG, fn);
  NUL(tirx_layout_new(A, 1, NULL, 0, NULL, 0, NULL), TIRX_E_NULL_ARG, fn);
  NUL(tirx_layout_new(A, -1, d, 0, NULL, 0, NULL), TIRX_E_INVALID_ARG, fn);
  tirx_iter bad = {0, 1, TIRX_AXIS_M};
  NUL(tirx_layout_new(A, 1, &bad, 0, NULL, 0, NULL), TIRX_E_INVALID_ARG, fn);
  tirx_axis_offset twice[2] = {{TIRX_AXIS_M, 1}, {TIRX_AXIS_M, 2}};
  NUL(tirx_layout_new(A, 1, d, 0, NULL, 2, twice), TIRX_E_INVALID_ARG, fn);
  tirx_iter noaxis = {2, 1, (tirx_axis)TIRX_AXIS_MAX};
  NUL(tirx_layout_new(A, 1, &noaxis, 0, NULL, 0, NULL), TIRX_E_UNKNOWN_AXIS, fn);
  tirx_axis_offset off_noaxis = {(tirx_axis)TIRX_AXIS_MAX, 1};
  NUL(tirx_layout_new(A, 1, d, 0, NULL, 1, &off_noaxis), TIRX_E_UNKNOWN_AXIS, fn);
  NUL(tirx_layout_new(A, TIRX_LAYOUT_MAX_ITERS + 1, d, 0, NULL, 0, NULL), TIRX_E_LIMIT, fn);
  tirx_iter big[2] = {{INT64_C(1) << 40, 1, TIRX_AXIS_M}, {INT64_C(1) << 40, 0, TIRX_AXIS_M}};
  NUL(tirx_layout_new(A, 2, big, 0, NULL, 0, NULL), TIRX_E_OVERFLOW, fn);
  OOM(tirx_layout_new(A, 1, d, 0, NULL, 0, NULL), fn);
}

Test(layout_errors, parse) {
  static const char fn[] = "tirx_layout_parse";
  NUL(tirx_layout_parse(NULL, "(2):(1)"), TIRX_E_NULL_ARG, fn);
  NUL(tirx_layout_parse(A, NULL), TIRX_E_NULL_ARG, fn);
  NUL(tirx_layout_parse(A, "(2:(1)"), TIRX_E_PARSE, fn);
  NUL(tirx_layout_parse(A, "(9223372036854775808):(1)"), TIRX_E_OVERFLOW, fn);
  NUL(tirx_layout_parse(A, "(2):(1@nowhere)"), TIRX_E_UNKNOWN_AXIS, fn);
  NUL(tirx_layout_parse(A, "(2):(1)+1@m+2@m"), TIRX_E_INVALID_ARG, fn);
  char *long_text = malloc(TIRX_LAYOUT_MAX_TEXT + 2);
  memset(long_text, ' ', TIRX_LAYOUT_MAX_TEXT + 1);
  long_text[TIRX_LAYOUT_MAX_TEXT + 1] = '\0';
  NUL(tirx_layout_parse(A, long_text), TIRX_E_LIMIT, fn);
  free(long_text);
  OOM(tirx_layout_parse(A, "(2):(1)"), fn);
}

Test(layout_errors, dense_constructors) {
  const int64_t strides[2] = {4, 1}, zero[2] = {4, 0}, huge[1] = {INT64_C(1) << 62};
  NUL(tirx_layout_row_major(NULL, 2, s44), TIRX_E_NULL_ARG, "tirx_layout_row_major");
  NUL(tirx_layout_row_major(A, 2, NULL), TIRX_E_NULL_ARG, "tirx_layout_row_major");
  NUL(tirx_layout_col_major(A, 0, s44), TIRX_E_INVALID_ARG, "tirx_layout_col_major");
  NUL(tirx_layout_col_major(A, TIRX_LAYOUT_MAX_RANK + 1, s44), TIRX_E_INVALID_ARG,
      "tirx_layout_col_major");
  NUL(tirx_layout_strided(A, 2, zero, strides), TIRX_E_INVALID_ARG, "tirx_layout_strided");
  NUL(tirx_layout_strided(A, 2, s44, NULL), TIRX_E_NULL_ARG, "tirx_layout_strided");
  const int64_t wide[2] = {INT64_C(1) << 40, INT64_C(1) << 40};
  NUL(tirx_layout_row_major(A, 2, wide), TIRX_E_OVERFLOW, "tirx_layout_row_major");
  const int64_t two[1] = {3};
  NUL(tirx_layout_strided(A, 1, two, huge), TIRX_E_OVERFLOW, "tirx_layout_strided");
  OOM(tirx_layout_row_major(A, 2, s44), "tirx_layout_row_major");
}

Test(layout_errors, accessors) {
  tirx_layout *l = P("(2,3):(3,1)+[2:1@reg]+1@m");
  tirx_iter it;
  tirx_axis_offset o;
  ST(tirx_layout_iter(NULL, 0, &it), TIRX_E_NULL_ARG, "tirx_layout_iter");
  ST(tirx_layout_iter(l, 0, NULL), TIRX_E_NULL_ARG, "tirx_layout_iter");
  ST(tirx_layout_iter(l, 2, &it), TIRX_E_OUT_OF_RANGE, "tirx_layout_iter");
  ST(tirx_layout_replica(l, -1, &it), TIRX_E_OUT_OF_RANGE, "tirx_layout_replica");
  ST(tirx_layout_offset_at(l, 1, &o), TIRX_E_OUT_OF_RANGE, "tirx_layout_offset_at");
  ST(tirx_layout_offset_at(NULL, 0, &o), TIRX_E_NULL_ARG, "tirx_layout_offset_at");
  tirx_layout *g = tirx_layout_group(A, l, 2, (const int64_t[]){2, 3});
  cr_assert_not_null(g);
  int64_t shape[2];
  ST(tirx_layout_shape(NULL, shape, 2), TIRX_E_NULL_ARG, "tirx_layout_shape");
  ST(tirx_layout_shape(g, NULL, 2), TIRX_E_NULL_ARG, "tirx_layout_shape");
  ST(tirx_layout_shape(g, shape, 1), TIRX_E_BUFFER_TOO_SMALL, "tirx_layout_shape");
  /* Number-returning accessors: 0 for NULL, no error. */
  tirx_clear_error();
  cr_assert_eq(tirx_layout_num_iters(NULL) + tirx_layout_num_replicas(NULL) +
                   tirx_layout_num_offsets(NULL) + tirx_layout_rank(NULL) +
                   tirx_layout_swizzle_bytes(NULL) + tirx_layout_swizzle_elem_bytes(NULL),
               0);
  cr_assert_eq(tirx_layout_size(NULL) + tirx_layout_replica_count(NULL) +
                   tirx_layout_offset(NULL, TIRX_AXIS_M),
               0);
  cr_assert_eq(tirx_last_status(), TIRX_OK);
}

Test(layout_errors, text) {
  tirx_clear_error();
  cr_assert_null(tirx_layout_str(NULL));
  expect_last(TIRX_E_NULL_ARG, "tirx_layout_str", "str");
  char buf[8];
  tirx_clear_error();
  cr_assert_eq(tirx_layout_format(NULL, buf, sizeof buf), -1);
  expect_last(TIRX_E_NULL_ARG, "tirx_layout_format", "format");
}

Test(layout_errors, eval) {
  tirx_layout *l = P("(2,3):(3,1)+[2:1@reg]");
  tirx_coord c[2];
  int64_t n, m;
  ST(tirx_layout_eval(NULL, 0, c, 2, &n), TIRX_E_NULL_ARG, "tirx_layout_eval");
  ST(tirx_layout_eval(l, 0, c, 2, NULL), TIRX_E_NULL_ARG, "tirx_layout_eval");
  ST(tirx_layout_eval(l, 0, NULL, 2, &n), TIRX_E_NULL_ARG, "tirx_layout_eval");
  ST(tirx_layout_eval(l, 0, c, -1, &n), TIRX_E_INVALID_ARG, "tirx_layout_eval");
  ST(tirx_layout_eval(l, 6, c, 2, &n), TIRX_E_OUT_OF_RANGE, "tirx_layout_eval");
  ST(tirx_layout_eval(l, 0, c, 1, &n), TIRX_E_BUFFER_TOO_SMALL, "tirx_layout_eval");
  cr_assert_eq(n, 2);
  tirx_layout *g = tirx_layout_group(A, l, 2, (const int64_t[]){2, 3});
  const int64_t idx[2] = {1, 3};
  ST(tirx_layout_eval_nd(NULL, idx, c, 2, &n), TIRX_E_NULL_ARG, "tirx_layout_eval_nd");
  ST(tirx_layout_eval_nd(g, NULL, c, 2, &n), TIRX_E_NULL_ARG, "tirx_layout_eval_nd");
  ST(tirx_layout_eval_nd(l, idx, c, 2, &n), TIRX_E_INVALID_ARG, "tirx_layout_eval_nd");
  ST(tirx_layout_eval_nd(g, idx, c, 2, &n), TIRX_E_OUT_OF_RANGE, "tirx_layout_eval_nd");
  /* the checks it shares with tirx_layout_eval name tirx_layout_eval_nd (found by
   * tools/fuzz_api: they named tirx_layout_eval) */
  const int64_t ok[2] = {1, 2};
  ST(tirx_layout_eval_nd(g, ok, c, 2, NULL), TIRX_E_NULL_ARG, "tirx_layout_eval_nd");
  ST(tirx_layout_eval_nd(g, ok, NULL, 2, &n), TIRX_E_NULL_ARG, "tirx_layout_eval_nd");
  ST(tirx_layout_eval_nd(g, ok, c, -1, &n), TIRX_E_INVALID_ARG, "tirx_layout_eval_nd");
  ST(tirx_layout_eval_nd(g, ok, c, 1, &n), TIRX_E_BUFFER_TOO_SMALL, "tirx_layout_eval_nd");
  ST(tirx_layout_eval_m(NULL, 0, &m), TIRX_E_NULL_ARG, "tirx_layout_eval_m");
  ST(tirx_layout_eval_m(l, 0, NULL), TIRX_E_NULL_ARG, "tirx_layout_eval_m");
  ST(tirx_layout_eval_m(l, -1, &m), TIRX_E_OUT_OF_RANGE, "tirx_layout_eval_m");
}

Test(layout_errors, canonicalize_and_equality) {
  static const char fn[] = "tirx_layout_canonicalize";
  tirx_layout *l = P("(4):(1)");
  NUL(tirx_layout_canonicalize(NULL, l), TIRX_E_NULL_ARG, fn);
  NUL(tirx_layout_canonicalize(A, NULL), TIRX_E_NULL_ARG, fn);
  /* The documented example: l's coordinates fit, its canonical form's do not. */
  tirx_layout *edge = P("(1):(1)+[2:-4611686018427387904@m]-4611686018427387902@m");
  NUL(tirx_layout_canonicalize(A, edge), TIRX_E_OVERFLOW, fn);
  OOM(tirx_layout_canonicalize(A, l), fn);

  tirx_clear_error();
  cr_assert_not(tirx_layout_equal(l, NULL));
  expect_last(TIRX_E_NULL_ARG, "tirx_layout_equal", "equal");
  /* Replica sets that differ in form and hold 2^21 points on one axis. */
  tirx_layout *r1 = P("(1):(1)+[2048:1@reg,1024:4096@reg]");
  tirx_layout *r2 = P("(1):(1)+[2048:1@reg,1024:4096@reg,2:3@reg]");
  tirx_clear_error();
  cr_assert_not(tirx_layout_equal(r1, r2));
  expect_last(TIRX_E_LIMIT, "tirx_layout_equal", "equal over 2^20 points");
  tirx_clear_error();
  cr_assert_not(tirx_layout_same(NULL, l));
  expect_last(TIRX_E_NULL_ARG, "tirx_layout_same", "same");
}

Test(layout_errors, group_flatten_permute) {
  static const char fn[] = "tirx_layout_group";
  tirx_layout *l = P("(2,6):(6,1)");
  NUL(tirx_layout_group(NULL, l, 1, (const int64_t[]){12}), TIRX_E_NULL_ARG, fn);
  NUL(tirx_layout_group(A, NULL, 1, (const int64_t[]){12}), TIRX_E_NULL_ARG, fn);
  NUL(tirx_layout_group(A, l, 1, NULL), TIRX_E_NULL_ARG, fn);
  NUL(tirx_layout_group(A, l, 0, (const int64_t[]){12}), TIRX_E_INVALID_ARG, fn);
  NUL(tirx_layout_group(A, l, 1, (const int64_t[]){13}), TIRX_E_INVALID_ARG, fn);
  NUL(tirx_layout_group(A, l, 2, (const int64_t[]){0, 12}), TIRX_E_INVALID_ARG, fn);
  NUL(tirx_layout_group(A, l, TIRX_LAYOUT_MAX_RANK + 1, s44), TIRX_E_LIMIT, fn);
  NUL(tirx_layout_group(A, l, 2, (const int64_t[]){INT64_C(1) << 40, INT64_C(1) << 40}),
      TIRX_E_OVERFLOW, fn);
  NUL(tirx_layout_group(A, l, 2, (const int64_t[]){3, 4}), TIRX_E_NOT_REPRESENTABLE, fn);
  OOM(tirx_layout_group(A, l, 1, (const int64_t[]){12}), fn);

  NUL(tirx_layout_flatten(NULL, l), TIRX_E_NULL_ARG, "tirx_layout_flatten");
  NUL(tirx_layout_flatten(A, NULL), TIRX_E_NULL_ARG, "tirx_layout_flatten");
  OOM(tirx_layout_flatten(A, l), "tirx_layout_flatten");

  tirx_layout *g = tirx_layout_group(A, l, 2, (const int64_t[]){2, 6});
  cr_assert_not_null(g);
  NUL(tirx_layout_permute(A, g, 2, NULL), TIRX_E_NULL_ARG, "tirx_layout_permute");
  NUL(tirx_layout_permute(A, l, 2, (const int64_t[]){1, 0}), TIRX_E_INVALID_ARG,
      "tirx_layout_permute");
  NUL(tirx_layout_permute(A, g, 1, (const int64_t[]){0}), TIRX_E_INVALID_ARG,
      "tirx_layout_permute");
  NUL(tirx_layout_permute(A, g, 2, (const int64_t[]){1, 1}), TIRX_E_INVALID_ARG,
      "tirx_layout_permute");
  OOM(tirx_layout_permute(A, g, 2, (const int64_t[]){1, 0}), "tirx_layout_permute");
}

Test(layout_errors, slice) {
  static const char fn[] = "tirx_layout_slice";
  tirx_layout *l = P("(4,8):(8,1)");
  const int64_t shape[2] = {4, 8}, b0[2] = {0, 0}, e1[2] = {1, 4};
  NUL(tirx_layout_slice(A, l, 2, shape, NULL, e1), TIRX_E_NULL_ARG, fn);
  NUL(tirx_layout_slice(A, l, 2, shape, b0, NULL), TIRX_E_NULL_ARG, fn);
  NUL(tirx_layout_slice(A, l, 2, shape, (const int64_t[]){-1, 0}, e1), TIRX_E_INVALID_ARG, fn);
  NUL(tirx_layout_slice(A, l, 2, shape, b0, (const int64_t[]){0, 4}), TIRX_E_INVALID_ARG, fn);
  NUL(tirx_layout_slice(A, l, 2, shape, (const int64_t[]){0, 4}, (const int64_t[]){1, 8}),
      TIRX_E_OUT_OF_RANGE, fn);
  tirx_layout *split = P("(2,4):(4@m,1@laneid)"); /* [2, 6) crosses the inner iter */
  NUL(tirx_layout_slice(A, split, 1, (const int64_t[]){8}, (const int64_t[]){2},
                        (const int64_t[]){4}),
      TIRX_E_NOT_REPRESENTABLE, fn);
  NUL(tirx_layout_slice(A, l, 2, (const int64_t[]){3, 8}, b0, e1), TIRX_E_INVALID_ARG, fn);
  OOM(tirx_layout_slice(A, l, 2, shape, b0, e1), fn);
}

Test(layout_errors, tile) {
  static const char fn[] = "tirx_layout_tile";
  tirx_layout *g = tirx_layout_row_major(A, 1, s16);
  tirx_layout *g2 = tirx_layout_row_major(A, 2, s44);
  tirx_layout *flat = P("(16):(1)");
  NUL(tirx_layout_tile(NULL, g, g), TIRX_E_NULL_ARG, fn);
  NUL(tirx_layout_tile(A, g, NULL), TIRX_E_NULL_ARG, fn);
  NUL(tirx_layout_tile(A, g, g2), TIRX_E_INVALID_ARG, fn);
  NUL(tirx_layout_tile(A, flat, g), TIRX_E_INVALID_ARG, fn);
  tirx_layout *sw = tirx_layout_swizzle(A, g, 128, 2);
  cr_assert_not_null(sw, "%s", tirx_last_error());
  NUL(tirx_layout_tile(A, sw, sw), TIRX_E_INVALID_ARG, fn);
  /* 40 + 40 iters in one dimension: over TIRX_LAYOUT_MAX_ITERS. */
  char text[512] = "((";
  for (int i = 0; i < 40; i++) strcat(text, i ? ",2" : "2");
  strcat(text, ")):((");
  for (int i = 0; i < 40; i++) strcat(text, i ? ",0" : "1");
  strcat(text, "))");
  tirx_layout *many = P(text);
  NUL(tirx_layout_tile(A, many, many), TIRX_E_LIMIT, fn);
  tirx_layout *far = tirx_layout_strided(A, 1, (const int64_t[]){2},
                                         (const int64_t[]){INT64_C(1) << 62});
  cr_assert_not_null(far, "%s", tirx_last_error());
  NUL(tirx_layout_tile(A, far, far), TIRX_E_OVERFLOW, fn);
  OOM(tirx_layout_tile(A, g, g), fn);

  static const char fd[] = "tirx_layout_tile_dense";
  NUL(tirx_layout_tile_dense(A, g, 1, NULL), TIRX_E_NULL_ARG, fd);
  NUL(tirx_layout_tile_dense(A, flat, 1, (const int64_t[]){2}), TIRX_E_INVALID_ARG, fd);
  NUL(tirx_layout_tile_dense(A, g, 2, (const int64_t[]){2, 2}), TIRX_E_INVALID_ARG, fd);
  NUL(tirx_layout_tile_dense(A, g, 1, (const int64_t[]){0}), TIRX_E_INVALID_ARG, fd);
  NUL(tirx_layout_tile_dense(A, g, 1, (const int64_t[]){INT64_C(1) << 62}), TIRX_E_OVERFLOW, fd);
}

Test(layout_errors, compose) {
  static const char fn[] = "tirx_layout_compose";
  tirx_layout *l = P("(4,4):(1,4)");
  NUL(tirx_layout_compose(A, l, NULL), TIRX_E_NULL_ARG, fn);
  NUL(tirx_layout_compose(A, l, P("(4):(1@reg)")), TIRX_E_INVALID_ARG, fn);
  NUL(tirx_layout_compose(A, l, P("(4):(8)")), TIRX_E_OUT_OF_RANGE, fn);
  NUL(tirx_layout_compose(A, l, P("(5):(3)")), TIRX_E_NOT_REPRESENTABLE, fn);
  tirx_layout *f = P("(4):(1)");
  OOM(tirx_layout_compose(A, l, f), fn);
}

Test(layout_errors, queries) {
  tirx_layout *l = P("(4,4):(1,4)");
  int64_t span;
  ST(tirx_layout_span(NULL, TIRX_AXIS_M, NULL, &span), TIRX_E_NULL_ARG, "tirx_layout_span");
  ST(tirx_layout_span(l, TIRX_AXIS_M, NULL, NULL), TIRX_E_NULL_ARG, "tirx_layout_span");
  ST(tirx_layout_span(l, (tirx_axis)TIRX_AXIS_MAX, NULL, &span), TIRX_E_UNKNOWN_AXIS,
     "tirx_layout_span");
  NUL(tirx_layout_storage_view(NULL, l, 0), TIRX_E_NULL_ARG, "tirx_layout_storage_view");
  NUL(tirx_layout_storage_view(A, NULL, 0), TIRX_E_NULL_ARG, "tirx_layout_storage_view");
  NUL(tirx_layout_storage_view(A, l, UINT64_C(1) << TIRX_AXIS_MAX), TIRX_E_INVALID_ARG,
      "tirx_layout_storage_view");
  OOM(tirx_layout_storage_view(A, l, 0), "tirx_layout_storage_view");
  tirx_clear_error();
  cr_assert_eq(tirx_layout_contiguous(NULL), 0);
  expect_last(TIRX_E_NULL_ARG, "tirx_layout_contiguous", "contiguous");
  tirx_clear_error();
  cr_assert_eq(tirx_layout_vector_width(NULL, 2, 16), 0);
  expect_last(TIRX_E_NULL_ARG, "tirx_layout_vector_width", "vector_width");
  cr_assert_eq(tirx_layout_vector_width(l, 0, 16), 0);
  expect_last(TIRX_E_INVALID_ARG, "tirx_layout_vector_width", "vector_width elem_bytes");
  cr_assert_eq(tirx_layout_vector_width(l, 4, 2), 0);
  expect_last(TIRX_E_INVALID_ARG, "tirx_layout_vector_width", "vector_width max_bytes");
}

Test(layout_errors, swizzle) {
  static const char fn[] = "tirx_layout_swizzle";
  tirx_layout *l = P("(8,64):(64,1)");
  NUL(tirx_layout_swizzle(NULL, l, 128, 2), TIRX_E_NULL_ARG, fn);
  NUL(tirx_layout_swizzle(A, NULL, 128, 2), TIRX_E_NULL_ARG, fn);
  NUL(tirx_layout_swizzle(A, l, 96, 2), TIRX_E_INVALID_ARG, fn);
  NUL(tirx_layout_swizzle(A, l, 128, 3), TIRX_E_INVALID_ARG, fn);
  NUL(tirx_layout_swizzle(A, P("(2):(2305843009213693952)"), 128, 8), TIRX_E_OVERFLOW, fn);
  OOM(tirx_layout_swizzle(A, l, 128, 2), fn);
  tirx_clear_error();
  cr_assert_eq(tirx_swizzle_apply(96, 2, 5), -1);
  cr_assert_eq(tirx_swizzle_apply(128, 8, INT64_MAX / 4), -1);
  cr_assert_eq(tirx_last_status(), TIRX_OK, "tirx_swizzle_apply records no error");
}

Test(layout_errors, ready_made) {
  NUL(tirx_layout_mma_m16n8k16_a(NULL), TIRX_E_NULL_ARG, "tirx_layout_mma_m16n8k16_a");
  NUL(tirx_layout_mma_m16n8k16_b(NULL), TIRX_E_NULL_ARG, "tirx_layout_mma_m16n8k16_b");
  NUL(tirx_layout_mma_m16n8k16_c(NULL), TIRX_E_NULL_ARG, "tirx_layout_mma_m16n8k16_c");
  OOM(tirx_layout_mma_m16n8k16_a(A), "tirx_layout_mma_m16n8k16_a");
  NUL(tirx_layout_wgmma_acc(NULL, 64, 8), TIRX_E_NULL_ARG, "tirx_layout_wgmma_acc");
  NUL(tirx_layout_wgmma_acc(A, 32, 8), TIRX_E_INVALID_ARG, "tirx_layout_wgmma_acc");
  NUL(tirx_layout_wgmma_acc(A, 64, 12), TIRX_E_INVALID_ARG, "tirx_layout_wgmma_acc");
  OOM(tirx_layout_wgmma_acc(A, 64, 8), "tirx_layout_wgmma_acc");
  NUL(tirx_layout_wgmma_a(A, 64, 8), TIRX_E_INVALID_ARG, "tirx_layout_wgmma_a");
  NUL(tirx_layout_wgmma_a(NULL, 64, 16), TIRX_E_NULL_ARG, "tirx_layout_wgmma_a");
  NUL(tirx_layout_ldmatrix(A, 3), TIRX_E_INVALID_ARG, "tirx_layout_ldmatrix");
  NUL(tirx_layout_ldmatrix(NULL, 1), TIRX_E_NULL_ARG, "tirx_layout_ldmatrix");
  NUL(tirx_layout_warpgroup_rows(A, 129, 4), TIRX_E_INVALID_ARG, "tirx_layout_warpgroup_rows");
  NUL(tirx_layout_warpgroup_rows(A, 4, 0), TIRX_E_INVALID_ARG, "tirx_layout_warpgroup_rows");
  NUL(tirx_layout_warpgroup_rows(NULL, 4, 4), TIRX_E_NULL_ARG, "tirx_layout_warpgroup_rows");
  static const char fs[] = "tirx_layout_smem_tile";
  NUL(tirx_layout_smem_tile(NULL, 8, 64, 2, 128), TIRX_E_NULL_ARG, fs);
  NUL(tirx_layout_smem_tile(A, 0, 64, 2, 128), TIRX_E_INVALID_ARG, fs);
  NUL(tirx_layout_smem_tile(A, 8, 64, 3, 128), TIRX_E_INVALID_ARG, fs);
  NUL(tirx_layout_smem_tile(A, 8, 64, 2, 96), TIRX_E_INVALID_ARG, fs);
  NUL(tirx_layout_smem_tile(A, 8, 60, 2, 128), TIRX_E_INVALID_ARG, fs);
  NUL(tirx_layout_smem_tile(A, INT64_C(1) << 62, 64, 2, 128), TIRX_E_OVERFLOW, fs);
  OOM(tirx_layout_smem_tile(A, 8, 64, 2, 128), fs);
}

/* Issue 19's last functions: well-formedness, TMEM factories, the extending composition. */
Test(layout_errors, verify_tmem_compose_extended) {
  static const char fv[] = "tirx_layout_verify";
  tirx_scope *warp = tirx_scope_team(A, tirx_scope_new(A, 4, 1, 1), TIRX_TEAM_WARP);
  cr_assert_not_null(warp);
  ST(tirx_layout_verify(NULL, warp), TIRX_E_NULL_ARG, fv);
  ST(tirx_layout_verify(P("(32):(1@laneid)"), NULL), TIRX_E_NULL_ARG, fv);
  ST(tirx_layout_verify(P("(2):(1@warpid)"), warp), TIRX_E_SCOPE, fv);
  tirx_layout *frag = P("(32,2):(1@laneid,1@reg)");
  tirx__arena_fail_after(0);
  ST(tirx_layout_verify(frag, warp), TIRX_E_NO_MEMORY, fv);
  tirx__arena_fail_after(-1);

  NUL(tirx_layout_tmem_acc(NULL, 128, 64, 1), TIRX_E_NULL_ARG, "tirx_layout_tmem_acc");
  NUL(tirx_layout_tmem_acc(A, 96, 64, 1), TIRX_E_INVALID_ARG, "tirx_layout_tmem_acc");
  OOM(tirx_layout_tmem_acc(A, 128, 64, 1), "tirx_layout_tmem_acc");
  NUL(tirx_layout_tmem_ld(NULL, TIRX_TMEM_32X32B, 1), TIRX_E_NULL_ARG, "tirx_layout_tmem_ld");
  NUL(tirx_layout_tmem_ld(A, TIRX_TMEM_16X256B, 64), TIRX_E_INVALID_ARG, "tirx_layout_tmem_ld");
  OOM(tirx_layout_tmem_ld(A, TIRX_TMEM_16X64B, 4), "tirx_layout_tmem_ld");

  static const char fc[] = "tirx_layout_compose_extended";
  tirx_layout *l = P("(4,4):(1,4)");
  NUL(tirx_layout_compose_extended(A, l, NULL), TIRX_E_NULL_ARG, fc);
  NUL(tirx_layout_compose_extended(A, l, P("(4):(1@reg)")), TIRX_E_INVALID_ARG, fc);
  NUL(tirx_layout_compose_extended(A, l, P("(4):(-8)")), TIRX_E_OUT_OF_RANGE, fc);
  NUL(tirx_layout_compose_extended(A, l, P("(5):(3)")), TIRX_E_NOT_REPRESENTABLE, fc);
  NUL(tirx_layout_compose_extended(A, P("(1):(4)"), P("(2):(2305843009213693952)")),
      TIRX_E_OVERFLOW, fc);
  tirx_layout *f = P("(4):(1)");
  OOM(tirx_layout_compose_extended(A, l, f), fc);
}
