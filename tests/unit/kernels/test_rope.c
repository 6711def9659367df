/* The RoPE kernel of src/kernels/rope.c on the CPU: every documented error of the build and
 * of tirx_op_rope (status and exact message), the pairs each style rotates in the generated
 * code, and an NVRTC compile of every variant the GPU suite runs (tests/gpu/test_gpu.c,
 * rope_*). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
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
  expect_error(tirx_kernels_rope_build(&(tirx_rope_options){.size = sizeof(tirx_rope_options),
                                                            .k_strides = {6144, -128}},
                                       B, F, 128, 32, 8, &k),
               TIRX_E_INVALID_ARG, "tirx_kernels_rope_build: opts->k_strides is [6144, -128], "
               "expected [0, 0] (passed at launch) or two positive strides");
  cr_assert_null(k);
  expect_error(tirx_kernels_rope_build(NULL, B, F, 1, 1, 1, &k), TIRX_E_INVALID_ARG,
               "tirx_kernels_rope_build: opts->rot_dim is 0, expected 0 (d) or an even number in "
               "2..d = 1");
}

/* The pairs: neox (i, i + R/2), gptj (2i, 2i + 1); R/2 pairs a head; k after q's heads. Where
 * R/2 is a multiple of 8, a thread rotates a chunk of 8 pairs (below); else one pair at a time,
 * as here. */
Test(kernels_rope, each_style_rotates_its_pairs) {
  tirx_kernel *k = NULL;
  /* R 20 of D 128: 10 pairs a head, 16 heads, no k */
  tirx_rope_options o = {.style = TIRX_ROPE_GPTJ, .rot_dim = 20};
  cr_assert_eq(tirx_kernels_rope_build(&o, TIRX_F16, TIRX_F16, 128, 16, 0, &k), TIRX_OK);
  const char *src = tirx_kernel_source(k);
  /* 10 pairs do not divide 128 threads: the (head, pair) items round-robin */
  assert_has(src, "for (int it = (int)threadIdx.x; it < 160; it += 128) {");
  assert_has(src, "const int head = (it / 10);");
  assert_has(src, "const int i1 = (i * 2);");
  assert_has(src, "const int i2 = (i1 + 1);");
  assert_has(src, "tirx_f16_to_f32(cos_1[");
  cr_assert_null(strstr(src, "k_stride"));
  tirx_kernel_release(k);
  /* R/2 = 2 divides 128: a thread keeps one pair (and its cos, sin) over heads */
  o = (tirx_rope_options){.rot_dim = 4};
  cr_assert_eq(tirx_kernels_rope_build(&o, TIRX_BF16, TIRX_F32, 128, 32, 8, &k), TIRX_OK);
  src = tirx_kernel_source(k);
  assert_has(src, "const int i = ((int)threadIdx.x % 2);");
  assert_has(src, "for (int head = ((int)threadIdx.x / 2); head < 40; head += 64) {");
  assert_has(src, "const int i1 = i;");
  assert_has(src, "const int i2 = (i1 + 2);");
  assert_has(src, "if ((head < 32)) {");
  assert_has(src, "(long long)(head - 32) * k_stride1");
  assert_has(src, "if (((p >= 0) && (p < max_pos))) {");
  tirx_kernel_release(k);
}

/* R/2 a multiple of 8: a thread rotates chunk c of a head, pairs 8c .. 8c + 7, one chunk per
 * thread (CTA: the token's chunks rounded up to a warp, at most 512 threads looping). */
