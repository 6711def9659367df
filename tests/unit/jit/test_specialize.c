/* Specialisation variants (src/ir/kernel.c tirx__kernel_variant_source, the codegen prologue):
 * exact #define prefixes, key errors, determinism, and NVRTC compiles of the dynamic, VALUE and
 * DIV16 variants for sm_90a (no GPU needed). */
#include "../helpers.h"
#include "ir/kernel_abi.h"
#include "jit/jit.h"
#include "demo_kernels.h"

TestSuite(specialize);

/* rowsum(m: i32 div16, n: i64 value, x: f32[m, n], y: f32[m]): y[i] = sum_j x[i, j]. */
static tirx_kernel *rowsum(tirx_specialize n_policy) {
  tirx_builder *b = tirx_builder_create("rowsum");
  tirx_expr *m = tirx_param_int(b, "m", TIRX_I32);
  tirx_expr *n = tirx_param_int(b, "n", TIRX_I64);
  tirx_param_set_policy(b, n, n_policy);
  tirx_tensor *x = tirx_param_tensor(b, "x", TIRX_F32, TIRX_EXPRS(m, n), NULL);
  tirx_tensor *y = tirx_param_tensor(b, "y", TIRX_F32, TIRX_EXPRS(m), NULL);
  tirx_set_block(b, 128, 1, 1);
  tirx_set_grid(b, tirx_ceildiv(b, m, tirx_int(b, 128)), NULL, NULL);
  tirx_expr *i = tirx_let(b, "i", tirx_add(b, tirx_mul(b, tirx_block_idx(b, 0), tirx_int(b, 128)),
                                           tirx_thread_idx(b, 0)));
  tirx_if_begin(b, tirx_lt(b, i, m));
  tirx_expr *acc = tirx_var(b, "acc", TIRX_F32, NULL);
  tirx_expr *j = tirx_for_begin(b, "j", tirx_int(b, 0), n, NULL, TIRX_LOOP_SERIAL);
  tirx_assign(b, acc, tirx_add(b, acc, tirx_load(b, x, TIRX_EXPRS(i, j))));
  tirx_for_end(b);
  tirx_store(b, y, TIRX_EXPRS(i), acc);
  tirx_if_end(b);
  tirx_kernel *k = NULL;
  cr_assert_eq(tirx_kernel_build(b, &k), TIRX_OK, "%s", tirx_builder_error(b));
  tirx_builder_destroy(b);
  return k;
}

static char *variant(const tirx_kernel *k, int nspec, const int64_t *spec) {
  char *s = NULL;
  cr_assert_eq(tirx__kernel_variant_source(k, nspec, spec, &s), TIRX_OK, "%s", tirx_last_error());
  cr_assert_not_null(s);
  return s;
}

/* Asserts s is prefix followed by k's plain source. */
static void assert_variant(const tirx_kernel *k, const char *s, const char *prefix) {
  size_t n = strlen(prefix);
  cr_assert(strncmp(s, prefix, n) == 0, "prefix:\n%.200s\nexpected:\n%s", s, prefix);
  cr_assert_str_eq(s + n, tirx__kernel_source(k));
}

Test(specialize, variant_prefixes) {
  tirx_kernel *k = rowsum(TIRX_SPECIALIZE_VALUE);
  /* The key is in declaration order: m (div16), n (value). */
  char *s = variant(k, 2, (const int64_t[]){1, 64});
  assert_variant(k, s, "#define TIRX_DIV16_m 1\n#define TIRX_SPEC_n 64LL\n");
  free(s);
  s = variant(k, 2, (const int64_t[]){0, 64}); /* not a multiple of 16: nothing to assume */
  assert_variant(k, s, "#define TIRX_SPEC_n 64LL\n");
  free(s);
  s = variant(k, 2, (const int64_t[]){0, -3});
  assert_variant(k, s, "#define TIRX_SPEC_n (-3LL)\n");
  free(s);
  s = variant(k, 2, (const int64_t[]){1, INT64_MIN});
  assert_variant(k, s,
                 "#define TIRX_DIV16_m 1\n#define TIRX_SPEC_n (-9223372036854775807LL - 1)\n");
  free(s);
  /* nspec 0: the dynamic variant, a copy of the plain source. */
  s = variant(k, 0, NULL);
  cr_assert_str_eq(s, tirx__kernel_source(k));
  cr_assert_neq(s, tirx__kernel_source(k));
  free(s);
  tirx_kernel_release(k);
}

