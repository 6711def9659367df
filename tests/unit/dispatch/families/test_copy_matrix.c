/* Lowering of copy.ldmatrix and copy.stmatrix (src/dispatch/families/copy_ldmatrix.c, tirx__lower_matrix): a
 * warp moves a 16-bit tile between shared memory and mma/ldmatrix fragments; the instruction
 * shapes, residual loops, the forced scalar fallback, and NVRTC for sm_90a; ldmatrix of a
 * warpgroup's wgmma A fragments. */
#include <string.h>

#include "../../helpers.h"

/* The mma.sync m16n8k16 A fragment: 16x16 in four 8x8 ldmatrix blocks. */
#define MMA_A "((2,8),(2,4,2)):((2@reg,4@laneid),(4@reg,1@laneid,1@reg))"

/* x -> s (shared) -> v (registers, frag) -> s2 (shared) -> y, one warp. ld/st configure the
 * ldmatrix and stmatrix calls. frag NULL: tirx_layout_ldmatrix(4) (32x8). */
static tirx_kernel *matrix_kernel(tirx_dtype dt, const char *frag, int64_t rows, int64_t cols,
                                  const tirx_config *ld, const tirx_config *st, char *err,
                                  size_t cap) {
  tirx_builder *b = tirx_builder_create("mx");
  tirx_tensor *x = tirx_param_tensor(b, "x", dt, TIRX_EXPRS(tirx_int(b, rows), tirx_int(b, cols)),
                                     NULL);
  tirx_tensor *y = tirx_param_tensor(b, "y", dt, TIRX_EXPRS(tirx_int(b, rows), tirx_int(b, cols)),
                                     NULL);
  tirx_set_block(b, 32, 1, 1);
  tirx_tensor *s = tirx_alloc_shared(b, "s", dt, TIRX_DIMS(rows, cols), NULL);
  tirx_tensor *s2 = tirx_alloc_shared(b, "s2", dt, TIRX_DIMS(rows, cols), NULL);
  tirx_team_begin(b, TIRX_TEAM_WARP);
  tirx_copy(b, tirx_whole(b, s), tirx_whole(b, x), NULL);
  tirx_team_end(b);
  tirx_sync_threads(b);
  tirx_team_begin(b, TIRX_TEAM_WARP);
  tirx_arena *a = tirx_builder_arena(b);
  tirx_tensor *v = tirx_alloc_local(b, "v", dt, TIRX_DIMS(rows, cols),
                                    frag ? tirx_layout_parse(a, frag) : tirx_layout_ldmatrix(a, 4));
  tirx_copy(b, tirx_whole(b, v), tirx_whole(b, s), ld);
  tirx_copy(b, tirx_whole(b, s2), tirx_whole(b, v), st);
  tirx_team_end(b);
  tirx_sync_threads(b);
  tirx_team_begin(b, TIRX_TEAM_WARP);
  tirx_copy(b, tirx_whole(b, y), tirx_whole(b, s2), NULL);
  tirx_team_end(b);
  tirx_kernel *k = NULL;
  if (tirx_kernel_build(b, &k) != TIRX_OK) snprintf(err, cap, "%s", tirx_builder_error(b));
  tirx_builder_destroy(b);
  return k;
}

static tirx_runtime *compile_only_runtime(void) {
  tirx_runtime *rt = NULL;
  tirx_runtime_options o = {.compile_only = true};
  cr_assert_eq(tirx_runtime_create(&o, &rt), TIRX_OK, "%s", tirx_last_error());
  return rt;
}

static void assert_compiles(tirx_runtime *rt, const tirx_kernel *k) {
  tirx_compiled *c = NULL;
  cr_assert_eq(tirx_compile(rt, k, "sm_90a", &c), TIRX_OK, "%s\n%s", tirx_last_error(),
               tirx_kernel_source(k));
  tirx_compiled_destroy(c);
}

static void assert_has(const char *text, const char *want) {
  cr_assert_not_null(strstr(text, want), "no '%s' in:\n%s", want, text);
}

