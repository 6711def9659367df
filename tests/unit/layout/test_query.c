/* src/layout/query.c: the storage view, contiguity and vector width, against brute force. */
#include "../helpers.h"

static tirx_arena *A;
static void setup(void) { A = tirx_arena_create(); }
static void teardown(void) { tirx_arena_destroy(A); }
TestSuite(query, .init = setup, .fini = teardown);

static tirx_layout *parse(const char *text) {
  tirx_layout *l = tirx_layout_parse(A, text);
  cr_assert_not_null(l, "parse(\"%s\"): %s", text, tirx_last_error());
  return l;
}

/* ---- storage view ---------------------------------------------------------------------------- */

Test(query, storage_view_of_the_paper_tile) {
  tirx_layout *l = parse("(8,2,4,2):(4@laneid,1@warpid,1@laneid,1@reg)+[2:4@warpid]+5@warpid");
  char *s = tirx_layout_str(tirx_layout_storage_view(A, l, 0));
  cr_assert_str_eq(s, "(8,2,4,2):(0@m,0@m,0@m,1@reg)");
  free(s);
  uint64_t lanes = (UINT64_C(1) << TIRX_AXIS_LANEID) | (UINT64_C(1) << TIRX_AXIS_REG);
  s = tirx_layout_str(tirx_layout_storage_view(A, l, lanes));
  cr_assert_str_eq(s, "(8,2,4,2):(4@laneid,0@m,1@laneid,1@reg)");
  free(s);
  tirx_layout *g = parse("((2,8),(3)):((1@pid,4@m),(1@m))+[2:2@pid]+3@pid+1@m^sw(32,2)");
  s = tirx_layout_str(tirx_layout_storage_view(A, g, 0));
  cr_assert_str_eq(s, "((2,8),(3)):((0@m,4@m),(1@m))+1@m^sw(32,2)");
  free(s);
  /* Tensor memory is storage too: a warp's TMEM tile keeps its lanes and columns. */
  tirx_layout *t = parse("(32,8):(1@TLane,1@TCol)+[4:32@TLane]+1@laneid");
  s = tirx_layout_str(tirx_layout_storage_view(A, t, 0));
  cr_assert_str_eq(s, "(32,8):(1@TLane,1@TCol)+[4:32@TLane]");
  free(s);
}

/* view(x) is L(x) with the axes outside keep zeroed, as a set. */
Test(query, storage_view_projects_every_point) {
  uint64_t seed = 0x51e7;
  for (int t = 0; t < 400; t++) {
    tirx_layout *l = test_random_layout(A, &seed, 5, false);
    uint64_t keep = test_rand(&seed) & 0x1007; /* m, laneid, warpid, reg */
    uint64_t eff = keep ? keep : (UINT64_C(1) << TIRX_AXIS_M) | (UINT64_C(1) << TIRX_AXIS_REG);
    tirx_layout *v = tirx_layout_storage_view(A, l, keep);
    cr_assert_not_null(v, "%s", tirx_last_error());
    cr_assert_eq(tirx_layout_size(v), tirx_layout_size(l));
    for (int64_t x = 0; x < tirx_layout_size(l); x++) {
      int64_t n, nv;
      tirx_coord *pts = test_point_set(l, x, &n);
      for (int64_t k = 0; k < n; k++)
        for (int ax = 0; ax < TIRX_AXIS_MAX; ax++)
          if (!(eff >> ax & 1)) pts[k].v[ax] = 0;
      qsort(pts, (size_t)n, sizeof *pts, test_coord_cmp);
      int64_t u = 0;
      for (int64_t k = 0; k < n; k++)
        if (u == 0 || test_coord_cmp(&pts[u - 1], &pts[k]) != 0) pts[u++] = pts[k];
      tirx_coord *got = test_point_set(v, x, &nv);
      cr_assert_eq(nv, u);
      cr_assert(memcmp(got, pts, (size_t)u * sizeof *pts) == 0);
      free(pts);
      free(got);
    }
  }
}

