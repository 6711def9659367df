/*
 * The RS form of gemm_async.wgmma (families/gemm_wgmma.c: gemm_async.wgmma_rs; its lowering;
 * the prelude's tirx_wgmma_rs_* helpers): A in registers as wgmma A fragments
 * (tirx_layout_wgmma_a), B from shared memory. Dispatch choices, forced configs and the
 * reasons given for A tiles that are not fragments; copy.ldmatrix at warpgroup scope filling
 * the fragments; the generated code (register fences around the wgmma.fence); the sm_90a PTX
 * (the register A operand list; no local memory, and under ptxas -v no spills); an
 * accumulator cast to 16 bits used as A (FlashAttention-3's O += P V); the TMA-fed GEMM of
 * tests/gpu/test_mma.c, RS and SS, compiled by NVRTC.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../../helpers.h"
#include "mma_tiles.h"

static void assert_has(const char *text, const char *want) {
  cr_assert_not_null(strstr(text, want), "no '%s' in:\n%s", want, text);
}

static tirx_runtime *compile_only_runtime(void) {
  tirx_runtime *rt = NULL;
  tirx_runtime_options o = {.compile_only = true};
  cr_assert_eq(tirx_runtime_create(&o, &rt), TIRX_OK, "%s", tirx_last_error());
  return rt;
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

/* ---- dispatch: one gemm_async call with a in registers ---- */

/*
 * One gemm_async call of a warpgroup: d (M,N) the accumulator, a (M,K) local of layout al (NULL:
 * tirx_layout_wgmma_a) and dtype at, b (K,N) shared of layout bl (NULL: K-major, swizzled
 * as widely as K allows) and dtype bt; a_shared/b_local move an operand to the other storage;
 * family and shape as the config's.
 */
typedef struct rs_spec {
  int64_t m, n, k;
  const char *al, *bl;
  tirx_dtype at, bt;
  bool a_shared, b_local;
  tirx_team team;
  int threads;
  const char *family;
  int64_t shape[3];
} rs_spec;

#pragma GCC diagnostic ignored "-Woverride-init"
#define RS(...)                                                                                    \
  ((rs_spec){.m = 64, .n = 64, .k = 32, .at = TIRX_BF16, .bt = TIRX_BF16,                        \
             .team = TIRX_TEAM_WARPGROUP, .threads = 128, __VA_ARGS__})

static tirx_status build_rs(const rs_spec *c, tirx_kernel **out, char *err, size_t cap) {
  tirx_builder *b = tirx_builder_create("g");
  tirx_arena *A = tirx_builder_arena(b);
  tirx_set_block(b, c->threads, 1, 1);
  int sw = c->k % 64 == 0 ? 128 : c->k % 32 == 0 ? 64 : 32; /* the widest that K fills */
  const tirx_layout *bt = tirx_layout_smem_tile(A, c->n, c->k, 2, sw); /* (N, K) */
  const tirx_layout *bl = c->bl ? tirx_layout_parse(A, c->bl)
                                : tirx_layout_permute(A, bt, 2, (int64_t[]){1, 0});
  const tirx_layout *al = c->al ? tirx_layout_parse(A, c->al)
                                : c->a_shared ? tirx_layout_smem_tile(A, c->m, c->k, 2, sw)
                                              : tirx_layout_wgmma_a(A, (int)c->m, (int)c->k);
  cr_assert(al && bl, "%s", tirx_last_error());
  tirx_tensor *as = c->a_shared ? tirx_alloc_shared(b, "as", c->at, TIRX_DIMS(c->m, c->k), al)
                                : NULL;
  tirx_tensor *bs =
      c->b_local ? NULL : tirx_alloc_shared(b, "bs", c->bt, TIRX_DIMS(c->k, c->n), bl);
  tirx_team_begin(b, c->team);
  tirx_tensor *d = tirx_alloc_local(b, "d", TIRX_F32, TIRX_DIMS(c->m, c->n),
                                    tirx_layout_wgmma_acc(A, (int)c->m, (int)c->n));
  if (!as) as = tirx_alloc_local(b, "a", c->at, TIRX_DIMS(c->m, c->k), al);
  if (!bs) bs = tirx_alloc_local(b, "bl", c->bt, TIRX_DIMS(c->k, c->n), bl);
  tirx_gemm_config g = {.family = c->family};
  memcpy(g.shape, c->shape, sizeof g.shape);
  tirx_gemm_async(b, tirx_whole(b, d), tirx_whole(b, as), tirx_whole(b, bs), &g);
  tirx_team_end(b);
  tirx_status st = tirx_kernel_build(b, out);
  snprintf(err, cap, "%s", tirx_builder_error(b));
  tirx_builder_destroy(b);
  return st;
}

