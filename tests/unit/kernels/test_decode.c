/* Decode attention over a paged KV cache and reshape_and_cache (src/kernels/decode.c) on the
 * CPU: the split choice (tirx_kernels_decode_plan) for the shapes the brief names, every
 * documented error of the build, plan and op functions (status and exact message), that valid
 * calls get past the checks to the device, and that every variant compiles with NVRTC for
 * sm_90a with TMA page loads and wgmma (the GPU suite runs them:
 * tests/gpu/test_decode.c). */
#include <string.h>

#include "../helpers.h"

#define PTR(v) ((void *)(uintptr_t)(v))
#define OK(call) cr_assert_eq((call), TIRX_OK, "%s: %s", #call, tirx_last_error())

static tirx_decode_plan plan(const tirx_decode_options *o, int b, int h, int hkv, int ql, int d,
                             int64_t maxl) {
  tirx_decode_plan p = {.size = sizeof p};
  cr_assert_eq(tirx_kernels_decode_plan(o, b, h, hkv, ql, d, maxl, &p), TIRX_OK, "%s",
               tirx_last_error());
  return p;
}

Test(kernels_decode, the_split_fills_the_gpu_for_one_long_and_many_short_sequences) {
  /* B = 1, 128k tokens, 8 KV heads: 8 items unsplit; 16 splits of 128 tiles: 128 items, one
   * round of the 132 persistent CTAs at 97% */
  tirx_decode_plan p = plan(NULL, 1, 32, 8, 1, 128, 131072);
  cr_assert_eq(p.splits, 16);
  cr_assert_eq(p.tiles_per_split, 128);
  cr_assert_eq(p.ctas, 128);
  cr_assert_geq((int64_t)p.splits * p.tiles_per_split * TIRX_DECODE_TILE, 131072);
  cr_assert_eq(p.workspace_bytes, (int64_t)8 * 16 * 4 * (128 + 2) * 4);
  /* B = 256, 512 tokens: 2048 items unsplit, 16 rounds of 132 CTAs at 97%; no workspace */
  p = plan(NULL, 256, 32, 8, 1, 128, 512);
  cr_assert_eq(p.splits, 1);
  cr_assert_eq(p.tiles_per_split, 8);
  cr_assert_eq(p.ctas, 132);
  cr_assert_eq(p.workspace_bytes, 0);
  /* the bench's shapes: B x H_kv = 8, 64, 256, 1024 items unsplit */
  cr_assert_eq(plan(NULL, 8, 32, 8, 1, 128, 16384).splits, 2); /* 128 of 132 */
  cr_assert_eq(plan(NULL, 32, 32, 8, 1, 128, 1024).splits, 1); /* 256 of 264: 97% */
  cr_assert_eq(plan(NULL, 33, 32, 8, 1, 128, 1024).splits, 1); /* 264: two whole rounds */
  cr_assert_eq(plan(NULL, 17, 32, 8, 1, 128, 65536).splits, 12); /* 136 x 12 of 13 rounds */
  cr_assert_eq(plan(NULL, 1, 32, 8, 1, 128, 1024).splits, 8);  /* 16 tiles: 2 a split */
  cr_assert_eq(plan(NULL, 1, 32, 8, 1, 128, 512).splits, 4);
  cr_assert_eq(plan(NULL, 1, 32, 8, 1, 128, 64).splits, 1);    /* one tile */
  /* one KV head: 126 splits of 17 tiles asked, 121 cover the 2048 */
  cr_assert_eq(plan(NULL, 1, 8, 1, 8, 128, 131072).splits, 121);
  /* the SM count */
  cr_assert_eq(plan(&(tirx_decode_options){.sms = 16}, 2, 32, 8, 1, 128, 131072).splits, 1);
  cr_assert_eq(plan(&(tirx_decode_options){.sms = 8}, 2, 32, 8, 1, 128, 131072).ctas, 8);
  cr_assert_eq(plan(&(tirx_decode_options){.sms = 64}, 1, 32, 8, 1, 128, 131072).splits, 8);
  /* forced: as asked, at most the tiles of the longest context */
  cr_assert_eq(plan(&(tirx_decode_options){.splits = 1}, 1, 32, 8, 1, 128, 131072).splits, 1);
  cr_assert_eq(plan(&(tirx_decode_options){.splits = 7}, 256, 32, 8, 1, 128, 32768).splits, 7);
  cr_assert_eq(plan(&(tirx_decode_options){.splits = 7}, 1, 32, 8, 1, 128, 100).splits, 2);
  /* 7 forced over 512 tiles: 74 each, the last split 68 */
  p = plan(&(tirx_decode_options){.splits = 7}, 6, 8, 2, 4, 64, 32768);
  cr_assert(p.splits == 7 && p.tiles_per_split == 74, "%d x %d", p.splits, p.tiles_per_split);
  cr_assert_eq(p.ctas, 84);
  cr_assert_eq(p.workspace_bytes, (int64_t)6 * 2 * 7 * 16 * (64 + 2) * 4);
}

