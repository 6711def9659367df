/* The RoPE kernel of src/kernels/rope.c on the CPU: every documented error of the build and
 * of tirx_op_rope (status and exact message), the pairs each style rotates in the generated
 * code, and an NVRTC compile of every variant the GPU suite runs (tests/gpu/test_gpu.c,
 * rope_*). */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "../helpers.h"

#define PTR(v) ((void *)(uintptr_t)(v))

static void assert_has(const char *text, const char *want) {
  cr_assert_not_null(strstr(text, want), "no '%s' in:\n%s", want, text);
}

static tirx_runtime *no_device(void) {
  tirx_runtime *rt = NULL;
  tirx_runtime_options o = {.compile_only = true, .cache_disabled = true};
  cr_assert_eq(tirx_runtime_create(&o, &rt), TIRX_OK, "%s", tirx_last_error());
  return rt;
}

Test(kernels_rope, build_checks_its_arguments) {
  tirx_kernel *k = PTR(1);
  const tirx_dtype B = TIRX_BF16, F = TIRX_F32;
  expect_error(tirx_kernels_rope_build(NULL, B, F, 128, 32, 8, NULL), TIRX_E_NULL_ARG,
               "tirx_kernels_rope_build: out is NULL");
  expect_error(tirx_kernels_rope_build(NULL, TIRX_F32, F, 128, 32, 8, &k), TIRX_E_INVALID_ARG,
               "tirx_kernels_rope_build: dtype is f32, expected f16 or bf16");
  cr_assert_null(k);
  expect_error(tirx_kernels_rope_build(NULL, B, TIRX_F16, 128, 32, 8, &k), TIRX_E_INVALID_ARG,
               "tirx_kernels_rope_build: cache_dtype is f16, expected f32 or bf16");
  expect_error(tirx_kernels_rope_build(NULL, B, F, 0, 32, 8, &k), TIRX_E_INVALID_ARG,
               "tirx_kernels_rope_build: d is 0, expected 1 to 1024");
  expect_error(tirx_kernels_rope_build(NULL, B, F, 2048, 32, 8, &k), TIRX_E_INVALID_ARG,
               "tirx_kernels_rope_build: d is 2048, expected 1 to 1024");
  expect_error(tirx_kernels_rope_build(NULL, B, F, 128, 0, 8, &k), TIRX_E_INVALID_ARG,
               "tirx_kernels_rope_build: h is 0, expected 1 to 1024");
  expect_error(tirx_kernels_rope_build(NULL, B, F, 128, 32, -1, &k), TIRX_E_INVALID_ARG,
               "tirx_kernels_rope_build: h_kv is -1, expected 0 (no k) to 1024");
  expect_error(tirx_kernels_rope_build(&(tirx_rope_options){.style = 2}, B, F, 128, 32, 8, &k),
               TIRX_E_INVALID_ARG, "tirx_kernels_rope_build: opts->style is 2, expected "
               "TIRX_ROPE_NEOX (0) or TIRX_ROPE_GPTJ (1)");
  static const int bad_rot[] = {-2, 1, 63, 130};
  for (int i = 0; i < 4; i++) {
    char want[256];
    snprintf(want, sizeof want, "tirx_kernels_rope_build: opts->rot_dim is %d, expected 0 (d) or "
             "an even number in 2..d = 128", bad_rot[i]);
    expect_error(tirx_kernels_rope_build(&(tirx_rope_options){.rot_dim = bad_rot[i]}, B, F, 128,
                                         32, 8, &k), TIRX_E_INVALID_ARG, want);
    cr_assert_null(k);
  }
  expect_error(tirx_kernels_rope_build(NULL, B, F, 1, 1, 1, &k), TIRX_E_INVALID_ARG,
               "tirx_kernels_rope_build: opts->rot_dim is 0, expected 0 (d) or an even number in "
               "2..d = 1");
}

