/* src/layout/cute.c: complement, logical_divide and logical_product, checked against their
 * laws by brute force over every index of random small index maps. */
#include "ops_helpers.h"

static tirx_arena *A;
static void setup(void) { A = tirx_arena_create(); }
static void teardown(void) { tirx_arena_destroy(A); }
TestSuite(cute, .init = setup, .fini = teardown);

/* A random injective index map: iters of extent [1, 4] whose strides leave gaps of [1, gap]
 * times the span below, in a shuffled order. */
static tirx_layout *random_index_map(uint64_t *s, int max_n, int64_t gap) {
  tirx_iter d[8];
  int n = (int)test_rand_range(s, 1, max_n);
  int64_t cur = 1;
  for (int i = 0; i < n; i++) {
    d[i].extent = test_rand_range(s, 1, 4);
    d[i].stride = cur * test_rand_range(s, 1, gap);
    d[i].axis = TIRX_AXIS_M;
    cur = d[i].stride * d[i].extent;
  }
  for (int i = n - 1; i > 0; i--) {
    int j = (int)(test_rand(s) % (uint64_t)(i + 1));
    tirx_iter t = d[i];
    d[i] = d[j];
    d[j] = t;
  }
  tirx_layout *l = tirx_layout_new(A, n, d, 0, NULL, 0, NULL);
  cr_assert_not_null(l, "%s", tirx_last_error());
  return l;
}

static int64_t at(const tirx_layout *l, int64_t x) {
  int64_t m;
  cr_assert_eq(tirx_layout_eval_m(l, x, &m), TIRX_OK, "%s", tirx_last_error());
  return m;
}

/* The law: b + a over every a in l and b in B is each of [0, N) once, N = size(l) * size(B) >=
 * cosize. */
static void assert_complement(const tirx_layout *l, const tirx_layout *b, int64_t cosize) {
  int64_t nl = tirx_layout_size(l), nb = tirx_layout_size(b), n = nl * nb;
  cr_assert_eq(tirx_layout_num_replicas(b), 0);
  cr_assert_geq(n, cosize);
  bool *seen = calloc((size_t)n, 1);
  for (int64_t i = 0; i < nl; i++)
    for (int64_t j = 0; j < nb; j++) {
      int64_t v = at(l, i) + at(b, j);
      cr_assert(v >= 0 && v < n && !seen[v], "value %lld twice or outside [0, %lld)",
                (long long)v, (long long)n);
      seen[v] = true;
    }
  free(seen);
}

Test(cute, complement_fills_the_gaps) {
  expect_str(tirx_layout_complement(A, tirx_layout_parse(A, "(4):(2)"), 16), "(2,2):(8@m,1@m)");
  expect_str(tirx_layout_complement(A, tirx_layout_parse(A, "(4):(1)"), 24), "(6):(4@m)");
  expect_str(tirx_layout_complement(A, tirx_layout_parse(A, "(2,3):(1,6)"), 36),
             "(2,3):(18@m,2@m)");
  /* (3):(1) into 10: the rest rounds up to 4 copies. */
  expect_str(tirx_layout_complement(A, tirx_layout_parse(A, "(3):(1)"), 10), "(4):(3@m)");
  expect_str(tirx_layout_complement(A, tirx_layout_parse(A, "(4):(1)"), 4), "():()");
  uint64_t seed = 0xc0;
  for (int t = 0; t < 500; t++) {
    tirx_layout *l = random_index_map(&seed, 4, 3);
    int64_t span;
    tirx_layout_span(l, TIRX_AXIS_M, NULL, &span);
    int64_t cosize = test_rand_range(&seed, 1, 2 * span + 3);
    tirx_layout *b = tirx_layout_complement(A, l, cosize);
    cr_assert_not_null(b, "%s", tirx_last_error());
    assert_complement(l, b, cosize);
  }
}

