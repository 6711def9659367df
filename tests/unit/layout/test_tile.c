/* src/layout/ops.c: tile, tile_dense and compose, checked by brute force over every index. */
#include "ops_helpers.h"

static tirx_arena *A;
static void setup(void) { A = tirx_arena_create(); }
static void teardown(void) { tirx_arena_destroy(A); }
TestSuite(tile, .init = setup, .fini = teardown);

/* A random layout grouped to a random shape of the given rank (retrying until it groups). */
static tirx_layout *random_grouped(uint64_t *seed, int max_nd, bool memory_only, int rank,
                                   int64_t *shape) {
  for (;;) {
    tirx_layout *l = test_random_layout(A, seed, max_nd, memory_only);
    random_shape(seed, tirx_layout_size(l), rank, shape);
    tirx_layout *g = tirx_layout_group(A, l, rank, shape);
    if (g) return g;
  }
}

/* Asserts that t(x) is the set { p + q | p in a(xa), q in b(xb) } (no swizzles). */
static void assert_sum_set(const tirx_layout *t, int64_t x, const tirx_layout *a, int64_t xa,
                           const tirx_layout *b, int64_t xb) {
  int64_t na, nb, nt;
  tirx_coord *pa = test_point_set(a, xa, &na), *pb = test_point_set(b, xb, &nb);
  tirx_coord *sum = calloc((size_t)(na * nb), sizeof *sum);
  int64_t n = 0;
  for (int64_t i = 0; i < na; i++)
    for (int64_t j = 0; j < nb; j++, n++)
      for (int ax = 0; ax < TIRX_AXIS_MAX; ax++) sum[n].v[ax] = pa[i].v[ax] + pb[j].v[ax];
  qsort(sum, (size_t)n, sizeof *sum, test_coord_cmp);
  int64_t k = 0;
  for (int64_t i = 0; i < n; i++)
    if (k == 0 || test_coord_cmp(&sum[k - 1], &sum[i]) != 0) sum[k++] = sum[i];
  tirx_coord *pt = test_point_set(t, x, &nt);
  cr_assert_eq(nt, k, "x=%lld: %lld points, expected %lld", (long long)x, (long long)nt,
               (long long)k);
  cr_assert_arr_eq(pt, sum, (size_t)k * sizeof *pt, "x=%lld: the points differ", (long long)x);
  free(pa);
  free(pb);
  free(sum);
  free(pt);
}

/* ---- tile ---- */

Test(tile, tiles_a_fragment_over_warps) {
  /* An 8x16 register tile per warp, repeated over a 2x2 grid of warps. */
  tirx_iter od[] = {{2, 2, TIRX_AXIS_WARPID}, {2, 1, TIRX_AXIS_WARPID}};
  tirx_layout *outer = tirx_layout_group(A, tirx_layout_new(A, 2, od, 0, NULL, 0, NULL), 2,
                                         (int64_t[]){2, 2});
  tirx_iter id[] = {{8, 4, TIRX_AXIS_LANEID}, {4, 1, TIRX_AXIS_LANEID}, {4, 1, TIRX_AXIS_REG}};
  tirx_axis_offset io[] = {{TIRX_AXIS_REG, 8}};
  tirx_layout *inner = tirx_layout_group(A, tirx_layout_new(A, 3, id, 0, NULL, 1, io), 2,
                                         (int64_t[]){8, 16});
  tirx_layout *t = tirx_layout_tile(A, outer, inner);
  expect_str(t, "((2,8),(2,4,4)):((2@warpid,4@laneid),(1@warpid,1@laneid,1@reg))+8@reg");
  for (int64_t i = 0; i < 16; i++)
    for (int64_t j = 0; j < 32; j++) {
      int64_t idx[2] = {i, j}, n;
      tirx_coord pt;
      cr_assert_eq(tirx_layout_eval_nd(t, idx, &pt, 1, &n), TIRX_OK);
      cr_assert_eq(pt.v[TIRX_AXIS_WARPID], 2 * (i / 8) + j / 16);
      cr_assert_eq(pt.v[TIRX_AXIS_LANEID], 4 * (i % 8) + (j % 16) / 4);
      cr_assert_eq(pt.v[TIRX_AXIS_REG], 8 + j % 4);
    }
}

