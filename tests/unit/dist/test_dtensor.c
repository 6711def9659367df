/* src/dist/dtensor.c: local shapes against brute force over every element, the layout rules
 * and the buffer checks with their exact messages. */
#include "../helpers.h"
#include "dist/dist.h"

static tirx_arena *arena;
static void setup(void) { arena = tirx_arena_create(); }
static void teardown(void) { tirx_arena_destroy(arena); }
TestSuite(dist_dtensor, .init = setup, .fini = teardown);

static tirx_layout *L(const char *text) {
  tirx_layout *l = tirx_layout_parse(arena, text);
  cr_assert_not_null(l, "%s: %s", text, tirx_last_error());
  return l;
}

static tirx_dtensor *make(tirx_dtype dt, int rank, const int64_t *shape, const char *layout,
                          int nranks, tirx_partial p) {
  tirx_dtensor *t = NULL;
  cr_assert_eq(tirx_dtensor_create(dt, rank, shape, L(layout), nranks, p, &t), TIRX_OK, "%s: %s",
               layout, tirx_last_error());
  return t;
}

/*
 * The law of the local part: on every holding rank, the global elements it holds, taken in
 * row-major order of their global index, sit at the local buffer positions of the local shape
 * and strides taken in row-major order. Checked through tirx_layout_eval_nd over every element.
 */
static void check_local_law(const tirx_dtensor *t) {
  int rank = tirx_dtensor_rank(t), n = tirx_dtensor_nranks(t);
  int64_t shape[TIRX_LAYOUT_MAX_RANK], lshape[TIRX_LAYOUT_MAX_RANK], lstr[TIRX_LAYOUT_MAX_RANK];
  cr_assert_eq(tirx_layout_shape(tirx_dtensor_layout(t), shape, TIRX_LAYOUT_MAX_RANK), TIRX_OK);
  cr_assert_eq(tirx_dtensor_local_shape(t, lshape, lstr, TIRX_LAYOUT_MAX_RANK), TIRX_OK);
  int64_t size = tirx_layout_size(tirx_dtensor_layout(t)), lsize = tirx_dtensor_local_size(t);
  int64_t *next = calloc((size_t)n, sizeof *next); /* per rank: the local index expected next */
  int64_t idx[TIRX_LAYOUT_MAX_RANK] = {0};
  tirx_coord pts[64];
  for (int64_t x = 0; x < size; x++) {
    int64_t count = 0;
    cr_assert_eq(tirx_layout_eval_nd(tirx_dtensor_layout(t), idx, pts, 64, &count), TIRX_OK);
    for (int64_t c = 0; c < count; c++) {
      int64_t p = pts[c].v[TIRX_AXIS_PID];
      cr_assert(p >= 0 && p < n && tirx_dtensor_on_rank(t, (int)p), "x=%lld on rank %lld",
                (long long)x, (long long)p);
      /* the next local index of rank p, in row-major order of the local shape */
      int64_t li = next[p]++, off = 0;
      cr_assert_lt(li, lsize);
      for (int k = rank - 1; k >= 0; k--) {
        off += (li % lshape[k]) * lstr[k];
        li /= lshape[k];
      }
      cr_assert_eq(pts[c].v[TIRX_AXIS_M], off, "x=%lld rank %lld: m %lld, local offset %lld",
                   (long long)x, (long long)p, (long long)pts[c].v[TIRX_AXIS_M], (long long)off);
    }
    for (int k = rank - 1; k >= 0 && ++idx[k] == shape[k]; k--) idx[k] = 0;
  }
  for (int p = 0; p < n; p++)
    cr_assert_eq(next[p], tirx_dtensor_on_rank(t, p) ? lsize : 0, "rank %d holds %lld", p,
                 (long long)next[p]);
  free(next);
}

