/* The GEMM of src/kernels/gemm.c on the CPU: the tile shapes (tirx_kernels_gemm_tiles), every
 * documented error of the build, tiles and op functions (status and exact message), the op's
 * table, and that every family and epilogue builds and compiles for sm_90a with the
 * instructions it is meant to use (the GPU suite runs them: tests/gpu/test_mma.c). */
#include <string.h>

#include "../helpers.h"
#include "gemm_ref.h"

static tirx_runtime *compile_only_runtime(void) {
  tirx_runtime *rt = NULL;
  tirx_runtime_options o = {.compile_only = true, .cache_disabled = true};
  cr_assert_eq(tirx_runtime_create(&o, &rt), TIRX_OK, "%s", tirx_last_error());
  return rt;
}

static void assert_has(const char *text, const char *want) {
  cr_assert_not_null(strstr(text, want), "no '%s' in:\n%s", want, text);
}

static int64_t tiles_of(const gemm_spec *s, tirx_gemm_tiles t) {
  return (s->m + t.block_m - 1) / t.block_m * ((s->n + t.block_n - 1) / t.block_n);
}

/* The shared bytes of the wgmma kernel (the ring, the C tile, the bias row, barriers) fit. */
static int64_t smem_of(tirx_gemm_tiles t) {
  return (int64_t)t.stages * (t.block_m + t.block_n) * t.block_k * 2 +
         (int64_t)t.block_m * t.block_n * 2 + (int64_t)t.block_n * 4 + 2048;
}

Test(example_gemm, pick_keeps_128x256_for_large_m) {
  static const int64_t nk[][2] = {{6144, 4096}, {4096, 4096}, {28672, 4096}, {4096, 14336},
                                  {10240, 8192}, {8192, 8192}, {57344, 8192}, {8192, 28672}};
  for (size_t i = 0; i < sizeof nk / sizeof nk[0]; i++) {
    gemm_spec s = {.dtype = TIRX_BF16, .m = 8192, .n = nk[i][0], .k = nk[i][1]};
    tirx_gemm_tiles t = gemm_pick(&s);
    cr_expect(t.block_m == 128 && t.block_n == 256 && t.block_k == 64 && t.stages == 3 &&
                  t.consumers == 2,
              "M=8192 N=%lld: %dx%dx%d, %d stages, %d consumers", (long long)s.n, t.block_m,
              t.block_n, t.block_k, t.stages, t.consumers);
  }
}

/* Decode-like M: 64 rows (one consumer) up to M = 64, else 128 (two); BLOCK_N a multiple of
 * 16 that keeps at least 120 of the 132 SMs busy on the LLaMA shapes (their N are multiples
 * of 128 * 16); stages filling shared memory. */
Test(example_gemm, pick_fills_the_sms_at_decode_m) {
  static const int64_t nk[][2] = {{6144, 4096}, {4096, 4096}, {28672, 4096}, {4096, 14336},
                                  {10240, 8192}, {8192, 8192}, {57344, 8192}, {8192, 28672}};
  static const int64_t ms[] = {1, 16, 64, 128, 256};
  for (size_t a = 0; a < sizeof ms / sizeof ms[0]; a++)
    for (size_t i = 0; i < sizeof nk / sizeof nk[0]; i++) {
      gemm_spec s = {.dtype = TIRX_BF16, .m = ms[a], .n = nk[i][0], .k = nk[i][1]};
      tirx_gemm_tiles t = gemm_pick(&s);
      int64_t tiles = tiles_of(&s, t), waves = (tiles + 131) / 132;
      cr_expect_eq(t.block_m, ms[a] <= 64 ? 64 : 128, "M=%lld: block_m %d", (long long)ms[a],
                   t.block_m);
      cr_expect_eq(t.consumers, t.block_m / 64);
      cr_expect(t.block_n % 16 == 0 && t.block_n >= 16 && t.block_n <= 256, "block_n %d",
                t.block_n);
      /* Split-K fills the SMs where rows of 128 on a long K would take tiles under 48 wide
       * (64 columns then), or rows of 64 tiles 16 wide (128 columns then; gemm_pick). */
      tirx_gemm_plan p = {0};
      cr_assert_eq(tirx_kernels_gemm_plan(NULL, s.m, s.n, s.k, &p), TIRX_OK);
      bool forced = p.path == TIRX_GEMM_PATH_GEMV;
      if (forced) /* M = 1: these tiles serve a forced split-K */
        cr_assert_eq(tirx_kernels_gemm_plan(&(tirx_gemm_options){.path = TIRX_GEMM_PATH_WGMMA_SPLITK},
                                            s.m, s.n, s.k, &p), TIRX_OK);
      int64_t units = tiles * p.splits;
      cr_expect(units >= 120 * waves, "M=%lld N=%lld K=%lld: %dx%d gives %lld tiles x %d splits",
                (long long)s.m, (long long)s.n, (long long)s.k, t.block_m, t.block_n,
                (long long)tiles, p.splits);
      cr_expect(forced || p.splits == 1 || t.block_n == (t.block_m == 128 ? 64 : 128),
                "M=%lld N=%lld: split-K with block_n %d",
                (long long)s.m, (long long)s.n, t.block_n);
      cr_expect(t.stages >= 3 && t.stages <= 16, "%d stages", t.stages);
      cr_expect(smem_of(t) <= 232448, "%d stages of %dx%d need %lld bytes", t.stages, t.block_m,
                t.block_n, (long long)smem_of(t));
      cr_expect(t.stages == 16 || smem_of((tirx_gemm_tiles){t.block_m, t.block_n, t.block_k,
                                                       t.stages + 1, t.consumers}) > 232448,
                "%dx%d: %d stages, one more would fit", t.block_m, t.block_n, t.stages);
    }
}

