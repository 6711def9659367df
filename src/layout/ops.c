/*
 * The dispatch-oriented operations of paper section 5.1 that change a layout's logical view
 * without changing its placement (group, flatten, permute, slice), and the two that build
 * layouts from others (tile, compose).
 *
 * Every function works on the flat D iters, outermost first. A logical index is a mixed-radix
 * number over the extents, so grouping, slicing and composition all come down to walking those
 * digits from the innermost one outwards and splitting an iter (e):(s) into (e/f, f):(s*f, s)
 * where a boundary falls inside it.
 */
#include <stdio.h>
#include <string.h>

#include "layout_internal.h"

/* Room for the iters of a grouping before the limit applies: up to MAX_ITERS input iters, and
 * at most one split per logical dimension. */
enum { WORK_ITERS = TIRX_LAYOUT_MAX_ITERS + TIRX_LAYOUT_MAX_RANK };

/* "(2,6)": a list of n integers in the paper's notation, truncated to fit buf. */
static const char *fmt_list(char *buf, size_t cap, int n, const int64_t *v) {
  size_t len = 0;
  for (int i = 0; i <= n + 1 && len < cap; i++) {
    int w = i == 0       ? snprintf(buf, cap, "(")
            : i == n + 1 ? snprintf(buf + len, cap - len, ")")
                         : snprintf(buf + len, cap - len, i > 1 ? ",%lld" : "%lld",
                                    (long long)v[i - 1]);
    if (w < 0) break;
    len += (size_t)w;
  }
  return buf;
}

/* The extents of n iters as "(2,6)". */
static const char *fmt_extents(char *buf, size_t cap, int n, const tirx_iter *it) {
  int64_t e[WORK_ITERS];
  if (n > WORK_ITERS) n = WORK_ITERS;
  for (int i = 0; i < n; i++) e[i] = it[i].extent;
  return fmt_list(buf, cap, n, e);
}

/* "(8):(8@m)" for one iter. */
static const char *fmt_iter(char *buf, size_t cap, const tirx_iter *it) {
  snprintf(buf, cap, "(%lld):(%lld@%s)", (long long)it->extent, (long long)it->stride,
           tirx_axis_name(it->axis));
  return buf;
}

static bool check_arena(tirx_arena *a, const char *fn) {
  if (!a) {
    tirx__error(TIRX_E_NULL_ARG, "%s: arena is NULL", fn);
    return false;
  }
  return true;
}

/* Validates rank and a shape of rank extents whose product must be l's size. */
static bool check_shape(const char *fn, const tirx_layout *l, int rank, const int64_t *shape) {
  if (rank < 1) {
    tirx__error(TIRX_E_INVALID_ARG, "%s: rank is %d, expected 1 to %d", fn, rank,
                (int)TIRX_LAYOUT_MAX_RANK);
    return false;
  }
  if (rank > TIRX_LAYOUT_MAX_RANK) {
    tirx__error(TIRX_E_LIMIT, "%s: rank is %d, expected 1 to %d", fn, rank,
                (int)TIRX_LAYOUT_MAX_RANK);
    return false;
  }
  if (!shape) {
    tirx__error(TIRX_E_NULL_ARG, "%s: shape is NULL", fn);
    return false;
  }
  for (int k = 0; k < rank; k++)
    if (shape[k] < 1) {
      tirx__error(TIRX_E_INVALID_ARG, "%s: shape[%d] is %lld, expected >= 1", fn, k,
                  (long long)shape[k]);
      return false;
    }
  char buf[512];
  int64_t n = 1;
  for (int k = 0; k < rank; k++)
    if (!tirx__mul_ok(n, shape[k], &n)) {
      tirx__error(TIRX_E_OVERFLOW, "%s: the product of shape %s overflows int64", fn,
                  fmt_list(buf, sizeof buf, rank, shape));
      return false;
    }
  if (n != l->size) {
    tirx__error(TIRX_E_INVALID_ARG, "%s: shape %s has %lld elements, the layout has %lld", fn,
                fmt_list(buf, sizeof buf, rank, shape), (long long)n, (long long)l->size);
    return false;
  }
  return true;
}

/*
 * Groups the flat iters d[nd] to shape[rank] (already validated: the product is the size).
 * Writes at most nd + rank iters into out and rank + 1 entries into begin. Dimensions of
 * extent 1 get no iters; extent-1 iters of d stay with the dimension being filled when they
 * are met, and any left over outside the outermost non-trivial dimension join it.
 */
