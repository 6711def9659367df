/* Internal pieces shared by the kernel library (src/kernels): argument checks for the ops and
 * the process-wide table of the ops' kernels. */
#ifndef TIRX_KERNELS_INTERNAL_H
#define TIRX_KERNELS_INTERNAL_H

#include <pthread.h>

#include "../core/ext.h"
#include "../core/internal.h"
#include "tirx/kernels.h"

/* ---- the op table (table.c) ---- */

/* A key: the bytes that decide which kernel an op needs (zero-filled structs, so that padding
 * compares equal). */
enum { TIRX__KERNELS_KEY_MAX = 96 };

/* Builds the kernel for key (ctx: the caller's description of it); on failure records the
 * error with tirx__error and returns its status. */
typedef tirx_status (*tirx__kernels_build_fn)(const void *ctx, tirx_kernel **out);

/*
 * The kernel for the key's len bytes (at most TIRX__KERNELS_KEY_MAX), built with build(ctx) on
 * first use: *out is a new reference the caller releases. One build per key: a thread that
 * asks while another builds the same key waits for it. A failed build is not remembered
 * (its error goes to the thread that ran it; a waiting thread builds again).
 */
tirx_status tirx__kernels_get(const void *key, size_t len, tirx__kernels_build_fn build,
                              const void *ctx, tirx_kernel **out);

/* ---- tensor argument checks (check.c); each records "<fn>: <name>..." on failure ---- */

/* t and its data non-NULL, rank as given, data 16-byte aligned. */
tirx_status tirx__check_tensor(const char *fn, const char *name, const tirx_tensor_arg *t,
                               int rank);
/* Shape equal to want (rank entries); what names the expected shape ("[rows, W]"). */
tirx_status tirx__check_shape(const char *fn, const char *name, const tirx_tensor_arg *t,
                              const int64_t *want, const char *what);
/* Strides NULL or dense row-major. */
tirx_status tirx__check_dense(const char *fn, const char *name, const tirx_tensor_arg *t);
/* dtype equal to want. */
tirx_status tirx__check_dtype(const char *fn, const char *name, const tirx_tensor_arg *t,
                              tirx_dtype want);
/* A row of n elements: rank 1 [n] or rank 2 [1, n], dense, of dtype. */
tirx_status tirx__check_row(const char *fn, const char *name, const tirx_tensor_arg *t,
                            tirx_dtype dtype, int64_t n);

/*
 * A device buffer of at least bytes for work queued on stream, owned by rt (src/jit/memory.c):
 * the same buffer for every call on that stream while it is large enough (work on one stream
 * runs in order, so consecutive uses never overlap; other streams get their own), a larger
 * one otherwise (the outgrown one is kept: work queued before may still use it). Freed by
 * tirx_runtime_destroy. Allocating is not allowed under stream capture: the first call on a
 * stream must come before its capture. Errors: tirx_runtime_alloc's, prefixed with fn.
 */
tirx_status tirx__runtime_scratch(tirx_runtime *rt, const char *fn, void *stream, size_t bytes,
                                  void **out);

/* Held by an op from its tirx__runtime_scratch call until its launches that use the buffer
 * are queued (split-K's GEMM and reduction, split decode's partials and combine): two ops on
 * one stream from two threads would otherwise interleave their launches over one buffer
 * (table.c). */
extern pthread_mutex_t tirx__kernels_scratch_lock;

/* The split-K GEMM's reduction kernel for dtype (f16, bf16) and epilogue (gemm.c), as
 * tirx_op_gemm builds it: for the tests. Parameters: M, N, S, WS, WR, WC (i32), W [WR, WC]
 * f32, C [M, N] (row stride from the argument), bias [1, N] with a bias epilogue. */
tirx_status tirx__kernels_gemm_reduce_build(tirx_dtype dtype, tirx_epilogue epilogue,
                                            tirx_kernel **out);

/* Builds b into *out (tirx_kernel_build), or records the builder's error prefixed with fn
 * ("tirx_kernels_gemm_build: ..."); destroys b either way (check.c). */
tirx_status tirx__kernels_finish(tirx_builder *b, const char *fn, tirx_kernel **out);

/* Launches k; an error's message is prefixed with fn ("tirx_op_gemm: tirx_launch: ..."). */
tirx_status tirx__kernels_launch(const char *fn, tirx_runtime *rt, const tirx_kernel *k,
                                 const tirx_arg *args, int nargs, void *stream);

#endif
