/*
 * Queries dispatch asks of a layout: the storage view, contiguity and the vector width.
 *
 * The contiguity questions are answered on the flat canonical form. Its innermost iter is the
 * only one that moves within a run of consecutive logical elements; when that iter is
 * (E):(1@m), a run is contiguous exactly when it stays inside the iter (the canonical form
 * guarantees that crossing into the next iter is never a unit step on m). Where a run starts
 * on m depends on the "bases": the offset on m plus every multiple of the other m strides of D
 * and of R. For a swizzled layout, runs are judged before the swizzle and must also survive it,
 * which depends on the bases modulo the swizzle's period of 1024 bytes.
 */
#include <stdlib.h>
#include <string.h>

#include "layout_internal.h"

tirx_layout *tirx_layout_storage_view(tirx_arena *a, const tirx_layout *l, uint64_t keep_mask) {
  static const char fn[] = "tirx_layout_storage_view";
  if (!a) {
    tirx__error(TIRX_E_NULL_ARG, "%s: arena is NULL", fn);
    return NULL;
  }
  if (!tirx__layout_check(l, fn, "layout")) return NULL;
  if (keep_mask >> TIRX_AXIS_MAX) {
    tirx__error(TIRX_E_INVALID_ARG, "%s: keep_mask 0x%llx has bits above axis %d", fn,
                (unsigned long long)keep_mask, (int)TIRX_AXIS_MAX - 1);
    return NULL;
  }
  if (keep_mask == 0)
    keep_mask = (UINT64_C(1) << TIRX_AXIS_M) | (UINT64_C(1) << TIRX_AXIS_REG) |
                (UINT64_C(1) << TIRX_AXIS_TLANE) | (UINT64_C(1) << TIRX_AXIS_TCOL);
  tirx_iter d[TIRX_LAYOUT_MAX_ITERS], r[TIRX_LAYOUT_MAX_ITERS];
  tirx_axis_offset o[TIRX_AXIS_MAX];
  int nr = 0, no = 0;
  for (int i = 0; i < l->nd; i++) {
    d[i] = l->d[i];
    if (!(keep_mask >> d[i].axis & 1)) d[i] = (tirx_iter){d[i].extent, 0, TIRX_AXIS_M};
  }
  for (int i = 0; i < l->nr; i++)
    if (keep_mask >> l->r[i].axis & 1) r[nr++] = l->r[i];
  for (int i = 0; i < l->no; i++)
    if (keep_mask >> l->o[i].axis & 1) o[no++] = l->o[i];
  return tirx__layout_make(a, fn, l->nd, d, nr, r, no, o, l->rank, l->dim_begin,
                           l->swizzle_bytes, l->swizzle_elem);
}

/* ---- run bases ------------------------------------------------------------------------------ */

/* The innermost canonical iter's extent when it is (E):(1@m); 0 otherwise, 1 when D is empty. */
static int64_t unit_run(const tirx__canon *c) {
  if (c->nd == 0) return 1;
  const tirx_iter *in = &c->d[c->nd - 1];
  return in->axis == TIRX_AXIS_M && in->stride == 1 ? in->extent : 0;
}

static uint64_t gcd_u64(uint64_t x, uint64_t y) {
  while (y) {
    uint64_t t = x % y;
    x = y;
    y = t;
  }
  return x;
}

static uint64_t abs_u64(int64_t v) { return v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v; }

/* The gcd of every run base on m (0 when all of them are 0). */
static uint64_t bases_gcd(const tirx__canon *c) {
  uint64_t g = abs_u64(c->offset[TIRX_AXIS_M]);
  for (int i = 0; i + 1 < c->nd; i++)
    if (c->d[i].axis == TIRX_AXIS_M) g = gcd_u64(g, abs_u64(c->d[i].stride));
  for (int i = 0; i < c->nr; i++)
    if (c->r[i].axis == TIRX_AXIS_M) g = gcd_u64(g, abs_u64(c->r[i].stride));
  return g;
}

enum { MAX_PERIOD = 1024 };

/*
 * Adds the multiples j*stride, j < extent, to the residue set `set` modulo period, by doubling:
 * while set is S + {0, .., have-1}*stride, its union with itself moved by add*stride
 * (add <= have) is S + {0, .., have+add-1}*stride.
 */
