/* src/ir/plan.c: binding and checking launch arguments, every error with its exact message. */
#include "../helpers.h"
#include "ir/dlpack_abi.h"
#include "ir/ir.h"
#include "ir/kernel_abi.h"

/* Fake device pointers: never dereferenced on the CPU. */
#define PTR(v) ((void *)(uintptr_t)(v))

static tirx_kernel *K;   /* vector_add: (n: i64, x: f32[n], y: f32[n]) */
static tirx_kernel *K2;  /* mat: (m: i32, ld: i64, alpha: f32, a: f16[m, 64] strides [ld, 1],
                          *       b: f16[m, 64] any strides, c: f32[m, 64]) */
static tirx__launch_plan P;

static tirx_kernel *build(tirx_builder *b) {
  tirx_kernel *k = NULL;
  cr_assert_eq(tirx_kernel_build(b, &k), TIRX_OK, "%s", tirx_builder_error(b));
  tirx_builder_destroy(b);
  return k;
}

static void setup(void) {
  tirx_builder *b = tirx_builder_create("vector_add");
  tirx_expr *n = tirx_param_int(b, "n", TIRX_I64);
  tirx_tensor *x = tirx_param_tensor(b, "x", TIRX_F32, TIRX_EXPRS(n), NULL);
  tirx_tensor *y = tirx_param_tensor(b, "y", TIRX_F32, TIRX_EXPRS(n), NULL);
  tirx_set_block(b, 256, 1, 1);
  tirx_set_grid(b, tirx_ceildiv(b, n, tirx_int(b, 256)), NULL, NULL);
  tirx_expr *i = tirx_thread_idx(b, 0);
  tirx_store(b, y, TIRX_EXPRS(i), tirx_load(b, x, TIRX_EXPRS(i)));
  K = build(b);

  b = tirx_builder_create("mat");
  tirx_expr *m = tirx_param_int(b, "m", TIRX_I32);
  tirx_expr *ld = tirx_param_int(b, "ld", TIRX_I64);
  tirx_expr *alpha = tirx_param_scalar(b, "alpha", TIRX_F32);
  tirx_expr *c64 = tirx_int(b, 64);
  tirx_tensor *a = tirx_param_tensor_strided(b, "a", TIRX_F16, TIRX_EXPRS(m, c64),
                                             (tirx_expr *[]){ld, tirx_int(b, 1)});
  tirx_tensor *bb = tirx_param_tensor_strided(b, "b", TIRX_F16, TIRX_EXPRS(m, c64), NULL);
  tirx_tensor *c = tirx_param_tensor(b, "c", TIRX_F32, TIRX_EXPRS(m, c64), NULL);
  tirx_set_block(b, 64, 1, 1);
  tirx_set_grid(b, m, tirx_int(b, 2), NULL);
  tirx_set_shared_bytes(b, tirx_mul(b, m, tirx_int(b, 8)));
  tirx_alloc_shared(b, "s", TIRX_F32, TIRX_DIMS(100), NULL);
  tirx_expr *r = tirx_block_idx(b, 0), *q = tirx_thread_idx(b, 0);
  tirx_store(b, c, TIRX_EXPRS(r, q),
             tirx_mul(b, alpha, tirx_cast(b, tirx_add(b, tirx_load(b, a, TIRX_EXPRS(r, q)),
                                                       tirx_load(b, bb, TIRX_EXPRS(r, q))),
                                          TIRX_F32)));
  K2 = build(b);
  memset(&P, 0xab, sizeof P);
}
static void teardown(void) {
  tirx_kernel_release(K);
  tirx_kernel_release(K2);
}
TestSuite(plan, .init = setup, .fini = teardown);

static const int64_t N1000[] = {1000};

static int64_t i64_at(int i) {
  int64_t v;
  memcpy(&v, P.params[i], 8);
  return v;
}
static void *ptr_at(int i) {
  void *v;
  memcpy(&v, P.params[i], sizeof v);
  return v;
}

Test(plan, explicit_n) {
  tirx_arg args[] = {tirx_arg_i64(1000), tirx_arg_tensor(PTR(0x1000), TIRX_F32, 1, N1000, NULL),
                     tirx_arg_tensor(PTR(0x2000), TIRX_F32, 1, N1000, NULL)};
  cr_assert_eq(tirx__kernel_plan(K, "tirx_launch", args, 3, &P), TIRX_OK, "%s", tirx_last_error());
  cr_assert_eq(P.grid[0], 4);
  cr_assert_eq(P.grid[1], 1);
  cr_assert_eq(P.grid[2], 1);
  cr_assert_eq(P.block[0], 256);
  cr_assert_eq(P.block[1], 1);
  cr_assert_eq(P.shared_bytes, 0);
  cr_assert_eq(P.nparams, 3);
  cr_assert_eq(i64_at(0), 1000);
  cr_assert_eq(ptr_at(1), PTR(0x1000));
  cr_assert_eq(ptr_at(2), PTR(0x2000));
  cr_assert_eq(P.nspec, 1); /* n: div16 by default; 1000 % 16 != 0 */
  cr_assert_eq(P.spec[0], 0);
}

