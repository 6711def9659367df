/* Attention inside the kernel library: the checked call that tirx_op_attention (attention.c)
 * hands to a kernel path. */
#ifndef TIRX_KERNELS_ATTENTION_INTERNAL_H
#define TIRX_KERNELS_ATTENTION_INTERNAL_H

#include "kernels_internal.h"

/* One checked attention call. Fixed length and varlen both as rank-4 views [batch, seq, heads,
 * D] with element strides (varlen: batch 1, sequences at the host offsets cu_q/cu_k). */
typedef struct tirx__attn_call {
  tirx_dtype dtype; /* f16 or bf16 */
  int d;            /* 64, 128 or 256 */
  int h, h_kv;      /* h % h_kv == 0 */
  int batch;        /* B */
  bool causal, varlen;
  double scale;     /* > 0 (the default 1/sqrt(d) filled in) */
  int sms;          /* 1..1024 (the default 132 filled in) */
  int64_t s_q, s_k; /* fixed: the lengths; varlen: the longest of each */
  int64_t t_q, t_k; /* varlen: total rows (cu_q[B], cu_k[B]); fixed: B * s_q, B * s_k */
  const int32_t *cu_q, *cu_k;            /* varlen: host offsets, B + 1; else NULL */
  const void *cu_q_dev, *cu_k_dev;       /* varlen: the device copies; else NULL */
  void *q, *k, *v, *o;                   /* device pointers */
  int64_t q_stride[4], k_stride[4], v_stride[4], o_stride[4]; /* [b, s, h, d], d's is 1 */
  float *lse;                            /* NULL, or dense [B, H, S_q] / [H, T_q] */
} tirx__attn_call;

/* The default (FlashAttention-3 style) kernel path: builds or finds its kernel and launches. */
tirx_status tirx__attention_fast(tirx_runtime *rt, const tirx__attn_call *c, void *stream);

/* A kernel's launch arguments, default or reference path: args[0..n), whose tensors' shapes
 * point into the struct (it must stay where it is while they are used). */
typedef struct tirx__attn_args {
  tirx_arg args[24];
  int n;
  int64_t q_shape[4], k_shape[4], lse_shape[3], cu_shape[1];
} tirx__attn_args;

/* The default path's kernel of a checked call from the op table, in the schedule
 * $TIRX_ATTN_SCHEDULE names (*out: a new reference), and its launch arguments. Errors as the
 * op's. */
tirx_status tirx__attention_fast_get(const tirx__attn_call *c, tirx_kernel **out);
void tirx__attention_fast_args(const tirx__attn_call *c, tirx__attn_args *a);

/* The reference kernel (attention.c, opts->path "reference"): one thread group per query row,
 * K and V read from global memory, online softmax in f32. A new kernel for dtype (f16, bf16),
 * d (64, 128, 256), varlen and whether it writes lse; its launch parameters are attention.c's.
 * Errors: TIRX_E_NULL_ARG (out), TIRX_E_INVALID_ARG (dtype, d), the builder's. */
tirx_status tirx__attention_ref_build(tirx_dtype dtype, int d, bool varlen, bool lse,
                                      tirx_kernel **out);

/* The op's checks (attention.c): every argument of tirx_op_attention but rt, into *out (the
 * defaults filled in) and *reference (opts->path is "reference"). Errors as the op's. */
tirx_status tirx__attention_check(const tirx_attention_options *opts, const tirx_tensor_arg *q,
                                  const tirx_tensor_arg *k, const tirx_tensor_arg *v,
                                  const tirx_tensor_arg *o, const tirx_tensor_arg *lse,
                                  const tirx_attention_varlen *varlen, tirx__attn_call *out,
                                  bool *reference);

/* The reference kernel of a checked call from the op table (*out: a new reference), and its
 * launch arguments. */
tirx_status tirx__attention_ref_get(const tirx__attn_call *c, tirx_kernel **out);
void tirx__attention_ref_args(const tirx__attn_call *c, tirx__attn_args *a);

/* ---- pieces the attention kernels share (attention_parts.c; builder code) ---- */

/* A (rows, d) 16-bit tile in shared memory, swz-byte swizzled (tirx_layout_smem_tile), and
 * in *view its [1, rows, 1, d] view (the TMA box of a [batch, seq, heads, d] tensor). */
tirx_tensor *tirx__attn_tile(tirx_builder *b, const char *name, tirx_dtype dt, int64_t rows,
                             int64_t d, int swz, tirx_tensor **view);

/* The same tile and view over base's bytes from its start (allocating nothing): a second use
 * of a buffer whose first use is over, ordered by the caller's barriers. */
tirx_tensor *tirx__attn_tile_over(tirx_builder *b, const char *name, tirx_tensor *base,
                                  tirx_dtype dt, int64_t rows, int64_t d, int swz,
                                  tirx_tensor **view);

/* The (rows, cols) region of a 2-D tensor at (r0, c0). */
tirx_region *tirx__attn_rect(tirx_builder *b, tirx_tensor *t, tirx_expr *r0, tirx_expr *c0,
                             int64_t rows, int64_t cols);

/* Consumer warpgroup c's own named barrier (c 0 or 1: barrier 1 + c, its 128 threads). */
void tirx__attn_wg_barrier(tirx_builder *b, tirx_expr *c);

/* Column 0 of a per-row tensor of one warpgroup's 64 rows: its (64, 1) values. */
tirx_region *tirx__attn_col0(tirx_builder *b, tirx_tensor *t);

/* The online softmax's state of one warpgroup's 64 query rows (tirx_layout_wgmma_rows, one
 * value a row): the running max m (Mrun; Mold its previous value, NegMs -m c), the running sum
 * l (Lrun; Lx a block's row sum, then the log-sum-exp), the rescale factor a (Alpha). */
typedef struct tirx__attn_rows {
  tirx_tensor *Mrun, *Mold, *NegMs; /* [64, bn] */
  tirx_tensor *Lrun, *Lx, *Alpha;   /* [64, d] */
} tirx__attn_rows;

/* Allocates the state (inside the consumer warpgroup's team) and sets m = -1e30, l = 0. */
void tirx__attn_rows_new(tirx_builder *b, tirx__attn_rows *r, int bn, int d);

/* One block's step on its (masked) scores S [64, bn] f32 (wgmma accumulator), inside the
 * warpgroup's team: m' = max(m, rowmax S), a = exp2((m - m') c), S = exp2(S c - m' c),
 * l = l a + rowsum S, m = m' (c = c_log2 = scale log2 e). */
void tirx__attn_softmax_step(tirx_builder *b, const tirx__attn_rows *r, tirx_region *S,
                             tirx_expr *c_log2);

/* Before the block's P V GEMM: O = O a, and P = S as 16 bits (the RS A fragment). */
void tirx__attn_rescale_pack(tirx_builder *b, const tirx__attn_rows *r, tirx_tensor *O,
                             tirx_tensor *P, tirx_tensor *S);

/* The epilogue's O = O / l (0 for a row without keys; Alpha is overwritten). */
void tirx__attn_normalize(tirx_builder *b, const tirx__attn_rows *r, tirx_tensor *O);

/* Lx = m c ln 2 + ln l: the rows' natural log-sum-exp of the scaled scores. */
void tirx__attn_lse(tirx_builder *b, const tirx__attn_rows *r, tirx_expr *c_log2);

#endif
