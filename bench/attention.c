/*
 * attention: tirx_op_attention (tirx/kernels.h) on the prefill shapes of FlashAttention-3's
 * benchmark, for comparison with torch SDPA's cuDNN and flash backends
 * (bench/attention_torch.py; bench/attention_join.sh joins the two CSVs into ratios).
 *
 *   attention [out.csv] [reps]
 *
 * Shapes: 16k tokens (B x S = 16384), S in {512, 1k, 2k, 4k, 8k, 16k}, H = 16 at D = 128,
 * H = 32 at D = 64 and H = 8 at D = 256 (H x D = 2048; H_kv = H), causal and not, bf16 and
 * f16; q, k, v, o dense [B, S, H, D], lse written. TIRX_BENCH_ATTN_D=256 (a comma list of 64,
 * 128 and 256) keeps only the rows of those head dims. Each case: one launch, checked on 9 rows (8 random rows and the last row of the
 * last head) against the float64 reference (tests/support/attn_ref.c), o poisoned first; then
 * 3 warm-up launches and `reps` samples of 5 back-to-back launches followed by a synchronize
 * (host clock), the median per launch. FLOPs: 4 B H S^2 D, half of it under causal. Prints
 * TFLOP/s per case; CSV columns impl,path,dtype,d,h,batch,seq,causal,us,tflops,check.
 *
 * The default path is the FlashAttention-3 style kernel (src/kernels/attention_fast.c), in the
 * schedule TIRX_ATTN_SCHEDULE names (tirx/runtime.h; read by every tirx_op_attention call, so
 * setting it for the run is enough): the path column says "default" or the schedule's name
 * ("overlap", "pingpong", "pingpong_overlap"), and an A/B of two is two runs, `attention A.csv
 * 5` and `TIRX_ATTN_SCHEDULE=overlap attention B.csv 5` (a misspelt value fails every case with
 * TIRX_E_INVALID_ARG). Where it
 * returns TIRX_E_NOT_SUPPORTED the program says so (once) and times the reference path instead,
 * at S = 512 and 1k only (it is slow), with path "reference" in the CSV. Without a GPU: says
 * so, exits 0.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "attn_ref.h"
#include "bench_util.h"
#include "example_util.h"

#define CHECK(call)                                                                                \
  do {                                                                                             \
    if ((call) != TIRX_OK) {                                                                       \
      fprintf(stderr, "%s: %s\n", #call, tirx_last_error());                                       \
      exit(1);                                                                                     \
    }                                                                                              \
  } while (0)

enum { TOKENS = 16384, HD = 2048, DMAX = 256 }; /* B x S tokens; H x D per token */

static uint64_t seed_state;

static uint64_t next(void) {
  seed_state = seed_state * 6364136223846793005ull + 1442695040888963407ull;
  return seed_state >> 11;
}

static float rnd(float lo, float hi) { return lo + (hi - lo) * (float)(next() >> 29) / 16777216.0f; }

/* One dtype's inputs: TOKENS x HD elements each (every shape views them as [B, S, H, D]). */
typedef struct inputs {
  float *q, *k, *v; /* the 16-bit values as floats */
  void *dq, *dk, *dv;
} inputs;

static void make_inputs(tirx_runtime *rt, tirx_dtype dt, inputs *in) {
  const size_t n = (size_t)TOKENS * HD;
  uint16_t *h = malloc(n * 2);
  float **f[3] = {&in->q, &in->k, &in->v};
  void **d[3] = {&in->dq, &in->dk, &in->dv};
  for (int t = 0; t < 3; t++) {
    *f[t] = malloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++) {
      h[i] = ex_to16(dt, t == 2 ? rnd(-1, 1) : rnd(-2, 2));
      (*f[t])[i] = (float)ex_from16(dt, h[i]);
    }
    CHECK(tirx_runtime_alloc(rt, n * 2, d[t]));
    CHECK(tirx_runtime_copy(rt, *d[t], h, n * 2, TIRX_COPY_HOST_TO_DEVICE));
  }
  free(h);
}

static void free_inputs(tirx_runtime *rt, inputs *in) {
  free(in->q), free(in->k), free(in->v);
  tirx_runtime_free(rt, in->dq), tirx_runtime_free(rt, in->dk), tirx_runtime_free(rt, in->dv);
}

typedef struct shape {
  tirx_dtype dt;
  int d, h, batch;
  int64_t seq;
  bool causal;
} shape;

