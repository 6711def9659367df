/* src/layout/ops.c: slice, checked by brute force over every index of every region. */
#include "ops_helpers.h"

static tirx_arena *A;
static void setup(void) { A = tirx_arena_create(); }
static void teardown(void) { tirx_arena_destroy(A); }
TestSuite(slice, .init = setup, .fini = teardown);

static tirx_layout *slice2(tirx_layout *l, int64_t s0, int64_t s1, int64_t b0, int64_t b1,
                           int64_t e0, int64_t e1) {
  return tirx_layout_slice(A, l, 2, (int64_t[]){s0, s1}, (int64_t[]){b0, b1},
                           (int64_t[]){e0, e1});
}

/* The law: element y of the region is element begin + y of l grouped to shape. */
static void assert_slice_law(const tirx_layout *s, const tirx_layout *l, int rank,
                             const int64_t *shape, const int64_t *begin, const int64_t *extent) {
  int64_t got[TIRX_LAYOUT_MAX_RANK];
  cr_assert_eq(tirx_layout_rank(s), rank);
  cr_assert_eq(tirx_layout_shape(s, got, TIRX_LAYOUT_MAX_RANK), TIRX_OK);
  for (int k = 0; k < rank; k++) cr_assert_eq(got[k], extent[k]);
  cr_assert_eq(tirx_layout_swizzle_bytes(s), tirx_layout_swizzle_bytes(l));
  for (int64_t y = 0; y < tirx_layout_size(s); y++) {
    int64_t idx[TIRX_LAYOUT_MAX_RANK];
    unravel(y, rank, extent, idx);
    for (int k = 0; k < rank; k++) idx[k] += begin[k];
    int64_t x = ravel(rank, shape, idx);
    if (!test_same_points(s, y, l, x)) {
      char *a = tirx_layout_str(l), *b = tirx_layout_str(s);
      cr_assert_fail("slice %s of %s differs at y=%lld", b, a, (long long)y);
    }
  }
}

/*
 * The model, rebuilt from the public API: the iters of dimension k of l grouped to shape
 * (extent-1 iters dropped, neighbours merged when outer stride = inner extent * inner stride
 * on one axis), as extents inner first. Returns the count.
 */
static int dim_digits(const tirx_layout *g, int rank, const int64_t *shape, int k, int64_t *ext) {
  tirx_iter it[80];
  int n = 0, dim = rank - 1;
  int64_t have = 1;
  for (int i = tirx_layout_num_iters(g) - 1; i >= 0; i--) {
    tirx_iter t;
    tirx_layout_iter(g, i, &t);
    if (t.extent == 1) continue;
    while (have == shape[dim]) dim--, have = 1;
    have *= t.extent;
    if (dim != k) continue;
    if (n > 0 && t.axis == it[n - 1].axis && t.stride == it[n - 1].extent * it[n - 1].stride) {
      it[n - 1].extent *= t.extent;
    } else {
      it[n++] = t;
    }
  }
  for (int i = 0; i < n; i++) ext[i] = it[i].extent;
  return n;
}

/* True when [b, b+e) is a box in the mixed radix ext (inner first): the digits take every
 * combination of a range per position. */
static bool is_box(const int64_t *ext, int n, int64_t b, int64_t e) {
  int64_t lo[80], hi[80];
  for (int p = 0; p < n; p++) lo[p] = INT64_MAX, hi[p] = -1;
  for (int64_t x = b; x < b + e; x++) {
    int64_t v = x;
    for (int p = 0; p < n; p++) {
      int64_t dgt = v % ext[p];
      v /= ext[p];
      if (dgt < lo[p]) lo[p] = dgt;
      if (dgt > hi[p]) hi[p] = dgt;
    }
  }
  int64_t count = 1;
  for (int p = 0; p < n; p++) count *= hi[p] - lo[p] + 1;
  return count == e;
}

/* The first point (replica 0, before any swizzle: tests use unswizzled layouts) of x. */
static tirx_coord first_point(const tirx_layout *l, int64_t x) {
  tirx_coord all[64];
  int64_t n;
  cr_assert_eq(tirx_layout_eval(l, x, all, 64, &n), TIRX_OK);
  return all[0];
}

/* Brute force: whether the run p[0..n) is a layout (no replicas), i.e. some innermost factor
 * f | n, f >= 2, has p[j] = p[j - j % f] + (j % f) * (p[1] - p[0]) with p[1] - p[0] on one
 * axis, and the run p[0], p[f], p[2f], ... is a layout again. Every factorization is tried. */
