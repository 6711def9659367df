/* Tile primitives (src/builder/prim.c, src/dispatch/): the scope rules of paper 4.1 with
 * their exact messages, dispatch and lowering of copy, pointwise and reduce (rule comments in
 * the generated code, NVRTC for sm_90a), forced fallbacks, and dispatch report goldens. */
#include <stdio.h>
#include <string.h>

#include "../helpers.h"
#include "ir/kernel_abi.h"
#include "rows_ref.h"

/* The row kernels' options of the current test (each test runs in its own process). */
static tirx_row_options ro;

static void assert_error(tirx_builder *b, tirx_status st, const char *msg) {
  cr_assert_eq(tirx_builder_status(b), st, "status %s, message '%s'",
               tirx_status_name(tirx_builder_status(b)), tirx_builder_error(b));
  cr_assert_str_eq(tirx_builder_error(b), msg);
}

Test(prim_scope, warpgroup_over_warps_3_to_7_is_rejected) {
  tirx_builder *b = tirx_builder_create("k");
  tirx_set_block(b, 512, 1, 1);
  tirx_filter_begin(b, TIRX_AXIS_WARPID, 3, 7);
  cr_assert_eq(tirx_builder_status(b), TIRX_OK, "%s", tirx_builder_error(b));
  tirx_team_begin(b, TIRX_TEAM_WARPGROUP);
  assert_error(b, TIRX_E_SCOPE,
               "tirx_team_begin: active warps [3, 7) split warpgroups unevenly: teams would not "
               "be uniform");
  tirx_builder_destroy(b);
}

Test(prim_scope, warpgroups_over_warps_4_to_12_are_uniform) {
  tirx_builder *b = tirx_builder_create("k");
  tirx_set_block(b, 512, 1, 1);
  tirx_filter_begin(b, TIRX_AXIS_WARPID, 4, 12);
  tirx_team_begin(b, TIRX_TEAM_WARPGROUP);
  tirx_team_end(b);
  tirx_filter_end(b);
  tirx_kernel *k = NULL;
  cr_assert_eq(tirx_kernel_build(b, &k), TIRX_OK, "%s", tirx_builder_error(b));
  /* The filter guards its code at run time. */
  cr_assert_not_null(strstr(tirx_kernel_source(k), "if (((((int)threadIdx.x >> 5) >= 4) && "),
                     "%s", tirx_kernel_source(k));
  tirx_kernel_release(k);
  tirx_builder_destroy(b);
}

Test(prim_scope, a_filter_that_empties_the_set_is_rejected) {
  tirx_builder *b = tirx_builder_create("k");
  tirx_set_block(b, 128, 1, 1);
  tirx_filter_begin(b, TIRX_AXIS_LANEID, 0, 16);
  tirx_filter_begin(b, TIRX_AXIS_LANEID, 16, 32);
  cr_assert_eq(tirx_builder_status(b), TIRX_E_SCOPE, "%s", tirx_builder_error(b));
  cr_assert_eq(strncmp(tirx_builder_error(b), "tirx_filter_begin: ", 19), 0, "%s",
               tirx_builder_error(b));
  tirx_builder_destroy(b);
}

Test(prim_scope, scopes_need_the_block_size) {
  tirx_builder *b = tirx_builder_create("k");
  tirx_team_begin(b, TIRX_TEAM_WARP);
  assert_error(b, TIRX_E_BUILD,
               "tirx_team_begin: the block size is not set (call tirx_set_block first)");
  tirx_builder_destroy(b);
}