bool tirx__layout_group_iters(const char *fn, int nd, const tirx_iter *d, int rank,
                              const int64_t *shape, tirx_iter *out, int *n_out, int32_t *begin) {
  tirx_iter rev[WORK_ITERS]; /* inner first */
  int count[TIRX_LAYOUT_MAX_RANK] = {0};
  int n = 0, i = nd - 1, outermost = -1;
  tirx_iter cur = {0, 0, 0};
  bool have = false;
  for (int k = rank - 1; k >= 0; k--) {
    int64_t need = shape[k];
    int start = n;
    if (need > 1) outermost = k;
    while (need > 1) {
      if (!have) {
        if (i < 0) break; /* cannot happen: the products agree */
        cur = d[i--];
        have = true;
      }
      if (need % cur.extent == 0) { /* whole (extent-1 iters included) */
        rev[n++] = cur;
        need /= cur.extent;
        have = false;
      } else if (cur.extent % need == 0) {
        int64_t s;
        if (!tirx__mul_ok(cur.stride, need, &s)) break; /* cannot happen: the split fits */
        rev[n++] = (tirx_iter){need, cur.stride, cur.axis};
        cur.extent /= need;
        cur.stride = s;
        need = 1;
      } else {
        break;
      }
    }
    if (need > 1) {
      char b1[512], b2[512];
      tirx__error(TIRX_E_NOT_REPRESENTABLE, "%s: %s cannot be grouped to %s", fn,
                  fmt_extents(b1, sizeof b1, nd, d), fmt_list(b2, sizeof b2, rank, shape));
      return false;
    }
    count[k] = n - start;
  }
  /* What is left has extent 1 (the products agree). */
  if (have && outermost >= 0) rev[n++] = cur, count[outermost]++;
  for (; i >= 0 && outermost >= 0; i--) rev[n++] = d[i], count[outermost]++;
  for (int j = 0; j < n; j++) out[j] = rev[n - 1 - j];
  begin[0] = 0;
  for (int k = 0; k < rank; k++) begin[k + 1] = begin[k] + count[k];
  *n_out = n;
  return true;
}

tirx_layout *tirx_layout_group(tirx_arena *a, const tirx_layout *l, int rank,
                               const int64_t *shape) {
  static const char fn[] = "tirx_layout_group";
  if (!check_arena(a, fn) || !tirx__layout_check(l, fn, "layout")) return NULL;
  if (!check_shape(fn, l, rank, shape)) return NULL;
  tirx_iter d[WORK_ITERS];
  int32_t begin[TIRX_LAYOUT_MAX_RANK + 1];
  int nd;
  if (!tirx__layout_group_iters(fn, l->nd, l->d, rank, shape, d, &nd, begin)) return NULL;
  if (nd > TIRX_LAYOUT_MAX_ITERS) {
    tirx__error(TIRX_E_LIMIT, "%s: grouping needs %d iters, the limit is %d", fn, nd,
                (int)TIRX_LAYOUT_MAX_ITERS);
    return NULL;
  }
  return tirx__layout_with(a, fn, l, nd, d, l->nr, l->r, rank, begin);
}

tirx_layout *tirx_layout_flatten(tirx_arena *a, const tirx_layout *l) {
  static const char fn[] = "tirx_layout_flatten";
  if (!check_arena(a, fn) || !tirx__layout_check(l, fn, "layout")) return NULL;
  return tirx__layout_with(a, fn, l, l->nd, l->d, l->nr, l->r, 0, NULL);
}

static bool check_grouped(const char *fn, const tirx_layout *l, const char *what) {
  if (l->rank == 0) {
    tirx__error(TIRX_E_INVALID_ARG, "%s: %s is not grouped (it has no logical shape)", fn, what);
    return false;
  }
  return true;
}

tirx_layout *tirx_layout_permute(tirx_arena *a, const tirx_layout *l, int rank,
                                 const int64_t *perm) {
  static const char fn[] = "tirx_layout_permute";
  if (!check_arena(a, fn) || !tirx__layout_check(l, fn, "layout")) return NULL;
  if (!check_grouped(fn, l, "layout")) return NULL;
  if (rank != l->rank) {
    tirx__error(TIRX_E_INVALID_ARG, "%s: rank is %d, the layout's rank is %d", fn, rank, l->rank);
    return NULL;
  }
  if (!perm) {
    tirx__error(TIRX_E_NULL_ARG, "%s: perm is NULL", fn);
    return NULL;
  }
  bool seen[TIRX_LAYOUT_MAX_RANK] = {false};
  for (int k = 0; k < rank; k++) {
    if (perm[k] < 0 || perm[k] >= rank || seen[perm[k]]) {
      char buf[512];
      tirx__error(TIRX_E_INVALID_ARG, "%s: perm %s is not a permutation of 0..%d", fn,
                  fmt_list(buf, sizeof buf, rank, perm), rank - 1);
      return NULL;
    }
    seen[perm[k]] = true;
  }
  tirx_iter d[TIRX_LAYOUT_MAX_ITERS];
  int32_t begin[TIRX_LAYOUT_MAX_RANK + 1];
  int n = 0;
  begin[0] = 0;
  for (int k = 0; k < rank; k++) {
    int src = (int)perm[k];
    for (int i = l->dim_begin[src]; i < l->dim_begin[src + 1]; i++) d[n++] = l->d[i];
    begin[k + 1] = n;
  }
  return tirx__layout_with(a, fn, l, n, d, l->nr, l->r, rank, begin);
}

/* ---- slice ---- */

/* Merges adjacent iters of one dimension that a single iter can express (same axis, outer
 * stride = inner extent * inner stride; stride-0 iters on any axes) and drops extent-1 iters. Returns the new count. */
