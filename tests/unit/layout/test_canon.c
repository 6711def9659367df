/* src/layout/canon.c: the canonical form, placement equality and structural equality. */
#include "../helpers.h"

static tirx_arena *A;
static void setup(void) { A = tirx_arena_create(); }
static void teardown(void) { tirx_arena_destroy(A); }
TestSuite(canon, .init = setup, .fini = teardown);

static tirx_layout *parse(const char *text) {
  tirx_layout *l = tirx_layout_parse(A, text);
  cr_assert_not_null(l, "parse(\"%s\"): %s", text, tirx_last_error());
  return l;
}

static tirx_layout *canon(const tirx_layout *l) {
  tirx_layout *c = tirx_layout_canonicalize(A, l);
  cr_assert_not_null(c, "%s", tirx_last_error());
  return c;
}

/* The canonical text of l, malloc'ed. */
static char *canon_str(const tirx_layout *l) { return tirx_layout_str(canon(l)); }

static void assert_canon(const char *text, const char *want) {
  char *s = canon_str(parse(text));
  cr_assert_str_eq(s, want, "canonicalize(\"%s\")", text);
  free(s);
}

/* Brute-force placement equality (same size, same swizzle, same point set at every x). */
static bool brute_equal(const tirx_layout *a, const tirx_layout *b) {
  if (tirx_layout_size(a) != tirx_layout_size(b)) return false;
  if (tirx_layout_swizzle_bytes(a) != tirx_layout_swizzle_bytes(b) ||
      tirx_layout_swizzle_elem_bytes(a) != tirx_layout_swizzle_elem_bytes(b))
    return false;
  for (int64_t x = 0; x < tirx_layout_size(a); x++)
    if (!test_same_points(a, x, b, x)) return false;
  return true;
}

/* ---- documented rules ---------------------------------------------------------------------- */

Test(canon, paper_example_merges_to_one_iter) {
  assert_canon("(2,4):(4@m,1@m)", "(8):(1@m)");
  cr_assert(tirx_layout_equal(parse("(2,4):(4@m,1@m)"), parse("(8):(1@m)")));
}

Test(canon, each_rule) {
  /* Extent-1 iters dropped, everywhere. */
  assert_canon("(1,8,1):(5@lane,1,7@warp)", "(8):(1@m)");
  assert_canon("(1):(3)", "():()");
  assert_canon("(1):(3)+[1:4@warp]", "():()");
  /* Merges need the same axis and outer stride = inner extent * inner stride. */
  assert_canon("(2,3,4):(12,4,1)", "(24):(1@m)");
  assert_canon("(2,4):(4@lane,1@m)", "(2,4):(4@laneid,1@m)");
  assert_canon("(2,4):(8,1)", "(2,4):(8@m,1@m)");
  assert_canon("(3,2,4):(-8,-4,-1)", "(24):(-1@m)");
  assert_canon("(2,8,4,2):(1@warp,4@lane,1@lane,1@reg)", "(2,32,2):(1@warpid,1@laneid,1@reg)");
  /* Stride-0 iters go to m and merge. */
  assert_canon("(2,3,4):(0@lane,0@warp,1)", "(6,4):(0@m,1@m)");
  assert_canon("(4,2,3):(1,0@pid,0)", "(4,6):(1@m,0@m)");
  /* Replicas: stride 0 and extent 1 dropped, negative strides flipped into O, sorted, merged. */
  assert_canon("(4):(1)+[2:0@warp,1:4@warp]", "(4):(1@m)");
  assert_canon("(4):(1)+[2:-4@warp]", "(4):(1@m)+[2:4@warpid]+-4@warpid");
  assert_canon("(4):(1)+[3:-4@warp]+8@warp", "(4):(1@m)+[3:4@warpid]");
  assert_canon("(4):(1)+[2:4@warp,2:1@lane,2:8@m]", "(4):(1@m)+[2:8@m,2:1@laneid,2:4@warpid]");
  assert_canon("(4):(1)+[2:8@warp,2:4@warp]", "(4):(1@m)+[4:4@warpid]");
  assert_canon("(4):(1)+[2:1@warp,2:1@warp]", "(4):(1@m)+[3:1@warpid]");
  assert_canon("(4):(1)+[3:2@warp,2:4@warp]", "(4):(1@m)+[5:2@warpid]");
  assert_canon("(4):(1)+[2:2@warp,2:6@warp]", "(4):(1@m)+[2:2@warpid,2:6@warpid]");
  assert_canon("(4):(1)+[2:4@warp,3:-2@warp]", "(4):(1@m)+[5:2@warpid]+-4@warpid");
  /* Zero offsets dropped; the swizzle is kept. */
  assert_canon("(2,4):(4,1)+0@m^sw(64,2)", "(8):(1@m)^sw(64,2)");
}

