/* tirx_set_target (src/builder/builder.c): the dispatch target, what it changes in dispatch,
 * the build-time check of native statements against it, and tirx_compile's and the launch
 * path's check of the compile arch against what the kernel needs (src/ir/kernel.c). */
#include <string.h>

#include "../helpers.h"
#include "builder/builder_internal.h"

TestSuite(target);

static void has(const char *text, const char *want) {
  cr_assert_not_null(strstr(text, want), "no '%s' in:\n%s", want, text);
}

static tirx_kernel *build_ok(tirx_builder *b) {
  tirx_kernel *k = NULL;
  cr_assert_eq(tirx_kernel_build(b, &k), TIRX_OK, "%s", tirx_builder_error(b));
  tirx_builder_destroy(b);
  return k;
}

static void build_fails(tirx_builder *b, tirx_status st, const char *msg) {
  tirx_kernel *k = NULL;
  tirx_status got = tirx_kernel_build(b, &k);
  cr_assert_eq(got, st, "status %s, expected %s: %s", tirx_status_name(got), tirx_status_name(st),
               tirx_builder_error(b));
  cr_assert_null(k);
  cr_assert_str_eq(tirx_builder_error(b), msg);
  tirx_builder_destroy(b);
}

static tirx_runtime *compile_only(const char *arch) {
  tirx_runtime *rt = NULL;
  cr_assert_eq(tirx_runtime_create(&(tirx_runtime_options){.compile_only = true, .arch = arch},
                                   &rt),
               TIRX_OK, "%s", tirx_last_error());
  return rt;
}

/* Compiles k for arch (NULL: the runtime's; must succeed) and checks the PTX's target. */
static void compiles(tirx_runtime *rt, const tirx_kernel *k, const char *arch) {
  tirx_compiled *c = NULL;
  cr_assert_eq(tirx_compile(rt, k, arch, &c), TIRX_OK, "%s", tirx_last_error());
  char target[32];
  snprintf(target, sizeof target, ".target %s", tirx_compiled_arch(c));
  has(tirx_compiled_ptx(c), target);
  tirx_compiled_destroy(c);
}

/* y[0:64] = x[0:64] through registers, one warp: copy.vec. target NULL: the default. */
static tirx_builder *plain_copy(const char *target) {
  tirx_builder *b = tirx_builder_create("plain");
  if (target) tirx_set_target(b, target);
  tirx_tensor *x = tirx_param_tensor(b, "x", TIRX_F32, TIRX_EXPRS(tirx_int(b, 64)), NULL);
  tirx_tensor *y = tirx_param_tensor(b, "y", TIRX_F32, TIRX_EXPRS(tirx_int(b, 64)), NULL);
  tirx_set_block(b, 32, 1, 1);
  tirx_copy(b, tirx_whole(b, y), tirx_whole(b, x), NULL);
  return b;
}

/* One warpgroup's d (64x64 f32) = a x b with a, b bf16 64x64 tiles in shared memory:
 * gemm_async (wgmma) when async, else gemm (mma.sync needs a warp: the team is a warp and d
 * the m16n8 C fragment tiled over 16x16). */
static tirx_builder *gemm_tile(const char *target, bool async) {
  tirx_builder *b = tirx_builder_create("g");
  if (target) tirx_set_target(b, target);
  tirx_arena *A = tirx_builder_arena(b);
  int64_t m = async ? 64 : 16, n = async ? 64 : 16, k = 64;
  tirx_set_block(b, async ? 128 : 32, 1, 1);
  const tirx_layout *al = tirx_layout_smem_tile(A, m, k, 2, 128);
  const tirx_layout *bl =
      tirx_layout_permute(A, tirx_layout_smem_tile(A, n, k, 2, 128), 2, (int64_t[]){1, 0});
  const tirx_layout *dl =
      async ? tirx_layout_wgmma_acc(A, (int)m, (int)n)
            : tirx_layout_parse(A, "((2,8),(2,4,2)):((2@reg,4@laneid),(4@reg,1@laneid,1@reg))");
  cr_assert(al && bl && dl, "%s", tirx_last_error());
  tirx_tensor *as = tirx_alloc_shared(b, "as", TIRX_BF16, TIRX_DIMS(m, k), al);
  tirx_tensor *bs = tirx_alloc_shared(b, "bs", TIRX_BF16, TIRX_DIMS(k, n), bl);
  tirx_team_begin(b, async ? TIRX_TEAM_WARPGROUP : TIRX_TEAM_WARP);
  tirx_tensor *d = tirx_alloc_local(b, "d", TIRX_F32, TIRX_DIMS(m, n), dl);
  if (async)
    tirx_gemm_async(b, tirx_whole(b, d), tirx_whole(b, as), tirx_whole(b, bs), NULL);
  else
    tirx_gemm(b, tirx_whole(b, d), tirx_whole(b, as), tirx_whole(b, bs), NULL);
  tirx_team_end(b);
  return b;
}

