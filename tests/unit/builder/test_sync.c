/* The synchronisation statements (src/builder/sync.c): generated code, NVRTC for sm_90a (the
 * PTX holds each instruction), the printed IR, and every build-time error with its message. */
#include <string.h>

#include "../helpers.h"
#include "builder/builder_internal.h"
#include "ir/kernel_abi.h"
#include "mma_tiles.h"

static void assert_has(const char *text, const char *want) {
  cr_assert_not_null(strstr(text, want), "no '%s' in:\n%s", want, text);
}

static tirx_builder *fresh(int threads) {
  tirx_builder *b = tirx_builder_create("k");
  if (threads) tirx_set_block(b, threads, 1, 1);
  return b;
}

/* The builder's first error is (st, msg). */
static void expect_builder(tirx_builder *b, tirx_status st, const char *msg) {
  cr_assert_eq(tirx_builder_status(b), st, "status %s, expected %s (%s)",
               tirx_status_name(tirx_builder_status(b)), tirx_status_name(st),
               tirx_builder_error(b));
  cr_assert_str_eq(tirx_builder_error(b), msg);
  tirx_builder_destroy(b);
}

static tirx_region *one(tirx_builder *b, tirx_tensor *t, tirx_expr *i) {
  return tirx_region_new(b, t, 1, (tirx_expr *[]){i}, (int64_t[]){1});
}

Test(sync, ring_compiles_with_every_instruction, .timeout = 300) {
  char err[1024] = "";
  tirx_kernel *k = example_mbarrier_ring(5, err, sizeof err);
  cr_assert_not_null(k, "%s", err);
  const char *src = tirx_kernel_source(k), *ir = tirx_kernel_ir_str(k);
  /* setmaxnreg: one block per SM at entry, else ptxas ignores it. */
  assert_has(src, "__launch_bounds__(256, 1) mbarrier_ring(");
  assert_has(src, "tirx_mbar_init(&full[0], 1);");
  assert_has(src, "tirx_mbar_wait(&empty[s], (ph ^ 1));");
  assert_has(src, "tirx_mbar_expect_tx(&full[s], 0LL);");
  assert_has(src, "tirx_setmaxnreg_dec<40>();");
  assert_has(src, "tirx_setmaxnreg_inc<232>();");
  assert_has(src, "tirx_named_bar_sync(1, 256);");
  assert_has(src, "if (tirx_elect_one()) {");
  assert_has(ir, "mbarrier_wait(empty[s], ph ^ 1)\n");
  assert_has(ir, "setmaxnreg.dec 40\n");
  assert_has(ir, "named_barrier_sync(1, 256)\n");
  assert_has(ir, "info[0] = cluster_ctarank\n");
  tirx_runtime *rt = NULL;
  cr_assert_eq(tirx_runtime_create(&(tirx_runtime_options){.compile_only = true}, &rt), TIRX_OK);
  tirx_compiled *c = NULL;
  cr_assert_eq(tirx_compile(rt, k, "sm_90a", &c), TIRX_OK, "%s\n%s", tirx_last_error(), src);
  const char *ptx = tirx_compiled_ptx(c);
  static const char *const want[] = {
      "mbarrier.init.shared::cta.b64",        "mbarrier.try_wait.parity.shared::cta.b64",
      "mbarrier.arrive.expect_tx.release.cta", "mbarrier.arrive.release.cta.shared::cta.b64",
      "fence.mbarrier_init.release.cluster",   "setmaxnreg.dec.sync.aligned.u32 40",
      "setmaxnreg.inc.sync.aligned.u32 232",   "elect.sync",
      "bar.sync",                              "%cluster_ctarank",
      ".maxntid 256, 1, 1",                    ".minnctapersm 1"};
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) assert_has(ptx, want[i]);
  tirx_compiled_destroy(c);
  tirx_runtime_destroy(rt);
  tirx_kernel_release(k);
}

