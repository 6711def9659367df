/* The float64 reference of decode attention over a paged KV cache (decode_ref.h). */
#include "decode_ref.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

uint16_t decode_ref_to_half(float f, tirx_dtype dt) {
  uint32_t x;
  memcpy(&x, &f, 4);
  if (dt == TIRX_BF16) return (uint16_t)((x + 0x7fff + ((x >> 16) & 1)) >> 16);
  uint32_t sign = (x >> 16) & 0x8000, exp = (x >> 23) & 0xff, mant = x & 0x7fffff;
  int e = (int)exp - 127 + 15;
  if (e >= 31) return (uint16_t)(sign | 0x7c00);
  if (e <= 0) {
    if (e < -10) return (uint16_t)sign;
    mant |= 0x800000;
    int shift = 14 - e;
    uint32_t h = mant >> shift, rem = mant & ((1u << shift) - 1), mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (h & 1))) h++;
    return (uint16_t)(sign | h);
  }
  uint32_t h = sign | ((uint32_t)e << 10) | (mant >> 13), rem = mant & 0x1fff;
  if (rem > 0x1000 || (rem == 0x1000 && (h & 1))) h++;
  return (uint16_t)h;
}

float decode_ref_from_half(uint16_t h, tirx_dtype dt) {
  if (dt == TIRX_BF16) {
    uint32_t x = (uint32_t)h << 16;
    float f;
    memcpy(&f, &x, 4);
    return f;
  }
  int e = (h >> 10) & 0x1f, m = h & 0x3ff;
  float v = e == 0 ? ldexpf((float)m, -24) : e == 31 ? INFINITY : ldexpf((float)(m | 0x400), e - 25);
  return h & 0x8000 ? -v : v;
}

static uint32_t next(uint64_t *s) {
  *s ^= *s >> 12;
  *s ^= *s << 25;
  *s ^= *s >> 27;
  return (uint32_t)((*s * 2685821657736338717ull) >> 32);
}

static uint16_t *random_half(size_t n, tirx_dtype dt, uint64_t *seed) {
  uint16_t *v = malloc(n * sizeof *v);
  for (size_t i = 0; v && i < n; i++)
    v[i] = decode_ref_to_half((float)next(seed) / 2147483648.0f - 1.0f, dt);
  return v;
}

void decode_ref_fill(decode_ref_case *c, int extra_columns, uint64_t *seed) {
  int need = 0, total = 0;
  for (int i = 0; i < c->b; i++) {
    int n = (c->lens[i] + c->p - 1) / c->p;
    need = n > need ? n : need;
    total += n;
  }
  c->max_pages = need + extra_columns;
  c->bt_stride = c->max_pages + 3; /* a padded row: the table is a strided view */
  c->num_pages = total + total / 2 + 1; /* spare pages: used ones are not contiguous */
  int *perm = malloc((size_t)c->num_pages * sizeof *perm);
  for (int i = 0; i < c->num_pages; i++) perm[i] = i;
  for (int i = c->num_pages - 1; i > 0; i--) {
    int j = (int)(next(seed) % (uint32_t)(i + 1)), t = perm[i];
    perm[i] = perm[j], perm[j] = t;
  }
  c->bt = malloc((size_t)c->b * c->bt_stride * sizeof *c->bt);
  int at = 0;
  for (int i = 0; i < c->b; i++) {
    int n = (c->lens[i] + c->p - 1) / c->p;
    for (int j = 0; j < c->bt_stride; j++) c->bt[(size_t)i * c->bt_stride + j] = j < n ? perm[at++] : -1;
  }
  free(perm);
  size_t per_page = (size_t)c->p * c->hkv * c->d;
  c->q = random_half((size_t)c->b * c->ql * c->h * c->d, c->dt, seed);
  c->kc = random_half((size_t)c->num_pages * per_page, c->dt, seed);
  c->vc = random_half((size_t)c->num_pages * per_page, c->dt, seed);
  if (!c->kc || !c->vc) return;
  /* What no sequence owns is NaN, as a server's cache may hold anything there: the slots past
   * each sequence's length in its last page, and the spare pages. A kernel that lets them into
   * a result (0 * NaN in P V) fails the comparison. */
  const uint16_t nan = c->dt == TIRX_BF16 ? 0x7fc0 : 0x7e00;
  char *owned = calloc((size_t)c->num_pages, 1);
  for (int i = 0; owned && i < c->b; i++) {
    int n = (c->lens[i] + c->p - 1) / c->p;
    for (int j = 0; j < n; j++) owned[c->bt[(size_t)i * c->bt_stride + j]] = 1;
    int last = c->bt[(size_t)i * c->bt_stride + n - 1];
    size_t row = (size_t)c->hkv * c->d;
    for (int r = c->lens[i] - (n - 1) * c->p; r < c->p; r++)
      for (size_t e = 0; e < row; e++)
        c->kc[(size_t)last * per_page + r * row + e] = c->vc[(size_t)last * per_page + r * row + e] = nan;
  }
  for (int pg = 0; owned && pg < c->num_pages; pg++)
    if (!owned[pg])
      for (size_t e = 0; e < per_page; e++)
        c->kc[(size_t)pg * per_page + e] = c->vc[(size_t)pg * per_page + e] = nan;
  free(owned);
}

