/*
 * tirx_op_attention (src/kernels/attention.c) on the CPU: every documented bad input returns
 * its status with a message naming the argument, and builds and launches nothing; the checked
 * call (defaults, strides, varlen offsets); the reference kernel's launch arguments against
 * its declared parameters (the launch checks, without a device) and its grid; without a device
 * the reference path builds and returns TIRX_E_NO_DEVICE; and every variant of the reference
 * kernel (dtype x D x varlen x lse) compiles with NVRTC for sm_90a without local memory; and
 * the float64 reference of the GPU tests (tests/support/attn_ref.c) on values worked by hand.
 * Head dim 256: accepted (other head dims refused), the serial schedule only, the default
 * launch's plan at every head dim, O written over Q only after the last reads of Q (the
 * source's order), and every D = 256 variant compiled with NVRTC and ptxas without spills.
 * The GPU suite runs the kernels: tests/gpu/test_attention.c.
 */
#include <math.h>
#include <string.h>
#include <unistd.h>

#include "../helpers.h"
#include "attn_ref.h"
#include "ir/kernel_abi.h"
#include "kernels/attention_internal.h"

#define PTR(v) ((void *)(uintptr_t)(v))

static tirx_runtime *no_device(void) {
  tirx_runtime *rt = NULL;
  tirx_runtime_options o = {.compile_only = true, .cache_disabled = true};
  cr_assert_eq(tirx_runtime_create(&o, &rt), TIRX_OK, "%s", tirx_last_error());
  return rt;
}

#define BF TIRX_BF16
#define T4(p, dt, a, b, c, d) (&(tirx_tensor_arg){PTR(p), dt, 4, (int64_t[]){a, b, c, d}, NULL})
#define T4S(p, dt, a, b, c, d, s0, s1, s2, s3)                                                 \
  (&(tirx_tensor_arg){PTR(p), dt, 4, (int64_t[]){a, b, c, d}, (int64_t[]){s0, s1, s2, s3}})
#define T3(p, dt, a, b, c) (&(tirx_tensor_arg){PTR(p), dt, 3, (int64_t[]){a, b, c}, NULL})
#define T2(p, dt, a, b) (&(tirx_tensor_arg){PTR(p), dt, 2, (int64_t[]){a, b}, NULL})

static const char FN[] = "tirx_op_attention";

/* Fixed length: q, o [2, 100, 8, 64], k, v [2, 120, 2, 64], lse [2, 8, 100]. */
#define Q T4(0x100000, BF, 2, 100, 8, 64)
#define K T4(0x200000, BF, 2, 120, 2, 64)
#define V T4(0x300000, BF, 2, 120, 2, 64)
#define O T4(0x400000, BF, 2, 100, 8, 64)
#define L T3(0x500000, TIRX_F32, 2, 8, 100)

#define ERR(call, st, ...)                                                                     \
  do {                                                                                        \
    char want_[1024];                                                                         \
    snprintf(want_, sizeof want_, __VA_ARGS__);                                               \
    expect_error(call, st, want_);                                                            \
  } while (0)

Test(kernels_attention, the_op_checks_its_arguments_before_anything_else) {
  tirx_runtime *rt = no_device();
  const tirx_attention_options ref = {.path = "reference"};
  ERR(tirx_op_attention(NULL, NULL, Q, K, V, O, L, NULL, NULL), TIRX_E_NULL_ARG, "%s: rt is NULL", FN);
  /* options */
  ERR(tirx_op_attention(rt, &(tirx_attention_options){.scale = -1}, Q, K, V, O, L, NULL, NULL),
      TIRX_E_INVALID_ARG, "%s: opts->scale is -1, expected 0 (1/sqrt(D)) or a finite value > 0", FN);
  ERR(tirx_op_attention(rt, &(tirx_attention_options){.scale = NAN}, Q, K, V, O, L, NULL, NULL),
      TIRX_E_INVALID_ARG, "%s: opts->scale is nan, expected 0 (1/sqrt(D)) or a finite value > 0", FN);
  ERR(tirx_op_attention(rt, &(tirx_attention_options){.scale = INFINITY}, Q, K, V, O, L, NULL, NULL),
      TIRX_E_INVALID_ARG, "%s: opts->scale is inf, expected 0 (1/sqrt(D)) or a finite value > 0", FN);
  ERR(tirx_op_attention(rt, &(tirx_attention_options){.sms = 1025}, Q, K, V, O, L, NULL, NULL),
      TIRX_E_INVALID_ARG, "%s: opts->sms is 1025, expected 0 (132) to 1024", FN);
  ERR(tirx_op_attention(rt, &(tirx_attention_options){.sms = -1}, Q, K, V, O, L, NULL, NULL),
      TIRX_E_INVALID_ARG, "%s: opts->sms is -1, expected 0 (132) to 1024", FN);
  ERR(tirx_op_attention(rt, &(tirx_attention_options){.path = "fast"}, Q, K, V, O, L, NULL, NULL),
      TIRX_E_INVALID_ARG,
      "%s: opts->path is \"fast\", expected NULL (the default kernel) or \"reference\"", FN);
  /* NULLs */
  ERR(tirx_op_attention(rt, &ref, NULL, K, V, O, L, NULL, NULL), TIRX_E_NULL_ARG, "%s: q is NULL", FN);
  ERR(tirx_op_attention(rt, &ref, Q, NULL, V, O, L, NULL, NULL), TIRX_E_NULL_ARG, "%s: k is NULL", FN);
  ERR(tirx_op_attention(rt, &ref, Q, K, NULL, O, L, NULL, NULL), TIRX_E_NULL_ARG, "%s: v is NULL", FN);
  ERR(tirx_op_attention(rt, &ref, Q, K, V, NULL, L, NULL, NULL), TIRX_E_NULL_ARG, "%s: o is NULL", FN);
  ERR(tirx_op_attention(rt, &ref, T4(0, BF, 2, 100, 8, 64), K, V, O, L, NULL, NULL), TIRX_E_NULL_ARG,
      "%s: q->data is NULL", FN);
  ERR(tirx_op_attention(rt, &ref, Q, K, T4(0, BF, 2, 120, 2, 64), O, L, NULL, NULL), TIRX_E_NULL_ARG,
      "%s: v->data is NULL", FN);
  ERR(tirx_op_attention(rt, &ref, Q, K, V, O, T3(0, TIRX_F32, 2, 8, 100), NULL, NULL), TIRX_E_NULL_ARG,
      "%s: lse->data is NULL", FN);
  ERR(tirx_op_attention(rt, &ref, Q, K, V, &(tirx_tensor_arg){PTR(0x400000), BF, 4, NULL, NULL}, L,
                        NULL, NULL),
      TIRX_E_NULL_ARG, "%s: o->shape is NULL", FN);
  /* alignment of the pointers */
  ERR(tirx_op_attention(rt, &ref, Q, T4(0x200008, BF, 2, 120, 2, 64), V, O, L, NULL, NULL),
      TIRX_E_INVALID_ARG, "%s: k->data 0x200008 is not aligned to 16 bytes", FN);
  ERR(tirx_op_attention(rt, &ref, Q, K, V, O, T3(0x500004, TIRX_F32, 2, 8, 100), NULL, NULL),
      TIRX_E_INVALID_ARG, "%s: lse->data 0x500004 is not aligned to 16 bytes", FN);
  /* ranks */
  ERR(tirx_op_attention(rt, &ref, T3(0x100000, BF, 100, 8, 64), K, V, O, L, NULL, NULL),
      TIRX_E_INVALID_ARG, "%s: q has rank 3, expected 4", FN);
  ERR(tirx_op_attention(rt, &ref, Q, K, V, O, T2(0x500000, TIRX_F32, 8, 100), NULL, NULL),
      TIRX_E_INVALID_ARG, "%s: lse has rank 2, expected 3", FN);
  ERR(tirx_op_attention(rt, &ref, Q, K, V, O, L, &(tirx_attention_varlen){.batch = 1}, NULL),
      TIRX_E_INVALID_ARG, "%s: q has rank 4, expected 3", FN);
  /* extents */
  ERR(tirx_op_attention(rt, &ref, T4(0x100000, BF, 2, 0, 8, 64), K, V, O, L, NULL, NULL),
      TIRX_E_INVALID_ARG, "%s: q has shape [2, 0, 8, 64], expected extents >= 1", FN);
  ERR(tirx_op_attention(rt, &ref, Q, T4(0x200000, BF, 2, 1ll << 31, 2, 64), V, O, L, NULL, NULL),
      TIRX_E_INVALID_ARG, "%s: k has shape [2, 2147483648, 2, 64], expected extents up to 2^31 - 1",
      FN);
  /* dtypes */
  ERR(tirx_op_attention(rt, &ref, T4(0x100000, TIRX_F32, 2, 100, 8, 64), K, V, O, L, NULL, NULL),
      TIRX_E_TYPE, "%s: q has dtype f32, expected f16 or bf16", FN);
  ERR(tirx_op_attention(rt, &ref, Q, T4(0x200000, TIRX_F16, 2, 120, 2, 64), V, O, L, NULL, NULL),
      TIRX_E_TYPE, "%s: k has dtype f16, expected bf16", FN);
  ERR(tirx_op_attention(rt, &ref, Q, K, T4(0x300000, TIRX_F16, 2, 120, 2, 64), O, L, NULL, NULL),
      TIRX_E_TYPE, "%s: v has dtype f16, expected bf16", FN);
  ERR(tirx_op_attention(rt, &ref, Q, K, V, T4(0x400000, TIRX_F32, 2, 100, 8, 64), L, NULL, NULL),
      TIRX_E_TYPE, "%s: o has dtype f32, expected bf16", FN);
  ERR(tirx_op_attention(rt, &ref, Q, K, V, O, T3(0x500000, BF, 2, 8, 100), NULL, NULL), TIRX_E_TYPE,
      "%s: lse has dtype bf16, expected f32", FN);
  /* shapes */
  ERR(tirx_op_attention(rt, &ref, T4(0x100000, BF, 2, 100, 8, 96), K, V, O, L, NULL, NULL),
      TIRX_E_INVALID_ARG, "%s: q has shape [2, 100, 8, 96], expected [B, S_q, H, D] with D 64, 128 "
      "or 256", FN);
  ERR(tirx_op_attention(rt, &ref, Q, T4(0x200000, BF, 3, 120, 2, 64), V, O, L, NULL, NULL),
      TIRX_E_INVALID_ARG,
      "%s: k has shape [3, 120, 2, 64], expected [B, S_k, H_kv, D] = [2, 120, 2, 64]", FN);
  ERR(tirx_op_attention(rt, &ref, Q, T4(0x200000, BF, 2, 120, 2, 128), V, O, L, NULL, NULL),
      TIRX_E_INVALID_ARG,
      "%s: k has shape [2, 120, 2, 128], expected [B, S_k, H_kv, D] = [2, 120, 2, 64]", FN);
  ERR(tirx_op_attention(rt, &ref, Q, T4(0x200000, BF, 2, 120, 3, 64), V, O, L, NULL, NULL),
      TIRX_E_INVALID_ARG,
      "%s: k has shape [2, 120, 3, 64], expected [B, S_k, H_kv, D] with H (8) a multiple of H_kv",
      FN);
  ERR(tirx_op_attention(rt, &ref, Q, K, T4(0x300000, BF, 2, 121, 2, 64), O, L, NULL, NULL),
      TIRX_E_INVALID_ARG,
      "%s: v has shape [2, 121, 2, 64], expected [B, S_k, H_kv, D] = [2, 120, 2, 64] (the shape of k)",
      FN);
  ERR(tirx_op_attention(rt, &ref, Q, K, V, T4(0x400000, BF, 2, 100, 4, 64), L, NULL, NULL),
      TIRX_E_INVALID_ARG,
      "%s: o has shape [2, 100, 4, 64], expected [B, S_q, H, D] = [2, 100, 8, 64] (the shape of q)",
      FN);
  ERR(tirx_op_attention(rt, &ref, Q, K, V, O, T3(0x500000, TIRX_F32, 2, 100, 8), NULL, NULL),
      TIRX_E_INVALID_ARG, "%s: lse has shape [2, 100, 8], expected [B, H, S_q] = [2, 8, 100]", FN);
  /* strides */
  ERR(tirx_op_attention(rt, &ref, T4S(0x100000, BF, 2, 100, 8, 64, 51200, 512, 64, 2), K, V, O, L,
                        NULL, NULL),
      TIRX_E_INVALID_ARG, "%s: q has strides [51200, 512, 64, 2], expected an innermost stride of 1",
      FN);
  ERR(tirx_op_attention(rt, &ref, Q, T4S(0x200000, BF, 2, 120, 2, 64, 15360, 132, 66, 1), V, O, L,
                        NULL, NULL),
      TIRX_E_INVALID_ARG, "%s: k has strides [15360, 132, 66, 1], expected strides >= 0 and "
      "multiples of 8 elements (16 bytes)", FN);
  ERR(tirx_op_attention(rt, &ref, Q, K, V, T4S(0x400000, BF, 2, 100, 8, 64, -51200, 512, 64, 1), L,
                        NULL, NULL),
      TIRX_E_INVALID_ARG, "%s: o has strides [-51200, 512, 64, 1], expected strides >= 0 and "
      "multiples of 8 elements (16 bytes)", FN);
  ERR(tirx_op_attention(rt, &ref, Q, K, T4S(0x300000, BF, 2, 120, 2, 64, 15360, 1ll << 62, 64, 1), O, L,
                        NULL, NULL),
      TIRX_E_INVALID_ARG, "%s: v has strides [15360, 4611686018427387904, 64, 1]: its elements' "
      "offsets overflow int64", FN);
  ERR(tirx_op_attention(rt, &ref, Q, K, V, O,
                        &(tirx_tensor_arg){PTR(0x500000), TIRX_F32, 3, (int64_t[]){2, 8, 100},
                                           (int64_t[]){1000, 100, 1}},
                        NULL, NULL),
      TIRX_E_INVALID_ARG, "%s: lse has strides [1000, 100, 1], expected dense row-major", FN);
  cr_assert_eq(tirx_kernels_cached(), 0, "a bad call built a kernel");
  tirx_runtime_destroy(rt);
}