static bool run_is_layout(const tirx_coord *p, int64_t n) {
  if (n == 1) return true;
  int axes = 0;
  for (int ax = 0; ax < TIRX_AXIS_MAX; ax++) axes += p[1].v[ax] != p[0].v[ax];
  if (axes > 1) return false;
  for (int64_t f = 2; f <= n; f++) {
    if (n % f) continue;
    bool ok = true;
    for (int64_t j = 0; j < n && ok; j++)
      for (int ax = 0; ax < TIRX_AXIS_MAX && ok; ax++)
        ok = p[j].v[ax] - p[j - j % f].v[ax] == (j % f) * (p[1].v[ax] - p[0].v[ax]);
    if (!ok) continue;
    tirx_coord q[64];
    for (int64_t u = 0; u < n / f; u++) q[u] = p[u * f];
    if (run_is_layout(q, n / f)) return true;
  }
  return false;
}

/* Brute force: whether the region of l grouped to shape is a layout: the slice is a sum over
 * dimensions, so it is one exactly when the run of every dimension (the others at begin) is. */
static bool region_is_layout(const tirx_layout *l, int rank, const int64_t *shape,
                             const int64_t *begin, const int64_t *extent) {
  for (int k = 0; k < rank; k++) {
    tirx_coord p[64];
    cr_assert_leq(extent[k], 64);
    for (int64_t j = 0; j < extent[k]; j++) {
      int64_t idx[TIRX_LAYOUT_MAX_RANK];
      for (int q = 0; q < rank; q++) idx[q] = begin[q];
      idx[k] += j;
      p[j] = first_point(l, ravel(rank, shape, idx));
    }
    if (!run_is_layout(p, extent[k])) return false;
  }
  return true;
}

Test(slice, paper_example_on_m) {
  /* (2,8,3,8):(192,8,64,1) as a (16, 24) tensor: rows ((2,8):(192,8)), cols ((3,8):(64,1)). */
  tirx_iter d[] = {{2, 192, TIRX_AXIS_M}, {8, 8, TIRX_AXIS_M}, {3, 64, TIRX_AXIS_M},
                   {8, 1, TIRX_AXIS_M}};
  tirx_layout *l = tirx_layout_new(A, 4, d, 0, NULL, 0, NULL);
  expect_str(slice2(l, 16, 24, 8, 8, 8, 8), "((8),(8)):((8@m),(1@m))+256@m");
  expect_str(slice2(l, 16, 24, 0, 0, 16, 8), "((2,8),(8)):((192@m,8@m),(1@m))");
  expect_str(slice2(l, 16, 24, 4, 0, 4, 24), "((4),(3,8)):((8@m),(64@m,1@m))+32@m");
  expect_str(slice2(l, 16, 24, 3, 17, 2, 3), "((2),(3)):((8@m),(1@m))+153@m");
  expect_str(slice2(l, 16, 24, 5, 7, 1, 1), "((),()):((),())+47@m");
  expect_str(slice2(l, 16, 24, 0, 0, 16, 24), "((2,8),(3,8)):((192@m,8@m),(64@m,1@m))");
  int64_t shape[2] = {16, 24};
  for (int64_t b0 = 0; b0 < 16; b0 += 3)
    for (int64_t e0 = 1; b0 + e0 <= 16; e0 += 2)
      for (int64_t b1 = 0; b1 < 24; b1 += 5)
        for (int64_t e1 = 1; b1 + e1 <= 24; e1 += 3) {
          int64_t begin[2] = {b0, b1}, extent[2] = {e0, e1};
          tirx_layout *s = tirx_layout_slice(A, l, 2, shape, begin, extent);
          if (s) assert_slice_law(s, l, 2, shape, begin, extent);
        }
}

Test(slice, merges_iters_that_one_iter_can_express) {
  tirx_iter d[] = {{2, 4, TIRX_AXIS_M}, {4, 1, TIRX_AXIS_M}};
  tirx_layout *l = tirx_layout_new(A, 2, d, 0, NULL, 0, NULL);
  tirx_layout *s = tirx_layout_slice(A, l, 1, (int64_t[]){8}, (int64_t[]){2}, (int64_t[]){4});
  expect_str(s, "((4)):((1@m))+2@m");
  /* On different axes the same region wraps the lane iter. */
  tirx_iter d2[] = {{2, 4, TIRX_AXIS_M}, {4, 1, TIRX_AXIS_LANEID}};
  tirx_layout *l2 = tirx_layout_new(A, 2, d2, 0, NULL, 0, NULL);
  expect_null(tirx_layout_slice(A, l2, 1, (int64_t[]){8}, (int64_t[]){2}, (int64_t[]){4}),
              TIRX_E_NOT_REPRESENTABLE,
              "tirx_layout_slice: region dim 0 [2, 6) wraps around iter "
              "(4):(1@laneid) and is not a layout");
}

