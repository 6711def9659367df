/*
 * src/layout/fragments.c: every ready-made layout checked lane by lane and register by register
 * against the PTX ISA's fragment formulas, and shown to be a bijection onto its slots.
 */
#include "../helpers.h"

static tirx_arena *A;
static void setup(void) { A = tirx_arena_create(); }
static void teardown(void) { tirx_arena_destroy(A); }
TestSuite(fragments, .init = setup, .fini = teardown);

/* The single point of a grouped layout at (i, j). */
static tirx_coord at(const tirx_layout *l, int64_t i, int64_t j) {
  int64_t idx[2] = {i, j}, n;
  tirx_coord c;
  cr_assert_eq(tirx_layout_eval_nd(l, idx, &c, 1, &n), TIRX_OK, "%s", tirx_last_error());
  return c;
}

static void assert_str(const tirx_layout *l, const char *want) {
  cr_assert_not_null(l, "%s", tirx_last_error());
  char *s = tirx_layout_str(l);
  cr_assert_str_eq(s, want);
  free(s);
}

static void assert_shape(const tirx_layout *l, int64_t rows, int64_t cols) {
  int64_t shape[2];
  cr_assert_eq(tirx_layout_rank(l), 2);
  cr_assert_eq(tirx_layout_shape(l, shape, 2), TIRX_OK);
  cr_assert_eq(shape[0], rows);
  cr_assert_eq(shape[1], cols);
  cr_assert_eq(tirx_layout_replica_count(l), 1);
}

/*
 * Checks a (thread, reg) fragment: for every thread t < threads and register v < regs, the
 * PTX formula places element (row(t, v), col(t, v)), and the layout maps that element back to
 * (t, v). As threads * regs equals the tile size, the layout is a bijection.
 */
typedef void (*fragment_fn)(int64_t t, int64_t v, int64_t n, int64_t *row, int64_t *col);

static void check_fragment(const tirx_layout *l, tirx_axis thread_axis, int64_t threads,
                           int64_t regs, int64_t n, fragment_fn f) {
  cr_assert_eq(tirx_layout_size(l), threads * regs);
  for (int64_t t = 0; t < threads; t++)
    for (int64_t v = 0; v < regs; v++) {
      int64_t row, col;
      f(t, v, n, &row, &col);
      tirx_coord c = at(l, row, col);
      cr_assert_eq(c.v[thread_axis], t, "element (%lld,%lld): thread %lld, expected %lld",
                   (long long)row, (long long)col, (long long)c.v[thread_axis], (long long)t);
      cr_assert_eq(c.v[TIRX_AXIS_REG], v, "element (%lld,%lld): reg %lld, expected %lld",
                   (long long)row, (long long)col, (long long)c.v[TIRX_AXIS_REG], (long long)v);
      for (int ax = 0; ax < TIRX_AXIS_MAX; ax++)
        if (ax != thread_axis && ax != TIRX_AXIS_REG) cr_assert_eq(c.v[ax], 0);
    }
}

/* mma.m16n8k16 A (row-major 16x16): a0,a1 row l/4, col 2(l%4)+{0,1}; a2,a3 row+8; a4,a5
 * col+8; a6,a7 row+8 and col+8. */
static void mma_a(int64_t l, int64_t v, int64_t n, int64_t *row, int64_t *col) {
  (void)n;
  *row = l / 4 + 8 * ((v / 2) % 2);
  *col = 2 * (l % 4) + v % 2 + 8 * (v / 4);
}

/* B (K16 x N8): b0,b1 k 2(l%4)+{0,1}, n l/4; b2,b3 k+8. */
static void mma_b(int64_t l, int64_t v, int64_t n, int64_t *k, int64_t *col) {
  (void)n;
  *k = 2 * (l % 4) + v % 2 + 8 * (v / 2);
  *col = l / 4;
}

/* C/D (16x8): c0,c1 row l/4, col 2(l%4)+{0,1}; c2,c3 row+8. */
static void mma_c(int64_t l, int64_t v, int64_t n, int64_t *row, int64_t *col) {
  (void)n;
  *row = l / 4 + 8 * (v / 2);
  *col = 2 * (l % 4) + v % 2;
}

