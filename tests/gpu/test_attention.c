/*
 * tirx_op_attention on the GPU against the float64 reference (tests/support/attn_ref.c), every
 * test once a path and schedule: gpu_attention_ref::<name> runs opts->path "reference" (the simple kernel of
 * src/kernels/attention.c), gpu_attention::<name> the default path (the FlashAttention-3 style
 * kernel of attention_fast.c, its default schedule), gpu_attention_overlap::<name>,
 * gpu_attention_pingpong::<name> and gpu_attention_pingpong_overlap::<name> the default path
 * under TIRX_ATTN_SCHEDULE=overlap (the intra-warpgroup overlap), pingpong (the inter-warpgroup
 * ping-pong) and pingpong_overlap (both). Filter with --filter 'gpu_attention_ref/?*',
 * 'gpu_attention/?*', 'gpu_attention_overlap/?*', 'gpu_attention_pingpong/?*' or
 * 'gpu_attention_pingpong_overlap/?*'.
 *
 * Each case: fresh random inputs (q, k in [-2, 2), v in [-1, 1); the seed is logged and
 * TIRX_SEED replays it), o and lse poisoned with NaN before the launch, a synchronize with a
 * 10-second host timeout; then every element of o and lse must have been written (no NaN
 * left), o's row padding (strided cases) must still hold the poison, and sequences of up to
 * 128 rows are compared whole, longer ones on their first 8 rows, the last and 48 random rows
 * per (sequence, head). Tolerances (attn_ref.h): o within u (|o| + sum_j p_j |v_j|) + 1e-5, u
 * the output's rounding (2^-8 bf16, 2^-11 f16: one rounding of the output, and a 16-bit P in
 * O += P V may round each term by u), lse within 1e-4 + 1e-5 |lse| and exactly -inf for a row
 * that sees no key.
 *
 * The matrix: S in {1, 17, 128, 1000, 4097} with S_q = S_k, and S_q != S_k both ways (causal
 * rows that see no key when S_q > S_k), D 64 and 128, causal and not, H / H_kv in {1, 4, 8},
 * both dtypes (alternating over the cases so that each dtype meets each D and mask), a scale
 * other than the default, padded strides, lse NULL, and varlen batches of mixed lengths with
 * sequences of 1 and of 0 query rows and of 0 keys (the API allows empty sequences: offsets
 * need only be non-decreasing), and grids of 1 to 3 CTAs, each running many tiles of different
 * lengths one after another (the persistent loop; the ping-pong's turns across tiles).
 * Head dim 256 has its own tests on the reference and default paths (gpu_attention::d256_* and
 * gpu_attention_ref::d256_*; the default path has the serial schedule only there): S in {1, 17,
 * 128, 1000}, S_q != S_k both ways, H / H_kv 1 and 4, both dtypes, causal and not, varlen with
 * 1-row and empty sequences, padded strides, lse NULL, and grids of 1 to 3 CTAs.
 */
#define GPU_HANG "an attention kernel that does not finish"
#include "gpu_util.h"

#include <math.h>

#include "attn_ref.h"
#include "example_util.h"

typedef struct attn_case {
  tirx_dtype dt;
  int d, h, h_kv;
  bool causal;
  double scale;                /* 0: the default */
  int batch;                   /* fixed length: B; varlen: the sequences in lens_q / lens_k */
  int64_t s_q, s_k;            /* fixed length */
  const int32_t *lens_q, *lens_k; /* varlen (NULL: fixed length) */
  bool no_lse;
  int pad;                     /* extra elements per token row (a multiple of 8): strided views */
  int sms;                     /* opts->sms (0: the default) */
} attn_case;

static float unif(float lo, float hi) { return lo + (hi - lo) * (float)(rnd32() >> 8) / 16777216.0f; }

/* A tensor of T rows (tokens) x H heads x D with row stride ss = H * D + pad: the 16-bit data
 * on the host and the device, and its values as floats. */
typedef struct buf {
  uint16_t *h16;
  float *f;
  void *dev;
  size_t n;
} buf;

