/*
 * The builder and dispatch pieces attention needed (issue 14: "what the builder cannot say
 * cleanly becomes builder API"): tirx_elem_index, tirx_alloc_shared_view, the wgmma row layout,
 * warpgroup reductions over a warp's lane bits, per-row broadcasts, and MN-major wgmma B.
 */
#include <math.h>

#include "../helpers.h"

static tirx_expr *I(tirx_builder *b, int64_t v) { return tirx_int(b, v); }

static tirx_region *rect(tirx_builder *b, tirx_tensor *t, int64_t r0, int64_t c0, int64_t rows,
                         int64_t cols) {
  return tirx_region_new(b, t, TIRX_EXPRS(I(b, r0), I(b, c0)), (int64_t[]){rows, cols});
}

static void assert_has(const char *text, const char *want) {
  cr_assert(text && strstr(text, want), "missing `%s` in:\n%s", want, text ? text : "(null)");
}

/* A warpgroup's softmax step on a wgmma accumulator: mask by position, row max, S - m, exp2,
 * P = S as bf16, O += P V with V MN-major. */
static tirx_kernel *softmax_kernel(char *err, size_t cap) {
  enum { BN = 64, D = 64 };
  tirx_builder *b = tirx_builder_create("sm");
  tirx_arena *ar = tirx_builder_arena(b);
  tirx_set_block(b, 128, 1, 1);
  tirx_set_target(b, "sm_90a");
  tirx_expr *lim = tirx_param_int(b, "lim", TIRX_I32);
  tirx_tensor *Q = tirx_alloc_shared(b, "Q", TIRX_BF16, TIRX_DIMS(64, D),
                                     tirx_layout_smem_tile(ar, 64, D, 2, 128));
  tirx_tensor *Kt = tirx_alloc_shared(b, "Kt", TIRX_BF16, TIRX_DIMS(D, BN),
      tirx_layout_permute(ar, tirx_layout_smem_tile(ar, BN, D, 2, 128), 2, (int64_t[]){1, 0}));
  tirx_tensor *V = tirx_alloc_shared(b, "V", TIRX_BF16, TIRX_DIMS(BN, D),
                                     tirx_layout_smem_tile(ar, BN, D, 2, 128));
  tirx_team_begin(b, TIRX_TEAM_WARPGROUP);
  tirx_tensor *S = tirx_alloc_local(b, "S", TIRX_F32, TIRX_DIMS(64, BN), tirx_layout_wgmma_acc(ar, 64, BN));
  tirx_tensor *O = tirx_alloc_local(b, "O", TIRX_F32, TIRX_DIMS(64, D), tirx_layout_wgmma_acc(ar, 64, D));
  tirx_tensor *M = tirx_alloc_local(b, "M", TIRX_F32, TIRX_DIMS(64, BN), tirx_layout_wgmma_rows(ar, BN));
  tirx_tensor *P = tirx_alloc_local(b, "P", TIRX_BF16, TIRX_DIMS(64, BN), tirx_layout_wgmma_a(ar, 64, BN));
  tirx_gemm_config fresh = {.accumulate = tirx_bool(b, false)};
  tirx_gemm_async(b, tirx_whole(b, S), tirx_whole(b, Q), tirx_whole(b, Kt), &fresh);
  tirx_wgmma_commit(b);
  tirx_wgmma_wait(b, 0);
  tirx_region *Sr = tirx_whole(b, S);
  tirx_expr *ok = tirx_le(b, tirx_elem_index(b, 1), tirx_add(b, tirx_elem_index(b, 0), lim));
  tirx_select_region(b, Sr, tirx_broadcast(b, ok), Sr,
                     tirx_broadcast(b, tirx_float(b, -INFINITY, TIRX_F32)), NULL);
  tirx_reduce(b, rect(b, M, 0, 0, 64, 1), Sr, TIRX_OP_MAX, 0x2, false, NULL);
  tirx_binary(b, Sr, TIRX_OP_SUB, Sr, tirx_whole(b, M), NULL);
  tirx_unary(b, Sr, TIRX_OP_EXP2, Sr, NULL);
  tirx_cast_region(b, tirx_whole(b, P), Sr, NULL);
  tirx_gemm_async(b, tirx_whole(b, O), tirx_whole(b, P), tirx_whole(b, V), &fresh);
  tirx_wgmma_commit(b);
  tirx_wgmma_wait(b, 0);
  tirx_team_end(b);
  tirx_kernel *k = NULL;
  if (tirx_kernel_build(b, &k) != TIRX_OK) snprintf(err, cap, "%s", tirx_builder_error(b));
  tirx_builder_destroy(b);
  return k;
}

