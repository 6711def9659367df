/*
 * tirx/layout.h: the TIRx layout algebra (paper sections 3 and 5.1).
 *
 * A layout maps a logical index to a SET of coordinates on named axes:
 *
 *     L(x) = { swz(D(x) + r + O) | r in R }
 *
 *   D  the shard iters (extent, stride, axis), outermost first. A flat logical index
 *      x in [0, size) is split into mixed-radix digits over the extents (the last iter varies
 *      fastest) and D(x) = sum_k digit_k * stride_k on axis_k.
 *   R  the replica iters: every point r = sum_k j_k * stride_k, 0 <= j_k < extent_k.
 *   O  one constant offset per axis.
 *   swz an optional XOR swizzle of the m coordinate (32/64/128-byte, as TMA and wgmma use).
 *
 * Text form (the paper's notation), which tirx_layout_parse() reads and tirx_layout_str()
 * writes:
 *
 *     (8,2,4,2):(4@laneid,1@warpid,1@laneid,1@reg)+[2:4@warpid]+5@warpid
 *
 * A stride without "@axis" is on m. Several replicas are written [2:4@warpid,2:1@cta] and
 * several offsets as +5@warpid+3@m. A grouped layout (one with a logical shape) nests the
 * iters of each logical dimension: ((2,8),(3,8)):((192,8),(64,1)); a dimension of extent 1
 * with no iters is written (). A swizzle is written last: ^sw(128,2) means the 128-byte
 * swizzle over 2-byte elements.
 *
 * Layouts live in an arena (tirx_arena_create(), or a builder's arena) and are immutable.
 * Every function that returns a layout returns NULL on failure and sets tirx_last_error().
 * Extents are >= 1; strides may be any int64 (0 broadcasts, negative reverses); every
 * coordinate a layout can produce must fit in int64, which the constructors check.
 *
 * Errors. Each function below lists every status it can set. Those common to all of them:
 * TIRX_E_NULL_ARG for a NULL arena, layout or required pointer ("tirx_layout_tile: inner is
 * NULL"); TIRX_E_NO_MEMORY when the arena (or malloc) cannot grow. A function that returns a
 * new layout also checks the result as tirx_layout_new() does, so it may fail with
 * TIRX_E_LIMIT (more than TIRX_LAYOUT_MAX_ITERS iters) or TIRX_E_OVERFLOW (a coordinate of
 * the result overflows int64) even when its inputs were valid; the lists say where that can
 * happen. Accessors and queries that return a number (not a status) return 0 for a NULL
 * layout without recording an error, unless their comment says otherwise.
 */
#ifndef TIRX_LAYOUT_H
#define TIRX_LAYOUT_H

#include "core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A layout: D, R and O over named axes (immutable; it lives in an arena). */
typedef struct tirx_layout tirx_layout;

/* One iter of D or R. */
typedef struct tirx_iter {
  int64_t extent; /* >= 1 */
  int64_t stride; /* any value; 0 broadcasts */
  tirx_axis axis; /* the axis it steps along */
} tirx_iter;

/* One entry of O. */
typedef struct tirx_axis_offset {
  tirx_axis axis; /* the axis */
  int64_t value;  /* the offset on it */
} tirx_axis_offset;

/* One evaluated coordinate: a value on every axis (0 on axes the layout does not use). */
typedef struct tirx_coord {
  int64_t v[TIRX_AXIS_MAX]; /* v[axis]: the coordinate on that axis */
} tirx_coord;

/* Limits on a layout's structure; larger inputs are rejected with TIRX_E_LIMIT. */
enum {
  TIRX_LAYOUT_MAX_ITERS = 64,   /* D iters, and separately R iters */
  TIRX_LAYOUT_MAX_RANK = 16,    /* logical dimensions of a grouped layout */
  TIRX_LAYOUT_MAX_TEXT = 65536  /* characters of text accepted by the parser */
};

/* ---- Construction --------------------------------------------------------------------------- */

/*
 * A layout from its parts, copied into the arena. d may be NULL when nd == 0 (a scalar: one
 * element at the offset), likewise r and o. Errors: TIRX_E_NULL_ARG (a, or d, r or o with a
 * non-zero count), TIRX_E_INVALID_ARG (extent < 1, negative counts, an offset given twice for
 * one axis), TIRX_E_UNKNOWN_AXIS (an iter or offset on no axis), TIRX_E_LIMIT (nd or nr above
 * TIRX_LAYOUT_MAX_ITERS, no above TIRX_AXIS_MAX), TIRX_E_OVERFLOW (size, replica count or a
 * coordinate overflows int64), TIRX_E_NO_MEMORY.
 */
TIRX_API tirx_layout *tirx_layout_new(tirx_arena *a, int nd, const tirx_iter *d, int nr,
                                      const tirx_iter *r, int no, const tirx_axis_offset *o);

/* Parses the text form above. Errors: TIRX_E_NULL_ARG (a, text), TIRX_E_PARSE with the 0-based
 * character position, "tirx_layout_parse: at 7: expected ',' or ')'", TIRX_E_LIMIT (text
 * longer than TIRX_LAYOUT_MAX_TEXT, more than TIRX_LAYOUT_MAX_ITERS shard or replica iters,
 * more than TIRX_LAYOUT_MAX_RANK dimensions), TIRX_E_OVERFLOW (a number that does not fit in
 * int64, "at 4: integer does not fit in int64"), TIRX_E_UNKNOWN_AXIS ("at 6: unknown axis
 * 'foo'"), TIRX_E_INVALID_ARG (an offset given twice), plus those of tirx_layout_new(). */