/* wgmma m64nN accumulator, thread t = 32w + l: d[4j+{0,1}] row 16w + l/4, col
 * 8j + 2(l%4) + {0,1}; d[4j+{2,3}] row + 8. */
static void wgmma(int64_t t, int64_t v, int64_t n, int64_t *row, int64_t *col) {
  (void)n;
  int64_t w = t / 32, l = t % 32, j = v / 4;
  *row = 16 * w + l / 4 + 8 * ((v % 4) / 2);
  *col = 8 * j + 2 * (l % 4) + v % 2;
}

/* ldmatrix: matrix q in regs 2q, 2q+1; lane l holds row l/4, cols 2(l%4)+{0,1}. */
static void ldmatrix(int64_t l, int64_t v, int64_t n, int64_t *row, int64_t *col) {
  (void)n;
  *row = 8 * (v / 2) + l / 4;
  *col = 2 * (l % 4) + v % 2;
}

Test(fragments, mma_m16n8k16) {
  tirx_layout *a = tirx_layout_mma_m16n8k16_a(A), *b = tirx_layout_mma_m16n8k16_b(A);
  tirx_layout *c = tirx_layout_mma_m16n8k16_c(A);
  /* (M16,K16) -> (T32,V8), (K16,N8) -> (T32,V4), (M16,N8) -> (T32,V4) */
  assert_str(a, "((2,8),(2,4,2)):((2@reg,4@laneid),(4@reg,1@laneid,1@reg))");
  assert_str(b, "((2,4,2),(8)):((2@reg,1@laneid,1@reg),(4@laneid))");
  assert_str(c, "((2,8),(4,2)):((2@reg,4@laneid),(1@laneid,1@reg))");
  assert_shape(a, 16, 16);
  assert_shape(b, 16, 8);
  assert_shape(c, 16, 8);
  check_fragment(a, TIRX_AXIS_LANEID, 32, 8, 0, mma_a);
  check_fragment(b, TIRX_AXIS_LANEID, 32, 4, 0, mma_b);
  check_fragment(c, TIRX_AXIS_LANEID, 32, 4, 0, mma_c);
}

Test(fragments, wgmma_accumulator_for_every_n) {
  assert_str(tirx_layout_wgmma_acc(A, 64, 8),
             "((4,2,8),(4,2)):((32@tid_in_wg,2@reg,4@tid_in_wg),(1@tid_in_wg,1@reg))");
  assert_str(tirx_layout_wgmma_acc(A, 64, 256),
             "((4,2,8),(32,4,2)):((32@tid_in_wg,2@reg,4@tid_in_wg),(4@reg,1@tid_in_wg,1@reg))");
  for (int n = 8; n <= 256; n += 8) {
    tirx_layout *l = tirx_layout_wgmma_acc(A, 64, n);
    cr_assert_not_null(l, "%s", tirx_last_error());
    assert_shape(l, 64, n);
    check_fragment(l, TIRX_AXIS_TID_IN_WG, 128, n / 2, n, wgmma);
  }
  /* Warp w of the warpgroup is the m16n8 C fragment on rows 16w.., repeated along N. */
  tirx_layout *acc = tirx_layout_wgmma_acc(A, 64, 16), *c = tirx_layout_mma_m16n8k16_c(A);
  for (int64_t i = 0; i < 64; i++)
    for (int64_t j = 0; j < 16; j++) {
      tirx_coord x = at(acc, i, j), y = at(c, i % 16, j % 8);
      cr_assert_eq(x.v[TIRX_AXIS_TID_IN_WG], 32 * (i / 16) + y.v[TIRX_AXIS_LANEID]);
      cr_assert_eq(x.v[TIRX_AXIS_REG], 4 * (j / 8) + y.v[TIRX_AXIS_REG]);
    }
}