Test(kernels_rope, a_thread_rotates_eight_pairs) {
  tirx_kernel *k = NULL;
  /* 40 heads x 8 chunks: 320 threads, one chunk each */
  cr_assert_eq(tirx_kernels_rope_build(NULL, TIRX_BF16, TIRX_F32, 128, 32, 8, &k), TIRX_OK);
  const char *src = tirx_kernel_source(k);
  assert_has(src, "__launch_bounds__(320)");
  assert_has(src, "const int head = ((int)threadIdx.x / 8);");
  assert_has(src, "const int c = ((int)threadIdx.x % 8);");
  assert_has(src, "if ((head < 32)) {");
  /* neox: x[8c ..] and x[R/2 + 8c ..], cos and sin [p, 8c ..] */
  assert_has(src, "q[(long long)t * q_stride0 + (long long)head * q_stride1 + (long long)((c * 8) + i)]");
  assert_has(src, "q[(long long)t * q_stride0 + (long long)head * q_stride1 + (long long)(((c * 8) + 64) + i)]");
  assert_has(src, "(long long)(head - 32) * k_stride1");
  assert_has(src, "&cos_1[(long long)p * 64LL + (long long)((c * 8) + (i * 4))]");
  assert_has(src, "xa[7] = tirx_bf16_from_f32(((a_7 * c_8) - (z_7 * s_7)));");
  assert_has(src, "xb[7] = tirx_bf16_from_f32(((z_7 * c_8) + (a_7 * s_7)));");
  tirx_kernel_release(k);
  /* gptj: the same runs x[8c .. 8c + 8) and x[R/2 + 8c ..] as neox, pairs adjacent within
   * each (run 1 pairs 4c .. 4c + 3, run 2 pairs R/4 + 4c ..), cos and sin [p, 4c .. 4c + 4)
   * and [p, R/4 + 4c ..] (R = 80); 30 chunks: a warp, 2 threads idle */
  tirx_rope_options o = {.style = TIRX_ROPE_GPTJ};
  cr_assert_eq(tirx_kernels_rope_build(&o, TIRX_BF16, TIRX_BF16, 80, 5, 1, &k), TIRX_OK);
  src = tirx_kernel_source(k);
  assert_has(src, "__launch_bounds__(32)");
  assert_has(src, "if (((int)threadIdx.x < 30)) {");
  assert_has(src, "q[(long long)t * q_stride0 + (long long)head * q_stride1 + (long long)((c * 8) + i)]");
  assert_has(src, "q[(long long)t * q_stride0 + (long long)head * q_stride1 + (long long)(((c * 8) + 40) + i)]");
  cr_assert_null(strstr(src, "(c * 16)"));
  assert_has(src, "&cos_1[(long long)p * 40LL + (long long)((c * 4) + (i * 4))]");
  assert_has(src, "&cos_1[(long long)p * 40LL + (long long)(((c * 4) + 20) + (i * 4))]");
  assert_has(src, "&sin_1[(long long)p * 40LL + (long long)(((c * 4) + 20) + (i * 4))]");
  assert_has(src, "const float c_5 = tirx_bf16_to_f32(cl[4]);"); /* pair R/4 + 4c */
  assert_has(src, "const float a_3 = tirx_bf16_to_f32(xa[6]);");  /* pair 4c + 3 */
  assert_has(src, "const float z_3 = tirx_bf16_to_f32(xa[7]);");
  assert_has(src, "const float a_4 = tirx_bf16_to_f32(xb[0]);");  /* pair R/4 + 4c */
  assert_has(src, "const float z_4 = tirx_bf16_to_f32(xb[1]);");
  assert_has(src, "xb[7] = tirx_bf16_from_f32(((z_7 * c_8) + (a_7 * s_7)));"); /* pair R/4 + 4c + 3 */
  tirx_kernel_release(k);
  /* 72 heads x 8 chunks: 512 threads looping */
  cr_assert_eq(tirx_kernels_rope_build(NULL, TIRX_F16, TIRX_F32, 128, 64, 8, &k), TIRX_OK);
  src = tirx_kernel_source(k);
  assert_has(src, "__launch_bounds__(512)");
  assert_has(src, "for (int it = (int)threadIdx.x; it < 576; it += 512) {");
  tirx_kernel_release(k);
}

/* The lines of src that move q or k (the chunked path's global rows), in order. */
static char *qk_moves(const char *src) {
  size_t cap = strlen(src) + 1, n = 0;
  char *out = malloc(cap);
  cr_assert_not_null(out);
  for (const char *line = src; *line;) {
    const char *end = strchr(line, '\n');
    size_t len = end ? (size_t)(end - line) + 1 : strlen(line);
    char tmp[512];
    snprintf(tmp, sizeof tmp, "%.*s", (int)(len < sizeof tmp ? len : sizeof tmp - 1), line);
    if (strstr(tmp, "&q[") || strstr(tmp, "&k[") || strstr(tmp, " q[") || strstr(tmp, " k[")) {
      memcpy(out + n, line, len);
      n += len;
    }
    line += len;
  }
  out[n] = '\0';
  return out;
}

/* gptj's chunked path reads and writes exactly neox's runs of q and k (two 8-element runs R/2
 * apart a thread, a warp's vectors consecutive): the lines that move q and k are the same in
 * both styles, with vectors and with element moves; only the pairing and the cache's columns
 * differ. */