Test(specialize, i32_values) {
  tirx_builder *b = tirx_builder_create("ints");
  tirx_expr *a = tirx_param_int(b, "a", TIRX_I32);
  tirx_param_set_policy(b, a, TIRX_SPECIALIZE_VALUE);
  tirx_set_block(b, 32, 1, 1);
  tirx_kernel *k = NULL;
  cr_assert_eq(tirx_kernel_build(b, &k), TIRX_OK, "%s", tirx_builder_error(b));
  tirx_builder_destroy(b);
  char *s = variant(k, 1, (const int64_t[]){7});
  assert_variant(k, s, "#define TIRX_SPEC_a 7\n");
  free(s);
  s = variant(k, 1, (const int64_t[]){INT32_MIN});
  assert_variant(k, s, "#define TIRX_SPEC_a (-2147483647 - 1)\n");
  free(s);
  expect_error(tirx__kernel_variant_source(k, 1, (const int64_t[]){(int64_t)1 << 31}, &s),
               TIRX_E_INVALID_ARG,
               "kernel variant source: spec[0] (a) is 2147483648, which does not fit i32");
  cr_assert_null(s);
  tirx_kernel_release(k);
}

Test(specialize, key_errors) {
  tirx_kernel *k = rowsum(TIRX_SPECIALIZE_VALUE);
  char *s = (char *)&s;
  expect_error(tirx__kernel_variant_source(NULL, 0, NULL, &s), TIRX_E_NULL_ARG,
               "kernel variant source: k is NULL");
  cr_assert_null(s);
  expect_error(tirx__kernel_variant_source(k, 0, NULL, NULL), TIRX_E_NULL_ARG,
               "kernel variant source: out is NULL");
  expect_error(tirx__kernel_variant_source(k, 2, NULL, &s), TIRX_E_NULL_ARG,
               "kernel variant source: spec is NULL");
  expect_error(tirx__kernel_variant_source(k, 1, (const int64_t[]){1}, &s), TIRX_E_INVALID_ARG,
               "kernel variant source: the key has 1 entries, expected 2 (the kernel's "
               "specialised parameters) or 0");
  expect_error(tirx__kernel_variant_source(k, 3, (const int64_t[]){1, 2, 3}, &s),
               TIRX_E_INVALID_ARG,
               "kernel variant source: the key has 3 entries, expected 2 (the kernel's "
               "specialised parameters) or 0");
  expect_error(tirx__kernel_variant_source(k, -1, (const int64_t[]){1}, &s), TIRX_E_INVALID_ARG,
               "kernel variant source: the key has -1 entries, expected 2 (the kernel's "
               "specialised parameters) or 0");
  expect_error(tirx__kernel_variant_source(k, 2, (const int64_t[]){2, 64}, &s),
               TIRX_E_INVALID_ARG,
               "kernel variant source: spec[0] (m, divisibility by 16) is 2, expected 0 "
               "or 1");
  expect_error(tirx__kernel_variant_source(k, 2, (const int64_t[]){-1, 64}, &s),
               TIRX_E_INVALID_ARG,
               "kernel variant source: spec[0] (m, divisibility by 16) is -1, expected 0 "
               "or 1");
  cr_assert_null(s);
  tirx_kernel_release(k);
}

Test(specialize, deterministic_and_distinct) {
  tirx_kernel *k1 = rowsum(TIRX_SPECIALIZE_VALUE), *k2 = rowsum(TIRX_SPECIALIZE_VALUE);
  static const int64_t keys[][2] = {{0, 64}, {1, 64}, {0, 65}, {1, 65}, {0, 1000000}};
  enum { NK = sizeof keys / sizeof keys[0] };
  char *v1[NK], *v2[NK];
  for (int i = 0; i < NK; i++) {
    v1[i] = variant(k1, 2, keys[i]);
    v2[i] = variant(k2, 2, keys[i]);
    cr_assert_str_eq(v1[i], v2[i], "key %d: two builds of one kernel differ", i);
    cr_assert_str_neq(v1[i], tirx__kernel_source(k1));
  }
  for (int i = 0; i < NK; i++)
    for (int j = i + 1; j < NK; j++) cr_assert_str_neq(v1[i], v1[j], "keys %d and %d", i, j);
  for (int i = 0; i < NK; i++) {
    free(v1[i]);
    free(v2[i]);
  }
  tirx_kernel_release(k1);
  tirx_kernel_release(k2);
}

