/*
 * launch_overhead: the host cost of tirx_launch on a cached kernel against a raw
 * cuLaunchKernel of the same cubin with the same parameters.
 *
 *   launch_overhead [out.csv] [launches]
 *
 * Both paths launch the empty example kernel (one i32 parameter, one warp) on the legacy
 * default stream. tirx_launch is measured twice: from a thread with no current context (tirx
 * pushes and pops its primary context) and, interleaved with the raw launches, with the
 * context current. After a warm-up, each launch call is timed on its own (clock_gettime around
 * the call), alternating blocks of the two methods, and the stream is drained between blocks
 * (not timed) so the driver's launch queue never fills. Prints the median, p10 and p90 of
 * each and the ratio of medians; writes them as CSV when a path is given. Without a GPU it
 * says so and exits 0.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "jit/jit.h"
#include "demo_kernels.h"

enum { BLOCK = 256, WARMUP = 2000 };

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double pct(const double *sorted, size_t n, double p) {
  size_t i = (size_t)(p * (double)(n - 1) + 0.5);
  return sorted[i < n ? i : n - 1];
}

int main(int argc, char **argv) {
  const char *csv = argc > 1 ? argv[1] : NULL;
  long launches = argc > 2 ? strtol(argv[2], NULL, 10) : 100000;
  if (launches < BLOCK)
    launches = BLOCK;
  launches -= launches % BLOCK;

  tirx_runtime *rt = NULL;
  if (tirx_runtime_create(NULL, &rt) != TIRX_OK) {
    fprintf(stderr, "launch_overhead: %s\n", tirx_last_error());
    return 1;
  }
  if (!tirx_runtime_has_device(rt)) {
    printf("launch_overhead: no GPU present (%s): nothing to measure\n",
           tirx_runtime_device_error(rt));
    tirx_runtime_destroy(rt);
    return 0;
  }
  tirx_kernel *k = example_empty();
  if (!k)
    return 1;
  tirx_arg args[] = {tirx_arg_i32(0)};
  int rc = 1;
  double *t_tirx = malloc((size_t)launches * sizeof(double));
  double *t_raw = malloc((size_t)launches * sizeof(double));
  double *t_noctx = malloc((size_t)launches * sizeof(double));
  tirx_compiled *c = NULL;
  CUmodule mod = NULL;
  CUfunction fn = NULL;
  bool pushed = false;
  if (!t_tirx || !t_raw || !t_noctx)
    goto done;

  /* First tirx_launch from a thread with no current context: tirx pushes and pops its
   * primary context around each call. */
  for (int i = 0; i < WARMUP; i++) {
    if (tirx_launch(rt, k, args, 1, NULL) != TIRX_OK) {
      fprintf(stderr, "launch_overhead: %s\n", tirx_last_error());
      goto done;
    }
    if (i % BLOCK == BLOCK - 1)
      tirx_runtime_synchronize(rt, NULL);
  }
  for (long b = 0; b < launches; b += BLOCK) {
    for (int i = 0; i < BLOCK; i++) {
      double t0 = now_ns();
      tirx_status st = tirx_launch(rt, k, args, 1, NULL);
      t_noctx[b + i] = now_ns() - t0;
      if (st != TIRX_OK) {
        fprintf(stderr, "launch_overhead: %s\n", tirx_last_error());
        goto done;
      }
    }
    tirx_runtime_synchronize(rt, NULL);
  }

  /* The raw path: the same cubin, loaded by hand, launched with the plan's parameters, with
   * the context current on this thread (so tirx_launch also finds it current from here on). */
  tirx__launch_plan plan;
  if (tirx__kernel_plan(k, "launch_overhead", args, 1, &plan) != TIRX_OK ||
      tirx_compile(rt, k, NULL, &c) != TIRX_OK) {
    fprintf(stderr, "launch_overhead: %s\n", tirx_last_error());
    goto done;
  }
  CUresult r = rt->drv.CtxPushCurrent(rt->ctx);
  pushed = r == CUDA_SUCCESS;
  if (r == CUDA_SUCCESS)
    r = rt->drv.ModuleLoadDataEx(&mod, tirx_compiled_cubin(c, NULL), 0, NULL, NULL);
  if (r == CUDA_SUCCESS)
    r = rt->drv.ModuleGetFunction(&fn, mod, tirx_compiled_entry(c));
  if (r != CUDA_SUCCESS) {
    char text[256];
    tirx__driver_describe(&rt->drv, r, text, sizeof text);
    fprintf(stderr, "launch_overhead: loading the cubin by hand: %s\n", text);
    goto done;
  }

  /* Warm-up: compiles and loads tirx's copy, warms the driver's paths and the caches. */
  for (int i = 0; i < WARMUP; i++) {
    if (tirx_launch(rt, k, args, 1, NULL) != TIRX_OK ||
        rt->drv.LaunchKernel(fn, plan.grid[0], plan.grid[1], plan.grid[2], plan.block[0],
                             plan.block[1], plan.block[2], plan.shared_bytes, NULL, plan.params,
                             NULL) != CUDA_SUCCESS) {
      fprintf(stderr, "launch_overhead: warm-up launch failed: %s\n", tirx_last_error());
      goto done;
    }
    if (i % BLOCK == BLOCK - 1)
      tirx_runtime_synchronize(rt, NULL);
  }
  tirx_runtime_synchronize(rt, NULL);

  for (long b = 0; b < launches; b += BLOCK) {
    for (int i = 0; i < BLOCK; i++) {
      double t0 = now_ns();
      tirx_status st = tirx_launch(rt, k, args, 1, NULL);
      t_tirx[b + i] = now_ns() - t0;
      if (st != TIRX_OK) {
        fprintf(stderr, "launch_overhead: %s\n", tirx_last_error());
        goto done;
      }
    }
    tirx_runtime_synchronize(rt, NULL);
    for (int i = 0; i < BLOCK; i++) {
      double t0 = now_ns();
      r = rt->drv.LaunchKernel(fn, plan.grid[0], plan.grid[1], plan.grid[2], plan.block[0],
                               plan.block[1], plan.block[2], plan.shared_bytes, NULL, plan.params,
                               NULL);
      t_raw[b + i] = now_ns() - t0;
      if (r != CUDA_SUCCESS) {
        fprintf(stderr, "launch_overhead: cuLaunchKernel failed (%d)\n", (int)r);
        goto done;
      }
    }
    tirx_runtime_synchronize(rt, NULL);
  }
  qsort(t_tirx, (size_t)launches, sizeof(double), cmp_double);
  qsort(t_raw, (size_t)launches, sizeof(double), cmp_double);
  qsort(t_noctx, (size_t)launches, sizeof(double), cmp_double);
  size_t n = (size_t)launches;
  double mt = pct(t_tirx, n, 0.5) / 1e3, mr = pct(t_raw, n, 0.5) / 1e3;
  double mn = pct(t_noctx, n, 0.5) / 1e3;
  printf("launch_overhead on %s, %ld launches each (after %d warm-up):\n",
         tirx_runtime_device_name(rt), launches, WARMUP);
  printf("  %-30s median %7.3f us  p10 %7.3f us  p90 %7.3f us\n", "tirx_launch", mt,
         pct(t_tirx, n, 0.1) / 1e3, pct(t_tirx, n, 0.9) / 1e3);
  printf("  %-30s median %7.3f us  p10 %7.3f us  p90 %7.3f us\n", "tirx_launch (no current ctx)",
         mn, pct(t_noctx, n, 0.1) / 1e3, pct(t_noctx, n, 0.9) / 1e3);
  printf("  %-30s median %7.3f us  p10 %7.3f us  p90 %7.3f us\n", "cuLaunchKernel", mr,
         pct(t_raw, n, 0.1) / 1e3, pct(t_raw, n, 0.9) / 1e3);
  printf("  ratio tirx_launch / cuLaunchKernel (medians): %.3f (%.3f without a current ctx)\n",
         mt / mr, mn / mr);
  if (csv) {
    FILE *f = fopen(csv, "w");
    if (!f) {
      perror(csv);
      goto done;
    }
    fprintf(f, "method,launches,median_us,p10_us,p90_us\n");
    fprintf(f, "tirx_launch,%ld,%.4f,%.4f,%.4f\n", launches, mt, pct(t_tirx, n, 0.1) / 1e3,
            pct(t_tirx, n, 0.9) / 1e3);
    fprintf(f, "tirx_launch_no_current_ctx,%ld,%.4f,%.4f,%.4f\n", launches, mn,
            pct(t_noctx, n, 0.1) / 1e3, pct(t_noctx, n, 0.9) / 1e3);
    fprintf(f, "cuLaunchKernel,%ld,%.4f,%.4f,%.4f\n", launches, mr, pct(t_raw, n, 0.1) / 1e3,
            pct(t_raw, n, 0.9) / 1e3);
    fprintf(f, "ratio,%ld,%.4f,,\n", launches, mt / mr);
    fclose(f);
    printf("  wrote %s\n", csv);
  }
  rc = 0;
done:
  if (mod)
    rt->drv.ModuleUnload(mod);
  if (pushed) {
    CUcontext popped;
    rt->drv.CtxPopCurrent(&popped);
  }
  tirx_compiled_destroy(c);
  free(t_tirx);
  free(t_raw);
  free(t_noctx);
  tirx_kernel_release(k);
  tirx_runtime_destroy(rt);
  return rc;
}
