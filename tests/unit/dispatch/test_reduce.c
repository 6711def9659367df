/* The reduce rules: reduce.redux (full warp, i32/u32, sm_80; families/test_reduce_redux.c),
 * reduce.shuffle (warp), reduce.smem (warpgroup, CTA), reduce.dsmem (cluster, sm_90),
 * reduce.scalar. An f32 warp reduction is reduce.redux's rejection first (its dtype). */
#include "dispatch_helpers.h"

TestSuite(dispatch_reduce, .init = dispatch_setup, .fini = dispatch_teardown);

static tirx__call reduce(int arch, const tirx_scope *s, const char *dst, const char *src,
                         tirx_dtype t, uint32_t axes) {
  tirx__call c = CALL(TIRX__PRIM_REDUCE, arch, s, op(lay(dst), t, TIRX__ROLE_LOCAL),
                      op(lay(src), t, TIRX__ROLE_LOCAL));
  c.config.op = TIRX__PRIM_OP_SUM;
  c.config.reduce_axes = axes;
  return c;
}

/* ---- reduce.shuffle -------------------------------------------------------------------------- */

Test(dispatch_reduce, shuffle_over_a_warp_row) {
  /* RMSNorm's row: 512 values on 32 lanes x 16 registers, reduced to one value per lane. */
  tirx__call c = reduce(90, team(TIRX_TEAM_WARP), "((),()):((),())+[32:1@laneid]",
                        "((),(2,32,8)):((),(8@reg,1@laneid,1@reg))", TIRX_F32, 0x2);
  c.config.op = TIRX__PRIM_OP_SUMSQ;
  tirx__dispatch_result r = expect_rule(&c, "reduce.shuffle", "lanes=32");
  cr_assert(r.fallback); /* of reduce.redux, which takes 32-bit integers only */
  cr_assert_str_eq(r.key, "reduce(arch=sm_90, roles=local->local, team=warp)");
}

Test(dispatch_reduce, shuffle_over_part_of_the_lanes) {
  /* Rows on lane bits 2..4 (stride 4), columns in registers and on lane bits 0..1. */
  const char *src = "((8),(4,4)):((4@laneid),(1@laneid,1@reg))";
  tirx__call c =
      reduce(90, team(TIRX_TEAM_WARP), "((),(4,4)):((),(1@laneid,1@reg))", src, TIRX_F32, 0x1);
  expect_rule(&c, "reduce.shuffle", "lanes=8");
  /* Squeezed destination, replicated over the reduced lanes: the butterfly's result. */
  c.operands[0].layout = lay("((4,4)):((1@laneid,1@reg))+[8:4@laneid]");
  expect_rule(&c, "reduce.shuffle", "lanes=8");
}

Test(dispatch_reduce, shuffle_rejects_a_destination_on_other_lanes) {
  /* Every result on lane 1, outside the lanes 0, 4, ..., 28 that reduce it. */
  tirx__call c = reduce(90, team(TIRX_TEAM_WARP), "((),(4)):((),(1@reg))+1@laneid",
                        "((8),(4)):((4@laneid),(1@reg))", TIRX_F32, 0x1);
  expect_fail(&c, TIRX_E_NO_RULE,
              "tirx_dispatch: no legal rule for reduce(arch=sm_90, roles=local->local, "
              "team=warp): reduce.redux: dst dtype f32 is not one of i32, u32; src dtype f32 is "
              "not one of i32, u32; reduce.shuffle: dst element 0 is on lane 1, which does not take part "
              "in its reduction (lane 0, reduced lane bits 0x1c); reduce.scalar: reduced dim 0 "
              "iter (8):(4@laneid) is on laneid: a scalar loop reads only the thread's own "
              "registers");
}