static void expect_report(rs_spec c, const char *want) {
  char err[4096];
  tirx_kernel *k = NULL;
  cr_assert_eq(build_rs(&c, &k, err, sizeof err), TIRX_OK, "%s", err);
  cr_assert_str_eq(tirx_kernel_dispatch_report(k), want);
  tirx_kernel_release(k);
}

static void expect_fail(rs_spec c, tirx_status st, const char *want) {
  char err[4096];
  tirx_kernel *k = NULL;
  tirx_status got = build_rs(&c, &k, err, sizeof err);
  cr_assert_eq(got, st, "status %s, expected %s: %s", tirx_status_name(got), tirx_status_name(st),
               err);
  cr_assert_null(k);
  cr_assert_str_eq(err, want);
  cr_assert_str_eq(tirx_last_error(), want);
}

#define KEY "gemm_async(arch=sm_90, roles=local,shared->local, team=warpgroup"

Test(gemm_rs, register_a_chooses_the_rs_rule) {
  expect_report(RS(), "[g:1] " KEY ") -> gemm_async.wgmma_rs m=64,n=64,k=16\n");
  expect_report(RS(.n = 256, .k = 64),
                "[g:1] " KEY ") -> gemm_async.wgmma_rs m=64,n=256,k=16\n");
  expect_report(RS(.m = 128, .n = 8, .k = 16, .at = TIRX_F16, .bt = TIRX_F16,
                   .bl = "((16),(8)):((1@m),(16@m))^sw(32,2)"),
                "[g:1] " KEY ") -> gemm_async.wgmma_rs m=64,n=8,k=16\n");
  /* With a in shared memory the SS rule stays the choice. */
  expect_report(RS(.a_shared = true),
                "[g:1] gemm_async(arch=sm_90, roles=shared,shared->local, team=warpgroup) -> "
                "gemm_async.wgmma m=64,n=64,k=16\n");
}

Test(gemm_rs, forced_family_and_shape) {
  expect_report(RS(.family = "wgmma"),
                "[g:1] " KEY ", family=wgmma) -> gemm_async.wgmma_rs m=64,n=64,k=16 (forced)\n");
  expect_report(RS(.n = 128, .shape = {64, 32, 16}),
                "[g:1] " KEY ") -> gemm_async.wgmma_rs m=64,n=32,k=16\n");
  expect_report(RS(.n = 128, .family = "wgmma", .shape = {0, 64, 0}),
                "[g:1] " KEY ", family=wgmma) -> gemm_async.wgmma_rs m=64,n=64,k=16 (forced)\n");
  expect_fail(RS(.n = 128, .shape = {64, 48, 16}), TIRX_E_INVALID_ARG,
              "tirx_kernel_build: [g:1] shape m=64,n=48,k=16 is not legal for "
              "gemm_async.wgmma_rs: legal shapes are m=64,n=128,k=16, m=64,n=64,k=16, "
              "m=64,n=32,k=16, m=64,n=16,k=16, m=64,n=8,k=16");
  /* No other family serves the key. */
  expect_fail(RS(.family = "mma"), TIRX_E_NO_RULE,
              "tirx_kernel_build: [g:1] no rule for " KEY ", family=mma)");
}

