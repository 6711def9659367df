/* src/layout/layout.c: construction, accessors, evaluation, span, printer. */
#include "../helpers.h"

static tirx_arena *A;
static void setup(void) { A = tirx_arena_create(); }
static void teardown(void) { tirx_arena_destroy(A); }
TestSuite(layout, .init = setup, .fini = teardown);

/* The paper's 8x16 Tensor Core tile: 2 warps sharded, 2 replicated, offset 5 warps. */
static tirx_layout *paper_tile(void) {
  tirx_iter d[] = {{8, 4, TIRX_AXIS_LANEID}, {2, 1, TIRX_AXIS_WARPID},
                   {4, 1, TIRX_AXIS_LANEID}, {2, 1, TIRX_AXIS_REG}};
  tirx_iter r[] = {{2, 4, TIRX_AXIS_WARPID}};
  tirx_axis_offset o[] = {{TIRX_AXIS_WARPID, 5}};
  return tirx_layout_new(A, 4, d, 1, r, 1, o);
}

Test(layout, paper_tensor_core_tile_evaluates_as_in_the_paper) {
  tirx_layout *l = paper_tile();
  cr_assert_not_null(l, "%s", tirx_last_error());
  cr_assert_eq(tirx_layout_size(l), 128);
  cr_assert_eq(tirx_layout_replica_count(l), 2);
  char *s = tirx_layout_str(l);
  cr_assert_str_eq(s, "(8,2,4,2):(4@laneid,1@warpid,1@laneid,1@reg)+[2:4@warpid]+5@warpid");
  free(s);
  /* Brute force over the 8x16 tile: element (i, j) goes to lane 4i + (j/2)%4, warp 5 + j/8 or
   * 9 + j/8, reg j%2. */
  for (int64_t i = 0; i < 8; i++)
    for (int64_t j = 0; j < 16; j++) {
      tirx_coord pts[2];
      int64_t n = 0;
      cr_assert_eq(tirx_layout_eval(l, i * 16 + j, pts, 2, &n), TIRX_OK);
      cr_assert_eq(n, 2);
      for (int k = 0; k < 2; k++) {
        cr_assert_eq(pts[k].v[TIRX_AXIS_LANEID], 4 * i + (j / 2) % 4);
        cr_assert_eq(pts[k].v[TIRX_AXIS_WARPID], 5 + j / 8 + 4 * k);
        cr_assert_eq(pts[k].v[TIRX_AXIS_REG], j % 2);
        cr_assert_eq(pts[k].v[TIRX_AXIS_M], 0);
      }
    }
}

Test(layout, strided_constructors) {
  int64_t shape[3] = {3, 5, 7};
  tirx_layout *r = tirx_layout_row_major(A, 3, shape);
  tirx_layout *c = tirx_layout_col_major(A, 3, shape);
  for (int64_t i = 0; i < 3; i++)
    for (int64_t j = 0; j < 5; j++)
      for (int64_t k = 0; k < 7; k++) {
        int64_t idx[3] = {i, j, k}, m;
        tirx_coord pt;
        int64_t n;
        cr_assert_eq(tirx_layout_eval_nd(r, idx, &pt, 1, &n), TIRX_OK);
        cr_assert_eq(pt.v[TIRX_AXIS_M], i * 35 + j * 7 + k);
        cr_assert_eq(tirx_layout_eval_nd(c, idx, &pt, 1, &n), TIRX_OK);
        cr_assert_eq(pt.v[TIRX_AXIS_M], i + j * 3 + k * 15);
        cr_assert_eq(tirx_layout_eval_m(r, i * 35 + j * 7 + k, &m), TIRX_OK);
        cr_assert_eq(m, i * 35 + j * 7 + k);
      }
  char *s = tirx_layout_str(c);
  cr_assert_str_eq(s, "((3),(5),(7)):((1@m),(3@m),(15@m))");
  free(s);
}