static tirx_status attend(tirx_runtime *rt, const char *path, const shape *s, const inputs *in,
                          void *o, void *lse) {
  int64_t sh[4] = {s->batch, s->seq, s->h, s->d}, lsh[3] = {s->batch, s->h, s->seq};
  tirx_tensor_arg q = {in->dq, s->dt, 4, sh, NULL}, k = {in->dk, s->dt, 4, sh, NULL};
  tirx_tensor_arg v = {in->dv, s->dt, 4, sh, NULL}, oa = {o, s->dt, 4, sh, NULL};
  tirx_tensor_arg la = {lse, TIRX_F32, 3, lsh, NULL};
  tirx_attention_options opts = {.causal = s->causal, .path = path};
  return tirx_op_attention(rt, &opts, &q, &k, &v, &oa, &la, NULL, NULL);
}

/* o against the float64 reference on 9 rows; lse on the same rows. */
static bool spot_check(tirx_runtime *rt, const shape *s, const inputs *in, void *o, void *lse,
                       double *worst) {
  const size_t n = (size_t)TOKENS * HD, nl = (size_t)s->batch * s->h * s->seq;
  uint16_t *ho = malloc(n * 2);
  float *hl = malloc(nl * sizeof *hl);
  CHECK(tirx_runtime_copy(rt, ho, o, n * 2, TIRX_COPY_DEVICE_TO_HOST));
  CHECK(tirx_runtime_copy(rt, hl, lse, nl * 4, TIRX_COPY_DEVICE_TO_HOST));
  attn_problem p = {.batch = s->batch, .h = s->h, .h_kv = s->h, .d = s->d, .causal = s->causal,
                    .s_q = s->seq, .s_k = s->seq};
  attn_view view[3];
  const float *src[3] = {in->q, in->k, in->v};
  for (int t = 0; t < 3; t++) view[t] = (attn_view){src[t], s->seq * HD, HD, s->d};
  const double u = s->dt == TIRX_BF16 ? 1.0 / 256 : 1.0 / 2048;
  double want[DMAX], wl;
  bool ok = true;
  *worst = 0;
  for (int t = 0; t < 9; t++) {
    int b = t < 8 ? (int)(next() % (uint64_t)s->batch) : s->batch - 1;
    int h = t < 8 ? (int)(next() % (uint64_t)s->h) : s->h - 1;
    int64_t i = t < 8 ? (int64_t)(next() % (uint64_t)s->seq) : s->seq - 1;
    attn_ref_row(&p, view[0], view[1], view[2], b, h, i, want, &wl);
    const uint16_t *got = ho + ((size_t)b * s->seq + (size_t)i) * HD + (size_t)h * s->d;
    for (int x = 0; x < s->d; x++) {
      /* |v| <= 1 bounds sum_j p_j |v_j| (attn_ref.h's tolerance) */
      double e = fabs(ex_from16(s->dt, got[x]) - want[x]), tol = u * (fabs(want[x]) + 1) + 1e-5;
      if (!(e <= tol)) ok = false;
      if (e / tol > *worst || e != e) *worst = e != e ? INFINITY : e / tol;
    }
    double gl = hl[((size_t)b * s->h + (size_t)h) * s->seq + (size_t)i];
    if (!(fabs(gl - wl) <= 1e-4 + 1e-5 * fabs(wl))) ok = false;
  }
  free(ho), free(hl);
  return ok;
}

static double time_path(tirx_runtime *rt, const char *path, const shape *s, const inputs *in,
                        void *o, void *lse, int warm, int reps, int per) {
  for (int i = 0; i < warm; i++) CHECK(attend(rt, path, s, in, o, lse));
  CHECK(tirx_runtime_synchronize(rt, NULL));
  double *t = malloc((size_t)reps * sizeof *t);
  for (int r = 0; r < reps; r++) {
    double t0 = now_us();
    for (int i = 0; i < per; i++) CHECK(attend(rt, path, s, in, o, lse));
    CHECK(tirx_runtime_synchronize(rt, NULL));
    t[r] = (now_us() - t0) / per;
  }
  double us = median(t, reps);
  free(t);
  return us;
}

