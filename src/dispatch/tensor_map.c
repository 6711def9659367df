/* TMA tensor-map derivation from the shared layout (tma.h has the method). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../layout/layout_internal.h"
#include "tensor_map.h"

typedef struct siter {
  int dim;
  int64_t extent, stride, f; /* f: the logical step of one unit of this iter along dim */
  bool nobox;                /* an extent > 256 with no usable divisor: always a loop */
  bool box;
} siter;

static tirx_status no(char *why, size_t cap, const char *fmt, ...) TIRX_PRINTF(3, 4);
static tirx_status no(char *why, size_t cap, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, cap, fmt, ap);
  va_end(ap);
  return TIRX_E_NOT_REPRESENTABLE;
}

static int by_stride(const void *x, const void *y) {
  const siter *a = x, *b = y;
  if (a->stride != b->stride) return a->stride < b->stride ? -1 : 1;
  return a->f < b->f ? -1 : a->f > b->f;
}

/* Splits it into (extent/inner) outer and inner parts: the inner keeps stride and f. */
static void split_iter(siter *its, int *n, int i, int64_t inner) {
  siter outer = its[i];
  outer.extent = its[i].extent / inner;
  outer.stride = its[i].stride * inner;
  outer.f = its[i].f * inner;
  its[i].extent = inner;
  its[(*n)++] = outer;
}

/* The map dimensions of the current box (its[].box) into out; false with why when the form
 * cannot express it. */
static tirx_status make_map(int rank, const tirx__tma_global *g, siter *its, int n,
                            tirx__tma_plan *out, int *needed, char *why, size_t cap) {
  tirx__tmap_desc *m = &out->map;
  int nmap = 0;
  bool in_box[TIRX_BUILDER_MAX_RANK] = {false}, split_dim[TIRX_BUILDER_MAX_RANK] = {false};
  int64_t top_f[TIRX_BUILDER_MAX_RANK];
  for (int k = 0; k < rank; k++) top_f[k] = 1;
  for (int i = 0; i < n; i++)
    if (its[i].box) {
      int k = its[i].dim;
      if (in_box[k] || its[i].f > 1) split_dim[k] = true;
      in_box[k] = true;
      if (its[i].f > top_f[k]) top_f[k] = its[i].f;
    }
  for (int k = 0; k < rank; k++) {
    if (!split_dim[k]) continue;
    /* The box parts of dim k must be its innermost parts, one after another, and every loop
     * part of it lies outside them. */
    int64_t reach = 1;
    for (bool grew = true; grew;) {
      grew = false;
      for (int i = 0; i < n; i++)
        if (its[i].box && its[i].dim == k && its[i].f == reach) {
          reach *= its[i].extent;
          grew = true;
        }
    }
    for (int i = 0; i < n; i++)
      if (its[i].dim == k && ((its[i].box && its[i].f >= reach) ||
                              (!its[i].box && its[i].f < reach)))
        return no(why, cap,
                  "dst's dim %d interleaves box and loop parts: no split tensor map covers it", k);
    if (g->begin_div[k] != 0 && g->begin_div[k] % top_f[k] != 0)
      return no(why, cap,
                "the region's begin on dim %d is not known to be a multiple of %lld: a split "
                "tensor map needs it",
                k, (long long)top_f[k]);
    if (g->size[k] != TIRX__TMA_UNKNOWN && g->size[k] % top_f[k] != 0)
      return no(why, cap,
                "src dim %d has extent %lld, not a multiple of %lld: a split tensor map would "
                "read past the rows",
                k, (long long)g->size[k], (long long)top_f[k]);
  }
  /* Box dimensions in shared-memory order, then one coordinate dimension per logical dim
   * the box does not walk (innermost first). */
  *needed = 0;
  for (int i = 0; i < n; i++) *needed += its[i].box;
  for (int k = 0; k < rank; k++) *needed += !in_box[k];
  if (*needed > TIRX__TMAP_MAX_RANK) return TIRX_E_LIMIT;
  for (int i = 0; i < n; i++) {
    if (!its[i].box) continue;
    int k = its[i].dim;
    tirx__tmap_dim *d = &m->d[nmap];
    d->dim = (int8_t)k;
    d->box = (uint32_t)its[i].extent;
    d->factor = its[i].f;
    d->extent = 0;
    d->kind = TIRX__TMAP_WHOLE;
    out->coord_div[nmap] = 1;
    if (split_dim[k]) {
      if (its[i].f == top_f[k]) {
        d->kind = TIRX__TMAP_OUTER;
        out->coord_div[nmap] = top_f[k];
      } else {
        d->kind = TIRX__TMAP_INNER;
        d->extent = its[i].extent;
        out->coord_div[nmap] = 0;
      }
    }
    nmap++;
  }
  for (int k = rank - 1; k >= 0; k--) {
    if (in_box[k]) continue;
    /* Field by field: the descriptor is compared bytewise (padding stays zero). */
    m->d[nmap].dim = (int8_t)k;
    m->d[nmap].kind = TIRX__TMAP_WHOLE;
    m->d[nmap].box = 1;
    m->d[nmap].factor = 1;
    m->d[nmap].extent = 0;
    out->coord_div[nmap] = 1;
    nmap++;
  }
  m->rank = (uint8_t)nmap;
  return TIRX_OK;
}

