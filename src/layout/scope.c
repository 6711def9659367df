/*
 * Execution scopes (paper 4.1, 4.2): the active thread set, filters and team switches.
 *
 * Every thread of a launch has the global id g = x * 32W + t, where t = warp * 32 + lane is its
 * id in its CTA and x = cluster * CS + cbx its CTA (W warps per CTA, CS CTAs per cluster). Each
 * filterable axis constrains either t or x, never both, so the active set is always a product
 * A = T x C. Filters only intersect, so the exact active set is kept as a handful of ranges:
 *
 *     T = { t in [t_lo, t_hi) : t mod 32 in [l_lo, l_hi), t mod 128 in [q_lo, q_hi) }
 *     C = { x in [x_lo, x_hi) : x mod CS in [c_lo, c_hi) }
 *
 * (warpid and wgid ranges are tid ranges, wid_in_wg ranges are tid_in_wg ranges, cluster ranges
 * are cta ranges, and ranges intersect to ranges, so every sequence of filters keeps this form).
 * A filter or team switch then derives the layouts: T (at most 1024 threads) is enumerated and
 * factored into nested iters (each stride beyond the span of the finer iters), C is factored in
 * closed form (its number of clusters is not bounded), and the team decomposition is checked
 * for uniformity on these exact sets. A result that is not such a layout, or whose teams are
 * not uniform, is rejected, so every scope a caller holds has a well-defined (A_inter, A_intra).
 * The tests check both decisions against brute-force oracles over every thread.
 *
 * Layouts list their iters finest first, as the paper prints them: (32,16,4):(1@laneid,
 * 1@warpid,1@cta). Each digit axis of the launch with extent > 1 gets at least one iter (extent
 * 1 when the set is a single point on it), so a filter to warp 0 gives (32,1,4). Where the set
 * is not a box of per-digit ranges (tid [0, 40)), the thread part is written on the composite
 * axis: (40):(1@tid).
 */
#include <stdlib.h>
#include <string.h>

#include "layout_internal.h"

enum {
  MAX_THREADS = 32 * 32, /* threads in a CTA: warps_per_cta <= 32 */
  MAX_F = 32             /* iters of one factored set or one built layout */
};

/* A set of integers { off + sum_i j_i * s_i : 0 <= j_i < e_i }, iters finest first and nested:
 * each stride exceeds the span of the iters before it, so every point has one decomposition.
 * Extent-1 iters are never stored. */
typedef struct fset {
  int n;
  int64_t e[MAX_F], s[MAX_F];
  int64_t off;
} fset;

/* One digit of a part's integer value v: (v / unit) mod radix, named axis. */
typedef struct digit {
  tirx_axis axis;
  int64_t radix;
} digit;

/* A layout being built, with each D iter's stride in g (for tirx_scope_locate). */
typedef struct lbuild {
  int nd;
  bool overflow;
  tirx_iter d[MAX_F];
  int64_t gs[MAX_F];
  int64_t off[TIRX_AXIS_MAX];
  int64_t goff;
} lbuild;

/* A finished layout and how to decode a g value back to its flat index. */
typedef struct gmap {
  const tirx_layout *l;
  int64_t *gs; /* l->nd strides in g; 0 for extent-1 iters */
  int64_t goff;
} gmap;

struct tirx_scope {
  int32_t warps, csize;
  int64_t nclusters;
  tirx_team team;
  int64_t t_lo, t_hi, l_lo, l_hi, q_lo, q_hi, x_lo, x_hi, c_lo, c_hi;
  int64_t num_threads, num_teams, team_size;
  int64_t unit; /* threads per team instance in g: 1, 32, 128, 32W or 32W*CS */
  const tirx_layout *active;
  gmap inter, intra;
};

static const char *const team_names[] = {"thread", "warp", "warpgroup", "cta", "cluster"};
static const char *const team_plurals[] = {"threads", "warps", "warpgroups", "CTAs", "clusters"};

const char *tirx_team_name(tirx_team k) {
  if ((int)k < 0 || (int)k > (int)TIRX_TEAM_CLUSTER) return NULL;
  return team_names[k];
}

/* ---- sets ------------------------------------------------------------------------------------ */

/*
 * Factors the sorted, distinct points p[0..n) into nested iters: the innermost iter is the
 * longest arithmetic run from p[0], the points must be translates of that run, and the run
 * starts are factored the same way. False when the points are not such a set.
 */