/* The pairs: neox (i, i + R/2), gptj (2i, 2i + 1); R/2 pairs a head; k after q's heads. */
Test(kernels_rope, each_style_rotates_its_pairs) {
  tirx_kernel *k = NULL;
  cr_assert_eq(tirx_kernels_rope_build(NULL, TIRX_BF16, TIRX_F32, 128, 32, 8, &k), TIRX_OK);
  const char *src = tirx_kernel_source(k);
  /* 64 pairs: a thread keeps its pair (and cos, sin) over every other head of 40 */
  assert_has(src, "const int i = ((int)threadIdx.x % 64);");
  assert_has(src, "for (int head = ((int)threadIdx.x / 64); head < 40; head += 2) {");
  assert_has(src, "const int i1 = i;");
  assert_has(src, "const int i2 = (i1 + 64);");
  assert_has(src, "if ((head < 32)) {");
  assert_has(src, "(long long)(head - 32) * k_stride1");
  assert_has(src, "if (((p >= 0) && (p < max_pos))) {");
  tirx_kernel_release(k);
  tirx_rope_options o = {.style = TIRX_ROPE_GPTJ, .rot_dim = 64};
  cr_assert_eq(tirx_kernels_rope_build(&o, TIRX_F16, TIRX_F16, 128, 16, 0, &k), TIRX_OK);
  src = tirx_kernel_source(k);
  assert_has(src, "head < 16; head += 4) {"); /* 16 heads x 32 pairs, no k */
  assert_has(src, "const int i1 = (i * 2);");
  assert_has(src, "const int i2 = (i1 + 1);");
  assert_has(src, "tirx_f16_to_f32(cos_1[");
  cr_assert_null(strstr(src, "k_stride"));
  tirx_kernel_release(k);
  /* 40 pairs (D 80) do not divide 128 threads: the (head, pair) items round-robin */
  cr_assert_eq(tirx_kernels_rope_build(NULL, TIRX_BF16, TIRX_BF16, 80, 5, 1, &k), TIRX_OK);
  src = tirx_kernel_source(k);
  assert_has(src, "for (int it = (int)threadIdx.x; it < 240; it += 128) {");
  assert_has(src, "const int head = (it / 40);");
  assert_has(src, "const int i2 = (i1 + 40);");
  tirx_kernel_release(k);
}

#define T3(p, dt, a, b, c) (&(tirx_tensor_arg){PTR(p), dt, 3, (int64_t[]){a, b, c}, NULL})
#define T2(p, dt, r, c) (&(tirx_tensor_arg){PTR(p), dt, 2, (int64_t[]){r, c}, NULL})
#define T1(p, dt, n) (&(tirx_tensor_arg){PTR(p), dt, 1, (int64_t[]){n}, NULL})

