/* Attention inside the kernel library: the checked call that tirx_op_attention (attention.c)
 * hands to a kernel path. */
#ifndef TIRX_KERNELS_ATTENTION_INTERNAL_H
#define TIRX_KERNELS_ATTENTION_INTERNAL_H

#include "kernels_internal.h"

/* One checked attention call. Fixed length and varlen both as rank-4 views [batch, seq, heads,
 * D] with element strides (varlen: batch 1, sequences at the host offsets cu_q/cu_k). */
typedef struct tirx__attn_call {
  tirx_dtype dtype; /* f16 or bf16 */
  int d;            /* 64 or 128 */
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

/* The reference kernel (attention.c, opts->path "reference"): one thread group per query row,
 * K and V read from global memory, online softmax in f32. A new kernel for dtype (f16, bf16),
 * d (64, 128), varlen and whether it writes lse; its launch parameters are attention.c's.
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
 * launch arguments (they point into *a, which must stay where it is while they are used). */
typedef struct tirx__attn_ref_args {
  tirx_arg args[16];
  int n;
  int64_t q_shape[4], k_shape[4], lse_shape[3], cu_shape[1];
} tirx__attn_ref_args;
tirx_status tirx__attention_ref_get(const tirx__attn_call *c, tirx_kernel **out);
void tirx__attention_ref_args(const tirx__attn_call *c, tirx__attn_ref_args *a);

#endif
