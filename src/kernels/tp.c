/* A tensor-parallel linear layer from distributed layouts, a GEMM and a reduce-scatter
 * (tirx/kernels.h). */
#include "kernels_internal.h"

#include <stdio.h>
#include <string.h>

static const char CREATE[] = "tirx_kernels_tp_linear_create";

typedef tirx_tp_spec tp_spec;
typedef tirx_tp_linear tp_linear;

/* A dtensor of t's dtype and global shape (rows, cols) from the layout's text. */
/* A dtensor of the spec's dtype and global shape (rows, cols) from the layout's text. */
static tirx_status dtensor(const tp_spec *s, int64_t rows, int64_t cols, const char *text,
                           tirx_partial partial, tirx_dtensor **out) {
  tirx_arena *a = tirx_arena_create();
  tirx_layout *l = a ? tirx_layout_parse(a, text) : NULL;
  tirx_status st = l ? tirx_dtensor_create(s->dtype, 2, (int64_t[]){rows, cols}, l, s->nranks,
                                           partial, out)
                     : tirx_last_status();
  if (st != TIRX_OK)
    tirx__error(st, "%s: layout %s: %s", CREATE, text, tirx_last_error());
  tirx_arena_destroy(a);
  return st;
}

static tirx_status local_shape(const tirx_dtensor *t, int64_t shape[2], int64_t strides[2]) {
  tirx_status st = tirx_dtensor_local_shape(t, shape, strides, 2);
  if (st != TIRX_OK)
    tirx__error(st, "%s: %s", CREATE, tirx_last_error());
  return st;
}

static tirx_status check_spec(const tp_spec *s) {
  if (s->dtype != TIRX_BF16 && s->dtype != TIRX_F16)
    return tirx__error(TIRX_E_INVALID_ARG, "%s: dtype is %s, expected bf16 or f16", CREATE,
                       tirx_dtype_name(s->dtype) ? tirx_dtype_name(s->dtype) : "invalid");
  if (s->nranks < 1 || s->nranks > TIRX_DIST_MAX_RANKS)
    return tirx__error(TIRX_E_INVALID_ARG, "%s: nranks is %d, expected 1 to %d", CREATE,
                       s->nranks, TIRX_DIST_MAX_RANKS);
  const int64_t P = s->nranks;
  if (s->m < 1 || s->n < 1 || s->k < 1 || s->m > INT32_MAX || s->n > INT32_MAX ||
      s->k > INT32_MAX)
    return tirx__error(TIRX_E_INVALID_ARG,
                       "%s: m, n, k are %lld, %lld, %lld, expected 1 to 2^31-1", CREATE,
                       (long long)s->m, (long long)s->n, (long long)s->k);
  if (s->m % P || s->k % P)
    return tirx__error(TIRX_E_INVALID_ARG,
                       "%s: m = %lld and k = %lld must be multiples of nranks = %lld (the rows "
                       "of Y and the columns of X and W split evenly)",
                       CREATE, (long long)s->m, (long long)s->k, (long long)P);
  if (s->n % 8)
    return tirx__error(TIRX_E_INVALID_ARG,
                       "%s: n is %lld, expected a multiple of 8 (Y_r is dense for NCCL and its "
                       "rows are TMA strides of 16 bytes)", CREATE, (long long)s->n);
  if (s->gemm.epilogue != TIRX_EPILOGUE_NONE)
    return tirx__error(TIRX_E_INVALID_ARG,
                       "%s: spec->gemm.epilogue is %d, expected TIRX_EPILOGUE_NONE (a partial sum "
                       "takes no bias)", CREATE, (int)s->gemm.epilogue);
  if (s->gemm.path == TIRX_GEMM_PATH_GEMV || s->gemm.path == TIRX_GEMM_PATH_WGMMA_SPLITK)
    return tirx__error(TIRX_E_INVALID_ARG,
                       "%s: spec->gemm.path is %d, expected TIRX_GEMM_PATH_AUTO or "
                       "TIRX_GEMM_PATH_WGMMA (the GEMM arguments are the wgmma kernel's)",
                       CREATE, (int)s->gemm.path);
  return TIRX_OK;
}