/* ---- brute-force contiguity ------------------------------------------------------------------ */

/* All points of x in replica order (malloc'ed). */
static tirx_coord *points(const tirx_layout *l, int64_t x, int64_t *n) {
  tirx_layout_eval(l, x, NULL, 0, n);
  tirx_coord *p = calloc((size_t)*n, sizeof *p);
  cr_assert_eq(tirx_layout_eval(l, x, p, *n, n), TIRX_OK);
  return p;
}

/* Whether every replica point of y is that of x moved by exactly j on m. */
static bool unit_steps(const tirx_layout *l, int64_t x, int64_t y, int64_t j) {
  int64_t n;
  tirx_coord *a = points(l, x, &n), *b = points(l, y, &n);
  bool ok = true;
  for (int64_t k = 0; k < n && ok; k++) {
    a[k].v[TIRX_AXIS_M] += j;
    ok = memcmp(&a[k], &b[k], sizeof a[k]) == 0;
  }
  free(a);
  free(b);
  return ok;
}

/* Whether every aligned block of r elements steps by one on m. */
static bool blocks_contiguous(const tirx_layout *l, int64_t r) {
  for (int64_t x = 0; x < tirx_layout_size(l); x++)
    if (x % r != 0 && !unit_steps(l, x - 1, x, 1)) return false;
  return true;
}

static int64_t brute_contiguous(const tirx_layout *l) {
  int64_t size = tirx_layout_size(l);
  tirx_layout *pre = tirx_layout_swizzle(A, l, 0, 0);
  if (size == 1) return 1;
  if (!unit_steps(pre, 0, 1, 1)) return 0;
  int64_t run = 1;
  for (int64_t r = size; r > 1; r--)
    if (size % r == 0 && blocks_contiguous(pre, r)) {
      run = r;
      break;
    }
  if (!tirx_layout_swizzle_bytes(l)) return run;
  /* Swizzled: the largest r dividing the run whose aligned blocks stay in a 16-byte chunk. */
  int64_t elem = tirx_layout_swizzle_elem_bytes(l);
  for (int64_t r = run; r > 1; r--) {
    if (run % r != 0) continue;
    bool ok = true;
    for (int64_t x = 0; x < size && ok; x += r) {
      int64_t n;
      tirx_coord *p = points(pre, x, &n);
      for (int64_t k = 0; k < n && ok; k++) {
        int64_t m = p[k].v[TIRX_AXIS_M];
        ok = (m * elem) >> 4 == ((m + r - 1) * elem) >> 4;
      }
      free(p);
    }
    if (ok) {
      cr_assert(blocks_contiguous(l, r), "swizzle broke a chunk");
      return r;
    }
  }
  return 1;
}

/*
 * The largest power of two v <= limit dividing the size whose aligned runs are contiguous on m
 * (with the other axes fixed) and start at a multiple of v, after the swizzle; when pre is set,
 * they must also be contiguous before it.
 */
static int64_t brute_vector_width(const tirx_layout *l, int64_t limit, bool pre_too) {
  tirx_layout *pre = tirx_layout_swizzle(A, l, 0, 0);
  int64_t size = tirx_layout_size(l), best = 1;
  for (int64_t v = 2; v <= limit && size % v == 0; v *= 2) {
    bool ok = blocks_contiguous(l, v) && (!pre_too || blocks_contiguous(pre, v));
    for (int64_t x = 0; x < size && ok; x += v) {
      int64_t n;
      tirx_coord *p = points(l, x, &n);
      for (int64_t k = 0; k < n && ok; k++) ok = p[k].v[TIRX_AXIS_M] % v == 0;
      free(p);
    }
    if (!ok) break;
    best = v;
  }
  return best;
}

