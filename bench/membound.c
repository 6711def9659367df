/*
 * membound: the row kernels of examples/membound.c on the GPU, against a device-to-device
 * copy of the same bytes.
 *
 *   membound [--plan] [out.csv] [reps] [all | sweep | cluster | weights | staged | occupancy]
 *            [kernel] [width]
 *
 * --plan: no measurement (no GPU needed): one line per kernel and variant that would be
 * measured, with the FNV-1a hash of its generated source.
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
#include "rows_ref.h"

/* The row kernels' options of the current test (each test runs in its own process). */
static tirx_row_options ro;

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

/* One measured variant: the knobs of membound.h it sets (0: the default) and its CSV name. */
typedef struct variant {
  const char *name;
  int threads, ctas, flags, stages, min_blocks;
} variant;

static const variant PLAIN[] = {{.name = "tirx"}};
static const variant SWEEP[] = {{.name = "tirx"},
                                {.name = "tirx-T128", .threads = 128},
                                {.name = "tirx-T256", .threads = 256},
                                {.name = "tirx-T512", .threads = 512},
                                {.name = "tirx-T1024", .threads = 1024}};
static const variant CLUSTER[] = {{.name = "tirx"},
                                  {.name = "tirx-c2", .ctas = 2},
                                  {.name = "tirx-c2-T256", .threads = 256, .ctas = 2},
                                  {.name = "tirx-c2-T1024", .threads = 1024, .ctas = 2},
                                  {.name = "tirx-c4", .ctas = 4},
                                  {.name = "tirx-c4-T128", .threads = 128, .ctas = 4},
                                  {.name = "tirx-c4-T512", .threads = 512, .ctas = 4},
                                  {.name = "tirx-c4-T1024", .threads = 1024, .ctas = 4}};
static const variant WEIGHTS[] = {
    {.name = "tirx"},
    {.name = "tirx-wcs", .flags = TIRX_ROW_VARIANT_WEIGHTS_STREAM},
    {.name = "tirx-wearly", .flags = TIRX_ROW_VARIANT_WEIGHTS_EARLY},
    {.name = "tirx-wcs-early", .flags = TIRX_ROW_VARIANT_WEIGHTS_STREAM | TIRX_ROW_VARIANT_WEIGHTS_EARLY}};
static const variant STAGED[] = {{.name = "tirx"},
                                 {.name = "tirx-unstaged", .flags = TIRX_ROW_VARIANT_UNSTAGED},
                                 {.name = "tirx-S1", .stages = 1},
                                 {.name = "tirx-S2", .stages = 2},
                                 {.name = "tirx-S3", .stages = 3},
                                 {.name = "tirx-wglobal", .flags = TIRX_ROW_VARIANT_WEIGHTS_GLOBAL},
                                 {.name = "tirx-wglobal-S3", .flags = TIRX_ROW_VARIANT_WEIGHTS_GLOBAL, .stages = 3}};
static const variant OCCUPANCY[] = {{.name = "tirx"},
                                    {.name = "tirx-minb4", .min_blocks = 4},
                                    {.name = "tirx-minb5", .min_blocks = 5},
                                    {.name = "tirx-minb6", .min_blocks = 6},
                                    {.name = "tirx-minb8", .min_blocks = 8}};

static bool is(tirx_row_op kind, tirx_row_op a, tirx_row_op b, tirx_row_op c) {
  return kind == a || kind == b || kind == c;
}

/* Whether variant v (not the first of its mode) measures something the default kernel does
 * not: a cluster that applies, weight variants of the kernels with weight rows, staged
 * variants of the kernels that stage (each only where it builds a staged kernel; "unstaged"
 * only where the default is staged), occupancy floors that fit and are not staged. */
