/*
 * The golden cases: every kernel the library, the examples, the benches and the fuzz corpus
 * build, each under a stable name that says what it is. Variants that produce the same source
 * as their group's default kernel are left out (they measure nothing the default does not); a
 * variant that starts or stops applying shows as an added or removed case.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cp_async_tiles.h"
#include "demo_kernels.h"
#include "gemm_ref.h"
#include "golden.h"
#include "kernels/attention_internal.h"
#include "mma_tiles.h"
#include "rows_ref.h"

static const char *dt_name(tirx_dtype dt) { return tirx_dtype_name(dt); }

static const tirx_dtype DTYPES16[] = {TIRX_BF16, TIRX_F16};
static const tirx_dtype DTYPES[] = {TIRX_F32, TIRX_F16, TIRX_BF16};

/* ---- examples/kernels.c ---- */

static void example_cases(golden_set *g) {
  for (int i = 0; i < example_kernel_count; i++)
    golden_add_kernel(g, golden_name(g, "example.%s", example_kernels[i].name),
                      example_kernels[i].make(), "example kernel failed to build");
}

/* ---- the row kernels (src/kernels/rows.c, bench/membound.c) ---- */

/* The knobs of one variant (tirx_row_options; 0: the default), as bench/membound.c's tables. */
typedef struct mb_variant {
  const char *name;
  int threads, ctas, flags, stages, min_blocks, sms;
} mb_variant;

static const mb_variant MB_VARIANTS[] = {
    {"T128", .threads = 128},
    {"T256", .threads = 256},
    {"T512", .threads = 512},
    {"T1024", .threads = 1024},
    {"c2", .ctas = 2},
    {"c2-T256", .threads = 256, .ctas = 2},
    {"c2-T1024", .threads = 1024, .ctas = 2},
    {"c4", .ctas = 4},
    {"c4-T128", .threads = 128, .ctas = 4},
    {"c4-T512", .threads = 512, .ctas = 4},
    {"c4-T1024", .threads = 1024, .ctas = 4},
    {"wcs", .flags = TIRX_ROW_VARIANT_WEIGHTS_STREAM},
    {"wearly", .flags = TIRX_ROW_VARIANT_WEIGHTS_EARLY},
    {"wcs-early", .flags = TIRX_ROW_VARIANT_WEIGHTS_STREAM | TIRX_ROW_VARIANT_WEIGHTS_EARLY},
    {"unstaged", .flags = TIRX_ROW_VARIANT_UNSTAGED},
    {"staged", .flags = TIRX_ROW_VARIANT_STAGED},
    {"S1", .stages = 1},
    {"S2", .stages = 2},
    {"S3", .stages = 3},
    {"wglobal", .flags = TIRX_ROW_VARIANT_WEIGHTS_GLOBAL},
    {"wglobal-S3", .flags = TIRX_ROW_VARIANT_WEIGHTS_GLOBAL, .stages = 3},
    {"minb4", .min_blocks = 4},
    {"minb5", .min_blocks = 5},
    {"minb6", .min_blocks = 6},
    {"minb8", .min_blocks = 8},
    {"sms2", .sms = 2},
    {"sms1", .sms = 1},
    {"rows", .flags = TIRX_ROW_VARIANT_PER_ROW},
    {"ew", .flags = TIRX_ROW_VARIANT_ELEMENTWISE},
};

/* The options of variant v (NULL: the defaults). */
static tirx_row_options mb_options(const mb_variant *v) {
  tirx_row_options o = {0};
  if (v)
    o = (tirx_row_options){.threads = v->threads, .cluster = v->ctas, .variant = v->flags,
                           .stages = v->stages, .min_blocks = v->min_blocks, .sms = v->sms};
  return o;
}

/* The source of the kernel, or "build failed: <the builder's message>" (malloc'ed). */
static char *mb_text(const tirx_row_options *o, tirx_row_op kind, tirx_dtype dt, int64_t width,
                     bool scalar) {
  static const char prefix[] = "tirx_kernels_row_build: ";
  char msg[2048] = "";
  tirx_kernel *k = row_kernel(kind, o, dt, width, scalar, msg, sizeof msg);
  const char *err = strncmp(msg, prefix, sizeof prefix - 1) ? msg : msg + sizeof prefix - 1;
  char *text;
  if (k) {
    text = strdup(tirx_kernel_source(k));
    tirx_kernel_release(k);
  } else {
    size_t n = strlen(err) + 32;
    text = malloc(n);
    if (text) snprintf(text, n, "build failed: %s\n", err);
  }
  return text;
}