Test(fragments, wgmma_accumulator_of_several_m64_slabs) {
  assert_str(tirx_layout_wgmma_acc(A, 128, 8),
             "((2,4,2,8),(4,2)):((4@reg,32@tid_in_wg,2@reg,4@tid_in_wg),(1@tid_in_wg,1@reg))");
  for (int m = 128; m <= 256; m += 64)
    for (int n = 8; n <= 256; n += 24) {
      tirx_layout *l = tirx_layout_wgmma_acc(A, m, n), *one = tirx_layout_wgmma_acc(A, 64, n);
      cr_assert_not_null(l, "%s", tirx_last_error());
      assert_shape(l, m, n);
      /* Slab q is the m64 fragment at registers q*n/2. */
      for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
          tirx_coord x = at(l, i, j), y = at(one, i % 64, j);
          cr_assert_eq(x.v[TIRX_AXIS_TID_IN_WG], y.v[TIRX_AXIS_TID_IN_WG]);
          cr_assert_eq(x.v[TIRX_AXIS_REG], (i / 64) * (n / 2) + y.v[TIRX_AXIS_REG]);
        }
    }
}

/* wgmma A in registers (PTX ISA, "Register fragment for matrix A" of wgmma .f16/.bf16), thread
 * t = 32w + l, k16 step s = v / 8, u = v % 8: a0,a1 row 16w + l/4, col 16s + 2(l%4)+{0,1};
 * a2,a3 row + 8; a4,a5 col + 8; a6,a7 row + 8 and col + 8. */
static void wgmma_a(int64_t t, int64_t v, int64_t n, int64_t *row, int64_t *col) {
  (void)n;
  int64_t w = t / 32, l = t % 32, s = v / 8, u = v % 8;
  *row = 16 * w + l / 4 + 8 * ((u / 2) % 2);
  *col = 16 * s + 2 * (l % 4) + u % 2 + 8 * (u / 4);
}

Test(fragments, wgmma_a_operand_for_every_k) {
  assert_str(tirx_layout_wgmma_a(A, 64, 16),
             "((4,2,8),(2,4,2)):((32@tid_in_wg,2@reg,4@tid_in_wg),(4@reg,1@tid_in_wg,1@reg))");
  for (int k = 16; k <= 256; k += 16) {
    tirx_layout *l = tirx_layout_wgmma_a(A, 64, k);
    cr_assert_not_null(l, "%s", tirx_last_error());
    assert_shape(l, 64, k);
    check_fragment(l, TIRX_AXIS_TID_IN_WG, 128, k / 2, k, wgmma_a);
    /* The accumulator of an (M, K) product has the same placement: cast, it is an A operand. */
    cr_assert(tirx_layout_equal(l, tirx_layout_wgmma_acc(A, 64, k)), "k=%d", k);
  }
  /* Each warp's 16 rows of a k16 step are the mma.sync m16n8k16 A fragment. */
  tirx_layout *wa = tirx_layout_wgmma_a(A, 64, 32), *ma = tirx_layout_mma_m16n8k16_a(A);
  for (int64_t i = 0; i < 64; i++)
    for (int64_t j = 0; j < 32; j++) {
      tirx_coord x = at(wa, i, j), y = at(ma, i % 16, j % 16);
      cr_assert_eq(x.v[TIRX_AXIS_TID_IN_WG], 32 * (i / 16) + y.v[TIRX_AXIS_LANEID]);
      cr_assert_eq(x.v[TIRX_AXIS_REG], 8 * (j / 16) + y.v[TIRX_AXIS_REG]);
    }
  /* Several m64 slabs: slab q at registers q * k/2. */
  for (int m = 128; m <= 256; m += 64) {
    tirx_layout *l = tirx_layout_wgmma_a(A, m, 48), *one = tirx_layout_wgmma_a(A, 64, 48);
    cr_assert_not_null(l, "%s", tirx_last_error());
    assert_shape(l, m, 48);
    cr_assert(tirx_layout_equal(l, tirx_layout_wgmma_acc(A, m, 48)));
    for (int64_t i = 0; i < m; i++)
      for (int64_t j = 0; j < 48; j++) {
        tirx_coord x = at(l, i, j), y = at(one, i % 64, j);
        cr_assert_eq(x.v[TIRX_AXIS_TID_IN_WG], y.v[TIRX_AXIS_TID_IN_WG]);
        cr_assert_eq(x.v[TIRX_AXIS_REG], (i / 64) * 24 + y.v[TIRX_AXIS_REG]);
      }
  }
}