static bool applies(const variant *v, tirx_row_op kind, tirx_dtype dt, int64_t W) {
  if (v->ctas > 1) { /* with the variant's threads per CTA, which decide the split */
    ro.threads = v->threads;
    ro.cluster = v->ctas;
    bool ok = row_plan(kind, &ro, dt, W).cluster == v->ctas;
    ro.threads = 0;
    ro.cluster = 0;
    return ok;
  }
  if (v->flags & (TIRX_ROW_VARIANT_WEIGHTS_STREAM | TIRX_ROW_VARIANT_WEIGHTS_EARLY))
    return is(kind, TIRX_ROW_OP_RMSNORM, TIRX_ROW_OP_ADD_RMSNORM, TIRX_ROW_OP_LAYERNORM);
  if (v->min_blocks) {
    int T = (int)(W <= TIRX_ROW_WARP_MAX_WIDTH ? 32 * TIRX_ROW_WARPS
                                               : (row_threads(&ro, dt, W) + 31) / 32 * 32);
    return v->min_blocks * T <= 2048 && row_plan(kind, &ro, dt, W).stages == 0;
  }
  if (v->stages || (v->flags & (TIRX_ROW_VARIANT_UNSTAGED | TIRX_ROW_VARIANT_WEIGHTS_GLOBAL))) {
    if (!is(kind, TIRX_ROW_OP_RMSNORM, TIRX_ROW_OP_LAYERNORM, TIRX_ROW_OP_SOFTMAX)) return false;
    if ((v->flags & TIRX_ROW_VARIANT_WEIGHTS_GLOBAL) && kind == TIRX_ROW_OP_SOFTMAX) return false;
    if (v->flags & TIRX_ROW_VARIANT_UNSTAGED) return row_plan(kind, &ro, dt, W).stages > 0; /* default */
    ro.variant = v->flags;
    ro.stages = v->stages;
    bool staged = row_plan(kind, &ro, dt, W).stages > 0;
    ro.variant = 0;
    ro.stages = 0;
    return staged;
  }
  return true;
}

/* kind's kernel over rows of W with v's knobs (reset afterwards); NULL with err on failure. */
static tirx_kernel *build_variant(const variant *v, tirx_row_op kind, tirx_dtype dt,
                                  int64_t W, char *err, size_t cap) {
  ro.threads = v->threads;
  ro.cluster = v->ctas;
  ro.variant = v->flags;
  ro.stages = v->stages;
  ro.min_blocks = v->min_blocks;
  tirx_kernel *k = row_kernel(kind, &ro, dt, W, false, err, cap);
  ro.threads = 0;
  ro.cluster = 0;
  ro.variant = 0;
  ro.stages = 0;
  ro.min_blocks = 0;
  return k;
}