/* Varlen: q, o [300, 8, 128], k, v [400, 1, 128], lse [8, 300], three sequences. */
#define VQ T3(0x100000, BF, 300, 8, 128)
#define VK T3(0x200000, BF, 400, 1, 128)
#define VV T3(0x300000, BF, 400, 1, 128)
#define VO T3(0x400000, BF, 300, 8, 128)
#define VL T2(0x500000, TIRX_F32, 8, 300)
static const int32_t CUQ[4] = {0, 100, 100, 300}, CUK[4] = {0, 1, 200, 400};
#define VLEN(...) (&(tirx_attention_varlen){__VA_ARGS__})
#define GOOD_VARLEN VLEN(3, CUQ, CUK, PTR(0x600000), PTR(0x700000))

/* Found by tools/fuzz_ops -m prepare: the default path took strides its TMA loads cannot (0
 * on a dimension longer than 1, 2^40 bytes or more), and only the launch refused them
 * ("tirx_prepare_async: argument 11 (Q): stride[0] is 0 elements ..."). The op refuses them,
 * naming the tensor; the reference path (plain loads) still takes a zero stride. */
Test(kernels_attention, the_default_path_refuses_strides_tma_cannot_take) {
  tirx_runtime *rt = no_device();
  ERR(tirx_op_attention(rt, NULL, T4S(0x100000, BF, 2, 100, 8, 64, 0, 512, 64, 1), K, V, O, L,
                        NULL, NULL),
      TIRX_E_INVALID_ARG, "%s: q has strides [0, 512, 64, 1], expected strides of the dimensions "
      "longer than 1 from 8 to 2^39 - 8 elements (TMA: positive, below 2^40 bytes; opts->path "
      "\"reference\" takes any)", FN);
  ERR(tirx_op_attention(rt, NULL, Q, K, T4S(0x300000, BF, 2, 120, 2, 64, 1ll << 40, 128, 64, 1), O,
                        L, NULL, NULL),
      TIRX_E_INVALID_ARG, "%s: v has strides [1099511627776, 128, 64, 1], expected strides of the "
      "dimensions longer than 1 from 8 to 2^39 - 8 elements (TMA: positive, below 2^40 bytes; "
      "opts->path \"reference\" takes any)", FN);
  ERR(tirx_op_attention(rt, NULL, T3(0x100000, BF, 200, 8, 64), T3(0x200000, BF, 200, 2, 64),
                        &(tirx_tensor_arg){PTR(0x300000), BF, 3, (int64_t[]){200, 2, 64},
                                           (int64_t[]){0, 64, 1}},
                        T3(0x400000, BF, 200, 8, 64), NULL,
                        &(tirx_attention_varlen){1, (int32_t[]){0, 200}, (int32_t[]){0, 200},
                                                 PTR(0x600000), PTR(0x700000)},
                        NULL),
      TIRX_E_INVALID_ARG, "%s: v has strides [0, 64, 1], expected strides of the dimensions "
      "longer than 1 from 8 to 2^39 - 8 elements (TMA: positive, below 2^40 bytes; opts->path "
      "\"reference\" takes any)", FN);
  cr_assert_eq(tirx_kernels_cached(), 0, "a bad call built a kernel");
  tirx_runtime_destroy(rt);
}

