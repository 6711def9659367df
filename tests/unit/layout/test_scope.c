/* src/layout/scope.c: execution scopes, checked thread by thread against a reference. */
#include "../helpers.h"

/* The allocation-failure hook of src/core/arena.c (internal, linked from the static library). */
void tirx__arena_fail_after(int64_t n);

static tirx_arena *A;
static void setup(void) { A = tirx_arena_create(); }
static void teardown(void) {
  tirx__arena_fail_after(-1);
  tirx_arena_destroy(A);
}
TestSuite(scope, .init = setup, .fini = teardown);

/* ---- the reference model ----------------------------------------------------------------- */

/* A launch: w warps per CTA, cs CTAs per cluster, k clusters. Thread g is lane g % 32, warp
 * (g / 32) % w, CTA g / 32w. */
typedef struct launch {
  int w, cs;
  int64_t k;
} launch;

static int64_t launch_threads(launch L) { return 32 * (int64_t)L.w * L.cs * L.k; }

static const tirx_axis filter_axes[] = {TIRX_AXIS_LANEID, TIRX_AXIS_WARPID, TIRX_AXIS_WID_IN_WG,
                                        TIRX_AXIS_WGID,   TIRX_AXIS_TID_IN_WG, TIRX_AXIS_TID,
                                        TIRX_AXIS_CTA,    TIRX_AXIS_CBX,    TIRX_AXIS_CLUSTER};

static int64_t axis_extent(launch L, tirx_axis ax) {
  switch (ax) {
  case TIRX_AXIS_LANEID: return 32;
  case TIRX_AXIS_WARPID: return L.w;
  case TIRX_AXIS_WID_IN_WG: return 4;
  case TIRX_AXIS_WGID: return L.w / 4;
  case TIRX_AXIS_TID_IN_WG: return 128;
  case TIRX_AXIS_TID: return 32 * L.w;
  case TIRX_AXIS_CTA: return L.cs * L.k;
  case TIRX_AXIS_CBX: return L.cs;
  default: return L.k;
  }
}

/* The coordinate of thread g on a filterable axis, straight from the definitions. */
static int64_t axis_value(launch L, tirx_axis ax, int64_t g) {
  int64_t lane = g % 32, warp = (g / 32) % L.w, cta = g / (32 * L.w);
  switch (ax) {
  case TIRX_AXIS_LANEID: return lane;
  case TIRX_AXIS_WARPID: return warp;
  case TIRX_AXIS_WID_IN_WG: return warp % 4;
  case TIRX_AXIS_WGID: return warp / 4;
  case TIRX_AXIS_TID_IN_WG: return (warp * 32 + lane) % 128;
  case TIRX_AXIS_TID: return warp * 32 + lane;
  case TIRX_AXIS_CTA: return cta;
  case TIRX_AXIS_CBX: return cta % L.cs;
  default: return cta / L.cs;
  }
}

/* A point of a scope layout back to g: every axis is linear in g. */
static int64_t coord_g(launch L, const tirx_coord *c) {
  int64_t cta_g = 32 * (int64_t)L.w;
  for (int ax = 0; ax < TIRX_AXIS_MAX; ax++) {
    bool known = ax == TIRX_AXIS_LANEID || ax == TIRX_AXIS_WARPID || ax == TIRX_AXIS_WID_IN_WG ||
                 ax == TIRX_AXIS_WGID || ax == TIRX_AXIS_TID_IN_WG || ax == TIRX_AXIS_TID ||
                 ax == TIRX_AXIS_CTA || ax == TIRX_AXIS_CBX || ax == TIRX_AXIS_CLUSTER;
    cr_assert(known || c->v[ax] == 0, "scope layout uses axis %s", tirx_axis_name(ax));
  }
  return c->v[TIRX_AXIS_LANEID] + 32 * c->v[TIRX_AXIS_WARPID] + 32 * c->v[TIRX_AXIS_WID_IN_WG] +
         128 * c->v[TIRX_AXIS_WGID] + c->v[TIRX_AXIS_TID_IN_WG] + c->v[TIRX_AXIS_TID] +
         cta_g * (c->v[TIRX_AXIS_CTA] + c->v[TIRX_AXIS_CBX] + L.cs * c->v[TIRX_AXIS_CLUSTER]);
}

static int64_t eval_g(launch L, const tirx_layout *l, int64_t x) {
  tirx_coord pt;
  int64_t n = 0;
  cr_assert_eq(tirx_layout_eval(l, x, &pt, 1, &n), TIRX_OK, "%s", tirx_last_error());
  cr_assert_eq(n, 1);
  return coord_g(L, &pt);
}

/* Threads per team instance of a team kind. */
static int64_t team_unit(launch L, tirx_team k) {
  static const int64_t fixed[] = {1, 32, 128};
  if (k <= TIRX_TEAM_WARPGROUP) return fixed[k];
  return k == TIRX_TEAM_CTA ? 32 * (int64_t)L.w : 32 * (int64_t)L.w * L.cs;
}

/* Uniformity oracle: every non-empty team holds the same ranks. Writes the number of non-empty
 * teams. */
static bool uniform(launch L, const bool *act, tirx_team k, int64_t *teams) {
  int64_t u = team_unit(L, k), n = launch_threads(L), ref = -1;
  *teams = 0;
  for (int64_t q = 0; q * u < n; q++) {
    bool any = false;
    for (int64_t r = 0; r < u && !any; r++) any = act[q * u + r];
    if (!any) continue;
    ++*teams;
    if (ref < 0) ref = q;
    for (int64_t r = 0; r < u; r++)
      if (act[q * u + r] != act[ref * u + r]) return false;
  }
  return true;
}

/* Whether the sorted points p[0..n) are a layout (nested iters plus an offset), by trying every
 * innermost extent rather than only the longest run. */