static buf make_buf(tirx_runtime *rt, tirx_dtype dt, size_t n, float lo, float hi, bool poison) {
  buf b = {malloc(n * 2 + 2), malloc(n * sizeof(float) + 4), NULL, n};
  for (size_t i = 0; i < n; i++) {
    b.h16[i] = poison ? 0xffff : ex_to16(dt, unif(lo, hi));
    b.f[i] = (float)ex_from16(dt, b.h16[i]);
  }
  OK(tirx_runtime_alloc(rt, n * 2 + 16, &b.dev));
  if (poison)
    OK(tirx_runtime_fill32(rt, b.dev, 0xffffffffu, (n * 2 + 3) / 4));
  else
    OK(tirx_runtime_copy(rt, b.dev, b.h16, n * 2, TIRX_COPY_HOST_TO_DEVICE));
  return b;
}

static void free_buf(tirx_runtime *rt, buf *b) {
  free(b->h16), free(b->f);
  tirx_runtime_free(rt, b->dev);
}

static void run_case(tirx_runtime *rt, const char *path, const attn_case *c) {
  const bool varlen = c->lens_q != NULL, bf = c->dt == TIRX_BF16;
  const int B = c->batch, H = c->h, HKV = c->h_kv, D = c->d;
  int32_t *cu_q = calloc((size_t)B + 1, sizeof *cu_q), *cu_k = calloc((size_t)B + 1, sizeof *cu_k);
  if (varlen)
    for (int b = 0; b < B; b++) cu_q[b + 1] = cu_q[b] + c->lens_q[b], cu_k[b + 1] = cu_k[b] + c->lens_k[b];
  const int64_t tq = varlen ? cu_q[B] : B * c->s_q, tk = varlen ? cu_k[B] : B * c->s_k;
  const int64_t ssq = (int64_t)H * D + c->pad, ssk = (int64_t)HKV * D + c->pad;
  char what[256];
  const char *schedule = getenv("TIRX_ATTN_SCHEDULE");
  snprintf(what, sizeof what, "%s %s %s D=%d H=%d/%d %s%s%s",
           path ? path : schedule && *schedule ? schedule : "default",
           tirx_dtype_name(c->dt), varlen ? "varlen" : "fixed", D, H, HKV,
           c->causal ? "causal" : "full", c->no_lse ? " no-lse" : "", c->pad ? " padded" : "");
  size_t at = strlen(what);
  if (varlen) {
    at += (size_t)snprintf(what + at, sizeof what - at, " lens");
    for (int b = 0; b < B && at < sizeof what; b++)
      at += (size_t)snprintf(what + at, sizeof what - at, " %d/%d", c->lens_q[b], c->lens_k[b]);
  } else {
    snprintf(what + at, sizeof what - at, " B=%d S_q=%lld S_k=%lld", B, (long long)c->s_q,
             (long long)c->s_k);
  }
  if (c->scale != 0) {
    at = strlen(what);
    snprintf(what + at, sizeof what - at, " scale=%g", c->scale);
  }
  if (c->sms != 0) {
    at = strlen(what);
    snprintf(what + at, sizeof what - at, " sms=%d", c->sms);
  }

  buf q = make_buf(rt, c->dt, (size_t)(tq * ssq), -2, 2, false);
  buf k = make_buf(rt, c->dt, (size_t)(tk * ssk), -2, 2, false);
  buf v = make_buf(rt, c->dt, (size_t)(tk * ssk), -1, 1, false);
  buf o = make_buf(rt, c->dt, (size_t)(tq * ssq), 0, 0, true);
  const size_t nl = (size_t)(H * tq);
  float *lse = malloc(nl * sizeof *lse);
  void *dl = NULL, *dcq = NULL, *dck = NULL;
  OK(tirx_runtime_alloc(rt, nl * 4 + 16, &dl));
  OK(tirx_runtime_fill32(rt, dl, 0xffffffffu, nl));
  OK(tirx_runtime_alloc(rt, ((size_t)B + 1) * 4, &dcq));
  OK(tirx_runtime_alloc(rt, ((size_t)B + 1) * 4, &dck));
  OK(tirx_runtime_copy(rt, dcq, cu_q, ((size_t)B + 1) * 4, TIRX_COPY_HOST_TO_DEVICE));
  OK(tirx_runtime_copy(rt, dck, cu_k, ((size_t)B + 1) * 4, TIRX_COPY_HOST_TO_DEVICE));

  int64_t qsh[4], ksh[4], lsh[3], qst[4], kst[4];
  tirx_tensor_arg qa, ka, va, oa, la;
  if (varlen) {
    memcpy(qsh, (int64_t[]){tq, H, D}, 3 * sizeof(int64_t));
    memcpy(ksh, (int64_t[]){tk, HKV, D}, 3 * sizeof(int64_t));
    memcpy(qst, (int64_t[]){ssq, D, 1}, 3 * sizeof(int64_t));
    memcpy(kst, (int64_t[]){ssk, D, 1}, 3 * sizeof(int64_t));
    memcpy(lsh, (int64_t[]){H, tq}, 2 * sizeof(int64_t));
  } else {
    memcpy(qsh, (int64_t[]){B, c->s_q, H, D}, 4 * sizeof(int64_t));
    memcpy(ksh, (int64_t[]){B, c->s_k, HKV, D}, 4 * sizeof(int64_t));
    memcpy(qst, (int64_t[]){c->s_q * ssq, ssq, D, 1}, 4 * sizeof(int64_t));
    memcpy(kst, (int64_t[]){c->s_k * ssk, ssk, D, 1}, 4 * sizeof(int64_t));
    memcpy(lsh, (int64_t[]){B, H, c->s_q}, 3 * sizeof(int64_t));
  }
  const int rank = varlen ? 3 : 4;
  /* dense cases pass NULL strides (the dense default), padded ones their strides */
  qa = (tirx_tensor_arg){q.dev, c->dt, rank, qsh, c->pad ? qst : NULL};
  ka = (tirx_tensor_arg){k.dev, c->dt, rank, ksh, c->pad ? kst : NULL};
  va = (tirx_tensor_arg){v.dev, c->dt, rank, ksh, c->pad ? kst : NULL};
  oa = (tirx_tensor_arg){o.dev, c->dt, rank, qsh, c->pad ? qst : NULL};
  la = (tirx_tensor_arg){dl, TIRX_F32, rank - 1, lsh, NULL};
  tirx_attention_varlen vl = {B, cu_q, cu_k, dcq, dck};
  tirx_attention_options opts = {.scale = c->scale, .causal = c->causal, .sms = c->sms,
                                 .path = path};
  tirx_status st = tirx_op_attention(rt, &opts, &qa, &ka, &va, &oa, c->no_lse ? NULL : &la,
                                     varlen ? &vl : NULL, NULL);
  cr_assert_eq(st, TIRX_OK, "%s: tirx_op_attention: %s", what, tirx_last_error());
  sync_or_fail(rt);
  OK(tirx_runtime_copy(rt, o.h16, o.dev, o.n * 2, TIRX_COPY_DEVICE_TO_HOST));
  OK(tirx_runtime_copy(rt, lse, dl, nl * 4, TIRX_COPY_DEVICE_TO_HOST));
  for (size_t i = 0; i < o.n; i++) o.f[i] = (float)ex_from16(c->dt, o.h16[i]);
  /* the padding of o's rows is not written */
  int64_t pad_written = 0;
  for (int64_t r = 0; r < tq; r++)
    for (int x = H * D; x < ssq; x++) pad_written += o.h16[r * ssq + x] != 0xffff;

  attn_problem p = {.batch = B, .h = H, .h_kv = HKV, .d = D, .causal = c->causal,
                    .scale = c->scale, .s_q = c->s_q, .s_k = c->s_k,
                    .cu_q = varlen ? cu_q : NULL, .cu_k = varlen ? cu_k : NULL};
  attn_view qv = {q.f, varlen ? 0 : c->s_q * ssq, ssq, D}, ov = {o.f, qv.sb, ssq, D};
  attn_view kv = {k.f, varlen ? 0 : c->s_k * ssk, ssk, D}, vv = {v.f, kv.sb, ssk, D};
  attn_report r;
  attn_ref_check(&p, qv, kv, vv, ov, c->no_lse ? NULL : lse, bf, 128, 48, &rng, &r);
  if (c->no_lse) /* lse not asked for: the buffer keeps its poison */
    for (size_t i = 0; i < nl; i++)
      if (lse[i] == lse[i]) {
        r.wrong++;
        snprintf(r.first, sizeof r.first, "lse[%zu] written without lse", i);
        break;
      }
  cr_log_info("%s: %lld rows, worst o %.3g and lse %.3g of the tolerance, %lld wrong, %lld "
              "unwritten", what, (long long)r.rows, r.worst_o, r.worst_lse, (long long)r.wrong,
              (long long)r.unwritten);
  cr_expect_eq(r.wrong, 0, "%s: %lld wrong, first %s (seed: see the log)", what,
               (long long)r.wrong, r.first);
  cr_expect_eq(r.unwritten, 0, "%s: %lld elements of o/lse not written", what,
               (long long)r.unwritten);
  cr_expect_eq(pad_written, 0, "%s: %lld padding elements of o written", what,
               (long long)pad_written);
  free_buf(rt, &q), free_buf(rt, &k), free_buf(rt, &v), free_buf(rt, &o);
  free(lse), free(cu_q), free(cu_k);
  tirx_runtime_free(rt, dl), tirx_runtime_free(rt, dcq), tirx_runtime_free(rt, dck);
}