Test(sync, cluster_fences_and_wgmma_groups_compile, .timeout = 300) {
  tirx_builder *b = fresh(128);
  tirx_tensor *bar = tirx_alloc_mbarrier(b, "bar", 4);
  tirx_tensor *out = tirx_param_tensor(b, "out", TIRX_I32, TIRX_EXPRS(tirx_int(b, 1)), NULL);
  tirx_expr *r = tirx_let(b, "r", tirx_cluster_ctarank(b));
  tirx_if_begin(b, tirx_eq(b, tirx_thread_linear(b), tirx_int(b, 0)));
  tirx_mbarrier_init(b, one(b, bar, tirx_int(b, 3)), 128);
  tirx_if_end(b);
  tirx_fence_proxy_async(b);
  tirx_cluster_sync(b);
  tirx_mbarrier_arrive_cluster(b, one(b, bar, tirx_int(b, 3)), r);
  tirx_mbarrier_wait(b, one(b, bar, tirx_int(b, 3)), tirx_int(b, 0));
  tirx_named_barrier_arrive(b, 2, 128);
  tirx_wgmma_fence(b);
  tirx_wgmma_commit(b);
  tirx_wgmma_wait(b, 1);
  tirx_store(b, out, TIRX_EXPRS(tirx_int(b, 0)), r);
  tirx_kernel *k = NULL;
  cr_assert_eq(tirx_kernel_build(b, &k), TIRX_OK, "%s", tirx_builder_error(b));
  tirx_builder_destroy(b);
  const char *src = tirx_kernel_source(k);
  assert_has(src, "__launch_bounds__(128) k("); /* no setmaxnreg: no minimum */
  assert_has(src, "tirx_mbar_arrive_cluster(&bar[3], r);");
  assert_has(src, "tirx_wgmma_wait<1>();");
  tirx_runtime *rt = NULL;
  cr_assert_eq(tirx_runtime_create(&(tirx_runtime_options){.compile_only = true}, &rt), TIRX_OK);
  tirx_compiled *c = NULL;
  cr_assert_eq(tirx_compile(rt, k, "sm_90a", &c), TIRX_OK, "%s\n%s", tirx_last_error(), src);
  const char *ptx = tirx_compiled_ptx(c);
  static const char *const want[] = {
      "mapa.shared::cluster.u32",          "mbarrier.arrive.shared::cluster.b64",
      "barrier.cluster.arrive.release",    "barrier.cluster.wait.acquire",
      "fence.proxy.async.shared::cta",     "bar.arrive",
      "wgmma.fence.sync.aligned",          "wgmma.commit_group.sync.aligned",
      "wgmma.wait_group.sync.aligned 1"};
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) assert_has(ptx, want[i]);
  tirx_compiled_destroy(c);
  tirx_runtime_destroy(rt);
  tirx_kernel_release(k);
}

Test(sync, kernels_without_them_keep_their_prelude) {
  tirx_builder *b = fresh(32);
  tirx_kernel *k = NULL;
  cr_assert_eq(tirx_kernel_build(b, &k), TIRX_OK, "%s", tirx_builder_error(b));
  tirx_builder_destroy(b);
  cr_assert_null(strstr(tirx_kernel_source(k), "tirx_mbar_wait"));
  tirx_kernel_release(k);
}