Test(plan, n_bound_from_shape) {
  const int64_t shape[] = {257};
  tirx_arg args[] = {tirx_arg_tensor(PTR(0x1000), TIRX_F32, 1, shape, NULL),
                     tirx_arg_tensor(PTR(0x2000), TIRX_F32, 1, shape, NULL)};
  cr_assert_eq(tirx__kernel_plan(K, "tirx_launch", args, 2, &P), TIRX_OK, "%s", tirx_last_error());
  cr_assert_eq(P.grid[0], 2);
  cr_assert_eq(i64_at(0), 257);
  cr_assert_eq(ptr_at(1), PTR(0x1000));
}

Test(plan, argument_count) {
  tirx_arg args[] = {tirx_arg_i64(1)};
  expect_error(tirx__kernel_plan(K, "tirx_launch", args, 1, &P), TIRX_E_LAUNCH_ARG,
               "tirx_launch: 1 arguments, expected 3 (or 2 with n bound from tensor shapes)");
}

Test(plan, null_arguments) {
  expect_error(tirx__kernel_plan(NULL, "tirx_launch", NULL, 0, &P), TIRX_E_NULL_ARG,
               "tirx_launch: kernel is NULL");
  expect_error(tirx__kernel_plan(K, "tirx_launch", NULL, 3, &P), TIRX_E_NULL_ARG,
               "tirx_launch: args is NULL");
  expect_error(tirx__kernel_plan(K, "tirx_launch", NULL, 0, NULL), TIRX_E_NULL_ARG,
               "tirx_launch: plan is NULL");
}

Test(plan, wrong_dtype) {
  tirx_arg args[] = {tirx_arg_i64(1000), tirx_arg_tensor(PTR(0x1000), TIRX_F16, 1, N1000, NULL),
                     tirx_arg_tensor(PTR(0x2000), TIRX_F32, 1, N1000, NULL)};
  expect_error(tirx__kernel_plan(K, "tirx_launch", args, 3, &P), TIRX_E_LAUNCH_ARG,
               "tirx_launch: argument 1 (x): dtype is f16, expected f32");
}

Test(plan, wrong_kind) {
  tirx_arg args[] = {tirx_arg_f32(1.0f), tirx_arg_tensor(PTR(0x1000), TIRX_F32, 1, N1000, NULL),
                     tirx_arg_i64(3)};
  expect_error(tirx__kernel_plan(K, "tirx_launch", args, 3, &P), TIRX_E_LAUNCH_ARG,
               "tirx_launch: argument 0 (n): kind is f32, expected i64 (or i32)");
  args[0] = tirx_arg_i32(1000);
  expect_error(tirx__kernel_plan(K, "tirx_launch", args, 3, &P), TIRX_E_LAUNCH_ARG,
               "tirx_launch: argument 2 (y): kind is i64, expected a tensor");
}

Test(plan, wrong_rank) {
  const int64_t shape[] = {10, 100};
  tirx_arg args[] = {tirx_arg_i64(1000), tirx_arg_tensor(PTR(0x1000), TIRX_F32, 1, N1000, NULL),
                     tirx_arg_tensor(PTR(0x2000), TIRX_F32, 2, shape, NULL)};
  expect_error(tirx__kernel_plan(K, "tirx_launch", args, 3, &P), TIRX_E_LAUNCH_ARG,
               "tirx_launch: argument 2 (y): rank is 2, expected 1");
}

Test(plan, inconsistent_shapes) {
  const int64_t other[] = {999};
  tirx_arg args[] = {tirx_arg_tensor(PTR(0x1000), TIRX_F32, 1, N1000, NULL),
                     tirx_arg_tensor(PTR(0x2000), TIRX_F32, 1, other, NULL)};
  expect_error(tirx__kernel_plan(K, "tirx_launch", args, 2, &P), TIRX_E_LAUNCH_ARG,
               "tirx_launch: argument 1 (y): shape[0] is 999, expected 1000 (n)");
  tirx_arg args3[] = {tirx_arg_i64(5), tirx_arg_tensor(PTR(0x1000), TIRX_F32, 1, N1000, NULL),
                      tirx_arg_tensor(PTR(0x2000), TIRX_F32, 1, N1000, NULL)};
  expect_error(tirx__kernel_plan(K, "tirx_launch", args3, 3, &P), TIRX_E_LAUNCH_ARG,
               "tirx_launch: argument 1 (x): shape[0] is 1000, expected 5 (n)");
}