Test(prim_scope, unclosed_and_misnested_scopes) {
  tirx_builder *b = tirx_builder_create("k");
  tirx_set_block(b, 32, 1, 1);
  tirx_team_begin(b, TIRX_TEAM_WARP);
  tirx_filter_begin(b, TIRX_AXIS_LANEID, 0, 1);
  tirx_kernel *k = NULL;
  cr_assert_eq(tirx_kernel_build(b, &k), TIRX_E_BUILD);
  cr_assert_str_eq(tirx_builder_error(b),
                   "tirx_kernel_build: tirx_filter_begin is not closed by tirx_filter_end");
  tirx_builder_destroy(b);

  b = tirx_builder_create("k");
  tirx_set_block(b, 32, 1, 1);
  tirx_team_begin(b, TIRX_TEAM_WARP);
  tirx_filter_end(b);
  assert_error(b, TIRX_E_BUILD, "tirx_filter_end: the innermost open scope is a tirx_team_begin");
  tirx_builder_destroy(b);

  b = tirx_builder_create("k");
  tirx_set_block(b, 32, 1, 1);
  tirx_team_begin(b, (tirx_team)9);
  assert_error(b, TIRX_E_INVALID_ARG, "tirx_team_begin: team is 9, not a tirx_team");
  tirx_builder_destroy(b);
}

/* Found by fuzz_builder (tests/fuzz/corpus/builder/builder_filter_begin_nesting_limit): at the
 * nesting limit the filter's guard cannot open, and the error names tirx_filter_begin, not the
 * tirx_if_begin it uses; one level below the limit it still opens and closes. */
Test(prim_scope, filter_at_the_nesting_limit_names_tirx_filter_begin) {
  tirx_builder *b = tirx_builder_create("k");
  tirx_set_block(b, 128, 1, 1);
  for (int i = 0; i < TIRX_BUILDER_MAX_NESTING - 1; i++) tirx_if_begin(b, tirx_bool(b, true));
  tirx_filter_begin(b, TIRX_AXIS_TID, 0, 1);
  tirx_filter_end(b);
  cr_assert_eq(tirx_builder_status(b), TIRX_OK, "%s", tirx_builder_error(b));
  tirx_if_begin(b, tirx_bool(b, true));
  tirx_filter_begin(b, TIRX_AXIS_TID, 0, 1);
  assert_error(b, TIRX_E_LIMIT, "tirx_filter_begin: more than 64 nested blocks");
  cr_assert_eq(tirx_last_status(), TIRX_E_LIMIT);
  cr_assert_str_eq(tirx_last_error(), "tirx_filter_begin: more than 64 nested blocks");
  tirx_builder_destroy(b);
}

/* Found by fuzz_builder (tests/fuzz/corpus/builder/builder_fill_null_value): tirx_fill's value
 * errors were recorded under tirx_broadcast, which tirx_fill uses. */
Test(prim_scope, fill_value_errors_name_tirx_fill) {
  tirx_builder *b = tirx_builder_create("k");
  tirx_set_block(b, 32, 1, 1);
  tirx_tensor *v = tirx_alloc_local(b, "v", TIRX_F32, TIRX_DIMS(4), NULL);
  tirx_fill(b, tirx_whole(b, v), NULL, NULL);
  assert_error(b, TIRX_E_NULL_ARG, "tirx_fill: value is NULL");
  cr_assert_str_eq(tirx_last_error(), "tirx_fill: value is NULL");
  tirx_builder_destroy(b);

  tirx_builder *other = tirx_builder_create("o");
  b = tirx_builder_create("k");
  tirx_set_block(b, 32, 1, 1);
  v = tirx_alloc_local(b, "v", TIRX_F32, TIRX_DIMS(4), NULL);
  tirx_fill(b, tirx_whole(b, v), tirx_float(other, 1.0, TIRX_F32), NULL);
  assert_error(b, TIRX_E_INVALID_ARG, "tirx_fill: value belongs to another builder");
  tirx_builder_destroy(b);
  tirx_builder_destroy(other);
}

/* ---- lowering ---- */

static tirx_runtime *compile_only_runtime(void) {
  tirx_runtime *rt = NULL;
  tirx_runtime_options o = {.compile_only = true};
  cr_assert_eq(tirx_runtime_create(&o, &rt), TIRX_OK, "%s", tirx_last_error());
  return rt;
}

static void assert_compiles(tirx_runtime *rt, const tirx_kernel *k) {
  tirx_compiled *c = NULL;
  cr_assert_eq(tirx_compile(rt, k, "sm_90a", &c), TIRX_OK, "%s", tirx_last_error());
  tirx_compiled_destroy(c);
}

