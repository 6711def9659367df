/* tirx_copy_async lowered to cp.async (copy_async.cp_async) and the cp.async group statements
 * (src/builder/cp_async.c): the generated source and IR, the prelude only where used, the PTX
 * for sm_80 and sm_90a (NVRTC, no GPU needed) of every tile the GPU suite runs
 * (examples/cp_async_tiles.c), and every error with its message. */
#include <string.h>

#include "../../helpers.h"
#include "builder/builder_internal.h"
#include "ir/kernel_abi.h"
#include "cp_async_tiles.h"

TestSuite(cp_async_prim);

static void has(const char *text, const char *want) {
  cr_assert_not_null(strstr(text, want), "no '%s' in:\n%s", want, text);
}
static void lacks(const char *text, const char *what) {
  cr_assert_null(strstr(text, what), "'%s' found in:\n%s", what, text);
}

static tirx_kernel *tile(const cp_async_tile *t) {
  char err[2048] = "";
  tirx_kernel *k = example_cp_async_tile(t, err, sizeof err);
  cr_assert_not_null(k, "%s", err);
  return k;
}

static tirx_runtime *compile_only(void) {
  tirx_runtime *rt = NULL;
  cr_assert_eq(tirx_runtime_create(&(tirx_runtime_options){.compile_only = true}, &rt), TIRX_OK,
               "%s", tirx_last_error());
  return rt;
}

/* Compiles k for arch and returns its PTX (malloc'ed). */
static char *ptx_of(tirx_runtime *rt, const tirx_kernel *k, const char *arch) {
  tirx_compiled *c = NULL;
  cr_assert_eq(tirx_compile(rt, k, arch, &c), TIRX_OK, "%s for %s: %s", tirx_kernel_name(k),
               arch, tirx_last_error());
  char *p = strdup(tirx_compiled_ptx(c));
  tirx_compiled_destroy(c);
  return p;
}

Test(cp_async_prim, one_stage_source_guards_tails_with_the_src_size) {
  tirx_kernel *k = tile(&(cp_async_tile){TIRX_F32, 16, 64, 1024, 1, 128, "sm_80", NULL});
  cr_assert_str_eq(tirx_kernel_target(k), "sm_80");
  has(tirx_kernel_dispatch_report(k),
      "[cp_async_f32_16x64_s1:1] copy_async(arch=sm_80, roles=global->shared, team=cta) -> "
      "copy_async.cp_async vec=4\n");
  const char *src = tirx_kernel_source(k);
  /* 256 vectors of 16 bytes shared by 128 threads; rows and columns past M and N read nothing
   * (their bytes are zero-filled) from a clamped address; a partial vector its valid bytes. */
  has(src, "    for (int v = (int)threadIdx.x; v < 256; v += 128) {\n"
           "      const int g0 = (((int)blockIdx.y * 16) + ((v / 16) % 16));\n"
           "      const int g1 = (((int)blockIdx.x * 64) + ((v % 16) * 4));\n"
           "      const bool inb = ((g0 < M) && (g1 < N));\n"
           "      tirx_cp_async<16>(&tile[((v / 16) % 16) * 64 + ((v % 16) * 4)], "
           "&A[(long long)(inb ? g0 : 0) * 1024LL + (long long)(inb ? g1 : 0)], "
           "(unsigned)((inb ? (tirx_min((N - g1), 4) * 4) : 0)));\n");
  has(src, "  tirx_cp_async_wait_all();\n  __syncthreads();\n");
  /* The prelude's cp.async section, and nothing of TMA's. */
  has(src, "cp.async.cg.shared.global [%0], [%1], 16, %2;");
  has(src, "cp.async.ca.shared.global [%0], [%1], %2, %3;");
  lacks(src, "tirx_tma_load");
  const char *ir = tirx_kernel_ir_str(k);
  has(ir, "cp_async.16 tile[");
  has(ir, " zfill past ");
  has(ir, "cp_async_wait_all\n");
  cr_assert_eq(k->need, TIRX__FEAT(CP_ASYNC)); /* first use: the statements come first */
  cr_assert_str_eq(k->need_what[TIRX__FEAT_CP_ASYNC], "tirx_cp_async_wait_all");
  tirx_kernel_release(k);
}

