/* src/layout/algebra.c: coord, tile recovery, direct sum, pack and unpack, checked against
 * their laws by brute force over every index of random small layouts. */
#include "ops_helpers.h"

static tirx_arena *A;
static void setup(void) { A = tirx_arena_create(); }
static void teardown(void) { tirx_arena_destroy(A); }
TestSuite(algebra, .init = setup, .fini = teardown);

static tirx_layout *random_grouped(uint64_t *seed, int max_nd, bool memory_only, int rank,
                                   int64_t *shape) {
  for (;;) {
    tirx_layout *l = test_random_layout(A, seed, max_nd, memory_only);
    random_shape(seed, tirx_layout_size(l), rank, shape);
    tirx_layout *g = tirx_layout_group(A, l, rank, shape);
    if (g) return g;
  }
}

/* Asserts t(x) = { p + q | p in a(xa), q in b(xb) } (no swizzles). */
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

/* ---- coord ---- */

Test(algebra, coord_digits_rebuild_the_index_and_the_base_point) {
  uint64_t seed = 0xc00d;
  for (int t = 0; t < 300; t++) {
    int rank = (int)test_rand_range(&seed, 1, 3);
    int64_t shape[3];
    tirx_layout *l = t % 4 ? random_grouped(&seed, 5, false, rank, shape)
                           : test_random_layout(A, &seed, 5, false);
    int nd = tirx_layout_num_iters(l), r = tirx_layout_rank(l);
    tirx_iter it[64];
    for (int i = 0; i < nd; i++) tirx_layout_iter(l, i, &it[i]);
    for (int64_t x = 0; x < tirx_layout_size(l); x++) {
      int64_t idx[3] = {x}, dg[64];
      if (r) unravel(x, r, shape, idx);
      int n = -1;
      cr_assert_eq(tirx_layout_coord(l, idx, dg, 64, &n), TIRX_OK, "%s", tirx_last_error());
      cr_assert_eq(n, nd);
      int64_t y = 0;
      tirx_coord want = {{0}};
      for (int ax = 0; ax < TIRX_AXIS_MAX; ax++) want.v[ax] = tirx_layout_offset(l, ax);
      for (int i = 0; i < nd; i++) {
        cr_assert(dg[i] >= 0 && dg[i] < it[i].extent);
        y = y * it[i].extent + dg[i];
        want.v[it[i].axis] += dg[i] * it[i].stride;
      }
      cr_assert_eq(y, x);
      tirx_coord pts[16];
      int64_t cnt;
      cr_assert_eq(tirx_layout_eval(l, x, pts, 16, &cnt), TIRX_OK);
      cr_assert_arr_eq(&pts[0], &want, sizeof want); /* replica 0: D(x) + O */
    }
  }
}

Test(algebra, coord_errors) {
  tirx_layout *l = tirx_layout_row_major(A, 2, (int64_t[]){4, 8});
  int64_t dg[4];
  int n;
  cr_assert_eq(tirx_layout_coord(l, (int64_t[]){3, 5}, dg, 4, &n), TIRX_OK);
  cr_assert_eq(n, 2);
  cr_assert_eq(dg[0], 3);
  cr_assert_eq(dg[1], 5);
  cr_assert_eq(tirx_layout_coord(l, (int64_t[]){1, 9}, dg, 4, &n), TIRX_E_OUT_OF_RANGE);
  cr_assert_str_eq(tirx_last_error(), "tirx_layout_coord: index[1] is 9, outside [0, 8)");
  cr_assert_eq(tirx_layout_coord(l, (int64_t[]){1, 1}, dg, 1, &n), TIRX_E_BUFFER_TOO_SMALL);
  cr_assert_str_eq(tirx_last_error(), "tirx_layout_coord: the layout has 2 iters, cap is 1");
  cr_assert_eq(n, 2);
  cr_assert_eq(tirx_layout_coord(NULL, (int64_t[]){0}, dg, 4, &n), TIRX_E_NULL_ARG);
  cr_assert_str_eq(tirx_last_error(), "tirx_layout_coord: layout is NULL");
  cr_assert_eq(tirx_layout_coord(l, NULL, dg, 4, &n), TIRX_E_NULL_ARG);
  cr_assert_str_eq(tirx_last_error(), "tirx_layout_coord: index is NULL");
  cr_assert_eq(tirx_layout_coord(l, (int64_t[]){0, 0}, dg, 4, NULL), TIRX_E_NULL_ARG);
  cr_assert_str_eq(tirx_last_error(), "tirx_layout_coord: count is NULL");
  tirx_layout *f = tirx_layout_flatten(A, l);
  cr_assert_eq(tirx_layout_coord(f, (int64_t[]){32}, dg, 4, &n), TIRX_E_OUT_OF_RANGE);
  cr_assert_str_eq(tirx_last_error(), "tirx_layout_coord: index 32 outside [0, 32)");
}

