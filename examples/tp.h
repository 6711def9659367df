/*
 * A tensor-parallel (row-parallel) linear layer written with tirx layouts: Y = X W^T with the
 * reduction dimension K split over P ranks (Megatron's RowParallelLinear).
 *
 *   X [M, K]  S1   (M,P,K/P):(ldx@m,1@pid,1@m)     rank r holds X[:, r*K/P : (r+1)*K/P]
 *   W [N, K]  S1   (N,P,K/P):(ldw@m,1@pid,1@m)     rank r holds W[:, r*K/P : (r+1)*K/P]
 *   Y_r [M, N]     (M,N):(N@m,1@m)+[P:1@pid], partial sum: rank r's X_r W_r^T, an addend
 *   Y [M, N]  S0   (P,M/P,N):(1@pid,N@m,1@m)       rank r holds rows r*M/P .. (r+1)*M/P - 1
 *
 * Each rank runs the GEMM of examples/gemm.h on its shards (M x N x K/P) into Y_r, then the
 * collective that tirx chooses from the two layouts of Y (a reduce-scatter: partial sums on
 * every rank -> one row block per rank) sums the addends and leaves each rank its rows. The
 * local shapes and strides come from the dtensors (tirx_dtensor_local_shape), and every buffer
 * is checked against its dtensor (tirx_dtensor_check) before anything is launched.
 *
 * The input leading dimensions ldx and ldw are K/P rounded up to 8 elements (TMA strides are
 * multiples of 16 bytes); the GEMM's K tail is clipped by its tensor maps. Y_r and Y must be
 * dense for NCCL, so N is a multiple of 8. M and K must split evenly over P.
 *
 * Shared by examples/tp_linear.c, bench/dist.c, tests/gpu/test_dist.c and the CPU unit tests.
 */
#ifndef TIRX_EXAMPLES_TP_H
#define TIRX_EXAMPLES_TP_H

#include <tirx.h>

#include "gemm.h"

typedef struct tp_spec {
  tirx_dtype dtype; /* TIRX_BF16 or TIRX_F16 */
  int64_t m, n, k;  /* global shape: X [m, k], W [n, k], Y [m, n] */
  int nranks;       /* P >= 1; m % P == 0, k % P == 0, n % 8 == 0 */
} tp_spec;

/* A layer for one mesh size; immutable after tp_linear_create, shared by every rank's call. */
typedef struct tp_linear {
  tp_spec spec;
  int64_t m_local, k_local;  /* M/P rows of Y per rank, K/P columns of X and W per rank */
  int64_t ldx, ldw;          /* the local leading dimensions of X_r and W_r */
  tirx_dtensor *x, *w;       /* the inputs, sharded on K */
  tirx_dtensor *y_partial;   /* Y_r on every rank, partial sum */
  tirx_dtensor *y;           /* the output, sharded on rows */
  tirx_collective *reduce;   /* y_partial -> y (reduce_scatter) */
  tirx_kernel *gemm;         /* examples/gemm.h, built for (M, N, K/P) */
  /* Local shapes and strides (from the dtensors) that the tensor arguments point into. */
  int64_t x_shape[2], x_strides[2], w_shape[2], w_strides[2];
  int64_t b_shape[2], b_strides[2]; /* W_r seen as the GEMM's B: (K/P, N) with strides (1, ldw) */
  int64_t yp_shape[2], yp_strides[2], y_shape[2], y_strides[2];
} tp_linear;

/* This rank's device buffers (the sizes: tp_linear_bytes). */
typedef struct tp_buffers {
  void *x;         /* X_r: [M, K/P], row stride ldx */
  void *w;         /* W_r: [N, K/P], row stride ldw */
  void *y_partial; /* Y_r: [M, N], dense (the GEMM's output, the collective's input) */
  void *y;         /* this rank's rows of Y: [M/P, N], dense */
} tp_buffers;

typedef enum tp_buffer { TP_X = 0, TP_W = 1, TP_Y_PARTIAL = 2, TP_Y = 3 } tp_buffer;

/* Builds the dtensors, the collective and the GEMM into *out. false with the reason in err
 * (a spec that breaks a rule above, or the tirx call that failed with its message). On failure
 * *out holds nothing to destroy. */
bool tp_linear_create(const tp_spec *spec, tp_linear *out, char *err, size_t cap);

/* Frees what tp_linear_create made; a zeroed tp_linear is a no-op. */
void tp_linear_destroy(tp_linear *t);

/* Bytes of one rank's buffer `which`. */
size_t tp_linear_bytes(const tp_linear *t, tp_buffer which);

/* The six GEMM arguments (M, N, K/P, X_r, W_r as (K/P, N), Y_r) for b; they point into t. */
void tp_linear_gemm_args(const tp_linear *t, const tp_buffers *b, tirx_arg args[6]);

/* Compiles (or finds in the cache) and loads the GEMM variant that tp_linear_forward launches,
 * so that no module is loaded while a collective runs (tirx/dist.h). tirx_runtime_warmup's
 * errors. */
tirx_status tp_linear_prepare(const tp_linear *t, tirx_runtime *rt, const tp_buffers *b);

/*
 * One forward pass on this rank (comm's rank) on stream: checks comm's health and the four
 * buffers against their dtensors, then enqueues the GEMM (X_r W_r^T -> Y_r) and the reduce-
 * scatter (Y_r -> this rank's rows of Y). Asynchronous: wait with tirx_comm_synchronize. Returns
 * the first failing tirx call's status, its message in tirx_last_error().
 */
tirx_status tp_linear_forward(const tp_linear *t, tirx_runtime *rt, tirx_comm *comm,
                              const tp_buffers *b, void *stream);

/* ---- host data and the float64 reference (for the example, the test and the bench) ---- */

/* 16-bit values of dtype (f16 or bf16): float -> round to nearest even, and back. */
uint16_t tp_to16(tirx_dtype dt, float f);
double tp_from16(tirx_dtype dt, uint16_t h);

/* Fills n 16-bit values with uniform values in [-1, 1) from *seed (xorshift64*). */
void tp_random16(tirx_dtype dt, uint16_t *out, size_t n, uint64_t *seed);

/* Copies rank's shards of the global host X [M, K] and W [N, K] (row-major, dense) into b.x and
 * b.w with their padded leading dimensions (the padding is zero). */
tirx_status tp_linear_upload(const tp_linear *t, tirx_runtime *rt, int rank, const uint16_t *x,
                             const uint16_t *w, const tp_buffers *b);

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
tp_check_result tp_linear_check(const tp_linear *t, int rank, const uint16_t *x,
                                const uint16_t *w, const uint16_t *y_local, int samples,
                                uint64_t *seed);

#endif