static bool factorize(const int64_t *p, int64_t n, fset *f) {
  f->n = 0;
  f->off = p[0];
  int64_t block = 1; /* points per block so far; block starts are p[0], p[block], ... */
  int64_t len = n;   /* number of blocks */
  while (len > 1) {
    int64_t s = p[block] - p[0], e = 1;
    while (e < len && p[e * block] - p[0] == e * s) e++;
    if (len % e != 0 || f->n == MAX_F) return false;
    for (int64_t b = 0; b < len; b += e)
      for (int64_t i = 1; i < e; i++)
        if (p[(b + i) * block] - p[b * block] != i * s) return false;
    f->e[f->n] = e;
    f->s[f->n] = s;
    f->n++;
    block *= e;
    len /= e;
  }
  return true;
}

static int64_t fset_size(const fset *f) {
  int64_t n = 1;
  for (int i = 0; i < f->n; i++) n *= f->e[i];
  return n;
}

/* A range [lo, lo + n) as a set. */
static void fset_range(fset *f, int64_t lo, int64_t n) {
  f->n = 0;
  f->off = lo;
  if (n > 1) {
    f->e[0] = n;
    f->s[0] = 1;
    f->n = 1;
  }
}

static void push_iter(lbuild *b, int64_t e, int64_t s, tirx_axis axis, int64_t gs) {
  if (b->nd == MAX_F) {
    b->overflow = true;
    return;
  }
  b->d[b->nd] = (tirx_iter){e, s, axis};
  b->gs[b->nd] = e > 1 ? gs : 0;
  b->nd++;
}

/*
 * Appends the set f (one part of g, scaled by gscale) to b over the named digits dg (finest
 * first). When every iter falls on one digit without carrying into the next, the iters go on
 * the digit axes (splitting an iter at a digit boundary where it divides evenly), and every
 * digit with radix > 1 gets an iter, extent 1 when the set is a point on it. Otherwise the
 * whole set goes on the composite axis.
 */
static void express(lbuild *b, const fset *in, const digit *dg, int ndg, tirx_axis composite,
                    int64_t gscale) {
  int64_t base[5];
  base[0] = 1;
  for (int k = 0; k < ndg; k++) base[k + 1] = base[k] * dg[k].radix;

  fset f = *in;
  for (int k = 1; k < ndg; k++) {
    int64_t B = base[k];
    for (int i = 0; i < f.n && f.n < MAX_F; i++) {
      int64_t s = f.s[i], e = f.e[i];
      if (s < B && s * (e - 1) >= B && B % s == 0 && e % (B / s) == 0) {
        memmove(&f.e[i + 2], &f.e[i + 1], (size_t)(f.n - i - 1) * sizeof f.e[0]);
        memmove(&f.s[i + 2], &f.s[i + 1], (size_t)(f.n - i - 1) * sizeof f.s[0]);
        f.e[i] = B / s;
        f.e[i + 1] = e / (B / s);
        f.s[i + 1] = B;
        f.n++;
      }
    }
  }

  int dig[MAX_F];
  int64_t used[4];
  bool ok = true;
  for (int k = 0; k < ndg; k++) used[k] = (f.off / base[k]) % dg[k].radix;
  for (int i = 0; i < f.n; i++) {
    int k = ndg - 1;
    while (k > 0 && f.s[i] < base[k]) k--;
    dig[i] = k;
    if (f.s[i] % base[k] != 0) ok = false;
    used[k] += f.s[i] / base[k] * (f.e[i] - 1);
  }
  for (int k = 0; k < ndg; k++)
    if (used[k] >= dg[k].radix) ok = false;

  if (ok) {
    for (int k = 0; k < ndg; k++) {
      bool any = false;
      for (int i = 0; i < f.n; i++)
        if (dig[i] == k) {
          push_iter(b, f.e[i], f.s[i] / base[k], dg[k].axis, f.s[i] * gscale);
          any = true;
        }
      if (!any && dg[k].radix > 1) push_iter(b, 1, 1, dg[k].axis, 0);
      b->off[dg[k].axis] += (f.off / base[k]) % dg[k].radix;
    }
  } else {
    for (int i = 0; i < in->n; i++) push_iter(b, in->e[i], in->s[i], composite, in->s[i] * gscale);
    b->off[composite] += in->off;
  }
  b->goff += in->off * gscale;
}

/* Writes b in the layout text form (flat, no replicas), for error messages. */
static void lbuild_format(tirx__strbuf *sb, const lbuild *b) {
  tirx__sb_append(sb, "(");
  for (int i = 0; i < b->nd; i++)
    tirx__sb_printf(sb, i ? ",%lld" : "%lld", (long long)b->d[i].extent);
  tirx__sb_append(sb, "):(");
  for (int i = 0; i < b->nd; i++)
    tirx__sb_printf(sb, i ? ",%lld@%s" : "%lld@%s", (long long)b->d[i].stride,
                    tirx_axis_name(b->d[i].axis));
  tirx__sb_append(sb, ")");
  for (int ax = 0; ax < TIRX_AXIS_MAX; ax++)
    if (b->off[ax]) tirx__sb_printf(sb, "+%lld@%s", (long long)b->off[ax], tirx_axis_name(ax));
}

