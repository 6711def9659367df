/* The copy_async.cp_async rule (src/dispatch/families/copy_cp_async.c) through tirx__dispatch:
 * the rule chosen for given layouts and scopes on sm_80 (default) and sm_90 (forced, or the
 * fallback of TMA), its instruction widths, and the constraints it reports. */
#include "dispatch_helpers.h"

TestSuite(cp_async, .init = dispatch_setup, .fini = dispatch_teardown);

/* The TMA reason of a load written in the cp.async protocol (no barrier). */
#define TMA_NO_BARRIER                                                                             \
  "the load has no cfg->barrier: a TMA load completes on an mbarrier (a load without one is a "   \
  "cp.async load)"

/* A load of a (rows, cols) tile at (r0, c0) of a dense row-major (R, C) global tensor into a
 * dense (rows, cols) shared tile, dtype t, on arch, by the team of kind k. */
static tirx__call load(int arch, tirx_team k, tirx_dtype t, int64_t R, int64_t C, int64_t r0,
                       int64_t c0, int64_t rows, int64_t cols) {
  return CALL(TIRX__PRIM_COPY_ASYNC, arch, team(k), op(rows2d(rows, cols, 0, 0, rows, cols), t,
                                                       TIRX__ROLE_SHARED),
              op(rows2d(R, C, r0, c0, rows, cols), t, TIRX__ROLE_GLOBAL));
}

Test(cp_async, sm_80_chooses_cp_async_with_the_widest_vector) {
  tirx__call c = load(80, TIRX_TEAM_CTA, TIRX_F32, 1000, 4096, 0, 0, 16, 64);
  tirx__dispatch_result r = expect_rule(&c, "copy_async.cp_async", "vec=4");
  cr_assert(!r.fallback);
  cr_assert(!r.forced);
  cr_assert_eq(r.nrejected, 0); /* TMA needs sm_90: no candidate, so no rejection */
  cr_assert_str_eq(r.key, "copy_async(arch=sm_80, roles=global->shared, team=cta)");
  /* Narrower widths on request (8 and 4 bytes: cp.async.ca), nothing below 4 bytes. */
  c.config.shape = (tirx__shape){{2}};
  expect_rule(&c, "copy_async.cp_async", "vec=2");
  c.config.shape = (tirx__shape){{1}};
  expect_rule(&c, "copy_async.cp_async", "vec=1");
  c.config.shape = (tirx__shape){{8}};
  expect_fail(&c, TIRX_E_INVALID_ARG,
              "tirx_dispatch: shape vec=8 is not legal for copy_async.cp_async: legal shapes are "
              "vec=4, vec=2, vec=1");
  /* f16: 8 halves (16 bytes) down to 2 (4 bytes); i8: 16 bytes are 16 elements; f64: 2. */
  c = load(80, TIRX_TEAM_CTA, TIRX_F16, 1000, 4096, 0, 0, 16, 64);
  expect_rule(&c, "copy_async.cp_async", "vec=8");
  c.config.shape = (tirx__shape){{1}};
  expect_fail(&c, TIRX_E_INVALID_ARG,
              "tirx_dispatch: shape vec=1 is not legal for copy_async.cp_async: legal shapes are "
              "vec=8, vec=4, vec=2");
  c = load(86, TIRX_TEAM_WARP, TIRX_I8, 1000, 4096, 0, 0, 4, 64);
  expect_rule(&c, "copy_async.cp_async", "vec=16");
  c = load(89, TIRX_TEAM_WARPGROUP, TIRX_F64, 1000, 4096, 0, 0, 4, 64);
  expect_rule(&c, "copy_async.cp_async", "vec=2");
  /* One thread copies a whole tile under a thread team. */
  c = load(80, TIRX_TEAM_THREAD, TIRX_F32, 1000, 4096, 0, 0, 2, 8);
  expect_rule(&c, "copy_async.cp_async", "vec=4");
}

