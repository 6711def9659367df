/* src/layout/verify.c: tirx_layout_verify against a brute-force oracle over every point of
 * every element of small layouts, for random scopes; and its exact messages. */
#include "../helpers.h"

void tirx__arena_fail_after(int64_t n); /* src/core/arena.c */

static tirx_arena *A;
static void setup(void) {
  tirx_clear_error();
  A = tirx_arena_create();
}
static void teardown(void) {
  tirx__arena_fail_after(-1);
  tirx_arena_destroy(A);
}
TestSuite(verify, .init = setup, .fini = teardown);

typedef struct launch {
  int w, cs;
  int64_t k;
} launch;

static const tirx_axis thread_axes[] = {TIRX_AXIS_LANEID, TIRX_AXIS_WARPID, TIRX_AXIS_WID_IN_WG,
                                        TIRX_AXIS_WGID,   TIRX_AXIS_TID_IN_WG, TIRX_AXIS_TID,
                                        TIRX_AXIS_CBX,    TIRX_AXIS_CTA,       TIRX_AXIS_CLUSTER,
                                        TIRX_AXIS_CBY,    TIRX_AXIS_CBZ,       TIRX_AXIS_PID};
enum { NTA = sizeof thread_axes / sizeof thread_axes[0] };

/* The oracle's own tables: which axes a team's tile names, their extents and views. */
static bool allowed(tirx_team k, tirx_axis ax) {
  if (ax == TIRX_AXIS_LANEID) return k >= TIRX_TEAM_WARP;
  if (ax == TIRX_AXIS_WID_IN_WG || ax == TIRX_AXIS_TID_IN_WG) return k >= TIRX_TEAM_WARPGROUP;
  if (ax == TIRX_AXIS_WARPID || ax == TIRX_AXIS_WGID || ax == TIRX_AXIS_TID)
    return k >= TIRX_TEAM_CTA;
  if (ax == TIRX_AXIS_CBX) return k == TIRX_TEAM_CLUSTER;
  return false;
}

/* The coordinate of a thread (lane, warp, the CTA's rank c in its cluster) on a thread axis. */
static int64_t coord_of(tirx_axis ax, int64_t lane, int64_t warp, int64_t c) {
  int64_t t = warp * 32 + lane;
  switch (ax) {
  case TIRX_AXIS_LANEID: return lane;
  case TIRX_AXIS_WARPID: return warp;
  case TIRX_AXIS_WID_IN_WG: return warp % 4;
  case TIRX_AXIS_WGID: return warp / 4;
  case TIRX_AXIS_TID_IN_WG: return t % 128;
  case TIRX_AXIS_TID: return t;
  default: return c;
  }
}

/* The threads of one team of s (the first with an active thread), as (lane, warp, cbx). */
static int team_threads(const tirx_scope *s, launch L, int64_t (*out)[3]) {
  tirx_team k = tirx_scope_team_kind(s);
  for (int64_t x = 0; x < L.cs * L.k; x++)
    for (int64_t w = 0; w < L.w; w++)
      for (int64_t l = 0; l < 32; l++) {
        if (!tirx_scope_contains(s, l, w, x)) continue;
        /* Every member of this thread's team that is active. */
        int n = 0;
        for (int64_t x2 = 0; x2 < L.cs * L.k; x2++)
          for (int64_t w2 = 0; w2 < L.w; w2++)
            for (int64_t l2 = 0; l2 < 32; l2++) {
              bool same = k == TIRX_TEAM_THREAD      ? x2 == x && w2 == w && l2 == l
                          : k == TIRX_TEAM_WARP      ? x2 == x && w2 == w
                          : k == TIRX_TEAM_WARPGROUP ? x2 == x && w2 / 4 == w / 4
                          : k == TIRX_TEAM_CTA       ? x2 == x
                                                     : x2 / L.cs == x / L.cs;
              if (same && tirx_scope_contains(s, l2, w2, x2)) {
                out[n][0] = l2;
                out[n][1] = w2;
                out[n][2] = x2 % L.cs;
                n++;
              }
            }
        return n;
      }
  return 0;
}

