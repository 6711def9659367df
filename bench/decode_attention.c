/*
 * decode_attention: tirx_op_decode_attention (paged KV cache, split-KV chosen per shape) on the
 * GPU, as bandwidth: bytes of K and V read / time, against a device-to-device copy measured in
 * the same run.
 *
 *   decode_attention [out.csv] [reps]
 *
 * Shapes: B in {1, 8, 32, 128} x context 1k, 4k, 16k, 64k (those whose caches fit in 48 GB),
 * H = 32 over H_kv = 8, D = 128, 16-token pages at shuffled ids, bf16, q_len 1. The KV caches
 * are rotated over enough copies (sets) that one rotation holds at least 128 MB, so each launch
 * reads its pages from HBM, not from the 50 MB L2. Each shape with the split chosen ("tirx") and,
 * where that split is more than 1, also unsplit (opts.splits 1: "tirx-unsplit"). Per sample: one launch on each set in turn
 * (at least 10 launches), then a synchronize (host clock); the median per launch over `reps`
 * samples (default 5), after a warm-up that compiles. The copy: 10 copies of 256 MB, then a
 * synchronize, counted as read + written bytes. Prints a table; CSV columns
 * impl,batch,context,h,h_kv,d,page,dtype,splits,us,kv_bytes,gbps,copy_gbps,ratio_copy
 * (out.csv "-": the CSV on stdout). Without a GPU it says so and exits 0.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "tirx.h"

#define CHECK(call)                                                                                \
  do {                                                                                             \
    if ((call) != TIRX_OK) {                                                                       \
      fprintf(stderr, "%s: %s\n", #call, tirx_last_error());                                       \
      exit(1);                                                                                     \
    }                                                                                              \
  } while (0)

enum { H = 32, HKV = 8, D = 128, P = 16 };

static uint64_t seed = 0x9e3779b97f4a7c15ull;
static uint32_t next(void) {
  seed ^= seed >> 12;
  seed ^= seed << 25;
  seed ^= seed >> 27;
  return (uint32_t)((seed * 2685821657736338717ull) >> 32);
}

static double copy_gbps(tirx_runtime *rt, int reps) {
  size_t bytes = (size_t)256 << 20;
  void *a = NULL, *b = NULL;
  CHECK(tirx_runtime_alloc(rt, bytes, &a));
  CHECK(tirx_runtime_alloc(rt, bytes, &b));
  CHECK(tirx_runtime_fill32(rt, a, 0x3c003c00u, bytes / 4));
  CHECK(tirx_runtime_copy(rt, b, a, bytes, TIRX_COPY_DEVICE_TO_DEVICE));
  CHECK(tirx_runtime_synchronize(rt, NULL));
  double *t = malloc((size_t)reps * sizeof *t);
  for (int r = 0; r < reps; r++) {
    double t0 = now_us();
    for (int i = 0; i < 10; i++)
      CHECK(tirx_runtime_copy(rt, b, a, bytes, TIRX_COPY_DEVICE_TO_DEVICE));
    CHECK(tirx_runtime_synchronize(rt, NULL));
    t[r] = (now_us() - t0) / 10;
  }
  double us = median(t, reps);
  free(t);
  CHECK(tirx_runtime_free(rt, a));
  CHECK(tirx_runtime_free(rt, b));
  return 2.0 * (double)bytes / us / 1e3;
}

int main(int argc, char **argv) {
  const char *csv = argc > 1 ? argv[1] : NULL;
  int reps = argc > 2 ? atoi(argv[2]) : 5;
  if (reps < 1) reps = 1;
  tirx_runtime *rt = NULL;
  CHECK(tirx_runtime_create(NULL, &rt));
  if (!tirx_runtime_has_device(rt)) {
    printf("decode_attention: no CUDA device (%s); nothing measured\n", tirx_runtime_device_error(rt));
    tirx_runtime_destroy(rt);
    return 0;
  }
  FILE *f = !csv ? NULL : strcmp(csv, "-") == 0 ? stdout : fopen(csv, "w");
  const char *header = "impl,batch,context,h,h_kv,d,page,dtype,splits,us,kv_bytes,gbps,copy_gbps,ratio_copy\n";
  if (f) fputs(header, f);
  double cg = copy_gbps(rt, reps);
  printf("device %s, copy %.0f GB/s\n", tirx_runtime_device_name(rt), cg);
  printf("%5s %7s %6s %10s %9s %8s %6s %s\n", "B", "context", "splits", "us", "KV MB", "GB/s", "ratio", "impl");
  static const int batches[4] = {1, 8, 32, 128}, contexts[4] = {1024, 4096, 16384, 65536};
  for (int bi = 0; bi < 4; bi++)
    for (int ci = 0; ci < 4; ci++) {
      const int B = batches[bi], L = contexts[ci], pages_per = L / P;
      const size_t set_bytes = (size_t)B * L * HKV * D * 2; /* one cache */
      if (2 * set_bytes > ((size_t)48 << 30)) continue;
      int sets = (int)(((size_t)128 << 20) / (2 * set_bytes)) + 1;
      const int npages = B * pages_per;
      /* block table: every sequence's pages at shuffled ids */
      int32_t *perm = malloc((size_t)npages * 4), *lens = malloc((size_t)B * 4);
      for (int i = 0; i < npages; i++) perm[i] = i;
      for (int i = npages - 1; i > 0; i--) {
        int j = (int)(next() % (uint32_t)(i + 1)), t = perm[i];
        perm[i] = perm[j], perm[j] = t;
      }
      for (int i = 0; i < B; i++) lens[i] = L;
      void *dbt = NULL, *dl = NULL, *dq = NULL, *dout = NULL, **kc = calloc((size_t)sets, sizeof *kc);
      void **vc = calloc((size_t)sets, sizeof *vc);
      CHECK(tirx_runtime_alloc(rt, (size_t)npages * 4, &dbt));
      CHECK(tirx_runtime_copy(rt, dbt, perm, (size_t)npages * 4, TIRX_COPY_HOST_TO_DEVICE));
      CHECK(tirx_runtime_alloc(rt, (size_t)B * 4, &dl));
      CHECK(tirx_runtime_copy(rt, dl, lens, (size_t)B * 4, TIRX_COPY_HOST_TO_DEVICE));
      CHECK(tirx_runtime_alloc(rt, (size_t)B * H * D * 2, &dq));
      CHECK(tirx_runtime_alloc(rt, (size_t)B * H * D * 2, &dout));
      CHECK(tirx_runtime_fill32(rt, dq, 0x3c003c00u, (size_t)B * H * D / 2));
      for (int s = 0; s < sets; s++) {
        CHECK(tirx_runtime_alloc(rt, set_bytes, &kc[s]));
        CHECK(tirx_runtime_alloc(rt, set_bytes, &vc[s]));
        CHECK(tirx_runtime_fill32(rt, kc[s], 0x3c003c00u, set_bytes / 4));
        CHECK(tirx_runtime_fill32(rt, vc[s], 0x3b003b00u, set_bytes / 4));
      }
      int64_t qs[4] = {B, 1, H, D}, cs[4] = {npages, P, HKV, D}, bts[2] = {B, pages_per}, lns[1] = {B};
      tirx_tensor_arg q = {dq, TIRX_BF16, 4, qs, NULL}, o = {dout, TIRX_BF16, 4, qs, NULL};
      tirx_tensor_arg bt = {dbt, TIRX_I32, 2, bts, NULL}, cl = {dl, TIRX_I32, 1, lns, NULL};
      int per = sets < 10 ? 10 : sets;
      double *t = malloc((size_t)reps * sizeof *t);
      /* the chosen split, and where it splits, unsplit too ("tirx-unsplit": what the split buys) */
      for (int forced = 0; forced < 2; forced++) {
        tirx_decode_options opts = {.splits = forced, .context_lens_host = lens};
        tirx_decode_plan plan = {0};
        CHECK(tirx_kernels_decode_plan(&opts, B, H, HKV, 1, D, L, &plan));
        if (forced) { /* opts.splits 1, only where the chosen plan splits */
          tirx_decode_plan chosen = {0};
          CHECK(tirx_kernels_decode_plan(NULL, B, H, HKV, 1, D, L, &chosen));
          if (chosen.splits == 1) break;
        }
        for (int r = -1; r < reps; r++) { /* r = -1: warm-up (compile, workspace) */
          double t0 = now_us();
          for (int i = 0; i < per; i++) {
            tirx_tensor_arg k = {kc[i % sets], TIRX_BF16, 4, cs, NULL}, v = {vc[i % sets], TIRX_BF16, 4, cs, NULL};
            CHECK(tirx_op_decode_attention(rt, &opts, &q, &k, &v, &bt, &cl, &o, NULL, NULL));
          }
          CHECK(tirx_runtime_synchronize(rt, NULL));
          if (r >= 0) t[r] = (now_us() - t0) / per;
        }
        double us = median(t, reps), kv = 2.0 * (double)set_bytes, gbps = kv / us / 1e3;
        const char *impl = forced ? "tirx-unsplit" : "tirx";
        printf("%5d %7d %6d %10.1f %9.1f %8.0f %6.3f %s\n", B, L, plan.splits, us, kv / 1e6, gbps,
               gbps / cg, impl);
        if (f)
          fprintf(f, "%s,%d,%d,%d,%d,%d,%d,bf16,%d,%.2f,%.0f,%.1f,%.1f,%.4f\n", impl, B, L, H, HKV,
                  D, P, plan.splits, us, kv, gbps, cg, gbps / cg);
      }
      for (int s = 0; s < sets; s++) {
        CHECK(tirx_runtime_free(rt, kc[s]));
        CHECK(tirx_runtime_free(rt, vc[s]));
      }
      CHECK(tirx_runtime_free(rt, dbt));
      CHECK(tirx_runtime_free(rt, dl));
      CHECK(tirx_runtime_free(rt, dq));
      CHECK(tirx_runtime_free(rt, dout));
      free(kc), free(vc), free(perm), free(lens), free(t);
    }
  if (f && f != stdout) fclose(f);
  tirx_runtime_destroy(rt);
  return 0;
}
