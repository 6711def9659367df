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

/* tcgen05.ld/st: register r of lane l holds (row, col) of the instruction's TMEM tile, as the
 * PTX ISA's matrix fragments for .32x32b, .16x64b, .16x128b and .16x256b draw them. */
static void tmem_32x32b(int64_t l, int64_t r, int64_t n, int64_t *row, int64_t *col) {
  (void)n;
  *row = l;
  *col = r;
}
static void tmem_16x64b(int64_t l, int64_t r, int64_t n, int64_t *row, int64_t *col) {
  (void)n;
  *row = l / 4 + 8 * (l % 2);
  *col = (l / 2) % 2 + 2 * r;
}
static void tmem_16x128b(int64_t l, int64_t r, int64_t n, int64_t *row, int64_t *col) {
  (void)n;
  *row = l / 4 + 8 * (r % 2);
  *col = l % 4 + 4 * (r / 2);
}
static void tmem_16x256b(int64_t l, int64_t r, int64_t n, int64_t *row, int64_t *col) {
  (void)n;
  *row = l / 4 + 8 * ((r / 2) % 2);
  *col = r % 2 + 2 * (l % 4) + 8 * (r / 4);
}

Test(fragments, tmem_ld_every_shape_and_num) {
  static const fragment_fn fns[] = {tmem_32x32b, tmem_16x64b, tmem_16x128b, tmem_16x256b};
  static const int rows[] = {32, 16, 16, 16}, cols[] = {1, 2, 4, 8}, regs[] = {1, 1, 2, 4};
  static const int most[] = {128, 128, 64, 32};
  for (int s = 0; s < 4; s++)
    for (int num = 1; num <= most[s]; num *= 2) {
      tirx_layout *l = tirx_layout_tmem_ld(A, (tirx_tmem_shape)s, num);
      cr_assert_not_null(l, "%s", tirx_last_error());
      assert_shape(l, rows[s], cols[s] * num);
      check_fragment(l, TIRX_AXIS_LANEID, 32, regs[s] * num, num, fns[s]);
    }
  assert_str(tirx_layout_tmem_ld(A, TIRX_TMEM_32X32B, 1), "((32),()):((1@laneid),())");
  assert_str(tirx_layout_tmem_ld(A, TIRX_TMEM_16X64B, 4),
             "((2,8),(4,2)):((1@laneid,4@laneid),(1@reg,2@laneid))");
  assert_str(tirx_layout_tmem_ld(A, TIRX_TMEM_16X128B, 1),
             "((2,8),(4)):((1@reg,4@laneid),(1@laneid))");
  assert_str(tirx_layout_tmem_ld(A, TIRX_TMEM_16X256B, 2),
             "((2,8),(2,4,2)):((2@reg,4@laneid),(4@reg,1@laneid,1@reg))");
  /* A warp's fragment is well formed for a warp team. */
  tirx_scope *warp = tirx_scope_team(A, tirx_scope_new(A, 4, 1, 1), TIRX_TEAM_WARP);
  for (int s = 0; s < 4; s++)
    cr_assert_eq(tirx_layout_verify(tirx_layout_tmem_ld(A, (tirx_tmem_shape)s, 8), warp), TIRX_OK,
                 "%s", tirx_last_error());
}

/* The accumulator's lane and column of element (i, j), per PTX data path layout. */
static void tmem_acc_ref(int m, int n, int cg, int64_t i, int64_t j, int64_t *lane, int64_t *col) {
  if (m == 64) { /* F */
    *lane = 32 * (i / 16) + i % 16;
    *col = j;
  } else if (m == 128 && cg == 2) { /* B */
    *lane = i + 64 * (j / (n / 2));
    *col = j % (n / 2);
  } else { /* D, A */
    *lane = i;
    *col = j;
  }
}

Test(fragments, tmem_acc_every_m_n_and_cta_group) {
  static const int cases[][2] = {{64, 1}, {128, 1}, {128, 2}, {256, 2}};
  for (int c = 0; c < 4; c++) {
    int m = cases[c][0], cg = cases[c][1], step = m == 64 ? 8 : 16;
    for (int n = step; n <= 256; n += step) {
      tirx_layout *l = tirx_layout_tmem_acc(A, m, n, cg);
      cr_assert_not_null(l, "%s", tirx_last_error());
      int64_t rows = m / cg;
      assert_shape(l, rows, n);
      static bool seen[128][512];
      memset(seen, 0, sizeof seen);
      for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < n; j++) {
          int64_t lane, col;
          tmem_acc_ref(m, n, cg, i, j, &lane, &col);
          tirx_coord p = at(l, i, j);
          cr_assert_eq(p.v[TIRX_AXIS_TLANE], lane, "m %d n %d cta_group %d (%lld,%lld)", m, n, cg,
                       (long long)i, (long long)j);
          cr_assert_eq(p.v[TIRX_AXIS_TCOL], col);
          for (int ax = 0; ax < TIRX_AXIS_MAX; ax++)
            if (ax != TIRX_AXIS_TLANE && ax != TIRX_AXIS_TCOL) cr_assert_eq(p.v[ax], 0);
          cr_assert(lane >= 0 && lane < 128 && col >= 0 && col < 512);
          cr_assert(!seen[lane][col], "two elements in one cell");
          seen[lane][col] = true;
        }
    }
  }
  assert_str(tirx_layout_tmem_acc(A, 128, 64, 1), "((128),(64)):((1@TLane),(1@TCol))");
  assert_str(tirx_layout_tmem_acc(A, 64, 32, 1), "((4,16),(32)):((32@TLane,1@TLane),(1@TCol))");
  assert_str(tirx_layout_tmem_acc(A, 128, 128, 2), "((64),(2,64)):((1@TLane),(64@TLane,1@TCol))");
  /* A TMEM tile names no thread axis: any team may hold it. */
  tirx_scope *cta = tirx_scope_new(A, 4, 1, 1);
  cr_assert_eq(tirx_layout_verify(tirx_layout_tmem_acc(A, 128, 256, 1), cta), TIRX_OK);
  expect_error(tirx_layout_verify(tirx_layout_parse(A, "((128),(1024)):((1@TLane),(1@TCol))"), cta),
               TIRX_E_SCOPE,
               "tirx_layout_verify: layout's TCol coordinates run from 0 to 1023, expected 0 to 511");
  expect_error(tirx_layout_verify(tirx_layout_parse(A, "(4):(1@TLane)+126@TLane"), cta),
               TIRX_E_SCOPE,
               "tirx_layout_verify: layout's TLane coordinates run from 126 to 129, expected 0 to "
               "127");
}