/* max_context past int32 (the op's context lengths are int32): the plan refused it, where it
 * used to report tiles_per_split wrapped to an int (2^34 tiles unsplit gave 0). Found by the
 * session 16 review. */
Test(kernels_decode, the_plan_refuses_a_max_context_past_int32) {
  tirx_decode_plan p = {.size = sizeof p};
  expect_error(tirx_kernels_decode_plan(&(tirx_decode_options){.splits = 1}, 1, 32, 8, 1, 128,
                                        (int64_t)1 << 40, &p),
               TIRX_E_INVALID_ARG, "tirx_kernels_decode_plan: max_context is 1099511627776, "
               "expected at most 2^31 - 1 (context lengths are int32)");
  expect_error(tirx_kernels_decode_plan(NULL, 1, 32, 8, 1, 128, (int64_t)INT32_MAX + 1, &p),
               TIRX_E_INVALID_ARG, "tirx_kernels_decode_plan: max_context is 2147483648, "
               "expected at most 2^31 - 1 (context lengths are int32)");
  /* the largest the op can see still plans, tiles_per_split in range */
  p = plan(&(tirx_decode_options){.splits = 1}, 1, 32, 8, 1, 128, INT32_MAX);
  cr_assert_eq(p.splits, 1);
  cr_assert_eq(p.tiles_per_split, (int)(((int64_t)INT32_MAX + TIRX_DECODE_TILE - 1) / TIRX_DECODE_TILE));
}