Test(sync, mbarrier_errors) {
  tirx_builder *b = fresh(128);
  tirx_alloc_mbarrier(b, "bar", 0);
  expect_builder(b, TIRX_E_INVALID_ARG, "tirx_alloc_mbarrier: n is 0, expected >= 1");

  b = fresh(128);
  tirx_tensor *bar = tirx_alloc_mbarrier(b, "bar", 2);
  tirx_mbarrier_init(b, one(b, bar, tirx_int(b, 0)), 0);
  expect_builder(b, TIRX_E_INVALID_ARG, "tirx_mbarrier_init: count is 0, expected 1 to 1048575");

  b = fresh(128);
  bar = tirx_alloc_mbarrier(b, "bar", 2);
  tirx_mbarrier_init(b, one(b, bar, tirx_int(b, 0)), 1 << 20);
  expect_builder(b, TIRX_E_INVALID_ARG,
                 "tirx_mbarrier_init: count is 1048576, expected 1 to 1048575");

  b = fresh(128);
  tirx_mbarrier_arrive(b, NULL);
  expect_builder(b, TIRX_E_NULL_ARG, "tirx_mbarrier_arrive: bar is NULL");

  b = fresh(128);
  tirx_mbarrier_arrive(b, tirx_broadcast(b, tirx_int(b, 1)));
  expect_builder(b, TIRX_E_INVALID_ARG,
                 "tirx_mbarrier_arrive: bar is a broadcast: expected a region of one mbarrier");

  b = fresh(128);
  tirx_tensor *f = tirx_alloc_shared(b, "f", TIRX_F32, TIRX_DIMS(4), NULL);
  tirx_mbarrier_arrive(b, one(b, f, tirx_int(b, 0)));
  expect_builder(b, TIRX_E_INVALID_ARG,
                 "tirx_mbarrier_arrive: bar is a region of f, a shared f32 tensor: expected an "
                 "element of a shared i64 tensor (tirx_alloc_mbarrier)");

  b = fresh(128);
  tirx_tensor *g = tirx_param_tensor(b, "g", TIRX_I64, TIRX_EXPRS(tirx_int(b, 4)), NULL);
  tirx_mbarrier_arrive(b, one(b, g, tirx_int(b, 0)));
  expect_builder(b, TIRX_E_INVALID_ARG,
                 "tirx_mbarrier_arrive: bar is a region of g, a global i64 tensor: expected an "
                 "element of a shared i64 tensor (tirx_alloc_mbarrier)");

  b = fresh(128);
  bar = tirx_alloc_mbarrier(b, "bar", 4);
  tirx_mbarrier_arrive(b, tirx_region_new(b, bar, TIRX_EXPRS(tirx_int(b, 0)), (int64_t[]){2}));
  expect_builder(b, TIRX_E_INVALID_ARG,
                 "tirx_mbarrier_arrive: bar has 2 elements of bar: expected exactly one mbarrier");

  b = fresh(128);
  bar = tirx_alloc_mbarrier(b, "bar", 4);
  tirx_mbarrier_wait(b, one(b, bar, tirx_int(b, 0)), tirx_bool(b, true));
  expect_builder(b, TIRX_E_TYPE, "tirx_mbarrier_wait: phase has dtype bool, expected an integer");

  b = fresh(128);
  bar = tirx_alloc_mbarrier(b, "bar", 4);
  tirx_mbarrier_wait(b, one(b, bar, tirx_int(b, 0)), NULL);
  expect_builder(b, TIRX_E_NULL_ARG, "tirx_mbarrier_wait: phase is NULL");

  b = fresh(128);
  bar = tirx_alloc_mbarrier(b, "bar", 4);
  tirx_mbarrier_expect_tx(b, one(b, bar, tirx_int(b, 0)), tirx_int(b, 1 << 20));
  expect_builder(b, TIRX_E_INVALID_ARG,
                 "tirx_mbarrier_expect_tx: bytes is 1048576, expected 0 to 1048575");

  b = fresh(128);
  bar = tirx_alloc_mbarrier(b, "bar", 4);
  tirx_mbarrier_expect_tx(b, one(b, bar, tirx_int(b, 0)), tirx_float(b, 1.0, TIRX_F32));
  expect_builder(b, TIRX_E_TYPE, "tirx_mbarrier_expect_tx: bytes has dtype f32, expected an integer");

  b = fresh(128);
  bar = tirx_alloc_mbarrier(b, "bar", 4);
  tirx_mbarrier_arrive_cluster(b, one(b, bar, tirx_int(b, 0)), tirx_int(b, 16));
  expect_builder(b, TIRX_E_INVALID_ARG,
                 "tirx_mbarrier_arrive_cluster: cta_rank is 16, expected 0 to 15");
}