/* A (64,32) register tile whose two K halves (16 columns each) trade places: every 8x8 block
 * is still an ldmatrix fragment, but the k16 step 0 is not in 8 consecutive registers. */
#define A_K_SWAPPED                                                                                \
  "((4,2,8),(2,2,4,2)):((32@tid_in_wg,2@reg,4@tid_in_wg),(4@reg,8@reg,1@tid_in_wg,1@reg))"

Test(gemm_rs, reasons_for_a_tiles_that_are_not_fragments) {
  /* One row per thread. */
  expect_fail(RS(.al = "((64),(32)):((1@tid_in_wg),(1@reg))"), TIRX_E_NO_RULE,
              "tirx_kernel_build: [g:1] no legal rule for " KEY "): gemm_async.wgmma_rs: a rows "
              "0..63, K 0..15 are not the wgmma A fragment (tirx_layout_wgmma_a) of a "
              "warpgroup: thread 32w+l must hold rows 16w+l/4 and +8, K 2*(l%4)+{0,1} and +8 "
              "of the k16 step in 8 consecutive registers");
  expect_fail(RS(.al = A_K_SWAPPED), TIRX_E_NO_RULE,
              "tirx_kernel_build: [g:1] no legal rule for " KEY "): gemm_async.wgmma_rs: a rows "
              "0..63, K 0..15 are not the wgmma A fragment (tirx_layout_wgmma_a) of a "
              "warpgroup: thread 32w+l must hold rows 16w+l/4 and +8, K 2*(l%4)+{0,1} and +8 "
              "of the k16 step in 8 consecutive registers");
  /* A thread-private array on m: every thread would hold the whole tile. */
  expect_fail(RS(.al = "((64),(32)):((32@m),(1@m))"), TIRX_E_NO_RULE,
              "tirx_kernel_build: [g:1] no legal rule for " KEY "): gemm_async.wgmma_rs: a uses "
              "m: the RS form takes a warpgroup's register tile on tid_in_wg and reg "
              "(tirx_layout_wgmma_a)");
  /* Copies of the tile in two warpgroups' registers. */
  expect_fail(RS(.threads = 256,
                 .al = "((4,2,8),(4,4,2)):((32@tid_in_wg,2@reg,4@tid_in_wg),"
                       "(4@reg,1@tid_in_wg,1@reg))+[2:1@wgid]"),
              TIRX_E_NO_RULE,
              "tirx_kernel_build: [g:1] no legal rule for " KEY "): gemm_async.wgmma_rs: a is "
              "replicated: the RS form takes one warpgroup's register tile (tirx_layout_wgmma_a)");
  /* A per-warp fragment on laneid (mma.sync's A, four row blocks in registers). */
  expect_fail(RS(.al = "((4,2,8),(4,4,2)):((8@reg,2@reg,4@laneid),(32@reg,1@laneid,1@reg))"),
              TIRX_E_NO_RULE,
              "tirx_kernel_build: [g:1] no legal rule for " KEY "): gemm_async.wgmma_rs: a uses "
              "laneid: the RS form takes a warpgroup's register tile on tid_in_wg and reg "
              "(tirx_layout_wgmma_a)");
  /* Forced, the same reasons, as an invalid argument. */
  expect_fail(RS(.al = A_K_SWAPPED, .family = "wgmma"), TIRX_E_INVALID_ARG,
              "tirx_kernel_build: [g:1] family 'wgmma' is not legal for " KEY
              ", family=wgmma): a rows 0..63, K 0..15 are not the wgmma A "
              "fragment (tirx_layout_wgmma_a) of a warpgroup: thread 32w+l must hold rows "
              "16w+l/4 and +8, K 2*(l%4)+{0,1} and +8 of the k16 step in 8 consecutive "
              "registers");
}