Test(kernels_decode, plan_and_build_errors_name_the_argument) {
  tirx_decode_plan p = {0};
  tirx_kernel *k = NULL;
  expect_error(tirx_kernels_decode_plan(NULL, 1, 32, 8, 1, 128, 1, NULL), TIRX_E_NULL_ARG,
               "tirx_kernels_decode_plan: out is NULL");
  expect_error(tirx_kernels_decode_plan(NULL, 0, 32, 8, 1, 128, 1, &p), TIRX_E_INVALID_ARG,
               "tirx_kernels_decode_plan: batch, h, h_kv, q_len, d, max_context are 0, 32, 8, 1, "
               "128, 1, expected >= 1");
  expect_error(tirx_kernels_decode_plan(NULL, 1, 32, 6, 1, 128, 1, &p), TIRX_E_INVALID_ARG,
               "tirx_kernels_decode_plan: h is 32, expected a multiple of h_kv (6)");
  expect_error(tirx_kernels_decode_plan(&(tirx_decode_options){.splits = 257}, 1, 32, 8, 1, 128,
                                        1, &p),
               TIRX_E_INVALID_ARG,
               "tirx_kernels_decode_plan: opts->splits is 257, expected 0 (chosen) to 256");
  expect_error(tirx_kernels_decode_plan(&(tirx_decode_options){.sms = -1}, 1, 32, 8, 1, 128, 1, &p),
               TIRX_E_INVALID_ARG, "tirx_kernels_decode_plan: opts->sms is -1, expected 0 (132) to 1024");
  expect_error(tirx_kernels_decode_plan(&(tirx_decode_options){.scale = -1}, 1, 32, 8, 1, 128, 1, &p),
               TIRX_E_INVALID_ARG, "tirx_kernels_decode_plan: opts->scale is -1, expected 0 (1 / "
               "sqrt(D)) or a finite scale > 0");
  expect_error(tirx_kernels_decode_build(TIRX_DECODE_UNSPLIT, TIRX_BF16, 128, 16, 32, 8, 1, false, NULL),
               TIRX_E_NULL_ARG, "tirx_kernels_decode_build: out is NULL");
  expect_error(tirx_kernels_decode_build((tirx_decode_kernel)3, TIRX_BF16, 128, 16, 32, 8, 1, false, &k),
               TIRX_E_INVALID_ARG, "tirx_kernels_decode_build: which is 3, expected a "
               "tirx_decode_kernel (0 to 2)");
  expect_error(tirx_kernels_decode_build(TIRX_DECODE_UNSPLIT, TIRX_F32, 128, 16, 32, 8, 1, false, &k),
               TIRX_E_INVALID_ARG, "tirx_kernels_decode_build: dtype is f32, expected f16 or bf16");
  expect_error(tirx_kernels_decode_build(TIRX_DECODE_UNSPLIT, TIRX_BF16, 96, 16, 32, 8, 1, false, &k),
               TIRX_E_INVALID_ARG, "tirx_kernels_decode_build: d is 96, expected 64 or 128");
  expect_error(tirx_kernels_decode_build(TIRX_DECODE_UNSPLIT, TIRX_BF16, 128, 8, 32, 8, 1, false, &k),
               TIRX_E_INVALID_ARG, "tirx_kernels_decode_build: page_size is 8, expected 16, 32 or 64");
  expect_error(tirx_kernels_decode_build(TIRX_DECODE_UNSPLIT, TIRX_BF16, 128, 16, 6, 4, 1, false, &k),
               TIRX_E_INVALID_ARG, "tirx_kernels_decode_build: h is 6 and h_kv 4, expected h a "
               "multiple of h_kv >= 1");
  expect_error(tirx_kernels_decode_build(TIRX_DECODE_UNSPLIT, TIRX_BF16, 128, 16, 32, 8, 9, false, &k),
               TIRX_E_INVALID_ARG, "tirx_kernels_decode_build: q_len is 9, expected 1 to 8");
  expect_error(tirx_kernels_decode_build(TIRX_DECODE_UNSPLIT, TIRX_BF16, 128, 16, 16, 1, 8, false, &k),
               TIRX_E_INVALID_ARG, "tirx_kernels_decode_build: (h / h_kv) * q_len is 16 * 8, "
               "expected at most 64");
  expect_error(tirx_kernels_reshape_and_cache_build(TIRX_BF16, 128, 48, 8, &k), TIRX_E_INVALID_ARG,
               "tirx_kernels_reshape_and_cache_build: page_size is 48, expected 16, 32 or 64");
  cr_assert_null(k);
}

/* Found by tools/fuzz_ops under UBSan: the plan took any int for its sizes, and max_context
 * near INT64_MAX overflowed the tile count, d near INT_MAX the workspace bytes (d + 2); the
 * builds took any h_kv, and reshape_and_cache's h_kv * d overflowed int. Both now refuse what
 * tirx_op_decode_attention refuses. */