tirx_status tirx_kernels_tp_linear_create(const tp_spec *s, tp_linear *out) {
  if (!out)
    return tirx__error(TIRX_E_NULL_ARG, "%s: out is NULL", CREATE);
  memset(out, 0, sizeof *out);
  if (!s)
    return tirx__error(TIRX_E_NULL_ARG, "%s: spec is NULL", CREATE);
  tp_spec copy;
  if (tirx__ext_in(CREATE, "spec", &tirx__ext_tp_spec, s, &copy) != TIRX_OK ||
      tirx__ext_in(CREATE, "spec->gemm.", &tirx__ext_gemm_options, &s->gemm, &copy.gemm) !=
          TIRX_OK)
    return TIRX_E_INVALID_ARG;
  s = &copy;
  tirx_status st = check_spec(s);
  if (st != TIRX_OK)
    return st;
  const int64_t P = s->nranks;
  tp_linear *t = out;
  t->spec = *s;
  t->m_local = s->m / P;
  t->k_local = s->k / P;
  t->ldx = t->ldw = (t->k_local + 7) / 8 * 8;

  char text[256];
  snprintf(text, sizeof text, "(%lld,%lld,%lld):(%lld@m,1@pid,1@m)", (long long)s->m,
           (long long)P, (long long)t->k_local, (long long)t->ldx);
  if ((st = dtensor(s, s->m, s->k, text, TIRX_PARTIAL_NONE, &t->x)) != TIRX_OK) goto fail;
  snprintf(text, sizeof text, "(%lld,%lld,%lld):(%lld@m,1@pid,1@m)", (long long)s->n,
           (long long)P, (long long)t->k_local, (long long)t->ldw);
  if ((st = dtensor(s, s->n, s->k, text, TIRX_PARTIAL_NONE, &t->w)) != TIRX_OK) goto fail;
  snprintf(text, sizeof text, "(%lld,%lld):(%lld@m,1@m)+[%lld:1@pid]", (long long)s->m,
           (long long)s->n, (long long)s->n, (long long)P);
  if ((st = dtensor(s, s->m, s->n, text, TIRX_PARTIAL_SUM, &t->y_partial)) != TIRX_OK) goto fail;
  snprintf(text, sizeof text, "(%lld,%lld,%lld):(1@pid,%lld@m,1@m)", (long long)P,
           (long long)t->m_local, (long long)s->n, (long long)s->n);
  if ((st = dtensor(s, s->m, s->n, text, TIRX_PARTIAL_NONE, &t->y)) != TIRX_OK) goto fail;

  /* The reduce-scatter, named: with one rank an all-reduce would be legal too (and first in
   * the table); naming the rule keeps the NCCL call the same at every mesh size. */
  if ((st = tirx_collective_create(t->y_partial, t->y, "reduce_scatter", &t->reduce)) != TIRX_OK) {
    tirx__error(st, "%s: %s", CREATE, tirx_last_error());
    goto fail;
  }
  if ((st = local_shape(t->x, t->x_shape, t->x_strides)) != TIRX_OK ||
      (st = local_shape(t->w, t->w_shape, t->w_strides)) != TIRX_OK ||
      (st = local_shape(t->y_partial, t->yp_shape, t->yp_strides)) != TIRX_OK ||
      (st = local_shape(t->y, t->y_shape, t->y_strides)) != TIRX_OK)
    goto fail;
  /* W_r [N, K/P] is the GEMM's B seen as its transpose: (K/P, N), K contiguous. */
  t->b_shape[0] = t->w_shape[1], t->b_shape[1] = t->w_shape[0];
  t->b_strides[0] = t->w_strides[1], t->b_strides[1] = t->w_strides[0];

  if ((st = tirx_kernels_gemm_build(&s->gemm, s->dtype, s->m, s->n, t->k_local, &t->gemm)) !=
      TIRX_OK) {
    tirx__error(st, "%s: %s", CREATE, tirx_last_error());
    goto fail;
  }
  return TIRX_OK;
fail:
  tirx_kernels_tp_linear_destroy(t);
  return st;
}

void tirx_kernels_tp_linear_destroy(tp_linear *t) {
  if (!t) return;
  tirx_kernel_release(t->gemm);
  tirx_collective_destroy(t->reduce);
  tirx_dtensor_destroy(t->x);
  tirx_dtensor_destroy(t->w);
  tirx_dtensor_destroy(t->y_partial);
  tirx_dtensor_destroy(t->y);
  memset(t, 0, sizeof *t);
}