Test(plan, negative_shape) {
  const int64_t bad[] = {-1};
  tirx_arg args[] = {tirx_arg_tensor(PTR(0x1000), TIRX_F32, 1, bad, NULL),
                     tirx_arg_tensor(PTR(0x2000), TIRX_F32, 1, bad, NULL)};
  expect_error(tirx__kernel_plan(K, "tirx_launch", args, 2, &P), TIRX_E_LAUNCH_ARG,
               "tirx_launch: argument 0 (x): shape[0] is -1, expected >= 0");
}

/* Found by tools/fuzz_ops -m launch: the message said "shape is too large" without the bound
 * it broke. */
Test(plan, a_shape_whose_elements_overflow_int64_says_so) {
  const int64_t ok[] = {4, 64}, big[] = {4, (int64_t)1 << 62};
  tirx_arg args[] = {tirx_arg_i32(4), tirx_arg_i64(64), tirx_arg_f32(1.0f),
                     tirx_arg_tensor(PTR(0x1000), TIRX_F16, 2, ok, NULL),
                     tirx_arg_tensor(PTR(0x2000), TIRX_F16, 2, big, NULL),
                     tirx_arg_tensor(PTR(0x3000), TIRX_F32, 2, ok, NULL)};
  expect_error(tirx__kernel_plan(K2, "tirx_launch", args, 6, &P), TIRX_E_LAUNCH_ARG,
               "tirx_launch: argument 4 (b): shape is too large: its elements overflow int64 at "
               "shape[0] = 4, expected a product of extents up to 2^63 - 1");
}

Test(plan, null_data_and_shape) {
  tirx_arg args[] = {tirx_arg_i64(1000), tirx_arg_tensor(NULL, TIRX_F32, 1, N1000, NULL),
                     tirx_arg_tensor(PTR(0x2000), TIRX_F32, 1, N1000, NULL)};
  expect_error(tirx__kernel_plan(K, "tirx_launch", args, 3, &P), TIRX_E_NULL_ARG,
               "tirx_launch: argument 1 (x): data is NULL");
  args[1] = tirx_arg_tensor(PTR(0x1000), TIRX_F32, 1, NULL, NULL);
  expect_error(tirx__kernel_plan(K, "tirx_launch", args, 3, &P), TIRX_E_NULL_ARG,
               "tirx_launch: argument 1 (x): shape is NULL");
}

Test(plan, misaligned) {
  tirx_arg args[] = {tirx_arg_i64(1000), tirx_arg_tensor(PTR(0x1002), TIRX_F32, 1, N1000, NULL),
                     tirx_arg_tensor(PTR(0x2000), TIRX_F32, 1, N1000, NULL)};
  expect_error(tirx__kernel_plan(K, "tirx_launch", args, 3, &P), TIRX_E_LAUNCH_ARG,
               "tirx_launch: argument 1 (x): data 0x1002 is not aligned to 4 bytes");
}

Test(plan, dense_strides) {
  const int64_t strides[] = {2};
  tirx_arg args[] = {tirx_arg_i64(1000), tirx_arg_tensor(PTR(0x1000), TIRX_F32, 1, N1000, strides),
                     tirx_arg_tensor(PTR(0x2000), TIRX_F32, 1, N1000, NULL)};
  expect_error(tirx__kernel_plan(K, "tirx_launch", args, 3, &P), TIRX_E_LAUNCH_ARG,
               "tirx_launch: argument 1 (x): stride[0] is 2, expected 1 (dense row-major)");
  const int64_t ones[] = {1};
  args[1] = tirx_arg_tensor(PTR(0x1000), TIRX_F32, 1, N1000, ones);
  cr_assert_eq(tirx__kernel_plan(K, "tirx_launch", args, 3, &P), TIRX_OK, "%s", tirx_last_error());
}

Test(plan, grid_limit) {
  const int64_t zero[] = {0};
  tirx_arg args[] = {tirx_arg_tensor(PTR(0x1000), TIRX_F32, 1, zero, NULL),
                     tirx_arg_tensor(PTR(0x2000), TIRX_F32, 1, zero, NULL)};
  expect_error(tirx__kernel_plan(K, "tirx_launch", args, 2, &P), TIRX_E_LIMIT,
               "tirx_launch: grid x is 0, expected 1 to 2147483647");
}

/* ---- the strided kernel ---- */

static const int64_t SHAPE[] = {3, 64};
static const int64_t A_STRIDES[] = {80, 1};
static const int64_t B_STRIDES[] = {1, 3};