Test(fragments, ldmatrix_x1_x2_x4) {
  assert_str(tirx_layout_ldmatrix(A, 1), "((8),(4,2)):((4@laneid),(1@laneid,1@reg))");
  assert_str(tirx_layout_ldmatrix(A, 4), "((4,8),(4,2)):((2@reg,4@laneid),(1@laneid,1@reg))");
  for (int num = 1; num <= 4; num *= 2) {
    tirx_layout *l = tirx_layout_ldmatrix(A, num);
    cr_assert_not_null(l, "%s", tirx_last_error());
    assert_shape(l, 8 * num, 8);
    check_fragment(l, TIRX_AXIS_LANEID, 32, 2 * num, num, ldmatrix);
  }
  /* .x2 of a 16x8 tile is the mma C fragment. */
  cr_assert(tirx_layout_equal(tirx_layout_ldmatrix(A, 2), tirx_layout_mma_m16n8k16_c(A)));
}

Test(fragments, warpgroup_rows) {
  tirx_layout *l = tirx_layout_warpgroup_rows(A, 128, 24);
  assert_str(l, "((128),(24)):((1@tid_in_wg),(1@reg))");
  for (int64_t rows = 1; rows <= 128; rows += 19)
    for (int64_t cols = 1; cols <= 40; cols += 13) {
      tirx_layout *w = tirx_layout_warpgroup_rows(A, rows, cols);
      cr_assert_not_null(w, "%s", tirx_last_error());
      assert_shape(w, rows, cols);
      for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < cols; j++) {
          tirx_coord c = at(w, i, j);
          cr_assert_eq(c.v[TIRX_AXIS_TID_IN_WG], i);
          cr_assert_eq(c.v[TIRX_AXIS_REG], j);
        }
    }
}

Test(fragments, smem_tiles_match_the_block_formula) {
  assert_str(tirx_layout_smem_tile(A, 64, 64, 2, 128), "((64),(64)):((64@m),(1@m))^sw(128,2)");
  assert_str(tirx_layout_smem_tile(A, 64, 128, 2, 128),
             "((64),(2,64)):((64@m),(4096@m,1@m))^sw(128,2)");
  assert_str(tirx_layout_smem_tile(A, 8, 24, 4, 0), "((8),(24)):((24@m),(1@m))");
  static const int sws[] = {0, 32, 64, 128}, elems[] = {1, 2, 4, 8};
  for (int s = 0; s < 4; s++)
    for (int e = 0; e < 4; e++) {
      int sw = sws[s], elem = elems[e];
      int64_t w = sw ? sw / elem : 0;
      for (int64_t rows = 1; rows <= 24; rows += 7)
        for (int64_t blocks = 1; blocks <= 3; blocks++) {
          int64_t cols = w ? w * blocks : 8 * blocks + 1;
          tirx_layout *l = tirx_layout_smem_tile(A, rows, cols, elem, sw);
          cr_assert_not_null(l, "%s", tirx_last_error());
          assert_shape(l, rows, cols);
          cr_assert_eq(tirx_layout_swizzle_bytes(l), sw);
          for (int64_t i = 0; i < rows; i++)
            for (int64_t j = 0; j < cols; j++) {
              int64_t bw = w ? w : cols;
              int64_t m = (j / bw) * rows * bw + i * bw + j % bw;
              cr_assert_eq(at(l, i, j).v[TIRX_AXIS_M], tirx_swizzle_apply(sw, elem, m));
            }
        }
    }
}