Test(slice, paper_distributed_sharding_per_device) {
  /* S0S1: (2,32,2,64):(1@pid,128@m,2@pid,1@m) over a 2x2 mesh; device r + 2c holds rows
   * [32r, 32r+32) and columns [64c, 64c+64) at m = 128 (i % 32) + j % 64. */
  tirx_iter d[] = {{2, 1, TIRX_AXIS_PID}, {32, 128, TIRX_AXIS_M}, {2, 2, TIRX_AXIS_PID},
                   {64, 1, TIRX_AXIS_M}};
  tirx_layout *l = tirx_layout_new(A, 4, d, 0, NULL, 0, NULL);
  expect_str(tirx_layout_group(A, l, 2, (int64_t[]){64, 128}),
             "((2,32),(2,64)):((1@pid,128@m),(2@pid,1@m))");
  static const char *want[4] = {"((32),(64)):((128@m),(1@m))",
                                "((32),(64)):((128@m),(1@m))+1@pid",
                                "((32),(64)):((128@m),(1@m))+2@pid",
                                "((32),(64)):((128@m),(1@m))+3@pid"};
  for (int64_t r = 0; r < 2; r++)
    for (int64_t c = 0; c < 2; c++) {
      tirx_layout *s = slice2(l, 64, 128, 32 * r, 64 * c, 32, 64);
      expect_str(s, want[r + 2 * c]);
      assert_slice_law(s, l, 2, (int64_t[]){64, 128}, (int64_t[]){32 * r, 64 * c},
                       (int64_t[]){32, 64});
    }
  /* S0R: (2,32,128):(1@pid,128@m,1@m)+[2:2@pid]: rows split over pid bit 0, replicated over
   * pid bit 1. */
  tirx_iter d2[] = {{2, 1, TIRX_AXIS_PID}, {32, 128, TIRX_AXIS_M}, {128, 1, TIRX_AXIS_M}};
  tirx_iter r2[] = {{2, 2, TIRX_AXIS_PID}};
  tirx_layout *l2 = tirx_layout_new(A, 3, d2, 1, r2, 0, NULL);
  expect_str(tirx_layout_group(A, l2, 2, (int64_t[]){64, 128}),
             "((2,32),(128)):((1@pid,128@m),(1@m))+[2:2@pid]");
  tirx_layout *s1 = slice2(l2, 64, 128, 32, 0, 32, 128);
  expect_str(s1, "((32),(128)):((128@m),(1@m))+[2:2@pid]+1@pid");
  assert_slice_law(s1, l2, 2, (int64_t[]){64, 128}, (int64_t[]){32, 0}, (int64_t[]){32, 128});
  tirx_layout *s2 = slice2(l2, 64, 128, 0, 64, 32, 64);
  expect_str(s2, "((32),(64)):((128@m),(1@m))+[2:2@pid]+64@m");
  for (int64_t i = 0; i < 32; i++)
    for (int64_t j = 0; j < 64; j++) {
      tirx_coord pts[2];
      int64_t n, idx[2] = {i, j};
      cr_assert_eq(tirx_layout_eval_nd(s2, idx, pts, 2, &n), TIRX_OK);
      cr_assert_eq(n, 2);
      for (int k = 0; k < 2; k++) {
        cr_assert_eq(pts[k].v[TIRX_AXIS_PID], 2 * k);
        cr_assert_eq(pts[k].v[TIRX_AXIS_M], 128 * i + 64 + j);
      }
    }
  /* Rows [16, 48) cross the pid iter. */
  expect_null(slice2(l2, 64, 128, 16, 0, 32, 128), TIRX_E_NOT_REPRESENTABLE,
              "tirx_layout_slice: region dim 0 [16, 48) wraps around iter "
              "(32):(128@m) and is not a layout");
}

Test(slice, paper_native_memories) {
  tirx_axis P, F, lane, col;
  cr_assert_eq(tirx_axis_register("P", &P), TIRX_OK);
  cr_assert_eq(tirx_axis_register("F", &F), TIRX_OK);
  cr_assert_eq(tirx_axis_register("Lane", &lane), TIRX_OK);
  cr_assert_eq(tirx_axis_register("Col", &col), TIRX_OK);
  tirx_iter sp[] = {{2, 512, F}, {128, 1, P}, {512, 1, F}};
  tirx_layout *l = tirx_layout_new(A, 3, sp, 0, NULL, 0, NULL);
  expect_str(slice2(l, 256, 512, 128, 0, 128, 512), "((128),(512)):((1@P),(1@F))+512@F");
  expect_str(slice2(l, 256, 512, 0, 256, 256, 256),
             "((2,128),(256)):((512@F,1@P),(1@F))+256@F");
  tirx_layout *s = slice2(l, 256, 512, 100, 300, 28, 200);
  expect_str(s, "((28),(200)):((1@P),(1@F))+100@P+300@F");
  assert_slice_law(s, l, 2, (int64_t[]){256, 512}, (int64_t[]){100, 300}, (int64_t[]){28, 200});
  expect_null(slice2(l, 256, 512, 64, 0, 128, 512), TIRX_E_NOT_REPRESENTABLE,
              "tirx_layout_slice: region dim 0 [64, 192) wraps around iter "
              "(128):(1@P) and is not a layout");

  tirx_iter tm[] = {{2, 112, col}, {128, 1, lane}, {112, 1, col}};
  tirx_layout *t = tirx_layout_new(A, 3, tm, 0, NULL, 0, NULL);
  tirx_layout *ts = slice2(t, 256, 112, 128, 16, 128, 64);
  expect_str(ts, "((128),(64)):((1@Lane),(1@Col))+128@Col");
  assert_slice_law(ts, t, 2, (int64_t[]){256, 112}, (int64_t[]){128, 16}, (int64_t[]){128, 64});
  /* Grouped to (2, 128, 112), slicing the first dimension fixes the column block. */
  expect_str(tirx_layout_slice(A, t, 3, (int64_t[]){2, 128, 112}, (int64_t[]){1, 32, 0},
                               (int64_t[]){1, 64, 112}),
             "((),(64),(112)):((),(1@Lane),(1@Col))+32@Lane+112@Col");
}

