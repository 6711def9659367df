/* tirx_kernels_prepare_begin/_end (src/kernels/check.c): between them an op prepares the
 * kernels it would launch (one future each, in launch order) instead of launching; outside
 * them it launches (TIRX_E_NO_DEVICE here); misuse is refused with its message. */
#include "../helpers.h"

TestSuite(kernels_prepare, .timeout = 240);

#define P ((void *)(uintptr_t)0x10000)

static tirx_runtime *compile_only(void) {
  tirx_runtime *rt = NULL;
  cr_assert_eq(tirx_runtime_create(&(tirx_runtime_options){.compile_only = true,
                                                           .cache_disabled = true},
                                   &rt),
               TIRX_OK, "%s", tirx_last_error());
  return rt;
}

static void wait_all(tirx_future **f, int n) {
  for (int i = 0; i < n; i++) {
    cr_assert_eq(tirx_future_wait(f[i], -1), TIRX_OK, "%s", tirx_last_error());
    tirx_future_release(f[i]);
  }
  free(f);
}

Test(kernels_prepare, an_op_prepares_instead_of_launching) {
  tirx_runtime *rt = compile_only();
  tirx_tensor_arg x = {P, TIRX_BF16, 2, (int64_t[]){16, 4096}, NULL};
  tirx_tensor_arg w = {P, TIRX_BF16, 1, (int64_t[]){4096}, NULL};
  cr_assert_eq(tirx_op_rmsnorm(rt, NULL, &x, &w, &x, 1e-6f, NULL), TIRX_E_NO_DEVICE);
  cr_assert_eq(tirx_kernels_prepare_begin(), TIRX_OK, "%s", tirx_last_error());
  cr_assert_eq(tirx_op_rmsnorm(rt, NULL, &x, &w, &x, 1e-6f, NULL), TIRX_OK, "%s",
               tirx_last_error());
  /* A bad call still fails its checks, and prepares nothing. */
  tirx_tensor_arg bad = {P, TIRX_BF16, 1, (int64_t[]){4000}, NULL};
  expect_error(tirx_op_rmsnorm(rt, NULL, &x, &bad, &x, 1e-6f, NULL), TIRX_E_INVALID_ARG,
               "tirx_op_rmsnorm: w has shape [4000], expected [W] = [4096]");
  /* The split-K GEMM launches two kernels: two preparations, in launch order. */
  tirx_tensor_arg a = {P, TIRX_BF16, 2, (int64_t[]){128, 512}, NULL};
  tirx_tensor_arg b = {P, TIRX_BF16, 2, (int64_t[]){256, 512}, NULL};
  tirx_tensor_arg c = {P, TIRX_BF16, 2, (int64_t[]){128, 256}, NULL};
  cr_assert_eq(tirx_op_gemm(rt, NULL, &a, &b, NULL, &c, NULL), TIRX_OK, "%s", tirx_last_error());
  tirx_future **f = NULL;
  int n = -1;
  cr_assert_eq(tirx_kernels_prepare_end(&f, &n), TIRX_OK, "%s", tirx_last_error());
  cr_assert_eq(n, 3);
  wait_all(f, n);
  tirx_cache_stats s = {.size = sizeof s};
  cr_assert_eq(tirx_runtime_cache_stats(rt, &s), TIRX_OK);
  cr_assert_eq(s.compiles, 3);
  /* Preparing has ended: the op launches again. */
  cr_assert_eq(tirx_op_rmsnorm(rt, NULL, &x, &w, &x, 1e-6f, NULL), TIRX_E_NO_DEVICE);
  tirx_runtime_destroy(rt);
}

Test(kernels_prepare, nothing_prepared_gives_no_futures) {
  cr_assert_eq(tirx_kernels_prepare_begin(), TIRX_OK);
  tirx_future **f = (tirx_future **)P;
  int n = -1;
  cr_assert_eq(tirx_kernels_prepare_end(&f, &n), TIRX_OK);
  cr_assert_null(f);
  cr_assert_eq(n, 0);
}

Test(kernels_prepare, misuse_is_refused) {
  tirx_future **f = NULL;
  int n = 0;
  expect_error(tirx_kernels_prepare_end(&f, &n), TIRX_E_INVALID_ARG,
               "tirx_kernels_prepare_end: this thread is not preparing "
               "(tirx_kernels_prepare_begin)");
  cr_assert_eq(tirx_kernels_prepare_begin(), TIRX_OK);
  expect_error(tirx_kernels_prepare_begin(), TIRX_E_INVALID_ARG,
               "tirx_kernels_prepare_begin: this thread is already preparing (call "
               "tirx_kernels_prepare_end first)");
  expect_error(tirx_kernels_prepare_end(NULL, &n), TIRX_E_NULL_ARG,
               "tirx_kernels_prepare_end: futures is NULL");
  expect_error(tirx_kernels_prepare_end(&f, NULL), TIRX_E_NULL_ARG,
               "tirx_kernels_prepare_end: count is NULL");
  cr_assert_eq(tirx_kernels_prepare_end(&f, &n), TIRX_OK); /* still preparing until here */
  cr_assert_eq(n, 0);
}