static bool lbuild_finish(tirx_arena *a, const char *fn, const lbuild *b, gmap *out) {
  if (b->overflow) {
    tirx__error(TIRX_E_INTERNAL, "%s: a scope layout needs more than %d iters", fn, (int)MAX_F);
    return false;
  }
  tirx_axis_offset o[TIRX_AXIS_MAX];
  int no = 0;
  for (int ax = 0; ax < TIRX_AXIS_MAX; ax++)
    if (b->off[ax]) o[no++] = (tirx_axis_offset){ax, b->off[ax]};
  tirx_layout *l = tirx__layout_make(a, fn, b->nd, b->d, 0, NULL, no, o, 0, NULL, 0, 0);
  if (!l) return false;
  out->l = l;
  out->goff = b->goff;
  out->gs = NULL;
  if (b->nd) {
    out->gs = tirx__arena_array(a, (size_t)b->nd, sizeof(int64_t), fn);
    if (!out->gs) return false;
    memcpy(out->gs, b->gs, (size_t)b->nd * sizeof(int64_t));
  }
  return true;
}

/* The flat index x of m->l whose point is g (iters are finest first, so decode from the last);
 * false when g is not a point of it. */
static bool gmap_decode(const gmap *m, int64_t g, int64_t *x) {
  int64_t v = g - m->goff, j[MAX_F];
  if (v < 0) return false;
  for (int i = m->l->nd - 1; i >= 0; i--) {
    j[i] = 0;
    if (m->gs[i] == 0) continue;
    j[i] = v / m->gs[i];
    if (j[i] >= m->l->d[i].extent) return false;
    v -= j[i] * m->gs[i];
  }
  if (v != 0) return false;
  int64_t r = 0;
  for (int i = 0; i < m->l->nd; i++) r = r * m->l->d[i].extent + j[i];
  *x = r;
  return true;
}

/* ---- the active set ------------------------------------------------------------------------ */

static bool thread_active(const tirx_scope *s, int64_t t) {
  return t >= s->t_lo && t < s->t_hi && t % 32 >= s->l_lo && t % 32 < s->l_hi &&
         t % 128 >= s->q_lo && t % 128 < s->q_hi;
}

/* T in increasing order into p; returns |T|. */
static int64_t thread_points(const tirx_scope *s, int64_t *p) {
  int64_t n = 0;
  for (int64_t t = s->t_lo; t < s->t_hi; t++)
    if (thread_active(s, t)) p[n++] = t;
  return n;
}

/* The first and last CTA of C; false when C is empty. */
static bool cta_bounds(const tirx_scope *s, int64_t *first, int64_t *last) {
  int64_t cs = s->csize;
  if (s->x_lo >= s->x_hi || s->c_lo >= s->c_hi) return false;
  int64_t k = s->x_lo / cs, m = s->x_lo % cs;
  *first = m < s->c_lo ? k * cs + s->c_lo : m < s->c_hi ? s->x_lo : (k + 1) * cs + s->c_lo;
  if (*first >= s->x_hi) return false;
  int64_t y = s->x_hi - 1;
  k = y / cs;
  m = y % cs;
  *last = m >= s->c_hi ? k * cs + s->c_hi - 1 : m >= s->c_lo ? y : (k - 1) * cs + s->c_hi - 1;
  return true;
}

static void fset_push(fset *f, int64_t e, int64_t s) {
  if (e > 1) {
    f->e[f->n] = e;
    f->s[f->n] = s;
    f->n++;
  }
}

/*
 * C factored in closed form (C may span more clusters than can be enumerated). C is the cbx
 * range R = [c_lo, c_hi) of every cluster from the first CTA to the last, of n = |R| CTAs, with
 * nf of them in the first cluster and nl in the last. Counted from the first CTA, the set is
 * a range when it lies in one cluster or R is every cbx, and otherwise a layout in exactly
 * three cases (the greedy factoring of the points shows there are no others):
 *   nf = nl = n:              (n, clusters):(1, CS)
 *   two clusters, nf = nl:    (nf, 2):(1, distance)
 *   n = 2 nf, nl = nf:        (nf, 2, clusters - 1):(1, CS - nf, CS): the last nf CTAs of R
 *                             in one cluster pair with the first nf of the next.
 */