Test(tile, matches_brute_force_on_random_layouts) {
  uint64_t seed = 0x711e;
  for (int t = 0; t < 300; t++) {
    int rank = (int)test_rand_range(&seed, 1, 3);
    int64_t os[3], is[3], ts[3];
    tirx_layout *outer = random_grouped(&seed, 3, false, rank, os);
    tirx_layout *inner = random_grouped(&seed, 3, false, rank, is);
    tirx_layout *r = tirx_layout_tile(A, outer, inner);
    cr_assert_not_null(r, "%s", tirx_last_error());
    cr_assert_eq(tirx_layout_rank(r), rank);
    cr_assert_eq(tirx_layout_shape(r, ts, 3), TIRX_OK);
    for (int k = 0; k < rank; k++) cr_assert_eq(ts[k], os[k] * is[k]);
    for (int64_t x = 0; x < tirx_layout_size(r); x++) {
      int64_t idx[3], oi[3], ii[3];
      unravel(x, rank, ts, idx);
      for (int k = 0; k < rank; k++) oi[k] = idx[k] / is[k], ii[k] = idx[k] % is[k];
      assert_sum_set(r, x, outer, ravel(rank, os, oi), inner, ravel(rank, is, ii));
    }
  }
}

Test(tile, dense_places_tiles_one_after_another) {
  tirx_layout *inner = tirx_layout_row_major(A, 2, (int64_t[]){3, 5});
  tirx_layout *t = tirx_layout_tile_dense(A, inner, 2, (int64_t[]){2, 4});
  expect_str(t, "((2,3),(4,5)):((60@m,5@m),(15@m,1@m))");
  expect_str(tirx_layout_tile_dense(A, inner, 2, (int64_t[]){1, 3}),
             "((3),(3,5)):((5@m),(15@m,1@m))");

  uint64_t seed = 0xde75e;
  for (int n = 0; n < 300; n++) {
    int rank = (int)test_rand_range(&seed, 1, 3);
    int64_t is[3], reps[3], ts[3];
    tirx_layout *in = random_grouped(&seed, 4, false, rank, is);
    for (int k = 0; k < rank; k++) reps[k] = test_rand_range(&seed, 1, 3);
    tirx_layout *r = tirx_layout_tile_dense(A, in, rank, reps);
    cr_assert_not_null(r, "%s", tirx_last_error());
    int64_t span;
    cr_assert_eq(tirx_layout_span(in, TIRX_AXIS_M, NULL, &span), TIRX_OK);
    cr_assert_eq(tirx_layout_shape(r, ts, 3), TIRX_OK);
    for (int k = 0; k < rank; k++) cr_assert_eq(ts[k], reps[k] * is[k]);
    for (int64_t x = 0; x < tirx_layout_size(r); x++) {
      int64_t idx[3], oi[3], ii[3];
      unravel(x, rank, ts, idx);
      for (int k = 0; k < rank; k++) oi[k] = idx[k] / is[k], ii[k] = idx[k] % is[k];
      int64_t shift = ravel(rank, reps, oi) * span, nt, ni;
      tirx_coord *pt = test_point_set(r, x, &nt), *pi = test_point_set(in, ravel(rank, is, ii), &ni);
      cr_assert_eq(nt, ni);
      for (int64_t j = 0; j < ni; j++) pi[j].v[TIRX_AXIS_M] += shift;
      cr_assert_arr_eq(pt, pi, (size_t)nt * sizeof *pt);
      free(pt);
      free(pi);
    }
  }
}

Test(tile, dense_repeats_a_swizzled_tile_on_whole_atoms) {
  /* 128-byte swizzle over bf16: the atom is 8 rows of 64 elements (512 elements). A tile of 8
   * rows fills one atom; a tile of 4 rows is padded to one. */
  for (int64_t rows = 4; rows <= 8; rows += 4) {
    tirx_layout *in =
        tirx_layout_swizzle(A, tirx_layout_row_major(A, 2, (int64_t[]){rows, 64}), 128, 2);
    tirx_layout *t = tirx_layout_tile_dense(A, in, 2, (int64_t[]){2, 3});
    cr_assert_not_null(t, "%s", tirx_last_error());
    cr_assert_eq(tirx_layout_swizzle_bytes(t), 128);
    for (int64_t r = 0; r < 2 * rows; r++)
      for (int64_t c = 0; c < 192; c++) {
        int64_t m, tile_idx = (r / rows) * 3 + c / 64;
        cr_assert_eq(tirx_layout_eval_m(t, r * 192 + c, &m), TIRX_OK);
        cr_assert_eq(m, tile_idx * 512 + tirx_swizzle_apply(128, 2, (r % rows) * 64 + c % 64));
      }
  }
}

