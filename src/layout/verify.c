/*
 * Well-formedness of a layout for an execution scope (paper 3.3 and 4.2): the layout of the
 * tile one team of a scope holds may name only the thread axes of that team, each within its
 * extent, and every point it names must be an active thread of the team.
 *
 * A team's threads are its ranks r (0 <= r < team size) and every thread axis is a view of the
 * rank, as generated code computes it (src/dispatch/elementwise.c): with t = r % 32W (W warps
 * per CTA), laneid t % 32, wid_in_wg (t % 128) / 32, tid_in_wg t % 128, warpid t / 32, wgid
 * t / 128, tid t, cbx r / 32W. A point of the layout lies on the threads whose views equal its
 * coordinates on the thread axes it uses.
 *
 * The check never enumerates the elements: the D and R iters are independent digits, so the
 * points' coordinates on the thread axes are the product over those axes of each axis's value
 * set V_a, the sums of its iters' multiples. Each V_a is found by a subset-sum over [0, extent)
 * (at most 1024 values, and the span check bounds the iters' reach), the team's active ranks
 * (at most 16384) are mapped to their coordinates, and the layout is well formed exactly when
 * they hit every point of the product. A missed point is traced back to the element and
 * replica that produce it for the message.
 */
#include <stdlib.h>
#include <string.h>

#include "layout_internal.h"

static const char FN[] = "tirx_layout_verify";

/* The thread axes, in the order messages list them. */
static const tirx_axis thread_axes[] = {TIRX_AXIS_LANEID, TIRX_AXIS_WARPID, TIRX_AXIS_WID_IN_WG,
                                        TIRX_AXIS_WGID,   TIRX_AXIS_TID_IN_WG, TIRX_AXIS_TID,
                                        TIRX_AXIS_CBX};
enum { NTA = sizeof thread_axes / sizeof thread_axes[0], MAX_ITS = 2 * TIRX_LAYOUT_MAX_ITERS };

/* Whether a tile of team kind k may name axis ax, and what it may name, for the message. */
static bool team_allows(tirx_team k, tirx_axis ax) {
  switch (ax) {
  case TIRX_AXIS_LANEID: return k >= TIRX_TEAM_WARP;
  case TIRX_AXIS_WID_IN_WG: case TIRX_AXIS_TID_IN_WG: return k >= TIRX_TEAM_WARPGROUP;
  case TIRX_AXIS_WARPID: case TIRX_AXIS_WGID: case TIRX_AXIS_TID: return k >= TIRX_TEAM_CTA;
  case TIRX_AXIS_CBX: return k == TIRX_TEAM_CLUSTER;
  default: return false;
  }
}

static const char *const team_axes[] = {
    "no thread axis",
    "laneid",
    "laneid, wid_in_wg, tid_in_wg",
    "laneid, warpid, wid_in_wg, wgid, tid_in_wg, tid",
    "laneid, warpid, wid_in_wg, wgid, tid_in_wg, tid, cbx",
};

static int64_t axis_extent(tirx_axis ax, int64_t w, int64_t cs) {
  switch (ax) {
  case TIRX_AXIS_LANEID: return 32;
  case TIRX_AXIS_WARPID: return w;
  case TIRX_AXIS_WID_IN_WG: return 4;
  case TIRX_AXIS_WGID: return (w + 3) / 4;
  case TIRX_AXIS_TID_IN_WG: return 128;
  case TIRX_AXIS_TID: return 32 * w;
  default: return cs; /* cbx */
  }
}

/* The value of axis ax on team rank r (W warps per CTA). */
static int64_t view(tirx_axis ax, int64_t r, int64_t w) {
  int64_t t = r % (32 * w);
  switch (ax) {
  case TIRX_AXIS_LANEID: return t % 32;
  case TIRX_AXIS_WARPID: return t / 32;
  case TIRX_AXIS_WID_IN_WG: return t % 128 / 32;
  case TIRX_AXIS_WGID: return t / 128;
  case TIRX_AXIS_TID_IN_WG: return t % 128;
  case TIRX_AXIS_TID: return t;
  default: return r / (32 * w); /* cbx */
  }
}

/* Whether an iter moves a coordinate at all. */
static bool moves(const tirx_iter *it) { return it->extent > 1 && it->stride != 0; }

/* The least and greatest coordinate on ax over every element and replica (both fit in int64:
 * the constructors check every coordinate). */
