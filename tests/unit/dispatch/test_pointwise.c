/* The pointwise rules (unary, binary, ternary, cast, fill, select): pointwise.vec and
 * pointwise.scalar. */
#include "dispatch_helpers.h"

TestSuite(dispatch_pointwise, .init = dispatch_setup, .fini = dispatch_teardown);

#define ROW_REGS "((),(2,32,8)):((),(8@reg,1@laneid,1@reg))"
#define LANES_INNER "((),(8,32)):((),(1@reg,1@laneid))"

Test(dispatch_pointwise, binary_packs_bf16_pairs) {
  const tirx_layout *v = lay(ROW_REGS);
  tirx__call c =
      CALL(TIRX__PRIM_BINARY, 90, team(TIRX_TEAM_WARP), op(v, TIRX_BF16, TIRX__ROLE_LOCAL),
           op(v, TIRX_BF16, TIRX__ROLE_LOCAL), op(v, TIRX_BF16, TIRX__ROLE_LOCAL));
  c.config.op = TIRX__PRIM_OP_ADD;
  tirx__dispatch_result r = expect_rule(&c, "pointwise.vec", "vec=8,pack=2");
  cr_assert(!r.fallback);
  cr_assert_str_eq(r.key, "binary(arch=sm_90, roles=local,local->local, team=warp)");
  /* bf16x2 arithmetic needs sm_80; f16x2 exists from sm_53. */
  c.arch = 75;
  expect_rule(&c, "pointwise.vec", "vec=8,pack=1");
  for (int i = 0; i < 3; i++) c.operands[i].dtype = TIRX_F16;
  expect_rule(&c, "pointwise.vec", "vec=8,pack=2");
  /* No packed division. */
  c.config.op = TIRX__PRIM_OP_DIV;
  expect_rule(&c, "pointwise.vec", "vec=8,pack=1");
}

Test(dispatch_pointwise, binary_f32_with_a_scalar_operand) {
  const tirx_layout *v = lay(ROW_REGS);
  tirx__call c =
      CALL(TIRX__PRIM_BINARY, 90, team(TIRX_TEAM_WARP), op(v, TIRX_F32, TIRX__ROLE_LOCAL),
           op(v, TIRX_F32, TIRX__ROLE_LOCAL), scalar(TIRX_F32));
  c.config.op = TIRX__PRIM_OP_MUL;
  tirx__dispatch_result r = expect_rule(&c, "pointwise.vec", "vec=4,pack=1");
  cr_assert_str_eq(r.key, "binary(arch=sm_90, roles=local,scalar->local, team=warp)");
  c.config.shape = (tirx__shape){{2}};
  expect_rule(&c, "pointwise.vec", "vec=2,pack=1");
}

Test(dispatch_pointwise, ternary_fma_from_global) {
  tirx__call c =
      CALL(TIRX__PRIM_TERNARY, 90, team(TIRX_TEAM_CTA),
           op(rows2d(128, 256, 0, 0, 128, 256), TIRX_F16, TIRX__ROLE_GLOBAL),
           op(rows2d(128, 256, 0, 0, 128, 256), TIRX_F16, TIRX__ROLE_GLOBAL),
           op(rows2d(128, 256, 0, 0, 128, 256), TIRX_F16, TIRX__ROLE_GLOBAL), scalar(TIRX_F16));
  c.config.op = TIRX__PRIM_OP_FMA;
  expect_rule(&c, "pointwise.vec", "vec=8,pack=2");
}

Test(dispatch_pointwise, cast_f32_to_bf16_uses_packed_conversion) {
  const tirx_layout *v = lay(ROW_REGS);
  tirx__call c = CALL(TIRX__PRIM_CAST, 90, team(TIRX_TEAM_WARPGROUP),
                      op(v, TIRX_BF16, TIRX__ROLE_LOCAL), op(v, TIRX_F32, TIRX__ROLE_LOCAL));
  expect_rule(&c, "pointwise.vec", "vec=4,pack=2"); /* 16 bytes of f32 limit the vector */
  c.operands[0].dtype = TIRX_I32;
  expect_rule(&c, "pointwise.vec", "vec=4,pack=1");
}