/* ---- tile recovery ---- */

Test(algebra, tile_recovery_inverts_tile) {
  uint64_t seed = 0x7113;
  int refused = 0, ok = 0;
  for (int t = 0; t < 400; t++) {
    int rank = (int)test_rand_range(&seed, 1, 2);
    int64_t so[2], si[2];
    tirx_layout *outer = random_grouped(&seed, 3, t % 2 == 0, rank, so);
    tirx_layout *inner = random_grouped(&seed, 3, true, rank, si);
    tirx_layout *l = tirx_layout_tile(A, outer, inner);
    if (!l) continue;
    tirx_layout *o2 = tirx_layout_tile_outer(A, l, inner);
    cr_assert_not_null(o2, "%s", tirx_last_error());
    assert_same_placement(tirx_layout_tile(A, o2, inner), l);
    if (tirx_layout_num_replicas(outer) == 0) {
      tirx_layout *i2 = tirx_layout_tile_inner(A, l, outer);
      cr_assert_not_null(i2, "%s", tirx_last_error());
      assert_same_placement(tirx_layout_tile(A, outer, i2), l);
    }
    /* A random inner of a dividing shape: recovered only when it is the inner factor. */
    tirx_layout *other = random_grouped(&seed, 2, true, rank, si);
    int64_t sl[2];
    tirx_layout_shape(l, sl, 2);
    tirx_clear_error();
    tirx_layout *o3 = tirx_layout_tile_outer(A, l, other);
    if (!o3) {
      cr_assert_eq(tirx_last_status(), TIRX_E_NOT_REPRESENTABLE, "%s", tirx_last_error());
      refused++;
      continue;
    }
    ok++;
    assert_same_placement(tirx_layout_tile(A, o3, other), l);
  }
  cr_assert_gt(refused, 50);
  cr_assert_gt(ok, 5);
}