void decode_ref_free(decode_ref_case *c) {
  free(c->q), free(c->kc), free(c->vc), free(c->bt);
  c->q = c->kc = c->vc = NULL, c->bt = NULL;
}

void decode_ref_attention(const decode_ref_case *c, double scale, double *o, double *lse) {
  const int D = c->d, G = c->h / c->hkv;
  if (scale == 0) scale = 1.0 / sqrt((double)D);
  int maxl = 0;
  for (int i = 0; i < c->b; i++) maxl = c->lens[i] > maxl ? c->lens[i] : maxl;
  double *s = malloc((size_t)maxl * sizeof *s), *qf = malloc((size_t)D * sizeof *qf);
  double *acc = malloc((size_t)D * sizeof *acc);
  /* the caches widened once (the conversions dominated the loops) */
  size_t ncache = (size_t)c->num_pages * c->p * c->hkv * D;
  float *kf = malloc(ncache * sizeof *kf), *vf = malloc(ncache * sizeof *vf);
  if (!kf || !vf || !s || !qf || !acc) { /* out of memory: o and lse stay as they were */
    free(s), free(qf), free(acc), free(kf), free(vf);
    return;
  }
  for (size_t i = 0; i < ncache; i++) {
    kf[i] = decode_ref_from_half(c->kc[i], c->dt);
    vf[i] = decode_ref_from_half(c->vc[i], c->dt);
  }
  for (int bi = 0; bi < c->b; bi++) {
    const int L = c->lens[bi];
    for (int qi = 0; qi < c->ql; qi++)
      for (int h = 0; h < c->h; h++) {
        const int kvh = h / G, vis = L - c->ql + qi + 1; /* keys 0 .. vis - 1 */
        const uint16_t *qp = c->q + (((size_t)bi * c->ql + qi) * c->h + h) * D;
        for (int e = 0; e < D; e++) qf[e] = decode_ref_from_half(qp[e], c->dt);
        double m = -INFINITY;
        for (int j = 0; j < vis; j++) {
          int page = c->bt[(size_t)bi * c->bt_stride + j / c->p];
          const float *kp = kf + (((size_t)page * c->p + j % c->p) * c->hkv + kvh) * D;
          double dot = 0;
          for (int e = 0; e < D; e++) dot += qf[e] * kp[e];
          s[j] = dot * scale;
          m = s[j] > m ? s[j] : m;
        }
        double sum = 0;
        for (int e = 0; e < D; e++) acc[e] = 0;
        for (int j = 0; j < vis; j++) {
          double p = exp(s[j] - m);
          sum += p;
          int page = c->bt[(size_t)bi * c->bt_stride + j / c->p];
          const float *vp = vf + (((size_t)page * c->p + j % c->p) * c->hkv + kvh) * D;
          for (int e = 0; e < D; e++) acc[e] += p * vp[e];
        }
        size_t row = ((size_t)bi * c->ql + qi) * c->h + h;
        for (int e = 0; e < D; e++) o[row * D + e] = acc[e] / sum;
        if (lse) lse[row] = m + log(sum);
      }
  }
  free(s), free(qf), free(acc), free(kf), free(vf);
}