Test(kernels_attention, varlen_arguments_are_checked) {
  tirx_runtime *rt = no_device();
  const tirx_attention_options ref = {.path = "reference"};
  const int32_t bad0[4] = {1, 100, 100, 300}, down[4] = {0, 100, 99, 300}, short_[4] = {0, 1, 2, 299};
  ERR(tirx_op_attention(rt, &ref, VQ, VK, VV, VO, VL, VLEN(0, CUQ, CUK, PTR(0x600000), PTR(0x700000)),
                        NULL),
      TIRX_E_INVALID_ARG, "%s: varlen->batch is 0, expected >= 1", FN);
  ERR(tirx_op_attention(rt, &ref, VQ, VK, VV, VO, VL, VLEN(3, NULL, CUK, PTR(0x600000), PTR(0x700000)),
                        NULL),
      TIRX_E_NULL_ARG, "%s: varlen->cu_seqlens_q is NULL", FN);
  ERR(tirx_op_attention(rt, &ref, VQ, VK, VV, VO, VL, VLEN(3, CUQ, NULL, PTR(0x600000), PTR(0x700000)),
                        NULL),
      TIRX_E_NULL_ARG, "%s: varlen->cu_seqlens_k is NULL", FN);
  ERR(tirx_op_attention(rt, &ref, VQ, VK, VV, VO, VL, VLEN(3, CUQ, CUK, NULL, PTR(0x700000)), NULL),
      TIRX_E_NULL_ARG, "%s: varlen->cu_seqlens_q_dev is NULL", FN);
  ERR(tirx_op_attention(rt, &ref, VQ, VK, VV, VO, VL, VLEN(3, CUQ, CUK, PTR(0x600000), NULL), NULL),
      TIRX_E_NULL_ARG, "%s: varlen->cu_seqlens_k_dev is NULL", FN);
  ERR(tirx_op_attention(rt, &ref, VQ, VK, VV, VO, VL, VLEN(3, CUQ, CUK, PTR(0x600000), PTR(0x700004)),
                        NULL),
      TIRX_E_INVALID_ARG, "%s: varlen->cu_seqlens_k_dev 0x700004 is not aligned to 16 bytes", FN);
  ERR(tirx_op_attention(rt, &ref, VQ, VK, VV, VO, VL, VLEN(3, bad0, CUK, PTR(0x600000), PTR(0x700000)),
                        NULL),
      TIRX_E_INVALID_ARG, "%s: varlen->cu_seqlens_q[0] is 1, expected 0", FN);
  ERR(tirx_op_attention(rt, &ref, VQ, VK, VV, VO, VL, VLEN(3, down, CUK, PTR(0x600000), PTR(0x700000)),
                        NULL),
      TIRX_E_INVALID_ARG, "%s: varlen->cu_seqlens_q[2] is 99, less than [1] = 100: expected "
      "non-decreasing offsets", FN);
  ERR(tirx_op_attention(rt, &ref, VQ, VK, VV, VO, VL, VLEN(3, short_, CUK, PTR(0x600000), PTR(0x700000)),
                        NULL),
      TIRX_E_INVALID_ARG, "%s: varlen->cu_seqlens_q[3] is 299, expected T_q (q's first dimension) = 300",
      FN);
  ERR(tirx_op_attention(rt, &ref, VQ, VK, VV, VO, VL, VLEN(3, CUQ, CUQ, PTR(0x600000), PTR(0x700000)),
                        NULL),
      TIRX_E_INVALID_ARG, "%s: varlen->cu_seqlens_k[3] is 300, expected T_k (k's first dimension) = 400",
      FN);
  ERR(tirx_op_attention(rt, &ref, Q, K, V, O, L, GOOD_VARLEN, NULL), TIRX_E_INVALID_ARG,
      "%s: q has rank 4, expected 3", FN);
  ERR(tirx_op_attention(rt, &ref, VQ, VK, VV, VO, T3(0x500000, TIRX_F32, 1, 8, 300), GOOD_VARLEN, NULL),
      TIRX_E_INVALID_ARG, "%s: lse has rank 3, expected 2", FN);
  ERR(tirx_op_attention(rt, &ref, VQ, VK, VV, VO, T2(0x500000, TIRX_F32, 300, 8), GOOD_VARLEN, NULL),
      TIRX_E_INVALID_ARG, "%s: lse has shape [300, 8], expected [H, T_q] = [8, 300]", FN);
  ERR(tirx_op_attention(rt, &ref, VQ, T3(0x200000, BF, 400, 3, 128), T3(0x300000, BF, 400, 3, 128), VO,
                        VL, GOOD_VARLEN, NULL),
      TIRX_E_INVALID_ARG, "%s: k has shape [400, 3, 128], expected [T_k, H_kv, D] with H (8) a "
      "multiple of H_kv", FN);
  ERR(tirx_op_attention(rt, &ref, VQ, VK, T3(0x300000, BF, 401, 1, 128), VO, VL, GOOD_VARLEN, NULL),
      TIRX_E_INVALID_ARG, "%s: v has shape [401, 1, 128], expected [T_k, H_kv, D] = [400, 1, 128] (the "
      "shape of k)", FN);
  ERR(tirx_op_attention(rt, &ref, VQ, VK, VV, T3(0x400000, BF, 300, 8, 64), VL, GOOD_VARLEN, NULL),
      TIRX_E_INVALID_ARG, "%s: o has shape [300, 8, 64], expected [T_q, H, D] = [300, 8, 128] (the "
      "shape of q)", FN);
  cr_assert_eq(tirx_kernels_cached(), 0, "a bad call built a kernel");
  tirx_runtime_destroy(rt);
}

/* The default kernel counts its tile pairs, ceil(S_q / 256) x B x H (S_q the longest query
 * sequence), in int32: varlen with many short sequences beside a long one (20000 sequences,
 * one of 2^20 tokens, H 128: 1.0e10 pairs, about 2.7 GB of q) wrapped it, and the kernel then
 * wrote nothing. Refused now, before any build. Found by the session 16 review. */
Test(kernels_attention, varlen_tile_pairs_past_int32_are_refused) {
  tirx_runtime *rt = no_device();
  enum { NB = 20000, LONG = 1 << 20 };
  static int32_t cu[NB + 1];
  cu[0] = 0, cu[1] = LONG;
  for (int i = 2; i <= NB; i++) cu[i] = cu[i - 1] + 1;
  const int64_t T = cu[NB];
  tirx_tensor_arg q = {PTR(0x1000000), BF, 3, (int64_t[]){T, 128, 64}, NULL};
  tirx_tensor_arg kv = {PTR(0x2000000), BF, 3, (int64_t[]){T, 8, 64}, NULL};
  tirx_tensor_arg o = {PTR(0x3000000), BF, 3, (int64_t[]){T, 128, 64}, NULL};
  tirx_attention_varlen vl = {NB, cu, cu, PTR(0x600000), PTR(0x700000)};
  ERR(tirx_op_attention(rt, NULL, &q, &kv, &kv, &o, NULL, &vl, NULL), TIRX_E_INVALID_ARG,
      "%s: B x H x ceil(S_q / 256) is 20000 x 128 x 4096 = 10485760000 tile pairs, expected at "
      "most 2^31 - 1 (S_q the longest query sequence)", FN);
  cr_assert_eq(tirx_kernels_cached(), 0, "a refused call built a kernel");
  tirx_runtime_destroy(rt);
}

/* What the checks hand to a path: defaults, strides of the rank-4 views, varlen's lengths. */
Test(kernels_attention, the_checked_call) {
  tirx__attn_call c;
  bool ref = true;
  cr_assert_eq(tirx__attention_check(NULL, Q, K, V, O, L, NULL, &c, &ref), TIRX_OK, "%s",
               tirx_last_error());
  cr_expect(!ref);
  cr_expect_eq(c.dtype, BF);
  cr_expect(c.d == 64 && c.h == 8 && c.h_kv == 2 && c.batch == 2 && !c.causal && !c.varlen);
  cr_expect(fabs(c.scale - 0.125) < 1e-15 && c.sms == 132);
  cr_expect(c.s_q == 100 && c.s_k == 120 && c.t_q == 200 && c.t_k == 240);
  cr_expect(c.q_stride[0] == 51200 && c.q_stride[1] == 512 && c.q_stride[2] == 64 && c.q_stride[3] == 1);
  cr_expect(c.k_stride[0] == 15360 && c.k_stride[1] == 128 && c.k_stride[2] == 64);
  cr_expect(c.lse == PTR(0x500000) && c.q == PTR(0x100000) && c.o == PTR(0x400000) && !c.cu_q);

  tirx_attention_options o = {.scale = 0.3, .causal = true, .path = "reference", .sms = 7};
  const tirx_tensor_arg *qs = T4S(0x100000, BF, 2, 100, 8, 64, 0, 1024, 128, 1); /* padded, broadcast B */
  cr_assert_eq(tirx__attention_check(&o, qs, K, V, O, NULL, NULL, &c, &ref), TIRX_OK, "%s",
               tirx_last_error());
  cr_expect(ref && c.causal && c.scale == 0.3 && c.sms == 7 && !c.lse);
  cr_expect(c.q_stride[0] == 0 && c.q_stride[1] == 1024 && c.q_stride[2] == 128);

  cr_assert_eq(tirx__attention_check(&o, VQ, VK, VV, VO, VL, GOOD_VARLEN, &c, &ref), TIRX_OK, "%s",
               tirx_last_error());
  cr_expect(c.varlen && c.batch == 3 && c.d == 128 && c.h == 8 && c.h_kv == 1);
  cr_expect(c.s_q == 200 && c.s_k == 200 && c.t_q == 300 && c.t_k == 400, "longest %lld %lld",
            (long long)c.s_q, (long long)c.s_k);
  cr_expect(c.cu_q == CUQ && c.cu_k == CUK && c.cu_q_dev == PTR(0x600000) && c.cu_k_dev == PTR(0x700000));
  cr_expect(c.q_stride[0] == 300 * 1024 && c.q_stride[1] == 1024 && c.q_stride[2] == 128 &&
            c.q_stride[3] == 1);
  cr_expect(c.k_stride[1] == 128 && c.k_stride[2] == 128);
}

/* The reference kernel's arguments for checked calls pass the launch checks; its grid is
 * (ceil(S_q / 32), H, B) with S_q the longest sequence for varlen. */
Test(kernels_attention, reference_arguments_pass_the_launch_checks, .timeout = 120) {
  tirx__launch_plan *plan = malloc(sizeof *plan);
  const tirx_attention_options ref = {.path = "reference", .causal = true};
  struct {
    const tirx_tensor_arg *q, *k, *v, *o, *lse;
    const tirx_attention_varlen *vl;
    int nargs;
    uint32_t grid[3];
  } cases[] = {
      {Q, K, V, O, L, NULL, 12, {4, 8, 2}},
      {Q, K, V, O, NULL, NULL, 11, {4, 8, 2}},
      {T4S(0x100000, BF, 2, 100, 8, 64, 0, 1024, 128, 1), K, V,
       T4S(0x400000, BF, 2, 100, 8, 64, 204800, 2048, 64, 1), L, NULL, 12, {4, 8, 2}},
      {VQ, VK, VV, VO, VL, GOOD_VARLEN, 15, {7, 8, 3}},
      {VQ, VK, VV, VO, NULL, GOOD_VARLEN, 14, {7, 8, 3}},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    tirx__attn_call c;
    bool r;
    cr_assert_eq(tirx__attention_check(&ref, cases[i].q, cases[i].k, cases[i].v, cases[i].o,
                                       cases[i].lse, cases[i].vl, &c, &r),
                 TIRX_OK, "case %zu: %s", i, tirx_last_error());
    tirx_kernel *k = NULL;
    cr_assert_eq(tirx__attention_ref_get(&c, &k), TIRX_OK, "%s", tirx_last_error());
    tirx__attn_args a;
    tirx__attention_ref_args(&c, &a);
    cr_expect_eq(a.n, cases[i].nargs);
    cr_expect_eq(a.n, tirx_kernel_num_params(k));
    cr_assert_eq(tirx__kernel_plan(k, "tirx_launch", a.args, a.n, plan), TIRX_OK, "case %zu: %s", i,
                 tirx_last_error());
    for (int g = 0; g < 3; g++)
      cr_expect_eq(plan->grid[g], cases[i].grid[g], "case %zu: grid[%d] %u", i, g, plan->grid[g]);
    cr_expect(plan->block[0] == 128 && plan->block[1] == 1 && plan->block[2] == 1);
    cr_expect_eq(plan->nspec, 0, "every integer parameter is dynamic");
    tirx_kernel_release(k);
  }
  /* one kernel per (dtype, D, varlen, lse) */
  cr_expect_eq(tirx_kernels_cached(), 4);
  tirx_kernels_clear();
  free(plan);
}