static void assert_has(const char *text, const char *want) {
  cr_assert_not_null(strstr(text, want), "no '%s' in:\n%s", want, text);
}

Test(prim_lower, rmsnorm_lowers_to_vector_copies_shuffles_and_pointwise, .timeout = 300) {
  tirx_runtime *rt = compile_only_runtime();
  static const tirx_dtype dts[] = {TIRX_F32, TIRX_F16, TIRX_BF16};
  static const int64_t widths[] = {1, 3, 127, 5000, 8191};
  for (int d = 0; d < 3; d++)
    for (int w = 0; w < 5; w++)
      for (int scalar = 0; scalar < 2; scalar++) {
        char err[1024] = "";
        tirx_kernel *k = row_kernel(TIRX_ROW_OP_RMSNORM, &ro, dts[d], widths[w], scalar, err, sizeof err);
        cr_assert_not_null(k, "%s width %lld: %s", tirx_dtype_name(dts[d]), (long long)widths[w],
                           err);
        const char *src = tirx_kernel_source(k), *rep = tirx_kernel_dispatch_report(k);
        /* One warp per row up to 1024 elements, a CTA per row beyond (reduce.smem). */
        assert_has(src, widths[w] <= 1024 ? "/* tirx: reduce.shuffle lanes=" : "/* tirx: reduce.smem threads=");
        if (scalar) {
          assert_has(src, "/* tirx: copy.scalar vec=1: copy(");
          cr_assert_null(strstr(rep, "copy.vec"), "%s", rep);
          assert_has(rep, "copy.scalar vec=1 (forced)");
        }
        if (!scalar && widths[w] == 5000) {
          assert_has(src, dts[d] == TIRX_F32 ? "/* tirx: copy.vec vec=4: copy("
                                             : "/* tirx: copy.vec vec=8: copy(");
          assert_has(src, dts[d] == TIRX_F32 ? "tirx_vcopy<float, 4, 8>" : ", 8, 8>(");
          assert_has(src, "__shfl_xor_sync(0xffffffffu, acc, 16)");
          assert_has(src, "__syncthreads();");
          assert_has(src, "/* tirx: pointwise.vec vec=");
        }
        assert_compiles(rt, k);
        tirx_kernel_release(k);
      }
  tirx_runtime_destroy(rt);
}

/* A warp copies a 2 x 64 tile of a global tensor into registers and back, through a team. */
static tirx_kernel *copy_kernel(const char *family, char *err, size_t cap) {
  tirx_builder *b = tirx_builder_create("tile_copy");
  tirx_tensor *x = tirx_param_tensor(b, "x", TIRX_F32, TIRX_EXPRS(tirx_int(b, 2), tirx_int(b, 64)),
                                     NULL);
  tirx_tensor *y = tirx_param_tensor(b, "y", TIRX_F32, TIRX_EXPRS(tirx_int(b, 2), tirx_int(b, 64)),
                                     NULL);
  tirx_set_block(b, 32, 1, 1);
  tirx_team_begin(b, TIRX_TEAM_WARP);
  tirx_tensor *v = tirx_alloc_local(b, "v", TIRX_F32, TIRX_DIMS(2, 64),
                                    tirx_layout_parse(tirx_builder_arena(b),
                                                      "(2,16,4):(4@reg,1@laneid,1@reg)"));
  tirx_config cfg = {.family = family, .hint = TIRX_HINT_STREAM};
  tirx_copy(b, tirx_whole(b, v), tirx_whole(b, x), &cfg);
  tirx_unary(b, tirx_whole(b, v), TIRX_OP_EXP, tirx_whole(b, v), &(tirx_config){.family = family});
  tirx_copy(b, tirx_whole(b, y), tirx_whole(b, v), &cfg);
  tirx_team_end(b);
  tirx_kernel *k = NULL;
  if (tirx_kernel_build(b, &k) != TIRX_OK) snprintf(err, cap, "%s", tirx_builder_error(b));
  tirx_builder_destroy(b);
  return k;
}