static bool is_layout(const int64_t *p, int64_t n, int64_t step) {
  if (n <= 1) return true;
  int64_t s = p[step] - p[0];
  for (int64_t e = 2; e <= n; e++) {
    if (p[(e - 1) * step] - p[0] != (e - 1) * s) break;
    if (n % e) continue;
    bool ok = true;
    for (int64_t b = 0; b < n && ok; b += e)
      for (int64_t i = 1; i < e && ok; i++) ok = p[(b + i) * step] - p[b * step] == i * s;
    if (ok && is_layout(p, n / e, step * e)) return true;
  }
  return false;
}

static bool set_is_layout(launch L, const bool *act) {
  int64_t n = launch_threads(L), m = 0;
  int64_t *p = malloc((size_t)n * sizeof *p);
  for (int64_t g = 0; g < n; g++)
    if (act[g]) p[m++] = g;
  bool ok = m > 0 && is_layout(p, m, 1);
  free(p);
  return ok;
}

/*
 * Checks a scope against the reference set act, thread by thread: contains, counts, the active
 * layout, and the decomposition: locate gives unique, dense (team, rank) with
 * inter(team) + intra(rank) = the thread, the intra part inside one team.
 */
static void check_scope(launch L, const tirx_scope *s, tirx_team kind, const bool *act) {
  int64_t n = launch_threads(L), cta_g = 32 * (int64_t)L.w, count = 0;
  cr_assert_eq(tirx_scope_team_kind(s), kind);
  for (int64_t g = 0; g < n; g++) {
    bool in = tirx_scope_contains(s, g % 32, (g / 32) % L.w, g / cta_g);
    cr_assert_eq(in, act[g], "contains(g=%lld) is %d", (long long)g, in);
    count += in;
  }
  cr_assert_eq(tirx_scope_num_threads(s), count);

  const tirx_layout *al = tirx_scope_active(s), *inter = tirx_scope_inter(s),
                    *intra = tirx_scope_intra(s);
  cr_assert_eq(tirx_layout_size(al), count);
  bool *seen = calloc((size_t)n, 1);
  for (int64_t x = 0; x < count; x++) {
    int64_t g = eval_g(L, al, x);
    cr_assert(g >= 0 && g < n && act[g] && !seen[g], "active layout point g=%lld", (long long)g);
    seen[g] = true;
  }
  free(seen);

  int64_t teams_expected, u = team_unit(L, kind);
  cr_assert(uniform(L, act, kind, &teams_expected));
  int64_t nt = tirx_scope_num_teams(s), ts = tirx_scope_team_size(s);
  cr_assert_eq(nt, teams_expected);
  cr_assert_eq(nt * ts, count);
  cr_assert_eq(tirx_layout_size(inter), nt);
  cr_assert_eq(tirx_layout_size(intra), ts);
  bool *used = calloc((size_t)count, 1);
  bool inactive_checked = false;
  for (int64_t g = 0; g < n; g++) {
    int64_t team = -1, rank = -1, lane = g % 32, warp = (g / 32) % L.w, cta = g / cta_g;
    if (!act[g]) {
      if (!inactive_checked) {
        char msg[128];
        snprintf(msg, sizeof msg,
                 "tirx_scope_locate: thread (lane %lld, warp %lld, cta %lld) is not active",
                 (long long)lane, (long long)warp, (long long)cta);
        expect_error(tirx_scope_locate(s, lane, warp, cta, &team, &rank), TIRX_E_OUT_OF_RANGE, msg);
        inactive_checked = true;
      }
      continue;
    }
    cr_assert_eq(tirx_scope_locate(s, lane, warp, cta, &team, &rank), TIRX_OK, "%s",
                 tirx_last_error());
    cr_assert(team >= 0 && team < nt && rank >= 0 && rank < ts);
    cr_assert(!used[team * ts + rank], "(team %lld, rank %lld) given twice", (long long)team,
              (long long)rank);
    used[team * ts + rank] = true;
    int64_t gi = eval_g(L, inter, team), gr = eval_g(L, intra, rank);
    cr_assert(gr >= 0 && gr < u, "intra point %lld outside one team of %lld", (long long)gr,
              (long long)u);
    cr_assert_eq(gi % u, 0);
    cr_assert_eq(gi + gr, g, "inter(%lld) + intra(%lld) = %lld, thread %lld", (long long)team,
                 (long long)rank, (long long)(gi + gr), (long long)g);
  }
  free(used);
}

static bool *full_set(launch L) {
  bool *act = malloc((size_t)launch_threads(L));
  memset(act, 1, (size_t)launch_threads(L));
  return act;
}

/* ---- paper examples (4.1, 4.2) ------------------------------------------------------------- */

static void assert_layout_str(const tirx_layout *l, const char *want) {
  char *got = tirx_layout_str(l);
  cr_assert_str_eq(got, want);
  free(got);
}

Test(scope, team_names) {
  cr_assert_str_eq(tirx_team_name(TIRX_TEAM_THREAD), "thread");
  cr_assert_str_eq(tirx_team_name(TIRX_TEAM_WARP), "warp");
  cr_assert_str_eq(tirx_team_name(TIRX_TEAM_WARPGROUP), "warpgroup");
  cr_assert_str_eq(tirx_team_name(TIRX_TEAM_CTA), "cta");
  cr_assert_str_eq(tirx_team_name(TIRX_TEAM_CLUSTER), "cluster");
  cr_assert_null(tirx_team_name((tirx_team)5));
  cr_assert_null(tirx_team_name((tirx_team)-1));
}