Test(dist_dtensor, paper_s0s1_and_s0r_on_a_2x2_mesh) {
  int64_t g[] = {64, 128}, ls[2], st[2];
  /* The paper's S0S1, literally: each rank's 32x64 block has rows 128 elements apart. */
  tirx_dtensor *s0s1 = make(TIRX_F32, 2, g, "(2,32,2,64):(1@pid,128@m,2@pid,1@m)", 4,
                            TIRX_PARTIAL_NONE);
  cr_assert_eq(tirx_dtensor_local_shape(s0s1, ls, st, 2), TIRX_OK);
  cr_assert(ls[0] == 32 && ls[1] == 64 && st[0] == 128 && st[1] == 1);
  cr_assert_eq(tirx_dtensor_local_size(s0s1), 2048);
  for (int r = 0; r < 4; r++) cr_assert(tirx_dtensor_on_rank(s0s1, r));
  check_local_law(s0s1);
  char *s = tirx_dtensor_str(s0s1);
  cr_assert_str_eq(s, "f32[64,128] over 4 ranks: ((2,32),(2,64)):((1@pid,128@m),(2@pid,1@m))");
  free(s);
  /* S0R: rows over pid bit 0, copies over bit 1. */
  tirx_dtensor *s0r = make(TIRX_BF16, 2, g, "(2,32,128):(1@pid,128@m,1@m)+[2:2@pid]", 4,
                           TIRX_PARTIAL_NONE);
  cr_assert_eq(tirx_dtensor_local_shape(s0r, ls, st, 2), TIRX_OK);
  cr_assert(ls[0] == 32 && ls[1] == 128 && st[0] == 128 && st[1] == 1);
  check_local_law(s0r);
  tirx_dtensor_destroy(s0s1);
  tirx_dtensor_destroy(s0r);
}

Test(dist_dtensor, local_parts_of_many_layouts) {
  static const struct {
    int rank;
    int64_t shape[3];
    const char *layout;
    int nranks;
    int64_t lshape[3], lstrides[3];
    bool dense;
    int holders;
  } cases[] = {
      {2, {64, 128}, "(2,32,2,64):(1@pid,64@m,2@pid,1@m)", 4, {32, 64}, {64, 1}, true, 4},
      {2, {8, 6}, "(8,6):(6,1)+[3:1@pid]", 3, {8, 6}, {6, 1}, true, 3},
      {2, {8, 6}, "(8,6):(6,1)+2@pid", 4, {8, 6}, {6, 1}, true, 1},     /* on rank 2 only */
      {2, {8, 6}, "(4,2,6):(6,1@pid,1)", 2, {4, 6}, {6, 1}, true, 2},   /* cyclic rows */
      {2, {8, 6}, "(2,4,6):(-1@pid,6,1)+1@pid", 2, {4, 6}, {6, 1}, true, 2}, /* reversed ranks */
      {2, {8, 6}, "(8,3,2):(1,8,1@pid)", 2, {8, 3}, {1, 8}, true, 2},   /* column-major local */
      {2, {5, 7}, "(5,7):(16,2)", 1, {5, 7}, {16, 2}, false, 1},        /* padded, not dense */
      {3, {3, 4, 10}, "(3,4,10):(1@pid,10,1)", 3, {1, 4, 10}, {1, 10, 1}, true, 3},
      {3, {3, 3, 7}, "(3,3,7):(7,1@pid,1)", 3, {3, 1, 7}, {7, 1, 1}, true, 3},
      {1, {12}, "(3,4):(1@pid,1)+[2:3@pid]", 6, {4}, {1}, true, 6},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    tirx_dtensor *t = make(TIRX_F16, cases[i].rank, cases[i].shape, cases[i].layout,
                           cases[i].nranks, TIRX_PARTIAL_NONE);
    int64_t ls[3], st[3];
    cr_assert_eq(tirx_dtensor_local_shape(t, ls, st, 3), TIRX_OK);
    for (int k = 0; k < cases[i].rank; k++) {
      cr_assert_eq(ls[k], cases[i].lshape[k], "%s dim %d", cases[i].layout, k);
      cr_assert_eq(st[k], cases[i].lstrides[k], "%s dim %d", cases[i].layout, k);
    }
    cr_assert_eq(t->local_dense, cases[i].dense, "%s", cases[i].layout);
    cr_assert_eq(t->nholders, cases[i].holders, "%s", cases[i].layout);
    check_local_law(t);
    tirx_dtensor_destroy(t);
  }
}

