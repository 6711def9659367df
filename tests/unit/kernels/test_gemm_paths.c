/* The GEMM's paths on the CPU (src/kernels/gemm.c, issue 16): the plan per shape
 * (tirx_kernels_gemm_plan), forced paths, the options' errors naming the field, and the gemv
 * kernel's variants built and compiled by NVRTC for sm_90a (16-byte vector loads of B and A,
 * no local memory), their launch arguments as tirx_op_gemm passes them, and the op's table. */
#include <string.h>

#include "../helpers.h"
#include "gemm_ref.h"
#include "kernels/kernels_internal.h"

#define PTR(v) ((void *)(uintptr_t)(v))
#define M2(p, dt, r, c) (&(tirx_tensor_arg){PTR(p), dt, 2, (int64_t[]){r, c}, NULL})

static tirx_runtime *compile_only_runtime(void) {
  tirx_runtime *rt = NULL;
  tirx_runtime_options o = {.compile_only = true, .cache_disabled = true};
  cr_assert_eq(tirx_runtime_create(&o, &rt), TIRX_OK, "%s", tirx_last_error());
  return rt;
}

static tirx_gemm_plan plan(const tirx_gemm_options *o, int64_t m, int64_t n, int64_t k) {
  tirx_gemm_plan p = {0};
  memset(&p, 0xab, sizeof p); /* every field is written; size tells how many bytes */
  p.size = sizeof p;
  cr_assert_eq(tirx_kernels_gemm_plan(o, m, n, k, &p), TIRX_OK, "%s", tirx_last_error());
  return p;
}

static const int64_t NK[][2] = {{6144, 4096}, {4096, 4096}, {28672, 4096}, {4096, 14336},
                                {10240, 8192}, {8192, 8192}, {57344, 8192}, {8192, 28672}};

/* M <= 2, and M = 3, 4 where the wgmma tiles would be under 48 wide on a K of 8192 or more
 * (N = 4096, K = 14336): gemv with 4
 * rows per CTA on the LLaMA shapes (N / 4 >= 264 CTAs); otherwise the wgmma kernel with
 * tirx_kernels_gemm_tiles' tiles, M = 8192 its 128x256x3 default. */
Test(gemm_paths, the_plan_per_shape) {
  static const int64_t ms[] = {1, 2, 3, 4, 7, 8, 9, 16, 17, 32, 64, 128, 255, 256, 8192};
  for (size_t a = 0; a < sizeof ms / sizeof ms[0]; a++)
    for (size_t i = 0; i < sizeof NK / sizeof NK[0]; i++) {
      int64_t m = ms[a], n = NK[i][0], k = NK[i][1];
      tirx_gemm_plan p = plan(NULL, m, n, k);
      if (m <= 2 || (m <= 4 && n == 4096 && k >= 8192)) { /* the plan's gemv range (gemm.c) */
        cr_expect_eq(p.path, TIRX_GEMM_PATH_GEMV, "M=%lld N=%lld: path %d", (long long)m,
                     (long long)n, (int)p.path);
        cr_expect_str_eq(p.name, "gemv");
        cr_expect_eq(p.gemv_rows, 4, "M=%lld N=%lld: %d rows", (long long)m, (long long)n,
                     p.gemv_rows);
        cr_expect_eq(p.ctas, (n + 3) / 4);
        cr_expect(p.tiles.block_m == 0 && p.tiles.block_n == 0);
      } else {
        tirx_gemm_tiles t;
        cr_assert_eq(tirx_kernels_gemm_tiles(NULL, m, n, k, &t), TIRX_OK);
        cr_expect(memcmp(&p.tiles, &t, sizeof t) == 0, "M=%lld N=%lld: the plan's tiles %dx%d, "
                  "tirx_kernels_gemm_tiles' %dx%d", (long long)m, (long long)n, p.tiles.block_m,
                  p.tiles.block_n, t.block_m, t.block_n);
        cr_expect_eq(p.gemv_rows, 0);
        int64_t tiles = (m + t.block_m - 1) / t.block_m * ((n + t.block_n - 1) / t.block_n);
        /* N = 4096 at M = 65..128 with a long K (tiles of 128 rows would be 32 wide): 64
         * columns and K splits that fill the SMs; at M <= 64 the 32-wide tiles stay, unsplit
         * (gemm_pick, splits_for). */
        bool sk = n == 4096 && m > 64 && m <= 128 && k >= 8192;
        cr_expect_eq(p.path, sk ? TIRX_GEMM_PATH_WGMMA_SPLITK : TIRX_GEMM_PATH_WGMMA,
                     "M=%lld N=%lld K=%lld: path %d", (long long)m, (long long)n, (long long)k,
                     (int)p.path);
        cr_expect_str_eq(p.name, sk ? "wgmma_splitk" : "wgmma");
        if (sk) {
          cr_expect_eq(t.block_n, 64, "M=%lld N=%lld: block_n %d", (long long)m, (long long)n,
                       t.block_n);
          cr_expect(p.splits >= 2 && tiles * p.splits >= 120 && tiles * p.splits <= 132,
                    "M=%lld N=%lld K=%lld: %lld tiles x %d splits", (long long)m, (long long)n,
                    (long long)k, (long long)tiles, p.splits);
          cr_expect_eq(p.ctas, tiles * p.splits);
        } else {
          cr_expect_eq(p.ctas, tiles < 132 ? tiles : 132);
        }
        if (m == 8192) cr_expect(t.block_m == 128 && t.block_n == 256 && t.stages == 3);
      }
    }
  /* Narrow N: fewer rows per CTA so that 2 * sms CTAs stream B. */
  cr_expect_eq(plan(NULL, 1, 1053, 4096).gemv_rows, 4); /* ceil(1053 / 4) = 264 */
  cr_expect_eq(plan(NULL, 1, 1052, 4096).gemv_rows, 2);
  cr_expect_eq(plan(NULL, 1, 527, 4096).gemv_rows, 2);
  cr_expect_eq(plan(NULL, 1, 526, 4096).gemv_rows, 1);
  cr_expect_eq(plan(NULL, 1, 3, 4096).gemv_rows, 1);
  cr_expect_eq(plan(&(tirx_gemm_options){.sms = 16}, 1, 128, 64).gemv_rows, 4);
  /* Families mma and scalar keep their kernel at any M. */
  tirx_gemm_plan p = plan(&(tirx_gemm_options){.family = "mma"}, 1, 4096, 4096);
  cr_expect_eq(p.path, TIRX_GEMM_PATH_WGMMA);
  cr_expect_str_eq(p.name, "mma");
  cr_expect_eq(p.ctas, 64);
  cr_expect_str_eq(plan(&(tirx_gemm_options){.family = "scalar"}, 3, 100, 10).name, "scalar");
}