tirx_status tirx__tma_derive(tirx_arena *a, int rank, const int64_t *extent,
                             const tirx__tma_global *g, const tirx_layout *smem, int elem_bytes,
                             bool split, tirx__tma_plan *out, char *why, size_t cap) {
  memset(out, 0, sizeof *out);
  out->map.param = -1;
  out->split = split;
  if (rank < 1 || rank > TIRX_BUILDER_MAX_RANK || tirx_layout_rank(smem) != rank)
    return no(why, cap, "dst is not grouped to the region's %d dims", rank);
  int64_t shape[TIRX_LAYOUT_MAX_RANK];
  tirx_layout_shape(smem, shape, TIRX_LAYOUT_MAX_RANK);
  for (int k = 0; k < rank; k++)
    if (shape[k] != extent[k])
      return no(why, cap, "dst's shape differs from the region's extents on dim %d", k);
  if (smem->nr > 0) return no(why, cap, "dst has replicas: a TMA box is single-valued");
  for (int i = 0; i < smem->nd; i++)
    if (smem->d[i].axis != TIRX_AXIS_M && smem->d[i].extent > 1)
      return no(why, cap, "dst is not a layout on m");
  if (smem->swizzle_bytes && smem->swizzle_elem != elem_bytes)
    return no(why, cap, "dst's swizzle is over %d-byte elements, not %d", smem->swizzle_elem,
              elem_bytes);
  const tirx_layout *c = tirx_layout_canonicalize(a, smem);
  if (!c) return no(why, cap, "dst cannot be canonicalised");
  int sw = smem->swizzle_bytes;

  /* The shared iters, each with its logical step f along its dimension. */
  siter its[2 * TIRX_LAYOUT_MAX_ITERS];
  int n = 0;
  for (int k = 0; k < c->rank; k++)
    for (int j = c->dim_begin[k]; j < c->dim_begin[k + 1]; j++) {
      const tirx_iter *it = &c->d[j];
      if (it->extent == 1) continue;
      if (it->stride <= 0)
        return no(why, cap, "dst iter (%lld):(%lld) of dim %d is a broadcast or reversed",
                  (long long)it->extent, (long long)it->stride, k);
      int64_t f = 1;
      for (int q = j + 1; q < c->dim_begin[k + 1]; q++) f *= c->d[q].extent;
      if (n == TIRX_LAYOUT_MAX_ITERS) return no(why, cap, "dst has too many iters");
      its[n++] = (siter){k, it->extent, it->stride, f, false, false};
    }
  if (n == 0)
    return no(why, cap, "the copy is one element (%d bytes): a TMA box row needs a multiple of "
              "16 bytes", elem_bytes);
  qsort(its, (size_t)n, sizeof its[0], by_stride);

  /* Splits at boxDim's limits: the innermost run at most 256 elements and the swizzle span,
   * in pieces of whole 16-byte chunks; every other iter at most 256. An iter with no usable
   * divisor is always a loop. */
  for (int i = 0; i < n; i++) {
    bool inner = its[i].stride == 1;
    int64_t limit = 256;
    if (inner && sw && sw / elem_bytes < limit) limit = sw / elem_bytes;
    while (its[i].extent > limit && !its[i].nobox) {
      int64_t d = limit;
      for (; d > 1; d--)
        if (its[i].extent % d == 0 && (!inner || d * elem_bytes % 16 == 0)) break;
      if (d <= 1) {
        its[i].nobox = true;
        break;
      }
      if (n == 2 * TIRX_LAYOUT_MAX_ITERS) return no(why, cap, "dst has too many iters");
      split_iter(its, &n, i, d);
    }
  }
  qsort(its, (size_t)n, sizeof its[0], by_stride);

  /* The dense chain: the box. */
  const siter *first = &its[0];
  if (first->stride != 1)
    return no(why, cap, "dst has no contiguous innermost run (its smallest stride is %lld)",
              (long long)first->stride);
  if (first->f != 1)
    return no(why, cap, "dst's contiguous run is an outer part of dim %d (step %lld): TMA's "
              "innermost box dimension must be contiguous in the global tensor too",
              first->dim, (long long)first->f);
  int64_t gs0 = g->stride[first->dim];
  if (gs0 != TIRX__TMA_UNKNOWN && gs0 != 1)
    return no(why, cap, "dst's innermost elements run along dim %d, whose global stride is %lld "
              "elements: TMA needs it contiguous (stride 1)", first->dim, (long long)gs0);
  if (first->nobox)
    return no(why, cap, "dst's innermost run of %lld elements has no divisor of whole 16-byte "
              "chunks up to %d elements to use as a box dimension", (long long)first->extent,
              sw && sw / elem_bytes < 256 ? sw / elem_bytes : 256);
  if (first->extent * elem_bytes % 16)
    return no(why, cap, "the box's innermost run is %lld bytes: TMA needs a multiple of 16 bytes",
              (long long)(first->extent * elem_bytes));
  int64_t expect = 1;
  int nb = 0;
  bool dim_used[TIRX_BUILDER_MAX_RANK] = {false};
  for (int i = 0; i < n; i++) {
    siter *it = &its[i];
    if (it->stride != expect || it->nobox) break;
    if (!split && (it->f != 1 || dim_used[it->dim])) break;
    it->box = true;
    dim_used[it->dim] = true;
    expect *= it->extent;
    nb++;
  }
  /* At most five map dimensions: shorten the box while it needs more. */
  tirx_status st;
  for (;;) {
    int needed = 0;
    st = make_map(rank, g, its, n, out, &needed, why, cap);
    if (st != TIRX_E_LIMIT) break;
    if (nb == 1)
      return no(why, cap, "the copy needs %d tensor-map dimensions: TMA has at most %d", needed,
                TIRX__TMAP_MAX_RANK);
    for (int i = n - 1; i >= 0; i--)
      if (its[i].box) {
        its[i].box = false;
        break;
      }
    nb--;
  }
  if (st != TIRX_OK) return st;

  /* Known global strides: multiples of 16 bytes. */
  tirx__tmap_desc *m = &out->map;
  for (int i = 1; i < m->rank; i++) {
    int k = m->d[i].dim;
    if (g->stride[k] == TIRX__TMA_UNKNOWN) continue;
    int64_t bytes = m->d[i].factor * g->stride[k] * elem_bytes;
    if (bytes % 16)
      return no(why, cap, "src dim %d steps %lld bytes: TMA needs global strides that are "
                "multiples of 16 bytes", k, (long long)bytes);
  }

  /* The loops, and the alignment of every box's start in shared memory. */
  int align = sw ? 8 * sw : 128;
  int64_t off = tirx_layout_offset(c, TIRX_AXIS_M);
  if (off * elem_bytes % align)
    return no(why, cap, "dst starts at byte %lld of its buffer: TMA needs %d-byte aligned "
              "shared memory%s", (long long)(off * elem_bytes), align,
              sw ? " with this swizzle" : "");
  out->box_elems = 1;
  out->insts = 1;
  for (int i = 0; i < n; i++) {
    if (its[i].box) {
      out->box_elems *= its[i].extent;
      continue;
    }
    tirx__tma_loop *lp = &out->loop[out->nloops++];
    lp->dim = its[i].dim;
    lp->extent = its[i].extent;
    lp->f = its[i].f;
    lp->smem_stride = its[i].stride;
    lp->mapdim = -1;
    for (int q = 0; q < m->rank; q++)
      if (m->d[q].dim == its[i].dim && m->d[q].kind != TIRX__TMAP_INNER) {
        lp->mapdim = q;
        lp->coord_step = its[i].f / m->d[q].factor;
      }
    out->insts *= its[i].extent;
    if (its[i].stride * elem_bytes % align)
      return no(why, cap, "dst's loop over dim %d steps %lld bytes in shared memory: each TMA "
                "box needs %d-byte alignment", its[i].dim,
                (long long)(its[i].stride * elem_bytes), align);
  }
  m->swizzle = (int16_t)sw;
  return TIRX_OK;
}
