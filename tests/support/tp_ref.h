/*
 * Host data and the float64 reference for the tensor-parallel linear layer of tirx/kernels.h
 * (tirx_tp_linear): shared by examples/tp_linear.c, bench/dist.c, tests/gpu/test_dist.c and
 * the CPU unit tests.
 */
#ifndef TIRX_SUPPORT_TP_REF_H
#define TIRX_SUPPORT_TP_REF_H

#include <tirx.h>
#include <tirx/kernels.h>

/* 16-bit values of dtype (f16 or bf16): float -> round to nearest even, and back. */
uint16_t tp_to16(tirx_dtype dt, float f);
double tp_from16(tirx_dtype dt, uint16_t h);

/* Fills n 16-bit values with uniform values in [-1, 1) from *seed (xorshift64*). */
void tp_random16(tirx_dtype dt, uint16_t *out, size_t n, uint64_t *seed);

/* Copies rank's shards of the global host X [M, K] and W [N, K] (row-major, dense) into b.x and
 * b.w with their padded leading dimensions (the padding is zero). */
tirx_status tp_linear_upload(const tirx_tp_linear *t, tirx_runtime *rt, int rank,
                             const uint16_t *x, const uint16_t *w, const tirx_tp_buffers *b);

/* The outcome of tp_linear_check. */
typedef struct tp_check_result {
  int samples, wrong;
  double max_rel_err;  /* |got - want| / (|want| + 1e-3 (sum |x w| + 1)), NaN counted as 1e9 */
  char first[160];     /* the first wrong element, "" when none */
} tp_check_result;

/*
 * Checks rank's rows y_local ([M/P, N] as copied back) against the float64 reference
 * sum_q X[i, q] W[j, q] on `samples` elements drawn from *seed plus the four corners of the
 * block. Tolerance: the output's rounding of each rank's addend and of each sum NCCL forms
 * (P ulp of sum_r |Y_r[i, j]|) plus f32 accumulation (1e-5 of sum |x w|).
 */
tp_check_result tp_linear_check(const tirx_tp_linear *t, int rank, const uint16_t *x,
                                const uint16_t *w, const uint16_t *y_local, int samples,
                                uint64_t *seed);

#endif