Test(gemm_rs, reasons_shared_with_the_ss_form) {
  expect_fail(RS(.at = TIRX_F16), TIRX_E_NO_RULE,
              "tirx_kernel_build: [g:1] no legal rule for " KEY "): gemm_async.wgmma_rs: a and b "
              "have dtypes f16 and bf16: the instruction needs both f16 or both bf16");
  expect_fail(RS(.k = 24, .al = "((64),(24)):((24@reg),(1@reg))",
                 .bl = "((24),(64)):((1@m),(24@m))"),
              TIRX_E_NO_RULE,
              "tirx_kernel_build: [g:1] no legal rule for " KEY "): gemm_async.wgmma_rs: K is 24: "
              "not a multiple of 16 (k16 steps)");
  /* b stored N-major (row-major (K, N)): not K-major. */
  expect_fail(RS(.k = 16, .bl = "((16),(64)):((64@m),(1@m))"), TIRX_E_NO_RULE,
              "tirx_kernel_build: [g:1] no legal rule for " KEY "): gemm_async.wgmma_rs: b: it "
              "is not a K-major interleaved (8x16-byte core matrices) wgmma tile: element (1,0) "
              "is 128 bytes from the start, expected 2");
}

Test(gemm_rs, keys_without_a_rule) {
  /* b in registers: wgmma reads B from shared memory only. */
  expect_fail(RS(.b_local = true, .bl = "((32),(64)):((64@reg),(1@reg))"), TIRX_E_NO_RULE,
              "tirx_kernel_build: [g:1] no rule for gemm_async(arch=sm_90, "
              "roles=local,local->local, team=warpgroup)");
  expect_fail(RS(.a_shared = true, .b_local = true, .bl = "((32),(64)):((64@reg),(1@reg))"),
              TIRX_E_NO_RULE,
              "tirx_kernel_build: [g:1] no rule for gemm_async(arch=sm_90, "
              "roles=shared,local->local, team=warpgroup)");
  /* A warp is not a warpgroup. */
  expect_fail(RS(.team = TIRX_TEAM_WARP, .threads = 32), TIRX_E_NO_RULE,
              "tirx_kernel_build: [g:1] no rule for gemm_async(arch=sm_90, "
              "roles=local,shared->local, team=warp)");
}

/* The kernels of mma::warpgroup_ldmatrix_fills_wgmma_a_fragments (tests/gpu/test_mma.c) build,
 * take copy.ldmatrix and compile for sm_90a. */
Test(gemm_rs, wgmma_a_load_kernels_compile, .timeout = 300) {
  static const int cases[][3] = {{64, 16, 32}, {64, 64, 128}, {128, 32, 64},
                                 {64, 48, 32}, {192, 16, 0},  {256, 64, 128}};
  tirx_runtime *rt = compile_only_runtime();
  for (int d = 0; d < 2; d++)
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
      char err[2048] = "";
      tirx_kernel *k = example_wgmma_a_load(d ? TIRX_F16 : TIRX_BF16, cases[c][0], cases[c][1],
                                            cases[c][2], err, sizeof err);
      cr_assert_not_null(k, "%s", err);
      assert_has(tirx_kernel_dispatch_report(k),
                 "[wgmma_a_load:2] copy(arch=sm_90, roles=shared->local, team=warpgroup) -> "
                 "copy.ldmatrix num=");
      tirx_compiled *cc = NULL;
      cr_assert_eq(tirx_compile(rt, k, "sm_90a", &cc), TIRX_OK, "%s", tirx_last_error());
      assert_has(tirx_compiled_ptx(cc), "ldmatrix.sync.aligned.m8n8.x");
      tirx_compiled_destroy(cc);
      tirx_kernel_release(k);
    }
  char err[256] = "";
  cr_assert_null(example_wgmma_a_load(TIRX_BF16, 64, 24, 0, err, sizeof err));
  cr_assert_str_eq(err, "layout: tirx_layout_wgmma_a: k is 24, expected a multiple of 16 in "
                        "[16, 256]");
  tirx_runtime_destroy(rt);
}