Test(algebra, tile_recovery_errors) {
  tirx_layout *l = tirx_layout_row_major(A, 2, (int64_t[]){4, 8});
  tirx_layout *in = tirx_layout_row_major(A, 2, (int64_t[]){2, 4});
  /* Row-major (4,8) is the dense tiling of a (2,4) tile only when the tile's rows are 8 apart. */
  expect_null(tirx_layout_tile_outer(A, l, in), TIRX_E_NOT_REPRESENTABLE,
              "tirx_layout_tile_outer: the layout is not a tiling with this inner: its inner "
              "half is ((2),(4)):((8@m),(1@m)), inner is ((2),(4)):((4@m),(1@m))");
  tirx_layout *in8 = tirx_layout_strided(A, 2, (int64_t[]){2, 4}, (int64_t[]){8, 1});
  expect_str(tirx_layout_tile_outer(A, l, in8), "((2),(2)):((16@m),(4@m))");
  expect_str(tirx_layout_tile_inner(A, l, tirx_layout_strided(A, 2, (int64_t[]){2, 2},
                                                              (int64_t[]){16, 4})),
             "((2),(4)):((8@m),(1@m))");
  expect_null(tirx_layout_tile_outer(A, l, tirx_layout_row_major(A, 2, (int64_t[]){3, 4})),
              TIRX_E_NOT_REPRESENTABLE,
              "tirx_layout_tile_outer: dim 0 of the layout has extent 4, not a multiple of "
              "inner's 3");
  expect_null(tirx_layout_tile_inner(A, l, tirx_layout_row_major(A, 1, (int64_t[]){4})),
              TIRX_E_INVALID_ARG, "tirx_layout_tile_inner: layout has rank 2, outer has rank 1");
  expect_null(tirx_layout_tile_outer(A, tirx_layout_flatten(A, l), in), TIRX_E_INVALID_ARG,
              "tirx_layout_tile_outer: layout is not grouped (it has no logical shape)");
  tirx_layout *sw = tirx_layout_swizzle(A, in8, 32, 2);
  expect_null(tirx_layout_tile_outer(A, l, sw), TIRX_E_INVALID_ARG,
              "tirx_layout_tile_outer: inner has a swizzle; only the recovered half may");
  expect_null(tirx_layout_tile_outer(A, l, NULL), TIRX_E_NULL_ARG,
              "tirx_layout_tile_outer: inner is NULL");
  expect_null(tirx_layout_tile_inner(NULL, l, in), TIRX_E_NULL_ARG,
              "tirx_layout_tile_inner: arena is NULL");
}

/* ---- direct sum ---- */

Test(algebra, direct_sum_adds_the_operands) {
  uint64_t seed = 0xd5;
  for (int t = 0; t < 300; t++) {
    int64_t sx[2], sy[2];
    int rx = (int)test_rand_range(&seed, 1, 2), ry = (int)test_rand_range(&seed, 1, 2);
    tirx_layout *x = t % 3 ? random_grouped(&seed, 3, false, rx, sx)
                           : test_random_layout(A, &seed, 3, false);
    tirx_layout *y = random_grouped(&seed, 3, false, ry, sy);
    tirx_layout *s = tirx_layout_direct_sum(A, x, y);
    cr_assert_not_null(s, "%s", tirx_last_error());
    int64_t nx = tirx_layout_size(x), ny = tirx_layout_size(y);
    cr_assert_eq(tirx_layout_size(s), nx * ny);
    cr_assert_eq(tirx_layout_rank(s), (tirx_layout_rank(x) ? rx : 1) + ry);
    for (int64_t i = 0; i < nx; i++)
      for (int64_t j = 0; j < ny; j++) assert_sum_set(s, i * ny + j, x, i, y, j);
    tirx_layout *a, *b;
    int k = tirx_layout_rank(x) ? rx : 1;
    cr_assert_eq(tirx_layout_direct_sum_split(A, s, k, &a, &b), TIRX_OK, "%s", tirx_last_error());
    assert_same_placement(tirx_layout_direct_sum(A, a, b), s);
  }
}

Test(algebra, direct_sum_errors) {
  tirx_layout *l = tirx_layout_row_major(A, 2, (int64_t[]){4, 8});
  expect_str(tirx_layout_direct_sum(A, l, tirx_layout_parse(A, "(3):(1@warpid)+2@warpid")),
             "((4),(8),(3)):((8@m),(1@m),(1@warpid))+2@warpid");
  expect_null(tirx_layout_direct_sum(A, l, tirx_layout_swizzle(A, l, 32, 2)), TIRX_E_INVALID_ARG,
              "tirx_layout_direct_sum: y is swizzled (a swizzle does not distribute over a sum)");
  expect_null(tirx_layout_direct_sum(A, NULL, l), TIRX_E_NULL_ARG,
              "tirx_layout_direct_sum: x is NULL");
  tirx_layout *a = NULL, *b = NULL;
  cr_assert_eq(tirx_layout_direct_sum_split(A, l, 2, &a, &b), TIRX_E_INVALID_ARG);
  cr_assert_str_eq(tirx_last_error(), "tirx_layout_direct_sum_split: k is 2, the layout's rank "
                   "is 2: expected 1 <= k < rank");
  cr_assert_null(a);
  cr_assert_eq(tirx_layout_direct_sum_split(A, l, 1, NULL, &b), TIRX_E_NULL_ARG);
  cr_assert_str_eq(tirx_last_error(), "tirx_layout_direct_sum_split: x is NULL");
  cr_assert_eq(tirx_layout_direct_sum_split(A, l, 1, &a, &b), TIRX_OK);
  expect_str(a, "((4)):((8@m))");
  expect_str(b, "((8)):((1@m))");
}