static void membound_cases(golden_set *g) {
  /* Every kernel, dtype and a spread of widths (warp per row, CTA per row, staged rows, odd
   * widths and common hidden sizes), with the default knobs. */
  static const int64_t widths[] = {64, 256, 1000, 1024, 2048, 3072, 4096, 5000, 8192, 20000, 32768};
  const tirx_row_options defaults = mb_options(NULL);
  for (int kind = 0; kind < TIRX_ROW_OP_COUNT; kind++)
    for (size_t d = 0; d < sizeof DTYPES / sizeof DTYPES[0]; d++)
      for (size_t w = 0; w < sizeof widths / sizeof widths[0]; w++) {
        char *text = mb_text(&defaults, (tirx_row_op)kind, DTYPES[d], widths[w], false);
        golden_add_text(g,
                        golden_name(g, "membound.%s.%s.w%lld", tirx_kernels_row_name((tirx_row_op)kind),
                                    dt_name(DTYPES[d]), (long long)widths[w]),
                        text ? text : "out of memory\n");
        free(text);
      }
  /* The scalar families. */
  static const int64_t scalar_widths[] = {256, 1000, 5000, 8192};
  for (int kind = 0; kind < TIRX_ROW_OP_COUNT; kind++)
    for (size_t w = 0; w < sizeof scalar_widths / sizeof scalar_widths[0]; w++) {
      char *text = mb_text(&defaults, (tirx_row_op)kind, TIRX_BF16, scalar_widths[w], true);
      golden_add_text(g,
                      golden_name(g, "membound.%s.bf16.w%lld.scalar",
                                  tirx_kernels_row_name((tirx_row_op)kind), (long long)scalar_widths[w]),
                      text ? text : "out of memory\n");
      free(text);
    }
  /* The bench's variants at its shapes (bf16 16384x8192, 16384x5000, 4096x32768) and the GPU
   * tests' small grids (staged rows in every dtype), where they change the kernel. */
  static const int64_t bench_widths[] = {5000, 8192, 20000, 32768};
  for (int kind = 0; kind < TIRX_ROW_OP_COUNT; kind++)
    for (size_t d = 0; d < sizeof DTYPES / sizeof DTYPES[0]; d++)
      for (size_t w = 0; w < sizeof bench_widths / sizeof bench_widths[0]; w++) {
        bool bench = DTYPES[d] == TIRX_BF16 && bench_widths[w] != 20000;
        char *base = mb_text(&defaults, (tirx_row_op)kind, DTYPES[d], bench_widths[w], false);
        for (size_t v = 0; v < sizeof MB_VARIANTS / sizeof MB_VARIANTS[0]; v++) {
          if (!bench && !MB_VARIANTS[v].sms) continue;
          tirx_row_options o = mb_options(&MB_VARIANTS[v]);
          char *text = mb_text(&o, (tirx_row_op)kind, DTYPES[d], bench_widths[w], false);
          if (text && base && strcmp(text, base) != 0)
            golden_add_text(g,
                            golden_name(g, "membound.%s.%s.w%lld.%s",
                                        tirx_kernels_row_name((tirx_row_op)kind), dt_name(DTYPES[d]),
                                        (long long)bench_widths[w], MB_VARIANTS[v].name),
                            text);
          free(text);
        }
        free(base);
      }
  /* silu_mul and chain in the form the default does not take, every dtype, at odd widths (and
   * the bench's through the variants above): the per-row kernel where the default is
   * elementwise, the elementwise one where it is per row. */
  static const int64_t odd_widths[] = {1, 3, 127, 4095, 8191};
  for (int kind = TIRX_ROW_OP_SILU_MUL; kind <= TIRX_ROW_OP_CHAIN; kind++)
    for (size_t d = 0; d < sizeof DTYPES / sizeof DTYPES[0]; d++)
      for (size_t w = 0; w < sizeof odd_widths / sizeof odd_widths[0]; w++) {
        char *base = mb_text(&defaults, (tirx_row_op)kind, DTYPES[d], odd_widths[w], false);
        for (int f = 0; f < 2; f++) {
          tirx_row_options o = {.variant = f ? TIRX_ROW_VARIANT_ELEMENTWISE : TIRX_ROW_VARIANT_PER_ROW};
          char *text = mb_text(&o, (tirx_row_op)kind, DTYPES[d], odd_widths[w], false);
          if (text && base && strcmp(text, base) != 0)
            golden_add_text(g,
                            golden_name(g, "membound.%s.%s.w%lld.%s",
                                        tirx_kernels_row_name((tirx_row_op)kind), dt_name(DTYPES[d]),
                                        (long long)odd_widths[w], f ? "ew" : "rows"),
                            text);
          free(text);
        }
        free(base);
      }
}

/* ---- the server kernels: rmsnorm_fp8, add_rmsnorm_fp8 (rows.c), rope (rope.c) ---- */

static tirx_kernel *fp8_kernel_with(const tirx_row_options *o, tirx_dtype dt, int64_t width,
                                    bool residual) {
  tirx_kernel *k = NULL;
  return tirx_kernels_rmsnorm_fp8_build(o, dt, width, residual, &k) == TIRX_OK ? k : NULL;
}