Test(cute, complement_errors) {
  expect_null(tirx_layout_complement(A, tirx_layout_parse(A, "(2,2):(3,1)"), 8),
              TIRX_E_NOT_REPRESENTABLE,
              "tirx_layout_complement: iter (2):(3@m) does not sit on a multiple of 2, the span "
              "of the iters below it: the layout has no complement");
  expect_null(tirx_layout_complement(A, tirx_layout_parse(A, "(4):(1)+[2:4]"), 8),
              TIRX_E_INVALID_ARG,
              "tirx_layout_complement: layout is not an index map (it has replicas)");
  expect_null(tirx_layout_complement(A, tirx_layout_parse(A, "(4):(1@laneid)"), 8),
              TIRX_E_INVALID_ARG,
              "tirx_layout_complement: layout is not an index map (iter 0 is on laneid)");
  expect_null(tirx_layout_complement(A, tirx_layout_parse(A, "(4):(-1)"), 8), TIRX_E_INVALID_ARG,
              "tirx_layout_complement: layout has a negative stride (iter 0: -1)");
  expect_null(tirx_layout_complement(A, tirx_layout_parse(A, "(4):(1)"), 0), TIRX_E_INVALID_ARG,
              "tirx_layout_complement: cosize is 0, expected >= 1");
  expect_null(tirx_layout_complement(A, NULL, 8), TIRX_E_NULL_ARG,
              "tirx_layout_complement: layout is NULL");
  expect_null(tirx_layout_complement(NULL, tirx_layout_parse(A, "(4):(1)"), 8), TIRX_E_NULL_ARG,
              "tirx_layout_complement: arena is NULL");
}

Test(cute, logical_divide_splits_into_tiles) {
  /* CuTe's example: (4,2,3):(2,1,8) divided by the tiler 4:2 is ((2,3),(2,2)):((4,8),(2,1))
   * in CuTe's order (tile first); here ((rest),(tile)). */
  tirx_layout *l = tirx_layout_parse(A, "(3,2,4):(8,1,2)");
  tirx_layout *r = tirx_layout_logical_divide(A, l, tirx_layout_parse(A, "(4):(2)"));
  expect_str(r, "((3,2),(2,2)):((8@m,2@m),(1@m,4@m))");
  uint64_t seed = 0xd1;
  int ok = 0;
  for (int t = 0; t < 500; t++) {
    tirx_layout *tiler = random_index_map(&seed, 3, 2);
    int64_t span, size;
    tirx_layout_span(tiler, TIRX_AXIS_M, NULL, &span);
    tirx_layout *c0 = tirx_layout_complement(A, tiler, 1);
    size = tirx_layout_size(tiler) * tirx_layout_size(c0) * test_rand_range(&seed, 1, 3);
    /* A layout of that size: any layout, regrouped flat. */
    tirx_layout *l2 = NULL;
    for (int tries = 0; tries < 50 && !l2; tries++) {
      tirx_layout *cand = test_random_layout(A, &seed, 4, false);
      if (tirx_layout_size(cand) == size) l2 = cand;
    }
    if (!l2) l2 = tirx_layout_new(A, 1, (tirx_iter[]){{size, 3, TIRX_AXIS_LANEID}}, 0, NULL, 0,
                                  NULL);
    tirx_clear_error();
    tirx_layout *d = tirx_layout_logical_divide(A, l2, tiler);
    if (!d) {
      cr_assert_eq(tirx_last_status(), TIRX_E_NOT_REPRESENTABLE, "%s", tirx_last_error());
      continue;
    }
    ok++;
    tirx_layout *c = tirx_layout_complement(A, tiler, size);
    int64_t nt = tirx_layout_size(tiler), shape[2];
    tirx_layout_shape(d, shape, 2);
    cr_assert_eq(shape[1], nt);
    for (int64_t i = 0; i < shape[0]; i++)
      for (int64_t e = 0; e < nt; e++)
        cr_assert(test_same_points(d, i * nt + e, l2, at(c, i) + at(tiler, e)),
                  "element (%lld, %lld) differs", (long long)i, (long long)e);
  }
  cr_assert_gt(ok, 200);
}