Test(slice, the_24x24_column_major_layout) {
  tirx_iter d[] = {{24, 1, TIRX_AXIS_M}, {24, 24, TIRX_AXIS_M}};
  tirx_layout *l = tirx_layout_new(A, 2, d, 0, NULL, 0, NULL);
  tirx_layout *s = slice2(l, 24, 24, 8, 6, 8, 12);
  expect_str(s, "((8),(12)):((1@m),(24@m))+152@m");
  for (int64_t i = 0; i < 8; i++)
    for (int64_t j = 0; j < 12; j++) {
      int64_t idx[2] = {i, j}, n;
      tirx_coord pt;
      cr_assert_eq(tirx_layout_eval_nd(s, idx, &pt, 1, &n), TIRX_OK);
      cr_assert_eq(pt.v[TIRX_AXIS_M], (8 + i) + 24 * (6 + j));
    }
  /* Every region of the 24x24 tensor is a box: all 90000 slices succeed. */
  int64_t shape[2] = {24, 24};
  for (int64_t b0 = 0; b0 < 24; b0++)
    for (int64_t e0 = 1; b0 + e0 <= 24; e0++)
      for (int64_t b1 = 0; b1 < 24; b1 += 7)
        for (int64_t e1 = 1; b1 + e1 <= 24; e1 += 4) {
          int64_t begin[2] = {b0, b1}, extent[2] = {e0, e1};
          tirx_layout *r = tirx_layout_slice(A, l, 2, shape, begin, extent);
          cr_assert_not_null(r, "%s", tirx_last_error());
          if (b0 % 5 == 0 && e0 % 3 == 0) assert_slice_law(r, l, 2, shape, begin, extent);
        }
  /* Transposed, the region swaps its coordinates. */
  tirx_layout *t =
      tirx_layout_permute(A, tirx_layout_group(A, l, 2, shape), 2, (int64_t[]){1, 0});
  expect_str(tirx_layout_slice(A, t, 2, shape, (int64_t[]){6, 8}, (int64_t[]){12, 8}),
             "((12),(8)):((24@m),(1@m))+152@m");
  /* Grouped finer, (4,6,24): a region of whole rows of the 4x6 split. */
  tirx_layout *f = tirx_layout_slice(A, l, 3, (int64_t[]){4, 6, 24}, (int64_t[]){1, 0, 3},
                                     (int64_t[]){2, 6, 5});
  expect_str(f, "((2),(6),(5)):((6@m),(1@m),(24@m))+78@m");
  assert_slice_law(f, l, 3, (int64_t[]){4, 6, 24}, (int64_t[]){1, 0, 3}, (int64_t[]){2, 6, 5});
}

Test(slice, keeps_the_swizzle_on_the_absolute_address) {
  /* A 128-byte swizzled (16, 64) bf16 tile; the lower 8 rows and a 16-column strip. */
  tirx_layout *l = tirx_layout_swizzle(A, tirx_layout_row_major(A, 2, (int64_t[]){16, 64}), 128, 2);
  tirx_layout *s = slice2(l, 16, 64, 8, 16, 8, 16);
  expect_str(s, "((8),(16)):((64@m),(1@m))+528@m^sw(128,2)");
  for (int64_t i = 0; i < 8; i++)
    for (int64_t j = 0; j < 16; j++) {
      int64_t m;
      cr_assert_eq(tirx_layout_eval_m(s, i * 16 + j, &m), TIRX_OK);
      cr_assert_eq(m, tirx_swizzle_apply(128, 2, (8 + i) * 64 + 16 + j));
    }
}

