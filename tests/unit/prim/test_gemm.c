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

/* Every tile of the GPU suite (tests/gpu/test_mma.c) builds and compiles for sm_90a. */
Test(prim_gemm, every_gpu_tile_compiles, .timeout = 600) {
  static const mma_tile tiles[] = {
      {"wgmma", TIRX_BF16, 64, 128, 64, 1, 128, false}, {"wgmma", TIRX_BF16, 128, 256, 64, 2, 128, false},
      {"wgmma", TIRX_F16, 128, 64, 128, 1, 128, true},  {"wgmma", TIRX_BF16, 64, 64, 64, 1, 64, true},
      {"wgmma", TIRX_BF16, 64, 32, 64, 1, 32, false},   {"wgmma", TIRX_BF16, 64, 48, 64, 1, 0, true},
      {"wgmma", TIRX_F16, 64, 24, 32, 1, 64, false},    {"mma", TIRX_BF16, 64, 128, 64, 0, 0, false},
      {"mma", TIRX_F16, 32, 24, 32, 0, 0, true},        {"mma", TIRX_BF16, 16, 8, 16, 0, 0, false},
      {"scalar", TIRX_BF16, 64, 128, 64, 0, 0, false},  {"scalar", TIRX_F16, 32, 24, 32, 0, 0, true},
      {"scalar", TIRX_BF16, 128, 64, 32, 2, 0, true},
  };
  tirx_runtime *rt = compile_only_runtime();
  for (size_t i = 0; i < sizeof tiles / sizeof tiles[0]; i++) {
    tirx_kernel *k = tile(tiles[i]);
    char *ptx = ptx_of(rt, k);
    const char *want = strcmp(tiles[i].family, "wgmma") == 0 ? "wgmma.mma_async.sync.aligned"
                       : strcmp(tiles[i].family, "mma") == 0 ? "mma.sync.aligned.m16n8k16.row.col.f32"
                                                             : "fma.rn.f32";
    assert_has(ptx, want);
    assert_has(ptx, "stmatrix.sync.aligned");
    free(ptx);
    tirx_kernel_release(k);
  }
  tirx_runtime_destroy(rt);
}