Test(sync, warpgroup_statement_errors) {
  tirx_builder *b = fresh(128);
  tirx_setmaxnreg(b, 20, true);
  expect_builder(b, TIRX_E_INVALID_ARG,
                 "tirx_setmaxnreg: regs is 20, expected a multiple of 8 in [24, 256]");
  b = fresh(128);
  tirx_setmaxnreg(b, 236, true);
  expect_builder(b, TIRX_E_INVALID_ARG,
                 "tirx_setmaxnreg: regs is 236, expected a multiple of 8 in [24, 256]");
  b = fresh(128);
  tirx_setmaxnreg(b, 264, false);
  expect_builder(b, TIRX_E_INVALID_ARG,
                 "tirx_setmaxnreg: regs is 264, expected a multiple of 8 in [24, 256]");
  b = fresh(0);
  tirx_setmaxnreg(b, 40, false);
  expect_builder(b, TIRX_E_BUILD,
                 "tirx_setmaxnreg: the block size is not set (call tirx_set_block first)");
  b = fresh(96);
  tirx_setmaxnreg(b, 40, false);
  expect_builder(b, TIRX_E_SCOPE,
                 "tirx_setmaxnreg: the block has 96 threads: setmaxnreg needs whole warpgroups "
                 "(a multiple of 128)");
  b = fresh(256);
  tirx_filter_begin(b, TIRX_AXIS_WARPID, 0, 1);
  tirx_setmaxnreg(b, 40, false);
  expect_builder(b, TIRX_E_SCOPE,
                 "tirx_setmaxnreg: the active threads are not whole warpgroups: setmaxnreg is "
                 "executed by all 128 threads of a warpgroup");
  b = fresh(256);
  tirx_filter_begin(b, TIRX_AXIS_WARPID, 2, 6);
  tirx_wgmma_commit(b);
  expect_builder(b, TIRX_E_SCOPE,
                 "tirx_wgmma_commit: the active threads are not whole warpgroups: "
                 "wgmma.commit_group is executed by all 128 threads of a warpgroup");
  b = fresh(64);
  tirx_wgmma_fence(b);
  expect_builder(b, TIRX_E_SCOPE,
                 "tirx_wgmma_fence: the block has 64 threads: wgmma.fence needs whole warpgroups "
                 "(a multiple of 128)");
  b = fresh(128);
  tirx_wgmma_wait(b, 8);
  expect_builder(b, TIRX_E_INVALID_ARG, "tirx_wgmma_wait: n is 8, expected 0 to 7");
  b = fresh(128);
  tirx_wgmma_wait(b, -1);
  expect_builder(b, TIRX_E_INVALID_ARG, "tirx_wgmma_wait: n is -1, expected 0 to 7");
  /* A filter to whole warpgroups is fine. */
  b = fresh(256);
  tirx_filter_begin(b, TIRX_AXIS_WGID, 1, 2);
  tirx_setmaxnreg(b, 232, true);
  tirx_wgmma_wait(b, 0);
  tirx_filter_end(b);
  cr_assert_eq(tirx_builder_status(b), TIRX_OK, "%s", tirx_builder_error(b));
  tirx_builder_destroy(b);
}

Test(sync, named_barrier_errors) {
  tirx_builder *b = fresh(128);
  tirx_named_barrier_sync(b, 0, 128);
  expect_builder(b, TIRX_E_INVALID_ARG,
                 "tirx_named_barrier_sync: id is 0, expected 1 to 15 (0 is tirx_sync_threads's)");
  b = fresh(128);
  tirx_named_barrier_arrive(b, 16, 128);
  expect_builder(b, TIRX_E_INVALID_ARG,
                 "tirx_named_barrier_arrive: id is 16, expected 1 to 15 (0 is "
                 "tirx_sync_threads's)");
  b = fresh(128);
  tirx_named_barrier_sync(b, 1, 48);
  expect_builder(b, TIRX_E_INVALID_ARG,
                 "tirx_named_barrier_sync: nthreads is 48, expected a multiple of 32 in [32, "
                 "128] (the block size)");
  b = fresh(128);
  tirx_named_barrier_sync(b, 1, 256);
  expect_builder(b, TIRX_E_INVALID_ARG,
                 "tirx_named_barrier_sync: nthreads is 256, expected a multiple of 32 in [32, "
                 "128] (the block size)");
  b = fresh(0);
  tirx_named_barrier_sync(b, 1, 32);
  expect_builder(b, TIRX_E_BUILD,
                 "tirx_named_barrier_sync: the block size is not set (call tirx_set_block first)");
  /* NULL builders are reported, never dereferenced. */
  tirx_clear_error();
  tirx_fence_proxy_async(NULL);
  cr_assert_str_eq(tirx_last_error(), "tirx_fence_proxy_async: b is NULL");
  cr_assert_null(tirx_elect_one(NULL));
  cr_assert_str_eq(tirx_last_error(), "tirx_elect_one: b is NULL");
  cr_assert_null(tirx_cluster_ctarank(NULL));
  cr_assert_null(tirx_alloc_mbarrier(NULL, "x", 1));
}