/* The SM count of the spec is the one filled. */
Test(example_gemm, pick_follows_sms) {
  gemm_spec s = {.dtype = TIRX_BF16, .m = 1, .n = 4096, .k = 4096, .sms = 64};
  tirx_gemm_tiles t = gemm_pick(&s);
  int64_t tiles = tiles_of(&s, t);
  cr_expect(tiles >= 56 && tiles <= 64, "64 SMs: %dx%d gives %lld tiles", t.block_m, t.block_n,
            (long long)tiles);
}

#define PTR(v) ((void *)(uintptr_t)(v))

Test(kernels_gemm, build_and_tiles_check_their_arguments) {
  tirx_kernel *k = PTR(1);
  tirx_gemm_tiles t;
  const char *fn = "tirx_kernels_gemm_build";
  expect_error(tirx_kernels_gemm_build(NULL, TIRX_BF16, 1, 1, 1, NULL), TIRX_E_NULL_ARG,
               "tirx_kernels_gemm_build: out is NULL");
  expect_error(tirx_kernels_gemm_tiles(NULL, 1, 1, 1, NULL), TIRX_E_NULL_ARG,
               "tirx_kernels_gemm_tiles: out is NULL");
  expect_error(tirx_kernels_gemm_build(NULL, TIRX_F32, 1, 1, 1, &k), TIRX_E_INVALID_ARG,
               "tirx_kernels_gemm_build: dtype is f32, expected f16 or bf16");
  cr_assert_null(k);
  expect_error(tirx_kernels_gemm_build(NULL, TIRX_BF16, 1, 0, 1, &k), TIRX_E_INVALID_ARG,
               "tirx_kernels_gemm_build: m, n, k are 1, 0, 1, expected >= 1");
  expect_error(tirx_kernels_gemm_tiles(NULL, 1, 1, -5, &t), TIRX_E_INVALID_ARG,
               "tirx_kernels_gemm_tiles: m, n, k are 1, 1, -5, expected >= 1");
  expect_error(tirx_kernels_gemm_build(&(tirx_gemm_options){.epilogue = (tirx_epilogue)4},
                                       TIRX_BF16, 1, 1, 1, &k),
               TIRX_E_INVALID_ARG,
               "tirx_kernels_gemm_build: opts->epilogue is 4, expected a tirx_epilogue (0 to 3)");
  expect_error(tirx_kernels_gemm_build(&(tirx_gemm_options){.family = "tcgen05"}, TIRX_BF16, 1, 1,
                                       1, &k),
               TIRX_E_INVALID_ARG,
               "tirx_kernels_gemm_build: opts->family is \"tcgen05\", expected NULL, \"wgmma\", "
               "\"mma\" or \"scalar\"");
  expect_error(tirx_kernels_gemm_tiles(&(tirx_gemm_options){.sms = 2000}, 1, 1, 1, &t),
               TIRX_E_INVALID_ARG, "tirx_kernels_gemm_tiles: opts->sms is 2000, expected 0 (132) to 1024");
  expect_error(tirx_kernels_gemm_build(&(tirx_gemm_options){.sms = -1}, TIRX_BF16, 1, 1, 1, &k),
               TIRX_E_INVALID_ARG, "tirx_kernels_gemm_build: opts->sms is -1, expected 0 (132) to 1024");
  (void)fn;
}