Test(kernels_decode, plan_and_builds_refuse_sizes_past_the_ops_limits) {
  tirx_decode_plan p = {0};
  tirx_kernel *k = NULL;
  expect_error(tirx_kernels_decode_plan(NULL, 1, 32, 8, 1, 128, INT64_MAX, &p),
               TIRX_E_INVALID_ARG, "tirx_kernels_decode_plan: max_context is "
               "9223372036854775807, expected at most 2^31 - 1 (context lengths are int32)");
  expect_error(tirx_kernels_decode_plan(NULL, 1, 32, 8, 1, INT32_MAX - 1, 1000, &p),
               TIRX_E_INVALID_ARG, "tirx_kernels_decode_plan: d is 2147483646, expected 64 or 128");
  expect_error(tirx_kernels_decode_plan(NULL, 65536, 32, 8, 1, 128, 1000, &p), TIRX_E_INVALID_ARG,
               "tirx_kernels_decode_plan: batch is 65536, expected at most 65535");
  expect_error(tirx_kernels_decode_plan(NULL, 1, 65536 * 2, 65536, 1, 128, 1000, &p),
               TIRX_E_INVALID_ARG, "tirx_kernels_decode_plan: h_kv is 65536, expected at most 65535");
  expect_error(tirx_kernels_decode_plan(NULL, 1, 32, 8, 9, 128, 1000, &p), TIRX_E_INVALID_ARG,
               "tirx_kernels_decode_plan: q_len is 9, expected 1 to 8");
  expect_error(tirx_kernels_decode_plan(NULL, 1, 128, 1, 1, 128, 1000, &p), TIRX_E_INVALID_ARG,
               "tirx_kernels_decode_plan: (h / h_kv) * q_len is 128 * 1, expected at most 64");
  expect_error(tirx_kernels_reshape_and_cache_build(TIRX_BF16, 128, 16, INT32_MAX - 1, &k),
               TIRX_E_INVALID_ARG,
               "tirx_kernels_reshape_and_cache_build: h_kv is 2147483646, expected at most 65535");
  expect_error(tirx_kernels_decode_build(TIRX_DECODE_UNSPLIT, TIRX_BF16, 128, 16, 65536, 65536, 1,
                                         false, &k),
               TIRX_E_INVALID_ARG, "tirx_kernels_decode_build: h_kv is 65536, expected at most 65535");
  /* (h / h_kv) * q_len overflowed int (2147483647 * 8 wrapped to -8 and passed) */
  expect_error(tirx_kernels_decode_build(TIRX_DECODE_UNSPLIT, TIRX_BF16, 128, 16, INT32_MAX, 1, 8,
                                         false, &k),
               TIRX_E_INVALID_ARG, "tirx_kernels_decode_build: (h / h_kv) * q_len is 2147483647 * "
               "8, expected at most 64");
  expect_error(tirx_kernels_decode_plan(NULL, 1, INT32_MAX, 1, 7, 128, 1000, &p),
               TIRX_E_INVALID_ARG, "tirx_kernels_decode_plan: (h / h_kv) * q_len is 2147483647 * "
               "7, expected at most 64");
  cr_assert_null(k);
  /* the limits themselves plan */
  cr_assert_eq(tirx_kernels_decode_plan(NULL, 65535, 64 * 4, 4, 1, 64, INT32_MAX, &p), TIRX_OK,
               "%s", tirx_last_error());
}

/* A valid call: B = 3 sequences, q_len 2, H 8 over H_kv 2, D 128, 16-token pages, a table of 4
 * columns; each test below breaks one thing. */
typedef struct call {
  int64_t qs[4], cs[4], vs[4], bts[2], cls[1], os[4], ls[3];
  int64_t *cst;
  tirx_tensor_arg q, kc, vc, bt, cl, o, lse;
  int32_t lens[3];
  tirx_decode_options opts;
} call;