static tirx_kernel *fp8_kernel(tirx_dtype dt, int64_t width, bool residual, bool scalar) {
  tirx_row_options o = {.scalar = scalar};
  return fp8_kernel_with(&o, dt, width, residual);
}

static void server_cases(golden_set *g) {
  /* the bench's hidden sizes and the GPU tests' widths (a warp a row, odd tails) */
  static const int64_t widths[] = {1, 3, 100, 1000, 2048, 3072, 4096, 5000, 5120, 6144, 7000,
                                   7168, 8191};
  for (int add = 0; add < 2; add++)
    for (size_t d = 0; d < sizeof DTYPES / sizeof DTYPES[0]; d++)
      for (size_t w = 0; w < sizeof widths / sizeof widths[0]; w++)
        golden_add_kernel(g, golden_name(g, "server.%srmsnorm_fp8.%s.w%lld", add ? "add_" : "",
                                         dt_name(DTYPES[d]), (long long)widths[w]),
                          fp8_kernel(DTYPES[d], widths[w], add, false), "build failed");
  /* staged rows (rmsnorm_fp8 as rmsnorm): by default from 32 KiB rows, forced at the bench's
   * widths and the GPU suite's (fp8_staged_*), each variant where it changes the kernel */
  static const int64_t staged_widths[] = {16384, 20000, 32768};
  for (int add = 0; add < 2; add++)
    for (size_t d = 0; d < sizeof DTYPES / sizeof DTYPES[0]; d++)
      for (size_t w = 0; w < sizeof staged_widths / sizeof staged_widths[0]; w++)
        golden_add_kernel(g, golden_name(g, "server.%srmsnorm_fp8.%s.w%lld", add ? "add_" : "",
                                         dt_name(DTYPES[d]), (long long)staged_widths[w]),
                          fp8_kernel(DTYPES[d], staged_widths[w], add, false), "build failed");
  static const struct { const char *name; int flags, stages; } fp8_variants[] = {
      {"staged", TIRX_ROW_VARIANT_STAGED, 0}, {"S1", 0, 1}, {"unstaged", TIRX_ROW_VARIANT_UNSTAGED, 0},
      {"wglobal", TIRX_ROW_VARIANT_WEIGHTS_GLOBAL, 0},
      {"staged-wglobal", TIRX_ROW_VARIANT_STAGED | TIRX_ROW_VARIANT_WEIGHTS_GLOBAL, 0}};
  static const int64_t variant_widths[] = {2048, 3072, 4096, 5000, 5120, 6144, 7168, 16384};
  for (size_t w = 0; w < sizeof variant_widths / sizeof variant_widths[0]; w++) {
    tirx_row_options none = {0};
    tirx_kernel *base = fp8_kernel_with(&none, TIRX_BF16, variant_widths[w], false);
    for (size_t v = 0; v < sizeof fp8_variants / sizeof fp8_variants[0]; v++) {
      tirx_row_options o = {.variant = fp8_variants[v].flags, .stages = fp8_variants[v].stages};
      tirx_kernel *k = fp8_kernel_with(&o, TIRX_BF16, variant_widths[w], false);
      if (k && base && strcmp(tirx_kernel_source(k), tirx_kernel_source(base)) != 0)
        golden_add_kernel(g, golden_name(g, "server.rmsnorm_fp8.bf16.w%lld.%s",
                                         (long long)variant_widths[w], fp8_variants[v].name),
                          k, "build failed");
      else if (k)
        tirx_kernel_release(k);
    }
    if (base) tirx_kernel_release(base);
  }
  static const int64_t scalar_widths[] = {3, 100, 4096, 5000, 7168};
  for (int add = 0; add < 2; add++)
    for (size_t w = 0; w < sizeof scalar_widths / sizeof scalar_widths[0]; w++)
      golden_add_kernel(g, golden_name(g, "server.%srmsnorm_fp8.bf16.w%lld.scalar", add ? "add_" : "",
                                       (long long)scalar_widths[w]),
                        fp8_kernel(TIRX_BF16, scalar_widths[w], add, true), "build failed");
  /* rope: the bench's (32 + 8 heads of 128), the GPU tests' shapes */
  static const struct { tirx_dtype dt, cdt; int d, h, h_kv, rot; } ropes[] = {
      {TIRX_BF16, TIRX_F32, 128, 32, 8, 0}, {TIRX_BF16, TIRX_F32, 128, 8, 8, 64},
      {TIRX_F16, TIRX_F32, 64, 12, 4, 32},  {TIRX_BF16, TIRX_BF16, 80, 5, 1, 0},
      {TIRX_F16, TIRX_F16, 128, 4, 0, 96},  {TIRX_BF16, TIRX_F32, 2, 3, 1, 0},
  };
  /* each with hidden strides (the build's default), and the first as the bench builds it for
   * its fused qkv buffer (strides 48 * 128 and 128: 16-byte vector moves) */
  for (size_t i = 0; i < sizeof ropes / sizeof ropes[0]; i++)
    for (int style = 0; style < 2; style++)
      for (int fixed = 0; fixed < (i == 0 ? 2 : 1); fixed++) {
        tirx_rope_options o = {.size = sizeof o, .style = (tirx_rope_style)style,
                               .rot_dim = ropes[i].rot};
        if (fixed)
          o.q_strides[0] = o.k_strides[0] = 48 * 128, o.q_strides[1] = o.k_strides[1] = 128;
        tirx_kernel *k = NULL;
        if (tirx_kernels_rope_build(&o, ropes[i].dt, ropes[i].cdt, ropes[i].d, ropes[i].h,
                                    ropes[i].h_kv, &k) != TIRX_OK)
          k = NULL;
        golden_add_kernel(g, golden_name(g, "server.rope.%s.%s.cache_%s.d%d.h%d.kv%d.r%d%s",
                                         style ? "gptj" : "neox", dt_name(ropes[i].dt),
                                         dt_name(ropes[i].cdt), ropes[i].d, ropes[i].h,
                                         ropes[i].h_kv, ropes[i].rot ? ropes[i].rot : ropes[i].d,
                                         fixed ? ".strides6144x128" : ""),
                          k, "build failed");
      }
}