Test(scope, paper_entry_scope_and_filter_to_warp_0) {
  launch L = {16, 1, 4};
  tirx_scope *e = tirx_scope_new(A, 16, 1, 4);
  cr_assert_not_null(e, "%s", tirx_last_error());
  assert_layout_str(tirx_scope_active(e), "(32,16,4):(1@laneid,1@warpid,1@cta)");
  cr_assert_eq(tirx_scope_team_kind(e), TIRX_TEAM_CTA);
  cr_assert_eq(tirx_scope_num_threads(e), 2048);
  cr_assert_eq(tirx_scope_num_teams(e), 4);
  cr_assert_eq(tirx_scope_team_size(e), 512);
  bool *act = full_set(L);
  check_scope(L, e, TIRX_TEAM_CTA, act);

  tirx_scope *w0 = tirx_scope_filter(A, e, TIRX_AXIS_WARPID, 0, 1);
  cr_assert_not_null(w0, "%s", tirx_last_error());
  assert_layout_str(tirx_scope_active(w0), "(32,1,4):(1@laneid,1@warpid,1@cta)");
  cr_assert_eq(tirx_scope_team_kind(w0), TIRX_TEAM_CTA); /* a filter keeps the team kind */
  for (int64_t g = 0; g < launch_threads(L); g++) act[g] = (g / 32) % 16 == 0;
  check_scope(L, w0, TIRX_TEAM_CTA, act);
  free(act);
}

Test(scope, paper_warp_and_warpgroup_decompositions) {
  launch L = {16, 1, 4};
  bool *act = full_set(L);
  tirx_scope *e = tirx_scope_new(A, 16, 1, 4);
  tirx_scope *w = tirx_scope_team(A, e, TIRX_TEAM_WARP);
  cr_assert_not_null(w, "%s", tirx_last_error());
  assert_layout_str(tirx_scope_intra(w), "(32):(1@laneid)");
  assert_layout_str(tirx_scope_inter(w), "(16,4):(1@warpid,1@cta)");
  cr_assert_eq(tirx_scope_num_teams(w), 64);
  cr_assert_eq(tirx_scope_team_size(w), 32);
  check_scope(L, w, TIRX_TEAM_WARP, act);
  /* Team indices follow A_inter: (16,4) with cta fastest. */
  int64_t team, rank;
  cr_assert_eq(tirx_scope_locate(w, 5, 3, 2, &team, &rank), TIRX_OK);
  cr_assert_eq(team, 3 * 4 + 2);
  cr_assert_eq(rank, 5);

  tirx_scope *wg = tirx_scope_team(A, e, TIRX_TEAM_WARPGROUP);
  cr_assert_not_null(wg, "%s", tirx_last_error());
  assert_layout_str(tirx_scope_intra(wg), "(32,4):(1@laneid,1@wid_in_wg)");
  assert_layout_str(tirx_scope_inter(wg), "(4,4):(1@wgid,1@cta)");
  cr_assert_eq(tirx_scope_num_teams(wg), 16);
  cr_assert_eq(tirx_scope_team_size(wg), 128);
  check_scope(L, wg, TIRX_TEAM_WARPGROUP, act);
  cr_assert_eq(tirx_scope_locate(wg, 5, 6, 3, &team, &rank), TIRX_OK);
  cr_assert_eq(team, 1 * 4 + 3);
  cr_assert_eq(rank, 5 * 4 + 2); /* (32,4):(1@laneid,1@wid_in_wg): wid_in_wg fastest */
  free(act);
}

Test(scope, paper_warp_range_3_7_is_rejected_under_warpgroup) {
  tirx_scope *e = tirx_scope_new(A, 16, 1, 4);
  tirx_scope *w37 = tirx_scope_filter(A, e, TIRX_AXIS_WARPID, 3, 7);
  cr_assert_not_null(w37, "%s", tirx_last_error());
  assert_layout_str(tirx_scope_active(w37), "(32,4,4):(1@laneid,1@warpid,1@cta)+3@warpid");
  expect_null(tirx_scope_team(A, w37, TIRX_TEAM_WARPGROUP), TIRX_E_SCOPE,
              "tirx_scope_team: active warps [3, 7) split warpgroups unevenly: teams would not "
              "be uniform");
  /* [0, 16) and [4, 12) are whole warpgroups. */
  tirx_scope *w412 = tirx_scope_filter(A, e, TIRX_AXIS_WARPID, 4, 12);
  tirx_scope *wg = tirx_scope_team(A, w412, TIRX_TEAM_WARPGROUP);
  cr_assert_not_null(wg, "%s", tirx_last_error());
  assert_layout_str(tirx_scope_inter(wg), "(2,4):(1@wgid,1@cta)+1@wgid");
  assert_layout_str(tirx_scope_intra(wg), "(32,4):(1@laneid,1@wid_in_wg)");
  /* The same range as a filter under a warpgroup team is rejected as well. */
  tirx_scope *all_wg = tirx_scope_team(A, e, TIRX_TEAM_WARPGROUP);
  expect_null(tirx_scope_filter(A, all_wg, TIRX_AXIS_WARPID, 3, 7), TIRX_E_SCOPE,
              "tirx_scope_filter: warpid [3, 7) under team warpgroup: active warps [3, 7) split "
              "warpgroups unevenly: teams would not be uniform");
}

/* ---- text and axes ------------------------------------------------------------------------- */

Test(scope, str_forms) {
  tirx_scope *e = tirx_scope_new(A, 4, 1, 1);
  char *s = tirx_scope_str(tirx_scope_team(A, e, TIRX_TEAM_WARP));
  cr_assert_str_eq(s, "A=(32,4):(1@laneid,1@warpid) team=warp inter=(4):(1@warpid) "
                      "intra=(32):(1@laneid)");
  free(s);
  /* A tid range that crosses a warp is written on tid. */
  tirx_scope *t40 = tirx_scope_filter(A, e, TIRX_AXIS_TID, 0, 40);
  s = tirx_scope_str(t40);
  cr_assert_str_eq(s, "A=(40):(1@tid) team=cta inter=():() intra=(40):(1@tid)");
  free(s);
  /* ... until a lane filter makes it a box again: lanes [0, 8) of warps 0 and 1. */
  tirx_scope *box = tirx_scope_filter(A, t40, TIRX_AXIS_LANEID, 0, 8);
  cr_assert_not_null(box, "%s", tirx_last_error());
  s = tirx_scope_str(tirx_scope_team(A, box, TIRX_TEAM_WARP));
  cr_assert_str_eq(s, "A=(8,2):(1@laneid,1@warpid) team=warp inter=(2):(1@warpid) "
                      "intra=(8):(1@laneid)");
  free(s);
  /* A single thread keeps an extent-1 iter per axis, with the offset. */
  tirx_scope *one = tirx_scope_filter(A, tirx_scope_filter(A, e, TIRX_AXIS_LANEID, 5, 6),
                                      TIRX_AXIS_WARPID, 2, 3);
  s = tirx_scope_str(tirx_scope_team(A, one, TIRX_TEAM_THREAD));
  cr_assert_str_eq(s, "A=(1,1):(1@laneid,1@warpid)+5@laneid+2@warpid team=thread "
                      "inter=(1,1):(1@laneid,1@warpid)+5@laneid+2@warpid intra=():()");
  free(s);
  tirx_clear_error();
  cr_assert_null(tirx_scope_str(NULL));
  cr_assert_str_eq(tirx_last_error(), "tirx_scope_str: scope is NULL");
}

