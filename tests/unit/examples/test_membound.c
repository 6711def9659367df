/* The staged rows of examples/membound.c on the CPU: which kernels stage their rows
 * (membound_stages), the set-up calls' argument checks, and that a staged kernel reads its rows
 * through TMA into a ring and compiles for sm_90a (the GPU suite runs them:
 * tests/gpu/test_gpu.c, membound_staged_*). */
#include <string.h>

#include "../helpers.h"
#include "membound.h"

static void assert_has(const char *text, const char *want) {
  cr_assert_not_null(strstr(text, want), "no '%s' in:\n%s", want, text);
}

Test(example_membound, wide_rows_of_the_norms_and_softmax_are_staged) {
  /* 64 KiB rows: one CTA of 1024 threads a SM, at most two stages beside the weight rows */
  cr_assert_eq(membound_stages(MEMBOUND_SOFTMAX, TIRX_BF16, 32768), 2);
  cr_assert_eq(membound_stages(MEMBOUND_LAYERNORM, TIRX_F16, 32768), 1); /* + w, bias */
  cr_assert_eq(membound_stages(MEMBOUND_RMSNORM, TIRX_BF16, 32768), 2);  /* + w */
  cr_assert_eq(membound_stages(MEMBOUND_RMSNORM, TIRX_F32, 8192), 2); /* 32 KiB rows, 512 threads */
  cr_assert_eq(membound_stages(MEMBOUND_SOFTMAX, TIRX_F32, 32768), 1); /* 128 KiB rows */
  cr_assert_eq(membound_stages(MEMBOUND_RMSNORM, TIRX_F32, 32768), 0); /* + w: no room */
  cr_assert_eq(membound_stages(MEMBOUND_SOFTMAX, TIRX_BF16, 8192), 0); /* 16 KiB: not by default */
  cr_assert_eq(membound_stages(MEMBOUND_SOFTMAX, TIRX_BF16, 65536 + 256), 0); /* no box */
  cr_assert_eq(membound_stages(MEMBOUND_SOFTMAX, TIRX_BF16, 20000), 2); /* 200 x 100 */
  cr_assert_eq(membound_stages(MEMBOUND_ADD_RMSNORM, TIRX_BF16, 32768), 0); /* two inputs */
  cr_assert_eq(membound_stages(MEMBOUND_ROW_SUM, TIRX_BF16, 32768), 0);
  cr_assert(membound_set_variant(MEMBOUND_V_STAGED));
  cr_assert_gt(membound_stages(MEMBOUND_SOFTMAX, TIRX_BF16, 8192), 0);
  cr_assert_gt(membound_stages(MEMBOUND_LAYERNORM, TIRX_BF16, 5000), 0); /* 200 x 25 */
  cr_assert_eq(membound_stages(MEMBOUND_LAYERNORM, TIRX_BF16, 5001), 0); /* 10002 bytes */
  cr_assert_eq(membound_stages(MEMBOUND_SOFTMAX, TIRX_BF16, 512), 0); /* a warp a row */
  cr_assert(membound_set_variant(MEMBOUND_V_UNSTAGED));
  cr_assert_eq(membound_stages(MEMBOUND_SOFTMAX, TIRX_BF16, 32768), 0);
  cr_assert(membound_set_variant(MEMBOUND_V_WEIGHTS_GLOBAL)); /* no w, bias in shared */
  cr_assert_eq(membound_stages(MEMBOUND_LAYERNORM, TIRX_BF16, 32768), 2);
  cr_assert_eq(membound_stages(MEMBOUND_RMSNORM, TIRX_F32, 32768), 1);
  cr_assert(membound_set_variant(0));
  cr_assert(membound_set_stages(1));
  cr_assert_eq(membound_stages(MEMBOUND_SOFTMAX, TIRX_BF16, 32768), 1);
  cr_assert_eq(membound_stages(MEMBOUND_SOFTMAX, TIRX_BF16, 8192), 1); /* forced */
  cr_assert(membound_set_stages(4));
  cr_assert_eq(membound_stages(MEMBOUND_SOFTMAX, TIRX_BF16, 32768), 0); /* 256 KiB */
  cr_assert(membound_set_stages(0));
  cr_assert(membound_set_cluster(2)); /* a cluster per row is never staged */
  cr_assert_eq(membound_stages(MEMBOUND_SOFTMAX, TIRX_BF16, 32768), 0);
  cr_assert(membound_set_cluster(0));
}

Test(example_membound, set_up_calls_refuse_bad_values) {
  cr_assert(!membound_set_variant(64));
  cr_assert(!membound_set_sms(0));
  cr_assert(!membound_set_sms(-3));
  cr_assert(!membound_set_sms(4096));
  cr_assert(membound_set_sms(132));
  cr_assert(!membound_set_stages(5));
  cr_assert(!membound_set_stages(-1));
}

