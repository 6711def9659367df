/* A tensor-parallel linear layer from distributed layouts, a GEMM and a reduce-scatter (tp.h). */
#include "tp.h"

#include "example_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A dtensor of t's dtype and global shape (rows, cols) from the layout's text. */
static tirx_dtensor *dtensor(const tp_spec *s, int64_t rows, int64_t cols, const char *text,
                             tirx_partial partial, char *err, size_t cap) {
  tirx_arena *a = tirx_arena_create();
  tirx_layout *l = a ? tirx_layout_parse(a, text) : NULL;
  tirx_dtensor *t = NULL;
  if (!l || tirx_dtensor_create(s->dtype, 2, (int64_t[]){rows, cols}, l, s->nranks, partial,
                                &t) != TIRX_OK)
    snprintf(err, cap, "tp_linear_create: layout %s: %s", text, tirx_last_error());
  tirx_arena_destroy(a);
  return t;
}

static bool local_shape(const tirx_dtensor *t, int64_t shape[2], int64_t strides[2], char *err,
                        size_t cap) {
  if (tirx_dtensor_local_shape(t, shape, strides, 2) == TIRX_OK) return true;
  snprintf(err, cap, "tp_linear_create: %s", tirx_last_error());
  return false;
}

bool tp_linear_create(const tp_spec *s, tp_linear *out, char *err, size_t cap) {
  if (!out) {
    snprintf(err, cap, "tp_linear_create: out is NULL");
    return false;
  }
  memset(out, 0, sizeof *out);
  if (!s) {
    snprintf(err, cap, "tp_linear_create: spec is NULL");
    return false;
  }
  if (s->dtype != TIRX_BF16 && s->dtype != TIRX_F16) {
    snprintf(err, cap, "tp_linear_create: dtype is %s, expected bf16 or f16",
             tirx_dtype_name(s->dtype) ? tirx_dtype_name(s->dtype) : "invalid");
    return false;
  }
  if (s->nranks < 1 || s->nranks > TIRX_DIST_MAX_RANKS) {
    snprintf(err, cap, "tp_linear_create: nranks is %d, expected 1 to %d", s->nranks,
             TIRX_DIST_MAX_RANKS);
    return false;
  }
  const int64_t P = s->nranks;
  if (s->m < 1 || s->n < 1 || s->k < 1 || s->m > INT32_MAX || s->n > INT32_MAX ||
      s->k > INT32_MAX) {
    snprintf(err, cap, "tp_linear_create: m, n, k are %lld, %lld, %lld, expected 1 to 2^31-1",
             (long long)s->m, (long long)s->n, (long long)s->k);
    return false;
  }
  if (s->m % P || s->k % P) {
    snprintf(err, cap, "tp_linear_create: m = %lld and k = %lld must be multiples of nranks = "
             "%lld (the rows of Y and the columns of X and W split evenly)",
             (long long)s->m, (long long)s->k, (long long)P);
    return false;
  }
  if (s->n % 8) {
    snprintf(err, cap, "tp_linear_create: n is %lld, expected a multiple of 8 (Y_r is dense "
             "for NCCL and its rows are TMA strides of 16 bytes)", (long long)s->n);
    return false;
  }
  tp_linear *t = out;
  t->spec = *s;
  t->m_local = s->m / P;
  t->k_local = s->k / P;
  t->ldx = t->ldw = (t->k_local + 7) / 8 * 8;

  char text[256];
  snprintf(text, sizeof text, "(%lld,%lld,%lld):(%lld@m,1@pid,1@m)", (long long)s->m,
           (long long)P, (long long)t->k_local, (long long)t->ldx);
  if (!(t->x = dtensor(s, s->m, s->k, text, TIRX_PARTIAL_NONE, err, cap))) goto fail;
  snprintf(text, sizeof text, "(%lld,%lld,%lld):(%lld@m,1@pid,1@m)", (long long)s->n,
           (long long)P, (long long)t->k_local, (long long)t->ldw);
  if (!(t->w = dtensor(s, s->n, s->k, text, TIRX_PARTIAL_NONE, err, cap))) goto fail;
  snprintf(text, sizeof text, "(%lld,%lld):(%lld@m,1@m)+[%lld:1@pid]", (long long)s->m,
           (long long)s->n, (long long)s->n, (long long)P);
  if (!(t->y_partial = dtensor(s, s->m, s->n, text, TIRX_PARTIAL_SUM, err, cap))) goto fail;
  snprintf(text, sizeof text, "(%lld,%lld,%lld):(1@pid,%lld@m,1@m)", (long long)P,
           (long long)t->m_local, (long long)s->n, (long long)s->n);
  if (!(t->y = dtensor(s, s->m, s->n, text, TIRX_PARTIAL_NONE, err, cap))) goto fail;

  /* The reduce-scatter, named: with one rank an all-reduce would be legal too (and first in
   * the table); naming the rule keeps the NCCL call the same at every mesh size. */
  if (tirx_collective_create(t->y_partial, t->y, "reduce_scatter", &t->reduce) != TIRX_OK) {
    snprintf(err, cap, "tp_linear_create: %s", tirx_last_error());
    goto fail;
  }
  if (!local_shape(t->x, t->x_shape, t->x_strides, err, cap) ||
      !local_shape(t->w, t->w_shape, t->w_strides, err, cap) ||
      !local_shape(t->y_partial, t->yp_shape, t->yp_strides, err, cap) ||
      !local_shape(t->y, t->y_shape, t->y_strides, err, cap))
    goto fail;
  /* W_r [N, K/P] is the GEMM's B seen as its transpose: (K/P, N), K contiguous. */
  t->b_shape[0] = t->w_shape[1], t->b_shape[1] = t->w_shape[0];
  t->b_strides[0] = t->w_strides[1], t->b_strides[1] = t->w_strides[0];

  gemm_spec g = {.dtype = s->dtype, .m = s->m, .n = s->n, .k = t->k_local};
  char gerr[1024] = "";
  if (!(t->gemm = gemm_build(&g, gerr, sizeof gerr))) {
    snprintf(err, cap, "tp_linear_create: gemm_build: %s", gerr);
    goto fail;
  }
  return true;
fail:
  tp_linear_destroy(t);
  return false;
}