Test(canon, grouping_is_kept_and_merges_stay_inside_a_dim) {
  assert_canon("((2,4),(3,1)):((12,3),(1,7@lane))", "((8),(3)):((3@m),(1@m))");
  assert_canon("((2),(4)):((4),(1))", "((2),(4)):((4@m),(1@m))");
  assert_canon("((1),(2,1)):((9),(1,4))", "((),(2)):((),(1@m))");
  assert_canon("((1,1),(8)):((1,1),(0@lane))", "((),(8)):((),(0@m))");
  tirx_layout *g = parse("((2),(4)):((4),(1))");
  cr_assert(tirx_layout_equal(g, parse("(8):(1)")));
  cr_assert_not(tirx_layout_same(g, parse("(8):(1)")));
  cr_assert(tirx_layout_equal(g, parse("((4),(2)):((2),(1))")));
}

Test(canon, swizzle_and_size_take_part_in_equality) {
  cr_assert_not(tirx_layout_equal(parse("(8):(1)"), parse("(8):(1)^sw(32,2)")));
  cr_assert_not(tirx_layout_equal(parse("(8):(1)^sw(64,2)"), parse("(8):(1)^sw(32,2)")));
  cr_assert_not(tirx_layout_equal(parse("(8):(1)^sw(32,4)"), parse("(8):(1)^sw(32,2)")));
  cr_assert(tirx_layout_equal(parse("(2,4):(4,1)^sw(32,4)"), parse("(8):(1)^sw(32,4)")));
  cr_assert_not(tirx_layout_equal(parse("(8):(0)"), parse("(4):(0)")));
  cr_assert_not(tirx_layout_equal(parse("(2):(1)+[2:1]"), parse("(2):(1)+[2:2]")));
}

/* ---- the law: canonicalize preserves placement --------------------------------------------- */

Test(canon, canonical_form_preserves_placement_and_is_idempotent) {
  uint64_t seed = 0xca70;
  for (int t = 0; t < 600; t++) {
    tirx_layout *l = test_random_layout(A, &seed, 6, t % 4 == 0), *c = canon(l);
    assert_same_placement(l, c);
    cr_assert(tirx_layout_equal(l, c));
    cr_assert(tirx_layout_same(c, canon(c)), "canonicalize is not idempotent on %s",
              tirx_layout_str(l));
    cr_assert_leq(tirx_layout_num_iters(c), tirx_layout_num_iters(l));
  }
}

/* ---- equal placements built differently ---------------------------------------------------- */

static tirx_axis pick_axis(uint64_t *s) {
  static const tirx_axis axes[] = {TIRX_AXIS_M, TIRX_AXIS_LANEID, TIRX_AXIS_WARPID, TIRX_AXIS_REG};
  return axes[test_rand(s) % 4];
}

/*
 * A layout with the placement of l spelled differently: composite iters split, extent-1 iters
 * inserted with junk strides, stride-0 iters moved to other axes, replicas split, reordered,
 * reversed (with the offset compensating) and padded with no-op replicas.
 */
