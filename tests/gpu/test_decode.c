/*
 * Decode attention over a paged KV cache (tirx_op_decode_attention) and reshape_and_cache on
 * the GPU, against the float64 reference of tests/support/decode_ref.c: shuffled,
 * non-contiguous page tables (a padded, strided table), context lengths 1 (q_len 1; 4 for
 * q_len 4), 15, 16, 17, 1000 and 32768 in one shuffled batch, q_len 1 and 4, H / H_kv 1, 4 and
 * 8, both dtypes, D 64 and 128, page sizes 16, 32 and 64, q and o strided views (padded rows)
 * at group 4; unsplit (opts.splits 1), the chosen
 * split (0) and a forced one (7) each against the reference and split against unsplit; o and
 * lse poisoned (NaN) before every call. reshape_and_cache is checked bit for bit.
 */
#define GPU_HANG "a decode kernel hangs"
#include <math.h>

#include "decode_ref.h"
#include "gpu_util.h"

static void *upload(tirx_runtime *rt, const void *host, size_t bytes) {
  void *d = NULL;
  OK(tirx_runtime_alloc(rt, bytes, &d));
  OK(tirx_runtime_copy(rt, d, host, bytes, TIRX_COPY_HOST_TO_DEVICE));
  return d;
}

static void shuffle(int32_t *v, int n) {
  for (int i = n - 1; i > 0; i--) {
    int j = (int)(rnd32() % (uint32_t)(i + 1));
    int32_t t = v[i];
    v[i] = v[j], v[j] = t;
  }
}

/* One problem: every split mode against the reference and against each other; the persistent
 * grid sized for sms SMs (0: 132). */