Test(fragments, bad_arguments_are_reported) {
  expect_null(tirx_layout_mma_m16n8k16_a(NULL), TIRX_E_NULL_ARG,
              "tirx_layout_mma_m16n8k16_a: arena is NULL");
  expect_null(tirx_layout_mma_m16n8k16_b(NULL), TIRX_E_NULL_ARG,
              "tirx_layout_mma_m16n8k16_b: arena is NULL");
  expect_null(tirx_layout_mma_m16n8k16_c(NULL), TIRX_E_NULL_ARG,
              "tirx_layout_mma_m16n8k16_c: arena is NULL");
  expect_null(tirx_layout_wgmma_acc(NULL, 64, 8), TIRX_E_NULL_ARG,
              "tirx_layout_wgmma_acc: arena is NULL");
  expect_null(tirx_layout_wgmma_acc(A, 96, 8), TIRX_E_INVALID_ARG,
              "tirx_layout_wgmma_acc: m is 96, expected 64, 128, 192 or 256");
  expect_null(tirx_layout_wgmma_acc(A, 320, 8), TIRX_E_INVALID_ARG,
              "tirx_layout_wgmma_acc: m is 320, expected 64, 128, 192 or 256");
  expect_null(tirx_layout_wgmma_acc(A, 64, 12), TIRX_E_INVALID_ARG,
              "tirx_layout_wgmma_acc: n is 12, expected a multiple of 8 in [8, 256]");
  expect_null(tirx_layout_wgmma_acc(A, 64, 264), TIRX_E_INVALID_ARG,
              "tirx_layout_wgmma_acc: n is 264, expected a multiple of 8 in [8, 256]");
  expect_null(tirx_layout_wgmma_acc(A, 64, 0), TIRX_E_INVALID_ARG,
              "tirx_layout_wgmma_acc: n is 0, expected a multiple of 8 in [8, 256]");
  expect_null(tirx_layout_wgmma_a(NULL, 64, 16), TIRX_E_NULL_ARG,
              "tirx_layout_wgmma_a: arena is NULL");
  expect_null(tirx_layout_wgmma_a(A, 32, 16), TIRX_E_INVALID_ARG,
              "tirx_layout_wgmma_a: m is 32, expected 64, 128, 192 or 256");
  expect_null(tirx_layout_wgmma_a(A, 64, 8), TIRX_E_INVALID_ARG,
              "tirx_layout_wgmma_a: k is 8, expected a multiple of 16 in [16, 256]");
  expect_null(tirx_layout_wgmma_a(A, 64, 24), TIRX_E_INVALID_ARG,
              "tirx_layout_wgmma_a: k is 24, expected a multiple of 16 in [16, 256]");
  expect_null(tirx_layout_wgmma_a(A, 64, 272), TIRX_E_INVALID_ARG,
              "tirx_layout_wgmma_a: k is 272, expected a multiple of 16 in [16, 256]");
  expect_null(tirx_layout_ldmatrix(A, 3), TIRX_E_INVALID_ARG,
              "tirx_layout_ldmatrix: num is 3, expected 1, 2 or 4");
  expect_null(tirx_layout_ldmatrix(NULL, 1), TIRX_E_NULL_ARG, "tirx_layout_ldmatrix: arena is NULL");
  expect_null(tirx_layout_warpgroup_rows(A, 129, 4), TIRX_E_INVALID_ARG,
              "tirx_layout_warpgroup_rows: rows is 129, expected 1 to 128");
  expect_null(tirx_layout_warpgroup_rows(A, 0, 4), TIRX_E_INVALID_ARG,
              "tirx_layout_warpgroup_rows: rows is 0, expected 1 to 128");
  expect_null(tirx_layout_warpgroup_rows(A, 4, 0), TIRX_E_INVALID_ARG,
              "tirx_layout_warpgroup_rows: cols is 0, expected >= 1");
  expect_null(tirx_layout_smem_tile(A, 0, 64, 2, 128), TIRX_E_INVALID_ARG,
              "tirx_layout_smem_tile: shape (0,64) has an extent < 1");
  expect_null(tirx_layout_smem_tile(A, 8, 64, 3, 128), TIRX_E_INVALID_ARG,
              "tirx_layout_smem_tile: elem_bytes is 3, expected 1, 2, 4 or 8");
  expect_null(tirx_layout_smem_tile(A, 8, 64, 2, 96), TIRX_E_INVALID_ARG,
              "tirx_layout_smem_tile: swizzle_bytes is 96, expected 0, 32, 64 or 128");
  expect_null(tirx_layout_smem_tile(A, 8, 48, 2, 128), TIRX_E_INVALID_ARG,
              "tirx_layout_smem_tile: cols is 48, expected a multiple of the swizzle width 64");
  expect_null(tirx_layout_smem_tile(A, INT64_C(1) << 62, 64, 2, 128), TIRX_E_OVERFLOW,
              "tirx_layout_smem_tile: the tile's size overflows int64");
  expect_null(tirx_layout_smem_tile(A, INT64_C(1) << 54, 512, 2, 128), TIRX_E_OVERFLOW,
              "tirx_layout_smem_tile: the product of the extents overflows int64");
}
