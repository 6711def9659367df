/* Extensible public structs (src/core/ext.c): every struct's size field, at every public
 * function that reads or writes one: 0 and the struct's sizeof work, anything else is
 * TIRX_E_INVALID_ARG with a message naming the function and the argument. */
#include <criterion/criterion.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "core/ext.h"
#include "helpers.h"

#define PTR(v) ((void *)(uintptr_t)(v))

/* The message for a bad size: "fn: arg->size is N, expected 0 or S (sizeof(T))". */
static const char *bad(const char *fn, const char *arg, size_t size, size_t want,
                       const char *type) {
  static char buf[512];
  snprintf(buf, sizeof buf, "%s: %s->size is %zu, expected 0 or %zu (sizeof(%s))", fn, arg, size,
           want, type);
  return buf;
}

static tirx_runtime *compile_only(void) {
  tirx_runtime *rt = NULL;
  tirx_runtime_options o = {.compile_only = true, .cache_disabled = true};
  cr_assert_eq(tirx_runtime_create(&o, &rt), TIRX_OK, "%s", tirx_last_error());
  return rt;
}

Test(ext, every_struct_starts_with_its_size_and_lists_its_version) {
  cr_assert_eq(tirx__ext_type_count, 12);
  for (int i = 0; i < tirx__ext_type_count; i++) {
    const tirx__ext_type *t = tirx__ext_types[i];
    cr_assert(t->count >= 1 && t->sizes[0] > sizeof(size_t), "%s", t->name);
    cr_assert(!strncmp(t->name, "tirx_", 5), "%s", t->name);
  }
  cr_assert_eq(tirx__ext_gemm_options.sizes[0], offsetof(tirx_gemm_options, cluster_m));
  cr_assert_eq(tirx__ext_gemm_options.sizes[1], sizeof(tirx_gemm_options));
  cr_assert_str_eq(tirx__ext_gemm_options.name, "tirx_gemm_options");
}

/* The message for a bad size of a struct with two versions: "expected 0, V1 or V2". */
static const char *bad2(const char *fn, const char *arg, size_t size, size_t v1, size_t v2,
                        const char *type, const char *hint) {
  static char buf[512];
  snprintf(buf, sizeof buf, "%s: %s->size is %zu, expected 0, %zu or %zu (sizeof(%s))%s", fn, arg,
           size, v1, v2, type, hint);
  return buf;
}

Test(ext, runtime_options) {
  tirx_runtime *rt = NULL;
  const size_t want = sizeof(tirx_runtime_options);
  const size_t v1 = offsetof(tirx_runtime_options, compile_workers); /* before issue 18 */
  cr_assert_eq(tirx__ext_runtime_options.count, 2);
  cr_assert_eq(tirx__ext_runtime_options.sizes[0], v1);
  tirx_runtime_options o = {.size = 3, .compile_only = true, .cache_disabled = true};
  expect_error(tirx_runtime_create(&o, &rt), TIRX_E_INVALID_ARG,
               bad2("tirx_runtime_create", "options", 3, v1, want, "tirx_runtime_options", ""));
  cr_assert_null(rt);
  o.size = want + 8; /* a newer header's struct */
  expect_error(tirx_runtime_create(&o, &rt), TIRX_E_INVALID_ARG,
               bad2("tirx_runtime_create", "options", want + 8, v1, want,
                    "tirx_runtime_options", ""));
  o.size = want;
  cr_assert_eq(tirx_runtime_create(&o, &rt), TIRX_OK, "%s", tirx_last_error());
  tirx_runtime_destroy(rt);
  o.size = 0;
  cr_assert_eq(tirx_runtime_create(&o, &rt), TIRX_OK, "%s", tirx_last_error());
  tirx_runtime_destroy(rt);
  /* A version-1 caller: the fields after its struct are not read (here they hold a value
   * version 2 refuses). */
  o.compile_workers = 1000;
  o.size = v1;
  cr_assert_eq(tirx_runtime_create(&o, &rt), TIRX_OK, "%s", tirx_last_error());
  tirx_runtime_destroy(rt);
  o.size = 0;
  cr_assert_eq(tirx_runtime_create(&o, &rt), TIRX_OK, "%s", tirx_last_error());
  tirx_runtime_destroy(rt);
  o.size = want;
  expect_error(tirx_runtime_create(&o, &rt), TIRX_E_INVALID_ARG,
               "tirx_runtime_create: options->compile_workers is 1000, expected 0 (one per "
               "core) to 64");
}