static void check_case(tirx_runtime *rt, tirx_dtype dt, int ql, int g, int d, int p, int sms) {
  enum { B = 6, HKV = 2 };
  int32_t lens[B] = {ql == 1 ? 1 : ql, 15, 16, 17, 1000, 32768};
  shuffle(lens, B);
  decode_ref_case c = {.dt = dt, .b = B, .ql = ql, .h = g * HKV, .hkv = HKV, .d = d, .p = p,
                       .lens = lens};
  decode_ref_fill(&c, 2, &rng);
  cr_assert(c.q && c.kc && c.vc && c.bt);
  const int H = c.h;
  size_t nq = (size_t)B * ql * H * d, nrow = (size_t)B * ql * H;
  size_t ncache = (size_t)c.num_pages * p * HKV * d;
  double *want = malloc(nq * sizeof *want), *want_lse = malloc(nrow * sizeof *want_lse);
  decode_ref_attention(&c, 0.0, want, want_lse);

  /* group 4: q and o are strided views (rows of D + 8 elements) */
  const int pitch = g == 4 ? d + 8 : d;
  const size_t npad = nrow * (size_t)pitch;
  uint16_t *qpad = malloc(npad * 2);
  for (size_t r = 0; r < nrow; r++)
    for (int e = 0; e < pitch; e++) qpad[r * pitch + e] = e < d ? c.q[r * d + e] : 0xffff;
  void *dq = upload(rt, qpad, npad * 2), *dk = upload(rt, c.kc, ncache * 2);
  void *dv = upload(rt, c.vc, ncache * 2);
  void *dbt = upload(rt, c.bt, (size_t)B * c.bt_stride * 4), *dl = upload(rt, lens, sizeof lens);
  void *dout = NULL, *dlse = NULL;
  OK(tirx_runtime_alloc(rt, npad * 2, &dout));
  OK(tirx_runtime_alloc(rt, nrow * 4, &dlse));
  int64_t qs[4] = {B, ql, H, d}, cs[4] = {c.num_pages, p, HKV, d}, ls[3] = {B, ql, H};
  int64_t bts[2] = {B, c.max_pages}, btst[2] = {c.bt_stride, 1}, lns[1] = {B};
  int64_t qst[4] = {(int64_t)ql * H * pitch, (int64_t)H * pitch, pitch, 1};
  tirx_tensor_arg q = {dq, dt, 4, qs, qst}, kc = {dk, dt, 4, cs, NULL}, vc = {dv, dt, 4, cs, NULL};
  tirx_tensor_arg bt = {dbt, TIRX_I32, 2, bts, btst}, cl = {dl, TIRX_I32, 1, lns, NULL};
  tirx_tensor_arg o = {dout, dt, 4, qs, qst}, lse = {dlse, TIRX_F32, 3, ls, NULL};

  uint16_t *got = malloc(npad * 2);
  float *got_lse = malloc(nrow * 4), *first = malloc(nq * sizeof *first);
  /* bf16: half an ulp of the output (2^-9 relative) and the f32 sums; f16 8x tighter */
  double rtol = dt == TIRX_BF16 ? 8e-3 : 1e-3, atol = dt == TIRX_BF16 ? 4e-3 : 5e-4;
  static const int modes[3] = {1, 0, 7};
  for (int mi = 0; mi < 3; mi++) {
    tirx_decode_options opts = {.splits = modes[mi], .sms = sms, .context_lens_host = lens};
    tirx_decode_plan plan = {0};
    OK(tirx_kernels_decode_plan(&opts, B, H, HKV, ql, d, 32768, &plan));
    /* the chosen split of a few SMs may be none: only the full grid's must split */
    if (modes[mi] > 1 || (modes[mi] == 0 && sms == 0))
      cr_assert_gt(plan.splits, 1, "mode %d is not split", modes[mi]);
    OK(tirx_runtime_fill32(rt, dout, 0xffffffffu, npad / 2));
    OK(tirx_runtime_fill32(rt, dlse, 0xffffffffu, nrow));
    OK(tirx_op_decode_attention(rt, &opts, &q, &kc, &vc, &bt, &cl, &o, &lse, NULL));
    sync_or_fail(rt);
    OK(tirx_runtime_copy(rt, got, dout, npad * 2, TIRX_COPY_DEVICE_TO_HOST));
    OK(tirx_runtime_copy(rt, got_lse, dlse, nrow * 4, TIRX_COPY_DEVICE_TO_HOST));
    for (size_t i = 0; i < nq; i++) {
      size_t row = i / (size_t)d;
      float v = decode_ref_from_half(got[row * pitch + i % (size_t)d], dt);
      int bi = (int)(row / ((size_t)ql * H));
      cr_assert(fabs(v - want[i]) <= atol + rtol * fabs(want[i]),
                "%s ql %d g %d d %d p %d splits %d (plan %d): o[%zu] (sequence %d, L %d, row %zu "
                "col %zu) is %g, expected %g", tirx_dtype_name(dt), ql, g, d, p, modes[mi],
                plan.splits, i, bi, lens[bi], row % ((size_t)ql * H), i % (size_t)d, v, want[i]);
      if (mi == 0) first[i] = v;
      else
        cr_assert(fabs(v - first[i]) <= 2 * (atol + rtol * fabs(want[i])),
                  "splits %d and unsplit differ at o[%zu]: %g and %g", modes[mi], i, v, first[i]);
    }
    for (size_t r = 0; r < nrow; r++) /* the padding of o's rows is left alone */
      for (int e = d; e < pitch; e++)
        cr_assert_eq(got[r * pitch + e], 0xffff, "o's padding [%zu, %d] was written", r, e);
    for (size_t r = 0; r < nrow; r++)
      cr_assert(fabs(got_lse[r] - want_lse[r]) <= 2e-3 * (1 + fabs(want_lse[r])),
                "%s ql %d g %d d %d p %d splits %d: lse[%zu] is %g, expected %g",
                tirx_dtype_name(dt), ql, g, d, p, modes[mi], r, got_lse[r], want_lse[r]);
  }
  cr_log_info("decode %s q_len %d group %d d %d page %d sms %d: unsplit, chosen and 7 splits "
              "match", tirx_dtype_name(dt), ql, g, d, p, sms);
  void *bufs[7] = {dq, dk, dv, dbt, dl, dout, dlse};
  for (int i = 0; i < 7; i++) OK(tirx_runtime_free(rt, bufs[i]));
  free(want), free(want_lse), free(got), free(got_lse), free(first), free(qpad);
  decode_ref_free(&c);
}

