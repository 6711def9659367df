/* The warp-specialised GEMM of examples/gemm.c on the CPU: its dispatch report, and the sm_90a
 * PTX NVRTC makes of it (TMA loads and stores, wgmma, setmaxnreg, mbarrier waits, stmatrix,
 * no local memory); gemm_build's argument errors; every kernel the plan picks compiles without
 * a spill under ptxas. */
#include <string.h>

#include "../helpers.h"
#include "gemm_ref.h"
#include "jit/jit.h"
#include "kernels/kernels_internal.h"

static void assert_has(const char *text, const char *want) {
  cr_assert_not_null(strstr(text, want), "no '%s' in:\n%.4000s", want, text);
}

Test(gemm_kernel, dispatch_report_and_sm90a_ptx, .timeout = 300) {
  static const tirx_dtype dts[2] = {TIRX_BF16, TIRX_F16};
  tirx_runtime *rt = NULL;
  tirx_runtime_options o = {.compile_only = true};
  cr_assert_eq(tirx_runtime_create(&o, &rt), TIRX_OK, "%s", tirx_last_error());
  for (int d = 0; d < 2; d++) {
    gemm_spec s = {.dtype = dts[d], .m = 8192, .n = 8192, .k = 8192};
    char err[4096] = "";
    tirx_kernel *k = gemm_build(&s, err, sizeof err);
    cr_assert_not_null(k, "%s", err);
    tirx_gemm_tiles t = gemm_pick(&s);
    cr_assert_eq(t.block_m, 128);
    cr_assert_eq(t.block_n, 256);
    const char *rep = tirx_kernel_dispatch_report(k);
    assert_has(rep, "copy_async(arch=sm_90, roles=global->shared, team=cta) -> copy_async.tma");
    assert_has(rep, "gemm_async(arch=sm_90, roles=shared,shared->local, team=warpgroup) -> "
                    "gemm_async.wgmma m=64,n=256,k=16");
    assert_has(rep, "copy(arch=sm_90, roles=local->shared, team=warpgroup) -> copy.stmatrix");
    assert_has(rep, "copy_async(arch=sm_90, roles=shared->global, team=cta) -> copy_async.tma");
    cr_assert_null(strstr(rep, "fallback"), "%s", rep);
    tirx_compiled *c = NULL;
    cr_assert_eq(tirx_compile(rt, k, "sm_90a", &c), TIRX_OK, "%s", tirx_last_error());
    const char *ptx = tirx_compiled_ptx(c);
    assert_has(ptx, d ? "wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16"
                      : "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16");
    assert_has(ptx, "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes");
    assert_has(ptx, "cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group");
    assert_has(ptx, "setmaxnreg.dec.sync.aligned.u32 40");
    assert_has(ptx, "setmaxnreg.inc.sync.aligned.u32 232");
    assert_has(ptx, "mbarrier.try_wait.parity");
    assert_has(ptx, "mbarrier.arrive.expect_tx");
    assert_has(ptx, "stmatrix.sync.aligned");
    assert_has(ptx, "wgmma.wait_group.sync.aligned 1");
    assert_has(ptx, ".maxntid 384, 1, 1");
    tirx_compiled_destroy(c);
    tirx_kernel_release(k);
  }
  tirx_runtime_destroy(rt);
}

/* ---- every planned kernel compiles without spills (issue 16) ---- */

/* ptxas' report (NVRTC's log) of k's source compiled for sm_90a with the library's options and
 * --ptxas-options=-v, which changes nothing in the code (bench/compile_time compares); parses
 * its registers and spill bytes into *regs, *stores and *loads. One compile: no second ptxas
 * run on the PTX. */