Test(kernels_rope, op_checks_its_tensors_before_anything_else) {
  tirx_runtime *rt = no_device();
  const tirx_dtype B = TIRX_BF16, F = TIRX_F32;
  const tirx_tensor_arg *q = T3(0x10000, B, 16, 32, 128), *k = T3(0x20000, B, 16, 8, 128);
  const tirx_tensor_arg *pos = T1(0x30000, TIRX_I32, 16);
  const tirx_tensor_arg *c = T2(0x40000, F, 4096, 64), *s = T2(0x50000, F, 4096, 64);
  expect_error(tirx_op_rope(NULL, NULL, q, k, pos, c, s, NULL), TIRX_E_NULL_ARG,
               "tirx_op_rope: rt is NULL");
  expect_error(tirx_op_rope(rt, NULL, NULL, k, pos, c, s, NULL), TIRX_E_NULL_ARG,
               "tirx_op_rope: q is NULL");
  expect_error(tirx_op_rope(rt, NULL, T3(0x10004, B, 16, 32, 128), k, pos, c, s, NULL),
               TIRX_E_INVALID_ARG, "tirx_op_rope: q->data 0x10004 is not aligned to 16 bytes");
  expect_error(tirx_op_rope(rt, NULL, T2(0x10000, B, 16, 4096), k, pos, c, s, NULL),
               TIRX_E_INVALID_ARG, "tirx_op_rope: q has rank 2, expected 3");
  expect_error(tirx_op_rope(rt, NULL, T3(0x10000, F, 16, 32, 128), k, pos, c, s, NULL),
               TIRX_E_TYPE, "tirx_op_rope: q has dtype f32, expected f16 or bf16");
  expect_error(tirx_op_rope(rt, NULL, T3(0x10000, B, 16, 32, 2048), k, pos, c, s, NULL),
               TIRX_E_INVALID_ARG, "tirx_op_rope: q has shape [16, 32, 2048], expected at most "
               "[2^31 - 1, 1024, 1024]");
  expect_error(tirx_op_rope(rt, NULL, &(tirx_tensor_arg){PTR(0x10000), B, 3, (int64_t[]){16, 32, 128},
                                                         (int64_t[]){4096, 128, 2}},
                            k, pos, c, s, NULL),
               TIRX_E_INVALID_ARG, "tirx_op_rope: q has strides [4096, 128, 2], expected [s0, s1, "
               "1] with s1 >= D and s0 >= heads * s1 (heads that do not overlap)");
  expect_error(tirx_op_rope(rt, NULL, &(tirx_tensor_arg){PTR(0x10000), B, 3, (int64_t[]){16, 32, 128},
                                                         (int64_t[]){4096, 64, 1}},
                            k, pos, c, s, NULL),
               TIRX_E_INVALID_ARG, "tirx_op_rope: q has strides [4096, 64, 1], expected [s0, s1, "
               "1] with s1 >= D and s0 >= heads * s1 (heads that do not overlap)");
  expect_error(tirx_op_rope(rt, NULL, &(tirx_tensor_arg){PTR(0x10000), B, 3, (int64_t[]){16, 32, 128},
                                                         (int64_t[]){2048, 128, 1}},
                            k, pos, c, s, NULL),
               TIRX_E_INVALID_ARG, "tirx_op_rope: q has strides [2048, 128, 1], expected [s0, s1, "
               "1] with s1 >= D and s0 >= heads * s1 (heads that do not overlap)");
  expect_error(tirx_op_rope(rt, NULL, &(tirx_tensor_arg){PTR(0x10000), B, 3, (int64_t[]){16, 32, 128},
                                                         (int64_t[]){INT64_MAX, INT64_MAX / 4, 1}},
                            k, pos, c, s, NULL),
               TIRX_E_INVALID_ARG, "tirx_op_rope: q has strides [9223372036854775807, "
               "2305843009213693951, 1], expected [s0, s1, 1] with s1 >= D and s0 >= heads * s1 "
               "(heads that do not overlap)");
  expect_error(tirx_op_rope(rt, NULL, &(tirx_tensor_arg){PTR(0x10000), B, 3, (int64_t[]){16, 32, 128},
                                                         (int64_t[]){-4096, 128, 1}},
                            k, pos, c, s, NULL),
               TIRX_E_INVALID_ARG, "tirx_op_rope: q has strides [-4096, 128, 1], expected [s0, s1, "
               "1] with s1 >= D and s0 >= heads * s1 (heads that do not overlap)");
  expect_error(tirx_op_rope(rt, NULL, q, T3(0x20000, B, 15, 8, 128), pos, c, s, NULL),
               TIRX_E_INVALID_ARG, "tirx_op_rope: k has shape [15, 8, 128], expected [T, H_kv, D] "
               "= [16, H_kv, 128]");
  expect_error(tirx_op_rope(rt, NULL, q, T3(0x20000, B, 16, 8, 64), pos, c, s, NULL),
               TIRX_E_INVALID_ARG, "tirx_op_rope: k has shape [16, 8, 64], expected [T, H_kv, D] "
               "= [16, H_kv, 128]");
  expect_error(tirx_op_rope(rt, NULL, q, T3(0x20000, TIRX_F16, 16, 8, 128), pos, c, s, NULL),
               TIRX_E_TYPE, "tirx_op_rope: k has dtype f16, expected bf16");
  expect_error(tirx_op_rope(rt, &(tirx_rope_options){.rot_dim = 129}, q, k, pos, c, s, NULL),
               TIRX_E_INVALID_ARG, "tirx_op_rope: opts->rot_dim is 129, expected 0 (d) or an even "
               "number in 2..d = 128");
  expect_error(tirx_op_rope(rt, NULL, q, k, NULL, c, s, NULL), TIRX_E_NULL_ARG,
               "tirx_op_rope: pos is NULL");
  expect_error(tirx_op_rope(rt, NULL, q, k, T1(0x30000, TIRX_I64, 16), c, s, NULL), TIRX_E_TYPE,
               "tirx_op_rope: pos has dtype i64, expected i32");
  expect_error(tirx_op_rope(rt, NULL, q, k, T1(0x30000, TIRX_I32, 17), c, s, NULL),
               TIRX_E_INVALID_ARG, "tirx_op_rope: pos has shape [17], expected [T] = [16]");
  expect_error(tirx_op_rope(rt, NULL, q, k, T3(0x30000, TIRX_I32, 16, 1, 1), c, s, NULL),
               TIRX_E_INVALID_ARG, "tirx_op_rope: pos has rank 3, expected 1");
  expect_error(tirx_op_rope(rt, NULL, q, k, pos, NULL, s, NULL), TIRX_E_NULL_ARG,
               "tirx_op_rope: cos is NULL");
  expect_error(tirx_op_rope(rt, NULL, q, k, pos, T2(0x40000, TIRX_F16, 4096, 64), s, NULL),
               TIRX_E_TYPE, "tirx_op_rope: cos has dtype f16, expected f32 or bf16");
  expect_error(tirx_op_rope(rt, NULL, q, k, pos, T2(0x40000, F, 4096, 128), s, NULL),
               TIRX_E_INVALID_ARG, "tirx_op_rope: cos has shape [4096, 128], expected [max_pos, "
               "R/2] = [4096, 64]");
  expect_error(tirx_op_rope(rt, &(tirx_rope_options){.rot_dim = 64}, q, k, pos, c, s, NULL),
               TIRX_E_INVALID_ARG, "tirx_op_rope: cos has shape [4096, 64], expected [max_pos, "
               "R/2] = [4096, 32]");
  expect_error(tirx_op_rope(rt, NULL, q, k, pos, c, NULL, NULL), TIRX_E_NULL_ARG,
               "tirx_op_rope: sin is NULL");
  expect_error(tirx_op_rope(rt, NULL, q, k, pos, c, T2(0x50000, F, 2048, 64), NULL),
               TIRX_E_INVALID_ARG, "tirx_op_rope: sin has shape [2048, 64], expected [max_pos, "
               "R/2] (as cos) = [4096, 64]");
  expect_error(tirx_op_rope(rt, NULL, q, k, pos, c, T2(0x50000, B, 4096, 64), NULL), TIRX_E_TYPE,
               "tirx_op_rope: sin has dtype bf16, expected f32");
  cr_assert_eq(tirx_kernels_cached(), 0, "a bad call built a kernel");
  char want[1024];
  snprintf(want, sizeof want, "tirx_op_rope: tirx_launch: no CUDA device: %s",
           tirx_runtime_device_error(rt));
  expect_error(tirx_op_rope(rt, NULL, q, k, pos, c, s, NULL), TIRX_E_NO_DEVICE, want);
  /* a q slice of a fused qkv row ([T, (32 + 2 * 8) * 128]) with k beside it, and no k */
  const tirx_tensor_arg *qs = &(tirx_tensor_arg){PTR(0x10000), B, 3, (int64_t[]){16, 32, 128},
                                                 (int64_t[]){6144, 128, 1}};
  const tirx_tensor_arg *ks = &(tirx_tensor_arg){PTR(0x12000), B, 3, (int64_t[]){16, 8, 128},
                                                 (int64_t[]){6144, 128, 1}};
  expect_error(tirx_op_rope(rt, NULL, qs, ks, pos, c, s, NULL), TIRX_E_NO_DEVICE, want);
  cr_assert_eq(tirx_kernels_cached(), 1); /* the same kernel: strides are launch arguments */
  expect_error(tirx_op_rope(rt, NULL, qs, NULL, pos, c, s, NULL), TIRX_E_NO_DEVICE, want);
  cr_assert_eq(tirx_kernels_cached(), 2);
  tirx_kernels_clear();
  tirx_runtime_destroy(rt);
}