static bool cta_factor(const tirx_scope *s, int64_t first, int64_t last, fset *f) {
  int64_t cs = s->csize, k0 = first / cs, k1 = last / cs, n = s->c_hi - s->c_lo;
  if (k0 == k1 || n == cs) {
    fset_range(f, first, last - first + 1);
    return true;
  }
  int64_t nf = k0 * cs + s->c_hi - first, nl = last - (k1 * cs + s->c_lo) + 1;
  f->off = first;
  f->n = 0;
  if (nf == n && nl == n) {
    fset_push(f, n, 1);
    fset_push(f, k1 - k0 + 1, cs);
  } else if (k1 == k0 + 1 && nf == nl) {
    fset_push(f, nf, 1);
    fset_push(f, 2, k1 * cs + s->c_lo - first);
  } else if (n == 2 * nf && nl == nf) {
    fset_push(f, nf, 1);
    fset_push(f, 2, cs - nf);
    fset_push(f, k1 - k0, cs);
  } else {
    return false;
  }
  return true;
}

/* ---- building a scope ------------------------------------------------------------------------ */

typedef enum outcome { DONE, EMPTY, NOT_LAYOUT, NOT_UNIFORM, FAILED } outcome;

/* The digits of the thread part and of the CTA part. */
static int thread_digits(const tirx_scope *s, digit *dg) {
  dg[0] = (digit){TIRX_AXIS_LANEID, 32};
  dg[1] = (digit){TIRX_AXIS_WARPID, s->warps};
  return 2;
}

/* Describes the active threads (or CTAs) for a uniformity message: "warps [3, 7)",
 * "threads [0, 40)", "CTAs [1, 5)", else the set's layout. */
static void describe(tirx__strbuf *sb, const tirx_scope *s, bool ctas) {
  lbuild b;
  memset(&b, 0, sizeof b);
  fset f;
  if (ctas) {
    int64_t first, last;
    if (!cta_bounds(s, &first, &last)) return;
    bool ok = cta_factor(s, first, last, &f);
    if (ok && (f.n == 0 || (f.n == 1 && f.s[0] == 1))) {
      tirx__sb_printf(sb, "CTAs [%lld, %lld)", (long long)first, (long long)last + 1);
      return;
    }
    tirx__sb_append(sb, "CTAs ");
    if (ok) {
      digit dg = {TIRX_AXIS_CTA, s->nclusters * s->csize};
      express(&b, &f, &dg, 1, TIRX_AXIS_CTA, 1);
      lbuild_format(sb, &b);
    }
    return;
  }
  int64_t p[MAX_THREADS];
  int64_t n = thread_points(s, p);
  if (n == 0) return;
  int64_t lo = p[0], hi = p[n - 1] + 1;
  if (hi - lo == n && lo % 32 == 0 && hi % 32 == 0) {
    tirx__sb_printf(sb, "warps [%lld, %lld)", (long long)lo / 32, (long long)hi / 32);
  } else if (hi - lo == n) {
    tirx__sb_printf(sb, "threads [%lld, %lld)", (long long)lo, (long long)hi);
  } else {
    tirx__sb_append(sb, "threads ");
    if (factorize(p, n, &f)) {
      digit dg[2];
      express(&b, &f, dg, thread_digits(s, dg), TIRX_AXIS_TID, 1);
      lbuild_format(sb, &b);
    }
  }
}

/*
 * Splits T into teams of u threads (u = 32 or 128): every non-empty team must hold the same
 * ranks. Fills the intra pattern and the active team indices (t / u) as sets.
 */
static outcome split_threads(const tirx_scope *s, int64_t u, fset *pattern, fset *teams) {
  bool in[MAX_THREADS] = {false};
  int64_t p[MAX_THREADS], n = thread_points(s, p);
  for (int64_t i = 0; i < n; i++) in[p[i]] = true;
  int64_t ref = -1, pat[128], npat = 0, q[MAX_THREADS], nq = 0;
  for (int64_t team = 0; team * u < 32 * (int64_t)s->warps; team++) {
    bool any = false;
    for (int64_t r = 0; r < u && !any; r++) any = in[team * u + r];
    if (!any) continue;
    if (ref < 0) {
      ref = team;
      for (int64_t r = 0; r < u; r++)
        if (in[team * u + r]) pat[npat++] = r;
    } else {
      for (int64_t r = 0; r < u; r++)
        if (in[team * u + r] != in[ref * u + r]) return NOT_UNIFORM;
    }
    q[nq++] = team;
  }
  return factorize(pat, npat, pattern) && factorize(q, nq, teams) ? DONE : NOT_LAYOUT;
}

/*
 * Computes the active layout and the decomposition for s->team from s's ranges. On EMPTY,
 * NOT_LAYOUT and NOT_UNIFORM nothing is recorded (the caller words the message); FAILED means
 * an error (out of memory) was recorded.
 */