void tp_linear_destroy(tp_linear *t) {
  if (!t) return;
  tirx_kernel_release(t->gemm);
  tirx_collective_destroy(t->reduce);
  tirx_dtensor_destroy(t->x);
  tirx_dtensor_destroy(t->w);
  tirx_dtensor_destroy(t->y_partial);
  tirx_dtensor_destroy(t->y);
  memset(t, 0, sizeof *t);
}

size_t tp_linear_bytes(const tp_linear *t, tp_buffer which) {
  size_t e = (size_t)tirx_dtype_size(t->spec.dtype);
  switch (which) {
  /* rows times the leading dimension (a dtensor reports stride 1 for a dimension of one row) */
  case TP_X: return (size_t)(t->spec.m * t->ldx) * e;
  case TP_W: return (size_t)(t->spec.n * t->ldw) * e;
  case TP_Y_PARTIAL: return (size_t)tirx_dtensor_local_size(t->y_partial) * e;
  case TP_Y: return (size_t)tirx_dtensor_local_size(t->y) * e;
  }
  return 0;
}

void tp_linear_gemm_args(const tp_linear *t, const tp_buffers *b, tirx_arg args[6]) {
  tirx_dtype dt = t->spec.dtype;
  args[0] = tirx_arg_i32((int32_t)t->spec.m);
  args[1] = tirx_arg_i32((int32_t)t->spec.n);
  args[2] = tirx_arg_i32((int32_t)t->k_local);
  args[3] = tirx_arg_tensor(b->x, dt, 2, t->x_shape, t->x_strides);
  args[4] = tirx_arg_tensor(b->w, dt, 2, t->b_shape, t->b_strides);
  args[5] = tirx_arg_tensor(b->y_partial, dt, 2, t->yp_shape, t->yp_strides);
}

tirx_status tp_linear_prepare(const tp_linear *t, tirx_runtime *rt, const tp_buffers *b) {
  tirx_arg args[6];
  tp_linear_gemm_args(t, b, args);
  const tirx_arg *lists[1] = {args};
  int counts[1] = {6};
  return tirx_runtime_warmup(rt, t->gemm, lists, counts, 1);
}

tirx_status tp_linear_forward(const tp_linear *t, tirx_runtime *rt, tirx_comm *comm,
                              const tp_buffers *b, void *stream) {
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
  tp_linear_gemm_args(t, b, args);
  if ((st = tirx_launch(rt, t->gemm, args, 6, stream)) != TIRX_OK) return st;
  return tirx_collective_run(t->reduce, comm, &yp, &y, stream);
}