/* ---- generated code and PTX ---- */

/* The first line of ptx holding want (malloc'ed), or a failed assertion. */
static char *line_of(const char *ptx, const char *want) {
  const char *at = strstr(ptx, want);
  cr_assert_not_null(at, "no '%s' in the PTX", want);
  const char *end = strchr(at, '\n');
  size_t len = end ? (size_t)(end - at) : strlen(at);
  char *s = malloc(len + 1);
  memcpy(s, at, len);
  s[len] = '\0';
  return s;
}

/* The RS instruction's operands: {d...}, {4 32-bit registers}, the B descriptor, p, 1, 1, 0. */
static void assert_register_a_operand(const char *ptx, const char *instr, int n) {
  char *line = line_of(ptx, instr);
  const char *d = strchr(line, '{'), *a = d ? strstr(d, "}, {") : NULL;
  cr_assert_not_null(a, "%s", line);
  int dregs = 1;
  for (const char *p = d; p < a; p++) dregs += *p == ',';
  cr_assert_eq(dregs, n / 2, "%s", line);
  a += 4;
  const char *close = strchr(a, '}');
  cr_assert_not_null(close, "%s", line);
  int aregs = 0;
  for (const char *p = a; p < close; p++)
    if (p[0] == '%') {
      aregs++;
      cr_assert(p[1] == 'r' && p[2] != 'd', "A operand %.8s is not a 32-bit register: %s", p,
                line);
    }
  cr_assert_eq(aregs, 4, "%s", line);
  assert_has(close, "}, %rd");
  assert_has(close, ", p, 1, 1, 0;");
  free(line);
}

static void assert_before(const char *text, const char *first, const char *second) {
  const char *a = strstr(text, first), *b = strstr(text, second);
  cr_assert(a && b && a < b, "'%s' is not before '%s'", first, second);
}

/* A 64xNx16 tile: A ldmatrix'd into registers, one RS wgmma; in the PTX the instruction's A is
 * four 32-bit registers, nothing lives in local memory, and ptxas spills nothing. */