static void call_init(call *c) {
  memset(c, 0, sizeof *c);
  const int64_t qs[4] = {3, 2, 8, 128}, cs[4] = {40, 16, 2, 128};
  memcpy(c->qs, qs, sizeof qs), memcpy(c->os, qs, sizeof qs);
  memcpy(c->cs, cs, sizeof cs), memcpy(c->vs, cs, sizeof cs);
  c->bts[0] = 3, c->bts[1] = 4, c->cls[0] = 3;
  c->ls[0] = 3, c->ls[1] = 2, c->ls[2] = 8;
  c->q = (tirx_tensor_arg){PTR(0x10000), TIRX_BF16, 4, c->qs, NULL};
  c->kc = (tirx_tensor_arg){PTR(0x20000), TIRX_BF16, 4, c->cs, NULL};
  c->vc = (tirx_tensor_arg){PTR(0x30000), TIRX_BF16, 4, c->vs, NULL};
  c->bt = (tirx_tensor_arg){PTR(0x40000), TIRX_I32, 2, c->bts, NULL};
  c->cl = (tirx_tensor_arg){PTR(0x50000), TIRX_I32, 1, c->cls, NULL};
  c->o = (tirx_tensor_arg){PTR(0x60000), TIRX_BF16, 4, c->os, NULL};
  c->lse = (tirx_tensor_arg){PTR(0x70000), TIRX_F32, 3, c->ls, NULL};
  c->lens[0] = 2, c->lens[1] = 64, c->lens[2] = 17;
  c->opts.context_lens_host = c->lens;
}

static tirx_status run(tirx_runtime *rt, call *c) {
  return tirx_op_decode_attention(rt, &c->opts, &c->q, &c->kc, &c->vc, &c->bt, &c->cl, &c->o,
                                  &c->lse, NULL);
}

#define FN "tirx_op_decode_attention: "
#define BAD(change, st, msg)                                                                   \
  do {                                                                                         \
    call c;                                                                                    \
    call_init(&c);                                                                             \
    change;                                                                                    \
    expect_error(run(rt, &c), st, FN msg);                                                     \
  } while (0)

static tirx_runtime *no_device(void) {
  tirx_runtime *rt = NULL;
  tirx_runtime_options o = {.compile_only = true, .cache_disabled = true};
  cr_assert_eq(tirx_runtime_create(&o, &rt), TIRX_OK, "%s", tirx_last_error());
  return rt;
}

