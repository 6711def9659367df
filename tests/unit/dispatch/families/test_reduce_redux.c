/* reduce.redux (src/dispatch/families/reduce_redux.c): dispatch chooses it for an i32/u32 full
 * warp sum, min or max (before reduce.shuffle) and says why not for f32, 64-bit integers, a
 * sub-warp reduction or sumsq; the generated source calls the redux.sync helper that only its
 * kernels carry; NVRTC compiles it for sm_80 and sm_90a; a dispatch for sm_75 (no redux.sync)
 * keeps the shuffle. */
#include <string.h>

#include "../../helpers.h"
#include "../dispatch_helpers.h"
#include "jit/jit.h"

TestSuite(redux, .init = dispatch_setup, .fini = dispatch_teardown);

static void has(const char *text, const char *want) {
  cr_assert_not_null(strstr(text, want), "no '%s' in:\n%s", want, text);
}

static tirx__call warp_reduce_call(int arch, const char *src, tirx_dtype t, tirx__prim_op pop) {
  tirx__call c = CALL(TIRX__PRIM_REDUCE, arch, team(TIRX_TEAM_WARP),
                      op(lay("((),(8)):((),(1@reg))+[32:1@laneid]"), t, TIRX__ROLE_LOCAL),
                      op(lay(src), t, TIRX__ROLE_LOCAL));
  c.config.op = pop;
  c.config.reduce_axes = 0x1;
  return c;
}

static const char *const WARP = "((32),(8)):((1@laneid),(1@reg))";

Test(redux, chosen_for_an_integer_warp_sum_min_max) {
  static const tirx__prim_op ops[] = {TIRX__PRIM_OP_SUM, TIRX__PRIM_OP_MIN, TIRX__PRIM_OP_MAX};
  for (int d = 0; d < 2; d++)
    for (int i = 0; i < 3; i++) {
      tirx__call c = warp_reduce_call(80, WARP, d ? TIRX_U32 : TIRX_I32, ops[i]);
      tirx__dispatch_result r = expect_rule(&c, "reduce.redux", "lanes=32");
      cr_assert(!r.fallback);
      c.arch = 90;
      expect_rule(&c, "reduce.redux", "lanes=32");
    }
  /* Lanes split over two iters still cover the warp. */
  tirx__call c = warp_reduce_call(90, "((4,8),(8)):((8@laneid,1@laneid),(1@reg))", TIRX_I32,
                                  TIRX__PRIM_OP_SUM);
  expect_rule(&c, "reduce.redux", "lanes=32");
}

Test(redux, reports_why_not_for_f32_and_falls_back_to_shuffle) {
  tirx__call c = warp_reduce_call(90, WARP, TIRX_F32, TIRX__PRIM_OP_SUM);
  tirx__dispatch_result r = expect_rule(&c, "reduce.shuffle", "lanes=32");
  cr_assert(r.fallback);
  expect_rejected(&r, 0, "reduce.redux",
                  REASONS("dst dtype f32 is not one of i32, u32",
                          "src dtype f32 is not one of i32, u32"));
  /* 64-bit integers do not fit redux.sync either. */
  c = warp_reduce_call(90, WARP, TIRX_I64, TIRX__PRIM_OP_MAX);
  r = expect_rule(&c, "reduce.shuffle", "lanes=32");
  expect_rejected(&r, 0, "reduce.redux",
                  REASONS("dst dtype i64 is not one of i32, u32",
                          "src dtype i64 is not one of i32, u32"));
}

Test(redux, rejects_sumsq_partial_warps_and_old_targets) {
  tirx__call c = warp_reduce_call(90, WARP, TIRX_I32, TIRX__PRIM_OP_SUMSQ);
  tirx__dispatch_result r = expect_rule(&c, "reduce.shuffle", "lanes=32");
  cr_assert_eq(r.nrejected, 1);
  cr_assert_str_eq(r.rejected[0].rule->name, "reduce.redux");
  /* 8 lanes per group (lane bits 2..4): redux.sync would mix the groups. */
  c = warp_reduce_call(90, "((8),(4,4)):((4@laneid),(1@laneid,1@reg))", TIRX_I32,
                       TIRX__PRIM_OP_SUM);
  c.operands[0].layout = lay("((),(4,4)):((),(1@laneid,1@reg))+[8:4@laneid]");
  r = expect_rule(&c, "reduce.shuffle", "lanes=8");
  expect_rejected(&r, 0, "reduce.redux",
                  REASONS("not a full warp reduction: the reduced lane bits are 0x1c, and "
                          "redux.sync combines all 32 lanes (0x1f)"));
  /* A result on lanes of another warp. */
  c = warp_reduce_call(90, WARP, TIRX_I32, TIRX__PRIM_OP_SUM);
  c.operands[0].layout = lay("((),(8)):((),(1@reg))+1@warpid");
  r.rule = NULL;
  tirx__dispatch(A, &c, &r);
  cr_assert(r.nrejected >= 1);
  expect_rejected(&r, 0, "reduce.redux",
                  REASONS("dst element 0 is held outside the warp that reduces it"));
  /* sm_75 (a dispatch key, not a build target): no redux.sync; the shuffle stays. */
  c = warp_reduce_call(75, WARP, TIRX_I32, TIRX__PRIM_OP_SUM);
  expect_rule(&c, "reduce.shuffle", "lanes=32");
}