int main(int argc, char **argv) {
  const char *csv = argc > 1 ? argv[1] : NULL;
  int reps = argc > 2 ? atoi(argv[2]) : 9;
  if (reps < 3) reps = 3;
  /* the head dims and their heads, in the rows' order; TIRX_BENCH_ATTN_D keeps some */
  static const int dims[3][2] = {{128, 16}, {64, 32}, {256, 8}};
  bool keep[3] = {true, true, true};
  const char *d_only = getenv("TIRX_BENCH_ATTN_D");
  if (d_only && *d_only) {
    keep[0] = keep[1] = keep[2] = false;
    for (const char *p = d_only; *p;) {
      char *e;
      long v = strtol(p, &e, 10);
      int i = v == 128 ? 0 : v == 64 ? 1 : v == 256 ? 2 : -1;
      if (e == p || i < 0 || (*e && *e != ',')) {
        fprintf(stderr, "attention: TIRX_BENCH_ATTN_D is \"%s\", expected a comma list of 64, "
                "128 and 256\n", d_only);
        return 2;
      }
      keep[i] = true;
      p = *e ? e + 1 : e;
    }
  }
  seed_state = (uint64_t)time(NULL) * 2654435761u;
  tirx_runtime *rt = NULL;
  CHECK(tirx_runtime_create(NULL, &rt));
  if (!tirx_runtime_has_device(rt)) {
    printf("attention: no CUDA device (%s): nothing measured\n", tirx_runtime_device_error(rt));
    tirx_runtime_destroy(rt);
    return 0;
  }
  FILE *f = csv ? fopen(csv, "w") : NULL;
  if (f) fprintf(f, "impl,path,dtype,d,h,batch,seq,causal,us,tflops,check\n");
  static const int64_t seqs[6] = {512, 1024, 2048, 4096, 8192, 16384};
  static const tirx_dtype dts[2] = {TIRX_BF16, TIRX_F16};
  void *o = NULL, *lse = NULL;
  CHECK(tirx_runtime_alloc(rt, (size_t)TOKENS * HD * 2, &o));
  CHECK(tirx_runtime_alloc(rt, (size_t)TOKENS * 32 * 4, &lse)); /* B H S floats, H <= 32 */
  bool said = false; /* the default path's TIRX_E_NOT_SUPPORTED was printed */
  /* the default kernel's schedule (TIRX_ATTN_SCHEDULE, read by each op call): the path column */
  const char *schedule = getenv("TIRX_ATTN_SCHEDULE");
  if (!schedule || !*schedule || strcmp(schedule, "serial") == 0) schedule = "default";
  int wrong = 0;
  printf("%-5s %-16s %4s %3s %3s %6s %6s %10s %8s %s\n", "type", "path", "D", "H", "B", "S",
         "causal", "us", "TFLOP/s", "check");
  for (int di = 0; di < 2; di++) {
    inputs in;
    make_inputs(rt, dts[di], &in);
    for (int dd = 0; dd < 3; dd++)
      for (int c = 0; c < 2 && keep[dd]; c++)
        for (int si = 0; si < 6; si++) {
          shape s = {dts[di], dims[dd][0], dims[dd][1], (int)(TOKENS / seqs[si]), seqs[si], c};
          const char *path = NULL;
          CHECK(tirx_runtime_fill32(rt, o, 0xffffffffu, (size_t)TOKENS * HD / 2));
          tirx_status st = attend(rt, NULL, &s, &in, o, lse);
          if (st == TIRX_E_NOT_SUPPORTED) {
            if (!said) printf("the default path: %s\n(the reference path is timed instead at S <= "
                              "1024, flagged \"reference\")\n", tirx_last_error());
            said = true;
            if (s.seq > 1024) continue;
            path = "reference";
            st = attend(rt, path, &s, &in, o, lse);
          }
          if (st != TIRX_OK) { /* refused or not built: the other cases may still run */
            printf("%s D=%d S=%lld causal=%d: %s\n", tirx_dtype_name(s.dt), s.d, (long long)s.seq,
                   c, tirx_last_error());
            wrong++;
            continue;
          }
          if (tirx_runtime_synchronize(rt, NULL) != TIRX_OK) {
            printf("attention: %s\n", tirx_last_error());
            return 1; /* a fault in the kernel: the runtime is sticky, nothing more can run */
          }
          double worst;
          bool ok = spot_check(rt, &s, &in, o, lse, &worst);
          wrong += !ok;
          double us = !path ? time_path(rt, NULL, &s, &in, o, lse, 3, reps, 5)
                            : time_path(rt, path, &s, &in, o, lse, 1, 3, 1);
          double flops = 4.0 * s.batch * s.h * (double)s.seq * (double)s.seq * s.d * (c ? 0.5 : 1);
          double tf = flops / us / 1e6;
          const char *pname = path ? path : schedule;
          printf("%-5s %-16s %4d %3d %3d %6lld %6d %10.1f %8.1f %s (worst %.2g of tol)\n",
                 tirx_dtype_name(s.dt), pname, s.d, s.h, s.batch, (long long)s.seq, c, us, tf,
                 ok ? "ok" : "WRONG", worst);
          fflush(stdout);
          if (f) {
            fprintf(f, "tirx,%s,%s,%d,%d,%d,%lld,%d,%.2f,%.2f,%s\n", pname, tirx_dtype_name(s.dt),
                    s.d, s.h, s.batch, (long long)s.seq, c, us, tf, ok ? "ok" : "wrong");
            fflush(f);
          }
        }
    free_inputs(rt, &in);
  }
  if (f) fclose(f);
  tirx_runtime_free(rt, o), tirx_runtime_free(rt, lse);
  tirx_runtime_destroy(rt);
  if (wrong) printf("attention: %d cases WRONG or failed\n", wrong);
  return wrong ? 1 : 0;
}