/* Every variant of the GPU suite's rope tests compiles for sm_90a without local memory. */
Test(kernels_rope, the_gpu_suites_variants_compile, .timeout = 300) {
  tirx_runtime *rt = no_device();
  static const struct { tirx_dtype dt, cdt; int d, h, h_kv, rot; } cases[] = {
      {TIRX_BF16, TIRX_F32, 128, 32, 8, 0},  {TIRX_BF16, TIRX_F32, 128, 8, 8, 64},
      {TIRX_F16, TIRX_F32, 64, 12, 4, 32},   {TIRX_BF16, TIRX_BF16, 80, 5, 1, 0},
      {TIRX_F16, TIRX_F16, 128, 4, 0, 96},   {TIRX_BF16, TIRX_F32, 2, 3, 1, 0},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    for (int style = 0; style < 2; style++) {
      tirx_rope_options o = {.style = (tirx_rope_style)style, .rot_dim = cases[i].rot};
      tirx_kernel *k = NULL;
      cr_assert_eq(tirx_kernels_rope_build(&o, cases[i].dt, cases[i].cdt, cases[i].d, cases[i].h,
                                           cases[i].h_kv, &k), TIRX_OK, "%s", tirx_last_error());
      tirx_compiled *c = NULL;
      cr_assert_eq(tirx_compile(rt, k, "sm_90a", &c), TIRX_OK, "%s", tirx_last_error());
      cr_assert_null(strstr(tirx_compiled_ptx(c), ".local"), "rope uses local memory");
      tirx_compiled_destroy(c);
      tirx_kernel_release(k);
    }
  tirx_runtime_destroy(rt);
}