/* Without a device the reference path checks, builds and returns tirx_launch's
 * TIRX_E_NO_DEVICE; the second call finds the kernel. */
Test(kernels_attention, without_a_device_the_reference_path_returns_no_device, .timeout = 120) {
  tirx_runtime *rt = no_device();
  const tirx_attention_options ref = {.path = "reference"};
  char want[1024];
  snprintf(want, sizeof want, "%s: tirx_launch: no CUDA device: %s", FN, tirx_runtime_device_error(rt));
  expect_error(tirx_op_attention(rt, &ref, Q, K, V, O, L, NULL, NULL), TIRX_E_NO_DEVICE, want);
  cr_assert_eq(tirx_kernels_cached(), 1);
  expect_error(tirx_op_attention(rt, &(tirx_attention_options){.path = "reference", .causal = true,
                                                              .scale = 0.5},
                                 Q, K, V, O, L, NULL, NULL),
               TIRX_E_NO_DEVICE, want);
  cr_assert_eq(tirx_kernels_cached(), 1, "causal and scale are launch arguments");
  expect_error(tirx_op_attention(rt, &ref, VQ, VK, VV, VO, NULL, GOOD_VARLEN, NULL), TIRX_E_NO_DEVICE,
               want);
  cr_assert_eq(tirx_kernels_cached(), 2);
  tirx_kernels_clear();
  tirx_runtime_destroy(rt);
}

Test(kernels_attention, the_reference_build_checks_its_arguments) {
  tirx_kernel *k = PTR(1);
  expect_error(tirx__attention_ref_build(BF, 64, false, false, NULL), TIRX_E_NULL_ARG,
               "tirx_op_attention reference kernel: out is NULL");
  expect_error(tirx__attention_ref_build(TIRX_F32, 64, false, false, &k), TIRX_E_INVALID_ARG,
               "tirx_op_attention reference kernel: dtype is f32, expected f16 or bf16");
  cr_assert_null(k);
  expect_error(tirx__attention_ref_build(BF, 96, false, false, &k), TIRX_E_INVALID_ARG,
               "tirx_op_attention reference kernel: d is 96, expected 64, 128 or 256");
}

/* Every variant compiles for sm_90a, with q and the accumulator in registers (no .local). */
Test(kernels_attention, every_reference_variant_compiles, .timeout = 600) {
  tirx_runtime *rt = no_device();
  static const tirx_dtype dts[2] = {TIRX_BF16, TIRX_F16};
  for (int v = 0; v < 16; v++) {
    tirx_dtype dt = dts[v & 1];
    int d = v & 2 ? 128 : 64;
    bool varlen = v & 4, lse = v & 8;
    tirx_kernel *k = NULL;
    cr_assert_eq(tirx__attention_ref_build(dt, d, varlen, lse, &k), TIRX_OK, "%s", tirx_last_error());
    tirx_compiled *c = NULL;
    cr_assert_eq(tirx_compile(rt, k, "sm_90a", &c), TIRX_OK, "%s: %s", tirx_kernel_name(k),
                 tirx_last_error());
    cr_expect_null(strstr(tirx_compiled_ptx(c), ".local"), "%s uses local memory",
                   tirx_kernel_name(k));
    tirx_compiled_destroy(c);
    tirx_kernel_release(k);
  }
  tirx_runtime_destroy(rt);
}

/* The float64 reference the GPU tests trust (tests/support/attn_ref.c), on values worked by
 * hand: q = a e0 and k_j = b_j e0 give scores scale a b_j; v_j = (j + 1) e1. Causal rows see
 * keys j <= i + S_k - S_q (none for the first S_q - S_k rows), GQA heads read h / (H / H_kv),
 * varlen sequences their own offsets; and the checker catches one wrong element or lse. */
Test(kernels_attention, the_cpu_reference) {
  enum { D = 64 };
  const int64_t sq = 3, sk = 2; /* S_q > S_k: under causal row 0 sees nothing */
  float q[3 * 2 * D] = {0}, k[2 * D] = {0}, v[2 * D] = {0}; /* q [1, 3, 2, D], k, v [1, 2, 1, D] */
  for (int i = 0; i < 3; i++)
    for (int h = 0; h < 2; h++) q[(i * 2 + h) * D] = (float)(i + 1 + h);
  k[0] = 1.0f, k[D] = -0.5f;
  v[1] = 1.0f, v[D + 1] = 2.0f;
  attn_problem p = {.batch = 1, .h = 2, .h_kv = 1, .d = D, .causal = true, .scale = 0.5,
                    .s_q = sq, .s_k = sk};
  attn_view qv = {q, sq * 2 * D, 2 * D, D}, kv = {k, sk * D, D, D}, vv = {v, sk * D, D, D};
  double o[D], lse;
  attn_ref_row(&p, qv, kv, vv, 0, 1, 0, o, &lse);
  cr_expect(isinf(lse) && lse < 0 && o[1] == 0, "row 0 sees no key: lse %g", lse);
  attn_ref_row(&p, qv, kv, vv, 0, 1, 1, o, &lse); /* sees key 0 only: o = v_0 */
  cr_expect(fabs(o[1] - 1) < 1e-15 && fabs(lse - 0.5 * 3) < 1e-12, "row 1: o %g lse %g", o[1], lse);
  attn_ref_row(&p, qv, kv, vv, 0, 0, 2, o, &lse); /* both keys: scores 0.5 * 3 * (1, -0.5) */
  double s0 = 1.5, s1 = -0.75, w0 = exp(s0) / (exp(s0) + exp(s1));
  cr_expect(fabs(o[1] - (w0 + 2 * (1 - w0))) < 1e-12 && fabs(lse - log(exp(s0) + exp(s1))) < 1e-12,
            "row 2: o %g lse %g", o[1], lse);
  cr_expect(o[0] == 0 && o[2] == 0);
  p.causal = false; /* row 0 sees both keys now */
  attn_ref_row(&p, qv, kv, vv, 0, 0, 0, o, &lse);
  s0 = 0.5, s1 = -0.25, w0 = exp(s0) / (exp(s0) + exp(s1));
  cr_expect(fabs(o[1] - (w0 + 2 * (1 - w0))) < 1e-12, "full row 0: o %g", o[1]);

  /* varlen: two sequences, the second of q rows 1..2 and key 1 only (S_q 2 > S_k 1) */
  const int32_t cu_q[3] = {0, 1, 3}, cu_k[3] = {0, 1, 2};
  attn_problem pv = {.batch = 2, .h = 2, .h_kv = 1, .d = D, .causal = true, .scale = 0.5,
                     .cu_q = cu_q, .cu_k = cu_k};
  attn_view qp = {q, 0, 2 * D, D}, kp = {k, 0, D, D}, vp = {v, 0, D, D};
  attn_ref_row(&pv, qp, kp, vp, 1, 0, 0, o, &lse); /* packed row 1: sees nothing */
  cr_expect(isinf(lse) && o[1] == 0);
  attn_ref_row(&pv, qp, kp, vp, 1, 0, 1, o, &lse); /* packed row 2, key 1: o = v_1 */
  cr_expect(fabs(o[1] - 2) < 1e-15 && fabs(lse - 0.5 * 3 * -0.5) < 1e-12, "o %g lse %g", o[1], lse);

  /* the checker: the reference's own answer passes, one element or lse off fails */
  float og[3 * 2 * D], lg[2 * 3];
  for (int h = 0; h < 2; h++)
    for (int i = 0; i < 3; i++) {
      attn_ref_row(&p, qv, kv, vv, 0, h, i, o, &lse);
      for (int x = 0; x < D; x++) og[(i * 2 + h) * D + x] = (float)o[x];
      lg[h * 3 + i] = (float)lse;
    }
  attn_view ov = {og, sq * 2 * D, 2 * D, D};
  uint64_t rng = 1;
  attn_report r;
  attn_ref_check(&p, qv, kv, vv, ov, lg, true, 128, 48, &rng, &r);
  cr_expect(r.wrong == 0 && r.unwritten == 0 && r.rows == 6, "%lld wrong: %s", (long long)r.wrong,
            r.first);
  og[(2 * 2 + 1) * D + 1] += 0.02f;
  attn_ref_check(&p, qv, kv, vv, ov, lg, true, 128, 48, &rng, &r);
  cr_expect_eq(r.wrong, 1, "%s", r.first);
  og[(2 * 2 + 1) * D + 1] -= 0.02f;
  lg[4] = NAN;
  attn_ref_check(&p, qv, kv, vv, ov, lg, true, 128, 48, &rng, &r);
  cr_expect(r.wrong == 1 && r.unwritten == 1, "%lld wrong, %lld unwritten", (long long)r.wrong,
            (long long)r.unwritten);
}

/* ---- the default kernel's schedules (attention_fast.c, TIRX_ATTN_SCHEDULE) ---- */

/* The number of times needle occurs in [from, to). */
static int count_in(const char *from, const char *to, const char *needle) {
  int n = 0;
  for (const char *p = from; (p = strstr(p, needle)) && p < to; p += strlen(needle)) n++;
  return n;
}

static tirx_kernel *fast_kernel(const char *schedule, tirx_dtype dt, int d, bool causal,
                                bool varlen) {
  if (schedule)
    cr_assert_eq(setenv("TIRX_ATTN_SCHEDULE", schedule, 1), 0);
  else
    unsetenv("TIRX_ATTN_SCHEDULE");
  tirx_kernel *k = NULL;
  tirx_attention_options o = {.causal = causal};
  cr_assert_eq(tirx_kernels_attention_build(&o, dt, d, 8, 2, varlen, &k), TIRX_OK, "%s",
               tirx_last_error());
  unsetenv("TIRX_ATTN_SCHEDULE");
  return k;
}