Test(gpu_decode, paged_attention_matches_float64, .timeout = 900) {
  tirx_runtime *rt = gpu();
  static const int groups[3] = {1, 4, 8}, pages[3] = {16, 32, 64};
  int n = 0;
  for (int di = 0; di < 2; di++)
    for (int qi = 0; qi < 2; qi++)
      for (int gi = 0; gi < 3; gi++, n++)
        check_case(rt, di ? TIRX_F16 : TIRX_BF16, qi ? 4 : 1, groups[gi], n % 2 ? 64 : 128,
                   pages[n % 3], 0);
  tirx_runtime_destroy(rt);
}

/* Grids of 1 and 4 CTAs, so that each CTA's two consumer warpgroups take turns over many
 * items, among them the empty splits of the short sequences (lengths 1 to 17 read one tile;
 * splits 2 to 7 of them read none). Found by review in session 15, not yet fixed: a consumer
 * whose item is empty arrives on the hand-off barrier (named barrier 3, 256 threads) at once and
 * then syncs on it for its next item, and the two 128-thread arrivals of the same warpgroup
 * complete the barrier without the other consumer; the other then waits forever (decode.c,
 * build_attention_tc; the fix is a barrier per direction, 3 + cw to sync on and 3 + (1 - cw) to
 * arrive on, as attention_fast.c's turns). This test is expected to fail (a hang, caught in
 * 10 s) until then. */
Test(gpu_decode, few_ctas_with_empty_splits_match_float64, .timeout = 600) {
  tirx_runtime *rt = gpu();
  check_case(rt, TIRX_BF16, 1, 4, 128, 16, 4);
  check_case(rt, TIRX_F16, 4, 8, 64, 32, 1);
  tirx_runtime_destroy(rt);
}

/* One sequence of 128k tokens (B = 1 fills the GPU only through splits) and q_len 8. */
Test(gpu_decode, one_long_sequence_split_matches_float64, .timeout = 600) {
  tirx_runtime *rt = gpu();
  int32_t lens[1] = {131072};
  decode_ref_case c = {.dt = TIRX_BF16, .b = 1, .ql = 8, .h = 8, .hkv = 1, .d = 128, .p = 16,
                       .lens = lens};
  decode_ref_fill(&c, 0, &rng);
  size_t nq = (size_t)8 * 8 * 128, ncache = (size_t)c.num_pages * 16 * 128;
  double *want = malloc(nq * sizeof *want);
  decode_ref_attention(&c, 0.5, want, NULL);
  void *dq = upload(rt, c.q, nq * 2), *dk = upload(rt, c.kc, ncache * 2);
  void *dv = upload(rt, c.vc, ncache * 2), *dbt = upload(rt, c.bt, (size_t)c.bt_stride * 4);
  void *dl = upload(rt, lens, 4), *dout = NULL;
  OK(tirx_runtime_alloc(rt, nq * 2, &dout));
  OK(tirx_runtime_fill32(rt, dout, 0xffffffffu, nq / 2));
  int64_t qs[4] = {1, 8, 8, 128}, cs[4] = {c.num_pages, 16, 1, 128}, bts[2] = {1, c.max_pages};
  int64_t btst[2] = {c.bt_stride, 1}, lns[1] = {1};
  tirx_tensor_arg q = {dq, TIRX_BF16, 4, qs, NULL}, kc = {dk, TIRX_BF16, 4, cs, NULL};
  tirx_tensor_arg vc = {dv, TIRX_BF16, 4, cs, NULL}, bt = {dbt, TIRX_I32, 2, bts, btst};
  tirx_tensor_arg cl = {dl, TIRX_I32, 1, lns, NULL}, o = {dout, TIRX_BF16, 4, qs, NULL};
  tirx_decode_options opts = {.scale = 0.5, .context_lens_host = lens};
  tirx_decode_plan plan = {0};
  OK(tirx_kernels_decode_plan(&opts, 1, 8, 1, 8, 128, lens[0], &plan));
  cr_assert_gt(plan.splits, 100);
  OK(tirx_op_decode_attention(rt, &opts, &q, &kc, &vc, &bt, &cl, &o, NULL, NULL));
  sync_or_fail(rt);
  uint16_t *got = malloc(nq * 2);
  OK(tirx_runtime_copy(rt, got, dout, nq * 2, TIRX_COPY_DEVICE_TO_HOST));
  for (size_t i = 0; i < nq; i++) {
    float v = decode_ref_from_half(got[i], TIRX_BF16);
    cr_assert(fabs(v - want[i]) <= 4e-3 + 8e-3 * fabs(want[i]), "o[%zu] is %g, expected %g", i,
              v, want[i]);
  }
  void *bufs[6] = {dq, dk, dv, dbt, dl, dout};
  for (int i = 0; i < 6; i++) OK(tirx_runtime_free(rt, bufs[i]));
  free(want), free(got);
  decode_ref_free(&c);
  tirx_runtime_destroy(rt);
}