/* Each test body runs for a path: "reference" (gpu_attention_ref), NULL (gpu_attention: the
 * default kernel with its default schedule) and NULL again with TIRX_ATTN_SCHEDULE set to each
 * other schedule (gpu_attention_overlap: FlashAttention-3's intra-warpgroup overlap;
 * gpu_attention_pingpong: its inter-warpgroup ping-pong; gpu_attention_pingpong_overlap: both;
 * the variable is read when the op looks its kernel up, and each test runs in a process of its
 * own). */
#define ATTN_SCHEDULE_TEST(suite, schedule, name, secs)                                       \
  Test(suite, name, .timeout = secs) {                                                        \
    tirx_runtime *rt = gpu();                                                                 \
    cr_assert_eq(setenv("TIRX_ATTN_SCHEDULE", schedule, 1), 0);                               \
    name##_body(rt, NULL);                                                                    \
    unsetenv("TIRX_ATTN_SCHEDULE");                                                           \
    tirx_runtime_destroy(rt);                                                                 \
  }
#define ATTN_TEST(name, secs)                                                                 \
  static void name##_body(tirx_runtime *rt, const char *path);                                \
  Test(gpu_attention_ref, name, .timeout = secs) {                                            \
    tirx_runtime *rt = gpu();                                                                 \
    name##_body(rt, "reference");                                                             \
    tirx_runtime_destroy(rt);                                                                 \
  }                                                                                           \
  Test(gpu_attention, name, .timeout = secs) {                                                \
    tirx_runtime *rt = gpu();                                                                 \
    unsetenv("TIRX_ATTN_SCHEDULE");                                                           \
    name##_body(rt, NULL);                                                                    \
    tirx_runtime_destroy(rt);                                                                 \
  }                                                                                           \
  ATTN_SCHEDULE_TEST(gpu_attention_overlap, "overlap", name, secs)                           \
  ATTN_SCHEDULE_TEST(gpu_attention_pingpong, "pingpong", name, secs)                         \
  ATTN_SCHEDULE_TEST(gpu_attention_pingpong_overlap, "pingpong_overlap", name, secs)         \
  static void name##_body(tirx_runtime *rt, const char *path)