/* A random memory layout with strides and offsets that meet the swizzle's alignments. */
static tirx_layout *random_memory_layout(uint64_t *s) {
  static const int64_t extents[] = {1, 2, 3, 4, 8, 16, 6};
  static const int64_t strides[] = {1, 2, 4, 8, 16, 32, 64, 128, 0, -8, 3, 24, 48, 72, 512, -64};
  static const int sws[] = {0, 32, 64, 128}, elems[] = {1, 2, 4, 8};
  tirx_iter d[4], r[1];
  int nd = (int)test_rand_range(s, 1, 4), nr = test_rand(s) % 4 == 0;
  for (int i = 0; i < nd; i++)
    d[i] = (tirx_iter){extents[test_rand(s) % 7], strides[test_rand(s) % 16],
                       test_rand(s) % 6 ? TIRX_AXIS_M : TIRX_AXIS_LANEID};
  if (test_rand(s) % 2) d[nd - 1] = (tirx_iter){extents[test_rand(s) % 7], 1, TIRX_AXIS_M};
  if (nr) r[0] = (tirx_iter){2, strides[test_rand(s) % 16], TIRX_AXIS_M};
  tirx_axis_offset o = {TIRX_AXIS_M, test_rand(s) % 2 ? 0 : test_rand_range(s, -2, 2) * 8 *
                                                               (int64_t)(test_rand(s) % 3)};
  if (test_rand(s) % 5 == 0) o.value += test_rand_range(s, 0, 7);
  tirx_layout *l = tirx_layout_new(A, nd, d, nr, r, 1, &o);
  cr_assert_not_null(l, "%s", tirx_last_error());
  int sw = sws[test_rand(s) % 4];
  return sw ? tirx_layout_swizzle(A, l, sw, elems[test_rand(s) % 4]) : l;
}

Test(query, contiguous_matches_brute_force) {
  uint64_t seed = 0xc0a7;
  for (int t = 0; t < 1200; t++) {
    tirx_layout *l = t % 3 ? random_memory_layout(&seed) : test_random_layout(A, &seed, 4, false);
    cr_assert_eq(tirx_layout_contiguous(l), brute_contiguous(l), "%s", tirx_layout_str(l));
  }
}

Test(query, vector_width_matches_brute_force) {
  uint64_t seed = 0x7ec;
  static const int elem_sizes[] = {1, 2, 4, 8};
  for (int t = 0; t < 1200; t++) {
    tirx_layout *l = t % 3 ? random_memory_layout(&seed) : test_random_layout(A, &seed, 4, false);
    int elem = elem_sizes[test_rand(&seed) % 4], max = elem * (int)test_rand_range(&seed, 1, 40);
    int64_t got = tirx_layout_vector_width(l, elem, max);
    cr_assert_eq(got, brute_vector_width(l, max / elem, true), "%s, %d of %d bytes",
                 tirx_layout_str(l), elem, max);
    if (!tirx_layout_swizzle_bytes(l)) cr_assert_eq(got, brute_vector_width(l, max / elem, false));
  }
}

Test(query, paper_layouts) {
  tirx_layout *pitch = parse("(64,128):(136@m,1@m)");
  cr_assert_eq(tirx_layout_contiguous(pitch), 128);
  cr_assert_eq(tirx_layout_vector_width(pitch, 2, 16), 8);
  cr_assert_eq(tirx_layout_vector_width(pitch, 4, 16), 4);
  cr_assert_eq(tirx_layout_vector_width(parse("(64,128):(130@m,1@m)"), 2, 16), 2);
  tirx_layout *interleave = parse("(2,64):(1@m,2@m)");
  cr_assert_eq(tirx_layout_contiguous(interleave), 0);
  cr_assert_eq(tirx_layout_vector_width(interleave, 2, 16), 1);
  cr_assert_eq(tirx_layout_contiguous(parse("():()")), 1);
  cr_assert_eq(tirx_layout_vector_width(parse("():()+3@m"), 2, 16), 1);
  cr_assert_eq(tirx_layout_contiguous(parse("(2,4):(4,1)")), 8);
  cr_assert_eq(tirx_layout_contiguous(parse("(4,2):(1@lane,1@m)")), 2);
  cr_assert_eq(tirx_layout_vector_width(parse("(4,2):(1@lane,1@m)"), 2, 16), 2);
  /* A replica at an odd place limits the vector width. */
  cr_assert_eq(tirx_layout_vector_width(parse("(8):(1)+[2:4@m]"), 1, 16), 4);
  cr_assert_eq(tirx_layout_vector_width(parse("(8):(1)+4@m"), 1, 16), 4);
}