Test(plan, strided_binding) {
  tirx_arg args[] = {tirx_arg_f32(2.0f),
                     tirx_arg_tensor(PTR(0x1000), TIRX_F16, 2, SHAPE, A_STRIDES),
                     tirx_arg_tensor(PTR(0x2000), TIRX_F16, 2, SHAPE, B_STRIDES),
                     tirx_arg_tensor(PTR(0x3000), TIRX_F32, 2, SHAPE, NULL)};
  cr_assert_eq(tirx__kernel_plan(K2, "tirx_launch", args, 4, &P), TIRX_OK, "%s", tirx_last_error());
  /* m: i32, ld: i64, alpha: f32, a, b, c, b_stride0, b_stride1 (c's strides are constant) */
  cr_assert_eq(P.nparams, 8);
  int32_t m;
  memcpy(&m, P.params[0], 4);
  cr_assert_eq(m, 3);
  cr_assert_eq(i64_at(1), 80);
  float alpha;
  memcpy(&alpha, P.params[2], 4);
  cr_assert_eq(alpha, 2.0f);
  cr_assert_eq(ptr_at(3), PTR(0x1000));
  cr_assert_eq(ptr_at(5), PTR(0x3000));
  cr_assert_eq(i64_at(6), 1);
  cr_assert_eq(i64_at(7), 3);
  cr_assert_eq(P.grid[0], 3);
  cr_assert_eq(P.grid[1], 2);
  cr_assert_eq(P.shared_bytes, 400 + 24);
  for (int i = 0; i < P.nparams; i++)
    cr_assert_eq((uintptr_t)P.params[i] % 4, 0);
}

Test(plan, explicit_stride_mismatch) {
  const int64_t bad[] = {80, 2};
  tirx_arg args[] = {tirx_arg_i32(3), tirx_arg_i64(80), tirx_arg_f32(2.0f),
                     tirx_arg_tensor(PTR(0x1000), TIRX_F16, 2, SHAPE, bad),
                     tirx_arg_tensor(PTR(0x2000), TIRX_F16, 2, SHAPE, B_STRIDES),
                     tirx_arg_tensor(PTR(0x3000), TIRX_F32, 2, SHAPE, NULL)};
  expect_error(tirx__kernel_plan(K2, "tirx_launch", args, 6, &P), TIRX_E_LAUNCH_ARG,
               "tirx_launch: argument 3 (a): stride[1] is 2, expected 1");
  args[1] = tirx_arg_i64(81);
  args[3] = tirx_arg_tensor(PTR(0x1000), TIRX_F16, 2, SHAPE, A_STRIDES);
  expect_error(tirx__kernel_plan(K2, "tirx_launch", args, 6, &P), TIRX_E_LAUNCH_ARG,
               "tirx_launch: argument 3 (a): stride[0] is 80, expected 81");
}

Test(plan, i32_overflow) {
  const int64_t big[] = {(int64_t)1 << 32, 64};
  tirx_arg args[] = {tirx_arg_f32(2.0f), tirx_arg_tensor(PTR(0x1000), TIRX_F16, 2, big, NULL),
                     tirx_arg_tensor(PTR(0x2000), TIRX_F16, 2, big, NULL),
                     tirx_arg_tensor(PTR(0x3000), TIRX_F32, 2, big, NULL)};
  expect_error(tirx__kernel_plan(K2, "tirx_launch", args, 4, &P), TIRX_E_LAUNCH_ARG,
               "tirx_launch: argument 1 (a): shape[0] is 4294967296, which does not fit m (i32)");
  tirx_arg args6[] = {tirx_arg_i64(INT64_MAX), tirx_arg_i64(64), tirx_arg_f32(2.0f),
                      args[1], args[2], args[3]};
  expect_error(tirx__kernel_plan(K2, "tirx_launch", args6, 6, &P), TIRX_E_LAUNCH_ARG,
               "tirx_launch: argument 0 (m): value 9223372036854775807 does not fit i32");
}

Test(plan, scalar_kind) {
  tirx_arg args[] = {tirx_arg_f64(2.0),
                     tirx_arg_tensor(PTR(0x1000), TIRX_F16, 2, SHAPE, A_STRIDES),
                     tirx_arg_tensor(PTR(0x2000), TIRX_F16, 2, SHAPE, B_STRIDES),
                     tirx_arg_tensor(PTR(0x3000), TIRX_F32, 2, SHAPE, NULL)};
  expect_error(tirx__kernel_plan(K2, "tirx_launch", args, 4, &P), TIRX_E_LAUNCH_ARG,
               "tirx_launch: argument 0 (alpha): kind is f64, expected f32");
}

/* ---- specialisation keys ---- */

