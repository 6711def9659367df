/* src/layout/ops.c: group, flatten and permute, checked by brute force over every index. */
#include "ops_helpers.h"

static tirx_arena *A;
static void setup(void) { A = tirx_arena_create(); }
static void teardown(void) { tirx_arena_destroy(A); }
TestSuite(group, .init = setup, .fini = teardown);

/* The independent oracle for group: every suffix product P of shape (a dimension boundary)
 * must fall on a point of the flat iters' mixed radix that splits one iter at a divisor:
 * c_p <= P <= c_{p+1}, c_p | P and P | c_{p+1}, c_p the product of the p innermost extents. */
static bool groupable(const tirx_layout *l, int rank, const int64_t *shape) {
  int n = tirx_layout_num_iters(l);
  int64_t c[16];
  c[0] = 1;
  for (int p = 0; p < n; p++) {
    tirx_iter it;
    tirx_layout_iter(l, n - 1 - p, &it);
    c[p + 1] = c[p] * it.extent;
  }
  int64_t P = 1;
  for (int k = rank - 1; k >= 1; k--) {
    P *= shape[k];
    bool ok = false;
    for (int p = 0; p < n && !ok; p++)
      ok = c[p] <= P && P <= c[p + 1] && P % c[p] == 0 && c[p + 1] % P == 0;
    if (!ok) return false;
  }
  return true;
}

Test(group, paper_example_groups_24_to_4x6) {
  tirx_iter d[] = {{24, 1, TIRX_AXIS_M}};
  tirx_layout *l = tirx_layout_new(A, 1, d, 0, NULL, 0, NULL);
  tirx_layout *g = tirx_layout_group(A, l, 2, (int64_t[]){4, 6});
  expect_str(g, "((4),(6)):((6@m),(1@m))");
  cr_assert_eq(tirx_layout_rank(g), 2);
  int64_t shape[2];
  cr_assert_eq(tirx_layout_shape(g, shape, 2), TIRX_OK);
  cr_assert_eq(shape[0], 4);
  cr_assert_eq(shape[1], 6);
  expect_str(tirx_layout_flatten(A, g), "(4,6):(6@m,1@m)");
}

Test(group, splits_iters_at_dimension_boundaries) {
  tirx_iter d[] = {{8, 4, TIRX_AXIS_LANEID}, {2, 1, TIRX_AXIS_WARPID},
                   {4, 1, TIRX_AXIS_LANEID}, {2, 1, TIRX_AXIS_REG}};
  tirx_iter r[] = {{2, 4, TIRX_AXIS_WARPID}};
  tirx_axis_offset o[] = {{TIRX_AXIS_WARPID, 5}};
  tirx_layout *l = tirx_layout_new(A, 4, d, 1, r, 1, o);
  expect_str(tirx_layout_group(A, l, 2, (int64_t[]){8, 16}),
             "((8),(2,4,2)):((4@laneid),(1@warpid,1@laneid,1@reg))+[2:4@warpid]+5@warpid");
  expect_str(tirx_layout_group(A, l, 3, (int64_t[]){4, 8, 4}),
             "((4),(2,2,2),(2,2)):((8@laneid),(4@laneid,1@warpid,2@laneid),(1@laneid,1@reg))"
             "+[2:4@warpid]+5@warpid");
  /* Extent-1 dimensions get no iters, wherever they are. */
  expect_str(tirx_layout_group(A, l, 4, (int64_t[]){1, 128, 1, 1}),
             "((),(8,2,4,2),(),()):((),(4@laneid,1@warpid,1@laneid,1@reg),(),())"
             "+[2:4@warpid]+5@warpid");
  /* A grouped input is regrouped from its flat iters. */
  tirx_layout *g = tirx_layout_group(A, l, 2, (int64_t[]){8, 16});
  expect_str(tirx_layout_group(A, g, 1, (int64_t[]){128}),
             "((8,2,4,2)):((4@laneid,1@warpid,1@laneid,1@reg))+[2:4@warpid]+5@warpid");
}

