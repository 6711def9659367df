/* The row kernels of src/kernels/rows.c on the CPU: which kernels stage their rows
 * (tirx_kernels_row_plan), every documented error of the build, plan and op functions (status
 * and exact message), the op table, and that a staged kernel reads its rows
 * through TMA into a ring and compiles for sm_90a (the GPU suite runs them:
 * tests/gpu/test_gpu.c, membound_staged_*). */
#include <stdio.h>
#include <string.h>

#include "../helpers.h"
#include "rows_ref.h"

/* The row kernels' options of the current test (each test runs in its own process). */
static tirx_row_options ro;

static void assert_has(const char *text, const char *want) {
  cr_assert_not_null(strstr(text, want), "no '%s' in:\n%s", want, text);
}

Test(example_membound, wide_rows_of_the_norms_and_softmax_are_staged) {
  /* 64 KiB rows: one CTA of 1024 threads a SM, at most two stages beside the weight rows */
  cr_assert_eq(row_plan(TIRX_ROW_OP_SOFTMAX, &ro, TIRX_BF16, 32768).stages, 2);
  cr_assert_eq(row_plan(TIRX_ROW_OP_LAYERNORM, &ro, TIRX_F16, 32768).stages, 1); /* + w, bias */
  cr_assert_eq(row_plan(TIRX_ROW_OP_RMSNORM, &ro, TIRX_BF16, 32768).stages, 2);  /* + w */
  cr_assert_eq(row_plan(TIRX_ROW_OP_RMSNORM, &ro, TIRX_F32, 8192).stages, 2); /* 32 KiB rows, 512 threads */
  cr_assert_eq(row_plan(TIRX_ROW_OP_SOFTMAX, &ro, TIRX_F32, 32768).stages, 1); /* 128 KiB rows */
  cr_assert_eq(row_plan(TIRX_ROW_OP_RMSNORM, &ro, TIRX_F32, 32768).stages, 0); /* + w: no room */
  cr_assert_eq(row_plan(TIRX_ROW_OP_SOFTMAX, &ro, TIRX_BF16, 8192).stages, 0); /* 16 KiB: not by default */
  cr_assert_eq(row_plan(TIRX_ROW_OP_SOFTMAX, &ro, TIRX_BF16, 65536 + 256).stages, 0); /* no box */
  cr_assert_eq(row_plan(TIRX_ROW_OP_SOFTMAX, &ro, TIRX_BF16, 20000).stages, 2); /* 200 x 100 */
  cr_assert_eq(row_plan(TIRX_ROW_OP_ADD_RMSNORM, &ro, TIRX_BF16, 32768).stages, 0); /* two inputs */
  cr_assert_eq(row_plan(TIRX_ROW_OP_SUM, &ro, TIRX_BF16, 32768).stages, 0);
  ro.variant = TIRX_ROW_VARIANT_STAGED;
  cr_assert_gt(row_plan(TIRX_ROW_OP_SOFTMAX, &ro, TIRX_BF16, 8192).stages, 0);
  cr_assert_gt(row_plan(TIRX_ROW_OP_LAYERNORM, &ro, TIRX_BF16, 5000).stages, 0); /* 200 x 25 */
  cr_assert_eq(row_plan(TIRX_ROW_OP_LAYERNORM, &ro, TIRX_BF16, 5001).stages, 0); /* 10002 bytes */
  cr_assert_eq(row_plan(TIRX_ROW_OP_SOFTMAX, &ro, TIRX_BF16, 512).stages, 0); /* a warp a row */
  ro.variant = TIRX_ROW_VARIANT_UNSTAGED;
  cr_assert_eq(row_plan(TIRX_ROW_OP_SOFTMAX, &ro, TIRX_BF16, 32768).stages, 0);
  ro.variant = TIRX_ROW_VARIANT_WEIGHTS_GLOBAL; /* no w, bias in shared */
  cr_assert_eq(row_plan(TIRX_ROW_OP_LAYERNORM, &ro, TIRX_BF16, 32768).stages, 2);
  cr_assert_eq(row_plan(TIRX_ROW_OP_RMSNORM, &ro, TIRX_F32, 32768).stages, 1);
  ro.variant = 0;
  ro.stages = 1;
  cr_assert_eq(row_plan(TIRX_ROW_OP_SOFTMAX, &ro, TIRX_BF16, 32768).stages, 1);
  cr_assert_eq(row_plan(TIRX_ROW_OP_SOFTMAX, &ro, TIRX_BF16, 8192).stages, 1); /* forced */
  ro.stages = 4;
  cr_assert_eq(row_plan(TIRX_ROW_OP_SOFTMAX, &ro, TIRX_BF16, 32768).stages, 0); /* 256 KiB */
  ro.stages = 0;
  ro.cluster = 2; /* a cluster per row is never staged */
  cr_assert_eq(row_plan(TIRX_ROW_OP_SOFTMAX, &ro, TIRX_BF16, 32768).stages, 0);
  ro.cluster = 0;
}

Test(example_membound, a_staged_kernel_reads_its_rows_through_a_tma_ring, .timeout = 300) {
  tirx_runtime *rt = NULL;
  tirx_runtime_options o = {.compile_only = true, .cache_disabled = true};
  cr_assert_eq(tirx_runtime_create(&o, &rt), TIRX_OK, "%s", tirx_last_error());
  static const tirx_row_op kinds[] = {TIRX_ROW_OP_SOFTMAX, TIRX_ROW_OP_LAYERNORM, TIRX_ROW_OP_RMSNORM};
  for (int i = 0; i < 3; i++) {
    char err[1024] = "";
    tirx_kernel *k = row_kernel(kinds[i], &ro, TIRX_BF16, 32768, false, err, sizeof err);
    cr_assert_not_null(k, "%s", err);
    const char *rep = tirx_kernel_dispatch_report(k), *src = tirx_kernel_source(k);
    assert_has(rep, "copy_async(arch=sm_90, roles=global->shared, team=cta) -> copy_async.tma box=32768");
    assert_has(rep, "copy(arch=sm_90, roles=shared->local, team=cta) -> copy.vec vec=8");
    assert_has(src, "for (int row = (int)blockIdx.x; row < rows; row += (int)gridDim.x) {");
    char ring[96];
    snprintf(ring, sizeof ring, "tirx_bf16 *ring = (tirx_bf16 *)(tirx_smem + 0); /* ((%d),(32768))",
             i == 1 ? 1 : 2);
    assert_has(src, ring);
    if (i > 0) assert_has(src, " *wrows = ");
    tirx_compiled *c = NULL;
    cr_assert_eq(tirx_compile(rt, k, "sm_90a", &c), TIRX_OK, "%s", tirx_last_error());
    const char *ptx = tirx_compiled_ptx(c);
    assert_has(ptx, "cp.async.bulk.tensor.3d.shared::cluster.global");
    assert_has(ptx, "mbarrier.try_wait.parity");
    cr_assert_null(strstr(ptx, ".local"), "a staged kernel uses local memory");
    tirx_compiled_destroy(c);
    tirx_kernel_release(k);
  }
  tirx_runtime_destroy(rt);
}

/* Every case of the GPU suite's membound_staged_* builds (staged or not, as membound_stages
 * says): rows of 5000 and 20000 elements are TMA boxes of 200 x 25 and 200 x 100, and the
 * ring's rows start 128 bytes apart. */
Test(example_membound, the_gpu_suites_staged_cases_build) {
  static const tirx_row_op kinds[] = {TIRX_ROW_OP_SOFTMAX, TIRX_ROW_OP_LAYERNORM, TIRX_ROW_OP_RMSNORM};
  static const tirx_dtype dts[] = {TIRX_F32, TIRX_F16, TIRX_BF16};
  static const struct { int64_t width; int flags; } cases[] = {
      {32768, 0}, {20000, 0}, {8192, TIRX_ROW_VARIANT_STAGED}, {5000, TIRX_ROW_VARIANT_STAGED},
      {2048, TIRX_ROW_VARIANT_STAGED}, {32768, TIRX_ROW_VARIANT_UNSTAGED},
      {32768, TIRX_ROW_VARIANT_WEIGHTS_GLOBAL}, {5000, TIRX_ROW_VARIANT_STAGED | TIRX_ROW_VARIANT_WEIGHTS_GLOBAL}};
  for (int i = 0; i < 3; i++)
    for (int d = 0; d < 3; d++)
      for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        char err[1024] = "";
        ro.variant = cases[c].flags;
        int S = row_plan(kinds[i], &ro, dts[d], cases[c].width).stages;
        tirx_kernel *k = row_kernel(kinds[i], &ro, dts[d], cases[c].width, false, err, sizeof err);
        ro.variant = 0;
        cr_assert_not_null(k, "%s %s %lld: %s", tirx_kernels_row_name(kinds[i]), tirx_dtype_name(dts[d]),
                           (long long)cases[c].width, err);
        bool ring = strstr(tirx_kernel_source(k), " *ring = ") != NULL;
        cr_assert_eq(ring, S > 0, "%s %s %lld: %d stages, ring %d", tirx_kernels_row_name(kinds[i]),
                     tirx_dtype_name(dts[d]), (long long)cases[c].width, S, ring);
        tirx_kernel_release(k);
      }
}