static tirx_runtime *no_device(void) { return compile_only_runtime(); }

#define M2(p, dt, r, c) (&(tirx_tensor_arg){PTR(p), dt, 2, (int64_t[]){r, c}, NULL})

Test(kernels_gemm, the_op_checks_its_tensors_before_anything_else) {
  tirx_runtime *rt = no_device();
  const tirx_dtype B = TIRX_BF16;
  const tirx_tensor_arg *a = M2(0x10000, B, 128, 64), *b = M2(0x20000, B, 256, 64);
  const tirx_tensor_arg *c = M2(0x30000, B, 128, 256);
  const tirx_tensor_arg *bias = &(tirx_tensor_arg){PTR(0x40000), B, 1, (int64_t[]){256}, NULL};
  const tirx_gemm_options bias_ep = {.epilogue = TIRX_EPILOGUE_BIAS};
  expect_error(tirx_op_gemm(NULL, NULL, a, b, NULL, c, NULL), TIRX_E_NULL_ARG,
               "tirx_op_gemm: rt is NULL");
  expect_error(tirx_op_gemm(rt, &(tirx_gemm_options){.family = "x"}, a, b, NULL, c, NULL),
               TIRX_E_INVALID_ARG,
               "tirx_op_gemm: opts->family is \"x\", expected NULL, \"wgmma\", \"mma\" or \"scalar\"");
  expect_error(tirx_op_gemm(rt, NULL, NULL, b, NULL, c, NULL), TIRX_E_NULL_ARG,
               "tirx_op_gemm: a is NULL");
  expect_error(tirx_op_gemm(rt, NULL, a, M2(0, B, 256, 64), NULL, c, NULL), TIRX_E_NULL_ARG,
               "tirx_op_gemm: b->data is NULL");
  expect_error(tirx_op_gemm(rt, NULL, a, b, NULL, M2(0x30002, B, 128, 256), NULL),
               TIRX_E_INVALID_ARG, "tirx_op_gemm: c->data 0x30002 is not aligned to 16 bytes");
  expect_error(tirx_op_gemm(rt, NULL, M2(0x10000, TIRX_F32, 128, 64), b, NULL, c, NULL),
               TIRX_E_TYPE, "tirx_op_gemm: a has dtype f32, expected f16 or bf16");
  expect_error(tirx_op_gemm(rt, NULL, a, M2(0x20000, TIRX_F16, 256, 64), NULL, c, NULL),
               TIRX_E_TYPE, "tirx_op_gemm: b has dtype f16, expected bf16");
  expect_error(tirx_op_gemm(rt, NULL, a, M2(0x20000, B, 512, 32), NULL, c, NULL),
               TIRX_E_INVALID_ARG, "tirx_op_gemm: b has shape [512, 32], expected [N, K] = [512, 64]");
  expect_error(tirx_op_gemm(rt, NULL, a, b, NULL, M2(0x30000, B, 128, 255), NULL),
               TIRX_E_INVALID_ARG, "tirx_op_gemm: c has shape [128, 255], expected [M, N] = [128, 256]");
  expect_error(tirx_op_gemm(rt, NULL, M2(0x10000, B, 128, 63), M2(0x20000, B, 256, 63), NULL, c,
                            NULL),
               TIRX_E_INVALID_ARG, "tirx_op_gemm: a has a row stride of 63 elements (126 bytes), "
               "expected a multiple of 16 bytes (TMA): pad its rows");
  expect_error(tirx_op_gemm(rt, NULL, &(tirx_tensor_arg){PTR(0x10000), B, 2, (int64_t[]){128, 64},
                                                         (int64_t[]){1, 128}},
                            b, NULL, c, NULL),
               TIRX_E_INVALID_ARG, "tirx_op_gemm: a has strides [1, 128], expected an innermost "
               "stride of 1");
  expect_error(tirx_op_gemm(rt, NULL, &(tirx_tensor_arg){PTR(0x10000), B, 2, (int64_t[]){128, 64},
                                                         (int64_t[]){32, 1}},
                            b, NULL, c, NULL),
               TIRX_E_INVALID_ARG, "tirx_op_gemm: a has row stride 32, expected >= 64 (its rows "
               "would overlap)");
  expect_error(tirx_op_gemm(rt, NULL, a, b, bias, c, NULL), TIRX_E_INVALID_ARG,
               "tirx_op_gemm: bias is given, but opts->epilogue is TIRX_EPILOGUE_NONE");
  expect_error(tirx_op_gemm(rt, &bias_ep, a, b, NULL, c, NULL), TIRX_E_NULL_ARG,
               "tirx_op_gemm: bias is NULL, expected [N] for epilogue 1");
  expect_error(tirx_op_gemm(rt, &bias_ep, a, b,
                            &(tirx_tensor_arg){PTR(0x40000), B, 1, (int64_t[]){255}, NULL}, c, NULL),
               TIRX_E_INVALID_ARG, "tirx_op_gemm: bias has shape [255], expected [W] = [256]");
  cr_assert_eq(tirx_kernels_cached(), 0, "a bad call built a kernel");
  tirx_runtime_destroy(rt);
}