Test(group, keeps_extent_one_iters_and_the_swizzle) {
  tirx_iter d[] = {{1, 7, TIRX_AXIS_M}, {4, 1, TIRX_AXIS_M}, {1, 3, TIRX_AXIS_REG},
                   {3, 4, TIRX_AXIS_M}, {1, 9, TIRX_AXIS_M}};
  tirx_layout *l = tirx_layout_swizzle(A, tirx_layout_new(A, 5, d, 0, NULL, 0, NULL), 64, 2);
  tirx_layout *g = tirx_layout_group(A, l, 2, (int64_t[]){4, 3});
  expect_str(g, "((1,4,1),(3,1)):((7@m,1@m,3@reg),(4@m,9@m))^sw(64,2)");
  expect_str(tirx_layout_flatten(A, g), "(1,4,1,3,1):(7@m,1@m,3@reg,4@m,9@m)^sw(64,2)");
  /* A scalar (size 1) groups to any all-ones shape with no iters. */
  tirx_axis_offset o[] = {{TIRX_AXIS_M, 3}};
  tirx_layout *sc = tirx_layout_new(A, 0, NULL, 0, NULL, 1, o);
  expect_str(tirx_layout_group(A, sc, 2, (int64_t[]){1, 1}), "((),()):((),())+3@m");
}

Test(group, the_24x24_column_major_layout) {
  /* (24,24):(1@m,24@m) maps (i, j) to i + 24 j: not a power-of-two linear layout. */
  tirx_iter d[] = {{24, 1, TIRX_AXIS_M}, {24, 24, TIRX_AXIS_M}};
  tirx_layout *l = tirx_layout_new(A, 2, d, 0, NULL, 0, NULL);
  tirx_layout *g = tirx_layout_group(A, l, 4, (int64_t[]){4, 6, 3, 8});
  expect_str(g, "((4),(6),(3),(8)):((6@m),(1@m),(192@m),(24@m))");
  for (int64_t a = 0; a < 4; a++)
    for (int64_t b = 0; b < 6; b++)
      for (int64_t c = 0; c < 3; c++)
        for (int64_t e = 0; e < 8; e++) {
          int64_t idx[4] = {a, b, c, e}, n;
          tirx_coord pt;
          cr_assert_eq(tirx_layout_eval_nd(g, idx, &pt, 1, &n), TIRX_OK);
          cr_assert_eq(pt.v[TIRX_AXIS_M], (a * 6 + b) + 24 * (c * 8 + e));
        }
  /* Transposing the grouped view gives the row-major view of the same storage. */
  tirx_layout *g2 = tirx_layout_group(A, l, 2, (int64_t[]){24, 24});
  tirx_layout *t = tirx_layout_permute(A, g2, 2, (int64_t[]){1, 0});
  expect_str(t, "((24),(24)):((24@m),(1@m))");
  for (int64_t i = 0; i < 24; i++)
    for (int64_t j = 0; j < 24; j++) {
      int64_t idx[2] = {j, i}, n;
      tirx_coord pt;
      cr_assert_eq(tirx_layout_eval_nd(t, idx, &pt, 1, &n), TIRX_OK);
      cr_assert_eq(pt.v[TIRX_AXIS_M], i + 24 * j);
    }
  expect_null(tirx_layout_group(A, l, 2, (int64_t[]){16, 36}), TIRX_E_NOT_REPRESENTABLE,
              "tirx_layout_group: (24,24) cannot be grouped to (16,36)");
}