Test(slice, matches_brute_force_on_random_layouts) {
  uint64_t seed = 0x511ce;
  int ok = 0, refused = 0, aligned = 0, wrapped = 0;
  for (int t = 0; t < 900; t++) {
    tirx_layout *l = test_random_layout(A, &seed, 5, false);
    if (t % 4 == 0) l = tirx_layout_swizzle(A, l, 64, 2);
    int rank = (int)test_rand_range(&seed, 1, 3);
    int64_t shape[3], begin[3], extent[3];
    random_shape(&seed, tirx_layout_size(l), rank, shape);
    tirx_layout *g = tirx_layout_group(A, l, rank, shape);
    if (!g) continue;
    for (int trial = 0; trial < 6; trial++) {
      int mode = trial % 3; /* 0 random, 1 whole, 2 aligned to one iter of the model */
      bool box = true;
      for (int k = 0; k < rank; k++) {
        int64_t ext[80];
        int n = dim_digits(g, rank, shape, k, ext);
        if (mode == 0) {
          begin[k] = test_rand_range(&seed, 0, shape[k] - 1);
          extent[k] = test_rand_range(&seed, 1, shape[k] - begin[k]);
        } else if (mode == 1 || n == 0) {
          begin[k] = 0;
          extent[k] = shape[k];
        } else {
          /* Whole iters below p, a run of u digits of iter p, fixed digits above. */
          int p = (int)(test_rand(&seed) % (uint64_t)n);
          int64_t below = 1, above = shape[k];
          for (int q = 0; q < p; q++) below *= ext[q];
          above /= below * ext[p];
          int64_t v = test_rand_range(&seed, 0, ext[p] - 1);
          int64_t u = test_rand_range(&seed, 1, ext[p] - v);
          begin[k] = (test_rand_range(&seed, 0, above - 1) * ext[p] + v) * below;
          extent[k] = u * below;
        }
        if (!is_box(ext, n, begin[k], extent[k])) box = false;
      }
      if (mode != 0) cr_assert(box, "the generator made a region that is not a box");
      tirx_clear_error();
      tirx_layout *s = tirx_layout_slice(A, l, rank, shape, begin, extent);
      if (!s) {
        cr_assert_eq(tirx_last_status(), TIRX_E_NOT_REPRESENTABLE, "%s", tirx_last_error());
        cr_assert(!box, "refused a representable region: %s", tirx_last_error());
        refused++;
        continue;
      }
      ok++;
      wrapped += !box;
      aligned += mode == 2;
      cr_assert_eq(tirx_layout_num_replicas(s), tirx_layout_num_replicas(l));
      assert_slice_law(s, l, rank, shape, begin, extent);
    }
  }
  cr_assert_gt(ok, 2000);
  cr_assert_gt(aligned, 700);
  cr_assert_gt(wrapped, 10);
  cr_assert_gt(refused, 100);
}

Test(slice, bad_input_is_reported) {
  tirx_layout *l = tirx_layout_row_major(A, 2, (int64_t[]){16, 8});
  expect_null(slice2(l, 16, 8, 0, 4, 16, 8), TIRX_E_OUT_OF_RANGE,
              "tirx_layout_slice: region dim 1 [4, 12) exceeds extent 8");
  expect_null(slice2(l, 16, 8, 16, 0, 1, 8), TIRX_E_OUT_OF_RANGE,
              "tirx_layout_slice: region dim 0 [16, 17) exceeds extent 16");
  expect_null(slice2(l, 16, 8, INT64_MAX, 0, 2, 8), TIRX_E_OUT_OF_RANGE,
              "tirx_layout_slice: region dim 0 [9223372036854775807, 9223372036854775809) "
              "exceeds extent 16");
  expect_null(slice2(l, 16, 8, 0, 0, INT64_MAX, 8), TIRX_E_OUT_OF_RANGE,
              "tirx_layout_slice: region dim 0 [0, 9223372036854775807) exceeds extent 16");
  expect_null(slice2(l, 16, 8, -1, 0, 1, 8), TIRX_E_INVALID_ARG,
              "tirx_layout_slice: begin[0] is -1, expected >= 0");
  expect_null(slice2(l, 16, 8, 0, 0, 1, 0), TIRX_E_INVALID_ARG,
              "tirx_layout_slice: extent[1] is 0, expected >= 1");
  expect_null(slice2(l, 16, 0, 0, 0, 1, 1), TIRX_E_INVALID_ARG,
              "tirx_layout_slice: shape[1] is 0, expected >= 1");
  expect_null(tirx_layout_slice(A, l, 1, (int64_t[]){16}, (int64_t[]){0}, (int64_t[]){1}),
              TIRX_E_INVALID_ARG, "tirx_layout_slice: shape (16) has 16 elements, the layout has 128");
  expect_null(tirx_layout_slice(A, l, 0, (int64_t[]){16}, (int64_t[]){0}, (int64_t[]){1}),
              TIRX_E_INVALID_ARG, "tirx_layout_slice: rank is 0, expected 1 to 16");
  expect_null(tirx_layout_slice(A, l, 2, (int64_t[]){16, 8}, NULL, (int64_t[]){1, 1}),
              TIRX_E_NULL_ARG, "tirx_layout_slice: begin is NULL");
  expect_null(tirx_layout_slice(A, l, 2, (int64_t[]){16, 8}, (int64_t[]){1, 1}, NULL),
              TIRX_E_NULL_ARG, "tirx_layout_slice: extent is NULL");
  expect_null(tirx_layout_slice(A, l, 2, NULL, (int64_t[]){1, 1}, (int64_t[]){1, 1}),
              TIRX_E_NULL_ARG, "tirx_layout_slice: shape is NULL");
  expect_null(slice2(NULL, 16, 8, 0, 0, 1, 1), TIRX_E_NULL_ARG,
              "tirx_layout_slice: layout is NULL");
  expect_null(tirx_layout_slice(NULL, l, 2, (int64_t[]){16, 8}, (int64_t[]){0, 0},
                                (int64_t[]){1, 1}),
              TIRX_E_NULL_ARG, "tirx_layout_slice: arena is NULL");
  tirx_iter d[] = {{2, 6, TIRX_AXIS_M}, {6, 1, TIRX_AXIS_M}};
  tirx_layout *l2 = tirx_layout_new(A, 2, d, 0, NULL, 0, NULL);
  expect_null(slice2(l2, 3, 4, 0, 0, 1, 1), TIRX_E_NOT_REPRESENTABLE,
              "tirx_layout_slice: (2,6) cannot be grouped to (3,4)");
}