Test(attention_pieces, a_softmax_step_dispatches_and_generates_what_it_says) {
  char err[1024] = "";
  tirx_kernel *k = softmax_kernel(err, sizeof err);
  cr_assert_not_null(k, "%s", err);
  const char *rep = tirx_kernel_dispatch_report(k), *src = tirx_kernel_source(k);
  assert_has(rep, "[sm:2] select(arch=sm_90, roles=scalar,local,scalar->local, team=warpgroup) -> pointwise.vec");
  assert_has(rep, "[sm:3] reduce(arch=sm_90, roles=local->local, team=warpgroup) -> reduce.shuffle lanes=4");
  assert_has(rep, "rejected reduce.smem: kept dim 0 iter (4):(32@tid_in_wg) is on tid_in_wg");
  assert_has(rep, "[sm:4] binary(arch=sm_90, roles=local,local->local, team=warpgroup) -> pointwise.");
  assert_has(rep, "-> gemm_async.wgmma_rs m=64,n=64,k=16");
  /* the mask: column and row of each accumulator register, from the layout */
  assert_has(src, "((((i_1 * 8) + ((((int)threadIdx.x % 128) & 3) * 2)) + i_2) <= ");
  assert_has(src, "(((((int)threadIdx.x % 128) >> 5) & 3) * 16) + (i * 8))");
  /* the row max: a quad butterfly, the per-row value in 2 registers, read by every column */
  assert_has(src, "acc = fmaxf(acc, __shfl_xor_sync(0xffffffffu, acc, 1));");
  assert_has(src, "acc = fmaxf(acc, __shfl_xor_sync(0xffffffffu, acc, 2));");
  assert_has(src, "float M[2];");
  assert_has(src, " - M[(i)])");
  /* V (keys x D, D contiguous) is MN-major: the transpose bit, atoms 1024 bytes apart in K */
  assert_has(src, "tirx_wgmma_rs_m64n64k16_bf16<1>(&O[0],");
  assert_has(src, "tirx_wgmma_desc(tirx_smem_addr(&V[tirx_swizzle(1024, 3, 2)]), 1024, 1024, 1)");
  tirx_kernel_release(k);
}

Test(attention_pieces, the_wgmma_row_layout) {
  tirx_arena *a = tirx_arena_create();
  tirx_layout *l = tirx_layout_wgmma_rows(a, 128);
  cr_assert_not_null(l, "%s", tirx_last_error());
  char *s = tirx_layout_str(l);
  cr_assert_str_eq(s, "((4,2,8),(128)):((32@tid_in_wg,1@reg,4@tid_in_wg),(0@reg))+[4:1@tid_in_wg]");
  free(s);
  /* row 9 of any column: thread 32*0 + 4*1 + {0..3} (a quad), register 1 */
  tirx_coord c[8];
  int64_t n = 0;
  cr_assert_eq(tirx_layout_eval_nd(l, (int64_t[]){9, 77}, c, 8, &n), TIRX_OK);
  cr_assert_eq(n, 4);
  for (int64_t i = 0; i < n; i++) {
    cr_assert_eq(c[i].v[TIRX_AXIS_REG], 1);
    cr_assert_eq(c[i].v[TIRX_AXIS_TID_IN_WG] / 4, 1);
  }
  expect_null(tirx_layout_wgmma_rows(a, 0), TIRX_E_INVALID_ARG,
              "tirx_layout_wgmma_rows: n is 0, expected 1 to 4096");
  expect_null(tirx_layout_wgmma_rows(NULL, 8), TIRX_E_NULL_ARG, "tirx_layout_wgmma_rows: arena is NULL");
  tirx_arena_destroy(a);
}