static outcome build(tirx_arena *a, const char *fn, tirx_scope *s) {
  int64_t p[MAX_THREADS], first, last;
  int64_t n = thread_points(s, p);
  if (n == 0 || !cta_bounds(s, &first, &last)) return EMPTY;
  fset tset, cset;
  if (!factorize(p, n, &tset) || !cta_factor(s, first, last, &cset)) return NOT_LAYOUT;

  int64_t cta_g = 32 * (int64_t)s->warps, cs = s->csize;
  digit tdg[2], cdg = {TIRX_AXIS_CTA, s->nclusters * cs};
  int ntdg = thread_digits(s, tdg);

  lbuild act, inter, intra;
  memset(&act, 0, sizeof act);
  memset(&inter, 0, sizeof inter);
  memset(&intra, 0, sizeof intra);
  express(&act, &tset, tdg, ntdg, TIRX_AXIS_TID, 1);
  express(&act, &cset, &cdg, 1, TIRX_AXIS_CTA, cta_g);

  switch (s->team) {
  case TIRX_TEAM_THREAD:
    s->unit = 1;
    inter = act;
    break;
  case TIRX_TEAM_WARP:
  case TIRX_TEAM_WARPGROUP: {
    bool wg = s->team == TIRX_TEAM_WARPGROUP;
    s->unit = wg ? 128 : 32;
    fset pattern, teams;
    outcome o = split_threads(s, s->unit, &pattern, &teams);
    if (o != DONE) return o;
    digit pdg[2] = {{TIRX_AXIS_LANEID, 32}, {TIRX_AXIS_WID_IN_WG, 4}};
    digit qdg = {wg ? TIRX_AXIS_WGID : TIRX_AXIS_WARPID, wg ? s->warps / 4 : s->warps};
    express(&intra, &pattern, pdg, wg ? 2 : 1, TIRX_AXIS_TID_IN_WG, 1);
    express(&inter, &teams, &qdg, 1, qdg.axis, s->unit);
    express(&inter, &cset, &cdg, 1, TIRX_AXIS_CTA, cta_g);
    break;
  }
  case TIRX_TEAM_CTA:
    s->unit = cta_g;
    express(&intra, &tset, tdg, ntdg, TIRX_AXIS_TID, 1);
    express(&inter, &cset, &cdg, 1, TIRX_AXIS_CTA, cta_g);
    break;
  case TIRX_TEAM_CLUSTER: {
    /* Every active cluster must hold the same cbx range: all of [c_lo, c_hi), unless there is
     * only one active cluster. */
    s->unit = cta_g * cs;
    int64_t k0 = first / cs, k1 = last / cs, nc = s->c_hi - s->c_lo;
    fset cb, clusters;
    if (k0 == k1) {
      fset_range(&cb, first % cs, last - first + 1);
    } else {
      if (k0 * cs + s->c_hi - first != nc || last - (k1 * cs + s->c_lo) + 1 != nc)
        return NOT_UNIFORM;
      fset_range(&cb, s->c_lo, nc);
    }
    fset_range(&clusters, k0, k1 - k0 + 1);
    digit bdg = {TIRX_AXIS_CBX, cs}, kdg = {TIRX_AXIS_CLUSTER, s->nclusters};
    express(&intra, &tset, tdg, ntdg, TIRX_AXIS_TID, 1);
    express(&intra, &cb, &bdg, 1, TIRX_AXIS_CBX, cta_g);
    express(&inter, &clusters, &kdg, 1, TIRX_AXIS_CLUSTER, s->unit);
    break;
  }
  }

  gmap am;
  if (!lbuild_finish(a, fn, &act, &am) || !lbuild_finish(a, fn, &inter, &s->inter) ||
      !lbuild_finish(a, fn, &intra, &s->intra))
    return FAILED;
  s->active = am.l;
  s->num_threads = n * fset_size(&cset);
  s->num_teams = tirx_layout_size(s->inter.l);
  s->team_size = tirx_layout_size(s->intra.l);
  if (s->num_teams * s->team_size != s->num_threads) {
    tirx__error(TIRX_E_INTERNAL, "%s: %lld teams of %lld threads for %lld active threads", fn,
                (long long)s->num_teams, (long long)s->team_size, (long long)s->num_threads);
    return FAILED;
  }
  return DONE;
}

/* Records the E_SCOPE message for a failed team decomposition: "<prefix>active warps [3, 7)
 * split warpgroups unevenly: teams would not be uniform". */