Test(cp_async_prim, two_stages_commit_every_iteration_and_wait_for_one_group) {
  tirx_kernel *k = tile(&(cp_async_tile){TIRX_F16, 8, 64, 1024, 2, 64, NULL, NULL});
  const char *rep = tirx_kernel_dispatch_report(k);
  /* On the default sm_90a target TMA is tried first and rejected for the missing barrier. */
  has(rep, "[cp_async_f16_8x64_s2:2] copy_async(arch=sm_90, roles=global->shared, team=cta) -> "
           "copy_async.cp_async vec=8 (fallback)\n"
           "  rejected copy_async.tma: the load has no cfg->barrier: a TMA load completes on an "
           "mbarrier (a load without one is a cp.async load)\n");
  const char *src = tirx_kernel_source(k);
  has(src, "  tirx_cp_async_commit();\n  for (int t = 0; ");
  has(src, "    tirx_cp_async_commit();\n    tirx_cp_async_wait<1>();\n    __syncthreads();\n");
  /* The next stage's rows: a non-constant shared begin (ns * 8) of a dense tile. */
  has(src, "tirx_cp_async<16>(&stages[((ns * 8) + ");
  const char *ir = tirx_kernel_ir_str(k);
  has(ir, "cp_async_commit\n");
  has(ir, "cp_async_wait 1\n");
  tirx_kernel_release(k);
}

/* Within the tensor by construction (constant begins into constant shapes): no guard. */
Test(cp_async_prim, an_in_bounds_copy_has_no_src_size) {
  tirx_builder *b = tirx_builder_create("unguarded");
  tirx_set_target(b, "sm_80");
  tirx_tensor *a = tirx_param_tensor(b, "A", TIRX_BF16,
                                     TIRX_EXPRS(tirx_int(b, 64), tirx_int(b, 128)), NULL);
  tirx_set_block(b, 32, 1, 1);
  tirx_tensor *s = tirx_alloc_shared(b, "s", TIRX_BF16, TIRX_DIMS(16, 64), NULL);
  tirx_team_begin(b, TIRX_TEAM_WARP);
  tirx_copy_async(b, tirx_whole(b, s),
                  tirx_region_new(b, a, TIRX_EXPRS(tirx_int(b, 16), tirx_int(b, 64)),
                                  (int64_t[]){16, 64}),
                  NULL);
  tirx_team_end(b);
  tirx_cp_async_commit(b);
  tirx_cp_async_wait(b, 0);
  tirx_kernel *k = NULL;
  cr_assert_eq(tirx_kernel_build(b, &k), TIRX_OK, "%s", tirx_builder_error(b));
  const char *src = tirx_kernel_source(k);
  has(src, "tirx_cp_async<16>(&s[");
  has(src, "], &A[");
  lacks(src, "const bool inb");
  has(src, "  tirx_cp_async_commit();\n  tirx_cp_async_wait<0>();\n");
  has(tirx_kernel_dispatch_report(k),
      "copy_async(arch=sm_80, roles=global->shared, team=warp) -> copy_async.cp_async vec=8\n");
  tirx_kernel_release(k);
  tirx_builder_destroy(b);
}

/* The cp.async helpers go into the prelude only of kernels that use them; the group statements
 * alone bring them. */
Test(cp_async_prim, the_prelude_section_only_where_used) {
  for (int which = 0; which < 2; which++) {
    tirx_builder *b = tirx_builder_create("k");
    tirx_tensor *y = tirx_param_tensor(b, "y", TIRX_F32, TIRX_EXPRS(tirx_int(b, 1)), NULL);
    tirx_set_block(b, 32, 1, 1);
    if (which) tirx_cp_async_commit(b);
    tirx_store(b, y, TIRX_EXPRS(tirx_int(b, 0)), tirx_float(b, 1.0, TIRX_F32));
    tirx_kernel *k = NULL;
    cr_assert_eq(tirx_kernel_build(b, &k), TIRX_OK, "%s", tirx_builder_error(b));
    const char *src = tirx_kernel_source(k);
    if (which) {
      has(src, "__device__ __forceinline__ void tirx_cp_async_commit()");
      cr_assert_eq(k->need, TIRX__FEAT(CP_ASYNC));
      cr_assert_str_eq(k->need_what[TIRX__FEAT_CP_ASYNC], "tirx_cp_async_commit");
    } else {
      lacks(src, "cp.async");
      cr_assert_eq(k->need, 0);
    }
    tirx_kernel_release(k);
    tirx_builder_destroy(b);
  }
}

