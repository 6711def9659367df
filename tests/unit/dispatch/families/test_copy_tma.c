/* tirx_copy_async (TMA), bulk groups, clusters: the builder's checks, the generated source and
 * PTX for sm_90a (NVRTC, no GPU needed), and the launch plan's tensor maps and cluster checks. */
#include "../../helpers.h"
#include "builder/builder_internal.h"
#include "ir/kernel_abi.h"

TestSuite(tma_prim);

#define PTR(v) ((void *)(uintptr_t)(v))

/*
 * tile_copy: one CTA per 64x64 tile of a (M, K) bf16 matrix: a TMA load into a 128-byte
 * swizzled shared tile, completing on an mbarrier, then a TMA store of the tile to out.
 * split asks for the one-instruction split form (cols = 128: two slabs).
 */
static tirx_builder *tile_copy(int64_t cols, bool multicast) {
  tirx_builder *b = tirx_builder_create("tile_copy");
  tirx_expr *M = tirx_param_int(b, "M", TIRX_I32);
  tirx_expr *K = tirx_param_int(b, "K", TIRX_I32);
  tirx_tensor *a = tirx_param_tensor(b, "A", TIRX_BF16, TIRX_EXPRS(M, K), NULL);
  tirx_tensor *o = tirx_param_tensor(b, "out", TIRX_BF16, TIRX_EXPRS(M, K), NULL);
  tirx_set_block(b, 128, 1, 1);
  tirx_set_grid(b, tirx_ceildiv(b, K, tirx_int(b, cols)), tirx_ceildiv(b, M, tirx_int(b, 64)),
                NULL);
  if (multicast) tirx_set_cluster(b, 2, 1, 1);
  tirx_arena *ar = tirx_builder_arena(b);
  tirx_tensor *s = tirx_alloc_shared(b, "tile", TIRX_BF16, TIRX_DIMS(64, cols),
                                     tirx_layout_smem_tile(ar, 64, cols, 2, 128));
  tirx_tensor *bar = tirx_alloc_mbarrier(b, "bar", 1);
  tirx_region *bar0 = tirx_region_new(b, bar, TIRX_EXPRS(tirx_int(b, 0)), (int64_t[]){1});
  tirx_expr *r0 = tirx_mul(b, tirx_block_idx(b, 1), tirx_int(b, 64));
  tirx_expr *c0 = tirx_mul(b, tirx_block_idx(b, 0), tirx_int(b, cols));
  tirx_filter_begin(b, TIRX_AXIS_TID, 0, 1);
  tirx_tmap_prefetch(b, a);
  tirx_mbarrier_init(b, bar0, 1);
  tirx_fence_mbarrier_init(b);
  tirx_filter_end(b);
  tirx_sync_threads(b);
  tirx_filter_begin(b, TIRX_AXIS_TID, 0, 1);
  tirx_mbarrier_expect_tx(b, bar0, tirx_int(b, 64 * cols * 2));
  tirx_copy_async(b, tirx_whole(b, s),
                  tirx_region_new(b, a, TIRX_EXPRS(r0, c0), (int64_t[]){64, cols}),
                  &(tirx_config){.barrier = bar0,
                                 .multicast = multicast ? tirx_int(b, 3) : NULL,
                                 .shape = {cols == 128 ? 64 * cols : 0}});
  tirx_filter_end(b);
  tirx_mbarrier_wait(b, bar0, tirx_int(b, 0));
  tirx_filter_begin(b, TIRX_AXIS_TID, 0, 1);
  tirx_copy_async(b, tirx_region_new(b, o, TIRX_EXPRS(r0, c0), (int64_t[]){64, cols}),
                  tirx_whole(b, s), NULL);
  tirx_bulk_commit(b);
  tirx_bulk_wait(b, 0, false);
  tirx_filter_end(b);
  if (multicast) { /* cluster registers and the cluster barrier */
    tirx_if_begin(b, tirx_eq(b, tirx_add(b, tirx_cluster_ctarank(b), tirx_cluster_id(b, 1)),
                             tirx_int(b, -1)));
    tirx_store(b, o, TIRX_EXPRS(tirx_int(b, 0), tirx_int(b, 0)), tirx_load(b, s, TIRX_EXPRS(tirx_int(b, 0), tirx_int(b, 0))));
    tirx_if_end(b);
    tirx_cluster_sync(b);
  }
  return b;
}

static tirx_kernel *build(tirx_builder *b) {
  tirx_kernel *k = NULL;
  cr_assert_eq(tirx_kernel_build(b, &k), TIRX_OK, "%s", tirx_builder_error(b));
  return k;
}