Test(dispatch_pointwise, fill_shared_from_a_scalar) {
  tirx__call c =
      CALL(TIRX__PRIM_FILL, 90, team(TIRX_TEAM_CTA),
           op(rows2d(64, 64, 0, 0, 64, 64), TIRX_F32, TIRX__ROLE_SHARED), scalar(TIRX_F32));
  tirx__dispatch_result r = expect_rule(&c, "pointwise.vec", "vec=4,pack=1");
  cr_assert_str_eq(r.key, "fill(arch=sm_90, roles=scalar->shared, team=cta)");
}

Test(dispatch_pointwise, select_with_a_bool_mask) {
  const tirx_layout *v = lay(ROW_REGS);
  tirx__call c =
      CALL(TIRX__PRIM_SELECT, 90, team(TIRX_TEAM_WARP), op(v, TIRX_F32, TIRX__ROLE_LOCAL),
           op(v, TIRX_BOOL, TIRX__ROLE_LOCAL), op(v, TIRX_F32, TIRX__ROLE_LOCAL), scalar(TIRX_F32));
  expect_rule(&c, "pointwise.vec", "vec=4,pack=1");
}

Test(dispatch_pointwise, falls_back_to_scalar_with_reasons) {
  const tirx_layout *v = lay(LANES_INNER);
  tirx__call c = CALL(TIRX__PRIM_UNARY, 90, team(TIRX_TEAM_WARP), op(v, TIRX_F32, TIRX__ROLE_LOCAL),
                      op(rows2d(64, 256, 3, 0, 1, 256), TIRX_F32, TIRX__ROLE_GLOBAL));
  c.config.op = TIRX__PRIM_OP_EXP;
  tirx__dispatch_result r = expect_rule(&c, "pointwise.scalar", "vec=1,pack=1");
  cr_assert(r.fallback);
  expect_rejected(&r, 0, "pointwise.vec",
                  REASONS("dst vector width 1 < 2 elements: innermost elements are not in "
                          "consecutive registers"));
  /* A cast of a strided column: both operands too narrow, each reported. */
  c = CALL(TIRX__PRIM_CAST, 90, team(TIRX_TEAM_THREAD),
           op(rows2d(64, 64, 0, 3, 8, 1), TIRX_BF16, TIRX__ROLE_SHARED),
           op(rows2d(64, 64, 0, 1, 8, 1), TIRX_F32, TIRX__ROLE_GLOBAL));
  r = expect_rule(&c, "pointwise.scalar", "vec=1,pack=1");
  expect_rejected(&r, 0, "pointwise.vec",
                  REASONS("dst vector width 1 < 2 elements: innermost run not contiguous on m",
                          "src vector width 1 < 2 elements: innermost run not contiguous on m"));
}

Test(dispatch_pointwise, forced_vec_is_illegal_for_a_column) {
  tirx__call c = CALL(TIRX__PRIM_UNARY, 90, team(TIRX_TEAM_THREAD),
                      op(rows2d(64, 64, 0, 3, 8, 1), TIRX_F32, TIRX__ROLE_SHARED),
                      op(rows2d(64, 64, 0, 3, 8, 1), TIRX_F32, TIRX__ROLE_SHARED));
  c.config.op = TIRX__PRIM_OP_NEG;
  c.config.family = "vec";
  expect_fail(&c, TIRX_E_INVALID_ARG,
              "tirx_dispatch: family 'vec' is not legal for unary(arch=sm_90, "
              "roles=shared->shared, team=thread, family=vec): dst vector width 1 < 2 elements: "
              "innermost run not contiguous on m; a vector width 1 < 2 elements: innermost run "
              "not contiguous on m");
}