Test(tile, bad_input_is_reported) {
  tirx_layout *g = tirx_layout_row_major(A, 2, (int64_t[]){2, 3});
  tirx_layout *g1 = tirx_layout_row_major(A, 1, (int64_t[]){4});
  tirx_layout *flat = tirx_layout_flatten(A, g);
  tirx_layout *sw = tirx_layout_swizzle(A, g, 32, 2);
  expect_null(tirx_layout_tile(A, flat, g), TIRX_E_INVALID_ARG,
              "tirx_layout_tile: outer is not grouped (it has no logical shape)");
  expect_null(tirx_layout_tile(A, g, flat), TIRX_E_INVALID_ARG,
              "tirx_layout_tile: inner is not grouped (it has no logical shape)");
  expect_null(tirx_layout_tile(A, g, g1), TIRX_E_INVALID_ARG,
              "tirx_layout_tile: outer has rank 2, inner has rank 1");
  expect_null(tirx_layout_tile(A, sw, sw), TIRX_E_INVALID_ARG,
              "tirx_layout_tile: outer and inner are both swizzled");
  expect_null(tirx_layout_tile(A, NULL, g), TIRX_E_NULL_ARG, "tirx_layout_tile: outer is NULL");
  expect_null(tirx_layout_tile(A, g, NULL), TIRX_E_NULL_ARG, "tirx_layout_tile: inner is NULL");
  expect_null(tirx_layout_tile(NULL, g, g), TIRX_E_NULL_ARG, "tirx_layout_tile: arena is NULL");
  tirx_layout *far = tirx_layout_strided(A, 1, (int64_t[]){2}, (int64_t[]){INT64_C(1) << 62});
  expect_null(tirx_layout_tile(A, far, far), TIRX_E_OVERFLOW,
              "tirx_layout_tile: a coordinate of the layout overflows int64");
  tirx_axis_offset big[] = {{TIRX_AXIS_M, INT64_MAX - 1}};
  tirx_layout *at_max = tirx_layout_group(A, tirx_layout_new(A, 0, NULL, 0, NULL, 1, big), 1,
                                          (int64_t[]){1});
  tirx_axis_offset one[] = {{TIRX_AXIS_M, 1}};
  tirx_layout *plus1 = tirx_layout_group(A, tirx_layout_new(A, 0, NULL, 0, NULL, 1, one), 1,
                                         (int64_t[]){1});
  expect_null(tirx_layout_tile(A, at_max, plus1), TIRX_E_OVERFLOW,
              "tirx_layout_tile: a coordinate of the layout overflows int64");
  tirx_iter many[40];
  for (int i = 0; i < 40; i++) many[i] = (tirx_iter){2, 0, TIRX_AXIS_M};
  tirx_layout *forty = tirx_layout_group(A, tirx_layout_new(A, 40, many, 0, NULL, 0, NULL), 1,
                                         (int64_t[]){INT64_C(1) << 40});
  cr_assert_not_null(forty, "%s", tirx_last_error());
  expect_null(tirx_layout_tile(A, forty, forty), TIRX_E_LIMIT,
              "tirx_layout_tile: 80 iters, 0 replicas, 0 offsets exceed the limits (64, 64, 32)");

  expect_null(tirx_layout_tile_dense(A, flat, 2, (int64_t[]){2, 2}), TIRX_E_INVALID_ARG,
              "tirx_layout_tile_dense: inner is not grouped (it has no logical shape)");
  expect_null(tirx_layout_tile_dense(A, g, 3, (int64_t[]){2, 2, 2}), TIRX_E_INVALID_ARG,
              "tirx_layout_tile_dense: rank is 3, inner has rank 2");
  expect_null(tirx_layout_tile_dense(A, g, 2, (int64_t[]){2, 0}), TIRX_E_INVALID_ARG,
              "tirx_layout_tile_dense: reps[1] is 0, expected >= 1");
  expect_null(tirx_layout_tile_dense(A, g, 2, NULL), TIRX_E_NULL_ARG,
              "tirx_layout_tile_dense: reps is NULL");
  expect_null(tirx_layout_tile_dense(A, NULL, 2, (int64_t[]){2, 2}), TIRX_E_NULL_ARG,
              "tirx_layout_tile_dense: inner is NULL");
  expect_null(tirx_layout_tile_dense(NULL, g, 2, (int64_t[]){2, 2}), TIRX_E_NULL_ARG,
              "tirx_layout_tile_dense: arena is NULL");
  expect_null(tirx_layout_tile_dense(A, g, 2, (int64_t[]){INT64_C(1) << 40, INT64_C(1) << 40}),
              TIRX_E_OVERFLOW, "tirx_layout_tile_dense: the tile grid's strides overflow int64");
}