static tirx_layout *respell(const tirx_layout *l, uint64_t *s) {
  tirx_iter d[64], r[64];
  tirx_axis_offset o[TIRX_AXIS_MAX];
  int nd = 0, nr = 0, no = 0;
  int64_t off[TIRX_AXIS_MAX] = {0};
  for (int i = 0; i < tirx_layout_num_offsets(l); i++) {
    tirx_axis_offset x;
    tirx_layout_offset_at(l, i, &x);
    off[x.axis] = x.value;
  }
  for (int i = 0; i < tirx_layout_num_iters(l); i++) {
    tirx_iter it;
    tirx_layout_iter(l, i, &it);
    if (test_rand(s) % 3 == 0) d[nd++] = (tirx_iter){1, test_rand_range(s, -9, 9), pick_axis(s)};
    if (it.stride == 0 && test_rand(s) % 2) it.axis = pick_axis(s);
    int64_t f = it.extent % 2 == 0 ? 2 : it.extent % 3 == 0 ? 3 : 1;
    if (f > 1 && it.extent > f && test_rand(s) % 2) {
      d[nd++] = (tirx_iter){it.extent / f, it.stride * f, it.axis};
      d[nd++] = (tirx_iter){f, it.stride, it.axis};
    } else {
      d[nd++] = it;
    }
  }
  if (test_rand(s) % 2) d[nd++] = (tirx_iter){1, 5, TIRX_AXIS_PID};
  for (int i = 0; i < tirx_layout_num_replicas(l); i++) {
    tirx_iter it;
    tirx_layout_replica(l, i, &it);
    int64_t f = it.extent % 2 == 0 ? 2 : 1;
    if (f > 1 && it.extent > f && test_rand(s) % 2) {
      r[nr++] = (tirx_iter){it.extent / f, it.stride * f, it.axis};
      it = (tirx_iter){f, it.stride, it.axis};
    }
    if (test_rand(s) % 2) { /* {0, s, ..} = (e-1)s + {0, -s, ..} */
      off[it.axis] += (it.extent - 1) * it.stride;
      it.stride = -it.stride;
    }
    r[nr++] = it;
  }
  if (test_rand(s) % 2) r[nr++] = (tirx_iter){test_rand_range(s, 1, 3), 0, pick_axis(s)};
  if (test_rand(s) % 2) r[nr++] = (tirx_iter){1, test_rand_range(s, -5, 5), pick_axis(s)};
  for (int i = nr - 1; i > 0; i--) { /* shuffle */
    int j = (int)(test_rand(s) % (uint64_t)(i + 1));
    tirx_iter t = r[i];
    r[i] = r[j];
    r[j] = t;
  }
  for (int ax = 0; ax < TIRX_AXIS_MAX; ax++)
    if (off[ax] || (ax == TIRX_AXIS_CTA && test_rand(s) % 2)) o[no++] = (tirx_axis_offset){ax, off[ax]};
  tirx_layout *x = tirx_layout_new(A, nd, d, nr, r, no, o);
  cr_assert_not_null(x, "%s", tirx_last_error());
  return x;
}

Test(canon, equal_placements_built_differently_have_one_canonical_form) {
  uint64_t seed = 0x5ba11;
  for (int t = 0; t < 600; t++) {
    tirx_layout *l = test_random_layout(A, &seed, 5, false), *v = respell(l, &seed);
    assert_same_placement(l, v); /* the respelling itself is right */
    char *cl = canon_str(l), *cv = canon_str(v);
    cr_assert_str_eq(cl, cv, "%s and %s", tirx_layout_str(l), tirx_layout_str(v));
    cr_assert(tirx_layout_equal(l, v));
    cr_assert(tirx_layout_equal(v, l));
    free(cl);
    free(cv);
  }
}

/*
 * The canonical form is a normal form: among many small random layouts, every two with the
 * same placement (found by brute force) print the same flat canonical text.
 */
typedef struct sig {
  char *placement; /* every point set, spelled out */
  char *canonical;
  tirx_layout *l;
} sig;

static int cmp_sig(const void *a, const void *b) {
  return strcmp(((const sig *)a)->placement, ((const sig *)b)->placement);
}