/* Page ids out of range (the header: a page of zeros, never a fault): one sequence's table
 * holds num_pages + 5 and -1; the call completes, the runtime stays healthy, the other
 * sequence's rows match the reference and every output is finite. */
Test(gpu_decode, page_ids_out_of_range_read_zeros, .timeout = 300) {
  tirx_runtime *rt = gpu();
  int32_t lens[2] = {200, 300};
  decode_ref_case c = {.dt = TIRX_BF16, .b = 2, .ql = 1, .h = 8, .hkv = 2, .d = 128, .p = 16,
                       .lens = lens};
  decode_ref_fill(&c, 0, &rng);
  size_t nq = (size_t)2 * 8 * 128, ncache = (size_t)c.num_pages * 16 * 2 * 128;
  double *want = malloc(nq * sizeof *want);
  decode_ref_attention(&c, 0.0, want, NULL);
  c.bt[3] = c.num_pages + 5, c.bt[7] = -1; /* sequence 0's pages 3 and 7 */
  void *dq = upload(rt, c.q, nq * 2), *dk = upload(rt, c.kc, ncache * 2);
  void *dv = upload(rt, c.vc, ncache * 2), *dbt = upload(rt, c.bt, (size_t)2 * c.bt_stride * 4);
  void *dl = upload(rt, lens, sizeof lens), *dout = NULL;
  OK(tirx_runtime_alloc(rt, nq * 2, &dout));
  OK(tirx_runtime_fill32(rt, dout, 0xffffffffu, nq / 2));
  int64_t qs[4] = {2, 1, 8, 128}, cs[4] = {c.num_pages, 16, 2, 128}, bts[2] = {2, c.max_pages};
  int64_t btst[2] = {c.bt_stride, 1}, lns[1] = {2};
  tirx_tensor_arg q = {dq, TIRX_BF16, 4, qs, NULL}, kc = {dk, TIRX_BF16, 4, cs, NULL};
  tirx_tensor_arg vc = {dv, TIRX_BF16, 4, cs, NULL}, bt = {dbt, TIRX_I32, 2, bts, btst};
  tirx_tensor_arg cl = {dl, TIRX_I32, 1, lns, NULL}, o = {dout, TIRX_BF16, 4, qs, NULL};
  for (int splits = 1; splits <= 3; splits += 2) {
    tirx_decode_options opts = {.splits = splits, .context_lens_host = lens};
    OK(tirx_op_decode_attention(rt, &opts, &q, &kc, &vc, &bt, &cl, &o, NULL, NULL));
    sync_or_fail(rt);
    OK(tirx_runtime_health(rt));
    uint16_t *got = malloc(nq * 2);
    OK(tirx_runtime_copy(rt, got, dout, nq * 2, TIRX_COPY_DEVICE_TO_HOST));
    for (size_t i = 0; i < nq; i++) {
      float v = decode_ref_from_half(got[i], TIRX_BF16);
      cr_assert(isfinite(v), "splits %d: o[%zu] is %g", splits, i, v);
      if (i >= nq / 2) /* sequence 1 */
        cr_assert(fabs(v - want[i]) <= 4e-3 + 8e-3 * fabs(want[i]), "splits %d: o[%zu] is %g, "
                  "expected %g", splits, i, v, want[i]);
    }
    free(got);
  }
  void *bufs[6] = {dq, dk, dv, dbt, dl, dout};
  for (int i = 0; i < 6; i++) OK(tirx_runtime_free(rt, bufs[i]));
  free(want);
  decode_ref_free(&c);
  tirx_runtime_destroy(rt);
}