static void residues_add(bool *set, int64_t period, int64_t extent, int64_t stride) {
  int64_t step = tirx__floormod(stride, period), n = extent < period ? extent : period;
  for (int64_t have = 1; have < n;) {
    int64_t add = have < n - have ? have : n - have, shift = add * step % period;
    bool next[MAX_PERIOD];
    for (int64_t x = 0; x < period; x++)
      next[x] = set[x] || set[tirx__floormod(x - shift, period)];
    memcpy(set, next, (size_t)period * sizeof *set);
    have += add;
  }
}

/* The residues modulo period (<= MAX_PERIOD) of every run base on m. */
static void bases_residues(const tirx__canon *c, int64_t period, bool *set) {
  memset(set, 0, (size_t)period * sizeof *set);
  set[tirx__floormod(c->offset[TIRX_AXIS_M], period)] = true;
  for (int i = 0; i + 1 < c->nd; i++)
    if (c->d[i].axis == TIRX_AXIS_M) residues_add(set, period, c->d[i].extent, c->d[i].stride);
  for (int i = 0; i < c->nr; i++)
    if (c->r[i].axis == TIRX_AXIS_M) residues_add(set, period, c->r[i].extent, c->r[i].stride);
}

/* ---- contiguity ----------------------------------------------------------------------------- */

int64_t tirx_layout_contiguous(const tirx_layout *l) {
  if (!tirx__layout_check(l, "tirx_layout_contiguous", "layout")) return 0;
  tirx__canon c;
  tirx__layout_canon(l, true, &c);
  int64_t run = unit_run(&c);
  if (run <= 1 || !l->swizzle_bytes) return run;
  /*
   * Swizzled: the largest r dividing E such that every aligned run of r elements of the
   * innermost iter lies inside one 16-byte chunk, where the swizzle keeps it contiguous.
   */
  int64_t chunk = 16 / l->swizzle_elem;
  bool base[MAX_PERIOD];
  bases_residues(&c, chunk, base);
  for (int64_t r = run < chunk ? run : chunk; r > 1; r--) {
    if (run % r != 0) continue;
    bool ok = true;
    int64_t runs = run / r < chunk ? run / r : chunk;
    for (int64_t b = 0; b < chunk && ok; b++)
      for (int64_t k = 0; base[b] && k < runs && ok; k++) ok = (b + k * r) % chunk + r <= chunk;
    if (ok) return r;
  }
  return 1;
}

/*
 * Whether aligned runs of v elements (already contiguous, aligned to v on m before the
 * swizzle) stay contiguous after it. Within one 128-byte row the swizzle XORs a constant t
 * into byte bits [4, 7); a run of 2^p bytes survives when t has no bit below p. A run longer
 * than a row always meets a row with t != 0 and is permuted.
 */
static bool swizzle_keeps(const tirx_layout *l, const tirx__canon *c, int64_t run, int64_t v) {
  if (!l->swizzle_bytes) return true;
  int64_t elem = l->swizzle_elem, bytes = v * elem;
  if (bytes <= 16) return true;
  if (bytes > 128) return false;
  int64_t mask = l->swizzle_bytes / 16 - 1, low = (bytes / 16 - 1) & mask;
  int64_t period = MAX_PERIOD / elem;
  bool start[MAX_PERIOD];
  bases_residues(c, period, start);
  residues_add(start, period, run / v, v); /* the runs inside the innermost iter */
  for (int64_t m = 0; m < period; m++)
    if (start[m] && ((m * elem >> 7) & low)) return false;
  return true;
}

int64_t tirx_layout_vector_width(const tirx_layout *l, int elem_bytes, int max_bytes) {
  static const char fn[] = "tirx_layout_vector_width";
  if (!tirx__layout_check(l, fn, "layout")) return 0;
  if (elem_bytes < 1) {
    tirx__error(TIRX_E_INVALID_ARG, "%s: elem_bytes is %d, expected >= 1", fn, elem_bytes);
    return 0;
  }
  if (max_bytes < elem_bytes) {
    tirx__error(TIRX_E_INVALID_ARG, "%s: max_bytes is %d, expected >= elem_bytes (%d)", fn,
                max_bytes, elem_bytes);
    return 0;
  }
  tirx__canon c;
  tirx__layout_canon(l, true, &c);
  int64_t run = unit_run(&c), limit = max_bytes / elem_bytes, v = 1;
  if (run <= 1) return 1;
  uint64_t g = bases_gcd(&c);
  while (v * 2 <= limit && run % (v * 2) == 0 && g % (uint64_t)(v * 2) == 0 &&
         swizzle_keeps(l, &c, run, v * 2))
    v *= 2;
  return v;
}
