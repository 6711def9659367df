/* The copy rules: copy.ldmatrix, copy.stmatrix, copy.vec, copy.scalar. */
#include "dispatch_helpers.h"

TestSuite(dispatch_copy, .init = dispatch_setup, .fini = dispatch_teardown);

/* One row of 512 elements over a warp: 2 x (32 lanes x 8 consecutive registers). */
#define ROW_REGS "((),(2,32,8)):((),(8@reg,1@laneid,1@reg))"
/* The mma.sync m16n8k16 A fragment: 16x16 in four 8x8 ldmatrix blocks. */
#define MMA_A "((2,8),(2,4,2)):((2@reg,4@laneid),(4@reg,1@laneid,1@reg))"

/* ---- copy.vec -------------------------------------------------------------------------------- */

Test(dispatch_copy, vec_global_to_registers) {
  tirx__call c =
      CALL(TIRX__PRIM_COPY, 90, team(TIRX_TEAM_WARP), op(lay(ROW_REGS), TIRX_F32, TIRX__ROLE_LOCAL),
           op(rows2d(64, 512, 3, 0, 1, 512), TIRX_F32, TIRX__ROLE_GLOBAL));
  tirx__dispatch_result r = expect_rule(&c, "copy.vec", "vec=4"); /* 16 bytes of f32 */
  cr_assert(!r.fallback);
  cr_assert_eq(r.nrejected, 0);
  c.operands[0].dtype = c.operands[1].dtype = TIRX_BF16;
  expect_rule(&c, "copy.vec", "vec=8"); /* 16 bytes of bf16 */
  c.operands[0].dtype = c.operands[1].dtype = TIRX_F64;
  expect_rule(&c, "copy.vec", "vec=2");
}

Test(dispatch_copy, vec_global_to_shared_with_streaming_hint) {
  tirx__call c = CALL(TIRX__PRIM_COPY, 80, team(TIRX_TEAM_CTA),
                      op(rows2d(64, 64, 0, 0, 64, 64), TIRX_BF16, TIRX__ROLE_SHARED),
                      op(rows2d(4096, 4096, 128, 64, 64, 64), TIRX_BF16, TIRX__ROLE_GLOBAL));
  c.config.hint = TIRX__HINT_STREAM;
  expect_rule(&c, "copy.vec", "vec=8");
}

Test(dispatch_copy, vec_falls_back_to_scalar_when_lanes_are_innermost) {
  /* Lane l holds columns l, l+32, ...: no thread has two consecutive elements. */
  tirx__call c = CALL(TIRX__PRIM_COPY, 90, team(TIRX_TEAM_WARP),
                      op(lay("((),(8,32)):((),(1@reg,1@laneid))"), TIRX_F32, TIRX__ROLE_LOCAL),
                      op(rows2d(64, 256, 3, 0, 1, 256), TIRX_F32, TIRX__ROLE_GLOBAL));
  tirx__dispatch_result r = expect_rule(&c, "copy.scalar", "vec=1");
  cr_assert(r.fallback);
  cr_assert_eq(r.nrejected, 1);
  expect_rejected(&r, 0, "copy.vec",
                  REASONS("dst vector width 1 < 2 elements: innermost elements are not in "
                          "consecutive registers"));
}

Test(dispatch_copy, vec_falls_back_to_scalar_when_misaligned) {
  /* Columns [1, 9) of a row: contiguous, but starting at an odd element. */
  tirx__call c = CALL(TIRX__PRIM_COPY, 90, team(TIRX_TEAM_THREAD),
                      op(lay("((),(8)):((),(1@reg))"), TIRX_F32, TIRX__ROLE_LOCAL),
                      op(rows2d(64, 512, 3, 1, 1, 8), TIRX_F32, TIRX__ROLE_GLOBAL));
  tirx__dispatch_result r = expect_rule(&c, "copy.scalar", "vec=1");
  expect_rejected(&r, 0, "copy.vec",
                  REASONS("src vector width 1 < 2 elements: innermost run of 8 contiguous "
                          "elements is not 2-element aligned"));
  /* A column: not contiguous at all. */
  c.operands[0].layout = lay("((8),()):((1@reg),())");
  c.operands[1].layout = rows2d(64, 512, 0, 5, 8, 1);
  r = expect_rule(&c, "copy.scalar", "vec=1");
  expect_rejected(&r, 0, "copy.vec",
                  REASONS("src vector width 1 < 2 elements: innermost run not contiguous on m"));
}