Test(gemm_paths, forced_paths) {
  tirx_gemm_plan p = plan(&(tirx_gemm_options){.path = TIRX_GEMM_PATH_WGMMA}, 1, 4096, 14336);
  cr_expect_eq(p.path, TIRX_GEMM_PATH_WGMMA);
  cr_expect_str_eq(p.name, "wgmma");
  cr_expect_eq(p.tiles.block_m, 64);
  p = plan(&(tirx_gemm_options){.path = TIRX_GEMM_PATH_GEMV}, 8, 100, 3);
  cr_expect_eq(p.path, TIRX_GEMM_PATH_GEMV);
  cr_expect_eq(p.gemv_rows, 1);
  p = plan(&(tirx_gemm_options){.path = TIRX_GEMM_PATH_GEMV, .gemv_rows = 2}, 3, 4096, 64);
  cr_expect_eq(p.gemv_rows, 2);
  cr_expect_eq(p.ctas, 2048);
  p = plan(&(tirx_gemm_options){.gemv_rows = 1}, 1, 4096, 64); /* auto path, forced rows */
  cr_expect_eq(p.path, TIRX_GEMM_PATH_GEMV);
  cr_expect_eq(p.gemv_rows, 1);
}

/* The plan reports the kernel tirx_op_gemm runs: the op builds with opts->path set to the
 * plan's path, so the plan of TIRX_GEMM_PATH_AUTO equals the plan with that path forced (tiles,
 * CTAs, splits). Review of session 16: where AUTO kept the wgmma path without a split, the plan
 * reported gemm_pick's split-K tile (rows of 64 whose BLOCK_N would be 16 take 128 columns;
 * rows of 128 under 48 columns with K >= 8192 take 64) and its CTAs, while the op built the
 * unsplit tile of the forced path: 3 x 64 x 64 planned 64x128 on 1 CTA and ran 64x16 on 4. */
Test(gemm_paths, the_plan_is_what_the_op_runs) {
  static const int64_t ms[] = {1, 3, 4, 7, 8, 9, 16, 17, 64, 65, 100, 128, 129, 255, 256, 257};
  static const int64_t ns[] = {8, 16, 64, 100, 256, 1000, 2048, 2112, 4096, 8192};
  static const int64_t ks[] = {8, 16, 64, 100, 256, 448, 512, 4096, 8192, 14336};
  static const int sms[] = {0, 1, 8, 64, 132, 200};
  static const char *const fams[] = {NULL, "mma"};
  int checked = 0;
  for (size_t f = 0; f < 2; f++)
    for (size_t q = 0; q < sizeof sms / sizeof sms[0]; q++)
      for (size_t a = 0; a < sizeof ms / sizeof ms[0]; a++)
        for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++)
          for (size_t j = 0; j < sizeof ks / sizeof ks[0]; j++) {
            tirx_gemm_options o = {.sms = sms[q], .family = fams[f]};
            tirx_gemm_plan p = plan(&o, ms[a], ns[i], ks[j]);
            if (p.path != TIRX_GEMM_PATH_WGMMA) continue;
            tirx_gemm_options w = o;
            if (!fams[f]) w.path = TIRX_GEMM_PATH_WGMMA; /* "mma": its tiles are WGMMA's */
            tirx_gemm_plan pw = plan(&w, ms[a], ns[i], ks[j]);
            if (fams[f]) {
              tirx_gemm_options t = {.sms = sms[q], .path = TIRX_GEMM_PATH_WGMMA};
              cr_assert_eq(tirx_kernels_gemm_tiles(&t, ms[a], ns[i], ks[j], &pw.tiles), TIRX_OK);
            }
            cr_expect(memcmp(&p.tiles, &pw.tiles, sizeof p.tiles) == 0 &&
                          (fams[f] || (p.ctas == pw.ctas && p.splits == pw.splits)),
                      "%s sms %d: %lld x %lld x %lld plans %dx%dx%d on %lld CTAs, the op runs "
                      "%dx%dx%d on %lld", fams[f] ? fams[f] : "wgmma", sms[q], (long long)ms[a],
                      (long long)ns[i], (long long)ks[j], p.tiles.block_m, p.tiles.block_n,
                      p.tiles.stages, (long long)p.ctas, pw.tiles.block_m, pw.tiles.block_n,
                      pw.tiles.stages, (long long)pw.ctas);
            checked++;
          }
  cr_expect_gt(checked, 1000);
  /* the case the review found, exactly */
  tirx_gemm_plan p = plan(NULL, 3, 64, 64);
  cr_expect(p.path == TIRX_GEMM_PATH_WGMMA && p.tiles.block_m == 64 && p.tiles.block_n == 16 &&
                p.ctas == 4,
            "3 x 64 x 64: %s %dx%d on %lld CTAs", p.name, p.tiles.block_m, p.tiles.block_n,
            (long long)p.ctas);
}

