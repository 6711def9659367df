/*
 * The GEMM of tirx/kernels.h as the tests and benchmarks describe their cases: one struct of
 * the problem and the options, a build that copies the error into a buffer, the tile shape,
 * and the epilogues on one f32 value for the CPU references.
 */
#ifndef TIRX_SUPPORT_GEMM_REF_H
#define TIRX_SUPPORT_GEMM_REF_H

#include <math.h>
#include <stdio.h>
#include <tirx.h>

typedef struct gemm_spec {
  tirx_dtype dtype;       /* TIRX_F16 or TIRX_BF16 */
  int64_t m, n, k;        /* the shape the tile shape is chosen for */
  tirx_epilogue epilogue;
  const char *family;     /* NULL or "wgmma"; "mma"; "scalar" */
  int sms;                /* 0: 132 */
} gemm_spec;

static inline tirx_gemm_options gemm_options(const gemm_spec *s) {
  tirx_gemm_options o = {s->epilogue, s->family, s->sms};
  return o;
}

/* tirx_kernels_gemm_build for s; NULL with the message in err. */
static inline tirx_kernel *gemm_build(const gemm_spec *s, char *err, size_t cap) {
  tirx_gemm_options o = gemm_options(s);
  tirx_kernel *k = NULL;
  if (tirx_kernels_gemm_build(&o, s->dtype, s->m, s->n, s->k, &k) != TIRX_OK && err)
    snprintf(err, cap, "%s", tirx_last_error());
  return k;
}

/* tirx_kernels_gemm_tiles for s; all zero on an error. */
static inline tirx_gemm_tiles gemm_pick(const gemm_spec *s) {
  tirx_gemm_options o = gemm_options(s);
  tirx_gemm_tiles t = {0, 0, 0, 0, 0};
  if (tirx_kernels_gemm_tiles(&o, s->m, s->n, s->k, &t) != TIRX_OK)
    t = (tirx_gemm_tiles){0, 0, 0, 0, 0};
  return t;
}

static inline double gemm_epilogue_ref(tirx_epilogue e, double x) {
  switch (e) {
  case TIRX_EPILOGUE_BIAS_SILU: return x / (1.0 + exp(-x));
  case TIRX_EPILOGUE_BIAS_GELU: return 0.5 * x * (1.0 + erf(x / sqrt(2.0)));
  default: return x;
  }
}

#endif