static void uniform_error(const tirx_scope *s, const char *prefix) {
  tirx__strbuf sb = {0};
  describe(&sb, s, s->team == TIRX_TEAM_CLUSTER);
  char *what = tirx__sb_finish(&sb);
  tirx__error(TIRX_E_SCOPE, "%sactive %s split %s unevenly: teams would not be uniform", prefix,
              what ? what : "threads", team_plurals[s->team]);
  free(what);
}

/* ---- public functions ------------------------------------------------------------------------ */

tirx_scope *tirx_scope_new(tirx_arena *a, int warps_per_cta, int cluster_size,
                           int64_t num_clusters) {
  static const char fn[] = "tirx_scope_new";
  if (!a) {
    tirx__error(TIRX_E_NULL_ARG, "%s: arena is NULL", fn);
    return NULL;
  }
  if (warps_per_cta < 1 || warps_per_cta > 32) {
    tirx__error(TIRX_E_INVALID_ARG, "%s: warps_per_cta is %d, expected 1 to 32", fn,
                warps_per_cta);
    return NULL;
  }
  if (cluster_size < 1 || cluster_size > 16) {
    tirx__error(TIRX_E_INVALID_ARG, "%s: cluster_size is %d, expected 1 to 16", fn, cluster_size);
    return NULL;
  }
  if (num_clusters < 1) {
    tirx__error(TIRX_E_INVALID_ARG, "%s: num_clusters is %lld, expected >= 1", fn,
                (long long)num_clusters);
    return NULL;
  }
  int64_t total;
  if (!tirx__mul_ok(32 * (int64_t)warps_per_cta * cluster_size, num_clusters, &total)) {
    tirx__error(TIRX_E_OVERFLOW, "%s: %lld clusters of %d CTAs of %d warps overflow int64", fn,
                (long long)num_clusters, cluster_size, warps_per_cta);
    return NULL;
  }
  tirx_scope *s = tirx__arena_alloc(a, sizeof *s, fn);
  if (!s) return NULL;
  s->warps = warps_per_cta;
  s->csize = cluster_size;
  s->nclusters = num_clusters;
  s->team = TIRX_TEAM_CTA;
  s->t_lo = 0, s->t_hi = 32 * (int64_t)warps_per_cta;
  s->l_lo = 0, s->l_hi = 32;
  s->q_lo = 0, s->q_hi = 128;
  s->x_lo = 0, s->x_hi = num_clusters * cluster_size;
  s->c_lo = 0, s->c_hi = cluster_size;
  return build(a, fn, s) == DONE ? s : NULL;
}

static void intersect(int64_t *lo, int64_t *hi, int64_t a, int64_t b) {
  if (a > *lo) *lo = a;
  if (b < *hi) *hi = b;
  if (*hi < *lo) *hi = *lo;
}

