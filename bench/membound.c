/*
 * membound: the row kernels of examples/membound.c on the GPU, against a device-to-device
 * copy of the same bytes.
 *
 *   membound [out.csv] [reps] [all | sweep | cluster | weights | staged | occupancy] [kernel]
 *            [width]
 *
 * kernel: measure only the kernel of that name (membound_name: rmsnorm, layernorm, ...; "all":
 * every kernel); width: only the shape of that width.
 * occupancy: the one-row-per-CTA kernels also with an occupancy floor of 4, 5, 6 and 8 CTAs per
 * SM (membound_set_min_blocks: ptxas caps registers to fit, spilling if it must), "tirx-minb<n>",
 * where n CTAs' threads fit in an SM.
 * staged: rmsnorm, layernorm and softmax also with staged rows forced off where they are the
 * default ("tirx-unstaged"), with 1, 2 and 3 stages forced ("tirx-S<n>", where TMA can take
 * the row and the stages fit) and with the weight rows read from global memory instead of
 * shared ("tirx-wglobal", "tirx-wglobal-S3"; membound_stages, membound_set_stages).
 * weights: rmsnorm, add_rmsnorm and layernorm also with the weight rows streamed (.cs, "tirx-wcs"),
 * loaded before the reduction ("tirx-wearly") and both ("tirx-wcs-early") (membound_set_variant).
 * sweep: each kernel also with 128, 256, 512 and 1024 threads per row (membound_set_threads),
 * rows "tirx-T<threads>" in the CSV, to check the heuristic (impl "tirx").
 * cluster: the kernels that can take a cluster (membound_cluster: rmsnorm, add_rmsnorm,
 * layernorm, softmax at 4096x32768) also with 2 and 4 CTAs per row (membound_set_cluster),
 * each with the heuristic's threads per CTA and the others that split the part evenly; rows
 * "tirx-c<ctas>" and "tirx-c<ctas>-T<threads>". Shapes and kernels where no cluster applies
 * are measured once (impl "tirx").
 *
 * For each kernel at bf16 16384x8192, 16384x5000 and 4096x32768: warm-up (JIT compile), then
 * `reps` samples of 10 back-to-back launches followed by a synchronize (host clock), median per
 * launch. Bytes: membound_bytes (inputs read once, outputs written once). The copy reference
 * moves half those bytes (read + write counted), timed like the kernels (10 copies, then a
 * synchronize; a device-to-device cuMemcpy does not wait for the copy), median. Prints GB/s
 * and the ratio to the copy; CSV columns
 * impl,kernel,dtype,rows,width,us,gbps,copy_gbps,ratio_copy. Without a GPU it says so and
 * exits 0.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_util.h"
#include "membound.h"

#define CHECK(call)                                                                                \
  do {                                                                                             \
    if ((call) != TIRX_OK) {                                                                       \
      fprintf(stderr, "%s: %s\n", #call, tirx_last_error());                                       \
      exit(1);                                                                                     \
    }                                                                                              \
  } while (0)

/* Random bf16 values in [-2, 2) (never zeros: see METHOD.md). */
static void *dev_random(tirx_runtime *rt, size_t n, uint64_t seed) {
  uint16_t *h = malloc(n * 2);
  for (size_t i = 0; i < n; i++) {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    float f = -2.0f + 4.0f * (float)(seed >> 40) / 16777216.0f;
    uint32_t x;
    memcpy(&x, &f, 4);
    h[i] = (uint16_t)((x + 0x7fff + ((x >> 16) & 1)) >> 16);
  }
  void *d = NULL;
  CHECK(tirx_runtime_alloc(rt, n * 2 + 16, &d));
  CHECK(tirx_runtime_copy(rt, d, h, n * 2, TIRX_COPY_HOST_TO_DEVICE));
  free(h);
  return d;
}