/* True when brute force over every point finds l well formed for s. */
static bool oracle(const tirx_layout *l, const tirx_scope *s, launch L) {
  static int64_t th[32 * 32 * 16][3];
  int nt = team_threads(s, L, th);
  tirx_team k = tirx_scope_team_kind(s);
  int64_t size = tirx_layout_size(l), cnt;
  bool used[NTA] = {false};
  tirx_coord pts[64];
  for (int64_t x = 0; x < size; x++) {
    cr_assert_eq(tirx_layout_eval(l, x, pts, 64, &cnt), TIRX_OK);
    for (int64_t p = 0; p < cnt; p++)
      for (int a = 0; a < NTA; a++) used[a] |= pts[p].v[thread_axes[a]] != 0;
  }
  for (int a = 0; a < NTA; a++)
    if (used[a] && !allowed(k, thread_axes[a])) return false;
  for (int64_t x = 0; x < size; x++) {
    tirx_layout_eval(l, x, pts, 64, &cnt);
    for (int64_t p = 0; p < cnt; p++) {
      if (pts[p].v[TIRX_AXIS_REG] < 0) return false;
      bool placed = false;
      for (int i = 0; i < nt && !placed; i++) {
        bool same = true;
        for (int a = 0; a < 7 && same; a++)
          if (used[a]) same = pts[p].v[thread_axes[a]] == coord_of(thread_axes[a], th[i][0], th[i][1], th[i][2]);
        placed = same;
      }
      if (!placed) return false;
    }
  }
  return true;
}

static tirx_scope *random_scope(uint64_t *seed, launch *L) {
  static const int ws[] = {1, 2, 4, 8, 12};
  L->w = ws[test_rand(seed) % 5];
  L->cs = (int)test_rand_range(seed, 1, 3);
  L->k = test_rand_range(seed, 1, 2);
  tirx_scope *s = tirx_scope_new(A, L->w, L->cs, L->k);
  cr_assert_not_null(s);
  int nf = (int)test_rand_range(seed, 0, 2);
  for (int f = 0; f < nf; f++) {
    static const tirx_axis fa[] = {TIRX_AXIS_LANEID, TIRX_AXIS_WARPID, TIRX_AXIS_CBX,
                                   TIRX_AXIS_TID_IN_WG};
    tirx_axis ax = fa[test_rand(seed) % 4];
    int64_t ext = ax == TIRX_AXIS_LANEID ? 32 : ax == TIRX_AXIS_WARPID ? L->w
                  : ax == TIRX_AXIS_CBX  ? L->cs : 128;
    int64_t lo = test_rand_range(seed, 0, ext - 1), hi = test_rand_range(seed, lo + 1, ext);
    tirx_scope *t = tirx_scope_filter(A, s, ax, lo, hi);
    if (t) s = t;
  }
  tirx_scope *t = tirx_scope_team(A, s, (tirx_team)test_rand_range(seed, 0, 4));
  return t ? t : s;
}

/* Iters mostly on the axes the team may name, with small strides. */
static tirx_layout *random_layout(uint64_t *seed, tirx_team k) {
  tirx_iter d[4], r[2];
  tirx_axis_offset o[2];
  tirx_axis good[8];
  int ng = 0;
  for (int a = 0; a < 7; a++)
    if (allowed(k, thread_axes[a])) good[ng++] = thread_axes[a];
  good[ng++] = TIRX_AXIS_REG;
  good[ng++] = TIRX_AXIS_M;
  int nd = (int)test_rand_range(seed, 1, 4), nr = (int)test_rand_range(seed, 0, 2);
  int no = (int)test_rand_range(seed, 0, 2);
  for (int i = 0; i < nd + nr; i++) {
    tirx_iter *it = i < nd ? &d[i] : &r[i - nd];
    it->extent = test_rand_range(seed, 1, 4);
    it->stride = test_rand(seed) % 8 ? test_rand_range(seed, 0, 9) : test_rand_range(seed, -3, -1);
    it->axis = test_rand(seed) % 16 ? good[test_rand(seed) % (uint64_t)ng]
                                    : thread_axes[test_rand(seed) % NTA];
  }
  for (int i = 0; i < no; i++) {
    o[i].axis = i == 0 ? good[test_rand(seed) % (uint64_t)ng] : TIRX_AXIS_REG;
    o[i].value = test_rand_range(seed, 0, 12);
  }
  if (no == 2 && o[0].axis == TIRX_AXIS_REG) no = 1;
  tirx_layout *l = tirx_layout_new(A, nd, d, nr, r, no, o);
  cr_assert_not_null(l, "%s", tirx_last_error());
  return l;
}

