/* The pieces the attention kernels share (attention_internal.h): the shared tile with its TMA
 * view, 2-D regions, the consumer warpgroups' own named barriers, and the online softmax's row
 * state and steps of one warpgroup's 64 query rows. Builder code, used by the prefill kernel
 * (attention_fast.c) and the decode kernel's tensor-core path (decode.c). */
#include "attention_internal.h"

#include <math.h>
#include <stdio.h>

enum { WM = 64 }; /* one consumer warpgroup's query rows */

static tirx_expr *I(tirx_builder *b, int64_t v) { return tirx_int(b, v); }

static tirx_region *col0(tirx_builder *b, tirx_tensor *t) { return tirx__attn_col0(b, t); }

void tirx__attn_wg_barrier(tirx_builder *b, tirx_expr *c) {
  for (int q = 0; q < 2; q++) {
    tirx_if_begin(b, tirx_eq(b, c, I(b, q)));
    tirx_named_barrier_sync(b, 1 + q, 128);
    tirx_if_end(b);
  }
}

tirx_region *tirx__attn_rect(tirx_builder *b, tirx_tensor *t, tirx_expr *r0, tirx_expr *c0,
                             int64_t rows, int64_t cols) {
  return tirx_region_new(b, t, TIRX_EXPRS(r0, c0), (int64_t[]){rows, cols});
}

tirx_region *tirx__attn_col0(tirx_builder *b, tirx_tensor *t) {
  return tirx__attn_rect(b, t, I(b, 0), I(b, 0), WM, 1);
}

/* The [1, rows, 1, d] view "<name>_box" of the (rows, d) tile t. */
static tirx_tensor *box_view(tirx_builder *b, tirx_tensor *t, const char *name, tirx_dtype dt,
                             int64_t rows, int64_t d, int swz) {
  tirx_arena *ar = tirx_builder_arena(b);
  char vname[32];
  snprintf(vname, sizeof vname, "%s_box", name);
  return tirx_alloc_shared_view(b, vname, t, 0, dt, 4, (int64_t[]){1, rows, 1, d},
                                tirx_layout_group(ar, tirx_layout_smem_tile(ar, rows, d, 2, swz),
                                                  4, (int64_t[]){1, rows, 1, d}));
}

tirx_tensor *tirx__attn_tile(tirx_builder *b, const char *name, tirx_dtype dt, int64_t rows,
                             int64_t d, int swz, tirx_tensor **view) {
  tirx_arena *ar = tirx_builder_arena(b);
  tirx_tensor *t = tirx_alloc_shared(b, name, dt, TIRX_DIMS(rows, d),
                                     tirx_layout_smem_tile(ar, rows, d, 2, swz));
  *view = box_view(b, t, name, dt, rows, d, swz);
  return t;
}

tirx_tensor *tirx__attn_tile_over(tirx_builder *b, const char *name, tirx_tensor *base,
                                  tirx_dtype dt, int64_t rows, int64_t d, int swz,
                                  tirx_tensor **view) {
  tirx_arena *ar = tirx_builder_arena(b);
  tirx_tensor *t = tirx_alloc_shared_view(b, name, base, 0, dt, 2, (int64_t[]){rows, d},
                                          tirx_layout_smem_tile(ar, rows, d, 2, swz));
  *view = box_view(b, t, name, dt, rows, d, swz);
  return t;
}

void tirx__attn_softmax_step(tirx_builder *b, const tirx__attn_rows *r, tirx_region *S,
                             tirx_expr *c_log2) {
  tirx_copy(b, col0(b, r->Mold), col0(b, r->Mrun), NULL);
  tirx_reduce(b, col0(b, r->Mrun), S, TIRX_OP_MAX, 0x2, true, NULL);
  tirx_region *c = tirx_broadcast(b, c_log2);
  tirx_binary(b, col0(b, r->Alpha), TIRX_OP_SUB, col0(b, r->Mold), col0(b, r->Mrun), NULL);
  tirx_binary(b, col0(b, r->Alpha), TIRX_OP_MUL, col0(b, r->Alpha), c, NULL);
  tirx_unary(b, col0(b, r->Alpha), TIRX_OP_EXP2_APPROX, col0(b, r->Alpha), NULL);
  tirx_binary(b, col0(b, r->NegMs), TIRX_OP_MUL, col0(b, r->Mrun),
              tirx_broadcast(b, tirx_neg(b, c_log2)), NULL);
  tirx_ternary(b, S, TIRX_OP_FMA, S, c, tirx_whole(b, r->NegMs), NULL);
  tirx_unary(b, S, TIRX_OP_EXP2_APPROX, S, NULL);
  tirx_reduce(b, col0(b, r->Lx), S, TIRX_OP_SUM, 0x2, false, NULL);
  tirx_ternary(b, col0(b, r->Lrun), TIRX_OP_FMA, col0(b, r->Lrun), col0(b, r->Alpha), col0(b, r->Lx), NULL);
}