static void ptxas_figures(const tirx_kernel *k, const char *what, int *regs, int *stores,
                          int *loads) {
  const char *src = tirx_kernel_source(k);
  char arch[64];
  const char *opts[TIRX__NVRTC_MAX_OPTIONS + 1];
  int n = tirx__nvrtc_options("sm_90a", src, arch, opts);
  opts[n++] = "--ptxas-options=-v";
  tirx__nvrtc_raw raw;
  cr_assert(tirx__nvrtc_run_raw(src, n, opts, false, &raw), "%s: no compile thread", what);
  cr_assert_eq(raw.stage, TIRX__RAW_OK, "%s: NVRTC stage %d:\n%s", what, raw.stage,
               raw.log ? raw.log : "");
  const char *log = raw.log ? raw.log : "";
  const char *u = strstr(log, "Used "), *sp = strstr(log, " bytes spill stores");
  cr_assert(u && sp, "%s: no ptxas -v report in:\n%s", what, log);
  cr_assert_eq(sscanf(u, "Used %d registers", regs), 1, "%s:\n%s", what, log);
  while (sp > log && sp[-1] >= '0' && sp[-1] <= '9') sp--;
  cr_assert_eq(sscanf(sp, "%d bytes spill stores, %d bytes spill loads", stores, loads), 2,
               "%s:\n%s", what, log);
  tirx__nvrtc_raw_free(&raw);
}

/* The spill tests build the planned GEMM kernels over again, about 380 of them, which the
 * golden set does not record as unit.gemm_kernel.* cases (it holds the GEMM's kernels of its
 * own shapes, tests/golden/cases.c): in its recording run of this suite (TIRX_GOLDEN_RECORD
 * set, golden_capture.c) they are skipped, which also spares it their 80 s of compiles. */
static void skip_when_recording(void) {
  const char *rec = getenv("TIRX_GOLDEN_RECORD");
  if (rec && *rec) cr_skip_test("the golden set's recording run: the spill tests record nothing");
}

/* k compiles for sm_90a with 0 bytes of spill stores and loads. */
static void expect_no_spills(tirx_kernel *k, const char *what) {
  cr_assert_not_null(k, "%s: %s", what, tirx_last_error());
  int regs = 0, stores = -1, loads = -1;
  ptxas_figures(k, what, &regs, &stores, &loads);
  cr_expect(stores == 0 && loads == 0, "%s (%s): %d registers, %d bytes spill stores, %d bytes "
            "spill loads", what, tirx_kernel_name(k), regs, stores, loads);
  tirx_kernel_release(k);
}

/* The tile shapes the plan picks, each with a shape that picks it: M of 128 and 64 (whole rows
 * of A for the tiles of 128 and of 64 rows: M = 128 comes first) over N = 16 .. 1024 in steps
 * of 16, K 4096 and 16384 (a long K turns narrow 128-row tiles into 64 columns and split-K),
 * on 1 SM (so that every tile the cost model can choose is chosen for some N) and 132.
 * Returns the count (31 today: 64 x 32 .. 64 x 256 and 128 x 16 .. 128 x 256 in steps of
 * 16). */
enum { MAX_PLANNED = 64 };
static int planned_tiles(gemm_spec *out) {
  static const int64_t ms[] = {128, 64}, ks[] = {4096, 16384};
  static const int sms[] = {1, 132};
  int n = 0;
  for (int a = 0; a < 2; a++)
    for (int i = 0; i < 2; i++)
      for (int q = 0; q < 2; q++)
        for (int64_t cols = 16; cols <= 1024; cols += 16) {
          gemm_spec s = {.dtype = TIRX_BF16, .m = ms[i], .n = cols, .k = ks[q], .sms = sms[a]};
          tirx_gemm_tiles t = gemm_pick(&s);
          bool seen = false;
          for (int j = 0; j < n && !seen; j++) {
            tirx_gemm_tiles u = gemm_pick(&out[j]);
            seen = u.block_m == t.block_m && u.block_n == t.block_n && u.stages == t.stages;
          }
          if (!seen && n < MAX_PLANNED) out[n++] = s;
        }
  return n;
}

/* The kernel of s, which must compile without a spill. */
static void spec_compiles_without_spills(const gemm_spec *s) {
  tirx_gemm_tiles t = gemm_pick(s);
  char err[4096] = "", what[128];
  snprintf(what, sizeof what, "%s %dx%dx%d epilogue %d (M %lld, N %lld, K %lld, sms %d)",
           tirx_dtype_name(s->dtype), t.block_m, t.block_n, t.stages, (int)s->epilogue,
           (long long)s->m, (long long)s->n, (long long)s->k, s->sms);
  tirx_kernel *k = gemm_build(s, err, sizeof err);
  cr_assert_not_null(k, "%s: %s", what, err);
  expect_no_spills(k, what);
}