static void has(const char *text, const char *what) {
  cr_assert_not_null(strstr(text, what), "'%s' not found in:\n%s", what, text);
}

Test(tma_prim, source_declares_tensor_maps_and_issues_tma) {
  tirx_builder *b = tile_copy(64, false);
  tirx_kernel *k = build(b);
  const char *src = tirx_kernel_source(k);
  has(src, "const __grid_constant__ tirx_tmap A_tmap, const __grid_constant__ tirx_tmap "
           "out_tmap) {");
  has(src, "tirx_tmap_prefetch(&A_tmap);");
  has(src, "tirx_mbar_init(&bar[0], 1);");
  has(src, "tirx_fence_mbarrier_init();");
  has(src, "tirx_mbar_expect_tx(&bar[0], 8192LL);");
  has(src, "tirx_tma_load_2d(&tile[tirx_swizzle(0, 3, 2)], &A_tmap, &bar[0], ((int)blockIdx.x "
           "* 64), ((int)blockIdx.y * 64));");
  has(src, "tirx_mbar_wait(&bar[0], 0LL);");
  has(src, "tirx_tma_store_2d(&out_tmap, &tile[tirx_swizzle(0, 3, 2)], ((int)blockIdx.x * 64), "
           "((int)blockIdx.y * 64));");
  has(src, "tirx_bulk_commit();");
  has(src, "tirx_bulk_wait<0, 0>();");
  const char *rep = tirx_kernel_dispatch_report(k);
  has(rep, "[tile_copy:1] copy_async(arch=sm_90, roles=global->shared, team=cta) -> "
           "copy_async.tma box=4096");
  has(rep, "[tile_copy:2] copy_async(arch=sm_90, roles=shared->global, team=cta) -> "
           "copy_async.tma box=4096");
  has(tirx_kernel_ir_str(k), "tma_load tile[0, 0] <- tmap0(");
  /* The kernel records both maps: {K, M} with 64x64 boxes, 128-byte swizzle. */
  cr_assert_eq(k->ntmaps, 2);
  cr_assert_eq(k->tmaps[0].rank, 2);
  cr_assert_eq(k->tmaps[0].swizzle, 128);
  cr_assert_eq(k->tmaps[0].d[0].dim, 1);
  cr_assert_eq(k->tmaps[0].d[0].box, 64);
  cr_assert_eq(k->tmaps[0].d[1].dim, 0);
  cr_assert_eq(k->tmaps[0].param, 2);
  cr_assert_eq(k->tmaps[1].param, 3);
  /* The TMA store's tensor is written (a read-only DLPack tensor is refused for it), the
   * load's only read. */
  cr_assert_eq(k->params[2].writes, TIRX__KP_WRITES_NO);
  cr_assert_eq(k->params[3].writes, TIRX__KP_WRITES_YES);
  tirx_kernel_release(k);
  tirx_builder_destroy(b);
}

