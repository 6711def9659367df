/* The gemm and gemm_async families (dispatch/families/gemm_*.c, their lowerings): dispatch choices and reasons, the generated code, and
 * NVRTC for sm_90a (wgmma.mma_async in the PTX). */
#include <string.h>

#include "../../helpers.h"
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
  tirx_kernel *k = tile((mma_tile){"wgmma", TIRX_BF16, 64, 128, 64, 1, 128, false, false});
  const char *rep = tirx_kernel_dispatch_report(k);
  assert_has(rep, "gemm_async(arch=sm_90, roles=shared,shared->local, team=warpgroup, "
                  "family=wgmma) -> gemm_async.wgmma m=64,n=128,k=16 (forced)");
  assert_has(rep, "-> copy.stmatrix num=4");
  const char *src = tirx_kernel_source(k);
  assert_has(src, "tirx_wgmma_m64n128k16_bf16_x4<0, 0>(&acc[0]"); /* the 4 k16 steps */
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

static int count(const char *text, const char *what) {
  int n = 0;
  for (const char *p = strstr(text, what); p; p = strstr(p + 1, what)) n++;
  return n;
}

/* The k16 steps on one accumulator block go into one asm statement (codegen.c, wgmma_run):
 * the helper _x<steps>, at most 8 at once, with every wgmma.mma_async in the PTX; two m64 slabs
 * on one warpgroup alternate accumulators, so they stay one call per instruction. */
Test(prim_gemm, wgmma_k_steps_share_one_asm_statement, .timeout = 300) {
  static const struct {
    mma_tile t;
    const char *call;
    int calls, instructions;
  } cases[] = {
      {{"wgmma", TIRX_BF16, 64, 256, 64, 1, 128, false, false}, "tirx_wgmma_m64n256k16_bf16_x4<0, 0>(", 1, 4},
      {{"wgmma", TIRX_BF16, 64, 256, 128, 1, 128, false, false}, "tirx_wgmma_m64n256k16_bf16_x8<0, 0>(", 1, 8},
      {{"wgmma", TIRX_F16, 64, 24, 64, 1, 64, true, false}, "tirx_wgmma_m64n24k16_f16_x2<0, 0>(", 2, 4},
      {{"wgmma", TIRX_F16, 128, 64, 128, 1, 128, true, false}, "tirx_wgmma_m64n64k16_f16<0, 0>(", 16, 16},
  };
  tirx_runtime *rt = compile_only_runtime();
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    tirx_kernel *k = tile(cases[i].t);
    const char *src = tirx_kernel_source(k);
    cr_assert_eq(count(src, cases[i].call), cases[i].calls, "case %zu: %d x '%s' in:\n%s", i,
                 count(src, cases[i].call), cases[i].call, src);
    char *ptx = ptx_of(rt, k);
    cr_assert_eq(count(ptx, "wgmma.mma_async.sync.aligned"), cases[i].instructions,
                 "case %zu:\n%s", i, ptx);
    free(ptx);
    tirx_kernel_release(k);
  }
  tirx_runtime_destroy(rt);
}