Test(dispatch_copy, config_shape_picks_a_narrower_vector) {
  tirx__call c =
      CALL(TIRX__PRIM_COPY, 90, team(TIRX_TEAM_WARP), op(lay(ROW_REGS), TIRX_F32, TIRX__ROLE_LOCAL),
           op(rows2d(64, 512, 3, 0, 1, 512), TIRX_F32, TIRX__ROLE_GLOBAL));
  c.config.shape = (tirx__shape){{2}};
  expect_rule(&c, "copy.vec", "vec=2");
  c.config.shape = (tirx__shape){{8}};
  expect_fail(&c, TIRX_E_INVALID_ARG,
              "tirx_dispatch: shape vec=8 is not legal for copy.vec: legal shapes are vec=4, "
              "vec=2");
}

Test(dispatch_copy, config_family_forces_scalar) {
  tirx__call c =
      CALL(TIRX__PRIM_COPY, 90, team(TIRX_TEAM_WARP), op(lay(ROW_REGS), TIRX_F32, TIRX__ROLE_LOCAL),
           op(rows2d(64, 512, 3, 0, 1, 512), TIRX_F32, TIRX__ROLE_GLOBAL));
  c.config.family = "scalar";
  tirx__dispatch_result r = expect_rule(&c, "copy.scalar", "vec=1");
  cr_assert(r.forced);
  cr_assert(!r.fallback);
  cr_assert_str_eq(r.key, "copy(arch=sm_90, roles=global->local, team=warp, family=scalar)");
}

Test(dispatch_copy, cache_hint_needs_a_global_operand) {
  tirx__call c = CALL(TIRX__PRIM_COPY, 90, team(TIRX_TEAM_THREAD),
                      op(lay("((),(8)):((),(1@reg))"), TIRX_F32, TIRX__ROLE_LOCAL),
                      op(rows2d(64, 64, 0, 0, 1, 8), TIRX_F32, TIRX__ROLE_SHARED));
  c.config.hint = TIRX__HINT_STREAM;
  expect_fail(&c, TIRX_E_NO_RULE,
              "tirx_dispatch: no legal rule for copy(arch=sm_90, roles=shared->local, "
              "team=thread): copy.vec: cache hint .cs needs a global operand; copy.scalar: cache "
              "hint .cs needs a global operand");
}

/* ---- copy.ldmatrix --------------------------------------------------------------------------- */

Test(dispatch_copy, ldmatrix_loads_an_mma_fragment) {
  tirx__call c =
      CALL(TIRX__PRIM_COPY, 90, team(TIRX_TEAM_WARP), op(lay(MMA_A), TIRX_BF16, TIRX__ROLE_LOCAL),
           op(rows2d(64, 64, 16, 32, 16, 16), TIRX_BF16, TIRX__ROLE_SHARED));
  tirx__dispatch_result r = expect_rule(&c, "copy.ldmatrix", "num=4");
  cr_assert(!r.fallback);
  c.config.shape = (tirx__shape){{2}};
  expect_rule(&c, "copy.ldmatrix", "num=2");
  c.config.shape = (tirx__shape){{8}};
  expect_fail(&c, TIRX_E_INVALID_ARG,
              "tirx_dispatch: shape num=8 is not legal for copy.ldmatrix: legal shapes are "
              "num=4, num=2, num=1");
  /* ldmatrix needs sm_75: on sm_70 the key has no default and copy.vec is first. */
  c.config.shape = (tirx__shape){{0}};
  c.arch = 70;
  r = expect_rule(&c, "copy.vec", "vec=2");
  cr_assert(!r.fallback);
}

Test(dispatch_copy, ldmatrix_falls_back_for_f32) {
  tirx__call c =
      CALL(TIRX__PRIM_COPY, 90, team(TIRX_TEAM_WARP), op(lay(MMA_A), TIRX_F32, TIRX__ROLE_LOCAL),
           op(rows2d(64, 64, 16, 32, 16, 16), TIRX_F32, TIRX__ROLE_SHARED));
  tirx__dispatch_result r = expect_rule(&c, "copy.vec", "vec=2");
  cr_assert(r.fallback);
  expect_rejected(
      &r, 0, "copy.ldmatrix",
      REASONS("dst dtype f32 is not one of f16, bf16", "src dtype f32 is not one of f16, bf16"));
}

Test(dispatch_copy, ldmatrix_falls_back_for_padded_rows) {
  /* Rows padded to 20 elements (40 bytes): 8-element rows are not 16-byte aligned. */
  tirx__call c =
      CALL(TIRX__PRIM_COPY, 90, team(TIRX_TEAM_WARP), op(lay(MMA_A), TIRX_BF16, TIRX__ROLE_LOCAL),
           op(lay("((16),(16)):((20),(1))"), TIRX_BF16, TIRX__ROLE_SHARED));
  tirx__dispatch_result r = expect_rule(&c, "copy.vec", "vec=2");
  expect_rejected(&r, 0, "copy.ldmatrix",
                  REASONS("src rows are not 16-byte contiguous and aligned: vector width 4 < 8 "
                          "elements"));
}