TIRX_API tirx_layout *tirx_layout_parse(tirx_arena *a, const char *text);

/* Row-major (last dimension contiguous) dense layout on m, grouped to shape. Errors (also of
 * col_major and strided): TIRX_E_NULL_ARG (a, shape, strides), TIRX_E_INVALID_ARG (rank
 * outside 1 to TIRX_LAYOUT_MAX_RANK, shape[k] < 1), TIRX_E_OVERFLOW (the product of shape,
 * or a coordinate with the given strides, overflows int64), TIRX_E_NO_MEMORY. */
TIRX_API tirx_layout *tirx_layout_row_major(tirx_arena *a, int rank, const int64_t *shape);

/* Column-major (first dimension contiguous) dense layout on m, grouped to shape. */
TIRX_API tirx_layout *tirx_layout_col_major(tirx_arena *a, int rank, const int64_t *shape);

/* A strided layout on m grouped to shape: index i maps to sum_k i_k * strides[k]. */
TIRX_API tirx_layout *tirx_layout_strided(tirx_arena *a, int rank, const int64_t *shape,
                                          const int64_t *strides);

/* ---- Accessors ----------------------------------------------------------------------------- */

TIRX_API int tirx_layout_num_iters(const tirx_layout *l);    /* |D| */
TIRX_API int tirx_layout_num_replicas(const tirx_layout *l); /* |R| */
TIRX_API int tirx_layout_num_offsets(const tirx_layout *l);  /* non-zero entries of O */
/* The i-th item. Errors: TIRX_E_NULL_ARG (l, out), TIRX_E_OUT_OF_RANGE (i outside [0, count)). */
TIRX_API tirx_status tirx_layout_iter(const tirx_layout *l, int i, tirx_iter *out);
TIRX_API tirx_status tirx_layout_replica(const tirx_layout *l, int i, tirx_iter *out);
TIRX_API tirx_status tirx_layout_offset_at(const tirx_layout *l, int i, tirx_axis_offset *out);
/* The offset on one axis (0 when absent). */
TIRX_API int64_t tirx_layout_offset(const tirx_layout *l, tirx_axis axis);
/* The number of logical elements: the product of D's extents (1 for a scalar). */
TIRX_API int64_t tirx_layout_size(const tirx_layout *l);
/* The number of points in R (the product of its extents; points may coincide). */
TIRX_API int64_t tirx_layout_replica_count(const tirx_layout *l);
/* The logical rank of a grouped layout; 0 for a flat one. */
TIRX_API int tirx_layout_rank(const tirx_layout *l);
/* The logical shape of a grouped layout into out[rank]. Errors: TIRX_E_NULL_ARG (l; out when
 * the rank is not 0), TIRX_E_BUFFER_TOO_SMALL (cap < rank). */
TIRX_API tirx_status tirx_layout_shape(const tirx_layout *l, int64_t *out, int cap);
/* The swizzle: bytes 0 (none), 32, 64 or 128, and element bytes. */
TIRX_API int tirx_layout_swizzle_bytes(const tirx_layout *l);
TIRX_API int tirx_layout_swizzle_elem_bytes(const tirx_layout *l);

/* ---- Text ---------------------------------------------------------------------------------- */

/* The text form, malloc'ed; the caller frees it with free(). NULL on failure. Errors:
 * TIRX_E_NULL_ARG, TIRX_E_NO_MEMORY. */
TIRX_API char *tirx_layout_str(const tirx_layout *l);

/* Writes the text form into buf (always NUL-terminated when cap > 0). Returns the length the
 * full text needs, excluding the NUL, or -1 with an error: TIRX_E_NULL_ARG (l),
 * TIRX_E_NO_MEMORY. */
TIRX_API int64_t tirx_layout_format(const tirx_layout *l, char *buf, size_t cap);

/* ---- Evaluation ---------------------------------------------------------------------------- */

/*
 * Evaluates L(x) for a flat logical index x in [0, size). Writes up to cap coordinates into
 * out (cap may be 0 to ask for the count) and the number of points into *count: the replica
 * count; coinciding points are written once each time they occur, in replica order (the
 * first replica iter outermost). Errors: TIRX_E_NULL_ARG (l, count; out when cap > 0),
 * TIRX_E_INVALID_ARG (cap < 0), TIRX_E_OUT_OF_RANGE (x), TIRX_E_BUFFER_TOO_SMALL (cap < count;
 * *count is still set).
 */
TIRX_API tirx_status tirx_layout_eval(const tirx_layout *l, int64_t x, tirx_coord *out,
                                      int64_t cap, int64_t *count);

/* As tirx_layout_eval for a logical multi-index of a grouped layout (index[rank]). Errors:
 * those of tirx_layout_eval, TIRX_E_NULL_ARG (index), TIRX_E_INVALID_ARG (l not grouped),
 * TIRX_E_OUT_OF_RANGE (index[k] outside [0, shape[k])). */
TIRX_API tirx_status tirx_layout_eval_nd(const tirx_layout *l, const int64_t *index,
                                         tirx_coord *out, int64_t cap, int64_t *count);