Test(dist_dtensor, random_layouts_keep_the_law) {
  /* Random splits of two dimensions over pid and m with dense local parts. */
  uint64_t seed = 0x5eed1234;
  for (int iter = 0; iter < 200; iter++) {
    int64_t p0 = test_rand_range(&seed, 1, 3), p1 = test_rand_range(&seed, 1, 3);
    int64_t a = test_rand_range(&seed, 1, 5), b = test_rand_range(&seed, 1, 5);
    int64_t copies = test_rand_range(&seed, 1, 2);
    bool pid_outer0 = test_rand(&seed) & 1, pid_outer1 = test_rand(&seed) & 1;
    int64_t shape[2] = {p0 * a, p1 * b};
    int nranks = (int)(p0 * p1 * copies) + (int)test_rand_range(&seed, 0, 2);
    char text[256];
    /* dim 0: p0 over pid stride 1, a rows on m stride b; dim 1: p1 over pid stride p0, b on m */
    char d0[64], d1[64];
    if (pid_outer0)
      snprintf(d0, sizeof d0, "(%lld,%lld):(1@pid,%lld@m)", (long long)p0, (long long)a,
               (long long)b);
    else
      snprintf(d0, sizeof d0, "(%lld,%lld):(%lld@m,1@pid)", (long long)a, (long long)p0,
               (long long)b);
    if (pid_outer1)
      snprintf(d1, sizeof d1, "(%lld,%lld):(%lld@pid,1@m)", (long long)p1, (long long)b,
               (long long)p0);
    else
      snprintf(d1, sizeof d1, "(%lld,%lld):(1@m,%lld@pid)", (long long)b, (long long)p1,
               (long long)p0);
    /* grouped text: ((d0 extents),(d1 extents)):((d0 strides),(d1 strides)) */
    char e0[32], s0[32], e1[32], s1[32];
    sscanf(d0, "(%31[^)]):(%31[^)])", e0, s0);
    sscanf(d1, "(%31[^)]):(%31[^)])", e1, s1);
    snprintf(text, sizeof text, "((%s),(%s)):((%s),(%s))+[%lld:%lld@pid]", e0, e1, s0, s1,
             (long long)copies, (long long)(p0 * p1));
    tirx_dtensor *t = make(TIRX_F32, 2, shape, text, nranks, TIRX_PARTIAL_NONE);
    cr_assert(t->local_dense, "%s", text);
    cr_assert_eq(tirx_dtensor_local_size(t), a * b);
    check_local_law(t);
    tirx_dtensor_destroy(t);
  }
}