/* ---- pack / unpack ---- */

/* The law of unpack: u(x * f + i) lists, replica by replica, l(x)'s points with the axis
 * coordinate c turned into c * f + i. */
static void assert_unpacked(const tirx_layout *u, const tirx_layout *l, tirx_axis axis,
                            int64_t f) {
  cr_assert_eq(tirx_layout_size(u), tirx_layout_size(l) * f);
  for (int64_t x = 0; x < tirx_layout_size(l); x++)
    for (int64_t i = 0; i < f; i++) {
      tirx_coord pl[16], pu[16];
      int64_t nl, nu;
      cr_assert_eq(tirx_layout_eval(l, x, pl, 16, &nl), TIRX_OK);
      cr_assert_eq(tirx_layout_eval(u, x * f + i, pu, 16, &nu), TIRX_OK);
      cr_assert_eq(nl, nu);
      for (int64_t p = 0; p < nl; p++) {
        pl[p].v[axis] = pl[p].v[axis] * f + i;
        cr_assert_arr_eq(&pl[p], &pu[p], sizeof pl[p], "x=%lld i=%lld", (long long)x,
                         (long long)i);
      }
    }
}

Test(algebra, pack_and_unpack_are_inverse_and_meet_their_laws) {
  uint64_t seed = 0x9ac;
  static const tirx_axis axes[] = {TIRX_AXIS_M, TIRX_AXIS_REG};
  int packed = 0, refused = 0;
  for (int t = 0; t < 400; t++) {
    int rank = (int)test_rand_range(&seed, 1, 2);
    int64_t shape[2];
    tirx_layout *l = t % 3 ? random_grouped(&seed, 4, false, rank, shape)
                           : test_random_layout(A, &seed, 4, false);
    tirx_axis axis = axes[t % 2];
    int64_t f = test_rand_range(&seed, 1, 4);
    tirx_layout *u = tirx_layout_unpack(A, l, axis, f);
    cr_assert_not_null(u, "%s", tirx_last_error());
    assert_unpacked(u, l, axis, f);
    tirx_layout *p = tirx_layout_pack(A, u, axis, f);
    cr_assert_not_null(p, "%s", tirx_last_error());
    assert_same_placement(p, l);
    /* pack of an arbitrary layout: when it succeeds, unpack gives the layout back. */
    tirx_clear_error();
    tirx_layout *q = tirx_layout_pack(A, l, axis, f);
    if (!q) {
      cr_assert_eq(tirx_last_status(), TIRX_E_NOT_REPRESENTABLE, "%s", tirx_last_error());
      refused++;
      continue;
    }
    packed++;
    assert_unpacked(l, q, axis, f);
  }
  cr_assert_gt(refused, 100);
  cr_assert_gt(packed, 100);
}