tirx_scope *tirx_scope_filter(tirx_arena *a, const tirx_scope *s, tirx_axis axis, int64_t lo,
                              int64_t hi) {
  static const char fn[] = "tirx_scope_filter";
  if (!a) {
    tirx__error(TIRX_E_NULL_ARG, "%s: arena is NULL", fn);
    return NULL;
  }
  if (!s) {
    tirx__error(TIRX_E_NULL_ARG, "%s: scope is NULL", fn);
    return NULL;
  }
  const char *name = tirx_axis_name(axis);
  if (!name) {
    tirx__error(TIRX_E_UNKNOWN_AXIS, "%s: unknown axis %d", fn, (int)axis);
    return NULL;
  }
  switch (axis) {
  case TIRX_AXIS_LANEID: case TIRX_AXIS_WARPID: case TIRX_AXIS_WID_IN_WG:
  case TIRX_AXIS_WGID: case TIRX_AXIS_TID_IN_WG: case TIRX_AXIS_TID:
  case TIRX_AXIS_CTA: case TIRX_AXIS_CBX: case TIRX_AXIS_CLUSTER:
    break;
  default:
    tirx__error(TIRX_E_UNKNOWN_AXIS,
                "%s: axis %s is not a thread axis a scope filters (laneid, warpid, wid_in_wg, "
                "wgid, tid_in_wg, tid, cta, cbx, cluster)",
                fn, name);
    return NULL;
  }
  if (lo < 0) {
    tirx__error(TIRX_E_INVALID_ARG, "%s: %s range [%lld, %lld) starts below 0", fn, name,
                (long long)lo, (long long)hi);
    return NULL;
  }
  if (lo >= hi) {
    tirx__error(TIRX_E_INVALID_ARG, "%s: %s range [%lld, %lld) is empty (lo >= hi)", fn, name,
                (long long)lo, (long long)hi);
    return NULL;
  }
  bool wg_axis =
      axis == TIRX_AXIS_WID_IN_WG || axis == TIRX_AXIS_WGID || axis == TIRX_AXIS_TID_IN_WG;
  if (wg_axis && s->warps % 4 != 0) {
    tirx__error(TIRX_E_SCOPE, "%s: axis %s needs warps_per_cta to be a multiple of 4, got %d", fn,
                name, (int)s->warps);
    return NULL;
  }

  tirx_scope *r = tirx__arena_alloc(a, sizeof *r, fn);
  if (!r) return NULL;
  *r = *s;
  int64_t w = s->warps, cs = s->csize, k = s->nclusters;
  int64_t ext = axis == TIRX_AXIS_LANEID      ? 32
                : axis == TIRX_AXIS_WARPID    ? w
                : axis == TIRX_AXIS_WID_IN_WG ? 4
                : axis == TIRX_AXIS_WGID      ? w / 4
                : axis == TIRX_AXIS_TID_IN_WG ? 128
                : axis == TIRX_AXIS_TID       ? 32 * w
                : axis == TIRX_AXIS_CTA       ? cs * k
                : axis == TIRX_AXIS_CBX       ? cs
                                              : k;
  int64_t a0 = lo < ext ? lo : ext, b0 = hi < ext ? hi : ext; /* clipped: no overflow below */
  switch (axis) {
  case TIRX_AXIS_LANEID: intersect(&r->l_lo, &r->l_hi, a0, b0); break;
  case TIRX_AXIS_WARPID: intersect(&r->t_lo, &r->t_hi, 32 * a0, 32 * b0); break;
  case TIRX_AXIS_WID_IN_WG: intersect(&r->q_lo, &r->q_hi, 32 * a0, 32 * b0); break;
  case TIRX_AXIS_WGID: intersect(&r->t_lo, &r->t_hi, 128 * a0, 128 * b0); break;
  case TIRX_AXIS_TID_IN_WG: intersect(&r->q_lo, &r->q_hi, a0, b0); break;
  case TIRX_AXIS_TID: intersect(&r->t_lo, &r->t_hi, a0, b0); break;
  case TIRX_AXIS_CTA: intersect(&r->x_lo, &r->x_hi, a0, b0); break;
  case TIRX_AXIS_CBX: intersect(&r->c_lo, &r->c_hi, a0, b0); break;
  default: intersect(&r->x_lo, &r->x_hi, cs * a0, cs * b0); break;
  }

  outcome o = build(a, fn, r);
  if (o == DONE) return r;
  if (o == FAILED) return NULL;
  tirx__strbuf sb = {0};
  if (o == NOT_UNIFORM)
    tirx__sb_printf(&sb, "%s: %s [%lld, %lld) under team %s: ", fn, name, (long long)lo,
                    (long long)hi, team_names[s->team]);
  char *prefix = tirx__sb_finish(&sb);
  char *set = tirx_layout_str(s->active);
  if (o == EMPTY)
    tirx__error(TIRX_E_SCOPE, "%s: %s [%lld, %lld) leaves no active thread in %s", fn, name,
                (long long)lo, (long long)hi, set ? set : "the active set");
  else if (o == NOT_LAYOUT)
    tirx__error(TIRX_E_SCOPE, "%s: %s [%lld, %lld) cannot narrow the active set %s: the result "
                "is not a layout", fn, name, (long long)lo, (long long)hi,
                set ? set : "");
  else
    uniform_error(r, prefix ? prefix : "tirx_scope_filter: ");
  free(set);
  free(prefix);
  return NULL;
}

tirx_scope *tirx_scope_team(tirx_arena *a, const tirx_scope *s, tirx_team k) {
  static const char fn[] = "tirx_scope_team";
  if (!a) {
    tirx__error(TIRX_E_NULL_ARG, "%s: arena is NULL", fn);
    return NULL;
  }
  if (!s) {
    tirx__error(TIRX_E_NULL_ARG, "%s: scope is NULL", fn);
    return NULL;
  }
  if (!tirx_team_name(k)) {
    tirx__error(TIRX_E_INVALID_ARG,
                "%s: team kind %d is not thread, warp, warpgroup, cta or cluster", fn, (int)k);
    return NULL;
  }
  if (k == TIRX_TEAM_WARPGROUP && s->warps % 4 != 0) {
    tirx__error(TIRX_E_SCOPE,
                "%s: warpgroup teams need warps_per_cta to be a multiple of 4, got %d", fn,
                (int)s->warps);
    return NULL;
  }
  tirx_scope *r = tirx__arena_alloc(a, sizeof *r, fn);
  if (!r) return NULL;
  *r = *s;
  r->team = k;
  outcome o = build(a, fn, r);
  if (o == DONE) return r;
  if (o == NOT_UNIFORM) {
    uniform_error(r, "tirx_scope_team: ");
  } else if (o == NOT_LAYOUT) {
    char *set = tirx_layout_str(s->active);
    tirx__error(TIRX_E_SCOPE, "%s: the %s teams of %s are not layouts", fn, team_names[k],
                set ? set : "the active set");
    free(set);
  } else if (o == EMPTY) {
    tirx__error(TIRX_E_INTERNAL, "%s: the scope has no active thread", fn);
  }
  return NULL;
}