Test(dispatch_reduce, shuffle_needs_a_butterfly) {
  tirx__call c = reduce(90, team(TIRX_TEAM_WARP), "((),(8)):((),(1@reg))",
                        "((3),(8)):((1@laneid),(1@reg))", TIRX_F32, 0x1);
  tirx__dispatch_result r = expect_fail(
      &c, TIRX_E_NO_RULE,
      "tirx_dispatch: no legal rule for reduce(arch=sm_90, roles=local->local, team=warp): "
      "reduce.redux: dst dtype f32 is not one of i32, u32; src dtype f32 is not one of i32, "
      "u32; reduce.shuffle: reduced dim 0 iter (3):(1@laneid) is not a butterfly over lane bits: "
      "extents and strides must be distinct powers of two; reduce.scalar: reduced dim 0 iter "
      "(3):(1@laneid) is on laneid: a scalar loop reads only the thread's own registers");
  cr_assert_eq(r.nrejected, 3);
}

Test(dispatch_reduce, shuffle_rejects_warps) {
  tirx__call c = reduce(90, team(TIRX_TEAM_WARP), "((),(8)):((),(1@reg))",
                        "((4),(8)):((1@warpid),(1@reg))", TIRX_F32, 0x1);
  tirx__dispatch_result r;
  cr_assert_eq(tirx__dispatch(A, &c, &r), TIRX_E_NO_RULE);
  expect_rejected(&r, 1, "reduce.shuffle",
                  REASONS("reduced dim 0 iter (4):(1@warpid) is on warpid: a warp shuffle "
                          "reduces over laneid and registers only"));
}

Test(dispatch_reduce, shuffle_falls_back_to_scalar_for_a_partial_warp) {
  /* Only registers are reduced, so a per-thread loop works; the shuffle rule wants 32 lanes. */
  tirx_scope *half = tirx_scope_filter(A, team(TIRX_TEAM_WARP), TIRX_AXIS_LANEID, 0, 16);
  tirx__call c = reduce(90, half, "((16),()):((1@laneid),())", "((16),(8)):((1@laneid),(1@reg))",
                        TIRX_F32, 0x2);
  tirx__dispatch_result r = expect_rule(&c, "reduce.scalar", "vec=1");
  cr_assert(r.fallback);
  expect_rejected(&r, 1, "reduce.shuffle",
                  REASONS("the warp team has 16 active threads: the instruction needs all 32"));
  /* f16 does not shuffle. */
  c = reduce(90, team(TIRX_TEAM_WARP), "((32),()):((1@laneid),())",
             "((32),(8)):((1@laneid),(1@reg))", TIRX_F16, 0x2);
  r = expect_rule(&c, "reduce.scalar", "vec=1");
  expect_rejected(&r, 1, "reduce.shuffle",
                  REASONS("dst dtype f16 is not one of f32, f64, i32, u32, i64",
                          "src dtype f16 is not one of f32, f64, i32, u32, i64"));
}

Test(dispatch_reduce, shuffle_rejects_a_sum_over_replicated_lanes) {
  tirx__call c = reduce(90, team(TIRX_TEAM_WARP), "((),(8)):((),(1@reg))",
                        "((16),(8)):((1@laneid),(1@reg))+[2:16@laneid]", TIRX_F32, 0x1);
  tirx__dispatch_result r;
  cr_assert_eq(tirx__dispatch(A, &c, &r), TIRX_E_NO_RULE);
  expect_rejected(&r, 1, "reduce.shuffle",
                  REASONS("src is replicated on laneid, an axis it reduces over: sum would "
                          "count each element 2 times"));
  c.config.op = TIRX__PRIM_OP_MAX; /* max does not mind */
  expect_rule(&c, "reduce.shuffle", "lanes=16");
}

/* ---- reduce.smem ----------------------------------------------------------------------------- */

Test(dispatch_reduce, smem_over_a_warpgroup) {
  tirx__call c = reduce(90, team(TIRX_TEAM_WARPGROUP), "((),(8)):((),(1@reg))",
                        "((128),(8)):((1@tid_in_wg),(1@reg))", TIRX_F32, 0x1);
  tirx__dispatch_result r = expect_rule(&c, "reduce.smem", "threads=128");
  cr_assert(!r.fallback);
  c.config.op = TIRX__PRIM_OP_MAX;
  c.operands[0].dtype = c.operands[1].dtype = TIRX_BF16;
  expect_rule(&c, "reduce.smem", "threads=128");
}