/* A row of 5000 bf16 is 625 vectors: 125 threads of 5 vectors, one register tile. Its register
 * indices must fold to loop variables (a division by 1000 kept the tile in local memory), and
 * the tail reductions of a row that is not whole vectors (8191) must reach every warp. */
Test(prim_lower, odd_widths_index_registers_without_divisions, .timeout = 120) {
  char err[1024] = "";
  tirx_kernel *k = row_kernel(TIRX_ROW_OP_RMSNORM, &ro, TIRX_BF16, 5000, false, err, sizeof err);
  cr_assert_not_null(k, "%s", err);
  cr_assert_eq(row_threads(&ro, TIRX_BF16, 5000), 125);
  const char *src = tirx_kernel_source(k);
  assert_has(src, "float xf[40]; /* ((),(5,125,8)):((),(8@reg,1@tid,1@reg)) */");
  assert_has(src, "xf[(i) * 8 + (i_1)]");
  cr_assert_null(strstr(src, " / 1000)"), "a division by the chunk is left:\n%s", src);
  assert_has(src, "__launch_bounds__(128)");
  tirx_kernel_release(k);
  k = row_kernel(TIRX_ROW_OP_RMSNORM, &ro, TIRX_F32, 8191, false, err, sizeof err);
  cr_assert_not_null(k, "%s", err);
  src = tirx_kernel_source(k);
  /* The 3-element tail sits on the first warp's lanes: its partial goes through shared
   * memory to the other warps like the others (three scratch buffers, one per tile). */
  const char *tail = strstr(src, "reduce.smem threads=3:");
  cr_assert_not_null(tail, "%s", src);
  cr_assert_not_null(strstr(tail, "__syncthreads();"), "%s", tail);
  tirx_kernel_release(k);
}

Test(prim_report, golden_vector_and_forced_scalar) {
  char err[512] = "";
  tirx_kernel *k = copy_kernel(NULL, err, sizeof err);
  cr_assert_not_null(k, "%s", err);
  cr_assert_str_eq(tirx_kernel_dispatch_report(k),
                   "[tile_copy:1] copy(arch=sm_90, roles=global->local, team=warp) -> copy.vec vec=4\n"
                   "[tile_copy:2] unary(arch=sm_90, roles=local->local, team=warp) -> pointwise.vec vec=4,pack=1\n"
                   "[tile_copy:3] copy(arch=sm_90, roles=local->global, team=warp) -> copy.vec vec=4\n");
  assert_has(tirx_kernel_source(k), "tirx_vcopy<float, 4, 9>(");
  assert_has(tirx_kernel_source(k), "tirx_vcopy<float, 4, 6>(");
  tirx_kernel_release(k);
  k = copy_kernel("scalar", err, sizeof err);
  cr_assert_not_null(k, "%s", err);
  cr_assert_str_eq(tirx_kernel_dispatch_report(k),
                   "[tile_copy:1] copy(arch=sm_90, roles=global->local, team=warp, family=scalar) -> copy.scalar vec=1 (forced)\n"
                   "[tile_copy:2] unary(arch=sm_90, roles=local->local, team=warp, family=scalar) -> pointwise.scalar vec=1,pack=1 (forced)\n"
                   "[tile_copy:3] copy(arch=sm_90, roles=local->global, team=warp, family=scalar) -> copy.scalar vec=1 (forced)\n");
  cr_assert_null(strstr(tirx_kernel_source(k), "tirx_vcopy<"), "%s", tirx_kernel_source(k));
  tirx_runtime *rt = compile_only_runtime();
  assert_compiles(rt, k);
  tirx_runtime_destroy(rt);
  tirx_kernel_release(k);
}