int main(int argc, char **argv) {
  /* --plan: list what would be measured (kernel, variant, shape, the kernel's source hash),
   * without a GPU. */
  bool plan = argc > 1 && strcmp(argv[1], "--plan") == 0;
  if (plan) argc--, argv++;
  const char *csv = argc > 1 ? argv[1] : NULL;
  int reps = argc > 2 ? atoi(argv[2]) : 15;
  const char *mode = argc > 3 ? argv[3] : "all";
  const char *only = argc > 4 && strcmp(argv[4], "all") ? argv[4] : NULL; /* one kernel */
  int64_t width_only = argc > 5 ? atoll(argv[5]) : 0; /* one shape by width */
  static const struct { const char *mode; const variant *v; int n; } MODES[] = {
      {"sweep", SWEEP, 5}, {"cluster", CLUSTER, 8}, {"weights", WEIGHTS, 4},
      {"staged", STAGED, 7}, {"occupancy", OCCUPANCY, 5}};
  const variant *variants = PLAIN;
  int nvariants = 1;
  for (size_t i = 0; i < sizeof MODES / sizeof MODES[0]; i++)
    if (strcmp(mode, MODES[i].mode) == 0) variants = MODES[i].v, nvariants = MODES[i].n;
  if (reps < 3) reps = 3;
  tirx_runtime *rt = NULL;
  CHECK(tirx_runtime_create(NULL, &rt));
  if (!plan && !tirx_runtime_has_device(rt)) {
    printf("membound: no CUDA device (%s): nothing measured\n", tirx_runtime_device_error(rt));
    tirx_runtime_destroy(rt);
    return 0;
  }
  FILE *f = csv && !plan ? fopen(csv, "w") : NULL;
  if (f) fprintf(f, "impl,kernel,dtype,rows,width,us,gbps,copy_gbps,ratio_copy\n");
  static const int64_t shapes[][2] = {{16384, 8192}, {16384, 5000}, {4096, 32768}};
  const tirx_dtype dt = TIRX_BF16;
  if (!plan)
    printf("%-12s %-9s %6s %6s %9s %8s %8s %6s\n", "kernel", "impl", "rows", "width", "us", "GB/s", "copy", "ratio");
  for (int s = 0; s < 3; s++) {
    int64_t rows = shapes[s][0], W = shapes[s][1];
    if (width_only && W != width_only) continue;
    size_t n = (size_t)rows * (size_t)W;
    /* x is 2W wide for silu_mul; every other tensor rows x W. */
    void *x = NULL, *res = NULL, *w = NULL, *bias = NULL;
    void *out = NULL, *out2 = NULL, *cbuf = NULL; /* cbuf: the copy's destination, 4n bytes */
    if (!plan) {
      x = dev_random(rt, 2 * n, 1 + (uint64_t)s), res = dev_random(rt, n, 7);
      w = dev_random(rt, (size_t)W, 3), bias = dev_random(rt, (size_t)W, 5);
      CHECK(tirx_runtime_alloc(rt, n * 4 + 16, &cbuf));
      CHECK(tirx_runtime_alloc(rt, n * 2 + 16, &out));
      CHECK(tirx_runtime_alloc(rt, n * 2 + 16, &out2));
    }
    for (int run = 0; run < nvariants * TIRX_ROW_OP_COUNT; run++) {
      tirx_row_op kind = (tirx_row_op)(run % TIRX_ROW_OP_COUNT);
      const variant *v = &variants[run / TIRX_ROW_OP_COUNT];
      if (only && strcmp(only, tirx_kernels_row_name(kind)) != 0) continue;
      if (v != variants && !applies(v, kind, dt, W)) continue;
      char err[2048] = "";
      const char *impl = v->name;
      tirx_kernel *k = build_variant(v, kind, dt, W, err, sizeof err);
      if (!k) {
        fprintf(stderr, "%s: %s\n", tirx_kernels_row_name(kind), err);
        continue;
      }
      if (plan) { /* FNV-1a of the source */
        uint64_t h = 1469598103934665603ull;
        for (const char *c = tirx_kernel_source(k); *c; c++) h = (h ^ (uint8_t)*c) * 1099511628211ull;
        printf("%s %s %lld %lld %016llx\n", tirx_kernels_row_name(kind), impl, (long long)rows,
               (long long)W, (unsigned long long)h);
        tirx_kernel_release(k);
        continue;
      }
      bool red = kind == TIRX_ROW_OP_SUM || kind == TIRX_ROW_OP_MAX;
      int64_t win = kind == TIRX_ROW_OP_SILU_MUL ? 2 * W : W;
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
      case TIRX_ROW_OP_RMSNORM: args[na++] = t_w, args[na++] = t_o, args[na++] = eps; break;
      case TIRX_ROW_OP_LAYERNORM: args[na++] = t_w, args[na++] = t_b, args[na++] = t_o, args[na++] = eps; break;
      case TIRX_ROW_OP_ADD_RMSNORM:
        args[na++] = t_r, args[na++] = t_w, args[na++] = t_o, args[na++] = t_o2, args[na++] = eps;
        break;
      case TIRX_ROW_OP_CHAIN: args[na++] = t_o, args[na++] = tirx_arg_f32(0.75f), args[na++] = tirx_arg_f32(0.25f); break;
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
      double bytes = row_bytes(kind, dt, rows, W);
      for (int r = 0; r < reps; r++) { /* the copy: half the bytes, read + written */
        double t0 = now_us();
        for (int i = 0; i < 10; i++)
          CHECK(tirx_runtime_copy(rt, cbuf, x, (size_t)(bytes / 2), TIRX_COPY_DEVICE_TO_DEVICE));
        CHECK(tirx_runtime_synchronize(rt, NULL));
        c[r] = (now_us() - t0) / 10;
      }
      double us = median(t, reps), cus = median(c, reps);
      double gbps = bytes / us / 1e3, cgbps = bytes / cus / 1e3;
      printf("%-12s %-9s %6lld %6lld %9.1f %8.0f %8.0f %6.3f\n", tirx_kernels_row_name(kind),
             impl, (long long)rows, (long long)W, us, gbps, cgbps, gbps / cgbps);
      if (f)
        fprintf(f, "%s,%s,bf16,%lld,%lld,%.2f,%.1f,%.1f,%.4f\n", impl, tirx_kernels_row_name(kind),
                (long long)rows, (long long)W, us, gbps, cgbps, gbps / cgbps);
      free(t);
      free(c);
      tirx_kernel_release(k);
    }
    void *bufs[] = {x, res, w, bias, out, out2, cbuf};
    for (int i = 0; i < 7 && !plan; i++) tirx_runtime_free(rt, bufs[i]);
  }
  if (f) fclose(f);
  tirx_runtime_destroy(rt);
  return 0;
}