Test(dispatch_reduce, smem_over_a_cta) {
  tirx__call c = reduce(80, team(TIRX_TEAM_CTA), "((),(4)):((),(1@reg))",
                        "((8,32),(4)):((1@warpid,1@laneid),(1@reg))", TIRX_F32, 0x1);
  expect_rule(&c, "reduce.smem", "threads=256");
}

Test(dispatch_reduce, smem_rejects_axes_outside_the_warpgroup) {
  tirx__call c = reduce(90, team(TIRX_TEAM_WARPGROUP), "((),(4)):((),(1@reg))",
                        "((8,32),(4)):((1@warpid,1@laneid),(1@reg))", TIRX_F32, 0x1);
  expect_fail(&c, TIRX_E_NO_RULE,
              "tirx_dispatch: no legal rule for reduce(arch=sm_90, roles=local->local, "
              "team=warpgroup): reduce.smem: reduced dim 0 iter (8):(1@warpid) is on warpid: a "
              "warpgroup reduction combines threads of one warpgroup only; reduce.shuffle: "
              "reduced dim 0 iter (8):(1@warpid) is on warpid: a warpgroup's shuffle reduces over "
              "lane bits (laneid, tid_in_wg bits 0..4) and registers only; reduce.scalar: "
              "reduced dim 0 iter (8):(1@warpid) is on warpid: a scalar loop reads only the "
              "thread's own registers; reduced dim 0 iter (32):(1@laneid) is on laneid: a "
              "scalar loop reads only the thread's own registers");
}

/* ---- reduce.dsmem ---------------------------------------------------------------------------- */

Test(dispatch_reduce, dsmem_over_a_cluster_on_sm90) {
  tirx__call c = reduce(90, team(TIRX_TEAM_CLUSTER), "((),(4)):((),(1@reg))",
                        "((2,32),(4)):((1@cbx,1@laneid),(1@reg))", TIRX_F32, 0x1);
  expect_rule(&c, "reduce.dsmem", "ctas=2");
  /* No cluster rule before sm_90; the scalar fallback cannot reach other threads. */
  c.arch = 80;
  tirx__dispatch_result r = expect_fail(
      &c, TIRX_E_NO_RULE,
      "tirx_dispatch: no legal rule for reduce(arch=sm_80, roles=local->local, team=cluster): "
      "reduce.scalar: reduced dim 0 iter (2):(1@cbx) is on cbx: a scalar loop reads only the "
      "thread's own "
      "registers; reduced dim 0 iter (32):(1@laneid) is on laneid: a scalar loop reads only the "
      "thread's own registers; reduce.dsmem: needs sm_90 or newer");
  cr_assert_eq(r.nrejected, 1);
}

Test(dispatch_reduce, dsmem_rejects_a_grid_reduction) {
  /* Rows on two CTAs of the grid (cta, not cbx): no cluster instruction reaches them. */
  tirx__call c = reduce(90, team(TIRX_TEAM_CLUSTER), "((),(4)):((),(1@reg))",
                        "((2,32),(4)):((1@cta,1@laneid),(1@reg))", TIRX_F32, 0x1);
  tirx__dispatch_result r;
  cr_assert_eq(tirx__dispatch(A, &c, &r), TIRX_E_NO_RULE);
  expect_rejected(&r, 0, "reduce.dsmem",
                  REASONS("reduced dim 0 iter (2):(1@cta) is on cta: a cluster reduction "
                          "combines threads of one cluster only"));
  cr_assert_str_eq(r.rejected[1].rule->name, "reduce.scalar");
}

/* ---- reduce.scalar --------------------------------------------------------------------------- */

Test(dispatch_reduce, scalar_for_a_thread) {
  tirx__call c = reduce(90, team(TIRX_TEAM_THREAD), "((4),()):((1@reg),())",
                        "((4),(8)):((8@reg),(1@reg))", TIRX_F64, 0x2);
  tirx__dispatch_result r = expect_rule(&c, "reduce.scalar", "vec=1");
  cr_assert(!r.fallback);
  cr_assert_eq(r.nrejected, 0);
}

