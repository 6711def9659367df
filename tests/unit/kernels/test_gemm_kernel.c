/* The warp-specialised GEMM of examples/gemm.c on the CPU: its dispatch report, and the sm_90a
 * PTX NVRTC makes of it (TMA loads and stores, wgmma, setmaxnreg, mbarrier waits, stmatrix,
 * no local memory); gemm_build's argument errors. */
#include <string.h>

#include "../helpers.h"
#include "gemm_ref.h"

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