static int merge_dim(tirx_iter *it, int n) {
  int m = 0;
  for (int i = 0; i < n; i++) {
    if (it[i].extent == 1) continue;
    int64_t s;
    if (m > 0 && (it[i].axis == it[m - 1].axis || (it[i].stride == 0 && it[m - 1].stride == 0)) &&
        tirx__mul_ok(it[i].extent, it[i].stride, &s) && s == it[m - 1].stride) {
      it[m - 1].extent *= it[i].extent; /* fits: at most the size */
      it[m - 1].stride = it[i].stride;
    } else {
      it[m++] = it[i];
    }
  }
  return m;
}

static int64_t gcd64(int64_t a, int64_t b) {
  while (b) {
    int64_t t = a % b;
    a = b;
    b = t;
  }
  return a;
}

enum { WRAP_SPLIT, WRAP_DONE, WRAP_FAIL };

/*
 * A region [b, b+e) of the digits it[0..i] (outermost first; cur is it[i], possibly split
 * already) that wraps around cur: digit + e > E with digit = b % E. Isolates what is a layout:
 *   - f = gcd(E, digit, e) > 1: the region is aligned to f, so cur splits into (E/f, f) and
 *     the inner f is kept whole; the walk continues on (E/f):(s*f) (WRAP_SPLIT).
 *   - e == 2h, h = E - digit: two runs of h, [digit, E) and [0, h) of the next outer digit,
 *     are (2,h):(delta,s) when the difference of their starts lies on one axis (WRAP_DONE).
 *   - E == 2, digit 1, e even, and the next outer iter (E2):(s2) on the same axis (or either
 *     stride 0) holds the e/2 + 1 outer digits the pairs touch without wrapping: element 2u+v is digit 1 - v of
 *     cur and digit c+u+v of the outer iter, so the pairs are (2):(s2 - s) (WRAP_DONE; the
 *     walk keeps (e/2):(s2) at the next iter).
 * Anything else has no layout (WRAP_FAIL): its first pieces differ in length or position.
 */
static int region_wrap(const tirx_iter *it, int i, tirx_iter *cur, int64_t *b, int64_t *e,
                       tirx_iter *kept, int *nk) {
  int64_t E = cur->extent, digit = *b % E;
  int64_t f = gcd64(gcd64(E, digit), *e);
  if (f > 1) {
    kept[(*nk)++] = (tirx_iter){f, cur->stride, cur->axis};
    *b = *b / E * (E / f) + digit / f;
    *e /= f;
    cur->extent = E / f;
    cur->stride *= f; /* fits: the iter's reach fits */
    return WRAP_SPLIT;
  }
  if (*e == 2 * (E - digit)) {
    /* Two runs of h = E - digit: [digit, E) and [0, h) of the next outer digit. The difference
     * of the coordinates of b + h and b: a carry out of cur, then through the outer digits. */
    int64_t h = E - digit, delta[TIRX_AXIS_MAX] = {0}, x = *b, add = h;
    for (int j = i; j >= 0 && add; j--) {
      const tirx_iter *t = j == i ? cur : &it[j];
      int64_t dg = x % t->extent, step;
      x /= t->extent;
      bool carry = dg + add == t->extent;
      if (!tirx__mul_ok(carry ? -dg : add, t->stride, &step) ||
          !tirx__add_ok(delta[t->axis], step, &delta[t->axis]))
        return WRAP_FAIL;
      add = carry ? 1 : 0;
    }
    int axis = -1;
    for (int ax = 0; ax < TIRX_AXIS_MAX; ax++)
      if (delta[ax] != 0) {
        if (axis >= 0) return WRAP_FAIL;
        axis = ax;
      }
    if (h > 1) kept[(*nk)++] = (tirx_iter){h, cur->stride, cur->axis};
    kept[(*nk)++] = (tirx_iter){2, axis < 0 ? 0 : delta[axis], axis < 0 ? TIRX_AXIS_M : axis};
    *e = 1;
    return WRAP_DONE;
  }
  if (E == 2 && digit == 1 && *e % 2 == 0 && i > 0) {
    const tirx_iter *o = &it[i - 1];
    int64_t c = *b / 2, s;
    if (c % o->extent + *e / 2 + 1 > o->extent) return WRAP_FAIL;
    tirx_iter pair = {2, 0, o->axis};
    if (cur->stride == 0) pair.stride = o->stride;
    else if (o->stride == 0 && cur->stride != INT64_MIN) pair = (tirx_iter){2, -cur->stride, cur->axis};
    else if (o->axis == cur->axis && tirx__add_ok(o->stride, -cur->stride, &s)) pair.stride = s;
    else return WRAP_FAIL;
    kept[(*nk)++] = pair;
    *e /= 2;
    return WRAP_DONE;
  }
  return WRAP_FAIL;
}