/* ---- generated code ---- */

/* A warp of each of `warps` reduces its 256 elements of x (a 32 x 8 register tile) with op; lane
 * 0 writes the result to y[warp]. */
static tirx_kernel *warp_kernel(tirx_dtype dt, tirx_op op, const char *target) {
  tirx_builder *b = tirx_builder_create("wred");
  if (target) tirx_set_target(b, target);
  tirx_tensor *x = tirx_param_tensor(b, "x", dt, TIRX_EXPRS(tirx_int(b, 512)), NULL);
  tirx_tensor *y = tirx_param_tensor(b, "y", dt, TIRX_EXPRS(tirx_int(b, 2)), NULL);
  tirx_set_block(b, 64, 1, 1);
  tirx_team_begin(b, TIRX_TEAM_WARP);
  tirx_layout *lv = tirx_layout_parse(tirx_builder_arena(b), "(32,8):(1@laneid,1@reg)");
  tirx_tensor *v = tirx_alloc_local(b, "v", dt, TIRX_DIMS(256), lv);
  tirx_expr *w = tirx_warp_id(b);
  tirx_copy(b, tirx_whole(b, v),
            tirx_region_new(b, x, 1, (tirx_expr *[]){tirx_mul(b, w, tirx_int(b, 256))},
                            (int64_t[]){256}),
            NULL);
  tirx_tensor *s = tirx_alloc_local(b, "s", dt, TIRX_DIMS(1), NULL);
  tirx_reduce(b, tirx_whole(b, s), tirx_whole(b, v), op, 1, false, NULL);
  tirx_if_begin(b, tirx_eq(b, tirx_lane_id(b), tirx_int(b, 0)));
  tirx_store(b, y, TIRX_EXPRS(w), tirx_load(b, s, TIRX_EXPRS(tirx_int(b, 0))));
  tirx_if_end(b);
  tirx_team_end(b);
  tirx_kernel *k = NULL;
  cr_assert_eq(tirx_kernel_build(b, &k), TIRX_OK, "%s", tirx_builder_error(b));
  tirx_builder_destroy(b);
  return k;
}

Test(redux, source_calls_redux_sync_and_only_its_kernels_carry_the_helper) {
  tirx_kernel *k = warp_kernel(TIRX_I32, TIRX_OP_SUM, NULL);
  has(tirx_kernel_dispatch_report(k), "-> reduce.redux lanes=32\n");
  const char *src = tirx_kernel_source(k);
  has(src, "/* tirx: reduce.redux lanes=32: ");
  has(src, "acc = tirx_redux_add(acc);");
  has(src, "TIRX_REDUX(tirx_redux_add, int, \"redux.sync.add.s32\")");
  cr_assert_null(strstr(src, "__shfl_xor_sync"), "the butterfly is gone:\n%s", src);
  has(tirx_kernel_ir_str(k), "acc = redux.add.s32(acc)");
  tirx_kernel_release(k);
  k = warp_kernel(TIRX_U32, TIRX_OP_MAX, NULL);
  has(tirx_kernel_source(k), "acc = tirx_redux_max(acc);");
  has(tirx_kernel_ir_str(k), "acc = redux.max.u32(acc)");
  tirx_kernel_release(k);
  /* An f32 kernel keeps the butterfly and does not carry the redux helpers. */
  k = warp_kernel(TIRX_F32, TIRX_OP_SUM, NULL);
  has(tirx_kernel_dispatch_report(k), "-> reduce.shuffle lanes=32 (fallback)\n");
  cr_assert_null(strstr(tirx_kernel_source(k), "redux"), "%s", tirx_kernel_source(k));
  tirx_kernel_release(k);
}

Test(redux, nvrtc_compiles_it_for_sm80_and_sm90a) {
  tirx_runtime *rt = NULL;
  cr_assert_eq(tirx_runtime_create(&(tirx_runtime_options){.compile_only = true}, &rt), TIRX_OK,
               "%s", tirx_last_error());
  static const tirx_op ops[] = {TIRX_OP_SUM, TIRX_OP_MIN, TIRX_OP_MAX};
  static const char *const ins[] = {"redux.sync.add.s32", "redux.sync.min.u32",
                                    "redux.sync.max.s32"};
  static const char *const archs[] = {"sm_80", "sm_90a"};
  for (int i = 0; i < 3; i++) {
    tirx_kernel *k = warp_kernel(i == 1 ? TIRX_U32 : TIRX_I32, ops[i], "sm_80");
    for (int a = 0; a < 2; a++) {
      tirx_compiled *c = NULL;
      cr_assert_eq(tirx_compile(rt, k, archs[a], &c), TIRX_OK, "%s: %s", archs[a],
                   tirx_last_error());
      has(tirx_compiled_ptx(c), ins[i]);
      tirx_compiled_destroy(c);
    }
    tirx_kernel_release(k);
  }
  tirx_runtime_destroy(rt);
}