Test(scope, warpgroup_axes_and_cluster_teams) {
  /* Warps 0, 1, 4, 5 of 8: the first two warps of each warpgroup. */
  tirx_scope *e = tirx_scope_new(A, 8, 1, 1);
  tirx_scope *h = tirx_scope_filter(A, e, TIRX_AXIS_WID_IN_WG, 0, 2);
  cr_assert_not_null(h, "%s", tirx_last_error());
  assert_layout_str(tirx_scope_active(h), "(32,2,2):(1@laneid,1@warpid,4@warpid)");
  tirx_scope *wg = tirx_scope_team(A, h, TIRX_TEAM_WARPGROUP);
  assert_layout_str(tirx_scope_intra(wg), "(32,2):(1@laneid,1@wid_in_wg)");
  assert_layout_str(tirx_scope_inter(wg), "(2):(1@wgid)");
  /* tid_in_wg [0, 40) crosses a warp: written on tid_in_wg. */
  tirx_scope *t = tirx_scope_filter(A, e, TIRX_AXIS_TID_IN_WG, 0, 40);
  wg = tirx_scope_team(A, t, TIRX_TEAM_WARPGROUP);
  assert_layout_str(tirx_scope_intra(wg), "(40):(1@tid_in_wg)");
  assert_layout_str(tirx_scope_inter(wg), "(2):(1@wgid)");

  /* Clusters of 2 CTAs, 3 clusters, 1 warp per CTA. */
  launch L = {1, 2, 3};
  tirx_scope *c = tirx_scope_team(A, tirx_scope_new(A, 1, 2, 3), TIRX_TEAM_CLUSTER);
  cr_assert_not_null(c, "%s", tirx_last_error());
  assert_layout_str(tirx_scope_intra(c), "(32,2):(1@laneid,1@cbx)");
  assert_layout_str(tirx_scope_inter(c), "(3):(1@cluster)");
  bool *act = full_set(L);
  check_scope(L, c, TIRX_TEAM_CLUSTER, act);
  free(act);
  expect_null(tirx_scope_filter(A, c, TIRX_AXIS_CTA, 1, 5), TIRX_E_SCOPE,
              "tirx_scope_filter: cta [1, 5) under team cluster: active CTAs [1, 5) split "
              "clusters unevenly: teams would not be uniform");
  tirx_scope *odd = tirx_scope_filter(A, tirx_scope_new(A, 1, 2, 3), TIRX_AXIS_CTA, 1, 5);
  expect_null(tirx_scope_team(A, odd, TIRX_TEAM_CLUSTER), TIRX_E_SCOPE,
              "tirx_scope_team: active CTAs [1, 5) split clusters unevenly: teams would not be "
              "uniform");
  tirx_scope *cb1 = tirx_scope_filter(A, c, TIRX_AXIS_CBX, 1, 2);
  assert_layout_str(tirx_scope_active(cb1), "(32,3):(1@laneid,2@cta)+1@cta");
  assert_layout_str(tirx_scope_intra(cb1), "(32,1):(1@laneid,1@cbx)+1@cbx");
}

/* ---- errors --------------------------------------------------------------------------------- */

Test(scope, new_errors) {
  expect_null(tirx_scope_new(NULL, 4, 1, 1), TIRX_E_NULL_ARG, "tirx_scope_new: arena is NULL");
  expect_null(tirx_scope_new(A, 0, 1, 1), TIRX_E_INVALID_ARG,
              "tirx_scope_new: warps_per_cta is 0, expected 1 to 32");
  expect_null(tirx_scope_new(A, 33, 1, 1), TIRX_E_INVALID_ARG,
              "tirx_scope_new: warps_per_cta is 33, expected 1 to 32");
  expect_null(tirx_scope_new(A, 4, 0, 1), TIRX_E_INVALID_ARG,
              "tirx_scope_new: cluster_size is 0, expected 1 to 16");
  expect_null(tirx_scope_new(A, 4, 17, 1), TIRX_E_INVALID_ARG,
              "tirx_scope_new: cluster_size is 17, expected 1 to 16");
  expect_null(tirx_scope_new(A, 4, 1, 0), TIRX_E_INVALID_ARG,
              "tirx_scope_new: num_clusters is 0, expected >= 1");
  expect_null(tirx_scope_new(A, 32, 16, INT64_MAX / 1000), TIRX_E_OVERFLOW,
              "tirx_scope_new: 9223372036854775 clusters of 16 CTAs of 32 warps overflow int64");
  /* The largest launch that fits is fine, and huge cluster counts stay exact. */
  tirx_scope *big = tirx_scope_new(A, 32, 16, INT64_MAX / (32 * 32 * 16));
  cr_assert_not_null(big, "%s", tirx_last_error());
  cr_assert_eq(tirx_scope_num_threads(big), INT64_MAX / (32 * 32 * 16) * (32 * 32 * 16));
  tirx_scope *last = tirx_scope_filter(A, big, TIRX_AXIS_CLUSTER, INT64_MAX / (32 * 32 * 16) - 1,
                                       INT64_MAX);
  cr_assert_not_null(last, "%s", tirx_last_error());
  cr_assert_eq(tirx_scope_num_threads(last), 32 * 32 * 16);
  int64_t team, rank;
  cr_assert_eq(tirx_scope_locate(last, 31, 31, INT64_MAX / (32 * 32 * 16) * 16 - 1, &team, &rank),
               TIRX_OK, "%s", tirx_last_error());
  cr_assert_eq(team, 15);
  cr_assert_eq(rank, 1023);
}