/* ---- compose ---- */

/* Asserts (l o f)(x) = l(f(x)) for every x, and that c has f's grouping. */
static void assert_compose_law(const tirx_layout *c, const tirx_layout *l, const tirx_layout *f) {
  cr_assert_eq(tirx_layout_size(c), tirx_layout_size(f));
  cr_assert_eq(tirx_layout_rank(c), tirx_layout_rank(f));
  int64_t sc[TIRX_LAYOUT_MAX_RANK], sf[TIRX_LAYOUT_MAX_RANK];
  tirx_layout_shape(c, sc, TIRX_LAYOUT_MAX_RANK);
  tirx_layout_shape(f, sf, TIRX_LAYOUT_MAX_RANK);
  for (int k = 0; k < tirx_layout_rank(f); k++) cr_assert_eq(sc[k], sf[k]);
  for (int64_t x = 0; x < tirx_layout_size(f); x++) {
    int64_t fx;
    cr_assert_eq(tirx_layout_eval_m(f, x, &fx), TIRX_OK);
    if (!test_same_points(c, x, l, fx)) {
      char *a = tirx_layout_str(l), *b = tirx_layout_str(f), *r = tirx_layout_str(c);
      cr_assert_fail("%s o %s = %s differs at x=%lld", a, b, r, (long long)x);
    }
  }
}

static tirx_layout *flat_m(int n, const int64_t *ext, const int64_t *str) {
  tirx_iter d[8];
  for (int i = 0; i < n; i++) d[i] = (tirx_iter){ext[i], str[i], TIRX_AXIS_M};
  return tirx_layout_new(A, n, d, 0, NULL, 0, NULL);
}

Test(tile, compose_examples) {
  /* A fragment x = 6a + b -> (lane a, reg b), viewed through its transpose f(j, i) = j + 6i. */
  tirx_iter ld[] = {{4, 6, TIRX_AXIS_LANEID}, {6, 1, TIRX_AXIS_REG}};
  tirx_layout *l = tirx_layout_new(A, 2, ld, 0, NULL, 0, NULL);
  tirx_layout *f = tirx_layout_strided(A, 2, (int64_t[]){6, 4}, (int64_t[]){1, 6});
  tirx_layout *c = tirx_layout_compose(A, l, f);
  expect_str(c, "((6),(4)):((1@reg),(6@laneid))");
  assert_compose_law(c, l, f);
  /* Strides that land inside an iter of l: (12):(1) o (3,2):(1,3) = (3,2):(1,3), and
   * (2,6):(100,1) o (2,3):(6,2) picks every other column. */
  tirx_layout *l2 = flat_m(2, (int64_t[]){2, 6}, (int64_t[]){100, 1});
  tirx_layout *f2 = flat_m(2, (int64_t[]){2, 3}, (int64_t[]){6, 2});
  tirx_layout *c2 = tirx_layout_compose(A, l2, f2);
  expect_str(c2, "(2,3):(100@m,2@m)");
  assert_compose_law(c2, l2, f2);
  /* A broadcast index map keeps its stride-0 iter; replicas and offsets of l stay. */
  tirx_iter rd[] = {{2, 16, TIRX_AXIS_WARPID}};
  tirx_axis_offset od[] = {{TIRX_AXIS_REG, 3}};
  tirx_iter l3d[] = {{4, 1, TIRX_AXIS_LANEID}};
  tirx_layout *l3 = tirx_layout_new(A, 1, l3d, 1, rd, 1, od);
  tirx_layout *f3 = flat_m(2, (int64_t[]){3, 4}, (int64_t[]){0, 1});
  tirx_layout *c3 = tirx_layout_compose(A, l3, f3);
  expect_str(c3, "(3,4):(0@m,1@laneid)+[2:16@warpid]+3@reg");
  assert_compose_law(c3, l3, f3);
  /* Iters of l that one iter expresses are merged first, so f's iters may share a digit. */
  tirx_layout *l4 = flat_m(2, (int64_t[]){2, 2}, (int64_t[]){2, 1});
  tirx_layout *f4 = flat_m(2, (int64_t[]){2, 2}, (int64_t[]){1, 1});
  tirx_layout *c4 = tirx_layout_compose(A, l4, f4);
  expect_str(c4, "(2,2):(1@m,1@m)");
  assert_compose_law(c4, l4, f4);
  /* The 24x24 column-major layout composed with a row-major (24,24) index map is the
   * transpose view. */
  tirx_layout *cm = flat_m(2, (int64_t[]){24, 24}, (int64_t[]){1, 24});
  tirx_layout *tr = tirx_layout_strided(A, 2, (int64_t[]){24, 24}, (int64_t[]){1, 24});
  tirx_layout *c5 = tirx_layout_compose(A, cm, tr);
  expect_str(c5, "((24),(24)):((24@m),(1@m))");
  assert_compose_law(c5, cm, tr);
}