/* A region that wraps an iter is split (paper 5.1) when its elements are a layout, and refused
 * exactly when brute force finds no layout for them: every run of every 1-D grouping of random
 * small layouts, and random regions of 2-D ones. */
Test(slice, wrapping_regions_are_sliced_exactly_when_they_are_layouts) {
  uint64_t seed = 0x3a9;
  int ok = 0, refused = 0, wrapped = 0;
  for (int t = 0; t < 400; t++) {
    tirx_layout *l = test_random_layout(A, &seed, 4, t % 3 == 0);
    int64_t size = tirx_layout_size(l);
    if (size > 64 * 64) continue;
    int rank = size <= 64 ? 1 : 2;
    int64_t shape[2];
    random_shape(&seed, size, rank, shape);
    if (rank == 2 && (shape[0] > 64 || shape[1] > 64)) continue;
    if (!tirx_layout_group(A, l, rank, shape)) continue;
    for (int trial = 0; trial < (rank == 1 ? 1 : 40); trial++) {
      int64_t b0 = 0, e0 = 1, b1, e1;
      if (rank == 2) {
        b0 = test_rand_range(&seed, 0, shape[0] - 1);
        e0 = test_rand_range(&seed, 1, shape[0] - b0);
      }
      int64_t n = shape[rank - 1];
      for (b1 = 0; b1 < n; b1++)
        for (e1 = 1; b1 + e1 <= n; e1++) {
          if (rank == 2 && test_rand(&seed) % 8) continue;
          int64_t begin[2] = {b0, b1}, extent[2] = {e0, e1};
          const int64_t *bg = rank == 2 ? begin : begin + 1, *ex = rank == 2 ? extent : extent + 1;
          bool want = region_is_layout(l, rank, shape, bg, ex);
          tirx_clear_error();
          tirx_layout *s = tirx_layout_slice(A, l, rank, shape, bg, ex);
          if (!s) {
            cr_assert_eq(tirx_last_status(), TIRX_E_NOT_REPRESENTABLE, "%s", tirx_last_error());
            if (want) {
              char *str = tirx_layout_str(l);
              cr_assert_fail("refused a region that is a layout: %s: %s", str, tirx_last_error());
            }
            refused++;
            continue;
          }
          cr_assert(want, "accepted a region that is not a layout");
          assert_slice_law(s, l, rank, shape, bg, ex);
          ok++;
          int64_t ext[80];
          tirx_layout *g = tirx_layout_group(A, l, rank, shape);
          int nd = dim_digits(g, rank, shape, rank - 1, ext);
          wrapped += !is_box(ext, nd, b1, e1);
        }
    }
  }
  cr_assert_gt(ok, 5000);
  cr_assert_gt(refused, 500);
  cr_assert_gt(wrapped, 500);
}