/*
 * A run [b, b+e) of the digits it[0..i] (cur at i) that the structured cases of region_wrap
 * refuse, factored in closed form, whatever its length. Digit m (0 is cur, m is it[i-m]) has
 * extent E_m and place value P_m = E_0 ... E_{m-1}. Between the run's points y-1 and y the
 * coordinates step by D_t, t = type(b + y), the number of digits that roll over:
 *     D_0 = s_0,   D_t = s_t - sum_{m<t} (E_m - 1) s_m      (on each iter's own axis).
 * A layout with factors f_1, f_2, ... (innermost first) steps by its first stride except at
 * the multiples of f_1. So the run is a layout exactly when, level by level (F the product of
 * the factors so far, n = e / F, the run's points p(kF), k < n, whose steps are a constant C
 * plus D_{type(b + kF)}):
 *   - the first step d = C + D_{type(b + F)} lies on at most one axis, and
 *   - G = gcd(n, every k in [1, n) whose step differs from the first) is at least 2;
 * then (G):(d) is the next iter (every valid factor divides G, and taking G is what merging
 * them would give), C grows by (G - 1) d, F by G. The k with type(b + kF) >= t are a residue
 * class (a linear congruence mod P_t), those of type exactly t that class less the class of
 * t + 1, so their gcd with n comes from their first four members. At most 62 levels, each
 * O(i): no point is enumerated. Returns 1 with the iters appended to kept (inner first), 0 when
 * the run is no layout or a stride would overflow int64.
 */
enum { RUN_SLOTS = TIRX_LAYOUT_MAX_ITERS };

typedef struct run_vec {
  int64_t v[RUN_SLOTS];
} run_vec;

static uint64_t mulmod_u64(uint64_t a, uint64_t b, uint64_t m) {
  uint64_t r = 0;
  a %= m;
  while (b) {
    if (b & 1) r = (r + a) % m; /* r, a < m <= 2^63: the sums fit in uint64 */
    a = (a + a) % m;
    b >>= 1;
  }
  return r;
}

/* The inverse of a modulo m (gcd(a, m) == 1, m >= 1). */
static uint64_t inverse_mod(uint64_t a, uint64_t m) {
  if (m == 1) return 0;
  /* Extended Euclid on (a, m), coefficients reduced modulo m. */
  uint64_t r0 = m, r1 = a % m, t0 = 0, t1 = 1;
  while (r1) {
    uint64_t q = r0 / r1, r2 = r0 - q * r1;
    uint64_t t2 = (t0 + m - mulmod_u64(q % m, t1, m)) % m;
    r0 = r1, r1 = r2, t0 = t1, t1 = t2;
  }
  return t0;
}

/* The residue class {k : k F == c (mod P)} as k == *k0 (mod *mod); false when empty. */
static bool solve_class(int64_t F, int64_t c, int64_t P, int64_t *k0, int64_t *mod) {
  int64_t g = gcd64(F % P, P); /* gcd(0, P) = P */
  if (c % g) return false;
  int64_t M = P / g;
  *mod = M;
  *k0 = (int64_t)mulmod_u64((uint64_t)(c / g), inverse_mod((uint64_t)(F / g % M), (uint64_t)M),
                            (uint64_t)M);
  return true;
}