Test(attention_pieces, elem_index_errors) {
  tirx_builder *b = tirx_builder_create("k");
  cr_assert_null(tirx_elem_index(b, 8));
  cr_assert_eq(tirx_builder_status(b), TIRX_E_INVALID_ARG);
  cr_assert_str_eq(tirx_builder_error(b), "tirx_elem_index: dim is 8, expected 0 to 7");
  tirx_builder_destroy(b);

  /* outside a broadcast operand there is no element: refused at build */
  b = tirx_builder_create("k");
  tirx_set_block(b, 32, 1, 1);
  tirx_tensor *y = tirx_param_tensor(b, "y", TIRX_I32, TIRX_EXPRS(I(b, 32)), NULL);
  tirx_store(b, y, TIRX_EXPRS(tirx_lane_id(b)), tirx_elem_index(b, 0));
  tirx_kernel *k = NULL;
  cr_assert_neq(tirx_kernel_build(b, &k), TIRX_OK);
  assert_has(tirx_builder_error(b), "tirx_elem_index(0) is used outside a tile primitive's "
                                    "broadcast operand");
  tirx_builder_destroy(b);

  /* a dim the tile does not have */
  b = tirx_builder_create("k");
  tirx_set_block(b, 32, 1, 1);
  tirx_team_begin(b, TIRX_TEAM_WARP);
  tirx_tensor *v = tirx_alloc_local(b, "v", TIRX_I32, TIRX_DIMS(32),
                                    tirx_layout_parse(tirx_builder_arena(b), "(32):(1@laneid)"));
  tirx_fill(b, tirx_whole(b, v), tirx_elem_index(b, 1), NULL);
  tirx_team_end(b);
  cr_assert_neq(tirx_kernel_build(b, &k), TIRX_OK);
  assert_has(tirx_builder_error(b), "uses tirx_elem_index(1), but the tile has rank 1");
  tirx_builder_destroy(b);
}

Test(attention_pieces, elem_index_is_the_index_in_the_tile) {
  tirx_builder *b = tirx_builder_create("iota");
  tirx_set_block(b, 32, 1, 1);
  tirx_tensor *y = tirx_param_tensor(b, "y", TIRX_I32, TIRX_EXPRS(I(b, 64)), NULL);
  tirx_team_begin(b, TIRX_TEAM_WARP);
  tirx_tensor *v = tirx_alloc_local(b, "v", TIRX_I32, TIRX_DIMS(64),
                                    tirx_layout_parse(tirx_builder_arena(b), "(32,2):(1@laneid,1@reg)"));
  tirx_fill(b, tirx_whole(b, v), tirx_mul(b, tirx_elem_index(b, 0), I(b, 3)), NULL);
  tirx_copy(b, tirx_whole(b, y), tirx_whole(b, v), NULL);
  tirx_team_end(b);
  tirx_kernel *k = NULL;
  cr_assert_eq(tirx_kernel_build(b, &k), TIRX_OK, "%s", tirx_builder_error(b));
  /* element (lane, reg) is index 2 * lane + reg: lane * 2 + i times 3, one element at a time */
  assert_has(tirx_kernel_source(k), "pointwise.vec vec=2,pack=1: fill");
  assert_has(tirx_kernel_source(k), "v[(i)] = ((((((int)threadIdx.x & 31) & 31) * 2) + i) * 3);");
  tirx_kernel_release(k);
  tirx_builder_destroy(b);
}