/* The m coordinate of x with replica 0 and the swizzle applied: the address, in elements, a
 * single-valued memory layout gives. Errors: TIRX_E_NULL_ARG (l, out), TIRX_E_OUT_OF_RANGE
 * (x). */
TIRX_API tirx_status tirx_layout_eval_m(const tirx_layout *l, int64_t x, int64_t *out);

/* ---- Dispatch-oriented operations (paper 5.1) --------------------------------------------- */

/*
 * The canonical form: extent-1 iters dropped; adjacent D iters on one axis merged when the
 * outer stride is the inner extent times the inner stride; stride-0 iters put on m and
 * merged; replica iters with stride 0 or extent 1 dropped, negative replica strides turned
 * positive by moving the difference into O, replicas sorted by (axis, stride) and merged;
 * zero offsets dropped. Grouping is kept: merges never cross logical dimensions. Two layouts
 * have the same placement exactly when their canonical forms are equal (see tirx_layout_equal).
 * Errors: TIRX_E_NULL_ARG (a, l), TIRX_E_OVERFLOW (moving a negative replica stride's
 * difference into O takes a coordinate of the canonical form past int64, though l's own
 * coordinates fit: "(1):(1)+[2:-4611686018427387904@m]-4611686018427387902@m"),
 * TIRX_E_NO_MEMORY.
 */
TIRX_API tirx_layout *tirx_layout_canonicalize(tirx_arena *a, const tirx_layout *l);

/*
 * Placement equality: true when both layouts map every logical index to the same set of
 * coordinates (same size, same swizzle). Grouping is ignored. Decided on canonical forms, with
 * replica sets compared as point sets. Returns false with an error: TIRX_E_NULL_ARG (a, b),
 * TIRX_E_LIMIT (comparing replica sets needs more than 2^20 points on one axis),
 * TIRX_E_NO_MEMORY.
 */
TIRX_API bool tirx_layout_equal(const tirx_layout *a, const tirx_layout *b);

/* Structural equality: the same iters, replicas, offsets, grouping and swizzle. Returns false
 * with TIRX_E_NULL_ARG for a NULL a or b. */
TIRX_API bool tirx_layout_same(const tirx_layout *a, const tirx_layout *b);

/*
 * Groups the flat iters to a logical shape (product equal to the size), splitting an iter
 * (e):(s) into (e/f, f):(s*f, s) where a dimension boundary needs it. The result maps the
 * logical multi-index of shape to the same places. Errors: TIRX_E_NULL_ARG (a, l, shape),
 * TIRX_E_INVALID_ARG (rank < 1, product differs, extent < 1), TIRX_E_LIMIT (rank above
 * TIRX_LAYOUT_MAX_RANK, or the splits need more than TIRX_LAYOUT_MAX_ITERS iters),
 * TIRX_E_OVERFLOW (the product of shape overflows int64), TIRX_E_NOT_REPRESENTABLE (a
 * boundary falls inside an iter at a point that does not divide it: "(2,6) cannot be grouped
 * to (3,4)"), TIRX_E_NO_MEMORY.
 * A grouped input is regrouped from its flat iters.
 */
TIRX_API tirx_layout *tirx_layout_group(tirx_arena *a, const tirx_layout *l, int rank,
                                        const int64_t *shape);

/* Drops the grouping (the logical shape); the placement is unchanged. Errors:
 * TIRX_E_NULL_ARG (a, l), TIRX_E_NO_MEMORY. */
TIRX_API tirx_layout *tirx_layout_flatten(tirx_arena *a, const tirx_layout *l);

/* Reorders the logical dimensions of a grouped layout: dimension k of the result is dimension
 * perm[k] of l. Errors: TIRX_E_NULL_ARG (a, l, perm), TIRX_E_INVALID_ARG (not grouped, rank
 * differs from l's, not a permutation of rank), TIRX_E_NO_MEMORY. */
TIRX_API tirx_layout *tirx_layout_permute(tirx_arena *a, const tirx_layout *l, int rank,
                                          const int64_t *perm);

/*
 * The layout of a region of a logical shape: element y of the region (shape extent[]) is
 * element begin + y of l grouped to shape. The result is grouped to extent[] (dimensions of
 * extent 1 keep their place with no iters). Errors: TIRX_E_NULL_ARG (begin, extent),
 * TIRX_E_INVALID_ARG (rank, begin < 0, extent < 1), TIRX_E_OUT_OF_RANGE ("region dim 1
 * [4, 12) exceeds extent 8"), TIRX_E_NOT_REPRESENTABLE ("region dim 0 [2, 6) wraps around iter
 * (4):(1@laneid) and is not a layout"), TIRX_E_OVERFLOW (the region's offset overflows int64),
 * TIRX_E_LIMIT (the split result needs more than 64 iters), TIRX_E_NO_MEMORY, and those of
 * group.
 *
 * A region that crosses an iter boundary is split as paper 5.1 says: rows [4, 12) of
 * (2,8):(192,8) keep (4):(8) whole and the two blocks of 4 become an iter of their own,
 * ((2,4)):((160,8))+32. In one dimension a run [b, b+e) of the iters is accepted when
 * f = gcd(E, b % E, e) splits the iter it wraps into whole pieces of f and what is left is two
 * equal runs whose starts differ on one axis, or pairs (E = 2, from digit 1) that the next
 * iter on the same axis holds without wrapping; any other run, of any length, is factored in
 * closed form from the steps its carries make (strides that coincide across carries: the
 * elements [1024, 2049) of (3,2,2,1024):(1124,1124,100,1) are ((1025)):((1@m))+100@m), without
 * enumerating its elements. A region is refused exactly when it is no layout: the unit tests
 * check both answers against brute force, for runs past 1024 elements too.
 */