/* The RS form: d (64x64 f32) += a (64x32 bf16 wgmma A fragments in registers) x b (a 32x64
 * K-major shared tile) for one warpgroup: gemm_async.wgmma_rs on sm_90a. */
static tirx_builder *gemm_rs_tile(const char *target) {
  tirx_builder *b = tirx_builder_create("rs");
  if (target) tirx_set_target(b, target);
  tirx_arena *A = tirx_builder_arena(b);
  tirx_set_block(b, 128, 1, 1);
  const tirx_layout *bl =
      tirx_layout_permute(A, tirx_layout_smem_tile(A, 64, 32, 2, 64), 2, (int64_t[]){1, 0});
  cr_assert(bl, "%s", tirx_last_error());
  tirx_tensor *bs = tirx_alloc_shared(b, "bs", TIRX_BF16, TIRX_DIMS(32, 64), bl);
  tirx_team_begin(b, TIRX_TEAM_WARPGROUP);
  tirx_tensor *a = tirx_alloc_local(b, "a", TIRX_BF16, TIRX_DIMS(64, 32),
                                    tirx_layout_wgmma_a(A, 64, 32));
  tirx_tensor *d =
      tirx_alloc_local(b, "d", TIRX_F32, TIRX_DIMS(64, 64), tirx_layout_wgmma_acc(A, 64, 64));
  tirx_fill(b, tirx_whole(b, a), tirx_float(b, 1.0, TIRX_BF16), NULL);
  tirx_gemm_async(b, tirx_whole(b, d), tirx_whole(b, a), tirx_whole(b, bs), NULL);
  tirx_team_end(b);
  return b;
}

/* Issue 13: gemm_async.wgmma_rs was chosen for sm_90 and sm_100a (it declared no sm_90a need)
 * and the kernel then failed inside NVRTC ("tirx_wgmma_fence is undefined"). Dispatch must
 * reject it there with the missing feature; forcing the family gives the same reason. */
Test(target, wgmma_rs_needs_wgmma_and_is_not_chosen_without_it, .timeout = 300) {
  tirx_kernel *k = build_ok(gemm_rs_tile("sm_90a"));
  has(tirx_kernel_dispatch_report(k), "-> gemm_async.wgmma_rs ");
  cr_assert(k->need & TIRX__FEAT(WGMMA));
  cr_assert_str_eq(k->need_what[TIRX__FEAT_WGMMA], "gemm_async.wgmma_rs");
  tirx_runtime *rt = compile_only(NULL);
  tirx_compiled *c = (tirx_compiled *)1;
  expect_error(tirx_compile(rt, k, "sm_100a", &c), TIRX_E_NOT_SUPPORTED,
               "tirx_compile: arch is sm_100a, expected sm_90a: kernel 'rs' (dispatched for "
               "sm_90a) uses gemm_async.wgmma_rs, which needs wgmma");
  cr_assert_null(c);
  expect_error(tirx_compile(rt, k, "sm_90", &c), TIRX_E_NOT_SUPPORTED,
               "tirx_compile: arch is sm_90, expected sm_90a: kernel 'rs' (dispatched for "
               "sm_90a) uses gemm_async.wgmma_rs, which needs wgmma");
  compiles(rt, k, "sm_90a");
  tirx_runtime_destroy(rt);
  tirx_kernel_release(k);
  build_fails(gemm_rs_tile("sm_90"), TIRX_E_NO_RULE,
              "tirx_kernel_build: [rs:2] no legal rule for gemm_async(arch=sm_90, "
              "roles=local,shared->local, team=warpgroup): gemm_async.wgmma_rs: needs wgmma "
              "(sm_90a only): the target is sm_90");
  build_fails(gemm_rs_tile("sm_100a"), TIRX_E_NO_RULE,
              "tirx_kernel_build: [rs:2] no legal rule for gemm_async(arch=sm_100, "
              "roles=local,shared->local, team=warpgroup): gemm_async.wgmma_rs: needs wgmma "
              "(sm_90a only): the target is sm_100a");
  build_fails(gemm_rs_tile("sm_80"), TIRX_E_NO_RULE,
              "tirx_kernel_build: [rs:2] no rule for gemm_async(arch=sm_80, "
              "roles=local,shared->local, team=warpgroup): gemm_async.wgmma_rs: needs sm_90 or "
              "newer");
}