Test(attention_pieces, shared_views) {
  tirx_builder *b = tirx_builder_create("views");
  tirx_arena *ar = tirx_builder_arena(b);
  tirx_set_block(b, 32, 1, 1);
  tirx_tensor *t = tirx_alloc_shared(b, "t", TIRX_BF16, TIRX_DIMS(128, 64),
                                     tirx_layout_smem_tile(ar, 128, 64, 2, 128));
  tirx_tensor *after = tirx_alloc_shared(b, "after", TIRX_F32, TIRX_DIMS(4), NULL);
  tirx_tensor *v = tirx_alloc_shared_view(b, "box", t, 8192, TIRX_BF16, 4, (int64_t[]){1, 64, 1, 64},
      tirx_layout_group(ar, tirx_layout_smem_tile(ar, 64, 64, 2, 128), 4, (int64_t[]){1, 64, 1, 64}));
  cr_assert_not_null(v, "%s", tirx_builder_error(b));
  cr_assert_not_null(after);
  tirx_fill(b, tirx_whole(b, after), tirx_float(b, 0, TIRX_F32), NULL);
  tirx_fill(b, tirx_region_new(b, v, TIRX_EXPRS(I(b, 0), I(b, 0), I(b, 0), I(b, 0)), (int64_t[]){1, 1, 1, 64}),
            tirx_float(b, 1, TIRX_BF16), NULL);
  tirx_kernel *k = NULL;
  cr_assert_eq(tirx_kernel_build(b, &k), TIRX_OK, "%s", tirx_builder_error(b));
  const char *src = tirx_kernel_source(k);
  assert_has(src, "tirx_bf16 *t = (tirx_bf16 *)(tirx_smem + 0);");
  assert_has(src, "tirx_bf16 *box = (tirx_bf16 *)(tirx_smem + 8192);"); /* no new bytes */
  assert_has(src, "float *after = (float *)(tirx_smem + 16384);");
  tirx_kernel_release(k);
  tirx_builder_destroy(b);

  b = tirx_builder_create("views");
  ar = tirx_builder_arena(b);
  t = tirx_alloc_shared(b, "t", TIRX_BF16, TIRX_DIMS(128, 64), tirx_layout_smem_tile(ar, 128, 64, 2, 128));
  cr_assert_null(tirx_alloc_shared_view(b, "v", t, 512, TIRX_BF16, 2, (int64_t[]){8, 64},
                                        tirx_layout_smem_tile(ar, 8, 64, 2, 128)));
  cr_assert_str_eq(tirx_builder_error(b), "tirx_alloc_shared_view: byte_offset is 512, expected a "
                                          "multiple of 1024 (the alignment of a swizzled buffer)");
  tirx_builder_destroy(b);

  b = tirx_builder_create("views");
  t = tirx_alloc_shared(b, "t", TIRX_F32, TIRX_DIMS(64), NULL);
  cr_assert_null(tirx_alloc_shared_view(b, "v", t, 128, TIRX_F32, 1, (int64_t[]){64}, NULL));
  cr_assert_str_eq(tirx_builder_error(b), "tirx_alloc_shared_view: view \"v\" needs 256 bytes from "
                                          "byte 128 of \"t\", which has 256");
  tirx_builder_destroy(b);

  b = tirx_builder_create("views");
  tirx_set_block(b, 32, 1, 1);
  tirx_team_begin(b, TIRX_TEAM_WARP);
  tirx_tensor *l = tirx_alloc_local(b, "l", TIRX_F32, TIRX_DIMS(4), NULL);
  cr_assert_null(tirx_alloc_shared_view(b, "v", l, 0, TIRX_F32, 1, (int64_t[]){4}, NULL));
  cr_assert_str_eq(tirx_builder_error(b), "tirx_alloc_shared_view: base \"l\" is not a shared tensor");
  tirx_builder_destroy(b);

  b = tirx_builder_create("views");
  t = tirx_alloc_shared(b, "t", TIRX_F32, TIRX_DIMS(64), NULL);
  cr_assert_null(tirx_alloc_shared_view(b, "v", t, -128, TIRX_F32, 1, (int64_t[]){4}, NULL));
  cr_assert_str_eq(tirx_builder_error(b), "tirx_alloc_shared_view: byte_offset is -128, expected >= 0");
  tirx_builder_destroy(b);
}