TIRX_API tirx_layout *tirx_layout_slice(tirx_arena *a, const tirx_layout *l, int rank,
                                        const int64_t *shape, const int64_t *begin,
                                        const int64_t *extent);

/*
 * Tiling (a Kronecker product). outer and inner are grouped layouts of the same rank; the
 * result has shape outer_shape[k] * inner_shape[k] and maps index i to
 *     outer(i / inner_shape) + inner(i % inner_shape)
 * (per dimension; replicas and offsets of both are added). No strides are rescaled: build the
 * outer layout with the strides you want, or use tirx_layout_tile_dense. Errors:
 * TIRX_E_NULL_ARG (a, outer, inner), TIRX_E_INVALID_ARG (rank mismatch, an ungrouped input,
 * both swizzled), TIRX_E_LIMIT (the result has more than TIRX_LAYOUT_MAX_ITERS iters or
 * replicas), TIRX_E_OVERFLOW (a coordinate of the result overflows int64),
 * TIRX_E_NO_MEMORY.
 */
TIRX_API tirx_layout *tirx_layout_tile(tirx_arena *a, const tirx_layout *outer,
                                       const tirx_layout *inner);

/* Repeats inner over a row-major grid of reps[rank] tiles placed one after another on m:
 * the outer strides are multiples of the inner layout's span on m. Errors: TIRX_E_NULL_ARG
 * (a, inner, reps), TIRX_E_INVALID_ARG (inner not grouped, rank differs from inner's,
 * reps[k] < 1), TIRX_E_OVERFLOW ("the tile grid's strides overflow int64"), and those of
 * tirx_layout_tile. */
TIRX_API tirx_layout *tirx_layout_tile_dense(tirx_arena *a, const tirx_layout *inner, int rank,
                                             const int64_t *reps);

/*
 * Composition (l o f)(x) = l(f(x)), where f is an index map: a single-valued layout on m with
 * no replicas, no offset and no swizzle, whose values lie in [0, size(l)). The result has f's
 * size (and f's grouping). Errors: TIRX_E_NULL_ARG (a, l, f), TIRX_E_INVALID_ARG (f not an
 * index map), TIRX_E_OUT_OF_RANGE (f's values outside [0, size(l))),
 * TIRX_E_NOT_REPRESENTABLE (a stride of f does not divide l's iters), TIRX_E_LIMIT (the
 * result needs more than TIRX_LAYOUT_MAX_ITERS iters), TIRX_E_NO_MEMORY.
 */
TIRX_API tirx_layout *tirx_layout_compose(tirx_arena *a, const tirx_layout *l,
                                          const tirx_layout *f);

/*
 * CuTe's extending composition: as tirx_layout_compose, except that f's values may reach past
 * size(l). l is extended as CuTe extends its last mode: l's outermost iter d[0] (CuTe's last
 * mode; extent 1 included, 1:0 for a scalar) is taken without bound, so that l(x) for any
 * x >= 0 is x's digits over the inner iters plus (x / their size) * stride_0 on d[0]'s axis,
 * with l's replicas, offset and swizzle. Within [0, size(l)) this is l itself, and a
 * composition that tirx_layout_compose accepts gives the same placement here. CuTe's
 *   composition((4,3):(3,1), 24:1) = (4,6):(3,1), i.e. tirx's (6,4):(1,3);
 *   composition(1:0, 4:1) = 4:0.
 * Errors: those of tirx_layout_compose, except that TIRX_E_OUT_OF_RANGE is only for negative
 * values ("tirx_layout_compose_extended: f's values span [-3, 0], expected >= 0"), and
 * TIRX_E_OVERFLOW when a stride of the result overflows int64 ("f's iter 0
 * (2):(4611686018427387904@m) takes l's outermost stride past int64") or a coordinate does.
 */
TIRX_API tirx_layout *tirx_layout_compose_extended(tirx_arena *a, const tirx_layout *l,
                                                   const tirx_layout *f);

/* ---- Relating layouts (upstream TIRx) ---------------------------------------------------- */

/*
 * The per-iter digits of a logical coordinate: index[rank] for a grouped layout, index[0] the
 * flat index for a flat one; digits[k] is the digit of D iter k (outermost first), so that
 * D(x) = sum_k digits[k] * stride_k. *count is set to the number of iters. Errors:
 * TIRX_E_NULL_ARG (layout, index, count), TIRX_E_OUT_OF_RANGE ("index[1] is 9, outside
 * [0, 8)"), TIRX_E_BUFFER_TOO_SMALL (cap below the number of iters, or digits NULL).
 */
TIRX_API tirx_status tirx_layout_coord(const tirx_layout *l, const int64_t *index,
                                       int64_t *digits, int cap, int *count);