Test(gemm_paths, bad_options_name_the_field) {
  tirx_gemm_plan p = {0};
  tirx_kernel *k = PTR(1);
  expect_error(tirx_kernels_gemm_plan(NULL, 1, 1, 1, NULL), TIRX_E_NULL_ARG,
               "tirx_kernels_gemm_plan: out is NULL");
  expect_error(tirx_kernels_gemm_plan(NULL, 0, 1, 1, &p), TIRX_E_INVALID_ARG,
               "tirx_kernels_gemm_plan: m, n, k are 0, 1, 1, expected >= 1");
  expect_error(tirx_kernels_gemm_plan(&(tirx_gemm_options){.path = (tirx_gemm_path)4}, 1, 1, 1, &p),
               TIRX_E_INVALID_ARG,
               "tirx_kernels_gemm_plan: opts->path is 4, expected a tirx_gemm_path (0 to 3)");
  expect_error(tirx_kernels_gemm_build(&(tirx_gemm_options){.path = (tirx_gemm_path)-1},
                                       TIRX_BF16, 1, 1, 1, &k),
               TIRX_E_INVALID_ARG,
               "tirx_kernels_gemm_build: opts->path is -1, expected a tirx_gemm_path (0 to 3)");
  cr_assert_null(k);
  expect_error(tirx_kernels_gemm_plan(&(tirx_gemm_options){.path = TIRX_GEMM_PATH_GEMV,
                                                           .family = "mma"}, 1, 1, 1, &p),
               TIRX_E_INVALID_ARG,
               "tirx_kernels_gemm_plan: opts->path is 2 with opts->family \"mma\", expected "
               "TIRX_GEMM_PATH_AUTO (the paths are family \"wgmma\"'s)");
  expect_error(tirx_kernels_gemm_plan(&(tirx_gemm_options){.gemv_rows = 3}, 1, 1, 1, &p),
               TIRX_E_INVALID_ARG,
               "tirx_kernels_gemm_plan: opts->gemv_rows is 3, expected 0, 1, 2 or 4");
  expect_error(tirx_kernels_gemm_tiles(&(tirx_gemm_options){.gemv_rows = -4}, 1, 1, 1,
                                       &(tirx_gemm_tiles){0}),
               TIRX_E_INVALID_ARG,
               "tirx_kernels_gemm_tiles: opts->gemv_rows is -4, expected 0, 1, 2 or 4");
  expect_error(tirx_kernels_gemm_plan(&(tirx_gemm_options){.path = TIRX_GEMM_PATH_GEMV}, 9, 64,
                                      64, &p),
               TIRX_E_INVALID_ARG,
               "tirx_kernels_gemm_plan: opts->path is TIRX_GEMM_PATH_GEMV, expected M <= 8 (M is 9)");
  k = PTR(1);
  expect_error(tirx_kernels_gemm_build(&(tirx_gemm_options){.path = TIRX_GEMM_PATH_GEMV},
                                       TIRX_F16, 255, 64, 64, &k),
               TIRX_E_INVALID_ARG,
               "tirx_kernels_gemm_build: opts->path is TIRX_GEMM_PATH_GEMV, expected M <= 8 (M "
               "is 255)");
  cr_assert_null(k);
  /* The op: the same messages, before any kernel is built. */
  tirx_runtime *rt = compile_only_runtime();
  const tirx_dtype B = TIRX_BF16;
  tirx_tensor_arg a = {PTR(0x10000), B, 2, (int64_t[]){9, 64}, NULL};
  tirx_tensor_arg b = {PTR(0x20000), B, 2, (int64_t[]){64, 64}, NULL};
  tirx_tensor_arg c = {PTR(0x30000), B, 2, (int64_t[]){9, 64}, NULL};
  expect_error(tirx_op_gemm(rt, &(tirx_gemm_options){.path = TIRX_GEMM_PATH_GEMV}, &a, &b, NULL,
                            &c, NULL),
               TIRX_E_INVALID_ARG,
               "tirx_op_gemm: opts->path is TIRX_GEMM_PATH_GEMV, expected M <= 8 (M is 9)");
  expect_error(tirx_op_gemm(rt, &(tirx_gemm_options){.path = (tirx_gemm_path)7}, &a, &b, NULL,
                            &c, NULL),
               TIRX_E_INVALID_ARG,
               "tirx_op_gemm: opts->path is 7, expected a tirx_gemm_path (0 to 3)");
  expect_error(tirx_op_gemm(rt, &(tirx_gemm_options){.gemv_rows = 8}, &a, &b, NULL, &c, NULL),
               TIRX_E_INVALID_ARG,
               "tirx_op_gemm: opts->gemv_rows is 8, expected 0, 1, 2 or 4");
  cr_assert_eq(tirx_kernels_cached(), 0, "a bad call built a kernel");
  tirx_runtime_destroy(rt);
}

static void assert_has(const char *text, const char *want, const char *what) {
  cr_assert_not_null(strstr(text, want), "%s: no '%s' in:\n%.6000s", what, want, text);
}

static int count_of(const char *text, const char *s) {
  int n = 0;
  for (const char *p = strstr(text, s); p; p = strstr(p + 1, s)) n++;
  return n;
}

/* A spread of the gemv variants (both dtypes; every M with 4 rows and no epilogue, every
 * epilogue at M = 3, every rows at M = 8 with gelu) builds with rows + M vector copies and
 * compiles for sm_90a with rows + M 16-byte loads per step (ld.global.cs for B, ld.global.nc
 * for A) and no local memory. */
Test(gemm_paths, gemv_variants_compile_for_sm90a, .timeout = 600) {
  tirx_runtime *rt = compile_only_runtime();
  static const tirx_dtype dts[2] = {TIRX_BF16, TIRX_F16};
  for (int d = 0; d < 2; d++)
    for (int m = 1; m <= 8; m++)
      for (int r = 1; r <= 4; r *= 2)
        for (int e = 0; e < 4; e++) {
          if (!((r == 4 && e == 0) || (m == 3 && r == 4) || (m == 8 && e == 3))) continue;
          gemm_spec s = {.dtype = dts[d], .m = m, .n = 4096, .k = 4096,
                         .epilogue = (tirx_epilogue)e, .path = TIRX_GEMM_PATH_GEMV, .gemv_rows = r};
          char err[4096] = "", what[96];
          tirx_kernel *k = gemm_build(&s, err, sizeof err);
          cr_assert_not_null(k, "%s", err);
          snprintf(what, sizeof what, "gemv %s m=%d rows=%d epilogue %d", tirx_dtype_name(dts[d]),
                   m, r, e);
          char name[64];
          snprintf(name, sizeof name, "gemv_%s_m%d_r%d", tirx_dtype_name(dts[d]), m, r);
          cr_expect(strncmp(tirx_kernel_name(k), name, strlen(name)) == 0, "%s: named %s", what,
                    tirx_kernel_name(k));
          const char *rep = tirx_kernel_dispatch_report(k);
          cr_expect_eq(count_of(rep, "copy.vec vec=8"), m + r, "%s:\n%s", what, rep);
          cr_expect_null(strstr(rep, "fallback"), "%s:\n%s", what, rep);
          {
            tirx_compiled *c = NULL;
            cr_assert_eq(tirx_compile(rt, k, "sm_90a", &c), TIRX_OK, "%s: %s", what,
                         tirx_last_error());
            const char *ptx = tirx_compiled_ptx(c);
            cr_expect_eq(count_of(ptx, "ld.global.cs.v4.u32"), r, "%s", what);
            cr_expect_eq(count_of(ptx, "ld.global.nc.v4.u32"), m, "%s", what);
            cr_expect_null(strstr(ptx, ".local"), "%s: local memory in the PTX", what);
            assert_has(ptx, ".maxntid 256, 1, 1", what);
            assert_has(ptx, "shfl.sync.bfly", what);
            if (e == 2) assert_has(ptx, "ex2.approx", what);
            tirx_compiled_destroy(c);
          }
          tirx_kernel_release(k);
        }
  tirx_runtime_destroy(rt);
}

/* The gemv launch arguments as tirx_op_gemm passes them (kernels.h: N, K, LDA8, LDB8, LDC,
 * the three flat lengths, flat A, B, C, bias [1, N]) pass the launch checks, odd shapes and
 * padded rows included. */