Test(prim_ldmatrix, mma_a_fragment_lowers_to_ldmatrix_and_stmatrix_x4, .timeout = 300) {
  tirx_runtime *rt = compile_only_runtime();
  static const tirx_dtype dts[] = {TIRX_BF16, TIRX_F16};
  for (int d = 0; d < 2; d++) {
    char err[1024] = "";
    tirx_kernel *k = matrix_kernel(dts[d], MMA_A, 16, 16, NULL, NULL, err, sizeof err);
    cr_assert_not_null(k, "%s", err);
    const char *src = tirx_kernel_source(k), *rep = tirx_kernel_dispatch_report(k);
    assert_has(rep, "[mx:2] copy(arch=sm_90, roles=shared->local, team=warp) -> copy.ldmatrix num=4\n");
    assert_has(rep, "[mx:3] copy(arch=sm_90, roles=local->shared, team=warp) -> copy.stmatrix num=4\n");
    assert_has(src, "/* tirx: copy.ldmatrix num=4: copy(");
    assert_has(src, "/* tirx: copy.stmatrix num=4: copy(");
    assert_has(src, "tirx_ldmatrix_x4(&s[");
    assert_has(src, "tirx_stmatrix_x4(&s2[");
    /* The prelude's helpers hold the instructions. */
    assert_has(src, "ldmatrix.sync.aligned.m8n8.x4.shared.b16");
    assert_has(src, "stmatrix.sync.aligned.m8n8.x4.shared.b16");
    /* The printed IR names the move. */
    const char *ir = tirx_kernel_ir_str(k);
    cr_assert_not_null(ir);
    assert_has(ir, "= ldmatrix.x4(s[");
    assert_has(ir, "stmatrix.x4(s2[");
    assert_compiles(rt, k);
    tirx_kernel_release(k);
  }
  tirx_runtime_destroy(rt);
}

Test(prim_ldmatrix, smaller_shapes_loop_over_the_matrices, .timeout = 300) {
  tirx_runtime *rt = compile_only_runtime();
  for (int64_t num = 1; num <= 2; num *= 2) {
    char err[1024] = "", want[64];
    tirx_config cfg = {.shape = {num}};
    tirx_kernel *k = matrix_kernel(TIRX_BF16, MMA_A, 16, 16, &cfg, &cfg, err, sizeof err);
    cr_assert_not_null(k, "%s", err);
    const char *src = tirx_kernel_source(k);
    snprintf(want, sizeof want, "tirx_ldmatrix_x%d(&s[", (int)num);
    assert_has(src, want);
    snprintf(want, sizeof want, "tirx_stmatrix_x%d(&s2[", (int)num);
    assert_has(src, want);
    snprintf(want, sizeof want, "copy.ldmatrix num=%d", (int)num);
    assert_has(tirx_kernel_dispatch_report(k), want);
    assert_has(src, "#pragma unroll");
    assert_compiles(rt, k);
    tirx_kernel_release(k);
  }
  /* The ldmatrix .x4 fragment itself (32x8), and a 32x16 tile of two of them. */
  char err[1024] = "";
  tirx_kernel *k = matrix_kernel(TIRX_F16, NULL, 32, 8, NULL, NULL, err, sizeof err);
  cr_assert_not_null(k, "%s", err);
  assert_has(tirx_kernel_source(k), "tirx_ldmatrix_x4(&s[");
  assert_compiles(rt, k);
  tirx_kernel_release(k);
  k = matrix_kernel(TIRX_BF16, "((4,8),(2,4,2)):((2@reg,4@laneid),(8@reg,1@laneid,1@reg))", 32,
                    16, NULL, NULL, err, sizeof err);
  cr_assert_not_null(k, "%s", err);
  assert_has(tirx_kernel_dispatch_report(k), "copy.ldmatrix num=4");
  assert_has(tirx_kernel_source(k), "#pragma unroll");
  assert_compiles(rt, k);
  tirx_kernel_release(k);
  tirx_runtime_destroy(rt);
}

Test(prim_ldmatrix, swizzled_shared_tiles_address_rows_through_the_swizzle, .timeout = 300) {
  tirx_builder *b = tirx_builder_create("mx");
  tirx_arena *a = tirx_builder_arena(b);
  tirx_set_block(b, 32, 1, 1);
  tirx_tensor *s = tirx_alloc_shared(b, "s", TIRX_BF16, TIRX_DIMS(16, 64),
                                     tirx_layout_smem_tile(a, 16, 64, 2, 128));
  tirx_team_begin(b, TIRX_TEAM_WARP);
  tirx_tensor *v = tirx_alloc_local(b, "v", TIRX_BF16, TIRX_DIMS(16, 16), tirx_layout_parse(a, MMA_A));
  tirx_region *r =
      tirx_region_new(b, s, TIRX_EXPRS(tirx_int(b, 0), tirx_int(b, 16)), (int64_t[]){16, 16});
  tirx_copy(b, tirx_whole(b, v), r, NULL);
  tirx_copy(b, r, tirx_whole(b, v), NULL);
  tirx_team_end(b);
  tirx_kernel *k = NULL;
  cr_assert_eq(tirx_kernel_build(b, &k), TIRX_OK, "%s", tirx_builder_error(b));
  tirx_builder_destroy(b);
  assert_has(tirx_kernel_source(k), "tirx_ldmatrix_x4(&s[tirx_swizzle(");
  assert_has(tirx_kernel_source(k), "tirx_stmatrix_x4(&s[tirx_swizzle(");
  tirx_runtime *rt = compile_only_runtime();
  assert_compiles(rt, k);
  tirx_runtime_destroy(rt);
  tirx_kernel_release(k);
}