Test(example_membound, a_staged_kernel_reads_its_rows_through_a_tma_ring, .timeout = 300) {
  tirx_runtime *rt = NULL;
  tirx_runtime_options o = {.compile_only = true, .cache_disabled = true};
  cr_assert_eq(tirx_runtime_create(&o, &rt), TIRX_OK, "%s", tirx_last_error());
  static const membound_kind kinds[] = {MEMBOUND_SOFTMAX, MEMBOUND_LAYERNORM, MEMBOUND_RMSNORM};
  for (int i = 0; i < 3; i++) {
    char err[1024] = "";
    tirx_kernel *k = membound_build(kinds[i], TIRX_BF16, 32768, false, err, sizeof err);
    cr_assert_not_null(k, "%s", err);
    const char *rep = tirx_kernel_dispatch_report(k), *src = tirx_kernel_source(k);
    assert_has(rep, "copy_async(arch=sm_90, roles=global->shared, team=cta) -> copy_async.tma box=32768");
    assert_has(rep, "copy(arch=sm_90, roles=shared->local, team=cta) -> copy.vec vec=8");
    assert_has(src, "for (int row = (int)blockIdx.x; row < rows; row += (int)gridDim.x) {");
    char ring[96];
    snprintf(ring, sizeof ring, "tirx_bf16 *ring = (tirx_bf16 *)(tirx_smem + 0); /* ((%d),(32768))",
             i == 1 ? 1 : 2);
    assert_has(src, ring);
    if (i > 0) assert_has(src, " *wrows = ");
    tirx_compiled *c = NULL;
    cr_assert_eq(tirx_compile(rt, k, "sm_90a", &c), TIRX_OK, "%s", tirx_last_error());
    const char *ptx = tirx_compiled_ptx(c);
    assert_has(ptx, "cp.async.bulk.tensor.3d.shared::cluster.global");
    assert_has(ptx, "mbarrier.try_wait.parity");
    cr_assert_null(strstr(ptx, ".local"), "a staged kernel uses local memory");
    tirx_compiled_destroy(c);
    tirx_kernel_release(k);
  }
  tirx_runtime_destroy(rt);
}

/* Every case of the GPU suite's membound_staged_* builds (staged or not, as membound_stages
 * says): rows of 5000 and 20000 elements are TMA boxes of 200 x 25 and 200 x 100, and the
 * ring's rows start 128 bytes apart. */
Test(example_membound, the_gpu_suites_staged_cases_build) {
  static const membound_kind kinds[] = {MEMBOUND_SOFTMAX, MEMBOUND_LAYERNORM, MEMBOUND_RMSNORM};
  static const tirx_dtype dts[] = {TIRX_F32, TIRX_F16, TIRX_BF16};
  static const struct { int64_t width; int flags; } cases[] = {
      {32768, 0}, {20000, 0}, {8192, MEMBOUND_V_STAGED}, {5000, MEMBOUND_V_STAGED},
      {2048, MEMBOUND_V_STAGED}, {32768, MEMBOUND_V_UNSTAGED},
      {32768, MEMBOUND_V_WEIGHTS_GLOBAL}, {5000, MEMBOUND_V_STAGED | MEMBOUND_V_WEIGHTS_GLOBAL}};
  for (int i = 0; i < 3; i++)
    for (int d = 0; d < 3; d++)
      for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        char err[1024] = "";
        cr_assert(membound_set_variant(cases[c].flags));
        int S = membound_stages(kinds[i], dts[d], cases[c].width);
        tirx_kernel *k = membound_build(kinds[i], dts[d], cases[c].width, false, err, sizeof err);
        membound_set_variant(0);
        cr_assert_not_null(k, "%s %s %lld: %s", membound_name(kinds[i]), tirx_dtype_name(dts[d]),
                           (long long)cases[c].width, err);
        bool ring = strstr(tirx_kernel_source(k), " *ring = ") != NULL;
        cr_assert_eq(ring, S > 0, "%s %s %lld: %d stages, ring %d", membound_name(kinds[i]),
                     tirx_dtype_name(dts[d]), (long long)cases[c].width, S, ring);
        tirx_kernel_release(k);
      }
}

/* Common hidden sizes whose rows take a CTA of a number of warps that is not a power of two
 * (3072 bf16: rmsnorm 192 threads, 6 warps; layernorm 96, 3 warps) build since reduce.smem
 * lowers any whole number of warps, and compile for sm_90a without local memory. */
Test(example_membound, hidden_sizes_on_warps_that_are_not_a_power_of_two_build, .timeout = 300) {
  tirx_runtime *rt = NULL;
  tirx_runtime_options o = {.compile_only = true, .cache_disabled = true};
  cr_assert_eq(tirx_runtime_create(&o, &rt), TIRX_OK, "%s", tirx_last_error());
  static const int64_t widths[] = {3072, 5120, 6144};
  for (int w = 0; w < 3; w++)
    for (int kind = 0; kind < MEMBOUND_KIND_COUNT; kind++) {
      char err[1024] = "";
      tirx_kernel *k = membound_build((membound_kind)kind, TIRX_BF16, widths[w], false, err,
                                      sizeof err);
      cr_assert_not_null(k, "%s %lld: %s", membound_name((membound_kind)kind),
                         (long long)widths[w], err);
      if (kind == MEMBOUND_RMSNORM) {
        char want[64];
        snprintf(want, sizeof want, "-> reduce.smem threads=%lld\n", (long long)widths[w] / 16);
        assert_has(tirx_kernel_dispatch_report(k), want); /* 192, 320, 384: 6, 10, 12 warps */
        tirx_compiled *c = NULL;
        cr_assert_eq(tirx_compile(rt, k, "sm_90a", &c), TIRX_OK, "%s", tirx_last_error());
        cr_assert_null(strstr(tirx_compiled_ptx(c), ".local"), "rmsnorm uses local memory");
        tirx_compiled_destroy(c);
      }
      tirx_kernel_release(k);
    }
  tirx_runtime_destroy(rt);
}
