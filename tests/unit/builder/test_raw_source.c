/* Kernels from raw CUDA source (tirx_set_source in src/builder/builder.c and build.c): built
 * like any kernel, compiled by NVRTC (no GPU needed), checked and specialised through the
 * declared parameters; every error with its exact message. */
#include "../helpers.h"
#include "jit/jit.h"

#define FAKE_PTR ((void *)(uintptr_t)0x10000)

static const char saxpy_source[] =
    "extern \"C\" __global__ void raw_saxpy(long long n, float a, const float *x, float *y) {\n"
    "  long long i = blockIdx.x * 256ll + threadIdx.x;\n"
    "#ifdef TIRX_SPEC_n\n"
    "  if (i < TIRX_SPEC_n) y[i] = a * x[i] + y[i];\n"
    "#else\n"
    "  if (i < n) y[i] = a * x[i] + y[i];\n"
    "#endif\n"
    "}\n";

/* y = a x + y over n elements, n specialised on its value when spec. */
static tirx_builder *saxpy_builder(const char *source, bool spec) {
  tirx_builder *b = tirx_builder_create("raw_saxpy");
  tirx_expr *n = tirx_param_int(b, "n", TIRX_I64);
  if (spec)
    tirx_param_set_policy(b, n, TIRX_SPECIALIZE_VALUE);
  tirx_param_scalar(b, "a", TIRX_F32);
  tirx_param_tensor(b, "x", TIRX_F32, TIRX_EXPRS(n), NULL);
  tirx_param_tensor(b, "y", TIRX_F32, TIRX_EXPRS(n), NULL);
  tirx_set_block(b, 256, 1, 1);
  tirx_set_grid(b, tirx_ceildiv(b, n, tirx_int(b, 256)), NULL, NULL);
  tirx_set_source(b, source);
  return b;
}

static tirx_kernel *build(tirx_builder *b) {
  tirx_kernel *k = NULL;
  cr_assert_eq(tirx_kernel_build(b, &k), TIRX_OK, "%s", tirx_builder_error(b));
  tirx_builder_destroy(b);
  return k;
}

Test(raw_source, compiles_through_nvrtc_with_the_text_as_its_source) {
  tirx_kernel *k = build(saxpy_builder(saxpy_source, false));
  cr_assert_str_eq(tirx_kernel_source(k), saxpy_source);
  tirx_runtime *rt = NULL;
  cr_assert_eq(tirx_runtime_create(&(tirx_runtime_options){.compile_only = true,
                                                           .cache_disabled = true},
                                   &rt),
               TIRX_OK);
  tirx_compiled *c = NULL;
  cr_assert_eq(tirx_compile(rt, k, NULL, &c), TIRX_OK, "%s", tirx_last_error());
  size_t size = 0;
  cr_assert_not_null(tirx_compiled_cubin(c, &size));
  cr_assert_gt(size, 0);
  cr_assert_str_eq(tirx_compiled_entry(c), "raw_saxpy");
  cr_assert_not_null(strstr(tirx_compiled_ptx(c), ".entry raw_saxpy("));
  tirx_compiled_destroy(c);
  tirx_runtime_destroy(rt);
  tirx_kernel_release(k);
}