Test(cute, logical_divide_errors) {
  expect_null(tirx_layout_logical_divide(A, tirx_layout_parse(A, "(10):(1)"),
                                         tirx_layout_parse(A, "(4):(1)")),
              TIRX_E_NOT_REPRESENTABLE,
              "tirx_layout_logical_divide: the tiler and its complement cover 12 elements, the "
              "layout has 10: the tiler does not divide it");
  expect_null(tirx_layout_logical_divide(A, tirx_layout_parse(A, "(8):(1)"),
                                         tirx_layout_parse(A, "(2):(1@reg)")),
              TIRX_E_INVALID_ARG,
              "tirx_layout_logical_divide: tiler is not an index map (iter 0 is on reg)");
  expect_null(tirx_layout_logical_divide(A, NULL, tirx_layout_parse(A, "(2):(1)")),
              TIRX_E_NULL_ARG, "tirx_layout_logical_divide: layout is NULL");
}

Test(cute, logical_product_repeats_the_layout) {
  /* (4):(1) repeated 3 times: ((3),(4)):((4),(1)) (CuTe's (4,3):(1,4)); then the law. */
  expect_str(tirx_layout_logical_product(A, tirx_layout_parse(A, "(4):(1)"),
                                         tirx_layout_parse(A, "(3):(1)")),
             "((3),(4)):((4@m),(1@m))");
  /* CuTe's example: logical_product((2,2):(4,1), 6:1) = ((2,2),(2,3)):((4,1),(2,8)). */
  expect_str(tirx_layout_logical_product(A, tirx_layout_parse(A, "(2,2):(1,4)"),
                                         tirx_layout_parse(A, "(6):(1)")),
             "((3,2),(2,2)):((8@m,2@m),(1@m,4@m))");
  /* 3:1 does not divide the complement (2,2):(8,2), as in CuTe. */
  expect_null(tirx_layout_logical_product(A, tirx_layout_parse(A, "(2,2):(1,4)"),
                                          tirx_layout_parse(A, "(3):(1)")),
              TIRX_E_NOT_REPRESENTABLE,
              "tirx_layout_logical_product: tirx_layout_compose: f's iter 0 (3):(1@m) does not "
              "divide l's iters (2,2)");
  uint64_t seed = 0xe2;
  int ok = 0;
  for (int t = 0; t < 500; t++) {
    tirx_layout *l = random_index_map(&seed, 3, 2);
    tirx_layout *tiler = random_index_map(&seed, 2, 2);
    tirx_clear_error();
    tirx_layout *p = tirx_layout_logical_product(A, l, tiler);
    if (!p) {
      cr_assert_eq(tirx_last_status(), TIRX_E_NOT_REPRESENTABLE, "%s", tirx_last_error());
      continue;
    }
    ok++;
    int64_t span, nl = tirx_layout_size(l), nt = tirx_layout_size(tiler);
    tirx_layout_span(tiler, TIRX_AXIS_M, NULL, &span);
    tirx_layout *c = tirx_layout_complement(A, l, nl * span);
    for (int64_t j = 0; j < nt; j++)
      for (int64_t i = 0; i < nl; i++)
        cr_assert_eq(at(p, j * nl + i), at(l, i) + at(c, at(tiler, j)));
  }
  cr_assert_gt(ok, 300);
}

Test(cute, logical_product_errors) {
  expect_null(tirx_layout_logical_product(A, tirx_layout_parse(A, "(4):(1)+2"),
                                          tirx_layout_parse(A, "(2):(1)")),
              TIRX_E_INVALID_ARG,
              "tirx_layout_logical_product: layout is not an index map (it has an offset)");
  expect_null(tirx_layout_logical_product(A, tirx_layout_parse(A, "(4):(1)"), NULL),
              TIRX_E_NULL_ARG, "tirx_layout_logical_product: tiler is NULL");
}