static const int HEADS[3][2] = {{8, 8}, {8, 2}, {8, 1}};
static const tirx_dtype DT[2] = {TIRX_BF16, TIRX_F16};

/* S_q = S_k = S in {1, 17, 128, 1000, 4097}, D 64 and 128, causal and not. */
ATTN_TEST(square_lengths, 300) {
  static const int64_t S[5] = {1, 17, 128, 1000, 4097};
  int n = 0;
  for (int s = 0; s < 5; s++)
    for (int d = 0; d < 2; d++)
      for (int causal = 0; causal < 2; causal++, n++)
        run_case(rt, path, &(attn_case){.dt = DT[(s + d) % 2], .d = d ? 128 : 64,
                                        .h = HEADS[n % 3][0], .h_kv = HEADS[n % 3][1],
                                        .causal = causal, .batch = S[s] <= 128 ? 3 : S[s] < 4097 ? 2 : 1,
                                        .s_q = S[s], .s_k = S[s]});
}

/* S_q != S_k both ways: under causal, rows i < S_q - S_k see no key (o = 0, lse = -inf). */
ATTN_TEST(different_lengths, 300) {
  static const int64_t L[][2] = {{1, 1000}, {17, 128}, {128, 17}, {1000, 4097},
                                 {4097, 1000}, {1000, 1}, {128, 1}};
  int n = 0;
  for (size_t i = 0; i < sizeof L / sizeof L[0]; i++)
    for (int causal = 0; causal < 2; causal++, n++)
      run_case(rt, path, &(attn_case){.dt = DT[(i + (size_t)causal) % 2], .d = i % 2 ? 64 : 128,
                                      .h = HEADS[n % 3][0], .h_kv = HEADS[n % 3][1],
                                      .causal = causal, .batch = L[i][0] * L[i][1] > 1000000 ? 1 : 2,
                                      .s_q = L[i][0], .s_k = L[i][1]});
}