/* Found by tools/fuzz_ops under UBSan: a row stride near INT64_MAX overflowed its byte count
 * (the message said -2 bytes), and a huge stride multiple of 8 on the gemv path overflowed the
 * flat lengths (M - 1) * lda + K, reaching the launch. Both are refused, with nothing built. */
Test(kernels_gemm, huge_row_strides_are_refused_without_overflow) {
  tirx_runtime *rt = no_device();
  const tirx_dtype B = TIRX_BF16;
  const tirx_tensor_arg *b = M2(0x20000, B, 256, 64), *c = M2(0x30000, B, 8, 256);
  expect_error(tirx_op_gemm(rt, NULL, &(tirx_tensor_arg){PTR(0x10000), B, 2, (int64_t[]){8, 64},
                                                         (int64_t[]){INT64_MAX, 1}},
                            b, NULL, c, NULL),
               TIRX_E_INVALID_ARG, "tirx_op_gemm: a has a row stride of 9223372036854775807 "
               "elements (18446744073709551614 bytes), expected a multiple of 16 bytes (TMA): pad "
               "its rows");
  expect_error(tirx_op_gemm(rt, NULL, &(tirx_tensor_arg){PTR(0x10000), B, 2, (int64_t[]){8, 64},
                                                         (int64_t[]){(int64_t)1 << 62, 1}},
                            b, NULL, c, NULL),
               TIRX_E_INVALID_ARG, "tirx_op_gemm: a has row stride 4611686018427387904: its 8 "
               "rows span more than 2^63 - 1 bytes, expected a smaller stride");
  expect_error(tirx_op_gemm(rt, NULL, M2(0x10000, B, 2, 64), b, NULL,
                            &(tirx_tensor_arg){PTR(0x30000), B, 2, (int64_t[]){2, 256},
                                               (int64_t[]){(int64_t)1 << 62, 1}},
                            NULL),
               TIRX_E_INVALID_ARG, "tirx_op_gemm: c has row stride 4611686018427387904: its 2 "
               "rows span more than 2^63 - 1 bytes, expected a smaller stride");
  cr_assert_eq(tirx_kernels_cached(), 0, "a bad call built a kernel");
  tirx_runtime_destroy(rt);
}

/* Found by tools/fuzz_ops under UBSan: M, N or K near INT64_MAX overflowed the tile arithmetic
 * of the plan (M + 127 in gemm_pick, K + 63 in the split count) and the plan came back TIRX_OK.
 * The kernels take M, N, K as i32: the plan, tiles and build refuse more than 2^31 - 1. */
Test(kernels_gemm, plan_tiles_and_build_refuse_extents_past_int32) {
  tirx_gemm_tiles t;
  tirx_gemm_plan p = {0};
  tirx_kernel *k = NULL;
  expect_error(tirx_kernels_gemm_plan(NULL, INT64_MAX, 256, 4096, &p), TIRX_E_INVALID_ARG,
               "tirx_kernels_gemm_plan: m, n, k are 9223372036854775807, 256, 4096, expected at "
               "most 2^31 - 1");
  expect_error(tirx_kernels_gemm_plan(NULL, 64, 1263, INT64_MAX, &p), TIRX_E_INVALID_ARG,
               "tirx_kernels_gemm_plan: m, n, k are 64, 1263, 9223372036854775807, expected at "
               "most 2^31 - 1");
  expect_error(tirx_kernels_gemm_tiles(NULL, 64, (int64_t)INT32_MAX + 1, 64, &t),
               TIRX_E_INVALID_ARG, "tirx_kernels_gemm_tiles: m, n, k are 64, 2147483648, 64, "
               "expected at most 2^31 - 1");
  expect_error(tirx_kernels_gemm_build(NULL, TIRX_BF16, INT64_MAX, 64, 64, &k),
               TIRX_E_INVALID_ARG, "tirx_kernels_gemm_build: m, n, k are 9223372036854775807, "
               "64, 64, expected at most 2^31 - 1");
  cr_assert_null(k);
  /* 2^31 - 1 itself is a shape */
  cr_assert_eq(tirx_kernels_gemm_plan(NULL, INT32_MAX, INT32_MAX, INT32_MAX, &p), TIRX_OK, "%s",
               tirx_last_error());
}