size_t tirx_kernels_tp_linear_bytes(const tp_linear *t, tirx_tp_buffer which) {
  if (!t)
    return 0;
  size_t e = (size_t)tirx_dtype_size(t->spec.dtype);
  switch (which) {
  /* rows times the leading dimension (a dtensor reports stride 1 for a dimension of one row) */
  case TIRX_TP_BUFFER_X: return (size_t)(t->spec.m * t->ldx) * e;
  case TIRX_TP_BUFFER_W: return (size_t)(t->spec.n * t->ldw) * e;
  case TIRX_TP_BUFFER_Y_PARTIAL: return (size_t)tirx_dtensor_local_size(t->y_partial) * e;
  case TIRX_TP_BUFFER_Y: return (size_t)tirx_dtensor_local_size(t->y) * e;
  }
  return 0;
}

void tirx_kernels_tp_linear_gemm_args(const tp_linear *t, const tirx_tp_buffers *b,
                                      tirx_arg args[6]) {
  if (!t || !b || !args) {
    /* zeroed arguments (i32 0s) fail a launch's checks instead of pointing anywhere */
    if (args) memset(args, 0, 6 * sizeof *args);
    tirx__error(TIRX_E_NULL_ARG, "tirx_kernels_tp_linear_gemm_args: %s is NULL",
                !t ? "t" : !b ? "b" : "args");
    return;
  }
  tirx_dtype dt = t->spec.dtype;
  args[0] = tirx_arg_i32((int32_t)t->spec.m);
  args[1] = tirx_arg_i32((int32_t)t->spec.n);
  args[2] = tirx_arg_i32((int32_t)t->k_local);
  args[3] = tirx_arg_tensor(b->x, dt, 2, t->x_shape, t->x_strides);
  args[4] = tirx_arg_tensor(b->w, dt, 2, t->b_shape, t->b_strides);
  args[5] = tirx_arg_tensor(b->y_partial, dt, 2, t->yp_shape, t->yp_strides);
}

tirx_status tirx_kernels_tp_linear_prepare(const tp_linear *t, tirx_runtime *rt,
                                           const tirx_tp_buffers *b) {
  if (!t || !b)
    return tirx__error(TIRX_E_NULL_ARG, "tirx_kernels_tp_linear_prepare: %s is NULL",
                       !t ? "t" : "b");
  tirx_arg args[6];
  tirx_kernels_tp_linear_gemm_args(t, b, args);
  const tirx_arg *lists[1] = {args};
  int counts[1] = {6};
  return tirx_runtime_warmup(rt, t->gemm, lists, counts, 1);
}

tirx_status tirx_op_tp_linear(tirx_runtime *rt, const tp_linear *t, tirx_comm *comm,
                              const tirx_tp_buffers *b, void *stream) {
  if (!rt || !t || !comm || !b)
    return tirx__error(TIRX_E_NULL_ARG, "tirx_op_tp_linear: %s is NULL",
                       !rt ? "rt" : !t ? "t" : !comm ? "comm" : "b");
  tirx_status st = tirx_comm_health(comm);
  if (st != TIRX_OK) return st;
  int rank = tirx_comm_rank(comm);
  tirx_dtype dt = t->spec.dtype;
  tirx_tensor_arg x = {b->x, dt, 2, t->x_shape, t->x_strides};
  tirx_tensor_arg w = {b->w, dt, 2, t->w_shape, t->w_strides};
  tirx_tensor_arg yp = {b->y_partial, dt, 2, t->yp_shape, t->yp_strides};
  tirx_tensor_arg y = {b->y, dt, 2, t->y_shape, t->y_strides};
  if ((st = tirx_dtensor_check(t->x, rank, &x)) != TIRX_OK ||
      (st = tirx_dtensor_check(t->w, rank, &w)) != TIRX_OK ||
      (st = tirx_dtensor_check(t->y_partial, rank, &yp)) != TIRX_OK ||
      (st = tirx_dtensor_check(t->y, rank, &y)) != TIRX_OK)
    return st;
  tirx_arg args[6];
  tirx_kernels_tp_linear_gemm_args(t, b, args);
  if ((st = tirx_launch(rt, t->gemm, args, 6, stream)) != TIRX_OK) return st;
  return tirx_collective_run(t->reduce, comm, &yp, &y, stream);
}