/* ---- the Hopper GEMM (src/kernels/gemm.c, bench/gemm.c, tests) ---- */

static const char *const EPILOGUES[] = {"plain", "bias", "bias_silu", "bias_gelu"};

/* ".c2x1" or ".c1x2" for a kernel in clusters of two CTAs (its name ends so), else "". */
static const char *cluster_suffix(const tirx_kernel *k) {
  const char *n = k ? tirx_kernel_name(k) : "";
  return strstr(n, "_c2m") ? ".c2x1" : strstr(n, "_c2n") ? ".c1x2" : "";
}

static void gemm_case(golden_set *g, gemm_spec s) {
  char err[4096] = "";
  tirx_gemm_tiles t = gemm_pick(&s);
  const char *fam = s.family ? s.family : "wgmma";
  tirx_kernel *k = gemm_build(&s, err, sizeof err);
  /* The kernel depends on the tiles the shape picks and its cluster, not on the shape: name it
   * by them. */
  golden_add_kernel(g,
                    golden_name(g, "gemm.%s.%s.%s.%dx%dx%d.s%d.c%d%s%s%s%s", dt_name(s.dtype),
                                EPILOGUES[s.epilogue], fam, t.block_m, t.block_n, t.block_k,
                                t.stages, t.consumers,
                                fam[0] == 'w' && s.m < t.block_m
                                    ? golden_name(g, ".a%d", (int)((s.m + 7) / 8 * 8))
                                    : "",
                                s.sms ? golden_name(g, ".sms%d", s.sms) : "",
                                s.n % 8 ? ".ragged" : "", cluster_suffix(k)),
                    k, err);
}