Test(kernels_decode, the_op_checks_every_argument_before_anything_else, .timeout = 300) {
  tirx_runtime *rt = no_device();
  call c0;
  call_init(&c0);
  expect_error(tirx_op_decode_attention(NULL, &c0.opts, &c0.q, &c0.kc, &c0.vc, &c0.bt, &c0.cl,
                                        &c0.o, NULL, NULL),
               TIRX_E_NULL_ARG, FN "rt is NULL");
  expect_error(tirx_op_decode_attention(rt, NULL, &c0.q, &c0.kc, &c0.vc, &c0.bt, &c0.cl, &c0.o,
                                        NULL, NULL),
               TIRX_E_NULL_ARG, FN "opts is NULL, expected opts->context_lens_host (the B "
               "context lengths in host memory)");
  BAD(c.opts.splits = -1, TIRX_E_INVALID_ARG, "opts->splits is -1, expected 0 (chosen) to 256");
  BAD(c.q.data = NULL, TIRX_E_NULL_ARG, "q->data is NULL");
  BAD(c.q.dtype = TIRX_F32, TIRX_E_TYPE, "q has dtype f32, expected f16 or bf16");
  BAD(c.q.rank = 3, TIRX_E_INVALID_ARG, "q has rank 3, expected 4");
  BAD(c.qs[1] = 9, TIRX_E_INVALID_ARG, "q has shape [3, 9, 8, 128], expected q_len (dimension "
      "1) 1 to 8");
  BAD((c.qs[3] = 96, c.os[3] = 96), TIRX_E_INVALID_ARG, "q has head dim 96, expected 64 or 128");
  BAD(c.qs[0] = 70000, TIRX_E_INVALID_ARG, "q has batch 70000, expected at most 65535");
  BAD(c.kc.dtype = TIRX_F16, TIRX_E_TYPE, "k_cache has dtype f16, expected bf16");
  BAD(c.vc.data = PTR(0x30008), TIRX_E_INVALID_ARG, "v_cache->data 0x30008 is not aligned to 16 "
      "bytes");
  BAD(c.cs[3] = 64, TIRX_E_INVALID_ARG, "k_cache has head dim 64, expected D = 128");
  BAD((c.cs[1] = 8, c.vs[1] = 8), TIRX_E_INVALID_ARG, "k_cache has page size 8, expected 16, 32 "
      "or 64");
  BAD(c.vs[0] = 41, TIRX_E_INVALID_ARG, "v_cache has shape [41, 16, 2, 128], expected k_cache's "
      "[num_pages, page_size, H_kv, D] = [40, 16, 2, 128]");
  BAD((c.kc.strides = (int64_t[]){8192, 512, 128, 1}), TIRX_E_INVALID_ARG, "k_cache has strides "
      "[8192, 512, 128, 1], expected dense row-major");
  BAD((c.cs[2] = 3, c.vs[2] = 3), TIRX_E_INVALID_ARG, "q has 8 heads, expected a multiple of "
      "k_cache's 3 KV heads");
  BAD((c.qs[1] = 8, c.os[1] = 8, c.qs[2] = 32, c.os[2] = 32), TIRX_E_INVALID_ARG,
      "(H / H_kv) * q_len is 16 * 8, expected at most 64");
  BAD(c.bt.dtype = TIRX_I64, TIRX_E_TYPE, "block_table has dtype i64, expected i32");
  BAD(c.cl.rank = 2, TIRX_E_INVALID_ARG, "context_lens has rank 2, expected 1");
  BAD(c.o.dtype = TIRX_F16, TIRX_E_TYPE, "o has dtype f16, expected bf16");
  BAD(c.os[2] = 4, TIRX_E_INVALID_ARG, "o has shape [3, 2, 4, 128], expected q's [B, q_len, H, D] "
      "= [3, 2, 8, 128]");
  BAD(c.bts[0] = 2, TIRX_E_INVALID_ARG, "block_table has 2 rows, expected B = 3");
  BAD(c.cls[0] = 4, TIRX_E_INVALID_ARG, "context_lens has shape [4], expected [B] = [3]");
  BAD(c.lse.dtype = TIRX_BF16, TIRX_E_TYPE, "lse has dtype bf16, expected f32");
  BAD(c.ls[2] = 4, TIRX_E_INVALID_ARG, "lse has shape [3, 2, 4], expected [B, q_len, H] = [3, 2, 8]");
  BAD(c.opts.context_lens_host = NULL, TIRX_E_NULL_ARG, "opts->context_lens_host is NULL, expected "
      "the B context lengths in host memory");
  BAD(c.lens[1] = 0, TIRX_E_INVALID_ARG, "opts->context_lens_host[1] is 0, expected >= q_len (2) "
      "and >= 1");
  BAD(c.lens[2] = -5, TIRX_E_INVALID_ARG, "opts->context_lens_host[2] is -5, expected >= q_len (2) "
      "and >= 1");
  BAD(c.lens[0] = 1, TIRX_E_INVALID_ARG, "opts->context_lens_host[0] is 1, expected >= q_len (2) "
      "and >= 1");
  BAD(c.lens[1] = 65, TIRX_E_INVALID_ARG, "block_table has 4 columns, but context length 65 "
      "(sequence 1) needs 5 pages of 16");
  /* valid: unsplit and split both get to the device (the launch; without a device the split
   * path's workspace is a placeholder, as split-K's); preparing, unsplit is one kernel and
   * split two (the split kernel and the combine) */
  call c;
  call_init(&c);
  c.opts.splits = 1;
  cr_assert_eq(run(rt, &c), TIRX_E_NO_DEVICE, "%s", tirx_last_error());
  int launches[2];
  for (int i = 0; i < 2; i++) {
    cr_assert_eq(tirx_kernels_prepare_begin(), TIRX_OK);
    cr_assert_eq(run(rt, &c), TIRX_OK, "%s", tirx_last_error());
    tirx_future **f = NULL;
    cr_assert_eq(tirx_kernels_prepare_end(&f, &launches[i]), TIRX_OK);
    for (int j = 0; j < launches[i]; j++) {
      tirx_future_cancel(f[j]); /* the count is the point, not the compiles */
      tirx_future_release(f[j]);
    }
    free(f);
    c.opts.splits = 3; /* 300 tokens: 5 tiles, 3 splits of 2 */
    c.bts[1] = 20, c.lens[1] = 300;
  }
  cr_assert_eq(launches[0], 1);
  cr_assert_eq(launches[1], 2);
  cr_assert_eq(run(rt, &c), TIRX_E_NO_DEVICE, "%s", tirx_last_error());
  cr_assert_not_null(strstr(tirx_last_error(), "tirx_op_decode_attention: tirx_launch: no CUDA "
                                               "device"),
                     "%s", tirx_last_error());
  tirx_runtime_destroy(rt);
}