Test(scope, filter_errors) {
  tirx_scope *e = tirx_scope_new(A, 4, 1, 1);
  expect_null(tirx_scope_filter(NULL, e, TIRX_AXIS_LANEID, 0, 1), TIRX_E_NULL_ARG,
              "tirx_scope_filter: arena is NULL");
  expect_null(tirx_scope_filter(A, NULL, TIRX_AXIS_LANEID, 0, 1), TIRX_E_NULL_ARG,
              "tirx_scope_filter: scope is NULL");
  expect_null(tirx_scope_filter(A, e, 99, 0, 1), TIRX_E_UNKNOWN_AXIS,
              "tirx_scope_filter: unknown axis 99");
  expect_null(tirx_scope_filter(A, e, -1, 0, 1), TIRX_E_UNKNOWN_AXIS,
              "tirx_scope_filter: unknown axis -1");
  expect_null(tirx_scope_filter(A, e, TIRX_AXIS_M, 0, 1), TIRX_E_UNKNOWN_AXIS,
              "tirx_scope_filter: axis m is not a thread axis a scope filters (laneid, warpid, "
              "wid_in_wg, wgid, tid_in_wg, tid, cta, cbx, cluster)");
  expect_null(tirx_scope_filter(A, e, TIRX_AXIS_CBY, 0, 1), TIRX_E_UNKNOWN_AXIS,
              "tirx_scope_filter: axis cby is not a thread axis a scope filters (laneid, warpid, "
              "wid_in_wg, wgid, tid_in_wg, tid, cta, cbx, cluster)");
  expect_null(tirx_scope_filter(A, e, TIRX_AXIS_WARPID, 2, 2), TIRX_E_INVALID_ARG,
              "tirx_scope_filter: warpid range [2, 2) is empty (lo >= hi)");
  expect_null(tirx_scope_filter(A, e, TIRX_AXIS_WARPID, 3, 1), TIRX_E_INVALID_ARG,
              "tirx_scope_filter: warpid range [3, 1) is empty (lo >= hi)");
  expect_null(tirx_scope_filter(A, e, TIRX_AXIS_LANEID, -1, 4), TIRX_E_INVALID_ARG,
              "tirx_scope_filter: laneid range [-1, 4) starts below 0");
  expect_null(tirx_scope_filter(A, e, TIRX_AXIS_WARPID, 4, INT64_MAX), TIRX_E_SCOPE,
              "tirx_scope_filter: warpid [4, 9223372036854775807) leaves no active thread in "
              "(32,4):(1@laneid,1@warpid)");
  tirx_scope *w1 = tirx_scope_filter(A, e, TIRX_AXIS_WARPID, 1, 2);
  expect_null(tirx_scope_filter(A, w1, TIRX_AXIS_TID, 0, 32), TIRX_E_SCOPE,
              "tirx_scope_filter: tid [0, 32) leaves no active thread in "
              "(32,1):(1@laneid,1@warpid)+1@warpid");
  tirx_scope *t40 = tirx_scope_filter(A, e, TIRX_AXIS_TID, 0, 40);
  expect_null(tirx_scope_filter(A, t40, TIRX_AXIS_LANEID, 0, 16), TIRX_E_SCOPE,
              "tirx_scope_filter: laneid [0, 16) cannot narrow the active set (40):(1@tid): the "
              "result is not a layout");
  tirx_scope *six = tirx_scope_new(A, 6, 1, 1);
  expect_null(tirx_scope_filter(A, six, TIRX_AXIS_WGID, 0, 1), TIRX_E_SCOPE,
              "tirx_scope_filter: axis wgid needs warps_per_cta to be a multiple of 4, got 6");
  expect_null(tirx_scope_filter(A, six, TIRX_AXIS_TID_IN_WG, 0, 1), TIRX_E_SCOPE,
              "tirx_scope_filter: axis tid_in_wg needs warps_per_cta to be a multiple of 4, got 6");
  tirx_scope *w = tirx_scope_team(A, e, TIRX_TEAM_WARP);
  expect_null(tirx_scope_filter(A, w, TIRX_AXIS_TID, 0, 40), TIRX_E_SCOPE,
              "tirx_scope_filter: tid [0, 40) under team warp: active threads [0, 40) split warps "
              "unevenly: teams would not be uniform");
}