Test(target, the_default_is_sm_90a_dispatched_as_sm_90) {
  tirx_kernel *k = build_ok(plain_copy(NULL));
  cr_assert_str_eq(tirx_kernel_target(k), "sm_90a");
  cr_assert_str_eq(
      tirx_kernel_dispatch_report(k),
      "[plain:1] copy(arch=sm_90, roles=global->global, team=cta) -> copy.vec vec=4\n");
  cr_assert_eq(k->need, 0);
  for (int f = 0; f < TIRX__FEAT_COUNT; f++) cr_assert_null(k->need_what[f]);
  tirx_kernel_release(k);
  cr_assert_null(tirx_kernel_target(NULL));
  /* The last call counts. */
  tirx_builder *b = plain_copy("sm_80");
  tirx_set_target(b, "sm_86");
  k = build_ok(b);
  cr_assert_str_eq(tirx_kernel_target(k), "sm_86");
  has(tirx_kernel_dispatch_report(k), "copy(arch=sm_86, ");
  tirx_kernel_release(k);
}

/* A TMA-style load (one thread, an mbarrier) of a 64x64 bf16 tile. */
static tirx_builder *tma_load(const char *target) {
  tirx_builder *b = tirx_builder_create("t");
  tirx_set_target(b, target);
  tirx_expr *M = tirx_param_int(b, "M", TIRX_I32);
  tirx_tensor *a = tirx_param_tensor(b, "A", TIRX_BF16, TIRX_EXPRS(M, tirx_int(b, 64)), NULL);
  tirx_set_block(b, 128, 1, 1);
  tirx_tensor *s = tirx_alloc_shared(b, "tile", TIRX_BF16, TIRX_DIMS(64, 64),
                                     tirx_layout_smem_tile(tirx_builder_arena(b), 64, 64, 2, 128));
  tirx_tensor *bar = tirx_alloc_mbarrier(b, "bar", 1);
  tirx_filter_begin(b, TIRX_AXIS_TID, 0, 1);
  tirx_copy_async(b, tirx_whole(b, s),
                  tirx_region_new(b, a, TIRX_EXPRS(tirx_int(b, 0), tirx_int(b, 0)),
                                  (int64_t[]){64, 64}),
                  &(tirx_config){.barrier = tirx_region_new(b, bar, TIRX_EXPRS(tirx_int(b, 0)),
                                                            (int64_t[]){1})});
  tirx_filter_end(b);
  return b;
}