/* A random index map that always composes: l's flat digits refined into sub-digits, each an
 * iter (r):(C) with C the sub-digit's place value, in a random order, grouped when it can be. */
static tirx_layout *refined_map(uint64_t *seed, const tirx_layout *l) {
  int64_t ext[32], str[32];
  int n = 0;
  int64_t place = 1;
  for (int i = tirx_layout_num_iters(l) - 1; i >= 0; i--) {
    tirx_iter it;
    tirx_layout_iter(l, i, &it);
    int64_t e = it.extent;
    for (int64_t p = 2; e > 1; p++)
      while (e % p == 0) {
        int64_t r = p;
        e /= p;
        if (e > 1 && test_rand(seed) % 2) { /* sometimes keep two factors together */
          int64_t q = 2;
          while (e % q) q++;
          r *= q;
          e /= q;
        }
        ext[n] = r;
        str[n++] = place;
        place *= r;
      }
  }
  for (int i = n - 1; i > 0; i--) {
    int j = (int)(test_rand(seed) % (uint64_t)(i + 1));
    int64_t te = ext[i], ts = str[i];
    ext[i] = ext[j], str[i] = str[j];
    ext[j] = te, str[j] = ts;
  }
  tirx_iter d[32];
  for (int i = 0; i < n; i++) d[i] = (tirx_iter){ext[i], str[i], TIRX_AXIS_M};
  tirx_layout *f = tirx_layout_new(A, n, d, 0, NULL, 0, NULL);
  cr_assert_not_null(f, "%s", tirx_last_error());
  int rank = (int)test_rand_range(seed, 1, 3);
  int64_t shape[3];
  random_shape(seed, tirx_layout_size(f), rank, shape);
  tirx_layout *g = tirx_layout_group(A, f, rank, shape);
  return g ? g : f;
}

Test(tile, compose_matches_brute_force_on_random_layouts) {
  uint64_t seed = 0xc0de;
  int ok = 0, refused = 0;
  for (int t = 0; t < 400; t++) {
    tirx_layout *l = test_random_layout(A, &seed, 4, false);
    if (t % 5 == 0) l = tirx_layout_swizzle(A, l, 32, 2);
    /* A permutation of l's own refined digits always composes. */
    tirx_layout *f = refined_map(&seed, l);
    tirx_layout *c = tirx_layout_compose(A, l, f);
    cr_assert_not_null(c, "%s", tirx_last_error());
    assert_compose_law(c, l, f);
    /* A random index map: either the law holds or it is refused. */
    int64_t ext[3], str[3], hi = 0;
    int n = (int)test_rand_range(&seed, 1, 3);
    for (int i = 0; i < n; i++) {
      ext[i] = test_rand_range(&seed, 1, 6);
      str[i] = test_rand_range(&seed, 0, 8);
      hi += str[i] * (ext[i] - 1);
    }
    if (hi >= tirx_layout_size(l)) continue;
    tirx_layout *g = flat_m(n, ext, str);
    tirx_clear_error();
    tirx_layout *cg = tirx_layout_compose(A, l, g);
    if (!cg) {
      cr_assert_eq(tirx_last_status(), TIRX_E_NOT_REPRESENTABLE, "%s", tirx_last_error());
      refused++;
      continue;
    }
    ok++;
    assert_compose_law(cg, l, g);
  }
  cr_assert_gt(ok, 50);
  cr_assert_gt(refused, 20);
}