Test(plan, div16_key_follows_the_bound_value) {
  static const int64_t n1024[] = {1024}, n1[] = {1};
  tirx_arg args[] = {tirx_arg_tensor(PTR(0x1000), TIRX_F32, 1, n1024, NULL),
                     tirx_arg_tensor(PTR(0x2000), TIRX_F32, 1, n1024, NULL)};
  cr_assert_eq(tirx__kernel_plan(K, "tirx_launch", args, 2, &P), TIRX_OK, "%s", tirx_last_error());
  cr_assert_eq(P.nspec, 1);
  cr_assert_eq(P.spec[0], 1);
  args[0].u.tensor.shape = args[1].u.tensor.shape = n1;
  cr_assert_eq(tirx__kernel_plan(K, "tirx_launch", args, 2, &P), TIRX_OK, "%s", tirx_last_error());
  cr_assert_eq(P.spec[0], 0);
  /* K2: m (i32) and ld (i64), both div16; the scalar alpha has no policy. */
  static const int64_t shape[] = {48, 64}, a_strides[] = {72, 1}, b_strides[] = {1, 48};
  tirx_arg args2[] = {tirx_arg_f32(2.0f),
                      tirx_arg_tensor(PTR(0x1000), TIRX_F16, 2, shape, a_strides),
                      tirx_arg_tensor(PTR(0x2000), TIRX_F16, 2, shape, b_strides),
                      tirx_arg_tensor(PTR(0x3000), TIRX_F32, 2, shape, NULL)};
  cr_assert_eq(tirx__kernel_plan(K2, "tirx_launch", args2, 4, &P), TIRX_OK, "%s",
               tirx_last_error());
  cr_assert_eq(P.nspec, 2);
  cr_assert_eq(P.spec[0], 1); /* m = 48 */
  cr_assert_eq(P.spec[1], 0); /* ld = 72 */
}

Test(plan, key_per_policy) {
  /* (a: value, b: div16, c: dynamic, d: value, e: div16), none of them in a shape. */
  tirx_builder *b = tirx_builder_create("keys");
  tirx_expr *p[5];
  static const char *const names[] = {"a", "b", "c", "d", "e"};
  static const tirx_specialize pol[] = {TIRX_SPECIALIZE_VALUE, TIRX_SPECIALIZE_DIV16,
                                        TIRX_SPECIALIZE_DYNAMIC, TIRX_SPECIALIZE_VALUE,
                                        TIRX_SPECIALIZE_DIV16};
  for (int i = 0; i < 5; i++) {
    p[i] = tirx_param_int(b, names[i], i % 2 ? TIRX_I64 : TIRX_I32);
    cr_assert_eq(tirx_param_set_policy(b, p[i], pol[i]), TIRX_OK);
  }
  tirx_set_block(b, 32, 1, 1);
  tirx_kernel *k = build(b);
  tirx_arg args[] = {tirx_arg_i32(-5), tirx_arg_i64(-32), tirx_arg_i32(7),
                     tirx_arg_i64((int64_t)1 << 40), tirx_arg_i64(17)};
  cr_assert_eq(tirx__kernel_plan(k, "tirx_launch", args, 5, &P), TIRX_OK, "%s", tirx_last_error());
  cr_assert_eq(P.nspec, 4);
  cr_assert_eq(P.spec[0], -5);
  cr_assert_eq(P.spec[1], 1); /* -32 % 16 == 0 */
  cr_assert_eq(P.spec[2], (int64_t)1 << 40);
  cr_assert_eq(P.spec[3], 0);
  /* The parameter list does not depend on the policies: every parameter is passed. */
  cr_assert_eq(P.nparams, 5);
  int32_t c;
  memcpy(&c, P.params[2], 4);
  cr_assert_eq(c, 7);
  cr_assert_eq(i64_at(3), (int64_t)1 << 40);
  tirx_kernel_release(k);
}

Test(plan, no_policies_no_key) {
  tirx_builder *b = tirx_builder_create("nokey");
  tirx_expr *n = tirx_param_int(b, "n", TIRX_I64);
  tirx_param_set_policy(b, n, TIRX_SPECIALIZE_DYNAMIC);
  tirx_param_scalar(b, "s", TIRX_I32);
  tirx_set_block(b, 32, 1, 1);
  tirx_kernel *k = build(b);
  tirx_arg args[] = {tirx_arg_i64(64), tirx_arg_i32(16)};
  cr_assert_eq(tirx__kernel_plan(k, "tirx_launch", args, 2, &P), TIRX_OK, "%s", tirx_last_error());
  cr_assert_eq(P.nspec, 0);
  tirx_kernel_release(k);
}

/* ---- DLPack ---- */

static DLTensor dl(void *data, DLDataTypeCode code, int bits, int ndim, int64_t *shape,
                   int64_t *strides) {
  DLTensor t;
  memset(&t, 0, sizeof t);
  t.data = data;
  t.device.device_type = kDLCUDA;
  t.ndim = ndim;
  t.dtype.code = (uint8_t)code;
  t.dtype.bits = (uint8_t)bits;
  t.dtype.lanes = 1;
  t.shape = shape;
  t.strides = strides;
  return t;
}