/* H / H_kv of 1, 4 and 8 at several H (multi-query: H_kv = 1). */
ATTN_TEST(grouped_heads, 300) {
  static const int HH[][2] = {{1, 1}, {4, 4}, {4, 1}, {8, 2}, {16, 2}, {16, 16}, {8, 1}};
  for (size_t i = 0; i < sizeof HH / sizeof HH[0]; i++)
    for (int d = 0; d < 2; d++)
      run_case(rt, path, &(attn_case){.dt = DT[(i + (size_t)d) % 2], .d = d ? 128 : 64, .h = HH[i][0],
                                      .h_kv = HH[i][1], .causal = (i + (size_t)d) % 3 != 0, .batch = 2,
                                      .s_q = 300, .s_k = 333});
}

/* Both dtypes with a scale of their own, strided (padded) rows, and without lse. */
ATTN_TEST(scale_strides_and_no_lse, 300) {
  for (int dt = 0; dt < 2; dt++)
    for (int d = 0; d < 2; d++) {
      run_case(rt, path, &(attn_case){.dt = DT[dt], .d = d ? 128 : 64, .h = 4, .h_kv = 2,
                                      .causal = d == 0, .scale = dt ? 0.3 : 0.05, .batch = 2,
                                      .s_q = 257, .s_k = 190, .pad = 8 * (1 + dt)});
      run_case(rt, path, &(attn_case){.dt = DT[dt], .d = d ? 128 : 64, .h = 8, .h_kv = 4,
                                      .causal = d != 0, .batch = 2, .s_q = 129, .s_k = 129,
                                      .no_lse = true});
    }
}

/* Varlen batches of mixed lengths: 1 and 0 query rows, 0 keys (o = 0, lse = -inf), S_q > S_k
 * under causal, long sequences; both dtypes, D 64 and 128, causal and not, GQA. */