Test(algebra, pack_bf16_pairs_into_registers) {
  /* The mma C fragment holds (16,8) f32 over (laneid, reg); as 2 x bf16 per 32-bit register
   * the pairs of adjacent columns share one register. */
  tirx_layout *c = tirx_layout_mma_m16n8k16_c(A);
  tirx_layout *p = tirx_layout_pack(A, c, TIRX_AXIS_REG, 2);
  cr_assert_not_null(p, "%s", tirx_last_error());
  assert_unpacked(c, p, TIRX_AXIS_REG, 2);
  int64_t shape[2];
  tirx_layout_shape(p, shape, 2);
  cr_assert_eq(shape[0], 16);
  cr_assert_eq(shape[1], 4);
  /* 16 bytes of bf16 as one vector on m: 8 elements. */
  tirx_layout *m = tirx_layout_row_major(A, 2, (int64_t[]){4, 64});
  expect_str(tirx_layout_pack(A, m, TIRX_AXIS_M, 8), "((4),(8)):((8@m),(1@m))");
}

Test(algebra, pack_errors) {
  tirx_layout *l = tirx_layout_parse(A, "(4,6):(1@m,2@reg)");
  expect_null(tirx_layout_pack(A, l, TIRX_AXIS_REG, 2), TIRX_E_NOT_REPRESENTABLE,
              "tirx_layout_pack: the innermost iter (6):(2@reg) is not 2 or a multiple of it "
              "with stride 1@reg");
  tirx_layout *l2 = tirx_layout_parse(A, "(3,4):(6@m,1@m)");
  expect_null(tirx_layout_pack(A, l2, TIRX_AXIS_M, 4), TIRX_E_NOT_REPRESENTABLE,
              "tirx_layout_pack: iter 0 has stride 6@m, not a multiple of 4");
  expect_null(tirx_layout_pack(A, tirx_layout_parse(A, "(4):(1@m)+2@m"), TIRX_AXIS_M, 4),
              TIRX_E_NOT_REPRESENTABLE,
              "tirx_layout_pack: the offset 2@m is not a multiple of 4");
  expect_null(tirx_layout_pack(A, tirx_layout_parse(A, "(4):(1@m)+[2:2@m]"), TIRX_AXIS_M, 4),
              TIRX_E_NOT_REPRESENTABLE,
              "tirx_layout_pack: replica 0 has stride 2@m, not a multiple of 4");
  tirx_layout *g = tirx_layout_group(A, tirx_layout_parse(A, "(8):(1@m)"), 2, (int64_t[]){8, 1});
  expect_null(tirx_layout_pack(A, g, TIRX_AXIS_M, 2), TIRX_E_NOT_REPRESENTABLE,
              "tirx_layout_pack: the last dimension has extent 1, not a multiple of 2");
  tirx_layout *sw = tirx_layout_swizzle(A, tirx_layout_row_major(A, 2, (int64_t[]){8, 64}), 128, 2);
  expect_null(tirx_layout_pack(A, sw, TIRX_AXIS_M, 2), TIRX_E_NOT_REPRESENTABLE,
              "tirx_layout_pack: the layout is swizzled: compose the swizzle after changing the "
              "element width");
  expect_null(tirx_layout_unpack(A, l, TIRX_AXIS_M, 0), TIRX_E_INVALID_ARG,
              "tirx_layout_unpack: factor is 0, expected >= 1");
  expect_null(tirx_layout_unpack(A, l, (tirx_axis)31, 2), TIRX_E_UNKNOWN_AXIS,
              "tirx_layout_unpack: axis 31 is not an axis");
  expect_null(tirx_layout_unpack(A, tirx_layout_parse(A, "(2):(4611686018427387904@m)"),
                                 TIRX_AXIS_M, 2),
              TIRX_E_OVERFLOW, "tirx_layout_unpack: a coordinate times 2 overflows int64");
  expect_null(tirx_layout_pack(A, NULL, TIRX_AXIS_M, 2), TIRX_E_NULL_ARG,
              "tirx_layout_pack: layout is NULL");
  expect_null(tirx_layout_unpack(NULL, l, TIRX_AXIS_M, 2), TIRX_E_NULL_ARG,
              "tirx_layout_unpack: arena is NULL");
}