Test(ext, cache_stats_is_written_up_to_its_size) {
  tirx_runtime *rt = compile_only();
  const size_t want = sizeof(tirx_cache_stats);
  const size_t v1 = offsetof(tirx_cache_stats, worker_compiles); /* before issue 18 */
  static const char hint[] = ": zero the struct or set its size before the call";
  tirx_cache_stats s;
  memset(&s, 0xab, sizeof s); /* not zeroed: refused, never written */
  size_t poison = s.size;
  expect_error(tirx_runtime_cache_stats(rt, &s), TIRX_E_INVALID_ARG,
               bad2("tirx_runtime_cache_stats", "out", poison, v1, want, "tirx_cache_stats",
                    hint));
  cr_assert_eq(s.hits, s.misses, "left untouched");
  memset(&s, 0xab, sizeof s);
  s.size = 0; /* version 1: its fields written, the later ones left alone */
  cr_assert_eq(tirx_runtime_cache_stats(rt, &s), TIRX_OK, "%s", tirx_last_error());
  cr_assert_eq(s.size, v1);
  cr_assert_eq(s.hits, 0);
  cr_assert_eq(s.variants, 0);
  cr_assert_eq(s.worker_compiles, s.worker_deaths, "left untouched");
  cr_assert_neq(s.worker_compiles, 0, "left untouched");
  s.size = want;
  cr_assert_eq(tirx_runtime_cache_stats(rt, &s), TIRX_OK, "%s", tirx_last_error());
  cr_assert_eq(s.size, want);
  cr_assert_eq(s.worker_compiles, 0);
  tirx_runtime_destroy(rt);
}

Test(ext, comm_options) {
  const size_t want = sizeof(tirx_comm_options);
  tirx_comm_options o = {.size = 1};
  tirx_comm_id id;
  expect_error(tirx_comm_id_generate(&o, &id), TIRX_E_INVALID_ARG,
               bad("tirx_comm_id_generate", "options", 1, want, "tirx_comm_options"));
  tirx_runtime *rt = compile_only();
  tirx_comm *c = NULL;
  expect_error(tirx_comm_create(rt, &id, 0, 1, &o, &c), TIRX_E_INVALID_ARG,
               bad("tirx_comm_create", "options", 1, want, "tirx_comm_options"));
  expect_error(tirx_comm_wrap(rt, PTR(16), &o, &c), TIRX_E_INVALID_ARG,
               bad("tirx_comm_wrap", "options", 1, want, "tirx_comm_options"));
  cr_assert_null(c);
  tirx_runtime_destroy(rt);
}

Test(ext, gemm_options_and_plan) {
  /* Both have two versions: cluster_m and cluster_n came with issue 16 */
  const size_t want = sizeof(tirx_gemm_options), v1 = offsetof(tirx_gemm_options, cluster_m);
  tirx_gemm_options o = {.size = 12};
  tirx_kernel *k = NULL;
  tirx_gemm_plan p = {0};
  tirx_gemm_tiles t;
  expect_error(tirx_kernels_gemm_build(&o, TIRX_BF16, 64, 64, 64, &k), TIRX_E_INVALID_ARG,
               bad2("tirx_kernels_gemm_build", "opts", 12, v1, want, "tirx_gemm_options", ""));
  expect_error(tirx_kernels_gemm_plan(&o, 64, 64, 64, &p), TIRX_E_INVALID_ARG,
               bad2("tirx_kernels_gemm_plan", "opts", 12, v1, want, "tirx_gemm_options", ""));
  expect_error(tirx_kernels_gemm_tiles(&o, 64, 64, 64, &t), TIRX_E_INVALID_ARG,
               bad2("tirx_kernels_gemm_tiles", "opts", 12, v1, want, "tirx_gemm_options", ""));
  tirx_runtime *rt = compile_only();
  tirx_tensor_arg a = {PTR(0x10000), TIRX_BF16, 2, (int64_t[]){64, 64}, NULL};
  expect_error(tirx_op_gemm(rt, &o, &a, &a, NULL, &a, NULL), TIRX_E_INVALID_ARG,
               bad2("tirx_op_gemm", "opts", 12, v1, want, "tirx_gemm_options", ""));
  tirx_runtime_destroy(rt);
  cr_assert_null(k);

  /* The plan: an output. Version 1 gets no cluster fields. */
  const size_t pv1 = offsetof(tirx_gemm_plan, cluster_m);
  p.size = 5;
  expect_error(tirx_kernels_gemm_plan(NULL, 64, 64, 64, &p), TIRX_E_INVALID_ARG,
               bad2("tirx_kernels_gemm_plan", "out", 5, pv1, sizeof p, "tirx_gemm_plan",
                    ": zero the struct or set its size before the call"));
  p.size = 0, p.cluster_m = -3;
  cr_assert_eq(tirx_kernels_gemm_plan(NULL, 64, 64, 64, &p), TIRX_OK, "%s", tirx_last_error());
  cr_assert_eq(p.size, pv1);
  cr_assert_str_eq(p.name, "wgmma");
  cr_assert_eq(p.cluster_m, -3, "left untouched");
  p.size = sizeof p;
  cr_assert_eq(tirx_kernels_gemm_plan(NULL, 64, 64, 64, &p), TIRX_OK, "%s", tirx_last_error());
  cr_assert_eq(p.size, sizeof p);
  cr_assert(p.cluster_m == 1 && p.cluster_n == 1, "one tile: no cluster, %dx%d", p.cluster_m,
            p.cluster_n);
  /* A version 1 caller's options (size v1): the cluster fields past it are not read */
  tirx_gemm_options o2 = {.size = v1, .cluster_m = 2, .cluster_n = 1}; /* past v1: not read */
  cr_assert_eq(tirx_kernels_gemm_plan(&o2, 256, 4096, 14336, &p), TIRX_OK, "%s",
               tirx_last_error());
  cr_assert(p.cluster_m == 1 && p.cluster_n == 1, "%dx%d", p.cluster_m, p.cluster_n);
  o.size = want, o.cluster_m = 1, o.cluster_n = 2;
  cr_assert_eq(tirx_kernels_gemm_plan(&o, 256, 4096, 14336, &p), TIRX_OK, "%s",
               tirx_last_error());
  cr_assert(p.cluster_m == 1 && p.cluster_n == 2, "%dx%d", p.cluster_m, p.cluster_n);
}

