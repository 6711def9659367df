/*
 * The GEMM of tirx/kernels.h as the tests and benchmarks describe their cases: one struct of
 * the problem and the options, a build that copies the error into a buffer, the tile shape,
 * and the epilogues on one f32 value for the CPU references.
 */
#ifndef TIRX_SUPPORT_GEMM_REF_H
#define TIRX_SUPPORT_GEMM_REF_H

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <tirx.h>

typedef struct gemm_spec {
  tirx_dtype dtype;       /* TIRX_F16 or TIRX_BF16 */
  int64_t m, n, k;        /* the shape the tile shape is chosen for */
  tirx_epilogue epilogue;
  const char *family;     /* NULL or "wgmma"; "mma"; "scalar" */
  int sms;                /* 0: 132 */
  tirx_gemm_path path;    /* 0: TIRX_GEMM_PATH_AUTO (tirx_kernels_gemm_build: the wgmma kernel) */
  int gemv_rows;          /* 0: the plan's */
  int splits;             /* 0: the plan's (split-K path only) */
  int cluster_m, cluster_n; /* 0, 0: the plan's; 1, 1: none; 2, 1 or 1, 2 */
} gemm_spec;

static inline tirx_gemm_options gemm_options(const gemm_spec *s) {
  tirx_gemm_options o = {.size = sizeof o, .epilogue = s->epilogue, .family = s->family,
                         .sms = s->sms, .path = s->path, .gemv_rows = s->gemv_rows,
                         .splits = s->splits, .cluster_m = s->cluster_m,
                         .cluster_n = s->cluster_n};
  return o;
}

/*
 * tirx_kernels_gemm_build for s; NULL with the reason in err. A case description that is not
 * a GEMM (NULL, a dtype other than f16/bf16, an empty shape, an epilogue or family out of
 * range) is refused here with this function's own message, as the golden cases record it;
 * otherwise err holds the library's message without its "tirx_kernels_gemm_build: " prefix
 * (the builder's error).
 */
static inline tirx_kernel *gemm_build(const gemm_spec *s, char *err, size_t cap) {
  static const char prefix[] = "tirx_kernels_gemm_build: ";
  if (!s || (s->dtype != TIRX_F16 && s->dtype != TIRX_BF16) || s->m < 1 || s->n < 1 || s->k < 1) {
    snprintf(err, cap, "gemm_build: spec must have dtype f16 or bf16 and m, n, k >= 1");
    return NULL;
  }
  if (s->epilogue < TIRX_EPILOGUE_NONE || s->epilogue > TIRX_EPILOGUE_BIAS_GELU) {
    snprintf(err, cap, "gemm_build: spec->epilogue is %d, expected a tirx_epilogue (0 to 3)",
             (int)s->epilogue);
    return NULL;
  }
  if (s->family && strcmp(s->family, "wgmma") && strcmp(s->family, "mma") &&
      strcmp(s->family, "scalar")) {
    snprintf(err, cap, "gemm_build: spec->family is \"%s\", expected NULL, \"wgmma\", \"mma\" "
             "or \"scalar\"", s->family);
    return NULL;
  }
  tirx_gemm_options o = gemm_options(s);
  tirx_kernel *k = NULL;
  if (tirx_kernels_gemm_build(&o, s->dtype, s->m, s->n, s->k, &k) != TIRX_OK && err) {
    const char *m = tirx_last_error();
    snprintf(err, cap, "%s", strncmp(m, prefix, sizeof prefix - 1) ? m : m + sizeof prefix - 1);
  }
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