Test(group, matches_brute_force_on_random_layouts) {
  uint64_t seed = 0x6e0f1;
  int ok = 0, refused = 0;
  for (int t = 0; t < 600; t++) {
    tirx_layout *l = test_random_layout(A, &seed, 5, false);
    if (t % 3 == 0) l = tirx_layout_swizzle(A, l, 32, 4);
    int rank = (int)test_rand_range(&seed, 1, 4);
    int64_t shape[4];
    random_shape(&seed, tirx_layout_size(l), rank, shape);
    tirx_clear_error();
    tirx_layout *g = tirx_layout_group(A, l, rank, shape);
    bool expect = groupable(l, rank, shape);
    if (!g) {
      cr_assert_eq(tirx_last_status(), TIRX_E_NOT_REPRESENTABLE, "%s", tirx_last_error());
      cr_assert(!expect, "refused a groupable shape: %s", tirx_last_error());
      refused++;
      continue;
    }
    cr_assert(expect, "grouped a shape the oracle refuses");
    ok++;
    cr_assert_eq(tirx_layout_rank(g), rank);
    int64_t got[4];
    cr_assert_eq(tirx_layout_shape(g, got, 4), TIRX_OK);
    for (int k = 0; k < rank; k++) cr_assert_eq(got[k], shape[k]);
    cr_assert_eq(tirx_layout_swizzle_bytes(g), tirx_layout_swizzle_bytes(l));
    for (int64_t x = 0; x < tirx_layout_size(l); x++) {
      int64_t idx[4], n1, n2;
      unravel(x, rank, shape, idx);
      tirx_coord p1[16], p2[16];
      cr_assert_eq(tirx_layout_eval_nd(g, idx, p1, 16, &n1), TIRX_OK);
      cr_assert_eq(tirx_layout_eval(l, x, p2, 16, &n2), TIRX_OK);
      cr_assert_eq(n1, n2);
      cr_assert_arr_eq(p1, p2, (size_t)n1 * sizeof p1[0]);
    }
    /* Flattening gives back a layout with the same placement. */
    tirx_layout *f = tirx_layout_flatten(A, g);
    cr_assert_eq(tirx_layout_rank(f), 0);
    assert_same_placement(f, l);
  }
  cr_assert_gt(ok, 300);
  cr_assert_gt(refused, 20);
}

Test(group, permute_matches_eval_nd_with_the_permuted_index) {
  uint64_t seed = 0x9e3;
  int done = 0;
  for (int t = 0; t < 400; t++) {
    tirx_layout *l = test_random_layout(A, &seed, 5, false);
    int rank = (int)test_rand_range(&seed, 1, 4);
    int64_t shape[4], perm[4], pshape[4];
    random_shape(&seed, tirx_layout_size(l), rank, shape);
    tirx_layout *g = tirx_layout_group(A, l, rank, shape);
    if (!g) continue;
    for (int k = 0; k < rank; k++) perm[k] = k;
    for (int k = rank - 1; k > 0; k--) {
      int j = (int)(test_rand(&seed) % (uint64_t)(k + 1));
      int64_t tmp = perm[k];
      perm[k] = perm[j];
      perm[j] = tmp;
    }
    tirx_layout *p = tirx_layout_permute(A, g, rank, perm);
    cr_assert_not_null(p, "%s", tirx_last_error());
    cr_assert_eq(tirx_layout_rank(p), rank);
    cr_assert_eq(tirx_layout_shape(p, pshape, 4), TIRX_OK);
    for (int k = 0; k < rank; k++) cr_assert_eq(pshape[k], shape[perm[k]]);
    for (int64_t y = 0; y < tirx_layout_size(p); y++) {
      int64_t idx[4], src[4];
      unravel(y, rank, pshape, idx);
      for (int k = 0; k < rank; k++) src[perm[k]] = idx[k];
      cr_assert(test_same_points(p, y, g, ravel(rank, shape, src)));
    }
    done++;
  }
  cr_assert_gt(done, 200);
}