Test(gemm_paths, gemv_launch_arguments_pass_the_checks, .timeout = 300) {
  static const int64_t shapes[][3] = {{1, 4096, 14336}, {3, 77, 40}, {7, 255, 9}, {8, 1, 1}};
  tirx_runtime *rt = compile_only_runtime();
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
    for (int e = 0; e < 2; e++) {
      int64_t m = shapes[i][0], n = shapes[i][1], kk = shapes[i][2];
      gemm_spec s = {.dtype = TIRX_BF16, .m = m, .n = n, .k = kk,
                     .epilogue = e ? TIRX_EPILOGUE_BIAS_GELU : TIRX_EPILOGUE_NONE,
                     .path = TIRX_GEMM_PATH_GEMV};
      char err[4096] = "";
      tirx_kernel *k = gemm_build(&s, err, sizeof err);
      cr_assert_not_null(k, "%s", err);
      int64_t lda = (kk + 7) / 8 * 8, ldc = (n + 7) / 8 * 8;
      int64_t al = (m - 1) * lda + kk, bl = (n - 1) * lda + kk, cl = (m - 1) * ldc + n;
      void *p = PTR(4096);
      tirx_arg args[12] = {tirx_arg_i32((int32_t)n), tirx_arg_i32((int32_t)kk),
                           tirx_arg_i64(lda / 8),    tirx_arg_i64(lda / 8),
                           tirx_arg_i64(ldc),        tirx_arg_i64(al),
                           tirx_arg_i64(bl),         tirx_arg_i64(cl),
                           tirx_arg_tensor(p, TIRX_BF16, 1, &al, NULL),
                           tirx_arg_tensor(p, TIRX_BF16, 1, &bl, NULL),
                           tirx_arg_tensor(p, TIRX_BF16, 1, &cl, NULL),
                           tirx_arg_tensor(p, TIRX_BF16, 2, (int64_t[]){1, n}, NULL)};
      tirx_future *f = NULL;
      cr_assert_eq(tirx_prepare_async(rt, k, args, e ? 12 : 11, &f), TIRX_OK, "%s: %s",
                   tirx_kernel_name(k), tirx_last_error());
      cr_assert_eq(tirx_future_wait(f, -1), TIRX_OK, "%s", tirx_last_error());
      tirx_future_release(f);
      tirx_kernel_release(k);
    }
  tirx_runtime_destroy(rt);
}

/* The op's table: the gemv kernel is specialised on M (M = 1 and M = 2 two kernels, M = 1
 * again none), forced rows another, a forced wgmma at M = 1 another; all return the launch's
 * TIRX_E_NO_DEVICE. */
Test(gemm_paths, the_op_builds_one_gemv_kernel_per_m, .timeout = 300) {
  tirx_runtime *rt = compile_only_runtime();
  char want[1024];
  snprintf(want, sizeof want, "tirx_op_gemm: tirx_launch: no CUDA device: %s",
           tirx_runtime_device_error(rt));
  const tirx_dtype B = TIRX_BF16;
  const tirx_tensor_arg *b = M2(0x20000, B, 4096, 64);
  expect_error(tirx_op_gemm(rt, NULL, M2(0x10000, B, 1, 64), b, NULL, M2(0x30000, B, 1, 4096),
                            NULL), TIRX_E_NO_DEVICE, want);
  cr_assert_eq(tirx_kernels_cached(), 1);
  expect_error(tirx_op_gemm(rt, NULL, M2(0x10000, B, 2, 64), b, NULL, M2(0x30000, B, 2, 4096),
                            NULL), TIRX_E_NO_DEVICE, want);
  cr_assert_eq(tirx_kernels_cached(), 2);
  expect_error(tirx_op_gemm(rt, NULL, M2(0x10000, B, 1, 64), M2(0x20000, B, 4096, 64), NULL,
                            M2(0x30000, B, 1, 4096), NULL), TIRX_E_NO_DEVICE, want);
  cr_assert_eq(tirx_kernels_cached(), 2);
  expect_error(tirx_op_gemm(rt, &(tirx_gemm_options){.gemv_rows = 2}, M2(0x10000, B, 1, 64), b,
                            NULL, M2(0x30000, B, 1, 4096), NULL), TIRX_E_NO_DEVICE, want);
  cr_assert_eq(tirx_kernels_cached(), 3);
  expect_error(tirx_op_gemm(rt, &(tirx_gemm_options){.path = TIRX_GEMM_PATH_WGMMA},
                            M2(0x10000, B, 1, 64), b, NULL, M2(0x30000, B, 1, 4096), NULL),
               TIRX_E_NO_DEVICE, want);
  cr_assert_eq(tirx_kernels_cached(), 4);
  tirx_runtime_destroy(rt);
}

/* ---- split-K ---- */

/* The model splits where the tiles fill fewer than half the SMs and K has 8 blocks or more;
 * the LLaMA decode shapes keep the wgmma tiles (gemm_pick's BLOCK_N fills the SMs). */
Test(gemm_paths, the_split_k_plan) {
  static const int64_t ms[] = {9, 16, 32, 64, 128, 256};
  for (size_t a = 0; a < sizeof ms / sizeof ms[0]; a++)
    for (size_t i = 0; i < sizeof NK / sizeof NK[0]; i++) {
      int64_t m = ms[a], n = NK[i][0], k = NK[i][1];
      tirx_gemm_plan p = plan(NULL, m, n, k);
      /* Only N = 4096 with rows of 128 and a long K (whose fill-the-SMs tiles would be 32
       * wide) splits: 64-column tiles. */
      bool sk = n == 4096 && m > 64 && m <= 128 && k >= 8192;
      cr_expect_eq(p.path, sk ? TIRX_GEMM_PATH_WGMMA_SPLITK : TIRX_GEMM_PATH_WGMMA,
                   "M=%lld N=%lld K=%lld: %s", (long long)m, (long long)n, (long long)k, p.name);
      if (!sk) {
        cr_expect_eq(p.splits, 1);
        cr_expect_eq(p.workspace_bytes, 0);
      }
    }
  tirx_gemm_plan p = plan(NULL, 16, 1024, 14336); /* 8 tiles of 64x128: 16 splits */
  cr_expect_eq(p.path, TIRX_GEMM_PATH_WGMMA_SPLITK);
  cr_expect_str_eq(p.name, "wgmma_splitk");
  cr_expect(p.tiles.block_m == 64 && p.tiles.block_n == 128);
  cr_expect_eq(p.splits, 16);
  cr_expect_eq(p.ctas, 128);
  cr_expect_eq(p.workspace_bytes, 16 * 64 * 1024 * 4);
  p = plan(NULL, 64, 256, 8192); /* 2 tiles: 16 splits of 8 K blocks */
  cr_expect_eq(p.splits, 16);
  cr_expect_eq(p.workspace_bytes, 16 * 64 * 256 * 4);
  p = plan(NULL, 64, 4096, 4096); /* 128 tiles of 64x32 fill the SMs: no split */
  cr_expect(p.path == TIRX_GEMM_PATH_WGMMA && p.tiles.block_n == 32 && p.splits == 1 &&
            p.ctas == 128);
  p = plan(NULL, 128, 4096, 14336); /* 64 tiles of 128x64: 2 splits of 112 K blocks */
  cr_expect(p.path == TIRX_GEMM_PATH_WGMMA_SPLITK && p.tiles.block_n == 64 && p.splits == 2 &&
            p.ctas == 128);
  p = plan(NULL, 128, 4096, 4096); /* a short K: 128 tiles of 128x32, no split */
  cr_expect(p.path == TIRX_GEMM_PATH_WGMMA && p.tiles.block_n == 32 && p.splits == 1);
  p = plan(&(tirx_gemm_options){.path = TIRX_GEMM_PATH_WGMMA}, 64, 4096, 4096); /* no split */
  cr_expect(p.tiles.block_n == 32 && p.splits == 1 && p.ctas == 128);
  p = plan(NULL, 9, 77, 4096); /* 1 tile: 132 would fill the SMs; 16 at most */
  cr_expect_eq(p.splits, 16);
  p = plan(NULL, 17, 130, 448); /* 7 K blocks: too few to split */
  cr_expect_eq(p.path, TIRX_GEMM_PATH_WGMMA);
  p = plan(NULL, 17, 130, 512); /* 8 K blocks, 4 per split at least: 2 */
  cr_expect_eq(p.splits, 2);
  /* Forced: the model's count, at least 2 where K allows; a count of 5 over 8 K blocks is 4
   * (2 blocks each, none empty); over 1 K block, 1. */
  const tirx_gemm_options sk = {.path = TIRX_GEMM_PATH_WGMMA_SPLITK};
  cr_expect_eq(plan(&sk, 8192, 8192, 8192).splits, 2);
  cr_expect_eq(plan(&sk, 16, 1024, 14336).splits, 16);
  cr_expect_eq(plan(&(tirx_gemm_options){.path = TIRX_GEMM_PATH_WGMMA_SPLITK, .splits = 5}, 16,
                    1024, 512).splits, 4);
  cr_expect_eq(plan(&(tirx_gemm_options){.path = TIRX_GEMM_PATH_WGMMA_SPLITK, .splits = 64}, 16,
                    1024, 40).splits, 1);
  cr_expect_eq(plan(&sk, 1, 64, 64).path, TIRX_GEMM_PATH_WGMMA_SPLITK);
}