/* ---- host data and the reference ---- */

uint16_t tp_to16(tirx_dtype dt, float f) { return ex_to16(dt, f); }

double tp_from16(tirx_dtype dt, uint16_t h) { return ex_from16(dt, h); }

static uint64_t next(uint64_t *s) { /* xorshift64* */
  if (!*s) *s = 0x9e3779b97f4a7c15ull;
  *s ^= *s >> 12;
  *s ^= *s << 25;
  *s ^= *s >> 27;
  return *s * 2685821657736338717ull;
}

void tp_random16(tirx_dtype dt, uint16_t *out, size_t n, uint64_t *seed) {
  for (size_t i = 0; i < n; i++) {
    float u = -1.0f + 2.0f * (float)((double)(next(seed) >> 40) / 16777216.0);
    out[i] = tp_to16(dt, u);
  }
}

/* rows x kl columns starting at column c0 of a dense [rows, cols] matrix into dst with row
 * stride ld (zero padding), then to the device. */
static tirx_status upload_shard(tirx_runtime *rt, void *dev, const uint16_t *src, int64_t rows,
                                int64_t cols, int64_t c0, int64_t kl, int64_t ld) {
  size_t n = (size_t)(rows * ld);
  uint16_t *h = calloc(n ? n : 1, 2);
  if (!h) return TIRX_E_NO_MEMORY; /* no message: the host is out of memory */
  for (int64_t i = 0; i < rows; i++) memcpy(h + i * ld, src + i * cols + c0, (size_t)kl * 2);
  tirx_status st = tirx_runtime_copy(rt, dev, h, n * 2, TIRX_COPY_HOST_TO_DEVICE);
  free(h);
  return st;
}

tirx_status tp_linear_upload(const tp_linear *t, tirx_runtime *rt, int rank, const uint16_t *x,
                             const uint16_t *w, const tp_buffers *b) {
  int64_t c0 = (int64_t)rank * t->k_local;
  tirx_status st = upload_shard(rt, b->x, x, t->spec.m, t->spec.k, c0, t->k_local, t->ldx);
  if (st == TIRX_OK) st = upload_shard(rt, b->w, w, t->spec.n, t->spec.k, c0, t->k_local, t->ldw);
  return st;
}

tp_check_result tp_linear_check(const tp_linear *t, int rank, const uint16_t *x,
                                const uint16_t *w, const uint16_t *y_local, int samples,
                                uint64_t *seed) {
  tp_check_result r = {0};
  const tirx_dtype dt = t->spec.dtype;
  const int64_t K = t->spec.k, N = t->spec.n, ml = t->m_local, kl = t->k_local;
  const int P = t->spec.nranks;
  const double ulp = dt == TIRX_BF16 ? 1.0 / 128 : 1.0 / 1024;
  for (int s = 0; s < samples + 4; s++) {
    int64_t li, j;
    if (s < 4) {
      li = s & 1 ? ml - 1 : 0, j = s & 2 ? N - 1 : 0;
    } else {
      li = (int64_t)(next(seed) % (uint64_t)ml), j = (int64_t)(next(seed) % (uint64_t)N);
    }
    int64_t i = (int64_t)rank * ml + li; /* the global row */
    double want = 0, mag = 0, addends = 0;
    for (int p = 0; p < P; p++) {
      double part = 0;
      for (int64_t q = p * kl; q < (p + 1) * kl; q++) {
        double v = tp_from16(dt, x[i * K + q]) * tp_from16(dt, w[j * K + q]);
        part += v, mag += fabs(v);
      }
      want += part, addends += fabs(part);
    }
    double got = tp_from16(dt, y_local[li * N + j]);
    double tol = P * ulp * addends + 1e-5 * (mag + 1.0);
    double err = fabs(got - want);
    double rel = err / (fabs(want) + 1e-3 * (mag + 1.0));
    if (rel != rel) rel = 1e9;
    if (rel > r.max_rel_err) r.max_rel_err = rel;
    if (!(err <= tol)) {
      if (!r.wrong)
        snprintf(r.first, sizeof r.first, "Y[%lld, %lld] = %.6g, expected %.6g (tolerance %.3g)",
                 (long long)i, (long long)j, got, want, tol);
      r.wrong++;
    }
    r.samples++;
  }
  return r;
}