Test(kernels_decode, reshape_and_cache_checks_its_arguments) {
  tirx_runtime *rt = no_device();
  int64_t cs[4] = {40, 16, 2, 128}, ks[3] = {5, 2, 128}, ss[1] = {5};
  tirx_tensor_arg kc = {PTR(0x20000), TIRX_BF16, 4, cs, NULL}, vc = {PTR(0x30000), TIRX_BF16, 4, cs, NULL};
  tirx_tensor_arg k = {PTR(0x10000), TIRX_BF16, 3, ks, (int64_t[]){300, 128, 1}};
  tirx_tensor_arg v = {PTR(0x18000), TIRX_BF16, 3, ks, NULL};
  tirx_tensor_arg s = {PTR(0x40000), TIRX_I32, 1, ss, NULL};
  const char *fn = "tirx_op_reshape_and_cache";
  (void)fn;
  expect_error(tirx_op_reshape_and_cache(NULL, &k, &v, &kc, &vc, &s, NULL), TIRX_E_NULL_ARG,
               "tirx_op_reshape_and_cache: rt is NULL");
  expect_error(tirx_op_reshape_and_cache(rt, NULL, &v, &kc, &vc, &s, NULL), TIRX_E_NULL_ARG,
               "tirx_op_reshape_and_cache: k is NULL");
  expect_error(tirx_op_reshape_and_cache(rt, &k, &v, &kc, &vc,
                                         &(tirx_tensor_arg){PTR(0x40000), TIRX_I64, 1, ss, NULL}, NULL),
               TIRX_E_TYPE, "tirx_op_reshape_and_cache: slot_mapping has dtype i64, expected i32");
  expect_error(tirx_op_reshape_and_cache(rt, &k, &v, &kc, &vc,
                                         &(tirx_tensor_arg){PTR(0x40000), TIRX_I32, 1, (int64_t[]){4}, NULL}, NULL),
               TIRX_E_INVALID_ARG, "tirx_op_reshape_and_cache: slot_mapping has shape [4], "
               "expected [num_tokens] = [5]");
  expect_error(tirx_op_reshape_and_cache(rt, &k, &(tirx_tensor_arg){PTR(0x18000), TIRX_BF16, 3, (int64_t[]){5, 1, 128}, NULL},
                                         &kc, &vc, &s, NULL),
               TIRX_E_INVALID_ARG, "tirx_op_reshape_and_cache: v has shape [5, 1, 128], expected "
               "k's [num_tokens, H_kv, D] = [5, 2, 128]");
  expect_error(tirx_op_reshape_and_cache(rt, &(tirx_tensor_arg){PTR(0x10000), TIRX_BF16, 3, (int64_t[]){5, 4, 128}, NULL},
                                         &v, &kc, &vc, &s, NULL),
               TIRX_E_INVALID_ARG, "tirx_op_reshape_and_cache: k has shape [5, 4, 128], expected "
               "[num_tokens, H_kv, D] = [5, 2, 128]");
  expect_error(tirx_op_reshape_and_cache(rt, &k, &v, &kc, &(tirx_tensor_arg){PTR(0x30000), TIRX_F16, 4, cs, NULL}, &s, NULL),
               TIRX_E_TYPE, "tirx_op_reshape_and_cache: v_cache has dtype f16, expected bf16");
  cr_assert_eq(tirx_op_reshape_and_cache(rt, &k, &v, &kc, &vc, &s, NULL), TIRX_E_NO_DEVICE, "%s",
               tirx_last_error());
  tirx_runtime_destroy(rt);
}