Test(gemm_paths, split_k_options_are_checked) {
  tirx_gemm_plan p = {0};
  expect_error(tirx_kernels_gemm_plan(&(tirx_gemm_options){.path = TIRX_GEMM_PATH_WGMMA_SPLITK,
                                                           .splits = 65}, 1, 1, 1, &p),
               TIRX_E_INVALID_ARG,
               "tirx_kernels_gemm_plan: opts->splits is 65, expected 0 (the plan's) to 64");
  expect_error(tirx_kernels_gemm_plan(&(tirx_gemm_options){.splits = -2}, 1, 1, 1, &p),
               TIRX_E_INVALID_ARG,
               "tirx_kernels_gemm_plan: opts->splits is -2, expected 0 (the plan's) to 64");
  expect_error(tirx_kernels_gemm_plan(&(tirx_gemm_options){.splits = 4}, 1, 1, 1, &p),
               TIRX_E_INVALID_ARG,
               "tirx_kernels_gemm_plan: opts->splits is 4, expected 0 unless opts->path is "
               "TIRX_GEMM_PATH_WGMMA_SPLITK");
  expect_error(tirx_kernels_gemm_plan(&(tirx_gemm_options){.path = TIRX_GEMM_PATH_GEMV,
                                                           .splits = 4}, 1, 1, 1, &p),
               TIRX_E_INVALID_ARG,
               "tirx_kernels_gemm_plan: opts->splits is 4, expected 0 unless opts->path is "
               "TIRX_GEMM_PATH_WGMMA_SPLITK");
  expect_error(tirx_kernels_gemm_plan(&(tirx_gemm_options){.path = TIRX_GEMM_PATH_WGMMA_SPLITK},
                                      65536, 64, 64, &p),
               TIRX_E_INVALID_ARG,
               "tirx_kernels_gemm_plan: opts->path is TIRX_GEMM_PATH_WGMMA_SPLITK, expected M <= "
               "65535 (M is 65536)");
  expect_error(tirx_kernels_gemm_plan(&(tirx_gemm_options){.path = TIRX_GEMM_PATH_WGMMA_SPLITK,
                                                           .family = "scalar"}, 1, 1, 1, &p),
               TIRX_E_INVALID_ARG,
               "tirx_kernels_gemm_plan: opts->path is 3 with opts->family \"scalar\", expected "
               "TIRX_GEMM_PATH_AUTO (the paths are family \"wgmma\"'s)");
}

/* The split-K kernel of a few tile shapes and the reduction of every epilogue, both dtypes:
 * built and compiled for sm_90a (wgmma, TMA loads, the partial tile's stores, no local
 * memory; the reduction's loop over the splits). */
Test(gemm_paths, split_k_kernels_compile_for_sm90a, .timeout = 600) {
  tirx_runtime *rt = compile_only_runtime();
  static const tirx_dtype dts[2] = {TIRX_BF16, TIRX_F16};
  static const int64_t shapes[][3] = {{16, 1024, 14336}, {200, 4096, 8192}, {64, 256, 8192}};
  for (int d = 0; d < 2; d++) {
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
      gemm_spec s = {.dtype = dts[d], .m = shapes[i][0], .n = shapes[i][1], .k = shapes[i][2],
                     .epilogue = TIRX_EPILOGUE_BIAS, .path = TIRX_GEMM_PATH_WGMMA_SPLITK};
      char err[4096] = "", what[96];
      tirx_kernel *k = gemm_build(&s, err, sizeof err);
      cr_assert_not_null(k, "%s", err);
      snprintf(what, sizeof what, "split-K %s %lldx%lldx%lld", tirx_dtype_name(dts[d]),
               (long long)s.m, (long long)s.n, (long long)s.k);
      cr_expect_not_null(strstr(tirx_kernel_name(k), "_splitk"), "%s: %s", what,
                         tirx_kernel_name(k));
      const char *rep = tirx_kernel_dispatch_report(k);
      assert_has(rep, "copy(arch=sm_90, roles=local->global, team=warpgroup)", what);
      assert_has(rep, "gemm_async.wgmma", what);
      cr_expect_eq(tirx_kernel_num_params(k) >= 9, 1, "%s", what);
      tirx_compiled *c = NULL;
      cr_assert_eq(tirx_compile(rt, k, "sm_90a", &c), TIRX_OK, "%s: %s", what, tirx_last_error());
      const char *ptx = tirx_compiled_ptx(c);
      assert_has(ptx, "wgmma.mma_async.sync.aligned", what);
      assert_has(ptx, "cp.async.bulk.tensor.2d.shared::cluster.global", what);
      assert_has(ptx, "st.global.f32", what);
      cr_expect_null(strstr(ptx, "cp.async.bulk.tensor.2d.global.shared"), "%s: a TMA store", what);
      cr_expect_null(strstr(ptx, ".local"), "%s: local memory", what);
      tirx_compiled_destroy(c);
      tirx_kernel_release(k);
    }
    for (int e = 0; e < 4; e++) {
      tirx_kernel *k = NULL;
      cr_assert_eq(tirx__kernels_gemm_reduce_build(dts[d], (tirx_epilogue)e, &k), TIRX_OK, "%s",
                   tirx_last_error());
      char what[64];
      snprintf(what, sizeof what, "reduce %s epilogue %d", tirx_dtype_name(dts[d]), e);
      tirx_compiled *c = NULL;
      cr_assert_eq(tirx_compile(rt, k, "sm_90a", &c), TIRX_OK, "%s: %s", what, tirx_last_error());
      const char *ptx = tirx_compiled_ptx(c);
      assert_has(ptx, "ld.global.f32", what);
      assert_has(ptx, ".maxntid 256, 1, 1", what);
      cr_expect_null(strstr(ptx, ".local"), "%s: local memory", what);
      tirx_compiled_destroy(c);
      tirx_kernel_release(k);
    }
  }
  tirx_runtime_destroy(rt);
}