static void gemm_cases(golden_set *g) {
  static const int64_t nk[][2] = {{6144, 4096},  {4096, 4096},  {28672, 4096}, {4096, 14336},
                                  {10240, 8192}, {8192, 8192},  {57344, 8192}, {8192, 28672},
                                  {1000, 300},   {130, 65},     {77, 40}};
  static const int64_t ms[] = {1, 16, 64, 128, 129, 256, 1024, 8192};
  for (size_t d = 0; d < 2; d++)
    for (int e = 0; e < 4; e++)
      for (size_t m = 0; m < sizeof ms / sizeof ms[0]; m++)
        for (size_t i = 0; i < sizeof nk / sizeof nk[0]; i++)
          gemm_case(g, (gemm_spec){.dtype = DTYPES16[d], .m = ms[m], .n = nk[i][0],
                                   .k = nk[i][1], .epilogue = (tirx_epilogue)e});
  /* Clusters of two CTAs, asked for (the plan takes none): B shared (2 x 1) on the M = 8192
   * tiles and a decode tile, A shared (1 x 2) on decode tiles; a ragged N; an epilogue. */
  static const int64_t cl[][5] = {{8192, 8192, 8192, 2, 1}, {256, 28672, 4096, 2, 1},
                                  {128, 4096, 4096, 1, 2},  {256, 4096, 14336, 1, 2},
                                  {16, 8192, 8192, 1, 2},   {300, 1001, 256, 2, 1}};
  for (size_t d = 0; d < 2; d++)
    for (size_t i = 0; i < sizeof cl / sizeof cl[0]; i++)
      for (int e = 0; e < 4; e += 2)
        gemm_case(g, (gemm_spec){.dtype = DTYPES16[d], .m = cl[i][0], .n = cl[i][1],
                                 .k = cl[i][2], .epilogue = (tirx_epilogue)e,
                                 .cluster_m = (int)cl[i][3], .cluster_n = (int)cl[i][4]});
  gemm_case(g, (gemm_spec){.dtype = TIRX_BF16, .m = 1, .n = 4096, .k = 4096, .sms = 64});
  /* The test families, one CTA per 64x64 tile. */
  static const char *const fams[] = {"mma", "scalar"};
  for (size_t f = 0; f < 2; f++)
    for (size_t d = 0; d < 2; d++)
      for (int e = 0; e < 4; e++)
        gemm_case(g, (gemm_spec){.dtype = DTYPES16[d], .m = 129, .n = 130, .k = 65,
                                 .epilogue = (tirx_epilogue)e, .family = fams[f]});
  /* The gemv path (M <= 8), a spread of its variants (dtype, M, rows of B per CTA,
   * epilogue): every M with 4 rows, every epilogue at M = 3 and 8, every rows at M = 1 and 8. */
  char err[4096] = "";
  for (size_t d = 0; d < 2; d++)
    for (int e = 0; e < 4; e++)
      for (int m = 1; m <= 8; m++)
        for (int r = 1; r <= 4; r *= 2) {
          if (!((e == 0 && r == 4) || (m == 3 && r == 4) || (m == 8 && (e == 0 || r == 1)) ||
                (m == 1 && e == 0)))
            continue;
          gemm_spec s = {.dtype = DTYPES16[d], .m = m, .n = 4096, .k = 4096,
                         .epilogue = (tirx_epilogue)e, .path = TIRX_GEMM_PATH_GEMV, .gemv_rows = r};
          golden_add_kernel(g, golden_name(g, "gemm.%s.%s.gemv.m%d.r%d", dt_name(s.dtype),
                                           EPILOGUES[e], m, r),
                            gemm_build(&s, err, sizeof err), err);
        }
  /* The split-K path: its wgmma kernel for a few tile shapes (no epilogue: the reduction's). */
  static const int64_t sk[][3] = {{16, 1024, 14336}, {64, 256, 8192}, {200, 4096, 8192}};
  for (size_t d = 0; d < 2; d++)
    for (size_t i = 0; i < sizeof sk / sizeof sk[0]; i++) {
      gemm_spec s = {.dtype = DTYPES16[d], .m = sk[i][0], .n = sk[i][1], .k = sk[i][2],
                     .path = TIRX_GEMM_PATH_WGMMA_SPLITK};
      tirx_gemm_tiles t = gemm_pick(&s);
      for (int c = 0; c < 2; c++) { /* the plan's (none), then A shared */
        s.cluster_m = c ? 1 : 0, s.cluster_n = c ? 2 : 0;
        tirx_kernel *k = gemm_build(&s, err, sizeof err);
        golden_add_kernel(g, golden_name(g, "gemm.%s.splitk.%dx%dx%d.s%d.c%d%s%s",
                                         dt_name(s.dtype), t.block_m, t.block_n, t.block_k,
                                         t.stages, t.consumers,
                                         s.m < t.block_m ? golden_name(g, ".a%d",
                                                                       (int)((s.m + 7) / 8 * 8))
                                                         : "",
                                         cluster_suffix(k)),
                          k, err);
      }
    }
  golden_add_kernel(g, "gemm.refused.gemv_m9",
                    gemm_build(&(gemm_spec){.dtype = TIRX_BF16, .m = 9, .n = 64, .k = 64,
                                            .path = TIRX_GEMM_PATH_GEMV},
                               err, sizeof err),
                    err);
  /* Refused specs. */
  golden_add_kernel(g, "gemm.refused.f32",
                    gemm_build(&(gemm_spec){.dtype = TIRX_F32, .m = 1, .n = 1, .k = 1}, err,
                               sizeof err),
                    err);
  golden_add_kernel(g, "gemm.refused.tcgen05",
                    gemm_build(&(gemm_spec){.dtype = TIRX_BF16, .m = 1, .n = 1, .k = 1,
                                            .family = "tcgen05"},
                               err, sizeof err),
                    err);
}

/* ---- decode attention over a paged KV cache (src/kernels/decode.c, bench/decode_attention.c) ---- */

static void decode_case(golden_set *g, tirx_decode_kernel w, tirx_dtype dt, int d, int p, int grp,
                        int ql, bool lse) {
  static const char *const kinds[] = {"unsplit", "partial", "combine"};
  tirx_kernel *k = NULL;
  char err[4096] = "";
  if (tirx_kernels_decode_build(w, dt, d, p, grp * 2, 2, ql, lse, &k) != TIRX_OK)
    snprintf(err, sizeof err, "%s", tirx_last_error());
  golden_add_kernel(g, golden_name(g, "decode.%s.%s.d%d.p%d.g%d.q%d%s", kinds[w], dt_name(dt), d,
                                   w == TIRX_DECODE_COMBINE ? 0 : p, grp, ql, lse ? ".lse" : ""),
                    k, err);
}