Test(target, sm_80_has_no_tma_wgmma_or_dsmem_and_says_which_rule_needs_sm_90) {
  tirx_kernel *k = build_ok(tma_load("sm_90"));
  has(tirx_kernel_dispatch_report(k), "-> copy_async.tma box=4096");
  cr_assert_eq(k->need, TIRX__FEAT(TMA) | TIRX__FEAT(MBARRIER)); /* the tile's mbarrier */
  cr_assert_str_eq(k->need_what[TIRX__FEAT_TMA], "copy_async.tma");
  tirx_kernel_release(k);
  /* With its mbarrier this load is TMA's protocol, which cp.async (sm_80) cannot take. */
  build_fails(tma_load("sm_80"), TIRX_E_NO_RULE,
              "tirx_kernel_build: [t:1] no legal rule for copy_async(arch=sm_80, "
              "roles=global->shared, team=cta): copy_async.cp_async: cfg->barrier is set: a "
              "cp.async load completes in cp.async groups (tirx_cp_async_commit, "
              "tirx_cp_async_wait), not on an mbarrier; copy_async.tma: needs sm_90 or newer");

  build_fails(gemm_tile("sm_80", true), TIRX_E_NO_RULE,
              "tirx_kernel_build: [g:1] no rule for gemm_async(arch=sm_80, "
              "roles=shared,shared->local, team=warpgroup): gemm_async.wgmma: needs sm_90 or "
              "newer");
  /* wgmma is sm_90a only: the generic sm_90 target rejects it, with the missing feature. */
  build_fails(gemm_tile("sm_90", true), TIRX_E_NO_RULE,
              "tirx_kernel_build: [g:1] no legal rule for gemm_async(arch=sm_90, "
              "roles=shared,shared->local, team=warpgroup): gemm_async.wgmma: needs wgmma "
              "(sm_90a only): the target is sm_90");
  build_fails(gemm_tile("sm_100a", true), TIRX_E_NO_RULE,
              "tirx_kernel_build: [g:1] no legal rule for gemm_async(arch=sm_100, "
              "roles=shared,shared->local, team=warpgroup): gemm_async.wgmma: needs wgmma "
              "(sm_90a only): the target is sm_100a");
  /* gemm's sm_80 family is chosen on sm_80. */
  k = build_ok(gemm_tile("sm_80", false));
  has(tirx_kernel_dispatch_report(k),
      "[g:1] gemm(arch=sm_80, roles=shared,shared->local, team=warp) -> gemm.mma ");
  cr_assert_eq(k->need, TIRX__FEAT(MMA_SYNC) | TIRX__FEAT(LDMATRIX));
  cr_assert_eq(tirx__features_min_arch(k->need), 80);
  tirx_kernel_release(k);

  /* A reduction over a cluster: reduce.dsmem needs sm_90, and the scalar fallback cannot reach
   * other CTAs. */
  tirx_builder *b = tirx_builder_create("csum");
  tirx_set_target(b, "sm_80");
  tirx_tensor *y = tirx_param_tensor(b, "y", TIRX_F32, TIRX_EXPRS(tirx_int(b, 1)), NULL);
  tirx_set_block(b, 64, 1, 1);
  tirx_set_cluster(b, 2, 1, 1);
  tirx_team_begin(b, TIRX_TEAM_CLUSTER);
  const tirx_layout *vl = tirx_layout_parse(tirx_builder_arena(b), "(2,64):(1@cbx,1@tid)");
  tirx_tensor *v = tirx_alloc_local(b, "v", TIRX_F32, TIRX_DIMS(128), vl);
  tirx_fill(b, tirx_whole(b, v), tirx_float(b, 1.0, TIRX_F32), NULL);
  tirx_tensor *s = tirx_alloc_local(b, "s", TIRX_F32, TIRX_DIMS(1), NULL);
  tirx_reduce(b, tirx_whole(b, s), tirx_whole(b, v), TIRX_OP_SUM, 1, false, NULL);
  tirx_store(b, y, TIRX_EXPRS(tirx_int(b, 0)), tirx_load(b, s, TIRX_EXPRS(tirx_int(b, 0))));
  tirx_team_end(b);
  build_fails(b, TIRX_E_NO_RULE,
              "tirx_kernel_build: [csum:2] no legal rule for reduce(arch=sm_80, "
              "roles=local->local, team=cluster): reduce.scalar: reduced dim 0 iter (2):(1@cbx) "
              "is on cbx: a scalar loop reads only the thread's own registers; reduced dim 0 iter "
              "(64):(1@tid) is on tid: a scalar loop reads only the thread's own registers; "
              "reduce.dsmem: needs sm_90 or newer");
}

