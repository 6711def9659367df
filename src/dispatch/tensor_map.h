/*
 * TMA tensor-map derivation (paper section 5.2): from the global region (per logical dim: its
 * stride and full extent where known at build time, what is known of the region's begin) and
 * the shared destination's layout, the tensor map (rank, which logical dim each map dimension
 * walks, box extents, swizzle) and the residual loops around one TMA instruction.
 *
 * The method. The shared layout is canonicalised (grouping kept) and its iters sorted by
 * stride: TMA writes a box densely, map dimension 0 fastest, so the box is the longest prefix
 * of that order in which each stride is the product of the extents before it (a dense chain).
 * Iters longer than 256 (boxDim's limit), or an innermost iter wider than the swizzle span,
 * are first split by the layout's own grouping rule. Every chain iter becomes a map dimension
 * (the permutation of paper figure 7: the map's dimension order is the shared layout's
 * stride order, so the same permutation applied to the global layout gives its strides);
 * every other iter is a residual loop that moves the shared start and the coordinates.
 *
 * Two forms (the copy's instruction shapes):
 *   loop form  every map dimension is a whole logical dimension of the global tensor (its
 *              globalDim is the true extent, so out-of-bounds boxes are zero-filled: tails cost
 *              nothing). A chain iter that is an outer part of a logical dimension (f > 1)
 *              ends the box; the rest is looped.
 *   split form a logical dimension may become several map dimensions (inner parts with their
 *              own extent, the outer part with extent shape/factor), as fast.cu's 3-D map
 *              {64, rows, K/64} of a K-major tile of 64-wide 128-byte-swizzled slabs. Only
 *              correct when factor divides the global extent (checked at launch) and the
 *              region's begin on that dim (checked here from what is known of it).
 *
 * Everything here is pure computation on the CPU (tests/unit/dispatch/test_tensor_map.c).
 */
#ifndef TIRX_DISPATCH_TENSOR_MAP_H
#define TIRX_DISPATCH_TENSOR_MAP_H

#include "../ir/ir.h"

#define TIRX__TMA_UNKNOWN INT64_C(-1)

/* What is known at build time of the global side of the copy, per logical dimension. */
typedef struct tirx__tma_global {
  int64_t stride[TIRX_BUILDER_MAX_RANK];    /* elements; TIRX__TMA_UNKNOWN: known at launch */
  int64_t size[TIRX_BUILDER_MAX_RANK];      /* the tensor's extent; TIRX__TMA_UNKNOWN likewise */
  int64_t begin_div[TIRX_BUILDER_MAX_RANK]; /* a known divisor of the region's begin; 0: begin 0 */
} tirx__tma_global;

/* One residual loop around the TMA instruction. */
typedef struct tirx__tma_loop {
  int dim;             /* the logical dimension it walks */
  int mapdim;          /* the map dimension whose coordinate it moves */
  int64_t extent;
  int64_t f;           /* logical step along dim per iteration */
  int64_t coord_step;  /* coordinate step of mapdim per iteration */
  int64_t smem_stride; /* shared-memory step in elements */
} tirx__tma_loop;

typedef struct tirx__tma_plan {
  tirx__tmap_desc map; /* param -1 */
  bool split;
  int nloops;
  tirx__tma_loop loop[TIRX_LAYOUT_MAX_ITERS];
  /* The coordinate of map dimension i is begin[dim] / coord_div[i] (+ the loops); for INNER
   * dimensions it is 0. */
  int64_t coord_div[TIRX__TMAP_MAX_RANK];
  int64_t box_elems; /* elements one instruction moves */
  int64_t insts;     /* instructions per copy: the product of the loop extents */
} tirx__tma_plan;

/*
 * Derives the plan of a copy of the region extent[rank] between a global tensor (g) and a
 * shared region whose layout is smem (grouped to extent) of elem_bytes elements, in the loop
 * form (split false) or the split form. TIRX_OK, or TIRX_E_NOT_REPRESENTABLE with one sentence
 * in why (no function name, no final period) saying which constraint failed.
 */
tirx_status tirx__tma_derive(tirx_arena *a, int rank, const int64_t *extent,
                             const tirx__tma_global *g, const tirx_layout *smem, int elem_bytes,
                             bool split, tirx__tma_plan *out, char *why, size_t cap);

#endif