/* A warpgroup reading the m 128 accumulator with 32x32b.xn: warp w reads lanes 32w..32w+31 of
 * TMEM, so element (i, j) lands in thread i, register j: tirx_layout_warpgroup_rows. */
Test(fragments, tmem_acc_read_by_a_warpgroup) {
  for (int n = 16; n <= 128; n *= 2) { /* .x128 at most */
    tirx_layout *acc = tirx_layout_tmem_acc(A, 128, n, 1);
    tirx_layout *ld = tirx_layout_tmem_ld(A, TIRX_TMEM_32X32B, n);
    tirx_layout *wg = tirx_layout_warpgroup_rows(A, 128, n);
    for (int64_t i = 0; i < 128; i++)
      for (int64_t j = 0; j < n; j++) {
        tirx_coord t = at(acc, i, j);
        int64_t w = t.v[TIRX_AXIS_TLANE] / 32; /* the warp whose quarter holds the lane */
        tirx_coord r = at(ld, t.v[TIRX_AXIS_TLANE] % 32, t.v[TIRX_AXIS_TCOL]);
        tirx_coord g = at(wg, i, j);
        cr_assert_eq(32 * w + r.v[TIRX_AXIS_LANEID], g.v[TIRX_AXIS_TID_IN_WG]);
        cr_assert_eq(r.v[TIRX_AXIS_REG], g.v[TIRX_AXIS_REG]);
      }
  }
}

Test(fragments, tmem_bad_arguments_are_reported) {
  expect_null(tirx_layout_tmem_acc(NULL, 128, 64, 1), TIRX_E_NULL_ARG,
              "tirx_layout_tmem_acc: arena is NULL");
  expect_null(tirx_layout_tmem_acc(A, 128, 64, 3), TIRX_E_INVALID_ARG,
              "tirx_layout_tmem_acc: cta_group is 3, expected 1 or 2");
  expect_null(tirx_layout_tmem_acc(A, 64, 64, 2), TIRX_E_INVALID_ARG,
              "tirx_layout_tmem_acc: m is 64, expected 128 or 256 for cta_group 2");
  expect_null(tirx_layout_tmem_acc(A, 256, 64, 1), TIRX_E_INVALID_ARG,
              "tirx_layout_tmem_acc: m is 256, expected 64 or 128 for cta_group 1");
  expect_null(tirx_layout_tmem_acc(A, 128, 8, 1), TIRX_E_INVALID_ARG,
              "tirx_layout_tmem_acc: n is 8, expected a multiple of 16 in [16, 256]");
  expect_null(tirx_layout_tmem_acc(A, 64, 12, 1), TIRX_E_INVALID_ARG,
              "tirx_layout_tmem_acc: n is 12, expected a multiple of 8 in [8, 256]");
  expect_null(tirx_layout_tmem_acc(A, 64, 264, 1), TIRX_E_INVALID_ARG,
              "tirx_layout_tmem_acc: n is 264, expected a multiple of 8 in [8, 256]");
  expect_null(tirx_layout_tmem_ld(NULL, TIRX_TMEM_32X32B, 1), TIRX_E_NULL_ARG,
              "tirx_layout_tmem_ld: arena is NULL");
  expect_null(tirx_layout_tmem_ld(A, (tirx_tmem_shape)4, 1), TIRX_E_INVALID_ARG,
              "tirx_layout_tmem_ld: shape is 4, expected TIRX_TMEM_32X32B, _16X64B, _16X128B or "
              "_16X256B");
  expect_null(tirx_layout_tmem_ld(A, (tirx_tmem_shape)-1, 1), TIRX_E_INVALID_ARG,
              "tirx_layout_tmem_ld: shape is -1, expected TIRX_TMEM_32X32B, _16X64B, _16X128B or "
              "_16X256B");
  expect_null(tirx_layout_tmem_ld(A, TIRX_TMEM_32X32B, 3), TIRX_E_INVALID_ARG,
              "tirx_layout_tmem_ld: num is 3, expected a power of two from 1 to 128");
  expect_null(tirx_layout_tmem_ld(A, TIRX_TMEM_32X32B, 0), TIRX_E_INVALID_ARG,
              "tirx_layout_tmem_ld: num is 0, expected a power of two from 1 to 128");
  expect_null(tirx_layout_tmem_ld(A, TIRX_TMEM_16X128B, 128), TIRX_E_INVALID_ARG,
              "tirx_layout_tmem_ld: num is 128, expected a power of two from 1 to 64");
  expect_null(tirx_layout_tmem_ld(A, TIRX_TMEM_16X256B, 64), TIRX_E_INVALID_ARG,
              "tirx_layout_tmem_ld: num is 64, expected a power of two from 1 to 32");
}