Test(gemm_rs, tile_64xNx16_ptx_and_no_spills, .timeout = 300) {
  static const struct {
    tirx_dtype dt;
    int n;
  } cases[] = {{TIRX_BF16, 64}, {TIRX_BF16, 128}, {TIRX_F16, 64}, {TIRX_F16, 128}};
  tirx_runtime *rt = compile_only_runtime();
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    int n = cases[i].n;
    const char *ty = cases[i].dt == TIRX_F16 ? "f16" : "bf16";
    char err[2048] = "", want[640];
    mma_tile t = {"wgmma", cases[i].dt, 64, n, 16, 1, 32, false, true};
    tirx_kernel *k = example_mma_tile(&t, err, sizeof err);
    cr_assert_not_null(k, "%s", err);
    const char *rep = tirx_kernel_dispatch_report(k);
    assert_has(rep, "copy(arch=sm_90, roles=shared->local, team=warpgroup) -> copy.ldmatrix num=4");
    snprintf(want, sizeof want,
             KEY ", family=wgmma) -> gemm_async.wgmma_rs m=64,n=%d,k=16 (forced)", n);
    assert_has(rep, want);
    /* The A tile and the accumulator are fenced, then wgmma.fence, then the instruction. */
    const char *src = tirx_kernel_source(k);
    snprintf(want, sizeof want,
             "    tirx_fence_regs<%d>(acc);\n"
             "    tirx_fence_regs16<8>(afrag);\n"
             "    tirx_wgmma_fence();\n"
             "    tirx_wgmma_rs_m64n%dk16_%s<0>(&acc[0],\n"
             "        &afrag[0],\n"
             "        tirx_wgmma_desc(tirx_smem_addr(&bs[tirx_swizzle(0, 1, 2)]), 16, 256, 3), "
             "false);\n"
             "    tirx_fence_regs<%d>(acc);\n"
             "    tirx_fence_regs16<8>(afrag);\n",
             n / 2, n, ty, n / 2);
    assert_has(src, want);
    snprintf(want, sizeof want,
             "  tirx_wgmma_wait<0>();\n"
             "  tirx_fence_regs<%d>(acc);\n"
             "  tirx_fence_regs16<8>(afrag);\n",
             n / 2);
    assert_has(src, want);
    snprintf(want, sizeof want, "void tirx_wgmma_rs_m64n%dk16_%s(float *d, const tirx_%s *a, "
             "unsigned long long db, bool acc)", n, ty, ty);
    assert_has(src, want);
    cr_assert_null(strstr(src, "void tirx_wgmma_m64n"), "an SS helper that nothing uses");
    snprintf(want, sizeof want,
             "    fence_regs(afrag[0..8))\n    wgmma_fence()\n"
             "    wgmma_rs.m64n%dk16.%s(acc[0, 0], afrag[0, 0], bs[0, 0] sw32 lbo=16 sbo=256, "
             "accumulate false)\n",
             n, ty);
    assert_has(tirx_kernel_ir_str(k), want);
    char *ptx = ptx_of(rt, k);
    snprintf(want, sizeof want, "wgmma.mma_async.sync.aligned.m64n%dk16.f32.%s.%s {", n, ty, ty);
    assert_register_a_operand(ptx, want, n);
    assert_before(ptx, "ldmatrix.sync.aligned.m8n8.x4.shared.b16", "wgmma.fence.sync.aligned");
    assert_before(ptx, "wgmma.fence.sync.aligned", want);
    assert_before(ptx, want, "wgmma.commit_group.sync.aligned");
    cr_assert_null(strstr(ptx, ".local"), "local memory in the PTX:\n%s", ptx);
    char *rep_ptxas = test_ptxas_report(ptx);
    if (rep_ptxas) {
      assert_has(rep_ptxas, "0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads");
      free(rep_ptxas);
    } else {
      cr_log_warn("ptxas not found: the spill check is skipped");
    }
    free(ptx);
    tirx_kernel_release(k);
  }
  tirx_runtime_destroy(rt);
}

/*
 * FlashAttention-3's second GEMM: S = Q K^T (SS), the accumulator cast to bf16 in registers
 * (a pointwise result), O = P V with P as the RS form's A, no shared-memory round trip: P's
 * layout is the accumulator's, which is tirx_layout_wgmma_a's. V is stored K-major (V^T
 * row-major: wgmma reads MN-major B only through its transpose bit, which no rule sets yet).
 */