Test(prim_report, a_fallback_lists_the_failed_constraints) {
  char err[1024] = "";
  tirx_kernel *k = row_kernel(TIRX_ROW_OP_RMSNORM, &ro, TIRX_F32, 8191, false, err, sizeof err);
  cr_assert_not_null(k, "%s", err);
  const char *rep = tirx_kernel_dispatch_report(k);
  assert_has(rep, "[rmsnorm:1] copy(arch=sm_90, roles=global->local, team=cta) -> copy.scalar "
                  "vec=1 (fallback)\n"
                  "  rejected copy.vec: src vector width 1 < 2 elements: innermost run of 6144 "
                  "contiguous elements is not 2-element aligned\n");
  tirx_kernel_release(k);
  cr_assert_null(tirx_kernel_dispatch_report(NULL));
}

/* ---- reduce.smem: warp butterflies, per-warp partials in shared memory, a final warp ---- */

/* A team reduces a register tile laid out as `layout` (shape rows x cols) over dim 1 into
 * s[rows, 1] and writes s to y (thread 0 of the team). */
static tirx_kernel *smem_kernel(int threads, tirx_team team, tirx_op op, int64_t rows,
                                int64_t cols, const char *layout, char *err, size_t cap) {
  tirx_builder *b = tirx_builder_create("red");
  tirx_tensor *y = tirx_param_tensor(b, "y", TIRX_F32, TIRX_EXPRS(tirx_int(b, rows)), NULL);
  tirx_set_block(b, threads, 1, 1);
  tirx_team_begin(b, team);
  tirx_tensor *v = tirx_alloc_local(b, "v", TIRX_F32, TIRX_DIMS(rows, cols),
                                    tirx_layout_parse(tirx_builder_arena(b), layout));
  tirx_tensor *s = tirx_alloc_local(b, "s", TIRX_F32, TIRX_DIMS(rows, 1), NULL);
  tirx_fill(b, tirx_whole(b, v), tirx_cast(b, tirx_thread_linear(b), TIRX_F32), NULL);
  tirx_reduce(b, tirx_whole(b, s), tirx_whole(b, v), op, 1u << 1, false, NULL);
  tirx_if_begin(b, tirx_eq(b, tirx_thread_linear(b), tirx_int(b, 0)));
  for (int64_t r = 0; r < rows; r++)
    tirx_store(b, y, TIRX_EXPRS(tirx_int(b, r)),
               tirx_load(b, s, TIRX_EXPRS(tirx_int(b, r), tirx_int(b, 0))));
  tirx_if_end(b);
  tirx_team_end(b);
  tirx_kernel *k = NULL;
  if (tirx_kernel_build(b, &k) != TIRX_OK) snprintf(err, cap, "%s", tirx_builder_error(b));
  tirx_builder_destroy(b);
  return k;
}

Test(prim_lower, reduce_smem_cta_sum_goes_through_shared_memory, .timeout = 120) {
  char err[1024] = "";
  tirx_kernel *k = smem_kernel(256, TIRX_TEAM_CTA, TIRX_OP_SUM, 1, 1024,
                               "(1,4,256):(0@reg,1@reg,1@tid)", err, sizeof err);
  cr_assert_not_null(k, "%s", err);
  const char *src = tirx_kernel_source(k);
  cr_assert_str_eq(tirx_kernel_dispatch_report(k),
                   "[red:1] fill(arch=sm_90, roles=scalar->local, team=cta) -> pointwise.scalar vec=1,pack=1 (fallback)\n"
                   "  rejected pointwise.vec: dst vector width 1 < 2 elements: innermost elements are not in consecutive registers\n"
                   "[red:2] reduce(arch=sm_90, roles=local->local, team=cta) -> reduce.smem threads=256\n");
  assert_has(src, "/* tirx: reduce.smem threads=256: reduce(arch=sm_90, roles=local->local, team=cta) */");
  assert_has(src, "__shfl_xor_sync(0xffffffffu, acc, 16)");
  assert_has(src, "__syncthreads();");
  assert_has(src, "red2_smem");
  tirx_runtime *rt = compile_only_runtime();
  assert_compiles(rt, k);
  tirx_kernel_release(k);
  tirx_runtime_destroy(rt);
}