/* Unset, empty and "serial" are the default schedule; "overlap" is another kernel (its name
 * says so), and both live in the op's table at once; any other value fails the build and the
 * op with its message, building nothing. */
Test(kernels_attention, the_schedule_comes_from_the_environment, .timeout = 120) {
  const char *names[3] = {NULL, "", "serial"};
  for (int i = 0; i < 3; i++) {
    tirx_kernel *k = fast_kernel(names[i], BF, 64, true, false);
    cr_expect_str_eq(tirx_kernel_name(k), "attention_bf16_d64_causal");
    tirx_kernel_release(k);
  }
  tirx_kernel *k = fast_kernel("overlap", BF, 64, true, true);
  cr_expect_str_eq(tirx_kernel_name(k), "attention_bf16_d64_causal_varlen_overlap");
  tirx_kernel_release(k);

  cr_assert_eq(setenv("TIRX_ATTN_SCHEDULE", "ping-pong", 1), 0);
  k = PTR(1);
  expect_error(tirx_kernels_attention_build(NULL, BF, 64, 8, 2, false, &k), TIRX_E_INVALID_ARG,
               "tirx_kernels_attention_build: TIRX_ATTN_SCHEDULE is \"ping-pong\", expected serial "
               "(the default), overlap, pingpong or pingpong_overlap");
  cr_expect_null(k);
  tirx_runtime *rt = no_device();
  ERR(tirx_op_attention(rt, NULL, Q, K, V, O, L, NULL, NULL), TIRX_E_INVALID_ARG,
      "%s: TIRX_ATTN_SCHEDULE is \"ping-pong\", expected serial (the default), overlap, pingpong "
      "or pingpong_overlap", FN);
  cr_expect_eq(tirx_kernels_cached(), 0);

  char want[1024];
  snprintf(want, sizeof want, "%s: tirx_launch: no CUDA device: %s", FN, tirx_runtime_device_error(rt));
  unsetenv("TIRX_ATTN_SCHEDULE");
  expect_error(tirx_op_attention(rt, NULL, Q, K, V, O, L, NULL, NULL), TIRX_E_NO_DEVICE, want);
  cr_expect_eq(tirx_kernels_cached(), 1);
  cr_assert_eq(setenv("TIRX_ATTN_SCHEDULE", "overlap", 1), 0);
  expect_error(tirx_op_attention(rt, NULL, Q, K, V, O, L, NULL, NULL), TIRX_E_NO_DEVICE, want);
  cr_expect_eq(tirx_kernels_cached(), 2, "the schedule is part of the kernel's key");
  expect_error(tirx_op_attention(rt, NULL, Q, K, V, O, L, NULL, NULL), TIRX_E_NO_DEVICE, want);
  cr_expect_eq(tirx_kernels_cached(), 2);
  unsetenv("TIRX_ATTN_SCHEDULE");
  tirx_kernels_clear();
  tirx_runtime_destroy(rt);
}

/* "pingpong" and "pingpong_overlap" are kernels of their own too (their names say so), each its
 * own entry in the op's table beside the default and the overlap. */
Test(kernels_attention, the_pingpong_schedules_are_kernels_of_their_own, .timeout = 120) {
  static const char *const schedules[4] = {NULL, "overlap", "pingpong", "pingpong_overlap"};
  static const char *const names[4] = {"attention_bf16_d64_causal_varlen",
                                       "attention_bf16_d64_causal_varlen_overlap",
                                       "attention_bf16_d64_causal_varlen_pingpong",
                                       "attention_bf16_d64_causal_varlen_pingpong_overlap"};
  for (int i = 2; i < 4; i++) {
    tirx_kernel *k = fast_kernel(schedules[i], BF, 64, true, true);
    cr_expect_str_eq(tirx_kernel_name(k), names[i]);
    tirx_kernel_release(k);
  }
  tirx_runtime *rt = no_device();
  char want[1024];
  snprintf(want, sizeof want, "%s: tirx_launch: no CUDA device: %s", FN, tirx_runtime_device_error(rt));
  for (int i = 0; i < 4; i++) {
    if (schedules[i])
      cr_assert_eq(setenv("TIRX_ATTN_SCHEDULE", schedules[i], 1), 0);
    else
      unsetenv("TIRX_ATTN_SCHEDULE");
    expect_error(tirx_op_attention(rt, NULL, Q, K, V, O, L, NULL, NULL), TIRX_E_NO_DEVICE, want);
    cr_expect_eq(tirx_kernels_cached(), 1 + i, "the schedule is part of the kernel's key");
    expect_error(tirx_op_attention(rt, NULL, Q, K, V, O, L, NULL, NULL), TIRX_E_NO_DEVICE, want);
    cr_expect_eq(tirx_kernels_cached(), 1 + i);
  }
  unsetenv("TIRX_ATTN_SCHEDULE");
  tirx_kernels_clear();
  tirx_runtime_destroy(rt);
}

/* The overlapped source, in each KV-block loop (masked, unmasked): S = Q K^T (SS) and O += P V
 * (RS) issued and committed with no wait between them, then wait_group 1, K's stage released,
 * the softmax (ex2) with neither O nor P touched, wait_group 0, V's stage released, then the
 * rescale and the cast to P. The default source never leaves a group in flight. */
Test(kernels_attention, the_overlap_schedule_keeps_two_groups_in_flight, .timeout = 120) {
  for (int v = 0; v < 4; v++) {
    bool causal = v & 1, varlen = v & 2;
    tirx_kernel *k = fast_kernel("overlap", TIRX_F16, 128, causal, varlen);
    const char *src = tirx_kernel_source(k), *end = src + strlen(src);
    cr_assert_eq(count_in(src, end, "tirx_wgmma_wait<1>();"), 2, "%s", tirx_kernel_name(k));
    for (const char *w1 = strstr(src, "tirx_wgmma_wait<1>();"); w1;
         w1 = strstr(w1 + 1, "tirx_wgmma_wait<1>();")) {
      /* back to the previous wait: two groups issued after it */
      const char *prev = src;
      for (const char *p = src; (p = strstr(p, "tirx_wgmma_wait<")) && p < w1; p++) prev = p;
      cr_expect_eq(count_in(prev + 1, w1, "tirx_wgmma_commit();"), 2);
      const char *ss = strstr(prev + 1, "tirx_wgmma_m64n128k16_f16_x8"), *rs = strstr(prev + 1, "tirx_wgmma_rs_m64n128k16_f16");
      cr_assert(ss && rs && ss < rs && rs < w1, "S then P V issued before wait_group 1");
      const char *w0 = strstr(w1, "tirx_wgmma_wait<0>();");
      cr_assert_not_null(w0);
      cr_expect_eq(count_in(w1, w0, "tirx_wgmma_wait<"), 1, "no wait between 1 and 0");
      cr_expect_eq(count_in(w1, w0, "tirx_mbar_arrive(&k_empty["), 1, "K released under P V");
      cr_expect_eq(count_in(w1, w0, "tirx_mbar_arrive(&v_empty["), 0);
      cr_expect_gt(count_in(w1, w0, "tirx_ex2("), 0, "the softmax under P V");
      cr_expect_eq(count_in(w1, w0, "O_1["), 0, "O is written by the P V in flight");
      cr_expect_eq(count_in(w1, w0, "P["), 0, "P is read by the P V in flight");
      const char *next = strstr(w0, "it = (it + 1);");
      cr_assert_not_null(next);
      cr_expect_eq(count_in(w0, next, "tirx_mbar_arrive(&v_empty["), 1);
      cr_expect_gt(count_in(w0, next, "O_1["), 0, "O rescaled after P V");
      cr_expect_gt(count_in(w0, next, "P["), 0, "P cast after P V");
    }
    /* the last block's P V after the loops: one RS group more than the loops have */
    cr_expect_eq(count_in(src, end, "tirx_wgmma_rs_m64n128k16_f16<1>(&O_1[0],"), 3 * 8);
    tirx_kernel_release(k);
    k = fast_kernel(NULL, TIRX_F16, 128, causal, varlen);
    src = tirx_kernel_source(k);
    cr_expect_null(strstr(src, "tirx_wgmma_wait<1>"), "%s", tirx_kernel_name(k));
    tirx_kernel_release(k);
  }
}

/* The first of needles[0..n) found in order in [from, to), each after the one before: n if all
 * are, else the index of the first one missing. */
static int in_order(const char *from, const char *to, const char *const *needles, int n) {
  for (int i = 0; i < n; i++) {
    const char *p = strstr(from, needles[i]);
    if (!p || p >= to) return i;
    from = p + strlen(needles[i]);
  }
  return n;
}

/* The ping-pong's turns in the source (f16, D = 128, each causal x varlen): consumer c waits on
 * barrier 3 + c and passes to 4 - c, 256 threads; consumer 1 arms barrier 3 once before the
 * tile loop and consumer 0 takes the last pass after it. Without the overlap each KV-block loop
 * issues S, passes, waits for S, runs the softmax, waits for V's stage and then its turn, and
 * issues P V; the tile takes a turn before its first block and passes after its last. With the
 * overlap each loop waits for K's stage, then its turn, issues S and P V, passes, then
 * wait_group 1; the peeled first block and the last P V take no turn. The other schedules'
 * sources use neither barrier. */