Test(attention_pieces, a_warpgroup_shuffle_stays_inside_warps) {
  /* reduced bits across warps (tid_in_wg bit 5 and up) are not a shuffle's */
  tirx_builder *b = tirx_builder_create("x");
  tirx_set_block(b, 128, 1, 1);
  tirx_team_begin(b, TIRX_TEAM_WARPGROUP);
  tirx_arena *ar = tirx_builder_arena(b);
  tirx_tensor *v = tirx_alloc_local(b, "v", TIRX_F32, TIRX_DIMS(2, 128),
                                    tirx_layout_parse(ar, "((2),(128)):((1@reg),(1@tid_in_wg))"));
  tirx_tensor *s = tirx_alloc_local(b, "s", TIRX_F32, TIRX_DIMS(2, 1), NULL);
  tirx_fill(b, tirx_whole(b, v), tirx_float(b, 1, TIRX_F32), NULL);
  tirx_reduce(b, tirx_whole(b, s), tirx_whole(b, v), TIRX_OP_MAX, 0x2, false, NULL);
  tirx_team_end(b);
  tirx_kernel *k = NULL;
  cr_assert_eq(tirx_kernel_build(b, &k), TIRX_OK, "%s", tirx_builder_error(b));
  assert_has(tirx_kernel_dispatch_report(k), "-> reduce.smem threads=128\n");
  tirx_kernel_release(k);
  tirx_builder_destroy(b);
}

/* Rings: full/empty barrier pairs, their initialisation, stage and phase (both sides). */
Test(attention_pieces, rings) {
  tirx_builder *b = tirx_builder_create("ring");
  tirx_set_block(b, 64, 1, 1);
  tirx_set_target(b, "sm_90a");
  tirx_ring *a = tirx_ring_new(b, "a", 1, 1, 2), *k = tirx_ring_new(b, "k", 3, 1, 32);
  cr_assert_not_null(a, "%s", tirx_builder_error(b));
  cr_assert_eq(tirx_ring_stages(k), 3);
  tirx_if_begin(b, tirx_eq(b, tirx_thread_linear(b), I(b, 0)));
  tirx_rings_init(b, (tirx_ring *[]){a, k}, 2);
  tirx_if_end(b);
  tirx_sync_threads(b);
  tirx_expr *it = tirx_var(b, "it", TIRX_I32, NULL);
  tirx_expr *n = tirx_for_begin(b, "n", I(b, 0), I(b, 8), NULL, TIRX_LOOP_SERIAL);
  (void)n;
  tirx_if_begin(b, tirx_lt(b, tirx_thread_linear(b), I(b, 32))); /* producer warp */
  tirx_expr *s = tirx_ring_stage(b, k, it), *ph = tirx_ring_phase(b, k, it, true);
  tirx_ring_acquire(b, k, s, ph, NULL);
  tirx_mbarrier_arrive(b, tirx_ring_full(b, k, s));
  tirx_else(b); /* consumer warp */
  s = tirx_ring_stage(b, k, it), ph = tirx_ring_phase(b, k, it, false);
  tirx_ring_wait(b, k, s, ph);
  tirx_ring_release(b, k, s);
  tirx_if_end(b);
  tirx_assign(b, it, tirx_add(b, it, I(b, 1)));
  tirx_for_end(b);
  tirx_kernel *kern = NULL;
  cr_assert_eq(tirx_kernel_build(b, &kern), TIRX_OK, "%s", tirx_builder_error(b));
  const char *src = tirx_kernel_source(kern);
  assert_has(src, "long long *a_full = (long long *)(tirx_smem + 0);");
  assert_has(src, "long long *k_empty = ");
  /* stage by stage: a's pair, then k's stage 0, k's stage 1, k's stage 2 */
  const char *p = strstr(src, "tirx_mbar_init(&a_full[0], 1);");
  cr_assert_not_null(p, "%s", src);
  p = strstr(p, "tirx_mbar_init(&a_empty[0], 2);");
  cr_assert_not_null(p);
  p = strstr(p, "tirx_mbar_init(&k_full[0], 1);");
  cr_assert_not_null(p);
  p = strstr(p, "tirx_mbar_init(&k_empty[0], 32);");
  cr_assert_not_null(p);
  p = strstr(p, "tirx_mbar_init(&k_empty[2], 32);");
  cr_assert_not_null(p);
  assert_has(p, "tirx_fence_mbarrier_init();");
  assert_has(src, "const int ph = (((it / 3) & 1) ^ 1);"); /* the producer's first wait passes */
  assert_has(src, "tirx_mbar_wait(&k_empty[s], ph);");
  assert_has(src, "const int ph = ((it / 3) & 1);"); /* the consumer's */
  assert_has(src, "tirx_mbar_wait(&k_full[s], ph);");
  assert_has(src, "tirx_mbar_arrive(&k_empty[s]);");
  tirx_kernel_release(kern);
  tirx_builder_destroy(b);

  b = tirx_builder_create("ring");
  cr_assert_null(tirx_ring_new(b, "x", 0, 1, 1));
  cr_assert_str_eq(tirx_builder_error(b), "tirx_ring_new: stages is 0, expected 1 to 64");
  tirx_builder_destroy(b);
  b = tirx_builder_create("ring");
  cr_assert_null(tirx_ring_new(b, "x", 2, 1, 0));
  assert_has(tirx_builder_error(b), "tirx_ring_new: producers and consumers are 1 and 0, expected 1 to 1048575");
  tirx_builder_destroy(b);
  b = tirx_builder_create("ring");
  tirx_ring_wait(b, NULL, I(b, 0), I(b, 0));
  cr_assert_str_eq(tirx_builder_error(b), "tirx_ring_wait: ring is NULL");
  tirx_builder_destroy(b);
  b = tirx_builder_create("ring");
  tirx_rings_init(b, NULL, 1);
  cr_assert_eq(tirx_builder_status(b), TIRX_E_NULL_ARG);
  tirx_builder_destroy(b);
}