Test(kernels_rope, gptj_moves_the_same_runs_as_neox) {
  static const struct { tirx_dtype cdt; int d, h, h_kv, rot; int64_t s0; } cases[] = {
      {TIRX_F32, 128, 32, 8, 0, 6144}, {TIRX_F32, 128, 32, 8, 0, 0}, {TIRX_F32, 128, 8, 8, 64, 0},
      {TIRX_BF16, 80, 5, 1, 0, 480},   {TIRX_F32, 128, 4, 0, 96, 512}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char *moves[2];
    for (int style = 0; style < 2; style++) {
      tirx_rope_options o = {.size = sizeof o, .style = (tirx_rope_style)style, .rot_dim = cases[i].rot};
      if (cases[i].s0) {
        o.q_strides[0] = o.k_strides[0] = cases[i].s0;
        o.q_strides[1] = o.k_strides[1] = cases[i].d;
      }
      tirx_kernel *k = NULL;
      cr_assert_eq(tirx_kernels_rope_build(&o, TIRX_BF16, cases[i].cdt, cases[i].d, cases[i].h,
                                           cases[i].h_kv, &k), TIRX_OK, "%s", tirx_last_error());
      moves[style] = qk_moves(tirx_kernel_source(k));
      tirx_kernel_release(k);
    }
    cr_assert_gt(strlen(moves[0]), 0, "case %zu: no moves of q", i);
    cr_assert_str_eq(moves[1], moves[0], "case %zu", i);
    free(moves[0]);
    free(moves[1]);
  }
}

/* Which kernels move q and k in 16-byte vectors: R/2 a multiple of 8 and strides the build
 * knows (opts->q_strides, k_strides) that are multiples of 8. Hidden strides, or constant ones
 * that are not multiples of 8, give the same kernel with element moves; the cache's rows
 * (R/2 apart) are vectors either way. */