Test(raw_source, arguments_are_checked_and_variants_get_the_spec_defines) {
  tirx_kernel *k = build(saxpy_builder(saxpy_source, true));
  tirx_runtime *rt = NULL;
  cr_assert_eq(tirx_runtime_create(&(tirx_runtime_options){.compile_only = true,
                                                           .cache_disabled = true},
                                   &rt),
               TIRX_OK);
  int64_t shape[1] = {1000}, other[1] = {999};
  tirx_arg args[4] = {tirx_arg_i64(1000), tirx_arg_f32(2.0f),
                      tirx_arg_tensor(FAKE_PTR, TIRX_F32, 1, shape, NULL),
                      tirx_arg_tensor(FAKE_PTR, TIRX_F16, 1, shape, NULL)};
  tirx_future *f = (tirx_future *)&f;
  expect_error(tirx_prepare_async(rt, k, args, 4, &f), TIRX_E_LAUNCH_ARG,
               "tirx_prepare_async: argument 3 (y): dtype is f16, expected f32");
  cr_assert_null(f);
  args[3] = tirx_arg_tensor(FAKE_PTR, TIRX_F32, 1, other, NULL);
  expect_error(tirx_prepare_async(rt, k, args, 4, &f), TIRX_E_LAUNCH_ARG,
               "tirx_prepare_async: argument 3 (y): shape[0] is 999, expected 1000 (n)");
  args[3] = tirx_arg_tensor(FAKE_PTR, TIRX_F32, 1, shape, NULL);
  cr_assert_eq(tirx_prepare_async(rt, k, args, 4, &f), TIRX_OK, "%s", tirx_last_error());
  cr_assert_eq(tirx_future_wait(f, -1), TIRX_OK, "%s", tirx_last_error());
  tirx_future_release(f);
  int64_t spec = 1000;
  char *src = NULL;
  cr_assert_eq(tirx__kernel_variant_source(k, 1, &spec, &src), TIRX_OK);
  cr_assert(strncmp(src, "#define TIRX_SPEC_n 1000", 24) == 0, "%s", src);
  cr_assert_not_null(strstr(src, saxpy_source));
  free(src);
  tirx_runtime_destroy(rt);
  tirx_kernel_release(k);
}

Test(raw_source, nvrtc_errors_quote_the_text) {
  tirx_kernel *k = build(saxpy_builder(
      "extern \"C\" __global__ void raw_saxpy(long long n) { undeclared_thing(n); }\n", false));
  tirx_runtime *rt = NULL;
  cr_assert_eq(tirx_runtime_create(&(tirx_runtime_options){.compile_only = true,
                                                           .cache_disabled = true},
                                   &rt),
               TIRX_OK);
  tirx_compiled *c = NULL;
  cr_assert_eq(tirx_compile(rt, k, NULL, &c), TIRX_E_COMPILE);
  static const char head[] = "tirx_compile: NVRTC could not compile 'raw_saxpy' for sm_90a "
                             "(NVRTC_ERROR_COMPILATION):\nkernel.cu(1): error: identifier "
                             "\"undeclared_thing\" is undefined\n";
  cr_assert(strncmp(tirx_last_error(), head, sizeof head - 1) == 0, "%s", tirx_last_error());
  cr_assert_not_null(strstr(tirx_last_error(), "undeclared_thing"), "%s", tirx_last_error());
  tirx_runtime_destroy(rt);
  tirx_kernel_release(k);
}

Test(raw_source, errors) {
  tirx_set_source(NULL, "x");
  cr_assert_eq(tirx_last_status(), TIRX_E_NULL_ARG);
  cr_assert_str_eq(tirx_last_error(), "tirx_set_source: b is NULL");
  tirx_builder *b = tirx_builder_create("raw_err");
  tirx_set_source(b, NULL);
  cr_assert_str_eq(tirx_builder_error(b), "tirx_set_source: source is NULL");
  tirx_builder_destroy(b);
  b = tirx_builder_create("raw_err");
  tirx_set_source(b, "");
  cr_assert_str_eq(tirx_builder_error(b), "tirx_set_source: source is empty");
  tirx_builder_destroy(b);
  b = tirx_builder_create("raw_err");
  tirx_set_source(b, "a");
  tirx_set_source(b, "b");
  cr_assert_str_eq(tirx_builder_error(b), "tirx_set_source: kernel 'raw_err' already has a source");
  tirx_builder_destroy(b);
  /* Statements and a source: one or the other. */
  b = tirx_builder_create("raw_err");
  tirx_expr *n = tirx_param_int(b, "n", TIRX_I64);
  tirx_set_block(b, 32, 1, 1);
  tirx_set_source(b, "extern \"C\" __global__ void raw_err(long long n) {}\n");
  tirx_let(b, "m", n);
  tirx_kernel *k = NULL;
  expect_error(tirx_kernel_build(b, &k), TIRX_E_BUILD,
               "tirx_kernel_build: kernel 'raw_err' has a CUDA source (tirx_set_source) and also "
               "statements; a kernel is one or the other");
  cr_assert_null(k);
  tirx_builder_destroy(b);
}