/* Every tile of the GPU suite (tests/gpu/test_cp_async.c) builds, and its PTX for sm_80 and
 * for sm_90a has the cp.async instructions of its width and its group statements. */
Test(cp_async_prim, every_gpu_tile_compiles_for_sm_80_and_sm_90a, .timeout = 600) {
  tirx_runtime *rt = compile_only();
  static const char *const archs[] = {"sm_80", "sm_90a"};
  for (int i = 0; i < cp_async_tile_suite_count; i++) {
    const cp_async_tile *t = &cp_async_tile_suite[i];
    tirx_kernel *k = tile(t);
    int esize = t->dtype == TIRX_F32 ? 4 : 2;
    bool cg = (t->ld * esize) % 16 == 0;
    has(tirx_kernel_dispatch_report(k), "-> copy_async.cp_async vec=");
    for (int a = 0; a < 2; a++) {
      char *ptx = ptx_of(rt, k, archs[a]);
      if (cg) {
        has(ptx, "cp.async.cg.shared.global");
        has(ptx, ", 16, "); /* with the src-size operand */
      } else {
        has(ptx, "cp.async.ca.shared.global");
        has(ptx, (t->ld * esize) % 8 == 0 ? ", 8, " : ", 4, ");
      }
      if (t->stages == 2) {
        has(ptx, "cp.async.commit_group");
        has(ptx, "cp.async.wait_group 1");
      } else {
        has(ptx, "cp.async.wait_all");
      }
      free(ptx);
    }
    tirx_kernel_release(k);
  }
  tirx_runtime_destroy(rt);
}

/* The PTX golden of the brief: 16-byte copies and a wait_group, on both architectures. */
Test(cp_async_prim, ptx_has_cp_async_cg_and_wait_group, .timeout = 120) {
  tirx_runtime *rt = compile_only();
  tirx_kernel *k = tile(&(cp_async_tile){TIRX_F32, 16, 64, 1024, 2, 128, "sm_80", NULL});
  for (int a = 0; a < 2; a++) {
    char *ptx = ptx_of(rt, k, a ? "sm_90a" : "sm_80");
    has(ptx, a ? ".target sm_90a" : ".target sm_80");
    has(ptx, "cp.async.cg.shared.global");
    has(ptx, "cp.async.wait_group 1;");
    has(ptx, "cp.async.commit_group;");
    free(ptx);
  }
  /* Dispatched for sm_80: cp.async needs sm_80, so sm_75 is refused. */
  tirx_compiled *c = NULL;
  expect_error(tirx_compile(rt, k, "sm_75", &c), TIRX_E_NOT_SUPPORTED,
               "tirx_compile: arch is sm_75, expected sm_80 or newer: kernel "
               "'cp_async_f32_16x64_s2' (dispatched for sm_80) uses tirx_cp_async_commit, which "
               "needs cp.async");
  tirx_kernel_release(k);
  tirx_runtime_destroy(rt);
}

