/*
 * Helpers shared by the kernel examples: seeded random inputs, poisoned outputs, device
 * buffers through the runtime's own memory calls (the examples never link libcuda), and a
 * float64 comparison.
 */
#ifndef TIRX_EXAMPLES_UTIL_H
#define TIRX_EXAMPLES_UTIL_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <tirx.h>

/* A quiet NaN with a recognisable payload: outputs are filled with it before each launch, so
 * an element the kernel never writes fails the comparison. */
#define EX_POISON 0x7fc0badu

/* The seed: $TIRX_SEED when set (to replay a failure), else the clock. Printed by callers. */
static inline uint64_t ex_seed(void) {
  const char *s = getenv("TIRX_SEED");
  if (s && *s)
    return strtoull(s, NULL, 0);
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return ((uint64_t)ts.tv_sec * 1000000007ull) ^ (uint64_t)ts.tv_nsec ^ 0x9e3779b97f4a7c15ull;
}

static inline uint64_t ex_rand(uint64_t *s) { /* xorshift64* */
  *s ^= *s >> 12;
  *s ^= *s << 25;
  *s ^= *s >> 27;
  return *s * 2685821657736338717ull;
}

/* Uniform in [lo, hi). */
static inline float ex_uniform(uint64_t *s, float lo, float hi) {
  return lo + (hi - lo) * (float)((double)(ex_rand(s) >> 11) / 9007199254740992.0);
}

static inline float *ex_random(uint64_t *s, size_t n, float lo, float hi) {
  float *p = malloc((n ? n : 1) * sizeof *p);
  if (!p)
    return NULL;
  for (size_t i = 0; i < n; i++)
    p[i] = ex_uniform(s, lo, hi);
  return p;
}

static inline bool ex_ok(tirx_status st, const char *what) {
  if (st == TIRX_OK)
    return true;
  fprintf(stderr, "%s failed: %s: %s\n", what, tirx_status_name(st), tirx_last_error());
  return false;
}

/* A device copy of n floats from host (NULL: poisoned instead). NULL on failure, printed. */
static inline float *ex_device(tirx_runtime *rt, const float *host, size_t n) {
  void *d = NULL;
  if (!ex_ok(tirx_runtime_alloc(rt, (n ? n : 1) * sizeof(float), &d), "tirx_runtime_alloc"))
    return NULL;
  tirx_status st = host
                       ? tirx_runtime_copy(rt, d, host, n * sizeof(float), TIRX_COPY_HOST_TO_DEVICE)
                       : tirx_runtime_fill32(rt, d, EX_POISON, n);
  if (!ex_ok(st, host ? "tirx_runtime_copy" : "tirx_runtime_fill32")) {
    tirx_runtime_free(rt, d);
    return NULL;
  }
  return d;
}

/* n floats of device memory copied back into a new host array; NULL on failure, printed. */
static inline float *ex_download(tirx_runtime *rt, const float *dev, size_t n) {
  float *h = malloc((n ? n : 1) * sizeof *h);
  if (!h)
    return NULL;
  if (!ex_ok(tirx_runtime_copy(rt, h, dev, n * sizeof(float), TIRX_COPY_DEVICE_TO_HOST),
             "tirx_runtime_copy")) {
    free(h);
    return NULL;
  }
  return h;
}

/* Compares got against the float64 reference want: |got - want| <= atol + rtol * |want| for
 * every element, NaN included (a poisoned element is a failure). Prints the worst error and
 * the first mismatch. Returns true when all match. */
static inline bool ex_compare(const char *what, const float *got, const double *want, size_t n,
                              double atol, double rtol) {
  double worst = 0;
  size_t bad = 0, first = (size_t)-1;
  for (size_t i = 0; i < n; i++) {
    double err = fabs((double)got[i] - want[i]);
    if (!(err <= atol + rtol * fabs(want[i]))) { /* NaN fails too */
      if (bad++ == 0)
        first = i;
      worst = INFINITY;
    } else if (err > worst) {
      worst = err;
    }
  }
  if (bad) {
    fprintf(stderr, "  %s: %zu of %zu elements wrong; first at %zu: got %.9g, want %.9g\n", what,
            bad, n, first, (double)got[first], want[first]);
    return false;
  }
  printf("  %-40s ok   (%zu elements, max abs error %.3g)\n", what, n, worst);
  return true;
}