Test(plan, dlpack_ok_with_offset) {
  int64_t shape[] = {1000};
  DLTensor x = dl(PTR(0x1000), kDLFloat, 32, 1, shape, NULL);
  x.byte_offset = 64;
  DLTensor y = dl(PTR(0x2000), kDLFloat, 32, 1, shape, NULL);
  tirx_arg args[] = {tirx_arg_dlpack(&x), tirx_arg_dlpack(&y)};
  cr_assert_eq(tirx__kernel_plan(K, "tirx_launch", args, 2, &P), TIRX_OK, "%s", tirx_last_error());
  cr_assert_eq(i64_at(0), 1000);
  cr_assert_eq(ptr_at(1), PTR(0x1040));
}

Test(plan, dlpack_strided_mixed_with_tensor) {
  int64_t shape[] = {3, 64};
  int64_t strides[] = {1, 3}; /* column-major b */
  DLTensor bt = dl(PTR(0x2000), kDLFloat, 16, 2, shape, strides);
  tirx_arg args[] = {tirx_arg_f32(1.0f),
                     tirx_arg_tensor(PTR(0x1000), TIRX_F16, 2, SHAPE, A_STRIDES),
                     tirx_arg_dlpack(&bt),
                     tirx_arg_tensor(PTR(0x3000), TIRX_F32, 2, SHAPE, NULL)};
  cr_assert_eq(tirx__kernel_plan(K2, "tirx_launch", args, 4, &P), TIRX_OK, "%s", tirx_last_error());
  cr_assert_eq(i64_at(6), 1);
  cr_assert_eq(i64_at(7), 3);
}

Test(plan, dlpack_errors) {
  int64_t shape[] = {1000};
  DLTensor x = dl(PTR(0x1000), kDLFloat, 32, 1, shape, NULL);
  DLTensor y = dl(PTR(0x2000), kDLFloat, 32, 1, shape, NULL);
  tirx_arg args[] = {tirx_arg_dlpack(&x), tirx_arg_dlpack(&y)};
  x.device.device_type = kDLCPU;
  expect_error(tirx__kernel_plan(K, "tirx_launch", args, 2, &P), TIRX_E_LAUNCH_ARG,
               "tirx_launch: argument 0 (x): DLPack device type is 1, expected kDLCUDA (2)");
  x.device.device_type = kDLCUDA;
  x.dtype.lanes = 4;
  expect_error(tirx__kernel_plan(K, "tirx_launch", args, 2, &P), TIRX_E_LAUNCH_ARG,
               "tirx_launch: argument 0 (x): DLPack dtype has 4 lanes, expected 1");
  x.dtype.lanes = 1;
  x.dtype.code = kDLComplex;
  x.dtype.bits = 64;
  expect_error(tirx__kernel_plan(K, "tirx_launch", args, 2, &P), TIRX_E_LAUNCH_ARG,
               "tirx_launch: argument 0 (x): DLPack dtype (code 5, bits 64) is not supported");
  x.dtype.code = kDLBfloat;
  x.dtype.bits = 16;
  expect_error(tirx__kernel_plan(K, "tirx_launch", args, 2, &P), TIRX_E_LAUNCH_ARG,
               "tirx_launch: argument 0 (x): dtype is bf16, expected f32");
  x.dtype.code = kDLFloat;
  x.dtype.bits = 32;
  x.byte_offset = 2;
  expect_error(tirx__kernel_plan(K, "tirx_launch", args, 2, &P), TIRX_E_LAUNCH_ARG,
               "tirx_launch: argument 0 (x): data 0x1002 is not aligned to 4 bytes");
  x.byte_offset = 0;
  x.data = NULL;
  expect_error(tirx__kernel_plan(K, "tirx_launch", args, 2, &P), TIRX_E_NULL_ARG,
               "tirx_launch: argument 0 (x): data is NULL");
  args[0] = tirx_arg_dlpack(NULL);
  expect_error(tirx__kernel_plan(K, "tirx_launch", args, 2, &P), TIRX_E_NULL_ARG,
               "tirx_launch: argument 0 (x): DLTensor is NULL");
  int64_t strides[] = {2};
  x = dl(PTR(0x1000), kDLFloat, 32, 1, shape, strides);
  args[0] = tirx_arg_dlpack(&x);
  expect_error(tirx__kernel_plan(K, "tirx_launch", args, 2, &P), TIRX_E_LAUNCH_ARG,
               "tirx_launch: argument 0 (x): stride[0] is 2, expected 1 (dense row-major)");
}

/* ---- DLPack 1.x: DLManagedTensorVersioned ---- */

static DLManagedTensorVersioned dlv(uint32_t major, uint32_t minor, uint64_t flags, DLTensor t) {
  DLManagedTensorVersioned m = {0};
  m.version.major = major;
  m.version.minor = minor;
  m.flags = flags;
  m.dl_tensor = t;
  return m;
}