Test(query, swizzled_shared_memory_tiles) {
  /* 128B swizzle over bf16: 16-byte chunks stay whole, 32-byte runs break on odd rows. */
  tirx_layout *t = tirx_layout_smem_tile(A, 64, 64, 2, 128);
  cr_assert_eq(tirx_layout_contiguous(t), 8);
  cr_assert_eq(tirx_layout_vector_width(t, 2, 16), 8);
  cr_assert_eq(tirx_layout_vector_width(t, 2, 64), 8);
  /* Only row 0 of each atom is used: the XOR is 0 there, so whole rows are contiguous. */
  cr_assert_eq(tirx_layout_vector_width(parse("(4,64):(512,1)^sw(128,2)"), 2, 256), 64);
  /* Rows 0, 2, 4, 6: the XOR has no chunk bit 0, so 32-byte runs survive. */
  cr_assert_eq(tirx_layout_vector_width(parse("(4,64):(128,1)^sw(128,2)"), 2, 256), 16);
  tirx_layout *plain = tirx_layout_smem_tile(A, 8, 64, 2, 0);
  cr_assert_eq(tirx_layout_contiguous(plain), 512);
  cr_assert_eq(tirx_layout_vector_width(plain, 2, 16), 8);
}

/*
 * Runs are judged before the swizzle as well as after it. Here the two halves are 8 elements
 * apart in reverse order before the swizzle, and row 1's XOR happens to swap them back into one
 * run of 16 after it; the width stays 8, since no iter of the layout is 16 long on m.
 */
Test(query, vector_width_needs_runs_contiguous_before_the_swizzle_too) {
  tirx_layout *l = parse("(2,8):(-8,1)+72@m^sw(128,2)");
  cr_assert_eq(brute_vector_width(l, 16, false), 16);
  cr_assert_eq(brute_vector_width(l, 16, true), 8);
  cr_assert_eq(tirx_layout_vector_width(l, 2, 32), 8);
  cr_assert_eq(tirx_layout_contiguous(l), 8);
}

Test(query, bad_arguments_are_reported) {
  tirx_layout *l = parse("(8):(1)");
  expect_null(tirx_layout_storage_view(NULL, l, 0), TIRX_E_NULL_ARG,
              "tirx_layout_storage_view: arena is NULL");
  expect_null(tirx_layout_storage_view(A, NULL, 0), TIRX_E_NULL_ARG,
              "tirx_layout_storage_view: layout is NULL");
  expect_null(tirx_layout_storage_view(A, l, UINT64_C(1) << 40), TIRX_E_INVALID_ARG,
              "tirx_layout_storage_view: keep_mask 0x10000000000 has bits above axis 31");
  tirx_clear_error();
  cr_assert_eq(tirx_layout_contiguous(NULL), 0);
  cr_assert_str_eq(tirx_last_error(), "tirx_layout_contiguous: layout is NULL");
  cr_assert_eq(tirx_layout_vector_width(NULL, 2, 16), 0);
  cr_assert_str_eq(tirx_last_error(), "tirx_layout_vector_width: layout is NULL");
  cr_assert_eq(tirx_layout_vector_width(l, 0, 16), 0);
  cr_assert_str_eq(tirx_last_error(), "tirx_layout_vector_width: elem_bytes is 0, expected >= 1");
  cr_assert_eq(tirx_layout_vector_width(l, 4, 2), 0);
  cr_assert_str_eq(tirx_last_error(),
                   "tirx_layout_vector_width: max_bytes is 2, expected >= elem_bytes (4)");
  cr_assert_eq(tirx_last_status(), TIRX_E_INVALID_ARG);
}