static char *placement_string(const tirx_layout *l) {
  size_t cap = 64, len = 0;
  char *out = malloc(cap);
  out[0] = '\0';
  for (int64_t x = 0; x < tirx_layout_size(l); x++) {
    int64_t n;
    tirx_coord *pts = test_point_set(l, x, &n);
    for (int64_t k = 0; k < n; k++) {
      char item[128];
      int w = snprintf(item, sizeof item, "%lld,%lld,%lld,%lld;", (long long)pts[k].v[0],
                       (long long)pts[k].v[1], (long long)pts[k].v[2], (long long)pts[k].v[12]);
      while (len + (size_t)w + 2 > cap) out = realloc(out, cap *= 2);
      memcpy(out + len, item, (size_t)w + 1);
      len += (size_t)w;
    }
    out[len++] = '|';
    out[len] = '\0';
  }
  return out;
}

Test(canon, brute_force_equal_placements_have_equal_canonical_forms) {
  enum { N = 3000 };
  static const int64_t strides[] = {0, 1, 2, 3, 4, 6, -1, -2};
  sig *sigs = calloc(N, sizeof *sigs);
  uint64_t seed = 0xbeef;
  for (int t = 0; t < N; t++) {
    tirx_iter d[3], r[2];
    tirx_axis_offset o = {TIRX_AXIS_M, test_rand_range(&seed, -3, 3)};
    int nd = (int)test_rand_range(&seed, 1, 3), nr = (int)test_rand_range(&seed, 0, 2);
    for (int i = 0; i < nd; i++)
      d[i] = (tirx_iter){test_rand_range(&seed, 1, 4), strides[test_rand(&seed) % 8],
                         test_rand(&seed) % 4 ? TIRX_AXIS_M : TIRX_AXIS_LANEID};
    for (int i = 0; i < nr; i++)
      r[i] = (tirx_iter){test_rand_range(&seed, 1, 3), strides[test_rand(&seed) % 8],
                         test_rand(&seed) % 3 ? TIRX_AXIS_M : TIRX_AXIS_LANEID};
    sigs[t].l = tirx_layout_new(A, nd, d, nr, r, 1, &o);
    cr_assert_not_null(sigs[t].l);
    sigs[t].placement = placement_string(sigs[t].l);
    sigs[t].canonical = canon_str(sigs[t].l);
  }
  qsort(sigs, N, sizeof *sigs, cmp_sig);
  int pairs = 0;
  for (int t = 1; t < N; t++) {
    if (strcmp(sigs[t - 1].placement, sigs[t].placement) != 0) continue;
    pairs++;
    cr_assert_str_eq(sigs[t - 1].canonical, sigs[t].canonical, "%s and %s place alike",
                     tirx_layout_str(sigs[t - 1].l), tirx_layout_str(sigs[t].l));
    cr_assert(tirx_layout_equal(sigs[t - 1].l, sigs[t].l));
  }
  cr_assert_gt(pairs, 100, "only %d equal pairs drawn", pairs);
  for (int t = 0; t < N; t++) {
    free(sigs[t].placement);
    free(sigs[t].canonical);
  }
  free(sigs);
}

Test(canon, equal_agrees_with_brute_force_on_random_pairs) {
  uint64_t seed = 0xe9a1;
  int equal_pairs = 0;
  for (int t = 0; t < 1500; t++) {
    tirx_layout *a = test_random_layout(A, &seed, 3, t % 3 == 0), *b;
    switch (t % 3) {
    case 0: b = test_random_layout(A, &seed, 3, t % 3 == 0); break;
    case 1: b = respell(a, &seed); break;
    default: { /* a respelling with one stride, replica or offset nudged */
      tirx_layout *v = respell(a, &seed);
      char *s = tirx_layout_str(v);
      char *p = strchr(s, '@');
      if (p && p[-1] >= '0' && p[-1] <= '8') p[-1]++;
      b = tirx_layout_parse(A, s);
      cr_assert_not_null(b, "%s", tirx_last_error());
      free(s);
    }
    }
    bool want = brute_equal(a, b);
    equal_pairs += want;
    cr_assert_eq(tirx_layout_equal(a, b), want, "%s vs %s", tirx_layout_str(a), tirx_layout_str(b));
    cr_assert_eq(tirx_layout_equal(b, a), want);
  }
  cr_assert_gt(equal_pairs, 400);
}