/*
 * Tile recovery, the inverses of tirx_layout_tile. tirx_layout_tile_outer: given a tiling l and
 * its inner (tile) layout, the outer o with tirx_layout_tile(o, inner) placing every index as l
 * does ("is_tile_inner": the call succeeds exactly when inner is l's inner factor). The outer
 * gets l's replicas and swizzle and l's offset minus inner's. tirx_layout_tile_inner is the
 * converse: given the outer, the inner ("is_tile_outer"). l and the given layout are grouped,
 * of one rank, and the given one has no replicas and no swizzle. Errors: TIRX_E_NULL_ARG,
 * TIRX_E_INVALID_ARG (not grouped, ranks differ, the given layout has replicas or a swizzle),
 * TIRX_E_LIMIT (rank above 8), TIRX_E_OVERFLOW (offsets), TIRX_E_NOT_REPRESENTABLE with the
 * reason: "dim 1 of the layout has extent 12, not a multiple of inner's 8", a boundary of the
 * tiling inside an iter (as tirx_layout_group says it), or "the layout is not a tiling with this
 * inner: its inner half is ((2),(4)):((8@m),(1@m)), inner is ((2),(4)):((4@m),(1@m))".
 */
TIRX_API tirx_layout *tirx_layout_tile_outer(tirx_arena *a, const tirx_layout *l,
                                             const tirx_layout *inner);
TIRX_API tirx_layout *tirx_layout_tile_inner(tirx_arena *a, const tirx_layout *l,
                                             const tirx_layout *outer);

/*
 * The direct sum x (+) y: index (i, j) of the shape (shape of x, shape of y) maps to
 * x(i) + y(j) (a flat operand counts as one dimension of its size); D is x's iters then y's,
 * the replicas both sets, the offsets added. Errors: TIRX_E_NULL_ARG, TIRX_E_INVALID_ARG (an
 * operand is swizzled: a swizzle does not distribute over a sum), TIRX_E_LIMIT, TIRX_E_OVERFLOW.
 */
TIRX_API tirx_layout *tirx_layout_direct_sum(tirx_arena *a, const tirx_layout *x,
                                             const tirx_layout *y);

/*
 * Recovers operands of a direct sum: the first k logical dimensions of s as *x (with s's
 * replicas, offset and swizzle) and the rest as *y (no replicas, no offset), so that
 * tirx_layout_direct_sum(*x, *y) places as s does when s is unswizzled. Both NULL on failure.
 * Errors: TIRX_E_NULL_ARG, TIRX_E_INVALID_ARG ("k is 2, the layout's rank is 2: expected
 * 1 <= k < rank").
 */
TIRX_API tirx_status tirx_layout_direct_sum_split(tirx_arena *a, const tirx_layout *s, int k,
                                                  tirx_layout **x, tirx_layout **y);

/*
 * Element-width reinterpretation on one axis (m for memory, reg for registers). pack: the
 * layout of elements factor times wider (2 x bf16 as one 32-bit register: factor 2 on reg;
 * 16 bytes as a vector: factor 16 / element bytes on m): wide element j of the last dimension
 * holds narrow elements j*factor .. j*factor + factor - 1, at axis coordinate c / factor where
 * c is the first one's. Conditions, each refused with TIRX_E_NOT_REPRESENTABLE and its reason:
 * the innermost iter has stride 1 on axis and an extent that factor divides ("the innermost iter
 * (6):(2@reg) is not 2 or a multiple of it with stride 1@reg"; canonicalize first to merge
 * iters), the last dimension's extent is a multiple of factor, every other stride, replica
 * stride and the offset on axis are multiples of factor, and the layout is not swizzled.
 * unpack is the inverse: strides, replicas and offset on axis times factor, and an innermost iter
 * (factor):(1@axis) in the last dimension; unpack(pack(l)) places as l does. Errors:
 * TIRX_E_NULL_ARG, TIRX_E_INVALID_ARG (factor < 1), TIRX_E_UNKNOWN_AXIS, TIRX_E_LIMIT,
 * TIRX_E_OVERFLOW (unpack), TIRX_E_NOT_REPRESENTABLE (a swizzle; pack's conditions).
 */
TIRX_API tirx_layout *tirx_layout_pack(tirx_arena *a, const tirx_layout *l, tirx_axis axis,
                                       int64_t factor);
TIRX_API tirx_layout *tirx_layout_unpack(tirx_arena *a, const tirx_layout *l, tirx_axis axis,
                                         int64_t factor);

/* ---- CuTe's algebra ----------------------------------------------------------------------- */