Test(dispatch_copy, ldmatrix_falls_back_for_a_foreign_fragment) {
  /* Row-major registers, lane l holding row l/2 (half): not the ldmatrix fragment. */
  tirx__call c =
      CALL(TIRX__PRIM_COPY, 90, team(TIRX_TEAM_WARP),
           op(lay("((16),(2,8)):((2@laneid),(1@laneid,1@reg))"), TIRX_BF16, TIRX__ROLE_LOCAL),
           op(rows2d(64, 64, 0, 0, 16, 16), TIRX_BF16, TIRX__ROLE_SHARED));
  tirx__dispatch_result r = expect_rule(&c, "copy.vec", "vec=8");
  expect_rejected(&r, 0, "copy.ldmatrix",
                  REASONS("dst matrix at (0,0) is not an ldmatrix fragment: lane l must hold "
                          "row l/4, columns 2*(l%4)+{0,1}"));
}

Test(dispatch_copy, ldmatrix_needs_a_full_warp) {
  tirx_scope *half = tirx_scope_filter(A, team(TIRX_TEAM_WARP), TIRX_AXIS_LANEID, 0, 16);
  cr_assert_not_null(half, "%s", tirx_last_error());
  tirx__call c = CALL(TIRX__PRIM_COPY, 90, half, op(lay(MMA_A), TIRX_BF16, TIRX__ROLE_LOCAL),
                      op(rows2d(64, 64, 16, 32, 16, 16), TIRX_BF16, TIRX__ROLE_SHARED));
  tirx__dispatch_result r = expect_rule(&c, "copy.vec", "vec=2");
  expect_rejected(&r, 0, "copy.ldmatrix",
                  REASONS("the warp team has 16 active threads: the instruction needs all 32"));
}

Test(dispatch_copy, ldmatrix_forced_but_illegal) {
  tirx__call c = CALL(TIRX__PRIM_COPY, 90, team(TIRX_TEAM_WARP),
                      op(lay("((16),(16)):((1@reg),(1@laneid))"), TIRX_BF16, TIRX__ROLE_LOCAL),
                      op(lay("((16),(16)):((20),(1))"), TIRX_BF16, TIRX__ROLE_SHARED));
  c.config.family = "ldmatrix";
  tirx__dispatch_result r = expect_fail(
      &c, TIRX_E_INVALID_ARG,
      "tirx_dispatch: family 'ldmatrix' is not legal for copy(arch=sm_90, roles=shared->local, "
      "team=warp, family=ldmatrix): src rows are not 16-byte contiguous and aligned: vector "
      "width 4 < 8 elements; dst matrix at (0,0) is not an ldmatrix fragment: lane l must hold "
      "row l/4, columns 2*(l%4)+{0,1}");
  cr_assert_eq(r.nrejected, 1);
}

/* ---- copy.stmatrix --------------------------------------------------------------------------- */

Test(dispatch_copy, stmatrix_stores_an_mma_fragment_on_sm90) {
  tirx__call c = CALL(TIRX__PRIM_COPY, 90, team(TIRX_TEAM_WARP),
                      op(rows2d(64, 64, 0, 8, 16, 16), TIRX_F16, TIRX__ROLE_SHARED),
                      op(lay(MMA_A), TIRX_F16, TIRX__ROLE_LOCAL));
  expect_rule(&c, "copy.stmatrix", "num=4");
  /* stmatrix is sm_90: on sm_80 it is not a candidate, and copy.vec is not a fallback. */
  c.arch = 80;
  tirx__dispatch_result r = expect_rule(&c, "copy.vec", "vec=2");
  cr_assert(!r.fallback);
  cr_assert_eq(r.nrejected, 0);
}

Test(dispatch_copy, stmatrix_falls_back_for_a_warpgroup_tile) {
  /* Rows spread over the warps of a warpgroup: not one tile per warp. */
  tirx__call c =
      CALL(TIRX__PRIM_COPY, 90, team(TIRX_TEAM_WARP),
           op(rows2d(64, 64, 0, 0, 32, 16), TIRX_F16, TIRX__ROLE_SHARED),
           op(lay("((2,2,8),(2,4,2)):((1@warpid,2@reg,4@laneid),(4@reg,1@laneid,1@reg))"), TIRX_F16,
              TIRX__ROLE_LOCAL));
  tirx__dispatch_result r = expect_rule(&c, "copy.vec", "vec=2");
  expect_rejected(&r, 0, "copy.stmatrix",
                  REASONS("src uses warpid: stmatrix needs a per-warp tile on laneid and reg"));
}