/* The split-K arguments as tirx_op_gemm passes them pass the launch checks, for the kernel
 * and its reduction; the op builds both (two kernels in the table, one more for another
 * epilogue's reduction) and returns the launch's TIRX_E_NO_DEVICE. */
Test(gemm_paths, split_k_launch_arguments_and_the_op, .timeout = 300) {
  tirx_runtime *rt = compile_only_runtime();
  int64_t m = 17, n = 130, kk = 1000, lk = 1000, ln = 136;
  gemm_spec s = {.dtype = TIRX_BF16, .m = m, .n = n, .k = kk, .path = TIRX_GEMM_PATH_WGMMA_SPLITK};
  tirx_gemm_options o = gemm_options(&s);
  tirx_gemm_plan p = plan(&o, m, n, kk);
  char err[4096] = "";
  tirx_kernel *k = gemm_build(&s, err, sizeof err), *r = NULL;
  cr_assert_not_null(k, "%s", err);
  cr_assert_eq(tirx__kernels_gemm_reduce_build(TIRX_BF16, TIRX_EPILOGUE_BIAS_SILU, &r), TIRX_OK);
  int64_t kblocks = (kk + 63) / 64, kbs = (kblocks + p.splits - 1) / p.splits;
  int64_t ws = (m + p.tiles.block_m - 1) / p.tiles.block_m * p.tiles.block_m;
  int64_t wc = (n + p.tiles.block_n - 1) / p.tiles.block_n * p.tiles.block_n, wr = p.splits * ws;
  cr_assert_eq(wr * wc * 4, p.workspace_bytes);
  void *ptr = PTR(4096);
  tirx_arg args[9] = {tirx_arg_i32((int32_t)m), tirx_arg_i32((int32_t)n), tirx_arg_i32((int32_t)kk),
                      tirx_arg_tensor(ptr, TIRX_BF16, 2, (int64_t[]){m, kk}, (int64_t[]){lk, 1}),
                      tirx_arg_tensor(ptr, TIRX_BF16, 2, (int64_t[]){kk, n}, (int64_t[]){1, lk}),
                      tirx_arg_i32((int32_t)kbs), tirx_arg_i32((int32_t)wr), tirx_arg_i32((int32_t)wc),
                      tirx_arg_tensor(ptr, TIRX_F32, 2, (int64_t[]){wr, wc}, NULL)};
  tirx_arg rargs[9] = {tirx_arg_i32((int32_t)m), tirx_arg_i32((int32_t)n), tirx_arg_i32(p.splits),
                       tirx_arg_i32((int32_t)ws), tirx_arg_i32((int32_t)wr), tirx_arg_i32((int32_t)wc),
                       tirx_arg_tensor(ptr, TIRX_F32, 2, (int64_t[]){wr, wc}, NULL),
                       tirx_arg_tensor(ptr, TIRX_BF16, 2, (int64_t[]){m, n}, (int64_t[]){ln, 1}),
                       tirx_arg_tensor(ptr, TIRX_BF16, 2, (int64_t[]){1, n}, NULL)};
  tirx_future *f = NULL;
  cr_assert_eq(tirx_prepare_async(rt, k, args, 9, &f), TIRX_OK, "%s", tirx_last_error());
  cr_assert_eq(tirx_future_wait(f, -1), TIRX_OK, "%s", tirx_last_error());
  tirx_future_release(f);
  cr_assert_eq(tirx_prepare_async(rt, r, rargs, 9, &f), TIRX_OK, "%s", tirx_last_error());
  cr_assert_eq(tirx_future_wait(f, -1), TIRX_OK, "%s", tirx_last_error());
  tirx_future_release(f);
  tirx_kernel_release(k);
  tirx_kernel_release(r);

  char want[1024];
  snprintf(want, sizeof want, "tirx_op_gemm: tirx_launch: no CUDA device: %s",
           tirx_runtime_device_error(rt));
  const tirx_dtype B = TIRX_BF16;
  const tirx_tensor_arg *bias = &(tirx_tensor_arg){PTR(0x40000), B, 1, (int64_t[]){1024}, NULL};
  expect_error(tirx_op_gemm(rt, NULL, M2(0x10000, B, 16, 14336), M2(0x20000, B, 1024, 14336),
                            NULL, M2(0x30000, B, 16, 1024), NULL), TIRX_E_NO_DEVICE, want);
  cr_assert_eq(tirx_kernels_cached(), 2);
  expect_error(tirx_op_gemm(rt, &(tirx_gemm_options){.epilogue = TIRX_EPILOGUE_BIAS_GELU},
                            M2(0x10000, B, 16, 14336), M2(0x20000, B, 1024, 14336), bias,
                            M2(0x30000, B, 16, 1024), NULL), TIRX_E_NO_DEVICE, want);
  cr_assert_eq(tirx_kernels_cached(), 3);
  tirx_runtime_destroy(rt);
}

/* Without a device the runtime's scratch buffer reports tirx_runtime_alloc's error, prefixed
 * with the caller's name, and hands out nothing. */
Test(gemm_paths, the_workspace_without_a_device) {
  tirx_runtime *rt = compile_only_runtime();
  void *p = PTR(1);
  cr_assert_eq(tirx__runtime_scratch(rt, "tirx_op_gemm", NULL, 4096, &p), TIRX_E_NO_DEVICE);
  cr_assert_null(p);
  cr_assert_not_null(strstr(tirx_last_error(), "tirx_op_gemm: the workspace of 4096 bytes: "
                                               "tirx_runtime_alloc: "),
                     "%s", tirx_last_error());
  tirx_runtime_destroy(rt);
}

/* A ragged N (N * 2 bytes not a multiple of 16: a TMA store clips only at the 16-byte piece
 * that holds the row's last element, so it would write C's row padding): the wgmma kernel and
 * the mma/scalar families store C element by element, guarded by M and N, with no TMA store
 * and no tensor map of C; their launch arguments (ldc padded past N) pass the checks. N = 80
 * keeps the TMA store. */