Test(slice, wrapping_regions_of_the_paper_example) {
  tirx_iter d[] = {{2, 192, TIRX_AXIS_M}, {8, 8, TIRX_AXIS_M}, {3, 64, TIRX_AXIS_M},
                   {8, 1, TIRX_AXIS_M}};
  tirx_layout *l = tirx_layout_new(A, 4, d, 0, NULL, 0, NULL);
  int64_t shape[2] = {16, 24};
  /* Rows [4, 12): two blocks of 4 rows, 160 apart. */
  tirx_layout *s = slice2(l, 16, 24, 4, 0, 8, 8);
  expect_str(s, "((2,4),(8)):((160@m,8@m),(1@m))+32@m");
  assert_slice_law(s, l, 2, shape, (int64_t[]){4, 0}, (int64_t[]){8, 8});
  /* Columns [4, 12): two runs of 4, 60 apart. */
  s = slice2(l, 16, 24, 0, 4, 16, 8);
  expect_str(s, "((2,8),(2,4)):((192@m,8@m),(60@m,1@m))+4@m");
  assert_slice_law(s, l, 2, shape, (int64_t[]){0, 4}, (int64_t[]){16, 8});
  /* Columns [7, 9): two elements; [6, 10): pairs of pairs (2,2):(58,1). */
  expect_str(slice2(l, 16, 24, 0, 7, 1, 2), "((),(2)):((),(57@m))+7@m");
  expect_str(slice2(l, 16, 24, 0, 6, 1, 4), "((),(2,2)):((),(58@m,1@m))+6@m");
  /* Columns [5, 12): runs of 3 and 4, no layout; [5, 11) is (2,3):(59,1)+5. */
  expect_str(slice2(l, 16, 24, 0, 5, 1, 6), "((),(2,3)):((),(59@m,1@m))+5@m");
  expect_null(slice2(l, 16, 24, 0, 5, 16, 7), TIRX_E_NOT_REPRESENTABLE,
              "tirx_layout_slice: region dim 1 [5, 12) wraps around iter (8):(1@m) and is not "
              "a layout");
  /* Pairs from digit 1 of an extent-2 iter: (3,2):(100,1) rows [1, 5) are (2,2):(100,99)+1. */
  tirx_iter p[] = {{3, 100, TIRX_AXIS_M}, {2, 1, TIRX_AXIS_M}};
  tirx_layout *lp = tirx_layout_new(A, 2, p, 0, NULL, 0, NULL);
  s = tirx_layout_slice(A, lp, 1, (int64_t[]){6}, (int64_t[]){1}, (int64_t[]){4});
  expect_str(s, "((2,2)):((100@m,99@m))+1@m");
  assert_slice_law(s, lp, 1, (int64_t[]){6}, (int64_t[]){1}, (int64_t[]){4});
  /* Strides that coincide across two carries: (3,2,2,5):(13,13,3,2) elements [5, 11) are
   * 3, 5, ..., 13, one iter (6):(2). */
  tirx_iter c[] = {{3, 13, TIRX_AXIS_M}, {2, 13, TIRX_AXIS_M}, {2, 3, TIRX_AXIS_M},
                   {5, 2, TIRX_AXIS_M}};
  tirx_layout *lc = tirx_layout_new(A, 4, c, 0, NULL, 0, NULL);
  s = tirx_layout_slice(A, lc, 1, (int64_t[]){60}, (int64_t[]){5}, (int64_t[]){6});
  expect_str(s, "((6)):((2@m))+3@m");
  assert_slice_law(s, lc, 1, (int64_t[]){60}, (int64_t[]){5}, (int64_t[]){6});
  /* On two axes the two elements are no iter. */
  tirx_iter q[] = {{2, 1, TIRX_AXIS_WARPID}, {4, 1, TIRX_AXIS_LANEID}};
  tirx_layout *lq = tirx_layout_new(A, 2, q, 0, NULL, 0, NULL);
  expect_null(tirx_layout_slice(A, lq, 1, (int64_t[]){8}, (int64_t[]){3}, (int64_t[]){2}),
              TIRX_E_NOT_REPRESENTABLE,
              "tirx_layout_slice: region dim 0 [3, 5) wraps around iter (4):(1@laneid) and is "
              "not a layout");
}

/* Brute force for long runs: as run_is_layout, on heap arrays of any length. */
static bool long_run_is_layout(const tirx_coord *p, int64_t n) {
  if (n == 1) return true;
  int axes = 0;
  for (int ax = 0; ax < TIRX_AXIS_MAX; ax++) axes += p[1].v[ax] != p[0].v[ax];
  if (axes > 1) return false;
  for (int64_t f = 2; f <= n; f++) {
    if (n % f) continue;
    bool ok = true;
    for (int64_t j = 0; j < n && ok; j++)
      for (int ax = 0; ax < TIRX_AXIS_MAX && ok; ax++)
        ok = p[j].v[ax] - p[j - j % f].v[ax] == (j % f) * (p[1].v[ax] - p[0].v[ax]);
    if (!ok) continue;
    tirx_coord *q = malloc((size_t)(n / f) * sizeof *q);
    for (int64_t u = 0; u < n / f; u++) q[u] = p[u * f];
    bool r = long_run_is_layout(q, n / f);
    free(q);
    if (r) return true;
  }
  return false;
}

/* Iters whose strides make carries coincide with the innermost stride (the runs the structured
 * cases of the slice cannot see): each outer stride is the reach below it plus a step that is
 * often the innermost stride (two carries land like one increment) and otherwise small. */
static tirx_layout *coinciding_layout(uint64_t *seed, int64_t max_size, int64_t inner) {
  for (;;) {
    tirx_iter d[4];
    int n = (int)test_rand_range(seed, 2, 4);
    int64_t size = 1, reach = 0;
    tirx_axis other = test_rand(seed) % 4 ? TIRX_AXIS_M : TIRX_AXIS_LANEID;
    for (int i = n - 1; i >= 0; i--) {
      int64_t e = test_rand_range(seed, 2, i == n - 1 ? inner : 4);
      int64_t s0 = i == n - 1 ? test_rand_range(seed, 1, 3) : d[n - 1].stride;
      int64_t s = i == n - 1 ? s0
                  : test_rand(seed) % 2 ? reach + s0
                                        : reach + test_rand_range(seed, -2, 3);
      d[i] = (tirx_iter){e, s, i == 0 && test_rand(seed) % 3 == 0 ? other : TIRX_AXIS_M};
      size *= e;
      reach += (e - 1) * s;
    }
    if (size > max_size) continue;
    tirx_layout *l = tirx_layout_new(A, n, d, 0, NULL, 0, NULL);
    cr_assert_not_null(l, "%s", tirx_last_error());
    return l;
  }
}