Test(verify, matches_brute_force_on_random_layouts_and_scopes) {
  uint64_t seed = 0x7e51f;
  int ok = 0, bad = 0, placed_fail = 0;
  for (int t = 0; t < 3000; t++) {
    launch L;
    tirx_scope *s = random_scope(&seed, &L);
    tirx_layout *l = random_layout(&seed, tirx_scope_team_kind(s));
    bool want = oracle(l, s, L);
    tirx_clear_error();
    tirx_status st = tirx_layout_verify(l, s);
    char *str = tirx_layout_str(l), *ss = tirx_scope_str(s);
    cr_assert_eq(st == TIRX_OK, want, "%s for %s: got %s (%s)", str, ss, tirx_status_name(st),
                 tirx_last_error());
    if (st != TIRX_OK) {
      cr_assert_eq(st, TIRX_E_SCOPE, "%s", tirx_last_error());
      cr_assert(strncmp(tirx_last_error(), "tirx_layout_verify: ", 20) == 0);
      placed_fail += strstr(tirx_last_error(), "element ") != NULL;
    }
    /* Placement decides: the canonical form and any grouping give the same answer. */
    tirx_layout *c = tirx_layout_canonicalize(A, l);
    cr_assert_eq(tirx_layout_verify(c, s), st, "%s", str);
    tirx_layout *g = tirx_layout_group(A, l, 1, (int64_t[]){tirx_layout_size(l)});
    cr_assert_eq(tirx_layout_verify(g, s), st, "%s", str);
    free(str);
    free(ss);
    ok += want;
    bad += !want;
  }
  cr_assert_gt(ok, 600);
  cr_assert_gt(bad, 600);
  cr_assert_gt(placed_fail, 150);
}

/* The fragments are well formed for the teams that hold them, and not for a narrower one. */
Test(verify, fragments_fit_their_teams) {
  tirx_scope *cta = tirx_scope_new(A, 8, 1, 1);
  tirx_scope *warp = tirx_scope_team(A, cta, TIRX_TEAM_WARP);
  tirx_scope *wg = tirx_scope_team(A, cta, TIRX_TEAM_WARPGROUP);
  tirx_scope *thread = tirx_scope_team(A, cta, TIRX_TEAM_THREAD);
  cr_assert_eq(tirx_layout_verify(tirx_layout_mma_m16n8k16_a(A), warp), TIRX_OK);
  cr_assert_eq(tirx_layout_verify(tirx_layout_mma_m16n8k16_c(A), warp), TIRX_OK);
  cr_assert_eq(tirx_layout_verify(tirx_layout_ldmatrix(A, 4), warp), TIRX_OK);
  for (int m = 64; m <= 256; m += 64) {
    cr_assert_eq(tirx_layout_verify(tirx_layout_wgmma_acc(A, m, 256), wg), TIRX_OK);
    cr_assert_eq(tirx_layout_verify(tirx_layout_wgmma_a(A, m, 64), wg), TIRX_OK);
    cr_assert_eq(tirx_layout_verify(tirx_layout_wgmma_acc(A, m, 64), cta), TIRX_OK);
  }
  cr_assert_eq(tirx_layout_verify(tirx_layout_wgmma_rows(A, 64), wg), TIRX_OK);
  cr_assert_eq(tirx_layout_verify(tirx_layout_warpgroup_rows(A, 125, 8), wg), TIRX_OK);
  cr_assert_eq(tirx_layout_verify(tirx_layout_smem_tile(A, 64, 64, 2, 128), thread), TIRX_OK);
  cr_assert_eq(tirx_layout_verify(tirx_layout_wgmma_acc(A, 64, 8), warp), TIRX_E_SCOPE);
  /* Half a warp active: the lanes 16-31 of a fragment are not. */
  tirx_scope *half = tirx_scope_team(A, tirx_scope_filter(A, cta, TIRX_AXIS_LANEID, 0, 16),
                                     TIRX_TEAM_WARP);
  cr_assert_eq(tirx_layout_verify(tirx_layout_mma_m16n8k16_c(A), half), TIRX_E_SCOPE);
  cr_assert_eq(tirx_layout_verify(tirx_layout_parse(A, "(16,2):(1@laneid,1@reg)"), half), TIRX_OK);
}