/* Without a device the op checks, builds (one kernel per family, dtype, epilogue and tile
 * shape) and returns tirx_launch's TIRX_E_NO_DEVICE. */
Test(kernels_gemm, the_op_without_a_device_returns_no_device, .timeout = 120) {
  tirx_runtime *rt = no_device();
  char want[1024];
  snprintf(want, sizeof want, "tirx_op_gemm: tirx_launch: no CUDA device: %s",
           tirx_runtime_device_error(rt));
  const tirx_dtype B = TIRX_BF16;
  const tirx_tensor_arg *a = M2(0x10000, B, 8192, 64), *b = M2(0x20000, B, 4096, 64);
  const tirx_tensor_arg *c = M2(0x30000, B, 8192, 4096);
  const tirx_tensor_arg *bias = M2(0x40000, B, 1, 4096);
  expect_error(tirx_op_gemm(rt, NULL, a, b, NULL, c, NULL), TIRX_E_NO_DEVICE, want);
  cr_assert_eq(tirx_kernels_cached(), 1);
  /* Another M with the same tiles: the same kernel. */
  expect_error(tirx_op_gemm(rt, NULL, M2(0x10000, B, 8000, 64), b, NULL, M2(0x30000, B, 8000, 4096),
                            NULL), TIRX_E_NO_DEVICE, want);
  cr_assert_eq(tirx_kernels_cached(), 1);
  /* Decode-like M on the wgmma path (forced: M = 1 takes the gemv path by default,
   * test_gemm_paths.c): other tiles, another kernel; an epilogue, another; a family, another. */
  expect_error(tirx_op_gemm(rt, &(tirx_gemm_options){.path = TIRX_GEMM_PATH_WGMMA},
                            M2(0x10000, B, 1, 64), b, NULL, M2(0x30000, B, 1, 4096), NULL),
               TIRX_E_NO_DEVICE, want);
  expect_error(tirx_op_gemm(rt, &(tirx_gemm_options){.epilogue = TIRX_EPILOGUE_BIAS_SILU}, a, b,
                            bias, c, NULL), TIRX_E_NO_DEVICE, want);
  expect_error(tirx_op_gemm(rt, &(tirx_gemm_options){.family = "mma"}, a, b, NULL, c, NULL),
               TIRX_E_NO_DEVICE, want);
  cr_assert_eq(tirx_kernels_cached(), 4);
  tirx_runtime_destroy(rt);
}

/* Builds spec, checks its report has every string of want (NULL-terminated), compiles it and
 * checks its PTX has ptx_want. */
static void build_and_compile(tirx_runtime *rt, gemm_spec s, const char *const *want,
                              const char *ptx_want) {
  char err[4096] = "";
  tirx_kernel *k = gemm_build(&s, err, sizeof err);
  cr_assert_not_null(k, "%s", err);
  for (int i = 0; want[i]; i++) assert_has(tirx_kernel_dispatch_report(k), want[i]);
  tirx_compiled *c = NULL;
  cr_assert_eq(tirx_compile(rt, k, "sm_90a", &c), TIRX_OK, "%s", tirx_last_error());
  assert_has(tirx_compiled_ptx(c), ptx_want);
  tirx_compiled_destroy(c);
  tirx_kernel_release(k);
}

/* A decode variant (64 rows, one consumer, a 32-byte swizzled C tile for BLOCK_N 48) and the
 * fused epilogues: the bias row is added to the accumulators on the consumers' registers. */