Test(tile, compose_bad_input_is_reported) {
  tirx_layout *l = flat_m(2, (int64_t[]){2, 3}, (int64_t[]){10, 1});
  expect_null(tirx_layout_compose(A, l, flat_m(1, (int64_t[]){3}, (int64_t[]){2})),
              TIRX_E_NOT_REPRESENTABLE,
              "tirx_layout_compose: f's iter 0 (3):(2@m) does not divide l's iters (2,3)");
  tirx_layout *l2 = flat_m(2, (int64_t[]){2, 2}, (int64_t[]){100, 1});
  expect_null(tirx_layout_compose(A, l2, flat_m(2, (int64_t[]){2, 2}, (int64_t[]){1, 1})),
              TIRX_E_NOT_REPRESENTABLE,
              "tirx_layout_compose: f's iters overlap in l's iter (2):(1@m) (their sum carries)");
  expect_null(tirx_layout_compose(A, l, flat_m(1, (int64_t[]){4}, (int64_t[]){2})),
              TIRX_E_OUT_OF_RANGE, "tirx_layout_compose: f's values span [0, 6], outside [0, 6)");
  expect_null(tirx_layout_compose(A, l, flat_m(1, (int64_t[]){2}, (int64_t[]){-1})),
              TIRX_E_OUT_OF_RANGE, "tirx_layout_compose: f's values span [-1, 0], outside [0, 6)");
  tirx_iter lane[] = {{2, 1, TIRX_AXIS_LANEID}};
  expect_null(tirx_layout_compose(A, l, tirx_layout_new(A, 1, lane, 0, NULL, 0, NULL)),
              TIRX_E_INVALID_ARG, "tirx_layout_compose: f is not an index map (iter 0 is on laneid)");
  tirx_iter m2[] = {{2, 1, TIRX_AXIS_M}};
  expect_null(tirx_layout_compose(A, l, tirx_layout_new(A, 1, m2, 1, m2, 0, NULL)),
              TIRX_E_INVALID_ARG, "tirx_layout_compose: f is not an index map (it has replicas)");
  tirx_axis_offset o[] = {{TIRX_AXIS_M, 1}};
  expect_null(tirx_layout_compose(A, l, tirx_layout_new(A, 1, m2, 0, NULL, 1, o)),
              TIRX_E_INVALID_ARG, "tirx_layout_compose: f is not an index map (it has an offset)");
  expect_null(tirx_layout_compose(A, l, tirx_layout_swizzle(A, flat_m(1, (int64_t[]){2},
                                                                      (int64_t[]){1}), 32, 2)),
              TIRX_E_INVALID_ARG, "tirx_layout_compose: f is not an index map (it has a swizzle)");
  expect_null(tirx_layout_compose(A, NULL, l), TIRX_E_NULL_ARG, "tirx_layout_compose: l is NULL");
  expect_null(tirx_layout_compose(A, l, NULL), TIRX_E_NULL_ARG, "tirx_layout_compose: f is NULL");
  expect_null(tirx_layout_compose(NULL, l, l), TIRX_E_NULL_ARG,
              "tirx_layout_compose: arena is NULL");
}

/* ---- CuTe's extending composition ---- */

/* l extended to cover [0, n): its outermost iter (1:0 for a scalar) grown to reach n, the
 * brute-force model of CuTe's unbounded last mode. */
static tirx_layout *extended(const tirx_layout *l, int64_t n) {
  tirx_iter d[TIRX_LAYOUT_MAX_ITERS], r[TIRX_LAYOUT_MAX_ITERS];
  tirx_axis_offset o[TIRX_AXIS_MAX];
  int nd = tirx_layout_num_iters(l), nr = tirx_layout_num_replicas(l);
  int no = tirx_layout_num_offsets(l);
  for (int i = 0; i < nd; i++) tirx_layout_iter(l, i, &d[i]);
  for (int i = 0; i < nr; i++) tirx_layout_replica(l, i, &r[i]);
  for (int i = 0; i < no; i++) tirx_layout_offset_at(l, i, &o[i]);
  if (nd == 0) d[nd++] = (tirx_iter){1, 0, TIRX_AXIS_M};
  int64_t inner = 1;
  for (int i = 1; i < nd; i++) inner *= d[i].extent;
  if (d[0].extent * inner < n) d[0].extent = (n + inner - 1) / inner;
  tirx_layout *e = tirx_layout_new(A, nd, d, nr, r, no, o);
  cr_assert_not_null(e, "%s", tirx_last_error());
  if (tirx_layout_swizzle_bytes(l))
    e = tirx_layout_swizzle(A, e, tirx_layout_swizzle_bytes(l), tirx_layout_swizzle_elem_bytes(l));
  return e;
}