static void compile_ok(tirx_runtime *rt, tirx_kernel *k, bool attention) {
  tirx_compiled *c = NULL;
  cr_assert_eq(tirx_compile(rt, k, "sm_90a", &c), TIRX_OK, "%s: %s", tirx_kernel_name(k),
               tirx_last_error());
  const char *ptx = tirx_compiled_ptx(c);
  if (attention) { /* TMA page loads into the ring, S and P V on wgmma */
    cr_assert_not_null(strstr(ptx, "cp.async.bulk.tensor.4d"), "%s", tirx_kernel_name(k));
    cr_assert_not_null(strstr(ptx, "wgmma.mma_async"), "%s", tirx_kernel_name(k));
  }
  tirx_compiled_destroy(c);
  tirx_kernel_release(k);
}

Test(kernels_decode, every_variant_compiles_for_sm_90a, .timeout = 900) {
  tirx_runtime *rt = no_device();
  static const tirx_dtype dts[2] = {TIRX_BF16, TIRX_F16};
  static const int ds[2] = {64, 128}, ps[3] = {16, 32, 64};
  tirx_kernel *k;
  for (int di = 0; di < 2; di++)
    for (int d = 0; d < 2; d++) {
      for (int p = 0; p < 3; p++) {
        for (int w = 0; w < 2; w++) { /* unsplit (with lse) and partial; group 4, q_len 1 */
          OK(tirx_kernels_decode_build((tirx_decode_kernel)w, dts[di], ds[d], ps[p], 32, 8, 1, w == 0, &k));
          compile_ok(rt, k, true);
        }
        OK(tirx_kernels_reshape_and_cache_build(dts[di], ds[d], ps[p], 8, &k));
        compile_ok(rt, k, false);
      }
      OK(tirx_kernels_decode_build(TIRX_DECODE_COMBINE, dts[di], ds[d], 16, 32, 8, 1, true, &k));
      compile_ok(rt, k, false);
    }
  /* rows of the group: q_len 1..8 by H / H_kv 1, 4, 8 (the largest, 64 rows) */
  for (int ql = 1; ql <= 8; ql++)
    for (int g = 1; g <= 8; g *= 2) {
      if (g == 2) continue;
      OK(tirx_kernels_decode_build(TIRX_DECODE_PARTIAL, TIRX_BF16, 128, 16, g, 1, ql, false, &k));
      compile_ok(rt, k, true);
    }
  /* the most rows at the other dtype, head dim and page sizes, and unsplit with lse */
  OK(tirx_kernels_decode_build(TIRX_DECODE_PARTIAL, TIRX_F16, 64, 64, 8, 1, 8, false, &k));
  compile_ok(rt, k, true);
  OK(tirx_kernels_decode_build(TIRX_DECODE_UNSPLIT, TIRX_F16, 128, 32, 16, 2, 8, true, &k));
  compile_ok(rt, k, true);
  tirx_runtime_destroy(rt);
}
