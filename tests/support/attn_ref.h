/*
 * The float64 CPU reference of attention (tirx_op_attention, tirx/kernels.h) for the tests:
 * fixed length and varlen, causal (bottom-right aligned), grouped-query heads, lse; and a
 * checker that compares a device result with it on a set of rows.
 */
#ifndef TIRX_SUPPORT_ATTN_REF_H
#define TIRX_SUPPORT_ATTN_REF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The problem. Fixed length: batch sequences of s_q queries and s_k keys. Varlen: batch
 * sequences at the offsets cu_q / cu_k (batch + 1 entries each, from 0). */
typedef struct attn_problem {
  int batch, h, h_kv, d;
  bool causal;
  double scale;           /* 0: 1 / sqrt(d) */
  int64_t s_q, s_k;       /* fixed length */
  const int32_t *cu_q, *cu_k; /* varlen when cu_q is not NULL */
} attn_problem;

/* A tensor of floats on the host, [B, S, H, D] (fixed) or [T, H, D] (varlen) with element
 * strides sb (unused for varlen), ss, sh; the innermost stride is 1. */
typedef struct attn_view {
  const float *p;
  int64_t sb, ss, sh;
} attn_view;

/* Query rows and key count of sequence b. */
int64_t attn_len_q(const attn_problem *p, int b);
int64_t attn_len_k(const attn_problem *p, int b);

/*
 * Row i of sequence b, head h in float64: o[0..d) and *lse (natural log of the sum of
 * exp(scale q.k_j) over the keys the row sees; -inf, and o = 0, when it sees none). The row
 * sees keys j < len_k, and under causal j <= i + len_k - len_q.
 */
void attn_ref_row(const attn_problem *p, attn_view q, attn_view k, attn_view v, int b, int h,
                  int64_t i, double *o, double *lse);

/* What a check found. */
typedef struct attn_report {
  int64_t rows;        /* rows compared */
  int64_t wrong;       /* elements (o and lse) out of tolerance */
  int64_t unwritten;   /* NaN left anywhere in o or lse (they were poisoned before the launch) */
  double worst_o;      /* largest |o error| / tolerance */
  double worst_lse;    /* largest |lse error| / tolerance */
  char first[512];     /* the first wrong element, "" when none */
} attn_report;

/*
 * Compares the device's o (as floats, the layout of view o) and lse (floats, dense [B, H, S_q]
 * or [H, T_q]; NULL: not checked) with the reference on: every row of a sequence of at most
 * `all_rows` rows, else `sample` random rows (rng: the caller's xorshift64 state) plus the
 * first 8 and the last. Every element of o and lse is also scanned for NaN (unwritten).
 * Tolerances: o: u (|want| + mag) + 1e-5, where u is the output dtype's rounding (2^-8 bf16,
 * 2^-11 f16; bf16 == true) and mag = sum_j p_j |v_j| (16-bit P in O += P V may err by u of
 * each term); lse: 1e-4 + 1e-5 |want| (f32 arithmetic), and -inf exactly for a row that sees
 * no key.
 */
void attn_ref_check(const attn_problem *p, attn_view q, attn_view k, attn_view v, attn_view o,
                    const float *lse, bool bf16, int64_t all_rows, int sample, uint64_t *rng,
                    attn_report *r);

#endif