Test(cp_async, alignment_and_extents_choose_8_and_4_byte_copies) {
  /* Rows of 1001 f32 (4004 bytes): only 4-byte aligned. */
  tirx__call c = load(80, TIRX_TEAM_CTA, TIRX_F32, 64, 1001, 0, 0, 16, 32);
  expect_rule(&c, "copy_async.cp_async", "vec=1");
  /* Rows of 1002 halves (2004 bytes): two halves at a time. */
  c = load(80, TIRX_TEAM_CTA, TIRX_F16, 64, 1002, 0, 0, 16, 32);
  expect_rule(&c, "copy_async.cp_async", "vec=2");
  /* Rows of 1004 bf16 (2008 bytes): 8 bytes. */
  c = load(80, TIRX_TEAM_CTA, TIRX_BF16, 64, 1004, 0, 0, 16, 32);
  expect_rule(&c, "copy_async.cp_async", "vec=4");
  /* A tile 8 bytes into its row: 8-byte copies. */
  c = load(80, TIRX_TEAM_CTA, TIRX_F32, 64, 4096, 0, 2, 16, 32);
  expect_rule(&c, "copy_async.cp_async", "vec=2");
  /* 6 halves per row (12 bytes): 4-byte pieces divide the row, 8-byte ones do not. */
  c = load(80, TIRX_TEAM_CTA, TIRX_F16, 64, 4096, 0, 0, 16, 6);
  expect_rule(&c, "copy_async.cp_async", "vec=2");
}

Test(cp_async, copies_narrower_than_4_bytes_have_no_rule) {
  /* Rows of 1001 halves: a single half (2 bytes) is the widest aligned vector. */
  tirx__call c = load(80, TIRX_TEAM_CTA, TIRX_F16, 64, 1001, 0, 0, 16, 32);
  expect_fail(&c, TIRX_E_NO_RULE,
              "tirx_dispatch: no legal rule for copy_async(arch=sm_80, roles=global->shared, "
              "team=cta): copy_async.cp_async: src vector width 1 x 2 bytes < 4 bytes: innermost "
              "run of 32 contiguous elements is not 2-element aligned; cp.async moves 4, 8 or 16 "
              "bytes; copy_async.tma: needs sm_90 or newer");
  /* A column-major shared tile of halves. */
  c = CALL(TIRX__PRIM_COPY_ASYNC, 80, team(TIRX_TEAM_CTA),
           op(tirx_layout_col_major(A, 2, (int64_t[]){16, 32}), TIRX_F16, TIRX__ROLE_SHARED),
           op(rows2d(64, 4096, 0, 0, 16, 32), TIRX_F16, TIRX__ROLE_GLOBAL));
  expect_fail(&c, TIRX_E_NO_RULE,
              "tirx_dispatch: no legal rule for copy_async(arch=sm_80, roles=global->shared, "
              "team=cta): copy_async.cp_async: dst vector width 1 x 2 bytes < 4 bytes: innermost "
              "run not contiguous on m; cp.async moves 4, 8 or 16 bytes; copy_async.tma: needs "
              "sm_90 or newer");
  /* One half per row, or three: the extent, not the layouts, is the limit. */
  c = load(80, TIRX_TEAM_CTA, TIRX_BF16, 64, 4096, 0, 0, 16, 1);
  expect_fail(&c, TIRX_E_NO_RULE,
              "tirx_dispatch: no legal rule for copy_async(arch=sm_80, roles=global->shared, "
              "team=cta): copy_async.cp_async: the innermost extent 1 allows 2-byte vectors: "
              "cp.async moves 4, 8 or 16 bytes; copy_async.tma: needs sm_90 or newer");
  c = load(80, TIRX_TEAM_CTA, TIRX_F16, 64, 4096, 0, 0, 16, 3);
  expect_fail(&c, TIRX_E_NO_RULE,
              "tirx_dispatch: no legal rule for copy_async(arch=sm_80, roles=global->shared, "
              "team=cta): copy_async.cp_async: the innermost extent 3 allows 2-byte vectors: "
              "cp.async moves 4, 8 or 16 bytes; copy_async.tma: needs sm_90 or newer");
}