Test(dist_dtensor, creation_errors) {
  int64_t g[] = {64, 128};
  tirx_dtensor *t = NULL;
  tirx_layout *ok = L("(64,128):(128,1)");
  expect_error(tirx_dtensor_create(TIRX_F32, 2, g, ok, 4, TIRX_PARTIAL_NONE, NULL),
               TIRX_E_NULL_ARG, "tirx_dtensor_create: out is NULL");
  expect_error(tirx_dtensor_create(TIRX_F32, 2, NULL, ok, 4, TIRX_PARTIAL_NONE, &t),
               TIRX_E_NULL_ARG, "tirx_dtensor_create: shape is NULL");
  expect_error(tirx_dtensor_create(TIRX_F32, 2, g, NULL, 4, TIRX_PARTIAL_NONE, &t),
               TIRX_E_NULL_ARG, "tirx_dtensor_create: layout is NULL");
  expect_error(tirx_dtensor_create((tirx_dtype)99, 2, g, ok, 4, TIRX_PARTIAL_NONE, &t),
               TIRX_E_INVALID_ARG, "tirx_dtensor_create: dtype 99 is not a tirx_dtype");
  expect_error(tirx_dtensor_create(TIRX_F32, 0, g, ok, 4, TIRX_PARTIAL_NONE, &t),
               TIRX_E_INVALID_ARG, "tirx_dtensor_create: rank is 0, expected 1 to 16");
  expect_error(tirx_dtensor_create(TIRX_F32, 2, (int64_t[]){64, 0}, ok, 4, TIRX_PARTIAL_NONE, &t),
               TIRX_E_INVALID_ARG, "tirx_dtensor_create: shape[1] is 0, expected >= 1");
  expect_error(tirx_dtensor_create(TIRX_F32, 2, g, ok, 0, TIRX_PARTIAL_NONE, &t),
               TIRX_E_INVALID_ARG, "tirx_dtensor_create: nranks is 0, expected 1 to 65536");
  expect_error(tirx_dtensor_create(TIRX_F32, 2, g, ok, 4, (tirx_partial)7, &t),
               TIRX_E_INVALID_ARG, "tirx_dtensor_create: partial 7 is not a tirx_partial");
  expect_error(tirx_dtensor_create(TIRX_F32, 2, g, L("(64,4,32):(4@warpid,1@laneid,1)"), 4,
                                   TIRX_PARTIAL_NONE, &t),
               TIRX_E_INVALID_ARG,
               "tirx_dtensor_create: layout uses axis warpid; a distributed layout uses pid and "
               "m only");
  expect_error(tirx_dtensor_create(TIRX_F32, 2, g, L("(64,128):(128,1)+[2:1@cta]"), 4,
                                   TIRX_PARTIAL_NONE, &t),
               TIRX_E_INVALID_ARG,
               "tirx_dtensor_create: layout uses axis cta; a distributed layout uses pid and m "
               "only");
  expect_error(tirx_dtensor_create(TIRX_F32, 2, g, L("(64,128):(128,1)+[2:8192@m]"), 4,
                                   TIRX_PARTIAL_NONE, &t),
               TIRX_E_INVALID_ARG,
               "tirx_dtensor_create: replica [2:8192@m] is on m; a distributed layout places "
               "copies on pid");
  expect_error(tirx_dtensor_create(TIRX_F32, 2, g, L("(64,128):(128,1)+3@warpid"), 4,
                                   TIRX_PARTIAL_NONE, &t),
               TIRX_E_INVALID_ARG,
               "tirx_dtensor_create: layout uses axis warpid; a distributed layout uses pid and "
               "m only");
  expect_error(tirx_dtensor_create(TIRX_F16, 2, (int64_t[]){8, 64}, L("(8,64):(64,1)^sw(128,2)"),
                                   1, TIRX_PARTIAL_NONE, &t),
               TIRX_E_INVALID_ARG,
               "tirx_dtensor_create: layout is swizzled; a distributed layout has no swizzle");
  expect_error(tirx_dtensor_create(TIRX_F32, 2, g, L("(64,64):(64,1)"), 4, TIRX_PARTIAL_NONE, &t),
               TIRX_E_INVALID_ARG,
               "tirx_dtensor_create: layout has 4096 elements, global shape (64,128) has 8192");
  expect_error(tirx_dtensor_create(TIRX_F32, 2, (int64_t[]){6, 4}, L("(4,6):(6,1)"), 1,
                                   TIRX_PARTIAL_NONE, &t),
               TIRX_E_NOT_REPRESENTABLE,
               "tirx_dtensor_create: layout cannot be grouped to the global shape (6,4): "
               "tirx_layout_group: (4,6) cannot be grouped to (6,4)");
  expect_error(tirx_dtensor_create(TIRX_F32, 2, g, L("(64,128):(128,1)+5@m"), 4,
                                   TIRX_PARTIAL_NONE, &t),
               TIRX_E_INVALID_ARG,
               "tirx_dtensor_create: layout has offset 5 on m; a local part starts at its buffer "
               "(offset 0)");
  expect_error(tirx_dtensor_create(TIRX_F32, 2, g, L("(4,2,8,128):(16,1@pid,1,128)"), 2,
                                   TIRX_PARTIAL_NONE, &t),
               TIRX_E_NOT_REPRESENTABLE,
               "tirx_dtensor_create: dim 0's local part (4,8):(16,1) is not one stride; a local "
               "buffer has one stride per dimension");
  expect_error(tirx_dtensor_create(TIRX_F32, 2, g, L("(64,128):(-128,1)"), 1,
                                   TIRX_PARTIAL_NONE, &t),
               TIRX_E_INVALID_ARG,
               "tirx_dtensor_create: dim 0 has m stride -128; local strides must be positive");
  expect_error(tirx_dtensor_create(TIRX_F32, 2, g, L("(4,16,128):(1@pid,128,1)"), 2,
                                   TIRX_PARTIAL_NONE, &t),
               TIRX_E_INVALID_ARG,
               "tirx_dtensor_create: layout needs 4 ranks (4 parts x 1 copies), the mesh has 2");
  expect_error(tirx_dtensor_create(TIRX_F32, 2, g, L("(2,32,128):(1@pid,128,1)+3@pid"), 4,
                                   TIRX_PARTIAL_NONE, &t),
               TIRX_E_OUT_OF_RANGE,
               "tirx_dtensor_create: layout places a part on rank 4, outside the mesh [0, 4)");
  expect_error(tirx_dtensor_create(TIRX_F32, 2, g, L("(2,32,128):(1@pid,128,1)+[2:1@pid]"), 4,
                                   TIRX_PARTIAL_NONE, &t),
               TIRX_E_INVALID_ARG,
               "tirx_dtensor_create: layout places two parts on rank 1; a rank holds at most one "
               "part");
  cr_assert_null(t);
}

