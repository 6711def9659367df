/* Helpers shared by the GPU benchmarks: a monotonic clock in microseconds, medians, and NVRTC's
 * own cache turned off for compile timings. */
#ifndef TIRX_BENCH_UTIL_H
#define TIRX_BENCH_UTIL_H

#include <stdlib.h>
#include <string.h>
#include <time.h>

static inline double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static inline int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* Turns NVRTC's own compile cache off for this process and the processes it starts (compile
 * workers included); call before the first NVRTC call, which reads the setting once. NVRTC 12.9
 * and later keep what they compile in the CUDA driver's compute cache (~/.nv/ComputeCache)
 * wherever a driver can be loaded, and answer a compile of a program they have compiled before
 * from there after the front end alone: on a GPU host that compiled the same source earlier (a
 * previous run, the GPU suite before the benchmark) a "cold" compile of the 128x256 GEMM then
 * costs 25-50 ms instead of hundreds. A machine without a driver has no such cache.
 * CUDA_CACHE_DISABLE also turns off the driver's JIT cache of PTX, which these programs never
 * use (they load cubins). TIRX_BENCH_NVRTC_CACHE=1 leaves the cache as the environment has it
 * (to see its effect: the same run twice on a GPU host, with and without). */
static inline void bench_nvrtc_cache_off(void) {
  const char *keep = getenv("TIRX_BENCH_NVRTC_CACHE");
  if (!keep || strcmp(keep, "1") != 0) setenv("CUDA_CACHE_DISABLE", "1", 1);
}

/* The median of v[0..n) (sorts v). */
static inline double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return v[n / 2];
}

#endif