/*
 * CuTe's operations on index maps (layouts on m with no replicas, offset or swizzle; strides
 * >= 0). Composition is tirx_layout_compose: CuTe's composition(A, B)(i) = A(B(i)), except
 * that tirx refuses B's values outside [0, size(A)) where CuTe extends A's last mode;
 * tirx_layout_compose_extended extends as CuTe does.
 *
 * Order: CuTe lists modes colexicographically (mode 0 varies fastest), tirx row-major (the last
 * iter and dimension vary fastest). CuTe's (e0,e1):(s0,s1) is tirx's (e1,e0):(s1,s0), and mode
 * k of a CuTe result of rank r is tirx's dimension r-1-k.
 *
 * tirx_layout_complement(l, cosize): CuTe's complement(A, M): the flat layout B, strides
 * increasing inwards-out (largest first in tirx order), that fills the gaps of l's image so that
 * (B, l), i.e. b + a, is a bijection onto [0, size(l) * size(B)), size(l) * size(B) >= cosize
 * (the last iter of B rounds cosize up). Stride-0 iters of l are ignored (CuTe's filter).
 *   complement((4):(2), 16) = (2,2):(8,1)
 * Errors: TIRX_E_NULL_ARG, TIRX_E_INVALID_ARG (cosize < 1; not an index map: "layout is not
 * an index map (it has replicas)", "layout has a negative stride (iter 0: -1)"),
 * TIRX_E_NOT_REPRESENTABLE ("iter (2):(3@m) does not sit on a multiple of 2, the span of the
 * iters below it: the layout has no complement"), TIRX_E_OVERFLOW.
 *
 * tirx_layout_logical_divide(l, tiler): CuTe's logical_divide(A, B) = A o (B, complement(B,
 * size(A))), grouped as ((rest),(tile)) (CuTe's ((tile),(rest))): element (t, e) is l at the
 * flat index complement(t) + tiler(e). l may be any layout; tiler an index map.
 * Errors: those of complement (for tiler), TIRX_E_NOT_REPRESENTABLE when the tiler does not
 * divide l ("the tiler and its complement cover 12 elements, the layout has 10: the tiler
 * does not divide it") or composition refuses (its reason, named by this function).
 *
 * tirx_layout_logical_product(l, tiler): CuTe's logical_product(A, B) = (A, complement(A,
 * size(A) * cosize(B)) o B), grouped as ((tiler's part),(l)): element (j, i) is
 * l(i) + complement(tiler(j)). Both are index maps. Errors: those of complement and compose,
 * named by this function.
 */
TIRX_API tirx_layout *tirx_layout_complement(tirx_arena *a, const tirx_layout *l, int64_t cosize);
TIRX_API tirx_layout *tirx_layout_logical_divide(tirx_arena *a, const tirx_layout *l,
                                                 const tirx_layout *tiler);
TIRX_API tirx_layout *tirx_layout_logical_product(tirx_arena *a, const tirx_layout *l,
                                                  const tirx_layout *tiler);

/* ---- Well-formedness for an execution scope ------------------------------------------------ */

typedef struct tirx_scope tirx_scope; /* tirx/scope.h */

/*
 * Checks that l is a well-formed layout for the tile one team of scope s holds (paper 3.3, 4.2):
 *   - it names only the thread axes of s's team kind: none for thread, laneid for warp,
 *     laneid, wid_in_wg and tid_in_wg for warpgroup, also warpid, wgid and tid for cta, also
 *     cbx for cluster (never cta, cluster, cby, cbz or pid); storage axes (m, reg, registered
 *     ones) are free; an iter of extent 1 or stride 0 names no axis;
 *   - its coordinates on each of those lie within the axis's extent for s's launch: laneid 32,
 *     wid_in_wg 4, tid_in_wg 128, warpid W, wgid ceil(W / 4), tid 32 W, cbx the cluster size
 *     (W warps per CTA); its reg coordinates are >= 0, its TLane ones below 128 and its
 *     TCol ones below 512;
 *   - every element, with every replica, is placed: each point lies on an active thread of the
 *     team (every team of s has the same pattern, A_intra). A point's thread is the rank r of
 *     the team whose views equal its coordinates: with t = r % 32W, laneid t % 32, wid_in_wg
 *     (t % 128) / 32, tid_in_wg t % 128, warpid t / 32, wgid t / 128, tid t, cbx r / 32W, as
 *     generated code reads them; a layout that names no thread axis is held by every thread
 *     of the team.
 * The result depends only on l's placement (not on its grouping or iter decomposition). The
 * cost depends on the launch's extents, not on l's size: no element is enumerated (a few
 * microseconds for a 32-warp CTA scope). Returns TIRX_OK, or:
 * TIRX_E_NULL_ARG ("tirx_layout_verify: layout is NULL", "scope is NULL"), TIRX_E_SCOPE with
 * the reason, one of
 *   "tirx_layout_verify: layout uses warpid, which is no axis of a warp team's tile
 *    (expected laneid)",
 *   "tirx_layout_verify: layout's laneid coordinates run from 0 to 39, expected 0 to 31",
 *   "tirx_layout_verify: layout's reg coordinates run from -2 to 5, expected >= 0",
 *   "tirx_layout_verify: layout's TCol coordinates run from 0 to 1023, expected 0 to 511",
 *   "tirx_layout_verify: element 3 is on laneid 3, tid 40, which is no thread of a cta team",
 *   "tirx_layout_verify: element 20 is on laneid 20, thread 20 of the warp team, which is not
 *    active (its active threads: (16):(1@laneid))"
 * (" (replica 1)" follows the element when l has replicas), and TIRX_E_NO_MEMORY.
 */
TIRX_API tirx_status tirx_layout_verify(const tirx_layout *l, const tirx_scope *s);

/* ---- Queries --------------------------------------------------------------------------------- */

/*
 * The extent of the coordinates on one axis over every x and replica, before the swizzle:
 * max - min + 1 (1 when the axis is unused). *min_out may be NULL. Errors: TIRX_E_NULL_ARG
 * (l, span_out), TIRX_E_UNKNOWN_AXIS (axis).
 */
TIRX_API tirx_status tirx_layout_span(const tirx_layout *l, tirx_axis axis, int64_t *min_out,
                                      int64_t *span_out);