/* Every tile of the GPU suite (tests/gpu/test_mma.c) builds and compiles for sm_90a. */
Test(prim_gemm, every_gpu_tile_compiles, .timeout = 600) {
  static const mma_tile tiles[] = {
      {"wgmma", TIRX_BF16, 64, 128, 64, 1, 128, false, false}, {"wgmma", TIRX_BF16, 128, 256, 64, 2, 128, false, false},
      {"wgmma", TIRX_F16, 128, 64, 128, 1, 128, true, false},  {"wgmma", TIRX_BF16, 64, 64, 64, 1, 64, true, false},
      {"wgmma", TIRX_BF16, 64, 32, 64, 1, 32, false, false},   {"wgmma", TIRX_BF16, 64, 48, 64, 1, 0, true, false},
      {"wgmma", TIRX_F16, 64, 24, 32, 1, 64, false, false},    {"mma", TIRX_BF16, 64, 128, 64, 0, 0, false, false},
      {"mma", TIRX_F16, 32, 24, 32, 0, 0, true, false},        {"mma", TIRX_BF16, 16, 8, 16, 0, 0, false, false},
      {"scalar", TIRX_BF16, 64, 128, 64, 0, 0, false, false},  {"scalar", TIRX_F16, 32, 24, 32, 0, 0, true, false},
      {"scalar", TIRX_BF16, 128, 64, 32, 2, 0, true, false},
      /* the RS form (mma::wgmma_rs_tiles) */
      {"wgmma", TIRX_BF16, 64, 64, 16, 1, 32, false, true},
      {"wgmma", TIRX_F16, 64, 128, 16, 1, 32, false, true},
      {"wgmma", TIRX_BF16, 64, 128, 64, 1, 128, false, true},
      {"wgmma", TIRX_F16, 128, 64, 128, 1, 128, true, true},
      {"wgmma", TIRX_BF16, 128, 256, 64, 2, 128, false, true},
      {"wgmma", TIRX_BF16, 64, 48, 64, 1, 0, true, true},
      {"wgmma", TIRX_F16, 64, 24, 32, 1, 64, false, true},
      {"wgmma", TIRX_BF16, 64, 8, 48, 1, 32, false, true},
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
    if (tiles[i].a_regs) {
      assert_has(tirx_kernel_dispatch_report(k), "-> gemm_async.wgmma_rs m=64,");
      assert_has(ptx, "ldmatrix.sync.aligned.m8n8.x");
    }
    free(ptx);
    tirx_kernel_release(k);
  }
  tirx_runtime_destroy(rt);
}

/* ---- dispatch choices and reasons ---- */

/*
 * One gemm (async: gemm_async) call at team scope (block threads) with d (M,N) local of layout
 * dl (NULL: dense), a (M,K) and b (K,N) shared of layouts al/bl and dtypes at/bt.
 */
typedef struct call_spec {
  bool async;
  int threads;
  tirx_team team;
  int64_t m, n, k;
  const char *dl, *al, *bl; /* layout texts; NULL: the canonical one for the family */
  tirx_dtype at, bt;
  const char *family;
} call_spec;

static tirx_status build_call(const call_spec *c, tirx_kernel **out, char *err, size_t cap) {
  tirx_builder *b = tirx_builder_create("g");
  tirx_arena *A = tirx_builder_arena(b);
  tirx_set_block(b, c->threads, 1, 1);
  const tirx_layout *al = c->al ? tirx_layout_parse(A, c->al)
                                : tirx_layout_smem_tile(A, c->m, c->k, 2, 128);
  const tirx_layout *bl = c->bl ? tirx_layout_parse(A, c->bl)
                                : tirx_layout_permute(A, tirx_layout_smem_tile(A, c->n, c->k, 2, 128),
                                                      2, (int64_t[]){1, 0});
  const tirx_layout *dl = c->dl ? tirx_layout_parse(A, c->dl)
                                : tirx_layout_wgmma_acc(A, (int)c->m, (int)c->n);
  cr_assert(al && bl && dl, "%s", tirx_last_error());
  tirx_tensor *as = tirx_alloc_shared(b, "as", c->at, TIRX_DIMS(c->m, c->k), al);
  tirx_tensor *bs = tirx_alloc_shared(b, "bs", c->bt, TIRX_DIMS(c->k, c->n), bl);
  tirx_team_begin(b, c->team);
  tirx_tensor *d = tirx_alloc_local(b, "d", TIRX_F32, TIRX_DIMS(c->m, c->n), dl);
  tirx_gemm_config g = {.family = c->family};
  if (c->async)
    tirx_gemm_async(b, tirx_whole(b, d), tirx_whole(b, as), tirx_whole(b, bs), &g);
  else
    tirx_gemm(b, tirx_whole(b, d), tirx_whole(b, as), tirx_whole(b, bs), &g);
  tirx_team_end(b);
  tirx_status st = tirx_kernel_build(b, out);
  snprintf(err, cap, "%s", tirx_builder_error(b));
  tirx_builder_destroy(b);
  return st;
}

/* WG(.field = value) overrides the defaults of a one-warpgroup wgmma call. */
#pragma GCC diagnostic ignored "-Woverride-init"
#define WG(...) ((call_spec){.async = true, .threads = 128, .team = TIRX_TEAM_WARPGROUP,           \
                             .m = 64, .n = 64, .k = 64, .at = TIRX_BF16, .bt = TIRX_BF16,           \
                             __VA_ARGS__})