Test(dist_dtensor, buffer_checks) {
  int64_t g[] = {64, 128};
  tirx_dtensor *t = make(TIRX_F32, 2, g, "(2,32,2,64):(1@pid,128@m,2@pid,1@m)", 4,
                         TIRX_PARTIAL_NONE);
  float *buf = (float *)(uintptr_t)0x10000;
  int64_t ls[] = {32, 64}, st[] = {128, 1};
  tirx_tensor_arg a = {buf, TIRX_F32, 2, ls, st};
  cr_assert_eq(tirx_dtensor_check(t, 3, &a), TIRX_OK, "%s", tirx_last_error());
  expect_error(tirx_dtensor_check(NULL, 0, &a), TIRX_E_NULL_ARG, "tirx_dtensor_check: t is NULL");
  expect_error(tirx_dtensor_check(t, 4, &a), TIRX_E_OUT_OF_RANGE,
               "tirx_dtensor_check: rank 4 is outside [0, 4)");
  expect_error(tirx_dtensor_check(t, 1, NULL), TIRX_E_NULL_ARG,
               "tirx_dtensor_check: rank 1: local is NULL");
  tirx_tensor_arg b = a;
  b.data = NULL;
  expect_error(tirx_dtensor_check(t, 1, &b), TIRX_E_NULL_ARG,
               "tirx_dtensor_check: rank 1: data is NULL");
  b = a;
  b.dtype = TIRX_F16;
  expect_error(tirx_dtensor_check(t, 1, &b), TIRX_E_LAUNCH_ARG,
               "tirx_dtensor_check: rank 1: dtype is f16, expected f32");
  b = a;
  b.rank = 3;
  expect_error(tirx_dtensor_check(t, 1, &b), TIRX_E_LAUNCH_ARG,
               "tirx_dtensor_check: rank 1: the buffer has 3 dimensions, expected 2");
  b = a;
  b.shape = NULL;
  expect_error(tirx_dtensor_check(t, 1, &b), TIRX_E_NULL_ARG,
               "tirx_dtensor_check: rank 1: shape is NULL");
  b = a;
  b.shape = (int64_t[]){64, 64};
  expect_error(tirx_dtensor_check(t, 1, &b), TIRX_E_LAUNCH_ARG,
               "tirx_dtensor_check: rank 1: shape[0] is 64, expected 32");
  b = a;
  b.strides = NULL; /* dense row-major (64, 1) is not the layout's (128, 1) */
  expect_error(tirx_dtensor_check(t, 2, &b), TIRX_E_LAUNCH_ARG,
               "tirx_dtensor_check: rank 2: strides[0] is 64, expected 128");
  b = a;
  b.data = (char *)buf + 2;
  expect_error(tirx_dtensor_check(t, 0, &b), TIRX_E_LAUNCH_ARG,
               "tirx_dtensor_check: rank 0: data 0x10002 is not aligned to 4 bytes");
  tirx_dtensor_destroy(t);

  /* A rank that holds nothing may pass NULL; an extent-1 dim's stride is not compared. */
  tirx_dtensor *root = make(TIRX_I32, 3, (int64_t[]){1, 4, 6}, "(1,4,6):(1,6,1)+2@pid", 4,
                            TIRX_PARTIAL_NONE);
  cr_assert_eq(tirx_dtensor_check(root, 0, NULL), TIRX_OK);
  cr_assert_eq(tirx_dtensor_check(root, 2, &(tirx_tensor_arg){buf, TIRX_I32, 3,
                                                               (int64_t[]){1, 4, 6},
                                                               (int64_t[]){999, 6, 1}}),
               TIRX_OK, "%s", tirx_last_error());
  expect_error(tirx_dtensor_check(root, 2, NULL), TIRX_E_NULL_ARG,
               "tirx_dtensor_check: rank 2: local is NULL");
  tirx_dtensor_destroy(root);
}

