/* Host data and the float64 reference of the tensor-parallel linear layer (tp_ref.h). */
#include "tp_ref.h"

#include "example_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

tirx_status tp_linear_upload(const tirx_tp_linear *t, tirx_runtime *rt, int rank, const uint16_t *x,
                             const uint16_t *w, const tirx_tp_buffers *b) {
  int64_t c0 = (int64_t)rank * t->k_local;
  tirx_status st = upload_shard(rt, b->x, x, t->spec.m, t->spec.k, c0, t->k_local, t->ldx);
  if (st == TIRX_OK) st = upload_shard(rt, b->w, w, t->spec.n, t->spec.k, c0, t->k_local, t->ldw);
  return st;
}

tp_check_result tp_linear_check(const tirx_tp_linear *t, int rank, const uint16_t *x,
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