Test(layout, span_per_axis) {
  tirx_layout *l = paper_tile();
  int64_t lo, span;
  cr_assert_eq(tirx_layout_span(l, TIRX_AXIS_WARPID, &lo, &span), TIRX_OK);
  cr_assert_eq(lo, 5);
  cr_assert_eq(span, 6); /* warps 5..10 */
  cr_assert_eq(tirx_layout_span(l, TIRX_AXIS_LANEID, &lo, &span), TIRX_OK);
  cr_assert_eq(lo, 0);
  cr_assert_eq(span, 32);
  cr_assert_eq(tirx_layout_span(l, TIRX_AXIS_M, NULL, &span), TIRX_OK);
  cr_assert_eq(span, 1);
}

Test(layout, span_matches_brute_force_on_random_layouts) {
  uint64_t seed = 0x5eed1;
  for (int t = 0; t < 300; t++) {
    tirx_layout *l = test_random_layout(A, &seed, 4, false);
    for (tirx_axis ax = 0; ax < TIRX_AXIS_BUILTIN_COUNT; ax++) {
      int64_t lo = INT64_MAX, hi = INT64_MIN;
      for (int64_t x = 0; x < tirx_layout_size(l); x++) {
        tirx_coord pts[16];
        int64_t n;
        cr_assert_eq(tirx_layout_eval(l, x, pts, 16, &n), TIRX_OK);
        for (int64_t k = 0; k < n; k++) {
          if (pts[k].v[ax] < lo) lo = pts[k].v[ax];
          if (pts[k].v[ax] > hi) hi = pts[k].v[ax];
        }
      }
      int64_t got_lo, got_span;
      cr_assert_eq(tirx_layout_span(l, ax, &got_lo, &got_span), TIRX_OK);
      cr_assert_eq(got_lo, lo);
      cr_assert_eq(got_span, hi - lo + 1);
    }
  }
}

Test(layout, bad_input_is_reported) {
  tirx_iter zero[] = {{0, 1, TIRX_AXIS_M}};
  expect_null(tirx_layout_new(A, 1, zero, 0, NULL, 0, NULL), TIRX_E_INVALID_ARG,
              "tirx_layout_new: shard iter 0 has extent 0, expected >= 1");
  tirx_iter neg[] = {{4, 1, TIRX_AXIS_M}, {-3, 1, TIRX_AXIS_M}};
  expect_null(tirx_layout_new(A, 2, neg, 0, NULL, 0, NULL), TIRX_E_INVALID_ARG,
              "tirx_layout_new: shard iter 1 has extent -3, expected >= 1");
  tirx_iter bad_axis[] = {{4, 1, 77}};
  expect_null(tirx_layout_new(A, 1, bad_axis, 0, NULL, 0, NULL), TIRX_E_UNKNOWN_AXIS,
              "tirx_layout_new: shard iter 0 has unknown axis 77");
  tirx_iter big[] = {{INT64_C(1) << 40, 1, TIRX_AXIS_M}, {INT64_C(1) << 40, 1, TIRX_AXIS_M}};
  expect_null(tirx_layout_new(A, 2, big, 0, NULL, 0, NULL), TIRX_E_OVERFLOW,
              "tirx_layout_new: the product of the extents overflows int64");
  tirx_iter far[] = {{3, INT64_C(1) << 62, TIRX_AXIS_M}};
  expect_null(tirx_layout_new(A, 1, far, 0, NULL, 0, NULL), TIRX_E_OVERFLOW,
              "tirx_layout_new: a coordinate of the layout overflows int64");
  expect_null(tirx_layout_new(NULL, 1, far, 0, NULL, 0, NULL), TIRX_E_NULL_ARG,
              "tirx_layout_new: arena is NULL");
  expect_null(tirx_layout_new(A, 1, NULL, 0, NULL, 0, NULL), TIRX_E_NULL_ARG,
              "tirx_layout_new: d is NULL with a non-zero count");
  tirx_axis_offset twice[] = {{TIRX_AXIS_M, 1}, {TIRX_AXIS_M, 2}};
  expect_null(tirx_layout_new(A, 0, NULL, 0, NULL, 2, twice), TIRX_E_INVALID_ARG,
              "tirx_layout_new: offset on axis m given twice");
  int64_t shape[2] = {4, 0};
  expect_null(tirx_layout_row_major(A, 2, shape), TIRX_E_INVALID_ARG,
              "tirx_layout_row_major: shape[1] is 0, expected >= 1");
  expect_null(tirx_layout_row_major(A, 0, shape), TIRX_E_INVALID_ARG,
              "tirx_layout_row_major: rank is 0, expected 1 to 16");
  tirx_layout *l = tirx_layout_row_major(A, 1, (int64_t[]){4});
  tirx_coord pt;
  int64_t n;
  expect_error(tirx_layout_eval(l, 4, &pt, 1, &n), TIRX_E_OUT_OF_RANGE,
               "tirx_layout_eval: index 4 outside [0, 4)");
  expect_error(tirx_layout_eval(NULL, 0, &pt, 1, &n), TIRX_E_NULL_ARG,
               "tirx_layout_eval: layout is NULL");
  tirx_layout *rep = paper_tile();
  expect_error(tirx_layout_eval(rep, 0, &pt, 1, &n), TIRX_E_BUFFER_TOO_SMALL,
               "tirx_layout_eval: 2 points, cap is 1");
  cr_assert_eq(n, 2);
}