/* Every builder error of the cp.async API, with its message. */
Test(cp_async_prim, builder_errors) {
  static const struct {
    int which;
    tirx_status st;
    const char *msg;
  } cases[] = {
      {0, TIRX_E_INVALID_ARG, "tirx_cp_async_wait: n is -1, expected 0 to 63 (groups left "
                              "pending)"},
      {1, TIRX_E_INVALID_ARG, "tirx_cp_async_wait: n is 64, expected 0 to 63 (groups left "
                              "pending)"},
      {2, TIRX_E_INVALID_ARG, "tirx_copy_async: cfg->multicast is set without cfg->barrier: a "
                              "multicast load is a TMA load, which completes on an mbarrier"},
      {3, TIRX_E_TYPE, "tirx_copy_async: src has dtype f32, dst bf16: asynchronous copies do "
                       "not convert"},
      {4, TIRX_E_NULL_ARG, "tirx_copy_async: src is NULL"},
      {5, TIRX_E_INVALID_ARG, "tirx_copy_async: src's extents differ from dst's"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    tirx_builder *b = tirx_builder_create("bad");
    tirx_expr *M = tirx_param_int(b, "M", TIRX_I32);
    tirx_tensor *a = tirx_param_tensor(b, "A", TIRX_BF16, TIRX_EXPRS(M, tirx_int(b, 64)), NULL);
    tirx_tensor *f = tirx_param_tensor(b, "F", TIRX_F32, TIRX_EXPRS(M, tirx_int(b, 64)), NULL);
    tirx_set_block(b, 32, 1, 1);
    tirx_tensor *s = tirx_alloc_shared(b, "tile", TIRX_BF16, TIRX_DIMS(8, 64), NULL);
    tirx_expr *z = tirx_int(b, 0);
    tirx_region *ga = tirx_region_new(b, a, TIRX_EXPRS(z, z), (int64_t[]){8, 64});
    switch (cases[i].which) {
    case 0: tirx_cp_async_wait(b, -1); break;
    case 1: tirx_cp_async_wait(b, 64); break;
    case 2:
      tirx_copy_async(b, tirx_whole(b, s), ga, &(tirx_config){.multicast = tirx_int(b, 3)});
      break;
    case 3:
      tirx_copy_async(b, tirx_whole(b, s),
                      tirx_region_new(b, f, TIRX_EXPRS(z, z), (int64_t[]){8, 64}), NULL);
      break;
    case 4: tirx_copy_async(b, tirx_whole(b, s), NULL, NULL); break;
    case 5:
      tirx_copy_async(b, tirx_whole(b, s),
                      tirx_region_new(b, a, TIRX_EXPRS(z, z), (int64_t[]){4, 64}), NULL);
      break;
    }
    cr_assert_eq(tirx_builder_status(b), cases[i].st, "case %zu: %s", i, tirx_builder_error(b));
    cr_assert_str_eq(tirx_builder_error(b), cases[i].msg);
    tirx_builder_destroy(b);
  }
  /* A NULL builder is reported, never dereferenced. */
  tirx_clear_error();
  tirx_cp_async_commit(NULL);
  cr_assert_str_eq(tirx_last_error(), "tirx_cp_async_commit: b is NULL");
  tirx_cp_async_wait(NULL, 0);
  cr_assert_str_eq(tirx_last_error(), "tirx_cp_async_wait: b is NULL");
  tirx_cp_async_wait_all(NULL);
  cr_assert_str_eq(tirx_last_error(), "tirx_cp_async_wait_all: b is NULL");
}

/* Build-time errors: a copy too narrow for cp.async, a team that is not complete (the lowering
 * shares the vectors among the team's threads), a TMA-protocol load on sm_80. */
Test(cp_async_prim, build_errors_name_the_rule_and_reason) {
  for (int which = 0; which < 3; which++) {
    tirx_builder *b = tirx_builder_create("bad");
    tirx_set_target(b, "sm_80");
    tirx_expr *M = tirx_param_int(b, "M", TIRX_I32);
    tirx_tensor *a = tirx_param_tensor_strided(b, "A", TIRX_F16, TIRX_EXPRS(M, tirx_int(b, 64)),
                                               (tirx_expr *[]){tirx_int(b, 65), tirx_int(b, 1)});
    tirx_tensor *h = tirx_param_tensor(b, "H", TIRX_F16, TIRX_EXPRS(M, tirx_int(b, 64)), NULL);
    tirx_set_block(b, 128, 1, 1);
    tirx_tensor *s = tirx_alloc_shared(b, "tile", TIRX_F16, TIRX_DIMS(8, 64), NULL);
    tirx_tensor *bar = tirx_alloc_mbarrier(b, "bar", 1);
    tirx_expr *z = tirx_int(b, 0);
    tirx_expr *r0 = tirx_mul(b, tirx_block_idx(b, 0), tirx_int(b, 8));
    if (which == 1) tirx_filter_begin(b, TIRX_AXIS_TID, 0, 1);
    tirx_copy_async(b, tirx_whole(b, s),
                    tirx_region_new(b, which ? h : a, TIRX_EXPRS(r0, z), (int64_t[]){8, 64}),
                    which == 2 ? &(tirx_config){.barrier = tirx_region_new(
                                                     b, bar, TIRX_EXPRS(z), (int64_t[]){1})}
                               : NULL);
    if (which == 1) tirx_filter_end(b);
    tirx_kernel *k = NULL;
    tirx_status st = tirx_kernel_build(b, &k);
    cr_assert_null(k);
    static const char *const msgs[] = {
        "tirx_kernel_build: [bad:1] no legal rule for copy_async(arch=sm_80, "
        "roles=global->shared, team=cta): copy_async.cp_async: src vector width 1 x 2 bytes < 4 "
        "bytes: innermost run of 64 contiguous elements is not 2-element aligned; cp.async moves "
        "4, 8 or 16 bytes; copy_async.tma: needs sm_90 or newer",
        "tirx_kernel_build: [bad:1] copy_async.cp_async: a cta team of 1 threads (not all 128) "
        "sharing memory-to-memory work is not lowered yet",
        "tirx_kernel_build: [bad:1] no legal rule for copy_async(arch=sm_80, "
        "roles=global->shared, team=cta): copy_async.cp_async: cfg->barrier is set: a cp.async "
        "load completes in cp.async groups (tirx_cp_async_commit, tirx_cp_async_wait), not on "
        "an mbarrier; copy_async.tma: needs sm_90 or newer",
    };
    cr_assert_eq(st, which == 1 ? TIRX_E_NOT_SUPPORTED : TIRX_E_NO_RULE, "%s",
                 tirx_builder_error(b));
    cr_assert_str_eq(tirx_builder_error(b), msgs[which]);
    tirx_builder_destroy(b);
  }
}

/* The launch plan accepts the GPU suite's arguments (A with its padded row stride, O rounded up
 * to whole tiles) and requires A's base to be aligned for the widest cp.async (16 bytes). */
Test(cp_async_prim, plan_takes_the_gpu_suite_arguments_and_checks_alignment) {
  tirx_kernel *k = tile(&cp_async_tile_suite[0]); /* f32 16x64, ld 1024: 16-byte copies */
  tirx__launch_plan *P = malloc(sizeof *P);
  int64_t M = 37, N = 50, MT = 48, NT = 64;
  tirx_arg args[4] = {
      tirx_arg_i32((int32_t)M), tirx_arg_i32((int32_t)N),
      tirx_arg_tensor((void *)(uintptr_t)0x10000, TIRX_F32, 2, (int64_t[]){M, N},
                      (int64_t[]){1024, 1}),
      tirx_arg_tensor((void *)(uintptr_t)0x80004, TIRX_F32, 2, (int64_t[]){MT, NT}, NULL)};
  cr_assert_eq(tirx__kernel_plan(k, "tirx_launch", args, 4, P), TIRX_OK, "%s", tirx_last_error());
  cr_assert_eq(P->grid[0], 1);
  cr_assert_eq(P->grid[1], 3);
  cr_assert_eq(P->block[0], 128);
  cr_assert_eq(P->shared_bytes, 16 * 64 * 4);
  args[2] = tirx_arg_tensor((void *)(uintptr_t)0x10008, TIRX_F32, 2, (int64_t[]){M, N},
                            (int64_t[]){1024, 1});
  expect_error(tirx__kernel_plan(k, "tirx_launch", args, 4, P), TIRX_E_LAUNCH_ARG,
               "tirx_launch: argument 2 (A): data 0x10008 is not aligned to 16 bytes");
  args[2] = tirx_arg_tensor((void *)(uintptr_t)0x10000, TIRX_F32, 2, (int64_t[]){M, N},
                            (int64_t[]){1000, 1});
  tirx_clear_error();
  cr_assert_eq(tirx__kernel_plan(k, "tirx_launch", args, 4, P), TIRX_E_LAUNCH_ARG);
  free(P);
  tirx_kernel_release(k);
}
