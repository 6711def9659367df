/*
 * membound: the row kernels of examples/membound.c on the GPU, against a device-to-device
 * copy of the same bytes.
 *
 *   membound [--plan] [out.csv] [reps] [all | sweep | cluster | weights | staged | occupancy |
 *            server | forms]
 *            [kernel] [width]
 *
 * TIRX_BENCH_ROW_FORM (environment) picks the form of silu_mul and chain in the modes above but
 * forms (rows.c: a warp or CTA per row, or the elementwise grid-stride form): unset or
 * "default", the library's choice (impl "tirx"); "rows" (TIRX_ROW_VARIANT_PER_ROW, impl
 * "tirx-rows"), "elementwise" (TIRX_ROW_VARIANT_ELEMENTWISE, "tirx-ew"), or "both": each shape
 * measured in both, one right after the other in one process (an A/B in one device call).
 * Other values: exit status 2. The other kernels ignore it; a variant's name gets the same
 * suffix ("tirx-T512-ew").
 * forms: only silu_mul and chain, always both forms back to back ("tirx-rows", "tirx-ew"), at
 * the shapes above and at rows 1, 16, 256, 16384 of widths 4096 and 14336 (silu_mul) and 4096
 * (chain), and 16384 rows of 4095 and 1000 (both), each followed by a line "forms ...
 * elementwise / per-row time T (speedup S)".
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
 *
 * Then (modes all and server) the kernels a server runs per layer, at its shapes: rmsnorm,
 * rmsnorm_fp8 and add_rmsnorm_fp8 (tirx_kernels_rmsnorm_fp8_build: e4m3 out, f32 scale per
 * row) over bf16 rows of 2048, 3072, 4096, 5120, 6144 and 7168 at batch sizes (rows) 1, 16,
 * 256 and 16384, and rope (tirx_kernels_rope_build, neox and gptj, in place, built for the
 * buffer's strides as tirx_op_rope builds it) on q [T, 32, 128]
 * and k [T, 8, 128] slices of a fused qkv buffer ([T, 48 * 128]) with f32 caches of 4096
 * positions at T = 1, 16, 256, 16384 (rows T, width (32 + 8) * 128 = 5120). Timed as above,
 * each against a copy of its own bytes in the same run. Bytes: rmsnorm 2 R W 2; rmsnorm_fp8
 * R W (2 + 1) + 4 R; add_rmsnorm_fp8 R W (2 + 2 + 2 + 1) + 4 R; rope 2 T (32 + 8) 128 2 (q and
 * k read and written) + T 128 4 (cos and sin rows) + 4 T. The weight rows are not counted.
 * server: only these rows.
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

/* kind's kernel over rows of W with v's knobs and the form bits (TIRX_ROW_VARIANT_PER_ROW,
 * TIRX_ROW_VARIANT_ELEMENTWISE or 0), reset afterwards; NULL with err on failure. */