Test(specialize, plan_key_selects_the_variant) {
  tirx_kernel *k = rowsum(TIRX_SPECIALIZE_VALUE);
  static tirx__launch_plan plan;
  static const int64_t shape[] = {256, 96};
  tirx_arg args[] = {tirx_arg_tensor((void *)(uintptr_t)0x1000, TIRX_F32, 2, shape, NULL),
                     tirx_arg_tensor((void *)(uintptr_t)0x2000, TIRX_F32, 1, shape, NULL)};
  cr_assert_eq(tirx__kernel_plan(k, "tirx_launch", args, 2, &plan), TIRX_OK, "%s",
               tirx_last_error());
  cr_assert_eq(plan.nspec, 2);
  char *s = variant(k, plan.nspec, plan.spec);
  assert_variant(k, s, "#define TIRX_DIV16_m 1\n#define TIRX_SPEC_n 96LL\n");
  free(s);
  tirx_kernel_release(k);
}

/* ---- NVRTC ---- */

static tirx__nvrtc_output compile(const char *name, const char *src) {
  tirx__nvrtc_output out;
  memset(&out, 0, sizeof out);
  cr_assert_eq(tirx__nvrtc_compile("test", name, src, "sm_90a", true, &out), TIRX_OK, "%s",
               tirx_last_error());
  cr_assert_not_null(out.ptx);
  return out;
}

/* The .entry line with its parameter list, malloc'ed. */
static char *entry_decl(const char *ptx) {
  const char *a = strstr(ptx, ".entry ");
  cr_assert_not_null(a);
  const char *e = strchr(a, ')');
  cr_assert_not_null(e);
  return strndup(a, (size_t)(e - a + 1));
}

Test(specialize, variants_compile_and_value_is_folded) {
  tirx_kernel *k = rowsum(TIRX_SPECIALIZE_VALUE);
  char *dyn_src = variant(k, 0, NULL);
  char *val_src = variant(k, 2, (const int64_t[]){0, 64});
  char *both_src = variant(k, 2, (const int64_t[]){1, 64});
  tirx__nvrtc_output dyn = compile("rowsum", dyn_src);
  tirx__nvrtc_output val = compile("rowsum", val_src);
  tirx__nvrtc_output both = compile("rowsum", both_src);
  /* One parameter list for every variant. */
  char *e_dyn = entry_decl(dyn.ptx), *e_val = entry_decl(val.ptx), *e_both = entry_decl(both.ptx);
  cr_assert_str_eq(e_dyn, e_val);
  cr_assert_str_eq(e_dyn, e_both);
  /* n is parameter 1: the dynamic variant loads it, the specialised ones never do. */
  cr_assert_not_null(strstr(dyn.ptx, "rowsum_param_1]"), "the dynamic variant reads n");
  cr_assert_null(strstr(val.ptx, "rowsum_param_1]"), "n = 64 is not folded:\n%s", val.ptx);
  cr_assert_null(strstr(both.ptx, "rowsum_param_1]"));
  cr_assert_str_neq(dyn.ptx, val.ptx);
  free(e_dyn);
  free(e_val);
  free(e_both);
  tirx__nvrtc_output_free(&dyn);
  tirx__nvrtc_output_free(&val);
  tirx__nvrtc_output_free(&both);
  free(dyn_src);
  free(val_src);
  free(both_src);
  tirx_kernel_release(k);
}

Test(specialize, div16_variants_of_every_example_compile) {
  /* The example kernels keep the default policy (div16): the "all multiples of 16" variant. */
  for (int i = 0; i < example_kernel_count; i++) {
    tirx_kernel *k = example_kernels[i].make();
    cr_assert_not_null(k, "%s: %s", example_kernels[i].name, tirx_last_error());
    int64_t key[TIRX__MAX_SPEC];
    int nspec = 0;
    for (int p = 0; p < tirx_kernel_num_params(k); p++) {
      tirx_specialize pol = tirx_kernel_param_policy(k, p);
      cr_assert_neq(pol, TIRX_SPECIALIZE_VALUE);
      if (pol == TIRX_SPECIALIZE_DIV16) key[nspec++] = 1;
    }
    char *src = variant(k, nspec, key);
    if (nspec)
      cr_assert_not_null(strstr(src, "#define TIRX_DIV16_"), "%s", example_kernels[i].name);
    tirx__nvrtc_output out = compile(example_kernels[i].name, src);
    char *e_var = entry_decl(out.ptx);
    tirx__nvrtc_output plain = compile(example_kernels[i].name, tirx__kernel_source(k));
    char *e_plain = entry_decl(plain.ptx);
    cr_assert_str_eq(e_var, e_plain, "%s: the parameter list differs", example_kernels[i].name);
    free(e_var);
    free(e_plain);
    tirx__nvrtc_output_free(&out);
    tirx__nvrtc_output_free(&plain);
    free(src);
    tirx_kernel_release(k);
  }
}
