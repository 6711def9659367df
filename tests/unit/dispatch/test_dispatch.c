/* src/dispatch/dispatch.c and report.c: validation, keys, no-rule errors, the report. */
#include "dispatch_helpers.h"

TestSuite(dispatch, .init = dispatch_setup, .fini = dispatch_teardown);

#define ROW_REGS "((),(2,32,8)):((),(8@reg,1@laneid,1@reg))"

Test(dispatch, no_rule_names_the_key) {
  /* A TMA store on sm_80: the rules of the key that need a newer target are named, not tried
   * (not rejections). */
  tirx__call c = CALL(TIRX__PRIM_COPY_ASYNC, 80, team(TIRX_TEAM_WARP),
                      op(rows2d(4096, 64, 0, 0, 64, 64), TIRX_BF16, TIRX__ROLE_GLOBAL),
                      op(rows2d(64, 64, 0, 0, 64, 64), TIRX_BF16, TIRX__ROLE_SHARED));
  tirx__dispatch_result r = expect_fail(
      &c, TIRX_E_NO_RULE,
      "tirx_dispatch: no rule for copy_async(arch=sm_80, roles=shared->global, team=warp): "
      "copy_async.tma: needs sm_90 or newer");
  cr_assert_str_eq(r.key, "copy_async(arch=sm_80, roles=shared->global, team=warp)");
  cr_assert_eq(r.nrejected, 0);
  /* A key no rule of any arch takes. */
  tirx__call l = CALL(TIRX__PRIM_COPY_ASYNC, 90, team(TIRX_TEAM_WARP),
                      op(rows2d(64, 64, 0, 0, 2, 4), TIRX_BF16, TIRX__ROLE_GLOBAL),
                      op(lay("((2),(4)):((4@reg),(1@reg))"), TIRX_BF16, TIRX__ROLE_LOCAL));
  expect_fail(&l, TIRX_E_NO_RULE,
              "tirx_dispatch: no rule for copy_async(arch=sm_90, roles=local->global, team=warp)");
  c.prim = TIRX__PRIM_COPY;
  c.config.family = "tma";
  expect_fail(&c, TIRX_E_NO_RULE,
              "tirx_dispatch: no rule for copy(arch=sm_80, roles=shared->global, team=warp, "
              "family=tma)");
  /* gemm_async has a warpgroup rule only (gemm_async.wgmma); gemm.scalar takes any team. */
  c = CALL(TIRX__PRIM_GEMM_ASYNC, 90, team(TIRX_TEAM_WARP),
           op(lay("((16),(8)):((1@reg),(1@laneid))"), TIRX_F32, TIRX__ROLE_LOCAL),
           op(rows2d(16, 16, 0, 0, 16, 16), TIRX_F32, TIRX__ROLE_SHARED),
           op(rows2d(16, 8, 0, 0, 16, 8), TIRX_F32, TIRX__ROLE_SHARED));
  expect_fail(&c, TIRX_E_NO_RULE,
              "tirx_dispatch: no rule for gemm_async(arch=sm_90, roles=shared,shared->local, "
              "team=warp)");
}