Test(kernels_attention, the_pingpong_schedules_take_turns, .timeout = 120) {
  static const char SYNC0[] = "tirx_named_bar_sync(3, 256);", SYNC1[] = "tirx_named_bar_sync(4, 256);";
  static const char PASS0[] = "tirx_named_bar_arrive(4, 256);", PASS1[] = "tirx_named_bar_arrive(3, 256);";
  static const char SS[] = "tirx_wgmma_m64n128k16_f16_x8", RS[] = "tirx_wgmma_rs_m64n128k16_f16";
  for (int v = 0; v < 8; v++) {
    bool causal = v & 1, varlen = v & 2, overlap = v & 4;
    tirx_kernel *k = fast_kernel(overlap ? "pingpong_overlap" : "pingpong", TIRX_F16, 128, causal, varlen);
    const char *name = tirx_kernel_name(k), *src = tirx_kernel_source(k);
    const char *loop = strstr(src, "for (int t = (int)blockIdx.x;");
    loop = loop ? strstr(loop + 1, "for (int t = (int)blockIdx.x;") : NULL; /* the consumers' */
    cr_assert_not_null(loop, "%s", name);
    const char *arm = strstr(src, "if ((c == 1)) {");
    cr_assert(arm && arm < loop && strstr(arm, PASS1) < loop, "%s: barrier 3 armed", name);
    cr_expect_eq(count_in(src, loop, PASS1), 1, "%s", name);
    const char *last = strstr(loop, "if ((c == 0)) {\n      tirx_named_bar_sync(3, 256);");
    cr_assert_not_null(last, "%s: the last pass taken after the tile loop", name);
    /* a wait and a pass per turn, both consumers' in one if/else */
    int turns = overlap ? 2 : 3;
    cr_expect_eq(count_in(loop, last, SYNC0), turns, "%s", name);
    cr_expect_eq(count_in(loop, last, SYNC1), turns, "%s", name);
    cr_expect_eq(count_in(loop, last, PASS0), turns, "%s", name);
    cr_expect_eq(count_in(loop, last, PASS1), turns, "%s", name);
    enum { NBODY = 14 };
    static const char *const serial_body[NBODY] = {SS, "tirx_wgmma_commit();", PASS0, PASS1,
        "tirx_wgmma_wait<0>();", "tirx_mbar_arrive(&k_empty[", "tirx_ex2(", "tirx_mbar_wait(&v_full[",
        SYNC0, SYNC1, RS, "tirx_wgmma_commit();", "tirx_wgmma_wait<0>();", "it = (it + 1);"};
    static const char *const overlap_body[NBODY] = {"tirx_mbar_wait(&k_full[", SYNC0, SYNC1, SS,
        "tirx_wgmma_commit();", "tirx_mbar_wait(&v_full[", RS, "tirx_wgmma_commit();", PASS0, PASS1,
        "tirx_wgmma_wait<1>();", "tirx_ex2(", "tirx_wgmma_wait<0>();", "it = (it + 1);"};
    const char *const *body = overlap ? overlap_body : serial_body;
    const char *loops[2] = {strstr(loop, " jm = "), strstr(loop, " ju = ")}; /* the fors */
    for (int l = 0; l < 2; l++) {
      cr_assert_not_null(loops[l], "%s", name);
      const char *next = strstr(loops[l], "it = (it + 1);");
      cr_assert_not_null(next, "%s", name);
      next += strlen("it = (it + 1);");
      int at = in_order(loops[l], next, body, NBODY);
      cr_expect_eq(at, NBODY, "%s: loop %d lacks '%s' in order", name, l, at < NBODY ? body[at] : "");
      cr_expect_eq(count_in(loops[l], next, SYNC0), 1, "%s", name);
      cr_expect_eq(count_in(loops[l], next, PASS0), 1, "%s", name);
    }
    if (!overlap) { /* the tile's first turn before its loops, its last pass after them */
      const char *q = strstr(loop, "tirx_mbar_wait(&q_full[0]");
      cr_assert_not_null(q, "%s", name);
      static const char *const around[] = {SYNC0, SYNC1, " jm = ", " ju = ",
                                           "it = (it + 1);", PASS0, PASS1, "tirx_mbar_arrive(&q_empty[0]);"};
      const char *ju = loops[1];
      cr_expect_eq(in_order(q, ju, around, 3), 3, "%s", name);
      cr_expect_eq(in_order(ju, last, around + 3, 5), 5, "%s", name);
    } else { /* no turn before the first loop, nor after the last (the last P V) */
      const char *after = strstr(loops[1], "it = (it + 1);");
      const char *epilogue = strstr(loop, "tirx_named_bar_sync(1, 128);");
      cr_assert(after && epilogue, "%s", name);
      cr_expect_eq(count_in(loop, loops[0], "_named_bar_"), 0, "%s", name);
      cr_expect_eq(count_in(after, epilogue, "_named_bar_"), 0, "%s", name);
      cr_expect_eq(count_in(after, epilogue, RS), 8, "%s: the last P V", name);
    }
    tirx_kernel_release(k);
  }
  const char *others[2] = {NULL, "overlap"};
  for (int i = 0; i < 2; i++) {
    tirx_kernel *k = fast_kernel(others[i], TIRX_F16, 128, true, false);
    const char *src = tirx_kernel_source(k);
    const char *turns[4] = {SYNC0, SYNC1, PASS0, PASS1};
    for (int t = 0; t < 4; t++)
      cr_expect_null(strstr(src, turns[t]), "%s: %s", tirx_kernel_name(k), turns[t]);
    tirx_kernel_release(k);
  }
}

/* Every variant of a schedule's kernel (dtype x D x causal x varlen) compiles with NVRTC for
 * sm_90a, keeps its wgmma wait_group 1s (waits1) and named-barrier arrivals (arrives) in the
 * PTX, uses no local memory, and under ptxas -v spills nothing, keeps the wgmma pipeline (no
 * "wgmma.mma_async instructions are serialized") and uses the barriers the kernel names
 * (barriers: 3 without the ping-pong, 0 to 2; 5 with it, its 3 and 4 too). */
static void compiles_without_spills(const char *schedule, int waits1, int arrives, int barriers) {
  tirx_runtime *rt = no_device();
  static const tirx_dtype dts[2] = {TIRX_BF16, TIRX_F16};
  char used[32];
  snprintf(used, sizeof used, "used %d barriers", barriers);
  for (int v = 0; v < 16; v++) {
    tirx_kernel *k = fast_kernel(schedule, dts[v & 1], v & 2 ? 128 : 64, v & 4, v & 8);
    tirx_compiled *c = NULL;
    cr_assert_eq(tirx_compile(rt, k, "sm_90a", &c), TIRX_OK, "%s: %s", tirx_kernel_name(k),
                 tirx_last_error());
    const char *ptx = tirx_compiled_ptx(c), *end = ptx + strlen(ptx);
    cr_expect_null(strstr(ptx, ".local"), "%s uses local memory", tirx_kernel_name(k));
    cr_expect_eq(count_in(ptx, end, "wgmma.wait_group.sync.aligned 1;"), waits1, "%s",
                 tirx_kernel_name(k));
    cr_expect_eq(count_in(ptx, end, "bar.arrive "), arrives, "%s", tirx_kernel_name(k));
    char *rep = test_ptxas_report(ptx);
    if (rep) {
      cr_expect(strstr(rep, "0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads"),
                "%s:\n%s", tirx_kernel_name(k), rep);
      cr_expect_null(strstr(rep, "serialized"), "%s:\n%s", tirx_kernel_name(k), rep);
      cr_expect(strstr(rep, used), "%s:\n%s", tirx_kernel_name(k), rep);
      free(rep);
    } else {
      cr_log_warn("ptxas not found: the spill check is skipped");
    }
    tirx_compiled_destroy(c);
    tirx_kernel_release(k);
  }
  tirx_runtime_destroy(rt);
}

Test(kernels_attention, every_overlap_variant_compiles_without_spills, .timeout = 600) {
  compiles_without_spills("overlap", 2, 0, 3);
}

/* pingpong: an arrival arms barrier 3, two a pass (one per consumer's branch) after each loop's
 * S and after the tile's last P V; pingpong_overlap: the arming and each loop's pass. */
Test(kernels_attention, every_pingpong_variant_compiles_without_spills, .timeout = 600) {
  compiles_without_spills("pingpong", 0, 1 + 2 * 3, 5);
}

Test(kernels_attention, every_pingpong_overlap_variant_compiles_without_spills, .timeout = 600) {
  compiles_without_spills("pingpong_overlap", 2, 1 + 2 * 2, 5);
}

/* ---- head dim 256 (attention_fast.c's plan_of: BN = 64, O over Q's bytes) ---- */

/* Fixed length at D = 256: q, o [2, 100, 8, 256], k, v [2, 120, 2, 256], lse [2, 8, 100];
 * varlen: q, o [300, 8, 256], k, v [400, 1, 256], lse [8, 300] with VQ's sequences. */
#define Q256 T4(0x100000, BF, 2, 100, 8, 256)
#define K256 T4(0x200000, BF, 2, 120, 2, 256)
#define V256 T4(0x300000, BF, 2, 120, 2, 256)
#define O256 T4(0x400000, BF, 2, 100, 8, 256)
#define VQ256 T3(0x100000, BF, 300, 8, 256)
#define VK256 T3(0x200000, BF, 400, 1, 256)
#define VV256 T3(0x300000, BF, 400, 1, 256)
#define VO256 T3(0x400000, BF, 300, 8, 256)

/* D 64, 128 and 256 pass the checks, D 256 builds on both paths and reaches the launch (no
 * device here); other head dims are refused by the op, the default kernel's build and the
 * reference kernel's build, each naming its argument. */