static void decode_cases(golden_set *g) {
  static const int ds[] = {64, 128}, ps[] = {16, 32, 64};
  for (size_t t = 0; t < 2; t++)
    for (size_t d = 0; d < 2; d++) {
      for (size_t p = 0; p < 3; p++) {
        decode_case(g, TIRX_DECODE_UNSPLIT, DTYPES16[t], ds[d], ps[p], 4, 1, true);
        decode_case(g, TIRX_DECODE_PARTIAL, DTYPES16[t], ds[d], ps[p], 4, 1, false);
        tirx_kernel *k = NULL;
        char err[4096] = "";
        if (tirx_kernels_reshape_and_cache_build(DTYPES16[t], ds[d], ps[p], 8, &k) != TIRX_OK)
          snprintf(err, sizeof err, "%s", tirx_last_error());
        golden_add_kernel(g, golden_name(g, "decode.reshape_and_cache.%s.d%d.p%d.h8",
                                         dt_name(DTYPES16[t]), ds[d], ps[p]), k, err);
      }
      decode_case(g, TIRX_DECODE_COMBINE, DTYPES16[t], ds[d], 16, 4, 1, true);
    }
  /* the bench's kernels without lse; the rows of a CTA: H / H_kv by q_len */
  decode_case(g, TIRX_DECODE_UNSPLIT, TIRX_BF16, 128, 16, 4, 1, false);
  decode_case(g, TIRX_DECODE_COMBINE, TIRX_BF16, 128, 16, 4, 1, false);
  static const int grps[] = {1, 4, 8}, qls[] = {1, 4, 8};
  for (size_t i = 0; i < 3; i++)
    for (size_t j = 0; j < 3; j++)
      if (grps[i] != 4 || qls[j] != 1) decode_case(g, TIRX_DECODE_PARTIAL, TIRX_BF16, 128, 16, grps[i], qls[j], false);
  decode_case(g, TIRX_DECODE_UNSPLIT, TIRX_BF16, 128, 16, 16, 8, false); /* refused: 128 rows */
}

/* ---- the tensor-parallel linear layer (src/kernels/tp.c) ---- */

static void tp_cases(golden_set *g) {
  static const tirx_tp_spec specs[] = {
      {.dtype = TIRX_BF16, .m = 256, .n = 512, .k = 1024, .nranks = 1},
      {.dtype = TIRX_F16, .m = 512, .n = 256, .k = 1024, .nranks = 2},
      {.dtype = TIRX_BF16, .m = 8192, .n = 4096, .k = 4096, .nranks = 4}};
  for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++) {
    tirx_tp_linear t;
    const char *name = golden_name(g, "tp.%s.m%lld.n%lld.k%lld.p%d", dt_name(specs[i].dtype),
                                   (long long)specs[i].m, (long long)specs[i].n,
                                   (long long)specs[i].k, specs[i].nranks);
    if (tirx_kernels_tp_linear_create(&specs[i], &t) != TIRX_OK) {
      golden_add_kernel(g, name, NULL, tirx_last_error());
      continue;
    }
    golden_add_kernel(g, name, tirx_kernel_retain(t.gemm), "");
    tirx_kernels_tp_linear_destroy(&t);
  }
}

/* ---- attention's reference kernel (src/kernels/attention.c, opts->path "reference") ---- */

static void attention_ref_case(golden_set *g, tirx_dtype dt, int d, bool varlen, bool lse) {
  tirx_kernel *k = NULL;
  const char *name = golden_name(g, "attention.ref.%s.d%d.%s.%s", dt_name(dt), d,
                                 varlen ? "varlen" : "fixed", lse ? "lse" : "nolse");
  tirx_status st = tirx__attention_ref_build(dt, d, varlen, lse, &k);
  golden_add_kernel(g, name, st == TIRX_OK ? k : NULL, st == TIRX_OK ? "" : tirx_last_error());
}

static void attention_ref_cases(golden_set *g) {
  for (int v = 0; v < 16; v++)
    attention_ref_case(g, DTYPES16[v & 1], v & 2 ? 128 : 64, v & 4, v & 8);
  for (int v = 0; v < 8; v++)
    attention_ref_case(g, DTYPES16[v & 1], 256, v & 2, v & 4);
}

/* ---- mma/wgmma tiles, cp.async tiles (examples/mma_tiles.c, cp_async_tiles.c) ---- */