Test(dispatch_reduce, scalar_from_shared_memory) {
  tirx__call c = CALL(TIRX__PRIM_REDUCE, 90, team(TIRX_TEAM_WARP),
                      op(lay("((32),()):((1@laneid),())"), TIRX_F32, TIRX__ROLE_LOCAL),
                      op(rows2d(32, 64, 0, 0, 32, 64), TIRX_F32, TIRX__ROLE_SHARED));
  c.config.op = TIRX__PRIM_OP_MAX;
  c.config.reduce_axes = 0x2;
  expect_rule(&c, "reduce.scalar", "vec=1");
}

Test(dispatch_reduce, forced_shuffle_reports_its_reasons) {
  tirx__call c = reduce(90, team(TIRX_TEAM_WARP), "((),(8)):((),(1@reg))",
                        "((4),(8)):((1@warpid),(1@reg))", TIRX_F32, 0x1);
  c.config.family = "shuffle";
  expect_fail(&c, TIRX_E_INVALID_ARG,
              "tirx_dispatch: family 'shuffle' is not legal for reduce(arch=sm_90, "
              "roles=local->local, team=warp, family=shuffle): reduced dim 0 iter (4):(1@warpid) "
              "is on warpid: a warp shuffle reduces over laneid and registers only");
  /* The family of another team is no rule for this key. */
  c.config.family = "smem";
  expect_fail(&c, TIRX_E_NO_RULE,
              "tirx_dispatch: no rule for reduce(arch=sm_90, roles=local->local, team=warp, "
              "family=smem)");
}

/* An 8-bit integer reduction builds, accumulating in i32 (as reduce.smem's): in its own dtype
 * every one failed the build, a max or min naming tirx_int_typed ("v is -2147483648, out of
 * range for i8": the identity) and a sum tirx_assign ("value has dtype i32, expected i8": the
 * promoted combine), though dispatch had chosen reduce.scalar for it. */
Test(dispatch_reduce, scalar_reductions_of_8_bit_integers_build) {
  static const struct {
    tirx_dtype t;
    tirx_op op;
    const char *init;
  } cases[] = {{TIRX_I8, TIRX_OP_MAX, "int acc = (-2147483647 - 1);"},
               {TIRX_I8, TIRX_OP_MIN, "int acc = 2147483647;"},
               {TIRX_I8, TIRX_OP_SUM, "int acc = 0;"},
               {TIRX_U8, TIRX_OP_MAX, "int acc = (-2147483647 - 1);"},
               {TIRX_U8, TIRX_OP_MIN, "int acc = 2147483647;"},
               {TIRX_U8, TIRX_OP_SUM, "int acc = 0;"}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    tirx_builder *b = tirx_builder_create("r8");
    tirx_dtype t = cases[i].t;
    tirx_tensor *y = tirx_param_tensor(b, "y", t, TIRX_EXPRS(tirx_int(b, 1)), NULL);
    tirx_set_block(b, 32, 1, 1);
    tirx_team_begin(b, TIRX_TEAM_THREAD);
    tirx_tensor *v = tirx_alloc_local(b, "v", t, TIRX_DIMS(8), NULL);
    tirx_fill(b, tirx_whole(b, v), tirx_int_typed(b, 7, t), NULL);
    tirx_tensor *s = tirx_alloc_local(b, "s", t, TIRX_DIMS(1), NULL);
    tirx_reduce(b, tirx_whole(b, s), tirx_whole(b, v), cases[i].op, 1, false, NULL);
    tirx_copy(b, tirx_whole(b, y), tirx_whole(b, s), NULL);
    tirx_team_end(b);
    tirx_kernel *k = NULL;
    cr_assert_eq(tirx_kernel_build(b, &k), TIRX_OK, "case %zu: %s", i, tirx_builder_error(b));
    cr_assert_not_null(strstr(tirx_kernel_dispatch_report(k), "-> reduce.scalar vec=1\n"), "%s",
                       tirx_kernel_dispatch_report(k));
    cr_assert_not_null(strstr(tirx_kernel_source(k), cases[i].init), "case %zu: no '%s' in:\n%s",
                       i, cases[i].init, tirx_kernel_source(k));
    tirx_kernel_release(k);
    tirx_builder_destroy(b);
  }
}
