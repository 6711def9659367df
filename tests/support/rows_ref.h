/*
 * Shorthands over the row kernels of tirx/kernels.h for the tests and the benchmark: a build
 * that copies the error into a buffer, the plan's fields, and the bytes a launch must move.
 */
#ifndef TIRX_SUPPORT_ROWS_REF_H
#define TIRX_SUPPORT_ROWS_REF_H

#include <stdio.h>
#include <tirx.h>

/* tirx_kernels_row_build with o (NULL: defaults) and scalar; NULL with the message in err. */
static inline tirx_kernel *row_kernel(tirx_row_op op, const tirx_row_options *o, tirx_dtype dt,
                                      int64_t width, bool scalar, char *err, size_t cap) {
  tirx_row_options opts = {0};
  if (o)
    opts = *o;
  opts.scalar = scalar;
  tirx_kernel *k = NULL;
  if (tirx_kernels_row_build(op, &opts, dt, width, &k) != TIRX_OK && err)
    snprintf(err, cap, "%s", tirx_last_error());
  return k;
}

/* tirx_kernels_row_plan (the current version of the plan); all zero on an error. */
static inline tirx_row_plan row_plan(tirx_row_op op, const tirx_row_options *o, tirx_dtype dt,
                                     int64_t width) {
  tirx_row_plan p = {.size = sizeof p};
  if (tirx_kernels_row_plan(op, o, dt, width, &p) != TIRX_OK)
    p = (tirx_row_plan){0};
  return p;
}

/* The threads per row of the one-CTA-per-row kernels (layernorm's choice: vectors nearest 4). */
static inline int row_threads(const tirx_row_options *o, tirx_dtype dt, int64_t width) {
  tirx_row_options opts = {0};
  if (o)
    opts = *o;
  opts.cluster = 0;
  return row_plan(TIRX_ROW_OP_LAYERNORM, &opts, dt, width).threads;
}

/* Bytes a launch over rows x width must move at least (inputs read once, outputs written
 * once; the weight rows are not counted). */
static inline double row_bytes(tirx_row_op op, tirx_dtype dt, int64_t rows, int64_t width) {
  double e = (double)rows * (double)width * tirx_dtype_size(dt);
  switch (op) {
  case TIRX_ROW_OP_ADD_RMSNORM: return 4 * e;
  case TIRX_ROW_OP_SUM:
  case TIRX_ROW_OP_MAX: return e + 4.0 * (double)rows;
  case TIRX_ROW_OP_SILU_MUL: return 3 * e;
  default: return 2 * e;
  }
}

#endif