static void tile_cases(golden_set *g) {
  static const mma_tile tiles[] = {
      {"wgmma", TIRX_BF16, 64, 128, 64, 1, 128, false, false},
      {"wgmma", TIRX_BF16, 128, 256, 64, 2, 128, false, false},
      {"wgmma", TIRX_F16, 128, 64, 128, 1, 128, true, false},
      {"wgmma", TIRX_BF16, 64, 64, 64, 1, 64, true, false},
      {"wgmma", TIRX_BF16, 64, 32, 64, 1, 32, false, false},
      {"wgmma", TIRX_BF16, 64, 48, 64, 1, 0, true, false},
      {"wgmma", TIRX_F16, 64, 24, 32, 1, 64, false, false},
      {"mma", TIRX_BF16, 64, 128, 64, 0, 0, false, false},
      {"mma", TIRX_F16, 32, 24, 32, 0, 0, true, false},
      {"mma", TIRX_BF16, 16, 8, 16, 0, 0, false, false},
      {"scalar", TIRX_BF16, 64, 128, 64, 0, 0, false, false},
      {"scalar", TIRX_F16, 32, 24, 32, 0, 0, true, false},
      {"scalar", TIRX_BF16, 128, 64, 32, 2, 0, true, false},
      {"wgmma", TIRX_BF16, 64, 64, 16, 1, 32, false, true},
      {"wgmma", TIRX_F16, 64, 128, 16, 1, 32, false, true},
      {"wgmma", TIRX_BF16, 64, 128, 64, 1, 128, false, true},
      {"wgmma", TIRX_F16, 128, 64, 128, 1, 128, true, true},
      {"wgmma", TIRX_BF16, 128, 256, 64, 2, 128, false, true},
      {"wgmma", TIRX_BF16, 64, 48, 64, 1, 0, true, true},
      {"wgmma", TIRX_F16, 64, 24, 32, 1, 64, false, true},
      {"wgmma", TIRX_BF16, 64, 8, 48, 1, 32, false, true},
      {"wgmma", TIRX_BF16, 64, 64, 16, 1, 32, false, true},
      {"wgmma", TIRX_BF16, 64, 128, 16, 1, 32, false, true},
      {"wgmma", TIRX_F16, 64, 64, 16, 1, 32, false, true},
  };
  for (size_t i = 0; i < sizeof tiles / sizeof tiles[0]; i++) {
    const mma_tile *t = &tiles[i];
    char err[4096] = "";
    const char *name = golden_name(g, "tile.%s.%s.%dx%dx%d.wg%d.sw%d%s%s", t->family,
                                   dt_name(t->dtype), t->m, t->n, t->k, t->warpgroups,
                                   t->swizzle, t->split_k ? ".splitk" : "",
                                   t->a_regs ? ".rs" : "");
    golden_add_kernel(g, name, example_mma_tile(t, err, sizeof err), err);
  }
  static const int a_loads[][3] = {{64, 16, 32},  {64, 64, 128}, {128, 32, 64},
                                   {64, 48, 32},  {192, 16, 0},  {256, 64, 128},
                                   {64, 24, 0}};
  for (size_t d = 0; d < 2; d++)
    for (size_t c = 0; c < sizeof a_loads / sizeof a_loads[0]; c++) {
      char err[4096] = "";
      golden_add_kernel(g,
                        golden_name(g, "wgmma_a_load.%s.%dx%d.sw%d", dt_name(DTYPES16[d]),
                                    a_loads[c][0], a_loads[c][1], a_loads[c][2]),
                        example_wgmma_a_load(DTYPES16[d], a_loads[c][0], a_loads[c][1],
                                             a_loads[c][2], err, sizeof err),
                        err);
    }
  static const int ns[] = {16, 48, 64, 80, 112, 128, 256};
  for (size_t d = 0; d < 2; d++)
    for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++)
      for (int rs = 0; rs < 2; rs++) {
        char err[4096] = "";
        golden_add_kernel(g,
                          golden_name(g, "wgmma_gemm.%s.n%d.%s", dt_name(DTYPES16[d]), ns[i],
                                      rs ? "rs" : "ss"),
                          example_wgmma_gemm(&(wgmma_gemm){DTYPES16[d], ns[i], rs, false}, err,
                                             sizeof err),
                          err);
      }
  {
    char err[4096] = "";
    golden_add_kernel(g, "mbarrier_ring.37", example_mbarrier_ring(37, err, sizeof err), err);
  }
  for (int i = 0; i < cp_async_tile_suite_count; i++) {
    const cp_async_tile *t = &cp_async_tile_suite[i];
    char err[4096] = "";
    golden_add_kernel(g,
                      golden_name(g, "cp_async_tile.%s.%dx%d.ld%lld.st%d.t%d.%s.%s",
                                  dt_name(t->dtype), t->tm, t->tn, (long long)t->ld, t->stages,
                                  t->threads, t->target ? t->target : "default",
                                  t->family ? t->family : "any"),
                      example_cp_async_tile(t, err, sizeof err), err);
  }
}

/* ---- the fuzz corpus (tests/fuzz/corpus/builder, replayed through fuzz_builder.c) ---- */

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static golden_set *fuzz_set;
static const char *fuzz_seed;
static int fuzz_count;

