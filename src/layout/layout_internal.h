/* The layout's representation, shared by the files of src/layout. */
#ifndef TIRX_LAYOUT_INTERNAL_H
#define TIRX_LAYOUT_INTERNAL_H

#include "../core/internal.h"

struct tirx_layout {
  int32_t nd, nr, no;
  tirx_iter *d;          /* nd shard iters, outermost first */
  tirx_iter *r;          /* nr replica iters */
  tirx_axis_offset *o;   /* no offsets, sorted by axis, no zero values, no duplicates */
  int32_t rank;          /* 0: flat; else the number of logical dimensions */
  int32_t *dim_begin;    /* rank + 1 entries: the iters of dim k are d[dim_begin[k]..dim_begin[k+1]) */
  int64_t *shape;        /* rank entries: the product of each dim's iter extents */
  int32_t swizzle_bytes; /* 0, 32, 64, 128 */
  int32_t swizzle_elem;  /* element bytes of the swizzle (1, 2, 4, 8) when swizzled */
  int64_t size;          /* product of the D extents */
};

/*
 * Allocates a layout and copies the parts in, validating every field and checking that all
 * coordinates fit in int64. rank/dim_begin may be 0/NULL for a flat layout; when given,
 * dim_begin has rank+1 entries, dim_begin[0] == 0, non-decreasing, dim_begin[rank] == nd.
 * fn names the public function for error messages. Offsets may come unsorted and with
 * zeros; they are normalised. Returns NULL with the error recorded.
 */
tirx_layout *tirx__layout_make(tirx_arena *a, const char *fn, int nd, const tirx_iter *d, int nr,
                               const tirx_iter *r, int no, const tirx_axis_offset *o, int rank,
                               const int32_t *dim_begin, int swizzle_bytes, int swizzle_elem);

/* A copy of l with a different D, R and grouping, keeping the offset and swizzle. */
tirx_layout *tirx__layout_with(tirx_arena *a, const char *fn, const tirx_layout *l, int nd,
                               const tirx_iter *d, int nr, const tirx_iter *r, int rank,
                               const int32_t *dim_begin);

/* Checks that the layout pointer is valid for fn; records TIRX_E_NULL_ARG otherwise. */
static inline bool tirx__layout_check(const tirx_layout *l, const char *fn, const char *arg) {
  if (!l) {
    tirx__error(TIRX_E_NULL_ARG, "%s: %s is NULL", fn, arg);
    return false;
  }
  return true;
}

/* Groups the flat iters d[nd] to shape[rank] (validated: rank in [1, MAX_RANK], the product
 * is the size), splitting iters at dimension boundaries: at most nd + rank iters into out and
 * rank + 1 entries into begin. TIRX_E_NOT_REPRESENTABLE, naming fn, when a boundary falls
 * inside an iter at a point that does not divide it (ops.c). */
bool tirx__layout_group_iters(const char *fn, int nd, const tirx_iter *d, int rank,
                              const int64_t *shape, tirx_iter *out, int *n_out, int32_t *begin);

/* The D iters' digits of flat index x, outermost first, into digits[nd]. */
void tirx__layout_digits(const tirx_layout *l, int64_t x, int64_t *digits);

/* A layout's canonical parts in fixed arrays, so that queries need no arena (canon.c). */
typedef struct tirx__canon {
  int nd, nr, rank;
  tirx_iter d[TIRX_LAYOUT_MAX_ITERS];
  tirx_iter r[TIRX_LAYOUT_MAX_ITERS];
  int32_t dim_begin[TIRX_LAYOUT_MAX_RANK + 1];
  int64_t offset[TIRX_AXIS_MAX]; /* per axis, after negative replica strides are flipped */
} tirx__canon;

/* The canonical form of l (see tirx_layout_canonicalize); flat drops the grouping first so
 * that merges may cross logical dimensions. */
void tirx__layout_canon(const tirx_layout *l, bool flat, tirx__canon *out);

/* The launch a scope was made for: warps per CTA and CTAs per cluster (scope.c). */
void tirx__scope_launch(const tirx_scope *s, int *warps_per_cta, int *cluster_size);

#endif