static void expect_fail(call_spec c, tirx_status st, const char *want) {
  char err[4096];
  tirx_kernel *k = NULL;
  tirx_status got = build_call(&c, &k, err, sizeof err);
  cr_assert_eq(got, st, "status %s, expected %s: %s", tirx_status_name(got), tirx_status_name(st),
               err);
  cr_assert_str_eq(err, want);
  cr_assert_str_eq(tirx_last_error(), want, "tirx_last_error() differs from the builder's");
}

/* Found by fuzz_builder (tests/fuzz/corpus/builder/builder_gemm_async_no_rule_last_error): a
 * dispatch failure wraps the rule's message, taken from tirx_last_error(), into the message of
 * tirx_kernel_build; the builder's copy was right, but tirx_last_error() was formatted over
 * itself and came out garbled ("[k2:1] ld: [k2:1] le for ..."). */
Test(prim_gemm, a_dispatch_failure_sets_the_same_last_error) {
  char err[4096];
  tirx_kernel *k = NULL;
  call_spec c = WG(.n = 8, .k = 16);
  c.al = "(64,16):(16,1)"; /* dense: not a wgmma tile */
  c.bl = "(16,8):(8,1)";
  cr_assert_eq(build_call(&c, &k, err, sizeof err), TIRX_E_NO_RULE, "%s", err);
  cr_assert_null(k);
  cr_assert_not_null(strstr(err, "] no legal rule for gemm_async("), "%s", err);
  cr_assert_str_eq(tirx_last_error(), err);
  cr_assert_eq(tirx_last_status(), TIRX_E_NO_RULE);
}

Test(prim_gemm, wgmma_is_the_default_of_gemm_async) {
  char err[4096];
  tirx_kernel *k = NULL;
  call_spec c = WG(.n = 256);
  cr_assert_eq(build_call(&c, &k, err, sizeof err), TIRX_OK, "%s", err);
  cr_assert_str_eq(tirx_kernel_dispatch_report(k),
                   "[g:1] gemm_async(arch=sm_90, roles=shared,shared->local, team=warpgroup) -> "
                   "gemm_async.wgmma m=64,n=256,k=16\n");
  tirx_kernel_release(k);
}

Test(prim_gemm, wgmma_legality_reasons) {
  expect_fail(WG(.dl = "((64),(64)):((64@reg),(1@reg))"), TIRX_E_NO_RULE,
              "tirx_kernel_build: [g:1] no legal rule for gemm_async(arch=sm_90, "
              "roles=shared,shared->local, team=warpgroup): gemm_async.wgmma: d rows 0..63 are "
              "not the wgmma m64n64 accumulator fragment (tirx_layout_wgmma_acc) of a warpgroup");
  expect_fail(WG(.bt = TIRX_F16), TIRX_E_NO_RULE,
              "tirx_kernel_build: [g:1] no legal rule for gemm_async(arch=sm_90, "
              "roles=shared,shared->local, team=warpgroup): gemm_async.wgmma: a and b have "
              "dtypes bf16 and f16: the instruction needs both f16 or both bf16");
  /* a stored M-major (column-major): not K-major. */
  expect_fail(WG(.al = "((64),(64)):((1@m),(64@m))"), TIRX_E_NO_RULE,
              "tirx_kernel_build: [g:1] no legal rule for gemm_async(arch=sm_90, "
              "roles=shared,shared->local, team=warpgroup): gemm_async.wgmma: a: it is not a "
              "K-major interleaved (8x16-byte core matrices) wgmma tile: element (0,1) is 128 "
              "bytes from the start, expected 2");
  /* a row-major without swizzle: rows 128 bytes apart, not core matrices. */
  expect_fail(WG(.al = "((64),(64)):((64@m),(1@m))"), TIRX_E_NO_RULE,
              "tirx_kernel_build: [g:1] no legal rule for gemm_async(arch=sm_90, "
              "roles=shared,shared->local, team=warpgroup): gemm_async.wgmma: a: it is not a "
              "K-major interleaved (8x16-byte core matrices) wgmma tile: element (1,0) is 128 "
              "bytes from the start, expected 16");
  expect_fail(WG(.m = 32, .dl = "((32),(64)):((64@reg),(1@reg))"),
              TIRX_E_NO_RULE,
              "tirx_kernel_build: [g:1] no legal rule for gemm_async(arch=sm_90, "
              "roles=shared,shared->local, team=warpgroup): gemm_async.wgmma: M is 32: a "
              "warpgroup's wgmma covers slabs of 64 rows");
  /* Forcing a family that does not exist for the key. */
  expect_fail(WG(.family = "mma"), TIRX_E_NO_RULE,
              "tirx_kernel_build: [g:1] no rule for gemm_async(arch=sm_90, "
              "roles=shared,shared->local, team=warpgroup, family=mma)");
  /* At warp scope there is no gemm_async rule. */
  expect_fail(WG(.team = TIRX_TEAM_WARP, .threads = 32,
                 .dl = "((2,8,4),(8,4,2)):((2@reg,4@laneid,32@reg),(4@reg,1@laneid,1@reg))"),
              TIRX_E_NO_RULE,
              "tirx_kernel_build: [g:1] no rule for gemm_async(arch=sm_90, "
              "roles=shared,shared->local, team=warp)");
}

