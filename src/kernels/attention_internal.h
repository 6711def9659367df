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

#endif