Test(prim_lower, reduce_smem_warpgroup_max_and_kept_rows_on_registers, .timeout = 120) {
  char err[1024] = "";
  tirx_runtime *rt = compile_only_runtime();
  tirx_kernel *k = smem_kernel(256, TIRX_TEAM_WARPGROUP, TIRX_OP_MAX, 2, 256,
                               "(2,128,2):(2@reg,1@tid_in_wg,1@reg)", err, sizeof err);
  cr_assert_not_null(k, "%s", err);
  assert_has(tirx_kernel_dispatch_report(k), "-> reduce.smem threads=128\n");
  assert_has(tirx_kernel_source(k), "fmaxf(");
  assert_compiles(rt, k);
  tirx_kernel_release(k);
  /* Lanes only: no shared memory, no barrier. */
  k = smem_kernel(128, TIRX_TEAM_CTA, TIRX_OP_SUMSQ, 1, 64, "(1,2,32):(0@reg,1@reg,1@laneid)",
                  err, sizeof err);
  cr_assert_not_null(k, "%s", err);
  cr_assert_null(strstr(tirx_kernel_source(k), "__syncthreads"), "%s", tirx_kernel_source(k));
  assert_compiles(rt, k);
  tirx_kernel_release(k);
  tirx_runtime_destroy(rt);
}

/* Any whole number of warps (issue 13, deliverable 2: an RMSNorm of 3072 on 6 warps was "not
 * lowered yet"): the butterfly inside each warp, then lane w of every warp folds warp w's
 * partial (lanes past the warps hold the identity) in the fixed xor order. Both forms of the
 * reduced threads: one iter on tid, and warpid x laneid. */
Test(prim_lower, reduce_smem_any_whole_number_of_warps, .timeout = 300) {
  char err[1024] = "";
  tirx_runtime *rt = compile_only_runtime();
  static const int warps[] = {3, 5, 6, 7, 12};
  for (size_t i = 0; i < sizeof warps / sizeof warps[0]; i++) {
    int w = warps[i], t = 32 * w;
    char lay[96], want[160];
    snprintf(lay, sizeof lay, "(1,4,%d):(0@reg,1@reg,1@tid)", t);
    tirx_kernel *k = smem_kernel(t, TIRX_TEAM_CTA, TIRX_OP_SUM, 1, 4 * t, lay, err, sizeof err);
    cr_assert_not_null(k, "%d warps: %s", w, err);
    snprintf(want, sizeof want, "-> reduce.smem threads=%d\n", t);
    assert_has(tirx_kernel_dispatch_report(k), want);
    const char *src = tirx_kernel_source(k);
    assert_has(src, "__shfl_xor_sync(0xffffffffu, acc, 16)");
    snprintf(want, sizeof want, "if ((lane < %d)) {", w);
    assert_has(src, want);
    snprintf(want, sizeof want, "/* ((1),(1),(%d)):((%d@m),(%d@m),(1@m)) */", w, w, w);
    assert_has(src, want); /* the scratch: one partial per warp */
    assert_has(src, "acc_1 = red2_smem[lane];");
    assert_compiles(rt, k);
    tirx_kernel_release(k);
    snprintf(lay, sizeof lay, "(1,2,%d,32):(0@reg,1@reg,1@warpid,1@laneid)", w);
    k = smem_kernel(t, TIRX_TEAM_CTA, TIRX_OP_MAX, 1, 2 * t, lay, err, sizeof err);
    cr_assert_not_null(k, "%d warps on warpid: %s", w, err);
    assert_has(tirx_kernel_source(k), "fmaxf(");
    assert_compiles(rt, k);
    tirx_kernel_release(k);
  }
  tirx_runtime_destroy(rt);
}

/* The power-of-two warp counts keep the source they had before any number of warps was
 * lowered: the hashes of both forms for 1..32 warps, recorded on the previous tree (and
 * recorded again when the prelude's tirx_smem_addr changed, session 12: the golden cases of
 * these kernels changed in their prelude only). */