Test(dispatch, malformed_calls) {
  const tirx_scope *w = team(TIRX_TEAM_WARP);
  tirx__call c = CALL(TIRX__PRIM_COPY, 90, w, op(lay(ROW_REGS), TIRX_F32, TIRX__ROLE_LOCAL));
  expect_fail(&c, TIRX_E_INVALID_ARG, "tirx_dispatch: copy takes 2 operands, got 1");
  c = CALL(TIRX__PRIM_COPY, 90, NULL, op(lay(ROW_REGS), TIRX_F32, TIRX__ROLE_LOCAL),
           op(rows2d(64, 512, 3, 0, 1, 512), TIRX_F32, TIRX__ROLE_GLOBAL));
  expect_fail(&c, TIRX_E_NULL_ARG, "tirx_dispatch: scope is NULL");
  c.scope = w;
  c.operands[1].dtype = TIRX_BF16;
  expect_fail(&c, TIRX_E_TYPE, "tirx_dispatch: copy from bf16 to f32: use cast");
  c.operands[1] = op(rows2d(64, 512, 3, 0, 2, 256), TIRX_F32, TIRX__ROLE_GLOBAL);
  expect_fail(&c, TIRX_E_INVALID_ARG,
              "tirx_dispatch: src shape (2,256) differs from dst shape (1,512)");
  c.operands[1] = op(NULL, TIRX_F32, TIRX__ROLE_GLOBAL);
  expect_fail(&c, TIRX_E_NULL_ARG, "tirx_dispatch: src (global) has no layout");
  c.operands[1] = op(lay("(512):(1)"), TIRX_F32, TIRX__ROLE_GLOBAL);
  expect_fail(&c, TIRX_E_INVALID_ARG,
              "tirx_dispatch: src layout is not grouped to the region's logical shape");
  c.operands[1] = scalar(TIRX_F32);
  expect_fail(&c, TIRX_E_INVALID_ARG,
              "tirx_dispatch: src of copy is a scalar: the source must be a region");
  c.operands[0] = scalar(TIRX_F32);
  expect_fail(&c, TIRX_E_INVALID_ARG,
              "tirx_dispatch: dst is a scalar: the destination must be a region");
  c = CALL(TIRX__PRIM_REDUCE, 90, w,
           op(lay("((4),(2)):((1@reg),(2@reg))"), TIRX_F32, TIRX__ROLE_LOCAL),
           op(lay("((4),(8)):((8@reg),(1@reg))"), TIRX_F32, TIRX__ROLE_LOCAL));
  c.config.op = TIRX__PRIM_OP_SUM;
  expect_fail(&c, TIRX_E_INVALID_ARG,
              "tirx_dispatch: reduce axes 0x0 are not a non-empty subset of src's 2 dims");
  c.config.reduce_axes = 0x4;
  expect_fail(&c, TIRX_E_INVALID_ARG,
              "tirx_dispatch: reduce axes 0x4 are not a non-empty subset of src's 2 dims");
  c.config.reduce_axes = 0x2;
  expect_fail(&c, TIRX_E_INVALID_ARG,
              "tirx_dispatch: dst shape (4,2) does not match src shape (4,8) reduced over axes "
              "0x2");
  tirx__dispatch_result r;
  expect_error(tirx__dispatch(A, NULL, &r), TIRX_E_NULL_ARG, "tirx_dispatch: call is NULL");
  expect_error(tirx__dispatch(NULL, &c, &r), TIRX_E_NULL_ARG, "tirx_dispatch: arena is NULL");
  expect_error(tirx__dispatch(A, &c, NULL), TIRX_E_NULL_ARG, "tirx_dispatch: out is NULL");
}

Test(dispatch, op_outside_a_rule_is_a_reason) {
  tirx__call c = CALL(TIRX__PRIM_REDUCE, 90, team(TIRX_TEAM_THREAD),
                      op(lay("((4),()):((1@reg),())"), TIRX_F32, TIRX__ROLE_LOCAL),
                      op(lay("((4),(8)):((8@reg),(1@reg))"), TIRX_F32, TIRX__ROLE_LOCAL));
  c.config.op = TIRX__PRIM_OP_EXP;
  c.config.reduce_axes = 0x2;
  expect_fail(&c, TIRX_E_NO_RULE,
              "tirx_dispatch: no legal rule for reduce(arch=sm_90, roles=local->local, "
              "team=thread): reduce.scalar: op exp is not supported");
}