ATTN_TEST(varlen, 300) {
  static const int32_t lq[7] = {1, 0, 17, 128, 1000, 300, 2}, lk[7] = {1, 5, 17, 200, 1000, 0, 64};
  static const int32_t lq2[3] = {4097, 3, 500}, lk2[3] = {4097, 700, 499};
  for (int dt = 0; dt < 2; dt++)
    for (int d = 0; d < 2; d++)
      for (int causal = 0; causal < 2; causal++)
        run_case(rt, path, &(attn_case){.dt = DT[dt], .d = d ? 128 : 64, .h = 8,
                                        .h_kv = (dt + d) % 2 ? 2 : 8, .causal = causal,
                                        .batch = 7, .lens_q = lq, .lens_k = lk});
  run_case(rt, path, &(attn_case){.dt = TIRX_BF16, .d = 128, .h = 8, .h_kv = 1, .causal = true,
                                  .batch = 3, .lens_q = lq2, .lens_k = lk2, .pad = 16});
  run_case(rt, path, &(attn_case){.dt = TIRX_F16, .d = 64, .h = 4, .h_kv = 4, .causal = false,
                                  .batch = 3, .lens_q = lq2, .lens_k = lk2, .no_lse = true});
}

/* Grids of 1 to 3 CTAs (opts->sms), so that each CTA runs many tiles one after another:
 * causal tiles of different lengths (an odd count of m-blocks, whose middle pair has one tile),
 * tiles without a key (S_q > S_k under causal), S_k shorter than a KV block, and varlen
 * sequences of 0 and 1 rows and of 0 keys; both dtypes, D 64 and 128. */
ATTN_TEST(few_ctas, 300) {
  static const int64_t L[][2] = {{1000, 1000}, {300, 300}, {1000, 300}, {300, 17}, {17, 1000}};
  for (size_t i = 0; i < sizeof L / sizeof L[0]; i++)
    for (int d = 0; d < 2; d++)
      run_case(rt, path, &(attn_case){.dt = DT[(i + (size_t)d) % 2], .d = d ? 128 : 64, .h = 4,
                                      .h_kv = 2, .causal = i != 4 || d, .batch = 2,
                                      .s_q = L[i][0], .s_k = L[i][1], .sms = 1 + (int)(i % 3)});
  static const int32_t lq[6] = {1, 0, 300, 17, 1000, 129}, lk[6] = {1, 5, 300, 0, 700, 64};
  for (int dt = 0; dt < 2; dt++)
    for (int causal = 0; causal < 2; causal++)
      run_case(rt, path, &(attn_case){.dt = DT[dt], .d = dt ? 64 : 128, .h = 4, .h_kv = 1,
                                      .causal = causal, .batch = 6, .lens_q = lq, .lens_k = lk,
                                      .sms = 1 + dt + causal});
}

/* Head dim 256 (BN = 64, O written over Q's shared memory: attention_fast.c's plan_of) on the
 * reference path (gpu_attention_ref::d256_<name>) and the default one (gpu_attention::
 * d256_<name>; its only schedule at D = 256, so TIRX_ATTN_SCHEDULE is unset). Filter with
 * --filter 'gpu_attention/d256*' and 'gpu_attention_ref/d256*'. */
#define ATTN_D256_TEST(name, secs)                                                            \
  static void d256_##name##_body(tirx_runtime *rt, const char *path);                         \
  Test(gpu_attention_ref, d256_##name, .timeout = secs) {                                     \
    tirx_runtime *rt = gpu();                                                                 \
    d256_##name##_body(rt, "reference");                                                      \
    tirx_runtime_destroy(rt);                                                                 \
  }                                                                                           \
  Test(gpu_attention, d256_##name, .timeout = secs) {                                         \
    tirx_runtime *rt = gpu();                                                                 \
    unsetenv("TIRX_ATTN_SCHEDULE");                                                           \
    d256_##name##_body(rt, NULL);                                                             \
    tirx_runtime_destroy(rt);                                                                 \
  }                                                                                           \
  static void d256_##name##_body(tirx_runtime *rt, const char *path)

/* H / H_kv of 1 and 4 (and multi-query, 4 over 1), alternating over the cases. */
static const int HEADS256[3][2] = {{8, 8}, {8, 2}, {4, 1}};