Test(ext, row_options_and_plan) {
  const size_t want = sizeof(tirx_row_options);
  tirx_row_options o = {.size = 2};
  tirx_kernel *k = NULL;
  tirx_row_plan p = {0};
  expect_error(tirx_kernels_row_plan(TIRX_ROW_OP_RMSNORM, &o, TIRX_F32, 256, &p),
               TIRX_E_INVALID_ARG,
               bad("tirx_kernels_row_plan", "opts", 2, want, "tirx_row_options"));
  expect_error(tirx_kernels_row_build(TIRX_ROW_OP_RMSNORM, &o, TIRX_F32, 256, &k),
               TIRX_E_INVALID_ARG,
               bad("tirx_kernels_row_build", "opts", 2, want, "tirx_row_options"));
  expect_error(tirx_kernels_rmsnorm_fp8_build(&o, TIRX_F32, 256, false, &k), TIRX_E_INVALID_ARG,
               bad("tirx_kernels_rmsnorm_fp8_build", "opts", 2, want, "tirx_row_options"));
  tirx_runtime *rt = compile_only();
  tirx_tensor_arg x = {PTR(0x10000), TIRX_F32, 2, (int64_t[]){4, 256}, NULL};
  tirx_tensor_arg w = {PTR(0x20000), TIRX_F32, 1, (int64_t[]){256}, NULL};
  expect_error(tirx_op_rmsnorm(rt, &o, &x, &w, &x, 1e-6f, NULL), TIRX_E_INVALID_ARG,
               bad("tirx_op_rmsnorm", "opts", 2, want, "tirx_row_options"));
  expect_error(tirx_op_softmax(rt, &o, &x, &x, NULL), TIRX_E_INVALID_ARG,
               bad("tirx_op_softmax", "opts", 2, want, "tirx_row_options"));
  tirx_runtime_destroy(rt);
  cr_assert_null(k);

  /* The plan has two versions: elementwise came with issue 20 */
  const size_t pv1 = offsetof(tirx_row_plan, elementwise);
  cr_assert_eq(tirx__ext_row_plan.count, 2);
  p.size = sizeof p + 1;
  expect_error(tirx_kernels_row_plan(TIRX_ROW_OP_RMSNORM, NULL, TIRX_F32, 256, &p),
               TIRX_E_INVALID_ARG,
               bad2("tirx_kernels_row_plan", "out", sizeof p + 1, pv1, sizeof p, "tirx_row_plan",
                    ": zero the struct or set its size before the call"));
  p.size = 0, p.elementwise = -3;
  cr_assert_eq(tirx_kernels_row_plan(TIRX_ROW_OP_CHAIN, NULL, TIRX_F32, 256, &p), TIRX_OK,
               "%s", tirx_last_error());
  cr_assert_eq(p.size, pv1);
  cr_assert_eq(p.elementwise, -3, "left untouched");
  p.size = sizeof p;
  cr_assert_eq(tirx_kernels_row_plan(TIRX_ROW_OP_RMSNORM, NULL, TIRX_F32, 256, &p), TIRX_OK,
               "%s", tirx_last_error());
  cr_assert_eq(p.size, sizeof p);
  cr_assert_eq(p.threads, 32);
  cr_assert_eq(p.elementwise, 0);
  cr_assert_eq(tirx_kernels_row_plan(TIRX_ROW_OP_CHAIN,
                                     &(tirx_row_options){.variant = TIRX_ROW_VARIANT_ELEMENTWISE},
                                     TIRX_F32, 256, &p), TIRX_OK, "%s", tirx_last_error());
  cr_assert_eq(p.elementwise, 1);
  o.size = want;
  cr_assert_eq(tirx_kernels_row_plan(TIRX_ROW_OP_RMSNORM, &o, TIRX_F32, 256, &p), TIRX_OK,
               "%s", tirx_last_error());
}