Test(gemm_rs, an_accumulator_cast_to_bf16_is_an_a_operand, .timeout = 120) {
  tirx_builder *b = tirx_builder_create("attn");
  tirx_arena *A = tirx_builder_arena(b);
  tirx_tensor *out = tirx_param_tensor(b, "o", TIRX_F32,
                                       TIRX_EXPRS(tirx_int(b, 64), tirx_int(b, 64)), NULL);
  tirx_set_block(b, 128, 1, 1);
  const tirx_layout *kmaj = tirx_layout_smem_tile(A, 64, 64, 2, 128);
  tirx_tensor *q = tirx_alloc_shared(b, "q", TIRX_BF16, TIRX_DIMS(64, 64), kmaj);
  tirx_tensor *kt = tirx_alloc_shared(b, "kt", TIRX_BF16, TIRX_DIMS(64, 64),
                                      tirx_layout_permute(A, kmaj, 2, (int64_t[]){1, 0}));
  tirx_tensor *v = tirx_alloc_shared(b, "v", TIRX_BF16, TIRX_DIMS(64, 64),
                                     tirx_layout_permute(A, kmaj, 2, (int64_t[]){1, 0}));
  tirx_team_begin(b, TIRX_TEAM_WARPGROUP);
  tirx_tensor *s = tirx_alloc_local(b, "s", TIRX_F32, TIRX_DIMS(64, 64),
                                    tirx_layout_wgmma_acc(A, 64, 64));
  tirx_tensor *p = tirx_alloc_local(b, "p", TIRX_BF16, TIRX_DIMS(64, 64),
                                    tirx_layout_wgmma_acc(A, 64, 64));
  tirx_tensor *o = tirx_alloc_local(b, "acc_o", TIRX_F32, TIRX_DIMS(64, 64),
                                    tirx_layout_wgmma_acc(A, 64, 64));
  tirx_gemm_async(b, tirx_whole(b, s), tirx_whole(b, q), tirx_whole(b, kt),
                  &(tirx_gemm_config){.accumulate = tirx_bool(b, false)});
  tirx_wgmma_commit(b);
  tirx_wgmma_wait(b, 0);
  tirx_cast_region(b, tirx_whole(b, p), tirx_whole(b, s), NULL);
  tirx_gemm_async(b, tirx_whole(b, o), tirx_whole(b, p), tirx_whole(b, v),
                  &(tirx_gemm_config){.accumulate = tirx_bool(b, false)});
  tirx_wgmma_commit(b);
  tirx_wgmma_wait(b, 0);
  tirx_copy(b, tirx_whole(b, out), tirx_whole(b, o), NULL);
  tirx_team_end(b);
  tirx_kernel *k = NULL;
  cr_assert_eq(tirx_kernel_build(b, &k), TIRX_OK, "%s", tirx_builder_error(b));
  tirx_builder_destroy(b);
  const char *rep = tirx_kernel_dispatch_report(k);
  assert_has(rep, "[attn:1] gemm_async(arch=sm_90, roles=shared,shared->local, team=warpgroup) -> "
                  "gemm_async.wgmma m=64,n=64,k=16\n");
  assert_has(rep, "[attn:2] cast(arch=sm_90, roles=local->local, team=warpgroup) -> pointwise.vec");
  assert_has(rep, "[attn:3] " KEY ") -> gemm_async.wgmma_rs m=64,n=64,k=16\n");
  const char *src = tirx_kernel_source(k);
  /* The cast's registers are fenced before the wgmma.fence of the RS call. */
  assert_has(src, "    tirx_fence_regs<32>(acc_o);\n    tirx_fence_regs16<32>(p);\n"
                  "    tirx_wgmma_fence();\n    tirx_wgmma_rs_m64n64k16_bf16<0>(&acc_o[0],\n"
                  "        &p[0],\n");
  assert_has(src, "        &p[24],\n");
  tirx_runtime *rt = compile_only_runtime();
  char *ptx = ptx_of(rt, k);
  /* Four SS instructions (descriptors for A and B), then four RS ones (A in registers). */
  const char *instr = "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {";
  const char *at = ptx;
  for (int i = 0; i < 8; i++) {
    at = strstr(at, instr);
    cr_assert_not_null(at, "instruction %d missing", i);
    if (i < 4) {
      const char *end = strchr(at, '\n'), *descs = strstr(at, "}, %rd");
      cr_assert(end && descs && descs < end, "%.500s", at);
    } else {
      assert_register_a_operand(at, instr, 64);
    }
    at++;
  }
  free(ptx);
  tirx_runtime_destroy(rt);
  tirx_kernel_release(k);
}

/* ---- the TMA-fed GEMM of tests/gpu/test_mma.c ---- */

/* RS and SS, both dtypes, several N: the same tiles and loads, the A operand read from
 * registers (ldmatrix'd) or from shared memory; the sm_90a PTX of each, no spills. */