Test(group, paper_native_memories) {
  tirx_axis P, F, lane, col;
  cr_assert_eq(tirx_axis_register("P", &P), TIRX_OK);
  cr_assert_eq(tirx_axis_register("F", &F), TIRX_OK);
  cr_assert_eq(tirx_axis_register("Lane", &lane), TIRX_OK);
  cr_assert_eq(tirx_axis_register("Col", &col), TIRX_OK);
  /* Trainium scratchpad: (2,128,512):(512@F,1@P,1@F), a (256, 512) tensor. */
  tirx_iter sp[] = {{2, 512, F}, {128, 1, P}, {512, 1, F}};
  tirx_layout *l = tirx_layout_new(A, 3, sp, 0, NULL, 0, NULL);
  tirx_layout *g = tirx_layout_group(A, l, 2, (int64_t[]){256, 512});
  expect_str(g, "((2,128),(512)):((512@F,1@P),(1@F))");
  tirx_layout *g3 = tirx_layout_group(A, l, 3, (int64_t[]){2, 128, 512});
  tirx_layout *pm = tirx_layout_permute(A, g3, 3, (int64_t[]){1, 0, 2});
  expect_str(pm, "((128),(2),(512)):((1@P),(512@F),(1@F))");
  for (int64_t p = 0; p < 128; p += 7)
    for (int64_t h = 0; h < 2; h++)
      for (int64_t f = 0; f < 512; f += 5) {
        int64_t idx[3] = {p, h, f}, n;
        tirx_coord pt;
        cr_assert_eq(tirx_layout_eval_nd(pm, idx, &pt, 1, &n), TIRX_OK);
        cr_assert_eq(pt.v[P], p);
        cr_assert_eq(pt.v[F], 512 * h + f);
      }
  /* Blackwell TMEM: (2,128,112):(112@Col,1@Lane,1@Col). */
  tirx_iter tm[] = {{2, 112, col}, {128, 1, lane}, {112, 1, col}};
  tirx_layout *t = tirx_layout_new(A, 3, tm, 0, NULL, 0, NULL);
  expect_str(tirx_layout_group(A, t, 2, (int64_t[]){256, 112}),
             "((2,128),(112)):((112@Col,1@Lane),(1@Col))");
  expect_str(tirx_layout_group(A, t, 3, (int64_t[]){16, 16, 112}),
             "((2,8),(16),(112)):((112@Col,16@Lane),(1@Lane),(1@Col))");
  expect_null(tirx_layout_group(A, t, 2, (int64_t[]){3, 9556}), TIRX_E_INVALID_ARG,
              "tirx_layout_group: shape (3,9556) has 28668 elements, the layout has 28672");
  expect_str(tirx_layout_group(A, t, 2, (int64_t[]){512, 56}),
             "((2,128,2),(56)):((112@Col,1@Lane,56@Col),(1@Col))");
  expect_null(tirx_layout_group(A, t, 2, (int64_t[]){7, 4096}), TIRX_E_NOT_REPRESENTABLE,
              "tirx_layout_group: (2,128,112) cannot be grouped to (7,4096)");
}