Test(scope, team_and_accessor_errors) {
  tirx_scope *e = tirx_scope_new(A, 6, 1, 1);
  expect_null(tirx_scope_team(NULL, e, TIRX_TEAM_WARP), TIRX_E_NULL_ARG,
              "tirx_scope_team: arena is NULL");
  expect_null(tirx_scope_team(A, NULL, TIRX_TEAM_WARP), TIRX_E_NULL_ARG,
              "tirx_scope_team: scope is NULL");
  expect_null(tirx_scope_team(A, e, (tirx_team)5), TIRX_E_INVALID_ARG,
              "tirx_scope_team: team kind 5 is not thread, warp, warpgroup, cta or cluster");
  expect_null(tirx_scope_team(A, e, (tirx_team)-1), TIRX_E_INVALID_ARG,
              "tirx_scope_team: team kind -1 is not thread, warp, warpgroup, cta or cluster");
  expect_null(tirx_scope_team(A, e, TIRX_TEAM_WARPGROUP), TIRX_E_SCOPE,
              "tirx_scope_team: warpgroup teams need warps_per_cta to be a multiple of 4, got 6");
  tirx_scope *t = tirx_scope_filter(A, e, TIRX_AXIS_TID, 16, 48);
  expect_null(tirx_scope_team(A, t, TIRX_TEAM_WARP), TIRX_E_SCOPE,
              "tirx_scope_team: active threads [16, 48) split warps unevenly: teams would not be "
              "uniform");
  /* A non-range active set is described by its layout. */
  tirx_scope *p = tirx_scope_filter(A, tirx_scope_filter(A, e, TIRX_AXIS_TID, 31, 34),
                                    TIRX_AXIS_LANEID, 1, 32);
  cr_assert_not_null(p, "%s", tirx_last_error());
  expect_null(tirx_scope_team(A, p, TIRX_TEAM_WARP),
              TIRX_E_SCOPE,
              "tirx_scope_team: active threads (2):(2@tid)+31@tid split warps unevenly: teams "
              "would not be uniform");

  int64_t team, rank;
  expect_error(tirx_scope_locate(NULL, 0, 0, 0, &team, &rank), TIRX_E_NULL_ARG,
               "tirx_scope_locate: scope is NULL");
  expect_error(tirx_scope_locate(e, 0, 0, 0, NULL, &rank), TIRX_E_NULL_ARG,
               "tirx_scope_locate: team is NULL");
  expect_error(tirx_scope_locate(e, 0, 0, 0, &team, NULL), TIRX_E_NULL_ARG,
               "tirx_scope_locate: rank is NULL");
  expect_error(tirx_scope_locate(e, 32, 0, 0, &team, &rank), TIRX_E_OUT_OF_RANGE,
               "tirx_scope_locate: thread (lane 32, warp 0, cta 0) is not active");
  cr_assert(!tirx_scope_contains(e, -1, 0, 0));
  cr_assert(!tirx_scope_contains(e, 0, 6, 0));
  cr_assert(!tirx_scope_contains(e, 0, 0, 1));
  cr_assert(!tirx_scope_contains(e, 0, 0, -1));
  cr_assert(tirx_scope_contains(e, 31, 5, 0));

  tirx_clear_error();
  cr_assert(!tirx_scope_contains(NULL, 0, 0, 0));
  cr_assert_str_eq(tirx_last_error(), "tirx_scope_contains: scope is NULL");
  cr_assert_null(tirx_scope_active(NULL));
  cr_assert_str_eq(tirx_last_error(), "tirx_scope_active: scope is NULL");
  cr_assert_null(tirx_scope_inter(NULL));
  cr_assert_str_eq(tirx_last_error(), "tirx_scope_inter: scope is NULL");
  cr_assert_null(tirx_scope_intra(NULL));
  cr_assert_str_eq(tirx_last_error(), "tirx_scope_intra: scope is NULL");
  cr_assert_eq(tirx_scope_num_threads(NULL), 0);
  cr_assert_str_eq(tirx_last_error(), "tirx_scope_num_threads: scope is NULL");
  cr_assert_eq(tirx_scope_num_teams(NULL), 0);
  cr_assert_str_eq(tirx_last_error(), "tirx_scope_num_teams: scope is NULL");
  cr_assert_eq(tirx_scope_team_size(NULL), 0);
  cr_assert_str_eq(tirx_last_error(), "tirx_scope_team_size: scope is NULL");
  cr_assert_eq(tirx_scope_team_kind(NULL), (tirx_team)-1);
  cr_assert_str_eq(tirx_last_error(), "tirx_scope_team_kind: scope is NULL");
}

Test(scope, out_of_memory_sweep) {
  /* Every allocation of a filter and a team switch may fail: NULL with TIRX_E_NO_MEMORY, and
   * the next attempt with one more allocation allowed goes further, until it succeeds. */
  tirx_scope *e = tirx_scope_new(A, 16, 2, 3);
  cr_assert_not_null(e);
  int failures = 0;
  for (int64_t n = 0;; n++) {
    tirx__arena_fail_after(n);
    tirx_clear_error();
    tirx_scope *w = tirx_scope_filter(A, e, TIRX_AXIS_WARPID, 4, 12);
    tirx_scope *t = w ? tirx_scope_team(A, w, TIRX_TEAM_WARPGROUP) : NULL;
    tirx__arena_fail_after(-1);
    if (t) break;
    cr_assert_eq(tirx_last_status(), TIRX_E_NO_MEMORY, "%s", tirx_last_error());
    cr_assert(n < 100);
    failures++;
  }
  cr_assert_gt(failures, 2);
}

/* ---- brute force over random filter and team sequences ------------------------------------ */

typedef struct tally {
  int ok_filter, ok_team, empty, not_layout, not_uniform_filter, not_uniform_team, wg_axis;
} tally;

/* The state of one walk: the scope, its team kind and the reference active set. */
typedef struct walk {
  launch L;
  tirx_scope *s;
  tirx_team kind;
  bool *act, *next;
} walk;

static void walk_start(walk *w, launch L) {
  int64_t n = launch_threads(L);
  w->L = L;
  w->s = tirx_scope_new(A, L.w, L.cs, L.k);
  cr_assert_not_null(w->s, "%s", tirx_last_error());
  w->kind = TIRX_TEAM_CTA;
  if (!w->act) w->act = malloc((size_t)n), w->next = malloc((size_t)n);
  memset(w->act, 1, (size_t)n);
}

static void walk_end(walk *w) {
  free(w->act);
  free(w->next);
}

/* A team switch, checked: it succeeds exactly when the oracle finds the teams uniform. */
static void walk_team(walk *w, tirx_team k, tally *tl) {
  tirx_clear_error();
  tirx_scope *r = tirx_scope_team(A, w->s, k);
  if (k == TIRX_TEAM_WARPGROUP && w->L.w % 4 != 0) {
    cr_assert_null(r);
    cr_assert_eq(tirx_last_status(), TIRX_E_SCOPE);
    return;
  }
  int64_t teams;
  bool uni = uniform(w->L, w->act, k, &teams);
  cr_assert_eq(r != NULL, uni, "team %s: %s", tirx_team_name(k), tirx_last_error());
  if (!r) {
    cr_assert_eq(tirx_last_status(), TIRX_E_SCOPE);
    cr_assert(strstr(tirx_last_error(), "tirx_scope_team: active ") == tirx_last_error(), "%s",
              tirx_last_error());
    cr_assert(strstr(tirx_last_error(), "teams would not be uniform"));
    tl->not_uniform_team++;
    return;
  }
  tl->ok_team++;
  w->s = r;
  w->kind = k;
  check_scope(w->L, w->s, w->kind, w->act);
}