Test(prim_ldmatrix, forced_scalar_fallback_compiles, .timeout = 300) {
  tirx_runtime *rt = compile_only_runtime();
  char err[1024] = "";
  tirx_config cfg = {.family = "scalar"};
  tirx_kernel *k = matrix_kernel(TIRX_BF16, MMA_A, 16, 16, &cfg, &cfg, err, sizeof err);
  cr_assert_not_null(k, "%s", err);
  const char *rep = tirx_kernel_dispatch_report(k);
  assert_has(rep, "[mx:2] copy(arch=sm_90, roles=shared->local, team=warp, family=scalar) -> "
                  "copy.scalar vec=1 (forced)\n");
  assert_has(rep, "[mx:3] copy(arch=sm_90, roles=local->shared, team=warp, family=scalar) -> "
                  "copy.scalar vec=1 (forced)\n");
  /* (the prelude defines the helpers: no call of them) */
  cr_assert_null(strstr(tirx_kernel_source(k), "tirx_ldmatrix_x4(&"), "%s", tirx_kernel_source(k));
  cr_assert_null(strstr(tirx_kernel_source(k), "tirx_stmatrix_x4(&"));
  assert_compiles(rt, k);
  tirx_kernel_release(k);
  tirx_runtime_destroy(rt);
}

/* At warpgroup scope ldmatrix fills tiles whose 8x8 blocks are each one warp's fragment, the
 * warps' blocks one pattern 16 rows apart: the wgmma A operand (tirx_layout_wgmma_a). Other
 * warpgroup tiles fall back to vector copies, with the reason. */
Test(prim_ldmatrix, warpgroup_tiles_of_wgmma_a_fragments) {
  tirx_builder *b = tirx_builder_create("g");
  tirx_arena *A = tirx_builder_arena(b);
  tirx_set_block(b, 128, 1, 1);
  tirx_tensor *as = tirx_alloc_shared(b, "as", TIRX_BF16, TIRX_DIMS(64, 32),
                                      tirx_layout_smem_tile(A, 64, 32, 2, 64));
  tirx_team_begin(b, TIRX_TEAM_WARPGROUP);
  tirx_tensor *frag = tirx_alloc_local(b, "frag", TIRX_BF16, TIRX_DIMS(64, 32),
                                       tirx_layout_wgmma_a(A, 64, 32));
  tirx_tensor *rows = tirx_alloc_local(b, "rows", TIRX_BF16, TIRX_DIMS(64, 32),
                                       tirx_layout_warpgroup_rows(A, 64, 32));
  tirx_copy(b, tirx_whole(b, frag), tirx_whole(b, as), NULL);
  tirx_copy(b, tirx_whole(b, rows), tirx_whole(b, as), NULL);
  tirx_team_end(b);
  tirx_kernel *k = NULL;
  cr_assert_eq(tirx_kernel_build(b, &k), TIRX_OK, "%s", tirx_builder_error(b));
  tirx_builder_destroy(b);
  const char *rep = tirx_kernel_dispatch_report(k);
  assert_has(rep, "[g:1] copy(arch=sm_90, roles=shared->local, team=warpgroup) -> "
                  "copy.ldmatrix num=4\n");
  assert_has(rep, "[g:2] copy(arch=sm_90, roles=shared->local, team=warpgroup) -> copy.vec");
  assert_has(rep, "  rejected copy.ldmatrix: dst is not a warpgroup ldmatrix tile: a block is not "
                  "an ldmatrix fragment of one warp: lane l of the warp must hold row l/4, "
                  "columns 2*(l%4)+{0,1}\n");
  /* Warp w reads rows 16w..16w+15: lanes 8q..8q+7 address block q of warp 0's four blocks of
   * a row (K 0..31 = blocks 0, 8, 16, 24), 16 rows per warp further down; register q of each
   * lane is block q's: frag[4q], the A fragment's a0a1 of K step q/2 (q even) or a4a5 (odd). */
  const char *src = tirx_kernel_source(k);
  assert_has(src, "const int wrow = ((((int)threadIdx.x >> 5) % 4) * 16);\n");
  assert_has(src, "tirx_ldmatrix_x4(&as[tirx_swizzle(((0 + (lane & 7)) + wrow) * 32 + "
                  "((((lane >> 3) & 3) * 8) + 0), 2, 2)], &frag[0], &frag[4], &frag[8], "
                  "&frag[12]);\n");
  assert_has(src, "tirx_ldmatrix_x4(&as[tirx_swizzle(((8 + (lane & 7)) + wrow) * 32 + "
                  "((((lane >> 3) & 3) * 8) + 0), 2, 2)], &frag[2], &frag[6], &frag[10], "
                  "&frag[14]);\n");
  tirx_kernel_release(k);
}