Test(dist_dtensor, accessors_and_null) {
  cr_assert_eq(tirx_dtensor_rank(NULL), 0);
  cr_assert_eq(tirx_dtensor_nranks(NULL), 0);
  cr_assert_eq(tirx_dtensor_local_size(NULL), 0);
  cr_assert_null(tirx_dtensor_layout(NULL));
  cr_assert_null(tirx_dtensor_str(NULL));
  cr_assert_not(tirx_dtensor_on_rank(NULL, 0));
  tirx_dtensor_destroy(NULL);
  expect_error(tirx_dtensor_local_shape(NULL, NULL, NULL, 2), TIRX_E_NULL_ARG,
               "tirx_dtensor_local_shape: t is NULL");
  tirx_dtensor *t = make(TIRX_F64, 1, (int64_t[]){12}, "(12):(1)+[3:1@pid]", 3, TIRX_PARTIAL_MAX);
  expect_error(tirx_dtensor_local_shape(t, NULL, NULL, 0), TIRX_E_BUFFER_TOO_SMALL,
               "tirx_dtensor_local_shape: cap is 0, the rank is 1");
  cr_assert_eq(tirx_dtensor_partial(t), TIRX_PARTIAL_MAX);
  cr_assert_eq(tirx_dtensor_dtype(t), TIRX_F64);
  cr_assert_not(tirx_dtensor_on_rank(t, 3));
  cr_assert_not(tirx_dtensor_on_rank(t, -1));
  char *s = tirx_dtensor_str(t);
  cr_assert_str_eq(s, "f64[12] over 3 ranks: ((12)):((1@m))+[3:1@pid] partial max");
  free(s);
  cr_assert_str_eq(tirx_partial_name(TIRX_PARTIAL_PROD), "prod");
  cr_assert_null(tirx_partial_name((tirx_partial)5));
  tirx_dtensor_destroy(t);
}