/* The struct is DLPack 1.0's, field for field (the ABI a producer hands over). */
Test(plan, dlpack_versioned_layout_is_dlpacks) {
  cr_assert_eq(offsetof(DLManagedTensorVersioned, version), 0);
  cr_assert_eq(offsetof(DLManagedTensorVersioned, manager_ctx), 8);
  cr_assert_eq(offsetof(DLManagedTensorVersioned, deleter), 8 + sizeof(void *));
  cr_assert_eq(offsetof(DLManagedTensorVersioned, flags), 8 + 2 * sizeof(void *));
  cr_assert_eq(offsetof(DLManagedTensorVersioned, dl_tensor), 16 + 2 * sizeof(void *));
  cr_assert_eq(DLPACK_FLAG_BITMASK_READ_ONLY, 1);
  cr_assert_eq(DLPACK_FLAG_BITMASK_IS_COPIED, 2);
}

Test(plan, dlpack_versioned_ok) {
  int64_t shape[] = {1000};
  /* x is only read, so a read-only tensor is fine; any minor version of 1 is read. */
  DLManagedTensorVersioned x = dlv(1, 0, DLPACK_FLAG_BITMASK_READ_ONLY | DLPACK_FLAG_BITMASK_IS_COPIED,
                                   dl(PTR(0x1000), kDLFloat, 32, 1, shape, NULL));
  x.dl_tensor.byte_offset = 64;
  DLManagedTensorVersioned y = dlv(1, 3, 0, dl(PTR(0x2000), kDLFloat, 32, 1, shape, NULL));
  tirx_arg args[] = {tirx_arg_dlpack_versioned(&x), tirx_arg_dlpack_versioned(&y)};
  cr_assert_eq(args[0].kind, TIRX_ARG_DLPACK_VERSIONED);
  cr_assert_eq(tirx__kernel_plan(K, "tirx_launch", args, 2, &P), TIRX_OK, "%s", tirx_last_error());
  cr_assert_eq(i64_at(0), 1000);
  cr_assert_eq(ptr_at(1), PTR(0x1040));
  cr_assert_eq(ptr_at(2), PTR(0x2000));
  /* Mixed with the unversioned form and a plain tensor. */
  DLTensor yt = dl(PTR(0x3000), kDLFloat, 32, 1, shape, NULL);
  args[1] = tirx_arg_dlpack(&yt);
  cr_assert_eq(tirx__kernel_plan(K, "tirx_launch", args, 2, &P), TIRX_OK, "%s", tirx_last_error());
  cr_assert_eq(ptr_at(2), PTR(0x3000));
  cr_assert_eq(K->params[1].writes, TIRX__KP_WRITES_NO);
  cr_assert_eq(K->params[2].writes, TIRX__KP_WRITES_YES);
}

Test(plan, dlpack_versioned_errors) {
  int64_t shape[] = {1000};
  DLManagedTensorVersioned x = dlv(1, 0, 0, dl(PTR(0x1000), kDLFloat, 32, 1, shape, NULL));
  DLManagedTensorVersioned y = dlv(1, 0, 0, dl(PTR(0x2000), kDLFloat, 32, 1, shape, NULL));
  tirx_arg args[] = {tirx_arg_dlpack_versioned(&x), tirx_arg_dlpack_versioned(&y)};

  /* y is stored to: read-only is refused, whatever else the flags say. */
  y.flags = DLPACK_FLAG_BITMASK_READ_ONLY | DLPACK_FLAG_BITMASK_IS_COPIED | (UINT64_C(1) << 40);
  expect_error(tirx__kernel_plan(K, "tirx_launch", args, 2, &P), TIRX_E_LAUNCH_ARG,
               "tirx_launch: argument 1 (y): the DLPack tensor is read-only "
               "(DLPACK_FLAG_BITMASK_READ_ONLY), expected a writable one: the kernel stores to it");
  y.flags = DLPACK_FLAG_BITMASK_IS_COPIED;
  cr_assert_eq(tirx__kernel_plan(K, "tirx_launch", args, 2, &P), TIRX_OK, "%s", tirx_last_error());

  /* Another major version: refused before any other field is read. */
  x.version.major = 2;
  x.dl_tensor.device.device_type = kDLCPU;
  expect_error(tirx__kernel_plan(K, "tirx_launch", args, 2, &P), TIRX_E_LAUNCH_ARG,
               "tirx_launch: argument 0 (x): DLPack version is 2.0, expected major version 1");
  x.version.major = 0;
  x.version.minor = 8;
  expect_error(tirx__kernel_plan(K, "tirx_launch", args, 2, &P), TIRX_E_LAUNCH_ARG,
               "tirx_launch: argument 0 (x): DLPack version is 0.8, expected major version 1");

  /* Version 1: the DLTensor inside is checked as the unversioned form is. */
  x.version.major = 1;
  x.version.minor = 0;
  expect_error(tirx__kernel_plan(K, "tirx_launch", args, 2, &P), TIRX_E_LAUNCH_ARG,
               "tirx_launch: argument 0 (x): DLPack device type is 1, expected kDLCUDA (2)");
  x.dl_tensor.device.device_type = kDLCUDA;
  x.dl_tensor.dtype.lanes = 2;
  expect_error(tirx__kernel_plan(K, "tirx_launch", args, 2, &P), TIRX_E_LAUNCH_ARG,
               "tirx_launch: argument 0 (x): DLPack dtype has 2 lanes, expected 1");
  x.dl_tensor.dtype.lanes = 1;
  x.dl_tensor.data = NULL;
  expect_error(tirx__kernel_plan(K, "tirx_launch", args, 2, &P), TIRX_E_NULL_ARG,
               "tirx_launch: argument 0 (x): data is NULL");
  x.dl_tensor.data = PTR(0x1000);
  x.dl_tensor.shape = NULL;
  expect_error(tirx__kernel_plan(K, "tirx_launch", args, 2, &P), TIRX_E_NULL_ARG,
               "tirx_launch: argument 0 (x): shape is NULL");
  x.dl_tensor.shape = shape;

  args[0] = tirx_arg_dlpack_versioned(NULL);
  expect_error(tirx__kernel_plan(K, "tirx_launch", args, 2, &P), TIRX_E_NULL_ARG,
               "tirx_launch: argument 0 (x): DLManagedTensorVersioned is NULL");

  /* A DLPack tensor where a scalar is declared. */
  tirx_arg args3[] = {tirx_arg_dlpack_versioned(&x), tirx_arg_dlpack_versioned(&x),
                      tirx_arg_dlpack_versioned(&y)};
  expect_error(tirx__kernel_plan(K, "tirx_launch", args3, 3, &P), TIRX_E_LAUNCH_ARG,
               "tirx_launch: argument 0 (n): kind is dlpack_versioned, expected i64 (or i32)");
}