static int run_closed(const tirx_iter *it, int i, const tirx_iter *cur, int64_t b, int64_t e,
                      tirx_iter *kept, int *nk) {
  int depth = i + 1, na = 0, slot[TIRX_LAYOUT_MAX_ITERS + 1];
  int64_t E[TIRX_LAYOUT_MAX_ITERS + 1], S[TIRX_LAYOUT_MAX_ITERS + 1], P[TIRX_LAYOUT_MAX_ITERS + 2];
  tirx_axis ax[RUN_SLOTS];
  for (int m = 0; m < depth; m++) {
    const tirx_iter *t = m == 0 ? cur : &it[i - m];
    E[m] = t->extent;
    S[m] = t->stride;
    int q = 0;
    while (q < na && ax[q] != t->axis) q++;
    if (q == na) ax[na++] = t->axis;
    slot[m] = q;
  }
  P[0] = 1;
  for (int m = 0; m < depth; m++) P[m + 1] = P[m] * E[m]; /* at most the layout's size */

  /* The steps D_t, t < depth; bad[t] when one overflows. */
  static _Thread_local run_vec D[TIRX_LAYOUT_MAX_ITERS + 1];
  bool bad[TIRX_LAYOUT_MAX_ITERS + 1] = {false};
  run_vec roll; /* sum_{m<t} (E_m - 1) s_m */
  memset(&roll, 0, sizeof roll);
  bool roll_bad = false;
  for (int t = 0; t < depth; t++) {
    memset(&D[t], 0, sizeof D[t]);
    bad[t] = roll_bad;
    for (int q = 0; q < na && !bad[t]; q++)
      if (roll.v[q] == INT64_MIN) bad[t] = true;
      else D[t].v[q] = -roll.v[q];
    if (!bad[t] && !tirx__add_ok(D[t].v[slot[t]], S[t], &D[t].v[slot[t]])) bad[t] = true;
    int64_t r;
    if (!tirx__mul_ok(E[t] - 1, S[t], &r) || !tirx__add_ok(roll.v[slot[t]], r, &roll.v[slot[t]]))
      roll_bad = true;
  }

  run_vec C;
  memset(&C, 0, sizeof C);
  int64_t F = 1, n = e;
  while (n > 1) {
    /* type(b + F): the digits that roll over at the level's first step. */
    int64_t x = b + F;
    int t1 = 0;
    while (t1 + 1 < depth && x % P[t1 + 1] == 0) t1++;
    if (bad[t1]) return 0;
    run_vec d;
    int daxis = -1;
    for (int q = 0; q < na; q++) {
      if (!tirx__add_ok(C.v[q], D[t1].v[q], &d.v[q])) return 0;
      if (d.v[q] != 0) {
        if (daxis >= 0) return 0; /* two axes: no iter */
        daxis = q;
      }
    }
    int64_t G = n;
    for (int t = 0; t < depth && G > 1; t++) {
      if (t == t1 || (!bad[t] && memcmp(&D[t], &D[t1], sizeof D[t]) == 0)) continue;
      /* The first members of {k in [1, n): type(b + kF) == t}. */
      int64_t k0, M, c = (P[t] - b % P[t]) % P[t];
      if (!solve_class(F, c, P[t], &k0, &M)) continue;
      int64_t k = k0 == 0 ? M : k0;
      for (int found = 0, steps = 0; k < n && found < 4 && steps < 12; steps++) {
        int64_t y = b + k * F; /* inside the run: fits */
        if (t + 1 >= depth || y % P[t + 1] != 0) {
          if (bad[t]) return 0; /* a step that overflows occurs */
          G = gcd64(G, k);
          found++;
        }
        if (!tirx__add_ok(k, M, &k)) break;
      }
    }
    if (G < 2) return 0;
    if (*nk >= 2 * WORK_ITERS) return 0;
    kept[(*nk)++] = (tirx_iter){G, daxis < 0 ? 0 : d.v[daxis], daxis < 0 ? TIRX_AXIS_M : ax[daxis]};
    for (int q = 0; q < na; q++) {
      int64_t add;
      if (!tirx__mul_ok(G - 1, d.v[q], &add) || !tirx__add_ok(C.v[q], add, &C.v[q])) return 0;
    }
    F *= G; /* divides e */
    n /= G;
  }
  return 1;
}

tirx_layout *tirx_layout_slice(tirx_arena *a, const tirx_layout *l, int rank,
                               const int64_t *shape, const int64_t *begin,
                               const int64_t *extent) {
  static const char fn[] = "tirx_layout_slice";
  if (!check_arena(a, fn) || !tirx__layout_check(l, fn, "layout")) return NULL;
  if (!check_shape(fn, l, rank, shape)) return NULL;
  if (!begin || !extent) {
    tirx__error(TIRX_E_NULL_ARG, "%s: %s is NULL", fn, !begin ? "begin" : "extent");
    return NULL;
  }
  for (int k = 0; k < rank; k++) {
    if (begin[k] < 0) {
      tirx__error(TIRX_E_INVALID_ARG, "%s: begin[%d] is %lld, expected >= 0", fn, k,
                  (long long)begin[k]);
      return NULL;
    }
    if (extent[k] < 1) {
      tirx__error(TIRX_E_INVALID_ARG, "%s: extent[%d] is %lld, expected >= 1", fn, k,
                  (long long)extent[k]);
      return NULL;
    }
  }
  for (int k = 0; k < rank; k++)
    if (begin[k] >= shape[k] || extent[k] > shape[k] - begin[k]) {
      /* Both are non-negative, so the end fits in uint64. */
      tirx__error(TIRX_E_OUT_OF_RANGE, "%s: region dim %d [%lld, %llu) exceeds extent %lld", fn, k,
                  (long long)begin[k], (unsigned long long)begin[k] + (unsigned long long)extent[k],
                  (long long)shape[k]);
      return NULL;
    }

  tirx_iter g[WORK_ITERS];
  int32_t gb[TIRX_LAYOUT_MAX_RANK + 1];
  int ng;
  if (!tirx__layout_group_iters(fn, l->nd, l->d, rank, shape, g, &ng, gb)) return NULL;

  /* The new offset is l at the region's origin, before the swizzle, on every axis. */
  int64_t off[TIRX_AXIS_MAX] = {0};
  for (int i = 0; i < l->no; i++) off[l->o[i].axis] = l->o[i].value;

  tirx_iter d[4 * WORK_ITERS]; /* a wrap adds at most 11 iters to a dimension */
  int32_t db[TIRX_LAYOUT_MAX_RANK + 1];
  int nd = 0;
  db[0] = 0;
  for (int k = 0; k < rank; k++) {
    tirx_iter it[WORK_ITERS];
    int n = gb[k + 1] - gb[k];
    memcpy(it, g + gb[k], (size_t)n * sizeof *it);
    n = merge_dim(it, n);
    /* Walk from the innermost iter: whole iters are kept while the region is aligned to them;
     * the first one it is not aligned to keeps a part, or, when the region wraps it, is split
     * (region_wrap); the rest are fixed at their digit. */
    tirx_iter kept[2 * WORK_ITERS]; /* inner first */
    int nk = 0;
    int64_t b = begin[k], e = extent[k];
    for (int i = n - 1; i >= 0; i--) {
      tirx_iter cur = it[i];
      while (e > 1) {
        int64_t E = cur.extent, digit = b % E;
        if (digit == 0 && e % E == 0) {
          kept[nk++] = cur;
          e /= E;
          break;
        }
        if (digit + e <= E) {
          kept[nk++] = (tirx_iter){e, cur.stride, cur.axis};
          e = 1;
          break;
        }
        int w = region_wrap(it, i, &cur, &b, &e, kept, &nk);
        if (w == WRAP_SPLIT) continue;
        if (w == WRAP_DONE) break;
        if (run_closed(it, i, &cur, b, e, kept, &nk)) {
          e = 1;
          break;
        }
        char buf[128];
        tirx__error(TIRX_E_NOT_REPRESENTABLE,
                    "%s: region dim %d [%lld, %lld) wraps around iter %s and is not a layout",
                    fn, k, (long long)begin[k], (long long)(begin[k] + extent[k]),
                    fmt_iter(buf, sizeof buf, &it[i]));
        return NULL;
      }
      off[cur.axis] += (b % cur.extent) * cur.stride; /* within l's reach: cannot overflow */
      b /= cur.extent;
    }
    for (int j = nk - 1; j >= 0; j--) d[nd++] = kept[j];
    db[k + 1] = nd;
  }

  tirx_axis_offset o[TIRX_AXIS_MAX];
  int no = 0;
  for (int ax = 0; ax < TIRX_AXIS_MAX; ax++)
    if (off[ax] != 0) o[no++] = (tirx_axis_offset){ax, off[ax]};
  return tirx__layout_make(a, fn, nd, d, l->nr, l->r, no, o, rank, db, l->swizzle_bytes,
                           l->swizzle_elem);
}