#define MMA_C16x16 "((2,8),(2,4,2)):((2@reg,4@laneid),(4@reg,1@laneid,1@reg))"
#define PAD_A "((16),(32)):((40@m),(1@m))"
#define PAD_B "((32),(16)):((1@m),(40@m))"

Test(prim_gemm, mma_is_the_default_of_gemm_and_scalar_its_fallback) {
  char err[4096];
  tirx_kernel *k = NULL;
  call_spec c = {.threads = 32, .team = TIRX_TEAM_WARP, .m = 16, .n = 16, .k = 32,
                 .dl = MMA_C16x16, .al = PAD_A, .bl = PAD_B, .at = TIRX_BF16, .bt = TIRX_BF16};
  cr_assert_eq(build_call(&c, &k, err, sizeof err), TIRX_OK, "%s", err);
  cr_assert_str_eq(tirx_kernel_dispatch_report(k),
                   "[g:1] gemm(arch=sm_90, roles=shared,shared->local, team=warp) -> gemm.mma "
                   "m=16,n=8,k=16\n");
  tirx_kernel_release(k);
  /* d dense: not C fragments, so FMA loops. */
  c.dl = "((16),(16)):((16@reg),(1@reg))";
  cr_assert_eq(build_call(&c, &k, err, sizeof err), TIRX_OK, "%s", err);
  cr_assert_str_eq(tirx_kernel_dispatch_report(k),
                   "[g:1] gemm(arch=sm_90, roles=shared,shared->local, team=warp) -> gemm.scalar "
                   "vec=1 (fallback)\n"
                   "  rejected gemm.mma: d block at (0,0) is not the m16n8 C fragment "
                   "(tirx_layout_mma_m16n8k16_c)\n");
  tirx_kernel_release(k);
}

/* ---- argument errors and regions with non-constant begins ---- */

static void expect_builder(tirx_builder *b, tirx_status st, const char *msg) {
  tirx_kernel *k = NULL;
  tirx_status got = tirx_builder_status(b) != TIRX_OK ? tirx_builder_status(b)
                                                       : tirx_kernel_build(b, &k);
  cr_assert_eq(got, st, "status %s, expected %s (%s)", tirx_status_name(got),
               tirx_status_name(st), tirx_builder_error(b));
  cr_assert_str_eq(tirx_builder_error(b), msg);
  tirx_kernel_release(k);
  tirx_builder_destroy(b);
}

/* A one-warpgroup builder with as (64, 128) and bs (128, 64) 128B-swizzled and d the
 * accumulator, inside a warpgroup team. */