Test(group, bad_input_is_reported) {
  tirx_iter d[] = {{2, 6, TIRX_AXIS_M}, {6, 1, TIRX_AXIS_M}};
  tirx_layout *l = tirx_layout_new(A, 2, d, 0, NULL, 0, NULL);
  expect_null(tirx_layout_group(A, l, 2, (int64_t[]){3, 4}), TIRX_E_NOT_REPRESENTABLE,
              "tirx_layout_group: (2,6) cannot be grouped to (3,4)");
  expect_null(tirx_layout_group(A, l, 2, (int64_t[]){4, 4}), TIRX_E_INVALID_ARG,
              "tirx_layout_group: shape (4,4) has 16 elements, the layout has 12");
  expect_null(tirx_layout_group(A, l, 2, (int64_t[]){0, 4}), TIRX_E_INVALID_ARG,
              "tirx_layout_group: shape[0] is 0, expected >= 1");
  expect_null(tirx_layout_group(A, l, 2, (int64_t[]){12, -1}), TIRX_E_INVALID_ARG,
              "tirx_layout_group: shape[1] is -1, expected >= 1");
  expect_null(tirx_layout_group(A, l, 0, (int64_t[]){12}), TIRX_E_INVALID_ARG,
              "tirx_layout_group: rank is 0, expected 1 to 16");
  int64_t ones[17];
  for (int k = 0; k < 17; k++) ones[k] = 1;
  ones[0] = 12;
  expect_null(tirx_layout_group(A, l, 17, ones), TIRX_E_LIMIT,
              "tirx_layout_group: rank is 17, expected 1 to 16");
  expect_null(tirx_layout_group(A, l, 2, (int64_t[]){INT64_C(1) << 40, INT64_C(1) << 40}),
              TIRX_E_OVERFLOW,
              "tirx_layout_group: the product of shape (1099511627776,1099511627776) overflows "
              "int64");
  expect_null(tirx_layout_group(A, l, 1, NULL), TIRX_E_NULL_ARG,
              "tirx_layout_group: shape is NULL");
  expect_null(tirx_layout_group(A, NULL, 1, (int64_t[]){12}), TIRX_E_NULL_ARG,
              "tirx_layout_group: layout is NULL");
  expect_null(tirx_layout_group(NULL, l, 1, (int64_t[]){12}), TIRX_E_NULL_ARG,
              "tirx_layout_group: arena is NULL");
  expect_null(tirx_layout_flatten(A, NULL), TIRX_E_NULL_ARG,
              "tirx_layout_flatten: layout is NULL");

  /* 60 extent-1 iters and four of extent 4: splitting each in two needs 68 iters. */
  tirx_iter many[64];
  for (int i = 0; i < 64; i++) many[i] = (tirx_iter){i < 60 ? 1 : 4, 1, TIRX_AXIS_M};
  tirx_layout *big = tirx_layout_new(A, 64, many, 0, NULL, 0, NULL);
  cr_assert_not_null(big);
  int64_t twos[8] = {2, 2, 2, 2, 2, 2, 2, 2};
  expect_null(tirx_layout_group(A, big, 8, twos), TIRX_E_LIMIT,
              "tirx_layout_group: grouping needs 68 iters, the limit is 64");

  tirx_layout *g = tirx_layout_group(A, l, 2, (int64_t[]){2, 6});
  expect_null(tirx_layout_permute(A, l, 2, (int64_t[]){1, 0}), TIRX_E_INVALID_ARG,
              "tirx_layout_permute: layout is not grouped (it has no logical shape)");
  expect_null(tirx_layout_permute(A, g, 3, (int64_t[]){1, 0, 2}), TIRX_E_INVALID_ARG,
              "tirx_layout_permute: rank is 3, the layout's rank is 2");
  expect_null(tirx_layout_permute(A, g, 2, (int64_t[]){0, 0}), TIRX_E_INVALID_ARG,
              "tirx_layout_permute: perm (0,0) is not a permutation of 0..1");
  expect_null(tirx_layout_permute(A, g, 2, (int64_t[]){2, 0}), TIRX_E_INVALID_ARG,
              "tirx_layout_permute: perm (2,0) is not a permutation of 0..1");
  expect_null(tirx_layout_permute(A, g, 2, (int64_t[]){-1, 0}), TIRX_E_INVALID_ARG,
              "tirx_layout_permute: perm (-1,0) is not a permutation of 0..1");
  expect_null(tirx_layout_permute(A, g, 2, NULL), TIRX_E_NULL_ARG,
              "tirx_layout_permute: perm is NULL");
  expect_null(tirx_layout_permute(A, NULL, 2, (int64_t[]){1, 0}), TIRX_E_NULL_ARG,
              "tirx_layout_permute: layout is NULL");
  expect_str(tirx_layout_permute(A, g, 2, (int64_t[]){1, 0}), "((6),(2)):((1@m),(6@m))");
}