void tirx__attn_rescale_pack(tirx_builder *b, const tirx__attn_rows *r, tirx_tensor *O,
                             tirx_tensor *P, tirx_tensor *S) {
  tirx_binary(b, tirx_whole(b, O), TIRX_OP_MUL, tirx_whole(b, O), tirx_whole(b, r->Alpha), NULL);
  tirx_cast_region(b, tirx_whole(b, P), tirx_whole(b, S), NULL);
}

/* O = O / l, 0 for a row that saw no key (l = 0). */
void tirx__attn_normalize(tirx_builder *b, const tirx__attn_rows *r, tirx_tensor *O) {
  tirx_binary(b, col0(b, r->Alpha), TIRX_OP_MAX, col0(b, r->Lrun), tirx_broadcast(b, tirx_float(b, 1e-30, TIRX_F32)), NULL);
  tirx_binary(b, col0(b, r->Alpha), TIRX_OP_DIV, tirx_broadcast(b, tirx_float(b, 1.0, TIRX_F32)), col0(b, r->Alpha), NULL);
  tirx_binary(b, tirx_whole(b, O), TIRX_OP_MUL, tirx_whole(b, O), tirx_whole(b, r->Alpha), NULL);
}

/* Lx = m scale + ln l, the natural log-sum-exp of the scaled scores (scale = c_log2 ln 2). */
void tirx__attn_lse(tirx_builder *b, const tirx__attn_rows *r, tirx_expr *c_log2) {
  tirx_unary(b, col0(b, r->Lx), TIRX_OP_LOG, col0(b, r->Lrun), NULL);
  tirx_ternary(b, col0(b, r->Lx), TIRX_OP_FMA, col0(b, r->Mrun),
               tirx_broadcast(b, tirx_mul(b, c_log2, tirx_float(b, M_LN2, TIRX_F32))), col0(b, r->Lx), NULL);
}

void tirx__attn_rows_new(tirx_builder *b, tirx__attn_rows *r, int bn, int d) {
  tirx_arena *ar = tirx_builder_arena(b);
  const tirx_layout *rows_n = tirx_layout_wgmma_rows(ar, bn), *rows_d = tirx_layout_wgmma_rows(ar, d);
  r->Mrun = tirx_alloc_local(b, "Mrun", TIRX_F32, TIRX_DIMS(WM, bn), rows_n);
  r->Mold = tirx_alloc_local(b, "Mold", TIRX_F32, TIRX_DIMS(WM, bn), rows_n);
  r->NegMs = tirx_alloc_local(b, "NegMs", TIRX_F32, TIRX_DIMS(WM, bn), rows_n);
  r->Lrun = tirx_alloc_local(b, "Lrun", TIRX_F32, TIRX_DIMS(WM, d), rows_d);
  r->Lx = tirx_alloc_local(b, "Lx", TIRX_F32, TIRX_DIMS(WM, d), rows_d);
  r->Alpha = tirx_alloc_local(b, "Alpha", TIRX_F32, TIRX_DIMS(WM, d), rows_d);
  /* m starts finite (-1e30): a row whose keys are all masked then gives exp2(-inf) = 0, not
   * the NaN of -inf - -inf, with no check in the loop */
  tirx_fill(b, col0(b, r->Mrun), tirx_float(b, -1e30, TIRX_F32), NULL);
  tirx_fill(b, col0(b, r->Lrun), tirx_float(b, 0.0, TIRX_F32), NULL);
}