static void axis_range(const tirx_layout *l, tirx_axis ax, int64_t *lo, int64_t *hi) {
  *lo = *hi = tirx_layout_offset(l, ax);
  for (int pass = 0; pass < 2; pass++) {
    const tirx_iter *it = pass ? l->r : l->d;
    for (int i = 0; i < (pass ? l->nr : l->nd); i++) {
      if (it[i].axis != ax) continue;
      int64_t reach = it[i].stride * (it[i].extent - 1); /* fits: a coordinate's offset */
      if (reach < 0) *lo += reach;
      else *hi += reach;
    }
  }
}

static bool uses_axis(const tirx_layout *l, tirx_axis ax) {
  for (int i = 0; i < l->nd; i++)
    if (l->d[i].axis == ax && moves(&l->d[i])) return true;
  for (int i = 0; i < l->nr; i++)
    if (l->r[i].axis == ax && moves(&l->r[i])) return true;
  return tirx_layout_offset(l, ax) != 0;
}

/* One used thread axis: its moving iters (D index, or -1 - R index), the value set after each
 * (layer k holds the values of the first k iters, the others at digit 0), and the final set. */
typedef struct axis_sets {
  tirx_axis axis;
  int64_t ext, off;
  int n;
  int src[MAX_ITS];
  tirx_iter it[MAX_ITS];
  unsigned char *layer; /* (n + 1) * ext flags */
  int64_t *values;      /* the final set, ascending */
  int64_t count;
  int64_t *pos;         /* ext entries: the index of a value in values, -1 when absent */
} axis_sets;

static bool build_sets(tirx_arena *tmp, const tirx_layout *l, axis_sets *as) {
  as->n = 0;
  for (int i = 0; i < l->nd; i++)
    if (l->d[i].axis == as->axis && moves(&l->d[i])) {
      as->src[as->n] = i;
      as->it[as->n++] = l->d[i];
    }
  for (int i = 0; i < l->nr; i++)
    if (l->r[i].axis == as->axis && moves(&l->r[i])) {
      as->src[as->n] = -1 - i;
      as->it[as->n++] = l->r[i];
    }
  int64_t ext = as->ext;
  as->layer = tirx__arena_array(tmp, (size_t)(as->n + 1) * (size_t)ext, 1, FN);
  as->values = as->layer ? tirx__arena_array(tmp, (size_t)ext, sizeof *as->values, FN) : NULL;
  as->pos = as->values ? tirx__arena_array(tmp, (size_t)ext, sizeof *as->pos, FN) : NULL;
  if (!as->pos) return false;
  /* Every partial sum is a point of the layout (the other digits 0), so after the span check
   * every value lies in [0, ext). */
  as->layer[as->off] = 1;
  for (int k = 0; k < as->n; k++) {
    const unsigned char *prev = as->layer + (size_t)k * (size_t)ext;
    unsigned char *next = as->layer + (size_t)(k + 1) * (size_t)ext;
    for (int64_t v = 0; v < ext; v++) {
      if (!prev[v]) continue;
      for (int64_t j = 0; j < as->it[k].extent; j++) next[v + j * as->it[k].stride] = 1;
    }
  }
  const unsigned char *last = as->layer + (size_t)as->n * (size_t)ext;
  as->count = 0;
  for (int64_t v = 0; v < ext; v++) {
    as->pos[v] = last[v] ? as->count : -1;
    if (last[v]) as->values[as->count++] = v;
  }
  return true;
}

/* The digits of as's iters that produce value v, into dg (D iters) and rg (R iters). */
static void trace(const axis_sets *as, int64_t v, int64_t *dg, int64_t *rg) {
  for (int k = as->n - 1; k >= 0; k--) {
    const unsigned char *prev = as->layer + (size_t)k * (size_t)as->ext;
    int64_t j = 0;
    while (j < as->it[k].extent) {
      int64_t u = v - j * as->it[k].stride;
      if (u >= 0 && u < as->ext && prev[u]) break;
      j++;
    }
    v -= j * as->it[k].stride;
    if (as->src[k] >= 0) dg[as->src[k]] = j;
    else rg[-1 - as->src[k]] = j;
  }
}

/* What a unit of an axis of A_intra is worth in team ranks (the encodings scope.c uses: digit
 * axes or the composite one); 0 for an axis A_intra never uses. */
static int64_t rank_weight(tirx_axis ax, int64_t w) {
  switch (ax) {
  case TIRX_AXIS_LANEID: case TIRX_AXIS_TID_IN_WG: case TIRX_AXIS_TID: return 1;
  case TIRX_AXIS_WID_IN_WG: case TIRX_AXIS_WARPID: return 32;
  case TIRX_AXIS_CBX: return 32 * w;
  default: return 0;
  }
}

