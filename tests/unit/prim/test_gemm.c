/* The gemm and gemm_async families (dispatch/families/gemm_*.c, dispatch/lower_gemm.c, the
 * gemm.scalar lowering in lower.c): dispatch choices and reasons, the generated code, and
 * NVRTC for sm_90a (wgmma.mma_async in the PTX). */
#include <string.h>

#include "../helpers.h"
#include "mma_tiles.h"

static tirx_runtime *compile_only_runtime(void) {
  tirx_runtime *rt = NULL;
  tirx_runtime_options o = {.compile_only = true};
  cr_assert_eq(tirx_runtime_create(&o, &rt), TIRX_OK, "%s", tirx_last_error());
  return rt;
}

static void assert_has(const char *text, const char *want) {
  cr_assert_not_null(strstr(text, want), "no '%s' in:\n%s", want, text);
}

/* Compiles k for sm_90a and returns its PTX (malloc'ed). */
static char *ptx_of(tirx_runtime *rt, const tirx_kernel *k) {
  tirx_compiled *c = NULL;
  cr_assert_eq(tirx_compile(rt, k, "sm_90a", &c), TIRX_OK, "%s\n%s", tirx_last_error(),
               tirx_kernel_source(k));
  char *p = strdup(tirx_compiled_ptx(c));
  tirx_compiled_destroy(c);
  return p;
}

static tirx_kernel *tile(mma_tile t) {
  char err[2048] = "";
  tirx_kernel *k = example_mma_tile(&t, err, sizeof err);
  cr_assert_not_null(k, "%s", err);
  return k;
}

Test(prim_gemm, wgmma_tile_dispatches_and_compiles, .timeout = 300) {
  tirx_runtime *rt = compile_only_runtime();
  tirx_kernel *k = tile((mma_tile){"wgmma", TIRX_BF16, 64, 128, 64, 1, 128, false});
  const char *rep = tirx_kernel_dispatch_report(k);
  assert_has(rep, "gemm_async(arch=sm_90, roles=shared,shared->local, team=warpgroup, "
                  "family=wgmma) -> gemm_async.wgmma m=64,n=128,k=16 (forced)");
  assert_has(rep, "-> copy.stmatrix num=4");
  const char *src = tirx_kernel_source(k);
  assert_has(src, "tirx_wgmma_m64n128k16_bf16<0, 0>(&acc[0]");
  assert_has(src, "tirx_wgmma_fence();");
  assert_has(src, "tirx_wgmma_wait<0>();\n");
  assert_has(src, "tirx_fence_regs<64>(acc);");
  char *ptx = ptx_of(rt, k);
  assert_has(ptx, "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16");
  assert_has(ptx, "wgmma.fence.sync.aligned");
  assert_has(ptx, "wgmma.commit_group.sync.aligned");
  assert_has(ptx, "wgmma.wait_group.sync.aligned 0");
  assert_has(ptx, "stmatrix.sync.aligned.m8n8.x4.shared.b16");
  assert_has(ptx, "fence.proxy.async.shared::cta");
  free(ptx);
  tirx_kernel_release(k);
  tirx_runtime_destroy(rt);
}