/* The planned tiles at least min_n wide with epilogue ep in both dtypes compile without a
 * spill (the accumulators are BLOCK_N / 2 f32 registers a thread, 8 to 128, under ptxas' cap
 * of 168 for two consumers, 232 for one), and so does the ragged variant (N not a multiple of
 * 8: element stores after the stmatrix) of the tiles 224 to 256 wide: the fused epilogues of
 * the tiles 192 to 256 wide spilled 12 to 552 bytes before the epilogue ran in 64-column
 * chunks (PERF-NOTES, session 14). (Every tile's ragged variant: 0 bytes too, checked once
 * with nvcc.) */
static void planned_kernels_compile_without_spills(tirx_epilogue ep, int min_n) {
  skip_when_recording();
  gemm_spec tiles[MAX_PLANNED];
  int n = planned_tiles(tiles), ragged = 0;
  cr_assert_geq(n, 31, "%d tile shapes", n);
  bool wide = false;
  for (int i = 0; i < n; i++)
    for (int d = 0; d < 2; d++) {
      gemm_spec s = tiles[i];
      s.dtype = d ? TIRX_F16 : TIRX_BF16, s.epilogue = ep;
      tirx_gemm_tiles t = gemm_pick(&s);
      if (t.block_n < min_n) continue;
      wide |= t.block_m == 128 && t.block_n == 256;
      spec_compiles_without_spills(&s);
      for (int delta = -1; delta <= 1 && t.block_n >= 224; delta += 2) { /* N - 1, else N + 1 */
        gemm_spec r = s;
        r.n += delta;
        tirx_gemm_tiles u = gemm_pick(&r);
        if (u.block_m != t.block_m || u.block_n != t.block_n) continue;
        spec_compiles_without_spills(&r);
        ragged++;
        break;
      }
    }
  cr_expect(wide, "no 128x256 tile among the %d", n);
  cr_expect_eq(ragged, 12, "%d ragged variants of the tiles 224 to 256 wide", ragged);
}

/* The fused activations on every planned tile (they spilled from 96 accumulators on: 64 x 192,
 * 28 bytes); the kernels without one, which never spilled (the unit suite runs on 2 cores,
 * and these take most of this file's time), on the tiles of 64 accumulators or more. */
Test(gemm_kernel, planned_bias_silu_kernels_compile_without_spills, .timeout = 600) {
  planned_kernels_compile_without_spills(TIRX_EPILOGUE_BIAS_SILU, 16);
}
Test(gemm_kernel, planned_bias_gelu_kernels_compile_without_spills, .timeout = 600) {
  planned_kernels_compile_without_spills(TIRX_EPILOGUE_BIAS_GELU, 16);
}
Test(gemm_kernel, planned_plain_and_bias_kernels_compile_without_spills, .timeout = 600) {
  planned_kernels_compile_without_spills(TIRX_EPILOGUE_NONE, 128);
  planned_kernels_compile_without_spills(TIRX_EPILOGUE_BIAS, 128);
}

/* Occurrences of needle in hay. */
static int occurrences(const char *hay, const char *needle) {
  int n = 0;
  for (const char *p = strstr(hay, needle); p; p = strstr(p + strlen(needle), needle)) n++;
  return n;
}

/* Every planned tile with a bias (alone, SiLU, GeLU), unclustered and in both clusters, whole
 * and ragged in N: the bias row's barriers are initialised, waited on by the producer and
 * arrived on by each consumer warpgroup once per tile, in one place of the source. (The
 * chunked epilogue of session 14 left the arrive out on the fused tiles under 64 columns: a
 * CTA's second tile then waited forever, seen on the GPU only where a CTA runs two tiles.)
 * Source only: no compile. */