Test(layout, swizzle_128b_matches_the_tma_pattern) {
  /* 128B swizzle, bf16: within each 8-row x 64-column atom, 16-byte chunk c of row r moves to
   * chunk c ^ (r % 8). */
  for (int64_t r = 0; r < 16; r++)
    for (int64_t c = 0; c < 64; c++) {
      int64_t m = r * 64 + c;
      int64_t want = r * 64 + (((c / 8) ^ (r % 8)) * 8) + c % 8;
      cr_assert_eq(tirx_swizzle_apply(128, 2, m), want);
    }
  /* 64B over f32: chunks of 4 floats, rows of 16 floats, pattern (r/2) % 4 */
  for (int64_t m = 0; m < 512; m++) {
    int64_t byte = m * 4, row = byte / 128;
    int64_t chunk = (byte / 16) % 8;
    int64_t want_byte = row * 128 + ((chunk ^ (row % 4)) * 16) + byte % 16;
    (void)want_byte;
    int64_t b = byte ^ (((byte >> 7) & 3) << 4);
    cr_assert_eq(tirx_swizzle_apply(64, 4, m) * 4, b);
  }
  cr_assert_eq(tirx_swizzle_apply(48, 2, 3), -1);
  cr_assert_eq(tirx_swizzle_apply(0, 2, 3), 3);
}

/* Regressions found by fuzz_layout (tests/fuzz/crashes/): each once overflowed int64 or did
 * arithmetic on NULL. */
Test(layout, fuzz_regressions_overflow_and_null) {
  cr_assert_eq(tirx_swizzle_apply(32, 4, INT64_C(1) << 62), -1);
  expect_null(tirx_layout_parse(A, "(2):(9223372036854775807)"), TIRX_E_OVERFLOW,
              "tirx_layout_parse: a coordinate of the layout overflows int64");
  expect_null(tirx_layout_parse(A, "(2):(2305843009213693952@m)^sw(128,8)"), TIRX_E_OVERFLOW,
              "tirx_layout_parse: a coordinate of the layout overflows int64");
  tirx_layout *scalar = tirx_layout_parse(A, "(()):(())");
  cr_assert_not_null(scalar, "%s", tirx_last_error());
  tirx_layout *c = tirx_layout_canonicalize(A, scalar);
  cr_assert_not_null(c, "%s", tirx_last_error());
  cr_assert(tirx_layout_equal(scalar, c));
  int64_t span;
  tirx_layout *wide = tirx_layout_parse(A, "(2):(9223372036854775806)");
  cr_assert_not_null(wide, "%s", tirx_last_error());
  cr_assert_eq(tirx_layout_span(wide, TIRX_AXIS_M, NULL, &span), TIRX_OK);
  cr_assert_eq(span, INT64_MAX);
}