/*
 * The storage view: iters on axes outside keep_mask (bit k = axis k) become stride-0
 * broadcasts, replicas and offsets on them are dropped. keep_mask 0 means the storage axes
 * {m, reg, TLane, TCol}. The result answers "which storage slot holds x" for one thread, CTA
 * or device.
 * Errors: TIRX_E_NULL_ARG (a, l), TIRX_E_INVALID_ARG (keep_mask has bits at or above
 * TIRX_AXIS_MAX), TIRX_E_NO_MEMORY.
 */
TIRX_API tirx_layout *tirx_layout_storage_view(tirx_arena *a, const tirx_layout *l,
                                               uint64_t keep_mask);

/*
 * The number of innermost logical elements that are contiguous on m: the extent of the
 * innermost canonical D iter when it has stride 1 on m (0 when not; 1 for a scalar).
 * Swizzled layouts count only within a 16-byte chunk. 0 with TIRX_E_NULL_ARG for a NULL l.
 */
TIRX_API int64_t tirx_layout_contiguous(const tirx_layout *l);

/*
 * The widest legal vector access on m, in elements of elem_bytes: the largest power of two v
 * with v * elem_bytes <= max_bytes such that every run of v consecutive logical elements
 * (aligned to v) is contiguous on m and starts at an m coordinate divisible by v, for every
 * replica. 1 when nothing wider is legal; 0 with an error on bad arguments: TIRX_E_NULL_ARG
 * (l), TIRX_E_INVALID_ARG (elem_bytes < 1, max_bytes < elem_bytes).
 */
TIRX_API int64_t tirx_layout_vector_width(const tirx_layout *l, int elem_bytes, int max_bytes);

/* ---- Swizzles -------------------------------------------------------------------------------- */

/*
 * Composes the XOR swizzle of swizzle_bytes (32, 64 or 128) over elements of elem_bytes (1, 2,
 * 4 or 8) with the m coordinate: in bytes, address bits [4, 4+b) are XORed with bits
 * [7, 7+b), b = log2(swizzle_bytes / 16), as TMA and wgmma do (the atom repeats every
 * 8 * swizzle_bytes bytes, from a 1024-byte aligned base). swizzle_bytes 0 removes it.
 * Errors: TIRX_E_NULL_ARG (a, l), TIRX_E_INVALID_ARG (swizzle_bytes, elem_bytes),
 * TIRX_E_OVERFLOW (an m coordinate in bytes overflows int64), TIRX_E_NO_MEMORY.
 */
TIRX_API tirx_layout *tirx_layout_swizzle(tirx_arena *a, const tirx_layout *l,
                                          int swizzle_bytes, int elem_bytes);

/* The swizzle applied to one m coordinate in elements (pure function, no layout needed).
 * Returns m unchanged for swizzle_bytes 0, and -1 for invalid arguments or when m * elem_bytes
 * overflows int64 (no layout can produce such an m: the constructors check it); it records no
 * error. */
TIRX_API int64_t tirx_swizzle_apply(int swizzle_bytes, int elem_bytes, int64_t m);

/* ---- Ready-made layouts ------------------------------------------------------------------- */

/* Errors of every function in this section: TIRX_E_NULL_ARG (a), TIRX_E_INVALID_ARG (a size
 * or byte count outside the values listed for it), TIRX_E_NO_MEMORY; tirx_layout_smem_tile
 * also TIRX_E_OVERFLOW (the tile's size or a coordinate overflows int64). */

/* mma.sync m16n8k16 fragments, as (laneid, reg) layouts of the logical tile, grouped:
 *   A: (16,16) -> 8 regs; B: (16,8) as (K,N) -> 4 regs; C/D: (16,8) -> 4 regs.
 * Register numbering follows the PTX ISA figures (a0..a7, b0..b3, c0..c3). */
TIRX_API tirx_layout *tirx_layout_mma_m16n8k16_a(tirx_arena *a);
TIRX_API tirx_layout *tirx_layout_mma_m16n8k16_b(tirx_arena *a);
TIRX_API tirx_layout *tirx_layout_mma_m16n8k16_c(tirx_arena *a);

/* The wgmma m64nNk16 accumulator: (m, n) over tid_in_wg and reg; n in 8..256, step 8; m 64
 * (one instruction) or 128, 192, 256 (that many m64 slabs, slab q at registers q*n/2).
 * Thread t = 32*w + l holds rows 16*w + l/4 and +8, columns 8*j + 2*(l%4) + {0,1}. */
TIRX_API tirx_layout *tirx_layout_wgmma_acc(tirx_arena *a, int m, int n);

/* The rows of a wgmma m64nN accumulator as per-row values broadcast along n: (64, n) over
 * tid_in_wg and reg, every column of a row on the same register, each row held by the four
 * lanes of its quad (a replica over tid_in_wg bits 0 and 1), 2 registers per thread (rows
 * 16*w + l/4 and +8). The layout of a row max or row sum of the accumulator
 * (tirx_reduce over dim 1 into its (64, 1) region) that pointwise primitives then apply to
 * the accumulator's elements (FlashAttention's softmax); n in 1..4096.
 *   ((4,2,8),(n)):((32@tid_in_wg,1@reg,4@tid_in_wg),(0@reg))+[4:1@tid_in_wg] */
TIRX_API tirx_layout *tirx_layout_wgmma_rows(tirx_arena *a, int n);