Test(gemm_kernel, planned_bias_kernels_release_the_bias_row_once_a_tile, .timeout = 300) {
  skip_when_recording(); /* 558 kernels: not golden cases */
  gemm_spec tiles[MAX_PLANNED];
  int n = planned_tiles(tiles), checked = 0;
  static const int clusters[3][2] = {{1, 1}, {2, 1}, {1, 2}};
  for (int i = 0; i < n; i++)
    for (int e = TIRX_EPILOGUE_BIAS; e <= TIRX_EPILOGUE_BIAS_GELU; e++)
      for (int q = 0; q < 3; q++)
        for (int ragged = 0; ragged < 2; ragged++) {
          gemm_spec s = tiles[i];
          s.epilogue = (tirx_epilogue)e, s.path = TIRX_GEMM_PATH_WGMMA;
          s.cluster_m = clusters[q][0], s.cluster_n = clusters[q][1];
          if (q && s.sms < 2) s.sms = 2; /* a 2-CTA cluster needs 2 SMs (refused otherwise) */
          s.n += ragged;
          tirx_gemm_tiles t = gemm_pick(&s);
          char err[4096] = "", what[128];
          snprintf(what, sizeof what, "%dx%d epilogue %d cluster %dx%d N %lld", t.block_m,
                   t.block_n, e, s.cluster_m, s.cluster_n, (long long)s.n);
          tirx_kernel *k = gemm_build(&s, err, sizeof err);
          cr_assert_not_null(k, "%s: %s", what, err);
          const char *src = tirx_kernel_source(k);
          cr_expect_eq(occurrences(src, "tirx_mbar_arrive(&bias_empty[0]);"), 1, "%s", what);
          cr_expect_geq(occurrences(src, "&bias_empty[0]"), 3, "%s: init, wait, arrive", what);
          tirx_kernel_release(k);
          checked++;
        }
  cr_assert_eq(checked, n * 3 * 3 * 2);
}

/* The split-K path's kernels: the wgmma kernel of the planned tiles 128 to 256 wide (f32
 * partial tiles, no epilogue) in both dtypes, and the reduction with each epilogue. */
Test(gemm_kernel, planned_split_k_kernels_compile_without_spills, .timeout = 600) {
  skip_when_recording();
  gemm_spec tiles[MAX_PLANNED];
  int n = planned_tiles(tiles);
  for (int i = 0; i < n; i++)
    for (int d = 0; d < 2; d++) {
      gemm_spec s = tiles[i];
      s.dtype = d ? TIRX_F16 : TIRX_BF16, s.path = TIRX_GEMM_PATH_WGMMA_SPLITK;
      tirx_gemm_tiles t = gemm_pick(&s);
      if (t.block_n < 128) continue;
      char err[4096] = "", what[128];
      snprintf(what, sizeof what, "split-K %s %dx%dx%d", tirx_dtype_name(s.dtype), t.block_m,
               t.block_n, t.stages);
      tirx_kernel *k = gemm_build(&s, err, sizeof err);
      cr_assert_not_null(k, "%s: %s", what, err);
      expect_no_spills(k, what);
    }
  for (int d = 0; d < 2; d++)
    for (int e = 0; e < 4; e++) {
      tirx_kernel *k = NULL;
      char what[64];
      snprintf(what, sizeof what, "split-K reduction %s epilogue %d", d ? "f16" : "bf16", e);
      cr_assert_eq(tirx__kernels_gemm_reduce_build(d ? TIRX_F16 : TIRX_BF16, (tirx_epilogue)e, &k),
                   TIRX_OK, "%s: %s", what, tirx_last_error());
      expect_no_spills(k, what);
    }
}

/* The gemv path as the plan takes it (M <= 4: gemm.c's GEMV_AUTO_MAX_M), every rows per CTA,
 * epilogue and dtype. (Forced at M = 8 with 2 rows and no epilogue it spills 4 bytes under the
 * 64 registers ptxas gives it: not a planned kernel.) */
Test(gemm_kernel, planned_gemv_kernels_compile_without_spills, .timeout = 600) {
  skip_when_recording();
  for (int d = 0; d < 2; d++)
    for (int m = 1; m <= 4; m++)
      for (int r = 1; r <= 4; r *= 2)
        for (int e = 0; e < 4; e++) {
          gemm_spec s = {.dtype = d ? TIRX_F16 : TIRX_BF16, .m = m, .n = 4096, .k = 4096,
                         .epilogue = (tirx_epilogue)e, .path = TIRX_GEMM_PATH_GEMV,
                         .gemv_rows = r};
          char err[4096] = "", what[96];
          snprintf(what, sizeof what, "gemv %s m=%d rows=%d epilogue %d",
                   tirx_dtype_name(s.dtype), m, r, e);
          tirx_kernel *k = gemm_build(&s, err, sizeof err);
          cr_assert_not_null(k, "%s: %s", what, err);
          expect_no_spills(k, what);
        }
}