Test(gemm_rs, tma_gemm_rs_and_ss_compile, .timeout = 600) {
  static const int ns[] = {16, 48, 64, 80, 112, 128, 256}; /* mma::wgmma_rs_tma_gemm's */
  tirx_runtime *rt = compile_only_runtime();
  for (int d = 0; d < 2; d++)
    for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++)
      for (int rs = 1; rs >= 0; rs--) {
        tirx_dtype dt = d ? TIRX_F16 : TIRX_BF16;
        const char *ty = d ? "f16" : "bf16";
        wgmma_gemm g = {dt, ns[i], rs, false};
        char err[2048] = "", want[256];
        tirx_kernel *k = example_wgmma_gemm(&g, err, sizeof err);
        cr_assert_not_null(k, "%s", err);
        const char *rep = tirx_kernel_dispatch_report(k);
        cr_assert_null(strstr(rep, "fallback"), "%s", rep);
        if (rs) {
          assert_has(rep, "copy(arch=sm_90, roles=shared->local, team=warpgroup) -> "
                          "copy.ldmatrix num=4\n");
          snprintf(want, sizeof want, KEY ") -> gemm_async.wgmma_rs m=64,n=%d,k=16\n", ns[i]);
        } else {
          snprintf(want, sizeof want,
                   "gemm_async(arch=sm_90, roles=shared,shared->local, team=warpgroup) -> "
                   "gemm_async.wgmma m=64,n=%d,k=16\n",
                   ns[i]);
        }
        assert_has(rep, want);
        char *ptx = ptx_of(rt, k);
        snprintf(want, sizeof want, "wgmma.mma_async.sync.aligned.m64n%dk16.f32.%s.%s {", ns[i],
                 ty, ty);
        if (rs) assert_register_a_operand(ptx, want, ns[i]);
        else assert_has(ptx, want);
        assert_has(ptx, "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::"
                        "complete_tx::bytes");
        assert_has(ptx, "cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group");
        cr_assert_null(strstr(ptx, ".local"), "local memory in the PTX of %s", want);
        char *rp = test_ptxas_report(ptx);
        if (rp) assert_has(rp, "0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads");
        free(rp);
        free(ptx);
        tirx_kernel_release(k);
      }
  tirx_runtime_destroy(rt);
}

/* The element-by-element C store (for an N that is not a multiple of 8): no TMA store. */
Test(gemm_rs, tma_gemm_plain_store_compiles, .timeout = 300) {
  tirx_runtime *rt = compile_only_runtime();
  for (int rs = 0; rs < 2; rs++) {
    wgmma_gemm g = {TIRX_BF16, 80, rs, true};
    char err[2048] = "";
    tirx_kernel *k = example_wgmma_gemm(&g, err, sizeof err);
    cr_assert_not_null(k, "%s", err);
    cr_assert_null(strstr(tirx_kernel_dispatch_report(k), "roles=shared->global"));
    char *ptx = ptx_of(rt, k);
    cr_assert_null(strstr(ptx, "cp.async.bulk.tensor.2d.global.shared"), "a TMA store");
    assert_has(ptx, "st.global.u16");
    free(ptx);
    tirx_kernel_release(k);
  }
  tirx_runtime_destroy(rt);
}

Test(gemm_rs, tma_gemm_argument_errors) {
  char err[256] = "";
  static const char want[] = "example_wgmma_gemm: g must have dtype f16 or bf16 and block_n a "
                             "multiple of 16 in [16, 256]";
  cr_assert_null(example_wgmma_gemm(NULL, err, sizeof err));
  cr_assert_str_eq(err, want);
  cr_assert_null(example_wgmma_gemm(&(wgmma_gemm){TIRX_F32, 64, true, false}, err, sizeof err));
  cr_assert_str_eq(err, want);
  cr_assert_null(example_wgmma_gemm(&(wgmma_gemm){TIRX_BF16, 24, true, false}, err, sizeof err));
  cr_assert_str_eq(err, want);
  cr_assert_null(example_wgmma_gemm(&(wgmma_gemm){TIRX_BF16, 272, false, false}, err, sizeof err));
  cr_assert_str_eq(err, want);
}