Test(ext, rope_attention_decode_options) {
  tirx_kernel *k = NULL;
  const size_t rv1 = offsetof(tirx_rope_options, q_strides); /* before issue 20 */
  cr_assert_eq(tirx__ext_rope_options.count, 2);
  cr_assert_eq(tirx__ext_rope_options.sizes[0], rv1);
  tirx_rope_options ro = {.size = 7};
  expect_error(tirx_kernels_rope_build(&ro, TIRX_BF16, TIRX_F32, 64, 8, 8, &k),
               TIRX_E_INVALID_ARG,
               bad2("tirx_kernels_rope_build", "opts", 7, rv1, sizeof ro, "tirx_rope_options", ""));
  /* A version-1 caller: the strides after its struct are not read (here a pair version 2
   * refuses). */
  ro = (tirx_rope_options){.size = rv1, .q_strides = {-1, 0}};
  cr_assert_eq(tirx_kernels_rope_build(&ro, TIRX_BF16, TIRX_F32, 64, 8, 8, &k), TIRX_OK, "%s",
               tirx_last_error());
  tirx_kernel_release(k);
  ro.size = sizeof ro;
  expect_error(tirx_kernels_rope_build(&ro, TIRX_BF16, TIRX_F32, 64, 8, 8, &k),
               TIRX_E_INVALID_ARG, "tirx_kernels_rope_build: opts->q_strides is [-1, 0], expected "
               "[0, 0] (passed at launch) or two positive strides");
  tirx_attention_options ao = {.size = 7};
  expect_error(tirx_kernels_attention_build(&ao, TIRX_BF16, 64, 8, 8, false, &k),
               TIRX_E_INVALID_ARG,
               bad("tirx_kernels_attention_build", "opts", 7, sizeof ao,
                   "tirx_attention_options"));
  tirx_runtime *rt = compile_only();
  tirx_tensor_arg q = {PTR(0x10000), TIRX_BF16, 4, (int64_t[]){1, 64, 8, 64}, NULL};
  expect_error(tirx_op_attention(rt, &ao, &q, &q, &q, &q, NULL, NULL, NULL), TIRX_E_INVALID_ARG,
               bad("tirx_op_attention", "opts", 7, sizeof ao, "tirx_attention_options"));
  tirx_decode_options d = {.size = 7};
  tirx_decode_plan dp = {0};
  expect_error(tirx_kernels_decode_plan(&d, 1, 8, 8, 1, 64, 64, &dp), TIRX_E_INVALID_ARG,
               bad("tirx_kernels_decode_plan", "opts", 7, sizeof d, "tirx_decode_options"));
  expect_error(tirx_op_decode_attention(rt, &d, &q, &q, &q, &q, &q, &q, NULL, NULL),
               TIRX_E_INVALID_ARG,
               bad("tirx_op_decode_attention", "opts", 7, sizeof d, "tirx_decode_options"));
  tirx_runtime_destroy(rt);
  /* tirx_decode_plan has two versions: ctas came with issue 15 */
  const size_t v1 = offsetof(tirx_decode_plan, ctas);
  dp.size = 1;
  expect_error(tirx_kernels_decode_plan(NULL, 1, 8, 8, 1, 64, 64, &dp), TIRX_E_INVALID_ARG,
               bad2("tirx_kernels_decode_plan", "out", 1, v1, sizeof dp, "tirx_decode_plan",
                    ": zero the struct or set its size before the call"));
  dp.size = 0, dp.ctas = -7; /* version 1: written up to workspace_bytes, ctas left alone */
  cr_assert_eq(tirx_kernels_decode_plan(NULL, 1, 8, 8, 1, 64, 64, &dp), TIRX_OK, "%s",
               tirx_last_error());
  cr_assert_eq(dp.size, v1);
  cr_assert_eq(dp.splits, 1);
  cr_assert_eq(dp.ctas, -7);
  dp.size = sizeof dp;
  cr_assert_eq(tirx_kernels_decode_plan(NULL, 1, 8, 8, 1, 64, 64, &dp), TIRX_OK, "%s",
               tirx_last_error());
  cr_assert_eq(dp.size, sizeof dp);
  cr_assert_eq(dp.ctas, 8); /* 8 items (B 1 x H_kv 8, unsplit) */
  cr_assert_null(k);
}