/* ---- the public API's documented errors ---- */

#define PTR(v) ((void *)(uintptr_t)(v))

Test(kernels_rows, plan_and_build_check_their_arguments) {
  tirx_row_plan p = {0};
  tirx_kernel *k = PTR(1);
  expect_error(tirx_kernels_row_plan(TIRX_ROW_OP_RMSNORM, NULL, TIRX_BF16, 4096, NULL),
               TIRX_E_NULL_ARG, "tirx_kernels_row_plan: out is NULL");
  expect_error(tirx_kernels_row_build(TIRX_ROW_OP_RMSNORM, NULL, TIRX_BF16, 4096, NULL),
               TIRX_E_NULL_ARG, "tirx_kernels_row_build: out is NULL");
  expect_error(tirx_kernels_row_build(TIRX_ROW_OP_COUNT, NULL, TIRX_BF16, 4096, &k),
               TIRX_E_INVALID_ARG, "tirx_kernels_row_build: op is 8, expected a tirx_row_op (0 to 7)");
  cr_assert_null(k);
  expect_error(tirx_kernels_row_plan((tirx_row_op)-1, NULL, TIRX_BF16, 4096, &p),
               TIRX_E_INVALID_ARG, "tirx_kernels_row_plan: op is -1, expected a tirx_row_op (0 to 7)");
  expect_error(tirx_kernels_row_plan(TIRX_ROW_OP_SOFTMAX, NULL, TIRX_I32, 4096, &p),
               TIRX_E_INVALID_ARG, "tirx_kernels_row_plan: dtype is i32, expected f32, f16 or bf16");
  expect_error(tirx_kernels_row_plan(TIRX_ROW_OP_SOFTMAX, NULL, TIRX_F32, 0, &p),
               TIRX_E_INVALID_ARG, "tirx_kernels_row_plan: width is 0, expected 1 to 2^31 - 1");
  static const struct {
    tirx_row_options o;
    const char *msg;
  } bad[] = {
      {{.threads = 96}, "opts->threads is 96, expected 0 or a power of two in 64..1024"},
      {{.threads = 32}, "opts->threads is 32, expected 0 or a power of two in 64..1024"},
      {{.threads = 2048}, "opts->threads is 2048, expected 0 or a power of two in 64..1024"},
      {{.variant = 128}, "opts->variant is 128, expected TIRX_ROW_VARIANT_* bits (0 to 127)"},
      {{.variant = TIRX_ROW_VARIANT_PER_ROW | TIRX_ROW_VARIANT_ELEMENTWISE},
       "opts->variant is 96: TIRX_ROW_VARIANT_PER_ROW and TIRX_ROW_VARIANT_ELEMENTWISE exclude "
       "each other"},
      {{.cluster = 3}, "opts->cluster is 3, expected 0, 1, 2 or 4"},
      {{.cluster = -1}, "opts->cluster is -1, expected 0, 1, 2 or 4"},
      {{.stages = 5}, "opts->stages is 5, expected 0 to 4"},
      {{.stages = -1}, "opts->stages is -1, expected 0 to 4"},
      {{.min_blocks = 33}, "opts->min_blocks is 33, expected 0 to 32"},
      {{.sms = -3}, "opts->sms is -3, expected 0 (132) to 1024"},
      {{.sms = 4096}, "opts->sms is 4096, expected 0 (132) to 1024"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char want[256];
    snprintf(want, sizeof want, "tirx_kernels_row_build: %s", bad[i].msg);
    expect_error(tirx_kernels_row_build(TIRX_ROW_OP_LAYERNORM, &bad[i].o, TIRX_BF16, 8192, &k),
                 TIRX_E_INVALID_ARG, want);
    cr_assert_null(k);
  }
  cr_assert_null(tirx_kernels_row_name(TIRX_ROW_OP_COUNT));
  cr_assert_str_eq(tirx_kernels_row_name(TIRX_ROW_OP_SILU_MUL), "silu_mul");
}

Test(kernels_rows, the_plan_follows_the_options) {
  tirx_row_plan p = {0};
  cr_assert_eq(tirx_kernels_row_plan(TIRX_ROW_OP_RMSNORM, NULL, TIRX_BF16, 512, &p), TIRX_OK);
  cr_assert_eq(p.threads, 32); /* a warp a row */
  cr_assert_eq(p.cluster, 1);
  cr_assert_eq(p.stages, 0);
  cr_assert_eq(tirx_kernels_row_plan(TIRX_ROW_OP_RMSNORM, NULL, TIRX_BF16, 8192, &p), TIRX_OK);
  cr_assert_eq(p.threads, 512); /* 2 vectors a thread */
  cr_assert_eq(tirx_kernels_row_plan(TIRX_ROW_OP_LAYERNORM, NULL, TIRX_BF16, 8192, &p), TIRX_OK);
  cr_assert_eq(p.threads, 256); /* 4 vectors a thread */
  tirx_row_options o = {.threads = 128};
  cr_assert_eq(tirx_kernels_row_plan(TIRX_ROW_OP_LAYERNORM, &o, TIRX_BF16, 8192, &p), TIRX_OK);
  cr_assert_eq(p.threads, 128);
  o = (tirx_row_options){.cluster = 2};
  cr_assert_eq(tirx_kernels_row_plan(TIRX_ROW_OP_SOFTMAX, &o, TIRX_BF16, 32768, &p), TIRX_OK);
  cr_assert_eq(p.cluster, 2);
  cr_assert_eq(p.stages, 0);
  o = (tirx_row_options){.scalar = true};
  cr_assert_eq(tirx_kernels_row_plan(TIRX_ROW_OP_SOFTMAX, &o, TIRX_BF16, 32768, &p), TIRX_OK);
  cr_assert_eq(p.stages, 0); /* scalar kernels are never staged */
  cr_assert_eq(tirx_kernels_row_plan(TIRX_ROW_OP_SOFTMAX, NULL, TIRX_BF16, 32768, &p), TIRX_OK);
  cr_assert_eq(p.stages, 2);
}

/* The options reach the kernel: the same request builds the same source, a knob changes it. */
Test(kernels_rows, options_change_the_kernel_and_nothing_else_does) {
  tirx_kernel *a = NULL, *b = NULL, *c = NULL;
  tirx_row_options o = {.min_blocks = 2};
  cr_assert_eq(tirx_kernels_row_build(TIRX_ROW_OP_RMSNORM, NULL, TIRX_BF16, 4096, &a), TIRX_OK);
  cr_assert_eq(tirx_kernels_row_build(TIRX_ROW_OP_RMSNORM, &(tirx_row_options){0}, TIRX_BF16,
                                      4096, &b), TIRX_OK);
  cr_assert_eq(tirx_kernels_row_build(TIRX_ROW_OP_RMSNORM, &o, TIRX_BF16, 4096, &c), TIRX_OK);
  cr_assert_str_eq(tirx_kernel_source(a), tirx_kernel_source(b));
  cr_assert_str_neq(tirx_kernel_source(a), tirx_kernel_source(c));
  cr_assert_not_null(strstr(tirx_kernel_source(c), "__launch_bounds__(256, 2)"), "%s",
                     tirx_kernel_source(c));
  tirx_kernel_release(a), tirx_kernel_release(b), tirx_kernel_release(c);
}

static tirx_runtime *no_device(void) {
  tirx_runtime *rt = NULL;
  tirx_runtime_options o = {.compile_only = true, .cache_disabled = true};
  cr_assert_eq(tirx_runtime_create(&o, &rt), TIRX_OK, "%s", tirx_last_error());
  return rt;
}

#define T2(p, dt, r, c) (&(tirx_tensor_arg){PTR(p), dt, 2, (int64_t[]){r, c}, NULL})
#define T1(p, dt, n) (&(tirx_tensor_arg){PTR(p), dt, 1, (int64_t[]){n}, NULL})

Test(kernels_rows, ops_check_their_tensors_before_anything_else) {
  tirx_runtime *rt = no_device();
  const tirx_dtype B = TIRX_BF16;
  const tirx_tensor_arg *x = T2(0x10000, B, 8, 4096), *w = T1(0x20000, B, 4096);
  const tirx_tensor_arg *out = T2(0x30000, B, 8, 4096);
  expect_error(tirx_op_rmsnorm(NULL, NULL, x, w, out, 1e-6f, NULL), TIRX_E_NULL_ARG,
               "tirx_op_rmsnorm: rt is NULL");
  expect_error(tirx_op_rmsnorm(rt, NULL, NULL, w, out, 1e-6f, NULL), TIRX_E_NULL_ARG,
               "tirx_op_rmsnorm: x is NULL");
  expect_error(tirx_op_rmsnorm(rt, NULL, T2(0, B, 8, 4096), w, out, 1e-6f, NULL), TIRX_E_NULL_ARG,
               "tirx_op_rmsnorm: x->data is NULL");
  expect_error(tirx_op_rmsnorm(rt, NULL, T2(0x10008, B, 8, 4096), w, out, 1e-6f, NULL),
               TIRX_E_INVALID_ARG, "tirx_op_rmsnorm: x->data 0x10008 is not aligned to 16 bytes");
  expect_error(tirx_op_rmsnorm(rt, NULL, T1(0x10000, B, 4096), w, out, 1e-6f, NULL),
               TIRX_E_INVALID_ARG, "tirx_op_rmsnorm: x has rank 1, expected 2");
  expect_error(tirx_op_rmsnorm(rt, NULL, T2(0x10000, B, 0, 4096), w, out, 1e-6f, NULL),
               TIRX_E_INVALID_ARG, "tirx_op_rmsnorm: x has shape [0, 4096], expected extents >= 1");
  expect_error(tirx_op_rmsnorm(rt, NULL, T2(0x10000, TIRX_I32, 8, 4096), w, out, 1e-6f, NULL),
               TIRX_E_TYPE, "tirx_op_rmsnorm: x has dtype i32, expected f32, f16 or bf16");
  expect_error(tirx_op_rmsnorm(rt, NULL, &(tirx_tensor_arg){PTR(0x10000), B, 2,
                                                             (int64_t[]){8, 4096},
                                                             (int64_t[]){8192, 1}},
                               w, out, 1e-6f, NULL),
               TIRX_E_INVALID_ARG, "tirx_op_rmsnorm: x has strides [8192, 1], expected dense row-major");
  expect_error(tirx_op_rmsnorm(rt, NULL, x, T1(0x20000, B, 4000), out, 1e-6f, NULL),
               TIRX_E_INVALID_ARG, "tirx_op_rmsnorm: w has shape [4000], expected [W] = [4096]");
  expect_error(tirx_op_rmsnorm(rt, NULL, x, T2(0x20000, B, 2, 4096), out, 1e-6f, NULL),
               TIRX_E_INVALID_ARG, "tirx_op_rmsnorm: w has shape [2, 4096], expected [1, W] = [1, 4096]");
  expect_error(tirx_op_rmsnorm(rt, NULL, x, &(tirx_tensor_arg){PTR(0x20000), B, 3,
                                                                (int64_t[]){1, 1, 4096}, NULL},
                               out, 1e-6f, NULL),
               TIRX_E_INVALID_ARG, "tirx_op_rmsnorm: w has rank 3, expected 1 ([W]) or 2 ([1, W])");
  expect_error(tirx_op_rmsnorm(rt, NULL, x, T1(0x20000, TIRX_F16, 4096), out, 1e-6f, NULL),
               TIRX_E_TYPE, "tirx_op_rmsnorm: w has dtype f16, expected bf16");
  expect_error(tirx_op_rmsnorm(rt, NULL, x, w, T2(0x30000, B, 8, 4095), 1e-6f, NULL),
               TIRX_E_INVALID_ARG, "tirx_op_rmsnorm: out has shape [8, 4095], expected [rows, W] = [8, 4096]");
  expect_error(tirx_op_rmsnorm(rt, NULL, x, w, NULL, 1e-6f, NULL), TIRX_E_NULL_ARG,
               "tirx_op_rmsnorm: out is NULL");
  expect_error(tirx_op_rmsnorm(rt, &(tirx_row_options){.stages = 9}, x, w, out, 1e-6f, NULL),
               TIRX_E_INVALID_ARG, "tirx_op_rmsnorm: opts->stages is 9, expected 0 to 4");
  expect_error(tirx_op_layernorm(rt, NULL, x, w, NULL, out, 1e-5f, NULL), TIRX_E_NULL_ARG,
               "tirx_op_layernorm: bias is NULL");
  expect_error(tirx_op_add_rmsnorm(rt, NULL, x, T2(0x40000, B, 4, 4096), w, out, out, 1e-6f, NULL),
               TIRX_E_INVALID_ARG, "tirx_op_add_rmsnorm: res has shape [4, 4096], expected [rows, W] = [8, 4096]");
  expect_error(tirx_op_add_rmsnorm(rt, NULL, x, x, w, out, NULL, 1e-6f, NULL), TIRX_E_NULL_ARG,
               "tirx_op_add_rmsnorm: res_out is NULL");
  expect_error(tirx_op_softmax(rt, NULL, x, T2(0x30000, TIRX_F32, 8, 4096), NULL), TIRX_E_TYPE,
               "tirx_op_softmax: out has dtype f32, expected bf16");
  expect_error(tirx_op_silu_mul(rt, NULL, T2(0x10000, B, 8, 4095), out, NULL), TIRX_E_INVALID_ARG,
               "tirx_op_silu_mul: x has shape [8, 4095], expected [rows, 2W] (an even number of columns)");
  expect_error(tirx_op_silu_mul(rt, NULL, x, out, NULL), TIRX_E_INVALID_ARG,
               "tirx_op_silu_mul: out has shape [8, 4096], expected [rows, W] = [8, 2048]");
  expect_error(tirx_op_row_sum(rt, NULL, x, T2(0x30000, B, 8, 1), NULL), TIRX_E_TYPE,
               "tirx_op_row_sum: out has dtype bf16, expected f32");
  expect_error(tirx_op_row_max(rt, NULL, x, T1(0x30000, TIRX_F32, 7), NULL), TIRX_E_INVALID_ARG,
               "tirx_op_row_max: out has shape [7], expected [rows] = [8]");
  expect_error(tirx_op_row_max(rt, NULL, x, T2(0x30000, TIRX_F32, 8, 2), NULL), TIRX_E_INVALID_ARG,
               "tirx_op_row_max: out has shape [8, 2], expected [rows, 1] = [8, 1]");
  cr_assert_eq(tirx_kernels_cached(), 0, "a bad call built a kernel");
  tirx_runtime_destroy(rt);
}

/* A row of 2^31 elements or more (x's columns; silu_mul's half of them) is refused naming x and
 * the limit on W, before the other tensors are looked at (it was the build's "width is ...,
 * expected 1 to 2^31 - 1": an argument the op's caller never passed). No data is touched. */
Test(kernels_rows, ops_name_x_for_rows_wider_than_the_kernels_take) {
  tirx_runtime *rt = no_device();
  const tirx_dtype B = TIRX_BF16;
  const int64_t big = (int64_t)INT32_MAX + 1;
  const tirx_tensor_arg *x = T2(0x10000, B, 2, big), *w = T1(0x20000, B, big);
  const tirx_tensor_arg *out = T2(0x30000, B, 2, big), *sum = T1(0x40000, TIRX_F32, 2);
  const tirx_tensor_arg *o8 = T2(0x30000, TIRX_FP8_E4M3, 2, big);
  const char *want = "x has shape [2, 2147483648], expected [rows, W] with W at most 2^31 - 1";
  char msg[200];
#define WIDE(call, name)                                                                           \
  do {                                                                                             \
    snprintf(msg, sizeof msg, "%s: %s", name, want);                                               \
    expect_error(call, TIRX_E_INVALID_ARG, msg);                                                   \
  } while (0)
  WIDE(tirx_op_rmsnorm(rt, NULL, x, w, out, 1e-6f, NULL), "tirx_op_rmsnorm");
  WIDE(tirx_op_layernorm(rt, NULL, x, w, w, out, 1e-5f, NULL), "tirx_op_layernorm");
  WIDE(tirx_op_add_rmsnorm(rt, NULL, x, x, w, out, out, 1e-6f, NULL), "tirx_op_add_rmsnorm");
  WIDE(tirx_op_softmax(rt, NULL, x, out, NULL), "tirx_op_softmax");
  WIDE(tirx_op_row_sum(rt, NULL, x, sum, NULL), "tirx_op_row_sum");
  WIDE(tirx_op_row_max(rt, NULL, x, sum, NULL), "tirx_op_row_max");
  WIDE(tirx_op_rmsnorm_fp8(rt, NULL, x, w, o8, sum, 1e-6f, NULL), "tirx_op_rmsnorm_fp8");
  WIDE(tirx_op_add_rmsnorm_fp8(rt, NULL, x, x, w, o8, out, sum, 1e-6f, NULL),
       "tirx_op_add_rmsnorm_fp8");
#undef WIDE
  /* silu_mul: x [rows, 2W]; 2^31 columns are W = 2^30, within the limit (then out's shape) */
  expect_error(tirx_op_silu_mul(rt, NULL, T2(0x10000, B, 2, 2 * big), out, NULL),
               TIRX_E_INVALID_ARG,
               "tirx_op_silu_mul: x has shape [2, 4294967296], expected [rows, 2W] with W at most "
               "2^31 - 1");
  expect_error(tirx_op_silu_mul(rt, NULL, x, out, NULL), TIRX_E_INVALID_ARG,
               "tirx_op_silu_mul: out has shape [2, 2147483648], expected [rows, W] = [2, "
               "1073741824]");
  cr_assert_eq(tirx_kernels_cached(), 0, "a bad call built a kernel");
  tirx_runtime_destroy(rt);
}

/* opts->min_blocks CTAs of the kernel's size past one SM's 2048 threads are refused naming
 * opts->min_blocks (the build failed naming tirx_set_min_blocks, found by tools/fuzz_ops): in
 * the plan, the builds and the ops, for the CTA-per-row, warp-per-row (4 warps a CTA),
 * elementwise and FP8 kernels; the largest floor that fits is still planned. */
Test(kernels_rows, min_blocks_past_one_sm_are_refused_naming_them) {
  const tirx_dtype B = TIRX_BF16;
  const char *tail = "expected min_blocks x threads at most 2048, the threads one SM holds";
  char want[256];
  tirx_row_plan p = {.size = sizeof p};
  tirx_kernel *k = NULL;
  tirx_row_options o = {.threads = 1024, .min_blocks = 3};
  snprintf(want, sizeof want, "tirx_kernels_row_plan: opts->min_blocks is 3 with CTAs of 1024 "
           "threads (opts->threads), %s", tail);
  expect_error(tirx_kernels_row_plan(TIRX_ROW_OP_RMSNORM, &o, B, 8192, &p), TIRX_E_INVALID_ARG,
               want);
  snprintf(want, sizeof want, "tirx_kernels_row_build: opts->min_blocks is 3 with CTAs of 1024 "
           "threads (opts->threads), %s", tail);
  expect_error(tirx_kernels_row_build(TIRX_ROW_OP_SOFTMAX, &o, B, 8192, &k), TIRX_E_INVALID_ARG,
               want);
  cr_assert_null(k);
  o = (tirx_row_options){.min_blocks = 17}; /* warp rows: 4 warps a CTA, 17 x 128 = 2176 */
  snprintf(want, sizeof want, "tirx_kernels_row_plan: opts->min_blocks is 17 with CTAs of 128 "
           "threads (the plan's threads for this width), %s", tail);
  expect_error(tirx_kernels_row_plan(TIRX_ROW_OP_RMSNORM, &o, B, 512, &p), TIRX_E_INVALID_ARG,
               want);
  o = (tirx_row_options){.threads = 512, .min_blocks = 5, .variant = TIRX_ROW_VARIANT_ELEMENTWISE};
  snprintf(want, sizeof want, "tirx_kernels_row_plan: opts->min_blocks is 5 with CTAs of 512 "
           "threads (opts->threads), %s", tail);
  expect_error(tirx_kernels_row_plan(TIRX_ROW_OP_SILU_MUL, &o, B, 5000, &p), TIRX_E_INVALID_ARG,
               want);
  o = (tirx_row_options){.threads = 512, .min_blocks = 5};
  snprintf(want, sizeof want, "tirx_kernels_rmsnorm_fp8_build: opts->min_blocks is 5 with CTAs "
           "of 512 threads (opts->threads), %s", tail);
  expect_error(tirx_kernels_rmsnorm_fp8_build(&o, B, 8192, true, &k), TIRX_E_INVALID_ARG, want);
  cr_assert_null(k);
  o = (tirx_row_options){.threads = 1024, .min_blocks = 2}; /* exactly one SM: planned */
  cr_assert_eq(tirx_kernels_row_plan(TIRX_ROW_OP_RMSNORM, &o, B, 8192, &p), TIRX_OK, "%s",
               tirx_last_error());
  o = (tirx_row_options){.min_blocks = 16};
  cr_assert_eq(tirx_kernels_row_plan(TIRX_ROW_OP_RMSNORM, &o, B, 512, &p), TIRX_OK, "%s",
               tirx_last_error());
  tirx_runtime *rt = no_device();
  o = (tirx_row_options){.threads = 1024, .min_blocks = 3};
  snprintf(want, sizeof want, "tirx_op_rmsnorm: opts->min_blocks is 3 with CTAs of 1024 "
           "threads (opts->threads), %s", tail);
  expect_error(tirx_op_rmsnorm(rt, &o, T2(0x10000, B, 2, 8192), T1(0x20000, B, 8192),
                               T2(0x30000, B, 2, 8192), 1e-6f, NULL),
               TIRX_E_INVALID_ARG, want);
  snprintf(want, sizeof want, "tirx_op_rmsnorm_fp8: opts->min_blocks is 3 with CTAs of 1024 "
           "threads (opts->threads), %s", tail);
  expect_error(tirx_op_rmsnorm_fp8(rt, &o, T2(0x10000, B, 2, 8192), T1(0x20000, B, 8192),
                                   T2(0x30000, TIRX_FP8_E4M3, 2, 8192),
                                   T1(0x40000, TIRX_F32, 2), 1e-6f, NULL),
               TIRX_E_INVALID_ARG, want);
  cr_assert_eq(tirx_kernels_cached(), 0, "a bad call built a kernel");
  tirx_runtime_destroy(rt);
}

/* A row within 2^31 - 1 but too wide for a kernel's registers and local arrays: the build's
 * TIRX_E_LIMIT names the width (the builds) or x (the ops), not only tirx_alloc_local (found by
 * tools/fuzz_ops). */
Test(kernels_rows, rows_too_wide_for_a_kernel_name_the_width) {
  const tirx_dtype B = TIRX_BF16;
  const int64_t W = INT32_MAX;
  const char *why = ", more than a row kernel holds (tirx_alloc_local: ";
  tirx_kernel *k = NULL;
  tirx_clear_error();
  cr_assert_eq(tirx_kernels_row_build(TIRX_ROW_OP_RMSNORM, NULL, B, W, &k), TIRX_E_LIMIT);
  cr_assert_null(k);
  cr_assert_eq(strncmp(tirx_last_error(), "tirx_kernels_row_build: width is 2147483647", 43), 0,
               "%s", tirx_last_error());
  cr_assert_not_null(strstr(tirx_last_error(), why), "%s", tirx_last_error());
  cr_assert_eq(tirx_kernels_rmsnorm_fp8_build(NULL, B, W, true, &k), TIRX_E_LIMIT);
  cr_assert_eq(strncmp(tirx_last_error(), "tirx_kernels_rmsnorm_fp8_build: width is 2147483647",
                       51), 0, "%s", tirx_last_error());
  tirx_runtime *rt = no_device();
  tirx_clear_error();
  cr_assert_eq(tirx_op_softmax(rt, NULL, T2(0x10000, B, 2, W), T2(0x30000, B, 2, W), NULL),
               TIRX_E_LIMIT, "%s", tirx_last_error());
  cr_assert_eq(strncmp(tirx_last_error(), "tirx_op_softmax: x has rows of W = 2147483647 "
                       "elements, more than a row kernel holds (tirx_alloc_local: ", 104), 0,
               "%s", tirx_last_error());
  cr_assert_eq(tirx_kernels_cached(), 0, "a bad call built a kernel");
  tirx_runtime_destroy(rt);
}

/* Without a device every op checks, builds and returns tirx_launch's TIRX_E_NO_DEVICE. */
Test(kernels_rows, ops_without_a_device_return_no_device, .timeout = 120) {
  tirx_runtime *rt = no_device();
  char want[1024];
  const tirx_dtype B = TIRX_BF16;
  const tirx_tensor_arg *x = T2(0x10000, B, 8, 4096), *w = T1(0x20000, B, 4096);
  const tirx_tensor_arg *out = T2(0x30000, B, 8, 4096), *sum = T1(0x40000, TIRX_F32, 8);
#define NO_DEVICE(call, fn)                                                                   \
  do {                                                                                        \
    snprintf(want, sizeof want, "%s: tirx_launch: no CUDA device: %s", fn,                     \
             tirx_runtime_device_error(rt));                                                  \
    expect_error(call, TIRX_E_NO_DEVICE, want);                                               \
  } while (0)
  NO_DEVICE(tirx_op_rmsnorm(rt, NULL, x, w, out, 1e-6f, NULL), "tirx_op_rmsnorm");
  NO_DEVICE(tirx_op_layernorm(rt, NULL, x, w, T2(0x50000, B, 1, 4096), out, 1e-5f, NULL),
            "tirx_op_layernorm");
  NO_DEVICE(tirx_op_add_rmsnorm(rt, NULL, x, x, w, out, out, 1e-6f, NULL), "tirx_op_add_rmsnorm");
  NO_DEVICE(tirx_op_softmax(rt, NULL, x, out, NULL), "tirx_op_softmax");
  NO_DEVICE(tirx_op_silu_mul(rt, NULL, x, T2(0x30000, B, 8, 2048), NULL), "tirx_op_silu_mul");
  NO_DEVICE(tirx_op_row_sum(rt, NULL, x, sum, NULL), "tirx_op_row_sum");
  NO_DEVICE(tirx_op_row_max(rt, NULL, x, sum, NULL), "tirx_op_row_max");
  cr_assert_eq(tirx_kernels_cached(), 7);
  /* Again: found, not built. Other options or another dtype: built. */
  NO_DEVICE(tirx_op_softmax(rt, &(tirx_row_options){0}, x, out, NULL), "tirx_op_softmax");
  cr_assert_eq(tirx_kernels_cached(), 7);
  NO_DEVICE(tirx_op_softmax(rt, &(tirx_row_options){.threads = 128}, x, out, NULL),
            "tirx_op_softmax");
  NO_DEVICE(tirx_op_softmax(rt, NULL, T2(0x10000, TIRX_F16, 8, 4096), T2(0x30000, TIRX_F16, 8, 4096),
                            NULL), "tirx_op_softmax");
  cr_assert_eq(tirx_kernels_cached(), 9);
  tirx_kernels_clear();
  cr_assert_eq(tirx_kernels_cached(), 0);
  tirx_runtime_destroy(rt);
}

/* Common hidden sizes whose rows take a CTA of a number of warps that is not a power of two
 * (3072 bf16: rmsnorm 192 threads, 6 warps; layernorm 96, 3 warps) build since reduce.smem
 * lowers any whole number of warps, and compile for sm_90a without local memory. */
Test(example_membound, hidden_sizes_on_warps_that_are_not_a_power_of_two_build, .timeout = 300) {
  tirx_runtime *rt = NULL;
  tirx_runtime_options o = {.compile_only = true, .cache_disabled = true};
  cr_assert_eq(tirx_runtime_create(&o, &rt), TIRX_OK, "%s", tirx_last_error());
  static const int64_t widths[] = {3072, 5120, 6144};
  for (int w = 0; w < 3; w++)
    for (int op = 0; op < TIRX_ROW_OP_COUNT; op++) {
      char err[1024] = "";
      tirx_kernel *k = row_kernel((tirx_row_op)op, &ro, TIRX_BF16, widths[w], false, err,
                                  sizeof err);
      cr_assert_not_null(k, "%s %lld: %s", tirx_kernels_row_name((tirx_row_op)op),
                         (long long)widths[w], err);
      if (op == TIRX_ROW_OP_RMSNORM) {
        char want[64];
        snprintf(want, sizeof want, "-> reduce.smem threads=%lld\n", (long long)widths[w] / 16);
        assert_has(tirx_kernel_dispatch_report(k), want); /* 192, 320, 384: 6, 10, 12 warps */
        tirx_compiled *c = NULL;
        cr_assert_eq(tirx_compile(rt, k, "sm_90a", &c), TIRX_OK, "%s", tirx_last_error());
        cr_assert_null(strstr(tirx_compiled_ptx(c), ".local"), "rmsnorm uses local memory");
        tirx_compiled_destroy(c);
      }
      tirx_kernel_release(k);
    }
  tirx_runtime_destroy(rt);
}

/* ---- rmsnorm_fp8, add_rmsnorm_fp8 ---- */

Test(kernels_rows, fp8_ops_check_their_tensors_before_anything_else) {
  tirx_runtime *rt = no_device();
  const tirx_dtype B = TIRX_BF16, E = TIRX_FP8_E4M3;
  const tirx_tensor_arg *x = T2(0x10000, B, 8, 4096), *w = T1(0x20000, B, 4096);
  const tirx_tensor_arg *out = T2(0x30000, E, 8, 4096), *sc = T1(0x40000, TIRX_F32, 8);
  const tirx_tensor_arg *ro_ = T2(0x50000, B, 8, 4096);
  tirx_kernel *k = PTR(1);
  expect_error(tirx_kernels_rmsnorm_fp8_build(NULL, B, 4096, false, NULL), TIRX_E_NULL_ARG,
               "tirx_kernels_rmsnorm_fp8_build: out is NULL");
  expect_error(tirx_kernels_rmsnorm_fp8_build(NULL, TIRX_I32, 4096, false, &k), TIRX_E_INVALID_ARG,
               "tirx_kernels_rmsnorm_fp8_build: dtype is i32, expected f32, f16 or bf16");
  cr_assert_null(k);
  expect_error(tirx_kernels_rmsnorm_fp8_build(NULL, B, 0, true, &k), TIRX_E_INVALID_ARG,
               "tirx_kernels_rmsnorm_fp8_build: width is 0, expected 1 to 2^31 - 1");
  expect_error(tirx_kernels_rmsnorm_fp8_build(&(tirx_row_options){.threads = 96}, B, 4096, true, &k),
               TIRX_E_INVALID_ARG, "tirx_kernels_rmsnorm_fp8_build: opts->threads is 96, expected 0 "
               "or a power of two in 64..1024");
  expect_error(tirx_op_rmsnorm_fp8(NULL, NULL, x, w, out, sc, 1e-6f, NULL), TIRX_E_NULL_ARG,
               "tirx_op_rmsnorm_fp8: rt is NULL");
  expect_error(tirx_op_rmsnorm_fp8(rt, NULL, NULL, w, out, sc, 1e-6f, NULL), TIRX_E_NULL_ARG,
               "tirx_op_rmsnorm_fp8: x is NULL");
  expect_error(tirx_op_rmsnorm_fp8(rt, NULL, T2(0x10000, E, 8, 4096), w, out, sc, 1e-6f, NULL),
               TIRX_E_TYPE, "tirx_op_rmsnorm_fp8: x has dtype fp8_e4m3, expected f32, f16 or bf16");
  expect_error(tirx_op_rmsnorm_fp8(rt, NULL, x, T1(0x20000, B, 4000), out, sc, 1e-6f, NULL),
               TIRX_E_INVALID_ARG, "tirx_op_rmsnorm_fp8: w has shape [4000], expected [W] = [4096]");
  expect_error(tirx_op_rmsnorm_fp8(rt, NULL, x, w, NULL, sc, 1e-6f, NULL), TIRX_E_NULL_ARG,
               "tirx_op_rmsnorm_fp8: out is NULL");
  expect_error(tirx_op_rmsnorm_fp8(rt, NULL, x, w, T2(0x30000, B, 8, 4096), sc, 1e-6f, NULL),
               TIRX_E_TYPE, "tirx_op_rmsnorm_fp8: out has dtype bf16, expected fp8_e4m3");
  expect_error(tirx_op_rmsnorm_fp8(rt, NULL, x, w, T2(0x30000, TIRX_U8, 8, 4096), sc, 1e-6f, NULL),
               TIRX_E_TYPE, "tirx_op_rmsnorm_fp8: out has dtype u8, expected fp8_e4m3");
  expect_error(tirx_op_rmsnorm_fp8(rt, NULL, x, w, T2(0x30000, E, 8, 4095), sc, 1e-6f, NULL),
               TIRX_E_INVALID_ARG, "tirx_op_rmsnorm_fp8: out has shape [8, 4095], expected [rows, W] = [8, 4096]");
  expect_error(tirx_op_rmsnorm_fp8(rt, NULL, x, w, T2(0x30008, E, 8, 4096), sc, 1e-6f, NULL),
               TIRX_E_INVALID_ARG, "tirx_op_rmsnorm_fp8: out->data 0x30008 is not aligned to 16 bytes");
  expect_error(tirx_op_rmsnorm_fp8(rt, NULL, x, w, out, NULL, 1e-6f, NULL), TIRX_E_NULL_ARG,
               "tirx_op_rmsnorm_fp8: scale is NULL");
  expect_error(tirx_op_rmsnorm_fp8(rt, NULL, x, w, out, T1(0x40000, B, 8), 1e-6f, NULL), TIRX_E_TYPE,
               "tirx_op_rmsnorm_fp8: scale has dtype bf16, expected f32");
  expect_error(tirx_op_rmsnorm_fp8(rt, NULL, x, w, out, T1(0x40000, TIRX_F32, 7), 1e-6f, NULL),
               TIRX_E_INVALID_ARG, "tirx_op_rmsnorm_fp8: scale has shape [7], expected [rows] = [8]");
  expect_error(tirx_op_rmsnorm_fp8(rt, NULL, x, w, out, T2(0x40000, TIRX_F32, 8, 2), 1e-6f, NULL),
               TIRX_E_INVALID_ARG, "tirx_op_rmsnorm_fp8: scale has shape [8, 2], expected [rows, 1] = [8, 1]");
  expect_error(tirx_op_rmsnorm_fp8(rt, NULL, x, w, out,
                                   &(tirx_tensor_arg){PTR(0x40000), TIRX_F32, 3, (int64_t[]){8, 1, 1}, NULL},
                                   1e-6f, NULL),
               TIRX_E_INVALID_ARG, "tirx_op_rmsnorm_fp8: scale has rank 3, expected 1 ([rows]) or 2 ([rows, 1])");
  expect_error(tirx_op_rmsnorm_fp8(rt, &(tirx_row_options){.cluster = 3}, x, w, out, sc, 1e-6f, NULL),
               TIRX_E_INVALID_ARG, "tirx_op_rmsnorm_fp8: opts->cluster is 3, expected 0, 1, 2 or 4");
  expect_error(tirx_op_add_rmsnorm_fp8(rt, NULL, x, NULL, w, out, ro_, sc, 1e-6f, NULL), TIRX_E_NULL_ARG,
               "tirx_op_add_rmsnorm_fp8: res is NULL");
  expect_error(tirx_op_add_rmsnorm_fp8(rt, NULL, x, T2(0x60000, B, 4, 4096), w, out, ro_, sc, 1e-6f, NULL),
               TIRX_E_INVALID_ARG, "tirx_op_add_rmsnorm_fp8: res has shape [4, 4096], expected [rows, W] = [8, 4096]");
  expect_error(tirx_op_add_rmsnorm_fp8(rt, NULL, x, x, w, out, NULL, sc, 1e-6f, NULL), TIRX_E_NULL_ARG,
               "tirx_op_add_rmsnorm_fp8: res_out is NULL");
  expect_error(tirx_op_add_rmsnorm_fp8(rt, NULL, x, x, w, out, T2(0x50000, TIRX_F16, 8, 4096), sc, 1e-6f, NULL),
               TIRX_E_TYPE, "tirx_op_add_rmsnorm_fp8: res_out has dtype f16, expected bf16");
  expect_error(tirx_op_add_rmsnorm_fp8(rt, NULL, x, x, w, out, ro_, T1(0x40000, TIRX_F32, 9), 1e-6f, NULL),
               TIRX_E_INVALID_ARG, "tirx_op_add_rmsnorm_fp8: scale has shape [9], expected [rows] = [8]");
  cr_assert_eq(tirx_kernels_cached(), 0, "a bad call built a kernel");
  char want[1024];
  snprintf(want, sizeof want, "tirx_op_rmsnorm_fp8: tirx_launch: no CUDA device: %s",
           tirx_runtime_device_error(rt));
  expect_error(tirx_op_rmsnorm_fp8(rt, NULL, x, w, out, sc, 1e-6f, NULL), TIRX_E_NO_DEVICE, want);
  snprintf(want, sizeof want, "tirx_op_add_rmsnorm_fp8: tirx_launch: no CUDA device: %s",
           tirx_runtime_device_error(rt));
  expect_error(tirx_op_add_rmsnorm_fp8(rt, NULL, x, x, w, out, ro_, T2(0x40000, TIRX_F32, 8, 1), 1e-6f,
                                       NULL), TIRX_E_NO_DEVICE, want);
  cr_assert_eq(tirx_kernels_cached(), 2);
  tirx_kernels_clear();
  tirx_runtime_destroy(rt);
}

/* Every width and dtype the GPU suite runs (tests/gpu/test_gpu.c, fp8_*) builds, with e4m3
 * stores of eight bytes exactly where W is a multiple of 8 and the dtype's vectors hold 8
 * (f16, bf16), else of four where W is a multiple of 4 (f32's vectors hold 4), and compiles for
 * sm_90a without local memory; the conversion is the PTX cvt, the 8-byte store one
 * st.global.v2 of two words. */
Test(kernels_rows, fp8_norms_build_and_compile_for_every_tested_width, .timeout = 600) {
  tirx_runtime *rt = no_device();
  static const int64_t widths[] = {1, 3, 100, 1000, 2048, 3072, 4096, 5000, 5120, 6144, 7168, 7000, 8191};
  static const tirx_dtype dts[] = {TIRX_BF16, TIRX_F16, TIRX_F32};
  int compiled = 0;
  for (int add = 0; add < 2; add++)
    for (size_t d = 0; d < 3; d++)
      for (size_t w = 0; w < sizeof widths / sizeof widths[0]; w++)
        for (int scalar = 0; scalar < 2; scalar++) {
          tirx_kernel *k = NULL;
          tirx_row_options o = {.scalar = scalar};
          cr_assert_eq(tirx_kernels_rmsnorm_fp8_build(&o, dts[d], widths[w], add, &k), TIRX_OK,
                       "%s", tirx_last_error());
          const char *src = tirx_kernel_source(k);
          cr_assert_str_eq(tirx_kernel_name(k), add ? "add_rmsnorm_fp8" : "rmsnorm_fp8");
          bool x4 = strstr(src, "  tirx_st_e4m3x4(&out[") != NULL;
          bool x8 = strstr(src, "  tirx_st_e4m3x8(&out[") != NULL;
          /* whole 16-byte vectors on every lane (a warp's 32 or a CTA's) and rows of 8 (4) bytes */
          int64_t vec = 16 / tirx_dtype_size(dts[d]);
          bool vectors = widths[w] >= vec * 32;
          bool want8 = vectors && vec == 8 && widths[w] % 8 == 0;
          bool want4 = vectors && !want8 && widths[w] % 4 == 0;
          cr_assert_eq(x8, want8, "%s %lld: 8-byte stores %d, expected %d", tirx_dtype_name(dts[d]),
                       (long long)widths[w], x8, want8);
          cr_assert_eq(x4, want4, "%s %lld: 4-byte stores %d, expected %d", tirx_dtype_name(dts[d]),
                       (long long)widths[w], x4, want4);
          assert_has(src, "asm(\"cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;\"");
          assert_has(src, add ? "unsigned char *out, " : "unsigned char *out, float *scale, float eps)");
          if (add) assert_has(src, " *res_out, float *scale, float eps)");
          /* NVRTC: the cases of the GPU suite's op tests, both forms */
          if (!scalar && dts[d] != TIRX_F16) {
            tirx_compiled *c = NULL;
            cr_assert_eq(tirx_compile(rt, k, "sm_90a", &c), TIRX_OK, "%s %lld: %s",
                         tirx_dtype_name(dts[d]), (long long)widths[w], tirx_last_error());
            const char *ptx = tirx_compiled_ptx(c);
            assert_has(ptx, "cvt.rn.satfinite.e4m3x2.f32");
            if (want8)
              cr_assert(strstr(ptx, "st.global.v2.u32") || strstr(ptx, "st.global.v2.b32"),
                        "%s %lld: no 8-byte store", tirx_dtype_name(dts[d]), (long long)widths[w]);
            cr_assert_null(strstr(ptx, ".local"), "%s %lld uses local memory",
                           tirx_dtype_name(dts[d]), (long long)widths[w]);
            tirx_compiled_destroy(c);
            compiled++;
          }
          tirx_kernel_release(k);
        }
  cr_assert_eq(compiled, 2 * 2 * 13);
  tirx_runtime_destroy(rt);
}

/* rmsnorm_fp8 stages its rows where rmsnorm does, for the same options (rmsnorm's plan is its
 * plan): the persistent loop over rows, the ring, the weight row in shared memory (not with
 * TIRX_ROW_VARIANT_WEIGHTS_GLOBAL), the e4m3 stores and the first thread's scale store at the
 * loop's row; add_rmsnorm_fp8 (two inputs) never. The GPU suite's staged cases (fp8_staged_*)
 * build, and their bf16 and f32 forms compile for sm_90a without local memory. */
Test(kernels_rows, rmsnorm_fp8_is_staged_as_rmsnorm_is, .timeout = 600) {
  tirx_runtime *rt = no_device();
  static const tirx_dtype dts[] = {TIRX_BF16, TIRX_F16, TIRX_F32};
  static const struct { int64_t width; int flags, stages; } cases[] = {
      {16384, 0, 0}, {20000, 0, 0}, {32768, 0, 0}, {2048, TIRX_ROW_VARIANT_STAGED, 0},
      {5000, TIRX_ROW_VARIANT_STAGED, 0}, {5120, TIRX_ROW_VARIANT_STAGED, 0},
      {7168, TIRX_ROW_VARIANT_STAGED, 0}, {7168, 0, 1}, {8191, TIRX_ROW_VARIANT_STAGED, 0},
      {16384, TIRX_ROW_VARIANT_UNSTAGED, 0}, {16384, TIRX_ROW_VARIANT_WEIGHTS_GLOBAL, 0},
      {5000, TIRX_ROW_VARIANT_STAGED | TIRX_ROW_VARIANT_WEIGHTS_GLOBAL, 0}};
  int staged = 0, compiled = 0;
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
    for (size_t d = 0; d < 3; d++)
      for (int add = 0; add < 2; add++) {
        tirx_row_options o = {.variant = cases[c].flags, .stages = cases[c].stages};
        int S = row_plan(TIRX_ROW_OP_RMSNORM, &o, dts[d], cases[c].width).stages;
        tirx_kernel *k = NULL;
        cr_assert_eq(tirx_kernels_rmsnorm_fp8_build(&o, dts[d], cases[c].width, add, &k), TIRX_OK,
                     "%s", tirx_last_error());
        const char *src = tirx_kernel_source(k);
        char what[96];
        snprintf(what, sizeof what, "%srmsnorm_fp8 %s %lld variant %d stages %d", add ? "add_" : "",
                 tirx_dtype_name(dts[d]), (long long)cases[c].width, cases[c].flags,
                 cases[c].stages);
        bool ring = strstr(src, " *ring = ") != NULL;
        cr_assert_eq(ring, !add && S > 0, "%s: ring %d, rmsnorm's plan %d stages", what, ring, S);
        if (ring) {
          char want[96];
          snprintf(want, sizeof want, " *ring = (%s *)(tirx_smem + 0); /* ((%d),(%lld))",
                   dts[d] == TIRX_F32 ? "float" : dts[d] == TIRX_F16 ? "tirx_f16" : "tirx_bf16", S,
                   (long long)cases[c].width);
          assert_has(src, want);
          bool wrows = strstr(src, " *wrows = ") != NULL;
          cr_assert_eq(wrows, !(cases[c].flags & TIRX_ROW_VARIANT_WEIGHTS_GLOBAL), "%s: wrows %d",
                       what, wrows);
          assert_has(src, "for (int row = (int)blockIdx.x; row < rows; row += (int)gridDim.x) {");
          assert_has(src, "    if (((int)threadIdx.x == 0)) {\n      scale[(long long)row] = sc;\n    }\n"
                          "    it = (it + 1);\n  }\n");
          snprintf(want, sizeof want, "(&out[(long long)row * %lldLL + ", (long long)cases[c].width);
          assert_has(src, want);
          staged++;
        }
        if (dts[d] != TIRX_F16 && ring) {
          tirx_compiled *cc = NULL;
          cr_assert_eq(tirx_compile(rt, k, "sm_90a", &cc), TIRX_OK, "%s: %s", what, tirx_last_error());
          const char *ptx = tirx_compiled_ptx(cc);
          assert_has(ptx, "cp.async.bulk.tensor.3d.shared::cluster.global");
          assert_has(ptx, "cvt.rn.satfinite.e4m3x2.f32");
          cr_assert_null(strstr(ptx, ".local"), "%s uses local memory", what);
          tirx_compiled_destroy(cc);
          compiled++;
        }
        tirx_kernel_release(k);
      }
  cr_assert_eq(staged, 29, "%d staged kernels", staged);
  cr_assert_eq(compiled, 19, "%d kernels compiled", compiled);
  tirx_runtime_destroy(rt);
}

/* The generated code of the other row kernels does not carry the e4m3 helpers; compiled for an
 * arch without the conversion, an fp8 kernel fails with a message that says so. */
Test(kernels_rows, the_e4m3_helpers_only_go_where_they_are_used, .timeout = 120) {
  tirx_kernel *k = NULL;
  cr_assert_eq(tirx_kernels_row_build(TIRX_ROW_OP_RMSNORM, NULL, TIRX_BF16, 4096, &k), TIRX_OK);
  cr_assert_null(strstr(tirx_kernel_source(k), "e4m3"));
  tirx_kernel_release(k);
  tirx_runtime *rt = no_device();
  cr_assert_eq(tirx_kernels_rmsnorm_fp8_build(NULL, TIRX_BF16, 4096, false, &k), TIRX_OK);
  tirx_compiled *c = NULL;
  cr_assert_neq(tirx_compile(rt, k, "sm_80", &c), TIRX_OK);
  assert_has(tirx_last_error(), "the e4m3 conversion (cvt.rn.satfinite.e4m3x2.f32) needs sm_89 or newer");
  tirx_kernel_release(k);
  tirx_runtime_destroy(rt);
}

/* ---- the elementwise form of silu_mul and chain (rows.c, build_elementwise) ---- */

/* Which form the plan and the build take: the per-row form by default (the elementwise form
 * measured slower: rows.c, row_elementwise); TIRX_ROW_VARIANT_ELEMENTWISE forces it for silu_mul
 * and chain, TIRX_ROW_VARIANT_PER_ROW the per-row form; the other ops never take it. */
Test(kernels_rows, silu_mul_and_chain_take_the_elementwise_form_only_when_asked) {
  static const int64_t widths[] = {1, 3, 8, 64, 1000, 4095, 5000, 8191, 8192, 32768};
  static const tirx_dtype dts[] = {TIRX_F32, TIRX_F16, TIRX_BF16};
  for (size_t w = 0; w < sizeof widths / sizeof widths[0]; w++)
    for (int d = 0; d < 3; d++) {
      int64_t W = widths[w];
      tirx_row_plan p = row_plan(TIRX_ROW_OP_CHAIN, &ro, dts[d], W);
      cr_assert_eq(p.elementwise, 0, "chain %s %lld", tirx_dtype_name(dts[d]), (long long)W);
      p = row_plan(TIRX_ROW_OP_SILU_MUL, &ro, dts[d], W);
      cr_assert_eq(p.elementwise, 0, "silu_mul %s %lld", tirx_dtype_name(dts[d]), (long long)W);
      ro.variant = TIRX_ROW_VARIANT_ELEMENTWISE;
      p = row_plan(TIRX_ROW_OP_CHAIN, &ro, dts[d], W);
      cr_assert_eq(p.elementwise, 1, "chain %s %lld", tirx_dtype_name(dts[d]), (long long)W);
      cr_assert_eq(p.threads, 256);
      cr_assert_eq(p.cluster, 1);
      cr_assert_eq(p.stages, 0);
      ro.variant = 0;
      for (int op = 0; op < TIRX_ROW_OP_COUNT; op++) {
        ro.variant = TIRX_ROW_VARIANT_PER_ROW;
        cr_assert_eq(row_plan((tirx_row_op)op, &ro, dts[d], W).elementwise, 0);
        ro.variant = TIRX_ROW_VARIANT_ELEMENTWISE;
        bool ew = op == TIRX_ROW_OP_SILU_MUL || op == TIRX_ROW_OP_CHAIN;
        cr_assert_eq(row_plan((tirx_row_op)op, &ro, dts[d], W).elementwise, ew, "%s",
                     tirx_kernels_row_name((tirx_row_op)op));
        ro.variant = 0;
      }
    }
  ro.variant = TIRX_ROW_VARIANT_ELEMENTWISE;
  /* opts->threads is the CTA's size; opts->min_blocks the CTAs per SM the grid assumes */
  ro.threads = 128;
  cr_assert_eq(row_plan(TIRX_ROW_OP_CHAIN, &ro, TIRX_BF16, 8192).threads, 128);
  char err[1024] = "";
  tirx_kernel *k = row_kernel(TIRX_ROW_OP_CHAIN, &ro, TIRX_BF16, 8192, false, err, sizeof err);
  cr_assert_not_null(k, "%s", err);
  assert_has(tirx_kernel_source(k), "__launch_bounds__(128, 8) chain(");
  tirx_kernel_release(k);
  ro.threads = 0, ro.min_blocks = 3;
  k = row_kernel(TIRX_ROW_OP_SILU_MUL, &ro, TIRX_BF16, 8192, false, err, sizeof err);
  cr_assert_not_null(k, "%s", err);
  assert_has(tirx_kernel_source(k), "__launch_bounds__(256, 3) silu_mul(");
  tirx_kernel_release(k);
  ro.min_blocks = 0, ro.variant = 0;
}

/* The per-row kernel stays reachable (TIRX_ROW_VARIANT_PER_ROW): a CTA per row as before, with
 * the same parameters as the elementwise form, so either launches with the same arguments. */
Test(kernels_rows, the_per_row_form_is_kept_behind_a_variant_bit) {
  for (int op = TIRX_ROW_OP_SILU_MUL; op <= TIRX_ROW_OP_CHAIN; op++) {
    char err[1024] = "";
    ro.variant = TIRX_ROW_VARIANT_ELEMENTWISE;
    tirx_kernel *e = row_kernel((tirx_row_op)op, &ro, TIRX_BF16, 8192, false, err, sizeof err);
    cr_assert_not_null(e, "%s", err);
    ro.variant = TIRX_ROW_VARIANT_PER_ROW;
    tirx_kernel *r = row_kernel((tirx_row_op)op, &ro, TIRX_BF16, 8192, false, err, sizeof err);
    ro.variant = 0;
    cr_assert_not_null(r, "%s", err);
    assert_has(tirx_kernel_source(r), "  const int row = (int)blockIdx.x;\n");
    cr_assert_null(strstr(tirx_kernel_source(r), "blk"));
    assert_has(tirx_kernel_source(e), "for (long long blk = cta; blk < full; blk += grid) {");
    cr_assert_eq(tirx_kernel_num_params(e), tirx_kernel_num_params(r));
    for (int i = 0; i < tirx_kernel_num_params(e); i++)
      cr_assert_str_eq(tirx_kernel_param_name(e, i), tirx_kernel_param_name(r, i));
    tirx_kernel_release(e), tirx_kernel_release(r);
  }
}

/* The n-th occurrence (0-based) of what in text, or NULL. */
static const char *nth(const char *text, const char *what, int n) {
  const char *p = text;
  for (int i = 0; p && i <= n; i++) {
    p = strstr(p, what);
    if (p && i < n) p += strlen(what);
  }
  return p;
}

static int count(const char *text, const char *what) {
  int n = 0;
  for (const char *p = strstr(text, what); p; p = strstr(p + strlen(what), what)) n++;
  return n;
}

/*
 * The elementwise kernels' source and PTX (sm_90a, NVRTC), every dtype at widths of whole
 * vectors and odd ones: a grid-stride loop whose body loads all its slots (4 vectors of 16
 * bytes of each input a thread) before the first use, 16-byte ld.global.v4 / st.global.v4 (u32
 * or f32; no cache hint: rows.c, session 15's measurements) in the PTX wherever the unit is 16
 * bytes (chain at every width, flattened), the partial block and (chain at odd widths) the
 * element tail, and no local memory.
 */
Test(kernels_rows, the_elementwise_form_moves_several_vectors_a_thread_and_compiles,
     .timeout = 900) {
  tirx_runtime *rt = no_device();
  static const int64_t widths[] = {1, 3, 4095, 5000, 8191, 8192};
  static const tirx_dtype dts[] = {TIRX_BF16, TIRX_F16, TIRX_F32};
  int compiled = 0;
  ro.variant = TIRX_ROW_VARIANT_ELEMENTWISE;
  for (int op = TIRX_ROW_OP_SILU_MUL; op <= TIRX_ROW_OP_CHAIN; op++)
    for (int d = 0; d < 3; d++)
      for (size_t w = 0; w < sizeof widths / sizeof widths[0]; w++) {
        bool silu = op == TIRX_ROW_OP_SILU_MUL;
        int64_t W = widths[w], vec = 16 / tirx_dtype_size(dts[d]), g = vec;
        while (silu && W % g) g /= 2;
        char what[96], err[1024] = "", load[96];
        snprintf(what, sizeof what, "%s %s %lld", tirx_kernels_row_name((tirx_row_op)op),
                 tirx_dtype_name(dts[d]), (long long)W);
        tirx_kernel *k = row_kernel((tirx_row_op)op, &ro, dts[d], W, false, err, sizeof err);
        cr_assert_not_null(k, "%s: %s", what, err);
        const char *src = tirx_kernel_source(k), *rep = tirx_kernel_dispatch_report(k);
        const char *loop = strstr(src, "for (long long blk = cta; blk < full; blk += grid) {");
        cr_assert_not_null(loop, "%s: no grid-stride loop", what);
        assert_has(src, "__launch_bounds__(256, 4)");
        assert_has(src, "if ((((full * "); /* the partial block */
        cr_assert_eq(strstr(src, "(nu * ") != NULL, !silu && W % vec != 0, "%s: element tail", what);
        /* slots: 64 bytes of each input a thread, in units of g elements (at most 8) */
        int64_t slots = 64 / (g * tirx_dtype_size(dts[d]));
        if (slots > 8) slots = 8;
        int64_t loads = slots * (silu ? 2 : 1);
        if (g > 1) {
          snprintf(load, sizeof load, "tirx_vcopy<%s, %lld, 8>(",
                   dts[d] == TIRX_F32 ? "float" : dts[d] == TIRX_F16 ? "tirx_f16" : "tirx_bf16",
                   (long long)g);
          snprintf(err, sizeof err, "copy(arch=sm_90, roles=global->local, team=thread) -> "
                   "copy.vec vec=%lld", (long long)g);
          assert_has(rep, err);
          /* every load of the loop's body comes before its first use (the first cast or, for
           * f32, the first multiply) */
          const char *last = nth(loop, load, (int)loads - 1);
          const char *use = strstr(loop, dts[d] == TIRX_F32 ? "] = (" : "_to_f32(");
          cr_assert(last && use && last < use, "%s: the loop's %lld loads are not all before "
                    "the first use", what, (long long)loads);
        } else {
          assert_has(rep, "copy(arch=sm_90, roles=global->local, team=thread) -> copy.scalar");
        }
        tirx_compiled *c = NULL;
        cr_assert_eq(tirx_compile(rt, k, "sm_90a", &c), TIRX_OK, "%s: %s", what, tirx_last_error());
        const char *ptx = tirx_compiled_ptx(c);
        cr_assert_null(strstr(ptx, ".local"), "%s uses local memory", what);
        if (g * tirx_dtype_size(dts[d]) == 16) {
          /* 16-byte loads and stores (NVVM drops the partial block where rows * W is always a
           * multiple of a block: 8192 bf16), the loop's loads before its first sigmoid */
          cr_assert_geq(count(ptx, "ld.global.v4."), loads, "%s", what);
          cr_assert_geq(count(ptx, "st.global.v4."), slots, "%s", what);
          const char *last = nth(ptx, "ld.global.v4.", (int)loads - 1);
          const char *ex2 = strstr(ptx, "ex2.approx");
          cr_assert(last && ex2 && last < ex2, "%s: a sigmoid before the %lld-th load", what,
                    (long long)loads);
        }
        tirx_compiled_destroy(c);
        tirx_kernel_release(k);
        compiled++;
      }
  ro.variant = 0;
  cr_assert_eq(compiled, 2 * 3 * 6);
  tirx_runtime_destroy(rt);
}

/* The op builds the kernel its options ask for: the elementwise and per-row forms of one
 * shape are two kernels of the table, and a request that sets both bits is refused before
 * anything is built. */
Test(kernels_rows, the_silu_mul_op_takes_either_form, .timeout = 120) {
  tirx_runtime *rt = no_device();
  const tirx_tensor_arg *x = T2(0x10000, TIRX_BF16, 8, 8192), *out = T2(0x30000, TIRX_BF16, 8, 4096);
  char want[1024];
  snprintf(want, sizeof want, "tirx_op_silu_mul: tirx_launch: no CUDA device: %s",
           tirx_runtime_device_error(rt));
  tirx_kernels_clear();
  expect_error(tirx_op_silu_mul(rt, NULL, x, out, NULL), TIRX_E_NO_DEVICE, want);
  tirx_row_options o = {.variant = TIRX_ROW_VARIANT_ELEMENTWISE};
  expect_error(tirx_op_silu_mul(rt, &o, x, out, NULL), TIRX_E_NO_DEVICE, want);
  o.variant = TIRX_ROW_VARIANT_PER_ROW;
  expect_error(tirx_op_silu_mul(rt, &o, x, out, NULL), TIRX_E_NO_DEVICE, want);
  cr_assert_eq(tirx_kernels_cached(), 3); /* the default, forced elementwise, per row */
  o.variant = TIRX_ROW_VARIANT_PER_ROW | TIRX_ROW_VARIANT_ELEMENTWISE;
  expect_error(tirx_op_silu_mul(rt, &o, x, out, NULL), TIRX_E_INVALID_ARG,
               "tirx_op_silu_mul: opts->variant is 96: TIRX_ROW_VARIANT_PER_ROW and "
               "TIRX_ROW_VARIANT_ELEMENTWISE exclude each other");
  cr_assert_eq(tirx_kernels_cached(), 3);
  tirx_kernels_clear();
  tirx_runtime_destroy(rt);
}