/* ---- tile ---- */

static tirx_layout *tile(tirx_arena *a, const char *fn, const tirx_layout *outer,
                         const tirx_layout *inner) {
  int rank = outer->rank;
  tirx_iter d[2 * TIRX_LAYOUT_MAX_ITERS], r[2 * TIRX_LAYOUT_MAX_ITERS];
  int32_t begin[TIRX_LAYOUT_MAX_RANK + 1];
  int nd = 0;
  begin[0] = 0;
  for (int k = 0; k < rank; k++) {
    for (int i = outer->dim_begin[k]; i < outer->dim_begin[k + 1]; i++) d[nd++] = outer->d[i];
    for (int i = inner->dim_begin[k]; i < inner->dim_begin[k + 1]; i++) d[nd++] = inner->d[i];
    begin[k + 1] = nd;
  }
  int nr = 0;
  for (int i = 0; i < outer->nr; i++) r[nr++] = outer->r[i];
  for (int i = 0; i < inner->nr; i++) r[nr++] = inner->r[i];
  int64_t off[TIRX_AXIS_MAX] = {0};
  for (int i = 0; i < outer->no; i++) off[outer->o[i].axis] = outer->o[i].value;
  for (int i = 0; i < inner->no; i++)
    if (!tirx__add_ok(off[inner->o[i].axis], inner->o[i].value, &off[inner->o[i].axis])) {
      tirx__error(TIRX_E_OVERFLOW, "%s: a coordinate of the layout overflows int64", fn);
      return NULL;
    }
  tirx_axis_offset o[TIRX_AXIS_MAX];
  int no = 0;
  for (int ax = 0; ax < TIRX_AXIS_MAX; ax++)
    if (off[ax] != 0) o[no++] = (tirx_axis_offset){ax, off[ax]};
  const tirx_layout *sw = outer->swizzle_bytes ? outer : inner;
  return tirx__layout_make(a, fn, nd, d, nr, r, no, o, rank, begin, sw->swizzle_bytes,
                           sw->swizzle_elem);
}

tirx_layout *tirx_layout_tile(tirx_arena *a, const tirx_layout *outer, const tirx_layout *inner) {
  static const char fn[] = "tirx_layout_tile";
  if (!check_arena(a, fn) || !tirx__layout_check(outer, fn, "outer") ||
      !tirx__layout_check(inner, fn, "inner"))
    return NULL;
  if (!check_grouped(fn, outer, "outer") || !check_grouped(fn, inner, "inner")) return NULL;
  if (outer->rank != inner->rank) {
    tirx__error(TIRX_E_INVALID_ARG, "%s: outer has rank %d, inner has rank %d", fn, outer->rank,
                inner->rank);
    return NULL;
  }
  if (outer->swizzle_bytes && inner->swizzle_bytes) {
    tirx__error(TIRX_E_INVALID_ARG, "%s: outer and inner are both swizzled", fn);
    return NULL;
  }
  return tile(a, fn, outer, inner);
}