/* A layout whose thread part is large is still checked quickly and exactly. */
Test(verify, large_layouts) {
  tirx_scope *cta = tirx_scope_new(A, 32, 1, 1);
  tirx_layout *l = tirx_layout_parse(A, "(1024,1048576):(1@tid,1@m)+[1024:0@tid]");
  cr_assert_eq(tirx_layout_verify(l, cta), TIRX_OK, "%s", tirx_last_error());
  l = tirx_layout_parse(A, "(32,32,4096):(1@laneid,1@warpid,1@reg)");
  cr_assert_eq(tirx_layout_verify(l, cta), TIRX_OK, "%s", tirx_last_error());
  l = tirx_layout_parse(A, "(32,32,32):(1@laneid,32@tid,1@reg)");
  cr_assert_eq(tirx_layout_verify(l, cta), TIRX_E_SCOPE);
  cr_assert_str_eq(tirx_last_error(), "tirx_layout_verify: element 1024 is on laneid 1, tid 0, "
                                      "which is no thread of a cta team");
}

Test(verify, messages) {
  tirx_scope *cta = tirx_scope_new(A, 4, 2, 1);
  tirx_scope *warp = tirx_scope_team(A, cta, TIRX_TEAM_WARP);
  tirx_scope *cluster = tirx_scope_team(A, cta, TIRX_TEAM_CLUSTER);
  tirx_scope *thread = tirx_scope_team(A, cta, TIRX_TEAM_THREAD);
  tirx_layout *frag = tirx_layout_mma_m16n8k16_c(A);
  expect_error(tirx_layout_verify(NULL, warp), TIRX_E_NULL_ARG,
               "tirx_layout_verify: layout is NULL");
  expect_error(tirx_layout_verify(frag, NULL), TIRX_E_NULL_ARG,
               "tirx_layout_verify: scope is NULL");
  expect_error(tirx_layout_verify(tirx_layout_parse(A, "(32,2):(1@laneid,1@warpid)"), warp),
               TIRX_E_SCOPE,
               "tirx_layout_verify: layout uses warpid, which is no axis of a warp team's tile "
               "(expected laneid)");
  expect_error(tirx_layout_verify(frag, thread), TIRX_E_SCOPE,
               "tirx_layout_verify: layout uses laneid, which is no axis of a thread team's tile "
               "(expected no thread axis)");
  expect_error(tirx_layout_verify(tirx_layout_parse(A, "(2):(1@cta)"), cluster), TIRX_E_SCOPE,
               "tirx_layout_verify: layout uses cta, which is no axis of a cluster team's tile "
               "(expected laneid, warpid, wid_in_wg, wgid, tid_in_wg, tid, cbx)");
  expect_error(tirx_layout_verify(tirx_layout_parse(A, "(4):(1@m)+1@pid"), cta), TIRX_E_SCOPE,
               "tirx_layout_verify: layout uses pid, which is no axis of a cta team's tile "
               "(expected laneid, warpid, wid_in_wg, wgid, tid_in_wg, tid)");
  expect_error(tirx_layout_verify(tirx_layout_parse(A, "(40):(1@laneid)"), warp), TIRX_E_SCOPE,
               "tirx_layout_verify: layout's laneid coordinates run from 0 to 39, expected 0 to "
               "31");
  expect_error(tirx_layout_verify(tirx_layout_parse(A, "(4):(2@warpid)"), cta), TIRX_E_SCOPE,
               "tirx_layout_verify: layout's warpid coordinates run from 0 to 6, expected 0 to 3");
  expect_error(tirx_layout_verify(tirx_layout_parse(A, "(4):(-1@laneid)+2@laneid"), warp),
               TIRX_E_SCOPE,
               "tirx_layout_verify: layout's laneid coordinates run from -1 to 2, expected 0 to "
               "31");
  expect_error(tirx_layout_verify(tirx_layout_parse(A, "(32,8):(1@laneid,1@reg)-2@reg"), warp),
               TIRX_E_SCOPE,
               "tirx_layout_verify: layout's reg coordinates run from -2 to 5, expected >= 0");
  expect_error(tirx_layout_verify(tirx_layout_parse(A, "(4,2):(1@laneid,1@tid)"), cta),
               TIRX_E_SCOPE,
               "tirx_layout_verify: element 2 is on laneid 1, tid 0, which is no thread of a cta "
               "team");
  tirx_scope *half = tirx_scope_team(A, tirx_scope_filter(A, cta, TIRX_AXIS_LANEID, 0, 16),
                                     TIRX_TEAM_WARP);
  expect_error(tirx_layout_verify(tirx_layout_parse(A, "(32):(1@laneid)"), half), TIRX_E_SCOPE,
               "tirx_layout_verify: element 16 is on laneid 16, thread 16 of the warp team, which "
               "is not active (its active threads: (16):(1@laneid))");
  expect_error(tirx_layout_verify(tirx_layout_parse(A, "(16):(1@laneid)+[2:16@laneid]"), half),
               TIRX_E_SCOPE,
               "tirx_layout_verify: element 0 (replica 1) is on laneid 16, thread 16 of the warp "
               "team, which is not active (its active threads: (16):(1@laneid))");
  /* Extent-1 and stride-0 iters name no axis. */
  cr_assert_eq(tirx_layout_verify(tirx_layout_parse(A, "(1,4,3):(1@warpid,1@laneid,0@cta)"), warp),
               TIRX_OK, "%s", tirx_last_error());
  cr_assert_eq(tirx_layout_verify(tirx_layout_parse(A, "(2,4):(1@cbx,1@laneid)"), cluster),
               TIRX_OK, "%s", tirx_last_error());
  expect_error(tirx_layout_verify(tirx_layout_parse(A, "(3):(1@cbx)"), cluster), TIRX_E_SCOPE,
               "tirx_layout_verify: layout's cbx coordinates run from 0 to 2, expected 0 to 1");
}

/* Its working memory comes from an arena: a failure at each allocation is reported. */
Test(verify, out_of_memory) {
  tirx_scope *cta = tirx_scope_new(A, 4, 1, 1);
  tirx_layout *l = tirx_layout_parse(A, "(4,32,2):(1@warpid,1@laneid,1@reg)");
  int failed = 0;
  for (int64_t n = 0;; n++) {
    tirx_clear_error();
    tirx__arena_fail_after(n);
    tirx_status st = tirx_layout_verify(l, cta);
    tirx__arena_fail_after(-1);
    if (st == TIRX_OK) break;
    cr_assert_eq(st, TIRX_E_NO_MEMORY, "%s", tirx_last_error());
    cr_assert_str_eq(tirx_last_error(), "tirx_layout_verify: out of memory");
    failed++;
  }
  cr_assert_eq(failed, 7); /* three sets of each of two axes, the team's ranks */
}