Test(cp_async, sm_90_takes_it_as_tma_fallback_or_forced) {
  /* No barrier: TMA's protocol is not the caller's; cp.async is the fallback, with the reason. */
  tirx__call c = load(90, TIRX_TEAM_CTA, TIRX_BF16, 1000, 4096, 64, 128, 64, 64);
  tirx__dispatch_result r = expect_rule(&c, "copy_async.cp_async", "vec=8");
  cr_assert(r.fallback);
  cr_assert(!r.forced);
  expect_rejected(&r, 0, "copy_async.tma", REASONS(TMA_NO_BARRIER));
  /* Forced: no rejection listed. */
  c.config.family = "cp_async";
  r = expect_rule(&c, "copy_async.cp_async", "vec=8");
  cr_assert(r.forced);
  cr_assert(!r.fallback);
  cr_assert_eq(r.nrejected, 0);
  /* With a barrier the load is TMA's: cp.async is never chosen for it, not even forced. */
  c.config.barrier = true;
  expect_fail(&c, TIRX_E_INVALID_ARG,
              "tirx_dispatch: family 'cp_async' is not legal for copy_async(arch=sm_90, "
              "roles=global->shared, team=cta, family=cp_async): cfg->barrier is set: a cp.async "
              "load completes in cp.async groups (tirx_cp_async_commit, tirx_cp_async_wait), not "
              "on an mbarrier");
  c.config.family = NULL;
  expect_fail(&c, TIRX_E_NO_RULE,
              "tirx_dispatch: no legal rule for copy_async(arch=sm_90, roles=global->shared, "
              "team=cta): copy_async.tma: the call has 512 active threads: one thread issues a TMA "
              "copy (wrap it in tirx_filter_begin(b, TIRX_AXIS_TID, t, t + 1)); "
              "copy_async.cp_async: cfg->barrier is set: a cp.async load completes in cp.async "
              "groups (tirx_cp_async_commit, tirx_cp_async_wait), not on an mbarrier");
}

Test(cp_async, scopes_hints_and_directions) {
  /* A warp with half its lanes: the team must be complete (the threads share the vectors). */
  const tirx_scope *half = tirx_scope_filter(A, team(TIRX_TEAM_WARP), TIRX_AXIS_LANEID, 0, 16);
  cr_assert_not_null(half, "%s", tirx_last_error());
  tirx__call c = load(80, TIRX_TEAM_WARP, TIRX_F32, 64, 4096, 0, 0, 16, 64);
  c.scope = half;
  expect_fail(&c, TIRX_E_NO_RULE,
              "tirx_dispatch: no legal rule for copy_async(arch=sm_80, roles=global->shared, "
              "team=warp): copy_async.cp_async: the warp team has 16 active threads: the "
              "instruction needs all 32; copy_async.tma: needs sm_90 or newer");
  /* Cache hints are for copy.vec: cp.async chooses .cg/.ca by width. */
  c = load(80, TIRX_TEAM_WARP, TIRX_F32, 64, 4096, 0, 0, 16, 64);
  c.config.hint = TIRX__HINT_STREAM;
  expect_fail(&c, TIRX_E_NO_RULE,
              "tirx_dispatch: no legal rule for copy_async(arch=sm_80, roles=global->shared, "
              "team=warp): copy_async.cp_async: cache hint .cs is not supported; copy_async.tma: "
              "needs sm_90 or newer");
  /* A cluster team: not a cp.async key (each CTA copies its own tiles). */
  c = load(90, TIRX_TEAM_CLUSTER, TIRX_F32, 64, 4096, 0, 0, 16, 64);
  expect_fail(&c, TIRX_E_NO_RULE,
              "tirx_dispatch: no legal rule for copy_async(arch=sm_90, roles=global->shared, "
              "team=cluster): copy_async.tma: " TMA_NO_BARRIER);
  /* shared -> global and shared -> shared: cp.async only loads from global memory. */
  c = CALL(TIRX__PRIM_COPY_ASYNC, 80, team(TIRX_TEAM_CTA),
           op(rows2d(64, 64, 0, 0, 16, 64), TIRX_F32, TIRX__ROLE_SHARED),
           op(rows2d(64, 64, 16, 0, 16, 64), TIRX_F32, TIRX__ROLE_SHARED));
  expect_fail(&c, TIRX_E_NO_RULE,
              "tirx_dispatch: no rule for copy_async(arch=sm_80, roles=shared->shared, "
              "team=cta)");
}