tirx_layout *tirx_layout_tile_dense(tirx_arena *a, const tirx_layout *inner, int rank,
                                    const int64_t *reps) {
  static const char fn[] = "tirx_layout_tile_dense";
  if (!check_arena(a, fn) || !tirx__layout_check(inner, fn, "inner")) return NULL;
  if (!check_grouped(fn, inner, "inner")) return NULL;
  if (rank != inner->rank) {
    tirx__error(TIRX_E_INVALID_ARG, "%s: rank is %d, inner has rank %d", fn, rank, inner->rank);
    return NULL;
  }
  if (!reps) {
    tirx__error(TIRX_E_NULL_ARG, "%s: reps is NULL", fn);
    return NULL;
  }
  for (int k = 0; k < rank; k++)
    if (reps[k] < 1) {
      tirx__error(TIRX_E_INVALID_ARG, "%s: reps[%d] is %lld, expected >= 1", fn, k,
                  (long long)reps[k]);
      return NULL;
    }
  /* One tile's footprint on m; a swizzled tile is rounded up to whole swizzle atoms
   * (8 * swizzle_bytes bytes) so that every copy sees the same swizzle pattern. */
  int64_t step;
  tirx_layout_span(inner, TIRX_AXIS_M, NULL, &step);
  if (inner->swizzle_bytes) {
    int64_t atom = 8 * (int64_t)inner->swizzle_bytes / inner->swizzle_elem;
    if (step > INT64_MAX - atom) {
      tirx__error(TIRX_E_OVERFLOW, "%s: the tile grid's strides overflow int64", fn);
      return NULL;
    }
    step = (step + atom - 1) / atom * atom;
  }
  /* The outer layout: a row-major grid of reps with strides in units of step; dimensions
   * with one repetition get no iter. */
  tirx_iter d[TIRX_LAYOUT_MAX_RANK];
  int32_t begin[TIRX_LAYOUT_MAX_RANK + 1];
  int64_t stride[TIRX_LAYOUT_MAX_RANK];
  for (int k = rank - 1; k >= 0; k--) {
    stride[k] = step;
    if (!tirx__mul_ok(step, reps[k], &step)) {
      tirx__error(TIRX_E_OVERFLOW, "%s: the tile grid's strides overflow int64", fn);
      return NULL;
    }
  }
  int nd = 0;
  begin[0] = 0;
  for (int k = 0; k < rank; k++) {
    if (reps[k] > 1) d[nd++] = (tirx_iter){reps[k], stride[k], TIRX_AXIS_M};
    begin[k + 1] = nd;
  }
  tirx_layout *outer = tirx__layout_make(a, fn, nd, d, 0, NULL, 0, NULL, rank, begin, 0, 0);
  if (!outer) return NULL;
  return tile(a, fn, outer, inner);
}

/* ---- compose ---- */

enum { SPREAD_OK, SPREAD_DIVIDE, SPREAD_OVERLAP, SPREAD_OVERFLOW };

/*
 * The iters of l o (e):(s) for one iter of f, s > 0, e > 1, over l's digits li[nl] (inner
 * last): s is divided out of the digits from the innermost, then e is spread over the digits
 * from there outwards, into part[] inner first. used[p] accumulates the largest value f's
 * iters reach in digit p; the sum must stay below the digit's extent, so that adding the
 * iters of f never carries from one digit of l into the next. *bad is the digit at fault.
 * With extend, digit 0 has no bound (CuTe's extension of the last mode): it takes whatever
 * reaches it.
 */
static int spread(const tirx_iter *li, int nl, bool extend, int64_t *used, int64_t e, int64_t s,
                  tirx_iter *part, int *np, int *bad) {
  int p = nl - 1, floor = extend ? 1 : 0;
  int64_t t = s;
  while (p >= floor && t >= li[p].extent && t % li[p].extent == 0) t /= li[p--].extent;
  *np = 0;
  while (e > 1) {
    if (p < 0) return SPREAD_DIVIDE; /* cannot happen: f's values are below size(l) */
    int64_t E = li[p].extent, top;
    if (extend && p == 0) {
      int64_t st;
      if (!tirx__mul_ok(t, li[0].stride, &st)) return SPREAD_OVERFLOW;
      part[(*np)++] = (tirx_iter){e, st, li[0].axis};
      return SPREAD_OK;
    }
    if (t >= E) return SPREAD_DIVIDE;
    if (tirx__mul_ok(t, e - 1, &top) && top <= E - 1) { /* the rest fits inside this digit */
      part[(*np)++] = (tirx_iter){e, t * li[p].stride, li[p].axis};
      e = 1;
    } else if (E % t == 0 && e % (E / t) == 0) { /* takes the whole digit above t */
      top = E - t;
      part[(*np)++] = (tirx_iter){E / t, t * li[p].stride, li[p].axis};
      e /= E / t;
    } else {
      return SPREAD_DIVIDE;
    }
    used[p] += top;
    if (used[p] > E - 1) {
      *bad = p;
      return SPREAD_OVERLAP;
    }
    p--;
    t = 1;
  }
  return SPREAD_OK;
}