/* The PTX of the kernel for sm_90a contains the TMA instructions (NVRTC runs without a GPU). */
Test(tma_prim, ptx_for_sm_90a_contains_cp_async_bulk_tensor) {
  tirx_runtime *rt = NULL;
  cr_assert_eq(tirx_runtime_create(&(tirx_runtime_options){.compile_only = true}, &rt), TIRX_OK,
               "%s", tirx_last_error());
  for (int v = 0; v < 3; v++) {
    tirx_builder *b = tile_copy(v == 1 ? 128 : 64, v == 2);
    tirx_kernel *k = build(b);
    tirx_compiled *c = NULL;
    cr_assert_eq(tirx_compile(rt, k, "sm_90a", &c), TIRX_OK, "%s", tirx_last_error());
    const char *ptx = tirx_compiled_ptx(c);
    has(ptx, v == 1 ? "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                    : "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes");
    has(ptx, "cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group");
    has(ptx, "cp.async.bulk.commit_group");
    has(ptx, "cp.async.bulk.wait_group 0");
    has(ptx, "prefetch.tensormap");
    has(ptx, "mbarrier.try_wait.parity.shared::cta.b64");
    has(ptx, ".param .align 64 .b8 tile_copy_param_4[128]");
    if (v == 2) {
      has(ptx, ".multicast::cluster");
      has(ptx, "%cluster_ctarank");
      has(ptx, "%clusterid.y");
      has(ptx, "barrier.cluster.arrive.release.aligned");
    }
    if (v == 1) has(tirx_kernel_dispatch_report(k), "copy_async.tma box=8192");
    tirx_compiled_destroy(c);
    tirx_kernel_release(k);
    tirx_builder_destroy(b);
  }
  tirx_runtime_destroy(rt);
}

/* A tensor argument; its shape lives in one of a few static slots (tirx_arg keeps the
 * pointer). */
static tirx_arg targ(void *p, int64_t rows, int64_t cols, const int64_t *strides) {
  static int64_t shapes[8][2];
  static int next;
  int64_t *s = shapes[next++ % 8];
  s[0] = rows;
  s[1] = cols;
  return tirx_arg_tensor(p, TIRX_BF16, 2, s, strides);
}

Test(tma_prim, plan_fills_tensor_map_requests) {
  tirx_builder *b = tile_copy(128, false);
  tirx_kernel *k = build(b);
  tirx__launch_plan *P = malloc(sizeof *P);
  tirx_arg args[4] = {tirx_arg_i32(1000), tirx_arg_i32(4096), targ(PTR(0x10000), 1000, 4096, NULL),
                      targ(PTR(0x20000), 1000, 4096, NULL)};
  cr_assert_eq(tirx__kernel_plan(k, "tirx_launch", args, 4, P), TIRX_OK, "%s", tirx_last_error());
  cr_assert_eq(P->ntmaps, 2);
  const tirx__tmap_request *q = &P->tmaps[0];
  cr_assert_eq(q->rank, 3); /* the split form: {64, M, K/64} */
  cr_assert_eq(q->dim[0], 64);
  cr_assert_eq(q->dim[1], 1000);
  cr_assert_eq(q->dim[2], 64);
  cr_assert_eq(q->stride[0], 8192);
  cr_assert_eq(q->stride[1], 128);
  cr_assert_eq(q->box[0], 64);
  cr_assert_eq(q->box[1], 64);
  cr_assert_eq(q->box[2], 2);
  cr_assert_eq(q->swizzle, 128);
  cr_assert_eq(q->dtype, TIRX_BF16);
  cr_assert_eq(q->offset % 64, 0);
  cr_assert_eq(q->data, PTR(0x10000));
  cr_assert_eq(P->tmaps[1].rank, 2); /* the store: the loop form, {K, M} */
  cr_assert_eq(P->tmaps[1].dim[0], 4096);
  cr_assert_eq((unsigned char *)P->params[4], P->storage + q->offset);
  cr_assert_eq(P->cluster[0], 0);

  /* Launch-time errors, with exact messages. */
  args[2] = targ(PTR(0x10008), 1000, 4096, NULL);
  expect_error(tirx__kernel_plan(k, "tirx_launch", args, 4, P), TIRX_E_LAUNCH_ARG,
               "tirx_launch: argument 2 (A): data 0x10008 is not 16-byte aligned: a TMA tensor "
               "map needs it");
  args[1] = tirx_arg_i32(4104);
  args[2] = targ(PTR(0x10000), 1000, 4104, NULL);
  args[3] = targ(PTR(0x20000), 1000, 4104, NULL);
  expect_error(tirx__kernel_plan(k, "tirx_launch", args, 4, P), TIRX_E_LAUNCH_ARG,
               "tirx_launch: argument 2 (A): shape[1] is 4104, not a multiple of 64: the split "
               "TMA tensor map of this tensor needs it (or use the loop form)");
  args[1] = tirx_arg_i32(4100);
  args[2] = targ(PTR(0x10000), 1000, 4100, NULL);
  args[3] = targ(PTR(0x20000), 1000, 4100, NULL);
  tirx_kernel_release(k);
  tirx_builder_destroy(b);
  b = tile_copy(64, false);
  k = build(b);
  expect_error(tirx__kernel_plan(k, "tirx_launch", args, 4, P), TIRX_E_LAUNCH_ARG,
               "tirx_launch: argument 2 (A): stride[0] is 4100 elements (8200 bytes): TMA needs "
               "strides that are positive multiples of 16 bytes below 2^40");
  /* One row: its stride is never used, however large (one whose bytes overflow int64 was
   * refused as "(-1 bytes)" where a smaller bad one passed). */
  args[0] = tirx_arg_i32(1);
  args[1] = tirx_arg_i32(4096);
  args[2] = targ(PTR(0x10000), 1, 4096, (const int64_t[]){INT64_C(1) << 62, 1});
  args[3] = targ(PTR(0x20000), 1, 4096, NULL);
  cr_assert_eq(tirx__kernel_plan(k, "tirx_launch", args, 4, P), TIRX_OK, "%s", tirx_last_error());
  /* One row of 77 elements: loading it is fine (its tail is zero-filled), but a TMA store
   * would write the rest of the last 16-byte piece, past the tensor: refused. */
  args[0] = tirx_arg_i32(1);
  args[1] = tirx_arg_i32(77);
  args[2] = targ(PTR(0x10000), 1, 77, NULL);
  args[3] = targ(PTR(0x20000), 1, 77, NULL);
  expect_error(tirx__kernel_plan(k, "tirx_launch", args, 4, P), TIRX_E_LAUNCH_ARG,
               "tirx_launch: argument 3 (out): shape[1] is 77 (154 bytes): a TMA store writes "
               "the whole 16-byte piece that holds a row's last element, past the tensor's end, "
               "so it needs an innermost extent that is a multiple of 16 bytes");
  args[1] = tirx_arg_i32(80);
  args[2] = targ(PTR(0x10000), 1, 80, NULL);
  args[3] = targ(PTR(0x20000), 1, 80, NULL);
  cr_assert_eq(tirx__kernel_plan(k, "tirx_launch", args, 4, P), TIRX_OK, "%s", tirx_last_error());
  free(P);
  tirx_kernel_release(k);
  tirx_builder_destroy(b);
}

Test(tma_prim, cluster_grid_must_be_a_multiple) {
  tirx_builder *b = tile_copy(64, true);
  tirx_kernel *k = build(b);
  has(tirx_kernel_source(k), "tirx_tma_load_mc_2d(&tile[tirx_swizzle(0, 3, 2)], &A_tmap, "
                             "&bar[0], (unsigned short)(3LL), ");
  cr_assert_eq(k->cluster[0], 2);
  tirx__launch_plan *P = malloc(sizeof *P);
  tirx_arg args[4] = {tirx_arg_i32(128), tirx_arg_i32(192), targ(PTR(0x10000), 128, 192, NULL),
                      targ(PTR(0x20000), 128, 192, NULL)};
  expect_error(tirx__kernel_plan(k, "tirx_launch", args, 4, P), TIRX_E_LAUNCH_ARG,
               "tirx_launch: grid x is 3, not a multiple of the cluster's 2 (tirx_set_cluster)");
  args[1] = tirx_arg_i32(256);
  args[2] = targ(PTR(0x10000), 128, 256, NULL);
  args[3] = targ(PTR(0x20000), 128, 256, NULL);
  cr_assert_eq(tirx__kernel_plan(k, "tirx_launch", args, 4, P), TIRX_OK, "%s", tirx_last_error());
  cr_assert_eq(P->cluster[0], 2);
  cr_assert_eq(P->cluster[1], 1);
  free(P);
  tirx_kernel_release(k);
  tirx_builder_destroy(b);
}

/* Every builder error of the TMA API, with its message. */
Test(tma_prim, builder_errors) {
  static const struct {
    int which;
    tirx_status st;
    const char *msg;
  } cases[] = {
      {0, TIRX_E_INVALID_ARG, "tirx_copy_async: cfg->multicast is set without cfg->barrier: a "
                              "multicast load is a TMA load, which completes on an mbarrier"},
      {1, TIRX_E_INVALID_ARG, "tirx_copy_async: cfg->barrier is set: only a load (global -> "
                              "shared) takes a barrier or a multicast mask (a store completes "
                              "in bulk groups: tirx_bulk_commit, tirx_bulk_wait)"},
      {2, TIRX_E_INVALID_ARG, "tirx_copy_async: cfg->barrier is not one element of a shared "
                              "i64 tensor (an mbarrier)"},
      {3, TIRX_E_TYPE, "tirx_copy_async: cfg->multicast has dtype f32, expected an integer"},
      {4, TIRX_E_INVALID_ARG, "tirx_bulk_wait: n is 64, expected 0 to 63"},
      {5, TIRX_E_INVALID_ARG, "tirx_set_cluster: 4 x 4 x 1 CTAs, expected at most 8 (the "
                              "portable cluster size)"},
      {6, TIRX_E_INVALID_ARG, "tirx_set_cluster: y is 0, expected 1 to 8"},
      {7, TIRX_E_INVALID_ARG, "tirx_tmap_prefetch: tile is not a global tensor parameter"},
      {8, TIRX_E_TYPE, "tirx_copy_async: src has dtype f32, dst bf16: asynchronous copies do "
                       "not convert"},
      {9, TIRX_E_INVALID_ARG, "tirx_cluster_id: dim is 3, expected 0, 1 or 2"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    tirx_builder *b = tirx_builder_create("bad");
    tirx_expr *M = tirx_param_int(b, "M", TIRX_I32);
    tirx_tensor *a = tirx_param_tensor(b, "A", TIRX_BF16, TIRX_EXPRS(M, tirx_int(b, 64)), NULL);
    tirx_tensor *f = tirx_param_tensor(b, "F", TIRX_F32, TIRX_EXPRS(M, tirx_int(b, 64)), NULL);
    tirx_set_block(b, 32, 1, 1);
    tirx_tensor *s = tirx_alloc_shared(b, "tile", TIRX_BF16, TIRX_DIMS(8, 64), NULL);
    tirx_tensor *bar = tirx_alloc_shared(b, "bar", TIRX_I64, TIRX_DIMS(2), NULL);
    tirx_region *ga = tirx_region_new(b, a, TIRX_EXPRS(tirx_int(b, 0), tirx_int(b, 0)),
                                      (int64_t[]){8, 64});
    tirx_region *bar0 = tirx_region_new(b, bar, TIRX_EXPRS(tirx_int(b, 0)), (int64_t[]){1});
    tirx_region *bar2 = tirx_region_new(b, bar, TIRX_EXPRS(tirx_int(b, 0)), (int64_t[]){2});
    switch (cases[i].which) {
    case 0:
      tirx_copy_async(b, tirx_whole(b, s), ga, &(tirx_config){.multicast = tirx_int(b, 1)});
      break;
    case 1: tirx_copy_async(b, ga, tirx_whole(b, s), &(tirx_config){.barrier = bar0}); break;
    case 2: tirx_copy_async(b, tirx_whole(b, s), ga, &(tirx_config){.barrier = bar2}); break;
    case 3:
      tirx_copy_async(b, tirx_whole(b, s), ga,
                      &(tirx_config){.barrier = bar0, .multicast = tirx_float(b, 1, TIRX_F32)});
      break;
    case 4: tirx_bulk_wait(b, 64, true); break;
    case 5: tirx_set_cluster(b, 4, 4, 1); break;
    case 6: tirx_set_cluster(b, 2, 0, 1); break;
    case 7: tirx_tmap_prefetch(b, s); break;
    case 8:
      tirx_copy_async(b, tirx_whole(b, s),
                      tirx_region_new(b, f, TIRX_EXPRS(tirx_int(b, 0), tirx_int(b, 0)),
                                      (int64_t[]){8, 64}),
                      &(tirx_config){.barrier = bar0});
      break;
    case 9: tirx_cluster_id(b, 3); break;
    }
    cr_assert_eq(tirx_builder_status(b), cases[i].st, "case %zu: %s", i, tirx_builder_error(b));
    cr_assert_str_eq(tirx_builder_error(b), cases[i].msg);
    tirx_builder_destroy(b);
  }
}

/* Build-time errors: the scope (no one-thread filter) and multicast without a cluster. */
Test(tma_prim, build_errors_name_the_rule_and_reason) {
  for (int which = 0; which < 2; which++) {
    tirx_builder *b = tirx_builder_create("bad");
    tirx_expr *M = tirx_param_int(b, "M", TIRX_I32);
    tirx_tensor *a = tirx_param_tensor(b, "A", TIRX_BF16, TIRX_EXPRS(M, tirx_int(b, 64)), NULL);
    tirx_set_block(b, 32, 1, 1);
    tirx_tensor *s = tirx_alloc_shared(b, "tile", TIRX_BF16, TIRX_DIMS(8, 64), NULL);
    tirx_tensor *bar = tirx_alloc_shared(b, "bar", TIRX_I64, TIRX_DIMS(1), NULL);
    tirx_region *bar0 = tirx_region_new(b, bar, TIRX_EXPRS(tirx_int(b, 0)), (int64_t[]){1});
    if (which) tirx_filter_begin(b, TIRX_AXIS_TID, 0, 1);
    tirx_copy_async(b, tirx_whole(b, s),
                    tirx_region_new(b, a, TIRX_EXPRS(tirx_int(b, 0), tirx_int(b, 0)),
                                    (int64_t[]){8, 64}),
                    &(tirx_config){.barrier = bar0, .multicast = which ? tirx_int(b, 1) : NULL});
    if (which) tirx_filter_end(b);
    tirx_kernel *k = NULL;
    tirx_status st = tirx_kernel_build(b, &k);
    cr_assert_null(k);
    if (which == 0) {
      cr_assert_eq(st, TIRX_E_NO_RULE);
      cr_assert_str_eq(tirx_builder_error(b),
                       "tirx_kernel_build: [bad:1] no legal rule for copy_async(arch=sm_90, "
                       "roles=global->shared, team=cta): copy_async.tma: the call has 32 active "
                       "threads: one thread issues a TMA copy (wrap it in tirx_filter_begin(b, "
                       "TIRX_AXIS_TID, t, t + 1)); copy_async.cp_async: cfg->barrier is set: a "
                       "cp.async load completes in cp.async groups (tirx_cp_async_commit, "
                       "tirx_cp_async_wait), not on an mbarrier");
    } else {
      cr_assert_eq(st, TIRX_E_NOT_SUPPORTED);
      cr_assert_str_eq(tirx_builder_error(b),
                       "tirx_kernel_build: [bad:1] copy_async.tma: a multicast TMA load needs a "
                       "cluster launch (tirx_set_cluster)");
    }
    tirx_builder_destroy(b);
  }
}

/* A row of 5000 bf16 into shared memory: the loop form's boxes (200 elements, the largest
 * divisor of 5000 in whole 16-byte chunks) would start 400 bytes apart, off TMA's 128-byte
 * alignment, so only the split form (one 200 x 25 box) is legal, and only when the width is
 * known at build time; otherwise the loop form's reason is reported. */
static tirx_builder *row_copy(bool width_known) {
  tirx_builder *b = tirx_builder_create("row_copy");
  tirx_expr *M = tirx_param_int(b, "M", TIRX_I32);
  tirx_expr *W = width_known ? tirx_int(b, 5000) : tirx_param_int(b, "W", TIRX_I32);
  tirx_tensor *a = tirx_param_tensor(b, "A", TIRX_BF16, TIRX_EXPRS(M, W), NULL);
  tirx_set_block(b, 32, 1, 1);
  tirx_tensor *s = tirx_alloc_shared(b, "row", TIRX_BF16, TIRX_DIMS(1, 5000), NULL);
  tirx_tensor *bar = tirx_alloc_shared(b, "bar", TIRX_I64, TIRX_DIMS(1), NULL);
  tirx_region *bar0 = tirx_region_new(b, bar, TIRX_EXPRS(tirx_int(b, 0)), (int64_t[]){1});
  tirx_filter_begin(b, TIRX_AXIS_TID, 0, 1);
  tirx_copy_async(b, tirx_whole(b, s),
                  tirx_region_new(b, a, TIRX_EXPRS(tirx_block_idx(b, 0), tirx_int(b, 0)),
                                  (int64_t[]){1, 5000}),
                  &(tirx_config){.barrier = bar0});
  tirx_filter_end(b);
  return b;
}

Test(tma_prim, a_split_form_is_chosen_where_the_loop_form_is_misaligned) {
  tirx_builder *b = row_copy(true);
  tirx_kernel *k = build(b);
  has(tirx_kernel_dispatch_report(k), "copy_async.tma box=5000\n");
  has(tirx_kernel_source(k), "tirx_tma_load_3d(");
  tirx_kernel_release(k);
  tirx_builder_destroy(b);

  b = row_copy(false);
  k = NULL;
  cr_assert_eq(tirx_kernel_build(b, &k), TIRX_E_NO_RULE);
  cr_assert_null(k);
  has(tirx_builder_error(b), "copy_async.tma: dst's loop over dim 1 steps 400 bytes in shared "
                             "memory: each TMA box needs 128-byte alignment (the split form, "
                             "one box, needs the split dimension's global extent known at "
                             "build time)");
  tirx_builder_destroy(b);
}

/* A 64x64 TMA load with cache hint `hint` (and a multicast mask when asked), then the tile
 * back to out by TMA with hint `store_hint`. */
static tirx_builder *hinted_copy(tirx_hint hint, tirx_hint store_hint, bool multicast) {
  tirx_builder *b = tirx_builder_create("hinted");
  tirx_tensor *a = tirx_param_tensor(b, "A", TIRX_BF16, TIRX_EXPRS(tirx_int(b, 64), tirx_int(b, 64)), NULL);
  tirx_tensor *o = tirx_param_tensor(b, "out", TIRX_BF16, TIRX_EXPRS(tirx_int(b, 64), tirx_int(b, 64)), NULL);
  tirx_set_block(b, 128, 1, 1);
  if (multicast) tirx_set_cluster(b, 2, 1, 1);
  tirx_tensor *s = tirx_alloc_shared(b, "tile", TIRX_BF16, TIRX_DIMS(64, 64),
                                     tirx_layout_smem_tile(tirx_builder_arena(b), 64, 64, 2, 128));
  tirx_tensor *bar = tirx_alloc_mbarrier(b, "bar", 1);
  tirx_region *bar0 = tirx_region_new(b, bar, TIRX_EXPRS(tirx_int(b, 0)), (int64_t[]){1});
  tirx_filter_begin(b, TIRX_AXIS_TID, 0, 1);
  tirx_mbarrier_init(b, bar0, 1);
  tirx_fence_mbarrier_init(b);
  tirx_mbarrier_expect_tx(b, bar0, tirx_int(b, 8192));
  tirx_copy_async(b, tirx_whole(b, s), tirx_whole(b, a),
                  &(tirx_config){.hint = hint, .barrier = bar0,
                                 .multicast = multicast ? tirx_int(b, 3) : NULL});
  tirx_filter_end(b);
  tirx_mbarrier_wait(b, bar0, tirx_int(b, 0));
  tirx_filter_begin(b, TIRX_AXIS_TID, 0, 1);
  tirx_copy_async(b, tirx_whole(b, o), tirx_whole(b, s), &(tirx_config){.hint = store_hint});
  tirx_bulk_commit(b);
  tirx_bulk_wait(b, 0, false);
  tirx_filter_end(b);
  return b;
}

/* cfg->hint TIRX_HINT_STREAM on a TMA load: an L2 evict_first policy on the instruction, whose
 * helpers only such kernels carry; other hints, hints on stores and with multicast refused. */
Test(tma_prim, a_stream_hint_gives_loads_an_l2_evict_first_policy) {
  tirx_builder *b = hinted_copy(TIRX_HINT_STREAM, TIRX_HINT_NONE, false);
  tirx_kernel *k = build(b);
  const char *src = tirx_kernel_source(k);
  has(src, "tirx_tma_load_ef_2d(&tile[tirx_swizzle(0, 3, 2)], &A_tmap, &bar[0], 0, 0);");
  has(src, "createpolicy.fractional.L2::evict_first.b64 %0, 1.0;");
  has(tirx_kernel_ir_str(k), "tma_load tile[0, 0] <- tmap0(0, 0) bar bar[0] evict_first");
  tirx_runtime *rt = NULL;
  cr_assert_eq(tirx_runtime_create(&(tirx_runtime_options){.compile_only = true}, &rt), TIRX_OK,
               "%s", tirx_last_error());
  tirx_compiled *c = NULL;
  cr_assert_eq(tirx_compile(rt, k, "sm_90a", &c), TIRX_OK, "%s", tirx_last_error());
  has(tirx_compiled_ptx(c), "mbarrier::complete_tx::bytes.L2::cache_hint");
  tirx_compiled_destroy(c);
  tirx_runtime_destroy(rt);
  tirx_kernel_release(k);
  tirx_builder_destroy(b);
  /* without the hint: neither the helpers nor the policy */
  b = hinted_copy(TIRX_HINT_NONE, TIRX_HINT_NONE, false);
  k = build(b);
  cr_assert_null(strstr(tirx_kernel_source(k), "evict_first"));
  tirx_kernel_release(k);
  tirx_builder_destroy(b);
  static const char *const want[3] = {
      "tirx_kernel_build: [hinted:2] no legal rule for copy_async(arch=sm_90, roles=shared->global, "
      "team=cta): copy_async.tma: a TMA copy takes cache hint .cs (TIRX_HINT_STREAM) on loads "
      "only (an L2 evict_first policy)",
      "tirx_kernel_build: [hinted:1] no legal rule for copy_async(arch=sm_90, roles=global->shared, "
      "team=cta): copy_async.tma: a TMA copy takes cache hint .cs (TIRX_HINT_STREAM) on loads "
      "only (an L2 evict_first policy); copy_async.cp_async: cache hint .lu is not supported",
      "tirx_kernel_build: [hinted:1] copy_async.tma: a multicast TMA load takes no cache hint (no "
      "instruction has both)"};
  for (int i = 0; i < 3; i++) {
    b = i == 0   ? hinted_copy(TIRX_HINT_NONE, TIRX_HINT_STREAM, false)
        : i == 1 ? hinted_copy(TIRX_HINT_LAST_USE, TIRX_HINT_NONE, false)
                 : hinted_copy(TIRX_HINT_STREAM, TIRX_HINT_NONE, true);
    k = NULL;
    cr_assert_neq(tirx_kernel_build(b, &k), TIRX_OK);
    cr_assert_null(k);
    cr_assert_str_eq(tirx_builder_error(b), want[i]);
    tirx_builder_destroy(b);
  }
}

/* A swizzled view must start at a multiple of 1024 bytes of shared memory, not only of its
 * base: TMA and wgmma swizzle by the shared address, tirx_swizzle by the offset in the tensor.
 * A 128-byte-swizzled view at byte 0 of an unswizzled buffer placed at byte 128 was accepted,
 * and a TMA load into it was lowered (copy_async.tma box=4096) with the tile's reads one
 * 16-byte chunk phase off the hardware's pattern. Placed at byte 1024 it builds as before. */
static tirx_status tma_into_view(int64_t pad_floats, char *err, size_t cap, char *report,
                                 size_t rcap) {
  tirx_builder *b = tirx_builder_create("tv");
  tirx_expr *M = tirx_param_int(b, "M", TIRX_I32);
  tirx_tensor *a = tirx_param_tensor(b, "A", TIRX_BF16, TIRX_EXPRS(M, tirx_int(b, 64)), NULL);
  tirx_tensor *o = tirx_param_tensor(b, "out", TIRX_F32, TIRX_EXPRS(tirx_int(b, 1)), NULL);
  tirx_set_block(b, 128, 1, 1);
  tirx_arena *ar = tirx_builder_arena(b);
  tirx_tensor *pad = tirx_alloc_shared(b, "pad", TIRX_F32, TIRX_DIMS(pad_floats), NULL);
  tirx_tensor *raw = tirx_alloc_shared(b, "raw", TIRX_BF16, TIRX_DIMS(64 * 64), NULL);
  tirx_tensor *s = tirx_alloc_shared_view(b, "tile", raw, 0, TIRX_BF16, 2, (int64_t[]){64, 64},
                                          tirx_layout_smem_tile(ar, 64, 64, 2, 128));
  tirx_tensor *bar = tirx_alloc_mbarrier(b, "bar", 1);
  tirx_region *bar0 = tirx_region_new(b, bar, TIRX_EXPRS(tirx_int(b, 0)), (int64_t[]){1});
  tirx_filter_begin(b, TIRX_AXIS_TID, 0, 1);
  tirx_mbarrier_init(b, bar0, 1);
  tirx_fence_mbarrier_init(b);
  tirx_filter_end(b);
  tirx_sync_threads(b);
  tirx_filter_begin(b, TIRX_AXIS_TID, 0, 1);
  tirx_mbarrier_expect_tx(b, bar0, tirx_int(b, 64 * 64 * 2));
  tirx_copy_async(b, s ? tirx_whole(b, s) : NULL,
                  tirx_region_new(b, a, TIRX_EXPRS(tirx_int(b, 0), tirx_int(b, 0)),
                                  (int64_t[]){64, 64}),
                  &(tirx_config){.barrier = bar0});
  tirx_filter_end(b);
  tirx_mbarrier_wait(b, bar0, tirx_int(b, 0));
  tirx_filter_begin(b, TIRX_AXIS_TID, 0, 1);
  if (s)
    tirx_store(b, o, TIRX_EXPRS(tirx_int(b, 0)),
               tirx_cast(b, tirx_load(b, s, TIRX_EXPRS(tirx_int(b, 0), tirx_int(b, 8))), TIRX_F32));
  tirx_store(b, pad, TIRX_EXPRS(tirx_int(b, 0)), tirx_float(b, 0, TIRX_F32));
  tirx_filter_end(b);
  tirx_kernel *k = NULL;
  tirx_status st = tirx_kernel_build(b, &k);
  snprintf(err, cap, "%s", st ? tirx_builder_error(b) : "");
  snprintf(report, rcap, "%s", k ? tirx_kernel_dispatch_report(k) : "");
  if (k) tirx_kernel_release(k);
  tirx_builder_destroy(b);
  return st;
}

Test(tma_prim, a_swizzled_view_must_start_on_a_1024_byte_boundary) {
  char err[512], report[512];
  cr_assert_neq(tma_into_view(32, err, sizeof err, report, sizeof report), TIRX_OK, "%s", report);
  cr_assert_str_eq(err, "tirx_alloc_shared_view: view \"tile\" would start at byte 128 of shared "
                        "memory (byte_offset 0 of \"raw\", which starts at byte 128): a swizzled "
                        "view must start at a multiple of 1024; allocate raw with a swizzled "
                        "layout or place the view at a 1024-byte boundary");
  cr_assert_eq(tma_into_view(256, err, sizeof err, report, sizeof report), TIRX_OK, "%s", err);
  cr_assert_str_eq(report, "[tv:1] copy_async(arch=sm_90, roles=global->shared, team=cta) -> "
                           "copy_async.tma box=4096\n");
}
