/* The float64 attention reference and its checker (attn_ref.h). */
#include "attn_ref.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int64_t attn_len_q(const attn_problem *p, int b) {
  return p->cu_q ? (int64_t)p->cu_q[b + 1] - p->cu_q[b] : p->s_q;
}

int64_t attn_len_k(const attn_problem *p, int b) {
  return p->cu_k ? (int64_t)p->cu_k[b + 1] - p->cu_k[b] : p->s_k;
}

/* Offset of element (b, row i of the sequence, h, 0). */
static int64_t at(const attn_problem *p, attn_view t, const int32_t *cu, int b, int64_t i,
                  int h) {
  return p->cu_q ? ((int64_t)cu[b] + i) * t.ss + h * t.sh : b * t.sb + i * t.ss + h * t.sh;
}

/* Keys row i of sequence b sees: [0, end). */
static int64_t key_end(const attn_problem *p, int b, int64_t i) {
  int64_t lq = attn_len_q(p, b), lk = attn_len_k(p, b);
  if (!p->causal) return lk;
  int64_t e = i + lk - lq + 1;
  return e < 0 ? 0 : e > lk ? lk : e;
}

/* Row i of sequence b, head h: o, *lse and (mag non-NULL) mag[x] = sum_j p_j |v_j[x]|, the
 * magnitude that a 16-bit P in O += P V rounds in proportion to. */
static void row_eval(const attn_problem *p, attn_view q, attn_view k, attn_view v, int b, int h,
                     int64_t i, double *o, double *lse, double *mag) {
  const int d = p->d, hk = h / (p->h / p->h_kv);
  const double scale = p->scale != 0 ? p->scale : 1.0 / sqrt((double)d);
  const int64_t end = key_end(p, b, i);
  for (int x = 0; x < d; x++) o[x] = 0;
  if (mag)
    for (int x = 0; x < d; x++) mag[x] = 0;
  if (end == 0) {
    *lse = -INFINITY;
    return;
  }
  double *s = malloc((size_t)end * sizeof *s);
  const float *qr = q.p + at(p, q, p->cu_q, b, i, h);
  double mx = -INFINITY;
  for (int64_t j = 0; j < end; j++) {
    const float *kr = k.p + at(p, k, p->cu_k, b, j, hk);
    double acc = 0;
    for (int x = 0; x < d; x++) acc += (double)qr[x] * kr[x];
    s[j] = scale * acc;
    if (s[j] > mx) mx = s[j];
  }
  double sum = 0;
  for (int64_t j = 0; j < end; j++) {
    double e = exp(s[j] - mx);
    sum += e;
    const float *vr = v.p + at(p, v, p->cu_k, b, j, hk);
    for (int x = 0; x < d; x++) o[x] += e * vr[x];
    if (mag)
      for (int x = 0; x < d; x++) mag[x] += e * fabs(vr[x]);
  }
  for (int x = 0; x < d; x++) o[x] /= sum;
  if (mag)
    for (int x = 0; x < d; x++) mag[x] /= sum;
  *lse = mx + log(sum);
  free(s);
}

void attn_ref_row(const attn_problem *p, attn_view q, attn_view k, attn_view v, int b, int h,
                  int64_t i, double *o, double *lse) {
  row_eval(p, q, k, v, b, h, i, o, lse, NULL);
}

static uint64_t next(uint64_t *s) {
  *s ^= *s >> 12;
  *s ^= *s << 25;
  *s ^= *s >> 27;
  return *s * 2685821657736338717ull;
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? -1 : x > y;
}

static void check_row(const attn_problem *p, attn_view q, attn_view k, attn_view v, attn_view o,
                      const float *lse, bool bf16, int b, int h, int64_t i, double *want,
                      double *mag, attn_report *r) {
  const double u = bf16 ? 1.0 / 256 : 1.0 / 2048;
  double wl;
  row_eval(p, q, k, v, b, h, i, want, &wl, mag);
  const float *got = o.p + at(p, o, p->cu_q, b, i, h);
  r->rows++;
  for (int x = 0; x < p->d; x++) {
    double tol = u * (fabs(want[x]) + mag[x]) + 1e-5, e = fabs((double)got[x] - want[x]);
    if (!(e <= tol)) {
      if (!r->wrong)
        snprintf(r->first, sizeof r->first, "o[batch %d, row %lld, head %d, dim %d] = %.7g, "
                 "want %.7g (tolerance %.3g)", b, (long long)i, h, x, (double)got[x], want[x],
                 tol);
      r->wrong++;
    }
    if (e / tol > r->worst_o || e != e) r->worst_o = e != e ? INFINITY : e / tol;
  }
  if (!lse) return;
  int64_t li = p->cu_q ? (int64_t)h * p->cu_q[p->batch] + p->cu_q[b] + i
                       : ((int64_t)b * p->h + h) * p->s_q + i;
  double g = lse[li];
  bool ok;
  double tol = 1e-4 + 1e-5 * (isinf(wl) ? 0 : fabs(wl));
  if (isinf(wl)) {
    ok = isinf(g) && g < 0;
  } else {
    double e = fabs(g - wl);
    ok = e <= tol;
    if (e / tol > r->worst_lse || e != e) r->worst_lse = e != e ? INFINITY : e / tol;
  }
  if (!ok) {
    if (!r->wrong)
      snprintf(r->first, sizeof r->first, "lse[batch %d, head %d, row %lld] = %.9g, want %.9g "
               "(tolerance %.3g)", b, h, (long long)i, g, wl, tol);
    r->wrong++;
  }
}

void attn_ref_check(const attn_problem *p, attn_view q, attn_view k, attn_view v, attn_view o,
                    const float *lse, bool bf16, int64_t all_rows, int sample, uint64_t *rng,
                    attn_report *r) {
  memset(r, 0, sizeof *r);
  double *want = malloc((size_t)p->d * sizeof *want), *mag = malloc((size_t)p->d * sizeof *mag);
  int64_t *rows = malloc(((size_t)sample + 9) * sizeof *rows);
  for (int b = 0; b < p->batch; b++) {
    const int64_t lq = attn_len_q(p, b);
    for (int h = 0; h < p->h; h++) {
      /* every element written: no NaN left of the poison */
      for (int64_t i = 0; i < lq; i++) {
        const float *g = o.p + at(p, o, p->cu_q, b, i, h);
        for (int x = 0; x < p->d; x++) r->unwritten += g[x] != g[x];
        if (lse) {
          int64_t li = p->cu_q ? (int64_t)h * p->cu_q[p->batch] + p->cu_q[b] + i
                               : ((int64_t)b * p->h + h) * p->s_q + i;
          r->unwritten += lse[li] != lse[li];
        }
      }
      if (lq <= all_rows) {
        for (int64_t i = 0; i < lq; i++) check_row(p, q, k, v, o, lse, bf16, b, h, i, want, mag, r);
        continue;
      }
      int n = 0;
      for (int64_t i = 0; i < 8; i++) rows[n++] = i;
      rows[n++] = lq - 1;
      for (int s = 0; s < sample; s++) rows[n++] = (int64_t)(next(rng) % (uint64_t)lq);
      qsort(rows, (size_t)n, sizeof *rows, cmp_i64);
      for (int s = 0; s < n; s++)
        if (s == 0 || rows[s] != rows[s - 1])
          check_row(p, q, k, v, o, lse, bf16, b, h, rows[s], want, mag, r);
    }
  }
  free(want), free(mag), free(rows);
}