static tirx_layout *compose(tirx_arena *a, const char *fn, const tirx_layout *l,
                            const tirx_layout *f, bool extend) {
  if (!check_arena(a, fn) || !tirx__layout_check(l, fn, "l") || !tirx__layout_check(f, fn, "f"))
    return NULL;
  if (f->nr > 0 || f->no > 0 || f->swizzle_bytes) {
    tirx__error(TIRX_E_INVALID_ARG, "%s: f is not an index map (it has %s)", fn,
                f->nr ? "replicas" : f->no ? "an offset" : "a swizzle");
    return NULL;
  }
  int64_t lo = 0, hi = 0;
  for (int i = 0; i < f->nd; i++) {
    const tirx_iter *it = &f->d[i];
    if (it->extent > 1 && it->stride != 0 && it->axis != TIRX_AXIS_M) {
      tirx__error(TIRX_E_INVALID_ARG, "%s: f is not an index map (iter %d is on %s)", fn, i,
                  tirx_axis_name(it->axis));
      return NULL;
    }
    int64_t reach = it->stride * (it->extent - 1); /* fits: f's coordinates fit */
    if (reach < 0) lo += reach;
    else hi += reach;
  }
  if (lo < 0 || (!extend && hi >= l->size)) {
    if (extend)
      tirx__error(TIRX_E_OUT_OF_RANGE, "%s: f's values span [%lld, %lld], expected >= 0", fn,
                  (long long)lo, (long long)hi);
    else
      tirx__error(TIRX_E_OUT_OF_RANGE, "%s: f's values span [%lld, %lld], outside [0, %lld)",
                  fn, (long long)lo, (long long)hi, (long long)l->size);
    return NULL;
  }

  /* l's digits: its flat iters with extent-1 iters dropped and mergeable neighbours merged.
   * Extending, digit 0 has no bound: the outermost iter, or what it merged into (extending
   * either is the same), or, when it has extent 1, the iter itself put back in front (1:0
   * for a scalar). */
  tirx_iter li[TIRX_LAYOUT_MAX_ITERS + 1];
  if (l->nd) memcpy(li, l->d, (size_t)l->nd * sizeof *li);
  int nl = merge_dim(li, l->nd);
  if (extend && (l->nd == 0 || l->d[0].extent == 1)) {
    memmove(li + 1, li, (size_t)nl * sizeof *li);
    li[0] = l->nd ? l->d[0] : (tirx_iter){1, 0, TIRX_AXIS_M};
    nl++;
  }
  int64_t used[TIRX_LAYOUT_MAX_ITERS + 1] = {0};

  tirx_iter d[TIRX_LAYOUT_MAX_ITERS];
  int32_t begin[TIRX_LAYOUT_MAX_RANK + 1];
  int nd = 0, rank = f->rank;
  begin[0] = 0;
  for (int k = 0; k < (rank ? rank : 1); k++) {
    int i0 = rank ? f->dim_begin[k] : 0, i1 = rank ? f->dim_begin[k + 1] : f->nd;
    for (int i = i0; i < i1; i++) {
      int64_t e = f->d[i].extent, s = f->d[i].stride;
      tirx_iter part[TIRX_LAYOUT_MAX_ITERS];
      int np = 0, bad = 0, st = SPREAD_OK;
      if (e == 1) continue;
      if (s == 0)
        part[np++] = (tirx_iter){e, 0, TIRX_AXIS_M};
      else
        st = spread(li, nl, extend, used, e, s, part, &np, &bad);
      if (st == SPREAD_DIVIDE) {
        char buf[512];
        tirx__error(TIRX_E_NOT_REPRESENTABLE,
                    "%s: f's iter %d (%lld):(%lld@m) does not divide l's iters %s", fn, i,
                    (long long)e, (long long)s, fmt_extents(buf, sizeof buf, nl, li));
        return NULL;
      }
      if (st == SPREAD_OVERFLOW) {
        tirx__error(TIRX_E_OVERFLOW,
                    "%s: f's iter %d (%lld):(%lld@m) takes l's outermost stride past int64", fn,
                    i, (long long)e, (long long)s);
        return NULL;
      }
      if (st == SPREAD_OVERLAP) {
        char buf[128];
        tirx__error(TIRX_E_NOT_REPRESENTABLE,
                    "%s: f's iters overlap in l's iter %s (their sum carries)", fn,
                    fmt_iter(buf, sizeof buf, &li[bad]));
        return NULL;
      }
      if (nd + np > TIRX_LAYOUT_MAX_ITERS) {
        tirx__error(TIRX_E_LIMIT, "%s: the result needs more than %d iters", fn,
                    (int)TIRX_LAYOUT_MAX_ITERS);
        return NULL;
      }
      for (int j = np - 1; j >= 0; j--) d[nd++] = part[j];
    }
    if (rank) begin[k + 1] = nd;
  }
  return tirx__layout_with(a, fn, l, nd, d, l->nr, l->r, rank, rank ? begin : NULL);
}

tirx_layout *tirx_layout_compose(tirx_arena *a, const tirx_layout *l, const tirx_layout *f) {
  return compose(a, "tirx_layout_compose", l, f, false);
}

tirx_layout *tirx_layout_compose_extended(tirx_arena *a, const tirx_layout *l,
                                          const tirx_layout *f) {
  return compose(a, "tirx_layout_compose_extended", l, f, true);
}