int main(int argc, char **argv) {
  const char *csv = argc > 1 ? argv[1] : NULL;
  int reps = argc > 2 ? atoi(argv[2]) : 15;
  const char *only = argc > 4 && strcmp(argv[4], "all") ? argv[4] : NULL; /* one kernel */
  int64_t width_only = argc > 5 ? atoll(argv[5]) : 0; /* one shape by width */
  bool sweep = argc > 3 && strcmp(argv[3], "sweep") == 0;
  bool csweep = argc > 3 && strcmp(argv[3], "cluster") == 0;
  bool wsweep = argc > 3 && strcmp(argv[3], "weights") == 0;
  bool ssweep = argc > 3 && strcmp(argv[3], "staged") == 0;
  bool osweep = argc > 3 && strcmp(argv[3], "occupancy") == 0;
  static const int minb[] = {0, 4, 5, 6, 8};
  /* {threads per CTA (0: heuristic), CTAs per row (0: one)} of each measured variant. */
  static const int plain[][2] = {{0, 0}};
  static const int weights[][2] = {{0, 0}, {0, 0}, {0, 0}, {0, 0}}; /* variant flags = index */
  static const struct { int flags, stages; const char *name; } staged_variants[] = {
      {0, 0, "tirx"},           {MEMBOUND_V_UNSTAGED, 0, "tirx-unstaged"},
      {0, 1, "tirx-S1"},        {0, 2, "tirx-S2"},
      {0, 3, "tirx-S3"},        {MEMBOUND_V_WEIGHTS_GLOBAL, 0, "tirx-wglobal"},
      {MEMBOUND_V_WEIGHTS_GLOBAL, 3, "tirx-wglobal-S3"}};
  static const int threads[][2] = {{0, 0}, {128, 0}, {256, 0}, {512, 0}, {1024, 0}};
  static const int clusters[][2] = {{0, 0},   {0, 2},   {256, 2},  {1024, 2}, {0, 4},
                                    {128, 4}, {512, 4}, {1024, 4}};
  static const int none[7][2];
  const int(*variants)[2] =
      sweep ? threads : csweep ? clusters : wsweep ? weights : ssweep || osweep ? none : plain;
  int nvariants = sweep ? 5 : csweep ? 8 : wsweep ? 4 : ssweep ? 7 : osweep ? 5 : 1;
  if (reps < 3) reps = 3;
  tirx_runtime *rt = NULL;
  CHECK(tirx_runtime_create(NULL, &rt));
  if (!tirx_runtime_has_device(rt)) {
    printf("membound: no CUDA device (%s): nothing measured\n", tirx_runtime_device_error(rt));
    tirx_runtime_destroy(rt);
    return 0;
  }
  FILE *f = csv ? fopen(csv, "w") : NULL;
  if (f) fprintf(f, "impl,kernel,dtype,rows,width,us,gbps,copy_gbps,ratio_copy\n");
  static const int64_t shapes[][2] = {{16384, 8192}, {16384, 5000}, {4096, 32768}};
  const tirx_dtype dt = TIRX_BF16;
  printf("%-12s %-9s %6s %6s %9s %8s %8s %6s\n", "kernel", "impl", "rows", "width", "us", "GB/s", "copy", "ratio");
  for (int s = 0; s < 3; s++) {
    int64_t rows = shapes[s][0], W = shapes[s][1];
    if (width_only && W != width_only) continue;
    size_t n = (size_t)rows * (size_t)W;
    /* x is 2W wide for silu_mul; every other tensor rows x W. */
    void *x = dev_random(rt, 2 * n, 1 + (uint64_t)s), *res = dev_random(rt, n, 7);
    void *w = dev_random(rt, (size_t)W, 3), *bias = dev_random(rt, (size_t)W, 5);
    void *out = NULL, *out2 = NULL, *cbuf = NULL; /* cbuf: the copy's destination, 4n bytes */
    CHECK(tirx_runtime_alloc(rt, n * 4 + 16, &cbuf));
    CHECK(tirx_runtime_alloc(rt, n * 2 + 16, &out));
    CHECK(tirx_runtime_alloc(rt, n * 2 + 16, &out2));
    for (int run = 0; run < nvariants * MEMBOUND_KIND_COUNT; run++) {
      int kind = run % MEMBOUND_KIND_COUNT, v = run / MEMBOUND_KIND_COUNT;
      if (only && strcmp(only, membound_name((membound_kind)kind)) != 0) continue;
      int nthreads = variants[v][0], ctas = variants[v][1];
      membound_set_cluster(ctas);
      membound_set_threads(nthreads);
      /* A cluster that does not apply (not this kind or shape, or threads that do not split
       * the part evenly) would measure the one-CTA kernel again. */
      bool skip = ctas > 1 && membound_cluster((membound_kind)kind, dt, W) != ctas;
      int flags = wsweep ? v : ssweep ? staged_variants[v].flags : 0;
      skip |= wsweep && flags && kind != MEMBOUND_RMSNORM && kind != MEMBOUND_ADD_RMSNORM &&
              kind != MEMBOUND_LAYERNORM;
      membound_set_variant(flags);
      /* staged: the other kernels have no staged form; a forced variant equal to the
       * default kernel is measured once */
      /* staged: the other kernels have no staged form; a variant is measured only where it
       * builds a staged kernel (and the default only once) */
      skip |= ssweep && v > 0 && (kind > MEMBOUND_SOFTMAX || kind == MEMBOUND_ADD_RMSNORM);
      if (ssweep && v > 0 && !skip) {
        membound_set_stages(staged_variants[v].stages);
        skip = membound_stages((membound_kind)kind, dt, W) < 1;
        if (v == 1) { /* unstaged: only where the default is staged */
          membound_set_variant(0);
          skip = membound_stages((membound_kind)kind, dt, W) < 1;
          membound_set_variant(flags);
        }
        if (flags == MEMBOUND_V_WEIGHTS_GLOBAL && kind == MEMBOUND_SOFTMAX) skip = true;
      }
      if (osweep && v > 0) { /* n CTAs must fit; staged kernels are persistent */
        int T = (int)(W <= MEMBOUND_WARP_MAX_WIDTH ? 32 * MEMBOUND_RMSNORM_WARPS
                                                   : (membound_threads(dt, W) + 31) / 32 * 32);
        skip |= minb[v] * T > 2048 || membound_stages((membound_kind)kind, dt, W) > 0;
        membound_set_min_blocks(minb[v]);
      }
      char err[2048] = "", impl[32] = "tirx";
      if (ctas > 1 && nthreads) snprintf(impl, sizeof impl, "tirx-c%d-T%d", ctas, nthreads);
      else if (ctas > 1) snprintf(impl, sizeof impl, "tirx-c%d", ctas);
      else if (nthreads) snprintf(impl, sizeof impl, "tirx-T%d", nthreads);
      else if (ssweep)
        snprintf(impl, sizeof impl, "%s", staged_variants[v].name);
      else if (osweep && v > 0)
        snprintf(impl, sizeof impl, "tirx-minb%d", minb[v]);
      else if (flags)
        snprintf(impl, sizeof impl, "%s", flags == 1 ? "tirx-wcs" : flags == 2 ? "tirx-wearly" : "tirx-wcs-early");
      tirx_kernel *k = skip ? NULL : membound_build((membound_kind)kind, dt, W, false, err, sizeof err);
      membound_set_threads(0);
      membound_set_cluster(0);
      membound_set_variant(0);
      membound_set_stages(0);
      membound_set_min_blocks(0);
      if (skip) continue;
      if (!k) {
        fprintf(stderr, "%s: %s\n", membound_name((membound_kind)kind), err);
        continue;
      }
      bool red = kind == MEMBOUND_ROW_SUM || kind == MEMBOUND_ROW_MAX;
      int64_t win = kind == MEMBOUND_SILU_MUL ? 2 * W : W;
      tirx_arg t_x = tirx_arg_tensor(x, dt, 2, (int64_t[]){rows, win}, NULL);
      tirx_arg t_r = tirx_arg_tensor(res, dt, 2, (int64_t[]){rows, W}, NULL);
      tirx_arg t_w = tirx_arg_tensor(w, dt, 2, (int64_t[]){1, W}, NULL);
      tirx_arg t_b = tirx_arg_tensor(bias, dt, 2, (int64_t[]){1, W}, NULL);
      tirx_arg t_o = red ? tirx_arg_tensor(out, TIRX_F32, 2, (int64_t[]){rows, 1}, NULL)
                         : tirx_arg_tensor(out, dt, 2, (int64_t[]){rows, W}, NULL);
      tirx_arg t_o2 = tirx_arg_tensor(out2, dt, 2, (int64_t[]){rows, W}, NULL);
      tirx_arg eps = tirx_arg_f32(1e-5f), args[8];
      int na = 0;
      args[na++] = tirx_arg_i32((int32_t)rows);
      args[na++] = t_x;
      switch (kind) {
      case MEMBOUND_RMSNORM: args[na++] = t_w, args[na++] = t_o, args[na++] = eps; break;
      case MEMBOUND_LAYERNORM: args[na++] = t_w, args[na++] = t_b, args[na++] = t_o, args[na++] = eps; break;
      case MEMBOUND_ADD_RMSNORM:
        args[na++] = t_r, args[na++] = t_w, args[na++] = t_o, args[na++] = t_o2, args[na++] = eps;
        break;
      case MEMBOUND_CHAIN: args[na++] = t_o, args[na++] = tirx_arg_f32(0.75f), args[na++] = tirx_arg_f32(0.25f); break;
      default: args[na++] = t_o;
      }
      for (int i = 0; i < 5; i++) CHECK(tirx_launch(rt, k, args, na, NULL));
      CHECK(tirx_runtime_synchronize(rt, NULL));
      double *t = malloc((size_t)reps * sizeof *t), *c = malloc((size_t)reps * sizeof *c);
      for (int r = 0; r < reps; r++) {
        double t0 = now_us();
        for (int i = 0; i < 10; i++) CHECK(tirx_launch(rt, k, args, na, NULL));
        CHECK(tirx_runtime_synchronize(rt, NULL));
        t[r] = (now_us() - t0) / 10;
      }
      double bytes = membound_bytes((membound_kind)kind, dt, rows, W);
      for (int r = 0; r < reps; r++) { /* the copy: half the bytes, read + written */
        double t0 = now_us();
        for (int i = 0; i < 10; i++)
          CHECK(tirx_runtime_copy(rt, cbuf, x, (size_t)(bytes / 2), TIRX_COPY_DEVICE_TO_DEVICE));
        CHECK(tirx_runtime_synchronize(rt, NULL));
        c[r] = (now_us() - t0) / 10;
      }
      double us = median(t, reps), cus = median(c, reps);
      double gbps = bytes / us / 1e3, cgbps = bytes / cus / 1e3;
      printf("%-12s %-9s %6lld %6lld %9.1f %8.0f %8.0f %6.3f\n", membound_name((membound_kind)kind),
             impl, (long long)rows, (long long)W, us, gbps, cgbps, gbps / cgbps);
      if (f)
        fprintf(f, "%s,%s,bf16,%lld,%lld,%.2f,%.1f,%.1f,%.4f\n", impl, membound_name((membound_kind)kind),
                (long long)rows, (long long)W, us, gbps, cgbps, gbps / cgbps);
      free(t);
      free(c);
      tirx_kernel_release(k);
    }
    void *bufs[] = {x, res, w, bias, out, out2, cbuf};
    for (int i = 0; i < 7; i++) tirx_runtime_free(rt, bufs[i]);
  }
  if (f) fclose(f);
  tirx_runtime_destroy(rt);
  return 0;
}