/* Called by fuzz_builder.c (built with -DTIRX_FUZZ_GOLDEN) for every kernel run 1 accepts. */
void tirx_fuzz_golden_kernel(const char *source);
void tirx_fuzz_golden_kernel(const char *source) {
  if (!fuzz_set) return;
  golden_add_text(fuzz_set, golden_name(fuzz_set, "fuzz.%s.%d", fuzz_seed, fuzz_count++), source);
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void fuzz_cases(golden_set *g) {
  DIR *dir = opendir(TIRX_FUZZ_CORPUS);
  if (!dir) {
    golden_fail(g, "cannot open the fuzz corpus %s", TIRX_FUZZ_CORPUS);
    return;
  }
  size_t n = 0, cap = 64;
  char **names = malloc(cap * sizeof *names);
  for (struct dirent *e; names && (e = readdir(dir));) {
    if (e->d_name[0] == '.') continue;
    if (n == cap) {
      char **grown = realloc(names, 2 * cap * sizeof *names);
      if (!grown) break;
      names = grown, cap *= 2;
    }
    names[n++] = strdup(e->d_name);
  }
  closedir(dir);
  if (!names) {
    golden_fail(g, "out of memory");
    return;
  }
  qsort(names, n, sizeof *names, cmp_str);
  setenv("TIRX_FUZZ_NVRTC_EVERY", "0", 1); /* sources only: no NVRTC */
  int argc = 0;
  char **argv = NULL;
  LLVMFuzzerInitialize(&argc, &argv);
  fuzz_set = g;
  for (size_t i = 0; i < n; i++) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", TIRX_FUZZ_CORPUS, names[i]);
    FILE *f = fopen(path, "rb");
    if (!f) {
      golden_fail(g, "cannot read the fuzz seed %s", path);
      continue;
    }
    static uint8_t buf[1 << 20];
    size_t len = fread(buf, 1, sizeof buf, f);
    fclose(f);
    fuzz_seed = names[i];
    fuzz_count = 0;
    LLVMFuzzerTestOneInput(buf, len);
    if (fuzz_count == 0)
      golden_add_text(g, golden_name(g, "fuzz.%s.none", names[i]), "no kernel accepted\n");
  }
  fuzz_set = NULL;
  for (size_t i = 0; i < n; i++) free(names[i]);
  free(names);
}

/* ---- attention (src/kernels/attention_fast.c): schedule x dtype x D x causal x varlen ---- */

/* The default schedule's cases keep their names; the ping-pong schedules' ($TIRX_ATTN_SCHEDULE,
 * read at each build) are attention.<schedule>.<...>. The overlap's are the unit suite's.
 * D = 256 has the default schedule only (its BN = 64 and O over Q: attention_fast.c's plan_of). */
static void attention_cases(golden_set *g) {
  for (int di = 0; di < 2; di++)
    for (int causal = 0; causal < 2; causal++)
      for (int varlen = 0; varlen < 2; varlen++) {
        tirx_attention_options o = {.causal = causal};
        tirx_kernel *k = NULL;
        if (tirx_kernels_attention_build(&o, DTYPES16[di], 256, 8, 2, varlen, &k) != TIRX_OK)
          k = NULL;
        golden_add_kernel(g, golden_name(g, "attention.%s.d256%s%s", dt_name(DTYPES16[di]),
                                         causal ? ".causal" : "", varlen ? ".varlen" : ""),
                          k, tirx_last_error());
      }
  static const char *const schedules[3] = {NULL, "pingpong", "pingpong_overlap"};
  for (int si = 0; si < 3; si++)
    for (int di = 0; di < 2; di++)
      for (int d = 64; d <= 128; d += 64)
        for (int causal = 0; causal < 2; causal++)
          for (int varlen = 0; varlen < 2; varlen++) {
            tirx_attention_options o = {.causal = causal};
            tirx_kernel *k = NULL;
            if (schedules[si])
              setenv("TIRX_ATTN_SCHEDULE", schedules[si], 1);
            if (tirx_kernels_attention_build(&o, DTYPES16[di], d, 8, 2, varlen, &k) != TIRX_OK)
              k = NULL;
            unsetenv("TIRX_ATTN_SCHEDULE");
            golden_add_kernel(g, golden_name(g, "attention.%s%s%s.d%d%s%s",
                                             schedules[si] ? schedules[si] : "",
                                             schedules[si] ? "." : "", dt_name(DTYPES16[di]), d,
                                             causal ? ".causal" : "", varlen ? ".varlen" : ""),
                              k, tirx_last_error());
          }
}

void golden_cases(golden_set *g) {
  example_cases(g);
  membound_cases(g);
  server_cases(g);
  gemm_cases(g);
  decode_cases(g);
  attention_ref_cases(g);
  tp_cases(g);
  attention_cases(g);
  tile_cases(g);
  fuzz_cases(g);
}