static void assert_extended_law(const tirx_layout *c, const tirx_layout *l, const tirx_layout *f) {
  cr_assert_eq(tirx_layout_size(c), tirx_layout_size(f));
  cr_assert_eq(tirx_layout_rank(c), tirx_layout_rank(f));
  int64_t hi = 0;
  for (int64_t x = 0; x < tirx_layout_size(f); x++) {
    int64_t fx;
    cr_assert_eq(tirx_layout_eval_m(f, x, &fx), TIRX_OK);
    if (fx > hi) hi = fx;
  }
  tirx_layout *le = extended(l, hi + 1);
  for (int64_t x = 0; x < tirx_layout_size(f); x++) {
    int64_t fx;
    tirx_layout_eval_m(f, x, &fx);
    if (!test_same_points(c, x, le, fx)) {
      char *a = tirx_layout_str(l), *b = tirx_layout_str(f), *r = tirx_layout_str(c);
      cr_assert_fail("%s o %s = %s differs at x=%lld (f(x) = %lld)", a, b, r, (long long)x,
                     (long long)fx);
    }
  }
}

/* CuTe's test vectors (test/unit/cute/core/composition.cpp, "cosize(b) > size(a)"), with the
 * modes reversed into tirx order. */
Test(tile, compose_extended_cute_vectors) {
  static const struct {
    int nl;
    int64_t le[3], ls[3];
    int nf;
    int64_t fe[2], fs[2];
    const char *want;
  } v[] = {
      {1, {1}, {0}, 1, {4}, {1}, "(4):(0@m)"},                              /* 1:0 o 4:1 */
      {1, {1}, {1}, 1, {4}, {1}, "(4):(1@m)"},                              /* 1:1 o 4:1 */
      {1, {4}, {1}, 1, {4}, {2}, "(4):(2@m)"},                              /* 4:1 o 4:2 */
      {2, {3, 4}, {1, 3}, 1, {24}, {1}, "(6,4):(1@m,3@m)"},    /* (4,3):(3,1) o 24:1, last mode extended */
      {2, {3, 4}, {1, 3}, 1, {8}, {1}, "(2,4):(1@m,3@m)"},     /* ... o 8:1, without divisibility */
      {3, {1, 3, 4}, {0, 1, 3}, 1, {24}, {1}, "(2,3,4):(0@m,1@m,3@m)"}, /* capped with 1:0 */
      {1, {3}, {1}, 1, {4}, {1}, "(4):(1@m)"},                              /* 3:1 o 4:1 */
      {3, {5, 24, 48}, {3072, 128, 1}, 1, {32}, {1}, "(32):(1@m)"},         /* within the size */
      {3, {5, 24, 128}, {3072, 128, 1}, 1, {480}, {32}, "(480):(32@m)"},
  };
  for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
    tirx_layout *l = flat_m(v[i].nl, v[i].le, v[i].ls), *f = flat_m(v[i].nf, v[i].fe, v[i].fs);
    tirx_layout *c = tirx_layout_compose_extended(A, l, f);
    expect_str(c, v[i].want);
    assert_extended_law(c, l, f);
  }
  /* The default composition still refuses values past size(l). */
  tirx_layout *l = flat_m(2, (int64_t[]){3, 4}, (int64_t[]){1, 3});
  expect_null(tirx_layout_compose(A, l, flat_m(1, (int64_t[]){24}, (int64_t[]){1})),
              TIRX_E_OUT_OF_RANGE, "tirx_layout_compose: f's values span [0, 23], outside [0, 12)");
}