static bool check_scope(const tirx_scope *s, const char *fn) {
  if (!s) tirx__error(TIRX_E_NULL_ARG, "%s: scope is NULL", fn);
  return s != NULL;
}

void tirx__scope_launch(const tirx_scope *s, int *warps_per_cta, int *cluster_size) {
  *warps_per_cta = s->warps;
  *cluster_size = s->csize;
}

tirx_team tirx_scope_team_kind(const tirx_scope *s) {
  return check_scope(s, "tirx_scope_team_kind") ? s->team : (tirx_team)-1;
}

const tirx_layout *tirx_scope_active(const tirx_scope *s) {
  return check_scope(s, "tirx_scope_active") ? s->active : NULL;
}
const tirx_layout *tirx_scope_inter(const tirx_scope *s) {
  return check_scope(s, "tirx_scope_inter") ? s->inter.l : NULL;
}
const tirx_layout *tirx_scope_intra(const tirx_scope *s) {
  return check_scope(s, "tirx_scope_intra") ? s->intra.l : NULL;
}

int64_t tirx_scope_num_threads(const tirx_scope *s) {
  return check_scope(s, "tirx_scope_num_threads") ? s->num_threads : 0;
}
int64_t tirx_scope_num_teams(const tirx_scope *s) {
  return check_scope(s, "tirx_scope_num_teams") ? s->num_teams : 0;
}
int64_t tirx_scope_team_size(const tirx_scope *s) {
  return check_scope(s, "tirx_scope_team_size") ? s->team_size : 0;
}

bool tirx_scope_contains(const tirx_scope *s, int64_t lane, int64_t warp, int64_t cta) {
  if (!check_scope(s, "tirx_scope_contains")) return false;
  if (lane < 0 || lane >= 32 || warp < 0 || warp >= s->warps || cta < 0 ||
      cta >= s->nclusters * s->csize)
    return false;
  return thread_active(s, warp * 32 + lane) && cta >= s->x_lo && cta < s->x_hi &&
         cta % s->csize >= s->c_lo && cta % s->csize < s->c_hi;
}

tirx_status tirx_scope_locate(const tirx_scope *s, int64_t lane, int64_t warp, int64_t cta,
                              int64_t *team, int64_t *rank) {
  static const char fn[] = "tirx_scope_locate";
  if (!s) return tirx__error(TIRX_E_NULL_ARG, "%s: scope is NULL", fn);
  if (!team) return tirx__error(TIRX_E_NULL_ARG, "%s: team is NULL", fn);
  if (!rank) return tirx__error(TIRX_E_NULL_ARG, "%s: rank is NULL", fn);
  if (!tirx_scope_contains(s, lane, warp, cta))
    return tirx__error(TIRX_E_OUT_OF_RANGE,
                       "%s: thread (lane %lld, warp %lld, cta %lld) is not active", fn,
                       (long long)lane, (long long)warp, (long long)cta);
  int64_t g = cta * 32 * s->warps + warp * 32 + lane;
  if (!gmap_decode(&s->inter, g - g % s->unit, team) || !gmap_decode(&s->intra, g % s->unit, rank))
    return tirx__error(TIRX_E_INTERNAL, "%s: thread (lane %lld, warp %lld, cta %lld) is not in the "
                       "team decomposition", fn, (long long)lane, (long long)warp, (long long)cta);
  return TIRX_OK;
}

char *tirx_scope_str(const tirx_scope *s) {
  static const char fn[] = "tirx_scope_str";
  if (!check_scope(s, fn)) return NULL;
  char *act = tirx_layout_str(s->active), *inter = tirx_layout_str(s->inter.l),
       *intra = tirx_layout_str(s->intra.l);
  tirx__strbuf sb = {0};
  if (act && inter && intra)
    tirx__sb_printf(&sb, "A=%s team=%s inter=%s intra=%s", act, team_names[s->team], inter, intra);
  else
    sb.failed = true;
  free(act);
  free(inter);
  free(intra);
  char *out = tirx__sb_finish(&sb);
  if (!out) tirx__error(TIRX_E_NO_MEMORY, "%s: out of memory", fn);
  return out;
}