static tirx_status verify(tirx_arena *tmp, const tirx_layout *l, const tirx_scope *s,
                          axis_sets *as, int nas) {
  int w = 0, cs = 0;
  tirx__scope_launch(s, &w, &cs);
  tirx_team k = tirx_scope_team_kind(s);
  const char *team = tirx_team_name(k);
  int64_t full = k == TIRX_TEAM_THREAD      ? 1
                 : k == TIRX_TEAM_WARP      ? 32
                 : k == TIRX_TEAM_WARPGROUP ? 128
                 : k == TIRX_TEAM_CTA       ? 32 * (int64_t)w
                                            : 32 * (int64_t)w * cs;

  for (int a = 0; a < nas; a++)
    if (!build_sets(tmp, l, &as[a])) return TIRX_E_NO_MEMORY;

  /* The active ranks of one team, from A_intra. */
  const tirx_layout *intra = tirx_scope_intra(s);
  int64_t nact = tirx_layout_size(intra);
  /* hit[c]: an active rank holds combination c (indices past nact cannot be the first one
   * missing: there are only nact ranks). */
  unsigned char *hit = tirx__arena_array(tmp, (size_t)nact + 1, 1, FN);
  if (!hit) return TIRX_E_NO_MEMORY;
  /* A_intra's points as ranks: a linear function of its digits, counted in mixed radix. */
  int64_t rs[TIRX_LAYOUT_MAX_ITERS], id[TIRX_LAYOUT_MAX_ITERS] = {0}, r = 0;
  for (int i = 0; i < intra->no; i++) r += intra->o[i].value * rank_weight(intra->o[i].axis, w);
  for (int i = 0; i < intra->nd; i++) {
    rs[i] = intra->d[i].stride * rank_weight(intra->d[i].axis, w);
    if (!rank_weight(intra->d[i].axis, w) && intra->d[i].extent > 1)
      return tirx__error(TIRX_E_INTERNAL, "%s: the scope's intra layout is on %s", FN,
                         tirx_axis_name(intra->d[i].axis));
  }
  for (int64_t x = 0; x < nact; x++) {
    if (x > 0) /* the next point: one increment with carries, the last iter fastest */
      for (int i = intra->nd - 1; i >= 0; i--) {
        if (++id[i] < intra->d[i].extent) {
          r += rs[i];
          break;
        }
        r -= (id[i] - 1) * rs[i];
        id[i] = 0;
      }
    int64_t idx = 0, mult = 1;
    if (r < 0 || r >= full)
      return tirx__error(TIRX_E_INTERNAL, "%s: rank %lld of the %s team is outside [0, %lld)", FN,
                         (long long)r, team, (long long)full);
    bool in = true;
    for (int a = 0; a < nas && in; a++) {
      int64_t p = as[a].pos[view(as[a].axis, r, w)];
      if (p < 0) {
        in = false;
        break;
      }
      int64_t term; /* saturating: large indices do not matter */
      if (!tirx__mul_ok(p, mult, &term) || !tirx__add_ok(idx, term, &idx)) idx = INT64_MAX;
      if (!tirx__mul_ok(mult, as[a].count, &mult)) mult = INT64_MAX;
    }
    if (in && idx <= nact) hit[idx] = 1;
  }
  int64_t combos = 1, miss = 0;
  for (int a = 0; a < nas; a++)
    if (!tirx__mul_ok(combos, as[a].count, &combos)) combos = INT64_MAX;
  while (miss < combos && miss <= nact && hit[miss]) miss++;
  if (miss == combos) return TIRX_OK; /* every combination is held */

  /* A point no active thread holds: its coordinates, an element and replica that produce it. */
  int64_t v[NTA];
  int64_t dg[TIRX_LAYOUT_MAX_ITERS] = {0}, rg[TIRX_LAYOUT_MAX_ITERS] = {0};
  for (int a = 0; a < nas; a++) {
    v[a] = as[a].values[miss % as[a].count];
    miss /= as[a].count;
    trace(&as[a], v[a], dg, rg);
  }
  int64_t x = 0, rep = 0;
  for (int i = 0; i < l->nd; i++) x = x * l->d[i].extent + dg[i];
  for (int i = 0; i < l->nr; i++) rep = rep * l->r[i].extent + rg[i];
  tirx__strbuf sb = {0};
  tirx__sb_printf(&sb, "element %lld", (long long)x);
  if (l->nr) tirx__sb_printf(&sb, " (replica %lld)", (long long)rep);
  tirx__sb_append(&sb, " is on ");
  for (int a = 0; a < nas; a++)
    tirx__sb_printf(&sb, a ? ", %s %lld" : "%s %lld", tirx_axis_name(as[a].axis), (long long)v[a]);
  char *what = tirx__sb_finish(&sb);
  int64_t owner = -1;
  for (int64_t q = 0; q < full && owner < 0; q++) {
    bool same = true;
    for (int a = 0; a < nas && same; a++) same = view(as[a].axis, q, w) == v[a];
    if (same) owner = q;
  }
  tirx_status st;
  if (owner < 0) {
    st = tirx__error(TIRX_E_SCOPE, "%s: %s, which is no thread of a %s team", FN,
                     what ? what : "an element", team);
  } else {
    char *act = tirx_layout_str(intra);
    st = tirx__error(TIRX_E_SCOPE, "%s: %s, thread %lld of the %s team, which is not active "
                     "(its active threads: %s)", FN, what ? what : "an element", (long long)owner,
                     team, act ? act : "?");
    free(act);
  }
  free(what);
  return st;
}