/*
 * A filter, checked: it must fail with "leaves no active thread" when the reference set
 * becomes empty, "the result is not a layout" when the set is not a layout, "teams would not
 * be uniform" when the current team kind's teams would differ, and succeed otherwise.
 */
static void walk_filter(walk *w, tirx_axis ax, int64_t lo, int64_t hi, tally *tl) {
  static const char *const parts[] = {"", "leaves no active thread", "the result is not a layout",
                                      "teams would not be uniform"};
  launch L = w->L;
  tirx_clear_error();
  tirx_scope *r = tirx_scope_filter(A, w->s, ax, lo, hi);
  if ((ax == TIRX_AXIS_WID_IN_WG || ax == TIRX_AXIS_WGID || ax == TIRX_AXIS_TID_IN_WG) &&
      L.w % 4 != 0) {
    cr_assert_null(r);
    cr_assert_eq(tirx_last_status(), TIRX_E_SCOPE);
    tl->wg_axis++;
    return;
  }
  int64_t n = launch_threads(L), teams;
  bool any = false;
  for (int64_t g = 0; g < n; g++) {
    int64_t v = axis_value(L, ax, g);
    w->next[g] = w->act[g] && v >= lo && v < hi;
    any |= w->next[g];
  }
  int want = !any                            ? 1
             : !set_is_layout(L, w->next)      ? 2
             : !uniform(L, w->next, w->kind, &teams) ? 3
                                             : 0;
  if (want == 0) {
    cr_assert_not_null(r, "filter %s [%lld, %lld): %s", tirx_axis_name(ax), (long long)lo,
                       (long long)hi, tirx_last_error());
    tl->ok_filter++;
    w->s = r;
    memcpy(w->act, w->next, (size_t)n);
    check_scope(L, w->s, w->kind, w->act);
    return;
  }
  cr_assert_null(r, "filter %s [%lld, %lld) should fail with '%s'", tirx_axis_name(ax),
                 (long long)lo, (long long)hi, parts[want]);
  cr_assert_eq(tirx_last_status(), TIRX_E_SCOPE, "%s", tirx_last_error());
  cr_assert(strstr(tirx_last_error(), "tirx_scope_filter: ") == tirx_last_error());
  cr_assert(strstr(tirx_last_error(), parts[want]), "%s (wanted '%s')", tirx_last_error(),
            parts[want]);
  if (want == 1) tl->empty++;
  if (want == 2) tl->not_layout++;
  if (want == 3) tl->not_uniform_filter++;
}

/* Random walks of up to 5 steps: filters on a random axis and range, and team switches. */
static void random_walks(launch L, int walks, uint64_t seed, tally *tl) {
  walk w = {0};
  for (int i = 0; i < walks; i++) {
    walk_start(&w, L);
    for (int step = 0; step < 5; step++) {
      if (test_rand_range(&seed, 0, 3) == 0) {
        walk_team(&w, (tirx_team)test_rand_range(&seed, 0, 4), tl);
        continue;
      }
      tirx_axis ax = filter_axes[test_rand_range(&seed, 0, 8)];
      int64_t ext = axis_extent(L, ax);
      /* Mostly ranges inside the axis, sometimes past its end. */
      bool inside = ext > 0 && test_rand_range(&seed, 0, 9) > 0;
      int64_t lo = test_rand_range(&seed, 0, inside ? ext - 1 : ext);
      int64_t hi = test_rand_range(&seed, lo + 1, inside ? ext : ext + 2);
      walk_filter(&w, ax, lo, hi, tl);
    }
  }
  walk_end(&w);
}

static void sweep(const int *ws, int nw, int walks, uint64_t seed) {
  static const int css[] = {1, 2, 3};
  static const int64_t ks[] = {1, 3};
  tally tl = {0};
  for (int i = 0; i < nw; i++)
    for (int c = 0; c < 3; c++)
      for (int k = 0; k < 2; k++) {
        launch L = {ws[i], css[c], ks[k]};
        random_walks(L, walks, seed + (uint64_t)(i * 100 + c * 10 + k), &tl);
      }
  /* Every outcome is exercised. */
  cr_assert_gt(tl.ok_filter, 1000);
  cr_assert_gt(tl.ok_team, 500);
  cr_assert_gt(tl.empty, 100);
  cr_assert_gt(tl.not_layout, 20);
  cr_assert_gt(tl.not_uniform_filter, 20);
  cr_assert_gt(tl.not_uniform_team, 20);
}

Test(scope, brute_force_random_walks_few_warps) {
  static const int ws[] = {1, 2, 3, 4};
  sweep(ws, 4, 100, 0x5c0be1);
}

Test(scope, brute_force_random_walks_many_warps) {
  static const int ws[] = {8, 12, 16};
  sweep(ws, 3, 40, 0x5c0be2);
}

/*
 * Every pair of ranges on two axes, then every team kind: the cases where a range on a
 * composite axis meets a range on one of its digits (tid and laneid, tid_in_wg and laneid,
 * warpid and wid_in_wg, cta and cbx, cluster and cbx), where representability is decided.
 */