Test(gemm_paths, ragged_n_stores_element_by_element, .timeout = 600) {
  tirx_runtime *rt = compile_only_runtime();
  static const char *fams[3] = {"wgmma", "mma", "scalar"};
  for (int f = 0; f < 3; f++)
    for (int64_t n = 77; n <= 80; n += 3) {
      gemm_spec s = {.dtype = f == 1 ? TIRX_F16 : TIRX_BF16, .m = 9, .n = n, .k = 40,
                     .epilogue = f == 0 ? TIRX_EPILOGUE_BIAS_SILU : TIRX_EPILOGUE_NONE,
                     .family = fams[f]};
      char err[4096] = "", what[96];
      snprintf(what, sizeof what, "%s N %lld", fams[f], (long long)n);
      tirx_kernel *k = gemm_build(&s, err, sizeof err);
      cr_assert_not_null(k, "%s: %s", what, err);
      bool ragged = n % 8 != 0;
      cr_expect_eq(strstr(tirx_kernel_name(k), "_ragged") != NULL, ragged, "%s: %s", what,
                   tirx_kernel_name(k));
      const char *rep = tirx_kernel_dispatch_report(k);
      cr_expect_eq(strstr(rep, "roles=shared->global") != NULL, !ragged, "%s:\n%s", what, rep);
      tirx_compiled *c = NULL;
      cr_assert_eq(tirx_compile(rt, k, "sm_90a", &c), TIRX_OK, "%s: %s", what, tirx_last_error());
      const char *ptx = tirx_compiled_ptx(c);
      cr_expect_eq(strstr(ptx, "cp.async.bulk.tensor.2d.global.shared") != NULL, !ragged,
                   "%s: TMA store", what);
      if (ragged) assert_has(ptx, "st.global.u16", what);
      cr_expect_null(strstr(ptx, ".local"), "%s: local memory", what);
      tirx_compiled_destroy(c);
      void *p = PTR(4096);
      int64_t ldc = (n + 7) / 8 * 8;
      tirx_arg args[7] = {tirx_arg_i32(9), tirx_arg_i32((int32_t)n), tirx_arg_i32(40),
                          tirx_arg_tensor(p, s.dtype, 2, (int64_t[]){9, 40}, (int64_t[]){40, 1}),
                          tirx_arg_tensor(p, s.dtype, 2, (int64_t[]){40, n}, (int64_t[]){1, 48}),
                          tirx_arg_tensor(p, s.dtype, 2, (int64_t[]){9, n}, (int64_t[]){ldc, 1}),
                          tirx_arg_tensor(p, s.dtype, 2, (int64_t[]){1, n}, NULL)};
      tirx_future *fu = NULL;
      cr_assert_eq(tirx_prepare_async(rt, k, args, f == 0 ? 7 : 6, &fu), TIRX_OK, "%s: %s",
                   what, tirx_last_error());
      cr_assert_eq(tirx_future_wait(fu, -1), TIRX_OK, "%s: %s", what, tirx_last_error());
      tirx_future_release(fu);
      tirx_kernel_release(k);
    }
  tirx_runtime_destroy(rt);
}

/* Clusters of two CTAs with a TMA multicast of the shared tile (issue 16): the plan takes none
 * by itself (measured slower on most shapes); asked for, 2 x 1 (B shared) and 1 x 2 (A
 * shared) are taken, 1 x 2 falls back to 1 x 1 where A cannot be halved on 8-row boundaries,
 * the grid is whole clusters; the gemv path and the other families take none. */
Test(gemm_paths, the_cluster_plan) {
  static const int64_t shapes[][3] = {{8192, 8192, 28672}, {8192, 57344, 8192},
                                      {256, 4096, 14336},  {128, 4096, 4096},
                                      {64, 4096, 4096},    {16, 1024, 14336},
                                      {9, 77, 40},         {300, 520, 256}};
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
    for (int q = 0; q < 3; q++) {
      int64_t m = shapes[i][0], n = shapes[i][1], k = shapes[i][2];
      tirx_gemm_options o = {.size = sizeof o, .cluster_m = q == 1 ? 2 : q ? 1 : 0,
                             .cluster_n = q == 2 ? 2 : q ? 1 : 0};
      tirx_gemm_plan p = plan(&o, m, n, k);
      int wm = q == 1 ? 2 : 1, wn = q == 2 ? 2 : 1; /* q 0: the plan's (none) */
      cr_expect(p.cluster_m == wm && p.cluster_n == wn,
                "%lldx%lldx%lld asked %dx%d: cluster %dx%d, expected %dx%d", (long long)m,
                (long long)n, (long long)k, o.cluster_m, o.cluster_n, p.cluster_m, p.cluster_n,
                wm, wn);
      cr_expect_eq(p.ctas % (p.cluster_m * p.cluster_n), 0, "%lld CTAs", (long long)p.ctas);
      cr_expect(p.ctas <= 132, "%lld CTAs", (long long)p.ctas);
    }
  tirx_gemm_options o = {.size = sizeof o, .path = TIRX_GEMM_PATH_WGMMA, .cluster_m = 1,
                         .cluster_n = 2};
  tirx_gemm_plan p = plan(&o, 8, 4096, 4096); /* 8 rows of A: not halved */
  cr_expect(p.cluster_m == 1 && p.cluster_n == 1, "%dx%d", p.cluster_m, p.cluster_n);
  o.cluster_m = 2, o.cluster_n = 1;
  p = plan(&o, 8, 4096, 4096); /* one row of tiles: the partner's tile is past M, still valid */
  cr_expect(p.cluster_m == 2 && p.cluster_n == 1, "%dx%d", p.cluster_m, p.cluster_n);
  cr_expect_eq(p.ctas % 2, 0);
  o.cluster_m = 0, o.cluster_n = 0, o.path = TIRX_GEMM_PATH_AUTO;
  p = plan(&o, 1, 4096, 4096); /* gemv */
  cr_expect(p.cluster_m == 1 && p.cluster_n == 1);
  o.family = "mma";
  p = plan(&o, 8192, 8192, 8192);
  cr_expect(p.cluster_m == 1 && p.cluster_n == 1);
}

Test(gemm_paths, cluster_options_are_checked) {
  tirx_gemm_plan p = {0};
  static const int bad[][2] = {{3, 1}, {2, 2}, {0, 1}, {1, 0}, {-1, 1}, {1, 4}};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char want[256];
    snprintf(want, sizeof want, "tirx_kernels_gemm_plan: opts->cluster_m x cluster_n is %d x %d, "
             "expected 0 x 0 (the plan's), 1 x 1, 2 x 1 or 1 x 2", bad[i][0], bad[i][1]);
    tirx_gemm_options o = {.size = sizeof o, .cluster_m = bad[i][0], .cluster_n = bad[i][1]};
    expect_error(tirx_kernels_gemm_plan(&o, 64, 64, 64, &p), TIRX_E_INVALID_ARG, want);
  }
  tirx_gemm_options o = {.size = sizeof o, .family = "scalar", .cluster_m = 2, .cluster_n = 1};
  expect_error(tirx_kernels_gemm_plan(&o, 64, 64, 64, &p), TIRX_E_INVALID_ARG,
               "tirx_kernels_gemm_plan: opts->cluster_m x cluster_n is 2 x 1, expected 0 x 0 or "
               "1 x 1 for this family (clusters are the wgmma paths')");
  o = (tirx_gemm_options){.size = sizeof o, .path = TIRX_GEMM_PATH_GEMV, .cluster_m = 1,
                          .cluster_n = 2};
  tirx_kernel *k = NULL;
  expect_error(tirx_kernels_gemm_build(&o, TIRX_BF16, 4, 64, 64, &k), TIRX_E_INVALID_ARG,
               "tirx_kernels_gemm_build: opts->cluster_m x cluster_n is 1 x 2, expected 0 x 0 or "
               "1 x 1 for the gemv path (clusters are the wgmma paths')");
  cr_assert_null(k);
  o.cluster_n = 1; /* 1 x 1 is "no cluster": accepted everywhere */
  cr_assert_eq(tirx_kernels_gemm_plan(&o, 4, 64, 64, &p), TIRX_OK, "%s", tirx_last_error());
  /* one SM's grid holds no 2-CTA cluster (its grid would be 0 CTAs) */
  for (int q = 0; q < 2; q++) {
    o = (tirx_gemm_options){.size = sizeof o, .sms = 1, .cluster_m = 2 - q, .cluster_n = 1 + q};
    char want[256];
    snprintf(want, sizeof want, "tirx_kernels_gemm_build: opts->sms is 1 with a %d x %d cluster, "
             "expected 0 or at least 2 (the cluster's CTAs)", 2 - q, 1 + q);
    expect_error(tirx_kernels_gemm_build(&o, TIRX_BF16, 256, 256, 256, &k), TIRX_E_INVALID_ARG,
                 want);
    cr_assert_null(k);
    o.sms = 2;
    cr_assert_eq(tirx_kernels_gemm_plan(&o, 256, 256, 256, &p), TIRX_OK, "%s", tirx_last_error());
    cr_assert_eq(p.ctas, 2, "sms 2, cluster %d x %d: %lld CTAs", 2 - q, 1 + q, (long long)p.ctas);
  }
}