static tirx_builder *wg_builder(tirx_tensor **as, tirx_tensor **bs, tirx_tensor **d) {
  tirx_builder *b = tirx_builder_create("g");
  tirx_arena *A = tirx_builder_arena(b);
  tirx_set_block(b, 128, 1, 1);
  *as = tirx_alloc_shared(b, "as", TIRX_BF16, TIRX_DIMS(64, 128),
                          tirx_layout_smem_tile(A, 64, 128, 2, 128));
  *bs = tirx_alloc_shared(b, "bs", TIRX_BF16, TIRX_DIMS(128, 64),
                          tirx_layout_permute(A, tirx_layout_smem_tile(A, 64, 128, 2, 128), 2,
                                              (int64_t[]){1, 0}));
  tirx_team_begin(b, TIRX_TEAM_WARPGROUP);
  *d = tirx_alloc_local(b, "d", TIRX_F32, TIRX_DIMS(64, 64), tirx_layout_wgmma_acc(A, 64, 64));
  return b;
}

Test(prim_gemm, argument_errors) {
  tirx_tensor *as, *bs, *d;
  tirx_builder *b = wg_builder(&as, &bs, &d);
  tirx_gemm(b, NULL, tirx_whole(b, as), tirx_whole(b, bs), NULL);
  expect_builder(b, TIRX_E_NULL_ARG, "tirx_gemm: d is NULL");

  b = wg_builder(&as, &bs, &d);
  tirx_gemm_async(b, tirx_whole(b, d), tirx_broadcast(b, tirx_int(b, 1)), tirx_whole(b, bs), NULL);
  expect_builder(b, TIRX_E_INVALID_ARG,
                 "tirx_gemm_async: a is a broadcast: gemm operands are regions of tensors");

  b = wg_builder(&as, &bs, &d);
  tirx_gemm_async(b, tirx_whole(b, d), tirx_whole(b, as), tirx_whole(b, bs),
                  &(tirx_gemm_config){.accumulate = tirx_int_typed(b, 1, TIRX_I32)});
  expect_builder(b, TIRX_E_TYPE,
                 "tirx_gemm_async: cfg->accumulate has dtype i32, expected bool");

  b = wg_builder(&as, &bs, &d);
  tirx_region_new(b, d, TIRX_EXPRS(tirx_warp_id(b), tirx_int(b, 0)), (int64_t[]){1, 64});
  expect_builder(b, TIRX_E_NOT_SUPPORTED,
                 "tirx_region_new: begins[0] is not a constant: regions of d need constant "
                 "begins");

  /* Shapes disagree: a is (64, 128), b (64, 64). */
  b = wg_builder(&as, &bs, &d);
  tirx_gemm_async(b, tirx_whole(b, d), tirx_whole(b, as),
                  tirx_region_new(b, bs, TIRX_EXPRS(tirx_int(b, 0), tirx_int(b, 0)),
                                  (int64_t[]){64, 64}),
                  NULL);
  tirx_team_end(b);
  expect_builder(b, TIRX_E_NO_RULE,
                 "tirx_kernel_build: [g:1] no legal rule for gemm_async(arch=sm_90, "
                 "roles=shared,shared->local, team=warpgroup): gemm_async.wgmma: shapes d "
                 "(64,64), a (64,128), b (64,64) are not (M,N), (M,K), (K,N)");
}