/* reshape_and_cache: tokens into random distinct slots of shuffled pages, some slots negative
 * (skipped), k and v strided views (a padded token row); every other cache element unchanged. */
Test(gpu_decode, reshape_and_cache_writes_exactly_its_slots, .timeout = 300) {
  tirx_runtime *rt = gpu();
  static const struct { tirx_dtype dt; int d, p, hkv; } cases[] = {
      {TIRX_BF16, 128, 16, 8}, {TIRX_F16, 64, 32, 2}, {TIRX_BF16, 64, 64, 1}};
  for (int ci = 0; ci < 3; ci++) {
    const int D = cases[ci].d, P = cases[ci].p, HKV = cases[ci].hkv, NPG = 37, NT = 100;
    const tirx_dtype dt = cases[ci].dt;
    const int64_t tok_stride = (int64_t)HKV * D + 8; /* padded */
    size_t ncache = (size_t)NPG * P * HKV * D, nkv = (size_t)NT * tok_stride;
    uint16_t *kc = malloc(ncache * 2), *vc = malloc(ncache * 2), *k = malloc(nkv * 2);
    uint16_t *v = malloc(nkv * 2), *got = malloc(ncache * 2);
    for (size_t i = 0; i < ncache; i++) kc[i] = (uint16_t)rnd32(), vc[i] = (uint16_t)rnd32();
    for (size_t i = 0; i < nkv; i++) k[i] = (uint16_t)rnd32(), v[i] = (uint16_t)rnd32();
    int32_t *slots = malloc(NT * 4), *all = malloc((size_t)NPG * P * 4);
    for (int i = 0; i < NPG * P; i++) all[i] = i;
    shuffle(all, NPG * P);
    for (int t = 0; t < NT; t++) slots[t] = t % 7 == 3 ? -1 - (int32_t)(rnd32() % 5) : all[t];
    void *dkc = upload(rt, kc, ncache * 2), *dvc = upload(rt, vc, ncache * 2);
    void *dk = upload(rt, k, nkv * 2), *dv = upload(rt, v, nkv * 2), *ds = upload(rt, slots, NT * 4);
    int64_t cs[4] = {NPG, P, HKV, D}, ks[3] = {NT, HKV, D}, kst[3] = {tok_stride, D, 1}, ss[1] = {NT};
    tirx_tensor_arg ka = {dk, dt, 3, ks, kst}, va = {dv, dt, 3, ks, kst};
    tirx_tensor_arg kca = {dkc, dt, 4, cs, NULL}, vca = {dvc, dt, 4, cs, NULL};
    tirx_tensor_arg sa = {ds, TIRX_I32, 1, ss, NULL};
    OK(tirx_op_reshape_and_cache(rt, &ka, &va, &kca, &vca, &sa, NULL));
    sync_or_fail(rt);
    for (int t = 0; t < NT; t++) {
      if (slots[t] < 0) continue;
      size_t at = (size_t)slots[t] * HKV * D; /* page * P + offset = the slot */
      for (int e = 0; e < HKV * D; e++) {
        kc[at + e] = k[(size_t)t * tok_stride + e];
        vc[at + e] = v[(size_t)t * tok_stride + e];
      }
    }
    OK(tirx_runtime_copy(rt, got, dkc, ncache * 2, TIRX_COPY_DEVICE_TO_HOST));
    for (size_t i = 0; i < ncache; i++)
      cr_assert_eq(got[i], kc[i], "case %d: k_cache[%zu] is 0x%04x, expected 0x%04x", ci, i,
                   got[i], kc[i]);
    OK(tirx_runtime_copy(rt, got, dvc, ncache * 2, TIRX_COPY_DEVICE_TO_HOST));
    for (size_t i = 0; i < ncache; i++)
      cr_assert_eq(got[i], vc[i], "case %d: v_cache[%zu] is 0x%04x, expected 0x%04x", ci, i,
                   got[i], vc[i]);
    void *bufs[5] = {dkc, dvc, dk, dv, ds};
    for (int i = 0; i < 5; i++) OK(tirx_runtime_free(rt, bufs[i]));
    free(kc), free(vc), free(k), free(v), free(got), free(slots), free(all);
  }
  tirx_runtime_destroy(rt);
}