Test(tile, compose_extended_matches_brute_force_on_random_layouts) {
  uint64_t seed = 0xe47e;
  int ok = 0, refused = 0, past = 0, same = 0;
  for (int t = 0; t < 1500; t++) {
    tirx_layout *l = test_random_layout(A, &seed, 4, t % 2 == 0);
    if (t % 7 == 0) l = tirx_layout_swizzle(A, l, 32, 2);
    int64_t ext[3], str[3], hi = 0;
    int n = (int)test_rand_range(&seed, 1, 3);
    for (int i = 0; i < n; i++) {
      ext[i] = test_rand_range(&seed, 1, 6);
      str[i] = test_rand(&seed) % 3 ? test_rand_range(&seed, 0, 8)
                                    : test_rand_range(&seed, 1, 3) * tirx_layout_size(l);
      hi += str[i] * (ext[i] - 1);
    }
    tirx_layout *f = flat_m(n, ext, str);
    tirx_clear_error();
    tirx_layout *c = tirx_layout_compose_extended(A, l, f);
    tirx_layout *plain = tirx_layout_compose(A, l, f);
    if (plain) { /* in range: the same placement as the default composition */
      cr_assert_not_null(c, "%s", tirx_last_error());
      cr_assert(tirx_layout_equal(c, plain));
      same++;
    }
    if (!c) {
      tirx_clear_error();
      cr_assert_null(tirx_layout_compose_extended(A, l, f));
      cr_assert_eq(tirx_last_status(), TIRX_E_NOT_REPRESENTABLE, "%s", tirx_last_error());
      refused++;
      continue;
    }
    ok++;
    past += hi >= tirx_layout_size(l);
    assert_extended_law(c, l, f);
  }
  cr_assert_gt(ok, 600);
  cr_assert_gt(past, 300);
  cr_assert_gt(same, 200);
  cr_assert_gt(refused, 100);
}

Test(tile, compose_extended_bad_input_is_reported) {
  tirx_layout *l = flat_m(2, (int64_t[]){2, 3}, (int64_t[]){10, 1});
  expect_null(tirx_layout_compose_extended(A, l, flat_m(1, (int64_t[]){2}, (int64_t[]){-1})),
              TIRX_E_OUT_OF_RANGE,
              "tirx_layout_compose_extended: f's values span [-1, 0], expected >= 0");
  expect_null(tirx_layout_compose_extended(A, l, flat_m(1, (int64_t[]){3}, (int64_t[]){2})),
              TIRX_E_NOT_REPRESENTABLE,
              "tirx_layout_compose_extended: f's iter 0 (3):(2@m) does not divide l's iters (2,3)");
  tirx_layout *l2 = flat_m(2, (int64_t[]){2, 2}, (int64_t[]){100, 1});
  expect_null(tirx_layout_compose_extended(A, l2, flat_m(2, (int64_t[]){2, 2}, (int64_t[]){1, 1})),
              TIRX_E_NOT_REPRESENTABLE,
              "tirx_layout_compose_extended: f's iters overlap in l's iter (2):(1@m) (their sum "
              "carries)");
  tirx_layout *l4 = flat_m(1, (int64_t[]){1}, (int64_t[]){4});
  expect_null(tirx_layout_compose_extended(
                  A, l4, flat_m(1, (int64_t[]){2}, (int64_t[]){INT64_C(1) << 61})),
              TIRX_E_OVERFLOW,
              "tirx_layout_compose_extended: f's iter 0 (2):(2305843009213693952@m) takes l's "
              "outermost stride past int64");
  tirx_layout *l5 = flat_m(1, (int64_t[]){1}, (int64_t[]){INT64_C(1) << 40});
  expect_null(tirx_layout_compose_extended(
                  A, l5, flat_m(1, (int64_t[]){INT64_C(1) << 30}, (int64_t[]){1})),
              TIRX_E_OVERFLOW,
              "tirx_layout_compose_extended: a coordinate of the layout overflows int64");
  tirx_iter lane[] = {{2, 1, TIRX_AXIS_LANEID}};
  expect_null(tirx_layout_compose_extended(A, l, tirx_layout_new(A, 1, lane, 0, NULL, 0, NULL)),
              TIRX_E_INVALID_ARG,
              "tirx_layout_compose_extended: f is not an index map (iter 0 is on laneid)");
  tirx_iter m2[] = {{2, 1, TIRX_AXIS_M}};
  expect_null(tirx_layout_compose_extended(A, l, tirx_layout_new(A, 1, m2, 1, m2, 0, NULL)),
              TIRX_E_INVALID_ARG,
              "tirx_layout_compose_extended: f is not an index map (it has replicas)");
  expect_null(tirx_layout_compose_extended(A, NULL, l), TIRX_E_NULL_ARG,
              "tirx_layout_compose_extended: l is NULL");
  expect_null(tirx_layout_compose_extended(A, l, NULL), TIRX_E_NULL_ARG,
              "tirx_layout_compose_extended: f is NULL");
  expect_null(tirx_layout_compose_extended(NULL, l, l), TIRX_E_NULL_ARG,
              "tirx_layout_compose_extended: arena is NULL");
}