static tirx_kernel *build_variant(const variant *v, int form, tirx_row_op kind, tirx_dtype dt,
                                  int64_t W, char *err, size_t cap) {
  ro.threads = v->threads;
  ro.cluster = v->ctas;
  ro.variant = v->flags | form;
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

/* Times k over args (as the main loop: 5 warm-up launches, reps samples of 10 launches and a
 * synchronize, median) and a copy of half `bytes` from src to dst; prints and writes one row. */
static double measure(tirx_runtime *rt, FILE *f, const tirx_kernel *k, const tirx_arg *args,
                      int na, double bytes, void *dst, const void *src, int reps,
                      const char *kernel, const char *impl, int64_t rows, int64_t W) {
  for (int i = 0; i < 5; i++) CHECK(tirx_launch(rt, k, args, na, NULL));
  CHECK(tirx_runtime_synchronize(rt, NULL));
  double *t = malloc((size_t)reps * sizeof *t), *c = malloc((size_t)reps * sizeof *c);
  for (int r = 0; r < reps; r++) {
    double t0 = now_us();
    for (int i = 0; i < 10; i++) CHECK(tirx_launch(rt, k, args, na, NULL));
    CHECK(tirx_runtime_synchronize(rt, NULL));
    t[r] = (now_us() - t0) / 10;
  }
  for (int r = 0; r < reps; r++) {
    double t0 = now_us();
    for (int i = 0; i < 10; i++)
      CHECK(tirx_runtime_copy(rt, dst, src, (size_t)(bytes / 2), TIRX_COPY_DEVICE_TO_DEVICE));
    CHECK(tirx_runtime_synchronize(rt, NULL));
    c[r] = (now_us() - t0) / 10;
  }
  double us = median(t, reps), cus = median(c, reps);
  double gbps = bytes / us / 1e3, cgbps = bytes / cus / 1e3;
  printf("%-12s %-9s %6lld %6lld %9.1f %8.0f %8.0f %6.3f\n", kernel, impl, (long long)rows,
         (long long)W, us, gbps, cgbps, gbps / cgbps);
  if (f)
    fprintf(f, "%s,%s,bf16,%lld,%lld,%.2f,%.1f,%.1f,%.4f\n", impl, kernel, (long long)rows,
            (long long)W, us, gbps, cgbps, gbps / cgbps);
  free(t);
  free(c);
  return us;
}

/* The forms of silu_mul and chain measured (TIRX_BENCH_ROW_FORM, see the top): form bits
 * (0: the library's choice) and the suffix of their impl names. */
static int forms[2] = {0, 0}, nforms = 1;

static const char *form_suffix(int form) {
  return form == TIRX_ROW_VARIANT_PER_ROW ? "-rows" : form == TIRX_ROW_VARIANT_ELEMENTWISE ? "-ew" : "";
}

/* forms[] from TIRX_BENCH_ROW_FORM; false (with a message) for a value it does not know. */
static bool read_forms(void) {
  const char *e = getenv("TIRX_BENCH_ROW_FORM");
  if (!e || !*e || strcmp(e, "default") == 0) return true;
  if (strcmp(e, "rows") == 0) forms[0] = TIRX_ROW_VARIANT_PER_ROW;
  else if (strcmp(e, "elementwise") == 0) forms[0] = TIRX_ROW_VARIANT_ELEMENTWISE;
  else if (strcmp(e, "both") == 0)
    forms[0] = TIRX_ROW_VARIANT_PER_ROW, forms[1] = TIRX_ROW_VARIANT_ELEMENTWISE, nforms = 2;
  else {
    fprintf(stderr, "membound: TIRX_BENCH_ROW_FORM is '%s', expected default, rows, elementwise "
            "or both\n", e);
    return false;
  }
  return true;
}

/* FNV-1a of k's source, for --plan. */
static void plan_line(const tirx_kernel *k, const char *kernel, const char *impl, int64_t rows,
                      int64_t W) {
  uint64_t h = 1469598103934665603ull;
  for (const char *c = tirx_kernel_source(k); *c; c++) h = (h ^ (uint8_t)*c) * 1099511628211ull;
  printf("%s %s %lld %lld %016llx\n", kernel, impl, (long long)rows, (long long)W,
         (unsigned long long)h);
}

/* The server rows (see the top): norms at hidden sizes x batch sizes, then rope. */
static void server_rows(tirx_runtime *rt, FILE *f, bool plan, int reps, const char *only,
                        int64_t width_only) {
  static const int64_t widths[] = {2048, 3072, 4096, 5120, 6144, 7168};
  static const int64_t batches[] = {1, 16, 256, 16384};
  static const char *const names[] = {"rmsnorm", "rmsnorm_fp8", "add_rmsnorm_fp8"};
  const tirx_dtype dt = TIRX_BF16;
  const size_t nmax = 16384 * 7168;
  void *x = NULL, *res = NULL, *w = NULL, *out = NULL, *out2 = NULL, *q8 = NULL, *sc = NULL,
       *cbuf = NULL, *csrc = NULL; /* the copy's buffers: 4 nmax bytes, the most half of a row moves */
  if (!plan) {
    x = dev_random(rt, nmax, 11), res = dev_random(rt, nmax, 13), w = dev_random(rt, 7168, 17);
    CHECK(tirx_runtime_alloc(rt, nmax * 2 + 16, &out));
    CHECK(tirx_runtime_alloc(rt, nmax * 2 + 16, &out2));
    CHECK(tirx_runtime_alloc(rt, nmax + 16, &q8));
    CHECK(tirx_runtime_alloc(rt, 16384 * 4 + 16, &sc));
    CHECK(tirx_runtime_alloc(rt, nmax * 4 + 16, &cbuf));
    CHECK(tirx_runtime_alloc(rt, nmax * 4 + 16, &csrc));
  }
  for (size_t wi = 0; wi < sizeof widths / sizeof widths[0]; wi++)
    for (int kn = 0; kn < 3; kn++) {
      int64_t W = widths[wi];
      if (width_only && W != width_only) continue;
      if (only && strcmp(only, names[kn]) != 0) continue;
      char err[2048] = "";
      tirx_kernel *k = NULL;
      if (kn == 0) k = row_kernel(TIRX_ROW_OP_RMSNORM, NULL, dt, W, false, err, sizeof err);
      else if (tirx_kernels_rmsnorm_fp8_build(NULL, dt, W, kn == 2, &k) != TIRX_OK)
        snprintf(err, sizeof err, "%s", tirx_last_error());
      if (!k) {
        fprintf(stderr, "%s: %s\n", names[kn], err);
        continue;
      }
      for (size_t bi = 0; bi < sizeof batches / sizeof batches[0]; bi++) {
        int64_t R = batches[bi];
        if (plan) {
          plan_line(k, names[kn], "tirx", R, W);
          continue;
        }
        int64_t xs[2] = {R, W}, ws[2] = {1, W}, ss[2] = {R, 1};
        tirx_arg a[8];
        int na = 0;
        a[na++] = tirx_arg_i32((int32_t)R);
        a[na++] = tirx_arg_tensor(x, dt, 2, xs, NULL);
        if (kn == 2) a[na++] = tirx_arg_tensor(res, dt, 2, xs, NULL);
        a[na++] = tirx_arg_tensor(w, dt, 2, ws, NULL);
        a[na++] = kn ? tirx_arg_tensor(q8, TIRX_U8, 2, xs, NULL) : tirx_arg_tensor(out, dt, 2, xs, NULL);
        if (kn == 2) a[na++] = tirx_arg_tensor(out2, dt, 2, xs, NULL);
        if (kn) a[na++] = tirx_arg_tensor(sc, TIRX_F32, 2, ss, NULL);
        a[na++] = tirx_arg_f32(1e-5f);
        double e = (double)R * (double)W;
        double bytes = kn == 0 ? 4 * e : kn == 1 ? 3 * e + 4.0 * (double)R : 7 * e + 4.0 * (double)R;
        measure(rt, f, k, a, na, bytes, cbuf, csrc, reps, names[kn], "tirx", R, W);
      }
      tirx_kernel_release(k);
    }
  /* rope: q [T, 32, 128] and k [T, 8, 128] in a fused qkv buffer [T, 48 * 128] */
  static const int64_t tokens[] = {1, 16, 256, 16384};
  const int H = 32, HKV = 8, D = 128, P = 4096;
  void *qkv = NULL, *pos = NULL, *cs = NULL, *sn = NULL;
  if (!plan) {
    qkv = dev_random(rt, (size_t)16384 * 48 * 128, 19);
    int32_t *hp = malloc(16384 * 4);
    float *hc = malloc((size_t)P * 64 * 4);
    for (int i = 0; i < 16384; i++) hp[i] = (int32_t)((i * 2654435761u) % (unsigned)P);
    for (int i = 0; i < P * 64; i++) hc[i] = (float)(i % 97) / 97.0f;
    CHECK(tirx_runtime_alloc(rt, 16384 * 4 + 16, &pos));
    CHECK(tirx_runtime_alloc(rt, (size_t)P * 64 * 4 + 16, &cs));
    CHECK(tirx_runtime_alloc(rt, (size_t)P * 64 * 4 + 16, &sn));
    CHECK(tirx_runtime_copy(rt, pos, hp, 16384 * 4, TIRX_COPY_HOST_TO_DEVICE));
    CHECK(tirx_runtime_copy(rt, cs, hc, (size_t)P * 64 * 4, TIRX_COPY_HOST_TO_DEVICE));
    CHECK(tirx_runtime_copy(rt, sn, hc, (size_t)P * 64 * 4, TIRX_COPY_HOST_TO_DEVICE));
    free(hp);
    free(hc);
  }
  for (int style = 0; style < 2; style++) {
    const char *name = style ? "rope_gptj" : "rope";
    if (only && strcmp(only, name) != 0) continue;
    if (width_only && width_only != (H + HKV) * D) continue;
    /* built for the buffer's strides, as tirx_op_rope builds it (16-byte vector moves) */
    tirx_rope_options o = {.size = sizeof o, .style = (tirx_rope_style)style,
                           .q_strides = {48 * 128, D}, .k_strides = {48 * 128, D}};
    tirx_kernel *k = NULL;
    if (tirx_kernels_rope_build(&o, dt, TIRX_F32, D, H, HKV, &k) != TIRX_OK) {
      fprintf(stderr, "%s: %s\n", name, tirx_last_error());
      continue;
    }
    for (size_t ti = 0; ti < sizeof tokens / sizeof tokens[0]; ti++) {
      int64_t T = tokens[ti];
      if (plan) {
        plan_line(k, name, "tirx", T, (H + HKV) * D);
        continue;
      }
      int64_t qs[3] = {T, H, D}, ks[3] = {T, HKV, D}, st[3] = {48 * 128, D, 1};
      tirx_arg a[7] = {tirx_arg_i32((int32_t)T),
                       tirx_arg_tensor(qkv, dt, 3, qs, st),
                       tirx_arg_tensor((char *)qkv + (size_t)H * D * 2, dt, 3, ks, st),
                       tirx_arg_tensor(pos, TIRX_I32, 1, (int64_t[]){T}, NULL),
                       tirx_arg_i32(P),
                       tirx_arg_tensor(cs, TIRX_F32, 2, (int64_t[]){P, D / 2}, NULL),
                       tirx_arg_tensor(sn, TIRX_F32, 2, (int64_t[]){P, D / 2}, NULL)};
      double bytes = 2.0 * (double)T * (H + HKV) * D * 2 + (double)T * D * 4 + 4.0 * (double)T;
      measure(rt, f, k, a, 7, bytes, cbuf, csrc, reps, name, "tirx", T, (H + HKV) * D);
    }
    tirx_kernel_release(k);
  }
  void *bufs[] = {x, res, w, out, out2, q8, sc, cbuf, csrc, qkv, pos, cs, sn};
  for (int i = 0; i < 13 && !plan; i++) tirx_runtime_free(rt, bufs[i]);
}

/* Mode forms (see the top): silu_mul and chain in both forms, one after the other for each
 * shape, then the elementwise form's time against the per-row one's. */
static void forms_rows(tirx_runtime *rt, FILE *f, bool plan, int reps, const char *only,
                       int64_t width_only) {
  static const struct { tirx_row_op kind; int64_t rows, width; } cases[] = {
      {TIRX_ROW_OP_SILU_MUL, 16384, 8192},  {TIRX_ROW_OP_SILU_MUL, 16384, 5000},
      {TIRX_ROW_OP_SILU_MUL, 4096, 32768},  {TIRX_ROW_OP_CHAIN, 16384, 8192},
      {TIRX_ROW_OP_CHAIN, 16384, 5000},     {TIRX_ROW_OP_CHAIN, 4096, 32768},
      {TIRX_ROW_OP_SILU_MUL, 1, 14336},     {TIRX_ROW_OP_SILU_MUL, 16, 14336},
      {TIRX_ROW_OP_SILU_MUL, 256, 14336},   {TIRX_ROW_OP_SILU_MUL, 16384, 14336},
      {TIRX_ROW_OP_SILU_MUL, 1, 4096},      {TIRX_ROW_OP_SILU_MUL, 16, 4096},
      {TIRX_ROW_OP_SILU_MUL, 256, 4096},    {TIRX_ROW_OP_SILU_MUL, 16384, 4096},
      {TIRX_ROW_OP_SILU_MUL, 16384, 4095},  {TIRX_ROW_OP_CHAIN, 1, 4096},
      {TIRX_ROW_OP_CHAIN, 16, 4096},        {TIRX_ROW_OP_CHAIN, 256, 4096},
      {TIRX_ROW_OP_CHAIN, 16384, 4096},     {TIRX_ROW_OP_CHAIN, 16384, 4095},
      {TIRX_ROW_OP_CHAIN, 16384, 1000},     {TIRX_ROW_OP_SILU_MUL, 16384, 1000}};
  static const int both[2] = {TIRX_ROW_VARIANT_PER_ROW, TIRX_ROW_VARIANT_ELEMENTWISE};
  const tirx_dtype dt = TIRX_BF16;
  const size_t xmax = (size_t)16384 * 2 * 14336; /* the largest x: silu_mul 16384 x 2 x 14336 */
  void *x = NULL, *out = NULL, *cbuf = NULL;
  if (!plan) {
    x = dev_random(rt, xmax, 23);
    CHECK(tirx_runtime_alloc(rt, xmax + 16, &out));
    CHECK(tirx_runtime_alloc(rt, xmax * 2 + 16, &cbuf));
  }
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    tirx_row_op kind = cases[i].kind;
    int64_t R = cases[i].rows, W = cases[i].width;
    if (only && strcmp(only, tirx_kernels_row_name(kind)) != 0) continue;
    if (width_only && W != width_only) continue;
    double us[2] = {0, 0};
    for (int fi = 0; fi < 2; fi++) {
      char err[2048] = "", impl[32];
      snprintf(impl, sizeof impl, "tirx%s", form_suffix(both[fi]));
      tirx_kernel *k = build_variant(&PLAIN[0], both[fi], kind, dt, W, err, sizeof err);
      if (!k) {
        fprintf(stderr, "%s: %s\n", tirx_kernels_row_name(kind), err);
        continue;
      }
      if (plan) {
        plan_line(k, tirx_kernels_row_name(kind), impl, R, W);
        tirx_kernel_release(k);
        continue;
      }
      bool silu = kind == TIRX_ROW_OP_SILU_MUL;
      tirx_arg a[5] = {tirx_arg_i32((int32_t)R),
                       tirx_arg_tensor(x, dt, 2, (int64_t[]){R, silu ? 2 * W : W}, NULL),
                       tirx_arg_tensor(out, dt, 2, (int64_t[]){R, W}, NULL), tirx_arg_f32(0.75f),
                       tirx_arg_f32(0.25f)};
      us[fi] = measure(rt, f, k, a, silu ? 3 : 5, row_bytes(kind, dt, R, W), cbuf, x, reps,
                       tirx_kernels_row_name(kind), impl, R, W);
      tirx_kernel_release(k);
    }
    if (us[0] > 0 && us[1] > 0)
      printf("%-12s %-9s %6lld %6lld   elementwise / per-row time %.3f (speedup %.3fx)\n",
             tirx_kernels_row_name(kind), "forms", (long long)R, (long long)W, us[1] / us[0],
             us[0] / us[1]);
  }
  void *bufs[] = {x, out, cbuf};
  for (int i = 0; i < 3 && !plan; i++) tirx_runtime_free(rt, bufs[i]);
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
  if (!read_forms()) return 2;
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
  bool server = strcmp(mode, "server") == 0, form_mode = strcmp(mode, "forms") == 0;
  for (int s = 0; s < 3 && !server && !form_mode; s++) {
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
      bool ew_op = kind == TIRX_ROW_OP_SILU_MUL || kind == TIRX_ROW_OP_CHAIN;
      for (int fi = 0; fi < (ew_op ? nforms : 1); fi++) {
        int form = ew_op ? forms[fi] : 0;
        char err[2048] = "", impl[64];
        snprintf(impl, sizeof impl, "%s%s", v->name, form_suffix(form));
        tirx_kernel *k = build_variant(v, form, kind, dt, W, err, sizeof err);
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
        /* the copy: half the bytes, read + written */
        measure(rt, f, k, args, na, row_bytes(kind, dt, rows, W), cbuf, x, reps,
                tirx_kernels_row_name(kind), impl, rows, W);
        tirx_kernel_release(k);
      }
    }
    void *bufs[] = {x, res, w, bias, out, out2, cbuf};
    for (int i = 0; i < 7 && !plan; i++) tirx_runtime_free(rt, bufs[i]);
  }
  if (server || strcmp(mode, "all") == 0) server_rows(rt, f, plan, reps, only, width_only);
  if (form_mode) forms_rows(rt, f, plan, reps, only, width_only);
  if (f) fclose(f);
  tirx_runtime_destroy(rt);
  return 0;
}