/* DLPack 1.1's float8 codes: kDLFloat8_e4m3fn (10) and kDLFloat8_e5m2 (12), CUDA's e4m3 and
 * e5m2; the other float8 variants are not tirx's types. */
Test(plan, dlpack_float8_codes) {
  int64_t shape[] = {1000};
  DLTensor x = dl(PTR(0x1000), (DLDataTypeCode)10, 8, 1, shape, NULL);
  DLTensor y = dl(PTR(0x2000), kDLFloat, 32, 1, shape, NULL);
  tirx_arg args[] = {tirx_arg_dlpack(&x), tirx_arg_dlpack(&y)};
  expect_error(tirx__kernel_plan(K, "tirx_launch", args, 2, &P), TIRX_E_LAUNCH_ARG,
               "tirx_launch: argument 0 (x): dtype is fp8_e4m3, expected f32");
  x.dtype.code = 12;
  expect_error(tirx__kernel_plan(K, "tirx_launch", args, 2, &P), TIRX_E_LAUNCH_ARG,
               "tirx_launch: argument 0 (x): dtype is fp8_e5m2, expected f32");
  x.dtype.code = 8; /* kDLFloat8_e4m3: not the fn variant */
  expect_error(tirx__kernel_plan(K, "tirx_launch", args, 2, &P), TIRX_E_LAUNCH_ARG,
               "tirx_launch: argument 0 (x): DLPack dtype (code 8, bits 8) is not supported");
}

/* A kernel of caller-written source may store to any tensor: read-only is refused for each. */
Test(plan, dlpack_read_only_and_raw_source) {
  tirx_builder *b = tirx_builder_create("raw_copy");
  tirx_expr *n = tirx_param_int(b, "n", TIRX_I64);
  tirx_param_tensor(b, "x", TIRX_F32, TIRX_EXPRS(n), NULL);
  tirx_set_block(b, 64, 1, 1);
  tirx_set_grid(b, tirx_ceildiv(b, n, tirx_int(b, 64)), NULL, NULL);
  tirx_set_source(b, "extern \"C\" __global__ void raw_copy(long long n, const float *x) {}\n");
  tirx_kernel *k = build(b);
  cr_assert_eq(k->params[1].writes, TIRX__KP_WRITES_MAYBE);
  int64_t shape[] = {1000};
  DLManagedTensorVersioned x = dlv(1, 0, DLPACK_FLAG_BITMASK_READ_ONLY,
                                   dl(PTR(0x1000), kDLFloat, 32, 1, shape, NULL));
  tirx_arg args[] = {tirx_arg_dlpack_versioned(&x)};
  expect_error(tirx__kernel_plan(k, "tirx_launch", args, 1, &P), TIRX_E_LAUNCH_ARG,
               "tirx_launch: argument 0 (x): the DLPack tensor is read-only "
               "(DLPACK_FLAG_BITMASK_READ_ONLY), expected a writable one: the kernel's source is "
               "the caller's (tirx_set_source), so it may store to it");
  x.flags = 0;
  cr_assert_eq(tirx__kernel_plan(k, "tirx_launch", args, 1, &P), TIRX_OK, "%s", tirx_last_error());
  tirx_kernel_release(k);
}