Test(dispatch, report_lists_rules_shapes_and_reasons) {
  tirx__dispatch_report rep;
  tirx__dispatch_report_init(&rep, A);
  const tirx_scope *w = team(TIRX_TEAM_WARP);
  tirx__call calls[3] = {
      CALL(TIRX__PRIM_COPY, 90, w, op(lay(ROW_REGS), TIRX_F32, TIRX__ROLE_LOCAL),
           op(rows2d(64, 512, 3, 0, 1, 512), TIRX_F32, TIRX__ROLE_GLOBAL)),
      CALL(TIRX__PRIM_REDUCE, 90, w,
           op(lay("((32),()):((1@laneid),())"), TIRX_F16, TIRX__ROLE_LOCAL),
           op(lay("((32),(8)):((1@laneid),(1@reg))"), TIRX_F16, TIRX__ROLE_LOCAL)),
      CALL(TIRX__PRIM_COPY_ASYNC, 80, w,
           op(rows2d(64, 64, 0, 0, 64, 64), TIRX_BF16, TIRX__ROLE_SHARED),
           op(rows2d(4096, 64, 0, 0, 64, 64), TIRX_BF16, TIRX__ROLE_GLOBAL)),
  };
  calls[0].where = "rmsnorm:12";
  calls[1].config.op = TIRX__PRIM_OP_SUM;
  calls[1].config.reduce_axes = 0x2;
  calls[2].config.barrier = true; /* TMA's protocol: cp.async rejects it, TMA is sm_90 */
  for (int i = 0; i < 3; i++) {
    tirx__dispatch_result r;
    tirx__dispatch(A, &calls[i], &r);
    cr_assert_eq(tirx__dispatch_report_add(&rep, &r), TIRX_OK);
  }
  char *text = tirx__dispatch_report_str(&rep);
  cr_assert_str_eq(text,
                   "[rmsnorm:12] copy(arch=sm_90, roles=global->local, team=warp) -> copy.vec "
                   "vec=4\n"
                   "reduce(arch=sm_90, roles=local->local, team=warp) -> reduce.scalar vec=1 "
                   "(fallback)\n"
                   "  rejected reduce.redux: dst dtype f16 is not one of i32, u32\n"
                   "  rejected reduce.redux: src dtype f16 is not one of i32, u32\n"
                   "  rejected reduce.shuffle: dst dtype f16 is not one of f32, f64, i32, u32, "
                   "i64\n"
                   "  rejected reduce.shuffle: src dtype f16 is not one of f32, f64, i32, u32, "
                   "i64\n"
                   "copy_async(arch=sm_80, roles=global->shared, team=warp) -> no rule\n"
                   "  rejected copy_async.cp_async: cfg->barrier is set: a cp.async load "
                   "completes in cp.async groups (tirx_cp_async_commit, tirx_cp_async_wait), not "
                   "on an mbarrier\n");
  free(text);
}

Test(dispatch, report_grows) {
  tirx__dispatch_report rep;
  tirx__dispatch_report_init(&rep, A);
  tirx__call c =
      CALL(TIRX__PRIM_FILL, 90, team(TIRX_TEAM_CTA),
           op(rows2d(64, 64, 0, 0, 64, 64), TIRX_F32, TIRX__ROLE_SHARED), scalar(TIRX_F32));
  for (int i = 0; i < 100; i++) {
    tirx__dispatch_result r;
    cr_assert_eq(tirx__dispatch(A, &c, &r), TIRX_OK);
    cr_assert_eq(tirx__dispatch_report_add(&rep, &r), TIRX_OK);
  }
  cr_assert_eq(rep.n, 100);
  char *text = tirx__dispatch_report_str(&rep);
  cr_assert_eq(strlen(text), 100 * strlen("fill(arch=sm_90, roles=scalar->shared, team=cta) -> "
                                          "pointwise.vec vec=4,pack=1\n"));
  free(text);
  tirx__dispatch_report empty;
  tirx__dispatch_report_init(&empty, A);
  text = tirx__dispatch_report_str(&empty);
  cr_assert_str_eq(text, "");
  free(text);
}