/* The clustered kernels (A shared, B shared, plain and split-K, a bias epilogue, a ragged N),
 * both dtypes: named for their cluster, compiled for sm_90a with the multicast loads, the
 * remote arrivals (mapa) and the cluster barriers in the PTX, no local memory. */
Test(gemm_paths, cluster_kernels_compile_for_sm90a, .timeout = 600) {
  tirx_runtime *rt = compile_only_runtime();
  static const struct {
    int64_t m, n, k;
    tirx_gemm_path path;
    tirx_epilogue ep;
    const char *suffix;
  } cases[] = {
      {128, 4096, 4096, TIRX_GEMM_PATH_WGMMA, TIRX_EPILOGUE_NONE, "_c2n"},
      {8192, 8192, 8192, TIRX_GEMM_PATH_WGMMA, TIRX_EPILOGUE_BIAS_SILU, "_c2m"},
      {128, 4096, 14336, TIRX_GEMM_PATH_WGMMA_SPLITK, TIRX_EPILOGUE_NONE, "_c2n_splitk"},
      {300, 1001, 256, TIRX_GEMM_PATH_WGMMA, TIRX_EPILOGUE_BIAS, "_ragged"},
  };
  for (int d = 0; d < 2; d++)
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
      tirx_dtype dt = d ? TIRX_F16 : TIRX_BF16;
      bool b_shared = strstr(cases[i].suffix, "c2m") || i == 3;
      tirx_gemm_options o = {.size = sizeof o, .path = cases[i].path, .epilogue = cases[i].ep,
                             .cluster_m = b_shared ? 2 : 1, .cluster_n = b_shared ? 1 : 2};
      tirx_kernel *k = NULL;
      cr_assert_eq(tirx_kernels_gemm_build(&o, dt, cases[i].m, cases[i].n, cases[i].k, &k),
                   TIRX_OK, "%s", tirx_last_error());
      char what[128];
      snprintf(what, sizeof what, "%s %lldx%lldx%lld (%s)", tirx_dtype_name(dt),
               (long long)cases[i].m, (long long)cases[i].n, (long long)cases[i].k,
               tirx_kernel_name(k));
      cr_expect_not_null(strstr(tirx_kernel_name(k), cases[i].suffix), "%s", what);
      cr_expect_not_null(strstr(tirx_kernel_name(k), "_c2"), "%s", what);
      tirx_compiled *c = NULL;
      cr_assert_eq(tirx_compile(rt, k, "sm_90a", &c), TIRX_OK, "%s: %s", what, tirx_last_error());
      const char *ptx = tirx_compiled_ptx(c);
      assert_has(ptx, ".multicast::cluster", what);
      assert_has(ptx, "mapa.shared::cluster", what);
      assert_has(ptx, "mbarrier.arrive.shared::cluster.b64", what);
      assert_has(ptx, "barrier.cluster.arrive", what);
      assert_has(ptx, "wgmma.mma_async.sync.aligned", what);
      cr_expect_null(strstr(ptx, ".local"), "%s: local memory", what);
      tirx_compiled_destroy(c);
      tirx_kernel_release(k);
    }
  tirx_runtime_destroy(rt);
}

/* A joined wgmma group's later k16 steps are the first step's descriptors plus constants, +2
 * per 32 bytes along K inside a 128-byte swizzle row (128x64 and 128x256 GEMM tiles, bf16);
 * shared addresses are the compiler's __cvta_generic_to_shared and the descriptor takes them
 * unmasked (families/gemm_wgmma.c, jit/prelude.c; PERF-NOTES session 12). NVRTC compiles both
 * for sm_90a (it knows the builtin without a header), four HGMMA a k-block in the PTX. */
Test(gemm_paths, stepped_wgmma_descriptors, .timeout = 300) {
  tirx_runtime *rt = compile_only_runtime();
  static const int64_t shapes[][3] = {{256, 4096, 14336}, {8192, 8192, 8192}};
  for (int i = 0; i < 2; i++) {
    tirx_kernel *k = NULL;
    tirx_gemm_options o = {.size = sizeof o, .path = TIRX_GEMM_PATH_WGMMA};
    cr_assert_eq(tirx_kernels_gemm_build(&o, TIRX_BF16, shapes[i][0], shapes[i][1], shapes[i][2], &k),
                 TIRX_OK, "%s", tirx_last_error());
    const char *src = tirx_kernel_source(k);
    assert_has(src, "const unsigned long long tirx_da = tirx_wgmma_desc(", "stepped");
    assert_has(src, "tirx_da, tirx_db, tirx_da + 2, tirx_db + 2, tirx_da + 4, tirx_db + 4, "
                    "tirx_da + 6, tirx_db + 6, ", "stepped");
    assert_has(src, "return (unsigned)__cvta_generic_to_shared(p);", "cvta");
    assert_has(src, "return (unsigned long long)(addr >> 4) |", "unmasked");
    cr_assert_null(strstr(src, "0x3ffff"), "no address mask:\n%.3000s", src);
    cr_assert_null(strstr(src, "cvta.to.shared"), "no asm cvta:\n%.3000s", src);
    tirx_compiled *c = NULL;
    cr_assert_eq(tirx_compile(rt, k, "sm_90a", &c), TIRX_OK, "%s", tirx_last_error());
    cr_assert_gt(count_of(tirx_compiled_ptx(c), "wgmma.mma_async"), 0);
    tirx_compiled_destroy(c);
    tirx_kernel_release(k);
  }
  tirx_runtime_destroy(rt);
}