Test(prim_gemm, non_constant_begins_of_shared_regions) {
  /* A begin the builder knows is a multiple of 8 rows: whole 1024-byte atoms. */
  tirx_tensor *as, *bs, *d;
  tirx_builder *b = wg_builder(&as, &bs, &d);
  tirx_expr *s = tirx_var(b, "s", TIRX_I32, NULL);
  tirx_region *k0 = tirx_region_new(b, bs, TIRX_EXPRS(tirx_int(b, 0), tirx_int(b, 0)),
                                    (int64_t[]){64, 64});
  tirx_gemm_async(b, tirx_whole(b, d),
                  tirx_region_new(b, as, TIRX_EXPRS(tirx_mul(b, s, tirx_int(b, 8)), tirx_int(b, 0)),
                                  (int64_t[]){64, 64}),
                  k0, NULL);
  tirx_team_end(b);
  tirx_kernel *k = NULL;
  cr_assert_eq(tirx_kernel_build(b, &k), TIRX_OK, "%s", tirx_builder_error(b));
  assert_has(tirx_kernel_source(k), "tirx_smem_addr(&as[tirx_swizzle((s * 8) * 64");
  tirx_kernel_release(k);
  tirx_builder_destroy(b);

  /* Any row: 128-byte moves of a 128B-swizzled tile change its swizzle phase. */
  b = wg_builder(&as, &bs, &d);
  s = tirx_var(b, "s", TIRX_I32, NULL);
  k0 = tirx_region_new(b, bs, TIRX_EXPRS(tirx_int(b, 0), tirx_int(b, 0)), (int64_t[]){64, 64});
  tirx_gemm_async(b, tirx_whole(b, d),
                  tirx_region_new(b, as, TIRX_EXPRS(s, tirx_int(b, 0)), (int64_t[]){64, 64}), k0,
                  NULL);
  tirx_team_end(b);
  expect_builder(b, TIRX_E_NOT_SUPPORTED,
                 "tirx_kernel_build: [g:1] gemm_async: operand 1: a non-constant begin moves "
                 "the start of swizzled as by multiples of 128 bytes: it must move by multiples "
                 "of 1024 (the swizzle atom); write the begin as a multiple (i * 8, ...)");

  /* K of as is two iters (two swizzle column blocks): no single stride for the begin. */
  b = wg_builder(&as, &bs, &d);
  s = tirx_var(b, "s", TIRX_I32, NULL);
  k0 = tirx_region_new(b, bs, TIRX_EXPRS(tirx_int(b, 0), tirx_int(b, 0)), (int64_t[]){64, 64});
  tirx_gemm_async(b, tirx_whole(b, d),
                  tirx_region_new(b, as, TIRX_EXPRS(tirx_int(b, 0), tirx_mul(b, s, tirx_int(b, 64))),
                                  (int64_t[]){64, 64}),
                  k0, NULL);
  tirx_team_end(b);
  expect_builder(b, TIRX_E_NOT_SUPPORTED,
                 "tirx_kernel_build: [g:1] gemm_async: operand 1: begin of dim 1 is not a "
                 "constant and the layout of as splits that dim into 2 iters: a non-constant "
                 "begin needs one iter");
}

/* copy.stmatrix at warpgroup scope takes tiles of one-warp fragments only. */
Test(prim_gemm, warpgroup_stmatrix_reasons) {
  tirx_builder *b = tirx_builder_create("g");
  tirx_arena *A = tirx_builder_arena(b);
  tirx_set_block(b, 128, 1, 1);
  tirx_tensor *cs = tirx_alloc_shared(b, "cs", TIRX_BF16, TIRX_DIMS(64, 64),
                                      tirx_layout_smem_tile(A, 64, 64, 2, 128));
  tirx_team_begin(b, TIRX_TEAM_WARPGROUP);
  tirx_tensor *ok = tirx_alloc_local(b, "ok", TIRX_BF16, TIRX_DIMS(64, 64),
                                     tirx_layout_wgmma_acc(A, 64, 64));
  tirx_tensor *rows = tirx_alloc_local(b, "rows", TIRX_BF16, TIRX_DIMS(64, 64),
                                       tirx_layout_warpgroup_rows(A, 64, 64));
  tirx_copy(b, tirx_whole(b, cs), tirx_whole(b, ok), NULL);
  tirx_copy(b, tirx_whole(b, cs), tirx_whole(b, rows), NULL);
  tirx_team_end(b);
  tirx_kernel *k = NULL;
  cr_assert_eq(tirx_kernel_build(b, &k), TIRX_OK, "%s", tirx_builder_error(b));
  tirx_builder_destroy(b);
  const char *rep = tirx_kernel_dispatch_report(k);
  assert_has(rep, "[g:1] copy(arch=sm_90, roles=local->shared, team=warpgroup) -> "
                  "copy.stmatrix num=4\n");
  assert_has(rep, "[g:2] copy(arch=sm_90, roles=local->shared, team=warpgroup) -> copy.vec");
  assert_has(rep, "  rejected copy.stmatrix: src is not a warpgroup stmatrix tile: a block is not "
                  "an ldmatrix fragment of one warp: lane l of the warp must hold row l/4, "
                  "columns 2*(l%4)+{0,1}\n");
  tirx_kernel_release(k);
}