Test(example_gemm, decode_and_epilogues_compile, .timeout = 300) {
  tirx_runtime *rt = compile_only_runtime();
  gemm_spec s = {.dtype = TIRX_BF16, .m = 1, .n = 6144, .k = 4096};
  cr_assert_eq(gemm_pick(&s).block_n, 48);
  build_and_compile(rt, s,
                    (const char *[]){"gemm_async.wgmma m=64,n=48,k=16", "copy.stmatrix", NULL},
                    "wgmma.mma_async.sync.aligned.m64n48k16.f32.bf16.bf16");
  s = (gemm_spec){.dtype = TIRX_F16, .m = 8192, .n = 8192, .k = 8192, .epilogue = TIRX_EPILOGUE_BIAS_SILU};
  build_and_compile(rt, s,
                    (const char *[]){"binary(arch=sm_90, roles=local,shared->local, team=warpgroup)",
                                     "unary(arch=sm_90, roles=local->local, team=warpgroup)",
                                     "gemm_async.wgmma m=64,n=256,k=16", NULL},
                    "ex2.approx");
  s = (gemm_spec){.dtype = TIRX_BF16, .m = 64, .n = 1000, .k = 300, .epilogue = TIRX_EPILOGUE_BIAS_GELU};
  build_and_compile(rt, s, (const char *[]){"unary(", NULL}, "wgmma.mma_async");
  tirx_runtime_destroy(rt);
}

/* Families mma and scalar through gemm_build, with and without an epilogue. */
Test(example_gemm, forced_families_compile, .timeout = 300) {
  tirx_runtime *rt = compile_only_runtime();
  build_and_compile(rt, (gemm_spec){.dtype = TIRX_BF16, .m = 129, .n = 130, .k = 65, .family = "mma"},
                    (const char *[]){"gemm.mma m=16,n=8,k=16 (forced)", NULL},
                    "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32");
  build_and_compile(rt, (gemm_spec){.dtype = TIRX_F16, .m = 1, .n = 77, .k = 40, .family = "scalar",
                                    .epilogue = TIRX_EPILOGUE_BIAS},
                    (const char *[]){"gemm.scalar vec=1 (forced)", "binary(", NULL}, "fma.rn.f32");
  tirx_runtime_destroy(rt);
}

/* The launch arguments as the GPU test and bench/gemm pass them (B as its (K, N) view, odd
 * leading dimensions padded to 8 elements, bias [1, N]) pass the launch checks: prepared on a
 * compile-only runtime (the pointers are checked, never read). */
Test(example_gemm, launch_arguments_pass_the_checks, .timeout = 300) {
  static const gemm_spec specs[] = {
      {.dtype = TIRX_BF16, .m = 129, .n = 130, .k = 65},
      {.dtype = TIRX_F16, .m = 1, .n = 4096, .k = 4096, .epilogue = TIRX_EPILOGUE_BIAS_GELU},
      {.dtype = TIRX_BF16, .m = 300, .n = 77, .k = 40, .family = "mma", .epilogue = TIRX_EPILOGUE_BIAS},
  };
  tirx_runtime *rt = compile_only_runtime();
  for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++) {
    const gemm_spec *s = &specs[i];
    char err[4096] = "";
    tirx_kernel *k = gemm_build(s, err, sizeof err);
    cr_assert_not_null(k, "%s", err);
    int64_t m = s->m, n = s->n, kk = s->k, lk = (kk + 7) / 8 * 8, ln = (n + 7) / 8 * 8;
    void *p = (void *)(uintptr_t)4096;
    tirx_arg args[7] = {tirx_arg_i32((int32_t)m), tirx_arg_i32((int32_t)n), tirx_arg_i32((int32_t)kk),
                        tirx_arg_tensor(p, s->dtype, 2, (int64_t[]){m, kk}, (int64_t[]){lk, 1}),
                        tirx_arg_tensor(p, s->dtype, 2, (int64_t[]){kk, n}, (int64_t[]){1, lk}),
                        tirx_arg_tensor(p, s->dtype, 2, (int64_t[]){m, n}, (int64_t[]){ln, 1}),
                        tirx_arg_tensor(p, s->dtype, 2, (int64_t[]){1, n}, NULL)};
    tirx_future *f = NULL;
    cr_assert_eq(tirx_prepare_async(rt, k, args, s->epilogue == TIRX_EPILOGUE_NONE ? 6 : 7, &f), TIRX_OK,
                 "%s: %s", tirx_kernel_name(k), tirx_last_error());
    cr_assert_eq(tirx_future_wait(f, -1), TIRX_OK, "%s", tirx_last_error());
    tirx_future_release(f);
    tirx_kernel_release(k);
  }
  tirx_runtime_destroy(rt);
}