Test(kernels_rope, which_shapes_get_vectors) {
  static const struct {
    tirx_rope_style style;
    int d, h, h_kv, rot;
    int64_t qs[2], ks[2];
    const char *want; /* in the q moves */
  } cases[] = {
      {TIRX_ROPE_NEOX, 128, 32, 8, 0, {6144, 128}, {6144, 128}, "copy.vec vec=8: copy(arch=sm_90, roles=global->local"},
      {TIRX_ROPE_GPTJ, 128, 32, 8, 0, {6144, 128}, {6144, 128}, "copy.vec vec=8: copy(arch=sm_90, roles=local->global"},
      {TIRX_ROPE_NEOX, 128, 32, 8, 0, {0, 0}, {0, 0}, "copy.scalar vec=1: copy(arch=sm_90, roles=global->local"},
      {TIRX_ROPE_NEOX, 128, 32, 8, 0, {6145, 128}, {6144, 128}, "copy.scalar vec=1: copy(arch=sm_90, roles=global->local"},
      {TIRX_ROPE_NEOX, 128, 32, 0, 96, {4096, 128}, {0, 0}, "copy.vec vec=8: copy(arch=sm_90, roles=global->local"},
      {TIRX_ROPE_NEOX, 80, 5, 1, 0, {400, 80}, {80, 80}, "copy.vec vec=8: copy(arch=sm_90, roles=global->local"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    tirx_rope_options o = {.size = sizeof o, .style = cases[i].style, .rot_dim = cases[i].rot,
                           .q_strides = {cases[i].qs[0], cases[i].qs[1]},
                           .k_strides = {cases[i].ks[0], cases[i].ks[1]}};
    tirx_kernel *k = NULL;
    cr_assert_eq(tirx_kernels_rope_build(&o, TIRX_BF16, TIRX_F32, cases[i].d, cases[i].h,
                                         cases[i].h_kv, &k), TIRX_OK, "%s", tirx_last_error());
    const char *src = tirx_kernel_source(k);
    assert_has(src, cases[i].want);
    assert_has(src, "tirx_vcopy<float, 4, 8>(&cl[(i * 4)], &cos_1[");
    if (cases[i].style == TIRX_ROPE_GPTJ) /* the second half's pairs: a second vector */
      assert_has(src, "tirx_vcopy<float, 4, 8>(&cl[(i * 4 + 4)], &cos_1[");
    bool hidden = cases[i].qs[0] == 0;
    cr_assert_eq(strstr(src, "long long q_stride0") != NULL, hidden, "case %zu", i);
    tirx_kernel_release(k);
  }
  /* R/2 = 4 (not a multiple of 8): one pair a thread, element accesses, no moves */
  tirx_rope_options o = {.size = sizeof o, .rot_dim = 8, .q_strides = {6144, 128}, .k_strides = {6144, 128}};
  tirx_kernel *k = NULL;
  cr_assert_eq(tirx_kernels_rope_build(&o, TIRX_BF16, TIRX_F32, 128, 32, 8, &k), TIRX_OK);
  const char *src = tirx_kernel_source(k);
  cr_assert_null(strstr(src, "tirx: copy"), "%s", src);
  assert_has(src, "const int i2 = (i1 + 4);");
  assert_has(src, "q[(long long)t * 6144LL + (long long)head * 128LL + (long long)i1]");
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
  /* strides that are multiples of 8 are the kernel's (its moves vectors): another kernel */
  cr_assert_eq(tirx_kernels_cached(), 2);
  expect_error(tirx_op_rope(rt, NULL, qs, NULL, pos, c, s, NULL), TIRX_E_NO_DEVICE, want);
  cr_assert_eq(tirx_kernels_cached(), 3);
  /* other strides are launch arguments: one kernel for all of them */
  const tirx_tensor_arg *qo = &(tirx_tensor_arg){PTR(0x10000), B, 3, (int64_t[]){16, 32, 128},
                                                 (int64_t[]){6145, 128, 1}};
  const tirx_tensor_arg *ko = &(tirx_tensor_arg){PTR(0x12000), B, 3, (int64_t[]){16, 8, 128},
                                                 (int64_t[]){1040, 130, 1}};
  expect_error(tirx_op_rope(rt, NULL, qo, k, pos, c, s, NULL), TIRX_E_NO_DEVICE, want);
  cr_assert_eq(tirx_kernels_cached(), 4);
  expect_error(tirx_op_rope(rt, NULL, qs, ko, pos, c, s, NULL), TIRX_E_NO_DEVICE, want);
  cr_assert_eq(tirx_kernels_cached(), 4);
  tirx_kernels_clear();
  tirx_runtime_destroy(rt);
}

/* Every variant of the GPU suite's rope tests compiles for sm_90a without local memory: with
 * hidden strides (tirx_kernels_rope_build's default) and with the strides tirx_op_rope builds
 * the suite's q and k for (fused qkv rows, and q's rows then k's), whose q and k moves are
 * 16-byte vectors where R/2 is a multiple of 8. */
Test(kernels_rope, the_gpu_suites_variants_compile, .timeout = 300) {
  tirx_runtime *rt = no_device();
  static const struct { tirx_dtype dt, cdt; int d, h, h_kv, rot; } cases[] = {
      {TIRX_BF16, TIRX_F32, 128, 32, 8, 0},  {TIRX_BF16, TIRX_F32, 128, 8, 8, 64},
      {TIRX_F16, TIRX_F32, 64, 12, 4, 32},   {TIRX_BF16, TIRX_BF16, 80, 5, 1, 0},
      {TIRX_F16, TIRX_F16, 128, 4, 0, 96},   {TIRX_BF16, TIRX_F32, 2, 3, 1, 0},
      {TIRX_F16, TIRX_F16, 64, 8, 2, 48},    {TIRX_F16, TIRX_F32, 128, 64, 8, 0},
      {TIRX_BF16, TIRX_F32, 128, 64, 8, 0},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    for (int style = 0; style < 2; style++)
      for (int form = 0; form < 3; form++) { /* hidden strides, fused, q's rows then k's */
        int64_t d = cases[i].d, h = cases[i].h, hkv = cases[i].h_kv;
        int64_t row = form == 1 ? (h + 2 * hkv) * d : h * d, krow = form == 1 ? row : hkv * d;
        int rot = cases[i].rot ? cases[i].rot : cases[i].d;
        bool vec = form > 0 && rot / 2 % 8 == 0 && row % 8 == 0 && krow % 8 == 0 && d % 8 == 0;
        if (form > 0 && !vec) continue; /* tirx_op_rope keeps such strides hidden */
        tirx_rope_options o = {.size = sizeof o, .style = (tirx_rope_style)style,
                               .rot_dim = cases[i].rot};
        if (form > 0) {
          o.q_strides[0] = row, o.q_strides[1] = d;
          if (hkv) o.k_strides[0] = krow, o.k_strides[1] = d;
        }
        tirx_kernel *k = NULL;
        cr_assert_eq(tirx_kernels_rope_build(&o, cases[i].dt, cases[i].cdt, cases[i].d,
                                             cases[i].h, cases[i].h_kv, &k), TIRX_OK, "%s",
                     tirx_last_error());
        tirx_compiled *c = NULL;
        cr_assert_eq(tirx_compile(rt, k, "sm_90a", &c), TIRX_OK, "%s", tirx_last_error());
        const char *ptx = tirx_compiled_ptx(c);
        cr_assert_null(strstr(ptx, ".local"), "rope uses local memory");
        if (vec) {
          cr_assert_not_null(strstr(ptx, "ld.global.v4"), "case %zu style %d: no vector load", i, style);
          cr_assert_not_null(strstr(ptx, "st.global.v4"), "case %zu style %d: no vector store", i, style);
        }
        tirx_compiled_destroy(c);
        tirx_kernel_release(k);
      }
  tirx_runtime_destroy(rt);
}