Test(kernels_attention, d256_is_accepted_and_other_head_dims_are_not, .timeout = 120) {
  tirx__attn_call c;
  bool ref;
  cr_assert_eq(tirx__attention_check(NULL, Q256, K256, V256, O256, L, NULL, &c, &ref), TIRX_OK, "%s",
               tirx_last_error());
  cr_expect(c.d == 256 && c.h == 8 && c.h_kv == 2 && !c.varlen && fabs(c.scale - 0.0625) < 1e-15);
  cr_expect(c.q_stride[0] == 100 * 8 * 256 && c.q_stride[1] == 8 * 256 && c.q_stride[2] == 256);
  cr_assert_eq(tirx__attention_check(NULL, VQ256, VK256, VV256, VO256, VL, GOOD_VARLEN, &c, &ref),
               TIRX_OK, "%s", tirx_last_error());
  cr_expect(c.d == 256 && c.varlen && c.h_kv == 1);

  tirx_runtime *rt = no_device();
  char want[1024];
  snprintf(want, sizeof want, "%s: tirx_launch: no CUDA device: %s", FN, tirx_runtime_device_error(rt));
  unsetenv("TIRX_ATTN_SCHEDULE");
  expect_error(tirx_op_attention(rt, NULL, Q256, K256, V256, O256, L, NULL, NULL), TIRX_E_NO_DEVICE,
               want);
  cr_expect_eq(tirx_kernels_cached(), 1);
  expect_error(tirx_op_attention(rt, &(tirx_attention_options){.causal = true}, VQ256, VK256, VV256,
                                 VO256, NULL, GOOD_VARLEN, NULL),
               TIRX_E_NO_DEVICE, want);
  cr_expect_eq(tirx_kernels_cached(), 2);
  expect_error(tirx_op_attention(rt, &(tirx_attention_options){.path = "reference"}, Q256, K256, V256,
                                 O256, L, NULL, NULL),
               TIRX_E_NO_DEVICE, want);
  cr_expect_eq(tirx_kernels_cached(), 3);
  tirx_kernels_clear();

  static const int64_t bad[4] = {32, 192, 255, 512};
  for (int i = 0; i < 4; i++) {
    const int64_t d = bad[i];
    ERR(tirx_op_attention(rt, NULL, T4(0x100000, BF, 2, 100, 8, d), T4(0x200000, BF, 2, 120, 2, d),
                          T4(0x300000, BF, 2, 120, 2, d), T4(0x400000, BF, 2, 100, 8, d), L, NULL,
                          NULL),
        TIRX_E_INVALID_ARG, "%s: q has shape [2, 100, 8, %lld], expected [B, S_q, H, D] with D 64, "
        "128 or 256", FN, (long long)d);
    ERR(tirx_op_attention(rt, NULL, T3(0x100000, BF, 300, 8, d), T3(0x200000, BF, 400, 1, d),
                          T3(0x300000, BF, 400, 1, d), T3(0x400000, BF, 300, 8, d), VL, GOOD_VARLEN,
                          NULL),
        TIRX_E_INVALID_ARG, "%s: q has shape [300, 8, %lld], expected [T_q, H, D] with D 64, 128 or "
        "256", FN, (long long)d);
    tirx_kernel *k = PTR(1);
    ERR(tirx_kernels_attention_build(NULL, BF, (int)d, 8, 2, false, &k), TIRX_E_INVALID_ARG,
        "tirx_kernels_attention_build: d is %lld, expected 64, 128 or 256", (long long)d);
    cr_expect_null(k);
    k = PTR(1);
    ERR(tirx__attention_ref_build(TIRX_F16, (int)d, true, true, &k), TIRX_E_INVALID_ARG,
        "tirx_op_attention reference kernel: d is %lld, expected 64, 128 or 256", (long long)d);
    cr_expect_null(k);
  }
  cr_expect_eq(tirx_kernels_cached(), 0, "a bad call built a kernel");
  tirx_runtime_destroy(rt);
}

/* D = 256 has the serial schedule only: the other schedules are refused by the build and the
 * op with a message naming the schedule and D, building and launching nothing; "serial" and
 * unset are the default kernel; D = 128 keeps every schedule. */
Test(kernels_attention, d256_refuses_the_other_schedules, .timeout = 120) {
  static const char *const others[3] = {"overlap", "pingpong", "pingpong_overlap"};
  tirx_runtime *rt = no_device();
  for (int i = 0; i < 3; i++) {
    cr_assert_eq(setenv("TIRX_ATTN_SCHEDULE", others[i], 1), 0);
    tirx_kernel *k = PTR(1);
    ERR(tirx_kernels_attention_build(NULL, TIRX_F16, 256, 8, 2, i == 1, &k), TIRX_E_INVALID_ARG,
        "tirx_kernels_attention_build: TIRX_ATTN_SCHEDULE is \"%s\", which D = 256 does not have "
        "(its kernels spill there): expected serial (the default) at D = 256", others[i]);
    cr_expect_null(k);
    ERR(tirx_op_attention(rt, NULL, Q256, K256, V256, O256, L, NULL, NULL), TIRX_E_INVALID_ARG,
        "%s: TIRX_ATTN_SCHEDULE is \"%s\", which D = 256 does not have (its kernels spill there): "
        "expected serial (the default) at D = 256", FN, others[i]);
    ERR(tirx_op_attention(rt, &(tirx_attention_options){.causal = true}, VQ256, VK256, VV256, VO256,
                          VL, GOOD_VARLEN, NULL),
        TIRX_E_INVALID_ARG, "%s: TIRX_ATTN_SCHEDULE is \"%s\", which D = 256 does not have (its "
        "kernels spill there): expected serial (the default) at D = 256", FN, others[i]);
    cr_expect_eq(tirx_kernels_cached(), 0, "%s: a refused call built a kernel", others[i]);
    /* the reference path has no schedule */
    char want[1024];
    snprintf(want, sizeof want, "%s: tirx_launch: no CUDA device: %s", FN, tirx_runtime_device_error(rt));
    expect_error(tirx_op_attention(rt, &(tirx_attention_options){.path = "reference"}, Q256, K256,
                                   V256, O256, L, NULL, NULL),
                 TIRX_E_NO_DEVICE, want);
    tirx_kernels_clear();
  }
  unsetenv("TIRX_ATTN_SCHEDULE");
  tirx_kernel *k = fast_kernel("serial", BF, 256, true, false);
  cr_expect_str_eq(tirx_kernel_name(k), "attention_bf16_d256_causal");
  tirx_kernel_release(k);
  k = fast_kernel(NULL, TIRX_F16, 256, false, true);
  cr_expect_str_eq(tirx_kernel_name(k), "attention_f16_d256_varlen");
  tirx_kernel_release(k);
  k = fast_kernel("pingpong_overlap", BF, 128, true, false);
  cr_expect_str_eq(tirx_kernel_name(k), "attention_bf16_d128_causal_pingpong_overlap");
  tirx_kernel_release(k);
  tirx_runtime_destroy(rt);
}

/* The default path's launch of checked calls passes the launch checks (TMA boxes included):
 * shared memory as plan_of's table says (D = 256: 197,776 bytes, O over Q; D = 128 the same
 * with an O tile; D = 64 99,472), 384 threads, a grid of min(pairs x B x H, sms) CTAs, the
 * tensor maps of Q, K, V and (fixed length) O. */
Test(kernels_attention, the_default_launch_plans_at_every_head_dim, .timeout = 120) {
  tirx__launch_plan *plan = malloc(sizeof *plan);
  struct {
    const tirx_tensor_arg *q, *k, *v, *o, *lse;
    const tirx_attention_varlen *vl;
    bool causal;
    int sms;
    uint32_t grid, smem;
    int ntmaps;
  } cases[] = {
      {Q256, K256, V256, O256, L, NULL, false, 0, 16, 197776, 4},
      {Q256, K256, V256, O256, NULL, NULL, true, 7, 7, 197776, 4},
      {VQ256, VK256, VV256, VO256, VL, GOOD_VARLEN, true, 0, 3 * 8, 197776, 3},
      {VQ256, VK256, VV256, VO256, NULL, GOOD_VARLEN, false, 0, 3 * 8, 197776, 3},
      {VQ, VK, VV, VO, VL, GOOD_VARLEN, false, 0, 3 * 8, 197776, 3},
      {Q, K, V, O, L, NULL, true, 0, 16, 99472, 4},
  };
  unsetenv("TIRX_ATTN_SCHEDULE");
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    tirx__attn_call c;
    bool r;
    tirx_attention_options o = {.causal = cases[i].causal, .sms = cases[i].sms};
    cr_assert_eq(tirx__attention_check(&o, cases[i].q, cases[i].k, cases[i].v, cases[i].o,
                                       cases[i].lse, cases[i].vl, &c, &r),
                 TIRX_OK, "case %zu: %s", i, tirx_last_error());
    tirx_kernel *k = NULL;
    cr_assert_eq(tirx__attention_fast_get(&c, &k), TIRX_OK, "case %zu: %s", i, tirx_last_error());
    tirx__attn_args a;
    tirx__attention_fast_args(&c, &a);
    cr_expect_eq(a.n, tirx_kernel_num_params(k), "case %zu", i);
    cr_assert_eq(tirx__kernel_plan(k, "tirx_launch", a.args, a.n, plan), TIRX_OK, "case %zu: %s", i,
                 tirx_last_error());
    cr_expect_eq(plan->shared_bytes, cases[i].smem, "case %zu: %u bytes", i, plan->shared_bytes);
    cr_expect(plan->block[0] == 384 && plan->block[1] == 1 && plan->block[2] == 1, "case %zu", i);
    cr_expect(plan->grid[0] == cases[i].grid && plan->grid[1] == 1 && plan->grid[2] == 1,
              "case %zu: grid %u", i, plan->grid[0]);
    cr_expect_eq(plan->ntmaps, cases[i].ntmaps, "case %zu", i);
    tirx_kernel_release(k);
  }
  cr_expect_eq(tirx_kernels_cached(), 6, "one kernel per (dtype, D, causal, varlen)");
  tirx_kernels_clear();
  free(plan);
}

/* The first needle found in [from, to) after p (NULL: none). */
static const char *after(const char *p, const char *to, const char *needle) {
  const char *q = p ? strstr(p, needle) : NULL;
  return q && q < to ? q : NULL;
}