/* Compiles k with NVRTC for arch and prints the result's size; false on failure, printed. */
static inline bool ex_compile(tirx_runtime *rt, const tirx_kernel *k, const char *arch) {
  tirx_compiled *c = NULL;
  if (!ex_ok(tirx_compile(rt, k, arch, &c), "tirx_compile"))
    return false;
  size_t cubin = 0;
  tirx_compiled_cubin(c, &cubin);
  printf("%s: compiled with NVRTC for %s: cubin %zu bytes, PTX %zu bytes\n", tirx_kernel_name(k),
         arch, cubin, strlen(tirx_compiled_ptx(c)));
  tirx_compiled_destroy(c);
  return true;
}

static inline bool ex_has_flag(int argc, char **argv, const char *flag) {
  for (int i = 1; i < argc; i++)
    if (strcmp(argv[i], flag) == 0)
      return true;
  return false;
}

/* The common start of every example: builds the kernel, prints its source when asked,
 * creates the runtime and compiles for sm_90a. Returns 0 to continue onto the GPU, 1 on
 * failure, 2 when there is no GPU (the caller then exits 0). */
static inline int ex_start(int argc, char **argv, tirx_kernel *(*make)(void), bool print_source,
                           tirx_kernel **k, tirx_runtime **rt) {
  *k = NULL;
  *rt = NULL;
  *k = make();
  if (!*k)
    return 1;
  if (print_source || ex_has_flag(argc, argv, "--print-source"))
    printf("---- generated CUDA of %s ----\n%s---- end of %s ----\n", tirx_kernel_name(*k),
           tirx_kernel_source(*k), tirx_kernel_name(*k));
  if (!ex_ok(tirx_runtime_create(NULL, rt), "tirx_runtime_create"))
    return 1;
  if (!ex_compile(*rt, *k, "sm_90a"))
    return 1;
  if (!tirx_runtime_has_device(*rt)) {
    printf("%s: no GPU present (%s): built and compiled only, not launched\n", tirx_kernel_name(*k),
           tirx_runtime_device_error(*rt));
    return 2;
  }
  printf("%s: running on %s (%s)\n", tirx_kernel_name(*k), tirx_runtime_device_name(*rt),
         tirx_runtime_arch(*rt));
  return 0;
}

/* Frees what ex_start made and turns its result into an exit status. */
static inline int ex_finish(int rc, tirx_kernel *k, tirx_runtime *rt) {
  tirx_kernel_release(k);
  tirx_runtime_destroy(rt);
  return rc == 2 ? 0 : rc;
}


/* f32 -> f16/bf16 bits, round to nearest even (f16: below the normal range flushes to a signed
 * zero, above it becomes infinity; the references read the stored value back, so they stay
 * exact), and back to double. */
static inline uint16_t ex_to16(tirx_dtype dt, float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  if (dt == TIRX_BF16) return (uint16_t)((x + 0x7fff + ((x >> 16) & 1)) >> 16);
  uint32_t sign = (x >> 16) & 0x8000, e = (x >> 23) & 0xff, mant = x & 0x7fffff;
  int ne = (int)e - 127 + 15;
  if (e == 0 || ne <= 0) return (uint16_t)sign;
  if (ne >= 31) return (uint16_t)(sign | 0x7c00);
  uint32_t h = sign | ((uint32_t)ne << 10) | (mant >> 13), rest = mant & 0x1fff;
  if (rest > 0x1000 || (rest == 0x1000 && (h & 1))) h++;
  return (uint16_t)h;
}

static inline double ex_from16(tirx_dtype dt, uint16_t h) {
  if (dt == TIRX_BF16) {
    uint32_t x = (uint32_t)h << 16;
    float f;
    memcpy(&f, &x, 4);
    return f;
  }
  int e = (h >> 10) & 0x1f, m = h & 0x3ff;
  double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(1024 + m, e - 25);
  return h & 0x8000 ? -v : v;
}

#endif