/* TIRX_OP_EXP2_APPROX: one ex2.approx.ftz.f32 for f32 (the prelude's tirx_ex2), exact for f64;
 * TIRX_OP_EXP2 stays exp2f. */
Test(attention_pieces, exp2_approx) {
  tirx_builder *b = tirx_builder_create("ex2");
  tirx_set_block(b, 32, 1, 1);
  tirx_team_begin(b, TIRX_TEAM_WARP);
  tirx_arena *ar = tirx_builder_arena(b);
  tirx_tensor *f = tirx_alloc_local(b, "f", TIRX_F32, TIRX_DIMS(32), tirx_layout_parse(ar, "(32):(1@laneid)"));
  tirx_tensor *g = tirx_alloc_local(b, "g", TIRX_F64, TIRX_DIMS(32), tirx_layout_parse(ar, "(32):(1@laneid)"));
  tirx_fill(b, tirx_whole(b, f), tirx_float(b, 0.5, TIRX_F32), NULL);
  tirx_fill(b, tirx_whole(b, g), tirx_float(b, 0.5, TIRX_F64), NULL);
  tirx_unary(b, tirx_whole(b, f), TIRX_OP_EXP2_APPROX, tirx_whole(b, f), NULL);
  tirx_unary(b, tirx_whole(b, g), TIRX_OP_EXP2_APPROX, tirx_whole(b, g), NULL);
  tirx_unary(b, tirx_whole(b, f), TIRX_OP_EXP2, tirx_whole(b, f), NULL);
  tirx_team_end(b);
  tirx_kernel *k = NULL;
  cr_assert_eq(tirx_kernel_build(b, &k), TIRX_OK, "%s", tirx_builder_error(b));
  const char *src = tirx_kernel_source(k);
  assert_has(src, "f[0] = tirx_ex2(f[0]);");
  assert_has(src, "g[0] = exp2(g[0]);");
  assert_has(src, "f[0] = exp2f(f[0]);");
  assert_has(src, "ex2.approx.ftz.f32");
  tirx_kernel_release(k);
  tirx_builder_destroy(b);
  /* an integer tensor has no exp2 */
  b = tirx_builder_create("ex2");
  tirx_set_block(b, 32, 1, 1);
  tirx_team_begin(b, TIRX_TEAM_WARP);
  tirx_tensor *i = tirx_alloc_local(b, "i", TIRX_I32, TIRX_DIMS(32),
                                    tirx_layout_parse(tirx_builder_arena(b), "(32):(1@laneid)"));
  tirx_unary(b, tirx_whole(b, i), TIRX_OP_EXP2_APPROX, tirx_whole(b, i), NULL);
  cr_assert_neq(tirx_builder_status(b), TIRX_OK);
  tirx_builder_destroy(b);
}