/* S_q = S_k = S in {1, 17, 128, 1000}, causal and not, both dtypes. */
ATTN_D256_TEST(square_lengths, 120) {
  static const int64_t S[4] = {1, 17, 128, 1000};
  int n = 0;
  for (int s = 0; s < 4; s++)
    for (int causal = 0; causal < 2; causal++, n++)
      run_case(rt, path, &(attn_case){.dt = DT[(s + causal) % 2], .d = 256,
                                      .h = HEADS256[n % 3][0], .h_kv = HEADS256[n % 3][1],
                                      .causal = causal, .batch = S[s] <= 128 ? 3 : 2, .s_q = S[s],
                                      .s_k = S[s]});
}

/* S_q != S_k both ways (under causal, rows i < S_q - S_k see no key: o = 0, lse = -inf), key
 * counts that are not multiples of the 64-key block. */
ATTN_D256_TEST(different_lengths, 120) {
  static const int64_t L[][2] = {{1, 1000}, {17, 128}, {128, 17}, {1000, 129}, {1000, 1}};
  int n = 0;
  for (size_t i = 0; i < sizeof L / sizeof L[0]; i++)
    for (int causal = 0; causal < 2; causal++, n++)
      run_case(rt, path, &(attn_case){.dt = DT[(i + (size_t)causal) % 2], .d = 256,
                                      .h = HEADS256[n % 3][0], .h_kv = HEADS256[n % 3][1],
                                      .causal = causal, .batch = 2, .s_q = L[i][0],
                                      .s_k = L[i][1]});
}

/* A varlen batch of mixed lengths: sequences of 1 query row and 1 key, of 0 query rows, of 0
 * keys, S_q > S_k under causal, several m-blocks; both dtypes, causal and not, GQA. */
ATTN_D256_TEST(varlen, 120) {
  static const int32_t lq[6] = {1, 0, 17, 300, 129, 2}, lk[6] = {1, 5, 17, 200, 0, 64};
  for (int dt = 0; dt < 2; dt++)
    for (int causal = 0; causal < 2; causal++)
      run_case(rt, path, &(attn_case){.dt = DT[dt], .d = 256, .h = 8,
                                      .h_kv = (dt + causal) % 2 ? 2 : 8, .causal = causal,
                                      .batch = 6, .lens_q = lq, .lens_k = lk});
}

/* A scale of its own, padded strides and no lse; and grids of 1 to 3 CTAs (opts->sms), each
 * running many tiles one after another, so that every tile's Q is loaded over the previous
 * tile's O (fixed length and varlen). */
ATTN_D256_TEST(strides_no_lse_and_few_ctas, 120) {
  run_case(rt, path, &(attn_case){.dt = TIRX_BF16, .d = 256, .h = 4, .h_kv = 1, .causal = true,
                                  .scale = 0.05, .batch = 2, .s_q = 257, .s_k = 190, .pad = 8});
  run_case(rt, path, &(attn_case){.dt = TIRX_F16, .d = 256, .h = 4, .h_kv = 4, .causal = false,
                                  .batch = 2, .s_q = 129, .s_k = 129, .no_lse = true, .pad = 16});
  static const int64_t L[][2] = {{1000, 1000}, {300, 17}, {1000, 300}};
  for (size_t i = 0; i < sizeof L / sizeof L[0]; i++)
    run_case(rt, path, &(attn_case){.dt = DT[i % 2], .d = 256, .h = 4, .h_kv = 2, .causal = i != 1,
                                    .batch = 2, .s_q = L[i][0], .s_k = L[i][1],
                                    .sms = 1 + (int)i});
  static const int32_t lq[5] = {1, 300, 0, 17, 200}, lk[5] = {1, 300, 5, 0, 129};
  for (int dt = 0; dt < 2; dt++)
    run_case(rt, path, &(attn_case){.dt = DT[dt], .d = 256, .h = 4, .h_kv = 1, .causal = dt == 0,
                                    .batch = 5, .lens_q = lq, .lens_k = lk, .sms = 1 + dt,
                                    .no_lse = dt == 1});
}