/*
 * The wgmma A operand in registers (the RS form of tirx_gemm_async): (m, k) over tid_in_wg and
 * reg; k a multiple of 16 in [16, 256]; m 64, 128, 192 or 256 (slab q at registers q*k/2).
 * Each k16 step s is the mma.sync m16n8k16 A fragment of every warp at registers 8s..8s+7:
 * thread t = 32*w + l holds rows 16*w + l/4 and +8, columns 16*s + 2*(l%4) + {0,1} and +8.
 * Its placement is tirx_layout_wgmma_acc(m, k)'s: an accumulator cast to f16/bf16 is an A
 * operand as it stands (FlashAttention-3's P in O += P V). copy.ldmatrix fills it from a
 * shared tile at warpgroup scope.
 *   ((4,2,8),(k/8,4,2)):((32@tid_in_wg,2@reg,4@tid_in_wg),(4@reg,1@tid_in_wg,1@reg))
 */
TIRX_API tirx_layout *tirx_layout_wgmma_a(tirx_arena *a, int m, int k);

/*
 * Blackwell tensor memory (TMEM): 128 lanes (TLane) by 512 columns (TCol) of 32-bit cells per
 * CTA. A warp w reaches lanes 32 * (w % 4) to 32 * (w % 4) + 31 only.
 *
 * tirx_layout_tmem_acc: the tcgen05.mma accumulator of an m x n tile (f32 or s32: one cell per
 * element) as this CTA holds it, (m / cta_group, n) over TLane and TCol, relative to the
 * allocation's base (the PTX ISA's data path layouts D, A, F and B):
 *   m 128, cta_group 1, and m 256, cta_group 2: row i in lane i, column j in column j;
 *   m 64, cta_group 1: row i in lane 32 * (i / 16) + i % 16 (lanes 0-15 of each quarter);
 *   m 128, cta_group 2: 64 rows, row i in lane i + 64 * (j / (n/2)), column j % (n/2).
 * n is a multiple of 16 in [16, 256] (of 8 in [8, 256] for m 64); which n an instruction
 * kind accepts is the dispatch rule's check. Errors: TIRX_E_NULL_ARG, TIRX_E_INVALID_ARG
 * ("tirx_layout_tmem_acc: m is 64, expected 128 or 256 for cta_group 2").
 *
 * tirx_layout_tmem_ld: the register side of tcgen05.ld/st .shape.xnum for one warp, the
 * (rows, cols) tile of lanes and 32-bit columns the instruction moves over (laneid, reg);
 * register r of lane l holds
 *   TIRX_TMEM_32X32B  (32, num):     (l, r)
 *   TIRX_TMEM_16X64B  (16, 2 num):   (l/4 + 8 (l%2), (l/2)%2 + 2r)
 *   TIRX_TMEM_16X128B (16, 4 num):   (l/4 + 8 (r%2), l%4 + 4 (r/2))
 *   TIRX_TMEM_16X256B (16, 8 num):   (l/4 + 8 ((r/2)%2), r%2 + 2 (l%4) + 8 (r/4))
 * num is a power of two with at most 128 registers per lane (up to 128, 128, 64, 32). The
 * TMEM side is the tile at the instruction's address: row i at lane i, column j at column j.
 * A warpgroup reading an m 128 accumulator with 32x32b.xn holds it as
 * tirx_layout_warpgroup_rows(128, n). Errors: TIRX_E_NULL_ARG, TIRX_E_INVALID_ARG
 * ("tirx_layout_tmem_ld: num is 3, expected a power of two from 1 to 128").
 */
typedef enum tirx_tmem_shape {
  TIRX_TMEM_32X32B = 0,
  TIRX_TMEM_16X64B = 1,
  TIRX_TMEM_16X128B = 2,
  TIRX_TMEM_16X256B = 3
} tirx_tmem_shape;

/* The tcgen05.mma accumulator of an m x n tile in tensor memory (see above). */
TIRX_API tirx_layout *tirx_layout_tmem_acc(tirx_arena *a, int m, int n, int cta_group);

/* The registers of one warp for a tcgen05.ld or tcgen05.st of shape and num (see above). */
TIRX_API tirx_layout *tirx_layout_tmem_ld(tirx_arena *a, tirx_tmem_shape shape, int num);

/* ldmatrix/stmatrix .x1/.x2/.x4 fragments of 16-bit elements: (8*num, 8) rows of 8 matrices
 * of 8x8, over (laneid, reg): lane l holds row l/4, columns 2*(l%4)+{0,1} of each matrix. */
TIRX_API tirx_layout *tirx_layout_ldmatrix(tirx_arena *a, int num);

/* The warpgroup register layout of a (rows, cols) tile: row r on tid_in_wg r (rows <= 128),
 * the whole row in that thread's registers. */
TIRX_API tirx_layout *tirx_layout_warpgroup_rows(tirx_arena *a, int64_t rows, int64_t cols);

/*
 * A shared-memory tile for TMA and wgmma: shape (rows, cols) of elem_bytes elements, stored
 * as column blocks of swizzle_bytes/elem_bytes columns (each block rows x width, row-major),
 * the blocks one after another, with the XOR swizzle composed. cols must be a multiple of the
 * block width; swizzle_bytes 0 gives a plain row-major tile.
 */
TIRX_API tirx_layout *tirx_layout_smem_tile(tirx_arena *a, int64_t rows, int64_t cols,
                                            int elem_bytes, int swizzle_bytes);

#ifdef __cplusplus
}
#endif
#endif /* TIRX_LAYOUT_H */