Test(ext, tp_spec_and_its_gemm_options) {
  tirx_tp_linear t;
  tirx_tp_spec s = {.size = 9, .dtype = TIRX_BF16, .m = 64, .n = 64, .k = 64, .nranks = 1};
  expect_error(tirx_kernels_tp_linear_create(&s, &t), TIRX_E_INVALID_ARG,
               bad("tirx_kernels_tp_linear_create", "spec", 9, sizeof s, "tirx_tp_spec"));
  s.size = 0;
  s.gemm.size = 9;
  char want[256];
  snprintf(want, sizeof want,
           "tirx_kernels_tp_linear_create: spec->gemm.size is 9, expected 0, %zu or %zu "
           "(sizeof(tirx_gemm_options))", offsetof(tirx_gemm_options, cluster_m), sizeof s.gemm);
  expect_error(tirx_kernels_tp_linear_create(&s, &t), TIRX_E_INVALID_ARG, want);
}

/* How a struct grows: a version 2 that appends a field. A caller of version 1 (its size, or 0)
 * gets the new field as 0; a version 2 caller gets it; other sizes are refused, the message
 * listing every known size. */
typedef struct grown {
  size_t size;
  int64_t a; /* version 1 */
  int64_t b; /* version 2 */
} grown;

Test(ext, a_grown_struct_reads_older_versions_with_new_fields_zero) {
  static const size_t sizes[] = {offsetof(grown, b), sizeof(grown)};
  const tirx__ext_type t = {"grown", sizes, 2};
  grown in = {.size = offsetof(grown, b), .a = 7, .b = 99}; /* b is past a v1 caller's struct */
  grown out;
  cr_assert_eq(tirx__ext_in("f", "opts", &t, &in, &out), TIRX_OK, "%s", tirx_last_error());
  cr_assert(out.size == sizeof out && out.a == 7 && out.b == 0, "%zu %lld %lld", out.size,
            (long long)out.a, (long long)out.b);
  in.size = 0;
  cr_assert_eq(tirx__ext_in("f", "opts", &t, &in, &out), TIRX_OK);
  cr_assert(out.a == 7 && out.b == 0);
  in.size = sizeof in;
  cr_assert_eq(tirx__ext_in("f", "opts", &t, &in, &out), TIRX_OK);
  cr_assert(out.a == 7 && out.b == 99);
  cr_assert_eq(tirx__ext_in("f", "opts", &t, NULL, &out), TIRX_OK);
  cr_assert(out.size == sizeof out && out.a == 0 && out.b == 0);
  in.size = 12;
  char want[200];
  snprintf(want, sizeof want, "f: opts->size is 12, expected 0, %zu or %zu (sizeof(grown))",
           offsetof(grown, b), sizeof(grown));
  expect_error(tirx__ext_in("f", "opts", &t, &in, &out), TIRX_E_INVALID_ARG, want);

  /* Output: a version 1 caller's struct is written up to its size, never past it. */
  struct {
    grown g;
    int64_t guard;
  } o = {.g = {.size = offsetof(grown, b)}, .guard = -1};
  size_t bytes = 0;
  cr_assert_eq(tirx__ext_out("f", "out", &t, &o.g, &bytes), TIRX_OK);
  cr_assert_eq(bytes, offsetof(grown, b));
  grown full = {.size = sizeof full, .a = 5, .b = 6};
  o.g.b = 42;
  tirx__ext_write(&o.g, &full, bytes);
  cr_assert(o.g.size == bytes && o.g.a == 5 && o.g.b == 42 && o.guard == -1);
}