Test(target, native_statements_newer_than_the_target_fail_the_build) {
  static const struct {
    const char *target;
    int which;
    const char *msg;
  } cases[] = {
      {"sm_80", 0, "tirx_kernel_build: tirx_mbarrier_init needs mbarrier (sm_90 or newer): the "
                   "target is sm_80 (tirx_set_target)"},
      {"sm_89", 1, "tirx_kernel_build: tirx_cluster_ctarank needs cluster (sm_90 or newer): the "
                   "target is sm_89 (tirx_set_target)"},
      {"sm_86", 2, "tirx_kernel_build: tirx_bulk_commit needs tma (sm_90 or newer): the target "
                   "is sm_86 (tirx_set_target)"},
      {"sm_90", 3, "tirx_kernel_build: tirx_setmaxnreg needs setmaxnreg (sm_90a only): the "
                   "target is sm_90 (tirx_set_target)"},
      {"sm_100a", 4, "tirx_kernel_build: tirx_wgmma_fence needs wgmma (sm_90a only): the target "
                     "is sm_100a (tirx_set_target)"},
      {"sm_80", 5, "tirx_kernel_build: tirx_elect_one needs elect (sm_90 or newer): the target "
                   "is sm_80 (tirx_set_target)"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    tirx_builder *b = tirx_builder_create("nat");
    tirx_set_target(b, cases[i].target);
    tirx_set_block(b, 128, 1, 1);
    tirx_tensor *bar = tirx_alloc_mbarrier(b, "bar", 1);
    tirx_tensor *y = tirx_param_tensor(b, "y", TIRX_I32, TIRX_EXPRS(tirx_int(b, 1)), NULL);
    tirx_named_barrier_sync(b, 1, 128); /* any arch */
    switch (cases[i].which) {
    case 0: tirx_mbarrier_init(b, tirx_region_new(b, bar, TIRX_EXPRS(tirx_int(b, 0)),
                                                  (int64_t[]){1}), 1); break;
    case 1: tirx_store(b, y, TIRX_EXPRS(tirx_int(b, 0)), tirx_cluster_ctarank(b)); break;
    case 2: tirx_bulk_commit(b); break;
    case 3: tirx_setmaxnreg(b, 240, true); break;
    case 4: tirx_wgmma_fence(b); break;
    case 5: tirx_store(b, y, TIRX_EXPRS(tirx_int(b, 0)), tirx_cast(b, tirx_elect_one(b), TIRX_I32)); break;
    }
    build_fails(b, TIRX_E_NOT_SUPPORTED, cases[i].msg);
  }
  /* The same statements build for sm_90a; named barriers for any target. */
  tirx_builder *b = tirx_builder_create("nat");
  tirx_set_target(b, "sm_80");
  tirx_set_block(b, 64, 1, 1);
  tirx_named_barrier_sync(b, 1, 64);
  tirx_kernel *k = build_ok(b);
  cr_assert_eq(k->need, 0);
  tirx_kernel_release(k);
}

Test(target, compile_refuses_an_arch_older_than_the_kernel_needs, .timeout = 300) {
  tirx_runtime *rt = compile_only(NULL);
  tirx_kernel *wg = build_ok(gemm_tile(NULL, true));
  cr_assert_eq(wg->need, TIRX__FEAT(WGMMA));
  cr_assert_str_eq(wg->need_what[TIRX__FEAT_WGMMA], "gemm_async.wgmma");
  tirx_compiled *c = (tirx_compiled *)1;
  expect_error(tirx_compile(rt, wg, "sm_80", &c), TIRX_E_NOT_SUPPORTED,
               "tirx_compile: arch is sm_80, expected sm_90a: kernel 'g' (dispatched for sm_90a) "
               "uses gemm_async.wgmma, which needs wgmma");
  cr_assert_null(c);
  expect_error(tirx_compile(rt, wg, "sm_90", &c), TIRX_E_NOT_SUPPORTED,
               "tirx_compile: arch is sm_90, expected sm_90a: kernel 'g' (dispatched for sm_90a) "
               "uses gemm_async.wgmma, which needs wgmma");
  expect_error(tirx_compile(rt, wg, "sm_100a", &c), TIRX_E_NOT_SUPPORTED,
               "tirx_compile: arch is sm_100a, expected sm_90a: kernel 'g' (dispatched for "
               "sm_90a) uses gemm_async.wgmma, which needs wgmma");
  /* A malformed arch is reported as before (NVRTC's check comes first). */
  expect_error(tirx_compile(rt, wg, "sm90", &c), TIRX_E_INVALID_ARG,
               "tirx_compile: arch 'sm90' is not of the form sm_<major><minor>[a|f] (sm_90a, "
               "sm_80)");
  compiles(rt, wg, "sm_90a");

  /* The launch path checks the runtime's arch before it compiles. */
  tirx_runtime *rt80 = compile_only("sm_80");
  tirx_future *f = NULL;
  expect_error(tirx_prepare_async(rt80, wg, NULL, 0, &f), TIRX_E_NOT_SUPPORTED,
               "tirx_prepare_async: the runtime's arch is sm_80, expected sm_90a: kernel 'g' "
               "(dispatched for sm_90a) uses gemm_async.wgmma, which needs wgmma");
  cr_assert_null(f);
  tirx_kernel_release(wg);

  /* Dispatched for sm_80 (mma.sync): compiles for sm_80 and for sm_90a, not for sm_75. */
  tirx_kernel *mma = build_ok(gemm_tile("sm_80", false));
  compiles(rt, mma, "sm_80");
  compiles(rt, mma, "sm_90a");
  expect_error(tirx_compile(rt, mma, "sm_75", &c), TIRX_E_NOT_SUPPORTED,
               "tirx_compile: arch is sm_75, expected sm_80 or newer: kernel 'g' (dispatched for "
               "sm_80) uses gemm.mma, which needs mma.sync");
  tirx_kernel_release(mma);
  /* Dispatched for sm_90a with nothing of sm_90: compiles for sm_80 too. */
  tirx_kernel *k = build_ok(plain_copy(NULL));
  compiles(rt, k, "sm_80");
  compiles(rt80, k, NULL);
  tirx_kernel_release(k);
  tirx_runtime_destroy(rt80);
  tirx_runtime_destroy(rt);
}

Test(target, bad_targets_are_recorded_with_their_reason) {
  static const struct {
    const char *arch;
    tirx_status st;
    const char *msg;
  } cases[] = {
      {NULL, TIRX_E_NULL_ARG,
       "tirx_set_target: arch is NULL, expected a target such as \"sm_90a\" or \"sm_80\""},
      {"", TIRX_E_INVALID_ARG,
       "tirx_set_target: arch is \"\", expected sm_<major><minor> with an optional a or f suffix "
       "(\"sm_80\", \"sm_86\", \"sm_89\", \"sm_90\", \"sm_90a\")"},
      {"sm90", TIRX_E_INVALID_ARG,
       "tirx_set_target: arch is \"sm90\", expected sm_<major><minor> with an optional a or f "
       "suffix (\"sm_80\", \"sm_86\", \"sm_89\", \"sm_90\", \"sm_90a\")"},
      {"sm_9", TIRX_E_INVALID_ARG,
       "tirx_set_target: arch is \"sm_9\", expected sm_<major><minor> with an optional a or f "
       "suffix (\"sm_80\", \"sm_86\", \"sm_89\", \"sm_90\", \"sm_90a\")"},
      {"sm_90b", TIRX_E_INVALID_ARG,
       "tirx_set_target: arch is \"sm_90b\", expected sm_<major><minor> with an optional a or f "
       "suffix (\"sm_80\", \"sm_86\", \"sm_89\", \"sm_90\", \"sm_90a\")"},
      {"compute_90a", TIRX_E_INVALID_ARG,
       "tirx_set_target: arch is \"compute_90a\", expected sm_<major><minor> with an optional a "
       "or f suffix (\"sm_80\", \"sm_86\", \"sm_89\", \"sm_90\", \"sm_90a\")"},
      {"sm_90aa", TIRX_E_INVALID_ARG,
       "tirx_set_target: arch is \"sm_90aa\", expected sm_<major><minor> with an optional a or f "
       "suffix (\"sm_80\", \"sm_86\", \"sm_89\", \"sm_90\", \"sm_90a\")"},
      {"sm_12345", TIRX_E_INVALID_ARG,
       "tirx_set_target: arch is \"sm_12345\", expected sm_<major><minor> with an optional a or "
       "f suffix (\"sm_80\", \"sm_86\", \"sm_89\", \"sm_90\", \"sm_90a\")"},
      {"sm_90a_and_a_long_tail_of_text_that_goes_on", TIRX_E_INVALID_ARG,
       "tirx_set_target: arch is \"sm_90a_and_a_long_tail_of_text_t...\", expected "
       "sm_<major><minor> with an optional a or f suffix (\"sm_80\", \"sm_86\", \"sm_89\", "
       "\"sm_90\", \"sm_90a\")"},
      {"sm_75", TIRX_E_NOT_SUPPORTED,
       "tirx_set_target: arch is \"sm_75\", expected sm_80 or newer (the oldest target of tirx's "
       "instruction families)"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    tirx_builder *b = tirx_builder_create("k");
    tirx_clear_error();
    tirx_set_target(b, cases[i].arch);
    cr_assert_eq(tirx_builder_status(b), cases[i].st, "case %zu: %s", i, tirx_builder_error(b));
    cr_assert_str_eq(tirx_builder_error(b), cases[i].msg);
    cr_assert_str_eq(tirx_last_error(), cases[i].msg);
    /* The first error sticks: a later good call changes nothing. */
    tirx_set_target(b, "sm_80");
    cr_assert_str_eq(tirx_builder_error(b), cases[i].msg);
    tirx_builder_destroy(b);
  }
  tirx_clear_error();
  tirx_set_target(NULL, "sm_80");
  cr_assert_str_eq(tirx_last_error(), "tirx_set_target: b is NULL");
  /* Every documented form is accepted. */
  static const char *const good[] = {"sm_80", "sm_86", "sm_89", "sm_90", "sm_90a", "sm_100a",
                                     "sm_100f", "sm_120"};
  for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
    tirx_builder *b = tirx_builder_create("k");
    tirx_set_target(b, good[i]);
    cr_assert_eq(tirx_builder_status(b), TIRX_OK, "%s: %s", good[i], tirx_builder_error(b));
    tirx_builder_destroy(b);
  }
}