Test(prim_lower, reduce_smem_power_of_two_warps_are_unchanged) {
  static const uint64_t want[6][2][2] = {
      {{0x18082d265987e89bu, 0x2d1c2efd0352bcf3u}, {0xd523d96c2882b18eu, 0x58f546209f478129u}},
      {{0x70f6fafa76acd863u, 0xc0448d64f4dde15du}, {0xdf56ba6846ed0cf5u, 0x2f65ddc72d9fe113u}},
      {{0xae6e9306d57a9c06u, 0xf5667de2ed80357bu}, {0xbcc511d2834f2da2u, 0xe9ce5e0c367decc9u}},
      {{0x7bc309177a465315u, 0x97b858566cefce22u}, {0xf44785e069e6bf11u, 0x83ae001182918823u}},
      {{0xebb05fde3110ab65u, 0x16bc1e3ea4c0f117u}, {0x44ba28e17f3293bbu, 0x8f808b2de3f4450fu}},
      {{0x567071f362f4fa04u, 0xa70e962a8b781956u}, {0x75f9a6e3c3cf763fu, 0x2a58fd6378ce8f24u}},
  };
  char err[1024] = "";
  for (int e = 0; e < 6; e++) {
    int w = 1 << e, t = 32 * w;
    char lay[96];
    uint64_t h[2];
    snprintf(lay, sizeof lay, "(1,4,%d):(0@reg,1@reg,1@tid)", t);
    tirx_kernel *k = smem_kernel(t, TIRX_TEAM_CTA, TIRX_OP_SUM, 1, 4 * t, lay, err, sizeof err);
    cr_assert_not_null(k, "%s", err);
    tirx__kernel_hash(k, h);
    cr_assert(h[0] == want[e][0][0] && h[1] == want[e][0][1], "%d warps (tid): source changed",
              w);
    tirx_kernel_release(k);
    snprintf(lay, sizeof lay, "(1,2,%d,32):(0@reg,1@reg,1@warpid,1@laneid)", w);
    k = smem_kernel(t, TIRX_TEAM_CTA, TIRX_OP_MAX, 1, 2 * t, lay, err, sizeof err);
    cr_assert_not_null(k, "%s", err);
    tirx__kernel_hash(k, h);
    cr_assert(h[0] == want[e][1][0] && h[1] == want[e][1][1],
              "%d warps (warpid): source changed", w);
    tirx_kernel_release(k);
  }
}

Test(prim_lower, reduce_smem_rejects_kept_dims_on_threads) {
  char err[1024] = "";
  tirx_kernel *k = smem_kernel(256, TIRX_TEAM_CTA, TIRX_OP_SUM, 2, 128,
                               "(2,128):(128@tid,1@tid)", err, sizeof err);
  cr_assert_null(k);
  /* refused at dispatch (no rule), not chosen and then failed in lowering */
  assert_has(err, "tirx_kernel_build: [red:2] no legal rule for reduce(arch=sm_90, "
                  "roles=local->local, team=cta): reduce.smem: kept dim 0 iter (2):(128@tid) is on "
                  "tid: the kept dims of a reduction through shared memory stay in registers");
}

Test(prim_api, argument_errors) {
  tirx_builder *b = tirx_builder_create("k");
  tirx_set_block(b, 32, 1, 1);
  tirx_tensor *x = tirx_param_tensor(b, "x", TIRX_F32, TIRX_EXPRS(tirx_int(b, 8)), NULL);
  tirx_tensor *h = tirx_alloc_local(b, "h", TIRX_F16, TIRX_DIMS(8), NULL);
  tirx_copy(b, tirx_whole(b, h), tirx_whole(b, x), NULL);
  assert_error(b, TIRX_E_TYPE, "tirx_copy: src has dtype f32, dst f16: use tirx_cast_region");
  tirx_builder_destroy(b);

  b = tirx_builder_create("k");
  x = tirx_param_tensor(b, "x", TIRX_F32, TIRX_EXPRS(tirx_int(b, 8)), NULL);
  tirx_region_new(b, x, TIRX_EXPRS(tirx_int(b, 4)), (int64_t[]){8});
  assert_error(b, TIRX_E_OUT_OF_RANGE, "tirx_region_new: region dim 0 [4, 12) exceeds the extent of x");
  tirx_builder_destroy(b);
}