/* ---- overlapping replica sets ---------------------------------------------------------------- */

Test(canon, replica_point_sets_compare_as_sets) {
  /* {0,2,4} + {0,3} = {0,2,3,4,5,7} = {0,2} + {0,2} + {0,3}. */
  tirx_layout *a = parse("(2):(1@lane)+[3:2@warp,2:3@warp]");
  tirx_layout *b = parse("(2):(1@lane)+[2:2@warp,2:3@warp,2:2@warp]");
  cr_assert(brute_equal(a, b));
  cr_assert(tirx_layout_equal(a, b));
  /* {0,1,3,4} differs from {0,1,2,3,4}. */
  cr_assert_not(tirx_layout_equal(parse("(2):(1)+[2:1@warp,2:3@warp]"),
                                  parse("(2):(1)+[2:1@warp,2:3@warp,2:2@warp]")));
}

Test(canon, replica_enumeration_is_capped) {
  /* 21 iters [2:3^k@m] never merge and give 2^21 distinct points. */
  tirx_iter r[21];
  int64_t p = 1;
  for (int i = 0; i < 21; i++, p *= 3) r[i] = (tirx_iter){2, p, TIRX_AXIS_M};
  tirx_layout *a = tirx_layout_new(A, 0, NULL, 21, r, 0, NULL);
  r[20].stride = 2;
  tirx_layout *b = tirx_layout_new(A, 0, NULL, 21, r, 0, NULL);
  cr_assert(tirx_layout_equal(a, a));
  tirx_clear_error();
  cr_assert_not(tirx_layout_equal(a, b));
  cr_assert_eq(tirx_last_status(), TIRX_E_LIMIT);
  cr_assert_str_eq(tirx_last_error(),
                   "tirx_layout_equal: more than 1048576 replica points to compare on axis m");
}

/* ---- structural equality and errors -------------------------------------------------------- */

Test(canon, same_is_structural) {
  cr_assert(tirx_layout_same(parse("(2,4):(4,1)+5@warp"), parse("(2,4):(4@m,1@m)+5@warpid")));
  cr_assert_not(tirx_layout_same(parse("(2,4):(4,1)"), parse("(8):(1)")));
  cr_assert_not(tirx_layout_same(parse("(2,4):(4,1)"), parse("(2,4):(4,1)+1@m")));
  cr_assert_not(tirx_layout_same(parse("(2,4):(4,1)"), parse("((2,4)):((4,1))")));
  cr_assert_not(tirx_layout_same(parse("((2),(4)):((4),(1))"), parse("((2,4),()):((4,1),())")));
  cr_assert_not(tirx_layout_same(parse("(8):(1)+[2:1@pid]"), parse("(8):(1)+[2:2@pid]")));
  cr_assert_not(tirx_layout_same(parse("(8):(1)^sw(32,2)"), parse("(8):(1)^sw(32,4)")));
  cr_assert(tirx_layout_same(parse("():()"), parse("():()")));
}

Test(canon, null_arguments_are_reported) {
  tirx_layout *l = parse("(8):(1)");
  expect_null(tirx_layout_canonicalize(NULL, l), TIRX_E_NULL_ARG,
              "tirx_layout_canonicalize: arena is NULL");
  expect_null(tirx_layout_canonicalize(A, NULL), TIRX_E_NULL_ARG,
              "tirx_layout_canonicalize: layout is NULL");
  tirx_clear_error();
  cr_assert_not(tirx_layout_equal(NULL, l));
  cr_assert_str_eq(tirx_last_error(), "tirx_layout_equal: a is NULL");
  cr_assert_not(tirx_layout_equal(l, NULL));
  cr_assert_str_eq(tirx_last_error(), "tirx_layout_equal: b is NULL");
  cr_assert_not(tirx_layout_same(l, NULL));
  cr_assert_str_eq(tirx_last_error(), "tirx_layout_same: b is NULL");
  cr_assert_eq(tirx_last_status(), TIRX_E_NULL_ARG);
}