tirx_status tirx_layout_verify(const tirx_layout *l, const tirx_scope *s) {
  if (!l) return tirx__error(TIRX_E_NULL_ARG, "%s: layout is NULL", FN);
  if (!s) return tirx__error(TIRX_E_NULL_ARG, "%s: scope is NULL", FN);
  int w = 0, cs = 0;
  tirx__scope_launch(s, &w, &cs);
  tirx_team k = tirx_scope_team_kind(s);

  /* Which axes the layout names: thread axes of the team only, storage axes freely. */
  for (tirx_axis ax = 0; ax < TIRX_AXIS_MAX; ax++) {
    if (!uses_axis(l, ax) || !tirx_axis_is_thread(ax) || team_allows(k, ax)) continue;
    return tirx__error(TIRX_E_SCOPE, "%s: layout uses %s, which is no axis of a %s team's tile "
                       "(expected %s)", FN, tirx_axis_name(ax), tirx_team_name(k), team_axes[k]);
  }
  /* Every coordinate within its axis's extent. */
  axis_sets as[NTA];
  int nas = 0;
  for (int i = 0; i < NTA; i++) {
    tirx_axis ax = thread_axes[i];
    if (!uses_axis(l, ax)) continue;
    int64_t lo, hi, ext = axis_extent(ax, w, cs);
    axis_range(l, ax, &lo, &hi);
    if (lo < 0 || hi >= ext)
      return tirx__error(TIRX_E_SCOPE, "%s: layout's %s coordinates run from %lld to %lld, "
                         "expected 0 to %lld", FN, tirx_axis_name(ax), (long long)lo,
                         (long long)hi, (long long)ext - 1);
    memset(&as[nas], 0, sizeof as[nas]);
    as[nas].axis = ax;
    as[nas].ext = ext;
    as[nas].off = tirx_layout_offset(l, ax);
    nas++;
  }
  /* A register slot is never negative; tensor memory has 128 lanes of 512 columns. */
  static const struct {
    tirx_axis axis;
    int64_t ext;
  } storage[] = {{TIRX_AXIS_REG, 0}, {TIRX_AXIS_TLANE, 128}, {TIRX_AXIS_TCOL, 512}};
  for (int i = 0; i < 3; i++) {
    tirx_axis ax = storage[i].axis;
    int64_t lo, hi, ext = storage[i].ext;
    if (!uses_axis(l, ax)) continue;
    axis_range(l, ax, &lo, &hi);
    if (lo < 0 && !ext)
      return tirx__error(TIRX_E_SCOPE, "%s: layout's reg coordinates run from %lld to %lld, "
                         "expected >= 0", FN, (long long)lo, (long long)hi);
    if (ext && (lo < 0 || hi >= ext))
      return tirx__error(TIRX_E_SCOPE, "%s: layout's %s coordinates run from %lld to %lld, "
                         "expected 0 to %lld", FN, tirx_axis_name(ax), (long long)lo,
                         (long long)hi, (long long)ext - 1);
  }
  if (nas == 0) return TIRX_OK; /* storage only: every active thread of the team sees it */
  tirx_arena *tmp = tirx_arena_create();
  if (!tmp) return tirx__error(TIRX_E_NO_MEMORY, "%s: out of memory", FN);
  tirx_status st = verify(tmp, l, s, as, nas);
  tirx_arena_destroy(tmp);
  return st;
}