/* Programmatic dependent launch: tirx_grid_dependency_wait and tirx_grid_launch_dependents emit
 * griddepcontrol (their helpers only in kernels that use them), the IR prints them, the wait
 * marks the kernel for the launch attribute (the plan's pdl) and the kernel needs sm_90; a
 * kernel without them is launched plainly. */
Test(sync, grid_dependency_control, .timeout = 300) {
  tirx_builder *b = fresh(128);
  tirx_tensor *out = tirx_param_tensor(b, "out", TIRX_F32, TIRX_EXPRS(tirx_int(b, 128)), NULL);
  tirx_set_grid(b, tirx_int(b, 1), NULL, NULL);
  tirx_grid_launch_dependents(b);
  tirx_grid_dependency_wait(b);
  tirx_store(b, out, TIRX_EXPRS(tirx_thread_linear(b)), tirx_float(b, 1.0, TIRX_F32));
  tirx_kernel *k = NULL;
  cr_assert_eq(tirx_kernel_build(b, &k), TIRX_OK, "%s", tirx_builder_error(b));
  tirx_builder_destroy(b);
  const char *src = tirx_kernel_source(k), *ir = tirx_kernel_ir_str(k);
  assert_has(src, "tirx_griddep_launch();\n");
  assert_has(src, "tirx_griddep_wait();\n");
  assert_has(src, "asm volatile(\"griddepcontrol.wait;\" ::: \"memory\");");
  assert_has(ir, "grid_launch_dependents()\n");
  assert_has(ir, "grid_dependency_wait()\n");
  cr_assert(k->pdl);
  tirx__launch_plan *P = malloc(sizeof *P);
  int64_t shape[1] = {128};
  tirx_arg args[1] = {tirx_arg_tensor((void *)(uintptr_t)0x10000, TIRX_F32, 1, shape, NULL)};
  cr_assert_eq(tirx__kernel_plan(k, "tirx_launch", args, 1, P), TIRX_OK, "%s", tirx_last_error());
  cr_assert(P->pdl);
  cr_assert_eq(P->cluster[0], 0);
  tirx_runtime *rt = NULL;
  cr_assert_eq(tirx_runtime_create(&(tirx_runtime_options){.compile_only = true}, &rt), TIRX_OK);
  tirx_compiled *c = NULL;
  cr_assert_eq(tirx_compile(rt, k, "sm_90", &c), TIRX_OK, "%s\n%s", tirx_last_error(), src);
  assert_has(tirx_compiled_ptx(c), "griddepcontrol.wait;");
  assert_has(tirx_compiled_ptx(c), "griddepcontrol.launch_dependents;");
  tirx_compiled_destroy(c);
  cr_assert_neq(tirx_compile(rt, k, "sm_80", &c), TIRX_OK);
  assert_has(tirx_last_error(), "griddepcontrol");
  tirx_runtime_destroy(rt);
  tirx_kernel_release(k);

  b = fresh(128); /* without them: no helper, no attribute */
  out = tirx_param_tensor(b, "out", TIRX_F32, TIRX_EXPRS(tirx_int(b, 128)), NULL);
  tirx_store(b, out, TIRX_EXPRS(tirx_thread_linear(b)), tirx_float(b, 1.0, TIRX_F32));
  cr_assert_eq(tirx_kernel_build(b, &k), TIRX_OK, "%s", tirx_builder_error(b));
  tirx_builder_destroy(b);
  cr_assert_null(strstr(tirx_kernel_source(k), "griddepcontrol"));
  cr_assert(!k->pdl);
  cr_assert_eq(tirx__kernel_plan(k, "tirx_launch", args, 1, P), TIRX_OK, "%s", tirx_last_error());
  cr_assert(!P->pdl);
  free(P);
  tirx_kernel_release(k);
}