/* Checks one run of a flat layout against brute force: sliced exactly when its points are a
 * layout, and then by the slice law. */
static bool check_run(const tirx_layout *l, int64_t b, int64_t e, tirx_coord *pts) {
  int64_t size = tirx_layout_size(l);
  for (int64_t j = 0; j < e; j++) pts[j] = first_point(l, b + j);
  bool want = long_run_is_layout(pts, e);
  tirx_clear_error();
  tirx_layout *s = tirx_layout_slice(A, l, 1, &size, &b, &e);
  char *str = tirx_layout_str(l);
  if (!s) {
    cr_assert_eq(tirx_last_status(), TIRX_E_NOT_REPRESENTABLE, "%s", tirx_last_error());
    cr_assert(!want, "refused [%lld, %lld) of %s, a layout: %s", (long long)b, (long long)(b + e),
              str, tirx_last_error());
  } else {
    cr_assert(want, "accepted [%lld, %lld) of %s, not a layout", (long long)b,
              (long long)(b + e), str);
    assert_slice_law(s, l, 1, &size, &b, &e);
  }
  free(str);
  return s != NULL;
}

Test(slice, runs_whose_carries_coincide_match_brute_force) {
  uint64_t seed = 0xc01c;
  tirx_coord *pts = malloc(256 * sizeof *pts);
  int ok = 0, refused = 0;
  for (int t = 0; t < 120; t++) {
    tirx_layout *l = coinciding_layout(&seed, 256, 12);
    int64_t size = tirx_layout_size(l);
    for (int64_t b = 0; b < size; b++)
      for (int64_t e = 2; b + e <= size; e++) {
        if (size > 96 && test_rand(&seed) % 6) continue;
        if (check_run(l, b, e, pts)) ok++;
        else refused++;
      }
  }
  free(pts);
  cr_assert_gt(ok, 20000);
  cr_assert_gt(refused, 20000);
}

/* The known gap of the point factoring (runs over 1024 elements) is closed: the closed form
 * has no length limit. (3,2,2,1024):(1124,1124,100,1): elements [1024, 2049) are 100, 101, ...,
 * 1124 (the carry out of (2):(100) into (2):(1124) steps by 1 like the rest). */
Test(slice, runs_past_1024_elements) {
  tirx_iter d[] = {{3, 1124, TIRX_AXIS_M}, {2, 1124, TIRX_AXIS_M}, {2, 100, TIRX_AXIS_M},
                   {1024, 1, TIRX_AXIS_M}};
  tirx_layout *l = tirx_layout_new(A, 4, d, 0, NULL, 0, NULL);
  int64_t size = 12288, b = 1024, e = 1025;
  tirx_layout *s = tirx_layout_slice(A, l, 1, &size, &b, &e);
  expect_str(s, "((1025)):((1@m))+100@m");
  assert_slice_law(s, l, 1, &size, &b, &e);
  /* A run of 2^40 elements on a layout of 2^62: the same coincidence, never enumerated. */
  tirx_iter big[] = {{4, (INT64_C(1) << 40) + 7, TIRX_AXIS_M},
                     {2, (INT64_C(1) << 40) + 7, TIRX_AXIS_M},
                     {2, 7, TIRX_AXIS_M},
                     {INT64_C(1) << 40, 1, TIRX_AXIS_M}};
  tirx_layout *lb = tirx_layout_new(A, 4, big, 0, NULL, 0, NULL);
  int64_t bsize = INT64_C(1) << 44, bb = INT64_C(1) << 40, be = (INT64_C(1) << 40) + 3;
  expect_str(tirx_layout_slice(A, lb, 1, &bsize, &bb, &be), "((1099511627779)):((1@m))+7@m");
  /* Random long runs of coinciding layouts against brute force. */
  uint64_t seed = 0x10e4;
  tirx_coord *pts = malloc(4096 * sizeof *pts);
  int ok = 0, refused = 0;
  for (int t = 0; ok + refused < 300 && t < 20000; t++) {
    tirx_layout *c = coinciding_layout(&seed, 4096, 400);
    int64_t n = tirx_layout_size(c);
    if (n < 1100) continue;
    int64_t eb = test_rand_range(&seed, 1025, n), bg = test_rand_range(&seed, 0, n - eb);
    if (check_run(c, bg, eb, pts)) ok++;
    else refused++;
  }
  free(pts);
  cr_assert_gt(ok, 30);
  cr_assert_gt(refused, 30);
}