static void pairs(launch L, tirx_axis a1, int64_t step1, tirx_axis a2, int64_t step2, tally *tl) {
  walk w = {0};
  int64_t e1 = axis_extent(L, a1), e2 = axis_extent(L, a2);
  for (int64_t lo1 = 0; lo1 < e1; lo1 += step1)
    for (int64_t hi1 = lo1 + 1; hi1 <= e1; hi1 += (hi1 + step1 > e1 && hi1 < e1) ? e1 - hi1 : step1)
      for (int64_t lo2 = 0; lo2 < e2; lo2 += step2)
        for (int64_t hi2 = lo2 + 1; hi2 <= e2; hi2 += step2) {
          walk_start(&w, L);
          walk_filter(&w, a1, lo1, hi1, tl);
          walk_filter(&w, a2, lo2, hi2, tl);
          tirx_scope *base = w.s;
          for (int k = 0; k <= 4; k++) {
            walk_team(&w, (tirx_team)k, tl);
            w.s = base; /* act is unchanged by a team switch */
          }
        }
  walk_end(&w);
}

Test(scope, exhaustive_composite_and_digit_ranges) {
  tally tl = {0};
  pairs((launch){2, 1, 1}, TIRX_AXIS_TID, 3, TIRX_AXIS_LANEID, 5, &tl);
  pairs((launch){4, 1, 1}, TIRX_AXIS_TID_IN_WG, 7, TIRX_AXIS_LANEID, 6, &tl);
  pairs((launch){8, 1, 1}, TIRX_AXIS_WARPID, 1, TIRX_AXIS_WID_IN_WG, 1, &tl);
  pairs((launch){8, 1, 1}, TIRX_AXIS_TID, 19, TIRX_AXIS_WID_IN_WG, 1, &tl);
  pairs((launch){1, 3, 4}, TIRX_AXIS_CTA, 1, TIRX_AXIS_CBX, 1, &tl);
  pairs((launch){1, 4, 3}, TIRX_AXIS_CBX, 1, TIRX_AXIS_CTA, 1, &tl);
  pairs((launch){1, 2, 5}, TIRX_AXIS_CLUSTER, 1, TIRX_AXIS_CTA, 1, &tl);
  cr_assert_gt(tl.not_layout, 100);
  cr_assert_gt(tl.not_uniform_team, 100);
  cr_assert_gt(tl.ok_filter, 1000);
}

/*
 * The CTA part is factored in closed form (its cluster count is unbounded), so check it against
 * the oracle on every cta range and cbx range of many cluster shapes. One lane keeps it cheap:
 * A is then C itself.
 */
Test(scope, cta_sets_are_layouts_exactly_when_the_oracle_says_so) {
  int64_t *pts = malloc(16 * 6 * sizeof *pts);
  int layouts = 0, rejected = 0;
  for (int cs = 1; cs <= 9; cs++)
    for (int64_t k = 1; k <= 6; k++) {
      tirx_scope *one = tirx_scope_filter(A, tirx_scope_new(A, 1, cs, k), TIRX_AXIS_LANEID, 0, 1);
      for (int64_t x0 = 0; x0 < cs * k; x0++)
        for (int64_t x1 = x0 + 1; x1 <= cs * k; x1++) {
          tirx_scope *r = tirx_scope_filter(A, one, TIRX_AXIS_CTA, x0, x1);
          cr_assert_not_null(r);
          for (int64_t c0 = 0; c0 < cs; c0++)
            for (int64_t c1 = c0 + 1; c1 <= cs; c1++) {
              int64_t n = 0;
              for (int64_t x = x0; x < x1; x++)
                if (x % cs >= c0 && x % cs < c1) pts[n++] = x;
              tirx_clear_error();
              tirx_scope *s = tirx_scope_filter(A, r, TIRX_AXIS_CBX, c0, c1);
              if (n == 0) {
                cr_assert_null(s);
                continue;
              }
              bool want = is_layout(pts, n, 1);
              cr_assert_eq(s != NULL, want, "cs %d k %lld cta [%lld, %lld) cbx [%lld, %lld): %s",
                           cs, (long long)k, (long long)x0, (long long)x1, (long long)c0,
                           (long long)c1, tirx_last_error());
              if (!s) {
                cr_assert(strstr(tirx_last_error(), "the result is not a layout"));
                rejected++;
                continue;
              }
              layouts++;
              const tirx_layout *al = tirx_scope_active(s);
              cr_assert_eq(tirx_layout_size(al), n);
              uint64_t seen = 0; /* n <= 54 CTAs */
              for (int64_t i = 0; i < n; i++) {
                int64_t team, rank, cnt;
                cr_assert_eq(tirx_scope_locate(s, 0, 0, pts[i], &team, &rank), TIRX_OK);
                cr_assert(team >= 0 && team < n && !(seen >> team & 1));
                seen |= UINT64_C(1) << team;
                cr_assert_eq(rank, 0);
                tirx_coord c;
                cr_assert_eq(tirx_layout_eval(tirx_scope_inter(s), team, &c, 1, &cnt), TIRX_OK);
                cr_assert_eq(c.v[TIRX_AXIS_CTA], pts[i]);
              }
            }
        }
    }
  free(pts);
  cr_assert_gt(layouts, 1000);
  cr_assert_gt(rejected, 1000);
}

/* Every entry scope and team switch of small launches, exhaustively. */
Test(scope, entry_scopes_and_every_team) {
  static const int ws[] = {1, 3, 4, 8, 12, 16};
  for (int i = 0; i < 6; i++)
    for (int cs = 1; cs <= 2; cs++)
      for (int64_t k = 1; k <= 3; k += 2) {
        launch L = {ws[i], cs, k};
        bool *act = full_set(L);
        tirx_scope *e = tirx_scope_new(A, L.w, L.cs, L.k);
        check_scope(L, e, TIRX_TEAM_CTA, act);
        for (int t = 0; t <= 4; t++) {
          tirx_scope *s = tirx_scope_team(A, e, (tirx_team)t);
          if (t == TIRX_TEAM_WARPGROUP && L.w % 4 != 0) {
            cr_assert_null(s);
            continue;
          }
          cr_assert_not_null(s, "%s", tirx_last_error());
          check_scope(L, s, (tirx_team)t, act);
        }
        free(act);
      }
}