/*
 * The O-over-Q handoff at D = 256 in the source (the epilogue's comment in attention_fast.c):
 * O's view starts at Q's byte (tirx_smem + 0) and is the only shared tensor there besides Q;
 * Q's one release is after the O store: past the last KV loop's wgmma wait_group 0, the
 * barrier (the warpgroup's own at fixed length, both consumers' for varlen), O's stmatrix
 * writes, the proxy fence and the warpgroup's barrier, then (fixed) the TMA store and its
 * read wait or (varlen) the row copies, a proxy fence and the warpgroup's barrier. The
 * producer loads a tile's first KV block before its Q. D = 128 keeps its own O tile and
 * releases Q right after the KV loops.
 */
Test(kernels_attention, d256_writes_o_over_q_after_the_last_reads, .timeout = 120) {
  for (int v = 0; v < 4; v++) {
    bool causal = v & 1, varlen = v & 2;
    tirx_kernel *k = fast_kernel(NULL, v & 1 ? TIRX_F16 : BF, 256, causal, varlen);
    const char *name = tirx_kernel_name(k), *src = tirx_kernel_source(k), *end = src + strlen(src);
    const char *dt = v & 1 ? "tirx_f16" : "tirx_bf16";
    char qs[64], os[64];
    snprintf(qs, sizeof qs, "%s *Qs = (%s *)(tirx_smem + 0);", dt, dt);
    snprintf(os, sizeof os, "%s *Os = (%s *)(tirx_smem + 0);", dt, dt);
    cr_expect_not_null(strstr(src, qs), "%s", name);
    cr_expect_not_null(strstr(src, os), "%s", name);
    cr_expect_eq(count_in(src, end, "(tirx_smem + 0);"), 4, "%s: Qs, Qs_box, Os, Os_box", name);
    cr_expect_eq(count_in(src, end, "tirx_mbar_arrive(&q_empty[0]);"), 1, "%s", name);
    /* the consumers' tile loop, from the last KV loop's end */
    const char *loop = strstr(src, "for (int t = (int)blockIdx.x;");
    loop = loop ? strstr(loop + 1, "for (int t = (int)blockIdx.x;") : NULL;
    cr_assert_not_null(loop, "%s", name);
    const char *ju = strstr(loop, " ju = "), *p = ju;
    cr_assert_not_null(ju, "%s", name);
    p = after(p, end, "tirx_wgmma_wait<0>();");
    p = after(p, end, "tirx_wgmma_wait<0>();"); /* the P V's, the loop body's last */
    p = after(p, end, "it = (it + 1);");
    const char *last_wait = p;
    p = after(p, end, varlen ? "tirx_named_bar_sync(5, 256);" : "tirx_named_bar_sync(1, 128);");
    cr_assert_not_null(p, "%s: the barrier before O is written", name);
    cr_expect_null(after(last_wait, p, "q_empty"), "%s: Q released before O", name);
    cr_expect_null(after(last_wait, p, "Os["), "%s: O written before the barrier", name);
    p = after(p, end, "tirx_stmatrix_x4(&Os[");
    p = after(p, end, "tirx_fence_proxy_async();");
    p = after(p, end, "tirx_named_bar_sync(1, 128);");
    cr_assert_not_null(p, "%s: O written, fenced, the warpgroup's barrier", name);
    if (!varlen) {
      p = after(p, end, "tirx_tma_store_4d(&O_tmap,");
      p = after(p, end, "tirx_bulk_wait<0, 1>();");
      p = after(p, end, "tirx_tma_store_4d(&O_tmap,"); /* the second consumer's */
      p = after(p, end, "tirx_bulk_wait<0, 1>();");
    } else {
      p = after(p, end, "= Os_box[");
      p = after(p, end, "tirx_fence_proxy_async();");
      p = after(p, end, "tirx_named_bar_sync(1, 128);");
    }
    cr_assert_not_null(p, "%s: O stored", name);
    p = after(p, end, "if ((tid_wg == 0)) {\n            tirx_mbar_arrive(&q_empty[0]);");
    cr_expect_not_null(p, "%s: Q released by the warpgroup's first thread after the store", name);
    cr_expect_eq(count_in(src, end, "tirx_named_bar_sync(5, 256);"), varlen ? 1 : 0, "%s", name);
    /* the producer: the tile's first K and V, then Q, then the other blocks */
    const char *prod = strstr(src, "tirx_setmaxnreg_dec<24>();"), *q = after(prod, end, "&q_full[0], ");
    const char *k0 = after(prod, end, "&K_tmap, &k_full[s]"), *v0 = after(prod, end, "&V_tmap, &v_full[s]");
    cr_assert(prod && q && k0 && v0 && k0 < v0 && v0 < q, "%s: K_0, V_0, Q", name);
    cr_expect_not_null(after(q, loop, "for (int jj = 1; jj < nblocks; ++jj) {"), "%s", name);
    tirx_kernel_release(k);
  }
  tirx_kernel *k = fast_kernel(NULL, BF, 128, false, false);
  const char *src = tirx_kernel_source(k);
  cr_expect_not_null(strstr(src, "tirx_bf16 *Os = (tirx_bf16 *)(tirx_smem + 163840);"));
  cr_expect_null(strstr(src, "tirx_named_bar_sync(5,"));
  tirx_kernel_release(k);
}

/* Every D = 256 variant (dtype x causal x varlen) compiles with NVRTC for sm_90a with the
 * kernel's instructions in the PTX (S = Q K^T as wgmma SS m64n64k16, its A a descriptor; P V
 * as RS m64n256k16, its A registers; the TMA loads of Q (5-D), K and V (4-D) and, fixed
 * length, the TMA store of O; setmaxnreg 24 and 240), no local memory, and under ptxas -v no
 * spills, no serialised wgmma, and the barriers it names (0-2; varlen 0-2 and 5). */
Test(kernels_attention, every_d256_variant_compiles_without_spills, .timeout = 600) {
  tirx_runtime *rt = no_device();
  for (int v = 0; v < 8; v++) {
    tirx_dtype dt = v & 1 ? TIRX_F16 : TIRX_BF16;
    bool causal = v & 2, varlen = v & 4;
    tirx_kernel *k = fast_kernel(NULL, dt, 256, causal, varlen);
    const char *name = tirx_kernel_name(k);
    tirx_compiled *c = NULL;
    cr_assert_eq(tirx_compile(rt, k, "sm_90a", &c), TIRX_OK, "%s: %s", name, tirx_last_error());
    const char *ptx = tirx_compiled_ptx(c), *end = ptx + strlen(ptx);
    const char *ty = dt == TIRX_F16 ? "f16.f16" : "bf16.bf16";
    char ss[96], rs[96];
    snprintf(ss, sizeof ss, "wgmma.mma_async.sync.aligned.m64n64k16.f32.%s", ty);
    snprintf(rs, sizeof rs, "wgmma.mma_async.sync.aligned.m64n256k16.f32.%s", ty);
    int nss = 0, nrs = 0;
    for (const char *p = ptx; (p = strstr(p, ss)); p += strlen(ss)) {
      const char *acc = strchr(p, '}'); /* the accumulator list, then A */
      cr_assert_not_null(acc);
      nss += strncmp(acc, "}, %rd", 6) == 0;
    }
    for (const char *p = ptx; (p = strstr(p, rs)); p += strlen(rs)) {
      const char *acc = strchr(p, '}');
      cr_assert_not_null(acc);
      nrs += strncmp(acc, "}, {", 4) == 0;
    }
    cr_expect_gt(nss, 0, "%s: no wgmma SS m64n64k16", name);
    cr_expect_gt(nrs, 0, "%s: no wgmma RS m64n256k16", name);
    cr_expect_eq(count_in(ptx, end, "wgmma.mma_async"), nss + nrs, "%s: other wgmma", name);
    cr_expect_gt(count_in(ptx, end, "cp.async.bulk.tensor.5d.shared::cluster.global"), 0, "%s", name);
    cr_expect_gt(count_in(ptx, end, "cp.async.bulk.tensor.4d.shared::cluster.global"), 0, "%s", name);
    cr_expect_eq(count_in(ptx, end, "cp.async.bulk.tensor.4d.global.shared::cta") > 0, !varlen, "%s",
                 name);
    cr_expect_eq(count_in(ptx, end, "setmaxnreg.dec.sync.aligned.u32 24;"), 1, "%s", name);
    cr_expect_eq(count_in(ptx, end, "setmaxnreg.inc.sync.aligned.u32 240;"), 1, "%s", name);
    cr_expect_null(strstr(ptx, ".local"), "%s uses local memory", name);
    char *rep = test_ptxas_report(ptx);
    if (rep) {
      cr_expect(strstr(rep, "0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads"),
                "%s:\n%s", name, rep);
      cr_expect_null(strstr(rep, "serialized"), "%s:\n%s", name, rep);
      cr_expect(strstr(rep, varlen ? "used 6 barriers" : "used 3 barriers"), "%s:\n%s", name, rep);
      free(rep);
    } else {
      cr_log_warn("ptxas not found: the spill check is skipped");
    }
    tirx_compiled_destroy(c);
    tirx_kernel_release(k);
  }
  tirx_runtime_destroy(rt);
}

/* The reference kernel at D = 256 (64 values of q and of the accumulator a lane): every
 * variant (dtype x varlen x lse) compiles for sm_90a without local memory. */
Test(kernels_attention, every_d256_reference_variant_compiles, .timeout = 600) {
  tirx_runtime *rt = no_device();
  for (int v = 0; v < 8; v++) {
    tirx_kernel *k = NULL;
    cr_assert_eq(tirx__attention_ref_build(v & 1 ? TIRX_F16 : TIRX_BF16, 256, v & 2, v & 4, &k),
                 TIRX_OK, "%s", tirx_last_error());
    tirx_compiled *c = NULL;
    cr_assert_eq(tirx_compile(rt, k, "sm_90a", &c), TIRX_OK, "%s: %s", tirx_kernel_name(k),
                 tirx_last_error());
    cr_expect_null(strstr(tirx_compiled_ptx(c), ".local"), "%s uses local memory",
                   tirx_kernel_name(k));
    tirx_compiled_destroy(c);
    tirx_kernel_release(k);
  }
  tirx_runtime_destroy(rt);
}
